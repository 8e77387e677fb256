//! Where burn's kernel fusion meets taks's own kernels: a wgpu tensor's primitive as the
//! buffer a WGSL kernel binds, and a buffer back as a primitive.
//!
//! Without the `fusion` feature (the default build) burn's `Cube` backend is the cubecl
//! backend itself, and its primitive is already the buffer ([`CubeTensor`]). With it,
//! `Cube` is `Fusion<CubeBackend>`: an operation is recorded, not run, so that chains of
//! elementwise operations, a matmul's epilogue and reductions can be compiled into one
//! kernel, and the primitive is a lazy handle into the fusion server's table. A kernel of
//! ours then *resolves* its inputs (burn runs what is recorded on the tensor's stream and
//! hands over the buffer; burn-fusion's `resolve_tensor_float`) and *registers* its
//! outputs as fresh tensors of the server (an `Init` operation, as burn's own
//! `float_from_data` does). Each of our kernels thus ends a fused segment: fusion's gain
//! is in what lies between them, batch norm's and Adam's elementwise chains, and the
//! autodiff graph's own arithmetic.
//!
//! Ordering: resolving drains the tensor's stream before the buffer is handed out, and
//! fused kernels are enqueued on the caller's cubecl stream, so a kernel of ours sees
//! everything recorded before it, and what is recorded after it runs after it. A buffer a
//! kernel of ours writes in place (Adam's weights and moments) is a clone of the handle the
//! server holds, so the server never reuses it for its own in-place writes while ours
//! runs (cubecl's `can_mut` is false while two handles exist).

use burn::backend::Cube;
use burn::backend::CubeDevice;
use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::wgpu::CubeTensor;

/// The primitive of a float or int tensor on burn's cubecl backend (both are
/// [`CubeTensor`] without fusion, both the same lazy handle with it).
pub(crate) type Primitive = FloatTensor<Cube>;

/// True when the primitive lives on the wgpu runtime (the only one that runs our
/// kernels), read without running anything.
pub(crate) fn on_wgpu(prim: &Primitive) -> bool {
    matches!(device(prim), CubeDevice::Wgpu(_))
}

#[cfg(not(feature = "fusion"))]
fn device(prim: &Primitive) -> &CubeDevice {
    &prim.device
}

/// The buffer behind a float primitive (its recorded operations run first).
#[cfg(not(feature = "fusion"))]
pub(crate) fn resolve_float(prim: Primitive) -> CubeTensor {
    prim
}

/// The buffer behind an int primitive (its recorded operations run first).
#[cfg(not(feature = "fusion"))]
pub(crate) fn resolve_int(prim: IntTensor<Cube>) -> CubeTensor {
    prim
}

/// A buffer our kernel wrote, as a primitive of burn's backend (float or int, by its
/// dtype).
#[cfg(not(feature = "fusion"))]
pub(crate) fn register(t: CubeTensor) -> Primitive {
    t
}

#[cfg(feature = "fusion")]
fn device(prim: &Primitive) -> &CubeDevice {
    prim.client.device()
}

#[cfg(feature = "fusion")]
pub(crate) fn resolve_float(prim: Primitive) -> CubeTensor {
    use burn::backend::wgpu::CubeBackend;
    prim.client
        .clone()
        .resolve_tensor_float::<CubeBackend>(prim)
}

#[cfg(feature = "fusion")]
pub(crate) fn resolve_int(prim: IntTensor<Cube>) -> CubeTensor {
    use burn::backend::wgpu::CubeBackend;
    prim.client.clone().resolve_tensor_int::<CubeBackend>(prim)
}

#[cfg(feature = "fusion")]
pub(crate) fn register(t: CubeTensor) -> Primitive {
    use burn::backend::TensorMetadata;
    use burn::backend::fusion::stream::StreamId;
    use burn::backend::fusion::{NoOp, get_client};
    use burn::backend::ir::{BackendIr, InitOperationIr, OperationIr};
    use burn::backend::wgpu::CubeBackend;

    let client = get_client::<CubeBackend>(&t.device);
    let (shape, dtype) = (TensorMetadata::shape(&t), t.dtype);
    let handle = <CubeBackend as BackendIr>::float_tensor_handle(t);
    let init = InitOperationIr::create(shape, dtype, || client.register_tensor_handle(handle));
    client
        .register(
            StreamId::current(),
            OperationIr::Init(init),
            NoOp::<CubeBackend>::new(),
        )
        .pop()
        .expect("an init operation has one output")
}
