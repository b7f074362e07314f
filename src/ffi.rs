//! The C ABI. `build.rs` generates `include/nanprop.h` from this file with cbindgen, so every
//! comment on a public item here is the C documentation.
//!
//! Rules every entry point keeps: pointers are checked before use; a failure returns a status
//! other than `NANPROP_OK` and leaves a message for `nanprop_last_error` (per thread); no Rust
//! panic crosses the boundary (it becomes `NANPROP_ERR_INTERNAL`); outputs are written only on
//! success, except `*out`, which is set to NULL first. Accessors that return a count return 0
//! for a NULL handle and leave the message too.
//
//! Safety contract of every `unsafe` function here: each pointer is NULL or valid for the number
//! of elements its C documentation states, and a pattern pointer comes from this library and is
//! not yet freed. (The `# Safety` sections clippy asks for would repeat that in every header
//! comment.)
#![allow(non_camel_case_types, clippy::missing_safety_doc)]

use crate::coloring::{self, ColoringOptions, Order};
use crate::driver::BlackBox;
use crate::error::{Error, ErrorKind, Result};
use crate::jacobian::{Difference, JacobianOptions, JacobianPlan, Layout, Step};
use crate::loader::{Convention, IntKind, LoadedBlackBox};
use crate::multipoint::{sample_points, union_of, FlagTracer};
use crate::parallel::SyncBlackBox;
use crate::pattern::{EntryKind, Pattern};
use crate::trace::TraceSession;
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
/// Entry kind: found by verification: the NaN was absorbed (fmin, a clamp, an isnan guard, a
/// branch), but a finite step on this input changed the output.
pub const NANPROP_ENTRY_PERTURBATION: u8 = 1;
/// Entry kind: the chunked strategy saw a NaN from the chunk holding this input.
pub const NANPROP_ENTRY_CHUNK: u8 = 2;
/// Entry kind: unresolved when the evaluation budget ran out; kept as possible.
pub const NANPROP_ENTRY_UNRESOLVED: u8 = 3;
/// Entry kind: the output was NaN/Inf at x0, so its row is stored dense.
pub const NANPROP_ENTRY_NONFINITE_ROW: u8 = 4;

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
    /// 1 (default): verify every probe by a finite perturbation, so that absorbed NaNs (fmin,
    /// clamps, isnan guards, branches) do not hide dependencies; doubles the evaluations.
    /// 0: NaN tracing alone.
    pub verify: u32,
    /// Relative verification step: h_j = verify_step * max(|x0_j|, 1), sign of x0_j; 0 means the
    /// default 1e-3.
    pub verify_step: f64,
    /// An output counts as changed (by a NaN probe or by the verification step) only when it
    /// moves by more than verify_tolerance * max(|y|, 1) or stops being finite; 0 (default):
    /// any change of its bits. For codes whose results jitter.
    pub verify_tolerance: f64,
    /// Also trace at this many points sampled around x0 and return the union (default 0):
    /// x_j = x0_j + sample_scale * max(|x0_j|, 1) * z, z standard normal, so that branches taken
    /// near x0 are covered.
    pub sample_points: usize,
    /// Relative scale of the sampled points (default 0.1).
    pub sample_scale: f64,
    /// Seed of the sampled points (default 0).
    pub seed: u64,
    /// 1: run every evaluation in a forked worker process, so that a crash, abort, exit() or
    /// hang of the black box becomes NANPROP_ERR_BLACKBOX naming the signal or the timeout and
    /// the probe, and the caller survives (Unix). 0 (default): in this process.
    pub isolate: u32,
    /// With isolate or processes: seconds one evaluation may take before it is killed; 0
    /// (default): no limit.
    pub timeout: f64,
    /// Evaluate the probes of each step on this many threads at once (0 or 1, the default: one
    /// at a time). Setting it declares that f may be called from several threads at once.
    pub threads: usize,
    /// Evaluate the probes of each step in this many forked worker processes at once (0, the
    /// default: none), for black boxes that are not thread-safe; implies isolation.
    pub processes: usize,
    /// NULL (default), or the path of a journal file: every evaluation is appended to it as it
    /// completes, and a trace run again with the same journal (same n, m, x0 and options)
    /// evaluates only what the journal lacks. A journal of another trace is refused.
    pub journal: *const c_char,
}

/// A traced (or given) sparsity pattern. Opaque; free with `nanprop_pattern_free`.
pub struct nanprop_pattern {
    inner: Pattern,
}

/// Coloring order: the best of all orders, stopping at the lower bound (default).
pub const NANPROP_ORDER_BEST: u32 = 0;
/// Coloring order: natural (column index).
pub const NANPROP_ORDER_NATURAL: u32 = 1;
/// Coloring order: largest distance-2 degree first.
pub const NANPROP_ORDER_LARGEST_FIRST: u32 = 2;
/// Coloring order: smallest-last.
pub const NANPROP_ORDER_SMALLEST_LAST: u32 = 3;
/// Coloring order: incidence degree.
pub const NANPROP_ORDER_INCIDENCE_DEGREE: u32 = 4;
/// Coloring order: dynamic largest-first.
pub const NANPROP_ORDER_DYNAMIC_LARGEST_FIRST: u32 = 5;
/// Coloring order: random, from `seed`.
pub const NANPROP_ORDER_RANDOM: u32 = 6;
/// Coloring order: saturation (DSATUR): most distinct neighbouring colors first.
pub const NANPROP_ORDER_SATURATION: u32 = 7;

/// The version of `nanprop_coloring_options` this header describes.
pub const NANPROP_COLORING_OPTIONS_VERSION: u32 = 1;

/// Options of `nanprop_coloring`. Start from `nanprop_coloring_options_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nanprop_coloring_options {
    /// sizeof(nanprop_coloring_options) as the caller compiled it.
    pub struct_size: usize,
    /// NANPROP_COLORING_OPTIONS_VERSION as the caller compiled it.
    pub version: u32,
    /// One of the NANPROP_ORDER_* values (default NANPROP_ORDER_BEST).
    pub order: u32,
    /// Seed of the random order and of recoloring (default 0).
    pub seed: u64,
    /// Rounds of iterated greedy recoloring after the order (default 8; 0 for none).
    pub recolor_iterations: u32,
}

