//! Fuzz targets for nanprop, for libFuzzer (see `fuzz/run.sh`, which builds this crate with
//! coverage instrumentation and links each target into its own fuzzer binary).
//!
//! - `nanprop_fuzz_mtx`: the Matrix Market reader, on the input as a file. A pattern it accepts
//!   must be valid, survive writing and reading back unchanged, and color.
//! - `nanprop_fuzz_csr`: `nanprop_pattern_from_csr` on arrays read from the input, then every
//!   accessor and a coloring and Jacobian plan of what it accepts.
//! - `nanprop_fuzz_options`: the three option structs (trace, coloring, Jacobian) filled with
//!   the input's bytes, used on a small black box.
//!
//! A target fails (aborts, which libFuzzer reports with the input) when nanprop panics (the C
//! ABI turns a panic into NANPROP_ERR_INTERNAL, which the targets treat as a crash) or breaks a
//! property above. Each process runs under a 1.5 GB address-space limit, so that an allocation
//! sized by a hostile input is an out-of-memory *error* here rather than memory really used.
//!
//! What the targets do not fuzz, because the C contract puts it on the caller: pointers (a
//! pointer field gets NULL or a valid value chosen by a byte), array lengths (the arrays passed
//! have the lengths declared), and sizes that are valid but slow (a trace at 2^20 sampled
//! points: the counts of points, threads and processes are capped).

use nanprop::ffi::*;
use std::ffi::{c_int, c_void, CString};
use std::sync::Once;

/// Caps the address space once per process (see the crate docs).
fn limit_memory() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let bytes = 1536u64 << 20;
        let lim = libc_rlimit(bytes);
        // SAFETY: a valid rlimit.
        unsafe { setrlimit(RLIMIT_AS, &lim) };
    });
}

#[repr(C)]
struct Rlimit {
    cur: u64,
    max: u64,
}
const RLIMIT_AS: c_int = 9;
extern "C" {
    fn setrlimit(resource: c_int, rlim: *const Rlimit) -> c_int;
}
fn libc_rlimit(bytes: u64) -> Rlimit {
    Rlimit {
        cur: bytes,
        max: u64::MAX,
    }
}

/// A status that means a bug: nanprop caught a panic of its own.
fn check(s: nanprop_status, what: &str) -> bool {
    if s == nanprop_status::NANPROP_ERR_INTERNAL {
        let msg = unsafe { std::ffi::CStr::from_ptr(nanprop_last_error()) };
        panic!("{what}: internal error: {}", msg.to_string_lossy());
    }
    s == nanprop_status::NANPROP_OK
}

/// Reads the input front to back.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        b.iter_mut().for_each(|x| *x = self.u8());
        u64::from_le_bytes(b)
    }
    /// A size: small most of the time, sometimes any 64-bit value.
    fn size(&mut self) -> usize {
        match self.u8() % 8 {
            0 => self.u64() as usize,
            1 => usize::MAX - (self.u8() as usize),
            _ => self.u16() as usize,
        }
    }
}

/// y_i = x_{i-1} * x_i + sin(x_{i+1}), with a branch and an fmax: something for the guard.
unsafe extern "C" fn band(_: *mut c_void, n: usize, x: *const f64, m: usize, y: *mut f64) -> c_int {
    let x = unsafe { std::slice::from_raw_parts(x, n) };
    let y = unsafe { std::slice::from_raw_parts_mut(y, m) };
    for (i, yi) in y.iter_mut().enumerate() {
        let a = if i > 0 { x[(i - 1) % n] } else { 1.0 };
        let b = x[i % n];
        let c = x[(i + 1) % n];
        *yi = if b > 0.5 { a * b } else { a.max(b) } + c.sin();
    }
    0
}

/// The Matrix Market reader.
#[no_mangle]
pub extern "C" fn nanprop_fuzz_mtx(data: *const u8, size: usize) -> c_int {
    limit_memory();
    // SAFETY: libFuzzer's buffer.
    let data = unsafe { std::slice::from_raw_parts(data, size) };
    let Ok(p) = nanprop::pattern::mtx::read_pattern(data) else {
        return 0;
    };
    let mut back = Vec::new();
    nanprop::pattern::mtx::write_pattern(&mut back, &p, "fuzz").expect("write to memory");
    let again = nanprop::pattern::mtx::read_pattern(&back[..]).expect("read back what was written");
    assert_eq!(
        (again.rows(), again.cols(), again.nnz()),
        (p.rows(), p.cols(), p.nnz())
    );
    for i in 0..p.rows() {
        assert_eq!(again.row(i), p.row(i), "row {i} read back");
        assert!(
            p.row(i).windows(2).all(|w| w[0] < w[1]),
            "row {i} sorted, distinct"
        );
    }
    if p.cols() <= 1 << 16 {
        if let Ok(c) = nanprop::coloring::color(&p, &Default::default()) {
            assert!(nanprop::coloring::check(&p, &c.colors, c.num_colors).is_ok());
        }
    }
    0
}

