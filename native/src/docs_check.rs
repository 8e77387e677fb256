//! The README and `docs/` checked against the code, so that they cannot drift: every
//! `taks` command they show is parsed by the real command line (a renamed flag or value
//! fails here), every relative link and heading anchor resolves, every repository path
//! they name exists, the README's table of subcommands is each subcommand's own
//! `--help` summary, and the audit page offers every network `--model` takes. A test
//! module only: nothing here is part of the binary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::cli::Cli;

/// The README may be read in one screenful or two; the guides hold the depth.
const README_MAX_LINES: usize = 250;
/// What a newcomer must find on the first screen: install, GPU, audit, browser.
const FIRST_SCREEN_LINES: usize = 60;

/// The workspace: cargo's crate folder at run time (a shared target folder may hold a
/// binary built from another checkout), the compile-time one otherwise.
pub(super) fn root() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into()),
    )
    .parent()
    .expect("native/ sits in the workspace")
    .to_path_buf()
}

/// README.md, CHANGELOG.md and every page of docs/, as (path relative to the root, text).
fn pages() -> Vec<(PathBuf, String)> {
    let root = root();
    let mut paths = vec![PathBuf::from("README.md"), PathBuf::from("CHANGELOG.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("docs/ is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| PathBuf::from("docs").join(path.file_name().expect("a file name")))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(root.join(&path))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, text)
        })
        .collect()
}

/// The text of every inline code span of one line (fenced blocks excluded by the caller).
fn code_spans(line: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let after = &rest[start..];
        let ticks = after.len() - after.trim_start_matches('`').len();
        let body = &after[ticks..];
        let fence = &after[..ticks];
        match body.find(fence) {
            Some(end) => {
                spans.push(body[..end].trim());
                rest = &body[end + ticks..];
            }
            None => break,
        }
    }
    spans
}

/// One page split into its prose lines (with line numbers) and its fenced blocks (with
/// their info string and first line number).
struct Page<'a> {
    prose: Vec<(usize, &'a str)>,
    blocks: Vec<(String, usize, Vec<&'a str>)>,
}

fn split(text: &str) -> Page<'_> {
    let mut page = Page {
        prose: Vec::new(),
        blocks: Vec::new(),
    };
    let mut open: Option<(String, usize, Vec<&str>)> = None;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            match open.take() {
                Some(block) => page.blocks.push(block),
                None => open = Some((info.trim().to_string(), number + 1, Vec::new())),
            }
            continue;
        }
        match open.as_mut() {
            Some((_, _, lines)) => lines.push(line),
            None => page.prose.push((number, line)),
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    page
}

