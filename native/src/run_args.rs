//! The flags that define a run, shared by `train`, `bench` and `tune`, and the one
//! validated [`TrainConfig`] they become through core's one way of building a run
//! ([`Choices`]): a flag not given stays `None` and gets the paper's value there.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use taks_core::choices::Choices;
use taks_core::config::TrainConfig;
use taks_core::data::DatasetKind;
use taks_core::methods::Method;
use taks_core::noise::NoiseKind;

use crate::device::DeviceChoice;

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
    pub precision: Option<taks_core::precision::Precision>,
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

/// The choices of `args` for `method`.
pub fn choices(args: &RunArgs, method: Method) -> Result<Choices> {
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

pub fn build(args: &RunArgs, method: Method) -> Result<TrainConfig> {
    Ok(choices(args, method)?.build()?)
}

/// gamma from `--gamma`: a number, or the estimated noise rate of the audit whose
/// folder or summary.json it names.
pub fn noise_estimate(given: &str) -> Result<f64> {
    if let Ok(rate) = given.parse::<f64>() {
        return Ok(rate);
    }
    let path = std::path::Path::new(given);
    let summary = match path.is_dir() {
        true => path.join("summary.json"),
        false => path.to_path_buf(),
    };
    if !summary.is_file() {
        bail!("--gamma {given}: neither a number nor an audit's folder or summary.json");
    }
    let text = std::fs::read_to_string(&summary)
        .with_context(|| format!("cannot read {}", summary.display()))?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", summary.display()))?;
    doc["estimated_noise_rate"].as_f64().with_context(|| {
        format!(
            "{}: no estimated_noise_rate (not the summary.json of taks audit)",
            summary.display()
        )
    })
}

/// What a run started from pretrained weights leaves to the person (`--init`).
pub struct Given {
    /// `--lr` or `--decay-start` was given: the usual linear decay, not the steps.
    pub schedule: bool,
    /// `--epochs` was given.
    pub epochs: bool,
}

/// Set `config` up to fine-tune the ResNet in the weights file `path` (`--init`), read
/// here: see [`fine_tune`]. Returns the file's tensors.
pub fn start_from(
    config: &mut TrainConfig,
    path: &std::path::Path,
    given: Given,
) -> Result<taks_core::formats::state_dict::StateDict> {
    let state = taks_core::nn::pretrained::read(path)?;
    fine_tune(config, path, &state, given)?;
    Ok(state)
}

/// Set `config` up to fine-tune the ResNet whose tensors `state` the file `path` holds:
/// the file's depth, its path recorded (so a resumed run prepares images the same way)
/// and, unless `given` says otherwise, the paper's Clothing1M step schedule (its
/// appendix: 15 epochs, a third each at 8e-4, 5e-4 and 5e-5). One line names the file
/// when it is not a ResNet this config can take.
pub fn fine_tune(
    config: &mut TrainConfig,
    path: &std::path::Path,
    state: &taks_core::formats::state_dict::StateDict,
    given: Given,
) -> Result<()> {
    use taks_core::nn::{Architecture, pretrained};
    config.architecture = match pretrained::depth_of(state) {
        Some(Ok(architecture)) => architecture,
        _ => Architecture::ResNet18,
    };
    config.init = Some(taks_core::absolute(path));
    pretrained::check_depth(state, config.architecture, path)?;
    if !given.schedule {
        if !given.epochs {
            config.epochs = 15;
        }
        config.learning_rate = 8e-4;
        config.lr_steps = Some(config.clothing1m_steps());
    }
    config.validate()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--gamma` takes a number, or the estimate of an audit named by its folder or its
    /// summary.json; anything else is refused with what it is not.
    #[test]
    fn gamma_is_a_number_or_an_audits_estimate() {
        assert_eq!(noise_estimate("0.3").unwrap(), 0.3);
        let dir = std::env::temp_dir().join(format!("taks-gamma-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("summary.json"),
            r#"{"samples": 10, "estimated_noise_rate": 0.215}"#,
        )
        .unwrap();
        assert_eq!(noise_estimate(dir.to_str().unwrap()).unwrap(), 0.215);
        let file = dir.join("summary.json");
        assert_eq!(noise_estimate(file.to_str().unwrap()).unwrap(), 0.215);
        std::fs::write(&file, r#"{"test_accuracy": 0.9}"#).unwrap();
        let err = noise_estimate(file.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no estimated_noise_rate"), "{err}");
        let err = noise_estimate("half").unwrap_err().to_string();
        assert!(err.contains("neither a number nor"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
