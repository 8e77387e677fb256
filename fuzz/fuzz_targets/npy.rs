//! The NumPy readers of `taks audit FEATURES.npy --labels LABELS`
//! (`taks_formats::npy::parse_matrix`, `parse_labels`, and the text labels of
//! `taks_formats::labels::parse_names`). Checks, for any bytes, that none panics or
//! allocates beyond what the bytes hold; that a matrix has rows * cols finite values;
//! that names give one in-range class index per line and distinct classes; and that
//! every error is one line naming the file.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use taks_formats::{labels, npy};

const PATH: &str = "fuzz_features.npy";

fn one_line(e: impl std::fmt::Display) {
    let msg = e.to_string();
    assert!(!msg.contains('\n') && msg.contains(PATH), "bad error: {msg:?}");
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new(PATH);
    match npy::parse_matrix(data, path) {
        Ok(m) => {
            assert!(m.rows > 0 && m.cols > 0);
            assert_eq!(m.values.len(), m.rows * m.cols);
            assert!(m.values.iter().all(|v| v.is_finite()));
        }
        Err(e) => one_line(e),
    }
    if let Err(e) = npy::parse_labels(data, path) {
        one_line(e);
    }
    match labels::parse_names(data, path) {
        Ok((classes, labels)) => {
            assert!(!labels.is_empty());
            assert!(labels.iter().all(|&l| (l as usize) < classes.len()));
            let mut distinct = classes.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), classes.len(), "classes repeat");
        }
        Err(e) => one_line(e),
    }
});
