//! Checks of the GPU driver that run in a short child process of taks itself (a hidden
//! subcommand), their verdicts kept in taks's cache folder per driver.
//!
//! Why a child: what these checks guard against takes the process down with it, with no
//! error to catch and no line saying why: a Vulkan driver that crashes compiling a kernel
//! (lavapipe on burn's SPIR-V: [`crate::device::spirv_probe`]), or one that hangs or crashes on a
//! kernel on cooperative matrices, which no adapter taks is tested on has in its 16 x 16
//! form ([`crate::device::coop_probe`]). The child does the work a run would do first; if it dies,
//! is wrong or hangs, the parent says so in one line and takes another way. Why kept: the
//! child costs a device start, so it runs once per machine, driver and check; a verdict
//! the child could not reach (it did not start) is asked again next time.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use burn::tensor::wgpu::wgpu;

/// What a child prints last when its check passed.
const PASSED: &str = "taks-probe-passed";

static FOLDER: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Keep verdicts in `folder` (the autotune cache's; `None`: ask every time).
pub fn keep_in(folder: Option<PathBuf>) {
    let _ = FOLDER.set(folder);
}

/// One check run in a child process.
pub struct Probe {
    /// The hidden subcommand the child runs.
    pub subcommand: &'static str,
    /// The verdicts' file, in taks's cache folder.
    pub verdicts: &'static str,
    /// What the child does, for a line saying it did not finish ("one matmul through
    /// burn's SPIR-V kernels").
    pub work: &'static str,
    /// Why the driver may fail it, said with every failed verdict.
    pub why: &'static str,
    /// How long the child may take.
    pub patience: Duration,
}

impl Probe {
    /// The verdict on this machine's driver for `key` (which names the driver and what
    /// is checked: [`drivers`] and more): the one kept from an earlier run, else the
    /// child's, then kept. `Err` is one line saying what the driver did.
    pub fn check(&self, key: &str) -> Result<(), String> {
        let file = FOLDER
            .get()
            .cloned()
            .flatten()
            .map(|f| f.join(self.verdicts));
        if let Some(f) = file.as_deref()
            && let Some(verdict) = recorded(f, key)
        {
            return verdict.map_err(|why| {
                let f = f.display();
                format!("{why}; kept from an earlier run in {f}, delete it to ask the driver again")
            });
        }
        let (verdict, keep) = match self.ask_a_child() {
            Child::Passed => (Ok(()), true),
            Child::Failed(why) => (Err(why), true),
            // Not the driver's doing: asked again next time.
            Child::NotRun(why) => (Err(why), false),
        };
        if let Some(file) = file.filter(|_| keep) {
            // A verdict that cannot be kept is asked again next time.
            let _ = record(&file, key, &verdict);
        }
        verdict
    }

    /// Run taks's own subcommand and read what became of it.
    fn ask_a_child(&self) -> Child {
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(e) => return Child::NotRun(format!("cannot find taks itself: {e}")),
        };
        let mut command = Command::new(exe);
        command.arg(self.subcommand);
        self.ask(command)
    }

    /// Run `command` (the probe, or a stand-in in the tests), waiting at most the patience,
    /// and judge it: passed only where it exited 0 having printed [`PASSED`] on a line.
    fn ask(&self, mut command: Command) -> Child {
        let (patience, work, why) = (self.patience, self.work, self.why);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => return Child::NotRun(format!("cannot start a test process: {e}")),
        };
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() < patience => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Child::Failed(format!(
                        "the GPU did not finish {work} in {} s ({why})",
                        patience.as_secs()
                    ));
                }
                Err(e) => return Child::NotRun(format!("cannot wait for a test process: {e}")),
            }
        };
        let mut said = String::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_string(&mut said);
        }
        if status.success() && said.lines().any(|l| l == PASSED) {
            return Child::Passed;
        }
        Child::Failed(format!(
            "the Vulkan driver failed a test process doing {work}: it {} ({why})",
            how_it_ended(&status, &said)
        ))
    }
}

/// The child's side: print the pass line where `outcome` passed, else why not (on
/// stdout, which the parent reads), and return it.
pub fn report(outcome: anyhow::Result<()>) -> anyhow::Result<()> {
    match &outcome {
        Ok(()) => println!("{PASSED}"),
        Err(e) => println!("{e:#}"),
    }
    outcome
}

/// What became of the child.
#[derive(Debug, PartialEq)]
enum Child {
    Passed,
    /// The driver's doing: the child died, got a wrong product or hung.
    Failed(String),
    /// The child could not be started or waited for.
    NotRun(String),
}

/// How the child ended, from its exit status and its last line on stdout (where
/// [`report`] writes what went wrong; its stderr is not read, for Vulkan's own lines).
fn how_it_ended(status: &std::process::ExitStatus, said: &str) -> String {
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(status) {
        return format!("died of signal {signal}");
    }
    match (status.code(), said.lines().last()) {
        (Some(code), Some(line)) if !line.is_empty() => format!("exited with {code}: {line}"),
        (Some(code), _) => format!("exited with {code}"),
        (None, _) => "ended without an exit code".into(),
    }
}

