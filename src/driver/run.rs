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
//!
//! # Telling alongside
//!
//! On large outputs, reading an evaluation's outputs (`session.tell`: comparing m outputs with
//! the baseline, decoding the changed ones, marking what they prove) takes about as long as the
//! evaluation itself. With an executor of capacity 1 that allows it
//! ([`Executor::tells_alongside`]: the serial one, and the process executor with one worker,
//! isolation), m of at least [`ALONGSIDE_MIN_OUTPUTS`] and
//! a second core, a second thread tells request k while this one evaluates request k + 1:
//!
//! ```text
//! for each id of the step {
//!     write its input; hand the session and the outputs of the request before to the teller
//!     evaluate id (the black box runs on this thread, as always), take its outputs
//!     take the session back (the teller is done with the request before); report progress
//!     undo its input; a failure as above
//! }
//! tell the step's last outputs here
//! ```
//!
//! The session goes back and forth whole (it is never used by both threads at once), and the
//! tells come in the same order as without the teller, so the pattern, the evaluations and the
//! journal are the same. The requests of one step do not depend on each other's outputs (a
//! probe's verifications are asked in the next `ask`), so writing request k + 1's input before
//! request k is told changes nothing. Two things differ: the outputs of request k are held
//! apart while request k + 1 is made, and when telling request k fails, request k + 1 has
//! been evaluated already (one evaluation more before the error).
//!
//! The outputs are taken without copying them when the executor lends its output buffer
//! ([`Executor::output_buffer`]: the serial one): the loop swaps it for a buffer of its own, of
//! the same length, which the executor writes the next outputs to; the buffer comes back from
//! the teller when it has told them. Copying m outputs an evaluation cost about 10% of a trace
//! of a Python function at n = 10^6 (tridiagonal, f 8 ms an evaluation), where the black box's
//! thread, not the teller, is the slower. An executor that does not lend has its outputs
//! copied into a second buffer. One of the loop's buffers is kept from step to step, the
//! others are let go before the next `ask`: a buffer made anew each step cost its page faults
//! and its unmapping each time (tridiagonal 10^6, 15 steps: the whole trace 0.95x with one
//! kept); keeping one raises the planner's peak by m values (8 MB at 10^6: the tridiagonal's
//! 140.1 -> 148.1 MB), which the last level's plan gives back by letting go of an emptied
//! allocation (`refine/level.rs`: 139.7 MB), where keeping every one would raise it by two.

use super::{Batch, Evaluation, Executor, Progress};
use crate::error::{reserve, Error, ErrorKind, Result};
use crate::trace::failure::Failure;
use crate::trace::journal::RequestKey;
use crate::trace::TraceSession;
use std::sync::mpsc;

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
    let alongside = executor.capacity() == 1
        && executor.tells_alongside()
        && session.m() >= ALONGSIDE_MIN_OUTPUTS
        && std::thread::available_parallelism().is_ok_and(|cores| cores.get() >= 2);
    match alongside {
        true => run_with_teller(session, executor, point, points, progress),
        false => run_here(session, executor, point, points, progress),
    }
}

/// The run loop with a teller thread (module docs, "Telling alongside"); on this thread alone
/// when no second thread can be had.
fn run_with_teller(
    session: &mut TraceSession,
    executor: &mut dyn Executor,
    point: usize,
    points: usize,
    progress: &mut dyn FnMut(&Progress),
) -> Result<()> {
    std::thread::scope(|scope| {
        let (jobs, teller_jobs) = mpsc::channel::<Job>();
        let (teller_done, done) = mpsc::channel::<Told>();
        let teller = std::thread::Builder::new()
            .name("nanprop-tell".into())
            .spawn_scoped(scope, move || {
                // A new thread starts with its creator's floating-point environment; mask the
                // traps all the same, as every entry point does (`fpenv.rs`).
                crate::fpenv::mask_traps();
                for (session, id, y) in teller_jobs {
                    let told = session.tell(id, outputs(&y, session.m()));
                    if teller_done.send((session, y, told)).is_err() {
                        return;
                    }
                }
            });
        match teller {
            Ok(_) => run_alongside(session, executor, (&jobs, &done), point, points, progress),
            Err(_) => run_here(session, executor, point, points, progress),
        }
    })
}

