//! The training loop of Algorithm 1, one epoch per call, for every method.
//!
//! Each epoch: choose the samples to train on (the rule's [`crate::methods::EpochSet`]:
//! all of them, TAkS's k-set, or ITLM's smallest-loss set scored now); train one pass
//! over them (shuffled, batches of 128, the last partial batch kept) with the method's
//! batch [`Rule`]; when the rule has a [`Selector`] (TAkS and its ablations), score all n
//! samples in eval mode and let it choose the next k-set; then apply the schedule. The
//! loop calls only the [`Rule`] trait; it never names a method
//! ([`crate::methods::registry`] holds what differs). The parts live in `epoch`,
//! `evaluate`, `inputs`, `first_stage`, `label_counts` and `checkpoint`. The samples stay
//! on the host, in one copy, as they were read ([`crate::data::samples`]: image bytes, or
//! f32 values); each batch and each scoring block is gathered, scaled and standardised
//! there and uploaded on its own, so host memory grows with n only through per-sample
//! scalars (labels, risks) and the sample store itself; on a GPU, a set whose inputs fit
//! a budget is also kept on the device, and its batches gathered there ([`inputs`]). The
//! labels live on the device, and the
//! label-precision counts of the samples each network selected (for Co-teaching and
//! Co-teaching+, those the other network trained on) are summed there.
//!
//! [`Trainer::run_epoch`] is `async` and reads only through `*_async` calls, because the
//! browser's WebGPU cannot block; natively it is driven by a trivial `block_on`.

use burn::module::Module;
use burn::tensor::activation::softmax;
use burn::tensor::{Device, FloatDType, Int, Tensor, TensorData};
use web_time::Instant;

use crate::data::{Dataset, DatasetKind, Samples, Split};
use crate::holdout::noisy_holdout;
use crate::methods::{Rule, RuleInputs};
use crate::metrics::EpochMetrics;
use crate::nn::Networks;
use crate::noise::{NoiseKind, NoisyLabels, inject};
use crate::optim::{Adam, schedule};
use crate::read_back::read_floats;
use crate::regret::after_round;
use crate::rng::SplitMix64;
use crate::selection::Selector;
use crate::settings::TrainConfig;
use crate::{Error, Result};

pub mod checkpoint;
mod epoch;
mod evaluate;
mod first_stage;
mod forward_rates;
mod inputs;
mod label_counts;
mod launches;
pub(crate) mod loss_scale;
mod to_the_end;

pub use first_stage::Preparation;
pub use forward_rates::ForwardRates;
use label_counts::label_precision_recall;
pub use launches::{LaunchCounts, OpClocks};
pub use loss_scale::LossScale;
pub use to_the_end::{After, Next, Quietly, Watch};

use evaluate::score;
use inputs::Inputs;

/// A dataset part: its samples on the host, gathered a batch at a time, or its inputs
/// kept on the GPU ([`inputs`]), and its labels
/// on the device.
struct PartSet {
    samples: Samples,
    /// The same inputs on the GPU, where they are kept ([`inputs::keep`]).
    kept: inputs::Kept,
    labels: Tensor<1, Int>,
    len: usize,
}

impl PartSet {
    /// `left`: what remains of the bytes a run keeps on a GPU ([`inputs::KEPT_BYTES`]);
    /// `low`: a mixed-precision step's type, for the set its batches are gathered from.
    fn new(
        data: Dataset,
        labels: &[u32],
        device: &Device,
        left: &mut usize,
        low: Option<FloatDType>,
    ) -> Self {
        let n = labels.len();
        let labels: Vec<i32> = labels.iter().map(|&l| l as i32).collect();
        PartSet {
            kept: inputs::keep(&data.samples, device, left, low),
            samples: data.samples,
            labels: Tensor::from_data(TensorData::new(labels, [n]), device),
            len: n,
        }
    }

    fn inputs(&self) -> Inputs<'_> {
        Inputs {
            samples: &self.samples,
            kept: Some(&self.kept),
        }
    }
}

