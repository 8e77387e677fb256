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
        let mut moments = Moments::new(sample_size, groups);
        values
            .chunks_exact(sample_size)
            .for_each(|sample| moments.add(sample));
        moments.finish()
    }

    /// Normalise `values` (whole samples of `sample_size`) in place.
    pub fn apply(&self, values: &mut [f32], sample_size: usize) {
        let per_group = sample_size / self.mean.len();
        for sample in values.chunks_exact_mut(sample_size) {
            for (g, group) in sample.chunks_exact_mut(per_group).enumerate() {
                let (mean, std) = (self.mean[g], self.std[g]);
                group.iter_mut().for_each(|v| *v = (*v - mean) / std);
            }
        }
    }
}

/// Running sums for [`Normalisation::fit`], one sample at a time, so the samples need
/// not be in one slice (see [`crate::data::samples`]).
pub(crate) struct Moments {
    per_group: usize,
    sum: Vec<f64>,
    square: Vec<f64>,
    values: usize,
}

impl Moments {
    pub(crate) fn new(sample_size: usize, groups: usize) -> Self {
        Moments {
            per_group: sample_size / groups,
            sum: vec![0f64; groups],
            square: vec![0f64; groups],
            values: 0,
        }
    }

    pub(crate) fn add(&mut self, sample: &[f32]) {
        for (i, &v) in sample.iter().enumerate() {
            let g = i / self.per_group;
            self.sum[g] += v as f64;
            self.square[g] += v as f64 * v as f64;
        }
        self.values += sample.len();
    }

    /// A constant group gets std 1, so it maps to 0 instead of dividing by zero.
    pub(crate) fn finish(self) -> Normalisation {
        let count = (self.values / self.sum.len()).max(1) as f64;
        let mean: Vec<f64> = self.sum.iter().map(|s| s / count).collect();
        let std = self
            .square
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
}
