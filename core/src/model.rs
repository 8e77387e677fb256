//! The paper's networks: the MLP for MNIST-like data, the 6-layer CNN for CIFAR and
//! ResNet-18 ([`resnet`]) for larger images (its Clothing1M network), and torchvision's
//! ResNet-34 and -50 to fine-tune from pretrained weights ([`pretrained`]).
//!
//! Both take a batch of flattened samples `[B, C*H*W]` (the layout the training set is
//! kept in on the device) and return logits `[B, classes]`; the CNN reshapes to
//! `[B, C, H, W]` itself, so the training loop never needs to know which one it runs.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::relu;
use burn::tensor::{Device, FloatDType, Tensor};
use serde::{Deserialize, Serialize};

use crate::precision::Precision;

mod channels_last;
mod conv_geometry;
mod folded_conv;
mod gpu_batch_norm;
mod gpu_conv;
pub mod gpu_conv_store;
mod gpu_layers;
mod gpu_matmul;
mod im2col;
pub mod image_input;
mod implicit_conv;
mod mixed_precision;
mod mlp_cpu;
mod mlp_gpu;
pub mod pretrained;
mod residual;
pub mod resnet;
mod scorer;
pub(crate) mod torch_names;
mod train_batch_norm;
mod train_conv;

pub use gpu_conv::{GpuConv, Measured, Way, measured_shapes};
pub(crate) use gpu_layers::ScaleAt;
pub use gpu_matmul::GpuMatmul;
pub use resnet::ResNet;
pub use scorer::Scorer;

/// Which network to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Architecture {
    /// 784 -> 256 (ReLU) -> classes.
    Mlp,
    /// conv64-conv64-pool, conv128-conv128-pool, conv196-conv16-pool, linear; BN + ReLU.
    Cnn,
    /// torchvision's ResNet-18, for larger images.
    #[serde(rename = "resnet18")]
    ResNet18,
    /// torchvision's ResNet-34.
    #[serde(rename = "resnet34")]
    ResNet34,
    /// torchvision's ResNet-50 (bottleneck blocks).
    #[serde(rename = "resnet50")]
    ResNet50,
}

impl Architecture {
    pub const ALL: [Architecture; 5] = [
        Architecture::Mlp,
        Architecture::Cnn,
        Architecture::ResNet18,
        Architecture::ResNet34,
        Architecture::ResNet50,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Architecture::Mlp => "mlp",
            Architecture::Cnn => "cnn",
            Architecture::ResNet18 => "resnet18",
            Architecture::ResNet34 => "resnet34",
            Architecture::ResNet50 => "resnet50",
        }
    }

    /// One of torchvision's ResNets (the networks pretrained weights exist for).
    pub fn is_resnet(self) -> bool {
        matches!(
            self,
            Architecture::ResNet18 | Architecture::ResNet34 | Architecture::ResNet50
        )
    }
}

/// MLP 784-256-10 of the paper's MNIST experiments.
#[derive(Module, Debug)]
pub struct Mlp {
    hidden: Linear,
    output: Linear,
}

impl Mlp {
    pub fn new(inputs: usize, classes: usize, device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(inputs, 256).init(device),
            output: LinearConfig::new(256, classes).init(device),
        }
    }

    /// `[B, inputs]` -> `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let hidden = mixed_precision::linear(&self.hidden, x);
        mixed_precision::linear(&self.output, relu(hidden))
    }
}

/// One step of the MLP without a graph ([`Mlp::cross_entropy_step_by_hand`]): the
/// gradients of mean cross-entropy (f32; in a mixed-precision step times the loss scale,
/// the weights' in f16), registered under the weights' ids, and the batch's summed loss
/// `[1]` (what the epoch adds up), on the weights' device.
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

