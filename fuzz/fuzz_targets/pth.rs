//! A torch `.pth` archive of pretrained weights (`taks_formats::pth::read`), written to
//! a scratch file first.
//! The properties it asserts are those of the crate's mutation test, in
//! `formats/tests/fuzz_checks/mod.rs` (read there what each reader must do).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../formats/tests/fuzz_checks/mod.rs"]
mod checks;

/// This process's scratch file.
fn scratch() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("taks-fuzz-{}.pth", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    checks::state_dict::pth(data, &scratch());
});
