//! The settings of one run, as plain data, validated: what every run starts from.
//!
//! Saved as `config.json` beside every run's metrics, so a result always says how it
//! was produced. Each setting's default is the paper's ([`super::paper`]).

use serde::{Deserialize, Serialize};

use crate::data::DatasetKind;
use crate::methods::{self, Method, Setting};
use crate::nn::Architecture;
use crate::noise::NoiseKind;
use crate::precision::Precision;
use crate::selection::Engine;
use crate::{Error, Result};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    pub dataset: DatasetKind,
    pub noise: NoiseKind,
    /// The rate of the noise recipe (see [`crate::noise`]).
    pub noise_rate: f64,
    pub method: Method,
    /// k = floor(n * k_ratio).
    pub k_ratio: f64,
    /// eta = sqrt(k * epochs) * eta_ratio.
    pub eta_ratio: f64,
    pub epochs: usize,
    pub seed: u64,
    pub batch_size: usize,
    pub learning_rate: f64,
    /// 0-based epoch from which the learning rate decays and beta1 drops to 0.1.
    pub decay_start: usize,
    pub architecture: Architecture,
    /// Use only the first this-many training samples (quick runs, tests).
    pub train_limit: Option<usize>,
    /// Use only the first this-many test samples.
    pub test_limit: Option<usize>,
    /// Samples per forward pass when scoring and testing (no gradients, so larger).
    pub eval_batch_size: usize,
    /// `wgsl`: the WGSL kernels score and select on a wgpu device (the reference is used
    /// on other devices); `reference`: always the CPU reference. Absent from run
    /// folders written before it existed, which used the reference.
    #[serde(default = "reference_engine")]
    pub selection_engine: Engine,
    /// tau, the forget rate of Co-teaching, Co-teaching+, JoCoR and ITLM: the share of
    /// each batch (of the training set, for ITLM) left out once the schedule reaches it.
    #[serde(default)]
    pub forget_rate: f64,
    /// JoCoR's lambda, the weight of the co-regularisation (KL) term.
    #[serde(default)]
    pub co_lambda: f64,
    /// Co-teaching+'s first epoch (1-based) of disagreement-based exchange; before it,
    /// plain Co-teaching.
    #[serde(default)]
    pub init_epoch: usize,
    /// For a folder dataset: the input [channels, height, width] its images are decoded
    /// to, chosen from the training images when the run starts ([`crate::data::folder`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder_input: Option<[usize; 3]>,
    /// The pretrained weights the ResNet started from (`taks train --init`), as a path;
    /// the folder's images are then prepared as those weights expect
    /// ([`crate::nn::pretrained::PREPROCESSING`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<String>,
    /// A step schedule instead of the linear decay: (first epoch, learning rate) in order,
    /// as the paper's Clothing1M run (8e-4, 5e-4, 5e-5, five epochs each), which
    /// `taks train --init` uses unless --lr or --decay-start is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr_steps: Option<Vec<(usize, f64)>>,
    /// The arithmetic of a training step ([`crate::precision`]): f32 unless asked
    /// (`--precision`), and then absent from `config.json` as before it existed.
    #[serde(default, skip_serializing_if = "Precision::is_f32")]
    pub precision: Precision,
}

impl TrainConfig {
    /// [`TrainConfig::k`] for a training set of `n`, as an error when it selects
    /// nothing (checked before any work starts).
    pub fn checked_k(&self, n: usize) -> Result<usize> {
        match self.k(n) {
            0 => Err(Error::Config(format!(
                "k-ratio {} of {n} samples selects nothing",
                self.k_ratio
            ))),
            k => Ok(k),
        }
    }

    /// How many of n samples an epoch trains on (the method's [`methods::EpochSize`]):
    /// the paper's k = floor(n k_ratio) for TAkS and its ablations, int(n (1 - tau)) for
    /// ITLM, and all n for the methods that train on every sample (Standard, F-correction)
    /// or choose inside each batch (Co-teaching and the others), which have no k-set.
    pub fn k(&self, n: usize) -> usize {
        methods::epoch_size(self.method, n, self.k_ratio, self.forget_rate)
    }

