//! The execution plan: which implementation of each op runs, for the device a tensor is
//! on, its type and the environment's switches, decided here and nowhere else.
//!
//! Every op of [`crate::ops`] has a plain burn formula that runs anywhere and, on some
//! devices and in some types, a kernel of taks's. [`KERNELS`] is the one table of those
//! kernels: where each runs and what chooses it. An op asks [`Kernel::runs`] before it
//! takes its kernel, so the conditions are written once, in the table, where the ops used
//! to restate them (for instance "the tiled matmul is f32 only" in five places). Two rows
//! are not asked: Adam's host pass (`ops::adam::cpu`) takes every f32 flex tensor it is
//! handed, which its downcast checks anyway, and the implicit convolution is one of the
//! ways the convolution's choice measures ([`Switches::conv_ways`]). The switches of the
//! environment (`TAKS_GPU_CONV`, `TAKS_GPU_MATMUL`, `TAKS_GPU_DIRECT`, `TAKS_GPU_COOP`)
//! are read here, once per process ([`Switches::environment`]), and are only the default:
//! a piece of work may hand the plan other switches ([`Switches::during`]), which is how
//! one test process runs every row; `taks` checks the environment's before anything runs
//! ([`Switches::from_env`]). The one choice that is measured rather than
//! tabled is a convolution's way: [`crate::ops::conv::choice`] times the ways
//! [`Switches::conv_ways`] leaves and keeps the fastest, and the plan's rules say where no
//! timing is needed ([`Switches::forced_way`], [`Switches::backward_way`]).
//!
//! docs/architecture.md shows [`KERNELS`] as [`markdown`] writes it; a test keeps the two
//! equal. This module depends on burn (and burn-dispatch's device enum) alone, so every
//! other module may read it.

use std::cell::Cell;
use std::sync::OnceLock;

use burn::backend::CubeDevice;
use burn::tensor::{DType, Device, Tensor};
use burn_dispatch::DispatchDevice;

/// How convolutions run on a wgpu device, from `TAKS_GPU_CONV` (`auto` when unset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuConv {
    /// `plain`: the networks' own forward passes (burn's convolutions, batch norm after).
    Plain,
    /// `folded`: the scoring pass with batch norm folded into burn's convolution;
    /// training as `plain`.
    Folded,
    /// `im2col`: the scoring pass folded, and every convolution (training and scoring)
    /// as im2col and a matmul (taks's tiled one under `TAKS_GPU_MATMUL=tiled`).
    Im2col,
    /// `implicit`: the scoring pass folded, and every convolution as an implicit GEMM,
    /// the patches formed as the product loads them (in f32 on the tiled matmul, in 16
    /// bits on cooperative matrices under `TAKS_GPU_COOP=1`), where `TAKS_GPU_MATMUL`
    /// offers it; as im2col where it does not.
    Implicit,
    /// `auto`: as `im2col`, but each shape runs whichever [`Way`] measured fastest on this
    /// device the first time (the ways [`Switches::conv_ways`] leaves).
    Auto,
}

impl GpuConv {
    fn parse(value: Option<&str>) -> Result<Self, String> {
        match value {
            None | Some("auto") => Ok(Self::Auto),
            Some("im2col") => Ok(Self::Im2col),
            Some("implicit") => Ok(Self::Implicit),
            Some("folded") => Ok(Self::Folded),
            Some("plain") => Ok(Self::Plain),
            Some(other) => Err(format!(
                "TAKS_GPU_CONV={other:?}: expected auto, im2col, implicit, folded or plain"
            )),
        }
    }

    /// Whether convolutions go through taks's ways (in training too), not only burn's.
    pub(crate) fn offers_taks_ways(self) -> bool {
        matches!(self, Self::Im2col | Self::Implicit | Self::Auto)
    }
}

/// Which matmul the convolutions use, from `TAKS_GPU_MATMUL` (`auto` when unset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuMatmul {
    /// `auto`: per convolution shape, whichever measured fastest of burn's kernel,
    /// im2col with burn's matmul and the implicit convolution.
    Auto,
    /// `burn`: burn's matmul (cubecl's, autotuned) for im2col; never the implicit one.
    Burn,
    /// `tiled`: taks's tiled matmul ([`crate::ops::matmul`]) with the patches implicit
    /// wherever taks's convolutions run, and for im2col's patches where that declines.
    Tiled,
}

impl GpuMatmul {
    fn parse(value: Option<&str>) -> Result<Self, String> {
        match value {
            None | Some("auto") => Ok(Self::Auto),
            Some("burn") => Ok(Self::Burn),
            Some("tiled") => Ok(Self::Tiled),
            Some(other) => Err(format!(
                "TAKS_GPU_MATMUL={other:?}: expected auto, burn or tiled"
            )),
        }
    }
}

