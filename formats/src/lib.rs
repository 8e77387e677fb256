//! The file formats of taks: the datasets it reads (IDX for MNIST-like sets, the CIFAR
//! binary version, a user's image folders, CSV tables and NumPy `.npy` features and labels) and the checkpoints it writes
//! and resumes from.
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
pub mod tensors;

pub use error::{FormatError, Result};
