//! Choosing the compute device: a hardware GPU through wgpu, or burn's flex CPU backend.
//!
//! `auto` takes a hardware adapter when wgpu finds one and otherwise flex. A software
//! adapter (Mesa's lavapipe, SwiftShader) is never chosen automatically: on a CPU it is
//! an order of magnitude slower than flex. `gpu` insists on wgpu, software or not, and
//! `cpu` insists on flex. A `native-shaders` build first asks a child process whether
//! the Vulkan driver runs burn's SPIR-V ([`crate::device::spirv_probe`]): where it does not,
//! `gpu` is an error and `auto` takes flex, each saying why; the kernel on cooperative
//! matrices is checked the same way ([`coop_probe`]). The children are `taks`'s hidden
//! subcommands `probe-spirv` and `probe-coop`, which live here with the checks that run
//! them ([`probe`]: a child process's verdict, kept per driver).

pub mod coop_probe;
pub mod probe;
pub mod spirv_probe;

use anyhow::{Context, Result, bail};
use burn::tensor::Device;
use burn::tensor::wgpu::wgpu;
use taks_core::settings::flags::DeviceChoice;

/// The chosen device and a line saying what it is.
pub struct Chosen {
    pub device: Device,
    pub description: String,
}

/// An adapter wgpu can see: its name and whether it is real hardware.
struct Adapter {
    name: String,
    hardware: bool,
}

/// The adapters wgpu can see. On a machine without `XDG_RUNTIME_DIR` (ssh, containers,
/// CI) they are listed by a short child process (`taks list-adapters`) with
/// `NODEVICE_SELECT=1`: Mesa's Vulkan device-selection layer, which every Mesa install
/// loads into any Vulkan program, otherwise asks the Wayland library for a display, and
/// that library prints `error: XDG_RUNTIME_DIR is invalid or not set in the
/// environment.` twice, which reads as a failure of taks. Without a runtime folder no
/// Wayland display can be reached, so the layer learns nothing there, and taks picks its
/// adapter itself. The switch cannot be set in this process (changing its own
/// environment takes unsafe code, which the crates deny), so a run that then starts a
/// GPU in this process still gets the lines; a CPU run never loads Vulkan at all. If the
/// child cannot run, the adapters are listed here, lines and all.
fn adapters() -> Vec<Adapter> {
    let headless = std::env::var_os("XDG_RUNTIME_DIR").is_none_or(|v| v.is_empty());
    if headless
        && std::env::var_os("NODEVICE_SELECT").is_none()
        && let Some(listed) = adapters_in_a_child()
    {
        return listed;
    }
    adapters_here()
}

fn adapters_here() -> Vec<Adapter> {
    // The primary backends only (Vulkan, Metal, DX12): probing OpenGL through EGL gains
    // nothing burn would use and prints warnings of its own on headless machines.
    let instance = wgpu::Instance::default();
    pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY))
        .into_iter()
        .map(|a| {
            let info = a.get_info();
            Adapter {
                hardware: is_hardware(&info),
                name: info.name,
            }
        })
        .collect()
}

fn adapters_in_a_child() -> Option<Vec<Adapter>> {
    let out = std::process::Command::new(std::env::current_exe().ok()?)
        .arg(LIST_ADAPTERS)
        .env("NODEVICE_SELECT", "1")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout)
        .ok()?
        .lines()
        .map(|line| {
            let (kind, name) = line.split_once('\t')?;
            Some(Adapter {
                name: name.to_string(),
                hardware: match kind {
                    "hardware" => true,
                    "software" => false,
                    _ => return None,
                },
            })
        })
        .collect()
}

/// `auto` asked for mixed precision and found no GPU: the run trains in f32 on the CPU
/// rather than stopping (`auto` means the best this machine has, and the CPU's best is
/// f32); `precision` becomes f32 and the line returned says so. A GPU named (`gpu`)
/// that cannot run the type is still refused, and so is a resumed run or a grid
/// (`experiment`, `tune`), whose arithmetic must stay what it was.
pub fn fall_back_to_f32(
    choice: DeviceChoice,
    chosen: &Chosen,
    precision: &mut taks_core::precision::Precision,
) -> Option<String> {
    let cpu = taks_core::gpu::compiler(&chosen.device).is_none();
    if choice != DeviceChoice::Auto || !cpu || precision.is_f32() {
        return None;
    }
    let asked = precision.name();
    *precision = taks_core::precision::Precision::F32;
    Some(format!(
        "--precision {asked}: --device auto found no GPU, so the CPU trains in f32"
    ))
}

