//! Libraries whose constructors end the process that loads them: opened "in a worker" (the
//! command line's default, `NANPROP_CONVENTION_OPEN_IN_WORKER` in C) they are a clear error,
//! not the end of the caller, and a library that loads fine is only ever loaded by the workers
//! of an isolated trace.

mod common;

use nanprop::ffi::*;
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A library exporting `band` (nanprop_blackbox convention, y_i = x_{i-1} + x_i * x_{i+1})
/// whose constructor runs `ctor` first.
fn library(dir: &Path, name: &str, ctor: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(
        &src,
        format!(
            "#include <signal.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n\
             __attribute__((constructor)) static void init(void) {{ {ctor} }}\n\
             int band(void *u, size_t n, const double *x, size_t m, double *y) {{\n\
               (void)u; (void)m;\n\
               for (size_t i = 0; i < n; i++)\n\
                 y[i] = (i > 0 ? x[i - 1] : 0.0) + x[i] * (i + 1 < n ? x[i + 1] : 1.0);\n\
               return 0;\n\
             }}\n"
        ),
    )
    .unwrap();
    let lib = dir.join(format!("lib{name}.so"));
    common::shared_library(&src, &lib);
    lib
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nanprop-ctor-{name}-{}", std::process::id()))
}

/// `nanprop_loaded_open` of `symbol` in `lib` opened in a worker: the status, the message and
/// the handle.
fn open_in_worker(lib: &Path, symbol: &str) -> (nanprop_status, String, *mut nanprop_loaded) {
    let path = CString::new(lib.to_str().unwrap()).unwrap();
    let symbol = CString::new(symbol).unwrap();
    let mut h = std::ptr::null_mut();
    let s = unsafe {
        nanprop_loaded_open(
            path.as_ptr(),
            symbol.as_ptr(),
            NANPROP_CONVENTION_BLACKBOX | NANPROP_CONVENTION_OPEN_IN_WORKER,
            8,
            8,
            4,
            &mut h,
        )
    };
    let msg = unsafe { CStr::from_ptr(nanprop_last_error()) }
        .to_string_lossy()
        .into_owned();
    (s, msg, h)
}

#[test]
fn a_constructor_that_aborts_or_exits_is_an_error_naming_it() {
    let dir = scratch("bad");
    for (name, ctor, how) in [
        ("aborts", "abort();", "SIGABRT"),
        ("exits", "exit(3);", "exit(3)"),
        ("crashes", "raise(SIGSEGV);", "SIGSEGV"),
    ] {
        let lib = library(&dir, name, ctor);
        let (s, msg, h) = open_in_worker(&lib, "band");
        assert!(h.is_null(), "{name}: {s:?} {msg}");
        assert_eq!(s, nanprop_status::NANPROP_ERR_BLACKBOX, "{name}: {msg}");
        assert!(
            msg.contains(how) && msg.contains("constructor"),
            "{name}: {msg}"
        );
        assert!(msg.contains(lib.to_str().unwrap()), "{name}: {msg}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn opened_in_a_worker_the_usual_errors_still_come_back() {
    let dir = scratch("errors");
    let lib = library(&dir, "fine", "");
    let (s, msg, _) = open_in_worker(&lib, "no_such_function");
    assert_eq!(s, nanprop_status::NANPROP_ERR_INVALID_ARGUMENT, "{msg}");
    assert!(msg.contains("no_such_function not found"), "{msg}");
    let text = dir.join("not-a-library.so");
    std::fs::write(&text, "hello").unwrap();
    let (s, msg, _) = open_in_worker(&text, "band");
    assert_eq!(s, nanprop_status::NANPROP_ERR_INVALID_ARGUMENT, "{msg}");
    assert!(msg.contains("not a loadable shared library"), "{msg}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `nanprop trace` of `band` in `lib` (n = m = 8) with `flags`, writing the pattern to `out`.
fn trace(lib: &Path, flags: &[&str], out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nanprop"));
    c.arg("trace").args(flags).arg("--lib").arg(lib);
    c.args([
        "--symbol",
        "band",
        "--convention",
        "blackbox",
        "-n",
        "8",
        "-m",
        "8",
    ])
    .args(["--x0", "0.5", "--quiet", "--out"])
    .arg(out);
    c
}

/// The constructor appends its process id to a file: which processes loaded the library.
fn loaders(marks: &Path) -> Vec<u32> {
    std::fs::read_to_string(marks)
        .unwrap_or_default()
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect()
}

#[test]
fn an_isolated_trace_of_the_command_line_never_loads_the_library_itself() {
    let dir = scratch("marks");
    let marks = dir.join("loaded-by.txt");
    let ctor = format!(
        "FILE *f = fopen(\"{}\", \"a\"); if (f) {{ fprintf(f, \"%d \", (int)getpid()); fclose(f); }}",
        marks.display()
    );
    let lib = library(&dir, "marked", &ctor);
    let out = dir.join("band.mtx");
    let child = trace(&lib, &[], &out).spawn().unwrap();
    let host = child.id();
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "{done:?}");
    let pattern = std::fs::read_to_string(&out).unwrap();
    assert!(pattern.contains("\n8 8 22\n"), "{pattern}");
    let pids = loaders(&marks);
    // Loaded twice, by worker processes: the check of the library when it is opened, and the
    // worker's spawner, whose children (one per evaluation) inherit it loaded.
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(!pids.contains(&host), "the host {host} loaded it: {pids:?}");

    // Not isolated, the command loads it itself.
    std::fs::remove_file(&marks).unwrap();
    let child = trace(&lib, &["--no-isolate"], &out).spawn().unwrap();
    let host = child.id();
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(loaders(&marks), vec![host]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_command_line_reports_a_library_whose_constructor_aborts() {
    let dir = scratch("cli");
    let lib = library(&dir, "aborting", "abort();");
    let out = trace(&lib, &[], &dir.join("p.mtx")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("SIGABRT") && stderr.contains("constructor"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_library_whose_constructor_aborts_in_the_spawner_is_named_on_the_first_evaluation() {
    // The constructor aborts from its second load on: the check when the library is opened
    // passes, the worker's spawner (which loads it for its children) dies of it.
    let dir = scratch("late");
    let count = dir.join("loads.txt");
    let ctor = format!(
        "FILE *f = fopen(\"{}\", \"a+\"); long k = 0; if (f) {{ fseek(f, 0, SEEK_END); \
         k = ftell(f); fputc('x', f); fclose(f); }} if (k >= 1) abort();",
        count.display()
    );
    let lib = library(&dir, "late", &ctor);
    let out = trace(&lib, &[], &dir.join("p.mtx")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("killed by SIGABRT") && stderr.contains("baseline"),
        "{stderr}"
    );
    // Named as the library's loading, not as a call: no hint about how the routine is called.
    assert!(
        stderr.contains("while making it ready") && stderr.contains("constructor"),
        "{stderr}"
    );
    assert!(!stderr.contains("hint:"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}
