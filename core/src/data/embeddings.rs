//! Embeddings in the Clothing1M protocol (`taks train --data DIR` where DIR holds
//! `.npy` matrices instead of image folders): `DIR/train.npy`, `DIR/val.npy` and
//! `DIR/test.npy`, each [samples, features] (float16/32/64, as `taks audit` reads them),
//! with their labels beside them as `DIR/<split>-labels.npy` (integers) or
//! `DIR/<split>-labels.txt` (class names, one a line). The three splits take the same
//! kind of labels; with names, the classes are the training split's (numeric order when
//! all are numbers, else text order) and a validation or test name outside them is an
//! error. Features are standardised per column with the training split's statistics;
//! the network is the MLP.

use std::path::{Path, PathBuf};

use super::Dataset;
use super::samples::Samples;
use super::splits::{FolderSplit, SPLITS, standardised};
use crate::formats::{labels as names, npy};
use crate::{Error, Result};

/// The six files, found.
pub struct Files {
    features: [PathBuf; 3],
    labels: [PathBuf; 3],
}

/// Whether `dir` holds embeddings rather than image folders.
pub fn present(dir: &Path) -> bool {
    dir.join("train.npy").is_file()
}

/// Find every split's matrix and labels in `dir`.
pub fn find(dir: &Path) -> Result<Files> {
    let mut features = Vec::new();
    let mut labels = Vec::new();
    for split in SPLITS {
        let matrix = dir.join(format!("{split}.npy"));
        if !matrix.is_file() {
            return Err(Error::Config(format!(
                "{}: no {split}.npy; embeddings in the Clothing1M protocol need train.npy, val.npy and test.npy, each with <split>-labels.npy or .txt",
                dir.display()
            )));
        }
        let label = ["npy", "txt"]
            .iter()
            .map(|ext| dir.join(format!("{split}-labels.{ext}")))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                Error::Config(format!(
                    "{}: no {split}-labels.npy or {split}-labels.txt beside {split}.npy",
                    dir.display()
                ))
            })?;
        features.push(matrix);
        labels.push(label);
    }
    let kinds: Vec<_> = labels
        .iter()
        .map(|p| p.extension().map(|e| e.to_owned()))
        .collect();
    if kinds.iter().any(|k| *k != kinds[0]) {
        return Err(Error::Config(format!(
            "{}: the three splits' labels must be of one kind (all .npy or all .txt)",
            dir.display()
        )));
    }
    let array = |v: Vec<PathBuf>| -> [PathBuf; 3] { v.try_into().expect("three splits") };
    Ok(Files {
        features: array(features),
        labels: array(labels),
    })
}

impl Files {
    /// Features per sample, from the training matrix's header.
    pub fn width(&self) -> Result<usize> {
        let header = npy::read_file_header(&self.features[0])?;
        match header.shape[..] {
            [_, d] if d > 0 => Ok(d),
            _ => Err(Error::Config(format!(
                "{}: holds an array of shape {:?}; features are a 2-D matrix [samples, features]",
                self.features[0].display(),
                header.shape
            ))),
        }
    }

    /// Read the three splits ([1, 1, features] each) and standardise them.
    pub fn load(&self) -> Result<FolderSplit> {
        let (classes, labels) = self.labels()?;
        let width = self.width()?;
        let mut parts = Vec::new();
        for ((path, labels), split) in self.features.iter().zip(labels).zip(SPLITS) {
            let matrix = npy::read_matrix(path)?;
            if matrix.cols != width {
                return Err(Error::Config(format!(
                    "{}: {} features, and train.npy has {width}",
                    path.display(),
                    matrix.cols
                )));
            }
            if labels.len() != matrix.rows {
                return Err(Error::Config(format!(
                    "{split}: {} labels for the {} rows of {}",
                    labels.len(),
                    matrix.rows,
                    path.display()
                )));
            }
            parts.push(Dataset {
                samples: Samples::from_values(matrix.values, width),
                labels,
                shape: [1, 1, width],
                classes: classes.len(),
            });
        }
        Ok(standardised(parts, width, classes, Default::default()))
    }

    /// The classes and every split's class indices.
    fn labels(&self) -> Result<(Vec<String>, Vec<Vec<u32>>)> {
        let integers = self.labels[0].extension().is_some_and(|e| e == "npy");
        if integers {
            let all = self
                .labels
                .iter()
                .map(|p| npy::read_labels(p))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let classes = all.iter().flatten().max().map_or(0, |&m| m as usize + 1);
            return Ok(((0..classes).map(|c| c.to_string()).collect(), all));
        }
        let (classes, train) = names::read_names(&self.labels[0])?;
        let mut all = vec![train];
        for path in &self.labels[1..] {
            let (theirs, indices) = names::read_names(path)?;
            let mapped = indices
                .iter()
                .map(|&i| {
                    let name = &theirs[i as usize];
                    classes
                        .iter()
                        .position(|c| c == name)
                        .map(|c| c as u32)
                        .ok_or_else(|| {
                            Error::Config(format!(
                                "{}: class '{name}' is not among the training labels' classes",
                                path.display()
                            ))
                        })
                })
                .collect::<Result<Vec<_>>>()?;
            all.push(mapped);
        }
        Ok((classes, all))
    }
}
