//! The WGSL kernels of `taks_core` (selection and Adam) against a plain CPU computation, on a wgpu device
//! (`DeviceKind::DefaultDevice`: a real GPU when there is one, Mesa lavapipe here; override
//! with `CUBECL_WGPU_DEFAULT_DEVICE=Cpu`). Sizes 1, 1000, 100_003 and (selection) 1_048_583 with ties, NaN, ±0 and
//! ±inf. Kept to one process and few shapes: the first shader compile on a software adapter
//! takes tens of seconds.

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use taks_core::gpu;
use taks_core::ops::adam::Scalars;
use taks_core::ops::adam::gpu as adam_gpu;
use taks_core::plan::Switches;
use taks_core::rng::perturbation;
use taks_core::selection::cpu_reference as reference;
use taks_core::selection::{self, RiskMode, RiskParams};

fn device() -> Device {
    gpu::direct::start().expect("a wgpu adapter").0
}

/// Small deterministic generator for test data (not the kernel's generator).
struct Lcg(u64);
impl Lcg {
    fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn uniform(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / 16777216.0
    }
}

// ---- CPU reference: the crate's own oracle ----------------------------------------

fn gaussian(seed: u32, epoch: u32, i: u32) -> f32 {
    perturbation(seed, epoch, i)
}

/// (theta, new L, objective) for one row.
fn risk_row(row: &[f32], label: i32, l: f32, p: RiskParams, i: u32) -> (f32, f32, f32) {
    if row.iter().any(|v| v.is_nan()) {
        return (f32::NAN, f32::NAN, f32::NAN);
    }
    let theta = reference::noise_risk(row, row.len(), &[label as u32])[0];
    let new_l = l + theta;
    let obj = match p.mode {
        RiskMode::Perturbed => new_l + p.eta * gaussian(p.seed, p.epoch, i),
        RiskMode::Greedy => theta,
    };
    (theta, new_l, obj)
}

/// Indices of the k smallest by (key, index), ascending index order.
fn select_ref(obj: &[f32], k: usize) -> Vec<i32> {
    reference::k_smallest(obj, k)
        .into_iter()
        .map(|i| i as i32)
        .collect()
}

// ---- helpers -------------------------------------------------------------------------

fn floats(t: Tensor<1>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
}

fn ints(t: Tensor<1, Int>) -> Vec<i32> {
    t.into_data().convert::<i32>().try_to_vec::<i32>().unwrap()
}

fn close(a: f32, b: f32, tol: f32) -> bool {
    (a.is_nan() && b.is_nan()) || (a - b).abs() <= tol * (1.0 + b.abs())
}

/// Objective values with heavy ties, NaN, ±0 and ±inf.
fn tricky_objective(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Lcg(seed);
    (0..n)
        .map(|i| match rng.next_u32() % 40 {
            0 => f32::NAN,
            1 => -f32::NAN,
            2 => 0.0,
            3 => -0.0,
            4 => f32::INFINITY,
            5 => f32::NEG_INFINITY,
            6..=20 => ((rng.uniform() * 8.0).floor() - 4.0) * 0.25, // 8 tied levels
            _ => (rng.uniform() - 0.5) * 10.0 + (i % 3) as f32 * 1e-7,
        })
        .collect()
}

// ---- tests ---------------------------------------------------------------------------

