//! Adam with the paper's schedule, owning its state so a run can be checkpointed.
//!
//! The authors' code (inherited from Co-teaching) keeps the learning rate constant
//! until `decay_start`, then lowers it linearly, epoch e getting
//! `lr * (T - e) / (T - decay_start)`, and at the same epoch switches Adam's beta1 from
//! 0.9 to 0.1; bias correction uses the current beta1, as PyTorch does after a
//! param-group change. burn's Adam fixes beta1 when it is built, and its
//! `ModuleOptimizer` keys the moments by random parameter ids behind a record that
//! silently re-initialises what it cannot match. This Adam keeps the moments by the
//! parameter's position in the module (the order burn's visitors walk it, fixed by
//! the module's structure), so a checkpoint can save them and a resumed run put them
//! back exactly, with every mismatch an error.
//!
//! A step can be gated: an f32 `[1]` on the device, 0.0 to leave weights and moments
//! as they are. It lets a method skip a batch on a condition only the device knows
//! (Decouple with no disagreement) without reading it back; the step counter still
//! advances, so only bias correction sees the skip.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use crate::{Error, Result};

use crate::ops::adam::{Scalars, cpu as adam_cpu, gpu as adam_gpu};
use crate::plan::Kernel;

/// One parameter's Adam state (kept with the op that updates it).
pub use crate::ops::adam::Moments;

/// Adam (Kingma & Ba, beta2 0.999, eps 1e-8) whose beta1 can change between steps.
#[derive(Clone)]
pub struct Adam {
    pub(crate) beta_2: f32,
    pub(crate) epsilon: f32,
    /// Per float parameter of the module, in visiting order; `None` until it is first
    /// stepped (and for buffers such as batch-norm statistics, which never are).
    moments: Vec<Option<Moments>>,
    /// The last step's packed buffers on a wgpu device ([`adam_gpu::update_packed`]),
    /// which the weights and moments are views of until something replaces them.
    packed: Option<adam_gpu::Packed>,
    /// The positions of the parameters in `packed`, in order.
    packed_positions: Vec<usize>,
}

impl Default for Adam {
    fn default() -> Self {
        Adam {
            beta_2: 0.999,
            epsilon: 1e-8,
            moments: Vec::new(),
            packed: None,
            packed_positions: Vec::new(),
        }
    }
}

impl Adam {
    /// One step of every parameter of `module` that has a gradient in `grads`, with
    /// learning rate `lr` and first-moment decay `beta_1`, gated by `gate` if given.
    pub fn update<M: Module>(
        &mut self,
        lr: f64,
        beta_1: f32,
        module: M,
        grads: GradientsParams,
        gate: Option<Tensor<1>>,
    ) -> M {
        let (module, grads) = match gate {
            Some(_) => (module, grads),
            None => match self.update_packed(lr as f32, beta_1, module, grads, None) {
                Ok(stepped) => return stepped,
                Err(unstepped) => unstepped,
            },
        };
        self.packed = None;
        self.packed_positions.clear();
        let mut stepper = Stepper {
            adam: self,
            grads,
            lr: lr as f32,
            beta_1,
            gate,
            position: 0,
        };
        module.map(&mut stepper)
    }

    /// [`Adam::update`] of a mixed-precision step whose loss was multiplied by the scale
    /// in `scaling`: the gradients are divided by it, and the step is skipped where one
    /// of them is infinite or NaN, both decided on the device in the packed step, which
    /// also moves the scale on ([`adam_gpu::update_packed`]). Each stepped parameter's
    /// step number advances either way; the skipped steps are counted in the scale's
    /// state, and [`Adam::forget_skipped`] takes them back. `Err` gives the module
    /// back untouched where the packed step does not run (off wgpu, or too few
    /// bindings) or would step other parameters than the last packed step (whose
    /// skips are not taken back yet), for a step decided on the host.
    pub fn update_scaled<M: Module>(
        &mut self,
        lr: f64,
        beta_1: f32,
        module: M,
        grads: GradientsParams,
        scaling: adam_gpu::Scaling,
    ) -> std::result::Result<M, (M, GradientsParams)> {
        self.update_packed(lr as f32, beta_1, module, grads, Some(scaling))
    }

