//! The training methods: TAkS, its two ablations, and the baselines the paper compares
//! it with, each one file behind the one small [`Rule`] trait.
//!
//! A method differs from the others in two places only, and the trait has one hook for
//! each, so the training loop ([`crate::train`]) never branches on the method:
//! - which samples an epoch trains on ([`EpochSet`]): all of them, TAkS's k-set chosen
//!   after the previous epoch's scoring pass, or ITLM's smallest-loss set chosen by a
//!   scoring pass at the start of the epoch;
//! - what one batch minimises ([`Rule::batch`]), given the logits of each network the
//!   method trains (two for Decouple, Co-teaching, Co-teaching+ and JoCoR).
//!
//! A third, optional hook ([`Rule::is_mean_cross_entropy`]) is not a difference in the
//! method but a promise about its loss, which lets the loop take a faster route to the
//! same gradients (the MLP on the CPU, without an autodiff graph).
//!
//! Every rule follows the authors' code (REFERENCE.md, "Baselines"). Inside a batch the
//! small-loss choices stay on the device ([`small_loss`]): no per-batch read-back, so the
//! same code runs on flex, on a native GPU and on WebGPU.

mod co_teaching;
mod co_teaching_plus;
mod decouple;
pub mod f_correction;
mod itlm;
mod jocor;
pub mod small_loss;
mod standard;

use std::str::FromStr;

use burn::tensor::{Device, Int, Tensor};
use serde::{Deserialize, Serialize};

use crate::config::TrainConfig;
use crate::{Error, Result};

/// A training method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Follow-the-Perturbed-Leader over the cumulative noise-risk (the paper's method).
    Taks,
    /// Ablation: the k smallest of the latest noise-risk alone.
    Greedy,
    /// Ablation: Follow-the-Leader, the k smallest cumulative noise-risk (eta = 0).
    Naive,
    /// Every sample, every epoch, plain cross-entropy.
    Standard,
    /// Forward loss correction with an estimated transition matrix (Patrini et al.).
    FCorrection,
    /// Two networks, each updated on the samples where their predictions disagree.
    Decouple,
    /// Two networks, each updated on the other's small-loss samples (Han et al.).
    CoTeaching,
    /// Co-teaching restricted to the samples the networks disagree on (Yu et al.).
    CoTeachingPlus,
    /// Two networks, one joint loss with co-regularisation, small-loss samples (Wei et al.).
    Jocor,
    /// Iterative trimmed loss: each epoch trains on the smallest-loss samples (Shen & Sanghavi).
    Itlm,
}

impl Method {
    pub const ALL: [Method; 10] = [
        Method::Standard,
        Method::FCorrection,
        Method::Decouple,
        Method::CoTeaching,
        Method::CoTeachingPlus,
        Method::Jocor,
        Method::Itlm,
        Method::Taks,
        Method::Greedy,
        Method::Naive,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Taks => "taks",
            Method::Greedy => "greedy",
            Method::Naive => "naive",
            Method::Standard => "standard",
            Method::FCorrection => "f-correction",
            Method::Decouple => "decouple",
            Method::CoTeaching => "co-teaching",
            Method::CoTeachingPlus => "co-teaching-plus",
            Method::Jocor => "jocor",
            Method::Itlm => "itlm",
        }
    }

    /// The name the paper's tables use.
    pub fn title(self) -> &'static str {
        match self {
            Method::Taks => "TAkS",
            Method::Greedy => "Greedy",
            Method::Naive => "Naive (FTL)",
            Method::Standard => "Standard",
            Method::FCorrection => "F-correction",
            Method::Decouple => "Decouple",
            Method::CoTeaching => "Co-teaching",
            Method::CoTeachingPlus => "Co-teaching+",
            Method::Jocor => "JoCoR",
            Method::Itlm => "ITLM",
        }
    }

    /// Whether the method chooses its k-set with the FPL selector (TAkS and ablations),
    /// and so has a noise-risk, a regret and Theorem 1's bound to report.
    pub fn uses_selector(self) -> bool {
        matches!(self, Method::Taks | Method::Greedy | Method::Naive)
    }

    /// Networks trained side by side.
    pub fn networks(self) -> usize {
        match self {
            Method::Decouple | Method::CoTeaching | Method::CoTeachingPlus | Method::Jocor => 2,
            _ => 1,
        }
    }
}

