//! Sparse Hessians from a gradient routine: star coloring, one Hessian, reusable plans.

use super::abi::{count, give, guarded, handle, handle_mut, not_null, reset_out};
use super::abi::{slice, slice_mut, write_optional};
use super::blackbox::{c_black_box, nanprop_blackbox};
use super::jacobian::{jacobian_from, nanprop_jacobian_options};
use super::pattern::{nanprop_pattern, pattern_ref};
use super::status::nanprop_status;
use crate::coloring::{self, ColoringOptions};
use crate::error::{Error, Result};
use crate::hessian::HessianPlan;
use std::ffi::c_void;

/// A reusable Hessian plan: a symmetric pattern, its star coloring and the recovery map.
/// Opaque; free with `nanprop_hessian_plan_free`. Not for use by two threads at once.
pub struct nanprop_hessian_plan {
    inner: HessianPlan,
}

/// Star-colors the columns of the square pattern `p` (symmetrized, A + A^T) for a Hessian:
/// adjacent columns differ and every path on four vertices uses three colors, so each entry
/// can be read directly from one of its two columns' compressed differences. Never more colors
/// than `nanprop_coloring` on the same pattern with its diagonal, often far fewer (a grid with
/// a global variable: about 6 against n). `colors` receives n colors (0-based), `*num_colors`
/// their count. The best of the degree orders is kept.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL arguments; a pattern that is not square),
/// NANPROP_ERR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nanprop_hessian_coloring(
    p: *const nanprop_pattern,
    colors: *mut usize,
    num_colors: *mut usize,
) -> nanprop_status {
    guarded("nanprop_hessian_coloring", || {
        // SAFETY (all): arguments as documented.
        let p = unsafe { pattern_ref(p)? };
        not_null(colors, "colors")?;
        not_null(num_colors, "num_colors")?;
        let c = coloring::star(p, &ColoringOptions::default())?;
        unsafe { super::abi::copy_indices(colors, &c.colors, "colors")? };
        write_optional(num_colors, c.num_colors);
        Ok(())
    })
}

/// Computes one sparse Hessian at x0 from the gradient routine `gradient` (a black box from
/// R^n to R^n) with pattern `p` (n x n; symmetrized for coloring): star coloring, then
/// colors + 1 (forward) or 2 colors (central) gradient evaluations. `values` receives one value
/// per entry of `p` in its CSR order (a full symmetric pattern gets both triangles, exactly
/// equal; a lower-triangular one the lower triangle), or n * n values for the dense layout
/// (the full matrix). `options` are the Jacobian's (steps, difference, layout; the coloring
/// order; NULL: defaults). `*evaluations` (if not NULL) receives the gradient calls.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL arguments; n differs from the pattern's; a
/// pattern that is not square; bad options), NANPROP_ERR_BASELINE_NOT_FINITE,
/// NANPROP_ERR_BLACKBOX, NANPROP_ERR_OUT_OF_MEMORY, as `nanprop_jacobian`.
#[no_mangle]
pub unsafe extern "C" fn nanprop_hessian(
    gradient: nanprop_blackbox,
    user_data: *mut c_void,
    n: usize,
    x0: *const f64,
    p: *const nanprop_pattern,
    options: *const nanprop_jacobian_options,
    values: *mut f64,
    evaluations: *mut usize,
) -> nanprop_status {
    guarded("nanprop_hessian", || {
        // SAFETY (all): arguments as documented.
        let pat = unsafe { pattern_ref(p)? };
        let mut g = c_black_box(gradient, user_data)?;
        if pat.rows() != n || pat.cols() != n {
            return Err(Error::invalid(format!(
                "n = {n} does not match the pattern ({} x {})",
                pat.rows(),
                pat.cols()
            )));
        }
        not_null(x0, "x0")?;
        not_null(values, "values")?;
        let mut plan = HessianPlan::new(pat, &unsafe { jacobian_from(options, n)? })?;
        let x = unsafe { slice(x0, n, "x0")? };
        let values = unsafe { slice_mut(values, plan.values_len(), "values")? };
        let made = plan.evaluate(&mut g, x, None, values)?;
        write_optional(evaluations, made);
        Ok(())
    })
}

