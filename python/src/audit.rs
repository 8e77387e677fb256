//! `_taks.audit_features` and `_taks.audit_path`: the core's label audit on a feature
//! matrix held in numpy, or on data named by a path (a folder of images, a CSV table, a
//! `.npy` matrix) read exactly as `taks audit` reads it: both ask the core the same way
//! ([`taks_core::audit::request`]). The audit
//! runs with the GIL released; each epoch's end takes it back to report progress and to
//! honour Ctrl-C (the audit stops there and `KeyboardInterrupt` is raised).

use std::path::PathBuf;

use burn::tensor::Device;
use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use taks_core::audit::request::{AuditRequest, Audited, ReadAudit};
use taks_core::audit::source::{SourceSpec, from_features};
use taks_core::audit::suspects::suspects_csv;
use taks_core::audit::{self, AuditChoices, Stage};
use taks_core::data::cache::Cache;
use taks_core::metrics::EpochMetrics;
use taks_core::nn::Architecture;
use taks_core::precision::Precision;
use taks_core::train::Next;

use crate::errors::to_py;
use crate::labels::class_indices;

/// The settings a caller may change from the audit's defaults (`None`: the default).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct Options {
    epochs: Option<usize>,
    probe_epochs: Option<usize>,
    probe_folds: Option<usize>,
    k_ratio: Option<f64>,
    eta_ratio: Option<f64>,
    seed: u64,
    batch_size: usize,
    lr: f64,
    device: String,
}

impl Options {
    /// The choices over the audit's defaults (checked by the core as it reads).
    fn choices(&self) -> AuditChoices {
        AuditChoices {
            epochs: self.epochs,
            probe_epochs: self.probe_epochs,
            probe_folds: self.probe_folds,
            k_ratio: self.k_ratio,
            eta_ratio: self.eta_ratio,
            seed: self.seed,
            batch_size: self.batch_size,
            learning_rate: self.lr,
            precision: Precision::F32,
        }
    }

    /// The device named: "cpu" (burn's flex backend) or "gpu" (wgpu's best adapter).
    fn device(&self) -> PyResult<(Device, String)> {
        match self.device.as_str() {
            "cpu" => Ok((Device::flex(), "CPU (burn flex backend)".into())),
            "gpu" => {
                let (device, info) = taks_core::gpu::direct::start()
                    .map_err(|e| PyRuntimeError::new_err(format!("device 'gpu': {e}")))?;
                Ok((device, format!("GPU '{}' ({:?})", info.name, info.backend)))
            }
            other => Err(PyValueError::new_err(format!(
                "device '{other}' is not 'cpu' or 'gpu'"
            ))),
        }
    }
}

/// Audit the rows of `features` `[n, d]` (float32, copied once into the audit's own
/// store) labelled `labels` `[n]`, naming them by `classes` where given.
#[pyfunction]
#[pyo3(signature = (features, labels, classes, options, progress=None))]
pub fn audit_features<'py>(
    py: Python<'py>,
    features: PyReadonlyArray2<'py, f32>,
    labels: PyReadonlyArray1<'py, i64>,
    classes: Option<Vec<String>>,
    options: Options,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let [rows, cols] = [features.shape()[0], features.shape()[1]];
    let labels = labels.as_array();
    if labels.len() != rows {
        return Err(PyValueError::new_err(format!(
            "{} labels for the {rows} rows of features",
            labels.len()
        )));
    }
    let labels = class_indices(labels.iter())?;
    let values = features.as_array().iter().copied().collect::<Vec<f32>>();
    let data = from_features(values, cols, labels, classes, "features").map_err(to_py)?;
    let read = ReadAudit::of_data(data, options.choices(), keyword).map_err(to_py)?;
    run(py, read, &options, progress)
}

/// Audit the data at `path` as `taks audit PATH` does: a folder of class sub-folders
/// of images, a CSV table (labels in `label_column`), or a `.npy` matrix with `labels`.
#[pyfunction]
#[pyo3(signature = (path, labels, label_column, model, image_size, budget, cache_dir, options, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn audit_path<'py>(
    py: Python<'py>,
    path: PathBuf,
    labels: Option<PathBuf>,
    label_column: String,
    model: Option<String>,
    image_size: Option<(u32, u32)>,
    budget: f64,
    cache_dir: Option<PathBuf>,
    options: Options,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let model = match model {
        None => None,
        Some(name) => Some(
            Architecture::ALL
                .into_iter()
                .find(|a| a.name() == name)
                .ok_or_else(|| {
                    let names: Vec<&str> = Architecture::ALL.iter().map(|a| a.name()).collect();
                    PyValueError::new_err(format!(
                        "model '{name}' is not one of {}",
                        names.join(", ")
                    ))
                })?,
        ),
    };
    let source = SourceSpec {
        data: Some(path),
        dataset: None,
        labels,
        label_column,
        model,
        image_size,
        data_dir: None,
        train_limit: None,
        noise: None,
        noise_rate: None,
        seed: options.seed,
        budget,
        cache: Cache {
            dir: cache_dir.unwrap_or_else(Cache::default_dir),
            ..Cache::with_defaults()
        },
    };
    let request = AuditRequest {
        source,
        choices: options.choices(),
    };
    let read = py.detach(|| request.read(keyword)).map_err(to_py)?;
    run(py, read, &options, progress)
}

