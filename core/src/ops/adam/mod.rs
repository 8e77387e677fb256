//! Adam's update of one parameter, in place: on flex one host pass ([`cpu`]), on a wgpu
//! device one kernel per parameter or one kernel for every parameter of a step
//! ([`gpu`], whose two shaders share `shaders/adam_common.wgsl`), elsewhere as tensor
//! operations ([`crate::optim::Adam`], the optimiser that keeps the moments and decides
//! which runs). All three multiply by the same [`Scalars`], computed here once a step,
//! and apply the formula in the same order, so they give the same bits.

use burn::tensor::Tensor;

pub(crate) mod cpu;
pub mod gpu;

/// The scalars of one parameter's Adam step at its step number `t` (1 for its first).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scalars {
    pub beta_1: f32,
    /// `1 - beta_1`, the gradient's share of the first moment.
    pub keep_1: f32,
    pub beta_2: f32,
    /// `1 - beta_2`.
    pub keep_2: f32,
    pub epsilon: f32,
    /// `1 - beta_2^t`, the second moment's bias correction.
    pub correction_2: f32,
    /// `lr / (1 - beta_1^t)`: the learning rate with the first moment's correction.
    pub step_size: f32,
}

impl Scalars {
    /// The scalars of step number `time` with learning rate `lr`.
    pub fn at(time: usize, lr: f32, beta_1: f32, beta_2: f32, epsilon: f32) -> Self {
        Scalars {
            beta_1,
            keep_1: 1.0 - beta_1,
            beta_2,
            keep_2: 1.0 - beta_2,
            epsilon,
            correction_2: 1.0 - beta_2.powi(time as i32),
            step_size: lr / (1.0 - beta_1.powi(time as i32)),
        }
    }
}

/// One parameter's Adam state, flattened to `[numel]`.
#[derive(Clone)]
pub struct Moments {
    pub first: Tensor<1>,
    pub second: Tensor<1>,
    /// Steps taken, for bias correction.
    pub time: usize,
}
