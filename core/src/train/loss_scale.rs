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
//!
//! Where the packed Adam runs (a wgpu adapter that binds enough buffers, and a step
//! without a method's gate), the scale lives on the device ([`DeviceLossScale`]) and
//! the packed step checks the gradients, skips or takes the step and moves the scale on
//! there, as PyTorch's fused Adam does with `found_inf`: the step reads nothing back,
//! and the unscaling and the check are two launches for every parameter together
//! instead of two per parameter. A skipped step does not count for Adam's bias
//! correction: it is counted on the device and taken back from the step numbers when
//! the host next decides a step or saves a checkpoint. The host's way ([`unscale`] and
//! [`LossScale::after`]) stays for the steps the packed Adam does not take (an adapter
//! with too few bindings, or Decouple's gated step), each with one read.

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Device, FloatDType, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::nn::Networks;
use crate::ops::adam::gpu::Scaling;
use crate::ops::layer_kernels::ScaleAt;

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

/// The loss scale on the device: `shaders/adam_packed.wgsl`'s scaler words (two states
/// of [scale, good steps, skipped steps, unused] and a found flag per state, as the bits
/// of an f32 `[10]`), and which state the next step reads.
pub(crate) struct DeviceLossScale {
    words: Tensor<1>,
    parity: u32,
}

impl DeviceLossScale {
    /// `scale` on `device`, no step skipped yet.
    pub(crate) fn new(scale: LossScale, device: &Device) -> Self {
        let mut words = [0u32; 10];
        words[0] = scale.scale.to_bits();
        words[1] = scale.good_steps;
        let words = words.map(f32::from_bits).to_vec();
        DeviceLossScale {
            words: Tensor::from_data(TensorData::new(words, [10]), device),
            parity: 0,
        }
    }

    /// The scale the next step's loss is multiplied by, `[1]` on the device (a view).
    pub(crate) fn scale(&self) -> Tensor<1> {
        let at = self.state_start();
        self.words.clone().narrow(0, at, 1)
    }

