//! Randomized (fuzz-style) tests of the entry points that read untrusted input: the C ABI with
//! random arrays and option structs, and the Matrix Market reader with damaged files. The
//! property is the one the ABI promises: an error status or a valid result, never a panic (an
//! internal error) or a crash. Seeded, so a failure reproduces.

use nanprop::ffi::*;
use nanprop::pattern::mtx;
use nanprop::rng::Rng;
use nanprop::testing as synthetic;
use std::ffi::c_void;

const ROUNDS: usize = 3000;

fn small(rng: &mut Rng, bound: usize) -> usize {
    rng.below(bound + 1)
}

#[test]
fn pattern_from_csr_never_panics_and_checks_what_it_accepts() {
    let mut rng = Rng::new(11);
    for _ in 0..ROUNDS {
        let (m, n) = (small(&mut rng, 6), small(&mut rng, 6));
        let nnz = small(&mut rng, 12);
        let mut row_ptr: Vec<usize> = (0..=m).map(|_| small(&mut rng, nnz + 2)).collect();
        if rng.below(2) == 0 {
            row_ptr.sort_unstable(); // often valid-looking
            if let Some(last) = row_ptr.last_mut() {
                *last = nnz;
            }
            if let Some(first) = row_ptr.first_mut() {
                *first = 0;
            }
        }
        let col_idx: Vec<usize> = (0..nnz).map(|_| small(&mut rng, n + 1)).collect();
        let mut p: *mut nanprop_pattern = std::ptr::null_mut();
        // SAFETY: arrays sized as the call reads them (row_ptr m + 1, col_idx row_ptr[m] when
        // that does not exceed nnz; otherwise the call must refuse before reading).
        let s = unsafe {
            if row_ptr.last().copied().unwrap_or(0) > nnz {
                continue; // the caller broke the contract (col_idx shorter than it says): not testable
            }
            nanprop_pattern_from_csr(m, n, row_ptr.as_ptr(), col_idx.as_ptr(), &mut p)
        };
        assert_ne!(s, nanprop_status::NANPROP_ERR_INTERNAL);
        if s == nanprop_status::NANPROP_OK {
            // SAFETY: a pattern from the library.
            unsafe {
                assert_eq!(nanprop_pattern_rows(p), m);
                let mut rp = vec![0usize; m + 1];
                let mut ci = vec![0usize; nanprop_pattern_nnz(p).max(1)];
                assert_eq!(
                    nanprop_pattern_csr(p, rp.as_mut_ptr(), ci.as_mut_ptr()),
                    nanprop_status::NANPROP_OK
                );
                for i in 0..m {
                    let row = &ci[rp[i]..rp[i + 1]];
                    assert!(row.windows(2).all(|w| w[0] < w[1]) && row.iter().all(|&j| j < n));
                }
                nanprop_pattern_free(p);
            }
        } else {
            assert!(p.is_null());
        }
    }
}

unsafe extern "C" fn sum_pairs(
    _: *mut c_void,
    n: usize,
    x: *const f64,
    m: usize,
    y: *mut f64,
) -> i32 {
    for i in 0..m {
        // SAFETY: the library passes n and m values.
        unsafe { *y.add(i) = *x.add(i % n) + 2.0 * *x.add((i + 1) % n) };
    }
    0
}