#[test]
fn noise_risk_matches_cpu() {
    let dev = device();
    let c = 10;
    for (n, params) in [
        (
            1usize,
            RiskParams {
                seed: 7,
                epoch: 0,
                eta: 0.5,
                mode: RiskMode::Perturbed,
            },
        ),
        (
            1000,
            RiskParams {
                seed: 42,
                epoch: 3,
                eta: 2.0,
                mode: RiskMode::Perturbed,
            },
        ),
        (
            1000,
            RiskParams {
                seed: 42,
                epoch: 3,
                eta: 0.0,
                mode: RiskMode::Perturbed,
            },
        ),
        (
            1000,
            RiskParams {
                seed: 1,
                epoch: 9,
                eta: 1.0,
                mode: RiskMode::Greedy,
            },
        ),
        (
            100_003,
            RiskParams {
                seed: 0xdead_beef,
                epoch: 17,
                eta: 0.7,
                mode: RiskMode::Perturbed,
            },
        ),
    ] {
        let mut rng = Lcg(n as u64 * 31 + params.epoch as u64);
        let mut logits: Vec<f32> = (0..n * c).map(|_| (rng.uniform() - 0.5) * 12.0).collect();
        let labels: Vec<i32> = (0..n).map(|_| (rng.next_u32() % c as u32) as i32).collect();
        let cum: Vec<f32> = (0..n).map(|_| rng.uniform() * 5.0).collect();
        if n > 10 {
            logits[3 * c + 4] = f32::NAN; // a NaN row
            logits[5 * c..6 * c].fill(1.0); // all tied: argmax is index 0
            logits[7 * c + 2] = 9.0; // tied maximum at 2 and 8: argmax is 2
            logits[7 * c + 8] = 9.0;
        }
        let x = Tensor::<2>::from_data(TensorData::new(logits.clone(), [n, c]), &dev);
        let y =
            Tensor::<1, Int>::from_data(TensorData::new(labels.clone(), [n]), (&dev, DType::I32));
        let l = Tensor::<1>::from_data(TensorData::new(cum.clone(), [n]), &dev);

        let out = selection::noise_risk_objective(&x, &y, &l, params).expect("on a wgpu device");
        let (theta, new_l, obj) = (
            floats(out.theta),
            floats(out.cumulative),
            floats(out.objective),
        );
        let mut worst = 0.0f32;
        for i in 0..n {
            let (t, nl, o) = risk_row(
                &logits[i * c..(i + 1) * c],
                labels[i],
                cum[i],
                params,
                i as u32,
            );
            assert!(
                close(theta[i], t, 1e-5),
                "n={n} i={i}: theta {} vs {}",
                theta[i],
                t
            );
            assert!(
                close(new_l[i], nl, 1e-5),
                "n={n} i={i}: L {} vs {}",
                new_l[i],
                nl
            );
            assert!(
                close(obj[i], o, 1e-4),
                "n={n} i={i}: objective {} vs {}",
                obj[i],
                o
            );
            if !o.is_nan() {
                worst = worst.max((obj[i] - o).abs());
            }
            if params.mode == RiskMode::Greedy {
                assert_eq!(obj[i].to_bits(), theta[i].to_bits());
            }
        }
        if n > 10 {
            assert!(theta[3].is_nan() && obj[3].is_nan() && new_l[3].is_nan());
        }
        eprintln!("noise_risk n={n} {params:?}: max |objective - cpu| = {worst:e}");
    }
}

#[test]
fn select_matches_cpu() {
    let dev = device();
    // 1,048,583: over a million, and prime, so no block or digit boundary lines up.
    for n in [1usize, 1000, 100_003, 1_048_583] {
        let values = tricky_objective(n, n as u64);
        let t = Tensor::<1>::from_data(TensorData::new(values.clone(), [n]), &dev);
        let mut ks = vec![0, 1, n / 2, n.saturating_sub(1), n];
        ks.sort_unstable();
        ks.dedup();
        for k in ks {
            let sel = selection::select_k_smallest(&t, k).expect("on a wgpu device");
            let (mask, idx) = (floats(sel.mask), ints(sel.indices));
            let want = select_ref(&values, k);
            assert_eq!(idx.len(), k, "n={n} k={k}");
            assert!(
                idx == want,
                "n={n} k={k}: indices differ (first diff at {:?})",
                idx.iter().zip(&want).position(|(a, b)| a != b)
            );
            let mut want_mask = vec![0.0f32; n];
            for &i in &want {
                want_mask[i as usize] = 1.0;
            }
            assert_eq!(mask, want_mask, "n={n} k={k}: mask");
            eprintln!("select n={n} k={k}: ok");
        }
    }
}

