//! The WGSL shaders of the `taks-shaders` crate, wrapped as burn `KernelSource`s.

use burn::backend::wgpu::{KernelSource, SourceTemplate};
use cubecl::prelude::KernelId;
pub(crate) use taks_shaders::{
    ADAM, BIAS_RELU, BN_APPLY, BN_GRAD_REDUCE, BN_GRAD_X, BN_MOMENTS, COL2IM, COL2IM_F16,
    CROSS_ENTROPY, CROSS_ENTROPY_GRAD, HISTOGRAM_SPAN, IM2COL, IM2COL_F16, MATMUL, MLP_RELU_GRAD,
    MLP_SOFTMAX_GRAD, NOISE_RISK, RESIDUAL_RELU, RESIDUAL_RELU_GRAD, SELECT_COUNT, SELECT_DIGIT,
    SELECT_HISTOGRAM, SELECT_SCAN, SELECT_SCATTER, Shader, WORKGROUP,
};

/// `shaders/adam_packed.wgsl` for `gradients` gradient buffers. The text is generated
/// once per count and kept for the process (a shader's name and text are `'static`, and
/// a few counts at most occur in a run).
pub(crate) fn adam_packed(gradients: usize) -> Shader {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static MADE: OnceLock<Mutex<HashMap<usize, Shader>>> = OnceLock::new();
    let mut made = MADE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    *made.entry(gradients).or_insert_with(|| Shader {
        name: Box::leak(format!("taks_adam_packed_{gradients}").into_boxed_str()),
        prelude: "",
        body: Box::leak(taks_shaders::adam_packed(gradients).into_boxed_str()),
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
