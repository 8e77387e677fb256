//! What an audit audits, read from where a person keeps it: a folder of class
//! sub-folders of images, a CSV table, a `.npy` feature matrix with its labels, or a
//! built-in dataset with injected noise, into one [`AuditData`].
//!
//! Why here and not in a front end: the command line (`taks audit`) and Python name
//! their data the same way ([`SourceSpec`]) and must get the same samples, the same
//! network and the same refusals from it; the page, which holds a person's files as the
//! browser's bytes rather than paths, shares the folder's steps ([`super::images`]) and
//! the tables' preparation ([`super::input`]). Reading is in two steps because an image
//! folder's network may be chosen by timing it on the device: [`read_source`] reads and
//! checks all it can without one, [`ImageSource::finish`] the rest.

use std::path::{Path, PathBuf};

use burn::tensor::Device;
use serde::Serialize;

use super::AuditSettings;
use super::images::Examined;
use super::input::{self, Input, Normalisation, Prepared};
use super::network::Choice;
use crate::Result;
use crate::data::cache::Cache;
use crate::data::{Dataset, DatasetKind};
use crate::error::refuse;
use crate::formats::image_folder::{self, Skipped};
use crate::formats::{csv_table, labels as label_file, npy};
use crate::nn::Architecture;
use crate::noise::{NoiseKind, NoisyLabels, inject};

/// The data an audit is to read, as a front end's flags or arguments name it.
#[derive(Clone, Debug)]
pub struct SourceSpec {
    /// A folder of class sub-folders of images, a CSV table or a `.npy` matrix (unless
    /// `dataset` is given).
    pub data: Option<PathBuf>,
    /// A built-in dataset instead of `data`.
    pub dataset: Option<DatasetKind>,
    /// A `.npy` matrix's labels: a `.npy` of integers, or class names one a line.
    pub labels: Option<PathBuf>,
    /// A CSV table's label column.
    pub label_column: String,
    /// The network, where the front end names it (rows of numbers take the MLP).
    pub model: Option<Architecture>,
    /// An image folder's input size, where named.
    pub image_size: Option<(u32, u32)>,
    /// Where a built-in dataset's files are.
    pub data_dir: Option<PathBuf>,
    /// The first this many samples of a built-in dataset.
    pub train_limit: Option<usize>,
    /// Noise injected into a built-in dataset (clean when `None`), at `noise_rate`.
    pub noise: Option<NoiseKind>,
    pub noise_rate: Option<f64>,
    /// The seed of the injected noise.
    pub seed: u64,
    /// Seconds an image folder's audit may take on the device: the most capable network
    /// that fits is chosen, when `model` and `image_size` do not say.
    pub budget: f64,
    /// Where an image folder's decoded samples go when they pass its memory budget.
    pub cache: Cache,
}

/// The audited data, ready for the networks.
pub struct AuditData {
    pub prepared: Prepared,
    pub architecture: Architecture,
    /// Per sample: the image path relative to the folder, or the data row.
    pub ids: Vec<String>,
    pub classes: Vec<String>,
    pub labels: NoisyLabels,
    /// Whether `labels.true_labels` is the truth (injected noise) or a copy of the given.
    pub truth_known: bool,
    pub skipped: Vec<Skipped>,
    /// The data as the user named it.
    pub source: String,
    /// How the network was chosen by the time budget (image folders without a model).
    pub network_choice: Option<Choice>,
    /// Why colour images are audited in grey, when they are.
    pub colour_note: Option<String>,
    /// The pretrained backbone whose features these are, where they are an embedding.
    pub backbone: Option<Backbone>,
}

/// What an audit on a pretrained network's features ran on, and why not on a fine-tuned
/// backbone: written into `summary.json` and the report.
#[derive(Debug, Clone, Serialize)]
pub struct Backbone {
    /// The weights file.
    pub weights: String,
    pub network: &'static str,
    /// Features per image.
    pub features: usize,
    /// Whether the backbone was fine-tuned on the folder (never, by the audit).
    pub fine_tuned: bool,
    pub why: &'static str,
}

/// The data as read so far: ready, or an image folder scanned and waiting for its
/// network, which may need the device ([`ImageSource::finish`]).
pub enum Source {
    Ready(Box<AuditData>),
    Images(Box<ImageSource>),
}

impl Source {
    /// A short name for a default output folder: the data's file or folder name.
    pub fn name(&self) -> String {
        let source = match self {
            Source::Ready(data) => &data.source,
            Source::Images(images) => images.source(),
        };
        Path::new(source)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "data".into())
    }
}

/// An image folder whose headers are read and checked ([`Examined`]), with what its
/// spec says of finishing it: the time budget that may choose its network, and where
/// its decoded samples go past the memory budget.
pub struct ImageSource {
    examined: Examined,
    budget: f64,
    cache: Cache,
}

