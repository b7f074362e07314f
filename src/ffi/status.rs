//! Version and status: what every caller needs first.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};

/// Status code of every fallible nanprop function.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nanprop_status {
    /// Success.
    NANPROP_OK = 0,
    /// An argument was NULL, out of range, inconsistent or not finite; nothing was changed.
    NANPROP_ERR_INVALID_ARGUMENT = 1,
    /// The black box returned nonzero, or broke its contract (left an output unwritten, wrote
    /// past y[m-1], changed x), or crashed or timed out in a worker process. The message names
    /// the probe.
    NANPROP_ERR_BLACKBOX = 2,
    /// Outputs were NaN or Inf at x0 and the options asked for an error
    /// (`nonfinite_baseline = NANPROP_NONFINITE_ERROR`).
    NANPROP_ERR_BASELINE_NOT_FINITE = 3,
    /// An allocation failed.
    NANPROP_ERR_OUT_OF_MEMORY = 4,
    /// A bug in nanprop; please report it with the message.
    NANPROP_ERR_INTERNAL = 5,
}

/// The library version, e.g. "0.1.0" (static string).
#[no_mangle]
pub extern "C" fn nanprop_version() -> *const c_char {
    const V: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => panic!("version string"),
        };
    V.as_ptr()
}

/// A static description of a status code. Takes an int so that any value is safe; values that
/// are not a nanprop_status give "unknown status".
#[no_mangle]
pub extern "C" fn nanprop_status_string(status: c_int) -> *const c_char {
    let s: &'static CStr = match status {
        0 => c"success",
        1 => c"invalid argument",
        2 => c"black box failed",
        3 => c"baseline outputs not finite",
        4 => c"out of memory",
        5 => c"internal error",
        _ => c"unknown status",
    };
    s.as_ptr()
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::new("no error").unwrap());
}

pub(crate) fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // try_with: during thread teardown the slot may be gone; the message is then dropped.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = c);
}

/// The message of the last failure on the calling thread ("no error" before any). The string
/// stays valid until the next failing nanprop call on the same thread.
#[no_mangle]
pub extern "C" fn nanprop_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(c"(error message unavailable during thread exit)".as_ptr())
}
