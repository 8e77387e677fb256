//! One audit as a front end asks for it, from the data it names to its result: the
//! command line (`taks audit`) and Python make the same calls, so they refuse the same
//! choices, read the same samples and get the same result.
//!
//! Two steps, because a front end has its own work between them: [`AuditRequest::read`]
//! checks the choices and reads the data as far as it can without a device, so that
//! data which cannot be audited is refused before a device is opened or an output folder
//! made; the front end then opens both; [`ReadAudit::run`] finishes the data (an image
//! folder's network may be timed on the device) and runs the audit ([`super::run`]).

use burn::tensor::Device;
use web_time::Instant;

use super::source::{AuditData, Backbone, Source, SourceSpec, read_source};
use super::summary::{AuditSummary, Seconds};
use super::{AuditChoices, AuditOutcome, AuditSettings, Stage, enough};
use crate::Result;
use crate::error::refuse;
use crate::metrics::EpochMetrics;
use crate::nn::Architecture;
use crate::train::Next;

/// What a front end asks: the data and the choices over the audit's defaults.
pub struct AuditRequest {
    pub source: SourceSpec,
    pub choices: AuditChoices,
}

/// An audit whose choices are checked and whose data is read as far as it goes
/// without a device.
pub struct ReadAudit {
    source: Source,
    /// The choices, which a front end may still change (its device's precision).
    pub choices: AuditChoices,
    /// How the front end spells a setting, for a refusal found later.
    name: Spelling,
    started: Instant,
}

/// How a front end spells a setting in a refusal: `--k-ratio` on the command line,
/// `k_ratio` in Python.
pub type Spelling = fn(&'static str) -> String;

/// An audit done: the data as audited, the settings it ran with and what it found.
pub struct Audited {
    pub data: AuditData,
    pub settings: AuditSettings,
    pub outcome: AuditOutcome,
    /// Seconds reading the data (from [`AuditRequest::read`]) and auditing it.
    pub seconds: (f64, f64),
}

impl AuditRequest {
    /// Check the choices and the data's own values (`name` spells a setting as the
    /// front end does: `--k-ratio` on the command line, `k_ratio` in Python), then read
    /// the data.
    pub fn read(self, name: Spelling) -> Result<ReadAudit> {
        let started = Instant::now();
        self.choices.check(name)?;
        let budget = self.source.budget;
        if !(budget > 0.0 && budget.is_finite()) {
            return refuse(format!(
                "{} {budget} must be a positive number of seconds",
                name("budget")
            ));
        }
        let source = read_source(&self.source)?;
        let (label, labels, skipped) = match &source {
            Source::Ready(data) => (
                data.source.as_str(),
                data.labels.noisy_labels.clone(),
                &data.skipped[..],
            ),
            Source::Images(images) => (images.source(), images.labels(), images.skipped()),
        };
        enough(label, &labels, skipped)?;
        self.choices.check_k(labels.len(), name)?;
        Ok(ReadAudit {
            source,
            choices: self.choices,
            name,
            started,
        })
    }
}

impl ReadAudit {
    /// Data already in memory (Python's feature matrix: [`super::source::from_features`]),
    /// checked as [`AuditRequest::read`] checks what it reads.
    pub fn of_data(data: AuditData, choices: AuditChoices, name: Spelling) -> Result<Self> {
        let started = Instant::now();
        choices.check(name)?;
        enough(&data.source, &data.labels.noisy_labels, &data.skipped)?;
        choices.check_k(data.ids.len(), name)?;
        Ok(ReadAudit {
            source: Source::Ready(Box::new(data)),
            choices,
            name,
            started,
        })
    }

    /// A short name for a default output folder: the data's file or folder name.
    pub fn name(&self) -> String {
        self.source.name()
    }

    /// Finish the data on `device` (called `device_name` in the line `say` is told
    /// before the audit starts), then audit it, `report`ing every epoch as it ends
    /// ([`super::run`]: [`Next::Stop`] stops it). `backbone` names the pretrained
    /// network whose features these are, where they are an embedding.
    pub async fn run(
        self,
        device: &Device,
        device_name: &str,
        backbone: Option<Backbone>,
        say: impl Fn(String),
        report: impl FnMut(Stage, &EpochMetrics) -> Next,
    ) -> Result<Audited> {
        let mut data = match self.source {
            Source::Ready(data) => *data,
            Source::Images(images) => {
                let timing = self
                    .choices
                    .settings(Architecture::Mlp, images.labels().len());
                let data = images.finish(&timing, device, &say).await?;
                // Decoding may have skipped more files than the headers showed.
                enough(&data.source, &data.labels.noisy_labels, &data.skipped)?;
                self.choices.check_k(data.ids.len(), self.name)?;
                data
            }
        };
        data.backbone = backbone;
        let read_seconds = self.started.elapsed().as_secs_f64();
        let n = data.ids.len();
        let settings = self.choices.settings(data.architecture, n);
        say(format!(
            "auditing {} samples of {} classes from {} ({} skipped) with {} on {}",
            n,
            data.classes.len(),
            data.source,
            data.skipped.len(),
            data.architecture.name(),
            device_name
        ));
        let audit_started = Instant::now();
        // The audit and the report share one store of the samples (a clone is a handle).
        let dataset = data.prepared.dataset.clone();
        let outcome = super::run(dataset, data.labels.clone(), &settings, device, report).await?;
        Ok(Audited {
            data,
            settings,
            outcome,
            seconds: (read_seconds, audit_started.elapsed().as_secs_f64()),
        })
    }
}

impl Audited {
    /// What `summary.json` holds, for an audit run on `device`.
    pub fn summary(&self, device: &str) -> AuditSummary {
        let (read, audit) = self.seconds;
        let seconds = Seconds {
            read,
            audit,
            probe_epochs: self
                .outcome
                .probe_history
                .iter()
                .map(|m| m.epoch_seconds)
                .sum(),
            taks_epochs: self.outcome.history.iter().map(|m| m.epoch_seconds).sum(),
        };
        AuditSummary::new(&self.data, &self.outcome, &self.settings, device, seconds)
    }
}
