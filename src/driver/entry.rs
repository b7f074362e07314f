//! The entry points of a trace: the executor the options ask for, the points to visit, one
//! journal for all of them, the union of their patterns.
//!
//! Every way of tracing ends here: the Rust API ([`trace`], [`trace_points`]), the C ABI
//! (`nanprop_trace`, `nanprop_trace_points`, `nanprop_loaded_trace`, the flag tracer), the
//! command line (including its batch-scheduler mode, [`trace_files`]). Which executor runs the
//! evaluations is decided by `with_executor` alone:
//!
//! | options | executor |
//! |---|---|
//! | `threads > 1` (with a black box declared thread-safe) | [`Threads`] |
//! | `processes > 0` or `isolate` | [`Processes`] (`max(processes, 1)` forked workers) |
//! | otherwise | [`Serial`] |
//!
//! Threads with isolation or processes are refused by [`crate::TraceOptions::validate`].

use super::files::Files;
use super::processes::Processes;
use super::run::run;
use super::serial::Serial;
use super::threads::Threads;
use super::{BlackBox, Executor, Progress};
use crate::error::{Error, ErrorKind, Result};
use crate::fpenv::FpGuard;
use crate::pattern::Pattern;
use crate::precision::Precision;
use crate::trace::journal::Journal;
use crate::trace::points::Points;
use crate::trace::session::{open_journal, TraceSession};
use crate::trace::TraceOptions;
use std::path::Path;
use std::time::Duration;

/// Traces f: R^n -> R^m at `x0` (n = `x0.len()`), and at the points the options sample around
/// it, with the executor the options ask for; the union of the patterns.
///
/// Errors: bad sizes, a NaN or Inf in `x0`, bad options ([`TraceOptions::validate`]); threads
/// asked for a black box not declared thread-safe; the black box failing or breaking its
/// contract ([`crate::ErrorKind::BlackBox`], naming the request and, past the first, the
/// point); a journal of another trace; out of memory.
pub fn trace(
    f: &mut dyn BlackBox,
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
) -> Result<Pattern> {
    trace_with_progress(f, m, x0, options, &mut |_| {})
}

/// Traces a single-precision function (`float` arguments: a REAL*4 code) at `x0`: [`trace`]
/// through [`super::single::Single`], which converts at the call (tags survive, see its module
/// docs). Errors: as [`trace`]; threads are refused (a single-precision black box is not
/// declared thread-safe; use processes).
pub fn trace_f32<F: super::BlackBox32>(
    f: F,
    m: usize,
    x0: &[f32],
    options: &TraceOptions,
) -> Result<Pattern> {
    let mut x = Vec::new();
    crate::error::reserve(&mut x, x0.len(), "x0")?;
    x.extend(x0.iter().map(|&v| super::single::widen(v)));
    let mut g = super::single::Single::new(f, x0.len(), m)?;
    trace(&mut g, m, &x, options)
}

