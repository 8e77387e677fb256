//! ResNet-18, -34 and -50 (He et al. 2016; ResNet-18 is the network of the paper's
//! Clothing1M experiment, and pretrained ImageNet ResNets are where people with real
//! photos start), written on burn 0.22 because no maintained crate builds against it.
//!
//! The layout is torchvision's `resnet18`/`resnet34`/`resnet50`: a 7x7/2 stem with
//! batch norm, ReLU and a 3x3/2 max pool; four stages (64, 128, 256, 512 channels; the
//! first block of stages 2-4 halves the resolution); global average pooling; one linear
//! layer. ResNet-18 and -34 stack basic blocks (two 3x3 convolutions), 2-2-2-2 and
//! 3-4-6-3 of them; ResNet-50 stacks 3-4-6-3 bottleneck blocks (1x1 down to the stage's
//! width, 3x3 carrying the stride, as torchvision's "v1.5", 1x1 up to four times it). A
//! block whose shortcut changes width or resolution projects it with a 1x1 convolution
//! and batch norm.
//!
//! Field names follow torchvision's (`conv1`, `bn1`, `layer1.0.conv1`, ...,
//! `layer1.0.conv3` in a bottleneck, `fc`), so the weights map onto torchvision's key by
//! key (the projection is `downsample.0` / `downsample.1` there): a saved model loads in
//! PyTorch, and torchvision's or timm's weights load here ([`super::pretrained`]). It
//! takes any input size from 32x32 up and any channel count.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::{Device, Tensor};

use super::Architecture;
use crate::ops::conv::{self, FoldedConv};
use crate::ops::{batch_norm, residual};
use crate::plan::GpuConv;

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

/// A basic block (conv1, conv2: 3x3) or, with `conv3`, a bottleneck block (1x1, 3x3,
/// 1x1); batch norm after each convolution, ReLU after all but the last, and ReLU after
/// the shortcut is added. One type for both keeps torchvision's names: an enum would put
/// its variant's name into every tensor's path.
#[derive(Module, Debug)]
pub struct Block {
    conv1: Conv2d,
    bn1: BatchNorm,
    conv2: Conv2d,
    bn2: BatchNorm,
    conv3: Option<Conv2d>,
    bn3: Option<BatchNorm>,
    downsample: Option<Downsample>,
}

impl Block {
    /// A basic block from `from` to `width` channels.
    fn basic(from: usize, width: usize, stride: usize, device: &Device) -> Self {
        Self {
            conv1: conv(from, width, 3, stride, device),
            bn1: BatchNormConfig::new(width).init(device),
            conv2: conv(width, width, 3, 1, device),
            bn2: BatchNormConfig::new(width).init(device),
            conv3: None,
            bn3: None,
            downsample: Self::projection(from, width, stride, device),
        }
    }

    /// A bottleneck block from `from` to `4 * width` channels.
    fn bottleneck(from: usize, width: usize, stride: usize, device: &Device) -> Self {
        let to = 4 * width;
        Self {
            conv1: conv(from, width, 1, 1, device),
            bn1: BatchNormConfig::new(width).init(device),
            conv2: conv(width, width, 3, stride, device),
            bn2: BatchNormConfig::new(width).init(device),
            conv3: Some(conv(width, to, 1, 1, device)),
            bn3: Some(BatchNormConfig::new(to).init(device)),
            downsample: Self::projection(from, to, stride, device),
        }
    }

    fn projection(from: usize, to: usize, stride: usize, device: &Device) -> Option<Downsample> {
        (stride != 1 || from != to).then(|| Downsample {
            conv: conv(from, to, 1, stride, device),
            bn: BatchNormConfig::new(to).init(device),
        })
    }

    /// The block's convolutions with their batch norms, in order, and its projection.
    fn layers(&self) -> (Vec<Layer<'_>>, Option<Layer<'_>>) {
        let mut layers = vec![(&self.conv1, &self.bn1), (&self.conv2, &self.bn2)];
        if let (Some(conv3), Some(bn3)) = (&self.conv3, &self.bn3) {
            layers.push((conv3, bn3));
        }
        (layers, self.downsample.as_ref().map(|d| (&d.conv, &d.bn)))
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let (layers, downsample) = self.layers();
        residual_block(&layers, downsample.as_ref(), x)
    }
}