    /// Take back `skipped` steps from the step numbers of the parameters the last packed
    /// step stepped: those a [`Adam::update_scaled`] skipped on the device since the
    /// count started. Every one of those steps stepped the same parameters (a step that
    /// changes them goes through the host, which takes the skips back first).
    pub fn forget_skipped(&mut self, skipped: usize) {
        for &p in &self.packed_positions {
            if let Some(m) = self.moments[p].as_mut() {
                m.time -= skipped;
            }
        }
    }

    /// The step number of the parameter at `position` with `skipped` steps taken back
    /// as [`Adam::forget_skipped`] would; `None` before its first step taken (where
    /// every step so far was skipped, its moments are still zeros).
    pub fn time_without(&self, position: usize, skipped: usize) -> Option<usize> {
        let time = self.moments.get(position)?.as_ref()?.time;
        let time = match self.packed_positions.contains(&position) {
            true => time - skipped,
            false => time,
        };
        (time > 0).then_some(time)
    }

    /// The f16 copy of `weight` (flat) that the last packed step wrote with it, where
    /// `weight` is still that step's and its gradient came in f16
    /// ([`adam_gpu::Packed::low_copy`]); `None` otherwise.
    pub fn low_copy(&self, weight: &Tensor<1>) -> Option<Tensor<1>> {
        self.packed.as_ref()?.low_copy(weight)
    }

    /// The state of every float parameter, in the module's visiting order.
    pub fn moments(&self) -> &[Option<Moments>] {
        &self.moments
    }

    /// Put saved state back; `numels` is each float parameter's element count, in
    /// visiting order, which the saved state must match.
    pub fn restore(&mut self, moments: Vec<Option<Moments>>, numels: &[usize]) -> Result<()> {
        if moments.len() > numels.len() {
            return Err(Error::Config(format!(
                "optimiser state for {} parameters, but the networks have {}",
                moments.len(),
                numels.len()
            )));
        }
        for (i, (m, &numel)) in moments.iter().zip(numels).enumerate() {
            if let Some(m) = m
                && (m.first.dims()[0] != numel || m.second.dims()[0] != numel || m.time == 0)
            {
                return Err(Error::Config(format!(
                    "optimiser state of parameter {i} does not fit it ({} values for {numel}, step {})",
                    m.first.dims()[0],
                    m.time
                )));
            }
        }
        self.moments = moments;
        self.packed = None;
        self.packed_positions.clear();
        Ok(())
    }

    /// [`Adam::update`] ungated on a wgpu device: every parameter in one launch (a few where
    /// the adapter binds fewer buffers) by [`adam_gpu::update_packed`], each new weight and
    /// moment a view of the packed buffers. `Err` gives the module back untouched where
    /// that does not run (off wgpu, or too few bindings), for the per-parameter step.
    fn update_packed<M: Module>(
        &mut self,
        lr: f32,
        beta_1: f32,
        module: M,
        grads: GradientsParams,
        scaling: Option<adam_gpu::Scaling>,
    ) -> std::result::Result<M, (M, GradientsParams)> {
        let mut found = Gather {
            grads: &grads,
            position: 0,
            stepped: Vec::new(),
            off_wgpu: false,
        };
        module.visit(&mut found);
        let Gather {
            stepped, off_wgpu, ..
        } = found;
        if off_wgpu || stepped.is_empty() {
            return Err((module, grads));
        }
        // The skips counted on the device belong to the parameters the packed steps
        // stepped: another set is stepped after the host took them back.
        let positions: Vec<usize> = stepped.iter().map(|(p, _, _)| *p).collect();
        if scaling.is_some()
            && !self.packed_positions.is_empty()
            && positions != self.packed_positions
        {
            return Err((module, grads));
        }
        if self.moments.len() < found.position {
            self.moments.resize(found.position, None);
        }
        let parts: Vec<adam_gpu::Part> = stepped
            .iter()
            .map(|(position, x, g)| {
                let state = self.moments[*position].as_ref();
                let time = state.map_or(0, |s| s.time) + 1;
                adam_gpu::Part {
                    x: x.clone(),
                    g: g.clone(),
                    moments: state.map(|s| (s.first.clone(), s.second.clone())),
                    time,
                    scalars: Scalars::at(time, lr, beta_1, self.beta_2, self.epsilon),
                }
            })
            .collect();
        let Some(packed) = adam_gpu::update_packed(&parts, self.packed.as_ref(), scaling) else {
            return Err((module, grads));
        };
        drop(parts);
        let mut place = Place {
            packed: &packed,
            stepped: stepped.iter().map(|(p, x, _)| (*p, x.dims()[0])).collect(),
            next: 0,
            position: 0,
            moments: &mut self.moments,
        };
        let module = module.map(&mut place);
        self.packed = Some(packed);
        self.packed_positions = positions;
        Ok(module)
    }

