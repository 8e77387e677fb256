//! `taks`: the command-line trainer. Parses arguments, picks the device and hands the
//! work to `taks-core`; prints errors once, on one line, with a non-zero exit.

mod bench;
mod bench_select;
mod cli;
mod config;
mod device;
mod experiment;
mod plot;
mod table;
mod train;
mod tune;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // A failure deep inside a backend should still read as one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let message = message.lines().next().unwrap_or_default().to_string();
        eprintln!("error: internal failure: {message}");
    }));
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Train(args) => train::run(args),
        cli::Command::Bench(args) => bench::run(args),
        cli::Command::BenchSelect(args) => bench_select::run(args),
        cli::Command::Experiment(args) => experiment::run(args),
        cli::Command::Tune(args) => tune::run(args),
        cli::Command::Table { runs } => table::run(&runs),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line: the whole context chain, joined.
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
