//! Whether this machine's Vulkan driver runs burn's SPIR-V kernels, asked of a child
//! process before a `native-shaders` build starts the GPU.
//!
//! Why: cubecl-spirv 0.11.3 writes invalid SPIR-V for shared memory on a Vulkan driver
//! without `VK_KHR_workgroup_memory_explicit_layout` (Mesa's lavapipe among them; the
//! docs/gpu.md, "Compilers", says where), and such a driver takes the process down in
//! `vkCreateComputePipelines` at burn's first matmul: a segfault, with no error to catch
//! and no line saying why. The extension cannot be read without unsafe code (wgpu-hal's
//! Vulkan adapter), which the crates deny, and cubecl keeps what it read to itself. So
//! a short child process (`taks probe-spirv`, hidden: [`crate::device::probe`]) starts the GPU
//! as a run would and multiplies two matrices with burn; if it dies, is wrong or hangs,
//! `--device gpu` stops with one line saying so and `--device auto` takes the CPU. The
//! verdict is kept in taks's cache folder by the adapters' names and driver versions, so
//! the child runs once per machine and driver. The default (WGSL) build never asks:
//! nothing it runs goes through cubecl's SPIR-V.

use std::time::Duration;

use anyhow::Result;
use burn::tensor::{Tensor, TensorData};

use crate::device::probe::Probe;

/// The hidden subcommand the child runs (the name of `Command::ProbeSpirv`).
pub const PROBE_SPIRV: &str = "probe-spirv";

/// The check: on a working driver the child starts the device and compiles one matmul
/// (well under a second on a GPU, a few seconds on lavapipe).
const PROBE: Probe = Probe {
    subcommand: PROBE_SPIRV,
    verdicts: "taks-spirv.txt",
    work: "one matmul through burn's SPIR-V kernels",
    why: "cubecl-spirv 0.11.3 needs VK_KHR_workgroup_memory_explicit_layout for shared \
        memory, which this driver may lack; the default build of taks (WGSL) runs on it",
    patience: Duration::from_secs(120),
};

/// Whether this build asks the driver: a `native-shaders` build does, the default (WGSL)
/// build does not. This crate's own tests ask in every build, so the asking that guards
/// a SPIR-V build's GPU is tested where the test command runs (the WGSL build).
const ASKS: bool = cfg!(feature = "native-shaders") || cfg!(test);

/// `Ok` where the GPU may be started: a build without SPIR-V, no Vulkan adapter, or a
/// driver that ran the child's matmul (now or in an earlier run). `Err` is one line
/// saying what the driver did.
pub fn check() -> std::result::Result<(), String> {
    if !ASKS {
        return Ok(());
    }
    match crate::device::probe::drivers() {
        Some(key) => PROBE.check(&key),
        None => Ok(()),
    }
}

/// `taks probe-spirv`: [`multiply`], reported to the parent.
pub fn probe() -> Result<()> {
    crate::device::probe::report(multiply())
}

/// Start the GPU and multiply two 64x64 matrices of small integers with burn, against
/// the product computed here (exact in f32). The entries differ along rows and columns,
/// so a transposed operand or a misplaced tile gives a wrong product, which a product of
/// matrices of ones would not show.
fn multiply() -> Result<()> {
    const N: usize = 64;
    let (device, _) = taks_core::gpu::direct::start().map_err(|e| anyhow::anyhow!("{e}"))?;
    let a: Vec<f32> = (0..N * N)
        .map(|i| ((i / N + 2 * (i % N)) % 7) as f32)
        .collect();
    let b: Vec<f32> = (0..N * N)
        .map(|i| ((3 * (i / N) + i % N) % 5) as f32)
        .collect();
    let expected: Vec<f32> = (0..N * N)
        .map(|i| (0..N).map(|k| a[i / N * N + k] * b[k * N + i % N]).sum())
        .collect();
    let tensor = |v: Vec<f32>| Tensor::<2>::from_data(TensorData::new(v, [N, N]), &device);
    let product = tensor(a).matmul(tensor(b));
    let values = product.into_data().convert::<f32>().try_to_vec::<f32>();
    let values = values.map_err(|e| anyhow::anyhow!("{e:?}"))?;
    anyhow::ensure!(values == expected, "a wrong product");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A driver whose verdict is kept as failed keeps the GPU off: the check says why
    /// and where the verdict is kept, `--device gpu` refuses with that line, and a kept
    /// pass lets it start. The verdicts are this machine's real driver key (lavapipe in
    /// the test command), read from a scratch cache folder, so no child is started.
    #[test]
    fn a_driver_kept_as_failed_keeps_the_gpu_off() {
        let key =
            crate::device::probe::drivers().expect("a Vulkan adapter (lavapipe in the tests)");
        let folder = std::env::temp_dir().join(format!("taks-spirv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        crate::device::probe::keep_in(Some(folder.clone()));
        let file = folder.join(PROBE.verdicts);
        let failed = Err("died of signal 11".to_string());
        crate::device::probe::record(&file, &key, &failed).unwrap();

        let why = check().unwrap_err();
        assert!(
            why.starts_with("died of signal 11; kept from an earlier run in "),
            "{why}"
        );
        let refused = crate::device::choose(taks_core::settings::flags::DeviceChoice::Gpu)
            .err()
            .unwrap();
        assert_eq!(refused.to_string(), format!("--device gpu: {why}"));

        crate::device::probe::record(&file, &key, &Ok(())).unwrap();
        assert_eq!(check(), Ok(()));
        let _ = std::fs::remove_dir_all(&folder);
    }
}
