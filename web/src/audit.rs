//! The label audit of a person's own data, in the browser: `taks audit` without a
//! server.
//!
//! The page hands over what the person picked, file by file (a folder of class
//! sub-folders of images, as `taks audit DIR` reads it) or one CSV table, and every
//! step after that is the core's, as the CLI runs it: the same folder rules
//! ([`scan_memory`]), the same network choice and decoding ([`Examined`]), the same
//! audit ([`audit::run`]), the same `suspects.csv` ([`suspects`]) and the same model
//! files ([`taks_core::audit::model_card`]). Nothing is sent anywhere: the bytes stay
//! in this worker's memory, and the results go back to the page as JSON, typed arrays
//! and file contents for it to offer as downloads.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use js_sys::{Function, Promise, Uint8Array};
use serde::{Deserialize, Serialize};
use taks_core::audit::images::Examined;
use taks_core::audit::input::{self, Prepared};
use taks_core::audit::model_card::{ModelCard, pytorch_weights};
use taks_core::audit::suspects::{self, Decision};
use taks_core::audit::{self, AuditSettings, SampleAudit, Stage};
use taks_core::formats::csv_table;
use taks_core::formats::image_folder::{Skipped, scan_memory};
use taks_core::metrics::EpochMetrics;
use taks_core::nn::{Architecture, Classifier};
use taks_core::noise::NoisyLabels;
use taks_core::train::Next;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_time::Instant;

/// What the page may set; the rest is `taks audit`'s defaults.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditOptions {
    /// A network's `--model` name ("mlp", "cnn", "resnet18", ...); default: chosen by
    /// `budget` on this device.
    model: Option<String>,
    /// Seconds the audit may take, for choosing the network (as `--budget`).
    #[serde(default = "default_budget")]
    budget: f64,
    /// The CSV column holding the labels (as `--label-column`).
    #[serde(default = "default_label_column")]
    label_column: String,
    #[serde(default)]
    seed: u64,
    epochs: Option<usize>,
    probe_epochs: Option<usize>,
}

impl AuditOptions {
    /// The options no data could make sense of refused, and the network named, if any.
    fn check(&self) -> Result<Option<Architecture>, JsValue> {
        if !(self.budget > 0.0 && self.budget.is_finite()) {
            return Err(js_error(format!(
                "the budget {} must be a positive number of seconds",
                self.budget
            )));
        }
        if self.epochs == Some(0) || self.probe_epochs == Some(0) {
            return Err(js_error("the TAkS and probe epochs must be at least 1"));
        }
        let Some(name) = self.model.as_deref().filter(|n| !n.is_empty()) else {
            return Ok(None);
        };
        let found = Architecture::ALL.into_iter().find(|a| a.name() == name);
        found.map(Some).ok_or_else(|| {
            let names: Vec<&str> = Architecture::ALL.iter().map(|a| a.name()).collect();
            js_error(format!("no network named '{name}' ({})", names.join(", ")))
        })
    }

    /// `taks audit`'s settings for `n` samples on `architecture`, with the page's epochs
    /// and seed.
    fn settings(&self, architecture: Architecture, n: usize) -> AuditSettings {
        let mut settings = AuditSettings::new(architecture).for_samples(n);
        settings.epochs = self.epochs.unwrap_or(settings.epochs);
        settings.probe_epochs = self.probe_epochs.unwrap_or(settings.probe_epochs);
        settings.seed = self.seed;
        settings
    }
}

fn default_budget() -> f64 {
    300.0
}

fn default_label_column() -> String {
    "label".into()
}

/// The audit's overview, for the page's status and summary.
#[derive(Serialize)]
struct Summary {
    source: String,
    n: usize,
    classes: Vec<String>,
    network: String,
    /// Why this network (the budget's reasoning), when it was chosen by time.
    network_reason: Option<String>,
    colour_note: Option<String>,
    skipped: Vec<Skipped>,
    estimated_noise_rate: f64,
    k: usize,
    k_ratio: f64,
    label_issues: usize,
    seconds: f64,
}

