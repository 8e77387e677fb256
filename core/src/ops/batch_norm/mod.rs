//! Batch norm (and the ReLU after it) in a training step: four kernels of taks's own on a
//! wgpu device ([`kernels`]), wired into autodiff as one operation ([`train`]); burn's
//! batch norm elsewhere. Eval mode folds it into the convolution before it
//! ([`super::conv::folded`]).

pub(crate) mod kernels;
pub(crate) mod train;

pub(crate) use train::{forward, forward_shifted};
