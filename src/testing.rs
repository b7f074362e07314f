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