/// Shell words of one command line: quotes removed, `#` comments and everything from
/// a pipe, redirection or command separator on dropped.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '#' if !in_word => break,
                '|' | '>' | '<' | ';' | '&' => break,
                c if c.is_whitespace() => {
                    if in_word {
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                c => {
                    word.push(c);
                    in_word = true;
                }
            },
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The arguments of a `taks` command (program name first), or None when the words are
/// not one: leading `VAR=value` assignments are skipped, and `cargo run ... -- ARGS` is
/// `taks ARGS`.
fn taks_command(words: &[String]) -> Option<Vec<String>> {
    let start = words.iter().position(|w| !is_assignment(w))?;
    let words = &words[start..];
    let program = words.first()?;
    if program == "taks" || program.ends_with("/taks") {
        return Some(words.to_vec());
    }
    if program == "cargo" && words.get(1).is_some_and(|w| w == "run") {
        let dashes = words.iter().position(|w| w == "--")?;
        let mut args = vec!["taks".to_string()];
        args.extend(words[dashes + 1..].iter().cloned());
        return Some(args);
    }
    None
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

/// Every `taks` command the pages show: (where, arguments).
fn commands() -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for (path, text) in pages() {
        let page = split(&text);
        for (info, first, lines) in &page.blocks {
            if !matches!(info.as_str(), "sh" | "bash" | "console" | "shell") {
                continue;
            }
            let mut joined = String::new();
            let mut joined_from = *first;
            for (offset, line) in lines.iter().enumerate() {
                if joined.is_empty() {
                    joined_from = first + offset;
                }
                match line.trim_end().strip_suffix('\\') {
                    Some(head) => {
                        joined.push_str(head);
                        joined.push(' ');
                        continue;
                    }
                    None => joined.push_str(line),
                }
                let line = std::mem::take(&mut joined);
                if let Some(args) = taks_command(&shell_words(&line)) {
                    found.push((format!("{}:{joined_from}", path.display()), args));
                }
            }
        }
        for (number, line) in &page.prose {
            for span in code_spans(line) {
                if let Some(args) = taks_command(&shell_words(span))
                    && span.starts_with("taks")
                {
                    found.push((format!("{}:{number}", path.display()), args));
                }
            }
        }
    }
    found
}

#[test]
fn every_taks_command_in_the_docs_is_accepted_by_the_command_line() {
    use clap::error::ErrorKind;
    let commands = commands();
    let mut failures = Vec::new();
    let mut used = BTreeSet::new();
    let names: BTreeSet<String> = Cli::command()
        .get_subcommands()
        .map(|sub| sub.get_name().to_string())
        .collect();
    for (place, args) in &commands {
        // `taks` alone names the program.
        if args.len() == 1 {
            continue;
        }
        // `taks audit` alone names the subcommand (a table row, a sentence); it must be
        // one, and its required arguments are not asked for. A subcommand that needs no
        // arguments (`taks list-adapters`) is shown by its name alone.
        if let [_, name] = args.as_slice()
            && !name.starts_with('-')
        {
            if !names.contains(name) {
                failures.push(format!("{place}: `taks {name}`: no such subcommand"));
            } else if Cli::try_parse_from(args.iter()).is_ok() {
                used.insert(name.clone());
            }
            continue;
        }
        let parsed = Cli::command()
            .try_get_matches_from(args)
            .and_then(|matches| Cli::from_arg_matches(&matches).map(|_| matches));
        match parsed {
            Ok(matches) => {
                used.extend(matches.subcommand_name().map(str::to_string));
            }
            Err(err)
                if matches!(
                    err.kind(),
                    ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                ) =>
            {
                used.extend(args.get(1).cloned());
            }
            Err(err) => {
                let first = err.render().to_string();
                let first = first.lines().next().unwrap_or_default().to_string();
                failures.push(format!("{place}: `{}`: {first}", args.join(" ")));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "commands in the docs that taks rejects:\n{}",
        failures.join("\n")
    );
    // The extraction found the docs' commands: each visible subcommand is shown at least
    // once, as it should be for a user.
    let missing: Vec<String> = visible_subcommands()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| !used.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "subcommands no page shows a command for: {missing:?}"
    );
}

/// (name, first line of its help) of every subcommand `taks --help` lists.
fn visible_subcommands() -> Vec<(String, String)> {
    Cli::command()
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            (sub.get_name().to_string(), about)
        })
        .collect()
}

#[test]
fn the_readme_table_of_subcommands_is_their_help() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let mut rows = Vec::new();
    for line in readme.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").collect();
        if let [name, about] = cells.as_slice()
            && let Some(name) = name.trim().strip_prefix("`taks ")
            && let Some(name) = name.strip_suffix('`')
            && !name.contains(' ')
        {
            rows.push((name.to_string(), about.trim().to_string()));
        }
    }
    let subcommands = visible_subcommands();
    assert_eq!(
        rows, subcommands,
        "README's subcommand table (left) must list every subcommand of `taks --help`, in its order, with its help's first line (right)"
    );
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    split(text)
        .prose
        .iter()
        .filter_map(|(_, line)| {
            let hashes = line.len() - line.trim_start_matches('#').len();
            (hashes > 0 && line[hashes..].starts_with(' ')).then(|| {
                let title = line[hashes..].replace('`', "");
                anchor(&title)
            })
        })
        .collect()
}

