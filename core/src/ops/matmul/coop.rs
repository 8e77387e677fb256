//! The f16 matrix product on cooperative matrices (`shaders/matmul_coop_f16.wgsl`): a
//! mixed-precision step's im2col products, and its convolutions as implicit GEMMs
//! ([`super::Operand`]'s patches, `crate::ops::conv::implicit`), on a GPU's matrix units
//! (tensor cores), f16 operands of any strides, f32 sums and an f16 result, in one launch
//! per product (two where a deep product with few output blocks splits its depth:
//! [`super::depth_split::split_depth`]), where the adapter offers wgpu's cooperative matrices. The launch
//! itself is [`super::launch`], shared with the tiled f32 kernel, whose words it reads.
//!
//! Why: PyTorch's f16 (autocast) convolutions run on tensor cores, several times the
//! card's plain arithmetic, and no WGSL kernel of burn's uses them (docs/gpu.md). The
//! kernel has two variants ([`VARIANTS`]): 16 x 16 tiles on 32-wide subgroups, what
//! NVIDIA's cards list, and 8 x 8 tiles on 8-wide subgroups, what Mesa 26's lavapipe
//! lists, so that the tests run the kernel on a CPU (scripts/lavapipe-coop.sh); WebGPU
//! has no cooperative matrices. Why behind a switch: on an H200 an earlier version of
//! the kernel (operands copied into padded tensors, the result cast) made the f16
//! epochs slower than burn's f16 matmul (docs/benchmarks.md, "Mixed precision and
//! cooperative matrices on an H200"), and this one failed its self-check on an H100
//! (docs/gpu.md says what is suspected: naga's workgroup accesses under Vulkan's memory
//! model). So it
//! runs only under `TAKS_GPU_COOP=1` ([`crate::plan::Switches::coop`]), on a device that
//! has a variant's shape and subgroup size, and once its [`self_check`] passed: products
//! and a convolution of known values against the exact ones, the verdict kept for the process (which has
//! one wgpu device: [`crate::gpu::direct::start`]). `taks` first has a child process
//! run the same check, so that a driver that crashes on the kernel takes only the child
//! down, and [`refuse`]s the kernel where the child failed. A failed check is one line
//! in the device's description and every product goes to burn's matmul.

use std::sync::OnceLock;

use burn::tensor::{DType, Device, FloatDType, Tensor, TensorData};

use super::Operand;
use crate::gpu::Shader;
use crate::gpu::kernels::{MATMUL_COOP_8, MATMUL_COOP_16};
use crate::ops::conv::geometry::Geometry;
use crate::plan::{Kernel, Place, Switches};

/// The rows and columns of the output one workgroup computes.
pub(super) const BLOCK: [usize; 2] = [128, 64];

/// The depth `kernel` stages at a time: two of its cooperative matrices' side.
pub(super) fn step(kernel: Shader) -> usize {
    let (_, side, _) = VARIANTS
        .into_iter()
        .find(|(k, ..)| *k == kernel)
        .expect("a variant of the kernel on cooperative matrices");
    2 * side as usize
}

/// The kernel's variants: the shader, the side of its cooperative matrices and the
/// subgroup size it is written for.
const VARIANTS: [(Shader, u32, u32); 2] = [(MATMUL_COOP_16, 16, 32), (MATMUL_COOP_8, 8, 8)];

/// `a` `[M, K]` times `b` `[K, N]`, both f16 (any strides), as f16, on cooperative
/// matrices: `None` where the plan does not choose them (off wgpu, another type, the
/// switch off, a device without them, a failed self-check, a size past 32 bits), and the
/// caller takes burn's.
pub(crate) fn product(a: &Tensor<2>, b: &Tensor<2>) -> Option<Tensor<2>> {
    if !(Kernel::CoopMatmul.runs_for(a) && Kernel::CoopMatmul.runs_for(b)) {
        return None;
    }
    super::product(Operand::Matrix(a), Operand::Matrix(b), None, false)
}

