//! The paper's networks: the MLP for MNIST-like data, the 6-layer CNN for CIFAR and
//! ResNet-18 ([`resnet`]) for larger images (its Clothing1M network), and torchvision's
//! ResNet-34 and -50 to fine-tune from pretrained weights ([`pretrained`]).
//!
//! Each takes a batch of flattened samples `[B, C*H*W]` (the layout the training set is
//! kept in on the device) and returns logits `[B, classes]`; the CNN and the ResNets
//! reshape to `[B, C, H, W]` themselves, so the training loop never needs to know which
//! one it runs. One file per network ([`mlp`], [`cnn`], [`resnet`]) says which layers it
//! has; how a layer runs on each device and in each precision is an op's business
//! ([`crate::ops`]). [`Classifier`] is any one of them, [`Networks`] the one or two a
//! method trains; [`scorer`] is their eval-mode pass over the whole training set.

use std::sync::{Mutex, PoisonError};

use burn::module::Module;
use burn::tensor::{Device, FloatDType, Tensor};
use serde::{Deserialize, Serialize};

use crate::precision::Precision;

mod cnn;
pub mod image_input;
mod mlp;
pub mod pretrained;
pub mod resnet;
mod scorer;
pub mod torch_names;

pub use cnn::{Cnn, ConvBlock};
pub use mlp::Mlp;
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

    /// The parameters of the layers whose sizes a sample's `shape` and the number of
    /// `classes` set, without building the network: the MLP's two layers, every other
    /// network's output layer. The rest is fixed by the architecture and the channels
    /// (ResNet-50's 23.5 million at most), so this is what a model card's numbers can
    /// make huge: `taks predict` checks it against the size of the weights file before it
    /// builds the network the card describes.
    pub fn sized_parameters(self, shape: [usize; 3], classes: usize) -> u64 {
        match self {
            Architecture::Mlp => Mlp::parameters(shape.iter().product(), classes),
            Architecture::Cnn => Cnn::output_parameters(shape[1], classes),
            Architecture::ResNet18 | Architecture::ResNet34 | Architecture::ResNet50 => {
                ResNet::output_parameters(self, classes)
            }
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

    /// The MLP, when this is one (its graph-free step and scoring pass are
    /// [`crate::ops::mlp_step`]).
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

    /// [`Networks::new`] with the weights burn draws after seeding its generator with
    /// `seed`. burn keeps one generator per process, so two runs in one process (the
    /// tests' threads, a caller's) would otherwise take their weights from it in whatever
    /// order their threads ran; the lock makes seeding and drawing one step, so a run's
    /// weights are its seed's alone against every other run made this way (`Trainer`'s).
    /// A draw from burn's generator outside it (`Networks::new`, `Tensor::random`) in
    /// another thread can still come between.
    pub fn seeded(
        count: usize,
        arch: Architecture,
        shape: [usize; 3],
        classes: usize,
        device: &Device,
        seed: u64,
    ) -> Self {
        drawn_from_seed(device, seed, || {
            Self::new(count, arch, shape, classes, device)
        })
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

/// What `draw` makes from burn's generator, seeded with `seed` first: seeding and
/// drawing are one step under one lock, so the weights are the seed's alone against
/// every other draw made this way ([`Networks::seeded`], the tests' layers).
pub fn drawn_from_seed<T>(device: &Device, seed: u64, draw: impl FnOnce() -> T) -> T {
    static DRAWING: Mutex<()> = Mutex::new(());
    let _drawing = DRAWING.lock().unwrap_or_else(PoisonError::into_inner);
    device.seed(seed);
    draw()
}

#[cfg(test)]
mod tests {
    use burn::module::Module;
    use burn::tensor::Device;

    use super::*;

    /// What [`Architecture::sized_parameters`] leaves out of a built network's parameters
    /// is the same for any number of classes and any image side: so it counts every
    /// parameter a model card's numbers size (all of them for the MLP), and a card can
    /// make nothing else large.
    #[test]
    fn sized_parameters_are_those_the_classes_and_the_side_set() {
        let device = Device::flex();
        for architecture in Architecture::ALL {
            let rest = |shape: [usize; 3], classes: usize| {
                let built = Classifier::new(architecture, shape, classes, &device).num_params();
                let sized = architecture.sized_parameters(shape, classes);
                assert!(
                    sized <= built as u64,
                    "{architecture:?}: {sized} of {built}"
                );
                built as u64 - sized
            };
            let rest_of_small = rest([3, 16, 16], 2);
            assert_eq!(
                rest([3, 16, 16], 7),
                rest_of_small,
                "{architecture:?}: classes"
            );
            assert_eq!(
                rest([3, 32, 32], 2),
                rest_of_small,
                "{architecture:?}: side"
            );
            if architecture == Architecture::Mlp {
                assert_eq!(rest_of_small, 0, "the MLP's layers are all sized");
            }
        }
    }
}
