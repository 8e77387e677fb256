//! The label audit: which of a data set's labels are wrong, what they should probably
//! be, and a model trained without them, from one TAkS run.
//!
//! Two stages, both on every sample the user gave:
//! 1. **Probe** ([`estimate`]): the data is split into folds (every `folds`-th
//!    sample); for each, a short Standard run on the other folds predicts it. Those
//!    out-of-sample probabilities give the noise-rate estimate, and from it
//!    k = n (1 - estimate) unless the user set k.
//! 2. **Selection**: a TAkS run with that k. Every epoch scores all n samples, so every
//!    sample, selected or not, collects its noise-risk theta_t (paper Eq. 6) into L_T;
//!    the network fits only the k-sets, which keep the samples with the largest
//!    cumulative risk out, so a wrong label is seldom learnt and keeps contradicting
//!    the model.
//!
//! The per-sample verdict ([`SampleAudit`]):
//! - `label_quality` = 1 - L_T / T, the mean over epochs of 1 - theta_t: 1 when the
//!   model always predicted the given label with certainty, 0 when it always
//!   contradicted it with certainty. It is the sort key of `suspects.csv`.
//! - `suggested_label` and its confidence: the final network's prediction.
//! - `is_label_issue`: the final network contradicts the given label *and* the label's
//!   quality is below 1/2, i.e. the model disagreed with it more than it agreed over the
//!   whole run, not just at the end. See [`is_label_issue`].

pub mod estimate;
pub mod images;
pub mod input;
pub mod model_card;
pub mod network;
pub mod request;
pub mod source;
pub mod summary;
pub mod suspects;

use burn::tensor::Device;
use serde::Serialize;

use crate::data::{Dataset, DatasetKind, Split};
use crate::error::refuse;
use crate::formats::image_folder::Skipped;
use crate::methods::Method;
use crate::metrics::EpochMetrics;
use crate::nn::{Architecture, Classifier};
use crate::noise::{NoiseKind, NoisyLabels};
use crate::precision::Precision;
use crate::selection::Engine;
use crate::settings::Choices;
use crate::settings::TrainConfig;
use crate::train::{After, Next, Trainer, Watch};
use crate::{Error, Result};

pub use estimate::NoiseEstimate;

/// k = n (1 - estimated rate), with no margin below it, unlike the paper's tuned
/// k-ratios (0.10-0.15 below 1 - the true rate): the estimate already runs a few points
/// high (it counts the probe's own mistakes on hard, correctly labelled samples as
/// noise), and leaving those hard samples out of training as well is what made audits
/// flag them. Measured on Fashion-MNIST folders with 23% structured noise, k-ratio 0.70
/// found the mislabelled files with F1 0.78 and k-ratio 0.60 with 0.75; on the digits
/// table 0.80 gave 0.96 and 0.70 gave 0.90 (measured by hand with
/// `scripts/audit-compare/`). Never below one sample, however small the data.
fn k_ratio_from(rate: f64, n: usize) -> f64 {
    (1.0 - rate)
        .clamp(0.05, 1.0)
        .max((1.0 + 1e-9) / n as f64)
        .min(1.0)
}

/// Samples up to which an audit runs its full default epochs ([`AuditSettings::for_samples`]).
pub const FULL_EPOCHS_UP_TO: usize = 200_000;

/// The audit's TAkS run watched: how many epochs trained on each sample (each epoch's
/// k-set counted before it trains), and every epoch reported as it ends.
struct Counted<'a, R> {
    selected_epochs: Vec<u32>,
    report: &'a mut R,
}

impl<R: FnMut(Stage, &EpochMetrics) -> Next> Watch for Counted<'_, R> {
    type Error = Error;

    fn wants_k_set(&self) -> bool {
        true
    }

    fn before(&mut self, _epoch: usize, k_set: &[u32]) -> Result<()> {
        for &i in k_set {
            self.selected_epochs[i as usize] += 1;
        }
        Ok(())
    }

    fn after(&mut self, _: &Trainer, history: &[EpochMetrics]) -> Result<Next> {
        let next = (self.report)(
            Stage::Selection,
            history.last().expect("an epoch just ended"),
        );
        Ok(next)
    }
}

