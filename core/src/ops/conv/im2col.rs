//! A 2-D convolution as im2col (`shaders/im2col.wgsl`) and one matrix product on a wgpu
//! device: the second forward kernel [`super::choice`] offers beside burn's, in the
//! scoring pass ([`super::folded`]) and in training ([`super::train`]).
//!
//! Why: on burn's WGSL compiler a 3x3 convolution's forward pass only has direct kernels
//! to choose from (the implicit-GEMM ones need cooperative-matrix or MMA tiles, which WGSL
//! lacks), and on a large GPU the CNN's eval-mode forward ran at about 8,000 samples/s,
//! slower than its training step. Written as patches times weights, the arithmetic is
//! burn's autotuned matmul. The patches matrix is K = C kh kw times larger than the input,
//! so a chunk is convolved a few images at a time, each part's patches (and its output)
//! at most [`PATCH_BYTES`] or the largest buffer the device allows, whichever is
//! smaller. Each part costs launches of its own (the CNN's 32x32 layers take three parts
//! of a 128-image batch on lavapipe, whose buffers stop at 128 MiB; one on a GPU).
//! [`super::implicit`] is the third way, which never writes the patches.
//!
//! The output is the convolution's `[N, O, Ho, Wo]` as a view of an `[N, Ho, Wo, O]`
//! buffer (channels last, what the matmul writes); the next im2col, pool or elementwise
//! operation reads it through its strides, so it is never transposed.
//! `None` off wgpu.
//!
//! Both kernels come in f32 and in f16 ([`Elem`]): a mixed-precision step's convolutions
//! are im2col, burn's f16 matmul and col2im too, so their arithmetic is a matrix product
//! in f16 (what a GPU's matrix units take) rather than burn's direct f16 kernels and the
//! slices of their backward passes.

use burn::tensor::{DType, Tensor};

use super::geometry::Geometry;
use crate::gpu::bridge;
use crate::gpu::kernels::{COL2IM, COL2IM_F16, Elem, IM2COL, IM2COL_F16, WORKGROUP};
use crate::gpu::params;
use crate::ops::layer_kernels::bias_relu;
use crate::ops::matmul;
use crate::plan::Switches;

/// At most this many bytes of patches at once.
const PATCH_BYTES: usize = 512 << 20;

/// The most elements of patches (or output) a part may hold on `x`'s device: the smaller
/// of [`PATCH_BYTES`] and the device's largest buffer, in `x`'s type.
fn part_limit(x: &Tensor<4>) -> Option<usize> {
    let largest = bridge::max_buffer_bytes(x)?;
    Some(PATCH_BYTES.min(largest) / x.dtype().size())
}

/// The patches of `x` `[N, C, H, W]` (any layout) as `[N Ho Wo, C kh kw]`, row
/// (n, oh, ow), column (c, i, j), in `x`'s type. `None` off wgpu, for a type the kernel
/// lacks, or when the patches of even this many images would pass the kernel's 32-bit
/// indices (the caller then runs burn's kernel).
pub(crate) fn im2col(x: &Tensor<4>, g: Geometry) -> Option<Tensor<2>> {
    let [n, c, h, w] = x.dims();
    let [out_h, out_w] = g.output(h, w);
    let elem = Elem::of(x.dtype())?;
    let prim = bridge::float_strided_as(x, elem.dtype())?;
    let s = prim.meta.strides();
    let (rows, cols) = (n * out_h * out_w, c * g.kernel[0] * g.kernel[1]);
    let total = rows.checked_mul(cols).filter(|&t| t < u32::MAX as usize)?;
    let mut sizes = vec![n];
    sizes.extend(g.words([c, h, w], s));
    let p = params::sizes(&prim, &sizes)?;
    let out = bridge::empty_1d(&prim, total, elem.dtype());
    bridge::launch(
        &prim.client,
        elem.pick(IM2COL, IM2COL_F16),
        bridge::grid((total as u32).div_ceil(WORKGROUP)),
        &[&prim.handle, &out.handle, &p],
    );
    Some(bridge::to_float(out).reshape([rows, cols]))
}

