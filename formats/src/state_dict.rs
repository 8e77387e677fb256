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
        let what = match crate::checkpoint::safetensors_header(bytes).map(|(_, entries)| entries) {
            // Its header reads: it is a SafeTensors file, and what is wrong is inside.
            Some(entries) => match first_bad_tensor(&entries) {
                Some(tensor) => format!("a SafeTensors file whose {tensor}"),
                None if e.starts_with("tensor ") => format!("a SafeTensors file whose {e}"),
                None => format!("a damaged SafeTensors file ({e})"),
            },
            None => format!("neither a torch .pth archive nor a SafeTensors file ({e})"),
        };
        FormatError::malformed(path, what)
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

/// Bytes per element of each data type SafeTensors defines.
fn dtype_bytes(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" => 1,
        "I16" | "U16" | "F16" | "BF16" => 2,
        "I32" | "U32" | "F32" => 4,
        "I64" | "U64" | "F64" | "C64" => 8,
        _ => return None,
    })
}

/// "tensor NAME ..." for the first tensor of the header whose entry SafeTensors cannot
/// read (its data type, shape or offsets), said as what was expected and what was found;
/// None when every entry is whole (the fault is elsewhere).
fn first_bad_tensor(entries: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let shown = |v: Option<&serde_json::Value>| v.map_or("nothing".to_string(), |v| v.to_string());
    for (name, info) in entries.iter().filter(|(name, _)| *name != "__metadata__") {
        let dtype = info
            .get("dtype")
            .and_then(|d| d.as_str())
            .unwrap_or_default();
        let Some(size) = dtype_bytes(dtype) else {
            return Some(format!(
                "tensor {name} has the data type {}, which SafeTensors does not define",
                shown(info.get("dtype"))
            ));
        };
        let sizes = |key: &str| -> Option<Vec<u64>> {
            let values = info.get(key)?.as_array()?;
            values.iter().map(|v| v.as_u64()).collect()
        };
        let Some(shape) = sizes("shape") else {
            return Some(format!(
                "tensor {name}'s shape is {}, not a list of sizes",
                shown(info.get("shape"))
            ));
        };
        let Some([start, end]) = sizes("data_offsets").and_then(|o| <[u64; 2]>::try_from(o).ok())
        else {
            return Some(format!(
                "tensor {name}'s data_offsets are {}, not [start, end]",
                shown(info.get("data_offsets"))
            ));
        };
        let held = end.checked_sub(start);
        let needed = shape.iter().try_fold(size, |n, d| n.checked_mul(*d));
        if held.is_none() || needed != held {
            let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
            return Some(format!(
                "tensor {name} of shape [{}] in {dtype} needs {} bytes, but its data_offsets are [{start}, {end}]",
                dims.join(", "),
                needed.map_or("more than 2^64".to_string(), |n| n.to_string()),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: usize) -> Vec<u8> {
        let mut text = header.as_bytes().to_vec();
        text.resize(text.len().next_multiple_of(8), b' ');
        let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
        bytes.extend(text);
        bytes.extend(vec![0u8; data]);
        bytes
    }

    fn error(bytes: &[u8]) -> String {
        safetensors(bytes, Path::new("w.safetensors"))
            .map(|_| ())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_safetensors_file_with_one_bad_tensor_is_named_as_such() {
        let ok = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"#;
        let cases = [
            (
                r#""b":{"dtype":"F128","shape":[1],"data_offsets":[8,24]}}"#,
                r#"a SafeTensors file whose tensor b has the data type "F128", which SafeTensors does not define"#,
            ),
            (
                r#""b":{"dtype":"F16","shape":[3,2],"data_offsets":[8,12]}}"#,
                "a SafeTensors file whose tensor b of shape [3, 2] in F16 needs 12 bytes, but its data_offsets are [8, 12]",
            ),
            (
                r#""b":{"dtype":"F16","shape":[-1],"data_offsets":[8,12]}}"#,
                "a SafeTensors file whose tensor b's shape is [-1], not a list of sizes",
            ),
            (
                r#""b":{"dtype":"F16","shape":[2],"data_offsets":[12]}}"#,
                "a SafeTensors file whose tensor b's data_offsets are [12], not [start, end]",
            ),
        ];
        for (bad, expected) in cases {
            let message = error(&file(&format!("{ok}{bad}"), 24));
            assert!(message.contains(expected), "{message}");
            assert!(message.contains("w.safetensors"), "{message}");
        }
        // Data cut short: the tensor whose data runs past the end is named.
        let message = error(&file(
            r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
            8,
        ));
        assert!(
            message.contains("a SafeTensors file whose tensor a's data ends at byte 16"),
            "{message}"
        );
        // Not SafeTensors at all: said so, as before.
        let message = error(b"just some text, not weights");
        assert!(
            message.contains("neither a torch .pth archive nor a SafeTensors file"),
            "{message}"
        );
        // A whole file still reads.
        let whole = file(
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            8,
        );
        assert!(safetensors(&whole, Path::new("w.safetensors")).is_ok());
    }
}
