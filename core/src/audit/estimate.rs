//! How much of the data is mislabelled, estimated from the data alone.
//!
//! The estimate is confident learning's calibrated confident joint (Northcutt, Jiang and
//! Chuang, "Confident Learning", JAIR 2021), computed from out-of-sample probabilities
//! from short trainings instead of cleanlab's full ones: the audit's probe trains a
//! network for a few epochs on all folds but one and predicts that one, for every
//! fold (cross-fitting; see [`crate::audit`]). In-sample probabilities would not
//! do: on 3,000 digits an MLP memorises enough wrong labels within five epochs that the
//! estimate fell from the true 24% to 17%.
//!
//! - Each class j gets a threshold t_j: the mean probability of j over the samples
//!   labelled j (how confident the model is, on average, about j's own samples).
//! - A sample labelled i counts towards C[i][j] for the class j with the highest
//!   probability among those reaching their threshold; a sample reaching none is not
//!   counted.
//! - Each row of C is rescaled to the number of samples labelled i (calibration), and
//!   the noise rate is the off-diagonal share: 1 - trace(C) / n; per class, 1 - C[i][i]
//!   / n_i.

use serde::Serialize;

/// What [`estimate`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoiseEstimate {
    /// Estimated fraction of all samples whose given label is wrong.
    pub rate: f64,
    /// Per given class, the estimated fraction of its samples that are mislabelled
    /// (NaN for a class no sample is labelled with).
    pub per_class: Vec<f64>,
    /// The calibrated confident joint, row = given label, column = likely true label,
    /// in samples.
    pub joint: Vec<Vec<f64>>,
}

/// Estimate from `probabilities` `[n * classes]` (softmax rows) and the given labels.
pub fn estimate(probabilities: &[f32], classes: usize, labels: &[u32]) -> NoiseEstimate {
    let n = labels.len();
    assert_eq!(
        probabilities.len(),
        n * classes,
        "one row of probabilities per sample"
    );
    let mut given = vec![0usize; classes];
    let mut mean = vec![0f64; classes];
    for (row, &l) in probabilities.chunks_exact(classes).zip(labels) {
        given[l as usize] += 1;
        mean[l as usize] += row[l as usize] as f64;
    }
    let thresholds: Vec<f64> = mean
        .iter()
        .zip(&given)
        .map(|(&s, &c)| if c > 0 { s / c as f64 } else { f64::INFINITY })
        .collect();
    let mut joint = vec![vec![0f64; classes]; classes];
    for (row, &l) in probabilities.chunks_exact(classes).zip(labels) {
        let confident = row
            .iter()
            .enumerate()
            .filter(|&(j, &p)| p as f64 >= thresholds[j])
            .max_by(|a, b| a.1.total_cmp(b.1));
        if let Some((j, _)) = confident {
            joint[l as usize][j] += 1.0;
        }
    }
    let mut off_diagonal = 0.0;
    let mut per_class = Vec::with_capacity(classes);
    for (i, row) in joint.iter_mut().enumerate() {
        let counted: f64 = row.iter().sum();
        if counted > 0.0 {
            let scale = given[i] as f64 / counted;
            row.iter_mut().for_each(|c| *c *= scale);
        } else if given[i] > 0 {
            // No sample of this class was confidently anything: assume it is clean.
            row[i] = given[i] as f64;
        }
        off_diagonal += given[i] as f64 - row[i];
        per_class.push(match given[i] {
            0 => f64::NAN,
            g => 1.0 - row[i] / g as f64,
        });
    }
    NoiseEstimate {
        rate: off_diagonal / n.max(1) as f64,
        per_class,
        joint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples of two well-separated classes, `flipped` of class 0's given label 1. The
    /// model is sure of the flipped ones (p = 0.95), as a good model is of a clear
    /// picture with a wrong label; the others spread over 0.7-0.9.
    fn probabilities(per_class: usize, flipped: usize) -> (Vec<f32>, Vec<u32>) {
        let mut p = Vec::new();
        let mut labels = Vec::new();
        for class in 0..2u32 {
            for i in 0..per_class {
                let is_flipped = class == 0 && i < flipped;
                let confident = if is_flipped {
                    0.95
                } else {
                    0.9 - 0.1 * (i % 3) as f32
                };
                p.extend(if class == 0 {
                    [confident, 1.0 - confident]
                } else {
                    [1.0 - confident, confident]
                });
                labels.push(if is_flipped { 1 } else { class });
            }
        }
        (p, labels)
    }

    #[test]
    fn finds_the_flipped_share() {
        let (p, labels) = probabilities(100, 30);
        let e = estimate(&p, 2, &labels);
        assert!((e.rate - 30.0 / 200.0).abs() < 0.01, "{e:?}");
        assert!(e.per_class[0] < 0.01, "{e:?}");
        assert!((e.per_class[1] - 30.0 / 130.0).abs() < 0.02, "{e:?}");
        let (p, labels) = probabilities(100, 0);
        assert!(estimate(&p, 2, &labels).rate < 1e-9);
    }

    #[test]
    fn an_unused_class_is_nan_not_a_division_by_zero() {
        let e = estimate(&[0.9, 0.1, 0.0, 0.8, 0.2, 0.0], 3, &[0, 0]);
        assert_eq!(e.rate, 0.0);
        assert!(e.per_class[1].is_nan() && e.per_class[2].is_nan());
    }
}
