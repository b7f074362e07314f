//! The `nanprop` command. This version has one subcommand, `demo`; `trace`, `color` and
//! `jacobian` on shared libraries come with loader mode and are not available yet.

use nanprop::coloring::lower_bound;
use nanprop::demo::{compressed_picture, demo_blackbox, demo_x0, picture, DEMO_M};
use nanprop::jacobian::{JacobianOptions, JacobianPlan};
use nanprop::{trace, Strategy, TraceOptions};
use std::process::ExitCode;

const USAGE: &str = "usage: nanprop demo [one-hot|chunked|payload]\n       nanprop --version\n\n\
(trace, color and jacobian on shared libraries are not available yet)";

fn demo(strategy: Strategy) -> Result<(), String> {
    let x0 = demo_x0();
    let options = TraceOptions {
        strategy,
        ..TraceOptions::default()
    };
    let start = std::time::Instant::now();
    let mut f = demo_blackbox;
    let p = trace(&mut f, DEMO_M, &x0, &options).map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    println!("nanprop demo: cantilever wing-box model, strategy {strategy:?}");
    println!("inputs 0-9 skin thickness, 10-19 station loads, 20 yield stress");
    println!("outputs 0-9 bending stress, 10 root margin, 11-20 panel buckling, 21 weight\n");
    print!("{}", picture(&p));
    println!(
        "\nn = {}, m = {}, nnz = {}, evaluations = {} (one-hot would take {}), unresolved = {}, time = {:.2} ms",
        p.cols(),
        p.rows(),
        p.nnz(),
        p.report.evaluations,
        p.cols() + 1,
        p.report.unresolved,
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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let result = match args.as_slice() {
        ["demo"] | ["demo", "payload"] => demo(Strategy::Payload),
        ["demo", "one-hot"] => demo(Strategy::OneHot),
        ["demo", "chunked"] => demo(Strategy::Chunked),
        ["--version"] => {
            println!("nanprop {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        ["--help"] | ["-h"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("unknown arguments {args:?}\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nanprop: {e}");
            ExitCode::FAILURE
        }
    }
}
