//! The flags that define a run, shared by `train`, `bench` and `tune`. A flag not given
//! stays `None` and gets the paper's value in core ([`taks_core::choices::Choices`]).

use std::path::PathBuf;

use clap::Args;
use taks_core::data::DatasetKind;
use taks_core::noise::NoiseKind;

use crate::device::DeviceChoice;

/// The flags that define a run, which `--resume` takes from the run's config.json.
pub const RUN_SETTINGS: [&str; 19] = [
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
    "precision",
    "forget_rate",
    "co_lambda",
    "init_epoch",
    "method",
    "out",
    "save_selections",
];

impl RunArgs {
    /// The dataset: a folder with `--data DIR`, else `--dataset`.
    pub fn dataset(&self) -> DatasetKind {
        match self.data {
            Some(_) => DatasetKind::Folder,
            None => self.dataset,
        }
    }

    /// The noise injected: as given, else none for a folder (its labels are noisy as
    /// they are) and symmetric 50% for the built-in sets.
    pub fn noise(&self) -> (NoiseKind, f64) {
        let folder = self.dataset() == DatasetKind::Folder;
        let kind = self.noise.unwrap_or(match folder {
            true => NoiseKind::Clean,
            false => NoiseKind::Symmetric,
        });
        let rate = self
            .noise_rate
            .unwrap_or(if folder && self.noise.is_none() {
                0.0
            } else {
                0.5
            });
        (kind, rate)
    }

    /// Where the dataset's files are: `--data DIR` or `--data-dir`.
    pub fn data_dir(&self) -> Option<PathBuf> {
        self.data.clone().or_else(|| self.data_dir.clone())
    }
}

/// What to train on and how; shared by `train` and `bench`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Dataset.
    #[arg(long, value_enum, default_value_t = DatasetKind::MnistDigits)]
    pub dataset: DatasetKind,
    /// Folder holding the dataset's files (IDX files for mnist/fashion-mnist, the binary
    /// version for CIFAR, train/ val/ test/ for folder). fashion-mnist defaults to
    /// /usr/share/datasets/fashion-mnist.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Your own data in the paper's Clothing1M protocol: DIR/train (the labels as given),
    /// DIR/val and DIR/test, each of class sub-folders of images (the same as
    /// --dataset folder --data-dir DIR). Reports the validation accuracy per epoch, and
    /// the test accuracy at the best validation epoch and at the last.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["dataset", "data_dir"])]
    pub data: Option<PathBuf>,
    /// Label noise injected into the training set. Default: symmetric; clean for a folder
    /// (--data), whose labels are used as given.
    #[arg(long, value_enum)]
    pub noise: Option<NoiseKind>,
    /// Noise rate: the fraction of labels flipped (symmetric, pairflip) or the flip
    /// probability of the affected classes (asymmetric).
    /// Default: 0.5; 0 for a folder (--data).
    #[arg(long)]
    pub noise_rate: Option<f64>,
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
    /// Seed for noise, initial k-set, weights, batch order and perturbations. Default: 0.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Mini-batch size. Default: the paper's 128.
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Adam learning rate. Default: the paper's 0.001.
    #[arg(long)]
    pub lr: Option<f64>,
    /// Epoch (0-based) from which the learning rate falls linearly and beta1 drops to 0.1.
    /// Default: the paper's 80.
    #[arg(long)]
    pub decay_start: Option<usize>,
    /// Compute device: auto (a hardware GPU if present, else CPU), gpu (wgpu, even a
    /// software adapter) or cpu (burn's flex backend).
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// The arithmetic of a training step: f32, or mixed precision (f16 or bf16 forward
    /// and backward passes with f32 weights, Adam and batch norm; scoring and testing in
    /// f32). Mixed precision needs a GPU whose adapter has the type. Default: f32.
    #[arg(long, value_enum)]
    pub precision: Option<taks_core::precision::Precision>,
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
