//! Co-teaching+ (Yu et al., 2019), as the authors' code runs it. Before `init_epoch`
//! (MNIST 0, CIFAR-10 20, CIFAR-100 5) it is Co-teaching. From then on, D = the samples
//! of the batch on which the two networks' predictions disagree, and Co-teaching's
//! exchange runs inside D, keeping `int((1 - r) |D|)` (all of D when that is 0). As in
//! the original, the cross-entropy there is taken on the softmax probabilities fed again
//! as logits (a double softmax). When D is empty, both networks train on the whole
//! batch's mean (double-softmax) cross-entropy while `epoch * batch_index < 5000`, and on
//! zero after that (the step still runs, so Adam's momentum still moves them).
//!
//! Both branches are computed and blended by `|D| > 0` on the device, so no batch reads
//! anything back. Left out: a quirk of the original that drops the last disagreeing
//! sample when the batch holds dataset index 0 and it disagrees.

use burn::tensor::activation::softmax;
use burn::tensor::{Int, Tensor};

use super::{
    Batch, BatchAt, EpochSize, MethodSpec, Rule, Setting, co_teaching, decouple::disagreement,
    num_remember, small_loss,
};

pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "co-teaching-plus",
    title: "Co-teaching+",
    help: "Co-teaching among the samples the networks disagree on",
    networks: 2,
    settings: &[Setting::ForgetRate, Setting::InitEpoch],
    epoch_size: EpochSize::All,
    selects: false,
    build: |inputs| {
        Ok(Box::new(CoTeachingPlus {
            init_epoch: inputs.init_epoch,
        }))
    },
};

pub(super) struct CoTeachingPlus {
    pub init_epoch: usize,
}

impl Rule for CoTeachingPlus {
    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, at: BatchAt) -> Batch {
        let [batch, _] = logits[0].dims();
        if at.epoch < self.init_epoch {
            let ce1 = crate::ops::cross_entropy::per_sample(logits[0].clone(), labels);
            let ce2 = crate::ops::cross_entropy::per_sample(logits[1].clone(), labels);
            let (loss, picks) =
                co_teaching::exchange(ce1, ce2, num_remember(batch, at.forget_rate));
            return Batch {
                loss,
                picked: Some(picks.into()),
                apply: None,
            };
        }
        let d = disagreement(&logits[0], &logits[1]);
        let ce1 = crate::ops::cross_entropy::per_sample(softmax(logits[0].clone(), 1), labels);
        let ce2 = crate::ops::cross_entropy::per_sample(softmax(logits[1].clone(), 1), labels);

        let count = d.clone().sum();
        let has_d = count.clone().greater_elem(0.5).float();
        let kept = count
            .clone()
            .mul_scalar((1.0 - at.forget_rate) as f32)
            .floor();
        let kept = kept
            .clone()
            .mask_where(kept.lower_elem(0.5), count)
            .clamp_min(1.0);
        let picks_among = |ce: &Tensor<1>| {
            small_loss::rank(ce.clone(), Some(d.clone()))
                .lower(kept.clone().expand([batch]))
                .float()
        };
        let (picks_1, picks_2) = (picks_among(&ce1), picks_among(&ce2));
        let exchange = ((ce1.clone() * picks_2.clone()).sum()
            + (ce2.clone() * picks_1.clone()).sum())
            / (kept.clone() * kept.clone());

        let early = if at.epoch * at.batch < 5000 { 1.0 } else { 0.0 };
        let whole_batch = (ce1.mean() + ce2.mean()).mul_scalar(early);
        let no_d = has_d.clone().neg().add_scalar(1.0);
        let everyone =
            |picks: Tensor<1>| picks * has_d.clone().expand([batch]) + no_d.clone().expand([batch]);
        Batch {
            loss: exchange * has_d.clone() + whole_batch * no_d.clone(),
            picked: Some(vec![everyone(picks_1), everyone(picks_2)]),
            apply: None,
        }
    }
}
