//! Bad option values through the C ABI: a clear error status and message, never a panic or a
//! hang.

use nanprop::ffi::*;
use std::ffi::{c_int, c_void, CStr};

unsafe extern "C" fn identity(
    _: *mut c_void,
    n: usize,
    x: *const f64,
    _: usize,
    y: *mut f64,
) -> c_int {
    unsafe { std::ptr::copy_nonoverlapping(x, y, n) };
    0
}

fn trace_with(edit: impl Fn(&mut nanprop_options)) -> (nanprop_status, String) {
    let mut o = std::mem::MaybeUninit::uninit();
    let mut o = unsafe {
        nanprop_options_init(o.as_mut_ptr());
        o.assume_init()
    };
    edit(&mut o);
    let x0 = [1.0, 2.0, 3.0];
    let mut p = std::ptr::null_mut();
    let s = unsafe {
        nanprop_trace(
            Some(identity),
            std::ptr::null_mut(),
            3,
            3,
            x0.as_ptr(),
            &o,
            &mut p,
        )
    };
    unsafe { nanprop_pattern_free(p) };
    let msg = unsafe { CStr::from_ptr(nanprop_last_error()) }
        .to_string_lossy()
        .into_owned();
    (s, msg)
}

#[test]
fn out_of_range_options_are_invalid_arguments_naming_the_field() {
    type Edit = fn(&mut nanprop_options);
    let cases: [(&str, Edit); 7] = [
        ("timeout", |o| o.timeout = 1e20),
        ("timeout", |o| o.timeout = f64::NAN),
        ("timeout", |o| o.timeout = f64::INFINITY),
        ("timeout", |o| o.timeout = -1.0),
        ("sample_points", |o| o.sample_points = usize::MAX),
        ("threads", |o| o.threads = 100_000),
        ("processes", |o| o.processes = 100_000),
    ];
    for (field, edit) in cases {
        let start = std::time::Instant::now();
        let (s, msg) = trace_with(edit);
        assert_eq!(
            s,
            nanprop_status::NANPROP_ERR_INVALID_ARGUMENT,
            "{field}: {msg}"
        );
        assert!(
            msg.contains(field) && !msg.contains("internal"),
            "{field}: {msg}"
        );
        assert!(start.elapsed().as_secs() < 5, "{field}: refused at once");
    }
    // The largest accepted values still trace.
    let (s, msg) = trace_with(|o| o.timeout = 1e9);
    assert_eq!(s, nanprop_status::NANPROP_OK, "{msg}");
}
