//! Drivers: everything that calls the black box.
//!
//! A trace is planned by a [`crate::TraceSession`], which never calls f: it hands out requests
//! (asks) and takes their outputs (tells). This module runs those requests. It is built in two
//! layers:
//!
//! * **One loop** ([`run`]): asks the session for the requests of a step, writes their inputs,
//!   hands them to an executor in batches, and for each evaluation that comes back tells the
//!   session (which journals it), reports progress, or turns a failure into an error naming
//!   the request. Every way of evaluating f goes through this loop. With the serial executor
//!   and many outputs it tells on a second thread while f makes the next evaluation, in the
//!   same order (`run.rs`, "Telling alongside").
//! * **Executors** ([`Executor`]): evaluate a batch of inputs and hand back, for each, its
//!   outputs, a [`Failure`], or "pending". They decide nothing about the trace:
//!   [`serial`] (in this process, one at a time), [`threads`] (a thread pool, for black boxes
//!   declared thread-safe), [`processes`] (forked [`worker`]s, for isolation and for black boxes
//!   that are not thread-safe), [`files`] (inputs and outputs as files, for a batch scheduler).
//!
//! The black box's contract (write all m outputs, nothing past `y[m-1]`, leave `x` alone) is
//! checked in one place, [`guard`], whichever executor ran the call. [`entry`] holds the entry
//! points: which executor the options ask for, the points to visit, one journal for all of
//! them; [`flags`] traces again when discrete inputs change.

pub mod entry;
pub mod files;
pub mod flags;
pub mod guard;
pub mod processes;
pub mod run;
pub mod serial;
pub mod single;
pub(crate) mod spawner;
pub mod threads;
pub mod worker;

use crate::error::Result;
use crate::trace::journal::RequestKey;

pub use crate::trace::failure::Failure;
pub use single::{BlackBox32, Precision, Single};

/// A function y = f(x) with n inputs and m outputs.
pub trait BlackBox {
    /// Evaluates f at `x` (n values) into `y` (m values). A nonzero code means failure.
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32>;

    /// As [`BlackBox::eval`], for black boxes that check a contract of their own (a
    /// [`single::Single`] wrapper checks the `float` function's buffers) and report a breach as
    /// the [`Failure`] it is. The executors call this one. Default: `eval`, a nonzero code as
    /// [`Failure::Returned`].
    fn eval_checked(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), Failure> {
        self.eval(x, y).map_err(Failure::Returned)
    }

    /// The same function as one that may be called from several threads at once, when it is
    /// (declared so: [`ThreadSafe`], or a C black box whose caller asked for threads). None
    /// (the default): calls are made one at a time.
    fn shared(&self) -> Option<&dyn SyncBlackBox> {
        None
    }

    /// Makes ready, once, what every evaluation would otherwise make again: called in a forked
    /// worker's spawner (`spawner.rs`) before it forks the children, which then inherit it. A
    /// library loaded only by the workers ([`crate::loader::LoadedBlackBox::open_in_worker`])
    /// is loaded there, not by each child (its constructors run once, in the spawner, never in
    /// the caller's process). A failure here is left for the evaluations to report. A wrapper
    /// around another black box answers for it. Default: nothing.
    fn prepare(&mut self) {}

    /// Words that identify this function for a journal (a loaded library: its path, size,
    /// modification time and symbol), when it knows them. None (the default): the journal
    /// relies on [`crate::TraceOptions::function_id`].
    fn identity(&self) -> Option<String> {
        None
    }

    /// The format of f's own arguments: [`Precision::Single`] for a `float` function wrapped
    /// by [`single::Single`] or a REAL*4 loaded routine (Jacobian steps are then sized and
    /// rounded for `float`). Default: double.
    fn precision(&self) -> Precision {
        Precision::Double
    }

    /// Whether f may write into the `x` it is handed, which the guard then checks it did not
    /// ([`guard`]: a C or Fortran routine can, `const` or not). False only when it cannot: a
    /// Rust closure (it gets `&[f64]`), a Python function (it gets a copy), a `float`
    /// function behind [`single::Single`] (it gets the wrapper's own buffer, checked there);
    /// the guard then hands f the input itself, with no copy to compare (the serial
    /// executor's calls, Jacobian plans, smoothed Jacobians). A wrapper around another black
    /// box answers for it. Default: true.
    fn may_write_input(&self) -> bool {
        true
    }

    /// Whether every successful call writes each of the m outputs (and nothing past them):
    /// a wrapper that copies a result whose length it checked, as the Python callable does.
    /// For a black box that also cannot write its input, the guard then neither marks the
    /// outputs before the call nor looks for one left unwritten after it (two passes over m
    /// values a call: about 1 ms at m = 10^6). False (the default) for a C, Fortran or Rust
    /// function: one may leave an output unwritten, which the guard reports. A wrapper around
    /// another black box answers for it.
    fn writes_every_output(&self) -> bool {
        false
    }
}