/// Outputs from which on the run loop tells alongside (module docs). Handing the session to
/// the teller and back costs about 20 microseconds an evaluation on the benchmark machine
/// (tridiagonal, 2048 outputs: 1.1 -> 1.8 ms a trace); the two break even near 16384 outputs,
/// and at 32768 telling alongside takes 3-5% less time (tridiagonal and random 5 per row).
pub const ALONGSIDE_MIN_OUTPUTS: usize = 1 << 15;

/// What the teller is handed: the session, a request and its outputs.
type Job<'s> = (&'s mut TraceSession, usize, Vec<f64>);
/// What the teller hands back: the session, the outputs' buffer and how the tell went.
type Told<'s> = (&'s mut TraceSession, Vec<f64>, Result<()>);

/// What the executor gave for a request: its outputs copied, or left in the buffer it lends
/// (taken after the run), or a failure, or nothing yet.
enum Outcome {
    Done(Vec<f64>),
    Lent,
    Failed(Failure),
    Pending,
}

/// The run loop telling alongside (module docs): `jobs` hands the session to the teller,
/// `done` brings it back.
fn run_alongside<'s>(
    session: &'s mut TraceSession,
    executor: &mut dyn Executor,
    (jobs, done): (&mpsc::Sender<Job<'s>>, &mpsc::Receiver<Told<'s>>),
    point: usize,
    points: usize,
    progress: &mut dyn FnMut(&Progress),
) -> Result<()> {
    let (n, m) = (session.n(), session.m());
    let lost = || Error::new(ErrorKind::Internal, "the thread telling outputs stopped");
    let mut input: Vec<f64> = Vec::new();
    reserve(&mut input, n, "the input of an evaluation")?;
    input.extend_from_slice(session.x0());
    let lends = executor.output_buffer().is_some();
    // The outputs' buffer kept from one step to the next (module docs).
    let mut kept: Vec<Vec<f64>> = Vec::new();
    // The session, here or (None) with the teller.
    let mut held = Some(session);
    loop {
        let s = held.take().expect("the session is here between steps");
        let ids = s.ask()?;
        if ids.is_empty() {
            return Ok(());
        }
        let planned = s.evaluations() + ids.len();
        let report = |s: &TraceSession| progress_of(s, planned, point, points);
        // An executor that lends its output buffer swaps it for one of ours; another's outputs
        // are copied into one of ours. Ours: the one being told and (copying) the one being
        // read; one kept from the step before, any other made for the step and let go before
        // the next `ask` (module docs).
        let mut free: Vec<Vec<f64>> = std::mem::take(&mut kept);
        let (mut pending, mut failed) = (0usize, Vec::new());
        // The outputs of the request before, read and not yet told.
        let mut untold: Option<(usize, Vec<f64>)> = None;
        held = Some(s);
        for &id in &ids {
            let s = held
                .take()
                .expect("the session is here between evaluations");
            s.write_changes(id, &mut input);
            let key = [s.key(id)];
            match untold.take() {
                Some((before, y)) => jobs.send((s, before, y)).map_err(|_| lost())?,
                None => held = Some(s),
            }
            let mut outcome = Outcome::Pending;
            let ran = executor.run(&Batch::new(&input, &key, n), &mut |_, evaluation| {
                outcome = match evaluation {
                    Evaluation::Done(_) if lends => Outcome::Lent,
                    Evaluation::Done(y) => Outcome::Done(copied(free.pop(), y)?),
                    Evaluation::Failed(failure) => Outcome::Failed(failure),
                    Evaluation::Pending => Outcome::Pending,
                };
                Ok(())
            });
            let s = match held.take() {
                Some(s) => s,
                None => {
                    // The teller is done with the request before (also when the evaluation
                    // failed: it has the session).
                    let (s, buffer, told) = done.recv().map_err(|_| lost())?;
                    free.push(buffer);
                    told?;
                    progress(&report(s));
                    s
                }
            };
            ran?;
            s.restore(id, &mut input);
            match outcome {
                Outcome::Lent => untold = Some((id, borrowed(executor, free.pop())?)),
                Outcome::Done(y) => untold = Some((id, y)),
                Outcome::Failed(failure) if s.recoverable(id, &failure) => {
                    failed.push((id, failure))
                }
                Outcome::Failed(failure) => s.fail(id, &failure)?,
                Outcome::Pending => pending += 1,
            }
            held = Some(s);
        }
        let s = held
            .take()
            .expect("the session is here at the end of a step");
        if let Some((id, y)) = untold.take() {
            s.tell(id, outputs(&y, m))?;
            free.push(y);
            progress(&report(s));
        }
        free.truncate(1);
        kept = free;
        end_step(s, failed, pending)?;
        held = Some(s);
    }
}

