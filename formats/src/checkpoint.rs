//! The container of a run checkpoint: named tensors plus one JSON document of state.
//!
//! It is a SafeTensors file, so any SafeTensors reader (Python's `safetensors`, burn's
//! `burn-store`) can open it, with three entries in its string metadata:
//! `format` = `taks-checkpoint`, `version`, and `state`, the JSON of whatever the
//! writer needs besides tensors (epoch, generator states, history). Tensors are f32 or
//! u32, little-endian. This module only checks the container; what the state and the
//! tensors must hold for a particular run is checked by the code that restores it.

use std::collections::BTreeMap;
use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use crate::{FormatError, Result, tensors};

/// The `format` entry of every taks checkpoint.
pub const FORMAT: &str = "taks-checkpoint";
/// The layout version this build writes and reads.
pub const VERSION: u32 = 1;

pub use crate::tensors::{Tensor, Values};

/// A decoded checkpoint: the state document and the tensors by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub state: serde_json::Value,
    pub tensors: BTreeMap<String, Tensor>,
}

impl Checkpoint {
    /// The SafeTensors bytes of this checkpoint.
    pub fn encode(&self) -> Vec<u8> {
        let version = VERSION.to_string();
        let state = self.state.to_string();
        tensors::encode(
            &self.tensors,
            &[("format", FORMAT), ("version", &version), ("state", &state)],
        )
    }

    /// Decode and check a checkpoint; `path` only names the source in errors.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Checkpoint> {
        let bad = |reason: String| FormatError::malformed(path, reason);
        data_within_file(bytes)
            .map_err(|e| bad(format!("not a taks checkpoint (SafeTensors: {e})")))?;
        let file = SafeTensors::deserialize(bytes)
            .map_err(|e| bad(format!("not a taks checkpoint (SafeTensors: {e})")))?;
        let (_, metadata) = SafeTensors::read_metadata(bytes)
            .map_err(|e| bad(format!("not a taks checkpoint (SafeTensors: {e})")))?;
        let info = metadata.metadata().as_ref();
        let entry = |key: &str| info.and_then(|m| m.get(key)).map(String::as_str);
        if entry("format") != Some(FORMAT) {
            return Err(bad(
                "a SafeTensors file but not a taks checkpoint (no format=taks-checkpoint entry)"
                    .into(),
            ));
        }
        match entry("version") {
            Some(v) if v == VERSION.to_string() => {}
            Some(v) => {
                return Err(bad(format!(
                    "checkpoint layout version {v}; this taks reads version {VERSION}"
                )));
            }
            None => return Err(bad("the checkpoint has no version entry".into())),
        }
        let state = entry("state").ok_or_else(|| bad("the checkpoint has no state".into()))?;
        let state: serde_json::Value = serde_json::from_str(state)
            .map_err(|e| bad(format!("the checkpoint's state is not JSON: {e}")))?;
        if !state.is_object() {
            return Err(bad("the checkpoint's state is not a JSON object".into()));
        }
        let mut tensors = BTreeMap::new();
        for (name, view) in file.tensors() {
            let data = view.data();
            let values = match view.dtype() {
                Dtype::F32 => Values::F32(
                    data.chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect(),
                ),
                Dtype::U32 => Values::U32(
                    data.chunks_exact(4)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect(),
                ),
                other => {
                    return Err(bad(format!(
                        "tensor {name} is {other:?}; a checkpoint holds only F32 and U32"
                    )));
                }
            };
            let tensor = Tensor {
                shape: view.shape().to_vec(),
                values,
            };
            tensors.insert(name, tensor);
        }
        Ok(Checkpoint { state, tensors })
    }

    /// Read and decode a checkpoint file.
    pub fn read(path: &Path) -> Result<Checkpoint> {
        let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
        Checkpoint::decode(&bytes, path)
    }

    /// Take the f32 tensor `name`, which must have exactly `shape`.
    pub fn take_f32(&mut self, name: &str, shape: &[usize], path: &Path) -> Result<Vec<f32>> {
        match self.take(name, shape, path)? {
            Values::F32(v) => Ok(v),
            Values::U32(_) => Err(wrong_type(name, "F32", path)),
        }
    }

    /// Take the u32 tensor `name`, which must have exactly `shape`.
    pub fn take_u32(&mut self, name: &str, shape: &[usize], path: &Path) -> Result<Vec<u32>> {
        match self.take(name, shape, path)? {
            Values::U32(v) => Ok(v),
            Values::F32(_) => Err(wrong_type(name, "U32", path)),
        }
    }

    fn take(&mut self, name: &str, shape: &[usize], path: &Path) -> Result<Values> {
        let tensor = self.tensors.remove(name).ok_or_else(|| {
            FormatError::malformed(path, format!("the checkpoint has no tensor {name}"))
        })?;
        if tensor.shape != shape {
            return Err(FormatError::malformed(
                path,
                format!(
                    "tensor {name} has shape {:?} where this run needs {shape:?}",
                    tensor.shape
                ),
            ));
        }
        Ok(tensor.values)
    }
}

