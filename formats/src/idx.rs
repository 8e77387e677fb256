//! The IDX format of MNIST and Fashion-MNIST (LeCun's `*-idx3-ubyte`, `*-idx1-ubyte`),
//! plain or gzip-compressed.
//!
//! A header of a zero u16, a type byte (0x08 = unsigned byte), a rank byte and one
//! big-endian u32 per dimension, then the values. We read only unsigned-byte files of
//! rank 3 (images) and rank 1 (labels), the two kinds these datasets ship, and reject
//! anything else with a message naming the file and the fault.

use std::io::Read;
use std::path::Path;

use crate::{FormatError as Error, Result};

/// A decoded IDX file: its dimensions and its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct IdxArray {
    pub dims: Vec<usize>,
    pub values: Vec<u8>,
}

/// The most bytes a gzip'd file may decompress to (the largest IDX file of these datasets,
/// MNIST's training images, is 47 MB): a small file that inflates beyond this is refused
/// instead of being decompressed into all the memory there is.
pub const MAX_DECOMPRESSED: usize = 1 << 30;

/// Read a file, transparently gunzipping when it starts with the gzip magic.
pub fn read_maybe_gzip(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    gunzip_if_gzip(raw, path)
}

/// Gunzip `raw` when it starts with the gzip magic, else return it as it is; at most
/// [`MAX_DECOMPRESSED`] bytes. `path` only names the source in errors.
pub fn gunzip_if_gzip(raw: Vec<u8>, path: &Path) -> Result<Vec<u8>> {
    gunzip_at_most(raw, path, MAX_DECOMPRESSED)
}

