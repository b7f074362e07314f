//! The `HessianPlanCore` class, `hessian_coloring` and `smoothed_jacobian_values`: sparse
//! Hessians from a gradient (star coloring) and smoothed Jacobians, for `nanprop.HessianPlan`,
//! `nanprop.hessian`, `nanprop.hessian_coloring` and `nanprop.smoothed_jacobian`.

use crate::callable::with_black_box;
use crate::errors::{invalid, to_py};
use crate::jacobian::jacobian_options;
use crate::pattern::pattern_of;
use nanprop::coloring::{star, ColoringOptions};
use nanprop::hessian::HessianPlan;
use nanprop::smoothing::{smoothed_jacobian, Estimator, SigmaKind, SmoothingOptions};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// Star-colors the square pattern `p` (symmetrized) for a Hessian: returns (colors, number
/// of colors). Use `nanprop.hessian_coloring`.
#[pyfunction]
#[pyo3(signature = (p,))]
pub fn hessian_coloring<'py>(
    py: Python<'py>,
    p: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, usize)> {
    let p = pattern_of(p)?;
    let c = star(&p, &ColoringOptions::default()).map_err(to_py)?;
    let colors: Vec<i64> = c.colors.iter().map(|&k| k as i64).collect();
    Ok((colors.into_pyarray(py), c.num_colors))
}

/// The library's Hessian plan. Use `nanprop.HessianPlan`, which returns SciPy matrices.
#[pyclass(subclass, module = "nanprop", name = "HessianPlanCore", unsendable)]
pub struct PyHessianPlan {
    plan: HessianPlan,
    n: usize,
    indptr: Vec<i64>,
    indices: Vec<i64>,
}

#[pymethods]
impl PyHessianPlan {
    #[new]
    #[pyo3(signature = (p, method="forward", step=None, step_kind="relative", order="auto", seed=0))]
    fn new(
        p: &Bound<'_, PyAny>,
        method: &str,
        step: Option<&Bound<'_, PyAny>>,
        step_kind: &str,
        order: &str,
        seed: u64,
    ) -> PyResult<Self> {
        let p = pattern_of(p)?;
        let options = jacobian_options(method, step, step_kind, order, seed, 0)?;
        let plan = HessianPlan::new(&p, &options).map_err(to_py)?;
        Ok(PyHessianPlan {
            plan,
            n: p.cols(),
            indptr: p.row_ptr().iter().map(|&k| k as i64).collect(),
            indices: p.col_idx().iter().map(|&j| j as i64).collect(),
        })
    }

    /// Star colors: gradient evaluations per forward Hessian, less one when g(x) is given.
    #[getter]
    fn num_colors(&self) -> usize {
        self.plan.coloring().num_colors
    }

    /// The star color of every column (int64, n values).
    #[getter]
    fn colors<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self
            .plan
            .coloring()
            .colors
            .iter()
            .map(|&c| c as i64)
            .collect();
        v.into_pyarray(py)
    }

    /// (n, n).
    #[getter]
    fn shape(&self) -> (usize, usize) {
        (self.n, self.n)
    }

    /// The pattern's row pointers and column indices (fresh int64 arrays).
    fn csr<'py>(&self, py: Python<'py>) -> (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>) {
        (
            PyArray1::from_slice(py, &self.indptr),
            PyArray1::from_slice(py, &self.indices),
        )
    }

    /// Gradient evaluations one Hessian costs.
    #[pyo3(signature = (with_gx=false))]
    fn evaluations_per_hessian(&self, with_gx: bool) -> usize {
        self.plan.evaluations_per_hessian(with_gx)
    }

    /// The Hessian's values at x in the pattern's CSR order, and the gradient evaluations made.
    #[pyo3(signature = (gradient, x, gx=None))]
    fn values<'py>(
        &mut self,
        py: Python<'py>,
        gradient: &Bound<'py, PyAny>,
        x: PyReadonlyArray1<'py, f64>,
        gx: Option<PyReadonlyArray1<'py, f64>>,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, usize)> {
        let x = x.as_slice()?;
        let n = self.n;
        if x.len() != n {
            return Err(invalid(format!(
                "x has {} values, expected n = {n}",
                x.len()
            )));
        }
        let gx = match &gx {
            Some(a) => Some(a.as_slice()?),
            None => None,
        };
        let mut values = vec![0.0; self.plan.values_len()];
        let plan = &mut self.plan;
        let made = with_black_box(gradient, n, n, false, |g| {
            plan.evaluate(g, x, gx, &mut values)
        })?;
        Ok((values.into_pyarray(py), made))
    }
}

/// The smoothed Jacobian's values and standard errors in the pattern's CSR order, and the
/// evaluations made. Use `nanprop.smoothed_jacobian`.
#[pyfunction]
#[pyo3(signature = (f, x, p, sigma, sigma_kind="relative", samples=100, seed=0, estimator="regression"))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn smoothed_jacobian_values<'py>(
    py: Python<'py>,
    f: &Bound<'py, PyAny>,
    x: PyReadonlyArray1<'py, f64>,
    p: &Bound<'py, PyAny>,
    sigma: f64,
    sigma_kind: &str,
    samples: usize,
    seed: u64,
    estimator: &str,
) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>, usize)> {
    let p = pattern_of(p)?;
    let sigma_kind = match sigma_kind {
        "relative" => SigmaKind::Relative,
        "absolute" => SigmaKind::Absolute,
        _ => {
            return Err(invalid(format!(
                "sigma_kind {sigma_kind:?} must be 'relative' or 'absolute'"
            )))
        }
    };
    let estimator = match estimator {
        "regression" => Estimator::Regression,
        "average" => Estimator::Average,
        _ => {
            return Err(invalid(format!(
                "estimator {estimator:?} must be 'regression' or 'average'"
            )))
        }
    };
    let options = SmoothingOptions {
        sigma,
        sigma_kind,
        samples,
        seed,
        estimator,
    };
    let x = x.as_slice()?;
    let (mut values, mut errors) = (vec![0.0; p.nnz()], vec![0.0; p.nnz()]);
    let made = with_black_box(f, p.cols(), p.rows(), false, |g| {
        smoothed_jacobian(g, x, &p, &options, &mut values, Some(&mut errors))
    })?;
    Ok((values.into_pyarray(py), errors.into_pyarray(py), made))
}