/// A convolution's weights `[O, C, kh, kw]` as the matmul's right-hand side
/// `[C kh kw, O]`, its rows in the order of [`im2col`]'s columns (a view: nothing is
/// copied).
pub(crate) fn columns(weight: Tensor<4>) -> Tensor<2> {
    let [o, c, kh, kw] = weight.dims();
    weight.reshape([o, c * kh * kw]).transpose()
}

/// `conv(x, weight) + bias` (where there is one), then ReLU when `relu`: `x`
/// `[N, C, H, W]`, `columns` the weight as `[C kh kw, O]` in `x`'s type, `bias` `[O]`;
/// `[N, O, Ho, Wo]` laid out channels last.
pub(crate) fn conv2d(
    x: &Tensor<4>,
    columns: &Tensor<2>,
    bias: Option<&Tensor<1>>,
    g: Geometry,
    relu: bool,
) -> Option<Tensor<4>> {
    conv2d_in_parts(x, columns, bias, g, relu, part_limit(x)?)
}

/// [`conv2d`] with at most `limit` elements of patches, and of output, per part (at
/// least one image).
fn conv2d_in_parts(
    x: &Tensor<4>,
    columns: &Tensor<2>,
    bias: Option<&Tensor<1>>,
    g: Geometry,
    relu: bool,
    limit: usize,
) -> Option<Tensor<4>> {
    let [n, _, h, w] = x.dims();
    let [out_h, out_w] = g.output(h, w);
    let [k, o] = columns.dims();
    let per_image = out_h * out_w * k.max(o);
    let images = (limit / per_image.max(1)).clamp(1, n.max(1));
    let mut parts = Vec::with_capacity(n.div_ceil(images));
    for start in (0..n).step_by(images) {
        let len = images.min(n - start);
        let patches = im2col(&x.clone().narrow(0, start, len), g)?;
        parts.push(product(&patches, columns, bias, relu)?);
    }
    let y = if parts.len() == 1 {
        parts.pop().expect("one part")
    } else {
        Tensor::cat(parts, 0)
    };
    Some(from_rows(y, [n, out_h, out_w, o]))
}

/// The gradients of `conv(x, weight)` (no bias, `weight` `[O, C, kh, kw]`) for the
/// output's gradient `dy` `[N, O, Ho, Wo]` (any layout; channels last is read without a
/// copy): the input's `[N, C, H, W]`, laid out channels last, when `want_x`, and the
/// weight's when `want_weight`. `None` where [`im2col`] declines.
///
/// As patches times weights, both are matrix products: the weight's gradient is
/// `dy^T` `[O, P]` times the patches `[P, K]`; the patches' gradient is `dy` `[P, O]`
/// times the weight as `[O, K]`, summed back onto the input by `shaders/col2im.wgsl`.
/// About four launches, where burn's backward slices and reassembles its patches a tap
/// block at a time. Parts as in [`conv2d`]; each part's col2im writes its own images of
/// one input-gradient buffer.
pub(crate) fn conv2d_backward(
    x: &Tensor<4>,
    weight: &Tensor<4>,
    dy: &Tensor<4>,
    g: Geometry,
    want_x: bool,
    want_weight: bool,
) -> Option<(Option<Tensor<4>>, Option<Tensor<4>>)> {
    backward_in_parts(x, weight, dy, g, [want_x, want_weight], part_limit(x)?)
}

/// [`conv2d_backward`] with at most `limit` elements of patches (or of their gradient)
/// per part (at least one image).
fn backward_in_parts(
    x: &Tensor<4>,
    weight: &Tensor<4>,
    dy: &Tensor<4>,
    g: Geometry,
    [want_x, want_weight]: [bool; 2],
    limit: usize,
) -> Option<(Option<Tensor<4>>, Option<Tensor<4>>)> {
    let [n, c, h, w] = x.dims();
    let [o, _, kh, kw] = weight.dims();
    let [out_h, out_w] = g.output(h, w);
    assert_eq!(dy.dims(), [n, o, out_h, out_w], "the output's gradient");
    let k = c * kh * kw;
    let images = (limit / (out_h * out_w * k.max(o)).max(1)).clamp(1, n.max(1));
    let weight_rows = weight.clone().reshape([o, k]);
    let elem = Elem::of(x.dtype())?;
    let dx = match want_x {
        true => {
            let total = (n * h * w * c) as u64;
            let like = bridge::float_strided_as(x, elem.dtype())?;
            (total < u32::MAX as u64).then(|| bridge::empty_1d(&like, n * h * w * c, elem.dtype()))
        }
        false => None,
    };
    if want_x && dx.is_none() {
        return None;
    }
    let mut dw: Option<Tensor<2>> = None;
    for start in (0..n).step_by(images) {
        let len = images.min(n - start);
        let dy_rows = rows_of(dy.clone().narrow(0, start, len));
        if want_weight {
            let patches = im2col(&x.clone().narrow(0, start, len), g)?;
            let part = product(&dy_rows.clone().transpose(), &patches, None, false)?;
            dw = Some(match dw {
                Some(sum) => sum + part,
                None => part,
            });
        }
        if let Some(dx) = &dx {
            col2im(
                &product(&dy_rows, &weight_rows, None, false)?,
                dx,
                [c, h, w],
                g,
                start,
                len,
            )?;
        }
    }
    let dx = dx.map(|dx| from_rows(bridge::to_float(dx).reshape([n * h * w, c]), [n, h, w, c]));
    Some((dx, dw.map(|dw| dw.reshape([o, c, kh, kw]))))
}

