//! Smoothed Jacobians against closed forms: the Heaviside chain and the threshold model
//! (nanprop::testing::branching), at equal evaluation counts against the full-dimensional
//! antithetic estimator, with standard errors that cover the truth.

use nanprop::smoothing::{smoothed_jacobian, Estimator, SigmaKind, SmoothingOptions};
use nanprop::testing::branching;
use nanprop::{Pattern, TraceOptions};

const SIGMA: f64 = 0.1;

/// Inputs whose neighbouring differences are of the order of sigma (the steps matter).
fn x0(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = nanprop::rng::Rng::new(seed);
    (0..n)
        .map(|_| 1.0 + 1.5 * SIGMA * (2.0 * rng.uniform_open0() - 1.0))
        .collect()
}

fn run(
    model: fn(&[f64], &mut [f64]),
    x: &[f64],
    p: &Pattern,
    samples: usize,
    estimator: Estimator,
    seed: u64,
) -> (Vec<f64>, Vec<f64>, usize) {
    let mut f = |x: &[f64], y: &mut [f64]| {
        model(x, y);
        Ok(())
    };
    let o = SmoothingOptions {
        sigma: SIGMA,
        sigma_kind: SigmaKind::Absolute,
        samples,
        seed,
        estimator,
    };
    let mut v = vec![0.0; p.nnz()];
    let mut se = vec![0.0; p.nnz()];
    let made = smoothed_jacobian(&mut f, x, p, &o, &mut v, Some(&mut se)).unwrap();
    (v, se, made)
}

fn rms(v: &[f64], truth: &[f64]) -> f64 {
    (v.iter()
        .zip(truth)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        / v.len() as f64)
        .sqrt()
}

/// Fraction of entries within `k` standard errors of the truth.
fn covered(v: &[f64], se: &[f64], truth: &[f64], k: f64) -> f64 {
    let hits = (0..v.len())
        .filter(|&e| (v[e] - truth[e]).abs() <= k * se[e])
        .count();
    hits as f64 / v.len() as f64
}

#[test]
fn regression_beats_the_full_dimensional_estimator_on_the_heaviside_chain() {
    let n = 202;
    let x = x0(n, 1);
    let p = branching::chain_pattern(n);
    let truth = branching::chain_smoothed_jacobian(&x, SIGMA);
    for samples in [50, 400] {
        let (reg, se, made) = run(branching::chain, &x, &p, samples, Estimator::Regression, 7);
        let (avg, _, made_avg) = run(branching::chain, &x, &p, samples, Estimator::Average, 7);
        assert_eq!((made, made_avg), (2 * samples, 2 * samples));
        let (e_reg, e_avg) = (rms(&reg, &truth), rms(&avg, &truth));
        assert!(
            e_reg < 0.7 * e_avg,
            "N = {samples}: regression {e_reg} vs average {e_avg}"
        );
        let c = covered(&reg, &se, &truth, 3.0);
        assert!(
            c >= 0.95,
            "N = {samples}: {c} of the entries within 3 standard errors"
        );
        // The standard errors are honest in size too: their RMS is near the RMS error.
        let se_rms = (se.iter().map(|s| s * s).sum::<f64>() / se.len() as f64).sqrt();
        assert!(
            (0.6..1.6).contains(&(e_reg / se_rms)),
            "N = {samples}: RMS error {e_reg}, RMS standard error {se_rms}"
        );
    }
}

#[test]
fn the_estimate_is_consistent_as_samples_grow() {
    let n = 102;
    let x = x0(n, 2);
    let p = branching::chain_pattern(n);
    let truth = branching::chain_smoothed_jacobian(&x, SIGMA);
    let e: Vec<f64> = [100, 1600]
        .iter()
        .map(|&s| {
            rms(
                &run(branching::chain, &x, &p, s, Estimator::Regression, 3).0,
                &truth,
            )
        })
        .collect();
    // 16x the samples: the error falls about 4x (more than 2.5x here).
    assert!(e[1] < e[0] / 2.5, "{e:?}");
}

