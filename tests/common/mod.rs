//! Helpers shared by the integration tests that build C and Fortran code against nanprop.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The crate's directory.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The C libraries (shared, static) of this crate. `cargo test` builds only the rlib that Rust
/// tests link, so this builds the cdylib and staticlib with the same cargo, profile and target
/// directory, and takes their paths from cargo's JSON messages.
pub fn c_libraries() -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/..");
    let target_dir = profile_dir.parent().expect("target/");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root())
        .args([
            "build",
            "--lib",
            "--message-format=json-render-diagnostics",
            "--target-dir",
        ])
        .arg(target_dir);
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("run cargo build --lib");
    assert!(
        out.status.success(),
        "cargo build --lib failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut shared, mut stat) = (None, None);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if !line.contains("\"compiler-artifact\"") || !line.contains("\"name\":\"nanprop\"") {
            continue;
        }
        for path in line.split('"').filter(|s| s.contains("libnanprop.")) {
            let path = PathBuf::from(path);
            match path.extension().and_then(|e| e.to_str()) {
                Some("so") | Some("dylib") => shared = Some(path),
                Some("a") => stat = Some(path),
                _ => {}
            }
        }
    }
    (
        shared.expect("cargo built libnanprop.so"),
        stat.expect("cargo built libnanprop.a"),
    )
}

pub fn compiler() -> cc::Tool {
    let target = env!("NANPROP_TARGET");
    cc::Build::new()
        .target(target)
        .host(target)
        .opt_level(0)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .try_get_compiler()
        .expect("a C compiler")
}

/// Compiles the C file `src` into the shared library `lib` (-shared -fPIC -O1), failing the
/// test with the compiler's message if it does not compile.
pub fn shared_library(src: &Path, lib: &Path) {
    let out = compiler()
        .to_command()
        .args(["-shared", "-fPIC", "-O1"])
        .arg(src)
        .arg("-o")
        .arg(lib)
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `src` into `exe`, linked with the shared library (with an rpath) or the static one.
pub fn build(src: &Path, exe: &Path, lib: &Path) {
    let shared = lib.extension().is_some_and(|e| e != "a");
    let dir = lib.parent().expect("library directory");
    let mut cmd = compiler().to_command();
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .arg("-I")
        .arg(root().join("include"))
        .arg(src)
        .arg("-o")
        .arg(exe);
    if shared {
        cmd.arg(format!("-L{}", dir.display()))
            .arg("-lnanprop")
            .arg(format!("-Wl,-rpath,{}", dir.display()));
    } else {
        cmd.arg(lib).args(["-lpthread", "-ldl"]);
    }
    cmd.arg("-lm");
    let out = cmd.output().expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling {} failed:\n{}{}",
        src.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether `tool` runs (`tool --version`). Missing, it skips the calling test with a note,
/// except under CI (CI set), where the test is required and a missing tool fails it.
pub fn tool_available(tool: &str, why: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
        assert!(
            !ci,
            "{tool} is missing, and CI requires {why} (.ci/run installs it)"
        );
        eprintln!("{tool} not found: {why} skipped");
    }
    found
}

/// The model every trace test can check exactly: y_i = 1 + sum over row i of `truth` of
/// (1 + j/1000) x_j. Every dependency propagates NaN and moves with a finite step.
pub fn row_sums(truth: &nanprop::Pattern, x: &[f64], y: &mut [f64]) {
    for (i, yi) in y.iter_mut().enumerate() {
        *yi = 1.0
            + truth
                .row(i)
                .iter()
                .map(|&j| x[j as usize] * (1.0 + 1e-3 * j as f64))
                .sum::<f64>();
    }
}
