//! A trace session: the baseline, a planner, the evaluation budget, and the pattern at the end.
//!
//! A session is the ask/tell loop that every driver runs:
//!
//! ```text
//! let mut s = TraceSession::new(n, m, &x0, &options)?;
//! loop {
//!     let ks = s.ask()?;                     // outstanding probes of the current step
//!     if ks.is_empty() { break; }
//!     for k in ks { /* evaluate f at s.probe(k) */ s.tell(k, &y)?; }
//! }
//! let pattern = s.finish()?;
//! ```
//!
//! The first step is the baseline (the empty probe: `x0` itself). Its outputs decide which rows
//! can be traced: a row NaN or Inf at `x0` is reported and stored dense, or refused, as
//! [`NonFiniteBaseline`] says. The budget ([`TraceOptions::max_evaluations`]) counts every
//! evaluation told, the baseline included; when it runs out, `ask` returns nothing and
//! `finish` keeps whatever is unresolved as possible dependencies.

use crate::error::{Error, ErrorKind, Result};
use crate::pattern::{check_dims, Pattern, PatternBuilder, TraceReport};
use crate::planner::{chunked::Chunked, refine::Refine, Planner};
use crate::probe::Probe;
use bitvec::prelude::*;

/// Which planner traces the pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// One input per probe: n probes after the baseline (the paper's method).
    OneHot,
    /// [`TraceOptions::chunk_size`] adjacent inputs per probe; a changed output marks the whole
    /// chunk (conservative).
    Chunked,
    /// Payload-tagged probes, coarse to fine (see [`crate::planner::refine`]).
    #[default]
    Payload,
}

/// What to do with outputs that are NaN or Inf at `x0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NonFiniteBaseline {
    /// Report them ([`Pattern::nonfinite_rows`]) and store their rows dense.
    #[default]
    MarkDense,
    /// Fail with [`ErrorKind::BaselineNotFinite`].
    Error,
}

/// Options of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceOptions {
    /// The planner.
    pub strategy: Strategy,
    /// Inputs per probe for [`Strategy::Chunked`] (at least 1).
    pub chunk_size: usize,
    /// Most evaluations of the black box, the baseline included; 0 means no limit.
    pub max_evaluations: usize,
    /// Outputs not finite at `x0`.
    pub nonfinite_baseline: NonFiniteBaseline,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            strategy: Strategy::Payload,
            chunk_size: 8,
            max_evaluations: 0,
            nonfinite_baseline: NonFiniteBaseline::MarkDense,
        }
    }
}

enum Stage {
    Baseline,
    Planning(Box<dyn Planner>),
    Done(Box<dyn Planner>),
}

/// The ask/tell state of one trace (see the module docs).
pub struct TraceSession {
    n: usize,
    m: usize,
    options: TraceOptions,
    stage: Stage,
    probes: Vec<Probe>,
    told: BitVec,
    baseline_rows: Option<BitVec>,
    report: TraceReport,
}

