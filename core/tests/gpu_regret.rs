//! The regret bound of `taks_core::regret` played out by the WGSL selection engine on a
//! wgpu device (lavapipe here), as `regret.rs` plays the CPU engine: the kernels that
//! score, accumulate, perturb and select in training are the ones under test. Fewer
//! rounds and sizes than on the CPU (each round reads the set back from the device,
//! about 9 ms on lavapipe): 16 seeds for FPL, 4 for the deterministic Follow-the-Leader
//! and Greedy (only their first set is random).

mod regret_game;

use regret_game::{alternating, constant_gap, mean_se, regrets};
use taks_core::regret::fpl_bound;
use taks_core::selection::{Engine, Objective};

const SEEDS: u64 = 16;

#[test]
fn the_wgsl_engine_stays_under_the_bound_where_follow_the_leader_and_greedy_do_not() {
    let device = taks_core::gpu::direct::start().expect("a wgpu adapter").0;
    let mut report = String::new();
    let mut mean_regret = |thetas: &[Vec<f32>], k: usize, objective: Objective, bound: f64| {
        let (n, rounds) = (thetas[0].len(), thetas.len());
        let seeds = match objective {
            Objective::Perturbed { eta } if eta > 0.0 => SEEDS,
            _ => 4,
        };
        let (mean, se) = mean_se(&regrets(thetas, k, objective, seeds, &device, Engine::Wgsl));
        report += &format!(
            "n {n:4} k {k:3} T {rounds} {objective:?}: mean regret {mean:8.1} +- {se:5.1} = {:.3} x bound {bound:.1}\n",
            mean / bound
        );
        (mean, se)
    };

    let rounds = 100;
    let t = rounds as f64;
    // The bound's best eta at the largest k-set, the paper's eta where the bound is
    // tightest and at k = 1.
    for (n, k, eta) in [
        (1000, 500, t.sqrt() / 2.0),
        (48, 12, (12.0 * t).sqrt()),
        (1000, 1, t.sqrt()),
    ] {
        let thetas = constant_gap(n, k, rounds, 3);
        {
            let bound = fpl_bound(eta, n, k, rounds);
            let (mean, se) = mean_regret(&thetas, k, Objective::Perturbed { eta }, bound);
            assert!(
                mean <= bound + 3.0 * se,
                "n {n} k {k} eta {eta}: {mean} +- {se} > {bound}"
            );
            assert!(
                mean > 0.2 * bound,
                "n {n} k {k} eta {eta}: {mean} is far below {bound}"
            );
        }
    }

    let k = 10;
    let thetas = alternating(k, rounds);
    let eta = t.sqrt() / 2.0;
    let bound = fpl_bound(eta, 2 * k, k, rounds);
    let (mean, se) = mean_regret(&thetas, k, Objective::Perturbed { eta }, bound);
    assert!(
        mean <= bound + 3.0 * se,
        "FPL on alternating: {mean} +- {se} > {bound}"
    );
    for objective in [Objective::Perturbed { eta: 0.0 }, Objective::Greedy] {
        let (mean, se) = mean_regret(&thetas, k, objective, bound);
        assert!(
            mean - 3.0 * se > bound,
            "{objective:?} on alternating: {mean} within {bound}"
        );
    }
    print!("{report}");
}
