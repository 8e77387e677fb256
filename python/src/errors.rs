//! The core's errors as Python's exceptions, each with the command line's one-line
//! message: a file that is not there is `FileNotFoundError`, one that cannot be read or
//! written `OSError`, everything a caller named wrongly (a shape, a value, a setting)
//! `ValueError`, a device that failed `RuntimeError`.

use pyo3::PyErr;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};
use taks_core::Error;
use taks_core::formats::FormatError;

pub fn to_py(error: Error) -> PyErr {
    let line = error.to_string();
    match &error {
        Error::Format(FormatError::Read { error, .. })
            if error.kind() == std::io::ErrorKind::NotFound =>
        {
            PyFileNotFoundError::new_err(line)
        }
        Error::Format(FormatError::Read { .. } | FormatError::Write { .. }) => {
            PyOSError::new_err(line)
        }
        Error::Device(_) => PyRuntimeError::new_err(line),
        _ => PyValueError::new_err(line),
    }
}
