//! Decouple (Malach & Shalev-Shwartz, 2017), as the authors' code runs it: two networks
//! with their own Adam; in each batch D = the samples on which their predictions (train
//! mode, before the step) disagree, and each network takes the mean cross-entropy over
//! D. A batch with empty D is skipped: the authors' loop `continue`s, so neither the
//! weights nor Adam's moments move. Here that skip is decided on the device (the
//! `apply` gate), so no batch waits for a read; Adam's step counter still advances,
//! which changes only its bias correction, by less than one part in a thousand once
//! the first hundreds of steps (where D is never empty) are past.

use burn::tensor::{Int, Tensor};

use super::{Batch, BatchAt, EpochSize, MethodSpec, Rule};

pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "decouple",
    title: "Decouple",
    help: "two networks, update on disagreement",
    networks: 2,
    settings: &[],
    epoch_size: EpochSize::All,
    selects: false,
    build: |_| Ok(Box::new(Decouple)),
};

pub(super) struct Decouple;

/// 1.0 where the two networks' argmax predictions differ, `[B]`.
pub(super) fn disagreement(a: &Tensor<2>, b: &Tensor<2>) -> Tensor<1> {
    let [batch, _] = a.dims();
    let pa = a.clone().detach().argmax(1).reshape([batch]);
    let pb = b.clone().detach().argmax(1).reshape([batch]);
    pa.not_equal(pb).float()
}

impl Rule for Decouple {
    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, _: BatchAt) -> Batch {
        let d = disagreement(&logits[0], &logits[1]);
        let count = d.clone().sum();
        // Mean over D; a count of 0 divides by 1 (the gate then drops the step).
        let denominator = count.clone().clamp_min(1.0);
        let mean_over_d = |net: &Tensor<2>| {
            (crate::ops::cross_entropy::per_sample(net.clone(), labels) * d.clone()).sum()
                / denominator.clone()
        };
        Batch {
            loss: mean_over_d(&logits[0]) + mean_over_d(&logits[1]),
            picked: Some(vec![d.clone(), d]),
            apply: Some(count.greater_elem(0.5).float()),
        }
    }
}
