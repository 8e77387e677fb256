//! The device: the driver checks in child processes, the autotune cache, mixed precision
//! on the GPU, `auto` with no GPU.

use super::*;

/// The child a `native-shaders` build asks before it trusts the Vulkan driver
/// (`native/src/device/spirv_probe.rs`): on lavapipe through this build's WGSL it starts the
/// GPU, gets the matmul right and says so as its last line on stdout, which is all the
/// parent reads (a driver that crashes it, lavapipe under SPIR-V, is checked by hand:
/// see docs/gpu.md, "Compilers"). The command is hidden from the help.
#[test]
fn the_spirv_driver_check_passes_where_the_gpu_runs() {
    let cache = scratch("probe-cache");
    let out = Command::new(env!("CARGO_BIN_EXE_taks"))
        .arg("probe-spirv")
        .env("NODEVICE_SELECT", "1")
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .expect("the taks binary runs");
    assert_succeeded(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().last(), Some("taks-probe-passed"), "{stdout}");
    let help = taks(&["--help"]);
    assert!(!String::from_utf8_lossy(&help.stdout).contains("probe-spirv"));
    let _ = std::fs::remove_dir_all(&cache);
}

/// The child `TAKS_GPU_COOP=1` asks before it trusts the driver with the f16 product on
/// cooperative matrices (`native/src/device/coop_probe.rs`): on Debian 12's lavapipe, which has
/// none, it fails and says why as its last line on stdout, which is what the parent
/// shows (where they run, on Mesa 26's lavapipe, scripts/test.sh holds it to its pass
/// line). The command is hidden from the help.
#[test]
fn the_cooperative_matrix_check_fails_where_there_are_none() {
    let cache = scratch("coop-probe-cache");
    let out = Command::new(env!("CARGO_BIN_EXE_taks"))
        .arg("probe-coop")
        .env("TAKS_GPU_COOP", "1")
        .env("NODEVICE_SELECT", "1")
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .expect("the taks binary runs");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some("cooperative matrices are not offered here"),
        "{stdout}"
    );
    let help = taks(&["--help"]);
    assert!(!String::from_utf8_lossy(&help.stdout).contains("probe-coop"));
    let _ = std::fs::remove_dir_all(&cache);
}

/// A GPU run (lavapipe here) keeps cubecl's autotune results in the user's cache folder
/// (`$XDG_CACHE_HOME/cubecl`), and never in a `target/` folder beside the `Cargo.toml` it
/// runs under (cubecl's own default); the next process reuses them: the same run again
/// tunes nothing, so it leaves the folder as it found it.
#[test]
fn autotune_results_are_kept_in_the_user_cache() {
    let cache = scratch("user-cache");
    let checkout = scratch("checkout");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::create_dir_all(&checkout).unwrap();
    std::fs::write(checkout.join("Cargo.toml"), "[workspace]\n").unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_taks"));
    // Mesa's compiled shaders stay where they were (a cold cache costs a minute).
    if let Some(home) = std::env::var_os("HOME") {
        let mesa = Path::new(&home).join(".cache/mesa_shader_cache");
        command.env("MESA_SHADER_CACHE_DIR", mesa);
    }
    command
        .args([
            "train",
            "--device",
            "gpu",
            "--epochs",
            "1",
            "--train-limit",
            "300",
            "--test-limit",
            "100",
            "--quiet",
            "--out",
            checkout.join("run").to_str().unwrap(),
        ])
        .env("XDG_CACHE_HOME", &cache)
        .current_dir(&checkout);
    // Each file under the folder with its contents, in order.
    let kept = || {
        let mut files: Vec<(PathBuf, Vec<u8>)> = walk(&cache.join("cubecl"))
            .into_iter()
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        files.sort();
        files
    };
    assert_succeeded(&command.output().unwrap());
    let first = kept();
    assert!(
        first.iter().any(|(_, bytes)| !bytes.is_empty()),
        "nothing kept under {}",
        cache.join("cubecl").display()
    );
    std::fs::remove_dir_all(checkout.join("run")).unwrap();
    assert_succeeded(&command.output().unwrap());
    let names =
        |files: &[(PathBuf, Vec<u8>)]| files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&kept()),
        names(&first),
        "the second run kept other files"
    );
    assert!(
        kept() == first,
        "the second run tuned again: the kept results changed"
    );
    assert!(
        !checkout.join("target").exists(),
        "cubecl wrote into the checkout's target/"
    );
    std::fs::remove_dir_all(&cache).unwrap();
    std::fs::remove_dir_all(&checkout).unwrap();
}

