//! The one loop that runs a trainer's epochs to the end, for every front end that runs
//! whole: `taks train` (its rows, checkpoints and bar), `tune` and `bench`, the audit's
//! probes and its selection run, a rule's first stage. What a front end does around an
//! epoch it says through [`Watch`]; the loop owns the order (the k-set read before the
//! epoch trains, the metrics after it), the history and stopping.
//!
//! Why: each of those used to write its own `while !trainer.is_done()` with its own
//! progress and stopping, so a change to how an epoch is driven had five places to go,
//! and Python would have made a sixth. The page drives epochs one at a time (its lessons
//! pause between them, at JavaScript's pace): it runs this loop with a [`Watch`] that
//! stops after the first.

use super::Trainer;
use crate::metrics::EpochMetrics;

/// Whether [`Trainer::run_to_end`] goes on after an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Train the next epoch, if any is left.
    Go,
    /// Stop here: the trainer keeps its state, and a later call goes on from it.
    Stop,
}

/// What a front end does around each epoch of [`Trainer::run_to_end`]: report progress,
/// write rows and checkpoints, stop early.
pub trait Watch {
    /// The front end's error, which the core's errors convert into.
    type Error: From<crate::Error>;

    /// Whether [`Watch::before`] is to be handed each epoch's k-set (one read from the
    /// device per epoch, so only a front end that keeps it asks).
    fn wants_k_set(&self) -> bool {
        false
    }

    /// Before epoch `epoch` (1-based) trains: the indices of the samples it trains on,
    /// where [`Watch::wants_k_set`] and the method selects.
    fn before(&mut self, _epoch: usize, _k_set: &[u32]) -> Result<(), Self::Error> {
        Ok(())
    }

    /// After each epoch, its metrics the last of `history`: whether to go on.
    fn after(&mut self, trainer: &Trainer, history: &[EpochMetrics]) -> Result<Next, Self::Error>;

    /// What the failure of epoch `epoch` becomes (the command line names the folder that
    /// holds the epochs before it).
    fn failed(&mut self, _epoch: usize, error: crate::Error) -> Self::Error {
        error.into()
    }
}

/// A [`Watch`] that only lets the run go to its end (a front end that reads the history
/// after, as `taks bench` does).
pub struct Quietly;

impl Watch for Quietly {
    type Error = crate::Error;

    fn after(&mut self, _: &Trainer, _: &[EpochMetrics]) -> Result<Next, crate::Error> {
        Ok(Next::Go)
    }
}

/// A [`Watch`] that only looks after each epoch: `f(trainer, history)`.
pub struct After<F>(pub F);

impl<E, F> Watch for After<F>
where
    E: From<crate::Error>,
    F: FnMut(&Trainer, &[EpochMetrics]) -> Result<Next, E>,
{
    type Error = E;

    fn after(&mut self, trainer: &Trainer, history: &[EpochMetrics]) -> Result<Next, E> {
        (self.0)(trainer, history)
    }
}

impl Trainer {
    /// Train the epochs left, each one's metrics pushed onto `history`, `watch` told
    /// before and after each, until the last epoch or until `watch` says [`Next::Stop`].
    pub async fn run_to_end<W: Watch + ?Sized>(
        &mut self,
        history: &mut Vec<EpochMetrics>,
        watch: &mut W,
    ) -> Result<(), W::Error> {
        while !self.is_done() {
            let epoch = self.epoch() + 1;
            if watch.wants_k_set()
                && let Some(selector) = self.selector()
            {
                let k_set = selector.current_indices_host().await?;
                watch.before(epoch, &k_set)?;
            }
            // Boxed: an epoch may run a first stage, which runs a trainer to its end.
            match Box::pin(self.run_epoch()).await {
                Ok(metrics) => history.push(metrics),
                Err(error) => return Err(watch.failed(epoch, error)),
            }
            if watch.after(self, history)? == Next::Stop {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;

    use super::*;
    use crate::data::DatasetKind;
    use crate::methods::Method;
    use crate::noise::NoiseKind;
    use crate::settings::TrainConfig;

    /// A small TAkS run on the bundled digits, on flex.
    fn trainer(epochs: usize) -> Trainer {
        let split = DatasetKind::MnistDigits.load(None).unwrap();
        let mut config = TrainConfig::paper(
            DatasetKind::MnistDigits,
            NoiseKind::Symmetric,
            0.5,
            Method::TAKS,
        );
        config.epochs = epochs;
        config.train_limit = Some(300);
        config.test_limit = Some(100);
        Trainer::new(config, split, &Device::flex()).unwrap()
    }

    /// The loop runs every epoch in order, hands a watch that asks for it each epoch's
    /// k-set before the epoch (the selector's set then, k of n distinct indices, the
    /// second epoch's not the first's), and stops where the watch says, leaving the
    /// trainer where a second call goes on from.
    #[test]
    fn it_runs_to_the_end_hands_each_k_set_first_and_stops_when_told() {
        struct Recorder {
            k_sets: Vec<(usize, Vec<u32>)>,
            stop_after: usize,
        }
        impl Watch for Recorder {
            type Error = crate::Error;
            fn wants_k_set(&self) -> bool {
                true
            }
            fn before(&mut self, epoch: usize, k_set: &[u32]) -> crate::Result<()> {
                self.k_sets.push((epoch, k_set.to_vec()));
                Ok(())
            }
            fn after(
                &mut self,
                trainer: &Trainer,
                history: &[EpochMetrics],
            ) -> crate::Result<Next> {
                assert_eq!(trainer.epoch(), history.len());
                Ok(match history.len() == self.stop_after {
                    true => Next::Stop,
                    false => Next::Go,
                })
            }
        }
        let mut t = trainer(3);
        let (n, k) = (t.train_len(), t.k());
        let first = pollster::block_on(t.selector().unwrap().current_indices_host()).unwrap();
        let mut history = Vec::new();
        let mut watch = Recorder {
            k_sets: Vec::new(),
            stop_after: 2,
        };
        pollster::block_on(t.run_to_end(&mut history, &mut watch)).unwrap();
        assert_eq!((t.epoch(), history.len(), t.is_done()), (2, 2, false));
        let epochs: Vec<usize> = history.iter().map(|m| m.epoch).collect();
        assert_eq!(epochs, [1, 2]);
        assert_eq!(
            watch.k_sets.iter().map(|(e, _)| *e).collect::<Vec<_>>(),
            [1, 2]
        );
        for (_, set) in &watch.k_sets {
            let mut distinct = set.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert!(set.len() == k && distinct.len() == k && set.iter().all(|&i| (i as usize) < n));
        }
        assert_eq!(
            watch.k_sets[0].1, first,
            "epoch 1's k-set, handed before it trains"
        );
        assert_ne!(
            watch.k_sets[0].1, watch.k_sets[1].1,
            "epoch 2 trains on its own k-set"
        );
        // The last epoch, from where it stopped; `After` never asks for k-sets.
        let mut seen = 0;
        let mut rest = After(|_: &Trainer, h: &[EpochMetrics]| {
            seen = h.len();
            Ok::<_, crate::Error>(Next::Go)
        });
        pollster::block_on(t.run_to_end(&mut history, &mut rest)).unwrap();
        assert_eq!(
            (seen, t.is_done(), history.last().unwrap().epoch),
            (3, true, 3)
        );
    }
}
