//! Fortran: the examples in fortran_examples/ built with gfortran, the ISO_C_BINDING module
//! driving nanprop from Fortran, and loader mode on the compiled Fortran (and on a black box
//! built on Debian's LAPACK) from C and from Rust. Without gfortran these tests are skipped,
//! except under CI (CI set), where a missing gfortran fails the run.

mod common;

use common::{build, c_libraries, root, tool_available};
use nanprop::loader::{Convention, IntKind, LoadedBlackBox};
use nanprop::Precision;
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
        .arg(root().join("fortran_examples/single.f"))
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
        let mut f = LoadedBlackBox::open(
            lib,
            "beam",
            Convention::Fortran,
            10,
            11,
            kind,
            Precision::Double,
        )
        .unwrap();
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
        Precision::Double,
    )
    .unwrap();
    let p = trace(&mut f, 10, &[-1.0; 10], &TraceOptions::default()).unwrap();
    assert_eq!(p.nnz(), 28, "tridiagonal");
    let mut f = LoadedBlackBox::open(
        &lapack,
        "LSOLVE",
        Convention::Fortran,
        6,
        6,
        IntKind::I4,
        Precision::Double,
    )
    .unwrap();
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
    let mut f = LoadedBlackBox::open(
        &pivot,
        "pivot",
        Convention::Fortran,
        n,
        n,
        IntKind::I4,
        Precision::Double,
    )
    .unwrap();
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
    let mut f = LoadedBlackBox::open(
        &lib,
        "resid",
        Convention::FortranSquare,
        8,
        8,
        IntKind::I4,
        Precision::Double,
    )
    .unwrap();
    let p = trace(&mut f, 8, &[-1.0; 8], &TraceOptions::default()).unwrap();
    assert_eq!(p.nnz(), 3 * 8 - 2, "tridiagonal");
    assert!(
        LoadedBlackBox::open(
            &lib,
            "resid",
            Convention::FortranSquare,
            8,
            9,
            IntKind::I4,
            Precision::Double
        )
        .is_err(),
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

/// The REAL*4 examples' Jacobians: BAND4 (half-bandwidth 2) and TRIDG4, dense m x n.
fn band4_jacobian(x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut j = vec![vec![0.0; n]; n];
    for i in 0..n {
        for k in i.saturating_sub(2)..(i + 3).min(n) {
            j[i][k] = if k == i {
                2.0 + 15.0 * x[i] * x[i]
            } else {
                -(1.0 + 2.0 * x[k])
            };
        }
    }
    j
}

fn tridg_jacobian(x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut j = vec![vec![0.0; n]; n];
    for i in 0..n {
        j[i][i] = 3.0 - 4.0 * x[i];
        if i > 0 {
            j[i][i - 1] = -1.0;
        }
        if i + 1 < n {
            j[i][i + 1] = -2.0;
        }
    }
    j
}

/// The largest error of `values` (CSR of `p`) against `exact`, relative to exact's largest entry,
/// and whether every entry of `exact` is in `p`.
fn relative_error(p: &nanprop::Pattern, values: &[f64], exact: &[Vec<f64>]) -> f64 {
    let scale = exact.iter().flatten().fold(0.0f64, |a, v| a.max(v.abs()));
    let mut worst = 0.0f64;
    for (i, row) in exact.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            let got = match p.row(i).binary_search(&(j as u32)) {
                Ok(k) => values[p.row_ptr()[i] + k],
                Err(_) => {
                    assert_eq!(v, 0.0, "({i}, {j}) missing from the pattern");
                    0.0
                }
            };
            worst = worst.max((got - v).abs() / scale);
        }
    }
    worst
}