/// A setting as Python spells it: its keyword.
fn keyword(setting: &'static str) -> String {
    setting.to_string()
}

/// One epoch of the audit, as the result's history and the progress callback see it.
fn epoch_dict<'py>(
    py: Python<'py>,
    stage: Stage,
    m: &EpochMetrics,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (name, fold) = match stage {
        Stage::Probe { fold, .. } => ("probe", Some(fold)),
        Stage::Selection => ("selection", None),
    };
    d.set_item("stage", name)?;
    d.set_item("fold", fold)?;
    d.set_item("epoch", m.epoch)?;
    d.set_item("train_loss", m.train_loss)?;
    d.set_item("agreement", m.test_accuracy)?;
    d.set_item("selected", m.selected)?;
    d.set_item("seconds", m.epoch_seconds)?;
    d.set_item("regret", m.regret)?;
    d.set_item("regret_bound", m.regret_bound)?;
    Ok(d)
}

/// Run the audit `read` with the GIL released, and give its result as a dict.
fn run<'py>(
    py: Python<'py>,
    read: ReadAudit,
    options: &Options,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (device, description) = options.device()?;
    let history = PyList::empty(py).unbind();
    let mut interrupted: Option<PyErr> = None;
    let audited = py.detach(|| {
        pollster::block_on(read.run(
            &device,
            &description,
            None,
            |_| {},
            |stage, m| {
                Python::attach(|py| {
                    let told = epoch_dict(py, stage, m).and_then(|row| {
                        history.bind(py).append(&row)?;
                        match &progress {
                            Some(callback) => callback.call1(py, (row,)).map(|_| ()),
                            None => Ok(()),
                        }
                    });
                    match told.and_then(|()| py.check_signals()) {
                        Ok(()) => Next::Go,
                        Err(error) => {
                            interrupted = Some(error);
                            Next::Stop
                        }
                    }
                })
            },
        ))
    });
    if let Some(error) = interrupted {
        return Err(error);
    }
    let audited = audited.map_err(to_py)?;
    result(py, &audited, history.into_bound(py), &description)
}

/// The audit's result: per-sample columns in data order, the estimate, k, the settings
/// and the history, and the `suspects.csv` text `taks audit` writes for the same audit.
fn result<'py>(
    py: Python<'py>,
    audited: &Audited,
    history: Bound<'py, PyList>,
    device: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let Audited {
        data,
        settings,
        outcome,
        ..
    } = audited;
    let samples = &outcome.samples;
    let column =
        |f: &dyn Fn(&audit::SampleAudit) -> f64| -> Vec<f64> { samples.iter().map(f).collect() };
    let d = PyDict::new(py);
    d.set_item("ids", data.ids.clone())?;
    d.set_item("classes", data.classes.clone())?;
    let labels = |f: &dyn Fn(&audit::SampleAudit) -> u32| -> Vec<i64> {
        samples.iter().map(|s| f(s) as i64).collect()
    };
    d.set_item("given_label", labels(&|s| s.given_label).into_pyarray(py))?;
    d.set_item(
        "suggested_label",
        labels(&|s| s.suggested_label).into_pyarray(py),
    )?;
    let confidence: Vec<f32> = samples.iter().map(|s| s.suggested_confidence).collect();
    d.set_item("suggested_confidence", confidence.into_pyarray(py))?;
    d.set_item(
        "label_quality",
        column(&|s| s.label_quality).into_pyarray(py),
    )?;
    let issues: Vec<bool> = samples.iter().map(|s| s.is_label_issue).collect();
    d.set_item("is_label_issue", issues.into_pyarray(py))?;
    let risk: Vec<f32> = samples.iter().map(|s| s.cumulative_risk).collect();
    d.set_item("cumulative_risk", risk.into_pyarray(py))?;
    d.set_item(
        "selected_fraction",
        column(&|s| s.selected_fraction).into_pyarray(py),
    )?;
    d.set_item("estimated_noise_rate", outcome.estimate.rate)?;
    d.set_item("per_class_noise_rate", outcome.estimate.per_class.clone())?;
    d.set_item("k", outcome.k)?;
    d.set_item("k_ratio", outcome.k_ratio)?;
    d.set_item("epochs", settings.epochs)?;
    d.set_item("probe_epochs", settings.probe_epochs)?;
    d.set_item("probe_folds", settings.probe_folds)?;
    d.set_item("eta_ratio", settings.eta_ratio)?;
    d.set_item("model", data.architecture.name())?;
    d.set_item("source", data.source.clone())?;
    d.set_item("device", device)?;
    let skipped: Vec<(String, String)> = data
        .skipped
        .iter()
        .map(|s| (s.id.clone(), s.reason.to_string()))
        .collect();
    d.set_item("skipped", skipped)?;
    d.set_item("history", history)?;
    // What `summary.json` holds for the same audit, as its JSON text.
    let summary = serde_json::to_string(&audited.summary(device))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    d.set_item("summary_json", summary)?;
    d.set_item(
        "suspects_csv",
        suspects_csv(&data.ids, &data.classes, samples, None),
    )?;
    Ok(d)
}