/// Forward differences: colors + 1 evaluations (colors when f(x) is supplied), first order.
pub const NANPROP_DIFFERENCE_FORWARD: u32 = 0;
/// Central differences: 2 colors evaluations, second order.
pub const NANPROP_DIFFERENCE_CENTRAL: u32 = 1;
/// Values in the pattern's CSR order (nnz values).
pub const NANPROP_LAYOUT_CSR: u32 = 0;
/// Values in CSC order (nnz values; structure from `nanprop_pattern_csc`).
pub const NANPROP_LAYOUT_CSC: u32 = 1;
/// Dense column-major m x n values, leading dimension m, zeros outside the pattern (Fortran).
pub const NANPROP_LAYOUT_DENSE_COLUMN_MAJOR: u32 = 2;
/// Step relative to max(|x_j|, 1), with the sign of x_j.
pub const NANPROP_STEP_RELATIVE: u32 = 0;
/// Step used as given.
pub const NANPROP_STEP_ABSOLUTE: u32 = 1;

/// The version of `nanprop_jacobian_options` this header describes.
pub const NANPROP_JACOBIAN_OPTIONS_VERSION: u32 = 1;

/// Options of `nanprop_jacobian` and `nanprop_jacobian_plan_create`. Start from
/// `nanprop_jacobian_options_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nanprop_jacobian_options {
    /// sizeof(nanprop_jacobian_options) as the caller compiled it.
    pub struct_size: usize,
    /// NANPROP_JACOBIAN_OPTIONS_VERSION as the caller compiled it.
    pub version: u32,
    /// NANPROP_DIFFERENCE_FORWARD (default) or NANPROP_DIFFERENCE_CENTRAL.
    pub difference: u32,
    /// NANPROP_LAYOUT_CSR (default), NANPROP_LAYOUT_CSC or NANPROP_LAYOUT_DENSE_COLUMN_MAJOR.
    pub layout: u32,
    /// NANPROP_STEP_RELATIVE (default) or NANPROP_STEP_ABSOLUTE: how `step`/`steps` are read.
    pub step_kind: u32,
    /// One step for every column; 0 (default) means sqrt(eps) relative for forward and
    /// cbrt(eps) relative for central differences.
    pub step: f64,
    /// NULL (default), or n steps, one per column, of kind `step_kind` (copied when a plan is
    /// made). Overrides `step`.
    pub steps: *const f64,
    /// How the columns are colored.
    pub coloring: nanprop_coloring_options,
}

/// A reusable Jacobian plan: a pattern, its coloring and buffers. Opaque; free with
/// `nanprop_jacobian_plan_free`. Not for use by two threads at once.
pub struct nanprop_jacobian_plan {
    inner: JacobianPlan,
}

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

/// A stateful tracer for codes with discrete ("flag") inputs: it traces again whenever it sees
/// a new combination of flag values and keeps the union. Opaque; free it with
/// `nanprop_flag_tracer_free`.
pub struct nanprop_flag_tracer {
    inner: FlagTracer,
    f: unsafe extern "C" fn(*mut c_void, usize, *const f64, usize, *mut f64) -> c_int,
    user_data: *mut c_void,
    n: usize,
}

/// A trace as a batch (ask/tell) session, for callers that run the evaluations themselves: on
/// threads, other processes, MPI ranks or a batch scheduler. Opaque; free with
/// `nanprop_session_free`. Not for use by two threads at once.
pub struct nanprop_session {
    inner: Option<TraceSession>,
}

/// A black box loaded from a shared library (loader mode). Opaque; close it with
/// `nanprop_loaded_close`. The library stays loaded while the handle lives.
pub struct nanprop_loaded {
    inner: RefCell<LoadedBlackBox>,
    /// The resolved symbol name, kept for `nanprop_loaded_symbol`.
    symbol: CString,
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
    // Traps masked for all of nanprop's work; the caller's environment back on return.
    let _fp = crate::fpenv::FpGuard::enter();
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

/// The value of a count accessor (which returns a size, not a status): 0 on error, with the
/// message set for `nanprop_last_error`.
fn count(function: &str, r: Result<usize>) -> usize {
    r.unwrap_or_else(|e| {
        set_last_error(&format!("{function}: {}", e.message));
        0
    })
}

fn not_null<T>(p: *const T, name: &str) -> Result<()> {
    if p.is_null() {
        Err(Error::invalid(format!("{name} is NULL")))
    } else {
        Ok(())
    }
}

/// Frees a box this library handed out (NULL is a no-op); a panic in a destructor stays here.
///
/// # Safety
/// `p` is NULL or came from `Box::into_raw` in this library and is freed once.
unsafe fn free_boxed<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: by this function's contract.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(p) })));
    }
}

/// Checks an output handle and sets it to NULL, so that it stays NULL on failure.
fn reset_out<T>(out: *mut *mut T) -> Result<()> {
    not_null(out, "out")?;
    // SAFETY: checked non-NULL; the caller's slot for a handle.
    unsafe { *out = std::ptr::null_mut() };
    Ok(())
}

/// Hands `value` to the caller through `out` (checked by `reset_out`).
fn give<T>(out: *mut *mut T, value: T) {
    // SAFETY: `out` was checked non-NULL by reset_out in the same call.
    unsafe { *out = Box::into_raw(Box::new(value)) };
}

/// Writes `value` through `p` unless it is NULL (optional outputs such as evaluation counts).
fn write_optional<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: non-NULL; by contract a valid place for a T.
        unsafe { *p = value };
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
        verify: 1,
        verify_step: 0.0,
        verify_tolerance: 0.0,
        sample_points: 0,
        sample_scale: 0.1,
        seed: 0,
        isolate: 0,
        timeout: 0.0,
        threads: 0,
        processes: 0,
        journal: std::ptr::null(),
    }
}

/// An options struct of this ABI: `struct_size` (usize) first, then `version` (u32).
trait Versioned: Copy {
    const NAME: &'static str;
    const VERSION: u32;
    fn defaults() -> Self;
    fn version(&self) -> u32;
}

/// Reads a caller's options struct (NULL: the defaults), checking its size and version.
fn read_versioned<T: Versioned>(ptr: *const T) -> Result<T> {
    if ptr.is_null() {
        return Ok(T::defaults());
    }
    // SAFETY: non-NULL; every options struct starts with its size as a usize.
    let size = unsafe { (ptr as *const usize).read_unaligned() };
    let ours = std::mem::size_of::<T>();
    if size < ours {
        return Err(Error::invalid(format!(
            "{}.struct_size = {size} is smaller than any known {} (initialize it with {}_init)",
            T::NAME,
            T::NAME,
            T::NAME
        )));
    }
    if size > ours {
        return Err(Error::invalid(format!(
            "{}.struct_size = {size}: these options come from a newer nanprop than this library ({}, struct size {ours})",
            T::NAME,
            env!("CARGO_PKG_VERSION")
        )));
    }
    // SAFETY: the caller's struct has exactly our size.
    let o = unsafe { ptr.read_unaligned() };
    if o.version() == 0 || o.version() > T::VERSION {
        return Err(Error::invalid(format!(
            "{}.version = {} is not supported",
            T::NAME,
            o.version()
        )));
    }
    Ok(o)
}

