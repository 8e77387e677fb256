//! TAkS's selection on its own, for a training loop that is not taks's (PyTorch's, through
//! the Python package): the caller trains on the current k-set, scores all n samples,
//! and hands their logits or their noise-risks to [`OnlineSelection::step`], which
//! chooses the next k-set exactly as a `taks train` run on the CPU does for the same
//! risks, seed, k and eta (the same engine, `cpu_engine`), and says the regret and its
//! bound as `metrics.csv` does.
//!
//! Host slices only: the caller's network lives on its own device, and one epoch's
//! risks are n floats, read once.

use super::cpu_engine::CpuEngine;
use super::{Objective, Params, check, cpu_reference, first_k_set};
use crate::Result;
use crate::error::refuse;
use crate::regret::{Regret, after_round};

/// What one round's scores were: risks, or logits whose risks the selection measures.
pub enum Scores<'a> {
    /// theta_t of every sample, each in [0, 1] where the bound is to hold.
    Risks(&'a [f32]),
    /// `[n, classes]` logits, row-major: theta_t = (1 - s p) / 2 (paper Eq. 6) against
    /// the labels the selection was built with.
    Logits { values: &'a [f32], classes: usize },
}

/// What a round reports: the columns `taks train` writes for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// The round just scored (1-based).
    pub epoch: usize,
    /// This round's: d_t . theta_t for the set that was trained on.
    pub selection_risk: f64,
    /// The sum of `selection_risk` over the rounds so far.
    pub total_selection_risk: f64,
    /// Over the rounds so far: the risk of the best fixed k-set in hindsight.
    pub total_hindsight_risk: f64,
    pub regret: Regret,
}

/// Everything a selection needs to go on where it stopped (a checkpoint's part).
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// Rounds scored so far.
    pub epoch: usize,
    /// L_t of every sample.
    pub cumulative: Vec<f32>,
    /// The current k-set, ascending.
    pub current: Vec<u32>,
    pub total_selection_risk: f64,
}

/// One run's selection state, on the host.
pub struct OnlineSelection {
    engine: CpuEngine,
    params: Params,
    n: usize,
    epoch: usize,
    total_selection_risk: f64,
}

impl OnlineSelection {
    /// Choose `k` of `n` samples by `objective`, the first set drawn from `seed` as a
    /// run's is. `labels` (one per sample) lets rounds be scored by logits.
    pub fn new(
        objective: Objective,
        n: usize,
        k: usize,
        seed: u64,
        labels: Option<Vec<u32>>,
    ) -> Result<Self> {
        if n == 0 || k == 0 {
            return refuse(format!("k = {k} of n = {n}: both must be at least 1"));
        }
        check(objective, n, k)?;
        let labels = labels.unwrap_or_default();
        // None and n >= 1 labels are told apart by the length: no labels is an empty list.
        if !labels.is_empty() && labels.len() != n {
            return refuse(format!("{} labels for n = {n} samples", labels.len()));
        }
        Ok(OnlineSelection {
            engine: CpuEngine::of(labels, n, first_k_set(n, k, seed)),
            params: Params {
                objective,
                k,
                seed: seed as u32,
            },
            n,
            epoch: 0,
            total_selection_risk: 0.0,
        })
    }

    /// The set the next round trains on, ascending.
    pub fn current(&self) -> &[u32] {
        &self.engine.current
    }

    /// L_t of every sample.
    pub fn cumulative(&self) -> &[f32] {
        &self.engine.cumulative
    }

    /// Rounds scored so far.
    pub fn epoch(&self) -> usize {
        self.epoch
    }

    pub fn n(&self) -> usize {
        self.n
    }

    pub fn k(&self) -> usize {
        self.params.k
    }

    pub fn objective(&self) -> Objective {
        self.params.objective
    }

