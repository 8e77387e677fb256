//! The launches of taks's own WGSL kernels (the `taks-shaders` crate) through burn's wgpu
//! backend, on ordinary type-erased `Tensor`s:
//!
//! * [`noise_risk_objective`] — `shaders/noise_risk.wgsl`: per-sample noise risk
//!   `theta = (1 - s p) / 2`, cumulative risk `L + theta` and the FTPL objective
//!   `L + eta r` (or `theta` for the greedy rule) in one pass over the logits;
//! * [`select_k_smallest`] — `shaders/select_*.wgsl`: the exact k smallest objectives
//!   (ties by smaller index, NaN largest) as a k-hot mask and an ascending index list,
//!   by a 4 x 8-bit radix select plus a block-wise prefix-sum compaction: O(n) work;
//! * [`adam::step`] — `shaders/adam.wgsl`: Adam's step of one parameter in one kernel
//!   instead of a dozen, for the launch-bound training step of a small network;
//! * `bias_relu`, `mlp` — the graph-free MLP step's kernels (`crate::model`'s `mlp_gpu`);
//! * `conv` — a convolution as im2col and a matmul (`crate::model`'s `gpu_conv`).
//!
//! Why: with the model on the GPU, reading all n logits back each epoch to score and sort on
//! the CPU would dominate; these keep scoring and selection on the device and let the caller
//! decide what (if anything) to read. Semantics match the CPU reference in
//! `crate::selection` (see the shader headers for the exact formulas, including the u32-only
//! counter-based normal generator shared with `crate::rng`).
//!
//! Both functions return `None` when the input is not on a wgpu device (flex, cpu), so the
//! caller falls back to the CPU reference. Inputs under autodiff are used without autodiff.
//! Nothing here blocks or reads back; errors in the launch surface at the caller's first read.
//!
//! Dtypes: float inputs are used as f32 (others are cast on the device); labels are read as
//! 32-bit integers (I32 or U32 as they are, anything else cast to I32). Outputs: theta,
//! cumulative, objective and mask are F32; selected indices are I32 (n < 2^31).

pub mod adam;
mod bias_relu;
mod bridge;
pub(crate) mod conv;
pub(crate) use bias_relu::bias_relu;
mod kernels;
pub mod launches;
pub(crate) mod mlp;
mod noise_risk;
mod select;
pub mod tuning_cache;

use burn::tensor::{Int, Tensor};

/// Which objective [`noise_risk_objective`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum RiskMode {
    /// TAkS / Follow-the-Perturbed-Leader: `L + theta + eta * r`; `eta = 0` is
    /// Follow-the-Leader ("naive").
    Taks = 0,
    /// Greedy: the current epoch's `theta` alone.
    Greedy = 1,
}

/// Scalars of the noise-risk pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RiskParams {
    /// Run seed; with `epoch` and the sample index it keys the perturbation `r`.
    pub seed: u32,
    /// Epoch number (second key of the perturbation).
    pub epoch: u32,
    /// Perturbation scale (ignored in [`RiskMode::Greedy`]).
    pub eta: f32,
    /// Which objective to produce.
    pub mode: RiskMode,
}

/// Outputs of [`noise_risk_objective`], all f32 `[n]` on the input's device.
#[derive(Clone, Debug)]
pub struct RiskOutput {
    /// This epoch's noise risk per sample (NaN where the logits row has a NaN).
    pub theta: Tensor<1>,
    /// `cumulative + theta`.
    pub cumulative: Tensor<1>,
    /// The value [`select_k_smallest`] ranks.
    pub objective: Tensor<1>,
}

/// Outputs of [`select_k_smallest`].
#[derive(Clone, Debug)]
pub struct Selection {
    /// f32 `[n]`: 1.0 for the k selected samples, 0.0 elsewhere.
    pub mask: Tensor<1>,
    /// I32 `[k]`: the selected sample indices in ascending order.
    pub indices: Tensor<1, Int>,
}

/// Whether the kernels run where `tensor` lives (a wgpu device, with or without autodiff).
/// When this is true, [`noise_risk_objective`] and [`select_k_smallest`] return `Some` for
/// tensors on the same device.
pub fn supports<const D: usize>(tensor: &Tensor<D>) -> bool {
    bridge::is_wgpu(tensor)
}

/// Noise risk, new cumulative risk and objective for `logits` `[n, C]`, `noisy_labels` `[n]`
/// and `cumulative` `[n]`. `None` if the tensors are not on a wgpu device.
///
/// # Panics
/// If the shapes disagree.
pub fn noise_risk_objective(
    logits: &Tensor<2>,
    noisy_labels: &Tensor<1, Int>,
    cumulative: &Tensor<1>,
    params: RiskParams,
) -> Option<RiskOutput> {
    noise_risk::run(logits, noisy_labels, cumulative, params)
}

/// The `k` smallest entries of `objective` `[n]` (ties by smaller index, NaN largest; the
/// order is that of f32 with -0.0 < +0.0). `None` if `objective` is not on a wgpu device.
///
/// # Panics
/// If `k > n`.
pub fn select_k_smallest(objective: &Tensor<1>, k: usize) -> Option<Selection> {
    select::run(objective, k)
}
