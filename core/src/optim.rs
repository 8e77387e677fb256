//! Adam with the paper's schedule.
//!
//! The authors' code (inherited from Co-teaching) keeps the learning rate constant
//! until `decay_start`, then lowers it linearly, epoch e getting
//! `lr * (T - e) / (T - decay_start)`, and at the same epoch switches Adam's beta1 from
//! 0.9 to 0.1. burn's Adam fixes beta1 when it is built, so this optimiser reads beta1
//! from a shared cell that the training loop sets each epoch; bias correction uses the
//! current beta1, as PyTorch does after a param-group change.
//!
//! The same handle can also hold a gate for the next step: an f32 `[1]` on the device,
//! 0.0 to leave weights and moments as they are. It lets a method skip a batch on a
//! condition only the device knows (Decouple with no disagreement) without reading it
//! back; the step counter still advances, so only bias correction sees the skip.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use burn::optim::{AdaptiveMomentumState, ModuleOptimizer, Optimizer};
use burn::tensor::{Device, Tensor};

/// Adam (Kingma & Ba) whose beta1 can change between steps.
#[derive(Clone)]
pub struct ScheduledAdam {
    beta_1: Arc<AtomicU32>,
    gate: Arc<Mutex<Option<Tensor<1>>>>,
    beta_2: f32,
    epsilon: f32,
}

/// The handle the training loop uses to change beta1 and to gate a step.
#[derive(Clone)]
pub struct Beta1 {
    beta_1: Arc<AtomicU32>,
    gate: Arc<Mutex<Option<Tensor<1>>>>,
}

impl Beta1 {
    pub fn set(&self, beta_1: f32) {
        self.beta_1.store(beta_1.to_bits(), Ordering::Relaxed);
    }

    pub fn get(&self) -> f32 {
        f32::from_bits(self.beta_1.load(Ordering::Relaxed))
    }

    /// Gate the following steps by `gate` (f32 `[1]`, 1.0 = step, 0.0 = leave as is;
    /// not tracked by autodiff), or `None` to step always.
    pub fn set_gate(&self, gate: Option<Tensor<1>>) {
        *self.gate.lock().unwrap_or_else(|e| e.into_inner()) = gate;
    }
}

impl ScheduledAdam {
    /// Adam(beta1 0.9, beta2 0.999, eps 1e-8) wrapped for a whole module, and its beta1 handle.
    pub fn init() -> (ModuleOptimizer, Beta1) {
        let handle = Beta1 {
            beta_1: Arc::new(AtomicU32::new(0.9f32.to_bits())),
            gate: Arc::new(Mutex::new(None)),
        };
        let adam = ScheduledAdam {
            beta_1: handle.beta_1.clone(),
            gate: handle.gate.clone(),
            beta_2: 0.999,
            epsilon: 1e-8,
        };
        (ModuleOptimizer::from(adam), handle)
    }
}

impl Optimizer for ScheduledAdam {
    /// burn's own Adam state (moments and step count), so records stay compatible.
    type State<const D: usize> = AdaptiveMomentumState<D>;

    fn step<const D: usize>(
        &self,
        lr: f64,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        let beta_1 = f32::from_bits(self.beta_1.load(Ordering::Relaxed));
        let gate = self.gate.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let previous = gate.as_ref().map(|_| {
            state
                .as_ref()
                .map(|s| (s.moment_1.clone(), s.moment_2.clone()))
        });
        let (m, v, time) = match state {
            Some(s) => (
                s.moment_1
                    .mul_scalar(beta_1)
                    .add(grad.clone().mul_scalar(1.0 - beta_1)),
                s.moment_2
                    .mul_scalar(self.beta_2)
                    .add(grad.square().mul_scalar(1.0 - self.beta_2)),
                s.time + 1,
            ),
            None => (
                grad.clone().mul_scalar(1.0 - beta_1),
                grad.square().mul_scalar(1.0 - self.beta_2),
                1,
            ),
        };
        let correction_1 = 1.0 - beta_1.powi(time as i32);
        let correction_2 = 1.0 - self.beta_2.powi(time as i32);
        let step_size = lr as f32 / correction_1;
        let denom = v
            .clone()
            .div_scalar(correction_2)
            .sqrt()
            .add_scalar(self.epsilon);
        let update = m.clone().div(denom).mul_scalar(step_size);
        let (Some(gate), Some(previous)) = (gate, previous) else {
            return (
                tensor - update,
                Some(AdaptiveMomentumState::new(time, m, v)),
            );
        };
        // x + gate (x_new - x): x_new when the gate is 1, x untouched when it is 0.
        let gate = gate.reshape([1; D]);
        let (m, v) = match previous {
            Some((m0, v0)) => (
                m0.clone() + (m - m0) * gate.clone(),
                v0.clone() + (v - v0) * gate.clone(),
            ),
            None => (m * gate.clone(), v * gate.clone()),
        };
        (
            tensor - update * gate,
            Some(AdaptiveMomentumState::new(time, m, v)),
        )
    }