#[test]
fn the_threshold_model_is_covered_by_its_standard_errors() {
    let n = 301;
    let x = x0(n, 4);
    let p = branching::threshold_pattern(n);
    let truth = branching::threshold_smoothed_jacobian(&x, SIGMA);
    let (reg, se, _) = run(branching::threshold, &x, &p, 300, Estimator::Regression, 5);
    let (avg, _, _) = run(branching::threshold, &x, &p, 300, Estimator::Average, 5);
    assert!(covered(&reg, &se, &truth, 3.0) >= 0.95);
    assert!(rms(&reg, &truth) < rms(&avg, &truth));
}

#[test]
fn finite_differences_see_no_step_and_sampled_tracing_finds_the_branch_inputs() {
    // At x0 the chain is locally affine: its finite-difference Jacobian misses the steps
    // entirely (the smoothed one does not), and NaN tracing at x0 alone can miss an input that
    // reaches a row only through a comparison. Tracing at points sampled on the smoothing's
    // scale finds the whole chain.
    let n = 42;
    let x = x0(n, 6);
    let p = branching::chain_pattern(n);
    let mut f = |x: &[f64], y: &mut [f64]| {
        branching::chain(x, y);
        Ok(())
    };
    let mut fd = vec![0.0; p.nnz()];
    nanprop::jacobian::jacobian(&mut f, &x, &p, &Default::default(), &mut fd).unwrap();
    let truth = branching::chain_smoothed_jacobian(&x, SIGMA);
    for i in 0..n - 2 {
        let k = 3 * i;
        assert!(
            (fd[k + 1] - 0.0).abs() < 1e-6,
            "the middle input has no local derivative"
        );
        assert!((fd[k] - 2.0).abs() < 1e-6);
        assert!(
            truth[k + 1].abs() > 0.1 || truth[k].abs() > 2.1,
            "the smoothed one sees steps"
        );
    }
    let sampled = TraceOptions {
        sample_points: 16,
        sample_scale: 2.0 * SIGMA,
        ..TraceOptions::default()
    };
    let traced = nanprop::trace(&mut f, n - 2, &x, &sampled).unwrap();
    for i in 0..n - 2 {
        for j in i..i + 3 {
            assert!(
                traced.contains(i, j),
                "({i}, {j}) missing from the sampled trace"
            );
        }
    }
}

#[test]
fn bad_arguments_are_errors() {
    let p = branching::chain_pattern(5);
    let x = x0(5, 1);
    let mut f = |x: &[f64], y: &mut [f64]| {
        branching::chain(x, y);
        Ok(())
    };
    let mut v = vec![0.0; p.nnz()];
    for (o, what) in [
        (
            SmoothingOptions {
                sigma: 0.0,
                ..Default::default()
            },
            "sigma",
        ),
        (
            SmoothingOptions {
                sigma: f64::NAN,
                ..Default::default()
            },
            "sigma",
        ),
        (
            SmoothingOptions {
                samples: 1,
                ..Default::default()
            },
            "samples",
        ),
    ] {
        let e = smoothed_jacobian(&mut f, &x, &p, &o, &mut v, None).unwrap_err();
        assert!(e.to_string().contains(what), "{e}");
    }
    let e = smoothed_jacobian(&mut f, &x[..4], &p, &Default::default(), &mut v, None).unwrap_err();
    assert!(e.to_string().contains("x0"), "{e}");
    let mut short = vec![0.0; 3];
    let e = smoothed_jacobian(&mut f, &x, &p, &Default::default(), &mut short, None).unwrap_err();
    assert!(e.to_string().contains("nnz"), "{e}");
    // A black box that turns non-finite at a sample names the sample.
    let x00 = x[0];
    let mut bad = |x: &[f64], y: &mut [f64]| {
        branching::chain(x, y);
        if x[0] > x00 {
            y[0] = f64::NAN;
        }
        Ok(())
    };
    let e = smoothed_jacobian(&mut bad, &x, &p, &Default::default(), &mut v, None).unwrap_err();
    assert!(e.to_string().contains("smoothing sample"), "{e}");
}