/// The variant f16 products (and the implicit convolutions, [`super::product`]'s
/// convolution operands) run on, on `device`: where the plan offers cooperative matrices
/// there ([`offered`]) and their self-check passed; `None` everywhere else.
pub(crate) fn usable(device: &Device) -> Option<Shader> {
    if !Kernel::CoopMatmul.runs(Place::of(device), DType::F16) {
        return None;
    }
    Some(*verdict(device)?.as_ref().ok()?)
}

/// The product of the f16 matrices `a` and `b` on `kernel`, bypassing the verdict (the
/// self-check's own products).
fn launch(kernel: Shader, a: &Tensor<2>, b: &Tensor<2>) -> Option<Tensor<2>> {
    super::launch(
        kernel,
        BLOCK,
        Operand::Matrix(a),
        Operand::Matrix(b),
        None,
        false,
    )
}

/// The variant this process's device would run: `None` where the product is not offered
/// at all (the switch off, or a device without cooperative matrices of a variant's shape
/// and subgroup size).
pub fn offered() -> Option<Shader> {
    if !Switches::current().coop {
        return None;
    }
    VARIANTS
        .into_iter()
        .find(|&(_, side, subgroup)| crate::gpu::direct::has_cooperative_f16(side, subgroup))
        .map(|(kernel, ..)| kernel)
}

static VERDICT: OnceLock<Result<Shader, String>> = OnceLock::new();

/// The verdict on the [`offered`] variant, reached the first time it is asked by its
/// [`self_check`] on `device` (unless [`refuse`] came first): `None` where none is
/// offered, else the variant, or why it may not run, in one line.
pub fn verdict(device: &Device) -> Option<&'static Result<Shader, String>> {
    let kernel = offered()?;
    Some(VERDICT.get_or_init(|| self_check(kernel, device).map(|()| kernel)))
}

/// Refuse the offered variant for this process, for `why` (a check of the driver that
/// failed before this process ran the kernel: `taks`'s child process), unless a verdict
/// was reached already; the verdict that stands.
pub fn refuse(why: String) -> &'static Result<Shader, String> {
    VERDICT.get_or_init(|| Err(why))
}

/// The operands of the self-check: `[rows, cols]` values that are multiples of 1/8 in
/// [-2, 2], exact in f16: every product is a multiple of 1/64 of at most 4, so every sum
/// of up to 65,536 of them is exact in f32, the kernel's sums, and the right answer is
/// known to the bit before its one rounding to f16.
fn known(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut draws = crate::rng::SplitMix64::new(seed);
    (0..rows * cols)
        .map(|_| draws.below(33) as f32 / 8.0 - 2.0)
        .collect()
}

/// `a` `[m, k]` times `b` `[k, n]` on the host, in f64.
fn exact(a: &[f32], b: &[f32], [m, k, n]: [usize; 3]) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let sum: f64 = (0..k)
                .map(|l| a[i * k + l] as f64 * b[l * n + j] as f64)
                .sum();
            c[i * n + j] = sum as f32;
        }
    }
    c
}

