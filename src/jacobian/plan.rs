//! The plan: a pattern's coloring and decompression map, made once, and compressed differences
//! evaluated in this process at any number of points without allocating.

use super::{Difference, JacobianOptions, Layout, Step};
use crate::coloring::{self, Coloring};
use crate::driver::guard::Guarded;
use crate::driver::BlackBox;
use crate::error::{Error, ErrorKind, Result};
use crate::pattern::Pattern;
use crate::precision::Precision;

/// A reusable compressed finite-difference Jacobian for one pattern (see the module docs).
pub struct JacobianPlan {
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) options: JacobianOptions,
    pub(super) coloring: Coloring,
    /// Columns of each color group (CSR over groups).
    pub(super) group_ptr: Vec<usize>,
    pub(super) group_cols: Vec<u32>,
    /// Entries of each group: row, column and output position (CSR over groups).
    pub(super) entry_ptr: Vec<usize>,
    pub(super) entry_row: Vec<u32>,
    pub(super) entry_col: Vec<u32>,
    pub(super) entry_out: Vec<usize>,
    /// Rows holding at least one entry (they must stay finite).
    pub(super) row_has_entry: Vec<bool>,
    pub(super) values_len: usize,
    pub(super) evaluator: Guarded,
    pub(super) f0: Vec<f64>,
    pub(super) step_plus: Vec<f64>,
    pub(super) step_minus: Vec<f64>,
}

impl JacobianPlan {
    /// A plan for the Jacobian of f: R^n -> R^m with pattern `p`. Colors the columns.
    /// Errors: per-column steps of the wrong length, a step that is zero or not finite, a dense
    /// layout whose m * n overflows.
    pub fn new(p: &Pattern, options: &JacobianOptions) -> Result<Self> {
        let (m, n) = (p.rows(), p.cols());
        let values_len = Self::values_len_for(p, options)?;
        let coloring = coloring::color(p, &options.coloring)?;
        let t = p.transpose()?;
        // Entries grouped by color: the columns of a group in order, each with its rows.
        let mut entries = Entries::with_capacity(coloring.num_colors, p.nnz())?;
        let (group_ptr, group_cols) = coloring.groups()?;
        for g in 0..coloring.num_colors {
            for &j in &group_cols[group_ptr[g]..group_ptr[g + 1]] {
                let j = j as usize;
                for k in t.col_ptr[j]..t.col_ptr[j + 1] {
                    let i = t.row_idx[k] as usize;
                    entries.push(
                        i as u32,
                        j as u32,
                        match options.layout {
                            Layout::Csr => t.csr_pos[k],
                            Layout::Csc => k,
                            Layout::DenseColumnMajor => i + j * m,
                        },
                    );
                }
            }
            entries.end_group();
        }
        Self::from_entries(m, n, options, coloring, entries, values_len)
    }

    /// A plan from a coloring and the entries each color group gives (the Hessian's symmetric
    /// recovery builds its own). `values_len` must exceed every entry's output position.
    pub(crate) fn from_entries(
        m: usize,
        n: usize,
        options: &JacobianOptions,
        coloring: Coloring,
        entries: Entries,
        values_len: usize,
    ) -> Result<Self> {
        let (group_ptr, group_cols) = coloring.groups()?;
        let mut row_has_entry = crate::error::filled(false, m, "rows with entries")?;
        entries
            .row
            .iter()
            .for_each(|&i| row_has_entry[i as usize] = true);
        debug_assert!(entries.out.iter().all(|&o| o < values_len));
        Ok(JacobianPlan {
            m,
            n,
            options: options.clone(),
            coloring,
            group_ptr,
            group_cols,
            entry_ptr: entries.ptr,
            entry_row: entries.row,
            entry_col: entries.col,
            entry_out: entries.out,
            row_has_entry,
            values_len,
            evaluator: Guarded::new(n, m)?,
            f0: crate::error::filled(0.0, m, "f(x)")?,
            step_plus: crate::error::filled(0.0, n, "steps")?,
            step_minus: crate::error::filled(0.0, n, "steps")?,
        })
    }

    /// Checks `options` for pattern `p` (steps) and gives the number of values a plan writes.
    pub(crate) fn values_len_for(p: &Pattern, options: &JacobianOptions) -> Result<usize> {
        let (m, n) = (p.rows(), p.cols());
        match &options.step {
            Step::RelativePerColumn(v) | Step::AbsolutePerColumn(v) if v.len() != n => {
                return Err(Error::invalid(format!(
                    "{} per-column steps given, expected n = {n}",
                    v.len()
                )))
            }
            _ => {}
        }
        let bad_step = |h: f64| !h.is_finite() || h == 0.0;
        let bad = match &options.step {
            Step::Default => None,
            Step::Relative(h) | Step::Absolute(h) => bad_step(*h).then_some((0, *h)),
            Step::RelativePerColumn(v) | Step::AbsolutePerColumn(v) => {
                v.iter().position(|&h| bad_step(h)).map(|j| (j, v[j]))
            }
        };
        if let Some((j, h)) = bad {
            return Err(Error::invalid(format!(
                "step {h} (column {j}) must be finite and nonzero"
            )));
        }
        Ok(match options.layout {
            Layout::Csr | Layout::Csc => p.nnz(),
            Layout::DenseColumnMajor => m.checked_mul(n).ok_or_else(|| {
                Error::invalid(format!("a dense {m} x {n} Jacobian does not fit in memory"))
            })?,
        })
    }

