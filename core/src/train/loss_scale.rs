//! The dynamic loss scale of an f16 step ([`crate::precision`]), as PyTorch's
//! `GradScaler` keeps it: the loss is multiplied by the scale before the backward pass,
//! so that gradients too small for f16 (below its smallest subnormal, 6e-8) survive it,
//! and the f32 gradients are divided by it before Adam's step. A step whose gradients
//! came back infinite or NaN overflowed f16: Adam skips it and the scale halves. After
//! [`LossScale::GROWTH_INTERVAL`] finite steps in a row it doubles, so it settles just
//! below where the gradients overflow.
//!
//! It is part of a checkpoint: a resumed f16 run scales its next step as the run that
//! stopped would have.

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use crate::model::Networks;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossScale {
    /// What the loss is multiplied by.
    pub scale: f32,
    /// Finite steps since the scale last changed.
    pub good_steps: u32,
}

impl Default for LossScale {
    fn default() -> Self {
        LossScale {
            scale: Self::START,
            good_steps: 0,
        }
    }
}

impl LossScale {
    /// PyTorch's first scale, 2^16.
    pub const START: f32 = 65_536.0;
    /// Finite steps before the scale doubles (PyTorch's default).
    pub const GROWTH_INTERVAL: u32 = 2000;

    /// Account for one step whose gradients were `finite` or not; whether Adam takes it.
    pub fn after(&mut self, finite: bool) -> bool {
        if !finite {
            self.scale /= 2.0;
            self.good_steps = 0;
            return false;
        }
        self.good_steps += 1;
        if self.good_steps == Self::GROWTH_INTERVAL {
            self.scale *= 2.0;
            self.good_steps = 0;
        }
        true
    }
}

/// Divide every gradient in `grads` (of `networks`' parameters) by `scale`; whether they
/// are all finite. Reads one number back: whether to step is decided on the host, as
/// PyTorch's scaler does.
pub(crate) fn unscale(grads: &mut GradientsParams, networks: &Networks, scale: f32) -> bool {
    struct Unscale<'a> {
        grads: &'a mut GradientsParams,
        inverse: f32,
        sums: Vec<Tensor<1>>,
    }
    impl ModuleVisitor for Unscale<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let id: ParamId = param.id;
            if let Some(g) = self.grads.remove::<D>(id) {
                let g = g.mul_scalar(self.inverse);
                // Any infinity or NaN in g makes its sum one too.
                self.sums.push(g.clone().sum());
                self.grads.register(id, g);
            }
        }
    }
    let mut visitor = Unscale {
        grads,
        inverse: 1.0 / scale,
        sums: Vec::new(),
    };
    networks.visit(&mut visitor);
    if visitor.sums.is_empty() {
        return true;
    }
    let total = Tensor::cat(visitor.sums, 0).sum().into_scalar::<f32>();
    total.is_finite()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overflow_halves_the_scale_and_skips_the_step() {
        let mut s = LossScale::default();
        assert!(s.after(true));
        assert_eq!((s.scale, s.good_steps), (65_536.0, 1));
        assert!(!s.after(false));
        assert_eq!((s.scale, s.good_steps), (32_768.0, 0));
        for _ in 0..LossScale::GROWTH_INTERVAL - 1 {
            assert!(s.after(true));
        }
        assert_eq!(s.scale, 32_768.0, "not before the interval");
        assert!(s.after(true));
        assert_eq!((s.scale, s.good_steps), (65_536.0, 0));
    }
}

#[cfg(test)]
mod gpu_tests {
    use super::*;
    use crate::config::TrainConfig;
    use crate::data::DatasetKind;
    use crate::methods::{BatchAt, Method};
    use crate::noise::NoiseKind;
    use crate::params::float_tensors;
    use crate::precision::Precision;
    use crate::test_support::host;
    use crate::train::Trainer;

    /// On lavapipe, through the training step itself: an f16 step whose scaled loss
    /// overflows f16 in the backward pass (a scale of 1e30) leaves every weight as it was
    /// and halves the scale; the next step, at PyTorch's first scale, moves the weights
    /// and counts one finite step.
    #[test]
    fn an_f16_step_that_overflows_is_skipped() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let split = DatasetKind::MnistDigits.load(None).unwrap();
        let mut config = TrainConfig::paper(
            DatasetKind::MnistDigits,
            NoiseKind::Symmetric,
            0.5,
            Method::STANDARD,
        );
        config.precision = Precision::F16;
        config.train_limit = Some(256);
        config.test_limit = Some(64);
        let mut trainer = Trainer::new(config, split, &device).unwrap();
        let weights = |t: &Trainer| -> Vec<Vec<f32>> {
            float_tensors(&t.networks())
                .into_iter()
                .map(|t| host(t.values))
                .collect()
        };
        let picked: Vec<u32> = (0..128).collect();
        let at = BatchAt {
            epoch: 1,
            batch: 0,
            forget_rate: 0.0,
        };
        let step = |t: &mut Trainer| {
            let rule = t.rule.take().unwrap();
            let networks = t.networks.take().unwrap();
            let (networks, _) = t.train_batch(rule.as_ref(), networks, &picked, at, 1e-3, 0.9);
            t.networks = Some(networks);
            t.rule = Some(rule);
        };
        let before = weights(&trainer);

        trainer.loss_scale = Some(LossScale {
            scale: 1e30,
            good_steps: 7,
        });
        step(&mut trainer);
        assert_eq!(
            weights(&trainer),
            before,
            "an overflowed step moved the weights"
        );
        assert_eq!(
            trainer.loss_scale,
            Some(LossScale {
                scale: 5e29,
                good_steps: 0
            })
        );

        trainer.loss_scale = Some(LossScale::default());
        step(&mut trainer);
        let after = weights(&trainer);
        let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
        assert_eq!(moved, before.len(), "every parameter steps");
        assert_eq!(
            trainer.loss_scale,
            Some(LossScale {
                scale: LossScale::START,
                good_steps: 1
            })
        );
    }
}
