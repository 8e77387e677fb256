//! What the unit tests of several modules read back and compare, in one place.

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Distribution, Tensor, TensorData};

use crate::nn::Mlp;
use crate::plan::GpuMatmul;
use crate::rng::SplitMix64;

/// A tensor's values on the host, as f32.
pub(crate) fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("f32 values")
}

/// The largest magnitude in `v` (0 for none).
pub(crate) fn largest(v: &[f32]) -> f32 {
    v.iter().fold(0f32, |m, x| m.max(x.abs()))
}

/// The largest difference between `a` and `b`, element by element.
pub(crate) fn gap(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

/// burn's convolution of `x` by `weight` (plus `bias`) on flex, burn's CPU backend: the
/// reference taks's GPU convolutions are held to. Not burn's wgpu kernels: those are
/// autotuned on every new shape, minutes of compiling on lavapipe for each test
/// (docs/benchmarks.md, "Build and test"), and the CPU's answer does not depend on the
/// adapter whose kernels are under test.
pub(crate) fn flex_conv2d(
    x: &Tensor<4>,
    weight: &Tensor<4>,
    bias: Option<&Tensor<1>>,
    options: ConvOptions<2>,
) -> Vec<f32> {
    let flex = Device::flex();
    host(burn::tensor::module::conv2d(
        x.clone().to_device(&flex),
        weight.clone().to_device(&flex),
        bias.map(|b| b.clone().to_device(&flex)),
        options,
    ))
}

/// The gradients of [`flex_conv2d`] (without a bias) for the output's gradient `dy`:
/// burn's `conv2d_x_backward` and `conv2d_weight_backward` on flex, (dx, dw).
pub(crate) fn flex_conv2d_backward(
    x: &Tensor<4>,
    weight: &Tensor<4>,
    dy: &Tensor<4>,
    options: ConvOptions<2>,
) -> (Vec<f32>, Vec<f32>) {
    use burn::backend::Flex;
    use burn::backend::ops::ModuleOps;
    let flex = Device::flex();
    let prim = |t: &Tensor<4>| {
        t.clone()
            .to_device(&flex)
            .try_into_primitive::<Flex>()
            .expect("a flex tensor")
    };
    let back = |t| host(Tensor::<4>::from_primitive::<Flex>(t));
    let dx = <Flex as ModuleOps<Flex>>::conv2d_x_backward(
        prim(x),
        prim(weight),
        prim(dy),
        options.clone(),
    );
    let dw =
        <Flex as ModuleOps<Flex>>::conv2d_weight_backward(prim(x), prim(weight), prim(dy), options);
    (back(dx), back(dw))
}

/// The kernels of `kernels` (as `gpu::launches::count_by_kernel` lists them) whose name
/// starts with `prefix`, with their counts, sorted by name.
pub(crate) fn kernels_named<'a>(
    kernels: impl IntoIterator<Item = &'a (String, usize)>,
    prefix: &str,
) -> Vec<(&'a str, usize)> {
    let mut named: Vec<_> = kernels
        .into_iter()
        .filter(|(name, _)| name.starts_with(prefix))
        .map(|(name, n)| (name.as_str(), *n))
        .collect();
    named.sort_unstable();
    named
}

/// A tensor of `dims` drawn from `distribution` by [`SplitMix64`] from `seed`, so a test's
/// inputs do not depend on burn's one generator per process, which every test thread
/// draws from in whatever order the threads run. `Default` is uniform on [0, 1), as
/// burn's; normal values come by Box-Muller.
pub(crate) fn random<const D: usize>(
    dims: [usize; D],
    distribution: Distribution,
    seed: u64,
    device: &Device,
) -> Tensor<D> {
    let mut rng = SplitMix64::new(seed);
    let count = dims.iter().product();
    let mut uniform = || rng.next_f64();
    let values: Vec<f32> = (0..count)
        .map(|_| match distribution {
            Distribution::Default => uniform() as f32,
            Distribution::Uniform(low, high) => (low + (high - low) * uniform()) as f32,
            Distribution::Normal(mean, std) => {
                // 1 - u is in (0, 1], so its logarithm is finite.
                let (u, v) = (1.0 - uniform(), uniform());
                let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                (mean + std * z) as f32
            }
            other => panic!("no test draws from {other:?}"),
        })
        .collect();
    Tensor::from_data(TensorData::new(values, dims), device)
}

/// A linear layer `inputs -> outputs` with weights uniform in ±1/sqrt(inputs) and biases
/// in ±0.1, drawn as [`random`] draws, for tests that need a network's exact weights.
pub(crate) fn linear(inputs: usize, outputs: usize, seed: u64, device: &Device) -> Linear {
    let bound = 1.0 / (inputs as f64).sqrt();
    let weight = random(
        [inputs, outputs],
        Distribution::Uniform(-bound, bound),
        seed,
        device,
    );
    let bias = random(
        [outputs],
        Distribution::Uniform(-0.1, 0.1),
        seed ^ 1,
        device,
    );
    Linear {
        weight: Param::from_tensor(weight),
        bias: Some(Param::from_tensor(bias)),
    }
}

/// An [`Mlp`] `inputs -> 256 -> classes` with the weights [`linear`] draws from `seed`.
pub(crate) fn mlp(inputs: usize, classes: usize, seed: u64, device: &Device) -> Mlp {
    Mlp::from_layers(
        linear(inputs, 256, seed, device),
        linear(256, classes, seed.wrapping_add(2), device),
    )
}

/// Whether the environment sets the switch `name` to 1, read directly: what the tests of
/// the switches expect, not what the plan (`Switches::current`) made of them.
pub(crate) fn switch_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

/// `TAKS_GPU_MATMUL` as the environment sets it, read directly (see [`switch_on`]).
pub(crate) fn matmul_switch() -> GpuMatmul {
    match std::env::var("TAKS_GPU_MATMUL").as_deref() {
        Ok("burn") => GpuMatmul::Burn,
        Ok("tiled") => GpuMatmul::Tiled,
        _ => GpuMatmul::Auto,
    }
}

/// Run `work` once under each setting of `TAKS_GPU_MATMUL` a convolution takes a
/// different way under (`auto`, and `tiled`: every convolution of taks's an implicit GEMM,
/// im2col's patches on the tiled matmul), handed to the plan in turn
/// ([`crate::plan::Switches::during`]), the other switches as the environment sets them.
/// One test process covers what a second run of the suite under the variable did.
pub(crate) fn under_each_matmul(work: impl Fn()) {
    use crate::plan::Switches;
    for matmul in [GpuMatmul::Auto, GpuMatmul::Tiled] {
        let switches = Switches {
            matmul,
            ..Switches::environment()
        };
        switches.during(&work);
    }
}
