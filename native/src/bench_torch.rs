//! `taks bench --torch PYTHON`: the same TAkS epoch as a tight PyTorch loop, timed in the
//! same run, so the ratio compares like with like on one machine at one moment.
//!
//! The loop is `native/src/torch_epoch.py`, compiled into the binary and written next
//! to the data it reads, so it works from any directory. taks hands it its own training
//! samples (normalised), noisy labels and first k-set as raw little-endian files: both
//! loops train the same network (the MLP, the CNN or ResNet-18, built the same way) on
//! the same data with the same batch size, learning rate, scoring chunk and eta. On the
//! CPU PyTorch gets as many threads as taks's thread pool ([`taks_core::cpu_threads`]);
//! on a GPU it runs on CUDA twice ([`arithmetics`]): like for like (full FP32, TF32 off,
//! beside taks's f32; autocast to f16 or bf16 beside a mixed-precision run), and with
//! PyTorch's defaults (f32 weights, TF32 convolutions on tensor cores), what its users
//! get. The script times training and scoring separately, and both are shown.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use taks_core::precision::Precision;
use taks_core::train::Trainer;

const SCRIPT: &str = include_str!("torch_epoch.py");

/// What the script measured.
#[derive(Debug, Deserialize)]
pub struct TorchEpochs {
    pub torch: String,
    /// Whether its convolutions ran in TF32 (PyTorch's CUDA default) rather than FP32.
    pub tf32: bool,
    /// The training step's arithmetic: `f32`, or autocast to `f16` or `bf16`.
    pub precision: String,
    /// Where it ran: "cpu, N threads" or the CUDA device's name.
    pub device: String,
    pub n: usize,
    pub k: usize,
    pub epoch_seconds: Vec<f64>,
    pub train_seconds: Vec<f64>,
    pub score_seconds: Vec<f64>,
}

impl TorchEpochs {
    /// Its arithmetic, for the bench's table.
    pub fn arithmetic(&self) -> &'static str {
        match (self.precision.as_str(), self.tf32) {
            ("f16", _) => "autocast f16",
            ("bf16", _) => "autocast bf16",
            (_, true) => "TF32 convolutions",
            _ => "FP32",
        }
    }
}

/// What one PyTorch loop computes in: its training step's precision (autocast for f16
/// or bf16) and, on CUDA, whether its convolutions keep PyTorch's TF32 default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arithmetic {
    pub precision: Precision,
    pub tf32: bool,
}

/// The loops beside a taks run in `precision`: on CUDA the like-for-like one first (full
/// FP32 beside f32, autocast beside mixed precision), then PyTorch's defaults (f32, TF32
/// convolutions); on the CPU, where TF32 does not exist, the like-for-like one alone.
pub fn arithmetics(precision: Precision, cuda: bool) -> Vec<Arithmetic> {
    let alike = Arithmetic {
        precision,
        tf32: false,
    };
    let defaults = Arithmetic {
        precision: Precision::F32,
        tf32: true,
    };
    match cuda {
        true => vec![alike, defaults],
        false => vec![alike],
    }
}

/// A scratch folder removed when dropped, whatever happened in between.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The last non-blank line a failed Python printed on stderr (its exception).
fn last_line(stderr: &[u8]) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    last.unwrap_or("").to_string()
}

/// Refuse early what the comparison cannot run: a Python that cannot import torch and
/// numpy, or (for `cuda`) whose torch sees no CUDA device (checked before any epoch is
/// timed).
pub fn check(python: &Path, cuda: bool) -> Result<()> {
    let probe = match cuda {
        true => {
            "import torch, numpy; assert torch.cuda.is_available(), 'torch sees no CUDA device'"
        }
        false => "import torch, numpy",
    };
    let output = Command::new(python)
        .args(["-c", probe])
        .output()
        .with_context(|| format!("--torch: cannot run {}", python.display()))?;
    if !output.status.success() {
        let last = last_line(&output.stderr);
        bail!("--torch: {} cannot run the loop: {last}", python.display());
    }
    Ok(())
}