/// Two products off every edge of the tiles (70 x 40 times 40 x 90: rows, depth and
/// columns past whole blocks and steps, several depth steps, two blocks) on `kernel` and
/// `device`, against [`exact`]: the operands as they are, and both as transposed views
/// (read through their strides); then a convolution's forward pass with its patches
/// computed as the tiles load them (3x3, stride 2, padding 1) against [`exact_conv`].
fn self_check(kernel: Shader, device: &Device) -> Result<(), String> {
    let [m, k, n] = [70, 40, 90];
    let (a, b) = (known(m, k, 1), known(k, n, 2));
    let on_device = |values: &[f32], dims: [usize; 2]| {
        Tensor::<2>::from_data(TensorData::new(values.to_vec(), dims), device).cast(FloatDType::F16)
    };
    let (a_t, b_t) = (transposed(&a, [m, k]), transposed(&b, [k, n]));
    let pairs = [
        (on_device(&a, [m, k]), on_device(&b, [k, n])),
        (
            on_device(&a_t, [k, m]).transpose(),
            on_device(&b_t, [n, k]).transpose(),
        ),
    ];
    let reference = exact(&a, &b, [m, k, n]);
    for (which, (x, y)) in ["as they are", "transposed"].into_iter().zip(pairs) {
        let ours = launch(kernel, &x, &y)
            .ok_or("cooperative matrices: the self-check's product did not launch")?
            .into_data()
            .convert::<f32>()
            .try_to_vec::<f32>()
            .map_err(|e| format!("cooperative matrices: reading the self-check back: {e:?}"))?;
        agrees(&ours, &reference).map_err(|why| {
            format!("cooperative matrices failed their self-check, operands {which} ({why})")
        })?;
    }
    let (dims, o) = ([2, 3, 11, 9], 5);
    let g = Geometry {
        kernel: [3, 3],
        stride: [2, 2],
        padding: [1, 1],
    };
    let (x, columns) = (known(2 * 3, 11 * 9, 3), known(3 * 9, o, 4));
    let input =
        Tensor::<4>::from_data(TensorData::new(x.clone(), dims), device).cast(FloatDType::F16);
    let weights = on_device(&columns, [3 * 9, o]);
    let patches = Operand::Patches(&input, g);
    let ours = super::launch(
        kernel,
        BLOCK,
        patches,
        Operand::Matrix(&weights),
        None,
        false,
    )
    .ok_or("cooperative matrices: the self-check's convolution did not launch")?
    .into_data()
    .convert::<f32>()
    .try_to_vec::<f32>()
    .map_err(|e| format!("cooperative matrices: reading the self-check back: {e:?}"))?;
    agrees(&ours, &exact_conv(&x, &columns, dims, o, g)).map_err(|why| {
        format!("cooperative matrices failed their self-check, a convolution's patches ({why})")
    })
}

/// The forward pass of a convolution of `x` `[N, C, H, W]` (row-major) by the weights as
/// `columns` `[C kh kw, O]` under `g`, on the host in f64: `[N Ho Wo, O]`, the rows the
/// output's positions, as the kernel writes it.
fn exact_conv(
    x: &[f32],
    columns: &[f32],
    [n, c, h, w]: [usize; 4],
    o: usize,
    g: Geometry,
) -> Vec<f32> {
    let [out_h, out_w] = g.output(h, w);
    let [kh, kw] = g.kernel;
    let mut out = Vec::with_capacity(n * out_h * out_w * o);
    for image in 0..n {
        for (r, s) in (0..out_h).flat_map(|r| (0..out_w).map(move |s| (r, s))) {
            for channel in 0..o {
                let mut sum = 0f64;
                for (ch, i, j) in
                    (0..c).flat_map(|ch| (0..kh * kw).map(move |t| (ch, t / kw, t % kw)))
                {
                    // Unsigned: a position left of or above the image wraps past it.
                    let y = (r * g.stride[0] + i).wrapping_sub(g.padding[0]);
                    let z = (s * g.stride[1] + j).wrapping_sub(g.padding[1]);
                    if y < h && z < w {
                        let tap = ((ch * kh + i) * kw + j) * o + channel;
                        sum += x[((image * c + ch) * h + y) * w + z] as f64 * columns[tap] as f64;
                    }
                }
                out.push(sum as f32);
            }
        }
    }
    out
}

/// The `[cols, rows]` transpose of the row-major `[rows, cols]` `values`.
fn transposed(values: &[f32], [rows, cols]: [usize; 2]) -> Vec<f32> {
    (0..cols * rows)
        .map(|i| values[(i % rows) * cols + i / rows])
        .collect()
}