/// `taks train --precision f16` on the GPU: the run is mixed precision throughout
/// (config.json), and learns as an f32 one does. Where the adapter has no shader-f16
/// the refusal is one line naming it. Under `TAKS_GPU_COOP=1` the device line says
/// what became of the products on cooperative matrices, on an adapter without them
/// (Debian 12's lavapipe) as on one with them.
#[test]
fn train_runs_in_mixed_precision_on_the_gpu() {
    let dir = scratch("train-f16");
    let run = |precision: &str| {
        let out = dir.join(precision);
        let result = taks_with(
            &[("TAKS_GPU_COOP", "1")],
            &[
                "train",
                "--device",
                "gpu",
                "--precision",
                precision,
                "--epochs",
                "2",
                "--train-limit",
                "1000",
                "--test-limit",
                "300",
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        (out, result)
    };
    let (f16, result) = run("f16");
    if String::from_utf8_lossy(&result.stderr).contains("shader-f16") {
        assert_user_error(&result, "shader-f16");
        skip(
            "train_runs_in_mixed_precision_on_the_gpu",
            "the adapter has no shader-f16: only its refusal is checked",
        );
        return;
    }
    assert_succeeded(&result);
    let config = read_json(&f16.join("config.json"));
    assert_eq!(config["config"]["precision"], "f16", "{config}");
    // Which line the device gives depends on the adapter: told TAKS_EXPECT_COOP=1 (an
    // adapter with cooperative matrices) or 0 (one without, as Debian 12's lavapipe), the
    // test demands that line; untold, one of the two, each whole.
    let device = config["device"].as_str().unwrap_or_default();
    let used = device.contains(", f16 products on cooperative matrices (");
    let declined = device.contains(
        "TAKS_GPU_COOP=1, but this adapter has no cooperative matrices the kernel can use",
    );
    match std::env::var("TAKS_EXPECT_COOP").as_deref() {
        Ok("1") => assert!(used, "{config}"),
        Ok("0") => assert!(declined, "{config}"),
        _ => assert!(used != declined, "{config}"),
    }
    let (f32_run, result) = run("f32");
    assert_succeeded(&result);
    let (a, b) = (
        metrics_column(&f16, "test_accuracy")[1],
        metrics_column(&f32_run, "test_accuracy")[1],
    );
    // The same seeded start and batches: f16 steps move the weights as f32 ones do, to
    // their rounding (measured on lavapipe: 0.330 both, the training losses 2.12442 and
    // 2.12448). Chance is 0.10, with a spread of 0.017 on 300 digits.
    assert!((a - b).abs() < 0.03, "f16 {a} against f32 {b}");
    // Three spreads (0.027 each on 300 digits) under what f32 measured (0.330), where
    // chance is 0.10.
    assert!(b > 0.25, "f32 {b}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--device auto --precision f16` (the README's GPU line) on a machine without a GPU
/// (here: the Vulkan loader pointed at no driver) trains in f32 on the CPU and says so
/// in one line, where it stopped with an error; config.json records the f32 it ran. The
/// audit does the same.
/// `--device cpu` with f16 is still refused (the corpus's `precision-on-cpu`).
#[test]
fn auto_without_a_gpu_trains_mixed_precision_runs_in_f32_and_says_so() {
    let dir = scratch("auto-f16");
    let no_driver = [
        ("VK_ICD_FILENAMES", "/nonexistent.json"),
        ("VK_DRIVER_FILES", "/nonexistent.json"),
    ];
    let out = taks_with(
        &no_driver,
        &[
            "train",
            "--device",
            "auto",
            "--precision",
            "f16",
            "--train-limit",
            "200",
            "--test-limit",
            "50",
            "--epochs",
            "1",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ],
    );
    assert_succeeded(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--precision f16: --device auto found no GPU, so the CPU trains in f32"),
        "{stderr}"
    );
    let config = read_json(&dir.join("config.json"));
    // f32, the default, is the one precision config.json leaves out.
    assert!(
        matches!(config["config"]["precision"].as_str(), None | Some("f32")),
        "{config}"
    );
    // The audit likewise.
    let audit = dir.join("audit");
    let out = taks_with(
        &no_driver,
        &[
            "audit",
            "--dataset",
            "mnist-digits",
            "--train-limit",
            "200",
            "--epochs",
            "1",
            "--model",
            "mlp",
            "--device",
            "auto",
            "--precision",
            "f16",
            "-q",
            "--out",
            audit.to_str().unwrap(),
        ],
    );
    assert_succeeded(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--precision f16: --device auto found no GPU, so the CPU trains in f32"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
