//! The parameter buffers of taks's kernels (sizes, strides, flags: the small `params` or
//! `p` binding every shader reads and none writes), uploaded once per distinct set of words
//! and kept.
//!
//! Why: cubecl's wgpu runtime submits the work queued so far before every write from the
//! host, so a kernel that uploads its parameters right before its launch splits the queue
//! there: a step's hundred-odd launches become as many submissions, each a round trip
//! through the driver, where a step without host writes is a few. A training step meets
//! the same shapes batch after batch, so after the first batch every launch finds its
//! words here and writes nothing. Per thread (the training loop issues a step from one
//! thread; a buffer written on one thread's stream and read on another's would make cubecl
//! order the two streams), per device, and at most [`KEPT`] sets of words, forgotten all at
//! once past that (a buffer a queued kernel still binds lives on until it has run).
//! Buffers a kernel writes (the selection's state and histogram) are never kept: they go
//! through [`super::bridge::upload_u32`].

use std::cell::RefCell;
use std::collections::HashMap;

use std::hash::{DefaultHasher, Hash, Hasher};

use burn::backend::wgpu::CubeTensor;
use cubecl::server::Handle;

use super::bridge::upload_u32;

/// The most sets of words a thread keeps.
const KEPT: usize = 1024;

thread_local! {
    /// By the device (its cubecl service's hash, within this process) and the words.
    static KEPT_HERE: RefCell<HashMap<(u64, Vec<u32>), Handle>> = RefCell::new(HashMap::new());
}

/// The buffer of `words` on `like`'s device: the one uploaded before on this thread, or a
/// new one. Its kernel must only read it.
pub(crate) fn words(like: &CubeTensor, words: &[u32]) -> Handle {
    let mut device = DefaultHasher::new();
    like.client.service_id().hash(&mut device);
    let key = (device.finish(), words.to_vec());
    KEPT_HERE.with(|kept| {
        let mut kept = kept.borrow_mut();
        if let Some(handle) = kept.get(&key) {
            return handle.clone();
        }
        if kept.len() >= KEPT {
            kept.clear();
        }
        let handle = upload_u32(&like.client, words);
        kept.insert(key, handle.clone());
        handle
    })
}

/// [`words`] of sizes and indices; `None` when one passes 32 bits (the caller then
/// declines, and burn's own operation runs).
pub(crate) fn sizes(like: &CubeTensor, sizes: &[usize]) -> Option<Handle> {
    let words_of: Vec<u32> = sizes
        .iter()
        .map(|&v| u32::try_from(v).ok())
        .collect::<Option<_>>()?;
    Some(words(like, &words_of))
}

#[cfg(test)]
mod tests {
    use burn::tensor::Tensor;

    use super::*;
    use crate::gpu::bridge;

    /// On lavapipe: the same words give the same buffer, on this thread, and other words
    /// another one; a buffer kept holds its words (a kernel reads them right).
    #[test]
    fn the_same_words_are_uploaded_once() {
        let device = super::super::direct::start().expect("a wgpu adapter").0;
        let t = Tensor::<1>::ones([4], &device);
        let like = bridge::float_f32(&t).expect("on wgpu");
        let first = words(&like, &[7, 8, 9]);
        let again = words(&like, &[7, 8, 9]);
        let other = sizes(&like, &[7, 8, 10]).expect("fits");
        let id = |h: &Handle| format!("{:?}", h.clone().binding());
        assert_eq!(id(&first), id(&again));
        assert_ne!(id(&first), id(&other));
        let read = like.client.read_one(again).expect("read back");
        assert_eq!(
            read.to_vec(),
            [7u32, 8, 9]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect::<Vec<u8>>()
        );
        assert!(sizes(&like, &[1 << 40]).is_none());
        let elsewhere = std::thread::spawn(move || id(&words(&like, &[7, 8, 9])))
            .join()
            .unwrap();
        assert_ne!(elsewhere, id(&first), "kept per thread");
    }
}