impl<F: FnMut(&[f64], &mut [f64]) -> std::result::Result<(), i32>> BlackBox for F {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self(x, y)
    }

    /// Safe Rust cannot write through `&[f64]`.
    fn may_write_input(&self) -> bool {
        false
    }
}

/// A black box that may be called from several threads at once.
pub trait SyncBlackBox: Sync {
    /// Evaluates f at `x` into `y`; a nonzero code means failure.
    fn eval(&self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32>;
}

impl<F: Fn(&[f64], &mut [f64]) -> std::result::Result<(), i32> + Sync> SyncBlackBox for F {
    fn eval(&self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self(x, y)
    }
}

/// Declares a black box thread-safe, so that [`crate::TraceOptions::threads`] can use it:
/// `trace(&mut ThreadSafe(f), ...)` with `f: Fn(&[f64], &mut [f64]) -> Result<(), i32> + Sync`.
pub struct ThreadSafe<F>(pub F);

impl<F: SyncBlackBox> BlackBox for ThreadSafe<F> {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self.0.eval(x, y)
    }
    fn shared(&self) -> Option<&dyn SyncBlackBox> {
        Some(&self.0)
    }
}

/// A batch of evaluations for an executor: inputs of n values each, and where each request
/// sits in the trace (for executors that name their work).
pub struct Batch<'a> {
    inputs: &'a [f64],
    keys: &'a [RequestKey],
    n: usize,
}

impl<'a> Batch<'a> {
    /// A batch of `keys.len()` inputs stored one after another in `inputs`.
    ///
    /// # Panics
    /// If `inputs.len() != keys.len() * n`.
    pub fn new(inputs: &'a [f64], keys: &'a [RequestKey], n: usize) -> Self {
        assert_eq!(
            inputs.len(),
            keys.len() * n,
            "one input of n values per key"
        );
        Batch { inputs, keys, n }
    }
    /// Evaluations in the batch.
    pub fn len(&self) -> usize {
        self.keys.len()
    }
    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
    /// The input of evaluation `k` (n values).
    pub fn input(&self, k: usize) -> &'a [f64] {
        &self.inputs[k * self.n..(k + 1) * self.n]
    }
    /// Where evaluation `k` sits in the trace.
    pub fn key(&self, k: usize) -> RequestKey {
        self.keys[k]
    }
}

/// What became of one evaluation of a batch.
pub enum Evaluation<'a> {
    /// Its m outputs.
    Done(&'a [f64]),
    /// It failed.
    Failed(Failure),
    /// It is not done yet (an executor whose evaluations happen elsewhere and later).
    Pending,
}

/// Runs batches of evaluations (see the module docs).
pub trait Executor {
    /// The most evaluations this executor takes in one batch; the loop keeps its input buffer
    /// at this many points, so memory is O(capacity x n).
    fn capacity(&self) -> usize;

    /// Evaluates every input of `batch`, calling `done(k, evaluation)` once for each k as it
    /// completes, in any order. Stops at the first error `done` returns and returns it.
    fn run(
        &mut self,
        batch: &Batch<'_>,
        done: &mut dyn FnMut(usize, Evaluation<'_>) -> Result<()>,
    ) -> Result<()>;

    /// Whether the run loop may tell the outputs of one evaluation on a second thread while
    /// this executor makes the next ([`run`], "Telling alongside"). Only an executor that
    /// starts no process meanwhile may say yes: a child forked while another thread holds a
    /// lock inherits it held (glibc guards its allocator's across a fork, not every lock).
    /// Default: no.
    fn tells_alongside(&self) -> bool {
        false
    }

    /// The buffer holding the outputs of the last evaluation reported done, when this executor
    /// (of capacity 1) keeps them in one buffer of its own: its first m values are the outputs
    /// (it may be longer). The caller may swap it for another buffer of the same length, whose
    /// contents do not matter: the next evaluation writes every value it reads. The run loop
    /// telling alongside then hands the outputs to the teller without copying them. Default:
    /// none (the loop copies the outputs it is handed).
    fn output_buffer(&mut self) -> Option<&mut Vec<f64>> {
        None
    }
}

/// Where a trace stands, given to a progress callback after each evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Evaluations done at this point (replayed from a journal included).
    pub evaluations: usize,
    /// Evaluations done plus those outstanding in the current step: it grows as the planner
    /// plans new steps.
    pub planned: usize,
    /// The point being traced (0-based).
    pub point: usize,
    /// Points in all.
    pub points: usize,
}

pub use entry::{trace, trace_f32, trace_points, trace_with_executor, trace_with_progress};