    /// Score a round and choose the next k-set. Nothing changes where the scores are
    /// refused (the wrong length, a value that is not a finite number).
    pub fn step(&mut self, scores: Scores<'_>) -> Result<Step> {
        let theta = match scores {
            Scores::Risks(risks) => {
                self.finite(risks, "risks", 1)?;
                risks.to_vec()
            }
            Scores::Logits { values, classes } => {
                if self.engine.noisy_labels.is_empty() {
                    return refuse(
                        "logits need the labels they are scored against: build the selection with labels, or hand it risks".into(),
                    );
                }
                if classes == 0 {
                    return refuse("logits need at least one class".into());
                }
                self.finite(values, "logits", classes)?;
                if let Some(&bad) = self
                    .engine
                    .noisy_labels
                    .iter()
                    .find(|&&l| l as usize >= classes)
                {
                    return refuse(format!(
                        "label {bad} is out of range for logits of {classes} classes"
                    ));
                }
                cpu_reference::noise_risk(values, classes, &self.engine.noisy_labels)
            }
        };
        let epoch = self.epoch + 1;
        let (update, _) = self
            .engine
            .update_from_risk(theta, &self.params, epoch as u32)?;
        self.epoch = epoch;
        self.total_selection_risk += update.selection_risk;
        Ok(Step {
            epoch,
            selection_risk: update.selection_risk,
            total_selection_risk: self.total_selection_risk,
            total_hindsight_risk: update.total_hindsight_risk,
            regret: after_round(
                self.params.objective,
                self.total_selection_risk,
                update.total_hindsight_risk,
                (self.n, self.params.k),
                epoch,
            ),
        })
    }

    /// `values` is n rows of `width` finite numbers.
    fn finite(&self, values: &[f32], what: &str, width: usize) -> Result<()> {
        if values.len() != self.n * width {
            let shape = match width {
                1 => format!("{}", self.n),
                w => format!("{} x {w}", self.n),
            };
            return refuse(format!(
                "{what} hold {} values; {shape} expected (one row per sample)",
                values.len()
            ));
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return refuse(format!(
                "{what} of sample {} is {}: every score must be a finite number",
                i / width,
                values[i]
            ));
        }
        Ok(())
    }

    /// What [`OnlineSelection::restore`] takes back.
    pub fn state(&self) -> State {
        State {
            epoch: self.epoch,
            cumulative: self.engine.cumulative.clone(),
            current: self.engine.current.clone(),
            total_selection_risk: self.total_selection_risk,
        }
    }

    /// Go on from `state`, refused unless it is a state of this selection's n and k.
    pub fn restore(&mut self, state: State) -> Result<()> {
        let (n, k) = (self.n, self.params.k);
        let ascending = state.current.windows(2).all(|w| w[0] < w[1]);
        if state.cumulative.len() != n
            || state.current.len() != k
            || !ascending
            || state.current.last().is_some_and(|&i| i as usize >= n)
        {
            return refuse(format!(
                "the state is not one of a selection of k = {k} of n = {n} samples ({} risks, a set of {})",
                state.cumulative.len(),
                state.current.len()
            ));
        }
        if state.cumulative.iter().any(|v| !v.is_finite())
            || !state.total_selection_risk.is_finite()
        {
            return refuse("the state holds a risk that is not a finite number".into());
        }
        self.epoch = state.epoch;
        self.total_selection_risk = state.total_selection_risk;
        self.engine.cumulative = state.cumulative;
        self.engine.current = state.current;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Tensor, TensorData};

    use super::*;
    use crate::noise::NoisyLabels;
    use crate::selection::{Engine, Selector};

    /// Logits of `n` samples and 3 classes for round `t`, varied enough that the k-sets move.
    fn logits(n: usize, t: usize) -> Vec<f32> {
        (0..n * 3)
            .map(|j| (((j * 7919 + t * 104_729) % 1000) as f32 / 100.0) - 5.0)
            .collect()
    }