fn gunzip_at_most(raw: Vec<u8>, path: &Path, limit: usize) -> Result<Vec<u8>> {
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let corrupt = |e: std::io::Error| Error::malformed(path, format!("corrupt gzip data: {e}"));
    let mut decoder = flate2::read::GzDecoder::new(&raw[..]);
    let mut out = Vec::with_capacity(raw.len().saturating_mul(4).min(limit));
    // In chunks, checking the total before each append, so the output never grows
    // (nor doubles its capacity) past the limit.
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match decoder.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(corrupt(e)),
        };
        if n > limit - out.len() {
            return Err(Error::malformed(
                path,
                format!("gzip data decompresses to more than {limit} bytes"),
            ));
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// Decode IDX bytes that must have the given rank. `path` only names the source in errors.
pub fn parse(bytes: &[u8], rank: usize, path: &Path) -> Result<IdxArray> {
    let bad = |reason: String| Error::malformed(path, reason);
    if bytes.len() < 4 {
        return Err(bad(format!(
            "too short for an IDX header ({} bytes)",
            bytes.len()
        )));
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(bad(format!(
            "bad magic {:02x}{:02x}{:02x}{:02x}: not an IDX file",
            bytes[0], bytes[1], bytes[2], bytes[3]
        )));
    }
    if bytes[2] != 0x08 {
        return Err(bad(format!(
            "IDX element type 0x{:02x} is not unsigned byte (0x08)",
            bytes[2]
        )));
    }
    if bytes[3] as usize != rank {
        return Err(bad(format!(
            "IDX rank {} where rank {rank} was expected",
            bytes[3]
        )));
    }
    let header = 4 + 4 * rank;
    if bytes.len() < header {
        return Err(bad("truncated IDX header".into()));
    }
    let dims: Vec<usize> = (0..rank)
        .map(|d| u32::from_be_bytes(bytes[4 + 4 * d..8 + 4 * d].try_into().unwrap()) as usize)
        .collect();
    let count = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let count = count.ok_or_else(|| bad(format!("dimensions {dims:?} overflow")))?;
    let body = &bytes[header..];
    if body.len() < count {
        return Err(bad(format!(
            "truncated: dimensions {dims:?} need {count} bytes of data, found {}",
            body.len()
        )));
    }
    if body.len() > count {
        return Err(bad(format!(
            "{} bytes of trailing data after dimensions {dims:?}",
            body.len() - count
        )));
    }
    Ok(IdxArray {
        dims,
        values: body.to_vec(),
    })
}

/// Read an image file (rank 3: count x rows x cols) and its label file (rank 1) and
/// check that they agree. Returns (pixels in [0, 1], labels, rows, cols).
pub fn read_pair(
    images: &Path,
    labels: &Path,
    classes: usize,
) -> Result<(Vec<f32>, Vec<u32>, usize, usize)> {
    let img = parse(&read_maybe_gzip(images)?, 3, images)?;
    let lab = parse(&read_maybe_gzip(labels)?, 1, labels)?;
    decode_pair(img, lab, classes, images, labels)
}

/// Like [`read_pair`] for files already in memory (the bundled digits, the browser).
pub fn decode_pair(
    img: IdxArray,
    lab: IdxArray,
    classes: usize,
    images: &Path,
    labels: &Path,
) -> Result<(Vec<f32>, Vec<u32>, usize, usize)> {
    // The arrays' fields are public, so they need not come from `parse`.
    let [n, rows, cols] = img.dims[..] else {
        return Err(Error::malformed(
            images,
            format!("IDX rank {} where rank 3 was expected", img.dims.len()),
        ));
    };
    let [label_count] = lab.dims[..] else {
        return Err(Error::malformed(
            labels,
            format!("IDX rank {} where rank 1 was expected", lab.dims.len()),
        ));
    };
    for (array, path) in [(&img, images), (&lab, labels)] {
        let count = array.dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if count != Some(array.values.len()) {
            return Err(Error::malformed(
                path,
                format!(
                    "{} values where dimensions {:?} were given",
                    array.values.len(),
                    array.dims
                ),
            ));
        }
    }
    if rows == 0 || cols == 0 {
        return Err(Error::malformed(
            images,
            format!("image dimensions {rows}x{cols}"),
        ));
    }
    if label_count != n {
        return Err(Error::malformed(
            labels,
            format!(
                "{label_count} labels for {n} images in {}",
                images.display()
            ),
        ));
    }
    let labels_u32 = crate::labels::checked_labels(lab.values.iter().map(|&l| l as u32), classes, labels)?;
    let pixels = img.values.iter().map(|&p| p as f32 / 255.0).collect();
    Ok((pixels, labels_u32, rows, cols))
}

/// Serialise to IDX (used by tests and tools that write real files).
pub fn encode(dims: &[usize], values: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for &d in dims {
        out.extend_from_slice(&(d as u32).to_be_bytes());
    }
    out.extend_from_slice(values);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("x.idx")
    }

    #[test]
    fn round_trip() {
        let bytes = encode(&[2, 2, 3], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        let a = parse(&bytes, 3, p()).unwrap();
        assert_eq!(a.dims, vec![2, 2, 3]);
        assert_eq!(a.values[11], 11);
    }

    #[test]
    fn rejects_each_kind_of_damage() {
        let good = encode(&[3], &[1, 2, 3]);
        let msg = |b: &[u8], rank| parse(b, rank, p()).unwrap_err().to_string();
        assert!(msg(&good[..2], 1).contains("too short"));
        let mut magic = good.clone();
        magic[0] = 0x1f;
        assert!(msg(&magic, 1).contains("bad magic"));
        let mut ty = good.clone();
        ty[2] = 0x0d;
        assert!(msg(&ty, 1).contains("element type"));
        assert!(msg(&good, 3).contains("rank 1 where rank 3"));
        assert!(msg(&good[..good.len() - 1], 1).contains("truncated"));
        let mut long = good.clone();
        long.push(0);
        assert!(msg(&long, 1).contains("trailing"));
    }

    #[test]
    fn count_mismatch_and_bad_labels_are_reported() {
        let img = parse(&encode(&[2, 1, 1], &[0, 255]), 3, p()).unwrap();
        let lab = parse(&encode(&[3], &[0, 1, 2]), 1, p()).unwrap();
        let err = decode_pair(img.clone(), lab, 10, p(), p())
            .unwrap_err()
            .to_string();
        assert!(err.contains("3 labels for 2 images"), "{err}");
        let lab = parse(&encode(&[2], &[0, 12]), 1, p()).unwrap();
        let err = decode_pair(img, lab, 10, p(), p()).unwrap_err().to_string();
        assert!(err.contains("label 12 at sample 1"), "{err}");
    }
}
