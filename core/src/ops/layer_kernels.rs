//! The host side of the layer kernels a network's graph-free GPU paths use, one launch
//! each (`shaders/bias_relu.wgsl`, `shaders/mlp_*.wgsl`): a layer's bias and ReLU after its
//! matmul (the MLP's hidden layer in [`super::mlp_step::gpu`], a folded convolution's output in
//! [`super::conv::im2col`]); the MLP's softmax, cross-entropy and their gradients; ReLU's
//! backward with the hidden bias's gradient. The CPU twins are host loops in
//! [`super::mlp_step::cpu`].
//!
//! Each function returns `None` when its inputs are not on a wgpu device or their type is
//! one the kernels lack (bf16). Activations and their gradients come out in the input's
//! type, f32 or f16 (a mixed-precision MLP step's, [`Elem`]); biases and their gradients,
//! the loss and every sum are f32. All outputs are fresh buffers on the input's device.
//! Nothing blocks or reads back.

use burn::tensor::{DType, Int, Tensor};

use crate::gpu::bridge;
use crate::gpu::kernels::{
    BIAS_RELU, BIAS_RELU_F16, Elem, MLP_RELU_GRAD, MLP_RELU_GRAD_F16, MLP_SOFTMAX_GRAD,
    MLP_SOFTMAX_GRAD_F16, WORKGROUP,
};
use crate::gpu::params;

/// `relu(a + b)` for `a` `[rows, cols]` and `b` `[cols]`, NaN kept, in `a`'s type.
pub(crate) fn bias_relu(a: &Tensor<2>, b: &Tensor<1>) -> Option<Tensor<2>> {
    let [rows, cols] = a.dims();
    assert_eq!(b.dims(), [cols], "one bias per column");
    let elem = Elem::of(a.dtype())?;
    let a = bridge::float_as(a, elem.dtype())?;
    let b = bridge::float_f32(b)?;
    let h = bridge::empty_1d(&a, rows * cols, elem.dtype());
    let p = params::words(&a, &[rows as u32, cols as u32]);
    bridge::launch(
        &a.client,
        elem.pick(BIAS_RELU, BIAS_RELU_F16),
        bridge::grid(((rows * cols) as u32).div_ceil(WORKGROUP)),
        &[&a.handle, &b.handle, &h.handle, &p],
    );
    Some(bridge::to_matrix(h, rows, cols))
}

/// The loss scale a mixed-precision step multiplies its gradients by, where it lies on
/// the device: word `at` of the f32 `words` (`train::DeviceLossScale`'s state).
pub(crate) struct ScaleAt<'a> {
    pub words: &'a Tensor<1>,
    pub at: usize,
}

/// The cross-entropy of the logits `s + b` (`s` `[B, C]`, `b` `[C]`) against `labels`
/// `[B]` (each below C) summed over the batch, the gradient of its mean in the logits
/// `[B, C]` in `s`'s type and times the loss `scale` where one is given, and the bias's
/// gradient `[C]` (the sum of those): `(loss sum [1], dz, db)`.
pub(crate) fn softmax_cross_entropy_grad(
    s: &Tensor<2>,
    b: &Tensor<1>,
    labels: &Tensor<1, Int>,
    scale: Option<ScaleAt>,
) -> Option<(Tensor<1>, Tensor<2>, Tensor<1>)> {
    let [rows, classes] = s.dims();
    assert_eq!(b.dims(), [classes], "one bias per class");
    assert_eq!(labels.dims(), [rows], "one label per row");
    let elem = Elem::of(s.dtype())?;
    let s = bridge::float_as(s, elem.dtype())?;
    let b = bridge::float_f32(b)?;
    let y = bridge::int_32(labels)?;
    // An f32 step's scale is one, from a word of its own (an upload, not a launch).
    let (scaler, at) = match scale {
        Some(ScaleAt { words, at }) => (bridge::float_f32(words)?.handle, at as u32),
        None => (params::words(&s, &[1f32.to_bits()]), 0),
    };
    let dz = bridge::empty_1d(&s, rows * classes, elem.dtype());
    let db = bridge::empty_1d(&s, classes, DType::F32);
    let loss = bridge::empty_1d(&s, 1, DType::F32);
    let p = params::words(&s, &[rows as u32, classes as u32, at]);
    bridge::launch(
        &s.client,
        elem.pick(MLP_SOFTMAX_GRAD, MLP_SOFTMAX_GRAD_F16),
        bridge::grid(1),
        &[
            &s.handle,
            &b.handle,
            &y.handle,
            &dz.handle,
            &db.handle,
            &loss.handle,
            &scaler,
            &p,
        ],
    );
    Some((
        bridge::to_float(loss),
        bridge::to_matrix(dz, rows, classes),
        bridge::to_float(db),
    ))
}

/// Relu's backward and the hidden bias's gradient: `g` where `h` is positive (or NaN),
/// else 0 (`[rows, cols]`, in `g`'s type), and its column sums `[cols]` (f32).
pub(crate) fn relu_grad(g: &Tensor<2>, h: &Tensor<2>) -> Option<(Tensor<2>, Tensor<1>)> {
    let [rows, cols] = g.dims();
    assert_eq!(
        h.dims(),
        [rows, cols],
        "gradient and activations must have one shape"
    );
    let elem = Elem::of(g.dtype())?;
    let g = bridge::float_as(g, elem.dtype())?;
    let h = bridge::float_as(h, elem.dtype())?;
    let dh = bridge::empty_1d(&g, rows * cols, elem.dtype());
    let db = bridge::empty_1d(&g, cols, DType::F32);
    let p = params::words(&g, &[rows as u32, cols as u32]);
    bridge::launch(
        &g.client,
        elem.pick(MLP_RELU_GRAD, MLP_RELU_GRAD_F16),
        bridge::grid((cols as u32).div_ceil(WORKGROUP)),
        &[&g.handle, &h.handle, &dh.handle, &db.handle, &p],
    );
    Some((bridge::to_matrix(dh, rows, cols), bridge::to_float(db)))
}

#[cfg(test)]
mod tests {
    use burn::tensor::TensorData;

    use super::*;
    use crate::test_support::host;

    /// On lavapipe: ReLU keeps a NaN (as burn's does), so a diverged step's NaN reaches
    /// the loss instead of turning into a zero.
    #[test]
    fn bias_relu_keeps_nan() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let a = Tensor::<2>::from_data(
            TensorData::new(vec![f32::NAN, -1.0, 2.0, -3.0], [2, 2]),
            &device,
        );
        let b = Tensor::<1>::from_data(TensorData::new(vec![0.5f32, 0.5], [2]), &device);
        let h = host(bias_relu(&a, &b).expect("on wgpu"));
        assert!(h[0].is_nan(), "{h:?}");
        assert_eq!(&h[1..], &[0.0, 2.5, 0.0]);
    }
}
