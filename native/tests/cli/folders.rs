//! `taks train --data` on folders a person brings: MNIST's files, CIFAR-10's, a split
//! folder of images (and `tune` and `audit` on it).

use super::*;

/// An MNIST-format folder of 200 images whose ten classes differ (class c: a bright band
/// over rows 2c to 2c + 7, with some noise), read from its IDX files and learnt: a reader
/// that misread the pixels or the labels, or paired them wrongly, would leave the
/// network at chance (10%).
#[test]
fn full_mnist_format_folder_trains() {
    let dir = scratch("mnist-classes");
    std::fs::create_dir_all(&dir).unwrap();
    let labels: Vec<u8> = (0..200u32).map(|i| (i * 7 % 10) as u8).collect();
    let pixels: Vec<u8> = labels
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| {
            (0..784).map(move |p| {
                let row = p / 28;
                striped((2 * c as usize..2 * c as usize + 8).contains(&row), p, i)
            })
        })
        .collect();
    let images = idx(&[200, 28, 28], &pixels);
    for set in ["train", "t10k"] {
        write_gz(&dir.join(format!("{set}-images-idx3-ubyte.gz")), &images);
        write_gz(
            &dir.join(format!("{set}-labels-idx1-ubyte.gz")),
            &idx(&[200], &labels),
        );
    }
    let run = learn_clean_from_folder("mnist", &dir);
    // Measured (seeded) 0.5, 0.9, then 1.0 from the third epoch: 10 steps in all.
    let accuracy = metrics_column(&run, "test_accuracy");
    assert!(accuracy[4] > 0.8, "{accuracy:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// CIFAR-10's binary format through the paper's 6-layer CNN, end to end and learnt: five
/// training batches and a test batch of 20 images each, whose ten classes differ (class
/// c: a bright band over rows 3c to 3c + 2 of every channel, with some speckle). A reader
/// that misread the pixels, the labels or the channel planes, or paired images with the
/// wrong labels, would leave the CNN at chance (10%).
#[test]
fn cifar10_folder_trains_the_cnn() {
    let dir = scratch("cifar");
    std::fs::create_dir_all(&dir).unwrap();
    let record = |i: usize| {
        let label = i * 7 % 10;
        let mut r = vec![label as u8];
        r.extend((0..3072).map(|p| {
            let row = p % 1024 / 32;
            striped((3 * label..3 * label + 3).contains(&row), p, i)
        }));
        r
    };
    let batch = |first: usize| -> Vec<u8> { (first..first + 20).flat_map(record).collect() };
    for b in 1..=5 {
        std::fs::write(dir.join(format!("data_batch_{b}.bin")), batch(20 * b)).unwrap();
    }
    std::fs::write(dir.join("test_batch.bin"), batch(0)).unwrap();
    let run = learn_clean_from_folder("cifar10", &dir);
    let config = read_json(&run.join("config.json"));
    assert_eq!(config["config"]["architecture"], "cnn", "{config}");
    assert_eq!(config["train_samples"], 100, "{config}");
    // Measured (seeded): 0.1, 0.5, 0.7, then 1.0 from the fourth epoch.
    let accuracy = metrics_column(&run, "test_accuracy");
    assert!(accuracy[4] > 0.8, "{accuracy:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The paper's Clothing1M protocol on a user's folder: the bundled digits as grey PNGs in
/// train/ (a quarter of them filed under another digit), val/ and test/; `taks train
/// --data` reports the validation accuracy each epoch and the test accuracy at the
/// best validation epoch ("Best") and the last ("Last"); `taks experiment` runs the
/// same folder as a dataset.
#[test]
fn a_split_folder_trains_with_validation() {
    let split = taks_core::data::bundled_mnist_digits().unwrap();
    let dir = scratch("split-folder");
    let write = |part: &str, i: usize, label: u32, pixels: &[f32]| {
        let class = dir.join(part).join(format!("digit{label}"));
        std::fs::create_dir_all(&class).unwrap();
        let bytes: Vec<u8> = pixels.iter().map(|v| (v * 255.0).round() as u8).collect();
        image::GrayImage::from_raw(28, 28, bytes)
            .unwrap()
            .save(class.join(format!("{i}.png")))
            .unwrap();
    };
    let image = |set: &taks_core::data::Dataset, i: usize| set.samples.range(i, 1);
    for i in 0..1200 {
        let label = split.train.labels[i];
        let given = if i % 4 == 0 { (label + 1) % 10 } else { label };
        write("train", i, given, &image(&split.train, i));
    }
    for i in 1200..1500 {
        write("val", i, split.train.labels[i], &image(&split.train, i));
    }
    for i in 0..400 {
        write("test", i, split.test.labels[i], &image(&split.test, i));
    }
    let out = scratch("split-run");
    let run = taks(&[
        "train",
        "--data",
        dir.to_str().unwrap(),
        "--epochs",
        "4",
        "--device",
        "cpu",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_succeeded(&run);
    assert!(
        stdout.contains("(the paper's Best); last epoch:"),
        "{stdout}"
    );

    let csv = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 4);
    let val: Vec<f64> = rows
        .iter()
        .map(|r| r[col("val_accuracy")].parse().unwrap())
        .collect();
    let test: Vec<f64> = rows
        .iter()
        .map(|r| r[col("test_accuracy")].parse().unwrap())
        .collect();
    // Learnt from 900 clean and 300 misfiled digits: far above chance (10%) on val.
    assert!(val.iter().all(|&v| v > 0.5 && v <= 1.0), "{csv}");
    // A folder's labels have no known truth: no precision or recall to report.
    assert!(
        rows.iter().all(|r| r[col("label_precision")] == "NaN"),
        "{csv}"
    );

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let best = summary["best_val_epoch"].as_u64().unwrap() as usize;
    let top = val.iter().cloned().fold(0.0, f64::max);
    assert_eq!(
        val[best - 1],
        top,
        "the best epoch has the highest validation accuracy"
    );
    assert!(
        val[..best - 1].iter().all(|&v| v < top),
        "and is the first to reach it"
    );
    assert_eq!(
        summary["test_accuracy_at_best_val"].as_f64().unwrap(),
        test[best - 1]
    );
    assert_eq!(summary["test_accuracy_last"].as_f64().unwrap(), test[3]);
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["config"]["dataset"], "folder");
    assert_eq!(config["config"]["noise"], "clean");
    assert_eq!(config["config"]["architecture"], "mlp");
    assert_eq!(
        config["config"]["folder_input"],
        serde_json::json!([1, 28, 28])
    );
    assert_eq!(
        config["config"]["k_ratio"], 0.7,
        "the paper's Clothing1M k-ratio"
    );

    // The same folder as a dataset of an experiment.
    let exp = scratch("split-experiment");
    let grid = taks(&[
        "experiment",
        "--datasets",
        "folder",
        "--data-dir",
        &format!("folder={}", dir.display()),
        "--noises",
        "clean",
        "--methods",
        "taks",
        "--seeds",
        "0",
        "--epochs",
        "2",
        "--device",
        "cpu",
        "--quiet",
        "--out",
        exp.to_str().unwrap(),
    ]);
    assert_succeeded(&grid);
    let run_summary = exp.join("runs/folder/clean/taks/seed0/summary.json");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run_summary).unwrap()).unwrap();
    assert!(s["best_val_epoch"].as_u64().is_some(), "{s}");
    // The same digits as embeddings: DIR/<split>.npy with class names beside them.
    let emb = scratch("split-embeddings");
    std::fs::create_dir_all(&emb).unwrap();
    let parts: [(&str, &taks_core::data::Dataset, std::ops::Range<usize>); 3] = [
        ("train", &split.train, 0..1200),
        ("val", &split.train, 1200..1500),
        ("test", &split.test, 0..400),
    ];
    for (name, set, rows) in parts {
        let values: Vec<u8> = rows
            .clone()
            .flat_map(|i| image(set, i))
            .flat_map(|v| v.to_le_bytes())
            .collect();
        write_npy(
            &emb.join(format!("{name}.npy")),
            "<f4",
            &format!("({}, 784)", rows.len()),
            &values,
        );
        let names: String = rows
            .map(|i| {
                let label = set.labels[i];
                let given = if name == "train" && i % 4 == 0 {
                    (label + 1) % 10
                } else {
                    label
                };
                format!("digit{given}\n")
            })
            .collect();
        std::fs::write(emb.join(format!("{name}-labels.txt")), names).unwrap();
    }
    let emb_out = scratch("split-embeddings-run");
    let run = taks(&[
        "train",
        "--data",
        emb.to_str().unwrap(),
        "--epochs",
        "3",
        "--device",
        "cpu",
        "--quiet",
        "--out",
        emb_out.to_str().unwrap(),
    ]);
    assert_succeeded(&run);
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(emb_out.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(
        config["config"]["folder_input"],
        serde_json::json!([1, 1, 784])
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(emb_out.join("summary.json")).unwrap())
            .unwrap();
    assert!(
        s["test_accuracy_at_best_val"].as_f64().unwrap() > 0.5,
        "{s}"
    );

    // tune on the same folder: its noise is unknown, so without --gamma it is one line
    // and no output folder; with one, the grid runs on 80% of train/ and is judged on
    // the other 20%'s noisy labels. A k-ratio of 0.01 trains on 9 of the 960 samples and
    // stays near chance, 0.75 learns: the grid has a known winner.
    let tuned = scratch("split-tune");
    let tune = |gamma: Option<&str>| {
        let mut args = vec![
            "tune",
            "--data",
            dir.to_str().unwrap(),
            "--k-ratios",
            "0.01,0.75",
            "--eta-ratios",
            "0.005",
            "--epochs",
            "3",
            "--device",
            "cpu",
            "--quiet",
            "--out",
            tuned.to_str().unwrap(),
        ];
        if let Some(gamma) = gamma {
            args.extend(["--gamma", gamma]);
        }
        taks(&args)
    };
    assert_user_error(&tune(None), "give --gamma");
    assert!(!tuned.exists(), "a refused tune made its folder");
    let out_tune = tune(Some("0.25"));
    assert_succeeded(&out_tune);
    let choice: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tuned.join("choice.json")).unwrap()).unwrap();
    assert_eq!(choice["k_ratio"], 0.75, "{choice}");
    assert_eq!(choice["gamma"], 0.25, "{choice}");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tuned.join("config.json")).unwrap()).unwrap();
    assert_eq!(
        config["config"]["folder_input"],
        serde_json::json!([1, 28, 28]),
        "{config}"
    );

    // The training guide's way to k on your own data: audit train/, then train with
    // the audit's estimate as gamma; k-ratio 1 - gamma - 0.15, the forget rate gamma.
    let audit = scratch("split-audit");
    let audited = taks(&[
        "audit",
        dir.join("train").to_str().unwrap(),
        "--model",
        "mlp",
        "--device",
        "cpu",
        "-q",
        "--out",
        audit.to_str().unwrap(),
    ]);
    assert_succeeded(&audited);
    let estimate = read_json(&audit.join("summary.json"))["estimated_noise_rate"]
        .as_f64()
        .unwrap();
    // A quarter of train/ is misfiled: the estimate must see it for the k it gives to
    // mean anything (measured 0.27).
    assert!((0.15..0.4).contains(&estimate), "{estimate}");
    let estimated_run = scratch("split-estimated");
    let trained = taks(&[
        "train",
        "--data",
        dir.to_str().unwrap(),
        "--gamma",
        audit.to_str().unwrap(),
        "--method",
        "co-teaching",
        "--epochs",
        "1",
        "--device",
        "cpu",
        "--quiet",
        "--out",
        estimated_run.to_str().unwrap(),
    ]);
    assert_succeeded(&trained);
    let config = read_json(&estimated_run.join("config.json"));
    let k_ratio = config["config"]["k_ratio"].as_f64().unwrap();
    assert!((k_ratio - (0.85 - estimate)).abs() < 1e-9, "{config}");
    assert_eq!(config["config"]["forget_rate"].as_f64().unwrap(), estimate);
    for d in [dir, out, exp, emb, emb_out, tuned, audit, estimated_run] {
        std::fs::remove_dir_all(d).unwrap();
    }
}
