//! Isolation mode: crashes, aborts, exit(), hangs and SIGFPE in the black box are survived: on a
//! NaN probe they are worked around (the probe is split, NaN-intolerant inputs perturbed), at a
//! finite point they are errors naming the failure and the evaluation; this (host) process goes
//! on.

use nanprop::testing::{loop_paths, loop_paths_x0};
use nanprop::{trace, ErrorKind, Strategy, TraceOptions};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

extern "C" {
    fn feenableexcept(excepts: std::ffi::c_int) -> std::ffi::c_int;
}

fn isolated(timeout: Option<Duration>) -> TraceOptions {
    TraceOptions {
        strategy: Strategy::OneHot,
        isolate: true,
        timeout,
        ..Default::default()
    }
}

/// Fails in `how` when `trigger(x)` holds; otherwise y = x.
fn failing(
    how: &'static str,
    trigger: fn(&[f64]) -> bool,
) -> impl FnMut(&[f64], &mut [f64]) -> Result<(), i32> {
    move |x: &[f64], y: &mut [f64]| {
        if trigger(x) {
            match how {
                // SAFETY (of the test's intent): an invalid address, to crash the worker.
                "segfault" => unsafe { std::ptr::write_volatile(16 as *mut f64, 1.0) },
                "abort" => std::process::abort(),
                "exit" => unsafe { libc::exit(3) },
                "hang" => std::thread::sleep(Duration::from_secs(30)),
                "sigfpe" => {
                    // A legacy code that enables traps itself, then divides 0 by 0.
                    unsafe { feenableexcept(1) }; // FE_INVALID
                    y[0] = std::hint::black_box(0.0f64) / std::hint::black_box(0.0f64);
                }
                _ => unreachable!(),
            }
        }
        y.copy_from_slice(x);
        Ok(())
    }
}

const CASES: [(&str, &str); 5] = [
    ("segfault", "SIGSEGV"),
    ("abort", "SIGABRT"),
    ("exit", "called exit(3)"),
    ("hang", "timed out after 0.300 s"),
    ("sigfpe", "SIGFPE"),
];

#[test]
fn a_failure_on_a_nan_probe_is_worked_around_and_the_host_survives() {
    // Input 1 is NaN-intolerant: its probes are split, then it is perturbed instead.
    for (how, _) in CASES {
        for strategy in [Strategy::OneHot, Strategy::Payload] {
            let mut f = failing(how, |x| x[1].is_nan());
            let options = TraceOptions {
                strategy,
                ..isolated(Some(Duration::from_millis(300)))
            };
            let p = trace(&mut f, 3, &[1.0, 2.0, 3.0], &options).unwrap();
            assert_eq!(p.col_idx(), &[0, 1, 2], "{how} {strategy:?}");
            assert_eq!(p.report.failed_columns, [1], "{how}");
            assert!(p.report.failed_evaluations >= 1);
            let k = p.row_ptr()[1];
            assert_eq!(p.kinds()[k], nanprop::EntryKind::Perturbation, "{how}");
        }
    }
}

#[test]
fn a_failure_at_a_finite_point_is_an_error_naming_it_and_the_host_survives() {
    // The check moves input 1 up from 2: a finite point, which cannot be split.
    for (how, expected) in CASES {
        let mut f = failing(how, |x| x[1] > 2.0);
        let e = trace(
            &mut f,
            3,
            &[1.0, 2.0, 3.0],
            &isolated(Some(Duration::from_millis(300))),
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::BlackBox, "{how}");
        assert!(e.message.contains(expected), "{how}: {}", e.message);
        assert!(
            e.message.contains("the check of the traced pattern moving"),
            "{how}: {}",
            e.message
        );
    }
}

/// `f` traced in this process and isolated: the two patterns.
fn here_and_isolated(
    f: &mut dyn nanprop::BlackBox,
    m: usize,
    x0: &[f64],
) -> (nanprop::Pattern, nanprop::Pattern) {
    let here = trace(f, m, x0, &TraceOptions::default()).unwrap();
    let isolated = TraceOptions {
        isolate: true,
        ..Default::default()
    };
    (here, trace(f, m, x0, &isolated).unwrap())
}

#[test]
fn isolated_traces_equal_in_process_traces() {
    let mut f = |x: &[f64], y: &mut [f64]| {
        y[0] = x[0] * x[1];
        y[1] = x[2].sin();
        Ok(())
    };
    let (here, there) = here_and_isolated(&mut f, 2, &[1.0, 2.0, 3.0]);
    assert_eq!(
        (here.row_ptr(), here.col_idx()),
        (there.row_ptr(), there.col_idx())
    );
    assert_eq!(here.report.evaluations, there.report.evaluations);
}

#[test]
fn large_isolated_traces_equal_in_process_traces() {
    // 2^15 outputs and more: the run loop tells one isolated evaluation's outputs on a second
    // thread while the worker makes the next (given two cores). A black box that takes every
    // path of the loop: a chain of payloads, an output that absorbs a NaN (traced again with
    // verified probes) and an input whose NaN makes it fail (its probes split).
    let n = 40_000;
    let (here, there) = here_and_isolated(&mut loop_paths, n, &loop_paths_x0(n));
    assert_eq!(
        (here.row_ptr(), here.col_idx(), here.kinds()),
        (there.row_ptr(), there.col_idx(), there.kinds())
    );
    assert_eq!(here.report.evaluations, there.report.evaluations);
    assert_eq!(here.report.failed_columns, [33]);
    assert_eq!(there.report.failed_columns, [33]);
    assert!(
        there.contains(7, 20),
        "the absorbed NaN's dependency is found"
    );
}

#[test]
fn each_evaluation_starts_from_the_parents_state() {
    // State kept between calls (a SAVE variable, a COMMON block) is changed in the workers only.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let mut f = |x: &[f64], y: &mut [f64]| {
        let before = CALLS.fetch_add(1, Ordering::SeqCst);
        y[0] = x[0] + before as f64; // in a worker, `before` is always the parent's value
        Ok(())
    };
    let p = trace(
        &mut f,
        1,
        &[1.0, 2.0],
        &TraceOptions {
            isolate: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        CALLS.load(Ordering::SeqCst),
        0,
        "no call ran in this process"
    );
    assert_eq!(p.row(0), &[0]);
    // In-process, the same code's changing state reads as dependencies everywhere.
    let q = trace(&mut f, 1, &[1.0, 2.0], &TraceOptions::default()).unwrap();
    assert!(
        q.contains(0, 1),
        "the call counter changes y0 between probes"
    );
}

#[test]
fn contract_breaches_are_caught_across_the_process_boundary() {
    let mut skips = |x: &[f64], y: &mut [f64]| {
        y[0] = x[0];
        Ok(())
    };
    let e = trace(
        &mut skips,
        2,
        &[1.0, 2.0],
        &TraceOptions {
            isolate: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.message.contains("did not write y[1]"), "{}", e.message);
}

#[test]
fn any_return_code_of_an_isolated_black_box_is_reported_as_returned() {
    // i32::MIN + 1 was the old marker for a panic in a worker; a code is a code.
    let mut f = |x: &[f64], y: &mut [f64]| {
        y.copy_from_slice(x);
        if x[0] > 1.0 {
            Err(i32::MIN + 1)
        } else {
            Ok(())
        }
    };
    let e = trace(&mut f, 2, &[1.0, 2.0], &isolated(None)).unwrap_err();
    assert!(
        e.message.contains(&format!("returned {}", i32::MIN + 1)),
        "{}",
        e.message
    );
}
