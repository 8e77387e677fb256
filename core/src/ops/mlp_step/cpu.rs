//! The MLP on flex without an autodiff graph: a training step of mean cross-entropy
//! with its gradients written out by hand, and a scoring pass over chunks in parallel.
//!
//! Why: on the CPU a TAkS epoch of the paper's MLP is 164 steps of 128 samples plus the
//! scoring of all n, and both spend most of their time outside the arithmetic. Through
//! burn's autodiff a step is some forty tensor operations, each allocating its output and
//! recording a graph node, and gemm's own threading barely helps matrices with 128 rows
//! (measured here: 143 GFLOP/s on one thread, 136 on two). By hand the step is five
//! matmuls and three host loops: bias and ReLU fused into one pass, softmax,
//! cross-entropy and its gradient into another, the ReLU mask into a third; and the two
//! large matmuls are split in column halves over the thread pool. Scoring runs whole chunks in
//! parallel (each chunk exactly as [`crate::nn::Mlp::forward`] computes it, so the logits are the
//! same bits), with bias and ReLU fused.
//!
//! The gradients are the exact ones of `mean(cross_entropy(forward(x), y))`, summed in a
//! different order than burn's backward pass, so a run's weights differ from the autodiff
//! path's in the last bits (`tests` checks the gradients against autodiff to 1e-5).
//! Everything returns `None` off flex; the caller then takes the GPU twin ([`super::gpu`]) or
//! the generic path.

use burn::module::ParamId;
use burn::optim::GradientsParams;
use burn::tensor::{Int, Tensor};

use super::{Layers, MlpStep as Step};
use crate::ops::flex_buffers::{dense, from_values, is_flex_f32, primitive, tensor, values};

/// The MLP's weights as plain flex tensors: `[in, 256]`, `[256]`, `[256, C]`, `[C]`.
struct Weights {
    w1: Tensor<2>,
    b1: Tensor<1>,
    w2: Tensor<2>,
    b2: Tensor<1>,
    ids: [ParamId; 4],
}

impl Layers<'_> {
    fn host_weights(&self) -> Option<Weights> {
        let (b1, b2) = (self.hidden.bias.as_ref()?, self.output.bias.as_ref()?);
        let w = Weights {
            w1: self.hidden.weight.val().inner(),
            b1: b1.val().inner(),
            w2: self.output.weight.val().inner(),
            b2: b2.val().inner(),
            ids: [self.hidden.weight.id, b1.id, self.output.weight.id, b2.id],
        };
        (is_flex_f32(&w.w1) && is_flex_f32(&w.b1) && is_flex_f32(&w.w2) && is_flex_f32(&w.b2))
            .then_some(w)
    }

    /// Gradients of the mean cross-entropy of `x` `[B, in]` against `labels` `[B]`, and
    /// the loss, by hand; `None` off flex.
    pub(crate) fn cpu_cross_entropy_step(
        &self,
        x: Tensor<2>,
        labels: Tensor<1, Int>,
    ) -> Option<Step> {
        let w = self.host_weights()?;
        if !is_flex_f32(&x) {
            return None;
        }
        let [batch, _] = x.dims();
        let labels: Vec<i64> = labels.into_data().iter::<i64>().collect();

        let (h, z) = forward(&w, x.clone(), split_columns);
        let z = primitive(z);
        let z = values(&z);
        let classes = z.len() / batch;

        // Softmax, cross-entropy and dL/dz = (softmax(z) - onehot(y)) / B in one pass.
        let mut dz = vec![0.0f32; batch * classes];
        let mut loss_sum = 0.0f32;
        for (r, (row, d)) in z
            .chunks_exact(classes)
            .zip(dz.chunks_exact_mut(classes))
            .enumerate()
        {
            let mut max = f32::NEG_INFINITY;
            for (dj, &zj) in d.iter_mut().zip(row) {
                *dj = zj;
                max = max.max(zj);
            }
            let y = labels[r] as usize;
            // -log softmax(z)_y = log(sum) - (z_y - max), finite however far z_y lies
            // below the maximum (log of its underflowed exp would not be); NaN logits
            // give a NaN loss.
            let shifted_y = d[y] - max;
            let mut sum = 0.0f32;
            for dj in d.iter_mut() {
                *dj = (*dj - max).exp();
                sum += *dj;
            }
            loss_sum += sum.ln() - shifted_y;
            for dj in d.iter_mut() {
                *dj /= sum * batch as f32;
            }
            d[y] -= 1.0 / batch as f32;
        }
        let loss = loss_sum / batch as f32;
        let dz = tensor::<2>(from_values(dz, vec![batch, classes]));

        // Backward.
        let dw2 = h.clone().transpose().matmul(dz.clone());
        let db2 = column_sums(&dz);
        let dh = relu_mask(dz.matmul(w.w2.transpose()), &h);
        let db1 = column_sums(&dh);
        let dw1 = split_columns(x.transpose(), dh);

        let mut grads = GradientsParams::new();
        grads.register(w.ids[0], dw1);
        grads.register(w.ids[1], db1);
        grads.register(w.ids[2], dw2);
        grads.register(w.ids[3], db2);
        // The mean times the batch, as the epoch summed it when this returned the mean
        // (same f32 operations, same bits).
        let loss_sum = tensor::<1>(from_values(vec![loss * batch as f32], vec![1]));
        Some(Step { grads, loss_sum })
    }

    /// Logits `[n, C]` of `n` rows, in chunks of `chunk` rows scored in parallel, the
    /// thread that scores a chunk also making its inputs (`inputs(start, len)`, f32 on
    /// flex): the scoring pass gathers and standardises each chunk where it is used, and
    /// no chunk's inputs wait in memory for another's. Each chunk's logits are the bits
    /// [`crate::nn::Mlp::forward`] gives for it. `None` off flex.
    pub(crate) fn cpu_logits_of(
        &self,
        n: usize,
        chunk: usize,
        inputs: impl Fn(usize, usize) -> Tensor<2> + Sync,
    ) -> Option<Tensor<2>> {
        let w = self.host_weights()?;
        let starts: Vec<usize> = (0..n).step_by(chunk.max(1)).collect();
        // One product per call: the chunks already run side by side.
        let one = |start: usize| forward(&w, inputs(start, chunk.min(n - start)), Tensor::matmul).1;
        Some(Tensor::cat(parallel_map(&starts, one), 0))
    }
}

