//! From a type-erased `burn::tensor::Tensor` to the raw cubecl buffer on a wgpu device, and
//! back; plus the launch helper shared by all kernels.
//!
//! Why this route: in burn 0.22 a tensor carries no backend type; its primitive is a dispatch
//! enum. `Tensor::try_into_primitive::<Cube>()` (burn-tensor `api/extension.rs`) is the
//! public, non-panicking downcast: it fails with an error (not a panic, unlike a
//! `#[backend_extension]` on an unlisted backend) when the tensor lives on flex or under
//! autodiff, which is exactly the "fall back to the CPU reference" signal we want. The
//! primitive is resolved to a `CubeTensor` ([`super::fusion`]: the same value without
//! burn's fusion, the buffer its lazy handle stands for with it), which exposes `client`
//! (the cubecl compute client) and `handle` (the storage buffer), all a hand-written WGSL
//! launch needs. `Tensor::from_primitive` wraps our output buffers back into ordinary
//! tensors.

use burn::backend::Cube;
use burn::backend::wgpu::{CubeDim, CubeTensor, SourceKernel, into_contiguous};
use burn::tensor::{DType, FloatDType, Int, Shape, Tensor};
use cubecl::CubeCount;
use cubecl::server::{Handle, KernelArguments};

use super::fusion;
use super::kernels::{Elem, Shader, WORKGROUP, Wgsl};

/// The cubecl compute client type of a `CubeTensor`.
pub(crate) type Client = cubecl::client::Client;

/// The primitive behind a float tensor on a wgpu device, autodiff dropped, not yet
/// resolved to a buffer ([`fusion`]); `None` when the tensor lives elsewhere. Cheap:
/// clones a reference-counted handle, runs nothing.
fn wgpu_primitive<const D: usize>(t: &Tensor<D>) -> Option<fusion::Primitive> {
    let prim = t
        .clone()
        .without_autodiff()
        .try_into_primitive::<Cube>()
        .ok()?;
    fusion::on_wgpu(&prim).then_some(prim)
}

/// The buffer behind a float tensor on a wgpu device, autodiff dropped; `None` when the
/// tensor lives elsewhere. Launches nothing (under fusion, what is recorded on its stream
/// runs first).
fn wgpu_float<const D: usize>(t: &Tensor<D>) -> Option<CubeTensor> {
    wgpu_primitive(t).map(fusion::resolve_float)
}

/// Whether `t` lives on a wgpu device (autodiff or not), i.e. whether the kernels can run
/// on it.
pub(crate) fn is_wgpu<const D: usize>(t: &Tensor<D>) -> bool {
    wgpu_primitive(t).is_some()
}

/// The contiguous f32 buffer behind a float tensor on a wgpu device, or `None` when the
/// tensor lives elsewhere. Autodiff is dropped (the kernels are not differentiable) and other
/// float dtypes are cast to f32 on the device.
pub(crate) fn float_f32<const D: usize>(t: &Tensor<D>) -> Option<CubeTensor> {
    float_as(t, DType::F32)
}

/// As [`float_f32`], in `dtype` (a kernel's f16 variant reads f16).
pub(crate) fn float_as<const D: usize>(t: &Tensor<D>, dtype: DType) -> Option<CubeTensor> {
    Some(into_contiguous(float_strided_as(t, dtype)?))
}

/// As [`float_f32`], but the buffer as the tensor lays it out (a permuted or narrowed
/// view is not copied): for kernels that read through the tensor's strides
/// (`prim.meta.strides()`, in elements, from the handle's start).
pub(crate) fn float_f32_strided<const D: usize>(t: &Tensor<D>) -> Option<CubeTensor> {
    float_strided_as(t, DType::F32)
}

/// As [`float_f32_strided`], in `dtype`.
pub(crate) fn float_strided_as<const D: usize>(t: &Tensor<D>, dtype: DType) -> Option<CubeTensor> {
    let prim = wgpu_primitive(t)?;
    if prim.dtype == dtype {
        Some(fusion::resolve_float(prim))
    } else {
        let cast = Tensor::<D>::from_primitive::<Cube>(prim)
            .cast(dtype)
            .try_into_primitive::<Cube>()
            .ok()?;
        Some(fusion::resolve_float(cast))
    }
}

/// The contiguous 32-bit integer buffer behind an int tensor on a wgpu device. I32 and U32
/// are used as they are (the shaders read the bits as u32; labels are non-negative); any
/// other int dtype (e.g. I64) is cast to I32 on the device first. Int tensors made on an
/// autodiff device carry an autodiff context too, which the downcast rejects: dropped here.
pub(crate) fn int_32<const D: usize>(t: &Tensor<D, Int>) -> Option<CubeTensor> {
    let prim = t
        .clone()
        .without_autodiff()
        .try_into_primitive::<Cube>()
        .ok()?;
    if !fusion::on_wgpu(&prim) {
        return None;
    }
    let prim = if matches!(prim.dtype, DType::I32 | DType::U32) {
        prim
    } else {
        Tensor::<D, Int>::from_primitive::<Cube>(prim)
            .cast(DType::I32)
            .try_into_primitive::<Cube>()
            .ok()?
    };
    Some(into_contiguous(fusion::resolve_int(prim)))
}