/// The test slice every epoch reports agreement on: at most this many samples, spread
/// over the data, scored against their given labels.
const CHECK_SAMPLES: usize = 1000;

/// The settings of one audit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditSettings {
    pub architecture: Architecture,
    /// Epochs of the selection stage.
    pub epochs: usize,
    /// Epochs of each probe run.
    pub probe_epochs: usize,
    /// Folds of the probe's cross-fitting (at least 2).
    pub probe_folds: usize,
    /// None: k from the estimated noise rate.
    pub k_ratio: Option<f64>,
    pub eta_ratio: f64,
    pub seed: u64,
    pub batch_size: usize,
    pub learning_rate: f64,
    pub eval_batch_size: usize,
    pub selection_engine: Engine,
    /// The arithmetic of every training step, the probe's and the selection's
    /// ([`crate::precision`]); the scoring that gives each sample its risk is f32 in
    /// every precision.
    pub precision: Precision,
}

impl AuditSettings {
    /// Defaults for a network: 20 selection epochs after a 5-epoch probe (long enough
    /// for the easy patterns, short of memorising the labels: on the digits table the
    /// estimate was 27% after 2 epochs, 23.4% after 5 (truth 23.1%), 19% after 20), the paper's
    /// Adam, batch 128 and schedule shape (decay over the last 60%), and its eta ratio
    /// for MNIST-like data (MLP) or CIFAR (the convolutional networks).
    pub fn new(architecture: Architecture) -> Self {
        AuditSettings {
            architecture,
            epochs: 20,
            probe_epochs: 5,
            probe_folds: 4,
            k_ratio: None,
            eta_ratio: match architecture {
                Architecture::Mlp => 0.005,
                _ => 0.001,
            },
            seed: 0,
            batch_size: 128,
            learning_rate: 1e-3,
            eval_batch_size: 1024,
            selection_engine: Engine::Wgsl,
            precision: Precision::F32,
        }
    }

    /// The defaults for `n` samples. Up to [`FULL_EPOCHS_UP_TO`] they are unchanged.
    /// Above it an epoch already holds more gradient steps than the whole default audit
    /// of 100,000 samples, so the probe runs 1 epoch on 2 folds (each fold's network
    /// still sees half the data) and the selection epochs shrink as 20 x 200,000 / n,
    /// never below 8: the cumulative risk still averages 8 readings per sample. On a
    /// million 28x28 grey images (24% misfiled) 4 selection epochs gave F1 0.781, 8
    /// gave 0.797 (measured by hand, `scripts/audit-compare/`, docs/benchmarks.md, "Audit at scale").
    pub fn for_samples(mut self, n: usize) -> Self {
        if n > FULL_EPOCHS_UP_TO {
            self.probe_folds = 2;
            self.probe_epochs = 1;
            let scaled = self.epochs as f64 * FULL_EPOCHS_UP_TO as f64 / n as f64;
            self.epochs = (scaled.round() as usize).clamp(8, self.epochs);
        }
        self
    }

    /// A training configuration for `method` over `epochs`, built the one way every run
    /// is ([`Choices`]). The audited data is not one of the built-in sets: the dataset
    /// named is a stand-in that only the paper's defaults read (of which an audit
    /// overrides every one its methods use), and validation, which keeps the MLP off
    /// colour images: a grey 28x28 set lets every network pass, and the audit chose the
    /// network for the data itself.
    fn train_config(&self, method: Method, k_ratio: f64, epochs: usize) -> Result<TrainConfig> {
        let mut config = Choices {
            k_ratio: Some(k_ratio),
            eta_ratio: Some(self.eta_ratio),
            epochs: Some(epochs),
            seed: Some(self.seed),
            batch_size: Some(self.batch_size),
            learning_rate: Some(self.learning_rate),
            decay_start: Some(epochs * 2 / 5),
            architecture: Some(self.architecture),
            eval_batch_size: Some(self.eval_batch_size),
            precision: Some(self.precision),
            ..Choices::new(DatasetKind::MnistDigits, NoiseKind::Clean, 0.0, method)
        }
        .build()?;
        config.selection_engine = self.selection_engine;
        Ok(config)
    }
}

