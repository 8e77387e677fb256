//! `taks`: the command-line trainer. Parses arguments, picks the device and hands the
//! work to `taks-core`; prints errors once, on one line, with a non-zero exit.

mod audit_command;
mod bench;
mod bench_clock;
mod bench_data;
mod bench_report;
mod bench_select;
mod bench_torch;
mod cli;
mod device;
#[cfg(test)]
mod docs_check;
mod embed;
mod experiment;
#[cfg(test)]
mod flags_check;
mod folder_data;
mod model_file;
mod out_dir;
mod picks;
mod plot;
mod predict;
mod progress;
mod run_folder;
mod summary_table;
mod table;
mod train_command;
mod tune;
#[cfg(test)]
mod unsafe_check;

use std::process::ExitCode;

use clap::Parser;

/// The exit code of a failure that is a bug in taks (a panic), as opposed to 1, a
/// problem with the input or the machine that the message explains (EX_SOFTWARE).
const BUG: u8 = 70;

fn main() -> ExitCode {
    // A panic is a bug in taks: say so on one line, keep the location and, with
    // RUST_BACKTRACE=1, the backtrace, and exit with its own code so that scripts and
    // the tests can tell it from a user error.
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let message = message.lines().next().unwrap_or_default().to_string();
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "error: internal failure: {message}{place}; this is a bug in taks, please report it (with the output of RUST_BACKTRACE=1)"
        );
        let backtrace = std::backtrace::Backtrace::capture();
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            eprintln!("{backtrace}");
        }
    }));
    // Before any device exists: a second run reuses the first one's GPU autotuning and
    // convolution timings.
    let cache = taks_core::gpu::tuning_cache::keep_in_user_cache();
    device::probe::keep_in(cache.clone());
    taks_core::ops::conv::timings::keep_in(cache);
    if let Err(message) = taks_core::plan::Switches::from_env() {
        eprintln!("error: {message}");
        return ExitCode::from(2);
    }
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    let result = std::panic::catch_unwind(|| match cli.command {
        cli::Command::Train(args) => train_command::run(args),
        cli::Command::Bench(args) => bench::run(args),
        cli::Command::BenchSelect(args) => bench_select::run(args),
        cli::Command::Experiment(args) => experiment::run(args),
        cli::Command::Tune(args) => tune::run(args),
        cli::Command::Audit(args) => audit_command::run(args),
        cli::Command::Predict(args) => predict::run(args),
        cli::Command::Embed(args) => embed::run(args),
        cli::Command::ListAdapters => device::list_adapters(),
        cli::Command::ProbeSpirv => device::spirv_probe::probe(),
        cli::Command::ProbeCoop => device::coop_probe::probe(),
        cli::Command::Table { runs } => table::run(&runs),
    });
    match result {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(err)) => {
            // One line: the whole context chain, joined.
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
        // The hook has printed it.
        Err(_) => ExitCode::from(BUG),
    }
}

/// clap's verdict on the arguments. Help and version go out as clap writes them; a
/// mistake becomes one line like every other error (clap's suggestion and the list of
/// valid values included), with clap's exit code for usage errors.
fn usage_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        return ExitCode::from(err.exit_code() as u8);
    }
    let text = err.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .filter(|l| !l.starts_with("Usage:"))
        .collect();
    let line = parts.join(" ");
    eprintln!("error: {}", line.strip_prefix("error: ").unwrap_or(&line));
    ExitCode::from(err.exit_code() as u8)
}
