//! The audit's files: `suspects.csv` (every sample, most suspect first), `summary.json`,
//! `report.html`, and the kept model; each written atomically, after the audit.

use std::path::Path;

use anyhow::Result;
use taks_core::audit::request::Audited;
use taks_core::audit::suspects::{suspect_order, suspects_csv};
use taks_core::formats::atomic::write_atomically;

use super::report;
use crate::model_file::{self, ModelCard};

/// Write the audit's files into `out` (`device` names where it ran; the report shows
/// the `report_rows` most suspect samples) and return the lines that say what it found.
pub fn write(out: &Path, audited: &Audited, device: &str, report_rows: usize) -> Result<String> {
    let Audited {
        data,
        outcome,
        settings,
        ..
    } = audited;
    let order = suspect_order(&outcome.samples);
    let csv = suspects_csv(&data.ids, &data.classes, &outcome.samples, None);
    write_atomically(&out.join("suspects.csv"), csv.as_bytes())?;

    let summary = audited.summary(device);
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
    let html = report::render(data, outcome, &order, &summary, report_rows);
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
