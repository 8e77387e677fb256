//! The paper's measurements: label precision and recall, total selection risk and
//! regret next to the bound that holds for it (`crate::regret`), test accuracy and epoch time, and the summary
//! its tables report (the mean of the last ten epochs).

use serde::{Deserialize, Deserializer, Serialize};

/// One row of `metrics.csv`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EpochMetrics {
    /// 1-based.
    pub epoch: usize,
    /// Mean cross-entropy over the samples trained on this epoch (noisy labels).
    pub train_loss: f64,
    /// Fraction of the test set classified correctly; for a two-network method the mean
    /// of both networks', as the paper's tables report it.
    pub test_accuracy: f64,
    /// Each network's test accuracy (one entry for single-network methods).
    pub network_accuracies: Vec<f64>,
    /// Accuracy on the validation set (the mean of the networks'), for a run that has
    /// one (`taks train --data DIR`, the paper's Clothing1M protocol); else `None`.
    #[serde(default)]
    pub val_accuracy: Option<f64>,
    /// |selected and clean| / |selected| of the samples that updated the network this
    /// epoch (mean over both networks of a two-network method); NaN when no sample did
    /// (JSON has no NaN: it is written as null, and read back from it).
    #[serde(deserialize_with = "null_as_nan")]
    pub label_precision: f64,
    /// |selected and clean| / |clean|; NaN (null in JSON) where the truth is unknown.
    #[serde(deserialize_with = "null_as_nan")]
    pub label_recall: f64,
    /// d_t . theta_t: the noise-risk of this epoch's selection, measured after training.
    /// This and the next two exist for the methods with an FPL selector (TAkS, greedy,
    /// naive) and are `None` (empty in the CSV) for the others.
    pub selection_risk: Option<f64>,
    /// sum over epochs 1..t of selection_risk.
    pub total_selection_risk: Option<f64>,
    /// total_selection_risk minus the risk of the best fixed k-set in hindsight.
    pub regret: Option<f64>,
    /// The bound on FPL's expected regret at the run's own eta, eta G + t G / (4 eta)
    /// (`crate::regret::fpl_bound`); `None` where eta = 0 or the method ranks the latest
    /// risk alone (naive, greedy: no guarantee). In training a diagnostic: the risks
    /// react to the selection.
    pub regret_bound: Option<f64>,
    /// The formula the paper prints, 2 sqrt(2 k t ln C(n, k)) (`crate::regret::
    /// paper_bound`), for the same methods as `regret_bound`: not a bound on these runs.
    #[serde(default)]
    pub paper_bound: Option<f64>,
    /// Exactly the work the method needs for the epoch: choosing its samples (with the
    /// scoring pass that takes, if any) and training; never test evaluation.
    pub epoch_seconds: f64,
    /// Samples trained on this epoch.
    pub selected: usize,
    pub learning_rate: f64,
}

impl EpochMetrics {
    /// The CSV header for a run of `networks` networks: two-network runs add each
    /// network's accuracy as `test_accuracy_net1`, `test_accuracy_net2`.
    pub fn csv_header(networks: usize) -> String {
        let mut header = String::from(
            "epoch,train_loss,test_accuracy,label_precision,label_recall,selection_risk,total_selection_risk,regret,regret_bound,paper_bound,epoch_seconds,selected,learning_rate,val_accuracy",
        );
        if networks > 1 {
            for i in 1..=networks {
                header += &format!(",test_accuracy_net{i}");
            }
        }
        header
    }

    pub fn csv_row(&self) -> String {
        let optional = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
        let mut row = format!(
            "{},{:.6},{:.6},{:.6},{:.6},{},{},{},{},{},{:.4},{},{:.3e},{}",
            self.epoch,
            self.train_loss,
            self.test_accuracy,
            self.label_precision,
            self.label_recall,
            optional(self.selection_risk),
            optional(self.total_selection_risk),
            optional(self.regret),
            optional(self.regret_bound),
            optional(self.paper_bound),
            self.epoch_seconds,
            self.selected,
            self.learning_rate,
            self.val_accuracy
                .map(|v| format!("{v:.6}"))
                .unwrap_or_default()
        );
        if self.network_accuracies.len() > 1 {
            for a in &self.network_accuracies {
                row += &format!(",{a:.6}");
            }
        }
        row
    }
}

/// An f64 that JSON wrote as null because it was NaN.
fn null_as_nan<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

/// The figures a paper table reports for one run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// How many final epochs were averaged (10, or fewer in a short run).
    pub last_epochs: usize,
    pub test_accuracy: f64,
    pub label_precision: f64,
    pub label_recall: f64,
    pub epoch_seconds: f64,
    pub best_test_accuracy: f64,
    pub final_regret: Option<f64>,
    pub final_regret_bound: Option<f64>,
    /// The paper's printed formula at the last epoch (see `EpochMetrics::paper_bound`).
    pub final_paper_bound: Option<f64>,
    /// With a validation set (the paper's Clothing1M protocol): the epoch (1-based) of
    /// the best validation accuracy (the first, on ties), the test accuracy then
    /// ("Best" in the paper's Table 2) and at the last epoch ("Last").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_val_epoch: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_accuracy_at_best_val: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_accuracy_last: Option<f64>,
}

