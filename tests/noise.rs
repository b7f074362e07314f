//! Noise: a black box whose outputs jitter is never traced into a dense pattern labelled
//! traced: without a tolerance the trace stops naming the noise; with one it is exact.

mod common;

use nanprop::testing as synthetic;
use nanprop::{trace, ErrorKind, Pattern, Strategy, TraceOptions};
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

#[test]
fn noise_stops_the_trace_with_a_message_or_is_traced_within_a_tolerance() {
    let truth = synthetic::banded(1000, 1);
    let x0: Vec<f64> = (0..1000).map(|j| 0.5 + 0.001 * j as f64).collect();
    for strategy in [Strategy::Payload, Strategy::OneHot] {
        let calls = Cell::new(0);
        let plain = TraceOptions {
            strategy,
            ..TraceOptions::default()
        };
        let e = trace(&mut noisy(&truth, 1e-13, &calls), 1000, &x0, &plain).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BlackBox);
        assert!(
            e.message.contains("noisy") && e.message.contains("verify_tolerance"),
            "{}",
            e.message
        );
        let tolerant = TraceOptions {
            verify_tolerance: 1e-10,
            ..plain
        };
        let p = trace(&mut noisy(&truth, 1e-13, &calls), 1000, &x0, &tolerant).unwrap();
        for i in 0..1000 {
            for j in truth.row(i) {
                assert!(
                    p.contains(i, *j as usize),
                    "{strategy:?}: missed ({i}, {j})"
                );
            }
        }
        assert!(
            p.nnz() as f64 <= 1.5 * truth.nnz() as f64,
            "{strategy:?}: nnz {} against {}",
            p.nnz(),
            truth.nnz()
        );
        assert!(
            p.report.noise > 1e-15 && p.report.noise < 1e-12,
            "estimated noise {}",
            p.report.noise
        );
    }
    // A deterministic black box reports no noise.
    let p = trace(
        &mut noisy(&truth, 0.0, &Cell::new(0)),
        1000,
        &x0,
        &TraceOptions::default(),
    )
    .unwrap();
    assert_eq!(p.report.noise, 0.0);
    assert_eq!(p.col_idx(), truth.col_idx());
}
