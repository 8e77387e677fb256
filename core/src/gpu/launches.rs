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
//! counted here instead. Counts are per thread: launches other threads issue meanwhile
//! (other tests, in the test harness) are not counted.
//!
//! Under burn's fusion (the `fusion` feature, [`super::fusion`]) burn's kernels are
//! launched later, by the fusion server on cubecl's device thread, not by the thread that
//! recorded them. A count then runs the device's recorded work before and after `work`
//! (`Device::sync`) and adds what the device threads launched in between. Those are not
//! told apart by the thread that recorded them, so a count is exact only while no other
//! thread works on the GPU (`taks bench`; the tests that count, run one at a time).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};

use burn::tensor::Device;

use cubecl::logging::{LaunchObservation, LaunchObserver};

/// What the current thread launched while it counts.
#[derive(Default)]
struct Tally {
    /// Through cubecl, by its kernel type name.
    kernels: BTreeMap<&'static str, usize>,
    /// taks's own, by shader name (also in `kernels` or `direct`).
    ours: BTreeMap<&'static str, usize>,
    /// Dispatched through wgpu directly.
    direct: usize,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        for (&k, n) in &other.kernels {
            *self.kernels.entry(k).or_default() += n;
        }
        for (&k, n) in &other.ours {
            *self.ours.entry(k).or_default() += n;
        }
        self.direct += other.direct;
    }
}

thread_local! {
    /// `Some` while this thread counts.
    static TALLY: RefCell<Option<Tally>> = const { RefCell::new(None) };
    /// Kernels this thread dispatched through wgpu directly, counting or not.
    static DIRECT_HERE: Cell<usize> = const { Cell::new(0) };
}

/// cubecl's launch observer: one slot for the whole process, so a second observation
/// would take the first one's launches and every other thread's launches would land in
/// it. Installed once, for good, it sends each launch to the tally of the thread that
/// issued it, and two tests counting at once (the test harness runs them in parallel)
/// each see only their own. A thread that does not count pays a thread-local read per
/// launch.
struct PerThread;

impl LaunchObserver for PerThread {
    fn launched(&self, kernel: &'static str) {
        observe(kernel);
    }
}

/// Install the counter's observer for good, once per process (see [`PerThread`]).
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| std::mem::forget(LaunchObservation::new(Arc::new(PerThread))));
}

/// `kernel` was launched by this thread: counted where this thread counts. The counter's
/// observer calls it, and so does the per-op clock's ([`super::clock`]) while it
/// replaces the counter's.
pub(crate) fn observe(kernel: &'static str) {
    let counted = TALLY.with(|t| match t.borrow_mut().as_mut() {
        Some(tally) => {
            *tally.kernels.entry(kernel).or_default() += 1;
            true
        }
        None => false,
    });
    let fused = cfg!(feature = "fusion");
    if fused && !counted && COUNTING.load(Ordering::Relaxed) > 0 && on_device_thread() {
        let mut runners = RUNNERS.lock().unwrap_or_else(|e| e.into_inner());
        *runners.entry(kernel).or_default() += 1;
    }
}

/// How many threads are counting now; device threads' launches are kept only then
/// (and only under fusion: otherwise every launch is the issuing thread's).
static COUNTING: AtomicUsize = AtomicUsize::new(0);

/// What cubecl's device threads launched while some thread counted (fusion's kernels),
/// by kernel type name.
static RUNNERS: Mutex<BTreeMap<&'static str, usize>> = Mutex::new(BTreeMap::new());

/// Whether this is one of cubecl's device threads, which run the fusion server
/// (cubecl-common names them `DS{stage}-{type}-{index}`).
fn on_device_thread() -> bool {
    std::thread::current()
        .name()
        .is_some_and(|name| name.starts_with("DS"))
}

/// A copy of what the device threads have launched so far.
fn runners_so_far() -> BTreeMap<&'static str, usize> {
    RUNNERS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// What the device threads launched since `before` (an earlier [`runners_so_far`]).
fn runners_since(before: &BTreeMap<&'static str, usize>) -> Tally {
    let kernels = runners_so_far()
        .into_iter()
        .map(|(k, n)| (k, n - before.get(k).copied().unwrap_or(0)))
        .filter(|&(_, n)| n > 0)
        .collect();
    Tally {
        kernels,
        ..Tally::default()
    }
}

fn with_tally(f: impl FnOnce(&mut Tally)) {
    TALLY.with(|t| {
        if let Some(tally) = t.borrow_mut().as_mut() {
            f(tally);
        }
    });
}

/// `work`'s launches on this thread (and, under fusion, on `device`'s threads).
fn tally<T>(device: &Device, work: impl FnOnce() -> T) -> (T, Tally) {
    install();
    let fused = cfg!(feature = "fusion");
    COUNTING.fetch_add(1, Ordering::Relaxed);
    if fused {
        // What was recorded before the count runs outside it. A failed sync surfaces at
        // the caller's next read.
        let _ = device.sync();
    }
    let runners = runners_so_far();
    let outer = TALLY.with(|t| t.borrow_mut().replace(Tally::default()));
    let out = work();
    if fused {
        let _ = device.sync();
    }
    let mut inner = TALLY.with(|t| t.borrow_mut().take()).unwrap_or_default();
    inner.add(&runners_since(&runners));
    COUNTING.fetch_sub(1, Ordering::Relaxed);
    // A count inside a count: the outer one saw these launches too.
    let outer = outer.map(|mut o| {
        o.add(&inner);
        o
    });
    TALLY.with(|t| *t.borrow_mut() = outer);
    (out, inner)
}

