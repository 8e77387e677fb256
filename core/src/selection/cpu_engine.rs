//! The selection engine that runs the [`cpu_reference`] on the host: logits are read back
//! once per epoch and everything else is plain Rust. The path for the CPU backend, where
//! "host" and "device" memory are the same anyway.

use super::{Objective, Params, Update, cpu_reference};
use crate::Result;
use crate::noise::NoisyLabels;

pub(super) struct CpuEngine {
    pub(super) noisy_labels: Vec<u32>,
    /// L_t.
    pub(super) cumulative: Vec<f32>,
    /// The current k-set, ascending.
    pub(super) current: Vec<u32>,
}

impl CpuEngine {
    pub(super) fn new(labels: &NoisyLabels, first: Vec<u32>) -> Self {
        Self::of(
            labels.noisy_labels.clone(),
            labels.noisy_labels.len(),
            first,
        )
    }

    /// The engine over `n` samples labelled `noisy_labels` (none where only risks will
    /// be given), starting from the k-set `first`.
    pub(super) fn of(noisy_labels: Vec<u32>, n: usize, first: Vec<u32>) -> Self {
        CpuEngine {
            noisy_labels,
            cumulative: vec![0.0; n],
            current: first,
        }
    }

    /// Score one epoch from host logits `[n * classes]` and move to the next k-set.
    /// Returns the update and the next k-set (ascending).
    pub(super) fn update(
        &mut self,
        logits: &[f32],
        classes: usize,
        params: &Params,
        epoch: u32,
    ) -> Result<(Update, Vec<u32>)> {
        let theta = cpu_reference::noise_risk(logits, classes, &self.noisy_labels);
        self.update_from_risk(theta, params, epoch)
    }

    /// Take one epoch's noise-risk theta_t of every sample into L_t and move to the next
    /// k-set. Returns the update and the next k-set (ascending).
    pub(super) fn update_from_risk(
        &mut self,
        theta: Vec<f32>,
        params: &Params,
        epoch: u32,
    ) -> Result<(Update, Vec<u32>)> {
        let update = Update {
            selection_risk: self.current.iter().map(|&i| theta[i as usize] as f64).sum(),
            total_hindsight_risk: 0.0,
            risk_sum: theta.iter().map(|&t| t as f64).sum(),
        };
        self.cumulative
            .iter_mut()
            .zip(&theta)
            .for_each(|(l, t)| *l += t);
        let total_hindsight_risk = cpu_reference::k_smallest(&self.cumulative, params.k)
            .iter()
            .map(|&i| self.cumulative[i as usize] as f64)
            .sum();
        let next = match params.objective {
            Objective::Greedy => cpu_reference::k_smallest(&theta, params.k),
            Objective::Perturbed { eta } => {
                let objective =
                    cpu_reference::fpl_objective(&self.cumulative, eta as f32, params.seed, epoch);
                cpu_reference::k_smallest(&objective, params.k)
            }
        };
        self.current = next.clone();
        Ok((
            Update {
                total_hindsight_risk,
                ..update
            },
            next,
        ))
    }
}
