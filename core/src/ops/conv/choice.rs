//! How convolutional networks run their convolutions' forward passes on a wgpu device.
//!
//! burn's WGSL compiler gives a 3x3 convolution's forward pass only direct kernels, which
//! on a large GPU were the slow part of the CNN's and ResNet-18's epochs. taks adds two
//! more ways ([`Way`]): im2col and a matmul ([`super::im2col`]), and taks's tiled matmul
//! with the patches computed as it loads them ([`super::implicit`]). By default it
//! measures, the first time a process meets a convolution of some shape, which is fastest
//! on this device ([`forward_fastest`]), then keeps using that one; a training step's
//! backward pass follows the forward pass's choice ([`backward_way`]). In the scoring pass
//! it also folds eval-mode batch norm into the convolution before it. `TAKS_GPU_CONV` and
//! `TAKS_GPU_MATMUL` can force a way, so that `scripts/gpu-bench.sh` can time each on the
//! same card: which ways they leave, and where nothing needs timing, are the execution
//! plan's rules ([`crate::plan::Switches`]); on flex none of this applies, and in the browser (no blocking reads to time
//! with) burn's kernel runs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use burn::tensor::{Device, Tensor};

use super::timings::{self, Kept};
use crate::gpu::bridge;
use crate::plan::{GpuConv, Switches, Way};

/// A convolution's shape, as far as its speed goes: input `[N, C, H, W]`, weights
/// `[O, C, kh, kw]`, stride, padding, what follows it in the same kernel (bias, ReLU), and
/// whether it runs in a 16-bit type (a mixed-precision step's; f32 otherwise). Measurements are
/// kept per power-of-two bucket of N, so that an epoch's last, shorter batch or chunk is
/// not measured again.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ConvShape {
    pub input: [usize; 4],
    pub weight: [usize; 4],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub epilogue: &'static str,
    pub low: bool,
}

/// What was measured for one shape: seconds per forward pass of each way (the better of
/// two runs, after a first one that compiles), infinite for a way not measured (not a
/// candidate, or it cannot run for this shape). Timing costs three forward passes per
/// way and shape once per process: milliseconds on a GPU, a minute or more on a software
/// adapter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// burn's own convolution kernel.
    pub burn: f64,
    pub im2col: f64,
    pub implicit: f64,
    /// Read from an earlier process's timings ([`super::timings`]), not measured
    /// in this one.
    pub earlier: bool,
}

impl Measured {
    /// Nothing measured yet: every way infinitely slow.
    const NONE: Measured = Measured {
        burn: f64::INFINITY,
        im2col: f64::INFINITY,
        implicit: f64::INFINITY,
        earlier: false,
    };

