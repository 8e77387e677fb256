//! Split-K: a product with few blocks of output and a deep sum (a convolution's weight
//! gradient, `[out channels, N H W] x [N H W, in channels x kh kw]`) has its depth cut
//! into ranges, each range's product computed by its own workgroups, and the ranges'
//! partial products added in f32. [`split_depth`] is the rule both matmuls follow: the
//! kernel on cooperative matrices splits inside its launch ([`super::coop`]), and
//! [`product`] splits burn's matmul into a batch of equal ranges.
//!
//! Why: on an H100 the weight gradients were 58-60% of every training step's kernel time,
//! at 1.3-5 TFLOP/s where the same layers' forward passes ran at 8-27 (docs/benchmarks.md,
//! "Where a GPU step's time goes (H100, the per-op clock)"). The CNN's 64 -> 64 layer at
//! 32x32 and batch 128 has a 64 x 576 output, nine 64 x 64 blocks, summed over a depth of
//! 131,072: nine workgroups for a card of 132 multiprocessors, each walking the whole
//! depth. burn's matmul does not split K; a batched product of 32 ranges gives it 288
//! blocks to spread, and the partial products (32 x 64 x 576 floats) cost little to add.

use burn::tensor::{DType, Tensor};

use crate::plan::Kernel;

/// Splitting aims at this many workgroups for a product (an H100 has 132 multiprocessors,
/// each running several workgroups of 256 at once)...
const WORKGROUPS_WANTED: usize = 512;
/// ... each split at least this deep in burn's matmul, and this many staging steps deep
/// in a kernel that stages its depth (shallower ranges would spend more on writing and
/// adding their partial products than the splitting gains) ...
const MIN_SPLIT_DEPTH: usize = 512;
const STEPS_PER_SPLIT: usize = 16;
/// ... and the partial products, in f32, within this many bytes.
const PARTIAL_BYTES: usize = 64 << 20;

/// The output block burn's matmul is taken to compute per workgroup, for counting
/// blocks: cubecl autotunes its tiling, so this is an estimate, which decides only how
/// many ranges a product is cut into.
const BURN_BLOCK: [usize; 2] = [64, 64];

/// How many ranges a product of `[m, n, depth]` that fills `blocks` blocks of the output
/// splits its depth into, at most: enough for [`WORKGROUPS_WANTED`] workgroups, each
/// range at least `min_depth` deep, the partial products within [`PARTIAL_BYTES`]; 1 (or
/// 0) where a product has blocks enough to fill a GPU or is too shallow to share out.
fn most_splits(blocks: usize, [m, n, depth]: [usize; 3], min_depth: usize) -> usize {
    let by_depth = depth / min_depth.max(1);
    let by_memory = PARTIAL_BYTES / (4 * m * n).max(1);
    WORKGROUPS_WANTED
        .div_ceil(blocks.max(1))
        .min(by_depth)
        .min(by_memory)
}

/// How a product of `[m, n, depth]` that fills `blocks` blocks of the output splits its
/// depth on a kernel that stages `step` of it at a time: `(splits, depth of one split)`,
/// the latter a multiple of `step` (`(1, depth)` where it does not split); the last range
/// may be shorter. The kernel on cooperative matrices splits this way.
pub(super) fn split_depth(blocks: usize, shape: [usize; 3], step: usize) -> (usize, usize) {
    let depth = shape[2];
    let splits = most_splits(blocks, shape, STEPS_PER_SPLIT * step);
    if splits <= 1 {
        return (1, depth);
    }
    let chunk = depth.div_ceil(splits).next_multiple_of(step);
    (depth.div_ceil(chunk), chunk)
}

/// How many equal ranges burn's matmul splits a product of `[m, n, depth]` into (1:
/// not split): the largest count that divides the depth, within [`most_splits`].
pub(crate) fn even_splits(shape: [usize; 3]) -> usize {
    let [m, n, depth] = shape;
    let blocks = m.div_ceil(BURN_BLOCK[0]) * n.div_ceil(BURN_BLOCK[1]);
    let most = most_splits(blocks, shape, MIN_SPLIT_DEPTH);
    (2..=most).rev().find(|s| depth % s == 0).unwrap_or(1)
}

/// How many ranges [`product`] cuts `a` times `b` into: [`even_splits`] where the plan
/// takes split-K for both operands' device and type ([`Kernel::DepthSplit`]), else 1.
pub(crate) fn splits_for(a: &Tensor<2>, b: &Tensor<2>) -> usize {
    if !(Kernel::DepthSplit.runs_for(a) && Kernel::DepthSplit.runs_for(b)) {
        return 1;
    }
    let ([m, depth], [_, n]) = (a.dims(), b.dims());
    even_splits([m, n, depth])
}

