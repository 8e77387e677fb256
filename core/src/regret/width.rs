//! G(n, k) = E[sum of the k largest of n iid N(0, 1)]: the Gaussian width of the k-sets,
//! the constant in FPL's regret bound (see `crate::regret`).
//!
//! How it is computed, to about 1e-7 relative (the bound needs 0.5%). Each of the n
//! draws is among the k largest exactly when at most k - 1 of the other n - 1 exceed
//! it, so
//!
//! ```text
//! G = n * integral of x phi(x) P(Bin(n - 1, Q(x)) <= k - 1) dx,   Q(x) = P(Z > x)
//! ```
//!
//! with the binomial tail as a regularised incomplete beta function,
//! 1 - I_{Q(x)}(k, n - k) (continued fraction, log-gamma by Lanczos). The binomial
//! factor is a smooth step from 0 to 1 around x* = Q^{-1}(k / n), of width
//! sigma = sqrt(p (1 - p) / n) / phi(x*) with p = k / n (0.001 at n = 10^6, k = n/2),
//! so the integral is split into panels of 0.05 over [-13, 13] plus panels of sigma/2
//! within 30 sigma of x*, each done by 10-point Gauss-Legendre. G(n, k) = G(n, n - k)
//! (the sum of all n has mean 0), so only k <= n/2 is integrated. A few milliseconds;
//! each (n, k) is computed once per process and cached.
//!
//! Checked against the tabulated expected maxima of normal samples and a Monte Carlo
//! estimate (tests below).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

static CACHE: LazyLock<Mutex<HashMap<(usize, usize), f64>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// G(n, k) (0 when k = 0 or k >= n), cached per (n, k).
pub fn gaussian_width(n: usize, k: usize) -> f64 {
    let key = (n, k.min(n - k.min(n)));
    // A poisoned cache only means another thread panicked mid-insert; the map is intact.
    if let Some(&g) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return g;
    }
    let g = integrate(key.0, key.1);
    CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, g);
    g
}

fn integrate(n: usize, k: usize) -> f64 {
    if k == 0 {
        return 0.0;
    }
    let (nf, kf) = (n as f64, k as f64);
    let p = kf / nf;
    let centre = upper_quantile(p);
    let sigma = (p * (1.0 - p) / nf).sqrt() / density(centre);

    let mut points: Vec<f64> = (0..=520).map(|i| -13.0 + 0.05 * i as f64).collect();
    if sigma < 0.1 {
        points.extend((-60..=60).map(|i| centre + 0.5 * sigma * i as f64));
    }
    points.sort_by(f64::total_cmp);
    points.dedup();

    let integrand = |x: f64| {
        let chosen = 1.0 - regularized_beta(kf, nf - kf, upper_tail(x));
        nf * x * density(x) * chosen
    };
    points
        .windows(2)
        .map(|w| gauss_legendre(w[0], w[1], &integrand))
        .sum()
}

