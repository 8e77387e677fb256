//! How many kernels one training step and one scoring chunk launch on a GPU device, as
//! the epoch runs them (see [`crate::gpu::launches`] for why the count matters), and how
//! long each op of them runs there ([`crate::gpu::clock`]).

use burn::tensor::Device;

use super::Trainer;
use crate::Result;
use crate::gpu::clock::{Clocked, clock};
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

/// The per-op GPU clock of the two repeated parts of an epoch ([`crate::gpu::clock`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OpClocks {
    /// One training batch.
    pub training_step: Clocked,
    /// One chunk of the scoring pass.
    pub scoring_chunk: Clocked,
}

impl Trainer {
    /// Count the launches of the next epoch's first training batch and of one scoring
    /// chunk ([`Trainer::measure_parts`]).
    pub async fn count_launches(&mut self) -> Result<LaunchCounts> {
        let [training, scoring] = self
            .measure_parts(|device, work| count_by_kernel(device, work).1)
            .await?;
        Ok(LaunchCounts {
            training_step: training.iter().map(|(_, n)| n).sum(),
            training_step_kernels: training,
            scoring_chunk: scoring.iter().map(|(_, n)| n).sum(),
            scoring_chunk_kernels: scoring,
        })
    }

    /// Time every kernel of the next epoch's first training batch and of one scoring
    /// chunk by op ([`Trainer::measure_parts`]). Run it twice: the first run meets
    /// kernels not compiled yet (a new batch size, the scoring chunk's).
    pub async fn clock_ops(&mut self) -> Result<OpClocks> {
        let [training_step, scoring_chunk] = self
            .measure_parts(|device, work| clock(device, work).1)
            .await?;
        Ok(OpClocks {
            training_step,
            scoring_chunk,
        })
    }

    /// `measure` the next epoch's first training batch, then one scoring chunk. The batch
    /// really runs (it is the same code as the epoch's), on copies of the networks and
    /// optimiser that are dropped afterwards, so the weights and Adam's state are
    /// unchanged; the batch norms' running statistics, which burn shares between a
    /// network's copies, take the batch's update. So measure after the run's epochs, as
    /// `taks bench` does.
    async fn measure_parts<M>(
        &mut self,
        mut measure: impl FnMut(&Device, &mut dyn FnMut()) -> M,
    ) -> Result<[M; 2]> {
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
        let mut networks = Some(self.networks.clone().expect("networks present"));
        let adam = self.adam.clone();
        let at = BatchAt {
            epoch: e + 1,
            batch: 0,
            forget_rate: methods::forget_rate(self.config.forget_rate, e + 1),
        };
        let device = self.device.clone();
        let training = measure(&device, &mut || {
            if let Some(networks) = networks.take() {
                let _ = self.train_batch(rule.as_ref(), networks, idx, at, lr, beta_1);
            }
        });
        self.adam = adam;
        self.rule = Some(rule);

        let net = self.networks();
        let chunk = self.config.eval_batch_size.min(self.train.len);
        let mut x = Some(self.train.inputs().rows(0, chunk, &self.device));
        // The scorer is prepared once per pass (its folding is not per chunk).
        let scorer = net.first().scorer();
        let scoring = measure(&self.device, &mut || {
            if let Some(x) = x.take() {
                scorer.forward(x);
            }
        });
        Ok([training, scoring])
    }
}