/// One row of the page's table, most suspect first.
#[derive(Serialize)]
struct Row<'a> {
    index: usize,
    id: &'a str,
    given: &'a str,
    suggested: &'a str,
    confidence: f32,
    quality: f64,
    issue: bool,
}

/// A finished audit: everything the downloads and the table need.
struct Done {
    ids: Vec<String>,
    classes: Vec<String>,
    samples: Vec<SampleAudit>,
    network: Classifier,
    card: ModelCard,
    /// [C, H, W] bytes of every image sample, in data order (empty for a table).
    pixels: Vec<u8>,
    shape: [usize; 3],
}

/// The data, read and prepared for the networks.
struct Ready {
    prepared: Prepared,
    architecture: Architecture,
    network_reason: Option<String>,
    ids: Vec<String>,
    classes: Vec<String>,
    labels: Vec<u32>,
    skipped: Vec<Skipped>,
    colour_note: Option<String>,
    source: String,
}

/// One audit: files in, then [`AuditJob::run`], then the results.
#[wasm_bindgen]
pub struct AuditJob {
    files: Vec<(String, Vec<u8>)>,
    table: Option<(String, Vec<u8>)>,
    done: Rc<RefCell<Option<Done>>>,
}

impl Default for AuditJob {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl AuditJob {
    #[wasm_bindgen(constructor)]
    pub fn new() -> AuditJob {
        crate::panic::install_hook();
        AuditJob {
            files: Vec::new(),
            table: None,
            done: Rc::new(RefCell::new(None)),
        }
    }

    /// One file of the chosen folder: `path` relative to it (`class/.../name`).
    pub fn add_file(&mut self, path: String, bytes: Vec<u8>) {
        self.files.push((path, bytes));
    }

    /// A CSV table to audit instead of a folder (`name` only names it in messages).
    pub fn set_table(&mut self, name: String, bytes: Vec<u8>) {
        self.table = Some((name, bytes));
    }

    /// Run the audit with the page's JSON options; `progress` is called with a JSON
    /// object per step (`{"phase": "reading" | "network" | "probe" | "selection", ...}`).
    /// Resolves to the summary as JSON. Needs a backend (`init_webgpu`/`init_cpu`).
    pub fn run(&mut self, options_json: &str, progress: Function) -> Promise {
        let files = std::mem::take(&mut self.files);
        let table = self.table.take();
        let done = self.done.clone();
        let options: Result<AuditOptions, _> = serde_json::from_str(options_json);
        future_to_promise(async move {
            let options = options.map_err(|e| js_error(format!("bad audit settings: {e}")))?;
            let model = options.check()?;
            let device = crate::backend::device()?;
            let started = Instant::now();
            let tell = |value: serde_json::Value| {
                let _ = progress.call1(&JsValue::NULL, &JsValue::from(value.to_string()));
            };
            tell(serde_json::json!({ "phase": "reading" }));
            let ready = match table {
                Some((name, bytes)) => read_table(&name, &bytes, &options, model)?,
                None => read_folder(files, &options, model, &device, &tell).await?,
            };
            let n = ready.ids.len();
            let settings = options.settings(ready.architecture, n);
            let outcome = audit::run(
                ready.prepared.dataset.clone(),
                NoisyLabels {
                    true_labels: ready.labels.clone(),
                    noisy_labels: ready.labels.clone(),
                },
                &settings,
                &device,
                |stage, m| {
                    tell(progress_json(stage, m, &settings));
                    Next::Go
                },
            )
            .await
            .map_err(js_error)?;
            let summary = Summary {
                source: ready.source.clone(),
                n,
                classes: ready.classes.clone(),
                network: ready.prepared.input.describe(ready.architecture),
                network_reason: ready.network_reason.clone(),
                colour_note: ready.colour_note.clone(),
                skipped: ready.skipped.clone(),
                estimated_noise_rate: outcome.estimate.rate,
                k: outcome.k,
                k_ratio: outcome.k_ratio,
                label_issues: outcome.samples.iter().filter(|s| s.is_label_issue).count(),
                seconds: started.elapsed().as_secs_f64(),
            };
            *done.borrow_mut() = Some(Done::of(ready, outcome));
            serde_json::to_string(&summary)
                .map(JsValue::from)
                .map_err(js_error)
        })
    }

