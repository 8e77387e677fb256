//! A rule's first stage, run before epoch 1 (F-correction's: train Standard on the noisy
//! training set less a hold-out, keep the epoch most accurate on the hold-out's noisy
//! labels, and fit the rule to that network's softmax over the whole training set).

use burn::tensor::activation::softmax;
use web_time::Instant;

use super::{After, Next, Trainer, evaluate::score};
use crate::Result;
use crate::methods::Method;
use crate::metrics::EpochMetrics;
use crate::read_back::read_floats;

/// What a first stage found (F-correction's: see [`crate::methods::f_correction`]).
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

impl Trainer {
    /// Whether [`Trainer::run_first_stage`] still has work to do (the rule's first stage).
    pub fn needs_preparation(&self) -> bool {
        self.stage_one.is_some()
    }

    /// What the first stage found, once it ran.
    pub fn preparation(&self) -> Option<&Preparation> {
        self.preparation.as_ref()
    }

    /// Run what must happen before the first epoch: the rule's first stage, if it has
    /// one ([`crate::methods::FirstStage`]: F-correction trains Standard on 80% of the noisy
    /// training set, keeps the epoch with the best noisy validation accuracy and
    /// estimates T). [`Trainer::run_epoch`] calls it when needed; call it first to report it
    /// separately.
    pub async fn run_first_stage(&mut self) -> Result<()> {
        let Some((split, labels)) = self.stage_one.take() else {
            return Ok(());
        };
        let started = Instant::now();
        let mut config = self.config.clone();
        config.method = Method::STANDARD;
        let mut stage = Trainer::with_labels(config, split, labels, &self.device)?;
        let (mut best_accuracy, mut best_epoch, mut best) = (-1.0, 0, stage.networks());
        let mut keep_the_best = After(|stage: &Trainer, history: &[EpochMetrics]| {
            let m = history.last().expect("an epoch just ended");
            // `<=` as the authors' code: a later epoch wins a tie.
            if best_accuracy <= m.test_accuracy {
                (best_accuracy, best_epoch, best) = (m.test_accuracy, m.epoch, stage.networks());
            }
            Ok::<_, crate::Error>(Next::Go)
        });
        // Boxed: a Trainer's epoch awaiting another Trainer's is a recursive future.
        Box::pin(stage.run_to_end(&mut Vec::new(), &mut keep_the_best)).await?;
        let logits = score(
            best.first(),
            self.train.inputs(),
            self.config.eval_batch_size,
            &self.device,
        );
        let probabilities = read_floats(softmax(logits, 1), "stage-1 probabilities").await?;
        let rule = self.rule.as_mut().expect("the rule is home between epochs");
        let transition = rule.fit_first_stage(&probabilities)?;
        self.preparation = Some(Preparation {
            transition,
            best_epoch,
            best_validation_accuracy: best_accuracy,
            seconds: started.elapsed().as_secs_f64(),
        });
        Ok(())
    }
}