/// One way to run a convolution's forward pass on a wgpu device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// burn's own convolution kernel (no patches written out).
    Burn,
    /// im2col and a matmul, the patches written out ([`crate::ops::conv::im2col`]).
    Im2col,
    /// taks's tiled matmul, the patches computed as it loads them
    /// ([`crate::ops::conv::implicit`]).
    Implicit,
}

impl Way {
    /// Its name in `taks bench`'s table.
    pub fn name(self) -> &'static str {
        match self {
            Way::Burn => "burn's",
            Way::Im2col => "im2col",
            Way::Implicit => "implicit",
        }
    }
}

/// Each switch on its own, in the order conv, matmul, direct, coop ([`Switches::each`]).
type Each = (
    Result<GpuConv, String>,
    Result<GpuMatmul, String>,
    Result<bool, String>,
    Result<bool, String>,
);

thread_local! {
    /// The switches handed to the plan on this thread ([`Switches::during`]).
    static HANDED: Cell<Option<Switches>> = const { Cell::new(None) };
}

/// The switches, as one value: the environment's by default ([`Switches::environment`]),
/// or handed to the plan for a piece of work ([`Switches::during`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switches {
    /// `TAKS_GPU_CONV`.
    pub conv: GpuConv,
    /// `TAKS_GPU_MATMUL`.
    pub matmul: GpuMatmul,
    /// `TAKS_GPU_DIRECT=1`: taks's kernels go through wgpu itself even where burn compiles
    /// WGSL (so that the route they take on burn's SPIR-V and MSL compilers is tested on a
    /// driver that cannot run burn's SPIR-V: docs/gpu.md).
    pub direct: bool,
    /// `TAKS_GPU_COOP=1`: a mixed-precision step's matrix products on cooperative
    /// matrices ([`Kernel::CoopMatmul`]) where the adapter has them and their self-check
    /// passed. Off by default: on an H200 the kernel's first version made the f16 epochs
    /// slower than burn's f16 matmul, and the present one failed its self-check on an
    /// H100 (docs/benchmarks.md).
    pub coop: bool,
}

impl Switches {
    /// Every switch when none is set.
    pub const DEFAULT: Switches = Switches {
        conv: GpuConv::Auto,
        matmul: GpuMatmul::Auto,
        direct: false,
        coop: false,
    };

    /// From the environment; the first unknown value is a one-line error the caller
    /// reports (`taks` does, before anything runs).
    pub fn from_env() -> Result<Self, String> {
        Self::parse(|name| std::env::var(name).ok())
    }

    /// From `get(name)`, the value of each switch (`None` when unset); the first unknown
    /// value, in the order `TAKS_GPU_CONV`, `TAKS_GPU_MATMUL`, `TAKS_GPU_DIRECT`,
    /// `TAKS_GPU_COOP`, is the error.
    fn parse(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let (conv, matmul, direct, coop) = Self::each(get);
        Ok(Switches {
            conv: conv?,
            matmul: matmul?,
            direct: direct?,
            coop: coop?,
        })
    }

    /// Each switch on its own, so that an unknown value of one leaves the others as set.
    fn each(get: impl Fn(&str) -> Option<String>) -> Each {
        let flag = |name: &str| match get(name).as_deref() {
            None | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(other) => Err(format!("{name}={other:?}: expected 0 or 1")),
        };
        (
            GpuConv::parse(get("TAKS_GPU_CONV").as_deref()),
            GpuMatmul::parse(get("TAKS_GPU_MATMUL").as_deref()),
            flag("TAKS_GPU_DIRECT"),
            flag("TAKS_GPU_COOP"),
        )
    }

    /// The switches the plan decides by on this thread: those handed to it by
    /// [`Switches::during`], else the environment's ([`Switches::environment`]).
    pub fn current() -> Switches {
        HANDED.with(Cell::get).unwrap_or_else(Self::environment)
    }

    /// Run `work` on this thread with the plan deciding by these switches, then go back
    /// to the ones before (also when `work` panics). What lets one process, a test binary
    /// or a benchmark comparing two ways, run every row of the plan; other threads keep
    /// their own.
    pub fn during<T>(self, work: impl FnOnce() -> T) -> T {
        /// Puts the switches before back when dropped.
        struct Restore(Option<Switches>);
        impl Drop for Restore {
            fn drop(&mut self) {
                HANDED.with(|h| h.set(self.0));
            }
        }
        let _restore = Restore(HANDED.with(|h| h.replace(Some(self))));
        work()
    }

