//! Running out of memory is an error, not an abort: a trace of n = m = 10^7 under an address
//! space limit (`ulimit -v`) must return NANPROP_ERR_OUT_OF_MEMORY whatever the limit, never kill
//! the process with "memory allocation of N bytes failed".
//!
//! Each limit runs in a child process (this test binary run again with an environment variable
//! naming the limit), since a limit cannot be lifted once set and an abort would end the test.

use nanprop::ffi::*;
use std::ffi::{c_int, c_void, CStr};
use std::process::{Command, Stdio};

const N: usize = 10_000_000;

/// Tridiagonal: y_i = x_{i-1} + 2 x_i + x_{i+1}.
unsafe extern "C" fn tridiagonal(
    _: *mut c_void,
    n: usize,
    x: *const f64,
    _: usize,
    y: *mut f64,
) -> c_int {
    let x = unsafe { std::slice::from_raw_parts(x, n) };
    let y = unsafe { std::slice::from_raw_parts_mut(y, n) };
    for i in 0..n {
        let l = if i > 0 { x[i - 1] } else { 0.0 };
        let r = if i + 1 < n { x[i + 1] } else { 0.0 };
        y[i] = l + 2.0 * x[i] + r;
    }
    0
}

/// The child: sets the limit, traces, prints the status and message.
fn child(limit_mb: u64) {
    let bytes = limit_mb << 20;
    let lim = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) }, 0);
    let mut x0 = Vec::new();
    if x0.try_reserve_exact(N).is_err() {
        println!("\nSTATUS skip: no room for x0");
        return;
    }
    x0.resize(N, 1.0f64);
    let mut o = std::mem::MaybeUninit::uninit();
    let o = unsafe {
        nanprop_options_init(o.as_mut_ptr());
        o.assume_init()
    };
    let mut p = std::ptr::null_mut();
    let s = unsafe {
        nanprop_trace(
            Some(tridiagonal),
            std::ptr::null_mut(),
            N,
            N,
            x0.as_ptr(),
            &o,
            &mut p,
        )
    };
    let msg = unsafe { CStr::from_ptr(nanprop_last_error()) }.to_string_lossy();
    let nnz = if p.is_null() {
        0
    } else {
        unsafe { nanprop_pattern_nnz(p) }
    };
    println!("STATUS {} nnz {nnz}: {msg}", s as i32);
    unsafe { nanprop_pattern_free(p) };
}

#[test]
fn a_trace_of_ten_million_under_an_address_space_limit_reports_out_of_memory() {
    if let Ok(limit) = std::env::var("NANPROP_OOM_LIMIT_MB") {
        child(limit.parse().unwrap());
        return;
    }
    let exe = std::env::current_exe().unwrap();
    // Limits between what x0 alone needs and what the whole trace needs, so that each one
    // runs out at a different place. The children run at once (each is capped).
    let limits = [400u64, 700, 1000, 1300, 1600];
    let children: Vec<_> = limits
        .iter()
        .map(|limit_mb| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "a_trace_of_ten_million_under_an_address_space_limit_reports_out_of_memory",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("NANPROP_OOM_LIMIT_MB", limit_mb.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (limit_mb, child) in limits.into_iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stdout
            .lines()
            .find_map(|l| l.find("STATUS").map(|k| &l[k..]))
            .unwrap_or_else(|| {
                panic!(
                    "limit {limit_mb} MB: the child died ({:?}) without a status\n{stderr}",
                    out.status
                )
            });
        eprintln!("limit {limit_mb} MB: {line}");
        let oom = format!(
            "STATUS {} ",
            nanprop_status::NANPROP_ERR_OUT_OF_MEMORY as i32
        );
        let ok = format!(
            "STATUS {} nnz {}",
            nanprop_status::NANPROP_OK as i32,
            3 * N - 2
        );
        assert!(
            line.starts_with(&oom) || line.starts_with(&ok),
            "limit {limit_mb} MB: {line}"
        );
        assert!(
            out.status.success(),
            "limit {limit_mb} MB: {:?}",
            out.status
        );
    }
}
