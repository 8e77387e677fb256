//! Adam's step on a wgpu device, the GPU twin of [`super::cpu`]: the host side of
//! `shaders/adam.wgsl` (one parameter's step as one kernel) and
//! `shaders/adam_packed.wgsl` (every parameter's step in one kernel).
//!
//! On a GPU a small network's step is bound by launches, and the generic update in
//! [`crate::optim`] is about a dozen kernels per parameter (for the MLP's four, some 50
//! of a step's launches). One kernel per parameter is still 62 of a ResNet-18 step's
//! launches, so [`update_packed`] steps them all in one: the weights and moments it
//! writes lie packed in one buffer each (every parameter a view of its part), and the
//! next step reads them there, binding only the gradients one by one. The first step
//! of a run (or the first after the weights were replaced) fills the packed buffers a
//! parameter at a time.

use burn::backend::wgpu::CubeTensor;
use burn::tensor::{DType, Tensor};

use super::Scalars;
use crate::gpu::bridge;
use crate::gpu::clock::Cost;
use crate::gpu::kernels::{ADAM, Elem, WORKGROUP, adam_packed};

/// A parameter's moments, or zeros like `x` before its first step (`0 * beta + y` is
/// `y`, the generic update's first moments). Two buffers: WebGPU rejects one buffer bound
/// to two writable bindings.
pub fn moments_or_zeros(
    moments: Option<(Tensor<1>, Tensor<1>)>,
    x: &Tensor<1>,
) -> (Tensor<1>, Tensor<1>) {
    moments.unwrap_or_else(|| {
        let [n] = x.dims();
        (
            Tensor::<1>::zeros([n], &x.device()),
            Tensor::<1>::zeros([n], &x.device()),
        )
    })
}

/// New weights, first and second moment of `x` (all flat `[n]`, f32) after one step with
/// gradient `g` and moments `m`, `v`; `None` when they are not on a wgpu device. The four
/// inputs must be four buffers: WebGPU refuses a buffer bound to two writable bindings
/// (native Vulkan does not check).
pub fn update(
    x: &Tensor<1>,
    g: &Tensor<1>,
    m: &Tensor<1>,
    v: &Tensor<1>,
    s: Scalars,
) -> Option<(Tensor<1>, Tensor<1>, Tensor<1>)> {
    let [n] = x.dims();
    assert!(
        g.dims() == [n] && m.dims() == [n] && v.dims() == [n],
        "weights, gradient and moments must have the same length"
    );
    assert!(n < u32::MAX as usize);
    let like = bridge::float_f32(x)?;
    let x_out = bridge::empty_1d(&like, n, DType::F32);
    let m_out = bridge::empty_1d(&like, n, DType::F32);
    let v_out = bridge::empty_1d(&like, n, DType::F32);
    step_into([x, g, m, v], [&x_out, &m_out, &v_out], 0, s)?;
    Some((
        bridge::to_float(x_out),
        bridge::to_float(m_out),
        bridge::to_float(v_out),
    ))
}

/// One parameter's step (`adam.wgsl`) from weights, gradient and moments (flat, one
/// length), written into `outputs` (weights, moments) from element `offset` on.
fn step_into(
    [x, g, m, v]: [&Tensor<1>; 4],
    outputs: [&CubeTensor; 3],
    offset: usize,
    s: Scalars,
) -> Option<()> {
    let [n] = x.dims();
    let [x, g, m, v] = [x, g, m, v].map(bridge::float_f32);
    let (x, g, m, v) = (x?, g?, m?, v?);
    if n == 0 {
        return Some(());
    }
    let words = [
        n as u32,
        s.beta_1.to_bits(),
        s.keep_1.to_bits(),
        s.beta_2.to_bits(),
        s.keep_2.to_bits(),
        s.correction_2.to_bits(),
        s.epsilon.to_bits(),
        s.step_size.to_bits(),
        offset as u32,
    ];
    let p = bridge::upload_u32(&x.client, &words);
    let [x_out, m_out, v_out] = outputs;
    bridge::launch(
        &x.client,
        ADAM,
        bridge::grid((n as u32).div_ceil(WORKGROUP)),
        &[
            &x.handle,
            &g.handle,
            &m.handle,
            &v.handle,
            &x_out.handle,
            &m_out.handle,
            &v_out.handle,
            &p,
        ],
    );
    Some(())
}

