//! ResNet-18 on a wgpu device (Mesa lavapipe in CI) against the same network on flex:
//! with the same weights, the forward pass in training mode, the cross-entropy, one Adam
//! step and the forward pass in eval mode after it agree within float rounding.
//!
//! 32x32 inputs keep it fast on a software adapter; every kind of layer ResNet-18 has at
//! 224x224 (the 7x7 stride-2 stem, max pooling, the stride-2 1x1 downsampling shortcut,
//! adaptive average pooling, batch norm in both modes) runs here too. The names and
//! shapes of its tensors are checked by the CPU audit test (`native/tests/audit/folders.rs`).

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData};
use taks_core::gpu::launches::direct_launches;
use taks_core::nn::{Architecture, Classifier};
use taks_core::ops::cross_entropy::per_sample;
use taks_core::optim::Adam;
use taks_core::params::{float_tensors, replace_float_tensors};
use taks_core::plan::Switches;
use taks_core::rng::SplitMix64;

const SHAPE: [usize; 3] = [3, 32, 32];
const BATCH: usize = 8;
const CLASSES: usize = 4;

fn host(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

/// The largest |a - b| over the largest |a|: rounding differences of two backends stay
/// far below 1e-3 of the values' scale; a wrong layer is of the order of 1.
fn relative_gap(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let scale = a.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let gap = a
        .iter()
        .zip(b)
        .fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
    gap / scale
}

/// What one training step shows of a network.
struct Step {
    /// Logits of the training-mode forward pass (batch statistics).
    trained: Vec<f32>,
    /// Eval-mode logits before and after one Adam step (lr 1e-3).
    before: Vec<f32>,
    after: Vec<f32>,
    loss: f32,
}

fn one_step(mut net: Classifier, device: &Device) -> Step {
    let mut rng = SplitMix64::new(7);
    let values: Vec<f32> = (0..BATCH * SHAPE.iter().product::<usize>())
        .map(|_| rng.next_f64() as f32 * 2.0 - 1.0)
        .collect();
    let labels: Vec<i32> = (0..BATCH).map(|i| (i % CLASSES) as i32).collect();
    let dims = [BATCH, SHAPE.iter().product()];
    let x = Tensor::<2>::from_data(TensorData::new(values.clone(), dims), device);
    let y = Tensor::<1, Int>::from_data(TensorData::new(labels, [BATCH]), device);

    let logits = net.forward(x.clone());
    let loss = per_sample(logits.clone(), &y).mean();
    let loss_value = loss.clone().into_data().try_to_vec::<f32>().unwrap()[0];
    // After the training-mode pass, so both eval passes see the same running statistics.
    let before = host(net.valid().forward(x.clone().without_autodiff()));
    let grads = GradientsParams::from_grads(loss.backward(), &net);
    net = Adam::default().update(1e-3, 0.9, net, grads, None);
    Step {
        trained: host(logits.detach().without_autodiff()),
        before,
        after: host(net.valid().forward(x.without_autodiff())),
        loss: loss_value,
    }
}

#[test]
fn resnet18_forward_and_one_adam_step_agree_on_wgpu_and_flex() {
    let flex = Device::flex();
    let gpu_device = taks_core::gpu::direct::start().expect("a wgpu adapter").0;
    flex.seed(3);
    let on_cpu = Classifier::new(
        Architecture::ResNet18,
        SHAPE,
        CLASSES,
        &flex.clone().autodiff(),
    );
    let weights: Vec<Tensor<1>> = float_tensors(&on_cpu)
        .into_iter()
        .map(|t| t.values)
        .collect();
    // A network on wgpu with flex's weights, and running statistics of its own (a
    // clone's are shared, and a second training pass would move them).
    let on_gpu = || {
        replace_float_tensors(
            Classifier::new(
                Architecture::ResNet18,
                SHAPE,
                CLASSES,
                &gpu_device.clone().autodiff(),
            ),
            weights.clone(),
        )
    };

    let cpu = one_step(on_cpu, &flex.autodiff());
    // The same step with taks's kernels launched through wgpu itself, the route burn's
    // SPIR-V and MSL builds take (`core/src/gpu/direct.rs`), handed to the plan here: its
    // launches went that way, and it agrees with flex as the other route does.
    let direct = Switches {
        direct: true,
        ..Switches::environment()
    };
    let (routed, launched) = direct.during(|| {
        direct_launches(&gpu_device, || {
            one_step(on_gpu(), &gpu_device.clone().autodiff())
        })
    });
    let gpu = one_step(on_gpu(), &gpu_device.clone().autodiff());
    eprintln!("loss: flex {}, wgpu {}", cpu.loss, gpu.loss);
    assert!(
        launched > 0,
        "no kernel of taks's went through wgpu directly"
    );
    agree(&cpu, &gpu, "wgpu");
    agree(&cpu, &routed, "wgpu, launched directly");
    // The step moved the network by far more than the backends differ: the comparison
    // after it checks the gradients and Adam, not two untouched copies.
    let moved = relative_gap(&cpu.before, &cpu.after);
    assert!(
        moved > 1e-2,
        "one step moved the logits by only {moved} of their scale"
    );
}

/// The step on flex and on wgpu (`route`) agree within float rounding.
fn agree(cpu: &Step, gpu: &Step, route: &str) {
    assert!(
        cpu.loss.is_finite() && (cpu.loss - gpu.loss).abs() < 1e-3 * cpu.loss.abs(),
        "{route}: loss {} against flex's {}",
        gpu.loss,
        cpu.loss
    );
    for (what, a, b) in [
        ("training-mode logits", &cpu.trained, &gpu.trained),
        ("eval logits before the step", &cpu.before, &gpu.before),
        ("eval logits after the step", &cpu.after, &gpu.after),
    ] {
        let gap = relative_gap(a, b);
        assert!(gap < 1e-3, "{route}: {what} differ by {gap} of their scale");
    }
}
