//! A residual block's ending, `relu(h + shortcut)`, in one kernel each way on a wgpu
//! device (`shaders/residual_relu.wgsl`, `shaders/residual_relu_grad.wgsl`): the GPU
//! twin of burn's add and relu.
//!
//! Why: burn runs it as an addition and a ReLU, and differentiates the ReLU with a
//! comparison and a masked fill: four to five launches per block, each a pass over the
//! block's activation, about forty of a ResNet-18 training step. Here it is an autodiff
//! operation of our own (a burn backend extension): the forward pass writes the sum's
//! ReLU, channels last where the block's output is (as the batch norms and im2col's
//! convolutions leave theirs), and the backward pass masks the output's gradient by the
//! output itself, the gradient both the block's last batch norm and its shortcut
//! receive. The scoring pass's folded blocks use the same forward kernel.
//!
//! Only for f32 or f16 inputs (a mixed-precision step's: the kernels' f16 variants add in
//! f32 and round once) on a wgpu device; elsewhere (flex, bf16, a size past 32 bits)
//! burn's add and relu run, so CPU results keep their bits.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Cube, Dispatch, backend_extension};
use burn::tensor::Tensor;
use burn::tensor::activation::relu;

use super::channels_last::{from_flat, lies_channels_last};
use crate::gpu::bridge;
use crate::gpu::kernels::{
    Elem, RESIDUAL_RELU, RESIDUAL_RELU_F16, RESIDUAL_RELU_GRAD, RESIDUAL_RELU_GRAD_F16, Shader,
    WORKGROUP,
};
use crate::gpu::params;
use crate::plan::Kernel;

#[backend_extension(Autodiff, Cube)]
pub trait ResidualRelu: Backend {
    /// `relu(h + shortcut)`, both `[N, C, H, W]`.
    ///
    /// Implemented on wgpu (`Cube`) and its autodiff alone: [`relu_of_sum`] sends nothing
    /// else here (burn's dispatch would refuse another backend with a panic). The backward
    /// pass is [`gradient`], on the inner backend.
    fn residual_relu(h: FloatTensor<Self>, shortcut: FloatTensor<Self>) -> FloatTensor<Self>;
}

/// `relu(h + shortcut)`: one launch forward and one backward where both are f32, or both
/// f16, on a wgpu device; burn's add and relu elsewhere.
pub(crate) fn relu_of_sum(h: Tensor<4>, shortcut: Tensor<4>) -> Tensor<4> {
    let ours = h.dtype() == shortcut.dtype()
        && Kernel::Residual.runs_for(&h)
        && Kernel::Residual.runs_for(&shortcut);
    // Two read, one written.
    let _clocked = crate::gpu::clock::elementwise("residual add, relu", &h, 3);
    if !ours || h.dims() != shortcut.dims() {
        return relu(h + shortcut);
    }
    let y = Dispatch::residual_relu(h.into_dispatch(), shortcut.into_dispatch());
    Tensor::<4>::from_dispatch(y)
}

/// burn's backward of the ReLU: `dy` where `y` is not <= 0.
fn composed_backward(y: Tensor<4>, dy: Tensor<4>) -> Tensor<4> {
    dy.mask_fill(y.lower_equal_elem(0.0), 0.0)
}