/// The targets of the inline links `[text](target)` of one line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                targets.push(after[..end].trim());
                rest = &after[end..];
            }
            None => break,
        }
    }
    targets
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = root();
    let mut failures = Vec::new();
    let mut links = 0;
    for (path, text) in pages() {
        let dir = path.parent().unwrap_or(Path::new(""));
        for (number, line) in split(&text).prose {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                links += 1;
                let (file, fragment) = match target.split_once('#') {
                    Some((file, fragment)) => (file, Some(fragment)),
                    None => (target, None),
                };
                let resolved = if file.is_empty() {
                    path.clone()
                } else {
                    dir.join(file)
                };
                let place = format!("{}:{number}: ({target})", path.display());
                if !root.join(&resolved).exists() {
                    failures.push(format!("{place}: no such file"));
                    continue;
                }
                if let Some(fragment) = fragment {
                    let text = std::fs::read_to_string(root.join(&resolved)).unwrap_or_default();
                    if !anchors(&text).contains(fragment) {
                        failures.push(format!("{place}: no heading with that anchor"));
                    }
                }
            }
        }
    }
    assert!(links > 0, "no relative link found: the parser is broken");
    assert!(
        failures.is_empty(),
        "links that do not resolve:\n{}",
        failures.join("\n")
    );
}

/// Folders of the repository whose files the pages name by path.
const REPOSITORY_FOLDERS: &[&str] = &[
    "core/", "native/", "formats/", "shaders/", "web/", "scripts/", "tests/", "fuzz/", "docs/",
];

#[test]
fn every_repository_path_the_docs_name_exists() {
    let root = root();
    let mut failures = Vec::new();
    let mut named = 0;
    for (path, text) in pages() {
        for (number, line) in split(&text).prose {
            for span in code_spans(line) {
                let candidate = without_line(span.trim_end_matches(['.', ',', ':'])).0;
                let is_path = REPOSITORY_FOLDERS.iter().any(|f| candidate.starts_with(f))
                    && !candidate.contains(['*', '<', ' ', '{', '$'])
                    && !candidate.chars().any(|c| c.is_ascii_uppercase());
                if !is_path {
                    continue;
                }
                named += 1;
                if !root.join(candidate).exists() {
                    failures.push(format!("{}:{number}: `{candidate}`", path.display()));
                }
            }
        }
    }
    assert!(named > 0, "no repository path found: the parser is broken");
    assert!(
        failures.is_empty(),
        "paths named in the docs that do not exist:\n{}",
        failures.join("\n")
    );
}

/// Whether a code span is a name (`Trainer::run_epoch`, `TAKS`) rather than a quoted
/// statement.
fn is_name(span: &str) -> bool {
    span.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        && span.starts_with(|c: char| c.is_ascii_alphabetic())
}

