//! The one error type of the core crate. Every variant is a message a user can act
//! on; the front ends print it on one line and exit non-zero.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file is missing, unreadable or not in its format.
    #[error(transparent)]
    Format(#[from] taks_formats::FormatError),
    /// A setting is outside what the method allows (k > n, a rate above 1, ...).
    #[error("invalid setting: {0}")]
    Config(String),
    /// The loss or the risks became NaN or infinite; training cannot go on.
    #[error("training diverged at epoch {epoch}: {what} is not finite")]
    Diverged { epoch: usize, what: String },
    /// The requested compute device is missing or failed.
    #[error("device error: {0}")]
    Device(String),
    /// What a person named cannot be read as they named it (a flag that does not fit
    /// the data, a file that is not there): the message is the whole line.
    #[error("{0}")]
    Input(String),
    /// The caller asked the work to stop (Ctrl-C in Python) before it was done.
    #[error("stopped before the end")]
    Stopped,
}

/// A refusal of what a person named, as [`Error::Input`]: `line` is the whole message.
pub(crate) fn refuse<T>(line: String) -> Result<T> {
    Err(Error::Input(line))
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Format(taks_formats::FormatError::io(path, source))
    }

    pub fn malformed(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::Format(taks_formats::FormatError::malformed(path, reason))
    }
}
