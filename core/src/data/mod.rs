//! Datasets: reading them from their real file formats into one in-memory shape.
//!
//! Every dataset becomes a [`Dataset`] of samples in [C, H, W] layout (image bytes or f32
//! values, [`samples`]) plus u32 class labels, split into a fixed train and test part.
//! Reading happens once on the host, into one copy; the training loop gathers each batch
//! from it and hands the device only that batch.

pub mod cache;
pub mod embeddings;
pub mod folder;
pub mod normalisation;
pub mod samples;
pub mod splits;

pub use taks_formats::{cifar, idx};

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use normalisation::Normalisation;
pub use samples::Samples;

use crate::{Error, Result};

/// One part (train or test) of a dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// `n` samples of `C * H * W` values, [C, H, W] inside a sample.
    pub samples: Samples,
    /// The labels as shipped. For the training part these are the *true* labels; noise
    /// is injected separately so both can be kept.
    pub labels: Vec<u32>,
    /// [channels, height, width].
    pub shape: [usize; 3],
    pub classes: usize,
}

impl Dataset {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Values per sample.
    pub fn sample_size(&self) -> usize {
        self.shape.iter().product()
    }

    /// The first `n` samples (for quick runs and tests); all of them when n >= len.
    pub fn truncated(mut self, n: usize) -> Self {
        if n < self.len() {
            self.labels.truncate(n);
            self.samples = self.samples.truncated(n);
        }
        self
    }

    /// The samples `picked`, in that order: a view of the same store, labels copied.
    pub fn subset(&self, picked: &[usize]) -> Self {
        Dataset {
            samples: self.samples.subset(picked),
            labels: picked.iter().map(|&i| self.labels[i]).collect(),
            shape: self.shape,
            classes: self.classes,
        }
    }
}

/// A dataset's fixed train/test split.
#[derive(Debug, Clone)]
pub struct Split {
    pub train: Dataset,
    pub test: Dataset,
}

impl Split {
    /// Both parts hold samples, of one shape: what training needs of any split.
    pub fn check(&self) -> Result<()> {
        if self.train.is_empty() || self.test.is_empty() {
            return Err(Error::Config(format!(
                "the training and test sets must not be empty (they have {} and {} samples)",
                self.train.len(),
                self.test.len()
            )));
        }
        if self.train.shape != self.test.shape {
            return Err(Error::Config(format!(
                "training samples are {:?} but test samples are {:?}",
                self.train.shape, self.test.shape
            )));
        }
        Ok(())
    }
}

/// The datasets taks can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetKind {
    /// The 10,000 real MNIST digits bundled in the repository (8,000 train, 2,000 test).
    MnistDigits,
    /// The full MNIST from a folder of its four IDX files.
    Mnist,
    /// Fashion-MNIST, from a folder of its four IDX files.
    FashionMnist,
    /// CIFAR-10, binary version.
    Cifar10,
    /// CIFAR-100, binary version (fine labels).
    Cifar100,
    /// A user's own folder in the paper's Clothing1M protocol: `train/` (the labels as
    /// given, noisy), `val/` and `test/`, each of class sub-folders of images ([`folder`]).
    Folder,
}

