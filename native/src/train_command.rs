//! `taks train`: one run, written to a run folder as it happens, and resumable.
//!
//! metrics.csv gets a row (flushed) after every epoch, so an interrupted or failed run
//! keeps everything it measured; config.json is written before the first epoch (and
//! again after F-correction's first stage, with the transition matrix it estimated),
//! summary.json and plot.svg after the last. After every `--checkpoint-every` epochs
//! (and the last) the whole training state goes to checkpoint.safetensors, written
//! beside and renamed over the previous one, so a kill at any instant leaves a whole
//! checkpoint. The order is row first, then checkpoint: a run stopped between the two
//! has one row more than its checkpoint, and `--resume` rewrites metrics.csv (and
//! selected.csv) from the checkpoint before going on, so no row is ever doubled or
//! half written. `taks experiment` writes and resumes each of its runs with the same
//! [`train_into`].

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use taks_core::config::TrainConfig;
use taks_core::formats::atomic::write_atomically;
use taks_core::formats::checkpoint::Checkpoint;
use taks_core::formats::state_dict::StateDict;
use taks_core::methods::Method;
use taks_core::metrics::{EpochMetrics, Summary, summarize};
use taks_core::train::Trainer;

use crate::device::Chosen;
use crate::folder_data::{self, RunData};
use crate::run_args::{RUN_SETTINGS, RunArgs};
use crate::{device, model_file, out_dir, plot, run_args, table};

