//! One training run (TAkS or a baseline) as a JavaScript object.
//!
//! The page's settings arrive as JSON and become a core `TrainConfig` on the bundled
//! MNIST digits, starting from the paper's values. Every epoch is one
//! `Trainer::run_epoch`, returned as a promise of the core's `EpochMetrics` in JSON; what the
//! page draws beyond that (the selected set, the cumulative noise-risk, one sample's
//! history) comes from the core's selection [`Trail`], recorded after every step. Side
//! by side means two `Run`s on the shared device.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::str::FromStr;

use js_sys::{Float32Array, Object, Promise, Reflect, Uint8Array};
use serde::Deserialize;
use taks_core::data::DatasetKind;
use taks_core::methods::Method;
use taks_core::noise::NoiseKind;
use taks_core::selection::trail::{Reading, Trail};
use taks_core::selection::{Engine, Objective};
use taks_core::settings::paper::tuned_ratios;
use taks_core::settings::{Choices, TrainConfig};
use taks_core::train::{After, Next, Trainer};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// The settings the page may change; everything else is the paper's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunOptions {
    method: String,
    noise: String,
    noise_rate: f64,
    epochs: usize,
    /// Default: the paper's tuned value for this noise.
    k_ratio: Option<f64>,
    /// Default: the paper's tuned value for this noise.
    eta_ratio: Option<f64>,
    /// Train on the first this-many digits only (default: all 8,000).
    train_limit: Option<usize>,
    #[serde(default)]
    seed: u64,
    /// How many of the first training digits the page shows (their pixels are kept).
    #[serde(default)]
    grid: usize,
}

fn js_error(message: impl std::fmt::Display) -> JsValue {
    JsError::new(&message.to_string()).into()
}

/// The paper's `[k_ratio, eta_ratio]` for the bundled digits under this noise.
#[wasm_bindgen]
pub fn paper_ratios(noise: &str, noise_rate: f64) -> Result<Vec<f64>, JsError> {
    let noise = NoiseKind::from_str(noise).map_err(|e| JsError::new(&e.to_string()))?;
    let (k_ratio, eta_ratio) = tuned_ratios(DatasetKind::MnistDigits, noise, noise_rate);
    Ok(vec![k_ratio, eta_ratio])
}

/// A run in progress. The trainer sits in an `Option` so that an epoch's future can own
/// it while the promise is pending; a second call meanwhile is refused, not raced.
#[wasm_bindgen]
pub struct Run {
    trainer: Rc<RefCell<Option<Trainer>>>,
    /// The selector's record, for a method with one (started before the first epoch).
    trail: Rc<RefCell<Option<Trail>>>,
    /// Epochs finished.
    finished: Rc<Cell<usize>>,
    /// How the selector ranks: "perturbed" (TAkS, naive), "latest" (greedy) or "none".
    ranking: &'static str,
    config: TrainConfig,
    grid_images: Vec<f32>,
    true_labels: Vec<u32>,
    noisy_labels: Vec<u32>,
    clean: Vec<u8>,
    k: usize,
    eta: f64,
    engine: &'static str,
}

