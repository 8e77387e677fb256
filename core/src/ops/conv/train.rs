//! The convolution of a training step on a wgpu device: its forward pass by burn's kernel,
//! as im2col and a matmul ([`super::im2col`]) or as the implicit convolution
//! ([`super::implicit`]), whichever [`super::choice`] measured fastest for the
//! shape; its backward pass as two matmuls around im2col and col2im
//! ([`super::im2col::conv2d_backward`]), or as two implicit matmuls where the forward pass
//! chose those ([`super::choice::backward_way`]).
//!
//! Why: on burn's WGSL compiler a 3x3 convolution's forward pass has only direct kernels
//! to choose from, and its backward passes build and reassemble their patches a tap block
//! at a time (a slice and a slice-assignment each), which made slices the most launched
//! kernels of a ResNet-18 step. This is an autodiff operation of our own (a burn backend
//! extension) whose backward computes the gradients burn's `conv2d_x_backward` and
//! `conv2d_weight_backward` compute, in about four launches per layer; where our kernels
//! decline (a size past their 32-bit indices) those two run instead.
//! The operation has no bias: where a layer has one (the CNN's), it is added after as an
//! ordinary tensor operation with its own gradient.
//!
//! A mixed-precision step's convolutions take the same operation in f16, on weights cast
//! to f16 (their gradients go back to the f32 weights through the cast): im2col, col2im
//! and burn's matmul all come in f16, so the arithmetic is an f16 matrix product, what a
//! GPU's matrix units take. The implicit convolution is offered there only on cooperative
//! matrices (`TAKS_GPU_COOP=1`, [`crate::plan::Kernel::ConvImplicitCoop`]): the three
//! products as implicit GEMMs on tensor cores, no patches written out.
//!
//! Only on a wgpu device and only as `TAKS_GPU_CONV` says (`auto`, the default, or
//! `im2col`); elsewhere a layer runs burn's own convolution, so CPU results keep their
//! bits.

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::ops::ModuleOps;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Cube, Dispatch, backend_extension};
use burn::nn::conv::Conv2d;
use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{DType, Tensor};

use super::choice::{ConvShape, backward_way, forward_fastest};
use super::geometry::Geometry;
use super::im2col;
use super::implicit;
use crate::plan::{GpuConv, Kernel, Switches, Way};
use crate::precision::is_low;

#[backend_extension(Autodiff, Cube)]
pub trait Im2colConv: Backend {
    /// `conv2d(x, weight)` without bias, stride `(sh, sw)`, symmetric padding `(ph, pw)`:
    /// by the way `how` forces (`im2col`, `implicit`), else by whichever way measured
    /// fastest for the shape ([`forward_fastest`]).
    ///
    /// Implemented on wgpu (`Cube`) and its autodiff alone: [`forward`] sends nothing else
    /// here (burn's dispatch would refuse another backend with a panic). The backward
    /// passes are [`gradient`], on the inner backend.
    fn im2col_conv2d(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        sh: usize,
        sw: usize,
        ph: usize,
        pw: usize,
        how: GpuConv,
    ) -> FloatTensor<Self>;
}

impl Im2colConv for Cube {
    fn im2col_conv2d(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        sh: usize,
        sw: usize,
        ph: usize,
        pw: usize,
        how: GpuConv,
    ) -> FloatTensor<Self> {
        let options = ConvOptions::new([sh, sw], [ph, pw], [1, 1], 1);
        let x = Tensor::<4>::from_primitive::<Cube>(x);
        let weight = Tensor::<4>::from_primitive::<Cube>(weight);
        let [_, _, kh, kw] = weight.dims();
        let geometry = Geometry {
            kernel: [kh, kw],
            stride: [sh, sw],
            padding: [ph, pw],
        };
        let columns = im2col::columns(weight.clone());
        let shape = ConvShape {
            input: x.dims(),
            weight: weight.dims(),
            stride: [sh, sw],
            padding: [ph, pw],
            epilogue: "",
            low: x.dtype() != DType::F32,
        };
        let _clocked = shape.clocked("conv forward");
        let y = forward_fastest(how, shape, &x.device(), |way| match way {
            Way::Burn => Some(conv2d(x.clone(), weight.clone(), None, options.clone())),
            Way::Im2col => im2col::conv2d(&x, &columns, None, geometry, false),
            Way::Implicit => implicit::conv2d(&x, &columns, None, geometry, false),
        });
        y.try_into_primitive::<Cube>()
            .expect("a Cube tensor stays on Cube")
    }
}

