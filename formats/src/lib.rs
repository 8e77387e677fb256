//! The file formats of taks: the datasets it reads (IDX for MNIST-like sets, the CIFAR
//! binary version, a user's image folders, CSV tables and NumPy `.npy` features and labels),
//! the checkpoints it writes and resumes from, and the pretrained weights it starts from
//! (a torch `.pth` or a `.safetensors` state_dict).
//!
//! They live apart from `taks-core` for two reasons: a parser is the part of a program
//! that meets hostile bytes, so it is fuzzed (`fuzz/`), and a fuzzer must rebuild what
//! it tests with instrumentation, which for this crate takes seconds instead of the
//! many minutes burn takes. Nothing here knows about tensors or devices; every reader
//! checks sizes against the bytes actually present before it allocates, so a lying
//! header is an error, never a huge allocation.

pub mod atomic;
pub mod checkpoint;
pub mod cifar;
pub mod csv_table;
pub mod error;
pub mod idx;
pub mod image_folder;
pub mod labels;
pub mod npy;
pub mod npy_write;
pub mod pickle;
#[cfg(not(target_arch = "wasm32"))]
pub mod pth;
pub mod resample;
pub mod state_dict;
pub mod tensors;
pub mod weights;

pub use error::{FormatError, Result};
