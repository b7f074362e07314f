//! Compiles every C program in c_tests/ against the committed include/nanprop.h, links it with
//! the library cargo built (shared, and static), runs it, and fails if it fails.

mod common;

use common::{build, c_libraries, root, tool_available};
use std::path::{Path, PathBuf};
use std::process::Command;

fn c_sources() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("c_tests"))
        .expect("c_tests/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    v.sort();
    v
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

#[test]
fn c_programs_are_clean_under_valgrind() {
    if !tool_available("valgrind", "the valgrind run") {
        return;
    }
    let (shared_lib, _) = c_libraries();
    let out_dir = std::env::temp_dir().join(format!("nanprop-valgrind-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    for src in c_sources() {
        let stem = src.file_stem().unwrap().to_string_lossy().to_string();
        // Valgrind does not model floating-point trap masks or exception flags, which are what
        // test_fpenv checks.
        if stem == "test_fpenv" {
            continue;
        }
        let exe = out_dir.join(&stem);
        build(&src, &exe, &shared_lib);
        let out = Command::new("valgrind")
            .args([
                "--error-exitcode=99",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite,indirect",
                "--show-leak-kinds=definite,indirect",
                // Isolation tests crash forked workers on purpose; check the host process.
                "--child-silent-after-fork=yes",
                "-q",
            ])
            .arg(&exe)
            .current_dir(&out_dir)
            .output()
            .expect("run valgrind");
        assert!(
            out.status.success(),
            "{stem} under valgrind ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}
