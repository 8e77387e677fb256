//! The MLP's training step on a wgpu device without an autodiff graph: the GPU twin of
//! `mlp_cpu`'s step, the same gradients of mean cross-entropy written out by hand.
//!
//! Why: on a GPU the MLP's step is bound by kernel launches, not arithmetic (its matmuls
//! take microseconds on a large card). Through burn's autodiff a step is some forty
//! tensor operations, each a launch; by hand it is five matmuls (burn's, autotuned) and
//! three small kernels of our own (`shaders/bias_relu.wgsl`, `shaders/mlp_*.wgsl`): bias
//! and ReLU fused; softmax, cross-entropy, its gradient and the output bias's gradient in
//! one workgroup; and ReLU's backward with the hidden bias's gradient. With the fused Adam
//! of the four parameters that is twelve launches a step (`taks bench` counts them; the
//! batch and its labels are uploads, not launches).
//!
//! The gradients equal autodiff's to rounding (summation order differs; `tests` checks
//! 1e-5). Returns `None` off wgpu; the caller then takes the generic path.

use burn::module::ParamId;
use burn::optim::GradientsParams;
use burn::tensor::{Int, Tensor};

use super::gpu_layers;
use super::{Mlp, MlpStep};
use crate::gpu;

impl Mlp {
    /// Gradients of the mean cross-entropy of `x` `[B, in]` against `labels` `[B]`, and the
    /// loss, by hand on the GPU; `None` off wgpu.
    pub(crate) fn gpu_cross_entropy_step(
        &self,
        x: Tensor<2>,
        labels: Tensor<1, Int>,
    ) -> Option<MlpStep> {
        if !gpu::supports(&x) {
            return None;
        }
        let (b1, b2) = (self.hidden.bias.as_ref()?, self.output.bias.as_ref()?);
        let ids: [ParamId; 4] = [self.hidden.weight.id, b1.id, self.output.weight.id, b2.id];
        let x = x.without_autodiff();
        let w1 = self.hidden.weight.val().inner();
        let w2 = self.output.weight.val().inner();

        // Forward: h = relu(x w1 + b1); the output layer's bias goes into the loss kernel.
        let h = gpu_layers::bias_relu(&x.clone().matmul(w1), &b1.val().inner())?;
        let s = h.clone().matmul(w2.clone());
        let (loss_sum, dz, db2) =
            gpu_layers::softmax_cross_entropy_grad(&s, &b2.val().inner(), &labels)?;

        // Backward.
        let dw2 = h.clone().transpose().matmul(dz.clone());
        let (dh, db1) = gpu_layers::relu_grad(&dz.matmul(w2.transpose()), &h)?;
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

    use super::super::mlp_cpu::tests::{check_against_autodiff, check_far_label};

    /// On a wgpu device (lavapipe here): the same checks as the CPU twin's.
    #[test]
    fn gradients_match_autodiff_on_wgpu() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        check_against_autodiff(&device, |mlp, x, y| mlp.gpu_cross_entropy_step(x, y));
        check_far_label(&device, |mlp, x, y| mlp.gpu_cross_entropy_step(x, y));
    }
}
