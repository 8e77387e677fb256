//! Plain cross-entropy on every sample of the batch: the Standard baseline, and the
//! batch rule of TAkS and its ablations, whose whole difference lies in which samples
//! the epoch trains on.

use burn::tensor::{Int, Tensor};

use super::{Batch, BatchAt, EpochSet, Rule, small_loss};

pub(super) struct Standard {
    pub set: EpochSet,
}

impl Rule for Standard {
    fn epoch_set(&self) -> EpochSet {
        self.set
    }

    fn is_mean_cross_entropy(&self) -> bool {
        true
    }

    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, _: BatchAt) -> Batch {
        Batch {
            loss: small_loss::cross_entropy(logits[0].clone(), labels).mean(),
            picked: None,
            apply: None,
        }
    }
}
