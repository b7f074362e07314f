//! The flag tracer: traces again whenever discrete inputs take new values.

use super::abi::{
    count, give, guarded, handle, handle_mut, not_null, reset_out, slice, write_optional,
};
use super::blackbox::{c_black_box, nanprop_blackbox, CBlackBox};
use super::options::{nanprop_options, read_options};
use super::pattern::nanprop_pattern;
use super::status::nanprop_status;
use crate::driver::flags::FlagTracer;
use crate::error::Error;
use std::ffi::{c_int, c_void};

/// A stateful tracer for codes with discrete ("flag") inputs: it traces again whenever it sees
/// a new combination of flag values and keeps the union. Opaque; free it with
/// `nanprop_flag_tracer_free`.
pub struct nanprop_flag_tracer {
    inner: FlagTracer,
    f: CBlackBox,
    n: usize,
}

/// Creates a tracer for f: R^n -> R^m whose inputs `flags` (num_flags 0-based indices) are
/// discrete switches. Each `nanprop_flag_tracer_observe` at a point with flag values not seen
/// before traces there (with `options`, as `nanprop_trace` would); the pattern is the union.
/// `*out` is NULL on failure.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL f or out; NULL flags with num_flags > 0; a flag
/// index not below n; n or m zero; bad options).
#[no_mangle]
pub unsafe extern "C" fn nanprop_flag_tracer_create(
    f: nanprop_blackbox,
    user_data: *mut c_void,
    n: usize,
    m: usize,
    flags: *const usize,
    num_flags: usize,
    options: *const nanprop_options,
    out: *mut *mut nanprop_flag_tracer,
) -> nanprop_status {
    guarded("nanprop_flag_tracer_create", || {
        reset_out(out)?;
        let f = c_black_box(f, user_data)?;
        // SAFETY (both): arguments as documented.
        let flags = unsafe { slice(flags, num_flags, "flags")? };
        let inner = FlagTracer::new(n, m, flags, &unsafe { read_options(options)? })?;
        give(out, nanprop_flag_tracer { inner, f, n });
        Ok(())
    })
}

/// Shows the tracer the point x (n values, e.g. each point an optimizer visits). Traces there if
/// its flag values are new; `*traced` (if not NULL) is set to 1 then, else 0.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL tracer or x, or a NaN/Inf in x; those of
/// `nanprop_trace` when it traces.
#[no_mangle]
pub unsafe extern "C" fn nanprop_flag_tracer_observe(
    t: *mut nanprop_flag_tracer,
    x: *const f64,
    traced: *mut c_int,
) -> nanprop_status {
    guarded("nanprop_flag_tracer_observe", || {
        // SAFETY (both): arguments as documented.
        let t = unsafe { handle_mut(t, "tracer")? };
        not_null(x, "x")?;
        let x = unsafe { slice(x, t.n, "x")? };
        let did = t.inner.observe(&mut t.f, x)?;
        write_optional(traced, c_int::from(did));
        Ok(())
    })
}

/// A copy of the tracer's current pattern (the union so far) into `*out`; free it with
/// `nanprop_pattern_free`.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for NULL arguments or when nothing was traced yet.
#[no_mangle]
pub unsafe extern "C" fn nanprop_flag_tracer_pattern(
    t: *const nanprop_flag_tracer,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    guarded("nanprop_flag_tracer_pattern", || {
        reset_out(out)?;
        // SAFETY: NULL or a live tracer, by contract.
        let p = unsafe { handle(t, "tracer")? }
            .inner
            .pattern()
            .ok_or_else(|| Error::invalid("nothing traced yet: observe a point first"))?;
        give(out, nanprop_pattern { inner: p.clone() });
        Ok(())
    })
}

/// Distinct flag combinations traced so far; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_flag_tracer_traces(t: *const nanprop_flag_tracer) -> usize {
    count("nanprop_flag_tracer_traces", || {
        // SAFETY: NULL or a live tracer, by contract.
        Ok(unsafe { handle(t, "flag tracer")? }.inner.traces())
    })
}

/// Frees a flag tracer. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_flag_tracer_free(t: *mut nanprop_flag_tracer) {
    // SAFETY: by this function's contract.
    unsafe { super::abi::free_boxed(t) }
}
