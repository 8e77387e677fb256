//! Counting the kernels a piece of work launches on a GPU device.
//!
//! A small network's training step on a GPU is bound by dispatches, not arithmetic:
//! each launch costs microseconds of driver and queue work, and the MLP's matmuls are a
//! microsecond each on a big GPU. The count is the figure to cut, so `taks bench` prints
//! it. cubecl calls its launch observer on the issuing thread for every kernel it hands
//! to a device (ours and burn's alike; the wgpu runtime's dispatches are exactly these),
//! so the count covers everything a step enqueues. Launches that could not be
//! fused or skipped are all counted, compile failures included; on flex nothing is
//! launched and the count stays 0. taks's own kernels dispatched through wgpu directly
//! (on burn's SPIR-V or MSL compiler: [`super::direct`]) never reach cubecl and are
//! counted here instead.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cubecl::logging::{LaunchObservation, LaunchObserver};

#[derive(Default)]
struct Count(AtomicUsize);

/// Launches by kernel name.
#[derive(Default)]
struct ByKernel(Mutex<BTreeMap<&'static str, usize>>);

impl LaunchObserver for ByKernel {
    fn launched(&self, kernel: &'static str) {
        if let Ok(mut all) = self.0.lock() {
            *all.entry(kernel).or_default() += 1;
        }
    }
}

/// Kernels dispatched through wgpu directly, since the process started.
static DIRECT: AtomicUsize = AtomicUsize::new(0);

/// One kernel dispatched through wgpu directly.
pub(crate) fn count_direct() {
    DIRECT.fetch_add(1, Ordering::Relaxed);
}

/// Kernels dispatched through wgpu directly so far in this process.
#[cfg(test)]
pub(crate) fn direct_so_far() -> usize {
    DIRECT.load(Ordering::Relaxed)
}

impl LaunchObserver for Count {
    fn launched(&self, _kernel: &'static str) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The number of kernels `work` launched (process-wide: nothing else may launch
/// meanwhile, which holds for the single-threaded trainer).
pub fn count<T>(work: impl FnOnce() -> T) -> (T, usize) {
    let count = Arc::new(Count::default());
    let direct = DIRECT.load(Ordering::Relaxed);
    let watching = LaunchObservation::new(count.clone());
    let out = work();
    drop(watching);
    let direct = DIRECT.load(Ordering::Relaxed) - direct;
    (out, count.0.load(Ordering::Relaxed) + direct)
}

/// taks's own kernels by shader name while [`count_by_kernel`] watches (`None` when it
/// does not).
static OURS: Mutex<Option<BTreeMap<&'static str, usize>>> = Mutex::new(None);

/// One of taks's shaders launched, through burn or through wgpu directly.
pub(crate) fn count_ours(shader: &'static str) {
    if let Ok(mut ours) = OURS.lock()
        && let Some(ours) = ours.as_mut()
    {
        *ours.entry(shader).or_default() += 1;
    }
}

/// What cubecl calls a hand-written WGSL kernel launched through burn: all of them are
/// taks's, and are counted by shader name instead.
const SOURCE_KERNEL: &str = "SourceKernel";

/// The kernels `work` launched, by name, most launched first: burn's in cubecl's short
/// form (the type's last path segment, generics dropped), taks's own by shader name
/// (`taks_im2col`). For `taks bench`: which kernels a step is made of, so the next
/// launch to cut is the most frequent one.
pub fn count_by_kernel<T>(work: impl FnOnce() -> T) -> (T, Vec<(String, usize)>) {
    let seen = Arc::new(ByKernel::default());
    if let Ok(mut ours) = OURS.lock() {
        *ours = Some(BTreeMap::new());
    }
    let watching = LaunchObservation::new(seen.clone());
    let out = work();
    drop(watching);
    let ours = OURS
        .lock()
        .ok()
        .and_then(|mut o| o.take())
        .unwrap_or_default();
    let mut named: BTreeMap<String, usize> = BTreeMap::new();
    for (kernel, n) in seen.0.lock().map(|m| m.clone()).unwrap_or_default() {
        let short =
            cubecl::config::type_name_format(kernel, cubecl::config::TypeNameFormatLevel::Short);
        if short != SOURCE_KERNEL {
            *named.entry(short).or_default() += n;
        }
    }
    for (shader, n) in ours {
        *named.entry(shader.into()).or_default() += n;
    }
    let mut named: Vec<(String, usize)> = named.into_iter().collect();
    named.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    (out, named)
}

#[cfg(test)]
mod tests {
    use burn::tensor::{DType, Tensor};

    use super::*;
    use crate::gpu::bridge;
    use crate::gpu::kernels::BIAS_RELU;

    /// On lavapipe: burn's kernels and taks's, counted by name, add up to the plain
    /// count, and taks's carry their shader's name (cubecl's "SourceKernel" never shows).
    #[test]
    fn kernels_by_name_add_up_to_the_count() {
        let device = super::super::direct::start().expect("a wgpu adapter").0;
        let a = Tensor::<2>::ones([4, 8], &device);
        let b = Tensor::<1>::ones([8], &device);
        let work = || {
            let s = (a.clone() * 2.0).matmul(a.clone().transpose());
            let x = bridge::float_f32(&a).expect("on wgpu");
            let bias = bridge::float_f32(&b).expect("on wgpu");
            let h = bridge::empty_1d(&x, 32, DType::F32);
            let p = bridge::upload_u32(&x.client, &[4, 8]);
            for _ in 0..2 {
                let buffers = [&x.handle, &bias.handle, &h.handle, &p];
                bridge::launch(&x.client, BIAS_RELU, bridge::grid(1), &buffers);
            }
            s
        };
        // Once before counting: the matmul's first call may tune.
        let _ = work();
        let (_, total) = count(work);
        let (_, named) = count_by_kernel(work);
        assert_eq!(
            named.iter().map(|(_, n)| n).sum::<usize>(),
            total,
            "{named:?}"
        );
        assert!(named.contains(&("taks_bias_relu".into(), 2)), "{named:?}");
        assert!(named.len() >= 2, "burn's kernels too: {named:?}");
        assert!(named.iter().all(|(k, _)| k != SOURCE_KERNEL), "{named:?}");
    }
}