/// The input's or the weight's gradient (`of`) of [`Im2colConv::im2col_conv2d`] for the
/// output's gradient `dy`: by taks's ways where [`cube_backward`] takes it, burn's own
/// backward where it declines.
fn gradient(
    x: FloatTensor<Cube>,
    weight: FloatTensor<Cube>,
    dy: FloatTensor<Cube>,
    options: ConvOptions<2>,
    of: Of,
) -> FloatTensor<Cube> {
    let _clocked = crate::gpu::clock::op(of.name(), || {
        let dims = |t: &FloatTensor<Cube>| Tensor::<4>::from_primitive::<Cube>(t.clone()).dims();
        let shape = ConvShape {
            input: dims(&x),
            weight: dims(&weight),
            stride: options.stride,
            padding: [options.padding[0].0, options.padding[1].0],
            epilogue: "",
            low: x.dtype != DType::F32,
        };
        (shape.layer(), shape.cost())
    });
    if let Some(gradient) = cube_backward(&x, &weight, &dy, &options, of) {
        return gradient;
    }
    match of {
        Of::Input => <Cube as ModuleOps<Cube>>::conv2d_x_backward(x, weight, dy, options),
        Of::Weight => <Cube as ModuleOps<Cube>>::conv2d_weight_backward(x, weight, dy, options),
    }
}

/// Which gradient a backward pass computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Of {
    Input,
    Weight,
}

impl Of {
    /// The pass's name on the per-op clock.
    fn name(self) -> &'static str {
        match self {
            Of::Input => "conv input gradient",
            Of::Weight => "conv weight gradient",
        }
    }
}

/// The input's or the weight's gradient the way [`backward_way`] says: by
/// [`implicit::conv2d_backward`] (one matmul with implicit patches) or by
/// [`im2col::conv2d_backward`] (im2col, a matmul, col2im for the input's); `None` where
/// both decline, and burn's backward runs instead.
fn cube_backward(
    x: &FloatTensor<Cube>,
    weight: &FloatTensor<Cube>,
    dy: &FloatTensor<Cube>,
    options: &ConvOptions<2>,
    of: Of,
) -> Option<FloatTensor<Cube>> {
    let tensor = |t: &FloatTensor<Cube>| Tensor::<4>::from_primitive::<Cube>(t.clone());
    let weight = tensor(weight);
    let [_, _, kh, kw] = weight.dims();
    let [(top, bottom), (left, right)] = options.padding;
    if top != bottom || left != right || options.dilation != [1, 1] || options.groups != 1 {
        return None;
    }
    let geometry = Geometry {
        kernel: [kh, kw],
        stride: options.stride,
        padding: [top, left],
    };
    let x = tensor(x);
    let dy = tensor(dy);
    let shape = ConvShape {
        input: x.dims(),
        weight: weight.dims(),
        stride: options.stride,
        padding: [top, left],
        epilogue: "",
        low: x.dtype() != DType::F32,
    };
    let want = [of == Of::Input, of == Of::Weight];
    let by_implicit = || implicit::conv2d_backward(&x, &weight, &dy, geometry, want[0], want[1]);
    let by_im2col = || im2col::conv2d_backward(&x, &weight, &dy, geometry, want[0], want[1]);
    let (dx, dw) = match backward_way(&shape) {
        Way::Implicit => by_implicit().or_else(by_im2col)?,
        _ => by_im2col()?,
    };
    let gradient = match of {
        Of::Input => dx?,
        Of::Weight => dw?,
    };
    Some(
        gradient
            .try_into_primitive::<Cube>()
            .expect("a Cube tensor stays on Cube"),
    )
}

impl<C: CheckpointStrategy> Im2colConv for Autodiff<Cube, C> {
    fn im2col_conv2d(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        sh: usize,
        sw: usize,
        ph: usize,
        pw: usize,
        how: GpuConv,
    ) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct ConvBackward;

