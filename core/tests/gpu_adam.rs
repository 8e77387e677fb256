//! Adam's packed step on a wgpu device (lavapipe here) against the generic tensor update,
//! and its launch count. One test in its own binary: launches are counted process-wide.

use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Distribution, Tensor};
use taks_core::gpu;
use taks_core::optim::Adam;

#[derive(Module, Debug)]
struct Small {
    linear: Linear,
    conv: Conv2d,
    norm: BatchNorm,
    scale: Param<Tensor<1>>,
}

/// A loss that weighs every weight differently, and its gradients.
fn grads(model: &Small, weights: &[Tensor<4>; 2], shift: f32) -> GradientsParams {
    let linear = model.linear.weight.val();
    let loss = (linear.clone() * linear).sum()
        + (model.conv.weight.val() * weights[0].clone()).sum()
        + (model.conv.weight.val().powf_scalar(2.0) * weights[1].clone()).sum() * shift
        + model.norm.gamma.val().sum() * shift
        + (model.norm.beta.val() - 0.3).powf_scalar(2.0).sum()
        + model.linear.bias.as_ref().unwrap().val().sum()
        + model.scale.val().sum() * 0.5;
    GradientsParams::from_grads(loss.backward(), model)
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

/// Three steps of the packed path (ungated) and of the generic update (gated by 1, which
/// takes the tensor operations) from the same weights: the same weights and moments
/// after every step, to f32 rounding. The first step fills the packed buffers one
/// parameter at a time; every later step is one launch, the gradients as they are.
#[test]
fn packed_adam_is_the_generic_update() {
    let device = gpu::direct::start().expect("a wgpu adapter").0.autodiff();
    let start = Small {
        linear: LinearConfig::new(5, 7).init(&device),
        conv: Conv2dConfig::new([2, 3], [3, 3]).init(&device),
        norm: BatchNormConfig::new(3).init(&device),
        scale: Param::from_tensor(Tensor::random([300], Distribution::Default, &device)),
    };
    let weights = [0, 1].map(|_| {
        Tensor::<4>::random([3, 2, 3, 3], Distribution::Normal(0.0, 1.0), &device).detach()
    });
    let (mut packed, mut generic) = (start.clone(), start);
    let (mut adam_packed, mut adam_generic) = (Adam::default(), Adam::default());
    let gate = Tensor::<1>::ones([1], &device).inner();
    for step in 0..3 {
        let shift = 1.0 + step as f32;
        let g = grads(&packed, &weights, shift);
        let (stepped, launches) =
            gpu::launches::count(|| adam_packed.step(1e-2, 0.9, packed, g, None));
        packed = stepped;
        let g = grads(&generic, &weights, shift);
        generic = adam_generic.step(1e-2, 0.9, generic, g, Some(gate.clone()));
        match step {
            // Six parameters with a gradient (the loss leaves out the convolution's
            // bias), a launch each, and two zeroed moments each.
            0 => assert_eq!(launches, 6 * 3, "step 1"),
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
    let small = Small {
        linear: LinearConfig::new(5, 7).init(&flex),
        conv: Conv2dConfig::new([2, 3], [3, 3]).init(&flex),
        norm: BatchNormConfig::new(3).init(&flex),
        scale: Param::from_tensor(Tensor::random([300], Distribution::Default, &flex)),
    };
    let weights = weights.map(|w| w.to_device(&flex));
    let g = grads(&small, &weights, 1.0);
    let before = flat(&small);
    let (after, launches) =
        gpu::launches::count(|| Adam::default().step(1e-2, 0.9, small, g, None));
    assert_eq!(launches, 0);
    assert_ne!(flat(&after), before);
}