/// `t` `[N, C, H, W]` as the rows `[N H W, C]` a matmul reads (a view where `t` lies
/// channels last, a copy otherwise).
pub(crate) fn rows_of(t: Tensor<4>) -> Tensor<2> {
    let [n, c, h, w] = t.dims();
    t.permute([0, 2, 3, 1]).reshape([n * h * w, c])
}

/// A matmul's rows `[N H W, C]` as `[N, C, H, W]` (`dims` = `[n, h, w, c]`), laid out
/// channels last: a view, nothing is copied.
pub(crate) fn from_rows(rows: Tensor<2>, [n, h, w, c]: [usize; 4]) -> Tensor<4> {
    rows.reshape([n, h, w, c]).permute([0, 3, 1, 2])
}

/// `a` times `b`, plus `bias` (one per column) where there is one, then ReLU when `relu`,
/// through the matmul `TAKS_GPU_MATMUL` chose ([`Switches::tiled_patches`]): ours with the
/// bias and ReLU in the same pass, or burn's with one fused bias and ReLU after it. In
/// f16, the product on cooperative matrices where the plan chooses it ([`matmul::coop`]),
/// else burn's matmul (ours and the fused bias and ReLU are f32 kernels), and where a
/// mixed-precision step asks for them (it does not: its biases go to the batch norms),
/// the bias and ReLU as tensor operations.
fn product(
    a: &Tensor<2>,
    b: &Tensor<2>,
    bias: Option<&Tensor<1>>,
    relu: bool,
) -> Option<Tensor<2>> {
    let f32s = a.dtype() == DType::F32;
    if Switches::current().tiled_patches(a.dtype()) {
        return matmul::matmul(a, b, bias, relu);
    }
    // The plan's f16 products on cooperative matrices (`None` in every other case), else
    // burn's matmul, its depth split where the product is deep and its output small (a
    // weight gradient: `matmul::depth_split`).
    let y = matmul::coop::product(a, b).unwrap_or_else(|| matmul::depth_split::product(a, b));
    if !f32s {
        let y = match bias {
            Some(b) => y.clone() + b.clone().cast(y.dtype()).unsqueeze::<2>(),
            None => y,
        };
        return Some(if relu {
            burn::tensor::activation::relu(y)
        } else {
            y
        });
    }
    Some(match (bias, relu) {
        (Some(b), true) => bias_relu(&y, b)?,
        (Some(b), false) => y + b.clone().unsqueeze::<2>(),
        (None, true) => burn::tensor::activation::relu(y),
        (None, false) => y,
    })
}

