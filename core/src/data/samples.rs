//! The samples of a dataset part, held on the host once, in the form they were read,
//! and turned into network inputs a batch at a time.
//!
//! Why: images are bytes. A million 28x28 grey images are 784 MB as the bytes a decoder
//! gives, 3.1 GB as f32, and the f32 copy used to be made more than once (the audit's
//! folds, the device's own copy). Here the bytes stay bytes; a batch is scaled to [0, 1]
//! and standardised per channel as it is gathered (`(p / 255 - mean) / std`, the same f32
//! operations a whole-set pass did, so every value is the same bit for bit). Tables and
//! embeddings are f32 to begin with and stay so, standardised per column the same lazy
//! way. A [`Samples`] is a shared store plus, optionally, the rows of it this view holds:
//! a fold, a holdout or a check slice is a list of row numbers, not a copy.
//!
//! The store's bytes are in memory, or in a decoded cache file on disk
//! ([`crate::data::cache`]) when they exceed the memory budget, read a batch at a time:
//! the file's pages are the kernel's page cache, not the process's own memory.

use std::sync::Arc;

use burn::backend::flex::FlexTensor;
use burn::tensor::{Int, Tensor, TensorData};

use super::normalisation::Normalisation;
use crate::ops::flex_buffers;

/// Read-only bytes: owned, or a file read as needed.
pub trait ByteSource: std::fmt::Debug + Send + Sync {
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copy bytes `offset..offset + out.len()` into `out`. A source that can fail (a
    /// file) fills `out` with zeros, keeps the first error for [`ByteSource::error`] and
    /// returns; the training loop checks after every epoch.
    fn read_at(&self, offset: usize, out: &mut [u8]);

    /// The bytes themselves, when they are in memory.
    fn in_memory(&self) -> Option<&[u8]> {
        None
    }

    /// The first read that failed, if one did.
    fn error(&self) -> Option<String> {
        None
    }
}

impl ByteSource for Vec<u8> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn read_at(&self, offset: usize, out: &mut [u8]) {
        out.copy_from_slice(&self[offset..offset + out.len()]);
    }

    fn in_memory(&self) -> Option<&[u8]> {
        Some(self)
    }
}

#[derive(Debug)]
enum Store {
    /// f32 values as read (tables, embeddings, the built-in IDX sets), `[rows, size]`,
    /// held as a flex tensor: the CPU's scoring pass reads chunks of it as views,
    /// copying nothing (see [`Samples::flex_rows`]).
    Values(FlexTensor),
    /// Bytes [C, H, W] per sample, each a pixel in 0..=255.
    Bytes(Box<dyn ByteSource>),
}

/// Samples of `size` values each; see the module doc.
#[derive(Debug, Clone)]
pub struct Samples {
    store: Arc<Store>,
    size: usize,
    /// The rows of the store this view holds, in order; `None`: all of them.
    rows: Option<Arc<[u32]>>,
    /// Applied as values leave: `(x - mean) / std` per group of the sample.
    normalisation: Option<Arc<Normalisation>>,
    /// For bytes: each group's 256 possible outputs, `(p / 255 - mean) / std` computed
    /// once with the same f32 operations, so gathering is a table lookup.
    table: Option<Arc<[f32]>>,
}

impl Samples {
    /// f32 values, `size` per sample, used as they are.
    pub fn from_values(values: Vec<f32>, size: usize) -> Self {
        assert!(
            size > 0 && values.len().is_multiple_of(size),
            "whole samples of {size} values"
        );
        let rows = values.len() / size;
        let tensor = FlexTensor::from_data(TensorData::new(values, [rows, size]));
        Self::new(Store::Values(tensor), size)
    }

    /// Pixel bytes, `size` per sample, scaled to [0, 1] as they are used.
    pub fn from_bytes(bytes: impl ByteSource + 'static, size: usize) -> Self {
        Self::new(Store::Bytes(Box::new(bytes)), size)
    }

