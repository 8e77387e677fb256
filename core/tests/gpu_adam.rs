//! Adam's packed step on a wgpu device (lavapipe here) against the generic tensor update,
//! and its launch count; the packed step of a mixed-precision run, which scales, checks
//! and skips on the device, against the plain one.

use std::sync::{Mutex, PoisonError};

use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Distribution, Tensor, TensorData};
use taks_core::gpu;
use taks_core::ops::adam::gpu::Scaling;
use taks_core::optim::Adam;

#[derive(Module, Debug)]
struct Small {
    linear: Linear,
    conv: Conv2d,
    norm: BatchNorm,
    scale: Param<Tensor<1>>,
}

/// `draw()` from burn's one random generator seeded with `seed`, one test at a time:
/// every random value of this file is drawn through it, so each test gets the same
/// values whichever of the test threads draws first.
fn seeded<T>(device: &Device, seed: u64, draw: impl FnOnce() -> T) -> T {
    static DRAWING: Mutex<()> = Mutex::new(());
    let _drawing = DRAWING.lock().unwrap_or_else(PoisonError::into_inner);
    device.seed(seed);
    draw()
}

impl Small {
    fn new(device: &Device) -> Self {
        seeded(device, 1, || Small {
            linear: LinearConfig::new(5, 7).init(device),
            conv: Conv2dConfig::new([2, 3], [3, 3]).init(device),
            norm: BatchNormConfig::new(3).init(device),
            scale: Param::from_tensor(Tensor::random([300], Distribution::Default, device)),
        })
    }
}

/// The weights [`grads`]'s loss gives the convolution's weights, random.
fn loss_weights(device: &Device) -> [Tensor<4>; 2] {
    seeded(device, 2, || {
        [0, 1].map(|_| {
            Tensor::<4>::random([3, 2, 3, 3], Distribution::Normal(0.0, 1.0), device).detach()
        })
    })
}

/// A loss that weighs every weight differently, and its gradients.
fn grads(model: &Small, weights: &[Tensor<4>; 2], shift: f32) -> GradientsParams {
    scaled_grads(model, weights, shift, 1.0)
}

/// [`grads`] of the loss multiplied by `scale`, as a mixed-precision step scales it.
fn scaled_grads(
    model: &Small,
    weights: &[Tensor<4>; 2],
    shift: f32,
    scale: f32,
) -> GradientsParams {
    let linear = model.linear.weight.val();
    let loss = (linear.clone() * linear).sum()
        + (model.conv.weight.val() * weights[0].clone()).sum()
        + (model.conv.weight.val().powf_scalar(2.0) * weights[1].clone()).sum() * shift
        + model.norm.gamma.val().sum() * shift
        + (model.norm.beta.val() - 0.3).powf_scalar(2.0).sum()
        + model.linear.bias.as_ref().unwrap().val().sum()
        + model.scale.val().sum() * 0.5;
    GradientsParams::from_grads(loss.mul_scalar(scale).backward(), model)
}

fn flat(model: &Small) -> Vec<Vec<f32>> {
    let v = |t: Tensor<1>| t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
    vec![
        v(model.linear.weight.val().flatten(0, 1)),
        v(model.linear.bias.as_ref().unwrap().val()),
        v(model.conv.weight.val().flatten(0, 3)),
        v(model.conv.bias.as_ref().unwrap().val()),
        v(model.norm.gamma.val()),
        v(model.norm.beta.val()),
        v(model.scale.val()),
    ]
}

/// Every stepped parameter's first and second moments, in order.
fn moments(adam: &Adam) -> Vec<Vec<f32>> {
    let read = |t: &Tensor<1>| t.clone().into_data().try_to_vec::<f32>().unwrap();
    let states = adam.moments().iter().flatten();
    states
        .flat_map(|m| [read(&m.first), read(&m.second)])
        .collect()
}

