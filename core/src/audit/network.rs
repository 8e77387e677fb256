//! Which network an image folder gets when the user names none: the most capable one
//! whose whole audit fits a time budget on the device actually present.
//!
//! A folder of colour photos used to get the paper's CNN or ResNet-18 whatever the
//! machine: on two CPU cores the CNN took 940 s for 3,000 small images that the MLP
//! audits in 2 s nearly as well. So the candidates, cheapest first, are:
//! 1. the MLP, on the image at its own size up to 32x32 (else 32x32), grey or colour;
//! 2. the paper's CNN at 32x32;
//! 3. ResNet-18 at the image's size, at most 224x224;
//!
//! and each is timed on the device: two epochs of a TAkS run (k = n, so it trains on
//! and scores every sample, as a selection epoch nearly does) on [`TIMED_SAMPLES`] random
//! samples of its input. The first epoch pays the warm-up (kernel compiles,
//! allocations) and is left out; the second, per sample, prices the audit's epochs:
//! `probe_folds * probe_epochs * (folds - 1) / folds + epochs` passes over all n
//! samples. The most capable candidate within the budget wins; the first one over it
//! ends the search (the later ones cost more), and when even the MLP is over, the MLP
//! is used and the output says so. On a GPU the same rule picks the CNN or ResNet-18.
//!
//! Colour that carries nothing is dropped first ([`colour_carries_nothing`]): a folder
//! of grey scans with some tinted exports gets grey candidates.

use burn::tensor::Device;
use serde::Serialize;
use web_time::Instant;

use super::AuditSettings;
use super::input::Input;
use crate::data::{Dataset, Samples, Split};
use crate::methods::Method;
use crate::nn::Architecture;
use crate::noise::NoisyLabels;
use crate::rng::SplitMix64;
use crate::train::Trainer;
use crate::{Error, Result};

/// Random samples each candidate is timed on.
pub const TIMED_SAMPLES: usize = 128;

/// A network and the input it would take.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub architecture: Architecture,
    pub input: Input,
}

impl Candidate {
    pub fn describe(&self) -> String {
        self.input.describe(self.architecture)
    }
}

/// One candidate's price.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Priced {
    pub network: String,
    /// Seconds one sample costs per epoch (train and score), measured.
    pub seconds_per_sample_epoch: f64,
    /// The whole audit at that rate.
    pub estimated_seconds: f64,
}

/// What was chosen and why, for the output and `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    #[serde(skip)]
    pub candidate: Candidate,
    pub network: String,
    pub budget_seconds: f64,
    /// Every candidate timed, cheapest first.
    pub priced: Vec<Priced>,
    pub reason: String,
}

/// The candidates for images of the most common size `common`, cheapest first.
/// `colour`: whether colour is kept (3 channels); the CNN and ResNet-18 always take RGB.
pub fn candidates(common: (u32, u32), colour: bool) -> Vec<Candidate> {
    let (w, h) = common;
    let small = w <= 32 && h <= 32;
    let image = |channels: usize, (width, height): (u32, u32)| Input::Image {
        channels,
        height: height as usize,
        width: width as usize,
    };
    let resnet_size = if w <= super::input::MAX_SIDE && h <= super::input::MAX_SIDE {
        common
    } else {
        (super::input::MAX_SIDE, super::input::MAX_SIDE)
    };
    vec![
        Candidate {
            architecture: Architecture::Mlp,
            input: image(
                if colour { 3 } else { 1 },
                if small { common } else { (32, 32) },
            ),
        },
        Candidate {
            architecture: Architecture::Cnn,
            input: image(3, (32, 32)),
        },
        Candidate {
            architecture: Architecture::ResNet18,
            input: image(3, resnet_size),
        },
    ]
}

