//! `taks tune`: the choice by noisy validation, resumed; a CSV table tuned.

use super::*;

#[test]
fn tune_picks_by_noisy_validation_and_resumes() {
    let dir = scratch("tune");
    let tune = || {
        taks(&[
            "tune",
            "--k-ratios",
            "0.01,0.5",
            "--eta-ratios",
            "0.005",
            "--epochs",
            "3",
            "--train-limit",
            "2000",
            "--device",
            "cpu",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ])
    };
    let out = tune();
    assert_succeeded(&out);
    let csv = std::fs::read_to_string(dir.join("tune.csv")).unwrap();
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{csv}");
    let choice: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("choice.json")).unwrap()).unwrap();
    // A k-ratio of 0.01 trains on 16 of the 1,600 samples and stays near chance; 0.5
    // learns (measured 0.142 and 0.225 on the 400 noisy validation labels, whose spread
    // is about 0.015), so the grid has a known winner.
    let score = |k: f64| rows.iter().find(|r| r[0] == k).unwrap()[2];
    assert!(score(0.5) > score(0.01) + 0.04, "{csv}");
    assert_eq!(choice["k_ratio"], 0.5, "{choice}");
    assert_eq!(choice["validation_accuracy"], score(0.5));
    let again = tune();
    assert_succeeded(&again);
    assert_eq!(
        std::fs::read_to_string(dir.join("tune.csv")).unwrap(),
        csv,
        "finished points are reused"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `taks tune --data FILE.csv` tunes on a CSV table as `taks audit` reads one (the MLP on
/// its standardised feature columns): 1,500 digits as rows of 784 pixel columns and a
/// `digit` column, a quarter filed under the next digit. With gamma given, the grid of
/// k-ratios 0.01 and 0.75 has a known winner (9 of 1,200 samples stay near chance);
/// `--label-column` names the labels, and is refused for a folder.
#[test]
fn tune_runs_on_a_csv_table() {
    let dir = scratch("tune-csv");
    std::fs::create_dir_all(&dir).unwrap();
    let digits = taks_core::data::bundled_mnist_digits().unwrap().train;
    let mut csv: String = (0..784).map(|i| format!("p{i},")).collect();
    csv.push_str("digit\n");
    for i in 0..1500 {
        for v in digits.samples.range(i, 1) {
            csv.push_str(&format!("{},", (v * 255.0).round()));
        }
        let label = digits.labels[i];
        let given = if i % 4 == 0 { (label + 1) % 10 } else { label };
        csv.push_str(&format!("{given}\n"));
    }
    let table = dir.join("digits.csv");
    std::fs::write(&table, csv).unwrap();
    let out = dir.join("tuned");
    let tune = |extra: &[&str]| {
        let mut args = vec![
            "tune",
            "--data",
            table.to_str().unwrap(),
            "--gamma",
            "0.25",
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
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        taks(&args)
    };
    assert_user_error(&tune(&[]), "has no label column 'label'");
    let tuned = tune(&["--label-column", "digit"]);
    assert_succeeded(&tuned);
    let choice = read_json(&out.join("choice.json"));
    assert_eq!(choice["k_ratio"], 0.75, "{choice}");
    let config = read_json(&out.join("config.json"));
    assert_eq!(
        config["config"]["folder_input"],
        serde_json::json!([1, 1, 784])
    );
    assert_eq!(config["config"]["architecture"], "mlp");
    std::fs::remove_dir_all(&dir).unwrap();
}