/// A convolution of a block and the batch norm after it.
type Layer<'a> = (&'a Conv2d, &'a BatchNorm);

/// A convolution and the batch norm after it, ReLU or not: a block's own layer in
/// training, or its folded twin when scoring ([`Folded`]). One text of the blocks'
/// layer order serves both.
trait ConvNorm {
    fn run(&self, x: Tensor<4>, relu: bool) -> Tensor<4>;
}

impl ConvNorm for Layer<'_> {
    fn run(&self, x: Tensor<4>, relu: bool) -> Tensor<4> {
        batch_norm::forward(self.1, conv::forward(self.0, x), relu)
    }
}

impl ConvNorm for FoldedConv {
    fn run(&self, x: Tensor<4>, relu: bool) -> Tensor<4> {
        self.forward(x, relu)
    }
}

/// A residual block: `layers` in order with a ReLU after each but the last (a basic
/// block's second convolution has none, a bottleneck's second has one), then the ReLU of
/// their sum with the shortcut, `x` projected by `downsample` where it changes width or
/// resolution.
fn residual_block<L: ConvNorm>(layers: &[L], downsample: Option<&L>, x: Tensor<4>) -> Tensor<4> {
    let shortcut = match downsample {
        Some(d) => d.run(x.clone(), false),
        None => x.clone(),
    };
    let last = layers.len() - 1;
    let mut h = x;
    for (i, layer) in layers.iter().enumerate() {
        h = layer.run(h, i < last);
    }
    residual::relu_of_sum(h, shortcut)
}

/// Blocks per stage and whether they are bottlenecks, as torchvision builds each depth.
fn stages(architecture: Architecture) -> ([usize; 4], bool) {
    match architecture {
        Architecture::ResNet34 => ([3, 4, 6, 3], false),
        Architecture::ResNet50 => ([3, 4, 6, 3], true),
        _ => ([2, 2, 2, 2], false),
    }
}

/// How many times wider a block's output is than its width: 4 for bottleneck blocks.
fn expansion(bottleneck: bool) -> usize {
    if bottleneck { 4 } else { 1 }
}

/// The features `fc` takes: the last stage's 512 times the expansion.
fn features(architecture: Architecture) -> usize {
    512 * expansion(stages(architecture).1)
}

/// A ResNet over flattened `[B, C*H*W]` samples.
#[derive(Module, Debug)]
pub struct ResNet {
    conv1: Conv2d,
    bn1: BatchNorm,
    maxpool: MaxPool2d,
    layer1: Vec<Block>,
    layer2: Vec<Block>,
    layer3: Vec<Block>,
    layer4: Vec<Block>,
    avgpool: AdaptiveAvgPool2d,
    fc: Linear,
    channels: usize,
    height: usize,
    width: usize,
}

impl ResNet {
    /// `architecture` (ResNet-18, -34 or -50) for samples of `shape` = [C, H, W].
    pub fn new(
        architecture: Architecture,
        shape: [usize; 3],
        classes: usize,
        device: &Device,
    ) -> Self {
        let (counts, bottleneck) = stages(architecture);
        let expansion = expansion(bottleneck);
        let mut from = 64;
        let mut stage = |i: usize, stride: usize| {
            let width = 64 << i;
            (0..counts[i])
                .map(|b| {
                    let stride = if b == 0 { stride } else { 1 };
                    let block = if bottleneck {
                        Block::bottleneck(from, width, stride, device)
                    } else {
                        Block::basic(from, width, stride, device)
                    };
                    from = width * expansion;
                    block
                })
                .collect::<Vec<_>>()
        };
        let (layer1, layer2, layer3, layer4) = (stage(0, 1), stage(1, 2), stage(2, 2), stage(3, 2));
        Self {
            conv1: conv(shape[0], 64, 7, 2, device),
            bn1: BatchNormConfig::new(64).init(device),
            maxpool: MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(),
            layer1,
            layer2,
            layer3,
            layer4,
            avgpool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            fc: LinearConfig::new(features(architecture), classes).init(device),
            channels: shape[0],
            height: shape[1],
            width: shape[2],
        }
    }

