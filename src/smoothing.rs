//! Jacobians of the Gaussian-smoothed function, for black boxes that branch.
//!
//! # Problem
//!
//! A simulation that branches on its inputs (thresholds, regimes, event logic) is piecewise:
//! finite differences across a jump give zero or a spike. Optimizers can use instead the
//! Jacobian of the *smoothed* function `f_sigma(x) = E[f(x + S eps)]`, `eps ~ N(0, I_n)`,
//! `S = diag(sigma_j)`, with all inputs perturbed together (Kreikemeyer and Andelfinger,
//! "Smoothing methods for automatic differentiation across conditional branches"). For a black
//! box only sampling estimators apply. Stein's identity gives
//! `d f_sigma,i / d x_j = E[D_i eps_j] / sigma_j` with the antithetic difference
//! `D = (f(x + S eps) - f(x - S eps)) / 2`, which the full-dimensional antithetic estimator
//! averages over samples. Its variance in entry (i, j) includes everything else D_i does: the
//! other inputs of the row, however smooth their part, add noise to every entry.
//!
//! # Estimator
//!
//! The pattern says which inputs row i can depend on (S_i, d_i of them): D_i is a function of
//! `eps` restricted to S_i alone. So each row is a small regression: D_i on `eps[S_i]` over the
//! N samples, `beta = G^-1 b` with `G = sum eps_S eps_S^T`, `b = sum eps_S D_i`. Since
//! `E[eps eps^T] = I`, beta converges to `E[eps_S D_i]`, the same smoothed Jacobian row (times
//! sigma): consistent, for the joint smoothing as defined above. What the regression removes is
//! the part of D_i linear in the row's own perturbations, exactly the cross-talk between inputs
//! that makes the plain average noisy (a linear row is recovered exactly). Entries outside the
//! pattern are exact zeros, not noise.
//!
//! Each entry gets a standard error: heteroscedasticity-robust, since residuals of a discontinuous
//! f depend on where the sample fell: the sandwich `G^-1 (sum r_k^2 eps_S eps_S^T) G^-1` with each
//! residual divided by one minus its leverage (MacKinnon and White's HC3, which stays honest with
//! few samples per input). Rows with too few samples for their regression (N < 2 d_i + 2), rows
//! longer than 64 inputs, and rows whose G is singular use the plain average, with the sample
//! standard deviation of `D_i eps_j` as their error.
//!
//! Perturbing one color class at a time while holding the others at x0 estimates a different,
//! *partial* smoothing (for `y = H(x_a - x_b)` it gives `phi(d / sigma) / sigma` where the joint
//! smoothing's is `phi(d / (sigma sqrt 2)) / (sigma sqrt 2)`); nanprop does not offer it.
//!
//! # Cost
//!
//! 2 N evaluations of f (N samples, each antithetic). Time O(N (n + m + sum_i d_i^2)), memory
//! O(n + m + sum_i d_i^2), plus N values for each regression row when standard errors are asked
//! for (the second pass over the samples needs the differences; the perturbations are
//! regenerated from the seed, not kept).
//!
//! # Where the pattern comes from
//!
//! The pattern must hold every input a row can reach *within the smoothing's reach*, not only at
//! x0. NaN tracing at x0 alone can miss an input that only reaches a row through a comparison
//! (`H(x_a - x_b)` with the NaN sent down the branch x0 takes). Trace at points sampled around
//! x0 on the smoothing's own scale ([`crate::TraceOptions::sample_points`], with
//! [`crate::TraceOptions::sample_scale`] a few times a relative sigma, or chosen points with
//! [`crate::trace_points`]), so that the branches the samples will take are in the union. An
//! input missing from a row's pattern makes that row's estimate inconsistent (its effect
//! becomes residual noise); an input in the pattern that the row does not use costs a little
//! variance, never bias.

use crate::driver::guard::Guarded;
use crate::driver::BlackBox;
use crate::error::{filled, reserve, Error, ErrorKind, Result};
use crate::pattern::Pattern;
use crate::rng::Rng;

/// How `sigma` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SigmaKind {
    /// `sigma_j = sigma * max(|x_j|, 1)`.
    #[default]
    Relative,
    /// `sigma_j = sigma`.
    Absolute,
}

