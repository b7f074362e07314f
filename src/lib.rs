//! # nanprop
//!
//! Finds which outputs of a black-box function y = f(x) (x in R^n, y in R^m) can depend on which
//! inputs, by evaluating f with inputs replaced by NaN and reading which outputs come back NaN.
//! Inputs carry payload-tagged NaNs, so one evaluation can name the input that reached each
//! output, and a planner chooses the probes so that sparse, local patterns need far fewer than
//! n evaluations.
//!
//! # Design
//!
//! * [`codec`]: where an input id sits in a NaN's bits, and how an output's bits are read back
//!   (measured payload behaviour, `shared/NAN_FACTS.md`).
//! * [`probe`]: one evaluation's tagged inputs and what each output proves about them.
//! * [`planner`]: strategies with an ask/tell shape; they never call f.
//! * [`trace`]: a session around a planner (baseline, budget, result).
//! * [`driver`]: runs the probes a session asks for, checking the black box's contract.
//! * [`pattern`]: the CSR result, with a provenance for every entry.
//! * [`ffi`]: the C ABI (`include/nanprop.h` is generated from it).
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
pub mod demo;
pub mod driver;
pub mod error;
pub mod ffi;
pub mod fpenv;
pub mod isolate;
pub mod jacobian;
pub mod journal;
pub mod loader;
pub mod mtx;
pub mod multipoint;
pub mod parallel;
pub mod pattern;
pub mod planner;
pub mod probe;
pub mod svg;
pub mod synthetic;
pub mod trace;

pub use driver::{trace, trace_with_progress, BlackBox};
pub use error::{Error, ErrorKind, Result};
pub use pattern::{EntryKind, Pattern, TraceReport};
pub use trace::{NonFiniteBaseline, Strategy, TraceOptions, TraceSession};
