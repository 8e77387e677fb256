//! One epoch's training: the samples it trains on (the rule's [`EpochSet`]), one pass
//! over them in shuffled batches with the rule's loss and Adam's step, and the sums the
//! epoch's metrics are read from, kept on the device until the epoch ends.

use burn::optim::GradientsParams;
use burn::tensor::{Int, Tensor, TensorData};

use super::Trainer;
use super::evaluate::score;
use super::loss_scale::DeviceLossScale;
use crate::Result;
use crate::methods::{self, BatchAt, EpochSet, Rule};
use crate::nn::Networks;
use crate::ops::mlp_step::MixedStep;
use crate::plan::Place;
use crate::precision::Precision;
use crate::selection::{self, indices_tensor};

impl Trainer {
    /// The indices this epoch trains on, as the method's [`EpochSet`] says, on the host
    /// (where the batches are gathered).
    pub(super) async fn epoch_set(&self) -> Result<Vec<u32>> {
        let rule = self.rule.as_ref().expect("prepared before the first epoch");
        Ok(match rule.epoch_set() {
            EpochSet::All => (0..self.train.len as u32).collect(),
            EpochSet::Given(indices) => {
                crate::read_back::read_indices(indices, "the k-set").await?
            }
            EpochSet::SmallestLoss { keep } => {
                let networks = self.networks();
                let logits = score(
                    networks.first(),
                    self.train.inputs(),
                    self.config.eval_batch_size,
                    &self.device,
                );
                let loss = crate::ops::cross_entropy::per_sample(logits, &self.train.labels);
                let kept = selection::k_smallest_indices(loss, keep).await?;
                crate::read_back::read_indices(kept, "the smallest-loss set").await?
            }
        })
    }

    /// One pass over `set`, shuffled, with the method's batch rule.
    pub(super) fn train_epoch(
        &mut self,
        set: Vec<u32>,
        lr: f64,
        beta_1: f32,
        epoch: usize,
    ) -> Trained {
        let selected = set.len();
        let mut order: Vec<u32> = (0..selected as u32).collect();
        self.shuffle.shuffle(&mut order);
        let order: Vec<u32> = order.iter().map(|&i| set[i as usize]).collect();
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
        let on_cpu = Place::of(&self.device) == Place::Flex;
        let epoch_loop = || {
            let (mut networks, mut loss_sum, mut picks) = (networks, loss_sum, picks);
            for (b, start) in (0..selected).step_by(batch).enumerate() {
                let len = batch.min(selected - start);
                let idx = &order[start..start + len];
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
            let clean = order
                .iter()
                .filter(|&&i| self.labels.is_clean(i as usize))
                .count();
            let clean = zero().add_scalar(clean as f32);
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

    /// One batch of the samples `picked`: forward, the rule's loss, backward, Adam's
    /// step.
    pub(super) fn train_batch(
        &mut self,
        rule: &dyn Rule,
        networks: Networks,
        picked: &[u32],
        at: BatchAt,
        lr: f64,
        beta_1: f32,
    ) -> (Networks, BatchSums) {
        let len = picked.len();
        let idx = indices_tensor(picked, &self.device);
        let precision = self.config.precision;
        let x = self
            .train
            .inputs()
            .batch(picked, &idx, &self.device, precision);
        // The batch's noisy labels from the host copy: an upload, not a gather kernel.
        let noisy = &self.labels.noisy_labels;
        let y: Vec<i32> = picked.iter().map(|&i| noisy[i as usize] as i32).collect();
        let y = Tensor::<1, Int>::from_data(TensorData::new(y, [len]), &self.device);
        // The MLP with plain cross-entropy: gradients by hand, no graph (CPU or GPU), in
        // f32 or, on the GPU, f16 (bf16 takes burn's layers).
        let by_hand = match (networks.first().as_mlp(), precision, &self.loss_scale) {
            (Some(mlp), Precision::F32 | Precision::F16, scaler)
                if networks.len() == 1 && rule.is_mean_cross_entropy() =>
            {
                let adam = &self.adam;
                let low_copy = |w: &Tensor<1>| adam.low_copy(w);
                let mixed = scaler.as_ref().map(|s| MixedStep {
                    scale: s.scale_at(),
                    low_copy: &low_copy,
                });
                mlp.layers().cross_entropy_step(x.clone(), y.clone(), mixed)
            }
            _ => None,
        };
        let (grads, sums, gate) = match by_hand {
            Some(step) => {
                let sums = BatchSums {
                    loss_sum: step.loss_sum,
                    picked: None,
                };
                (step.grads, sums, None)
            }
            None => {
                let step = rule.batch(&networks.forward_in(x, precision), &y, at);
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
                // f16: the loss scaled up for the backward pass (the step by hand scales
                // its logits' gradient itself).
                let loss = match &self.loss_scale {
                    Some(scaler) => step.loss * Tensor::from_inner(scaler.scale()),
                    None => step.loss,
                };
                let grads = GradientsParams::from_grads(loss.backward(), &networks);
                (grads, BatchSums { loss_sum, picked }, gate)
            }
        };
        (self.adam_step(lr, beta_1, networks, grads, gate), sums)
    }

    /// Adam's step with `grads` (and the method's `gate`). In f16 the gradients are
    /// scaled: they are scaled back down first, and no step is taken where they
    /// overflowed; decided on the device where the packed Adam runs, else here.
    fn adam_step(
        &mut self,
        lr: f64,
        beta_1: f32,
        networks: Networks,
        grads: GradientsParams,
        gate: Option<Tensor<1>>,
    ) -> Networks {
        let Some(scaler) = self.loss_scale.as_mut() else {
            return self.adam.update(lr, beta_1, networks, grads, gate);
        };
        let (mut networks, mut grads) = (networks, grads);
        if gate.is_none() {
            let scaling = scaler.scaling(lr);
            match self
                .adam
                .update_scaled(lr, beta_1, networks, grads, scaling)
            {
                Ok(networks) => {
                    scaler.stepped();
                    return networks;
                }
                Err(unstepped) => (networks, grads) = unstepped,
            }
        }
        let (mut host, skipped) = scaler.read_now();
        self.adam.forget_skipped(skipped);
        let finite = super::loss_scale::unscale(&mut grads, &networks, host.scale);
        let applied = host.after(finite);
        *scaler = DeviceLossScale::new(host, &self.device);
        match applied {
            true => self.adam.update(lr, beta_1, networks, grads, gate),
            false => networks,
        }
    }
}

/// What one batch adds to the epoch's sums, on the device: its loss times its size and,
/// when the rule picks samples, per network (clean samples picked, samples picked).
pub(super) struct BatchSums {
    loss_sum: Tensor<1>,
    picked: Option<Vec<(Tensor<1>, Tensor<1>)>>,
}

/// What one epoch's training leaves to read: `[loss sum, clean picked per network...,
/// picked per network...]` on the device, and how many samples it trained on.
pub(super) struct Trained {
    pub(super) scalars: Tensor<1>,
    pub(super) samples: usize,
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
