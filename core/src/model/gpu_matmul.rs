//! A tiled matrix product of our own on a wgpu device (`shaders/matmul.wgsl`), for the
//! convolutions' im2col path: `a` times `b`, either read through its strides, with a bias
//! and ReLU after it when asked.
//!
//! Why: on an H100 the im2col convolutions run at 7-13 TFLOP/s through cubecl's WGSL
//! matmul, a fifth or less of the card's FP32 peak, and that, not the launches, is what a
//! ResNet-18 epoch waits on (README, "GPU, the second lease"). This kernel is the
//! alternative to measure against it: 64 x 64 tiles of the output, 4 x 4 per invocation in
//! registers, no copy of a transposed operand, the bias and ReLU in the same pass. It is
//! not the default: `TAKS_GPU_MATMUL=tiled` ([`GpuMatmul`]) turns it on for the im2col convolutions
//! ([`super::im2col`]), so a GPU run can time both; the tests compare it with burn's
//! matmul on lavapipe.

use burn::tensor::{DType, Tensor};

use crate::gpu::bridge;
use crate::gpu::kernels::MATMUL;

/// The output's rows and columns one workgroup computes (`shaders/matmul.wgsl`).
const TILE: usize = 64;

/// Which matmul the im2col convolutions use, from `TAKS_GPU_MATMUL` (`burn` when unset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuMatmul {
    /// burn's (cubecl's, autotuned).
    Burn,
    /// [`matmul`].
    Tiled,
}

impl GpuMatmul {
    /// From the environment; an unknown value is an error the caller reports (`taks`
    /// checks it before anything runs).
    pub fn from_env() -> Result<Self, String> {
        Self::parse(std::env::var("TAKS_GPU_MATMUL").ok().as_deref())
    }

    fn parse(value: Option<&str>) -> Result<Self, String> {
        match value {
            None | Some("burn") => Ok(Self::Burn),
            Some("tiled") => Ok(Self::Tiled),
            Some(other) => Err(format!("TAKS_GPU_MATMUL={other:?}: expected burn or tiled")),
        }
    }

    /// [`GpuMatmul::from_env`] read once per process (`burn` if the value is unknown;
    /// `taks` refuses that before this is read).
    pub fn current() -> Self {
        static CURRENT: std::sync::OnceLock<GpuMatmul> = std::sync::OnceLock::new();
        *CURRENT.get_or_init(|| Self::from_env().unwrap_or(Self::Burn))
    }
}

/// `a` `[M, K]` times `b` `[K, N]` (any strides), plus `bias` `[N]` where there is one,
/// then ReLU when `relu` (NaN kept): a fresh row-major `[M, N]`. `None` off wgpu or where
/// a size or an index passes 32 bits.
pub(crate) fn matmul(
    a: &Tensor<2>,
    b: &Tensor<2>,
    bias: Option<&Tensor<1>>,
    relu: bool,
) -> Option<Tensor<2>> {
    let [rows, depth] = a.dims();
    let [depth_b, cols] = b.dims();
    assert_eq!(depth, depth_b, "the inner sizes agree");
    let a = bridge::float_f32_strided(a)?;
    let b = bridge::float_f32_strided(b)?;
    let reach = |dims: [usize; 2], strides: &[usize]| {
        (dims[0].saturating_sub(1)) * strides[0] + (dims[1].saturating_sub(1)) * strides[1]
    };
    let (sa, sb) = (a.meta.strides().to_vec(), b.meta.strides().to_vec());
    let largest = [
        rows * cols,
        reach([rows, depth], &sa),
        reach([depth, cols], &sb),
    ];
    if largest.iter().any(|&v| v >= u32::MAX as usize) {
        return None;
    }
    let bias = match bias {
        Some(v) => {
            assert_eq!(v.dims(), [cols], "one bias per column");
            Some(bridge::float_f32(v)?)
        }
        None => None,
    };
    let tiles_n = cols.div_ceil(TILE);
    let tiles = rows.div_ceil(TILE) * tiles_n;
    let params = bridge::upload_sizes(
        &a.client,
        &[
            rows,
            cols,
            depth,
            sa[0],
            sa[1],
            sb[0],
            sb[1],
            bias.is_some() as usize,
            relu as usize,
            tiles_n,
        ],
    )?;
    let c = bridge::empty_1d(&a, rows * cols, DType::F32);
    // Without a bias the kernel reads none: any buffer holds its place.
    let bias_handle = bias.as_ref().map_or(&a.handle, |v| &v.handle);
    bridge::launch(
        &a.client,
        MATMUL,
        bridge::grid(u32::try_from(tiles).ok()?),
        &[&a.handle, &b.handle, bias_handle, &c.handle, &params],
    );
    Some(bridge::to_matrix(c, rows, cols))
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Distribution, activation::relu};

    use super::*;
    use crate::test_support::{gap, host};

    /// On lavapipe: the tiled product is burn's, for sizes on and off the tile's edges,
    /// each operand contiguous and transposed (a view), so both ways of loading a tile
    /// run, with and without a bias and ReLU.
    #[test]
    fn the_tiled_matmul_is_burns() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        for [m, k, n] in [[64, 16, 64], [130, 27, 70], [3, 576, 65], [200, 33, 1]] {
            let a = Tensor::<2>::random([m, k], Distribution::Normal(0.0, 1.0), &device);
            let bt = Tensor::<2>::random([n, k], Distribution::Normal(0.0, 1.0), &device);
            let bias = Tensor::<1>::random([n], Distribution::Normal(0.0, 1.0), &device);
            // b as the weights lie in a convolution: [N, K], read transposed.
            let b = bt.clone().transpose();
            // Each operand contiguous and as a transposed view of a contiguous one.
            let at = a.clone().transpose().reshape([k * m]).reshape([k, m]);
            let b_rows = b.clone().reshape([k * n]).reshape([k, n]);
            let operands = [
                ("a, b^T", a.clone(), b.clone()),
                ("a^T^T, b", at.transpose(), b_rows),
            ];
            for (name, lhs, rhs) in operands {
                for (with_bias, with_relu) in [(false, false), (true, true), (true, false)] {
                    let ours =
                        matmul(&lhs, &rhs, with_bias.then_some(&bias), with_relu).expect("on wgpu");
                    let mut theirs = a.clone().matmul(b.clone());
                    if with_bias {
                        theirs = theirs + bias.clone().unsqueeze::<2>();
                    }
                    if with_relu {
                        theirs = relu(theirs);
                    }
                    let (ours, theirs) = (host(ours), host(theirs));
                    let gap = gap(&ours, &theirs);
                    assert!(
                        gap <= 1e-4 * (k as f32).sqrt(),
                        "{m}x{k}x{n}, {name}, bias {with_bias}, relu {with_relu}: off by {gap}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_switch_reads_two_values_and_refuses_others() {
        assert_eq!(GpuMatmul::parse(None), Ok(GpuMatmul::Burn));
        assert_eq!(GpuMatmul::parse(Some("burn")), Ok(GpuMatmul::Burn));
        assert_eq!(GpuMatmul::parse(Some("tiled")), Ok(GpuMatmul::Tiled));
        for silly in ["", "fast", "Tiled"] {
            let refused = GpuMatmul::parse(Some(silly)).unwrap_err();
            assert!(refused.contains("expected burn or tiled"), "{refused}");
        }
    }
}
