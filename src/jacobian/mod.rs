//! Sparse Jacobians by compressed finite differences.
//!
//! Columns of one color share no row ([`crate::coloring`]), so one evaluation with all of them
//! perturbed gives, in each row, the difference due to at most one of them. A forward Jacobian
//! costs `colors + 1` evaluations (`colors` when f(x) is supplied), a central one `2 colors`.
//!
//! # Shape
//!
//! As PETSc's `MatFDColoring`: a [`JacobianPlan`] is made once from a pattern and options (the
//! coloring and the decompression map are computed there) and evaluated at many points; an
//! evaluation allocates nothing.
//!
//! # Steps
//!
//! Default, per column: `h_j = sqrt(eps) * max(|x_j|, 1)` for forward differences and
//! `cbrt(eps) * max(|x_j|, 1)` for central ones, with the sign of `x_j` (+ at 0), as SciPy does.
//! A relative step `r` gives `r * max(|x_j|, 1)` with that sign; an absolute step is used as
//! given. Either may be one number or one per column. The step taken is the one the arithmetic
//! really makes, `(x_j + h_j) - x_j`; a step that vanishes is an error.
//!
//! eps is the black box's own ([`crate::BlackBox::precision`]): for a single-precision one
//! (a `float` function, a REAL*4 routine) `eps_f32 = 2^-23`, so the default steps are about
//! 3.5e-4 (forward) and 4.9e-3 (central) relative, and the step taken is
//! `float(x_j + h_j) - float(x_j)`, what the function really sees. Expect relative errors
//! near `sqrt(eps_f32)` ~ 3e-4 (forward) and `eps_f32^(2/3)` ~ 2e-5 (central) times the
//! function's curvature scale, against 1e-8 and 1e-11 in double precision.
//!
//! # Checks
//!
//! Rows with entries must be finite at x (else [`crate::ErrorKind::BaselineNotFinite`]); an
//! evaluation that turns one of them non-finite is an [`crate::ErrorKind::BlackBox`] error naming
//! the column group, never a NaN in the Jacobian.

//!
//! # Files
//!
//! The options are here; `plan.rs` holds the [`JacobianPlan`] (coloring, decompression map,
//! evaluation in this process), `batch.rs` the same Jacobian as a batch of points evaluated
//! elsewhere and assembled from their outputs.

mod batch;
mod plan;

pub(crate) use plan::Entries;
pub use plan::JacobianPlan;

use crate::coloring::ColoringOptions;
use crate::driver::BlackBox;
use crate::error::Result;
use crate::pattern::Pattern;

/// Forward or central differences.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Difference {
    /// `(f(x + h) - f(x)) / h`: first order, `colors + 1` evaluations.
    #[default]
    Forward,
    /// `(f(x + h) - f(x - h)) / 2h`: second order, `2 colors` evaluations.
    Central,
}

/// How the step of each column is chosen.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Step {
    /// `sqrt(eps)` (forward) or `cbrt(eps)` (central), relative.
    #[default]
    Default,
    /// `r * max(|x_j|, 1)` with the sign of `x_j`.
    Relative(f64),
    /// `h` as given.
    Absolute(f64),
    /// Relative, one per column.
    RelativePerColumn(Vec<f64>),
    /// Absolute, one per column.
    AbsolutePerColumn(Vec<f64>),
}

/// Where the values go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Layout {
    /// nnz values in the pattern's CSR order.
    #[default]
    Csr,
    /// nnz values in CSC order ([`Pattern::transpose`]).
    Csc,
    /// m x n values, column-major, leading dimension m (zeros outside the pattern).
    DenseColumnMajor,
}

/// Options of a [`JacobianPlan`].
#[derive(Clone, Debug, PartialEq, Default)]
pub struct JacobianOptions {
    /// Forward or central.
    pub difference: Difference,
    /// Step rule.
    pub step: Step,
    /// Output layout.
    pub layout: Layout,
    /// How columns are colored.
    pub coloring: ColoringOptions,
}

/// One Jacobian with a fresh plan (colors the pattern, then evaluates). For many points, keep a
/// [`JacobianPlan`].
pub fn jacobian(
    f: &mut dyn BlackBox,
    x: &[f64],
    p: &Pattern,
    options: &JacobianOptions,
    values: &mut [f64],
) -> Result<usize> {
    JacobianPlan::new(p, options)?.evaluate(f, x, None, values)
}
