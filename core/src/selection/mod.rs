//! Sample selection: which k samples the next epoch trains on.
//!
//! Every method follows the same cycle (Algorithm 1): after an epoch's training, the
//! scoring pass gives logits for all n samples; from them we measure each sample's
//! noise-risk theta_t, accumulate L_t = sum theta, and choose the next k-set by the
//! method's objective:
//! - `taks`: Follow-the-Perturbed-Leader, the k smallest of L_t + eta r_t;
//! - `naive`: Follow-the-Leader, the k smallest of L_t (eta = 0);
//! - `greedy`: the k smallest of the latest theta_t alone;
//! - `standard`: every sample, every epoch (the usual training baseline).
//!
//! The [`Selector`] owns that state. Its arithmetic runs on one of two engines with the
//! same semantics: the plain CPU [`reference`], or the WGSL kernels of [`crate::gpu`]
//! where the device is a wgpu GPU. The training loop only sees the [`Selector`].

pub mod reference;

use std::str::FromStr;

use burn::tensor::{Device, Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::noise::NoisyLabels;
use crate::rng::SplitMix64;
use crate::{Error, Result};

/// A selection rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    Taks,
    Greedy,
    Naive,
    Standard,
}

impl Method {
    pub const ALL: [Method; 4] = [Method::Taks, Method::Greedy, Method::Naive, Method::Standard];

    pub fn name(self) -> &'static str {
        match self {
            Method::Taks => "taks",
            Method::Greedy => "greedy",
            Method::Naive => "naive",
            Method::Standard => "standard",
        }
    }
}

impl FromStr for Method {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Method::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            Error::Config(format!("unknown method '{s}' (choose taks, greedy, naive or standard)"))
        })
    }
}

/// What the selector reports after scoring an epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// d_t . theta_t for the set that was trained on.
    pub selection_risk: f64,
    /// The risk of the best fixed k-set in hindsight: the k smallest entries of L_t.
    pub hindsight_risk: f64,
    /// How many of the trained-on samples carry their true label.
    pub selected_clean: usize,
    /// How many samples were trained on.
    pub selected: usize,
}

/// Which implementation does the arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// Plain Rust on the host ([`reference`]).
    Reference,
    /// The WGSL kernels in `shaders/`, on the wgpu device.
    Wgsl,
}

/// The selection state of one run.
pub struct Selector {
    method: Method,
    k: usize,
    eta: f32,
    seed: u32,
    noisy_labels: Vec<u32>,
    clean: Vec<bool>,
    /// L_t on the host (reference engine).
    cumulative: Vec<f32>,
    /// The current k-set: ascending indices on the host and on the device.
    current: Vec<u32>,
    current_device: Tensor<1, Int>,
    device: Device,
}

impl Selector {
    /// Start with k indices drawn uniformly at random (all n for `standard`).
    pub fn new(
        method: Method,
        k: usize,
        eta: f64,
        seed: u64,
        labels: &NoisyLabels,
        device: &Device,
    ) -> Result<Self> {
        let n = labels.noisy_labels.len();
        if k > n {
            return Err(Error::Config(format!("k = {k} exceeds the {n} training samples")));
        }
        if !eta.is_finite() || eta < 0.0 {
            return Err(Error::Config(format!("eta = {eta} must be a finite number >= 0")));
        }
        let current: Vec<u32> = if method == Method::Standard {
            (0..n as u32).collect()
        } else {
            let mut first = SplitMix64::for_stream(seed, "initial-k-set").sample_indices(n, k);
            first.sort_unstable();
            first
        };
        Ok(Self {
            method,
            k,
            eta: if method == Method::Taks { eta as f32 } else { 0.0 },
            seed: seed as u32,
            noisy_labels: labels.noisy_labels.clone(),
            clean: (0..n).map(|i| labels.is_clean(i)).collect(),
            cumulative: vec![0.0; n],
            current_device: indices_tensor(&current, device),
            current,
            device: device.clone(),
        })
    }

    pub fn method(&self) -> Method {
        self.method
    }

    pub fn engine(&self) -> Engine {
        Engine::Reference
    }

    /// Size of the set the next epoch trains on.
    pub fn selected_len(&self) -> usize {
        self.current.len()
    }

    /// The current set as a device tensor of indices, for gathering batches.
    pub fn current_indices(&self) -> Tensor<1, Int> {
        self.current_device.clone()
    }

    /// The current set, ascending.
    pub async fn current_indices_host(&self) -> Result<Vec<u32>> {
        Ok(self.current.clone())
    }

    /// L_t for every sample.
    pub async fn cumulative_risk_host(&self) -> Result<Vec<f32>> {
        Ok(self.cumulative.clone())
    }

    /// Score epoch `epoch` (1-based) from the logits `[n, C]` of the whole training set,
    /// then choose the next k-set.
    pub async fn update(&mut self, logits: Tensor<2>, epoch: usize) -> Result<Update> {
        let [n, classes] = logits.dims();
        assert_eq!(n, self.clean.len(), "scoring pass must cover every training sample");
        let data = logits
            .into_data_async()
            .await
            .map_err(|e| Error::Device(format!("reading logits: {e:?}")))?;
        let logits: Vec<f32> = data
            .try_into_vec()
            .map_err(|e| Error::Device(format!("logits are not f32: {e:?}")))?;
        let theta = reference::noise_risk(&logits, classes, &self.noisy_labels);
        if let Some(i) = theta.iter().position(|t| !t.is_finite()) {
            return Err(Error::Diverged { epoch, what: format!("the noise-risk of sample {i}") });
        }
        let selection_risk: f64 = self.current.iter().map(|&i| theta[i as usize] as f64).sum();
        let selected_clean = self.current.iter().filter(|&&i| self.clean[i as usize]).count();
        let selected = self.current.len();
        self.cumulative.iter_mut().zip(&theta).for_each(|(l, t)| *l += t);
        let hindsight: f64 = reference::k_smallest(&self.cumulative, self.k)
            .iter()
            .map(|&i| self.cumulative[i as usize] as f64)
            .sum();
        let next = match self.method {
            Method::Standard => None,
            Method::Greedy => Some(reference::k_smallest(&theta, self.k)),
            Method::Naive | Method::Taks => {
                let objective =
                    reference::fpl_objective(&self.cumulative, self.eta, self.seed, epoch as u32);
                Some(reference::k_smallest(&objective, self.k))
            }
        };
        if let Some(next) = next {
            self.current_device = indices_tensor(&next, &self.device);
            self.current = next;
        }
        Ok(Update { selection_risk, hindsight_risk: hindsight, selected_clean, selected })
    }
}

/// Upload indices as a device Int tensor.
pub fn indices_tensor(indices: &[u32], device: &Device) -> Tensor<1, Int> {
    let values: Vec<i32> = indices.iter().map(|&i| i as i32).collect();
    Tensor::from_data(TensorData::new(values, [indices.len()]), device)
}