/// Three steps of the packed path (ungated) and of the generic update (gated by 1, which
/// takes the tensor operations) from the same weights: the same weights and moments
/// after every step, to f32 rounding. The first step fills the packed buffers one
/// parameter at a time; every later step is one launch, the gradients as they are.
#[test]
fn packed_adam_is_the_generic_update() {
    let device = gpu::direct::start().expect("a wgpu adapter").0.autodiff();
    let start = Small::new(&device);
    let weights = loss_weights(&device);
    let (mut packed, mut generic) = (start.clone(), start);
    let (mut adam_packed, mut adam_generic) = (Adam::default(), Adam::default());
    let gate = Tensor::<1>::ones([1], &device).inner();
    for step in 0..3 {
        let shift = 1.0 + step as f32;
        let g = grads(&packed, &weights, shift);
        let (stepped, launches) =
            gpu::launches::count(&device, || adam_packed.update(1e-2, 0.9, packed, g, None));
        packed = stepped;
        let g = grads(&generic, &weights, shift);
        generic = adam_generic.update(1e-2, 0.9, generic, g, Some(gate.clone()));
        match step {
            // Six parameters with a gradient (the loss leaves out the convolution's
            // bias), a launch each, and two zeroed moments each (filled by one fused
            // kernel under burn's fusion).
            0 => {
                let zeroing = if cfg!(feature = "fusion") { 1 } else { 2 };
                assert_eq!(launches, 6 * (1 + zeroing), "step 1")
            }
            _ => assert_eq!(launches, 1, "step {}: one packed launch", step + 1),
        }
        for (i, (a, b)) in flat(&packed).iter().zip(flat(&generic)).enumerate() {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!(
                    (x - y).abs() <= 1e-6 * y.abs().max(1.0),
                    "step {}, parameter {i}: {x} vs {y}",
                    step + 1
                );
            }
        }
        for (i, (a, b)) in adam_packed
            .moments()
            .iter()
            .zip(adam_generic.moments())
            .enumerate()
        {
            let (Some(a), Some(b)) = (a, b) else {
                assert!(
                    a.is_none() && b.is_none(),
                    "moment {i}: stepped by one only"
                );
                continue;
            };
            assert_eq!(a.time, b.time);
            for (x, y) in [(&a.first, &b.first), (&a.second, &b.second)] {
                let x = x.clone().into_data().try_to_vec::<f32>().unwrap();
                let y = y.clone().into_data().try_to_vec::<f32>().unwrap();
                // Relative to each element, but not below a thousandth of the tensor's
                // largest: the two paths' weights differ by rounding after a step, so a
                // gradient that cancels to near zero (and its square, the second
                // moment) differs by more than 1e-5 of itself (2.4e-5 was seen).
                let largest = y.iter().fold(0f32, |m, q| m.max(q.abs()));
                let worst = x.iter().zip(&y).fold(0f32, |m, (p, q)| {
                    m.max((p - q).abs() / q.abs().max(1e-3 * largest).max(1e-12))
                });
                assert!(worst <= 1e-5, "step {}, moment {i}: {worst}", step + 1);
            }
        }
    }
    // Off wgpu the packed path steps nothing: the flex step is the per-parameter one.
    let flex = Device::flex().autodiff();
    let small = Small::new(&flex);
    let weights = weights.map(|w| w.to_device(&flex));
    let g = grads(&small, &weights, 1.0);
    let before = flat(&small);
    let (after, launches) = gpu::launches::count(&device, || {
        Adam::default().update(1e-2, 0.9, small, g, None)
    });
    assert_eq!(launches, 0);
    assert_ne!(flat(&after), before);
}

/// The packed step reads an f16 gradient as it is (a mixed-precision MLP step's weight
/// gradients): in one launch, with no cast, and with the very weights and moments its
/// f32 copy gives, step after step.
#[test]
fn packed_adam_reads_f16_gradients() {
    use burn::tensor::{DType, FloatDType};

    let device = gpu::direct::start().expect("a wgpu adapter").0.autodiff();
    let start = Small::new(&device);
    let weights = loss_weights(&device);
    let (mut half, mut full) = (start.clone(), start);
    let (mut adam_half, mut adam_full) = (Adam::default(), Adam::default());
    let id = half.linear.weight.id;
    for step in 0..3 {
        let shift = 1.0 + step as f32;
        // The linear weight's gradient rounded to f16: as it is for one run, back in
        // f32 for the other.
        let mut g_half = grads(&half, &weights, shift);
        let g16 = g_half.remove::<2>(id).unwrap().cast(FloatDType::F16);
        g_half.register(id, g16.clone());
        let mut g_full = grads(&full, &weights, shift);
        g_full.remove::<2>(id).unwrap();
        g_full.register(id, g16.cast(FloatDType::F32));
        assert_eq!(g_half.get::<2>(id).unwrap().dtype(), DType::F16);

        let (stepped, kernels) = gpu::launches::count_by_kernel(&device, || {
            adam_half.update(1e-2, 0.9, half, g_half, None)
        });
        half = stepped;
        full = adam_full.update(1e-2, 0.9, full, g_full, None);
        if step > 0 {
            let names: Vec<&str> = kernels.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(
                names,
                ["taks_adam_packed_6_f16_100000"],
                "step {}",
                step + 1
            );
        }
        assert_eq!(flat(&half), flat(&full), "step {}", step + 1);
        assert_eq!(
            moments(&adam_half),
            moments(&adam_full),
            "step {}",
            step + 1
        );
    }
}

