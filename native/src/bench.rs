//! `taks bench`: epoch time per method and device, and the time ratio against
//! `standard` (the paper's "x T" column); on a GPU, the kernel launches per training
//! step and per scoring chunk; with `--forward-rates`, the samples per second of a
//! training step's forward pass and of the scoring pass ([`ForwardRates`]); with
//! `--torch`, the same TAkS epoch as a tight PyTorch loop ([`crate::bench_torch`]) and
//! taks's time over it; with `--clock`, every op's GPU time in a step and a scoring chunk
//! ([`crate::bench_clock`]). `--generated` and `--model` time any network at any image size
//! ([`crate::bench_data`]).
//!
//! An epoch is timed as the training loop reports it: exactly the work the method
//! needs (its selection and the scoring pass it takes, if any, and the training), never
//! test evaluation; F-correction's first stage runs before the timed epochs. All methods
//! are timed in one process, one after the other, so the ratios compare like with like.
//! The first `--warmup` epochs of each run are not counted (shader compilation and
//! autotuning on wgpu, allocator growth everywhere); the first epoch's time is shown
//! apart, since it is what a short run pays (with autotune results kept between
//! processes, a second process's first epoch is close to the warm ones). Launches are
//! counted and the forward passes timed after the timed epochs, so neither costs the
//! timings anything.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use taks_core::data::DatasetKind;
use taks_core::data::Split;
use taks_core::methods::Method;
use taks_core::settings::TrainConfig;
use taks_core::train::{Quietly, Trainer};

use crate::bench_report::{self, DeviceRows, Timed, fastest, mean};
use crate::bench_torch::TorchEpochs;
use taks_core::settings::flags::{DeviceChoice, RunArgs};

use crate::device::{self, Chosen};
use crate::picks::MethodPick;
use crate::{bench_torch, folder_data, picks};

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
    /// Devices to time on, comma-separated, one table each. Default: --device's, else
    /// cpu.
    #[arg(long, value_enum, value_delimiter = ',')]
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
    #[arg(long, value_name = "NxCxHxW", conflicts_with = "data")]
    pub generated: Option<crate::bench_data::Generated>,
    /// Network to time. Default: the dataset's (the MLP for 28x28 grey, else the CNN).
    #[arg(long, value_enum)]
    pub model: Option<taks_core::nn::Architecture>,
    /// Samples per scoring forward pass. Default: 4096. ResNet-18 at 224x224 needs fewer,
    /// so that one activation fits a GPU buffer (e.g. 256).
    #[arg(long, value_name = "N")]
    pub eval_batch: Option<usize>,
    /// Also time, after the epochs, a training step's forward pass and the scoring pass
    /// in samples per second (on up to 8,192 training samples, three times each).
    #[arg(long)]
    pub forward_rates: bool,
    /// Also time, after the epochs, every kernel of a training step and of a scoring
    /// chunk on the GPU, by op and layer shape, with the TFLOP/s and GB/s each op's floor
    /// gives (device timestamps where the adapter has them). Needs gpu among --devices.
    #[arg(long)]
    pub clock: bool,
}

impl BenchArgs {
    /// The devices to time on: `--devices`, else `--device` alone, else the CPU (a
    /// benchmark says which device it timed; `auto` would leave that to the machine).
    fn devices(&self) -> Result<Vec<DeviceChoice>> {
        Ok(match (self.run.training.device, &self.devices[..]) {
            (None, []) => vec![DeviceChoice::Cpu],
            (Some(one), []) => vec![one],
            (None, many) => many.to_vec(),
            (Some(one), [same]) if one == *same => vec![one],
            (Some(_), _) => bail!("--device and --devices name different devices: give one"),
        })
    }
}

/// The run `method` is timed as: the run flags, the network and scoring chunk named,
/// and the warm-up and timed epochs (3 timed by default).
pub fn config(args: &BenchArgs, method: Method) -> Result<TrainConfig> {
    let mut run_args = args.run.clone();
    run_args.training.epochs = Some(args.warmup + args.run.training.epochs.unwrap_or(3));
    let mut choices = run_args.choices(method)?;
    choices.architecture = args.model;
    choices.eval_batch_size = args.eval_batch;
    Ok(choices.build()?)
}

pub fn run(mut args: BenchArgs) -> Result<()> {
    args.devices = args.devices()?;
    let timed = args.run.training.epochs.unwrap_or(3);
    if timed == 0 {
        bail!("--epochs must be at least 1 (the timed epochs)");
    }
    if args.clock && !args.devices.contains(&DeviceChoice::Gpu) {
        bail!("--clock times GPU kernels: add gpu to --devices");
    }
    let methods = picks::methods(&args.methods);
    let configs = configs(&args, &methods)?;
    let torch = torch_config(&args, &methods, &configs[0])?;
    let split = split(&args, &configs[0])?;
    let mut gpu = None;
    let mut tables = Vec::new();
    for &choice in &args.devices {
        let chosen = match (choice, gpu.take()) {
            (DeviceChoice::Gpu, Some(g)) => g,
            _ => device::choose(choice)?,
        };
        let rows = time_device(&args, choice, &chosen, &configs, &split)?;
        let torch = match (&args.torch, &torch) {
            (Some(python), Some(config)) => {
                time_torch(python, choice, &chosen, config, &split, args.warmup, timed)?
            }
            _ => Vec::new(),
        };
        tables.push(DeviceRows { torch, ..rows });
        if choice == DeviceChoice::Gpu {
            gpu = Some(chosen);
        }
    }
    let precision = configs[0].precision.name();
    bench_report::print(&tables, split.train.shape, precision, args.forward_rates);
    Ok(())
}

