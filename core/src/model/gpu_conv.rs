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

use std::collections::BTreeMap;
use std::sync::Mutex;

use burn::tensor::{Device, Tensor};

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
}

static MEASURED: Mutex<BTreeMap<ConvShape, Measured>> = Mutex::new(BTreeMap::new());

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
    let known = MEASURED.lock().ok().and_then(|m| m.get(&shape).copied());
    let use_im2col = match (how, known) {
        (GpuConv::Im2col, _) => true,
        (_, Some(m)) => m.im2col < m.direct,
        (_, None) => match measure(device, &direct, &im2col) {
            Some(m) => {
                if let Ok(mut all) = MEASURED.lock() {
                    all.insert(shape, m);
                }
                m.im2col < m.direct
            }
            None => false,
        },
    };
    if use_im2col {
        im2col().unwrap_or_else(direct)
    } else {
        direct()
    }
}

/// Every shape measured in this process so far, with its times, for `taks bench`.
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
