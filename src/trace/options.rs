//! Options of a trace: what to trace with (strategy, budget, verification), where (sampled
//! points), how to run the evaluations (serial, threads, processes, isolation), and what to keep
//! (journal). One struct, read and checked once ([`TraceOptions::validate`]) by whoever starts a
//! trace; the C ABI's `nanprop_options` and the command line's flags convert into it field by
//! field.

use crate::error::{Error, Result};
use crate::precision::Precision;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Report them ([`crate::Pattern::nonfinite_rows`]) and store their rows dense.
    #[default]
    MarkDense,
    /// Fail with [`crate::ErrorKind::BaselineNotFinite`].
    Error,
}

/// What to do when the outputs jitter: change when f is evaluated again at the same point
/// ([`crate::trace::noise`]) and no [`TraceOptions::verify_tolerance`] is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Noise {
    /// Estimate the noise from the repeated evaluations the trace makes anyway (ECnoise's
    /// difference table), set the change tolerance from it and go on; the pattern's report
    /// gives both ([`crate::TraceReport::noise`], [`crate::TraceReport::tolerance`]).
    #[default]
    Tolerate,
    /// Stop with [`crate::ErrorKind::BlackBox`] naming the noisy outputs and the size of their
    /// jitter.
    Error,
}

/// Options of a trace. Fields are grouped as the C struct `nanprop_options` groups them.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceOptions {
    // --- what the planner does
    /// The planner.
    pub strategy: Strategy,
    /// Inputs per probe for [`Strategy::Chunked`] (at least 1).
    pub chunk_size: usize,
    /// Most evaluations of the black box at each point, the baseline included.
    ///
    /// * 0 (default): no budget. The payload strategy's NaN trace asks at most n probes (one-hot's
    ///   count; rows recognised dense are kept as [`crate::EntryKind::Assumed`]), and the guard
    ///   adds its check (`2 chi` evaluations, chi colors of the traced pattern) and the verified
    ///   re-trace of rows where a NaN was absorbed. On the benchmark families the whole trace
    ///   stays below n + 1; on small problems (n below about 50) the guard can take it past. A
    ///   check whose coloring compresses (nearly) nothing, which would pay back only after
    ///   hundreds of Jacobians, is left to the rows with fewer than n / 8 entries (from n = 64
    ///   on); the zeros of the others are kept as [`crate::EntryKind::Assumed`]
    ///   (`crate::trace::check`, `CHECK_PAYBACK`).
    /// * `usize::MAX`: no limit at all (the payload planner is not capped either, and the whole
    ///   pattern is checked: exact, with no entry assumed).
    /// * any other value: a budget on everything, guard included (n + 1 gives the strict
    ///   one-hot bound). What it leaves unresolved, or claimed zero but unchecked, is kept as
    ///   [`crate::EntryKind::Unresolved`], and [`crate::TraceReport::budget_exhausted`] is set.
    pub max_evaluations: usize,
    /// Outputs not finite at `x0`.
    pub nonfinite_baseline: NonFiniteBaseline,
    // --- verification (see crate::trace::session)
    /// Verify every probe by a finite perturbation. Default on.
    pub verify: bool,
    /// Relative size of the verification step (default 1e-3).
    pub verify_step: f64,
    /// An output counts as changed (by a NaN probe or by the verification step) only when it
    /// moves by more than `verify_tolerance * max(|y|, 1)` or stops being finite; 0 (default)
    /// means any change of its bits. For codes whose results jitter.
    pub verify_tolerance: f64,
    /// What to do when outputs jitter and `verify_tolerance` is 0 (default: estimate the noise
    /// and set the tolerance from it).
    pub noise: Noise,
    // --- where: more points than x0 (crate::trace::points)
    /// Also trace at this many points sampled around the first point, and return the union
    /// (default 0): `x_j = x0_j + sample_scale * max(|x0_j|, 1) * z_j`, `z_j` standard normal.
    pub sample_points: usize,
    /// Relative scale of the sampled points (default 0.1; finite and positive when used).
    pub sample_scale: f64,
    /// Seed of the sampled points and of the verification steps' random sizes (default 0).
    pub seed: u64,
    // --- how the evaluations run (crate::driver)
    /// Evaluate the requests of each step on this many threads at once (0 or 1: one at a
    /// time). Needs a black box declared thread-safe ([`crate::BlackBox::shared`]).
    pub threads: usize,
    /// Evaluate the requests of each step in this many forked worker processes at once (0:
    /// none), for black boxes that are not thread-safe; implies isolation.
    pub processes: usize,
    /// Run every evaluation in a forked worker process ([`crate::driver::worker`]): a crash,
    /// abort, `exit()` or hang becomes an error naming it, and the caller survives. Each
    /// evaluation starts from this process's state when the trace began (the processes are
    /// forked from a copy made then). Default off.
    pub isolate: bool,
    /// With `isolate` or `processes`: the longest one evaluation may take (None: no limit).
    pub timeout: Option<Duration>,
    // --- what is kept
    /// Keep every evaluation in this journal file as it completes, and resume from it: requests
    /// it already holds are not evaluated again ([`crate::trace::journal`]). None: no journal.
    pub journal: Option<PathBuf>,
    /// Names the function for the journal, when nanprop cannot know it (a C callback, a
    /// closure): a journal written for another id is refused. A loaded library is identified
    /// by itself (path, size, modification time, symbol) whatever this says.
    pub function_id: Option<String>,
    /// The black box's floating-point format; it sizes the check's steps and its rounding
    /// floor. Default double; [`crate::trace()`] makes it single for a single-precision black
    /// box ([`crate::BlackBox::precision`]), and the session for a double one whose tags come
    /// back through a float. Set it yourself for a batch session ([`crate::TraceSession`])
    /// whose evaluations run in single precision.
    pub precision: Precision,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            strategy: Strategy::Payload,
            chunk_size: 8,
            max_evaluations: 0,
            nonfinite_baseline: NonFiniteBaseline::MarkDense,
            verify: true,
            verify_step: 1e-3,
            verify_tolerance: 0.0,
            noise: Noise::Tolerate,
            sample_points: 0,
            sample_scale: 0.1,
            seed: 0,
            threads: 0,
            processes: 0,
            isolate: false,
            timeout: None,
            journal: None,
            function_id: None,
            precision: Precision::Double,
        }
    }
}

