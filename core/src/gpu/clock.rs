//! The per-op GPU clock: how long each kernel of a piece of work ran on the device, by
//! the op and layer shape that launched it, beside what that op should cost (its FLOPs and
//! the bytes it must move), so that a table can say which op runs how far from the card's
//! arithmetic or memory rate.
//!
//! Why: a GPU epoch's time is the sum of many kernels, and a wall clock around a step says
//! nothing of which ones. cubecl lets one launch observer ask for each launch to be timed
//! (`TimingRequest::Deferred`): on an adapter with timestamp queries (wgpu's
//! `TIMESTAMP_QUERY`, which NVIDIA's drivers and lavapipe list) each launch is bracketed by
//! two device timestamps that nothing waits for, so the kernels still run back to back and
//! are read once the work is over; the timestamps also say where the device sat idle
//! between kernels. Where the adapter has none, cubecl times each launch on the host around
//! a blocking submit (compilation and submission included), and [`Clocked::device_time`]
//! says so, so a report can say the figures are not the device's.
//!
//! Ops say what they are with [`op`]: a guard naming the op, its shape and its [`Cost`],
//! cheap while nothing clocks (one thread-local read). Every launch is counted to the
//! outermost op open on the issuing thread (a convolution's forward pass holds its im2col
//! and its matmul); a launch outside every op (burn's own kernels: a ReLU, a pooling, an
//! autodiff add) is counted under its kernel's name. Bracketing each launch costs a
//! round trip to cubecl's device thread, so clocked work runs slower as a whole than
//! unclocked work: the clock says where device time goes, not how long a step takes
//! (`taks bench`'s epoch times do). taks's own kernels dispatched through wgpu directly
//! ([`super::direct`]: the kernels on cooperative matrices on Vulkan, every one under
//! `TAKS_GPU_DIRECT`) never reach cubecl: each writes two timestamps of its own
//! ([`super::stamps`]), read after the work, which give its device time but no place on
//! cubecl's timeline, so [`Clocked::busy`] adds their seconds to the union of cubecl's
//! intervals (a direct dispatch is a submission of its own, run between the kernels queued
//! before and after it). Where the adapter has no timestamps they are counted in
//! [`Clocked::untimed`].
//!
//! One clock runs at a time in a process (a lock): the observer slot is process-wide, and
//! while it is installed every thread's launches are bracketed (other threads' launches are
//! not recorded, only slowed).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use burn::tensor::Device;
use cubecl::logging::{
    Duration, LaunchObservation, LaunchObserver, ProfileDuration, TimingMethod, TimingRequest,
};
use cubecl::profile::Instant;

/// What one call of an op should cost at least: the arithmetic of its products and the
/// bytes it must read and write once each (its inputs and outputs, no intermediate).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    /// Floating-point operations, two per multiply-add.
    pub flops: f64,
    /// Bytes read and written.
    pub bytes: f64,
}

impl Cost {
    /// An op whose arithmetic is not products (elementwise, reductions): only its bytes,
    /// `passes` times the `numel` elements of `dtype_bytes` each (a read and a write are
    /// two passes).
    pub(crate) fn moving(numel: usize, dtype_bytes: usize, passes: usize) -> Self {
        Self {
            flops: 0.0,
            bytes: (numel * dtype_bytes * passes) as f64,
        }
    }
}

