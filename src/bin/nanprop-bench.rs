//! Benchmark program: evaluations, library time and peak memory of each strategy on synthetic
//! pattern families. Prints Markdown tables (the README's tables come from here).
//!
//! `cargo run --release --features testing --bin nanprop-bench` runs the full set;
//! `-- --quick` the small sizes; `-- --only TEXT` the cases whose family name and n contain TEXT,
//! a number whole (e.g. `"tridiagonal 1000000"`: the tracing tables and the scale table, no
//! other);
//! `-- --steps` one case of the scale table step by step (`--only` names it; tridiagonal 10^6
//! by default): each step's planning and evaluating time against f's;
//! `-- --parallel` only the parallel drivers' wall times; `-- --single` only the
//! single-precision table; `-- --peers [MAX_N]` nanprop's Python package against asdex and
//! SciPy (bench/python_peers.py --scale, with `$NANPROP_PYTHON`, `.venv/bin/python` or
//! `python3`; skipped, saying so, when they are not importable); `-- --hessian` only the
//! star-coloring table (against ColPack's star coloring); `-- --smoothing` only the
//! smoothed-Jacobian table (and its plot, bench/smoothing.svg); `-- --coloring` only the
//! column-coloring comparison with ColPack (built from bench/colpack_compare.cpp when Debian's
//! libcolpack-dev is installed; ColPack is never linked into nanprop); `-- --help` lists these.
//! An argument it does not know stops it, before any table runs.
//!
//! Library time is the wall time of the trace minus the time spent inside the synthetic black
//! box. Peak memory is the largest number of bytes allocated at once during the trace, beyond
//! what was allocated before it started (the true pattern and the point x0), counted by a
//! global allocator wrapper.

#[path = "bench/smoothing.rs"]
mod smoothing;
#[path = "bench/symmetric.rs"]
mod symmetric;

