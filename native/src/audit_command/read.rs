//! Reading what `taks audit` audits: a folder of class sub-folders of images, a CSV
//! table, a `.npy` feature matrix with its labels, or a built-in dataset with injected
//! noise, into one [`AuditData`].

use std::path::Path;

use anyhow::{Result, bail};
use burn::tensor::Device;
use taks_core::audit::AuditSettings;
use taks_core::audit::images::Examined;
use taks_core::audit::input::{self, Input, Normalisation, Prepared};
use taks_core::audit::network::Choice;
use taks_core::data::cache::Cache;
use taks_core::data::{Dataset, DatasetKind};
use taks_core::formats::image_folder::{self, Skipped};
use taks_core::formats::{csv_table, labels as label_file, npy};
use taks_core::nn::Architecture;
use taks_core::noise::{NoiseKind, NoisyLabels, inject};

use super::AuditArgs;

/// The audited data, ready for the networks.
pub struct AuditData {
    pub prepared: Prepared,
    pub architecture: Architecture,
    /// Per sample: the image path relative to DATA, or the data row.
    pub ids: Vec<String>,
    pub classes: Vec<String>,
    pub labels: NoisyLabels,
    /// Whether `labels.true_labels` is the truth (injected noise) or a copy of the given.
    pub truth_known: bool,
    pub skipped: Vec<Skipped>,
    pub source: String,
    /// How the network was chosen by the time budget (image folders without --model).
    pub network_choice: Option<Choice>,
    /// Why colour images are audited in grey, when they are.
    pub colour_note: Option<String>,
    /// The pretrained backbone whose features these are (`--init`).
    pub backbone: Option<super::pretrained::Backbone>,
}

/// A short name for the default output folder: DATA's file or folder name.
fn short_name(source: &str) -> String {
    Path::new(source)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "data".into())
}

/// DATA as read so far: ready, or an image folder scanned and waiting for its network,
/// which may need the device ([`ImageSource::finish`]).
pub enum Source {
    Ready(Box<AuditData>),
    Images(Box<ImageSource>),
}

impl Source {
    /// A short name for the default output folder.
    pub fn name(&self) -> String {
        match self {
            Source::Ready(data) => short_name(&data.source),
            Source::Images(images) => short_name(images.source()),
        }
    }
}

/// An image folder whose headers are read and checked ([`Examined`]).
pub struct ImageSource {
    examined: Examined,
}

/// Read and check DATA (or the built-in set) as far as can be done without a device.
pub fn read_source(args: &AuditArgs) -> Result<Source> {
    let path = args.data.as_ref();
    if args.dataset.is_none() && path.is_some_and(|p| p.is_dir()) {
        return Ok(Source::Images(Box::new(scan_images(
            path.expect("checked"),
            args,
        )?)));
    }
    read_data(args).map(|d| Source::Ready(Box::new(d)))
}

/// Read DATA (a file, or the built-in set) into [`AuditData`].
fn read_data(args: &AuditArgs) -> Result<AuditData> {
    if let Some(kind) = args.dataset {
        if args.labels.is_some() {
            bail!("--labels is for a .npy feature matrix, not --dataset");
        }
        return read_builtin(kind, args);
    }
    let path = args
        .data
        .as_ref()
        .expect("clap requires DATA without --dataset");
    let is_npy = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    if args.labels.is_some() && !is_npy {
        bail!(
            "--labels is for a .npy feature matrix; {} carries its own labels",
            path.display()
        );
    }
    if is_npy && path.is_file() {
        read_npy(path, args)
    } else if path.is_file() {
        table_flags(args, path, "a CSV table")?;
        let table = csv_table::read(path, &args.label_column)?;
        let prepared = input::prepare_table(&table);
        Ok(table_data(prepared, table.classes, table.labels, path))
    } else {
        bail!("{}: no such file or folder", path.display());
    }
}

/// A `.npy` matrix [n, d] and its labels (a `.npy` of integers, or names one a line).
fn read_npy(path: &Path, args: &AuditArgs) -> Result<AuditData> {
    let Some(labels_path) = &args.labels else {
        bail!(
            "{}: a .npy matrix needs --labels LABELS (a .npy of integers, or a text file of class names, one a line)",
            path.display()
        );
    };
    table_flags(args, path, "a .npy feature matrix")?;
    if !labels_path.is_file() {
        bail!("{}: no such file", labels_path.display());
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
        bail!(
            "{}: {} labels for the {} rows of {}",
            labels_path.display(),
            labels.len(),
            matrix.rows,
            path.display()
        );
    }
    let prepared =
        input::prepare_features(matrix.values, matrix.cols, labels.clone(), classes.len());
    let mut data = table_data(prepared, classes, labels, path);
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

/// Rows of numbers (`what`: a CSV table, a `.npy` matrix) are audited with the MLP, at
/// no image size.
fn table_flags(args: &AuditArgs, path: &Path, what: &str) -> Result<()> {
    if let Some(model) = args.model.filter(|&m| m != Architecture::Mlp) {
        bail!(
            "{what} is audited with the MLP; --model {} takes images",
            model.name()
        );
    }
    if args.image_size.is_some() {
        bail!(
            "--image-size is for image folders, and {} is a file",
            path.display()
        );
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

fn scan_images(dir: &Path, args: &AuditArgs) -> Result<ImageSource> {
    let scan = image_folder::scan(dir)?;
    let source = dir.display().to_string();
    let examined = Examined::new(scan, &source, args.model, args.image_size)?;
    Ok(ImageSource { examined })
}

impl ImageSource {
    /// DATA as the user named it.
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

    /// Choose the network (by `--model`/`--image-size`, else by the time budget on
    /// `device`, telling `say`), then decode every file at its input.
    pub fn finish(
        self,
        args: &AuditArgs,
        settings: &AuditSettings,
        device: &Device,
        say: impl Fn(String),
    ) -> Result<AuditData> {
        let examined = self.examined;
        if let Some(note) = &examined.colour_note {
            say(note.clone());
        }
        let mut tell = |line: String| say(line);
        let network =
            pollster::block_on(examined.network(settings, args.budget, device, &mut tell))?;
        let cache = Cache {
            dir: args.cache_dir.clone().unwrap_or_else(Cache::default_dir),
            budget_bytes: args.memory_budget.saturating_mul(1_000_000),
        };
        let source = examined.source.clone();
        let images = examined.decode(network, Some(&cache), &mut tell)?;
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

fn read_builtin(kind: DatasetKind, args: &AuditArgs) -> Result<AuditData> {
    if args.image_size.is_some() {
        bail!(
            "--image-size is for image folders, not --dataset {}",
            kind.name()
        );
    }
    let split = kind.load(args.data_dir.as_deref())?;
    let train: Dataset = split
        .train
        .truncated(args.train_limit.unwrap_or(usize::MAX));
    let noise = args.noise.unwrap_or(NoiseKind::Clean);
    let rate = args.noise_rate.unwrap_or(0.0);
    let labels = inject(&train.labels, train.classes, noise, rate, kind, args.seed)?;
    let architecture = args.model.unwrap_or(match kind.is_grey_28() {
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
