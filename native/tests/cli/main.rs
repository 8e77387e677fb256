//! End-to-end tests of the `taks` binary: a real (small) run on the bundled digits and
//! the one-line errors a user's mistakes must produce, one file per subcommand or
//! concern; this file holds what they share (running the binary, scratch folders, the
//! data they write).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, PoisonError};

#[path = "../../../tests/npy_file/mod.rs"]
mod npy_file;
use npy_file::write_npy;
#[path = "../../../tests/skip/mod.rs"]
mod skip;
use skip::skip;
mod bench;
mod corpus;
mod experiment;
mod folders;
mod gpu;
mod settings;
mod train;
mod tune;

fn taks(args: &[&str]) -> Output {
    taks_with(&[], args)
}

/// [`taks`] with these variables set in its environment.
fn taks_with(vars: &[(&str, &str)], args: &[&str]) -> Output {
    let _turn = gpu_turn(args);
    Command::new(env!("CARGO_BIN_EXE_taks"))
        .envs(vars.iter().copied())
        .args(args)
        .output()
        .expect("the taks binary runs")
}

/// The GPU's turn, for a run that asks for it (`--device gpu`, `--devices cpu,gpu`): such
/// runs go one at a time. Two `taks` processes that meet the same new kernel shape at
/// once each tune it (cubecl keeps the result for the processes after, not for one
/// running beside): up to a minute and a half of compiling on lavapipe per shape, which
/// the tests' first run on a fresh machine paid twice over (docs/benchmarks.md, "Build
/// and test").
fn gpu_turn(args: &[&str]) -> Option<MutexGuard<'static, ()>> {
    static GPU: Mutex<()> = Mutex::new(());
    args.iter()
        .any(|a| a.split(',').any(|d| d == "gpu"))
        .then(|| GPU.lock().unwrap_or_else(PoisonError::into_inner))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("taks-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The exit code of a panic (a bug in taks), distinct from a user error's.
const BUG: i32 = 70;

/// A user error: exit code 1 (2 for a flag clap rejects), exactly one line on stderr
/// naming the problem, and never the report of a bug.
fn assert_user_error(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {stderr}"
    );
    assert_ne!(out.status.code(), Some(BUG), "a panic: {stderr}");
    assert!(
        matches!(out.status.code(), Some(1 | 2)),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    assert!(!stderr.contains("bug in taks"), "{stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains(needle), "'{needle}' not in: {stderr}");
}

/// A run that must succeed; its stderr is the failure message.
fn assert_succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copy a folder tree (the corpus, so that no case can change the committed files).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn write_gz(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    std::fs::write(path, enc.finish().unwrap()).unwrap();
}

fn idx(dims: &[u32], values: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 8, dims.len() as u8];
    dims.iter()
        .for_each(|d| out.extend_from_slice(&d.to_be_bytes()));
    out.extend_from_slice(values);
    out
}

/// A folder of four IDX files, with `damage` applied to the training labels.
fn mnist_folder(name: &str, train_labels: Vec<u8>) -> PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(&dir).unwrap();
    let images = idx(&[20, 28, 28], &vec![128u8; 20 * 784]);
    write_gz(&dir.join("train-images-idx3-ubyte.gz"), &images);
    write_gz(&dir.join("train-labels-idx1-ubyte.gz"), &train_labels);
    write_gz(&dir.join("t10k-images-idx3-ubyte.gz"), &images);
    write_gz(
        &dir.join("t10k-labels-idx1-ubyte.gz"),
        &idx(&[20], &[1u8; 20]),
    );
    dir
}

/// Pixel `p` of image `i` in the learnable folders below: bright inside its class's band,
/// dark outside, with a speckle that differs per pixel and image.
fn striped(in_band: bool, p: usize, i: usize) -> u8 {
    let speckle = ((p * 31 + i * 17) % 40) as u8;
    if in_band { 200 + speckle / 4 } else { speckle }
}

/// Standard training on the clean labels of the `dataset` folder `dir`, 5 epochs at a
/// learning rate of 0.01, into `dir/run`.
fn learn_clean_from_folder(dataset: &str, dir: &Path) -> PathBuf {
    train_run(
        &dir.join("run"),
        &[
            "--dataset",
            dataset,
            "--data-dir",
            dir.to_str().unwrap(),
            "--noise",
            "clean",
            "--method",
            "standard",
            "--epochs",
            "5",
            "--lr",
            "0.01",
        ],
    )
}

/// A JSON file taks wrote.
fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The f32 audit's F1 on 1,000 digits at 30% symmetric noise must pass this, and the
/// f16 audit's must lie this close to it. Measured on lavapipe: 0.825 and 0.827 (an
/// audit that flagged at random would score about 0.37); f16 and f32 are IEEE formats on
/// every adapter, so only the order of sums differs elsewhere.
const F1_FLOOR: f64 = 0.75;

const F1_GAP: f64 = 0.03;

/// Every file under `dir` (none if it does not exist).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .flat_map(|p| if p.is_dir() { walk(&p) } else { vec![p] })
        .collect()
}

/// metrics.csv of a run: its column `name`, one number an epoch.
fn metrics_column(run: &Path, name: &str) -> Vec<f64> {
    let csv = std::fs::read_to_string(run.join("metrics.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no column {name} in {csv}"));
    lines
        .map(|l| l.split(',').nth(at).unwrap().parse().unwrap())
        .collect()
}

/// `taks train` on the CPU with `args`, into `out`, which must succeed.
fn train_run(out: &Path, args: &[&str]) -> PathBuf {
    let mut all = vec!["train", "--device", "cpu", "--quiet", "--out"];
    all.push(out.to_str().unwrap());
    all.extend_from_slice(args);
    assert_succeeded(&taks(&all));
    out.to_path_buf()
}
