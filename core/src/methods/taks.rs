//! TAkS, the paper's method, and its two ablations: each epoch trains on a k-set with
//! plain cross-entropy, and after the epoch a scoring pass of all n samples lets the
//! FPL [`Selector`] choose the next k-set by the method's [`Objective`]:
//! - `taks`: Follow-the-Perturbed-Leader, the k smallest of L_t + eta r_t (Algorithm 1);
//! - `naive`: Follow-the-Leader, the k smallest of L_t (eta = 0);
//! - `greedy`: the k smallest of the latest noise-risk theta_t alone.
//!
//! The three differ only in the objective; the selector (`crate::selection`) does the
//! arithmetic, on the CPU or in the WGSL kernels.

use burn::tensor::{Int, Tensor};

use super::{Batch, BatchAt, EpochSet, EpochSize, MethodSpec, Rule, RuleInputs, Setting, standard};
use crate::Result;
use crate::selection::{Objective, Selector};

pub(crate) const TAKS: MethodSpec = MethodSpec {
    name: "taks",
    title: "TAkS",
    help: "TAkS: Follow-the-Perturbed-Leader sample selection",
    networks: 1,
    settings: &[Setting::KRatio, Setting::EtaRatio],
    epoch_size: EpochSize::KRatio,
    selects: true,
    build: |inputs| build(inputs, Objective::Perturbed { eta: inputs.eta }),
};

pub(crate) const GREEDY: MethodSpec = MethodSpec {
    name: "greedy",
    title: "Greedy",
    help: "ablation: the k smallest latest noise-risks",
    networks: 1,
    settings: &[Setting::KRatio],
    epoch_size: EpochSize::KRatio,
    selects: true,
    build: |inputs| build(inputs, Objective::Greedy),
};

pub(crate) const NAIVE: MethodSpec = MethodSpec {
    name: "naive",
    title: "Naive (FTL)",
    help: "ablation: Follow-the-Leader (no perturbation)",
    networks: 1,
    settings: &[Setting::KRatio],
    epoch_size: EpochSize::KRatio,
    selects: true,
    build: |inputs| build(inputs, Objective::Perturbed { eta: 0.0 }),
};

fn build(inputs: &RuleInputs<'_>, objective: Objective) -> Result<Box<dyn Rule>> {
    Ok(Box::new(Taks {
        selector: Selector::new(
            objective,
            inputs.k,
            inputs.seed,
            inputs.labels,
            inputs.device,
            inputs.engine,
        )?,
    }))
}

/// Cross-entropy on the selector's current k-set.
struct Taks {
    selector: Selector,
}

impl Rule for Taks {
    fn epoch_set(&self) -> EpochSet {
        EpochSet::Given(self.selector.current_indices())
    }

    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, _: BatchAt) -> Batch {
        standard::mean_cross_entropy(logits, labels)
    }

    fn is_mean_cross_entropy(&self) -> bool {
        true
    }

    fn selector(&self) -> Option<&Selector> {
        Some(&self.selector)
    }

    fn selector_mut(&mut self) -> Option<&mut Selector> {
        Some(&mut self.selector)
    }
}