impl DatasetKind {
    pub const ALL: [DatasetKind; 6] = [
        DatasetKind::MnistDigits,
        DatasetKind::Mnist,
        DatasetKind::FashionMnist,
        DatasetKind::Cifar10,
        DatasetKind::Cifar100,
        DatasetKind::Folder,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::MnistDigits => "mnist-digits",
            DatasetKind::Mnist => "mnist",
            DatasetKind::FashionMnist => "fashion-mnist",
            DatasetKind::Cifar10 => "cifar10",
            DatasetKind::Cifar100 => "cifar100",
            DatasetKind::Folder => "folder",
        }
    }

    /// The fixed number of classes; a folder has as many as it has class folders.
    pub fn classes(self) -> Option<usize> {
        match self {
            DatasetKind::Cifar100 => Some(100),
            DatasetKind::Folder => None,
            _ => Some(10),
        }
    }

    /// Whether the paper's MLP (28x28 grey images) or its CNN (32x32 colour) fits; a
    /// folder's network is chosen from its images ([`folder::choose`]).
    pub fn is_grey_28(self) -> bool {
        !matches!(
            self,
            DatasetKind::Cifar10 | DatasetKind::Cifar100 | DatasetKind::Folder
        )
    }

    /// Where the files are looked for when no folder is given.
    pub fn default_dir(self) -> Option<PathBuf> {
        match self {
            DatasetKind::FashionMnist => Some(PathBuf::from("/usr/share/datasets/fashion-mnist")),
            _ => None,
        }
    }

    /// Read the dataset. `dir` overrides the default folder; the bundled digits need none.
    pub fn load(self, dir: Option<&Path>) -> Result<Split> {
        if self == DatasetKind::MnistDigits && dir.is_none() {
            return bundled_mnist_digits();
        }
        if self == DatasetKind::Folder {
            return Err(Error::Config(
                "a folder of train/, val/ and test/ is for taks train --data DIR and taks experiment; audit a folder by naming it as DATA"
                    .into(),
            ));
        }
        let dir = dir
            .map(Path::to_path_buf)
            .or_else(|| self.default_dir())
            .ok_or_else(|| {
                Error::Config(format!(
                    "dataset {} needs --data-dir <folder with its files>",
                    self.name()
                ))
            })?;
        if !dir.is_dir() {
            return Err(Error::Config(format!(
                "data folder {} for {} does not exist{}",
                dir.display(),
                self.name(),
                if self == DatasetKind::FashionMnist {
                    " (install the Debian package dataset-fashion-mnist or pass --data-dir)"
                } else {
                    ""
                }
            )));
        }
        match self {
            DatasetKind::MnistDigits | DatasetKind::Mnist | DatasetKind::FashionMnist => {
                load_idx_folder(&dir, 10)
            }
            DatasetKind::Cifar10 => load_cifar(&dir, cifar::Variant::Cifar10),
            DatasetKind::Cifar100 => load_cifar(&dir, cifar::Variant::Cifar100),
            DatasetKind::Folder => unreachable!("returned above"),
        }
    }
}

impl FromStr for DatasetKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        DatasetKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = DatasetKind::ALL.iter().map(|k| k.name()).collect();
                Error::Config(format!(
                    "unknown dataset '{s}' (choose one of {})",
                    names.join(", ")
                ))
            })
    }
}

/// The four standard IDX files of MNIST and Fashion-MNIST, gzip'd or not.
fn idx_file(dir: &Path, stem: &str) -> PathBuf {
    let gz = dir.join(format!("{stem}.gz"));
    if gz.exists() { gz } else { dir.join(stem) }
}

fn load_idx_folder(dir: &Path, classes: usize) -> Result<Split> {
    let part = |prefix: &str| -> Result<Dataset> {
        let images = idx_file(dir, &format!("{prefix}-images-idx3-ubyte"));
        let labels = idx_file(dir, &format!("{prefix}-labels-idx1-ubyte"));
        let (images, labels, rows, cols) = idx::read_pair(&images, &labels, classes)?;
        Ok(Dataset {
            samples: Samples::from_values(images, rows * cols),
            labels,
            shape: [1, rows, cols],
            classes,
        })
    };
    Ok(Split {
        train: part("train")?,
        test: part("t10k")?,
    })
}

/// The bundled digits, compiled into the library so the default run needs no files
/// and works the same from any directory and in the browser.
pub fn bundled_mnist_digits() -> Result<Split> {
    const TRAIN_IMAGES: &[u8] =
        include_bytes!("../../data/mnist-digits/train-images-idx3-ubyte.gz");
    const TRAIN_LABELS: &[u8] =
        include_bytes!("../../data/mnist-digits/train-labels-idx1-ubyte.gz");
    const TEST_IMAGES: &[u8] = include_bytes!("../../data/mnist-digits/t10k-images-idx3-ubyte.gz");
    const TEST_LABELS: &[u8] = include_bytes!("../../data/mnist-digits/t10k-labels-idx1-ubyte.gz");
    let part = |images: &[u8], labels: &[u8], name: &str| -> Result<Dataset> {
        let path = PathBuf::from(format!("<bundled mnist-digits {name}>"));
        let gunzip = |bytes: &[u8]| -> Result<Vec<u8>> {
            use std::io::Read;
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(bytes)
                .read_to_end(&mut out)
                .map_err(|e| Error::malformed(&path, e.to_string()))?;
            Ok(out)
        };
        let img = idx::parse(&gunzip(images)?, 3, &path)?;
        let lab = idx::parse(&gunzip(labels)?, 1, &path)?;
        let (images, labels, rows, cols) = idx::decode_pair(img, lab, 10, &path, &path)?;
        Ok(Dataset {
            samples: Samples::from_values(images, rows * cols),
            labels,
            shape: [1, rows, cols],
            classes: 10,
        })
    };
    Ok(Split {
        train: part(TRAIN_IMAGES, TRAIN_LABELS, "train")?,
        test: part(TEST_IMAGES, TEST_LABELS, "test")?,
    })
}

