//! How many kernels one training step and one scoring chunk launch on a GPU device, as
//! the epoch runs them (see [`crate::gpu::launches`] for why the count matters).

use super::Trainer;
use crate::Result;
use crate::gpu::launches::count_by_kernel;
use crate::methods::{self, BatchAt};
use crate::optim::schedule;

/// Kernel launches of the two repeated parts of an epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchCounts {
    /// One training batch: gather, forward, the rule's loss, backward, Adam.
    pub training_step: usize,
    /// The training batch's launches by kernel name, most launched first.
    pub training_step_kernels: Vec<(String, usize)>,
    /// One chunk of the scoring pass (eval-mode forward of `eval_batch_size` samples).
    pub scoring_chunk: usize,
    /// The scoring chunk's launches by kernel name, most launched first.
    pub scoring_chunk_kernels: Vec<(String, usize)>,
}

impl Trainer {
    /// Count the launches of the next epoch's first training batch and of one scoring
    /// chunk. The batch really runs (it is the same code as the epoch's), on copies of
    /// the networks and optimiser that are dropped afterwards, so the weights and Adam's
    /// state are unchanged; the batch norms' running statistics, which burn shares
    /// between a network's copies, take the batch's update. So count after the run's
    /// epochs, as `taks bench` does.
    pub async fn count_launches(&mut self) -> Result<LaunchCounts> {
        self.run_first_stage().await?;
        let e = self.epoch;
        let (lr, beta_1) = schedule(
            self.config.learning_rate,
            e,
            self.config.epochs,
            self.config.decay_start,
            self.config.lr_steps.as_deref(),
        );
        let set = self.epoch_set().await?;
        let len = self.config.batch_size.min(set.len());
        let idx = &set[..len];
        let rule = self.rule.take().expect("prepared above");
        let networks = self.networks.clone().expect("networks present");
        let adam = self.adam.clone();
        let at = BatchAt {
            epoch: e + 1,
            batch: 0,
            forget_rate: methods::forget_rate(self.config.forget_rate, e + 1),
        };
        let device = self.device.clone();
        let (_, training_step_kernels) = count_by_kernel(&device, || {
            self.train_batch(rule.as_ref(), networks, idx, at, lr, beta_1)
        });
        let training_step = training_step_kernels.iter().map(|(_, n)| n).sum();
        self.adam = adam;
        self.rule = Some(rule);

        let net = self.networks();
        let chunk = self.config.eval_batch_size.min(self.train.len);
        let x = super::evaluate::upload(&self.train.samples, 0, chunk, &self.device);
        // The scorer is prepared once per pass (its folding is not per chunk).
        let scorer = net.first().scorer();
        let (_, scoring_chunk_kernels) = count_by_kernel(&self.device, || scorer.forward(x));
        let scoring_chunk = scoring_chunk_kernels.iter().map(|(_, n)| n).sum();
        Ok(LaunchCounts {
            training_step,
            training_step_kernels,
            scoring_chunk,
            scoring_chunk_kernels,
        })
    }
}