    /// Adam's update of one parameter, in its own shape with the operations of burn's
    /// Adam in the same order (a default `taks train` ends on the same 91.00% test
    /// accuracy as with burn's optimiser). The moments are stored flat, so one list
    /// holds parameters of every rank; reshaping them back is free. On flex a step is one
    /// fused pass ([`adam_cpu`]; bit-identical weights), on wgpu an ungated one is one
    /// kernel (where [`Adam::update_packed`] does not step them all at once).
    fn update_parameter<const D: usize>(
        &self,
        lr: f32,
        beta_1: f32,
        mut x: Tensor<D>,
        mut grad: Tensor<D>,
        mut state: Option<Moments>,
        gate: Option<&Tensor<1>>,
    ) -> (Tensor<D>, Moments) {
        let step = adam_cpu::Step {
            lr,
            beta_1,
            beta_2: self.beta_2,
            epsilon: self.epsilon,
        };
        match adam_cpu::update(&step, (x, grad, state), gate) {
            Ok(done) => return done,
            Err(inputs) => (x, grad, state) = inputs,
        }
        if gate.is_none() && Kernel::AdamGpu.runs_for(&x) {
            return self.wgsl_update(lr, beta_1, x, grad, state);
        }
        self.generic_update(lr, beta_1, x, grad, state, gate)
    }

    /// [`Adam::update_parameter`] as one WGSL kernel ([`adam_gpu`]) on a wgpu device. Before
    /// the first step the moments are zeros, which gives the generic path's first moments
    /// (`0 * beta + y` is `y`).
    fn wgsl_update<const D: usize>(
        &self,
        lr: f32,
        beta_1: f32,
        x: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Moments>,
    ) -> (Tensor<D>, Moments) {
        let dims = x.dims();
        let numel = dims.iter().product::<usize>();
        let time = state.as_ref().map_or(0, |s| s.time) + 1;
        let scalars = Scalars::at(time, lr, beta_1, self.beta_2, self.epsilon);
        let (x, grad) = (x.reshape([numel]), grad.reshape([numel]));
        let (m, v) = adam_gpu::moments_or_zeros(state.map(|s| (s.first, s.second)), &x);
        let (x, first, second) = adam_gpu::update(&x, &grad, &m, &v, scalars)
            .expect("the plan runs Adam's kernel on this device only");
        (
            x.reshape(dims),
            Moments {
                first,
                second,
                time,
            },
        )
    }

    /// [`Adam::update_parameter`] as tensor operations, for every device.
    pub(crate) fn generic_update<const D: usize>(
        &self,
        lr: f32,
        beta_1: f32,
        x: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Moments>,
        gate: Option<&Tensor<1>>,
    ) -> (Tensor<D>, Moments) {
        let dims = x.dims();
        let numel = dims.iter().product::<usize>();
        let state = state.map(|s| (s.first.reshape(dims), s.second.reshape(dims), s.time));
        let previous = gate.and(state.as_ref().map(|s| (s.0.clone(), s.1.clone())));
        let time = state.as_ref().map_or(0, |s| s.2) + 1;
        let s = Scalars::at(time, lr, beta_1, self.beta_2, self.epsilon);
        let (m, v) = match state {
            Some((m, v, _)) => (
                m.mul_scalar(s.beta_1)
                    .add(grad.clone().mul_scalar(s.keep_1)),
                v.mul_scalar(s.beta_2)
                    .add(grad.square().mul_scalar(s.keep_2)),
            ),
            None => (
                grad.clone().mul_scalar(s.keep_1),
                grad.square().mul_scalar(s.keep_2),
            ),
        };
        let denom = v
            .clone()
            .div_scalar(s.correction_2)
            .sqrt()
            .add_scalar(s.epsilon);
        let update = m.clone().div(denom).mul_scalar(s.step_size);
        let flat = |m: Tensor<D>, v: Tensor<D>| Moments {
            first: m.reshape([numel]),
            second: v.reshape([numel]),
            time,
        };
        let Some(gate) = gate else {
            return (x - update, flat(m, v));
        };
        // x + gate (x_new - x): x_new when the gate is 1, x untouched when it is 0.
        let gate = gate.clone().reshape([1; D]);
        let (m, v) = match previous {
            Some((m0, v0)) => (
                m0.clone() + (m - m0) * gate.clone(),
                v0.clone() + (v - v0) * gate.clone(),
            ),
            None => (m * gate.clone(), v * gate.clone()),
        };
        (x - update * gate, flat(m, v))
    }
}

