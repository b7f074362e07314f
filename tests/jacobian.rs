//! Compressed finite-difference Jacobians against analytic ones, with patterns traced by
//! nanprop itself.

use nanprop::coloring::{self, ColoringOptions};
use nanprop::jacobian::{jacobian, Difference, JacobianOptions, JacobianPlan, Layout, Step};
use nanprop::{trace, ErrorKind, Pattern, TraceOptions};

/// A test problem: f, its analytic Jacobian entry (i, j), m, and a point.
struct Problem {
    name: &'static str,
    m: usize,
    x: Vec<f64>,
    f: fn(&[f64], &mut [f64]),
    jac: fn(&[f64], usize, usize) -> f64,
}

fn tridiagonal(x: &[f64], y: &mut [f64]) {
    let n = x.len();
    for i in 0..n {
        let l = if i > 0 { x[i - 1] } else { 0.0 };
        let r = if i + 1 < n { x[i + 1] } else { 0.0 };
        y[i] = l - 2.0 * x[i] + r + x[i].powi(3);
    }
}
fn tridiagonal_jac(x: &[f64], i: usize, j: usize) -> f64 {
    if i == j {
        -2.0 + 3.0 * x[i] * x[i]
    } else {
        1.0
    }
}

/// MINPACK's Broyden banded function (ml = 5, mu = 1).
fn broyden(x: &[f64], y: &mut [f64]) {
    let n = x.len();
    for i in 0..n {
        let band = i.saturating_sub(5)..(i + 2).min(n);
        let s: f64 = band.filter(|&j| j != i).map(|j| x[j] * (1.0 + x[j])).sum();
        y[i] = x[i] * (2.0 + 5.0 * x[i] * x[i]) + 1.0 - s;
    }
}
fn broyden_jac(x: &[f64], i: usize, j: usize) -> f64 {
    if i == j {
        2.0 + 15.0 * x[i] * x[i]
    } else {
        -(1.0 + 2.0 * x[j])
    }
}

const G: usize = 12;
/// Bratu: -Laplace(u) - lambda exp(u) on a G x G grid, 5-point stencil.
fn bratu(u: &[f64], y: &mut [f64]) {
    let (h2, lambda) = (1.0 / ((G + 1) * (G + 1)) as f64, 6.0);
    for k in 0..G * G {
        let (a, b) = (k / G, k % G);
        let mut s = 4.0 * u[k];
        if a > 0 {
            s -= u[k - G];
        }
        if a + 1 < G {
            s -= u[k + G];
        }
        if b > 0 {
            s -= u[k - 1];
        }
        if b + 1 < G {
            s -= u[k + 1];
        }
        y[k] = s - h2 * lambda * u[k].exp();
    }
}
fn bratu_jac(u: &[f64], i: usize, j: usize) -> f64 {
    let (h2, lambda) = (1.0 / ((G + 1) * (G + 1)) as f64, 6.0);
    if i == j {
        4.0 - h2 * lambda * u[i].exp()
    } else {
        -1.0
    }
}

const CELLS: usize = 10;
/// Robertson kinetics in each of CELLS cells (3 species), with diffusion between neighbours.
fn robertson(y: &[f64], dy: &mut [f64]) {
    let d = 0.3;
    for c in 0..CELLS {
        let s = |c: usize, k: usize| y[3 * c + k];
        let (a, b, e) = (s(c, 0), s(c, 1), s(c, 2));
        let r = [
            -0.04 * a + 1e4 * b * e,
            0.04 * a - 1e4 * b * e - 3e7 * b * b,
            3e7 * b * b,
        ];
        for k in 0..3 {
            let l = if c > 0 { s(c - 1, k) } else { s(c, k) };
            let rr = if c + 1 < CELLS { s(c + 1, k) } else { s(c, k) };
            dy[3 * c + k] = r[k] + d * (l - 2.0 * s(c, k) + rr);
        }
    }
}
fn robertson_jac(y: &[f64], i: usize, j: usize) -> f64 {
    let d = 0.3;
    let (ci, ki, cj, kj) = (i / 3, i % 3, j / 3, j % 3);
    let mut v = 0.0;
    if ci == cj {
        let (a, b, e) = (y[3 * ci], y[3 * ci + 1], y[3 * ci + 2]);
        let _ = a;
        let local = [
            [-0.04, 1e4 * e, 1e4 * b],
            [0.04, -1e4 * e - 6e7 * b, -1e4 * b],
            [0.0, 6e7 * b, 0.0],
        ];
        v += local[ki][kj];
        if ki == kj {
            let neighbours = usize::from(ci > 0) + usize::from(ci + 1 < CELLS);
            v -= d * neighbours as f64;
        }
    } else if ki == kj && (ci + 1 == cj || cj + 1 == ci) {
        v += d;
    }
    v
}