/// Read and check `spec`'s data as far as can be done without a device.
pub fn read_source(spec: &SourceSpec) -> Result<Source> {
    let path = spec.data.as_ref();
    if spec.dataset.is_none()
        && let Some(dir) = path.filter(|p| p.is_dir())
    {
        let scan = image_folder::scan(dir)?;
        let source = dir.display().to_string();
        let examined = Examined::new(scan, &source, spec.model, spec.image_size)?;
        return Ok(Source::Images(Box::new(ImageSource {
            examined,
            budget: spec.budget,
            cache: spec.cache.clone(),
        })));
    }
    read_data(spec).map(|d| Source::Ready(Box::new(d)))
}

/// Read a file (or the built-in set) into [`AuditData`].
fn read_data(spec: &SourceSpec) -> Result<AuditData> {
    if let Some(kind) = spec.dataset {
        if spec.labels.is_some() {
            return refuse("--labels is for a .npy feature matrix, not --dataset".into());
        }
        return read_builtin(kind, spec);
    }
    let Some(path) = spec.data.as_ref() else {
        return refuse("name the data to audit: a folder, a CSV table or a .npy matrix".into());
    };
    let is_npy = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    if spec.labels.is_some() && !is_npy {
        return refuse(format!(
            "--labels is for a .npy feature matrix; {} carries its own labels",
            path.display()
        ));
    }
    if is_npy && path.is_file() {
        read_npy(path, spec)
    } else if path.is_file() {
        table_flags(spec, path, "a CSV table")?;
        let table = csv_table::read(path, &spec.label_column)?;
        let prepared = input::prepare_table(&table);
        Ok(table_data(prepared, table.classes, table.labels, path))
    } else {
        refuse(format!("{}: no such file or folder", path.display()))
    }
}

/// A `.npy` matrix [n, d] and its labels (a `.npy` of integers, or names one a line).
fn read_npy(path: &Path, spec: &SourceSpec) -> Result<AuditData> {
    let Some(labels_path) = &spec.labels else {
        return refuse(format!(
            "{}: a .npy matrix needs --labels LABELS (a .npy of integers, or a text file of class names, one a line)",
            path.display()
        ));
    };
    table_flags(spec, path, "a .npy feature matrix")?;
    if !labels_path.is_file() {
        return refuse(format!("{}: no such file", labels_path.display()));
    }
    let (classes, labels) = if labels_path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
    {
        let labels = npy::read_labels(labels_path)?;
        let classes = labels.iter().max().map_or(0, |&m| m as usize + 1);
        ((0..classes).map(|c| c.to_string()).collect(), labels)
    } else {
        label_file::read_names(labels_path)?
    };
    let matrix = npy::read_matrix(path)?;
    if labels.len() != matrix.rows {
        return refuse(format!(
            "{}: {} labels for the {} rows of {}",
            labels_path.display(),
            labels.len(),
            matrix.rows,
            path.display()
        ));
    }
    // Checked already: every value finite (`npy::read_matrix`), a label per row (above),
    // each within the classes it was read with.
    let mut data = features_data(matrix.values, matrix.cols, labels, classes, path);
    // `taks embed` writes each row's image path beside the matrix: the suspects are
    // named by file, not by row.
    if let Ok(text) = std::fs::read_to_string(path.with_file_name("ids.txt")) {
        let ids: Vec<String> = text.lines().map(String::from).collect();
        if ids.len() == data.ids.len() {
            data.ids = ids;
        }
    }
    Ok(data)
}

/// The audit data of a feature matrix held in memory: `values`, `cols` to a row, and a
/// label per row indexing `classes` (numbered 0 to the largest label where `None`), as
/// a `.npy` matrix with its labels is read; `source` names it. What Python's
/// `taks.audit` on arrays reads.
pub fn from_features(
    values: Vec<f32>,
    cols: usize,
    labels: Vec<u32>,
    classes: Option<Vec<String>>,
    source: &str,
) -> Result<AuditData> {
    if cols == 0 || values.len() != cols * labels.len() {
        return refuse(format!(
            "{source}: {} labels for {} values in rows of {cols}",
            labels.len(),
            values.len()
        ));
    }
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return refuse(format!(
            "{source}: row {}, column {}: {} is not a finite number",
            i / cols,
            i % cols,
            values[i]
        ));
    }
    let classes = classes.unwrap_or_else(|| {
        let count = labels.iter().max().map_or(0, |&m| m as usize + 1);
        (0..count).map(|c| c.to_string()).collect()
    });
    if let Some(&label) = labels.iter().find(|&&l| l as usize >= classes.len()) {
        return refuse(format!(
            "{source}: label {label} is out of range for {} classes",
            classes.len()
        ));
    }
    Ok(features_data(
        values,
        cols,
        labels,
        classes,
        Path::new(source),
    ))
}