/// What a front end sets of an audit (the command line's flags, Python's keywords):
/// `None` keeps the default for the data's size and network.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditChoices {
    pub epochs: Option<usize>,
    pub probe_epochs: Option<usize>,
    pub probe_folds: Option<usize>,
    pub k_ratio: Option<f64>,
    pub eta_ratio: Option<f64>,
    pub seed: u64,
    pub batch_size: usize,
    pub learning_rate: f64,
    pub precision: Precision,
}

impl AuditChoices {
    /// Refuse a choice no data could make sense of, in one line that names the setting
    /// as the front end spells it (`name("k_ratio")`: `--k-ratio` on the command line,
    /// `k_ratio` in Python).
    pub fn check(&self, name: impl Fn(&'static str) -> String) -> Result<()> {
        if self.epochs == Some(0) || self.probe_epochs == Some(0) {
            let (epochs, probe) = (name("epochs"), name("probe_epochs"));
            return refuse(format!("{epochs} and {probe} must be at least 1"));
        }
        if let Some(folds) = self.probe_folds.filter(|&f| f < 2) {
            return refuse(format!(
                "{} {folds} must be at least 2",
                name("probe_folds")
            ));
        }
        if let Some(k) = self.k_ratio.filter(|&k| !(k > 0.0 && k <= 1.0)) {
            return refuse(format!("{} {k} must be in (0, 1]", name("k_ratio")));
        }
        if let Some(e) = self.eta_ratio.filter(|e| !(*e >= 0.0 && e.is_finite())) {
            let eta = name("eta_ratio");
            return refuse(format!("{eta} {e} must be a finite number >= 0"));
        }
        if self.batch_size == 0 {
            return refuse(format!("{} must be at least 1", name("batch_size")));
        }
        let lr = self.learning_rate;
        if !(lr > 0.0 && lr.is_finite()) {
            return refuse(format!("{} {lr} must be positive", name("lr")));
        }
        Ok(())
    }

    /// Refuse a k-ratio that selects nobody of `n` samples.
    pub fn check_k(&self, n: usize, name: impl Fn(&'static str) -> String) -> Result<()> {
        match self.k_ratio {
            Some(k) if (n as f64 * k).floor() < 1.0 => refuse(format!(
                "{} {k} of {n} samples selects nothing",
                name("k_ratio")
            )),
            _ => Ok(()),
        }
    }

    /// The settings of an audit of `n` samples with `architecture`: the defaults for that
    /// many ([`AuditSettings::for_samples`]) with these choices over them.
    pub fn settings(&self, architecture: Architecture, n: usize) -> AuditSettings {
        let mut settings = AuditSettings::new(architecture).for_samples(n);
        settings.epochs = self.epochs.unwrap_or(settings.epochs);
        settings.probe_epochs = self.probe_epochs.unwrap_or(settings.probe_epochs);
        settings.probe_folds = self.probe_folds.unwrap_or(settings.probe_folds);
        settings.k_ratio = self.k_ratio;
        settings.eta_ratio = self.eta_ratio.unwrap_or(settings.eta_ratio);
        settings.seed = self.seed;
        settings.batch_size = self.batch_size;
        settings.learning_rate = self.learning_rate;
        settings.precision = self.precision;
        settings
    }
}

/// Which stage an epoch belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The probe run that predicts fold `fold` (0-based) of `folds`.
    Probe {
        fold: usize,
        folds: usize,
    },
    Selection,
}

/// The verdict on one sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleAudit {
    pub given_label: u32,
    pub suggested_label: u32,
    /// The final network's probability of `suggested_label`.
    pub suggested_confidence: f32,
    /// 1 - L_T / T, in [0, 1]; lower is more suspect.
    pub label_quality: f64,
    pub is_label_issue: bool,
    /// L_T, the sum of the sample's noise-risk over the T selection epochs.
    pub cumulative_risk: f32,
    /// Share of the selection epochs that trained on the sample.
    pub selected_fraction: f64,
}