/// taks's kernels go through wgpu directly exactly when the plan is handed
/// `direct` (`TAKS_GPU_DIRECT=1`'s switch) or off burn's WGSL compiler (the route burn's
/// SPIR-V and MSL builds take): both settings in this one process, the expectation
/// written out here, so a plan that ignored the switch fails.
#[test]
fn kernels_go_direct_exactly_under_the_switch() {
    let dev = device();
    let values: Vec<f32> = (0..1000).map(|i| ((i * 37) % 1000) as f32).collect();
    let t = Tensor::<1>::from_data(TensorData::new(values, [1000]), &dev);
    let wgsl = gpu::compiler(&dev) == Some("wgpu<wgsl>");
    // The noise risk of 100 samples, launched both ways: the same values.
    let (n, c): (usize, usize) = (100, 10);
    let logits: Vec<f32> = (0..n * c).map(|i| ((i * 7) % 13) as f32 / 4.0).collect();
    let logits = Tensor::<2>::from_data(TensorData::new(logits, [n, c]), &dev);
    let labels: Vec<i32> = (0..n).map(|i| (i % c) as i32).collect();
    let labels = Tensor::<1, Int>::from_data(TensorData::new(labels, [n]), (&dev, DType::I32));
    let cumulative = Tensor::<1>::zeros([n], &dev);
    let params = RiskParams {
        seed: 3,
        epoch: 1,
        eta: 0.1,
        mode: RiskMode::Perturbed,
    };
    let mut risk_before: Option<Vec<f32>> = None;
    for direct in [false, true] {
        let switches = Switches {
            direct,
            ..Switches::environment()
        };
        let ((sel, risk), launched) = switches.during(|| {
            gpu::launches::direct_launches(&dev, || {
                let sel = selection::select_k_smallest(&t, 10).expect("on a wgpu device");
                let risk = selection::noise_risk_objective(&logits, &labels, &cumulative, params)
                    .expect("on a wgpu device");
                (sel, floats(risk.objective))
            })
        });
        // Values 0 to 9 sit where i 37 = v (mod 1000), i = 973 v (mod 1000).
        let mut chosen = ints(sel.indices);
        chosen.sort_unstable();
        let mut smallest: Vec<_> = (0..10).map(|v| v * 973 % 1000).collect();
        smallest.sort_unstable();
        assert_eq!(chosen, smallest);
        assert_eq!(
            risk,
            risk_before.get_or_insert_with(|| risk.clone()).clone()
        );
        if direct || !wgsl {
            assert!(
                launched > 0,
                "direct {direct}, WGSL {wgsl}: none went directly"
            );
        } else {
            assert_eq!(launched, 0, "kernels went directly without the switch");
        }
    }
}

#[test]
fn risk_then_select_stays_on_device() {
    let dev = device();
    let (n, c) = (5000, 10);
    let mut rng = Lcg(99);
    let logits: Vec<f32> = (0..n * c).map(|_| rng.uniform() * 4.0).collect();
    let labels: Vec<i32> = (0..n).map(|_| (rng.next_u32() % c as u32) as i32).collect();
    let x = Tensor::<2>::from_data(TensorData::new(logits, [n, c]), &dev);
    let y = Tensor::<1, Int>::from_data(TensorData::new(labels, [n]), (&dev, DType::I32));
    let l = Tensor::<1>::zeros([n], &dev);
    let params = RiskParams {
        seed: 3,
        epoch: 1,
        eta: 0.1,
        mode: RiskMode::Perturbed,
    };
    let out = selection::noise_risk_objective(&x, &y, &l, params).unwrap();
    let sel = selection::select_k_smallest(&out.objective, 1234).unwrap();
    let obj = floats(out.objective);
    assert_eq!(ints(sel.indices), select_ref(&obj, 1234));
    assert_eq!(floats(sel.mask).iter().sum::<f32>(), 1234.0);
}

