//! `taks audit`: find the mislabelled samples of a user's data set and keep a model
//! trained without them.
//!
//! DATA is a folder of class sub-folders of images, a CSV file, or (with `--dataset`) a
//! built-in set, optionally with injected noise so the audit can be scored against the
//! truth. Everything about the input is checked before a device is opened or a folder
//! made; the audit itself is [`taks_core::audit::run`]. The outputs, each written
//! atomically once the audit is done: `suspects.csv`, `summary.json`, `report.html`
//! ([`crate::report`]), `model.safetensors` + `model.json` ([`crate::model_file`]).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;
use serde_json::json;
use taks_core::audit::input::{self, Input, Normalisation, Prepared};
use taks_core::audit::{self, AuditOutcome, AuditSettings, Stage};
use taks_core::data::{Dataset, DatasetKind};
use taks_core::formats::atomic::write_atomically;
use taks_core::formats::csv_table;
use taks_core::formats::image_folder::{self, Skipped};
use taks_core::model::Architecture;
use taks_core::noise::{NoiseKind, NoisyLabels, inject};
use web_time::Instant;

use crate::device::{self, DeviceChoice};
use crate::model_file::{self, ModelCard};
use crate::out_dir;
use crate::report;

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// A folder of class sub-folders holding images (PNG, JPEG, BMP), or a CSV file of
    /// numeric feature columns and a label column.
    #[arg(required_unless_present = "dataset", conflicts_with = "dataset")]
    pub data: Option<PathBuf>,
    /// Audit the training part of a built-in dataset instead.
    #[arg(long, value_enum)]
    pub dataset: Option<DatasetKind>,
    /// Folder of the built-in dataset's files (as for `taks train`).
    #[arg(long, requires = "dataset")]
    pub data_dir: Option<PathBuf>,
    /// Noise to inject into the built-in dataset, so the audit can be scored against the
    /// truth (precision, recall and F1 in summary.json).
    /// Default: clean.
    #[arg(long, value_enum, requires = "dataset")]
    pub noise: Option<NoiseKind>,
    /// Rate of the injected noise. Default: 0.
    #[arg(long, requires = "noise")]
    pub noise_rate: Option<f64>,
    /// Audit only the first N samples of the built-in dataset.
    #[arg(long, value_name = "N", requires = "dataset")]
    pub train_limit: Option<usize>,
    /// The CSV column holding the labels.
    #[arg(long, default_value = "label")]
    pub label_column: String,
    /// Resize every image to this size, WIDTHxHEIGHT. Default: the most common size
    /// (grey up to 32x32: the MLP; colour up to 32x32: the CNN at 32x32; larger:
    /// ResNet-18, at most 224x224).
    #[arg(long, value_name = "WxH", value_parser = parse_size)]
    pub image_size: Option<(u32, u32)>,
    /// The network. Default: chosen from the input as --image-size says; the MLP for CSV.
    #[arg(long, value_enum)]
    pub model: Option<Architecture>,
    /// Output folder. Default: audits/<name of DATA>, numbered when it exists. An
    /// explicit folder that already holds an audit is an error.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Epochs of the TAkS run.
    #[arg(long, default_value_t = 20)]
    pub epochs: usize,
    /// Epochs of the probe run that estimates the noise rate.
    #[arg(long, default_value_t = 5)]
    pub probe_epochs: usize,
    /// Folds of the probe: each fold's samples are predicted by a network trained on
    /// the others (at least 2).
    #[arg(long, default_value_t = 4)]
    pub probe_folds: usize,
    /// Fraction of samples TAkS trains on each epoch. Default: 1 - the estimated noise
    /// rate.
    #[arg(long)]
    pub k_ratio: Option<f64>,
    /// Scale of TAkS's perturbation. Default: 0.005 for the MLP, 0.001 otherwise.
    #[arg(long)]
    pub eta_ratio: Option<f64>,
    /// Seed for the weights, batch order, initial k-set and perturbations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Mini-batch size.
    #[arg(long, default_value_t = 128)]
    pub batch_size: usize,
    /// Adam learning rate.
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    /// How many of the most suspect samples report.html shows.
    #[arg(long, default_value_t = 200)]
    pub report_rows: usize,
    /// Compute device (as for `taks train`).
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// No per-epoch lines.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `WxH`, both at least 1 and at most 4096.
pub fn parse_size(text: &str) -> std::result::Result<(u32, u32), String> {
    let bad = || format!("'{text}' is not WIDTHxHEIGHT (e.g. 224x224, each 1 to 4096)");
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if !(1..=4096).contains(&w) || !(1..=4096).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

/// The audited data, ready for the networks.
pub struct AuditData {
    pub prepared: Prepared,
    pub architecture: Architecture,
    /// Per sample: the image path relative to DATA, or the data row.
    pub ids: Vec<String>,
    pub classes: Vec<String>,
    pub labels: NoisyLabels,
    /// Whether `labels.true_labels` is the truth (injected noise) or a copy of the given.
    pub truth_known: bool,
    pub skipped: Vec<Skipped>,
    pub source: String,
}

pub fn run(args: AuditArgs) -> Result<()> {
    let mut settings_check = Vec::new();
    // clap's `requires` is not checked against an argument that conflicts with a
    // present one (DATA), so these are checked here.
    let builtin_only = [
        ("--data-dir", args.data_dir.is_some()),
        ("--noise", args.noise.is_some()),
        ("--noise-rate", args.noise_rate.is_some()),
        ("--train-limit", args.train_limit.is_some()),
    ];
    if args.dataset.is_none()
        && let Some((flag, _)) = builtin_only.iter().find(|(_, given)| *given)
    {
        settings_check.push(format!("{flag} is for --dataset; DATA is audited as it is"));
    }
    if args.epochs == 0 || args.probe_epochs == 0 {
        settings_check.push("--epochs and --probe-epochs must be at least 1".to_string());
    }
    if args.probe_folds < 2 {
        settings_check.push(format!(
            "--probe-folds {} must be at least 2",
            args.probe_folds
        ));
    }
    if let Some(k) = args.k_ratio
        && !(k > 0.0 && k <= 1.0)
    {
        settings_check.push(format!("--k-ratio {k} must be in (0, 1]"));
    }
    if let Some(e) = args.eta_ratio
        && !(e >= 0.0 && e.is_finite())
    {
        settings_check.push(format!("--eta-ratio {e} must be a finite number >= 0"));
    }
    if args.batch_size == 0 {
        settings_check.push("--batch-size must be at least 1".into());
    }
    if !(args.lr > 0.0 && args.lr.is_finite()) {
        settings_check.push(format!("--lr {} must be positive", args.lr));
    }
    if let Some(rate) = args.noise_rate
        && !(0.0..=1.0).contains(&rate)
    {
        settings_check.push(format!("--noise-rate {rate} must be in [0, 1]"));
    }
    if args.train_limit == Some(0) {
        settings_check.push("--train-limit must be at least 1".into());
    }
    if let Some(first) = settings_check.first() {
        bail!("{first}");
    }
    let started = Instant::now();
    let data = read_data(&args)?;
    let read_seconds = started.elapsed().as_secs_f64();
    let n = data.ids.len();
    let mut present = data.labels.noisy_labels.clone();
    present.sort_unstable();
    present.dedup();
    if n < 4 || present.len() < 2 {
        bail!(
            "{} has {n} usable samples in {} classes; an audit needs at least 4 samples and 2 classes{}",
            data.source,
            present.len(),
            match data.skipped.len() {
                0 => String::new(),
                s => format!(
                    " ({s} files skipped, e.g. {}: {})",
                    data.skipped[0].id, data.skipped[0].reason
                ),
            }
        );
    }
    let mut settings = AuditSettings::new(data.architecture);
    settings.epochs = args.epochs;
    settings.probe_epochs = args.probe_epochs;
    settings.probe_folds = args.probe_folds;
    settings.k_ratio = args.k_ratio;
    settings.eta_ratio = args.eta_ratio.unwrap_or(settings.eta_ratio);
    settings.seed = args.seed;
    settings.batch_size = args.batch_size;
    settings.learning_rate = args.lr;
    if let Some(k) = args.k_ratio
        && (n as f64 * k).floor() < 1.0
    {
        bail!("--k-ratio {k} of {n} samples selects nothing");
    }
    let chosen = device::choose(args.device)?;
    let default = format!("audits/{}", data.source_name());
    let out = out_dir::prepare(args.out.as_deref(), &default, "suspects.csv", "an audit")?;
    let say = |line: String| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    say(format!(
        "auditing {} samples of {} classes from {} ({} skipped) with {} on {}",
        n,
        data.classes.len(),
        data.source,
        data.skipped.len(),
        data.architecture.name(),
        chosen.description
    ));
    let audit_started = Instant::now();
    let outcome = pollster::block_on(audit::run(
        data.prepared.dataset.clone(),
        data.labels.clone(),
        &settings,
        &chosen.device,
        |stage, m| {
            let name = match stage {
                Stage::Probe(fold) => format!("probe {}/{}", fold + 1, args.probe_folds),
                Stage::Selection => "taks     ".to_string(),
            };
            say(format!(
                "{name} epoch {:>3}: loss {:.4}  agreement with given labels {:.2}%  {} samples  {:.2}s",
                m.epoch,
                m.train_loss,
                m.test_accuracy * 100.0,
                m.selected,
                m.epoch_seconds
            ));
        },
    ))?;
    let audit_seconds = audit_started.elapsed().as_secs_f64();
    let written = write_outputs(
        &out,
        &data,
        &outcome,
        &settings,
        &args,
        &chosen.description,
        read_seconds,
        audit_seconds,
    )?;
    println!("{written}");
    Ok(())
}

impl AuditData {
    /// A short name for the default output folder.
    fn source_name(&self) -> String {
        Path::new(&self.source)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "data".into())
    }
}

