//! A `.npy` file as the end-to-end tests write it: numpy's format spec, version 1.0
//! (the reader is checked against files numpy itself wrote in `formats/tests/`).

use std::path::Path;

/// An .npy file as numpy's format spec (version 1.0) lays it out.
pub fn write_npy(path: &Path, descr: &str, shape: &str, data: &[u8]) {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}