    /// The same scale as a word of the state, for a kernel that reads it there (the
    /// MLP's step by hand).
    pub(crate) fn scale_at(&self) -> ScaleAt<'_> {
        ScaleAt {
            words: &self.words,
            at: self.state_start(),
        }
    }

    /// What the packed Adam step needs to scale, check and skip with learning rate
    /// `lr`; [`DeviceLossScale::stepped`] after it ran.
    pub(crate) fn scaling(&self, lr: f64) -> Scaling<'_> {
        Scaling {
            scaler: &self.words,
            parity: self.parity,
            lr: lr as f32,
            interval: LossScale::GROWTH_INTERVAL,
        }
    }

    /// The packed step ran: the next reads the state it wrote.
    pub(crate) fn stepped(&mut self) {
        self.parity ^= 1;
    }

    /// The scale as the host keeps it, and the steps skipped on the device since this
    /// was made. Reads the words back.
    pub(crate) async fn read(&self) -> Result<(LossScale, usize)> {
        let words = crate::read_back::read_floats(self.words.clone(), "the loss scale").await?;
        Ok(self.state_in(&words))
    }

    /// [`DeviceLossScale::read`] inside a training step, which waits for the device.
    pub(crate) fn read_now(&self) -> (LossScale, usize) {
        let words = self.words.clone().into_data().try_to_vec::<f32>();
        self.state_in(&words.expect("the loss scale's words are f32"))
    }

    /// Where the state the next step reads starts among the words (its scale first).
    fn state_start(&self) -> usize {
        4 * self.parity as usize
    }

    fn state_in(&self, words: &[f32]) -> (LossScale, usize) {
        let at = self.state_start();
        let word = |i: usize| words[at + i].to_bits();
        let scale = LossScale {
            scale: f32::from_bits(word(0)),
            good_steps: word(1),
        };
        (scale, word(2) as usize)
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
                // In f32 (an f16 weight gradient of the MLP's step by hand would lose
                // its small values to the division).
                let g = g.cast(FloatDType::F32).mul_scalar(self.inverse);
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
    use crate::data::DatasetKind;
    use crate::methods::{BatchAt, Method};
    use crate::noise::NoiseKind;
    use crate::params::float_tensors;
    use crate::precision::Precision;
    use crate::settings::TrainConfig;
    use crate::test_support::host;
    use crate::train::Trainer;

    /// A trainer of `method` in f16 on 256 of the bundled digits, and a function that
    /// trains it on one batch.
    fn f16_trainer(method: Method, device: &Device) -> (Trainer, impl Fn(&mut Trainer)) {
        let split = DatasetKind::MnistDigits.load(None).unwrap();
        let mut config =
            TrainConfig::paper(DatasetKind::MnistDigits, NoiseKind::Symmetric, 0.5, method);
        config.precision = Precision::F16;
        config.train_limit = Some(256);
        config.test_limit = Some(64);
        let trainer = Trainer::new(config, split, device).unwrap();
        let picked: Vec<u32> = (0..128).collect();
        let at = BatchAt {
            epoch: 1,
            batch: 0,
            forget_rate: 0.0,
        };
        let step = move |t: &mut Trainer| {
            let rule = t.rule.take().unwrap();
            let networks = t.networks.take().unwrap();
            let (networks, _) = t.train_batch(rule.as_ref(), networks, &picked, at, 1e-3, 0.9);
            t.networks = Some(networks);
            t.rule = Some(rule);
        };
        (trainer, step)
    }

    fn weights(t: &Trainer) -> Vec<Vec<f32>> {
        float_tensors(&t.networks())
            .into_iter()
            .map(|t| host(t.values))
            .collect()
    }

    fn set_scale(t: &mut Trainer, scale: f32, good_steps: u32) {
        let scale = LossScale { scale, good_steps };
        t.loss_scale = Some(DeviceLossScale::new(scale, &t.device));
    }

    fn state(t: &Trainer) -> (LossScale, usize) {
        t.loss_scale.as_ref().unwrap().read_now()
    }

    const HALVED: LossScale = LossScale {
        scale: 5e29,
        good_steps: 0,
    };

    /// On lavapipe, through the training step itself, decided on the device (the
    /// packed Adam): a scaled loss that overflows f16 in the backward pass (a scale of
    /// 1e30) leaves every weight as it was, halves the scale and counts the skip, which
    /// Adam's step numbers leave out once taken back (as a checkpoint takes them: a
    /// parameter with no step taken has none); the next step, at PyTorch's first scale,
    /// moves every weight and counts a finite step; a second overflow is skipped too.
    #[test]
    fn an_f16_step_that_overflows_is_skipped() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let (mut trainer, step) = f16_trainer(Method::STANDARD, &device);
        let before = weights(&trainer);
        let params = before.len();
        let times = |t: &Trainer, skipped: usize| -> Vec<Option<usize>> {
            (0..params)
                .map(|i| t.adam.time_without(i, skipped))
                .collect()
        };

        set_scale(&mut trainer, 1e30, 7);
        step(&mut trainer);
        assert_eq!(
            weights(&trainer),
            before,
            "an overflowed first step moved the weights"
        );
        assert_eq!(
            state(&trainer),
            (HALVED, 1),
            "one skip counted on the device"
        );
        assert_eq!(times(&trainer, 0), vec![Some(1); params]);
        assert_eq!(times(&trainer, 1), vec![None; params], "no step taken");

        set_scale(&mut trainer, LossScale::START, 0);
        trainer.adam.forget_skipped(1);
        step(&mut trainer);
        let after = weights(&trainer);
        let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
        assert_eq!(moved, params, "every parameter steps");
        let one_good = LossScale {
            scale: LossScale::START,
            good_steps: 1,
        };
        assert_eq!(state(&trainer), (one_good, 0));
        assert_eq!(times(&trainer, 0), vec![Some(1); params]);

        set_scale(&mut trainer, 1e30, 7);
        step(&mut trainer);
        assert_eq!(
            weights(&trainer),
            after,
            "a second overflow moved the weights"
        );
        assert_eq!(state(&trainer), (HALVED, 1));
        assert_eq!(times(&trainer, 1), vec![Some(1); params]);
    }

    /// On lavapipe: the MLP's f16 step with plain cross-entropy (Standard's) is the step
    /// by hand in f16 (`ops::mlp_step::gpu`), not autodiff's: its three f16 kernels run once
    /// each, no kernel of the generic path does (the per-sample loss), and the only
    /// casts are the two weights' in the first step (the batch arrives in f16, and the
    /// packed Adam reads the weights' f16 gradients as they are); later steps take the
    /// weights' f16 copies that Adam's step wrote, and cast nothing.
    #[test]
    fn an_f16_mlp_step_is_the_step_by_hand() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let (mut trainer, step) = f16_trainer(Method::STANDARD, &device);
        for casts in [2, 0, 0] {
            let ((), kernels) =
                crate::gpu::launches::count_by_kernel(&device, || step(&mut trainer));
            let count = |name: &str| {
                kernels
                    .iter()
                    .find(|(k, _)| k == name)
                    .map_or(0, |(_, n)| *n)
            };
            for kernel in [
                "taks_bias_relu_f16",
                "taks_mlp_softmax_grad_f16",
                "taks_mlp_relu_grad_f16",
            ] {
                assert_eq!(count(kernel), 1, "{kernel}: {kernels:?}");
            }
            assert_eq!(count("taks_cross_entropy"), 0, "{kernels:?}");
            // Under burn's fusion the first step's casts can be fused with the
            // trainer's own setup, which fusion runs only then.
            if casts > 0 && cfg!(feature = "fusion") {
                continue;
            }
            assert_eq!(count("CastElement"), casts, "{kernels:?}");
            if casts == 0 {
                assert_eq!(
                    count("ElemwiseFuse"),
                    0,
                    "nothing cast, fused or not: {kernels:?}"
                );
            }
        }
    }

    /// The same decided on the host, where the packed Adam does not step (Decouple's
    /// step is gated): the overflow is skipped and the scale halved there, and the next
    /// step counts a finite one.
    #[test]
    fn an_f16_step_decided_on_the_host_skips_an_overflow() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let (mut trainer, step) = f16_trainer(Method::DECOUPLE, &device);
        let before = weights(&trainer);
        set_scale(&mut trainer, 1e30, 7);
        step(&mut trainer);
        assert_eq!(
            weights(&trainer),
            before,
            "an overflowed step moved the weights"
        );
        assert_eq!(
            state(&trainer),
            (HALVED, 0),
            "decided on the host, nothing counted"
        );
        set_scale(&mut trainer, LossScale::START, 0);
        step(&mut trainer);
        let one_good = LossScale {
            scale: LossScale::START,
            good_steps: 1,
        };
        assert_eq!(state(&trainer), (one_good, 0));
    }
}
