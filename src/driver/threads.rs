//! The thread executor: the evaluations of a batch on a pool of threads at once.
//!
//! For black boxes the caller declares thread-safe ([`crate::BlackBox::shared`]: callable
//! through `&self` from several threads at once). Each thread masks floating-point traps itself
//! and checks the contract on its own buffers; results come back to the run loop's thread as
//! each evaluation finishes. After a failure no further evaluation of the batch starts (those
//! already running finish first).
//!
//! The speedup is bounded by the size of the planner's steps: one-hot and chunked tracing plan
//! all their probes in one step, the payload planner a few to a few dozen per step.

use super::guard::Guarded;
use super::{Batch, Evaluation, Executor, Failure, SyncBlackBox};
use crate::error::{Error, ErrorKind, Result};
use crate::fpenv::FpGuard;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

/// A thread pool evaluating a shared black box (see the module docs).
pub struct Threads<'f> {
    f: &'f dyn SyncBlackBox,
    pool: rayon::ThreadPool,
    buffers: Mutex<Vec<Guarded>>,
    threads: usize,
    n: usize,
    m: usize,
}

impl<'f> Threads<'f> {
    /// `threads` threads (at least 1) for f: R^n -> R^m. Errors: the pool cannot be started;
    /// out of memory for the buffers.
    pub fn new(f: &'f dyn SyncBlackBox, n: usize, m: usize, threads: usize) -> Result<Self> {
        let threads = threads.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| {
                Error::new(
                    ErrorKind::Internal,
                    format!("could not start {threads} threads: {e}"),
                )
            })?;
        let buffers = (0..threads)
            .map(|_| Guarded::new(n, m))
            .collect::<Result<_>>()?;
        Ok(Threads {
            f,
            pool,
            buffers: Mutex::new(buffers),
            threads,
            n,
            m,
        })
    }

    /// Evaluates one input on the calling (pool) thread.
    fn evaluate(&self, x: &[f64]) -> std::result::Result<Vec<f64>, Failure> {
        let _fp = FpGuard::enter();
        let taken = self.buffers.lock().map(|mut b| b.pop()).unwrap_or(None);
        let mut g = match taken {
            Some(g) => g,
            None => Guarded::new(self.n, self.m).map_err(|e| Failure::NotRun(e.message))?,
        };
        let result = g.call_shared_on(self.f, x).map(|()| g.output().to_vec());
        if let Ok(mut b) = self.buffers.lock() {
            b.push(g);
        }
        result
    }
}

impl Executor for Threads<'_> {
    fn capacity(&self) -> usize {
        8 * self.threads
    }

    fn run(
        &mut self,
        batch: &Batch<'_>,
        done: &mut dyn FnMut(usize, Evaluation<'_>) -> Result<()>,
    ) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        let stop = AtomicBool::new(false);
        let this = &*self;
        let mut result = Ok(());
        this.pool.in_place_scope(|scope| {
            for k in 0..batch.len() {
                let (tx, stop, x) = (tx.clone(), &stop, batch.input(k));
                scope.spawn(move |_| {
                    if !stop.load(Ordering::Relaxed) {
                        let _ = tx.send((k, this.evaluate(x)));
                    }
                });
            }
            drop(tx);
            for (k, outcome) in rx {
                if result.is_err() {
                    continue;
                }
                result = match outcome {
                    Ok(y) => done(k, Evaluation::Done(&y)),
                    Err(failure) => done(k, Evaluation::Failed(failure)),
                };
                if result.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        });
        result
    }
}
