//! NumPy `.npy` files as `np.save` writes them: a feature matrix [n, d] of float32,
//! float16 or float64 (the embeddings a pretrained backbone gives), and a label vector of
//! integers.
//!
//! The format (numpy's `lib/format.py`, versions 1.0 to 3.0): the magic `\x93NUMPY`, a
//! major and a minor version byte, the header's length (u16 little-endian in 1.0, u32 in
//! 2.0 and 3.0), the header itself, a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (20000, 784), }` padded with spaces
//! and ending in a newline, then the values. Read by hand: the maintained crate (npyz)
//! parses the header with a whole Python-literal grammar (pest) for these three keys,
//! and this reader is fuzzed like the others (`fuzz/fuzz_targets/npy.rs`).
//!
//! Refused, each naming the file: a wrong magic or unknown version, a header that is not
//! such a dict, Fortran order, a matrix of other than 2 dimensions (labels: 1, or [n, 1]),
//! a dtype other than float16/32/64 (labels: integers), data shorter or longer than the
//! shape says, and a feature that is NaN or infinite (named by row and column).
//!
//! One copy: the file's length is checked against the shape before anything is
//! allocated, then the values stream in 1 MiB chunks into the one f32 buffer the networks
//! read (float32 in little-endian order is that buffer's bytes). Mapping the file would
//! save nothing, since training reads an owned f32 array.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::{FormatError, Result};

const MAGIC: &[u8] = b"\x93NUMPY";
const CHUNK: usize = 1 << 20;

/// The element type of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    Float {
        bytes: usize,
        big_endian: bool,
    },
    Int {
        bytes: usize,
        signed: bool,
        big_endian: bool,
    },
}

impl Dtype {
    fn size(self) -> usize {
        match self {
            Dtype::Float { bytes, .. } | Dtype::Int { bytes, .. } => bytes,
        }
    }

    fn parse(descr: &str) -> Option<Dtype> {
        let mut chars = descr.chars();
        let order = chars.next()?;
        let kind = chars.next()?;
        let bytes: usize = chars.as_str().parse().ok()?;
        let big_endian = match order {
            '<' => false,
            '>' => true,
            '|' if bytes == 1 => false,
            _ => return None,
        };
        match (kind, bytes) {
            ('f', 2 | 4 | 8) => Some(Dtype::Float { bytes, big_endian }),
            ('i' | 'u', 1 | 2 | 4 | 8) => Some(Dtype::Int {
                bytes,
                signed: kind == 'i',
                big_endian,
            }),
            _ => None,
        }
    }
}

/// A parsed header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub descr: String,
    pub dtype: Option<Dtype>,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
    /// Where the values start.
    pub data_offset: usize,
}

/// A feature matrix, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f32>,
}

/// Parse the header from the first bytes of a file (at least `data_offset` of them).
pub fn parse_header(bytes: &[u8], path: &Path) -> Result<Header> {
    let bad = |m: String| FormatError::malformed(path, m);
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("is not a NumPy .npy file (no \\x93NUMPY magic)".into()));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (length, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        2 | 3 => return Err(bad("is truncated inside its header".into())),
        _ => {
            return Err(bad(format!(
                "is .npy version {major}.{minor}; versions 1.0 to 3.0 are read"
            )));
        }
    };
    let end = start
        .checked_add(length)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| bad(format!("is truncated inside its {length}-byte header")))?;
    let text = std::str::from_utf8(&bytes[start..end])
        .map_err(|_| bad("has a header that is not text".into()))?;
    let dict = parse_dict(text)
        .map_err(|why| bad(format!("has an unreadable header ({why}): {}", text.trim())))?;
    let descr = dict
        .descr
        .ok_or_else(|| bad("has no 'descr' (dtype) in its header".into()))?;
    let fortran_order = dict
        .fortran_order
        .ok_or_else(|| bad("has no 'fortran_order' in its header".into()))?;
    let shape = dict
        .shape
        .ok_or_else(|| bad("has no 'shape' in its header".into()))?;
    Ok(Header {
        dtype: Dtype::parse(&descr),
        descr,
        fortran_order,
        shape,
        data_offset: end,
    })
}

