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

use crate::weights::to_f32;
pub use crate::weights::{StateDict, Weight};
use crate::{FormatError, Result};

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