/// The scaler words of `shaders/adam_packed.wgsl` (two states of scale, good steps,
/// skipped steps and a spare word, then a found flag per state) on `device`.
fn scaler(words: [u32; 10], device: &Device) -> Tensor<1> {
    let words = words.map(f32::from_bits).to_vec();
    Tensor::from_data(TensorData::new(words, [10]), device)
}

fn words(scaler: &Tensor<1>) -> Vec<u32> {
    let values = scaler.clone().into_data().try_to_vec::<f32>().unwrap();
    values.into_iter().map(f32::to_bits).collect()
}

/// A mixed-precision run's packed step against the plain one, after a first plain step
/// of each (the scaled step needs the packed buffers of one):
/// - a step whose gradients overflowed (the loss times infinity) leaves every weight and
///   moment as it was, in two launches (the check, the step), halves the scale, zeroes
///   the good steps, counts a skip and leaves the next state's found flag clear;
/// - the next step, its loss scaled by the halved scale, divides it out and takes its
///   bias correction from the steps taken (2, not 3): the plain run's second step, to
///   f32 rounding (the device computes beta^t with `pow`, the host by multiplying);
/// - a finite step counts a good step, and at `interval` of them the scale doubles;
/// - the step numbers, with the skip taken back, are the plain run's;
/// - a step of another set of parameters is refused, for the host to decide.
#[test]
fn a_scaled_step_is_checked_and_skipped_on_the_device() {
    let plain = gpu::direct::start().expect("a wgpu adapter").0;
    let device = plain.clone().autodiff();
    let start = Small::new(&device);
    let weights = loss_weights(&device);
    let (mut scaled, mut reference) = (start.clone(), start);
    let (mut adam_scaled, mut adam_reference) = (Adam::default(), Adam::default());
    let g = grads(&scaled, &weights, 1.0);
    scaled = adam_scaled.update(1e-2, 0.9, scaled, g, None);
    let g = grads(&reference, &weights, 1.0);
    reference = adam_reference.update(1e-2, 0.9, reference, g, None);

    let mut state = [0u32; 10];
    state[0] = 8f32.to_bits();
    state[1] = 5;
    let words_now = scaler(state, &plain);
    let scaling = |parity, interval| Scaling {
        scaler: &words_now,
        parity,
        lr: 1e-2,
        interval,
    };
    let before = flat(&scaled);
    let moments_before = moments(&adam_scaled);
    let g = scaled_grads(&scaled, &weights, 2.0, f32::INFINITY);
    let (stepped, launches) = gpu::launches::count(&device, || {
        let scaling = scaling(0, 2000);
        adam_scaled
            .update_scaled(1e-2, 0.9, scaled, g, scaling)
            .ok()
    });
    scaled = stepped.expect("the packed step runs on lavapipe");
    assert_eq!(launches, 2, "the check and the step");
    assert_eq!(
        flat(&scaled),
        before,
        "an overflowed step moved the weights"
    );
    assert_eq!(moments(&adam_scaled), moments_before, "or the moments");
    let w = words(&words_now);
    assert_eq!(f32::from_bits(w[4]), 4.0, "the scale halves");
    assert_eq!(&w[5..7], &[0, 1], "good steps zeroed, one skip counted");
    assert_eq!(&w[8..10], &[1, 0], "found this step; clear for the next");

    let g = scaled_grads(&scaled, &weights, 2.0, 4.0);
    scaled = adam_scaled
        .update_scaled(1e-2, 0.9, scaled, g, scaling(1, 2))
        .ok()
        .unwrap();
    let g = grads(&reference, &weights, 2.0);
    reference = adam_reference.update(1e-2, 0.9, reference, g, None);
    let w = words(&words_now);
    assert_eq!(f32::from_bits(w[0]), 4.0);
    assert_eq!(&w[1..3], &[1, 1], "a good step, the skip still counted");
    assert_eq!(w[8], 0, "the next step's found flag is clear");
    let close = |a: &[Vec<f32>], b: &[Vec<f32>], what: &str| {
        for (i, (a, b)) in a.iter().zip(b).enumerate() {
            for (x, y) in a.iter().zip(b) {
                let tolerance = 1e-6 * y.abs().max(1.0);
                assert!(
                    (x - y).abs() <= tolerance,
                    "{what}, parameter {i}: {x} vs {y}"
                );
            }
        }
    };
    close(&flat(&scaled), &flat(&reference), "after the scaled step");
    assert_ne!(flat(&scaled), before);

    let g = scaled_grads(&scaled, &weights, 3.0, 4.0);
    scaled = adam_scaled
        .update_scaled(1e-2, 0.9, scaled, g, scaling(0, 2))
        .ok()
        .unwrap();
    let g = grads(&reference, &weights, 3.0);
    reference = adam_reference.update(1e-2, 0.9, reference, g, None);
    let w = words(&words_now);
    assert_eq!(
        f32::from_bits(w[4]),
        8.0,
        "two good steps in a row double the scale"
    );
    assert_eq!(&w[5..7], &[0, 1]);
    close(&flat(&scaled), &flat(&reference), "after the next");

    let times =
        |adam: &Adam| -> Vec<usize> { adam.moments().iter().flatten().map(|m| m.time).collect() };
    assert_eq!(
        times(&adam_scaled),
        vec![4; 6],
        "every step counted until taken back"
    );
    adam_scaled.forget_skipped(1);
    assert_eq!(times(&adam_scaled), times(&adam_reference));

    // A step of other parameters (one without a gradient) is left to the host, which
    // takes the device's skips back first: only those stepped since count them.
    let mut g = scaled_grads(&scaled, &weights, 4.0, 8.0);
    g.remove::<1>(scaled.scale.id);
    let refused = adam_scaled.update_scaled(1e-2, 0.9, scaled, g, scaling(1, 2));
    assert!(
        refused.is_err(),
        "another set of parameters stepped on the device"
    );
}

