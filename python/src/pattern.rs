//! The `Pattern` class: a traced (or given) sparsity pattern, CSR, with a kind for every entry
//! and the trace's report. Immutable.

use crate::errors::{invalid, to_py};
use nanprop::{EntryKind, Pattern};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A sparsity pattern: which outputs (rows) may depend on which inputs (columns), in CSR form,
/// with a kind for every entry saying how it was found (`kinds`, aligned with `indices`; see
/// `nanprop.EntryKind`) and the counters of the trace that found it.
///
/// Made by `nanprop.trace`, or from CSR arrays: `Pattern(m, n, indptr, indices)` (columns
/// sorted and distinct within each row; every entry gets kind TRACED), or from any SciPy sparse
/// matrix or dense array with `Pattern.from_scipy(A)`.
#[pyclass(frozen, module = "nanprop", name = "Pattern")]
pub struct PyPattern {
    pub inner: Pattern,
}

/// Reads an integer index array into sizes, refusing negative values.
fn index_array(a: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<usize>> {
    let np = a.py().import("numpy")?;
    let a = np.getattr("ascontiguousarray")?.call1((a, "int64"))?;
    let a: PyReadonlyArray1<'_, i64> = a
        .extract()
        .map_err(|_| invalid(format!("{what} must be a 1-D integer array")))?;
    a.as_slice()?
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            usize::try_from(v).map_err(|_| invalid(format!("{what}[{k}] = {v} is negative")))
        })
        .collect()
}

#[pymethods]
impl PyPattern {
    #[new]
    fn new(
        m: usize,
        n: usize,
        indptr: &Bound<'_, PyAny>,
        indices: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let row_ptr = index_array(indptr, "indptr")?;
        let col_idx = index_array(indices, "indices")?;
        let inner = Pattern::from_csr(m, n, &row_ptr, &col_idx).map_err(to_py)?;
        Ok(PyPattern { inner })
    }

    /// The pattern of the nonzeros of `a`: a SciPy sparse matrix or array (any format), or
    /// anything `numpy.asarray` reads as a 2-D array. Explicit zeros stored in a sparse matrix
    /// count as entries (they mark where a value may be).
    #[staticmethod]
    fn from_scipy(a: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = a.py();
        let sparse = py.import("scipy.sparse")?;
        let csr = sparse.getattr("csr_matrix")?.call1((a,))?;
        csr.call_method0("sum_duplicates")?;
        csr.call_method0("sort_indices")?;
        let (m, n): (usize, usize) = csr.getattr("shape")?.extract()?;
        Self::new(m, n, &csr.getattr("indptr")?, &csr.getattr("indices")?)
    }

