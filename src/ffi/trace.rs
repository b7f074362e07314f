//! Tracing: `nanprop_trace` and `nanprop_trace_points`.

use super::abi::{give, guarded, reset_out, slice};
use super::blackbox::{c_black_box, c_black_box_f32, nanprop_blackbox, nanprop_blackbox_f32};
use super::options::{nanprop_options, read_options};
use super::pattern::nanprop_pattern;
use super::status::nanprop_status;
use crate::error::Error;
use std::ffi::c_void;

/// Traces the sparsity pattern of f: R^n -> R^m at x0 (n values, all finite).
///
/// f is evaluated at x0 first (the baseline), then with inputs replaced by tagged NaNs as the
/// strategy plans. `*out` receives a new pattern (free it with `nanprop_pattern_free`); it is set
/// to NULL first, and stays NULL on failure.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (f, x0 or out NULL; n or m zero or above 2^32-1; a NaN
/// or Inf in x0; bad options), NANPROP_ERR_BLACKBOX (f failed or broke its contract: the
/// message names the probe), NANPROP_ERR_BASELINE_NOT_FINITE (only with
/// NANPROP_NONFINITE_ERROR), NANPROP_ERR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nanprop_trace(
    f: nanprop_blackbox,
    user_data: *mut c_void,
    n: usize,
    m: usize,
    x0: *const f64,
    options: *const nanprop_options,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    // SAFETY: arguments as documented above.
    unsafe {
        trace(
            ("nanprop_trace", "x0"),
            f,
            user_data,
            n,
            m,
            x0,
            1,
            options,
            out,
        )
    }
}

/// Traces a single-precision black box (REAL*4, `float` arguments) at x0 (n floats): as
/// `nanprop_trace`. Input ids travel in the 22 payload bits a `float` NaN has (the same id
/// space as in double precision: inputs beyond 4,194,303 are numbered within each probe).
/// `threads` is refused (use `processes` or `isolate`).
///
/// Errors: as `nanprop_trace`.
#[no_mangle]
pub unsafe extern "C" fn nanprop_trace_f32(
    f: nanprop_blackbox_f32,
    user_data: *mut c_void,
    n: usize,
    m: usize,
    x0: *const f32,
    options: *const nanprop_options,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    guarded("nanprop_trace_f32", || {
        reset_out(out)?;
        let f = c_black_box_f32(f, user_data)?;
        crate::pattern::check_dims(m, n)?;
        // SAFETY: by the contract above.
        let (options, x0) = unsafe { (read_options(options)?, slice(x0, n, "x0")?) };
        let pattern = crate::driver::entry::trace_f32(f, m, x0, &options)?;
        give(out, nanprop_pattern { inner: pattern });
        Ok(())
    })
}

/// Traces f at each of `num_points` points (`points`: num_points x n values, point k at
/// points + k n) and returns the union of the patterns (each entry with its strongest kind;
/// evaluations added up). Options as for `nanprop_trace` (sampling included, around the first
/// point).
///
/// Errors: as `nanprop_trace`, and NANPROP_ERR_INVALID_ARGUMENT for no points; the message
/// names the point that failed.
#[no_mangle]
pub unsafe extern "C" fn nanprop_trace_points(
    f: nanprop_blackbox,
    user_data: *mut c_void,
    n: usize,
    m: usize,
    points: *const f64,
    num_points: usize,
    options: *const nanprop_options,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    // SAFETY: arguments as documented above.
    unsafe {
        trace(
            ("nanprop_trace_points", "points"),
            f,
            user_data,
            n,
            m,
            points,
            num_points,
            options,
            out,
        )
    }
}

/// Both entry points: `names` are the function's and the points argument's, for messages.
#[allow(clippy::too_many_arguments)]
unsafe fn trace(
    names: (&str, &str),
    f: nanprop_blackbox,
    user_data: *mut c_void,
    n: usize,
    m: usize,
    points: *const f64,
    num_points: usize,
    options: *const nanprop_options,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    guarded(names.0, || {
        reset_out(out)?;
        let mut f = c_black_box(f, user_data)?;
        crate::pattern::check_dims(m, n)?;
        if num_points == 0 {
            return Err(Error::invalid("num_points is 0"));
        }
        let total = n
            .checked_mul(num_points)
            .ok_or_else(|| Error::invalid("num_points * n overflows"))?;
        // SAFETY: by the entry points' contracts.
        let (options, points) = unsafe { (read_options(options)?, slice(points, total, names.1)?) };
        let pattern =
            crate::driver::entry::trace_flat(&mut f, n, m, points, &options, &mut |_| {})?;
        give(out, nanprop_pattern { inner: pattern });
        Ok(())
    })
}
