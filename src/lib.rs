//! # nanprop
//!
//! Finds which outputs of a black-box function y = f(x) (x in R^n, y in R^m) can depend on which
//! inputs, by evaluating f with inputs replaced by NaN and reading which outputs come back NaN,
//! then computes sparse Jacobians from that pattern with few evaluations.
//!
//! # A tour of the design
//!
//! **What a trace is.** f is evaluated at `x0` (the baseline), then at *probes*: `x0` with some
//! inputs replaced by NaNs whose payloads carry the input's id ([`codec`]). An output that
//! comes back NaN with an id proves that input reaches it; an output that comes back bit for bit
//! equal to the baseline proves that no input of the probe reaches it, unless the NaN was
//! absorbed, which verification by a finite step guards against ([`probe`], [`trace::session`]).
//!
//! **Planner, session, driver.** Three layers, each unaware of the one above:
//!
//! * a [`planner`] decides which inputs to tag together, step after step, from what earlier
//!   probes proved. It never calls f and does no I/O: it hands out probes and takes outputs.
//!   One-hot and chunked tracing are one planner ([`planner::chunked`]), payload tracing, coarse
//!   to fine over blocks of inputs, the other ([`planner::refine`]);
//! * a [`TraceSession`] wraps a planner with the baseline, verification, the evaluation budget
//!   and the journal, as an ask/tell state machine of *requests* (a probe's NaN evaluation or
//!   its verification). The C batch API (`nanprop_session_*`) is this object;
//! * a [`driver`] runs the requests: **one loop** ([`driver::run`]) asks, writes inputs, hands
//!   batches to an *executor* (serial, threads, forked processes, files for a batch scheduler),
//!   checks the black box's contract ([`driver::guard`]), tells outputs, reports progress and
//!   failures. [`trace()`] picks the executor the [`TraceOptions`] ask for, visits the points
//!   (x0 and those sampled around it), keeps one journal for all, and unites the patterns.
//!
//! **The result** is a [`Pattern`] (CSR, with a kind for every entry saying how it was found,
//! and a [`TraceReport`]). [`coloring`] colors its columns so that columns sharing no row share
//! a color, and [`jacobian`] evaluates compressed finite differences from that coloring:
//! problem, algorithm, result and decompression kept apart. [`hessian`] differences a gradient
//! routine with a star coloring and recovers the Hessian symmetrically; [`smoothing`] estimates
//! the Jacobian of E[f(x + sigma eps)] for codes that branch, a regression per row of the
//! pattern. [`loader`] makes a function in a
//! shared library a [`BlackBox`]. [`ffi`] is the C ABI: conversions only.
//!
//! | where | what |
//! |---|---|
//! | [`codec`], [`probe`] | NaN payloads; what one evaluation proves |
//! | [`planner`] | which inputs to tag together (ask/tell, no I/O) |
//! | [`trace`](mod@trace) | options, the session, the check, sampled points, the journal |
//! | [`driver`] | the black box traits, the run loop, executors, the contract guard, entry points |
//! | [`pattern`] | the CSR result, its builder, Matrix Market files, SVG pictures |
//! | [`coloring`], [`jacobian`] | column (and star) coloring; compressed differences and plans |
//! | [`hessian`], [`smoothing`] | sparse Hessians from a gradient; Jacobians of the Gaussian-smoothed f |
//! | [`loader`] | functions in shared libraries |
//! | [`ffi`] | the C ABI (`include/nanprop.h` is generated from it) |
//! | [`error`], [`fpenv`], [`rng`] | errors; the floating-point environment; a seeded generator |
//! | [`precision`], [`driver::single`] | single-precision (REAL*4) black boxes |
//!
//! # Example
//!
//! ```
//! use nanprop::{trace, TraceOptions};
//! // y0 = x0 * x1, y1 = sin(x2): rows {0, 1} and {2}.
//! let mut f = |x: &[f64], y: &mut [f64]| {
//!     y[0] = x[0] * x[1];
//!     y[1] = x[2].sin();
//!     Ok(())
//! };
//! let p = trace(&mut f, 2, &[1.0, 2.0, 3.0], &TraceOptions::default()).unwrap();
//! assert_eq!(p.row(0), &[0, 1]);
//! assert_eq!(p.row(1), &[2]);
//! ```
//!
//! # Limits of NaN tracing
//!
//! A NaN that is absorbed (`fmin`, `pow(x, 0)`, comparisons, conversion to integer) hides a
//! dependency; `0 * NaN = NaN` in dense linear algebra reports dependencies that are not there.
//! A changed finite output is counted as a dependency, which catches NaN sent down a branch that
//! changes the value, but not one whose branch gives the same value at x0.

pub mod codec;
pub mod coloring;
pub mod driver;
pub mod error;
pub mod ffi;
pub mod fpenv;
mod halves;
pub mod hessian;
pub mod jacobian;
pub mod loader;
pub mod pattern;
pub mod planner;
pub mod precision;
mod prefetch;
pub mod probe;
pub mod rng;
pub mod smoothing;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod trace;

/// The library's version (`MAJOR.MINOR.PATCH`), as `nanprop_version_string` gives it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub use driver::{
    trace, trace_f32, trace_points, trace_with_progress, BlackBox, BlackBox32, Precision, Progress,
    Single, SyncBlackBox, ThreadSafe,
};
pub use error::{Error, ErrorKind, Result};
pub use pattern::{EntryKind, Pattern, TraceReport};
pub use trace::{Noise, NonFiniteBaseline, Strategy, TraceOptions, TraceSession};