/// One run in progress, of any method.
pub struct Trainer {
    config: TrainConfig,
    device: Device,
    networks: Option<Networks>,
    adam: Adam,
    /// The method's rule; `None` only while an epoch's batches hold it.
    rule: Option<Box<dyn Rule>>,
    /// The rule's first stage (F-correction's), until [`Trainer::run_first_stage`] runs it.
    stage_one: Option<(Split, NoisyLabels)>,
    preparation: Option<Preparation>,
    train: PartSet,
    test: PartSet,
    /// The validation set of a run that has one ([`Trainer::validate_on`]).
    val: Option<PartSet>,
    classes: usize,
    /// f32 `[n]`: 1.0 where the noisy label is the true one.
    clean: Tensor<1>,
    labels: NoisyLabels,
    shuffle: SplitMix64,
    epoch: usize,
    total_selection_risk: f64,
    k: usize,
    /// The loss scale of an f16 run ([`LossScale`], kept on the device); `None` in the
    /// other precisions.
    loss_scale: Option<loss_scale::DeviceLossScale>,
}

/// The rule of `config.method` for a training set with these noisy `labels` and
/// `classes`, from the method's registry row.
pub fn build_rule(
    config: &TrainConfig,
    labels: &NoisyLabels,
    classes: usize,
    device: &Device,
) -> Result<Box<dyn Rule>> {
    let n = labels.noisy_labels.len();
    (config.method.spec().build)(&RuleInputs {
        n,
        classes,
        k: config.checked_k(n)?,
        eta: config.eta(n),
        seed: config.seed,
        forget_rate: config.forget_rate,
        co_lambda: config.co_lambda,
        init_epoch: config.init_epoch,
        dataset: config.dataset,
        labels,
        device,
        engine: config.selection_engine,
    })
}

