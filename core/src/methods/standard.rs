//! Standard: plain cross-entropy on every sample of every epoch, the baseline every
//! method is measured against.

use burn::tensor::{Int, Tensor};

use super::{Batch, BatchAt, EpochSize, MethodSpec, Rule};

pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "standard",
    title: "Standard",
    help: "every sample, plain cross-entropy",
    networks: 1,
    settings: &[],
    epoch_size: EpochSize::All,
    selects: false,
    build: |_| Ok(Box::new(Standard)),
};

pub(super) struct Standard;

/// The mean cross-entropy of the first network's logits: Standard's batch, and that of
/// every method whose difference lies only in which samples an epoch trains on.
pub(super) fn mean_cross_entropy(logits: &[Tensor<2>], labels: &Tensor<1, Int>) -> Batch {
    Batch {
        loss: crate::ops::cross_entropy::per_sample(logits[0].clone(), labels).mean(),
        picked: None,
        apply: None,
    }
}

impl Rule for Standard {
    fn is_mean_cross_entropy(&self) -> bool {
        true
    }

    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, _: BatchAt) -> Batch {
        mean_cross_entropy(logits, labels)
    }
}
