//! `taks audit`: find the mislabelled samples of a user's data set and keep a model
//! trained without them.
//!
//! DATA is a folder of class sub-folders of images, a CSV file, a `.npy` feature matrix
//! with `--labels`, or (with `--dataset`) a built-in set, optionally with injected noise so the audit can be scored against the
//! truth. The flags become the core's request ([`request`]), which checks them and the
//! input before a device is opened or a folder made, and then runs the audit
//! ([`taks_core::audit::request`]). The outputs, each written atomically once the audit
//! is done ([`outputs`]): `suspects.csv`, `summary.json`
//! ([`taks_core::audit::summary`]), `report.html` ([`report`]), `model.safetensors` +
//! `model.json` ([`crate::model_file`]).

mod outputs;
mod pretrained;
mod report;
mod request;

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use taks_core::audit::Stage;
use taks_core::data::{DatasetKind, cache};
use taks_core::nn::Architecture;
use taks_core::noise::NoiseKind;
use taks_core::precision::Precision;
use taks_core::train::Next;

use taks_core::settings::flags::DeviceChoice;

use crate::device;
use crate::out_dir;

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// A folder of class sub-folders holding images (PNG, JPEG, BMP, WebP, GIF, TIFF), a
    /// CSV file of numeric feature columns and a label column, or a NumPy .npy matrix
    /// [samples, features] of float16/32/64 (embeddings) with --labels.
    #[arg(required_unless_present = "dataset", conflicts_with = "dataset")]
    pub data: Option<PathBuf>,
    /// The labels of a .npy DATA, one per row: a .npy of integers, or a text file of
    /// class names, one a line.
    #[arg(long, value_name = "LABELS")]
    pub labels: Option<PathBuf>,
    /// Pretrained weights (a torchvision or timm ResNet-18, -34 or -50 state_dict, .pth
    /// or .safetensors): the image folder is embedded with them first (`taks embed`,
    /// into OUT/embedding) and the audit runs on those features.
    #[arg(long, value_name = "FILE", conflicts_with = "dataset")]
    pub init: Option<PathBuf>,
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
    /// The network. Default for images: the most capable of the MLP, the CNN and
    /// ResNet-18 whose audit fits --budget on this device (timed on a few batches each);
    /// the MLP for CSV tables and .npy features.
    #[arg(long, value_enum)]
    pub model: Option<Architecture>,
    /// Seconds the audit of an image folder may take, for choosing its network when
    /// --model is not given (an estimate from timing each candidate, not a deadline).
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub budget: f64,
    /// Megabytes of decoded images an image folder may hold in memory; a larger folder
    /// is decoded once into a cache file (--cache-dir) that every epoch, and later audits
    /// of the unchanged folder, read from disk.
    #[arg(long, value_name = "MB", default_value_t = cache::DEFAULT_BUDGET_MB)]
    pub memory_budget: u64,
    /// Where the decoded cache files go. Default: $XDG_CACHE_HOME/taks/decoded (or
    /// ~/.cache/taks/decoded).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Output folder. Default: audits/<name of DATA>, numbered when it exists. An
    /// explicit folder that already holds an audit is an error.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Epochs of the TAkS run. Default: 20 up to 200,000 samples, fewer above (never
    /// below 8; see docs/large-data.md).
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Epochs of the probe run that estimates the noise rate. Default: 5 up to 200,000
    /// samples, 1 above.
    #[arg(long)]
    pub probe_epochs: Option<usize>,
    /// Folds of the probe: each fold's samples are predicted by a network trained on
    /// the others (at least 2). Default: 4 up to 200,000 samples, 2 above.
    #[arg(long)]
    pub probe_folds: Option<usize>,
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
    /// The arithmetic of the probe's and the selection's training steps, as for `taks
    /// train`: f32, or mixed precision (f16 or bf16) on a GPU whose adapter has the
    /// type. Every sample's risk is scored in f32 either way. Default: f32.
    #[arg(long, value_enum)]
    pub precision: Option<Precision>,
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

pub fn run(args: AuditArgs) -> Result<()> {
    request::check_flags(&args)?;
    // The device next: a precision it cannot run is refused before a folder is made or
    // an image decoded, and with --init the embedding (minutes) runs on it too, into the
    // audit's folder.
    let mut precision = args.precision.unwrap_or_default();
    let (chosen, fell_back) = device::for_precision(args.device, &mut precision)?;
    let (args, backbone, out) = match &args.init {
        Some(_) => {
            let (args, backbone, out) = pretrained::embedded(args, &chosen.device)?;
            (args, Some(backbone), Some(out))
        }
        None => (args, None, None),
    };
    let mut read = request::of(&args).read(request::flag)?;
    read.choices.precision = precision;
    if let Some(line) = fell_back {
        eprintln!("{line}");
    }
    let out = match out {
        Some(out) => out,
        None => {
            let default = format!("audits/{}", read.name());
            out_dir::prepare(args.out.as_deref(), &default, "suspects.csv", "an audit")?
        }
    };
    let say = |line: String| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    let audited = pollster::block_on(read.run(
        &chosen.device,
        &chosen.description,
        backbone,
        say,
        |stage, m| {
            say(epoch_line(stage, m));
            Next::Go
        },
    ))?;
    println!(
        "{}",
        outputs::write(&out, &audited, &chosen.description, args.report_rows)?
    );
    Ok(())
}

/// One epoch of the audit's probes or of its TAkS run, as a line.
fn epoch_line(stage: Stage, m: &taks_core::metrics::EpochMetrics) -> String {
    let name = match stage {
        Stage::Probe { fold, folds } => format!("probe {}/{folds}", fold + 1),
        Stage::Selection => "taks     ".to_string(),
    };
    format!(
        "{name} epoch {:>3}: loss {:.4}  agreement with given labels {:.2}%  {} samples  {:.2}s",
        m.epoch,
        m.train_loss,
        m.test_accuracy * 100.0,
        m.selected,
        m.epoch_seconds
    )
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
}
