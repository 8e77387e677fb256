//! Whether this machine's Vulkan driver runs burn's SPIR-V kernels, asked of a child
//! process before a `native-shaders` build starts the GPU.
//!
//! Why: cubecl-spirv 0.11.3 writes invalid SPIR-V for shared memory on a Vulkan driver
//! without `VK_KHR_workgroup_memory_explicit_layout` (Mesa's lavapipe among them; the
//! docs/gpu.md, "Compilers", says where), and such a driver takes the process down in
//! `vkCreateComputePipelines` at burn's first matmul: a segfault, with no error to catch
//! and no line saying why. The extension cannot be read without unsafe code (wgpu-hal's
//! Vulkan adapter), which the crates forbid, and cubecl keeps what it read to itself. So
//! a short child process (`taks probe-spirv`, hidden) starts the GPU as a run would
//! and multiplies two matrices with burn; if it dies, is wrong or hangs, `--device gpu`
//! stops with one line saying so and `--device auto` takes the CPU. The verdict is kept
//! in taks's cache folder by the adapters' names and driver versions, so the child runs
//! once per machine and driver. The default (WGSL) build never asks: nothing it runs
//! goes through cubecl's SPIR-V.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::Result;
use burn::tensor::wgpu::wgpu;
use burn::tensor::{Tensor, TensorData};

/// The hidden subcommand the child runs (the name of `Command::ProbeSpirv`).
pub const PROBE_SPIRV: &str = "probe-spirv";

/// What the child prints last when the matmul came out right.
const PASSED: &str = "spirv-probe-passed";

/// How long the child may take: on a working driver it starts the device and compiles
/// one matmul (well under a second on a GPU, a few seconds on lavapipe).
const PATIENCE: Duration = Duration::from_secs(120);

/// The verdicts' file, in taks's cache folder.
const VERDICTS: &str = "taks-spirv.txt";

