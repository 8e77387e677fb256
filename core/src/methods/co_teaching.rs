//! Co-teaching (Han et al., 2018), as the authors' code runs it: two networks with their
//! own Adam; in each batch network 1 is updated on the `num_remember` samples of
//! smallest cross-entropy under network 2, and network 2 on network 1's. Each loss is
//! the mean cross-entropy of those samples divided once more by `num_remember` (a quirk
//! of the original code, kept because it produced the paper's numbers).

use burn::tensor::{Int, Tensor};

use super::{Batch, BatchAt, EpochSize, MethodSpec, Rule, Setting, num_remember, small_loss};

pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "co-teaching",
    title: "Co-teaching",
    help: "two networks teach each other their small-loss samples",
    networks: 2,
    settings: &[Setting::ForgetRate],
    epoch_size: EpochSize::All,
    selects: false,
    build: |_| Ok(Box::new(CoTeaching)),
};

pub(super) struct CoTeaching;

/// The exchange on per-sample losses `ce1`, `ce2` `[B]` with `keep` samples each:
/// (network 1's loss + network 2's loss, [network 1's picks, network 2's picks]).
/// Network 1 trains on network 2's picks and network 2 on network 1's; the picks stay in
/// the order of the network that chose them, as the authors' `ind_1_update` and
/// `ind_2_update` do, so a network's label precision is that of its own choice.
pub(super) fn exchange(ce1: Tensor<1>, ce2: Tensor<1>, keep: usize) -> (Tensor<1>, [Tensor<1>; 2]) {
    let picks_1 = small_loss::smallest(ce1.clone(), keep);
    let picks_2 = small_loss::smallest(ce2.clone(), keep);
    let scale = 1.0 / (keep * keep) as f32;
    let loss = ((ce1 * picks_2.clone()).sum() + (ce2 * picks_1.clone()).sum()).mul_scalar(scale);
    (loss, [picks_1, picks_2])
}

impl Rule for CoTeaching {
    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, at: BatchAt) -> Batch {
        let [batch, _] = logits[0].dims();
        let ce1 = crate::ops::cross_entropy::per_sample(logits[0].clone(), labels);
        let ce2 = crate::ops::cross_entropy::per_sample(logits[1].clone(), labels);
        let (loss, picks) = exchange(ce1, ce2, num_remember(batch, at.forget_rate));
        Batch {
            loss,
            picked: Some(picks.into()),
            apply: None,
        }
    }
}
