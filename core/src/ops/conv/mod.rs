//! A 2-D convolution, every way taks runs one: burn's kernel, im2col and a matmul
//! ([`im2col`]), the tiled matmul with its patches computed as it loads them
//! ([`implicit`]), each with its backward pass; eval mode's batch norm folded into it
//! ([`folded`]); which of them runs for a shape, measured once per process and kept
//! between processes ([`choice`], [`timings`]); and the autodiff operation a training
//! step records ([`train`]). What each pass should cost, for the per-op clock, is [`cost`]. [`geometry`] is where a kernel's taps fall, shared by all.

pub mod choice;
mod cost;
pub(crate) mod folded;
pub(crate) mod geometry;
pub(crate) mod im2col;
pub(crate) mod implicit;
pub mod timings;
pub(crate) mod train;

pub use choice::{Measured, measured_shapes};
pub(crate) use folded::FoldedConv;
pub(crate) use train::{forward, forward_leaving_bias};
