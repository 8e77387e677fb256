//! The operations the networks, the losses and the optimiser are built from, each in one
//! place with every variant it has: its formula on the CPU (flex), its launcher on a wgpu
//! device (the WGSL lives in the `shaders` crate, one file per kernel), its autodiff
//! wiring where it is part of a training step, and its tests.
//!
//! A network ([`crate::nn`]) says which layers it has and calls an op per layer; the op
//! runs taks's kernel where the execution plan says it applies ([`crate::plan::KERNELS`]:
//! the device, the type, the switches) and burn's composition elsewhere, so every op has
//! a fallback that is the plain tensor formula.
//!
//! | op | what | variants |
//! |---|---|---|
//! | [`conv`] | 2-D convolution | burn's, im2col + matmul, implicit GEMM, batch norm folded in (eval); the fastest measured per shape |
//! | [`batch_norm`] | batch norm (+ ReLU) of a training step | four kernels, or burn's |
//! | [`matmul`] | matrix product (with bias and ReLU) | taks's tiled f32 kernel, f16 on cooperative matrices ([`matmul::coop`], under `TAKS_GPU_COOP=1`), or burn's |
//! | [`residual`] | `relu(h + shortcut)` forward and backward | one kernel each way, or burn's |
//! | [`layer_kernels`] | bias + ReLU, softmax cross-entropy gradient, ReLU gradient | f32 and f16 kernels |
//! | [`mlp_step`] | the MLP's training step without a graph | host loops (flex), matmuls + three kernels (wgpu) |
//! | [`cross_entropy`] | each sample's cross-entropy | one kernel each way, or burn's |
//! | [`adam`] | Adam's update | in place on flex; one kernel per parameter or one for all (wgpu) |
//! | [`mixed_precision`] | a layer in f16 with f32 weights | casts where the weights are used |
//!
//! [`channels_last`] is the activation layout the kernels leave behind; [`flex_buffers`]
//! the host access the CPU variants share.

pub mod adam;
pub(crate) mod batch_norm;
pub(crate) mod channels_last;
pub mod conv;
pub mod cross_entropy;
pub(crate) mod flex_buffers;
pub(crate) mod layer_kernels;
pub mod matmul;
pub(crate) mod mixed_precision;
pub(crate) mod mlp_step;
pub(crate) mod residual;
