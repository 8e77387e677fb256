//! How convolutional networks run their convolutions' forward passes on a wgpu device.
//!
//! burn's WGSL compiler gives a 3x3 convolution's forward pass only direct kernels, which
//! on a large GPU were the slow part of the CNN's and ResNet-18's epochs; the backward
//! passes already autotune among im2col-based kernels. taks adds a second forward kernel,
//! im2col and a matmul ([`super::im2col`]), and by default measures, the first time a
//! process meets a convolution of some shape, which of the two is faster on this device
//! ([`forward_fastest`]), then keeps using that one. In the scoring pass it also folds
//! eval-mode batch norm into the convolution before it. `TAKS_GPU_CONV` can force a way,
//! so that `scripts/gpu-bench.sh` can time each on the same card; on flex none of this
//! applies, and in the browser (no blocking reads to time with) burn's kernel runs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use burn::tensor::{Device, Tensor};

use super::gpu_conv_store::{self, Kept};
use super::gpu_matmul::GpuMatmul;
use crate::gpu::bridge;

/// The way, from `TAKS_GPU_CONV` (`auto` when unset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuConv {
    /// `plain`: the networks' own forward passes (burn's convolutions, batch norm after).
    Plain,
    /// `folded`: the scoring pass with batch norm folded into burn's convolution;
    /// training as `plain`.
    Folded,
    /// `im2col`: the scoring pass folded, and every convolution's forward pass (training
    /// and scoring) as im2col and a matmul; the backward pass stays burn's.
    Im2col,
    /// `auto`: as `im2col`, but each shape runs whichever of burn's kernel and im2col
    /// measured faster on this device the first time.
    Auto,
}

impl GpuConv {
    /// From the environment; an unknown value is an error the caller reports
    /// (`taks` checks it before anything runs).
    pub fn from_env() -> Result<Self, String> {
        match std::env::var("TAKS_GPU_CONV").as_deref() {
            Err(_) | Ok("auto") => Ok(Self::Auto),
            Ok("im2col") => Ok(Self::Im2col),
            Ok("folded") => Ok(Self::Folded),
            Ok("plain") => Ok(Self::Plain),
            Ok(other) => Err(format!(
                "TAKS_GPU_CONV={other:?}: expected auto, im2col, folded or plain"
            )),
        }
    }

    /// [`GpuConv::from_env`] read once per process (`auto` if the value is unknown; `taks`
    /// refuses that before this is read).
    pub fn current() -> Self {
        static CURRENT: std::sync::OnceLock<GpuConv> = std::sync::OnceLock::new();
        *CURRENT.get_or_init(|| Self::from_env().unwrap_or(Self::Auto))
    }

    /// Whether convolutions go through [`forward_fastest`] (in training too).
    pub(crate) fn offers_im2col(self) -> bool {
        matches!(self, Self::Im2col | Self::Auto)
    }
}

/// A convolution's shape, as far as its speed goes: input `[N, C, H, W]`, weights
/// `[O, C, kh, kw]`, stride, padding, and what follows it in the same kernel (bias, ReLU).
/// Measurements are kept per power-of-two bucket of N, so that an epoch's last, shorter
/// batch or chunk is not measured again.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ConvShape {
    pub input: [usize; 4],
    pub weight: [usize; 4],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub epilogue: &'static str,
}

/// What was measured for one shape: seconds per forward pass of burn's kernel and of
/// im2col + matmul (the better of two runs, after a first one that compiles).
/// Timing costs six forward passes per shape once per process: milliseconds on a GPU,
/// a minute or more on a software adapter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    pub direct: f64,
    pub im2col: f64,
    /// Read from an earlier process's timings ([`super::gpu_conv_store`]), not measured
    /// in this one.
    pub earlier: bool,
}

static MEASURED: Mutex<BTreeMap<ConvShape, Measured>> = Mutex::new(BTreeMap::new());

