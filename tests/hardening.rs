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

#[test]
fn hostile_matrix_market_files_are_errors_with_bounded_memory() {
    use nanprop::pattern::mtx::read_pattern;
    let read = |text: &[u8]| read_pattern(std::io::BufReader::new(text));
    let cases: [(&[u8], &str); 6] = [
        // A symmetric header on a non-square size.
        (
            b"%%MatrixMarket matrix coordinate pattern symmetric\n3 2 1\n3 1\n",
            "must be square",
        ),
        // Sizes beyond any index, or beyond what a 40-byte file can mean.
        (
            b"%%MatrixMarket matrix coordinate pattern general\n18446744073709551615 2 1\n1 1\n",
            "at most",
        ),
        (
            b"%%MatrixMarket matrix coordinate pattern general\n10000000000 2 1\n1 1\n",
            "at most",
        ),
        (
            b"%%MatrixMarket matrix coordinate pattern general\n2 2 18446744073709551615\n1 1\n",
            "holds 1",
        ),
        (
            b"%%MatrixMarket matrix coordinate pattern general\n2 2 100000000000000000\n1 1\n",
            "holds 1",
        ),
        // More entries than the size line says.
        (
            b"%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1\n2 2\n",
            "more entries",
        ),
    ];
    for (text, expected) in cases {
        let e = read(text).unwrap_err();
        assert!(e.message.contains(expected), "{expected}: {}", e.message);
    }
    // A huge line without a newline: refused after 4 KiB, and not echoed.
    let mut long = b"%%MatrixMarket matrix coordinate pattern general\n".to_vec();
    long.extend(std::iter::repeat_n(b'7', 10_000_000));
    let e = read(&long).unwrap_err();
    assert!(
        e.message.contains("longer than 4096 bytes"),
        "{}",
        e.message
    );
    assert!(e.message.len() < 200, "the line is not echoed");
}