    /// Every sample as a table row, most suspect first (JSON array).
    pub fn rows_json(&self) -> Result<String, JsError> {
        self.with_done(|d| {
            let rows: Vec<Row> = suspects::suspect_order(&d.samples)
                .into_iter()
                .map(|i| {
                    let s = &d.samples[i];
                    Row {
                        index: i,
                        id: &d.ids[i],
                        given: &d.classes[s.given_label as usize],
                        suggested: &d.classes[s.suggested_label as usize],
                        confidence: s.suggested_confidence,
                        quality: s.label_quality,
                        issue: s.is_label_issue,
                    }
                })
                .collect();
            serde_json::to_string(&rows).unwrap_or_default()
        })
    }

    /// The image samples as the network saw them, [C, H, W] bytes each, in data order
    /// (empty for a table), for thumbnails.
    pub fn pixels(&self) -> Result<Uint8Array, JsError> {
        self.with_done(|d| Uint8Array::from(&d.pixels[..]))
    }

    /// [C, H, W] of one sample.
    pub fn shape(&self) -> Result<Vec<u32>, JsError> {
        self.with_done(|d| d.shape.iter().map(|&s| s as u32).collect())
    }

    /// `suspects.csv` with `taks audit`'s columns plus `decision`; `decisions` holds one
    /// code per sample in data order (1 accept, 2 keep, 0 undecided).
    pub fn suspects_csv(&self, decisions: Vec<u8>) -> Result<String, JsError> {
        self.with_done(|d| {
            let decisions = decisions_of(&decisions, d.samples.len());
            suspects::suspects_csv(&d.ids, &d.classes, &d.samples, Some(&decisions))
        })
    }

    /// The corrected labels, `path,label` in data order: accepted suggestions applied.
    pub fn labels_csv(&self, decisions: Vec<u8>) -> Result<String, JsError> {
        self.with_done(|d| {
            let decisions = decisions_of(&decisions, d.samples.len());
            suspects::corrected_labels_csv(&d.ids, &d.classes, &d.samples, &decisions)
        })
    }

    /// `model.json`, as `taks audit` writes it.
    pub fn model_card(&self) -> Result<String, JsError> {
        self.with_done(|d| serde_json::to_string_pretty(&d.card).unwrap_or_default())
    }