/// Everything an audit found.
pub struct AuditOutcome {
    pub estimate: NoiseEstimate,
    pub k: usize,
    pub k_ratio: f64,
    pub samples: Vec<SampleAudit>,
    /// The network of the selection stage's last epoch (inference copy).
    pub network: Classifier,
    pub probe_history: Vec<EpochMetrics>,
    pub history: Vec<EpochMetrics>,
}

/// The verdict rule: the final model contradicts the label, and did so on balance over
/// the whole run (quality below 1/2). Requiring both keeps a sample the model only
/// lately turned against (a hard but correct one) and a sample whose history is poor
/// but that the final model now agrees with out of the list.
pub fn is_label_issue(given: u32, suggested: u32, label_quality: f64) -> bool {
    suggested != given && label_quality < 0.5
}

/// Audit `data` (labels as given). `labels.true_labels` may hold the truth when it is
/// known (built-in data with injected noise): it changes nothing but the label
/// precision and recall reported per epoch. `report` sees every epoch as it ends, and
/// stops the audit ([`Error::Stopped`]) by answering [`Next::Stop`].
pub async fn run(
    data: Dataset,
    labels: NoisyLabels,
    settings: &AuditSettings,
    device: &Device,
    mut report: impl FnMut(Stage, &EpochMetrics) -> Next,
) -> Result<AuditOutcome> {
    let n = data.len();
    // The front ends check this with their own source names first ([`enough`]).
    enough("the audited data", &labels.noisy_labels, &[])?;
    if settings.epochs == 0 || settings.probe_epochs == 0 {
        return Err(Error::Config(
            "epochs and probe epochs must be at least 1".into(),
        ));
    }
    // Fold f holds every folds-th sample from f: data sorted by class (an image
    // folder) splits evenly.
    let folds = settings.probe_folds.clamp(2, n);
    let fold_of = |f: usize| -> Vec<usize> { (f..n).step_by(folds).collect() };
    let mut probabilities = vec![0f32; n * data.classes];
    let mut probe_history = Vec::new();
    for fold in 0..folds {
        let held = fold_of(fold);
        let fit: Vec<usize> = (0..n).filter(|i| i % folds != fold).collect();
        let train = data.subset(&fit);
        let fit_labels: Vec<u32> = fit.iter().map(|&i| labels.noisy_labels[i]).collect();
        let truth: Vec<u32> = fit.iter().map(|&i| labels.true_labels[i]).collect();
        let mut probe = Trainer::with_labels(
            settings.train_config(Method::STANDARD, 1.0, settings.probe_epochs)?,
            Split {
                test: check_slice(&train),
                train,
            },
            NoisyLabels {
                true_labels: truth,
                noisy_labels: fit_labels,
            },
            device,
        )?;
        let mut reported = After(|_: &Trainer, history: &[EpochMetrics]| {
            let next = report(
                Stage::Probe { fold, folds },
                history.last().expect("an epoch just ended"),
            );
            Ok::<_, Error>(next)
        });
        probe.run_to_end(&mut probe_history, &mut reported).await?;
        if !probe.is_done() {
            return Err(Error::Stopped);
        }
        let held_out = probe.probabilities(&data.subset(&held).samples).await?;
        for (row, &i) in held_out.chunks_exact(data.classes).zip(&held) {
            probabilities[i * data.classes..(i + 1) * data.classes].copy_from_slice(row);
        }
    }
    let estimate = estimate::estimate(&probabilities, data.classes, &labels.noisy_labels);

    let k_ratio = settings
        .k_ratio
        .unwrap_or_else(|| k_ratio_from(estimate.rate, n));
    let config = settings.train_config(Method::TAKS, k_ratio, settings.epochs)?;
    let classes = data.classes;
    let store = data.samples.clone();
    // The samples are shared, not copied: the check slice is a view of them.
    let split = Split {
        test: check_slice(&data),
        train: data,
    };
    let mut taks = Trainer::with_labels(config, split, labels.clone(), device)?;
    let k = taks.k();
    let mut counted = Counted {
        selected_epochs: vec![0u32; n],
        report: &mut report,
    };
    let mut history = Vec::new();
    taks.run_to_end(&mut history, &mut counted).await?;
    if !taks.is_done() {
        return Err(Error::Stopped);
    }
    let selected_epochs = counted.selected_epochs;
    let cumulative = taks
        .selector()
        .expect("TAkS has a selector")
        .cumulative_risk_host()
        .await?;
    let probabilities = taks.train_probabilities().await?;
    if let Some(failed) = store.read_error() {
        return Err(Error::Config(failed));
    }
    let epochs = settings.epochs as f64;
    let samples = probabilities
        .chunks_exact(classes)
        .enumerate()
        .map(|(i, row)| {
            let (suggested, confidence) = argmax(row);
            let given = labels.noisy_labels[i];
            let label_quality = (1.0 - cumulative[i] as f64 / epochs).clamp(0.0, 1.0);
            SampleAudit {
                given_label: given,
                suggested_label: suggested as u32,
                suggested_confidence: confidence,
                label_quality,
                is_label_issue: is_label_issue(given, suggested as u32, label_quality),
                cumulative_risk: cumulative[i],
                selected_fraction: selected_epochs[i] as f64 / epochs,
            }
        })
        .collect();
    Ok(AuditOutcome {
        estimate,
        k,
        k_ratio,
        samples,
        network: taks.networks().first().clone(),
        probe_history,
        history,
    })
}

