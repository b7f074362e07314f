//! `nanprop demo`: the built-in demo black box, traced, colored and differentiated, with the
//! character picture of its pattern.
//!
//! The demo is a small structural model of a tapered cantilever wing box, written the way legacy
//! engineering code is: 10 span stations, inputs are the skin thickness `t_k` (k = 0..9) and the
//! running load `q_k` (k = 10..19) of each station, plus the material's yield stress (input 20).
//! Outputs: the root-ward bending stress at each station (a station's moment sums the loads
//! outboard of it, so stress k depends on q_k..q_9 and on t_k), the margin against yield of the
//! root (uses the yield stress), the local panel buckling of each station (thickness of the
//! station and its neighbours), and the total skin weight (all thicknesses).

use crate::args::{strategy, StrategyArg};
use crate::Failure;
use nanprop::coloring::lower_bound;
use nanprop::jacobian::{JacobianOptions, JacobianPlan};
use nanprop::{trace, TraceOptions};
use std::time::Instant;

/// Inputs of the demo black box.
pub const DEMO_N: usize = 21;
/// Outputs of the demo black box.
pub const DEMO_M: usize = 22;

/// A point at which every output of the demo is finite.
pub fn demo_x0() -> Vec<f64> {
    let mut x = vec![0.0; DEMO_N];
    for k in 0..10 {
        x[k] = 0.004 - 0.0002 * k as f64; // thickness, m
        x[10 + k] = 1200.0 - 80.0 * k as f64; // load, N/m
    }
    x[20] = 3.2e8; // yield stress, Pa
    x
}

/// The demo black box: y = f(x) with [`DEMO_N`] inputs and [`DEMO_M`] outputs.
pub fn demo_blackbox(x: &[f64], y: &mut [f64]) -> Result<(), i32> {
    let (t, q, sigma_y) = (&x[0..10], &x[10..20], x[20]);
    let dx = 0.5; // station spacing, m
    let chord = |k: usize| 1.2 - 0.06 * k as f64;
    for k in 0..10 {
        // Bending moment at station k from the loads outboard of it.
        let moment: f64 = (k..10)
            .map(|j| q[j] * dx * ((j - k) as f64 + 0.5) * dx)
            .sum();
        let h = 0.12 * chord(k);
        let section_modulus = t[k] * chord(k) * h;
        y[k] = moment / section_modulus;
    }
    y[10] = 1.0 - y[0] / sigma_y;
    for k in 0..10 {
        let lo = if k > 0 { t[k - 1] } else { t[k] };
        let hi = if k < 9 { t[k + 1] } else { t[k] };
        let teff = (lo + 2.0 * t[k] + hi) / 4.0;
        y[11 + k] = 3.6 * 7.0e10 * (teff / 0.15).powi(2);
    }
    y[21] = (0..10).map(|k| 2700.0 * t[k] * 2.0 * chord(k) * dx).sum();
    Ok(())
}

/// The column-compressed view of a pattern under a coloring (the paper's Figure 3): one line per
/// row, one character per color, naming the column of that color the row holds (`0-9a-z`, then
/// `*`), or `.` for none.
pub fn compressed_picture(p: &nanprop::Pattern, colors: &[u32], num_colors: usize) -> String {
    const NAMES: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut s = String::new();
    for i in 0..p.rows() {
        let mut line = vec!['.'; num_colors];
        for &j in p.row(i) {
            line[colors[j as usize] as usize] = NAMES.get(j as usize).map_or('*', |&c| c as char);
        }
        s.extend(line);
        s.push('\n');
    }
    s
}

/// A character picture of a pattern: one line per row, `#` for an entry, `.` for none,
/// `?` for an entry that is not proven (chunk, unresolved or non-finite row).
pub fn picture(p: &nanprop::Pattern) -> String {
    let mut s = String::new();
    for i in 0..p.rows() {
        let mut line = vec!['.'; p.cols()];
        let start = p.row_ptr()[i];
        for (k, &j) in p.row(i).iter().enumerate() {
            line[j as usize] = if p.kinds()[start + k] == nanprop::EntryKind::Traced {
                '#'
            } else {
                '?'
            };
        }
        s.extend(line);
        s.push('\n');
    }
    s
}

pub(crate) fn run(s: StrategyArg) -> Result<(), Failure> {
    let x0 = demo_x0();
    let options = TraceOptions {
        strategy: strategy(s),
        ..TraceOptions::default()
    };
    let start = Instant::now();
    let mut f = demo_blackbox;
    let p = trace(&mut f, DEMO_M, &x0, &options).map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    // The paper's method on the same model, for comparison: NaN alone, and with the check.
    let one_hot = |verify| {
        let o = TraceOptions {
            strategy: nanprop::Strategy::OneHot,
            verify,
            ..TraceOptions::default()
        };
        trace(&mut demo_blackbox, DEMO_M, &x0, &o).map(|p| p.report.evaluations)
    };
    let (plain, checked) = (
        one_hot(false).map_err(|e| e.to_string())?,
        one_hot(true).map_err(|e| e.to_string())?,
    );
    println!(
        "nanprop demo: cantilever wing-box model, strategy {:?}",
        strategy(s)
    );
    println!("inputs 0-9 skin thickness, 10-19 station loads, 20 yield stress");
    println!("outputs 0-9 bending stress, 10 root margin, 11-20 panel buckling, 21 weight\n");
    print!("{}", picture(&p));
    println!(
        "\nn = {}, m = {}, nnz = {}, evaluations = {} ({} of them verification; one-hot: {plain}, {checked} verified),",
        p.cols(),
        p.rows(),
        p.nnz(),
        p.report.evaluations,
        p.report.verification_evaluations,
    );
    println!(
        "unresolved = {}, found by perturbation = {}, time = {:.2} ms",
        p.report.unresolved,
        p.report.found_by_perturbation,
        elapsed.as_secs_f64() * 1e3
    );
    // The point of the pattern: a cheaper Jacobian.
    let mut plan = JacobianPlan::new(&p, &JacobianOptions::default()).map_err(|e| e.to_string())?;
    let c = plan.coloring().clone();
    println!(
        "\ncolumn coloring: {} colors (lower bound {}, order {}); compressed view, one column per color,",
        c.num_colors,
        lower_bound(&p),
        c.order.name()
    );
    println!("each cell naming the input (0-9, a-k) it holds:\n");
    print!("{}", compressed_picture(&p, &c.colors, c.num_colors));
    let mut values = vec![0.0; plan.values_len()];
    let evaluations = plan
        .evaluate(&mut f, &x0, None, &mut values)
        .map_err(|e| e.to_string())?;
    println!(
        "\nforward-difference Jacobian: {evaluations} evaluations instead of {} (speedup n/chi = {:.2})",
        p.cols() + 1,
        p.cols() as f64 / c.num_colors as f64
    );
    Ok(())
}
