//! Each sample's cross-entropy on a wgpu device, forward and backward in one launch each
//! (`shaders/cross_entropy.wgsl`, `shaders/cross_entropy_grad.wgsl`), and its CPU twin,
//! burn's composition ([`composed`]); [`per_sample`], which every method's loss calls,
//! takes one or the other.
//!
//! Why: every method's loss is built from the per-sample cross-entropy. As burn composes
//! it (log-softmax's maximum, shift, exponentials, sum, log and second shift, then a
//! gather and a negation) and differentiates it (the gather's scatter into zeros, the
//! log-softmax's backward), it was about 25 of the CNN's 135 launches per training step
//! on lavapipe, about as many as its six convolutions' forward passes there, and the
//! small-loss methods run it again over every sample they rank. Here it is an autodiff
//! operation of our own (a burn backend extension) whose backward pass computes the
//! gradient burn's would, softmax minus the label's one-hot times the loss's gradient,
//! from the logits it kept.
//!
//! Only for f32 logits on a wgpu device; elsewhere (flex, or a size past the kernels'
//! 32-bit indices) burn's composition runs, so CPU results keep their bits.

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::wgpu::CubeTensor;
use burn::backend::{Autodiff, Backend, Cube, Dispatch, backend_extension};
use burn::tensor::activation::{log_softmax, softmax};
use burn::tensor::{DType, Int, Tensor};
use cubecl::CubeCount;
use cubecl::server::Handle;

use crate::plan::Kernel;

use crate::gpu::bridge;
use crate::gpu::kernels::{CROSS_ENTROPY, CROSS_ENTROPY_GRAD, WORKGROUP};
use crate::gpu::params;

#[backend_extension(Autodiff, Cube)]
pub trait FusedCrossEntropy: Backend {
    /// The cross-entropy `[B]` of each row of `logits` `[B, C]` against `labels` `[B]`.
    ///
    /// Implemented on wgpu (`Cube`) and its autodiff alone: [`on_gpu`] sends nothing else
    /// here (burn's dispatch would refuse another backend with a panic). The backward pass
    /// is [`gradient`], on the inner backend.
    fn fused_cross_entropy(logits: FloatTensor<Self>, labels: IntTensor<Self>)
    -> FloatTensor<Self>;
}

/// Cross-entropy of each sample, `[B]`, from logits `[B, C]` and labels `[B]`: on a wgpu
/// device one kernel each way ([`on_gpu`]), elsewhere burn's log-softmax and gather
/// ([`composed`]).
pub fn per_sample(logits: Tensor<2>, labels: &Tensor<1, Int>) -> Tensor<1> {
    on_gpu(&logits, labels).unwrap_or_else(|| composed(logits, labels.clone()))
}

/// `cross_entropy(logits, labels)` in one launch, with a backward pass of one launch,
/// when `logits` are f32 on a wgpu device; `None` elsewhere (the caller composes burn's).
pub(crate) fn on_gpu(logits: &Tensor<2>, labels: &Tensor<1, Int>) -> Option<Tensor<1>> {
    if !Kernel::CrossEntropy.runs_for(logits) {
        return None;
    }
    let _clocked = crate::gpu::clock::elementwise("cross-entropy", logits, 1);
    let loss = Dispatch::fused_cross_entropy(
        logits.clone().into_dispatch(),
        labels.clone().into_dispatch(),
    );
    Some(Tensor::<1>::from_dispatch(loss))
}

/// burn's composition: the CPU's loss, and the fallback where the kernels decline.
pub(crate) fn composed(logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
    let [batch, _] = logits.dims();
    let picked = log_softmax(logits, 1).gather(1, labels.reshape([batch, 1]));
    picked.reshape([batch]).neg()
}

/// The gradient of [`composed`] in the logits for the loss's gradient `grad` `[B]`.
fn composed_backward(logits: Tensor<2>, labels: Tensor<1, Int>, grad: Tensor<1>) -> Tensor<2> {
    let [batch, classes] = logits.dims();
    let one_hot = labels.one_hot(classes).float();
    (softmax(logits, 1) - one_hot) * grad.reshape([batch, 1])
}

/// What both kernels read: the `[B, C]` logits' and `[B]` labels' buffers and the sizes.
struct Rows {
    rows: usize,
    logits: CubeTensor,
    labels: CubeTensor,
    params: Handle,
}

