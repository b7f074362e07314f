//! Sparse Jacobians: `nanprop_jacobian`, reusable plans (evaluated here or as batches), and
//! their options.

use super::abi::{count, give, guarded, handle, handle_mut, not_null, read_versioned, reset_out};
use super::abi::{slice, slice_mut, write_optional, Versioned};
use super::blackbox::{c_black_box, c_black_box_f32, nanprop_blackbox, nanprop_blackbox_f32};
use super::coloring::{coloring_from, default_coloring_options, nanprop_coloring_options};
use super::pattern::{nanprop_pattern, pattern_ref};
use super::status::nanprop_status;
use crate::driver::BlackBox;
use crate::error::{Error, Result};
use crate::jacobian::{Difference, JacobianOptions, JacobianPlan, Layout, Step};
use std::ffi::{c_int, c_void};

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
    fn defaults() -> Self {
        default_jacobian_options()
    }
    fn size_of_version(version: u32) -> Option<usize> {
        (version == 1).then_some(std::mem::size_of::<Self>())
    }
}

/// Reads jacobian options for a pattern with `n` columns (per-column steps are copied).
///
/// # Safety
/// `options` is NULL or a `nanprop_jacobian_options` whose `steps` is NULL or holds n values.
pub(crate) unsafe fn jacobian_from(
    options: *const nanprop_jacobian_options,
    n: usize,
) -> Result<JacobianOptions> {
    // SAFETY: by this function's contract.
    let o = unsafe { read_versioned(options)? };
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
        let v = unsafe { slice(o.steps, n, "steps")? }.to_vec();
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

/// Fills `options` with the Jacobian defaults (forward differences, default steps, CSR layout,
/// automatic coloring) and sets its `struct_size` and `version`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_options_init(options: *mut nanprop_jacobian_options) {
    if !options.is_null() {
        // SAFETY: non-NULL, points to a caller's struct.
        unsafe { options.write_unaligned(default_jacobian_options()) };
    }
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
        // SAFETY: p as documented; f checked next.
        let pat = unsafe { pattern_ref(p)? };
        let mut f = c_black_box(f, user_data)?;
        // SAFETY: arguments as documented.
        unsafe { jacobian_of(&mut f, n, m, x0, pat, options, values, evaluations) }
    })
}

/// One sparse Jacobian of a single-precision black box at x0 (n floats) into `values`
/// (floats, as `nanprop_jacobian` lays them out), with steps sized for `float` (sqrt(eps_f32)
/// forward, cbrt(eps_f32) central, relative) and divided by the step `float` arithmetic really
/// takes. Relative errors are then near 3e-4 (forward) and 2e-5 (central) times the function's
/// curvature scale.
///
/// Errors: as `nanprop_jacobian`.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_f32(
    f: nanprop_blackbox_f32,
    user_data: *mut c_void,
    n: usize,
    m: usize,
    x0: *const f32,
    p: *const nanprop_pattern,
    options: *const nanprop_jacobian_options,
    values: *mut f32,
    evaluations: *mut usize,
) -> nanprop_status {
    guarded("nanprop_jacobian_f32", || {
        // SAFETY (all): arguments as documented.
        let pat = unsafe { pattern_ref(p)? };
        let f = c_black_box_f32(f, user_data)?;
        let mut plan = unsafe { plan_for(pat, n, m, x0, values, options)? };
        let x = unsafe { slice(x0, n, "x0")? };
        let values = unsafe { slice_mut(values, plan.values_len(), "values")? };
        let made = plan.evaluate_f32(f, x, None, values)?;
        write_optional(evaluations, made);
        Ok(())
    })
}

/// The plan of a one-off Jacobian (`nanprop_jacobian` and its f32 form): n and m checked
/// against the pattern, x0 and values not NULL.
///
/// # Safety
/// `options` as `nanprop_jacobian` documents.
unsafe fn plan_for<X, V>(
    pat: &crate::pattern::Pattern,
    n: usize,
    m: usize,
    x0: *const X,
    values: *mut V,
    options: *const nanprop_jacobian_options,
) -> Result<JacobianPlan> {
    if pat.rows() != m || pat.cols() != n {
        return Err(Error::invalid(format!(
            "n = {n}, m = {m} do not match the pattern ({} x {})",
            pat.rows(),
            pat.cols()
        )));
    }
    not_null(x0, "x0")?;
    not_null(values, "values")?;
    // SAFETY: by this function's contract.
    JacobianPlan::new(pat, &unsafe { jacobian_from(options, n)? })
}

/// One Jacobian of any black box (a C callback, a loaded library) at x0.
///
/// # Safety
/// Pointers as `nanprop_jacobian` documents.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn jacobian_of(
    f: &mut dyn BlackBox,
    n: usize,
    m: usize,
    x0: *const f64,
    pat: &crate::pattern::Pattern,
    options: *const nanprop_jacobian_options,
    values: *mut f64,
    evaluations: *mut usize,
) -> Result<()> {
    // SAFETY (all): arrays sized as documented.
    let mut plan = unsafe { plan_for(pat, n, m, x0, values, options)? };
    let x = unsafe { slice(x0, n, "x0")? };
    let values = unsafe { slice_mut(values, plan.values_len(), "values")? };
    let made = plan.evaluate(f, x, None, values)?;
    write_optional(evaluations, made);
    Ok(())
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
        // SAFETY (both): arguments as documented.
        let p = unsafe { pattern_ref(p)? };
        let o = unsafe { jacobian_from(options, p.cols())? };
        give(
            out,
            nanprop_jacobian_plan {
                inner: JacobianPlan::new(p, &o)?,
            },
        );
        Ok(())
    })
}