/// Weights, first and second moments after a packed step, parameter j's values at
/// `offsets[j]` of each. Offsets and the room each part takes are multiples of the
/// device's buffer-offset alignment, so that every parameter's part is a view a kernel
/// can bind (burn's own slice would copy it).
#[derive(Clone)]
pub struct Packed {
    pub x: Tensor<1>,
    pub m: Tensor<1>,
    pub v: Tensor<1>,
    pub offsets: Vec<usize>,
    align: usize,
    /// The new weights in f16 of the parameters whose gradient came in f16, where the
    /// step had any (`shaders/adam_packed.wgsl`'s `x_low`): f16 values laid out as `x`'s
    /// bytes, parameter j's at `2 * offsets[j]`.
    low: Option<Tensor<1>>,
    /// Which parameters have their weights in `low`.
    in_low: Vec<bool>,
}

impl Packed {
    /// Parameter j's part of `t` (one of the three), a view of `numel` values.
    pub fn part(&self, t: &Tensor<1>, j: usize, numel: usize) -> Tensor<1> {
        bridge::part_1d(t, self.offsets[j], numel, room(numel, self.align))
            .expect("the packed layout keeps every part aligned")
    }

    /// The f16 copy of `weight` (flat) that the step wrote with it: `Some` where `weight`
    /// is still the step's view of a parameter whose gradient came in f16 (the MLP's f16
    /// step by hand), so that the next step multiplies by it without a cast of its own.
    /// `None` for any other tensor, such as weights put in place since.
    pub fn low_copy(&self, weight: &Tensor<1>) -> Option<Tensor<1>> {
        let low = self.low.as_ref()?;
        let j = (0..self.offsets.len())
            .find(|&j| self.in_low[j] && is_part(weight, &self.x, self.offsets[j]))?;
        let numel = weight.dims()[0];
        bridge::part_1d(low, 2 * self.offsets[j], numel, 2 * room(numel, self.align))
    }
}

/// One parameter of a packed step: weights, gradient and moments (`None` before its
/// first step), all flat, with its own bias corrections.
pub struct Part {
    pub x: Tensor<1>,
    pub g: Tensor<1>,
    pub moments: Option<(Tensor<1>, Tensor<1>)>,
    /// Its step number (1 for its first), skipped steps of a [`Scaling`] counted.
    pub time: usize,
    /// Its step's scalars ([`Scalars::at`] `time`); beta_1, beta_2 and epsilon are
    /// every part's.
    pub scalars: Scalars,
}

/// A mixed-precision step's loss scale on the device
/// ([`crate::train::loss_scale::DeviceLossScale`] owns it): the gradients are scaled by
/// it, the step is skipped on the device when one of them is infinite or NaN, and the
/// scale moves on there too, so that nothing is read back.
pub struct Scaling<'a> {
    /// The scaler's words (`shaders/adam_packed.wgsl`'s binding 7), updated in place.
    pub scaler: &'a Tensor<1>,
    /// Which of its two states this step reads (it writes the other).
    pub parity: u32,
    /// The learning rate: a scaled step's bias corrections are computed on the device,
    /// from the steps taken, which only the device knows.
    pub lr: f32,
    /// Finite steps in a row before the scale doubles.
    pub interval: u32,
}

/// What `adam_packed.wgsl` does in a launch.
#[derive(Clone, Copy)]
enum Mode {
    Plain = 0,
    Check = 1,
    Scaled = 2,
    ScaledMovingTheScale = 3,
}

/// The offset of each part (each a multiple of `align`) and the packed length.
fn layout(numels: &[usize], align: usize) -> (Vec<usize>, usize) {
    let mut offsets = Vec::with_capacity(numels.len());
    let mut end = 0;
    for &n in numels {
        offsets.push(end);
        end += room(n, align);
    }
    (offsets, end)
}

/// The room a part of `numel` values takes in the packed buffers: up to the next
/// multiple of `align`.
fn room(numel: usize, align: usize) -> usize {
    numel.div_ceil(align) * align
}

/// Whether `t` (contiguous) is `of`'s values from `offset` on: one buffer, the offset
/// that far in.
fn is_part(t: &Tensor<1>, of: &Tensor<1>, offset: usize) -> bool {
    let (Some(t), Some(of)) = (bridge::float_f32_strided(t), bridge::float_f32_strided(of)) else {
        return false;
    };
    let start = |h: &cubecl::server::Handle| h.offset_start.unwrap_or(0);
    t.handle.memory.descriptor().id == of.handle.memory.descriptor().id
        && start(&t.handle) == start(&of.handle) + 4 * offset as u64
        && t.meta.strides()[0] == 1
}

