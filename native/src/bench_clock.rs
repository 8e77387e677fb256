//! `taks bench --clock`: the per-op GPU clock's tables ([`taks_core::gpu::clock`]), for a
//! training step and a scoring chunk of each method timed on a GPU. Each row is one op at
//! one layer shape (or one of burn's kernels launched outside taks's ops), with its device
//! time, its share of the part's kernel time, and the rates its floor (the FLOPs of its
//! products and the bytes of its operands and result, once each) gives at that time: how
//! far each op runs from the card's arithmetic and memory peaks.

use taks_core::gpu::clock::Clocked;
use taks_core::train::OpClocks;

/// Print the clocks of `method` on `device_name`.
pub fn print(device_name: &str, method: &str, clocks: &OpClocks) {
    part(device_name, method, "training step", &clocks.training_step);
    part(device_name, method, "scoring chunk", &clocks.scoring_chunk);
}

fn part(device_name: &str, method: &str, what: &str, c: &Clocked) {
    let kernels = c.kernel_seconds();
    let timing = match c.device_time {
        true => format!(
            "device timestamps; from the first kernel's start to the last one's end {:.3} ms, \
             kernels running in {:.3} ms of it, idle between kernels {:.1}%",
            c.span * 1e3,
            c.busy * 1e3,
            idle_percent(c)
        ),
        false => "the adapter has no timestamp queries: host time around each blocking launch, \
                  not the device's"
            .to_string(),
    };
    println!(
        "\nper-op GPU clock of a {method} {what} on {device_name}: {} launches, kernels {:.3} ms ({timing})",
        c.launches(),
        kernels * 1e3,
    );
    if c.untimed > 0 {
        println!(
            "{} of taks's kernels went to wgpu directly and are not timed (the adapter has no timestamp queries)",
            c.untimed
        );
    }
    println!("| op | layer | calls | launches | ms | share | GFLOP | TFLOP/s | MB | GB/s |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for op in &c.ops {
        let share = match kernels > 0.0 {
            true => 100.0 * op.seconds / kernels,
            false => 0.0,
        };
        let or_dash = |amount: f64, text: String| match amount > 0.0 {
            true => text,
            false => "-".to_string(),
        };
        println!(
            "| {} | {} | {} | {} | {:.3} | {share:.1}% | {} | {} | {} | {} |",
            op.op,
            op.shape,
            op.calls,
            op.launches,
            op.seconds * 1e3,
            or_dash(op.cost.flops, format!("{:.3}", op.cost.flops / 1e9)),
            or_dash(op.cost.flops, significant(op.flop_rate() / 1e12)),
            or_dash(op.cost.bytes, format!("{:.2}", op.cost.bytes / 1e6)),
            or_dash(op.cost.bytes, significant(op.byte_rate() / 1e9)),
        );
    }
}

/// A rate with three significant digits (at least one decimal): an H100's hundreds of
/// TFLOP/s and lavapipe's thousandths read alike.
fn significant(rate: f64) -> String {
    let decimals = match rate {
        r if r >= 100.0 || r == 0.0 => 1,
        r => (2.0 - r.log10().floor()).clamp(1.0, 8.0) as usize,
    };
    format!("{rate:.decimals$}")
}

/// The part of the span no kernel ran in, in percent.
fn idle_percent(c: &Clocked) -> f64 {
    match c.span > 0.0 {
        true => 100.0 * (c.span - c.busy) / c.span,
        false => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::significant;

    /// An H100's rates and lavapipe's both keep three significant digits.
    #[test]
    fn rates_keep_three_digits() {
        assert_eq!(significant(251.37), "251.4");
        assert_eq!(significant(12.34), "12.3");
        assert_eq!(significant(0.5), "0.500");
        assert_eq!(significant(0.0036123), "0.00361");
        assert_eq!(significant(0.0), "0.0");
    }
}
