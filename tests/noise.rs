//! Noise: a black box whose outputs jitter is never traced into a dense pattern labelled
//! traced: the noise is estimated and tolerated (or stops the trace, if asked), and a caller's
//! tolerance is used as given.

mod common;

use nanprop::testing as synthetic;
use nanprop::{trace, ErrorKind, Noise, Pattern, Strategy, TraceOptions};
use std::cell::Cell;

/// y_i = 1 + sum over the row of (1 + j/1000) x_j, times (1 + e) with e a pseudo-random relative
/// jitter of size up to `level`, new at every call (as an iterative solver's).
fn noisy<'a>(
    truth: &'a Pattern,
    level: f64,
    calls: &'a Cell<u64>,
) -> impl FnMut(&[f64], &mut [f64]) -> Result<(), i32> + 'a {
    move |x: &[f64], y: &mut [f64]| {
        calls.set(calls.get() + 1);
        common::row_sums(truth, x, y);
        for (i, yi) in y.iter_mut().enumerate() {
            let e = nanprop::rng::unit_from(&[calls.get(), i as u64]) * 2.0 - 1.0;
            *yi *= 1.0 + level * e;
        }
        Ok(())
    }
}

/// No entry of `truth` missing from `p`, and at most `slack` times its entries.
fn covers(p: &Pattern, truth: &Pattern, slack: f64, what: &str) {
    for i in 0..truth.rows() {
        for j in truth.row(i) {
            assert!(p.contains(i, *j as usize), "{what}: missed ({i}, {j})");
        }
    }
    assert!(
        p.nnz() as f64 <= slack * truth.nnz() as f64,
        "{what}: nnz {} against {}",
        p.nnz(),
        truth.nnz()
    );
}

/// By default the noise is estimated from the repeated evaluations and the tolerance set from
/// it: the pattern has no false negative and no noise-driven entry, and the report gives the
/// estimate (within a factor of 2 of the true standard deviation, level / sqrt(3) for uniform
/// jitter) and the tolerance. `Noise::Error` stops naming the noise; a caller's tolerance is
/// used as given.
#[test]
fn noise_is_estimated_and_tolerated_or_stops_the_trace() {
    let truth = synthetic::banded(1000, 1);
    let x0: Vec<f64> = (0..1000).map(|j| 0.5 + 0.001 * j as f64).collect();
    for strategy in [Strategy::Payload, Strategy::OneHot] {
        for level in [1e-13, 1e-10] {
            let what = format!("{strategy:?}, noise {level:e}");
            let calls = Cell::new(0);
            let plain = TraceOptions {
                strategy,
                ..TraceOptions::default()
            };
            let p = trace(&mut noisy(&truth, level, &calls), 1000, &x0, &plain).unwrap();
            covers(&p, &truth, 1.0, &what);
            let sigma = level / 3f64.sqrt();
            let r = &p.report;
            assert!(
                r.noise > sigma / 2.0 && r.noise < sigma * 2.0,
                "{what}: estimated noise {} against {sigma:e}",
                r.noise
            );
            assert!(
                r.tolerance >= 100.0 * r.noise && r.tolerance < 1e-6,
                "{what}: {}",
                r.tolerance
            );

            let strict = TraceOptions {
                noise: Noise::Error,
                ..plain.clone()
            };
            let e = trace(&mut noisy(&truth, level, &calls), 1000, &x0, &strict).unwrap_err();
            assert_eq!(e.kind, ErrorKind::BlackBox);
            assert!(
                e.message.contains("noisy") && e.message.contains("verify_tolerance"),
                "{}",
                e.message
            );

            let tolerant = TraceOptions {
                verify_tolerance: 1e-8,
                ..strict
            };
            let p = trace(&mut noisy(&truth, level, &calls), 1000, &x0, &tolerant).unwrap();
            covers(&p, &truth, 1.0, &what);
            assert_eq!(p.report.tolerance, 1e-8);
            assert!(p.report.noise > sigma / 2.0 && p.report.noise < sigma * 2.0);
        }
    }
    // A deterministic black box reports no noise and no tolerance.
    let p = trace(
        &mut noisy(&truth, 0.0, &Cell::new(0)),
        1000,
        &x0,
        &TraceOptions::default(),
    )
    .unwrap();
    assert_eq!((p.report.noise, p.report.tolerance), (0.0, 0.0));
    assert_eq!(p.col_idx(), truth.col_idx());
}