/// `kernel` (its f32 or f16 variant, as `a` is) over `a` and `b` (both `[N, C, H, W]`,
/// read through their strides, `b` in `a`'s type) into a fresh tensor of `a`'s type,
/// channels last where `a` is; `None` off wgpu, for another type, or past 32 bits.
fn launch([kernel, kernel_f16]: [Shader; 2], a: &Tensor<4>, b: &Tensor<4>) -> Option<Tensor<4>> {
    let dims = a.dims();
    let total = dims.iter().product::<usize>();
    u32::try_from(total).ok()?;
    let elem = Elem::of(a.dtype())?;
    let a = bridge::float_strided_as(a, elem.dtype())?;
    let b = bridge::float_strided_as(b, elem.dtype())?;
    let (sa, sb) = (a.meta.strides(), b.meta.strides());
    let last = lies_channels_last(dims, sa);
    let mut sizes = dims.to_vec();
    sizes.extend_from_slice(&sa[..4]);
    sizes.extend_from_slice(&sb[..4]);
    sizes.push(last as usize);
    let params = params::sizes(&a, &sizes)?;
    let out = bridge::empty_1d(&a, total, elem.dtype());
    bridge::launch(
        &a.client,
        elem.pick(kernel, kernel_f16),
        bridge::grid((total as u32).div_ceil(WORKGROUP)),
        &[&a.handle, &b.handle, &out.handle, &params],
    );
    Some(from_flat(bridge::to_float(out), dims, last))
}

impl ResidualRelu for Cube {
    fn residual_relu(h: FloatTensor<Self>, shortcut: FloatTensor<Self>) -> FloatTensor<Self> {
        let h = Tensor::<4>::from_primitive::<Cube>(h);
        let shortcut = Tensor::<4>::from_primitive::<Cube>(shortcut);
        launch([RESIDUAL_RELU, RESIDUAL_RELU_F16], &h, &shortcut)
            .unwrap_or_else(|| relu(h + shortcut))
            .try_into_primitive::<Cube>()
            .expect("a Cube tensor stays on Cube")
    }
}

/// The gradient in `h` (and in the shortcut) from the output `y` and the output's gradient
/// `dy`: one launch where both are f32, or both f16; burn's masked fill elsewhere.
fn gradient(y: FloatTensor<Cube>, dy: FloatTensor<Cube>) -> FloatTensor<Cube> {
    let y = Tensor::<4>::from_primitive::<Cube>(y);
    let dy = Tensor::<4>::from_primitive::<Cube>(dy);
    let _clocked = crate::gpu::clock::elementwise("residual add, relu gradient", &dy, 3);
    launch([RESIDUAL_RELU_GRAD, RESIDUAL_RELU_GRAD_F16], &y, &dy)
        .unwrap_or_else(|| composed_backward(y, dy))
        .try_into_primitive::<Cube>()
        .expect("a Cube tensor stays on Cube")
}

impl<C: CheckpointStrategy> ResidualRelu for Autodiff<Cube, C> {
    fn residual_relu(h: FloatTensor<Self>, shortcut: FloatTensor<Self>) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct ResidualReluBackward;

        impl Backward<Cube, 2> for ResidualReluBackward {
            /// The output: its sign is the mask.
            type State = FloatTensor<Cube>;

            fn backward(
                self,
                ops: Ops<Self::State, 2>,
                grads: &mut Gradients,
                _: &mut Checkpointer,
            ) {
                let dy = grads.consume::<Cube>(&ops.node);
                let dx = gradient(ops.state, dy);
                for node in ops.parents.into_iter().flatten() {
                    grads.register::<Cube>(node.id, dx.clone());
                }
            }
        }