/// A shape as the clock's table writes it: `256x64x32x32`.
pub(crate) fn dims(dims: &[usize]) -> String {
    dims.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// Open the elementwise op `name` on `t` (its shape the op's), which reads or writes
/// `t`'s size `passes` times.
pub(crate) fn elementwise<const D: usize>(
    name: &'static str,
    t: &burn::tensor::Tensor<D>,
    passes: usize,
) -> OpGuard {
    op(name, || {
        let shape = t.dims();
        let cost = Cost::moving(shape.iter().product(), t.dtype().size(), passes);
        (dims(&shape), cost)
    })
}

/// One op call while the clock runs.
struct Call {
    op: &'static str,
    shape: String,
    cost: Cost,
}

/// One launch while the clock runs.
struct Launch {
    /// Index into [`Recording::calls`]: the outermost op open at the launch.
    call: Option<usize>,
    kernel: String,
    /// The device's measurement, unread until the work is over.
    profile: Option<ProfileDuration>,
    /// A measurement cubecl read itself (when its profiling logger reads them too).
    timed: Option<(Duration, TimingMethod)>,
    /// Dispatched through wgpu directly, out of cubecl's sight ...
    direct: bool,
    /// ... with its own timestamps, where the device has them.
    stamps: Option<super::stamps::Stamps>,
}

/// What the clocking thread has seen so far.
#[derive(Default)]
struct Recording {
    calls: Vec<Call>,
    /// The outermost op open and how many ops are open inside it.
    open: Option<(usize, usize)>,
    launches: Vec<Launch>,
    /// taks's shader about to be launched (cubecl names every hand-written kernel
    /// `SourceKernel`), announced by [`name_next`].
    next_name: Option<&'static str>,
}

thread_local! {
    /// `Some` while this thread clocks.
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

fn with_recording<T>(f: impl FnOnce(&mut Recording) -> T) -> Option<T> {
    RECORDING.with(|r| r.borrow_mut().as_mut().map(f))
}

/// An op open on this thread while the clock runs; closes when dropped.
#[must_use = "the op closes when this guard drops"]
pub(crate) struct OpGuard {
    recorded: bool,
}

impl Drop for OpGuard {
    fn drop(&mut self) {
        if self.recorded {
            with_recording(|r| {
                r.open = match r.open {
                    Some((call, inner)) if inner > 0 => Some((call, inner - 1)),
                    _ => None,
                }
            });
        }
    }
}

/// Open the op `name` until the guard drops; `describe` gives its shape and cost, and is
/// called only while this thread clocks.
pub(crate) fn op(name: &'static str, describe: impl FnOnce() -> (String, Cost)) -> OpGuard {
    let recorded = with_recording(|r| match r.open {
        Some((call, inner)) => r.open = Some((call, inner + 1)),
        None => {
            let (shape, cost) = describe();
            r.calls.push(Call {
                op: name,
                shape,
                cost,
            });
            r.open = Some((r.calls.len() - 1, 0));
        }
    })
    .is_some();
    OpGuard { recorded }
}

/// taks's shader `shader` is launched next on this thread (through cubecl, which names it
/// `SourceKernel`).
pub(crate) fn name_next(shader: &'static str) {
    with_recording(|r| r.next_name = Some(shader));
}

/// taks's kernel `shader` is about to be dispatched through wgpu directly, out of cubecl's
/// sight: whether this thread clocks (the dispatch then hands its timestamps to
/// [`stamped`]).
pub(crate) fn direct_launch(shader: &'static str) -> bool {
    with_recording(|r| {
        r.next_name = None;
        r.launches.push(Launch {
            call: r.open.map(|(call, _)| call),
            kernel: shader.to_string(),
            profile: None,
            timed: None,
            direct: true,
            stamps: None,
        });
    })
    .is_some()
}

/// The timestamps of the direct dispatch [`direct_launch`] announced last.
pub(crate) fn stamped(stamps: super::stamps::Stamps) {
    with_recording(|r| {
        if let Some(last) = r.launches.last_mut() {
            last.stamps = Some(stamps);
        }
    });
}

/// The observer installed while a clock runs: it records the clocking thread's launches
/// and their measurements, and passes every launch on to the launch counter
/// ([`super::launches`]), whose observer it replaces meanwhile.
struct Observer;

impl LaunchObserver for Observer {
    fn launched(&self, kernel: &'static str) {
        super::launches::observe(kernel);
        with_recording(|r| {
            let kernel = match r.next_name.take() {
                Some(shader) => shader.to_string(),
                None => cubecl::config::type_name_format(
                    kernel,
                    cubecl::config::TypeNameFormatLevel::Short,
                ),
            };
            r.launches.push(Launch {
                call: r.open.map(|(call, _)| call),
                kernel,
                profile: None,
                timed: None,
                direct: false,
                stamps: None,
            });
        });
    }

    fn timing(&self) -> TimingRequest {
        TimingRequest::Deferred
    }

    fn profiled(&self, _kernel: &'static str, profile: ProfileDuration) {
        with_recording(|r| {
            if let Some(last) = r.launches.last_mut() {
                last.profile = Some(profile);
            }
        });
    }

    fn timed(&self, _kernel: &'static str, duration: Duration, method: TimingMethod) {
        with_recording(|r| {
            if let Some(last) = r.launches.last_mut() {
                last.timed = Some((duration, method));
            }
        });
    }
}

/// One op and shape of clocked work: every call of it and every kernel they launched.
#[derive(Clone, Debug, PartialEq)]
pub struct OpTime {
    /// The op (`conv forward`), or `burn: ` and the kernel's name for a launch outside
    /// every op.
    pub op: String,
    /// The layer's shape as the op writes it; empty for a kernel outside every op.
    pub shape: String,
    pub calls: usize,
    pub launches: usize,
    /// Launches whose measurement came back.
    pub timed: usize,
    /// Device seconds of its kernels (host seconds where [`Clocked::device_time`] is false).
    pub seconds: f64,
    /// What its calls should cost at least (zero for kernels outside every op).
    pub cost: Cost,
    /// Its kernels by name with their launches, most first.
    pub kernels: Vec<(String, usize)>,
}

impl OpTime {
    /// Its arithmetic rate in FLOP/s (0 where it has no products or took no time).
    pub fn flop_rate(&self) -> f64 {
        rate(self.cost.flops, self.seconds)
    }

    /// Its rate of the bytes it must move, in bytes per second.
    pub fn byte_rate(&self) -> f64 {
        rate(self.cost.bytes, self.seconds)
    }
}

fn rate(amount: f64, seconds: f64) -> f64 {
    if seconds > 0.0 { amount / seconds } else { 0.0 }
}

/// What a clock measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Clocked {
    /// By op and shape, most device time first.
    pub ops: Vec<OpTime>,
    /// Whether the times are the device's (timestamp queries), not the host's.
    pub device_time: bool,
    /// From the first kernel's start to the last one's end, on the device's clock (0 where
    /// the times are the host's).
    pub span: f64,
    /// The part of `span` some kernel ran in: the union of cubecl's kernels' intervals,
    /// plus the seconds of the kernels dispatched directly (which have no place on that
    /// timeline; the module's docs).
    pub busy: f64,
    /// taks's kernels dispatched through wgpu directly that have no time: the adapter has
    /// no timestamp queries.
    pub untimed: usize,
}

impl Clocked {
    /// Every kernel's seconds added up.
    pub fn kernel_seconds(&self) -> f64 {
        self.ops.iter().map(|o| o.seconds).sum()
    }

    /// Every launch the clock saw.
    pub fn launches(&self) -> usize {
        self.ops.iter().map(|o| o.launches).sum()
    }
}

/// One clock at a time in the process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Run `work` on this thread with every kernel it launches on `device` timed, and return
/// what it returned with the times by op. The device's earlier work is waited for first,
/// and `work`'s after, so the clock holds `work` alone.
pub fn clock<T>(device: &Device, work: impl FnOnce() -> T) -> (T, Clocked) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The counter's observer first, so that installing it later cannot displace ours.
    super::launches::install();
    // A failed sync surfaces at the caller's next read.
    let _ = device.sync();
    // Every interval is placed against an instant before the work (a second before, for
    // the alignment of the device's clock to the host's).
    let now = Instant::now();
    let epoch = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
    RECORDING.with(|r| *r.borrow_mut() = Some(Recording::default()));
    let observation = LaunchObservation::new(Arc::new(Observer));
    let out = work();
    let _ = device.sync();
    drop(observation);
    let recording = RECORDING
        .with(|r| r.borrow_mut().take())
        .expect("set above, taken only here");
    (out, tally(recording, epoch))
}