    /// The environment's switches, read once per process: each as set, or its default
    /// where its value is unknown (`taks` refuses that before this is read).
    pub fn environment() -> Switches {
        static CURRENT: OnceLock<Switches> = OnceLock::new();
        *CURRENT.get_or_init(|| {
            let (conv, matmul, direct, coop) = Self::each(|name| std::env::var(name).ok());
            Switches {
                conv: conv.unwrap_or(Self::DEFAULT.conv),
                matmul: matmul.unwrap_or(Self::DEFAULT.matmul),
                direct: direct.unwrap_or(Self::DEFAULT.direct),
                coop: coop.unwrap_or(Self::DEFAULT.coop),
            }
        })
    }

    /// The ways `auto` chooses a convolution's among, as `TAKS_GPU_MATMUL` leaves them:
    /// all three by default, im2col on burn's matmul only under `burn`, the implicit one
    /// only under `tiled`. In f32 the implicit way is the tiled matmul's
    /// ([`Kernel::ConvImplicit`]); in 16 bits (`low`) it is the product on cooperative
    /// matrices ([`Kernel::ConvImplicitCoop`]), offered only under `TAKS_GPU_COOP=1` (on a
    /// device without them, or whose self-check failed, the product declines at launch
    /// and the convolution falls back: the implicit way is never timed there).
    pub fn conv_ways(self, low: bool) -> &'static [Way] {
        let implicit = match low {
            false => Kernel::ConvImplicit.runs_in(DType::F32),
            true => self.coop && Kernel::ConvImplicitCoop.runs_in(DType::F16),
        };
        match (self.matmul, implicit) {
            (GpuMatmul::Burn, _) | (_, false) => &[Way::Burn, Way::Im2col],
            (GpuMatmul::Auto, true) => &[Way::Burn, Way::Im2col, Way::Implicit],
            (GpuMatmul::Tiled, true) => &[Way::Burn, Way::Implicit],
        }
    }

    /// The way a convolution's forward pass takes under `how` without timing anything:
    /// burn's where `how` offers no other, im2col under `im2col`, the implicit one under
    /// `implicit` where [`Switches::conv_ways`] offers it (in f32 unless
    /// `TAKS_GPU_MATMUL=burn`; in 16 bits under `TAKS_GPU_COOP=1` too), else im2col;
    /// `None` under `auto`, where the fastest measured runs.
    pub fn forced_way(self, how: GpuConv, low: bool) -> Option<Way> {
        match how {
            _ if !how.offers_taks_ways() => Some(Way::Burn),
            GpuConv::Implicit if self.conv_ways(low).contains(&Way::Implicit) => {
                Some(Way::Implicit)
            }
            GpuConv::Implicit | GpuConv::Im2col => Some(Way::Im2col),
            _ => None,
        }
    }

    /// The way a training step's backward pass takes for a convolution whose forward pass
    /// measured `fastest` (`None` when it was not measured): the forced way's under
    /// `im2col` and `implicit` ([`Switches::forced_way`]); under `auto` the implicit one
    /// where it is the only taks way left, or where it measured fastest; im2col otherwise
    /// (the backward passes do not take burn's own kernel).
    pub fn backward_way(self, low: bool, fastest: Option<Way>) -> Way {
        if let conv @ (GpuConv::Im2col | GpuConv::Implicit) = self.conv {
            return self.forced_way(conv, low).unwrap_or(Way::Im2col);
        }
        let ways = self.conv_ways(low);
        match (ways, fastest) {
            ([Way::Burn, Way::Implicit], _) => Way::Implicit,
            (_, Some(Way::Implicit)) if ways.contains(&Way::Implicit) => Way::Implicit,
            _ => Way::Im2col,
        }
    }

    /// Whether im2col's patches go to taks's tiled matmul (else burn's) for operands of
    /// `dtype`: under `TAKS_GPU_MATMUL=tiled`, in a type the kernel runs in.
    pub fn tiled_patches(self, dtype: DType) -> bool {
        self.matmul == GpuMatmul::Tiled && Kernel::TiledMatmul.runs_in(dtype)
    }

    /// What a convolution's timings are kept under, for the adapter `adapter`: the
    /// candidates differ with `TAKS_GPU_MATMUL` and `TAKS_GPU_COOP`, so do the timings.
    pub fn timings_key(self, adapter: String) -> String {
        adapter + self.candidates()
    }

    /// What sets a convolution's candidates and their times apart (empty for the
    /// defaults): `TAKS_GPU_MATMUL`, and `TAKS_GPU_COOP`, under which im2col's f16
    /// products may be on cooperative matrices.
    pub fn candidates(self) -> &'static str {
        match (self.matmul, self.coop) {
            (GpuMatmul::Auto, false) => "",
            (GpuMatmul::Burn, false) => ", TAKS_GPU_MATMUL=burn",
            (GpuMatmul::Tiled, false) => ", TAKS_GPU_MATMUL=tiled, implicit patches",
            (GpuMatmul::Auto, true) => ", TAKS_GPU_COOP=1",
            (GpuMatmul::Burn, true) => ", TAKS_GPU_MATMUL=burn, TAKS_GPU_COOP=1",
            (GpuMatmul::Tiled, true) => {
                ", TAKS_GPU_MATMUL=tiled, implicit patches, TAKS_GPU_COOP=1"
            }
        }
    }
}

