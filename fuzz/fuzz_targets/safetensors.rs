//! A SafeTensors state_dict of pretrained weights
//! (`taks_formats::state_dict::safetensors`).
//! The properties it asserts are those of the crate's mutation test, in
//! `formats/tests/fuzz_checks/mod.rs` (read there what each reader must do).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../formats/tests/fuzz_checks/mod.rs"]
mod checks;

fuzz_target!(|data: &[u8]| {
    checks::state_dict::safetensors(data);
});
