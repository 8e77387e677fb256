//! Sample selection: which k samples the next epoch trains on.
//!
//! The cycle of Algorithm 1: after an epoch's training, the scoring pass gives logits
//! for all n samples; from them we measure each sample's noise-risk theta_t, accumulate
//! L_t = sum theta, and choose the next k-set by an [`Objective`]: the k smallest of
//! L_t + eta r_t (Follow-the-Perturbed-Leader; eta = 0 is Follow-the-Leader) or of the
//! latest theta_t alone. Which method uses which objective is the methods' business
//! (`crate::methods::taks`); this layer knows no method.
//!
//! The [`Selector`] owns that state. Its arithmetic runs on one of two engines with the
//! same semantics: the plain CPU [`cpu_reference`] (`cpu_engine`), or the WGSL kernels
//! ([`noise_risk_objective`], [`select_k_smallest`]; `gpu_engine`)
//! where the device is a wgpu GPU. The training loop only sees the [`Selector`].

mod cpu_engine;
pub mod cpu_reference;
mod gpu_engine;
mod gpu_noise_risk;
mod gpu_select;
pub mod online;
pub mod trail;

pub use gpu_noise_risk::{RiskMode, RiskOutput, RiskParams, noise_risk_objective};
pub use gpu_select::{Selection, select_k_smallest};

use burn::tensor::{Device, Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::noise::NoisyLabels;
use crate::read_back::read_floats;
use crate::rng::SplitMix64;
use crate::{Error, Result};

/// What the selector reports after scoring an epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// This epoch's: d_t . theta_t for the set that was trained on.
    pub selection_risk: f64,
    /// Over epochs 1..t: the risk of the best fixed k-set in hindsight, the k smallest
    /// entries of L_t (the counterpart of the trainer's `total_selection_risk`).
    pub total_hindsight_risk: f64,
    /// sum_i theta_i over all n samples (NaN or infinite when any risk is).
    pub risk_sum: f64,
}

/// Which implementation does the arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// Plain Rust on the host ([`cpu_reference`]).
    Reference,
    /// The WGSL kernels in `shaders/`, on the wgpu device.
    Wgsl,
}

/// What ranks the samples when choosing the next k-set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Objective {
    /// theta_t alone: the paper's Greedy ablation.
    Greedy,
    /// L_t + eta r_t, r ~ N(0, 1) fresh each epoch: TAkS (eta = 0 is the Naive ablation).
    Perturbed { eta: f64 },
}

/// The fixed parameters of a selection.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    pub objective: Objective,
    pub k: usize,
    pub seed: u32,
}

/// One per run: the WGSL engine's tensors inline cost nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum State {
    Cpu(cpu_engine::CpuEngine),
    Gpu(gpu_engine::GpuEngine),
}

/// The selection state of one run.
pub struct Selector {
    params: Params,
    state: State,
    /// The current k-set as device indices, for gathering batches.
    current_device: Tensor<1, Int>,
    device: Device,
}

impl Selector {
    /// Start with k indices drawn uniformly at random. On a wgpu device the WGSL engine is
    /// used unless `engine` asks for the reference.
    pub fn new(
        objective: Objective,
        k: usize,
        seed: u64,
        labels: &NoisyLabels,
        device: &Device,
        engine: Engine,
    ) -> Result<Self> {
        let n = labels.noisy_labels.len();
        check(objective, n, k)?;
        let first = first_k_set(n, k, seed);
        let current_device = indices_tensor(&first, device);
        let wgsl = match engine {
            Engine::Wgsl => {
                let mask = cpu_reference::mask_of(&first, n);
                let mask = Tensor::from_data(TensorData::new(mask, [n]), device);
                gpu_engine::GpuEngine::new(labels, mask)
            }
            Engine::Reference => None,
        };
        let state = match wgsl {
            Some(engine) => State::Gpu(engine),
            None => State::Cpu(cpu_engine::CpuEngine::new(labels, first)),
        };
        Ok(Self {
            params: Params {
                objective,
                k,
                seed: seed as u32,
            },
            state,
            current_device,
            device: device.clone(),
        })
    }

    /// The engine actually in use (the WGSL one falls back to the reference off wgpu).
    pub fn engine(&self) -> Engine {
        match self.state {
            State::Cpu(_) => Engine::Reference,
            State::Gpu(_) => Engine::Wgsl,
        }
    }

    /// What ranks the samples (TAkS's eta, or the latest risk alone).
    pub fn objective(&self) -> Objective {
        self.params.objective
    }

    /// The values the set chosen after epoch `epoch` (1-based) was the k smallest of:
    /// L_t + eta r_t from the cumulative risk L_t, or the latest risk theta_t. On the
    /// host, with the draws the engines use, for showing why a sample was (not) chosen.
    pub fn ranked_values(&self, cumulative: &[f32], latest: &[f32], epoch: usize) -> Vec<f32> {
        match self.params.objective {
            Objective::Greedy => latest.to_vec(),
            Objective::Perturbed { eta } => {
                cpu_reference::fpl_objective(cumulative, eta as f32, self.params.seed, epoch as u32)
            }
        }
    }