#[wasm_bindgen]
impl Run {
    /// Build a run from the page's JSON settings (see `RunOptions`). Needs a backend
    /// (`init_webgpu` or `init_cpu`) first.
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str) -> Result<Run, JsError> {
        crate::panic::install_hook();
        let options: RunOptions = serde_json::from_str(options_json)
            .map_err(|e| JsError::new(&format!("bad run settings: {e}")))?;
        let error = |e: taks_core::Error| JsError::new(&e.to_string());
        let method = Method::from_str(&options.method).map_err(error)?;
        let noise = NoiseKind::from_str(&options.noise).map_err(error)?;
        let config = Choices {
            epochs: Some(options.epochs),
            seed: Some(options.seed),
            train_limit: options.train_limit,
            k_ratio: options.k_ratio,
            eta_ratio: options.eta_ratio,
            ..Choices::new(DatasetKind::MnistDigits, noise, options.noise_rate, method)
        }
        .build()
        .map_err(error)?;
        let device = crate::backend::device()?;

        let split = DatasetKind::MnistDigits.load(None).map_err(error)?;
        let n = split
            .train
            .len()
            .min(options.train_limit.unwrap_or(usize::MAX));
        let grid = options.grid.min(n);
        let grid_images = split.train.samples.range(0, grid);
        let trainer = Trainer::new(config.clone(), split, &device).map_err(error)?;
        let labels = trainer.labels();
        let clean = (0..n).map(|i| labels.is_clean(i) as u8).collect();
        let engine = match trainer.selector().map(|s| s.engine()) {
            Some(Engine::Wgsl) => "wgsl",
            Some(Engine::Reference) => "reference",
            None => "none",
        };
        let ranking = match trainer.selector().map(|s| s.objective()) {
            Some(Objective::Perturbed { .. }) => "perturbed",
            Some(Objective::Greedy) => "latest",
            None => "none",
        };
        Ok(Run {
            trail: Rc::new(RefCell::new(None)),
            finished: Rc::new(Cell::new(0)),
            ranking,
            engine,
            true_labels: labels.true_labels.clone(),
            noisy_labels: labels.noisy_labels.clone(),
            clean,
            k: trainer.k(),
            eta: config.eta(n),
            grid_images,
            config,
            trainer: Rc::new(RefCell::new(Some(trainer))),
        })
    }

    /// The full configuration, as the CLI would save it in `config.json`.
    pub fn config_json(&self) -> String {
        serde_json::to_string(&self.config).unwrap_or_default()
    }

    pub fn train_len(&self) -> usize {
        self.clean.len()
    }

    pub fn k(&self) -> usize {
        self.k
    }

    pub fn eta(&self) -> f64 {
        self.eta
    }

    /// Which selection engine scores and selects: "wgsl" (the WGSL kernels, on WebGPU),
    /// "reference" (the CPU reference), or "none" for a method without an FPL selector.
    pub fn engine(&self) -> String {
        self.engine.into()
    }

    /// Pixels in [0, 1] of the first `grid` training digits, 784 per digit.
    pub fn grid_images(&self) -> Vec<f32> {
        self.grid_images.clone()
    }

    pub fn true_labels(&self) -> Vec<u32> {
        self.true_labels.clone()
    }

    /// The labels training sees, after noise injection.
    pub fn noisy_labels(&self) -> Vec<u32> {
        self.noisy_labels.clone()
    }

    /// 1 where a training digit kept its true label.
    pub fn clean_mask(&self) -> Vec<u8> {
        self.clean.clone()
    }

    /// Train one epoch; resolves to the core's `EpochMetrics` as JSON. The selection
    /// trail is recorded before the promise resolves.
    pub fn step(&self) -> Promise {
        let (cell, trail, finished) = (
            self.trainer.clone(),
            self.trail.clone(),
            self.finished.clone(),
        );
        future_to_promise(async move {
            let mut trainer = take(&cell)?;
            let result = async {
                start_trail(&trainer, &trail).await?;
                // The one loop every front end runs, stopped after its first epoch: the
                // page's lessons pause between epochs at JavaScript's pace.
                let mut history = Vec::new();
                let mut one = After(|_: &Trainer, _: &[_]| Ok::<_, taks_core::Error>(Next::Stop));
                trainer.run_to_end(&mut history, &mut one).await?;
                let metrics = history
                    .pop()
                    .ok_or_else(|| taks_core::Error::Input("the run has no epoch left".into()))?;
                if let Some(selector) = trainer.selector() {
                    // Read first, then hold the trail only for the push: the page may
                    // ask for a sample while the device read is pending.
                    let reading = Reading::of(selector).await?;
                    if let Some(trail) = trail.borrow_mut().as_mut() {
                        trail.push(selector, metrics.epoch, reading);
                    }
                }
                Ok::<_, taks_core::Error>(metrics)
            }
            .await;
            *cell.borrow_mut() = Some(trainer);
            let metrics = result.map_err(js_error)?;
            finished.set(metrics.epoch);
            serde_json::to_string(&metrics)
                .map(JsValue::from)
                .map_err(js_error)
        })
    }

    /// Resolves to `{ selected: Uint8Array(n), cumulative: Float32Array(n) }` after
    /// `epochs` finished epochs: which digits epoch `epochs + 1` trains on, and each
    /// digit's cumulative noise-risk L. A method without an FPL selector trains on
    /// every digit and has no L: all selected, and an empty `cumulative`. Naming the
    /// epoch, not "the latest", keeps the grid and the sample panel on one epoch while
    /// another run of a side-by-side pair is still training.
    pub fn snapshot(&self, epochs: usize) -> Promise {
        let (cell, trail, finished) = (
            self.trainer.clone(),
            self.trail.clone(),
            self.finished.clone(),
        );
        let n = self.clean.len();
        future_to_promise(async move {
            check_finished(epochs, finished.get()).map_err(js_error)?;
            let trainer = take(&cell)?;
            let started = start_trail(&trainer, &trail).await;
            *cell.borrow_mut() = Some(trainer);
            started.map_err(js_error)?;
            let (selected, cumulative) = match trail.borrow().as_ref() {
                Some(trail) => {
                    let (set, cumulative) = trail
                        .set_after(epochs)
                        .ok_or_else(|| js_error(format!("epoch {epochs} is not recorded")))?;
                    (set.to_vec(), cumulative.to_vec())
                }
                None => (vec![1u8; n], Vec::new()),
            };
            let out = Object::new();
            Reflect::set(&out, &"selected".into(), &Uint8Array::from(&selected[..]))?;
            Reflect::set(
                &out,
                &"cumulative".into(),
                &Float32Array::from(&cumulative[..]),
            )?;
            Ok(out.into())
        })
    }

    /// One training digit's history over the first `epochs` finished epochs, as JSON,
    /// for the page's sample panel: its labels, how the selector ranks, eta, and per
    /// epoch (`SampleTrail`) whether it was trained on, its noise-risk, L, its ranked
    /// value against the k-th smallest, and whether it was chosen next. The page asks
    /// for the epoch its grid shows, so the two always agree. A method without a
    /// selector trains on every digit: `trained` is all true and the other lists are
    /// empty.
    pub fn sample_history(&self, index: usize, epochs: usize) -> Result<String, JsError> {
        let n = self.clean.len();
        if index >= n {
            return Err(JsError::new(&format!(
                "digit {index} is not among the {n} training digits"
            )));
        }
        check_finished(epochs, self.finished.get()).map_err(|e| JsError::new(&e))?;
        let row = match self.trail.borrow().as_ref() {
            Some(trail) => Some(
                trail
                    .sample(index, epochs)
                    .ok_or_else(|| JsError::new(&format!("epoch {epochs} is not recorded")))?,
            ),
            None => None,
        };
        let row = row.map(serde_json::to_value).transpose()?;
        let json = serde_json::json!({
            "index": index,
            "given": self.noisy_labels[index],
            "true": self.true_labels[index],
            "ranking": self.ranking,
            "eta": self.eta,
            "k": self.k,
            "epochs": epochs,
            "trail": row.unwrap_or_else(|| serde_json::json!({
                "trained": vec![true; epochs],
                "theta": [], "cumulative": [], "ranked": [], "threshold": [], "chosen_next": [],
            })),
        });
        Ok(json.to_string())
    }
}

/// A question about an epoch this run has not finished is a bug of the page's.
fn check_finished(epochs: usize, finished: usize) -> Result<(), String> {
    if epochs > finished {
        return Err(format!(
            "epoch {epochs} asked for, but only {finished} are finished"
        ));
    }
    Ok(())
}

/// Record the selector's first set, once, before the first epoch (no-op without one).
async fn start_trail(trainer: &Trainer, trail: &RefCell<Option<Trail>>) -> taks_core::Result<()> {
    if trail.borrow().is_some() {
        return Ok(());
    }
    if let Some(selector) = trainer.selector() {
        let n = trainer.labels().noisy_labels.len();
        let started = Trail::new(selector, n).await?;
        *trail.borrow_mut() = Some(started);
    }
    Ok(())
}

fn take(cell: &RefCell<Option<Trainer>>) -> Result<Trainer, JsValue> {
    cell.borrow_mut()
        .take()
        .ok_or_else(|| js_error("this run is busy: wait for its previous call to finish"))
}
