//! Forward passes without training: the scoring pass over all n training samples (for
//! the selector, ITLM's set and F-correction's estimate) and each network's accuracy on
//! the test set (and the validation set, where a run has one), which is not part of the
//! timed epoch.

use burn::tensor::{Int, Tensor};

use super::{DeviceSet, Trainer};
use crate::model::Classifier;
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

    async fn accuracies(&self, set: &DeviceSet, what: &str) -> Result<Vec<f64>> {
        let networks = self.networks();
        let chunk = self.config.eval_batch_size;
        let mut correct = Vec::new();
        for net in networks.iter() {
            let mut c = Tensor::<1, Int>::zeros([1], &self.device);
            for start in (0..set.len).step_by(chunk) {
                let len = chunk.min(set.len - start);
                let logits = net.forward(set.images.clone().narrow(0, start, len));
                let predicted = logits.argmax(1).reshape([len]);
                let truth = set.labels.clone().narrow(0, start, len);
                c = c + predicted.equal(truth).int().sum();
            }
            correct.push(c);
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

/// Logits `[n, C]` of every sample of `images`, in order, in eval mode, in chunks (for
/// the MLP on the CPU, chunks in parallel and without tensor dispatch: same bits).
pub(super) fn score(net: &Classifier, images: &Tensor<2>, chunk: usize) -> Tensor<2> {
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