/// The device for a new run in `precision`: `choice` made ([`choose`]), `auto`'s fall
/// back to f32 without a GPU taken ([`fall_back_to_f32`], its line returned), and a
/// precision the device cannot run refused, before the run makes anything.
pub fn for_precision(
    choice: DeviceChoice,
    precision: &mut taks_core::precision::Precision,
) -> Result<(Chosen, Option<String>)> {
    let chosen = choose(choice)?;
    let fell_back = fall_back_to_f32(choice, &chosen, precision);
    precision.check(&chosen.device)?;
    Ok((chosen, fell_back))
}

/// The subcommand that lists the adapters, which taks also runs as a child on headless
/// machines (the name of `Command::ListAdapters`).
pub const LIST_ADAPTERS: &str = "list-adapters";

/// `taks list-adapters`: one line per adapter, `hardware` or `software`, a tab, the name.
pub fn list_adapters() -> Result<()> {
    for a in adapters_here() {
        let kind = if a.hardware { "hardware" } else { "software" };
        println!("{kind}\t{}", a.name.replace(['\t', '\n'], " "));
    }
    Ok(())
}

fn is_hardware(info: &wgpu::AdapterInfo) -> bool {
    matches!(
        info.device_type,
        wgpu::DeviceType::DiscreteGpu
            | wgpu::DeviceType::IntegratedGpu
            | wgpu::DeviceType::VirtualGpu
    )
}

pub fn choose(choice: DeviceChoice) -> Result<Chosen> {
    let flex = || Chosen {
        device: Device::flex(),
        description: "CPU (burn flex backend)".into(),
    };
    match choice {
        DeviceChoice::Cpu => Ok(flex()),
        DeviceChoice::Auto => {
            let found = adapters();
            match found.iter().find(|a| a.hardware) {
                Some(gpu) => match spirv_probe::check() {
                    Ok(()) => init_wgpu(),
                    Err(why) => {
                        let mut chosen = flex();
                        chosen.description =
                            format!("CPU (burn flex backend; the GPU '{}': {why})", gpu.name);
                        Ok(chosen)
                    }
                },
                None => {
                    let mut chosen = flex();
                    chosen.description = match found.first() {
                        Some(soft) => format!(
                            "CPU (burn flex backend; only the software adapter '{}' was found, use --device gpu to force it)",
                            soft.name
                        ),
                        None => "CPU (burn flex backend; no GPU adapter found)".into(),
                    };
                    Ok(chosen)
                }
            }
        }
        DeviceChoice::Gpu => {
            if adapters().is_empty() {
                bail!(
                    "--device gpu: wgpu found no GPU adapter (install a Vulkan/Metal/DX12 driver, or Mesa lavapipe for a software one)"
                );
            }
            if let Err(why) = spirv_probe::check() {
                bail!("--device gpu: {why}");
            }
            init_wgpu()
        }
    }
}

fn init_wgpu() -> Result<Chosen> {
    let (device, info) = taks_core::gpu::direct::start()
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("starting the wgpu device")?;
    let compiler = taks_core::gpu::compiler(&device).unwrap_or("wgpu");
    // Under TAKS_GPU_COOP=1 on a device with cooperative matrices: the kernel's check by
    // a child process (a driver that crashes on it takes only the child down), then its
    // self-check here, before anything trusts it.
    let coop =
        taks_core::ops::matmul::coop::offered().map(|kernel| match coop_probe::check(&kernel) {
            Ok(()) => taks_core::ops::matmul::coop::verdict(&device),
            Err(why) => Some(taks_core::ops::matmul::coop::refuse(why)),
        });
    let coop = match coop.flatten() {
        None if taks_core::plan::Switches::current().coop => {
            "; TAKS_GPU_COOP=1, but this adapter has no cooperative matrices the kernel can use, \
             so f16 products take burn's matmul"
                .to_string()
        }
        None => String::new(),
        Some(Ok(kernel)) => format!(", f16 products on cooperative matrices ({})", kernel.name),
        Some(Err(why)) => format!("; {why}, so f16 products take burn's matmul"),
    };
    Ok(Chosen {
        device,
        description: format!(
            "GPU '{}' ({:?}, {:?}) through {compiler}{coop}",
            info.name, info.device_type, info.backend
        ),
    })
}
