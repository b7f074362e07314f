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
//! An error of an ask, a tell or a failure that is not about its arguments (an id not
//! outstanding, outputs of the wrong length, a code of 0: nothing changed, and the call may be
//! made again) stops the trace: out of memory part way through a change, the noise or a refused
//! baseline under the options that make them errors, the failure of an evaluation the trace
//! cannot do without. Going on from there could lose a dependency without a word, so every
//! later ask, tell, failure and finish is an [`ErrorKind::InvalidArgument`] naming the first
//! error; a new session with the same journal replays the evaluations told so far.
//!
//! # Verification by finite perturbation
//!
//! NaN tracing proves a zero when an output stays bit-for-bit equal to its baseline while a probe
//! holds NaN. But NaN can be absorbed (`fmin`, clamps, `isnan` guards, a branch whose NaN path
//! gives the baseline value), and then the zero is wrong. With [`TraceOptions::verify`] (the
//! default) the session guards the zeros in two stages:
//!
//! 1. **The check** ([`crate::trace::check`]): after the NaN trace, the pattern it found is
//!    checked by two evaluations per color class of a coloring of its columns, every input of
//!    the class moved by its own random step, up and then down. It costs `2 chi` evaluations
//!    (tridiagonal: 6), and finds the rows where a NaN was absorbed.
//! 2. **The re-trace** of those rows alone (if any), where every probe that proves a zero is
//!    verified by two finite evaluations on its inputs: `x0_j + h_j` and `x0_j - h'_j`, with
//!    `h_j = r_j * verify_step * max(|x0_j|, 1)` in the direction of the sign of `x0_j` and
//!    `r_j` drawn in [0.5, 1.5) for each input of each request from [`TraceOptions::seed`]. An
//!    output that the NaNs left unchanged but a finite step changed (bit for bit, or beyond
//!    [`TraceOptions::verify_tolerance`]) absorbed a NaN: the planner is told so
//!    ([`crate::probe::Hit::Perturbed`]) and resolves it like any other change, and the
//!    entries it finds that way are reported as [`EntryKind::Perturbation`].
//!
//! The independent magnitudes matter: a guard on `x_a - x_b` at equal values, on `x_a + x_b` at
//! opposite values, or on any combination that vanishes at `x0`, absorbs the NaN *and* cancels
//! a step that moves its inputs by equal or proportional amounts; with independent steps it
//! cancels only by chance of measure zero. Steps both ways catch a kink that shows on one side
//! of `x0` only (a clamp at its upper bound with `x0 > 0`). Evaluations spent on the check and
//! the verifications are counted in [`TraceReport::verification_evaluations`]; the rows traced
//! again in [`TraceReport::rechecked_rows`].
//!
//! # Failures
//!
//! A NaN request whose evaluation fails in a way its inputs may cause is split, down to single
//! inputs, and a NaN-intolerant input is perturbed instead ([`crate::trace::split`],
//! [`TraceSession::fail`]).
//!
//! A zero that neither NaN nor the finite step can see (a derivative that vanishes on a whole
//! neighbourhood of `x0`, such as the inactive side of `fmin` or a rounded value) stays a zero:
//! at `x0` it is one. Multi-point tracing is for those.
//!
//! # Budget
//!
//! By default there is no budget: the payload planner is capped at [`Refine::allowance`]
//! probes, recognises dense rows (their entries kept as [`EntryKind::Assumed`]), and the guard
//! adds the check and the verified re-trace of the rows that fail it.
//! [`TraceOptions::max_evaluations`] set by the caller counts every evaluation, the baseline
//! and the guard included; when it runs out, `ask` returns nothing and `finish` keeps whatever
//! is unresolved as possible dependencies. A probe whose verification did not fit is not used
//! at all; check classes that do not fit are not asked, and the zeros they would have checked
//! are kept ([`EntryKind::Unresolved`]): an unchecked zero is never reported as one.

use crate::error::{
    collect, copied, copied_bits, filled, push, reserve, zero_bits, Error, ErrorKind, Result,
};
use crate::pattern::{check_dims, EntryKind, Pattern, PatternBuilder, TraceReport};
use crate::planner::{chunked::Chunked, refine::Refine, Planner};
use crate::precision::Precision;
use crate::probe::Probe;
use crate::trace::check::Check;
use crate::trace::failure::Failure;
use crate::trace::journal::{self, Fnv, Journal, RequestKey};
use crate::trace::noise::NoiseEstimate;
use crate::trace::options::{Noise, NonFiniteBaseline, Strategy, TraceOptions};
use crate::trace::split::{Merge, Part, PERTURBATION_POINTS};
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
    /// f at `x0` with each input `j` of the probe set to
    /// [`TraceSession::finite_value`]`(id, j)`: a probe's verification, or a perturbation of a
    /// NaN-intolerant input ([`crate::trace::split`]).
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

/// A probe's NaN outputs waiting for its verifications (a step up and a step down).
struct Pending {
    y_nan: Vec<f64>,
    /// Rows found absorbed so far (and by perturbing NaN-intolerant inputs).
    absorbed: Vec<u32>,
    /// Verifications not told yet.
    waiting: usize,
}

