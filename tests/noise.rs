//! Noise: a black box whose outputs jitter is never traced into a dense pattern labelled
//! traced: the noise is estimated and tolerated (or stops the trace, if asked), and a caller's
//! tolerance is used as given.

mod common;

use nanprop::testing as synthetic;
use nanprop::{
    trace, ErrorKind, Noise, NonFiniteBaseline, Pattern, Strategy, TraceOptions, TraceSession,
};
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

/// A batch session whose tell stopped the trace (the noise under `Noise::Error`, a non-finite
/// baseline under `NonFiniteBaseline::Error`) cannot go on: every later ask, tell and finish is
/// an argument error naming the first error, where the session used to carry on part way
/// through the stopped tell (and a refused baseline's ask blamed the baseline's outputs with no
/// word of why).
#[test]
fn a_session_stopped_by_an_error_refuses_to_go_on() {
    let n = 1000;
    let truth = synthetic::banded(n, 1);
    let x0: Vec<f64> = (0..n).map(|j| 0.5 + 0.001 * j as f64).collect();
    let refused = |e: nanprop::Error, first: &nanprop::Error, what: &str| {
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{what}: {}", e.message);
        assert!(
            e.message.contains("cannot go on") && e.message.contains(&first.message),
            "{what}: {}",
            e.message
        );
    };

    // The noise stops the trace at some tell; the requests left in its step are refused.
    let strict = TraceOptions {
        noise: Noise::Error,
        ..TraceOptions::default()
    };
    let calls = Cell::new(0);
    let mut f = noisy(&truth, 1e-10, &calls);
    let mut s = TraceSession::new(n, n, &x0, &strict).unwrap();
    let (mut x, mut y) = (x0.clone(), vec![0.0; n]);
    let (first, stopped, left) = 'trace: loop {
        let ids = s.ask().unwrap();
        assert!(!ids.is_empty(), "the noise never stopped the trace");
        for (k, &id) in ids.iter().enumerate() {
            s.write_input(id, &mut x);
            f(&x, &mut y).unwrap();
            s.restore(id, &mut x);
            if let Err(e) = s.tell(id, &y) {
                break 'trace (e, id, ids[k + 1..].to_vec());
            }
        }
    };
    assert_eq!(first.kind, ErrorKind::BlackBox, "{}", first.message);
    assert!(first.message.contains("noisy"), "{}", first.message);
    refused(s.ask().unwrap_err(), &first, "ask after the noise");
    // Every tell is refused for the stop, not for its id: the requests left in the step, and
    // the one whose tell stopped the trace.
    for &id in left.iter().chain([&stopped]) {
        refused(s.tell(id, &y).unwrap_err(), &first, "tell after the noise");
    }
    refused(s.finish().unwrap_err(), &first, "finish after the noise");

    // A refused baseline: the next ask names why.
    let refuse = TraceOptions {
        nonfinite_baseline: NonFiniteBaseline::Error,
        ..TraceOptions::default()
    };
    let mut s = TraceSession::new(n, n, &x0, &refuse).unwrap();
    let ids = s.ask().unwrap();
    assert_eq!(ids.len(), 1);
    let mut y = vec![1.0; n];
    y[7] = f64::NAN;
    let first = s.tell(ids[0], &y).unwrap_err();
    assert_eq!(
        first.kind,
        ErrorKind::BaselineNotFinite,
        "{}",
        first.message
    );
    refused(s.ask().unwrap_err(), &first, "ask after the baseline");
    refused(s.finish().unwrap_err(), &first, "finish after the baseline");
}
