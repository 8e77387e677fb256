//! A user's own data in the protocol of the paper's Clothing1M experiment: `DIR/train`
//! (labels as given, noisy), `DIR/val` and `DIR/test` (as clean as the user has them),
//! each a folder of class sub-folders of images, read as `taks audit`
//! reads a folder ([`crate::formats::image_folder`]): junk and undecodable files are left
//! out and counted.
//!
//! The three splits must have the same class folders. The network and input size follow
//! the training images' most common size and colour ([`crate::nn::image_input`]),
//! chosen once when a run starts and kept in its `config.json` (`folder_input`), so a
//! resumed run decodes the same way. Pixels are scaled to [0, 1] and standardised per
//! channel with the training split's mean and deviation. The run reports the validation
//! accuracy every epoch; the test accuracy at the best validation epoch is the paper's
//! "Best", at the last epoch its "Last" (`crate::metrics::Summary`).

use std::path::{Path, PathBuf};

use super::Dataset;
use super::cache::{self, Cache};
use super::normalisation::Normalisation;
pub use super::splits::FolderSplit;
use super::splits::{SPLITS, standardised, standardised_by};
use crate::formats::image_folder::{self, Fit, Scan, Skipped};
use crate::nn::image_input;
use crate::nn::{Architecture, pretrained};
use crate::{Error, Result};

/// How a folder's images become samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preparation {
    /// Resized to the run's input and standardised per channel with the training split's
    /// mean and deviation.
    Fitted,
    /// What pretrained weights expect (`nn::pretrained::PREPROCESSING`): torchvision's
    /// resize and centre crop, standardised with ImageNet's mean and deviation.
    ImageNet,
}

impl Preparation {
    fn fit(self) -> Fit {
        match self {
            Preparation::Fitted => Fit::Resize,
            Preparation::ImageNet => Fit::CentreCrop {
                resize: pretrained::RESIZE,
            },
        }
    }
}

/// ImageNet's per-channel statistics, for pixels scaled to [0, 1].
fn imagenet() -> Normalisation {
    Normalisation {
        mean: pretrained::IMAGENET_MEAN.to_vec(),
        std: pretrained::IMAGENET_STD.to_vec(),
    }
}

/// The three splits' files, checked: image folders, or embeddings
/// ([`super::embeddings`]).
pub enum FolderScan {
    Images {
        dir: PathBuf,
        /// train, val, test.
        scans: Box<[Scan; 3]>,
    },
    Embeddings(super::embeddings::Files),
}

