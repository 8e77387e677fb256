//! `taks tune`: choose TAkS's (k_ratio, eta_ratio) without clean labels, as the paper
//! does: hold out 20% of the NOISY training set, train TAkS on the rest for every point
//! of the grid, and pick the point with the best accuracy on the held-out noisy labels
//! (the mean over the last 10 epochs, the figure the tables report).
//!
//! The grid is the authors': eta_ratio in {1e-4, 5e-4, 1e-3, 5e-3} and k_ratio in
//! 1 - gamma + {-0.15, -0.10, ..., +0.15}, gamma a rough estimate of the flipped
//! fraction (by default the one the noise setting implies: the rate, half of it for
//! asymmetric noise). `tune.csv` gets a row per finished point (flushed), so a second
//! invocation with the same settings continues; `choice.json` holds the pick.
//!
//! On a user's own data (`--data`: a folder as `taks train` reads it, whose `train/` is
//! tuned on, or a CSV table as `taks audit` reads it) the noise is unknown, so gamma must
//! be given: a guess, or the estimate of an audit of the same data.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use indicatif::ProgressBar;
use serde_json::json;
use taks_core::audit::input;
use taks_core::data::{Dataset, DatasetKind, Split};
use taks_core::formats::csv_table;
use taks_core::holdout::noisy_holdout;
use taks_core::metrics::{EpochMetrics, summarize};
use taks_core::nn::Architecture;
use taks_core::noise::{NoiseKind, NoisyLabels, expected_flip_fraction, inject};
use taks_core::settings::TrainConfig;
use taks_core::train::{After, Next, Trainer};

use crate::device::Chosen;
use crate::{device, folder_data, progress};
use taks_core::settings::flags::{DataArgs, RunArgs, TrainingArgs};

#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub training: TrainingArgs,
    /// The rough noise estimate gamma that centres the k-ratio grid: a fraction, or an
    /// audit of the same data (its folder or summary.json), whose estimated noise rate
    /// it takes. Default: the flipped fraction the injected noise implies; a folder of
    /// your own (--data), whose noise is unknown, needs it.
    #[arg(long, value_name = "RATE|AUDIT")]
    pub gamma: Option<String>,
    /// k-ratios to try instead of 1 - gamma + {-0.15, ..., +0.15} (comma-separated).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub k_ratios: Vec<f64>,
    /// eta-ratios to try instead of 1e-4, 5e-4, 1e-3, 5e-3 (comma-separated).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub eta_ratios: Vec<f64>,
    /// The column of a CSV --data holding the labels. Default: label.
    #[arg(long)]
    pub label_column: Option<String>,
    /// Folder for tune.csv, choice.json and config.json.
    #[arg(long)]
    pub out: PathBuf,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
}

const HEADER: &str =
    "k_ratio,eta_ratio,validation_accuracy,best_validation_accuracy,label_precision,label_recall";

fn parse_row(line: &str) -> Option<[f64; 6]> {
    let values: Vec<f64> = line
        .split(',')
        .map(|c| c.parse().ok())
        .collect::<Option<_>>()?;
    values.try_into().ok()
}

/// The k-ratio grid around 1 - gamma, inside (0, 1].
fn k_grid(gamma: f64) -> Vec<f64> {
    (-3..=3)
        .map(|i| ((1.0 - gamma + 0.05 * i as f64) * 1000.0).round() / 1000.0)
        .filter(|&k| k > 0.0 && k <= 1.0)
        .collect()
}