    /// Resolves to `model.safetensors` (a Uint8Array), as `taks audit` writes it.
    pub fn model_weights(&self) -> Promise {
        let done = self.done.clone();
        future_to_promise(async move {
            let (network, architecture) = match done.borrow().as_ref() {
                Some(d) => (d.network.clone(), d.card.architecture),
                None => return Err(js_error("no finished audit yet")),
            };
            let bytes = pytorch_weights(&network, architecture)
                .await
                .map_err(js_error)?;
            Ok(Uint8Array::from(&bytes[..]).into())
        })
    }
}

impl AuditJob {
    fn with_done<T>(&self, f: impl FnOnce(&Done) -> T) -> Result<T, JsError> {
        match self.done.borrow().as_ref() {
            Some(d) => Ok(f(d)),
            None => Err(JsError::new("no finished audit yet")),
        }
    }
}

fn decisions_of(codes: &[u8], n: usize) -> Vec<Decision> {
    (0..n)
        .map(|i| Decision::from_code(codes.get(i).copied().unwrap_or(0)))
        .collect()
}

/// One epoch of the audit as the page's progress message.
fn progress_json(stage: Stage, m: &EpochMetrics, settings: &AuditSettings) -> serde_json::Value {
    let (phase, fold) = match stage {
        Stage::Probe { fold, .. } => ("probe", Some(fold + 1)),
        Stage::Selection => ("selection", None),
    };
    serde_json::json!({
        "phase": phase, "fold": fold, "folds": settings.probe_folds,
        "selection_epochs": settings.epochs,
        "epoch": m.epoch,
        "epochs": if fold.is_some() { settings.probe_epochs } else { settings.epochs },
        "seconds": m.epoch_seconds, "loss": m.train_loss,
        "agreement": m.test_accuracy,
    })
}

impl Done {
    /// What the page may ask for once `outcome` is in: the model, the rows, the samples'
    /// bytes for their thumbnails.
    fn of(ready: Ready, outcome: audit::AuditOutcome) -> Self {
        let n = ready.ids.len();
        let shape = ready.prepared.dataset.shape;
        let samples = &ready.prepared.dataset.samples;
        let pixels: Vec<u8> = (0..n)
            .flat_map(|i| samples.bytes_of(i).unwrap_or_default())
            .collect();
        Done {
            card: ModelCard::new(
                ready.architecture,
                ready.classes.clone(),
                ready.prepared.input.clone(),
                ready.prepared.normalisation.clone(),
            ),
            ids: ready.ids,
            classes: ready.classes,
            samples: outcome.samples,
            network: outcome.network,
            pixels,
            shape,
        }
    }
}

fn js_error(message: impl std::fmt::Display) -> JsValue {
    JsError::new(&message.to_string()).into()
}

/// A CSV table: numeric feature columns and a label column, audited with the MLP.
fn read_table(
    name: &str,
    bytes: &[u8],
    options: &AuditOptions,
    model: Option<Architecture>,
) -> Result<Ready, JsValue> {
    if let Some(model) = model.filter(|&m| m != Architecture::Mlp) {
        return Err(js_error(format!(
            "a CSV table is audited with the MLP; {} takes images",
            model.name()
        )));
    }
    let table =
        csv_table::parse(bytes, &options.label_column, Path::new(name)).map_err(js_error)?;
    audit::enough(name, &table.labels, &[]).map_err(js_error)?;
    let prepared = input::prepare_table(&table);
    Ok(Ready {
        prepared,
        architecture: Architecture::Mlp,
        network_reason: None,
        ids: (0..table.labels.len()).map(|i| i.to_string()).collect(),
        classes: table.classes.clone(),
        labels: table.labels.clone(),
        skipped: Vec::new(),
        colour_note: None,
        source: name.to_string(),
    })
}

/// A folder of class sub-folders, as `taks audit DIR` reads it.
async fn read_folder(
    files: Vec<(String, Vec<u8>)>,
    options: &AuditOptions,
    model: Option<Architecture>,
    device: &burn::tensor::Device,
    tell: &impl Fn(serde_json::Value),
) -> Result<Ready, JsValue> {
    const SOURCE: &str = "the chosen folder";
    if files.is_empty() {
        return Err(js_error(
            "choose a folder of class folders, or a CSV file, first",
        ));
    }
    let scan = scan_memory(files).map_err(js_error)?;
    let examined = Examined::new(scan, SOURCE, model, None).map_err(js_error)?;
    audit::enough(SOURCE, &examined.labels(), examined.skipped()).map_err(js_error)?;
    tell(serde_json::json!({ "phase": "network" }));
    // Priced with the epochs the audit will run, as `taks audit` prices them.
    let timing = options.settings(Architecture::Mlp, examined.labels().len());
    let mut say = |line: String| tell(serde_json::json!({ "phase": "network", "note": line }));
    let network = examined
        .network(&timing, options.budget, device, &mut say)
        .await
        .map_err(js_error)?;
    let reason = network.2.as_ref().map(|c| c.reason.clone());
    let images = examined.decode(network, None, &mut say).map_err(js_error)?;
    audit::enough(SOURCE, &images.labels, &images.skipped).map_err(js_error)?;
    Ok(Ready {
        prepared: images.prepared,
        architecture: images.architecture,
        network_reason: reason,
        ids: images.ids,
        classes: images.classes,
        labels: images.labels,
        skipped: images.skipped,
        colour_note: images.colour_note,
        source: SOURCE.into(),
    })
}
