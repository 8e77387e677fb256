//! Why a sample was or was not chosen, epoch by epoch: the record the teaching page
//! replays when a learner asks about one sample.
//!
//! After each epoch t the selector has L_t and has chosen the next set as the k
//! smallest of its ranked values (L_t + eta r_t for TAkS and naive, theta_t for
//! greedy). The trail keeps, per epoch, L_t and those ranked values for every sample,
//! the k-th smallest ranked value (the line a sample had to be under) and the set that
//! was chosen, all read from the selector itself; [`Trail::sample`] cuts one sample's
//! row out. Memory: 9 bytes per sample per epoch (8,000 digits over 200 epochs: 14 MB).

use serde::Serialize;

use super::Selector;
use crate::Result;

pub struct Trail {
    /// sets[0]: the set of epoch 1; sets[t]: the set chosen after epoch t (1 = chosen).
    sets: Vec<Vec<u8>>,
    /// cumulative[t - 1]: L_t.
    cumulative: Vec<Vec<f32>>,
    /// ranked[t - 1]: the values the set after epoch t is the k smallest of.
    ranked: Vec<Vec<f32>>,
    /// thresholds[t - 1]: the k-th smallest of ranked[t - 1].
    thresholds: Vec<f32>,
}

/// What the selector holds after an epoch: L_t and the set it chose.
pub struct Reading {
    cumulative: Vec<f32>,
    chosen: Vec<u32>,
}

impl Reading {
    /// Read both from the selector (from the device on the WGSL engine).
    pub async fn of(selector: &Selector) -> Result<Self> {
        Ok(Reading {
            cumulative: selector.cumulative_risk_host().await?,
            chosen: selector.current_indices_host().await?,
        })
    }
}

/// One sample's row of the trail, one entry per finished epoch t = 1, 2, ...
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SampleTrail {
    /// Whether it was in the set epoch t trained on.
    pub trained: Vec<bool>,
    /// Its noise-risk theta_t (L_t - L_{t-1}, within f32 rounding).
    pub theta: Vec<f32>,
    /// Its cumulative noise-risk L_t.
    pub cumulative: Vec<f32>,
    /// Its ranked value after epoch t (L_t + eta r_t, or theta_t for greedy).
    pub ranked: Vec<f32>,
    /// The k-th smallest ranked value after epoch t: at or under it, chosen for t + 1.
    pub threshold: Vec<f32>,
    /// Whether it was chosen for epoch t + 1.
    pub chosen_next: Vec<bool>,
}

impl Trail {
    /// Start from the selector's first set (before epoch 1).
    pub async fn new(selector: &Selector, n: usize) -> Result<Self> {
        let first = selector.current_indices_host().await?;
        Ok(Trail {
            sets: vec![mask(&first, n)],
            cumulative: Vec::new(),
            ranked: Vec::new(),
            thresholds: Vec::new(),
        })
    }

    /// Finished epochs recorded.
    pub fn epochs(&self) -> usize {
        self.cumulative.len()
    }

    /// Record epoch `epoch` (1-based, the next one) after the selector's update.
    pub async fn record(&mut self, selector: &Selector, epoch: usize) -> Result<()> {
        let reading = Reading::of(selector).await?;
        self.push(selector, epoch, reading);
        Ok(())
    }

    /// [`Trail::record`] in two halves, for a caller that must not hold the trail
    /// across the device read: the [`Reading`] of the selector after epoch `epoch`.
    pub fn push(&mut self, selector: &Selector, epoch: usize, reading: Reading) {
        assert_eq!(epoch, self.epochs() + 1, "epochs are recorded in order");
        let n = self.sets[0].len();
        let Reading { cumulative, chosen } = reading;
        let previous = self.cumulative.last();
        let theta: Vec<f32> = match previous {
            Some(p) => cumulative.iter().zip(p).map(|(l, p)| l - p).collect(),
            None => cumulative.clone(),
        };
        let ranked = selector.ranked_values(&cumulative, &theta, epoch);
        let k = selector.k();
        let threshold = if k == 0 {
            f32::NEG_INFINITY
        } else {
            let mut sorted = ranked.clone();
            *sorted.select_nth_unstable_by(k - 1, f32::total_cmp).1
        };
        self.sets.push(mask(&chosen, n));
        self.cumulative.push(cumulative);
        self.ranked.push(ranked);
        self.thresholds.push(threshold);
    }

    /// The set chosen after `epochs` finished epochs (the first set for 0), 1 = chosen,
    /// and L of that epoch (empty for 0); `None` past the last recorded epoch. A reader
    /// that names the epoch gets the same answer while later epochs are recorded, so
    /// everything a page shows of one epoch agrees.
    pub fn set_after(&self, epochs: usize) -> Option<(&[u8], &[f32])> {
        let set = self.sets.get(epochs)?;
        let cumulative = match epochs {
            0 => &[][..],
            t => &self.cumulative[t - 1][..],
        };
        Some((set, cumulative))
    }

