//! The training loop of Algorithm 1, one epoch per call.
//!
//! Each epoch: train one pass over the selected k samples (shuffled, batches of 128, the
//! last partial batch kept); score all n training samples in eval mode without
//! gradients; let the [`Selector`] measure noise-risk and choose the next k-set; then
//! apply the schedule. The training set is uploaded to the device once and batches are
//! gathered there by index, so an epoch moves only indices and a few scalars between
//! host and device.
//!
//! [`Trainer::step`] is `async` and reads only through `*_async` calls, because the
//! browser's WebGPU cannot block; natively it is driven by a trivial `block_on`.

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Int, Tensor, TensorData};
use web_time::Instant;

use crate::config::TrainConfig;
use crate::data::{Dataset, Split};
use crate::metrics::{EpochMetrics, regret_bound};
use crate::model::Classifier;
use crate::noise::{NoisyLabels, inject};
use crate::optim::{Beta1, ScheduledAdam, schedule};
use crate::rng::SplitMix64;
use crate::selection::{Selector, Update, indices_tensor};
use crate::{Error, Result};

/// A dataset part resident on the device: `[n, C*H*W]` images and Int labels.
struct DeviceSet {
    images: Tensor<2>,
    labels: Tensor<1, Int>,
    len: usize,
}

impl DeviceSet {
    /// Takes the images by value: the host copy is handed to the device, not duplicated.
    fn upload(data: Dataset, labels: &[u32], device: &Device) -> Self {
        let sample_size = data.sample_size();
        let images = data.images;
        let n = labels.len();
        let labels: Vec<i32> = labels.iter().map(|&l| l as i32).collect();
        DeviceSet {
            images: Tensor::from_data(TensorData::new(images, [n, sample_size]), device),
            labels: Tensor::from_data(TensorData::new(labels, [n]), device),
            len: n,
        }
    }
}

/// One TAkS (or baseline) run in progress.
pub struct Trainer {
    config: TrainConfig,
    device: Device,
    model: Option<Classifier>,
    optim: ModuleOptimizer,
    beta_1: Beta1,
    train: DeviceSet,
    test: DeviceSet,
    labels: NoisyLabels,
    selector: Selector,
    shuffle: SplitMix64,
    epoch: usize,
    total_selection_risk: f64,
    k: usize,
}

impl Trainer {
    /// Inject the configured noise into `split.train`, upload both parts to `device` and
    /// build the network and the selector.
    pub fn new(config: TrainConfig, split: Split, device: &Device) -> Result<Self> {
        config.validate()?;
        let Split { train, test } = split;
        let train = train.truncated(config.train_limit.unwrap_or(usize::MAX));
        let test = test.truncated(config.test_limit.unwrap_or(usize::MAX));
        if train.is_empty() || test.is_empty() {
            return Err(Error::Config(
                "the training and test sets must not be empty".into(),
            ));
        }
        let labels = inject(
            &train.labels,
            train.classes,
            config.noise,
            config.noise_rate,
            config.dataset,
            config.seed,
        )?;
        let n = train.len();
        let k = config.k(n);
        if k == 0 {
            return Err(Error::Config(format!(
                "k-ratio {} of {n} samples selects nothing",
                config.k_ratio
            )));
        }
        device.seed(config.seed);
        let selector = Selector::new(
            config.method,
            k,
            config.eta(n),
            config.seed,
            &labels,
            device,
            config.selection_engine,
        )?;
        let model = Classifier::new(
            config.architecture,
            train.shape,
            train.classes,
            &device.clone().autodiff(),
        );
        let (optim, beta_1) = ScheduledAdam::init();
        let test_labels = test.labels.clone();
        Ok(Trainer {
            train: DeviceSet::upload(train, &labels.noisy_labels, device),
            test: DeviceSet::upload(test, &test_labels, device),
            shuffle: SplitMix64::for_stream(config.seed, "batch-order"),
            config,
            device: device.clone(),
            model: Some(model),
            optim,
            beta_1,
            labels,
            selector,
            epoch: 0,
            total_selection_risk: 0.0,
            k,
        })
    }

    pub fn config(&self) -> &TrainConfig {
        &self.config
    }

    /// Epochs finished so far.
    pub fn epoch(&self) -> usize {
        self.epoch
    }

    pub fn is_done(&self) -> bool {
        self.epoch >= self.config.epochs
    }

    /// k, the size of the selected set (n for `standard`).
    pub fn k(&self) -> usize {
        self.k
    }

    pub fn train_len(&self) -> usize {
        self.train.len
    }

    pub fn labels(&self) -> &NoisyLabels {
        &self.labels
    }

    pub fn selector(&self) -> &Selector {
        &self.selector
    }

