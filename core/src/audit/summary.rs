//! An audit's summary, as one typed value: what it found, per class, against the truth
//! where it is known, with its settings and timings. `taks audit` writes it as
//! `summary.json` and renders its report from the same value, so the page and the file
//! never disagree; Python returns it with the result.

use serde::Serialize;

use super::input::Input;
use super::network::Choice;
use super::source::{AuditData, Backbone};
use super::{AuditOutcome, AuditSettings};
use crate::formats::image_folder::Skipped;

#[derive(Debug, Serialize)]
pub struct AuditSummary {
    pub data: String,
    pub n: usize,
    pub classes: Vec<String>,
    pub architecture: &'static str,
    pub input: Input,
    /// How the budget chose the network (image folders without --model), with every
    /// candidate's measured price.
    pub network_choice: Option<Choice>,
    /// Why colour images were audited in grey, when they were.
    pub colour_note: Option<String>,
    /// The pretrained backbone whose features were audited (`--init`), and why it was
    /// not fine-tuned.
    pub backbone: Option<Backbone>,
    pub estimated_noise_rate: f64,
    pub estimate_method: &'static str,
    pub k: usize,
    pub k_ratio: f64,
    pub label_issues: usize,
    pub per_class: Vec<ClassSummary>,
    pub skipped: Vec<Skipped>,
    /// Only when the labels' truth is known (a built-in set with injected noise).
    pub truth: Option<Truth>,
    pub settings: AuditSettings,
    pub device: String,
    pub seconds: Seconds,
}

#[derive(Debug, Serialize)]
pub struct ClassSummary {
    pub class: String,
    pub samples: usize,
    pub label_issues: usize,
    /// `None` (JSON null) for a class nobody is labelled with.
    pub estimated_noise: Option<f64>,
}

/// The audit scored against the true labels.
#[derive(Debug, Serialize)]
pub struct Truth {
    pub noise_rate: f64,
    pub mislabelled: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

/// Where an audit's time went, in seconds: reading (and preparing) the data, the audit,
/// and of the audit the probes' and the TAkS run's epochs.
#[derive(Debug, Serialize)]
pub struct Seconds {
    pub read: f64,
    pub audit: f64,
    pub probe_epochs: f64,
    pub taks_epochs: f64,
}

impl AuditSummary {
    pub fn new(
        data: &AuditData,
        outcome: &AuditOutcome,
        settings: &AuditSettings,
        device: &str,
        seconds: Seconds,
    ) -> Self {
        let classes = data.classes.len();
        let mut given = vec![0usize; classes];
        let mut issues = vec![0usize; classes];
        for s in &outcome.samples {
            given[s.given_label as usize] += 1;
            issues[s.given_label as usize] += s.is_label_issue as usize;
        }
        let flagged = issues.iter().sum::<usize>();
        let per_class = (0..classes)
            .map(|c| ClassSummary {
                class: data.classes[c].clone(),
                samples: given[c],
                label_issues: issues[c],
                estimated_noise: Some(outcome.estimate.per_class[c]).filter(|v| v.is_finite()),
            })
            .collect();
        AuditSummary {
            data: data.source.clone(),
            n: data.ids.len(),
            classes: data.classes.clone(),
            architecture: settings.architecture.name(),
            input: data.prepared.input.clone(),
            network_choice: data.network_choice.clone(),
            colour_note: data.colour_note.clone(),
            backbone: data.backbone.clone(),
            estimated_noise_rate: outcome.estimate.rate,
            estimate_method: "calibrated confident joint of the probe folds' out-of-sample probabilities (see docs/audit.md)",
            k: outcome.k,
            k_ratio: outcome.k_ratio,
            label_issues: flagged,
            per_class,
            skipped: data.skipped.clone(),
            truth: data.truth_known.then(|| Truth::score(data, outcome)),
            settings: settings.clone(),
            device: device.to_string(),
            seconds,
        }
    }
}

impl Truth {
    fn score(data: &AuditData, outcome: &AuditOutcome) -> Self {
        let noisy: Vec<bool> = (0..data.ids.len())
            .map(|i| !data.labels.is_clean(i))
            .collect();
        let flagged = outcome.samples.iter().filter(|s| s.is_label_issue).count();
        let tp = outcome
            .samples
            .iter()
            .zip(&noisy)
            .filter(|(s, n)| s.is_label_issue && **n)
            .count();
        let actual = noisy.iter().filter(|&&n| n).count();
        let precision = tp as f64 / flagged.max(1) as f64;
        let recall = tp as f64 / actual.max(1) as f64;
        let f1 = if precision + recall > 0.0 {
            2.0 * precision * recall / (precision + recall)
        } else {
            0.0
        };
        Truth {
            noise_rate: actual as f64 / noisy.len() as f64,
            mislabelled: actual,
            precision,
            recall,
            f1,
        }
    }
}