/// Read DATA (or the built-in set) into [`AuditData`].
pub fn read_data(args: &AuditArgs) -> Result<AuditData> {
    if let Some(kind) = args.dataset {
        return read_builtin(kind, args);
    }
    let path = args
        .data
        .as_ref()
        .expect("clap requires DATA without --dataset");
    if path.is_dir() {
        read_images(path, args)
    } else if path.is_file() {
        if args.model.is_some_and(|m| m != Architecture::Mlp) {
            bail!(
                "a CSV table is audited with the MLP; --model {} takes images",
                args.model.unwrap().name()
            );
        }
        if args.image_size.is_some() {
            bail!(
                "--image-size is for image folders, and {} is a file",
                path.display()
            );
        }
        let table = csv_table::read(path, &args.label_column)?;
        let prepared = input::prepare_table(&table);
        let n = table.rows();
        Ok(AuditData {
            prepared,
            architecture: Architecture::Mlp,
            ids: (0..n).map(|i| i.to_string()).collect(),
            classes: table.classes.clone(),
            labels: NoisyLabels {
                true_labels: table.labels.clone(),
                noisy_labels: table.labels,
            },
            truth_known: false,
            skipped: Vec::new(),
            source: path.display().to_string(),
        })
    } else {
        bail!("{}: no such file or folder", path.display());
    }
}

