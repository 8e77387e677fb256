//! Where a training batch and a forward pass's rows come from: a set's samples on the
//! host, gathered and uploaded, or, on a GPU, the set's network inputs kept on the device.
//!
//! Why keep them there: with the samples on the host, every training batch is gathered
//! and standardised on the host and uploaded (a ResNet-18 batch of 128 at 224x224 is 77
//! MB), and every scoring pass uploads all n samples again (614 MB for CIFAR-10's
//! 50,000), while the card waits between kernels. Kept on the device, a batch is one
//! gather kernel (burn's `select`) over the indices the step uploads anyway, and a block
//! of rows is a view.
//!
//! When: on a wgpu device, for a set held in memory (not decoded into a cache file)
//! whose inputs fit one buffer of the adapter and what is left of [`KEPT_BYTES`]; a run's
//! training set asks first, then its test and validation sets. A mixed-precision run's
//! training set is kept in its 16-bit type too (first: its batches are gathered from
//! that copy, converted on the host as the batches were, so a step casts nothing), and
//! in f32 for the scoring pass where room is left. Elsewhere the host path runs: flex
//! reads its own store without a copy, and a set too large for the budget is gathered a
//! batch at a time as before. The values are the same either way (tested below).

use burn::tensor::{DType, Device, FloatDType, Int, Tensor, TensorData};

use crate::data::Samples;
use crate::gpu::bridge::max_buffer_bytes;
use crate::plan::Place;
use crate::precision::Precision;

/// The bytes of network inputs one run keeps on a GPU, its sets together: CIFAR-10's
/// training and test sets (737 MB) and 2,000 ResNet inputs at 224x224 (1.2 GB) fit,
/// beside the networks' own memory on any card that trains them.
pub(super) const KEPT_BYTES: usize = 2 << 30;

/// About how many bytes of f32 inputs one upload carries (while keeping a set, and per
/// block of a scoring pass from the host).
pub(super) const BLOCK_BYTES: usize = 64 << 20;

/// A set's inputs kept on the device ([`keep`]): in f32, and in a mixed-precision
/// step's 16-bit type.
#[derive(Default)]
pub(super) struct Kept {
    pub f32: Option<Tensor<2>>,
    pub low: Option<Tensor<2>>,
}

impl Kept {
    /// The bytes they take on the device.
    pub fn bytes(&self) -> usize {
        let size = |t: &Option<Tensor<2>>, bytes: usize| {
            t.as_ref().map_or(0, |t| t.shape().num_elements() * bytes)
        };
        size(&self.f32, 4) + size(&self.low, 2)
    }
}

/// A set's network inputs: its samples on the host and, where kept, the same inputs on
/// the device ([`keep`]).
#[derive(Clone, Copy)]
pub(super) struct Inputs<'a> {
    pub samples: &'a Samples,
    pub kept: Option<&'a Kept>,
}

impl<'a> Inputs<'a> {
    /// Samples with no inputs kept on a device.
    pub fn host(samples: &'a Samples) -> Self {
        Inputs {
            samples,
            kept: None,
        }
    }

    /// Positions `start..start + len` as f32 inputs on `device`: a view of the kept
    /// inputs, or gathered on the host and uploaded.
    pub fn rows(self, start: usize, len: usize, device: &Device) -> Tensor<2> {
        match self.kept.and_then(|k| k.f32.as_ref()) {
            Some(kept) => kept.clone().narrow(0, start, len),
            None => on_device(self.samples.range(start, len), self.samples.size(), device),
        }
    }

    /// A training batch, the positions `picked` (`idx`: the same on `device`), in the
    /// step's type: gathered from the inputs kept on the device in that type, else on
    /// the host. On flex, f32 samples used as stored are selected by flex itself;
    /// everything else from the host is gathered there and uploaded, a mixed-precision
    /// step's batch converted to its 16-bit type on the way (half the bytes, and no cast
    /// on the device).
    pub fn batch(
        self,
        picked: &[u32],
        idx: &Tensor<1, Int>,
        device: &Device,
        precision: Precision,
    ) -> Tensor<2> {
        let kept = self.kept.and_then(|k| match precision.low() {
            Some(_) => k.low.as_ref(),
            None => k.f32.as_ref(),
        });
        if let Some(kept) = kept {
            return kept.clone().select(0, idx.clone());
        }
        if *device == Device::flex()
            && precision.is_f32()
            && let Some(x) = self.samples.flex_select(idx.clone())
        {
            return x;
        }
        let dtype = precision.low().unwrap_or(FloatDType::F32);
        on_device_as(
            self.samples.gather(picked),
            self.samples.size(),
            device,
            dtype,
        )
    }
}

/// The inputs of `samples` kept on `device` (see the module doc): in `low`, a
/// mixed-precision step's 16-bit type, first where given, then in f32; each only where
/// it fits. `left` is what remains of [`KEPT_BYTES`]; what is kept comes off it.
pub(super) fn keep(
    samples: &Samples,
    device: &Device,
    left: &mut usize,
    low: Option<FloatDType>,
) -> Kept {
    if Place::of(device) != Place::Wgpu || !samples.in_memory() || samples.is_empty() {
        return Kept::default();
    }
    let Some(largest) = max_buffer_bytes(&Tensor::<1>::zeros([1], device)) else {
        return Kept::default();
    };
    let mut one = |dtype: FloatDType| {
        let value_bytes = DType::from(dtype).size();
        let bytes = samples.len() * samples.size() * value_bytes;
        if bytes > largest.min(*left) {
            return None;
        }
        *left -= bytes;
        let rows = (BLOCK_BYTES / (samples.size() * value_bytes)).max(1);
        Some(upload_in_blocks(samples, device, rows, dtype))
    };
    let low = low.and_then(&mut one);
    Kept {
        low,
        f32: one(FloatDType::F32),
    }
}