#[test]
fn adam_matches_cpu() {
    let dev = device();
    for (n, time) in [(1usize, 1), (1000, 3), (100_003, 40)] {
        let mut rng = Lcg(n as u64);
        let mut draw =
            |scale: f32| -> Vec<f32> { (0..n).map(|_| (rng.uniform() - 0.5) * scale).collect() };
        let (x, g, m) = (draw(2.0), draw(0.2), draw(0.05));
        let v: Vec<f32> = draw(0.02).into_iter().map(f32::abs).collect();
        let (beta_1, beta_2, lr) = (0.9f32, 0.999f32, 1e-3f32);
        let s = Scalars::at(time as usize, lr, beta_1, beta_2, 1e-8);
        assert_eq!(
            (s.keep_1, s.keep_2, s.correction_2, s.step_size),
            (
                1.0 - beta_1,
                1.0 - beta_2,
                1.0 - beta_2.powi(time),
                lr / (1.0 - beta_1.powi(time))
            )
        );
        let t =
            |values: &[f32]| Tensor::<1>::from_data(TensorData::new(values.to_vec(), [n]), &dev);
        let (x_out, m_out, v_out) =
            adam_gpu::update(&t(&x), &t(&g), &t(&m), &t(&v), s).expect("on wgpu");
        let (x_out, m_out, v_out) = (floats(x_out), floats(m_out), floats(v_out));
        for i in 0..n {
            let m1 = m[i] * beta_1 + g[i] * (1.0 - beta_1);
            let v1 = v[i] * beta_2 + g[i] * g[i] * (1.0 - beta_2);
            let x1 = x[i] - m1 / ((v1 / s.correction_2).sqrt() + s.epsilon) * s.step_size;
            assert!(
                close(m_out[i], m1, 1e-6),
                "n {n}, m[{i}]: {} vs {m1}",
                m_out[i]
            );
            assert!(
                close(v_out[i], v1, 1e-6),
                "n {n}, v[{i}]: {} vs {v1}",
                v_out[i]
            );
            // The step itself moves x by about lr; compare the step, not just x.
            let (step, expected) = (x_out[i] - x[i], x1 - x[i]);
            assert!(
                (step - expected).abs()
                    <= 1e-5 * expected.abs().max(lr) + 2.0 * f32::EPSILON * x[i].abs(),
                "n {n}, x[{i}]: step {step} vs {expected}"
            );
        }
    }
    let flex = Tensor::<1>::zeros([3], &Device::flex());
    let s = Scalars::at(1, 0.01, 0.9, 0.999, 1e-8);
    assert!(adam_gpu::update(&flex, &flex, &flex, &flex, s).is_none());
}

#[test]
fn other_devices_fall_back() {
    let dev = Device::flex();
    let x = Tensor::<2>::zeros([4, 3], &dev);
    let y = Tensor::<1, Int>::zeros([4], &dev);
    let l = Tensor::<1>::zeros([4], &dev);
    let p = RiskParams {
        seed: 0,
        epoch: 0,
        eta: 1.0,
        mode: RiskMode::Perturbed,
    };
    assert!(!gpu::supports(&l));
    assert!(gpu::supports(&Tensor::<1>::zeros([2], &device())));
    assert!(gpu::supports(&Tensor::<1>::zeros(
        [2],
        &device().autodiff()
    )));
    assert!(selection::noise_risk_objective(&x, &y, &l, p).is_none());
    assert!(selection::select_k_smallest(&l, 2).is_none());
}

#[test]
fn autodiff_inputs_and_empty_shapes() {
    let dev = device().autodiff();
    let (n, c) = (300, 4);
    let mut rng = Lcg(8);
    let logits: Vec<f32> = (0..n * c).map(|_| rng.uniform()).collect();
    let labels: Vec<i32> = (0..n).map(|_| (rng.next_u32() % c as u32) as i32).collect();
    let x = Tensor::<2>::from_data(TensorData::new(logits, [n, c]), &dev).require_grad();
    let y = Tensor::<1, Int>::from_data(TensorData::new(labels, [n]), (&dev, DType::I32));
    let l = Tensor::<1>::zeros([n], &dev);
    let p = RiskParams {
        seed: 1,
        epoch: 2,
        eta: 0.3,
        mode: RiskMode::Perturbed,
    };
    let out =
        selection::noise_risk_objective(&x, &y, &l, p).expect("autodiff on wgpu is still wgpu");
    let sel = selection::select_k_smallest(&out.objective, 17).unwrap();
    assert_eq!(ints(sel.indices), select_ref(&floats(out.objective), 17));

    // n = 0
    let dev = device();
    let x = Tensor::<2>::zeros([0, 3], &dev);
    let y = Tensor::<1, Int>::zeros([0], &dev);
    let l = Tensor::<1>::zeros([0], &dev);
    let out = selection::noise_risk_objective(&x, &y, &l, p).unwrap();
    assert_eq!(out.objective.dims(), [0]);
    let sel = selection::select_k_smallest(&l, 0).unwrap();
    assert_eq!((sel.mask.dims(), sel.indices.dims()), ([0], [0]));
}
