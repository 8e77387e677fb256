//! The f16 matrix product on cooperative matrices (`shaders/matmul_coop_f16.wgsl`): a
//! mixed-precision step's im2col products on a GPU's matrix units (tensor cores), f16
//! operands of any strides, f32 sums and an f16 result, in one launch per product,
//! where the adapter offers wgpu's cooperative matrices.
//!
//! Why: PyTorch's f16 (autocast) convolutions run on tensor cores, several times the
//! card's plain arithmetic, and no WGSL kernel of burn's uses them (docs/gpu.md). The
//! kernel has two variants ([`VARIANTS`]): 16 x 16 tiles on 32-wide subgroups, what
//! NVIDIA's cards list, and 8 x 8 tiles on 8-wide subgroups, what Mesa 26's lavapipe
//! lists, so that the tests run the kernel on a CPU (scripts/lavapipe-coop.sh); WebGPU
//! has no cooperative matrices. Why behind a switch: on an H200 an earlier version of
//! the kernel (operands copied into padded tensors, the result cast) made the f16
//! epochs slower than burn's f16 matmul, and this one has not met a GPU yet
//! (docs/benchmarks.md, "Mixed precision and cooperative matrices on an H200"). So it
//! runs only under `TAKS_GPU_COOP=1` ([`crate::plan::Switches::coop`]), on a device that
//! has a variant's shape and subgroup size, and once its [`self_check`] passed: products
//! of known values against the exact ones, the verdict kept for the process (which has
//! one wgpu device: [`crate::gpu::direct::start`]). `taks` first has a child process
//! run the same check, so that a driver that crashes on the kernel takes only the child
//! down, and [`refuse`]s the kernel where the child failed. A failed check is one line
//! in the device's description and every product goes to burn's matmul.

use std::sync::OnceLock;

use burn::tensor::{DType, Device, FloatDType, Tensor, TensorData};

use crate::gpu::kernels::{MATMUL_COOP_8, MATMUL_COOP_16};
use crate::gpu::{Shader, bridge};
use crate::plan::{Kernel, Switches};

/// The side of the block of the output one workgroup computes.
const BLOCK: usize = 64;

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
    let kernel = *verdict(&a.device())?.as_ref().ok()?;
    launch(kernel, a, b)
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

/// The product of `a` and `b` (on wgpu, cast to f16 if they are not) on `kernel`, read
/// through their strides, as a contiguous f16 tensor; `None` off wgpu, for an empty
/// product (no block to launch: burn's matmul returns the empty tensor), or where an
/// address passes 32 bits.
fn launch(kernel: Shader, a: &Tensor<2>, b: &Tensor<2>) -> Option<Tensor<2>> {
    let ([m, k], [depth, n]) = (a.dims(), b.dims());
    assert_eq!(k, depth, "a's columns are b's rows");
    if m == 0 || n == 0 {
        return None;
    }
    let (a, b) = (
        bridge::float_strided_as(a, DType::F16)?,
        bridge::float_strided_as(b, DType::F16)?,
    );
    let ([a0, a1], [b0, b1]) = (strides(&a)?, strides(&b)?);
    let under_32 = |v: usize| v < u32::MAX as usize;
    let reach = |[rows, cols]: [usize; 2], [s0, s1]: [usize; 2]| {
        rows.saturating_sub(1)
            .checked_mul(s0)?
            .checked_add(cols.saturating_sub(1).checked_mul(s1)?)
    };
    if !(reach([m, k], [a0, a1]).is_some_and(under_32)
        && reach([k, n], [b0, b1]).is_some_and(under_32)
        && m.checked_mul(n).is_some_and(under_32))
    {
        return None;
    }
    let along_n = n.div_ceil(BLOCK);
    let blocks = u32::try_from(m.div_ceil(BLOCK) * along_n).ok()?;
    let params = bridge::upload_sizes(
        &a.client,
        &[
            m,
            n,
            k,
            a0,
            a1,
            b0,
            b1,
            along_n,
            // Loads along the contiguous direction: k is A's columns, B's rows.
            usize::from(a1 == 1),
            usize::from(b0 == 1),
        ],
    )?;
    let c = bridge::empty_1d(&a, m * n, DType::F16);
    bridge::launch(
        &a.client,
        kernel,
        bridge::grid(blocks),
        &[&a.handle, &b.handle, &c.handle, &params],
    );
    Some(bridge::to_matrix(c, m, n))
}

/// The two strides of a matrix's buffer, in elements.
fn strides(t: &burn::backend::wgpu::CubeTensor) -> Option<[usize; 2]> {
    match t.meta.strides()[..] {
        [rows, cols] => Some([rows, cols]),
        _ => None,
    }
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
/// columns past whole blocks and steps, two depth steps, four blocks) on `kernel` and
/// `device`, against [`exact`]: the operands as they are, and both as transposed views
/// (read through their strides).
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
    Ok(())
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
    /// and steps, its operands contiguous or transposed views, is the exact one to f16's
    /// rounding, in one launch: no padded copy, no transposed copy, no cast. A kernel that
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
        let shapes = [
            [1, 1, 1],
            [64, 64, 64],
            [70, 40, 90],
            [130, 17, 3],
            [3, 200, 65],
        ];
        for (i, [m, k, n]) in shapes.into_iter().enumerate() {
            let (a, b) = (known(m, k, 10 + i as u64), known(k, n, 20 + i as u64));
            let reference = exact(&a, &b, [m, k, n]);
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let (x, y) = (on_device(&a, [m, k], ta), on_device(&b, [k, n], tb));
                let (ours, launched) =
                    crate::gpu::launches::count(&device, || product(&x, &y).expect("taken"));
                assert_eq!(launched, 1, "{m}x{k}x{n}, transposed {ta} {tb}");
                assert_eq!(ours.dims(), [m, n]);
                assert_eq!(ours.dtype(), DType::F16);
                let ours = host(ours);
                agrees(&ours, &reference)
                    .unwrap_or_else(|why| panic!("{m}x{k}x{n}, transposed {ta} {tb}: {why}"));
            }
        }
    }
}