/// Time `warmup + timed` epochs of the PyTorch loop with `python` on the data, labels,
/// first k-set, network and settings of `trainer` (a TAkS trainer that has not stepped
/// yet) whose samples are `shape` = [C, H, W], on CUDA when `cuda`, else on the CPU with
/// taks's thread count; in `arithmetic` (with `tf32`, PyTorch's CUDA defaults, TF32
/// convolutions, else full FP32; the training step autocast for f16 or bf16).
#[allow(clippy::too_many_arguments)]
pub fn run(
    python: &Path,
    trainer: &Trainer,
    shape: [usize; 3],
    cuda: bool,
    arithmetic: Arithmetic,
    warmup: usize,
    timed: usize,
) -> Result<TorchEpochs> {
    let config = trainer.config();
    let n = trainer.train_len();
    let images = trainer.train_images();
    let first = match trainer.selector() {
        Some(selector) => pollster::block_on(selector.current_indices_host())?,
        None => bail!("--torch needs the TAkS run's first k-set"),
    };
    let labels = &trainer.labels().noisy_labels;
    let classes = trainer.classes();

    let dir = std::env::temp_dir().join(format!("taks-bench-torch-{}", std::process::id()));
    // A fresh folder of our own: a leftover of the same name is an error, not reused.
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let scratch = Scratch(dir);
    let write = |name: &str, bytes: Vec<u8>| -> Result<PathBuf> {
        let path = scratch.0.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    let le_f32 = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let le_u32 = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let script = write("torch_epoch.py", SCRIPT.as_bytes().to_vec())?;
    let images_path = write("images.f32", le_f32(&images))?;
    let labels_path = write("labels.u32", le_u32(labels))?;
    let first_path = write("first.u32", le_u32(&first))?;
    let threads = taks_core::cpu_threads();
    let [c, h, w] = shape;

    let output = Command::new(python)
        .arg(&script)
        .args(["--images".as_ref(), images_path.as_os_str()])
        .args(["--labels".as_ref(), labels_path.as_os_str()])
        .args(["--first".as_ref(), first_path.as_os_str()])
        .args(["--model", config.architecture.name()])
        .args(["--shape", &format!("{c},{h},{w}")])
        .args(["--device", if cuda { "cuda" } else { "cpu" }])
        .args(["--classes", &classes.to_string()])
        .args(["--eta", &config.eta(n).to_string()])
        .args(["--lr", &config.learning_rate.to_string()])
        .args(["--batch-size", &config.batch_size.to_string()])
        .args(["--chunk", &config.eval_batch_size.to_string()])
        .args(["--epochs", &timed.to_string()])
        .args(["--warmup", &warmup.to_string()])
        .args(["--threads", &threads.to_string()])
        .args(["--seed", &config.seed.to_string()])
        .args(["--tf32", if arithmetic.tf32 { "default" } else { "off" }])
        .args(["--precision", arithmetic.precision.name()])
        .output()
        .with_context(|| format!("running {}", python.display()))?;
    if !output.status.success() {
        let last = last_line(&output.stderr);
        bail!("the PyTorch loop failed ({}): {last}", output.status);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    serde_json::from_str(line)
        .with_context(|| format!("reading the PyTorch loop's result from {stdout:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On CUDA a run meets PyTorch like for like first, then PyTorch's defaults (f32 with
    /// TF32 convolutions), whatever its own precision; on the CPU only like for like.
    #[test]
    fn each_run_meets_pytorch_alike_and_as_it_defaults() {
        let alike = |precision| Arithmetic {
            precision,
            tf32: false,
        };
        let defaults = Arithmetic {
            precision: Precision::F32,
            tf32: true,
        };
        for precision in Precision::ALL {
            assert_eq!(arithmetics(precision, true), [alike(precision), defaults]);
            assert_eq!(arithmetics(precision, false), [alike(precision)]);
        }
    }
}