/// Means over the last `min(10, epochs)` epochs, like the paper's tables.
pub fn summarize(history: &[EpochMetrics]) -> Option<Summary> {
    let last = history.len().min(10);
    let tail = &history[history.len().checked_sub(last)?..];
    let final_row = tail.last()?;
    // The first epoch of the highest validation accuracy, over the whole run.
    let best = history.iter().filter(|m| m.val_accuracy.is_some()).fold(
        None::<&EpochMetrics>,
        |best, m| match best {
            Some(b) if b.val_accuracy >= m.val_accuracy => Some(b),
            _ => Some(m),
        },
    );
    let mean = |f: fn(&EpochMetrics) -> f64| tail.iter().map(f).sum::<f64>() / last as f64;
    // Precision is undefined (NaN) in an epoch that trained on nothing; like the
    // authors' logs, average the epochs where it is defined (NaN if there are none).
    let defined: Vec<f64> = tail
        .iter()
        .map(|m| m.label_precision)
        .filter(|p| p.is_finite())
        .collect();
    Some(Summary {
        last_epochs: last,
        test_accuracy: mean(|m| m.test_accuracy),
        label_precision: defined.iter().sum::<f64>() / defined.len() as f64,
        label_recall: mean(|m| m.label_recall),
        // Mean over all epochs: the paper's time ratio compares whole runs.
        epoch_seconds: history.iter().map(|m| m.epoch_seconds).sum::<f64>() / history.len() as f64,
        best_test_accuracy: history.iter().map(|m| m.test_accuracy).fold(0.0, f64::max),
        final_regret: final_row.regret,
        final_regret_bound: final_row.regret_bound,
        final_paper_bound: final_row.paper_bound,
        best_val_epoch: best.map(|m| m.epoch),
        test_accuracy_at_best_val: best.map(|m| m.test_accuracy),
        test_accuracy_last: best.map(|_| final_row.test_accuracy),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(epoch: usize, acc: f64) -> EpochMetrics {
        EpochMetrics {
            epoch,
            train_loss: 0.0,
            test_accuracy: acc,
            network_accuracies: vec![acc],
            val_accuracy: None,
            label_precision: 1.0,
            label_recall: 0.5,
            selection_risk: Some(0.0),
            total_selection_risk: Some(0.0),
            regret: Some(epoch as f64),
            regret_bound: Some(100.0),
            paper_bound: Some(50.0),
            epoch_seconds: 1.0,
            selected: 1,
            learning_rate: 1e-3,
        }
    }

    #[test]
    fn summary_averages_the_last_ten() {
        let history: Vec<_> = (1..=15).map(|e| row(e, e as f64)).collect();
        let s = summarize(&history).unwrap();
        assert_eq!(s.last_epochs, 10);
        assert!((s.test_accuracy - 10.5).abs() < 1e-12);
        assert_eq!(s.best_test_accuracy, 15.0);
        assert_eq!(s.final_regret, Some(15.0));
        let mut idle = history.clone();
        idle[14].label_precision = f64::NAN;
        idle[13].label_precision = 0.5;
        let s = summarize(&idle).unwrap();
        assert!(
            (s.label_precision - (8.0 + 0.5) / 9.0).abs() < 1e-12,
            "NaN epochs are left out"
        );
        let short = summarize(&history[..3]).unwrap();
        assert_eq!(short.last_epochs, 3);
        assert!(summarize(&[]).is_none());
        assert_eq!(
            row(1, 0.5).csv_row().split(',').count(),
            EpochMetrics::csv_header(1).split(',').count()
        );
        let mut pair = row(1, 0.5);
        pair.network_accuracies = vec![0.4, 0.6];
        pair.regret = None;
        let cells: Vec<String> = pair.csv_row().split(',').map(String::from).collect();
        let header = EpochMetrics::csv_header(2);
        assert_eq!(cells.len(), header.split(',').count());
        assert!(header.ends_with("test_accuracy_net1,test_accuracy_net2"));
        assert_eq!(cells[7], "", "no regret for a method without a selector");
        assert_eq!(cells[13], "", "no validation set");
        assert_eq!(cells[15], "0.600000");
    }

    #[test]
    fn the_best_validation_epoch_is_the_first_of_the_highest() {
        let validated: Vec<_> = [0.5, 0.7, 0.7, 0.6]
            .iter()
            .enumerate()
            .map(|(i, &v)| EpochMetrics {
                val_accuracy: Some(v),
                ..row(i + 1, 0.1 * (i + 1) as f64)
            })
            .collect();
        let s = summarize(&validated).unwrap();
        assert_eq!(s.best_val_epoch, Some(2));
        assert_eq!(s.test_accuracy_at_best_val, Some(0.2));
        assert_eq!(s.test_accuracy_last, Some(0.4));
        assert!(validated[1].csv_row().contains(",0.700000"));
        let plain = summarize(&[row(1, 0.5)]).unwrap();
        assert_eq!(plain.best_val_epoch, None);
        assert!(!serde_json::to_string(&plain).unwrap().contains("best_val"));
    }
}
