//! The C ABI. `build.rs` generates `include/nanprop.h` from this file with cbindgen, so every
//! comment on a public item here is the C documentation.
//!
//! Rules every entry point keeps: pointers are checked before use; a failure returns a status
//! other than `NANPROP_OK` and leaves a message for `nanprop_last_error` (per thread); no Rust
//! panic crosses the boundary (it becomes `NANPROP_ERR_INTERNAL`); outputs are written only on
//! success, except `*out`, which is set to NULL first.
//
//! Safety contract of every `unsafe` function here: each pointer is NULL or valid for the number
//! of elements its C documentation states, and a pattern pointer comes from this library and is
//! not yet freed. (The `# Safety` sections clippy asks for would repeat that in every header
//! comment.)
#![allow(non_camel_case_types, clippy::missing_safety_doc)]

use crate::driver::{self, BlackBox};
use crate::error::{Error, ErrorKind, Result};
use crate::pattern::{EntryKind, Pattern};
use crate::trace::{NonFiniteBaseline, Strategy, TraceOptions};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Status code of every fallible nanprop function.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nanprop_status {
    /// Success.
    NANPROP_OK = 0,
    /// An argument was NULL, out of range, inconsistent or not finite; nothing was changed.
    NANPROP_ERR_INVALID_ARGUMENT = 1,
    /// The black box returned nonzero, or broke its contract (left an output unwritten, wrote
    /// past y[m-1], changed x). The message names the probe.
    NANPROP_ERR_BLACKBOX = 2,
    /// Outputs were NaN or Inf at x0 and the options asked for an error
    /// (`nonfinite_baseline = NANPROP_NONFINITE_ERROR`).
    NANPROP_ERR_BASELINE_NOT_FINITE = 3,
    /// An allocation failed.
    NANPROP_ERR_OUT_OF_MEMORY = 4,
    /// A bug in nanprop; please report it with the message.
    NANPROP_ERR_INTERNAL = 5,
}

/// The black box: evaluate y = f(x), x of n values, y of m values. Return 0 on success; any
/// other value stops the trace with NANPROP_ERR_BLACKBOX. It must write all m outputs, nothing
/// past y[m-1], and must not change x.
pub type nanprop_blackbox = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        n: usize,
        x: *const f64,
        m: usize,
        y: *mut f64,
    ) -> c_int,
>;

/// Strategy: the library's choice (currently NANPROP_STRATEGY_PAYLOAD).
pub const NANPROP_STRATEGY_DEFAULT: u32 = 0;
/// Strategy: one input per probe, n evaluations after the baseline (the paper's method).
pub const NANPROP_STRATEGY_ONE_HOT: u32 = 1;
/// Strategy: `chunk_size` adjacent inputs per probe; a NaN output marks the whole chunk.
pub const NANPROP_STRATEGY_CHUNKED: u32 = 2;
/// Strategy: payload-tagged probes, coarse to fine over blocks of inputs.
pub const NANPROP_STRATEGY_PAYLOAD: u32 = 3;

/// Outputs NaN/Inf at x0: report them and store their rows dense (default).
pub const NANPROP_NONFINITE_MARK_DENSE: u32 = 0;
/// Outputs NaN/Inf at x0: fail with NANPROP_ERR_BASELINE_NOT_FINITE.
pub const NANPROP_NONFINITE_ERROR: u32 = 1;

/// Entry kind: proven by NaN tracing.
pub const NANPROP_ENTRY_TRACED: u8 = 0;
/// Entry kind: the chunked strategy saw a NaN from the chunk holding this input.
pub const NANPROP_ENTRY_CHUNK: u8 = 1;
/// Entry kind: unresolved when the evaluation budget ran out; kept as possible.
pub const NANPROP_ENTRY_UNRESOLVED: u8 = 2;
/// Entry kind: the output was NaN/Inf at x0, so its row is stored dense.
pub const NANPROP_ENTRY_NONFINITE_ROW: u8 = 3;

/// The version of `nanprop_options` this header describes.
pub const NANPROP_OPTIONS_VERSION: u32 = 1;