/// The most capable candidate whose audit of `n` samples in `classes` classes fits
/// `budget_seconds` on `device` (see the module doc). `settings` gives the epochs and
/// folds; its architecture is replaced by each candidate's.
pub async fn choose(
    candidates: &[Candidate],
    n: usize,
    classes: usize,
    settings: &AuditSettings,
    budget_seconds: f64,
    device: &Device,
) -> Result<Choice> {
    let folds = settings.probe_folds.max(2) as f64;
    let passes =
        folds * settings.probe_epochs as f64 * (folds - 1.0) / folds + settings.epochs as f64;
    let mut priced = Vec::new();
    let mut best = None;
    for candidate in candidates {
        let per_sample = seconds_per_sample_epoch(candidate, classes, settings, device).await?;
        let estimated = per_sample * passes * n as f64;
        priced.push(Priced {
            network: candidate.describe(),
            seconds_per_sample_epoch: per_sample,
            estimated_seconds: estimated,
        });
        if estimated > budget_seconds {
            break;
        }
        best = Some(candidate.clone());
    }
    let over = priced
        .iter()
        .find(|p| p.estimated_seconds > budget_seconds)
        .map(|p| format!("; {} would take ~{:.0} s", p.network, p.estimated_seconds));
    let (candidate, reason) = match best {
        Some(c) => {
            let p = &priced[candidates
                .iter()
                .position(|x| *x == c)
                .expect("a candidate")];
            let reason = format!(
                "{} is the most capable network whose audit fits the {budget_seconds:.0} s budget here (~{:.0} s){}",
                c.describe(),
                p.estimated_seconds,
                over.unwrap_or_default()
            );
            (c, reason)
        }
        None => {
            let c = candidates[0].clone();
            let reason = format!(
                "even {} is estimated at ~{:.0} s, over the {budget_seconds:.0} s budget; it is the cheapest, so it is used",
                c.describe(),
                priced[0].estimated_seconds
            );
            (c, reason)
        }
    };
    Ok(Choice {
        network: candidate.describe(),
        candidate,
        budget_seconds,
        priced,
        reason,
    })
}

/// Seconds per sample of the second of two TAkS epochs on random inputs.
async fn seconds_per_sample_epoch(
    candidate: &Candidate,
    classes: usize,
    settings: &AuditSettings,
    device: &Device,
) -> Result<f64> {
    let shape = candidate.input.shape();
    let size: usize = shape.iter().product();
    let mut rng = SplitMix64::for_stream(settings.seed, "network timing");
    let labels: Vec<u32> = (0..TIMED_SAMPLES)
        .map(|_| rng.below(classes.max(2)) as u32)
        .collect();
    // Random bytes, gathered and scaled batch by batch as a folder's images are.
    let bytes: Vec<u8> = (0..TIMED_SAMPLES * size)
        .map(|_| rng.below(256) as u8)
        .collect();
    let data = Dataset {
        samples: Samples::from_bytes(bytes, size),
        labels: labels.clone(),
        shape,
        classes: classes.max(2),
    };
    let timing = AuditSettings {
        architecture: candidate.architecture,
        ..settings.clone()
    };
    let config = timing.train_config(Method::TAKS, 1.0, 2)?;
    let test = data.subset(&[0]);
    let mut run = Trainer::with_labels(
        config,
        Split { train: data, test },
        NoisyLabels {
            true_labels: labels.clone(),
            noisy_labels: labels,
        },
        device,
    )?;
    run.run_epoch().await?;
    let started = Instant::now();
    run.run_epoch().await?;
    let seconds = started.elapsed().as_secs_f64();
    if !seconds.is_finite() {
        return Err(Error::Config("the timing clock failed".into()));
    }
    Ok(seconds / TIMED_SAMPLES as f64)
}