/// Adam's step of every part as few launches as the adapter's bindings allow, into fresh
/// packed buffers; `None` off wgpu, when the sizes pass 32-bit indices, or when the
/// adapter cannot bind more than one gradient beside the packed buffers (WebGPU's
/// default of 8 storage buffers), where the caller steps each parameter alone.
///
/// When `previous` is the last packed step and every part's weights and moments are
/// still its views, a launch binds the packed buffers whole and up to (bindings - 8)
/// gradients; otherwise each part is stepped by `adam.wgsl` into its place.
///
/// With a `scaling`, the gradients are checked first (a launch per chunk of them), then
/// stepped or left as they were on the device. That reads packed buffers, so without a
/// `previous` step's the weights and moments are first copied into packed ones (the
/// first step of a run, or of a resumed one).
pub fn update_packed(
    parts: &[Part],
    previous: Option<&Packed>,
    scaling: Option<Scaling>,
) -> Option<Packed> {
    // Weights, gradients and both moments read, weights and moments written: seven f32s
    // a parameter.
    let _clocked = crate::gpu::clock::op("adam", || {
        let numel: usize = parts.iter().map(|p| p.x.dims()[0]).sum();
        (format!("{numel} parameters"), Cost::moving(numel, 4, 7))
    });
    let first = bridge::float_f32(&parts.first()?.x)?;
    let Scalars {
        beta_1,
        keep_1,
        beta_2,
        keep_2,
        epsilon,
        ..
    } = parts[0].scalars;
    assert!(
        parts.iter().all(|p| {
            let s = p.scalars;
            (s.beta_1, s.beta_2, s.epsilon) == (beta_1, beta_2, epsilon)
        }),
        "one optimiser's parameters share beta_1, beta_2 and epsilon"
    );
    let client = first.client.clone();
    // An f16 gradient's weights are also kept in f16, in one more binding.
    let in_low: Vec<bool> = parts
        .iter()
        .map(|p| Elem::of(p.g.dtype()) == Some(Elem::F16))
        .collect();
    let any_low = in_low.contains(&true);
    let gradients_per_launch = (client.properties().hardware.max_bindings as usize)
        .saturating_sub(8 + usize::from(any_low))
        .min(MAX_GRADIENTS);
    if gradients_per_launch < 2 {
        return None;
    }
    let numels: Vec<usize> = parts.iter().map(|p| p.x.dims()[0]).collect();
    let align = bridge::alignment_1d(&parts[0].x)?;
    let (offsets, total) = layout(&numels, align);
    if total >= u32::MAX as usize - WORKGROUP as usize {
        return None;
    }
    let packed_in = previous.filter(|p| {
        p.offsets == offsets
            && parts.iter().zip(&offsets).all(|(part, &o)| {
                is_part(&part.x, &p.x, o)
                    && part
                        .moments
                        .as_ref()
                        .is_some_and(|(m, v)| is_part(m, &p.m, o) && is_part(v, &p.v, o))
            })
    });
    let staged;
    let packed_in = match (packed_in, &scaling) {
        (None, Some(_)) => {
            staged = stage(parts, &offsets, total, align);
            Some(&staged)
        }
        (packed_in, _) => packed_in,
    };
    let scaler = match &scaling {
        Some(s) => bridge::float_f32_strided(s.scaler)?.handle,
        // Bound and never read.
        None => bridge::upload_u32(&client, &[0; 10]),
    };
    let x_out = bridge::empty_1d(&first, total, DType::F32);
    let m_out = bridge::empty_1d(&first, total, DType::F32);
    let v_out = bridge::empty_1d(&first, total, DType::F32);
    // Written only by the packed launches; the per-part step below keeps no copies.
    let low =
        (any_low && packed_in.is_some()).then(|| bridge::empty_1d(&first, 2 * total, DType::F16));
    match packed_in {
        Some(previous) => {
            let x = bridge::float_f32_strided(&previous.x)?;
            let m = bridge::float_f32_strided(&previous.m)?;
            let v = bridge::float_f32_strided(&previous.v)?;
            // Each launch's parts, their offsets, and which of their gradients are f16.
            let chunks: Vec<(&[Part], &[usize], &[bool])> = parts
                .chunks(gradients_per_launch)
                .zip(offsets.chunks(gradients_per_launch))
                .zip(in_low.chunks(gradients_per_launch))
                .map(|((p, o), f)| (p, o, f))
                .collect();
            let mut launches = Vec::new();
            match &scaling {
                None => launches.extend(chunks.iter().map(|&c| (c, Mode::Plain))),
                Some(_) => {
                    launches.extend(chunks.iter().map(|&c| (c, Mode::Check)));
                    for (i, &c) in chunks.iter().enumerate() {
                        let mode = match i {
                            0 => Mode::ScaledMovingTheScale,
                            _ => Mode::Scaled,
                        };
                        launches.push((c, mode));
                    }
                }
            }
            let (parity, lr, interval) = scaling
                .as_ref()
                .map_or((0, 0.0, 0), |s| (s.parity, s.lr, s.interval));
            for ((chunk, chunk_offsets, f16), mode) in launches {
                let mut table = vec![
                    chunk.len() as u32,
                    beta_1.to_bits(),
                    keep_1.to_bits(),
                    beta_2.to_bits(),
                    keep_2.to_bits(),
                    epsilon.to_bits(),
                    lr.to_bits(),
                    mode as u32,
                    parity,
                    interval,
                ];
                let mut groups = 0u32;
                let mut gradients = Vec::with_capacity(chunk.len());
                for (part, &o) in chunk.iter().zip(chunk_offsets) {
                    let n = part.x.dims()[0] as u32;
                    table.extend([
                        o as u32,
                        n,
                        groups,
                        part.scalars.correction_2.to_bits(),
                        part.scalars.step_size.to_bits(),
                        part.time as u32,
                    ]);
                    groups += n.div_ceil(WORKGROUP);
                    // An f16 gradient (the MLP's f16 step by hand) is read as it is;
                    // any other type is cast to f32.
                    let elem = Elem::of(part.g.dtype()).unwrap_or(Elem::F32);
                    gradients.push(bridge::float_as(&part.g, elem.dtype())?);
                }
                let table = bridge::upload_u32(&client, &table);
                let mut buffers = vec![
                    &x.handle,
                    &m.handle,
                    &v.handle,
                    &x_out.handle,
                    &m_out.handle,
                    &v_out.handle,
                    &table,
                    &scaler,
                ];
                buffers.extend(gradients.iter().map(|g| &g.handle));
                if let Some(low) = low.as_ref().filter(|_| f16.contains(&true)) {
                    buffers.push(&low.handle);
                }
                bridge::launch(&client, adam_packed(f16), bridge::grid(groups), &buffers);
            }
        }
        None => {
            for (part, &o) in parts.iter().zip(&offsets) {
                let (m, v) = moments_or_zeros(part.moments.clone(), &part.x);
                step_into(
                    [&part.x, &part.g, &m, &v],
                    [&x_out, &m_out, &v_out],
                    o,
                    part.scalars,
                )?;
            }
        }
    }
    Some(Packed {
        x: bridge::to_float(x_out),
        m: bridge::to_float(m_out),
        v: bridge::to_float(v_out),
        offsets,
        align,
        low: low.map(bridge::to_float),
        in_low,
    })
}

