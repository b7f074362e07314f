//! A host that ignores SIGCHLD (its children are reaped by the kernel, so `waitpid` cannot
//! report them) still gets correct isolated and process-pool traces, and learns how a worker
//! died: the workers' children are the spawner's (`src/driver/spawner.rs`), which puts SIGCHLD
//! back to its default action. In its own test binary: the disposition is process-wide.

use nanprop::{trace, Strategy, TraceOptions};
use std::time::Duration;

#[test]
fn isolated_traces_survive_a_host_that_ignores_sigchld() {
    // SAFETY: setting a signal disposition in this test process.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) };
    let mut f = |x: &[f64], y: &mut [f64]| {
        if x[1].is_nan() {
            std::process::abort(); // NaN-intolerant input 1
        }
        y[0] = x[0] * x[1];
        y[1] = x[1] + x[2];
        Ok(())
    };
    for options in [
        TraceOptions {
            isolate: true,
            timeout: Some(Duration::from_secs(30)),
            ..Default::default()
        },
        TraceOptions {
            processes: 2,
            strategy: Strategy::OneHot,
            ..Default::default()
        },
    ] {
        let p = trace(&mut f, 2, &[1.0, 2.0, 3.0], &options).unwrap();
        assert_eq!(p.row(0), &[0, 1]);
        assert_eq!(p.row(1), &[1, 2]);
        assert_eq!(p.report.failed_columns, [1]);
    }
    // A worker that dies at a finite point is named, with the signal that ended it.
    let mut dies = |x: &[f64], y: &mut [f64]| {
        if x[0] > 1.0 {
            std::process::abort();
        }
        y.copy_from_slice(&x[..2]);
        Ok(())
    };
    let options = TraceOptions {
        isolate: true,
        ..Default::default()
    };
    let e = trace(&mut dies, 2, &[1.0, 2.0, 3.0], &options).unwrap_err();
    assert!(e.message.contains("killed by SIGABRT"), "{}", e.message);
}
