//! Writing `.npy` files numpy reads (`np.load`): an f32 matrix streamed row block by
//! row block, whose row count is known only at the end (`taks embed` skips images it
//! cannot decode), and a small i64 vector in one piece.
//!
//! The streamed header is written with room for any shape (128 bytes, padded with
//! spaces as the format allows) and rewritten with the final row count when the matrix
//! is finished; the file is written beside its name (`.tmp`) and renamed into place
//! only then, so a stopped run never leaves a matrix that looks complete.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::atomic::{put_in_place, temporary_path, write_atomically};
use crate::{FormatError, Result};

/// Bytes of every header this module writes (magic, version, length, dict, padding).
const HEADER: usize = 128;

/// A version 1.0 header of `HEADER` bytes for `descr` ('<f4', '<i8') and `shape`.
fn header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&((HEADER - 10) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    assert!(
        out.len() < HEADER,
        "a shape of at most three 20-digit sizes fits"
    );
    out.resize(HEADER - 1, b' ');
    out.push(b'\n');
    out
}

/// The bytes of an i64 vector as `np.save` writes one.
pub fn i64_vector(values: &[i64]) -> Vec<u8> {
    let mut out = header("<i8", &[values.len()]);
    out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    out
}

/// Write `values` to `path` as an i64 `.npy` vector, atomically.
pub fn write_i64_vector(path: &Path, values: &[i64]) -> Result<()> {
    write_atomically(path, &i64_vector(values))
}

/// An f32 matrix [rows, cols] being written to `path`.
pub struct MatrixWriter {
    out: BufWriter<File>,
    temporary: PathBuf,
    path: PathBuf,
    cols: usize,
    rows: usize,
}

impl MatrixWriter {
    /// Start a matrix of `cols` columns at `path`.
    pub fn create(path: &Path, cols: usize) -> Result<Self> {
        let temporary = temporary_path(path);
        let file = File::create(&temporary).map_err(|e| FormatError::write(&temporary, e))?;
        let mut out = BufWriter::new(file);
        out.write_all(&header("<f4", &[0, cols]))
            .map_err(|e| FormatError::write(&temporary, e))?;
        Ok(MatrixWriter {
            out,
            temporary,
            path: path.to_path_buf(),
            cols,
            rows: 0,
        })
    }

    /// Append whole rows (`values.len()` a multiple of the columns).
    pub fn push(&mut self, values: &[f32]) -> Result<()> {
        assert!(values.len().is_multiple_of(self.cols.max(1)), "whole rows");
        for v in values {
            self.out
                .write_all(&v.to_le_bytes())
                .map_err(|e| FormatError::write(&self.temporary, e))?;
        }
        self.rows += values.len() / self.cols.max(1);
        Ok(())
    }

    /// Write the final header, flush to the disk and move the file into place; the rows.
    pub fn finish(mut self) -> Result<usize> {
        let io = |e| FormatError::write(&self.temporary, e);
        self.out.flush().map_err(io)?;
        let mut file = self.out.into_inner().map_err(|e| io(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(&header("<f4", &[self.rows, self.cols]))
            .map_err(io)?;
        file.sync_all().map_err(io)?;
        put_in_place(&self.temporary, &self.path)?;
        Ok(self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy;

    #[test]
    fn a_streamed_matrix_and_a_label_vector_read_back() {
        let dir = std::env::temp_dir().join(format!("taks-npy-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.npy");
        let mut w = MatrixWriter::create(&path, 3).unwrap();
        w.push(&[1.0, 2.0, 3.0]).unwrap();
        assert!(!path.exists(), "not in place before it is finished");
        w.push(&[4.0, 5.0, 6.0, -7.5, 0.0, 1e-3]).unwrap();
        assert_eq!(w.finish().unwrap(), 3);
        let m = npy::read_matrix(&path).unwrap();
        assert_eq!((m.rows, m.cols), (3, 3));
        assert_eq!(m.values[6], -7.5);
        let labels = dir.join("l.npy");
        write_i64_vector(&labels, &[0, 2, 1]).unwrap();
        assert_eq!(npy::read_labels(&labels).unwrap(), [0, 2, 1]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
