//! What can be wrong with a file. Every message names the file and the fault, so a
//! front end can print it on one line as it is.

use std::path::PathBuf;

pub type Result<T, E = FormatError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// A file could not be opened, read or written.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file exists but its contents are not what its format requires.
    #[error("{path}: {reason}")]
    Malformed { path: PathBuf, reason: String },
    /// A label is not a valid class index.
    #[error("{path}: label {label} at sample {index} is out of range for {classes} classes")]
    LabelOutOfRange {
        path: PathBuf,
        index: usize,
        label: u32,
        classes: usize,
    },
}

impl FormatError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        FormatError::Io {
            path: path.into(),
            source,
        }
    }

    /// A fault in a file. Control characters in `reason` (which may quote the file, a
    /// tensor name say) are escaped, so the message stays on one line.
    pub fn malformed(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        let mut reason = reason.into();
        if reason.contains(char::is_control) {
            reason = reason
                .chars()
                .map(|c| match c.is_control() {
                    true => c.escape_default().to_string(),
                    false => c.to_string(),
                })
                .collect();
        }
        FormatError::Malformed {
            path: path.into(),
            reason,
        }
    }
}
