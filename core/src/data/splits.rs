//! The three splits of the paper's Clothing1M protocol (train with the labels as given,
//! val, test), as both kinds of user folder end up: image folders ([`super::folder`]) and
//! embeddings ([`super::embeddings`]). Kept apart from both so neither reads the other.

use super::normalisation::Normalisation;
use super::{Dataset, Split};
use crate::formats::image_folder::Skipped;

/// The splits' names, in order: the sub-folders, or the `.npy` files' stems.
pub(super) const SPLITS: [&str; 3] = ["train", "val", "test"];

/// A folder read for training.
pub struct FolderSplit {
    /// `train` and `test`.
    pub split: Split,
    pub val: Dataset,
    pub classes: Vec<String>,
    /// How every split was standardised (for a model card: new inputs the same way).
    pub normalisation: Normalisation,
    /// Files left out, and why, per split (train, val, test).
    pub skipped: [Vec<Skipped>; 3],
    /// What the decoded cache did, for the output.
    pub notes: Vec<String>,
}

/// The three parts (train, val, test) standardised per group (channel, or feature
/// column) with the training part's statistics, as a [`FolderSplit`].
pub(super) fn standardised(
    parts: Vec<Dataset>,
    groups: usize,
    classes: Vec<String>,
    skipped: [Vec<Skipped>; 3],
) -> FolderSplit {
    let normalisation = parts[0].samples.fit_normalisation(groups);
    standardised_by(parts, normalisation, classes, skipped)
}

/// The three parts standardised by the given statistics.
pub(super) fn standardised_by(
    mut parts: Vec<Dataset>,
    normalisation: Normalisation,
    classes: Vec<String>,
    skipped: [Vec<Skipped>; 3],
) -> FolderSplit {
    for part in &mut parts {
        part.samples = part.samples.clone().standardised(normalisation.clone());
    }
    let [train, val, test]: [Dataset; 3] = parts.try_into().expect("three parts");
    FolderSplit {
        split: Split { train, test },
        val,
        classes,
        normalisation,
        skipped,
        notes: Vec::new(),
    }
}