impl Mlp {
    /// The gradients of `mean(cross_entropy(forward(x), labels))` and the loss, written out
    /// by hand without an autodiff graph: on flex by host loops (`mlp_cpu`), on a wgpu
    /// device by five matmuls and three kernels (`mlp_gpu`). With `mixed`, the step of a
    /// mixed-precision (f16) run, which only the wgpu device takes. `None` elsewhere.
    pub(crate) fn cross_entropy_step_by_hand(
        &self,
        x: Tensor<2>,
        labels: Tensor<1, burn::tensor::Int>,
        mixed: Option<MixedStep>,
    ) -> Option<MlpStep> {
        match (crate::flex_buffers::is_f32(&x), mixed) {
            (true, None) => self.cpu_cross_entropy_step(x, labels),
            (true, Some(_)) => None,
            (false, mixed) => self.gpu_cross_entropy_step(x, labels, mixed),
        }
    }
}

/// conv3x3 + batch norm + ReLU.
#[derive(Module, Debug)]
pub struct ConvBlock {
    conv: Conv2d,
    norm: BatchNorm,
}

impl ConvBlock {
    fn new(from: usize, to: usize, device: &Device) -> Self {
        Self {
            conv: Conv2dConfig::new([from, to], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device),
            norm: BatchNormConfig::new(to).init(device),
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let (y, bias) = train_conv::forward_leaving_bias(&self.conv, x);
        train_batch_norm::forward_shifted(&self.norm, y, bias, true)
    }
}

/// The CIFAR CNN of Co-teaching+, JoCoR and TAkS.
#[derive(Module, Debug)]
pub struct Cnn {
    blocks: Vec<ConvBlock>,
    pool: MaxPool2d,
    output: Linear,
    channels: usize,
    side: usize,
}

impl Cnn {
    pub fn new(channels: usize, side: usize, classes: usize, device: &Device) -> Self {
        let widths = [channels, 64, 64, 128, 128, 196, 16];
        let blocks = widths
            .windows(2)
            .map(|w| ConvBlock::new(w[0], w[1], device))
            .collect();
        let after_pools = side / 8;
        Self {
            blocks,
            pool: MaxPool2dConfig::new([2, 2]).init(),
            output: LinearConfig::new(16 * after_pools * after_pools, classes).init(device),
            channels,
            side,
        }
    }

    /// `[B, C*H*W]` -> `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let batch = x.dims()[0];
        let mut h = x.reshape([batch, self.channels, self.side, self.side]);
        for (i, block) in self.blocks.iter().enumerate() {
            h = block.forward(h);
            if i % 2 == 1 {
                h = self.pool.forward(h);
            }
        }
        mixed_precision::linear(&self.output, h.flatten(1, 3))
    }
}

/// Any of the networks behind one forward.
#[derive(Module, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Classifier {
    Mlp(Mlp),
    Cnn(Cnn),
    ResNet(ResNet),
}

impl Classifier {
    /// Build `arch` for samples of `shape` = [C, H, W].
    pub fn new(arch: Architecture, shape: [usize; 3], classes: usize, device: &Device) -> Self {
        match arch {
            Architecture::Mlp => Classifier::Mlp(Mlp::new(shape.iter().product(), classes, device)),
            Architecture::Cnn => Classifier::Cnn(Cnn::new(shape[0], shape[1], classes, device)),
            Architecture::ResNet18 | Architecture::ResNet34 | Architecture::ResNet50 => {
                Classifier::ResNet(ResNet::new(arch, shape, classes, device))
            }
        }
    }

    /// The MLP, when this is one (its graph-free paths live in `mlp_cpu` and `mlp_gpu`).
    pub(crate) fn as_mlp(&self) -> Option<&Mlp> {
        match self {
            Classifier::Mlp(m) => Some(m),
            _ => None,
        }
    }

    /// `[B, C*H*W]` -> the pooled features before a ResNet's classifier, `[B, 512]`
    /// (`[B, 2048]` for ResNet-50); `None` for the other networks.
    pub fn features(&self, x: Tensor<2>) -> Option<Tensor<2>> {
        match self {
            Classifier::ResNet(m) => Some(m.features(x)),
            _ => None,
        }
    }

