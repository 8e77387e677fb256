//! A convolution with the batch norm after it folded in, for eval-mode forward passes.
//!
//! In eval mode batch norm is an affine map per channel with fixed statistics,
//! `y = (x - mean) / sqrt(var + eps) * gamma + beta`, so after a convolution it folds into
//! the convolution's weights and bias: with `s = gamma / sqrt(var + eps)`,
//! `w' = w s` (per output channel) and `b' = (b - mean) s + beta`. Folded once per
//! scoring pass, a layer is one convolution with bias instead of a convolution and six
//! elementwise kernels over the whole activation. Equal to the unfolded layer up to
//! rounding (`tests`).
//!
//! On a wgpu device the folded convolution runs as im2col and one matmul
//! ([`super::im2col`]) unless `TAKS_GPU_CONV` says otherwise ([`crate::plan::GpuConv`]).

use burn::nn::BatchNorm;
use burn::nn::conv::Conv2d;
use burn::tensor::Tensor;
use burn::tensor::activation::relu;
use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;

use super::choice::{ConvShape, forward_fastest};
use super::geometry::Geometry;
use super::im2col;
use super::implicit;
use crate::plan::{GpuConv, Way};

/// A convolution and its batch norm as one convolution with bias.
pub struct FoldedConv {
    /// `[O, C, kh, kw]`, each output channel scaled by its norm's factor.
    weight: Tensor<4>,
    /// The same weights as `[C kh kw, O]`, the matmul's right-hand side.
    columns: Tensor<2>,
    bias: Tensor<1>,
    geometry: Geometry,
    how: GpuConv,
}

impl FoldedConv {
    /// `conv` then `norm` (eval mode) folded, to run as `how` says; `None` for a
    /// convolution this does not cover (groups, dilation or asymmetric padding: none of the
    /// paper's networks).
    pub(crate) fn new(conv: &Conv2d, norm: &BatchNorm, how: GpuConv) -> Option<Self> {
        let geometry = Geometry::of(conv)?;
        let weight = conv.weight.val().without_autodiff();
        let [o, _, _, _] = weight.dims();
        let device = weight.device();
        let mean = norm
            .running_mean
            .value()
            .without_autodiff()
            .to_device(&device);
        let var = norm
            .running_var
            .value()
            .without_autodiff()
            .to_device(&device);
        let gamma = norm.gamma.val().without_autodiff();
        let beta = norm.beta.val().without_autodiff();
        let scale = gamma / var.add_scalar(norm.epsilon).sqrt();
        let weight = weight * scale.clone().reshape([o, 1, 1, 1]);
        let bias = match &conv.bias {
            Some(b) => b.val().without_autodiff() - mean,
            None => mean.neg(),
        } * scale
            + beta;
        let columns = im2col::columns(weight.clone());
        Some(Self {
            weight,
            columns,
            bias,
            geometry,
            how,
        })
    }

    /// The folded layer on `x` `[N, C, H, W]`, then ReLU when `relu`.
    pub(crate) fn forward(&self, x: Tensor<4>, with_relu: bool) -> Tensor<4> {
        let g = self.geometry;
        let burns = || {
            let y = conv2d(
                x.clone(),
                self.weight.clone(),
                Some(self.bias.clone()),
                ConvOptions::new(g.stride, g.padding, [1, 1], 1),
            );
            if with_relu { relu(y) } else { y }
        };
        let shape = ConvShape {
            input: x.dims(),
            weight: self.weight.dims(),
            stride: g.stride,
            padding: g.padding,
            epilogue: if with_relu { "bias, relu" } else { "bias" },
            low: false,
        };
        let _clocked = shape.clocked("conv scoring (batch norm folded)");
        forward_fastest(self.how, shape, &x.device(), |way| match way {
            Way::Burn => Some(burns()),
            Way::Im2col => im2col::conv2d(&x, &self.columns, Some(&self.bias), g, with_relu),
            Way::Implicit => implicit::conv2d(&x, &self.columns, Some(&self.bias), g, with_relu),
        })
    }
}
