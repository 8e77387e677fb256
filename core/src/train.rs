//! The training loop of Algorithm 1, one epoch per call, for every method.
//!
//! Each epoch: choose the samples to train on (the method's [`EpochSet`]: all of them,
//! TAkS's k-set, or ITLM's smallest-loss set scored now); train one pass over them
//! (shuffled, batches of 128, the last partial batch kept) with the method's batch
//! [`Rule`]; for TAkS and its ablations, score all n samples in eval mode and let the
//! [`Selector`] choose the next k-set; then apply the schedule. The training set is
//! uploaded to the device once and batches are gathered there by index, so an epoch
//! moves only indices and a few scalars between host and device; the label-precision
//! counts of the samples each network trained on are summed on the device too.
//!
//! [`Trainer::step`] is `async` and reads only through `*_async` calls, because the
//! browser's WebGPU cannot block; natively it is driven by a trivial `block_on`.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::activation::softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use web_time::Instant;

use crate::config::TrainConfig;
use crate::data::{Dataset, Split};
use crate::holdout::noisy_holdout;
use crate::methods::{self, BatchAt, EpochSet, Method, Rule, f_correction};
use crate::metrics::{EpochMetrics, regret_bound};
use crate::model::{Classifier, Networks};
use crate::noise::{NoisyLabels, inject};
use crate::optim::{Adam, schedule};
use crate::rng::SplitMix64;
use crate::selection::{self, Selector, indices_tensor, read_floats};
use crate::{Error, Result};

pub mod checkpoint;
mod launches;

pub use launches::LaunchCounts;

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

/// What F-correction's first stage found (see [`f_correction`]).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Preparation {
    /// The estimated transition matrix, row-major `[classes * classes]`.
    pub transition: Vec<f32>,
    /// The 1-based stage-1 epoch whose network was kept.
    pub best_epoch: usize,
    /// Its accuracy on the held-out noisy labels.
    pub best_validation_accuracy: f64,
    /// Wall time of the whole stage (training, validation and estimation).
    pub seconds: f64,
}

/// One run in progress, of any method.
pub struct Trainer {
    config: TrainConfig,
    device: Device,
    networks: Option<Networks>,
    adam: Adam,
    /// `None` only while F-correction's first stage has not run.
    rule: Option<Box<dyn Rule>>,
    /// F-correction's first stage, until [`Trainer::prepare`] runs it.
    stage_one: Option<(Split, NoisyLabels)>,
    preparation: Option<Preparation>,
    train: DeviceSet,
    test: DeviceSet,
    classes: usize,
    /// f32 `[n]`: 1.0 where the noisy label is the true one.
    clean: Tensor<1>,
    labels: NoisyLabels,
    /// For TAkS and its ablations only.
    selector: Option<Selector>,
    shuffle: SplitMix64,
    epoch: usize,
    total_selection_risk: f64,
    k: usize,
}

impl Trainer {
    /// Inject the configured noise into `split.train`, upload both parts to `device` and
    /// build the networks, the rule and (for TAkS and its ablations) the selector.
    pub fn new(config: TrainConfig, split: Split, device: &Device) -> Result<Self> {
        config.validate()?;
        let Split { train, test } = split;
        let train = train.truncated(config.train_limit.unwrap_or(usize::MAX));
        let test = test.truncated(config.test_limit.unwrap_or(usize::MAX));
        let labels = inject(
            &train.labels,
            train.classes,
            config.noise,
            config.noise_rate,
            config.dataset,
            config.seed,
        )?;
        Self::with_labels(config, Split { train, test }, labels, device)
    }

