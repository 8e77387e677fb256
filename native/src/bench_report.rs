//! `taks bench`'s tables: what was timed on each device, printed as Markdown (the epochs
//! and their ratios to `standard` and to PyTorch, the accuracy the arithmetic kept, the
//! launches, the forward rates, the per-op clocks, the convolution timings), so that a
//! run's output pastes into docs/benchmarks.md as it is.

use taks_core::methods::Method;
use taks_core::train::{ForwardRates, LaunchCounts, OpClocks};

use crate::bench_torch::TorchEpochs;

/// One timed run.
pub struct Timed {
    pub method: Method,
    pub n: usize,
    pub k: usize,
    /// The first epoch of the process (compilation and tuning included).
    pub first: f64,
    pub mean: f64,
    pub min: f64,
    /// Test accuracy after the last epoch: what a change of arithmetic (`--precision`)
    /// must keep.
    pub accuracy: f64,
    pub launches: Option<LaunchCounts>,
    pub rates: Option<ForwardRates>,
    pub clocks: Option<OpClocks>,
}

/// Everything timed on one device: taks's runs, then PyTorch's loops beside them.
pub struct DeviceRows {
    pub device_name: String,
    pub results: Vec<Timed>,
    pub torch: Vec<TorchEpochs>,
}

/// Print every table, for samples of `shape` in `precision`.
pub fn print(tables: &[DeviceRows], shape: [usize; 3], precision: &str, forward_rates: bool) {
    epochs(tables);
    accuracy(tables, precision);
    ratios(tables, shape);
    launches(tables);
    if forward_rates {
        rates(tables);
    }
    for d in tables {
        for r in &d.results {
            if let Some(clocks) = &r.clocks {
                crate::bench_clock::print(&d.device_name, r.method.name(), clocks);
            }
        }
    }
    convolution_timings();
}

/// The mean of the timed epochs' seconds, for taks's rows and PyTorch's alike (the
/// `--torch` test, handing known times, holds both rows' figures to it).
pub fn mean(seconds: &[f64]) -> f64 {
    seconds.iter().sum::<f64>() / seconds.len() as f64
}

/// The fastest of the timed epochs.
pub fn fastest(seconds: &[f64]) -> f64 {
    seconds.iter().cloned().fold(f64::INFINITY, f64::min)
}

/// The epochs of every run and loop, each taks row with its time over `standard`'s.
fn epochs(tables: &[DeviceRows]) {
    println!(
        "| device | method | n | k | first epoch s | mean epoch s | min epoch s | x T (vs standard) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for DeviceRows {
        device_name,
        results,
        torch,
    } in tables
    {
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
}

/// Each run's test accuracy after its last epoch.
fn accuracy(tables: &[DeviceRows], precision: &str) {
    let accuracies: Vec<String> = tables
        .iter()
        .flat_map(|d| d.results.iter().map(move |r| (&d.device_name, r)))
        .map(|(d, r)| format!("{d} {} {:.2}%", r.method.name(), 100.0 * r.accuracy))
        .collect();
    println!(
        "\ntest accuracy after the last epoch ({precision}): {}",
        accuracies.join(", ")
    );
}

/// TAkS's epoch over each PyTorch loop's, and per million samples of this shape.
fn ratios(tables: &[DeviceRows], shape: [usize; 3]) {
    for DeviceRows {
        device_name,
        results,
        torch,
    } in tables
    {
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
}

/// The kernel launches of a training step and a scoring chunk, and the kernels launched
/// most in each.
fn launches(tables: &[DeviceRows]) {
    let counted: Vec<_> = tables
        .iter()
        .flat_map(|d| d.results.iter().map(move |r| (&d.device_name, r)))
        .filter_map(|(d, r)| r.launches.as_ref().map(|l| (d, r.method, l)))
        .collect();
    if counted.is_empty() {
        return;
    }
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

/// The scoring pass against a training step's forward pass, per sample.
fn rates(tables: &[DeviceRows]) {
    println!(
        "\n| device | method | training step's forward, samples/s | scoring pass, samples/s | scoring / training |"
    );
    println!("|---|---|---|---|---|");
    for d in tables {
        for (r, rates) in d.results.iter().filter_map(|r| Some((r, r.rates?))) {
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.2} |",
                d.device_name,
                r.method.name(),
                rates.training,
                rates.scoring,
                rates.scoring / rates.training
            );
        }
    }
}

/// On a GPU under `TAKS_GPU_CONV=auto`: which forward kernel each convolution shape met
/// in this process measured faster.
fn convolution_timings() {
    let measured = taks_core::ops::conv::measured_shapes();
    if measured.is_empty() {
        return;
    }
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
            ms(m.burn),
            ms(m.im2col),
            ms(m.implicit),
            m.fastest().name()
        );
    }
}