use nanprop::testing::{self as synthetic, Synthetic, Winner};
use nanprop::{trace, Pattern, Strategy, TraceOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size > layout.size() {
                let now =
                    CURRENT.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
                PEAK.fetch_max(now, Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Row {
    family: String,
    n: usize,
    m: usize,
    nnz: usize,
    lower_bound: usize,
    evaluations: usize,
    exact: bool,
    lib_ms: f64,
    peak_mb: f64,
    verified: Option<usize>,
}

/// One trace of `truth` with `strategy`, the synthetic black box's tagged NaNs surviving as
/// `winner` says (`Winner::Anonymous`: none, the black box makes its own NaNs).
fn measure(family: &str, truth: &Pattern, strategy: Strategy, winner: Winner) -> Row {
    let x0: Vec<f64> = (0..truth.cols())
        .map(|j| 1.0 + (j % 7) as f64 * 0.1)
        .collect();
    let mut f = Synthetic::new(truth, winner, 1);
    // The tracer's own cost: verification (on by default, one more evaluation per probe) is
    // measured separately, in `verified`.
    let options = TraceOptions {
        strategy,
        chunk_size: 8,
        verify: false,
        ..TraceOptions::default()
    };
    let before = CURRENT.load(Relaxed);
    PEAK.store(before, Relaxed);
    let start = Instant::now();
    let p = trace(&mut f, truth.rows(), &x0, &options).expect("trace");
    let total = start.elapsed();
    let peak = PEAK.load(Relaxed) - before;
    let exact = p.row_ptr() == truth.row_ptr() && p.col_idx() == truth.col_idx();
    let verified = (strategy == Strategy::Payload).then(|| {
        let mut f = Synthetic::new(truth, winner, 1);
        let options = TraceOptions {
            verify: true,
            ..options.clone()
        };
        let v = trace(&mut f, truth.rows(), &x0, &options).expect("verified trace");
        assert_eq!(
            v.col_idx(),
            p.col_idx(),
            "verification changes nothing on exact NaN propagation"
        );
        v.report.evaluations
    });
    Row {
        family: family.to_string(),
        n: truth.cols(),
        m: truth.rows(),
        nnz: truth.nnz(),
        lower_bound: truth.max_row_nnz() + 1,
        evaluations: p.report.evaluations,
        exact,
        lib_ms: (total.saturating_sub(f.time)).as_secs_f64() * 1e3,
        peak_mb: peak as f64 / 1e6,
        verified,
    }
}

/// The families and sizes, and for each the strategies worth running there. One-hot and
/// chunked cost O(n * m) library time (every probe reads all m outputs), so they run only up to
/// n = 10^4.
fn cases(quick: bool) -> Vec<(String, Pattern)> {
    let mut v = Vec::new();
    let sizes: &[usize] = if quick {
        &[1_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    for &n in sizes {
        v.push(("tridiagonal".into(), synthetic::banded(n, 1)));
        v.push(("banded (bandwidth 11)".into(), synthetic::banded(n, 5)));
        v.push((
            "block-diagonal (10x10)".into(),
            synthetic::block_diagonal(n, 10),
        ));
        let g = (n as f64).sqrt().round() as usize;
        v.push((
            format!("2-D 5-point stencil {g}x{g}"),
            synthetic::stencil_2d(g),
        ));
        v.push((
            "random sparse (5 per row)".into(),
            synthetic::random_sparse(n, n, 5, 42),
        ));
        // The arrowhead's dense row needs n + 1 evaluations from any NaN tracer (each probe
        // proves at most one dependency per row): O(n m) work, so it stops at n = 10^4.
        if n <= 10_000 {
            v.push(("arrowhead".into(), synthetic::arrowhead(n)));
        }
    }
    if !quick {
        v.push((
            "2-D 5-point stencil 300x300".into(),
            synthetic::stencil_2d(300),
        ));
        v.push(("tridiagonal".into(), synthetic::banded(1_000_000, 1)));
        v.push((
            "banded (bandwidth 11)".into(),
            synthetic::banded(1_000_000, 5),
        ));
    }
    v.push(("dense".into(), synthetic::dense(1000, 1000)));
    v
}

fn print_table(title: &str, rows: &[Row]) {
    println!("\n### {title}\n");
    println!("| family | n | m | nnz | lower bound | evaluations | with verification | exact | library time (ms) | peak memory (MB) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.2} |",
            r.family,
            r.n,
            r.m,
            r.nnz,
            r.lower_bound,
            r.evaluations,
            r.verified.map_or("-".to_string(), |v| v.to_string()),
            if r.exact { "yes" } else { "superset" },
            r.lib_ms,
            r.peak_mb
        );
    }
}

/// Suite-like patterns for the coloring comparison, beside the tracing families.
fn coloring_cases() -> Vec<(String, Pattern)> {
    let mut rng = synthetic::Rng::new(7);
    // LP-like: m x n constraint matrix, each column in 1-4 random rows, plus 8 long rows.
    let (m, n) = (3_000, 9_000);
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); m];
    for j in 0..n {
        for _ in 0..1 + rng.below(4) {
            rows[rng.below(m)].push(j);
        }
    }
    for row in rows.iter_mut().take(8) {
        row.extend((0..n).filter(|_| rng.below(60) == 0));
    }
    let lp = synthetic::from_rows(m, n, |i, r| r.extend(rows[i].iter().copied()));
    // FEM-like: 5-point stencil on a 60 x 60 grid with 4 unknowns per node (blocks of 4 x 4).
    let (g, b) = (60usize, 4usize);
    let node = synthetic::stencil_2d(g);
    let fem = synthetic::from_rows(g * g * b, g * g * b, |i, r| {
        for &k in node.row(i / b) {
            r.extend(k as usize * b..(k as usize + 1) * b);
        }
    });
    vec![
        ("tridiagonal".into(), synthetic::banded(10_000, 1)),
        ("banded (bandwidth 11)".into(), synthetic::banded(10_000, 5)),
        (
            "block-diagonal (10x10)".into(),
            synthetic::block_diagonal(10_000, 10),
        ),
        (
            "2-D 5-point stencil 100x100".into(),
            synthetic::stencil_2d(100),
        ),
        ("FEM-like 60x60 grid, 4 dofs/node".into(), fem),
        (
            "random sparse (5 per row)".into(),
            synthetic::random_sparse(10_000, 10_000, 5, 42),
        ),
        (
            "random rectangular 5000x10000, 8 per row".into(),
            synthetic::random_sparse(5_000, 10_000, 8, 3),
        ),
        ("LP-like 3000x9000".into(), lp),
        ("arrowhead".into(), synthetic::arrowhead(2_000)),
    ]
}

/// nanprop (from Python) against asdex and SciPy, by bench/python_peers.py in the first
/// Python that imports nanprop and SciPy; asdex's columns are '-' when it is not installed.
fn peers(max_n: usize) {
    println!(
        "\n### Peers: time to the pattern and memory against asdex; Jacobians against SciPy\n"
    );
    let root = env!("CARGO_MANIFEST_DIR");
    let venv = format!("{root}/.venv/bin/python");
    let candidates = [
        std::env::var("NANPROP_PYTHON").ok(),
        Some(venv),
        Some("python3".into()),
    ];
    let python = candidates.into_iter().flatten().find(|py| {
        std::process::Command::new(py)
            .args(["-c", "import nanprop, scipy"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(python) = python else {
        println!("No Python imports nanprop and SciPy (pip install ./python scipy, optionally asdex): skipped.");
        return;
    };
    let status = std::process::Command::new(&python)
        .arg(format!("{root}/bench/python_peers.py"))
        .arg("--scale")
        .arg(max_n.to_string())
        .status();
    if !status.is_ok_and(|s| s.success()) {
        println!("bench/python_peers.py failed with {python}.");
    }
}

/// Builds the ColPack helper (bench/colpack_compare.cpp) if ColPack is installed.
fn colpack_helper() -> Option<std::path::PathBuf> {
    if !std::path::Path::new("/usr/include/ColPack/ColPackHeaders.h").exists() {
        return None;
    }
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/colpack_compare.cpp");
    let exe = std::env::temp_dir().join(format!("nanprop-colpack-compare-{}", std::process::id()));
    let ok = std::process::Command::new("g++")
        .args(["-O2", "-std=c++11", src, "-lColPack", "-o"])
        .arg(&exe)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(exe)
}

/// Runs the ColPack helper (with `mode` before the file, if any) on a temporary file that
/// `write` fills; its lines `ORDERING colors seconds [more]` as (ordering, colors, seconds, the
/// remaining words).
fn colpack_lines(
    helper: &std::path::Path,
    mode: Option<&str>,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Vec<(String, usize, f64, Vec<String>)> {
    let file = std::env::temp_dir().join(format!("nanprop-colpack-{}.txt", std::process::id()));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&file).expect("temp file"));
    write(&mut w).expect("write the pattern for ColPack");
    drop(w);
    let out = std::process::Command::new(helper)
        .args(mode)
        .arg(&file)
        .output()
        .expect("run the ColPack helper");
    let _ = std::fs::remove_file(&file);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f.first()?.to_string(),
                f.get(1)?.parse().ok()?,
                f.get(2)?.parse().ok()?,
                f.iter().skip(3).map(|w| w.to_string()).collect(),
            ))
        })
        .collect()
}

/// ColPack's colors and seconds per ordering name, for pattern `p`.
fn colpack_run(helper: &std::path::Path, p: &Pattern) -> Vec<(String, usize, f64)> {
    colpack_lines(helper, None, |w| {
        writeln!(w, "{} {} {}", p.rows(), p.cols(), p.nnz())?;
        for i in 0..p.rows() {
            for &j in p.row(i) {
                writeln!(w, "{i} {j}")?;
            }
        }
        Ok(())
    })
    .into_iter()
    .map(|(order, colors, seconds, _)| (order, colors, seconds))
    .collect()
}

/// The orders of the coloring tables, in their column order.
const TABLE_ORDERS: [nanprop::coloring::Order; 7] = {
    use nanprop::coloring::Order;
    [
        Order::Natural,
        Order::LargestFirst,
        Order::SmallestLast,
        Order::IncidenceDegree,
        Order::DynamicLargestFirst,
        Order::Random(0),
        Order::Saturation,
    ]
};

fn coloring_table() {
    use nanprop::coloring::{self, ColoringOptions, Strategy as ColoringStrategy};
    let helper = colpack_helper();
    // ColPack's ordering names ("-": ColPack has no saturation order for this problem).
    let names = [
        "NATURAL",
        "LARGEST_FIRST",
        "SMALLEST_LAST",
        "INCIDENCE_DEGREE",
        "DYNAMIC_LARGEST_FIRST",
        "RANDOM",
        "-",
    ];
    println!("\n### Column coloring: nanprop / ColPack colors per order\n");
    match &helper {
        Some(_) => println!("ColPack 1.0.10 (Debian libcolpack-dev): each ordering, then its serial partial distance-2 column coloring; '-': not offered by ColPack.\n"),
        None => println!("ColPack is not installed (apt-get install libcolpack-dev): its columns are '-'.\n"),
    }
    println!("| pattern | m | n | nnz | lower bound | natural | largest-first | smallest-last | incidence-degree | dynamic-largest-first | random | saturation (DSATUR) | nanprop default (auto) | nanprop best-of + 8 recoloring rounds | ColPack best | nanprop default time (ms) | ColPack time, all orders (ms) |");
    println!("|---|---:|---:|---:|---:|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|");
    for (name, p) in coloring_cases() {
        let cp = helper
            .as_deref()
            .map(|h| colpack_run(h, &p))
            .unwrap_or_default();
        let mut cells = Vec::new();
        for (order, cp_name) in TABLE_ORDERS.iter().zip(names) {
            let c = coloring::color(
                &p,
                &ColoringOptions {
                    strategy: ColoringStrategy::Only(*order),
                    seed: 0,
                    recolor_iterations: 0,
                },
            )
            .expect("coloring");
            assert!(coloring::check(&p, &c.colors, c.num_colors).is_ok());
            let theirs = cp
                .iter()
                .find(|(n, _, _)| n == cp_name)
                .map_or("-".to_string(), |(_, k, _)| k.to_string());
            cells.push(format!("{} / {theirs}", c.num_colors));
        }
        let start = Instant::now();
        let auto = coloring::color(&p, &ColoringOptions::default()).expect("coloring");
        let ours_ms = start.elapsed().as_secs_f64() * 1e3;
        assert!(coloring::check(&p, &auto.colors, auto.num_colors).is_ok());
        let best = coloring::color(
            &p,
            &ColoringOptions {
                strategy: ColoringStrategy::BestOf,
                seed: 0,
                recolor_iterations: 8,
            },
        )
        .expect("coloring");
        assert!(coloring::check(&p, &best.colors, best.num_colors).is_ok());
        let cp_best = cp
            .iter()
            .map(|(_, k, _)| *k)
            .min()
            .map_or("-".to_string(), |k| k.to_string());
        let cp_ms = if cp.is_empty() {
            "-".to_string()
        } else {
            format!("{:.1}", cp.iter().map(|(_, _, t)| t).sum::<f64>() * 1e3)
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {cp_best} | {ours_ms:.1} | {cp_ms} |",
            p.rows(),
            p.cols(),
            p.nnz(),
            coloring::lower_bound(&p),
            cells.join(" | "),
            auto.num_colors,
            best.num_colors
        );
        eprintln!("coloring: {name} done");
    }
    if let Some(h) = helper {
        let _ = std::fs::remove_file(h);
    }
}

/// Wall time of serial, threaded and process-pool tracing of a black box that sleeps 10 ms per
/// evaluation, as an expensive legacy code would (CPU idle, so workers overlap on 2 cores).
fn parallel_table() {
    use nanprop::ThreadSafe;
    use std::time::Duration;
    println!("\n### Parallel evaluation: a black box that sleeps 10 ms per evaluation\n");
    println!(
        "| pattern | strategy | evaluations | largest step | driver | wall time (s) | speedup |"
    );
    println!("|---|---|---:|---:|---|---:|---:|");
    let cases = [
        (
            "banded (bandwidth 11), n = 10^4",
            synthetic::banded(10_000, 5),
            Strategy::Payload,
        ),
        (
            "banded (bandwidth 11), n = 200",
            synthetic::banded(200, 5),
            Strategy::OneHot,
        ),
    ];
    for (name, truth, strategy) in cases {
        let model = |x: &[f64], y: &mut [f64]| -> Result<(), i32> {
            std::thread::sleep(Duration::from_millis(10));
            for (i, yi) in y.iter_mut().enumerate() {
                *yi = 1.0 + truth.row(i).iter().map(|&j| x[j as usize]).sum::<f64>();
            }
            Ok(())
        };
        let x0 = vec![1.0; truth.cols()];
        let options = TraceOptions {
            strategy,
            ..TraceOptions::default()
        };
        let m = truth.rows();
        let start = Instant::now();
        let serial = trace(
            &mut |x: &[f64], y: &mut [f64]| model(x, y),
            m,
            &x0,
            &options,
        )
        .expect("serial");
        let base = start.elapsed().as_secs_f64();
        let largest = largest_step(&truth, &options);
        let row = |driver: &str, seconds: f64| {
            println!(
                "| {name} | {:?} | {} | {largest} | {driver} | {seconds:.2} | {:.2} |",
                strategy,
                serial.report.evaluations,
                base / seconds
            );
        };
        row("serial", base);
        for threads in [1, 2, 4] {
            let start = Instant::now();
            let threaded = TraceOptions {
                threads,
                ..options.clone()
            };
            let p = trace(&mut ThreadSafe(&model), m, &x0, &threaded).expect("threads");
            assert_eq!(p.col_idx(), serial.col_idx());
            row(&format!("{threads} threads"), start.elapsed().as_secs_f64());
        }
        let start = Instant::now();
        let forked = TraceOptions {
            processes: 2,
            ..options.clone()
        };
        let p =
            trace(&mut |x: &[f64], y: &mut [f64]| model(x, y), m, &x0, &forked).expect("processes");
        assert_eq!(p.col_idx(), serial.col_idx());
        row("2 processes", start.elapsed().as_secs_f64());
        eprintln!("parallel: {name} done");
    }
    println!(
        "\nA step's requests are independent, so the speedup is bounded by the step sizes: the"
    );
    println!("payload planner's steps hold a few probes; the check's step holds two per color.");
}

/// The most requests one step of this trace asks for at once.
fn largest_step(truth: &Pattern, options: &TraceOptions) -> usize {
    let x0 = vec![1.0; truth.cols()];
    let mut s =
        nanprop::TraceSession::new(truth.cols(), truth.rows(), &x0, options).expect("session");
    let mut f = Synthetic::new(truth, Winner::Random, 1);
    let mut x = vec![0.0; truth.cols()];
    let mut y = vec![0.0; truth.rows()];
    let mut largest = 0;
    loop {
        let ids = s.ask().expect("ask");
        if ids.is_empty() {
            return largest;
        }
        largest = largest.max(ids.len());
        for id in ids {
            s.write_input(id, &mut x);
            nanprop::BlackBox::eval(&mut f, &x, &mut y).expect("eval");
            s.tell(id, &y).expect("tell");
        }
    }
}

/// Whether `--only`'s `text` names the case called `name` (its family and n): `name` holds
/// it, and a number it ends with is not the start of a longer one there ("random (5 per row)
/// 100000" is not the 1000000 case).
fn names(name: &str, text: &str) -> bool {
    let ends_in_digit = text.ends_with(|c: char| c.is_ascii_digit());
    name.match_indices(text).any(|(at, _)| {
        let next = name[at + text.len()..].chars().next();
        !(ends_in_digit && next.is_some_and(|c| c.is_ascii_digit()))
    })
}

/// What `--help` prints (and what an unknown argument is answered with).
const USAGE: &str = "\
usage: nanprop-bench [OPTION]
  (none)           every table (several minutes)
  --quick          the small sizes only
  --only TEXT      the cases whose family name and n contain TEXT (a number whole), e.g.
                   \"tridiagonal 1000000\"
                   (the tracing tables and the scale table, no other)
  --scale          the scale table only (library time against f's own), with --only
  --steps          a scale case step by step (where the library's time goes), with --only
                   (default \"tridiagonal 1000000\")
  --parallel       the parallel drivers' wall times only
  --single         the single-precision table only
  --peers [MAX_N]  nanprop from Python against asdex and SciPy (bench/python_peers.py --scale)
  --hessian        the star-coloring table only
  --smoothing      the smoothed-Jacobian table only (and bench/smoothing.svg)
  --coloring       the column-coloring tables only (against ColPack when it is installed)
  --help, -h       this text
";

/// Rejects an argument `main` does not read (a typo would otherwise run every table, for
/// minutes): `--only` takes a value, `--peers` an optional number.
fn check_args(args: &[String]) -> Result<(), String> {
    let mut rest = args.iter().skip(1).peekable();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--only" => {
                rest.next().ok_or("--only needs a TEXT")?;
            }
            "--peers" => {
                if rest.peek().is_some_and(|v| v.parse::<usize>().is_ok()) {
                    rest.next();
                }
            }
            "--quick" | "--scale" | "--steps" | "--parallel" | "--single" | "--hessian"
            | "--smoothing" | "--coloring" => {}
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().skip(1).any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return;
    }
    if let Err(e) = check_args(&args) {
        eprint!("nanprop-bench: {e}\n{USAGE}");
        std::process::exit(2);
    }
    if args.iter().any(|a| a == "--coloring") {
        coloring_table();
        coloring_time_table();
        return;
    }
    if let Some(k) = args.iter().position(|a| a == "--peers") {
        let max_n = args
            .get(k + 1)
            .and_then(|a| a.parse().ok())
            .unwrap_or(1_000_000);
        peers(max_n);
        return;
    }
    if args.iter().any(|a| a == "--hessian") {
        symmetric::table();
        return;
    }
    if args.iter().any(|a| a == "--smoothing") {
        smoothing::table();
        return;
    }
    if args.iter().any(|a| a == "--parallel") {
        parallel_table();
        return;
    }
    if args.iter().any(|a| a == "--single") {
        single_table();
        return;
    }
    // --only SUBSTRING: run only the cases whose family name (with n) contains it, e.g.
    // "tridiagonal 1000000".
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    if args.iter().any(|a| a == "--scale") {
        scale_table(only.as_deref());
        return;
    }
    if args.iter().any(|a| a == "--steps") {
        steps_table(only.as_deref());
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let mut cases = cases(quick);
    if let Some(only) = &only {
        cases.retain(|(name, t)| names(&format!("{name} {}", t.cols()), only));
    }
    // The last table: a black box that makes its own NaNs (no payload comes back, NAN_FACTS
    // §1), up to n = 10^4 (its arrowhead takes one probe per column).
    let blind = "payload (default), NaNs without payloads (the black box makes its own)";
    for (title, strategy, winner) in [
        ("one-hot", Strategy::OneHot, Winner::Random),
        (
            "chunked (8 inputs per probe)",
            Strategy::Chunked,
            Winner::Random,
        ),
        ("payload (default)", Strategy::Payload, Winner::Random),
        (blind, Strategy::Payload, Winner::Anonymous),
    ] {
        let rows: Vec<Row> = cases
            .iter()
            .filter(|(_, t)| {
                (strategy == Strategy::Payload && winner != Winner::Anonymous) || t.cols() <= 10_000
            })
            .map(|(name, truth)| {
                let row = measure(name, truth, strategy, winner);
                eprintln!(
                    "{title}: {name} n = {} done ({} evaluations)",
                    row.n, row.evaluations
                );
                row
            })
            .collect();
        print_table(title, &rows);
    }
    if let Some(only) = &only {
        // Only the matching cases: of the other tables, the scale table has cases by family
        // and n too.
        scale_table(Some(only));
        return;
    }
    parallel_table();
    println!("\nLower bound: max nonzeros in a row + 1 (each probe proves at most one dependency per row).");
    println!(
        "Evaluations: NaN tracing alone (verify off). With verification (the default): the NaN trace,"
    );
    println!(
        "the check of its pattern (two evaluations per color) and the verified re-trace of the rows"
    );
    println!(
        "that fail it (none here: the synthetic black box propagates every NaN); for the payload strategy."
    );
    single_table();
    scale_table(None);
    steps_table(None);
    coloring_table();
    coloring_time_table();
    symmetric::table();
    smoothing::table();
    println!("One-hot and chunked run up to n = 10^4: each of their probes reads all m outputs, O(n m) in all.");
}

/// The same families traced through a single-precision (float) black box, default options
/// (verification on), against the double-precision one: evaluations, exactness, library time.
fn single_table() {
    println!("\n#### Single precision: a float black box (nanprop::trace_f32) against a double one, default options\n");
    println!("| family | n | evaluations (double) | evaluations (float) | exact (float) | tags via float | library ms (double) | library ms (float) |");
    println!("|---|---:|---:|---:|---|---:|---:|---:|");
    for size in [10_000usize, 100_000] {
        let g = (size as f64).sqrt().round() as usize;
        for (name, truth) in [
            ("tridiagonal".to_string(), synthetic::banded(size, 1)),
            (
                format!("2-D 5-point stencil {g}x{g}"),
                synthetic::stencil_2d(g),
            ),
            (
                "random (5 per row)".to_string(),
                synthetic::random_sparse(size, size, 5, 7),
            ),
        ] {
            let (m, n) = (truth.rows(), truth.cols());
            let x0: Vec<f64> = (0..n).map(|j| 1.0 + (j % 7) as f64 * 0.125).collect();
            let options = TraceOptions::default();
            let mut f = Synthetic::new(&truth, Winner::Random, 1);
            let start = Instant::now();
            let d = trace(&mut f, m, &x0, &options).expect("double trace");
            let double_ms = start.elapsed().saturating_sub(f.time).as_secs_f64() * 1e3;
            // The same function in float: sums in f32, a NaN input's payload passed on.
            let mut inside = std::time::Duration::ZERO;
            let f32_box = |x: &[f32], y: &mut [f32]| {
                let t = Instant::now();
                for (i, yi) in y.iter_mut().enumerate() {
                    let mut sum = 1.0f32;
                    let mut nan = None;
                    for &j in truth.row(i) {
                        let v = x[j as usize];
                        if v.is_nan() {
                            nan.get_or_insert(v);
                        } else {
                            sum += v * (1.0 + 1e-3 * j as f32);
                        }
                    }
                    *yi = nan.unwrap_or(sum);
                }
                inside += t.elapsed();
                Ok(())
            };
            let x32: Vec<f32> = x0.iter().map(|&v| v as f32).collect();
            let start = Instant::now();
            let p = nanprop::trace_f32(f32_box, m, &x32, &options).expect("float trace");
            let float_ms = start.elapsed().saturating_sub(inside).as_secs_f64() * 1e3;
            let exact = p.row_ptr() == truth.row_ptr() && p.col_idx() == truth.col_idx();
            println!(
                "| {name} | {n} | {} | {} | {} | {} | {double_ms:.1} | {float_ms:.1} |",
                d.report.evaluations,
                p.report.evaluations,
                if exact { "yes" } else { "NO" },
                p.report.via_float,
            );
        }
    }
    println!("\nThe float black box gets x0 rounded to float; every tag comes back through a float NaN's 22 payload bits.");
}

/// One case of the scale table: a plain black box written as a C code would write it (a 1-D
/// stencil, a gather, the 2-D Bratu residual on a g x g grid), its true pattern and x0.
struct ScaleCase {
    family: &'static str,
    n: usize,
    /// The grid's side (the 2-D Bratu residual).
    g: usize,
    truth: Pattern,
    /// The gather's weights, one per entry of `truth` (random 5 per row).
    weights: Vec<f64>,
    x0: Vec<f64>,
}

/// The scale table's families, in its order.
const SCALE_FAMILIES: [&str; 3] = ["tridiagonal", "random (5 per row)", "2-D Bratu"];

impl ScaleCase {
    /// The case of `family` nearest `n` inputs (the g x g grid closest to n for the 2-D Bratu
    /// residual).
    fn new(family: &'static str, n: usize) -> Self {
        let (n, g) = Self::size(family, n);
        let truth = match family {
            "tridiagonal" => synthetic::banded(n, 1),
            "2-D Bratu" => synthetic::stencil_2d(g),
            _ => synthetic::random_sparse(n, n, 5, 7),
        };
        let weights = (0..truth.nnz())
            .map(|k| 1.0 + (k % 5) as f64 * 0.25)
            .collect();
        let x0 = (0..n).map(|j| 1.0 + (j % 7) as f64 * 0.1).collect();
        ScaleCase {
            family,
            n,
            g,
            truth,
            weights,
            x0,
        }
    }

    /// The inputs and the grid's side of `family`'s case nearest `n` inputs: n itself, but
    /// g x g for the 2-D Bratu residual.
    fn size(family: &str, n: usize) -> (usize, usize) {
        let g = (n as f64).sqrt().round() as usize;
        match family {
            "2-D Bratu" => (g * g, g),
            _ => (n, g),
        }
    }

    /// The name `--only` matches: the family and n.
    fn name(family: &str, n: usize) -> String {
        format!("{family} {}", Self::size(family, n).0)
    }

    /// The black box: y = f(x).
    fn eval(&self, x: &[f64], y: &mut [f64]) {
        let g = self.g;
        match self.family {
            "2-D Bratu" => {
                // y = 4 u - (its four neighbours, 0 past the edge) - h^2 exp(u), h = 1/(g+1):
                // the 2-D Bratu residual, as the peers' table has it.
                let h2 = 1.0 / ((g + 1) * (g + 1)) as f64;
                for (i, yi) in y.iter_mut().enumerate() {
                    let (r, c) = (i / g, i % g);
                    let mut v = 4.0 * x[i] - h2 * x[i].exp();
                    if r > 0 {
                        v -= x[i - g];
                    }
                    if r + 1 < g {
                        v -= x[i + g];
                    }
                    if c > 0 {
                        v -= x[i - 1];
                    }
                    if c + 1 < g {
                        v -= x[i + 1];
                    }
                    *yi = v;
                }
            }
            "tridiagonal" => {
                // y_i = x_{i-1} - 2 x_i + x_{i+1} + x_i^2 / 4, a 1-D stencil.
                let n = x.len();
                for i in 0..n {
                    let l = if i > 0 { x[i - 1] } else { 0.0 };
                    let r = if i + 1 < n { x[i + 1] } else { 0.0 };
                    y[i] = l - 2.0 * x[i] + r + 0.25 * x[i] * x[i];
                }
            }
            _ => {
                let (ptr, idx) = (self.truth.row_ptr(), self.truth.col_idx());
                for (i, yi) in y.iter_mut().enumerate() {
                    let mut s = 0.0;
                    for k in ptr[i]..ptr[i + 1] {
                        s += self.weights[k] * x[idx[k] as usize];
                    }
                    *yi = s;
                }
            }
        }
    }

    /// Whether `p` is the true pattern.
    fn exact(&self, p: &Pattern) -> bool {
        p.row_ptr() == self.truth.row_ptr() && p.col_idx() == self.truth.col_idx()
    }
}

/// Traces of each case for [`scale_table`]; its times are their medians.
const SCALE_RUNS: usize = 3;

/// The median of `v` (the upper one of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One default trace of `case`, timed: its pattern, f's time and the library's (the rest of
/// the trace's wall time), in ms, and its peak memory in bytes.
fn traced_timed(case: &ScaleCase) -> (Pattern, f64, f64, usize) {
    let mut inside = std::time::Duration::ZERO;
    let mut f = |x: &[f64], y: &mut [f64]| {
        let t = Instant::now();
        case.eval(x, y);
        inside += t.elapsed();
        Ok(())
    };
    let before = CURRENT.load(Relaxed);
    PEAK.store(before, Relaxed);
    let start = Instant::now();
    let p = trace(&mut f, case.n, &case.x0, &TraceOptions::default()).expect("trace");
    let total = start.elapsed();
    let peak = PEAK.load(Relaxed) - before;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    (p, ms(inside), ms(total.saturating_sub(inside)), peak)
}

/// Library time against the black box's own, for the plain black boxes of [`ScaleCase`],
/// default options, n = 10^4 to 10^6: the ratio and its growth per decade (issue 13's targets:
/// at most 4x f on tridiagonal 10^6, 8x on random 5 per row 10^6, growth at most 12x from 10^5
/// to 10^6 for every family). Each case is traced [`SCALE_RUNS`] times in a row: the times are
/// the medians, the ratio the median of the traces' own ratios, the growth the ratio of the
/// library times' medians, and the library times' range is printed beside them (one trace of a
/// 10^5 case, about 40 ms, moved between 36 and 70 ms from run to run). The peak is the
/// largest of the traces'; every trace must be exact and take the same evaluations.
fn scale_table(only: Option<&str>) {
    println!("\n### Library time against f's own: plain black boxes, default options\n");
    println!("| family | n | evaluations | exact | f time (ms) | library time (ms) | library time, range (ms) | library / f | library growth per decade | peak memory (MB) |");
    println!("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    for family in SCALE_FAMILIES {
        let mut last: Option<f64> = None;
        for n in [10_000usize, 100_000, 1_000_000] {
            if only.is_some_and(|o| !names(&ScaleCase::name(family, n), o)) {
                // Growth is per decade: not against a size two decades down.
                last = None;
                continue;
            }
            let case = ScaleCase::new(family, n);
            let runs: Vec<_> = (0..SCALE_RUNS).map(|_| traced_timed(&case)).collect();
            let evaluations = runs[0].0.report.evaluations;
            assert!(
                runs.iter().all(|r| r.0.report.evaluations == evaluations),
                "{family} {n}: the traces' evaluations differ from run to run"
            );
            let exact = runs.iter().all(|r| case.exact(&r.0));
            let f_ms = median(runs.iter().map(|r| r.1).collect());
            let libs: Vec<f64> = runs.iter().map(|r| r.2).collect();
            let lib_ms = median(libs.clone());
            let ratio = median(runs.iter().map(|r| r.2 / r.1).collect());
            let low = libs.iter().copied().fold(f64::INFINITY, f64::min);
            let high = libs.iter().copied().fold(0.0, f64::max);
            let peak = runs.iter().map(|r| r.3).max().unwrap_or(0);
            let growth = last.map_or("-".to_string(), |l| format!("{:.1}x", lib_ms / l));
            last = Some(lib_ms);
            println!(
                "| {family} | {} | {evaluations} | {} | {f_ms:.1} | {lib_ms:.1} | {low:.1}-{high:.1} | {ratio:.1}x | {growth} | {:.1} |",
                case.n,
                if exact { "yes" } else { "NO" },
                peak as f64 / 1e6,
            );
        }
    }
    println!("\nf time is the time spent inside the black box; library time the rest of the trace's wall time: medians of {SCALE_RUNS} traces in a row, the library / f ratio the median of theirs.");
}

/// Runs of each case for [`steps_table`]; its times are their medians.
const STEP_RUNS: usize = 5;

/// One step of a trace, timed ([`traced_by_step`]; times in ms).
#[derive(Clone, Copy)]
struct Step {
    evaluations: usize,
    /// From the step before's last evaluation told to this step's first evaluation starting.
    planning: f64,
    /// From there to this step's last evaluation told.
    evaluating: f64,
    /// Inside the black box.
    f: f64,
}

impl Step {
    /// The library's part of the step.
    fn library(&self) -> f64 {
        self.planning + self.evaluating - self.f
    }
}

/// The scale table's cases (those `only` names, or tridiagonal 10^6), step by step: where the
/// library's time goes between and during the planner's steps. Each time is the median of
/// [`STEP_RUNS`] traces. A step's *planning* runs from the last evaluation of the step before
/// being told to the first evaluation of this one starting (the planner's `ask`, and writing
/// the first request's inputs); its *evaluating* from there to its last evaluation told (the
/// evaluations, the guard's passes, the inputs written and undone, and the tells the run loop
/// waits for). Read from the black box's own clock and the progress reported after each told
/// evaluation, so the library is timed as it runs, with no timer of its own.
fn steps_table(only: Option<&str>) {
    let only = only.unwrap_or("tridiagonal 1000000");
    for family in SCALE_FAMILIES {
        for n in [10_000usize, 100_000, 1_000_000] {
            if !names(&ScaleCase::name(family, n), only) {
                continue;
            }
            let case = ScaleCase::new(family, n);
            let mut runs: Vec<Vec<Step>> = Vec::new();
            let mut evaluations = 0;
            for _ in 0..STEP_RUNS {
                let (p, steps) = traced_by_step(&case);
                assert!(case.exact(&p), "{family} {n}: the trace is not exact");
                evaluations = p.report.evaluations;
                runs.push(steps);
            }
            let shape = |r: &Vec<Step>| r.iter().map(|s| s.evaluations).collect::<Vec<_>>();
            assert!(
                runs.iter().all(|r| shape(r) == shape(&runs[0])),
                "the traces' steps differ from run to run"
            );
            println!(
                "\n### {family}, n = {}, step by step ({evaluations} evaluations; medians of {STEP_RUNS} traces)\n",
                case.n
            );
            println!("| step | evaluations | planning (ms) | evaluating (ms) | f (ms) | library (ms) | library / f |");
            println!("|---:|---:|---:|---:|---:|---:|---:|");
            let (mut sum_lib, mut sum_f) = (0.0, 0.0);
            for (k, first) in runs[0].iter().enumerate() {
                let of =
                    |pick: fn(&Step) -> f64| median(runs.iter().map(|r| pick(&r[k])).collect());
                let (plan, eval) = (of(|s| s.planning), of(|s| s.evaluating));
                let (f, lib) = (of(|s| s.f), of(Step::library));
                (sum_lib, sum_f) = (sum_lib + lib, sum_f + f);
                println!(
                    "| {} | {} | {plan:.1} | {eval:.1} | {f:.1} | {lib:.1} | {:.1}x |",
                    k + 1,
                    first.evaluations,
                    lib / f
                );
            }
            println!(
                "| all | {evaluations} | | | {sum_f:.1} | {sum_lib:.1} | {:.1}x |",
                sum_lib / sum_f
            );
            // Each trace's library time, in the order they ran: the spread the medians smooth.
            let each: Vec<String> = (runs.iter())
                .map(|r| format!("{:.1}", r.iter().map(Step::library).sum::<f64>()))
                .collect();
            println!(
                "\nLibrary time of each trace, in order (ms): {}.",
                each.join(", ")
            );
        }
    }
    println!("\nPlanning: from the step before's last evaluation told to this step's first evaluation (the planner's ask). Evaluating: from there to this step's last evaluation told. Library: both, less f.");
}

/// One default trace of `case`, and its steps, timed ([`steps_table`]).
fn traced_by_step(case: &ScaleCase) -> (Pattern, Vec<Step>) {
    // Each evaluation's start and length, and each told evaluation's time and step (the
    // evaluations planned when it was told: the same for every evaluation of a step).
    let mut calls: Vec<(Instant, std::time::Duration)> = Vec::new();
    let mut f = |x: &[f64], y: &mut [f64]| {
        let t = Instant::now();
        case.eval(x, y);
        calls.push((t, t.elapsed()));
        Ok(())
    };
    let mut told: Vec<(Instant, usize)> = Vec::new();
    let start = Instant::now();
    let p = nanprop::trace_with_progress(
        &mut f,
        case.n,
        &case.x0,
        &TraceOptions::default(),
        &mut |progress| told.push((Instant::now(), progress.planned)),
    )
    .expect("trace");
    assert_eq!(calls.len(), told.len(), "one evaluation a request");
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut steps = Vec::new();
    let (mut k, mut before) = (0, start);
    while k < told.len() {
        let planned = told[k].1;
        let end = k + told[k..].iter().take_while(|t| t.1 == planned).count();
        let (first, last) = (calls[k].0, told[end - 1].0);
        steps.push(Step {
            evaluations: end - k,
            planning: ms(first - before),
            evaluating: ms(last - first),
            f: calls[k..end].iter().map(|c| ms(c.1)).sum(),
        });
        (k, before) = (end, last);
    }
    (p, steps)
}

/// Coloring time: each order alone (no recoloring) and the default against the natural-order greedy
/// pass, on the benchmark's patterns and on large ones (random 5 per row at 10^5 and 10^6, the 2-D
/// stencil at 10^6, and one with a dense row of 10^4): issue 13's targets are the default at most
/// 3x the natural order, and no order quadratic in the longest row. Each time is a median of
/// repeated runs; the default / natural ratio is the median ratio of runs of the two made
/// alternately.
fn coloring_time_table() {
    use nanprop::coloring::{self, ColoringOptions, Order, Strategy as ColoringStrategy};
    println!("\n### Column coloring time: each order, and the default against the natural order\n");
    println!("| pattern | n | nnz | longest row | natural (ms) | largest-first | smallest-last | incidence-degree | dynamic-largest-first | random | saturation (DSATUR) | default (ms) | default colors | default / natural | best-of + 8 recoloring rounds (ms) | best-of / natural |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut cases = coloring_cases();
    cases.push((
        "random sparse (5 per row) 10^5".into(),
        synthetic::random_sparse(100_000, 100_000, 5, 42),
    ));
    cases.push((
        "random sparse (5 per row) 10^6".into(),
        synthetic::random_sparse(1_000_000, 1_000_000, 5, 42),
    ));
    cases.push((
        "2-D 5-point stencil 1000x1000".into(),
        synthetic::stencil_2d(1000),
    ));
    let base = synthetic::random_sparse(100_000, 100_000, 5, 43);
    cases.push((
        "random 10^5 with a row of 10^4".into(),
        synthetic::from_rows(100_000, 100_000, |i, r| {
            if i == 0 {
                r.extend((0..100_000).step_by(10));
            } else {
                r.extend(base.row(i).iter().map(|&j| j as usize));
            }
        }),
    ));
    // Repeated runs (this machine is shared: single runs of the same coloring moved by 2x):
    // `run` makes one and returns its ms; at least 5 and 0.5 s in all (at most 41), one run
    // when a run takes 2 s or more (best-of at 10^6).
    fn repeat(mut run: impl FnMut() -> f64) {
        let (mut runs, mut total) = (0, 0.0);
        while runs < 41 {
            let ms = run();
            runs += 1;
            total += ms;
            if (runs == 1 && ms >= 2e3) || (runs >= 5 && total >= 500.0) {
                break;
            }
        }
    }
    // The median time of one coloring, and its colors.
    let time = |p: &Pattern, o: &ColoringOptions| {
        let (mut runs, mut colors) = (Vec::new(), 0);
        repeat(|| {
            let start = Instant::now();
            let c = coloring::color(p, o).expect("coloring");
            let ms = start.elapsed().as_secs_f64() * 1e3;
            assert!(coloring::check(p, &c.colors, c.num_colors).is_ok());
            colors = c.num_colors;
            runs.push(ms);
            ms
        });
        (median(runs), colors)
    };
    for (name, p) in cases {
        let mut cells = Vec::new();
        let mut natural = 0.0;
        for order in TABLE_ORDERS {
            let (ms, _) = time(
                &p,
                &ColoringOptions {
                    strategy: ColoringStrategy::Only(order),
                    seed: 0,
                    recolor_iterations: 0,
                },
            );
            if order == Order::Natural {
                natural = ms;
            }
            cells.push(format!("{ms:.1}"));
        }
        // The default against the natural order, run alternately: the median of the pairs'
        // ratios, which a change of the machine's load during the runs moves far less than a
        // ratio of two medians taken apart (random 10^5 read 2.5x and 4.3x in two runs that way).
        let natural_only = ColoringOptions {
            strategy: ColoringStrategy::Only(Order::Natural),
            seed: 0,
            recolor_iterations: 0,
        };
        let (mut pairs, mut defaults, mut k) = (Vec::new(), Vec::new(), 0);
        repeat(|| {
            let start = Instant::now();
            coloring::color(&p, &natural_only).expect("coloring");
            let a = start.elapsed().as_secs_f64() * 1e3;
            let start = Instant::now();
            let c = coloring::color(&p, &ColoringOptions::default()).expect("coloring");
            let b = start.elapsed().as_secs_f64() * 1e3;
            assert!(coloring::check(&p, &c.colors, c.num_colors).is_ok());
            k = c.num_colors;
            pairs.push(b / a.max(1e-6));
            defaults.push(b);
            a + b
        });
        let (ms, ratio) = (median(defaults), median(pairs));
        let (best_ms, _) = time(
            &p,
            &ColoringOptions {
                strategy: ColoringStrategy::BestOf,
                seed: 0,
                recolor_iterations: 8,
            },
        );
        let natural = natural.max(1e-3);
        println!(
            "| {name} | {} | {} | {} | {} | {ms:.1} | {k} | {:.1}x | {best_ms:.1} | {:.1}x |",
            p.cols(),
            p.nnz(),
            p.max_row_nnz(),
            cells.join(" | "),
            ratio,
            best_ms / natural,
        );
        eprintln!("coloring time: {name} done");
    }
}