/// Which estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Estimator {
    /// Per-row regression on the row's own perturbations (module docs). The default.
    #[default]
    Regression,
    /// The full-dimensional antithetic average `mean(D_i eps_j) / sigma_j`, read on the
    /// pattern's entries: what the estimators that ignore the pattern give there (for
    /// comparison).
    Average,
}

/// Options of [`smoothed_jacobian`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SmoothingOptions {
    /// The smoothing scale (default 0.01, relative).
    pub sigma: f64,
    /// How `sigma` is read.
    pub sigma_kind: SigmaKind,
    /// Samples N (default 100); each costs two evaluations.
    pub samples: usize,
    /// Seed of the perturbations.
    pub seed: u64,
    /// Which estimator.
    pub estimator: Estimator,
}

impl Default for SmoothingOptions {
    fn default() -> Self {
        SmoothingOptions {
            sigma: 0.01,
            sigma_kind: SigmaKind::Relative,
            samples: 100,
            seed: 0,
            estimator: Estimator::Regression,
        }
    }
}

impl SmoothingOptions {
    /// Trace options that sample points on this smoothing's scale around x0, so that the
    /// branches the samples take are in the pattern (module docs): `base` with 8 sampled points
    /// at 3 sigma (as a relative scale), unless it samples points already.
    pub fn trace_options(&self, base: crate::TraceOptions) -> crate::TraceOptions {
        if base.sample_points > 0 {
            return base;
        }
        crate::TraceOptions {
            sample_points: 8,
            sample_scale: 3.0 * self.sigma,
            ..base
        }
    }
}

/// Rows longer than this use the plain average (a regression's matrix grows as d^2).
const MAX_REGRESSION: usize = 64;

/// The Jacobian of the Gaussian-smoothed f at `x0` on pattern `p` (module docs): `values`
/// receives p.nnz() values in CSR order, `std_errors` (if given) one standard error per value.
/// Returns the evaluations made (2 samples).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`]: lengths that do not match `p`, `x0` not finite, sigma not
/// finite and positive, fewer than 2 samples, a perturbation too small to change some x_j;
/// [`ErrorKind::BlackBox`]: f failed or gave NaN/Inf in a row with entries at a sample (the
/// message names the sample); [`ErrorKind::OutOfMemory`].
pub fn smoothed_jacobian(
    f: &mut dyn BlackBox,
    x0: &[f64],
    p: &Pattern,
    options: &SmoothingOptions,
    values: &mut [f64],
    std_errors: Option<&mut [f64]>,
) -> Result<usize> {
    let _fp = crate::fpenv::FpGuard::enter();
    let (m, n, nnz) = (p.rows(), p.cols(), p.nnz());
    check_arguments(x0, p, options, values.len(), std_errors.as_deref())?;
    let sigma = {
        let mut s = filled(0.0, n, "sigmas")?;
        for (j, s) in s.iter_mut().enumerate() {
            *s = match options.sigma_kind {
                SigmaKind::Relative => options.sigma * x0[j].abs().max(1.0),
                SigmaKind::Absolute => options.sigma,
            };
            if x0[j] + *s == x0[j] {
                return Err(Error::invalid(format!(
                    "sigma_{j} = {s:e} does not change x0[{j}] = {}",
                    x0[j]
                )));
            }
        }
        s
    };
    let big_n = options.samples;
    let rows = RowModels::new(p, options, big_n)?;
    let keep = std_errors.is_some();
    // Antithetic differences of the regression rows, sample after sample (only for errors).
    let mut kept = Vec::new();
    if keep {
        let count = rows
            .regression_rows
            .checked_mul(big_n)
            .ok_or_else(|| Error::out_of_memory("antithetic differences", usize::MAX))?;
        reserve(&mut kept, count, "antithetic differences")?;
    }
    let mut ev = Guarded::new(n, m)?;
    let mut eps = filled(0.0, n, "perturbations")?;
    let mut plus = filled(0.0, m, "outputs")?;
    let mut d = filled(0.0, m, "differences")?;
    let mut acc = Accumulators::new(&rows, nnz)?;
    for k in 0..big_n {
        draw(options.seed, k, &mut eps);
        for sign in [1.0, -1.0] {
            let input = ev.input_mut();
            for j in 0..n {
                input[j] = x0[j] + sign * sigma[j] * eps[j];
            }
            ev.call(f).map_err(|failure| {
                Error::new(
                    ErrorKind::BlackBox,
                    format!("the black box {failure} on smoothing sample {k} ({sign:+} side)"),
                )
            })?;
            let y = ev.output();
            if let Some(i) =
                (0..m).find(|&i| !y[i].is_finite() && p.row_ptr()[i] < p.row_ptr()[i + 1])
            {
                return Err(Error::new(
                    ErrorKind::BlackBox,
                    format!(
                        "y[{i}] = {} on smoothing sample {k} ({sign:+} side): rows with entries \
                         must stay finite",
                        y[i]
                    ),
                ));
            }
            if sign > 0.0 {
                plus.copy_from_slice(y);
            } else {
                for i in 0..m {
                    d[i] = 0.5 * (plus[i] - y[i]);
                }
            }
        }
        acc.add(p, &rows, &eps, &d);
        if keep {
            kept.extend(
                (0..m)
                    .filter(|&i| rows.regression[i].is_some())
                    .map(|i| d[i]),
            );
        }
    }
    acc.finish(p, &rows, &sigma, options.seed, &kept, values, std_errors)?;
    Ok(2 * big_n)
}