/// Check, before SafeTensors does, that no tensor's data ends past the end of the file.
///
/// safetensors 0.8 adds the header's length to the end of the last tensor's data
/// without checking for overflow, so a header whose offsets come near `usize::MAX`
/// (each tensor's size consistent with its shape) panics wherever overflow checks are on
/// (debug builds, tests, the fuzzer) instead of being refused. Headers this cannot read
/// are left to SafeTensors to refuse with its own message.
pub(crate) fn data_within_file(bytes: &[u8]) -> std::result::Result<(), String> {
    let Some((header_len, entries)) = safetensors_header(bytes) else {
        return Ok(());
    };
    let data = (bytes.len() - 8 - header_len) as u64;
    for (name, info) in &entries {
        let end = info
            .get("data_offsets")
            .and_then(|o| o.get(1))
            .and_then(|e| e.as_u64());
        if let Some(end) = end.filter(|&end| end > data) {
            return Err(format!(
                "tensor {name}'s data ends at byte {end}, past the {data} bytes of data in the file"
            ));
        }
    }
    Ok(())
}

/// The header of a file shaped like SafeTensors (an 8-byte little-endian length, then
/// that many bytes of a JSON object): its length in bytes and its entries; None for any
/// other file.
pub(crate) fn safetensors_header(
    bytes: &[u8],
) -> Option<(usize, serde_json::Map<String, serde_json::Value>)> {
    let length = usize::try_from(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?)).ok()?;
    match serde_json::from_slice(bytes.get(8..length.checked_add(8)?)?).ok()? {
        serde_json::Value::Object(entries) => Some((length, entries)),
        _ => None,
    }
}

