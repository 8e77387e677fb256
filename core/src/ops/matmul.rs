//! A tiled matrix product of our own on a wgpu device (`shaders/matmul.wgsl`), for the
//! convolutions: `a` times `b`, with a bias and ReLU after it when asked, each operand a
//! matrix read through its strides or a convolution's patches computed as they are
//! loaded ([`Operand`], used by [`super::conv::implicit`]).
//!
//! Why: on an H100 the im2col convolutions run at 7-13 TFLOP/s through cubecl's WGSL
//! matmul, a fifth or less of the card's FP32 peak, and that, not the launches, is what a
//! ResNet-18 epoch waits on (docs/benchmarks.md, "GPU speed"). This kernel is the
//! alternative to measure against it: 64 x 64 tiles of the output, 4 x 4 per invocation in
//! registers, no copy of a transposed operand, no patches matrix, the bias and ReLU in the
//! same pass. It is not the default: `TAKS_GPU_MATMUL=tiled` ([`crate::plan::GpuMatmul`]) turns it on
//! for the convolutions ([`super::conv::im2col`] hands them to [`super::conv::implicit`]), so a
//! GPU run can time both; the tests compare it with burn's matmul and convolutions on
//! lavapipe.

pub mod coop;
pub(crate) mod depth_split;

use burn::tensor::{DType, Tensor};

use super::conv::geometry::Geometry;
use crate::gpu::kernels::{MATMUL, SUM_SPLITS_F16, WORKGROUP};
use crate::gpu::params;
use crate::gpu::{Shader, bridge};
use crate::plan::Kernel;

/// The output's rows and columns one workgroup computes (`shaders/matmul.wgsl`).
const TILE: usize = 64;