    fn to_device<const D: usize>(mut state: Self::State<D>, device: &Device) -> Self::State<D> {
        state.moment_1 = state.moment_1.to_device(device);
        state.moment_2 = state.moment_2.to_device(device);
        state
    }
}

/// Learning rate and beta1 of epoch `e` (0-based) out of `total`.
pub fn schedule(base_lr: f64, e: usize, total: usize, decay_start: usize) -> (f64, f32) {
    if e < decay_start || total <= decay_start {
        (base_lr, 0.9)
    } else {
        (
            base_lr * (total - e) as f64 / (total - decay_start) as f64,
            0.1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_matches_the_authors_plan() {
        assert_eq!(schedule(1e-3, 0, 200, 80), (1e-3, 0.9));
        assert_eq!(schedule(1e-3, 79, 200, 80), (1e-3, 0.9));
        assert_eq!(schedule(1e-3, 80, 200, 80), (1e-3, 0.1));
        let (lr, _) = schedule(1e-3, 140, 200, 80);
        assert!((lr - 0.5e-3).abs() < 1e-12);
        let (lr, _) = schedule(1e-3, 199, 200, 80);
        assert!((lr - 1e-3 / 120.0).abs() < 1e-12);
        // A run shorter than the decay start keeps the base rate throughout.
        assert_eq!(schedule(1e-3, 19, 20, 80), (1e-3, 0.9));
    }

    #[test]
    fn a_closed_gate_leaves_weights_and_moments_untouched() {
        use burn::tensor::TensorData;
        let device = Device::flex();
        let t = |v: Vec<f32>| Tensor::<1>::from_data(TensorData::new(v, [2]), &device);
        let (_, handle) = ScheduledAdam::init();
        let adam = ScheduledAdam {
            beta_1: handle.beta_1.clone(),
            gate: handle.gate.clone(),
            beta_2: 0.999,
            epsilon: 1e-8,
        };
        let host = |x: Tensor<1>| x.into_data().try_to_vec::<f32>().unwrap();
        let (w1, s1) = adam.step(0.1, t(vec![1.0, 2.0]), t(vec![0.5, -0.5]), None);
        handle.set_gate(Some(Tensor::<1>::zeros([1], &device)));
        let (w2, s2) = adam.step(0.1, w1.clone(), t(vec![3.0, 3.0]), s1.clone());
        assert_eq!(host(w2.clone()), host(w1.clone()));
        let (s1, s2) = (s1.unwrap(), s2.unwrap());
        assert_eq!(host(s2.moment_1.clone()), host(s1.moment_1.clone()));
        assert_eq!(host(s2.moment_2.clone()), host(s1.moment_2.clone()));
        // Open again: the step moves the weights as an ungated one would.
        handle.set_gate(Some(Tensor::<1>::ones([1], &device)));
        let (w3, _) = adam.step(0.1, w2.clone(), t(vec![3.0, 3.0]), Some(s2.clone()));
        handle.set_gate(None);
        let (w4, _) = adam.step(0.1, w2, t(vec![3.0, 3.0]), Some(s2));
        assert_eq!(host(w3.clone()), host(w4));
        assert!(host(w3).iter().zip(host(w1)).all(|(a, b)| *a < b));
    }
}