    /// Rows (m) of the Jacobian.
    pub fn rows(&self) -> usize {
        self.m
    }

    /// The column coloring.
    pub fn coloring(&self) -> &Coloring {
        &self.coloring
    }

    /// Number of values [`JacobianPlan::evaluate`] writes.
    pub fn values_len(&self) -> usize {
        self.values_len
    }

    /// Evaluations one Jacobian costs (`with_fx`: f(x) supplied).
    pub fn evaluations_per_jacobian(&self, with_fx: bool) -> usize {
        match self.options.difference {
            Difference::Forward => self.coloring.num_colors + usize::from(!with_fx),
            Difference::Central => 2 * self.coloring.num_colors,
        }
    }

    /// The nominal step of column `j` at `x_j` (before rounding to what the arithmetic makes).
    pub(super) fn nominal_step(&self, j: usize, xj: f64, precision: Precision) -> f64 {
        let sign = if xj < 0.0 { -1.0 } else { 1.0 };
        let scale = xj.abs().max(1.0) * sign;
        match &self.options.step {
            Step::Default => match self.options.difference {
                Difference::Forward => precision.epsilon().sqrt() * scale,
                Difference::Central => precision.epsilon().cbrt() * scale,
            },
            Step::Relative(r) => r * scale,
            Step::Absolute(h) => *h,
            Step::RelativePerColumn(v) => v[j] * scale,
            Step::AbsolutePerColumn(v) => v[j],
        }
    }

    /// Checks that f(x), held in `self.f0`, is finite in every row with entries: differences
    /// from a non-finite base value carry no derivative.
    pub(super) fn check_f0(&self) -> Result<()> {
        match (0..self.f0.len()).find(|&i| self.row_has_entry[i] && !self.f0[i].is_finite()) {
            Some(i) => Err(Error::new(
                ErrorKind::BaselineNotFinite,
                format!(
                    "f(x) has y[{i}] = {}: rows with entries must be finite",
                    self.f0[i]
                ),
            )),
            None => Ok(()),
        }
    }

    /// The Jacobian of a single-precision function (`float` arguments) at `x`, into `values`
    /// as `float`s: [`JacobianPlan::evaluate`] through [`crate::driver::Single`], with steps
    /// sized and taken in `float` (module docs). Allocates the conversions (O(n + m + nnz)).
    pub fn evaluate_f32<F: crate::driver::BlackBox32>(
        &mut self,
        f: F,
        x: &[f32],
        fx: Option<&[f32]>,
        values: &mut [f32],
    ) -> Result<usize> {
        if values.len() != self.values_len {
            return Err(Error::invalid(format!(
                "values has {} entries, expected {}",
                values.len(),
                self.values_len
            )));
        }
        let widen = |v: &[f32], what: &str| -> Result<Vec<f64>> {
            let mut out = Vec::new();
            crate::error::reserve(&mut out, v.len(), what)?;
            out.extend(v.iter().map(|&a| crate::driver::single::widen(a)));
            Ok(out)
        };
        let x64 = widen(x, "x")?;
        let fx64 = fx.map(|fx| widen(fx, "fx")).transpose()?;
        let mut v64 = Vec::new();
        crate::error::reserve(&mut v64, self.values_len, "values")?;
        v64.resize(self.values_len, 0.0);
        let mut g = crate::driver::Single::new(f, self.n, self.m)?;
        let made = self.evaluate(&mut g, &x64, fx64.as_deref(), &mut v64)?;
        for (o, v) in values.iter_mut().zip(&v64) {
            *o = *v as f32;
        }
        Ok(made)
    }

