//! The layout taks's GPU kernels leave activations in: an `[N, C, H, W]` tensor whose
//! memory is `[N, H, W, C]` (channels last), what a matmul over im2col's patches writes.
//! The batch norm and the residual ending keep it, so that the pool, convolution or
//! matmul after them reads their output without a copy.

use burn::tensor::Tensor;

/// Whether `strides` lay out `[N, C, H, W]` `dims` channels last.
pub(crate) fn lies_channels_last([_, c, h, w]: [usize; 4], strides: &[usize]) -> bool {
    strides[..4] == [h * w * c, 1, w * c, c]
}

/// A kernel's flat output of `dims`' element count as `[N, C, H, W]`: a view of
/// `[N, H, W, C]` memory when `last`, else contiguous.
pub(crate) fn from_flat(flat: Tensor<1>, dims: [usize; 4], last: bool) -> Tensor<4> {
    let [n, c, h, w] = dims;
    match last {
        true => flat.reshape([n, h, w, c]).permute([0, 3, 1, 2]),
        false => flat.reshape(dims),
    }
}
