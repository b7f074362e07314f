//! The process executor: each evaluation in a forked [`Worker`], k of them at a time.
//!
//! For black boxes that are not thread-safe (Fortran COMMON blocks, SAVE variables) and for
//! isolation ([`crate::TraceOptions::isolate`], which is this executor with one worker): each
//! evaluation runs in its own copy of the address space, so a crash, `exit()` or hang becomes a
//! [`crate::driver::Failure`] and the caller survives; the optional timeout applies to each.
//! Evaluations are handed back as each worker finishes, so a journal keeps every finished one
//! even if the host dies with others still running.
//!
//! Cost: one `fork` per evaluation (about a millisecond with a large address space), worth it
//! when an evaluation takes longer.

use super::worker::{Backoff, Worker};
use super::{Batch, BlackBox, Evaluation, Executor};
use crate::error::Result;
use std::time::Duration;

/// Forked workers (see the module docs).
pub struct Processes<'f> {
    f: &'f mut dyn BlackBox,
    workers: Vec<Worker>,
    timeout: Option<Duration>,
}

impl<'f> Processes<'f> {
    /// `workers` (at least 1) forked workers for f: R^n -> R^m, each evaluation allowed
    /// `timeout`. Errors: shared memory for the workers cannot be mapped.
    pub fn new(
        f: &'f mut dyn BlackBox,
        n: usize,
        m: usize,
        workers: usize,
        timeout: Option<Duration>,
    ) -> Result<Self> {
        let workers = (0..workers.max(1))
            .map(|_| Worker::new(n, m, timeout))
            .collect::<Result<_>>()?;
        Ok(Processes {
            f,
            workers,
            timeout,
        })
    }
}

impl Executor for Processes<'_> {
    fn capacity(&self) -> usize {
        8 * self.workers.len()
    }

    fn run(
        &mut self,
        batch: &Batch<'_>,
        done: &mut dyn FnMut(usize, Evaluation<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut job: Vec<Option<usize>> = vec![None; self.workers.len()];
        let (mut next, mut finished) = (0, 0);
        let mut backoff = Backoff::new();
        while finished < batch.len() {
            for (w, slot) in job.iter_mut().enumerate() {
                if slot.is_none() && next < batch.len() {
                    match self.workers[w].start(self.f, batch.input(next)) {
                        Ok(()) => *slot = Some(next),
                        Err(failure) => {
                            finished += 1;
                            done(next, Evaluation::Failed(failure))?;
                        }
                    }
                    next += 1;
                }
            }
            let mut progressed = false;
            for (w, slot) in job.iter_mut().enumerate() {
                let Some(k) = *slot else { continue };
                let Some(outcome) = self.workers[w].poll(self.timeout) else {
                    continue;
                };
                *slot = None;
                progressed = true;
                finished += 1;
                match outcome {
                    Ok(()) => done(k, Evaluation::Done(self.workers[w].y()))?,
                    Err(failure) => done(k, Evaluation::Failed(failure))?,
                }
            }
            if progressed {
                backoff = Backoff::new();
            } else {
                backoff.nap();
            }
        }
        Ok(())
    }
}
