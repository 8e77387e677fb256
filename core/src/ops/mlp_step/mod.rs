//! The MLP's training step without an autodiff graph: the gradients of mean
//! cross-entropy written out by hand, on flex by host loops ([`cpu`]) and on a wgpu device
//! by five matmuls and three kernels of our own ([`gpu`]), and the CPU's scoring pass over
//! chunks in parallel. The network itself ([`crate::nn::Mlp`]) only names its two layers;
//! this op takes them as [`Layers`].

use burn::nn::Linear;
use burn::tensor::{Int, Tensor};

use super::layer_kernels::ScaleAt;
use crate::plan::Kernel;

pub(crate) mod cpu;
pub(crate) mod gpu;

/// The MLP's two linear layers, `inputs -> 256` (ReLU after) and `256 -> classes`.
pub(crate) struct Layers<'a> {
    pub hidden: &'a Linear,
    pub output: &'a Linear,
}

/// One step of the MLP without a graph ([`Layers::cross_entropy_step`]): the gradients of
/// mean cross-entropy (f32; in a mixed-precision step times the loss scale, the weights'
/// in f16), registered under the weights' ids, and the batch's summed loss `[1]` (what the
/// epoch adds up), on the weights' device.
pub(crate) struct MlpStep {
    pub grads: burn::optim::GradientsParams,
    pub loss_sum: Tensor<1>,
}

/// What a mixed-precision (f16) step by hand takes beside the batch.
pub(crate) struct MixedStep<'a> {
    /// Where the loss scale lies on the device.
    pub scale: ScaleAt<'a>,
    /// The f16 copy of a weight (flat) that the optimiser's last step wrote with it,
    /// where it wrote one (`optim::Adam::low_copy`); the step casts the others itself.
    pub low_copy: &'a dyn Fn(&Tensor<1>) -> Option<Tensor<1>>,
}

impl Layers<'_> {
    /// The gradients of `mean(cross_entropy(forward(x), labels))` and the loss, written out
    /// by hand without an autodiff graph: on flex by host loops ([`cpu`]), on a wgpu
    /// device by five matmuls and three kernels ([`gpu`]). With `mixed`, the step of a
    /// mixed-precision (f16) run, which only the wgpu device takes. `None` elsewhere.
    pub(crate) fn cross_entropy_step(
        &self,
        x: Tensor<2>,
        labels: Tensor<1, Int>,
        mixed: Option<MixedStep>,
    ) -> Option<MlpStep> {
        match (Kernel::MlpStepHost.runs_for(&x), mixed) {
            (true, None) => self.cpu_cross_entropy_step(x, labels),
            (true, Some(_)) => None,
            (false, mixed) => self.gpu_cross_entropy_step(x, labels, mixed),
        }
    }
}