/// Options of `nanprop_trace`. Always start from `nanprop_options_init`, which sets
/// `struct_size` and `version` for the header you compiled against: a library built from a newer
/// header reads only the fields your struct has; an older library refuses a newer struct with
/// NANPROP_ERR_INVALID_ARGUMENT.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nanprop_options {
    /// sizeof(nanprop_options) as the caller compiled it.
    pub struct_size: usize,
    /// NANPROP_OPTIONS_VERSION as the caller compiled it.
    pub version: u32,
    /// One of the NANPROP_STRATEGY_* values.
    pub strategy: u32,
    /// Inputs per probe for NANPROP_STRATEGY_CHUNKED (default 8, at least 1).
    pub chunk_size: usize,
    /// Most evaluations of f, the baseline included; 0 (default) means no limit. When it runs
    /// out, unresolved entries are kept as possible dependencies (`nanprop_pattern_unresolved`).
    pub max_evaluations: usize,
    /// One of the NANPROP_NONFINITE_* values.
    pub nonfinite_baseline: u32,
}

/// A traced (or given) sparsity pattern. Opaque; free with `nanprop_pattern_free`.
pub struct nanprop_pattern {
    inner: Pattern,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::new("no error").unwrap());
}

fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // try_with: during thread teardown the slot may be gone; the message is then dropped.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = c);
}

fn status_of(kind: ErrorKind) -> nanprop_status {
    match kind {
        ErrorKind::InvalidArgument => nanprop_status::NANPROP_ERR_INVALID_ARGUMENT,
        ErrorKind::BlackBox => nanprop_status::NANPROP_ERR_BLACKBOX,
        ErrorKind::BaselineNotFinite => nanprop_status::NANPROP_ERR_BASELINE_NOT_FINITE,
        ErrorKind::OutOfMemory => nanprop_status::NANPROP_ERR_OUT_OF_MEMORY,
        ErrorKind::Internal => nanprop_status::NANPROP_ERR_INTERNAL,
    }
}

/// Runs `body`, turning errors and panics into a status and the thread's last error message.
fn guarded(function: &str, body: impl FnOnce() -> Result<()>) -> nanprop_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => nanprop_status::NANPROP_OK,
        Ok(Err(e)) => {
            set_last_error(&format!("{function}: {}", e.message));
            status_of(e.kind)
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("{function}: internal error: {what}"));
            nanprop_status::NANPROP_ERR_INTERNAL
        }
    }
}

fn not_null<T>(p: *const T, name: &str) -> Result<()> {
    if p.is_null() {
        Err(Error::invalid(format!("{name} is NULL")))
    } else {
        Ok(())
    }
}

fn pattern_ref<'a>(p: *const nanprop_pattern) -> Result<&'a Pattern> {
    not_null(p, "pattern")?;
    // SAFETY: non-NULL, and by contract a pattern this library created and has not freed.
    Ok(unsafe { &(*p).inner })
}

fn default_options() -> nanprop_options {
    nanprop_options {
        struct_size: std::mem::size_of::<nanprop_options>(),
        version: NANPROP_OPTIONS_VERSION,
        strategy: NANPROP_STRATEGY_DEFAULT,
        chunk_size: 8,
        max_evaluations: 0,
        nonfinite_baseline: NANPROP_NONFINITE_MARK_DENSE,
    }
}