/// The MLP's forward pass on flex's host tensors, for the step and the scoring alike:
/// the hidden layer h = relu(x w1 + b1) (its product by `matmul`) and the logits
/// z = h w2 + b2. Its twins: [`crate::nn::Mlp::forward`] (burn's graph, any backend) and
/// the wgpu step's kernels (`super::gpu`).
fn forward(
    w: &Weights,
    x: Tensor<2>,
    matmul: fn(Tensor<2>, Tensor<2>) -> Tensor<2>,
) -> (Tensor<2>, Tensor<2>) {
    let h = bias_relu(matmul(x, w.w1.clone()), &w.b1);
    let z = h.clone().matmul(w.w2.clone()) + w.b2.clone().unsqueeze::<2>();
    (h, z)
}

/// `a b`, the columns of `b` in two halves computed side by side where there are
/// threads. gemm's own threading gains little on these shapes; measured here for the
/// MLP's step, [128, 784] x [784, 256]: 164 GFLOP/s as one call, 236 as two column
/// halves (213 as two row halves); x^T dh, [784, 128] x [128, 256]: 51 and 191.
fn split_columns(a: Tensor<2>, b: Tensor<2>) -> Tensor<2> {
    let n = b.dims()[1];
    if n < 64 || threads() < 2 {
        return a.matmul(b);
    }
    let half = n / 2;
    let (left, right) = join(
        || a.clone().matmul(b.clone().narrow(1, 0, half)),
        || a.clone().matmul(b.clone().narrow(1, half, n - half)),
    );
    Tensor::cat(vec![left, right], 1)
}

/// Whether ReLU passes `v`, and so its gradient: `v` positive or NaN. burn's relu keeps
/// a NaN (its mask is `v <= 0`, false for NaN), and so does its backward pass; the WGSL
/// kernels' twin is `relu_passes` in `shaders/common.wgsl`.
fn relu_passes(v: f32) -> bool {
    v > 0.0 || v.is_nan()
}

/// relu(h + bias), bias broadcast over rows, in one pass (in place when `h` is unshared).
fn bias_relu(h: Tensor<2>, bias: &Tensor<1>) -> Tensor<2> {
    let bias = primitive(bias.clone());
    let bias = values(&bias);
    let mut h = dense(primitive(h));
    for row in h.storage_mut::<f32>().chunks_exact_mut(bias.len()) {
        for (v, &b) in row.iter_mut().zip(bias.iter()) {
            let s = *v + b;
            *v = if relu_passes(s) { s } else { 0.0 };
        }
    }
    tensor(h)
}

/// `grad` where ReLU passed its output `out`, else 0: relu's backward.
fn relu_mask(grad: Tensor<2>, out: &Tensor<2>) -> Tensor<2> {
    let out = primitive(out.clone());
    let out = values(&out);
    let mut grad = dense(primitive(grad));
    for (g, &o) in grad.storage_mut::<f32>().iter_mut().zip(out.iter()) {
        if !relu_passes(o) {
            *g = 0.0;
        }
    }
    tensor(grad)
}

