//! Compiles every C program in c_tests/ against the committed include/nanprop.h, links it with
//! the library cargo built (shared, and static), runs it, and fails if it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// target/<profile>/, where cargo puts libnanprop.so and libnanprop.a.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/..")
        .to_path_buf()
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

/// Compiles `src` into `exe`, linked shared (with an rpath) or static.
fn build(src: &Path, exe: &Path, shared: bool) {
    let lib = lib_dir();
    let mut cmd = compiler().to_command();
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .arg("-I")
        .arg(root().join("include"))
        .arg(src)
        .arg("-o")
        .arg(exe);
    if shared {
        cmd.arg(format!("-L{}", lib.display()))
            .arg("-lnanprop")
            .arg(format!("-Wl,-rpath,{}", lib.display()));
    } else {
        cmd.arg(lib.join("libnanprop.a"))
            .args(["-lpthread", "-ldl"]);
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
    let out_dir = std::env::temp_dir().join(format!("nanprop-c-tests-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    for src in &sources {
        let stem = src.file_stem().unwrap().to_string_lossy().to_string();
        for shared in [true, false] {
            let exe = out_dir.join(format!(
                "{stem}-{}",
                if shared { "shared" } else { "static" }
            ));
            build(src, &exe, shared);
            run(&exe);
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}