/// The adapters whose kept timings were read into [`MEASURED`] in this process.
static LOADED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// The forward pass of a convolution of `shape` on `device`, by burn's kernel (`direct`)
/// or by im2col and a matmul (`im2col`, `None` where it cannot run), as `how` says; under
/// `auto` the first call for a shape in this process times both.
pub(crate) fn forward_fastest(
    how: GpuConv,
    shape: ConvShape,
    device: &Device,
    direct: impl Fn() -> Tensor<4>,
    im2col: impl Fn() -> Option<Tensor<4>>,
) -> Tensor<4> {
    if !how.offers_im2col() {
        return direct();
    }
    let mut shape = shape;
    shape.input[0] = shape.input[0].next_power_of_two();
    let known = || MEASURED.lock().ok().and_then(|m| m.get(&shape).copied());
    let use_im2col = if how == GpuConv::Im2col {
        true
    } else if let Some(m) = known() {
        m.im2col < m.direct
    } else {
        // Not met yet in this process: an earlier process may have timed it here (not
        // in the browser, which keeps nothing and cannot time).
        // Timings made with taks's tiled matmul (its patches implicit) are kept apart
        // from burn's.
        let adapter = if cfg!(target_arch = "wasm32") {
            None
        } else {
            bridge::adapter_identity(device).map(|a| match GpuMatmul::current() {
                GpuMatmul::Tiled => format!("{a}, TAKS_GPU_MATMUL=tiled, implicit patches"),
                GpuMatmul::Burn => a,
            })
        };
        if let Some(adapter) = &adapter {
            load_kept(adapter);
        }
        match known() {
            Some(m) => m.im2col < m.direct,
            None => match measure(device, &direct, &im2col) {
                Some(m) => {
                    if let Ok(mut all) = MEASURED.lock() {
                        all.insert(shape.clone(), m);
                    }
                    if let Some(adapter) = &adapter {
                        gpu_conv_store::append(adapter, shape.kept(m));
                    }
                    m.im2col < m.direct
                }
                None => {
                    // im2col cannot run here (or the device cannot be waited for):
                    // burn's kernel, without asking again for this shape.
                    let never = Measured {
                        direct: 0.0,
                        im2col: f64::INFINITY,
                        earlier: false,
                    };
                    if let Ok(mut all) = MEASURED.lock() {
                        all.insert(shape.clone(), never);
                    }
                    false
                }
            },
        }
    };
    if use_im2col {
        im2col().unwrap_or_else(direct)
    } else {
        direct()
    }
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
    let kept = gpu_conv_store::load(adapter);
    if let Ok(mut all) = MEASURED.lock() {
        for (shape, m) in kept.into_iter().filter_map(ConvShape::from_kept) {
            all.entry(shape).or_insert(m);
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
            direct_s: m.direct,
            im2col_s: m.im2col,
        }
    }

    /// A kept timing back as a shape and its times; `None` for an epilogue this version
    /// does not name (a line from another version).
    fn from_kept(k: Kept) -> Option<(ConvShape, Measured)> {
        let epilogue = EPILOGUES.into_iter().find(|e| *e == k.epilogue)?;
        let shape = ConvShape {
            input: k.input,
            weight: k.weight,
            stride: k.stride,
            padding: k.padding,
            epilogue,
        };
        let measured = Measured {
            direct: k.direct_s,
            im2col: k.im2col_s,
            earlier: true,
        };
        Some((shape, measured))
    }
}

/// Every shape measured in this process so far or read from an earlier one's timings,
/// with its times, for `taks bench`.
pub fn measured_shapes() -> Vec<(String, Measured)> {
    let all = MEASURED.lock().map(|m| m.clone()).unwrap_or_default();
    all.into_iter()
        .map(|(s, m)| {
            let [n, c, h, w] = s.input;
            let [o, _, kh, kw] = s.weight;
            let name = format!(
                "(up to {n})x{c}x{h}x{w} -> {o}, {kh}x{kw}/{} pad {}{}",
                s.stride[0],
                s.padding[0],
                if s.epilogue.is_empty() {
                    String::new()
                } else {
                    format!(", {}", s.epilogue)
                }
            );
            (name, m)
        })
        .collect()
}

