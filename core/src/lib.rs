//! taks-core: everything the `taks` command line and the browser demo share.
//!
//! TAkS ("No Regret Sample Selection with Noisy Labels", Song et al.) trains each epoch
//! on a k-set of samples chosen by Follow-the-Perturbed-Leader over the cumulative
//! noise-risk of every sample. This crate holds the data readers, the label-noise
//! recipes, the networks, the selection rules (a plain CPU reference and WGSL kernels),
//! the training loop and the paper's metrics. The front ends only parse input and show
//! output.

pub mod audit;
pub mod data;
#[cfg(not(target_arch = "wasm32"))]
pub mod embedding;
pub mod error;
pub mod gpu;
pub mod holdout;
pub mod methods;
pub mod metrics;
pub mod nn;
pub mod noise;
pub mod ops;
pub mod optim;
pub mod params;
pub mod plan;
pub mod precision;
pub(crate) mod read_back;
pub mod regret;
pub mod rng;
pub mod selection;
pub mod settings;
#[cfg(test)]
mod test_support;
pub mod train;

pub use error::{Error, Result};

/// `path` made absolute against the working folder (as given where it cannot be), as a
/// run's and an embedding's files record the paths they came from.
pub fn absolute(path: &std::path::Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// Threads the CPU backend's pool runs on (1 on wasm32): the CPU fast paths split their
/// work over it, and `taks bench --torch` gives PyTorch as many.
pub fn cpu_threads() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    {
        rayon::current_num_threads()
    }
    #[cfg(target_arch = "wasm32")]
    {
        1
    }
}
/// The file formats (datasets, checkpoints), re-exported for the front ends.
pub use taks_formats as formats;
