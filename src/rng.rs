//! A small seeded pseudo-random generator (xorshift64*), for everything nanprop randomizes
//! from a caller's seed: the random coloring order, points sampled around x0, synthetic test
//! patterns. Deterministic across platforms, so the same seed gives the same result, and no
//! extra crate.

/// xorshift64* (Vigna): 64 bits of state, never zero.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..bound` (bound > 0), by multiply-shift of 53 random bits.
    pub fn below(&mut self, bound: usize) -> usize {
        (((self.next_u64() >> 11) as u128 * bound as u128) >> 53) as usize
    }

    /// A uniform value in (0, 1] (never 0, so its logarithm is finite).
    pub fn uniform_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// A standard normal value (Box-Muller; one of the pair is used).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform_open0(), self.uniform_open0());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// A value in [0, 1) that depends only on `keys`: the same keys give the same value in every
/// run, so a random choice made this way is reproducible without a generator's state (a
/// request's random step is the same when a journal replays the trace).
pub fn unit_from(keys: &[u64]) -> f64 {
    match keys.split_last() {
        Some((&last, shared)) => unit_after(unit_prefix(shared), last),
        None => to_unit(START),
    }
}

/// The keys `shared` mixed as [`unit_from`] mixes its leading keys: `unit_after(unit_prefix(a),
/// k)` is `unit_from(a ++ [k])`, so drawing for many last keys (every input of one request)
/// mixes the shared ones once.
pub fn unit_prefix(shared: &[u64]) -> u64 {
    shared.iter().fold(START, |h, &k| mix(h ^ mix(k)))
}

/// [`unit_from`] of the keys mixed into `prefix` ([`unit_prefix`]) followed by `last`.
#[inline]
pub fn unit_after(prefix: u64, last: u64) -> f64 {
    to_unit(mix(prefix ^ mix(last)))
}

const START: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finalizer.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn to_unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_bounds_hold() {
        let (mut a, mut b) = (Rng::new(3), Rng::new(3));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut r = Rng::new(0);
        for bound in [1, 2, 7, 1000] {
            assert!((0..1000).all(|_| r.below(bound) < bound));
        }
        let u: Vec<f64> = (0..1000).map(|_| r.uniform_open0()).collect();
        assert!(u.iter().all(|&v| v > 0.0 && v <= 1.0));
        let z: Vec<f64> = (0..20000).map(|_| r.normal()).collect();
        let mean = z.iter().sum::<f64>() / z.len() as f64;
        let var = z.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / z.len() as f64;
        assert!(
            mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
    }

    #[test]
    fn a_shared_prefix_gives_the_values_of_the_whole_keys() {
        // The values of the plain fold over all keys, written out here as the reference.
        let reference = |keys: &[u64]| {
            let mix = |mut z: u64| {
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            };
            let h = (keys.iter()).fold(0x9E37_79B9_7F4A_7C15u64, |h, &k| mix(h ^ mix(k)));
            (h >> 11) as f64 / (1u64 << 53) as f64
        };
        let shared = [7u64, 0, 3, 12];
        let prefix = unit_prefix(&shared);
        for j in [0u64, 1, 2, 999_999, u64::MAX] {
            let keys = [7, 0, 3, 12, j];
            assert_eq!(unit_from(&keys), reference(&keys));
            assert_eq!(unit_after(prefix, j), reference(&keys));
        }
        assert_eq!(unit_from(&[]), reference(&[]));
        assert_ne!(unit_after(prefix, 1), unit_after(prefix, 2));
    }
}