        impl Backward<Cube, 2> for ConvBackward {
            type State = (NodeId, NodeId, ConvOptions<2>);

            fn backward(
                self,
                ops: Ops<Self::State, 2>,
                grads: &mut Gradients,
                checkpointer: &mut Checkpointer,
            ) {
                let [node_x, node_weight] = ops.parents;
                let grad = grads.consume::<Cube>(&ops.node);
                let (x_state, weight_state, options) = ops.state;
                let x = checkpointer.retrieve_node_output::<FloatTensor<Cube>>(x_state);
                let weight = checkpointer.retrieve_node_output::<FloatTensor<Cube>>(weight_state);
                if let Some(node) = node_x {
                    let dx = gradient(
                        x.clone(),
                        weight.clone(),
                        grad.clone(),
                        options.clone(),
                        Of::Input,
                    );
                    grads.register::<Cube>(node.id, dx);
                }
                if let Some(node) = node_weight {
                    let dw = gradient(x, weight, grad, options, Of::Weight);
                    grads.register::<Cube>(node.id, dw);
                }
            }
        }

        let options = ConvOptions::new([sh, sw], [ph, pw], [1, 1], 1);
        match ConvBackward
            .prepare::<C>([x.node(), weight.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let x_state = prep.checkpoint(&x);
                let weight_state = prep.checkpoint(&weight);
                let y = Cube::im2col_conv2d(
                    x.into_primitive(),
                    weight.into_primitive(),
                    sh,
                    sw,
                    ph,
                    pw,
                    how,
                );
                prep.finish((x_state, weight_state, options), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(Cube::im2col_conv2d(
                x.into_primitive(),
                weight.into_primitive(),
                sh,
                sw,
                ph,
                pw,
                how,
            )),
        }
    }
}

/// `conv(x)` of a training step: through [`Im2colConv`] on a wgpu device (as
/// `TAKS_GPU_CONV` says), burn's own convolution elsewhere (so CPU results keep their bits).
pub(crate) fn forward(conv: &Conv2d, x: Tensor<4>) -> Tensor<4> {
    forward_with(conv, x, Switches::current().conv)
}

/// [`forward`] as `how` says.
fn forward_with(conv: &Conv2d, x: Tensor<4>, how: GpuConv) -> Tensor<4> {
    match unbiased(conv, x, how) {
        (y, Some(bias)) => {
            let channels = bias.dims()[0];
            let bias = match is_low(y.dtype()) {
                Some(low) => bias.cast(low),
                None => bias,
            };
            y + bias.reshape([1, channels, 1, 1])
        }
        (y, None) => y,
    }
}

/// [`forward`], but where it runs through [`Im2colConv`] (or in a mixed-precision step's
/// 16 bits) the bias comes back beside the output instead of added to it, for the batch
/// norm after the convolution to fold in ([`crate::ops::batch_norm::train::forward_shifted`]).
/// Elsewhere (burn's own convolution, whose bits the CPU results keep) the output has its
/// bias and none comes back.
pub(crate) fn forward_leaving_bias(conv: &Conv2d, x: Tensor<4>) -> (Tensor<4>, Option<Tensor<1>>) {
    unbiased(conv, x, Switches::current().conv)
}

/// The convolution through [`Im2colConv`] with its bias apart, when `how` and the device
/// offer it (in a mixed-precision step's 16 bits too, on its weights cast to that type);
/// otherwise burn's, with its bias in f32 and apart in 16 bits
/// ([`crate::ops::mixed_precision::conv`]).
fn unbiased(conv: &Conv2d, x: Tensor<4>, how: GpuConv) -> (Tensor<4>, Option<Tensor<1>>) {
    let low = is_low(x.dtype());
    let geometry = Geometry::of(conv);
    let Some(Geometry {
        stride: [sh, sw],
        padding: [ph, pw],
        ..
    }) = geometry.filter(|_| how.offers_taks_ways() && Kernel::ConvIm2col.runs_for(&x))
    else {
        return match low {
            Some(low) => crate::ops::mixed_precision::conv(conv, x, low),
            None => (conv.forward(x), None),
        };
    };
    let weight = match low {
        Some(low) => conv.weight.val().cast(low),
        None => conv.weight.val(),
    };
    let y = Dispatch::im2col_conv2d(
        x.into_dispatch(),
        weight.into_dispatch(),
        sh,
        sw,
        ph,
        pw,
        how,
    );
    (
        Tensor::<4>::from_dispatch(y),
        conv.bias.as_ref().map(|b| b.val()),
    )
}

#[cfg(test)]
mod tests {
    use burn::nn::PaddingConfig2d;
    use burn::nn::conv::Conv2dConfig;
    use burn::tensor::Distribution;

