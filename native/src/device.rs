//! Choosing the compute device: a hardware GPU through wgpu, or burn's flex CPU backend.
//!
//! `auto` takes a hardware adapter when wgpu finds one and otherwise flex. A software
//! adapter (Mesa's lavapipe, SwiftShader) is never chosen automatically: on a CPU it is
//! an order of magnitude slower than flex. `gpu` insists on wgpu, software or not, and
//! `cpu` insists on flex.

use anyhow::{Context, Result, bail};
use burn::tensor::Device;
use burn::tensor::wgpu::wgpu;

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    /// A hardware GPU if there is one, else the CPU.
    Auto,
    /// wgpu on the best adapter, even a software one; an error if there is none.
    Gpu,
    /// burn's flex CPU backend.
    Cpu,
}

/// The chosen device and a line saying what it is.
pub struct Chosen {
    pub device: Device,
    pub description: String,
}

/// Adapters wgpu can see, as (name, type, backend).
fn adapters() -> Vec<wgpu::AdapterInfo> {
    // The primary backends only (Vulkan, Metal, DX12): probing OpenGL through EGL gains
    // nothing burn would use and prints warnings of its own on headless machines.
    let instance = wgpu::Instance::default();
    pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY))
        .into_iter()
        .map(|a| a.get_info())
        .collect()
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
            match found.iter().find(|a| is_hardware(a)) {
                Some(_) => init_wgpu(),
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
            init_wgpu()
        }
    }
}

fn init_wgpu() -> Result<Chosen> {
    let (device, setup) = Device::wgpu_options()
        .init_with_setup()
        .map_err(|e| anyhow::anyhow!("{e:?}"))
        .context("starting the wgpu device")?;
    let info = setup.adapter.get_info();
    Ok(Chosen {
        device,
        description: format!(
            "GPU '{}' ({:?}, {:?}) through wgpu",
            info.name, info.device_type, info.backend
        ),
    })
}
