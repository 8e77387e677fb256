//! A training step's batch norm on a wgpu device in four kernels of our own
//! (`shaders/bn_*.wgsl`): the batch's statistics with the running statistics' update,
//! the normalised output (with the block's ReLU), and the two passes of its backward.
//!
//! Why: burn computes a training batch norm out of tensor operations, a dozen kernels
//! forward and about twenty backward (each a pass over the whole activation, some
//! copies of a transposed view among them), which made batch norm the largest share of a
//! ResNet-18 step's 1,400 launches. These are the same formulas as burn's
//! (`ModuleOps::batch_norm_train` and its backward: biased variance, the running
//! statistics updated with it) in two launches each way. Every function takes `x`
//! `[N, C, H, W]` in any layout (read through its strides) and returns `None` off wgpu.
//! `x`, `dy` and the outputs `y` and `dx` are f32, or f16 in a mixed-precision step (the
//! kernels' f16 variants read and write f16 and sum in f32), so that step's batch norms
//! need no casts around them; the statistics, sums, gamma and beta are f32 either way.
//! The autodiff operation that uses them is [`super::train`].

use burn::tensor::{DType, Tensor};

use crate::gpu::bridge;
use crate::gpu::kernels::{
    BN_APPLY, BN_APPLY_F16, BN_GRAD_REDUCE, BN_GRAD_REDUCE_F16, BN_GRAD_X, BN_GRAD_X_F16,
    BN_MOMENTS, BN_MOMENTS_F16, Elem, Shader, WORKGROUP,
};
use crate::gpu::params;
use crate::ops::channels_last::{from_flat, lies_channels_last};

/// The settings every pass reads (`shaders/bn_common.wgsl`'s `params`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Settings {
    pub epsilon: f64,
    /// The block's ReLU, fused after the batch norm.
    pub relu: bool,
    pub momentum: f64,
}

/// The parameter words for `x` (and `dy`'s strides, when there is one); `None` when a
/// size does not fit the kernels' 32-bit indices.
fn words(
    dims: [usize; 4],
    x_strides: &[usize],
    dy_strides: &[usize],
    settings: Settings,
) -> Option<Vec<u32>> {
    let total = dims.iter().product::<usize>();
    if total >= u32::MAX as usize {
        return None;
    }
    let mut words = Vec::with_capacity(16);
    for v in dims.iter().chain(&x_strides[..4]) {
        words.push(u32::try_from(*v).ok()?);
    }
    words.push((settings.epsilon as f32).to_bits());
    words.push(settings.relu as u32);
    words.push((settings.momentum as f32).to_bits());
    for v in &dy_strides[..4] {
        words.push(u32::try_from(*v).ok()?);
    }
    // The output's layout: x's where x lies channels last.
    words.push(lies_channels_last(dims, x_strides) as u32);
    Some(words)
}

/// One workgroup per channel, or one invocation per element.
fn per_channel(channels: usize) -> cubecl::CubeCount {
    bridge::grid(channels as u32)
}
fn per_element(total: usize) -> cubecl::CubeCount {
    bridge::grid((total as u32).div_ceil(WORKGROUP))
}

/// The batch's statistics `[2 C]` (mean, then biased variance, per channel) and the
/// running mean and variance after this batch (`[C]` each), from those before it.
/// `shift` `[C]`, where there is one, is a per-channel constant the layer's input has and
/// `x` lacks (a convolution's bias): only the running mean adds it.
pub(crate) fn moments(
    x: &Tensor<4>,
    shift: Option<&Tensor<1>>,
    running_mean: &Tensor<1>,
    running_var: &Tensor<1>,
    settings: Settings,
) -> Option<(Tensor<1>, [Tensor<1>; 2])> {
    let dims = x.dims();
    let channels = dims[1];
    let elem = Elem::of(x.dtype())?;
    let x = bridge::float_strided_as(x, elem.dtype())?;
    let mean = bridge::float_f32(running_mean)?;
    let var = bridge::float_f32(running_var)?;
    let shift = match shift {
        Some(b) => Some(bridge::float_f32(b)?),
        None => None,
    };
    let strides = x.meta.strides();
    let mut words = words(dims, strides, strides, settings)?;
    words.push(shift.is_some() as u32);
    let p = params::words(&x, &words);
    let stats = bridge::empty_1d(&x, 2 * channels, DType::F32);
    let mean_out = bridge::empty_1d(&x, channels, DType::F32);
    let var_out = bridge::empty_1d(&x, channels, DType::F32);
    bridge::launch(
        &x.client,
        elem.pick(BN_MOMENTS, BN_MOMENTS_F16),
        per_channel(channels),
        &[
            &x.handle,
            &mean.handle,
            &var.handle,
            &stats.handle,
            &mean_out.handle,
            &var_out.handle,
            &p,
            // Without a shift the kernel reads none: any buffer holds its place.
            shift.as_ref().map_or(&mean.handle, |s| &s.handle),
        ],
    );
    Some((
        bridge::to_float(stats),
        [bridge::to_float(mean_out), bridge::to_float(var_out)],
    ))
}

