//! Command-line arguments. Every flag's doc comment is its `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use taks_core::data::DatasetKind;
use taks_core::methods::Method;
use taks_core::noise::NoiseKind;

use crate::device::DeviceChoice;
use crate::picks::MethodPick;

/// Train classifiers on noisy labels with TAkS: each epoch trains on the k samples whose
/// cumulative noise-risk (plus a random perturbation) is smallest, so mislabelled
/// samples are left out while the network learns from the clean ones.
#[derive(Parser, Debug)]
#[command(name = "taks", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Every subcommand reads `-1` as a value (`--eta-ratio -1`), so that a negative number
// gets a message about the value from our validation, not clap's "unexpected argument".
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train one run and write metrics.csv, config.json, summary.json and plot.svg.
    ///
    /// Example: taks train --dataset fashion-mnist --noise symmetric --noise-rate 0.5
    ///
    /// A run writes checkpoint.safetensors after every epoch; `taks train --resume DIR`
    /// continues a run that was stopped, exactly where it stopped.
    #[command(allow_negative_numbers = true)]
    Train(TrainArgs),
    /// Time epochs per method on each device and report the time ratio against standard.
    #[command(allow_negative_numbers = true)]
    Bench(BenchArgs),
    /// Time one selection step for large n: WGSL kernels, CPU reference, burn's sort.
    #[command(allow_negative_numbers = true)]
    BenchSelect(crate::bench_select::BenchSelectArgs),
    /// Run a grid of datasets x noises x methods x seeds, one run folder per cell, and
    /// write the paper's tables (table.md, table.csv) and accuracy curves.
    ///
    /// Example: taks experiment --datasets mnist-digits --noises symmetric-0.5,pairflip-0.45
    /// --methods all --seeds 0,1,2 --out experiments/digits
    #[command(allow_negative_numbers = true)]
    Experiment(crate::experiment::ExperimentArgs),
    /// Choose TAkS's k-ratio and eta-ratio on a noisy validation set (20% of the noisy
    /// training set held out), over the paper's grid, and write every score.
    #[command(allow_negative_numbers = true)]
    Tune(crate::tune::TuneArgs),
    /// Find the mislabelled samples of your own data (a folder of class sub-folders of
    /// images, or a CSV) with one TAkS run, and keep the model trained without them.
    ///
    /// Example: taks audit photos/ --out audit-photos
    ///
    /// Writes suspects.csv (every sample, most suspect first), summary.json, report.html,
    /// model.safetensors and model.json.
    #[command(allow_negative_numbers = true)]
    Audit(crate::audit::AuditArgs),
    /// Predict with the model an audit kept: prints id,predicted_label,confidence.
    ///
    /// Example: taks predict --model audit-photos new-photos/
    #[command(allow_negative_numbers = true)]
    Predict(crate::predict::PredictArgs),
    /// Print the paper-style summary table of one or more finished run folders.
    Table {
        /// Run folders (each with metrics.csv and config.json).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
    },
}

/// The flags that define a run, which `--resume` takes from the run's config.json.
const RUN_SETTINGS: [&str; 18] = [
    "dataset",
    "noise",
    "noise_rate",
    "train_limit",
    "test_limit",
    "k_ratio",
    "eta_ratio",
    "epochs",
    "seed",
    "batch_size",
    "lr",
    "decay_start",
    "forget_rate",
    "co_lambda",
    "init_epoch",
    "method",
    "out",
    "save_selections",
];

