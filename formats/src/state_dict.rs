//! Pretrained weights as PyTorch keeps them: a module's `state_dict`, tensor by name,
//! from a `.safetensors` file or a torch `.pth` archive ([`crate::pth`]).
//!
//! Which file it is comes from its first bytes, not its name: a zip archive is torch's
//! format since 1.6; anything else must be SafeTensors. Floating tensors (f32, f16,
//! bf16, f64) are read as f32; the others (the `num_batches_tracked` counters of batch
//! norm) keep only their shape, as nothing here loads them. A file that wraps its
//! `state_dict` in a training checkpoint (`{"state_dict": ...}` or `{"model": ...}`), or
//! that `nn.DataParallel` saved (every name under `module.`), gives the same names as
//! the bare `state_dict`.

use std::collections::BTreeMap;
use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use crate::npy::f16_to_f32;
use crate::{FormatError, Result};

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

/// Read the state_dict in `path`, a torch `.pth` or a `.safetensors` file.
pub fn read(path: &Path) -> Result<StateDict> {
    let mut head = [0u8; 4];
    {
        use std::io::Read;
        let mut file = std::fs::File::open(path).map_err(|e| FormatError::io(path, e))?;
        let mut got = 0;
        while got < 4 {
            match file
                .read(&mut head[got..])
                .map_err(|e| FormatError::io(path, e))?
            {
                0 => break,
                n => got += n,
            }
        }
        if got < 4 {
            return Err(FormatError::malformed(
                path,
                "too short for weights (empty or truncated)",
            ));
        }
    }
    if &head == b"PK\x03\x04" {
        return read_pth(path);
    }
    if head[0] == 0x80 && (2..=5).contains(&head[1]) {
        return Err(FormatError::malformed(
            path,
            "a torch file in the format before PyTorch 1.6 (a bare pickle); save it again with torch.save in a current PyTorch",
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    safetensors(&bytes, path)
}

#[cfg(not(target_arch = "wasm32"))]
fn read_pth(path: &Path) -> Result<StateDict> {
    crate::pth::read(path)
}

#[cfg(target_arch = "wasm32")]
fn read_pth(path: &Path) -> Result<StateDict> {
    Err(FormatError::malformed(
        path,
        "torch .pth files are not read here",
    ))
}

/// The tensors of SafeTensors `bytes`; `path` names the file in errors.
pub fn safetensors(bytes: &[u8], path: &Path) -> Result<StateDict> {
    let bad = |e: String| {
        FormatError::malformed(
            path,
            format!("neither a torch .pth archive nor a SafeTensors file ({e})"),
        )
    };
    crate::checkpoint::data_within_file(bytes).map_err(bad)?;
    let file = SafeTensors::deserialize(bytes).map_err(|e| bad(e.to_string()))?;
    let mut tensors = BTreeMap::new();
    for (name, view) in file.tensors() {
        let shape = view.shape().to_vec();
        let data = view.data();
        let dtype = match view.dtype() {
            Dtype::F32 => Some(crate::pickle::Dtype::F32),
            Dtype::F16 => Some(crate::pickle::Dtype::F16),
            Dtype::BF16 => Some(crate::pickle::Dtype::BF16),
            Dtype::F64 => Some(crate::pickle::Dtype::F64),
            _ => None,
        };
        let weight = match dtype {
            Some(dtype) => Weight::Float {
                shape,
                values: data
                    .chunks_exact(dtype.size())
                    .map(|b| to_f32(dtype, b))
                    .collect(),
            },
            None => Weight::Other { shape },
        };
        tensors.insert(name, weight);
    }
    Ok(StateDict { tensors }.without_data_parallel_prefix())
}

/// One little-endian element of a floating `dtype` as f32.
pub(crate) fn to_f32(dtype: crate::pickle::Dtype, b: &[u8]) -> f32 {
    use crate::pickle::Dtype;
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
        use crate::pickle::Dtype;
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
