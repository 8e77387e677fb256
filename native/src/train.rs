//! `taks train`: one run, written to a run folder as it happens.
//!
//! metrics.csv gets a row (flushed) after every epoch, so an interrupted or failed run
//! keeps everything it measured; config.json is written before the first epoch (and
//! again after F-correction's first stage, with the transition matrix it estimated),
//! summary.json and plot.svg after the last. `taks experiment` writes each of its runs
//! with the same [`train_into`].

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use taks_core::config::TrainConfig;
use taks_core::data::Split;
use taks_core::metrics::{EpochMetrics, Summary, summarize};
use taks_core::train::Trainer;

use crate::cli::TrainArgs;
use crate::device::Chosen;
use crate::{config, device, plot, table};

pub fn run(args: TrainArgs) -> Result<()> {
    let config = config::build(&args.run, &args.method, 200)?;
    if args.save_selections && !config.method.uses_selector() {
        bail!(
            "--save-selections needs a method with an epoch-level selection (taks, greedy, naive), not {}",
            config.method.name()
        );
    }
    let split = config.dataset.load(args.run.data_dir.as_deref())?;
    let chosen = device::choose(args.run.device)?;
    let out = prepare_out_dir(args.out.as_deref(), &config)?;
    let say = |line: String| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    say(format!("device: {}", chosen.description));
    let bar = progress_bar(config.epochs, args.quiet);
    let (_, summary) = train_into(
        &config,
        split,
        &chosen,
        &out,
        args.save_selections,
        &mut |event| match event {
            Event::Line(line) => say(line),
            Event::Epoch(m) => match &bar {
                Some(bar) => {
                    bar.set_message(format!(
                        "acc {:.2}% prec {:.2}%",
                        m.test_accuracy * 100.0,
                        m.label_precision * 100.0
                    ));
                    bar.inc(1);
                }
                None => say(epoch_line(m)),
            },
        },
    )?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
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

/// What a run reports while it trains.
pub enum Event<'a> {
    /// A line for a person (the run's settings, F-correction's first stage).
    Line(String),
    /// An epoch finished (its row is already in metrics.csv).
    Epoch(&'a EpochMetrics),
}

/// Train `config` on `split` and write the run folder `out` (which must exist and hold
/// no run). Returns the history and the summary written to summary.json.
pub fn train_into(
    config: &TrainConfig,
    split: Split,
    chosen: &Chosen,
    out: &Path,
    save_selections: bool,
    report: &mut dyn FnMut(Event),
) -> Result<(Vec<EpochMetrics>, Summary)> {
    let mut trainer = Trainer::new(config.clone(), split, &chosen.device)?;
    let n = trainer.train_len();
    let eta = if config.method.uses_selector() {
        format!(", eta = {:.3}", config.eta(n))
    } else {
        String::new()
    };
    report(Event::Line(format!(
        "{}: n = {n}, {} noise {:.0}% (actual {:.1}% flipped), method {}, {} samples per epoch{eta}, {} epochs -> {}",
        config.dataset.name(),
        config.noise.name(),
        config.noise_rate * 100.0,
        trainer.labels().actual_rate() * 100.0,
        config.method.name(),
        trainer.k(),
        config.epochs,
        out.display()
    )));
    write_config(out, config, &trainer, &chosen.description)?;
    if trainer.needs_preparation() {
        report(Event::Line(format!(
            "f-correction stage 1: Standard on 80% of the noisy training set for {} epochs, to estimate the transition matrix",
            config.epochs
        )));
        pollster::block_on(trainer.prepare()).context("f-correction's first stage failed")?;
        let p = trainer.preparation().expect("prepared");
        report(Event::Line(format!(
            "f-correction stage 1: best noisy-validation accuracy {:.2}% at epoch {} ({:.1} s)",
            p.best_validation_accuracy * 100.0,
            p.best_epoch,
            p.seconds
        )));
        write_config(out, config, &trainer, &chosen.description)?;
    }

    let networks = config.method.networks();
    let mut metrics_file = create(&out.join("metrics.csv"))?;
    writeln!(metrics_file, "{}", EpochMetrics::csv_header(networks))?;
    let mut selections = if save_selections {
        let mut f = create(&out.join("selected.csv"))?;
        writeln!(f, "epoch,indices")?;
        Some(f)
    } else {
        None
    };

    let mut history = Vec::new();
    while !trainer.is_done() {
        let epoch = trainer.epoch() + 1;
        if let (Some(f), Some(selector)) = (selections.as_mut(), trainer.selector()) {
            let chosen = pollster::block_on(selector.current_indices_host())?;
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
        report(Event::Epoch(&m));
        history.push(m);
    }

    let summary = summarize(&history).context("no epoch finished")?;
    std::fs::write(
        out.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )
    .with_context(|| format!("writing {}", out.join("summary.json").display()))?;
    std::fs::write(out.join("plot.svg"), plot::svg(&history, config))
        .with_context(|| format!("writing {}", out.join("plot.svg").display()))?;
    Ok((history, summary))
}

/// One epoch as a line of text.
pub fn epoch_line(m: &EpochMetrics) -> String {
    let regret = match (m.regret, m.regret_bound) {
        (Some(r), Some(b)) => format!("  regret {r:.1} (bound {b:.0})"),
        _ => String::new(),
    };
    format!(
        "epoch {:>3}: loss {:.4}  test acc {:.2}%  label precision {:.2}%  recall {:.2}%{regret}  {:.2}s",
        m.epoch,
        m.train_loss,
        m.test_accuracy * 100.0,
        m.label_precision * 100.0,
        m.label_recall * 100.0,
        m.epoch_seconds
    )
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
        "eta": config.method.uses_selector().then(|| config.eta(n)),
        "actual_noise_rate": trainer.labels().actual_rate(),
        "device": device,
        "selection_engine": trainer.selector().map(|s| s.engine()),
        "f_correction_stage_1": trainer.preparation(),
        "taks_version": env!("CARGO_PKG_VERSION"),
    });
    let path = out.join("config.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// A bar on a terminal, `None` when quiet or when stderr is not a terminal.
pub fn progress_bar(len: usize, quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} epoch {pos}/{len}  {msg}  [{elapsed} < {eta}]")
            .expect("valid template"),
    );
    Some(bar)
}