/// At least 4 samples of at least 2 classes in `labels` (what `source` holds once
/// `skipped` are left out), or the error that says what there is.
pub fn enough(source: &str, labels: &[u32], skipped: &[Skipped]) -> Result<()> {
    let n = labels.len();
    let mut present = labels.to_vec();
    present.sort_unstable();
    present.dedup();
    if n < 4 || present.len() < 2 {
        return Err(Error::malformed(
            source,
            format!(
                "has {n} usable samples in {} classes; an audit needs at least 4 samples and 2 classes{}",
                present.len(),
                match skipped.len() {
                    0 => String::new(),
                    s => format!(
                        " ({s} files skipped, e.g. {}: {})",
                        skipped[0].id, skipped[0].reason
                    ),
                }
            ),
        ));
    }
    Ok(())
}

/// The class with the highest probability (the first of equals) and its probability.
pub fn argmax(probabilities: &[f32]) -> (usize, f32) {
    let mut best = (0, f32::NEG_INFINITY);
    for (j, &p) in probabilities.iter().enumerate() {
        if p > best.1 {
            best = (j, p);
        }
    }
    best
}

/// Up to [`CHECK_SAMPLES`] samples spread evenly over `data` (which is often sorted by
/// class), as the per-epoch check of agreement with the given labels.
fn check_slice(data: &Dataset) -> Dataset {
    let n = data.len();
    let step = n.div_ceil(CHECK_SAMPLES).max(1);
    data.subset(&(0..n).step_by(step).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both stages' runs train in the audit's precision: a mixed-precision audit that
    /// trained in f32 would look the same from its outputs.
    #[test]
    fn both_stages_train_in_the_audits_precision() {
        for precision in Precision::ALL {
            let settings = AuditSettings {
                precision,
                ..AuditSettings::new(Architecture::Cnn)
            };
            let probe = settings.train_config(Method::STANDARD, 1.0, 5).unwrap();
            let selection = settings.train_config(Method::TAKS, 0.7, 20).unwrap();
            assert_eq!(probe.precision, precision);
            assert_eq!(selection.precision, precision);
        }
    }
}