#[test]
fn real4_routines_are_traced_exactly_and_differentiated_to_float_accuracy() {
    if !gfortran_available() {
        return;
    }
    use nanprop::jacobian::{Difference, JacobianOptions, JacobianPlan};
    let dir = scratch("real4");
    let lib = dir.join("libsingle.so");
    run(Command::new("gfortran")
        .args(["-shared", "-fPIC", "-O2"])
        .arg(root().join("fortran_examples/single.f"))
        .arg("-o")
        .arg(&lib));
    let n = 40;
    // A point exactly representable in float, away from where entries vanish.
    let x0: Vec<f64> = (0..n).map(|j| 0.25 + (j % 7) as f64 / 8.0).collect();
    for (symbol, convention, width, exact) in [
        (
            "band4",
            Convention::Fortran,
            2,
            band4_jacobian as fn(&[f64]) -> Vec<Vec<f64>>,
        ),
        ("tridg4", Convention::MinpackHybrd, 1, tridg_jacobian),
    ] {
        let mut f = LoadedBlackBox::open(
            &lib,
            symbol,
            convention,
            n,
            n,
            IntKind::I4,
            Precision::Single,
        )
        .unwrap();
        let p = trace(&mut f, n, &x0, &TraceOptions::default()).unwrap();
        for i in 0..n {
            let want: Vec<u32> = (i.saturating_sub(width)..(i + width + 1).min(n))
                .map(|j| j as u32)
                .collect();
            assert_eq!(p.row(i), want, "{symbol} row {i}");
        }
        assert!(
            p.report.via_float > 0,
            "{symbol}: tags came back through float"
        );
        assert!(
            p.report.evaluations < n,
            "{symbol}: {} evaluations",
            p.report.evaluations
        );
        let exact = exact(&x0);
        for (difference, bound) in [(Difference::Forward, 2e-3), (Difference::Central, 1e-4)] {
            let options = JacobianOptions {
                difference,
                ..JacobianOptions::default()
            };
            let mut plan = JacobianPlan::new(&p, &options).unwrap();
            let mut values = vec![0.0; plan.values_len()];
            plan.evaluate(&mut f, &x0, None, &mut values).unwrap();
            let err = relative_error(&p, &values, &exact);
            println!("{symbol} {difference:?}: relative error {err:.2e}");
            assert!(
                err < bound,
                "{symbol} {difference:?}: {err:.2e} >= {bound:.0e}"
            );
            // Double-precision steps on a float code: the differences drown in rounding.
            if difference == Difference::Forward {
                let mut plain = JacobianPlan::new(&p, &options).unwrap();
                let mut g = |x: &[f64], y: &mut [f64]| f.call(x, y);
                let mut v = vec![0.0; plain.values_len()];
                match plain.evaluate(&mut g, &x0, None, &mut v) {
                    Ok(_) => assert!(
                        relative_error(&p, &v, &exact) > 100.0 * err,
                        "{symbol}: double steps should be far worse on a float code"
                    ),
                    Err(e) => assert!(e.message.contains("vanish"), "{e}"),
                }
            }
        }
    }
    // The command line: --real 4.
    let bin = env!("CARGO_BIN_EXE_nanprop");
    let out = run(Command::new(bin).args(["trace", "--lib"]).arg(&lib).args([
        "--symbol",
        "band4",
        "--convention",
        "fortran",
        "-n",
        "40",
        "-m",
        "40",
        "--real",
        "4",
        "--x0",
        "0.5",
    ]));
    assert!(out.contains("nnz = 194"), "{out}");
    let jac = dir.join("tridg4.mtx");
    let out = run(Command::new(bin)
        .args(["jacobian", "--out"])
        .arg(&jac)
        .args(["--lib"])
        .arg(&lib)
        .args([
            "--symbol",
            "tridg4",
            "--convention",
            "minpack-hybrd",
            "-n",
            "40",
            "-m",
            "40",
            "--real",
            "4",
            "--x0",
            "0.5",
        ]));
    assert!(out.contains("colors = 3"), "{out}");
    // The values: J(i, i) = 3 - 4 x = 1 at x = 0.5, J(i, i-1) = -1, J(i, i+1) = -2, to float
    // accuracy.
    let text = std::fs::read_to_string(&jac).unwrap();
    let mut seen = 0;
    for line in text.lines().filter(|l| !l.starts_with('%')).skip(1) {
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|t| t.parse().unwrap())
            .collect();
        let want = match v[1] as i64 - v[0] as i64 {
            0 => 1.0,
            -1 => -1.0,
            1 => -2.0,
            d => panic!("entry off the band ({d}): {line}"),
        };
        assert!((v[2] - want).abs() < 2e-3, "{line}");
        seen += 1;
    }
    assert_eq!(seen, 118);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compiles `sources` (after the module source) into a program linked with the library, in
/// `dir`, and runs it; its output.
fn fortran_program(dir: &Path, name: &str, sources: &[&str]) -> String {
    let (shared, _) = c_libraries();
    let libdir = shared.parent().unwrap();
    let exe = dir.join(name);
    let mut cmd = Command::new("gfortran");
    cmd.arg("-J")
        .arg(dir)
        .arg(root().join("include/nanprop.f90"));
    for src in sources {
        cmd.arg(root().join("fortran_examples").join(src));
    }
    run(cmd
        .arg(format!("-L{}", libdir.display()))
        .arg("-lnanprop")
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .arg("-o")
        .arg(&exe));
    run(Command::new(&exe).current_dir(dir))
}

#[test]
fn the_module_binds_every_c_function() {
    // The C API's functions, from the header; the module's bind(C) names.
    let header = std::fs::read_to_string(root().join("include/nanprop.h")).unwrap();
    let module = std::fs::read_to_string(root().join("include/nanprop.f90")).unwrap();
    let mut c: Vec<String> = header
        .lines()
        .filter(|l| !l.trim_start().starts_with('*') && !l.trim_start().starts_with("/*"))
        .flat_map(|l| {
            l.match_indices("nanprop_")
                .filter_map(|(at, _)| {
                    let rest = &l[at..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    rest[name.len()..].starts_with('(').then_some(name)
                })
                .collect::<Vec<_>>()
        })
        .filter(|name| !header.contains(&format!("(*{name})")))
        .collect();
    c.sort();
    c.dedup();
    let bound: std::collections::BTreeSet<&str> = module
        .split("name=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    let missing: Vec<&String> = c.iter().filter(|n| !bound.contains(n.as_str())).collect();
    assert!(c.len() > 50, "the header's functions were found: {c:?}");
    assert!(
        missing.is_empty(),
        "C functions without a Fortran interface: {missing:?}"
    );
}

#[test]
fn the_module_option_types_match_c_field_by_field() {
    if !gfortran_available() {
        return;
    }
    let dir = scratch("layout");
    let c_exe = dir.join("layout_c");
    run(common::compiler()
        .to_command()
        .arg(format!("-I{}", root().join("include").display()))
        .arg(root().join("fortran_examples/layout.c"))
        .arg("-o")
        .arg(&c_exe));
    let c = run(&mut Command::new(&c_exe));
    let f = fortran_program(&dir, "layout_f", &["layout.f90"]);
    assert!(c.lines().count() >= 34, "{c}");
    let (c, f): (Vec<&str>, Vec<&str>) = (c.lines().collect(), f.lines().map(str::trim).collect());
    assert_eq!(c, f, "C (left) and Fortran (right) layouts differ");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_newton_loop_colors_once_and_evaluates_the_plan_every_iteration() {
    if !gfortran_available() {
        return;
    }
    let dir = scratch("newton");
    let out = fortran_program(&dir, "newton", &["minpack_fcn.f", "newton.f90"]);
    print!("{out}");
    assert!(out.contains("newton: converged"), "{out}");
    assert!(out.contains(", 0 failed"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