/// Reads a caller's options struct: defaults, overwritten by the bytes the caller's struct has.
fn read_options(options: *const nanprop_options) -> Result<TraceOptions> {
    let mut o = default_options();
    if !options.is_null() {
        // SAFETY: non-NULL; the caller's struct is at least as large as the fields read first.
        let size = unsafe { std::ptr::addr_of!((*options).struct_size).read_unaligned() };
        let ours = std::mem::size_of::<nanprop_options>();
        if size < ours {
            return Err(Error::invalid(format!(
                "options.struct_size = {size} is smaller than any known nanprop_options (call nanprop_options_init)"
            )));
        }
        if size > ours {
            return Err(Error::invalid(format!(
                "options.struct_size = {size}: these options come from a newer nanprop than this library ({}, struct size {ours})",
                env!("CARGO_PKG_VERSION")
            )));
        }
        // SAFETY: the caller's struct has exactly our size.
        o = unsafe { options.read_unaligned() };
        if o.version == 0 || o.version > NANPROP_OPTIONS_VERSION {
            return Err(Error::invalid(format!(
                "options.version = {} is not supported",
                o.version
            )));
        }
    }
    let strategy = match o.strategy {
        NANPROP_STRATEGY_DEFAULT | NANPROP_STRATEGY_PAYLOAD => Strategy::Payload,
        NANPROP_STRATEGY_ONE_HOT => Strategy::OneHot,
        NANPROP_STRATEGY_CHUNKED => Strategy::Chunked,
        s => {
            return Err(Error::invalid(format!(
                "options.strategy = {s} is not a NANPROP_STRATEGY_* value"
            )))
        }
    };
    let nonfinite_baseline = match o.nonfinite_baseline {
        NANPROP_NONFINITE_MARK_DENSE => NonFiniteBaseline::MarkDense,
        NANPROP_NONFINITE_ERROR => NonFiniteBaseline::Error,
        v => {
            return Err(Error::invalid(format!(
                "options.nonfinite_baseline = {v} is not a NANPROP_NONFINITE_* value"
            )))
        }
    };
    if strategy == Strategy::Chunked && o.chunk_size == 0 {
        return Err(Error::invalid("options.chunk_size must be at least 1"));
    }
    Ok(TraceOptions {
        strategy,
        chunk_size: o.chunk_size.max(1),
        max_evaluations: o.max_evaluations,
        nonfinite_baseline,
    })
}

/// Fills `options` with the defaults and sets its `struct_size` and `version`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_options_init(options: *mut nanprop_options) {
    if !options.is_null() {
        // SAFETY: non-NULL, points to a caller's nanprop_options.
        unsafe { options.write_unaligned(default_options()) };
    }
}

struct CBlackBox {
    f: unsafe extern "C" fn(*mut c_void, usize, *const f64, usize, *mut f64) -> c_int,
    user_data: *mut c_void,
}

impl BlackBox for CBlackBox {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        // SAFETY: the caller's function, with buffers of the sizes it was promised.
        let r = unsafe { (self.f)(self.user_data, x.len(), x.as_ptr(), y.len(), y.as_mut_ptr()) };
        if r == 0 {
            Ok(())
        } else {
            Err(r)
        }
    }
}

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
    guarded("nanprop_trace", || {
        not_null(out, "out")?;
        // SAFETY: checked non-NULL.
        unsafe { *out = std::ptr::null_mut() };
        let f = f.ok_or_else(|| Error::invalid("f is NULL"))?;
        not_null(x0, "x0")?;
        crate::pattern::check_dims(m, n)?;
        let options = read_options(options)?;
        // SAFETY: non-NULL, and by contract x0 holds n values.
        let x0 = unsafe { std::slice::from_raw_parts(x0, n) };
        let mut bb = CBlackBox { f, user_data };
        let pattern = driver::trace(&mut bb, m, x0, &options)?;
        let boxed = Box::new(nanprop_pattern { inner: pattern });
        // SAFETY: checked non-NULL.
        unsafe { *out = Box::into_raw(boxed) };
        Ok(())
    })
}

/// Number of rows (outputs, m) of the pattern; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_rows(p: *const nanprop_pattern) -> usize {
    pattern_ref(p).map_or(0, |p| p.rows())
}

/// Number of columns (inputs, n) of the pattern; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_cols(p: *const nanprop_pattern) -> usize {
    pattern_ref(p).map_or(0, |p| p.cols())
}

/// Number of entries of the pattern; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_nnz(p: *const nanprop_pattern) -> usize {
    pattern_ref(p).map_or(0, |p| p.nnz())
}

/// Calls of f made by the trace, the baseline included; 0 for NULL or a pattern not traced.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_evaluations(p: *const nanprop_pattern) -> usize {
    pattern_ref(p).map_or(0, |p| p.report.evaluations)
}

