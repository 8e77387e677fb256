//! The batch norm (and the ReLU after it) of a training step on a wgpu device: an
//! autodiff operation of our own over the kernels of [`super::kernels`], two
//! launches forward and two backward where burn's batch norm takes some thirty.
//!
//! The batch's statistics are computed first, outside the graph (with the running
//! statistics' update, as burn's `BatchNorm` makes it); the operation then normalises with
//! them, and its backward pass is the batch-norm gradient that accounts for the
//! statistics' dependence on the input (the same formula as burn's
//! `batch_norm_train_backward`). Only on a wgpu device, in training mode; elsewhere the
//! layer's own forward pass runs, so CPU results keep their bits.

use burn::backend::TensorMetadata;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::ops::FloatTensorOps;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Cube, Dispatch, backend_extension};
use burn::nn::BatchNorm;
use burn::tensor::activation::relu;
use burn::tensor::{Slice, Tensor};

use super::kernels::{self as kernels, Settings};
use crate::plan::Kernel;
use crate::precision::is_low;

#[backend_extension(Autodiff, Cube)]
pub trait FusedBatchNorm: Backend {
    /// `x` `[N, C, H, W]` normalised by the batch's `stats` (`[2 C]`: mean, biased
    /// variance), scaled by `gamma`, shifted by `beta`, then ReLU when `relu`.
    ///
    /// Implemented on wgpu (`Cube`) and its autodiff alone: [`forward`] sends nothing
    /// else here (burn's dispatch would refuse another backend with a panic). The backward
    /// pass is [`kernels::grad_sums`] then [`kernels::grad_x`], on the inner backend.
    fn batch_norm_relu(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        stats: FloatTensor<Self>,
        epsilon: f64,
        relu: bool,
    ) -> FloatTensor<Self>;
}

fn settings(epsilon: f64, relu: bool) -> Settings {
    Settings {
        epsilon,
        relu,
        momentum: 0.0,
    }
}

/// The kernels on a wgpu device.
impl FusedBatchNorm for Cube {
    fn batch_norm_relu(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        stats: FloatTensor<Self>,
        epsilon: f64,
        relu: bool,
    ) -> FloatTensor<Self> {
        let x = Tensor::<4>::from_primitive::<Cube>(x);
        let (gamma, beta, stats) = (vector(gamma), vector(beta), vector(stats));
        primitive(
            kernels::apply(&x, &gamma, &beta, &stats, settings(epsilon, relu))
                .expect("the forward batch norm's sizes fit the kernel (checked by the caller)"),
        )
    }
}

/// A backward pass's kernel ([`kernels::grad_sums`]: `[4 C]`, the statistics, then per
/// channel the sums that are beta's and gamma's gradients; or [`kernels::grad_x`]: `x`'s
/// gradient from those sums) on the primitives: `x` and `dy`
/// `[N, C, H, W]`, then gamma, beta and the per-channel figures the pass reads.
fn backward_pass<const D: usize>(
    pass: fn(
        &Tensor<4>,
        &Tensor<4>,
        &Tensor<1>,
        &Tensor<1>,
        &Tensor<1>,
        Settings,
    ) -> Option<Tensor<D>>,
    [x, dy]: [FloatTensor<Cube>; 2],
    [gamma, beta, per_channel]: [FloatTensor<Cube>; 3],
    epsilon: f64,
    relu: bool,
) -> FloatTensor<Cube> {
    let x = Tensor::<4>::from_primitive::<Cube>(x);
    let dy = Tensor::<4>::from_primitive::<Cube>(dy);
    let (gamma, beta, per_channel) = (vector(gamma), vector(beta), vector(per_channel));
    primitive(
        pass(
            &x,
            &dy,
            &gamma,
            &beta,
            &per_channel,
            settings(epsilon, relu),
        )
        .expect("the backward's sizes are the forward's"),
    )
}

fn vector(t: FloatTensor<Cube>) -> Tensor<1> {
    Tensor::<1>::from_primitive::<Cube>(t)
}

fn primitive<const D: usize>(t: Tensor<D>) -> FloatTensor<Cube> {
    t.try_into_primitive::<Cube>()
        .expect("a Cube tensor stays on Cube")
}

impl<C: CheckpointStrategy> FusedBatchNorm for Autodiff<Cube, C> {
    fn batch_norm_relu(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        stats: FloatTensor<Self>,
        epsilon: f64,
        relu: bool,
    ) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct BatchNormBackward;

        impl Backward<Cube, 3> for BatchNormBackward {
            type State = (NodeId, NodeId, NodeId, FloatTensor<Cube>, f64, bool);