#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Method: TAkS, its ablations (greedy, naive) or one of the paper's baselines.
    #[arg(long, value_enum, default_value_t = Method::TAKS)]
    pub method: Method,
    /// Run folder. Default: runs/<dataset>-<noise><rate>-<method>-seed<seed>, numbered
    /// when it exists. An explicit folder that already holds a run is an error.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue the stopped run in this folder from its last checkpoint, with the
    /// settings in its config.json (only --data-dir, --device, --quiet and
    /// --checkpoint-every may be given; selected.csv goes on if the run wrote one).
    #[arg(long, value_name = "DIR", conflicts_with_all = RUN_SETTINGS)]
    pub resume: Option<PathBuf>,
    /// Fine-tune from pretrained weights: a torchvision or timm ResNet-18, -34 or -50
    /// state_dict (.pth or .safetensors) for a folder of images (--data DIR). The
    /// network is the one the file holds; images are prepared as torchvision prepares
    /// ImageNet's (resize 256, centre crop 224, ImageNet's mean and std).
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    pub init: Option<PathBuf>,
    /// Write checkpoint.safetensors every N epochs (and after the last).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub checkpoint_every: usize,
    /// Also write the indices selected in every epoch to selected.csv (taks, greedy and
    /// naive only: the methods with an epoch-level selection).
    #[arg(long)]
    pub save_selections: bool,
    /// No progress bar and no per-epoch lines; only the final summary.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: TrainArgs) -> Result<()> {
    if args.checkpoint_every == 0 {
        bail!("--checkpoint-every must be at least 1 (epochs between checkpoints)");
    }
    let (mut config, data_dir, save_selections) = match &args.resume {
        Some(dir) => {
            let (config, data_dir) = read_run_config(dir)?;
            let data_dir = args.run.data.data_dir().or(data_dir);
            (config, data_dir, dir.join("selected.csv").exists())
        }
        None => {
            let config = run_args::build(&args.run, args.method)?;
            if args.save_selections && !config.method.uses_selector() {
                bail!(
                    "--save-selections needs a method with an epoch-level selection (taks, greedy, naive), not {}",
                    config.method.name()
                );
            }
            (config, args.run.data.data_dir(), args.save_selections)
        }
    };
    let init = match &args.init {
        Some(path) => {
            let given = run_args::Given {
                schedule: args.run.training.lr.is_some() || args.run.training.decay_start.is_some(),
                epochs: args.run.training.epochs.is_some(),
            };
            let state = run_args::start_from(&mut config, path, given)?;
            Some((path.clone(), Arc::new(state)))
        }
        None => None,
    };
    // Everything about the input is checked before a device is opened or a folder made.
    let checkpoint = match &args.resume {
        Some(dir) => saved_checkpoint(dir, &config)?,
        None => None,
    };
    folder_data::choose(&mut config, data_dir.as_deref())?;
    let data = folder_data::load(&config, data_dir.as_deref())?;
    data.split.check()?;
    config.checked_k(
        data.split
            .train
            .len()
            .min(config.train_limit.unwrap_or(usize::MAX)),
    )?;
    let chosen = device::choose(args.run.training.device())?;
    let fell_back = match args.resume {
        None => {
            device::fall_back_to_f32(args.run.training.device(), &chosen, &mut config.precision)
        }
        Some(_) => None,
    };
    let out = match &args.resume {
        Some(dir) => dir.clone(),
        None => {
            let default = format!(
                "runs/{}-{}{:.0}-{}-seed{}",
                config.dataset.name(),
                config.noise.name(),
                config.noise_rate * 100.0,
                config.method.name(),
                config.seed
            );
            out_dir::prepare(args.out.as_deref(), &default, "metrics.csv", "a run")?
        }
    };
    let say = |line: String| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    let bar = progress_bar(config.epochs, args.quiet);
    let options = Options {
        save_selections,
        checkpoint_every: args.checkpoint_every,
        data_dir: data_dir.clone(),
        init,
    };
    if let Some(note) = &data.note {
        say(note.clone());
    }
    if let Some(line) = fell_back {
        eprintln!("{line}");
    }
    let keeps_model = data.card.is_some();
    let (_, summary) = train_into(
        &config,
        data,
        checkpoint,
        &chosen,
        &out,
        &options,
        &mut |event| match event {
            Event::Line(line) => say(line),
            Event::Epoch(m) => match &bar {
                Some(bar) => {
                    bar.set_position(m.epoch as u64);
                    bar.set_message(format!(
                        "acc {:.2}% prec {:.2}%",
                        m.test_accuracy * 100.0,
                        m.label_precision * 100.0
                    ));
                }
                None => say(epoch_line(m)),
            },
        },
    )?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if let (Some(epoch), Some(best), Some(last)) = (
        summary.best_val_epoch,
        summary.test_accuracy_at_best_val,
        summary.test_accuracy_last,
    ) {
        println!(
            "best validation accuracy at epoch {epoch}: test accuracy {:.2}% (the paper's Best); last epoch: {:.2}% (Last)",
            best * 100.0,
            last * 100.0
        );
    }
    println!(
        "{}",
        table::render(&[table::Row::new(out.display().to_string(), config, summary)])
    );
    let model = match keeps_model {
        true => format!(",{},{}", model_file::WEIGHTS, model_file::DESCRIPTION),
        false => String::new(),
    };
    println!(
        "wrote {}/{{metrics.csv,config.json,summary.json,plot.svg,{CHECKPOINT}{model}}}",
        out.display()
    );
    Ok(())
}

/// The checkpoint's file name inside a run folder.
pub const CHECKPOINT: &str = "checkpoint.safetensors";

/// How [`train_into`] runs besides the settings.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Also write selected.csv (methods with an FPL selector only).
    pub save_selections: bool,
    /// Epochs between checkpoints (the last epoch always writes one).
    pub checkpoint_every: usize,
    /// Recorded in config.json, so that a resumed run finds its data again.
    pub data_dir: Option<PathBuf>,
    /// Pretrained weights a new run starts from (`--init`), and their file (shared by
    /// the runs of an experiment).
    pub init: Option<(PathBuf, Arc<StateDict>)>,
}

/// What a run reports while it trains.
pub enum Event<'a> {
    /// A line for a person (the run's settings, F-correction's first stage).
    Line(String),
    /// An epoch finished (its row is already in metrics.csv).
    Epoch(&'a EpochMetrics),
}