static FOLDER: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Keep verdicts in `folder` (the autotune cache's; `None`: ask every time).
pub fn keep_in(folder: Option<PathBuf>) {
    let _ = FOLDER.set(folder);
}

/// `Ok` where the GPU may be started: a build without SPIR-V, no Vulkan adapter, or a
/// driver that ran the child's matmul (now or in an earlier run). `Err` is one line
/// saying what the driver did.
pub fn check() -> std::result::Result<(), String> {
    if !cfg!(feature = "native-shaders") {
        return Ok(());
    }
    let Some(key) = drivers() else {
        return Ok(());
    };
    let file = FOLDER.get().cloned().flatten().map(|f| f.join(VERDICTS));
    if let Some(f) = file.as_deref()
        && let Some(verdict) = recorded(f, &key)
    {
        return verdict.map_err(|why| {
            let f = f.display();
            format!("{why}; kept from an earlier run in {f}, delete it to ask the driver again")
        });
    }
    let (verdict, keep) = match ask_a_child() {
        Child::Passed => (Ok(()), true),
        Child::Failed(why) => (Err(why), true),
        // Not the driver's doing: asked again next time.
        Child::NotRun(why) => (Err(why), false),
    };
    if let Some(file) = file.filter(|_| keep) {
        // A verdict that cannot be kept is asked again next time.
        let _ = record(&file, &key, &verdict);
    }
    verdict
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

/// The Vulkan adapters and their drivers, one string (`None` without any): the key of a
/// verdict, so that a new driver or card is asked again.
fn drivers() -> Option<String> {
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
fn recorded(file: &Path, key: &str) -> Option<std::result::Result<(), String>> {
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
fn record(
    file: &Path,
    key: &str,
    verdict: &std::result::Result<(), String>,
) -> std::io::Result<()> {
    let line = match verdict {
        Ok(()) => format!("ok\t{key}"),
        Err(why) => format!("failed\t{key}\t{}", why.replace(['\t', '\n'], " ")),
    };
    taks_core::gpu::tuning_cache::append_line(file, &line)
}

/// Why burn's SPIR-V kernels may fail on a driver, said with every failed verdict.
const WHY: &str = "cubecl-spirv 0.11.3 needs VK_KHR_workgroup_memory_explicit_layout for \
    shared memory, which this driver may lack; the default build of taks (WGSL) runs on it";

/// Run `taks probe-spirv` and read what became of it.
fn ask_a_child() -> Child {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return Child::NotRun(format!("cannot find taks itself: {e}")),
    };
    let mut command = Command::new(exe);
    command.arg(PROBE_SPIRV);
    ask(command, PATIENCE)
}

/// Run `command` (the probe, or a stand-in in the tests), waiting at most `patience`,
/// and judge it: passed only where it exited 0 having printed [`PASSED`] on a line.
fn ask(mut command: Command, patience: Duration) -> Child {
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
            Ok(None) if start.elapsed() < patience => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Child::Failed(format!(
                    "the GPU did not finish one matmul through burn's SPIR-V kernels in {} s ({WHY})",
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
        "the Vulkan driver failed burn's SPIR-V kernels: a test process multiplying two \
         matrices {} ({WHY})",
        how_it_ended(&status, &said)
    ))
}

/// How the child ended, from its exit status and its last line on stdout (where
/// [`probe`] writes what went wrong; its stderr is not read, for Vulkan's own lines).
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

/// `taks probe-spirv`: print [`PASSED`] where [`multiply`] passes, else why not
/// (on stdout, which the parent reads).
pub fn probe() -> Result<()> {
    let outcome = multiply();
    match &outcome {
        Ok(()) => println!("{PASSED}"),
        Err(e) => println!("{e:#}"),
    }
    outcome
}

/// Start the GPU and multiply two 64x64 matrices of small integers with burn, against
/// the product computed here (exact in f32). The entries differ along rows and columns,
/// so a transposed operand or a misplaced tile gives a wrong product, which a product of
/// matrices of ones would not show.
fn multiply() -> Result<()> {
    const N: usize = 64;
    let (device, _) = taks_core::gpu::direct::start().map_err(|e| anyhow::anyhow!("{e}"))?;
    let a: Vec<f32> = (0..N * N)
        .map(|i| ((i / N + 2 * (i % N)) % 7) as f32)
        .collect();
    let b: Vec<f32> = (0..N * N)
        .map(|i| ((3 * (i / N) + i % N) % 5) as f32)
        .collect();
    let expected: Vec<f32> = (0..N * N)
        .map(|i| (0..N).map(|k| a[i / N * N + k] * b[k * N + i % N]).sum())
        .collect();
    let tensor = |v: Vec<f32>| Tensor::<2>::from_data(TensorData::new(v, [N, N]), &device);
    let product = tensor(a).matmul(tensor(b));
    let values = product.into_data().convert::<f32>().try_to_vec::<f32>();
    let values = values.map_err(|e| anyhow::anyhow!("{e:?}"))?;
    anyhow::ensure!(values == expected, "a wrong product");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verdicts are read back by key: the last line for a key counts, other keys' lines
    /// and lines of another shape (cut, a stray field, an empty reason) are skipped.
    #[test]
    fn verdicts_are_kept_by_driver() {
        let folder = std::env::temp_dir().join(format!("taks-spirv-probe-{}", std::process::id()));
        let file = folder.join(VERDICTS);
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
            ask(command, Duration::from_secs(patience))
        };
        assert_eq!(shell(&format!("echo {PASSED}"), 60), Child::Passed);
        let failed = |child: Child| match child {
            Child::Failed(why) => why,
            other => panic!("{other:?} is not a failure"),
        };
        let died = failed(shell("kill -SEGV $$", 60));
        assert!(
            died.contains("died of signal 11") && died.contains(WHY),
            "{died}"
        );
        let silent = failed(shell("exit 0", 60));
        assert!(silent.contains("exited with 0"), "{silent}");
        let wrong = failed(shell("echo a wrong product; exit 1", 60));
        assert!(wrong.contains("exited with 1: a wrong product"), "{wrong}");
        let late = failed(shell(&format!("echo {PASSED}; exit 3"), 60));
        assert!(late.contains("exited with 3"), "{late}");
        let hung = failed(shell("sleep 30", 1));
        assert!(hung.contains("did not finish one matmul"), "{hung}");
    }
}