fn problems() -> Vec<Problem> {
    vec![
        Problem {
            name: "tridiagonal",
            m: 50,
            x: (0..50).map(|j| 0.3 + 0.02 * j as f64).collect(),
            f: tridiagonal,
            jac: tridiagonal_jac,
        },
        Problem {
            name: "Broyden banded",
            m: 40,
            x: (0..40).map(|j| -1.0 + 0.01 * j as f64).collect(),
            f: broyden,
            jac: broyden_jac,
        },
        Problem {
            name: "Bratu 2-D",
            m: G * G,
            x: (0..G * G).map(|k| 0.1 + 0.001 * k as f64).collect(),
            f: bratu,
            jac: bratu_jac,
        },
        Problem {
            name: "Robertson cells",
            m: 3 * CELLS,
            x: (0..3 * CELLS)
                .map(|k| [1.0, 3.6e-5, 0.1][k % 3] * (1.0 + 0.01 * k as f64))
                .collect(),
            f: robertson,
            jac: robertson_jac,
        },
    ]
}

fn traced(p: &Problem) -> Pattern {
    let mut f = |x: &[f64], y: &mut [f64]| {
        (p.f)(x, y);
        Ok(())
    };
    trace(&mut f, p.m, &p.x, &TraceOptions::default()).expect("trace")
}

/// Largest error relative to max(|J_ij|, 1) over the pattern, values in CSR order.
fn max_error(p: &Problem, pat: &Pattern, values: &[f64]) -> f64 {
    let mut worst: f64 = 0.0;
    for i in 0..pat.rows() {
        for (k, &j) in pat.row(i).iter().enumerate() {
            let exact = (p.jac)(&p.x, i, j as usize);
            let got = values[pat.row_ptr()[i] + k];
            worst = worst.max((got - exact).abs() / exact.abs().max(1.0));
        }
    }
    worst
}

fn run(p: &Problem, pat: &Pattern, options: &JacobianOptions) -> (Vec<f64>, usize) {
    let mut f = |x: &[f64], y: &mut [f64]| {
        (p.f)(x, y);
        Ok(())
    };
    let mut plan = JacobianPlan::new(pat, options).unwrap();
    let mut values = vec![0.0; plan.values_len()];
    let evals = plan.evaluate(&mut f, &p.x, None, &mut values).unwrap();
    (values, evals)
}

#[test]
fn forward_and_central_match_analytic_jacobians() {
    for p in problems() {
        let pat = traced(&p);
        // The trace finds exactly the analytic structure (entries where J can be nonzero).
        let colors = coloring::color(&pat, &ColoringOptions::default())
            .unwrap()
            .num_colors;
        let fw = JacobianOptions::default();
        let ce = JacobianOptions {
            difference: Difference::Central,
            ..Default::default()
        };
        let (vf, ef) = run(&p, &pat, &fw);
        let (vc, ec) = run(&p, &pat, &ce);
        assert_eq!(ef, colors + 1, "{}", p.name);
        assert_eq!(ec, 2 * colors, "{}", p.name);
        let (errf, errc) = (max_error(&p, &pat, &vf), max_error(&p, &pat, &vc));
        println!(
            "{}: n = {}, colors = {colors}, forward error {errf:.2e}, central {errc:.2e}",
            p.name,
            p.x.len()
        );
        // Forward truncation error ~ h |f''| / 2 / |f'|. For Robertson the default step
        // sqrt(eps) * max(|y2|, 1) is 400 times y2 = 3.6e-5, and the 3e7 y2^2 term gives
        // h / (2 y2) = 2.1e-4: the expected value, not a defect.
        let tolerance = if p.name == "Robertson cells" {
            3e-4
        } else {
            1e-6
        };
        assert!(errf < tolerance, "{}: forward error {errf}", p.name);
        assert!(errc < 1e-7, "{}: central error {errc}", p.name);
        assert!(colors < p.x.len(), "{}: compression", p.name);
    }
}

#[test]
fn error_follows_the_difference_order() {
    // With absolute steps large enough for truncation to dominate rounding, a 10x smaller step
    // gives ~10x smaller forward error and ~100x smaller central error.
    for p in problems()
        .into_iter()
        .filter(|p| p.name != "Robertson cells")
    {
        let pat = traced(&p);
        let err = |difference, h: f64| {
            let o = JacobianOptions {
                difference,
                step: Step::Absolute(h),
                ..Default::default()
            };
            max_error(&p, &pat, &run(&p, &pat, &o).0)
        };
        let (f1, f2) = (
            err(Difference::Forward, 1e-2),
            err(Difference::Forward, 1e-3),
        );
        let (c1, c2) = (
            err(Difference::Central, 1e-2),
            err(Difference::Central, 1e-3),
        );
        println!(
            "{}: forward {f1:.2e} -> {f2:.2e}, central {c1:.2e} -> {c2:.2e}",
            p.name
        );
        assert!(
            (5.0..20.0).contains(&(f1 / f2)),
            "{}: forward ratio {}",
            p.name,
            f1 / f2
        );
        assert!(
            (50.0..200.0).contains(&(c1 / c2)),
            "{}: central ratio {}",
            p.name,
            c1 / c2
        );
    }
}

