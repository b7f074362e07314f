//! The parallel drivers give exactly the serial driver's result, whatever the worker count.

mod common;

use nanprop::testing as synthetic;
use nanprop::{trace, ErrorKind, Pattern, Strategy, ThreadSafe, TraceOptions};
use std::sync::atomic::{AtomicUsize, Ordering};

/// y_i = 1 + sum over the row of (1 + j/1000) x_j: every dependency propagates NaN. Pure, so
/// callable from several threads.
fn model(p: &Pattern) -> impl Fn(&[f64], &mut [f64]) -> Result<(), i32> + Sync + '_ {
    move |x: &[f64], y: &mut [f64]| {
        common::row_sums(p, x, y);
        Ok(())
    }
}

/// `options` with evaluations in `workers` forked processes.
fn processes(options: &TraceOptions, workers: usize) -> TraceOptions {
    TraceOptions {
        processes: workers,
        ..options.clone()
    }
}

fn families() -> Vec<Pattern> {
    vec![
        synthetic::banded(300, 2),
        synthetic::stencil_2d(14),
        synthetic::random_sparse(150, 200, 4, 3),
    ]
}

#[test]
fn threads_match_the_serial_driver() {
    for truth in families() {
        let f = model(&truth);
        let x0: Vec<f64> = (0..truth.cols()).map(|j| 0.5 + 0.01 * j as f64).collect();
        for strategy in [Strategy::Payload, Strategy::OneHot] {
            let opts = TraceOptions {
                strategy,
                ..Default::default()
            };
            let serial = trace(
                &mut |x: &[f64], y: &mut [f64]| f(x, y),
                truth.rows(),
                &x0,
                &opts,
            )
            .unwrap();
            assert_eq!(serial.col_idx(), truth.col_idx());
            for threads in [1, 2, 4] {
                let threaded = TraceOptions {
                    threads,
                    ..opts.clone()
                };
                let p = trace(&mut ThreadSafe(&f), truth.rows(), &x0, &threaded).unwrap();
                assert_eq!(
                    (p.row_ptr(), p.col_idx()),
                    (serial.row_ptr(), serial.col_idx()),
                    "{threads} threads"
                );
                assert_eq!(p.report.evaluations, serial.report.evaluations);
            }
        }
    }
}

#[test]
fn processes_match_the_serial_driver() {
    for truth in families() {
        let f = model(&truth);
        let x0: Vec<f64> = (0..truth.cols()).map(|j| 0.5 + 0.01 * j as f64).collect();
        let opts = TraceOptions::default();
        let mut g = |x: &[f64], y: &mut [f64]| f(x, y);
        let serial = trace(&mut g, truth.rows(), &x0, &opts).unwrap();
        for workers in [2, 3] {
            let p = trace(&mut g, truth.rows(), &x0, &processes(&opts, workers)).unwrap();
            assert_eq!(
                (p.row_ptr(), p.col_idx()),
                (serial.row_ptr(), serial.col_idx()),
                "{workers} workers"
            );
            assert_eq!(p.report.evaluations, serial.report.evaluations);
        }
    }
}

#[test]
fn process_workers_do_not_share_state_and_failures_are_named() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let mut counting = |x: &[f64], y: &mut [f64]| {
        CALLS.fetch_add(1, Ordering::SeqCst);
        y.copy_from_slice(x);
        Ok(())
    };
    let x0 = [1.0; 12];
    let p = trace(
        &mut counting,
        12,
        &x0,
        &processes(&TraceOptions::default(), 3),
    )
    .unwrap();
    assert_eq!(p.nnz(), 12);
    assert_eq!(
        CALLS.load(Ordering::SeqCst),
        0,
        "every evaluation ran in a worker"
    );

    // A worker crashing on a NaN in input 5 is worked around; at a finite point it is an error.
    let crash_if = |trigger: fn(f64) -> bool| {
        move |x: &[f64], y: &mut [f64]| {
            if trigger(x[5]) {
                // SAFETY (of the test's intent): an invalid address, to crash the worker.
                unsafe { std::ptr::write_volatile(16 as *mut f64, 1.0) };
            }
            y.copy_from_slice(x);
            Ok(())
        }
    };
    let opts = TraceOptions {
        strategy: Strategy::OneHot,
        ..Default::default()
    };
    let p = trace(&mut crash_if(f64::is_nan), 12, &x0, &processes(&opts, 3)).unwrap();
    assert_eq!(p.nnz(), 12);
    assert_eq!(p.report.failed_columns, [5]);
    let e = trace(&mut crash_if(|v| v > 1.0), 12, &x0, &processes(&opts, 3)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BlackBox);
    assert!(
        e.message.contains("SIGSEGV") && e.message.contains("the check of the traced pattern"),
        "{}",
        e.message
    );

    let mut skips = |x: &[f64], y: &mut [f64]| {
        y[..11].copy_from_slice(&x[..11]);
        Ok(())
    };
    let e = trace(&mut skips, 12, &x0, &processes(&opts, 2)).unwrap_err();
    assert!(e.message.contains("did not write y[11]"), "{}", e.message);
}
