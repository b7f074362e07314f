//! The pattern handle: counts, CSR and CSC copies, entry kinds, non-finite rows; patterns made
//! from the caller's CSR arrays.

use super::abi::{
    copy_indices, count, give, guarded, handle, not_null, reset_out, slice, slice_mut,
};
use super::status::nanprop_status;
use crate::error::{Error, Result};
use crate::pattern::{EntryKind, Pattern};

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
/// Entry kind: kept without a proof because resolving or checking it would have cost more
/// evaluations than one-hot tracing (n + 1): a row recognised dense, or a zero the n + 1 cap
/// left no evaluation to check (`nanprop_pattern_assumed` counts them).
pub const NANPROP_ENTRY_ASSUMED: u8 = 5;

/// A traced (or given) sparsity pattern. Opaque; free with `nanprop_pattern_free`.
pub struct nanprop_pattern {
    pub(crate) inner: Pattern,
}

/// The pattern behind a handle.
///
/// # Safety
/// `p` is NULL or a live pattern from this library.
pub(crate) unsafe fn pattern_ref<'a>(p: *const nanprop_pattern) -> Result<&'a Pattern> {
    // SAFETY: by this function's contract.
    Ok(&unsafe { handle(p, "pattern")? }.inner)
}

/// A count of a pattern, 0 with a message for NULL.
unsafe fn pattern_count(
    function: &str,
    p: *const nanprop_pattern,
    what: impl FnOnce(&Pattern) -> usize,
) -> usize {
    // SAFETY: by the accessors' contract.
    count(function, || Ok(what(unsafe { pattern_ref(p)? })))
}

/// Number of rows (outputs, m) of the pattern; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_rows(p: *const nanprop_pattern) -> usize {
    // SAFETY: as documented.
    unsafe { pattern_count("nanprop_pattern_rows", p, Pattern::rows) }
}

/// Number of columns (inputs, n) of the pattern; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_cols(p: *const nanprop_pattern) -> usize {
    // SAFETY: as documented.
    unsafe { pattern_count("nanprop_pattern_cols", p, Pattern::cols) }
}

/// Number of entries of the pattern; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_nnz(p: *const nanprop_pattern) -> usize {
    // SAFETY: as documented.
    unsafe { pattern_count("nanprop_pattern_nnz", p, Pattern::nnz) }
}

/// Calls of f made by the trace, the baseline included; 0 for NULL or a pattern not traced.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_evaluations(p: *const nanprop_pattern) -> usize {
    // SAFETY: as documented.
    unsafe { pattern_count("nanprop_pattern_evaluations", p, |p| p.report.evaluations) }
}

/// Calls of f spent on verification by finite perturbation (included in
/// `nanprop_pattern_evaluations`); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_verification_evaluations(
    p: *const nanprop_pattern,
) -> usize {
    // SAFETY: as documented.
    unsafe {
        pattern_count("nanprop_pattern_verification_evaluations", p, |p| {
            p.report.verification_evaluations
        })
    }
}

/// Entries found by verification only (kind NANPROP_ENTRY_PERTURBATION): dependencies NaN
/// tracing alone would have missed; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_found_by_perturbation(p: *const nanprop_pattern) -> usize {
    // SAFETY: as documented.
    unsafe {
        pattern_count("nanprop_pattern_found_by_perturbation", p, |p| {
            p.report.found_by_perturbation
        })
    }
}

/// Entries kept as possible dependencies because the evaluation budget ran out before they were
/// resolved (kind NANPROP_ENTRY_UNRESOLVED); 0 when the trace completed, or for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_unresolved(p: *const nanprop_pattern) -> usize {
    // SAFETY: as documented.
    unsafe { pattern_count("nanprop_pattern_unresolved", p, |p| p.report.unresolved) }
}

/// Entries kept as possible dependencies without a proof because resolving or checking them
/// would have cost more evaluations than one-hot tracing (kind NANPROP_ENTRY_ASSUMED: a row
/// recognised dense, or zeros the n + 1 cap left unchecked); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_assumed(p: *const nanprop_pattern) -> usize {
    // SAFETY: as documented.
    unsafe { pattern_count("nanprop_pattern_assumed", p, |p| p.report.assumed) }
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
        // SAFETY (all): arrays sized as documented.
        let p = unsafe { pattern_ref(p)? };
        not_null(row_ptr, "row_ptr")?;
        unsafe { slice_mut(col_idx, p.nnz(), "col_idx")? };
        unsafe { slice_mut(row_ptr, p.rows() + 1, "row_ptr")? }.copy_from_slice(p.row_ptr());
        unsafe { copy_indices(col_idx, p.col_idx(), "col_idx") }
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
        // SAFETY (both): arrays sized as documented.
        let p = unsafe { pattern_ref(p)? };
        let k = unsafe { slice_mut(kinds, p.nnz(), "kinds")? };
        for (d, &s) in k.iter_mut().zip(p.kinds()) {
            *d = match s {
                EntryKind::Traced => NANPROP_ENTRY_TRACED,
                EntryKind::Perturbation => NANPROP_ENTRY_PERTURBATION,
                EntryKind::Chunk => NANPROP_ENTRY_CHUNK,
                EntryKind::Unresolved => NANPROP_ENTRY_UNRESOLVED,
                EntryKind::NonFiniteRow => NANPROP_ENTRY_NONFINITE_ROW,
                EntryKind::Assumed => NANPROP_ENTRY_ASSUMED,
            };
        }
        Ok(())
    })
}