#[test]
fn trace_and_jacobian_with_random_options_never_panic() {
    let mut rng = Rng::new(12);
    let x0 = [0.5, 1.5, -2.0, 3.0];
    let (mut traced, mut jacobians) = (0, 0);
    for round in 0..ROUNDS / 3 {
        let mut o: nanprop_options = unsafe { std::mem::zeroed() };
        // SAFETY: o is a valid struct.
        unsafe { nanprop_options_init(&mut o) };
        // Damage each field now and then (a quarter of the time), with plausible and absurd
        // values, so that most sets are valid and run all the way.
        let pick = |rng: &mut Rng, vals: &[u64]| vals[rng.below(vals.len())];
        let damage = |rng: &mut Rng| rng.below(4) == 0;
        if damage(&mut rng) {
            o.strategy = pick(&mut rng, &[0, 1, 2, 3, 4, u32::MAX as u64]) as u32;
        }
        if damage(&mut rng) {
            o.chunk_size = pick(&mut rng, &[0, 1, 3, 1000]) as usize;
        }
        if damage(&mut rng) {
            o.max_evaluations = pick(&mut rng, &[1, 2, 3, 7, 50]) as usize;
        }
        if damage(&mut rng) {
            o.nonfinite_baseline = pick(&mut rng, &[0, 1, 2]) as u32;
        }
        if damage(&mut rng) {
            o.verify = pick(&mut rng, &[0, 1, 5]) as u32;
        }
        if damage(&mut rng) {
            o.verify_step = [0.0, 1e-3, -1.0, f64::NAN, f64::INFINITY][rng.below(5)];
        }
        if damage(&mut rng) {
            o.verify_tolerance = [0.0, 1e-9, -1.0, f64::NAN][rng.below(4)];
        }
        if damage(&mut rng) {
            o.sample_points = 2;
            o.sample_scale = [0.1, 0.0, -1.0, f64::NAN][rng.below(4)];
        }
        if round % 17 == 0 {
            o.struct_size = pick(&mut rng, &[0, 8, 1 << 20]) as usize;
        }
        if round % 23 == 0 {
            o.version = pick(&mut rng, &[0, 2, 99]) as u32;
        }
        let (n, m) = (1 + rng.below(4), 1 + rng.below(4));
        let mut p: *mut nanprop_pattern = std::ptr::null_mut();
        // SAFETY: valid pointers and sizes.
        let s = unsafe {
            nanprop_trace(
                Some(sum_pairs),
                std::ptr::null_mut(),
                n,
                m,
                x0.as_ptr(),
                &o,
                &mut p,
            )
        };
        assert_ne!(s, nanprop_status::NANPROP_ERR_INTERNAL, "round {round}");
        if s != nanprop_status::NANPROP_OK {
            assert!(p.is_null());
            continue;
        }
        traced += 1;
        let mut jo: nanprop_jacobian_options = unsafe { std::mem::zeroed() };
        // SAFETY: valid struct and arrays.
        unsafe {
            nanprop_jacobian_options_init(&mut jo);
            if damage(&mut rng) {
                jo.difference = pick(&mut rng, &[0, 1, 2]) as u32;
            }
            if damage(&mut rng) {
                jo.layout = pick(&mut rng, &[0, 1, 2, 3]) as u32;
            }
            if damage(&mut rng) {
                jo.step_kind = pick(&mut rng, &[0, 1, 2]) as u32;
                jo.step = [0.0, 1e-6, -1e-6, f64::NAN, 1e-300][rng.below(5)];
            }
            if damage(&mut rng) {
                jo.coloring.order = pick(&mut rng, &[0, 3, 7, 8]) as u32;
            }
            let mut values = vec![0.0; n * m];
            let mut evals = 0usize;
            let s = nanprop_jacobian(
                Some(sum_pairs),
                std::ptr::null_mut(),
                n,
                m,
                x0.as_ptr(),
                p,
                &jo,
                values.as_mut_ptr(),
                &mut evals,
            );
            assert_ne!(s, nanprop_status::NANPROP_ERR_INTERNAL, "round {round}");
            jacobians += usize::from(s == nanprop_status::NANPROP_OK);
            nanprop_pattern_free(p);
        }
    }
    // Not vacuous: plenty of the random option sets are valid and run all the way.
    assert!(
        traced > ROUNDS / 10 && jacobians > ROUNDS / 20,
        "traced {traced}, jacobians {jacobians}"
    );
}

#[test]
fn matrix_market_reader_never_panics() {
    let mut rng = Rng::new(13);
    let p = synthetic::random_sparse(7, 9, 3, 1);
    let mut clean = Vec::new();
    mtx::write_pattern(&mut clean, &p, "seed").unwrap();
    let alphabet = b" \n%0123456789-+.eE%MatrixMarketcoordinatepatternrealsymmetricgeneral";
    let mut accepted = 0;
    for _ in 0..ROUNDS {
        let mut bytes = clean.clone();
        for _ in 0..1 + rng.below(6) {
            match rng.below(4) {
                0 if !bytes.is_empty() => {
                    let k = rng.below(bytes.len());
                    bytes[k] = alphabet[rng.below(alphabet.len())];
                }
                1 if !bytes.is_empty() => {
                    let k = rng.below(bytes.len());
                    bytes.truncate(k);
                }
                2 => {
                    let k = rng.below(bytes.len() + 1);
                    bytes.insert(k, alphabet[rng.below(alphabet.len())]);
                }
                _ => bytes.extend((0..rng.below(20)).map(|_| rng.below(256) as u8)),
            }
        }
        // Ok or Err, never a panic; an accepted file is a valid pattern.
        if let Ok(q) = mtx::read_pattern(bytes.as_slice()) {
            accepted += 1;
            for i in 0..q.rows() {
                assert!(q.row(i).windows(2).all(|w| w[0] < w[1]));
                assert!(q.row(i).iter().all(|&j| (j as usize) < q.cols()));
            }
        }
    }
    assert!(
        accepted > 0 && accepted < ROUNDS,
        "some damaged files are still valid, most are not: {accepted}"
    );
}
