//! The points a trace visits.
//!
//! A pattern traced at `x0` describes the branches `x0` takes. Code that branches on input
//! values (`if (x > 0)`, table lookups, flags) may depend on other inputs elsewhere. A trace can
//! therefore visit several points and return the union of their patterns
//! ([`crate::Pattern::union`]): the points the caller gives, then
//! [`crate::TraceOptions::sample_points`] points sampled around the first,
//! `x_j = x0_j + scale * max(|x0_j|, 1) * z_j` with `z_j` standard normal (the smoothing view of
//! branching programs). Flag inputs are the other way to cover branches
//! ([`crate::driver::flags::FlagTracer`]).
//!
//! Points are made one at a time as the trace reaches them, so sampling costs O(n) memory
//! whatever the count.

use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::trace::options::TraceOptions;

/// Samples points around a center (see the module docs); the same seed gives the same points.
pub struct Sampler {
    rng: Rng,
    scale: f64,
}

impl Sampler {
    /// A sampler with the given relative scale and seed.
    pub fn new(scale: f64, seed: u64) -> Self {
        Sampler {
            rng: Rng::new(seed ^ 0x5A3F_11E5),
            scale,
        }
    }

    /// Writes the next point around `center` into `x` (same length).
    pub fn next_into(&mut self, center: &[f64], x: &mut [f64]) {
        for (xj, &c) in x.iter_mut().zip(center) {
            *xj = c + self.scale * c.abs().max(1.0) * self.rng.normal();
        }
    }
}

/// `count` points around `x0` (see the module docs), all at once.
pub fn sample_points(x0: &[f64], count: usize, scale: f64, seed: u64) -> Vec<Vec<f64>> {
    let mut s = Sampler::new(scale, seed);
    (0..count)
        .map(|_| {
            let mut x = vec![0.0; x0.len()];
            s.next_into(x0, &mut x);
            x
        })
        .collect()
}

/// The points of one trace: the caller's points (each n values, stored one after another),
/// then the sampled ones around the first. Visited in order with [`Points::next`].
pub struct Points<'a> {
    given: &'a [f64],
    n: usize,
    sampled: usize,
    sampler: Sampler,
    next: usize,
}

impl<'a> Points<'a> {
    /// The points `given` (a multiple of n values, at least one point) and the samples the
    /// options ask for. Errors: no point, or a length that is not a multiple of n.
    pub fn new(given: &'a [f64], n: usize, options: &TraceOptions) -> Result<Self> {
        if n == 0 || given.is_empty() || !given.len().is_multiple_of(n) {
            return Err(Error::invalid(format!(
                "{} coordinates do not make whole points of n = {n} (at least one)",
                given.len()
            )));
        }
        Ok(Points {
            given,
            n,
            sampled: options.sample_points,
            sampler: Sampler::new(options.sample_scale, options.seed),
            next: 0,
        })
    }

    /// How many points in all.
    pub fn len(&self) -> usize {
        self.given.len() / self.n + self.sampled
    }

    /// Never: there is at least one point.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The next point (n values), None when every point was visited. A given point is
    /// borrowed; a sampled one is made in `buffer` (allocated on the first, fallibly).
    pub fn next<'b>(&'b mut self, buffer: &'b mut Vec<f64>) -> Result<Option<&'b [f64]>> {
        let (k, n) = (self.next, self.n);
        if k >= self.len() {
            return Ok(None);
        }
        self.next += 1;
        if k < self.given.len() / n {
            return Ok(Some(&self.given[k * n..(k + 1) * n]));
        }
        if buffer.len() != n {
            crate::error::reserve(buffer, n, "a sampled point")?;
            buffer.resize(n, 0.0);
        }
        self.sampler.next_into(&self.given[..n], buffer);
        Ok(Some(buffer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_given_then_sampled_like_sample_points() {
        let x0 = [1.0, -2.0, 0.0];
        let other = [5.0, 5.0, 5.0];
        let given: Vec<f64> = x0.iter().chain(&other).copied().collect();
        let o = TraceOptions {
            sample_points: 3,
            sample_scale: 0.2,
            seed: 9,
            ..Default::default()
        };
        let mut pts = Points::new(&given, 3, &o).unwrap();
        assert_eq!(pts.len(), 5);
        let mut seen = Vec::new();
        let mut buffer = Vec::new();
        while let Some(x) = pts.next(&mut buffer).unwrap() {
            seen.push(x.to_vec());
        }
        assert_eq!(seen[0], x0);
        assert_eq!(seen[1], other);
        assert_eq!(seen[2..], sample_points(&x0, 3, 0.2, 9)[..]);
        assert!(Points::new(&given[..4], 3, &o).is_err());
    }
}