    /// Like [`Trainer::new`] with the noisy labels already drawn (`labels` describes
    /// `split.train`; `split.test` is evaluated against its own labels as given, which
    /// is how a noisy validation set is used). No truncation.
    pub fn with_labels(
        config: TrainConfig,
        split: Split,
        labels: NoisyLabels,
        device: &Device,
    ) -> Result<Self> {
        config.validate()?;
        split.check()?;
        let Split { train, test } = split;
        let n = train.len();
        let k = config.checked_k(n)?;
        device.seed(config.seed);
        let selector = if config.method.uses_selector() {
            Some(Selector::new(
                config.method,
                k,
                config.eta(n),
                config.seed,
                &labels,
                device,
                config.selection_engine,
            )?)
        } else {
            None
        };
        let (shape, classes) = (train.shape, train.classes);
        let stage_one = (config.method == Method::FCorrection).then(|| {
            let held = noisy_holdout(
                &train,
                &labels,
                f_correction::VALIDATION_FRACTION,
                config.seed,
            );
            held.into_split()
        });
        let rule = if stage_one.is_some() {
            None
        } else {
            Some(methods::rule(&config, n, classes, None, device)?)
        };
        let networks = Networks::new(
            config.method.networks(),
            config.architecture,
            shape,
            classes,
            &device.clone().autodiff(),
        );
        let clean: Vec<f32> = (0..n).map(|i| labels.is_clean(i) as u8 as f32).collect();
        let test_labels = test.labels.clone();
        Ok(Trainer {
            train: DeviceSet::upload(train, &labels.noisy_labels, device),
            test: DeviceSet::upload(test, &test_labels, device),
            clean: Tensor::from_data(TensorData::new(clean, [n]), device),
            classes,
            shuffle: SplitMix64::for_stream(config.seed, "batch-order"),
            config,
            device: device.clone(),
            networks: Some(networks),
            adam: Adam::default(),
            rule,
            stage_one,
            preparation: None,
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

    /// How many samples an epoch trains on (k for TAkS, n for the per-batch methods).
    pub fn k(&self) -> usize {
        self.k
    }

    pub fn train_len(&self) -> usize {
        self.train.len
    }

    /// Number of classes.
    pub fn classes(&self) -> usize {
        self.classes
    }

    pub fn labels(&self) -> &NoisyLabels {
        &self.labels
    }

    /// The FPL selector, for TAkS and its ablations.
    pub fn selector(&self) -> Option<&Selector> {
        self.selector.as_ref()
    }

    /// The networks as they are now (inference copies, no autodiff).
    pub fn networks(&self) -> Networks {
        self.networks.as_ref().expect("networks present").valid()
    }

    /// Softmax probabilities `[n * classes]` of the first network on every training
    /// sample, in order, in eval mode (what an audit reads after the last epoch).
    pub async fn train_probabilities(&self) -> Result<Vec<f32>> {
        let logits = score(
            self.networks().first(),
            &self.train.images,
            self.config.eval_batch_size,
        );
        read_floats(softmax(logits, 1), "probabilities").await
    }

    /// Softmax probabilities `[m * classes]` of the first network on `images` (`m`
    /// samples laid out as the training set), in eval mode: predictions for samples the
    /// network never trained on.
    pub async fn probabilities(&self, images: Vec<f32>) -> Result<Vec<f32>> {
        let size = self.train.images.dims()[1];
        let m = images.len() / size;
        let images = Tensor::from_data(TensorData::new(images, [m, size]), &self.device);
        let logits = score(
            self.networks().first(),
            &images,
            self.config.eval_batch_size,
        );
        read_floats(softmax(logits, 1), "probabilities").await
    }

    /// The training samples `[n * features]` as the networks see them (normalised, in
    /// order), read back from the device: for handing the same data to another tool.
    pub async fn train_images(&self) -> Result<Vec<f32>> {
        read_floats(self.train.images.clone(), "training images").await
    }

    /// Whether [`Trainer::prepare`] still has work to do (F-correction's first stage).
    pub fn needs_preparation(&self) -> bool {
        self.stage_one.is_some()
    }

    /// What F-correction's first stage found, once it ran.
    pub fn preparation(&self) -> Option<&Preparation> {
        self.preparation.as_ref()
    }

    /// Run what must happen before the first epoch: F-correction's first stage (train
    /// Standard on 80% of the noisy training set, keep the epoch with the best noisy
    /// validation accuracy, estimate T). Nothing for other methods. [`Trainer::step`]
    /// calls it when needed; call it first to report it separately.
    pub async fn prepare(&mut self) -> Result<()> {
        let Some((split, labels)) = self.stage_one.take() else {
            return Ok(());
        };
        let started = Instant::now();
        let mut config = self.config.clone();
        config.method = Method::Standard;
        let mut stage = Trainer::with_labels(config, split, labels, &self.device)?;
        let (mut best_accuracy, mut best_epoch, mut best) = (-1.0, 0, stage.networks());
        while !stage.is_done() {
            // Boxed: a Trainer's step awaiting another Trainer's step is a recursive future.
            let m = Box::pin(stage.step()).await?;
            // `<=` as the authors' code: a later epoch wins a tie.
            if best_accuracy <= m.test_accuracy {
                (best_accuracy, best_epoch, best) = (m.test_accuracy, m.epoch, stage.networks());
            }
        }
        let logits = score(
            best.first(),
            &self.train.images,
            self.config.eval_batch_size,
        );
        let probabilities = read_floats(softmax(logits, 1), "stage-1 probabilities").await?;
        let filter_outlier = self.config.dataset != crate::data::DatasetKind::Cifar100;
        let transition =
            f_correction::estimate_transition(&probabilities, self.classes, filter_outlier);
        self.rule = Some(methods::rule(
            &self.config,
            self.train.len,
            self.classes,
            Some(&transition),
            &self.device,
        )?);
        self.preparation = Some(Preparation {
            transition,
            best_epoch,
            best_validation_accuracy: best_accuracy,
            seconds: started.elapsed().as_secs_f64(),
        });
        Ok(())
    }

    /// Run one epoch and return its measurements.
    pub async fn step(&mut self) -> Result<EpochMetrics> {
        self.prepare().await?;
        let e = self.epoch; // 0-based inside, 1-based in every output
        let (lr, beta_1) = schedule(
            self.config.learning_rate,
            e,
            self.config.epochs,
            self.config.decay_start,
        );

        let started = Instant::now();
        let set = self.epoch_set().await?;
        let trained = self.train_epoch(set, lr, beta_1, e + 1);
        let logits = self.selector.is_some().then(|| {
            score(
                self.networks().first(),
                &self.train.images,
                self.config.eval_batch_size,
            )
        });
        let update = match (self.selector.as_mut(), logits) {
            (Some(selector), Some(logits)) => Some(selector.update(logits, e + 1).await?),
            _ => None,
        };
        let counts = read_floats(trained.scalars, "the epoch's loss and counts").await?;
        let epoch_seconds = started.elapsed().as_secs_f64();

        let train_loss = counts[0] as f64 / trained.samples as f64;
        if !train_loss.is_finite() {
            return Err(Error::Diverged {
                epoch: e + 1,
                what: "the training loss".into(),
            });
        }
        let nets = (counts.len() - 1) / 2;
        let clean_total = self.labels.clean_count().max(1) as f64;
        let mut recall = 0.0;
        // A network that trained on nothing this epoch (Decouple once the two agree
        // everywhere) has no precision: it is left out, and with none left it is NaN.
        let mut precisions = Vec::new();
        for i in 0..nets {
            let (clean, picked) = (counts[1 + i] as f64, counts[1 + nets + i] as f64);
            if picked > 0.0 {
                precisions.push(clean / picked);
            }
            recall += clean / clean_total / nets as f64;
        }
        let precision = match precisions.len() {
            0 => f64::NAN,
            defined => precisions.iter().sum::<f64>() / defined as f64,
        };
        let network_accuracies = self.test_accuracies().await?;
        self.epoch += 1;
        let t = self.epoch;
        let (selection_risk, total, regret, bound) = match update {
            Some(update) => {
                self.total_selection_risk += update.selection_risk;
                (
                    Some(update.selection_risk),
                    Some(self.total_selection_risk),
                    Some(self.total_selection_risk - update.hindsight_risk),
                    Some(regret_bound(self.train.len, self.k, t)),
                )
            }
            None => (None, None, None, None),
        };
        Ok(EpochMetrics {
            epoch: t,
            train_loss,
            test_accuracy: network_accuracies.iter().sum::<f64>() / network_accuracies.len() as f64,
            network_accuracies,
            label_precision: precision,
            label_recall: recall,
            selection_risk,
            total_selection_risk: total,
            regret,
            regret_bound: bound,
            epoch_seconds,
            selected: trained.samples,
            learning_rate: lr,
        })
    }

    /// The indices this epoch trains on, as the method's [`EpochSet`] says.
    async fn epoch_set(&self) -> Result<Tensor<1, Int>> {
        let rule = self.rule.as_ref().expect("prepared before the first epoch");
        Ok(match rule.epoch_set() {
            EpochSet::All => Tensor::<1, Int>::arange(0..self.train.len as i64, &self.device),
            EpochSet::Selector => self
                .selector
                .as_ref()
                .expect("selector methods have a selector")
                .current_indices(),
            EpochSet::SmallestLoss { keep } => {
                let networks = self.networks();
                let logits = score(
                    networks.first(),
                    &self.train.images,
                    self.config.eval_batch_size,
                );
                let loss = methods::small_loss::cross_entropy(logits, &self.train.labels);
                selection::k_smallest_indices(loss, keep).await?
            }
        })
    }

    /// One pass over `set`, shuffled, with the method's batch rule.
    fn train_epoch(&mut self, set: Tensor<1, Int>, lr: f64, beta_1: f32, epoch: usize) -> Trained {
        let selected = set.dims()[0];
        let mut order: Vec<u32> = (0..selected as u32).collect();
        self.shuffle.shuffle(&mut order);
        let order = set.select(0, indices_tensor(&order, &self.device));
        let rule = self.rule.take().expect("prepared before the first epoch");
        let networks = self.networks.take().expect("networks present");
        let nets = networks.len();
        let forget_rate = methods::forget_rate(self.config.forget_rate, epoch);
        let device = self.device.clone();
        let zero = || Tensor::<1>::zeros([1], &device);
        let loss_sum = zero();
        // Per network: clean samples picked, samples picked (None until a rule picks).
        let picks: Option<(Vec<Tensor<1>>, Vec<Tensor<1>>)> = None;
        let batch = self.config.batch_size;
        let on_cpu = crate::flex_host::is_f32(&self.train.images);
        let epoch_loop = || {
            let (mut networks, mut loss_sum, mut picks) = (networks, loss_sum, picks);
            for (b, start) in (0..selected).step_by(batch).enumerate() {
                let len = batch.min(selected - start);
                let idx = order.clone().narrow(0, start, len);
                let at = BatchAt {
                    epoch,
                    batch: b,
                    forget_rate,
                };
                let step;
                (networks, step) = self.train_batch(rule.as_ref(), networks, idx, at, lr, beta_1);
                loss_sum = loss_sum + step.loss_sum;
                if let Some(masks) = step.picked {
                    let (clean_sums, counts) =
                        picks.get_or_insert_with(|| (vec![zero(); nets], vec![zero(); nets]));
                    for (i, (clean, count)) in masks.into_iter().enumerate() {
                        clean_sums[i] = clean_sums[i].clone() + clean;
                        counts[i] = counts[i].clone() + count;
                    }
                }
            }
            (networks, loss_sum, picks)
        };
        // On the CPU the batches run on a thread of flex's pool, so the matmuls they split
        // in halves hand one half to the other thread instead of waking two.
        let (networks, loss_sum, picks) = if on_cpu {
            in_thread_pool(epoch_loop)
        } else {
            epoch_loop()
        };
        self.rule = Some(rule);
        self.networks = Some(networks);
        // Methods that train on every sample of their set: the set itself was picked.
        let (clean_sums, counts) = picks.unwrap_or_else(|| {
            let clean = self.clean.clone().select(0, order).sum();
            let count = zero().add_scalar(selected as f32);
            (vec![clean; nets], vec![count; nets])
        });
        let mut scalars = vec![loss_sum];
        scalars.extend(clean_sums);
        scalars.extend(counts);
        Trained {
            scalars: Tensor::cat(scalars, 0),
            samples: selected,
        }
    }

    /// One batch of the samples `idx`: forward, the rule's loss, backward, Adam's step.
    fn train_batch(
        &mut self,
        rule: &dyn Rule,
        networks: Networks,
        idx: Tensor<1, Int>,
        at: BatchAt,
        lr: f64,
        beta_1: f32,
    ) -> (Networks, BatchSums) {
        let len = idx.dims()[0];
        let x = self.train.images.clone().select(0, idx.clone());
        let y = self.train.labels.clone().select(0, idx.clone());
        // The MLP on the CPU with plain cross-entropy: gradients by hand, no graph.
        let by_hand = match networks.first().as_mlp() {
            Some(mlp) if networks.len() == 1 && rule.is_mean_cross_entropy() => {
                mlp.host_cross_entropy_step(x.clone(), y.clone())
            }
            _ => None,
        };
        if let Some(step) = by_hand {
            let loss_sum = step.loss.mul_scalar(len as f32);
            let networks = self.adam.step(lr, beta_1, networks, step.grads, None);
            return (
                networks,
                BatchSums {
                    loss_sum,
                    picked: None,
                },
            );
        }
        let step = rule.batch(&networks.forward(x), &y, at);
        let loss_sum = step
            .loss
            .clone()
            .detach()
            .without_autodiff()
            .mul_scalar(len as f32);
        let picked = step.picked.map(|masks| {
            let clean = self.clean.clone().select(0, idx);
            masks
                .into_iter()
                .map(|mask| {
                    let mask = mask.detach().without_autodiff();
                    ((mask.clone() * clean.clone()).sum(), mask.sum())
                })
                .collect()
        });
        let gate = step.apply.map(|g| g.detach().without_autodiff());
        let grads = GradientsParams::from_grads(step.loss.backward(), &networks);
        let networks = self.adam.step(lr, beta_1, networks, grads, gate);
        (networks, BatchSums { loss_sum, picked })
    }

    /// Each network's accuracy on the test set (not part of the timed epoch).
    async fn test_accuracies(&self) -> Result<Vec<f64>> {
        let networks = self.networks();
        let chunk = self.config.eval_batch_size;
        let mut correct = Vec::new();
        for net in networks.iter() {
            let mut c = Tensor::<1, Int>::zeros([1], &self.device);
            for start in (0..self.test.len).step_by(chunk) {
                let len = chunk.min(self.test.len - start);
                let logits = net.forward(self.test.images.clone().narrow(0, start, len));
                let predicted = logits.argmax(1).reshape([len]);
                let truth = self.test.labels.clone().narrow(0, start, len);
                c = c + predicted.equal(truth).int().sum();
            }
            correct.push(c);
        }
        let correct = Tensor::cat(correct, 0)
            .into_data_async()
            .await
            .map_err(|err| Error::Device(format!("reading test accuracy: {err:?}")))?;
        Ok(correct
            .iter::<i64>()
            .map(|c| c as f64 / self.test.len as f64)
            .collect())
    }
}

/// What one batch adds to the epoch's sums, on the device: its loss times its size and,
/// when the rule picks samples, per network (clean samples picked, samples picked).
struct BatchSums {
    loss_sum: Tensor<1>,
    picked: Option<Vec<(Tensor<1>, Tensor<1>)>>,
}

/// What one epoch's training leaves to read: `[loss sum, clean picked per network...,
/// picked per network...]` on the device, and how many samples it trained on.
struct Trained {
    scalars: Tensor<1>,
    samples: usize,
}

/// Run `f` on a thread of the global thread pool (flex's): there, `rayon::join` runs one
/// side at once and leaves the other to the second thread, where from outside the pool
/// it would wake two threads and sleep (measured here: a split matmul of the MLP's step
/// after 0.3 ms of other work took 0.26 ms inside the pool, 0.33 ms from outside).
#[cfg(not(target_arch = "wasm32"))]
fn in_thread_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::scope(|_| f())
}

#[cfg(target_arch = "wasm32")]
fn in_thread_pool<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Logits `[n, C]` of every sample of `images`, in order, in eval mode, in chunks (for
/// the MLP on the CPU, chunks in parallel and without tensor dispatch: same bits).
fn score(net: &Classifier, images: &Tensor<2>, chunk: usize) -> Tensor<2> {
    if let Some(logits) = net.as_mlp().and_then(|m| m.host_logits(images, chunk)) {
        return logits;
    }
    let n = images.dims()[0];
    let parts: Vec<Tensor<2>> = (0..n)
        .step_by(chunk)
        .map(|start| net.forward(images.clone().narrow(0, start, chunk.min(n - start))))
        .collect();
    Tensor::cat(parts, 0)
}