enum Stage {
    Baseline,
    /// The NaN trace; or, after a check, the trace of the rows that failed it (with every
    /// probe verified).
    Planning(Box<dyn Planner>),
    /// The check of the NaN trace's pattern ([`crate::trace::check`]).
    Checking(Box<Check>),
    Done(Box<dyn Planner>),
    /// The check found nothing: this is the pattern (its report still to fill).
    Checked(Box<Pattern>),
}

/// The ask/tell state of one trace (see the module docs).
pub struct TraceSession {
    n: usize,
    m: usize,
    x0: Vec<f64>,
    options: TraceOptions,
    stage: Stage,
    probes: Vec<Probe>,
    /// Requests of the current step told (or failed) so far: one per probe, two with
    /// verification, then the parts of failed requests.
    told: BitVec,
    /// Requests below this id are the planner's probes'; from it on, `parts`.
    static_requests: usize,
    /// Requests made because others failed, in this step ([`crate::trace::split`]).
    parts: Vec<Part>,
    /// Failed requests whose parts are outstanding, by id.
    merges: HashMap<usize, Merge>,
    /// Inputs whose NaN alone made f fail.
    failed_columns: Vec<u32>,
    /// For each NaN-intolerant input whose perturbations are done: the rows they changed.
    intolerant: HashMap<u32, Vec<u32>>,
    /// Probes whose verifications are outstanding, by probe.
    pending: HashMap<usize, Pending>,
    /// The baseline outputs (shared with the planner: one copy of m values).
    baseline: std::sync::Arc<Vec<f64>>,
    baseline_rows: Option<BitVec>,
    report: TraceReport,
    /// The precision the check is sized for: the black box's, or single when tags came back
    /// through a float.
    check_precision: Precision,
    /// Steps started (0: the baseline), the key of journal records.
    step: u64,
    /// Which point of a multi-point trace this session traces (journal keys).
    point: u64,
    /// With a journal: the fingerprint of x0, recorded with every request.
    point_fp: u64,
    journal: Option<Journal>,
    replayed: usize,
    /// Whether each probe is paired with its verification (the re-trace after a check).
    pairing: bool,
    /// After a failed check: the checked pattern and the rows traced again.
    checked: Option<(Pattern, BitVec)>,
    /// The change tolerance in effect: the caller's, or the one set from the noise.
    tolerance: f64,
    /// Repeated values of noisy outputs ([`crate::trace::noise`]).
    noise: NoiseEstimate,
    /// The error that stopped the trace, once an ask, a tell or a failure met one after it had
    /// begun to change the session (out of memory, the noise or a refused baseline stopping
    /// the trace): the session is then part way through a change, and going on could lose a
    /// dependency without a word. Every later ask, tell, failure and finish is an error naming
    /// it ([`TraceSession::go_on`]).
    stopped: Option<String>,
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
            pairing: false,
            checked: None,
            n,
            m,
            x0: copied(x0, "x0")?,
            options: options.clone(),
            stage: Stage::Baseline,
            probes: vec![Probe::new(Vec::new(), n)],
            told: bitvec![0; 1],
            static_requests: 1,
            parts: Vec::new(),
            merges: HashMap::new(),
            failed_columns: Vec::new(),
            intolerant: HashMap::new(),
            pending: HashMap::new(),
            baseline: Default::default(),
            baseline_rows: None,
            report: TraceReport {
                tolerance: options.verify_tolerance,
                ..TraceReport::default()
            },
            check_precision: options.precision,
            tolerance: options.verify_tolerance,
            noise: NoiseEstimate::default(),
            stopped: None,
        })
    }

    /// Ok while the trace can go on; the error that stopped it otherwise
    /// ([`TraceSession::stopped`]).
    fn go_on(&self) -> Result<()> {
        match &self.stopped {
            None => Ok(()),
            Some(why) => Err(Error::invalid(format!(
                "this trace session cannot go on after an earlier error ({why}); start a new \
                 one (with a journal, it replays the evaluations told so far)"
            ))),
        }
    }

    /// `r`, noting its error as the one that stopped the trace.
    fn stop_on<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            self.stopped = Some(e.message.clone());
        }
        r
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
        if let Stage::Checking(_) = self.stage {
            let moved = r
                .probe
                .describe()
                .replacen("the probe tagging", "moving", 1);
            let way = if id.is_multiple_of(2) { "up" } else { "down" };
            return format!("the check of the traced pattern {moved} {way}");
        }
        match (r.kind, self.perturbation_of(id)) {
            (RequestKind::Finite, Some(p)) => format!(
                "perturbation {} of input {}, whose NaN alone makes the black box fail",
                p + 1,
                r.probe.cols()[0]
            ),
            (RequestKind::Finite, None) => format!("the verification of {}", r.probe.describe()),
            _ => r.probe.describe(),
        }
    }

    /// For a perturbation of a NaN-intolerant input, its number.
    fn perturbation_of(&self, id: usize) -> Option<usize> {
        id.checked_sub(self.static_requests)
            .and_then(|k| self.parts.get(k))
            .and_then(|p| p.perturbation)
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
        match self.stage {
            Stage::Checking(_) => 2,
            Stage::Planning(_) | Stage::Done(_) if self.pairing => 3,
            _ => 1,
        }
    }

    /// The most evaluations this trace may make: the caller's budget, or none.
    fn cap(&self) -> usize {
        match self.options.max_evaluations {
            0 => usize::MAX,
            max => max,
        }
    }

    /// Whether the payload planner works under its implicit cap ([`Refine::allowance`]: what it
    /// leaves unresolved is [`EntryKind::Assumed`]) rather than under a budget the caller set
    /// ([`EntryKind::Unresolved`]) or none.
    fn implicit_cap(&self) -> bool {
        self.options.max_evaluations == 0 && self.options.strategy == Strategy::Payload
    }

    /// Evaluations still allowed by the cap.
    fn remaining(&self) -> usize {
        self.cap().saturating_sub(self.report.evaluations)
    }

    /// The ids of the evaluation requests to run next: the untold requests of the current step
    /// (as many as the budget allows, whole verification pairs only). Empty when the trace is
    /// complete or the budget is spent; [`TraceSession::finish`] then gives the pattern.
    /// Errors (which stop the trace: module docs): out of memory; an error of an evaluation the
    /// journal replays; and the trace stopped by an earlier error.
    pub fn ask(&mut self) -> Result<Vec<usize>> {
        self.go_on()?;
        let asked = self.ask_replaying();
        self.stop_on(asked)
    }

    /// [`TraceSession::ask`], answering from the journal what it holds.
    fn ask_replaying(&mut self) -> Result<Vec<usize>> {
        loop {
            let ids = self.ask_step()?;
            if ids.is_empty() || self.journal.is_none() {
                return Ok(ids);
            }
            // Answer what the journal holds; return the rest (or go on to the next step).
            let mut rest = Vec::new();
            let mut y = filled(0.0, self.m, "replayed outputs")?;
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
        while self.told.all() {
            if !self.advance()? {
                return Ok(Vec::new());
            }
        }
        let per = self.per_probe();
        let mut budget = self.remaining();
        let mut ids = Vec::new();
        reserve(&mut ids, self.told.len(), "requests")?;
        for k in 0..self.static_requests / per {
            let untold: Vec<usize> = (k * per..(k + 1) * per)
                .filter(|&id| !self.told[id])
                .collect();
            if untold.is_empty() {
                continue;
            }
            // A NaN request is asked only if its verification would fit too.
            let reserve = if self.pairing && untold[0] == k * per {
                per
            } else {
                untold.len()
            };
            if reserve > budget {
                self.report.budget_exhausted = true;
                break;
            }
            budget -= reserve;
            ids.extend(untold);
        }
        // The parts of failed requests: the requests they stand in for were already allowed.
        ids.extend((self.static_requests..self.told.len()).filter(|&id| !self.told[id]));
        Ok(ids)
    }

    /// Starts the next step: the planner's next probes, the check after the NaN trace, or the
    /// trace of the rows that failed the check. False when there is nothing more to ask.
    fn advance(&mut self) -> Result<bool> {
        match std::mem::replace(&mut self.stage, Stage::Baseline) {
            Stage::Baseline => Err(Error::invalid(
                "the trace stopped at the baseline (its outputs were refused)",
            )),
            stage @ (Stage::Done(_) | Stage::Checked(_)) => {
                self.stage = stage;
                Ok(false)
            }
            Stage::Checking(check) => {
                let check = *check;
                let alarms = copied_bits(&check.alarms, "rows to trace again")?;
                let checked = check.into_pattern(&self.baseline, EntryKind::Unresolved)?;
                if !alarms.any() {
                    self.stage = Stage::Checked(Box::new(checked));
                    return Ok(false);
                }
                // Trace the rows that failed again, alone, verifying every probe.
                let mut masked = copied(&self.baseline, "baseline outputs")?;
                for i in alarms.iter_zeros() {
                    masked[i] = f64::NAN;
                }
                self.pairing = true;
                self.stage = Stage::Planning(self.planner_for(std::sync::Arc::new(masked))?);
                self.checked = Some((checked, alarms));
                self.start_step(0)
            }
            Stage::Planning(mut planner) => {
                let per = if self.pairing { 3 } else { 1 };
                if self.remaining() < per {
                    self.report.budget_exhausted = true;
                    self.stage = Stage::Planning(planner);
                    return Ok(false);
                }
                let probes = planner.ask()?;
                if !probes.is_empty() {
                    self.probes = probes;
                    self.stage = Stage::Planning(planner);
                    return self.start_step(per);
                }
                if self.pairing || !self.options.verify || self.checked.is_some() {
                    self.stage = Stage::Done(planner);
                    return Ok(false);
                }
                // The NaN trace is complete: check its pattern.
                let rows = self.baseline_rows.as_ref().expect("baseline told");
                let builder =
                    PatternBuilder::new(self.m, self.n, copied_bits(rows, "non-finite rows")?)?;
                let pattern = planner.finish(builder)?;
                // Tags that came back through a float show float arithmetic inside (a double
                // interface over REAL*4 internals): size the check for float then too, or its
                // rounding would fail every row.
                if self.report.via_float > 0 {
                    self.check_precision = Precision::Single;
                }
                // With no budget set, a check that compresses nothing is weighed against the
                // Jacobians to come (`check.rs`, `CHECK_PAYBACK`).
                let weigh = self.options.max_evaluations == 0;
                let mut check = Check::new(pattern, weigh)?.for_precision(self.check_precision);
                if !check.claims_any(&self.baseline) {
                    // Every traced row depends on every input: no zero to check.
                    self.stage = Stage::Checked(Box::new(check.pattern));
                    return Ok(false);
                }
                // Under the cap, the classes that do not fit are not checked and their zeros
                // are kept (Check::into_pattern).
                let fit = self.remaining() / 2;
                if fit < check.classes() {
                    check.limit(fit);
                    self.report.budget_exhausted = true;
                }
                self.probes = check.probes(self.n)?;
                if self.probes.is_empty() {
                    let kept = check.into_pattern(&self.baseline, EntryKind::Unresolved)?;
                    self.stage = Stage::Checked(Box::new(kept));
                    return Ok(false);
                }
                self.stage = Stage::Checking(Box::new(check));
                self.start_step(2)
            }
        }
    }

    /// Starts a step of `self.probes` with `per` requests each (0: fresh planner, ask it).
    fn start_step(&mut self, per: usize) -> Result<bool> {
        if per == 0 {
            return self.advance();
        }
        self.static_requests = self.probes.len() * per;
        self.told = zero_bits(self.static_requests, "requests told")?;
        if self.pairing {
            // Verifications wait for their probe's NaN outputs: asked only if those prove a
            // zero (TraceSession::nan_told).
            for k in 0..self.probes.len() {
                for v in 1..per {
                    self.told.set(k * per + v, true);
                }
            }
        }
        self.parts.clear();
        self.merges.clear();
        self.report.steps += 1;
        self.step += 1;
        if matches!(self.stage, Stage::Planning(_)) {
            self.set_aside_intolerant()?;
        }
        Ok(true)
    }

    /// Request `id` of the current step.
    ///
    /// # Panics
    /// If `id` is not an index [`TraceSession::ask`] returned for this step.
    pub fn request(&self, id: usize) -> Request<'_> {
        if let Some(part) = id.checked_sub(self.static_requests).map(|k| &self.parts[k]) {
            let kind = match part.perturbation {
                Some(_) => RequestKind::Finite,
                None => RequestKind::Nan,
            };
            return Request {
                probe: &part.probe,
                kind,
            };
        }
        let per = self.per_probe();
        let kind = match (&self.stage, id % per) {
            (Stage::Baseline, _) => RequestKind::Baseline,
            (Stage::Checking(_), _) => RequestKind::Finite,
            (_, 0) => RequestKind::Nan,
            _ => RequestKind::Finite,
        };
        Request {
            probe: &self.probes[id / per],
            kind,
        }
    }

    /// The value of input `j` in the [`RequestKind::Finite`] request `id`: `x0_j + h_j`, with
    /// `h_j = r * verify_step * max(|x0_j|, 1)` in the direction of the sign of `x0_j` (+ at 0),
    /// `r` drawn in [0.5, 1.5) for this input of this request from the options' seed, so that
    /// no combination of inputs moves by equal or proportional steps (module docs). The
    /// perturbations of a NaN-intolerant input go up, down, and up by ten times more.
    pub fn finite_value(&self, id: usize, j: usize) -> f64 {
        self.finite_values(id)(j)
    }

    /// [`TraceSession::finite_value`] for request `id`, as a function of the input: what the
    /// inputs share (the direction, the random draw's leading keys) is worked out once.
    fn finite_values(&self, id: usize) -> impl Fn(usize) -> f64 + '_ {
        let (direction, scale) = match self.perturbation_of(id).map(|p| p % PERTURBATION_POINTS) {
            Some(1) => (-1.0, 1.0),
            Some(2) => (1.0, 10.0),
            // The second verification of a probe steps down.
            None if id < self.static_requests && id % self.per_probe() == 2 => (-1.0, 1.0),
            _ => (1.0, 1.0),
        };
        let checking = matches!(self.stage, Stage::Checking(_));
        let magnitude = self.magnitudes(id);
        move |j| {
            let x = self.x0[j];
            let r = magnitude(j);
            if checking {
                return Check::value(x, id, r, self.check_precision);
            }
            let sign = if x < 0.0 { -1.0 } else { 1.0 };
            x + self.options.verify_step * x.abs().max(1.0) * sign * direction * scale * r
        }
    }

    /// The random factor in [0.5, 1.5) of each input's step in request `id` of this step, as
    /// a function of the input.
    fn magnitudes(&self, id: usize) -> impl Fn(usize) -> f64 {
        let shared = [self.options.seed, self.point, self.step, id as u64];
        let prefix = crate::rng::unit_prefix(&shared);
        move |j| 0.5 + crate::rng::unit_after(prefix, j as u64)
    }

    /// Writes the input of request `id` into `x` (n values): `x0`, with the probe's tagged NaNs
    /// or its verification values. For drivers that evaluate elsewhere (threads, processes,
    /// other machines).
    ///
    /// # Panics
    /// If `id` is not an outstanding request or `x.len() != n`.
    pub fn write_input(&self, id: usize, x: &mut [f64]) {
        x.copy_from_slice(&self.x0);
        self.write_changes(id, x);
    }

    /// Writes only what request `id` changes from `x0` into `x`, which holds `x0` elsewhere:
    /// O(inputs of the probe). [`TraceSession::restore`] puts `x0` back.
    ///
    /// # Panics
    /// As [`TraceSession::write_input`].
    pub fn write_changes(&self, id: usize, x: &mut [f64]) {
        let r = self.request(id);
        match r.kind {
            RequestKind::Baseline | RequestKind::Nan => r.probe.write_tags(x),
            RequestKind::Finite => {
                let value = self.finite_values(id);
                (r.probe.cols().iter()).for_each(|&j| x[j as usize] = value(j as usize))
            }
        }
    }

    /// Puts `x0` back where [`TraceSession::write_changes`] wrote for request `id`.
    pub fn restore(&self, id: usize, x: &mut [f64]) {
        self.request(id).probe.restore(&self.x0, x);
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
        changed_beyond(self.tolerance, base, fin)
    }

    /// The outputs `y` (m values) of request `id`. Errors: `id` out of range or told already,
    /// `y.len() != m` (nothing changed: tell again); at the baseline a non-finite output when
    /// the options make that an error, the noise when they make that one, out of memory (these
    /// stop the trace: module docs); the trace stopped by an earlier error.
    pub fn tell(&mut self, id: usize, y: &[f64]) -> Result<()> {
        self.go_on()?;
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
        let told = self.tell_inner(id, y);
        self.stop_on(told)
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
        if let Stage::Checking(_) = self.stage {
            return self.tell_check(id, y);
        }
        // Noise shows in every evaluation: the NaN requests among the first 16 evaluations and,
        // after them, those whose number in their step is a multiple of 32 (the first of every
        // step) are examined, a pass over the outputs each (`noise.rs`).
        if kind == RequestKind::Nan && (self.report.evaluations <= 16 || id.is_multiple_of(32)) {
            self.observe_noise(id, y)?;
        }
        // With a tolerance, a finite output within it of its baseline counts as unchanged, in
        // the NaN probe as in its verification.
        let y = self.within_tolerance(y, kind)?;
        if id >= self.static_requests {
            return self.tell_part(id, &y);
        }
        let k = id / self.per_probe();
        match kind {
            RequestKind::Nan => self.nan_told(k, y, Vec::new()),
            _ => self.finite_told(k, y),
        }
    }

    /// The NaN outputs of probe `k` are known, and the rows found by perturbing its
    /// NaN-intolerant inputs. With verification, its steps up and down are asked now, if the
    /// outputs prove a zero.
    fn nan_told(&mut self, k: usize, y_nan: Cow<[f64]>, extra: Vec<u32>) -> Result<()> {
        let per = self.per_probe();
        if per == 1 || !self.claims(k, &y_nan) {
            // Nothing to verify: every row the probe tests changed.
            return self.planner_tell(k, &y_nan, &extra);
        }
        for v in 1..per {
            self.told.set(k * per + v, false);
        }
        let pending = Pending {
            y_nan: y_nan.into_owned(),
            absorbed: extra,
            waiting: per - 1,
        };
        self.pending.insert(k, pending);
        Ok(())
    }

    /// A verification of probe `k` is known.
    fn finite_told(&mut self, k: usize, y_fin: Cow<[f64]>) -> Result<()> {
        let mut p = self.pending.remove(&k).ok_or_else(|| {
            Error::new(ErrorKind::Internal, "a verification before its NaN outputs")
        })?;
        p.absorbed = self.absorbed(&p.y_nan, &y_fin, p.absorbed)?;
        p.waiting -= 1;
        if p.waiting > 0 {
            self.pending.insert(k, p);
            return Ok(());
        }
        self.planner_tell(k, &p.y_nan, &p.absorbed)
    }

    /// Rows the NaNs left unchanged but the finite step changed, with `extra` (sorted).
    fn absorbed(&self, y_nan: &[f64], y_fin: &[f64], mut extra: Vec<u32>) -> Result<Vec<u32>> {
        let base = &self.baseline;
        for i in 0..self.m {
            if base[i].is_finite()
                && base[i].to_bits() == y_nan[i].to_bits()
                && self.changed(base[i], y_fin[i])
            {
                push(&mut extra, i as u32, "absorbed rows")?;
            }
        }
        extra.sort_unstable();
        extra.dedup();
        Ok(extra)
    }

    /// The outputs of check request `id` ([`crate::trace::check`]).
    fn tell_check(&mut self, id: usize, y: &[f64]) -> Result<()> {
        let Stage::Checking(mut check) = std::mem::replace(&mut self.stage, Stage::Baseline) else {
            unreachable!("told while checking")
        };
        let slack = self.tolerance;
        // The check asks about a class's two requests only (2 c up, 2 c + 1 down).
        let pair = id - id % 2;
        let (up, down) = (self.magnitudes(pair), self.magnitudes(pair + 1));
        // What the test reads of the session, shared by the halves of its rows (`check.rs`).
        let (x0, p) = (&self.x0[..], self.check_precision);
        let told = check.tell(
            id,
            y,
            &self.baseline,
            |b, v| changed_beyond(slack, b, v),
            |id, j| {
                // The step the black box sees: both ends in its own precision.
                debug_assert!(id == pair || id == pair + 1);
                let r = if id == pair { up(j) } else { down(j) };
                let moved = Check::value(x0[j], id, r, p);
                (p.round(moved) - p.round(x0[j]), x0[j].abs().max(1.0))
            },
            slack,
        );
        // The check stays in the session, failed or not (a failure then stops the trace:
        // module docs), so the stage always says where the trace is.
        self.stage = Stage::Checking(check);
        told
    }

    /// Whether the NaN outputs of probe `k` prove a zero the planner would use.
    fn claims(&self, k: usize, y_nan: &[f64]) -> bool {
        match &self.stage {
            Stage::Planning(planner) => planner.claims(k, &self.probes[k], y_nan),
            _ => false,
        }
    }

    fn planner_tell(&mut self, k: usize, y_nan: &[f64], perturbed: &[u32]) -> Result<()> {
        let Stage::Planning(planner) = &mut self.stage else {
            unreachable!("probes are told only while planning")
        };
        self.report.via_float += planner.tell(k, &self.probes[k], y_nan, perturbed)?;
        Ok(())
    }

    /// Adds the outputs of NaN request `id` to the noise estimate. When they show noise and no
    /// tolerance is in effect: sets one from the estimate ([`Noise::Tolerate`]), or stops the
    /// trace ([`Noise::Error`]) ([`crate::trace::noise`]).
    fn observe_noise(&mut self, id: usize, y: &[f64]) -> Result<()> {
        let rows = self.noise.observe(y, &self.baseline);
        self.report.noise = self.noise.relative();
        if self.tolerance != 0.0 {
            if self.options.verify_tolerance == 0.0 {
                // Set from the noise: it follows the estimate up (never down, so that what was
                // counted as noise stays noise).
                self.tolerance = self.tolerance.max(self.noise.tolerance());
                self.report.tolerance = self.tolerance;
            }
            return Ok(());
        }
        if rows.is_empty() {
            return Ok(());
        }
        let Some(words) = crate::trace::noise::noisy(y, &self.baseline, || self.describe(id))
        else {
            return Ok(());
        };
        match self.options.noise {
            Noise::Error => Err(Error::new(ErrorKind::BlackBox, words)),
            Noise::Tolerate => {
                self.tolerance = self.noise.tolerance();
                self.report.tolerance = self.tolerance;
                Ok(())
            }
        }
    }

    // --- failure-tolerant probing (crate::trace::split)

    /// A part of a failed request told its outputs.
    fn tell_part(&mut self, id: usize, y: &[f64]) -> Result<()> {
        let part = &self.parts[id - self.static_requests];
        let parent = part.parent;
        if part.perturbation.is_some() {
            let rows = collect(
                (0..self.m)
                    .filter(|&i| {
                        self.baseline[i].is_finite() && self.changed(self.baseline[i], y[i])
                    })
                    .map(|i| i as u32),
                "rows a perturbation changed",
            )?;
            let baseline = copied(&self.baseline, "baseline outputs")?;
            return self.merge_into(parent, &baseline, &rows);
        }
        self.merge_into(parent, y, &[])
    }

    /// Merges a part's outputs into the failed request `parent` it stands in for; when all its
    /// parts are in, the failed request is answered (and so on up).
    fn merge_into(&mut self, parent: usize, y: &[f64], perturbed: &[u32]) -> Result<()> {
        let anonymous = self.n > crate::codec::MAX_ID as usize;
        let merge = self
            .merges
            .get_mut(&parent)
            .ok_or_else(|| Error::new(ErrorKind::Internal, "a part without its failed request"))?;
        merge.take_tagged(y, &self.baseline, perturbed, anonymous);
        merge.waiting -= 1;
        if merge.waiting > 0 {
            return Ok(());
        }
        let merge = self.merges.remove(&parent).expect("present");
        let column = merge.column;
        let (y, perturbed) = merge.outputs(&self.baseline);
        if let Some(c) = column {
            self.intolerant
                .insert(c, copied(&perturbed, "rows of a NaN-intolerant input")?);
        }
        if parent < self.static_requests {
            let k = parent / self.per_probe();
            return self.nan_told(k, Cow::Owned(y), perturbed);
        }
        let grandparent = self.parts[parent - self.static_requests].parent;
        self.merge_into(grandparent, &y, &perturbed)
    }

    /// The NaN requests of a new step that hold known NaN-intolerant inputs are not evaluated
    /// as they are: each becomes a part without those inputs, merged with the rows their
    /// perturbations changed ([`crate::trace::split`]).
    fn set_aside_intolerant(&mut self) -> Result<()> {
        if self.intolerant.is_empty() {
            return Ok(());
        }
        let per = self.per_probe();
        for k in 0..self.probes.len() {
            let cols = self.probes[k].cols();
            if !cols.iter().any(|c| self.intolerant.contains_key(c)) {
                continue;
            }
            let (bad, rest): (Vec<u32>, Vec<u32>) =
                cols.iter().partition(|c| self.intolerant.contains_key(c));
            let id = k * per;
            self.told.set(id, true);
            let mut merge = Merge::new(usize::from(!rest.is_empty()));
            for c in &bad {
                let rows = &self.intolerant[c];
                reserve(
                    &mut merge.perturbed,
                    rows.len(),
                    "rows of NaN-intolerant inputs",
                )?;
                merge.perturbed.extend_from_slice(rows);
            }
            if rest.is_empty() {
                let (y, perturbed) = merge.outputs(&self.baseline);
                self.nan_told(k, Cow::Owned(y), perturbed)?;
                continue;
            }
            self.parts.push(Part {
                probe: Probe::new(rest, self.n),
                perturbation: None,
                parent: id,
            });
            self.merges.insert(id, merge);
        }
        self.told
            .resize(self.static_requests + self.parts.len(), false);
        Ok(())
    }

    /// Whether a failed evaluation of request `id` is one the session works around: a NaN
    /// request failing in a way its inputs may cause ([`crate::trace::split`]).
    pub fn recoverable(&self, id: usize, failure: &Failure) -> bool {
        self.outstanding(id)
            && self.request(id).kind == RequestKind::Nan
            && failure.input_dependent()
    }

    /// The evaluation of request `id` failed. A NaN request failing in a way its inputs may
    /// cause is split into parts (halves of its inputs, or perturbations of a single input),
    /// which the next [`TraceSession::ask`] hands out; any other failure is an error naming the
    /// request ([`ErrorKind::BlackBox`]), which stops the trace (module docs). An id that is not
    /// outstanding, or a return code of 0, is an [`ErrorKind::InvalidArgument`] (nothing
    /// changed); so is any call once the trace has stopped. Call in increasing `id` order for
    /// reproducible request ids (journals).
    pub fn fail(&mut self, id: usize, failure: &Failure) -> Result<()> {
        self.go_on()?;
        if !self.outstanding(id) {
            return Err(Error::invalid(format!(
                "request {id} is not outstanding in this step"
            )));
        }
        if *failure == Failure::Returned(0) {
            return Err(Error::invalid("code is 0: a failure has a nonzero code"));
        }
        if !self.recoverable(id, failure) {
            // The trace cannot go on without this evaluation.
            let e = Error::new(
                ErrorKind::BlackBox,
                format!("the black box {failure} on {}", self.describe(id)),
            );
            return self.stop_on(Err(e));
        }
        let split = self.split_failed(id);
        self.stop_on(split)
    }

    /// [`TraceSession::fail`] of a NaN request whose failure its inputs may cause: its parts.
    fn split_failed(&mut self, id: usize) -> Result<()> {
        self.told.set(id, true);
        self.report.evaluations += 1;
        self.report.failed_evaluations += 1;
        let cols = copied(self.request(id).probe.cols(), "columns of a failed request")?;
        let n = self.n;
        let before = self.parts.len();
        if cols.len() > 1 {
            let (a, b) = cols.split_at(cols.len() / 2);
            for half in [a, b] {
                self.parts.push(Part {
                    probe: Probe::new(copied(half, "half a failed request")?, n),
                    perturbation: None,
                    parent: id,
                });
            }
        } else {
            self.failed_columns.push(cols[0]);
            for p in 0..PERTURBATION_POINTS {
                self.parts.push(Part {
                    probe: Probe::new(cols.clone(), n),
                    perturbation: Some(p),
                    parent: id,
                });
            }
        }
        let mut merge = Merge::new(self.parts.len() - before);
        if cols.len() == 1 {
            merge.column = Some(cols[0]);
        }
        self.merges.insert(id, merge);
        self.told
            .resize(self.static_requests + self.parts.len(), false);
        Ok(())
    }

    /// `y` with finite outputs within the tolerance of the baseline set to the baseline (a NaN
    /// request) ; unchanged without a tolerance or for a verification request (which compares
    /// with the tolerance itself).
    fn within_tolerance<'a>(&mut self, y: &'a [f64], kind: RequestKind) -> Result<Cow<'a, [f64]>> {
        let t = self.tolerance;
        if t == 0.0 || kind != RequestKind::Nan {
            return Ok(Cow::Borrowed(y));
        }
        let mut y = copied(y, "outputs within the tolerance")?;
        for (v, &b) in y.iter_mut().zip(self.baseline.iter()) {
            if b.is_finite() && v.is_finite() && (*v - b).abs() <= t * b.abs().max(1.0) {
                *v = b;
            }
        }
        Ok(Cow::Owned(y))
    }

    fn tell_baseline(&mut self, y: &[f64]) -> Result<()> {
        let mut bad = zero_bits(y.len(), "non-finite rows")?;
        for (i, v) in y.iter().enumerate() {
            if !v.is_finite() {
                bad.set(i, true);
            }
        }
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
        self.baseline = std::sync::Arc::new(copied(y, "baseline outputs")?);
        self.stage = Stage::Planning(self.planner_for(self.baseline.clone())?);
        Ok(())
    }

    /// The strategy's planner for these baseline outputs (rows NaN there are not traced).
    /// The payload planner asks at most [`Refine::allowance`] probes by default, or what the
    /// caller's budget leaves (three evaluations a probe when every probe is verified).
    fn planner_for(&self, baseline: std::sync::Arc<Vec<f64>>) -> Result<Box<dyn Planner>> {
        let n = self.n;
        let cap = match self.cap() {
            _ if self.implicit_cap() => Refine::allowance(n),
            usize::MAX => usize::MAX,
            _ => self.remaining() / if self.pairing { 3 } else { 1 },
        };
        let capped = match self.implicit_cap() {
            true => EntryKind::Assumed,
            false => EntryKind::Unresolved,
        };
        Ok(match self.options.strategy {
            Strategy::OneHot => Box::new(Chunked::new(n, 1, baseline)?),
            Strategy::Chunked => Box::new(Chunked::new(n, self.options.chunk_size, baseline)?),
            Strategy::Payload => Box::new(Refine::new(n, baseline, cap, capped)?),
        })
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

    /// Whether [`TraceSession::finish`] can give a pattern: an [`ErrorKind::InvalidArgument`]
    /// when the baseline was not told yet or the trace was stopped by an error (module docs).
    /// `finish` makes this test first; a caller that must not lose the session to a misplaced
    /// finish (the C ABI, whose finish ends the session) asks it before giving the session up.
    pub fn ready_to_finish(&self) -> Result<()> {
        self.go_on()?;
        match self.stage {
            Stage::Baseline => Err(Error::invalid("the baseline evaluation was not told yet")),
            _ => Ok(()),
        }
    }

    /// The pattern: every dependency proven, plus whatever is unresolved (kept as possible
    /// dependencies and counted in [`TraceReport::unresolved`]). Errors: the baseline was never
    /// told; the trace was stopped by an error (module docs); an allocation failed.
    pub fn finish(self) -> Result<Pattern> {
        self.ready_to_finish()?;
        let dense = match &self.baseline_rows {
            Some(rows) => Some(copied_bits(rows, "non-finite rows")?),
            None => None,
        };
        let rechecked_rows = self
            .checked
            .as_ref()
            .map_or(0, |(_, rows)| rows.count_ones());
        let mut pattern = match self.stage {
            Stage::Baseline => {
                return Err(Error::invalid("the baseline evaluation was not told yet"))
            }
            Stage::Checked(p) => *p,
            // The budget ran out during the check: the NaN trace's pattern, unchecked.
            Stage::Checking(check) => check.into_pattern(&self.baseline, EntryKind::Unresolved)?,
            Stage::Planning(planner) | Stage::Done(planner) => {
                let builder = PatternBuilder::new(self.m, self.n, dense.expect("baseline told"))?;
                let traced = planner.finish(builder)?;
                match self.checked {
                    // The rows that failed the check, traced again with every probe verified.
                    Some((first, rows)) => first.with_rows_from(&traced, &rows)?,
                    // The cap stopped the NaN trace before its check: its zeros are unchecked.
                    None if self.options.verify => {
                        let check = Check::new(traced, false)?;
                        check.into_pattern(&self.baseline, EntryKind::Unresolved)?
                    }
                    None => traced,
                }
            }
        };
        let counts = pattern.kind_counts();
        let (unresolved, found_by_perturbation, assumed) = (
            counts[EntryKind::Unresolved as usize],
            counts[EntryKind::Perturbation as usize],
            counts[EntryKind::Assumed as usize],
        );
        let mut failed_columns = self.failed_columns;
        failed_columns.sort_unstable();
        failed_columns.dedup();
        pattern.report = TraceReport {
            unresolved,
            found_by_perturbation,
            assumed,
            replayed: self.replayed,
            failed_columns,
            rechecked_rows,
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

/// Whether `fin` differs from `base`: bit for bit with no `tolerance`, by more than `tolerance`
/// relative to `max(|base|, 1)` (or is not finite) with one.
fn changed_beyond(tolerance: f64, base: f64, fin: f64) -> bool {
    match tolerance {
        0.0 => base.to_bits() != fin.to_bits(),
        t => !fin.is_finite() || (fin - base).abs() > t * base.abs().max(1.0),
    }
}
