//! Compiles every C program in c_tests/ against the committed include/nanprop.h, links it with
//! the library cargo built (shared, and static), runs it, and fails if it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The C libraries (shared, static) of this crate. `cargo test` builds only the rlib that Rust
/// tests link, so this builds the cdylib and staticlib with the same cargo, profile and target
/// directory, and takes their paths from cargo's JSON messages.
fn c_libraries() -> (PathBuf, PathBuf) {
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

fn compiler() -> cc::Tool {
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

fn c_sources() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("c_tests"))
        .expect("c_tests/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    v.sort();
    v
}

/// Compiles `src` into `exe`, linked with the shared library (with an rpath) or the static one.
fn build(src: &Path, exe: &Path, lib: &Path) {
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

/// The README's complete C programs (```c blocks with a `main`), so the documented API is
/// compiled and run as written.
fn readme_programs() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    readme
        .split("```c\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .filter(|code| code.contains("int main"))
        .map(str::to_string)
        .collect()
}

fn run(exe: &Path) {
    let out = Command::new(exe).output().expect("run the C test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    assert!(
        out.status.success(),
        "{} failed ({}):\n{stdout}{stderr}",
        exe.display(),
        out.status
    );
    assert!(
        stdout.contains(", 0 failed"),
        "{} printed no test summary:\n{stdout}",
        exe.display()
    );
}

#[test]
fn c_programs_pass_linked_shared_and_static() {
    let sources = c_sources();
    assert!(sources.len() >= 3, "c_tests/ holds the C tests");
    let (shared_lib, static_lib) = c_libraries();
    let out_dir = std::env::temp_dir().join(format!("nanprop-c-tests-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    for src in &sources {
        let stem = src.file_stem().unwrap().to_string_lossy().to_string();
        for (lib, kind) in [(&shared_lib, "shared"), (&static_lib, "static")] {
            let exe = out_dir.join(format!("{stem}-{kind}"));
            build(src, &exe, lib);
            run(&exe);
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn readme_c_programs_compile_and_run() {
    let programs = readme_programs();
    assert!(
        programs.len() >= 2,
        "the README shows the trace and Jacobian C examples"
    );
    let (shared_lib, _) = c_libraries();
    let dir = std::env::temp_dir().join(format!("nanprop-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (k, code) in programs.iter().enumerate() {
        let src = dir.join(format!("readme{k}.c"));
        std::fs::write(&src, code).unwrap();
        let exe = dir.join(format!("readme{k}"));
        build(&src, &exe, &shared_lib);
        let out = Command::new(&exe).output().expect("run the README program");
        assert!(
            out.status.success(),
            "README program {k} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!("{}", String::from_utf8_lossy(&out.stdout));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
