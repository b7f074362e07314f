//! Fingerprints of many traces (a development aid): for each synthetic family, size, winner
//! policy, seed and verification setting, the evaluations and a hash of the pattern and its
//! kinds. A change to the planner that should change no trace leaves the output identical:
//! `cargo run --release --features testing --example fingerprint > after.txt`, and `diff` it
//! against the output before (1168 traces, about two minutes).
use nanprop::driver::guard::Guarded;
use nanprop::pattern::Pattern;
use nanprop::testing::{self as synthetic, Synthetic, Winner};
use nanprop::{TraceOptions, TraceSession};
use std::hash::{Hash, Hasher};

fn trace(truth: &Pattern, winner: Winner, seed: u64, verify: bool) -> (usize, u64, bool) {
    let (n, m) = (truth.cols(), truth.rows());
    let x0: Vec<f64> = (0..n).map(|j| 1.0 + (j % 7) as f64 / 10.0).collect();
    let o = TraceOptions {
        verify,
        ..TraceOptions::default()
    };
    let mut s = TraceSession::new(n, m, &x0, &o).unwrap();
    let mut f = Synthetic::new(truth, winner, seed);
    let mut ev = Guarded::new(n, m).unwrap();
    loop {
        let ks = s.ask().unwrap();
        if ks.is_empty() {
            break;
        }
        for k in ks {
            s.write_input(k, ev.input_mut());
            ev.call(&mut f).unwrap();
            s.tell(k, ev.output()).unwrap();
        }
    }
    let p = s.finish().unwrap();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    p.row_ptr().hash(&mut h);
    p.col_idx().hash(&mut h);
    for k in p.kinds() {
        format!("{k:?}").hash(&mut h);
    }
    let exact = p.col_idx() == truth.col_idx() && p.row_ptr() == truth.row_ptr();
    (p.report.evaluations, h.finish(), exact)
}

fn main() {
    let mut cases: Vec<(String, Pattern)> = Vec::new();
    for n in [7usize, 31, 100, 257, 1000, 4099, 20000] {
        for half in [1usize, 2, 5] {
            cases.push((format!("band{half} {n}"), synthetic::banded(n, half)));
        }
        cases.push((format!("block10 {n}"), synthetic::block_diagonal(n, 10)));
        cases.push((format!("arrow {n}"), synthetic::arrowhead(n)));
        for d in [2usize, 5, 12] {
            if d < n {
                cases.push((
                    format!("random{d} {n}"),
                    synthetic::random_sparse(n, n, d, 42),
                ));
            }
        }
        cases.push((
            format!("random5x {n}"),
            synthetic::random_sparse(n / 2 + 1, n, 5, 7),
        ));
    }
    for g in [3usize, 10, 31, 100, 141] {
        cases.push((format!("stencil {g}"), synthetic::stencil_2d(g)));
    }
    for n in [10usize, 60, 200] {
        cases.push((format!("dense {n}"), synthetic::dense(n, n)));
    }
    for (d, n) in [(25usize, 400usize), (5, 2000), (60, 300)] {
        let mut rng = nanprop::rng::Rng::new(7);
        cases.push((
            format!("mid{d} {n}"),
            synthetic::from_rows(n / 2, n, |_, r| {
                r.extend((0..n).filter(|_| rng.below(100) < d))
            }),
        ));
    }
    let mut total = 0;
    for (name, truth) in &cases {
        for winner in [
            Winner::Random,
            Winner::Smallest,
            Winner::Largest,
            Winner::Anonymous,
        ] {
            for verify in [true, false] {
                for seed in [1u64, 2] {
                    let (e, h, exact) = trace(truth, winner, seed, verify);
                    total += e;
                    println!(
                        "{name} {winner:?} verify={verify} seed={seed}: {e} {h:016x} exact={exact}"
                    );
                }
            }
        }
    }
    eprintln!("traces {} evaluations {total}", cases.len() * 16);
}
