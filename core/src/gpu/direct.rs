//! taks's WGSL kernels dispatched through wgpu itself, on burn's own device, queue and
//! buffers: the route when burn compiles its kernels to SPIR-V (Vulkan) or MSL (Metal),
//! and, on Vulkan, of the kernels on cooperative matrices, whose SPIR-V taks writes itself
//! ([`super::spirv_module`]: burn's WGSL compiler takes WGSL only).
//!
//! burn's WGSL compiler takes a hand-written WGSL kernel as it is; its SPIR-V and MSL
//! compilers refuse one ("carries wgsl source, but this compiler expects spirv"). wgpu
//! itself compiles WGSL for every backend, and cubecl hands out the `wgpu::Buffer` (and
//! offset) behind any tensor, so on those compilers each launch here:
//! 1. asks cubecl for the buffers' resources: that keeps them from being freed or reused
//!    until the dispatch is recorded, and submits cubecl's stream (its scheduler flushes
//!    a stream it hands a resource from), so everything burn enqueued before, the writes
//!    of these buffers included, is on the queue ahead of this dispatch;
//! 2. records the dispatch in a command buffer of its own and submits it on burn's
//!    queue, so that everything burn enqueues after runs after it.
//!
//! wgpu's queue runs submissions in order, so the results are the same as through
//! cubecl's own launch; the price is a round trip to cubecl's server thread per buffer
//! and a submission per kernel (a test in `bridge.rs` checks the order both ways). The device and
//! queue are the ones [`start`] registered: wgpu has no way back from a buffer to its
//! device, so a process that makes its wgpu device some other way cannot run taks's
//! kernels on a native compiler (the launch says so).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use burn::backend::wgpu::wgpu;
#[cfg(not(target_arch = "wasm32"))]
use burn::tensor::Device;
use cubecl::CubeCount;
use cubecl::client::Client;
use cubecl::server::Handle;
use cubecl::wgpu::{AutoCompiler, WgpuServer};

use super::kernels::Shader;
use super::launches;

/// burn's wgpu device and queue, once [`start`] made them.
struct Registered {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// One compiled pipeline per shader, by name.
    pipelines: Mutex<HashMap<&'static str, wgpu::ComputePipeline>>,
    /// The sides of the square cooperative matrices of f16 into f32 the adapter
    /// multiplies (16 on NVIDIA's cards, 8 on lavapipe), the shapes
    /// `shaders/matmul_coop_f16.wgsl`'s variants use.
    cooperative_f16: Vec<u32>,
    /// The adapter's subgroup size where it has only one, which those variants are
    /// written for.
    subgroup: Option<u32>,
    /// Whether the device is Vulkan's and takes a SPIR-V module as it is (wgpu's
    /// `PASSTHROUGH_SHADERS`): there taks compiles its kernels on cooperative matrices
    /// itself ([`super::spirv_module`]).
    takes_spirv: bool,
}

static REGISTERED: OnceLock<Registered> = OnceLock::new();

/// Start burn's wgpu runtime on the default adapter and keep its device and queue for
/// taks's kernels. Every wgpu device taks uses is made here (the CLI's and the tests').
/// The second and later calls return the same device.
#[cfg(not(target_arch = "wasm32"))]
pub fn start() -> Result<(Device, wgpu::AdapterInfo), String> {
    static STARTED: Mutex<Option<(Device, wgpu::AdapterInfo)>> = Mutex::new(None);
    let mut started = STARTED.lock().map_err(|e| e.to_string())?;
    if let Some(done) = started.as_ref() {
        return Ok(done.clone());
    }
    let (device, setup) = Device::wgpu_options()
        .init_with_setup()
        .map_err(|e| format!("{e:?}"))?;
    let info = setup.adapter.get_info();
    let cooperative_f16 = setup
        .adapter
        .cooperative_matrix_properties()
        .iter()
        .filter(|p| {
            use wgpu::CooperativeScalarType::{F16, F32};
            p.m_size == p.k_size && p.n_size == p.k_size && p.ab_type == F16 && p.cr_type == F32
        })
        .map(|p| p.k_size)
        .collect();
    let subgroup =
        (info.subgroup_min_size == info.subgroup_max_size).then_some(info.subgroup_min_size);
    let takes_spirv = info.backend == wgpu::Backend::Vulkan
        && (setup.device.features()).contains(wgpu::Features::PASSTHROUGH_SHADERS);
    // Set once: `STARTED` makes the device only once per process.
    let _ = REGISTERED.set(Registered {
        device: setup.device,
        queue: setup.queue,
        pipelines: Mutex::new(HashMap::new()),
        cooperative_f16,
        subgroup,
        takes_spirv,
    });
    *started = Some((device.clone(), info.clone()));
    Ok((device, info))
}

/// Whether the wgpu device [`start`] made runs a variant of `shaders/matmul_coop_f16.wgsl`
/// on `side` x `side` x `side` cooperative matrices and `subgroup`-wide subgroups: it has
/// cooperative matrices, subgroups and f16 (burn's device requests every feature its
/// adapter has, the experimental ones among them), its adapter lists that shape of f16
/// into f32, and its subgroups are all that wide. `false` before the device is made.
pub(crate) fn has_cooperative_f16(side: u32, subgroup: u32) -> bool {
    let needs = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | wgpu::Features::SHADER_F16
        | wgpu::Features::SUBGROUP;
    REGISTERED.get().is_some_and(|r| {
        r.cooperative_f16.contains(&side)
            && r.subgroup == Some(subgroup)
            && r.device.features().contains(needs)
    })
}

