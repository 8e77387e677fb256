//! What this crate's test binaries share (cargo does not build this folder as a test of
//! its own).

use std::path::PathBuf;

/// This crate's folder: cargo's at run time (a shared target folder may hold a binary
/// built from another checkout, whose compile-time folder is gone), the compile-time one
/// otherwise.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into()),
    )
}
