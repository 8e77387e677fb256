//! A [`Trainer`] saved after an epoch and restored so that the run goes on exactly as
//! if it had never stopped.
//!
//! Everything that decides the next epoch is saved: the networks' tensors (batch-norm
//! statistics included), Adam's moments and step counts, the selector's cumulative
//! noise-risk L_t and current k-set, the batch-order generator's state, the epoch, the
//! running total of selection risk, F-correction's estimated transition matrix, an f16
//! run's loss scale and the history of finished epochs (which the summary and the plot
//! are made from). What is not saved is rebuilt from the run's settings the same way
//! every time: the noisy labels (drawn from the seed) and the datasets. The FPL
//! perturbation is keyed by (seed, epoch, index) and needs no state at all.
//!
//! Restoring checks every part against the run being resumed and fails with the file's
//! name on the first mismatch: a checkpoint of another run, another network or another
//! version of taks is never half loaded.

use std::path::Path;

use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};
use taks_formats::FormatError;
use taks_formats::checkpoint::{Checkpoint, Tensor as Saved};

use super::{LossScale, Preparation, Trainer};
use crate::metrics::EpochMetrics;
use crate::optim::Moments;
use crate::params::{float_tensors, replace_float_tensors};
use crate::read_back::read_floats;
use crate::rng::SplitMix64;
use crate::settings::TrainConfig;
use crate::{Error, Result};

/// The checkpoint's JSON state: everything that is not a tensor.
#[derive(Serialize, Deserialize)]
struct State {
    config: TrainConfig,
    train_samples: usize,
    /// Epochs finished.
    epoch: usize,
    /// The batch-order generator (SplitMix64) state.
    batch_order: u64,
    total_selection_risk: f64,
    /// F-correction's first stage, without its transition matrix (a tensor).
    preparation: Option<Preparation>,
    /// Adam's step count per float tensor, `None` where it has no moments.
    adam_steps: Vec<Option<usize>>,
    history: Vec<EpochMetrics>,
    /// An f16 run's loss scale; absent in the other precisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    loss_scale: Option<LossScale>,
}

const CUMULATIVE: &str = "selector.cumulative_risk";
const CURRENT: &str = "selector.current_set";
const TRANSITION: &str = "f_correction.transition";

fn network_name(name: &str) -> String {
    format!("networks.{name}")
}

fn moment_names(i: usize) -> (String, String) {
    (format!("adam.{i}.first"), format!("adam.{i}.second"))
}

/// Check that `checkpoint` (read from `path`) is a run state of a run with `config`,
/// and return the number of epochs it has finished. What [`Trainer::restore`] checks
/// first; callable before a device is chosen.
pub fn check(checkpoint: &Checkpoint, config: &TrainConfig, path: &Path) -> Result<usize> {
    Ok(state_of(checkpoint, config, path)?.epoch)
}

fn state_of(checkpoint: &Checkpoint, config: &TrainConfig, path: &Path) -> Result<State> {
    let bad = |reason: String| Error::Format(FormatError::malformed(path, reason));
    let state = State::deserialize(&checkpoint.state).map_err(|e| {
        bad(format!(
            "the checkpoint's state is not a taks run state: {e}"
        ))
    })?;
    if state.config != *config {
        return Err(bad(
            "the checkpoint belongs to a run with other settings than this one".into(),
        ));
    }
    if state.epoch > config.epochs {
        return Err(bad(format!(
            "the checkpoint is at epoch {} of a {}-epoch run",
            state.epoch, config.epochs
        )));
    }
    let numbered = state
        .history
        .iter()
        .enumerate()
        .all(|(i, m)| m.epoch == i + 1);
    if state.history.len() != state.epoch || !numbered {
        return Err(bad(format!(
            "the checkpoint's history does not hold epochs 1..={}",
            state.epoch
        )));
    }
    Ok(state)
}

impl Trainer {
    /// Everything needed to continue this run after its last finished epoch, with the
    /// `history` of those epochs.
    pub async fn checkpoint(&self, history: &[EpochMetrics]) -> Result<Checkpoint> {
        let mut tensors = std::collections::BTreeMap::new();
        let networks = self.networks.as_ref().expect("networks present");
        for t in float_tensors(networks) {
            let values = read_floats(t.values, "the network weights").await?;
            tensors.insert(network_name(&t.name), Saved::f32(t.dims, values));
        }
        // Steps skipped on the device do not count for Adam.
        let (loss_scale, skipped) = match &self.loss_scale {
            Some(scaler) => {
                let (scale, skipped) = scaler.read().await?;
                (Some(scale), skipped)
            }
            None => (None, 0),
        };
        let mut adam_steps = Vec::new();
        for (i, m) in self.adam.moments().iter().enumerate() {
            let time = self.adam.time_without(i, skipped);
            adam_steps.push(time);
            if let (Some(m), Some(_)) = (m, time) {
                let (first, second) = moment_names(i);
                let a = read_floats(m.first.clone(), "Adam's moments").await?;
                let b = read_floats(m.second.clone(), "Adam's moments").await?;
                tensors.insert(first, Saved::f32(vec![a.len()], a));
                tensors.insert(second, Saved::f32(vec![b.len()], b));
            }
        }
        if let Some(selector) = self.selector() {
            let cumulative = selector.cumulative_risk_host().await?;
            let current = selector.current_indices_host().await?;
            tensors.insert(
                CUMULATIVE.into(),
                Saved::f32(vec![cumulative.len()], cumulative),
            );
            tensors.insert(CURRENT.into(), Saved::u32(vec![current.len()], current));
        }
        let preparation = self.preparation.clone().map(|mut p| {
            let transition = std::mem::take(&mut p.transition);
            let shape = vec![self.classes, self.classes];
            tensors.insert(TRANSITION.into(), Saved::f32(shape, transition));
            p
        });
        let state = State {
            config: self.config.clone(),
            train_samples: self.train.len,
            epoch: self.epoch,
            batch_order: self.shuffle.state(),
            total_selection_risk: self.total_selection_risk,
            preparation,
            adam_steps,
            history: history.to_vec(),
            loss_scale,
        };
        let state = serde_json::to_value(&state)
            .map_err(|e| Error::Config(format!("cannot serialise the run state: {e}")))?;
        Ok(Checkpoint { state, tensors })
    }

