//! Flag inputs (the paper's section 5): the caller marks the discrete inputs of f (switches,
//! integer options stored as doubles); a [`FlagTracer`] watches the points an optimizer visits
//! and traces again whenever it sees a combination of flag values it has not traced yet,
//! keeping the union. Each trace is a full trace with the tracer's options (sampling,
//! executor, verification); one journal, if the options name one, serves every trace, keyed by
//! the order of the traces.

use super::entry::{open, visit, with_executor};
use super::BlackBox;
use crate::error::{Error, Result};
use crate::fpenv::FpGuard;
use crate::pattern::Pattern;
use crate::trace::journal::Journal;
use crate::trace::TraceOptions;
use std::collections::HashSet;

/// Traces again whenever the flag inputs take a combination of values not traced yet, and
/// keeps the union (see the module docs).
pub struct FlagTracer {
    n: usize,
    m: usize,
    flags: Vec<usize>,
    options: TraceOptions,
    seen: HashSet<Vec<u64>>,
    pattern: Option<Pattern>,
    journal: Option<Journal>,
    /// Journal numbering of the next trace's first point.
    next_point: u64,
}

impl FlagTracer {
    /// A tracer for f: R^n -> R^m whose inputs `flags` (0-based, below n) are discrete.
    /// Errors: a flag index out of range; n or m zero; bad options.
    pub fn new(n: usize, m: usize, flags: &[usize], options: &TraceOptions) -> Result<Self> {
        crate::pattern::check_dims(m, n)?;
        options.validate()?;
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
            journal: None,
            next_point: 0,
        })
    }

    /// Looks at the point `x` (n values): traces there when its flag values are new. Returns
    /// whether it traced. Errors: those of [`crate::trace()`]; a wrong length.
    pub fn observe(&mut self, f: &mut dyn BlackBox, x: &[f64]) -> Result<bool> {
        let _fp = FpGuard::enter();
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
        if self.journal.is_none() && self.next_point == 0 {
            self.journal = open(&self.options, self.n, self.m, f.identity().as_deref())?;
        }
        let (n, m, first) = (self.n, self.m, self.next_point);
        let (options, journal) = (&self.options, &mut self.journal);
        let p = with_executor(f, n, m, options, &mut |executor| {
            visit(executor, n, m, x, options, journal, first, &mut |_| {})
        })?;
        self.next_point += 1 + self.options.sample_points as u64;
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
