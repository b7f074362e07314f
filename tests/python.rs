//! The Python package (`python/`): built and installed into a virtual environment, then its
//! pytest suite, so that the README's one test command runs the Python tests too.
//!
//! The interpreter is `$NANPROP_PYTHON`, else `.venv/bin/python` at the repository's root
//! (`.ci/run` makes it, with maturin, numpy, SciPy and pytest). Without one the test is
//! skipped, except under CI (CI set), where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NANPROP_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    venv.exists().then_some(venv)
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed:\n{text}");
    println!("{text}");
}

#[test]
fn the_python_package_builds_and_its_tests_pass() {
    let Some(python) = python() else {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
        assert!(
            !ci,
            "no Python environment (.venv/bin/python or NANPROP_PYTHON), and CI requires the \
             Python tests (.ci/run makes it)"
        );
        eprintln!("skipped: no .venv/bin/python (python3 -m venv .venv && .venv/bin/pip install maturin numpy scipy pytest)");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The environment's own programs (maturin) first, as an activated environment has them.
    let bin = python.parent().map(Path::to_path_buf).unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    // The package as a user installs it, from this tree (rebuilt when the sources changed).
    run(
        Command::new(&python)
            .current_dir(root)
            .env("PATH", &path)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
            ])
            .arg("./python"),
        "pip install ./python",
    );
    // From the root, so that python/nanprop (sources without the compiled module) does not
    // shadow the installed package.
    run(
        Command::new(&python)
            .current_dir(root)
            .env("PATH", &path)
            .args(["-m", "pytest", "-q", "python/tests"]),
        "pytest python/tests",
    );
}
