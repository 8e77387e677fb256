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
    // In chunks, checking the total before each append and growing the output by
    // doubling but never past the limit, so not even its capacity exceeds the limit.
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
        if out.capacity() - out.len() < n {
            out.reserve_exact(out.capacity().max(n).min(limit - out.len()));
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
        let count = array
            .dims
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d));
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
    let labels_u32 =
        crate::labels::checked_labels(lab.values.iter().map(|&l| l as u32), classes, labels)?;
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

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// The smallest inputs of each kind in the fuzz corpus (`fuzz/`, target `idx`), and
    /// the exact error each must give.
    #[test]
    fn fuzzed_headers_give_their_error() {
        let cases: &[(&[u8], usize, &str)] = &[
            (b"\x00", 1, "x.idx: too short for an IDX header (1 bytes)"),
            (
                b"\x00\x00\xd6\x62",
                1,
                "IDX element type 0xd6 is not unsigned byte (0x08)",
            ),
            (
                b"\x00\x00\x08\x12",
                3,
                "IDX rank 18 where rank 3 was expected",
            ),
            (b"\x00\x00\x08\x03", 3, "x.idx: truncated IDX header"),
            (
                b"\x00\x00\x08\x01\x00\x00\x00\x00\x00",
                1,
                "1 bytes of trailing data after dimensions [0]",
            ),
            (
                b"\x00\x00\x08\x01\x00\x00\x01\x00",
                1,
                "truncated: dimensions [256] need 256 bytes of data, found 0",
            ),
            // A lying header: refused before anything of its size is allocated.
            (
                b"\x00\x00\x08\x03\x00\x00\x00\x03\x00\x68\x00\x00\x00\xed\xd6\xbe",
                3,
                "dimensions [3, 6815744, 15587006] need 318711127867392 bytes of data, found 0",
            ),
            (
                b"\x00\x00\x08\x03\x00\x41\x00\x03\x7a\x00\x00\x93\xa8\xbd\xd2\xed",
                3,
                "dimensions [4259843, 2046820499, 2831012589] overflow",
            ),
        ];
        for &(bytes, rank, want) in cases {
            let err = parse(bytes, rank, p()).unwrap_err().to_string();
            assert!(err.contains(want), "{bytes:02x?}: {err}");
        }
    }

    /// Gzip'd inputs of the fuzz corpus: each fault of the stream is one error line.
    #[test]
    fn fuzzed_gzip_gives_its_error() {
        let cases: &[(&[u8], &str)] = &[
            (
                b"\x1f\x8b",
                "x.idx: corrupt gzip data: unexpected end of file",
            ),
            (
                b"\x1f\x8b\x08\xff\xff\xff\xc3\xef\xc8\xed",
                "corrupt gzip data: invalid gzip header",
            ),
            (
                b"\x1f\x8b\x08\x00\x00\x00\x00\x04\x0f\x5f",
                "corrupt gzip data: incomplete deflate stream",
            ),
            (
                b"\x1f\x8b\x08\x00\x00\x00\x00\xff\xd2\xff\xff",
                "corrupt gzip data: corrupt deflate stream",
            ),
            (
                b"\x1f\x8b\x08\x1f\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00",
                "corrupt gzip data: corrupt gzip stream does not have a matching checksum",
            ),
        ];
        for &(bytes, want) in cases {
            let err = gunzip_if_gzip(bytes.to_vec(), p()).unwrap_err().to_string();
            assert!(err.contains(want), "{bytes:02x?}: {err}");
        }
        // A valid gzip stream (with an extra field) of nothing: an empty IDX file.
        let empty =
            b"\x1f\x8b\x08\x00\x02\x00\x00\x08\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00";
        let out = gunzip_if_gzip(empty.to_vec(), p()).unwrap();
        assert!(out.is_empty());
        let err = parse(&out, 1, p()).unwrap_err().to_string();
        assert!(
            err.contains("too short for an IDX header (0 bytes)"),
            "{err}"
        );
    }

    #[test]
    fn gunzip_passes_plain_bytes_and_inflates_gzip() {
        let labels = encode(&[3], &[1, 2, 3]);
        assert_eq!(gunzip_if_gzip(labels.clone(), p()).unwrap(), labels);
        assert_eq!(gunzip_if_gzip(gzip(&labels), p()).unwrap(), labels);
        // Bigger than one read chunk.
        let big = vec![7u8; 200_000];
        assert_eq!(gunzip_if_gzip(gzip(&big), p()).unwrap(), big);
    }

    #[test]
    fn gunzip_stops_at_the_limit() {
        // The output grows by doubling, but its capacity stops at the limit too.
        let out = gunzip_at_most(gzip(&[1u8; 100_000]), p(), 100_000).unwrap();
        assert_eq!(out, vec![1u8; 100_000]);
        assert!(out.capacity() <= 100_000, "capacity {}", out.capacity());
        let sixteen = [5u8; 16];
        assert_eq!(gunzip_at_most(gzip(&sixteen), p(), 16).unwrap(), sixteen);
        let err = gunzip_at_most(gzip(&[5u8; 17]), p(), 16)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "x.idx: gzip data decompresses to more than 16 bytes");
        // A bomb: a few kB that would inflate to 20 MB stop at the limit.
        let bomb = gzip(&vec![0u8; 20 << 20]);
        assert!(bomb.len() < 100_000);
        let err = gunzip_at_most(bomb, p(), 1 << 20).unwrap_err().to_string();
        assert!(
            err.contains("decompresses to more than 1048576 bytes"),
            "{err}"
        );
    }

    /// Image and label files of the fuzz corpus that parse alone but not as a pair (the
    /// target cuts its input after `1 + input[0]` bytes).
    #[test]
    fn fuzzed_pairs_give_their_error() {
        let images = b"\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x02\x00\x15\x2a\x3f\x54\x69\x7e\x93\xa8\xbd\xd2\xe7";
        let labels = b"\x00\x00\x08\x01\x00\x00\x00\x03\x00\x09\x04";
        let img = parse(images, 3, Path::new("i.idx")).unwrap();
        let lab = parse(labels, 1, Path::new("l.idx")).unwrap();
        let err = decode_pair(img, lab, 10, Path::new("i.idx"), Path::new("l.idx"));
        let err = err.unwrap_err().to_string();
        assert_eq!(err, "l.idx: 3 labels for 2 images in i.idx");

        let images = b"\x00\x00\x08\x03\x00\x00\x00\x03\x00\x00\x00\x02\x00\x00\x00\x02\x00\x15\x2a\x3f\x54\x69\x7e\x93\xa8\xbd\xd2\xe7";
        let labels = b"\x00\x00\x08\x01\x00\x00\x00\x03\x00\x09\x0c";
        let img = parse(images, 3, p()).unwrap();
        let lab = parse(labels, 1, p()).unwrap();
        let err = decode_pair(img, lab, 10, p(), p()).unwrap_err().to_string();
        assert!(
            err.contains("label 12 at sample 2 is out of range for 10 classes"),
            "{err}"
        );
    }

    /// `IdxArray`'s fields are public: arrays not made by `parse` are refused, not indexed.
    #[test]
    fn decode_pair_refuses_arrays_parse_would_not_make() {
        let lab = IdxArray {
            dims: vec![1],
            values: vec![0],
        };
        let flat = IdxArray {
            dims: vec![1, 4],
            values: vec![0; 4],
        };
        let err = decode_pair(flat, lab.clone(), 10, p(), p())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("IDX rank 2 where rank 3 was expected"),
            "{err}"
        );
        let img = IdxArray {
            dims: vec![1, 2, 2],
            values: vec![0; 4],
        };
        let scalar = IdxArray {
            dims: vec![],
            values: vec![0],
        };
        let err = decode_pair(img.clone(), scalar, 10, p(), p())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("IDX rank 0 where rank 1 was expected"),
            "{err}"
        );
        let short = IdxArray {
            dims: vec![1, 2, 2],
            values: vec![0; 3],
        };
        let err = decode_pair(short, lab.clone(), 10, p(), p())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("3 values where dimensions [1, 2, 2] were given"),
            "{err}"
        );
        assert!(decode_pair(img, lab, 10, p(), p()).is_ok());
    }
}
