//! The paper-style summary table (means of the last ten epochs), for one run or for
//! several run folders side by side, with the time ratio against a `standard` run of
//! the same dataset and noise when one is among them; and a run folder read back into
//! its row. Shared by `taks train` (its closing table), `taks experiment` (its tables)
//! and `taks table` ([`crate::table`]).

use std::path::Path;

use anyhow::{Context, Result, bail};
use taks_core::methods::Method;
use taks_core::metrics::{EpochMetrics, Summary, summarize};
use taks_core::settings::TrainConfig;

pub struct Row {
    pub name: String,
    pub config: TrainConfig,
    pub summary: Summary,
}

impl Row {
    pub fn new(name: String, config: TrainConfig, summary: Summary) -> Self {
        Self {
            name,
            config,
            summary,
        }
    }
}

pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "| run | method | noise | test acc (last 10) | best acc | label precision | label recall | epoch s | x T |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let standard = rows.iter().find(|r| {
            r.config.method == Method::STANDARD
                && r.config.dataset == row.config.dataset
                && r.config.noise == row.config.noise
                && r.config.noise_rate == row.config.noise_rate
        });
        let ratio = standard
            .map(|s| format!("{:.2}", row.summary.epoch_seconds / s.summary.epoch_seconds))
            .unwrap_or_else(|| "-".into());
        let s = &row.summary;
        out += &format!(
            "| {} | {} | {}-{:.0}% | {:.2}% | {:.2}% | {} | {} | {:.3} | {} |\n",
            row.name,
            row.config.method.name(),
            row.config.noise.name(),
            row.config.noise_rate * 100.0,
            s.test_accuracy * 100.0,
            s.best_test_accuracy * 100.0,
            percent(s.label_precision),
            percent(s.label_recall),
            s.epoch_seconds,
            ratio
        );
    }
    out
}

/// A share as a percentage, or n/a where it is undefined (NaN: a folder's labels, whose
/// truth is unknown, or an epoch that trained on nothing).
pub fn percent(share: f64) -> String {
    if share.is_finite() {
        format!("{:.2}%", share * 100.0)
    } else {
        "n/a".into()
    }
}

/// The row of the run folder `dir`: its config.json and metrics.csv.
pub fn read_run(dir: &Path) -> Result<Row> {
    let config_path = dir.join("config.json");
    let text = std::fs::read_to_string(&config_path)
        .with_context(|| format!("reading {}", config_path.display()))?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", config_path.display()))?;
    let config: TrainConfig = serde_json::from_value(doc["config"].clone())
        .with_context(|| format!("{} has no valid \"config\"", config_path.display()))?;
    let history = read_metrics(dir)?;
    let summary = summarize(&history).with_context(|| {
        format!(
            "{} has no finished epoch",
            dir.join("metrics.csv").display()
        )
    })?;
    Ok(Row::new(dir.display().to_string(), config, summary))
}

/// Parse metrics.csv back into rows, by column name.
pub fn read_metrics(dir: &Path) -> Result<Vec<EpochMetrics>> {
    let path = dir.join("metrics.csv");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let needed = [
        "epoch",
        "train_loss",
        "test_accuracy",
        "label_precision",
        "label_recall",
        "epoch_seconds",
    ];
    if let Some(missing) = needed.iter().find(|n| col(n).is_none()) {
        bail!("{} has no column {missing}", path.display());
    }
    lines
        .enumerate()
        .map(|(i, line)| {
            let cells: Vec<&str> = line.split(',').collect();
            // An absent or empty cell is a value the method does not have (regret
            // without a selector).
            let optional = |name: &str| -> Result<Option<f64>> {
                match col(name).and_then(|c| cells.get(c)).copied().unwrap_or("") {
                    "" => Ok(None),
                    cell => cell.parse().map(Some).with_context(|| {
                        format!("{} line {}: bad {name} '{cell}'", path.display(), i + 2)
                    }),
                }
            };
            let get = |name: &str| -> Result<f64> {
                optional(name)?
                    .with_context(|| format!("{} line {}: no {name}", path.display(), i + 2))
            };
            let mut network_accuracies: Vec<f64> = (1..)
                .map_while(|i| col(&format!("test_accuracy_net{i}")))
                .map(|c| {
                    cells
                        .get(c)
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(f64::NAN)
                })
                .collect();
            if network_accuracies.is_empty() {
                network_accuracies.push(get("test_accuracy")?);
            }
            Ok(EpochMetrics {
                epoch: get("epoch")? as usize,
                train_loss: get("train_loss")?,
                test_accuracy: get("test_accuracy")?,
                network_accuracies,
                val_accuracy: optional("val_accuracy")?,
                label_precision: get("label_precision")?,
                label_recall: get("label_recall")?,
                selection_risk: optional("selection_risk")?,
                total_selection_risk: optional("total_selection_risk")?,
                regret: optional("regret")?,
                regret_bound: optional("regret_bound")?,
                paper_bound: optional("paper_bound")?,
                epoch_seconds: get("epoch_seconds")?,
                selected: optional("selected")?.unwrap_or(0.0) as usize,
                learning_rate: optional("learning_rate")?.unwrap_or(f64::NAN),
            })
        })
        .collect()
}
