//! The convolution timings of [`super::choice`] kept between processes.
//!
//! Under `TAKS_GPU_CONV=auto` each process times burn's kernel against im2col and the
//! implicit convolution for every convolution shape it meets. That is a few forward passes per shape, but on an H100 it
//! made a second process's first CNN epoch 25 s against 5.4 s warm, most of it these
//! timings (and the compilations they force). So what one process measured, the next one
//! reads: one JSON line per (adapter, shape) in `taks-conv.jsonl`, in the folder where
//! cubecl keeps its own autotune results (the user's cache folder; see
//! [`crate::gpu::tuning_cache`]). A line is appended as soon as a shape is measured, so a
//! run stopped midway keeps what it measured, and concurrent runs only add lines; a line
//! that does not parse (a cut last line, an older format) is skipped. Each line names the
//! adapter (its name, cubecl's fingerprint, the compiler) and the taks version, so a
//! different card, driver path or release measures again.

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

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

/// One kept measurement: a convolution's shape (as [`super::choice`] keys it) and the
/// seconds of each way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Kept {
    pub input: [usize; 4],
    pub weight: [usize; 4],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub epilogue: String,
    /// Timed in a 16-bit type (absent, so false, from an older version's lines).
    #[serde(default)]
    pub low: bool,
    /// burn's own kernel; `direct_s` in an earlier version's lines.
    #[serde(alias = "direct_s")]
    pub burn_s: f64,
    /// `None` where im2col was not measured (not a candidate, or it cannot run).
    #[serde(default)]
    pub im2col_s: Option<f64>,
    /// The same for the implicit convolution (absent from an older version's lines).
    #[serde(default)]
    pub implicit_s: Option<f64>,
}

/// A line of the file.
#[derive(Serialize, Deserialize)]
struct Line {
    adapter: String,
    taks: String,
    #[serde(flatten)]
    kept: Kept,
}

/// Every timing kept for `adapter` by this version of taks.
pub(crate) fn load(adapter: &str) -> Vec<Kept> {
    let Some(path) = PATH.lock().ok().and_then(|p| p.clone()) else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<Line>(line).ok())
        .filter(|l| l.adapter == adapter && l.taks == env!("CARGO_PKG_VERSION"))
        .map(|l| l.kept)
        .filter(|k| k.burn_s.is_finite())
        .collect()
}

/// Add one timing for `adapter`. Best effort: a cache folder that cannot be written
/// costs the next process a measurement, never this run.
pub(crate) fn append(adapter: &str, kept: Kept) {
    let Some(path) = PATH.lock().ok().and_then(|p| p.clone()) else {
        return;
    };
    let line = Line {
        adapter: adapter.to_string(),
        taks: env!("CARGO_PKG_VERSION").to_string(),
        kept,
    };
    if let Ok(text) = serde_json::to_string(&line) {
        let _ = crate::gpu::tuning_cache::append_line(&path, &text);
    }
}
