//! The layers of a mixed-precision step ([`crate::precision`]): given a 16-bit input, a
//! linear layer or a convolution casts its f32 weights to the input's type where it uses
//! them (their gradients flow back through the cast to the f32 weights Adam steps), and
//! a batch norm runs in f32 between two casts. The layers call these only for a 16-bit
//! input ([`crate::precision::is_low`]); an f32 input takes the layer as it always was.

use burn::nn::Linear;
use burn::nn::conv::Conv2d;
use burn::tensor::module::{conv2d, linear as linear_op};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{FloatDType, Tensor};

use super::conv::geometry::Geometry;
use crate::precision::is_low;

/// `layer(x)`, in `x`'s type.
pub(crate) fn linear(layer: &Linear, x: Tensor<2>) -> Tensor<2> {
    let Some(low) = is_low(x.dtype()) else {
        return layer.forward(x);
    };
    let weight = layer.weight.val().cast(low);
    let bias = layer.bias.as_ref().map(|b| b.val().cast(low));
    linear_op(x, weight, bias)
}

/// `conv(x)` in `low`, the 16-bit type of `x`, by burn's convolution in that type,
/// without its bias, which comes back apart (f32) for the caller to add or to leave to
/// the batch norm after it, as the f32 step leaves it (`conv::train::forward_leaving_bias`).
/// The training step takes this only where taks's im2col convolution does not run
/// (`TAKS_GPU_CONV=plain` or `folded`; `conv::train::unbiased` offers im2col first). A
/// layer whose padding is not one of taks's symmetric ones (none of its networks') runs
/// in f32 between two casts, with its bias.
pub(crate) fn conv(conv: &Conv2d, x: Tensor<4>, low: FloatDType) -> (Tensor<4>, Option<Tensor<1>>) {
    let Some(geometry) = Geometry::of(conv) else {
        return (in_f32(x, low, |x| conv.forward(x)), None);
    };
    let options = ConvOptions::new(
        geometry.stride,
        geometry.padding,
        conv.dilation,
        conv.groups,
    );
    let weight = conv.weight.val().cast(low);
    let y = conv2d(x, weight, None, options);
    (y, conv.bias.as_ref().map(|b| b.val()))
}

/// `f(x)` in f32 for `x` of the 16-bit type `low`, its output cast back to `low`.
pub(crate) fn in_f32<const D: usize>(
    x: Tensor<D>,
    low: FloatDType,
    f: impl FnOnce(Tensor<D>) -> Tensor<D>,
) -> Tensor<D> {
    f(x.cast(FloatDType::F32)).cast(low)
}

#[cfg(test)]
mod tests {
    use burn::module::{Module, ModuleVisitor, Param, ParamId};
    use burn::optim::GradientsParams;
    use burn::tensor::{Device, Distribution, Int, TensorData};

    use super::*;
    use crate::nn::{Architecture, Networks};
    use crate::ops::cross_entropy::per_sample;
    use crate::precision::Precision;
    use crate::test_support::{host, random};
    use crate::train::LossScale;