/// Entries kept as possible dependencies because the evaluation budget ran out before they were
/// resolved (kind NANPROP_ENTRY_UNRESOLVED); 0 when the trace completed, or for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_unresolved(p: *const nanprop_pattern) -> usize {
    pattern_ref(p).map_or(0, |p| p.report.unresolved)
}

/// Copies the pattern in CSR form, 0-based: `row_ptr` receives m + 1 offsets, `col_idx` nnz
/// column indices, sorted within each row. `col_idx` may be NULL when nnz is 0.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL pattern or array.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_csr(
    p: *const nanprop_pattern,
    row_ptr: *mut usize,
    col_idx: *mut usize,
) -> nanprop_status {
    guarded("nanprop_pattern_csr", || {
        let p = pattern_ref(p)?;
        not_null(row_ptr, "row_ptr")?;
        if p.nnz() > 0 {
            not_null(col_idx, "col_idx")?;
        }
        // SAFETY: non-NULL; by contract sized m + 1 and nnz.
        let rp = unsafe { std::slice::from_raw_parts_mut(row_ptr, p.rows() + 1) };
        rp.copy_from_slice(p.row_ptr());
        if p.nnz() > 0 {
            // SAFETY: as above.
            let ci = unsafe { std::slice::from_raw_parts_mut(col_idx, p.nnz()) };
            for (d, &s) in ci.iter_mut().zip(p.col_idx()) {
                *d = s as usize;
            }
        }
        Ok(())
    })
}

/// Copies the kind of each entry (NANPROP_ENTRY_*), in the order of `nanprop_pattern_csr`, into
/// `kinds` (nnz bytes; may be NULL when nnz is 0).
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL pattern or array.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_entry_kinds(
    p: *const nanprop_pattern,
    kinds: *mut u8,
) -> nanprop_status {
    guarded("nanprop_pattern_entry_kinds", || {
        let p = pattern_ref(p)?;
        if p.nnz() == 0 {
            return Ok(());
        }
        not_null(kinds, "kinds")?;
        // SAFETY: non-NULL; by contract nnz bytes.
        let k = unsafe { std::slice::from_raw_parts_mut(kinds, p.nnz()) };
        for (d, &s) in k.iter_mut().zip(p.kinds()) {
            *d = match s {
                EntryKind::Traced => NANPROP_ENTRY_TRACED,
                EntryKind::Chunk => NANPROP_ENTRY_CHUNK,
                EntryKind::Unresolved => NANPROP_ENTRY_UNRESOLVED,
                EntryKind::NonFiniteRow => NANPROP_ENTRY_NONFINITE_ROW,
            };
        }
        Ok(())
    })
}

/// Number of outputs that were NaN or Inf at x0 (their rows are stored dense); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_num_nonfinite_rows(p: *const nanprop_pattern) -> usize {
    pattern_ref(p).map_or(0, |p| p.nonfinite_rows().len())
}

/// Copies the 0-based indices of the outputs that were NaN or Inf at x0, increasing, into
/// `rows` (`nanprop_pattern_num_nonfinite_rows` entries; may be NULL when there are none).
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL pattern or array.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_nonfinite_rows(
    p: *const nanprop_pattern,
    rows: *mut usize,
) -> nanprop_status {
    guarded("nanprop_pattern_nonfinite_rows", || {
        let p = pattern_ref(p)?;
        let src = p.nonfinite_rows();
        if src.is_empty() {
            return Ok(());
        }
        not_null(rows, "rows")?;
        // SAFETY: non-NULL; by contract sized as documented.
        let dst = unsafe { std::slice::from_raw_parts_mut(rows, src.len()) };
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = s as usize;
        }
        Ok(())
    })
}

/// Frees a pattern. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_free(p: *mut nanprop_pattern) {
    if !p.is_null() {
        // SAFETY: a pattern created by this library with Box::into_raw, freed once by contract.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(p) })));
    }
}

/// The message of the last failure on the calling thread ("no error" before any). The string
/// stays valid until the next failing nanprop call on the same thread.
#[no_mangle]
pub extern "C" fn nanprop_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(c"(error message unavailable during thread exit)".as_ptr())
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
