//! Host access to tensors on flex, burn's CPU backend: the few helpers the fused CPU
//! paths ([`crate::optim`]'s Adam, [`super::mlp_step`]'s graph-free MLP) share.
//!
//! On flex a tensor's buffer is ordinary host memory behind an `Arc`; burn-flex exposes
//! it (`FlexTensor::storage`, and `storage_mut`, which copies first when the buffer is
//! shared), so a loop over it is one pass where a chain of tensor operations is several,
//! each with its own output buffer. Everything here is safe code over that public API.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::{DType, Tensor, TensorData};

/// Whether `t` is an f32 tensor on flex (without autodiff). Cheap: the clone shares
/// the buffer and is dropped before anything is written.
pub(crate) fn is_flex_f32<const D: usize>(t: &Tensor<D>) -> bool {
    t.clone()
        .try_into_primitive::<Flex>()
        .is_ok_and(|p| p.dtype() == DType::F32)
}

/// The flex primitive of a tensor [`is_flex_f32`] accepted.
pub(crate) fn primitive<const D: usize>(t: Tensor<D>) -> FlexTensor {
    t.try_into_primitive::<Flex>()
        .expect("checked by flex_buffers::is_flex_f32")
}

/// `t` with its own row-major buffer of exactly its elements, so `storage_mut` indexes
/// it directly (a view into a larger or strided buffer is copied out first).
pub(crate) fn dense(t: FlexTensor) -> FlexTensor {
    let n = t.layout().num_elements();
    if t.layout().contiguous_offsets() == Some((0, n)) && t.bytes().len() == n * 4 {
        t
    } else {
        FlexTensor::from_data(t.into_data())
    }
}

/// The f32 values of `t` in row-major order, borrowed when `t` is dense.
pub(crate) fn values(t: &FlexTensor) -> std::borrow::Cow<'_, [f32]> {
    match t.as_slice::<f32>() {
        Some(v) => std::borrow::Cow::Borrowed(v),
        None => std::borrow::Cow::Owned(
            t.to_contiguous()
                .as_slice::<f32>()
                .expect("a contiguous copy")
                .to_vec(),
        ),
    }
}

/// A flex tensor of `shape` holding `values`.
pub(crate) fn from_values(values: Vec<f32>, shape: Vec<usize>) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(values, shape))
}

/// Back to an ordinary tensor.
pub(crate) fn tensor<const D: usize>(t: FlexTensor) -> Tensor<D> {
    Tensor::from_primitive::<Flex>(t)
}