/// The batch norm of `x` with the batch's `stats` (from [`moments`]), then ReLU if
/// `settings.relu`: `[N, C, H, W]` in `x`'s type, laid out channels last where `x` is (the
/// pool or convolution after it then reads it without a copy), else contiguous.
pub(crate) fn apply(
    x: &Tensor<4>,
    gamma: &Tensor<1>,
    beta: &Tensor<1>,
    stats: &Tensor<1>,
    settings: Settings,
) -> Option<Tensor<4>> {
    let dims = x.dims();
    let total = dims.iter().product::<usize>();
    let elem = Elem::of(x.dtype())?;
    let x = bridge::float_strided_as(x, elem.dtype())?;
    let gamma = bridge::float_f32(gamma)?;
    let beta = bridge::float_f32(beta)?;
    let stats = bridge::float_f32(stats)?;
    let strides = x.meta.strides();
    let last = lies_channels_last(dims, strides);
    let p = params::words(&x, &words(dims, strides, strides, settings)?);
    let y = bridge::empty_1d(&x, total, elem.dtype());
    bridge::launch(
        &x.client,
        elem.pick(BN_APPLY, BN_APPLY_F16),
        per_element(total),
        &[
            &x.handle,
            &gamma.handle,
            &beta.handle,
            &stats.handle,
            &y.handle,
            &p,
        ],
    );
    Some(from_flat(bridge::to_float(y), dims, last))
}

/// The backward pass of [`apply`] for the output's gradient `dy`, part 1: `[4 C]`, the
/// batch's mean and variance, then per channel the sum of `dy` (beta's gradient) and of
/// `dy` times the normalised input (gamma's gradient), `dy` masked by the ReLU when it
/// was fused.
pub(crate) fn grad_sums(
    x: &Tensor<4>,
    dy: &Tensor<4>,
    gamma: &Tensor<1>,
    beta: &Tensor<1>,
    stats: &Tensor<1>,
    settings: Settings,
) -> Option<Tensor<1>> {
    let channels = x.dims()[1];
    backward_pass(
        [BN_GRAD_REDUCE, BN_GRAD_REDUCE_F16],
        [x, dy],
        [gamma, beta, stats],
        settings,
        (4 * channels, DType::F32),
        per_channel(channels),
    )
}

/// The backward pass, part 2: the input's gradient `[N, C, H, W]` in `x`'s type from
/// [`grad_sums`]'s `sums`, laid out channels last where `x` is (the convolution's backward
/// then reads it without a copy), else contiguous.
pub(crate) fn grad_x(
    x: &Tensor<4>,
    dy: &Tensor<4>,
    gamma: &Tensor<1>,
    beta: &Tensor<1>,
    sums: &Tensor<1>,
    settings: Settings,
) -> Option<Tensor<4>> {
    let dims = x.dims();
    let total = dims.iter().product::<usize>();
    let last = bridge::float_strided_as(x, x.dtype())
        .is_some_and(|p| lies_channels_last(dims, p.meta.strides()));
    let dx = backward_pass(
        [BN_GRAD_X, BN_GRAD_X_F16],
        [x, dy],
        [gamma, beta, sums],
        settings,
        (total, x.dtype()),
        per_element(total),
    )?;
    Some(from_flat(dx, dims, last))
}

/// One backward pass: `kernel` (its f32 and f16 variants, for `x`'s type) over `x` and
/// `dy` (both `[N, C, H, W]`, any layout; `dy` read in `x`'s type) and gamma, beta and the
/// per-channel figures (the forward's statistics for part 1, its sums for part 2), bound
/// in that order before the output (`len` elements of `out_dtype`) and the parameters.
fn backward_pass(
    [kernel, kernel_f16]: [Shader; 2],
    [x, dy]: [&Tensor<4>; 2],
    [gamma, beta, per_channel]: [&Tensor<1>; 3],
    settings: Settings,
    (len, out_dtype): (usize, DType),
    grid: cubecl::CubeCount,
) -> Option<Tensor<1>> {
    let dims = x.dims();
    let elem = Elem::of(x.dtype())?;
    let x = bridge::float_strided_as(x, elem.dtype())?;
    let dy = bridge::float_strided_as(dy, elem.dtype())?;
    let gamma = bridge::float_f32(gamma)?;
    let beta = bridge::float_f32(beta)?;
    let per_channel = bridge::float_f32(per_channel)?;
    let words = words(dims, x.meta.strides(), dy.meta.strides(), settings)?;
    let p = params::words(&x, &words);
    let out = bridge::empty_1d(&x, len, out_dtype);
    bridge::launch(
        &x.client,
        elem.pick(kernel, kernel_f16),
        grid,
        &[
            &x.handle,
            &dy.handle,
            &gamma.handle,
            &beta.handle,
            &per_channel.handle,
            &out.handle,
            &p,
        ],
    );
    Some(bridge::to_float(out))
}
