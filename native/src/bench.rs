//! `taks bench`: epoch time per method and device, and the time ratio against
//! `standard` (the paper's "x T" column); on a GPU, the kernel launches per training
//! step and per scoring chunk; with `--torch`, the same TAkS epoch as a tight PyTorch
//! loop ([`crate::bench_torch`]) and taks's time over it. `--generated` and `--model`
//! time any network at any image size ([`crate::bench_data`]).
//!
//! An epoch is timed as the training loop reports it: exactly the work the method
//! needs (its selection and the scoring pass it takes, if any, and the training), never
//! test evaluation; F-correction's first stage runs before the timed epochs. All methods
//! are timed in one process, one after the other, so the ratios compare like with like.
//! The first `--warmup` epochs of each run are not counted (shader compilation and
//! autotuning on wgpu, allocator growth everywhere). Launches are counted after the
//! timed epochs, so counting costs the timings nothing.

use anyhow::{Result, bail};
use clap::ValueEnum;
use taks_core::methods::Method;
use taks_core::train::{LaunchCounts, Trainer};

use crate::cli::BenchArgs;
use crate::device::{self, DeviceChoice};
use crate::{bench_torch, config, picks};

/// One timed run.
struct Timed {
    method: Method,
    n: usize,
    k: usize,
    mean: f64,
    min: f64,
    launches: Option<LaunchCounts>,
}

pub fn run(args: BenchArgs) -> Result<()> {
    let timed = args.run.epochs.unwrap_or(3);
    if timed == 0 {
        bail!("--epochs must be at least 1 (the timed epochs)");
    }
    let methods = picks::methods(&args.methods);
    // Every method's settings, validated before anything is loaded or timed.
    let mut run_args = args.run.clone();
    run_args.epochs = Some(args.warmup + timed);
    if args.eval_batch == Some(0) {
        bail!("--eval-batch must be at least 1");
    }
    let build = |method: Method| -> Result<_> {
        let mut config = config::build(&run_args, method, args.warmup + timed)?;
        config.architecture = args.model.unwrap_or(config.architecture);
        config.eval_batch_size = args.eval_batch.unwrap_or(config.eval_batch_size);
        config.validate()?;
        Ok(config)
    };
    let configs = methods.iter().map(|&m| build(m)).collect::<Result<Vec<_>>>()?;
    let torch_config = match &args.torch {
        Some(_) if !methods.contains(&Method::Taks) => {
            bail!("--torch compares the TAkS epoch: add taks to --methods")
        }
        Some(_) if args.devices.contains(&DeviceChoice::Auto) => {
            bail!("--torch needs the device named: cpu or gpu, not auto")
        }
        Some(python) => {
            let config = build(Method::Taks)?;
            for &device in &args.devices {
                bench_torch::check(python, device == DeviceChoice::Gpu)?;
            }
            Some(config)
        }
        None => None,
    };
    let split = match args.generated {
        Some(generated) => generated.split(args.run.seed),
        None => args.run.dataset.load(args.run.data_dir.as_deref())?,
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
        eprintln!("device: {}", chosen.description);
        let mut results = Vec::new();
        for config in &configs {
            let mut trainer = Trainer::new(config.clone(), split.clone(), &chosen.device)?;
            pollster::block_on(trainer.prepare())?;
            let mut seconds = Vec::new();
            while !trainer.is_done() {
                let m = pollster::block_on(trainer.step())?;
                if m.epoch > args.warmup {
                    seconds.push(m.epoch_seconds);
                }
            }
            let launches = match choice {
                DeviceChoice::Cpu => None,
                _ => Some(pollster::block_on(trainer.count_launches())?),
            };
            results.push(Timed {
                method: config.method,
                n: trainer.train_len(),
                k: trainer.k(),
                mean: seconds.iter().sum::<f64>() / seconds.len() as f64,
                min: seconds.iter().cloned().fold(f64::INFINITY, f64::min),
                launches,
            });
        }
        let torch = match (&args.torch, &torch_config) {
            (Some(python), Some(config)) => {
                let trainer = Trainer::new(config.clone(), split.clone(), &chosen.device)?;
                let (shape, cuda) = (split.train.shape, choice == DeviceChoice::Gpu);
                Some(bench_torch::run(
                    python,
                    &trainer,
                    shape,
                    cuda,
                    args.warmup,
                    timed,
                )?)
            }
            _ => None,
        };
        tables.push((device_name, results, torch));
        if choice == DeviceChoice::Gpu {
            gpu = Some(chosen);
        }
    }

    println!("| device | method | n | k | mean epoch s | min epoch s | x T (vs standard) |");
    println!("|---|---|---|---|---|---|---|");
    for (device_name, results, torch) in &tables {
        let standard = results
            .iter()
            .find(|r| r.method == Method::Standard)
            .map(|r| r.mean);
        for r in results {
            let ratio = standard
                .map(|s| format!("{:.2}", r.mean / s))
                .unwrap_or_else(|| "-".into());
            println!(
                "| {device_name} | {} | {} | {} | {:.3} | {:.3} | {ratio} |",
                r.method.name(),
                r.n,
                r.k,
                r.mean,
                r.min
            );
        }
        if let Some(t) = torch {
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let min = t
                .epoch_seconds
                .iter()
                .cloned()
                .fold(f64::INFINITY, f64::min);
            println!(
                "| {device_name} | PyTorch {} loop on {} (train {:.3} + score {:.3}) | {} | {} | {:.3} | {min:.3} | - |",
                t.torch,
                t.device,
                mean(&t.train_seconds),
                mean(&t.score_seconds),
                t.n,
                t.k,
                mean(&t.epoch_seconds),
            );
        }
    }
    for (device_name, results, torch) in &tables {
        let (Some(t), Some(taks)) = (torch, results.iter().find(|r| r.method == Method::Taks))
        else {
            continue;
        };
        let torch_mean = t.epoch_seconds.iter().sum::<f64>() / t.epoch_seconds.len() as f64;
        println!(
            "\ntaks / PyTorch, TAkS epoch on {device_name}: {:.2} ({:.3} s / {torch_mean:.3} s)",
            taks.mean / torch_mean,
            taks.mean
        );
    }
    let counted: Vec<_> = tables
        .iter()
        .flat_map(|(d, results, _)| results.iter().map(move |r| (d, r)))
        .filter_map(|(d, r)| r.launches.map(|l| (d, r.method, l)))
        .collect();
    if !counted.is_empty() {
        println!("\n| device | method | kernel launches per training step | per scoring chunk |");
        println!("|---|---|---|---|");
        for (device_name, method, l) in counted {
            println!(
                "| {device_name} | {} | {} | {} |",
                method.name(),
                l.training_step,
                l.scoring_chunk
            );
        }
    }
    Ok(())
}
