//! The tensors of pretrained weights, whichever file they came from
//! ([`crate::state_dict`] reads `.safetensors`, [`crate::pth`] torch's archives): a
//! module's `state_dict`, tensor by name, floating tensors as f32.

use std::collections::BTreeMap;

use crate::npy::f16_to_f32;
use crate::pickle::Dtype;

/// One tensor of a state_dict.
#[derive(Debug, Clone, PartialEq)]
pub enum Weight {
    /// A floating-point tensor, as f32 in row-major order.
    Float { shape: Vec<usize>, values: Vec<f32> },
    /// An integer or boolean tensor, not read.
    Other { shape: Vec<usize> },
}

impl Weight {
    pub fn shape(&self) -> &[usize] {
        match self {
            Weight::Float { shape, .. } | Weight::Other { shape } => shape,
        }
    }
}

/// A module's tensors by name (`layer1.0.conv1.weight`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateDict {
    pub tensors: BTreeMap<String, Weight>,
}

impl StateDict {
    /// Drop the `module.` that `nn.DataParallel` puts before every name.
    pub(crate) fn without_data_parallel_prefix(mut self) -> Self {
        let all = !self.tensors.is_empty() && self.tensors.keys().all(|k| k.starts_with("module."));
        if all {
            self.tensors = std::mem::take(&mut self.tensors)
                .into_iter()
                .map(|(k, v)| (k["module.".len()..].to_string(), v))
                .collect();
        }
        self
    }
}

/// One little-endian element of a floating `dtype` as f32.
pub(crate) fn to_f32(dtype: Dtype, b: &[u8]) -> f32 {
    match dtype {
        Dtype::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        Dtype::F64 => f64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as f32,
        Dtype::BF16 => f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16),
        Dtype::F16 => f16_to_f32(u16::from_le_bytes([b[0], b[1]])),
        _ => unreachable!("called for floating types only"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_float_type_converts_exactly() {
        assert_eq!(to_f32(Dtype::F16, &[0x00, 0xc0]), -2.0);
        assert_eq!(to_f32(Dtype::BF16, &[0x80, 0x3f]), 1.0);
        assert_eq!(to_f32(Dtype::F64, &0.25f64.to_le_bytes()), 0.25);
        assert_eq!(to_f32(Dtype::F32, &(-3.5f32).to_le_bytes()), -3.5);
    }

    #[test]
    fn data_parallel_names_lose_their_prefix() {
        let mut d = StateDict::default();
        d.tensors
            .insert("module.fc.bias".into(), Weight::Other { shape: vec![2] });
        let d = d.without_data_parallel_prefix();
        assert!(d.tensors.contains_key("fc.bias"));
    }
}
