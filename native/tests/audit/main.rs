//! `taks audit` and `taks predict` end to end, on data laid out the way users' data is:
//! real digits written as PNG files into class folders (and as a CSV table), with
//! realistic confusions filed under the wrong class, against the truth we filed them by.
//! Plus ResNet-18 on a 224x224 colour folder on flex (its numbers on wgpu against flex:
//! `core/tests/gpu_resnet.rs`). One file per kind of data; this file holds what they
//! share (running the binary, the misfiled digits, reading the outputs).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../../tests/npy_file/mod.rs"]
mod npy_file;
use npy_file::write_npy;

use taks_core::data::bundled_mnist_digits;
mod folders;
mod pretrained;
mod tables;

const NAMES: [&str; 10] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
];

fn taks(args: &[&str]) -> Output {
    taks_with(&[], args)
}

/// `taks` with the environment variables `vars` set.
fn taks_with(vars: &[(&str, &str)], args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_taks"))
        .args(args)
        .envs(vars.iter().copied())
        .output()
        .expect("the taks binary runs");
    assert_ne!(
        out.status.code(),
        Some(70),
        "a panic: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn ok(args: &[&str]) -> String {
    ok_with(&[], args)
}

/// [`ok`] with the environment variables `vars` set.
fn ok_with(vars: &[(&str, &str)], args: &[&str]) -> String {
    let out = taks_with(vars, args);
    assert!(
        out.status.success(),
        "taks {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A fresh folder for one test, emptied first; each test removes it at its end (a
/// failed test leaves it to look at). These folders hold photos, weights and runs, half
/// a gigabyte for the pretrained ones: left behind by every run, they filled the disk.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("taks-audit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The digit people confuse with `class`, if any: 1<->7, 3<->8, 5<->6, 4<->9.
fn confusable(class: u32) -> Option<u32> {
    match class {
        1 => Some(7),
        7 => Some(1),
        3 => Some(8),
        8 => Some(3),
        5 => Some(6),
        6 => Some(5),
        4 => Some(9),
        9 => Some(4),
        _ => None,
    }
}

/// The first `n` bundled digits with labels misfiled at `rate` among the confusable
/// pairs (a fixed hash, so the truth is the same on every run): (pixels, true, given).
fn misfiled_digits(n: usize, rate: f64) -> (Vec<Vec<u8>>, Vec<u32>, Vec<u32>) {
    let split = bundled_mnist_digits().unwrap();
    let mut images = Vec::new();
    let mut given = Vec::new();
    for i in 0..n {
        let px = split.train.samples.range(i, 1);
        images.push(px.iter().map(|&v| (v * 255.0).round() as u8).collect());
        let truth = split.train.labels[i];
        let draw = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
        let flip = (draw as f64 / (1u64 << 53) as f64) < rate;
        given.push(match (flip, confusable(truth)) {
            (true, Some(other)) => other,
            _ => truth,
        });
    }
    (images, split.train.labels[..n].to_vec(), given)
}

/// suspects.csv as rows of column -> value, in file order.
fn read_suspects(dir: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("suspects.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    assert_eq!(
        header,
        [
            "id",
            "given_label",
            "suggested_label",
            "suggested_confidence",
            "label_quality",
            "is_label_issue",
            "cumulative_noise_risk",
            "selected_fraction"
        ]
    );
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

/// F1 of the rows flagged `is_label_issue` against the ids that are truly misfiled.
fn f1(rows: &[HashMap<String, String>], misfiled: &HashMap<String, bool>) -> f64 {
    let flagged: Vec<&String> = rows
        .iter()
        .filter(|r| r["is_label_issue"] == "true")
        .map(|r| &r["id"])
        .collect();
    let tp = flagged.iter().filter(|id| misfiled[id.as_str()]).count() as f64;
    let actual = misfiled.values().filter(|&&m| m).count() as f64;
    let (precision, recall) = (tp / flagged.len().max(1) as f64, tp / actual);
    2.0 * precision * recall / (precision + recall)
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Names and shapes of the tensors of a SafeTensors file.
fn tensor_shapes(path: &Path) -> HashMap<String, Vec<usize>> {
    let bytes = std::fs::read(path).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    file.tensors()
        .into_iter()
        .map(|(name, view)| (name, view.shape().to_vec()))
        .collect()
}

/// The feature values of a CSV written by the test above (every column but `label`).
fn csv_rows(path: &Path) -> Vec<f32> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let label_at = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "label")
        .unwrap();
    lines
        .flat_map(|l| {
            l.split(',')
                .enumerate()
                .filter(|&(i, _)| i != label_at)
                .map(|(_, v)| v.parse::<f32>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// 224x224 colour images: two classes of digits, enlarged and tinted by class.
fn colour_folder(dir: &Path, per_class: usize) {
    let split = bundled_mnist_digits().unwrap();
    let mut written = [0usize; 2];
    for i in 0..split.train.len() {
        let class = split.train.labels[i];
        if class > 1 || written[class as usize] == per_class {
            continue;
        }
        let px = split.train.samples.range(i, 1);
        let image = image::RgbImage::from_fn(224, 224, |x, y| {
            let v = (px[(y / 8 * 28 + x / 8) as usize] * 255.0) as u8;
            if class == 0 {
                image::Rgb([v, v / 2, 40])
            } else {
                image::Rgb([40, v / 2, v])
            }
        });
        let name = ["zero", "one"][class as usize];
        std::fs::create_dir_all(dir.join(name)).unwrap();
        image.save(dir.join(format!("{name}/{i}.jpg"))).unwrap();
        written[class as usize] += 1;
    }
}

/// ResNet-18 through the whole audit and predict on `device`.
fn resnet_audit(device: &str) {
    let dir = scratch(&format!("resnet-{device}"));
    let data = dir.join("photos");
    colour_folder(&data, 2);
    let out = dir.join("audit");
    ok(&[
        "audit",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--device",
        device,
        "--epochs",
        "1",
        "--probe-epochs",
        "1",
        "--probe-folds",
        "2",
        "--batch-size",
        "4",
        "-q",
    ]);
    let s = summary(&out);
    assert_eq!(s["architecture"], "resnet18");
    assert_eq!(
        s["input"],
        serde_json::json!({"kind": "image", "channels": 3, "height": 224, "width": 224})
    );
    assert_eq!(read_suspects(&out).len(), 4);
    // torchvision's resnet18 names, batch norm as weight/bias/running_*.
    let shapes = tensor_shapes(&out.join("model.safetensors"));
    assert_eq!(shapes["conv1.weight"], [64, 3, 7, 7]);
    assert_eq!(shapes["layer2.0.downsample.0.weight"], [128, 64, 1, 1]);
    assert_eq!(shapes["layer4.1.bn2.running_var"], [512]);
    assert_eq!(shapes["fc.weight"], [2, 512]);
    assert_eq!(
        shapes.len(),
        102,
        "every parameter and batch-norm statistic of resnet18"
    );
    let predictions = ok(&[
        "predict",
        "--model",
        out.to_str().unwrap(),
        "--device",
        device,
        data.to_str().unwrap(),
    ]);
    assert_eq!(predictions.lines().count(), 5);
    // The kept model is the audit's final network: read back from model.safetensors by
    // `predict`, it predicts each photo as the audit's suggestion did, with the same
    // confidence (a weight saved under the wrong name, in the wrong layout, or batch
    // norm's statistics lost would move them).
    let suspects = read_suspects(&out);
    for line in predictions.lines().skip(1) {
        // predict names each photo by its path, the audit by its path in the folder.
        let cells: Vec<&str> = line.split(',').collect();
        let audited = suspects
            .iter()
            .find(|s| cells[0].ends_with(&format!("/{}", s["id"])))
            .unwrap_or_else(|| panic!("{} is not in suspects.csv", cells[0]));
        assert_eq!(cells[1], audited["suggested_label"], "{line}");
        let (predicted, suggested): (f64, f64) = (
            cells[2].parse().unwrap(),
            audited["suggested_confidence"].parse().unwrap(),
        );
        assert!(
            (predicted - suggested).abs() < 2e-3,
            "{line}: the audit's confidence was {suggested}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// ResNet-18 weights in torchvision's names, as a `.safetensors` file (a taks network's
/// own weights, written as `taks audit` keeps a model: the same names and layouts).
fn resnet18_weights(path: &Path) {
    use taks_core::nn::{Architecture, Classifier};
    let net = Classifier::new(
        Architecture::ResNet18,
        [3, 32, 32],
        1000,
        &burn::tensor::Device::flex(),
    );
    let bytes = pollster::block_on(taks_core::audit::model_card::pytorch_weights(
        &net,
        Architecture::ResNet18,
    ))
    .unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A Clothing1M-protocol folder of small photos: two classes, two training and two
/// validation images each, `tests` test images each.
fn photo_splits(data: &Path, tests: u8) {
    for split in ["train", "val", "test"] {
        let count = if split == "test" { tests } else { 2 };
        for (c, class) in ["cat", "dog"].iter().enumerate() {
            std::fs::create_dir_all(data.join(split).join(class)).unwrap();
            for i in 0..count {
                let image = image::RgbImage::from_fn(64, 48, |x, y| {
                    image::Rgb([(x * 3) as u8 ^ (i * 37), (y * 5) as u8, 100 * c as u8 + i])
                });
                image
                    .save(data.join(format!("{split}/{class}/{i}.png")))
                    .unwrap();
            }
        }
    }
}

/// A JSON file a run wrote.
fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// One column of a run's metrics.csv, a row per epoch.
fn metrics_column(run: &Path, column: &str) -> Vec<String> {
    let metrics = std::fs::read_to_string(run.join("metrics.csv")).unwrap();
    let header: Vec<&str> = metrics.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|c| *c == column).unwrap();
    metrics
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(at).unwrap().to_string())
        .collect()
}

/// The float values of tensor `name` in the state_dict file `path`.
fn file_tensor(path: &Path, name: &str) -> Vec<f32> {
    use taks_core::formats::state_dict::{self, Weight};
    match state_dict::read(path).unwrap().tensors.remove(name) {
        Some(Weight::Float { values, .. }) => values,
        _ => panic!("{}: no float tensor {name}", path.display()),
    }
}

/// The f32 values of tensor `name` in a run's checkpoint.
fn checkpoint_tensor(run: &Path, name: &str) -> Vec<f32> {
    use taks_core::formats::checkpoint::{Checkpoint, Values};
    let mut checkpoint = Checkpoint::read(&run.join("checkpoint.safetensors")).unwrap();
    match checkpoint.tensors.remove(name).map(|t| t.values) {
        Some(Values::F32(values)) => values,
        _ => panic!("{}: no f32 tensor {name}", run.display()),
    }
}

/// The largest absolute difference of two equally long lists.
fn max_gap(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

/// The first `n` misfiled digits as a folder of PNGs filed by their given labels: (true
/// labels, given labels, which files are misfiled).
fn digit_folder(data: &Path, n: usize) -> (Vec<u32>, Vec<u32>, HashMap<String, bool>) {
    let (images, truth, given) = misfiled_digits(n, 0.3);
    let mut misfiled = HashMap::new();
    for (i, px) in images.iter().enumerate() {
        let id = format!("{}/{i:04}.png", NAMES[given[i] as usize]);
        std::fs::create_dir_all(data.join(NAMES[given[i] as usize])).unwrap();
        image::GrayImage::from_raw(28, 28, px.clone())
            .unwrap()
            .save(data.join(&id))
            .unwrap();
        misfiled.insert(id, truth[i] != given[i]);
    }
    (truth, given, misfiled)
}

/// `taks` in `dir`, its output kept in files there, killed and failed after `limit`: a
/// subcommand that waits on something a folder holds must fail this test, not hang the
/// test command. The limit is a watchdog, far above what the commands take, never a
/// verdict on speed.
fn taks_watched(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let limit = std::time::Duration::from_secs(600);
    let (stdout, stderr) = (dir.join("watched.out"), dir.join("watched.err"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_taks"))
        .args(args)
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("the taks binary runs");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("taks {args:?} still running after {limit:?}: it hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let (out, err) = (read(&stdout), read(&stderr));
    assert_ne!(status.code(), Some(70), "a panic: {err}");
    (status.code(), out, err)
}
