//! Adam's step on a wgpu device, the GPU twin of `adam_cpu`: the host side of
//! `shaders/adam.wgsl`, one parameter's step as one kernel.
//!
//! On a GPU a small network's step is bound by launches, and the generic update in
//! [`crate::optim`] is about a dozen kernels per parameter (for the MLP's four, some 50
//! of a step's launches). This is one per parameter.

use burn::tensor::{DType, Tensor};

use crate::gpu::bridge;
use crate::gpu::kernels::{ADAM, WORKGROUP};

/// The step's scalars, computed on the host as the generic update computes them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamScalars {
    pub beta_1: f32,
    pub beta_2: f32,
    pub epsilon: f32,
    /// `1 - beta_2^t`.
    pub correction_2: f32,
    /// `lr / (1 - beta_1^t)`.
    pub step_size: f32,
}

/// New weights, first and second moment of `x` (all flat `[n]`, f32) after one step with
/// gradient `g` and moments `m`, `v`; `None` when they are not on a wgpu device. The four
/// inputs must be four buffers: WebGPU refuses a buffer bound to two writable bindings
/// (native Vulkan does not check).
pub fn step(
    x: &Tensor<1>,
    g: &Tensor<1>,
    m: &Tensor<1>,
    v: &Tensor<1>,
    s: AdamScalars,
) -> Option<(Tensor<1>, Tensor<1>, Tensor<1>)> {
    let [n] = x.dims();
    assert!(
        g.dims() == [n] && m.dims() == [n] && v.dims() == [n],
        "weights, gradient and moments must have the same length"
    );
    assert!(n < u32::MAX as usize);
    let x = bridge::float_f32(x)?;
    let g = bridge::float_f32(g)?;
    let m = bridge::float_f32(m)?;
    let v = bridge::float_f32(v)?;
    let x_out = bridge::empty_1d(&x, n, DType::F32);
    let m_out = bridge::empty_1d(&x, n, DType::F32);
    let v_out = bridge::empty_1d(&x, n, DType::F32);
    if n > 0 {
        let words = [
            n as u32,
            s.beta_1.to_bits(),
            (1.0 - s.beta_1).to_bits(),
            s.beta_2.to_bits(),
            (1.0 - s.beta_2).to_bits(),
            s.correction_2.to_bits(),
            s.epsilon.to_bits(),
            s.step_size.to_bits(),
        ];
        let p = bridge::upload_u32(&x.client, &words);
        bridge::launch(
            &x.client,
            ADAM,
            bridge::grid((n as u32).div_ceil(WORKGROUP)),
            &[
                &x.handle,
                &g.handle,
                &m.handle,
                &v.handle,
                &x_out.handle,
                &m_out.handle,
                &v_out.handle,
                &p,
            ],
        );
    }
    Some((
        bridge::to_float(x_out),
        bridge::to_float(m_out),
        bridge::to_float(v_out),
    ))
}