impl Versioned for nanprop_options {
    const NAME: &'static str = "nanprop_options";
    const VERSION: u32 = NANPROP_OPTIONS_VERSION;
    fn defaults() -> Self {
        default_options()
    }
    fn version(&self) -> u32 {
        self.version
    }
}

/// A caller's black box declared thread-safe (options.threads > 1).
struct CSyncBlackBox {
    f: CFn,
    user_data: *mut c_void,
}

// SAFETY: the caller declared f (with its user_data) callable from several threads at once by
// asking for threads.
unsafe impl Sync for CSyncBlackBox {}

impl SyncBlackBox for CSyncBlackBox {
    fn eval(&self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        // SAFETY: the caller's function, with buffers of the sizes it was promised.
        let r = unsafe { (self.f)(self.user_data, x.len(), x.as_ptr(), y.len(), y.as_mut_ptr()) };
        if r == 0 {
            Ok(())
        } else {
            Err(r)
        }
    }
}

type CFn = unsafe extern "C" fn(*mut c_void, usize, *const f64, usize, *mut f64) -> c_int;

/// The driver the options ask for, as a tracer of one point: serial, threads or processes.
fn driver_for<'a>(
    options: *const nanprop_options,
    f: CFn,
    user_data: *mut c_void,
    m: usize,
    trace_options: &'a TraceOptions,
) -> Result<impl FnMut(&[f64]) -> Result<Pattern> + 'a> {
    let o = read_versioned(options)?;
    if o.threads > 1 && (o.processes > 0 || o.isolate == 1) {
        return Err(Error::invalid(
            "threads cannot be combined with isolate or processes (use processes)",
        ));
    }
    Ok(move |x: &[f64]| {
        if o.threads > 1 {
            crate::parallel::trace_threads(
                &CSyncBlackBox { f, user_data },
                m,
                x,
                trace_options,
                o.threads,
            )
        } else if o.processes > 0 {
            crate::parallel::trace_processes(
                &mut CBlackBox { f, user_data },
                m,
                x,
                trace_options,
                o.processes,
            )
        } else {
            crate::driver::trace(&mut CBlackBox { f, user_data }, m, x, trace_options)
        }
    })
}

/// Points to trace at besides x0 (sampled as the options say).
fn sampled(options: *const nanprop_options, x0: &[f64]) -> Result<Vec<Vec<f64>>> {
    let o = read_versioned(options)?;
    if o.sample_points > 0 && !(o.sample_scale.is_finite() && o.sample_scale > 0.0) {
        return Err(Error::invalid(format!(
            "options.sample_scale = {} must be finite and positive",
            o.sample_scale
        )));
    }
    Ok(sample_points(x0, o.sample_points, o.sample_scale, o.seed))
}

/// A path from a C string's bytes.
fn path_from_bytes(bytes: &[u8]) -> Result<std::path::PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    {
        let s = std::str::from_utf8(bytes).map_err(|_| Error::invalid("path is not UTF-8"))?;
        Ok(std::path::PathBuf::from(s))
    }
}

/// Reads a caller's trace options.
fn read_options(options: *const nanprop_options) -> Result<TraceOptions> {
    let o = read_versioned(options)?;
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
    if o.verify > 1 {
        return Err(Error::invalid(format!(
            "options.verify = {} must be 0 or 1",
            o.verify
        )));
    }
    if o.isolate > 1 {
        return Err(Error::invalid(format!(
            "options.isolate = {} must be 0 or 1",
            o.isolate
        )));
    }
    if !(o.timeout.is_finite() && o.timeout >= 0.0) {
        return Err(Error::invalid(format!(
            "options.timeout = {} must be finite and at least 0",
            o.timeout
        )));
    }
    let journal = if o.journal.is_null() {
        None
    } else {
        // SAFETY: non-NULL, NUL-terminated by contract.
        let bytes = unsafe { CStr::from_ptr(o.journal) }.to_bytes();
        Some(path_from_bytes(bytes)?)
    };
    Ok(TraceOptions {
        strategy,
        chunk_size: o.chunk_size.max(1),
        max_evaluations: o.max_evaluations,
        nonfinite_baseline,
        verify: o.verify == 1,
        verify_step: if o.verify_step == 0.0 {
            TraceOptions::default().verify_step
        } else {
            o.verify_step
        },
        verify_tolerance: o.verify_tolerance,
        isolate: o.isolate == 1,
        timeout: (o.timeout > 0.0).then(|| std::time::Duration::from_secs_f64(o.timeout)),
        journal,
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
        reset_out(out)?;
        let f = f.ok_or_else(|| Error::invalid("f is NULL"))?;
        not_null(x0, "x0")?;
        crate::pattern::check_dims(m, n)?;
        let options_ptr = options;
        let options = read_options(options)?;
        // SAFETY: non-NULL, and by contract x0 holds n values.
        let x0 = unsafe { std::slice::from_raw_parts(x0, n) };
        let mut points = vec![x0.to_vec()];
        points.extend(sampled(options_ptr, x0)?);
        let pattern = union_of(
            &points,
            &mut driver_for(options_ptr, f, user_data, m, &options)?,
        )?;
        give(out, nanprop_pattern { inner: pattern });
        Ok(())
    })
}

/// Number of rows (outputs, m) of the pattern; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_rows(p: *const nanprop_pattern) -> usize {
    count("nanprop_pattern_rows", pattern_ref(p).map(|p| p.rows()))
}

/// Number of columns (inputs, n) of the pattern; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_cols(p: *const nanprop_pattern) -> usize {
    count("nanprop_pattern_cols", pattern_ref(p).map(|p| p.cols()))
}

/// Number of entries of the pattern; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_nnz(p: *const nanprop_pattern) -> usize {
    count("nanprop_pattern_nnz", pattern_ref(p).map(|p| p.nnz()))
}

/// Calls of f made by the trace, the baseline included; 0 for NULL or a pattern not traced.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_evaluations(p: *const nanprop_pattern) -> usize {
    count(
        "nanprop_pattern_evaluations",
        pattern_ref(p).map(|p| p.report.evaluations),
    )
}

