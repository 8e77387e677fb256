//! `taks bench-select`: the cost of one selection step for large n, on each engine.
//!
//! Compares (1) the CPU reference (introselect on the host), (2) the WGSL kernels
//! (radix select + compaction on the wgpu device) and (3) a sort-based selection with
//! burn's own tensor ops (`argsort`, then the first k), on flex and on wgpu. Each figure
//! is the median wall time of `--repeats` runs after one warm-up, from launch to a
//! completed read of one value that depends on the result, so queued GPU work is counted.

use anyhow::{Result, bail};
use burn::tensor::{Device, Tensor, TensorData};
use taks_core::gpu;
use taks_core::rng::SplitMix64;
use taks_core::selection::cpu_reference as reference;
use taks_core::selection::{self, RiskMode, RiskParams};
use web_time::Instant;

use taks_core::settings::flags::DeviceChoice;

use crate::device;

#[derive(clap::Args, Debug)]
pub struct BenchSelectArgs {
    /// Problem sizes n (comma-separated).
    #[arg(long, default_value = "60000,1000000,10000000", value_delimiter = ',')]
    pub sizes: Vec<usize>,
    /// k as a fraction of n.
    #[arg(long, default_value_t = 0.35)]
    pub k_ratio: f64,
    /// Timed repetitions per figure (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Devices (comma-separated).
    #[arg(long, value_enum, default_value = "cpu,gpu", value_delimiter = ',')]
    pub devices: Vec<DeviceChoice>,
    /// Skip the sort-based baseline above this n (burn's sort is slow on some backends).
    #[arg(long, default_value_t = 10_000_000)]
    pub sort_max: usize,
}

/// The largest n: 100 million samples need about 5 GB of host and device memory here.
const MAX_SIZE: usize = 100_000_000;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn time(repeats: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..repeats)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

/// Block until `t` and everything queued before it is computed: wait for the device,
/// then read one element.
fn settle(t: Tensor<1>) {
    t.device().sync().expect("device sync");
    let _ = t.narrow(0, 0, 1).into_data();
}

pub fn run(args: BenchSelectArgs) -> Result<()> {
    if args.repeats == 0 {
        bail!("--repeats must be at least 1 (the median of that many timings is reported)");
    }
    if !(args.k_ratio > 0.0 && args.k_ratio <= 1.0) {
        bail!("--k-ratio {} must be in (0, 1]", args.k_ratio);
    }
    if let Some(&n) = args
        .sizes
        .iter()
        .find(|&&n| (n as f64 * args.k_ratio) < 1.0)
    {
        bail!(
            "--sizes {n} with --k-ratio {} selects nothing: every size must give k >= 1",
            args.k_ratio
        );
    }
    // The benchmark holds n values and n x 10 logits per device: cap it well before
    // that exhausts memory.
    if let Some(&n) = args.sizes.iter().find(|&&n| n > MAX_SIZE) {
        bail!("--sizes {n} is above the largest size this benchmark runs ({MAX_SIZE})");
    }
    println!("| n | k | engine | device | ms (median) |");
    println!("|---|---|---|---|---|");
    let devices = args
        .devices
        .iter()
        .map(|&choice| match choice {
            DeviceChoice::Cpu => Ok((Device::flex(), "flex".to_string())),
            other => device::choose(other).map(|c| (c.device, c.description)),
        })
        .collect::<Result<Vec<_>>>()?;
    let mut rng = SplitMix64::new(1);
    for &n in &args.sizes {
        let k = (n as f64 * args.k_ratio) as usize;
        // Cumulative risks of a long run: sums of values in [0, 1], with many ties.
        let values: Vec<f32> = (0..n).map(|_| (rng.below(4000) as f32) * 0.05).collect();
        let ms = time(args.repeats, || {
            std::hint::black_box(reference::k_smallest(&values, k));
        });
        println!("| {n} | {k} | CPU reference (host introselect) | host | {ms:.2} |");
        for (device, label) in &devices {
            let objective = Tensor::<1>::from_data(TensorData::new(values.clone(), [n]), device);
            if gpu::supports(&objective) {
                let ms = time(args.repeats, || {
                    let s = selection::select_k_smallest(&objective, k).expect("wgpu");
                    settle(s.mask);
                });
                println!("| {n} | {k} | WGSL radix select + compaction | {label} | {ms:.2} |");
                let logits = Tensor::<2>::from_data(
                    TensorData::new(
                        (0..n * 10).map(|i| (i % 7) as f32).collect::<Vec<f32>>(),
                        [n, 10],
                    ),
                    device,
                );
                let labels = Tensor::<1, burn::tensor::Int>::zeros([n], device);
                let params = RiskParams {
                    seed: 1,
                    epoch: 1,
                    eta: 1.0,
                    mode: RiskMode::Perturbed,
                };
                let ms = time(args.repeats, || {
                    let r = selection::noise_risk_objective(&logits, &labels, &objective, params)
                        .expect("wgpu");
                    let s = selection::select_k_smallest(&r.objective, k).expect("wgpu");
                    settle(s.mask);
                });
                println!(
                    "| {n} | {k} | WGSL whole step (risk + objective + select + compaction) | {label} | {ms:.2} |"
                );
            }
            if n <= args.sort_max {
                let ms = time(args.repeats, || {
                    let order = objective.clone().argsort(0);
                    let chosen = order.narrow(0, 0, k);
                    settle(chosen.float());
                });
                println!("| {n} | {k} | burn argsort + first k | {label} | {ms:.2} |");
            }
        }
    }
    Ok(())
}
