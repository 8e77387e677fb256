//! Validation without clean labels: hold out part of the NOISY training set.
//!
//! Both places that need a validation set use this: F-correction's first stage (keep the
//! epoch with the best noisy-validation accuracy) and `taks tune` (choose TAkS's k and
//! eta). The held-out labels stay noisy, as a user with only noisy labels would have
//! them; the paper argues, and the authors' code relies on, noisy-validation accuracy
//! ranking models like clean accuracy does when the noise is not adversarial.

use crate::data::{Dataset, Split};
use crate::noise::NoisyLabels;
use crate::rng::SplitMix64;

/// A training set split for noisy validation.
pub struct Holdout {
    /// The kept part, with `train.labels` its TRUE labels (for label precision).
    pub train: Dataset,
    /// Its true and noisy labels.
    pub labels: NoisyLabels,
    /// The held-out part, labelled with its NOISY labels.
    pub validation: Dataset,
    /// Indices (into the full training set) of the kept part, in order.
    pub train_indices: Vec<u32>,
}

impl Holdout {
    /// The kept part for training and the held-out part as the "test" set.
    pub fn into_split(self) -> (Split, NoisyLabels) {
        (
            Split {
                train: self.train,
                test: self.validation,
            },
            self.labels,
        )
    }
}

/// Hold out `fraction` of `train` (chosen by a seeded shuffle) as noisy validation.
pub fn noisy_holdout(train: &Dataset, labels: &NoisyLabels, fraction: f64, seed: u64) -> Holdout {
    let n = train.len();
    let held = ((n as f64 * fraction).round() as usize).clamp(1, n.saturating_sub(1).max(1));
    let mut order: Vec<u32> = (0..n as u32).collect();
    SplitMix64::for_stream(seed, "noisy-holdout").shuffle(&mut order);
    let (validation, kept) = order.split_at(held);
    let mut kept = kept.to_vec();
    kept.sort_unstable();
    let mut validation = validation.to_vec();
    validation.sort_unstable();
    let pick = |indices: &[u32], label: &dyn Fn(usize) -> u32| -> Dataset {
        let picked: Vec<usize> = indices.iter().map(|&i| i as usize).collect();
        Dataset {
            samples: train.samples.subset(&picked),
            labels: picked.iter().map(|&i| label(i)).collect(),
            shape: train.shape,
            classes: train.classes,
        }
    };
    Holdout {
        train: pick(&kept, &|i| labels.true_labels[i]),
        labels: NoisyLabels {
            true_labels: kept
                .iter()
                .map(|&i| labels.true_labels[i as usize])
                .collect(),
            noisy_labels: kept
                .iter()
                .map(|&i| labels.noisy_labels[i as usize])
                .collect(),
        },
        validation: pick(&validation, &|i| labels.noisy_labels[i]),
        train_indices: kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_out_a_fifth_with_noisy_labels() {
        let n = 50;
        let train = Dataset {
            samples: crate::data::Samples::from_values((0..n * 2).map(|v| v as f32).collect(), 2),
            labels: (0..n as u32).map(|i| i % 3).collect(),
            shape: [1, 1, 2],
            classes: 3,
        };
        let labels = NoisyLabels {
            true_labels: train.labels.clone(),
            noisy_labels: (0..n as u32).map(|i| (i + 1) % 3).collect(),
        };
        let h = noisy_holdout(&train, &labels, 0.2, 7);
        assert_eq!((h.train.len(), h.validation.len()), (40, 10));
        // Every sample lands in exactly one part, images travel with their labels.
        let mut seen: Vec<usize> = h.train_indices.iter().map(|&i| i as usize).collect();
        let (validation, kept) = (h.validation.samples.to_vec(), h.train.samples.to_vec());
        for v in 0..h.validation.len() {
            let i = validation[v * 2] as usize / 2;
            assert_eq!(h.validation.labels[v], labels.noisy_labels[i]);
            seen.push(i);
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
        for (j, &i) in h.train_indices.iter().enumerate() {
            assert_eq!(kept[j * 2] as u32, i * 2);
            assert_eq!(h.train.labels[j], labels.true_labels[i as usize]);
            assert_eq!(h.labels.noisy_labels[j], labels.noisy_labels[i as usize]);
        }
        // Seeded: another seed holds out another fifth.
        assert_ne!(
            noisy_holdout(&train, &labels, 0.2, 8).train_indices,
            h.train_indices
        );
    }
}
