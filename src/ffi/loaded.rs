//! Loaded black boxes: a function in a shared library, traced and differentiated without a C
//! callback of the caller's.
//!
//! A handle is never changed after it is opened, so it may be shared by threads and re-entered
//! (a black box that calls nanprop on its own handle): the loaded function is called through a
//! shared reference. Whether the function itself may run on several threads at once is the
//! caller's to declare, by setting `threads`, as for any black box.

use super::abi::{give, guarded, handle, reset_out, slice};
use super::blackbox::nanprop_blackbox;
use super::jacobian::{jacobian_of, nanprop_jacobian_options};
use super::options::{nanprop_options, read_options};
use super::pattern::{nanprop_pattern, pattern_ref};
use super::status::nanprop_status;
use crate::error::{Error, Result};
use crate::loader::{Convention, IntKind, LoadedBlackBox, SharedLoaded};
use crate::precision::Precision;
use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Loaded function convention: `void f(const double *x, double *y)`.
pub const NANPROP_CONVENTION_C: u32 = 0;
/// Loaded function convention: the `nanprop_blackbox` signature (user_data is NULL).
pub const NANPROP_CONVENTION_BLACKBOX: u32 = 1;
/// Loaded function convention: Fortran `subroutine f(n, x, m, y)`, all by reference.
pub const NANPROP_CONVENTION_FORTRAN: u32 = 2;
/// Loaded function convention: MINPACK hybrd `subroutine fcn(n, x, fvec, iflag)` (m = n);
/// iflag < 0 on return is a failure.
pub const NANPROP_CONVENTION_MINPACK_HYBRD: u32 = 3;
/// Loaded function convention: MINPACK lmdif `subroutine fcn(m, n, x, fvec, iflag)`.
pub const NANPROP_CONVENTION_MINPACK_LMDIF: u32 = 4;
/// Loaded function convention: Fortran `subroutine f(n, x, y)` with m = n, the common residual
/// form `resid(n, x, f)`.
pub const NANPROP_CONVENTION_FORTRAN_SQUARE: u32 = 5;
/// Added (OR) to a convention: the routine's REAL arguments are single precision (REAL*4,
/// `float`), e.g. `NANPROP_CONVENTION_FORTRAN | NANPROP_CONVENTION_REAL4`; with
/// NANPROP_CONVENTION_BLACKBOX the routine has the `nanprop_blackbox_f32` signature. nanprop
/// converts at the call (tags survive, `shared/NAN_FACTS.md`) and sizes Jacobian steps for
/// `float`.
pub const NANPROP_CONVENTION_REAL4: u32 = 0x100;
/// Added (OR) to a convention: do not load the library into the calling process. A child
/// process loads it to check it (the errors are the same; a library whose constructor aborts,
/// crashes or calls `exit()` is NANPROP_ERR_BLACKBOX instead of the end of the caller), and
/// the processes that call the function load it: with `isolate` or `processes` each worker's
/// spawner loads it once and the children that evaluate inherit it, so the library's code never
/// runs in the caller. Called in the caller (a trace without workers, a Jacobian), the library
/// is loaded there on the first call.
pub const NANPROP_CONVENTION_OPEN_IN_WORKER: u32 = 0x200;

/// A black box loaded from a shared library (loader mode). Opaque; close it with
/// `nanprop_loaded_close`. The library stays loaded while the handle lives (opened with
/// NANPROP_CONVENTION_OPEN_IN_WORKER: in each process that has called it). A handle may be
/// used by several threads at once and from inside its own evaluations.
pub struct nanprop_loaded {
    inner: LoadedBlackBox,
    /// The resolved symbol name, kept for `nanprop_loaded_symbol`.
    symbol: CString,
}

unsafe fn loaded_ref<'a>(b: *const nanprop_loaded) -> Result<&'a nanprop_loaded> {
    // SAFETY: by the callers' contract, NULL or a live handle.
    unsafe { handle(b, "loaded black box") }
}

