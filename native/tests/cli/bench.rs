//! `taks bench` and `taks bench-select`: PyTorch's loop handed its run, first epochs
//! apart, every engine, generated images, a device and a folder named, the per-op clock.

use super::*;

/// `taks bench --torch PYTHON` hands the PyTorch loop its run and reads back what the
/// loop measured. No PyTorch here: PYTHON is a shell script in its place that answers
/// the import probe, checks what taks wrote (the images' size against n samples of the
/// shape it was told, every label below the classes, every first-k index below n, the
/// settings it passes), and prints the line the real loop prints, with known times.
/// The bench's PyTorch row and ratio must carry those times, and n and k must be
/// taks's own.
#[cfg(unix)]
#[test]
fn bench_hands_the_torch_loop_its_run() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("torch-stub");
    std::fs::create_dir_all(&dir).unwrap();
    let stub = dir.join("python");
    std::fs::write(
        &stub,
        r#"#!/bin/sh
# A stand-in for Python with torch: the probe, then the loop's contract.
[ "$1" = "-c" ] && exit 0
shift
while [ $# -gt 0 ]; do
    case "$1" in
        --images) images=$2 ;; --labels) labels=$2 ;; --first) first=$2 ;;
        --shape) shape=$2 ;; --classes) classes=$2 ;; --epochs) epochs=$2 ;;
        --model) model=$2 ;; --device) device=$2 ;; --precision) precision=$2 ;;
    esac
    shift 2