    fn norm(a: &[f32]) -> f32 {
        a.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm(a) * norm(b))
    }

    /// Every parameter's gradient with its id and shape, in the module's order.
    fn gradients(grads: &GradientsParams, networks: &Networks) -> Vec<Gradient> {
        struct Read<'a>(&'a GradientsParams, Vec<Gradient>);
        impl ModuleVisitor for Read<'_> {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                if let Some(g) = self.0.get::<D>(param.id) {
                    self.1.push((param.id, g.dims().to_vec(), host(g)));
                }
            }
        }
        let mut read = Read(grads, Vec::new());
        networks.visit(&mut read);
        read.1
    }

    /// A parameter's id, its gradient's shape and its values.
    type Gradient = (ParamId, Vec<usize>, Vec<f32>);

    /// On lavapipe: the gradients of an f16 step of the CNN (f16 convolutions, each way the
    /// plan can be made to take, burn's f16 linear layer, the batch norms in f16, the loss
    /// scaled by 2^16 and the gradients scaled back) point where those of the f32 step of
    /// the same network on flex do, with the same norm, for every parameter: a cosine above
    /// 0.98 and a norm within 5%. Not closer: f16 rounds every activation and gradient, and
    /// six layers with batch norms between them take the gradients to cosines of 0.990
    /// and more with the f32 step's, their norms 0.969-1.029 of theirs (measured
    /// 2026-12-07 for every parameter and every way, this test's own figures: burn's f16
    /// kernels on Debian 12's lavapipe, and the implicit GEMMs and im2col on cooperative
    /// matrices on Mesa 26's). Forgetting to unscale puts the norms 65,536x apart, a sign
    /// or a wrong input takes the cosine far below; a cast that loses a weight's gradient
    /// drops it from the list. The f32 step runs on flex, not on lavapipe, where it would
    /// time every way of each of its convolutions, burn's autotuned kernels among them:
    /// minutes of compiling for a reference (docs/benchmarks.md, "Build and test"); taks's
    /// f32 kernels are held to burn's in their own tests.
    #[test]
    fn an_f16_steps_gradients_are_the_f32_steps() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let train = device.clone().autodiff();
        let flex = Device::flex().autodiff();
        let networks = Networks::seeded(1, Architecture::Cnn, [3, 16, 16], 10, &train, 5);
        let batch: usize = 16;
        let x = random(
            [batch, 3 * 16 * 16],
            Distribution::Normal(0.0, 1.0),
            1,
            &flex,
        );
        let labels: Vec<i32> = (0..batch as i32).map(|i| i % 10).collect();
        let labels = Tensor::<1, Int>::from_data(TensorData::new(labels, [batch]), &flex);
        let step = |networks: &Networks, device: &Device, precision: Precision| {
            let (x, labels) = (
                x.clone().to_device(device),
                labels.clone().to_device(device),
            );
            let logits = networks.forward_in(x, precision).remove(0);
            assert_eq!(logits.dtype(), burn::tensor::DType::F32, "{precision:?}");
            let loss = per_sample(logits, &labels).mean();
            let scale = match precision.scales_loss() {
                true => LossScale::START,
                false => 1.0,
            };
            let mut grads =
                GradientsParams::from_grads(loss.mul_scalar(scale).backward(), networks);
            let finite = crate::train::loss_scale::unscale(&mut grads, networks, scale);
            assert!(finite, "{precision:?}");
            gradients(&grads, networks)
        };
        // The same weights on flex, with running statistics of their own: a clone's are
        // the network's, and moving them to flex would send the f16 step's batch norms
        // down another path.
        let on_flex = Networks::new(1, Architecture::Cnn, [3, 16, 16], 10, &flex)
            .load_record(networks.clone().into_record())
            .fork(&flex);
        let f32s = step(&on_flex, &flex, Precision::F32);
        // The f16 step under each way its convolutions may be made to take, handed to the
        // plan in turn: as the environment leaves them (timed per shape), every one by
        // im2col (its products on cooperative matrices where there are some), and every
        // one an implicit GEMM (on them too, in 16 bits; im2col without them).
        use crate::plan::{GpuConv, Switches};
        use crate::test_support::switch_on;
        let environment = Switches::environment();
        for conv in [environment.conv, GpuConv::Im2col, GpuConv::Implicit] {
            let switches = Switches {
                conv,
                ..environment
            };
            let (f16s, kernels) = switches.during(|| {
                crate::gpu::launches::count_by_kernel(&device, || {
                    step(&networks, &train, Precision::F16)
                })
            });
            // Its products on cooperative matrices where the test command says the
            // adapter has them (Mesa 26's lavapipe under TAKS_GPU_COOP=1:
            // TAKS_EXPECT_COOP=1) and the convolutions are made to take them, and nowhere
            // with the switch off: read from the environment here, not from the plan's
            // switches, which are what is tested.
            let coop: usize = kernels
                .iter()
                .filter(|(k, _)| k.starts_with("taks_matmul_coop"))
                .map(|(_, n)| n)
                .sum();
            if switch_on("TAKS_EXPECT_COOP") && matches!(conv, GpuConv::Im2col | GpuConv::Implicit)
            {
                assert!(
                    coop > 0,
                    "{conv:?}: no product on cooperative matrices: {kernels:?}"
                );
            } else if !switch_on("TAKS_GPU_COOP") {
                assert_eq!(coop, 0, "{kernels:?}");
            }
            // On wgpu: six convolutions (their biases get no gradient: the batch norm after
            // each takes them in its running mean only, in f16 as in f32), six batch norms'
            // gamma and beta, the linear layer's weight and bias. On flex burn adds the
            // biases, and the batch norm's mean takes them out again: six gradients more,
            // zero to rounding.
            assert_eq!(f16s.len(), 6 + 12 + 2);
            assert_eq!(f32s.len(), f16s.len() + 6);
            // The lowest cosine and the norm ratios' range, which the docs quote
            // (`-- --nocapture` prints them).
            let (mut lowest, mut ratios) = (1.0f32, (f32::MAX, 0.0f32));
            for (i, (id, dims, g32)) in f32s.iter().enumerate() {
                let Some((_, dims16, g16)) = f16s.iter().find(|(f16_id, ..)| f16_id == id) else {
                    assert!(
                        dims.len() == 1 && norm(g32) < 1e-5,
                        "parameter {i} {dims:?}: no f16 gradient, and {} in f32",
                        norm(g32)
                    );
                    continue;
                };
                assert_eq!(dims16, dims, "parameter {i}");
                let (cos, ratio) = (cosine(g32, g16), norm(g16) / norm(g32));
                assert!(
                    cos > 0.98 && (0.95..1.05).contains(&ratio),
                    "parameter {i} {dims:?}: cosine {cos}, norm ratio {ratio}"
                );
                lowest = lowest.min(cos);
                ratios = (ratios.0.min(ratio), ratios.1.max(ratio));
            }
            eprintln!(
                "{conv:?}: lowest cosine {lowest:.4}, norm ratios {:.4}-{:.4}",
                ratios.0, ratios.1
            );
        }
    }
}
