//! A real training run on a wgpu device (Mesa lavapipe in CI, a GPU where there is one)
//! with the WGSL selection engine, against the same run on the flex CPU backend with the
//! CPU reference. Same seed, same data: the two must select nearly the same samples.
//! Float rounding differs between the backends and training amplifies it, so the runs
//! drift apart slowly (measured: overlap 1.00, 0.97, 0.94, 0.89). Small (2,000 digits,
//! 4 epochs) because the first epoch on a software adapter spends about a minute
//! compiling shaders.

mod digits;

use burn::tensor::Device;
use taks_core::methods::Method;
use taks_core::metrics::EpochMetrics;
use taks_core::selection::Engine;

/// Per epoch: the metrics and the set that epoch trained on.
fn run(device: &Device) -> (Engine, Vec<(EpochMetrics, Vec<u32>)>) {
    let mut trainer = digits::trainer(digits::config(Method::TAKS, 4, 2000, 500), device);
    let engine = trainer.selector().unwrap().engine();
    let mut epochs = Vec::new();
    while !trainer.is_done() {
        let selected =
            pollster::block_on(trainer.selector().unwrap().current_indices_host()).unwrap();
        let metrics = pollster::block_on(trainer.run_epoch()).unwrap();
        epochs.push((metrics, selected));
    }
    (engine, epochs)
}

#[test]
fn wgpu_and_flex_runs_select_nearly_the_same_samples() {
    let (gpu_engine, gpu) = run(&taks_core::gpu::direct::start().expect("a wgpu adapter").0);
    let (cpu_engine, cpu) = run(&Device::flex());
    assert_eq!(
        gpu_engine,
        Engine::Wgsl,
        "the WGSL kernels must run on a wgpu device"
    );
    assert_eq!(cpu_engine, Engine::Reference);
    for ((g, g_set), (c, c_set)) in gpu.iter().zip(&cpu) {
        assert_eq!(g_set.len(), 700);
        let mut sorted = g_set.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            &sorted, g_set,
            "the WGSL engine's set must be ascending and distinct"
        );
        let common = g_set
            .iter()
            .filter(|i| c_set.binary_search(i).is_ok())
            .count();
        let overlap = common as f64 / g_set.len() as f64;
        eprintln!(
            "epoch {}: overlap {overlap:.3}, precision wgpu {:.3} flex {:.3}, loss {:.4} / {:.4}",
            g.epoch, g.label_precision, c.label_precision, g.train_loss, c.train_loss
        );
        assert!(
            overlap >= 0.8,
            "epoch {}: only {overlap:.3} of the selections agree",
            g.epoch
        );
        assert!((g.train_loss - c.train_loss).abs() < 0.2 * c.train_loss);
    }
    let (last_gpu, last_cpu) = (&gpu.last().unwrap().0, &cpu.last().unwrap().0);
    // Both left chance (0.5 clean) behind.
    assert!(
        last_gpu.label_precision > 0.6,
        "{}",
        last_gpu.label_precision
    );
    assert!(
        last_cpu.label_precision > 0.6,
        "{}",
        last_cpu.label_precision
    );
}