/// A scaled step with f16 weight gradients (the MLP's f16 step by hand) keeps those
/// weights' new values in f16 too, for the next step to multiply by: bit for bit what
/// casting the new weights gives, after a finite step and after a skipped one (the
/// weights as they were), in the same two launches and with no cast. A parameter whose
/// gradient came in f32 has no copy, nor has a tensor that is not the step's weight, such
/// as a weight put in place since (the step then casts it itself).
#[test]
fn a_scaled_step_keeps_f16_weights_of_f16_gradients() {
    use burn::tensor::FloatDType;

    let plain = gpu::direct::start().expect("a wgpu adapter").0;
    let device = plain.clone().autodiff();
    let mut model = Small::new(&device);
    let weights = loss_weights(&device);
    let mut adam = Adam::default();
    let mut state = [0u32; 10];
    state[0] = 8f32.to_bits();
    let scaler = scaler(state, &plain);
    // The first and the third parameter stepped (the second lies between them, so the
    // third's copy is not at its packed offset's first value).
    let flat_weights = |m: &Small| {
        [
            m.linear.weight.val().inner().reshape([5 * 7]),
            m.conv.weight.val().inner().reshape([3 * 2 * 3 * 3]),
        ]
    };
    let bits = |t: Tensor<1>| -> Vec<u32> {
        let t = t.cast(FloatDType::F32).into_data();
        t.try_to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f32::to_bits)
            .collect()
    };
    assert!(
        adam.low_copy(&flat_weights(&model)[0]).is_none(),
        "no step yet"
    );
    // Finite, overflowed, finite: the scaler's parity alternates.
    for (step, scale) in [8.0, f32::INFINITY, 4.0].into_iter().enumerate() {
        let mut g = scaled_grads(&model, &weights, 1.0 + step as f32, scale);
        let g16 = g
            .remove::<2>(model.linear.weight.id)
            .unwrap()
            .cast(FloatDType::F16);
        g.register(model.linear.weight.id, g16);
        let g16 = g
            .remove::<4>(model.conv.weight.id)
            .unwrap()
            .cast(FloatDType::F16);
        g.register(model.conv.weight.id, g16);
        let before = flat_weights(&model);
        let scaling = Scaling {
            scaler: &scaler,
            parity: (step % 2) as u32,
            lr: 1e-2,
            interval: 2000,
        };
        let (stepped, kernels) = gpu::launches::count_by_kernel(&device, || {
            adam.update_scaled(1e-2, 0.9, model, g, scaling).ok()
        });
        model = stepped.expect("the packed step runs on lavapipe");
        if step > 0 {
            let names: Vec<(&str, usize)> = kernels.iter().map(|(k, n)| (k.as_str(), *n)).collect();
            assert_eq!(
                names,
                [("taks_adam_packed_6_f16_101000", 2)],
                "step {}",
                step + 1
            );
        }
        for (weight, before) in flat_weights(&model).into_iter().zip(before) {
            match scale.is_finite() {
                true => assert_ne!(bits(weight.clone()), bits(before), "step {}", step + 1),
                false => assert_eq!(bits(weight.clone()), bits(before), "step {}", step + 1),
            }
            let copy = adam
                .low_copy(&weight)
                .expect("an f16 gradient's weight has a copy");
            assert_eq!(copy.dtype(), burn::tensor::DType::F16);
            assert_eq!(
                bits(copy),
                bits(weight.clone().cast(FloatDType::F16)),
                "step {}: the copy is the cast",
                step + 1
            );
            assert!(adam.low_copy(&(weight + 0.0)).is_none(), "another tensor");
        }
        let scale = model.scale.val().inner();
        assert!(adam.low_copy(&scale).is_none(), "an f32 gradient's weight");
    }
}
