//! The batch (ask/tell) session, for callers that run the evaluations themselves: on their own
//! threads, other processes, MPI ranks or a batch scheduler. The same [`TraceSession`] every
//! nanprop driver runs.

use super::abi::{count, give, guarded, handle, handle_mut, not_null, reset_out, slice, slice_mut};
use super::options::{nanprop_options, read_options};
use super::pattern::nanprop_pattern;
use super::status::nanprop_status;
use crate::error::{Error, Result};
use crate::trace::failure::Failure;
use crate::trace::TraceSession;
use std::ffi::c_int;

/// A trace as a batch (ask/tell) session, for callers that run the evaluations themselves: on
/// threads, other processes, MPI ranks or a batch scheduler. Opaque; free with
/// `nanprop_session_free`. Not for use by two threads at once.
pub struct nanprop_session {
    inner: Option<TraceSession>,
}

/// The live session behind a handle.
unsafe fn session_mut<'a>(s: *mut nanprop_session) -> Result<&'a mut TraceSession> {
    // SAFETY: by the callers' contract, NULL or a live session used by one thread.
    unsafe { handle_mut(s, "session")? }
        .inner
        .as_mut()
        .ok_or_else(|| Error::invalid("the session is finished"))
}

/// Starts a trace of f: R^n -> R^m at x0 as a batch session: the caller evaluates f. Loop:
/// `nanprop_session_ask` for the outstanding evaluation requests, `nanprop_session_input` for
/// the input of each, evaluate f there (anywhere, in any order, concurrently), and
/// `nanprop_session_tell` its outputs; when ask returns none, `nanprop_session_finish`.
/// Options as for `nanprop_trace` (sampling, threads, processes and isolation do not apply: the
/// caller evaluates, at x0). An error that stops the trace (NANPROP_ERR_OUT_OF_MEMORY,
/// NANPROP_ERR_BLACKBOX, NANPROP_ERR_BASELINE_NOT_FINITE from ask, tell or fail) leaves the
/// session part way: every later ask, tell, fail and finish returns
/// NANPROP_ERR_INVALID_ARGUMENT naming that error; free it (a new session with the same journal
/// replays the evaluations told so far). Errors about the arguments change nothing.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (x0 or out NULL; n or m zero or too large; NaN/Inf in
/// x0; bad options).
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_create(
    n: usize,
    m: usize,
    x0: *const f64,
    options: *const nanprop_options,
    out: *mut *mut nanprop_session,
) -> nanprop_status {
    guarded("nanprop_session_create", || {
        reset_out(out)?;
        not_null(x0, "x0")?;
        crate::pattern::check_dims(m, n)?;
        // SAFETY (both): arguments as documented.
        let options = unsafe { read_options(options)? };
        let x0 = unsafe { slice(x0, n, "x0")? };
        let session = TraceSession::new(n, m, x0, &options)?;
        give(
            out,
            nanprop_session {
                inner: Some(session),
            },
        );
        Ok(())
    })
}

/// The outstanding evaluation requests of the current step: `*count` receives how many there
/// are, and `ids` the first min(count, capacity) of them (`ids` may be NULL when capacity is
/// 0). A count of 0 means the trace is complete (or its budget spent): call
/// `nanprop_session_finish`. Asking again before telling returns the same requests.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL, finished or stopped session or count, or
/// NULL ids with capacity > 0; NANPROP_ERR_OUT_OF_MEMORY (which stops the trace).
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_ask(
    s: *mut nanprop_session,
    ids: *mut usize,
    capacity: usize,
    count: *mut usize,
) -> nanprop_status {
    guarded("nanprop_session_ask", || {
        // SAFETY (all): arguments as documented.
        let session = unsafe { session_mut(s)? };
        not_null(count, "count")?;
        let ids = unsafe { slice_mut(ids, capacity, "ids")? };
        let asked = session.ask()?;
        for (d, &id) in ids.iter_mut().zip(&asked) {
            *d = id;
        }
        super::abi::write_optional(count, asked.len());
        Ok(())
    })
}