/// Finds a module's float parameters that have a gradient, in visiting order: position,
/// weights and gradient, both flat and without autodiff.
struct Gather<'a> {
    grads: &'a GradientsParams,
    position: usize,
    stepped: Vec<(usize, Tensor<1>, Tensor<1>)>,
    off_wgpu: bool,
}

impl ModuleVisitor for Gather<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let position = self.position;
        self.position += 1;
        if self.off_wgpu {
            return;
        }
        let x = param.val().inner();
        if !Kernel::AdamGpu.runs_for(&x) {
            self.off_wgpu = true;
            return;
        }
        let id: ParamId = param.id;
        let Some(grad) = self.grads.get::<D>(id) else {
            return;
        };
        let numel = x.dims().iter().product::<usize>();
        self.stepped
            .push((position, x.reshape([numel]), grad.reshape([numel])));
    }
}

/// Puts a packed step's weights and moments in place: each stepped parameter becomes its
/// view of the packed weights, in its own shape.
struct Place<'a> {
    packed: &'a adam_gpu::Packed,
    /// Position and length of each stepped parameter, in order.
    stepped: Vec<(usize, usize)>,
    next: usize,
    position: usize,
    moments: &'a mut Vec<Option<Moments>>,
}

impl ModuleMapper for Place<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let position = self.position;
        self.position += 1;
        let (id, tensor, mapper) = param.consume();
        let Some(&(at, numel)) = self.stepped.get(self.next).filter(|(p, _)| *p == position) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let j = self.next;
        self.next += 1;
        let p = self.packed;
        let time = self.moments[at].as_ref().map_or(0, |s| s.time) + 1;
        self.moments[at] = Some(Moments {
            first: p.part(&p.m, j, numel),
            second: p.part(&p.v, j, numel),
            time,
        });
        let require_grad = tensor.is_require_grad();
        let mut x = Tensor::from_inner(p.part(&p.x, j, numel).reshape(tensor.dims()));
        if require_grad {
            x = x.require_grad();
        }
        Param::from_mapped_value(id, x, mapper)
    }
}

/// Walks a module's float parameters in order and steps each one that has a gradient.
struct Stepper<'a> {
    adam: &'a mut Adam,
    grads: GradientsParams,
    lr: f32,
    beta_1: f32,
    gate: Option<Tensor<1>>,
    position: usize,
}

impl ModuleMapper for Stepper<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let position = self.position;
        self.position += 1;
        let (id, tensor, mapper) = param.consume();
        let Some(grad) = self.grads.remove::<D>(id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        if self.adam.moments.len() <= position {
            self.adam.moments.resize(position + 1, None);
        }
        let require_grad = tensor.is_require_grad();
        let state = self.adam.moments[position].take();
        let (x, moments) = self.adam.update_parameter(
            self.lr,
            self.beta_1,
            tensor.inner(),
            grad,
            state,
            self.gate.as_ref(),
        );
        self.adam.moments[position] = Some(moments);
        let mut x = Tensor::from_inner(x);
        if require_grad {
            x = x.require_grad();
        }
        Param::from_mapped_value(id, x, mapper)
    }
}