/// Where a tensor lives, as far as the choice of kernel goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// flex, burn's CPU backend.
    Flex,
    /// A wgpu device (burn's WGSL, SPIR-V or MSL compiler alike).
    Wgpu,
    /// Anything else burn runs on (no kernel of taks's runs there).
    Other,
}

impl Place {
    /// The place of `device`, with or without autodiff. Reads the device, runs nothing.
    pub fn of(device: &Device) -> Place {
        match device.clone().without_autodiff().as_dispatch() {
            DispatchDevice::Flex(_) => Place::Flex,
            DispatchDevice::Cube(CubeDevice::Wgpu(_)) => Place::Wgpu,
            _ => Place::Other,
        }
    }

    /// The place of `t`'s device.
    pub fn of_tensor<const D: usize>(t: &Tensor<D>) -> Place {
        Place::of(&t.device())
    }
}

/// A kernel of taks's, one row of [`KERNELS`] each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// A convolution as im2col and a matmul.
    ConvIm2col,
    /// A convolution as taks's tiled matmul, the patches computed as it loads them.
    ConvImplicit,
    /// A 16-bit convolution as the product on cooperative matrices, the patches computed
    /// as it loads them.
    ConvImplicitCoop,
    /// An eval-mode convolution with the batch norm after it folded in.
    ConvFolded,
    /// A training step's batch norm (and ReLU): statistics, normalisation, backward.
    BatchNorm,
    /// taks's tiled matrix product with bias and ReLU.
    TiledMatmul,
    /// The f16 matrix product on cooperative matrices (tensor cores).
    CoopMatmul,
    /// burn's matmul with its depth split into a batch of ranges (split-K).
    DepthSplit,
    /// `relu(h + shortcut)`, forward and backward.
    Residual,
    /// The MLP's training step written out on the host.
    MlpStepHost,
    /// The MLP's training step as matmuls and three kernels.
    MlpStepGpu,
    /// Each sample's softmax cross-entropy and its gradient.
    CrossEntropy,
    /// Adam's update in one pass over the host buffers.
    AdamHost,
    /// Adam's update as one kernel per parameter, or one for all.
    AdamGpu,
    /// The paper's selection: the noise risk, the cumulative risk and the k-set.
    Selection,
}

/// One row of [`KERNELS`].
pub struct Row {
    pub kernel: Kernel,
    /// The op it implements: its folder or file in `core/src/ops/` (`selection` is
    /// `core/src/selection/`).
    pub op: &'static str,
    /// What it is.
    pub variant: &'static str,
    /// Where it runs.
    pub place: Place,
    /// The types it runs in (its inputs' and outputs'; its sums may be wider).
    pub dtypes: &'static [DType],
    /// What chooses it there; everywhere else the op's burn formula runs.
    pub chosen: &'static str,
}

const F32: &[DType] = &[DType::F32];
const F16: &[DType] = &[DType::F16];
const F32_F16: &[DType] = &[DType::F32, DType::F16];
const ANY: &[DType] = &[DType::F32, DType::F16, DType::BF16];

