//! The convolution timings of [`super::gpu_conv`] kept between processes.
//!
//! Under `TAKS_GPU_CONV=auto` each process times burn's kernel against im2col for every
//! convolution shape it meets. That is a few forward passes per shape, but on an H100 it
//! made a second process's first CNN epoch 25 s against 5.4 s warm, most of it these
//! timings (and the compilations they force). So what one process measured, the next one
//! reads: one JSON line per (adapter, shape) in `taks-conv.jsonl`, in the folder where
//! cubecl keeps its own autotune results (the user's cache folder; see
//! [`crate::gpu::tuning_cache`]). A line is appended as soon as a shape is measured, so a
//! run stopped midway keeps what it measured, and concurrent runs only add lines; a line
//! that does not parse (a cut last line, an older format) is skipped. Each line names the
//! adapter (its name, cubecl's fingerprint, the compiler) and the taks version, so a
//! different card, driver path or release measures again.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::gpu_conv::{ConvShape, Measured};

/// The file's name in the cache folder.
pub const FILE_NAME: &str = "taks-conv.jsonl";

/// Where timings are kept; `None` (the default, and in tests unless they set one): kept
/// in this process only.
static PATH: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Keep timings in `folder` (created when the first line is written), or nowhere. The
/// `taks` binary calls this once at start with cubecl's cache folder, unless
/// `CUBECL_AUTOTUNE_CACHE=0`.
pub fn keep_in(folder: Option<PathBuf>) {
    if let Ok(mut path) = PATH.lock() {
        *path = folder.map(|f| f.join(FILE_NAME));
    }
}

/// One kept measurement.
#[derive(Serialize, Deserialize)]
struct Line {
    adapter: String,
    taks: String,
    input: [usize; 4],
    weight: [usize; 4],
    stride: [usize; 2],
    padding: [usize; 2],
    epilogue: String,
    direct_s: f64,
    im2col_s: f64,
}

/// The epilogues [`ConvShape`] names, as their `'static` strings; a line with another
/// one comes from some other version and is skipped.
const EPILOGUES: [&str; 3] = ["", "bias", "bias, relu"];

/// Every timing kept for `adapter` by this version of taks.
pub(crate) fn load(adapter: &str) -> Vec<(ConvShape, Measured)> {
    let Some(path) = PATH.lock().ok().and_then(|p| p.clone()) else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<Line>(line).ok())
        .filter(|l| l.adapter == adapter && l.taks == env!("CARGO_PKG_VERSION"))
        .filter(|l| l.direct_s.is_finite() && l.im2col_s.is_finite())
        .filter_map(|l| {
            let epilogue = EPILOGUES.into_iter().find(|e| *e == l.epilogue)?;
            let shape = ConvShape {
                input: l.input,
                weight: l.weight,
                stride: l.stride,
                padding: l.padding,
                epilogue,
            };
            let measured = Measured {
                direct: l.direct_s,
                im2col: l.im2col_s,
                earlier: true,
            };
            Some((shape, measured))
        })
        .collect()
}

/// Add one timing for `adapter`. Best effort: a cache folder that cannot be written
/// costs the next process a measurement, never this run.
pub(crate) fn append(adapter: &str, shape: &ConvShape, measured: Measured) {
    let Some(path) = PATH.lock().ok().and_then(|p| p.clone()) else {
        return;
    };
    let line = Line {
        adapter: adapter.to_string(),
        taks: env!("CARGO_PKG_VERSION").to_string(),
        input: shape.input,
        weight: shape.weight,
        stride: shape.stride,
        padding: shape.padding,
        epilogue: shape.epilogue.to_string(),
        direct_s: measured.direct,
        im2col_s: measured.im2col,
    };
    let Ok(mut text) = serde_json::to_string(&line) else {
        return;
    };
    text.push('\n');
    if let Some(folder) = path.parent() {
        let _ = std::fs::create_dir_all(folder);
    }
    // One write of the whole line in append mode: lines of concurrent runs do not
    // interleave within a line on local file systems.
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = file.write_all(text.as_bytes());
    }
}