    /// The Jacobian at `x` into `values` ([`JacobianPlan::values_len`] of them, in the plan's
    /// layout). `fx`, if given, is f(x) and saves one evaluation of a forward Jacobian. Returns
    /// the number of evaluations made. Allocates nothing (except for an error message).
    ///
    /// Errors: wrong lengths or a non-finite x or fx ([`ErrorKind::InvalidArgument`]); a row
    /// with entries not finite at x ([`ErrorKind::BaselineNotFinite`]); the black box failing,
    /// breaking its contract, or turning a row non-finite ([`ErrorKind::BlackBox`]).
    pub fn evaluate(
        &mut self,
        f: &mut dyn BlackBox,
        x: &[f64],
        fx: Option<&[f64]>,
        values: &mut [f64],
    ) -> Result<usize> {
        let _fp = crate::fpenv::FpGuard::enter();
        let m = self.m;
        if values.len() != self.values_len {
            return Err(Error::invalid(format!(
                "values has {} entries, expected {}",
                values.len(),
                self.values_len
            )));
        }
        if let Some(fx) = fx {
            if fx.len() != m {
                return Err(Error::invalid(format!(
                    "fx has {} entries, expected m = {m}",
                    fx.len()
                )));
            }
        }
        self.prepare_steps(x, f.precision())?;
        self.evaluator.input_mut().copy_from_slice(x);
        let mut evaluations = 0;
        let forward = self.options.difference == Difference::Forward;
        if forward {
            match fx {
                Some(fx) => self.f0.copy_from_slice(fx),
                None => {
                    let y = shifted(
                        &mut self.evaluator,
                        f,
                        x,
                        &[],
                        |_| 0.0,
                        || "the evaluation at x".to_string(),
                    )?;
                    self.f0.copy_from_slice(y);
                    evaluations += 1;
                }
            }
            self.check_f0()?;
        }
        if self.options.layout == Layout::DenseColumnMajor {
            values.fill(0.0);
        }
        for g in 0..self.coloring.num_colors {
            let cols = &self.group_cols[self.group_ptr[g]..self.group_ptr[g + 1]];
            let entries = self.entry_ptr[g]..self.entry_ptr[g + 1];
            let describe = |sign: &str| {
                let shown: Vec<String> = cols.iter().take(8).map(|c| c.to_string()).collect();
                let more = if cols.len() > 8 { ", ..." } else { "" };
                format!(
                    "the {sign} evaluation of column group {g} (columns {}{more})",
                    shown.join(", ")
                )
            };
            let (sp, sm) = (&self.step_plus, &self.step_minus);
            let y = shifted(
                &mut self.evaluator,
                f,
                x,
                cols,
                |j| x[j] + sp[j],
                || describe("+h"),
            )?;
            evaluations += 1;
            for e in entries.clone() {
                let i = self.entry_row[e] as usize;
                if !y[i].is_finite() {
                    return Err(not_finite(i, y[i], &describe("+h")));
                }
                values[self.entry_out[e]] = if forward {
                    (y[i] - self.f0[i]) / sp[self.entry_col[e] as usize]
                } else {
                    y[i] // f(x + h) for now; the difference comes after the -h evaluation
                };
            }
            if !forward {
                let y = shifted(
                    &mut self.evaluator,
                    f,
                    x,
                    cols,
                    |j| x[j] - sm[j],
                    || describe("-h"),
                )?;
                evaluations += 1;
                for e in entries {
                    let (i, j, out) = (
                        self.entry_row[e] as usize,
                        self.entry_col[e] as usize,
                        self.entry_out[e],
                    );
                    if !y[i].is_finite() {
                        return Err(not_finite(i, y[i], &describe("-h")));
                    }
                    values[out] = (values[out] - y[i]) / (sp[j] + sm[j]);
                }
            }
        }
        Ok(evaluations)
    }
}

/// What each color group's evaluation gives: for each entry, the row of f to read, the column
/// whose step divides the difference, and where the value goes (CSR over groups, in group
/// order).
pub(crate) struct Entries {
    ptr: Vec<usize>,
    row: Vec<u32>,
    col: Vec<u32>,
    out: Vec<usize>,
}

impl Entries {
    /// Room for `entries` entries in `groups` groups.
    pub(crate) fn with_capacity(groups: usize, entries: usize) -> Result<Self> {
        let mut e = Entries {
            ptr: Vec::new(),
            row: Vec::new(),
            col: Vec::new(),
            out: Vec::new(),
        };
        crate::error::reserve(&mut e.ptr, groups + 1, "entry groups")?;
        crate::error::reserve(&mut e.row, entries, "entries")?;
        crate::error::reserve(&mut e.col, entries, "entries")?;
        crate::error::reserve(&mut e.out, entries, "entries")?;
        e.ptr.push(0);
        Ok(e)
    }

    /// An entry of the current group (the capacity must hold it).
    pub(crate) fn push(&mut self, row: u32, col: u32, out: usize) {
        self.row.push(row);
        self.col.push(col);
        self.out.push(out);
    }

    /// Ends the current group.
    pub(crate) fn end_group(&mut self) {
        self.ptr.push(self.row.len());
    }
}

/// Evaluates f at `x` with the columns `cols` moved to `value(j)` (the evaluator's input holds
/// `x`, and holds it again on return); a failure becomes an error naming `what`.
fn shifted<'a>(
    ev: &'a mut Guarded,
    f: &mut dyn BlackBox,
    x: &[f64],
    cols: &[u32],
    value: impl Fn(usize) -> f64,
    what: impl Fn() -> String,
) -> Result<&'a [f64]> {
    let input = ev.input_mut();
    for &c in cols {
        input[c as usize] = value(c as usize);
    }
    let called = ev.call(f);
    let input = ev.input_mut();
    for &c in cols {
        input[c as usize] = x[c as usize];
    }
    called.map_err(|failure| {
        Error::new(
            ErrorKind::BlackBox,
            format!("the black box {failure} on {}", what()),
        )
    })?;
    Ok(ev.output())
}

/// The error for output `i` turning NaN or Inf (`value`) on the evaluation `what`.
fn not_finite(i: usize, value: f64, what: &str) -> Error {
    Error::new(
        ErrorKind::BlackBox,
        format!("y[{i}] = {value} on {what}: the black box is not finite there"),
    )
}
