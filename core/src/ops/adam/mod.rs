//! Adam's update of one parameter, in place: on flex one host pass ([`cpu`]), on a wgpu
//! device one kernel per parameter or one kernel for every parameter of a step
//! ([`gpu`]). The optimiser that keeps the moments and decides which runs is
//! [`crate::optim::Adam`].

use burn::tensor::Tensor;

pub(crate) mod cpu;
pub mod gpu;

/// One parameter's Adam state, flattened to `[numel]`.
#[derive(Clone)]
pub struct Moments {
    pub first: Tensor<1>,
    pub second: Tensor<1>,
    /// Steps taken, for bias correction.
    pub time: usize,
}
