//! JoCoR (Wei et al., 2020), as the authors' code runs it: two networks under ONE Adam;
//! per sample `(1 - lambda)(CE1 + CE2) + lambda (KL(p1||p2) + KL(p2||p1))`, nothing
//! detached; the batch loss is the mean over the `num_remember` samples where that is
//! smallest, and the same samples train both networks. (One Adam over both networks'
//! parameters is the same as one per network: Adam's state is per parameter.)

use burn::tensor::{Int, Tensor};

use super::{Batch, BatchAt, EpochSize, MethodSpec, Rule, Setting, num_remember, small_loss};

pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "jocor",
    title: "JoCoR",
    help: "two networks, joint loss with an agreement term",
    networks: 2,
    settings: &[Setting::ForgetRate, Setting::CoLambda],
    epoch_size: EpochSize::All,
    selects: false,
    build: |inputs| {
        Ok(Box::new(Jocor {
            lambda: inputs.co_lambda,
        }))
    },
};

pub(super) struct Jocor {
    pub lambda: f64,
}

impl Rule for Jocor {
    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, at: BatchAt) -> Batch {
        let [batch, _] = logits[0].dims();
        let (a, b) = (logits[0].clone(), logits[1].clone());
        let lambda = self.lambda as f32;
        let per_sample = (crate::ops::cross_entropy::per_sample(a.clone(), labels)
            + crate::ops::cross_entropy::per_sample(b.clone(), labels))
        .mul_scalar(1.0 - lambda)
            + (small_loss::kl_divergence(b.clone(), a.clone()) + small_loss::kl_divergence(a, b))
                .mul_scalar(lambda);
        let keep = num_remember(batch, at.forget_rate);
        let picks = small_loss::smallest(per_sample.clone(), keep);
        Batch {
            loss: (per_sample * picks.clone()).sum().div_scalar(keep as f32),
            picked: Some(vec![picks.clone(), picks]),
            apply: None,
        }
    }
}
