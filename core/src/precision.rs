//! The arithmetic of a training step: f32 throughout (the default), or mixed precision,
//! where the forward and backward passes run in f16 or bf16 and everything that
//! accumulates over steps stays f32.
//!
//! Why: a GPU's matrix units (NVIDIA's tensor cores, reached through Vulkan's cooperative
//! matrices when burn compiles to SPIR-V) take only 16-bit floats, and 16-bit
//! activations halve the memory traffic on every compiler. What stays f32, as in
//! PyTorch's autocast with its gradient scaler:
//! - the weights and Adam's moments (the master copy): each layer casts its weights to
//!   the step's type where it uses them, so the gradients come back to the f32 weights
//!   through the cast;
//! - batch norm's statistics, running statistics, gamma and beta: on a wgpu device its
//!   kernels read the f16 activations and sum in f32; elsewhere its input is cast to f32
//!   and its output back;
//! - the logits, the loss and everything a method computes from them (noise risk,
//!   selection, the co-training methods' exchanges);
//! - the scoring pass over all n samples and the test accuracy, which rank and count in
//!   f32 exactly as an f32 run does.
//!
//! What runs in 16 bits: the linear layers (burn's matmul; the MLP's step without a
//! graph on a wgpu device, `ops::mlp_step::gpu`, with its kernels' f16 variants), the
//! convolutions (on a wgpu device taks's im2col and col2im in f16 around burn's f16
//! matmul, or burn's direct f16 kernels where timing finds those faster:
//! `ops::conv::train`) and the activations between them.
//!
//! f16's range stops at 65,504 and its smallest normal is 6.1e-5, so small gradients
//! would flush to zero: an f16 step scales its loss up first ([`crate::train::LossScale`]).
//! bf16 has f32's range and needs no scale.
//!
//! Only on a GPU whose compiler has the type's arithmetic, as cubecl registers it: f16
//! where the adapter offers WebGPU's `shader-f16` (WGSL, the default build) or 16-bit
//! floats (SPIR-V, `native-shaders`); bf16 only on Metal (MSL, `metal-shaders`), since
//! WGSL has no bf16 type and cubecl's SPIR-V compiler takes bf16 for conversions and dot
//! products but not arithmetic. Anywhere else the run stops before it starts, with one
//! line naming what is missing.

use burn::tensor::{DType, Device, FloatDType};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The float type of a training step's forward and backward passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// f32 everywhere.
    #[default]
    F32,
    /// f16 activations and matmuls, f32 master weights, a dynamic loss scale.
    F16,
    /// bf16 activations and matmuls, f32 master weights.
    Bf16,
}

impl Precision {
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::F16, Precision::Bf16];

    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F16 => "f16",
            Precision::Bf16 => "bf16",
        }
    }

    /// For `skip_serializing_if`: an f32 run's `config.json` stays as it was.
    pub fn is_f32(&self) -> bool {
        *self == Precision::F32
    }

    /// The 16-bit type of the step, `None` for f32.
    pub(crate) fn low(self) -> Option<FloatDType> {
        match self {
            Precision::F32 => None,
            Precision::F16 => Some(FloatDType::F16),
            Precision::Bf16 => Some(FloatDType::BF16),
        }
    }

    /// Whether the step's loss is scaled (f16's narrow range).
    pub(crate) fn scales_loss(self) -> bool {
        self == Precision::F16
    }

    /// Whether a run in this precision can train on `device`; one line naming what is
    /// missing when it cannot.
    pub fn check(self, device: &Device) -> Result<()> {
        let Some(low) = self.low() else {
            return Ok(());
        };
        let refuse =
            |why: String| Err(Error::Config(format!("--precision {}: {why}", self.name())));
        let Some(compiler) = crate::gpu::compiler(device) else {
            return refuse(
                "mixed precision runs on a GPU only (--device gpu); the CPU backend computes in f32"
                    .into(),
            );
        };
        if crate::gpu::bridge::supports_float(device, low) == Some(true) {
            return Ok(());
        }
        let adapter = crate::gpu::bridge::adapter_name(device).unwrap_or_default();
        let lacks = match (self, compiler) {
            (Precision::Bf16, "wgpu<wgsl>") => {
                "burn's WGSL compiler has no bf16 (WGSL has no such type); use --precision f16"
                    .to_string()
            }
            (Precision::F16, "wgpu<wgsl>") => {
                "the adapter lacks WebGPU's shader-f16 feature".to_string()
            }
            _ => format!("{compiler} has no {} arithmetic on it", self.name()),
        };
        refuse(format!(
            "the adapter {adapter} ({compiler}) cannot run it: {lacks}"
        ))
    }
}

/// Whether `dtype` is one of the 16-bit step types: a layer given such an input casts its
/// f32 weights to it.
pub(crate) fn is_low(dtype: DType) -> Option<FloatDType> {
    match dtype {
        DType::F16 => Some(FloatDType::F16),
        DType::BF16 => Some(FloatDType::BF16),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f32 runs anywhere; mixed precision is refused off a GPU. On burn's WGSL compiler
    /// bf16 is refused on every adapter (WGSL has no such type), naming the adapter, and
    /// f16 runs where the adapter has shader-f16 and is refused for that reason where it
    /// does not; lavapipe, the adapter of the test machines, has it.
    #[test]
    fn each_precision_is_checked_against_the_device() {
        let cpu = Device::flex();
        assert!(Precision::F32.check(&cpu).is_ok());
        let err = Precision::F16.check(&cpu).unwrap_err().to_string();
        assert!(
            err.contains("--precision f16") && err.contains("GPU only"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1);

        let gpu = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let adapter = crate::gpu::bridge::adapter_name(&gpu).expect("a wgpu adapter's name");
        assert!(Precision::F32.check(&gpu).is_ok());
        // Whether the device has shader-f16, as wgpu itself reports its features, not
        // through burn's `supports_float`, which `check` calls.
        let has_f16 = crate::gpu::direct::features()
            .expect("the device start made")
            .contains(burn::backend::wgpu::wgpu::Features::SHADER_F16);
        match Precision::F16.check(&gpu) {
            Ok(()) => assert!(has_f16, "f16 allowed on {adapter} without shader-f16"),
            Err(e) => {
                assert!(
                    !has_f16,
                    "f16 refused on {adapter}, which has shader-f16: {e}"
                );
                assert!(e.to_string().contains("shader-f16"), "{e}");
            }
        }
        if adapter.contains("llvmpipe") {
            assert!(has_f16, "lavapipe has shader-f16");
        }
        if crate::gpu::compiler(&gpu) == Some("wgpu<wgsl>") {
            let err = Precision::Bf16.check(&gpu).unwrap_err().to_string();
            assert!(err.contains("no bf16") && err.contains(&adapter), "{err}");
            assert_eq!(err.lines().count(), 1);
        }
    }
}