fn check_arguments(
    x0: &[f64],
    p: &Pattern,
    options: &SmoothingOptions,
    values_len: usize,
    std_errors: Option<&[f64]>,
) -> Result<()> {
    let (n, nnz) = (p.cols(), p.nnz());
    if x0.len() != n {
        return Err(Error::invalid(format!(
            "x0 has {} entries, expected n = {n}",
            x0.len()
        )));
    }
    if let Some(j) = x0.iter().position(|v| !v.is_finite()) {
        return Err(Error::invalid(format!("x0[{j}] = {} is not finite", x0[j])));
    }
    if values_len != nnz || std_errors.is_some_and(|s| s.len() != nnz) {
        return Err(Error::invalid(format!(
            "values and std_errors must hold nnz = {nnz} entries"
        )));
    }
    if !(options.sigma.is_finite() && options.sigma > 0.0) {
        return Err(Error::invalid(format!(
            "sigma = {} must be finite and positive",
            options.sigma
        )));
    }
    if options.samples < 2 {
        return Err(Error::invalid(format!(
            "samples = {} (at least 2 are needed for an estimate and its error)",
            options.samples
        )));
    }
    Ok(())
}

/// The perturbation of sample `k`: n standard normal values from (seed, k), the same on every
/// call (the error pass regenerates them instead of keeping N x n values).
fn draw(seed: u64, k: usize, eps: &mut [f64]) {
    let mut rng = Rng::new(
        seed ^ (k as u64)
            .wrapping_add(1)
            .wrapping_mul(0xD1B5_4A32_D192_ED03),
    );
    eps.iter_mut().for_each(|e| *e = rng.normal());
}

/// Which rows are regressions, and where each one's packed matrix and vector live.
struct RowModels {
    /// Per row: the offset of its d x d matrix in the matrix store, or None (plain average).
    regression: Vec<Option<usize>>,
    regression_rows: usize,
    matrix_len: usize,
}

impl RowModels {
    fn new(p: &Pattern, options: &SmoothingOptions, samples: usize) -> Result<Self> {
        let mut regression = filled(None, p.rows(), "row models")?;
        let (mut offset, mut count) = (0usize, 0usize);
        for (i, r) in regression.iter_mut().enumerate() {
            let d = p.row(i).len();
            if options.estimator == Estimator::Regression
                && d > 0
                && d <= MAX_REGRESSION
                && samples >= 2 * d + 2
            {
                *r = Some(offset);
                offset += d * d;
                count += 1;
            }
        }
        Ok(RowModels {
            regression,
            regression_rows: count,
            matrix_len: offset,
        })
    }
}

/// Running sums over the samples.
struct Accumulators {
    /// Per entry: sum of D_i eps_j and of its square (the plain average and its error).
    s1: Vec<f64>,
    s2: Vec<f64>,
    /// Per regression row: sum of eps_S eps_S^T (d x d, row-major).
    gram: Vec<f64>,
    samples: usize,
}

