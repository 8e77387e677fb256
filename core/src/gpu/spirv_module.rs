//! taks's kernels on cooperative matrices compiled to SPIR-V here, mended, and handed to
//! a Vulkan driver as they are (wgpu's passthrough).
//!
//! Why: wgpu compiles WGSL with naga 30, which declares the Vulkan memory model in a module
//! with cooperative matrices but leaves its workgroup memory private to each invocation
//! and its barriers publishing nothing (gfx-rs/wgpu#8805). A driver that takes the model
//! at its word may keep a staged tile in registers across a barrier: on an H100 the
//! kernel's self-check got -3.23 for 2.80. `taks_shaders::spirv::for_vulkan` puts back what
//! the model asks for; this compiles the kernel with the same naga wgpu uses, mends it and
//! gives the pipeline layout wgpu cannot read from a module it did not compile (every
//! binding of group 0, a storage buffer, read-only where the shader only reads it).
//!
//! The options are wgpu's for a trusted module on a Vulkan 1.1 device (cubecl launches
//! taks's WGSL that way): SPIR-V 1.3, no bounds checks (the kernels check their own
//! edges), no zeroing of workgroup memory (the kernels write it before they read it).

use burn::backend::wgpu::wgpu;

use super::kernels::Shader;

/// One kernel as SPIR-V, with the bindings of its group 0 in order: `true` where the
/// shader only reads the buffer.
pub(crate) struct Module {
    pub(crate) words: Vec<u32>,
    pub(crate) read_only: Vec<bool>,
}

/// `kernel` compiled, mended and checked: every access to workgroup memory and every
/// barrier over it published (`taks_shaders::spirv::workgroup_memory_published`). An
/// error names what failed (a bug in the shader or in the mending: the launcher then
/// declines the kernel).
pub(crate) fn compile(kernel: Shader) -> Result<Module, String> {
    use naga::back::spv;
    let text = kernel.text();
    let module = naga::front::wgsl::parse_str(&text)
        .map_err(|e| format!("{}: {}", kernel.name, e.emit_to_string(&text)))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| format!("{}: {}", kernel.name, e.emit_to_string(&text)))?;
    let unchecked = naga::proc::BoundsCheckPolicy::Unchecked;
    let options = spv::Options {
        lang_version: (1, 3),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: unchecked,
            buffer: unchecked,
            image_load: unchecked,
            binding_array: unchecked,
        },
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
        force_loop_bounding: false,
        ..Default::default()
    };
    let pipeline = spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: "main".into(),
    };
    let words = spv::write_vec(&module, &info, &options, Some(&pipeline))
        .map_err(|e| format!("{}: SPIR-V: {e}", kernel.name))?;
    let words = taks_shaders::spirv::for_vulkan(&words)
        .map_err(|e| format!("{}: SPIR-V: {e}", kernel.name))?;
    taks_shaders::spirv::workgroup_memory_published(&words)
        .map_err(|e| format!("{}: SPIR-V: {e}", kernel.name))?;
    let mut bindings: Vec<(u32, bool)> = module
        .global_variables
        .iter()
        .filter_map(|(_, var)| {
            let binding = var.binding.as_ref().filter(|b| b.group == 0)?;
            let read_only = match var.space {
                naga::AddressSpace::Storage { access } => {
                    !access.contains(naga::StorageAccess::STORE)
                }
                _ => return None,
            };
            Some((binding.binding, read_only))
        })
        .collect();
    bindings.sort();
    let numbered = bindings.iter().enumerate().all(|(i, b)| b.0 == i as u32);
    if !numbered {
        return Err(format!("{}: bindings not numbered from 0", kernel.name));
    }
    Ok(Module {
        words,
        read_only: bindings.into_iter().map(|b| b.1).collect(),
    })
}

impl Module {
    /// Its compute pipeline on `device`, which must have wgpu's `PASSTHROUGH_SHADERS`.
    pub(crate) fn pipeline(&self, device: &wgpu::Device, label: &str) -> wgpu::ComputePipeline {
        let entries: Vec<wgpu::BindGroupLayoutEntry> = (self.read_only.iter().enumerate())
            .map(|(i, &read_only)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let group = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &entries,
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(&group)],
            immediate_size: 0,
        });
        let workgroup = taks_shaders::WORKGROUP;
        // The one unsafe block of the workspace (which denies unsafe code; the docs check
        // holds it to one): wgpu has no safe way to hand a driver a module unchanged.
        // SAFETY: the module is naga's own output for a shader naga validated, changed
        // only by memory-access flags, barrier semantics and dropped layout decorations
        // that spirv-val accepts for Vulkan (taks-shaders' tests), with its entry point
        // `main` of `workgroup` invocations and the bindings the layout below declares.
        #[allow(unsafe_code)]
        let module = unsafe {
            device.create_shader_module_passthrough(wgpu::ShaderModuleDescriptorPassthrough {
                label: Some(label),
                spirv: Some(std::borrow::Cow::Borrowed(&self.words)),
                entry_points: std::borrow::Cow::Borrowed(&[wgpu::PassthroughShaderEntryPoint {
                    name: "main".into(),
                    workgroup_size: (workgroup, 1, 1),
                }]),
                ..Default::default()
            })
        };
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: Some(&layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        })
    }
}