    /// Sample `i`'s row over the first `epochs` finished epochs, or `None` when `i` is
    /// out of range or fewer epochs are recorded.
    pub fn sample(&self, i: usize, epochs: usize) -> Option<SampleTrail> {
        if i >= self.sets[0].len() || epochs > self.epochs() {
            return None;
        }
        let theta = (0..epochs)
            .map(|t| match t {
                0 => self.cumulative[0][i],
                t => self.cumulative[t][i] - self.cumulative[t - 1][i],
            })
            .collect();
        Some(SampleTrail {
            trained: self.sets[..epochs].iter().map(|s| s[i] == 1).collect(),
            theta,
            cumulative: self.cumulative[..epochs].iter().map(|l| l[i]).collect(),
            ranked: self.ranked[..epochs].iter().map(|r| r[i]).collect(),
            threshold: self.thresholds[..epochs].to_vec(),
            chosen_next: self.sets[1..=epochs].iter().map(|s| s[i] == 1).collect(),
        })
    }
}

fn mask(indices: &[u32], n: usize) -> Vec<u8> {
    let mut mask = vec![0u8; n];
    indices.iter().for_each(|&i| mask[i as usize] = 1);
    mask
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Tensor, TensorData};

    use super::*;
    use crate::noise::NoisyLabels;
    use crate::rng::SplitMix64;
    use crate::selection::{Engine, Objective};

    /// Plays three epochs of random two-class logits through a selector and checks
    /// that every sample's row explains the selector's own choices: chosen for t + 1
    /// exactly when its ranked value is at most the k-th smallest, and the set it
    /// trained on in epoch t + 1 is the one chosen after t.
    #[test]
    fn each_sample_row_explains_the_selectors_choice() {
        let (n, k, classes) = (300, 90, 3);
        let device = Device::flex();
        let mut rng = SplitMix64::new(4);
        let labels = NoisyLabels {
            true_labels: (0..n as u32).map(|i| i % 3).collect(),
            noisy_labels: (0..n as u32).map(|i| i % 3).collect(),
        };
        for objective in [Objective::Perturbed { eta: 2.0 }, Objective::Greedy] {
            let mut selector =
                Selector::new(objective, k, 9, &labels, &device, Engine::Reference).unwrap();
            let mut trail = pollster::block_on(Trail::new(&selector, n)).unwrap();
            let mut thetas = Vec::new();
            for epoch in 1..=3 {
                let logits: Vec<f32> = (0..n * classes)
                    .map(|_| 4.0 * rng.next_f64() as f32)
                    .collect();
                let theta = crate::selection::cpu_reference::noise_risk(
                    &logits,
                    classes,
                    &labels.noisy_labels,
                );
                thetas.push(theta);
                let logits = Tensor::from_data(TensorData::new(logits, [n, classes]), &device);
                pollster::block_on(selector.update(logits, epoch)).unwrap();
                pollster::block_on(trail.record(&selector, epoch)).unwrap();
            }
            assert_eq!(trail.epochs(), 3);
            let mut chosen_counts = [0usize; 3];
            for i in 0..n {
                let row = trail.sample(i, 3).unwrap();
                for (t, theta) in thetas.iter().enumerate() {
                    assert!((row.theta[t] - theta[i]).abs() < 1e-5, "{objective:?}");
                    assert_eq!(
                        row.chosen_next[t],
                        row.ranked[t] <= row.threshold[t],
                        "{objective:?} sample {i} epoch {t}"
                    );
                    chosen_counts[t] += row.chosen_next[t] as usize;
                    if t > 0 {
                        assert_eq!(row.trained[t], row.chosen_next[t - 1]);
                    }
                }
                if objective == Objective::Greedy {
                    assert_eq!(row.ranked, row.theta);
                }
            }
            assert_eq!(chosen_counts, [k; 3], "{objective:?}");
            assert!(trail.sample(n, 3).is_none());
            assert!(trail.sample(0, 4).is_none(), "epoch 4 is not recorded");
            // An earlier epoch's row is the start of the full row, and its last
            // choice is the set recorded after that epoch, as the page's grid shows it.
            for i in 0..n {
                let (full, early) = (trail.sample(i, 3).unwrap(), trail.sample(i, 2).unwrap());
                assert_eq!(early.trained, full.trained[..2]);
                assert_eq!(early.chosen_next, full.chosen_next[..2]);
                assert_eq!(early.ranked, full.ranked[..2]);
                let (set, cumulative) = trail.set_after(2).unwrap();
                assert_eq!(set[i] == 1, early.chosen_next[1]);
                assert_eq!(cumulative[i], early.cumulative[1]);
            }
            assert_eq!(trail.set_after(0).unwrap().1, &[] as &[f32]);
            assert!(trail.set_after(4).is_none());
        }
    }
}
