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

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use taks_core::config::TrainConfig;
use taks_core::data::DatasetKind;
use taks_core::methods::Method;
use taks_core::train::{ForwardRates, LaunchCounts, OpClocks, Quietly, Trainer};

use crate::device::{self, DeviceChoice};
use crate::picks::MethodPick;
use crate::run_args::RunArgs;
use crate::{bench_torch, folder_data, picks, run_args};

/// One timed run.
struct Timed {
    method: Method,
    n: usize,
    k: usize,
    /// The first epoch of the process (compilation and tuning included).
    first: f64,
    mean: f64,
    min: f64,
    /// Test accuracy after the last epoch: what a change of arithmetic (`--precision`)
    /// must keep.
    accuracy: f64,
    launches: Option<LaunchCounts>,
    rates: Option<ForwardRates>,
    clocks: Option<OpClocks>,
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
    let mut choices = run_args::choices(&run_args, method)?;
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
    // Every method's settings, validated before anything is loaded or timed.
    let mut configs = methods
        .iter()
        .map(|&m| config(&args, m))
        .collect::<Result<Vec<_>>>()?;
    // A user's folder (`--data`): its network and input chosen once from its images, as
    // `train --data` chooses them, for every method.
    let dir = args.run.data.data_dir();
    let folder = args.generated.is_none() && configs[0].dataset == DatasetKind::Folder;
    if folder {
        if let Some(model) = args.model {
            bail!(
                "--model {}: a folder's network is chosen from its images, as for taks train --data",
                model.name()
            );
        }
        let chosen = folder_data::chosen(configs[0].clone(), dir.as_deref())?;
        for config in &mut configs {
            config.architecture = chosen.architecture;
            config.folder_input = chosen.folder_input;
        }
    }
    let torch_config = match &args.torch {
        Some(_) if !methods.contains(&Method::TAKS) => {
            bail!("--torch compares the TAkS epoch: add taks to --methods")
        }
        Some(_) if args.devices.contains(&DeviceChoice::Auto) => {
            bail!("--torch needs the device named: cpu or gpu, not auto")
        }
        Some(python) => {
            let mut config = config(&args, Method::TAKS)?;
            config.architecture = configs[0].architecture;
            config.folder_input = configs[0].folder_input;
            for &device in &args.devices {
                bench_torch::check(python, device == DeviceChoice::Gpu)?;
            }
            Some(config)
        }
        None => None,
    };
    let split = match args.generated {
        Some(generated) => generated.split(configs[0].seed),
        None => {
            let data = folder_data::load(&configs[0], dir.as_deref())?;
            if let Some(note) = data.note {
                eprintln!("{note}");
            }
            data.split
        }
    };
    let mut gpu = None;
    let mut tables = Vec::new();
    for &choice in &args.devices {
        let chosen = match (choice, gpu.take()) {
            (DeviceChoice::Gpu, Some(g)) => g,
            _ => device::choose(choice)?,
        };
        let device_name = choice
            .to_possible_value()
            .expect("every device choice has a name")
            .get_name()
            .to_string();
        // Before anything is printed: a precision the device cannot run is one line.
        configs[0].precision.check(&chosen.device)?;
        eprintln!("device: {}", chosen.description);
        let [c, h, w] = split.train.shape;
        eprintln!(
            "network: {} on {c}x{h}x{w} samples",
            configs[0].architecture.name()
        );
        let mut results = Vec::new();
        for config in &configs {
            let mut trainer = Trainer::new(config.clone(), split.clone(), &chosen.device)?;
            pollster::block_on(trainer.run_first_stage())?;
            let mut history = Vec::new();
            pollster::block_on(trainer.run_to_end(&mut history, &mut Quietly))?;
            let accuracy = history.last().map_or(f64::NAN, |m| m.test_accuracy);
            let first = history
                .iter()
                .find(|m| m.epoch == 1)
                .map_or(f64::NAN, |m| m.epoch_seconds);
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
            results.push(Timed {
                method: config.method,
                n: trainer.train_len(),
                k: trainer.k(),
                first,
                mean: mean(&seconds),
                min: fastest(&seconds),
                accuracy,
                launches,
                rates,
                clocks,
            });
        }
        // On CUDA: like for like first (full FP32, or autocast to the run's type), then
        // PyTorch's defaults (TF32).
        let mut torch = Vec::new();
        if let (Some(python), Some(config)) = (&args.torch, &torch_config) {
            let trainer = Trainer::new(config.clone(), split.clone(), &chosen.device)?;
            let (shape, cuda) = (split.train.shape, choice == DeviceChoice::Gpu);
            for arithmetic in bench_torch::arithmetics(config.precision, cuda) {
                torch.push(bench_torch::run(
                    python,
                    &trainer,
                    shape,
                    cuda,
                    arithmetic,
                    args.warmup,
                    timed,
                )?);
            }
        }
        tables.push((device_name, results, torch));
        if choice == DeviceChoice::Gpu {
            gpu = Some(chosen);
        }
    }

