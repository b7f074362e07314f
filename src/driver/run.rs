//! The run loop: the one place where a session's requests meet an executor.
//!
//! ```text
//! loop {
//!     ids = session.ask()              // the requests of the next step (the journal answers
//!                                      // those it holds); none: the trace is complete
//!     for each batch of at most executor.capacity() ids {
//!         write their inputs           // x0 with tagged NaNs, or a verification point:
//!                                      // only the probe's inputs change, and are undone after
//!         executor.run(batch, |k, evaluation| match evaluation {
//!             Done(y)   => session.tell(id, y) and report progress   // tell journals it
//!             Failed(f) => a NaN probe failing in a way its inputs may cause: kept for later;
//!                          anything else: error "the black box <f> on <the request in words>"
//!             Pending   => count it
//!         })
//!         the kept failures, in id order: session.fail(id, f)  // splits the probe; its parts
//!                                                           // come with the next ask
//!     }
//!     pending? stop with ErrorKind::Waiting, after handing out the whole step
//! }
//! ```
//!
//! Memory: the inputs of one batch, O(capacity x n), whatever the step's size. Time: the batch's
//! slots hold x0 between requests, so writing a request's input costs O(its probe's inputs).

use super::{Batch, Evaluation, Executor, Progress};
use crate::error::{reserve, Error, ErrorKind, Result};
use crate::trace::journal::RequestKey;
use crate::trace::TraceSession;

/// Runs `session` to completion on `executor`, calling `progress` after each evaluation
/// (`point` and `points` are passed through to it). Errors: those of the session (a bad
/// baseline, the journal), a failed evaluation ([`ErrorKind::BlackBox`], naming the request),
/// evaluations left pending ([`ErrorKind::Waiting`]), out of memory for the input buffer.
pub fn run(
    session: &mut TraceSession,
    executor: &mut dyn Executor,
    point: usize,
    points: usize,
    progress: &mut dyn FnMut(&Progress),
) -> Result<()> {
    let n = session.n();
    let capacity = executor.capacity().max(1);
    let mut inputs: Vec<f64> = Vec::new();
    let mut keys: Vec<RequestKey> = Vec::new();
    loop {
        let ids = session.ask()?;
        if ids.is_empty() {
            return Ok(());
        }
        let planned = session.evaluations() + ids.len();
        let mut pending = 0;
        let mut failed = Vec::new();
        for part in ids.chunks(capacity) {
            let len = part.len() * n;
            if inputs.len() < len {
                // New slots start at x0; each request writes and undoes only what it changes.
                let more = len - inputs.len();
                reserve(&mut inputs, more, "inputs of a batch")?;
                while inputs.len() < len {
                    inputs.extend_from_slice(session.x0());
                }
            }
            keys.clear();
            for (k, &id) in part.iter().enumerate() {
                session.write_changes(id, &mut inputs[k * n..(k + 1) * n]);
                keys.push(session.key(id));
            }
            let batch = Batch::new(&inputs[..len], &keys, n);
            executor.run(&batch, &mut |k, evaluation| match evaluation {
                Evaluation::Done(y) => {
                    session.tell(part[k], y)?;
                    progress(&Progress {
                        evaluations: session.evaluations(),
                        planned,
                        point,
                        points,
                    });
                    Ok(())
                }
                Evaluation::Failed(failure) if session.recoverable(part[k], &failure) => {
                    failed.push((part[k], failure));
                    Ok(())
                }
                Evaluation::Failed(failure) => session.fail(part[k], &failure),
                Evaluation::Pending => {
                    pending += 1;
                    Ok(())
                }
            })?;
            for (k, &id) in part.iter().enumerate() {
                session.restore(id, &mut inputs[k * n..(k + 1) * n]);
            }
        }
        // Failures worked around by splitting, in request order (the parts' ids then do not
        // depend on which worker finished first).
        failed.sort_by_key(|(id, _)| *id);
        for (id, failure) in failed {
            session.fail(id, &failure)?;
        }
        if pending > 0 {
            return Err(Error::new(
                ErrorKind::Waiting,
                format!("waiting for {pending} evaluations"),
            ));
        }
    }
}
