//! A 2-D convolution as one launch of taks's tiled matmul per product, its patches never
//! written out (an implicit GEMM): the forward pass with its bias and ReLU, the weight's
//! gradient and the input's gradient (`shaders/matmul.wgsl`'s convolution operands,
//! [`Operand`]). What [`super::im2col`]'s convolutions run when `TAKS_GPU_MATMUL=tiled`.
//! In f16 the same products run on cooperative matrices (`shaders/matmul_coop_f16.wgsl`,
//! tensor cores, f32 sums) where the plan offers them (`TAKS_GPU_COOP=1`, an adapter that
//! has them, a passed self-check: [`crate::ops::matmul::coop::usable`]), without a bias
//! or ReLU (a training step's convolutions leave theirs to the batch norm).
//!
//! Why: im2col writes a patches matrix `C kh kw` times the input's size and reads it back,
//! col2im reads the patches' gradient, and where the patches pass the device's largest
//! buffer the batch goes in parts, each with its own launches (on lavapipe, whose buffers
//! stop at 128 MiB, the CNN's 32x32 layers take three). Computing each patch entry's
//! address as the matmul loads it does away with all three: one launch per product,
//! whatever the batch. The cost is the address arithmetic in the matmul's loads, which a
//! GPU hides behind the loads themselves; on lavapipe, a CPU, it does not.
//!
//! The results are burn's convolution and its two gradients (the tests compare them on
//! lavapipe, the f16 ones on Mesa 26's, which has cooperative matrices). `None` off wgpu,
//! for a 16-bit input where cooperative matrices are not offered (or with a bias or ReLU),
//! or where an address passes 32 bits (the caller then goes through im2col).

use burn::tensor::Tensor;

use super::geometry::Geometry;
use super::im2col::{from_rows, rows_of};
use crate::ops::matmul::{Operand, product};

/// `conv(x, weight) + bias` (where there is one), then ReLU when `relu`: `x`
/// `[N, C, H, W]` (any layout), `columns` the weight as `[C kh kw, O]`, `bias` `[O]`;
/// `[N, O, Ho, Wo]` laid out channels last, as [`super::im2col::conv2d`] gives it.
pub(crate) fn conv2d(
    x: &Tensor<4>,
    columns: &Tensor<2>,
    bias: Option<&Tensor<1>>,
    g: Geometry,
    relu: bool,
) -> Option<Tensor<4>> {
    let [n, _, h, w] = x.dims();
    let [out_h, out_w] = g.output(h, w);
    let o = columns.dims()[1];
    let y = product(Operand::Patches(x, g), Operand::Matrix(columns), bias, relu)?;
    Some(from_rows(y, [n, out_h, out_w, o]))
}

/// The gradients of `conv(x, weight)` for the output's gradient `dy` `[N, O, Ho, Wo]`
/// (any layout): the input's `[N, C, H, W]`, laid out channels last, when `want_x`, and
/// the weight's when `want_weight`, as [`super::im2col::conv2d_backward`] gives them.
///
/// The weight's gradient is `dy^T` `[O, P]` times the patches `[P, C kh kw]`; the
/// input's is the transposed convolution's patches of `dy` `[N H W, O kh kw]` times the
/// weight as `[O kh kw, C]`. One launch each (and a copy of `dy` where it is not
/// channels last).
pub(crate) fn conv2d_backward(
    x: &Tensor<4>,
    weight: &Tensor<4>,
    dy: &Tensor<4>,
    g: Geometry,
    want_x: bool,
    want_weight: bool,
) -> Option<(Option<Tensor<4>>, Option<Tensor<4>>)> {
    let [n, c, h, w] = x.dims();
    let [o, _, kh, kw] = weight.dims();
    let [out_h, out_w] = g.output(h, w);
    assert_eq!(dy.dims(), [n, o, out_h, out_w], "the output's gradient");
    let dw = match want_weight {
        true => {
            let dy_rows = rows_of(dy.clone()).transpose();
            let dw = product(
                Operand::Matrix(&dy_rows),
                Operand::Patches(x, g),
                None,
                false,
            )?;
            Some(dw.reshape([o, c, kh, kw]))
        }
        false => None,
    };
    let dx = match want_x {
        true => {
            let dx = product(
                Operand::OutputTaps(dy, g, [h, w]),
                Operand::WeightTaps(weight),
                None,
                false,
            )?;
            Some(from_rows(dx, [n, h, w, c]))
        }
        false => None,
    };
    Some((dx, dw))
}

#[cfg(test)]
mod tests {
    use burn::tensor::ops::ConvOptions;
    use burn::tensor::{DType, Device, Distribution};

    use super::*;
    use crate::test_support::{flex_conv2d, flex_conv2d_backward, gap, host, random};

