//! ITLM, iterative trimmed loss (Shen & Sanghavi, 2019), as the authors' code runs it:
//! at the start of every epoch (the first included, from random weights, with no
//! warm-up) score all n samples in eval mode and train one plain epoch on the
//! `int(n (1 - tau))` samples of smallest cross-entropy. The scoring and the choice are
//! the training loop's [`EpochSet::SmallestLoss`]; a batch is plain cross-entropy.

use burn::tensor::{Int, Tensor};

use super::{Batch, BatchAt, EpochSet, EpochSize, MethodSpec, Rule, Setting, standard};

pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "itlm",
    title: "ITLM",
    help: "iterative trimmed loss: the smallest-loss samples each epoch",
    networks: 1,
    settings: &[Setting::ForgetRate],
    epoch_size: EpochSize::Unforgotten,
    selects: false,
    build: |inputs| Ok(Box::new(Itlm { keep: inputs.k })),
};

pub(super) struct Itlm {
    pub keep: usize,
}

/// `int(n (1 - tau))`, at least one sample.
pub(crate) fn keep(n: usize, tau: f64) -> usize {
    (((1.0 - tau) * n as f64) as usize).clamp(1, n.max(1))
}

impl Rule for Itlm {
    fn epoch_set(&self) -> EpochSet {
        EpochSet::SmallestLoss { keep: self.keep }
    }

    fn is_mean_cross_entropy(&self) -> bool {
        true
    }

    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, _: BatchAt) -> Batch {
        standard::mean_cross_entropy(logits, labels)
    }
}