/// The features of the wgpu device [`start`] made, as wgpu reports them (`None` before
/// it is made): what the tests hold burn's own reading of the device to.
#[cfg(test)]
pub(crate) fn features() -> Option<wgpu::Features> {
    REGISTERED.get().map(|r| r.device.features())
}

/// Whether `kernel` is compiled by taks to SPIR-V on the device [`start`] made (a kernel
/// on cooperative matrices, on Vulkan: [`super::spirv_module`]).
pub(crate) fn compiled_here(kernel: Shader) -> bool {
    kernel.is_cooperative() && REGISTERED.get().is_some_and(|r| r.takes_spirv)
}

/// Whether `kernel`'s launches on `client` go through [`launch`]: where burn does not
/// compile WGSL itself (its SPIR-V or MSL compiler), where taks compiles the kernel
/// ([`compiled_here`]: burn's WGSL compiler takes no SPIR-V), or everywhere under
/// `TAKS_GPU_DIRECT=1` ([`crate::plan::Switches::direct`]), so that this route is tested
/// on the machines whose Vulkan driver cannot run burn's SPIR-V (Mesa's lavapipe: see
/// docs/gpu.md).
pub(crate) fn goes_direct(client: &Client, kernel: Shader) -> bool {
    crate::plan::Switches::current().direct
        || client.name() != "wgpu<wgsl>"
        || compiled_here(kernel)
}

/// Dispatch `kernel` over `count` workgroups with `buffers` bound at `@binding(0..)`,
/// through wgpu on burn's device and queue.
///
/// # Panics
/// When no device was registered by [`start`] (a bug: every device taks makes comes from
/// there), or when cubecl cannot hand out a buffer (a failed earlier launch; burn panics
/// on those too).
pub(crate) fn launch(client: &Client, kernel: Shader, count: CubeCount, buffers: &[&Handle]) {
    let registered = REGISTERED.get().expect(
        "taks's kernels on burn's SPIR-V/MSL compiler need the wgpu device made by taks_core::gpu::direct::start",
    );
    let resources: Vec<_> = buffers
        .iter()
        .map(|h| {
            client
                .get_resource::<WgpuServer<AutoCompiler>>((*h).clone())
                .expect("cubecl hands out the buffer of a live tensor")
        })
        .collect();
    let pipeline = registered.pipeline(kernel);
    // Timed where the per-op clock runs on this thread and the device has timestamps.
    let stamps = super::clock::direct_launch(kernel.name)
        .then(|| super::stamps::Stamps::new(&registered.device, &registered.queue))
        .flatten();
    let entries: Vec<wgpu::BindGroupEntry> = resources
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let r = r.resource();
            // A storage binding's size must be a multiple of 4 bytes; an f16 tensor of
            // odd length is not (35 values, 70 bytes). cubecl's allocations are 32-byte
            // aligned, so the rounded size stays inside the buffer, as cubecl's own
            // copies round theirs; the kernels read only the tensor's length.
            let size = r.size.next_multiple_of(4).min(r.buffer.size() - r.offset);
            wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &r.buffer,
                    offset: r.offset,
                    size: wgpu::BufferSize::new(size),
                }),
            }
        })
        .collect();
    let bind_group = registered
        .device
        .create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(kernel.name),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
    let mut encoder = registered
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some(kernel.name),
        });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(kernel.name),
            timestamp_writes: stamps.as_ref().map(|s| s.writes()),
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        let (x, y, z) = match count {
            CubeCount::Static(x, y, z) => (x, y, z),
            CubeCount::Dynamic(_) => unreachable!("taks's launches are static"),
        };
        pass.dispatch_workgroups(x, y, z);
    }
    if let Some(stamps) = &stamps {
        stamps.resolve(&mut encoder);
    }
    registered.queue.submit([encoder.finish()]);
    launches::count_direct();
    if let Some(stamps) = stamps {
        super::clock::stamped(stamps);
    }
    drop(resources);
}

impl Registered {
    /// The compiled pipeline of `kernel` (compiled on first use).
    ///
    /// # Panics
    /// Where taks cannot compile one of its kernels on cooperative matrices (a bug in the
    /// shader or its mending, which taks-shaders' tests check without a GPU; a process
    /// meets it first in `taks probe-coop`'s child, whose failure keeps the kernel out).
    fn pipeline(&self, kernel: Shader) -> wgpu::ComputePipeline {
        let mut pipelines = self.pipelines.lock().expect("pipeline cache");
        pipelines
            .entry(kernel.name)
            .or_insert_with(|| {
                #[cfg(not(target_arch = "wasm32"))]
                if kernel.is_cooperative() && self.takes_spirv {
                    let module = super::spirv_module::compile(kernel)
                        .unwrap_or_else(|e| panic!("taks's kernel does not compile: {e}"));
                    return module.pipeline(&self.device, kernel.name);
                }
                let module = self
                    .device
                    .create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some(kernel.name),
                        source: wgpu::ShaderSource::Wgsl(kernel.text().into()),
                    });
                self.device
                    .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(kernel.name),
                        layout: None,
                        module: &module,
                        entry_point: Some("main"),
                        compilation_options: Default::default(),
                        cache: None,
                    })
            })
            .clone()
    }
}