/// Calls of f spent on verification by finite perturbation (included in
/// `nanprop_pattern_evaluations`); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_verification_evaluations(
    p: *const nanprop_pattern,
) -> usize {
    count(
        "nanprop_pattern_verification_evaluations",
        pattern_ref(p).map(|p| p.report.verification_evaluations),
    )
}

/// Entries found by verification only (kind NANPROP_ENTRY_PERTURBATION): dependencies NaN
/// tracing alone would have missed; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_found_by_perturbation(p: *const nanprop_pattern) -> usize {
    count(
        "nanprop_pattern_found_by_perturbation",
        pattern_ref(p).map(|p| p.report.found_by_perturbation),
    )
}

/// Entries kept as possible dependencies because the evaluation budget ran out before they were
/// resolved (kind NANPROP_ENTRY_UNRESOLVED); 0 when the trace completed, or for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_unresolved(p: *const nanprop_pattern) -> usize {
    count(
        "nanprop_pattern_unresolved",
        pattern_ref(p).map(|p| p.report.unresolved),
    )
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
                EntryKind::Perturbation => NANPROP_ENTRY_PERTURBATION,
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
    count(
        "nanprop_pattern_num_nonfinite_rows",
        pattern_ref(p).map(|p| p.nonfinite_rows().len()),
    )
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
    // SAFETY: by this function's contract.
    unsafe { free_boxed(p) }
}

fn default_coloring_options() -> nanprop_coloring_options {
    nanprop_coloring_options {
        struct_size: std::mem::size_of::<nanprop_coloring_options>(),
        version: NANPROP_COLORING_OPTIONS_VERSION,
        order: NANPROP_ORDER_BEST,
        seed: 0,
        recolor_iterations: 8,
    }
}

impl Versioned for nanprop_coloring_options {
    const NAME: &'static str = "nanprop_coloring_options";
    const VERSION: u32 = NANPROP_COLORING_OPTIONS_VERSION;
    fn defaults() -> Self {
        default_coloring_options()
    }
    fn version(&self) -> u32 {
        self.version
    }
}

fn default_jacobian_options() -> nanprop_jacobian_options {
    nanprop_jacobian_options {
        struct_size: std::mem::size_of::<nanprop_jacobian_options>(),
        version: NANPROP_JACOBIAN_OPTIONS_VERSION,
        difference: NANPROP_DIFFERENCE_FORWARD,
        layout: NANPROP_LAYOUT_CSR,
        step_kind: NANPROP_STEP_RELATIVE,
        step: 0.0,
        steps: std::ptr::null(),
        coloring: default_coloring_options(),
    }
}

impl Versioned for nanprop_jacobian_options {
    const NAME: &'static str = "nanprop_jacobian_options";
    const VERSION: u32 = NANPROP_JACOBIAN_OPTIONS_VERSION;
    fn defaults() -> Self {
        default_jacobian_options()
    }
    fn version(&self) -> u32 {
        self.version
    }
}

fn coloring_from(o: &nanprop_coloring_options) -> Result<ColoringOptions> {
    // The embedded struct of a jacobian options struct is checked like a standalone one.
    if o.struct_size != std::mem::size_of::<nanprop_coloring_options>()
        || o.version == 0
        || o.version > NANPROP_COLORING_OPTIONS_VERSION
    {
        return Err(Error::invalid(
            "coloring options: struct_size or version not set (use nanprop_coloring_options_init)",
        ));
    }
    let order = match o.order {
        NANPROP_ORDER_BEST => None,
        NANPROP_ORDER_NATURAL => Some(Order::Natural),
        NANPROP_ORDER_LARGEST_FIRST => Some(Order::LargestFirst),
        NANPROP_ORDER_SMALLEST_LAST => Some(Order::SmallestLast),
        NANPROP_ORDER_INCIDENCE_DEGREE => Some(Order::IncidenceDegree),
        NANPROP_ORDER_DYNAMIC_LARGEST_FIRST => Some(Order::DynamicLargestFirst),
        NANPROP_ORDER_RANDOM => Some(Order::Random(o.seed)),
        NANPROP_ORDER_SATURATION => Some(Order::Saturation),
        v => {
            return Err(Error::invalid(format!(
                "coloring order = {v} is not a NANPROP_ORDER_* value"
            )))
        }
    };
    Ok(ColoringOptions {
        strategy: order.map_or(coloring::Strategy::BestOf, coloring::Strategy::Only),
        seed: o.seed,
        recolor_iterations: o.recolor_iterations as usize,
    })
}

/// Reads jacobian options for a pattern with `n` columns (per-column steps are copied).
fn jacobian_from(options: *const nanprop_jacobian_options, n: usize) -> Result<JacobianOptions> {
    let o = read_versioned(options)?;
    let difference = match o.difference {
        NANPROP_DIFFERENCE_FORWARD => Difference::Forward,
        NANPROP_DIFFERENCE_CENTRAL => Difference::Central,
        v => {
            return Err(Error::invalid(format!(
                "difference = {v} is not a NANPROP_DIFFERENCE_* value"
            )))
        }
    };
    let layout = match o.layout {
        NANPROP_LAYOUT_CSR => Layout::Csr,
        NANPROP_LAYOUT_CSC => Layout::Csc,
        NANPROP_LAYOUT_DENSE_COLUMN_MAJOR => Layout::DenseColumnMajor,
        v => {
            return Err(Error::invalid(format!(
                "layout = {v} is not a NANPROP_LAYOUT_* value"
            )))
        }
    };
    let relative = match o.step_kind {
        NANPROP_STEP_RELATIVE => true,
        NANPROP_STEP_ABSOLUTE => false,
        v => {
            return Err(Error::invalid(format!(
                "step_kind = {v} is not a NANPROP_STEP_* value"
            )))
        }
    };
    let step = if !o.steps.is_null() {
        // SAFETY: non-NULL; by contract n values.
        let v = unsafe { std::slice::from_raw_parts(o.steps, n) }.to_vec();
        if relative {
            Step::RelativePerColumn(v)
        } else {
            Step::AbsolutePerColumn(v)
        }
    } else if o.step == 0.0 && relative {
        Step::Default
    } else if relative {
        Step::Relative(o.step)
    } else {
        Step::Absolute(o.step)
    };
    Ok(JacobianOptions {
        difference,
        step,
        layout,
        coloring: coloring_from(&o.coloring)?,
    })
}