/// What to train on and how; shared by `train` and `bench`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Dataset.
    #[arg(long, value_enum, default_value_t = DatasetKind::MnistDigits)]
    pub dataset: DatasetKind,
    /// Folder holding the dataset's files (IDX files for mnist/fashion-mnist, the binary
    /// version for CIFAR). fashion-mnist defaults to /usr/share/datasets/fashion-mnist.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Label noise injected into the training set.
    #[arg(long, value_enum, default_value_t = NoiseKind::Symmetric)]
    pub noise: NoiseKind,
    /// Noise rate: the fraction of labels flipped (symmetric, pairflip) or the flip
    /// probability of the affected classes (asymmetric).
    #[arg(long, default_value_t = 0.5)]
    pub noise_rate: f64,
    /// Use only the first N training samples (quick experiments).
    #[arg(long, value_name = "N")]
    pub train_limit: Option<usize>,
    /// Use only the first N test samples.
    #[arg(long, value_name = "N")]
    pub test_limit: Option<usize>,
    /// Fraction of samples selected each epoch, k = floor(n * k_ratio). Default: the
    /// paper's tuned value for this dataset and noise.
    #[arg(long)]
    pub k_ratio: Option<f64>,
    /// Scale of the FPL perturbation, eta = sqrt(k * epochs) * eta_ratio. Default: the
    /// paper's tuned value.
    #[arg(long)]
    pub eta_ratio: Option<f64>,
    /// Number of epochs. Default: 200 (the paper) for train, 3 timed epochs for bench.
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Seed for noise, initial k-set, weights, batch order and perturbations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Mini-batch size.
    #[arg(long, default_value_t = 128)]
    pub batch_size: usize,
    /// Adam learning rate.
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    /// Epoch (0-based) from which the learning rate falls linearly and beta1 drops to 0.1.
    #[arg(long, default_value_t = 80)]
    pub decay_start: usize,
    /// Compute device: auto (a hardware GPU if present, else CPU), gpu (wgpu, even a
    /// software adapter) or cpu (burn's flex backend).
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    #[command(flatten)]
    pub method_settings: MethodSettings,
}

/// The baselines' own settings; each defaults to the paper's value for the dataset and
/// noise.
#[derive(Args, Debug, Clone, Default)]
pub struct MethodSettings {
    /// tau of Co-teaching, Co-teaching+, JoCoR and ITLM: the share of each batch (of the
    /// training set, for ITLM) left out. Default: the expected fraction of flipped
    /// labels (the noise rate; half of it for asymmetric noise).
    #[arg(long, value_name = "TAU")]
    pub forget_rate: Option<f64>,
    /// JoCoR's lambda (weight of the agreement term). Default: 0.9; CIFAR-10 at
    /// symmetric 80% 0.65; CIFAR-100 0.85.
    #[arg(long, value_name = "LAMBDA")]
    pub co_lambda: Option<f64>,
    /// Co-teaching+'s first epoch of disagreement-based exchange. Default: 0 for the
    /// 28x28 sets, 20 for CIFAR-10, 5 for CIFAR-100.
    #[arg(long, value_name = "EPOCH")]
    pub init_epoch: Option<usize>,
}

#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Method: TAkS, its ablations (greedy, naive) or one of the paper's baselines.
    #[arg(long, value_enum, default_value_t = Method::Taks)]
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

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Methods to time, comma-separated, or `all`.
    #[arg(
        long,
        value_enum,
        default_value = "taks,standard",
        value_delimiter = ','
    )]
    pub methods: Vec<MethodPick>,
    /// Devices to time on, comma-separated.
    #[arg(long, value_enum, default_value = "cpu", value_delimiter = ',')]
    pub devices: Vec<DeviceChoice>,
    /// Epochs not timed at the start (shader compilation, allocator warm-up).
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Also time the same TAkS epoch as a tight PyTorch loop with this Python (which
    /// needs torch and numpy), in the same run, on the same device (the CPU, or CUDA for
    /// `gpu`), and print taks's time over it.
    #[arg(long, value_name = "PYTHON")]
    pub torch: Option<PathBuf>,
    /// Time on generated images instead of the dataset's files: N training samples of
    /// C x H x W (e.g. 50000x3x32x32 for CIFAR's shape, 2000x3x224x224 for ResNet-18's),
    /// ten classes. The dataset still names the noise recipe and the paper's settings.
    #[arg(long, value_name = "NxCxHxW")]
    pub generated: Option<crate::bench_data::Generated>,
    /// Network to time. Default: the dataset's (the MLP for 28x28 grey, else the CNN).
    #[arg(long, value_enum)]
    pub model: Option<taks_core::model::Architecture>,
    /// Samples per scoring forward pass. Default: 4096. ResNet-18 at 224x224 needs fewer,
    /// so that one activation fits a GPU buffer (e.g. 256).
    #[arg(long, value_name = "N")]
    pub eval_batch: Option<usize>,
}