impl Trainer {
    /// Inject the configured noise into `split.train`, upload both parts to `device` and
    /// build the networks and the method's rule.
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
        config.precision.check(device)?;
        split.check()?;
        let Split { train, test } = split;
        let n = train.len();
        let k = config.checked_k(n)?;
        let (shape, classes) = (train.shape, train.classes);
        let rule = build_rule(&config, &labels, classes, device)?;
        let stage_one = rule
            .first_stage()
            .map(|stage| noisy_holdout(&train, &labels, stage.holdout, config.seed).into_split());
        let networks = Networks::seeded(
            config.method.networks(),
            config.architecture,
            shape,
            classes,
            &device.clone().autodiff(),
            config.seed,
        );
        let clean: Vec<f32> = (0..n).map(|i| labels.is_clean(i) as u8 as f32).collect();
        let test_labels = test.labels.clone();
        let config_scales = config.precision.scales_loss();
        let mut left = inputs::KEPT_BYTES;
        let low = config.precision.low();
        let train = PartSet::new(train, &labels.noisy_labels, device, &mut left, low);
        let test = PartSet::new(test, &test_labels, device, &mut left, None);
        Ok(Trainer {
            train,
            test,
            val: None,
            clean: Tensor::from_data(TensorData::new(clean, [n]), device),
            classes,
            shuffle: SplitMix64::for_stream(config.seed, "batch-order"),
            rule: Some(rule),
            config,
            device: device.clone(),
            networks: Some(networks),
            adam: Adam::default(),
            stage_one,
            preparation: None,
            labels,
            epoch: 0,
            total_selection_risk: 0.0,
            k,
            loss_scale: config_scales
                .then(|| loss_scale::DeviceLossScale::new(LossScale::default(), device)),
        })
    }

    /// Start every network from pretrained weights (all but the classifier, see
    /// [`crate::nn::pretrained`]), before the first epoch; `path` names the file in
    /// errors.
    pub fn start_from(
        &mut self,
        state: &crate::formats::state_dict::StateDict,
        path: &std::path::Path,
    ) -> Result<()> {
        if self.epoch != 0 {
            return Err(Error::Config(
                "pretrained weights are loaded before the first epoch".into(),
            ));
        }
        let networks = self.networks.take().expect("networks between steps");
        self.networks = Some(networks.with_backbone(self.config.architecture, state, path)?);
        Ok(())
    }

    pub fn config(&self) -> &TrainConfig {
        &self.config
    }

    /// Report each epoch's accuracy on `val` too (against its labels as given), as the
    /// paper's Clothing1M protocol picks the epoch with the best validation accuracy.
    pub fn validate_on(&mut self, val: Dataset) -> Result<()> {
        let size = self.train.samples.size();
        if val.is_empty() || val.sample_size() != size || val.classes != self.classes {
            return Err(Error::Config(format!(
                "the validation set must hold samples of the training set's {size} values and {} classes",
                self.classes
            )));
        }
        let labels = val.labels.clone();
        let mut left = inputs::KEPT_BYTES - self.train.kept.bytes() - self.test.kept.bytes();
        self.val = Some(PartSet::new(val, &labels, &self.device, &mut left, None));
        Ok(())
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
        self.rule.as_ref()?.selector()
    }

    /// The networks as they are now (inference copies, no autodiff).
    pub fn networks(&self) -> Networks {
        self.networks.as_ref().expect("networks present").valid()
    }

    /// Softmax probabilities `[n * classes]` of the first network on every training
    /// sample, in order, in eval mode (what an audit reads after the last epoch).
    pub async fn train_probabilities(&self) -> Result<Vec<f32>> {
        self.probabilities(&self.train.samples).await
    }

    /// Softmax probabilities `[m * classes]` of the first network on `samples` (laid out
    /// as the training set's), in eval mode: predictions for samples the network never
    /// trained on.
    pub async fn probabilities(&self, samples: &Samples) -> Result<Vec<f32>> {
        let logits = score(
            self.networks().first(),
            Inputs::host(samples),
            self.config.eval_batch_size,
            &self.device,
        );
        read_floats(softmax(logits, 1), "probabilities").await
    }

    /// The training samples `[n * features]` as the networks see them (normalised, in
    /// order): for handing the same data to another tool.
    pub fn train_images(&self) -> Vec<f32> {
        self.train.samples.to_vec()
    }

    /// Run one epoch and return its measurements.
    pub async fn run_epoch(&mut self) -> Result<EpochMetrics> {
        self.run_first_stage().await?;
        let e = self.epoch; // 0-based inside, 1-based in every output
        let (lr, beta_1) = schedule(
            self.config.learning_rate,
            e,
            self.config.epochs,
            self.config.decay_start,
            self.config.lr_steps.as_deref(),
        );

        let started = Instant::now();
        let set = self.epoch_set().await?;
        let trained = self.train_epoch(set, lr, beta_1, e + 1);
        let logits = self.selector().is_some().then(|| {
            score(
                self.networks().first(),
                self.train.inputs(),
                self.config.eval_batch_size,
                &self.device,
            )
        });
        let rule = self.rule.as_mut().expect("the rule is home between epochs");
        let (update, objective) = match (rule.selector_mut(), logits) {
            (Some(selector), Some(logits)) => (
                Some(selector.update(logits, e + 1).await?),
                Some(selector.objective()),
            ),
            _ => (None, None),
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
        let (mut precision, mut recall) =
            label_precision_recall(&counts[1..], self.labels.clean_count());
        if self.config.dataset == DatasetKind::Folder && self.config.noise == NoiseKind::Clean {
            // A folder's labels as given: which are wrong is unknown, so is precision.
            (precision, recall) = (f64::NAN, f64::NAN);
        }
        let network_accuracies = self.test_accuracies().await?;
        let val_accuracy = self.validation_accuracy().await?;
        // A decoded cache that failed a read gave zeros: say so instead of reporting them.
        let parts = [Some(&self.train), Some(&self.test), self.val.as_ref()];
        if let Some(failed) = parts
            .into_iter()
            .flatten()
            .find_map(|p| p.samples.read_error())
        {
            return Err(Error::Config(failed));
        }
        self.epoch += 1;
        let t = self.epoch;
        let (selection_risk, total, regret) = match (update, objective) {
            (Some(update), Some(objective)) => {
                self.total_selection_risk += update.selection_risk;
                let regret = after_round(
                    objective,
                    self.total_selection_risk,
                    update.total_hindsight_risk,
                    (self.train.len, self.k),
                    t,
                );
                (
                    Some(update.selection_risk),
                    Some(self.total_selection_risk),
                    Some(regret),
                )
            }
            _ => (None, None, None),
        };
        Ok(EpochMetrics {
            epoch: t,
            train_loss,
            test_accuracy: network_accuracies.iter().sum::<f64>() / network_accuracies.len() as f64,
            network_accuracies,
            val_accuracy,
            label_precision: precision,
            label_recall: recall,
            selection_risk,
            total_selection_risk: total,
            regret: regret.map(|r| r.regret),
            regret_bound: regret.and_then(|r| r.bound),
            paper_bound: regret.and_then(|r| r.paper_bound),
            epoch_seconds,
            selected: trained.samples,
            learning_rate: lr,
        })
    }
}
