//! The per-sample losses of the baselines and the small-loss choice inside a batch,
//! written so that nothing is read back to the host.
//!
//! The authors' code sorts each batch's losses on the host (`np.argsort`) and indexes
//! the kept samples. burn's sort reads back synchronously (it fails on WebGPU) and a
//! read per batch would stall a GPU, so here the choice is a rank by comparison: with
//! B <= a few hundred, the `[B, B]` matrix "sample j ranks before sample i" is tiny, and
//! its row sums are every sample's rank. The kept samples become a 0/1 mask that weights
//! the loss, which gives the same value and the same gradients as indexing them.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

/// KL(p || q) per sample, `[B]`, with p = softmax(`p_logits`) and q = softmax(`q_logits`):
/// the authors' `kl_loss_compute(q_logits, p_logits)`. Neither side is detached.
pub fn kl_divergence(p_logits: Tensor<2>, q_logits: Tensor<2>) -> Tensor<1> {
    let [batch, _] = p_logits.dims();
    let log_p = log_softmax(p_logits, 1);
    let log_q = log_softmax(q_logits, 1);
    (log_p.clone().exp() * (log_p - log_q))
        .sum_dim(1)
        .reshape([batch])
}

/// Each sample's rank `[B]` (0 = smallest) among the samples where `among` `[B]` is 1,
/// by `values` (detached), ties broken by the smaller index, as a stable sort would.
/// Samples outside `among` rank after all of those inside. f32 ranks, exact up to 2^24.
pub fn rank(values: Tensor<1>, among: Option<Tensor<1>>) -> Tensor<1> {
    let [b] = values.dims();
    let device = values.device();
    let values = values.detach();
    let values = match among {
        // Outside the set: larger than anything inside (losses are finite or +inf).
        Some(among) => values.mask_fill(among.lower_elem(0.5), f32::MAX),
        None => values,
    };
    let mine = values.clone().reshape([b, 1]).expand([b, b]);
    let theirs = values.reshape([1, b]).expand([b, b]);
    let index = Tensor::<1, Int>::arange(0..b as i64, &device);
    let earlier = index
        .clone()
        .reshape([1, b])
        .expand([b, b])
        .lower(index.reshape([b, 1]).expand([b, b]));
    let before = theirs
        .clone()
        .lower(mine.clone())
        .float()
        .add(theirs.equal(mine).float().mul(earlier.float()));
    before.sum_dim(1).reshape([b])
}

/// 1.0 for the `keep` samples of smallest `values` (see [`rank`]), 0.0 elsewhere: a
/// batch's small-loss choice as a mask, on the device, for the baselines. The k-set of
/// all n samples is the selection's: [`crate::selection::k_smallest_indices`].
pub fn smallest(values: Tensor<1>, keep: usize) -> Tensor<1> {
    rank(values, None).lower_elem(keep as f32).float()
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};

    use super::*;
    use crate::test_support::host;

    fn floats(values: &[f32]) -> Tensor<1> {
        Tensor::from_data(
            TensorData::new(values.to_vec(), [values.len()]),
            &Device::flex(),
        )
    }

    #[test]
    fn ranks_like_a_stable_sort() {
        let r = host(rank(floats(&[0.3, 0.1, 0.3, 0.0, 2.0]), None));
        assert_eq!(r, vec![2.0, 1.0, 3.0, 0.0, 4.0]);
        let kept = host(smallest(floats(&[0.3, 0.1, 0.3, 0.0, 2.0]), 3));
        assert_eq!(kept, vec![1.0, 1.0, 0.0, 1.0, 0.0]);
    }

    #[test]
    fn ranks_inside_a_subset_first() {
        let among = floats(&[1.0, 0.0, 1.0, 0.0]);
        let r = host(rank(floats(&[0.5, 0.1, 0.2, 0.0]), Some(among)));
        assert_eq!(&r[..], &[1.0, 2.0, 0.0, 3.0][..]);
    }

    #[test]
    fn per_sample_losses_match_their_definitions() {
        let device = Device::flex();
        let logits = Tensor::<2>::from_data(
            TensorData::new(vec![2.0f32, 0.0, -1.0, 0.5, 0.5, 0.5], [2, 3]),
            &device,
        );
        let labels = Tensor::<1, Int>::from_data(TensorData::new(vec![0i32, 2], [2]), &device);
        let ce = host(crate::ops::cross_entropy::per_sample(
            logits.clone(),
            &labels,
        ));
        let lse = (2.0f32.exp() + 1.0 + (-1.0f32).exp()).ln();
        assert!((ce[0] - (lse - 2.0)).abs() < 1e-5);
        assert!((ce[1] - 3.0f32.ln()).abs() < 1e-5);
        let same = host(kl_divergence(logits.clone(), logits.clone()));
        assert!(same.iter().all(|v| v.abs() < 1e-6));
        let other = Tensor::<2>::from_data(
            TensorData::new(vec![0.0f32, 0.0, 0.0, 0.0, 0.0, 0.0], [2, 3]),
            &device,
        );
        // KL(p || uniform) = sum p log p + ln 3.
        let kl = host(kl_divergence(logits, other));
        let p: Vec<f32> = [2.0f32, 0.0, -1.0]
            .iter()
            .map(|v| (v - lse).exp())
            .collect();
        let expected: f32 = p.iter().map(|q| q * q.ln()).sum::<f32>() + 3.0f32.ln();
        assert!((kl[0] - expected).abs() < 1e-5);
        assert!(kl[1].abs() < 1e-6);
    }
}
