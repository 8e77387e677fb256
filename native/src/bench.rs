//! `taks bench`: epoch time per method and device, and the time ratio against
//! `standard` (the paper's "x T" column).
//!
//! An epoch is timed as the training loop reports it: exactly the work the method
//! needs (its selection and the scoring pass it takes, if any, and the training), never
//! test evaluation; F-correction's first stage runs before the timed epochs. All methods
//! are timed in one process, one after the other, so the ratios compare like with like.
//! The first `--warmup` epochs of each run are not counted (shader compilation and
//! autotuning on wgpu, allocator growth everywhere).

use anyhow::{Result, bail};
use clap::ValueEnum;
use taks_core::train::Trainer;

use crate::cli::BenchArgs;
use crate::device::{self, DeviceChoice};
use crate::{config, picks};

pub fn run(args: BenchArgs) -> Result<()> {
    let timed = args.run.epochs.unwrap_or(3);
    if timed == 0 {
        bail!("--epochs must be at least 1 (the timed epochs)");
    }
    let methods = picks::methods(&args.methods);
    // Every method's settings, validated before anything is loaded or timed.
    let mut run_args = args.run.clone();
    run_args.epochs = Some(args.warmup + timed);
    let configs = methods
        .iter()
        .map(|&m| config::build(&run_args, m, args.warmup + timed))
        .collect::<Result<Vec<_>>>()?;
    let split = args.run.dataset.load(args.run.data_dir.as_deref())?;
    let mut gpu = None;
    println!("| device | method | n | k | mean epoch s | min epoch s | x T (vs standard) |");
    println!("|---|---|---|---|---|---|---|");
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
            let mean = seconds.iter().sum::<f64>() / seconds.len() as f64;
            let min = seconds.iter().cloned().fold(f64::INFINITY, f64::min);
            results.push((config.method, trainer.train_len(), trainer.k(), mean, min));
        }
        let standard = results
            .iter()
            .find(|r| r.0 == taks_core::methods::Method::Standard)
            .map(|r| r.3);
        for (method, n, k, mean, min) in &results {
            let ratio = standard
                .map(|s| format!("{:.2}", mean / s))
                .unwrap_or_else(|| "-".into());
            println!(
                "| {} | {} | {n} | {k} | {mean:.3} | {min:.3} | {ratio} |",
                device_name,
                method.name()
            );
        }
        if choice == DeviceChoice::Gpu {
            gpu = Some(chosen);
        }
    }
    Ok(())
}