/// The audit data of checked features: finite, a label per row, each within `classes`.
fn features_data(
    values: Vec<f32>,
    cols: usize,
    labels: Vec<u32>,
    classes: Vec<String>,
    source: &Path,
) -> AuditData {
    let prepared = input::prepare_features(values, cols, labels.clone(), classes.len());
    table_data(prepared, classes, labels, source)
}

/// Rows of numbers (`what`: a CSV table, a `.npy` matrix) are audited with the MLP, at
/// no image size.
fn table_flags(spec: &SourceSpec, path: &Path, what: &str) -> Result<()> {
    if let Some(model) = spec.model.filter(|&m| m != Architecture::Mlp) {
        return refuse(format!(
            "{what} is audited with the MLP; --model {} takes images",
            model.name()
        ));
    }
    if spec.image_size.is_some() {
        return refuse(format!(
            "--image-size is for image folders, and {} is a file",
            path.display()
        ));
    }
    Ok(())
}

/// The audit data of rows read from `path`: a sample's id is its 0-based row, its
/// label as given (the truth unknown).
fn table_data(
    prepared: Prepared,
    classes: Vec<String>,
    labels: Vec<u32>,
    path: &Path,
) -> AuditData {
    AuditData {
        prepared,
        architecture: Architecture::Mlp,
        ids: (0..labels.len()).map(|i| i.to_string()).collect(),
        classes,
        labels: NoisyLabels {
            true_labels: labels.clone(),
            noisy_labels: labels,
        },
        truth_known: false,
        skipped: Vec::new(),
        source: path.display().to_string(),
        network_choice: None,
        colour_note: None,
        backbone: None,
    }
}

impl ImageSource {
    /// The folder as the user named it.
    pub fn source(&self) -> &str {
        &self.examined.source
    }

    /// The label of every readable file, as far as the headers say.
    pub fn labels(&self) -> Vec<u32> {
        self.examined.labels()
    }

    /// The files left out so far, and why.
    pub fn skipped(&self) -> &[Skipped] {
        self.examined.skipped()
    }

    /// Choose the network (as the spec named it, else by its time budget on `device`,
    /// telling `say`), then decode every file at its input.
    pub async fn finish(
        self,
        settings: &AuditSettings,
        device: &Device,
        say: impl Fn(String),
    ) -> Result<AuditData> {
        let examined = self.examined;
        if let Some(note) = &examined.colour_note {
            say(note.clone());
        }
        let mut tell = |line: String| say(line);
        let network = examined
            .network(settings, self.budget, device, &mut tell)
            .await?;
        let source = examined.source.clone();
        let images = examined.decode(network, Some(&self.cache), &mut tell)?;
        Ok(AuditData {
            prepared: images.prepared,
            architecture: images.architecture,
            ids: images.ids,
            classes: images.classes,
            labels: NoisyLabels {
                true_labels: images.labels.clone(),
                noisy_labels: images.labels,
            },
            truth_known: false,
            skipped: images.skipped,
            source,
            network_choice: images.network_choice,
            colour_note: images.colour_note,
            backbone: None,
        })
    }
}

/// A built-in dataset's first `train_limit` samples, with `noise` injected.
fn read_builtin(kind: DatasetKind, spec: &SourceSpec) -> Result<AuditData> {
    if spec.image_size.is_some() {
        return refuse(format!(
            "--image-size is for image folders, not --dataset {}",
            kind.name()
        ));
    }
    let split = kind.load(spec.data_dir.as_deref())?;
    let train: Dataset = split
        .train
        .truncated(spec.train_limit.unwrap_or(usize::MAX));
    let noise = spec.noise.unwrap_or(NoiseKind::Clean);
    let rate = spec.noise_rate.unwrap_or(0.0);
    let labels = inject(&train.labels, train.classes, noise, rate, kind, spec.seed)?;
    let architecture = spec.model.unwrap_or(match kind.is_grey_28() {
        true => Architecture::Mlp,
        false => Architecture::Cnn,
    });
    let [channels, height, width] = train.shape;
    let (mean, std) = kind.channel_normalisation();
    let n = train.len();
    let classes = (0..train.classes).map(|c| c.to_string()).collect();
    Ok(AuditData {
        prepared: Prepared {
            dataset: Dataset {
                labels: labels.noisy_labels.clone(),
                ..train
            },
            input: Input::Image {
                channels,
                height,
                width,
            },
            normalisation: Normalisation { mean, std },
        },
        architecture,
        ids: (0..n).map(|i| i.to_string()).collect(),
        classes,
        truth_known: noise != NoiseKind::Clean,
        labels,
        skipped: Vec::new(),
        source: kind.name().to_string(),
        network_choice: None,
        colour_note: None,
        backbone: None,
    })
}