/// Scan `DIR/train`, `DIR/val` and `DIR/test` and check that they hold the same classes
/// (or find `DIR/train.npy` and its fellows: embeddings).
pub fn scan(dir: &Path) -> Result<FolderScan> {
    if dir.is_file() {
        return Err(Error::Config(format!(
            "{}: a file, not a folder of train/, val/ and test/",
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(Error::Config(format!("{}: no such folder", dir.display())));
    }
    if super::embeddings::present(dir) {
        return Ok(FolderScan::Embeddings(super::embeddings::find(dir)?));
    }
    let mut scans = Vec::new();
    for split in SPLITS {
        let path = dir.join(split);
        if !path.is_dir() {
            return Err(Error::Config(format!(
                "{}: no {split}/ folder; the Clothing1M protocol needs train/, val/ and test/, each of class sub-folders of images",
                dir.display()
            )));
        }
        let scan = image_folder::scan(&path)?;
        if scan.files.is_empty() {
            return Err(Error::Config(format!(
                "{}: no readable images{}",
                path.display(),
                scan.skipped
                    .first()
                    .map(|s| format!(
                        " ({} skipped, e.g. {}: {})",
                        scan.skipped.len(),
                        s.id,
                        s.reason
                    ))
                    .unwrap_or_default()
            )));
        }
        scans.push(scan);
    }
    let scans: [Scan; 3] = scans
        .try_into()
        .map_err(|_| Error::Config("three splits".into()))?;
    for (split, scan) in SPLITS.iter().zip(&scans).skip(1) {
        if scan.classes != scans[0].classes {
            return Err(Error::Config(format!(
                "{}: its classes ({}) differ from train/'s ({})",
                dir.join(split).display(),
                preview(&scan.classes),
                preview(&scans[0].classes)
            )));
        }
    }
    Ok(FolderScan::Images {
        dir: dir.to_path_buf(),
        scans: Box::new(scans),
    })
}

fn preview(classes: &[String]) -> String {
    let shown: Vec<&str> = classes.iter().take(8).map(String::as_str).collect();
    let more = if classes.len() > 8 { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}

impl FolderScan {
    /// The network and input [channels, height, width] for the training images (the
    /// MLP on [1, 1, features] for embeddings).
    pub fn choose(&self) -> Result<(Architecture, [usize; 3])> {
        match self {
            FolderScan::Images { scans, .. } => {
                let train = &scans[0];
                let common = train.most_common_size().expect("scan checked for images");
                image_input::choose(common, train.any_colour(), None, None)
            }
            FolderScan::Embeddings(files) => Ok((Architecture::Mlp, [1, 1, files.width()?])),
        }
    }

    /// Decode every split at `input` [channels, height, width] (through `cache` when a
    /// split's bytes exceed its budget, [`super::cache`]) and standardise.
    pub fn load(self, input: [usize; 3], cache: Option<&Cache>) -> Result<FolderSplit> {
        self.load_as(input, cache, Preparation::Fitted)
    }

    /// [`FolderScan::load`], the images prepared as `preparation` says.
    pub fn load_as(
        self,
        input: [usize; 3],
        cache: Option<&Cache>,
        preparation: Preparation,
    ) -> Result<FolderSplit> {
        let (dir, scans) = match self {
            FolderScan::Images { dir, scans } => (dir, scans),
            FolderScan::Embeddings(_) if preparation == Preparation::ImageNet => {
                return Err(Error::Config(
                    "pretrained weights (--init) are for a folder of images, not of embeddings"
                        .into(),
                ));
            }
            FolderScan::Embeddings(files) => {
                let loaded = files.load()?;
                if loaded.split.train.shape != input {
                    return Err(Error::Config(format!(
                        "the embeddings are {:?}, and this run was started on {input:?}",
                        loaded.split.train.shape
                    )));
                }
                return Ok(loaded);
            }
        };
        let [channels, height, width] = input;
        if !(channels == 1 || channels == 3) || height == 0 || width == 0 {
            return Err(Error::Config(format!(
                "folder input {input:?} must be [1 or 3, height, width]"
            )));
        }
        let classes = scans[0].classes.clone();
        let mut parts = Vec::new();
        let mut skipped: [Vec<Skipped>; 3] = Default::default();
        let mut notes = Vec::new();
        for (i, scan) in scans.into_iter().enumerate() {
            let decoded = cache::decode(scan.files, input, preparation.fit(), cache, &mut |n| {
                notes.push(n)
            })?;
            skipped[i] = scan.skipped.into_iter().chain(decoded.skipped).collect();
            if decoded.files.is_empty() {
                return Err(Error::Config(format!(
                    "{}: none of its images could be decoded",
                    dir.join(SPLITS[i]).display()
                )));
            }
            parts.push(Dataset {
                samples: decoded.samples,
                labels: decoded.files.iter().map(|f| f.label).collect(),
                shape: input,
                classes: classes.len(),
            });
        }
        let mut split = match preparation {
            Preparation::Fitted => standardised(parts, channels, classes, skipped),
            Preparation::ImageNet => standardised_by(parts, imagenet(), classes, skipped),
        };
        split.notes = notes;
        Ok(split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(path: &Path, value: u8) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut bytes = Vec::new();
        let encoder = image::codecs::png::PngEncoder::new(&mut bytes);
        image::ImageEncoder::write_image(encoder, &[value; 16], 4, 4, image::ExtendedColorType::L8)
            .unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn reads_three_splits_and_refuses_mismatched_ones() {
        let dir = std::env::temp_dir().join(format!("taks-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for split in SPLITS {
            for (class, value) in [("cat", 40), ("dog", 200)] {
                png(&dir.join(format!("{split}/{class}/a.png")), value);
                png(&dir.join(format!("{split}/{class}/b.png")), value + 10);
            }
        }
        std::fs::write(dir.join("train/dog/junk.png"), b"not a png").unwrap();
        let scan = scan(&dir).unwrap();
        let (architecture, input) = scan.choose().unwrap();
        assert_eq!((architecture, input), (Architecture::Mlp, [1, 4, 4]));
        let loaded = scan.load(input, None).unwrap();
        assert_eq!(loaded.classes, ["cat", "dog"]);
        assert_eq!(loaded.split.train.len(), 4);
        assert_eq!((loaded.val.len(), loaded.split.test.len()), (4, 4));
        assert_eq!(loaded.skipped.map(|s| s.len()), [1, 0, 0]);
        // Standardised with the training split's statistics: its mean is 0.
        let mean = loaded.split.train.samples.to_vec().iter().sum::<f32>() / 64.0;
        assert!(mean.abs() < 1e-5, "{mean}");
        assert_eq!(loaded.val.labels, [0, 0, 1, 1]);

        png(&dir.join("test/bird/a.png"), 9);
        let e = super::scan(&dir).err().unwrap().to_string();
        assert!(
            e.contains("test: its classes (bird, cat, dog) differ from train/'s (cat, dog)"),
            "{e}"
        );
        std::fs::remove_dir_all(dir.join("val")).unwrap();
        let e = super::scan(&dir).err().unwrap().to_string();
        assert!(e.contains("no val/ folder"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
