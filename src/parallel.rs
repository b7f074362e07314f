//! Parallel drivers: the probes of one planner step evaluated at the same time.
//!
//! A step's requests are independent (the planner plans a whole batch), so they can run
//! together. Both drivers run the same loop over a [`TraceSession`] as the serial driver, in
//! chunks of a few requests per worker, so memory stays O(chunk (n + m)) whatever the step:
//!
//! * [`trace_threads`]: k threads of a rayon pool, for black boxes the caller declares
//!   thread-safe ([`SyncBlackBox`]: callable through `&self` from several threads at once).
//! * [`trace_processes`]: k forked worker processes, for black boxes that are not thread-safe
//!   (Fortran COMMON blocks, SAVE variables): each evaluation runs in its own copy of the
//!   address space, with the isolation of [`crate::isolate`] (a crash or hang becomes an error
//!   naming it and the probe; the optional timeout applies).
//!
//! The speedup is bounded by the size of the steps: one-hot and chunked tracing plan all their
//! probes in one step, the payload planner a few to a few dozen per step (two requests per probe
//! with verification).

use crate::driver::{BlackBox, GuardedEvaluator, SIGN, UNWRITTEN};
use crate::error::{Error, ErrorKind, Result};
use crate::fpenv::FpGuard;
use crate::isolate::{Backoff, Worker};
use crate::pattern::Pattern;
use crate::trace::{RequestKind, TraceOptions, TraceSession};
use rayon::prelude::*;

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

struct Shared<'a>(&'a dyn SyncBlackBox);

impl BlackBox for Shared<'_> {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self.0.eval(x, y)
    }
}

/// What a request is, in words, for error messages.
fn describe(session: &TraceSession, id: usize) -> String {
    let r = session.request(id);
    match r.kind {
        RequestKind::Finite => format!("the verification of {}", r.probe.describe()),
        _ => r.probe.describe(),
    }
}

/// The batched ask/tell loop: `run` evaluates a chunk of requests (inputs and descriptions
/// given) and returns their outputs in order.
fn batched(
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
    chunk: usize,
    mut run: impl FnMut(&[Vec<f64>], &[String]) -> Result<Vec<Vec<f64>>>,
) -> Result<Pattern> {
    let _fp = FpGuard::enter();
    let mut session = TraceSession::new(x0.len(), m, x0, options)?;
    loop {
        let ids = session.ask()?;
        if ids.is_empty() {
            break;
        }
        for part in ids.chunks(chunk.max(1)) {
            let inputs: Vec<Vec<f64>> = part
                .iter()
                .map(|&id| {
                    let mut x = vec![0.0; x0.len()];
                    session.write_input(id, &mut x);
                    x
                })
                .collect();
            let what: Vec<String> = part.iter().map(|&id| describe(&session, id)).collect();
            let ys = run(&inputs, &what)?;
            for (&id, y) in part.iter().zip(&ys) {
                session.tell(id, y)?;
            }
        }
    }
    session.finish()
}

/// Traces f on `threads` threads (see the module docs). Errors: as [`crate::trace`]; the
/// thread pool could not be built.
pub fn trace_threads(
    f: &dyn SyncBlackBox,
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
    threads: usize,
) -> Result<Pattern> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("could not start {threads} threads: {e}"),
            )
        })?;
    batched(m, x0, options, 8 * threads.max(1), |inputs, what| {
        pool.install(|| {
            inputs
                .par_iter()
                .zip(what)
                .map(|(x, what)| {
                    // Each worker thread has its own floating-point environment.
                    let _fp = FpGuard::enter();
                    let mut ev = GuardedEvaluator::new(x, m)?;
                    let y = ev.eval_shifted(&mut Shared(f), &[], |_| 0.0, || what.clone())?;
                    Ok(y.to_vec())
                })
                .collect()
        })
    })
}

/// Traces f in `workers` forked worker processes at a time (see the module docs); each
/// evaluation may take `options.timeout`. Errors: as [`crate::trace`], and a crash, `exit()`
/// or timeout of the black box (named, with the probe).
pub fn trace_processes(
    f: &mut dyn BlackBox,
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
    workers: usize,
) -> Result<Pattern> {
    let k = workers.max(1);
    let mut pool: Vec<Worker> = (0..k)
        .map(|_| Worker::new(x0.len(), m))
        .collect::<Result<_>>()?;
    let marker = vec![f64::from_bits(UNWRITTEN); m];
    let timeout = options.timeout;
    batched(m, x0, options, 8 * k, |inputs, what| {
        let fail = |j: usize, words: String| {
            Error::new(
                ErrorKind::BlackBox,
                format!("the black box {words} on {}", what[j]),
            )
        };
        let mut outputs: Vec<Option<Vec<f64>>> = vec![None; inputs.len()];
        let mut running: Vec<Option<usize>> = vec![None; k]; // job of each worker
        let mut next = 0;
        let mut backoff = Backoff::new();
        while outputs.iter().any(Option::is_none) {
            for (w, job) in running.iter_mut().enumerate() {
                if job.is_none() && next < inputs.len() {
                    pool[w]
                        .start(f, &inputs[next], &marker)
                        .map_err(|e| fail(next, e))?;
                    *job = Some(next);
                    next += 1;
                }
            }
            let mut progressed = false;
            for (w, job) in running.iter_mut().enumerate() {
                let Some(j) = *job else { continue };
                let Some(outcome) = pool[w].poll(timeout) else {
                    continue;
                };
                *job = None;
                progressed = true;
                match outcome {
                    Ok(0) => {
                        let y = pool[w].y().to_vec();
                        if let Some(i) = y.iter().position(|v| v.to_bits() & !SIGN == UNWRITTEN) {
                            return Err(fail(
                                j,
                                format!("did not write y[{i}] (or read it before writing it)"),
                            ));
                        }
                        outputs[j] = Some(y);
                    }
                    Ok(code) => return Err(fail(j, format!("returned {code}"))),
                    Err(words) => return Err(fail(j, words)),
                }
            }
            if !progressed {
                backoff.nap();
            } else {
                backoff = Backoff::new();
            }
        }
        Ok(outputs
            .into_iter()
            .map(|y| y.expect("every job done"))
            .collect())
    })
}
