//! ResNet-18 (He et al. 2016), the network of the paper's Clothing1M experiment, written
//! on burn 0.22 because no maintained crate builds against it.
//!
//! The layout is torchvision's `resnet18`: a 7x7/2 stem with batch norm, ReLU and a
//! 3x3/2 max pool; four stages of two basic blocks (64, 128, 256, 512 channels; the first
//! block of stages 2-4 halves the resolution and projects its shortcut with a 1x1/2
//! convolution and batch norm); global average pooling; one linear layer. Field names
//! follow torchvision's (`conv1`, `bn1`, `layer1.0.conv1`, ..., `fc`), so a saved model
//! maps onto `torchvision.models.resnet18` key by key (see `model_file` in the CLI; the
//! projection is `downsample.0` / `downsample.1` there). It takes any input size from
//! 16x16 up and any channel count.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use super::folded_conv::FoldedConv;
use super::train_conv;

/// A convolution without bias (the batch norm after it has one).
fn conv(from: usize, to: usize, kernel: usize, stride: usize, device: &Device) -> Conv2d {
    let pad = kernel / 2;
    Conv2dConfig::new([from, to], [kernel, kernel])
        .with_stride([stride, stride])
        .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
        .with_bias(false)
        .init(device)
}

/// The 1x1 projection of a shortcut that changes width or resolution.
#[derive(Module, Debug)]
pub struct Downsample {
    conv: Conv2d,
    bn: BatchNorm,
}

/// Two 3x3 convolutions with batch norm and an identity (or projected) shortcut.
#[derive(Module, Debug)]
pub struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm,
    conv2: Conv2d,
    bn2: BatchNorm,
    downsample: Option<Downsample>,
}

impl BasicBlock {
    fn new(from: usize, to: usize, stride: usize, device: &Device) -> Self {
        let downsample = (stride != 1 || from != to).then(|| Downsample {
            conv: conv(from, to, 1, stride, device),
            bn: BatchNormConfig::new(to).init(device),
        });
        Self {
            conv1: conv(from, to, 3, stride, device),
            bn1: BatchNormConfig::new(to).init(device),
            conv2: conv(to, to, 3, 1, device),
            bn2: BatchNormConfig::new(to).init(device),
            downsample,
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let shortcut = match &self.downsample {
            Some(d) => d.bn.forward(train_conv::forward(&d.conv, x.clone())),
            None => x.clone(),
        };
        let h = relu(self.bn1.forward(train_conv::forward(&self.conv1, x)));
        let h = self.bn2.forward(train_conv::forward(&self.conv2, h));
        relu(h + shortcut)
    }
}

/// ResNet-18 over flattened `[B, C*H*W]` samples.
#[derive(Module, Debug)]
pub struct ResNet18 {
    conv1: Conv2d,
    bn1: BatchNorm,
    maxpool: MaxPool2d,
    layer1: Vec<BasicBlock>,
    layer2: Vec<BasicBlock>,
    layer3: Vec<BasicBlock>,
    layer4: Vec<BasicBlock>,
    avgpool: AdaptiveAvgPool2d,
    fc: Linear,
    channels: usize,
    height: usize,
    width: usize,
}

impl ResNet18 {
    /// For samples of `shape` = [C, H, W].
    pub fn new(shape: [usize; 3], classes: usize, device: &Device) -> Self {
        let stage = |from: usize, to: usize, stride: usize| {
            vec![
                BasicBlock::new(from, to, stride, device),
                BasicBlock::new(to, to, 1, device),
            ]
        };
        Self {
            conv1: conv(shape[0], 64, 7, 2, device),
            bn1: BatchNormConfig::new(64).init(device),
            maxpool: MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(),
            layer1: stage(64, 64, 1),
            layer2: stage(64, 128, 2),
            layer3: stage(128, 256, 2),
            layer4: stage(256, 512, 2),
            avgpool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            fc: LinearConfig::new(512, classes).init(device),
            channels: shape[0],
            height: shape[1],
            width: shape[2],
        }
    }

    /// `[B, C*H*W]` -> `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let batch = x.dims()[0];
        let mut x = x.reshape([batch, self.channels, self.height, self.width]);
        x = self
            .maxpool
            .forward(relu(self.bn1.forward(train_conv::forward(&self.conv1, x))));
        for block in self
            .layer1
            .iter()
            .chain(&self.layer2)
            .chain(&self.layer3)
            .chain(&self.layer4)
        {
            x = block.forward(x);
        }
        self.fc.forward(self.avgpool.forward(x).flatten(1, 3))
    }
}

/// ResNet-18 with each convolution's batch norm folded in, for eval-mode forward passes
/// ([`super::Scorer`]): the same layers as [`ResNet18::forward`], in the same order.
pub struct Folded<'a> {
    net: &'a ResNet18,
    stem: FoldedConv,
    /// Per block: conv1, conv2 and the projection of its shortcut, if any.
    blocks: Vec<(FoldedConv, FoldedConv, Option<FoldedConv>)>,
}

impl ResNet18 {
    /// `None` where a layer does not fold (none of ResNet-18's).
    pub(super) fn folded(&self, how: super::GpuConv) -> Option<Folded<'_>> {
        let fold = |conv: &Conv2d, bn: &BatchNorm| FoldedConv::new(conv, bn, how);
        let blocks = self
            .layer1
            .iter()
            .chain(&self.layer2)
            .chain(&self.layer3)
            .chain(&self.layer4)
            .map(|b| {
                let downsample = match &b.downsample {
                    Some(d) => Some(fold(&d.conv, &d.bn)?),
                    None => None,
                };
                Some((fold(&b.conv1, &b.bn1)?, fold(&b.conv2, &b.bn2)?, downsample))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Folded {
            net: self,
            stem: fold(&self.conv1, &self.bn1)?,
            blocks,
        })
    }

    pub(super) fn on_gpu(&self) -> bool {
        crate::gpu::supports(&self.fc.weight.val())
    }
}

impl Folded<'_> {
    /// `[B, C*H*W]` -> `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let net = self.net;
        let batch = x.dims()[0];
        let x = x.reshape([batch, net.channels, net.height, net.width]);
        let mut x = net.maxpool.forward(self.stem.forward(x, true));
        for (conv1, conv2, downsample) in &self.blocks {
            let shortcut = match downsample {
                Some(d) => d.forward(x.clone(), false),
                None => x.clone(),
            };
            let h = conv1.forward(x, true);
            x = relu(conv2.forward(h, false) + shortcut);
        }
        net.fc.forward(net.avgpool.forward(x).flatten(1, 3))
    }
}
