//! Sparse Hessians from a gradient routine, by star coloring and symmetric recovery.
//!
//! # Problem
//!
//! A gradient routine g = grad f: R^n -> R^n is a black box like any other: nanprop traces its
//! pattern (the Hessian's) and could difference it as a Jacobian, one color per group of
//! columns sharing no row. The Hessian is symmetric, though, and H_ij may be read from column
//! j or from column i. [`crate::coloring::star`] colors for that (see its docs): never more
//! colors than the column coloring, often far fewer (a 2-D grid with one global variable: the
//! column coloring needs n colors, the dense row forces them; the star coloring 5 or 6).
//!
//! # Recovery
//!
//! Direct, from the compressed differences (Powell and Toint; Coleman and Moré): with color
//! group c moved by per-column steps h, `g_i(x + h_c) - g_i(x)` is `H_ij h_j` when j is the only
//! column of row i with color c. Diagonal entries are read in their own row (adjacent columns
//! never share a color); an off-diagonal entry from the row where the other column's color is
//! unique, which a star coloring guarantees for one of the two. Both (i, j) and (j, i) get that
//! same value: the result is exactly symmetric. Steps, differences (forward: colors + 1
//! gradient evaluations, colors when g(x) is given; central: 2 colors), checks and batches are
//! the Jacobian's ([`crate::jacobian`]); a [`HessianPlan`] is a [`JacobianPlan`] built with
//! this recovery map. Errors are those of a Jacobian: O(h) forward, O(h^2) central, times the
//! third derivatives, plus rounding eps/h.
//!
//! # Patterns
//!
//! The pattern given is symmetrized (A + A^T) for coloring and recovery; values are written for
//! exactly the entries given, in their CSR order: a full symmetric pattern gets both triangles,
//! a lower-triangular one (Ipopt's convention) the lower triangle. The dense layout writes the
//! full symmetric n x n matrix. A pattern that is not square is an error.
//!
//! # Least squares: Gauss-Newton
//!
//! For f(x) = 1/2 sum_i r_i(x)^2 with a residual routine r: R^n -> R^m, the Gauss-Newton
//! approximation J^T J needs no gradient routine and no Hessian coloring: trace r, compute J with
//! a [`JacobianPlan`] (colors + 1 evaluations of r), and form J^T J sparse. Its pattern is
//! implied by J's: (j, k) is present when some row of J holds both j and k, which is the column
//! intersection graph the Jacobian's coloring already works on. It is the Hessian minus
//! sum_i r_i H(r_i), exact at a zero-residual solution.

use crate::coloring::{self, Coloring, RowColorCounts};
use crate::driver::BlackBox;
use crate::error::{Error, ErrorKind, Result};
use crate::jacobian::{Entries, JacobianOptions, JacobianPlan, Layout};
use crate::pattern::Pattern;

/// A reusable sparse Hessian for one symmetric pattern, evaluated from a gradient routine at
/// any number of points (see the module docs).
pub struct HessianPlan {
    plan: JacobianPlan,
}

impl HessianPlan {
    /// A plan for the Hessian with pattern `p` (n x n; symmetrized for coloring and recovery):
    /// star-colors the columns ([`JacobianOptions::coloring`] chooses the order) and maps each
    /// value to the gradient component and color group it is read from.
    ///
    /// # Errors
    /// A pattern that is not square, options the Jacobian plan refuses (steps), a saturation
    /// order, [`ErrorKind::OutOfMemory`].
    pub fn new(p: &Pattern, options: &JacobianOptions) -> Result<Self> {
        let s = p.symmetrized()?;
        let n = s.cols();
        // The Jacobian plan checks the options (steps, dense size) on the symmetric pattern.
        let values_len = JacobianPlan::values_len_for(p, options)?;
        let coloring = coloring::star_of_symmetric(&s, &options.coloring)?;
        let colors = &coloring.colors;
        let unique = RowColorCounts::new(&s, colors)?;
        // Where (i, j) is read: the color group, the gradient component and the stepped column.
        // (i, j) and (j, i) are read the same way, so the result is exactly symmetric.
        let source = |i: usize, j: usize| -> Result<(u32, u32, u32)> {
            let (i, j) = (i.min(j), i.max(j));
            let (ci, cj) = (colors[i], colors[j]);
            if i == j || unique.is_unique(i, cj) {
                Ok((cj, i as u32, j as u32))
            } else if unique.is_unique(j, ci) {
                Ok((ci, j as u32, i as u32))
            } else {
                Err(Error::new(
                    ErrorKind::Internal,
                    format!("the star coloring leaves entry ({i}, {j}) unrecoverable"),
                ))
            }
        };
        let mut wanted: Vec<(u32, u32, u32, usize)> = Vec::new();
        let count = if options.layout == Layout::DenseColumnMajor {
            s.nnz()
        } else {
            p.nnz()
        };
        crate::error::reserve(&mut wanted, count, "Hessian entries")?;
        match options.layout {
            Layout::Csr => {
                for i in 0..n {
                    for (k, &j) in (p.row_ptr()[i]..).zip(p.row(i)) {
                        let (g, r, c) = source(i, j as usize)?;
                        wanted.push((g, r, c, k));
                    }
                }
            }
            Layout::Csc => {
                let t = p.transpose()?;
                for j in 0..n {
                    for k in t.col_ptr[j]..t.col_ptr[j + 1] {
                        let (g, r, c) = source(t.row_idx[k] as usize, j)?;
                        wanted.push((g, r, c, k));
                    }
                }
            }
            Layout::DenseColumnMajor => {
                for i in 0..n {
                    for &j in s.row(i) {
                        let (g, r, c) = source(i, j as usize)?;
                        wanted.push((g, r, c, i + j as usize * n));
                    }
                }
            }
        }
        wanted.sort_unstable_by_key(|e| e.0);
        let mut entries = Entries::with_capacity(coloring.num_colors, wanted.len())?;
        let mut next = 0;
        for g in 0..coloring.num_colors as u32 {
            while next < wanted.len() && wanted[next].0 == g {
                let (_, r, c, out) = wanted[next];
                entries.push(r, c, out);
                next += 1;
            }
            entries.end_group();
        }
        drop(wanted);
        Ok(HessianPlan {
            plan: JacobianPlan::from_entries(n, n, options, coloring, entries, values_len)?,
        })
    }