/// Opens the shared library `path`, finds the function `symbol` and prepares to call it with
/// `convention` (a NANPROP_CONVENTION_* value) as f: R^n -> R^m. Fortran names are tried as
/// given, lowercase with `_`, lowercase with `__` (names holding `_`), and uppercase.
/// `integer_bytes` is the size of the Fortran default INTEGER: 4 (also for 0) or 8
/// (-fdefault-integer-8). `convention | NANPROP_CONVENTION_REAL4` loads a REAL*4 routine;
/// `convention | NANPROP_CONVENTION_OPEN_IN_WORKER` keeps the library out of this process.
/// `*out` is NULL on failure.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT: NULL path, symbol or out; n or m zero (sizes
/// missing); an unknown convention; the file not found; not a shared library (the loader's
/// message is included); the symbol not found (every name tried is listed, with the path).
/// With NANPROP_CONVENTION_OPEN_IN_WORKER also NANPROP_ERR_BLACKBOX: loading the library ended
/// the child that loaded it (the signal or exit status is named) or took over a minute.
#[no_mangle]
pub unsafe extern "C" fn nanprop_loaded_open(
    path: *const c_char,
    symbol: *const c_char,
    convention: u32,
    n: usize,
    m: usize,
    integer_bytes: u32,
    out: *mut *mut nanprop_loaded,
) -> nanprop_status {
    guarded("nanprop_loaded_open", || {
        reset_out(out)?;
        // SAFETY (both): NULL or NUL-terminated, by contract.
        let path =
            unsafe { super::abi::path(path) }.ok_or_else(|| Error::invalid("path is NULL"))?;
        let symbol = unsafe { super::abi::text(symbol, "symbol")? }
            .ok_or_else(|| Error::invalid("symbol is NULL"))?;
        let real = match convention & NANPROP_CONVENTION_REAL4 {
            0 => Precision::Double,
            _ => Precision::Single,
        };
        let in_worker = convention & NANPROP_CONVENTION_OPEN_IN_WORKER != 0;
        let convention =
            match convention & !(NANPROP_CONVENTION_REAL4 | NANPROP_CONVENTION_OPEN_IN_WORKER) {
                NANPROP_CONVENTION_C => Convention::C,
                NANPROP_CONVENTION_BLACKBOX => Convention::Blackbox,
                NANPROP_CONVENTION_FORTRAN => Convention::Fortran,
                NANPROP_CONVENTION_MINPACK_HYBRD => Convention::MinpackHybrd,
                NANPROP_CONVENTION_MINPACK_LMDIF => Convention::MinpackLmdif,
                NANPROP_CONVENTION_FORTRAN_SQUARE => Convention::FortranSquare,
                c => {
                    return Err(Error::invalid(format!(
                        "convention = {c} is not a NANPROP_CONVENTION_* value"
                    )))
                }
            };
        let int_kind = match integer_bytes {
            0 | 4 => IntKind::I4,
            8 => IntKind::I8,
            b => {
                return Err(Error::invalid(format!(
                    "integer_bytes = {b}: Fortran INTEGER is 4 or 8 bytes"
                )))
            }
        };
        let open = match in_worker {
            true => LoadedBlackBox::open_in_worker,
            false => LoadedBlackBox::open,
        };
        let inner = open(&path, &symbol, convention, n, m, int_kind, real)?;
        // A symbol name from dlsym has no interior NUL.
        let symbol = CString::new(inner.symbol()).unwrap_or_default();
        give(out, nanprop_loaded { inner, symbol });
        Ok(())
    })
}

/// The symbol name that resolved (e.g. "beam_"), valid while the handle lives; "" for NULL (with
/// a message for `nanprop_last_error`).
#[no_mangle]
pub unsafe extern "C" fn nanprop_loaded_symbol(b: *const nanprop_loaded) -> *const c_char {
    let mut name: *const c_char = c"".as_ptr();
    guarded("nanprop_loaded_symbol", || {
        // SAFETY: NULL or a live handle, by contract.
        name = unsafe { loaded_ref(b)? }.symbol.as_ptr();
        Ok(())
    });
    name
}