/// Whether the colour of these images says nothing the grey does not: every image is
/// grey or a tinted grey (each channel a multiple of the brightness, as a sepia or a
/// colour cast makes it; up to 2% of the pixel variance left over, for JPEG's
/// artefacts), and the tints say nothing about the class (a one-way analysis of
/// variance of the tints by class gives F < 4; with no more images than classes the
/// colour is kept). `images` are planar RGB bytes [3, H, W] with
/// their labels.
pub fn colour_carries_nothing(images: &[(Vec<u8>, u32)]) -> bool {
    let mut tints = Vec::with_capacity(images.len());
    for (pixels, label) in images {
        let plane = pixels.len() / 3;
        if plane == 0 {
            continue;
        }
        let channel = |c: usize| &pixels[c * plane..(c + 1) * plane];
        let luma: Vec<f64> = (0..plane)
            .map(|i| (0..3).map(|c| channel(c)[i] as f64).sum::<f64>() / 3.0)
            .collect();
        let yy: f64 = luma.iter().map(|y| y * y).sum();
        if yy == 0.0 {
            tints.push(([1.0; 3], *label));
            continue;
        }
        let mut gains = [0f64; 3];
        let (mut residual, mut spread) = (0f64, 0f64);
        for (c, gain) in gains.iter_mut().enumerate() {
            let values = channel(c);
            *gain = values
                .iter()
                .zip(&luma)
                .map(|(&v, y)| v as f64 * y)
                .sum::<f64>()
                / yy;
            let mean = values.iter().map(|&v| v as f64).sum::<f64>() / plane as f64;
            for (&v, y) in values.iter().zip(&luma) {
                residual += (v as f64 - *gain * y).powi(2);
                spread += (v as f64 - mean).powi(2);
            }
        }
        if spread > 0.0 && residual / spread > 0.02 {
            return false;
        }
        let total: f64 = gains.iter().sum();
        tints.push((gains.map(|g| g / total.max(1e-9)), *label));
    }
    if tints.is_empty() {
        return true;
    }
    // Between-class share of the tints' variance, summed over the three channels.
    let mean = |items: &[&[f64; 3]]| {
        let mut m = [0f64; 3];
        items.iter().for_each(|t| (0..3).for_each(|c| m[c] += t[c]));
        m.map(|v| v / items.len() as f64)
    };
    let all: Vec<&[f64; 3]> = tints.iter().map(|(t, _)| t).collect();
    let overall = mean(&all);
    let total: f64 = all
        .iter()
        .map(|t| (0..3).map(|c| (t[c] - overall[c]).powi(2)).sum::<f64>())
        .sum();
    if total < 1e-9 * all.len() as f64 {
        return true;
    }
    let mut labels: Vec<u32> = tints.iter().map(|(_, l)| *l).collect();
    labels.sort_unstable();
    labels.dedup();
    let (n, k) = (tints.len() as f64, labels.len() as f64);
    if labels.len() < 2 {
        return true;
    }
    if n <= k {
        // Too few images to tell a class's tint from chance: keep the colour.
        return false;
    }
    let between: f64 = labels
        .iter()
        .map(|&l| {
            let members: Vec<&[f64; 3]> = tints
                .iter()
                .filter(|(_, x)| *x == l)
                .map(|(t, _)| t)
                .collect();
            let m = mean(&members);
            members.len() as f64 * (0..3).map(|c| (m[c] - overall[c]).powi(2)).sum::<f64>()
        })
        .sum();
    // One-way analysis of variance: F = (between / (k - 1)) / (within / (n - k)). Tints
    // drawn whatever the class give F near 1 (a class's few images still differ in
    // their mean tint by chance); a tint that marks the class gives F in the hundreds.
    let within = (total - between).max(0.0);
    let f = (between / (k - 1.0)) / (within / (n - k)).max(1e-12);
    f < 4.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 16x16 planar RGB image: a diagonal ramp, tinted by `tint`, plus `noise`.
    fn image(tint: [f64; 3], noise: u8, seed: u64) -> Vec<u8> {
        let mut rng = SplitMix64::new(seed);
        let mut out = vec![0u8; 3 * 256];
        for i in 0..256 {
            let y = ((i % 16 + i / 16) * 8) as f64;
            for c in 0..3 {
                let jitter = if noise > 0 {
                    rng.below(noise as usize) as f64
                } else {
                    0.0
                };
                out[c * 256 + i] = (y * tint[c] + jitter).min(255.0) as u8;
            }
        }
        out
    }

    #[test]
    fn grey_and_tinted_grey_carry_nothing_but_real_colour_does() {
        let grey: Vec<(Vec<u8>, u32)> = (0..20)
            .map(|i| (image([1.0; 3], 0, i), i as u32 % 2))
            .collect();
        assert!(colour_carries_nothing(&grey));
        // Random casts, whatever the class.
        let mut rng = SplitMix64::new(1);
        let mut cast = || {
            [
                0.6 + 0.4 * rng.next_f64(),
                0.6 + 0.4 * rng.next_f64(),
                0.6 + 0.4 * rng.next_f64(),
            ]
        };
        let tinted: Vec<(Vec<u8>, u32)> = (0..40)
            .map(|i| (image(cast(), 2, i), i as u32 % 2))
            .collect();
        assert!(colour_carries_nothing(&tinted));
        // The same casts, but red for class 0 and blue for class 1: the colour is the label.
        let by_class: Vec<(Vec<u8>, u32)> = (0..40)
            .map(|i| {
                let tint = if i % 2 == 0 {
                    [1.0, 0.5, 0.5]
                } else {
                    [0.5, 0.5, 1.0]
                };
                (image(tint, 2, i), i as u32 % 2)
            })
            .collect();
        assert!(!colour_carries_nothing(&by_class));
        // Colour within the image (red left half, green right half) is not a tint.
        let mut two = image([1.0; 3], 0, 0);
        for i in 0..256 {
            let left = i % 16 < 8;
            two[i] = if left { 200 } else { 10 };
            two[256 + i] = if left { 10 } else { 200 };
        }
        assert!(!colour_carries_nothing(&[
            (two, 0),
            (image([1.0; 3], 0, 1), 1)
        ]));
    }

    #[test]
    fn candidates_go_from_cheap_to_capable() {
        let c = candidates((28, 28), false);
        assert_eq!(c[0].input.shape(), [1, 28, 28]);
        assert_eq!(c[1].input.shape(), [3, 32, 32]);
        assert_eq!(c[2].input.shape(), [3, 28, 28]);
        let c = candidates((640, 480), true);
        assert_eq!(c[0].input.shape(), [3, 32, 32]);
        assert_eq!(c[2].input.shape(), [3, 224, 224]);
        assert_eq!(c[2].architecture, Architecture::ResNet18);
    }

    #[test]
    fn the_budget_picks_the_most_capable_network_that_fits() {
        let settings = AuditSettings::new(Architecture::Mlp);
        let device = Device::flex();
        let c = candidates((28, 28), false);
        // A generous budget admits the CNN on flex at this size; a tiny one only the MLP,
        // and nothing fits a budget of zero (the MLP is used, and said to be over).
        let roomy = pollster::block_on(choose(&c[..2], 1000, 10, &settings, 1e9, &device)).unwrap();
        assert_eq!(roomy.candidate.architecture, Architecture::Cnn);
        assert_eq!(roomy.priced.len(), 2);
        let mlp = roomy.priced[0].seconds_per_sample_epoch;
        let cnn = roomy.priced[1].seconds_per_sample_epoch;
        assert!(
            cnn > 3.0 * mlp,
            "the CNN ({cnn}) should cost well more than the MLP ({mlp})"
        );
        // A budget between the two prices picks the MLP and names the CNN's estimate.
        let between =
            (roomy.priced[0].estimated_seconds * roomy.priced[1].estimated_seconds).sqrt();
        let tight =
            pollster::block_on(choose(&c[..2], 1000, 10, &settings, between, &device)).unwrap();
        assert_eq!(tight.candidate.architecture, Architecture::Mlp);
        assert!(
            tight.reason.contains("cnn at 32x32 colour would take"),
            "{}",
            tight.reason
        );
        let none = pollster::block_on(choose(&c[..2], 1000, 10, &settings, 0.0, &device)).unwrap();
        assert_eq!(none.candidate.architecture, Architecture::Mlp);
        assert_eq!(
            none.priced.len(),
            1,
            "the search stops at the first over the budget"
        );
        assert!(
            none.reason.contains("over the 0 s budget"),
            "{}",
            none.reason
        );
    }
}
