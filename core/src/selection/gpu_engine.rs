//! The selection engine on a wgpu device: the WGSL kernels ([`super::gpu_noise_risk`],
//! [`super::gpu_select`]) compute
//! noise-risk, the objective and the next k-set where the logits already are, and the
//! per-sample risks never leave the GPU. Only three scalars come back per epoch (one
//! read): the selection's risk, the best fixed set's risk and the sum of all risks (to
//! catch NaN anywhere). Label precision is the training loop's, counted on the samples
//! each batch actually trained on.

use burn::tensor::{DType, Int, Tensor, TensorData};

use super::{Objective, Params, Update};
use super::{RiskMode, RiskParams, noise_risk_objective, select_k_smallest};
use crate::noise::NoisyLabels;
use crate::plan::{Kernel, Place};
use crate::read_back::read_floats;
use crate::{Error, Result};

pub(super) struct GpuEngine {
    labels: Tensor<1, Int>,
    /// L_t.
    pub(super) cumulative: Tensor<1>,
    /// k-hot mask of the current set.
    pub(super) mask: Tensor<1>,
}

impl GpuEngine {
    /// `None` when the device is not one the kernels run on.
    pub(super) fn new(labels: &NoisyLabels, first_mask: Tensor<1>) -> Option<Self> {
        let device = first_mask.device();
        let n = labels.noisy_labels.len();
        if !Kernel::Selection.runs(Place::of(&device), DType::F32) {
            return None;
        }
        let cumulative = Tensor::<1>::zeros([n], &device);
        let as_i32: Vec<i32> = labels.noisy_labels.iter().map(|&l| l as i32).collect();
        Some(GpuEngine {
            labels: Tensor::from_data(TensorData::new(as_i32, [n]), &device),
            cumulative,
            mask: first_mask,
        })
    }

    /// Score one epoch from device logits `[n, C]`; returns the update and the next
    /// k-set's indices (on the device).
    pub(super) async fn update(
        &mut self,
        logits: Tensor<2>,
        selection: &Params,
        epoch: u32,
    ) -> Result<(Update, Tensor<1, Int>)> {
        let (mode, eta) = match selection.objective {
            Objective::Greedy => (RiskMode::Greedy, 0.0),
            Objective::Perturbed { eta } => (RiskMode::Perturbed, eta as f32),
        };
        let params = RiskParams {
            seed: selection.seed,
            epoch,
            eta,
            mode,
        };
        let risk = noise_risk_objective(&logits, &self.labels, &self.cumulative, params)
            .ok_or_else(|| Error::Device("the WGSL kernels need a wgpu device".into()))?;
        let hindsight = select_k_smallest(&risk.cumulative, selection.k).expect("on wgpu");
        let scalars = Tensor::cat(
            vec![
                (risk.theta.clone() * self.mask.clone()).sum(),
                (hindsight.mask * risk.cumulative.clone()).sum(),
                risk.theta.clone().sum(),
            ],
            0,
        );
        self.cumulative = risk.cumulative;
        let next = select_k_smallest(&risk.objective, selection.k).expect("on wgpu");
        let values = read_floats(scalars, "selection results").await?;
        let update = Update {
            selection_risk: values[0] as f64,
            total_hindsight_risk: values[1] as f64,
            risk_sum: values[2] as f64,
        };
        self.mask = next.mask;
        Ok((update, next.indices))
    }

    /// The current set, ascending, read from the mask.
    pub(super) async fn current_host(&self) -> Result<Vec<u32>> {
        let mask = read_floats(self.mask.clone(), "the selection mask").await?;
        Ok(mask
            .iter()
            .enumerate()
            .filter(|(_, m)| **m > 0.5)
            .map(|(i, _)| i as u32)
            .collect())
    }
}
