//! `nanprop color`: color the columns of a Matrix Market pattern.

use crate::output::{read_pattern_file, write_file, write_svg};
use crate::Failure;
use clap::Args;
use nanprop::coloring::{self, lower_bound, ColoringOptions, Order};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub(crate) struct ColorArgs {
    /// The pattern (Matrix Market coordinate file).
    pub(crate) file: PathBuf,
    /// Order: auto (a band's or a grid stencil's formula at the lower bound when one fits,
    /// else saturation, after the natural order when one row holds half the work, has at
    /// least 64 entries or every row's columns lie close together), best (the formula, else
    /// every order), natural, largest-first, smallest-last, incidence-degree,
    /// dynamic-largest-first, random, saturation.
    #[arg(long, default_value = "auto")]
    pub(crate) order: String,
    /// Write the colors, one per column (0-based), one per line.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Write an SVG spy plot beside its column-compressed view.
    #[arg(long)]
    pub(crate) svg: Option<PathBuf>,
}

pub(crate) fn parse_order(s: &str) -> Result<coloring::Strategy, String> {
    use coloring::Strategy::{Auto, BestOf, Only};
    Ok(match s {
        "auto" => Auto,
        "best" => BestOf,
        "natural" => Only(Order::Natural),
        "largest-first" => Only(Order::LargestFirst),
        "smallest-last" => Only(Order::SmallestLast),
        "incidence-degree" => Only(Order::IncidenceDegree),
        "dynamic-largest-first" => Only(Order::DynamicLargestFirst),
        "random" => Only(Order::Random(0)),
        "saturation" => Only(Order::Saturation),
        other => {
            return Err(format!(
                "unknown order '{other}' (see nanprop color --help)"
            ))
        }
    })
}

pub(crate) fn run(a: &ColorArgs) -> Result<(), Failure> {
    let p = read_pattern_file(&a.file)?;
    let start = Instant::now();
    let c = coloring::color(
        &p,
        &ColoringOptions {
            strategy: parse_order(&a.order)?,
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    if let Some(out) = &a.out {
        write_file(out, |w| {
            use std::io::Write;
            c.colors.iter().try_for_each(|k| writeln!(w, "{k}"))
        })?;
    }
    if let Some(path) = &a.svg {
        write_svg(
            path,
            &p,
            &c,
            &format!("{}: column coloring", a.file.display()),
        )?;
    }
    println!(
        "n = {}, m = {}, nnz = {}, colors = {} (lower bound {}, order {}), n/colors = {:.2}, time = {seconds:.3} s",
        p.cols(),
        p.rows(),
        p.nnz(),
        c.num_colors,
        lower_bound(&p),
        c.order.name(),
        p.cols() as f64 / c.num_colors.max(1) as f64
    );
    Ok(())
}