    /// The star coloring.
    pub fn coloring(&self) -> &Coloring {
        self.plan.coloring()
    }

    /// Number of values [`HessianPlan::evaluate`] writes: the pattern's nnz, or n * n dense.
    pub fn values_len(&self) -> usize {
        self.plan.values_len()
    }

    /// Gradient evaluations one Hessian costs (`with_gx`: g(x) supplied).
    pub fn evaluations_per_hessian(&self, with_gx: bool) -> usize {
        self.plan.evaluations_per_jacobian(with_gx)
    }

    /// The Hessian at `x` from the gradient routine `gradient` (n inputs, n outputs) into
    /// `values` ([`HessianPlan::values_len`], in the plan's layout). `gx`, if given, is g(x).
    /// Returns the gradient evaluations made. Allocates nothing.
    ///
    /// # Errors
    /// As [`JacobianPlan::evaluate`].
    pub fn evaluate(
        &mut self,
        gradient: &mut dyn BlackBox,
        x: &[f64],
        gx: Option<&[f64]>,
        values: &mut [f64],
    ) -> Result<usize> {
        self.plan.evaluate(gradient, x, gx, values)
    }

    /// The plan as the Jacobian plan it is built on: its batch form
    /// ([`JacobianPlan::num_points`], [`JacobianPlan::point`], [`JacobianPlan::assemble`])
    /// gives the Hessian's points and assembles the Hessian.
    pub fn as_jacobian_plan(&mut self) -> &mut JacobianPlan {
        &mut self.plan
    }
}

