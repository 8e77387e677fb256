//! The IDX reader of MNIST-like sets (`taks_formats::idx`).
//! The properties it asserts are those of the crate's mutation test, in
//! `formats/tests/fuzz_checks/mod.rs` (read there what each reader must do).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../formats/tests/fuzz_checks/mod.rs"]
mod checks;

fuzz_target!(|data: &[u8]| {
    checks::idx::check(data);
});
