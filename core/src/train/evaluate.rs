//! Forward passes without training: the scoring pass over all n training samples (for
//! the selector, ITLM's set and F-correction's estimate) and each network's accuracy on
//! the test set (and the validation set, where a run has one), which is not part of the
//! timed epoch.

use burn::tensor::{DType, Device, FloatDType, Int, Tensor, TensorData};

use super::{PartSet, Trainer};
use crate::data::Samples;
use crate::nn::{Classifier, Scorer};
use crate::precision::Precision;
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
            let x = upload(&set.samples, start, len, &self.device);
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

/// Logits `[n, C]` of every sample of `samples`, in order, in eval mode, in chunks. The
/// MLP on the CPU scores chunks in parallel without tensor dispatch (same bits), each
/// thread gathering its own chunk's inputs. Elsewhere the samples go to the device a
/// block of whole chunks at a time, about [`BLOCK_BYTES`] of f32, and the network's
/// [`Scorer`] (batch norm folded once for the whole pass on a GPU) runs each chunk.
/// Either way the pass never holds all n inputs at once.
pub(super) fn score(
    net: &Classifier,
    samples: &Samples,
    chunk: usize,
    device: &Device,
) -> Tensor<2> {
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
                &upload(samples, start, block.min(n - start), device),
                chunk,
            )
        })
        .collect();
    Tensor::cat(parts, 0)
}

/// About how many bytes of network inputs one scoring block uploads.
const BLOCK_BYTES: usize = 64 << 20;

fn score_block(net: &Scorer, images: &Tensor<2>, chunk: usize) -> Tensor<2> {
    let n = images.dims()[0];
    let parts: Vec<Tensor<2>> = (0..n)
        .step_by(chunk)
        .map(|start| net.forward(images.clone().narrow(0, start, chunk.min(n - start))))
        .collect();
    Tensor::cat(parts, 0)
}

/// Positions `start..start + len` of `samples` as network inputs on `device`.
pub(super) fn upload(samples: &Samples, start: usize, len: usize, device: &Device) -> Tensor<2> {
    on_device(samples.range(start, len), samples.size(), device)
}

/// The network inputs of `samples` at positions `picked` (a training batch; `idx` the
/// same positions on `device`), on `device`, in the step's type. On flex, f32 samples
/// used as stored are selected by flex itself; everything else is gathered on the host
/// and uploaded, a mixed-precision step's batch converted to its 16-bit type on the way
/// (half the bytes, and no cast on the device).
pub(super) fn inputs(
    samples: &Samples,
    picked: &[u32],
    idx: &Tensor<1, Int>,
    device: &Device,
    precision: Precision,
) -> Tensor<2> {
    if *device == Device::flex()
        && precision.is_f32()
        && let Some(x) = samples.flex_select(idx.clone())
    {
        return x;
    }
    let dtype = precision.low().unwrap_or(FloatDType::F32);
    on_device_as(samples.gather(picked), samples.size(), device, dtype)
}

/// Whole samples of `size` values as a `[rows, size]` tensor on `device`.
fn on_device(values: Vec<f32>, size: usize, device: &Device) -> Tensor<2> {
    on_device_as(values, size, device, FloatDType::F32)
}

/// The same in `dtype`, converted on the host (burn's `TensorData::convert_dtype`).
fn on_device_as(values: Vec<f32>, size: usize, device: &Device, dtype: FloatDType) -> Tensor<2> {
    let rows = values.len() / size;
    let data = TensorData::new(values, [rows, size]);
    Tensor::from_data(data, (device, DType::from(dtype)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::host;

    /// On lavapipe: a mixed-precision step's batch arrives in f16, each value f16's
    /// rounding of the stored one (the device's cast gives the same), in the order
    /// picked; an f32 step's arrives as stored.
    #[test]
    fn an_f16_batch_is_uploaded_in_f16() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        // Values that f16 rounds (1/3, 0.1, and 1e-6, below its smallest normal).
        let values = vec![1.0 / 3.0, 0.1, -2.5, 7.0, 1.0e-6, 42.0];
        let samples = Samples::from_values(values.clone(), 2);
        let picked = [2u32, 0];
        let idx = crate::selection::indices_tensor(&picked, &device);
        let x16 = inputs(&samples, &picked, &idx, &device, Precision::F16);
        assert_eq!(x16.dtype(), DType::F16);
        let x32 = inputs(&samples, &picked, &idx, &device, Precision::F32);
        assert_eq!(x32.dtype(), DType::F32);
        let stored = [1.0e-6, 42.0, 1.0 / 3.0, 0.1];
        assert_eq!(host(x32.clone()), stored);
        let rounded: Vec<f32> = stored
            .iter()
            .map(|&v| burn::tensor::f16::from_f32(v).to_f32())
            .collect();
        assert_ne!(rounded, stored, "f16 rounds these values");
        assert_eq!(host(x16.clone().cast(FloatDType::F32)), rounded);
        assert_eq!(
            host(x16.cast(FloatDType::F32)),
            host(x32.cast(FloatDType::F16).cast(FloatDType::F32))
        );
    }
}