/// Every kernel of taks's: where it runs, in which types, and what chooses it.
pub const KERNELS: &[Row] = &[
    Row {
        kernel: Kernel::ConvIm2col,
        op: "conv",
        variant: "im2col + matmul",
        place: Place::Wgpu,
        dtypes: ANY,
        chosen: "`TAKS_GPU_CONV=im2col`, and `implicit` where that is not offered; under `auto`, where it measured fastest (in bf16 its patches decline to burn's kernel)",
    },
    Row {
        kernel: Kernel::ConvImplicit,
        op: "conv",
        variant: "implicit GEMM on the tiled matmul",
        place: Place::Wgpu,
        dtypes: F32,
        chosen: "`TAKS_GPU_CONV=implicit` unless `TAKS_GPU_MATMUL=burn`; under `auto`, where it measured fastest",
    },
    Row {
        kernel: Kernel::ConvImplicitCoop,
        op: "conv",
        variant: "implicit GEMM on cooperative matrices (tensor cores), f32 sums",
        place: Place::Wgpu,
        dtypes: F16,
        chosen: "under `TAKS_GPU_COOP=1`, where the adapter has cooperative matrices and their self-check passed: `TAKS_GPU_CONV=implicit` unless `TAKS_GPU_MATMUL=burn`; under `auto`, where it measured fastest",
    },
    Row {
        kernel: Kernel::ConvFolded,
        op: "conv",
        variant: "batch norm folded in (scoring)",
        place: Place::Wgpu,
        dtypes: ANY,
        chosen: "the scoring pass, unless `TAKS_GPU_CONV=plain`",
    },
    Row {
        kernel: Kernel::BatchNorm,
        op: "batch_norm",
        variant: "four kernels (+ ReLU)",
        place: Place::Wgpu,
        dtypes: F32_F16,
        chosen: "a training step",
    },
    Row {
        kernel: Kernel::TiledMatmul,
        op: "matmul",
        variant: "tiled, bias and ReLU in the same pass",
        place: Place::Wgpu,
        dtypes: F32,
        chosen: "the implicit convolution; im2col under `TAKS_GPU_MATMUL=tiled`",
    },
    Row {
        kernel: Kernel::CoopMatmul,
        op: "matmul",
        variant: "f16 on cooperative matrices (tensor cores), f32 sums",
        place: Place::Wgpu,
        dtypes: F16,
        chosen: "under `TAKS_GPU_COOP=1`, a mixed-precision step's im2col products and implicit convolutions, where the adapter has cooperative matrices and their self-check at start-up passed",
    },
    Row {
        kernel: Kernel::DepthSplit,
        op: "matmul",
        variant: "burn's, its depth split into a batch of ranges (split-K), the ranges added in f32",
        place: Place::Wgpu,
        dtypes: F32_F16,
        chosen: "a product that burn's matmul runs with few output blocks and a deep sum: a convolution's weight gradient by im2col",
    },
    Row {
        kernel: Kernel::Residual,
        op: "residual",
        variant: "one kernel each way",
        place: Place::Wgpu,
        dtypes: F32_F16,
        chosen: "always (both inputs of one type)",
    },
    Row {
        kernel: Kernel::MlpStepHost,
        op: "mlp_step",
        variant: "host loops",
        place: Place::Flex,
        dtypes: F32,
        chosen: "the MLP's training step",
    },
    Row {
        kernel: Kernel::MlpStepGpu,
        op: "mlp_step",
        variant: "matmuls + three kernels",
        place: Place::Wgpu,
        dtypes: F32_F16,
        chosen: "the MLP's training step",
    },
    Row {
        kernel: Kernel::CrossEntropy,
        op: "cross_entropy",
        variant: "one kernel each way",
        place: Place::Wgpu,
        dtypes: F32,
        chosen: "always",
    },
    Row {
        kernel: Kernel::AdamHost,
        op: "adam",
        variant: "one pass over the host buffers",
        place: Place::Flex,
        dtypes: F32,
        chosen: "always",
    },
    Row {
        kernel: Kernel::AdamGpu,
        op: "adam",
        variant: "one kernel per parameter, or one for all",
        place: Place::Wgpu,
        dtypes: F32,
        chosen: "always (one for all where every parameter is on the device)",
    },
    Row {
        kernel: Kernel::Selection,
        op: "selection",
        variant: "noise risk, cumulative risk, k smallest",
        place: Place::Wgpu,
        dtypes: F32,
        chosen: "a selecting method's epoch (the CPU twin elsewhere)",
    },
];

impl Kernel {
    /// Its row of [`KERNELS`].
    pub fn row(self) -> &'static Row {
        KERNELS
            .iter()
            .find(|row| row.kernel == self)
            .expect("every kernel has a row (tested)")
    }

    /// Whether it runs on `place` for operands of `dtype`.
    pub fn runs(self, place: Place, dtype: DType) -> bool {
        let row = self.row();
        row.place == place && row.dtypes.contains(&dtype)
    }

    /// Whether it runs in `dtype` (on its place).
    pub fn runs_in(self, dtype: DType) -> bool {
        self.row().dtypes.contains(&dtype)
    }

    /// Whether it runs for `t`: on its place, in its type.
    pub fn runs_for<const D: usize>(self, t: &Tensor<D>) -> bool {
        self.runs(Place::of_tensor(t), t.dtype())
    }
}