fn read_images(dir: &Path, args: &AuditArgs) -> Result<AuditData> {
    let scan = image_folder::scan(dir)?;
    let Some(common) = scan.most_common_size() else {
        bail!(
            "{}: no readable images in its {} class folders{}",
            dir.display(),
            scan.classes.len(),
            match scan.skipped.first() {
                Some(s) => format!(
                    " ({} skipped, e.g. {}: {})",
                    scan.skipped.len(),
                    s.id,
                    s.reason
                ),
                None => String::new(),
            }
        );
    };
    let (architecture, input) =
        input::choose_for_images(common, scan.any_colour(), args.model, args.image_size)?;
    let Input::Image {
        channels,
        height,
        width,
    } = input
    else {
        unreachable!("images get an image input")
    };
    let decoded = image_folder::decode(&scan.files, channels, width as u32, height as u32);
    let mut skipped = scan.skipped.clone();
    skipped.extend(decoded.skipped.iter().cloned());
    let classes = scan.classes.len();
    let prepared = input::prepare_images(&decoded, channels, height, width, classes);
    let labels: Vec<u32> = decoded.files.iter().map(|f| f.label).collect();
    Ok(AuditData {
        prepared,
        architecture,
        ids: decoded.files.iter().map(|f| f.id.clone()).collect(),
        classes: scan.classes,
        labels: NoisyLabels {
            true_labels: labels.clone(),
            noisy_labels: labels,
        },
        truth_known: false,
        skipped,
        source: dir.display().to_string(),
    })
}

fn read_builtin(kind: DatasetKind, args: &AuditArgs) -> Result<AuditData> {
    if args.image_size.is_some() {
        bail!(
            "--image-size is for image folders, not --dataset {}",
            kind.name()
        );
    }
    let split = kind.load(args.data_dir.as_deref())?;
    let train: Dataset = split
        .train
        .truncated(args.train_limit.unwrap_or(usize::MAX));
    let noise = args.noise.unwrap_or(NoiseKind::Clean);
    let rate = args.noise_rate.unwrap_or(0.0);
    let labels = inject(&train.labels, train.classes, noise, rate, kind, args.seed)?;
    let architecture = args.model.unwrap_or(match kind.is_grey_28() {
        true => Architecture::Mlp,
        false => Architecture::Cnn,
    });
    let [channels, height, width] = train.shape;
    let (mean, std) = kind.channel_normalisation();
    let n = train.len();
    let classes = (0..train.classes).map(|c| c.to_string()).collect();
    Ok(AuditData {
        prepared: Prepared {
            dataset: Dataset {
                labels: labels.noisy_labels.clone(),
                ..train
            },
            input: Input::Image {
                channels,
                height,
                width,
            },
            normalisation: Normalisation { mean, std },
        },
        architecture,
        ids: (0..n).map(|i| i.to_string()).collect(),
        classes,
        truth_known: noise != NoiseKind::Clean,
        labels,
        skipped: Vec::new(),
        source: kind.name().to_string(),
    })
}