/// Calls a loaded black box; `user_data` is its nanprop_loaded handle. Returns -3 for sizes
/// that are not the handle's, -4 if the call panicked (it never unwinds into C).
unsafe extern "C" fn loaded_trampoline(
    user_data: *mut c_void,
    n: usize,
    x: *const f64,
    m: usize,
    y: *mut f64,
) -> c_int {
    let call = || -> std::result::Result<(), i32> {
        // SAFETY: user_data is the live handle nanprop_loaded_blackbox handed out.
        let b = unsafe { loaded_ref(user_data as *const nanprop_loaded) }.map_err(|_| -1)?;
        let f = &b.inner;
        if n != f.n() || m != f.m() || x.is_null() || y.is_null() {
            return Err(-3);
        }
        // SAFETY: sizes checked against the handle; buffers of the caller of f.
        let (x, y) = unsafe {
            (
                std::slice::from_raw_parts(x, n),
                std::slice::from_raw_parts_mut(y, m),
            )
        };
        f.call(x, y)
    };
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(())) => 0,
        Ok(Err(code)) => code,
        Err(_) => -4,
    }
}

/// The loaded function as a `nanprop_blackbox` and its `user_data` (the handle itself), to pass
/// to `nanprop_trace`, `nanprop_jacobian` or `nanprop_jacobian_plan_evaluate`.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL handle, f or user_data.
#[no_mangle]
pub unsafe extern "C" fn nanprop_loaded_blackbox(
    b: *const nanprop_loaded,
    f: *mut nanprop_blackbox,
    user_data: *mut *mut c_void,
) -> nanprop_status {
    guarded("nanprop_loaded_blackbox", || {
        // SAFETY: NULL or a live handle, by contract.
        unsafe { loaded_ref(b)? };
        super::abi::not_null(f, "f")?;
        super::abi::not_null(user_data, "user_data")?;
        super::abi::write_optional(f, Some(loaded_trampoline as _));
        super::abi::write_optional(user_data, b as *mut c_void);
        Ok(())
    })
}

/// Traces the loaded black box at x0 (n values): `nanprop_trace` with the handle's function and
/// sizes; a journal is tied to the library (its path, size, modification time) and symbol.
///
/// Errors: as `nanprop_trace`, and NANPROP_ERR_INVALID_ARGUMENT for a NULL handle.
#[no_mangle]
pub unsafe extern "C" fn nanprop_loaded_trace(
    b: *const nanprop_loaded,
    x0: *const f64,
    options: *const nanprop_options,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    guarded("nanprop_loaded_trace", || {
        reset_out(out)?;
        // SAFETY (all): arguments as documented.
        let f = &unsafe { loaded_ref(b)? }.inner;
        let options = unsafe { read_options(options)? };
        let x0 = unsafe { slice(x0, f.n(), "x0")? };
        let mut c = SharedLoaded(f);
        let pattern =
            crate::driver::entry::trace_flat(&mut c, f.n(), f.m(), x0, &options, &mut |_| {})?;
        give(out, nanprop_pattern { inner: pattern });
        Ok(())
    })
}

/// Computes a sparse Jacobian of the loaded black box at x0: `nanprop_jacobian` with the
/// handle's function and sizes.
///
/// Errors: as `nanprop_jacobian`, and NANPROP_ERR_INVALID_ARGUMENT for a NULL handle.
#[no_mangle]
pub unsafe extern "C" fn nanprop_loaded_jacobian(
    b: *const nanprop_loaded,
    x0: *const f64,
    p: *const nanprop_pattern,
    options: *const nanprop_jacobian_options,
    values: *mut f64,
    evaluations: *mut usize,
) -> nanprop_status {
    guarded("nanprop_loaded_jacobian", || {
        // SAFETY (all): arguments as documented.
        let f = &unsafe { loaded_ref(b)? }.inner;
        let pat = unsafe { pattern_ref(p)? };
        let mut c = SharedLoaded(f);
        unsafe { jacobian_of(&mut c, f.n(), f.m(), x0, pat, options, values, evaluations) }
    })
}

/// Closes a loaded black box and unloads its library. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_loaded_close(b: *mut nanprop_loaded) {
    // SAFETY: by this function's contract.
    unsafe { super::abi::free_boxed(b) }
}
