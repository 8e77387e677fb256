//! The regret bounds a run reports beside its measured regret, and why [`fpl_bound`]
//! (the `regret_bound` column of `metrics.csv`) is the one that holds.
//!
//! TAkS's selector is Follow-the-Perturbed-Leader over k-sets: in round t it trains on
//! the k smallest of `L_{t-1} + eta r_t`, r_t ~ N(0, I_n) fresh each round, and the
//! regret after t rounds is the total risk of its sets minus that of the best fixed
//! k-set in hindsight.
//!
//! **What holds** ([`fpl_bound`]). For any fixed eta > 0 and any loss sequence in
//! [0, 1]^n fixed in advance,
//!
//! ```text
//! E[R_t] <= eta G + t G / (4 eta),    G = E[sum of the k largest of n iid N(0, 1)]
//! ```
//!
//! by the Gaussian-smoothing analysis of FTPL (Abernethy, Lee, Sinha, Tewari, "Online
//! Linear Optimization via Smoothing", COLT 2014). Write Phi(g) = max over k-sets x of
//! <x, g> (gains g = -L) and Phi~ its smoothing E[Phi(g + eta Z)], whose gradient is the
//! expected play. Their Lemma gives E[R_t] <= (Phi~(0) - Phi(0)) + sum_s D_s, where
//! Phi~(0) - Phi(0) = eta G and D_s is the Bregman divergence of Phi~ between rounds,
//! at most half of sup l^T H l over the Hessian H of Phi~. By Stein's lemma
//! H = E[x*(g + eta Z) Z^T] / eta, so trace(H) = E[<x*, Z>] / eta <= G / eta. Choosing
//! the k largest is monotone, so raising sample j's gain never raises sample i's
//! chance of being chosen: H's off-diagonal entries are <= 0, and every k-set has
//! exactly k members, so H's rows sum to 0. Such an H is a graph Laplacian:
//! l^T H l = sum_{i<j} (-H_ij)(l_i - l_j)^2 <= trace(H) / 2 when every l_i lies in
//! [0, 1]. So D_s <= G / (4 eta). The issue that asked for this bound derived it
//! without the Laplacian step, with t G / (2 eta); the tighter form is the same
//! argument, and the tests (`core/tests/regret.rs`) check it against the production
//! selectors. At eta = sqrt(t) / 2 it is G sqrt(t) <= sqrt(2 k t ln C(n, k)), since
//! G <= sqrt(2 k ln C(n, k)) (the maximum of C(n, k) Gaussians of variance k).
//!
//! **What the paper prints** ([`paper_bound`]): 2 sqrt(2 k T ln C(n, k)) with
//! eta = sqrt(kT). It fails at that eta once k grows: with the k best samples costing
//! 0 and the rest 1, FPL's mean regret at n = 200, k = 100, T = 2000 is 2.39 times it,
//! and 0.99 times the bound above (`core/tests/regret.rs` measures both). Runs use
//! eta = eta_ratio sqrt(kT) with the paper's tuned eta_ratio (0.0005 to 0.005,
//! `settings::paper`) anyway, for which it was never claimed.
//! It stays in `metrics.csv` as `paper_bound`, labelled as the printed formula.
//!
//! **In training the bound is a diagnostic**, not a guarantee: theta_t is measured after
//! the network trained on d_t, so the loss reacts to the learner's own draw, and no
//! online-learning bound covers such a sequence.

mod width;

pub use width::gaussian_width;

use crate::selection::Objective;

/// ln C(n, k), summed term by term (exact enough and never overflows).
pub fn ln_choose(n: usize, k: usize) -> f64 {
    let k = k.min(n - k.min(n));
    (1..=k).map(|i| ((n - k + i) as f64 / i as f64).ln()).sum()
}

/// The bound on FPL's expected regret after `t` rounds at perturbation scale `eta`
/// (> 0): eta G + t G / (4 eta) (see the module doc). Infinite at eta = 0:
/// Follow-the-Leader has no such guarantee.
pub fn fpl_bound(eta: f64, n: usize, k: usize, t: usize) -> f64 {
    let g = gaussian_width(n, k);
    if g == 0.0 {
        // k = 0 or k = n: one k-set, no regret possible.
        return 0.0;
    }
    eta * g + t as f64 * g / (4.0 * eta)
}

/// The regret columns of `metrics.csv` after round `t` of a selection of `k` of `n`
/// samples by `objective`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Regret {
    /// The total risk of the sets trained on minus that of the best fixed k-set in
    /// hindsight.
    pub regret: f64,
    /// [`fpl_bound`] at the run's eta; `None` where eta = 0 (Follow-the-Leader) or the
    /// latest risk alone ranks (Greedy): neither has one.
    pub bound: Option<f64>,
    /// [`paper_bound`], beside `bound` where there is one.
    pub paper_bound: Option<f64>,
}

/// The regret after round `t` from the total risk of the sets trained on and the
/// hindsight risk (the k smallest entries of L_t), with the bounds that go with it.
pub fn after_round(
    objective: Objective,
    total_selection_risk: f64,
    total_hindsight_risk: f64,
    (n, k): (usize, usize),
    t: usize,
) -> Regret {
    let bound = match objective {
        Objective::Perturbed { eta } if eta > 0.0 => Some(fpl_bound(eta, n, k, t)),
        _ => None,
    };
    Regret {
        regret: total_selection_risk - total_hindsight_risk,
        bound,
        paper_bound: bound.map(|_| paper_bound(n, k, t)),
    }
}

/// The formula Theorem 1 / Corollary 2 print, 2 sqrt(2 k t ln C(n, k)), claimed for
/// eta = sqrt(kT). Not a bound on what runs do: see the module doc.
pub fn paper_bound(n: usize, k: usize, t: usize) -> f64 {
    2.0 * (2.0 * k as f64 * t as f64 * ln_choose(n, k)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_choose_matches_small_cases() {
        assert!((ln_choose(5, 2) - 10f64.ln()).abs() < 1e-12);
        assert!((ln_choose(52, 5) - 2_598_960f64.ln()).abs() < 1e-9);
        assert_eq!(ln_choose(7, 0), 0.0);
        assert_eq!(ln_choose(7, 7), 0.0);
        assert!((ln_choose(7, 5) - ln_choose(7, 2)).abs() < 1e-12);
    }

    #[test]
    fn paper_bound_grows_like_sqrt_t() {
        let b1 = paper_bound(1000, 350, 1);
        let b4 = paper_bound(1000, 350, 4);
        assert!((b4 / b1 - 2.0).abs() < 1e-9);
        assert!((b1 - 2.0 * (700.0 * ln_choose(1000, 350)).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn fpl_bound_is_smallest_at_half_root_t_and_never_above_the_rate() {
        // At eta = sqrt(t)/2 the two terms are equal: G sqrt(t) in all.
        let (n, k, t) = (1000, 350, 400);
        let g = gaussian_width(n, k);
        let best = fpl_bound(10.0, n, k, t);
        assert!((best - g * 20.0).abs() < 1e-9 * best);
        assert!(fpl_bound(9.0, n, k, t) > best && fpl_bound(11.0, n, k, t) > best);
        assert!(best <= (2.0 * (k * t) as f64 * ln_choose(n, k)).sqrt());
        assert_eq!(fpl_bound(1.0, 10, 0, 5), 0.0);
        assert_eq!(fpl_bound(1.0, 10, 10, 5), 0.0);
        assert!(fpl_bound(0.0, 10, 3, 5).is_infinite());
    }
}
