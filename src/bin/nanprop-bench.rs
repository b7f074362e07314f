//! Benchmark program: evaluations, library time and peak memory of each strategy on synthetic
//! pattern families. Prints Markdown tables (the README's tables come from here).
//!
//! `cargo run --release --bin nanprop-bench` runs the full set; `-- --quick` the small sizes;
//! `-- --only TEXT` the cases whose family name and n contain TEXT (e.g. `"tridiagonal 1000000"`).
//! Library time is the wall time of the trace minus the time spent inside the synthetic black
//! box. Peak memory is the largest number of bytes allocated at once during the trace, beyond
//! what was allocated before it started (the true pattern and the point x0), counted by a
//! global allocator wrapper.

use nanprop::synthetic::{self, Synthetic, Winner};
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
}

fn measure(family: &str, truth: &Pattern, strategy: Strategy) -> Row {
    let x0: Vec<f64> = (0..truth.cols())
        .map(|j| 1.0 + (j % 7) as f64 * 0.1)
        .collect();
    let mut f = Synthetic::new(truth, Winner::Random, 1);
    let options = TraceOptions {
        strategy,
        chunk_size: 8,
        ..TraceOptions::default()
    };
    let before = CURRENT.load(Relaxed);
    PEAK.store(before, Relaxed);
    let start = Instant::now();
    let p = trace(&mut f, truth.rows(), &x0, &options).expect("trace");
    let total = start.elapsed();
    let peak = PEAK.load(Relaxed) - before;
    let exact = p.row_ptr() == truth.row_ptr() && p.col_idx() == truth.col_idx();
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
    println!("| family | n | m | nnz | lower bound | evaluations | exact | library time (ms) | peak memory (MB) |");
    println!("|---|---:|---:|---:|---:|---:|---|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.2} |",
            r.family,
            r.n,
            r.m,
            r.nnz,
            r.lower_bound,
            r.evaluations,
            if r.exact { "yes" } else { "superset" },
            r.lib_ms,
            r.peak_mb
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // --only SUBSTRING: run only the families whose name (with n) contains it, e.g. "tridiagonal".
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let mut cases = cases(quick);
    if let Some(only) = &only {
        cases.retain(|(name, t)| format!("{name} {}", t.cols()).contains(only.as_str()));
    }
    for (title, strategy) in [
        ("one-hot", Strategy::OneHot),
        ("chunked (8 inputs per probe)", Strategy::Chunked),
        ("payload (default)", Strategy::Payload),
    ] {
        let rows: Vec<Row> = cases
            .iter()
            .filter(|(_, t)| strategy == Strategy::Payload || t.cols() <= 10_000)
            .map(|(name, truth)| {
                let row = measure(name, truth, strategy);
                eprintln!(
                    "{title}: {name} n = {} done ({} evaluations)",
                    row.n, row.evaluations
                );
                row
            })
            .collect();
        print_table(title, &rows);
    }
    println!("\nLower bound: max nonzeros in a row + 1 (each probe proves at most one dependency per row).");
    println!("One-hot and chunked run up to n = 10^4: each of their probes reads all m outputs, O(n m) in all.");
}
