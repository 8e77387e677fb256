//! The audit's files: `suspects.csv` (every sample, most suspect first), `summary.json`,
//! `report.html`, and the kept model; each written atomically, after the audit.

use std::path::Path;

use anyhow::Result;
use taks_core::audit::suspects::{suspect_order, suspects_csv};
use taks_core::audit::{AuditOutcome, AuditSettings};
use taks_core::formats::atomic::write_atomically;

use super::summary::{AuditSummary, Seconds};
use super::{AuditArgs, report};
use crate::model_file::{self, ModelCard};
use taks_core::audit::source::AuditData;

pub fn write(
    out: &Path,
    data: &AuditData,
    outcome: &AuditOutcome,
    settings: &AuditSettings,
    args: &AuditArgs,
    device: &str,
    (read_seconds, audit_seconds): (f64, f64),
) -> Result<String> {
    let order = suspect_order(&outcome.samples);
    let csv = suspects_csv(&data.ids, &data.classes, &outcome.samples, None);
    write_atomically(&out.join("suspects.csv"), csv.as_bytes())?;

    let seconds = Seconds {
        read: read_seconds,
        audit: audit_seconds,
        probe_epochs: outcome.probe_history.iter().map(|m| m.epoch_seconds).sum(),
        taks_epochs: outcome.history.iter().map(|m| m.epoch_seconds).sum(),
    };
    let summary = AuditSummary::new(data, outcome, settings, device, seconds);
    write_atomically(
        &out.join("summary.json"),
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )?;

    let card = ModelCard::new(
        settings.architecture,
        data.classes.clone(),
        data.prepared.input.clone(),
        data.prepared.normalisation.clone(),
    );
    model_file::save(out, &outcome.network, &card)?;
    let html = report::render(data, outcome, &order, &summary, args.report_rows);
    write_atomically(&out.join("report.html"), html.as_bytes())?;

    let mut lines = format!(
        "{} samples, {} classes: estimated noise rate {:.1}%, {} label issues (k = {}, {:.0}% of the data trained on per epoch)",
        summary.n,
        summary.classes.len(),
        summary.estimated_noise_rate * 100.0,
        summary.label_issues,
        summary.k,
        summary.k_ratio * 100.0
    );
    if let Some(t) = &summary.truth {
        lines += &format!(
            "\nagainst the truth: noise rate {:.1}%, precision {:.3}, recall {:.3}, F1 {:.3}",
            t.noise_rate * 100.0,
            t.precision,
            t.recall,
            t.f1
        );
    }
    if !data.skipped.is_empty() {
        lines += &format!(
            "\n{} (listed in summary.json)",
            crate::folder_data::skipped_line(&data.skipped)
        );
    }
    lines += &format!(
        "\nwrote {}/{{suspects.csv,summary.json,report.html,model.safetensors,model.json}}",
        out.display()
    );
    Ok(lines)
}
