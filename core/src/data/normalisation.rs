//! Per-channel (or per-column) standardisation fitted on the training samples: how a
//! user's images, tables and embeddings become network inputs, for the audit and for
//! `taks train --data DIR` alike. Saved in `model.json` so `taks predict` prepares new
//! inputs the same way.

use serde::{Deserialize, Serialize};

/// `x -> (x - mean) / std`, per channel (images, after scaling to [0, 1]) or per feature
/// column (tables).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Normalisation {
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
}

impl Normalisation {
    /// The mean and standard deviation of each of `groups` groups, where value `i` of a
    /// sample of `sample_size` values belongs to group `i / (sample_size / groups)`
    /// (channels of [C, H, W]; with `groups` = `sample_size`, columns). A constant
    /// group gets std 1, so it maps to 0 instead of dividing by zero.
    pub fn fit(values: &[f32], sample_size: usize, groups: usize) -> Self {
        let per_group = sample_size / groups;
        let mut sum = vec![0f64; groups];
        let mut square = vec![0f64; groups];
        for sample in values.chunks_exact(sample_size) {
            for (i, &v) in sample.iter().enumerate() {
                let g = i / per_group;
                sum[g] += v as f64;
                square[g] += v as f64 * v as f64;
            }
        }
        let count = (values.len() / groups).max(1) as f64;
        let mean: Vec<f64> = sum.iter().map(|s| s / count).collect();
        let std = square
            .iter()
            .zip(&mean)
            .map(|(sq, m)| {
                let var = (sq / count - m * m).max(0.0);
                if var.sqrt() > 1e-6 {
                    var.sqrt() as f32
                } else {
                    1.0
                }
            })
            .collect();
        Normalisation {
            mean: mean.into_iter().map(|m| m as f32).collect(),
            std,
        }
    }

    /// Normalise `values` (whole samples of `sample_size`) in place.
    pub fn apply(&self, values: &mut [f32], sample_size: usize) {
        let per_group = sample_size / self.mean.len();
        for sample in values.chunks_exact_mut(sample_size) {
            for (i, v) in sample.iter_mut().enumerate() {
                let g = i / per_group;
                *v = (*v - self.mean[g]) / self.std[g];
            }
        }
    }
}