/// A launch's measurement read back.
struct Reading {
    seconds: f64,
    /// Whether it is the device's time (timestamp queries), not the host's.
    on_device: bool,
    /// Its start and end on the device's clock, against the clock's epoch.
    interval: Option<(f64, f64)>,
}

/// `launch`'s measurement, its interval placed against `epoch`; `None` where none came.
fn read(launch: Launch, epoch: Instant) -> Option<Reading> {
    if launch.direct {
        return Some(Reading {
            seconds: launch.stamps?.seconds()?,
            on_device: true,
            interval: None,
        });
    }
    if let Some((duration, method)) = launch.timed {
        return Some(Reading {
            seconds: duration.as_secs_f64(),
            on_device: method == TimingMethod::Device,
            interval: None,
        });
    }
    let profile = launch.profile?;
    let on_device = profile.timing_method() == TimingMethod::Device;
    let ticks = cubecl::future::block_on(profile.resolve())?;
    let interval = (
        ticks.start_duration_since(epoch).as_secs_f64(),
        ticks.end_duration_since(epoch).as_secs_f64(),
    );
    Some(Reading {
        seconds: ticks.duration().as_secs_f64(),
        on_device,
        interval: Some(interval),
    })
}

/// The recording grouped by op and shape, its intervals placed against `epoch`.
fn tally(recording: Recording, epoch: Instant) -> Clocked {
    let Recording {
        calls, launches, ..
    } = recording;
    let mut untimed = 0;
    let mut direct_seconds = 0.0;
    let mut groups: BTreeMap<(String, String), (OpTime, Vec<usize>)> = BTreeMap::new();
    let mut intervals = Vec::new();
    let mut device_time = true;
    let mut any = false;
    for launch in launches {
        let call = launch.call;
        let kernel = launch.kernel.clone();
        let key = match call {
            Some(c) => (calls[c].op.to_string(), calls[c].shape.clone()),
            None => (format!("burn: {kernel}"), String::new()),
        };
        let (row, seen) = groups.entry(key.clone()).or_insert_with(|| {
            let row = OpTime {
                op: key.0.clone(),
                shape: key.1.clone(),
                calls: 0,
                launches: 0,
                timed: 0,
                seconds: 0.0,
                cost: Cost::default(),
                kernels: Vec::new(),
            };
            (row, Vec::new())
        });
        row.launches += 1;
        match row.kernels.iter_mut().find(|(k, _)| *k == kernel) {
            Some((_, n)) => *n += 1,
            None => row.kernels.push((kernel, 1)),
        }
        match call {
            Some(c) if !seen.contains(&c) => {
                seen.push(c);
                row.calls += 1;
                row.cost.flops += calls[c].cost.flops;
                row.cost.bytes += calls[c].cost.bytes;
            }
            Some(_) => {}
            None => row.calls += 1,
        }
        let direct = launch.direct;
        match read(launch, epoch) {
            Some(reading) => {
                any = true;
                device_time &= reading.on_device;
                row.timed += 1;
                row.seconds += reading.seconds;
                intervals.extend(reading.interval);
                if direct {
                    direct_seconds += reading.seconds;
                }
            }
            None if direct => untimed += 1,
            None => {}
        }
    }
    let mut ops: Vec<OpTime> = groups
        .into_values()
        .map(|(mut row, _)| {
            row.kernels
                .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            row
        })
        .collect();
    ops.sort_by(|a, b| {
        b.seconds
            .total_cmp(&a.seconds)
            .then_with(|| a.op.cmp(&b.op))
    });
    let device_time = any && device_time;
    let (span, busy) = match device_time {
        true => {
            let (span, busy) = span_and_busy(intervals);
            (span, busy + direct_seconds)
        }
        false => (0.0, 0.0),
    };
    Clocked {
        ops,
        device_time,
        span,
        busy,
        untimed,
    }
}

