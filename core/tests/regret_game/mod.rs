//! The online game behind the regret bound, played by the production [`Selector`] (the
//! CPU engine on flex, the WGSL engine on a wgpu device), shared by `regret.rs` and
//! `gpu_regret.rs`.
//!
//! Each round t the selector has committed to its k-set d_t (read back before the
//! round); only then is theta_t revealed, as the logits of a two-class problem whose
//! noise-risk is exactly theta_t (see [`logits_for`]), and the selector scores and
//! chooses d_{t+1} as in training. The regret is computed here, from the sets and the
//! intended risks in f64: sum_t d_t . theta_t minus the k smallest entries of
//! sum_t theta_t. The selector's own report (`Update::selection_risk`) is checked
//! against it each round.

use burn::tensor::{Device, Tensor, TensorData};
use taks_core::noise::NoisyLabels;
use taks_core::rng::SplitMix64;
use taks_core::selection::{Engine, Objective, Selector};

/// Logits [n, 2] whose noise-risk (label 0 everywhere) is exactly theta: 0 is a sure
/// class 0 (p = 1 in f32), 1 a sure class 1, 0.25 a tie (argmax 0, p = 1/2).
fn logits_for(theta: &[f32], device: &Device) -> Tensor<2> {
    let rows: Vec<f32> = theta
        .iter()
        .flat_map(|&t| match t {
            0.0 => [40.0, 0.0],
            1.0 => [0.0, 40.0],
            0.25 => [0.0, 0.0],
            _ => panic!("theta {t} is not one of 0, 0.25, 1"),
        })
        .collect();
    Tensor::from_data(TensorData::new(rows, [theta.len(), 2]), device)
}

/// Plays `objective` with seed `seed` against `thetas` and returns the regret.
pub fn play(
    thetas: &[Vec<f32>],
    k: usize,
    objective: Objective,
    seed: u64,
    device: &Device,
    engine: Engine,
) -> f64 {
    let n = thetas[0].len();
    let labels = NoisyLabels {
        true_labels: vec![0; n],
        noisy_labels: vec![0; n],
    };
    let mut selector = Selector::new(objective, k, seed, &labels, device, engine).unwrap();
    assert_eq!(selector.engine(), engine, "the engine asked for runs");
    let mut cumulative = vec![0f64; n];
    let mut total = 0f64;
    for (t, theta) in thetas.iter().enumerate() {
        let chosen = pollster::block_on(selector.current_indices_host()).unwrap();
        assert_eq!(chosen.len(), k);
        // Only now is theta_t revealed.
        let risk: f64 = chosen.iter().map(|&i| theta[i as usize] as f64).sum();
        total += risk;
        let update = pollster::block_on(selector.update(logits_for(theta, device), t + 1)).unwrap();
        assert!(
            (update.selection_risk - risk).abs() < 1e-3,
            "round {}: the selector reports {} for a set that cost {risk}",
            t + 1,
            update.selection_risk
        );
        cumulative
            .iter_mut()
            .zip(theta)
            .for_each(|(l, &x)| *l += x as f64);
    }
    cumulative.sort_by(f64::total_cmp);
    total - cumulative[..k].iter().sum::<f64>()
}

/// The regrets of `seeds` independent plays.
pub fn regrets(
    thetas: &[Vec<f32>],
    k: usize,
    objective: Objective,
    seeds: u64,
    device: &Device,
    engine: Engine,
) -> Vec<f64> {
    (1..=seeds)
        .map(|s| play(thetas, k, objective, s, device, engine))
        .collect()
}

/// Mean and standard error.
pub fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

/// The k "clean" samples (a random set) always cost 0, the other n - k always 1: the
/// best set is plain, and a selector pays 1 for every other sample it keeps.
pub fn constant_gap(n: usize, k: usize, rounds: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut cost = vec![1f32; n];
    SplitMix64::for_stream(seed, "clean set")
        .sample_indices(n, k)
        .into_iter()
        .for_each(|i| cost[i as usize] = 0.0);
    vec![cost; rounds]
}

/// k random "clean" samples cost 1 with probability 0.35 each round, the other n - k
/// with probability 0.65 (else 0), independently. (Played on the CPU engine only.)
#[allow(
    dead_code,
    reason = "gpu_regret.rs includes this module too and does not use it"
)]
pub fn stochastic(n: usize, k: usize, rounds: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = SplitMix64::for_stream(seed, "stochastic risks");
    let mut p = vec![0.65; n];
    rng.sample_indices(n, k)
        .into_iter()
        .for_each(|i| p[i as usize] = 0.35);
    (0..rounds)
        .map(|_| {
            p.iter()
                .map(|&p| if rng.next_f64() < p { 1.0 } else { 0.0 })
                .collect()
        })
        .collect()
}

/// Built to defeat hindsight-chasing. n = 2k: group A (0..k) and group B (k..2k).
/// Round 1 costs A 0.25 and B 0; after that B costs 1 in even rounds and A in odd
/// rounds, so the leader (and the latest winner) is always the group about to cost 1.
pub fn alternating(k: usize, rounds: usize) -> Vec<Vec<f32>> {
    (1..=rounds)
        .map(|t| {
            let (a, b) = match t {
                1 => (0.25, 0.0),
                t if t % 2 == 0 => (0.0, 1.0),
                _ => (1.0, 0.0),
            };
            (0..2 * k).map(|i| if i < k { a } else { b }).collect()
        })
        .collect()
}