/// `nanprop_pattern_from_csr` and what can be done with the pattern.
#[no_mangle]
pub extern "C" fn nanprop_fuzz_csr(data: *const u8, size: usize) -> c_int {
    limit_memory();
    // SAFETY: libFuzzer's buffer.
    let mut b = Bytes(unsafe { std::slice::from_raw_parts(data, size) });
    // The arrays have the lengths the sizes declare (the caller's side of the contract), so
    // m and nnz are bounded here; n is any size.
    let m = (b.u16() % 2048) as usize;
    let n = b.size();
    let mut row_ptr = vec![0usize; m + 1];
    for p in row_ptr.iter_mut() {
        *p = match b.u8() % 16 {
            0 => b.size(),
            _ => b.u8() as usize,
        };
    }
    if b.u8() % 4 != 0 {
        // Mostly nondecreasing, so the column indices get read.
        for i in 1..=m {
            row_ptr[i] = row_ptr[i].max(row_ptr[i - 1]) % (1 << 16);
        }
    }
    let nnz = row_ptr[m];
    if nnz > 1 << 16 {
        return 0; // col_idx would have to be that long
    }
    let col_idx: Vec<usize> = (0..nnz)
        .map(|_| match b.u8() % 16 {
            0 => b.size(),
            _ => b.u16() as usize % n.max(1),
        })
        .collect();
    let mut p = std::ptr::null_mut();
    let s = unsafe { nanprop_pattern_from_csr(m, n, row_ptr.as_ptr(), col_idx.as_ptr(), &mut p) };
    if !check(s, "nanprop_pattern_from_csr") {
        assert!(p.is_null(), "no pattern on failure");
        return 0;
    }
    unsafe {
        assert_eq!((nanprop_pattern_rows(p), nanprop_pattern_cols(p)), (m, n));
        let nnz = nanprop_pattern_nnz(p);
        let (mut rp, mut ci) = (vec![0usize; m + 1], vec![0usize; nnz]);
        check(
            nanprop_pattern_csr(p, rp.as_mut_ptr(), ci.as_mut_ptr()),
            "csr",
        );
        assert_eq!(rp[m], nnz);
        if n <= 1 << 16 {
            let (mut cp, mut ri) = (vec![0usize; n + 1], vec![0usize; nnz]);
            check(
                nanprop_pattern_csc(p, cp.as_mut_ptr(), ri.as_mut_ptr()),
                "csc",
            );
            assert_eq!(cp[n], nnz);
            let mut colors = vec![0usize; n];
            let mut k = 0;
            let s = nanprop_coloring(p, std::ptr::null(), colors.as_mut_ptr(), &mut k);
            if check(s, "nanprop_coloring") {
                assert!(colors.iter().all(|&c| c < k.max(1)));
            }
            let mut plan = std::ptr::null_mut();
            let s = nanprop_jacobian_plan_create(p, std::ptr::null(), &mut plan);
            if check(s, "nanprop_jacobian_plan_create") && m > 0 && n > 0 {
                let x = vec![0.25; n];
                let mut values = vec![0.0; nanprop_jacobian_plan_values_len(plan)];
                let mut evals = 0;
                let s = nanprop_jacobian_plan_evaluate(
                    plan,
                    Some(band),
                    std::ptr::null_mut(),
                    x.as_ptr(),
                    std::ptr::null(),
                    values.as_mut_ptr(),
                    &mut evals,
                );
                check(s, "nanprop_jacobian_plan_evaluate");
            }
            nanprop_jacobian_plan_free(plan);
        }
        nanprop_pattern_free(p);
    }
    0
}

/// Copies the input's bytes over `value` (as many as fit), then `fix` makes its pointers valid.
fn fill<T>(value: &mut T, b: &mut Bytes) {
    let len = std::mem::size_of::<T>();
    // SAFETY: T is a plain C struct; its pointer fields are set by the caller afterwards.
    let raw = unsafe { std::slice::from_raw_parts_mut((value as *mut T).cast::<u8>(), len) };
    for byte in raw.iter_mut() {
        if b.0.is_empty() {
            break;
        }
        *byte = b.u8();
    }
}

