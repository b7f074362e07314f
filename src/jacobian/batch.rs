//! A Jacobian as a batch: the perturbed points of every color group, handed out to be
//! evaluated anywhere, and the Jacobian assembled from their outputs.

use super::plan::JacobianPlan;
use super::{Difference, Layout};
use crate::error::{Error, ErrorKind, Result};
use crate::precision::Precision;

impl JacobianPlan {
    /// Evaluations one Jacobian needs as a batch: with `with_fx` (f(x) supplied) a forward
    /// Jacobian needs one per color; without, one more (point 0 is x itself). Central: two per
    /// color.
    pub fn num_points(&self, with_fx: bool) -> usize {
        self.evaluations_per_jacobian(with_fx)
    }

    /// Writes point `k` of the batch for the Jacobian at `x` into `xk` (n values). Forward
    /// without f(x): point 0 is x, point 1 + g is x + h on color group g; with f(x): point g is
    /// x + h on group g. Central: point 2g is x + h, 2g + 1 is x - h on group g.
    /// Errors: `k` out of range, wrong lengths, a vanishing step.
    pub fn point(&mut self, x: &[f64], with_fx: bool, k: usize, xk: &mut [f64]) -> Result<()> {
        self.prepare_steps(x, Precision::Double)?;
        if xk.len() != self.n || k >= self.num_points(with_fx) {
            return Err(Error::invalid(format!(
                "point {k} of {} (or xk not n values)",
                self.num_points(with_fx)
            )));
        }
        xk.copy_from_slice(x);
        let (group, sign) = match (self.options.difference, with_fx) {
            (Difference::Forward, false) if k == 0 => return Ok(()),
            (Difference::Forward, false) => (k - 1, 1.0),
            (Difference::Forward, true) => (k, 1.0),
            (Difference::Central, _) => (k / 2, if k.is_multiple_of(2) { 1.0 } else { -1.0 }),
        };
        for &j in &self.group_cols[self.group_ptr[group]..self.group_ptr[group + 1]] {
            let j = j as usize;
            xk[j] = if sign > 0.0 {
                x[j] + self.step_plus[j]
            } else {
                x[j] - self.step_minus[j]
            };
        }
        Ok(())
    }

    /// The Jacobian at `x` from the outputs `ys` of all batch points (point k's m values at
    /// `ys[k m..]`), into `values`; `fx` is f(x) when the batch was made with it.
    /// Errors: wrong lengths; a row with entries not finite (at x, or at a point: the message
    /// names the color group).
    pub fn assemble(
        &mut self,
        x: &[f64],
        fx: Option<&[f64]>,
        ys: &[f64],
        values: &mut [f64],
    ) -> Result<()> {
        let _fp = crate::fpenv::FpGuard::enter();
        self.prepare_steps(x, Precision::Double)?;
        let (m, with_fx) = (self.m, fx.is_some());
        let points = self.num_points(with_fx);
        if ys.len() != points * m || values.len() != self.values_len {
            return Err(Error::invalid(format!(
                "ys must hold {points} x {m} outputs and values {} (got {} and {})",
                self.values_len,
                ys.len(),
                values.len()
            )));
        }
        let forward = self.options.difference == Difference::Forward;
        if forward {
            let f0 = match fx {
                Some(fx) => fx,
                None => &ys[..m],
            };
            if f0.len() != m {
                return Err(Error::invalid(format!(
                    "fx has {} entries, expected m = {m}",
                    f0.len()
                )));
            }
            self.f0.copy_from_slice(f0);
            self.check_f0()?;
        }
        if self.options.layout == Layout::DenseColumnMajor {
            values.fill(0.0);
        }
        let offset = usize::from(forward && !with_fx);
        for g in 0..self.coloring.num_colors {
            let (plus, minus) = if forward {
                (offset + g, usize::MAX)
            } else {
                (2 * g, 2 * g + 1)
            };
            for e in self.entry_ptr[g]..self.entry_ptr[g + 1] {
                let (i, j, out) = (
                    self.entry_row[e] as usize,
                    self.entry_col[e] as usize,
                    self.entry_out[e],
                );
                let yp = ys[plus * m + i];
                let ym = if forward {
                    self.f0[i]
                } else {
                    ys[minus * m + i]
                };
                if !yp.is_finite() || !ym.is_finite() {
                    return Err(Error::new(
                        ErrorKind::BlackBox,
                        format!("y[{i}] is not finite at a point of column group {g}: the black box is not finite there"),
                    ));
                }
                values[out] = if forward {
                    (yp - ym) / self.step_plus[j]
                } else {
                    (yp - ym) / (self.step_plus[j] + self.step_minus[j])
                };
            }
        }
        Ok(())
    }

    /// Computes the steps actually taken at `x` (and checks x).
    /// `precision`: the black box's; a single-precision one gets `float`-sized steps, and the
    /// step taken is the one `float` arithmetic makes.
    pub(super) fn prepare_steps(&mut self, x: &[f64], precision: Precision) -> Result<()> {
        if x.len() != self.n {
            return Err(Error::invalid(format!(
                "x has {} entries, expected n = {}",
                x.len(),
                self.n
            )));
        }
        if let Some(j) = x.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(format!("x[{j}] = {} is not finite", x[j])));
        }
        for (j, &xj) in x.iter().enumerate() {
            let h = self.nominal_step(j, xj, precision);
            // Both ends as the black box will see them (exact differences in double).
            let (r, xr) = (|v: f64| precision.round(v), precision.round(xj));
            self.step_plus[j] = r(xj + h) - xr;
            self.step_minus[j] = xr - r(xj - h);
            if self.step_plus[j] == 0.0 || self.step_minus[j] == 0.0 {
                return Err(Error::invalid(format!(
                    "the step {h} for column {j} vanishes at x[{j}] = {xj} (too small to change it)"
                )));
            }
        }
        Ok(())
    }
}
