//! Smoothed Jacobians: `nanprop_smoothed_jacobian` and its options.

use super::abi::{guarded, not_null, read_versioned, slice, slice_mut, write_optional, Versioned};
use super::blackbox::{c_black_box, nanprop_blackbox};
use super::jacobian::{NANPROP_STEP_ABSOLUTE, NANPROP_STEP_RELATIVE};
use super::pattern::{nanprop_pattern, pattern_ref};
use super::status::nanprop_status;
use crate::error::{Error, Result};
use crate::smoothing::{self, Estimator, SigmaKind, SmoothingOptions};
use std::ffi::c_void;

/// Estimator: per-row regression of the antithetic differences on the row's own perturbations
/// (default; exact zeros outside the pattern, the other inputs' effects removed).
pub const NANPROP_SMOOTHING_REGRESSION: u32 = 0;
/// Estimator: the full-dimensional antithetic average mean(D_i eps_j) / sigma_j, read on the
/// pattern's entries (for comparison).
pub const NANPROP_SMOOTHING_AVERAGE: u32 = 1;

/// The version of `nanprop_smoothing_options` this header describes.
pub const NANPROP_SMOOTHING_OPTIONS_VERSION: u32 = 1;

/// Options of `nanprop_smoothed_jacobian`. Start from `nanprop_smoothing_options_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nanprop_smoothing_options {
    /// sizeof(nanprop_smoothing_options) as the caller compiled it.
    pub struct_size: usize,
    /// NANPROP_SMOOTHING_OPTIONS_VERSION as the caller compiled it.
    pub version: u32,
    /// The smoothing scale (default 0.01): f is smoothed as E[f(x + sigma_j eps)].
    pub sigma: f64,
    /// NANPROP_STEP_RELATIVE (default: sigma_j = sigma * max(|x_j|, 1)) or
    /// NANPROP_STEP_ABSOLUTE (sigma_j = sigma).
    pub sigma_kind: u32,
    /// Samples N (default 100); each costs two evaluations (x + sigma eps and x - sigma eps).
    pub samples: usize,
    /// Seed of the perturbations (default 0).
    pub seed: u64,
    /// NANPROP_SMOOTHING_REGRESSION (default) or NANPROP_SMOOTHING_AVERAGE.
    pub estimator: u32,
}

fn default_smoothing_options() -> nanprop_smoothing_options {
    let d = SmoothingOptions::default();
    nanprop_smoothing_options {
        struct_size: std::mem::size_of::<nanprop_smoothing_options>(),
        version: NANPROP_SMOOTHING_OPTIONS_VERSION,
        sigma: d.sigma,
        sigma_kind: NANPROP_STEP_RELATIVE,
        samples: d.samples,
        seed: d.seed,
        estimator: NANPROP_SMOOTHING_REGRESSION,
    }
}

impl Versioned for nanprop_smoothing_options {
    const NAME: &'static str = "nanprop_smoothing_options";
    fn defaults() -> Self {
        default_smoothing_options()
    }
    fn size_of_version(version: u32) -> Option<usize> {
        (version == 1).then_some(std::mem::size_of::<Self>())
    }
}

fn smoothing_from(o: &nanprop_smoothing_options) -> Result<SmoothingOptions> {
    let sigma_kind = match o.sigma_kind {
        NANPROP_STEP_RELATIVE => SigmaKind::Relative,
        NANPROP_STEP_ABSOLUTE => SigmaKind::Absolute,
        v => {
            return Err(Error::invalid(format!(
                "sigma_kind = {v} is not NANPROP_STEP_RELATIVE or NANPROP_STEP_ABSOLUTE"
            )))
        }
    };
    let estimator = match o.estimator {
        NANPROP_SMOOTHING_REGRESSION => Estimator::Regression,
        NANPROP_SMOOTHING_AVERAGE => Estimator::Average,
        v => {
            return Err(Error::invalid(format!(
                "estimator = {v} is not a NANPROP_SMOOTHING_* value"
            )))
        }
    };
    Ok(SmoothingOptions {
        sigma: o.sigma,
        sigma_kind,
        samples: o.samples,
        seed: o.seed,
        estimator,
    })
}

/// Fills `options` with the smoothing defaults (sigma 0.01 relative, 100 samples, seed 0,
/// regression) and sets its `struct_size` and `version`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_smoothing_options_init(options: *mut nanprop_smoothing_options) {
    if !options.is_null() {
        // SAFETY: non-NULL, points to a caller's struct.
        unsafe { options.write_unaligned(default_smoothing_options()) };
    }
}

/// The Jacobian of the Gaussian-smoothed f, E[f(x0 + sigma eps)] with every input perturbed
/// together (eps standard normal), on pattern `p` (m x n): for black boxes that branch, where
/// finite differences give zeros or spikes. 2 * samples evaluations of f, each sample
/// antithetic; each row is a regression of the differences on that row's own perturbations, so
/// entries outside the pattern are exact zeros and inside it the other inputs' effects do not
/// add noise. `values` receives nnz values in CSR order; `std_errors` (nnz values, or NULL) a
/// heteroscedasticity-robust standard error per value; `*evaluations` (if not NULL) the calls
/// of f. The pattern must hold every input a row reaches within a few sigma of x0: trace with
/// points sampled on that scale (`sample_points`, `sample_scale` of `nanprop_options`).
/// Memory: O(n + m + sum of squared row lengths), plus samples values per row when
/// `std_errors` is not NULL.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL f, x0, p or values; n or m differ from the
/// pattern's; x0 not finite; sigma not finite and positive; fewer than 2 samples; a sigma too
/// small to change some x0_j; bad options), NANPROP_ERR_BLACKBOX (f failed, or a row with
/// entries was NaN/Inf at a sample: the message names it), NANPROP_ERR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nanprop_smoothed_jacobian(
    f: nanprop_blackbox,
    user_data: *mut c_void,
    n: usize,
    m: usize,
    x0: *const f64,
    p: *const nanprop_pattern,
    options: *const nanprop_smoothing_options,
    values: *mut f64,
    std_errors: *mut f64,
    evaluations: *mut usize,
) -> nanprop_status {
    guarded("nanprop_smoothed_jacobian", || {
        // SAFETY (all): arguments as documented.
        let pat = unsafe { pattern_ref(p)? };
        let mut f = c_black_box(f, user_data)?;
        if pat.rows() != m || pat.cols() != n {
            return Err(Error::invalid(format!(
                "n = {n}, m = {m} do not match the pattern ({} x {})",
                pat.rows(),
                pat.cols()
            )));
        }
        not_null(x0, "x0")?;
        not_null(values, "values")?;
        let o = smoothing_from(&unsafe { read_versioned(options)? })?;
        let x = unsafe { slice(x0, n, "x0")? };
        let v = unsafe { slice_mut(values, pat.nnz(), "values")? };
        let se = match std_errors.is_null() {
            true => None,
            false => Some(unsafe { slice_mut(std_errors, pat.nnz(), "std_errors")? }),
        };
        let made = smoothing::smoothed_jacobian(&mut f, x, pat, &o, v, se)?;
        write_optional(evaluations, made);
        Ok(())
    })
}