/// The option structs, filled with the input's bytes.
#[no_mangle]
pub extern "C" fn nanprop_fuzz_options(data: *const u8, size: usize) -> c_int {
    limit_memory();
    // SAFETY: libFuzzer's buffer.
    let mut b = Bytes(unsafe { std::slice::from_raw_parts(data, size) });
    let flags = b.u8();
    let (n, m) = (1 + (b.u8() % 12) as usize, 1 + (b.u8() % 12) as usize);
    let x0: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 / 7.0).collect();

    let mut o = std::mem::MaybeUninit::uninit();
    let mut o = unsafe {
        nanprop_options_init(o.as_mut_ptr());
        o.assume_init()
    };
    let journal = std::env::temp_dir().join(format!("nanprop-fuzz-{}.journal", std::process::id()));
    let journal_c = CString::new(journal.to_str().unwrap()).unwrap();
    let id = CString::new("band").unwrap();
    fill(&mut o, &mut b);
    if flags & 1 == 0 {
        // Most inputs keep a valid size and version, so the fields behind them are read.
        let mut valid = std::mem::MaybeUninit::uninit();
        let valid = unsafe {
            nanprop_options_init(valid.as_mut_ptr());
            valid.assume_init()
        };
        (o.struct_size, o.version) = (valid.struct_size, valid.version);
    }
    o.journal = if flags & 2 != 0 {
        journal_c.as_ptr()
    } else {
        std::ptr::null()
    };
    o.function_id = if flags & 4 != 0 {
        id.as_ptr()
    } else {
        std::ptr::null()
    };
    // Valid but slow: capped (crate docs).
    o.sample_points %= 4;
    o.threads %= 5;
    o.processes %= 3;
    if o.timeout.is_finite() && o.timeout > 0.0 {
        o.timeout = o.timeout.min(5.0);
    }
    let mut p = std::ptr::null_mut();
    let s = unsafe {
        nanprop_trace(
            Some(band),
            std::ptr::null_mut(),
            n,
            m,
            x0.as_ptr(),
            &o,
            &mut p,
        )
    };
    std::fs::remove_file(&journal).ok();
    if !check(s, "nanprop_trace") {
        assert!(p.is_null(), "no pattern on failure");
        return 0;
    }

    let mut c = std::mem::MaybeUninit::uninit();
    let mut c = unsafe {
        nanprop_coloring_options_init(c.as_mut_ptr());
        c.assume_init()
    };
    fill(&mut c, &mut b);
    if flags & 8 == 0 {
        let mut valid = std::mem::MaybeUninit::uninit();
        let valid = unsafe {
            nanprop_coloring_options_init(valid.as_mut_ptr());
            valid.assume_init()
        };
        (c.struct_size, c.version) = (valid.struct_size, valid.version);
    }
    c.recolor_iterations %= 64;
    let mut colors = vec![0usize; n];
    let mut k = 0;
    check(
        unsafe { nanprop_coloring(p, &c, colors.as_mut_ptr(), &mut k) },
        "nanprop_coloring",
    );

    let mut j = std::mem::MaybeUninit::uninit();
    let mut j = unsafe {
        nanprop_jacobian_options_init(j.as_mut_ptr());
        j.assume_init()
    };
    fill(&mut j, &mut b);
    if flags & 16 == 0 {
        let mut valid = std::mem::MaybeUninit::uninit();
        let valid = unsafe {
            nanprop_jacobian_options_init(valid.as_mut_ptr());
            valid.assume_init()
        };
        (j.struct_size, j.version) = (valid.struct_size, valid.version);
        (j.coloring.struct_size, j.coloring.version) =
            (valid.coloring.struct_size, valid.coloring.version);
    }
    j.coloring.recolor_iterations %= 64;
    let steps: Vec<f64> = (0..n).map(|_| f64::from_bits(b.u64())).collect();
    j.steps = if flags & 32 != 0 {
        steps.as_ptr()
    } else {
        std::ptr::null()
    };
    let mut plan = std::ptr::null_mut();
    if check(
        unsafe { nanprop_jacobian_plan_create(p, &j, &mut plan) },
        "plan",
    ) {
        let len = unsafe { nanprop_jacobian_plan_values_len(plan) };
        let mut values = vec![0.0; len];
        let mut evals = 0;
        let s = unsafe {
            nanprop_jacobian_plan_evaluate(
                plan,
                Some(band),
                std::ptr::null_mut(),
                x0.as_ptr(),
                std::ptr::null(),
                values.as_mut_ptr(),
                &mut evals,
            )
        };
        check(s, "nanprop_jacobian_plan_evaluate");
    }
    unsafe {
        nanprop_jacobian_plan_free(plan);
        nanprop_pattern_free(p);
    }
    0
}
