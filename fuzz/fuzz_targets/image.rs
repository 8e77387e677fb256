//! One image file of an image folder given in memory (`taks_formats::image_folder`),
//! beside a good one.
//! The properties it asserts are those of the crate's mutation test, in
//! `formats/tests/fuzz_checks/mod.rs` (read there what each reader must do).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../formats/tests/fuzz_checks/mod.rs"]
mod checks;

/// The good file of the other class.
const GOOD: &[u8] = include_bytes!("../../formats/tests/seeds/image/rgb.png");

fuzz_target!(|data: &[u8]| {
    checks::image::check(data, GOOD);
});
