//! A test that cannot check what it is for on this machine (an adapter without the
//! type it tests) says so and is not counted: Rust's harness would report it passed,
//! so it also writes the reason to the file `TAKS_SKIPPED` names, which the test command
//! (`scripts/test.sh`) subtracts from the tests it counts and lists at its end.

use std::io::Write;

/// Record that `test` checked nothing of its purpose here, and why.
pub fn skip(test: &str, why: &str) {
    let line = format!("skipped {test}: {why}");
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("TAKS_SKIPPED") {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("the file TAKS_SKIPPED names opens for appending");
        // One write, so lines of tests skipping at once do not interleave.
        file.write_all(format!("{line}\n").as_bytes())
            .expect("a skip is recorded");
    }
}