/// Every input of `samples` on `device` in `dtype` (converted on the host), uploaded
/// `rows` samples at a time into one tensor (the host never holds more than a block).
fn upload_in_blocks(
    samples: &Samples,
    device: &Device,
    rows: usize,
    dtype: FloatDType,
) -> Tensor<2> {
    let (n, size) = (samples.len(), samples.size());
    let mut kept = Tensor::<2>::empty([n, size], (device, DType::from(dtype)));
    for start in (0..n).step_by(rows) {
        let len = rows.min(n - start);
        let block = on_device_as(samples.range(start, len), size, device, dtype);
        kept = kept.slice_assign([start..start + len, 0..size], block);
    }
    kept
}

/// Whole samples of `size` values as a `[rows, size]` tensor on `device`.
pub(super) fn on_device(values: Vec<f32>, size: usize, device: &Device) -> Tensor<2> {
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
    /// rounding of the stored one, in the order picked; an f32 step's arrives as
    /// stored; and the batch gathered from inputs kept on the device is the host's,
    /// bit for bit, in both types.
    #[test]
    fn a_batch_is_the_same_from_the_host_and_from_the_device() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        // Values that f16 rounds (1/3, 0.1, and 1e-6, below its smallest normal).
        let values = vec![1.0 / 3.0, 0.1, -2.5, 7.0, 1.0e-6, 42.0];
        let samples = Samples::from_values(values.clone(), 2);
        let picked = [2u32, 0];
        let idx = crate::selection::indices_tensor(&picked, &device);
        let from_host = Inputs::host(&samples);
        let x16 = from_host.batch(&picked, &idx, &device, Precision::F16);
        assert_eq!(x16.dtype(), DType::F16);
        let x32 = from_host.batch(&picked, &idx, &device, Precision::F32);
        assert_eq!(x32.dtype(), DType::F32);
        let stored = [1.0e-6, 42.0, 1.0 / 3.0, 0.1];
        assert_eq!(host(x32.clone()), stored);
        let rounded: Vec<f32> = stored
            .iter()
            .map(|&v| burn::tensor::f16::from_f32(v).to_f32())
            .collect();
        assert_ne!(rounded, stored, "f16 rounds these values");
        assert_eq!(host(x16.clone().cast(FloatDType::F32)), rounded);

        let mut left = KEPT_BYTES;
        let kept = keep(&samples, &device, &mut left, Some(FloatDType::F16));
        assert_eq!(
            left,
            KEPT_BYTES - 24 - 12,
            "kept in f32 and in f16 on lavapipe"
        );
        assert_eq!(kept.bytes(), 36);
        let on_device = Inputs {
            samples: &samples,
            kept: Some(&kept),
        };
        let k32 = on_device.batch(&picked, &idx, &device, Precision::F32);
        assert_eq!(host(k32), stored);
        // The f16 batch from the f16 copy: gathered, nothing cast.
        let (k16, kernels) = crate::gpu::launches::count_by_kernel(&device, || {
            on_device.batch(&picked, &idx, &device, Precision::F16)
        });
        assert_eq!(k16.dtype(), DType::F16);
        assert!(
            !kernels.iter().any(|(k, _)| k.contains("Cast")),
            "{kernels:?}"
        );
        assert_eq!(host(k16.cast(FloatDType::F32)), rounded);
        assert_eq!(host(on_device.rows(1, 2, &device)), values[2..]);
    }

    /// What is kept: a set on a wgpu device within the budget, standardised as the host
    /// gives it, block by block; nothing on flex, nothing over what is left of the budget.
    #[test]
    fn a_set_is_kept_on_a_gpu_within_the_budget() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        // Bytes, standardised as they leave: what the device keeps is the host's inputs.
        let (size, n) = (3 * 4 * 4, 23);
        let bytes: Vec<u8> = (0..n * size).map(|i| (i * 7 % 251) as u8).collect();
        let samples = Samples::from_bytes(bytes, size);
        let samples = samples.clone().standardised(samples.fit_normalisation(3));
        let blocks = upload_in_blocks(&samples, &device, 10, FloatDType::F32);
        assert_eq!(
            host(blocks),
            samples.to_vec(),
            "three blocks, each in its place"
        );
        let mut left = KEPT_BYTES;
        let kept = keep(&samples, &device, &mut left, None);
        assert!(kept.low.is_none());
        assert_eq!(host(kept.f32.expect("kept on lavapipe")), samples.to_vec());
        assert_eq!(left, KEPT_BYTES - n * size * 4);
        // Room for the f16 copy, not for the f32 one beside it: the f16 one is kept.
        let mut room = n * size * 4 - 1;
        let kept = keep(&samples, &device, &mut room, Some(FloatDType::F16));
        assert!(kept.f32.is_none() && kept.low.is_some());
        assert_eq!(room, n * size * 4 - 1 - n * size * 2);
        let mut too_little = n * size * 2 - 1;
        assert_eq!(
            keep(&samples, &device, &mut too_little, Some(FloatDType::F16)).bytes(),
            0
        );
        assert_eq!(
            too_little,
            n * size * 2 - 1,
            "nothing taken when nothing is kept"
        );
        let mut plenty = KEPT_BYTES;
        assert_eq!(
            keep(&samples, &Device::flex(), &mut plenty, None).bytes(),
            0
        );
    }
}