/// One Hessian with a fresh plan (colors the pattern, then evaluates the gradient). For many
/// points, keep a [`HessianPlan`].
pub fn hessian(
    gradient: &mut dyn BlackBox,
    x: &[f64],
    p: &Pattern,
    options: &JacobianOptions,
    values: &mut [f64],
) -> Result<usize> {
    HessianPlan::new(p, options)?.evaluate(gradient, x, None, values)
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;
    use crate::jacobian::Difference;

    /// f(x) = sum_i (x_i^2 x_{i+1}) + c sum_i x_i^3 ... with a global variable: the objective
    /// f = sum_i x_i^3 / 3 + x_i x_{i+1}^2 + x_n * sum_i sin(x_i), gradient by hand, Hessian by
    /// hand.
    fn gradient(x: &[f64], g: &mut [f64]) {
        let n = x.len();
        let z = x[n - 1];
        let k = n - 1; // chain variables 0..k, global z = x[k]
        g.fill(0.0);
        let mut s = 0.0;
        for i in 0..k {
            g[i] += x[i] * x[i] + z * x[i].cos();
            s += x[i].sin();
            if i + 1 < k {
                g[i] += x[i + 1] * x[i + 1];
                g[i + 1] += 2.0 * x[i] * x[i + 1];
            }
        }
        g[k] = s;
    }

    fn hessian_at(x: &[f64]) -> Vec<Vec<f64>> {
        let n = x.len();
        let k = n - 1;
        let z = x[k];
        let mut h = vec![vec![0.0; n]; n];
        for i in 0..k {
            h[i][i] += 2.0 * x[i] - z * x[i].sin();
            h[i][k] += x[i].cos();
            h[k][i] += x[i].cos();
            if i + 1 < k {
                h[i][i + 1] += 2.0 * x[i + 1];
                h[i + 1][i] += 2.0 * x[i + 1];
                h[i + 1][i + 1] += 2.0 * x[i];
            }
        }
        h
    }

    fn pattern_of(h: &[Vec<f64>], lower: bool) -> Pattern {
        let n = h.len();
        let (mut ptr, mut cols) = (vec![0], vec![]);
        for (i, row) in h.iter().enumerate() {
            for (j, _) in row
                .iter()
                .enumerate()
                .filter(|(j, &v)| v != 0.0 && (!lower || *j <= i))
            {
                cols.push(j);
            }
            ptr.push(cols.len());
        }
        Pattern::from_csr(n, n, &ptr, &cols).unwrap()
    }

    #[test]
    fn recovers_the_hessian_of_a_chain_with_a_global_variable() {
        let n = 41;
        let mut rng = crate::rng::Rng::new(5);
        let x: Vec<f64> = (0..n).map(|_| 0.5 + rng.uniform_open0()).collect();
        let h = hessian_at(&x);
        let mut g = |x: &[f64], y: &mut [f64]| {
            gradient(x, y);
            Ok(())
        };
        for lower in [false, true] {
            let p = pattern_of(&h, lower);
            for (difference, tol) in [(Difference::Forward, 1e-6), (Difference::Central, 1e-9)] {
                let o = JacobianOptions {
                    difference,
                    ..JacobianOptions::default()
                };
                let mut plan = HessianPlan::new(&p, &o).unwrap();
                let col = crate::coloring::color(&p.symmetrized().unwrap(), &o.coloring).unwrap();
                assert!(
                    plan.coloring().num_colors <= 4,
                    "{}",
                    plan.coloring().num_colors
                );
                assert_eq!(col.num_colors, n, "the global row forces n column colors");
                let mut v = vec![0.0; plan.values_len()];
                let made = plan.evaluate(&mut g, &x, None, &mut v).unwrap();
                assert_eq!(made, plan.evaluations_per_hessian(false));
                let mut k = 0;
                for i in 0..n {
                    for &j in p.row(i) {
                        let (want, got) = (h[i][j as usize], v[k]);
                        assert!(
                            (got - want).abs() <= tol * want.abs().max(1.0),
                            "{difference:?} lower={lower} ({i}, {j}): {got} vs {want}"
                        );
                        k += 1;
                    }
                }
            }
        }
    }

    #[test]
    fn the_dense_layout_is_the_full_symmetric_matrix() {
        let n = 9;
        let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.1 * i as f64).collect();
        let h = hessian_at(&x);
        let p = pattern_of(&h, true);
        let o = JacobianOptions {
            layout: Layout::DenseColumnMajor,
            difference: Difference::Central,
            ..JacobianOptions::default()
        };
        let mut v = vec![0.0; n * n];
        let mut g = |x: &[f64], y: &mut [f64]| {
            gradient(x, y);
            Ok(())
        };
        hessian(&mut g, &x, &p, &o, &mut v).unwrap();
        for i in 0..n {
            for j in 0..n {
                assert_eq!(v[i + j * n], v[j + i * n], "exactly symmetric");
                assert!((v[i + j * n] - h[i][j]).abs() < 1e-8, "({i}, {j})");
            }
        }
    }

    /// The error falls with the step as the difference's order says: halving h halves a
    /// forward difference's error and quarters a central one's.
    #[test]
    fn the_error_follows_the_difference_order() {
        let n = 21;
        let x: Vec<f64> = (0..n).map(|i| 0.2 + 0.05 * i as f64).collect();
        let h = hessian_at(&x);
        let p = pattern_of(&h, false);
        let mut g = |x: &[f64], y: &mut [f64]| {
            gradient(x, y);
            Ok(())
        };
        let mut max_error = |difference, step| {
            let o = JacobianOptions {
                difference,
                step: crate::jacobian::Step::Absolute(step),
                ..JacobianOptions::default()
            };
            let mut v = vec![0.0; p.nnz()];
            hessian(&mut g, &x, &p, &o, &mut v).unwrap();
            let mut k = 0;
            let mut worst = 0.0f64;
            for i in 0..n {
                for &j in p.row(i) {
                    worst = worst.max((v[k] - h[i][j as usize]).abs());
                    k += 1;
                }
            }
            worst
        };
        let forward = max_error(Difference::Forward, 1e-3) / max_error(Difference::Forward, 5e-4);
        let central = max_error(Difference::Central, 1e-2) / max_error(Difference::Central, 5e-3);
        assert!((1.8..2.2).contains(&forward), "forward ratio {forward}");
        assert!((3.6..4.4).contains(&central), "central ratio {central}");
    }

    #[test]
    fn a_rectangular_pattern_is_an_error() {
        let p = Pattern::from_csr(2, 3, &[0, 1, 2], &[0, 2]).unwrap();
        let e = HessianPlan::new(&p, &JacobianOptions::default())
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("square"), "{e}");
    }
}
