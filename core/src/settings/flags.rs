//! The command line's flags that define a run, shared by `train`, `bench` and `tune`
//! (feature `clap`), and the [`Choices`] they make: a flag not given stays `None` and
//! gets the paper's value when the choices are built ([`super::paper`]).

use std::path::PathBuf;

use clap::Args;

use super::choices::Choices;
use super::config::TrainConfig;
use super::gamma::noise_estimate;
use crate::Result;
use crate::data::DatasetKind;
use crate::methods::Method;
use crate::noise::NoiseKind;

/// The compute device asked for (`--device`); the command line finds it
/// (`native/src/device/mod.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    /// A hardware GPU if there is one, else the CPU.
    Auto,
    /// wgpu on the best adapter, even a software one; an error if there is none.
    Gpu,
    /// burn's flex CPU backend.
    Cpu,
}

/// The flags that define a run, which `--resume` takes from the run's config.json.
pub const RUN_SETTINGS: [&str; 20] = [
    "dataset",
    "noise",
    "noise_rate",
    "train_limit",
    "test_limit",
    "k_ratio",
    "eta_ratio",
    "gamma",
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

impl DataArgs {
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

impl TrainingArgs {
    /// The device asked for: `--device`, else auto.
    pub fn device(&self) -> DeviceChoice {
        self.device.unwrap_or(DeviceChoice::Auto)
    }
}

/// What to train on and how: every flag of `train`, and of `bench`. `tune` takes the
/// data and training parts only ([`DataArgs`], [`TrainingArgs`]): it chooses k and eta
/// itself, tests on held-out training samples, and tunes TAkS, not the baselines.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub data: DataArgs,
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
    /// The fraction of labels you believe wrong (your own data, whose noise no recipe
    /// states): a number, or an audit of the same data (its folder or summary.json),
    /// whose estimated noise rate it takes. The k-ratio becomes 1 - gamma - 0.15 (at
    /// least 0.05) and the baselines' forget rate gamma; --k-ratio and --forget-rate
    /// given still win.
    #[arg(long, value_name = "RATE|AUDIT")]
    pub gamma: Option<String>,
    #[command(flatten)]
    pub training: TrainingArgs,
    #[command(flatten)]
    pub method_settings: MethodSettings,
}

/// The data a run reads and the noise injected into its labels.
#[derive(Args, Debug, Clone)]
pub struct DataArgs {
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
}

/// How the network is trained, and where.
#[derive(Args, Debug, Clone, Default)]
pub struct TrainingArgs {
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
    /// software adapter) or cpu (burn's flex backend). Default: auto (bench: cpu, and
    /// --devices names several).
    #[arg(long, value_enum)]
    pub device: Option<DeviceChoice>,
    /// The arithmetic of a training step: f32, or mixed precision (f16 or bf16 forward
    /// and backward passes with f32 weights, Adam and batch norm; scoring and testing in
    /// f32). Mixed precision needs a GPU whose adapter has the type. Default: f32.
    #[arg(long, value_enum)]
    pub precision: Option<crate::precision::Precision>,
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

impl RunArgs {
    /// The run of `data` trained as `training`, every other choice the paper's.
    pub fn of(data: DataArgs, training: TrainingArgs) -> Self {
        RunArgs {
            data,
            test_limit: None,
            k_ratio: None,
            eta_ratio: None,
            gamma: None,
            training,
            method_settings: MethodSettings::default(),
        }
    }

    /// The choices these flags make for `method`.
    pub fn choices(&self, method: Method) -> Result<Choices> {
        let args = self;
        let settings = &args.method_settings;
        let (data, training) = (&args.data, &args.training);
        let noise_estimate = args.gamma.as_deref().map(noise_estimate).transpose()?;
        Ok(Choices {
            noise_estimate,
            k_ratio: args.k_ratio,
            eta_ratio: args.eta_ratio,
            epochs: training.epochs,
            seed: training.seed,
            batch_size: training.batch_size,
            learning_rate: training.lr,
            decay_start: training.decay_start,
            train_limit: data.train_limit,
            test_limit: args.test_limit,
            forget_rate: settings.forget_rate,
            co_lambda: settings.co_lambda,
            init_epoch: settings.init_epoch,
            precision: training.precision,
            ..Choices::new(data.dataset(), data.noise().0, data.noise().1, method)
        })
    }

    /// The validated run these flags make for `method`.
    pub fn config(&self, method: Method) -> Result<TrainConfig> {
        self.choices(method)?.build()
    }
}