fn wrong_type(name: &str, wanted: &str, path: &Path) -> FormatError {
    FormatError::malformed(path, format!("tensor {name} is not {wanted}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use safetensors::tensor::TensorView;

    fn sample() -> Checkpoint {
        let mut tensors = BTreeMap::new();
        tensors.insert(
            "net.w".to_string(),
            Tensor::f32(vec![2, 2], vec![1.0, -0.0, f32::MIN_POSITIVE, 3.5e-39]),
        );
        tensors.insert(
            "sel".to_string(),
            Tensor::u32(vec![3], vec![0, 7, u32::MAX]),
        );
        tensors.insert("empty".to_string(), Tensor::f32(vec![0], vec![]));
        Checkpoint {
            state: serde_json::json!({"epoch": 3, "rng": u64::MAX}),
            tensors,
        }
    }

    fn p() -> &'static Path {
        Path::new("run/checkpoint.safetensors")
    }

    #[test]
    fn round_trips_bit_for_bit() {
        let c = sample();
        let back = Checkpoint::decode(&c.encode(), p()).unwrap();
        assert_eq!(back, c);
        let Values::F32(w) = &back.tensors["net.w"].values else {
            panic!("f32 expected")
        };
        assert_eq!(w[1].to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn take_checks_name_shape_and_type() {
        let mut c = sample();
        let err = |e: FormatError| e.to_string();
        assert!(err(c.take_f32("nope", &[1], p()).unwrap_err()).contains("no tensor nope"));
        assert!(err(c.take_f32("net.w", &[4], p()).unwrap_err()).contains("shape [2, 2]"));
        assert!(err(c.take_f32("sel", &[3], p()).unwrap_err()).contains("not F32"));
        assert_eq!(c.take_f32("empty", &[0], p()).unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn rejects_foreign_and_damaged_files() {
        let msg = |b: &[u8]| Checkpoint::decode(b, p()).unwrap_err().to_string();
        let good = sample().encode();
        assert!(msg(&good[..good.len() - 1]).contains("not a taks checkpoint"));
        assert!(msg(b"").contains("not a taks checkpoint"));
        // A SafeTensors file of someone else's: no format entry.
        let data = [0u8; 4];
        let view = TensorView::new(Dtype::F32, vec![1], &data).unwrap();
        let foreign = safetensors::serialize([("w", view)], None).unwrap();
        assert!(msg(&foreign).contains("not a taks checkpoint (no format"));
        // Another layout version.
        let at = good
            .windows(13)
            .position(|w| w == b"\"version\":\"1\"")
            .expect("version entry");
        let mut other = good.clone();
        other[at + 11] = b'9';
        assert!(msg(&other).contains("layout version 9"), "{}", msg(&other));
        // A header that claims far more bytes than the file has.
        let mut lying = good.clone();
        lying[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(msg(&lying).contains("not a taks checkpoint"));
    }

    /// The smallest inputs of each kind in the fuzz corpus (`fuzz/`, target
    /// `checkpoint`), and the exact error each must give.
    #[test]
    fn fuzzed_inputs_give_their_error() {
        let cases: &[(&[u8], &str)] = &[
            (b"H", "not a taks checkpoint (SafeTensors: header too small)"),
            // A header length of 8.3e18 bytes ("eI1BOOLs" read as a u64) in a file of 8 bytes.
            (b"eI1BOOLs", "not a taks checkpoint (SafeTensors: header too large)"),
            (b"\x08\0\0\0\0\0\0\0", "not a taks checkpoint (SafeTensors: invalid header length)"),
            (
                b"\x01\0\0\0\0\0\0\0n",
                "invalid JSON in header: EOF while parsing a value at line 1 column 1",
            ),
            (
                b"\t\0\0\0\0\0\0\0{\"\xdd\\uda00\xd2",
                "invalid UTF-8 in header: invalid utf-8 sequence of 1 bytes from index 2",
            ),
            (
                b",\0\0\0\0\0\0\0\r\r{}\r\r\r                     \r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r",
                "a SafeTensors file but not a taks checkpoint (no format=taks-checkpoint entry)",
            ),
            (
                b",\0\0\0\0\0\0\0\r\r{}\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r,",
                "(SafeTensors: incomplete metadata, file not fully covered)",
            ),
            (
                b"H\0\0\0\0\0\0\0{\"__metadata__\":{\"format\":\"taks-checkpoint\",\",taks-checkpoint\\te\":\"{}\"}}",
                "run/checkpoint.safetensors: the checkpoint has no version entry",
            ),
            (
                b"H\0\0\0\0\0\0\0{\"__metadata__\":{\"format\":\"taks-checkpoint\",\"version\":\"0\",\"state\":\"{}\"}}",
                "checkpoint layout version 0; this taks reads version 1",
            ),
            (
                b"H\0\0\0\0\0\0\0{\"__metadata__\":{\"format\":\"taks-checkpoint\",\"version\":\"1\",\"state\":\"z}\"}}",
                "the checkpoint's state is not JSON: expected value at line 1 column 1",
            ),
            (
                b"H\0\0\0\0\0\0\0{\"__metadaected\":{\"dtype\":\"U32\",\"shape\":[4],\"data_offsets\":[24,40]}}       \0ta__\":{beck{}\n\n\n\n\n\n\n\x0b\n\xbcF13\"e\":shape}",
                "(SafeTensors: invalid offset for tensor `__metadaected`)",
            ),
            // A tensor name with a tab (JSON `\t`): escaped, the error stays one line.
            (
                b"H\0\0\0\0\0\0\0{\"u_\\t4000z_\\uD00d\":{\"dtype\":\"U64\",\"shape\":[4],\"data_offsets\":[24,40]}} }\0\0\0for0t}",
                "tensor u_\\t4000z_\u{d00d}'s data ends at byte 40, past the 10 bytes of data in the file",
            ),
        ];
        for &(bytes, want) in cases {
            let err = Checkpoint::decode(bytes, p()).unwrap_err().to_string();
            assert!(
                err.contains(want),
                "{:?}: {err}",
                String::from_utf8_lossy(bytes)
            );
            assert!(!err.contains('\n') && err.starts_with("run/checkpoint.safetensors: "));
        }
    }

    /// Found by reading safetensors 0.8 and confirmed with the fuzz target: tensors
    /// whose offsets run up to near `usize::MAX` (each size consistent with its shape:
    /// eight U8 tensors of 2^61 - 1 elements) made `SafeTensors::deserialize` add the
    /// header length to the last offset and overflow, a panic where overflow checks are
    /// on (debug builds, tests, the fuzzer). Now refused before SafeTensors sees it.
    #[test]
    fn offsets_near_usize_max_are_refused_not_overflowed() {
        let size = (1u64 << 61) - 1;
        let entries: Vec<String> = (0..8)
            .map(|k| {
                format!(
                    "\"t{k}\":{{\"dtype\":\"U8\",\"shape\":[{size}],\"data_offsets\":[{},{}]}}",
                    k * size,
                    (k + 1) * size
                )
            })
            .collect();
        let header = format!("{{{}}}", entries.join(","));
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        let err = Checkpoint::decode(&bytes, p()).unwrap_err().to_string();
        assert!(
            err.contains("tensor t0's data ends at byte 2305843009213693951, past the 0 bytes"),
            "{err}"
        );
    }

    /// Found by the fuzzer: a tensor named "\nrngonv1.weight" made `take_u32`'s error
    /// two lines. Control characters in messages are now escaped.
    #[test]
    fn names_with_control_characters_stay_on_one_line() {
        let mut c = sample();
        let w = c.tensors.remove("net.w").unwrap();
        c.tensors.insert("\nw".to_string(), w);
        let mut back = Checkpoint::decode(&c.encode(), p()).unwrap();
        let err = back.take_u32("\nw", &[2, 2], p()).unwrap_err().to_string();
        assert_eq!(err, "run/checkpoint.safetensors: tensor \\nw is not U32");

        let data = [0u8; 2];
        let view = TensorView::new(Dtype::I8, vec![2], &data).unwrap();
        let info = [
            ("format".to_string(), FORMAT.to_string()),
            ("version".to_string(), VERSION.to_string()),
            ("state".to_string(), "{}".to_string()),
        ];
        let bytes = safetensors::serialize([("a\r\nb", view)], Some(info.into_iter().collect()));
        let err = Checkpoint::decode(&bytes.unwrap(), p())
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("tensor a\\r\\nb is I8; a checkpoint holds only F32 and U32"),
            "{err}"
        );
    }
}
