//! The 6-layer CNN of the paper's CIFAR experiments (Co-teaching+'s, JoCoR's and
//! TAkS's): three pairs of 3x3 convolution, batch norm and ReLU blocks, each pair followed
//! by a 2x2 max pool, then one linear layer. A training step on a wgpu device runs its
//! blocks through taks's convolution and batch-norm ops ([`crate::ops::conv`],
//! [`crate::ops::batch_norm`]), which fall back to burn's elsewhere.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::{Device, Tensor};

use crate::ops::{batch_norm, conv, mixed_precision};

/// conv3x3 + batch norm + ReLU.
#[derive(Module, Debug)]
pub struct ConvBlock {
    pub(super) conv: Conv2d,
    pub(super) norm: BatchNorm,
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
        let (y, bias) = conv::forward_leaving_bias(&self.conv, x);
        batch_norm::forward_shifted(&self.norm, y, bias, true)
    }
}

/// The CIFAR CNN of Co-teaching+, JoCoR and TAkS.
#[derive(Module, Debug)]
pub struct Cnn {
    pub(super) blocks: Vec<ConvBlock>,
    pub(super) pool: MaxPool2d,
    pub(super) output: Linear,
    pub(super) channels: usize,
    pub(super) side: usize,
}

impl Cnn {
    pub fn new(channels: usize, side: usize, classes: usize, device: &Device) -> Self {
        let widths = [channels, 64, 64, 128, 128, 196, 16];
        let blocks = widths
            .windows(2)
            .map(|w| ConvBlock::new(w[0], w[1], device))
            .collect();
        Self {
            blocks,
            pool: MaxPool2dConfig::new([2, 2]).init(),
            output: LinearConfig::new(features(side), classes).init(device),
            channels,
            side,
        }
    }

    /// The parameters of its output layer for images of `side` and `classes`, without
    /// building it: the one layer whose size they set, as the convolutions' sizes
    /// depend on the channels alone ([`super::Architecture::sized_parameters`]).
    pub(super) fn output_parameters(side: usize, classes: usize) -> u64 {
        (features(side) as u64 + 1).saturating_mul(classes as u64)
    }

    /// `[B, C*H*W]` -> `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.forward_by(x, |i, h| self.blocks[i].forward(h))
    }

    /// The network's layers in order, block `i` run by `block(i, h)`: its own
    /// ([`Cnn::forward`]), or the scoring pass's with each batch norm folded into its
    /// convolution ([`super::scorer`]). One text of the layer order for both.
    pub(super) fn forward_by(
        &self,
        x: Tensor<2>,
        block: impl Fn(usize, Tensor<4>) -> Tensor<4>,
    ) -> Tensor<2> {
        let batch = x.dims()[0];
        let mut h = x.reshape([batch, self.channels, self.side, self.side]);
        for i in 0..self.blocks.len() {
            h = block(i, h);
            if i % 2 == 1 {
                h = self.pool.forward(h);
            }
        }
        mixed_precision::linear(&self.output, h.flatten(1, 3))
    }
}

/// The output layer's inputs for images of `side`: 16 channels of `side / 8` squared
/// after three 2x2 poolings.
fn features(side: usize) -> usize {
    let after_pools = side / 8;
    16 * after_pools * after_pools
}

#[cfg(test)]
mod tests {
    use burn::module::Param;
    use burn::tensor::Distribution;

    use super::*;
    use crate::test_support::{gap, host, random};

    fn assert_near(a: Vec<f32>, b: Vec<f32>, what: &str) {
        let gap = gap(&a, &b);
        assert!(gap <= 1e-4, "{what} off by {gap}");
    }

    /// On lavapipe: a CNN block in a training step on wgpu leaves its convolution's bias
    /// out and folds it into the batch norm's running mean
    /// (`ops::batch_norm::forward_shifted`); its output and running statistics are those
    /// of the same block on flex, where burn adds the bias.
    #[test]
    fn a_conv_block_on_wgpu_folds_its_bias_into_the_running_mean() {
        crate::test_support::under_each_matmul(|| {
            let gpu = crate::gpu::direct::start()
                .expect("a wgpu adapter")
                .0
                .autodiff();
            let cpu = Device::flex().autodiff();
            let mut block = ConvBlock::new(3, 4, &cpu);
            // Far from zero: a running mean without it is off by more than 0.1.
            let bias = random([4], Distribution::Uniform(1.0, 3.0), 1, &cpu);
            block.conv.bias = Some(Param::from_tensor(bias));
            // Its own running statistics, from a record (a clone would share them).
            let on_gpu = ConvBlock::new(3, 4, &gpu)
                .load_record(block.clone().into_record())
                .to_device(&gpu);
            let x = random([4, 3, 8, 8], Distribution::Normal(0.0, 1.0), 2, &cpu);

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
        });
    }
}
