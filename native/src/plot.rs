//! plot.svg: the run at a glance, with no plotting dependency. Left: test accuracy and
//! label precision per epoch. Right: regret against the bound that holds at the run's
//! eta (and the paper's printed formula, labelled as such) for the methods with an FPL
//! selector, the training loss for the others. [`curves`] draws many runs'
//! accuracy in one panel, for `taks experiment`.

use std::fmt::Write;

use taks_core::metrics::EpochMetrics;
use taks_core::settings::TrainConfig;

const W: f64 = 420.0;
const H: f64 = 260.0;
const PAD: f64 = 40.0;

pub struct Series<'a> {
    pub label: &'a str,
    pub color: &'a str,
    pub values: Vec<f64>,
}

/// One panel at horizontal offset `x0`, y from 0 to `y_max`.
pub fn panel(svg: &mut String, x0: f64, title: &str, series: &[Series], y_max: f64, percent: bool) {
    let n = series
        .iter()
        .map(|s| s.values.len())
        .max()
        .unwrap_or(0)
        .max(2);
    let (left, top, w, h) = (x0 + PAD, PAD, W - 1.5 * PAD, H - 2.0 * PAD);
    let _ = write!(
        svg,
        r#"<text x="{}" y="20" font-size="13" font-weight="bold">{title}</text>"#,
        left
    );
    let _ = write!(
        svg,
        r##"<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#999"/>"##
    );
    for tick in 0..=4 {
        let v = y_max * tick as f64 / 4.0;
        let y = top + h - h * tick as f64 / 4.0;
        let label = if percent {
            format!("{:.0}%", v * 100.0)
        } else {
            format!("{v:.0}")
        };
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" font-size="10" text-anchor="end">{label}</text>"#,
            left - 4.0,
            y + 3.0
        );
        let _ = write!(
            svg,
            r##"<line x1="{left}" x2="{}" y1="{y}" y2="{y}" stroke="#eee"/>"##,
            left + w
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" font-size="10" text-anchor="middle">epoch (1..{})</text>"#,
        left + w / 2.0,
        top + h + 16.0,
        n
    );
    for (i, s) in series.iter().enumerate() {
        let points: Vec<String> = s
            .values
            .iter()
            .enumerate()
            .map(|(e, &v)| {
                let x = left + w * e as f64 / (n - 1) as f64;
                let y = top + h - h * (v / y_max).clamp(0.0, 1.0);
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>"#,
            s.color,
            points.join(" ")
        );
        let ly = top + 14.0 + 14.0 * i as f64;
        let _ = write!(
            svg,
            r#"<text x="{}" y="{ly}" font-size="11" fill="{}">{}</text>"#,
            left + 6.0,
            s.color,
            s.label
        );
    }
}

pub fn svg(history: &[EpochMetrics], config: &TrainConfig) -> String {
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif">"#,
        2.0 * W,
        H + 20.0
    );
    let _ = write!(
        svg,
        r##"<text x="{}" y="{}" font-size="11" fill="#555" text-anchor="middle">{} on {}, {} noise {:.0}%</text>"##,
        W,
        H + 12.0,
        config.method.name(),
        config.dataset.name(),
        config.noise.name(),
        config.noise_rate * 100.0
    );
    let col = |f: fn(&EpochMetrics) -> f64| history.iter().map(f).collect::<Vec<_>>();
    panel(
        &mut svg,
        0.0,
        "Test accuracy and label precision",
        &[
            Series {
                label: "test accuracy",
                color: "#1f77b4",
                values: col(|m| m.test_accuracy),
            },
            Series {
                label: "label precision",
                color: "#2ca02c",
                values: col(|m| m.label_precision),
            },
        ],
        1.0,
        true,
    );
    if !config.method.uses_selector() {
        let loss = col(|m| m.train_loss);
        let y_max = loss
            .iter()
            .cloned()
            .filter(|v| v.is_finite())
            .fold(0.1, f64::max);
        panel(
            &mut svg,
            W,
            "Training loss (the method's objective)",
            &[Series {
                label: "train loss",
                color: "#d62728",
                values: loss,
            }],
            y_max,
            false,
        );
        return svg + "</svg>\n";
    }
    let regret = col(|m| m.regret.unwrap_or(f64::NAN));
    let bound = col(|m| m.regret_bound.unwrap_or(f64::NAN));
    let paper = col(|m| m.paper_bound.unwrap_or(f64::NAN));
    let y_max = regret
        .iter()
        .chain(&bound)
        .chain(&paper)
        .cloned()
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max);
    // Naive and greedy have no bound: leave out the lines they have no value for.
    let series: Vec<Series> = [
        Series {
            label: "regret",
            color: "#d62728",
            values: regret,
        },
        Series {
            label: "FPL bound at this eta: eta G + tG/(4 eta)",
            color: "#7f7f7f",
            values: bound,
        },
        Series {
            label: "paper's printed 2 sqrt(2kt ln C(n,k)): no bound",
            color: "#bcbd22",
            values: paper,
        },
    ]
    .into_iter()
    .filter(|s| s.values.iter().all(|v| v.is_finite()))
    .collect();
    panel(
        &mut svg,
        W,
        "Regret: a diagnostic (the risks react to the selection)",
        &series,
        y_max,
        false,
    );
    svg + "</svg>\n"
}

/// A palette that tells ten methods apart.
pub const COLORS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// One panel of test accuracy per epoch, one line per labelled series.
pub fn curves(title: &str, series: &[(String, Vec<f64>)]) -> String {
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{}" font-family="sans-serif">"#,
        H + 14.0 * series.len().saturating_sub(8) as f64
    );
    let lines: Vec<Series> = series
        .iter()
        .enumerate()
        .map(|(i, (label, values))| Series {
            label,
            color: COLORS[i % COLORS.len()],
            values: values.clone(),
        })
        .collect();
    panel(&mut svg, 0.0, title, &lines, 1.0, true);
    svg + "</svg>\n"
}