/// The checkpoint in run folder `dir`, read and checked against `config`; `None` when
/// the run stopped before writing one.
pub fn saved_checkpoint(dir: &Path, config: &TrainConfig) -> Result<Option<Checkpoint>> {
    let path = dir.join(CHECKPOINT);
    if !path.exists() {
        return Ok(None);
    }
    let checkpoint = Checkpoint::read(&path)?;
    taks_core::train::checkpoint::check(&checkpoint, config, &path)?;
    Ok(Some(checkpoint))
}

/// Train `config` on `split` and write the run folder `out`, which must exist. Without
/// a checkpoint the run starts from nothing; with one (from [`saved_checkpoint`] of
/// `out`) it continues from it, metrics.csv and selected.csv first cut back to the
/// checkpoint's epoch, so no row is ever doubled or half written. Returns the history
/// and the summary written to summary.json.
pub fn train_into(
    config: &TrainConfig,
    data: RunData,
    checkpoint: Option<Checkpoint>,
    chosen: &Chosen,
    out: &Path,
    options: &Options,
    report: &mut dyn FnMut(Event),
) -> Result<(Vec<EpochMetrics>, Summary)> {
    let card = data.card;
    let mut trainer = Trainer::new(config.clone(), data.split, &chosen.device)?;
    if let Some(val) = data.val {
        trainer.validate_on(val)?;
    }
    let checkpoint_path = out.join(CHECKPOINT);
    let mut history = Vec::new();
    let resuming = checkpoint.is_some();
    if let Some((path, state)) = &options.init
        && !resuming
    {
        trainer.start_from(state, path)?;
    }
    if let Some(checkpoint) = checkpoint {
        history = trainer.restore(checkpoint, &checkpoint_path)?;
        report(Event::Line(format!(
            "resuming {} after epoch {} of {}",
            out.display(),
            trainer.epoch(),
            config.epochs
        )));
    }
    let n = trainer.train_len();
    let eta = if config.method.uses_selector() {
        format!(", eta = {:.3}", config.eta(n))
    } else {
        String::new()
    };
    report(Event::Line(format!("device: {}", chosen.description)));
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
    if !resuming {
        write_config(out, config, &trainer, &chosen.description, options)?;
    }
    if trainer.needs_preparation() {
        report(Event::Line(format!(
            "f-correction stage 1: Standard on 80% of the noisy training set for {} epochs, to estimate the transition matrix",
            config.epochs
        )));
        pollster::block_on(trainer.run_first_stage())
            .context("f-correction's first stage failed")?;
        let p = trainer.preparation().expect("prepared");
        report(Event::Line(format!(
            "f-correction stage 1: best noisy-validation accuracy {:.2}% at epoch {} ({:.1} s)",
            p.best_validation_accuracy * 100.0,
            p.best_epoch,
            p.seconds
        )));
        write_config(out, config, &trainer, &chosen.description, options)?;
        save_checkpoint(&trainer, &history, &checkpoint_path)?;
    }

    let networks = config.method.networks();
    // metrics.csv as the checkpoint knows it, then appended to.
    let mut rows = EpochMetrics::csv_header(networks) + "\n";
    for m in &history {
        rows += &(m.csv_row() + "\n");
    }
    write_atomically(&out.join("metrics.csv"), rows.as_bytes())?;
    let mut metrics_file = append(&out.join("metrics.csv"))?;
    let mut selections = if options.save_selections {
        let path = out.join("selected.csv");
        let kept = if resuming {
            selection_rows_until(&path, trainer.epoch())?
        } else {
            "epoch,indices\n".to_string()
        };
        write_atomically(&path, kept.as_bytes())?;
        Some(append(&path)?)
    } else {
        None
    };

    while !trainer.is_done() {
        let epoch = trainer.epoch() + 1;
        if let (Some(f), Some(selector)) = (selections.as_mut(), trainer.selector()) {
            let k_set = pollster::block_on(selector.current_indices_host())?;
            let list: Vec<String> = k_set.iter().map(u32::to_string).collect();
            // One write per row, so a kill never leaves part of one.
            f.write_all(format!("{epoch},{}\n", list.join(" ")).as_bytes())?;
        }
        let m = pollster::block_on(trainer.run_epoch()).with_context(|| {
            format!(
                "epoch {epoch} failed; the {} finished epochs are in {}",
                epoch - 1,
                out.display()
            )
        })?;
        metrics_file.write_all(format!("{}\n", m.csv_row()).as_bytes())?;
        history.push(m);
        if trainer.epoch() % options.checkpoint_every.max(1) == 0 || trainer.is_done() {
            save_checkpoint(&trainer, &history, &checkpoint_path)?;
        }
        report(Event::Epoch(history.last().expect("just pushed")));
    }

    let summary = summarize(&history).context("no epoch finished")?;
    std::fs::write(
        out.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )
    .with_context(|| format!("writing {}", out.join("summary.json").display()))?;
    std::fs::write(out.join("plot.svg"), plot::svg(&history, config))
        .with_context(|| format!("writing {}", out.join("plot.svg").display()))?;
    // A run keeps its (first) network for `taks predict` and PyTorch.
    if let Some(card) = &card {
        model_file::save(out, trainer.networks().first(), card)?;
    }
    Ok((history, summary))
}