impl TraceOptions {
    /// Checks every field and every combination. Errors ([`crate::ErrorKind::InvalidArgument`],
    /// naming the field): `chunk_size` 0 with the chunked strategy; a verification step that
    /// is not finite and positive; a negative or NaN tolerance; a sampling scale that is not
    /// finite and positive when points are sampled; threads combined with processes or
    /// isolation (each evaluation would need its own process: use processes); more than
    /// [`MAX_WORKERS`] threads or processes; more than [`MAX_SAMPLE_POINTS`] sampled points.
    pub fn validate(&self) -> Result<()> {
        if self.strategy == Strategy::Chunked && self.chunk_size == 0 {
            return Err(Error::invalid("chunk_size must be at least 1"));
        }
        if self.verify && !(self.verify_step.is_finite() && self.verify_step > 0.0) {
            return Err(Error::invalid(format!(
                "verify_step = {} must be finite and positive",
                self.verify_step
            )));
        }
        if self.verify_tolerance.is_nan() || self.verify_tolerance < 0.0 {
            return Err(Error::invalid(format!(
                "verify_tolerance = {} must be at least 0",
                self.verify_tolerance
            )));
        }
        if self.sample_points > 0 && !(self.sample_scale.is_finite() && self.sample_scale > 0.0) {
            return Err(Error::invalid(format!(
                "sample_scale = {} must be finite and positive",
                self.sample_scale
            )));
        }
        for (name, value) in [("threads", self.threads), ("processes", self.processes)] {
            if value > MAX_WORKERS {
                return Err(Error::invalid(format!(
                    "{name} = {value} is more than {MAX_WORKERS}"
                )));
            }
        }
        if self.sample_points > MAX_SAMPLE_POINTS {
            return Err(Error::invalid(format!(
                "sample_points = {} is more than {MAX_SAMPLE_POINTS}",
                self.sample_points
            )));
        }
        if self.threads > 1 && (self.processes > 0 || self.isolate) {
            return Err(Error::invalid(
                "threads cannot be combined with isolate or processes (use processes)",
            ));
        }
        Ok(())
    }

    /// Whether evaluations run in forked worker processes.
    pub fn forks(&self) -> bool {
        self.isolate || self.processes > 0
    }
}

/// The most threads or worker processes a trace may use.
pub const MAX_WORKERS: usize = 1024;
/// The most points a trace may sample.
pub const MAX_SAMPLE_POINTS: usize = 1 << 20;

/// A time limit from seconds, as the C ABI and the command line take it: 0 means none.
/// Errors: negative, NaN, infinite, or too large for a [`Duration`] (`what` names the option).
pub fn seconds(value: f64, what: &str) -> Result<Option<Duration>> {
    if value == 0.0 {
        return Ok(None);
    }
    if !(value.is_finite() && value > 0.0) {
        return Err(Error::invalid(format!(
            "{what} = {value} must be finite and at least 0"
        )));
    }
    Duration::try_from_secs_f64(value)
        .map(Some)
        .map_err(|_| Error::invalid(format!("{what} = {value} seconds is too long")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_combination_is_named() {
        let bad = |o: TraceOptions, word: &str| {
            let e = o.validate().unwrap_err();
            assert!(e.message.contains(word), "{}", e.message);
        };
        let d = TraceOptions::default;
        bad(
            TraceOptions {
                strategy: Strategy::Chunked,
                chunk_size: 0,
                ..d()
            },
            "chunk_size",
        );
        bad(
            TraceOptions {
                verify_step: f64::NAN,
                ..d()
            },
            "verify_step",
        );
        bad(
            TraceOptions {
                verify_tolerance: -1.0,
                ..d()
            },
            "verify_tolerance",
        );
        bad(
            TraceOptions {
                sample_points: 2,
                sample_scale: 0.0,
                ..d()
            },
            "sample_scale",
        );
        bad(
            TraceOptions {
                threads: 2,
                isolate: true,
                ..d()
            },
            "threads",
        );
        assert!(d().validate().is_ok());
        assert_eq!(seconds(0.0, "t").unwrap(), None);
        assert_eq!(
            seconds(1.5, "t").unwrap(),
            Some(Duration::from_millis(1500))
        );
        for v in [f64::NAN, f64::INFINITY, -1.0, 1e300] {
            assert!(seconds(v, "timeout")
                .unwrap_err()
                .message
                .contains("timeout"));
        }
    }
}
