//! The CSV table reader of `taks audit` (`taks_formats::csv_table::parse`). Checks, for
//! any bytes, that `parse` never panics; that on success every feature value is finite,
//! there is one row of values per label, every label indexes a class and the classes
//! are distinct; and that every error is one line naming the file.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use taks_formats::csv_table;

const PATH: &str = "fuzz_table.csv";

fuzz_target!(|data: &[u8]| {
    match csv_table::parse(data, "label", Path::new(PATH)) {
        Ok(table) => {
            assert!(!table.features.is_empty());
            assert!(table.rows() > 0);
            assert_eq!(table.values.len(), table.rows() * table.features.len());
            assert!(table.values.iter().all(|v| v.is_finite()));
            assert!(table.labels.iter().all(|&l| (l as usize) < table.classes.len()));
            let mut classes = table.classes.clone();
            classes.sort();
            classes.dedup();
            assert_eq!(classes.len(), table.classes.len(), "classes repeat");
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n') && msg.contains(PATH), "bad error: {msg:?}");
        }
    }
});
