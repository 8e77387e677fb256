//! Bad input: every case of the corpus, files cut or corrupted in every reader, a write
//! that fails.

use super::*;

/// Every case of tests/corpus/cases.tsv: malformed files for every reader and bad
/// flags for every subcommand, each with the error it must give.
#[test]
fn bad_input_corpus() {
    let corpus = PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../tests/corpus");
    let files = scratch("corpus");
    copy_tree(&corpus.join("files"), &files);
    // The working folder of every case: a refused run must not leave a run folder.
    let cwd = scratch("corpus-cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let cases = std::fs::read_to_string(corpus.join("cases.tsv")).unwrap();
    let mut names = std::collections::BTreeSet::new();
    let mut all_args = Vec::new();
    for line in cases
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.split('\t').collect();
        let [name, args, expected] = fields[..] else {
            panic!("cases.tsv: not name<TAB>args<TAB>expected: {line}");
        };
        assert!(names.insert(name), "cases.tsv: two cases named {name}");
        all_args.push(args);
        let args = args.replace("{files}", files.to_str().unwrap());
        let mut args: Vec<&str> = args.split(' ').collect();
        // Leading NAME=value words set the environment, as in a shell.
        let mut command = Command::new(env!("CARGO_BIN_EXE_taks"));
        while let Some((var, value)) = args.first().and_then(|a| a.split_once('='))
            && !var.is_empty()
            && var.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        {
            command.env(var, value);
            args.remove(0);
        }
        let out = command.args(&args).current_dir(&cwd).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(expected),
            "case {name}: expected an error containing '{expected}', got exit {:?}: {stderr}",
            out.status.code()
        );
        assert_user_error(&out, expected);
    }
    // Every bad file or folder of the corpus is the input of some case: one added
    // without its case, or a case whose file was renamed, fails here.
    for entry in std::fs::read_dir(corpus.join("files")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let used = format!("{{files}}/{name}");
        let named = all_args.iter().any(|args| {
            args.match_indices(&used).any(|(at, _)| {
                matches!(
                    args[at + used.len()..].chars().next(),
                    None | Some('/' | ' ' | ',' | '=')
                )
            })
        });
        assert!(named, "tests/corpus/files/{name} is the input of no case");
    }
    let left: Vec<_> = std::fs::read_dir(&cwd)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "refused runs left {left:?}");
    std::fs::remove_dir_all(&cwd).unwrap();
    // No case may have written into a run folder it was refused.
    for entry in std::fs::read_dir(&files).unwrap() {
        let dir = entry.unwrap().path();
        if dir
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("resume-")
        {
            assert!(
                !dir.join("metrics.csv").exists(),
                "{} was written to",
                dir.display()
            );
        }
    }
    std::fs::remove_dir_all(&files).unwrap();
}

#[test]
fn corrupt_data_files_are_one_line_errors() {
    let labels: Vec<u8> = (0..20).map(|i| i % 10).collect();
    let cases = [
        (
            "magic",
            [vec![8u8, 8, 8, 1], vec![0; 20]].concat(),
            "bad magic",
        ),
        ("short", idx(&[20], &labels[..15]), "truncated"),
        (
            "count",
            idx(&[19], &labels[..19]),
            "19 labels for 20 images",
        ),
        (
            "range",
            idx(&[20], &[labels[..19].to_vec(), vec![11]].concat()),
            "label 11 at sample 19",
        ),
    ];
    for (name, train_labels, needle) in cases {
        let dir = mnist_folder(name, train_labels);
        let out = taks(&[
            "train",
            "--dataset",
            "mnist",
            "--data-dir",
            dir.to_str().unwrap(),
            "--device",
            "cpu",
        ]);
        assert_user_error(&out, needle);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // A file that is not gzip at all but claims to be.
    let dir = mnist_folder("gzip", idx(&[20], &labels));
    std::fs::write(
        dir.join("train-images-idx3-ubyte.gz"),
        [0x1f, 0x8b, 1, 2, 3],
    )
    .unwrap();
    let out = taks(&[
        "train",
        "--dataset",
        "mnist",
        "--data-dir",
        dir.to_str().unwrap(),
        "--device",
        "cpu",
    ]);
    assert_user_error(&out, "corrupt gzip");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A write that fails (here: files limited to `kib` KiB, the shell's `ulimit -f`, with
/// the signal that limit sends ignored, so the write returns "File too large" as a full
/// disk returns "No space left") ends the run with one error that says it was writing,
/// names the file, and gives the system's reason once (it once said "cannot read ...",
/// the reason twice).
#[test]
#[cfg(unix)]
fn a_failed_write_names_the_write_and_the_file_once() {
    let dir = scratch("failed-write");
    std::fs::create_dir_all(&dir).unwrap();
    let taks = env!("CARGO_BIN_EXE_taks");
    let cases: [(&str, u32, &str); 3] = [
        (
            "audit --dataset mnist-digits --train-limit 200 --epochs 1 --model mlp --device cpu -q --out",
            1,
            "suspects.csv",
        ),
        (
            "audit --dataset mnist-digits --train-limit 200 --epochs 1 --model mlp --device cpu -q --out",
            64,
            "model.safetensors",
        ),
        (
            "train --train-limit 200 --test-limit 50 --epochs 1 --device cpu --out",
            64,
            "checkpoint.safetensors",
        ),
    ];
    for (i, (args, kib, file)) in cases.into_iter().enumerate() {
        let out_dir = dir.join(format!("run{i}"));
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "trap '' XFSZ; ulimit -f {kib}; exec {taks} {args} {}",
                out_dir.display()
            ))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{args}: {stderr}");
        let written = out_dir.join(format!("{file}.tmp"));
        assert!(
            errors[0].starts_with(&format!("error: cannot write {}: ", written.display())),
            "{args}: {stderr}"
        );
        assert_eq!(errors[0].matches("File too large").count(), 1, "{stderr}");
        assert!(!written.exists(), "a half-written {file}.tmp was left");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