/// Learning rate and beta1 of epoch `e` (0-based) out of `total`: the paper's linear
/// decay from `decay_start`, or with `steps` (each a first epoch and its rate, in order)
/// the rate of the last step begun, beta1 kept at 0.9 (the paper's Clothing1M schedule).
pub fn schedule(
    base_lr: f64,
    e: usize,
    total: usize,
    decay_start: usize,
    steps: Option<&[(usize, f64)]>,
) -> (f64, f32) {
    if let Some(steps) = steps {
        let lr = steps
            .iter()
            .take_while(|(first, _)| *first <= e)
            .last()
            .map_or(base_lr, |(_, lr)| *lr);
        return (lr, 0.9);
    }
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
        assert_eq!(schedule(1e-3, 0, 200, 80, None), (1e-3, 0.9));
        assert_eq!(schedule(1e-3, 79, 200, 80, None), (1e-3, 0.9));
        assert_eq!(schedule(1e-3, 80, 200, 80, None), (1e-3, 0.1));
        let (lr, _) = schedule(1e-3, 140, 200, 80, None);
        assert!((lr - 0.5e-3).abs() < 1e-12);
        let (lr, _) = schedule(1e-3, 199, 200, 80, None);
        assert!((lr - 1e-3 / 120.0).abs() < 1e-12);
        // A run shorter than the decay start keeps the base rate throughout.
        assert_eq!(schedule(1e-3, 19, 20, 80, None), (1e-3, 0.9));
        // Steps: 8e-4 for epochs 0-4, 5e-4 for 5-9, 5e-5 from 10, beta1 unchanged.
        let steps = [(0, 8e-4), (5, 5e-4), (10, 5e-5)];
        let lr = |e| schedule(1e-3, e, 15, 80, Some(&steps));
        assert_eq!(
            [lr(0), lr(4), lr(5), lr(9), lr(10), lr(14)].map(|(l, _)| l),
            [8e-4, 8e-4, 5e-4, 5e-4, 5e-5, 5e-5]
        );
        assert!([lr(0), lr(14)].iter().all(|(_, b)| *b == 0.9));
    }

    /// Both the fused host pass and the tensor operations (what a wgpu device runs for
    /// a gated step).
    #[test]
    fn a_closed_gate_leaves_weights_and_moments_untouched() {
        use burn::tensor::{Device, TensorData};
        type Update<'a> = &'a dyn Fn(
            Tensor<1>,
            Tensor<1>,
            Option<Moments>,
            Option<&Tensor<1>>,
        ) -> (Tensor<1>, Moments);
        let device = Device::flex();
        let t = |v: Vec<f32>| Tensor::<1>::from_data(TensorData::new(v, [2]), &device);
        let host = |x: Tensor<1>| x.into_data().try_to_vec::<f32>().unwrap();
        let adam = Adam::default();
        let fused =
            |x, g, s, gate: Option<&Tensor<1>>| adam.update_parameter(0.1, 0.9, x, g, s, gate);
        let generic =
            |x, g, s, gate: Option<&Tensor<1>>| adam.generic_update(0.1, 0.9, x, g, s, gate);
        for (path, update) in [("fused", &fused as Update), ("generic", &generic as Update)] {
            let (w1, s1) = update(t(vec![1.0, 2.0]), t(vec![0.5, -0.5]), None, None);
            let closed = Tensor::<1>::zeros([1], &device);
            let (w2, s2) = update(
                w1.clone(),
                t(vec![3.0, 3.0]),
                Some(s1.clone()),
                Some(&closed),
            );
            assert_eq!(host(w2.clone()), host(w1.clone()), "{path}");
            assert_eq!(host(s2.first.clone()), host(s1.first.clone()), "{path}");
            assert_eq!(host(s2.second.clone()), host(s1.second.clone()), "{path}");
            assert_eq!(
                s2.time, 2,
                "{path}: a skipped step still counts for bias correction"
            );
            // Open: the step moves the weights as an ungated one would.
            let open = Tensor::<1>::ones([1], &device);
            let (w3, _) = update(w2.clone(), t(vec![3.0, 3.0]), Some(s2.clone()), Some(&open));
            let (w4, _) = update(w2, t(vec![3.0, 3.0]), Some(s2), None);
            assert_eq!(host(w3.clone()), host(w4), "{path}");
            assert!(host(w3).iter().zip(host(w1)).all(|(a, b)| *a < b), "{path}");
        }
    }

    #[test]
    fn restore_rejects_state_that_does_not_fit() {
        use burn::tensor::Device;
        let device = Device::flex();
        let moments = |n: usize, time: usize| {
            Some(Moments {
                first: Tensor::<1>::zeros([n], &device),
                second: Tensor::<1>::zeros([n], &device),
                time,
            })
        };
        let mut adam = Adam::default();
        assert!(adam.restore(vec![moments(3, 1), None], &[3, 4]).is_ok());
        let err = adam
            .restore(vec![moments(2, 1)], &[3])
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 values for 3"), "{err}");
        let err = adam
            .restore(vec![None, None], &[3])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("2 parameters, but the networks have 1"),
            "{err}"
        );
        assert!(adam.restore(vec![moments(3, 0)], &[3]).is_err());
    }
}
