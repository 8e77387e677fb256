//! Command-line arguments. Every flag's doc comment is its `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::device::DeviceChoice;

/// Train classifiers on noisy labels with TAkS: each epoch trains on the k samples whose
/// cumulative noise-risk (plus a random perturbation) is smallest, so mislabelled
/// samples are left out while the network learns from the clean ones.
#[derive(Parser, Debug)]
#[command(name = "taks", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train one run and write metrics.csv, config.json, summary.json and plot.svg.
    ///
    /// Example: taks train --dataset fashion-mnist --noise symmetric --noise-rate 0.5
    Train(TrainArgs),
    /// Time epochs per method on each device and report the time ratio against standard.
    Bench(BenchArgs),
    /// Time one selection step for large n: WGSL kernels, CPU reference, burn's sort.
    BenchSelect(crate::bench_select::BenchSelectArgs),
    /// Run a grid of datasets x noises x methods x seeds, one run folder per cell, and
    /// write the paper's tables (table.md, table.csv) and accuracy curves.
    ///
    /// Example: taks experiment --datasets mnist-digits --noises symmetric-0.5,pairflip-0.45
    /// --methods all --seeds 0,1,2 --out experiments/digits
    Experiment(crate::experiment::ExperimentArgs),
    /// Choose TAkS's k-ratio and eta-ratio on a noisy validation set (20% of the noisy
    /// training set held out), over the paper's grid, and write every score.
    Tune(crate::tune::TuneArgs),
    /// Print the paper-style summary table of one or more finished run folders.
    Table {
        /// Run folders (each with metrics.csv and config.json).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
    },
}

/// What to train on and how; shared by `train` and `bench`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Dataset: mnist-digits (10,000 real digits bundled with taks), mnist, fashion-mnist,
    /// cifar10 or cifar100.
    #[arg(long, default_value = "mnist-digits")]
    pub dataset: String,
    /// Folder holding the dataset's files (IDX files for mnist/fashion-mnist, the binary
    /// version for CIFAR). fashion-mnist defaults to /usr/share/datasets/fashion-mnist.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Label noise injected into the training set: clean, symmetric, pairflip or asymmetric.
    #[arg(long, default_value = "symmetric")]
    pub noise: String,
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
    /// Method: taks (FPL), greedy or naive (the paper's ablations), or a baseline:
    /// standard, f-correction, decouple, co-teaching, co-teaching-plus, jocor, itlm.
    #[arg(long, default_value = "taks")]
    pub method: String,
    /// Run folder. Default: runs/<dataset>-<noise><rate>-<method>-seed<seed>, numbered
    /// when it exists. An explicit folder that already holds a run is an error.
    #[arg(long)]
    pub out: Option<PathBuf>,
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
    #[arg(long, default_value = "taks,standard", value_delimiter = ',')]
    pub methods: Vec<String>,
    /// Devices to time on, comma-separated (cpu, gpu).
    #[arg(long, default_value = "cpu", value_delimiter = ',')]
    pub devices: Vec<String>,
    /// Epochs not timed at the start (shader compilation, allocator warm-up).
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
}