/// Time both kernels on the device (blocking reads; not in the browser). `None` when
/// im2col cannot run here or the device cannot be waited for.
#[cfg(not(target_arch = "wasm32"))]
fn measure(
    device: &Device,
    direct: &dyn Fn() -> Tensor<4>,
    im2col: &dyn Fn() -> Option<Tensor<4>>,
) -> Option<Measured> {
    use std::time::Instant;
    let time = |f: &dyn Fn() -> Option<Tensor<4>>| -> Option<f64> {
        device.sync().ok()?;
        let started = Instant::now();
        let y = f()?;
        device.sync().ok()?;
        drop(y);
        Some(started.elapsed().as_secs_f64())
    };
    let direct = || Some(direct());
    // First runs compile the kernels (and let burn autotune its own): not counted.
    time(&direct)?;
    time(im2col)?;
    let mut best = Measured {
        direct: f64::INFINITY,
        im2col: f64::INFINITY,
        earlier: false,
    };
    for _ in 0..2 {
        best.direct = best.direct.min(time(&direct)?);
        best.im2col = best.im2col.min(time(im2col)?);
    }
    Some(best)
}

#[cfg(target_arch = "wasm32")]
fn measure(
    _: &Device,
    _: &dyn Fn() -> Tensor<4>,
    _: &dyn Fn() -> Option<Tensor<4>>,
) -> Option<Measured> {
    None
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use burn::tensor::Distribution;

    use super::*;

    /// A second process reads the first one's timing instead of measuring again. The
    /// "second process" is this one with the shape forgotten, as a new process starts.
    #[test]
    fn a_second_process_reads_the_first_ones_timing() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let folder = std::env::temp_dir().join(format!("taks-conv-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        gpu_conv_store::keep_in(Some(folder.clone()));
        // A shape no other test meets (5 channels, 13x11).
        let shape = ConvShape {
            input: [4, 5, 13, 11],
            weight: [4, 5, 3, 3],
            stride: [1, 1],
            padding: [1, 1],
            epilogue: "",
        };
        let x = Tensor::<4>::random([4, 5, 13, 11], Distribution::Default, &device);
        let w = Tensor::<4>::random([4, 5, 3, 3], Distribution::Default, &device);
        let runs = Cell::new(0);
        let direct = || {
            runs.set(runs.get() + 1);
            burn::tensor::module::conv2d(
                x.clone(),
                w.clone(),
                None,
                burn::tensor::ops::ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
            )
        };
        let im2col = || Some(direct());
        let first = forward_fastest(GpuConv::Auto, shape.clone(), &device, direct, im2col);
        // Measuring runs each way three times, then the chosen one.
        assert_eq!(runs.get(), 7, "the first process measures");
        let text = std::fs::read_to_string(folder.join(gpu_conv_store::FILE_NAME)).unwrap();
        assert!(text.contains("[4,5,13,11]"), "the timing is kept: {text}");

        // A new process: nothing in memory; a cut line and garbage in the file too.
        let kept = MEASURED.lock().unwrap().remove(&shape).unwrap();
        LOADED.lock().unwrap().clear();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(folder.join(gpu_conv_store::FILE_NAME))
            .unwrap();
        std::io::Write::write_all(&mut file, b"not json\n{\"adapter\":\"cut").unwrap();
        runs.set(0);
        let second = forward_fastest(GpuConv::Auto, shape.clone(), &device, direct, im2col);
        assert_eq!(runs.get(), 1, "the second process measures nothing");
        let read = MEASURED.lock().unwrap().get(&shape).copied().unwrap();
        assert!(read.earlier && !kept.earlier);
        assert_eq!((read.direct, read.im2col), (kept.direct, kept.im2col));
        let gap: f32 = (first - second).abs().max().into_scalar();
        assert_eq!(gap, 0.0);
        gpu_conv_store::keep_in(None);
        let _ = std::fs::remove_dir_all(&folder);
    }
}
