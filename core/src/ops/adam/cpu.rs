//! Adam's update on the CPU backend (flex), the CPU twin of [`super::gpu`]: one pass
//! over each parameter, in place.
//!
//! The device-generic update ([`crate::optim::Adam`]) is a dozen tensor operations per
//! parameter (scale and add the first moment, square, scale and add the second, divide,
//! square root, add epsilon, divide, scale, subtract), and each is its own pass over the
//! parameter through burn's dispatch. On flex those passes are host loops anyway, so here
//! they become one loop that reads the gradient once and updates weight, first and second
//! moment where they lie (copying a buffer only when something else still shares it).
//! For the MLP that is 200,000 weights a step (164 steps in a TAkS epoch on
//! Fashion-MNIST, 469 in a Standard one).
//!
//! The arithmetic is the generic path's, operation for operation, in the same order and
//! in f32 (Rust never contracts `a * b + c` into a fused multiply-add on its own), so the
//! weights are bit-identical to it: `the_fused_update_is_bit_identical` checks that. The
//! one difference is that moments which decay into the subnormal range are set to zero
//! (see [`flush`]: it keeps long runs from slowing down threefold and moves no weight).

use burn::tensor::Tensor;

use super::{Moments, Scalars};
use crate::ops::flex_buffers::{dense, from_values, is_flex_f32, primitive, tensor, values};

/// One parameter's step: what [`update`] needs besides the tensors.
pub(crate) struct Step {
    pub lr: f32,
    pub beta_1: f32,
    pub beta_2: f32,
    pub epsilon: f32,
}

/// The tensors of one parameter's update, handed back untouched when they are not all
/// f32 on flex (then the generic path runs).
pub(crate) type Inputs<const D: usize> = (Tensor<D>, Tensor<D>, Option<Moments>);

/// Adam's step of weight `x` with gradient `grad` and moments `state` (`None` before the
/// first step), as the generic update computes it, gated by `gate` (1.0 or absent: step;
/// 0.0: leave weights and moments as they are, the step counter still advancing); `Err`
/// gives the inputs back when any of them is not an f32 flex tensor, or the gate is
/// neither 0 nor 1. (The inputs go back by value, unboxed: this runs once per parameter
/// per step, and the caller takes the generic path with them at once.)
#[allow(clippy::result_large_err)]
pub(crate) fn update<const D: usize>(
    step: &Step,
    inputs: Inputs<D>,
    gate: Option<&Tensor<1>>,
) -> Result<(Tensor<D>, Moments), Inputs<D>> {
    let (x, grad, state) = inputs;
    let all_f32_flex = is_flex_f32(&x)
        && is_flex_f32(&grad)
        && state
            .as_ref()
            .is_none_or(|s| is_flex_f32(&s.first) && is_flex_f32(&s.second));
    // On flex the gate is a host value: reading it costs nothing.
    let open = match gate {
        None => Some(true),
        Some(g) if is_flex_f32(g) => match values(&primitive(g.clone())).first() {
            Some(&1.0) => Some(true),
            Some(&0.0) => Some(false),
            _ => None,
        },
        Some(_) => None,
    };
    let (true, Some(open)) = (all_f32_flex, open) else {
        return Err((x, grad, state));
    };
    if !open {
        // What the generic path's `x + 0 (x_new - x)` leaves: x, the moments (zeros
        // before the first step), one more step counted for bias correction.
        let numel = x.dims().iter().product::<usize>();
        let time = state.as_ref().map_or(0, |s| s.time) + 1;
        let zeros = || tensor(from_values(vec![0.0; numel], vec![numel]));
        let (first, second) = match state {
            Some(s) => (s.first, s.second),
            None => (zeros(), zeros()),
        };
        return Ok((
            x,
            Moments {
                first,
                second,
                time,
            },
        ));
    }
    // Each tensor is moved into its primitive, so nothing else holds its buffer unless
    // the autodiff graph or a caller still does (then `storage_mut` copies it first).
    let mut weights = dense(primitive(x));
    let grad = primitive(grad);
    let g = values(&grad);
    let time = state.as_ref().map_or(0, |s| s.time) + 1;
    let scalars = Pass {
        first_step: state.is_none(),
        s: Scalars::at(time, step.lr, step.beta_1, step.beta_2, step.epsilon),
    };
    let (mut first, mut second) = match state {
        Some(s) => (dense(primitive(s.first)), dense(primitive(s.second))),
        None => (
            from_values(vec![0.0; g.len()], vec![g.len()]),
            from_values(vec![0.0; g.len()], vec![g.len()]),
        ),
    };
    let (w, m, v) = (
        weights.storage_mut::<f32>(),
        first.storage_mut::<f32>(),
        second.storage_mut::<f32>(),
    );
    // Large parameters in two halves side by side (the arithmetic is per element, so
    // the split changes no bit).
    #[cfg(not(target_arch = "wasm32"))]
    if w.len() >= 1 << 16 && rayon::current_num_threads() > 1 {
        let half = w.len() / 2;
        let (w, w2) = w.split_at_mut(half);
        let (m, m2) = m.split_at_mut(half);
        let (v, v2) = v.split_at_mut(half);
        let (g, g2) = g.split_at(half);
        rayon::join(
            || scalars.apply(w, m, v, g),
            || scalars.apply(w2, m2, v2, g2),
        );
    } else {
        scalars.apply(w, m, v, &g);
    }
    #[cfg(target_arch = "wasm32")]
    scalars.apply(w, m, v, &g);
    let moments = Moments {
        first: tensor(first),
        second: tensor(second),
        time,
    };
    Ok((tensor(weights), moments))
}

