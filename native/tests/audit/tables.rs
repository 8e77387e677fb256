//! Rows of numbers audited: a CSV table's flipped rows, and every audit flag reaching the
//! audit.

use super::*;

#[test]
fn a_csv_audit_finds_the_flipped_rows() {
    // 14x14 average-pooled digits: 196 numeric columns, string labels, and the label
    // column in the middle, where a labelling tool might put it.
    let (images, truth, given) = misfiled_digits(2000, 0.3);
    let mut csv = String::new();
    let columns: Vec<String> = (0..196).map(|j| format!("p{j}")).collect();
    csv += &format!(
        "{},label,{}\n",
        columns[..98].join(","),
        columns[98..].join(",")
    );
    let mut misfiled = HashMap::new();
    for (i, px) in images.iter().enumerate() {
        let pooled: Vec<String> = (0..196)
            .map(|j| {
                let (r, c) = (j / 14 * 2, j % 14 * 2);
                let sum: u32 = [(0, 0), (0, 1), (1, 0), (1, 1)]
                    .iter()
                    .map(|(dr, dc)| px[(r + dr) * 28 + c + dc] as u32)
                    .sum();
                (sum / 4).to_string()
            })
            .collect();
        csv += &format!(
            "{},{},{}\n",
            pooled[..98].join(","),
            NAMES[given[i] as usize],
            pooled[98..].join(",")
        );
        misfiled.insert(i.to_string(), truth[i] != given[i]);
    }
    let dir = scratch("csv");
    let path = dir.join("digits.csv");
    std::fs::write(&path, csv).unwrap();
    let out = dir.join("audit");
    ok(&[
        "audit",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--device",
        "cpu",
        "-q",
    ]);
    let rows = read_suspects(&out);
    assert_eq!(rows.len(), 2000);
    // Measured 0.73: 196 pooled pixels and 2,000 rows make a weaker model than the
    // images do. Flagging everything would give 0.38.
    let score = f1(&rows, &misfiled);
    assert!(score > 0.65, "F1 {score}");
    // Measured 29.9% against the true 23.3%.
    let noise = misfiled.values().filter(|&&m| m).count() as f64 / 2000.0;
    let estimated = summary(&out)["estimated_noise_rate"].as_f64().unwrap();
    assert!(
        (estimated - noise).abs() < 0.08,
        "estimated {estimated}, truly {noise}"
    );
    // Text labels are classes in text order.
    assert_eq!(summary(&out)["classes"][0], "eight");
    // predict reads the model's columns and ignores the label column.
    let predictions = ok(&[
        "predict",
        "--model",
        out.to_str().unwrap(),
        path.to_str().unwrap(),
    ]);
    let lines: Vec<&str> = predictions.lines().collect();
    assert_eq!(lines.len(), 2001);
    assert!(lines[1].starts_with("0,"), "{}", lines[1]);

    // The same rows as embeddings: a float32 .npy matrix with the labels as a text file
    // of names, and as a .npy of integers (the names' indices in text order). The MLP
    // sees the same numbers in the same class order, so the audit is the CSV's exactly.
    let values: Vec<f32> = csv_rows(&dir.join("digits.csv"));
    let features = dir.join("digits.npy");
    write_npy(
        &features,
        "<f4",
        "(2000, 196)",
        &values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    let mut sorted = NAMES.to_vec();
    sorted.sort();
    let names: String = given
        .iter()
        .map(|&g| format!("{}\n", NAMES[g as usize]))
        .collect();
    std::fs::write(dir.join("labels.txt"), names).unwrap();
    let indices: Vec<u8> = given
        .iter()
        .flat_map(|&g| {
            (sorted.iter().position(|n| *n == NAMES[g as usize]).unwrap() as i64).to_le_bytes()
        })
        .collect();
    write_npy(&dir.join("labels.npy"), "<i8", "(2000,)", &indices);
    for labels in ["labels.txt", "labels.npy"] {
        let twin = dir.join(format!("audit-{labels}"));
        ok(&[
            "audit",
            features.to_str().unwrap(),
            "--labels",
            dir.join(labels).to_str().unwrap(),
            "--out",
            twin.to_str().unwrap(),
            "--device",
            "cpu",
            "-q",
        ]);
        let twin_rows = read_suspects(&twin);
        assert_eq!(twin_rows.len(), rows.len());
        for (a, b) in rows.iter().zip(&twin_rows) {
            for column in [
                "id",
                "is_label_issue",
                "label_quality",
                "suggested_confidence",
            ] {
                assert_eq!(a[column], b[column], "{labels}: {column}");
            }
        }
        // predict takes a .npy of the model's width.
        let predictions = ok(&[
            "predict",
            "--model",
            twin.to_str().unwrap(),
            features.to_str().unwrap(),
        ]);
        assert_eq!(predictions.lines().count(), 2001);
    }
    let narrow = dir.join("narrow.npy");
    write_npy(&narrow, "<f4", "(1, 2)", &[0u8; 8]);
    let refused = taks(&[
        "predict",
        "--model",
        dir.join("audit-labels.txt").to_str().unwrap(),
        narrow.to_str().unwrap(),
    ]);
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("2 columns, and this model takes 196 features")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The audit's own settings reach it: `--image-size` is the network's input (the kept
/// MLP's first layer takes that many pixels), `--report-rows` the report's table,
/// `--seed` the settings the audit ran with, and
/// `--label-column` the column a CSV's labels are read from, where another column is
/// called `label`.
#[test]
fn audit_settings_reach_the_audit() {
    let dir = scratch("audit-settings");
    let data = dir.join("digits");
    digit_folder(&data, 300);
    let out = dir.join("audit");
    ok(&[
        "audit",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--device",
        "cpu",
        "--model",
        "mlp",
        "--image-size",
        "14x20",
        "--report-rows",
        "7",
        "--seed",
        "3",
        "-q",
    ]);
    assert_eq!(summary(&out)["settings"]["seed"], 3);
    assert_eq!(
        summary(&out)["input"],
        serde_json::json!({"kind": "image", "channels": 1, "height": 20, "width": 14})
    );
    assert_eq!(
        tensor_shapes(&out.join("model.safetensors"))["0.weight"],
        [256, 280]
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("The 7 most suspect samples"), "report.html");
    assert_eq!(html.matches("<tr class=\"suspect").count(), 7);

    // A CSV whose labels are in `digit`, beside a column `label` of other numbers: the
    // audit's classes are the digit names, not those numbers.
    let (images, _, given) = misfiled_digits(200, 0.0);
    let mut csv = String::from("label,digit");
    (0..16).for_each(|j| csv += &format!(",p{j}"));
    csv += "\n";
    for (i, px) in images.iter().enumerate() {
        csv += &format!("{},{}", 100 + i % 3, NAMES[given[i] as usize]);
        // 4x4 blocks of 7x7 pixels, averaged.
        for j in 0..16 {
            let (r, c) = (j / 4 * 7, j % 4 * 7);
            let sum: u32 = (0..49)
                .map(|d| px[(r + d / 7) * 28 + c + d % 7] as u32)
                .sum();
            csv += &format!(",{}", sum / 49);
        }
        csv += "\n";
    }
    let path = dir.join("digits.csv");
    std::fs::write(&path, csv).unwrap();
    let table = dir.join("table");
    ok(&[
        "audit",
        path.to_str().unwrap(),
        "--label-column",
        "digit",
        "--out",
        table.to_str().unwrap(),
        "--device",
        "cpu",
        "-q",
    ]);
    let mut names = NAMES.to_vec();
    names.sort();
    assert_eq!(summary(&table)["classes"], serde_json::json!(names));
    // The other numeric column is an input, first, beside the 16 pixel columns.
    let s = summary(&table);
    let features = s["input"]["features"].as_array().unwrap();
    assert_eq!((features.len(), &features[0]), (17, &"label".into()), "{s}");
    std::fs::remove_dir_all(&dir).unwrap();
}