/// The samples, most suspect first: ascending label quality, ties in data order.
pub fn suspect_order(outcome: &AuditOutcome) -> Vec<usize> {
    let mut order: Vec<usize> = (0..outcome.samples.len()).collect();
    order.sort_by(|&a, &b| {
        outcome.samples[a]
            .label_quality
            .total_cmp(&outcome.samples[b].label_quality)
            .then(a.cmp(&b))
    });
    order
}

/// A CSV field: quoted when it holds a comma, quote or line break.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[allow(clippy::too_many_arguments)]
fn write_outputs(
    out: &Path,
    data: &AuditData,
    outcome: &AuditOutcome,
    settings: &AuditSettings,
    args: &AuditArgs,
    device: &str,
    read_seconds: f64,
    audit_seconds: f64,
) -> Result<String> {
    let order = suspect_order(outcome);
    let mut csv = String::from(
        "id,given_label,suggested_label,suggested_confidence,label_quality,is_label_issue,cumulative_noise_risk,selected_fraction\n",
    );
    for &i in &order {
        let s = &outcome.samples[i];
        csv += &format!(
            "{},{},{},{:.4},{:.4},{},{:.4},{:.3}\n",
            csv_field(&data.ids[i]),
            csv_field(&data.classes[s.given_label as usize]),
            csv_field(&data.classes[s.suggested_label as usize]),
            s.suggested_confidence,
            s.label_quality,
            s.is_label_issue,
            s.cumulative_risk,
            s.selected_fraction
        );
    }
    write_atomically(&out.join("suspects.csv"), csv.as_bytes())?;

    let classes = data.classes.len();
    let mut given = vec![0usize; classes];
    let mut issues = vec![0usize; classes];
    for s in &outcome.samples {
        given[s.given_label as usize] += 1;
        issues[s.given_label as usize] += s.is_label_issue as usize;
    }
    let flagged = issues.iter().sum::<usize>();
    let per_class: Vec<_> = (0..classes)
        .map(|c| {
            json!({
                "class": data.classes[c],
                "samples": given[c],
                "label_issues": issues[c],
                "estimated_noise": finite(outcome.estimate.per_class[c]),
            })
        })
        .collect();
    let truth = data.truth_known.then(|| {
        let noisy: Vec<bool> = (0..data.ids.len())
            .map(|i| !data.labels.is_clean(i))
            .collect();
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
        json!({
            "noise_rate": actual as f64 / noisy.len() as f64,
            "mislabelled": actual,
            "precision": precision,
            "recall": recall,
            "f1": f1,
        })
    });
    let summary = json!({
        "data": data.source,
        "n": data.ids.len(),
        "classes": data.classes,
        "architecture": settings.architecture.name(),
        "input": data.prepared.input,
        "estimated_noise_rate": outcome.estimate.rate,
        "estimate_method": "calibrated confident joint of the probe folds' out-of-sample probabilities (see README)",
        "k": outcome.k,
        "k_ratio": outcome.k_ratio,
        "label_issues": flagged,
        "per_class": per_class,
        "skipped": data.skipped,
        "truth": truth,
        "settings": settings,
        "device": device,
        "seconds": {
            "read": read_seconds,
            "audit": audit_seconds,
            "probe_epochs": outcome.probe_history.iter().map(|m| m.epoch_seconds).sum::<f64>(),
            "taks_epochs": outcome.history.iter().map(|m| m.epoch_seconds).sum::<f64>(),
        },
    });
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
        data.ids.len(),
        classes,
        outcome.estimate.rate * 100.0,
        flagged,
        outcome.k,
        outcome.k_ratio * 100.0
    );
    if let Some(t) = &summary["truth"].as_object() {
        lines += &format!(
            "\nagainst the truth: noise rate {:.1}%, precision {:.3}, recall {:.3}, F1 {:.3}",
            t["noise_rate"].as_f64().unwrap_or(f64::NAN) * 100.0,
            t["precision"].as_f64().unwrap_or(f64::NAN),
            t["recall"].as_f64().unwrap_or(f64::NAN),
            t["f1"].as_f64().unwrap_or(f64::NAN)
        );
    }
    if !data.skipped.is_empty() {
        lines += &format!(
            "\n{} files skipped (listed in summary.json)",
            data.skipped.len()
        );
    }
    lines += &format!(
        "\nwrote {}/{{suspects.csv,summary.json,report.html,model.safetensors,model.json}}",
        out.display()
    );
    Ok(lines)
}

/// JSON has no NaN: a class nobody is labelled with has no estimate.
fn finite(x: f64) -> serde_json::Value {
    if x.is_finite() {
        json!(x)
    } else {
        serde_json::Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_silly_ones_do_not() {
        assert_eq!(parse_size("224x224"), Ok((224, 224)));
        assert_eq!(parse_size("32X16"), Ok((32, 16)));
        for bad in ["224", "0x5", "5x0", "axb", "99999x2", "-3x4", ""] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("cat/a.png"), "cat/a.png");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
