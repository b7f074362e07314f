//! A trace session: the baseline, a planner, verification, the evaluation budget, and the
//! pattern at the end.
//!
//! A session is the ask/tell loop that every driver runs:
//!
//! ```text
//! let mut s = TraceSession::new(n, m, &x0, &options)?;
//! loop {
//!     let ids = s.ask()?;                    // outstanding evaluation requests of this step
//!     if ids.is_empty() { break; }
//!     for id in ids { /* evaluate f as s.request(id) says */ s.tell(id, &y)?; }
//! }
//! let pattern = s.finish()?;
//! ```
//!
//! The first step is the baseline (`x0` itself). Its outputs decide which rows can be traced: a
//! row NaN or Inf at `x0` is reported and stored dense, or refused, as [`NonFiniteBaseline`]
//! says.
//!
//! # Verification by finite perturbation
//!
//! NaN tracing proves a zero when an output stays bit-for-bit equal to its baseline while a probe
//! holds NaN. But NaN can be absorbed (`fmin`, clamps, `isnan` guards, a branch whose NaN path
//! gives the baseline value), and then the zero is wrong. With [`TraceOptions::verify`] (the
//! default) every probe is asked twice: with its tagged NaNs, and with the finite point
//! `x0_j + h_j` on the same inputs, `h_j = verify_step * max(|x0_j|, 1)` with the sign of `x0_j`.
//! An output that the NaNs left unchanged but the finite step changed (bit for bit, or beyond
//! [`TraceOptions::verify_tolerance`]) absorbed a NaN: the planner is told so
//! ([`crate::probe::Hit::Perturbed`]) and resolves it like any other change, and the entries it
//! finds that way are reported as [`EntryKind::Perturbation`]. Verification doubles the
//! evaluations; [`TraceReport::verification_evaluations`] counts its share.
//!
//! A zero that neither NaN nor the finite step can see (a derivative that vanishes on a whole
//! neighbourhood of `x0`, such as the inactive side of `fmin` or a rounded value) stays a zero:
//! at `x0` it is one. Multi-point tracing is for those.
//!
//! # Budget
//!
//! [`TraceOptions::max_evaluations`] counts every evaluation, the baseline included; when it runs
//! out, `ask` returns nothing and `finish` keeps whatever is unresolved as possible dependencies.
//! A probe whose verification did not fit in the budget is not used at all.

use crate::error::{Error, ErrorKind, Result};
use crate::pattern::{check_dims, EntryKind, Pattern, PatternBuilder, TraceReport};
use crate::planner::{chunked::Chunked, refine::Refine, Planner};
use crate::probe::Probe;
use crate::trace::journal::{self, Fnv, Journal, RequestKey};
use crate::trace::options::{NonFiniteBaseline, Strategy, TraceOptions};
use bitvec::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;

/// What an evaluation request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// f at `x0` (the probe is empty).
    Baseline,
    /// f at `x0` with the probe's inputs replaced by tagged NaNs ([`Probe::write_tags`]).
    Nan,
    /// f at `x0` with each input `j` of the probe set to [`TraceSession::finite_value`]`(j)`.
    Finite,
}

/// One evaluation a session asks for.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The probe whose inputs change.
    pub probe: &'a Probe,
    /// How they change.
    pub kind: RequestKind,
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
    x0: Vec<f64>,
    options: TraceOptions,
    stage: Stage,
    probes: Vec<Probe>,
    /// Requests of the current step told so far: one per probe, two with verification.
    told: BitVec,
    /// Outputs of half-told probes (verification pairs), by request id.
    pending: HashMap<usize, Vec<f64>>,
    baseline: Vec<f64>,
    baseline_rows: Option<BitVec>,
    report: TraceReport,
    /// Steps started (0: the baseline), the key of journal records.
    step: u64,
    /// Which point of a multi-point trace this session traces (journal keys).
    point: u64,
    /// With a journal: the fingerprint of x0, recorded with every request.
    point_fp: u64,
    journal: Option<Journal>,
    replayed: usize,
}

