//! The noise risk on a wgpu device, the GPU twin of [`super::cpu_reference`]'s: the host
//! side of `shaders/noise_risk.wgsl`, per-sample noise risk theta, the updated cumulative
//! risk and the selection objective in one pass over the logits. Nothing blocks or reads
//! back; float inputs are used as f32, labels as 32-bit integers.

use burn::tensor::{DType, Int, Tensor};

use crate::gpu::bridge::{self, Client};
use crate::gpu::kernels::{NOISE_RISK, WORKGROUP};

/// Which objective [`noise_risk_objective`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum RiskMode {
    /// Follow-the-Perturbed-Leader, [`crate::selection::Objective::Perturbed`]:
    /// `L + theta + eta * r`; TAkS's, and at `eta = 0` Follow-the-Leader (Naive's).
    Perturbed = 0,
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
    /// The value [`super::select_k_smallest`] ranks.
    pub objective: Tensor<1>,
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
    run(logits, noisy_labels, cumulative, params)
}

fn run(
    logits: &Tensor<2>,
    noisy_labels: &Tensor<1, Int>,
    cumulative: &Tensor<1>,
    params: RiskParams,
) -> Option<RiskOutput> {
    let [n, c] = logits.dims();
    assert_eq!(
        noisy_labels.dims(),
        [n],
        "noisy_labels must have one entry per logits row"
    );
    assert_eq!(
        cumulative.dims(),
        [n],
        "cumulative must have one entry per logits row"
    );
    assert!(n < u32::MAX as usize && n.saturating_mul(c) < u32::MAX as usize);

    let x = bridge::float_f32(logits)?;
    let y = bridge::int_32(noisy_labels)?;
    let l = bridge::float_f32(cumulative)?;

    let theta = bridge::empty_1d(&x, n, DType::F32);
    let new_l = bridge::empty_1d(&x, n, DType::F32);
    let objective = bridge::empty_1d(&x, n, DType::F32);
    if n > 0 {
        let client: &Client = &x.client;
        let words = [
            n as u32,
            c as u32,
            params.seed,
            params.epoch,
            params.eta.to_bits(),
            params.mode as u32,
        ];
        let p = bridge::upload_u32(client, &words);
        bridge::launch(
            client,
            NOISE_RISK,
            bridge::grid((n as u32).div_ceil(WORKGROUP)),
            &[
                &x.handle,
                &y.handle,
                &l.handle,
                &theta.handle,
                &new_l.handle,
                &objective.handle,
                &p,
            ],
        );
    }
    Some(RiskOutput {
        theta: bridge::to_float(theta),
        cumulative: bridge::to_float(new_l),
        objective: bridge::to_float(objective),
    })
}
