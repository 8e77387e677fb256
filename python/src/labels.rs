//! Class indices as numpy hands them (int64) made the core's (u32), refused where one
//! is negative or too large, naming the sample.

use pyo3::PyResult;
use pyo3::exceptions::PyValueError;

pub fn class_indices<'a>(labels: impl IntoIterator<Item = &'a i64>) -> PyResult<Vec<u32>> {
    labels
        .into_iter()
        .enumerate()
        .map(|(i, &l)| {
            u32::try_from(l).map_err(|_| {
                PyValueError::new_err(format!(
                    "label {l} of sample {i} is not a class index (0 or more)"
                ))
            })
        })
        .collect()
}