/// Sum over rows: `[B, C]` -> `[C]`.
fn column_sums(t: &Tensor<2>) -> Tensor<1> {
    let [_, c] = t.dims();
    let p = primitive(t.clone());
    let v = values(&p);
    let mut sums = vec![0.0f32; c];
    for row in v.chunks_exact(c) {
        for (s, &x) in sums.iter_mut().zip(row) {
            *s += x;
        }
    }
    tensor(from_values(sums, vec![c]))
}

fn threads() -> usize {
    crate::cpu_threads()
}

#[cfg(not(target_arch = "wasm32"))]
fn join<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    rayon::join(a, b)
}

#[cfg(target_arch = "wasm32")]
fn join<A, B>(a: impl FnOnce() -> A, b: impl FnOnce() -> B) -> (A, B) {
    (a(), b())
}

/// `f` of every item, in order, spread over the thread pool where there is one.
#[cfg(not(target_arch = "wasm32"))]
fn parallel_map<T: Send>(items: &[usize], f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    use rayon::prelude::*;
    items.par_iter().map(|&i| f(i)).collect()
}

#[cfg(target_arch = "wasm32")]
fn parallel_map<T>(items: &[usize], f: impl Fn(usize) -> T) -> Vec<T> {
    items.iter().map(|&i| f(i)).collect()
}

#[cfg(test)]
pub(super) mod tests {
    use burn::tensor::{Device, Distribution, TensorData};

    use super::*;
    use crate::nn::Mlp;
    use crate::ops::cross_entropy::per_sample;
    use crate::test_support::{host, mlp, random};

    /// The hand-written gradients against burn's autodiff on the same batch.
    #[test]
    fn gradients_match_autodiff() {
        check_against_autodiff(&Device::flex(), |mlp, x, y| {
            mlp.layers().cpu_cross_entropy_step(x, y)
        });
    }