            fn backward(
                self,
                ops: Ops<Self::State, 3>,
                grads: &mut Gradients,
                checkpointer: &mut Checkpointer,
            ) {
                let [node_x, node_gamma, node_beta] = ops.parents;
                let dy = grads.consume::<Cube>(&ops.node);
                // x and dy read, dx written, once each at least.
                let shape = Tensor::<4>::from_primitive::<Cube>(dy.clone());
                let _clocked = crate::gpu::clock::elementwise("batch norm backward", &shape, 3);
                let (x, gamma, beta, stats, epsilon, relu) = ops.state;
                let x = checkpointer.retrieve_node_output::<FloatTensor<Cube>>(x);
                let gamma = checkpointer.retrieve_node_output::<FloatTensor<Cube>>(gamma);
                let beta = checkpointer.retrieve_node_output::<FloatTensor<Cube>>(beta);
                let channels = stats.shape()[0] / 2;
                let sums = backward_pass(
                    kernels::grad_sums,
                    [x.clone(), dy.clone()],
                    [gamma.clone(), beta.clone(), stats],
                    epsilon,
                    relu,
                );
                let part = |k: usize| {
                    let slice = Slice {
                        start: (k * channels) as isize,
                        end: Some(((k + 1) * channels) as isize),
                        step: 1,
                    };
                    Cube::float_slice(sums.clone(), &[slice])
                };
                if let Some(node) = node_beta {
                    grads.register::<Cube>(node.id, part(2));
                }
                if let Some(node) = node_gamma {
                    grads.register::<Cube>(node.id, part(3));
                }
                if let Some(node) = node_x {
                    let dx =
                        backward_pass(kernels::grad_x, [x, dy], [gamma, beta, sums], epsilon, relu);
                    grads.register::<Cube>(node.id, dx);
                }
            }
        }

        let stats = stats.into_primitive();
        match BatchNormBackward
            .prepare::<C>([x.node(), gamma.node(), beta.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let x_state = prep.checkpoint(&x);
                let gamma_state = prep.checkpoint(&gamma);
                let beta_state = prep.checkpoint(&beta);
                let y = Cube::batch_norm_relu(
                    x.into_primitive(),
                    gamma.into_primitive(),
                    beta.into_primitive(),
                    stats.clone(),
                    epsilon,
                    relu,
                );
                prep.finish((x_state, gamma_state, beta_state, stats, epsilon, relu), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(Cube::batch_norm_relu(
                x.into_primitive(),
                gamma.into_primitive(),
                beta.into_primitive(),
                stats,
                epsilon,
                relu,
            )),
        }
    }
}

/// `bn(x)`, then ReLU when `then_relu`, in a training step: through [`FusedBatchNorm`]
/// on a wgpu device in training mode (the running statistics updated as burn's
/// `BatchNorm` updates them), the layer's own forward pass elsewhere.
pub(crate) fn forward(bn: &BatchNorm, x: Tensor<4>, then_relu: bool) -> Tensor<4> {
    forward_shifted(bn, x, None, then_relu)
}

/// [`forward`] of `x + shift` (per channel, `shift` `[C]`: a convolution's bias that
/// [`crate::ops::conv::train::forward_leaving_bias`] left out).
///
/// In a training step on a wgpu device the shift is never added: a training batch norm
/// subtracts the batch's mean, so its output is the same without it, and the shift's
/// gradient is exactly zero (the input's gradient sums to zero over each channel), so it
/// gets none. Only the running mean, which eval mode subtracts instead, includes it. That
/// saves the bias's addition and its gradient's reduction, two launches per convolution.
/// Elsewhere `x + shift` goes through the layer as it is.
///
/// A mixed-precision step's f16 `x` goes through the kernels' f16 variants (they read and
/// write f16 and compute in f32), so its output and its gradient are f16 with no cast
/// around the layer. Where they do not run (off wgpu, another 16-bit type), a 16-bit `x`
/// is cast to f32 for the layer and its output cast back.
pub(crate) fn forward_shifted(
    bn: &BatchNorm,
    x: Tensor<4>,
    shift: Option<Tensor<1>>,
    then_relu: bool,
) -> Tensor<4> {
    // Read once and written once at least (statistics taken as the data passes).
    let _clocked = crate::gpu::clock::elementwise("batch norm forward", &x, 2);
    let plain = |x: Tensor<4>| {
        let layer = |x: Tensor<4>| {
            let x = match &shift {
                Some(b) => x + b.clone().reshape([1, b.dims()[0], 1, 1]),
                None => x,
            };
            let y = bn.forward(x);
            if then_relu { relu(y) } else { y }
        };
        // Normalised in f32 (its statistics too).
        match is_low(x.dtype()) {
            Some(low) => crate::ops::mixed_precision::in_f32(x, low, layer),
            None => layer(x),
        }
    };
    let training = x.device().is_autodiff() && bn.training.is_enabled();
    if !training || !Kernel::BatchNorm.runs_for(&x) {
        return plain(x);
    }
    let device = x.device();
    let stats = kernels::moments(
        &x,
        shift.as_ref(),
        &bn.running_mean.value_sync(),
        &bn.running_var.value_sync(),
        Settings {
            epsilon: bn.epsilon,
            relu: then_relu,
            momentum: bn.momentum,
        },
    );
    let Some((stats, [running_mean, running_var])) = stats else {
        return plain(x);
    };
    // Back on the layer's (autodiff) device, outside the graph, as burn keeps them.
    let lift = |t: Tensor<1>| Tensor::<1>::from_inner(t).to_device(&device).detach();
    bn.running_mean.update(lift(running_mean));
    bn.running_var.update(lift(running_var));
    let y = Dispatch::batch_norm_relu(
        x.into_dispatch(),
        bn.gamma.val().into_dispatch(),
        bn.beta.val().into_dispatch(),
        lift(stats).into_dispatch(),
        bn.epsilon,
        then_relu,
    );
    Tensor::<4>::from_dispatch(y)
}

#[cfg(test)]
mod tests {
    use burn::module::{Param, RunningState};
    use burn::nn::BatchNormConfig;
    use burn::tensor::{Device, Distribution, TensorData};

