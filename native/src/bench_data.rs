//! `taks bench --generated NxCxHxW`: images made up on the spot, for timing networks at
//! sizes no bundled dataset has (the CNN on 32x32 colour without CIFAR's files, ResNet-18
//! at 224x224). Only the bench reads them: timings depend on the shapes, not the pixels.
//!
//! Each class has a fixed random pattern; a sample is its class's pattern plus noise, so
//! the networks still see learnable data and the losses stay in a realistic range. The
//! training part has N samples, the test part N/10 (at least one), ten classes.

use std::str::FromStr;

use taks_core::data::{Dataset, Samples, Split};
use taks_core::rng::SplitMix64;

/// The size of a generated training set, as the flag gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    pub n: usize,
    /// [C, H, W].
    pub shape: [usize; 3],
}

/// The largest generated training set, in values (4 GiB of f32): far beyond any sensible
/// bench, small enough that a typo cannot ask for a terabyte.
const MAX_VALUES: usize = 1 << 30;

impl FromStr for Generated {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("'{text}' is not NxCxHxW (e.g. 50000x3x32x32), each at least 1");
        let parts: Vec<usize> = text
            .split('x')
            .map(|p| p.parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        let [n, c, h, w] = parts[..] else {
            return Err(bad());
        };
        if parts.contains(&0) {
            return Err(bad());
        }
        if ![1, 3].contains(&c) {
            return Err(format!("'{text}': images have 1 or 3 channels, not {c}"));
        }
        let values = [n, c, h, w]
            .iter()
            .try_fold(1usize, |acc, &v| acc.checked_mul(v));
        if values.is_none_or(|v| v > MAX_VALUES) {
            return Err(format!(
                "'{text}' is over {MAX_VALUES} values (4 GiB); time fewer or smaller images"
            ));
        }
        Ok(Generated {
            n,
            shape: [c, h, w],
        })
    }
}

pub const CLASSES: usize = 10;

impl Generated {
    /// The split: N training samples, N/10 test samples, deterministic in `seed`.
    pub fn split(self, seed: u64) -> Split {
        let size: usize = self.shape.iter().product();
        let mut rng = SplitMix64::for_stream(seed, "generated-patterns");
        let patterns: Vec<f32> = (0..CLASSES * size)
            .map(|_| rng.next_f64() as f32 - 0.5)
            .collect();
        let part = |n: usize, stream: &str| {
            let mut rng = SplitMix64::for_stream(seed, stream);
            let labels: Vec<u32> = (0..n).map(|_| rng.below(CLASSES) as u32).collect();
            let mut images = Vec::with_capacity(n * size);
            for &label in &labels {
                let pattern = &patterns[label as usize * size..][..size];
                // Uniform noise of the pattern's own spread: classes overlap but are
                // separable, as real images are.
                images.extend(pattern.iter().map(|&p| p + rng.next_f64() as f32 - 0.5));
            }
            Dataset {
                samples: Samples::from_values(images, size),
                labels,
                shape: self.shape,
                classes: CLASSES,
            }
        };
        Split {
            train: part(self.n, "generated-train"),
            test: part((self.n / 10).max(1), "generated-test"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_and_refuses_nonsense() {
        assert_eq!(
            "50000x3x32x32".parse(),
            Ok(Generated {
                n: 50000,
                shape: [3, 32, 32]
            })
        );
        for bad in [
            "",
            "5x3x32",
            "5x3x32x32x1",
            "0x3x32x32",
            "5x2x32x32",
            "ax3x2x2",
            "5x3x-2x2",
        ] {
            assert!(bad.parse::<Generated>().is_err(), "{bad}");
        }
        let huge = "100000000x3x224x224".parse::<Generated>().unwrap_err();
        assert!(huge.contains("4 GiB"), "{huge}");
    }

    #[test]
    fn classes_differ_and_parts_are_sized() {
        let split = Generated {
            n: 200,
            shape: [1, 4, 4],
        }
        .split(3);
        assert_eq!((split.train.len(), split.test.len()), (200, 20));
        let (train, test) = (split.train.samples.to_vec(), split.test.samples.to_vec());
        assert_eq!(train.len(), 200 * 16);
        // A sample lies nearer its own class's mean than another class's: the classes
        // carry signal, so the networks' losses fall as they would on real data.
        let mean = |class: u32| {
            let mut sum = vec![0.0f32; 16];
            let mut count = 0.0;
            for (i, &l) in split.train.labels.iter().enumerate() {
                if l == class {
                    count += 1.0;
                    for (s, v) in sum.iter_mut().zip(&train[i * 16..][..16]) {
                        *s += v;
                    }
                }
            }
            sum.into_iter().map(|s| s / count).collect::<Vec<_>>()
        };
        let means: Vec<Vec<f32>> = (0..CLASSES as u32).map(mean).collect();
        let dist =
            |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f32>();
        let nearest_own = split
            .test
            .labels
            .iter()
            .enumerate()
            .filter(|&(i, &l)| {
                let x = &test[i * 16..][..16];
                (0..CLASSES).all(|c| dist(x, &means[l as usize]) <= dist(x, &means[c]))
            })
            .count();
        assert!(
            nearest_own >= 15,
            "{nearest_own} of 20 test samples nearest their class"
        );
        assert_eq!(
            split.train.labels,
            Generated {
                n: 200,
                shape: [1, 4, 4]
            }
            .split(3)
            .train
            .labels
        );
    }
}