/// A path as the docs may write it, `core/src/train.rs:302`, split into the path and the
/// line.
fn without_line(span: &str) -> (&str, Option<usize>) {
    match span.rsplit_once(':') {
        Some((path, line)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => {
            (path, line.parse().ok())
        }
        _ => (span, None),
    }
}

/// The 1-based line where `file`'s text defines `name`, the last segment of a name as
/// the concept table writes it (`Trainer::run_epoch` → `run_epoch`): see [`defines`].
fn definition_line(file: &str, name: &str) -> Option<usize> {
    let name = name.rsplit("::").next().unwrap_or(name);
    file.lines()
        .position(|line| defines(line, name))
        .map(|i| i + 1)
}

/// Whether one source line defines `name`: a function, constant, static, type, trait,
/// or an enum variant on a line of its own.
fn defines(line: &str, name: &str) -> bool {
    let items = ["fn", "const", "static", "struct", "enum", "trait", "type"];
    let line = line.trim_start();
    let line = line
        .strip_prefix("pub(crate) ")
        .or_else(|| line.strip_prefix("pub(super) "))
        .or_else(|| line.strip_prefix("pub "))
        .unwrap_or(line);
    let line = line.strip_prefix("async ").unwrap_or(line);
    match items
        .iter()
        .find_map(|item| line.strip_prefix(item)?.strip_prefix(' '))
    {
        // An item: `fn name(`, `const NAME:`, `struct Name<`, ...
        Some(rest) => rest.strip_prefix(name).is_some_and(|after| {
            after.is_empty() || after.starts_with(['(', '<', ':', ' ', ',', '{', ';'])
        }),
        // An enum variant on a line of its own: `Name,`, `Name {`, `Name(`; not a
        // match arm (`k => ...`) or a binding.
        None => line
            .strip_prefix(name)
            .is_some_and(|after| after == "," || after.starts_with(" {") || after.starts_with('(')),
    }
}

/// The locations one unit of the docs names (a table cell, a list item), each held to
/// its file: a name is looked up in the last path before it in the unit; where that
/// path gives a line (`core/src/train.rs:302`), the first name after it must be defined
/// on that line, or the statement quoted after it (`while !trainer.is_done()`) must be
/// on that line, so that a reader opens the file there. Returns how many were checked,
/// and a line for each that fails, with the line to write.
fn check_locations(root: &Path, unit: &str, failures: &mut Vec<String>) -> usize {
    let mut checked = 0;
    let mut file: Option<(&str, Option<usize>, String)> = None;
    for span in code_spans(unit) {
        if REPOSITORY_FOLDERS.iter().any(|f| span.starts_with(f)) {
            let (path, line) = without_line(span);
            file = std::fs::read_to_string(root.join(path))
                .ok()
                .map(|text| (path, line, text));
        } else if let Some((path, line, text)) = &mut file {
            if is_name(span) {
                checked += 1;
                match (definition_line(text, span), line.take()) {
                    (None, _) => failures.push(format!("`{span}` is not defined in `{path}`")),
                    (Some(found), Some(given)) if found != given => failures.push(format!(
                        "`{span}` is defined at `{path}:{found}`, not :{given}"
                    )),
                    _ => {}
                }
            } else if let Some(given) = line.take() {
                // A statement quoted after `path:N` (the loop, the sum) is on line N.
                checked += 1;
                let is_on = |l: &str| l.contains(span);
                let on_given = given
                    .checked_sub(1)
                    .and_then(|i| text.lines().nth(i))
                    .is_some_and(is_on);
                if !on_given {
                    failures.push(match text.lines().position(is_on) {
                        Some(i) => format!("`{span}` is at `{path}:{}`, not :{given}", i + 1),
                        None => format!("`{span}` is not in `{path}`"),
                    });
                }
            }
        }
    }
    checked
}

/// The part of docs/architecture.md under the heading `## {heading}`.
fn architecture_section(heading: &str) -> String {
    let text =
        std::fs::read_to_string(root().join("docs/architecture.md")).expect("architecture.md");
    text.split(&format!("## {heading}\n"))
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_else(|| panic!("architecture.md has its section {heading}"))
        .to_string()
}

#[test]
fn every_name_the_concept_table_gives_is_defined_in_its_file() {
    // docs/architecture.md's concept table is where a newcomer looks an idea up: after
    // each path it names the function (or constant, type) to read, so a renamed or moved
    // function must not leave it pointing at nothing or at the wrong line. Each cell is
    // one unit ([`check_locations`]).
    let table = architecture_section("Where each idea lives");
    let mut failures = Vec::new();
    let checked: usize = table
        .lines()
        .filter(|line| line.starts_with("| "))
        .flat_map(|row| row.split(" | "))
        .map(|cell| check_locations(&root(), cell, &mut failures))
        .sum();
    assert!(
        checked >= 20,
        "only {checked} names and statements checked: the table's parser is broken"
    );
    assert!(
        failures.is_empty(),
        "the concept table:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_step_of_one_epoch_is_where_the_docs_say() {
    // "One epoch, call by call" is followed line by line with the code open: each
    // numbered step is one unit ([`check_locations`]), its items joined across lines.
    let walk = architecture_section("One epoch, call by call");
    let mut steps: Vec<String> = Vec::new();
    for line in walk.lines() {
        let numbered = line
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        match steps.last_mut() {
            Some(step) if !numbered => {
                step.push(' ');
                step.push_str(line.trim());
            }
            _ if numbered => steps.push(line.to_string()),
            _ => {}
        }
    }
    assert!(steps.len() >= 10, "only {} steps found", steps.len());
    let mut failures = Vec::new();
    let checked: usize = steps
        .iter()
        .map(|step| check_locations(&root(), step, &mut failures))
        .sum();
    assert!(
        checked >= 30,
        "only {checked} names and statements checked: the walk's parser is broken"
    );
    assert!(
        failures.is_empty(),
        "One epoch, call by call:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines: Vec<&str> = readme.lines().collect();
    assert!(
        lines.len() <= README_MAX_LINES,
        "README.md has {} lines, at most {README_MAX_LINES}: depth goes to docs/",
        lines.len()
    );
    let first_screen = lines[..lines.len().min(FIRST_SCREEN_LINES)].join("\n");
    for needed in [
        "cargo install --locked --path native",
        "--device",
        "taks audit",
        "scripts/build-web.sh",
        "scripts/test.sh",
    ] {
        assert!(
            first_screen.contains(needed),
            "README's first {FIRST_SCREEN_LINES} lines do not show `{needed}`"
        );
    }
}

/// The page's network picker is written out by hand in `audit.html` (the wasm package
/// takes any `--model` name), so a network added to the code could be left off it.
#[test]
fn the_audit_page_offers_every_network() {
    let page = std::fs::read_to_string(root().join("audit.html")).expect("audit.html");
    let picker = page
        .split("<select id=\"audit-model\">")
        .nth(1)
        .and_then(|rest| rest.split("</select>").next())
        .expect("audit.html has the #audit-model picker");
    let offered: Vec<&str> = picker
        .split("<option value=\"")
        .skip(1)
        .filter_map(|option| option.split('"').next())
        .filter(|value| !value.is_empty())
        .collect();
    let networks: Vec<&str> = taks_core::nn::Architecture::ALL
        .iter()
        .map(|a| a.name())
        .collect();
    assert_eq!(offered, networks, "audit.html's #audit-model options");
}

#[test]
fn the_extractors_find_what_they_should() {
    // The helpers above decide what the other tests see; a broken one would make them
    // pass on nothing, so each is held to a known answer here.
    assert_eq!(
        shell_words("TAKS_GPU_CONV=im2col taks bench --x 'a b' > out.csv # note"),
        ["TAKS_GPU_CONV=im2col", "taks", "bench", "--x", "a b"]
    );
    assert_eq!(
        taks_command(&shell_words(
            "cargo run --release -p taks -- train --epochs 2"
        )),
        Some(vec![
            "taks".into(),
            "train".into(),
            "--epochs".into(),
            "2".into()
        ])
    );
    assert_eq!(taks_command(&shell_words("scripts/test.sh")), None);
    assert_eq!(
        code_spans("run `taks train` or ``taks `x` ``, then `b`"),
        ["taks train", "taks `x`", "b"]
    );
    assert_eq!(
        link_targets("[a](docs/gpu.md#x) and [b](../c.md)"),
        ["docs/gpu.md#x", "../c.md"]
    );
    assert_eq!(
        anchor("GPU: mixed precision (f16)"),
        "gpu-mixed-precision-f16"
    );
    assert_eq!(
        anchor("`taks audit`, step by step"),
        "taks-audit-step-by-step"
    );
    assert!(Cli::try_parse_from(["taks", "train", "--no-such-flag"]).is_err());
    let file = "struct T;\nimpl T {\n    pub(super) async fn update(&mut self)\n}\nenum O {\n    Greedy,\n}";
    assert_eq!(definition_line(file, "T"), Some(1));
    assert_eq!(definition_line(file, "T::update"), Some(3));
    assert_eq!(definition_line(file, "Greedy"), Some(6));
    for absent in ["updat", "self", "O::Naive"] {
        assert_eq!(definition_line(file, absent), None, "{absent}");
    }
    assert!(!defines("        k => Ok(k),", "k") && !defines("    while !done {", "while"));
    assert_eq!(
        without_line("core/src/train.rs:302"),
        ("core/src/train.rs", Some(302))
    );
    assert_eq!(
        without_line("core/src/train.rs"),
        ("core/src/train.rs", None)
    );
    assert_eq!(without_line("a:b"), ("a:b", None));
    assert!(is_name("Trainer::run_epoch") && is_name("TAKS"));
    assert!(!is_name("while !trainer.is_done()") && !is_name("*l += t") && !is_name("_x"));
}
