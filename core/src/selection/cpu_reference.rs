//! The plain CPU reference of noise-risk, the FPL objective and k-set selection.
//!
//! This is the oracle the WGSL kernels are tested against and the path used on the CPU
//! backend. It works on host slices, one sample at a time, written for clarity; the
//! selection is still O(n) (introselect), so it never dominates an epoch.

use crate::rng::perturbation;

/// Noise-risk of every sample (paper Eq. 6): `theta_i = (1 - s_i p_i) / 2`, with p_i the
/// largest softmax probability of sample i and s_i = +1 when that class is the (noisy)
/// label, -1 otherwise. A confident correct prediction has risk near 0, a confident
/// contradiction of the label risk near 1. A row containing NaN gives NaN.
pub fn noise_risk(logits: &[f32], classes: usize, labels: &[u32]) -> Vec<f32> {
    debug_assert_eq!(logits.len(), classes * labels.len());
    logits
        .chunks_exact(classes)
        .zip(labels)
        .map(|(row, &label)| {
            // Stable softmax: subtract the row max; argmax = first index of the max.
            let mut argmax = 0;
            let mut max = f32::NEG_INFINITY;
            let mut nan = false;
            for (j, &x) in row.iter().enumerate() {
                nan |= x.is_nan();
                if x > max {
                    max = x;
                    argmax = j;
                }
            }
            if nan {
                return f32::NAN;
            }
            let denom: f32 = row.iter().map(|&x| (x - max).exp()).sum();
            let p = 1.0 / denom;
            let s = if argmax as u32 == label { 1.0 } else { -1.0 };
            (1.0 - s * p) / 2.0
        })
        .collect()
}

/// The FPL objective of Algorithm 1: `L_i + eta * r_i`, r_i ~ N(0, 1) keyed by
/// (seed, epoch, i) so the GPU draws the same values.
pub fn fpl_objective(cumulative: &[f32], eta: f32, seed: u32, epoch: u32) -> Vec<f32> {
    cumulative
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            if eta == 0.0 {
                l
            } else {
                l + eta * perturbation(seed, epoch, i as u32)
            }
        })
        .collect()
}

/// An order-preserving u32 image of an f32: a < b (as floats) implies key(a) < key(b).
/// Every NaN maps to u32::MAX, so NaN ranks as the largest risk. -0.0 ranks just
/// below +0.0. The WGSL selection uses the same mapping.
#[inline]
pub fn order_key(x: f32) -> u32 {
    if x.is_nan() {
        u32::MAX
    } else {
        let bits = x.to_bits();
        if bits & 0x8000_0000 != 0 {
            !bits
        } else {
            bits | 0x8000_0000
        }
    }
}

/// The indices of the k smallest values, exactly k of them, ties broken by the smaller
/// index, returned in ascending index order. O(n) expected (select_nth on packed keys).
/// The reference the GPU's radix select ([`super::gpu_select::select_k_smallest`]) is
/// held to; the CPU engine calls it on its host vectors, and code holding a tensor goes
/// through [`super::k_smallest_indices`].
pub fn k_smallest(values: &[f32], k: usize) -> Vec<u32> {
    assert!(k <= values.len(), "k = {k} > n = {}", values.len());
    if k == 0 {
        return Vec::new();
    }
    // Value key in the high half, index in the low half: one integer comparison orders
    // by value and then by index.
    let mut packed: Vec<u64> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| ((order_key(v) as u64) << 32) | i as u64)
        .collect();
    if k < packed.len() {
        packed.select_nth_unstable(k - 1);
    }
    let mut chosen: Vec<u32> = packed[..k].iter().map(|&p| p as u32).collect();
    chosen.sort_unstable();
    chosen
}

/// The k-hot mask of a set of indices.
pub fn mask_of(indices: &[u32], n: usize) -> Vec<f32> {
    let mut mask = vec![0.0; n];
    indices.iter().for_each(|&i| mask[i as usize] = 1.0);
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_risk_matches_the_formula() {
        // Row 0: confident and agreeing with label 1. Row 1: same logits, label 0.
        let logits = [0.0, 10.0, 0.0, 0.0, 10.0, 0.0, 1.0, 1.0, 1.0];
        let theta = noise_risk(&logits, 3, &[1, 0, 2]);
        let p = 1.0 / (1.0 + 2.0 * (-10.0f32).exp());
        assert!((theta[0] - (1.0 - p) / 2.0).abs() < 1e-6);
        assert!((theta[1] - (1.0 + p) / 2.0).abs() < 1e-6);
        // Uniform row: argmax is class 0 (first max), p = 1/3, label 2 disagrees.
        assert!((theta[2] - (1.0 + 1.0 / 3.0) / 2.0).abs() < 1e-6);
        assert!(theta.iter().all(|t| (0.0..=1.0).contains(t)));
    }

    #[test]
    fn noise_risk_is_stable_and_propagates_nan() {
        let theta = noise_risk(&[1e30, -1e30, f32::NAN, 0.0, 1000.0, 1000.0], 2, &[0, 0, 1]);
        assert!(theta[0].abs() < 1e-6);
        assert!(theta[1].is_nan());
        assert!((theta[2] - 0.5 * (1.0 + 0.5)).abs() < 1e-6);
    }

    #[test]
    fn order_key_preserves_order() {
        let xs = [
            f32::NEG_INFINITY,
            -1e30,
            -1.0,
            -0.0,
            0.0,
            1e-40,
            1.0,
            f32::INFINITY,
            f32::NAN,
        ];
        for w in xs.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{} vs {}", w[0], w[1]);
        }
        assert_eq!(order_key(-f32::NAN), u32::MAX);
    }

    #[test]
    fn k_smallest_is_exact_with_ties_nan_and_edges() {
        let v = [3.0, 1.0, f32::NAN, 1.0, 2.0, 1.0, -5.0];
        assert_eq!(k_smallest(&v, 0), Vec::<u32>::new());
        assert_eq!(k_smallest(&v, 1), vec![6]);
        assert_eq!(k_smallest(&v, 3), vec![1, 3, 6]);
        assert_eq!(k_smallest(&v, 5), vec![1, 3, 4, 5, 6]);
        assert_eq!(k_smallest(&v, 7), (0..7).collect::<Vec<u32>>());
        assert_eq!(k_smallest(&v, 6), vec![0, 1, 3, 4, 5, 6]);
    }

    #[test]
    fn k_smallest_agrees_with_sorting() {
        let mut rng = crate::rng::SplitMix64::new(3);
        for n in [1usize, 2, 17, 1000] {
            // Few distinct values, so ties are everywhere.
            let v: Vec<f32> = (0..n).map(|_| rng.below(7) as f32).collect();
            for k in [0, n / 3, n] {
                let mut order: Vec<u32> = (0..n as u32).collect();
                order.sort_by(|&a, &b| v[a as usize].total_cmp(&v[b as usize]).then(a.cmp(&b)));
                let mut want = order[..k].to_vec();
                want.sort();
                assert_eq!(k_smallest(&v, k), want, "n={n} k={k}");
            }
        }
    }

    #[test]
    fn objective_without_eta_is_the_cumulative_risk() {
        let l = [0.5, 1.5, 2.5];
        assert_eq!(fpl_objective(&l, 0.0, 1, 1), l.to_vec());
        let o = fpl_objective(&l, 0.1, 1, 1);
        assert!(o.iter().zip(&l).all(|(a, b)| (a - b).abs() < 0.6 && a != b));
    }
}