/// Every method's settings, validated before anything is loaded or timed; for a user's
/// folder (`--data`), its network and input chosen once from its images, as `train
/// --data` chooses them, for every method.
fn configs(args: &BenchArgs, methods: &[Method]) -> Result<Vec<TrainConfig>> {
    let mut configs = methods
        .iter()
        .map(|&m| config(args, m))
        .collect::<Result<Vec<_>>>()?;
    if args.generated.is_some() || configs[0].dataset != DatasetKind::Folder {
        return Ok(configs);
    }
    if let Some(model) = args.model {
        bail!(
            "--model {}: a folder's network is chosen from its images, as for taks train --data",
            model.name()
        );
    }
    let chosen = folder_data::chosen(configs[0].clone(), args.run.data.data_dir().as_deref())?;
    for config in &mut configs {
        config.architecture = chosen.architecture;
        config.folder_input = chosen.folder_input;
    }
    Ok(configs)
}

/// TAkS's settings for the PyTorch loop (`--torch`), on `first`'s network, once the
/// Python was checked on every device named.
fn torch_config(
    args: &BenchArgs,
    methods: &[Method],
    first: &TrainConfig,
) -> Result<Option<TrainConfig>> {
    let Some(python) = &args.torch else {
        return Ok(None);
    };
    if !methods.contains(&Method::TAKS) {
        bail!("--torch compares the TAkS epoch: add taks to --methods");
    }
    if args.devices.contains(&DeviceChoice::Auto) {
        bail!("--torch needs the device named: cpu or gpu, not auto");
    }
    let mut config = config(args, Method::TAKS)?;
    config.architecture = first.architecture;
    config.folder_input = first.folder_input;
    for &device in &args.devices {
        bench_torch::check(python, device == DeviceChoice::Gpu)?;
    }
    Ok(Some(config))
}

/// The samples timed: generated ones (`--generated`) or the data the flags name.
fn split(args: &BenchArgs, first: &TrainConfig) -> Result<Split> {
    if let Some(generated) = args.generated {
        return Ok(generated.split(first.seed));
    }
    let data = folder_data::load(first, args.run.data.data_dir().as_deref())?;
    if let Some(note) = data.note {
        eprintln!("{note}");
    }
    Ok(data.split)
}

/// Every method timed on one device, one after the other.
fn time_device(
    args: &BenchArgs,
    choice: DeviceChoice,
    chosen: &Chosen,
    configs: &[TrainConfig],
    split: &Split,
) -> Result<DeviceRows> {
    // Before anything is printed: a precision the device cannot run is one line.
    configs[0].precision.check(&chosen.device)?;
    eprintln!("device: {}", chosen.description);
    let [c, h, w] = split.train.shape;
    eprintln!(
        "network: {} on {c}x{h}x{w} samples",
        configs[0].architecture.name()
    );
    let results = configs
        .iter()
        .map(|config| time_method(args, choice, chosen, config, split))
        .collect::<Result<Vec<_>>>()?;
    Ok(DeviceRows {
        device_name: choice
            .to_possible_value()
            .expect("every device choice has a name")
            .get_name()
            .to_string(),
        results,
        torch: Vec::new(),
    })
}

/// One method's run: its epochs to the end, then (outside the timings) its launches,
/// forward rates and per-op clock where asked for.
fn time_method(
    args: &BenchArgs,
    choice: DeviceChoice,
    chosen: &Chosen,
    config: &TrainConfig,
    split: &Split,
) -> Result<Timed> {
    let mut trainer = Trainer::new(config.clone(), split.clone(), &chosen.device)?;
    pollster::block_on(trainer.run_first_stage())?;
    let mut history = Vec::new();
    pollster::block_on(trainer.run_to_end(&mut history, &mut Quietly))?;
    let seconds: Vec<f64> = history
        .iter()
        .filter(|m| m.epoch > args.warmup)
        .map(|m| m.epoch_seconds)
        .collect();
    let launches = match choice {
        DeviceChoice::Cpu => None,
        _ => Some(pollster::block_on(trainer.count_launches())?),
    };
    let rates = match args.forward_rates {
        true => Some(pollster::block_on(trainer.forward_rates())?),
        false => None,
    };
    // Twice, the second kept: the first meets kernels not compiled or tuned yet.
    let clocks = match (args.clock, choice) {
        (true, DeviceChoice::Gpu) => {
            pollster::block_on(trainer.clock_ops())?;
            Some(pollster::block_on(trainer.clock_ops())?)
        }
        _ => None,
    };
    Ok(Timed {
        method: config.method,
        n: trainer.train_len(),
        k: trainer.k(),
        first: history
            .iter()
            .find(|m| m.epoch == 1)
            .map_or(f64::NAN, |m| m.epoch_seconds),
        mean: mean(&seconds),
        min: fastest(&seconds),
        accuracy: history.last().map_or(f64::NAN, |m| m.test_accuracy),
        launches,
        rates,
        clocks,
    })
}

/// The same TAkS epoch as a tight PyTorch loop on the same device: on CUDA like for
/// like first (full FP32, or autocast to the run's type), then PyTorch's defaults (TF32).
fn time_torch(
    python: &Path,
    choice: DeviceChoice,
    chosen: &Chosen,
    config: &TrainConfig,
    split: &Split,
    warmup: usize,
    timed: usize,
) -> Result<Vec<TorchEpochs>> {
    let trainer = Trainer::new(config.clone(), split.clone(), &chosen.device)?;
    let (shape, cuda) = (split.train.shape, choice == DeviceChoice::Gpu);
    bench_torch::arithmetics(config.precision, cuda)
        .into_iter()
        .map(|arithmetic| {
            bench_torch::run(python, &trainer, shape, cuda, arithmetic, warmup, timed)
        })
        .collect()
}
