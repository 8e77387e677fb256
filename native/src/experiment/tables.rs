//! The grid's tables: per (dataset, noise, method) the mean and std over seeds of each
//! run's last-10-epoch means, and the time ratio against Standard, as `table.md` and
//! `table.csv`.

use std::collections::HashMap;

use anyhow::Result;
use taks_core::data::DatasetKind;
use taks_core::methods::Method;
use taks_core::metrics::EpochMetrics;
use taks_core::noise::NoiseKind;
use taks_core::precision::Precision;

use super::{Cell, ExperimentArgs, noise_label};
use crate::summary_table;

/// One (dataset, noise, method) over its seeds.
pub(super) struct Aggregate {
    pub(super) seeds: usize,
    pub(super) accuracy: (f64, f64),
    pub(super) precision: (f64, f64),
    pub(super) recall: f64,
    pub(super) epoch_seconds: f64,
    pub(super) mean_curve: Vec<f64>,
}

pub(super) type Key = (DatasetKind, String, Method);

/// Over the finite values (a run whose precision is undefined is left out); NaN if none.
fn mean_std(values: &[f64]) -> (f64, f64) {
    let values: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

pub(super) fn collect(cells: &[Cell]) -> Result<HashMap<Key, Aggregate>> {
    let mut groups: HashMap<Key, Vec<(summary_table::Row, Vec<EpochMetrics>)>> = HashMap::new();
    for cell in cells {
        let row = summary_table::read_run(&cell.dir)?;
        let history = summary_table::read_metrics(&cell.dir)?;
        let c = &cell.config;
        groups
            .entry((c.dataset, noise_label(c.noise, c.noise_rate), c.method))
            .or_default()
            .push((row, history));
    }
    Ok(groups
        .into_iter()
        .map(|(key, runs)| {
            let col = |f: fn(&summary_table::Row) -> f64| {
                runs.iter().map(|(r, _)| f(r)).collect::<Vec<_>>()
            };
            let epochs = runs.iter().map(|(_, h)| h.len()).min().unwrap_or(0);
            let mean_curve = (0..epochs)
                .map(|e| {
                    runs.iter().map(|(_, h)| h[e].test_accuracy).sum::<f64>() / runs.len() as f64
                })
                .collect();
            let aggregate = Aggregate {
                seeds: runs.len(),
                accuracy: mean_std(&col(|r| r.summary.test_accuracy)),
                precision: mean_std(&col(|r| r.summary.label_precision)),
                recall: mean_std(&col(|r| r.summary.label_recall)).0,
                epoch_seconds: mean_std(&col(|r| r.summary.epoch_seconds)).0,
                mean_curve,
            };
            (key, aggregate)
        })
        .collect())
}

fn time_ratio(results: &HashMap<Key, Aggregate>, key: &Key) -> Option<f64> {
    let standard = results.get(&(key.0, key.1.clone(), Method::STANDARD))?;
    Some(results.get(key)?.epoch_seconds / standard.epoch_seconds)
}

pub(super) fn markdown_table(
    results: &HashMap<Key, Aggregate>,
    datasets: &[DatasetKind],
    noises: &[(NoiseKind, f64)],
    methods: &[Method],
    args: &ExperimentArgs,
) -> String {
    let columns: Vec<(DatasetKind, String)> = datasets
        .iter()
        .flat_map(|&d| noises.iter().map(move |&(k, r)| (d, noise_label(k, r))))
        .collect();
    let header = format!(
        "| method | {} |\n|---|{}\n",
        columns
            .iter()
            .map(|(d, n)| format!("{} {n}", d.name()))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(columns.len())
    );
    let section = |title: &str, cell: &dyn Fn(&Key) -> Option<String>| {
        let mut s = format!("### {title}\n\n{header}");
        for &m in methods {
            let cells: Vec<String> = columns
                .iter()
                .map(|(d, n)| cell(&(*d, n.clone(), m)).unwrap_or_else(|| "-".into()))
                .collect();
            s += &format!("| {} | {} |\n", m.title(), cells.join(" | "));
        }
        s + "\n"
    };
    let pm = |(mean, std): (f64, f64)| match mean.is_finite() {
        true => format!("{:.2} ± {:.2}", mean * 100.0, std * 100.0),
        false => "n/a".into(),
    };
    let mut out = format!(
        "## taks experiment: {} epochs, seeds {}{}{}{}\n\n",
        args.epochs.unwrap_or_default(),
        args.seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        match (args.train_limit, args.test_limit) {
            (None, None) => String::new(),
            (train, test) => format!(
                " (train limit {}, test limit {})",
                train.map_or("none".into(), |v| v.to_string()),
                test.map_or("none".into(), |v| v.to_string())
            ),
        },
        match &args.init {
            Some(path) => format!(", fine-tuned from {}", path.display()),
            None => String::new(),
        },
        match args.precision.unwrap_or_default() {
            Precision::F32 => String::new(),
            mixed => format!(", mixed precision {}", mixed.name()),
        }
    );
    out += "Each figure is the mean ± std over seeds of a run's mean over its last 10 epochs. \
        Label precision leaves out epochs in which a method trained on no sample (n/a: none \
        in the last 10). x T divides mean epoch times measured in this grid's runs, so it is \
        only as steady as the machine was while they ran.\n\n";
    out += &section("Test accuracy (%)", &|k| {
        results.get(k).map(|r| pm(r.accuracy))
    });
    out += &section("Label precision (%)", &|k| {
        results.get(k).map(|r| pm(r.precision))
    });
    out += &section("Time ratio x T (mean epoch time / Standard's)", &|k| {
        time_ratio(results, k).map(|t| format!("{t:.2}"))
    });
    out
}

pub(super) fn csv_table(results: &HashMap<Key, Aggregate>) -> String {
    let mut keys: Vec<&Key> = results.keys().collect();
    keys.sort_by_key(|(d, n, m)| {
        (
            d.name(),
            n.clone(),
            Method::all().iter().position(|x| x == m),
        )
    });
    let mut out = String::from(
        "dataset,noise,method,seeds,epochs,test_accuracy_mean,test_accuracy_std,label_precision_mean,label_precision_std,label_recall_mean,epoch_seconds_mean,time_ratio\n",
    );
    for key in keys {
        let r = &results[key];
        out += &format!(
            "{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.4},{}\n",
            key.0.name(),
            key.1,
            key.2.name(),
            r.seeds,
            r.mean_curve.len(),
            r.accuracy.0,
            r.accuracy.1,
            r.precision.0,
            r.precision.1,
            r.recall,
            r.epoch_seconds,
            time_ratio(results, key)
                .map(|t| format!("{t:.4}"))
                .unwrap_or_default()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn std_is_the_population_std() {
        let (m, s) = mean_std(&[0.8, 0.9, 1.0]);
        assert!((m - 0.9).abs() < 1e-12);
        assert!((s - (0.02f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_std(&[0.5, f64::NAN]), (0.5, 0.0));
        assert!(mean_std(&[f64::NAN]).0.is_nan());
    }
}