    /// Continue from `checkpoint` (read from `path`, named in errors). The trainer must
    /// be freshly built from the same settings and data. Returns the history of the
    /// epochs already finished.
    pub fn restore(
        &mut self,
        mut checkpoint: Checkpoint,
        path: &Path,
    ) -> Result<Vec<EpochMetrics>> {
        let bad = |reason: String| Error::Format(FormatError::malformed(path, reason));
        let state = state_of(&checkpoint, &self.config, path)?;
        checkpoint.state = serde_json::Value::Null;
        let n = self.train.len;
        if state.train_samples != n {
            return Err(bad(format!(
                "the checkpoint was written for {} training samples, this run has {n}",
                state.train_samples
            )));
        }

        // Networks: every tensor by name and shape.
        let networks = self.networks.take().expect("networks present");
        let found = float_tensors(&networks);
        let mut values = Vec::with_capacity(found.len());
        for t in &found {
            let v = checkpoint.take_f32(&network_name(&t.name), &t.dims, path)?;
            let len = v.len();
            values.push(Tensor::<1>::from_data(
                TensorData::new(v, [len]),
                &self.device,
            ));
        }
        self.networks = Some(replace_float_tensors(networks, values));

        // Adam, position by position.
        let numels: Vec<usize> = found.iter().map(|t| t.dims.iter().product()).collect();
        if state.adam_steps.len() > numels.len() {
            return Err(bad(format!(
                "optimiser state for {} tensors, but the networks have {}",
                state.adam_steps.len(),
                numels.len()
            )));
        }
        let mut moments = Vec::with_capacity(state.adam_steps.len());
        for (i, steps) in state.adam_steps.iter().enumerate() {
            let Some(time) = *steps else {
                moments.push(None);
                continue;
            };
            let (first, second) = moment_names(i);
            let shape = [numels[i]];
            let tensor =
                |v: Vec<f32>| Tensor::<1>::from_data(TensorData::new(v, shape), &self.device);
            moments.push(Some(Moments {
                first: tensor(checkpoint.take_f32(&first, &shape, path)?),
                second: tensor(checkpoint.take_f32(&second, &shape, path)?),
                time,
            }));
        }
        self.adam
            .restore(moments, &numels)
            .map_err(|e| bad(e.to_string()))?;

        // The selector's L_t and k-set.
        let rule = self.rule.as_mut().expect("the rule is home between epochs");
        if let Some(selector) = rule.selector_mut() {
            let k = self.k;
            let cumulative = checkpoint.take_f32(CUMULATIVE, &[n], path)?;
            let current = checkpoint.take_u32(CURRENT, &[k], path)?;
            let ascending = current.windows(2).all(|w| w[0] < w[1]);
            if !ascending || current.last().is_some_and(|&i| i as usize >= n) {
                return Err(bad(format!(
                    "the saved k-set is not {k} distinct ascending indices below {n}"
                )));
            }
            selector.restore(cumulative, current);
        }

        // F-correction's first stage, once it has run.
        match state.preparation {
            Some(mut preparation) => {
                if self.stage_one.is_none() {
                    return Err(bad(
                        "the checkpoint has an F-correction first stage but this run's method has none".into(),
                    ));
                }
                let c = self.classes;
                preparation.transition = checkpoint.take_f32(TRANSITION, &[c, c], path)?;
                rule.restore_first_stage(&preparation.transition)
                    .map_err(|e| bad(e.to_string()))?;
                self.stage_one = None;
                self.preparation = Some(preparation);
            }
            None if self.stage_one.is_some() && state.epoch > 0 => {
                return Err(bad("the checkpoint lacks F-correction's first stage".into()));
            }
            None => {}
        }
        if let Some(name) = checkpoint.tensors.keys().next() {
            return Err(bad(format!(
                "unexpected tensor {name}: the checkpoint is not of this run"
            )));
        }
        let precision = self.config.precision.name();
        match (self.loss_scale.is_some(), state.loss_scale.is_some()) {
            (true, false) => {
                return Err(bad(format!(
                    "the checkpoint lacks the loss scale a {precision} run keeps"
                )));
            }
            (false, true) => {
                return Err(bad(format!(
                    "the checkpoint has a loss scale, which a {precision} run does not keep"
                )));
            }
            _ => {}
        }
        self.loss_scale = state
            .loss_scale
            .map(|scale| super::loss_scale::DeviceLossScale::new(scale, &self.device));
        self.shuffle = SplitMix64::new(state.batch_order);
        self.total_selection_risk = state.total_selection_risk;
        self.epoch = state.epoch;
        Ok(state.history)
    }
}