    /// The selection a training run uses (burn's tensors on flex, the reference engine)
    /// and this one pick the same sets round after round from the same logits, seed, k
    /// and eta, and say the same regret.
    #[test]
    fn it_selects_what_a_run_selects() {
        let (n, k, seed) = (200, 70, 9);
        let labels: Vec<u32> = (0..n as u32).map(|i| (i * 7) % 3).collect();
        let device = Device::flex();
        let noisy = NoisyLabels {
            true_labels: labels.clone(),
            noisy_labels: labels.clone(),
        };
        let objective = Objective::Perturbed { eta: 0.8 };
        let mut run =
            Selector::new(objective, k, seed, &noisy, &device, Engine::Reference).unwrap();
        let mut online = OnlineSelection::new(objective, n, k, seed, Some(labels)).unwrap();
        let first = pollster::block_on(run.current_indices_host()).unwrap();
        assert_eq!(online.current(), &first[..]);
        let mut moved = false;
        for t in 1..=6 {
            let values = logits(n, t);
            let tensor = Tensor::<2>::from_data(TensorData::new(values.clone(), [n, 3]), &device);
            let update = pollster::block_on(run.update(tensor, t)).unwrap();
            let step = online
                .step(Scores::Logits {
                    values: &values,
                    classes: 3,
                })
                .unwrap();
            let next = pollster::block_on(run.current_indices_host()).unwrap();
            moved |= next != first;
            assert_eq!(online.current(), &next[..], "round {t}");
            assert_eq!(step.selection_risk, update.selection_risk);
            assert_eq!(step.total_hindsight_risk, update.total_hindsight_risk);
        }
        assert!(
            moved,
            "the logits never moved the k-set: the test shows nothing"
        );
    }

    /// Scored by risks, the next set is the k smallest of L_t + eta r_t; at eta = 0 the k
    /// smallest of L_t exactly, and refusals leave the state as it was.
    #[test]
    fn risks_drive_it_and_refusals_change_nothing() {
        let n = 10;
        let mut naive =
            OnlineSelection::new(Objective::Perturbed { eta: 0.0 }, n, 3, 1, None).unwrap();
        let risks: Vec<f32> = (0..n).map(|i| ((i * 3) % n) as f32 / n as f32).collect();
        let step = naive.step(Scores::Risks(&risks)).unwrap();
        assert_eq!(naive.current(), &[0, 4, 7]);
        assert_eq!(step.regret.bound, None, "Follow-the-Leader has no bound");
        let before = naive.state();
        let mut nan = risks.clone();
        nan[4] = f32::NAN;
        let error = naive.step(Scores::Risks(&nan)).unwrap_err().to_string();
        assert!(error.contains("sample 4 is NaN"), "{error}");
        assert!(naive.step(Scores::Risks(&risks[1..])).is_err());
        assert!(
            naive
                .step(Scores::Logits {
                    values: &[0.0; 30],
                    classes: 3
                })
                .is_err(),
            "no labels"
        );
        assert_eq!(naive.state(), before);
        let mut fpl =
            OnlineSelection::new(Objective::Perturbed { eta: 2.0 }, n, 3, 1, None).unwrap();
        let step = fpl.step(Scores::Risks(&risks)).unwrap();
        assert!(step.regret.bound.is_some_and(|b| b > 0.0));
    }

    /// A restored state goes on exactly as the selection it was taken from.
    #[test]
    fn a_restored_state_goes_on_as_the_original() {
        let n = 50;
        let objective = Objective::Perturbed { eta: 1.5 };
        let mut a = OnlineSelection::new(objective, n, 20, 4, None).unwrap();
        let risks = |t: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 13 + t * 7) % 17) as f32 / 17.0)
                .collect()
        };
        a.step(Scores::Risks(&risks(1))).unwrap();
        let mut b = OnlineSelection::new(objective, n, 20, 4, None).unwrap();
        b.restore(a.state()).unwrap();
        for t in 2..5 {
            assert_eq!(
                a.step(Scores::Risks(&risks(t))).unwrap(),
                b.step(Scores::Risks(&risks(t))).unwrap()
            );
            assert_eq!(a.current(), b.current());
        }
        let mut other = OnlineSelection::new(objective, n, 19, 4, None).unwrap();
        assert!(other.restore(a.state()).is_err(), "a state of another k");
    }
}
