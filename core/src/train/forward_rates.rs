//! How fast an epoch's two forward passes run per sample: a training step's (train mode,
//! its autodiff graph recorded, batches of `batch_size`) and the scoring pass's (eval
//! mode, batch norms folded, chunks of `eval_batch_size`).
//!
//! Why: TAkS scores every one of the n training samples each epoch and trains on k of
//! them, so a scoring pass slower per sample than a training step's forward pass is
//! time the method itself does not ask for. On the H100, with burn's eval-mode forward
//! (before the folded batch norm), the CNN scored about 8,000 samples/s against 4,600
//! for whole training steps, each of which is about three passes; the aim is a scoring
//! pass at least as fast per sample as a training step's forward. `taks bench
//! --forward-rates` prints both rates. It is a benchmark's figure: no test times it.

use std::time::Instant;

use burn::tensor::Tensor;

use super::Trainer;
use super::evaluate::score;
use super::inputs::Inputs;
use crate::{Error, Result};

/// Training samples per second through each forward pass, every network of the method
/// included. The training forward is the networks' layers in train mode, as every
/// method's step runs them but one: the MLP's TAkS step (one network, plain
/// cross-entropy), which computes its forward pass by hand without a graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForwardRates {
    /// A training step's forward pass (no loss, backward pass or step).
    pub training: f64,
    /// The scoring pass.
    pub scoring: f64,
}

/// How many training samples each pass is timed on: 64 batches of the paper's 128,
/// enough that the upload and a launch's fixed cost average out, few enough that the
/// three passes of each take seconds, not an epoch's time, on a GPU bench's 50,000
/// images.
const SAMPLES: usize = 8192;

impl Trainer {
    /// Both passes over the first `SAMPLES` (8,192) training samples (all n when fewer),
    /// each run once untimed (compiling and tuning what it meets) and then twice timed,
    /// from the first upload to one read of its last output (a device runs its queue in
    /// order); the faster of the two counts. Call it after the run's epochs: the training
    /// forward passes update the batch norms' running statistics, as a step's do.
    pub async fn forward_rates(&mut self) -> Result<ForwardRates> {
        self.run_first_stage().await?;
        let mut rates = ForwardRates {
            training: 0.0,
            scoring: 0.0,
        };
        for timed in [false, true, true] {
            let training = self.training_forward_rate().await?;
            let scoring = self.scoring_rate().await?;
            if timed {
                rates.training = rates.training.max(training);
                rates.scoring = rates.scoring.max(scoring);
            }
        }
        Ok(rates)
    }

    async fn training_forward_rate(&self) -> Result<f64> {
        let networks = self.networks.clone().expect("networks present");
        let n = self.train.len.min(SAMPLES);
        let batch = self.config.batch_size.clamp(1, n.max(1));
        let start = Instant::now();
        let mut last = None;
        for at in (0..n).step_by(batch) {
            let x = self
                .train
                .inputs()
                .rows(at, batch.min(n - at), &self.device);
            last = networks
                .forward_in(x, self.config.precision)
                .pop()
                .map(|l| l.detach());
        }
        finish(last, n, start).await
    }

    async fn scoring_rate(&self) -> Result<f64> {
        let samples = self.train.samples.clone().truncated(SAMPLES);
        let n = samples.len();
        let start = Instant::now();
        let mut last = None;
        for net in self.networks().iter() {
            last = Some(score(
                net,
                Inputs::host(&samples),
                self.config.eval_batch_size,
                &self.device,
            ));
        }
        finish(last, n, start).await
    }
}

/// `n` samples over the seconds since `start`, once `last` (the pass's last output) is
/// read.
async fn finish(last: Option<Tensor<2>>, n: usize, start: Instant) -> Result<f64> {
    if let Some(logits) = last {
        logits
            .narrow(0, 0, 1)
            .into_data_async()
            .await
            .map_err(|err| Error::Device(format!("reading a forward pass: {err:?}")))?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}
