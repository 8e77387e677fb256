//! Random numbers that are reproducible across runs, threads and devices.
//!
//! Two generators, both seeded explicitly so every run can be repeated bit for bit:
//! - [`SplitMix64`], a small sequential generator for host-side choices (noise
//!   injection, the first random k-set, batch shuffling, weight initialisation seeds).
//! - [`perturbation`], a *counter-based* standard normal keyed by (seed, epoch, index).
//!   FPL needs a fresh N(0, 1) per sample per epoch; keying it by counters instead of a
//!   stream lets the WGSL kernel draw sample i's value independently on the GPU and lets
//!   this CPU code draw the identical value. It uses only wrapping u32 arithmetic
//!   because WGSL has no 64-bit integers; `shaders/noise_risk.wgsl` repeats it exactly.

/// Sequential 64-bit generator (Steele, Lea & Flood's SplitMix64).
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator for one named purpose, so that e.g. changing the number of noise
    /// draws never shifts the batch order.
    pub fn for_stream(seed: u64, stream: &str) -> Self {
        let salt = stream.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        Self::new(seed ^ salt)
    }

    /// The whole state, for a checkpoint; [`SplitMix64::new`] of it continues the stream.
    pub fn state(&self) -> u64 {
        self.state
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in [0, bound) without modulo bias (Lemire's method).
    pub fn below(&mut self, bound: usize) -> usize {
        assert!(bound > 0, "below(0)");
        let bound = bound as u64;
        loop {
            let m = (self.next_u64() as u128) * (bound as u128);
            let low = m as u64;
            if low >= bound.wrapping_neg() % bound {
                return (m >> 64) as usize;
            }
        }
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }

    /// `count` distinct indices from 0..n, in random order.
    pub fn sample_indices(&mut self, n: usize, count: usize) -> Vec<u32> {
        let mut all: Vec<u32> = (0..n as u32).collect();
        // Partial Fisher-Yates: only the first `count` positions need drawing.
        for i in 0..count.min(n) {
            let j = i + self.below(n - i);
            all.swap(i, j);
        }
        all.truncate(count);
        all
    }
}

/// Chris Wellons' `lowbias32` integer hash: a full-avalanche u32 -> u32 bijection.
#[inline]
pub fn mix(x: u32) -> u32 {
    let mut h = x;
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^= h >> 16;
    h
}

/// The two 24-bit uniforms behind sample `index`'s perturbation in `epoch`.
#[inline]
pub fn perturbation_bits(seed: u32, epoch: u32, index: u32) -> (u32, u32) {
    let draw = |lane: u32| mix(mix(mix(index.wrapping_mul(2).wrapping_add(lane)) ^ epoch) ^ seed);
    (draw(0), draw(1))
}

/// r ~ N(0, 1) for sample `index` in `epoch` (Box-Muller on two counter-based
/// uniforms). u1 lies in (0, 1), so the logarithm is always finite.
#[inline]
pub fn perturbation(seed: u32, epoch: u32, index: u32) -> f32 {
    let (b1, b2) = perturbation_bits(seed, epoch, index);
    let u1 = ((b1 >> 8) as f32 + 0.5) / 16_777_216.0;
    let u2 = (b2 >> 8) as f32 / 16_777_216.0;
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perturbation_is_standard_normal() {
        let n = 200_000u32;
        let draws: Vec<f64> = (0..n).map(|i| perturbation(7, 3, i) as f64).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "variance {var}");
        let beyond_2 = draws.iter().filter(|x| x.abs() > 1.96).count() as f64 / n as f64;
        assert!((beyond_2 - 0.05).abs() < 0.003, "tail mass {beyond_2}");
    }

    #[test]
    fn perturbation_depends_on_every_key() {
        let base = perturbation(1, 2, 3);
        assert_ne!(base, perturbation(0, 2, 3));
        assert_ne!(base, perturbation(1, 1, 3));
        assert_ne!(base, perturbation(1, 2, 4));
        assert_eq!(base, perturbation(1, 2, 3));
    }

    #[test]
    fn below_is_unbiased_and_in_range() {
        let mut rng = SplitMix64::new(1);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[rng.below(3)] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn sample_indices_are_distinct() {
        let mut rng = SplitMix64::new(5);
        let mut s = rng.sample_indices(1000, 350);
        assert_eq!(s.len(), 350);
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 350);
        assert!(s.iter().all(|&i| i < 1000));
    }
}