/// [`KERNELS`] as the Markdown table docs/architecture.md shows.
pub fn markdown() -> String {
    let dtype = |d: &DType| match d {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        _ => "other",
    };
    let place = |p: Place| match p {
        Place::Flex => "flex (CPU)",
        Place::Wgpu => "wgpu",
        Place::Other => "other",
    };
    let mut out = String::from("| op | kernel | runs on | in | chosen |\n|---|---|---|---|---|\n");
    for row in KERNELS {
        let dtypes: Vec<&str> = row.dtypes.iter().map(dtype).collect();
        out += &format!(
            "| `{}` | {} | {} | {} | {} |\n",
            row.op,
            row.variant,
            place(row.place),
            dtypes.join(", "),
            row.chosen
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The switches a process runs with, where none are handed to the plan, are its
    /// environment's, read here directly: the test command runs this with the switches
    /// it sets (`TAKS_GPU_COOP=1` on Mesa 26's lavapipe, `scripts/test.sh`), where a
    /// plan that ignored one would pass every test that asks the plan what to expect.
    #[test]
    fn the_switches_are_the_environment() {
        use crate::test_support::{matmul_switch, switch_on};
        let current = Switches::current();
        assert_eq!(current.direct, switch_on("TAKS_GPU_DIRECT"));
        assert_eq!(current.coop, switch_on("TAKS_GPU_COOP"));
        assert_eq!(current.matmul, matmul_switch());
        let conv = std::env::var("TAKS_GPU_CONV").unwrap_or_else(|_| "auto".into());
        assert_eq!(format!("{:?}", current.conv).to_lowercase(), conv);
    }

    /// Switches handed to the plan win on their thread for the work they are handed
    /// for, nested ones innermost, and are taken back after it (also after a panic);
    /// another thread meanwhile keeps the environment's.
    #[test]
    fn handed_switches_win_on_their_thread_for_their_work() {
        let environment = Switches::current();
        assert_eq!(environment, Switches::environment());
        let tiled = Switches {
            matmul: GpuMatmul::Tiled,
            direct: !environment.direct,
            ..environment
        };
        let burn = Switches {
            matmul: GpuMatmul::Burn,
            ..tiled
        };
        tiled.during(|| {
            assert_eq!(Switches::current(), tiled);
            let elsewhere = std::thread::spawn(Switches::current).join().unwrap();
            assert_eq!(elsewhere, environment);
            assert_eq!(burn.during(Switches::current), burn);
            assert_eq!(Switches::current(), tiled);
            let panicked = std::panic::catch_unwind(|| burn.during(|| panic!("in the work")));
            assert!(panicked.is_err());
            assert_eq!(Switches::current(), tiled, "taken back after a panic");
        });
        assert_eq!(Switches::current(), environment);
    }

    /// An environment that holds only `pairs`.
    fn lookup<'a>(pairs: &'a [(&str, &str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn switches(pairs: &[(&str, &str)]) -> Result<Switches, String> {
        Switches::parse(lookup(pairs))
    }

    /// Each switch's values, its default, and a one-line refusal naming the switch.
    #[test]
    fn the_switches_parse_and_refuse_one_line() {
        assert_eq!(switches(&[]), Ok(Switches::DEFAULT));
        let set = switches(&[
            ("TAKS_GPU_CONV", "folded"),
            ("TAKS_GPU_MATMUL", "tiled"),
            ("TAKS_GPU_DIRECT", "1"),
            ("TAKS_GPU_COOP", "1"),
        ]);
        assert_eq!(
            set,
            Ok(Switches {
                conv: GpuConv::Folded,
                matmul: GpuMatmul::Tiled,
                direct: true,
                coop: true,
            })
        );
        for conv in ["auto", "im2col", "implicit", "folded", "plain"] {
            assert!(switches(&[("TAKS_GPU_CONV", conv)]).is_ok(), "{conv}");
        }
        assert_eq!(
            switches(&[("TAKS_GPU_MATMUL", "burn")]).map(|s| s.matmul),
            Ok(GpuMatmul::Burn)
        );
        for (name, silly) in [
            ("TAKS_GPU_CONV", "fast"),
            ("TAKS_GPU_MATMUL", "Tiled"),
            ("TAKS_GPU_MATMUL", ""),
            ("TAKS_GPU_DIRECT", "yes"),
            ("TAKS_GPU_COOP", "on"),
        ] {
            let refused = switches(&[(name, silly)]).unwrap_err();
            assert!(
                refused.starts_with(&format!("{name}={silly:?}: expected"))
                    && !refused.contains('\n'),
                "{refused}"
            );
        }
    }

    /// An unknown value of one switch leaves the others as set (what
    /// [`Switches::current`] reads), and of two unknown values the first in the order
    /// conv, matmul, direct, coop is the one reported.
    #[test]
    fn one_unknown_switch_leaves_the_others() {
        let (conv, matmul, direct, coop) = Switches::each(lookup(&[
            ("TAKS_GPU_CONV", "plain"),
            ("TAKS_GPU_MATMUL", "tiled"),
            ("TAKS_GPU_DIRECT", "yes"),
            ("TAKS_GPU_COOP", "1"),
        ]));
        assert_eq!((conv, matmul), (Ok(GpuConv::Plain), Ok(GpuMatmul::Tiled)));
        assert!(direct.is_err());
        assert_eq!(coop, Ok(true));
        let refused = switches(&[("TAKS_GPU_DIRECT", "yes"), ("TAKS_GPU_MATMUL", "x")]);
        assert!(refused.unwrap_err().starts_with("TAKS_GPU_MATMUL="));
    }

    /// The ways each `TAKS_GPU_MATMUL` leaves, and that 16 bits never get the implicit one.
    #[test]
    fn the_matmul_switch_leaves_its_ways() {
        let with = |matmul| Switches {
            matmul,
            ..Switches::DEFAULT
        };
        assert_eq!(
            with(GpuMatmul::Auto).conv_ways(false),
            [Way::Burn, Way::Im2col, Way::Implicit]
        );
        assert_eq!(
            with(GpuMatmul::Burn).conv_ways(false),
            [Way::Burn, Way::Im2col]
        );
        assert_eq!(
            with(GpuMatmul::Tiled).conv_ways(false),
            [Way::Burn, Way::Implicit]
        );
        for matmul in [GpuMatmul::Auto, GpuMatmul::Burn, GpuMatmul::Tiled] {
            assert_eq!(with(matmul).conv_ways(true), [Way::Burn, Way::Im2col]);
            assert_eq!(
                with(matmul).backward_way(true, Some(Way::Implicit)),
                Way::Im2col
            );
            assert!(!with(matmul).tiled_patches(DType::F16));
        }
        // Under TAKS_GPU_COOP=1 a 16-bit convolution's implicit way is the product on
        // cooperative matrices: a candidate as the f32 one is, forced under `tiled`.
        let coop = |matmul| Switches {
            matmul,
            coop: true,
            ..Switches::DEFAULT
        };
        assert_eq!(
            coop(GpuMatmul::Auto).conv_ways(true),
            [Way::Burn, Way::Im2col, Way::Implicit]
        );
        assert_eq!(
            coop(GpuMatmul::Burn).conv_ways(true),
            [Way::Burn, Way::Im2col]
        );
        assert_eq!(
            coop(GpuMatmul::Tiled).conv_ways(true),
            [Way::Burn, Way::Implicit]
        );
        assert_eq!(
            coop(GpuMatmul::Tiled).forced_way(GpuConv::Implicit, true),
            Some(Way::Implicit)
        );
        assert_eq!(
            coop(GpuMatmul::Auto).forced_way(GpuConv::Implicit, true),
            Some(Way::Implicit)
        );
        assert_eq!(
            coop(GpuMatmul::Tiled).forced_way(GpuConv::Im2col, true),
            Some(Way::Im2col)
        );
        assert_eq!(
            coop(GpuMatmul::Auto).backward_way(true, Some(Way::Implicit)),
            Way::Implicit
        );
        assert_eq!(
            coop(GpuMatmul::Auto).backward_way(true, Some(Way::Im2col)),
            Way::Im2col
        );
        // Its f32 ways are the default's, and its im2col products are not tiled.
        assert_eq!(
            coop(GpuMatmul::Auto).conv_ways(false),
            with(GpuMatmul::Auto).conv_ways(false)
        );
        assert!(!coop(GpuMatmul::Tiled).tiled_patches(DType::F16));
        assert!(with(GpuMatmul::Tiled).tiled_patches(DType::F32));
        assert!(!with(GpuMatmul::Auto).tiled_patches(DType::F32));
    }

    /// A convolution's timings are kept apart for every set of candidates, the
    /// default's under the adapter's name alone (what earlier runs kept).
    #[test]
    fn timings_are_kept_apart_by_the_switches() {
        let auto = Switches::DEFAULT;
        let switches = [
            auto,
            Switches {
                matmul: GpuMatmul::Burn,
                ..auto
            },
            Switches {
                matmul: GpuMatmul::Tiled,
                ..auto
            },
            Switches { coop: true, ..auto },
        ];
        let mut keys: Vec<String> = switches
            .iter()
            .map(|s| s.timings_key("lavapipe".into()))
            .collect();
        assert_eq!(keys[0], "lavapipe");
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), switches.len());
    }

    /// Where no timing is needed, and what the backward pass follows.
    #[test]
    fn forced_and_backward_ways() {
        let auto = Switches::DEFAULT;
        let tiled = Switches {
            matmul: GpuMatmul::Tiled,
            ..auto
        };
        for how in [GpuConv::Plain, GpuConv::Folded] {
            assert_eq!(auto.forced_way(how, false), Some(Way::Burn));
        }
        let burn = Switches {
            matmul: GpuMatmul::Burn,
            ..auto
        };
        // `im2col` is im2col under every matmul switch; `implicit` the implicit way
        // wherever it is offered (not under `burn`, not in 16 bits without cooperative
        // matrices), else im2col.
        for switches in [auto, tiled, burn] {
            for low in [false, true] {
                assert_eq!(switches.forced_way(GpuConv::Im2col, low), Some(Way::Im2col));
            }
        }
        assert_eq!(
            auto.forced_way(GpuConv::Implicit, false),
            Some(Way::Implicit)
        );
        assert_eq!(
            tiled.forced_way(GpuConv::Implicit, false),
            Some(Way::Implicit)
        );
        assert_eq!(burn.forced_way(GpuConv::Implicit, false), Some(Way::Im2col));
        assert_eq!(tiled.forced_way(GpuConv::Implicit, true), Some(Way::Im2col));
        assert_eq!(auto.forced_way(GpuConv::Auto, false), None);

        // Under `auto` the backward pass follows what the forward pass measured; a forced
        // way it follows whatever was measured.
        assert_eq!(tiled.backward_way(false, None), Way::Implicit);
        assert_eq!(auto.backward_way(false, Some(Way::Implicit)), Way::Implicit);
        assert_eq!(auto.backward_way(false, Some(Way::Burn)), Way::Im2col);
        assert_eq!(auto.backward_way(false, None), Way::Im2col);
        assert_eq!(burn.backward_way(false, Some(Way::Implicit)), Way::Im2col);
        let forced = |conv, matmul| Switches {
            conv,
            matmul,
            ..auto
        };
        assert_eq!(
            forced(GpuConv::Im2col, GpuMatmul::Tiled).backward_way(false, Some(Way::Implicit)),
            Way::Im2col
        );
        assert_eq!(
            forced(GpuConv::Implicit, GpuMatmul::Auto).backward_way(false, Some(Way::Burn)),
            Way::Implicit
        );
        assert_eq!(
            forced(GpuConv::Implicit, GpuMatmul::Burn).backward_way(false, None),
            Way::Im2col
        );
    }

    /// Every kernel has exactly one row, and a row never claims a type on flex that the
    /// host loops do not read (they are f32 only).
    #[test]
    fn every_kernel_has_one_row() {
        use Kernel::*;
        let all = [
            ConvIm2col,
            ConvImplicit,
            ConvImplicitCoop,
            ConvFolded,
            BatchNorm,
            TiledMatmul,
            CoopMatmul,
            DepthSplit,
            Residual,
            MlpStepHost,
            MlpStepGpu,
            CrossEntropy,
            AdamHost,
            AdamGpu,
            Selection,
        ];
        // Exhaustive, so a new kernel does not compile here until it has a place in `all`.
        let place = |kernel: Kernel| match kernel {
            ConvIm2col => 0,
            ConvImplicit => 1,
            ConvImplicitCoop => 2,
            ConvFolded => 3,
            BatchNorm => 4,
            TiledMatmul => 5,
            CoopMatmul => 6,
            DepthSplit => 7,
            Residual => 8,
            MlpStepHost => 9,
            MlpStepGpu => 10,
            CrossEntropy => 11,
            AdamHost => 12,
            AdamGpu => 13,
            Selection => 14,
        };
        for (i, &kernel) in all.iter().enumerate() {
            assert_eq!(place(kernel), i, "{kernel:?}");
        }
        assert_eq!(KERNELS.len(), all.len());
        for kernel in all {
            assert_eq!(
                KERNELS.iter().filter(|r| r.kernel == kernel).count(),
                1,
                "{kernel:?}"
            );
            let row = kernel.row();
            if row.place == Place::Flex {
                assert_eq!(row.dtypes, F32, "{kernel:?}");
            }
        }
    }

    /// The places of the devices taks makes, read without running anything.
    #[test]
    fn places_of_devices() {
        assert_eq!(Place::of(&Device::flex()), Place::Flex);
        assert_eq!(Place::of(&Device::flex().autodiff()), Place::Flex);
        assert!(Kernel::AdamHost.runs(Place::Flex, DType::F32));
        assert!(!Kernel::AdamHost.runs(Place::Wgpu, DType::F32));
        assert!(!Kernel::CrossEntropy.runs(Place::Wgpu, DType::F16));
        let gpu = crate::gpu::direct::start().expect("a wgpu adapter").0;
        assert_eq!(Place::of(&gpu), Place::Wgpu);
        assert_eq!(Place::of(&gpu.autodiff()), Place::Wgpu);
    }

    /// The architecture page shows the table as it is.
    #[test]
    fn the_architecture_page_shows_the_table() {
        let page = include_str!("../../docs/architecture.md");
        assert!(
            page.contains(&markdown()),
            "docs/architecture.md's kernel table differs from plan::markdown():\n{}",
            markdown()
        );
    }
}
