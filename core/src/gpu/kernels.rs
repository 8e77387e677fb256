//! The WGSL sources under `shaders/`, wrapped as burn `KernelSource`s.
//!
//! Why a module of its own: the text is compiled into the binary with `include_str!`, and the
//! naga validation test must see exactly the same text (prelude + pass) that the GPU compiles,
//! so both read it from here.

use burn::backend::wgpu::{KernelSource, SourceTemplate};
use cubecl::prelude::KernelId;

/// Shared prelude (`order_key`, state layout) prepended to every `select_*` pass.
pub(crate) const SELECT_COMMON: &str = include_str!("../../shaders/select_common.wgsl");

/// One hand-written WGSL compute shader: an optional prelude followed by the pass itself.
/// The entry point is `main` with `@workgroup_size(256)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wgsl {
    /// Unique per shader; keys cubecl's compilation cache.
    pub name: &'static str,
    pub prelude: &'static str,
    pub body: &'static str,
}

impl Wgsl {
    /// The complete WGSL text handed to the device (and to naga in the tests).
    pub fn text(&self) -> String {
        let mut s = String::with_capacity(self.prelude.len() + self.body.len() + 1);
        s.push_str(self.prelude);
        s.push('\n');
        s.push_str(self.body);
        s
    }
}

impl KernelSource for Wgsl {
    fn source(&self) -> SourceTemplate {
        // No `{{ }}` placeholders: all sizes travel in storage buffers, so one compiled
        // pipeline per shader serves every n, C and k.
        SourceTemplate::new(self.text())
    }

    fn id(&self) -> KernelId {
        KernelId::new::<Self>().info(self.name)
    }

    fn lang(&self) -> &'static str {
        "wgsl"
    }
}

/// Invocations per workgroup in every shader (`@workgroup_size(256)`).
pub(crate) const WORKGROUP: u32 = 256;
/// Elements per workgroup in `select_histogram.wgsl` (256 invocations x 16).
pub(crate) const HISTOGRAM_SPAN: u32 = WORKGROUP * 16;

pub(crate) const NOISE_RISK: Wgsl = Wgsl {
    name: "taks_noise_risk",
    prelude: "",
    body: include_str!("../../shaders/noise_risk.wgsl"),
};
pub(crate) const SELECT_HISTOGRAM: Wgsl = Wgsl {
    name: "taks_select_histogram",
    prelude: SELECT_COMMON,
    body: include_str!("../../shaders/select_histogram.wgsl"),
};
pub(crate) const SELECT_DIGIT: Wgsl = Wgsl {
    name: "taks_select_digit",
    prelude: SELECT_COMMON,
    body: include_str!("../../shaders/select_digit.wgsl"),
};
pub(crate) const SELECT_COUNT: Wgsl = Wgsl {
    name: "taks_select_count",
    prelude: SELECT_COMMON,
    body: include_str!("../../shaders/select_count.wgsl"),
};
pub(crate) const SELECT_SCAN: Wgsl = Wgsl {
    name: "taks_select_scan",
    prelude: SELECT_COMMON,
    body: include_str!("../../shaders/select_scan.wgsl"),
};
pub(crate) const SELECT_SCATTER: Wgsl = Wgsl {
    name: "taks_select_scatter",
    prelude: SELECT_COMMON,
    body: include_str!("../../shaders/select_scatter.wgsl"),
};

pub(crate) const ADAM: Wgsl = Wgsl {
    name: "taks_adam",
    prelude: "",
    body: include_str!("../../shaders/adam.wgsl"),
};

/// Every shader, for the validation test.
#[cfg(test)]
pub(crate) const ALL: [Wgsl; 11] = [
    ADAM,
    BIAS_RELU,
    IM2COL,
    MLP_SOFTMAX_GRAD,
    MLP_RELU_GRAD,
    NOISE_RISK,
    SELECT_HISTOGRAM,
    SELECT_DIGIT,
    SELECT_COUNT,
    SELECT_SCAN,
    SELECT_SCATTER,
];

pub(crate) const BIAS_RELU: Wgsl = Wgsl {
    name: "taks_bias_relu",
    prelude: "",
    body: include_str!("../../shaders/bias_relu.wgsl"),
};
pub(crate) const MLP_SOFTMAX_GRAD: Wgsl = Wgsl {
    name: "taks_mlp_softmax_grad",
    prelude: "",
    body: include_str!("../../shaders/mlp_softmax_grad.wgsl"),
};
pub(crate) const MLP_RELU_GRAD: Wgsl = Wgsl {
    name: "taks_mlp_relu_grad",
    prelude: "",
    body: include_str!("../../shaders/mlp_relu_grad.wgsl"),
};
pub(crate) const IM2COL: Wgsl = Wgsl {
    name: "taks_im2col",
    prelude: "",
    body: include_str!("../../shaders/im2col.wgsl"),
};