    let shape = split.train.shape;
    println!(
        "| device | method | n | k | first epoch s | mean epoch s | min epoch s | x T (vs standard) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (device_name, results, torch) in &tables {
        let standard = results
            .iter()
            .find(|r| r.method == Method::STANDARD)
            .map(|r| r.mean);
        for r in results {
            let ratio = standard
                .map(|s| format!("{:.2}", r.mean / s))
                .unwrap_or_else(|| "-".into());
            println!(
                "| {device_name} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {ratio} |",
                r.method.name(),
                r.n,
                r.k,
                r.first,
                r.mean,
                r.min
            );
        }
        for t in torch {
            let min = fastest(&t.epoch_seconds);
            println!(
                "| {device_name} | PyTorch {} loop ({}) on {} (train {:.3} + score {:.3}) | {} | {} | - | {:.3} | {min:.3} | - |",
                t.torch,
                t.arithmetic(),
                t.device,
                mean(&t.train_seconds),
                mean(&t.score_seconds),
                t.n,
                t.k,
                mean(&t.epoch_seconds),
            );
        }
    }
    let accuracies: Vec<String> = tables
        .iter()
        .flat_map(|(d, results, _)| results.iter().map(move |r| (d, r)))
        .map(|(d, r)| format!("{d} {} {:.2}%", r.method.name(), 100.0 * r.accuracy))
        .collect();
    println!(
        "\ntest accuracy after the last epoch ({}): {}",
        configs[0].precision.name(),
        accuracies.join(", ")
    );
    for (device_name, results, torch) in &tables {
        let Some(taks) = results.iter().find(|r| r.method == Method::TAKS) else {
            continue;
        };
        println!();
        for t in torch {
            let torch_mean = mean(&t.epoch_seconds);
            println!(
                "taks / PyTorch ({}), TAkS epoch on {device_name}: {:.2} ({:.3} s / {torch_mean:.3} s)",
                t.arithmetic(),
                taks.mean / torch_mean,
                taks.mean
            );
        }
        // An epoch is linear in n at a fixed k-ratio (training k samples, scoring all n);
        // at 224x224 colour this is the paper's largest run, Clothing1M (a million photos,
        // ResNet-18, 15 epochs).
        let per_million = taks.mean * 1e6 / taks.n as f64;
        let clothing = if shape == [3, 224, 224] {
            format!(
                " (the paper's Clothing1M run, 15 epochs: {:.1} h)",
                per_million * 15.0 / 3600.0
            )
        } else {
            String::new()
        };
        println!(
            "TAkS epoch per million samples of this shape on {device_name}: {per_million:.0} s{clothing}"
        );
    }
    let counted: Vec<_> = tables
        .iter()
        .flat_map(|(d, results, _)| results.iter().map(move |r| (d, r)))
        .filter_map(|(d, r)| r.launches.as_ref().map(|l| (d, r.method, l)))
        .collect();
    if !counted.is_empty() {
        println!("\n| device | method | kernel launches per training step | per scoring chunk |");
        println!("|---|---|---|---|");
        for (device_name, method, l) in &counted {
            println!(
                "| {device_name} | {} | {} | {} |",
                method.name(),
                l.training_step,
                l.scoring_chunk
            );
        }
        // What a step and a scoring chunk are made of: the kernels launched most.
        let most = |kernels: &[(String, usize)]| {
            kernels
                .iter()
                .take(12)
                .map(|(name, n)| format!("{name} x{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (device_name, method, l) in &counted {
            println!(
                "\nmost launched kernels of a {} training step on {device_name}: {}",
                method.name(),
                most(&l.training_step_kernels)
            );
            println!(
                "most launched kernels of a {} scoring chunk on {device_name}: {}",
                method.name(),
                most(&l.scoring_chunk_kernels)
            );
        }
    }
    // The scoring pass against a training step's forward pass, per sample.
    if args.forward_rates {
        println!(
            "\n| device | method | training step's forward, samples/s | scoring pass, samples/s | scoring / training |"
        );
        println!("|---|---|---|---|---|");
        for (device_name, results, _) in &tables {
            for (r, rates) in results.iter().filter_map(|r| Some((r, r.rates?))) {
                println!(
                    "| {device_name} | {} | {:.0} | {:.0} | {:.2} |",
                    r.method.name(),
                    rates.training,
                    rates.scoring,
                    rates.scoring / rates.training
                );
            }
        }
    }
    for (device_name, results, _) in &tables {
        for r in results {
            if let Some(clocks) = &r.clocks {
                crate::bench_clock::print(device_name, r.method.name(), clocks);
            }
        }
    }
    // On a GPU under TAKS_GPU_CONV=auto: which forward kernel each convolution shape met
    // in this process measured faster.
    let measured = taks_core::ops::conv::measured_shapes();
    if !measured.is_empty() {
        println!(
            "\n| convolution shape (input -> channels, kernel/stride) | burn's kernel ms | im2col + matmul ms | implicit ms | runs |"
        );
        println!("|---|---|---|---|---|");
        let ms = |s: f64| match s.is_finite() {
            true => format!("{:.3}", s * 1e3),
            false => "-".to_string(),
        };
        for (shape, m) in measured {
            let earlier = if m.earlier {
                " (an earlier run's timing)"
            } else {
                ""
            };
            println!(
                "| {shape} | {} | {} | {} | {}{earlier} |",
                ms(m.direct),
                ms(m.im2col),
                ms(m.implicit),
                m.fastest().name()
            );
        }
    }
    Ok(())
}

/// The mean of the timed epochs' seconds, for taks's rows and PyTorch's alike (the
/// `--torch` test, handing known times, holds both rows' figures to it).
fn mean(seconds: &[f64]) -> f64 {
    seconds.iter().sum::<f64>() / seconds.len() as f64
}

/// The fastest of the timed epochs.
fn fastest(seconds: &[f64]) -> f64 {
    seconds.iter().cloned().fold(f64::INFINITY, f64::min)
}
