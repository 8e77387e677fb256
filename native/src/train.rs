//! `taks train`: one run, written to a run folder as it happens.
//!
//! metrics.csv gets a row (flushed) after every epoch, so an interrupted or failed run
//! keeps everything it measured; config.json is written before the first epoch and
//! summary.json and plot.svg after the last.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use taks_core::config::TrainConfig;
use taks_core::metrics::{EpochMetrics, summarize};
use taks_core::train::Trainer;

use crate::cli::TrainArgs;
use crate::{config, device, plot, table};

pub fn run(args: TrainArgs) -> Result<()> {
    let config = config::build(&args.run, &args.method, 200)?;
    let split = config.dataset.load(args.run.data_dir.as_deref())?;
    let chosen = device::choose(args.run.device)?;
    let out = prepare_out_dir(args.out.as_deref(), &config)?;
    let say = |line: String| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    say(format!("device: {}", chosen.description));

    let mut trainer = Trainer::new(config.clone(), split, &chosen.device)?;
    let n = trainer.train_len();
    say(format!(
        "{}: n = {n}, {} noise {:.0}% (actual {:.1}% flipped), method {}, k = {}, eta = {:.3}, {} epochs -> {}",
        config.dataset.name(),
        config.noise.name(),
        config.noise_rate * 100.0,
        trainer.labels().actual_rate() * 100.0,
        config.method.name(),
        trainer.k(),
        config.eta(n),
        config.epochs,
        out.display()
    ));
    write_config(&out, &config, &trainer, &chosen.description)?;

    let mut metrics_file = create(&out.join("metrics.csv"))?;
    writeln!(metrics_file, "{}", EpochMetrics::CSV_HEADER)?;
    let mut selections = if args.save_selections {
        let mut f = create(&out.join("selected.csv"))?;
        writeln!(f, "epoch,indices")?;
        Some(f)
    } else {
        None
    };

    let bar = progress_bar(config.epochs, args.quiet);
    let mut history = Vec::new();
    while !trainer.is_done() {
        let epoch = trainer.epoch() + 1;
        if let Some(f) = selections.as_mut() {
            let chosen = pollster::block_on(trainer.selector().current_indices_host())?;
            let list: Vec<String> = chosen.iter().map(u32::to_string).collect();
            writeln!(f, "{epoch},{}", list.join(" "))?;
            f.flush()?;
        }
        let m = pollster::block_on(trainer.step()).with_context(|| {
            format!(
                "epoch {epoch} failed; the {} finished epochs are in {}",
                epoch - 1,
                out.display()
            )
        })?;
        writeln!(metrics_file, "{}", m.csv_row())?;
        metrics_file.flush()?;
        let line = format!(
            "epoch {:>3}: loss {:.4}  test acc {:.2}%  label precision {:.2}%  recall {:.2}%  regret {:.1} (bound {:.0})  {:.2}s",
            m.epoch,
            m.train_loss,
            m.test_accuracy * 100.0,
            m.label_precision * 100.0,
            m.label_recall * 100.0,
            m.regret,
            m.regret_bound,
            m.epoch_seconds
        );
        match &bar {
            Some(bar) => {
                bar.set_message(format!(
                    "acc {:.2}% prec {:.2}%",
                    m.test_accuracy * 100.0,
                    m.label_precision * 100.0
                ));
                bar.inc(1);
            }
            None => say(line),
        }
        history.push(m);
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }

    let summary = summarize(&history).context("no epoch finished")?;
    std::fs::write(
        out.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )
    .with_context(|| format!("writing {}", out.join("summary.json").display()))?;
    std::fs::write(out.join("plot.svg"), plot::svg(&history, &config))
        .with_context(|| format!("writing {}", out.join("plot.svg").display()))?;
    println!(
        "{}",
        table::render(&[table::Row::new(out.display().to_string(), config, summary)])
    );
    println!(
        "wrote {}/{{metrics.csv,config.json,summary.json,plot.svg}}",
        out.display()
    );
    Ok(())
}

fn create(path: &Path) -> Result<File> {
    File::create(path).with_context(|| format!("creating {}", path.display()))
}

/// The run folder: the explicit one (which must not already hold a run) or a fresh,
/// numbered default under runs/.
fn prepare_out_dir(explicit: Option<&Path>, config: &TrainConfig) -> Result<PathBuf> {
    let dir = match explicit {
        Some(dir) => {
            if dir.join("metrics.csv").exists() {
                bail!(
                    "{} already holds a run (metrics.csv); choose another --out",
                    dir.display()
                );
            }
            dir.to_path_buf()
        }
        None => {
            let base = format!(
                "runs/{}-{}{:.0}-{}-seed{}",
                config.dataset.name(),
                config.noise.name(),
                config.noise_rate * 100.0,
                config.method.name(),
                config.seed
            );
            let mut dir = PathBuf::from(&base);
            let mut i = 2;
            while dir.exists() {
                dir = PathBuf::from(format!("{base}-{i}"));
                i += 1;
            }
            dir
        }
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating run folder {}", dir.display()))?;
    Ok(dir)
}

fn write_config(out: &Path, config: &TrainConfig, trainer: &Trainer, device: &str) -> Result<()> {
    let n = trainer.train_len();
    let doc = json!({
        "config": config,
        "train_samples": n,
        "k": trainer.k(),
        "eta": config.eta(n),
        "actual_noise_rate": trainer.labels().actual_rate(),
        "device": device,
        "selection_engine": trainer.selector().engine(),
        "taks_version": env!("CARGO_PKG_VERSION"),
    });
    let path = out.join("config.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("writing {}", path.display()))
}

fn progress_bar(epochs: usize, quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(epochs as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} epoch {pos}/{len}  {msg}  [{elapsed} < {eta}]")
            .expect("valid template"),
    );
    Some(bar)
}
