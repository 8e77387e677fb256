//! `_taks.Selection`: the core's [`OnlineSelection`] behind a Python class. The Python
//! `taks.Selector` (`python/taks/_selector.py`) wraps it with k-ratios, the torch-friendly
//! state and the result type; this file converts arrays and releases the GIL while the
//! core works.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use taks_core::methods::{self, Method};
use taks_core::selection::Objective;
use taks_core::selection::online::{OnlineSelection, Scores, State, Step};
use taks_core::settings;

use crate::errors::to_py;
use crate::labels::class_indices;

#[pyclass(module = "taks._taks")]
pub struct Selection {
    inner: OnlineSelection,
    method: String,
}

/// The objective a method name selects by, as the command line's `--method`.
fn objective(method: &str, eta: f64) -> PyResult<Objective> {
    match method {
        "taks" => Ok(Objective::Perturbed { eta }),
        "naive" => Ok(Objective::Perturbed { eta: 0.0 }),
        "greedy" => Ok(Objective::Greedy),
        other => Err(PyValueError::new_err(format!(
            "method '{other}' is not one of 'taks', 'naive', 'greedy'"
        ))),
    }
}

/// k of `n` samples at `k_ratio`, as a TAkS run takes it (`--k-ratio`).
#[pyfunction]
pub fn k_of(n: usize, k_ratio: f64) -> usize {
    methods::epoch_size(Method::TAKS, n, k_ratio, 0.0)
}

/// eta at `eta_ratio` for `k` samples over `epochs`, as a TAkS run takes it (`--eta-ratio`).
#[pyfunction]
pub fn eta_of(k: usize, epochs: usize, eta_ratio: f64) -> f64 {
    settings::eta_of(k, epochs, eta_ratio)
}

#[pymethods]
impl Selection {
    #[new]
    #[pyo3(signature = (method, n, k, eta, seed, labels=None))]
    fn new(
        method: &str,
        n: usize,
        k: usize,
        eta: f64,
        seed: u64,
        labels: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<Self> {
        let labels = match labels {
            None => None,
            Some(array) => Some(class_indices(array.as_array().iter())?),
        };
        let inner =
            OnlineSelection::new(objective(method, eta)?, n, k, seed, labels).map_err(to_py)?;
        Ok(Selection {
            inner,
            method: method.to_string(),
        })
    }

    #[getter]
    fn n(&self) -> usize {
        self.inner.n()
    }

    #[getter]
    fn k(&self) -> usize {
        self.inner.k()
    }

    #[getter]
    fn epoch(&self) -> usize {
        self.inner.epoch()
    }

    #[getter]
    fn method(&self) -> &str {
        &self.method
    }

    /// eta of the perturbation (0 for Naive and Greedy).
    #[getter]
    fn eta(&self) -> f64 {
        match self.inner.objective() {
            Objective::Perturbed { eta } => eta,
            Objective::Greedy => 0.0,
        }
    }

    /// The set the next epoch trains on, ascending.
    fn current<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let indices: Vec<i64> = self.inner.current().iter().map(|&i| i as i64).collect();
        indices.into_pyarray(py)
    }

    /// L_t of every sample.
    fn cumulative<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        self.inner.cumulative().to_vec().into_pyarray(py)
    }

    /// Score an epoch by every sample's noise-risk `[n]` (float32, C-contiguous: read
    /// in place) and choose the next set.
    fn step_risks<'py>(
        &mut self,
        py: Python<'py>,
        risks: PyReadonlyArray1<'py, f32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let values = risks
            .as_slice()
            .map_err(|_| PyValueError::new_err("risks must be C-contiguous"))?;
        let inner = &mut self.inner;
        let step = py
            .detach(|| inner.step(Scores::Risks(values)))
            .map_err(to_py)?;
        step_dict(py, &step)
    }

    /// Score an epoch by every sample's logits `[n, classes]` against the labels the
    /// selection was built with, and choose the next set.
    fn step_logits<'py>(
        &mut self,
        py: Python<'py>,
        logits: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let classes = logits.shape()[1];
        let values = logits
            .as_slice()
            .map_err(|_| PyValueError::new_err("logits must be C-contiguous"))?;
        let inner = &mut self.inner;
        let step = py
            .detach(|| inner.step(Scores::Logits { values, classes }))
            .map_err(to_py)?;
        step_dict(py, &step)
    }

    /// (epoch, cumulative risks, current set, total selection risk) as plain lists.
    fn state(&self) -> (usize, Vec<f32>, Vec<u32>, f64) {
        let s = self.inner.state();
        (s.epoch, s.cumulative, s.current, s.total_selection_risk)
    }

    fn restore(
        &mut self,
        epoch: usize,
        cumulative: Vec<f32>,
        current: Vec<u32>,
        total_selection_risk: f64,
    ) -> PyResult<()> {
        self.inner
            .restore(State {
                epoch,
                cumulative,
                current,
                total_selection_risk,
            })
            .map_err(to_py)
    }
}

/// A round's report as the columns `metrics.csv` names.
fn step_dict<'py>(py: Python<'py>, step: &Step) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("epoch", step.epoch)?;
    d.set_item("selection_risk", step.selection_risk)?;
    d.set_item("total_selection_risk", step.total_selection_risk)?;
    d.set_item("total_hindsight_risk", step.total_hindsight_risk)?;
    d.set_item("regret", step.regret.regret)?;
    d.set_item("regret_bound", step.regret.bound)?;
    d.set_item("paper_bound", step.regret.paper_bound)?;
    Ok(d)
}
