//! A run folder: one run of `taks train` or of `taks experiment`'s grid, written as it
//! happens and resumable.
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
//! half written. The epochs are the core's loop ([`Trainer::run_to_end`]); this module
//! is what the command line does around each ([`Written`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::json;
use taks_core::formats::atomic::write_atomically;
use taks_core::formats::checkpoint::Checkpoint;
use taks_core::formats::state_dict::StateDict;
use taks_core::metrics::{EpochMetrics, Summary, summarize};
use taks_core::settings::TrainConfig;
use taks_core::train::{Next, Trainer, Watch};

use crate::device::Chosen;
use crate::folder_data::RunData;
use crate::{model_file, plot};

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

    let mut watch = Written::open(out, &trainer, &history, config, options, resuming, report)?;
    pollster::block_on(trainer.run_to_end(&mut history, &mut watch))?;

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

/// `taks train`'s watch on the core's loop, over the run folder's files that grow as the
/// run trains: metrics.csv (a row per epoch), selected.csv where asked for (each epoch's
/// k-set before it trains), the checkpoint (every `--checkpoint-every` epochs and after
/// the last); each epoch reported.
struct Written<'a> {
    out: &'a Path,
    metrics: File,
    selections: Option<File>,
    checkpoint_every: usize,
    report: &'a mut dyn FnMut(Event),
}

impl<'a> Written<'a> {
    /// metrics.csv and selected.csv as the checkpoint knows them (`history`; a resumed
    /// run's selected.csv cut back to its epoch), opened to append to.
    fn open(
        out: &'a Path,
        trainer: &Trainer,
        history: &[EpochMetrics],
        config: &TrainConfig,
        options: &Options,
        resuming: bool,
        report: &'a mut dyn FnMut(Event),
    ) -> Result<Self> {
        let mut rows = EpochMetrics::csv_header(config.method.networks()) + "\n";
        for m in history {
            rows += &(m.csv_row() + "\n");
        }
        write_atomically(&out.join("metrics.csv"), rows.as_bytes())?;
        let selections = match options.save_selections {
            true => {
                let path = out.join("selected.csv");
                let kept = match resuming {
                    true => selection_rows_until(&path, trainer.epoch())?,
                    false => "epoch,indices\n".to_string(),
                };
                write_atomically(&path, kept.as_bytes())?;
                Some(append(&path)?)
            }
            false => None,
        };
        Ok(Self {
            out,
            metrics: append(&out.join("metrics.csv"))?,
            selections,
            checkpoint_every: options.checkpoint_every.max(1),
            report,
        })
    }
}

impl Watch for Written<'_> {
    type Error = anyhow::Error;

    fn wants_k_set(&self) -> bool {
        self.selections.is_some()
    }

    fn before(&mut self, epoch: usize, k_set: &[u32]) -> Result<()> {
        if let Some(f) = self.selections.as_mut() {
            let list: Vec<String> = k_set.iter().map(u32::to_string).collect();
            // One write per row, so a kill never leaves part of one.
            f.write_all(format!("{epoch},{}\n", list.join(" ")).as_bytes())?;
        }
        Ok(())
    }

    fn after(&mut self, trainer: &Trainer, history: &[EpochMetrics]) -> Result<Next> {
        let m = history.last().expect("an epoch just ended");
        self.metrics
            .write_all(format!("{}\n", m.csv_row()).as_bytes())?;
        if trainer.epoch().is_multiple_of(self.checkpoint_every) || trainer.is_done() {
            save_checkpoint(trainer, history, &self.out.join(CHECKPOINT))?;
        }
        (self.report)(Event::Epoch(m));
        Ok(Next::Go)
    }

    fn failed(&mut self, epoch: usize, error: taks_core::Error) -> anyhow::Error {
        anyhow::Error::new(error).context(format!(
            "epoch {epoch} failed; the {} finished epochs are in {}",
            epoch - 1,
            self.out.display()
        ))
    }
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
pub fn read_run_config(dir: &Path) -> Result<(TrainConfig, Option<PathBuf>)> {
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