    /// `step`'s gradients and loss on `device` (flex or wgpu) against burn's autodiff on
    /// the same batch, to 1e-5; shared with the GPU twin's test.
    pub(in crate::ops) fn check_against_autodiff(
        device: &Device,
        step: impl Fn(&Mlp, Tensor<2>, Tensor<1, Int>) -> Option<Step>,
    ) {
        let mlp = mlp(40, 7, 11, &device.clone().autodiff());
        let (batch, classes) = (130, 7);
        let x = random([batch, 40], Distribution::Normal(0.0, 1.0), 1, device);
        let labels: Vec<i64> = (0..batch as i64).map(|i| (i * 5 + 3) % classes).collect();
        let y = Tensor::<1, Int>::from_data(TensorData::new(labels, [batch]), device);

        let by_hand = step(&mlp, x.clone(), y.clone()).expect("the device's by-hand path");
        let loss = per_sample(mlp.forward(x.clone()), &y).mean();
        let mut autodiff = GradientsParams::from_grads(loss.clone().backward(), &mlp);
        let expected_loss = loss.into_data().iter::<f32>().next().unwrap();
        let got_loss = by_hand.loss_sum.into_data().iter::<f32>().next().unwrap() / batch as f32;
        assert!(
            (got_loss - expected_loss).abs() < 1e-5,
            "{got_loss} vs {expected_loss}"
        );

        let mut by_hand = by_hand.grads;
        let ids = [
            mlp.layers().hidden.weight.id,
            mlp.layers().hidden.bias.as_ref().unwrap().id,
            mlp.layers().output.weight.id,
            mlp.layers().output.bias.as_ref().unwrap().id,
        ];
        for (i, id) in ids.into_iter().enumerate() {
            let (a, b) = if i % 2 == 0 {
                (
                    host(by_hand.remove::<2>(id).unwrap()),
                    host(autodiff.remove::<2>(id).unwrap()),
                )
            } else {
                let f = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap();
                (
                    f(by_hand.remove::<1>(id).unwrap()),
                    f(autodiff.remove::<1>(id).unwrap()),
                )
            };
            assert_eq!(a.len(), b.len());
            assert!(b.iter().any(|v| *v != 0.0), "parameter {i} has a gradient");
            for (j, (a, b)) in a.iter().zip(&b).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                    "parameter {i}[{j}]: {a} vs {b}"
                );
            }
        }
    }

    /// A sample whose label's logit lies far below the maximum (a confident fit to a
    /// wrong label) has a large but finite loss, as burn's log-softmax gives it.
    #[test]
    fn the_loss_stays_finite_far_from_the_label() {
        check_far_label(&Device::flex(), |mlp, x, y| {
            mlp.layers().cpu_cross_entropy_step(x, y)
        });
    }

    /// The far-label case on `device`; shared with the GPU twin's test.
    pub(in crate::ops) fn check_far_label(
        device: &Device,
        step: impl Fn(&Mlp, Tensor<2>, Tensor<1, Int>) -> Option<Step>,
    ) {
        let mlp = mlp(4, 3, 12, device);
        // Inputs large enough that the logits spread by hundreds.
        let x = Tensor::<2>::from_data(
            TensorData::new(
                vec![
                    3000.0f32, -3000.0, 2500.0, -2500.0, -3000.0, 3000.0, -2500.0, 2500.0,
                ],
                [2, 4],
            ),
            device,
        );
        let spread = |row: &[f32]| {
            let max = row.iter().cloned().fold(f32::MIN, f32::max);
            let min = row.iter().cloned().fold(f32::MAX, f32::min);
            (max - min, row.iter().position(|v| *v == min).unwrap())
        };
        let logits = host(mlp.forward(x.clone()));
        // The weights are random: where they spread these inputs' logits by less than
        // 150, scale the inputs up (far from zero the ReLU network is close to linear
        // in its input, so the spreads grow with them).
        let narrowest = spread(&logits[..3]).0.min(spread(&logits[3..]).0);
        let x = match narrowest < 150.0 {
            true => x.mul_scalar(300.0 / narrowest.max(1.0)),
            false => x,
        };
        let logits = host(mlp.forward(x.clone()));
        let (gap0, worst0) = spread(&logits[..3]);
        let (gap1, worst1) = spread(&logits[3..]);
        assert!(
            gap0 > 120.0 && gap1 > 120.0,
            "logit spreads {gap0}, {gap1}: exp underflows past ~104"
        );
        let labels = vec![worst0 as i64, worst1 as i64];
        let y = Tensor::<1, Int>::from_data(TensorData::new(labels, [2]), device);
        let expected = per_sample(mlp.forward(x.clone()), &y).mean();
        let expected = expected.into_data().iter::<f32>().next().unwrap();
        let step = step(&mlp, x, y).expect("the device's by-hand path");
        let got = step.loss_sum.into_data().iter::<f32>().next().unwrap() / 2.0;
        assert!(
            expected.is_finite() && got.is_finite(),
            "{got} vs {expected}"
        );
        assert!(
            (got - expected).abs() <= 1e-4 * expected.abs(),
            "{got} vs {expected}"
        );
    }

    /// A NaN input reaches every gradient, as in burn's autodiff.
    #[test]
    fn a_nan_input_spoils_every_gradient() {
        check_nan_input(&Device::flex(), |mlp, x, y| {
            mlp.layers().cpu_cross_entropy_step(x, y)
        });
    }

    /// The NaN case on `device`; shared with the GPU twin's test. One NaN in the first
    /// sample makes its every hidden pre-activation NaN, which ReLU keeps and whose
    /// gradient it passes (burn's relu masks only `v <= 0`, false for NaN), so the hidden
    /// bias's gradient is NaN in every unit, as are the loss and the output's gradients. A
    /// ReLU backward that read NaN as "not positive" would leave that bias's gradient
    /// finite.
    pub(in crate::ops) fn check_nan_input(
        device: &Device,
        step: impl Fn(&Mlp, Tensor<2>, Tensor<1, Int>) -> Option<Step>,
    ) {
        let mlp = mlp(6, 3, 14, device);
        let mut x = host(random([4, 6], Distribution::Normal(0.0, 1.0), 3, device));
        x[0] = f32::NAN;
        let x = Tensor::<2>::from_data(TensorData::new(x, [4, 6]), device);
        let y = Tensor::<1, Int>::from_data(TensorData::new(vec![0i64, 1, 2, 0], [4]), device);
        let mut step = step(&mlp, x, y).expect("the device's by-hand path");
        assert!(host(step.loss_sum).iter().all(|v| v.is_nan()), "the loss");
        let bias = |b: &Option<burn::module::Param<Tensor<1>>>| b.as_ref().unwrap().id;
        let layers = mlp.layers();
        for (name, id) in [
            ("hidden", bias(&layers.hidden.bias)),
            ("output", bias(&layers.output.bias)),
        ] {
            let grad = host(step.grads.remove::<1>(id).expect("a bias gradient"));
            assert!(
                grad.iter().all(|v| v.is_nan()),
                "the {name} bias's gradient: {grad:?}"
            );
        }
    }

    /// The parallel scoring pass gives exactly the logits of the ordinary forward pass.
    #[test]
    fn host_logits_are_the_forward_pass_bits() {
        let device = Device::flex();
        let mlp = mlp(30, 5, 13, &device);
        let x = random([1000, 30], Distribution::Normal(0.0, 1.0), 2, &device);
        let chunk = 256;
        let expected: Vec<Tensor<2>> = (0..1000)
            .step_by(chunk)
            .map(|s| mlp.forward(x.clone().narrow(0, s, chunk.min(1000 - s))))
            .collect();
        let expected = host(Tensor::cat(expected, 0));
        let got = mlp
            .layers()
            .cpu_logits_of(1000, chunk, |s, len| x.clone().narrow(0, s, len));
        let got = host(got.expect("flex"));
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&expected));
    }
}
