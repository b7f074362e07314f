//! `nanprop_options`: the trace options, converted field by field into
//! [`crate::TraceOptions`] (which checks them).

use super::abi::{self, read_versioned, Versioned};
use crate::error::{Error, Result};
use crate::trace::options::seconds;
use crate::trace::{Noise, NonFiniteBaseline, Strategy, TraceOptions};
use std::ffi::c_char;

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

/// Noisy outputs (they change when f is evaluated again at the same point) and no
/// `verify_tolerance`: estimate the noise from the repeated evaluations (ECnoise's difference
/// table), set the tolerance from it and go on; `nanprop_pattern_noise` and
/// `nanprop_pattern_tolerance` say so (default).
pub const NANPROP_NOISE_TOLERATE: u32 = 0;
/// Noisy outputs and no `verify_tolerance`: fail with NANPROP_ERR_BLACKBOX naming them.
pub const NANPROP_NOISE_ERROR: u32 = 1;

/// The version of `nanprop_options` this header describes (2 added `function_id`, 3 `noise`;
/// older structs are still accepted and read with the defaults for the fields they lack).
pub const NANPROP_OPTIONS_VERSION: u32 = 3;

/// Options of `nanprop_trace` and every other trace. Always start from
/// `nanprop_options_init`, which sets `struct_size` and `version` for the header you compiled
/// against: a library built from a newer header reads the fields your struct has and keeps the
/// defaults for the rest; an older library refuses a newer struct with
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
    /// Most evaluations of f at each point, the baseline included. 0 (default): no budget; the
    /// payload strategy asks at most n NaN probes (rows recognised dense are kept as
    /// NANPROP_ENTRY_ASSUMED) and the guard adds its check, but for rows of n / 8 entries or
    /// more where its coloring would compress nothing and n >= 64 (their zeros:
    /// NANPROP_ENTRY_ASSUMED). SIZE_MAX: no limit at all, every zero checked (exact). Another
    /// value: a budget on everything, guard included (n + 1: the strict one-hot bound); what
    /// it leaves unresolved or unchecked is kept (`nanprop_pattern_unresolved`).
    pub max_evaluations: usize,
    /// One of the NANPROP_NONFINITE_* values.
    pub nonfinite_baseline: u32,
    /// 1 (default): verify every probe by a finite perturbation, so that absorbed NaNs (fmin,
    /// clamps, isnan guards, branches) do not hide dependencies; doubles the evaluations.
    /// 0: NaN tracing alone.
    pub verify: u32,
    /// Relative verification step: h_j = r_j * verify_step * max(|x0_j|, 1), sign of x0_j, with
    /// r_j drawn in [0.5, 1.5) for every input of every verification from `seed` (so that no
    /// combination of inputs cancels); 0 means the default 1e-3.
    pub verify_step: f64,
    /// An output counts as changed (by a NaN probe or by the verification step) only when it
    /// moves by more than verify_tolerance * max(|y|, 1) or stops being finite; 0 (default):
    /// any change of its bits, and if the outputs jitter, what `noise` says.
    pub verify_tolerance: f64,
    /// Also trace at this many points sampled around x0 and return the union (default 0):
    /// x_j = x0_j + sample_scale * max(|x0_j|, 1) * z, z standard normal, so that branches taken
    /// near x0 are covered.
    pub sample_points: usize,
    /// Relative scale of the sampled points (default 0.1).
    pub sample_scale: f64,
    /// Seed of the sampled points and of the verification steps (default 0).
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
    /// completes, and a trace run again with the same journal (same n, m, options, function and
    /// points) evaluates only what the journal lacks. A journal of another trace is refused.
    pub journal: *const c_char,
    /// NULL (default), or a name for f that a journal must match (version 2): nanprop cannot
    /// tell two callbacks apart, so a journal written for another function with the same n, m
    /// and x0 would be replayed. Loaded libraries are identified by themselves.
    pub function_id: *const c_char,
    /// One of the NANPROP_NOISE_* values (version 3): what to do when f's outputs jitter and
    /// `verify_tolerance` is 0.
    pub noise: u32,
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
        function_id: std::ptr::null(),
        noise: NANPROP_NOISE_TOLERATE,
    }
}

impl Versioned for nanprop_options {
    const NAME: &'static str = "nanprop_options";
    fn defaults() -> Self {
        default_options()
    }
    fn size_of_version(version: u32) -> Option<usize> {
        match version {
            1 => Some(std::mem::offset_of!(nanprop_options, function_id)),
            2 => Some(std::mem::offset_of!(nanprop_options, noise)),
            3 => Some(std::mem::size_of::<nanprop_options>()),
            _ => None,
        }
    }
}

fn flag(value: u32, name: &str) -> Result<bool> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(Error::invalid(format!(
            "options.{name} = {v} must be 0 or 1"
        ))),
    }
}

/// Converts a caller's trace options (NULL: the defaults); the Rust entry point they are
/// handed to checks them ([`TraceOptions::validate`]).
///
/// # Safety
/// `options` is NULL or a `nanprop_options` as its `struct_size` says, with `journal` and
/// `function_id` NULL or NUL-terminated.
pub(crate) unsafe fn read_options(options: *const nanprop_options) -> Result<TraceOptions> {
    // SAFETY: by this function's contract.
    let o = unsafe { read_versioned(options)? };
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
    let noise = match o.noise {
        NANPROP_NOISE_TOLERATE => Noise::Tolerate,
        NANPROP_NOISE_ERROR => Noise::Error,
        v => {
            return Err(Error::invalid(format!(
                "options.noise = {v} is not a NANPROP_NOISE_* value"
            )))
        }
    };
    let defaults = TraceOptions::default();
    Ok(TraceOptions {
        strategy,
        chunk_size: o.chunk_size,
        max_evaluations: o.max_evaluations,
        nonfinite_baseline,
        verify: flag(o.verify, "verify")?,
        verify_step: if o.verify_step == 0.0 {
            defaults.verify_step
        } else {
            o.verify_step
        },
        verify_tolerance: o.verify_tolerance,
        noise,
        sample_points: o.sample_points,
        sample_scale: o.sample_scale,
        seed: o.seed,
        threads: o.threads,
        processes: o.processes,
        isolate: flag(o.isolate, "isolate")?,
        timeout: seconds(o.timeout, "options.timeout")?,
        // SAFETY: NULL or NUL-terminated, by this function's contract.
        journal: unsafe { abi::path(o.journal) },
        // SAFETY: as above.
        function_id: unsafe { abi::text(o.function_id, "options.function_id")? },
        // Set from the black box by the entry points (nanprop_trace_f32: single).
        precision: defaults.precision,
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