/// One kernel dispatched through wgpu directly.
pub(crate) fn count_direct() {
    DIRECT_HERE.set(DIRECT_HERE.get() + 1);
    with_tally(|t| t.direct += 1);
}

/// Kernels this thread dispatched through wgpu directly so far.
#[cfg(test)]
pub(crate) fn direct_so_far() -> usize {
    DIRECT_HERE.get()
}

/// The number of kernels `work` launched on this thread (the trainer issues a step's
/// launches from the thread that runs it), on `device` (whose work, under fusion, is run
/// before and after `work`).
pub fn count<T>(device: &Device, work: impl FnOnce() -> T) -> (T, usize) {
    let (out, t) = tally(device, work);
    (out, t.kernels.values().sum::<usize>() + t.direct)
}

/// How many of `work`'s launches on this thread went through wgpu directly
/// ([`super::direct`]) rather than through burn: all of taks's own under
/// `TAKS_GPU_DIRECT=1` or off burn's WGSL compiler, none otherwise.
pub fn direct_launches<T>(device: &Device, work: impl FnOnce() -> T) -> (T, usize) {
    let (out, t) = tally(device, work);
    (out, t.direct)
}

/// One of taks's shaders launched, through burn or through wgpu directly.
pub(crate) fn count_ours(shader: &'static str) {
    with_tally(|t| *t.ours.entry(shader).or_default() += 1);
}

/// What cubecl calls a hand-written WGSL kernel launched through burn: all of them are
/// taks's, and are counted by shader name instead.
const SOURCE_KERNEL: &str = "SourceKernel";

/// The kernels `work` launched on this thread, by name, most launched first: burn's in
/// cubecl's short form (the type's last path segment, generics dropped), taks's own by
/// shader name (`taks_im2col`). For `taks bench`: which kernels a step is made of, so
/// the next launch to cut is the most frequent one.
pub fn count_by_kernel<T>(device: &Device, work: impl FnOnce() -> T) -> (T, Vec<(String, usize)>) {
    let (out, t) = tally(device, work);
    let mut named: BTreeMap<String, usize> = BTreeMap::new();
    for (kernel, n) in t.kernels {
        let short =
            cubecl::config::type_name_format(kernel, cubecl::config::TypeNameFormatLevel::Short);
        if short != SOURCE_KERNEL {
            *named.entry(short).or_default() += n;
        }
    }
    for (shader, n) in t.ours {
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
        let (_, total) = count(&device, work);
        let (_, named) = count_by_kernel(&device, work);
        assert_eq!(
            named.iter().map(|(_, n)| n).sum::<usize>(),
            total,
            "{named:?}"
        );
        assert!(named.contains(&("taks_bias_relu".into(), 2)), "{named:?}");
        assert!(named.len() >= 2, "burn's kernels too: {named:?}");
        assert!(named.iter().all(|(k, _)| k != SOURCE_KERNEL), "{named:?}");
    }

    /// On lavapipe: while another thread launches kernels without pause (as another
    /// test does in the harness), a count on this thread sees its own launch alone, and
    /// the other thread's count, running at the same time, sees only its own. Not under
    /// fusion, whose counts are the device's (the module's doc).
    #[test]
    #[cfg(not(feature = "fusion"))]
    fn a_count_sees_only_its_own_threads_launches() {
        let device = super::super::direct::start().expect("a wgpu adapter").0;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let busy = AtomicBool::new(true);
        let rounds = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let other = scope.spawn(|| {
                let t = Tensor::<1>::ones([64], &device);
                let mut counted = Vec::new();
                while busy.load(Ordering::Relaxed) {
                    let (_, n) = count(&device, || (t.clone() * 2.0).into_data());
                    counted.push(n);
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
                counted
            });
            let a = Tensor::<1>::ones([8], &device);
            let x = bridge::float_f32(&a).expect("on wgpu");
            let h = bridge::empty_1d(&x, 8, DType::F32);
            let p = bridge::upload_u32(&x.client, &[1, 8]);
            // Until the other thread has counted a few times itself, at least 20 times.
            let mut ours = 0;
            while ours < 20 || rounds.load(Ordering::Relaxed) < 5 {
                let (_, n) = count(&device, || {
                    let buffers = [&x.handle, &x.handle, &h.handle, &p];
                    bridge::launch(&x.client, BIAS_RELU, bridge::grid(1), &buffers);
                });
                assert_eq!(n, 1, "another thread's launches were counted");
                ours += 1;
            }
            busy.store(false, Ordering::Relaxed);
            let counted = other.join().unwrap();
            assert!(counted.iter().all(|&n| n == 1), "{counted:?}");
        });
    }
}