    fn of(&self, way: Way) -> f64 {
        match way {
            Way::Burn => self.burn,
            Way::Im2col => self.im2col,
            Way::Implicit => self.implicit,
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn of_mut(&mut self, way: Way) -> &mut f64 {
        match way {
            Way::Burn => &mut self.burn,
            Way::Im2col => &mut self.im2col,
            Way::Implicit => &mut self.implicit,
        }
    }

    /// The fastest way measured; burn's kernel on a tie or when nothing was.
    pub fn fastest(&self) -> Way {
        [Way::Im2col, Way::Implicit]
            .into_iter()
            .fold(
                Way::Burn,
                |best, w| {
                    if self.of(w) < self.of(best) { w } else { best }
                },
            )
    }
}

/// This process's timings, each under the candidates it was measured among
/// ([`Switches::candidates`]): work handed other switches ([`Switches::during`]) meets
/// its own timings, never a way its switches leave out.
static MEASURED: Mutex<BTreeMap<(&str, ConvShape), Measured>> = Mutex::new(BTreeMap::new());

/// The timing of `shape` among the present switches' candidates, where there is one.
fn known(shape: &ConvShape) -> Option<Measured> {
    let key = (Switches::current().candidates(), shape.clone());
    MEASURED.lock().ok().and_then(|m| m.get(&key).copied())
}

/// Keep `m` as the timing of `shape` among the present switches' candidates (`None`:
/// forget it, as a new process would not know it).
fn remember(shape: ConvShape, m: Option<Measured>) {
    let key = (Switches::current().candidates(), shape);
    if let Ok(mut all) = MEASURED.lock() {
        match m {
            Some(m) => all.insert(key, m),
            None => all.remove(&key),
        };
    }
}

/// The adapters whose kept timings were read into [`MEASURED`] in this process.
static LOADED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// The forward pass of a convolution of `shape` on `device` by the [`Way`] `how` says:
/// `run(way)` runs it (`None` where that way cannot run; `Way::Burn` always can). Under
/// `auto` the first call for a shape in this process times every candidate.
pub(crate) fn forward_fastest(
    how: GpuConv,
    shape: ConvShape,
    device: &Device,
    run: impl Fn(Way) -> Option<Tensor<4>>,
) -> Tensor<4> {
    let burn = || run(Way::Burn).expect("burn's convolution always runs");
    let way = match Switches::current().forced_way(how, shape.low) {
        Some(way) => way,
        None => chosen(shape, device, &run),
    };
    match way {
        Way::Burn => burn(),
        way => run(way).unwrap_or_else(burn),
    }
}

/// The way a training step's backward pass takes for a convolution of `shape`, as the
/// plan says from what its forward pass measured ([`Switches::backward_way`]).
pub(crate) fn backward_way(shape: &ConvShape) -> Way {
    let mut bucket = shape.clone();
    bucket.input[0] = bucket.input[0].next_power_of_two();
    Switches::current().backward_way(shape.low, known(&bucket).map(|m| m.fastest()))
}

/// The fastest way for `shape`: measured in this process, read from an earlier one's
/// timings, or measured now.
fn chosen(shape: ConvShape, device: &Device, run: &dyn Fn(Way) -> Option<Tensor<4>>) -> Way {
    let mut shape = shape;
    shape.input[0] = shape.input[0].next_power_of_two();
    if let Some(m) = known(&shape) {
        return m.fastest();
    }
    // Not met yet in this process: an earlier process may have timed it here (not in the
    // browser, which keeps nothing and cannot time). Timings are kept per adapter and
    // per choice of `TAKS_GPU_MATMUL`, whose candidates differ.
    let adapter = if cfg!(target_arch = "wasm32") {
        None
    } else {
        bridge::adapter_identity(device).map(|a| Switches::current().timings_key(a))
    };
    if let Some(adapter) = &adapter {
        load_kept(adapter);
    }
    if let Some(m) = known(&shape) {
        return m.fastest();
    }
    // Where nothing can be measured (the device cannot be waited for): burn's kernel,
    // without asking again for this shape.
    let m = measure(device, Switches::current().conv_ways(shape.low), run).unwrap_or(Measured {
        burn: 0.0,
        ..Measured::NONE
    });
    remember(shape.clone(), Some(m));
    if let Some(adapter) = &adapter
        && m.burn > 0.0
    {
        timings::append(adapter, shape.kept(m));
    }
    m.fastest()
}

/// Read the timings kept for `adapter` into [`MEASURED`], once per process (a shape
/// measured in this process keeps its own timing).
fn load_kept(adapter: &str) {
    let first = LOADED
        .lock()
        .map(|mut loaded| loaded.insert(adapter.to_string()))
        .unwrap_or(false);
    if !first {
        return;
    }
    let kept = timings::load(adapter);
    let candidates = Switches::current().candidates();
    if let Ok(mut all) = MEASURED.lock() {
        for (shape, m) in kept.into_iter().filter_map(ConvShape::from_kept) {
            all.entry((candidates, shape)).or_insert(m);
        }
    }
}

/// The epilogues a [`ConvShape`] names, as their `'static` strings.
const EPILOGUES: [&str; 3] = ["", "bias", "bias, relu"];

impl ConvShape {
    /// This shape's timing `m`, as it is kept between processes.
    fn kept(&self, m: Measured) -> Kept {
        Kept {
            input: self.input,
            weight: self.weight,
            stride: self.stride,
            padding: self.padding,
            epilogue: self.epilogue.to_string(),
            low: self.low,
            burn_s: m.burn,
            im2col_s: m.im2col.is_finite().then_some(m.im2col),
            implicit_s: m.implicit.is_finite().then_some(m.implicit),
        }
    }

    /// A kept timing back as a shape and its times; `None` for an epilogue this version
    /// does not name or a line without a time for every candidate (a line from another
    /// version).
    fn from_kept(k: Kept) -> Option<(ConvShape, Measured)> {
        let epilogue = EPILOGUES.into_iter().find(|e| *e == k.epilogue)?;
        let shape = ConvShape {
            input: k.input,
            weight: k.weight,
            stride: k.stride,
            padding: k.padding,
            epilogue,
            low: k.low,
        };
        let mut measured = Measured {
            burn: k.burn_s,
            earlier: true,
            ..Measured::NONE
        };
        for way in Switches::current().conv_ways(shape.low) {
            match way {
                Way::Burn => {}
                Way::Im2col => measured.im2col = k.im2col_s?,
                Way::Implicit => measured.implicit = k.implicit_s?,
            }
        }
        Some((shape, measured))
    }
}

/// Every shape measured in this process so far or read from an earlier one's timings,
/// among the present switches' candidates, with its times, for `taks bench`.
pub fn measured_shapes() -> Vec<(String, Measured)> {
    let all = MEASURED.lock().map(|m| m.clone()).unwrap_or_default();
    let candidates = Switches::current().candidates();
    all.into_iter()
        .filter(|((c, _), _)| *c == candidates)
        .map(|((_, s), m)| {
            let [n, c, h, w] = s.input;
            let [o, _, kh, kw] = s.weight;
            let name = format!(
                "(up to {n})x{c}x{h}x{w} -> {o}, {kh}x{kw}/{} pad {}{}{}",
                s.stride[0],
                s.padding[0],
                if s.epilogue.is_empty() {
                    String::new()
                } else {
                    format!(", {}", s.epilogue)
                },
                if s.low { ", 16-bit" } else { "" }
            );
            (name, m)
        })
        .collect()
}

/// Time every candidate way on the device (blocking reads; not in the browser): a way
/// that cannot run for this shape stays infinite. `None` when the device cannot be
/// waited for.
#[cfg(not(target_arch = "wasm32"))]
fn measure(
    device: &Device,
    candidates: &[Way],
    run: &dyn Fn(Way) -> Option<Tensor<4>>,
) -> Option<Measured> {
    use std::time::Instant;
    let time = |way: Way| -> Option<Option<f64>> {
        device.sync().ok()?;
        let started = Instant::now();
        let Some(y) = run(way) else {
            return Some(None);
        };
        device.sync().ok()?;
        drop(y);
        Some(Some(started.elapsed().as_secs_f64()))
    };
    let mut best = Measured::NONE;
    // First runs compile the kernels (and let burn autotune its own): not counted.
    let mut ways = Vec::new();
    for &way in candidates {
        if time(way)?.is_some() {
            ways.push(way);
        }
    }
    for _ in 0..2 {
        for &way in &ways {
            let t = time(way)?.unwrap_or(f64::INFINITY);
            let slot = best.of_mut(way);
            *slot = slot.min(t);
        }
    }
    Some(best)
}

#[cfg(target_arch = "wasm32")]
fn measure(_: &Device, _: &[Way], _: &dyn Fn(Way) -> Option<Tensor<4>>) -> Option<Measured> {
    None
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use burn::tensor::Distribution;

    use super::*;
    use crate::plan::GpuMatmul;
    use crate::test_support::random;

    /// The fastest way wins; burn's kernel on a tie or where nothing ran.
    #[test]
    fn the_fastest_way_wins() {
        let m = |burn, im2col, implicit| Measured {
            burn,
            im2col,
            implicit,
            earlier: false,
        };
        assert_eq!(m(3.0, 2.0, 1.0).fastest(), Way::Implicit);
        assert_eq!(m(3.0, 1.0, 2.0).fastest(), Way::Im2col);
        assert_eq!(m(1.0, 2.0, 3.0).fastest(), Way::Burn);
        assert_eq!(m(1.0, 1.0, 1.0).fastest(), Way::Burn);
        assert_eq!(Measured::NONE.fastest(), Way::Burn);
        assert_eq!(m(0.0, f64::INFINITY, f64::INFINITY).fastest(), Way::Burn);
    }

    /// A training step's backward pass takes the implicit convolution where the forward
    /// pass measured it fastest for the shape (its batch in the same bucket), im2col where
    /// not, unless `TAKS_GPU_MATMUL` forces a matmul.
    #[test]
    fn the_backward_pass_follows_the_forward_choice() {
        // A shape no other test meets (7 channels, 9x9); a batch of 6 is bucket 8.
        let shape = ConvShape {
            input: [6, 7, 9, 9],
            weight: [3, 7, 3, 3],
            stride: [1, 1],
            padding: [1, 1],
            epilogue: "",
            low: false,
        };
        let mut bucket = shape.clone();
        bucket.input[0] = 8;
        // Every setting of the two switches the choice follows, handed to the plan in
        // turn; the expectations are written out here, not asked of the plan.
        for matmul in [GpuMatmul::Auto, GpuMatmul::Burn, GpuMatmul::Tiled] {
            for coop in [false, true] {
                let switches = Switches {
                    matmul,
                    coop,
                    ..Switches::DEFAULT
                };
                switches.during(|| backward_follows(&shape, &bucket, matmul, coop));
            }
        }
    }

    /// [`the_backward_pass_follows_the_forward_choice`] under `matmul` and `coop`.
    fn backward_follows(shape: &ConvShape, bucket: &ConvShape, matmul: GpuMatmul, coop: bool) {
        for (fastest, im2col, implicit) in [(Way::Implicit, 2.0, 1.0), (Way::Im2col, 1.0, 2.0)] {
            let m = Measured {
                burn: 3.0,
                im2col,
                implicit,
                earlier: false,
            };
            remember(bucket.clone(), Some(m));
            let expected = match matmul {
                GpuMatmul::Auto => fastest,
                GpuMatmul::Burn => Way::Im2col,
                GpuMatmul::Tiled => Way::Implicit,
            };
            assert_eq!(
                backward_way(shape),
                expected,
                "{fastest:?} fastest, {matmul:?}"
            );
        }
        // In 16 bits, im2col whatever was measured, unless cooperative matrices are
        // switched on.
        let expected_low = match (coop, matmul) {
            (false, _) | (true, GpuMatmul::Burn) => Way::Im2col,
            (true, _) => Way::Implicit,
        };
        let low = ConvShape {
            low: true,
            ..shape.clone()
        };
        let mut low_bucket = low.clone();
        low_bucket.input[0] = 8;
        let measured = Measured {
            burn: 3.0,
            im2col: 2.0,
            implicit: 1.0,
            earlier: false,
        };
        remember(low_bucket.clone(), Some(measured));
        assert_eq!(
            backward_way(&low),
            expected_low,
            "16 bits, {matmul:?}, coop {coop}"
        );
        remember(bucket.clone(), None);
        remember(low_bucket, None);
    }

    /// The timings measured under one setting of the switches are not another's: a
    /// shape timed with im2col fastest where it is a candidate is measured again where
    /// `TAKS_GPU_MATMUL=tiled` leaves only burn's and the implicit way.
    #[test]
    fn timings_are_kept_per_candidates() {
        let shape = ConvShape {
            input: [8, 6, 7, 7],
            weight: [2, 6, 3, 3],
            stride: [1, 1],
            padding: [1, 1],
            epilogue: "",
            low: false,
        };
        let fastest_im2col = Measured {
            burn: 3.0,
            im2col: 1.0,
            implicit: 2.0,
            earlier: false,
        };
        remember(shape.clone(), Some(fastest_im2col));
        assert_eq!(known(&shape).map(|m| m.fastest()), Some(Way::Im2col));
        let tiled = Switches {
            matmul: GpuMatmul::Tiled,
            ..Switches::DEFAULT
        };
        tiled.during(|| assert_eq!(known(&shape), None));
        assert!(
            measured_shapes()
                .iter()
                .any(|(name, _)| name.contains("x6x7x7")),
            "taks bench lists it under its own switches"
        );
        tiled.during(|| assert!(!measured_shapes().iter().any(|(n, _)| n.contains("x6x7x7"))));
        remember(shape, None);
    }

    /// A kept line without a time for one of this process's candidates (an older
    /// version's, before the implicit convolution) is measured again, not read as
    /// "never the implicit one".
    #[test]
    fn a_line_missing_a_candidate_is_not_read() {
        // Under each setting of `TAKS_GPU_MATMUL`, handed to the plan in turn.
        for matmul in [GpuMatmul::Auto, GpuMatmul::Burn, GpuMatmul::Tiled] {
            let switches = Switches {
                matmul,
                ..Switches::environment()
            };
            switches.during(a_line_missing_a_candidate_under_the_switches);
        }
    }

    fn a_line_missing_a_candidate_under_the_switches() {
        let shape = ConvShape {
            input: [8, 3, 5, 5],
            weight: [2, 3, 3, 3],
            stride: [1, 1],
            padding: [1, 1],
            epilogue: "bias",
            low: false,
        };
        let full = Measured {
            burn: 3.0,
            im2col: 2.0,
            implicit: 1.0,
            earlier: false,
        };
        let (read, m) = ConvShape::from_kept(shape.kept(full)).expect("a whole line");
        assert_eq!(read, shape);
        assert!(m.earlier);
        // Every candidate's time comes back; a way that is not one stays infinite.
        for &way in Switches::current().conv_ways(false) {
            assert_eq!(m.of(way), full.of(way), "{way:?}");
        }
        let old: Kept = serde_json::from_str(
            r#"{"input":[8,3,5,5],"weight":[2,3,3,3],"stride":[1,1],"padding":[1,1],"epilogue":"bias","direct_s":3.0,"im2col_s":2.0}"#,
        )
        .expect("the older format parses");
        assert_eq!(old.implicit_s, None);
        let read = ConvShape::from_kept(old);
        // The implicit way is an f32 candidate except under `TAKS_GPU_MATMUL=burn`.
        match Switches::current().matmul != GpuMatmul::Burn {
            true => assert!(read.is_none(), "no implicit time: measure again"),
            false => assert_eq!(read.map(|(_, m)| m.im2col), Some(2.0)),
        }
        // Without cooperative matrices a 16-bit shape never has an implicit time (not a
        // candidate there): its line is read, and kept apart from the f32 shape's.
        if Switches::current().coop {
            return;
        }
        let low = ConvShape { low: true, ..shape };
        assert!(!Switches::current().conv_ways(true).contains(&Way::Implicit));
        let half = Measured {
            implicit: f64::INFINITY,
            ..full
        };
        let kept = low.kept(half);
        assert_eq!(kept.implicit_s, None);
        let (read, m) = ConvShape::from_kept(kept).expect("a 16-bit line is whole without it");
        assert_eq!(read, low);
        assert_ne!(read, shape);
        for &way in Switches::current().conv_ways(true) {
            assert_eq!(m.of(way), half.of(way), "{way:?}");
        }
    }

    /// A second process reads the first one's timing instead of measuring again. The
    /// "second process" is this one with the shape forgotten, as a new process starts.
    #[test]
    fn a_second_process_reads_the_first_ones_timing() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let folder = std::env::temp_dir().join(format!("taks-conv-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        timings::keep_in(Some(folder.clone()));
        // A shape no other test meets (5 channels, 13x11).
        let shape = ConvShape {
            input: [4, 5, 13, 11],
            weight: [4, 5, 3, 3],
            stride: [1, 1],
            padding: [1, 1],
            epilogue: "",
            low: false,
        };
        let x = random([4, 5, 13, 11], Distribution::Default, 1, &device);
        let w = random([4, 5, 3, 3], Distribution::Default, 2, &device);
        let runs = Cell::new(0);
        let burns = || {
            runs.set(runs.get() + 1);
            burn::tensor::module::conv2d(
                x.clone(),
                w.clone(),
                None,
                burn::tensor::ops::ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
            )
        };
        let run = |_: Way| Some(burns());
        let first = forward_fastest(GpuConv::Auto, shape.clone(), &device, run);
        // Measuring runs each way three times, then the chosen one.
        let ways = Switches::current().conv_ways(false).len();
        assert!(ways >= 2);
        assert_eq!(runs.get(), 3 * ways + 1, "the first process measures");
        let text = std::fs::read_to_string(folder.join(timings::FILE_NAME)).unwrap();
        assert!(text.contains("[4,5,13,11]"), "the timing is kept: {text}");

        // A new process: nothing in memory; a cut line and garbage in the file too.
        let kept = known(&shape).unwrap();
        remember(shape.clone(), None);
        LOADED.lock().unwrap().clear();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(folder.join(timings::FILE_NAME))
            .unwrap();
        std::io::Write::write_all(&mut file, b"not json\n{\"adapter\":\"cut").unwrap();
        runs.set(0);
        let second = forward_fastest(GpuConv::Auto, shape.clone(), &device, run);
        assert_eq!(runs.get(), 1, "the second process measures nothing");
        let read = known(&shape).unwrap();
        assert!(read.earlier && !kept.earlier);
        assert_eq!(
            (read.burn, read.im2col, read.implicit),
            (kept.burn, kept.im2col, kept.implicit)
        );
        assert_eq!(read.fastest(), kept.fastest());
        let gap: f32 = (first - second).abs().max().into_scalar();
        assert_eq!(gap, 0.0);
        timings::keep_in(None);
        let _ = std::fs::remove_dir_all(&folder);
    }
}
