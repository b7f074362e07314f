//! The single-precision payload facts the README states, measured on this machine by
//! bench/nan_facts_f32.c (C, float and libm) and bench/nan_facts_f32.f90 (gfortran REAL*4), at
//! -O0 and -O2: the facts nanprop's single-precision tracing relies on are asserted, so a
//! compiler or C library that breaks them fails here. gfortran is required under CI.

mod common;

use common::{root, tool_available};
use std::process::Command;

fn measure(compiler: &str, src: &str, opt: &str, extra: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!(
        "nanprop-facts-{}-{opt}-{compiler}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("facts");
    let out = Command::new(compiler)
        .arg(opt)
        .arg(root().join(src))
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(run.stdout).unwrap()
}

fn verdict(table: &str, what: &str) -> String {
    let line = table
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{what} ")))
        .unwrap_or_else(|| panic!("no line {what:?} in\n{table}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    words[what.split_whitespace().count() + 1..].join(" ")
}

#[test]
fn float_payloads_survive_arithmetic_libm_and_conversions_in_c() {
    for opt in ["-O0", "-O2"] {
        let t = measure("cc", "bench/nan_facts_f32.c", opt, &["-lm"]);
        print!("{opt}\n{t}");
        for what in [
            "a + 1",
            "1 + a",
            "a * 0",
            "a - a",
            "sinf(a)",
            "expf(a)",
            "logf(a)",
            "sqrtf(a)",
            "tanhf(a)",
            "powf(a, 2)",
            "fabsf(-a)",
            "(float)(double)a",
            "(float)(a + 1.0)",
            // The codec's design: a binary64 tag narrows to the float NaN of its id.
            "(float)tag64",
        ] {
            assert_eq!(verdict(&t, what), "A kept", "{opt}: {what}");
        }
        assert_eq!(verdict(&t, "(double)a"), "A kept, << 29", "{opt}");
        // The absorbers, as in double precision (the guard's business).
        assert_eq!(verdict(&t, "powf(a, 0)"), "no NaN");
        assert_eq!(verdict(&t, "fminf(a, 1)"), "no NaN");
        assert_eq!(verdict(&t, "0.0f / 0.0f"), "default NaN");
    }
}

#[test]
fn real4_payloads_survive_gfortran_intrinsics_and_conversions() {
    if !tool_available("gfortran", "the REAL*4 payload facts") {
        return;
    }
    for opt in ["-O0", "-O2"] {
        let t = measure("gfortran", "bench/nan_facts_f32.f90", opt, &[]);
        print!("{opt}\n{t}");
        for what in [
            "a + 1",
            "a * 0",
            "sin(a)",
            "exp(a)",
            "sqrt(a)",
            "a**2",
            "abs(-a)",
            "real(dble(a))",
            "real(dble(a) + 1d0)",
        ] {
            assert_eq!(verdict(&t, what), "A kept", "{opt}: {what}");
        }
    }
}
