//! A torch `.pth` file (`torch.save` since PyTorch 1.6): a zip archive with one folder
//! holding `data.pkl`, the pickled object, and `data/<key>`, one file of raw
//! little-endian elements per storage the tensors view.
//!
//! The pickle is read by [`crate::pickle`], which runs nothing and refuses any name a
//! `state_dict` does not use; each tensor is then cut out of its storage by its offset,
//! size and stride, every index checked against the storage's length first.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::pickle::{self, TensorRef, Value};
use crate::weights::{StateDict, Weight, to_f32};
use crate::{FormatError, Result};

/// Read the state_dict in the torch archive `path`.
pub fn read(path: &Path) -> Result<StateDict> {
    let bad = |reason: String| FormatError::malformed(path, reason);
    let file = File::open(path).map_err(|e| FormatError::io(path, e))?;
    let file_len = file.metadata().map_err(|e| FormatError::io(path, e))?.len();
    // torch's archive starts at byte 0. Left to detect it, zip 9 took a small archive's
    // central directory for one at another offset and refused it.
    let config = zip::read::Config {
        archive_offset: zip::read::ArchiveOffset::Known(0),
    };
    let mut archive = zip::ZipArchive::with_config(config, BufReader::new(file))
        .map_err(|e| bad(format!("not a readable torch archive (zip: {e})")))?;
    let pickles: Vec<String> = archive
        .file_names()
        .filter_map(|n| n.ok().map(|n| n.into_owned()))
        .filter(|n| n.ends_with("data.pkl") && n.matches('/').count() == 1)
        .collect();
    let [pickle_name] = pickles.as_slice() else {
        return Err(bad(format!(
            "a zip archive with {} data.pkl files; a torch.save archive has one",
            pickles.len()
        )));
    };
    let folder = pickle_name.trim_end_matches("data.pkl").to_string();
    let mut entry = |name: &str| -> Result<Option<Vec<u8>>> {
        let mut file = match archive.by_name(name) {
            Ok(f) => f,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) => return Err(bad(format!("{name}: {e}"))),
        };
        if file.size() > file_len {
            return Err(bad(format!(
                "{name} claims {} bytes, more than the file holds",
                file.size()
            )));
        }
        let mut bytes = Vec::with_capacity(file.size() as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| bad(format!("{name}: {e}")))?;
        Ok(Some(bytes))
    };
    if let Some(order) = entry(&format!("{folder}byteorder"))?
        && order != b"little"
    {
        return Err(bad("big-endian tensors (byteorder is not 'little')".into()));
    }
    let pickled = entry(pickle_name)?.expect("listed above");
    let value = pickle::read(&pickled).map_err(|e| bad(format!("{pickle_name}: {e}")))?;
    let named = tensors_of(value).ok_or_else(|| {
        bad("holds no state_dict (a dict of tensors, or one under 'state_dict' or 'model')".into())
    })?;
    let mut storages: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut tensors = BTreeMap::new();
    for (name, t) in named {
        let weight = if t.dtype.is_float() {
            if !storages.contains_key(&t.key) {
                let data = entry(&format!("{folder}data/{}", t.key))?.ok_or_else(|| {
                    bad(format!(
                        "tensor {name}: its storage data/{} is missing",
                        t.key
                    ))
                })?;
                storages.insert(t.key.clone(), data);
            }
            let values =
                gather(&t, &storages[&t.key]).map_err(|e| bad(format!("tensor {name}: {e}")))?;
            Weight::Float {
                shape: t.shape,
                values,
            }
        } else {
            Weight::Other { shape: t.shape }
        };
        tensors.insert(name, weight);
    }
    Ok(StateDict { tensors }.without_data_parallel_prefix())
}

/// The (name, tensor) pairs of the state_dict `value` holds: itself, or the dict under
/// `state_dict` or `model` in a training checkpoint.
fn tensors_of(value: Value) -> Option<Vec<(String, TensorRef)>> {
    let Value::Dict(entries) = value else {
        return None;
    };
    let tensors: Vec<(String, TensorRef)> = entries
        .iter()
        .filter_map(|(k, v)| match (k, v) {
            (Value::Str(k), Value::Tensor(t)) => Some((k.clone(), t.clone())),
            _ => None,
        })
        .collect();
    if !tensors.is_empty() {
        return Some(tensors);
    }
    for wanted in ["state_dict", "model"] {
        let inner = entries.iter().find_map(|(k, v)| match k {
            Value::Str(k) if k == wanted => Some(v.clone()),
            _ => None,
        });
        if let Some(found) = inner.and_then(tensors_of) {
            return Some(found);
        }
    }
    None
}

/// The elements of `t` in row-major order, as f32, from its storage's bytes.
fn gather(t: &TensorRef, storage: &[u8]) -> std::result::Result<Vec<f32>, String> {
    let size = t.dtype.size();
    let available = storage.len() / size;
    if t.storage_len > available {
        return Err(format!(
            "its storage holds {available} elements, the file says {}",
            t.storage_len
        ));
    }
    let count = t
        .shape
        .iter()
        .try_fold(1usize, |n, d| n.checked_mul(*d))
        .ok_or("its size overflows")?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let last = t
        .shape
        .iter()
        .zip(&t.stride)
        .try_fold(t.offset, |end, (d, s)| {
            end.checked_add((d - 1).checked_mul(*s)?)
        })
        .ok_or("its strides overflow")?;
    if last >= t.storage_len {
        return Err(format!(
            "it reaches element {last} of a storage of {}",
            t.storage_len
        ));
    }
    let mut out = Vec::with_capacity(count);
    let mut index = vec![0usize; t.shape.len()];
    for _ in 0..count {
        let at: usize = t.offset
            + index
                .iter()
                .zip(&t.stride)
                .map(|(i, s)| i * s)
                .sum::<usize>();
        out.push(to_f32(t.dtype, &storage[at * size..(at + 1) * size]));
        for axis in (0..index.len()).rev() {
            index[axis] += 1;
            if index[axis] < t.shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pickle::Dtype;

    #[test]
    fn gathers_a_transposed_view_and_refuses_one_past_its_storage() {
        // A 2x3 storage [0..6], viewed transposed as 3x2 (strides 1, 3).
        let storage: Vec<u8> = (0..6).flat_map(|v| (v as f32).to_le_bytes()).collect();
        let t = TensorRef {
            key: "0".into(),
            dtype: Dtype::F32,
            storage_len: 6,
            offset: 0,
            shape: vec![3, 2],
            stride: vec![1, 3],
        };
        assert_eq!(
            gather(&t, &storage).unwrap(),
            [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        );
        let past = TensorRef {
            offset: 1,
            ..t.clone()
        };
        assert!(gather(&past, &storage).unwrap_err().contains("element 6"));
        let lying = TensorRef {
            storage_len: 7,
            ..t
        };
        assert!(gather(&lying, &storage).unwrap_err().contains("holds 6"));
    }
}