/// Writes the input of request `id` into x (n values): x0 with the request's tagged NaNs or
/// verification values.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL or finished session, NULL x, or an id that
/// is not outstanding.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_input(
    s: *mut nanprop_session,
    id: usize,
    x: *mut f64,
) -> nanprop_status {
    guarded("nanprop_session_input", || {
        // SAFETY (both): arguments as documented.
        let session = unsafe { session_mut(s)? };
        not_null(x, "x")?;
        if !session.outstanding(id) {
            return Err(Error::invalid(format!(
                "request {id} is not outstanding in this step"
            )));
        }
        let x = unsafe { slice_mut(x, session.n(), "x")? };
        session.write_input(id, x);
        Ok(())
    })
}

/// The outputs y (m values) of request `id`, in any order.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL arguments, a finished or stopped session, an id
/// not outstanding or told twice: nothing changes). Errors that stop the trace:
/// NANPROP_ERR_BASELINE_NOT_FINITE (the baseline's outputs, with NANPROP_NONFINITE_ERROR),
/// NANPROP_ERR_BLACKBOX (noise, with NANPROP_NOISE_ERROR), NANPROP_ERR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_tell(
    s: *mut nanprop_session,
    id: usize,
    y: *const f64,
) -> nanprop_status {
    guarded("nanprop_session_tell", || {
        // SAFETY (both): arguments as documented.
        let session = unsafe { session_mut(s)? };
        not_null(y, "y")?;
        let y = unsafe { slice(y, session.m(), "y")? };
        session.tell(id, y)
    })
}

/// Reports that the evaluation of request `id` failed: f returned the nonzero `code`, or
/// crashed or timed out where the caller ran it (pass any nonzero code). A NaN request's
/// failure is worked around: its probe is split in halves, down to single inputs, and the parts
/// come with the next `nanprop_session_ask`; an input whose NaN alone fails is perturbed
/// instead and listed by `nanprop_pattern_failed_columns`. For reproducible request ids (a
/// journal), report a step's failures in increasing id order.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL, finished or stopped session, an id not
/// outstanding, code 0); NANPROP_ERR_BLACKBOX for the failure of any other request (the
/// baseline, a check or verification at a finite point), which stops the trace.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_fail(
    s: *mut nanprop_session,
    id: usize,
    code: c_int,
) -> nanprop_status {
    guarded("nanprop_session_fail", || {
        // SAFETY: NULL or a live session used by one thread, by contract.
        let session = unsafe { session_mut(s)? };
        session.fail(id, &Failure::Returned(code))
    })
}

/// Evaluations told so far, the baseline included; 0 for NULL or a finished session.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_evaluations(s: *const nanprop_session) -> usize {
    count("nanprop_session_evaluations", || {
        // SAFETY: NULL or a live session, by contract.
        let s = unsafe { handle(s, "session")? };
        Ok(s.inner.as_ref().map_or(0, TraceSession::evaluations))
    })
}

/// Ends the session and gives its pattern (free it with `nanprop_pattern_free`); whatever is
/// unresolved (requests not told) is kept as possible dependencies. The session can then only
/// be freed.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL arguments, finished already; the baseline not
/// told or the trace stopped by an error, which keep the session as it was),
/// NANPROP_ERR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_finish(
    s: *mut nanprop_session,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    guarded("nanprop_session_finish", || {
        reset_out(out)?;
        // SAFETY: NULL or a live session, by contract.
        let handle = unsafe { handle_mut(s, "session")? };
        // A finish too early (or after an error that stopped the trace) keeps the session.
        if let Some(session) = &handle.inner {
            session.ready_to_finish()?;
        }
        let session =
            (handle.inner.take()).ok_or_else(|| Error::invalid("the session is finished"))?;
        give(
            out,
            nanprop_pattern {
                inner: session.finish()?,
            },
        );
        Ok(())
    })
}

/// Frees a session. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_free(s: *mut nanprop_session) {
    // SAFETY: by this function's contract.
    unsafe { super::abi::free_boxed(s) }
}