    /// eta of Algorithm 1: sqrt(k T) * eta_ratio.
    pub fn eta(&self, n: usize) -> f64 {
        eta_of(self.k(n), self.epochs, self.eta_ratio)
    }

    /// Reject settings no run could use, with a message naming the setting.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        // First: the defaults of k, eta and tau are derived from the noise rate.
        if !(0.0..=1.0).contains(&self.noise_rate) {
            return bad(format!("noise rate {} must be in [0, 1]", self.noise_rate));
        }
        if !(self.k_ratio > 0.0 && self.k_ratio <= 1.0) {
            return bad(format!("k-ratio {} must be in (0, 1]", self.k_ratio));
        }
        if let Some(steps) = &self.lr_steps
            && (steps.is_empty()
                || steps.iter().any(|(_, lr)| !(*lr > 0.0 && lr.is_finite()))
                || steps.windows(2).any(|w| w[0].0 >= w[1].0))
        {
            return bad(format!(
                "learning-rate steps {steps:?} must be positive rates at increasing epochs"
            ));
        }
        if self.init.is_some()
            && (self.dataset != DatasetKind::Folder || !self.architecture.is_resnet())
        {
            return bad(
                "pretrained weights (--init) fine-tune a ResNet on a folder of images (--data DIR)"
                    .into(),
            );
        }
        if !(self.eta_ratio >= 0.0 && self.eta_ratio.is_finite()) {
            return bad(format!(
                "eta-ratio {} must be a finite number >= 0",
                self.eta_ratio
            ));
        }
        if self.method.reads(Setting::ForgetRate) && !(0.0..1.0).contains(&self.forget_rate) {
            return bad(format!(
                "forget rate {} must be in [0, 1)",
                self.forget_rate
            ));
        }
        if !(0.0..=1.0).contains(&self.co_lambda) {
            return bad(format!("co-lambda {} must be in [0, 1]", self.co_lambda));
        }
        if self.epochs == 0 {
            return bad("epochs must be at least 1".into());
        }
        if self.train_limit == Some(0) || self.test_limit == Some(0) {
            return bad("train and test limits must be at least 1".into());
        }
        if self.batch_size == 0 || self.eval_batch_size == 0 {
            return bad("batch sizes must be at least 1".into());
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return bad(format!(
                "learning rate {} must be positive",
                self.learning_rate
            ));
        }
        if self.dataset == DatasetKind::Folder && self.noise == NoiseKind::Asymmetric {
            return bad(
                "asymmetric noise has recipes for the paper's datasets only; a folder's labels are used as given (--noise clean), or with symmetric or pairflip noise on top".into(),
            );
        }
        if self.architecture == Architecture::Mlp
            && !self.dataset.is_grey_28()
            && self.dataset != DatasetKind::Folder
        {
            return bad(format!(
                "the MLP is for 28x28 images; use the CNN for {}",
                self.dataset.name()
            ));
        }
        Ok(())
    }
}

fn reference_engine() -> Engine {
    Engine::Reference
}

/// eta of Algorithm 1 from its ratio: sqrt(k T) * eta_ratio, for `epochs` = T (a run's,
/// or the epochs a Python training loop will run).
pub fn eta_of(k: usize, epochs: usize, eta_ratio: f64) -> f64 {
    (k as f64 * epochs as f64).sqrt() * eta_ratio
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_setting() {
        let mut c = TrainConfig::paper(DatasetKind::Mnist, NoiseKind::Symmetric, 0.5, Method::TAKS);
        c.k_ratio = 1.5;
        assert!(c.validate().unwrap_err().to_string().contains("k-ratio"));
        c.k_ratio = 0.3;
        c.epochs = 0;
        assert!(c.validate().unwrap_err().to_string().contains("epochs"));
        let mut c = TrainConfig::paper(
            DatasetKind::Cifar10,
            NoiseKind::Symmetric,
            0.5,
            Method::TAKS,
        );
        c.architecture = Architecture::Mlp;
        assert!(c.validate().is_err());
    }
}
