//! The MLP 784-256-10 of the paper's MNIST experiments: a hidden layer of 256 with ReLU,
//! then the classes. Its graph-free training step and CPU scoring pass are an op of their
//! own ([`crate::ops::mlp_step`]), which takes its two layers ([`Mlp::layers`]).

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use crate::ops::mixed_precision;
use crate::ops::mlp_step::Layers;

/// The hidden layer's width.
const HIDDEN: usize = 256;

/// MLP 784-256-10 of the paper's MNIST experiments.
#[derive(Module, Debug)]
pub struct Mlp {
    hidden: Linear,
    output: Linear,
}

impl Mlp {
    pub fn new(inputs: usize, classes: usize, device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(inputs, HIDDEN).init(device),
            output: LinearConfig::new(HIDDEN, classes).init(device),
        }
    }

    /// Its parameters for `inputs` and `classes`, without building it: both layers'
    /// sizes are set by them ([`super::Architecture::sized_parameters`]).
    pub(super) fn parameters(inputs: usize, classes: usize) -> u64 {
        let hidden = HIDDEN as u64;
        (inputs as u64 + 1).saturating_mul(hidden) + (hidden + 1).saturating_mul(classes as u64)
    }

    /// An MLP of the given layers, for tests that need its exact weights.
    #[cfg(test)]
    pub(crate) fn from_layers(hidden: Linear, output: Linear) -> Self {
        Self { hidden, output }
    }

    /// `[B, inputs]` -> `[B, classes]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let hidden = mixed_precision::linear(&self.hidden, x);
        mixed_precision::linear(&self.output, relu(hidden))
    }

    /// Its two layers, as the graph-free step and scoring pass take them.
    pub(crate) fn layers(&self) -> Layers<'_> {
        Layers {
            hidden: &self.hidden,
            output: &self.output,
        }
    }
}
