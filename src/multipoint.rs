//! Tracing at more than one point.
//!
//! A pattern traced at `x0` describes the branches `x0` takes. Code that branches on input
//! values (`if (x > 0)`, table lookups, flags) may depend on other inputs elsewhere. Two ways to
//! cover more of them, both uniting the patterns of several traces
//! ([`crate::Pattern::union`]):
//!
//! * multi-point: the points given by the caller ([`trace_points`]), or points sampled around
//!   `x0` ([`sample_points`]): `x_j = x0_j + scale * max(|x0_j|, 1) * z_j` with `z_j` standard
//!   normal, the smoothing view of branching programs;
//! * flag inputs (the paper's section 5): the caller marks the discrete inputs (switches,
//!   integer options stored as doubles); a [`FlagTracer`] watches the points an optimizer visits
//!   and traces again whenever it sees a combination of flag values it has not traced yet.
//!
//! Each trace is a full trace (with verification when the options ask for it); the union keeps
//! the strongest kind of every entry and adds up the evaluations.

use crate::driver::{trace, BlackBox};
use crate::error::{Error, Result};
use crate::pattern::Pattern;
use crate::synthetic::Rng;
use crate::trace::TraceOptions;
use std::collections::HashSet;

/// `count` points around `x0`: `x0_j + scale * max(|x0_j|, 1) * z_j`, `z_j` standard normal
/// (Box-Muller from a seeded generator, so the same seed gives the same points).
pub fn sample_points(x0: &[f64], count: usize, scale: f64, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = Rng::new(seed ^ 0x5A3F_11E5);
    let mut uniform = move || ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64; // (0, 1]
    (0..count)
        .map(|_| {
            x0.iter()
                .map(|&x| {
                    let z =
                        (-2.0 * uniform().ln()).sqrt() * (std::f64::consts::TAU * uniform()).cos();
                    x + scale * x.abs().max(1.0) * z
                })
                .collect()
        })
        .collect()
}

/// The union of the traces at every point of `points` (each n values). Errors: no points, and
/// those of [`trace`] at any point (the message names the point).
pub fn trace_points(
    f: &mut dyn BlackBox,
    m: usize,
    points: &[Vec<f64>],
    options: &TraceOptions,
) -> Result<Pattern> {
    union_of(points, &mut |x| trace(f, m, x, options))
}

/// The union of `tracer`'s patterns at every point (any driver: serial, threads, processes).
pub fn union_of(
    points: &[Vec<f64>],
    tracer: &mut dyn FnMut(&[f64]) -> Result<Pattern>,
) -> Result<Pattern> {
    let (first, rest) = points
        .split_first()
        .ok_or_else(|| Error::invalid("no points to trace at"))?;
    let mut union = tracer(first)?;
    for (k, x) in rest.iter().enumerate() {
        let p = tracer(x)
            .map_err(|e| Error::new(e.kind, format!("at point {}: {}", k + 1, e.message)))?;
        union = union.union(&p)?;
    }
    Ok(union)
}

/// Traces again whenever the flag inputs take a combination of values not traced yet, and
/// keeps the union (see the module docs).
pub struct FlagTracer {
    n: usize,
    m: usize,
    flags: Vec<usize>,
    options: TraceOptions,
    seen: HashSet<Vec<u64>>,
    pattern: Option<Pattern>,
}

impl FlagTracer {
    /// A tracer for f: R^n -> R^m whose inputs `flags` (0-based, below n) are discrete.
    /// Errors: a flag index out of range; n or m zero.
    pub fn new(n: usize, m: usize, flags: &[usize], options: &TraceOptions) -> Result<Self> {
        crate::pattern::check_dims(m, n)?;
        if let Some(&j) = flags.iter().find(|&&j| j >= n) {
            return Err(Error::invalid(format!(
                "flag input {j} is out of range (n = {n})"
            )));
        }
        Ok(FlagTracer {
            n,
            m,
            flags: flags.to_vec(),
            options: options.clone(),
            seen: HashSet::new(),
            pattern: None,
        })
    }

    /// Looks at the point `x` (n values): traces there when its flag values are new. Returns
    /// whether it traced. Errors: those of [`trace`]; a wrong length.
    pub fn observe(&mut self, f: &mut dyn BlackBox, x: &[f64]) -> Result<bool> {
        if x.len() != self.n {
            return Err(Error::invalid(format!(
                "x has {} entries, expected n = {}",
                x.len(),
                self.n
            )));
        }
        // Bit patterns, so that -0.0 and 0.0 (and NaN payloads) are told apart as the code would.
        let key: Vec<u64> = self.flags.iter().map(|&j| x[j].to_bits()).collect();
        if self.seen.contains(&key) {
            return Ok(false);
        }
        let p = trace(f, self.m, x, &self.options)?;
        self.pattern = Some(match self.pattern.take() {
            Some(u) => u.union(&p)?,
            None => p,
        });
        self.seen.insert(key);
        Ok(true)
    }

    /// The union so far (None before the first trace).
    pub fn pattern(&self) -> Option<&Pattern> {
        self.pattern.as_ref()
    }

    /// Distinct flag combinations traced.
    pub fn traces(&self) -> usize {
        self.seen.len()
    }
}
