//! Prints the probes of each planner step for a few synthetic families (a development aid).
use nanprop::driver::guard::Guarded;
use nanprop::driver::BlackBox;
use nanprop::testing::{self as synthetic, Synthetic, Winner};
use nanprop::{TraceOptions, TraceSession};

fn main() {
    let which: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = which.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let truth = match which.first().map(|s| s.as_str()).unwrap_or("tri") {
        "tri" => synthetic::banded(n, 1),
        "band" => synthetic::banded(n, 5),
        "block" => synthetic::block_diagonal(n, 10),
        "stencil" => synthetic::stencil_2d((n as f64).sqrt() as usize),
        "random" => {
            let d: usize = which.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
            synthetic::random_sparse(n, n, d, 42)
        }
        "arrow" => synthetic::arrowhead(n),
        "one" => {
            // One row of D spread dependencies.
            let mut rng = nanprop::rng::Rng::new(3);
            let d: usize = which.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
            synthetic::from_rows(1, n, |_, r| r.extend((0..n).filter(|_| rng.below(n) < d)))
        }
        "dense" => synthetic::dense(n, n),
        "mid" => {
            let mut rng = nanprop::rng::Rng::new(7);
            let d: usize = which.get(2).and_then(|s| s.parse().ok()).unwrap_or(25);
            synthetic::from_rows(n / 2, n, |_, r| {
                r.extend((0..n).filter(|_| rng.below(100) < d))
            })
        }
        _ => panic!("family"),
    };
    // WIDE_ROW=k: row 0 (rows 0 to WIDE_COUNT - 1) depends on k columns spread at random
    // instead (k = n: dense).
    let count: usize = (std::env::var("WIDE_COUNT").ok())
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let truth = match std::env::var("WIDE_ROW")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    {
        Some(k) => {
            let mut rng = nanprop::rng::Rng::new(3);
            let n = truth.cols();
            synthetic::from_rows(truth.rows(), n, |i, r| match i < count {
                true => r.extend((0..n).filter(|_| rng.below(n) < k)),
                false => r.extend(truth.row(i).iter().map(|&j| j as usize)),
            })
        }
        None => truth,
    };
    let (n, m) = (truth.cols(), truth.rows());
    let x0 = vec![1.0; n];
    // VERIFY=0: no check.
    let options = TraceOptions {
        verify: std::env::var("VERIFY").as_deref() != Ok("0"),
        ..TraceOptions::default()
    };
    let mut s = TraceSession::new(n, m, &x0, &options).unwrap();
    // WINNER=smallest|largest|anonymous: which tagged NaN survives (random by default).
    let winner = match std::env::var("WINNER").as_deref() {
        Ok("smallest") => Winner::Smallest,
        Ok("largest") => Winner::Largest,
        Ok("anonymous") => Winner::Anonymous,
        _ => Winner::Random,
    };
    let mut synthetic = Synthetic::new(&truth, winner, 1);
    // BLIND_ROW=i: row i's NaN loses its payload (a default NaN made inside), whatever WINNER.
    let blind: Option<usize> = std::env::var("BLIND_ROW").ok().and_then(|s| s.parse().ok());
    let mut f = |x: &[f64], y: &mut [f64]| {
        synthetic.eval(x, y)?;
        if let Some(i) = blind.filter(|&i| y[i].is_nan()) {
            y[i] = f64::NAN;
        }
        Ok(())
    };
    let mut ev = Guarded::new(n, m).unwrap();
    let mut steps = vec![];
    loop {
        let ks = s.ask().unwrap();
        if ks.is_empty() {
            break;
        }
        steps.push(ks.len());
        for k in ks {
            s.write_input(k, ev.input_mut());
            ev.call(&mut f)
                .expect("the synthetic black box keeps its contract");
            s.tell(k, ev.output()).unwrap();
        }
    }
    let p = s.finish().unwrap();
    let exact = p.col_idx() == truth.col_idx() && p.row_ptr() == truth.row_ptr();
    // Entries of f the pattern lacks (a miss) and entries it holds that f lacks.
    let missing: usize = (0..m)
        .map(|i| {
            truth
                .row(i)
                .iter()
                .filter(|&&j| !p.contains(i, j as usize))
                .count()
        })
        .sum();
    let extra = p.nnz() + missing - truth.nnz();
    println!(
        "evaluations {} exact {exact} missing {missing} extra {extra} steps {:?}",
        p.report.evaluations, steps
    );
    if std::env::var_os("REPORT").is_some() {
        println!("{:?}", p.report);
    }
}