/// From the first start to the last end, and the length of the intervals' union.
fn span_and_busy(mut intervals: Vec<(f64, f64)>) -> (f64, f64) {
    if intervals.is_empty() {
        return (0.0, 0.0);
    }
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let first = intervals[0].0;
    let mut last = first;
    let mut busy = 0.0;
    let (mut from, mut to) = intervals[0];
    for &(s, e) in &intervals[1..] {
        if s > to {
            busy += to - from;
            (from, to) = (s, e);
        } else {
            to = to.max(e);
        }
    }
    busy += to - from;
    for &(_, e) in &intervals {
        last = f64::max(last, e);
    }
    (last - first, busy)
}

#[cfg(test)]
mod tests {
    use burn::nn::PaddingConfig2d;
    use burn::nn::conv::Conv2dConfig;
    use burn::tensor::Distribution;
    use burn::tensor::activation::relu;

    use super::*;
    use crate::gpu::launches::count;
    use crate::test_support::random;

    /// lavapipe's device, a 3 -> 4 channel 3x3 convolution without a bias (its addition
    /// would be burn's, outside the op) and its input of two 8x8 images.
    fn a_small_convolution() -> (Device, burn::nn::conv::Conv2d, burn::tensor::Tensor<4>) {
        let device = super::super::direct::start().expect("a wgpu adapter").0;
        let conv = Conv2dConfig::new([3, 4], [3, 3])
            .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
            .with_bias(false)
            .init(&device);
        let x = random([2, 3, 8, 8], Distribution::Normal(0.0, 1.0), 7, &device);
        (device, conv, x)
    }

