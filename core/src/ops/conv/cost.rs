//! What each pass of a convolution should cost, for the per-op GPU clock
//! ([`crate::gpu::clock`]): its products' arithmetic and the bytes of its operands and
//! result, read and written once.
//!
//! The forward pass, the input's gradient and the weight's gradient are three products of
//! the same size (output positions x output channels x input channels x taps, two FLOPs
//! per multiply-add), and each touches the same three tensors once (the input or its
//! gradient, the weight or its gradient, the output or its gradient). Anything above
//! that (im2col's patch matrix, a col2im pass, a padded copy) is traffic the clock's
//! GB/s shows as a lower rate.

use super::choice::ConvShape;
use crate::gpu::clock::{self, Cost, OpGuard};

impl ConvShape {
    /// The output's height and width.
    fn output_side(&self) -> [usize; 2] {
        let [_, _, h, w] = self.input;
        let [_, _, kh, kw] = self.weight;
        let side =
            |len: usize, k: usize, d: usize| (len + 2 * self.padding[d] - k) / self.stride[d] + 1;
        [side(h, kh, 0), side(w, kw, 1)]
    }

    /// One pass's floor: its FLOPs and bytes.
    pub(crate) fn cost(&self) -> Cost {
        let [n, c, h, w] = self.input;
        let [o, _, kh, kw] = self.weight;
        let [oh, ow] = self.output_side();
        let element = if self.low { 2 } else { 4 };
        let multiply_adds = n * o * oh * ow * c * kh * kw;
        Cost {
            flops: 2.0 * multiply_adds as f64,
            bytes: ((n * c * h * w + o * c * kh * kw + n * o * oh * ow) * element) as f64,
        }
    }

    /// The clock's name of this layer: input, output channels, kernel and stride, and the
    /// type when it is 16 bits (`256x3x32x32 -> 64, 3x3/1`).
    pub(crate) fn layer(&self) -> String {
        let [_, _, kh, kw] = self.weight;
        format!(
            "{} -> {}, {kh}x{kw}/{}{}",
            clock::dims(&self.input),
            self.weight[0],
            self.stride[0],
            if self.low { ", f16" } else { "" }
        )
    }

    /// Open the pass `pass` of this convolution on the clock.
    pub(crate) fn clocked(&self, pass: &'static str) -> OpGuard {
        clock::op(pass, || (self.layer(), self.cost()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CNN's second layer on a batch of 128 (64 -> 64 channels, 3x3, stride 1, pad 1,
    /// 32x32): 128 * 64 * 32 * 32 outputs of 64 * 9 multiply-adds each.
    #[test]
    fn a_layers_cost_is_its_product_and_its_three_tensors() {
        let shape = ConvShape {
            input: [128, 64, 32, 32],
            weight: [64, 64, 3, 3],
            stride: [1, 1],
            padding: [1, 1],
            epilogue: "",
            low: true,
        };
        let cost = shape.cost();
        assert_eq!(cost.flops, 2.0 * 128.0 * 64.0 * 1024.0 * 576.0);
        assert_eq!(cost.bytes, 2.0 * (2.0 * 128.0 * 64.0 * 1024.0 + 36_864.0));
        assert_eq!(shape.layer(), "128x64x32x32 -> 64, 3x3/1, f16");
        // Stride 2 without padding on 7x7: a 3x3 output.
        let strided = ConvShape {
            input: [1, 1, 7, 7],
            weight: [1, 1, 3, 3],
            stride: [2, 2],
            padding: [0, 0],
            ..shape
        };
        assert_eq!(strided.cost().flops, 2.0 * 9.0 * 9.0);
    }
}