/// Fills `options` with the coloring defaults (best of all orders, 8 recoloring rounds) and
/// sets its `struct_size` and `version`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_coloring_options_init(options: *mut nanprop_coloring_options) {
    if !options.is_null() {
        // SAFETY: non-NULL, points to a caller's struct.
        unsafe { options.write_unaligned(default_coloring_options()) };
    }
}

/// Fills `options` with the Jacobian defaults (forward differences, default steps, CSR layout,
/// best-of coloring) and sets its `struct_size` and `version`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_options_init(options: *mut nanprop_jacobian_options) {
    if !options.is_null() {
        // SAFETY: non-NULL, points to a caller's struct.
        unsafe { options.write_unaligned(default_jacobian_options()) };
    }
}

/// Colors the columns of pattern `p` for Jacobian compression: no two columns of one color
/// share a row. `colors` receives n colors (0-based), `*num_colors` their count (at least the
/// longest row). `options` NULL means the best of all orders.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL pattern, colors or num_colors; bad options).
#[no_mangle]
pub unsafe extern "C" fn nanprop_coloring(
    p: *const nanprop_pattern,
    options: *const nanprop_coloring_options,
    colors: *mut usize,
    num_colors: *mut usize,
) -> nanprop_status {
    guarded("nanprop_coloring", || {
        let p = pattern_ref(p)?;
        not_null(colors, "colors")?;
        not_null(num_colors, "num_colors")?;
        let o = coloring_from(&read_versioned(options)?)?;
        let c = coloring::color(p, &o);
        // SAFETY: non-NULL; by contract n entries.
        let out = unsafe { std::slice::from_raw_parts_mut(colors, p.cols()) };
        for (d, &s) in out.iter_mut().zip(&c.colors) {
            *d = s as usize;
        }
        // SAFETY: non-NULL.
        unsafe { *num_colors = c.num_colors };
        Ok(())
    })
}

/// Makes a pattern from CSR arrays, 0-based: `row_ptr` has m + 1 nondecreasing entries from 0
/// to nnz, each row's `col_idx` entries are strictly increasing and below n. `*out` receives
/// the pattern (NULL on failure). `col_idx` may be NULL when nnz is 0.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT naming the first problem (size, range, order,
/// duplicate).
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_from_csr(
    m: usize,
    n: usize,
    row_ptr: *const usize,
    col_idx: *const usize,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    guarded("nanprop_pattern_from_csr", || {
        reset_out(out)?;
        not_null(row_ptr, "row_ptr")?;
        crate::pattern::check_dims(m, n)?;
        // SAFETY: non-NULL; by contract m + 1 entries.
        let rp = unsafe { std::slice::from_raw_parts(row_ptr, m + 1) };
        let nnz = rp[m];
        if nnz > 0 {
            not_null(col_idx, "col_idx")?;
        }
        if rp[0] != 0 || rp.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::invalid("row_ptr must start at 0 and never decrease"));
        }
        let ci: &[usize] = if nnz == 0 {
            &[]
        } else {
            // SAFETY: non-NULL; row_ptr[m] = nnz entries by contract.
            unsafe { std::slice::from_raw_parts(col_idx, nnz) }
        };
        let pattern = Pattern::from_csr(m, n, rp, ci)?;
        give(out, nanprop_pattern { inner: pattern });
        Ok(())
    })
}

/// Copies the pattern by columns (CSC), 0-based: `col_ptr` receives n + 1 offsets, `row_idx`
/// nnz row indices, increasing in each column (the order of NANPROP_LAYOUT_CSC values).
/// `row_idx` may be NULL when nnz is 0.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL pattern or array.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_csc(
    p: *const nanprop_pattern,
    col_ptr: *mut usize,
    row_idx: *mut usize,
) -> nanprop_status {
    guarded("nanprop_pattern_csc", || {
        let p = pattern_ref(p)?;
        not_null(col_ptr, "col_ptr")?;
        if p.nnz() > 0 {
            not_null(row_idx, "row_idx")?;
        }
        let t = p.transpose();
        // SAFETY: non-NULL; by contract n + 1 and nnz entries.
        unsafe { std::slice::from_raw_parts_mut(col_ptr, p.cols() + 1) }
            .copy_from_slice(&t.col_ptr);
        if p.nnz() > 0 {
            // SAFETY: as above.
            let ri = unsafe { std::slice::from_raw_parts_mut(row_idx, p.nnz()) };
            for (d, &s) in ri.iter_mut().zip(&t.row_idx) {
                *d = s as usize;
            }
        }
        Ok(())
    })
}

/// Makes a reusable Jacobian plan for pattern `p` (PETSc's MatFDColoring shape): the columns
/// are colored once here; `nanprop_jacobian_plan_evaluate` then computes Jacobians at any
/// number of points without allocating. The plan keeps its own copy of what it needs from `p`
/// and of `options->steps`. `*out` is NULL on failure.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL pattern or out; bad options; a zero or non-finite
/// step), NANPROP_ERR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_create(
    p: *const nanprop_pattern,
    options: *const nanprop_jacobian_options,
    out: *mut *mut nanprop_jacobian_plan,
) -> nanprop_status {
    guarded("nanprop_jacobian_plan_create", || {
        reset_out(out)?;
        let p = pattern_ref(p)?;
        let o = jacobian_from(options, p.cols())?;
        let plan = JacobianPlan::new(p, &o)?;
        give(out, nanprop_jacobian_plan { inner: plan });
        Ok(())
    })
}

fn plan_mut<'a>(plan: *mut nanprop_jacobian_plan) -> Result<&'a mut JacobianPlan> {
    not_null(plan, "plan")?;
    // SAFETY: non-NULL, and by contract a live plan from this library used by one thread.
    Ok(unsafe { &mut (*plan).inner })
}

fn plan_ref<'a>(plan: *const nanprop_jacobian_plan) -> Result<&'a JacobianPlan> {
    not_null(plan, "plan")?;
    // SAFETY: non-NULL, and by contract a live plan from this library.
    Ok(unsafe { &(*plan).inner })
}

/// Number of colors of the plan's coloring (evaluations per forward Jacobian, less one when
/// f(x) is supplied); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_num_colors(
    plan: *const nanprop_jacobian_plan,
) -> usize {
    count(
        "nanprop_jacobian_plan_num_colors",
        plan_ref(plan).map(|p| p.coloring().num_colors),
    )
}

/// Number of values `nanprop_jacobian_plan_evaluate` writes: nnz, or m * n for the dense
/// layout; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_values_len(
    plan: *const nanprop_jacobian_plan,
) -> usize {
    count(
        "nanprop_jacobian_plan_values_len",
        plan_ref(plan).map(|p| p.values_len()),
    )
}

