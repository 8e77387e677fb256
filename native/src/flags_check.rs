//! Every flag a subcommand's `--help` lists acts in that subcommand: a flag parsed and
//! then ignored (`bench --device` timed the CPU whatever it said) misleads without a
//! word. A test walks every visible flag of every visible subcommand and finds its
//! evidence, the first of:
//! - for a flag that defines a run, in a subcommand that builds one (`train`, `bench`,
//!   `tune`): the config that subcommand builds from `taks SUB FLAG VALUE` carries the
//!   value, where without the flag it did not ([`RUN_FLAGS`]);
//! - an end-to-end test (a function of `native/tests/cli/` or `native/tests/audit/`, or a helper it calls) that runs the
//!   subcommand with the flag: its assertions show what the flag does;
//! - a case of `tests/corpus/cases.tsv` giving the subcommand the flag: it is read and
//!   checked there.
//!
//! A test module only: nothing here is part of the binary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use clap::{CommandFactory, Parser};
use serde_json::{Value, json};

use crate::cli::{Cli, Command};
use crate::docs_check::root;
use crate::{bench, tune};

/// Flags that define a run: (flag, value given, the config's field, the value the
/// field must then hold).
const RUN_FLAGS: [(&str, &str, &str, f64); 13] = [
    ("--noise-rate", "0.3", "noise_rate", 0.3),
    ("--train-limit", "7", "train_limit", 7.0),
    ("--test-limit", "9", "test_limit", 9.0),
    ("--k-ratio", "0.4", "k_ratio", 0.4),
    ("--eta-ratio", "0.002", "eta_ratio", 0.002),
    ("--gamma", "0.25", "k_ratio", 0.6),
    ("--seed", "5", "seed", 5.0),
    ("--batch-size", "32", "batch_size", 32.0),
    ("--lr", "0.01", "learning_rate", 0.01),
    ("--decay-start", "2", "decay_start", 2.0),
    ("--forget-rate", "0.1", "forget_rate", 0.1),
    ("--co-lambda", "0.5", "co_lambda", 0.5),
    ("--init-epoch", "3", "init_epoch", 3.0),
];

/// Run flags whose value is a name, not a number.
const RUN_NAMES: [(&str, &str, &str); 3] = [
    ("--dataset", "cifar10", "dataset"),
    ("--noise", "pairflip", "noise"),
    ("--precision", "f16", "precision"),
];

/// Every visible subcommand with its visible long flags.
fn flags() -> BTreeMap<String, BTreeSet<String>> {
    Cli::command()
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| {
            let flags = sub
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long())
                .filter(|long| !["help", "version"].contains(long))
                .map(|long| format!("--{long}"))
                .collect();
            (sub.get_name().to_string(), flags)
        })
        .collect()
}