/// The plan behind a handle, for reading.
unsafe fn plan_ref<'a>(plan: *const nanprop_jacobian_plan) -> Result<&'a JacobianPlan> {
    // SAFETY: by the callers' contract, NULL or a live plan.
    Ok(&unsafe { handle(plan, "plan")? }.inner)
}

/// The plan behind a handle, for evaluating (one thread at a time, by contract).
unsafe fn plan_mut<'a>(plan: *mut nanprop_jacobian_plan) -> Result<&'a mut JacobianPlan> {
    // SAFETY: by the callers' contract, NULL or a live plan used by one thread.
    Ok(&mut unsafe { handle_mut(plan, "plan")? }.inner)
}

/// Number of colors of the plan's coloring (evaluations per forward Jacobian, less one when
/// f(x) is supplied); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_num_colors(
    plan: *const nanprop_jacobian_plan,
) -> usize {
    // SAFETY: as documented.
    count("nanprop_jacobian_plan_num_colors", || {
        Ok(unsafe { plan_ref(plan)? }.coloring().num_colors)
    })
}

/// Number of values `nanprop_jacobian_plan_evaluate` writes: nnz, or m * n for the dense
/// layout; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_values_len(
    plan: *const nanprop_jacobian_plan,
) -> usize {
    // SAFETY: as documented.
    count("nanprop_jacobian_plan_values_len", || {
        Ok(unsafe { plan_ref(plan)? }.values_len())
    })
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
        // SAFETY (both): arguments as documented.
        let plan = unsafe { plan_ref(plan)? };
        not_null(colors, "colors")?;
        unsafe { super::abi::copy_indices(colors, &plan.coloring().colors, "colors") }
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
        // SAFETY (all): arguments as documented.
        let plan = unsafe { plan_mut(plan)? };
        let mut f = c_black_box(f, user_data)?;
        let (x, fx, values) = unsafe { plan_arrays(plan, x, fx, values)? };
        let made = plan.evaluate(&mut f, x, fx, values)?;
        write_optional(evaluations, made);
        Ok(())
    })
}

/// `nanprop_jacobian_plan_evaluate` for a single-precision black box: x, fx and values are
/// floats; steps are sized and taken in `float` (see `nanprop_jacobian_f32`). Allocates the
/// conversions.
///
/// Errors: as `nanprop_jacobian_plan_evaluate`.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_evaluate_f32(
    plan: *mut nanprop_jacobian_plan,
    f: nanprop_blackbox_f32,
    user_data: *mut c_void,
    x: *const f32,
    fx: *const f32,
    values: *mut f32,
    evaluations: *mut usize,
) -> nanprop_status {
    guarded("nanprop_jacobian_plan_evaluate_f32", || {
        // SAFETY (all): arguments as documented.
        let plan = unsafe { plan_mut(plan)? };
        let f = c_black_box_f32(f, user_data)?;
        let (x, fx, values) = unsafe { plan_arrays(plan, x, fx, values)? };
        let made = plan.evaluate_f32(f, x, fx, values)?;
        write_optional(evaluations, made);
        Ok(())
    })
}

/// The arrays of a plan evaluation (either precision): x (n values, not NULL), fx (m values, or
/// None for NULL), values (the plan's length, not NULL).
///
/// # Safety
/// The pointers as `nanprop_jacobian_plan_evaluate` documents.
#[allow(clippy::type_complexity)]
unsafe fn plan_arrays<'a, T>(
    plan: &JacobianPlan,
    x: *const T,
    fx: *const T,
    values: *mut T,
) -> Result<(&'a [T], Option<&'a [T]>, &'a mut [T])> {
    not_null(x, "x")?;
    not_null(values, "values")?;
    let (n, m) = (plan.coloring().colors.len(), plan.rows());
    // SAFETY (all): sizes as documented.
    let x = unsafe { slice(x, n, "x")? };
    let fx = match fx.is_null() {
        true => None,
        false => Some(unsafe { slice(fx, m, "fx")? }),
    };
    let values = unsafe { slice_mut(values, plan.values_len(), "values")? };
    Ok((x, fx, values))
}

/// Frees a plan. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_free(plan: *mut nanprop_jacobian_plan) {
    // SAFETY: by this function's contract.
    unsafe { super::abi::free_boxed(plan) }
}

/// Evaluations one Jacobian takes as a batch (`with_fx` nonzero: f(x) supplied); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_jacobian_plan_num_points(
    plan: *const nanprop_jacobian_plan,
    with_fx: c_int,
) -> usize {
    // SAFETY: as documented.
    count("nanprop_jacobian_plan_num_points", || {
        Ok(unsafe { plan_ref(plan)? }.num_points(with_fx != 0))
    })
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
        // SAFETY (all): arguments as documented.
        let plan = unsafe { plan_mut(plan)? };
        not_null(x, "x")?;
        not_null(xk, "xk")?;
        let n = plan.coloring().colors.len();
        let (x, xk) = unsafe { (slice(x, n, "x")?, slice_mut(xk, n, "xk")?) };
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
        // SAFETY (all): arguments as documented.
        let plan = unsafe { plan_mut(plan)? };
        not_null(x, "x")?;
        not_null(ys, "ys")?;
        not_null(values, "values")?;
        let (n, m) = (plan.coloring().colors.len(), plan.rows());
        let points = plan.num_points(!fx.is_null());
        let ys_len = points
            .checked_mul(m)
            .ok_or_else(|| Error::invalid("num_points * m overflows"))?;
        let x = unsafe { slice(x, n, "x")? };
        let fx = match fx.is_null() {
            true => None,
            false => Some(unsafe { slice(fx, m, "fx")? }),
        };
        let ys = unsafe { slice(ys, ys_len, "ys")? };
        let values = unsafe { slice_mut(values, plan.values_len(), "values")? };
        plan.assemble(x, fx, ys, values)
    })
}