impl TraceSession {
    /// A session for f: R^n -> R^m at `x0`. Errors: n or m zero or above `u32::MAX`,
    /// `x0.len() != n`, a NaN or Inf in `x0`, `chunk_size == 0`.
    pub fn new(n: usize, m: usize, x0: &[f64], options: &TraceOptions) -> Result<Self> {
        check_dims(m, n)?;
        if x0.len() != n {
            return Err(Error::invalid(format!(
                "x0 has {} entries, expected n = {n}",
                x0.len()
            )));
        }
        if let Some(j) = x0.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(format!(
                "x0[{j}] = {} is not finite: tracing needs a finite point",
                x0[j]
            )));
        }
        if options.strategy == Strategy::Chunked && options.chunk_size == 0 {
            return Err(Error::invalid("chunk_size must be at least 1"));
        }
        Ok(TraceSession {
            n,
            m,
            options: options.clone(),
            stage: Stage::Baseline,
            probes: vec![Probe::new(Vec::new(), n)],
            told: bitvec![0; 1],
            baseline_rows: None,
            report: TraceReport::default(),
        })
    }

    /// Evaluations still allowed by the budget (`usize::MAX` without one).
    fn remaining(&self) -> usize {
        match self.options.max_evaluations {
            0 => usize::MAX,
            max => max.saturating_sub(self.report.evaluations),
        }
    }

    /// The indices of the probes to evaluate next: the untold probes of the current step (at
    /// most as many as the budget allows). Empty when the trace is complete or the budget is
    /// spent; [`TraceSession::finish`] then gives the pattern.
    pub fn ask(&mut self) -> Result<Vec<usize>> {
        if self.told.all() {
            match std::mem::replace(&mut self.stage, Stage::Baseline) {
                Stage::Baseline => {
                    return Err(Error::invalid(
                        "the trace stopped at the baseline (its outputs were refused)",
                    ))
                }
                Stage::Done(p) => {
                    self.stage = Stage::Done(p);
                    return Ok(Vec::new());
                }
                Stage::Planning(mut planner) => {
                    if self.remaining() == 0 {
                        self.report.budget_exhausted = true;
                        self.stage = Stage::Planning(planner);
                        return Ok(Vec::new());
                    }
                    self.probes = planner.ask()?;
                    self.told = bitvec![0; self.probes.len()];
                    if self.probes.is_empty() {
                        self.stage = Stage::Done(planner);
                        return Ok(Vec::new());
                    }
                    self.report.steps += 1;
                    self.stage = Stage::Planning(planner);
                }
            }
        }
        let remaining = self.remaining();
        if remaining == 0 {
            self.report.budget_exhausted = true;
        }
        Ok(self.told.iter_zeros().take(remaining).collect())
    }

    /// Probe `k` of the current step.
    ///
    /// # Panics
    /// If `k` is not an index [`TraceSession::ask`] returned for this step.
    pub fn probe(&self, k: usize) -> &Probe {
        &self.probes[k]
    }

    /// All probes of the current step.
    pub fn probes(&self) -> &[Probe] {
        &self.probes
    }

    /// The outputs `y` (m values) of probe `k` of the current step. Errors: `k` out of range or
    /// told already, `y.len() != m`, and at the baseline a non-finite output when the options
    /// make that an error.
    pub fn tell(&mut self, k: usize, y: &[f64]) -> Result<()> {
        if k >= self.probes.len() || self.told[k] {
            return Err(Error::invalid(format!(
                "probe {k} is not outstanding in this step"
            )));
        }
        if y.len() != self.m {
            return Err(Error::invalid(format!(
                "{} outputs told, expected m = {}",
                y.len(),
                self.m
            )));
        }
        self.told.set(k, true);
        self.report.evaluations += 1;
        match &mut self.stage {
            Stage::Baseline => {
                let bad: BitVec = y.iter().map(|v| !v.is_finite()).collect();
                if let Some(i) = bad.first_one() {
                    if self.options.nonfinite_baseline == NonFiniteBaseline::Error {
                        return Err(Error::new(
                            ErrorKind::BaselineNotFinite,
                            format!(
                                "{} outputs are not finite at x0 (the first is y[{i}] = {})",
                                bad.count_ones(),
                                y[i]
                            ),
                        ));
                    }
                }
                self.baseline_rows = Some(bad);
                let (n, baseline) = (self.n, y.to_vec());
                let planner: Box<dyn Planner> = match self.options.strategy {
                    Strategy::OneHot => Box::new(Chunked::new(n, 1, baseline)),
                    Strategy::Chunked => {
                        Box::new(Chunked::new(n, self.options.chunk_size, baseline))
                    }
                    Strategy::Payload => Box::new(Refine::new(n, baseline)),
                };
                self.stage = Stage::Planning(planner);
            }
            Stage::Planning(planner) => {
                self.report.via_float += planner.tell(k, &self.probes[k], y);
            }
            Stage::Done(_) => unreachable!("a finished session has no outstanding probe"),
        }
        Ok(())
    }

    /// Evaluations told so far, the baseline included.
    pub fn evaluations(&self) -> usize {
        self.report.evaluations
    }

    /// The pattern: every dependency proven, plus whatever is unresolved (kept as possible
    /// dependencies and counted in [`TraceReport::unresolved`]). Errors: the baseline was never
    /// told; an allocation failed.
    pub fn finish(self) -> Result<Pattern> {
        let planner = match self.stage {
            Stage::Baseline => {
                return Err(Error::invalid("the baseline evaluation was not told yet"))
            }
            Stage::Planning(p) | Stage::Done(p) => p,
        };
        let dense = self.baseline_rows.expect("baseline told");
        let builder = PatternBuilder::new(self.m, self.n, dense)?;
        let (mut pattern, unresolved) = planner.finish(builder)?;
        pattern.report = TraceReport {
            unresolved,
            ..self.report
        };
        Ok(pattern)
    }
}
