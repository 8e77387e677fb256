//! Whether this machine's driver runs taks's f16 product on cooperative matrices, asked
//! of a child process before `TAKS_GPU_COOP=1` lets a run use it.
//!
//! Why a child: the kernel's 16 x 16 variant (`shaders/matmul_coop_f16.wgsl`, what
//! NVIDIA's cards run) meets no adapter the tests run on, and a driver that crashes or
//! hangs compiling or running it would take the run down with no line saying why. So a
//! short child process (`taks probe-coop`, hidden: [`crate::device::probe`]) starts the GPU and
//! runs the kernel's self-check (`taks_core::ops::matmul::coop`: products whose answer is
//! known to the bit); if it dies, is wrong or hangs, the run's products take burn's
//! matmul and the device line says why. The verdict is kept per driver and per kernel
//! (its name and its text's hash: a changed kernel is asked again), so the child runs once per
//! machine, driver and kernel. The parent then runs the self-check itself too, before its
//! own first product: cheap, and what it trusts.

use std::time::Duration;

use anyhow::Result;
use taks_core::gpu::Shader;
use taks_core::ops::matmul::coop;

use crate::device::probe::Probe;

/// The hidden subcommand the child runs (the name of `Command::ProbeCoop`).
pub const PROBE_COOP: &str = "probe-coop";

/// The check: the child starts the device, compiles the kernel and runs two small
/// products (a second or two on a GPU).
const PROBE: Probe = Probe {
    subcommand: PROBE_COOP,
    verdicts: "taks-coop.txt",
    work: "the self-check of the f16 product on cooperative matrices",
    why: "the kernel's cooperative matrices may be wrong on this driver",
    patience: Duration::from_secs(120),
};

/// `Ok` where `kernel` may run on this machine's driver (now or in an earlier run).
/// `Err` is one line saying what the driver did.
pub fn check(kernel: &Shader) -> std::result::Result<(), String> {
    let drivers = crate::device::probe::drivers().unwrap_or_else(|| "no Vulkan adapter".into());
    // FNV-1a of the text (`for_stream`'s salt, with seed 0): a hash that is the same in
    // every build, where std's `DefaultHasher` may change between Rust releases.
    let text = taks_core::rng::SplitMix64::for_stream(0, &kernel.text()).state();
    PROBE.check(&format!("{drivers} | {} {text:016x}", kernel.name))
}

/// `taks probe-coop`: start the GPU and run the self-check (the environment's
/// `TAKS_GPU_COOP=1`, which the child inherits, offers the kernel), reported to the
/// parent.
pub fn probe() -> Result<()> {
    crate::device::probe::report((|| {
        let (device, _) = taks_core::gpu::direct::start().map_err(|e| anyhow::anyhow!("{e}"))?;
        match coop::verdict(&device) {
            Some(Ok(_)) => Ok(()),
            Some(Err(why)) => anyhow::bail!("{why}"),
            None => anyhow::bail!("cooperative matrices are not offered here"),
        }
    })())
}
