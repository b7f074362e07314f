//! Synthetic black boxes with a known pattern, for tests and the benchmark program. Not part
//! of the library's API: compiled for the crate's own tests and with the `testing` feature
//! (which the test suite, the examples and the benchmark turn on).
//!
//! [`Synthetic`] computes `y_i = 1 + sum_j c_ij x_j` over the entries of a given pattern, so each
//! dependency propagates NaN, and when several tagged NaNs meet in one output it decides which
//! survives by a [`Winner`] policy: at random, always the smallest or the largest input, or none
//! (the payload is destroyed and a default NaN comes out), the cases NAN_FACTS §1 says real
//! compiled code can produce. A tracer must find the exact pattern under every policy.

use crate::driver::BlackBox;
use crate::pattern::Pattern;
pub use crate::rng::Rng;

/// Which tagged NaN survives when several reach one output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Winner {
    /// A pseudo-random one (seeded).
    Random,
    /// The NaN of the smallest input index.
    Smallest,
    /// The NaN of the largest input index.
    Largest,
    /// None: the output is the default NaN (payload 0), as if made inside the black box.
    Anonymous,
}

/// A black box that computes exactly the dependencies of `pattern` (see the module docs).
pub struct Synthetic<'a> {
    pattern: &'a Pattern,
    winner: Winner,
    rng: Rng,
    /// Calls made, and nanoseconds spent inside them (so benchmarks can exclude f's time).
    pub calls: usize,
    /// Time spent inside `eval`.
    pub time: std::time::Duration,
}

impl<'a> Synthetic<'a> {
    /// The black box of `pattern` with the given winner policy and seed.
    pub fn new(pattern: &'a Pattern, winner: Winner, seed: u64) -> Self {
        Synthetic {
            pattern,
            winner,
            rng: Rng::new(seed),
            calls: 0,
            time: Default::default(),
        }
    }
}

impl BlackBox for Synthetic<'_> {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> Result<(), i32> {
        let start = std::time::Instant::now();
        for (i, yi) in y.iter_mut().enumerate() {
            let mut sum = 1.0;
            let mut nans = 0usize;
            let mut chosen: Option<f64> = None;
            for &j in self.pattern.row(i) {
                let v = x[j as usize];
                if v.is_nan() {
                    nans += 1;
                    chosen = Some(match (self.winner, chosen) {
                        (Winner::Smallest, Some(c)) => c,
                        (Winner::Random, Some(c)) if self.rng.below(nans) != 0 => c,
                        _ => v,
                    });
                } else {
                    sum += v * (1.0 + 1e-3 * j as f64);
                }
            }
            *yi = match (chosen, self.winner) {
                (None, _) => sum,
                (Some(_), Winner::Anonymous) => f64::NAN,
                (Some(c), _) => c,
            };
        }
        self.calls += 1;
        self.time += start.elapsed();
        Ok(())
    }
}

/// Builds a pattern from a function giving each row's sorted columns.
pub fn from_rows(m: usize, n: usize, mut row: impl FnMut(usize, &mut Vec<usize>)) -> Pattern {
    let mut row_ptr = vec![0usize];
    let mut col_idx = Vec::new();
    let mut buf = Vec::new();
    for i in 0..m {
        buf.clear();
        row(i, &mut buf);
        buf.sort_unstable();
        buf.dedup();
        col_idx.extend_from_slice(&buf);
        row_ptr.push(col_idx.len());
    }
    Pattern::from_csr(m, n, &row_ptr, &col_idx).expect("synthetic pattern is valid")
}

/// Banded n x n: row i holds columns i - half ..= i + half (tridiagonal for half = 1).
pub fn banded(n: usize, half: usize) -> Pattern {
    from_rows(n, n, |i, r| {
        r.extend(i.saturating_sub(half)..(i + half + 1).min(n))
    })
}

/// Block diagonal n x n with dense blocks of size b (the last block may be smaller).
pub fn block_diagonal(n: usize, b: usize) -> Pattern {
    from_rows(n, n, |i, r| {
        let s = i / b * b;
        r.extend(s..(s + b).min(n))
    })
}

/// The 5-point stencil on a g x g grid (n = m = g^2).
pub fn stencil_2d(g: usize) -> Pattern {
    from_rows(g * g, g * g, |i, r| {
        let (a, b) = (i / g, i % g);
        r.push(i);
        if a > 0 {
            r.push(i - g);
        }
        if a + 1 < g {
            r.push(i + g);
        }
        if b > 0 {
            r.push(i - 1);
        }
        if b + 1 < g {
            r.push(i + 1);
        }
    })
}

/// m x n with `per_row` distinct random columns in each row.
pub fn random_sparse(m: usize, n: usize, per_row: usize, seed: u64) -> Pattern {
    let mut rng = Rng::new(seed);
    from_rows(m, n, |_, r| {
        while r.len() < per_row.min(n) {
            let j = rng.below(n);
            if !r.contains(&j) {
                r.push(j);
            }
        }
    })
}

/// Arrowhead n x n: the diagonal, a dense last row and a dense last column.
pub fn arrowhead(n: usize) -> Pattern {
    from_rows(n, n, |i, r| {
        if i + 1 == n {
            r.extend(0..n)
        } else {
            r.push(i);
            r.push(n - 1);
        }
    })
}