/// One side of [`product`]: a matrix, or one the kernel computes from a convolution's
/// tensor as it loads it (so it is never written out).
#[derive(Clone, Copy)]
pub(crate) enum Operand<'a> {
    /// A matrix, read through its strides.
    Matrix(&'a Tensor<2>),
    /// The im2col patches of `x` `[N, C, H, W]` (any strides) under the geometry:
    /// `[N Ho Wo, C kh kw]`, as `shaders/im2col.wgsl` writes them.
    Patches(&'a Tensor<4>, Geometry),
    /// The patches of the transposed convolution that takes the output's gradient `dy`
    /// `[N, O, Ho, Wo]` (any strides) back to an input of `[H, W]` (the last field) under
    /// the geometry: `[N H W, O kh kw]`, entry `((n, h, w), (o, i, j))` is
    /// `dy[n, o, oh, ow]` where `h + ph - i = oh sh` and `w + pw - j = ow sw`, else 0.
    /// Only as the left-hand side.
    OutputTaps(&'a Tensor<4>, Geometry, [usize; 2]),
    /// A convolution's weights `[O, C, kh, kw]` as `[O kh kw, C]`, the right-hand side
    /// beside [`Operand::OutputTaps`]: their product is the input's gradient.
    WeightTaps(&'a Tensor<4>),
}

/// The kernel's view of one operand: its kind's number, whether its loads run along k,
/// its 2-D strides (kind 0) and the convolution words it needs (kinds 1 and 2).
struct Loaded {
    kind: usize,
    along_k: bool,
    strides: [usize; 2],
    conv: Option<[usize; 15]>,
    prim: burn::backend::wgpu::CubeTensor,
}

impl Operand<'_> {
    /// `[rows, columns]` of the matrix this operand stands for.
    fn dims(&self) -> [usize; 2] {
        match *self {
            Operand::Matrix(m) => m.dims(),
            Operand::Patches(x, g) => {
                let [n, c, h, w] = x.dims();
                let [oh, ow] = g.output(h, w);
                [n * oh * ow, c * g.kernel[0] * g.kernel[1]]
            }
            Operand::OutputTaps(dy, g, [h, w]) => {
                let [n, o, _, _] = dy.dims();
                [n * h * w, o * g.kernel[0] * g.kernel[1]]
            }
            Operand::WeightTaps(weight) => {
                let [o, c, kh, kw] = weight.dims();
                [o * kh * kw, c]
            }
        }
    }

    /// The type of the tensor it is made from.
    fn dtype(&self) -> DType {
        match *self {
            Operand::Matrix(m) => m.dtype(),
            Operand::Patches(x, _) => x.dtype(),
            Operand::OutputTaps(dy, _, _) => dy.dtype(),
            Operand::WeightTaps(weight) => weight.dtype(),
        }
    }

    /// What the kernel is told about this operand as `side` (0 for A, 1 for B), read in
    /// `dtype` (the kernel's: a tensor of another type is declined, not cast, so that a
    /// 16-bit step never gets an f32 result); `None` off wgpu, where an address passes 32
    /// bits, or for a kind that side cannot be.
    fn load(&self, side: usize, dtype: DType) -> Option<Loaded> {
        if self.dtype() != dtype {
            return None;
        }
        let under_32 = |v: usize| (v < u32::MAX as usize).then_some(v);
        // The furthest element a strided tensor reaches.
        let reach = |dims: &[usize], strides: &[usize]| {
            under_32(
                dims.iter()
                    .zip(strides)
                    .map(|(d, s)| d.saturating_sub(1) * s)
                    .sum(),
            )
        };
        let loaded = match (*self, side) {
            (Operand::Matrix(m), _) => {
                let prim = bridge::float_strided_as(m, dtype)?;
                let s = prim.meta.strides();
                reach(&m.dims(), s)?;
                let strides = [s[0], s[1]];
                // Consecutive loads along the contiguous direction: k is A's columns, B's rows.
                let along_k = strides[1 - side] == 1;
                Loaded {
                    kind: 0,
                    along_k,
                    strides,
                    conv: None,
                    prim,
                }
            }
            (Operand::Patches(x, g), _) => {
                let prim = bridge::float_strided_as(x, dtype)?;
                let s = prim.meta.strides().to_vec();
                reach(&x.dims(), &s)?;
                let [_, c, h, w] = x.dims();
                Loaded {
                    kind: 1,
                    // Along k as A (one row's taps); as B, k runs along the output's
                    // positions, which step through x's width.
                    along_k: side == 0 || s[3] == 1,
                    strides: [0, 0],
                    conv: Some(g.words([c, h, w], &s)),
                    prim,
                }
            }
            (Operand::OutputTaps(dy, g, [h, w]), 0) => {
                let prim = bridge::float_strided_as(dy, dtype)?;
                let s = prim.meta.strides().to_vec();
                reach(&dy.dims(), &s)?;
                let [_, o, oh, ow] = dy.dims();
                assert_eq!(
                    g.output(h, w),
                    [oh, ow],
                    "dy is the output of an [{h}, {w}] input"
                );
                // C is not read for this kind (B's weights give it).
                Loaded {
                    kind: 2,
                    along_k: true,
                    strides: [0, 0],
                    conv: Some(g.words([o, h, w], &s)),
                    prim,
                }
            }
            (Operand::WeightTaps(weight), 1) => {
                let prim = bridge::float_as(weight, dtype)?;
                under_32(weight.dims().iter().product())?;
                let [_, c, kh, kw] = weight.dims();
                Loaded {
                    kind: 2,
                    along_k: true,
                    strides: [0, 0],
                    conv: Some([c, 0, 0, 0, 0, 0, 0, kh, kw, 0, 0, 0, 0, 0, 0]),
                    prim,
                }
            }
            _ => return None,
        };
        Some(loaded)
    }
}

/// `a` `[M, K]` times `b` `[K, N]` (any strides), plus `bias` `[N]` where there is one,
/// then ReLU when `relu` (NaN kept): a fresh row-major `[M, N]`. `None` off wgpu or where
/// a size or an index passes 32 bits.
pub(crate) fn matmul(
    a: &Tensor<2>,
    b: &Tensor<2>,
    bias: Option<&Tensor<1>>,
    relu: bool,
) -> Option<Tensor<2>> {
    product(Operand::Matrix(a), Operand::Matrix(b), bias, relu)
}

/// [`matmul`] of any two operands: a row-major `[M, N]` of their type. Where both are
/// convolution operands they share one set of convolution words, so they must be the two
/// sides of one convolution's input gradient ([`Operand::OutputTaps`] times
/// [`Operand::WeightTaps`], whose words complete each other).
///
/// In f32 on the tiled kernel (`shaders/matmul.wgsl`); in f16 on cooperative matrices
/// (`shaders/matmul_coop_f16.wgsl`), where the plan offers them ([`coop::usable`]) and
/// without a bias or ReLU (which that kernel does not add); `None` otherwise.
pub(crate) fn product(
    a: Operand,
    b: Operand,
    bias: Option<&Tensor<1>>,
    relu: bool,
) -> Option<Tensor<2>> {
    match a.dtype() {
        DType::F32 if Kernel::TiledMatmul.runs_in(DType::F32) => {
            launch(MATMUL, [TILE, TILE], a, b, bias, relu)
        }
        DType::F16 if bias.is_none() && !relu => {
            let device = match a {
                Operand::Matrix(m) => m.device(),
                Operand::Patches(x, _) => x.device(),
                Operand::OutputTaps(dy, _, _) => dy.device(),
                Operand::WeightTaps(w) => w.device(),
            };
            let kernel = coop::usable(&device)?;
            launch(kernel, coop::BLOCK, a, b, None, false)
        }
        _ => None,
    }
}

/// [`product`] on `kernel`, whose workgroups compute `block` (rows, columns) of the
/// output each, in the operands' type (`a`'s; `b` of another is declined).
pub(super) fn launch(
    kernel: Shader,
    block: [usize; 2],
    a: Operand,
    b: Operand,
    bias: Option<&Tensor<1>>,
    relu: bool,
) -> Option<Tensor<2>> {
    let [rows, depth] = a.dims();
    let [depth_b, cols] = b.dims();
    assert_eq!(depth, depth_b, "the inner sizes agree");
    let dtype = a.dtype();
    let (a, b) = (a.load(0, dtype)?, b.load(1, dtype)?);
    // An empty product launches nothing (burn's matmul returns the empty tensor).
    if rows == 0 || cols == 0 {
        return None;
    }
    if rows.checked_mul(cols)? >= u32::MAX as usize {
        return None;
    }
    let conv = match (a.conv, b.conv) {
        (Some(x), None) | (None, Some(x)) => x,
        // The input's gradient: dy's words from A, C from B.
        (Some(mut x), Some(w)) => {
            assert!(
                a.kind == 2 && b.kind == 2,
                "two convolution operands are one input gradient's"
            );
            x[0] = w[0];
            x
        }
        (None, None) => [0; 15],
    };
    let bias = match bias {
        Some(v) => {
            assert_eq!(v.dims(), [cols], "one bias per column");
            Some(bridge::float_f32(v)?)
        }
        None => None,
    };
    let tiles_n = cols.div_ceil(block[1]);
    let tiles = rows.div_ceil(block[0]) * tiles_n;
    // Words 7 and 8: the tiled kernel's bias and ReLU flags; the splits of K and the depth
    // of one split for the kernel on cooperative matrices, which adds no bias.
    let cooperative = kernel.is_cooperative();
    let (splits, chunk) = match cooperative {
        true => depth_split::split_depth(tiles, [rows, cols, depth], coop::step(kernel)),
        false => (1, depth),
    };
    let (word_7, word_8) = match cooperative {
        true => (splits, chunk),
        false => (bias.is_some() as usize, relu as usize),
    };
    let mut words = vec![
        rows,
        cols,
        depth,
        a.strides[0],
        a.strides[1],
        b.strides[0],
        b.strides[1],
        word_7,
        word_8,
        tiles_n,
        a.kind,
        b.kind,
        a.along_k as usize,
        b.along_k as usize,
    ];
    words.extend(conv);
    let params = params::sizes(&a.prim, &words)?;
    let c = bridge::empty_1d(&a.prim, rows * cols, dtype);
    let client = &a.prim.client;
    let groups = u32::try_from(tiles * splits).ok()?;
    if !cooperative {
        // Without a bias the kernel reads none: any buffer holds its place.
        let bias_handle = bias.as_ref().map_or(&a.prim.handle, |v| &v.handle);
        let buffers = [
            &a.prim.handle,
            &b.prim.handle,
            bias_handle,
            &c.handle,
            &params,
        ];
        bridge::launch(client, kernel, bridge::grid(groups), &buffers);
        return Some(bridge::to_matrix(c, rows, cols));
    }
    // The splits' f32 sums, where K is split; else a word the kernel never touches.
    let partial = match splits {
        1 => params::words(&a.prim, &[0]),
        _ => bridge::empty_1d(&a.prim, splits * rows * cols, DType::F32).handle,
    };
    let buffers = [&a.prim.handle, &b.prim.handle, &c.handle, &params, &partial];
    bridge::launch(client, kernel, bridge::grid(groups), &buffers);
    if splits > 1 {
        let sum = params::sizes(&a.prim, &[rows * cols, splits])?;
        let groups = u32::try_from((rows * cols).div_ceil(WORKGROUP as usize)).ok()?;
        let buffers = [&partial, &c.handle, &sum];
        bridge::launch(client, SUM_SPLITS_F16, bridge::grid(groups), &buffers);
    }
    Some(bridge::to_matrix(c, rows, cols))
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Distribution, activation::relu};

    use super::*;
    use crate::test_support::{gap, host, random};

    /// On lavapipe: the tiled product is burn's, for sizes on and off the tile's edges,
    /// each operand contiguous and transposed (a view), so both ways of loading a tile
    /// run, with and without a bias and ReLU.
    #[test]
    fn the_tiled_matmul_is_burns() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        for [m, k, n] in [[64, 16, 64], [130, 27, 70], [3, 576, 65], [200, 33, 1]] {
            let a = random([m, k], Distribution::Normal(0.0, 1.0), 1, &device);
            let bt = random([n, k], Distribution::Normal(0.0, 1.0), 2, &device);
            let bias = random([n], Distribution::Normal(0.0, 1.0), 3, &device);
            // b as the weights lie in a convolution: [N, K], read transposed.
            let b = bt.clone().transpose();
            // Each operand contiguous and as a transposed view of a contiguous one.
            let at = a.clone().transpose().reshape([k * m]).reshape([k, m]);
            let b_rows = b.clone().reshape([k * n]).reshape([k, n]);
            let operands = [
                ("a, b^T", a.clone(), b.clone()),
                ("a^T^T, b", at.transpose(), b_rows),
            ];
            for (name, lhs, rhs) in operands {
                for (with_bias, with_relu) in [(false, false), (true, true), (true, false)] {
                    let ours =
                        matmul(&lhs, &rhs, with_bias.then_some(&bias), with_relu).expect("on wgpu");
                    let mut theirs = a.clone().matmul(b.clone());
                    if with_bias {
                        theirs = theirs + bias.clone().unsqueeze::<2>();
                    }
                    if with_relu {
                        theirs = relu(theirs);
                    }
                    let (ours, theirs) = (host(ours), host(theirs));
                    let gap = gap(&ours, &theirs);
                    assert!(
                        gap <= 1e-4 * (k as f32).sqrt(),
                        "{m}x{k}x{n}, {name}, bias {with_bias}, relu {with_relu}: off by {gap}"
                    );
                }
            }
        }
        // An f16 operand is declined, not cast to an f32 result.
        let a = random([8, 4], Distribution::Default, 4, &device);
        let half = a.clone().cast(burn::tensor::FloatDType::F16);
        assert!(matmul(&half, &a.clone().transpose(), None, false).is_none());
        assert!(matmul(&a, &half.transpose(), None, false).is_none());
    }
}