/// Whether `ours` is `reference` within f16's rounding (a thousandth of the value, or of
/// 1 near 0), element by element; else the first element that is not, in one line.
fn agrees(ours: &[f32], reference: &[f32]) -> Result<(), String> {
    if ours.len() != reference.len() {
        return Err(format!(
            "{} values where {} were due",
            ours.len(),
            reference.len()
        ));
    }
    for (i, (&x, &want)) in ours.iter().zip(reference).enumerate() {
        let within = (x - want).abs() <= 1e-3 * (1.0 + want.abs());
        // A NaN is within nothing.
        if !within {
            return Err(format!("element {i}: {x} against {want}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::host;

    /// The self-check's reference is burn's product of the same values (on flex), and
    /// its operands are f16 values: a check that held the kernel to a wrong answer would
    /// refuse a right one.
    #[test]
    fn the_self_checks_answer_is_burns_product() {
        let device = Device::flex();
        let [m, k, n] = [70, 40, 90];
        let (a, b) = (known(m, k, 1), known(k, n, 2));
        let tensor = |v: &[f32], dims: [usize; 2]| {
            Tensor::<2>::from_data(TensorData::new(v.to_vec(), dims), &device)
        };
        let halves = host(tensor(&a, [m, k]).cast(FloatDType::F16));
        assert_eq!(halves, a, "the operands are exact in f16");
        let burns = host(tensor(&a, [m, k]).matmul(tensor(&b, [k, n])));
        assert_eq!(exact(&a, &b, [m, k, n]), burns);
        // Not all of one value: the check would pass a kernel that wrote a constant.
        assert!(a.iter().any(|&x| x != a[0]) && b.iter().any(|&x| x < 0.0));
    }

    /// The self-check's convolution reference is flex's convolution of the same values,
    /// read as the kernel writes it (rows the output's positions, columns its channels).
    #[test]
    fn the_self_checks_convolution_is_burns() {
        let device = Device::flex();
        let ([n, c, h, w], o) = ([2, 3, 11, 9], 5);
        let g = Geometry {
            kernel: [3, 3],
            stride: [2, 2],
            padding: [1, 1],
        };
        let (x, columns) = (known(n * c, h * w, 3), known(c * 9, o, 4));
        let weight: Vec<f32> = (0..o * c * 9)
            .map(|e| columns[(e % (c * 9)) * o + e / (c * 9)])
            .collect();
        let burns = crate::test_support::flex_conv2d(
            &Tensor::from_data(TensorData::new(x.clone(), [n, c, h, w]), &device),
            &Tensor::from_data(TensorData::new(weight, [o, c, 3, 3]), &device),
            None,
            burn::tensor::ops::ConvOptions::new([2, 2], [1, 1], [1, 1], 1),
        );
        let ours = exact_conv(&x, &columns, [n, c, h, w], o, g);
        let [out_h, out_w] = g.output(h, w);
        assert_eq!(ours.len(), burns.len());
        for (e, &v) in ours.iter().enumerate() {
            let (position, channel) = (e / o, e % o);
            let (image, pixel) = (position / (out_h * out_w), position % (out_h * out_w));
            assert_eq!(
                v,
                burns[(image * o + channel) * out_h * out_w + pixel],
                "{e}"
            );
        }
        assert!(ours.iter().any(|&v| v != ours[0]));
    }

    /// The depth each variant stages at a time, by which its splits of K are counted
    /// ([`super::super::depth_split::split_depth`]).
    #[test]
    fn each_variant_stages_two_of_its_sides() {
        assert_eq!((step(MATMUL_COOP_8), step(MATMUL_COOP_16)), (16, 32));
    }

    /// The comparison passes the answer and refuses a wrong element, a NaN and a short
    /// result, each in one line naming it.
    #[test]
    fn the_comparison_refuses_what_is_wrong() {
        let reference = exact(&known(5, 7, 3), &known(7, 6, 4), [5, 7, 6]);
        assert_eq!(agrees(&reference, &reference), Ok(()));
        let mut rounded = reference.clone();
        let big = reference
            .iter()
            .position(|x| x.abs() > 1.0)
            .expect("a value past 1");
        rounded[big] *= 1.0 + 4e-4;
        assert_eq!(
            agrees(&rounded, &reference),
            Ok(()),
            "within f16's rounding"
        );
        for (i, wrong) in [(7, 1.0), (29, f32::NAN)] {
            let mut bad = reference.clone();
            bad[i] += wrong;
            let why = agrees(&bad, &reference).unwrap_err();
            assert!(why.starts_with(&format!("element {i}: ")), "{why}");
            assert!(!why.contains('\n'));
        }
        let why = agrees(&reference[1..], &reference).unwrap_err();
        assert_eq!(why, "29 values where 30 were due");
    }

    /// On Debian 12's lavapipe, which has no cooperative matrices, the product is never
    /// chosen, whatever `TAKS_GPU_COOP` says, and nothing is launched or checked: f16
    /// products take burn's matmul there.
    #[test]
    fn an_adapter_without_cooperative_matrices_never_takes_them() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        for (kernel, side, subgroup) in VARIANTS {
            let has = crate::gpu::direct::has_cooperative_f16(side, subgroup);
            assert!(!has, "{}: run by scripts/lavapipe-coop.sh?", kernel.name);
        }
        assert!(verdict(&device).is_none());
        let a = Tensor::<2>::from_data(TensorData::new(known(8, 16, 5), [8, 16]), &device)
            .cast(FloatDType::F16);
        let b = a.clone().transpose();
        let (taken, launched) = crate::gpu::launches::count(&device, || product(&a, &b));
        assert!(taken.is_none());
        assert_eq!(launched, 0);
    }

    /// On an adapter with cooperative matrices (Mesa 26's lavapipe, under
    /// `TAKS_GPU_COOP=1`: scripts/test.sh runs this through scripts/lavapipe-coop.sh), the
    /// self-check passes, and every product, of sizes on and off the edges of the blocks
    /// and steps, its operands contiguous or transposed views, its depth split or not, is
    /// the exact one to f16's rounding, in one launch (two where the depth is split): no
    /// padded copy, no transposed copy, no cast. A kernel that
    /// read past an edge, dropped a step or a tile, or ignored a stride is off by whole
    /// values.
    #[test]
    #[ignore = "needs cooperative matrices and TAKS_GPU_COOP=1: scripts/lavapipe-coop.sh"]
    fn the_kernel_multiplies_any_sizes_and_strides() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        let kernel = match verdict(&device) {
            Some(Ok(kernel)) => *kernel,
            other => panic!(
                "cooperative matrices not offered or failed: {other:?} (Mesa 26's lavapipe \
                 offers them with 8-wide subgroups, on a CPU with AVX2)"
            ),
        };
        assert!(VARIANTS.iter().any(|v| v.0 == kernel));
        // On Vulkan the kernel is taks's own SPIR-V (its workgroup memory published, as
        // naga leaves it not), dispatched through wgpu directly.
        assert!(crate::gpu::direct::compiled_here(kernel));
        let on_device = |values: &[f32], dims: [usize; 2], transpose: bool| {
            let dims = if transpose { [dims[1], dims[0]] } else { dims };
            let values = if transpose {
                transposed(values, [dims[1], dims[0]])
            } else {
                values.to_vec()
            };
            let t = Tensor::<2>::from_data(TensorData::new(values, dims), &device)
                .cast(FloatDType::F16);
            if transpose { t.transpose() } else { t }
        };
        // The last one deep enough to split its depth in three (`split_depth`): two
        // launches, the splits' sums added by the second.
        let shapes = [
            [1, 1, 1],
            [64, 64, 64],
            [70, 40, 90],
            [130, 17, 3],
            [3, 200, 65],
            [70, 1000, 90],
        ];
        for (i, [m, k, n]) in shapes.into_iter().enumerate() {
            let (a, b) = (known(m, k, 10 + i as u64), known(k, n, 20 + i as u64));
            let reference = exact(&a, &b, [m, k, n]);
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let (x, y) = (on_device(&a, [m, k], ta), on_device(&b, [k, n], tb));
                let (ours, launched) =
                    crate::gpu::launches::count(&device, || product(&x, &y).expect("taken"));
                let (_, direct) = crate::gpu::launches::direct_launches(&device, || {
                    product(&x, &y).expect("taken")
                });
                assert_eq!(
                    direct, 1,
                    "the product's one launch on the cooperative matrices"
                );
                let split =
                    super::super::depth_split::split_depth(2, [m, n, k], step(kernel)).0 > 1;
                assert_eq!(split, k == 1000, "{m}x{k}x{n}");
                let launches = if split { 2 } else { 1 };
                assert_eq!(launched, launches, "{m}x{k}x{n}, transposed {ta} {tb}");
                assert_eq!(ours.dims(), [m, n]);
                assert_eq!(ours.dtype(), DType::F16);
                let ours = host(ours);
                agrees(&ours, &reference)
                    .unwrap_or_else(|why| panic!("{m}x{k}x{n}, transposed {ta} {tb}: {why}"));
            }
        }
    }
}
