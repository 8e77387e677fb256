//! The WGSL shaders of the `taks-shaders` crate, wrapped as burn `KernelSource`s.

use burn::backend::wgpu::{KernelSource, SourceTemplate};
use burn::tensor::DType;
use cubecl::prelude::KernelId;
pub(crate) use taks_shaders::{
    ADAM, BIAS_RELU, BIAS_RELU_F16, BN_APPLY, BN_APPLY_F16, BN_GRAD_REDUCE, BN_GRAD_REDUCE_F16,
    BN_GRAD_X, BN_GRAD_X_F16, BN_MOMENTS, BN_MOMENTS_F16, COL2IM, COL2IM_F16, CROSS_ENTROPY,
    CROSS_ENTROPY_GRAD, HISTOGRAM_SPAN, IM2COL, IM2COL_F16, MATMUL, MATMUL_COOP_8, MATMUL_COOP_16,
    MLP_RELU_GRAD, MLP_RELU_GRAD_F16, MLP_SOFTMAX_GRAD, MLP_SOFTMAX_GRAD_F16, NOISE_RISK,
    RESIDUAL_RELU, RESIDUAL_RELU_F16, RESIDUAL_RELU_GRAD, RESIDUAL_RELU_GRAD_F16, SELECT_COUNT,
    SELECT_DIGIT, SELECT_HISTOGRAM, SELECT_SCAN, SELECT_SCATTER, SUM_SPLITS_F16, Shader, WORKGROUP,
};

/// The float types of the activations taks's kernels read and write: f32, or f16 in a
/// mixed-precision step (the kernels written for both declare `alias elem`; see
/// `taks_shaders::ELEM_F16`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Elem {
    F32,
    F16,
}

impl Elem {
    /// The kernels' type for `dtype`; `None` for one they lack (bf16: WGSL has no such
    /// type), where the caller runs burn's operations instead.
    pub(crate) fn of(dtype: DType) -> Option<Self> {
        match dtype {
            DType::F32 => Some(Self::F32),
            DType::F16 => Some(Self::F16),
            _ => None,
        }
    }

    pub(crate) fn dtype(self) -> DType {
        match self {
            Self::F32 => DType::F32,
            Self::F16 => DType::F16,
        }
    }

    /// The shader of this type out of a kernel's two.
    pub(crate) fn pick(self, f32: Shader, f16: Shader) -> Shader {
        match self {
            Self::F32 => f32,
            Self::F16 => f16,
        }
    }
}

/// `shaders/adam_packed.wgsl` for one gradient buffer per entry of `f16`, gradient j
/// read as f16 where `f16[j]` (`taks_shaders::adam_packed`). The text is generated once
/// per list and kept for the process (a shader's name and text are `'static`, and a few
/// lists at most occur in a run).
pub(crate) fn adam_packed(f16: &[bool]) -> Shader {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static MADE: OnceLock<Mutex<HashMap<Vec<bool>, Shader>>> = OnceLock::new();
    let mut made = MADE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    *made.entry(f16.to_vec()).or_insert_with(|| {
        let gradients = f16.len();
        // f32 gradients only: the name and text as they always were. Otherwise the name
        // says which are f16 (`taks_adam_packed_4_f16_0101`).
        let (name, prelude) = match f16.iter().any(|&h| h) {
            false => (
                format!("taks_adam_packed_{gradients}"),
                taks_shaders::ADAM_COMMON,
            ),
            true => {
                let mask: String = f16.iter().map(|&h| if h { '1' } else { '0' }).collect();
                let name = format!("taks_adam_packed_{gradients}_f16_{mask}");
                (name, taks_shaders::ADAM_COMMON_F16)
            }
        };
        Shader {
            name: Box::leak(name.into_boxed_str()),
            prelude,
            body: Box::leak(taks_shaders::adam_packed(f16).into_boxed_str()),
        }
    })
}

/// A shader as burn's wgpu backend launches it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wgsl(pub Shader);

impl KernelSource for Wgsl {
    fn source(&self) -> SourceTemplate {
        // No `{{ }}` placeholders: all sizes travel in storage buffers, so one compiled
        // pipeline per shader serves every n, C and k.
        SourceTemplate::new(self.0.text())
    }

    fn id(&self) -> KernelId {
        KernelId::new::<Self>().info(self.0.name)
    }

    fn lang(&self) -> &'static str {
        "wgsl"
    }
}