/// Sum the patches' gradient `dcols` `[len Ho Wo, C kh kw]` of images `start..start + len`
/// back onto those images of `dx` (`[N, H, W, C]`, `[c, h, w]` its image's shape), in
/// `dx`'s type.
fn col2im(
    dcols: &Tensor<2>,
    dx: &burn::backend::wgpu::CubeTensor,
    [c, h, w]: [usize; 3],
    g: Geometry,
    start: usize,
    len: usize,
) -> Option<()> {
    let [out_h, out_w] = g.output(h, w);
    let elem = Elem::of(dx.dtype)?;
    let dcols = bridge::float_as(dcols, elem.dtype())?;
    let total = len * h * w * c;
    let sizes = [
        len,
        c,
        h,
        w,
        g.kernel[0],
        g.kernel[1],
        g.stride[0],
        g.stride[1],
        g.padding[0],
        g.padding[1],
        out_h,
        out_w,
        start,
    ];
    let p = params::sizes(&dcols, &sizes)?;
    bridge::launch(
        &dcols.client,
        elem.pick(COL2IM, COL2IM_F16),
        bridge::grid((total as u32).div_ceil(WORKGROUP)),
        &[&dcols.handle, &dx.handle, &p],
    );
    Some(())
}

/// Whether `y` `[N, O, H, W]` lies channels last, as [`conv2d`] leaves its output (for
/// tests that must know which kernel ran).
#[cfg(test)]
pub(crate) fn is_channels_last(y: &Tensor<4>) -> bool {
    bridge::float_strided_as(y, y.dtype())
        .is_some_and(|p| crate::ops::channels_last::lies_channels_last(y.dims(), p.meta.strides()))
}

#[cfg(test)]
mod tests {
    use burn::tensor::ops::ConvOptions;
    use burn::tensor::{Device, Distribution, Tensor};

    use super::*;
    use crate::test_support::{flex_conv2d, flex_conv2d_backward, host, random};

    /// An input laid out channels last ([N, H, W, C] in memory, seen as [N, C, H, W], as
    /// the previous layer leaves it) and a `kernel` x `kernel` weight, drawn from `seed`
    /// and `seed + 1`.
    fn operands(
        [n, c, side, o]: [usize; 4],
        kernel: usize,
        seed: u64,
        device: &Device,
    ) -> (Tensor<4>, Tensor<4>) {
        let x = random(
            [n, side, side, c],
            Distribution::Normal(0.0, 1.0),
            seed,
            device,
        )
        .permute([0, 3, 1, 2]);
        let w = random(
            [o, c, kernel, kernel],
            Distribution::Normal(0.0, 0.3),
            seed + 1,
            device,
        );
        (x, w)
    }

    /// im2col and a matmul on lavapipe against burn's own convolution (on flex:
    /// [`flex_conv2d`]), for the kernel shapes of the paper's networks (3x3/1, 3x3/2,
    /// 1x1/2, ResNet's 7x7/2 stem), on an input that is a strided view (channels last, as
    /// the previous layer leaves it), whole and in parts of one image.
    #[test]
    fn im2col_matmul_is_the_convolution() {
        crate::test_support::under_each_matmul(|| {
            let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
            let cases = [(3, 1, 1), (3, 2, 1), (1, 2, 0), (7, 2, 3)];
            for (kernel, stride, pad) in cases {
                let (n, c, side, o) = (3, 5, 11, 6);
                let (x, w) = operands([n, c, side, o], kernel, 1, &device);
                let b = random([o], Distribution::Normal(0.0, 1.0), 3, &device);
                let options = ConvOptions::new([stride, stride], [pad, pad], [1, 1], 1);
                let mut expected = flex_conv2d(&x, &w, Some(&b), options);
                expected.iter_mut().for_each(|v| *v = v.max(0.0));
                let g = Geometry {
                    kernel: [kernel, kernel],
                    stride: [stride, stride],
                    padding: [pad, pad],
                };
                let rhs = columns(w);
                for limit in [usize::MAX, 1] {
                    let got = host(conv2d_in_parts(&x, &rhs, Some(&b), g, true, limit).unwrap());
                    assert_eq!(got.len(), expected.len());
                    let worst = got
                        .iter()
                        .zip(&expected)
                        .fold(0.0f32, |m, (a, e)| m.max((a - e).abs()));
                    assert!(
                        worst < 1e-4,
                        "{kernel}x{kernel}/{stride} pad {pad}, limit {limit}: off by {worst}"
                    );
                }
            }
        });
    }