/// Number of outputs that were NaN or Inf at x0 (their rows are stored dense); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_num_nonfinite_rows(p: *const nanprop_pattern) -> usize {
    // SAFETY: as documented.
    unsafe {
        pattern_count("nanprop_pattern_num_nonfinite_rows", p, |p| {
            p.nonfinite_rows().len()
        })
    }
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
        // SAFETY (both): arrays sized as documented.
        let p = unsafe { pattern_ref(p)? };
        unsafe { copy_indices(rows, p.nonfinite_rows(), "rows") }
    })
}

/// Number of inputs whose NaN alone made f fail (NaN-intolerant: it returned nonzero, crashed,
/// exited or timed out whenever that input was NaN). Their dependencies were found by finite
/// perturbation instead (kind NANPROP_ENTRY_PERTURBATION); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_num_failed_columns(p: *const nanprop_pattern) -> usize {
    // SAFETY: as documented.
    unsafe {
        pattern_count("nanprop_pattern_num_failed_columns", p, |p| {
            p.report.failed_columns.len()
        })
    }
}

/// Copies the 0-based indices of the NaN-intolerant inputs, increasing, into `cols`
/// (`nanprop_pattern_num_failed_columns` entries; may be NULL when there are none).
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT for a NULL pattern or array.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_failed_columns(
    p: *const nanprop_pattern,
    cols: *mut usize,
) -> nanprop_status {
    guarded("nanprop_pattern_failed_columns", || {
        // SAFETY (both): arrays sized as documented.
        let p = unsafe { pattern_ref(p)? };
        unsafe { copy_indices(cols, &p.report.failed_columns, "cols") }
    })
}

/// The estimated relative noise of f's outputs (a standard deviation relative to each
/// output), from the evaluations the trace repeated at the same point, as ECnoise estimates
/// it; 0 when repeated evaluations agreed bit for bit. 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_noise(p: *const nanprop_pattern) -> f64 {
    let mut noise = 0.0;
    guarded("nanprop_pattern_noise", || {
        // SAFETY: NULL or a live pattern, by contract.
        noise = unsafe { pattern_ref(p)? }.report.noise;
        Ok(())
    });
    noise
}

/// The change tolerance the trace used: `verify_tolerance` as given, or the one set from the
/// noise (NANPROP_NOISE_TOLERATE: 100 times `nanprop_pattern_noise`, at least 10 times the
/// largest jitter seen); 0 when every change of an output's bits counted. 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_tolerance(p: *const nanprop_pattern) -> f64 {
    let mut tolerance = 0.0;
    guarded("nanprop_pattern_tolerance", || {
        // SAFETY: NULL or a live pattern, by contract.
        tolerance = unsafe { pattern_ref(p)? }.report.tolerance;
        Ok(())
    });
    tolerance
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
        let rp = unsafe { slice(row_ptr, m + 1, "row_ptr")? };
        if rp[0] != 0 || rp.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::invalid("row_ptr must start at 0 and never decrease"));
        }
        // SAFETY: row_ptr[m] = nnz entries by contract.
        let ci = unsafe { slice(col_idx, rp[m], "col_idx")? };
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
        // SAFETY (all): arrays sized as documented.
        let p = unsafe { pattern_ref(p)? };
        not_null(col_ptr, "col_ptr")?;
        unsafe { slice_mut(row_idx, p.nnz(), "row_idx")? };
        let t = p.transpose()?;
        unsafe { slice_mut(col_ptr, p.cols() + 1, "col_ptr")? }.copy_from_slice(&t.col_ptr);
        unsafe { copy_indices(row_idx, &t.row_idx, "row_idx") }
    })
}

/// Frees a pattern. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_pattern_free(p: *mut nanprop_pattern) {
    // SAFETY: by this function's contract.
    unsafe { super::abi::free_boxed(p) }
}
