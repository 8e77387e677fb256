//! The f16 matrix product on cooperative matrices (`shaders/matmul_coop_f16.wgsl`): a
//! mixed-precision step's im2col products on a GPU's matrix units (tensor cores), f16
//! operands and f32 sums, where the adapter offers wgpu's cooperative matrices.
//!
//! Why: PyTorch's f16 (autocast) convolutions run on tensor cores, several times the
//! card's plain arithmetic, and no WGSL kernel of burn's uses them (docs/gpu.md). Why
//! behind a switch and a self-check: no adapter the tests run on has cooperative
//! matrices (lavapipe lists no `VK_KHR_cooperative_matrix`, and WebGPU has none), so the
//! tests check the kernel offline only (naga and `spirv-val`, in `taks-shaders`' tests),
//! and on an H200, where the check passed, the f16 epochs were slower with it than with
//! burn's f16 matmul, each product's padding copies and cast adding launches
//! (docs/benchmarks.md, "Mixed precision and cooperative matrices on an H200"). So it runs only under `TAKS_GPU_COOP=1`
//! ([`crate::plan::Switches::coop`]), on a device that has the feature, and once its
//! [`self_check`] passed: a product of known values against the exact one, the verdict
//! kept for the process (which has one wgpu device: [`crate::gpu::direct::start`]). A
//! failed check is one line in the device's description (`taks`) and every product
//! goes to burn's matmul.

use std::sync::OnceLock;

use burn::tensor::ops::PadMode;
use burn::tensor::{DType, Device, FloatDType, Tensor, TensorData};

use crate::gpu::bridge;
use crate::gpu::kernels::MATMUL_COOP_F16;
use crate::plan::{Kernel, Switches};

/// The side of the block of the output one workgroup computes; the rows and columns are
/// padded to it.
const BLOCK: usize = 64;
/// The depth of one cooperative product; the depth is padded to it.
const STEP: usize = 16;

/// `a` `[M, K]` times `b` `[K, N]`, both f16, as f16, on cooperative matrices: `None`
/// where the plan does not choose them (off wgpu, another type, the switch off, a device
/// without them, a failed self-check, a size past 32 bits), and the caller takes burn's.
pub(crate) fn product(a: &Tensor<2>, b: &Tensor<2>) -> Option<Tensor<2>> {
    if !(Kernel::CoopMatmul.runs_for(a) && Kernel::CoopMatmul.runs_for(b)) {
        return None;
    }
    verdict(&a.device())?.as_ref().ok()?;
    Some(launch(a, b)?.cast(FloatDType::F16))
}

/// The self-check's verdict on this process's device, run the first time it is asked:
/// `None` where the product is not offered at all (the switch off, or a device without
/// cooperative matrices), else whether it passed, and if not, why, in one line.
pub fn verdict(device: &Device) -> Option<&'static Result<(), String>> {
    if !Switches::current().coop || !crate::gpu::direct::has_cooperative_f16() {
        return None;
    }
    static VERDICT: OnceLock<Result<(), String>> = OnceLock::new();
    Some(VERDICT.get_or_init(|| self_check(device)))
}

/// The product of `a` and `b` (f16, on wgpu) as f32, padded, launched, and cut back.
fn launch(a: &Tensor<2>, b: &Tensor<2>) -> Option<Tensor<2>> {
    let ([m, k], [depth, n]) = (a.dims(), b.dims());
    assert_eq!(k, depth, "a's columns are b's rows");
    let (mp, kp, np) = (
        m.next_multiple_of(BLOCK),
        k.next_multiple_of(STEP),
        n.next_multiple_of(BLOCK),
    );
    let zero = || PadMode::Constant(0.0);
    let a = bridge::float_as(
        &a.clone().pad([(0, mp - m), (0, kp - k)], zero()),
        DType::F16,
    )?;
    let b = bridge::float_as(
        &b.clone().pad([(0, kp - k), (0, np - n)], zero()),
        DType::F16,
    )?;
    let blocks = u32::try_from((mp / BLOCK) * (np / BLOCK)).ok()?;
    let params = bridge::upload_sizes(&a.client, &[mp, np, kp, np / BLOCK])?;
    let c = bridge::empty_1d(&a, mp * np, DType::F32);
    bridge::launch(
        &a.client,
        MATMUL_COOP_F16,
        bridge::grid(blocks),
        &[&a.handle, &b.handle, &c.handle, &params],
    );
    Some(bridge::to_matrix(c, mp, np).slice([0..m, 0..n]))
}

/// The operands of the self-check: `[rows, cols]` values that are multiples of 1/8 in
/// [-2, 2], exact in f16, with every product and every sum of up to 64 of them exact in
/// f32, so that the right answer is known to the bit.
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

/// One product off every edge of the tiles (70 x 40 times 40 x 90: padded rows, depth
/// and columns, three depth steps, four blocks) on `device`, against [`exact`].
fn self_check(device: &Device) -> Result<(), String> {
    let [m, k, n] = [70, 40, 90];
    let (a, b) = (known(m, k, 1), known(k, n, 2));
    let on_device = |values: &[f32], dims: [usize; 2]| {
        Tensor::<2>::from_data(TensorData::new(values.to_vec(), dims), device).cast(FloatDType::F16)
    };
    let ours = launch(&on_device(&a, [m, k]), &on_device(&b, [k, n]))
        .ok_or("cooperative matrices: the self-check's product did not launch")?;
    let ours = ours
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .map_err(|e| format!("cooperative matrices: reading the self-check back: {e:?}"))?;
    agrees(&ours, &exact(&a, &b, [m, k, n]))
        .map_err(|why| format!("cooperative matrices failed their self-check ({why})"))
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

    /// On lavapipe, which has no cooperative matrices, the product is never chosen,
    /// whatever `TAKS_GPU_COOP` says, and nothing is launched or checked: f16 products
    /// take burn's matmul there.
    #[test]
    fn an_adapter_without_cooperative_matrices_never_takes_them() {
        let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
        assert!(!crate::gpu::direct::has_cooperative_f16());
        assert!(verdict(&device).is_none());
        let a = Tensor::<2>::from_data(TensorData::new(known(8, 16, 5), [8, 16]), &device)
            .cast(FloatDType::F16);
        let b = a.clone().transpose();
        let (taken, launched) = crate::gpu::launches::count(&device, || product(&a, &b));
        assert!(taken.is_none());
        assert_eq!(launched, 0);
    }
}