    /// (m, n): outputs and inputs.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        (self.inner.rows(), self.inner.cols())
    }

    /// Stored entries.
    #[getter]
    fn nnz(&self) -> usize {
        self.inner.nnz()
    }

    /// Row pointers (m + 1, int64).
    #[getter]
    fn indptr<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self.inner.row_ptr().iter().map(|&k| k as i64).collect();
        v.into_pyarray(py)
    }

    /// Column indices (nnz, int64), increasing within each row.
    #[getter]
    fn indices<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self.inner.col_idx().iter().map(|&j| j as i64).collect();
        v.into_pyarray(py)
    }

    /// The kind of every entry (nnz, uint8, aligned with `indices`): values of
    /// `nanprop.EntryKind`.
    #[getter]
    fn kinds<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        let v: Vec<u8> = self.inner.kinds().iter().map(|&k| k as u8).collect();
        v.into_pyarray(py)
    }

    /// The columns of row `i`.
    fn row<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyArray1<i64>>> {
        if i >= self.inner.rows() {
            return Err(invalid(format!(
                "row {i} out of range (m = {})",
                self.inner.rows()
            )));
        }
        let v: Vec<i64> = self.inner.row(i).iter().map(|&j| j as i64).collect();
        Ok(v.into_pyarray(py))
    }

    /// Evaluations of the function the trace made (the baseline included); 0 for a pattern
    /// made from arrays.
    #[getter]
    fn evaluations(&self) -> usize {
        self.inner.report.evaluations
    }

    /// Rows whose output was NaN or Inf at x0 (stored dense).
    #[getter]
    fn nonfinite_rows<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self
            .inner
            .nonfinite_rows()
            .iter()
            .map(|&i| i as i64)
            .collect();
        v.into_pyarray(py)
    }

    /// Every counter of the trace, by name: evaluations, unresolved, assumed,
    /// verification_evaluations, found_by_perturbation, replayed, steps, budget_exhausted,
    /// failed_evaluations, failed_columns (inputs whose NaN made f fail), rechecked_rows, noise
    /// (estimated relative noise), tolerance (the change tolerance used), via_float.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = &self.inner.report;
        let d = PyDict::new(py);
        d.set_item("evaluations", r.evaluations)?;
        d.set_item("unresolved", r.unresolved)?;
        d.set_item("assumed", r.assumed)?;
        d.set_item("verification_evaluations", r.verification_evaluations)?;
        d.set_item("found_by_perturbation", r.found_by_perturbation)?;
        d.set_item("replayed", r.replayed)?;
        d.set_item("steps", r.steps)?;
        d.set_item("budget_exhausted", r.budget_exhausted)?;
        d.set_item("failed_evaluations", r.failed_evaluations)?;
        d.set_item("failed_columns", r.failed_columns.clone())?;
        d.set_item("rechecked_rows", r.rechecked_rows)?;
        d.set_item("noise", r.noise)?;
        d.set_item("tolerance", r.tolerance)?;
        d.set_item("via_float", r.via_float)?;
        Ok(d)
    }

    /// Whether entry (i, j) is stored.
    fn __contains__(&self, ij: (usize, usize)) -> bool {
        let (i, j) = ij;
        i < self.inner.rows() && self.inner.contains(i, j)
    }

    /// The pattern as a `scipy.sparse.csr_matrix` of ones (float64; int32 indices when they
    /// fit, as SciPy makes them).
    fn to_scipy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let p = &self.inner;
        let ones = vec![1.0f64; p.nnz()].into_pyarray(py);
        let small = p.nnz() <= i32::MAX as usize && p.cols() <= i32::MAX as usize;
        let (indptr, indices) = if small {
            let a: Vec<i32> = p.row_ptr().iter().map(|&k| k as i32).collect();
            let b: Vec<i32> = p.col_idx().iter().map(|&j| j as i32).collect();
            (a.into_pyarray(py).into_any(), b.into_pyarray(py).into_any())
        } else {
            (self.indptr(py).into_any(), self.indices(py).into_any())
        };
        let sparse = py.import("scipy.sparse")?;
        sparse
            .getattr("csr_matrix")?
            .call1(((ones, indices, indptr), (p.rows(), p.cols())))
    }

    fn __repr__(&self) -> String {
        let p = &self.inner;
        let counts = p.kind_counts();
        let kinds: Vec<String> = EntryKind::ALL
            .iter()
            .filter(|&&k| counts[k as usize] > 0)
            .map(|&k| format!("{}={}", k.name().replace('-', "_"), counts[k as usize]))
            .collect();
        format!(
            "<nanprop.Pattern {} x {}, nnz={}, evaluations={}{}{}>",
            p.rows(),
            p.cols(),
            p.nnz(),
            p.report.evaluations,
            if kinds.is_empty() { "" } else { ", " },
            kinds.join(", ")
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PyPattern>() {
            Ok(o) => {
                let (a, b) = (&self.inner, &o.get().inner);
                a.rows() == b.rows()
                    && a.cols() == b.cols()
                    && a.row_ptr() == b.row_ptr()
                    && a.col_idx() == b.col_idx()
            }
            Err(_) => false,
        }
    }
}

/// The pattern of `p`: a `Pattern`, or anything `Pattern.from_scipy` reads.
pub fn pattern_of(p: &Bound<'_, PyAny>) -> PyResult<Pattern> {
    match p.cast::<PyPattern>() {
        Ok(p) => Ok(p.get().inner.clone()),
        Err(_) => Ok(PyPattern::from_scipy(p)?.inner),
    }
}