    use super::*;
    use crate::test_support::{host, largest, random};

    /// The largest difference and `b`'s largest magnitude.
    fn gap(a: &[f32], b: &[f32]) -> (f32, f32) {
        (crate::test_support::gap(a, b), largest(b))
    }

    /// On lavapipe: the fused batch norm (with and without its ReLU, with and without a
    /// convolution's bias left out of its input) gives burn's `BatchNorm` outputs, running
    /// statistics and gradients (input, gamma, beta), for an input laid out channels last
    /// as im2col leaves it, a contiguous one, and one whose rows and columns are transposed
    /// (the kernels' three ways to address an element: `bn_common.wgsl`'s `strided`), the
    /// output and the input's gradient laid out as the input is where it lies channels
    /// last, else contiguous. The bias left out gets no gradient, where burn's is zero
    /// but for rounding.
    #[test]
    fn the_fused_batch_norm_is_burns() {
        let device = crate::gpu::direct::start()
            .expect("a wgpu adapter")
            .0
            .autodiff();
        #[derive(Clone, Copy, Debug, PartialEq)]
        enum Layout {
            ChannelsLast,
            Contiguous,
            Transposed,
        }
        use Layout::*;
        for (then_relu, shifted, layout) in [
            (false, false, ChannelsLast),
            (true, false, ChannelsLast),
            (false, true, ChannelsLast),
            (true, true, ChannelsLast),
            (true, true, Contiguous),
            (false, true, Transposed),
        ] {
            let last = layout == ChannelsLast;
            let mut bn = BatchNormConfig::new(5).init(&device);
            let gamma = random([5], Distribution::Uniform(0.5, 1.5), 1, &device);
            let beta = random([5], Distribution::Uniform(-0.5, 0.5), 2, &device);
            bn.gamma = Param::from_tensor(gamma.clone());
            bn.beta = Param::from_tensor(beta.clone());
            // Its own running statistics (a clone would share them).
            let mut reference = BatchNormConfig::new(5).init(&device);
            reference.gamma = Param::from_tensor(gamma);
            reference.beta = Param::from_tensor(beta);
            // Running statistics of earlier steps, not the fresh zeros and ones, so that a
            // kernel reading anything else in their place (or adding a shift it was not
            // given) shows.
            let mean = random([5], Distribution::Uniform(-1.0, 1.0), 3, &device);
            let var = random([5], Distribution::Uniform(0.5, 2.0), 4, &device);
            bn.running_mean = RunningState::new(mean.clone());
            bn.running_var = RunningState::new(var.clone());
            reference.running_mean = RunningState::new(mean);
            reference.running_var = RunningState::new(var);
            // [16, 5, 6, 7] (672 values a channel: an invocation of a workgroup of 256 takes
            // two or three): [16, 6, 7, 5] permuted, channels last; contiguous; or [16, 5, 7, 6]
            // with its last two axes swapped, whose (h, w) share no one stride.
            let normal = Distribution::Normal(0.3, 2.0);
            let x = match layout {
                ChannelsLast => random([16, 6, 7, 5], normal, 5, &device).permute([0, 3, 1, 2]),
                Contiguous => random([16, 5, 6, 7], normal, 6, &device),
                Transposed => random([16, 5, 7, 6], normal, 9, &device).swap_dims(2, 3),
            }
            .require_grad();
            assert_eq!(x.dims(), [16, 5, 6, 7]);
            assert_eq!(crate::ops::conv::im2col::is_channels_last(&x), last);
            let w = random([16, 5, 6, 7], Distribution::Default, 7, &device);
            // Large enough that a running mean without it is off by more than 0.1.
            let bias = random([5], Distribution::Uniform(1.0, 3.0), 8, &device).require_grad();

            let ours = forward_shifted(&bn, x.clone(), shifted.then(|| bias.clone()), then_relu);
            assert_eq!(
                crate::ops::conv::im2col::is_channels_last(&ours),
                last,
                "the output lies as x does, so a pool or convolution after it reads it as it is"
            );
            let theirs = match shifted {
                true => reference.forward(x.clone() + bias.clone().reshape([1, 5, 1, 1])),
                false => reference.forward(x.clone()),
            };
            let theirs = if then_relu { relu(theirs) } else { theirs };
            let (g, s) = gap(&host(ours.clone()), &host(theirs.clone()));
            assert!(
                g <= 1e-5 * s.max(1.0),
                "relu {then_relu}, shifted {shifted}, {layout:?}: output off by {g}"
            );
            for (a, b) in [
                (
                    bn.running_mean.value_sync(),
                    reference.running_mean.value_sync(),
                ),
                (
                    bn.running_var.value_sync(),
                    reference.running_var.value_sync(),
                ),
            ] {
                let (g, s) = gap(&host(a), &host(b));
                assert!(
                    g <= 1e-5 * s.max(1.0),
                    "relu {then_relu}, shifted {shifted}, {layout:?}: running off by {g}"
                );
            }

            let grads_ours = (ours * w.clone()).sum().backward();
            assert_eq!(
                crate::ops::conv::im2col::is_channels_last(&x.grad(&grads_ours).unwrap()),
                last,
                "x's gradient lies as x does, so a convolution's backward reads it as it is"
            );
            let ours = [
                host(x.grad(&grads_ours).expect("x's gradient")),
                host(bn.gamma.grad(&grads_ours).expect("gamma's")),
                host(bn.beta.grad(&grads_ours).expect("beta's")),
            ];
            assert!(
                bias.grad(&grads_ours).is_none(),
                "the bias left out has no gradient"
            );
            let grads_theirs = (theirs * w).sum().backward();
            let theirs = [
                host(x.grad(&grads_theirs).expect("x's gradient")),
                host(reference.gamma.grad(&grads_theirs).expect("gamma's")),
                host(reference.beta.grad(&grads_theirs).expect("beta's")),
            ];
            if shifted {
                let zero = host(bias.grad(&grads_theirs).expect("burn's bias gradient"));
                assert!(
                    largest(&zero) <= 1e-4 * largest(&theirs[0]),
                    "burn's bias gradient {zero:?} is not zero"
                );
            }
            for (name, (a, b)) in ["x", "gamma", "beta"].iter().zip(ours.iter().zip(&theirs)) {
                let (g, s) = gap(a, b);
                assert!(
                    g <= 1e-4 * s.max(1e-3),
                    "relu {then_relu}, shifted {shifted}, {layout:?}: {name}'s gradient off by {g} at scale {s}"
                );
            }
        }
        // Off wgpu nothing changes: the layer's own forward pass.
        let flex = Device::flex().autodiff();
        let bn = BatchNormConfig::new(2).init(&flex);
        let x = Tensor::<4>::from_data(
            TensorData::new((0..16).map(|v| v as f32).collect::<Vec<_>>(), [2, 2, 2, 2]),
            &flex,
        );
        assert_eq!(host(forward(&bn, x.clone(), false)), host(bn.forward(x)));
    }