/// Copies the plan's column colors (n entries, 0-based) into `colors`.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL plan or array.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_colors(
    plan: *const nanprop_jacobian_plan,
    colors: *mut usize,
) -> nanprop_status {
    guarded("nanprop_jacobian_plan_colors", || {
        let plan = plan_ref(plan)?;
        not_null(colors, "colors")?;
        let c = &plan.coloring().colors;
        // SAFETY: non-NULL; by contract n entries.
        let out = unsafe { std::slice::from_raw_parts_mut(colors, c.len()) };
        for (d, &s) in out.iter_mut().zip(c) {
            *d = s as usize;
        }
        Ok(())
    })
}

/// Computes the Jacobian of f at `x` (n values) into `values` (`nanprop_jacobian_plan_values_len`
/// of them, in the plan's layout). `fx`, if not NULL, is f(x) (m values): a forward Jacobian
/// then costs one evaluation less. `*evaluations` (if not NULL) receives the calls of f made.
/// Allocates nothing.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL plan, f, x or values; x not finite; a step too
/// small to change x_j), NANPROP_ERR_BASELINE_NOT_FINITE (a row with entries is NaN/Inf at x),
/// NANPROP_ERR_BLACKBOX (f failed, broke its contract, or turned a row NaN/Inf: the message
/// names the column group).
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_evaluate(
    plan: *mut nanprop_jacobian_plan,
    f: nanprop_blackbox,
    user_data: *mut c_void,
    x: *const f64,
    fx: *const f64,
    values: *mut f64,
    evaluations: *mut usize,
) -> nanprop_status {
    guarded("nanprop_jacobian_plan_evaluate", || {
        let plan = plan_mut(plan)?;
        let f = f.ok_or_else(|| Error::invalid("f is NULL"))?;
        not_null(x, "x")?;
        not_null(values, "values")?;
        let (n, m) = (plan.coloring().colors.len(), plan.rows());
        // SAFETY: non-NULL; by contract n, m and values_len entries.
        let x = unsafe { std::slice::from_raw_parts(x, n) };
        let fx = (!fx.is_null()).then(|| unsafe { std::slice::from_raw_parts(fx, m) });
        let values = unsafe { std::slice::from_raw_parts_mut(values, plan.values_len()) };
        let mut bb = CBlackBox { f, user_data };
        let made = plan.evaluate(&mut bb, x, fx, values)?;
        write_optional(evaluations, made);
        Ok(())
    })
}

/// Frees a plan. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_free(plan: *mut nanprop_jacobian_plan) {
    // SAFETY: by this function's contract.
    unsafe { free_boxed(plan) }
}

/// Computes one sparse Jacobian of f: R^n -> R^m at x0 with pattern `p` (m x n) by compressed
/// finite differences: colors the columns, then makes colors + 1 (forward) or 2 colors (central)
/// evaluations. `values` receives nnz values in the pattern's CSR order (or as
/// `options->layout` says: m * n for the dense layout); `*evaluations` (if not NULL) the calls
/// of f. For many points, make a plan with `nanprop_jacobian_plan_create` instead.
///
/// Errors: as `nanprop_jacobian_plan_create` and `nanprop_jacobian_plan_evaluate`, and
/// NANPROP_ERR_INVALID_ARGUMENT when n or m differ from the pattern's.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian(
    f: nanprop_blackbox,
    user_data: *mut c_void,
    n: usize,
    m: usize,
    x0: *const f64,
    p: *const nanprop_pattern,
    options: *const nanprop_jacobian_options,
    values: *mut f64,
    evaluations: *mut usize,
) -> nanprop_status {
    guarded("nanprop_jacobian", || {
        let pat = pattern_ref(p)?;
        if pat.rows() != m || pat.cols() != n {
            return Err(Error::invalid(format!(
                "n = {n}, m = {m} do not match the pattern ({} x {})",
                pat.rows(),
                pat.cols()
            )));
        }
        let f = f.ok_or_else(|| Error::invalid("f is NULL"))?;
        not_null(x0, "x0")?;
        not_null(values, "values")?;
        let mut plan = JacobianPlan::new(pat, &jacobian_from(options, n)?)?;
        // SAFETY: non-NULL; by contract n and values_len entries.
        let x = unsafe { std::slice::from_raw_parts(x0, n) };
        let values = unsafe { std::slice::from_raw_parts_mut(values, plan.values_len()) };
        let mut bb = CBlackBox { f, user_data };
        let made = plan.evaluate(&mut bb, x, None, values)?;
        write_optional(evaluations, made);
        Ok(())
    })
}

fn loaded_ref<'a>(b: *const nanprop_loaded) -> Result<&'a nanprop_loaded> {
    not_null(b, "loaded black box")?;
    // SAFETY: non-NULL, and by contract a live handle from nanprop_loaded_open.
    Ok(unsafe { &*b })
}

/// Opens the shared library `path`, finds the function `symbol` and prepares to call it with
/// `convention` (a NANPROP_CONVENTION_* value) as f: R^n -> R^m. Fortran names are tried as
/// given, lowercase with `_`, lowercase with `__` (names holding `_`), and uppercase.
/// `integer_bytes` is the size of the Fortran default INTEGER: 4 (also for 0) or 8
/// (-fdefault-integer-8). `*out` is NULL on failure.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT: NULL path, symbol or out; n or m zero (sizes
/// missing); an unknown convention; the file not found; not a shared library (the loader's
/// message is included); the symbol not found (every name tried is listed, with the path).
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
        not_null(path, "path")?;
        not_null(symbol, "symbol")?;
        // SAFETY: non-NULL, NUL-terminated by contract.
        let (path, symbol) = unsafe { (CStr::from_ptr(path), CStr::from_ptr(symbol)) };
        let path = path_from_bytes(path.to_bytes())?;
        let symbol = symbol
            .to_str()
            .map_err(|_| Error::invalid("symbol is not UTF-8"))?;
        let convention = match convention {
            NANPROP_CONVENTION_C => Convention::C,
            NANPROP_CONVENTION_BLACKBOX => Convention::Blackbox,
            NANPROP_CONVENTION_FORTRAN => Convention::Fortran,
            NANPROP_CONVENTION_MINPACK_HYBRD => Convention::MinpackHybrd,
            NANPROP_CONVENTION_MINPACK_LMDIF => Convention::MinpackLmdif,
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
        let loaded = LoadedBlackBox::open(&path, symbol, convention, n, m, int_kind)?;
        // A symbol name from dlsym has no interior NUL.
        let symbol = CString::new(loaded.symbol()).unwrap_or_default();
        give(
            out,
            nanprop_loaded {
                inner: RefCell::new(loaded),
                symbol,
            },
        );
        Ok(())
    })
}

