//! taks's own GPU kernels on burn's wgpu device: the bridge from a type-erased `Tensor`
//! to its buffer and back (`bridge`), the shaders of the `taks-shaders` crate as burn
//! kernels (`kernels`) or, where burn compiles to SPIR-V or MSL, dispatched through wgpu
//! itself ([`direct`], which also starts the device; the kernels on cooperative matrices
//! also on Vulkan, compiled by taks: `spirv_module`), counting launches ([`launches`]),
//! timing them by op ([`clock`]; a direct dispatch's own timestamps: `stamps`), kernel
//! parameters uploaded once ([`params`]) and where autotune results are kept
//! ([`tuning_cache`]).
//!
//! Each kernel's launcher lives beside its CPU twin: the paper's noise risk and k-set in
//! `selection/` (`selection/gpu_noise_risk.rs`, `selection/gpu_select.rs`, twins of
//! `selection/cpu_reference.rs`), every other op in `ops/`, one folder or file per op with
//! all its variants ([`crate::ops`] lists them).
//!
//! Why our own kernels: with the model on the GPU, reading all n logits back each epoch to
//! score and sort on the CPU would dominate, and a small network's step is bound by
//! launches; these keep scoring, selection and the step on the device and let the caller
//! decide what (if anything) to read. Every launcher returns `None` when its input is not
//! on a wgpu device (flex), so the caller takes the CPU path. Inputs under autodiff are used
//! without autodiff. Nothing here blocks or reads back; errors in a launch surface at the
//! caller's first read.

pub(crate) mod bridge;
pub mod clock;
pub mod direct;
pub(crate) mod fusion;
pub(crate) mod kernels;
pub mod launches;
pub(crate) mod params;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod spirv_module;
pub(crate) mod stamps;
pub mod tuning_cache;

use burn::tensor::Tensor;
/// One of taks's WGSL shaders (its name and text), as the ops that choose among
/// variants say which one they run.
pub use taks_shaders::Shader;

/// Whether taks's kernels run where `tensor` lives (a wgpu device, with or without
/// autodiff). When this is true, their launchers return `Some` for tensors on the same
/// device.
pub fn supports<const D: usize>(tensor: &Tensor<D>) -> bool {
    bridge::is_wgpu(tensor)
}

/// Which compiler burn uses on `device`: `wgpu<wgsl>`, `wgpu<spirv>` or `wgpu<msl>`
/// (`None` off wgpu).
pub fn compiler(device: &burn::tensor::Device) -> Option<&'static str> {
    bridge::compiler(device)
}