    /// On lavapipe: a mixed-precision step's f16 activations go through the kernels' f16
    /// variants, with no cast around the layer: the output and the input's gradient are
    /// f16 (laid out as the input), every kernel launched forward and backward is one of
    /// taks's batch-norm kernels, and the numbers are those of the f32 layer on the same
    /// values to f16's rounding (measured here: output and input gradient at most 0.03%
    /// and 0.05% of their largest value off, about half an f16 step; gamma's and beta's
    /// gradients, summed in f32, 0.006%; the running statistics, computed in f32 from the
    /// same values, exactly). The running mean includes the bias left out.
    #[test]
    fn an_f16_batch_norm_runs_in_f16() {
        use burn::tensor::{DType, FloatDType};

        use crate::gpu::launches::count_by_kernel;
        let device = crate::gpu::direct::start()
            .expect("a wgpu adapter")
            .0
            .autodiff();
        let layer = || {
            let mut bn = BatchNormConfig::new(5).init(&device);
            bn.gamma =
                Param::from_tensor(Tensor::<1>::from_floats([0.5, 1.5, 1.0, 0.8, 1.2], &device));
            bn.beta = Param::from_tensor(Tensor::<1>::from_floats(
                [0.1, -0.3, 0.0, 0.4, -0.2],
                &device,
            ));
            bn.running_mean = RunningState::new(Tensor::<1>::from_floats(
                [0.2, -0.4, 0.9, 0.0, 0.5],
                &device,
            ));
            bn.running_var =
                RunningState::new(Tensor::<1>::from_floats([1.1, 0.7, 1.9, 1.0, 0.6], &device));
            bn
        };
        let (half, full) = (layer(), layer());
        let x =
            random([3, 6, 7, 5], Distribution::Normal(0.3, 2.0), 9, &device).permute([0, 3, 1, 2]);
        let x16 = x.cast(FloatDType::F16).require_grad();
        // The same values in f32 (f16's rounding taken out of the comparison).
        let x32 = x16.clone().cast(FloatDType::F32).detach().require_grad();
        let shift = Tensor::<1>::from_floats([1.5, 2.0, 1.0, 2.5, 3.0], &device);
        let w = random([3, 5, 6, 7], Distribution::Default, 10, &device);

        let (ours, forward_kernels) = count_by_kernel(&device, || {
            forward_shifted(&half, x16.clone(), Some(shift.clone()), true)
        });
        assert_eq!(ours.dtype(), DType::F16);
        assert!(crate::ops::conv::im2col::is_channels_last(&ours));
        let theirs = forward_shifted(&full, x32.clone(), Some(shift), true);
        let (grads_ours, backward_kernels) = count_by_kernel(&device, || {
            (ours.clone().cast(FloatDType::F32) * w.clone())
                .sum()
                .backward()
        });
        let ours_kernels = crate::test_support::kernels_named(
            forward_kernels.iter().chain(&backward_kernels),
            "taks_bn_",
        );
        assert_eq!(
            ours_kernels,
            [
                ("taks_bn_apply_f16", 1),
                ("taks_bn_grad_reduce_f16", 1),
                ("taks_bn_grad_x_f16", 1),
                ("taks_bn_moments_f16", 1),
            ],
            "forward {forward_kernels:?}, backward {backward_kernels:?}"
        );
        // The only casts are the test's own (the output to f32, and its gradient back).
        // Under fusion those two are fused into burn's elementwise kernels.
        let casts: usize = forward_kernels
            .iter()
            .chain(&backward_kernels)
            .filter(|(name, _)| name.contains("Cast"))
            .map(|(_, n)| n)
            .sum();
        let test_casts = if cfg!(feature = "fusion") { 0 } else { 2 };
        assert_eq!(casts, test_casts, "backward {backward_kernels:?}");
        let grads_theirs = (theirs.clone() * w).sum().backward();
        let dx = x16.grad(&grads_ours).expect("x's gradient");
        assert_eq!(dx.dtype(), DType::F16);
        assert!(crate::ops::conv::im2col::is_channels_last(&dx));
        let pairs = [
            ("output", host(ours), host(theirs), 2e-3),
            (
                "x's gradient",
                host(dx),
                host(x32.grad(&grads_theirs).unwrap()),
                2e-3,
            ),
            (
                "gamma's gradient",
                host(half.gamma.grad(&grads_ours).unwrap()),
                host(full.gamma.grad(&grads_theirs).unwrap()),
                5e-4,
            ),
            (
                "beta's gradient",
                host(half.beta.grad(&grads_ours).unwrap()),
                host(full.beta.grad(&grads_theirs).unwrap()),
                5e-4,
            ),
            (
                "running mean",
                host(half.running_mean.value_sync()),
                host(full.running_mean.value_sync()),
                1e-6,
            ),
            (
                "running variance",
                host(half.running_var.value_sync()),
                host(full.running_var.value_sync()),
                1e-6,
            ),
        ];
        for (name, a, b, within) in pairs {
            let (g, s) = gap(&a, &b);
            assert!(g <= within * s, "{name} off by {g} at scale {s}");
        }
    }
}