/// `a` `[m, depth]` times `b` `[depth, n]` by burn's matmul, its depth split into
/// [`even_splits`] ranges where the plan takes split-K for the type
/// ([`Kernel::DepthSplit`]): one batched product of `[ranges, m, depth / ranges]` by
/// `[ranges, depth / ranges, n]`, the partial products added in f32 and the sum given
/// back in `a`'s type. `a` is cut as `a.transpose()` lies (the weight gradient's `a` is
/// the transposed view of the output gradient's rows, so its ranges are views too).
pub(crate) fn product(a: &Tensor<2>, b: &Tensor<2>) -> Tensor<2> {
    let [m, depth] = a.dims();
    let [_, n] = b.dims();
    let splits = splits_for(a, b);
    if splits <= 1 {
        return a.clone().matmul(b.clone());
    }
    let range = depth / splits;
    let a = a
        .clone()
        .transpose()
        .reshape([splits, range, m])
        .swap_dims(1, 2);
    let b = b.clone().reshape([splits, range, n]);
    let partial = a.matmul(b);
    let dtype = partial.dtype();
    let sum = match dtype {
        DType::F32 => partial.sum_dim(0),
        _ => partial.cast(DType::F32).sum_dim(0).cast(dtype),
    };
    sum.reshape([m, n])
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Distribution};

    use super::*;
    use crate::test_support::{host, random};

    /// A product with few blocks of output and a deep sum (a convolution's weight
    /// gradient) splits its depth into ranges that cover it exactly, in whole steps; one
    /// with blocks enough, a shallow one, or one whose splits' sums would pass the
    /// memory allowed, does not.
    #[test]
    fn a_deep_product_with_few_blocks_splits_its_depth() {
        // The CNN's second layer's weight gradient at batch 128: 64 x 576, depth 131,072.
        let (splits, chunk) = split_depth(9, [64, 576, 131_072], 32);
        assert_eq!(splits, 57);
        assert_eq!(chunk % 32, 0);
        assert!(splits * chunk >= 131_072 && (splits - 1) * chunk < 131_072);
        // A forward pass of 4,096 blocks, a shallow product, and a huge output: no split.
        assert_eq!(split_depth(4096, [131_072, 64, 576], 32), (1, 576));
        assert_eq!(split_depth(1, [64, 64, 511], 32), (1, 511));
        assert_eq!(split_depth(2, [8192, 8192, 1 << 20], 32), (1, 1 << 20));
    }

    /// burn's matmul takes equal ranges: the CNN's 64 -> 64 layer (nine blocks, depth
    /// 128 x 32 x 32) in 32 (the largest divisor of the depth up to 57), ResNet-18's stem
    /// (64 x 147, depth 128 x 112 x 112 = 2^15 x 49) in 128, a last batch of 51 images in
    /// 51; never a forward pass's product, a shallow one, or one of a prime depth.
    #[test]
    fn burns_matmul_splits_into_equal_ranges() {
        assert_eq!(even_splits([64, 576, 128 * 32 * 32]), 32);
        assert_eq!(even_splits([64, 147, 128 * 112 * 112]), 128);
        assert_eq!(even_splits([64, 576, 51 * 32 * 32]), 51);
        assert_eq!(even_splits([128 * 32 * 32, 64, 576]), 1);
        assert_eq!(even_splits([64, 576, 1023]), 1);
        assert_eq!(even_splits([4, 36, 65_537]), 1);
        for shape in [[64, 576, 131_072], [64, 147, 1_605_632], [16, 1764, 8_192]] {
            let s = even_splits(shape);
            assert!(s > 1 && shape[2] % s == 0 && shape[2] / s >= MIN_SPLIT_DEPTH);
        }
    }

    /// On lavapipe, a product that splits (4 x 36 over a depth of 2,048: four ranges)
    /// equals the unsplit one, in f32 and in f16, with `a` the transposed view a weight
    /// gradient hands it; on flex it is not split and is burn's product, bit for bit.
    #[test]
    fn a_split_product_is_the_product() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let [m, n, depth] = [4, 36, 2048];
        let a = random([depth, m], Distribution::Normal(0.0, 1.0), 7, &device).transpose();
        let b = random([depth, n], Distribution::Normal(0.0, 1.0), 8, &device);
        let exact = host(a.clone().matmul(b.clone()));
        for dtype in [DType::F32, DType::F16] {
            let (a, b) = (a.clone().cast(dtype), b.clone().cast(dtype));
            assert_eq!(splits_for(&a, &b), 4, "{dtype:?}");
            let got = product(&a, &b);
            assert_eq!((got.dims(), got.dtype()), ([m, n], dtype));
            let got = host(got.cast(DType::F32));
            // f16 operands keep 11 bits: each of the 2,048 terms is off by about 1e-3 of
            // its size, the sums (about 45 in size) by a few hundredths; a range lost or
            // counted twice would be off by tens.
            let allowed = if dtype == DType::F32 { 1e-3 } else { 0.25 };
            let worst = got
                .iter()
                .zip(&exact)
                .fold(0.0f32, |w, (g, e)| w.max((g - e).abs()));
            assert!(worst < allowed, "{dtype:?}: off by {worst}");
        }
        let flex = Device::flex();
        let a = random([depth, m], Distribution::Normal(0.0, 1.0), 7, &flex).transpose();
        let b = random([depth, n], Distribution::Normal(0.0, 1.0), 8, &flex);
        assert_eq!(splits_for(&a, &b), 1);
        assert_eq!(host(product(&a, &b)), host(a.matmul(b)));
    }
}