/// Write the trainer's checkpoint over the previous one, atomically.
fn save_checkpoint(trainer: &Trainer, history: &[EpochMetrics], path: &Path) -> Result<()> {
    let checkpoint = pollster::block_on(trainer.checkpoint(history))?;
    write_atomically(path, &checkpoint.encode())?;
    Ok(())
}

/// selected.csv's header and its rows for epochs 1..=`epochs` (each row is written
/// before its epoch trains, so a stopped run may hold one more).
fn selection_rows_until(path: &Path, epochs: usize) -> Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let mut kept = String::from("epoch,indices\n");
    if lines.next() != Some("epoch,indices") {
        bail!("{} is not a selected.csv written by taks", path.display());
    }
    for line in lines {
        let epoch = line.split(',').next().and_then(|e| e.parse::<usize>().ok());
        match epoch {
            Some(e) if e <= epochs && line.contains(',') => kept += &format!("{line}\n"),
            _ => break,
        }
    }
    Ok(kept)
}

/// A run folder's settings and data folder, from its config.json.
fn read_run_config(dir: &Path) -> Result<(TrainConfig, Option<PathBuf>)> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot resume {}: no run there (reading {})",
            dir.display(),
            path.display()
        )
    })?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let config: TrainConfig = serde_json::from_value(doc["config"].clone())
        .with_context(|| format!("{} holds no taks run settings", path.display()))?;
    config
        .validate()
        .with_context(|| format!("in {}", path.display()))?;
    let data_dir = doc["data_dir"].as_str().map(PathBuf::from);
    Ok((config, data_dir))
}

/// One epoch as a line of text.
pub fn epoch_line(m: &EpochMetrics) -> String {
    let regret = match (m.regret, m.regret_bound) {
        (Some(r), Some(b)) => format!("  regret {r:.1} (bound {b:.0})"),
        (Some(r), None) => format!("  regret {r:.1}"),
        _ => String::new(),
    };
    let val = m
        .val_accuracy
        .map(|v| format!("  val acc {:.2}%", v * 100.0))
        .unwrap_or_default();
    format!(
        "epoch {:>3}: loss {:.4}{val}  test acc {:.2}%  label precision {}  recall {}{regret}  {:.2}s",
        m.epoch,
        m.train_loss,
        m.test_accuracy * 100.0,
        table::percent(m.label_precision),
        table::percent(m.label_recall),
        m.epoch_seconds
    )
}

fn append(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

fn write_config(
    out: &Path,
    config: &TrainConfig,
    trainer: &Trainer,
    device: &str,
    options: &Options,
) -> Result<()> {
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
        "data_dir": options.data_dir,
        "taks_version": env!("CARGO_PKG_VERSION"),
    });
    write_atomically(
        &out.join("config.json"),
        serde_json::to_string_pretty(&doc)?.as_bytes(),
    )?;
    Ok(())
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