impl Rows {
    /// `None` off wgpu or where a size passes 32 bits.
    fn of(logits: &Tensor<2>, labels: &Tensor<1, Int>) -> Option<Self> {
        let [rows, classes] = logits.dims();
        assert_eq!(labels.dims(), [rows], "one label per row");
        let logits = bridge::float_f32(logits)?;
        let labels = bridge::int_32(labels)?;
        // The kernels index the logits with 32 bits.
        u32::try_from(rows * classes).ok()?;
        let params = params::sizes(&logits, &[rows, classes])?;
        Some(Self {
            rows,
            logits,
            labels,
            params,
        })
    }

    fn grid(&self) -> CubeCount {
        bridge::grid((self.rows as u32).div_ceil(WORKGROUP))
    }
}

impl FusedCrossEntropy for Cube {
    fn fused_cross_entropy(
        logits: FloatTensor<Self>,
        labels: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        let logits = Tensor::<2>::from_primitive::<Cube>(logits);
        let labels = Tensor::<1, Int>::from_primitive::<Cube>(labels);
        let loss = match Rows::of(&logits, &labels) {
            Some(at) => {
                let loss = bridge::empty_1d(&at.logits, at.rows, DType::F32);
                bridge::launch(
                    &at.logits.client,
                    CROSS_ENTROPY,
                    at.grid(),
                    &[
                        &at.logits.handle,
                        &at.labels.handle,
                        &loss.handle,
                        &at.params,
                    ],
                );
                bridge::to_float(loss)
            }
            None => composed(logits, labels),
        };
        loss.try_into_primitive::<Cube>()
            .expect("a Cube tensor stays on Cube")
    }
}

/// The loss's gradient in the logits `[B, C]` for its own gradient `grad` `[B]`: one launch
/// where the forward pass's kernel ran, burn's composition elsewhere.
fn gradient(
    logits: FloatTensor<Cube>,
    labels: IntTensor<Cube>,
    grad: FloatTensor<Cube>,
) -> FloatTensor<Cube> {
    let logits = Tensor::<2>::from_primitive::<Cube>(logits);
    let labels = Tensor::<1, Int>::from_primitive::<Cube>(labels);
    let grad = Tensor::<1>::from_primitive::<Cube>(grad);
    let _clocked = crate::gpu::clock::elementwise("cross-entropy gradient", &logits, 2);
    let [rows, classes] = logits.dims();
    let launched = Rows::of(&logits, &labels).and_then(|at| {
        let g = bridge::float_f32(&grad)?;
        let dz = bridge::empty_1d(&at.logits, rows * classes, DType::F32);
        bridge::launch(
            &at.logits.client,
            CROSS_ENTROPY_GRAD,
            at.grid(),
            &[
                &at.logits.handle,
                &at.labels.handle,
                &g.handle,
                &dz.handle,
                &at.params,
            ],
        );
        Some(bridge::to_matrix(dz, rows, classes))
    });
    let dz = launched.unwrap_or_else(|| composed_backward(logits, labels, grad));
    dz.try_into_primitive::<Cube>()
        .expect("a Cube tensor stays on Cube")
}

