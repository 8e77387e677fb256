//! Host side of `shaders/noise_risk.wgsl`: per-sample noise risk theta, the updated
//! cumulative risk and the selection objective, in one pass over the logits.

use burn::tensor::{DType, Int, Tensor};

use super::bridge::{self, Client};
use super::kernels::{NOISE_RISK, WORKGROUP};
use super::{RiskOutput, RiskParams};

pub(crate) fn run(
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
