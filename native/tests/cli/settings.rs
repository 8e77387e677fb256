//! The flags that define a run reach it, in `train`, `bench` and `tune` alike, and the
//! baselines' own flags their methods.

use super::*;

/// The run settings a user gives `taks train` reach the run, each seen in what the run
/// did rather than only echoed in config.json: Fashion-MNIST as Debian installs it,
/// pairflip noise, the k and eta ratios, the seed, the learning rate and its decay;
/// then `taks table` sets two runs side by side.
#[test]
fn run_settings_reach_the_run_and_table_sets_runs_side_by_side() {
    let dir = scratch("settings");
    let common = [
        "--dataset",
        "fashion-mnist",
        "--noise",
        "pairflip",
        "--noise-rate",
        "0.2",
        "--train-limit",
        "600",
        "--test-limit",
        "300",
    ];
    let with = |extra: &[&'static str]| [&common[..], extra].concat();
    let run = train_run(
        &dir.join("taks"),
        &with(&[
            "--epochs",
            "3",
            "--k-ratio",
            "0.6",
            "--eta-ratio",
            "2.5",
            "--seed",
            "7",
            "--lr",
            "0.002",
            "--decay-start",
            "1",
            "--save-selections",
        ]),
    );
    let config = read_json(&run.join("config.json"));
    let c = &config["config"];
    assert_eq!(
        (&c["dataset"], &c["noise"], &c["seed"]),
        (&"fashion-mnist".into(), &"pairflip".into(), &7.into()),
        "{config}"
    );
    // k = floor(600 * 0.6), every epoch; eta = sqrt(k T) * eta-ratio.
    assert_eq!(config["k"], 360, "{config}");
    assert_eq!(metrics_column(&run, "selected"), [360.0; 3]);
    let eta = config["eta"].as_f64().unwrap();
    assert!(
        (eta - (360.0f64 * 3.0).sqrt() * 2.5).abs() < 1e-9,
        "{config}"
    );
    // Pairflip at 20%: a fifth of 600 labels moved, within 2.5 binomial spreads (0.016).
    let actual = config["actual_noise_rate"].as_f64().unwrap();
    assert!((actual - 0.2).abs() < 0.04, "{config}");
    // The authors' schedule: the base rate until the decay start (epoch index 1), then
    // falling linearly to 0 at the end: 2e-3, 2e-3 (T - 1) / (T - 1), 2e-3 (T - 2) / (T - 1).
    assert_eq!(metrics_column(&run, "learning_rate"), [2e-3, 2e-3, 1e-3]);
    // Fashion-MNIST's own pictures, learnt: chance is 10% (a spread of 0.017 on 300);
    // measured (seeded) 0.477, 0.550, 0.650.
    let accuracy = metrics_column(&run, "test_accuracy");
    assert!(accuracy[2] > 0.45, "{accuracy:?}");

    // Another seed draws another random k-set for epoch 1 (and other noise).
    let other = train_run(
        &dir.join("seed0"),
        &with(&["--epochs", "1", "--k-ratio", "0.6", "--save-selections"]),
    );
    let first_set = |run: &Path| {
        let selected = std::fs::read_to_string(run.join("selected.csv")).unwrap();
        let row = selected.lines().nth(1).unwrap().to_string();
        let (epoch, set) = row.split_once(',').unwrap();
        assert_eq!((epoch, set.split(' ').count()), ("1", 360));
        set.to_string()
    };
    assert_ne!(first_set(&run), first_set(&other));
    assert_eq!(read_json(&other.join("config.json"))["config"]["seed"], 0);

    // The table of a TAkS run and a Standard one of the same data and noise: each row's
    // means over its epochs (all three: fewer than ten), and TAkS's time against
    // Standard's, computed here from the two metrics.csv files.
    let standard = train_run(
        &dir.join("standard"),
        &with(&["--epochs", "3", "--method", "standard"]),
    );
    let table = taks(&["table", run.to_str().unwrap(), standard.to_str().unwrap()]);
    assert_succeeded(&table);
    let stdout = String::from_utf8_lossy(&table.stdout);
    let mean = |xs: Vec<f64>| xs.iter().sum::<f64>() / xs.len() as f64;
    let row = |method: &str| -> Vec<String> {
        stdout
            .lines()
            .find(|l| l.split('|').nth(2).map(str::trim) == Some(method))
            .unwrap_or_else(|| panic!("no {method} row in {stdout}"))
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let (taks_row, standard_row) = (row("taks"), row("standard"));
    for (cells, run) in [(&taks_row, &run), (&standard_row, &standard)] {
        assert_eq!(cells[3], "pairflip-20%", "{stdout}");
        let accuracy = mean(metrics_column(run, "test_accuracy")) * 100.0;
        assert_eq!(cells[4], format!("{accuracy:.2}%"), "{stdout}");
    }
    // epoch_seconds is written to 0.1 ms, and the ratio to 0.01: it must lie within what
    // those roundings allow.
    let (a, b) = (
        mean(metrics_column(&run, "epoch_seconds")),
        mean(metrics_column(&standard, "epoch_seconds")),
    );
    let (low, high) = ((a - 5e-5) / (b + 5e-5), (a + 5e-5) / (b - 5e-5));
    let printed: f64 = taks_row[9].parse().unwrap();
    assert!(
        (low - 0.005..=high + 0.005).contains(&printed),
        "{printed} against {a} / {b}: {stdout}"
    );
    assert_eq!(standard_row[9], "1.00");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Co-teaching(+)'s and JoCoR's own settings reach their methods. A network's small-loss
/// share of a batch is floor((1 - tau t / 9) b) in epoch t (the authors'
/// linspace(0, tau, 10), indexed from 1 as their loop counts epochs), so the samples
/// selected in an epoch follow from the forget rate tau alone; metrics.csv does not list
/// them, but its label precision and recall do: precision / recall = clean samples /
/// selected samples.
#[test]
fn baseline_settings_reach_their_methods() {
    let dir = scratch("baselines");
    let common = [
        "--epochs",
        "2",
        "--train-limit",
        "1000",
        "--test-limit",
        "200",
    ];
    let with = |extra: &[&'static str]| [&common[..], extra].concat();
    // 1,000 samples in batches of 128: seven full ones and one of 104.
    let selected = |tau: f64, t: f64| -> f64 {
        let keep = |b: f64| ((1.0 - tau * t / 9.0) * b).floor();
        7.0 * keep(128.0) + keep(104.0)
    };
    let inferred = |run: &Path| -> Vec<f64> {
        let config = read_json(&run.join("config.json"));
        let clean = 1000.0 * (1.0 - config["actual_noise_rate"].as_f64().unwrap());
        let precision = metrics_column(run, "label_precision");
        let recall = metrics_column(run, "label_recall");
        precision
            .iter()
            .zip(&recall)
            .map(|(p, r)| (clean * r / p).round())
            .collect()
    };
    // Co-teaching+ before its init epoch is Co-teaching: both epochs here, with tau 0.3
    // (961 and 930 selected; the default tau 0.5 would select 938 and 883, and from its
    // default init epoch 0 the disagreement rule would select fewer still).
    let plus = train_run(
        &dir.join("plus"),
        &with(&[
            "--method",
            "co-teaching-plus",
            "--forget-rate",
            "0.3",
            "--init-epoch",
            "5",
        ]),
    );
    assert_eq!(inferred(&plus), [selected(0.3, 1.0), selected(0.3, 2.0)]);
    assert_eq!((selected(0.3, 1.0), selected(0.3, 2.0)), (961.0, 930.0));
    let config = read_json(&plus.join("config.json"));
    assert_eq!(config["config"]["init_epoch"], 5, "{config}");

    // JoCoR's lambda weighs the agreement term of the loss it reports: another lambda,
    // another training loss from the same start.
    let jocor = |lambda: &'static str| {
        let run = train_run(
            &dir.join(format!("jocor-{lambda}")),
            &with(&["--method", "jocor", "--co-lambda", lambda]),
        );
        let config = read_json(&run.join("config.json"));
        assert_eq!(
            config["config"]["co_lambda"],
            lambda.parse::<f64>().unwrap()
        );
        metrics_column(&run, "train_loss")[0]
    };
    // Measured 0.465 and 4.005.
    let (low, high) = (jocor("0.1"), jocor("0.9"));
    assert!((low - high).abs() > 0.1, "{low} {high}");
    std::fs::remove_dir_all(&dir).unwrap();
}