/// Whether `--data` names a CSV table rather than a folder.
fn is_table(path: &Path) -> bool {
    path.is_file()
        && path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// The training set tuned on (its first `--train-limit` samples): a built-in set's, a
/// folder's `train/` (its network and input chosen from it, as `taks train --data`
/// chooses them, into `config`), or every row of a CSV table (the MLP on its feature
/// columns, standardised as `taks audit` standardises them).
fn read_training_set(config: &mut TrainConfig, args: &TuneArgs) -> Result<Dataset> {
    let data_dir = args.data.data_dir();
    let table = data_dir.as_deref().filter(|p| is_table(p));
    if args.label_column.is_some() && table.is_none() {
        bail!("--label-column names a column of a CSV table (--data FILE.csv)");
    }
    let (train, note) = match table {
        Some(path) => {
            let label_column = args.label_column.as_deref().unwrap_or("label");
            let table = csv_table::read(path, label_column)?;
            let prepared = input::prepare_table(&table);
            config.architecture = Architecture::Mlp;
            config.folder_input = Some(prepared.input.shape());
            config.validate()?;
            let note = format!(
                "{}: {} rows of {} features, {} classes; mlp",
                path.display(),
                prepared.dataset.len(),
                table.features.len(),
                table.classes.len()
            );
            (prepared.dataset, Some(note))
        }
        None => {
            folder_data::choose(config, data_dir.as_deref())?;
            let data = folder_data::load(config, data_dir.as_deref())?;
            (data.split.train, data.note)
        }
    };
    if let (Some(note), false) = (note, args.quiet) {
        eprintln!("{note}");
    }
    Ok(train.truncated(config.train_limit.unwrap_or(usize::MAX)))
}

/// The TAkS run every grid point varies (its k and eta ratios replaced).
pub fn base_config(args: &TuneArgs) -> Result<TrainConfig> {
    let run = RunArgs::of(args.data.clone(), args.training.clone());
    Ok(run.config(taks_core::methods::Method::TAKS)?)
}

pub fn run(args: TuneArgs) -> Result<()> {
    let mut base = base_config(&args)?;
    let gamma = gamma_of(&args, &base)?;
    // Before the data is read and the folder made: a precision the device cannot run.
    if !base.precision.is_f32() {
        base.precision
            .check(&device::choose(args.training.device())?.device)?;
    }
    // Read before the folder is made: data that cannot be read leaves nothing behind.
    let train_set = read_training_set(&mut base, &args)?;
    let grid = grid_of(&base, &args, gamma)?;
    let (mut rows, mut csv) = open_out(&args, &base, gamma)?;
    let labels = inject(
        &train_set.labels,
        train_set.classes,
        base.noise,
        base.noise_rate,
        base.dataset,
        base.seed,
    )?;
    let holdout = noisy_holdout(&train_set, &labels, 0.2, base.seed).into_split();
    let say = |line: String| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    let todo: Vec<_> = grid.iter().filter(|c| !done(c, &rows)).collect();
    say(format!(
        "tuning TAkS on {} (noise {} {}): {} of {} grid points to run, {} training / {} noisy validation samples",
        base.dataset.name(),
        base.noise.name(),
        base.noise_rate,
        todo.len(),
        grid.len(),
        holdout.0.train.len(),
        holdout.0.test.len()
    ));
    if !todo.is_empty() {
        let chosen = device::choose(args.training.device())?;
        say(format!("device: {}", chosen.description));
        let bar = progress::bar(todo.len() * base.epochs, args.quiet, progress::EPOCHS);
        for (i, c) in todo.iter().enumerate() {
            if let Some(bar) = &bar {
                bar.set_message(format!(
                    "point {}/{}: k-ratio {} eta-ratio {}",
                    i + 1,
                    todo.len(),
                    c.k_ratio,
                    c.eta_ratio
                ));
            }
            let row = run_point(c, &holdout, &chosen, bar.as_ref(), &mut csv)?;
            let line = format!(
                "k-ratio {} eta-ratio {}: noisy-validation accuracy {:.2}%",
                c.k_ratio,
                c.eta_ratio,
                row[2] * 100.0
            );
            match &bar {
                Some(bar) => bar.println(line),
                None => say(line),
            }
            rows.push(row);
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    }
    report(&args, &grid, &rows, gamma)
}

/// The noise estimate the k-ratios are centred on: `--gamma`, else the built-in set's
/// injected noise; a folder of one's own has no known noise, so it needs `--gamma`.
fn gamma_of(args: &TuneArgs, base: &TrainConfig) -> Result<f64> {
    let gamma = match &args.gamma {
        Some(given) => taks_core::settings::gamma::noise_estimate(given)?,
        None if base.dataset == DatasetKind::Folder && base.noise == NoiseKind::Clean => bail!(
            "the noise of your own folder is unknown: give --gamma, a guess at the mislabelled fraction or an audit of the folder's train/ (taks audit DIR/train, then --gamma AUDIT)"
        ),
        None => expected_flip_fraction(base.dataset, base.noise, base.noise_rate),
    };
    if !(0.0..1.0).contains(&gamma) {
        bail!("--gamma {gamma} must be in [0, 1)");
    }
    Ok(gamma)
}

/// Every grid point's settings: `base` at each k-ratio (`--k-ratios`, else around
/// `gamma`) and each eta-ratio, each checked.
fn grid_of(base: &TrainConfig, args: &TuneArgs, gamma: f64) -> Result<Vec<TrainConfig>> {
    let ks = if args.k_ratios.is_empty() {
        k_grid(gamma)
    } else {
        args.k_ratios.clone()
    };
    let etas = if args.eta_ratios.is_empty() {
        vec![1e-4, 5e-4, 1e-3, 5e-3]
    } else {
        args.eta_ratios.clone()
    };
    let mut grid = Vec::new();
    for &k in &ks {
        for &eta in &etas {
            let mut c = base.clone();
            (c.k_ratio, c.eta_ratio) = (k, eta);
            c.validate()?;
            grid.push(c);
        }
    }
    Ok(grid)
}

/// The output folder: its config.json written, or checked to be this tuning's (a
/// resumed one); the rows tune.csv already holds, and the file opened to append to.
fn open_out(args: &TuneArgs, base: &TrainConfig, gamma: f64) -> Result<(Vec<[f64; 6]>, File)> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let config_path = args.out.join("config.json");
    let identity = json!({ "config": base, "gamma": gamma });
    if config_path.exists() {
        let text = std::fs::read_to_string(&config_path)
            .with_context(|| format!("reading {}", config_path.display()))?;
        let old: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", config_path.display()))?;
        if old != identity {
            bail!(
                "{} holds a tuning run with other settings; use another --out",
                args.out.display()
            );
        }
    } else {
        std::fs::write(&config_path, serde_json::to_string_pretty(&identity)?)?;
    }
    let csv_path = args.out.join("tune.csv");
    let rows: Vec<[f64; 6]> = match std::fs::read_to_string(&csv_path) {
        Ok(text) => text
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                parse_row(l).with_context(|| format!("{}: malformed row '{l}'", csv_path.display()))
            })
            .collect::<Result<_>>()?,
        Err(_) => {
            std::fs::write(&csv_path, format!("{HEADER}\n"))?;
            Vec::new()
        }
    };
    let csv = std::fs::OpenOptions::new()
        .append(true)
        .open(&csv_path)
        .with_context(|| format!("opening {}", csv_path.display()))?;
    Ok((rows, csv))
}