    /// `[N, C, H, W]` random values, laid out channels last when `last`.
    fn laid_out(dims: [usize; 4], last: bool, seed: u64, device: &Device) -> Tensor<4> {
        let [n, c, h, w] = dims;
        let normal = Distribution::Normal(0.0, 1.0);
        match last {
            true => random([n, h, w, c], normal, seed, device).permute([0, 3, 1, 2]),
            false => random(dims, normal, seed, device),
        }
    }

    /// On lavapipe: the forward pass (with bias and ReLU, and without) and both gradients
    /// are burn's (on flex: [`flex_conv2d`]), for the paper's kernel shapes (3x3 stride 1
    /// and 2, the 1x1 shortcut, ResNet-18's 7x7 stem), a non-square input, sizes across
    /// the matmul's tiles, and the input and the output's gradient both channels last and
    /// contiguous.
    #[test]
    fn the_implicit_convolution_and_its_gradients_are_burns() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        // (kernel, stride, pad, [n, c, h, w], o)
        let cases = [
            (3, 1, 1, [3, 5, 11, 11], 6),
            (3, 2, 1, [3, 5, 12, 9], 6),
            (1, 2, 0, [2, 7, 10, 10], 9),
            (7, 2, 3, [2, 3, 13, 15], 8),
            (3, 1, 1, [2, 20, 9, 7], 70),
        ];
        for (kernel, stride, pad, dims, o) in cases {
            let [n, c, h, w] = dims;
            let g = Geometry {
                kernel: [kernel, kernel],
                stride: [stride, stride],
                padding: [pad, pad],
            };
            let [out_h, out_w] = g.output(h, w);
            let options = ConvOptions::new([stride, stride], [pad, pad], [1, 1], 1);
            let weight = random(
                [o, c, kernel, kernel],
                Distribution::Normal(0.0, 0.3),
                3,
                &device,
            );
            let bias = random([o], Distribution::Normal(0.0, 1.0), 4, &device);
            let columns = crate::ops::conv::im2col::columns(weight.clone());
            let scale = ((c * kernel * kernel) as f32).sqrt();
            for last in [true, false] {
                let x = laid_out(dims, last, 5, &device);
                let case = format!(
                    "{kernel}x{kernel}/{stride} pad {pad}, {dims:?} -> {o}, channels last {last}"
                );
                for (with_bias, with_relu) in [(true, true), (false, false)] {
                    let mut expected =
                        flex_conv2d(&x, &weight, with_bias.then_some(&bias), options.clone());
                    if with_relu {
                        expected.iter_mut().for_each(|v| *v = v.max(0.0));
                    }
                    let got = conv2d(&x, &columns, with_bias.then_some(&bias), g, with_relu)
                        .expect("on wgpu");
                    assert_eq!(got.dims(), [n, o, out_h, out_w]);
                    let off = gap(&host(got), &expected);
                    assert!(
                        off < 1e-5 * scale,
                        "{case}, bias {with_bias}: y off by {off}"
                    );
                }

                let dy = laid_out([n, o, out_h, out_w], !last, 6, &device);
                let (expected_dx, expected_dw) =
                    flex_conv2d_backward(&x, &weight, &dy, options.clone());
                let (dx, dw) = conv2d_backward(&x, &weight, &dy, g, true, true).expect("on wgpu");
                let (dx, dw) = (dx.unwrap(), dw.unwrap());
                assert_eq!((dx.dims(), dw.dims()), (dims, weight.dims()));
                let (dx, dw) = (host(dx), host(dw));
                let off_x = gap(&dx, &expected_dx);
                let off_w = gap(&dw, &expected_dw);
                let dw_scale = ((n * out_h * out_w) as f32).sqrt();
                assert!(off_x < 1e-5 * scale, "{case}: dx off by {off_x}");
                assert!(off_w < 1e-5 * dw_scale, "{case}: dw off by {off_w}");
                let (dx, dw) = conv2d_backward(&x, &weight, &dy, g, false, true).unwrap();
                assert!(dx.is_none() && dw.is_some());
                let (dx, dw) = conv2d_backward(&x, &weight, &dy, g, true, false).unwrap();
                assert!(dx.is_some() && dw.is_none());
            }
        }
    }

    /// On an adapter with cooperative matrices, under `TAKS_GPU_COOP=1` (scripts/test.sh
    /// runs this on Mesa 26's lavapipe): every convolution shape of the CNN on 32x32
    /// images and of ResNet-18 on 224x224 ones, in f16, its forward pass and both
    /// gradients each one launch of the kernel on cooperative matrices (no im2col, no
    /// col2im, no burn matmul), against flex's f32 convolution of the same f16 values to
    /// f16's rounding: each element within 2^-10 of its value, plus a ten-thousandth of
    /// the largest (the f32 sums' order differs). A wrong tap, a dropped tile or a
    /// stride read wrong is off by whole values.
    #[test]
    #[ignore = "needs cooperative matrices and TAKS_GPU_COOP=1: scripts/lavapipe-coop.sh"]
    fn f16_convolutions_on_cooperative_matrices_are_burns() {
        use burn::tensor::FloatDType;
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let kernel = match crate::ops::matmul::coop::verdict(&device) {
            Some(Ok(kernel)) => kernel.name,
            other => panic!("cooperative matrices not offered or failed: {other:?}"),
        };
        // (kernel, stride, pad, in channels, out channels, side): the CNN's six layers,
        // then ResNet-18's stem, 3x3 layers and 1x1 shortcuts.
        let cases = [
            (3, 1, 1, 3, 64, 32),
            (3, 1, 1, 64, 64, 32),
            (3, 1, 1, 64, 128, 16),
            (3, 1, 1, 128, 128, 16),
            (3, 1, 1, 128, 196, 8),
            (3, 1, 1, 196, 16, 8),
            (7, 2, 3, 3, 64, 224),
            (3, 1, 1, 64, 64, 56),
            (3, 2, 1, 64, 128, 56),
            (1, 2, 0, 64, 128, 56),
            (3, 1, 1, 128, 128, 28),
            (3, 2, 1, 128, 256, 28),
            (1, 2, 0, 128, 256, 28),
            (3, 1, 1, 256, 256, 14),
            (3, 2, 1, 256, 512, 14),
            (1, 2, 0, 256, 512, 14),
            (3, 1, 1, 512, 512, 7),
        ];
        let within = |ours: &[f32], want: &[f32], what: &str| {
            assert_eq!(ours.len(), want.len(), "{what}");
            let floor = 1e-4 * crate::test_support::largest(want);
            for (i, (&x, &w)) in ours.iter().zip(want).enumerate() {
                let off = (x - w).abs();
                assert!(
                    off <= w.abs() / 1024.0 + floor,
                    "{what}: element {i} is {x}, burn's {w}"
                );
            }
        };
        // Launches of the pass that adds split-K's sums, over every case: the weight
        // gradients' deep products with few output blocks split.
        let mut summed = 0;
        for (k, stride, pad, c, o, side) in cases {
            let n = 2;
            let g = Geometry {
                kernel: [k, k],
                stride: [stride, stride],
                padding: [pad, pad],
            };
            let [out_h, out_w] = g.output(side, side);
            let options = ConvOptions::new([stride, stride], [pad, pad], [1, 1], 1);
            let half = |t: Tensor<4>| t.cast(FloatDType::F16);
            let x = half(laid_out([n, c, side, side], true, 5, &device));
            let weight = half(random(
                [o, c, k, k],
                Distribution::Normal(0.0, 0.2),
                3,
                &device,
            ));
            let dy = half(laid_out([n, o, out_h, out_w], true, 6, &device));
            let f32s = |t: &Tensor<4>| t.clone().cast(FloatDType::F32);
            let columns = crate::ops::conv::im2col::columns(weight.clone());
            let case = format!("{k}x{k}/{stride} pad {pad}, {c} -> {o} on {side}x{side}");
            let ((y, (dx, dw)), kernels) = crate::gpu::launches::count_by_kernel(&device, || {
                let y = conv2d(&x, &columns, None, g, false).expect("taken");
                (
                    y,
                    conv2d_backward(&x, &weight, &dy, g, true, true).expect("taken"),
                )
            });
            let (dx, dw) = (dx.unwrap(), dw.unwrap());
            assert_eq!(
                kernels.iter().find(|(name, _)| name == kernel).map(|k| k.1),
                Some(3),
                "{case}: {kernels:?}"
            );
            let sums = kernels
                .iter()
                .find(|(name, _)| name == "taks_sum_splits_f16");
            summed += sums.map_or(0, |k| k.1);
            for (name, _) in &kernels {
                let others = ["im2col", "col2im", "Matmul"]
                    .iter()
                    .any(|k| name.contains(k));
                assert!(!others, "{case}: {name} launched: {kernels:?}");
            }
            assert_eq!(
                (y.dtype(), dx.dtype(), dw.dtype()),
                (DType::F16, DType::F16, DType::F16)
            );
            let (x32, w32, dy32) = (f32s(&x), f32s(&weight), f32s(&dy));
            within(
                &host(y),
                &flex_conv2d(&x32, &w32, None, options.clone()),
                &format!("{case}: y"),
            );
            let (want_dx, want_dw) = flex_conv2d_backward(&x32, &w32, &dy32, options);
            within(&host(dx), &want_dx, &format!("{case}: dx"));
            within(&host(dw), &want_dw, &format!("{case}: dw"));
        }
        assert!(summed > 0, "no product split its depth");
    }

    /// Off wgpu there is nothing to launch: the caller runs the convolution itself.
    #[test]
    fn off_wgpu_it_declines() {
        let device = Device::flex();
        let x = Tensor::<4>::zeros([1, 2, 4, 4], &device);
        let columns = Tensor::<2>::zeros([18, 3], &device);
        let g = Geometry {
            kernel: [3, 3],
            stride: [1, 1],
            padding: [1, 1],
        };
        assert!(conv2d(&x, &columns, None, g, false).is_none());
    }
}
