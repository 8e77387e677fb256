//! Forward passes without training: the scoring pass over all n training samples (for
//! the selector, ITLM's set and F-correction's estimate) and each network's accuracy on
//! the test set (and the validation set, where a run has one), which is not part of the
//! timed epoch.

use burn::tensor::{Device, Int, Tensor};

use super::inputs::{BLOCK_BYTES, Inputs, on_device};
use super::{PartSet, Trainer};
use crate::nn::{Classifier, Scorer};
use crate::{Error, Result};

impl Trainer {
    /// Each network's accuracy on the test set (not part of the timed epoch).
    pub(super) async fn test_accuracies(&self) -> Result<Vec<f64>> {
        self.accuracies(&self.test, "test").await
    }

    /// The networks' mean accuracy on the validation set, if the run has one.
    pub(super) async fn validation_accuracy(&self) -> Result<Option<f64>> {
        match &self.val {
            None => Ok(None),
            Some(val) => {
                let each = self.accuracies(val, "validation").await?;
                Ok(Some(each.iter().sum::<f64>() / each.len() as f64))
            }
        }
    }

    async fn accuracies(&self, set: &PartSet, what: &str) -> Result<Vec<f64>> {
        let networks = self.networks();
        let chunk = self.config.eval_batch_size;
        let mut correct: Vec<Tensor<1, Int>> = networks
            .iter()
            .map(|_| Tensor::zeros([1], &self.device))
            .collect();
        let scorers: Vec<Scorer> = networks.iter().map(Classifier::scorer).collect();
        for start in (0..set.len).step_by(chunk) {
            let len = chunk.min(set.len - start);
            let x = set.inputs().rows(start, len, &self.device);
            let truth = set.labels.clone().narrow(0, start, len);
            for (c, net) in correct.iter_mut().zip(&scorers) {
                let predicted = net.forward(x.clone()).argmax(1).reshape([len]);
                *c = c.clone() + predicted.equal(truth.clone()).int().sum();
            }
        }
        let correct = Tensor::cat(correct, 0)
            .into_data_async()
            .await
            .map_err(|err| Error::Device(format!("reading {what} accuracy: {err:?}")))?;
        Ok(correct
            .iter::<i64>()
            .map(|c| c as f64 / set.len as f64)
            .collect())
    }
}

/// Logits `[n, C]` of every sample of `inputs`, in order, in eval mode, in chunks. The
/// MLP on the CPU scores chunks in parallel without tensor dispatch (same bits), each
/// thread gathering its own chunk's inputs. Elsewhere a block of whole chunks at a time,
/// about [`BLOCK_BYTES`] of f32, is a view of the inputs kept on the device or goes
/// there from the host, and the network's [`Scorer`] (batch norm folded once for the
/// whole pass on a GPU) runs each chunk. From the host the pass never holds all n
/// inputs at once.
pub(super) fn score(
    net: &Classifier,
    inputs: Inputs<'_>,
    chunk: usize,
    device: &Device,
) -> Tensor<2> {
    let samples = inputs.samples;
    let n = samples.len();
    let size = samples.size();
    let chunk_inputs = |start: usize, len: usize| {
        samples
            .flex_rows(start, len)
            .unwrap_or_else(|| on_device(samples.chunk(start, len), size, device))
    };
    if let Some(logits) = net
        .as_mlp()
        .and_then(|m| m.layers().cpu_logits_of(n, chunk, chunk_inputs))
    {
        return logits;
    }
    let per_chunk = chunk * size * 4;
    let block = chunk * (BLOCK_BYTES / per_chunk.max(1)).max(1);
    let scorer = net.scorer();
    let parts: Vec<Tensor<2>> = (0..n)
        .step_by(block)
        .map(|start| {
            score_block(
                &scorer,
                &inputs.rows(start, block.min(n - start), device),
                chunk,
            )
        })
        .collect();
    Tensor::cat(parts, 0)
}

fn score_block(net: &Scorer, images: &Tensor<2>, chunk: usize) -> Tensor<2> {
    let n = images.dims()[0];
    let parts: Vec<Tensor<2>> = (0..n)
        .step_by(chunk)
        .map(|start| net.forward(images.clone().narrow(0, start, chunk.min(n - start))))
        .collect();
    Tensor::cat(parts, 0)
}