    use super::*;
    use crate::nn::drawn_from_seed;
    use crate::test_support::{host, largest, random};

    /// The largest difference relative to `b`'s largest magnitude.
    fn gap(a: &[f32], b: &[f32]) -> f32 {
        crate::test_support::gap(a, b) / largest(b)
    }

    /// On lavapipe, taks's convolutions against burn's own, forward and backward (the
    /// input's and the weights' gradients), with and without bias and stride: every one
    /// by im2col, then every one implicit, under each matmul switch.
    #[test]
    fn taks_training_convolutions_are_burns() {
        crate::test_support::under_each_matmul(|| {
            for how in [GpuConv::Im2col, GpuConv::Implicit] {
                let switches = Switches {
                    conv: how,
                    ..Switches::current()
                };
                switches.during(|| taks_convolutions_against_burns(how));
            }
        });
    }

    fn taks_convolutions_against_burns(how: GpuConv) {
        let device = crate::gpu::direct::start()
            .expect("a wgpu adapter")
            .0
            .autodiff();
        for (kernel, stride, pad, bias) in [(3, 1, 1, true), (3, 2, 1, false), (7, 2, 3, false)] {
            let config = Conv2dConfig::new([4, 6], [kernel, kernel])
                .with_stride([stride, stride])
                .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
                .with_bias(bias);
            let conv = drawn_from_seed(&device, 11 + kernel as u64 * 10 + stride as u64, || {
                config.init(&device)
            });
            let x =
                random([3, 4, 12, 12], Distribution::Normal(0.0, 1.0), 1, &device).require_grad();
            let ours = forward_with(&conv, x.clone(), how);
            let burns = conv.forward(x.clone());
            assert!(
                im2col::is_channels_last(&ours),
                "{how:?}: taks's kernel ran (its output lies channels last)"
            );
            assert!(gap(&host(ours.clone()), &host(burns.clone())) < 1e-5);
            // A loss that weighs every output differently.
            let w = random(ours.dims(), Distribution::Normal(0.0, 1.0), 2, &device);
            let g_ours = (ours * w.clone()).sum().backward();
            let g_burns = (burns * w).sum().backward();
            let (dx_ours, dx_burns) = (
                host(x.grad(&g_ours).unwrap()),
                host(x.grad(&g_burns).unwrap()),
            );
            assert!(
                gap(&dx_ours, &dx_burns) < 1e-5,
                "{how:?} {kernel}x{kernel}/{stride}: dx"
            );
            let (dw_ours, dw_burns) = (
                host(conv.weight.val().grad(&g_ours).unwrap()),
                host(conv.weight.val().grad(&g_burns).unwrap()),
            );
            assert!(
                gap(&dw_ours, &dw_burns) < 1e-5,
                "{how:?} {kernel}x{kernel}/{stride}: dw"
            );
        }
    }

