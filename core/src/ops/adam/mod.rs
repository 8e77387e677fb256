//! Adam's update of one parameter, in place: on flex one host pass ([`cpu`]), on a wgpu
//! device one kernel per parameter or one kernel for every parameter of a step
//! ([`gpu`]). The optimiser that keeps the moments and decides which runs is
//! [`crate::optim::Adam`].

pub(crate) mod cpu;
pub mod gpu;