/// The packed buffers of `parts` as they are (weights, and moments or zeros), each at its
/// offset in `total` values, the gaps zero.
fn stage(parts: &[Part], offsets: &[usize], total: usize, align: usize) -> Packed {
    let device = parts[0].x.device();
    let pack = |of: &dyn Fn(&Part) -> Tensor<1>| {
        let mut pieces = Vec::with_capacity(2 * parts.len());
        for (j, (part, &o)) in parts.iter().zip(offsets).enumerate() {
            let piece = of(part);
            let end = o + piece.dims()[0];
            pieces.push(piece);
            let next = offsets.get(j + 1).copied().unwrap_or(total);
            if next > end {
                pieces.push(Tensor::zeros([next - end], &device));
            }
        }
        Tensor::cat(pieces, 0)
    };
    let moment = |p: &Part, i: usize| match &p.moments {
        Some((m, v)) => [m, v][i].clone(),
        None => Tensor::zeros(p.x.dims(), &device),
    };
    Packed {
        x: pack(&|p| p.x.clone()),
        m: pack(&|p| moment(p, 0)),
        v: pack(&|p| moment(p, 1)),
        offsets: offsets.to_vec(),
        align,
        low: None,
        in_low: vec![false; parts.len()],
    }
}

/// At most this many gradients per packed launch (a bound on the generated shader's
/// size; a ResNet-18 has 62 parameters, a pair of them 124).
const MAX_GRADIENTS: usize = 128;