    /// Run one epoch and return its measurements.
    pub async fn step(&mut self) -> Result<EpochMetrics> {
        let e = self.epoch; // 0-based inside, 1-based in every output
        let (lr, beta_1) = schedule(
            self.config.learning_rate,
            e,
            self.config.epochs,
            self.config.decay_start,
        );
        self.beta_1.set(beta_1);

        let started = Instant::now();
        let (loss_sum, trained) = self.train_selected(lr);
        let logits = self.score_all();
        let update = self.selector.update(logits, e + 1).await?;
        let loss_sum: f32 = loss_sum
            .into_scalar_async()
            .await
            .map_err(|err| Error::Device(format!("reading the loss: {err:?}")))?;
        let epoch_seconds = started.elapsed().as_secs_f64();
        let train_loss = loss_sum as f64 / trained as f64;
        if !train_loss.is_finite() {
            return Err(Error::Diverged {
                epoch: e + 1,
                what: "the training loss".into(),
            });
        }
        let test_accuracy = self.test_accuracy().await?;
        self.epoch += 1;
        Ok(self.metrics(update, train_loss, test_accuracy, epoch_seconds, lr))
    }

    /// One pass over the current k-set. Returns the summed loss (on the device, so no
    /// batch waits for a read) and the number of samples trained on.
    fn train_selected(&mut self, lr: f64) -> (Tensor<1>, usize) {
        let selected = self.selector.selected_len();
        let mut order: Vec<u32> = (0..selected as u32).collect();
        self.shuffle.shuffle(&mut order);
        let order = self
            .selector
            .current_indices()
            .select(0, indices_tensor(&order, &self.device));
        let loss_fn = CrossEntropyLossConfig::new().init(&self.device);
        let mut model = self
            .model
            .take()
            .expect("model is always present between steps");
        let mut loss_sum = Tensor::<1>::zeros([1], &self.device);
        let batch = self.config.batch_size;
        for start in (0..selected).step_by(batch) {
            let len = batch.min(selected - start);
            let idx = order.clone().narrow(0, start, len);
            let x = self.train.images.clone().select(0, idx.clone());
            let y = self.train.labels.clone().select(0, idx);
            let loss = loss_fn.forward(model.forward(x), y);
            loss_sum = loss_sum
                + loss
                    .clone()
                    .detach()
                    .without_autodiff()
                    .mul_scalar(len as f32);
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = self.optim.step(lr, model, grads);
        }
        self.model = Some(model);
        (loss_sum, selected)
    }

    /// Logits `[n, C]` of every training sample, in order, in eval mode.
    fn score_all(&self) -> Tensor<2> {
        let model = self.model.as_ref().expect("model present").valid();
        let chunk = self.config.eval_batch_size;
        let parts: Vec<Tensor<2>> = (0..self.train.len)
            .step_by(chunk)
            .map(|start| {
                let len = chunk.min(self.train.len - start);
                model.forward(self.train.images.clone().narrow(0, start, len))
            })
            .collect();
        Tensor::cat(parts, 0)
    }

    async fn test_accuracy(&self) -> Result<f64> {
        let model = self.model.as_ref().expect("model present").valid();
        let chunk = self.config.eval_batch_size;
        let mut correct = Tensor::<1, Int>::zeros([1], &self.device);
        for start in (0..self.test.len).step_by(chunk) {
            let len = chunk.min(self.test.len - start);
            let logits = model.forward(self.test.images.clone().narrow(0, start, len));
            let predicted = logits.argmax(1).reshape([len]);
            let truth = self.test.labels.clone().narrow(0, start, len);
            correct = correct + predicted.equal(truth).int().sum();
        }
        let correct: i64 = correct
            .into_scalar_async()
            .await
            .map_err(|err| Error::Device(format!("reading test accuracy: {err:?}")))?;
        Ok(correct as f64 / self.test.len as f64)
    }

    fn metrics(
        &mut self,
        update: Update,
        train_loss: f64,
        test_accuracy: f64,
        epoch_seconds: f64,
        learning_rate: f64,
    ) -> EpochMetrics {
        self.total_selection_risk += update.selection_risk;
        let clean_total = self.labels.clean_count().max(1);
        EpochMetrics {
            epoch: self.epoch,
            train_loss,
            test_accuracy,
            label_precision: update.selected_clean as f64 / update.selected.max(1) as f64,
            label_recall: update.selected_clean as f64 / clean_total as f64,
            selection_risk: update.selection_risk,
            total_selection_risk: self.total_selection_risk,
            regret: self.total_selection_risk - update.hindsight_risk,
            regret_bound: regret_bound(self.train.len, self.k, self.epoch),
            epoch_seconds,
            selected: update.selected,
            learning_rate,
        }
    }
}