impl FromStr for Method {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
                Error::Config(format!(
                    "unknown method '{s}' (choose {})",
                    names.join(", ")
                ))
            })
    }
}

/// Which samples an epoch trains on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochSet {
    /// All n, shuffled.
    All,
    /// The FPL selector's k-set, updated after the epoch from a scoring pass of all n.
    Selector,
    /// ITLM: at the start of the epoch, score all n and keep the `keep` samples with the
    /// smallest cross-entropy under the current network.
    SmallestLoss { keep: usize },
}

/// Where in the run a batch falls.
#[derive(Debug, Clone, Copy)]
pub struct BatchAt {
    /// 1-based epoch.
    pub epoch: usize,
    /// 0-based batch index inside the epoch.
    pub batch: usize,
    /// The forget rate of this epoch (the co-training methods' schedule).
    pub forget_rate: f64,
}

/// What one batch gives the optimiser and the metrics.
pub struct Batch {
    /// The scalar `[1]` to minimise. For two networks it is the sum of each network's
    /// loss: their parameters are disjoint, so one backward pass gives each network the
    /// gradient of its own loss, exactly as two separate backward passes would.
    pub loss: Tensor<1>,
    /// Per network, an f32 `[B]` mask of the samples whose loss updated it (the set label
    /// precision is measured on); `None` when every sample of the batch did.
    pub picked: Option<Vec<Tensor<1>>>,
    /// f32 `[1]`, 0.0 when this batch must leave weights and optimiser state untouched
    /// (Decouple with no disagreement). Decided on the device, so it costs no read.
    pub apply: Option<Tensor<1>>,
}

/// One method's rule. See the module docs for why these hooks are all there is.
/// `Send + Sync` so that an epoch can run on the CPU backend's thread pool.
pub trait Rule: Send + Sync {
    /// How the epoch's training set is chosen.
    fn epoch_set(&self) -> EpochSet {
        EpochSet::All
    }

    /// The loss of one batch from each network's logits `[B, C]` and the noisy labels `[B]`.
    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, at: BatchAt) -> Batch;

    /// True when [`Rule::batch`] is the plain mean cross-entropy of the first network,
    /// every sample used and no gate: then the training loop may compute the step's
    /// gradients without an autodiff graph where it can (the MLP on the CPU).
    fn is_mean_cross_entropy(&self) -> bool {
        false
    }
}

/// The rule of `config.method`. F-correction needs its estimated transition matrix
/// (`classes x classes`, row-major), which [`f_correction::estimate`] provides.
pub fn rule(
    config: &TrainConfig,
    n: usize,
    classes: usize,
    transition: Option<&[f32]>,
    device: &Device,
) -> Result<Box<dyn Rule>> {
    Ok(match config.method {
        Method::Taks | Method::Greedy | Method::Naive => Box::new(standard::Standard {
            set: EpochSet::Selector,
        }),
        Method::Standard => Box::new(standard::Standard { set: EpochSet::All }),
        Method::Itlm => Box::new(itlm::Itlm {
            keep: itlm::keep(n, config.forget_rate),
        }),
        Method::FCorrection => {
            let transition = transition.ok_or_else(|| {
                Error::Config("f-correction needs its estimated transition matrix".into())
            })?;
            Box::new(f_correction::ForwardCorrection::new(
                transition, classes, device,
            ))
        }
        Method::Decouple => Box::new(decouple::Decouple),
        Method::CoTeaching => Box::new(co_teaching::CoTeaching),
        Method::CoTeachingPlus => Box::new(co_teaching_plus::CoTeachingPlus {
            init_epoch: config.init_epoch,
        }),
        Method::Jocor => Box::new(jocor::Jocor {
            lambda: config.co_lambda,
        }),
    })
}

/// The forget rate of 1-based `epoch`: the authors' `r = [tau] * 201; r[:10] =
/// linspace(0, tau, 10)`, indexed by the epoch, so it rises linearly to tau at epoch 9.
pub fn forget_rate(tau: f64, epoch: usize) -> f64 {
    tau * epoch.min(9) as f64 / 9.0
}

/// Samples kept out of `batch` at forget rate `r`: `int((1 - r) * batch)`, or the whole
/// batch when that is 0 (as the authors' Co-teaching does).
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

    #[test]
    fn names_round_trip() {
        for m in Method::ALL {
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
        }
        let err = "coteaching".parse::<Method>().unwrap_err().to_string();
        assert!(err.contains("co-teaching-plus"), "{err}");
    }
}
