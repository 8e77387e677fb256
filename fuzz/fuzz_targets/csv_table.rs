//! The CSV table reader of `taks audit` (`taks_formats::csv_table::parse`).
//! The properties it asserts are those of the crate's mutation test, in
//! `formats/tests/fuzz_checks/mod.rs` (read there what each reader must do).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../formats/tests/fuzz_checks/mod.rs"]
mod checks;

fuzz_target!(|data: &[u8]| {
    checks::csv_table::check(data);
});