/// phi(x), the standard normal density.
fn density(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Q(x) = P(Z > x), accurate in the far tail.
fn upper_tail(x: f64) -> f64 {
    0.5 * libm::erfc(x / std::f64::consts::SQRT_2)
}

/// Q^{-1}(p) by bisection (Q is decreasing).
fn upper_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0, 40.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if upper_tail(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// 10-point Gauss-Legendre on [a, b].
fn gauss_legendre(a: f64, b: f64, f: &impl Fn(f64) -> f64) -> f64 {
    const NODES: [(f64, f64); 5] = [
        (0.148_874_338_981_631_2, 0.295_524_224_714_752_9),
        (0.433_395_394_129_247_2, 0.269_266_719_309_996_4),
        (0.679_409_568_299_024_4, 0.219_086_362_515_982),
        (0.865_063_366_688_984_5, 0.149_451_349_150_580_6),
        (0.973_906_528_517_171_7, 0.066_671_344_308_688_14),
    ];
    let (mid, half) = (0.5 * (a + b), 0.5 * (b - a));
    half * NODES
        .iter()
        .map(|&(x, w)| w * (f(mid - half * x) + f(mid + half * x)))
        .sum::<f64>()
}

/// ln Gamma(x) for x > 0 (Lanczos, g = 7, 9 terms; about 1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let series = C[1..]
        .iter()
        .enumerate()
        .fold(C[0], |s, (i, c)| s + c / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + series.ln()
}

/// The regularised incomplete beta function I_x(a, b), a, b > 0.
fn regularized_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (-x).ln_1p();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of I_x(a, b) (modified Lentz); converges in
/// O(sqrt(max(a, b))) steps on the side of the mean it is used on.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let max_steps = 1000 + 10 * (a.max(b).sqrt() as usize);
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=max_steps {
        let m = m as f64;
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 + aa * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + aa / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        // The second factor of the last step is close enough to 1.
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} +- {tol}");
    }

    #[test]
    fn special_functions_match_known_values() {
        close(ln_gamma(1.0), 0.0, 1e-14);
        close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-13);
        close(ln_gamma(11.0), 3_628_800f64.ln(), 1e-12);
        // I_x(1, b) = 1 - (1 - x)^b; I_x(a, 1) = x^a.
        close(regularized_beta(1.0, 5.0, 0.3), 1.0 - 0.7f64.powi(5), 1e-14);
        close(regularized_beta(4.0, 1.0, 0.6), 0.6f64.powi(4), 1e-14);
        // I_{1/2}(a, a) = 1/2.
        close(regularized_beta(250_000.0, 250_000.0, 0.5), 0.5, 1e-9);
        close(upper_tail(1.959_963_984_540_054), 0.025, 1e-15);
        close(upper_quantile(0.025), 1.959_963_984_540_054, 1e-12);
    }

    /// Expected maxima of n standard normals, as tabulated (Harter 1961; Tippett 1925),
    /// and E[X(4)] + E[X(3)] for n = 4 (1.02938 + 0.29701).
    #[test]
    fn width_matches_tabulated_order_statistics() {
        close(
            gaussian_width(2, 1),
            1.0 / std::f64::consts::PI.sqrt(),
            1e-7,
        );
        close(
            gaussian_width(3, 1),
            1.5 / std::f64::consts::PI.sqrt(),
            1e-7,
        );
        close(gaussian_width(5, 1), 1.16296, 1e-5);
        close(gaussian_width(10, 1), 1.53875, 1e-5);
        close(gaussian_width(100, 1), 2.50759, 1e-5);
        close(gaussian_width(1000, 1), 3.24144, 1e-5);
        close(gaussian_width(4, 2), 1.32639, 2e-5);
        // The k largest and the n - k largest have the same expected sum; all n, 0.
        close(gaussian_width(4, 3), 1.02938, 1e-5);
        close(gaussian_width(1000, 999), 3.24144, 1e-5);
        // scipy.integrate.quad on the same integral with scipy's own normal and binomial
        // functions (an independent implementation), to 1e-9 relative.
        close(gaussian_width(1000, 300), 347.390_843_421_651_7, 1e-6);
        close(gaussian_width(8000, 4000), 3_191.224_938_461_992, 1e-5);
        assert_eq!(gaussian_width(7, 7), 0.0);
        assert_eq!(gaussian_width(7, 0), 0.0);
    }

    /// At large n, G = n phi(x*) up to O(1) (the integral of x phi(x) above the p
    /// quantile): a check of the fine panels where the step is 0.001 wide.
    #[test]
    fn width_at_a_million_matches_the_continuous_limit() {
        for (n, k) in [(1_000_000, 500_000), (1_000_000, 20_000), (1_000_000, 10)] {
            let limit = n as f64 * density(upper_quantile(k as f64 / n as f64));
            let g = gaussian_width(n, k);
            let slack = if k < 100 { 0.02 } else { 1e-4 };
            assert!(
                (g / limit - 1.0).abs() < slack,
                "n {n} k {k}: {g} vs {limit}"
            );
        }
    }

    #[test]
    fn width_matches_monte_carlo_and_the_union_bound() {
        let (n, k, draws) = (1000, 300, 3000);
        let mut rng = SplitMix64::new(17);
        let mut normal = || {
            let (u1, u2) = (rng.next_f64().max(1e-300), rng.next_f64());
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        };
        let sums: Vec<f64> = (0..draws)
            .map(|_| {
                let mut z: Vec<f64> = (0..n).map(|_| normal()).collect();
                z.sort_by(|a, b| b.total_cmp(a));
                z[..k].iter().sum()
            })
            .collect();
        let mean = sums.iter().sum::<f64>() / draws as f64;
        let sd = (sums.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (draws - 1) as f64).sqrt();
        let se = sd / (draws as f64).sqrt();
        let g = gaussian_width(n, k);
        assert!(se < 0.001 * g, "the estimate must resolve 0.5%: se {se}");
        assert!(
            (g - mean).abs() < 4.0 * se,
            "G {g} vs Monte Carlo {mean} +- {se}"
        );
        for n in [2, 10, 100, 1000] {
            for k in [1, (n / 3).max(1), n / 2, n - 1] {
                let g = gaussian_width(n, k);
                let union = (2.0 * k as f64 * super::super::ln_choose(n, k)).sqrt();
                assert!(g > 0.0 && g <= union, "n {n} k {k}: {g} > {union}");
            }
        }
    }
}