/// Makes a reusable Hessian plan for pattern `p` (n x n): the star coloring and the recovery
/// map are computed once here; `nanprop_hessian_plan_evaluate` then computes Hessians at any
/// number of points without allocating. `*out` is NULL on failure.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL pattern or out; a pattern that is not square;
/// bad options), NANPROP_ERR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn nanprop_hessian_plan_create(
    p: *const nanprop_pattern,
    options: *const nanprop_jacobian_options,
    out: *mut *mut nanprop_hessian_plan,
) -> nanprop_status {
    guarded("nanprop_hessian_plan_create", || {
        reset_out(out)?;
        // SAFETY (both): arguments as documented.
        let p = unsafe { pattern_ref(p)? };
        let o = unsafe { jacobian_from(options, p.cols())? };
        give(
            out,
            nanprop_hessian_plan {
                inner: HessianPlan::new(p, &o)?,
            },
        );
        Ok(())
    })
}

unsafe fn plan_ref<'a>(plan: *const nanprop_hessian_plan) -> Result<&'a HessianPlan> {
    // SAFETY: by the callers' contract, NULL or a live plan.
    Ok(&unsafe { handle(plan, "plan")? }.inner)
}

/// Number of colors of the plan's star coloring (gradient evaluations per forward Hessian,
/// less one when g(x) is supplied); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_hessian_plan_num_colors(
    plan: *const nanprop_hessian_plan,
) -> usize {
    // SAFETY: as documented.
    count("nanprop_hessian_plan_num_colors", || {
        Ok(unsafe { plan_ref(plan)? }.coloring().num_colors)
    })
}

/// Number of values `nanprop_hessian_plan_evaluate` writes: the pattern's nnz, or n * n for the
/// dense layout; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_hessian_plan_values_len(
    plan: *const nanprop_hessian_plan,
) -> usize {
    // SAFETY: as documented.
    count("nanprop_hessian_plan_values_len", || {
        Ok(unsafe { plan_ref(plan)? }.values_len())
    })
}

/// Copies the plan's star colors (n entries, 0-based) into `colors`.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL plan or array.
#[no_mangle]
pub unsafe extern "C" fn nanprop_hessian_plan_colors(
    plan: *const nanprop_hessian_plan,
    colors: *mut usize,
) -> nanprop_status {
    guarded("nanprop_hessian_plan_colors", || {
        // SAFETY (both): arguments as documented.
        let plan = unsafe { plan_ref(plan)? };
        not_null(colors, "colors")?;
        unsafe { super::abi::copy_indices(colors, &plan.coloring().colors, "colors") }
    })
}

/// Computes the Hessian at `x` (n values) from the gradient routine into `values`
/// (`nanprop_hessian_plan_values_len` of them). `gx`, if not NULL, is the gradient at x (n
/// values): a forward Hessian then costs one evaluation less. `*evaluations` (if not NULL)
/// receives the gradient calls made. Allocates nothing.
///
/// Errors: as `nanprop_jacobian_plan_evaluate`.
#[no_mangle]
pub unsafe extern "C" fn nanprop_hessian_plan_evaluate(
    plan: *mut nanprop_hessian_plan,
    gradient: nanprop_blackbox,
    user_data: *mut c_void,
    x: *const f64,
    gx: *const f64,
    values: *mut f64,
    evaluations: *mut usize,
) -> nanprop_status {
    guarded("nanprop_hessian_plan_evaluate", || {
        // SAFETY (all): arguments as documented.
        let plan = &mut unsafe { handle_mut(plan, "plan")? }.inner;
        let mut g = c_black_box(gradient, user_data)?;
        not_null(x, "x")?;
        not_null(values, "values")?;
        let n = plan.coloring().colors.len();
        let x = unsafe { slice(x, n, "x")? };
        let gx = match gx.is_null() {
            true => None,
            false => Some(unsafe { slice(gx, n, "gx")? }),
        };
        let values = unsafe { slice_mut(values, plan.values_len(), "values")? };
        let made = plan.evaluate(&mut g, x, gx, values)?;
        write_optional(evaluations, made);
        Ok(())
    })
}

/// Frees a Hessian plan. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_hessian_plan_free(plan: *mut nanprop_hessian_plan) {
    // SAFETY: by this function's contract.
    unsafe { super::abi::free_boxed(plan) }
}