/// Read a feature matrix [n, d] of float16, float32 or float64.
pub fn read_matrix(path: &Path) -> Result<Matrix> {
    let mut file = File::open(path).map_err(|e| FormatError::io(path, e))?;
    let length = file.metadata().map_err(|e| FormatError::io(path, e))?.len();
    let header = read_header(&mut file, path)?;
    let (rows, cols, dtype) = matrix_layout(&header, path)?;
    check_length(length, &header, rows * cols, dtype, path)?;
    let mut values = Vec::with_capacity(rows * cols);
    let mut chunk = vec![0u8; CHUNK - CHUNK % dtype.size()];
    let mut left = rows * cols * dtype.size();
    while left > 0 {
        let take = left.min(chunk.len());
        file.read_exact(&mut chunk[..take])
            .map_err(|e| FormatError::io(path, e))?;
        push_floats(&chunk[..take], dtype, &mut values);
        left -= take;
    }
    finite(&values, cols, path)?;
    Ok(Matrix { rows, cols, values })
}

/// [`read_matrix`] on bytes already in memory (the fuzz target's entry point).
pub fn parse_matrix(bytes: &[u8], path: &Path) -> Result<Matrix> {
    let header = parse_header(bytes, path)?;
    let (rows, cols, dtype) = matrix_layout(&header, path)?;
    check_length(bytes.len() as u64, &header, rows * cols, dtype, path)?;
    let mut values = Vec::with_capacity(rows * cols);
    push_floats(&bytes[header.data_offset..], dtype, &mut values);
    finite(&values, cols, path)?;
    Ok(Matrix { rows, cols, values })
}

/// Read a label vector of integers, shape [n] or [n, 1]; every label must be >= 0.
pub fn read_labels(path: &Path) -> Result<Vec<u32>> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    parse_labels(&bytes, path)
}

/// [`read_labels`] on bytes in memory.
pub fn parse_labels(bytes: &[u8], path: &Path) -> Result<Vec<u32>> {
    let header = parse_header(bytes, path)?;
    let bad = |m: String| FormatError::malformed(path, m);
    let n = match header.shape[..] {
        [n] | [n, 1] => n,
        _ => {
            return Err(bad(format!(
                "holds an array of shape {:?}; labels are one integer per sample, shape (n,)",
                header.shape
            )));
        }
    };
    let Some(
        dtype @ Dtype::Int {
            bytes: size,
            signed,
            big_endian,
        },
    ) = header.dtype
    else {
        return Err(bad(format!(
            "holds '{}' values; labels must be integers (int8 to int64, uint8 to uint64)",
            header.descr
        )));
    };
    check_length(bytes.len() as u64, &header, n, dtype, path)?;
    bytes[header.data_offset..]
        .chunks_exact(size)
        .enumerate()
        .map(|(i, raw)| {
            let mut b = [0u8; 8];
            if big_endian {
                raw.iter().rev().enumerate().for_each(|(j, &x)| b[j] = x);
            } else {
                b[..size].copy_from_slice(raw);
            }
            let negative = signed && b[size - 1] & 0x80 != 0;
            if negative {
                return Err(bad(format!("label {i} is negative")));
            }
            let value = u64::from_le_bytes(b);
            u32::try_from(value).map_err(|_| bad(format!("label {i} ({value}) is too large")))
        })
        .collect()
}

/// The header of the `.npy` file at `path` (its shape and dtype), without its values.
pub fn read_file_header(path: &Path) -> Result<Header> {
    let mut file = File::open(path).map_err(|e| FormatError::io(path, e))?;
    read_header(&mut file, path)
}

fn read_header(file: &mut File, path: &Path) -> Result<Header> {
    let mut prefix = [0u8; 12];
    let got = read_up_to(file, &mut prefix, path)?;
    if got < 10 || &prefix[..6] != MAGIC {
        return Err(FormatError::malformed(
            path,
            "is not a NumPy .npy file (no \\x93NUMPY magic)",
        ));
    }
    let length = match prefix[6] {
        1 => 10 + u16::from_le_bytes([prefix[8], prefix[9]]) as usize,
        _ if got == 12 => {
            12 + u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as usize
        }
        _ => got,
    };
    // A header is a few hundred bytes; a claim of more than 1 MiB is a lie or junk.
    let length = length.min(1 << 20);
    let mut bytes = prefix[..got].to_vec();
    if length > got {
        let mut rest = vec![0u8; length - got];
        let more = read_up_to(file, &mut rest, path)?;
        bytes.extend_from_slice(&rest[..more]);
    }
    let header = parse_header(&bytes, path)?;
    // The prefix may have read past a version-1 header into the data: go back.
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(header.data_offset as u64))
        .map_err(|e| FormatError::io(path, e))?;
    Ok(header)
}

