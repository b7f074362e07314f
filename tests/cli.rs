//! The `nanprop` command, run as a user would: on a C shared library built here, writing
//! Matrix Market and SVG files that are read back and checked.

mod common;

use nanprop::coloring;
use nanprop::pattern::mtx;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MODEL: &str = r#"
#include <stddef.h>
/* C convention: y_i = x_i * x_{i+1 mod 6}. */
void ring(const double *x, double *y) {
    for (int i = 0; i < 6; i++) y[i] = x[i] * x[(i + 1) % 6];
}
/* nanprop_blackbox convention; fails (returns 3) when x[0] > 100. */
int guarded(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud;
    if (x[0] > 100.0) return 3;
    for (size_t i = 0; i < m; i++) y[i] = x[i % n] + 2.0 * x[(i + 2) % n];
    return 0;
}
/* nanprop_blackbox convention; spins forever when x[0] is NaN. */
int spins(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud;
    volatile double v = x[0];
    while (v != v) { v = x[0]; }
    for (size_t i = 0; i < m; i++) y[i] = x[i % n];
    return 0;
}
/* C convention, 40 inputs: y_i = x_i * (1 + 1e-13 e), e new at every call (from the clock,
   so that forked workers jitter too). */
#include <time.h>
void jitters(const double *x, double *y) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    unsigned long long s = (unsigned long long)t.tv_nsec * 2654435761ULL + (unsigned long long)t.tv_sec;
    for (int i = 0; i < 40; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        y[i] = x[i] * (1.0 + 1e-13 * ((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0));
    }
}
/* C convention, the gradient of f = sum over the edges (a, b) of a 6 x 6 grid of
   cosh(x_a - x_b) + z * sum_v x_v^3 / 3 + z^2 / 2, z = x[36]: 37 inputs and outputs. */
#include <math.h>
void grad_grid(const double *x, double *g) {
    double z = x[36], cubes = 0.0;
    for (int i = 0; i < 37; i++) g[i] = 0.0;
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            int v = 6 * r + c;
            if (c < 5) { double s = sinh(x[v] - x[v + 1]); g[v] += s; g[v + 1] -= s; }
            if (r < 5) { double s = sinh(x[v] - x[v + 6]); g[v] += s; g[v + 6] -= s; }
            g[v] += z * x[v] * x[v];
            cubes += x[v] * x[v] * x[v] / 3.0;
        }
    g[36] = cubes + z;
}
/* C convention, 11 inputs, 10 outputs: y_i = H(x_i - x_{i+1}) + 2 x_i, a chain of steps. */
void steps(const double *x, double *y) {
    for (int i = 0; i < 10; i++) y[i] = (x[i] - x[i + 1] > 0.0 ? 1.0 : 0.0) + 2.0 * x[i];
}
"#;

/// A directory of this test's own (tests run in parallel threads of one process).
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nanprop-cli-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn build_model(dir: &Path) -> PathBuf {
    let src = dir.join("model.c");
    std::fs::write(&src, MODEL).unwrap();
    let lib = dir.join("libmodel.so");
    common::shared_library(&src, &lib);
    lib
}

