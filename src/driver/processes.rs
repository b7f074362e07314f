//! The process executor: each evaluation in a forked [`Worker`], k of them at a time.
//!
//! For black boxes that are not thread-safe (Fortran COMMON blocks, SAVE variables) and for
//! isolation ([`crate::TraceOptions::isolate`], which is this executor with one worker): each
//! evaluation runs in its own copy of the address space, so a crash, `exit()` or hang becomes a
//! [`crate::driver::Failure`] and the caller survives; the optional timeout applies to each.
//! Evaluations are handed back as each worker finishes, so a journal keeps every finished one
//! even if the host dies with others still running.
//!
//! Cost: one `fork` per evaluation, from the worker's spawner (`spawner.rs`), not from the host;
//! the host waits for the first of its workers to end (no polling naps), so an evaluation's end
//! is taken as it comes. Worth it when an evaluation takes longer than a fraction of a
//! millisecond.

use super::worker::{wait_any, Worker};
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
            .map(|_| Worker::new(&mut *f, n, m, timeout))
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
        match self.workers.len() {
            // One at a time: the run loop may then tell alongside.
            1 => 1,
            k => 8 * k,
        }
    }

    /// With one worker (isolation): its evaluation runs in another process while the run loop
    /// tells the one before on a second thread. The host forks no process meanwhile (the
    /// spawner forks the children), unless a spawner killed from outside is made again.
    fn tells_alongside(&self) -> bool {
        self.workers.len() == 1
    }

    fn run(
        &mut self,
        batch: &Batch<'_>,
        done: &mut dyn FnMut(usize, Evaluation<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut job: Vec<Option<usize>> = vec![None; self.workers.len()];
        let (mut next, mut finished) = (0, 0);
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
                let Some(outcome) = self.workers[w].poll(self.timeout, batch.input(k)) else {
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
            if !progressed {
                wait_any(&self.workers, self.timeout);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::journal::RequestKey;

    /// The keys of a batch of `count` requests.
    fn keys(count: usize) -> Vec<RequestKey> {
        (0..count as u64)
            .map(|request| RequestKey {
                point: 0,
                step: 1,
                request,
            })
            .collect()
    }

    /// Runs `inputs` (one value each) on `executor`; each evaluation's outputs.
    fn evaluate(
        executor: &mut Processes,
        inputs: &[f64],
    ) -> Vec<std::result::Result<Vec<f64>, String>> {
        let keys = keys(inputs.len());
        let mut out: Vec<_> = vec![Err("not reported".to_string()); inputs.len()];
        executor
            .run(&Batch::new(inputs, &keys, 1), &mut |k, evaluation| {
                out[k] = match evaluation {
                    Evaluation::Done(y) => Ok(y.to_vec()),
                    Evaluation::Failed(failure) => Err(failure.to_string()),
                    Evaluation::Pending => Err("pending".to_string()),
                };
                Ok(())
            })
            .unwrap();
        out
    }

    /// Whether process `pid` exists (a zombie counts).
    fn exists(pid: libc::pid_t) -> bool {
        // SAFETY: signal 0 only asks whether the process exists.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    #[test]
    fn the_spawner_forks_every_evaluation_and_is_made_again_when_killed() {
        // y = (x, the evaluating process, its parent).
        let mut f = |x: &[f64], y: &mut [f64]| {
            // SAFETY: plain system calls.
            let (me, parent) = unsafe { (libc::getpid(), libc::getppid()) };
            y.copy_from_slice(&[x[0], me as f64, parent as f64]);
            Ok(())
        };
        // SAFETY: as above.
        let host = unsafe { libc::getpid() };
        let pid = |y: &std::result::Result<Vec<f64>, String>| {
            let y = y.as_ref().unwrap();
            (y[1] as libc::pid_t, y[2] as libc::pid_t)
        };
        let spawner;
        {
            let mut executor = Processes::new(&mut f, 1, 3, 1, None).unwrap();
            let first = evaluate(&mut executor, &[1.0, 2.0, 3.0]);
            let seen: Vec<_> = first.iter().map(pid).collect();
            spawner = seen[0].1;
            for (k, &(me, parent)) in seen.iter().enumerate() {
                assert_eq!(first[k].as_ref().unwrap()[0], k as f64 + 1.0);
                // Each evaluation a process of its own, a child of the spawner, not of the host.
                assert_eq!(parent, spawner, "evaluation {k}");
                assert!(me != host && me != spawner, "evaluation {k}");
                if k + 1 < seen.len() {
                    // Reaped when the next child was asked for.
                    assert!(!exists(me), "evaluation {k}'s process is gone");
                }
            }
            assert_ne!(spawner, host);
            assert!(seen[0].0 != seen[1].0 && seen[1].0 != seen[2].0);
            // Killed from outside (at once or a little later: either way the socket closes): the
            // next evaluation makes another spawner.
            // SAFETY: the spawner is this process's child: ours to kill.
            unsafe { libc::kill(spawner, libc::SIGKILL) };
            let again = evaluate(&mut executor, &[4.0]);
            let (_, parent) = pid(&again[0]);
            assert_eq!(again[0].as_ref().unwrap()[0], 4.0);
            assert!(parent != spawner && parent != host, "a new spawner");
            assert!(exists(parent));
            drop(executor);
            assert!(
                !exists(parent),
                "dropped, the executor leaves no spawner behind"
            );
        }
        // A child that crashes is reported with its signal; the spawner goes on.
        let mut crashes = |x: &[f64], y: &mut [f64]| {
            if x[0] > 1.0 {
                std::process::abort();
            }
            y[0] = x[0];
            Ok(())
        };
        let mut executor = Processes::new(&mut crashes, 1, 1, 1, None).unwrap();
        let out = evaluate(&mut executor, &[1.0, 2.0, 0.5]);
        assert_eq!(out[0], Ok(vec![1.0]));
        assert!(
            out[1].as_ref().unwrap_err().contains("SIGABRT"),
            "{:?}",
            out[1]
        );
        assert_eq!(out[2], Ok(vec![0.5]));
    }

    #[test]
    fn a_child_past_its_time_limit_is_killed_and_the_next_runs() {
        let mut f = |x: &[f64], y: &mut [f64]| {
            if x[0] > 1.0 {
                std::thread::sleep(Duration::from_secs(30));
            }
            y[0] = x[0];
            Ok(())
        };
        let limit = Duration::from_millis(200);
        let mut executor = Processes::new(&mut f, 1, 1, 1, Some(limit)).unwrap();
        let started = std::time::Instant::now();
        let out = evaluate(&mut executor, &[2.0, 0.25]);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(
            out[0].as_ref().unwrap_err().contains("timed out"),
            "{:?}",
            out[0]
        );
        assert_eq!(out[1], Ok(vec![0.25]));
    }

    #[test]
    fn a_batch_given_up_leaves_nothing_running_into_the_next() {
        // y = (10 x, the spawner); evaluation 2.0 runs long, and writes late.
        let mut f = |x: &[f64], y: &mut [f64]| {
            if x[0] == 2.0 {
                std::thread::sleep(Duration::from_millis(300));
            }
            // SAFETY: a plain system call.
            y.copy_from_slice(&[10.0 * x[0], unsafe { libc::getppid() } as f64]);
            Ok(())
        };
        let mut executor = Processes::new(&mut f, 1, 2, 2, None).unwrap();
        // Each worker's spawner (the first request goes to the first worker, and so on).
        let spawners: Vec<f64> = (evaluate(&mut executor, &[0.5, 0.25]).into_iter())
            .map(|y| y.unwrap()[1])
            .collect();
        let keys = keys(2);
        // The first to end stops the batch; the other still runs.
        let stopped = executor.run(&Batch::new(&[1.0, 2.0], &keys, 1), &mut |_, _| {
            Err(crate::error::Error::invalid("stop at the first"))
        });
        assert!(stopped.is_err());
        assert!(executor.workers.iter().any(Worker::busy));
        // The next batch's outputs are its own, from the same spawners (the running child was
        // killed and its end taken, not mistaken for the next one's start).
        let out = evaluate(&mut executor, &[3.0, 4.0]);
        assert_eq!(
            out,
            [Ok(vec![30.0, spawners[0]]), Ok(vec![40.0, spawners[1]])]
        );
        assert!(!executor.workers.iter().any(Worker::busy));
    }
}