#[test]
fn layouts_agree_and_fx_saves_an_evaluation() {
    let p = &problems()[1];
    let pat = traced(p);
    let (csr, e) = run(p, &pat, &JacobianOptions::default());
    let (csc, _) = run(
        p,
        &pat,
        &JacobianOptions {
            layout: Layout::Csc,
            ..Default::default()
        },
    );
    let (dense, _) = run(
        p,
        &pat,
        &JacobianOptions {
            layout: Layout::DenseColumnMajor,
            ..Default::default()
        },
    );
    let t = pat.transpose().unwrap();
    let n = pat.cols();
    for j in 0..n {
        for k in t.col_ptr[j]..t.col_ptr[j + 1] {
            let i = t.row_idx[k] as usize;
            assert_eq!(csc[k], csr[t.csr_pos[k]]);
            assert_eq!(dense[i + j * p.m], csr[t.csr_pos[k]]);
        }
    }
    assert_eq!(dense.iter().filter(|v| **v != 0.0).count(), pat.nnz());
    // The plan reused at another point with f(x) supplied: one evaluation fewer.
    let mut f = |x: &[f64], y: &mut [f64]| {
        broyden(x, y);
        Ok(())
    };
    let mut plan = JacobianPlan::new(&pat, &JacobianOptions::default()).unwrap();
    let mut fx = vec![0.0; p.m];
    broyden(&p.x, &mut fx);
    let mut values = vec![0.0; plan.values_len()];
    assert_eq!(
        plan.evaluate(&mut f, &p.x, Some(&fx), &mut values).unwrap(),
        e - 1
    );
    assert_eq!(values, csr);
}

#[test]
fn per_column_and_relative_steps() {
    let p = &problems()[0];
    let pat = traced(p);
    let n = p.x.len();
    for step in [
        Step::Relative(1e-7),
        Step::AbsolutePerColumn(vec![1e-7; n]),
        Step::RelativePerColumn((0..n).map(|j| 1e-8 * (1 + j % 3) as f64).collect()),
    ] {
        let (v, _) = run(
            p,
            &pat,
            &JacobianOptions {
                step: step.clone(),
                ..Default::default()
            },
        );
        assert!(max_error(p, &pat, &v) < 1e-5, "{step:?}");
    }
    let bad = JacobianPlan::new(
        &pat,
        &JacobianOptions {
            step: Step::AbsolutePerColumn(vec![1e-7; 3]),
            ..Default::default()
        },
    );
    assert!(bad.is_err());
    assert!(JacobianPlan::new(
        &pat,
        &JacobianOptions {
            step: Step::Absolute(0.0),
            ..Default::default()
        }
    )
    .is_err());
    // A step too small to change x is refused, not divided by.
    let mut plan = JacobianPlan::new(
        &pat,
        &JacobianOptions {
            step: Step::Absolute(1e-300),
            ..Default::default()
        },
    )
    .unwrap();
    let mut values = vec![0.0; plan.values_len()];
    let mut f = |x: &[f64], y: &mut [f64]| {
        tridiagonal(x, y);
        Ok(())
    };
    let e = plan.evaluate(&mut f, &p.x, None, &mut values).unwrap_err();
    assert!(e.message.contains("vanishes"), "{}", e.message);
}

#[test]
fn non_finite_outputs_are_errors_naming_the_group() {
    // y1 = sqrt(x1 - 1) at x1 = 1: the +h evaluation is fine, the -h one is NaN.
    let pat = Pattern::from_csr(2, 2, &[0, 1, 2], &[0, 1]).unwrap();
    let mut f = |x: &[f64], y: &mut [f64]| {
        y[0] = x[0] * 2.0;
        y[1] = (x[1] - 1.0).sqrt();
        Ok(())
    };
    let central = JacobianOptions {
        difference: Difference::Central,
        ..Default::default()
    };
    let mut values = [0.0; 2];
    let e = jacobian(&mut f, &[3.0, 1.0], &pat, &central, &mut values).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BlackBox);
    assert!(
        e.message.contains("column group")
            && e.message.contains("-h")
            && e.message.contains("y[1]"),
        "{}",
        e.message
    );
    // Not finite at x itself: the baseline error.
    let e = jacobian(
        &mut f,
        &[3.0, 0.5],
        &pat,
        &JacobianOptions::default(),
        &mut values,
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::BaselineNotFinite);
    // Wrong sizes.
    assert!(jacobian(
        &mut f,
        &[3.0],
        &pat,
        &JacobianOptions::default(),
        &mut values
    )
    .is_err());
    assert!(jacobian(
        &mut f,
        &[3.0, 2.0],
        &pat,
        &JacobianOptions::default(),
        &mut [0.0; 3]
    )
    .is_err());
}