    fn new(store: Store, size: usize) -> Self {
        assert!(size > 0, "a sample holds at least one value");
        Samples {
            store: Arc::new(store),
            size,
            rows: None,
            normalisation: None,
            table: None,
        }
        .with_table()
    }

    /// The lookup table of a bytes store under the current normalisation.
    fn with_table(mut self) -> Self {
        if let Store::Bytes(_) = &*self.store {
            let n = self.normalisation.as_deref();
            let groups = n.map_or(1, |n| n.mean.len());
            let table: Vec<f32> = (0..groups)
                .flat_map(|g| {
                    (0..=255u8).map(move |p| {
                        let v = p as f32 / 255.0;
                        n.map_or(v, |n| (v - n.mean[g]) / n.std[g])
                    })
                })
                .collect();
            self.table = Some(table.into());
        }
        self
    }

    /// Number of samples in this view.
    pub fn len(&self) -> usize {
        match &self.rows {
            Some(rows) => rows.len(),
            None => self.stored() / self.size,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values per sample.
    pub fn size(&self) -> usize {
        self.size
    }

    fn stored(&self) -> usize {
        match &*self.store {
            Store::Values(v) => stored_values(v).len(),
            Store::Bytes(b) => b.len(),
        }
    }

    /// The first failed read of a file-backed store ([`ByteSource::error`]).
    pub fn read_error(&self) -> Option<String> {
        match &*self.store {
            Store::Bytes(b) => b.error(),
            Store::Values(_) => None,
        }
    }

    /// Whether the store is in memory (values, or bytes held in memory), not read from
    /// a file as needed.
    pub fn in_memory(&self) -> bool {
        match &*self.store {
            Store::Values(_) => true,
            Store::Bytes(source) => source.in_memory().is_some(),
        }
    }

    /// Whether the store holds image bytes (rather than f32 values).
    pub fn is_bytes(&self) -> bool {
        matches!(&*self.store, Store::Bytes(_))
    }

    /// The same samples, standardised with `normalisation` on the way out (replacing any
    /// earlier one): fitted on a training part, applied to its test and validation parts.
    pub fn standardised(mut self, normalisation: Normalisation) -> Self {
        self.normalisation = Some(Arc::new(normalisation));
        self.with_table()
    }

    /// The per-group mean and standard deviation of this view's values before any
    /// standardisation (see [`Normalisation::fit`]).
    pub fn fit_normalisation(&self, groups: usize) -> Normalisation {
        let mut raw = vec![0f32; self.size];
        let mut moments = super::normalisation::Moments::new(self.size, groups);
        for i in 0..self.len() {
            self.raw_into(self.row(i), &mut raw);
            moments.add(&raw);
        }
        moments.finish()
    }

    /// Row of the store that position `i` of this view is.
    fn row(&self, i: usize) -> usize {
        match &self.rows {
            Some(rows) => rows[i] as usize,
            None => i,
        }
    }

    /// The values of store row `row` before standardisation.
    fn raw_into(&self, row: usize, out: &mut [f32]) {
        let span = row * self.size..(row + 1) * self.size;
        match &*self.store {
            Store::Values(v) => out.copy_from_slice(&stored_values(v)[span]),
            Store::Bytes(b) => {
                let mut pixels = vec![0u8; self.size];
                b.read_at(span.start, &mut pixels);
                for (o, &p) in out.iter_mut().zip(&pixels) {
                    *o = p as f32 / 255.0;
                }
            }
        }
    }

    /// Write the network inputs of `rows` consecutive store rows from `first` into `out`;
    /// `scratch` holds their bytes when they come from a file.
    fn inputs_into(&self, first: usize, rows: usize, out: &mut [f32], scratch: &mut Vec<u8>) {
        let span = first * self.size..(first + rows) * self.size;
        match (&*self.store, &self.table) {
            (Store::Bytes(b), Some(table)) => {
                let pixels = match b.in_memory() {
                    Some(all) => &all[span],
                    None => {
                        scratch.resize(span.len(), 0);
                        b.read_at(span.start, scratch);
                        &scratch[..]
                    }
                };
                let groups = table.len() / 256;
                let per_group = self.size / groups;
                for (g, (out, pixels)) in out
                    .chunks_exact_mut(per_group)
                    .zip(pixels.chunks_exact(per_group))
                    .enumerate()
                {
                    let table = &table[(g % groups) * 256..][..256];
                    for (o, &p) in out.iter_mut().zip(pixels) {
                        *o = table[p as usize];
                    }
                }
            }
            _ => {
                for (j, sample) in out.chunks_exact_mut(self.size).enumerate() {
                    self.raw_into(first + j, sample);
                    if let Some(n) = &self.normalisation {
                        n.apply(sample, self.size);
                    }
                }
            }
        }
    }

    /// Append the network inputs of positions `picked` of this view to `out`. f32
    /// values are appended as they are and standardised in place, never written twice
    /// (a training batch is gathered this way every step).
    pub fn gather_into(&self, picked: impl IntoIterator<Item = usize>, out: &mut Vec<f32>) {
        let first = out.len();
        match &*self.store {
            Store::Values(v) => {
                let values = stored_values(v);
                for i in picked {
                    let row = self.row(i);
                    out.extend_from_slice(&values[row * self.size..(row + 1) * self.size]);
                }
                if let Some(n) = &self.normalisation {
                    n.apply(&mut out[first..], self.size);
                }
            }
            Store::Bytes(_) => {
                let mut scratch = Vec::new();
                for i in picked {
                    let start = out.len();
                    out.resize(start + self.size, 0.0);
                    self.inputs_into(self.row(i), 1, &mut out[start..], &mut scratch);
                }
            }
        }
    }

    /// The network inputs of positions `picked`, `[picked.len() * size]`.
    pub fn gather(&self, picked: &[u32]) -> Vec<f32> {
        let mut out = Vec::with_capacity(picked.len() * self.size);
        self.gather_into(picked.iter().map(|&i| i as usize), &mut out);
        out
    }

    /// The network inputs of positions `start..start + len` (natively, split over the
    /// thread pool).
    pub fn range(&self, start: usize, len: usize) -> Vec<f32> {
        let mut out = vec![0f32; len * self.size];
        let piece = 256;
        let fill = |(p, out): (usize, &mut [f32])| self.range_into(start + p * piece, out);
        #[cfg(not(target_arch = "wasm32"))]
        {
            use rayon::prelude::*;
            out.par_chunks_mut(piece * self.size)
                .enumerate()
                .for_each(fill);
        }
        #[cfg(target_arch = "wasm32")]
        out.chunks_mut(piece * self.size).enumerate().for_each(fill);
        out
    }

    /// The network inputs of positions `start..start + len`, made on this thread (the
    /// scoring pass gathers one chunk per thread). f32 values in store order are one
    /// copy, standardised in place.
    pub fn chunk(&self, start: usize, len: usize) -> Vec<f32> {
        if let (Store::Values(v), None) = (&*self.store, &self.rows) {
            let mut out = stored_values(v)[start * self.size..(start + len) * self.size].to_vec();
            if let Some(n) = &self.normalisation {
                n.apply(&mut out, self.size);
            }
            return out;
        }
        let mut out = vec![0f32; len * self.size];
        self.range_into(start, &mut out);
        out
    }

    /// Positions `start..start + len` as a `[len, size]` view of the store on flex,
    /// nothing copied, when the network inputs are the stored f32 values themselves (no
    /// standardisation, the store's own order); `None` otherwise.
    pub fn flex_rows(&self, start: usize, len: usize) -> Option<Tensor<2>> {
        match (&*self.store, &self.rows, &self.normalisation) {
            (Store::Values(v), None, None) => {
                Some(flex_buffers::tensor::<2>(v.clone()).narrow(0, start, len))
            }
            _ => None,
        }
    }

    /// The samples at positions `idx` (a flex tensor) as a `[len, size]` tensor on flex,
    /// gathered by flex from the store in one copy, under the same conditions as
    /// [`Samples::flex_rows`]; `None` otherwise.
    pub fn flex_select(&self, idx: Tensor<1, Int>) -> Option<Tensor<2>> {
        match (&*self.store, &self.rows, &self.normalisation) {
            (Store::Values(v), None, None) => {
                Some(flex_buffers::tensor::<2>(v.clone()).select(0, idx))
            }
            _ => None,
        }
    }

    /// The network inputs of the `out.len() / size` positions from `start`, written into
    /// `out` on this thread. Consecutive store rows are read together, so a file-backed
    /// store is read in large pieces.
    fn range_into(&self, start: usize, out: &mut [f32]) {
        let mut scratch = Vec::new();
        let rows = out.len() / self.size;
        match &self.rows {
            None => self.inputs_into(start, rows, out, &mut scratch),
            Some(_) => {
                for (j, sample) in out.chunks_exact_mut(self.size).enumerate() {
                    self.inputs_into(self.row(start + j), 1, sample, &mut scratch);
                }
            }
        }
    }

    /// Every sample's network inputs, in order: for small sets and for handing the data
    /// to another tool, never for the training loop.
    pub fn to_vec(&self) -> Vec<f32> {
        self.range(0, self.len())
    }

    /// A view of positions `picked` of this one, in that order; nothing is copied but
    /// the row numbers.
    pub fn subset(&self, picked: &[usize]) -> Self {
        let rows: Arc<[u32]> = picked.iter().map(|&i| self.row(i) as u32).collect();
        Samples {
            rows: Some(rows),
            ..self.clone()
        }
    }

    /// The first `n` samples (all when n >= len).
    pub fn truncated(self, n: usize) -> Self {
        if n >= self.len() {
            return self;
        }
        let picked: Vec<usize> = (0..n).collect();
        self.subset(&picked)
    }

    /// Position `i`'s values before standardisation (pixels scaled to [0, 1]): what a
    /// report shows of a table row.
    pub fn raw(&self, i: usize) -> Vec<f32> {
        let mut out = vec![0f32; self.size];
        self.raw_into(self.row(i), &mut out);
        out
    }

    /// Position `i`'s bytes as stored, for images (thumbnails, reports); `None` for f32
    /// values.
    pub fn bytes_of(&self, i: usize) -> Option<Vec<u8>> {
        match &*self.store {
            Store::Bytes(b) => {
                let mut out = vec![0u8; self.size];
                b.read_at(self.row(i) * self.size, &mut out);
                Some(out)
            }
            Store::Values(_) => None,
        }
    }
}

/// The values of a [`Store::Values`], made dense by [`Samples::from_values`].
fn stored_values(v: &FlexTensor) -> &[f32] {
    v.as_slice::<f32>()
        .expect("a values store is one dense f32 buffer")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_out_scaled_and_standardised_like_the_whole_set_pass() {
        let bytes: Vec<u8> = (0..24).map(|v| (v * 10) as u8).collect();
        let lazy = Samples::from_bytes(bytes.clone(), 6);
        // The earlier eager path: scale everything, fit, apply in place.
        let mut eager: Vec<f32> = bytes.iter().map(|&p| p as f32 / 255.0).collect();
        let fitted = Normalisation::fit(&eager, 6, 2);
        fitted.apply(&mut eager, 6);
        assert_eq!(lazy.fit_normalisation(2), fitted);
        let lazy = lazy.standardised(fitted);
        assert_eq!(lazy.to_vec(), eager, "bit for bit");
        assert_eq!(
            lazy.gather(&[3, 1]),
            [&eager[18..24], &eager[6..12]].concat()
        );
        assert_eq!(lazy.bytes_of(2).as_deref(), Some(&bytes[12..18]));
    }

    #[test]
    fn views_compose_and_copy_nothing() {
        let values: Vec<f32> = (0..20).map(|v| v as f32).collect();
        let all = Samples::from_values(values, 2);
        assert_eq!(all.len(), 10);
        let odd = all.subset(&[1, 3, 5, 7, 9]);
        let picked = odd.subset(&[4, 0]);
        assert_eq!(picked.to_vec(), [18.0, 19.0, 2.0, 3.0]);
        assert!(Arc::ptr_eq(&all.store, &picked.store));
        assert_eq!(odd.clone().truncated(2).to_vec(), [2.0, 3.0, 6.0, 7.0]);
        assert_eq!(odd.range(1, 1), [6.0, 7.0]);
        // A view's statistics are its own rows'.
        assert_eq!(picked.fit_normalisation(2).mean, [10.0, 11.0]);
        assert_eq!(picked.bytes_of(0), None);
        let standardised = picked.standardised(Normalisation {
            mean: vec![1.0, 1.0],
            std: vec![2.0, 2.0],
        });
        assert_eq!(standardised.raw(0), [18.0, 19.0]);
        assert_eq!(standardised.range(0, 1), [8.5, 9.0]);
    }

    /// The shortcuts for f32 values (a scoring chunk copied whole, a batch appended row
    /// by row) give what the general row-by-row path gives, standardised or not, for the
    /// whole store and for a view of some of its rows; and bytes the same through both.
    #[test]
    fn chunks_and_batches_are_the_general_path_bit_for_bit() {
        let values: Vec<f32> = (0..60).map(|v| (v as f32 * 0.37).sin()).collect();
        let bytes: Vec<u8> = (0..60).map(|v| (v * 7 % 256) as u8).collect();
        let standard = Normalisation {
            mean: vec![0.1, -0.2, 0.3],
            std: vec![0.7, 1.3, 0.9],
        };
        let stores = [
            Samples::from_values(values.clone(), 6),
            Samples::from_values(values, 6).standardised(standard.clone()),
            Samples::from_bytes(bytes, 6).standardised(standard),
        ];
        for (s, all) in stores.iter().enumerate() {
            for view in [all.clone(), all.subset(&[9, 2, 4, 4, 0])] {
                let row_by_row: Vec<f32> = (0..view.len()).flat_map(|i| view.range(i, 1)).collect();
                assert_eq!(view.chunk(1, 3), row_by_row[6..24], "store {s}");
                assert_eq!(view.range(0, view.len()), row_by_row, "store {s}");
                let picked = [3u32, 0, 3, 1];
                let expected: Vec<f32> = picked
                    .iter()
                    .flat_map(|&i| view.range(i as usize, 1))
                    .collect();
                assert_eq!(view.gather(&picked), expected, "store {s}");
            }
        }
        // Standardised means changed: the shortcut did not skip the standardising.
        assert_ne!(stores[0].chunk(0, 2), stores[1].chunk(0, 2));

        // On flex, values used as stored are read in place: a view for a chunk, flex's
        // own select for a batch; anything standardised, bytes or a view of some rows
        // is not.
        let host = |t: Tensor<2>| t.into_data().try_to_vec::<f32>().unwrap();
        let plain = &stores[0];
        assert_eq!(host(plain.flex_rows(1, 3).unwrap()), plain.chunk(1, 3));
        let picked = [3u32, 0, 3, 9];
        let idx = Tensor::<1, Int>::from_data(
            TensorData::new(picked.iter().map(|&i| i as i64).collect(), [4]),
            &burn::tensor::Device::flex(),
        );
        assert_eq!(
            host(plain.flex_select(idx.clone()).unwrap()),
            plain.gather(&picked)
        );
        for other in [&stores[1], &stores[2], &plain.subset(&[1, 2])] {
            assert!(other.flex_rows(0, 1).is_none());
            assert!(other.flex_select(idx.clone()).is_none());
        }
    }
}