/// The outputs `y` copied into `buffer` (one of the loop's, or a new one).
fn copied(buffer: Option<Vec<f64>>, y: &[f64]) -> Result<Vec<f64>> {
    let mut copy = buffer.unwrap_or_default();
    copy.clear();
    reserve(&mut copy, y.len(), "outputs told alongside")?;
    copy.extend_from_slice(y);
    Ok(copy)
}

/// The executor's output buffer, taken in exchange for `buffer` (one of the loop's, or a new
/// one) made as long ([`Executor::output_buffer`]).
fn borrowed(executor: &mut dyn Executor, buffer: Option<Vec<f64>>) -> Result<Vec<f64>> {
    let mut ours = buffer.unwrap_or_default();
    let theirs = executor.output_buffer().ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            "the executor stopped lending its outputs",
        )
    })?;
    if ours.len() != theirs.len() {
        ours.clear();
        reserve(&mut ours, theirs.len(), "outputs told alongside")?;
        ours.resize(theirs.len(), 0.0);
    }
    std::mem::swap(theirs, &mut ours);
    Ok(ours)
}

/// The m outputs at the start of a buffer (all of it when it is shorter: the tell then says
/// what is wrong).
fn outputs(y: &[f64], m: usize) -> &[f64] {
    y.get(..m).unwrap_or(y)
}

/// The run loop telling on this thread (module docs).
fn run_here(
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
                    progress(&progress_of(session, planned, point, points));
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
        end_step(session, failed, pending)?;
    }
}

/// Where the trace stands after a tell: `planned` evaluations in all once the step is done.
fn progress_of(session: &TraceSession, planned: usize, point: usize, points: usize) -> Progress {
    Progress {
        evaluations: session.evaluations(),
        planned,
        point,
        points,
    }
}