    /// On lavapipe, which has timestamp queries: a training convolution's forward pass is
    /// one row with every launch it made (its im2col and matmul, whatever way it takes),
    /// each timed on the device, its FLOPs those of its product (written out here); a
    /// ReLU after it, launched outside taks's ops, is a row of burn's kernel; the clock
    /// sees as many launches as the launch count of the same work.
    #[test]
    fn a_convolution_is_timed_as_one_op_on_the_device() {
        let (device, conv, x) = a_small_convolution();
        let forward = || crate::ops::conv::forward(&conv, x.clone());
        // Compiled, and its way chosen, before it is clocked.
        let _ = forward().into_data();
        let (_, counted) = count(&device, forward);
        let (_, alone) = clock(&device, forward);
        assert!(alone.device_time, "lavapipe has timestamp queries");
        let [conv_row] = alone.ops.as_slice() else {
            panic!("one row: {:?}", alone.ops);
        };
        assert_eq!(conv_row.op, "conv forward");
        assert_eq!(conv_row.shape, "2x3x8x8 -> 4, 3x3/1");
        assert_eq!((conv_row.calls, conv_row.launches), (1, counted));
        assert_eq!(conv_row.timed, conv_row.launches);
        assert!(conv_row.seconds > 0.0, "{conv_row:?}");
        assert_eq!(conv_row.cost.flops, (2 * 2 * 4 * 64 * 3 * 9) as f64);

        let with_relu = || relu(forward());
        let (_, counted) = count(&device, with_relu);
        let (_, with_relu) = clock(&device, with_relu);
        assert_eq!(with_relu.launches(), counted);
        let (ours, burns): (Vec<_>, Vec<_>) =
            with_relu.ops.iter().partition(|o| o.op == "conv forward");
        assert_eq!(ours.len(), 1, "{:?}", with_relu.ops);
        assert!(!burns.is_empty(), "the ReLU's kernels: {:?}", with_relu.ops);
        for row in burns {
            assert!(row.op.starts_with("burn: "), "{row:?}");
            assert_eq!((row.shape.as_str(), row.cost), ("", Cost::default()));
        }
        assert!(with_relu.span >= with_relu.busy && with_relu.busy > 0.0);
        assert!(with_relu.busy <= with_relu.kernel_seconds() + 1e-9);
    }

    /// On lavapipe: taks's kernels dispatched through wgpu directly (here under
    /// `TAKS_GPU_DIRECT`, as the kernel on cooperative matrices always is on Vulkan) are
    /// timed by their own timestamps: the convolution's row has every launch it made, each
    /// with device time, none untimed, and `busy` holds their seconds; the same work
    /// through cubecl has the same rows and launches.
    #[test]
    fn a_kernel_dispatched_directly_is_timed_on_the_device() {
        use crate::plan::{GpuConv, Switches};
        let (device, conv, x) = a_small_convolution();
        // im2col: taks's kernel, then burn's matmul.
        let forward = || crate::ops::conv::forward(&conv, x.clone());
        let mut rows = Vec::new();
        for direct in [false, true] {
            let switches = Switches {
                direct,
                conv: GpuConv::Im2col,
                ..Switches::environment()
            };
            switches.during(|| {
                let _ = forward().into_data();
                let ((), went_direct) =
                    crate::gpu::launches::direct_launches(&device, || drop(forward()));
                let (_, clocked) = clock(&device, forward);
                assert_eq!(went_direct > 0, direct);
                assert_eq!(clocked.untimed, 0);
                let [row] = clocked.ops.as_slice() else {
                    panic!("one row: {:?}", clocked.ops);
                };
                assert_eq!(row.timed, row.launches, "{row:?}");
                assert!(row.seconds > 0.0, "{row:?}");
                assert!(clocked.busy > 0.0 && clocked.busy <= clocked.kernel_seconds() + 1e-9);
                if direct {
                    let im2col = (row.kernels.iter()).find(|k| k.0.starts_with("taks_im2col"));
                    assert!(im2col.is_some(), "{row:?}");
                }
                rows.push((row.op.clone(), row.launches));
            });
        }
        assert_eq!(rows[0], rows[1]);
    }

    #[test]
    fn busy_is_the_union_and_span_first_to_last() {
        let (span, busy) = span_and_busy(vec![(5.0, 6.0), (0.0, 2.0), (1.0, 3.0), (5.5, 5.8)]);
        assert_eq!(span, 6.0);
        assert_eq!(busy, 4.0);
        assert_eq!(span_and_busy(Vec::new()), (0.0, 0.0));
    }
}