/// As [`trace`], calling `progress` after every evaluation.
pub fn trace_with_progress(
    f: &mut dyn BlackBox,
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Pattern> {
    trace_flat(f, x0.len(), m, x0, options, progress)
}

/// The union of the traces at every point of `points` (each n values), and at the points the
/// options sample around the first. Errors: no points, points of different lengths, and those
/// of [`trace`] (the message names the point).
pub fn trace_points(
    f: &mut dyn BlackBox,
    m: usize,
    points: &[Vec<f64>],
    options: &TraceOptions,
) -> Result<Pattern> {
    let n = points.first().map_or(0, Vec::len);
    if let Some(k) = points.iter().position(|p| p.len() != n) {
        return Err(Error::invalid(format!(
            "point {k} has {} entries, point 0 has {n}",
            points[k].len()
        )));
    }
    let flat: Vec<f64> = points.concat();
    trace_flat(f, n, m, &flat, options, &mut |_| {})
}

/// As [`trace_points`], with the points stored one after another in `points` (a multiple of
/// n values): the form the C ABI hands over.
pub fn trace_flat(
    f: &mut dyn BlackBox,
    n: usize,
    m: usize,
    points: &[f64],
    options: &TraceOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Pattern> {
    let _fp = FpGuard::enter();
    options.validate()?;
    // The check sizes its steps for the black box's own precision (single when either the
    // black box or the caller says so: a caller may know of float internals).
    let precise;
    let options = if f.precision() == Precision::Double || options.precision == Precision::Single {
        options
    } else {
        precise = TraceOptions {
            precision: f.precision(),
            ..options.clone()
        };
        &precise
    };
    let identity = f.identity();
    let mut journal = open(options, n, m, identity.as_deref())?;
    with_executor(f, n, m, options, &mut |executor| {
        visit(executor, n, m, points, options, &mut journal, 0, progress)
    })
}

/// Traces with an executor of the caller's (for instance one that sends evaluations to other
/// machines): the points as in [`trace_flat`]; `identity` names the function for a journal.
pub fn trace_with_executor(
    executor: &mut dyn Executor,
    n: usize,
    m: usize,
    points: &[f64],
    options: &TraceOptions,
    identity: Option<&str>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Pattern> {
    let _fp = FpGuard::enter();
    options.validate()?;
    let mut journal = open(options, n, m, identity)?;
    visit(executor, n, m, points, options, &mut journal, 0, progress)
}

/// The batch-scheduler mode: evaluations as files in `dir` ([`super::files`]), waiting up to
/// `wait` for outputs. Errors: as [`trace`], and [`crate::ErrorKind::Waiting`] while outputs
/// are missing (run it again, with the same journal, once they exist).
pub fn trace_files(
    dir: &Path,
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
    wait: Duration,
) -> Result<Pattern> {
    let trace = crate::trace::journal::Fnv::new()
        .u64(x0.len() as u64)
        .u64(m as u64)
        .u64(crate::trace::journal::point_fingerprint(x0))
        .u64(crate::trace::journal::options_fingerprint(options))
        .finish();
    let mut files = Files::new(dir, m, wait, trace)?;
    trace_with_executor(&mut files, x0.len(), m, x0, options, None, &mut |_| {}).map_err(|e| {
        if e.kind != ErrorKind::Waiting {
            return e;
        }
        Error::new(
            e.kind,
            format!(
                "{}: run your program on each {}/*.in (n = {} little-endian doubles) writing the m = {m} \
                 outputs to the matching .out file, then run this trace again",
                e.message,
                dir.display(),
                x0.len()
            ),
        )
    })
}

/// Opens the journal the options name, if any.
pub(crate) fn open(
    options: &TraceOptions,
    n: usize,
    m: usize,
    identity: Option<&str>,
) -> Result<Option<Journal>> {
    options
        .journal
        .as_deref()
        .map(|path| open_journal(path, n, m, options, identity))
        .transpose()
}

/// Calls `body` with the executor the options ask for (see the module docs).
pub(crate) fn with_executor<R>(
    f: &mut dyn BlackBox,
    n: usize,
    m: usize,
    options: &TraceOptions,
    body: &mut dyn FnMut(&mut dyn Executor) -> Result<R>,
) -> Result<R> {
    if options.threads > 1 {
        let shared = f.shared().ok_or_else(|| {
            Error::invalid(format!(
                "threads = {} needs a black box declared thread-safe (wrap it in ThreadSafe)",
                options.threads
            ))
        })?;
        return body(&mut Threads::new(shared, n, m, options.threads)?);
    }
    if options.forks() {
        let workers = options.processes.max(1);
        return body(&mut Processes::new(f, n, m, workers, options.timeout)?);
    }
    body(&mut Serial::new(f, n, m)?)
}

/// Traces at every point (the first numbered `first` in the journal) and unites the patterns.
#[allow(clippy::too_many_arguments)]
pub(crate) fn visit(
    executor: &mut dyn Executor,
    n: usize,
    m: usize,
    points: &[f64],
    options: &TraceOptions,
    journal: &mut Option<Journal>,
    first: u64,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Pattern> {
    let mut points = Points::new(points, n, options)?;
    let total = points.len();
    let mut buffer = Vec::new();
    let mut union: Option<Pattern> = None;
    let mut k = 0;
    while let Some(x) = points.next(&mut buffer)? {
        let named = |e: Error| match k {
            0 => e,
            _ => Error::new(e.kind, format!("at point {k}: {}", e.message)),
        };
        let mut session =
            TraceSession::at_point(n, m, x, options, journal.take(), first + k as u64)
                .map_err(named)?;
        let ran = run(&mut session, executor, k, total, progress);
        *journal = session.take_journal();
        ran.map_err(named)?;
        let p = session.finish().map_err(named)?;
        union = Some(match union {
            None => p,
            Some(u) => u.union(&p)?,
        });
        k += 1;
    }
    union.ok_or_else(|| Error::invalid("no points to trace at"))
}