/// The most bytes one buffer may hold on the wgpu device `t` lives on (the adapter's
/// storage-binding and buffer-size limits: 128 MiB on lavapipe, often 2 GiB or more on a
/// GPU); `None` off wgpu.
pub(crate) fn max_buffer_bytes<const D: usize>(t: &Tensor<D>) -> Option<usize> {
    wgpu_float(t).map(|prim| prim.client.properties().memory.max_page_size as usize)
}

/// A fresh, uninitialised 1-D buffer of `len` elements of `dtype` on `like`'s device.
pub(crate) fn empty_1d(like: &CubeTensor, len: usize, dtype: DType) -> CubeTensor {
    let handle = like.client.empty(len.max(1) * dtype.size());
    CubeTensor::new_contiguous(
        like.client.clone(),
        like.device.clone(),
        Shape::new([len]),
        handle,
        dtype,
    )
}

/// A small u32 buffer uploaded to `client`'s device, a new one each call: for buffers a
/// kernel writes (the selection's state) or words that change every call; a kernel's
/// read-only parameters go through [`super::params`], which keeps them.
pub(crate) fn upload_u32(client: &Client, words: &[u32]) -> Handle {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    client.create_from_slice(&bytes)
}

/// Elements `offset .. offset + len` of the 1-D contiguous `t` (f32 or f16, kept in its
/// type) as a tensor of their own that shares `t`'s buffer (nothing is copied), its
/// handle reaching on to `offset + reach`, `reach >= len`. Both ends must lie on the
/// device's offset alignment, as burn's own slices of a buffer do (its `slice` copies
/// where they do not); `None` where they do not, or off wgpu.
pub(crate) fn part_1d(t: &Tensor<1>, offset: usize, len: usize, reach: usize) -> Option<Tensor<1>> {
    let dtype = Elem::of(t.dtype())?.dtype();
    let prim = float_as(t, dtype)?;
    let [total] = t.dims();
    assert!(
        len <= reach && offset + reach <= total,
        "a part inside the buffer"
    );
    let alignment = prim.client.properties().memory.alignment;
    let size = dtype.size();
    let (start, end) = (size * offset, size * (total - offset - reach));
    let (start, end) = (start as u64, end as u64);
    if !start.is_multiple_of(alignment) || !end.is_multiple_of(alignment) {
        return None;
    }
    let handle = prim.handle.clone().offset_start(start).offset_end(end);
    Some(to_float(CubeTensor::new_contiguous(
        prim.client.clone(),
        prim.device.clone(),
        Shape::new([len]),
        handle,
        dtype,
    )))
}

/// The alignment, in 32-bit elements, of a view's start in a buffer of the device `t`
/// lives on ([`part_1d`]); `None` off wgpu.
pub(crate) fn alignment_1d<const D: usize>(t: &Tensor<D>) -> Option<usize> {
    wgpu_float(t).map(|p| {
        (p.client.properties().memory.alignment as usize)
            .div_ceil(4)
            .max(1)
    })
}

/// Back to an ordinary float tensor.
pub(crate) fn to_float(t: CubeTensor) -> Tensor<1> {
    Tensor::<1>::from_primitive::<Cube>(fusion::register(t))
}

/// A contiguous `[rows * cols]` buffer back as an ordinary `[rows, cols]` float tensor.
pub(crate) fn to_matrix(t: CubeTensor, rows: usize, cols: usize) -> Tensor<2> {
    to_float(t).reshape([rows, cols])
}

/// Back to an ordinary int tensor.
pub(crate) fn to_int(t: CubeTensor) -> Tensor<1, Int> {
    Tensor::<1, Int>::from_primitive::<Cube>(fusion::register(t))
}

/// A grid of `groups` workgroups, folded into 2-D when it exceeds the per-dimension limit
/// (the shaders linearise `wg.y * num_workgroups.x + wg.x` and ignore the surplus).
pub(crate) fn grid(groups: u32) -> CubeCount {
    const MAX_X: u32 = 65_535;
    if groups <= MAX_X {
        CubeCount::Static(groups.max(1), 1, 1)
    } else {
        CubeCount::Static(MAX_X, groups.div_ceil(MAX_X), 1)
    }
}

/// Enqueue one shader on `client`'s stream, buffers bound at `@binding(0..)` in order:
/// through burn where it compiles WGSL, else through wgpu itself ([`super::direct`]).
pub(crate) fn launch(client: &Client, kernel: Shader, count: CubeCount, buffers: &[&Handle]) {
    super::launches::count_ours(kernel.name);
    if super::direct::goes_direct(client, kernel) {
        return super::direct::launch(client, kernel, count, buffers);
    }
    super::clock::name_next(kernel.name);
    let mut args = KernelArguments::new();
    for h in buffers {
        args = args.with_buffer((*h).clone().binding());
    }
    client.launch(
        Box::new(SourceKernel::new(Wgsl(kernel), CubeDim::new_1d(WORKGROUP))),
        count,
        args,
    );
}