/// The symbol name that resolved (e.g. "beam_"), valid while the handle lives; "" for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_loaded_symbol(b: *const nanprop_loaded) -> *const c_char {
    match loaded_ref(b) {
        Ok(b) => b.symbol.as_ptr(),
        Err(_) => c"".as_ptr(),
    }
}

/// Calls a loaded black box; `user_data` is its nanprop_loaded handle.
unsafe extern "C" fn loaded_trampoline(
    user_data: *mut c_void,
    n: usize,
    x: *const f64,
    m: usize,
    y: *mut f64,
) -> c_int {
    let b = user_data as *const nanprop_loaded;
    let Ok(b) = loaded_ref(b) else { return -1 };
    let Ok(mut f) = b.inner.try_borrow_mut() else {
        return -2;
    }; // re-entered: refuse
    if n != f.n() || m != f.m() || x.is_null() || y.is_null() {
        return -3;
    }
    // SAFETY: sizes checked against the handle; buffers from nanprop's driver.
    let (x, y) = unsafe {
        (
            std::slice::from_raw_parts(x, n),
            std::slice::from_raw_parts_mut(y, m),
        )
    };
    match catch_unwind(AssertUnwindSafe(|| f.eval(x, y))) {
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
        loaded_ref(b)?;
        not_null(f, "f")?;
        not_null(user_data, "user_data")?;
        // SAFETY: checked non-NULL.
        unsafe {
            *f = Some(loaded_trampoline);
            *user_data = b as *mut c_void;
        }
        Ok(())
    })
}

/// Traces the loaded black box at x0 (n values): `nanprop_trace` with the handle's function and
/// sizes.
///
/// Errors: as `nanprop_trace`, and NANPROP_ERR_INVALID_ARGUMENT for a NULL handle.
#[no_mangle]
pub unsafe extern "C" fn nanprop_loaded_trace(
    b: *const nanprop_loaded,
    x0: *const f64,
    options: *const nanprop_options,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    let (n, m) = match loaded_ref(b) {
        Ok(h) => {
            let f = h.inner.borrow();
            (f.n(), f.m())
        }
        Err(e) => return guarded("nanprop_loaded_trace", || Err(e)),
    };
    // SAFETY: forwarded; the trampoline's user_data is the live handle.
    unsafe {
        nanprop_trace(
            Some(loaded_trampoline),
            b as *mut c_void,
            n,
            m,
            x0,
            options,
            out,
        )
    }
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
    let (n, m) = match loaded_ref(b) {
        Ok(h) => {
            let f = h.inner.borrow();
            (f.n(), f.m())
        }
        Err(e) => return guarded("nanprop_loaded_jacobian", || Err(e)),
    };
    // SAFETY: forwarded; the trampoline's user_data is the live handle.
    unsafe {
        nanprop_jacobian(
            Some(loaded_trampoline),
            b as *mut c_void,
            n,
            m,
            x0,
            p,
            options,
            values,
            evaluations,
        )
    }
}

/// Closes a loaded black box and unloads its library. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_loaded_close(b: *mut nanprop_loaded) {
    // SAFETY: by this function's contract.
    unsafe { free_boxed(b) }
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
    guarded("nanprop_trace_points", || {
        reset_out(out)?;
        let f = f.ok_or_else(|| Error::invalid("f is NULL"))?;
        not_null(points, "points")?;
        crate::pattern::check_dims(m, n)?;
        if num_points == 0 {
            return Err(Error::invalid("num_points is 0"));
        }
        let total = n
            .checked_mul(num_points)
            .ok_or_else(|| Error::invalid("num_points * n overflows"))?;
        let trace_options = read_options(options)?;
        // SAFETY: non-NULL; by contract num_points * n values.
        let all = unsafe { std::slice::from_raw_parts(points, total) };
        let mut list: Vec<Vec<f64>> = all.chunks(n).map(|c| c.to_vec()).collect();
        list.extend(sampled(options, &list[0])?);
        let pattern = union_of(
            &list,
            &mut driver_for(options, f, user_data, m, &trace_options)?,
        )?;
        give(out, nanprop_pattern { inner: pattern });
        Ok(())
    })
}

/// Creates a tracer for f: R^n -> R^m whose inputs `flags` (num_flags 0-based indices) are
/// discrete switches. Each `nanprop_flag_tracer_observe` at a point with flag values not seen
/// before traces there; the pattern is the union. `*out` is NULL on failure.
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
        let f = f.ok_or_else(|| Error::invalid("f is NULL"))?;
        if num_flags > 0 {
            not_null(flags, "flags")?;
        }
        let flags: &[usize] = if num_flags == 0 {
            &[]
        } else {
            // SAFETY: non-NULL; by contract num_flags values.
            unsafe { std::slice::from_raw_parts(flags, num_flags) }
        };
        let inner = FlagTracer::new(n, m, flags, &read_options(options)?)?;
        give(
            out,
            nanprop_flag_tracer {
                inner,
                f,
                user_data,
                n,
            },
        );
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
        not_null(t, "tracer")?;
        not_null(x, "x")?;
        // SAFETY: non-NULL, a live tracer from nanprop_flag_tracer_create.
        let t = unsafe { &mut *t };
        // SAFETY: by contract n values.
        let x = unsafe { std::slice::from_raw_parts(x, t.n) };
        let mut bb = CBlackBox {
            f: t.f,
            user_data: t.user_data,
        };
        let did = t.inner.observe(&mut bb, x)?;
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
        not_null(t, "tracer")?;
        // SAFETY: non-NULL, a live tracer.
        let p = unsafe { &*t }
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
    let traces = not_null(t, "flag tracer").map(|()| {
        // SAFETY: non-NULL, by contract a live tracer.
        unsafe { &*t }.inner.traces()
    });
    count("nanprop_flag_tracer_traces", traces)
}

/// Frees a flag tracer. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_flag_tracer_free(t: *mut nanprop_flag_tracer) {
    // SAFETY: by this function's contract.
    unsafe { free_boxed(t) }
}

fn session_mut<'a>(s: *mut nanprop_session) -> Result<&'a mut TraceSession> {
    not_null(s, "session")?;
    // SAFETY: non-NULL, and by contract a live session used by one thread.
    unsafe { &mut *s }
        .inner
        .as_mut()
        .ok_or_else(|| Error::invalid("the session is finished"))
}

