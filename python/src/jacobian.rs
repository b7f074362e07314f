//! `coloring` and the `JacobianPlan` class: the library's column coloring and compressed
//! differences, with options by keyword.

use crate::callable::with_black_box;
use crate::errors::{invalid, to_py};
use crate::pattern::pattern_of;
use nanprop::coloring::{color, ColoringOptions, Order, Strategy as ColorStrategy};
use nanprop::jacobian::{Difference, JacobianOptions, JacobianPlan, Step};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// Coloring options from keywords: `order` "auto" (a structured grid's formula when one fits, else
/// saturation, after the natural order when one row holds half the work, has 64 entries or every
/// row's columns lie close together), "best" (the formula, else every order, the fewest colors) or
/// one of natural, largest-first, smallest-last, incidence-degree, dynamic-largest-first, random,
/// saturation; `seed`; `recolor` rounds of iterated greedy recoloring.
pub(crate) fn coloring_options(
    order: &str,
    seed: u64,
    recolor: usize,
) -> PyResult<ColoringOptions> {
    let strategy = if order == "auto" {
        ColorStrategy::Auto
    } else if order == "best" {
        ColorStrategy::BestOf
    } else {
        let found = Order::all(seed).into_iter().find(|o| o.name() == order);
        ColorStrategy::Only(found.ok_or_else(|| {
            let names: Vec<&str> = Order::all(seed).iter().map(|o| o.name()).collect();
            invalid(format!(
                "unknown order {order:?} (auto, best, {})",
                names.join(", ")
            ))
        })?)
    };
    Ok(ColoringOptions {
        strategy,
        seed,
        recolor_iterations: recolor,
    })
}

/// Jacobian (and Hessian) plan options from the keywords both plans take.
pub(crate) fn jacobian_options(
    method: &str,
    step: Option<&Bound<'_, PyAny>>,
    step_kind: &str,
    order: &str,
    seed: u64,
    recolor: usize,
) -> PyResult<JacobianOptions> {
    let difference = match method {
        "forward" | "2-point" => Difference::Forward,
        "central" | "3-point" => Difference::Central,
        _ => {
            return Err(invalid(format!(
                "method {method:?} must be 'forward' or 'central'"
            )))
        }
    };
    let relative = match step_kind {
        "relative" => true,
        "absolute" => false,
        _ => {
            return Err(invalid(format!(
                "step_kind {step_kind:?} must be 'relative' or 'absolute'"
            )))
        }
    };
    let step = match step {
        None => Step::Default,
        Some(s) => match s.extract::<f64>() {
            Ok(h) if relative => Step::Relative(h),
            Ok(h) => Step::Absolute(h),
            Err(_) => {
                let v: PyReadonlyArray1<'_, f64> = s
                    .py()
                    .import("numpy")?
                    .getattr("ascontiguousarray")?
                    .call1((s, "float64"))?
                    .extract()
                    .map_err(|_| invalid("step must be a number or one per column"))?;
                let v = v.as_slice()?.to_vec();
                if relative {
                    Step::RelativePerColumn(v)
                } else {
                    Step::AbsolutePerColumn(v)
                }
            }
        },
    };
    let options = JacobianOptions {
        difference,
        step,
        coloring: coloring_options(order, seed, recolor)?,
        ..JacobianOptions::default()
    };
    Ok(options)
}

/// Colors the columns of pattern `p` (a `Pattern` or anything `Pattern.from_scipy` reads) so
/// that columns sharing a row differ: returns (colors, number of colors), colors an int64 array
/// of n values in 0..number. Use `nanprop.coloring`.
#[pyfunction]
#[pyo3(signature = (p, order="auto", seed=0, recolor=0))]
pub fn coloring<'py>(
    py: Python<'py>,
    p: &Bound<'py, PyAny>,
    order: &str,
    seed: u64,
    recolor: usize,
) -> PyResult<(Bound<'py, PyArray1<i64>>, usize)> {
    let p = pattern_of(p)?;
    let c = color(&p, &coloring_options(order, seed, recolor)?).map_err(to_py)?;
    let colors: Vec<i64> = c.colors.iter().map(|&k| k as i64).collect();
    Ok((colors.into_pyarray(py), c.num_colors))
}

/// The library's plan: a pattern's coloring and decompression map, made once, evaluated at
/// many points. Use `nanprop.JacobianPlan`, which returns SciPy matrices.
#[pyclass(subclass, module = "nanprop", name = "JacobianPlanCore", unsendable)]
pub struct PyJacobianPlan {
    plan: JacobianPlan,
    shape: (usize, usize),
    indptr: Vec<i64>,
    indices: Vec<i64>,
}

#[pymethods]
impl PyJacobianPlan {
    #[new]
    #[pyo3(signature = (p, method="forward", step=None, step_kind="relative", order="auto", seed=0, recolor=0))]
    fn new(
        p: &Bound<'_, PyAny>,
        method: &str,
        step: Option<&Bound<'_, PyAny>>,
        step_kind: &str,
        order: &str,
        seed: u64,
        recolor: usize,
    ) -> PyResult<Self> {
        let p = pattern_of(p)?;
        let options = jacobian_options(method, step, step_kind, order, seed, recolor)?;
        let plan = JacobianPlan::new(&p, &options).map_err(to_py)?;
        Ok(PyJacobianPlan {
            plan,
            shape: (p.rows(), p.cols()),
            indptr: p.row_ptr().iter().map(|&k| k as i64).collect(),
            indices: p.col_idx().iter().map(|&j| j as i64).collect(),
        })
    }

    /// Colors: the number of column groups.
    #[getter]
    fn num_colors(&self) -> usize {
        self.plan.coloring().num_colors
    }

    /// The color of every column (int64, n values).
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

    /// (m, n).
    #[getter]
    fn shape(&self) -> (usize, usize) {
        self.shape
    }

    /// The pattern's row pointers and column indices (fresh int64 arrays).
    fn csr<'py>(&self, py: Python<'py>) -> (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>) {
        (
            PyArray1::from_slice(py, &self.indptr),
            PyArray1::from_slice(py, &self.indices),
        )
    }

    /// Evaluations of f one Jacobian costs: colors + 1 forward (colors when f(x) is given),
    /// 2 colors central.
    #[pyo3(signature = (with_fx=false))]
    fn evaluations_per_jacobian(&self, with_fx: bool) -> usize {
        self.plan.evaluations_per_jacobian(with_fx)
    }

    /// The Jacobian's values at x in the pattern's CSR order, and the evaluations made;
    /// `single`: a Python f works in float32 (float steps).
    #[pyo3(signature = (f, x, fx=None, single=false))]
    fn values<'py>(
        &mut self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        x: PyReadonlyArray1<'py, f64>,
        fx: Option<PyReadonlyArray1<'py, f64>>,
        single: bool,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, usize)> {
        let x = x.as_slice()?;
        let (m, n) = self.shape;
        if x.len() != n {
            return Err(invalid(format!(
                "x has {} values, expected n = {n}",
                x.len()
            )));
        }
        let fx = match &fx {
            Some(a) => Some(a.as_slice()?),
            None => None,
        };
        let mut values = vec![0.0; self.plan.values_len()];
        let plan = &mut self.plan;
        let made = with_black_box(f, n, m, single, |g| plan.evaluate(g, x, fx, &mut values))?;
        Ok((values.into_pyarray(py), made))
    }
}
