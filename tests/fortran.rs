//! Fortran: the examples in fortran_examples/ built with gfortran, the ISO_C_BINDING module
//! driving nanprop from Fortran, and loader mode on the compiled Fortran (and on a black box
//! built on Debian's LAPACK) from C and from Rust. Without gfortran these tests are skipped,
//! except under CI (CI set), where a missing gfortran fails the run.

mod common;

use common::{build, c_libraries, root, tool_available};
use nanprop::loader::{Convention, IntKind, LoadedBlackBox};
use nanprop::{trace, TraceOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

fn gfortran_available() -> bool {
    tool_available("gfortran", "the Fortran tests")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

/// Builds the example libraries into a fresh directory: libbeam.so, libbeam8.so
/// (-fdefault-integer-8), libminpack_fcn.so, liblapack_box.so (linked with -llapack) and
/// libpivot.so.
fn build_libraries(dir: &Path) -> [PathBuf; 5] {
    let ex = root().join("fortran_examples");
    let lib = |name: &str, src: &str, extra: &[&str]| {
        let out = dir.join(name);
        run(Command::new("gfortran")
            .args(["-shared", "-fPIC", "-O2"])
            .args(extra)
            .arg(ex.join(src))
            .arg("-o")
            .arg(&out)
            .args(if src == "lapack_box.f" {
                vec!["-llapack"]
            } else {
                vec![]
            }));
        out
    };
    [
        lib("libbeam.so", "beam.f", &[]),
        lib("libminpack_fcn.so", "minpack_fcn.f", &[]),
        lib("liblapack_box.so", "lapack_box.f", &[]),
        lib("libbeam8.so", "beam.f", &["-fdefault-integer-8"]),
        lib("libpivot.so", "pivot.f", &[]),
    ]
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nanprop-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn fortran_driver_uses_the_module() {
    if !gfortran_available() {
        return;
    }
    let (shared, _) = c_libraries();
    let dir = scratch("fortran-driver");
    let libdir = shared.parent().unwrap();
    let exe = dir.join("driver");
    run(Command::new("gfortran")
        .arg("-J")
        .arg(&dir)
        .arg(root().join("include/nanprop.f90"))
        .arg(root().join("fortran_examples/beam.f"))
        .arg(root().join("fortran_examples/driver.f90"))
        .arg(format!("-L{}", libdir.display()))
        .arg("-lnanprop")
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .arg("-o")
        .arg(&exe));
    let out = run(Command::new(&exe).current_dir(&dir));
    print!("{out}");
    assert!(out.contains(", 0 failed"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn loader_mode_from_c() {
    if !gfortran_available() {
        return;
    }
    let (shared, _) = c_libraries();
    let dir = scratch("loader-c");
    let libs = build_libraries(&dir);
    let exe = dir.join("loader_test");
    build(
        &root().join("fortran_examples/loader_test.c"),
        &exe,
        &shared,
    );
    let out = run(Command::new(&exe).current_dir(&dir).args(&libs[..4]));
    print!("{out}");
    assert!(out.contains(", 0 failed"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn loader_mode_from_rust() {
    if !gfortran_available() {
        return;
    }
    let dir = scratch("loader-rust");
    let [beam, minpack, lapack, beam8, _] = build_libraries(&dir);
    let x0: Vec<f64> = (0..10).map(|j| 50.0 + j as f64).collect();
    let expect_beam = |p: &nanprop::Pattern| {
        for i in 0..10 {
            assert_eq!(
                p.row(i),
                (i as u32..10).collect::<Vec<_>>(),
                "stress row {i}"
            );
        }
        assert_eq!(p.row(10).len(), 10, "tip deflection row");
    };
    for (lib, kind) in [(&beam, IntKind::I4), (&beam8, IntKind::I8)] {
        let mut f = LoadedBlackBox::open(lib, "beam", Convention::Fortran, 10, 11, kind).unwrap();
        assert_eq!(f.symbol(), "beam_");
        expect_beam(&trace(&mut f, 11, &x0, &TraceOptions::default()).unwrap());
        // Isolated: each evaluation in a worker process (BEAM keeps SAVE'd state).
        let isolated = TraceOptions {
            isolate: true,
            ..TraceOptions::default()
        };
        expect_beam(&trace(&mut f, 11, &x0, &isolated).unwrap());
    }
    let mut f = LoadedBlackBox::open(
        &minpack,
        "tridg",
        Convention::MinpackHybrd,
        10,
        10,
        IntKind::I4,
    )
    .unwrap();
    let p = trace(&mut f, 10, &[-1.0; 10], &TraceOptions::default()).unwrap();
    assert_eq!(p.nnz(), 28, "tridiagonal");
    let mut f =
        LoadedBlackBox::open(&lapack, "LSOLVE", Convention::Fortran, 6, 6, IntKind::I4).unwrap();
    let p = trace(&mut f, 6, &[1.0; 6], &TraceOptions::default()).unwrap();
    assert_eq!(
        p.nnz(),
        36,
        "dgesv on a diagonal matrix: 0 * NaN tags everything"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn loader_mode_from_the_command_line() {
    if !gfortran_available() {
        return;
    }
    let dir = scratch("loader-cli");
    let [beam, ..] = build_libraries(&dir);
    let out_path = dir.join("beam.mtx");
    let out = run(Command::new(env!("CARGO_BIN_EXE_nanprop")).args([
        "trace",
        "--lib",
        beam.to_str().unwrap(),
        "--symbol",
        "BEAM",
        "--convention",
        "fortran",
        "-n",
        "10",
        "-m",
        "11",
        "--x0",
        "50",
        "--quiet",
        "--out",
        out_path.to_str().unwrap(),
    ]));
    assert!(out.contains("nnz = 65,"), "{out}");
    let file = std::fs::File::open(&out_path).unwrap();
    let p = nanprop::pattern::mtx::read_pattern(std::io::BufReader::new(file)).unwrap();
    assert_eq!(p.row(3), (3..10).collect::<Vec<u32>>());
    assert_eq!(p.row(10).len(), 10);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_routine_that_crashes_on_all_nan_input_is_traced_exactly_under_isolation() {
    if !gfortran_available() {
        return;
    }
    let dir = scratch("pivot");
    let [.., pivot] = build_libraries(&dir);
    let n = 40;
    let mut f =
        LoadedBlackBox::open(&pivot, "pivot", Convention::Fortran, n, n, IntKind::I4).unwrap();
    // The largest input is the last (index n - 1).
    let x0: Vec<f64> = (0..n).map(|j| 1.0 + j as f64 / 100.0).collect();
    let expected = |i: usize| {
        let mut r = vec![i as u32, ((i + 1) % n) as u32, (n - 1) as u32];
        r.sort_unstable();
        r.dedup();
        r
    };
    // The payload strategy's first probe tags every input: the routine crashes there.
    let options = TraceOptions {
        isolate: true,
        ..TraceOptions::default()
    };
    let p = trace(&mut f, n, &x0, &options).unwrap();
    for i in 0..n {
        assert_eq!(p.row(i), expected(i), "row {i}");
    }
    assert!(
        p.report.failed_evaluations >= 1,
        "the all-NaN probe crashed and was split"
    );
    assert!(
        p.report.failed_columns.is_empty(),
        "no single input is NaN-intolerant"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_residual_routine_without_m_is_traced_from_rust_and_the_command_line() {
    if !gfortran_available() {
        return;
    }
    let dir = scratch("resid");
    let lib = dir.join("libresid.so");
    run(Command::new("gfortran")
        .args(["-shared", "-fPIC", "-O2"])
        .arg(root().join("fortran_examples/resid.f"))
        .arg("-o")
        .arg(&lib));
    let mut f =
        LoadedBlackBox::open(&lib, "resid", Convention::FortranSquare, 8, 8, IntKind::I4).unwrap();
    let p = trace(&mut f, 8, &[-1.0; 8], &TraceOptions::default()).unwrap();
    assert_eq!(p.nnz(), 3 * 8 - 2, "tridiagonal");
    assert!(
        LoadedBlackBox::open(&lib, "resid", Convention::FortranSquare, 8, 9, IntKind::I4).is_err(),
        "square only"
    );
    let out = run(Command::new(env!("CARGO_BIN_EXE_nanprop")).args([
        "trace",
        "--lib",
        lib.to_str().unwrap(),
        "--symbol",
        "RESID",
        "--convention",
        "fortran-square",
        "-n",
        "8",
        "-m",
        "8",
        "--x0",
        "-1",
        "--quiet",
    ]));
    assert!(out.contains("nnz = 22,"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
