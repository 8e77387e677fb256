//! How convolutional networks run their convolutions on a wgpu device.
//!
//! burn's WGSL compiler gives a 3x3 convolution's forward pass only direct kernels, which
//! on a large GPU were the slow part of the CNN's and ResNet-18's epochs; the backward
//! passes already autotune among im2col-based kernels. taks therefore runs forward passes
//! as im2col and a matmul on a GPU, and folds eval-mode batch norm into the convolution
//! before it in the scoring pass. `TAKS_GPU_CONV` picks the way, so that
//! `scripts/gpu-bench.sh` can time each on the same card; on flex none of this applies.

/// The way, from `TAKS_GPU_CONV` (`im2col` when unset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuConv {
    /// `plain`: the networks' own forward passes (burn's convolutions, batch norm after).
    Plain,
    /// `folded`: the scoring pass with batch norm folded into burn's convolution;
    /// training as `plain`.
    Folded,
    /// `im2col`: the scoring pass folded, with each convolution as im2col and a matmul;
    /// in training, each convolution's forward pass as im2col and a matmul too (its
    /// backward pass stays burn's).
    Im2col,
}

impl GpuConv {
    /// From the environment; an unknown value is an error the caller reports
    /// (`taks` checks it before anything runs).
    pub fn from_env() -> Result<Self, String> {
        match std::env::var("TAKS_GPU_CONV").as_deref() {
            Err(_) | Ok("im2col") => Ok(Self::Im2col),
            Ok("folded") => Ok(Self::Folded),
            Ok("plain") => Ok(Self::Plain),
            Ok(other) => Err(format!(
                "TAKS_GPU_CONV={other:?}: expected plain, folded or im2col"
            )),
        }
    }

    /// [`GpuConv::from_env`] read once per process (`im2col` if the value is unknown;
    /// `taks` refuses that before this is read).
    pub fn current() -> Self {
        static CURRENT: std::sync::OnceLock<GpuConv> = std::sync::OnceLock::new();
        *CURRENT.get_or_init(|| Self::from_env().unwrap_or(Self::Im2col))
    }
}