impl TraceSession {
    /// A session for f: R^n -> R^m at `x0`, with its own journal when the options name one
    /// (identified by `options.function_id` only: nanprop does not see the function).
    /// Errors: n or m zero or above `u32::MAX`, `x0.len() != n`, a NaN or Inf in `x0`, bad
    /// options ([`TraceOptions::validate`]), a journal that cannot be opened or belongs to
    /// another trace.
    pub fn new(n: usize, m: usize, x0: &[f64], options: &TraceOptions) -> Result<Self> {
        options.validate()?;
        let journal = match &options.journal {
            None => None,
            Some(path) => Some(open_journal(path, n, m, options, None)?),
        };
        Self::at_point(n, m, x0, options, journal, 0)
    }

    /// A session at point number `point` of a trace, replaying and appending to `journal`
    /// (which [`TraceSession::take_journal`] hands back for the next point). The
    /// options are validated by the caller.
    pub(crate) fn at_point(
        n: usize,
        m: usize,
        x0: &[f64],
        options: &TraceOptions,
        journal: Option<Journal>,
        point: u64,
    ) -> Result<Self> {
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
        let point_fp = match journal {
            Some(_) => journal::point_fingerprint(x0),
            None => 0,
        };
        Ok(TraceSession {
            step: 0,
            point,
            point_fp,
            journal,
            replayed: 0,
            n,
            m,
            x0: x0.to_vec(),
            options: options.clone(),
            stage: Stage::Baseline,
            probes: vec![Probe::new(Vec::new(), n)],
            told: bitvec![0; 1],
            pending: HashMap::new(),
            baseline: Vec::new(),
            baseline_rows: None,
            report: TraceReport::default(),
        })
    }

    /// Where request `id` of the current step sits in the trace (for journals and for
    /// executors that name their work, such as files for a batch scheduler).
    pub fn key(&self, id: usize) -> RequestKey {
        RequestKey {
            point: self.point,
            step: self.step,
            request: id as u64,
        }
    }

    /// Request `id` in words, for error messages: "the probe tagging ..." or "the verification
    /// of the probe tagging ...".
    pub fn describe(&self, id: usize) -> String {
        let r = self.request(id);
        match r.kind {
            RequestKind::Finite => format!("the verification of {}", r.probe.describe()),
            _ => r.probe.describe(),
        }
    }

    /// What a journal record of request `id` must match: its kind and its probe's inputs.
    fn request_fingerprint(&self, id: usize) -> u64 {
        let r = self.request(id);
        let kind = match r.kind {
            RequestKind::Baseline => 0,
            RequestKind::Nan => 1,
            RequestKind::Finite => 2,
        };
        r.probe
            .cols()
            .iter()
            .fold(Fnv::new().u64(kind), |h, &c| h.u64(u64::from(c)))
            .finish()
    }

    /// Requests per probe in the current step.
    fn per_probe(&self) -> usize {
        if self.options.verify && !matches!(self.stage, Stage::Baseline) {
            2
        } else {
            1
        }
    }

    /// Evaluations still allowed by the budget (`usize::MAX` without one).
    fn remaining(&self) -> usize {
        match self.options.max_evaluations {
            0 => usize::MAX,
            max => max.saturating_sub(self.report.evaluations),
        }
    }

    /// The ids of the evaluation requests to run next: the untold requests of the current step
    /// (as many as the budget allows, whole verification pairs only). Empty when the trace is
    /// complete or the budget is spent; [`TraceSession::finish`] then gives the pattern.
    pub fn ask(&mut self) -> Result<Vec<usize>> {
        loop {
            let ids = self.ask_step()?;
            if ids.is_empty() || self.journal.is_none() {
                return Ok(ids);
            }
            // Answer what the journal holds; return the rest (or go on to the next step).
            let mut rest = Vec::new();
            let mut y = vec![0.0; self.m];
            for id in ids {
                let (key, fp) = (self.key(id), self.request_fingerprint(id));
                let point_fp = self.point_fp;
                let journal = self.journal.as_mut().expect("journal");
                if journal.replay(key, point_fp, fp, &mut y)? {
                    self.replayed += 1;
                    self.tell_inner(id, &y)?;
                } else {
                    rest.push(id);
                }
            }
            if !rest.is_empty() {
                return Ok(rest);
            }
        }
    }