/// One step's pass over a parameter: its [`Scalars`], and whether it is the first step
/// (no moments yet).
#[derive(Clone, Copy)]
struct Pass {
    first_step: bool,
    s: Scalars,
}

impl Pass {
    /// The update of every element, in one pass:
    /// m <- beta_1 m + (1 - beta_1) g (on the first step (1 - beta_1) g),
    /// v <- beta_2 v + (1 - beta_2) g^2 (on the first step (1 - beta_2) g^2),
    /// w <- w - (m / (sqrt(v / c_2) + epsilon)) (lr / c_1).
    fn apply(&self, w: &mut [f32], m: &mut [f32], v: &mut [f32], g: &[f32]) {
        let (first_step, s) = (self.first_step, self.s);
        for (((w, m), v), &g) in w.iter_mut().zip(m).zip(v).zip(g) {
            let (first, second) = if first_step {
                (g * s.keep_1, g * g * s.keep_2)
            } else {
                (
                    *m * s.beta_1 + g * s.keep_1,
                    *v * s.beta_2 + g * g * s.keep_2,
                )
            };
            *m = flush(first);
            *v = flush(second);
            let denom = (*v / s.correction_2).sqrt() + s.epsilon;
            *w -= *m / denom * s.step_size;
        }
    }
}

/// `x`, or 0 where it is subnormal (NaN stays NaN).
///
/// A weight whose gradient is 0 (a dead ReLU unit's) sees its first moment shrink by
/// beta_1 every step, into the subnormal range after some 800 steps, where every
/// arithmetic operation on it costs the CPU a microcode assist (tens to hundreds of
/// cycles): measured here, a Standard epoch on Fashion-MNIST went from 0.66 s to 2.5 s
/// over six epochs, most of it in this loop. Flushing changes no weight: a subnormal
/// moment moves a weight by at most `lr * 1.2e-38 / epsilon`, far below half an ulp
/// of any weight above 1e-25, and a subnormal second moment is negligible next to
/// epsilon in the denominator.
#[inline(always)]
fn flush(x: f32) -> f32 {
    if x.abs() < f32::MIN_POSITIVE { 0.0 } else { x }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};

    use super::*;
    use crate::optim::Adam;

    fn bits<const D: usize>(t: Tensor<D>) -> Vec<u32> {
        let values = t.into_data().try_to_vec::<f32>().unwrap();
        values.into_iter().map(f32::to_bits).collect()
    }

    #[test]
    fn the_fused_update_is_bit_identical() {
        let device = Device::flex();
        let adam = Adam::default();
        let wave = |n: usize, phase: f32| -> Vec<f32> {
            (0..n)
                .map(|i| (i as f32 * 0.37 + phase).sin() * 0.1)
                .collect()
        };
        let x0 = Tensor::<2>::from_data(TensorData::new(wave(15, 0.0), [3, 5]), &device);
        // The generic path keeps a handle on the start weights: the fused one must copy
        // them rather than write into the shared buffer.
        let (mut fused, mut generic) = ((x0.clone(), None), (x0.clone(), None));
        for step in 0..4 {
            // Gradients as a transposed (strided) view, as a matmul's backward gives them;
            // beta_1 switches as the schedule does at its decay start.
            let g = Tensor::<2>::from_data(TensorData::new(wave(15, step as f32), [5, 3]), &device)
                .transpose();
            let beta_1 = if step < 2 { 0.9 } else { 0.1 };
            let s = Step {
                lr: 1e-3,
                beta_1,
                beta_2: adam.beta_2,
                epsilon: adam.epsilon,
            };
            let Ok((xf, mf)) = update(&s, (fused.0, g.clone(), fused.1), None) else {
                panic!("flex tensors take the fused path");
            };
            let (xg, mg) = adam.generic_update(1e-3, beta_1, generic.0, g, generic.1, None);
            assert_eq!(bits(xf.clone()), bits(xg.clone()), "weights, step {step}");
            assert_eq!(
                bits(mf.first.clone()),
                bits(mg.first.clone()),
                "m, step {step}"
            );
            assert_eq!(
                bits(mf.second.clone()),
                bits(mg.second.clone()),
                "v, step {step}"
            );
            assert_eq!(mf.time, mg.time);
            assert_ne!(bits(xf.clone()), bits(x0.clone()), "the weights moved");
            (fused, generic) = ((xf, Some(mf)), (xg, Some(mg)));
        }
        assert_eq!(
            bits(x0),
            bits(Tensor::<2>::from_data(
                TensorData::new(wave(15, 0.0), [3, 5]),
                &device
            ))
        );
    }

    #[test]
    fn subnormal_moments_are_flushed_without_moving_any_weight() {
        let device = Device::flex();
        let adam = Adam::default();
        let t = |v: Vec<f32>| Tensor::<1>::from_data(TensorData::new(v, [3]), &device);
        // A dead unit's weights: zero gradient, moments on their way to underflow.
        let x = t(vec![0.5, -0.25, 1e-3]);
        let tiny = f32::MIN_POSITIVE * 1.05; // one step from subnormal
        let state = || Moments {
            first: t(vec![tiny, -tiny, 1e-3]),
            second: t(vec![1e-30, 1e-30, 1e-30]),
            time: 900,
        };
        let s = Step {
            lr: 1e-3,
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: adam.epsilon,
        };
        let grad = t(vec![0.0, 0.0, 0.0]);
        let Ok((xf, mf)) = update(&s, (x.clone(), grad.clone(), Some(state())), None) else {
            panic!("flex tensors take the fused path");
        };
        let (xg, mg) = adam.generic_update(1e-3, 0.9, x, grad, Some(state()), None);
        assert_eq!(bits(xf), bits(xg), "the weights are the generic path's");
        let generic_m = mg.first.into_data().try_to_vec::<f32>().unwrap();
        assert!(
            generic_m[0] != 0.0 && generic_m[0].abs() < f32::MIN_POSITIVE,
            "{generic_m:?}"
        );
        let fused_m = mf.first.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(fused_m[..2], [0.0, 0.0], "subnormal first moments flushed");
        assert_eq!(fused_m[2], generic_m[2], "normal ones untouched");
    }
}