/// Whether grid point `c` has a row among `rows`.
fn done(c: &TrainConfig, rows: &[[f64; 6]]) -> bool {
    rows.iter()
        .any(|r| (r[0] - c.k_ratio).abs() < 1e-9 && (r[1] - c.eta_ratio).abs() < 1e-12)
}

/// One grid point trained on the hold-out split (`holdout`: the training part and the
/// noisy validation part, with the labels), its row appended to `csv` and returned as
/// the file says it, so that a resumed tuning chooses exactly as this one.
fn run_point(
    c: &TrainConfig,
    (holdout, labels): &(Split, NoisyLabels),
    chosen: &Chosen,
    bar: Option<&ProgressBar>,
    csv: &mut File,
) -> Result<[f64; 6]> {
    let mut trainer =
        Trainer::with_labels(c.clone(), holdout.clone(), labels.clone(), &chosen.device)?;
    let mut history = Vec::new();
    let mut ticked = After(|_: &Trainer, _: &[EpochMetrics]| {
        if let Some(bar) = bar {
            bar.inc(1);
        }
        Ok::<_, anyhow::Error>(Next::Go)
    });
    pollster::block_on(trainer.run_to_end(&mut history, &mut ticked))?;
    let s = summarize(&history).context("no epoch finished")?;
    let line = format!(
        "{},{},{:.6},{:.6},{:.6},{:.6}",
        c.k_ratio,
        c.eta_ratio,
        s.test_accuracy,
        s.best_test_accuracy,
        s.label_precision,
        s.label_recall
    );
    writeln!(csv, "{line}")?;
    csv.flush()?;
    Ok(parse_row(&line).expect("a row just formatted parses"))
}

/// The choice (the grid point of best noisy-validation accuracy) into choice.json, and
/// the grid as a table.
fn report(args: &TuneArgs, grid: &[TrainConfig], rows: &[[f64; 6]], gamma: f64) -> Result<()> {
    let in_grid: Vec<&[f64; 6]> = rows
        .iter()
        .filter(|r| grid.iter().any(|c| done(c, &[**r])))
        .collect();
    let best = in_grid
        .iter()
        .max_by(|a, b| a[2].total_cmp(&b[2]))
        .context("no grid point finished")?;
    let choice = json!({
        "k_ratio": best[0],
        "eta_ratio": best[1],
        "validation_accuracy": best[2],
        "gamma": gamma,
        "grid_points": in_grid.len(),
        "validation": "20% of the noisy training set, noisy labels; accuracy = mean of the last 10 epochs",
    });
    std::fs::write(
        args.out.join("choice.json"),
        serde_json::to_string_pretty(&choice)?,
    )?;
    println!("| k-ratio | eta-ratio | noisy-validation acc (last 10) | label precision |");
    println!("|---|---|---|---|");
    for r in &in_grid {
        let mark = if std::ptr::eq(*r, *best) {
            " **chosen**"
        } else {
            ""
        };
        println!(
            "| {} | {} | {:.2}%{mark} | {:.2}% |",
            r[0],
            r[1],
            r[2] * 100.0,
            r[4] * 100.0
        );
    }
    println!(
        "chosen: --k-ratio {} --eta-ratio {} (wrote {}/tune.csv and choice.json)",
        best[0],
        best[1],
        args.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_grid_is_centred_on_one_minus_gamma() {
        assert_eq!(k_grid(0.5), vec![0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65]);
        // Points outside (0, 1] are dropped.
        assert_eq!(k_grid(0.0), vec![0.85, 0.9, 0.95, 1.0]);
    }
}
