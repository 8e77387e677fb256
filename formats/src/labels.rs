//! Class labels as files give them: checked against the class count before anything
//! uses them as an index.

use std::path::Path;

use crate::{FormatError, Result};

/// Check every label against the class count; the first one out of range is the error.
pub fn checked_labels(
    labels: impl Iterator<Item = u32>,
    classes: usize,
    path: &Path,
) -> Result<Vec<u32>> {
    labels
        .enumerate()
        .map(|(index, label)| {
            if (label as usize) < classes {
                Ok(label)
            } else {
                Err(FormatError::LabelOutOfRange {
                    path: path.into(),
                    index,
                    label,
                    classes,
                })
            }
        })
        .collect()
}