/// The config `sub` builds from `args` (after `taks SUB`), as JSON.
fn config_of(sub: &str, args: &[&str]) -> Value {
    let mut line = vec!["taks", sub];
    line.extend(args);
    if sub == "tune" {
        line.extend(["--out", "x"]);
    }
    let cli = Cli::try_parse_from(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    let config = match cli.command {
        Command::Train(a) => a.run.config(a.method).map_err(anyhow::Error::from),
        Command::Bench(a) => bench::config(&a, taks_core::methods::Method::TAKS),
        Command::Tune(a) => tune::base_config(&a),
        _ => unreachable!("only train, bench and tune build a run here"),
    };
    serde_json::to_value(config.unwrap_or_else(|e| panic!("{line:?}: {e:#}"))).unwrap()
}

/// The end-to-end tests' files: `native/tests/cli/*.rs` and `native/tests/audit/*.rs`
/// (one test binary each, a file per subcommand or kind of data).
fn test_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for binary in ["cli", "audit"] {
        let dir = root().join("native/tests").join(binary);
        for entry in std::fs::read_dir(&dir).expect("the test binary's folder exists") {
            let path = entry.expect("tests/ is readable").path();
            if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The functions of the end-to-end tests as (name, body).
fn test_functions() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in test_files() {
        let text = std::fs::read_to_string(&path).expect("a test file reads");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\nfn ") {
            let from = &rest[at + 4..];
            let name: String = from
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let end = from.find("\n}\n").map_or(from.len(), |e| e + 3);
            out.push((name, from[..end].to_string()));
            rest = &from[end..];
        }
    }
    out
}

/// Whether some test function runs `sub` with `flag`: its body, or the body of a helper
/// it calls (to any depth), names the subcommand, and its own body passes the flag.
fn an_end_to_end_test(functions: &[(String, String)], sub: &str, flag: &str) -> Option<String> {
    let mut runs: BTreeSet<&str> = functions
        .iter()
        .filter(|(_, body)| body.contains(&format!("\"{sub}\"")))
        .map(|(name, _)| name.as_str())
        .collect();
    loop {
        let more: Vec<&str> = functions
            .iter()
            .filter(|(name, _)| !runs.contains(name.as_str()))
            .filter(|(_, body)| runs.iter().any(|h| body.contains(&format!("{h}("))))
            .map(|(name, _)| name.as_str())
            .collect();
        if more.is_empty() {
            break;
        }
        runs.extend(more);
    }
    functions
        .iter()
        .find(|(name, body)| runs.contains(name.as_str()) && body.contains(&format!("\"{flag}\"")))
        .map(|(name, _)| name.clone())
}

/// Whether a case of the bad-input corpus gives `sub` the flag.
fn a_corpus_case(sub: &str, flag: &str) -> Option<String> {
    let cases = std::fs::read_to_string(root().join("tests/corpus/cases.tsv")).expect("corpus");
    cases
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut fields = l.split('\t');
            Some((fields.next()?, fields.next()?))
        })
        .find(|(_, args)| {
            let words: Vec<&str> = args
                .split(' ')
                .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                .collect();
            words.first() == Some(&sub)
                && words
                    .iter()
                    .any(|w| *w == flag || w.starts_with(&format!("{flag}=")))
        })
        .map(|(name, _)| name.to_string())
}

/// The run flags reach the config of each subcommand that builds a run: the field holds
/// the value given, and did not without it (so the check could fail).
#[test]
fn the_run_flags_reach_the_config_each_subcommand_builds() {
    let all = flags();
    for sub in ["train", "bench", "tune"] {
        let plain = config_of(sub, &[]);
        for (flag, value, field, expected) in RUN_FLAGS {
            // tune's own --gamma centres its grid of k-ratios (shown end to end).
            if !all[sub].contains(flag) || (sub, flag) == ("tune", "--gamma") {
                continue;
            }
            let given = config_of(sub, &[flag, value]);
            let got = given[field].as_f64();
            assert!(
                got.is_some_and(|g| (g - expected).abs() < 1e-9),
                "taks {sub} {flag} {value}: {field} is {:?}, not {expected}",
                given[field]
            );
            assert!(
                plain[field]
                    .as_f64()
                    .is_none_or(|p| (p - expected).abs() > 1e-9),
                "taks {sub}: {field} is {expected} without {flag}: the check cannot fail"
            );
        }
        for (flag, value, field) in RUN_NAMES {
            if !all[sub].contains(flag) {
                continue;
            }
            assert_eq!(
                config_of(sub, &[flag, value])[field],
                json!(value),
                "taks {sub} {flag}"
            );
            assert_ne!(
                plain[field],
                json!(value),
                "taks {sub}: {field} is {value} by default"
            );
        }
    }
}

/// Every visible flag of every visible subcommand has its evidence.
#[test]
fn every_flag_a_subcommand_lists_acts_there() {
    let functions = test_functions();
    let in_config: BTreeSet<&str> = RUN_FLAGS
        .iter()
        .map(|f| f.0)
        .chain(RUN_NAMES.iter().map(|f| f.0))
        .collect();
    let mut missing = Vec::new();
    for (sub, flags) in flags() {
        for flag in flags {
            let shown = (["train", "bench", "tune"].contains(&sub.as_str())
                && in_config.contains(flag.as_str())
                && (sub.as_str(), flag.as_str()) != ("tune", "--gamma"))
                || an_end_to_end_test(&functions, &sub, &flag).is_some()
                || a_corpus_case(&sub, &flag).is_some();
            if !shown {
                missing.push(format!("taks {sub} {flag}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags no test shows acting (give each a test, or take the flag away):\n{}",
        missing.join("\n")
    );
}