/// After a step's evaluations: the failures kept to be worked around, then an error when some
/// evaluations are still pending.
fn end_step(
    session: &mut TraceSession,
    mut failed: Vec<(usize, Failure)>,
    pending: usize,
) -> Result<()> {
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::serial::Serial;
    use crate::pattern::EntryKind;
    use crate::trace::TraceOptions;

    /// What one run shows: the pattern (pointers, columns, kinds), its report, every input
    /// the black box saw (as a fingerprint of its bits, in order), the evaluation counts the
    /// progress callback heard, and the journal written.
    type Seen = (
        Vec<usize>,
        Vec<u32>,
        Vec<EntryKind>,
        String,
        Vec<u64>,
        Vec<usize>,
        Vec<u8>,
    );

    /// How a test run tells: on this thread; with the teller, the serial executor lending its
    /// output buffer; with the teller, the outputs copied (an executor that does not lend).
    #[derive(Clone, Copy)]
    enum How {
        Here,
        Lent,
        Copied,
    }

    /// The serial executor, telling alongside without lending its output buffer.
    struct Copying<'f>(Serial<'f>);

    impl Executor for Copying<'_> {
        fn capacity(&self) -> usize {
            self.0.capacity()
        }
        fn run(
            &mut self,
            batch: &Batch<'_>,
            done: &mut dyn FnMut(usize, Evaluation<'_>) -> Result<()>,
        ) -> Result<()> {
            self.0.run(batch, done)
        }
        fn tells_alongside(&self) -> bool {
            true
        }
    }

    /// Traces, with the teller or on this thread, a black box that exercises every path of
    /// the loop ([`crate::testing::loop_paths`]: payload tags, an absorbed NaN traced again with
    /// verified probes, a failing input whose probes split), noting every input it sees.
    fn traced(how: How) -> Seen {
        let n = 400;
        let x0 = crate::testing::loop_paths_x0(n);
        let mut inputs = Vec::new();
        let mut f = |x: &[f64], y: &mut [f64]| {
            let bits = x.iter().enumerate();
            inputs.push(bits.fold(0u64, |h, (j, v)| {
                (h ^ v.to_bits().rotate_left(j as u32 % 64)).wrapping_mul(0x100_0000_01b3)
            }));
            crate::testing::loop_paths(x, y)
        };
        let journal = std::env::temp_dir().join(format!(
            "nanprop-run-test-{}-{}.journal",
            std::process::id(),
            how as u8
        ));
        let _ = std::fs::remove_file(&journal);
        let options = TraceOptions {
            journal: Some(journal.clone()),
            ..Default::default()
        };
        let mut session = TraceSession::new(n, n, &x0, &options).unwrap();
        let mut told = Vec::new();
        {
            let mut serial = Serial::new(&mut f, n, n).unwrap();
            assert!(serial.output_buffer().is_some());
            let mut progress = |p: &Progress| told.push(p.evaluations);
            let ran = match how {
                How::Here => run_here(&mut session, &mut serial, 0, 1, &mut progress),
                How::Lent => run_with_teller(&mut session, &mut serial, 0, 1, &mut progress),
                How::Copied => {
                    let copying = &mut Copying(serial);
                    run_with_teller(&mut session, copying, 0, 1, &mut progress)
                }
            };
            ran.unwrap();
        }
        drop(session.take_journal()); // written out as it is dropped
        let p = session.finish().unwrap();
        let written = std::fs::read(&journal).unwrap();
        let _ = std::fs::remove_file(&journal);
        let (ptr, idx) = (p.row_ptr().to_vec(), p.col_idx().to_vec());
        let report = format!("{:?}", p.report);
        (ptr, idx, p.kinds().to_vec(), report, inputs, told, written)
    }

    /// How a run that must fail ends, on this thread or with the teller: the error, and the
    /// evaluations made.
    fn failing(teller: bool, noisy: bool) -> (String, usize) {
        let n = 300;
        let x0: Vec<f64> = (0..n).map(|j| 1.0 + (j % 5) as f64 * 0.1).collect();
        let (mut calls, mut jitter) = (0usize, 0u64);
        let mut f = |x: &[f64], y: &mut [f64]| {
            calls += 1;
            // A finite step on input 5 (the check moves it) makes it fail for good.
            if !noisy && x[5].is_finite() && x[5] != 1.0 {
                return Err(7);
            }
            for i in 0..n {
                jitter = jitter.wrapping_mul(6364136223846793005).wrapping_add(1);
                let e = if noisy {
                    (jitter >> 40) as f64 * 1e-20
                } else {
                    0.0
                };
                y[i] = x[i] * x[(i + 1) % n] * (1.0 + e);
            }
            Ok(())
        };
        let options = TraceOptions {
            noise: crate::trace::options::Noise::Error,
            ..Default::default()
        };
        let mut session = TraceSession::new(n, n, &x0, &options).unwrap();
        let mut serial = Serial::new(&mut f, n, n).unwrap();
        let ran = match teller {
            true => run_with_teller(&mut session, &mut serial, 0, 1, &mut |_| {}),
            false => run_here(&mut session, &mut serial, 0, 1, &mut |_| {}),
        };
        drop(serial);
        let e = ran.expect_err("the run must fail");
        assert_eq!(e.kind, ErrorKind::BlackBox, "{}", e.message);
        (e.message, calls)
    }

    /// A black box that fails at a finite point (an error raised here, after the teller handed
    /// the session back) and one whose outputs jitter (an error raised by a tell on the
    /// teller): the same error either way, and at most one evaluation more with the teller.
    #[test]
    fn errors_are_the_same_with_the_teller() {
        for noisy in [false, true] {
            let (here, alongside) = (failing(false, noisy), failing(true, noisy));
            assert_eq!(here.0, alongside.0);
            assert!(
                alongside.1 == here.1 || alongside.1 == here.1 + 1,
                "{} evaluations here, {} with the teller",
                here.1,
                alongside.1
            );
        }
    }

    #[test]
    fn telling_alongside_changes_nothing() {
        let here = traced(How::Here);
        // The run went through every path: tags, a failed probe split, a row traced again.
        let report = &here.3;
        assert!(
            report.contains("failed_evaluations: ") && !report.contains("failed_evaluations: 0,")
        );
        assert!(!report.contains("rechecked_rows: 0,"), "{report}");
        assert!(here.4.len() > 40 && !here.6.is_empty());
        for how in [How::Lent, How::Copied] {
            let alongside = traced(how);
            assert_eq!(here.0, alongside.0, "row pointers");
            assert_eq!(here.1, alongside.1, "columns");
            assert_eq!(here.2, alongside.2, "kinds");
            assert_eq!(here.3, alongside.3, "report");
            assert_eq!(here.4, alongside.4, "the inputs evaluated, in order");
            assert_eq!(here.5, alongside.5, "progress");
            assert_eq!(here.6, alongside.6, "the journal");
        }
    }
}
