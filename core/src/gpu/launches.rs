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

/// The kernels `work` launched, by name (cubecl's short form: the type's last path
/// segment, generics dropped), most launched first; taks's own kernels dispatched through
/// wgpu directly as one entry. For `taks bench`: which kernels a step is made of, so the
/// next launch to cut is the most frequent one.
pub fn count_by_kernel<T>(work: impl FnOnce() -> T) -> (T, Vec<(String, usize)>) {
    let seen = Arc::new(ByKernel::default());
    let direct = DIRECT.load(Ordering::Relaxed);
    let watching = LaunchObservation::new(seen.clone());
    let out = work();
    drop(watching);
    let direct = DIRECT.load(Ordering::Relaxed) - direct;
    let mut named: BTreeMap<String, usize> = BTreeMap::new();
    for (kernel, n) in seen.0.lock().map(|m| m.clone()).unwrap_or_default() {
        let short =
            cubecl::config::type_name_format(kernel, cubecl::config::TypeNameFormatLevel::Short);
        *named.entry(short).or_default() += n;
    }
    if direct > 0 {
        *named.entry("taks kernels through wgpu".into()).or_default() += direct;
    }
    let mut named: Vec<(String, usize)> = named.into_iter().collect();
    named.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    (out, named)
}
