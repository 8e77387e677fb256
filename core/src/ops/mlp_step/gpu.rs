//! The MLP's training step on a wgpu device without an autodiff graph: the GPU twin of
//! [`super::cpu`]'s step, the same gradients of mean cross-entropy written out by hand.
//!
//! Why: on a GPU the MLP's step is bound by kernel launches, not arithmetic (its matmuls
//! take microseconds on a large card). Through burn's autodiff a step is some forty
//! tensor operations, each a launch; by hand it is five matmuls (burn's, autotuned) and
//! three small kernels of our own (`shaders/bias_relu.wgsl`, `shaders/mlp_*.wgsl`): bias
//! and ReLU fused; softmax, cross-entropy, its gradient and the output bias's gradient in
//! one workgroup; and ReLU's backward with the hidden bias's gradient. With the fused Adam
//! of the four parameters that is nine launches a step (`taks bench` counts them; the
//! batch and its labels are uploads, not launches; burn's matmul may add copies of a
//! transposed operand where its tuning picks a kernel that wants one).
//!
//! The gradients equal autodiff's to rounding (summation order differs; `tests` checks
//! 1e-5). Returns `None` off wgpu; the caller then takes the generic path.
//!
//! A mixed-precision step ([`crate::precision`], f16) is the same step in f16, as
//! autocast would run the MLP: the two weights in f16 are the copies the last packed
//! Adam step wrote beside them (`shaders/adam_packed.wgsl`'s `x_low`), where it wrote
//! them, else cast (two launches, in a run's first step; the trainer uploads the batch in
//! f16 already, else it is cast too), the five matmuls are burn's f16 matmuls, the
//! three kernels read and write f16 activations and gradients (their f16 variants;
//! biases, the loss and every sum stay f32), and the loss kernel multiplies the logits'
//! gradient by the dynamic loss scale, read on the device, so that every gradient comes
//! out scaled as autodiff's of the scaled loss would. The two weight gradients stay f16: the packed Adam reads them as they are
//! (`shaders/adam_packed.wgsl`'s f16 gradient bindings), checks and unscales them in f32
//! as it does autodiff's, and the host's fallback casts them to f32 first.

use burn::module::ParamId;
use burn::optim::GradientsParams;
use burn::tensor::{FloatDType, Int, Tensor};

use super::{Layers, MixedStep, MlpStep};
use crate::ops::layer_kernels;
use crate::plan::Kernel;