        match ResidualReluBackward
            .prepare::<C>([h.node(), shortcut.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let y = Cube::residual_relu(h.into_primitive(), shortcut.into_primitive());
                prep.finish(y.clone(), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(Cube::residual_relu(
                h.into_primitive(),
                shortcut.into_primitive(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{DType, Distribution, FloatDType, TensorData};

    use super::*;
    use crate::gpu::launches::count;
    use crate::ops::conv::im2col::is_channels_last;
    use crate::test_support::{gap, host, random};

    /// On lavapipe: the output and both gradients against burn's add and relu, in f32 and
    /// in f16 (a mixed-precision step's; the f16 variants add in f32 and round once,
    /// which for two f16 values is f16's own correctly rounded sum), with the block's
    /// output channels last or not, the shortcut in either layout, a NaN and exact zeros
    /// among the sums; one launch forward; the output and the gradient lie as `h` does,
    /// in its type.
    #[test]
    fn the_residual_ending_is_burns() {
        let device = crate::gpu::direct::start()
            .expect("a wgpu adapter")
            .0
            .autodiff();
        let dims = [2, 5, 3, 4];
        let nhwc = [2, 3, 4, 5];
        let normal = Distribution::Normal(0.0, 1.0);
        let layouts = [(true, true), (true, false), (false, true), (false, false)];
        for (dtype, (h_last, s_last)) in [FloatDType::F32, FloatDType::F16]
            .into_iter()
            .flat_map(|d| layouts.map(|l| (d, l)))
        {
            let make = |last: bool, values: Option<Vec<f32>>, seed: u64| -> Tensor<4> {
                let t = match (last, values) {
                    (true, Some(v)) => Tensor::<4>::from_data(TensorData::new(v, nhwc), &device),
                    (true, None) => random(nhwc, normal, seed, &device),
                    (false, Some(v)) => Tensor::<4>::from_data(TensorData::new(v, dims), &device),
                    (false, None) => random(dims, normal, seed, &device),
                }
                .cast(dtype);
                match last {
                    true => t.permute([0, 3, 1, 2]),
                    false => t,
                }
            };
            // h's first values: a NaN, and the negative of the shortcut's (sums of 0).
            let s = make(s_last, None, 1);
            let s_host = host(s.clone());
            let mut h_values = host(make(h_last, None, 2));
            h_values[0] = f32::NAN;
            // Elements 1 and 2 in h's memory order are, in NCHW order, these:
            let nchw_of = |k: usize| -> usize {
                match h_last {
                    true => {
                        let (c, rest) = (k % 5, k / 5);
                        let (w, rest) = (rest % 4, rest / 4);
                        let (hh, n) = (rest % 3, rest / 3);
                        ((n * 5 + c) * 3 + hh) * 4 + w
                    }
                    false => k,
                }
            };
            for k in [1, 2] {
                h_values[k] = -s_host[nchw_of(k)];
            }
            let h = make(h_last, Some(h_values), 0).require_grad();
            let s = s.require_grad();
            assert_eq!(is_channels_last(&h), h_last);

            let (ours, launches) = count(&device, || relu_of_sum(h.clone(), s.clone()));
            assert_eq!(launches, 1, "{dtype:?}: one launch forward");
            assert_eq!(ours.dtype(), DType::from(dtype));
            assert_eq!(is_channels_last(&ours), h_last, "the output lies as h does");
            let theirs = relu(h.clone() + s.clone());
            let (o, t) = (host(ours.clone()), host(theirs.clone()));
            assert!(
                o[0].is_nan() && t[0].is_nan(),
                "NaN kept: {} {}",
                o[0],
                t[0]
            );
            assert_eq!(o[nchw_of(1)], 0.0);
            assert!(
                gap(&o[1..], &t[1..]) <= 1e-6,
                "{dtype:?} {h_last} {s_last}: output"
            );

            let w = random(dims, normal, 3, &device).cast(dtype);
            let g_ours = (ours * w.clone()).sum().backward();
            let g_theirs = (theirs * w).sum().backward();
            let dh = h.grad(&g_ours).expect("h's gradient");
            assert_eq!(dh.dtype(), DType::from(dtype));
            assert_eq!(is_channels_last(&dh), h_last, "the gradient lies as h does");
            for (name, x) in [("h", &h), ("shortcut", &s)] {
                let a = host(x.grad(&g_ours).expect("a gradient"));
                let b = host(x.grad(&g_theirs).expect("a gradient"));
                assert_eq!(a[nchw_of(1)], 0.0, "{name}: no gradient through a zero");
                assert!(
                    gap(&a, &b) <= 1e-6,
                    "{dtype:?} {h_last} {s_last}: {name}'s gradient {a:?} against {b:?}"
                );
            }
        }
    }
}