    /// The parameters of its output layer `fc` for `classes`, without building it: the
    /// one layer whose size the classes set, as the rest depends on the architecture
    /// and the input's channels alone ([`super::Architecture::sized_parameters`]).
    pub(super) fn output_parameters(architecture: Architecture, classes: usize) -> u64 {
        (features(architecture) as u64 + 1).saturating_mul(classes as u64)
    }

    fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.layer1
            .iter()
            .chain(&self.layer2)
            .chain(&self.layer3)
            .chain(&self.layer4)
    }

    /// `[B, C*H*W]` -> the pooled features `[B, 512]` (`[B, 2048]` for ResNet-50): the
    /// input of the classifier, which `taks embed` writes out.
    pub fn features(&self, x: Tensor<2>) -> Tensor<2> {
        let blocks: Vec<&Block> = self.blocks().collect();
        self.features_by(
            x,
            |x| (&self.conv1, &self.bn1).run(x, true),
            |i, x| blocks[i].forward(x),
        )
    }

    /// The network's layers up to its features, the stem run by `stem` and block `i` by
    /// `block(i, x)`: its own ([`ResNet::features`]) or the folded ones ([`Folded`]).
    fn features_by(
        &self,
        x: Tensor<2>,
        stem: impl Fn(Tensor<4>) -> Tensor<4>,
        block: impl Fn(usize, Tensor<4>) -> Tensor<4>,
    ) -> Tensor<2> {
        let batch = x.dims()[0];
        let mut x = self.maxpool.forward(stem(x.reshape([
            batch,
            self.channels,
            self.height,
            self.width,
        ])));
        for i in 0..self.blocks().count() {
            x = block(i, x);
        }
        self.avgpool.forward(x).flatten(1, 3)
    }

    /// `[B, C*H*W]` -> `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        crate::ops::mixed_precision::linear(&self.fc, self.features(x))
    }
}

/// The folded convolutions of one block, in its order.
struct FoldedBlock {
    convs: Vec<FoldedConv>,
    downsample: Option<FoldedConv>,
}

/// A ResNet with each convolution's batch norm folded in, for eval-mode forward passes
/// ([`super::Scorer`]): the same layers as [`ResNet::forward`], in the same order.
pub struct Folded<'a> {
    net: &'a ResNet,
    stem: FoldedConv,
    blocks: Vec<FoldedBlock>,
}

impl ResNet {
    /// `None` where a layer does not fold (none of these networks').
    pub(super) fn folded(&self, how: GpuConv) -> Option<Folded<'_>> {
        let fold = |conv: &Conv2d, bn: &BatchNorm| FoldedConv::new(conv, bn, how);
        let blocks = self
            .blocks()
            .map(|b| {
                let (layers, downsample) = b.layers();
                let convs = layers
                    .iter()
                    .map(|(conv, bn)| fold(conv, bn))
                    .collect::<Option<Vec<_>>>()?;
                let downsample = match downsample {
                    Some((conv, bn)) => Some(fold(conv, bn)?),
                    None => None,
                };
                Some(FoldedBlock { convs, downsample })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Folded {
            net: self,
            stem: fold(&self.conv1, &self.bn1)?,
            blocks,
        })
    }

    /// The last layer's weights, whose device and type are the network's.
    pub(super) fn output_weight(&self) -> Tensor<2> {
        self.fc.weight.val()
    }
}

impl Folded<'_> {
    /// `[B, C*H*W]` -> `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let net = self.net;
        let features = net.features_by(
            x,
            |x| self.stem.run(x, true),
            |i, x| {
                let b = &self.blocks[i];
                residual_block(&b.convs, b.downsample.as_ref(), x)
            },
        );
        crate::ops::mixed_precision::linear(&net.fc, features)
    }
}