/// The Vulkan adapters and their drivers, one string (`None` without any): the key of a
/// verdict, so that a new driver or card is asked again.
pub fn drivers() -> Option<String> {
    let instance = wgpu::Instance::default();
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    let mut found: Vec<String> = adapters
        .iter()
        .map(|a| {
            let i = a.get_info();
            format!(
                "{:04x}:{:04x} {} / {} {}",
                i.vendor, i.device, i.name, i.driver, i.driver_info
            )
        })
        .collect();
    found.sort();
    let key = format!("taks {} | {}", env!("CARGO_PKG_VERSION"), found.join(" | "));
    (!found.is_empty()).then(|| key.replace(['\t', '\n'], " "))
}

/// The verdict kept for `key` in `file`: lines `ok<TAB>key` or `failed<TAB>key<TAB>why`;
/// the last line for the key counts, and a line of any other shape is skipped.
fn recorded(file: &Path, key: &str) -> Option<Result<(), String>> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let verdict = match (fields.next()?, fields.next()?, fields.next()) {
                ("ok", k, None) if k == key => Ok(()),
                ("failed", k, Some(why)) if k == key && !why.is_empty() => Err(why.to_string()),
                _ => return None,
            };
            fields.next().is_none().then_some(verdict)
        })
        .next_back()
}

/// Append `verdict` for `key` to `file`.
pub(crate) fn record(file: &Path, key: &str, verdict: &Result<(), String>) -> std::io::Result<()> {
    let line = match verdict {
        Ok(()) => format!("ok\t{key}"),
        Err(why) => format!("failed\t{key}\t{}", why.replace(['\t', '\n'], " ")),
    };
    taks_core::gpu::tuning_cache::append_line(file, &line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verdicts are read back by key: the last line for a key counts, other keys' lines
    /// and lines of another shape (cut, a stray field, an empty reason) are skipped.
    #[test]
    fn verdicts_are_kept_by_driver() {
        let folder = std::env::temp_dir().join(format!("taks-probe-{}", std::process::id()));
        let file = folder.join("verdicts.txt");
        let _ = std::fs::remove_dir_all(&folder);
        let (a, b) = (
            "taks 1 | 10de:2330 H100 / NVIDIA 550",
            "taks 1 | 10005:0000 llvmpipe / Mesa 22.3.6",
        );
        assert_eq!(recorded(&file, a), None, "no file yet");
        record(&file, a, &Ok(())).unwrap();
        record(&file, b, &Err("died of signal 11".into())).unwrap();
        assert_eq!(recorded(&file, a), Some(Ok(())));
        assert_eq!(recorded(&file, b), Some(Err("died of signal 11".into())));
        assert_eq!(recorded(&file, "taks 2 | other"), None);

        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str(&format!("failed\t{a}\t\nok\t{a}\textra\nfailed\t{a}"));
        std::fs::write(&file, &text).unwrap();
        assert_eq!(recorded(&file, a), Some(Ok(())), "malformed lines skipped");
        record(&file, a, &Err("exited with 1: wrong\tcolumns".into())).unwrap();
        assert_eq!(
            recorded(&file, a),
            Some(Err("exited with 1: wrong columns".into())),
            "the last verdict counts, its tab made a space"
        );
        let _ = std::fs::remove_dir_all(&folder);
    }

    /// The parent's verdict on the child, with shell stand-ins for it: only an exit of 0
    /// after the pass line passes; a death by signal (what lavapipe's crash in
    /// `vkCreateComputePipelines` looks like), a clean exit without the line, a failure
    /// with its reason and a hang each fail, saying how.
    #[cfg(unix)]
    #[test]
    fn only_a_child_that_says_it_passed_passes() {
        let shell = |script: &str, patience: u64| {
            let mut command = Command::new("sh");
            command.args(["-c", script]);
            let probe = Probe {
                subcommand: "probe-test",
                verdicts: "taks-probe-test.txt",
                work: "the test's work",
                why: "the test's reason",
                patience: Duration::from_secs(patience),
            };
            probe.ask(command)
        };
        assert_eq!(shell(&format!("echo {PASSED}"), 60), Child::Passed);
        let failed = |child: Child| match child {
            Child::Failed(why) => why,
            other => panic!("{other:?} is not a failure"),
        };
        let died = failed(shell("kill -SEGV $$", 60));
        assert!(
            died.contains("doing the test's work: it died of signal 11 (the test's reason)"),
            "{died}"
        );
        let silent = failed(shell("exit 0", 60));
        assert!(silent.contains("exited with 0"), "{silent}");
        let wrong = failed(shell("echo a wrong product; exit 1", 60));
        assert!(wrong.contains("exited with 1: a wrong product"), "{wrong}");
        let late = failed(shell(&format!("echo {PASSED}; exit 3"), 60));
        assert!(late.contains("exited with 3"), "{late}");
        let hung = failed(shell("sleep 30", 1));
        assert!(
            hung.contains("did not finish the test's work in 1 s"),
            "{hung}"
        );
    }
}