    /// `[B, C*H*W]` -> logits `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        match self {
            Classifier::Mlp(m) => m.forward(x),
            Classifier::Cnn(m) => m.forward(x),
            Classifier::ResNet(m) => m.forward(x),
        }
    }
}

/// The networks a method trains side by side: one, or two for the co-training methods.
///
/// One module, so one optimiser steps them all: Adam's state is per parameter, so that
/// is the same as one Adam per network (Co-teaching) or one over both (JoCoR).
#[derive(Module, Debug)]
pub struct Networks {
    nets: Vec<Classifier>,
}

impl Networks {
    /// `count` networks of `arch`, each initialised with fresh random weights.
    pub fn new(
        count: usize,
        arch: Architecture,
        shape: [usize; 3],
        classes: usize,
        device: &Device,
    ) -> Self {
        Self {
            nets: (0..count)
                .map(|_| Classifier::new(arch, shape, classes, device))
                .collect(),
        }
    }

    /// `[B, C*H*W]` -> each network's logits `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Vec<Tensor<2>> {
        self.nets.iter().map(|n| n.forward(x.clone())).collect()
    }

    /// [`Networks::forward`] of a training step in `precision`: the input cast to its
    /// 16-bit type, each layer in that type (batch norms in f32), the logits cast back to
    /// f32 for the loss ([`crate::precision`]).
    pub fn forward_in(&self, x: Tensor<2>, precision: Precision) -> Vec<Tensor<2>> {
        let Some(low) = precision.low() else {
            return self.forward(x);
        };
        self.forward(x.cast(low))
            .into_iter()
            .map(|logits| logits.cast(FloatDType::F32))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.nets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    /// The first network: the one a single-network method trains.
    pub fn first(&self) -> &Classifier {
        &self.nets[0]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Classifier> {
        self.nets.iter()
    }
}

#[cfg(test)]
mod tests {
    use burn::module::Param;
    use burn::tensor::Distribution;

    use super::*;
    use crate::test_support::{gap, host};

    fn assert_near(a: Vec<f32>, b: Vec<f32>, what: &str) {
        let gap = gap(&a, &b);
        assert!(gap <= 1e-4, "{what} off by {gap}");
    }

    /// On lavapipe: a CNN block in a training step on wgpu leaves its convolution's bias
    /// out and folds it into the batch norm's running mean
    /// (`train_batch_norm::forward_shifted`); its output and running statistics are those
    /// of the same block on flex, where burn adds the bias.
    #[test]
    fn a_conv_block_on_wgpu_folds_its_bias_into_the_running_mean() {
        let gpu = crate::gpu::direct::start()
            .expect("a wgpu adapter")
            .0
            .autodiff();
        let cpu = Device::flex().autodiff();
        let mut block = ConvBlock::new(3, 4, &cpu);
        // Far from zero: a running mean without it is off by more than 0.1.
        let bias = Tensor::<1>::random([4], Distribution::Uniform(1.0, 3.0), &cpu);
        block.conv.bias = Some(Param::from_tensor(bias));
        // Its own running statistics, from a record (a clone would share them).
        let on_gpu = ConvBlock::new(3, 4, &gpu)
            .load_record(block.clone().into_record())
            .to_device(&gpu);
        let x = Tensor::<4>::random([4, 3, 8, 8], Distribution::Normal(0.0, 1.0), &cpu);

        let theirs = block.forward(x.clone());
        let ours = on_gpu.forward(x.to_device(&gpu));
        assert_near(host(ours), host(theirs), "the block's output");
        assert_near(
            host(on_gpu.norm.running_mean.value_sync()),
            host(block.norm.running_mean.value_sync()),
            "the running mean",
        );
        assert_near(
            host(on_gpu.norm.running_var.value_sync()),
            host(block.norm.running_var.value_sync()),
            "the running variance",
        );
    }
}
