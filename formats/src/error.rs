//! What can be wrong with a file. Every message names the file and the fault, so a
//! front end can print it on one line as it is.

use std::path::PathBuf;

pub type Result<T, E = FormatError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// A file or folder could not be opened or read. The system's error is in the
    /// message and deliberately not a `source`: a front end printing the chain of
    /// causes would say it twice.
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A file could not be created, written, synced or moved into place (a full disk):
    /// said as a write, whatever the operation's own name for it.
    #[error("cannot write {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
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
    /// Reading `path` failed.
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        FormatError::Read {
            path: path.into(),
            error,
        }
    }

    /// Writing `path` failed.
    pub fn write(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        FormatError::Write {
            path: path.into(),
            error,
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