/// Starts a trace of f: R^n -> R^m at x0 as a batch session: the caller evaluates f. Loop:
/// `nanprop_session_ask` for the outstanding evaluation requests, `nanprop_session_input` for
/// the input of each, evaluate f there (anywhere, in any order, concurrently), and
/// `nanprop_session_tell` its outputs; when ask returns none, `nanprop_session_finish`.
/// Options as for `nanprop_trace` (sampling and isolation do not apply: the caller evaluates).
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
        let options = read_options(options)?;
        // SAFETY: non-NULL; by contract n values.
        let x0 = unsafe { std::slice::from_raw_parts(x0, n) };
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
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL or finished session or count, or NULL ids
/// with capacity > 0; NANPROP_ERR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_ask(
    s: *mut nanprop_session,
    ids: *mut usize,
    capacity: usize,
    count: *mut usize,
) -> nanprop_status {
    guarded("nanprop_session_ask", || {
        let session = session_mut(s)?;
        not_null(count, "count")?;
        if capacity > 0 {
            not_null(ids, "ids")?;
        }
        let asked = session.ask()?;
        // SAFETY: non-NULL; by contract capacity entries.
        unsafe {
            *count = asked.len();
            for (k, &id) in asked.iter().take(capacity).enumerate() {
                *ids.add(k) = id;
            }
        }
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
        let session = session_mut(s)?;
        not_null(x, "x")?;
        if !session.outstanding(id) {
            return Err(Error::invalid(format!(
                "request {id} is not outstanding in this step"
            )));
        }
        // SAFETY: non-NULL; by contract n values.
        let x = unsafe { std::slice::from_raw_parts_mut(x, session.n()) };
        session.write_input(id, x);
        Ok(())
    })
}

/// The outputs y (m values) of request `id`, in any order.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL arguments, a finished session, an id not
/// outstanding or told twice), NANPROP_ERR_BASELINE_NOT_FINITE (the baseline's outputs, with
/// NANPROP_NONFINITE_ERROR).
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_tell(
    s: *mut nanprop_session,
    id: usize,
    y: *const f64,
) -> nanprop_status {
    guarded("nanprop_session_tell", || {
        let session = session_mut(s)?;
        not_null(y, "y")?;
        // SAFETY: non-NULL; by contract m values.
        let y = unsafe { std::slice::from_raw_parts(y, session.m()) };
        session.tell(id, y)
    })
}

/// Evaluations told so far, the baseline included; 0 for NULL or a finished session.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_evaluations(s: *const nanprop_session) -> usize {
    let told = not_null(s, "session").map(|()| {
        // SAFETY: non-NULL, by contract a live session.
        unsafe { &*s }.inner.as_ref().map_or(0, |t| t.evaluations())
    });
    count("nanprop_session_evaluations", told)
}

/// Ends the session and gives its pattern (free it with `nanprop_pattern_free`); whatever is
/// unresolved (requests not told) is kept as possible dependencies. The session can then only
/// be freed.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL arguments, finished already, the baseline not
/// told), NANPROP_ERR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_finish(
    s: *mut nanprop_session,
    out: *mut *mut nanprop_pattern,
) -> nanprop_status {
    guarded("nanprop_session_finish", || {
        reset_out(out)?;
        not_null(s, "session")?;
        // SAFETY: non-NULL, a live session.
        let session = unsafe { &mut *s }
            .inner
            .take()
            .ok_or_else(|| Error::invalid("the session is finished"))?;
        let pattern = session.finish()?;
        give(out, nanprop_pattern { inner: pattern });
        Ok(())
    })
}

/// Frees a session. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_session_free(s: *mut nanprop_session) {
    // SAFETY: by this function's contract.
    unsafe { free_boxed(s) }
}

/// Evaluations one Jacobian takes as a batch (`with_fx` nonzero: f(x) supplied); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_num_points(
    plan: *const nanprop_jacobian_plan,
    with_fx: c_int,
) -> usize {
    count(
        "nanprop_jacobian_plan_num_points",
        plan_ref(plan).map(|p| p.num_points(with_fx != 0)),
    )
}

/// Writes point k (0-based, below `nanprop_jacobian_plan_num_points`) of the Jacobian batch at
/// x into xk (n values). Forward without f(x): point 0 is x, point 1 + g moves color group g;
/// with f(x): point g moves group g. Central: points 2g and 2g + 1 move group g up and down.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL arguments, k out of range, x not finite, a step
/// too small to change x_j).
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_point(
    plan: *mut nanprop_jacobian_plan,
    x: *const f64,
    with_fx: c_int,
    k: usize,
    xk: *mut f64,
) -> nanprop_status {
    guarded("nanprop_jacobian_plan_point", || {
        let plan = plan_mut(plan)?;
        not_null(x, "x")?;
        not_null(xk, "xk")?;
        let n = plan.coloring().colors.len();
        // SAFETY: non-NULL; by contract n values each.
        let (x, xk) = unsafe {
            (
                std::slice::from_raw_parts(x, n),
                std::slice::from_raw_parts_mut(xk, n),
            )
        };
        plan.point(x, with_fx != 0, k, xk)
    })
}

/// The Jacobian at x from the outputs of all the batch's points (`ys`: num_points x m values,
/// point k at ys + k m) into `values` (the plan's layout). `fx` is f(x) if the batch was made
/// with it, else NULL.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL arguments), NANPROP_ERR_BASELINE_NOT_FINITE,
/// NANPROP_ERR_BLACKBOX (a row NaN/Inf at a point; the message names the color group).
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_assemble(
    plan: *mut nanprop_jacobian_plan,
    x: *const f64,
    fx: *const f64,
    ys: *const f64,
    values: *mut f64,
) -> nanprop_status {
    guarded("nanprop_jacobian_plan_assemble", || {
        let plan = plan_mut(plan)?;
        not_null(x, "x")?;
        not_null(ys, "ys")?;
        not_null(values, "values")?;
        let (n, m) = (plan.coloring().colors.len(), plan.rows());
        let points = plan.num_points(!fx.is_null());
        // SAFETY: non-NULL; by contract n, m, points x m and values_len values.
        let (x, fx, ys, values) = unsafe {
            (
                std::slice::from_raw_parts(x, n),
                (!fx.is_null()).then(|| std::slice::from_raw_parts(fx, m)),
                std::slice::from_raw_parts(ys, points * m),
                std::slice::from_raw_parts_mut(values, plan.values_len()),
            )
        };
        plan.assemble(x, fx, ys, values)
    })
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