impl Layers<'_> {
    /// Gradients of the mean cross-entropy of `x` `[B, in]` against `labels` `[B]`, and the
    /// loss, by hand on the GPU; `None` off wgpu. With `mixed`, a mixed-precision step:
    /// in f16, the gradients times the loss scale (the weights' f16, the biases' f32).
    pub(crate) fn gpu_cross_entropy_step(
        &self,
        x: Tensor<2>,
        labels: Tensor<1, Int>,
        mixed: Option<MixedStep>,
    ) -> Option<MlpStep> {
        if !Kernel::MlpStepGpu.runs_for(&x) {
            return None;
        }
        let (b1, b2) = (self.hidden.bias.as_ref()?, self.output.bias.as_ref()?);
        let ids: [ParamId; 4] = [self.hidden.weight.id, b1.id, self.output.weight.id, b2.id];
        let x = x.without_autodiff();
        let (x, w1, w2, scale) = match mixed {
            None => (
                x,
                self.hidden.weight.val().inner(),
                self.output.weight.val().inner(),
                None,
            ),
            Some(mixed) => {
                // The weights' f16 copies where the last Adam step wrote them, else casts.
                let low = |w: Tensor<2>| {
                    let [rows, cols] = w.dims();
                    match (mixed.low_copy)(&w.clone().reshape([rows * cols])) {
                        Some(copy) => copy.reshape([rows, cols]),
                        None => w.cast(FloatDType::F16),
                    }
                };
                let w1 = low(self.hidden.weight.val().inner());
                let w2 = low(self.output.weight.val().inner());
                (x.cast(FloatDType::F16), w1, w2, Some(mixed.scale))
            }
        };

        // Forward: h = relu(x w1 + b1); the output layer's bias goes into the loss kernel.
        let h = layer_kernels::bias_relu(&x.clone().matmul(w1), &b1.val().inner())?;
        let s = h.clone().matmul(w2.clone());
        let (loss_sum, dz, db2) =
            layer_kernels::softmax_cross_entropy_grad(&s, &b2.val().inner(), &labels, scale)?;

        // Backward.
        let dw2 = h.clone().transpose().matmul(dz.clone());
        let (dh, db1) = layer_kernels::relu_grad(&dz.matmul(w2.transpose()), &h)?;
        let dw1 = x.transpose().matmul(dh);

        let mut grads = GradientsParams::new();
        grads.register(ids[0], dw1);
        grads.register(ids[1], db1);
        grads.register(ids[2], dw2);
        grads.register(ids[3], db2);
        Some(MlpStep { grads, loss_sum })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::ops::mlp_step::cpu::tests::{
        check_against_autodiff, check_far_label, check_nan_input,
    };

    /// On a wgpu device (lavapipe here): the same checks as the CPU twin's, with the
    /// kernels launched through burn and through wgpu itself (the route burn's SPIR-V and
    /// MSL builds take), which must be where they went.
    #[test]
    fn gradients_match_autodiff_on_wgpu() {
        use crate::gpu::launches::direct_launches;
        use crate::plan::Switches;
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        for direct in [false, true] {
            let switches = Switches {
                direct,
                ..Switches::environment()
            };
            let ((), launched) = switches.during(|| {
                direct_launches(&device, || {
                    check_against_autodiff(&device, |mlp, x, y| {
                        mlp.layers().gpu_cross_entropy_step(x, y, None)
                    });
                    check_far_label(&device, |mlp, x, y| {
                        mlp.layers().gpu_cross_entropy_step(x, y, None)
                    });
                    check_nan_input(&device, |mlp, x, y| {
                        mlp.layers().gpu_cross_entropy_step(x, y, None)
                    });
                })
            });
            if direct {
                assert!(launched > 0, "no kernel went through wgpu directly");
            }
        }
    }

    /// On lavapipe (which offers `shader-f16`): the f16 step by hand gives the gradients
    /// the generic mixed-precision path gives (autodiff through f16 layers of the scaled
    /// loss), scaled by the word it is pointed at, through the three f16 kernels.
    #[test]
    fn an_f16_step_is_autodiffs_scaled_step() {
        use burn::tensor::{DType, Distribution, TensorData};

        use crate::gpu::launches::count_by_kernel;
        use crate::ops::cross_entropy::per_sample;
        use crate::ops::layer_kernels::ScaleAt;
        use crate::test_support::{host, kernels_named, mlp, random};

        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let (batch, inputs, classes) = (130, 40, 7);
        let mlp = mlp(inputs, classes, 11, &device.clone().autodiff());
        let x = random([batch, inputs], Distribution::Normal(0.0, 1.0), 1, &device);
        let labels: Vec<i64> = (0..batch as i64).map(|i| (i * 5 + 3) % 7).collect();
        let y = Tensor::<1, Int>::from_data(TensorData::new(labels, [batch]), &device);
        // The scale at word 4, as the loss scale's second state keeps it; the other words
        // would give other gradients.
        let scale = 1024.0f32;
        let words = Tensor::<1>::from_floats([3.0, 0.0, 0.0, 0.0, scale, 0.0], &device);
        let at = ScaleAt {
            words: &words,
            at: 4,
        };
        let mixed = MixedStep {
            scale: at,
            low_copy: &|_| None,
        };
        let (step, kernels) = count_by_kernel(&device, || {
            mlp.layers()
                .gpu_cross_entropy_step(x.clone(), y.clone(), Some(mixed))
        });
        let step = step.expect("on wgpu");
        assert_eq!(
            kernels_named(&kernels, "taks_"),
            [
                ("taks_bias_relu_f16", 1),
                ("taks_mlp_relu_grad_f16", 1),
                ("taks_mlp_softmax_grad_f16", 1),
            ],
            "{kernels:?}"
        );

        // The generic path: the f16 forward, the logits' loss in f32, scaled.
        let logits = mlp
            .forward(x.clone().cast(FloatDType::F16))
            .cast(FloatDType::F32);
        let mean = per_sample(logits, &y).mean();
        let expected_loss = host(mean.clone().detach().without_autodiff())[0];
        let got_loss = host(step.loss_sum)[0] / batch as f32;
        assert!(
            (got_loss - expected_loss).abs() < 2e-3 * expected_loss,
            "loss {got_loss} vs {expected_loss}"
        );
        let scaled = mean * Tensor::<1>::from_floats([scale], &mlp.layers().hidden.weight.device());
        let autodiff = GradientsParams::from_grads(scaled.backward(), &mlp);
        let f32_step = mlp
            .layers()
            .gpu_cross_entropy_step(x, y, None)
            .expect("on wgpu");

        // Each parameter's gradient in f32, flat, in the order w1, b1, w2, b2.
        let (w1, w2) = (mlp.layers().hidden.weight.id, mlp.layers().output.weight.id);
        let b1 = mlp.layers().hidden.bias.as_ref().unwrap().id;
        let b2 = mlp.layers().output.bias.as_ref().unwrap().id;
        let flat = |mut g: GradientsParams| {
            let mut weight = |id| g.remove::<2>(id).unwrap().flatten::<1>(0, 1);
            let (w1, w2) = (weight(w1), weight(w2));
            let mut bias = |id| g.remove::<1>(id).unwrap();
            let (b1, b2) = (bias(b1), bias(b2));
            [w1, b1, w2, b2].map(|t| host(t.cast(FloatDType::F32)))
        };
        // The weights' gradients come out f16, for the packed Adam to read as they are;
        // the biases' f32.
        let dtype = |id| step.grads.get::<2>(id).map(|g| g.dtype());
        assert_eq!((dtype(w1), dtype(w2)), (Some(DType::F16), Some(DType::F16)));
        let dtype = |id| step.grads.get::<1>(id).map(|g| g.dtype());
        assert_eq!((dtype(b1), dtype(b2)), (Some(DType::F32), Some(DType::F32)));
        let (ours, theirs) = (flat(step.grads), flat(autodiff));
        let exact = flat(f32_step.grads).map(|g| g.iter().map(|v| v * scale).collect::<Vec<_>>());

        // Against the f32 step (scaled): the step by hand is as near to it as the generic
        // f16 path, by the norm of the difference over the norm of the gradient. Both
        // round the input, the weights and the activations to f16, and burn's f16 matmul
        // sums its products in f16; where a hidden unit's f16 pre-activation lands on
        // the other side of zero from its f32 one, a row's ReLU flips and that unit's
        // gradient moves by the row's whole share, in either path. The norm takes that
        // share as the small part of the whole it is; a largest-difference measure did
        // not (up to 8% of the largest value, in one path and not the other, where no
        // flip left both within 0.1%).
        let norm = |a: &[f32]| a.iter().map(|v| v * v).sum::<f32>().sqrt();
        let off = |a: &[f32], exact: &[f32]| {
            let diff: Vec<f32> = a.iter().zip(exact).map(|(a, b)| a - b).collect();
            norm(&diff) / norm(exact)
        };
        for (i, name) in ["w1", "b1", "w2", "b2"].into_iter().enumerate() {
            let (ours, theirs) = (off(&ours[i], &exact[i]), off(&theirs[i], &exact[i]));
            // Measured over eight runs: 0.02% to 2.1% of the norm, within 1.1 times the
            // generic path's. A step that missed the scale would be off by 1.0.
            assert!(
                ours <= 5e-2 && ours <= 2.0 * theirs + 2e-3,
                "{name}: {ours} of the norm off the f32 step, the generic f16 path {theirs}"
            );
        }
    }
}