/// The compute client of the wgpu device `device`; `None` off wgpu. Allocates one small
/// buffer (no launch).
fn client_of(device: &burn::tensor::Device) -> Option<Client> {
    wgpu_float(&Tensor::<1>::empty([1], device)).map(|probe| probe.client)
}

/// The name of the wgpu adapter behind `device`; `None` off wgpu.
pub(crate) fn adapter_name(device: &burn::tensor::Device) -> Option<String> {
    Some(client_of(device)?.properties().identity.name.clone())
}

/// Who the wgpu adapter behind `device` is, as far as kernel speed goes: its name,
/// cubecl's fingerprint of it (vendor and device ids) and the compiler that serves it;
/// `None` off wgpu.
pub(crate) fn adapter_identity(device: &burn::tensor::Device) -> Option<String> {
    let client = client_of(device)?;
    let identity = &client.properties().identity;
    Some(format!(
        "{} | {} | {}",
        identity.name,
        identity.fingerprint,
        client.name()
    ))
}

/// Whether the compiler on `device` has arithmetic in `dtype`, as cubecl registers it:
/// f16 where the adapter has WebGPU's shader-f16 (WGSL) or the driver has 16-bit floats
/// (SPIR-V); bf16 on Metal (MSL) only, since cubecl's SPIR-V compiler registers bf16 for
/// conversions and dot products but not for arithmetic. `None` off wgpu.
pub(crate) fn supports_float(device: &burn::tensor::Device, dtype: FloatDType) -> Option<bool> {
    use cubecl::features::TypeUsage;
    use cubecl::ir::{ElemType, FloatKind};
    let kind = match dtype {
        FloatDType::F16 => FloatKind::F16,
        FloatDType::BF16 => FloatKind::BF16,
        FloatDType::F64 => FloatKind::F64,
        FloatDType::F32 | FloatDType::Flex32 => FloatKind::F32,
    };
    let client = client_of(device)?;
    let usage = client.properties().type_usage(ElemType::Float(kind));
    Some(usage.contains(TypeUsage::Arithmetic))
}

/// The name cubecl gives the runtime on `device` (`wgpu<wgsl>`, `wgpu<spirv>`,
/// `wgpu<msl>`); `None` off wgpu.
pub(crate) fn compiler(device: &burn::tensor::Device) -> Option<&'static str> {
    client_of(device).map(|client| client.name())
}

#[cfg(test)]
mod tests {
    use burn::tensor::TensorData;

    use super::*;
    use crate::gpu::direct::{launch, start};
    use crate::gpu::kernels::{BIAS_RELU, WORKGROUP};
    use crate::gpu::launches;

    /// A kernel launched through wgpu directly sees what burn's kernels wrote just
    /// before it (still unsubmitted in cubecl's stream), and burn's kernels after it see
    /// what it wrote: the same numbers as the formula. It counts as one launch.
    #[test]
    fn a_direct_launch_runs_in_order_with_burns_kernels() {
        let (device, _) = start().expect("a wgpu adapter");
        let (rows, cols) = (300usize, 7usize);
        let x: Vec<f32> = (0..rows * cols)
            .map(|i| (i % 13) as f32 / 6.0 - 1.0)
            .collect();
        let bias: Vec<f32> = (0..cols).map(|j| j as f32 / 10.0 - 0.3).collect();
        // Enqueued by burn, not yet submitted when the kernel below is launched.
        let a =
            Tensor::<2>::from_data(TensorData::new(x.clone(), [rows, cols]), &device) * 2.0 - 0.5;
        let b = Tensor::<1>::from_data(TensorData::new(bias.clone(), [cols]), &device);
        let a = float_f32(&a).expect("on wgpu");
        let b = float_f32(&b).expect("on wgpu");
        let h = empty_1d(&a, rows * cols, DType::F32);
        let p = upload_u32(&a.client, &[rows as u32, cols as u32]);
        // (Only this test dispatches directly in this process: the other tests' launches
        // go through cubecl, and run alongside.)
        let before = launches::direct_so_far();
        launch(
            &a.client,
            BIAS_RELU,
            grid(((rows * cols) as u32).div_ceil(WORKGROUP)),
            &[&a.handle, &b.handle, &h.handle, &p],
        );
        assert_eq!(launches::direct_so_far() - before, 1);
        // Read through a burn kernel enqueued after it.
        let out: Vec<f32> = (to_matrix(h, rows, cols) + 1.0)
            .into_data()
            .try_to_vec()
            .expect("f32");
        for (i, got) in out.iter().enumerate() {
            let want = (x[i] * 2.0 - 0.5 + bias[i % cols]).max(0.0) + 1.0;
            assert!(
                (got - want).abs() <= 1e-6,
                "element {i}: {got} against {want}"
            );
        }
    }
}
