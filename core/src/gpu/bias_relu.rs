//! Host side of `shaders/bias_relu.wgsl`: a layer's bias and ReLU after its matmul in one
//! kernel instead of two (the MLP's hidden layer on a GPU, a folded convolution's output).

use burn::tensor::{DType, Tensor};

use super::bridge;
use super::kernels::{BIAS_RELU, WORKGROUP};

/// `relu(a + b)` for `a` `[rows, cols]` and `b` `[cols]`, NaN kept.
pub(crate) fn bias_relu(a: &Tensor<2>, b: &Tensor<1>) -> Option<Tensor<2>> {
    let [rows, cols] = a.dims();
    assert_eq!(b.dims(), [cols], "one bias per column");
    let a = bridge::float_f32(a)?;
    let b = bridge::float_f32(b)?;
    let h = bridge::empty_1d(&a, rows * cols, DType::F32);
    let p = bridge::upload_u32(&a.client, &[rows as u32, cols as u32]);
    bridge::launch(
        &a.client,
        BIAS_RELU,
        bridge::grid(((rows * cols) as u32).div_ceil(WORKGROUP)),
        &[&a.handle, &b.handle, &h.handle, &p],
    );
    Some(bridge::to_matrix(h, rows, cols))
}
