//! `taks train`: parse the run's flags, choose the device and the data, hand them to
//! [`crate::run_folder::train_into`] (which writes the run folder as it trains and
//! resumes it), and print each epoch and the closing lines.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};
use clap::Args;
use taks_core::methods::Method;
use taks_core::metrics::{EpochMetrics, Summary};
use taks_core::settings::TrainConfig;

use crate::folder_data;
use crate::run_folder::{
    CHECKPOINT, Event, Options, read_run_config, saved_checkpoint, train_into,
};
use crate::{device, model_file, out_dir, progress, summary_table};
use taks_core::settings::flags::{RUN_SETTINGS, RunArgs};

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
    let (mut config, data_dir, save_selections) = settings(&args)?;
    let init = match &args.init {
        Some(path) => {
            let given = taks_core::settings::fine_tune::Given {
                schedule: args.run.training.lr.is_some() || args.run.training.decay_start.is_some(),
                epochs: args.run.training.epochs.is_some(),
            };
            let state = config.start_from(path, given)?;
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
    let out = out_folder(&args, &config)?;
    let say = |line: String| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    if let Some(note) = &data.note {
        say(note.clone());
    }
    if let Some(line) = fell_back {
        eprintln!("{line}");
    }
    let keeps_model = data.card.is_some();
    let options = Options {
        save_selections,
        checkpoint_every: args.checkpoint_every,
        data_dir,
        init,
    };
    let bar = progress::bar(config.epochs, args.quiet, progress::EPOCHS);
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
    report(&out, config, summary, keeps_model);
    Ok(())
}

/// The run's settings, its data folder and whether it saves its k-sets: a resumed run's
/// from its config.json (a data folder given now wins), else from the flags.
fn settings(args: &TrainArgs) -> Result<(TrainConfig, Option<PathBuf>, bool)> {
    if let Some(dir) = &args.resume {
        let (config, data_dir) = read_run_config(dir)?;
        let data_dir = args.run.data.data_dir().or(data_dir);
        return Ok((config, data_dir, dir.join("selected.csv").exists()));
    }
    let config = args.run.config(args.method)?;
    if args.save_selections && !config.method.uses_selector() {
        bail!(
            "--save-selections needs a method with an epoch-level selection (taks, greedy, naive), not {}",
            config.method.name()
        );
    }
    Ok((config, args.run.data.data_dir(), args.save_selections))
}

/// The run folder: the resumed one, else `--out` or one named after the run, made.
fn out_folder(args: &TrainArgs, config: &TrainConfig) -> Result<PathBuf> {
    if let Some(dir) = &args.resume {
        return Ok(dir.clone());
    }
    let default = format!(
        "runs/{}-{}{:.0}-{}-seed{}",
        config.dataset.name(),
        config.noise.name(),
        config.noise_rate * 100.0,
        config.method.name(),
        config.seed
    );
    out_dir::prepare(args.out.as_deref(), &default, "metrics.csv", "a run")
}

/// The closing lines: the paper's Best and Last where there is a validation set, the
/// run's row, and the files written.
fn report(out: &Path, config: TrainConfig, summary: Summary, keeps_model: bool) {
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
        summary_table::render(&[summary_table::Row::new(
            out.display().to_string(),
            config,
            summary
        )])
    );
    let model = match keeps_model {
        true => format!(",{},{}", model_file::WEIGHTS, model_file::DESCRIPTION),
        false => String::new(),
    };
    println!(
        "wrote {}/{{metrics.csv,config.json,summary.json,plot.svg,{CHECKPOINT}{model}}}",
        out.display()
    );
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
        summary_table::percent(m.label_precision),
        summary_table::percent(m.label_recall),
        m.epoch_seconds
    )
}
