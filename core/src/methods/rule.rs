//! What a method does in a run: the [`Rule`] the training loop calls, and the inputs a
//! rule is built from.
//!
//! A method differs from the others in these places only, each one hook of the trait,
//! so the training loop ([`crate::train`]) never branches on the method:
//! - which samples an epoch trains on ([`EpochSet`]): all of them, a k-set the rule's
//!   [`Selector`] chose after the previous epoch's scoring pass (TAkS and its
//!   ablations), or ITLM's smallest-loss set chosen by a scoring pass at the epoch's start;
//! - what one batch minimises ([`Rule::batch`]), given the logits of each network the
//!   method trains (two for Decouple, Co-teaching, Co-teaching+ and JoCoR);
//! - an optional first stage before epoch 1 ([`Rule::first_stage`]: F-correction trains
//!   Standard on a noisy hold-out and fits its transition matrix to that network);
//! - the state it carries between epochs, which the checkpoint saves: the selector's
//!   cumulative risk and k-set ([`Rule::selector`]) and the first stage's fit.
//!
//! [`Rule::is_mean_cross_entropy`] is not a difference in the method but a promise about
//! its loss, which lets the loop take a faster route to the same gradients (the MLP's
//! hand-written step, host loops on the CPU and matmuls and three kernels on wgpu,
//! without an autodiff graph: `crate::ops::mlp_step`).

use burn::tensor::{Device, Int, Tensor};

use crate::Result;
use crate::data::DatasetKind;
use crate::noise::NoisyLabels;
use crate::selection::{Engine, Selector};

/// What a rule is built from: the run's settings that methods read, resolved for this
/// training set.
pub struct RuleInputs<'a> {
    /// Training samples.
    pub n: usize,
    pub classes: usize,
    /// Samples an epoch trains on ([`super::EpochSize`] applied to n).
    pub k: usize,
    /// eta of Algorithm 1 (TAkS).
    pub eta: f64,
    pub seed: u64,
    pub forget_rate: f64,
    pub co_lambda: f64,
    pub init_epoch: usize,
    /// The dataset the run names (F-correction's estimate keeps its outlier filter off
    /// CIFAR-100, as the authors' code does).
    pub dataset: DatasetKind,
    pub labels: &'a NoisyLabels,
    pub device: &'a Device,
    /// Where a selector does its arithmetic.
    pub engine: Engine,
}

/// Which samples an epoch trains on. One is made per epoch and consumed at once, so a
/// tensor held inline costs nothing worth a box.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum EpochSet {
    /// All n, shuffled.
    All,
    /// These indices (the selector's current k-set).
    Given(Tensor<1, Int>),
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
    /// Per network, an f32 `[B]` mask of the samples it selected, the set its label
    /// precision is measured on: for most rules those whose loss updated it; for
    /// Co-teaching and Co-teaching+ its small-loss picks, which updated the other network
    /// (as the authors count it). `None` when every sample of the batch updated every
    /// network.
    pub picked: Option<Vec<Tensor<1>>>,
    /// f32 `[1]`, 0.0 when this batch must leave weights and optimiser state untouched
    /// (Decouple with no disagreement). Decided on the device, so it costs no read.
    pub apply: Option<Tensor<1>>,
}

/// A stage the loop runs before the first epoch: train Standard for the run's epochs on
/// the noisy training set less a random `holdout` share, keep the epoch whose network
/// is most accurate on that share (noisy labels), and hand that network's softmax over
/// the whole training set to [`Rule::fit_first_stage`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FirstStage {
    pub holdout: f64,
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
    /// gradients without an autodiff graph where it can (the MLP's hand-written step, on
    /// the CPU and on wgpu).
    fn is_mean_cross_entropy(&self) -> bool {
        false
    }

    /// The FPL selector whose k-set the epochs train on, for the methods that have one:
    /// after each epoch the loop scores all n samples and hands it the logits.
    fn selector(&self) -> Option<&Selector> {
        None
    }

    fn selector_mut(&mut self) -> Option<&mut Selector> {
        None
    }

    /// The stage to run before the first epoch, while it has not run.
    fn first_stage(&self) -> Option<FirstStage> {
        None
    }

    /// Fit the rule to the first stage's softmax `[n * classes]` over the training set;
    /// returns what was fitted (F-correction's transition matrix, row-major), which the
    /// checkpoint keeps and [`Rule::restore_first_stage`] puts back.
    fn fit_first_stage(&mut self, _probabilities: &[f32]) -> Result<Vec<f32>> {
        Err(crate::Error::Config(
            "this method has no first stage".into(),
        ))
    }

    /// Put back what [`Rule::fit_first_stage`] returned in an earlier process.
    fn restore_first_stage(&mut self, _fitted: &[f32]) -> Result<()> {
        Err(crate::Error::Config(
            "this method has no first stage".into(),
        ))
    }
}