impl<C: CheckpointStrategy> FusedCrossEntropy for Autodiff<Cube, C> {
    fn fused_cross_entropy(
        logits: FloatTensor<Self>,
        labels: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct CrossEntropyBackward;

        impl Backward<Cube, 1> for CrossEntropyBackward {
            type State = (NodeId, IntTensor<Cube>);

            fn backward(
                self,
                ops: Ops<Self::State, 1>,
                grads: &mut Gradients,
                checkpointer: &mut Checkpointer,
            ) {
                let [node_logits] = ops.parents;
                let grad = grads.consume::<Cube>(&ops.node);
                let (logits_state, labels) = ops.state;
                let logits = checkpointer.retrieve_node_output::<FloatTensor<Cube>>(logits_state);
                if let Some(node) = node_logits {
                    let dz = gradient(logits, labels, grad);
                    grads.register::<Cube>(node.id, dz);
                }
            }
        }

        match CrossEntropyBackward
            .prepare::<C>([logits.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let logits_state = prep.checkpoint(&logits);
                let loss = Cube::fused_cross_entropy(logits.into_primitive(), labels.clone());
                prep.finish((logits_state, labels), loss)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(Cube::fused_cross_entropy(logits.into_primitive(), labels))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};

    use super::*;
    use crate::gpu::launches::count;
    use crate::test_support::{gap, host, largest};

    /// `[rows, classes]` logits spread over about ±6 (a fixed sequence, no seed to
    /// drift), with row 1's label 80 below its row's maximum, and labels `r * 7 mod C`.
    fn logits_and_labels(
        rows: usize,
        classes: usize,
        device: &Device,
    ) -> (Tensor<2>, Tensor<1, Int>) {
        let labels: Vec<i32> = (0..rows).map(|r| ((r * 7) % classes) as i32).collect();
        let mut state = 12345u32;
        let mut z: Vec<f32> = (0..rows * classes)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1u32 << 24) as f32 * 12.0 - 6.0
            })
            .collect();
        if rows > 1 {
            let row = &mut z[classes..2 * classes];
            let top = row.iter().fold(f32::MIN, |m, &v| m.max(v));
            row[labels[1] as usize] = top - 80.0;
        }
        (
            Tensor::from_data(TensorData::new(z, [rows, classes]), device),
            Tensor::from_data(TensorData::new(labels, [rows]), device),
        )
    }

    /// On lavapipe: the loss and its gradient in the logits against burn's composition,
    /// in one launch forward; more classes than a workgroup's invocations, more rows
    /// than one workgroup, and a label far below its row's maximum (its loss is about
    /// 80, not infinite).
    #[test]
    fn the_fused_loss_and_its_gradient_are_burns() {
        let device = crate::gpu::direct::start()
            .expect("a wgpu adapter")
            .0
            .autodiff();
        for (rows, classes) in [(37, 10), (300, 3), (5, 300), (1, 1)] {
            let (z, labels) = logits_and_labels(rows, classes, &device);
            let z = z.require_grad();
            let (ours, launches) = count(&device, || on_gpu(&z, &labels).expect("on wgpu"));
            assert_eq!(launches, 1, "{rows}x{classes}: one launch forward");
            let burns = composed(z.clone(), labels.clone());
            let (o, b) = (host(ours.clone()), host(burns.clone()));
            assert!(
                gap(&o, &b) <= 1e-5 * largest(&b).max(1.0),
                "{rows}x{classes}: loss {o:?} against {b:?}"
            );
            if rows > 1 {
                assert!((o[1] - 80.0).abs() < 7.0, "the far label's loss: {}", o[1]);
            }
            // A loss gradient that differs per row.
            let w = Tensor::<1>::from_data(
                TensorData::new((0..rows).map(|r| 0.5 + r as f32).collect(), [rows]),
                &device,
            );
            let g_ours = (ours * w.clone()).sum().backward();
            let g_burns = (burns * w).sum().backward();
            let (d_ours, d_burns) = (
                host(z.grad(&g_ours).expect("a gradient")),
                host(z.grad(&g_burns).expect("a gradient")),
            );
            assert!(
                gap(&d_ours, &d_burns) <= 1e-5 * largest(&d_burns).max(1.0),
                "{rows}x{classes}: gradient"
            );
        }
    }

    /// A NaN logit makes its own row's loss and gradient NaN and leaves the other rows
    /// alone, without autodiff as the scoring pass runs it and with it.
    #[test]
    fn a_nan_logit_spoils_only_its_row() {
        let plain = crate::gpu::direct::start().expect("a wgpu adapter").0;
        for device in [plain.clone(), plain.autodiff()] {
            let (z, labels) = logits_and_labels(4, 5, &device);
            let mut values = host(z);
            values[2 * 5 + 3] = f32::NAN;
            let z = Tensor::<2>::from_data(TensorData::new(values, [4, 5]), &device);
            let z = if device.is_autodiff() {
                z.require_grad()
            } else {
                z
            };
            let loss = on_gpu(&z, &labels).expect("on wgpu");
            let l = host(loss.clone());
            assert!(l[2].is_nan(), "row 2's loss: {l:?}");
            assert!(
                [0, 1, 3].iter().all(|&r| l[r].is_finite()),
                "the other rows: {l:?}"
            );
            if device.is_autodiff() {
                let grads = loss.sum().backward();
                let dz = host(z.grad(&grads).expect("a gradient"));
                assert!(dz[10..15].iter().all(|v| v.is_nan()), "row 2: {dz:?}");
                assert!(
                    dz[..10].iter().chain(&dz[15..]).all(|v| v.is_finite()),
                    "the other rows: {dz:?}"
                );
            }
        }
    }
}
