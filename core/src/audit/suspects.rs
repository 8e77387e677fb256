//! `suspects.csv` and the corrected labels: the audit's verdicts as files a person acts
//! on, written the same way by `taks audit` and by the browser page.
//!
//! `suspects.csv` has one row per sample, most suspect first (ascending label quality,
//! ties in data order), with the columns [`SUSPECTS_HEADER`] names. The page, where a
//! person accepts or keeps each suggestion, adds a last column `decision`
//! (`accept`, `keep`, or empty while undecided). The corrected labels are `path,label`
//! in data order: the suggested label where the person accepted it, the given one
//! everywhere else (an audit proposes; only a person relabels).

use super::SampleAudit;

/// The columns of `suspects.csv`.
pub const SUSPECTS_HEADER: &str = "id,given_label,suggested_label,suggested_confidence,label_quality,is_label_issue,cumulative_noise_risk,selected_fraction";

/// What a person decided about one sample's suggested label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Undecided,
    /// Relabel it as suggested.
    Accept,
    /// Keep the given label.
    Keep,
}

impl Decision {
    /// From the page's code: 1 accept, 2 keep, anything else undecided.
    pub fn from_code(code: u8) -> Self {
        match code {
            1 => Decision::Accept,
            2 => Decision::Keep,
            _ => Decision::Undecided,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Decision::Undecided => "",
            Decision::Accept => "accept",
            Decision::Keep => "keep",
        }
    }
}

/// The samples, most suspect first: ascending label quality, ties in data order.
pub fn suspect_order(samples: &[SampleAudit]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by(|&a, &b| {
        samples[a]
            .label_quality
            .total_cmp(&samples[b].label_quality)
            .then(a.cmp(&b))
    });
    order
}

/// A CSV field: quoted when it holds a comma, quote or line break.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// `suspects.csv`: sample `i` is `ids[i]`, its labels index `classes`. With
/// `decisions` (one per sample, in data order) a `decision` column follows.
pub fn suspects_csv(
    ids: &[String],
    classes: &[String],
    samples: &[SampleAudit],
    decisions: Option<&[Decision]>,
) -> String {
    let mut csv = String::from(SUSPECTS_HEADER);
    if decisions.is_some() {
        csv += ",decision";
    }
    csv.push('\n');
    for i in suspect_order(samples) {
        let s = &samples[i];
        csv += &format!(
            "{},{},{},{:.4},{:.4},{},{:.4},{:.3}",
            csv_field(&ids[i]),
            csv_field(&classes[s.given_label as usize]),
            csv_field(&classes[s.suggested_label as usize]),
            s.suggested_confidence,
            s.label_quality,
            s.is_label_issue,
            s.cumulative_risk,
            s.selected_fraction
        );
        if let Some(decisions) = decisions {
            csv.push(',');
            csv += decisions[i].name();
        }
        csv.push('\n');
    }
    csv
}

/// `path,label` for every sample in data order: the suggested label where
/// `decisions[i]` accepts it, else the given one.
pub fn corrected_labels_csv(
    ids: &[String],
    classes: &[String],
    samples: &[SampleAudit],
    decisions: &[Decision],
) -> String {
    let mut csv = String::from("path,label\n");
    for ((id, s), decision) in ids.iter().zip(samples).zip(decisions) {
        let label = match decision {
            Decision::Accept => s.suggested_label,
            _ => s.given_label,
        };
        csv += &format!(
            "{},{}\n",
            csv_field(id),
            csv_field(&classes[label as usize])
        );
    }
    csv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(given: u32, suggested: u32, quality: f64) -> SampleAudit {
        SampleAudit {
            given_label: given,
            suggested_label: suggested,
            suggested_confidence: 0.875,
            label_quality: quality,
            is_label_issue: super::super::is_label_issue(given, suggested, quality),
            cumulative_risk: 1.5,
            selected_fraction: 0.25,
        }
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("cat/a.png"), "cat/a.png");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn most_suspect_first_with_decisions_and_corrections() {
        let ids: Vec<String> = ["a.png", "b,c.png", "d.png"].map(String::from).into();
        let classes: Vec<String> = ["cat", "dog"].map(String::from).into();
        let samples = [sample(0, 0, 0.9), sample(0, 1, 0.1), sample(1, 0, 0.1)];
        assert_eq!(suspect_order(&samples), [1, 2, 0]);
        let plain = suspects_csv(&ids, &classes, &samples, None);
        assert_eq!(
            plain.lines().nth(1).unwrap(),
            "\"b,c.png\",cat,dog,0.8750,0.1000,true,1.5000,0.250"
        );
        assert_eq!(plain.lines().next().unwrap(), SUSPECTS_HEADER);
        let decisions = [Decision::Undecided, Decision::Accept, Decision::Keep];
        let decided = suspects_csv(&ids, &classes, &samples, Some(&decisions));
        let lines: Vec<&str> = decided.lines().collect();
        assert_eq!(lines[0], format!("{SUSPECTS_HEADER},decision"));
        assert!(lines[1].ends_with(",accept") && lines[2].ends_with(",keep"));
        assert!(lines[3].ends_with(",0.250,"), "{}", lines[3]);
        let corrected = corrected_labels_csv(&ids, &classes, &samples, &decisions);
        assert_eq!(
            corrected,
            "path,label\na.png,cat\n\"b,c.png\",dog\nd.png,dog\n"
        );
        assert_eq!(Decision::from_code(1), Decision::Accept);
        assert_eq!(Decision::from_code(7), Decision::Undecided);
    }
}