    fn ask_step(&mut self) -> Result<Vec<usize>> {
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
                    if self.remaining() < self.per_probe_planning() {
                        self.report.budget_exhausted = true;
                        self.stage = Stage::Planning(planner);
                        return Ok(Vec::new());
                    }
                    self.probes = planner.ask()?;
                    let per = self.per_probe_planning();
                    self.told = bitvec![0; self.probes.len() * per];
                    if self.probes.is_empty() {
                        self.stage = Stage::Done(planner);
                        return Ok(Vec::new());
                    }
                    self.report.steps += 1;
                    self.step += 1;
                    self.stage = Stage::Planning(planner);
                }
            }
        }
        let per = self.per_probe();
        let mut budget = self.remaining();
        let mut ids = Vec::new();
        for k in 0..self.told.len() / per {
            let untold: Vec<usize> = (k * per..(k + 1) * per)
                .filter(|&id| !self.told[id])
                .collect();
            if untold.is_empty() {
                continue;
            }
            if untold.len() > budget {
                self.report.budget_exhausted = true;
                break;
            }
            budget -= untold.len();
            ids.extend(untold);
        }
        Ok(ids)
    }

    fn per_probe_planning(&self) -> usize {
        if self.options.verify {
            2
        } else {
            1
        }
    }

    /// Request `id` of the current step.
    ///
    /// # Panics
    /// If `id` is not an index [`TraceSession::ask`] returned for this step.
    pub fn request(&self, id: usize) -> Request<'_> {
        let per = self.per_probe();
        let kind = match (&self.stage, id % per) {
            (Stage::Baseline, _) => RequestKind::Baseline,
            (_, 0) => RequestKind::Nan,
            _ => RequestKind::Finite,
        };
        Request {
            probe: &self.probes[id / per],
            kind,
        }
    }

    /// The value of input `j` in a [`RequestKind::Finite`] request: `x0_j + h_j` (module docs).
    pub fn finite_value(&self, j: usize) -> f64 {
        let x = self.x0[j];
        let sign = if x < 0.0 { -1.0 } else { 1.0 };
        x + self.options.verify_step * x.abs().max(1.0) * sign
    }

    /// Writes the input of request `id` into `x` (n values): `x0`, with the probe's tagged NaNs
    /// or its verification values. For drivers that evaluate elsewhere (threads, processes,
    /// other machines).
    ///
    /// # Panics
    /// If `id` is not an outstanding request or `x.len() != n`.
    pub fn write_input(&self, id: usize, x: &mut [f64]) {
        x.copy_from_slice(&self.x0);
        let r = self.request(id);
        match r.kind {
            RequestKind::Baseline | RequestKind::Nan => r.probe.write_tags(x),
            RequestKind::Finite => r
                .probe
                .cols()
                .iter()
                .for_each(|&j| x[j as usize] = self.finite_value(j as usize)),
        }
    }

    /// Whether request `id` is outstanding (asked and not told) in the current step.
    pub fn outstanding(&self, id: usize) -> bool {
        id < self.told.len() && !self.told[id]
    }

    /// The current step (0: the baseline; one more each time the planner plans a new batch).
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Inputs (n).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Outputs (m).
    pub fn m(&self) -> usize {
        self.m
    }

    /// The point the trace is at.
    pub fn x0(&self) -> &[f64] {
        &self.x0
    }

    /// Whether the verification step changed output `i`: `fin` against the baseline `base`.
    fn changed(&self, base: f64, fin: f64) -> bool {
        match self.options.verify_tolerance {
            0.0 => base.to_bits() != fin.to_bits(),
            t => !fin.is_finite() || (fin - base).abs() > t * base.abs().max(1.0),
        }
    }

    /// The outputs `y` (m values) of request `id`. Errors: `id` out of range or told already,
    /// `y.len() != m`, and at the baseline a non-finite output when the options make that an
    /// error.
    pub fn tell(&mut self, id: usize, y: &[f64]) -> Result<()> {
        if id >= self.told.len() || self.told[id] {
            return Err(Error::invalid(format!(
                "request {id} is not outstanding in this step"
            )));
        }
        if y.len() != self.m {
            return Err(Error::invalid(format!(
                "{} outputs told, expected m = {}",
                y.len(),
                self.m
            )));
        }
        if self.journal.is_some() {
            let (key, fp, point_fp) = (self.key(id), self.request_fingerprint(id), self.point_fp);
            if let Some(journal) = &mut self.journal {
                journal.append(key, point_fp, fp, y)?;
            }
        }
        self.tell_inner(id, y)
    }

    /// Tells outputs already validated (by `tell`, or read from the journal).
    fn tell_inner(&mut self, id: usize, y: &[f64]) -> Result<()> {
        self.told.set(id, true);
        self.report.evaluations += 1;
        let kind = self.request(id).kind;
        if kind == RequestKind::Finite {
            self.report.verification_evaluations += 1;
        }
        if kind == RequestKind::Baseline {
            return self.tell_baseline(y);
        }
        let per = self.per_probe();
        let k = id / per;
        // With a tolerance, a finite output within it of its baseline counts as unchanged, in
        // the NaN probe as in its verification.
        let y = self.within_tolerance(y, kind);
        let (y_nan, perturbed): (Cow<[f64]>, Vec<u32>) = if per == 1 {
            (y, Vec::new())
        } else {
            let twin = k * per + usize::from(kind == RequestKind::Nan);
            let Some(other) = self.pending.remove(&twin) else {
                self.pending.insert(id, y.into_owned());
                return Ok(());
            };
            let (y_nan, y_fin): (Cow<[f64]>, Cow<[f64]>) = if kind == RequestKind::Nan {
                (y, Cow::Owned(other))
            } else {
                (Cow::Owned(other), y)
            };
            let base = &self.baseline;
            let perturbed = (0..self.m)
                .filter(|&i| {
                    base[i].is_finite()
                        && base[i].to_bits() == y_nan[i].to_bits()
                        && self.changed(base[i], y_fin[i])
                })
                .map(|i| i as u32)
                .collect();
            (y_nan, perturbed)
        };
        let Stage::Planning(planner) = &mut self.stage else {
            unreachable!("probes are told only while planning")
        };
        self.report.via_float += planner.tell(k, &self.probes[k], &y_nan, &perturbed);
        Ok(())
    }

    /// `y` with finite outputs within the tolerance of the baseline set to the baseline (a NaN
    /// request) ; unchanged without a tolerance or for a verification request (which compares
    /// with the tolerance itself).
    fn within_tolerance<'a>(&self, y: &'a [f64], kind: RequestKind) -> Cow<'a, [f64]> {
        let t = self.options.verify_tolerance;
        if t == 0.0 || kind != RequestKind::Nan {
            return Cow::Borrowed(y);
        }
        y.iter()
            .zip(&self.baseline)
            .map(|(&v, &b)| {
                if b.is_finite() && v.is_finite() && (v - b).abs() <= t * b.abs().max(1.0) {
                    b
                } else {
                    v
                }
            })
            .collect()
    }

    fn tell_baseline(&mut self, y: &[f64]) -> Result<()> {
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
        self.baseline = y.to_vec();
        let (n, baseline) = (self.n, y.to_vec());
        let planner: Box<dyn Planner> = match self.options.strategy {
            Strategy::OneHot => Box::new(Chunked::new(n, 1, baseline)),
            Strategy::Chunked => Box::new(Chunked::new(n, self.options.chunk_size, baseline)),
            Strategy::Payload => Box::new(Refine::new(n, baseline)),
        };
        self.stage = Stage::Planning(planner);
        Ok(())
    }

    /// Evaluations told so far, the baseline included.
    pub fn evaluations(&self) -> usize {
        self.report.evaluations
    }

    /// Takes the journal out of the session (to hand it to the next point of a trace, or to
    /// keep it after a failure); the session then records nothing more.
    pub(crate) fn take_journal(&mut self) -> Option<Journal> {
        self.journal.take()
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
        let found_by_perturbation = pattern
            .kinds()
            .iter()
            .filter(|&&k| k == EntryKind::Perturbation)
            .count();
        pattern.report = TraceReport {
            unresolved,
            found_by_perturbation,
            replayed: self.replayed,
            ..self.report
        };
        Ok(pattern)
    }
}

/// Opens the journal a trace's options name, for a function described by `identity` (when the
/// black box knows itself) and the options' `function_id`.
pub(crate) fn open_journal(
    path: &std::path::Path,
    n: usize,
    m: usize,
    options: &TraceOptions,
    identity: Option<&str>,
) -> Result<Journal> {
    let id = options.function_id.as_deref();
    let function = journal::function_fingerprint(identity, id);
    let described = identity.or(id);
    Journal::open(
        path,
        n,
        m,
        journal::options_fingerprint(options),
        (function, described),
    )
}