/// Dense m x n.
pub fn dense(m: usize, n: usize) -> Pattern {
    from_rows(m, n, |_, r| r.extend(0..n))
}

/// A black box that takes every path of the run loop (`src/driver/run.rs`): payload tags along
/// a chain (y_i = x_i + x_{i+1} x_{i+37} / 2, indices mod n), an output that absorbs a NaN
/// (y_7 also adds `max(x_20, 1)`, unchanged by a NaN at x_20 = 1 and changed by the check's
/// step up, so the row is traced again with verified probes) and an input whose NaN makes it
/// fail (x_33: its probes split). n = m = `x.len()`; its point is [`loop_paths_x0`].
pub fn loop_paths(x: &[f64], y: &mut [f64]) -> Result<(), i32> {
    let n = x.len();
    if x[33].is_nan() {
        return Err(3);
    }
    for i in 0..n {
        y[i] = x[i] + 0.5 * x[(i + 1) % n] * x[(i + 37) % n];
    }
    y[7] = x[7] + x[20].max(1.0);
    Ok(())
}

/// The point of [`loop_paths`] with n inputs (n > 37): x_j in [1, 1.6], x_20 = 1.
pub fn loop_paths_x0(n: usize) -> Vec<f64> {
    let mut x0: Vec<f64> = (0..n).map(|j| 1.0 + (j % 7) as f64 * 0.1).collect();
    x0[20] = 1.0;
    x0
}

/// Branching models whose Gaussian-smoothed Jacobian is known in closed form (for
/// [`crate::smoothing`]'s tests and the benchmark). Smoothing is joint, with an absolute sigma.
pub mod branching {
    use crate::pattern::Pattern;

    /// The standard normal density.
    pub fn phi(t: f64) -> f64 {
        (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt()
    }

    /// The standard normal distribution function (Abramowitz-Stegun 7.1.26 erf, |error| < 1.5e-7).
    pub fn big_phi(t: f64) -> f64 {
        let z = t.abs() / std::f64::consts::SQRT_2;
        let k = 1.0 / (1.0 + 0.327_591_1 * z);
        let poly = k
            * (0.254_829_592
                + k * (-0.284_496_736
                    + k * (1.421_413_741 + k * (-1.453_152_027 + k * 1.061_405_429))));
        let erf = 1.0 - poly * (-z * z).exp();
        if t >= 0.0 {
            0.5 * (1.0 + erf)
        } else {
            0.5 * (1.0 - erf)
        }
    }

    fn step(t: f64) -> f64 {
        if t > 0.0 {
            1.0
        } else {
            0.0
        }
    }

    /// The Heaviside chain: n inputs, n - 2 outputs,
    /// `y_i = H(x_i - x_{i+1}) + 0.5 H(x_{i+1} - x_{i+2}) + 2 x_i + x_{i+2}^2`.
    pub fn chain(x: &[f64], y: &mut [f64]) {
        for (i, yi) in y.iter_mut().enumerate() {
            *yi = step(x[i] - x[i + 1])
                + 0.5 * step(x[i + 1] - x[i + 2])
                + 2.0 * x[i]
                + x[i + 2] * x[i + 2];
        }
    }

    /// The chain's pattern: row i holds i, i + 1, i + 2.
    pub fn chain_pattern(n: usize) -> Pattern {
        super::from_rows(n - 2, n, |i, r| r.extend([i, i + 1, i + 2]))
    }

    /// The chain's smoothed Jacobian at x (values in the pattern's CSR order): a step of a
    /// difference of two inputs smoothed jointly is `Phi(d / (sigma sqrt 2))`.
    pub fn chain_smoothed_jacobian(x: &[f64], sigma: f64) -> Vec<f64> {
        let s = sigma * std::f64::consts::SQRT_2;
        let g = |d: f64| phi(d / s) / s;
        let mut v = Vec::with_capacity(3 * (x.len() - 2));
        for i in 0..x.len() - 2 {
            let (a, b) = (g(x[i] - x[i + 1]), g(x[i + 1] - x[i + 2]));
            v.extend([a + 2.0, -a + 0.5 * b, -0.5 * b + 2.0 * x[i + 2]]);
        }
        v
    }

    /// The threshold model: n inputs, n - 1 outputs, `y_i = x_{i+1} H(x_i - 1) + x_i`: input
    /// i + 1 flows to output i only when input i exceeds the threshold 1.
    pub fn threshold(x: &[f64], y: &mut [f64]) {
        for (i, yi) in y.iter_mut().enumerate() {
            *yi = x[i + 1] * step(x[i] - 1.0) + x[i];
        }
    }

    /// The threshold model's pattern: row i holds i, i + 1.
    pub fn threshold_pattern(n: usize) -> Pattern {
        super::from_rows(n - 1, n, |i, r| r.extend([i, i + 1]))
    }

    /// Its smoothed Jacobian: `E[(x_{i+1} + s e') H(x_i + s e - 1)] = x_{i+1} Phi((x_i - 1) / s)`.
    pub fn threshold_smoothed_jacobian(x: &[f64], sigma: f64) -> Vec<f64> {
        let mut v = Vec::with_capacity(2 * (x.len() - 1));
        for i in 0..x.len() - 1 {
            let t = (x[i] - 1.0) / sigma;
            v.extend([1.0 + x[i + 1] * phi(t) / sigma, big_phi(t)]);
        }
        v
    }
}