fn read_up_to(file: &mut File, buffer: &mut [u8], path: &Path) -> Result<usize> {
    let mut got = 0;
    while got < buffer.len() {
        match file.read(&mut buffer[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FormatError::io(path, e)),
        }
    }
    Ok(got)
}

fn matrix_layout(header: &Header, path: &Path) -> Result<(usize, usize, Dtype)> {
    let bad = |m: String| FormatError::malformed(path, m);
    if header.fortran_order {
        return Err(bad(
            "is in Fortran (column-major) order; save a C-ordered array (np.ascontiguousarray)"
                .into(),
        ));
    }
    let [rows, cols] = header.shape[..] else {
        return Err(bad(format!(
            "holds an array of shape {:?}; features are a 2-D matrix [samples, features]",
            header.shape
        )));
    };
    if rows == 0 || cols == 0 {
        return Err(bad(format!(
            "holds an empty matrix of shape ({rows}, {cols})"
        )));
    }
    let Some(dtype @ Dtype::Float { .. }) = header.dtype else {
        return Err(bad(format!(
            "holds '{}' values; features must be float16, float32 or float64",
            header.descr
        )));
    };
    rows.checked_mul(cols)
        .and_then(|v| v.checked_mul(dtype.size()))
        .ok_or_else(|| bad(format!("has an impossible shape ({rows}, {cols})")))?;
    Ok((rows, cols, dtype))
}

fn check_length(
    length: u64,
    header: &Header,
    count: usize,
    dtype: Dtype,
    path: &Path,
) -> Result<()> {
    let want = count as u64 * dtype.size() as u64;
    let have = length.saturating_sub(header.data_offset as u64);
    if have < want {
        return Err(FormatError::malformed(
            path,
            format!(
                "is truncated: shape {:?} needs {want} bytes of values, the file holds {have}",
                header.shape
            ),
        ));
    }
    if have > want {
        return Err(FormatError::malformed(
            path,
            format!(
                "has {} bytes after the {want} bytes of values its shape {:?} needs",
                have - want,
                header.shape
            ),
        ));
    }
    Ok(())
}

fn push_floats(bytes: &[u8], dtype: Dtype, out: &mut Vec<f32>) {
    let Dtype::Float {
        bytes: size,
        big_endian,
    } = dtype
    else {
        unreachable!("matrix_layout admits floats only")
    };
    let mut word = [0u8; 8];
    for raw in bytes.chunks_exact(size) {
        word[..size].copy_from_slice(raw);
        if big_endian {
            word[..size].reverse();
        }
        out.push(match size {
            2 => f16_to_f32(u16::from_le_bytes([word[0], word[1]])),
            4 => f32::from_le_bytes([word[0], word[1], word[2], word[3]]),
            _ => f64::from_le_bytes(word) as f32,
        });
    }
}

/// IEEE 754 half precision to single, exactly (subnormals, infinities and NaN included).
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exponent = ((h >> 10) & 0x1f) as u32;
    let mantissa = (h & 0x3ff) as u32;
    let bits = match exponent {
        0 if mantissa == 0 => sign,
        0 => {
            // Subnormal: mantissa * 2^-24, exact in f32.
            let magnitude = mantissa as f32 * 2f32.powi(-24);
            return if sign != 0 { -magnitude } else { magnitude };
        }
        0x1f => sign | 0x7f80_0000 | (mantissa << 13),
        e => sign | ((e + 127 - 15) << 23) | (mantissa << 13),
    };
    f32::from_bits(bits)
}

/// Features must be finite: a NaN or an infinity (float64 beyond f32's range included)
/// would poison the normalisation of its whole column.
fn finite(values: &[f32], cols: usize, path: &Path) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(at) => Err(FormatError::malformed(
            path,
            format!(
                "row {}, column {}: {} is not a finite number",
                at / cols,
                at % cols,
                values[at]
            ),
        )),
    }
}

