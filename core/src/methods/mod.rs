//! The training methods: TAkS with its two ablations ([`taks`]) and the baselines the
//! paper compares it with, one file each, each a row of the one table of methods
//! ([`registry`]) and a [`Rule`] that owns its whole life in a run ([`rule`]).
//!
//! Every rule follows the authors' code (github.com/songheony/TAkS, as each file says
//! where it matters), not only the paper's prose. Inside a batch the
//! small-loss choices stay on the device ([`small_loss`]): no per-batch read-back, so the
//! same code runs on flex, on a native GPU and on WebGPU.
//!
//! This layer knows selection (TAkS's rule owns its selector) but neither the run's
//! configuration nor the training loop: a rule is built from [`RuleInputs`], and the
//! loop calls only the [`Rule`] trait.

mod co_teaching;
mod co_teaching_plus;
mod decouple;
pub mod f_correction;
mod itlm;
mod jocor;
pub mod registry;
pub mod rule;
pub mod small_loss;
mod standard;
pub mod taks;

pub use registry::{EpochSize, Method, MethodSpec, REGISTRY, Setting};
pub use rule::{Batch, BatchAt, EpochSet, FirstStage, Rule, RuleInputs};

/// How many of `n` samples an epoch of `method` trains on, for k_ratio and tau.
pub fn epoch_size(method: Method, n: usize, k_ratio: f64, forget_rate: f64) -> usize {
    match method.spec().epoch_size {
        EpochSize::All => n,
        EpochSize::KRatio => (n as f64 * k_ratio).floor() as usize,
        EpochSize::Unforgotten => itlm::keep(n, forget_rate),
    }
}

/// The forget rate of 1-based `epoch`: the authors' `r = [tau] * 201; r[:10] =
/// linspace(0, tau, 10)`, indexed by the epoch, so it rises linearly to tau at epoch 9.
pub fn forget_rate(tau: f64, epoch: usize) -> f64 {
    tau * epoch.min(9) as f64 / 9.0
}

/// Samples of `batch` kept (remembered, the authors' name) at forget rate `r`:
/// `int((1 - r) * batch)`, or the whole batch when that is 0 (as the authors'
/// Co-teaching does).
pub fn num_remember(batch: usize, r: f64) -> usize {
    match ((1.0 - r) * batch as f64) as usize {
        0 => batch,
        kept => kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forget_rate_follows_the_linspace_schedule() {
        // linspace(0, 0.5, 10)[e] for e = 1..9, then 0.5.
        assert_eq!(forget_rate(0.5, 1), 0.5 / 9.0);
        assert!((forget_rate(0.5, 8) - 0.5 * 8.0 / 9.0).abs() < 1e-15);
        assert_eq!(forget_rate(0.5, 9), 0.5);
        assert_eq!(forget_rate(0.5, 200), 0.5);
    }

    #[test]
    fn num_remember_truncates_and_never_keeps_nothing() {
        assert_eq!(num_remember(128, 0.5), 64);
        assert_eq!(num_remember(128, 0.2), 102); // int(102.4)
        assert_eq!(num_remember(1, 0.8), 1); // int(0.2) = 0 -> the whole batch
        assert_eq!(num_remember(100, 0.0), 100);
    }
}
