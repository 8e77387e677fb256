//! The IDX reader of MNIST-like sets (`taks_formats::idx`). Checks, for any bytes, that:
//! - `parse` as rank 1 and as rank 3 never panics, and accepts only bytes that are
//!   exactly the header it reports followed by exactly the values its dimensions need;
//! - when the input (after its first byte, which gives where to cut) splits into an
//!   image array and a label array that both parse, `decode_pair` with 10 classes never
//!   panics, and what it returns agrees with them (labels below 10, pixels in [0, 1]);
//! - `gunzip_if_gzip` never panics, never returns more than `MAX_DECOMPRESSED` bytes,
//!   passes non-gzip bytes through unchanged, and its output goes through `parse` too;
//! - every error is one line that names the file.
//!
//! Run under `-malloc_limit_mb`, an allocation driven by a lying header is a crash too.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use taks_formats::{FormatError, idx};

const IMAGES: &str = "fuzz-images.idx";
const LABELS: &str = "fuzz-labels.idx";

fn check_error(e: &FormatError, paths: &[&str]) {
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "error on several lines: {msg:?}");
    assert!(
        paths.iter().any(|p| msg.contains(p)),
        "error names no file: {msg:?}"
    );
}

fn parse(bytes: &[u8], rank: usize, path: &str) -> Option<idx::IdxArray> {
    match idx::parse(bytes, rank, Path::new(path)) {
        Ok(array) => {
            assert_eq!(array.dims.len(), rank);
            // Accepted bytes are exactly the array written back.
            assert_eq!(idx::encode(&array.dims, &array.values), bytes);
            Some(array)
        }
        Err(e) => {
            check_error(&e, &[path]);
            None
        }
    }
}

fuzz_target!(|data: &[u8]| {
    parse(data, 1, LABELS);
    parse(data, 3, IMAGES);

    if let Some((&cut, rest)) = data.split_first() {
        let (images, labels) = rest.split_at((cut as usize).min(rest.len()));
        if let (Some(img), Some(lab)) = (parse(images, 3, IMAGES), parse(labels, 1, LABELS)) {
            let n = img.dims[0];
            match idx::decode_pair(img, lab, 10, Path::new(IMAGES), Path::new(LABELS)) {
                Ok((pixels, labels, rows, cols)) => {
                    assert_eq!(labels.len(), n);
                    assert_eq!(pixels.len(), n * rows * cols);
                    assert!(labels.iter().all(|&l| l < 10));
                    assert!(pixels.iter().all(|p| (0.0..=1.0).contains(p)));
                }
                Err(e) => check_error(&e, &[IMAGES, LABELS]),
            }
        }
    }

    match idx::gunzip_if_gzip(data.to_vec(), Path::new(IMAGES)) {
        Ok(out) => {
            assert!(out.len() <= idx::MAX_DECOMPRESSED);
            if !data.starts_with(&[0x1f, 0x8b]) {
                assert_eq!(out, data);
            }
            parse(&out, 1, LABELS);
            parse(&out, 3, IMAGES);
        }
        Err(e) => check_error(&e, &[IMAGES]),
    }
});