impl Accumulators {
    fn new(rows: &RowModels, nnz: usize) -> Result<Self> {
        Ok(Accumulators {
            s1: filled(0.0, nnz, "sums")?,
            s2: filled(0.0, nnz, "sums")?,
            gram: filled(0.0, rows.matrix_len, "regression matrices")?,
            samples: 0,
        })
    }

    fn add(&mut self, p: &Pattern, rows: &RowModels, eps: &[f64], d: &[f64]) {
        self.samples += 1;
        for (i, &di) in d.iter().enumerate() {
            let (cols, base) = (p.row(i), p.row_ptr()[i]);
            for (k, &j) in cols.iter().enumerate() {
                let z = di * eps[j as usize];
                self.s1[base + k] += z;
                self.s2[base + k] += z * z;
            }
            if let Some(off) = rows.regression[i] {
                let dim = cols.len();
                for (a, &ja) in cols.iter().enumerate() {
                    let ea = eps[ja as usize];
                    for (b, &jb) in cols.iter().enumerate().take(a + 1) {
                        self.gram[off + a * dim + b] += ea * eps[jb as usize];
                    }
                }
            }
        }
    }

    /// The estimates (and errors) into `values` (and `std_errors`).
    #[allow(clippy::too_many_arguments)]
    fn finish(
        mut self,
        p: &Pattern,
        rows: &RowModels,
        sigma: &[f64],
        seed: u64,
        kept: &[f64],
        values: &mut [f64],
        mut std_errors: Option<&mut [f64]>,
    ) -> Result<()> {
        let big_n = self.samples as f64;
        // Plain averages first, for every entry (regression rows overwrite theirs).
        for i in 0..p.rows() {
            for (k, &j) in (p.row_ptr()[i]..).zip(p.row(i)) {
                let mean = self.s1[k] / big_n;
                values[k] = mean / sigma[j as usize];
                if let Some(se) = std_errors.as_deref_mut() {
                    let var = ((self.s2[k] / big_n - mean * mean) * big_n / (big_n - 1.0)).max(0.0);
                    se[k] = (var / big_n).sqrt() / sigma[j as usize];
                }
            }
        }
        // Regressions: Cholesky of each row's matrix in place; a singular one keeps the average.
        let mut solved = filled(false, p.rows(), "rows solved")?;
        let mut beta = filled(0.0, p.nnz(), "coefficients")?;
        for (i, done) in solved.iter_mut().enumerate() {
            let Some(off) = rows.regression[i] else {
                continue;
            };
            let dim = p.row(i).len();
            let g = &mut self.gram[off..off + dim * dim];
            if !cholesky(g, dim) {
                continue;
            }
            let base = p.row_ptr()[i];
            let b = &mut beta[base..base + dim];
            b.copy_from_slice(&self.s1[base..base + dim]);
            solve(g, dim, b);
            for (k, &j) in (base..).zip(p.row(i)) {
                values[k] = beta[k] / sigma[j as usize];
            }
            *done = true;
        }
        let Some(se) = std_errors else {
            return Ok(());
        };
        // Second pass for the sandwich: regenerate each sample's perturbation, read its kept
        // differences, and add r^2 (G^-1 eps_S)_j^2 for every entry of every solved row.
        let n = p.cols();
        let mut eps = filled(0.0, n, "perturbations")?;
        let mut meat = filled(0.0, p.nnz(), "error sums")?;
        let mut z = filled(0.0, MAX_REGRESSION, "a row's perturbations")?;
        let reg_rows: Vec<usize> = crate::error::collect(
            (0..p.rows()).filter(|&i| rows.regression[i].is_some()),
            "regression rows",
        )?;
        for k in 0..self.samples {
            draw(seed, k, &mut eps);
            let row_d = &kept[k * reg_rows.len()..(k + 1) * reg_rows.len()];
            for (&i, &di) in reg_rows.iter().zip(row_d) {
                if !solved[i] {
                    continue;
                }
                let (cols, base) = (p.row(i), p.row_ptr()[i]);
                let dim = cols.len();
                let mut r = di;
                for (a, &j) in cols.iter().enumerate() {
                    z[a] = eps[j as usize];
                    r -= beta[base + a] * z[a];
                }
                let off = rows.regression[i].expect("a regression row");
                let mut leverage = 0.0;
                solve(&self.gram[off..off + dim * dim], dim, &mut z[..dim]);
                for (a, &j) in cols.iter().enumerate() {
                    leverage += eps[j as usize] * z[a];
                }
                // HC3: each residual scaled by 1 / (1 - its leverage), which keeps the
                // errors honest with few samples per input.
                let r = r / (1.0 - leverage.min(0.99));
                for a in 0..dim {
                    meat[base + a] += r * r * z[a] * z[a];
                }
            }
        }
        for &i in &reg_rows {
            if !solved[i] {
                continue;
            }
            let (cols, base) = (p.row(i), p.row_ptr()[i]);
            for (k, &j) in (base..).zip(cols) {
                se[k] = meat[k].sqrt() / sigma[j as usize];
            }
        }
        Ok(())
    }
}

