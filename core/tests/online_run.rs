//! The selection a training loop outside taks drives (`selection::online`, Python's
//! `taks.Selector`) picks, from the noise-risks of a real TAkS run on the bundled digits,
//! exactly the k-sets that run picked, epoch after epoch, with the same seed, k and eta.

mod digits;

use burn::tensor::Device;
use taks_core::methods::Method;
use taks_core::metrics::EpochMetrics;
use taks_core::selection::online::{OnlineSelection, Scores};
use taks_core::selection::{Engine, Objective};
use taks_core::train::{Next, Trainer, Watch};

/// Each epoch's k-set as the run trains on it, and L_t after the epoch's scoring.
#[derive(Default)]
struct Recorded {
    sets: Vec<Vec<u32>>,
    cumulative: Vec<Vec<f32>>,
}

impl Watch for Recorded {
    type Error = taks_core::Error;

    fn wants_k_set(&self) -> bool {
        true
    }

    fn before(&mut self, _: usize, k_set: &[u32]) -> taks_core::Result<()> {
        self.sets.push(k_set.to_vec());
        Ok(())
    }

    fn after(&mut self, trainer: &Trainer, _: &[EpochMetrics]) -> taks_core::Result<Next> {
        let selector = trainer.selector().expect("TAkS selects");
        self.cumulative
            .push(pollster::block_on(selector.cumulative_risk_host())?);
        Ok(Next::Go)
    }
}

#[test]
fn it_selects_what_a_run_on_the_digits_selected() {
    let n = 1000;
    let mut config = digits::config(Method::TAKS, 4, n, 100);
    config.eta_ratio = 0.05;
    config.selection_engine = Engine::Reference;
    let mut run = digits::trainer(config.clone(), &Device::flex());
    let mut recorded = Recorded::default();
    let mut history = Vec::new();
    pollster::block_on(run.run_to_end(&mut history, &mut recorded)).unwrap();
    let last = pollster::block_on(run.selector().unwrap().current_indices_host()).unwrap();
    recorded.sets.push(last);

    let eta = config.eta(n);
    let mut online =
        OnlineSelection::new(Objective::Perturbed { eta }, n, run.k(), config.seed, None).unwrap();
    assert_eq!(online.current(), &recorded.sets[0][..], "the first k-set");
    let mut previous = vec![0f32; n];
    for (t, cumulative) in recorded.cumulative.iter().enumerate() {
        // The run's theta_t, as L_t - L_(t-1); the sum below must give L_t back exactly.
        let theta: Vec<f32> = cumulative
            .iter()
            .zip(&previous)
            .map(|(l, p)| l - p)
            .collect();
        let step = online.step(Scores::Risks(&theta)).unwrap();
        assert_eq!(online.cumulative(), &cumulative[..], "L_{}", t + 1);
        assert_eq!(
            online.current(),
            &recorded.sets[t + 1][..],
            "the k-set after epoch {}",
            t + 1
        );
        let regret = history[t].regret.unwrap();
        assert!(
            (step.regret.regret - regret).abs() < 1e-6 * regret.abs().max(1.0),
            "epoch {}: {} against {regret}",
            t + 1,
            step.regret.regret
        );
        assert_eq!(step.regret.bound, history[t].regret_bound);
        previous.clone_from(cumulative);
    }
    let distinct: std::collections::HashSet<_> = recorded.sets.iter().collect();
    assert!(
        distinct.len() > 2,
        "the k-sets barely moved: the test shows little"
    );
}