/// The three keys of a header dict.
#[derive(Default)]
struct Dict {
    descr: Option<String>,
    fortran_order: Option<bool>,
    shape: Option<Vec<usize>>,
}

/// A Python dict literal of string keys whose values are strings, True/False or tuples
/// of non-negative integers: exactly what `np.save` writes.
fn parse_dict(text: &str) -> std::result::Result<Dict, String> {
    let mut p = Parser {
        s: text.trim().as_bytes(),
        at: 0,
    };
    let mut dict = Dict::default();
    p.expect(b'{')?;
    loop {
        p.space();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.space();
        p.expect(b':')?;
        p.space();
        match key.as_str() {
            "descr" => dict.descr = Some(p.string()?),
            "fortran_order" => dict.fortran_order = Some(p.boolean()?),
            "shape" => dict.shape = Some(p.tuple()?),
            other => return Err(format!("unknown key '{other}'")),
        }
        p.space();
        if !p.eat(b',') {
            p.space();
            p.expect(b'}')?;
            break;
        }
    }
    p.space();
    if p.at != p.s.len() {
        return Err("text after the dict".into());
    }
    Ok(dict)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.s.get(self.at) == Some(&c);
        self.at += hit as usize;
        hit
    }

    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.at))
        }
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        let quote = match self.s.get(self.at) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a string at byte {}", self.at)),
        };
        self.at += 1;
        let start = self.at;
        while self.at < self.s.len() && self.s[self.at] != quote {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.at]).map_err(|e| e.to_string())?;
        self.expect(quote)?;
        Ok(text.to_string())
    }

    fn boolean(&mut self) -> std::result::Result<bool, String> {
        for (word, value) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(format!("expected True or False at byte {}", self.at))
    }

    fn tuple(&mut self) -> std::result::Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut items = Vec::new();
        loop {
            self.space();
            if self.eat(b')') {
                return Ok(items);
            }
            let start = self.at;
            while self.at < self.s.len() && self.s[self.at].is_ascii_digit() {
                self.at += 1;
            }
            // Python 2 wrote long integers with an L suffix.
            let digits = std::str::from_utf8(&self.s[start..self.at]).expect("ASCII digits");
            self.eat(b'L');
            items.push(
                digits
                    .parse()
                    .map_err(|_| format!("expected a dimension at byte {start}"))?,
            );
            self.space();
            if !self.eat(b',') {
                self.space();
                self.expect(b')')?;
                return Ok(items);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An .npy file as np.save writes it (version 1.0, header padded to 64 bytes).
    pub(crate) fn npy(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = MAGIC.to_vec();
        out.extend([1, 0]);
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    fn path() -> &'static Path {
        Path::new("x.npy")
    }

    fn err(bytes: &[u8]) -> String {
        parse_matrix(bytes, path()).unwrap_err().to_string()
    }

    #[test]
    fn reads_every_float_width_and_byte_order() {
        let values = [1.5f32, -2.0, 0.25, 1e-3, 65504.0, -0.0];
        let f4: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let f8: Vec<u8> = values
            .iter()
            .flat_map(|v| (*v as f64).to_le_bytes())
            .collect();
        let f4_big: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        // The same numbers in half precision, as numpy stores them.
        let f2: Vec<u8> = [0x3e00u16, 0xc000, 0x3400, 0x1419, 0x7bff, 0x8000]
            .iter()
            .flat_map(|h| h.to_le_bytes())
            .collect();
        for (descr, data, tol) in [
            ("<f4", f4, 0.0),
            ("<f8", f8, 0.0),
            (">f4", f4_big, 0.0),
            ("<f2", f2, 1e-6),
        ] {
            let m = parse_matrix(&npy(descr, false, "(2, 3)", &data), path()).unwrap();
            assert_eq!((m.rows, m.cols), (2, 3), "{descr}");
            for (got, want) in m.values.iter().zip(values) {
                assert!(
                    (got - want).abs() <= tol * want.abs().max(1.0),
                    "{descr}: {got} vs {want}"
                );
            }
        }
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8001), -(2f32.powi(-24)));
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn version_two_headers_and_odd_spacing_parse() {
        let data: Vec<u8> = [1f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let header = "{ 'shape' : (1,2,) ,\"descr\":'<f4','fortran_order':False}\n";
        let mut bytes = MAGIC.to_vec();
        bytes.extend([2, 0]);
        bytes.extend((header.len() as u32).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend(&data);
        let m = parse_matrix(&bytes, path()).unwrap();
        assert_eq!(m.values, vec![1.0, 2.0]);
    }

    #[test]
    fn refuses_what_it_cannot_read_truthfully() {
        let four = [0u8; 16];
        assert!(err(&npy("<f4", true, "(2, 2)", &four)).contains("Fortran"));
        assert!(err(&npy("<f4", false, "(4,)", &four)).contains("2-D matrix"));
        assert!(err(&npy("<f4", false, "(1, 2, 2)", &four)).contains("2-D matrix"));
        assert!(err(&npy("<i4", false, "(2, 2)", &four)).contains("float16, float32 or float64"));
        assert!(err(&npy("|O", false, "(2, 2)", &four)).contains("'|O'"));
        assert!(
            err(&npy("<f4", false, "(2, 3)", &four))
                .contains("truncated: shape [2, 3] needs 24 bytes of values, the file holds 16")
        );
        assert!(err(&npy("<f4", false, "(1, 2)", &four)).contains("8 bytes after"));
        assert!(err(&npy("<f4", false, "(0, 2)", &[])).contains("empty matrix"));
        assert!(err(b"PK\x03\x04 not numpy").contains("no \\x93NUMPY magic"));
        let nan: Vec<u8> = [1f32, f32::NAN]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert!(err(&npy("<f4", false, "(1, 2)", &nan)).contains("row 0, column 1: NaN"));
        let big: Vec<u8> = [1e300f64].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(err(&npy("<f8", false, "(1, 1)", &big)).contains("inf is not a finite number"));
        let mut cut = npy("<f4", false, "(2, 2)", &four);
        cut.truncate(30);
        assert!(err(&cut).contains("truncated inside its"));
        assert!(
            err(&npy("<f4", false, "(99999999999, 99999999999)", &four))
                .contains("impossible shape")
        );
    }

    #[test]
    fn labels_are_non_negative_integers() {
        let i8s: Vec<u8> = [0i64, 3, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            parse_labels(&npy("<i8", false, "(3,)", &i8s), path()).unwrap(),
            vec![0, 3, 1]
        );
        assert_eq!(
            parse_labels(&npy("|u1", false, "(3, 1)", &[2, 0, 1]), path()).unwrap(),
            vec![2, 0, 1]
        );
        let big: Vec<u8> = [5i32, 7].iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(
            parse_labels(&npy(">i4", false, "(2,)", &big), path()).unwrap(),
            vec![5, 7]
        );
        let negative: Vec<u8> = [1i16, -1].iter().flat_map(|v| v.to_le_bytes()).collect();
        let e = parse_labels(&npy("<i2", false, "(2,)", &negative), path()).unwrap_err();
        assert!(e.to_string().contains("label 1 is negative"), "{e}");
        let e = parse_labels(&npy("<f4", false, "(1,)", &[0; 4]), path()).unwrap_err();
        assert!(e.to_string().contains("must be integers"), "{e}");
        let e = parse_labels(&npy("<i8", false, "(2, 2)", &[0; 32]), path()).unwrap_err();
        assert!(e.to_string().contains("shape (n,)"), "{e}");
    }

    #[test]
    fn the_streaming_reader_agrees_with_the_in_memory_one() {
        let dir = std::env::temp_dir().join(format!("taks-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // More than one chunk of float16 values, in a version-1 file.
        let (rows, cols) = (1000, 700);
        let data: Vec<u8> = (0..rows * cols)
            .flat_map(|i| (0x3c00u16 + (i % 1000) as u16).to_le_bytes())
            .collect();
        let bytes = npy("<f2", false, &format!("({rows}, {cols})"), &data);
        let file = dir.join("m.npy");
        std::fs::write(&file, &bytes).unwrap();
        let streamed = read_matrix(&file).unwrap();
        assert_eq!(streamed, parse_matrix(&bytes, &file).unwrap());
        assert_eq!(streamed.values[1], 1.0 + 1.0 / 1024.0);
        std::fs::write(&file, &bytes[..bytes.len() - 1]).unwrap();
        assert!(
            read_matrix(&file)
                .unwrap_err()
                .to_string()
                .contains("truncated")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