/// In-place Cholesky factorization of the symmetric d x d matrix `g` (lower triangle, row-major)
/// into L (lower triangle). False when it is not positive definite (to working precision).
fn cholesky(g: &mut [f64], d: usize) -> bool {
    for j in 0..d {
        let mut s = g[j * d + j];
        for k in 0..j {
            s -= g[j * d + k] * g[j * d + k];
        }
        if s.is_nan() || s <= 1e-12 * g[j * d + j].abs().max(f64::MIN_POSITIVE) {
            return false;
        }
        let l = s.sqrt();
        g[j * d + j] = l;
        for i in j + 1..d {
            let mut t = g[i * d + j];
            for k in 0..j {
                t -= g[i * d + k] * g[j * d + k];
            }
            g[i * d + j] = t / l;
        }
    }
    true
}

/// Solves (L L^T) x = b in place, L from [`cholesky`].
fn solve(l: &[f64], d: usize, b: &mut [f64]) {
    for i in 0..d {
        let mut t = b[i];
        for k in 0..i {
            t -= l[i * d + k] * b[k];
        }
        b[i] = t / l[i * d + i];
    }
    for i in (0..d).rev() {
        let mut t = b[i];
        for k in i + 1..d {
            t -= l[k * d + i] * b[k];
        }
        b[i] = t / l[i * d + i];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_solves_a_small_system() {
        // G = [[4, 2], [2, 3]] (lower triangle stored), b = [2, 1] -> x = [0.5, 0].
        let mut g = vec![4.0, 0.0, 2.0, 3.0];
        assert!(cholesky(&mut g, 2));
        let mut b = vec![2.0, 1.0];
        solve(&g, 2, &mut b);
        assert!((b[0] - 0.5).abs() < 1e-15 && b[1].abs() < 1e-15, "{b:?}");
        let mut singular = vec![1.0, 0.0, 1.0, 1.0];
        assert!(!cholesky(&mut singular, 2));
    }

    #[test]
    fn a_linear_row_is_recovered_exactly_by_regression_and_not_by_the_average() {
        // y0 = 3 x0 - 2 x1 + 5 x2, y1 = x1: the smoothed Jacobian is the Jacobian.
        let p = Pattern::from_csr(2, 3, &[0, 3, 4], &[0, 1, 2, 1]).unwrap();
        let mut f = |x: &[f64], y: &mut [f64]| {
            y[0] = 3.0 * x[0] - 2.0 * x[1] + 5.0 * x[2];
            y[1] = x[1];
            Ok(())
        };
        let x0 = [1.0, -2.0, 0.5];
        let mut v = [0.0; 4];
        let mut se = [0.0; 4];
        let o = SmoothingOptions {
            samples: 20,
            ..SmoothingOptions::default()
        };
        let made = smoothed_jacobian(&mut f, &x0, &p, &o, &mut v, Some(&mut se)).unwrap();
        assert_eq!(made, 40);
        for (got, want) in v.iter().zip([3.0, -2.0, 5.0, 1.0]) {
            assert!((got - want).abs() < 1e-6, "{v:?}");
        }
        assert!(se.iter().all(|&s| s < 1e-5), "{se:?}");
        let avg = SmoothingOptions {
            estimator: Estimator::Average,
            ..o
        };
        smoothed_jacobian(&mut f, &x0, &p, &avg, &mut v, Some(&mut se)).unwrap();
        assert!(
            (v[0] - 3.0).abs() > 1e-3,
            "the average carries the other inputs' noise"
        );
        assert!(se[0] > 0.1, "{se:?}");
    }
}