    /// On lavapipe (which offers `shader-f16`), a mixed-precision step's convolution: on
    /// an f16 input it runs im2col, burn's f16 matmul and col2im in f16 (its output f16,
    /// channels last), and its output and both gradients (the input's in f16, the f32
    /// weight's through the cast) are the f32 convolution's to f16's rounding: measured
    /// here at most 0.06% of the largest value off, for each of the three (f16 keeps 11
    /// bits, 0.05%). Reading an f16 buffer as f32 or a wrong patch index is off by the
    /// whole value.
    #[test]
    fn an_f16_convolution_runs_im2col_in_f16() {
        use burn::tensor::FloatDType;
        let device = crate::gpu::direct::start()
            .expect("a wgpu adapter")
            .0
            .autodiff();
        for (kernel, stride, pad) in [(3, 1, 1), (3, 2, 1), (7, 2, 3)] {
            let config = Conv2dConfig::new([4, 6], [kernel, kernel])
                .with_stride([stride, stride])
                .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad));
            let conv = drawn_from_seed(&device, 12 + kernel as u64 * 10 + stride as u64, || {
                config.init(&device)
            });
            let x = random([3, 4, 12, 12], Distribution::Normal(0.0, 1.0), 3, &device);
            let x16 = x.clone().cast(FloatDType::F16).require_grad();
            let x32 = x16.clone().cast(FloatDType::F32).detach().require_grad();
            let (ours, bias) = unbiased(&conv, x16.clone(), GpuConv::Im2col);
            assert_eq!(ours.dtype(), DType::F16, "{kernel}x{kernel}/{stride}");
            assert!(bias.is_some(), "the bias comes back apart");
            assert!(
                im2col::is_channels_last(&ours),
                "{kernel}x{kernel}/{stride}: the im2col kernel ran"
            );
            let (truth, _) = unbiased(&conv, x32.clone(), GpuConv::Plain);
            let truth = truth - conv.bias.as_ref().unwrap().val().reshape([1, 6, 1, 1]);
            let out = gap(&host(ours.clone()), &host(truth.clone()));
            let w = random(ours.dims(), Distribution::Normal(0.0, 1.0), 4, &device);
            let g_ours = (ours.cast(FloatDType::F32) * w.clone()).sum().backward();
            let g_truth = (truth * w).sum().backward();
            let dx16 = x16.grad(&g_ours).unwrap();
            assert_eq!(dx16.dtype(), DType::F16);
            let dx = gap(&host(dx16), &host(x32.grad(&g_truth).unwrap()));
            let dw = gap(
                &host(conv.weight.val().grad(&g_ours).unwrap()),
                &host(conv.weight.val().grad(&g_truth).unwrap()),
            );
            assert!(
                out < 2e-3 && dx < 2e-3 && dw < 2e-3,
                "{kernel}x{kernel}/{stride}: output off by {out}, dx by {dx}, dw by {dw}"
            );
        }
    }

    /// On an adapter with cooperative matrices, under `TAKS_GPU_COOP=1` (scripts/test.sh
    /// runs this through scripts/lavapipe-coop.sh): an f16 convolution's three products,
    /// the output and both gradients, each take the kernel once, and burn's matmul,
    /// padding and casts none of them; [`an_f16_convolution_runs_im2col_in_f16`] holds
    /// their values to the f32 convolution's in the same run.
    #[test]
    #[ignore = "needs cooperative matrices and TAKS_GPU_COOP=1: scripts/lavapipe-coop.sh"]
    fn an_f16_convolutions_products_take_cooperative_matrices() {
        use burn::tensor::FloatDType;
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let kernel = match crate::ops::matmul::coop::verdict(&device) {
            Some(Ok(kernel)) => kernel.name,
            other => panic!("cooperative matrices not offered or failed: {other:?}"),
        };
        let device = device.autodiff();
        let config =
            Conv2dConfig::new([4, 6], [3, 3]).with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1));
        let conv = drawn_from_seed(&device, 5, || config.init(&device));
        let x = random([3, 4, 12, 12], Distribution::Normal(0.0, 1.0), 3, &device)
            .cast(FloatDType::F16)
            .require_grad();
        let w = random([3, 6, 12, 12], Distribution::Normal(0.0, 1.0), 4, &device);
        let (grads, kernels) = crate::gpu::launches::count_by_kernel(&device, || {
            let (y, _) = unbiased(&conv, x.clone(), GpuConv::Im2col);
            (y.cast(FloatDType::F32) * w.clone()).sum().backward()
        });
        assert!(x.grad(&grads).is_some());
        let launched = |name: &str| kernels.iter().find(|(k, _)| k == name).map_or(0, |k| k.1);
        assert_eq!(launched(kernel), 3, "{kernels:?}");
        for (name, _) in &kernels {
            let burns = ["Matmul", "Pad", "SliceAssign"]
                .iter()
                .any(|k| name.contains(k));
            assert!(!burns, "{name} launched: {kernels:?}");
        }
    }
}