    /// The backward pass (two matmuls around im2col and col2im) on lavapipe against
    /// burn's own `conv2d_x_backward` and `conv2d_weight_backward` (on flex), for the
    /// paper's kernel shapes, with the output's gradient channels last (as the batch
    /// norm's backward leaves it) and contiguous, whole and a part per image (col2im
    /// writing each image of one buffer), and each gradient alone.
    #[test]
    fn backward_is_burns_whole_and_in_parts() {
        crate::test_support::under_each_matmul(|| {
            let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
            for (kernel, stride, pad) in [(3, 1, 1), (3, 2, 1), (1, 2, 0), (7, 2, 3)] {
                let (n, c, side, o) = (3, 5, 11, 6);
                let (x, w) = operands([n, c, side, o], kernel, 4, &device);
                let g = Geometry {
                    kernel: [kernel, kernel],
                    stride: [stride, stride],
                    padding: [pad, pad],
                };
                let [out_h, out_w] = g.output(side, side);
                let dy_last = random(
                    [n, out_h, out_w, o],
                    Distribution::Normal(0.0, 1.0),
                    6,
                    &device,
                )
                .permute([0, 3, 1, 2]);
                let options = ConvOptions::new([stride, stride], [pad, pad], [1, 1], 1);
                let (expected_dx, expected_dw) = flex_conv2d_backward(&x, &w, &dy_last, options);
                assert_eq!(dy_last.dims(), [n, o, out_h, out_w]);
                let worst = |got: &[f32], expected: &[f32]| {
                    assert_eq!(got.len(), expected.len());
                    got.iter()
                        .zip(expected)
                        .fold(0.0f32, |m, (a, e)| m.max((a - e).abs()))
                };
                let dy_plain = dy_last.clone().permute([0, 2, 3, 1]).permute([0, 3, 1, 2]) * 1.0;
                for (dy, limit) in [(&dy_last, usize::MAX), (&dy_last, 1), (&dy_plain, 1)] {
                    let (dx, dw) = backward_in_parts(&x, &w, dy, g, [true, true], limit).unwrap();
                    let (dx, dw) = (host(dx.unwrap()), host(dw.unwrap()));
                    let (ex, ew) = (worst(&dx, &expected_dx), worst(&dw, &expected_dw));
                    assert!(
                        ex < 1e-4 && ew < 1e-4,
                        "{kernel}x{kernel}/{stride} pad {pad}, limit {limit}: dx off by {ex}, dw by {ew}"
                    );
                }
                let (dx, dw) = backward_in_parts(&x, &w, &dy_last, g, [true, false], 1).unwrap();
                assert!(dx.is_some() && dw.is_none());
                let (dx, dw) = backward_in_parts(&x, &w, &dy_last, g, [false, true], 1).unwrap();
                assert!(dx.is_none() && dw.is_some());
            }
        });
    }

    /// A weight gradient deep enough to split its depth (8 images of 16x16, 4 -> 4
    /// channels: a 4 x 36 output summed over 2,048 positions, in four ranges of burn's
    /// matmul, `matmul::depth_split`) is still burn's `conv2d_weight_backward`.
    #[test]
    fn a_deep_weight_gradient_splits_and_is_burns() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let (n, c, side, o) = (8, 4, 16, 4);
        let (x, w) = operands([n, c, side, o], 3, 9, &device);
        let g = Geometry {
            kernel: [3, 3],
            stride: [1, 1],
            padding: [1, 1],
        };
        let dy = random(
            [n, o, side, side],
            Distribution::Normal(0.0, 1.0),
            11,
            &device,
        );
        let rows = rows_of(dy.clone()).transpose();
        let patches = im2col(&x, g).unwrap();
        assert_eq!(matmul::depth_split::splits_for(&rows, &patches), 4);
        let options = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
        let (_, expected) = flex_conv2d_backward(&x, &w, &dy, options);
        let (_, dw) = conv2d_backward(&x, &w, &dy, g, false, true).unwrap();
        let got = host(dw.unwrap());
        assert_eq!(got.len(), expected.len());
        let worst = got
            .iter()
            .zip(&expected)
            .fold(0.0f32, |m, (a, e)| m.max((a - e).abs()));
        assert!(worst < 1e-3, "off by {worst}");
    }

    /// Off wgpu there is nothing to launch: the caller runs the convolution itself.
    #[test]
    fn off_wgpu_it_declines() {
        let x = Tensor::<4>::zeros([1, 1, 4, 4], &Device::flex());
        let g = Geometry {
            kernel: [3, 3],
            stride: [1, 1],
            padding: [1, 1],
        };
        assert!(im2col(&x, g).is_none());
    }
}
