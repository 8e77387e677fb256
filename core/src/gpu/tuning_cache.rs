//! Where the GPU's autotune results live between processes.
//!
//! On a wgpu device burn's matmuls and convolutions each have several kernels, and
//! cubecl times them on the first call of each shape (autotuning). Without a cache that
//! work is repeated by every process: the first epoch of every run pays it (seconds on a
//! large GPU, a minute on a software adapter). With burn's `persistence` feature (on in
//! the native binary) cubecl writes the winners to a database and the next process reads
//! them. By default it puts that database under the outermost `Cargo.toml`'s `target/`,
//! which for an installed `taks` run inside a checkout is the checkout; [`keep_in_user_cache`]
//! moves it to the user's cache folder (`~/.cache/cubecl` on Linux, the platform's
//! equivalent elsewhere) unless a `cubecl.toml` or `burn.toml` names another place.
//! `CUBECL_AUTOTUNE_CACHE=0` turns the cache off. taks keeps its own convolution
//! timings in the same folder ([`crate::ops::conv::timings`]).

/// Keep autotune results in the user's cache folder, and return that folder (`None` when
/// `CUBECL_AUTOTUNE_CACHE=0` turned the cache off). Call before the first GPU device is
/// made; later calls (and calls after cubecl read its configuration) change nothing.
#[cfg(any(target_os = "linux", target_os = "windows", target_os = "macos"))]
pub fn keep_in_user_cache() -> Option<std::path::PathBuf> {
    use cubecl::config::cache::CacheConfig;
    use cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};

    let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
    if matches!(config.environment.path, CacheConfig::Target) {
        config.environment.path = CacheConfig::Global;
    }
    let folder = (!config.autotune.disable_cache).then(|| config.environment.path.root());
    CubeClRuntimeConfig::try_set(config);
    folder
}

/// Elsewhere (the browser) there is no folder to keep it in.
#[cfg(not(any(target_os = "linux", target_os = "windows", target_os = "macos")))]
pub fn keep_in_user_cache() -> Option<std::path::PathBuf> {
    None
}

/// Append `line` (without its newline) to `file` in the cache folder, the folder made
/// first: one write of the whole line in append mode, so that lines of concurrent runs
/// do not interleave within a line on local file systems, and on a line of its own after
/// a cut last line (a run stopped mid-write), which would otherwise take this one with
/// it. taks's own kept measurements and verdicts go through here.
pub fn append_line(file: &std::path::Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(folder) = file.parent() {
        std::fs::create_dir_all(folder)?;
    }
    let cut = std::fs::read(file).is_ok_and(|text| text.last().is_some_and(|&b| b != b'\n'));
    let text = format!("{}{line}\n", if cut { "\n" } else { "" });
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?
        .write_all(text.as_bytes())
}
