//! Where a 2-D convolution's kernel taps fall on its input: the geometry the GPU
//! convolution kernels share (im2col and col2im, [`super::im2col`]; the tiled matmul's
//! implicit patches, [`crate::ops::matmul`]).

use burn::nn::PaddingConfig2d;
use burn::nn::conv::Conv2d;

/// Where a kernel's taps fall: kernel size, stride and symmetric zero padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
}

impl Geometry {
    /// The geometry of `conv`, where im2col covers it: one group, no dilation, the same
    /// padding on opposite sides (every convolution of the paper's networks).
    pub(crate) fn of(conv: &Conv2d) -> Option<Self> {
        let padding = match conv.padding {
            PaddingConfig2d::Explicit(top, left, bottom, right)
                if top == bottom && left == right =>
            {
                [top, left]
            }
            PaddingConfig2d::Valid => [0, 0],
            _ => return None,
        };
        (conv.groups == 1 && conv.dilation == [1, 1]).then_some(Self {
            kernel: conv.kernel_size,
            stride: conv.stride,
            padding,
        })
    }

    /// Output height and width for an input of `height` x `width`.
    pub(crate) fn output(&self, height: usize, width: usize) -> [usize; 2] {
        let side = |len: usize, d: usize| {
            (len + 2 * self.padding[d] - self.kernel[d]) / self.stride[d] + 1
        };
        [side(height, 0), side(width, 1)]
    }

    /// The words the GPU kernels read for a convolution of an input `[C, H, W]` whose
    /// tensor (the input, or an output's gradient) lies at `strides` (4, in elements):
    /// C, H, W, the four strides, kh, kw, sh, sw, ph, pw, Ho, Wo.
    pub(crate) fn words(&self, [c, h, w]: [usize; 3], strides: &[usize]) -> [usize; 15] {
        let [out_h, out_w] = self.output(h, w);
        [
            c,
            h,
            w,
            strides[0],
            strides[1],
            strides[2],
            strides[3],
            self.kernel[0],
            self.kernel[1],
            self.stride[0],
            self.stride[1],
            self.padding[0],
            self.padding[1],
            out_h,
            out_w,
        ]
    }
}