fn nanprop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nanprop"))
        .args(args)
        .output()
        .expect("run nanprop")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn trace_color_and_jacobian_on_a_c_library() {
    let dir = scratch("trace");
    let lib = build_model(&dir);
    let (lib, mtx_path, svg_path, colors_path, jac_path) = (
        lib.to_str().unwrap().to_string(),
        dir.join("ring.mtx"),
        dir.join("ring.svg"),
        dir.join("colors.txt"),
        dir.join("J.mtx"),
    );
    let x0 = "1,2,3,4,5,6";
    let o = nanprop(&[
        "trace",
        "--lib",
        &lib,
        "--symbol",
        "ring",
        "--convention",
        "c",
        "-n",
        "6",
        "-m",
        "6",
        "--x0",
        x0,
        "--out",
        mtx_path.to_str().unwrap(),
        "--svg",
        svg_path.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // The columns form a 6-cycle (column i meets i + 1 in row i): 2 colors, the lower bound.
    assert!(
        text(&o).contains("nnz = 12,") && text(&o).contains(" colors = 2 (lower bound 2)"),
        "{}",
        text(&o)
    );
    let p = mtx::read_pattern(std::io::BufReader::new(
        std::fs::File::open(&mtx_path).unwrap(),
    ))
    .unwrap();
    for i in 0..6 {
        let mut want = vec![i as u32, ((i + 1) % 6) as u32];
        want.sort();
        assert_eq!(p.row(i), want.as_slice());
    }
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("compressed: 2 colors"),
        "{}",
        &svg[..svg.len().min(400)]
    );

    let o = nanprop(&[
        "color",
        mtx_path.to_str().unwrap(),
        "--out",
        colors_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let colors: Vec<u32> = std::fs::read_to_string(&colors_path)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(coloring::check(&p, &colors, 2).is_ok());

    let o = nanprop(&[
        "jacobian",
        "--lib",
        &lib,
        "--symbol",
        "ring",
        "--convention",
        "c",
        "-n",
        "6",
        "-m",
        "6",
        "--x0",
        x0,
        "--pattern",
        mtx_path.to_str().unwrap(),
        "--central",
        "--out",
        jac_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("Jacobian: 4 evaluations"),
        "central: 2 x 2 colors; {}",
        text(&o)
    );
    // J[i][i] = x_{i+1}, J[i][i+1] = x_i (1-based file).
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let body = std::fs::read_to_string(&jac_path).unwrap();
    let mut count = 0;
    for line in body.lines().filter(|l| !l.starts_with('%')).skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (i, j, v): (usize, usize, f64) = (
            f[0].parse().unwrap(),
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
        );
        let (i, j) = (i - 1, j - 1);
        let exact = if j == i { x[(i + 1) % 6] } else { x[i] };
        assert!((v - exact).abs() < 1e-8, "J[{i}][{j}] = {v}, exact {exact}");
        count += 1;
    }
    assert_eq!(count, 12);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_name_the_problem_and_exit_nonzero() {
    let dir = scratch("errors");
    let lib = build_model(&dir);
    let lib = lib.to_str().unwrap();
    let base = [
        "trace",
        "--lib",
        lib,
        "--convention",
        "blackbox",
        "-n",
        "4",
        "-m",
        "5",
        "--quiet",
    ];
    let run = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        nanprop(&args)
    };
    let o = run(&["--symbol", "guarded", "--x0", "1,2,3,4"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["--symbol", "guarded", "--x0", "500,2,3,4"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("returned 3"), "{}", text(&o));
    let o = run(&["--symbol", "missing_fn", "--x0", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains("missing_fn_, missing_fn__, MISSING_FN"),
        "{}",
        text(&o)
    );
    let o = run(&["--symbol", "guarded", "--x0", "1,2,3"]);
    assert!(text(&o).contains("expected n = 4"), "{}", text(&o));
    let o = run(&["--symbol", "guarded", "--x0", "1,two,3,4"]);
    assert!(text(&o).contains("'two' is not a number"), "{}", text(&o));
    let x0_file = dir.join("x0.txt");
    std::fs::write(&x0_file, "1.5\n2.5 3.5\n4.5\n").unwrap();
    let o = run(&["--symbol", "guarded", "--x0", x0_file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let o = nanprop(&[
        "trace",
        "--lib",
        "/nonexistent/lib.so",
        "--symbol",
        "f",
        "--convention",
        "c",
        "-n",
        "2",
        "-m",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("not found"));
    let o = nanprop(&[
        "trace",
        "--lib",
        lib,
        "--symbol",
        "f",
        "--convention",
        "pascal",
        "-n",
        "2",
        "-m",
        "2",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "argument errors exit 2: {}",
        text(&o)
    );
    let o = nanprop(&["color", "/nonexistent.mtx"]);
    assert_eq!(o.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_runs() {
    let o = nanprop(&["demo"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("n = 21, m = 22, nnz = 115") && t.contains("12 colors"),
        "{t}"
    );
}

#[test]
fn external_evaluations_through_files_and_a_journal() {
    // This test is the batch scheduler: each round it runs the user's "program" (here Rust code
    // computing the ring model) on every input file nanprop wrote, then runs nanprop again.
    let dir = scratch("external");
    let work = dir.join("work");
    let journal = dir.join("journal.bin");
    let out_path = dir.join("p.mtx");
    let args = [
        "trace",
        "--external",
        work.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "-n",
        "6",
        "-m",
        "6",
        "--x0",
        "1,2,3,4,5,6",
        "--out",
        out_path.to_str().unwrap(),
    ];
    let mut rounds = 0;
    loop {
        let o = nanprop(&args);
        if o.status.success() {
            break;
        }
        assert_eq!(o.status.code(), Some(3), "{}", text(&o));
        assert!(text(&o).contains("waiting for"), "{}", text(&o));
        rounds += 1;
        assert!(rounds < 50, "the trace should end");
        for entry in std::fs::read_dir(&work).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "in") && !path.with_extension("out").exists() {
                let bytes = std::fs::read(&path).unwrap();
                let x: Vec<f64> = bytes
                    .chunks(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                assert_eq!(x.len(), 6);
                let y: Vec<u8> = (0..6)
                    .flat_map(|i| (x[i] * x[(i + 1) % 6]).to_le_bytes())
                    .collect();
                std::fs::write(path.with_extension("out"), y).unwrap();
            }
        }
    }
    assert!(rounds >= 2, "baseline, then probe steps");
    let p = mtx::read_pattern(std::io::BufReader::new(
        std::fs::File::open(&out_path).unwrap(),
    ))
    .unwrap();
    assert_eq!(p.nnz(), 12);
    assert_eq!(p.row(5), &[0, 5]);
    // Running again reads everything from the journal and evaluates nothing.
    let o = nanprop(&args);
    assert!(o.status.success(), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn time_limits_out_of_range_are_errors_not_panics() {
    let dir = scratch("limits");
    let work = dir.join("work");
    let journal = dir.join("j.bin");
    for (flag, value) in [
        ("--wait", "1e300"),
        ("--timeout", "nan"),
        ("--timeout", "inf"),
        ("--timeout", "1e300"),
    ] {
        let o = nanprop(&[
            "trace",
            "--external",
            work.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
            "-n",
            "2",
            "-m",
            "2",
            flag,
            value,
        ]);
        assert_eq!(o.status.code(), Some(1), "{flag} {value}: {}", text(&o));
        assert!(
            text(&o).contains(flag) && !text(&o).contains("panicked"),
            "{flag} {value}: {}",
            text(&o)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The children of process `pid` (from /proc).
fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: u32 = rest.split(' ').nth(1).unwrap().parse().unwrap();
        if ppid == pid {
            found.push(child);
        }
    }
    found
}

/// Whether `pid` is running (not gone, not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            let rest = &stat[stat.rfind(')').unwrap() + 2..];
            !rest.starts_with('Z') && !rest.starts_with('X')
        })
        .unwrap_or(false)
}

#[test]
fn an_isolated_worker_dies_with_its_host() {
    let dir = scratch("orphan");
    let lib = build_model(&dir);
    let mut host = Command::new(env!("CARGO_BIN_EXE_nanprop"))
        .args([
            "trace",
            "--lib",
            lib.to_str().unwrap(),
            "--symbol",
            "spins",
            "--convention",
            "blackbox",
            "-n",
            "2",
            "-m",
            "2",
            "--isolate",
            "--timeout",
            "600",
            "--quiet",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the worker that spins on the NaN probe.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let worker = loop {
        let c = children(host.id());
        if let Some(&w) = c.first() {
            std::thread::sleep(std::time::Duration::from_millis(300));
            if running(w) {
                break w;
            }
        }
        assert!(std::time::Instant::now() < deadline, "no worker appeared");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    host.kill().unwrap(); // SIGKILL: the host cannot clean up
    host.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while running(worker) {
        assert!(
            std::time::Instant::now() < deadline,
            "worker {worker} still runs after its host was killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bare_library_name_finds_the_file_in_the_current_directory() {
    let dir = scratch("bare");
    build_model(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_nanprop"))
        .current_dir(&dir)
        .args([
            "trace",
            "--lib",
            "libmodel.so",
            "--symbol",
            "ring",
            "--convention",
            "c",
            "-n",
            "6",
            "-m",
            "6",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("nnz = 12,"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_external_directory_of_another_trace_is_refused() {
    let dir = scratch("stale");
    let work = dir.join("work");
    let args = |x0: &'static str, journal: &'static str| {
        vec![
            "trace".to_string(),
            "--external".to_string(),
            work.to_str().unwrap().to_string(),
            "--journal".to_string(),
            dir.join(journal).to_str().unwrap().to_string(),
            "-n".to_string(),
            "2".to_string(),
            "-m".to_string(),
            "2".to_string(),
            "--x0".to_string(),
            x0.to_string(),
        ]
    };
    let run = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        nanprop(&a)
    };
    // The first trace hands out its baseline and waits.
    let o = run(args("1,2", "a.bin"));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    // Its files are there; another trace (another point) must not read them.
    let o = run(args("5,7", "b.bin"));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("another trace"), "{}", text(&o));
    // The first goes on.
    let o = run(args("1,2", "a.bin"));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn points_and_outputs_as_users_write_them() {
    let dir = scratch("points");
    let lib = build_model(&dir);
    let lib = lib.to_str().unwrap().to_string();
    let run = |x0: &str, out: Option<&str>| {
        let mut args = vec![
            "trace",
            "--lib",
            &lib,
            "--symbol",
            "ring",
            "--convention",
            "c",
            "-n",
            "6",
            "-m",
            "6",
            "--quiet",
            "--x0",
            x0,
        ];
        if let Some(out) = out {
            args.extend(["--out", out]);
        }
        nanprop(&args)
    };
    // Negative numbers: MINPACK's standard starting points are.
    for x0 in ["-1", "-1,-2,-3,-4,-5,-6"] {
        let o = run(x0, None);
        assert!(o.status.success(), "{x0}: {}", text(&o));
        assert!(text(&o).contains("nnz = 12,"), "{x0}: {}", text(&o));
    }
    // A text file with comments and Fortran exponents, and raw little-endian doubles.
    let txt = dir.join("x0.txt");
    std::fs::write(
        &txt,
        "# initial guess\n1.0D0, 2.0d0 ! first two\n3 4\n5.5E0 -6\n",
    )
    .unwrap();
    let bin = dir.join("x0.bin");
    let bytes: Vec<u8> = (1..=6).flat_map(|v| (v as f64).to_le_bytes()).collect();
    std::fs::write(&bin, bytes).unwrap();
    for file in [&txt, &bin] {
        let o = run(file.to_str().unwrap(), None);
        assert!(o.status.success(), "{}: {}", file.display(), text(&o));
    }
    std::fs::write(&bin, [0u8; 40]).unwrap();
    let o = run(bin.to_str().unwrap(), None);
    assert!(text(&o).contains("48 bytes"), "{}", text(&o));
    // --out - writes the matrix to standard output and the summary to standard error.
    let o = run("1", Some("-"));
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stdout.starts_with("%%MatrixMarket"), "{stdout}");
    assert!(!stdout.contains("nnz ="), "{stdout}");
    assert!(stderr.contains("nnz = 12,"), "{stderr}");
    assert!(!dir.join("-").exists() && !std::path::Path::new("-").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wrong_convention_is_a_message_with_a_hint_never_a_signal() {
    let dir = scratch("convention");
    let lib = build_model(&dir);
    let lib = lib.to_str().unwrap();
    // `ring` is `void ring(const double *x, double *y)`; called as a Fortran subroutine it
    // gets (&n, x, &m, y): it reads and writes the wrong memory. Isolated by default.
    let o = nanprop(&[
        "trace",
        "--lib",
        lib,
        "--symbol",
        "ring",
        "--convention",
        "fortran",
        "-n",
        "6",
        "-m",
        "6",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("hint: ring was called as `subroutine f(n, x, m, y)`"),
        "{t}"
    );
    assert!(t.contains("`void f(const double *x, double *y)`: c"), "{t}");
    // --no-isolate runs it in this process (here with the right convention).
    let o = nanprop(&[
        "trace",
        "--lib",
        lib,
        "--symbol",
        "ring",
        "--convention",
        "c",
        "-n",
        "6",
        "-m",
        "6",
        "--quiet",
        "--no-isolate",
    ]);
    assert!(
        o.status.success() && text(&o).contains("nnz = 12,"),
        "{}",
        text(&o)
    );
    let o = nanprop(&[
        "trace",
        "--lib",
        lib,
        "--symbol",
        "ring",
        "--convention",
        "c",
        "-n",
        "6",
        "-m",
        "6",
        "--no-isolate",
        "--processes",
        "2",
    ]);
    assert!(
        !o.status.success(),
        "--no-isolate with --processes is refused"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_summary_entry_kinds_and_budget_warnings() {
    let dir = scratch("json");
    let lib = build_model(&dir);
    let lib = lib.to_str().unwrap();
    let base = [
        "trace",
        "--lib",
        lib,
        "--symbol",
        "ring",
        "--convention",
        "c",
        "-n",
        "6",
        "-m",
        "6",
        "--quiet",
    ];
    let o = nanprop(&[&base[..], &["--format", "json"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let json = String::from_utf8_lossy(&o.stdout);
    for field in [
        "\"n\": 6",
        "\"m\": 6",
        "\"nnz\": 12",
        "\"unresolved\": 0",
        "\"kinds\": {\"traced\": 12,",
        "\"nonfinite_rows\": []",
        "\"source\": \"",
    ] {
        assert!(json.contains(field), "{field} missing from {json}");
    }
    assert_eq!(json.trim().lines().count(), 1, "one JSON object: {json}");
    // A budget too small: the unresolved entries are counted, marked and warned about.
    let (out, kinds) = (dir.join("p.mtx"), dir.join("k.mtx"));
    let o = nanprop(
        &[
            &base[..],
            &[
                "--max-evaluations",
                "3",
                "--out",
                out.to_str().unwrap(),
                "--kinds",
                kinds.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("warning: the evaluation budget ran out"),
        "{stderr}"
    );
    let header = std::fs::read_to_string(&out).unwrap();
    assert!(header.contains("% entry kinds: traced"), "{header}");
    assert!(
        header.contains("unresolved entries are possible dependencies"),
        "{header}"
    );
    let k = std::fs::read_to_string(&kinds).unwrap();
    assert!(
        k.starts_with("%%MatrixMarket matrix coordinate integer general"),
        "{k}"
    );
    let entries: Vec<&str> = k.lines().filter(|l| !l.starts_with('%')).skip(1).collect();
    let p = mtx::read_pattern(std::io::BufReader::new(std::fs::File::open(&out).unwrap())).unwrap();
    assert_eq!(entries.len(), p.nnz());
    assert!(
        entries.iter().any(|l| l.ends_with(" 3")),
        "an unresolved entry (kind 3)"
    );
    assert!(
        entries
            .iter()
            .all(|l| l.ends_with(" 0") || l.ends_with(" 3")),
        "{k}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Noise: estimated and tolerated by default, said on standard error and in the JSON summary;
/// `--noise error` stops with the message; `--tolerance` is used as given.
#[test]
fn noise_is_said_or_stops_the_trace() {
    let dir = scratch("noise");
    let lib = build_model(&dir);
    let base = [
        "trace",
        "--lib",
        lib.to_str().unwrap(),
        "--symbol",
        "jitters",
        "--convention",
        "c",
        "-n",
        "40",
        "-m",
        "40",
        "--x0",
        "1.5",
        "--quiet",
        "--format",
        "json",
    ];
    let o = nanprop(&base);
    assert!(o.status.success(), "{}", text(&o));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(stdout.contains("\"nnz\": 40,"), "{stdout}");
    assert!(
        stderr.contains("note: the outputs jitter by about"),
        "{stderr}"
    );
    let field = |name: &str| -> f64 {
        let at = stdout.find(&format!("\"{name}\": ")).unwrap() + name.len() + 4;
        stdout[at..]
            .split([',', '}'])
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(field("noise") > 1e-14 && field("noise") < 2e-13, "{stdout}");
    assert!(field("tolerance") >= 100.0 * field("noise"), "{stdout}");
    let o = nanprop(&[&base[..], &["--noise", "error"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("noisy"), "{}", text(&o));
    let o = nanprop(&[&base[..], &["--tolerance", "1e-9"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"tolerance\": 1e-9"));
    let o = nanprop(&[&base[..], &["--tolerance", "-1"]].concat());
    assert!(!o.status.success(), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn jacobian_takes_the_trace_options_and_refuses_them_with_a_pattern() {
    let dir = scratch("jacobian-options");
    let lib = build_model(&dir);
    let lib = lib.to_str().unwrap();
    let out = dir.join("j.mtx");
    let base = [
        "jacobian",
        "--lib",
        lib,
        "--symbol",
        "ring",
        "--convention",
        "c",
        "-n",
        "6",
        "-m",
        "6",
        "--quiet",
        "--x0",
        "2",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = nanprop(&[&base[..], &["--strategy", "one-hot", "--no-verify"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("evaluations = 7,"),
        "one-hot: n + 1: {}",
        text(&o)
    );
    let pattern = dir.join("p.mtx");
    let o = nanprop(&[
        "trace",
        "--lib",
        lib,
        "--symbol",
        "ring",
        "--convention",
        "c",
        "-n",
        "6",
        "-m",
        "6",
        "--quiet",
        "--out",
        pattern.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let with_pattern = [&base[..], &["--pattern", pattern.to_str().unwrap()]].concat();
    let o = nanprop(&with_pattern);
    assert!(o.status.success(), "{}", text(&o));
    for extra in [
        &["--strategy", "chunked"][..],
        &["--journal", "j.jnl"],
        &["--no-verify"],
    ] {
        let o = nanprop(&[&with_pattern[..], extra].concat());
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {}", text(&o));
        assert!(text(&o).contains(extra[0]), "{extra:?}: {}", text(&o));
        assert!(text(&o).contains("--pattern"), "{}", text(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The entries of a real Matrix Market file: (row, column, value), 0-based.
fn read_real(path: &Path) -> Vec<(usize, usize, f64)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('%'));
    lines.next(); // the size line
    lines
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].parse::<usize>().unwrap() - 1,
                f[1].parse::<usize>().unwrap() - 1,
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn hessian_from_a_gradient_routine_and_a_smoothed_jacobian_across_steps() {
    let dir = scratch("hessian");
    let lib = build_model(&dir);
    let lib = lib.to_str().unwrap();
    let x: Vec<f64> = (0..37)
        .map(|i| 0.2 + 0.37 * (1.0 + 3.0 * i as f64).sin())
        .collect();
    let x0: Vec<String> = x.iter().map(|v| format!("{v:.17e}")).collect();
    let x0 = x0.join(",");
    let out = dir.join("H.mtx");
    let o = nanprop(&[
        "hessian",
        "--lib",
        lib,
        "--symbol",
        "grad_grid",
        "--convention",
        "c",
        "-n",
        "37",
        "-m",
        "37",
        "--x0",
        &x0,
        "--central",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // The global variable's dense row forces 37 column colors; star coloring needs a few.
    assert!(text(&o).contains("(column coloring: 37;"), "{}", text(&o));
    let stars: usize = text(&o)
        .split(" star colors")
        .next()
        .and_then(|t| t.rsplit(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or(usize::MAX);
    assert!(stars <= 7, "{}", text(&o));
    let h = read_real(&out);
    assert_eq!(
        h.len(),
        37 + 4 * 30 + 2 * 36,
        "stencil, edges both ways, global row and column"
    );
    let edge = |a: usize, b: usize| (a / 6 == b / 6 && a.abs_diff(b) == 1) || a.abs_diff(b) == 6;
    for &(i, j, v) in &h {
        let want = if i == j && i == 36 {
            1.0
        } else if i == j {
            let around: f64 = (0..36)
                .filter(|&k| edge(i, k))
                .map(|k| (x[i] - x[k]).cosh())
                .sum();
            around + 2.0 * x[36] * x[i]
        } else if i == 36 || j == 36 {
            let v = i.min(j);
            x[v] * x[v]
        } else {
            -(x[i] - x[j]).cosh()
        };
        assert!(
            (v - want).abs() < 1e-7 * want.abs().max(1.0),
            "({i}, {j}): {v} vs {want}"
        );
    }
    // -m must equal -n for a gradient.
    let o = nanprop(&[
        "hessian",
        "--lib",
        lib,
        "--symbol",
        "grad_grid",
        "--convention",
        "c",
        "-n",
        "37",
        "-m",
        "36",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains("as many outputs as inputs"),
        "{}",
        text(&o)
    );

    // The smoothed Jacobian of the steps, with sampled tracing finding the branch inputs.
    let xs: Vec<f64> = (0..11)
        .map(|i| 1.0 + 0.15 * (7.0 * i as f64).sin())
        .collect();
    let xs0: Vec<String> = xs.iter().map(|v| format!("{v:.17e}")).collect();
    let (sj, se) = (dir.join("S.mtx"), dir.join("E.mtx"));
    let o = nanprop(&[
        "jacobian",
        "--lib",
        lib,
        "--symbol",
        "steps",
        "--convention",
        "c",
        "-n",
        "11",
        "-m",
        "10",
        "--x0",
        &xs0.join(","),
        "--smooth",
        "0.1",
        "--smooth-absolute",
        "--samples",
        "400",
        "--quiet",
        "--out",
        sj.to_str().unwrap(),
        "--std-errors",
        se.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("800 evaluations (400 samples)"),
        "{}",
        text(&o)
    );
    let (values, errors) = (read_real(&sj), read_real(&se));
    assert_eq!(values.len(), 20, "each step's two inputs: {values:?}");
    let s2 = 0.1 * std::f64::consts::SQRT_2;
    let mut within = 0;
    for (&(i, j, v), &(_, _, e)) in values.iter().zip(&errors) {
        let d = xs[i] - xs[i + 1];
        let g = (-0.5 * d * d / (s2 * s2)).exp() / (2.0 * std::f64::consts::PI).sqrt() / s2;
        let want = if j == i { g + 2.0 } else { -g };
        within += usize::from((v - want).abs() <= 3.0 * e);
    }
    assert!(within >= 18, "{within} of 20 within 3 standard errors");
    // --central has no meaning for a smoothed Jacobian.
    let o = nanprop(&[
        "jacobian",
        "--lib",
        lib,
        "--symbol",
        "steps",
        "--convention",
        "c",
        "-n",
        "11",
        "-m",
        "10",
        "--smooth",
        "0.1",
        "--central",
        "--out",
        sj.to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains("--central"),
        "{}",
        text(&o)
    );
}
