//! A `processes` trace with a journal, killed with SIGKILL mid-trace and run again: every
//! evaluation a worker finished before the kill, but those still in flight, is in the journal
//! and is not evaluated again ("every evaluation is appended as it completes"). One-hot, so
//! that the trace is long enough (49 evaluations of 30 ms) to be killed in the middle.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const N: &str = "48";

/// y_i = x_{i-1} + x_i x_{i+1}, 30 ms per call, each call appending a line to `marks`.
fn slow_library(dir: &Path, marks: &Path) -> PathBuf {
    let src = dir.join("slow.c");
    std::fs::write(
        &src,
        format!(
            "#include <stddef.h>\n#include <stdio.h>\n#include <unistd.h>\n\
             int slow(void *u, size_t n, const double *x, size_t m, double *y) {{\n\
               (void)u; (void)m; usleep(30000);\n\
               for (size_t i = 0; i < n; i++)\n\
                 y[i] = (i > 0 ? x[i - 1] : 0.0) + x[i] * (i + 1 < n ? x[i + 1] : 1.0);\n\
               FILE *f = fopen(\"{}\", \"a\"); if (f) {{ fputs(\"x\\n\", f); fclose(f); }}\n\
               return 0;\n\
             }}\n",
            marks.display()
        ),
    )
    .unwrap();
    let lib = dir.join("libslow.so");
    common::shared_library(&src, &lib);
    lib
}

fn calls(marks: &Path) -> usize {
    std::fs::read_to_string(marks).map_or(0, |s| s.lines().count())
}

fn trace(lib: &Path, journal: Option<&Path>, out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nanprop"));
    c.args([
        "trace",
        "--strategy",
        "one-hot",
        "--processes",
        "2",
        "--quiet",
        "--lib",
    ])
    .arg(lib)
    .args([
        "--symbol",
        "slow",
        "--convention",
        "blackbox",
        "-n",
        N,
        "-m",
        N,
    ])
    .args(["--x0", "0.5", "--out"])
    .arg(out);
    if let Some(j) = journal {
        c.arg("--journal").arg(j);
    }
    c
}

#[test]
fn a_killed_processes_trace_resumes_without_repeating_finished_evaluations() {
    let dir = std::env::temp_dir().join(format!("nanprop-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marks = dir.join("calls.txt");
    let lib = slow_library(&dir, &marks);

    // The whole trace, uninterrupted: how many calls it makes.
    let out = dir.join("p.mtx");
    assert!(trace(&lib, None, &out).status().unwrap().success());
    let total = calls(&marks);
    let whole = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&marks).unwrap();

    // Killed partway, then resumed from its journal.
    let journal = dir.join("trace.journal");
    let mut child = trace(&lib, Some(&journal), &out).spawn().unwrap();
    // Killed once a few calls are done: a fixed wait found none done on a loaded machine, where
    // the host took longer than the wait to start its workers.
    let started = std::time::Instant::now();
    while calls(&marks) < 3 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(100)); // workers die with their host
    let before = calls(&marks);
    assert!(
        before > 2 && before < total,
        "killed after {before} of {total} calls"
    );
    std::fs::remove_file(&marks).unwrap();
    let done = trace(&lib, Some(&journal), &out).output().unwrap();
    assert!(done.status.success(), "{done:?}");
    let after = calls(&marks);
    // Only the evaluations in flight at the kill (one per worker) may be done again.
    assert!(
        after <= total - before + 2,
        "resumed with {after} calls; {before} were made before the kill, {total} in all"
    );
    let resumed = std::fs::read_to_string(&out).unwrap();
    let body = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with('%'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&resumed), body(&whole));
    std::fs::remove_dir_all(&dir).ok();
}
