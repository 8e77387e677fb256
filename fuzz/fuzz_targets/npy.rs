//! The NumPy readers and the text labels of `taks audit FEATURES.npy --labels LABELS`,
//! in memory and (written to a scratch file first) streamed from a file.
//! The properties it asserts are those of the crate's mutation test, in
//! `formats/tests/fuzz_checks/mod.rs` (read there what each reader must do).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../formats/tests/fuzz_checks/mod.rs"]
mod checks;

/// This process's scratch file.
fn scratch() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("taks-fuzz-{}.npy", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    checks::npy::check(data);
    checks::npy::file(data, &scratch());
});