impl DatasetKind {
    /// The per-channel (mean, std) its loader normalises pixels in [0, 1] with: the
    /// usual values for CIFAR, none (0, 1) for the 28x28 grey sets.
    pub fn channel_normalisation(self) -> (Vec<f32>, Vec<f32>) {
        match self {
            DatasetKind::Cifar10 => (CIFAR10_MEAN_STD.0.to_vec(), CIFAR10_MEAN_STD.1.to_vec()),
            DatasetKind::Cifar100 => (CIFAR100_MEAN_STD.0.to_vec(), CIFAR100_MEAN_STD.1.to_vec()),
            _ => (vec![0.0], vec![1.0]),
        }
    }
}

const CIFAR10_MEAN_STD: ([f32; 3], [f32; 3]) = ([0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616]);
const CIFAR100_MEAN_STD: ([f32; 3], [f32; 3]) =
    ([0.5071, 0.4865, 0.4409], [0.2673, 0.2564, 0.2762]);

/// Per-channel (mean, std) normalisation, the usual one for CIFAR, applied as batches are
/// gathered from the bytes.
fn load_cifar(dir: &Path, variant: cifar::Variant) -> Result<Split> {
    let (mean, std) = match variant {
        cifar::Variant::Cifar10 => CIFAR10_MEAN_STD,
        cifar::Variant::Cifar100 => CIFAR100_MEAN_STD,
    };
    let (train_files, test_file) = variant.files();
    let part = |names: &[&str]| -> Result<Dataset> {
        let (pixels, labels) = cifar::read_files(dir, names, variant)?;
        let normalisation = Normalisation {
            mean: mean.to_vec(),
            std: std.to_vec(),
        };
        Ok(Dataset {
            samples: Samples::from_bytes(pixels, cifar::PIXELS).standardised(normalisation),
            labels,
            shape: [3, 32, 32],
            classes: variant.classes(),
        })
    };
    Ok(Split {
        train: part(&train_files)?,
        test: part(&[test_file])?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_digits_are_real_and_split() {
        let split = bundled_mnist_digits().unwrap();
        assert_eq!(split.train.len(), 8000);
        assert_eq!(split.test.len(), 2000);
        assert_eq!(split.train.shape, [1, 28, 28]);
        let images = split.train.samples.to_vec();
        assert_eq!(images.len(), 8000 * 784);
        // Every class is present in both parts, in realistic proportions.
        for part in [&split.train, &split.test] {
            let mut counts = [0usize; 10];
            part.labels.iter().for_each(|&l| counts[l as usize] += 1);
            let min = *counts.iter().min().unwrap() as f64;
            assert!(min > 0.06 * part.len() as f64, "{counts:?}");
        }
        // Digits are ink on a blank page: mostly zeros, some full-intensity pixels.
        let blank = images.iter().filter(|&&p| p == 0.0).count() as f64;
        assert!(blank / images.len() as f64 > 0.7);
        assert!(images.iter().any(|&p| p > 0.99));
    }

    #[test]
    fn missing_folder_is_a_clear_error() {
        let err = DatasetKind::Mnist.load(None).unwrap_err().to_string();
        assert!(err.contains("--data-dir"), "{err}");
        let err = DatasetKind::Cifar10
            .load(Some(Path::new("/nonexistent/x")))
            .unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
    }

    #[test]
    fn cifar10_folder_is_read_and_normalised() {
        let dir = std::env::temp_dir().join(format!("taks-cifar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let record = |label: u8, value: u8| {
            let mut r = vec![label];
            r.extend(std::iter::repeat_n(value, cifar::PIXELS));
            r
        };
        for (i, name) in cifar::Variant::Cifar10.files().0.iter().enumerate() {
            std::fs::write(
                dir.join(name),
                [record(i as u8, 255), record(9, 0)].concat(),
            )
            .unwrap();
        }
        std::fs::write(dir.join("test_batch.bin"), record(3, 128)).unwrap();
        let split = DatasetKind::Cifar10.load(Some(&dir)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(split.train.len(), 10);
        assert_eq!(split.train.labels[..4], [0, 9, 1, 9]);
        assert_eq!(split.test.labels, vec![3]);
        assert_eq!(split.train.shape, [3, 32, 32]);
        // Red channel of a white pixel: (1 - 0.4914) / 0.2470.
        assert!((split.train.samples.range(0, 1)[0] - (1.0 - 0.4914) / 0.2470).abs() < 1e-5);
    }
}