done
fail() { echo "stub: $*" >&2; exit 3; }
n=$(( $(wc -c < "$labels") / 4 ))
k=$(( $(wc -c < "$first") / 4 ))
features=$(echo "$shape" | tr ',' '*')
[ $(wc -c < "$images") -eq $(( n * $features * 4 )) ] || fail "images are not n x $shape floats"
top=$(od -An -v -tu4 "$labels" | tr -s ' ' '\n' | sort -n | tail -1)
[ "$top" -lt "$classes" ] || fail "label $top of $classes classes"
top=$(od -An -v -tu4 "$first" | tr -s ' ' '\n' | sort -n | tail -1)
[ "$top" -lt "$n" ] || fail "first-k index $top of $n"
[ "$model" = mlp ] && [ "$device" = cpu ] && [ "$precision" = f32 ] || fail "settings $model $device $precision"
[ "$epochs" = 2 ] || fail "epochs $epochs"
echo "{\"torch\": \"stub\", \"tf32\": false, \"precision\": \"f32\", \"device\": \"cpu, 1 threads\", \"n\": $n, \"k\": $k, \"epoch_seconds\": [0.25, 0.75], \"train_seconds\": [0.2, 0.6], \"score_seconds\": [0.05, 0.15]}"
"#,
    )
    .unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = taks(&[
        "bench",
        "--dataset",
        "mnist-digits",
        "--devices",
        "cpu",
        "--methods",
        "taks",
        "--warmup",
        "1",
        "--epochs",
        "2",
        "--train-limit",
        "600",
        "--torch",
        stub.to_str().unwrap(),
    ]);
    assert_succeeded(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let cells = |prefix: &str| -> Vec<String> {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no row starting {prefix} in {stdout}"));
        line.split('|').map(|c| c.trim().to_string()).collect()
    };
    let taks_row = cells("| cpu | taks |");
    let torch_row =
        cells("| cpu | PyTorch stub loop (FP32) on cpu, 1 threads (train 0.400 + score 0.100) |");
    // | cpu | method | n | k | first | mean | min | x T |
    assert_eq!(
        torch_row[3..5],
        taks_row[3..5],
        "n and k: {torch_row:?} {taks_row:?}"
    );
    assert_eq!(taks_row[3], "600");
    assert_eq!(torch_row[6..8], ["0.500", "0.250"]);
    let taks_mean: f64 = taks_row[6].parse().unwrap();
    let ratio = stdout
        .lines()
        .find_map(|l| l.strip_prefix("taks / PyTorch (FP32), TAkS epoch on cpu: "))
        .unwrap_or_else(|| panic!("no ratio in {stdout}"));
    let printed: f64 = ratio.split(' ').next().unwrap().parse().unwrap();
    assert!(
        (printed - taks_mean / 0.5).abs() <= 0.01 + 1e-3 / 0.5,
        "{ratio} against {taks_mean} / 0.5"
    );
    assert!(ratio.ends_with(" s / 0.500 s)"), "{ratio}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `taks bench` on the CPU: one row per method with its first epoch apart from the timed
/// ones, Standard's time ratio to itself, and the per-million projection from TAkS's row.
#[test]
fn bench_reports_first_epochs_apart_and_the_projection() {
    let out = taks(&[
        "bench",
        "--dataset",
        "mnist-digits",
        "--devices",
        "cpu",
        "--methods",
        "taks,standard",
        "--warmup",
        "1",
        "--epochs",
        "2",
        "--train-limit",
        "1000",
        "--forward-rates",
    ]);
    assert_succeeded(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("| device | method | n | k | first epoch s | mean epoch s | min epoch s |"),
        "{stdout}"
    );
    let row = |method: &str| -> Vec<String> {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| cpu | {method} |")))
            .unwrap_or_else(|| panic!("no {method} row in {stdout}"));
        line.split('|').map(|c| c.trim().to_string()).collect()
    };
    let (taks_row, standard) = (row("taks"), row("standard"));
    // | cpu | method | n | k | first | mean | min | x T |
    assert_eq!(taks_row[3], "1000");
    assert_eq!(standard[4], "1000", "Standard trains on every sample");
    let number = |s: &str| s.parse::<f64>().unwrap();
    let (first, mean, min) = (
        number(&taks_row[5]),
        number(&taks_row[6]),
        number(&taks_row[7]),
    );
    // Timed, not left at zero. (The mean is held to the other printed figures below:
    // the time ratio and the per-million projection.)
    assert!(first > 0.0 && min > 0.0 && mean > 0.0, "{taks_row:?}");
    assert_eq!(standard[8], "1.00");
    // TAkS's ratio is its mean epoch over Standard's, as printed (to the rounding of the
    // printed means, a millisecond each).
    let (ratio, standard_mean) = (number(&taks_row[8]), number(&standard[6]));
    let (low, high) = (
        (mean - 5e-4) / (standard_mean + 5e-4),
        (mean + 5e-4) / (standard_mean - 5e-4).max(1e-9),
    );
    assert!(
        ratio >= low - 0.005 && ratio <= high + 0.005,
        "x T {ratio} against means {mean} / {standard_mean}"
    );
    let projection = stdout
        .lines()
        .find_map(|l| l.strip_prefix("TAkS epoch per million samples of this shape on cpu: "))
        .unwrap_or_else(|| panic!("no projection in {stdout}"));
    let seconds = number(projection.trim_end_matches(" s"));
    // The mean is printed to a millisecond: the projection agrees within that rounding.
    assert!(
        (seconds - mean * 1000.0).abs() <= 1.0,
        "{seconds} s per million against a {mean} s epoch of 1,000"
    );
    assert!(
        !projection.contains("Clothing1M"),
        "28x28 digits are not Clothing1M's"
    );
    // Each method's two forward passes, timed after its epochs: a training step's and
    // the scoring pass's, in samples per second.
    let rates = stdout
        .lines()
        .skip_while(|l| !l.starts_with("| device | method | training step's forward, samples/s |"))
        .collect::<Vec<_>>();
    for method in ["taks", "standard"] {
        let line = rates
            .iter()
            .find(|l| l.starts_with(&format!("| cpu | {method} |")))
            .unwrap_or_else(|| panic!("no {method} forward rates in {stdout}"));
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (training, scoring) = (number(cells[3]), number(cells[4]));
        assert!(
            training.is_finite() && training > 0.0 && scoring.is_finite() && scoring > 0.0,
            "{line}"
        );
    }
}

/// `taks bench-select` times each engine on each device for every size: one row each,
/// k = floor(n * k-ratio), a positive median; burn's sort only up to `--sort-max`.
#[test]
fn bench_select_times_every_engine() {
    let out = taks(&[
        "bench-select",
        "--sizes",
        "50000,200000",
        "--k-ratio",
        "0.3",
        "--repeats",
        "2",
        "--devices",
        "cpu,gpu",
        "--sort-max",
        "100000",
    ]);
    assert_succeeded(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (n, k) in [("50000", "15000"), ("200000", "60000")] {
        let rows: Vec<Vec<&str>> = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("| {n} |")))
            .map(|l| l.split('|').map(str::trim).collect())
            .collect();
        // The host reference, then per device the sort; on the GPU also the WGSL select
        // and the whole selection step.
        let engines: Vec<&str> = rows.iter().map(|r| r[3]).collect();
        assert!(
            engines.iter().any(|e| e.starts_with("CPU reference"))
                && engines.iter().any(|e| e.starts_with("WGSL radix select"))
                && engines.iter().any(|e| e.starts_with("WGSL whole step")),
            "{stdout}"
        );
        let sorted = engines.iter().any(|e| e.starts_with("burn argsort"));
        assert_eq!(sorted, n == "50000", "--sort-max 100000: {stdout}");
        for row in &rows {
            assert_eq!(row[2], k, "{stdout}");
            let ms: f64 = row[5].parse().unwrap();
            assert!(ms > 0.0 && ms.is_finite(), "{stdout}");
        }
    }
}

/// `taks bench` on generated images through a network named: the row times that many
/// samples (n from `--generated`, k from `--k-ratio`) on that network, which the run
/// names; the default for 32x32 colour would be the CNN.
#[test]
fn bench_times_generated_images_on_the_network_named() {
    let out = taks(&[
        "bench",
        "--dataset",
        "cifar10",
        "--generated",
        "200x3x32x32",
        "--model",
        "resnet18",
        "--devices",
        "cpu",
        "--methods",
        "taks",
        "--warmup",
        "0",
        "--epochs",
        "1",
        "--k-ratio",
        "0.5",
    ]);
    assert_succeeded(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("network: resnet18 on 3x32x32 samples"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("| cpu | taks |"))
        .unwrap_or_else(|| panic!("no TAkS row in {stdout}"))
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!((row[3], row[4]), ("200", "100"), "{stdout}");
}

/// `taks bench --device gpu` times the GPU (it once timed the CPU and said nothing:
/// only `--devices` counted), and `--data` a folder of the user's own, its network
/// chosen from its images as `train --data` chooses it: 4 training images of 2 classes.
#[test]
fn bench_times_the_device_and_the_folder_named() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/files/split-ok");
    let out = taks(&[
        "bench",
        "--data",
        corpus.to_str().unwrap(),
        "--device",
        "gpu",
        "--methods",
        "taks",
        "--warmup",
        "0",
        "--epochs",
        "1",
        "--batch-size",
        "2",
    ]);
    assert_succeeded(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| ")).collect();
    assert!(
        rows.iter().any(|l| l.starts_with("| gpu | taks | 4 |")),
        "{stdout}"
    );
    assert!(!rows.iter().any(|l| l.starts_with("| cpu |")), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("2 classes; train 4, val 4, test 4"),
        "{stderr}"
    );
}

/// `taks bench --clock` on lavapipe: the per-op GPU clock of the CNN's training step and
/// scoring chunk, by device timestamps, a row per op and layer shape whose GFLOP is that
/// layer's product (written out here: 2 x batch x out channels x output pixels x in
/// channels x taps), with the first layer's input gradient absent (nothing asks for it)
/// and as many launches as the launch count of the same step. Without a GPU among the
/// devices the flag is refused. On 16x16 images with every convolution by im2col: under
/// `auto` the run would first time each layer's ways, minutes on lavapipe.
#[test]
fn bench_clocks_every_op_of_a_gpu_step() {
    let refused = taks(&["bench", "--devices", "cpu", "--clock"]);
    assert_user_error(&refused, "--clock times GPU kernels");
    let out = taks_with(
        &[("TAKS_GPU_CONV", "im2col")],
        &[
            "bench",
            "--dataset",
            "cifar10",
            "--generated",
            "32x3x16x16",
            "--devices",
            "gpu",
            "--methods",
            "taks",
            "--warmup",
            "0",
            "--epochs",
            "1",
            "--k-ratio",
            "0.5",
            "--batch-size",
            "16",
            "--eval-batch",
            "32",
            "--test-limit",
            "32",
            "--clock",
        ],
    );
    assert_succeeded(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let section = |what: &str| -> Vec<Vec<String>> {
        let head = format!("per-op GPU clock of a taks {what} on gpu: ");
        let start = stdout
            .find(&head)
            .unwrap_or_else(|| panic!("no clock of the {what} in {stdout}"));
        stdout[start..]
            .lines()
            .skip(3)
            .take_while(|l| l.starts_with("| "))
            .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
            .collect()
    };
    let header = |what: &str| -> String {
        let head = format!("per-op GPU clock of a taks {what} on gpu: ");
        let line = stdout.lines().find(|l| l.starts_with(&head)).unwrap();
        line.to_string()
    };
    let gflop = |batch: usize, c: usize, o: usize, side: usize| {
        format!("{:.3}", (2 * batch * o * side * side * c * 9) as f64 / 1e9)
    };
    let step = section("training step");
    let row = |rows: &[Vec<String>], op: &str, layer: &str| -> Option<Vec<String>> {
        rows.iter().find(|r| r[1] == op && r[2] == layer).cloned()
    };
    for op in [
        "conv forward",
        "conv input gradient",
        "conv weight gradient",
    ] {
        let r = row(&step, op, "16x64x16x16 -> 64, 3x3/1")
            .unwrap_or_else(|| panic!("no {op} row of the second layer in {stdout}"));
        assert_eq!(r[7], gflop(16, 64, 64, 16), "{op}: {stdout}");
        let ms: f64 = r[5].parse().unwrap();
        assert!(ms > 0.0, "{op}: {stdout}");
        let r = row(&step, op, "16x128x8x8 -> 128, 3x3/1")
            .unwrap_or_else(|| panic!("no {op} row of the fourth layer in {stdout}"));
        assert_eq!(r[7], gflop(16, 128, 128, 8), "{op}: {stdout}");
    }
    let first = "16x3x16x16 -> 64, 3x3/1";
    assert!(
        row(&step, "conv weight gradient", first).is_some(),
        "{stdout}"
    );
    assert!(
        row(&step, "conv input gradient", first).is_none(),
        "{stdout}"
    );
    assert!(step.iter().any(|r| r[1] == "adam"), "{stdout}");
    let training = header("training step");
    assert!(training.contains("device timestamps"), "{training}");
    // As many launches as the launch count of the same step.
    let counted = stdout
        .lines()
        .find(|l| l.starts_with("| gpu | taks | ") && l.split('|').count() == 6)
        .unwrap_or_else(|| panic!("no launch count in {stdout}"));
    let launches = counted.split('|').map(str::trim).nth(3).unwrap();
    assert!(
        training.contains(&format!(": {launches} launches,")),
        "{training} / {counted}"
    );
    let scoring = section("scoring chunk");
    assert!(
        row(
            &scoring,
            "conv scoring (batch norm folded)",
            "32x64x16x16 -> 64, 3x3/1"
        )
        .is_some_and(|r| r[7] == gflop(32, 64, 64, 16)),
        "{stdout}"
    );
}
