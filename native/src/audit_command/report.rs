//! `report.html`: one self-contained page for a person reviewing an audit.
//!
//! No scripts, no external files: the thumbnails are PNGs inlined as data URLs and the
//! histogram is inline SVG, so the page opens from disk, from an e-mail attachment or
//! from an archive exactly the same. It shows the summary, the per-class table, the
//! histogram of label quality (label issues in red) and the most suspect samples with
//! their given and suggested labels: images as thumbnails of what the network saw, rows
//! of a CSV as their first feature values (un-normalised, to 5 significant digits).

use std::fmt::Write;

use taks_core::audit::AuditOutcome;
use taks_core::audit::input::Input;
use taks_core::formats::image_folder::thumbnail_png;

use taks_core::audit::source::AuditData;
use taks_core::audit::summary::AuditSummary;

/// Thumbnails fit in this many pixels.
const THUMBNAIL: u32 = 96;
/// Feature values shown per CSV row.
const FEATURES_SHOWN: usize = 8;
const BINS: usize = 20;

pub fn render(
    data: &AuditData,
    outcome: &AuditOutcome,
    order: &[usize],
    summary: &AuditSummary,
    rows: usize,
) -> String {
    let mut html = String::new();
    let flagged = outcome.samples.iter().filter(|s| s.is_label_issue).count();
    let _ = write!(
        html,
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>taks audit: {source}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: middle; }}
th {{ background: #f3f3f3; }}
tr.issue td.verdict {{ color: #b00; font-weight: bold; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
code {{ font-size: 12px; }}
</style></head><body>
<h1>Label audit of {source}</h1>
<p id="overview">{n} samples in {classes} classes. Estimated noise rate <b>{rate:.1}%</b>;
<b id="issue-count">{flagged}</b> label issues. TAkS trained on k = {k} samples per epoch
({k_pct:.0}%) for {epochs} epochs with the {arch}; {skipped} files skipped.</p>
"#,
        source = escape(&data.source),
        n = data.ids.len(),
        classes = data.classes.len(),
        rate = outcome.estimate.rate * 100.0,
        k = outcome.k,
        k_pct = outcome.k_ratio * 100.0,
        epochs = outcome.history.len(),
        arch = summary.architecture,
        skipped = data.skipped.len(),
    );
    if let Some(b) = &summary.backbone {
        let _ = writeln!(
            html,
            "<p id=\"backbone\">The samples are the {} features of each image from the pretrained {} in <code>{}</code>, not fine-tuned: {}.</p>",
            b.features,
            b.network,
            escape(&b.weights),
            escape(b.why),
        );
    }
    if let Some(truth) = &summary.truth {
        let _ = writeln!(
            html,
            "<p id=\"truth\">Against the known truth: noise rate {:.1}%, precision {:.3}, recall {:.3}, F1 {:.3}.</p>",
            truth.noise_rate * 100.0,
            truth.precision,
            truth.recall,
            truth.f1,
        );
    }

    html += &per_class(summary);
    html += "<h2>Label quality</h2>\n<p>1 - the mean noise-risk over the TAkS epochs: near 1 the model kept agreeing with the label, near 0 it kept contradicting it. Red: label issues.</p>\n";
    html += &histogram(outcome);
    html += &suspects(data, outcome, order, rows);
    html += &skipped(data);
    let _ = writeln!(
        html,
        "<p>{flagged} label issues of {} samples. Written by taks {}.</p>\n</body></html>",
        data.ids.len(),
        env!("CARGO_PKG_VERSION")
    );
    html
}

/// Each class's samples, label issues and estimated noise.
fn per_class(summary: &AuditSummary) -> String {
    let mut html = String::from(
        "<h2>Per class</h2>\n<table id=\"per-class\"><tr><th>class</th><th>samples</th><th>label issues</th><th>estimated noise</th></tr>\n",
    );
    for c in &summary.per_class {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&c.class),
            c.samples,
            c.label_issues,
            c.estimated_noise
                .map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0)),
        );
    }
    html + "</table>\n"
}

