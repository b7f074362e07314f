//! Loaded handles in the C ABI: shared by threads, re-entered from their own evaluations,
//! traced with `threads`, and tied to their library by journals.

mod common;

use nanprop::ffi::*;
use std::ffi::{c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};

/// A C library exporting `ring`: y_i = x_i * x_{(i+1) mod n} + `extra` x_{(i+2) mod n}, in the
/// nanprop_blackbox convention (thread-safe while no hook is set), and `set_hook`: a function
/// that `ring` calls once, on its next evaluation, as a legacy code calling back into its host
/// would.
fn ring_library(dir: &Path, name: &str, extra: f64) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(
        &src,
        format!(
            "#include <stddef.h>\n\
             static int (*hook)(void *); static void *hook_arg;\n\
             void set_hook(int (*h)(void *), void *arg) {{ hook = h; hook_arg = arg; }}\n\
             int ring(void *u, size_t n, const double *x, size_t m, double *y) {{\n\
               (void)u; (void)m;\n\
               if (hook) {{ int (*h)(void *) = hook; hook = 0; if (h(hook_arg)) return 77; }}\n\
               for (size_t i = 0; i < n; i++)\n\
                 y[i] = x[i] * x[(i + 1) % n] + {extra:?} * x[(i + 2) % n];\n\
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
    std::env::temp_dir().join(format!("nanprop-loaded-{name}-{}", std::process::id()))
}

const N: usize = 12;

fn open(lib: &Path) -> *mut nanprop_loaded {
    let path = CString::new(lib.to_str().unwrap()).unwrap();
    let mut h = std::ptr::null_mut();
    let s = unsafe {
        nanprop_loaded_open(
            path.as_ptr(),
            c"ring".as_ptr(),
            NANPROP_CONVENTION_BLACKBOX,
            N,
            N,
            0,
            &mut h,
        )
    };
    assert_eq!(s, nanprop_status::NANPROP_OK, "{}", last_error());
    h
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(nanprop_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// The pattern's CSR column indices, after checking the status.
fn columns(s: nanprop_status, p: *mut nanprop_pattern) -> Vec<usize> {
    assert_eq!(s, nanprop_status::NANPROP_OK, "{}", last_error());
    unsafe {
        let nnz = nanprop_pattern_nnz(p);
        let mut rp = vec![0usize; N + 1];
        let mut ci = vec![0usize; nnz];
        assert_eq!(
            nanprop_pattern_csr(p, rp.as_mut_ptr(), ci.as_mut_ptr()),
            nanprop_status::NANPROP_OK
        );
        nanprop_pattern_free(p);
        ci
    }
}

fn truth() -> Vec<usize> {
    (0..N)
        .flat_map(|i| {
            let mut r = vec![i, (i + 1) % N, (i + 2) % N];
            r.sort();
            r
        })
        .collect()
}

fn options() -> nanprop_options {
    let mut o = std::mem::MaybeUninit::uninit();
    unsafe {
        nanprop_options_init(o.as_mut_ptr());
        o.assume_init()
    }
}

fn trace(h: *const nanprop_loaded, o: &nanprop_options) -> (nanprop_status, *mut nanprop_pattern) {
    let x0: Vec<f64> = (0..N).map(|j| 1.0 + 0.1 * j as f64).collect();
    let mut p = std::ptr::null_mut();
    let s = unsafe { nanprop_loaded_trace(h, x0.as_ptr(), o, &mut p) };
    (s, p)
}

/// The handle's address as an integer, so threads can share it (the ABI allows it).
#[derive(Clone, Copy)]
struct Shared(usize);

#[test]
fn a_handle_shared_by_four_threads_traces_correctly() {
    let dir = scratch("threads");
    let h = open(&ring_library(&dir, "ring", 0.5));
    let shared = Shared(h as usize);
    let handles: Vec<_> = (0..4)
        .map(|k| {
            std::thread::spawn(move || {
                let h = shared.0 as *const nanprop_loaded;
                let mut o = options();
                // Half of them also evaluate on 4 threads of their own.
                o.threads = if k % 2 == 0 { 4 } else { 0 };
                let (s, p) = trace(h, &o);
                columns(s, p)
            })
        })
        .collect();
    for t in handles {
        assert_eq!(t.join().expect("no thread panicked"), truth());
    }
    unsafe { nanprop_loaded_close(h) };
    let _ = std::fs::remove_dir_all(&dir);
}

/// The hook: traces the handle `arg` from inside one of its own evaluations; nonzero if that
/// trace is wrong.
extern "C" fn nested_trace(arg: *mut c_void) -> c_int {
    let (s, p) = trace(arg as *const nanprop_loaded, &options());
    c_int::from(columns(s, p) != truth())
}

#[test]
fn a_handle_reentered_from_its_own_evaluation_works() {
    let dir = scratch("reenter");
    let lib = ring_library(&dir, "ring", 0.5);
    let h = open(&lib);
    // The same library, opened by the test to set its hook (dlopen shares the instance).
    let library = unsafe { libloading::Library::new(&lib) }.unwrap();
    type SetHook = unsafe extern "C" fn(extern "C" fn(*mut c_void) -> c_int, *mut c_void);
    let set_hook = unsafe { library.get::<SetHook>(b"set_hook") }.unwrap();
    unsafe { set_hook(nested_trace, h as *mut c_void) };
    let (s, p) = trace(h, &options());
    assert_eq!(columns(s, p), truth());
    unsafe { nanprop_loaded_close(h) };
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_journal_of_another_library_is_refused() {
    let dir = scratch("journal");
    let journal = CString::new(dir.join("j.bin").to_str().unwrap()).unwrap();
    let a = open(&ring_library(&dir.join("a"), "ring", 0.5));
    // Same n, m, symbol and x0; another function.
    let b = open(&ring_library(&dir.join("b"), "ring", 0.0));
    let mut o = options();
    o.journal = journal.as_ptr();
    let (s, p) = trace(a, &o);
    assert_eq!(columns(s, p), truth());
    // The same library resumes from the journal; another one is refused, naming the reason.
    let (s, p) = trace(a, &o);
    assert_eq!(columns(s, p), truth());
    let (s, p) = trace(b, &o);
    assert_eq!(s, nanprop_status::NANPROP_ERR_INVALID_ARGUMENT);
    assert!(p.is_null());
    let msg = last_error();
    assert!(msg.contains("belongs to another function"), "{msg}");
    assert!(
        msg.contains("b/libring.so"),
        "the message names this trace's library: {msg}"
    );
    unsafe {
        nanprop_loaded_close(a);
        nanprop_loaded_close(b);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn libraries_bind_at_open_and_bare_names_mean_one_thing() {
    use nanprop::loader::{Convention, IntKind, LoadedBlackBox};
    use nanprop::Precision;
    let dir = scratch("binding");
    std::fs::create_dir_all(&dir).unwrap();
    // A library that needs a function nobody provides: refused when opened, naming it, instead
    // of a "symbol lookup error" that ends the process in the middle of a trace.
    let src = dir.join("needs.c");
    std::fs::write(
        &src,
        "#include <stddef.h>\ndouble nanprop_test_missing(double);\n\
         int ring(void *u, size_t n, const double *x, size_t m, double *y) {\n\
           (void)u; (void)n; (void)m; y[0] = nanprop_test_missing(x[0]); return 0; }\n",
    )
    .unwrap();
    let lib = dir.join("libneeds.so");
    common::shared_library(&src, &lib);
    let e = LoadedBlackBox::open(
        &lib,
        "ring",
        Convention::Blackbox,
        1,
        1,
        IntKind::I4,
        Precision::Double,
    )
    .err()
    .expect("refused at open");
    assert!(e.message.contains("nanprop_test_missing"), "{}", e.message);
    // A bare name not in the current directory is the system's library.
    let libm = LoadedBlackBox::open(
        std::path::Path::new("libm.so.6"),
        "cos",
        Convention::C,
        1,
        1,
        IntKind::I4,
        Precision::Double,
    );
    assert!(libm.is_ok(), "{:?}", libm.err());
    let e = LoadedBlackBox::open(
        std::path::Path::new("libnanprop_nowhere.so"),
        "f",
        Convention::C,
        1,
        1,
        IntKind::I4,
        Precision::Double,
    )
    .err()
    .unwrap();
    assert!(
        e.message.contains("not in the current directory")
            && e.message.contains("system's library search"),
        "{}",
        e.message
    );
    let _ = std::fs::remove_dir_all(&dir);
}