    /// The size k of every selected set.
    pub fn k(&self) -> usize {
        self.params.k
    }

    /// Size of the set the next epoch trains on.
    pub fn selected_len(&self) -> usize {
        self.current_device.dims()[0]
    }

    /// The current set as a device tensor of indices, for gathering batches.
    pub fn current_indices(&self) -> Tensor<1, Int> {
        self.current_device.clone()
    }

    /// The current set, ascending (reads the device on the WGSL engine).
    pub async fn current_indices_host(&self) -> Result<Vec<u32>> {
        match &self.state {
            State::Cpu(h) => Ok(h.current.clone()),
            State::Gpu(w) => w.current_host().await,
        }
    }

    /// L_t for every sample (reads the device on the WGSL engine).
    pub async fn cumulative_risk_host(&self) -> Result<Vec<f32>> {
        match &self.state {
            State::Cpu(h) => Ok(h.cumulative.clone()),
            State::Gpu(w) => read_floats(w.cumulative.clone(), "cumulative risk").await,
        }
    }

    /// Put saved state back: L_t for every sample and the current k-set, ascending.
    /// The caller has checked both against this run (n values, k distinct indices < n).
    pub fn restore(&mut self, cumulative: Vec<f32>, current: Vec<u32>) {
        let n = cumulative.len();
        self.current_device = indices_tensor(&current, &self.device);
        match &mut self.state {
            State::Cpu(h) => {
                h.cumulative = cumulative;
                h.current = current;
            }
            State::Gpu(w) => {
                w.cumulative = Tensor::from_data(TensorData::new(cumulative, [n]), &self.device);
                let mask = cpu_reference::mask_of(&current, n);
                w.mask = Tensor::from_data(TensorData::new(mask, [n]), &self.device);
            }
        }
    }

    /// Score epoch `epoch` (1-based) from the logits `[n, C]` of the whole training set,
    /// then choose the next k-set.
    pub async fn update(&mut self, logits: Tensor<2>, epoch: usize) -> Result<Update> {
        let [n, classes] = logits.dims();
        let update = match &mut self.state {
            State::Cpu(host) => {
                assert_eq!(
                    n,
                    host.cumulative.len(),
                    "scoring must cover every training sample"
                );
                let logits = read_floats(logits, "logits").await?;
                let (update, next) = host.update(&logits, classes, &self.params, epoch as u32)?;
                self.current_device = indices_tensor(&next, &self.device);
                update
            }
            State::Gpu(engine) => {
                let (update, next) = engine.update(logits, &self.params, epoch as u32).await?;
                self.current_device = next;
                update
            }
        };
        if !update.risk_sum.is_finite() {
            return Err(Error::Diverged {
                epoch,
                what: "the noise-risk".into(),
            });
        }
        Ok(update)
    }
}

/// Refuse a selection of `k` of `n` samples that cannot be made: k > n, or a perturbation
/// scale that is negative or not a number.
fn check(objective: Objective, n: usize, k: usize) -> Result<()> {
    if k > n {
        return Err(Error::Config(format!(
            "k = {k} exceeds the {n} training samples"
        )));
    }
    if let Objective::Perturbed { eta } = objective
        && (!eta.is_finite() || eta < 0.0)
    {
        return Err(Error::Config(format!(
            "eta = {eta} must be a finite number >= 0"
        )));
    }
    Ok(())
}

/// The k-set of the first epoch, ascending: k of the n indices drawn uniformly at
/// random from `seed` (before any risk is known).
fn first_k_set(n: usize, k: usize, seed: u64) -> Vec<u32> {
    let mut first = SplitMix64::for_stream(seed, "initial-k-set").sample_indices(n, k);
    first.sort_unstable();
    first
}

/// The indices of the `k` smallest `values` `[n]`, ascending (ties by index, NaN
/// largest): by the WGSL radix select where `values` live on wgpu
/// ([`gpu_select::select_k_smallest`]), else on the host
/// ([`cpu_reference::k_smallest`]); the one entry point for a k-set of n samples (a
/// batch's small-loss mask is [`crate::methods::small_loss::smallest`]).
pub async fn k_smallest_indices(values: Tensor<1>, k: usize) -> Result<Tensor<1, Int>> {
    if let Some(selection) = select_k_smallest(&values, k) {
        return Ok(selection.indices);
    }
    let device = values.device();
    let host = read_floats(values, "the values to select from").await?;
    Ok(indices_tensor(
        &cpu_reference::k_smallest(&host, k),
        &device,
    ))
}

/// Upload indices as a device Int tensor.
pub fn indices_tensor(indices: &[u32], device: &Device) -> Tensor<1, Int> {
    let values: Vec<i32> = indices.iter().map(|&i| i as i32).collect();
    Tensor::from_data(TensorData::new(values, [indices.len()]), device)
}
