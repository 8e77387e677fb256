//! `taks experiment`: a grid's tables and its resumption, and a grid and an audit in
//! mixed precision.

use super::*;

/// The grid command: every cell a run folder, the tables, the curves; a second call
/// reuses finished runs and starts an interrupted one over; other settings are refused.
#[test]
fn an_experiment_grid_writes_tables_and_resumes() {
    let dir = scratch("experiment");
    let grid = |epochs: &str| {
        taks(&[
            "experiment",
            "--datasets",
            "mnist-digits",
            "--noises",
            "symmetric-0.5",
            "--methods",
            "standard,taks,jocor",
            "--seeds",
            "0,1",
            "--epochs",
            epochs,
            "--train-limit",
            "600",
            "--test-limit",
            "200",
            "--device",
            "cpu",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ])
    };
    let first = grid("2");
    assert_succeeded(&first);
    let table = std::fs::read_to_string(dir.join("table.md")).unwrap();
    for row in [
        "| Standard |",
        "| TAkS |",
        "| JoCoR |",
        "mnist-digits symmetric-0.5",
    ] {
        assert!(table.contains(row), "{row} missing: {table}");
    }
    // Standard's own time ratio is 1 by definition.
    assert!(table.contains("| Standard | 1.00 |"), "{table}");
    let csv = std::fs::read_to_string(dir.join("table.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(
        csv.lines().skip(1).all(|l| l.contains(",2,2,")),
        "2 seeds, 2 epochs: {csv}"
    );
    let svg = std::fs::read_to_string(dir.join("curves/mnist-digits-symmetric-0.5.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 3);

    // An interrupted run (no summary.json) is run again; the others are reused.
    let cut = dir.join("runs/mnist-digits/symmetric-0.5/jocor/seed1");
    std::fs::remove_file(cut.join("summary.json")).unwrap();
    let kept =
        std::fs::read_to_string(dir.join("runs/mnist-digits/symmetric-0.5/taks/seed0/metrics.csv"))
            .unwrap();
    let second = grid("2");
    assert_succeeded(&second);
    assert!(cut.join("summary.json").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("runs/mnist-digits/symmetric-0.5/taks/seed0/metrics.csv"))
            .unwrap(),
        kept,
        "a finished run is reused, not rerun"
    );
    assert_user_error(&grid("3"), "other settings");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Mixed precision reaches `experiment` and `audit`: the grid's runs record it, its table
/// says it, a grid in another precision is refused, and an f16 audit finds the flipped
/// digits as well as an f32 one does. On an adapter without shader-f16 (lavapipe has
/// it) the f16 grid must be refused in one line naming the missing feature instead.
#[test]
fn experiment_and_audit_run_in_mixed_precision() {
    let dir = scratch("mixed-precision");
    let grid_dir = dir.join("grid");
    let grid = |precision: &[&str]| {
        let mut args = vec![
            "experiment",
            "--datasets",
            "mnist-digits",
            "--noises",
            "symmetric-0.5",
            "--methods",
            "taks",
            "--epochs",
            "1",
            "--train-limit",
            "300",
            "--test-limit",
            "100",
            "--device",
            "gpu",
            "--quiet",
            "--out",
            grid_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(precision);
        taks(&args)
    };
    let first = grid(&["--precision", "f16"]);
    if String::from_utf8_lossy(&first.stderr).contains("shader-f16") {
        assert_user_error(&first, "shader-f16");
        skip(
            "experiment_and_audit_run_in_mixed_precision",
            "the adapter has no shader-f16: only its refusal is checked",
        );
        return;
    }
    assert_succeeded(&first);
    let run = grid_dir.join("runs/mnist-digits/symmetric-0.5/taks/seed0");
    let config = read_json(&run.join("config.json"));
    assert_eq!(config["config"]["precision"], "f16", "{config}");
    let table = std::fs::read_to_string(grid_dir.join("table.md")).unwrap();
    assert!(table.contains(", mixed precision f16"), "{table}");
    assert_user_error(&grid(&[]), "other settings");

    let audit = |precision: &str| {
        let out = dir.join(format!("audit-{precision}"));
        let run = taks(&[
            "audit",
            "--dataset",
            "mnist-digits",
            "--noise",
            "symmetric",
            "--noise-rate",
            "0.3",
            "--train-limit",
            "1000",
            "--device",
            "gpu",
            "--precision",
            precision,
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_succeeded(&run);
        let summary = read_json(&out.join("summary.json"));
        assert_eq!(summary["settings"]["precision"], precision, "{summary}");
        summary["truth"]["f1"].as_f64().unwrap()
    };
    let (f32_f1, f16_f1) = (audit("f32"), audit("f16"));
    assert!(f32_f1 > F1_FLOOR, "f32 audit F1 {f32_f1}");
    assert!(
        (f16_f1 - f32_f1).abs() < F1_GAP,
        "f16 audit F1 {f16_f1} against f32's {f32_f1}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