/// The `rows` most suspect samples (`order`: most suspect first), each as the network
/// saw it.
fn suspects(data: &AuditData, outcome: &AuditOutcome, order: &[usize], rows: usize) -> String {
    let shown = rows.min(order.len());
    let mut html = format!(
        "<h2>The {shown} most suspect samples</h2>\n<table id=\"suspects\"><tr><th>#</th><th>sample</th><th>id</th><th>given</th><th>suggested</th><th>confidence</th><th>label quality</th><th>issue</th></tr>\n"
    );
    for (rank, &i) in order.iter().take(shown).enumerate() {
        let s = &outcome.samples[i];
        let _ = writeln!(
            html,
            "<tr class=\"suspect{}\"><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.3}</td><td class=\"verdict\">{}</td></tr>",
            if s.is_label_issue { " issue" } else { "" },
            rank + 1,
            sample_cell(data, i),
            escape(&data.ids[i]),
            escape(&data.classes[s.given_label as usize]),
            escape(&data.classes[s.suggested_label as usize]),
            s.suggested_confidence,
            s.label_quality,
            if s.is_label_issue { "yes" } else { "no" },
        );
    }
    html + "</table>\n"
}

/// The files left out, and why (nothing where none was).
fn skipped(data: &AuditData) -> String {
    if data.skipped.is_empty() {
        return String::new();
    }
    let mut html = String::from(
        "<h2>Skipped files</h2>\n<table id=\"skipped\"><tr><th>file</th><th>reason</th></tr>\n",
    );
    for s in &data.skipped {
        let _ = writeln!(
            html,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            escape(&s.id),
            escape(&s.reason)
        );
    }
    html + "</table>\n"
}

/// A thumbnail for an image (from the sample as the network saw it), the first feature
/// values for a table row (un-normalised).
fn sample_cell(data: &AuditData, i: usize) -> String {
    let input = &data.prepared.input;
    let samples = &data.prepared.dataset.samples;
    match input {
        Input::Image {
            channels,
            height,
            width,
        } => {
            // Image bytes as stored; a built-in set's f32 pixels (in [0, 1]) as bytes.
            let bytes = samples.bytes_of(i).unwrap_or_else(|| {
                samples
                    .raw(i)
                    .iter()
                    .map(|&v| (v * 255.0).round().clamp(0.0, 255.0) as u8)
                    .collect()
            });
            let png = thumbnail_png(&bytes, *channels, *width as u32, *height as u32, THUMBNAIL);
            format!(
                "<img alt=\"{}\" src=\"data:image/png;base64,{}\">",
                escape(&data.ids[i]),
                base64(&png)
            )
        }
        Input::Table { features } => {
            let per_row = features.len().min(FEATURES_SHOWN);
            let shown: Vec<String> = samples.raw(i)[..per_row]
                .iter()
                .zip(features)
                .map(|(v, name)| format!("{}={}", escape(name), round(*v)))
                .collect();
            let more = if features.len() > per_row { " ..." } else { "" };
            format!("<code>{}{more}</code>", shown.join(" "))
        }
    }
}

/// Inline SVG: label quality in [`BINS`] bins, label issues stacked in red.
fn histogram(outcome: &AuditOutcome) -> String {
    let mut clean = [0usize; BINS];
    let mut issue = [0usize; BINS];
    for s in &outcome.samples {
        let bin = ((s.label_quality * BINS as f64) as usize).min(BINS - 1);
        match s.is_label_issue {
            true => issue[bin] += 1,
            false => clean[bin] += 1,
        }
    }
    let top = (0..BINS)
        .map(|b| clean[b] + issue[b])
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let (w, h, bar) = (600.0, 200.0, 600.0 / BINS as f64);
    let mut svg = format!(
        "<svg id=\"histogram\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{}\" viewBox=\"0 0 {w} {}\">\n",
        h + 20.0,
        h + 20.0
    );
    for b in 0..BINS {
        let x = b as f64 * bar;
        let hi = issue[b] as f64 / top * h;
        let hc = clean[b] as f64 / top * h;
        let _ = writeln!(
            svg,
            "<rect class=\"clean\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{hc:.1}\" fill=\"#999\"><title>{} samples with quality {:.2}-{:.2}</title></rect>",
            h - hc - hi,
            bar - 1.0,
            clean[b],
            b as f64 / BINS as f64,
            (b + 1) as f64 / BINS as f64
        );
        let _ = writeln!(
            svg,
            "<rect class=\"issue\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{hi:.1}\" fill=\"#c33\"><title>{} label issues</title></rect>",
            h - hi,
            bar - 1.0,
            issue[b]
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"0\" y=\"{}\" font-size=\"12\">0</text><text x=\"{}\" y=\"{}\" font-size=\"12\">1</text></svg>",
        h + 15.0,
        w - 10.0,
        h + 15.0
    );
    svg
}

/// A value un-normalised from f32, to 5 significant digits (12, not 12.000001).
fn round(v: f32) -> String {
    let text = format!("{v:.4e}");
    text.parse::<f64>().map_or(text, |x| x.to_string())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Standard base64 with padding (RFC 4648), for data URLs.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let v = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(v >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn markup_in_names_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
