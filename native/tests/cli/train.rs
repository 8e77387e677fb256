//! `taks train` on the built-in sets: a short run's folder, a diverging run, two
//! networks, a killed run resumed, a headless run, CIFAR-100's fine labels.

use super::*;

#[test]
fn a_short_run_writes_its_run_folder() {
    let out_dir = scratch("run");
    let out = taks(&[
        "train",
        "--device",
        "cpu",
        "--epochs",
        "3",
        "--train-limit",
        "2000",
        "--test-limit",
        "500",
        "--save-selections",
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_succeeded(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| taks | symmetric-50% |"), "{stdout}");

    let csv = std::fs::read_to_string(out_dir.join("metrics.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for col in [
        "epoch",
        "train_loss",
        "test_accuracy",
        "label_precision",
        "label_recall",
        "selection_risk",
        "total_selection_risk",
        "regret",
        "regret_bound",
        "paper_bound",
        "epoch_seconds",
    ] {
        assert!(header.contains(&col), "missing column {col}");
    }
    // Every cell a number, but val_accuracy: empty without a validation set.
    let rows: Vec<Vec<f64>> = lines
        .map(|l| {
            l.split(',')
                .zip(&header)
                .map(|(c, h)| match (c, *h) {
                    ("", "val_accuracy") => f64::NAN,
                    _ => c.parse().unwrap(),
                })
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 3);
    let at = |row: &Vec<f64>, name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("config.json")).unwrap())
            .unwrap();
    let eta_ratio = config["config"]["eta_ratio"].as_f64().unwrap();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(at(row, "epoch") as usize, i + 1);
        assert!((0.0..=1.0).contains(&at(row, "test_accuracy")));
        // regret <= k t, so comparing regret with a bound over 3 epochs cannot fail;
        // core/tests/regret.rs plays the selectors against the bound. Check the columns
        // instead, from outside the code that wrote them: the bound is eta G + t G /
        // (4 eta) at this run's eta, with G(2000, 700) = 740.49101 as scipy's quad
        // integrates it (n x phi(x) P(Bin(n - 1, Q(x)) <= k - 1)); the paper's printed
        // formula is 2 sqrt(2 k t ln C(n, k)); and a hindsight risk (total selection risk
        // - regret) lies in [0, k t].
        let t = at(row, "epoch");
        let eta: f64 = (700.0 * 3.0f64).sqrt() * eta_ratio;
        let g = 740.49101;
        let bound = eta * g + t * g / (4.0 * eta);
        assert!(
            (at(row, "regret_bound") / bound - 1.0).abs() < 1e-5,
            "{bound} {csv}"
        );
        let ln_choose: f64 = (1..=700).map(|i| ((1300 + i) as f64 / i as f64).ln()).sum();
        let paper = 2.0 * (2.0 * 700.0 * t * ln_choose).sqrt();
        assert!(
            (at(row, "paper_bound") - paper).abs() < 1e-3,
            "{paper} {csv}"
        );
        let hindsight = at(row, "total_selection_risk") - at(row, "regret");
        assert!((-1e-3..=700.0 * t + 1e-3).contains(&hindsight), "{csv}");
        assert_eq!(at(row, "selected") as usize, 700, "k = floor(2000 * 0.35)");
    }
    // Learning happened: clearly better than chance (10%, with a spread of 0.013 on 500
    // test digits) after 18 noisy steps; measured (seeded) 0.288.
    assert!(at(&rows[2], "test_accuracy") > 0.2, "{csv}");
    // And selection did: epoch 1's k-set is random (measured 0.491, the clean fraction),
    // epoch 3's is chosen by the noise-risk (measured 0.621); a selection no better than
    // chance stays within about 0.02 of the clean fraction for k = 700.
    assert!(at(&rows[0], "label_precision") < 0.53, "{csv}");
    assert!(at(&rows[2], "label_precision") > 0.56, "{csv}");
    assert!(
        at(&rows[2], "train_loss") < at(&rows[0], "train_loss"),
        "{csv}"
    );

    assert_eq!(config["k"], 700);
    assert_eq!(config["config"]["method"], "taks");
    let selected = std::fs::read_to_string(out_dir.join("selected.csv")).unwrap();
    let first: Vec<&str> = selected.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(first[0], "1");
    assert_eq!(first[1].split(' ').count(), 700);
    let svg = std::fs::read_to_string(out_dir.join("plot.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("polyline"));
    assert!(out_dir.join("summary.json").exists());

    // The run keeps its network as a model, names it, and `taks predict` serves it: the
    // 500 test digits written as PNG files are predicted as the run tested them (the
    // same pixels, the loader's preparation), so its accuracy on them is the run's last.
    assert!(
        stdout.contains("plot.svg,checkpoint.safetensors,model.safetensors,model.json}"),
        "{stdout}"
    );
    let digits = taks_core::data::bundled_mnist_digits().unwrap().test;
    let pngs = scratch("run-pngs");
    std::fs::create_dir_all(&pngs).unwrap();
    for i in 0..500 {
        let bytes: Vec<u8> = digits
            .samples
            .range(i, 1)
            .iter()
            .map(|v| (v * 255.0).round() as u8)
            .collect();
        image::GrayImage::from_raw(28, 28, bytes)
            .unwrap()
            .save(pngs.join(format!("{i:03}.png")))
            .unwrap();
    }
    let predicted = taks(&[
        "predict",
        "--model",
        out_dir.to_str().unwrap(),
        "--device",
        "cpu",
        pngs.to_str().unwrap(),
    ]);
    assert_succeeded(&predicted);
    let right = String::from_utf8_lossy(&predicted.stdout)
        .lines()
        .skip(1)
        .enumerate()
        .filter(|(i, line)| line.split(',').nth(1) == Some(&digits.labels[*i].to_string()))
        .count();
    let accuracy = right as f64 / 500.0;
    assert!(
        (accuracy - at(&rows[2], "test_accuracy")).abs() <= 2.0 / 500.0,
        "predict {accuracy}, the run {}",
        at(&rows[2], "test_accuracy")
    );
    std::fs::remove_dir_all(&pngs).unwrap();

    // The finished folder can be tabulated again, and is never overwritten.
    let table = taks(&["table", out_dir.to_str().unwrap()]);
    assert_succeeded(&table);
    assert!(String::from_utf8_lossy(&table.stdout).contains("| taks |"));
    let again = taks(&[
        "train",
        "--device",
        "cpu",
        "--epochs",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_user_error(&again, "already holds a run");
    assert_eq!(
        std::fs::read_to_string(out_dir.join("metrics.csv")).unwrap(),
        csv
    );
    std::fs::remove_dir_all(&out_dir).unwrap();
}

#[test]
fn a_diverging_run_stops_with_one_line_and_keeps_its_folder() {
    let out_dir = scratch("diverge");
    let out = taks(&[
        "train",
        "--device",
        "cpu",
        "--lr",
        "1e30",
        "--epochs",
        "3",
        "--train-limit",
        "500",
        "--test-limit",
        "100",
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_user_error(&out, "diverged at epoch 1");
    assert!(out_dir.join("config.json").exists());
    let csv = std::fs::read_to_string(out_dir.join("metrics.csv")).unwrap();
    assert!(csv.starts_with("epoch,train_loss"), "{csv}");
    std::fs::remove_dir_all(&out_dir).unwrap();
}

#[test]
fn a_two_network_baseline_reports_both_networks() {
    let out_dir = scratch("co-teaching");
    let out = taks(&[
        "train",
        "--device",
        "cpu",
        "--method",
        "co-teaching",
        "--epochs",
        "2",
        "--train-limit",
        "1000",
        "--test-limit",
        "300",
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_succeeded(&out);
    let csv = std::fs::read_to_string(out_dir.join("metrics.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(
        header.ends_with(&["test_accuracy_net1", "test_accuracy_net2"]),
        "{csv}"
    );
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let at = |name: &str| cells[header.iter().position(|h| *h == name).unwrap()];
        // No selector, so no regret; the accuracy is the mean of the two networks'.
        assert_eq!(at("regret"), "", "{csv}");
        let (a, b, mean): (f64, f64, f64) = (
            at("test_accuracy_net1").parse().unwrap(),
            at("test_accuracy_net2").parse().unwrap(),
            at("test_accuracy").parse().unwrap(),
        );
        assert!((mean - (a + b) / 2.0).abs() < 2e-6, "{csv}");
        assert_eq!(at("selected"), "1000");
    }
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["config"]["method"], "co-teaching");
    assert_eq!(config["config"]["forget_rate"], 0.5);
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// A run killed with SIGKILL mid-training and resumed with `--resume` ends exactly as
/// the same run uninterrupted: every row of metrics.csv equal but for the wall time,
/// and the same selections in every epoch.
#[test]
fn a_killed_run_resumes_exactly() {
    let args = |out: &Path| -> Vec<String> {
        [
            "train",
            "--device",
            "cpu",
            "--epochs",
            "40",
            "--train-limit",
            "1500",
            "--test-limit",
            "300",
            "--save-selections",
            "--quiet",
            "--out",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([out.to_str().unwrap().to_string()])
        .collect()
    };
    let whole = scratch("whole");
    let out = Command::new(env!("CARGO_BIN_EXE_taks"))
        .args(args(&whole))
        .output()
        .unwrap();
    assert_succeeded(&out);

    // The killed run keeps a checkpoint every third epoch only (`--checkpoint-every`),
    // so it resumes from the last multiple of 3 and does the epochs after it again. It
    // is killed once it has written 4 of its 40 epochs: the 36 left take far longer than
    // the 2 ms between looks on any machine (25 ms an epoch here), so the kill falls
    // mid-run however fast the machine is (with 8 epochs a fast one finished first).
    let killed = scratch("killed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_taks"))
        .args(args(&killed))
        .args(["--checkpoint-every", "3"])
        .spawn()
        .unwrap();
    let rows = || {
        std::fs::read_to_string(killed.join("metrics.csv"))
            .map(|t| t.lines().count().saturating_sub(1))
            .unwrap_or(0)
    };
    let started = std::time::Instant::now();
    while rows() < 4 {
        assert!(
            started.elapsed().as_secs() < 300,
            "the run never reached epoch 4"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    let written = rows();
    assert!(
        !killed.join("summary.json").exists(),
        "the run finished before the kill; the test proves nothing"
    );
    let out = taks(&["train", "--resume", killed.to_str().unwrap()]);
    assert_succeeded(&out);
    // The checkpoint is the last multiple of 3 at or below the epochs it had written
    // (one more row than the checkpoint where the kill fell between the two writes).
    let resumed = String::from_utf8_lossy(&out.stderr);
    let after: usize = resumed
        .split("after epoch ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no 'after epoch N' in {resumed}"));
    assert!(
        after.is_multiple_of(3) && after >= 3 && after <= written && written - after < 4,
        "resumed after epoch {after} with {written} rows written"
    );

    let table = |dir: &Path| -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let time = header.iter().position(|c| *c == "epoch_seconds").unwrap();
        text.lines()
            .map(|l| {
                let mut cells: Vec<String> = l.split(',').map(String::from).collect();
                cells[time].clear();
                cells
            })
            .collect()
    };
    let expected = table(&whole);
    assert_eq!(expected.len(), 41, "header and 40 epochs");
    assert_eq!(table(&killed), expected);
    assert_eq!(
        std::fs::read_to_string(killed.join("selected.csv")).unwrap(),
        std::fs::read_to_string(whole.join("selected.csv")).unwrap()
    );
    assert!(killed.join("summary.json").exists() && killed.join("plot.svg").exists());
    // Resuming a finished run changes nothing and says so.
    let again = taks(&["train", "--resume", killed.to_str().unwrap()]);
    assert_succeeded(&again);
    assert!(String::from_utf8_lossy(&again.stderr).contains("after epoch 40 of 40"));
    assert_eq!(table(&killed), expected);
    std::fs::remove_dir_all(&whole).unwrap();
    std::fs::remove_dir_all(&killed).unwrap();
}

/// On a headless machine (no `XDG_RUNTIME_DIR`: ssh, containers, CI) looking for a GPU
/// must not print anything that reads as an error: Mesa's Vulkan device-selection layer
/// used to print `error: XDG_RUNTIME_DIR is invalid or not set in the environment.`
/// twice before every run's first line (the adapters are now listed by a child process
/// with the layer off, `device::adapters`). The default device (`auto`) looks.
#[test]
fn a_headless_run_prints_no_error_lines() {
    let dir = scratch("headless");
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("x,y,label\n");
    for i in 0..40 {
        let class = i % 2;
        csv += &format!("{},{},{}\n", class as f32 + 0.01 * i as f32, i % 7, class);
    }
    let path = dir.join("table.csv");
    std::fs::write(&path, csv).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_taks"))
        .args([
            "audit",
            path.to_str().unwrap(),
            "--epochs",
            "2",
            "-q",
            "--out",
        ])
        .arg(dir.join("audit"))
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("NODEVICE_SELECT")
        .output()
        .expect("the taks binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.lines().any(|l| l.to_lowercase().contains("error")),
        "a successful run printed an error line: {stderr}"
    );
    // The child's list reached the parent: without a hardware adapter, the summary names
    // the software one it listed (or says there was none).
    let listed = Command::new(env!("CARGO_BIN_EXE_taks"))
        .arg("list-adapters")
        .env("NODEVICE_SELECT", "1")
        .output()
        .expect("the taks binary runs");
    assert_succeeded(&listed);
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    let summary = std::fs::read_to_string(dir.join("audit/summary.json")).unwrap();
    if !listed.lines().any(|l| l.starts_with("hardware\t")) {
        let expected = match listed.lines().find_map(|l| l.strip_prefix("software\t")) {
            Some(name) => format!("only the software adapter '{name}' was found"),
            None => "no GPU adapter found".to_string(),
        };
        assert!(summary.contains(&expected), "{expected} not in {summary}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// CIFAR-100's binary format (a coarse and a fine label byte before each image) through
/// the CNN with a 100-way output: fine labels up to 99 train.
#[test]
fn cifar100_trains_on_its_fine_labels() {
    let dir = scratch("cifar100");
    std::fs::create_dir_all(&dir).unwrap();
    let records: Vec<u8> = (0..200u32)
        .flat_map(|i| {
            let (fine, coarse) = ((i % 100) as u8, (i % 100 / 5) as u8);
            let mut r = vec![coarse, fine];
            r.extend((0..3072).map(|p| (p as u32 * 7 + i * 13) as u8));
            r
        })
        .collect();
    std::fs::write(dir.join("train.bin"), &records).unwrap();
    std::fs::write(dir.join("test.bin"), &records[..100 * 3074]).unwrap();
    let run = train_run(
        &dir.join("run"),
        &[
            "--dataset",
            "cifar100",
            "--data-dir",
            dir.to_str().unwrap(),
            "--epochs",
            "1",
        ],
    );
    let config = read_json(&run.join("config.json"));
    assert_eq!(config["train_samples"], 200, "{config}");
    assert_eq!(config["config"]["architecture"], "cnn", "{config}");
    // Symmetric 50% noise over 100 classes moves half the labels.
    let actual = config["actual_noise_rate"].as_f64().unwrap();
    assert!((actual - 0.5).abs() < 0.1, "{config}");
    std::fs::remove_dir_all(&dir).unwrap();
}
