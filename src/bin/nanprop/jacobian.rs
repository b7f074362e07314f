//! `nanprop jacobian`: a sparse Jacobian of a loaded function by compressed differences.

use crate::args::{open, Load};
use crate::output::{
    is_stdout, progress_bar, summary, warnings, write_file, write_jacobian_svg, Counted,
};
use crate::trace::{trace_loaded, TraceFlags};
use crate::Failure;
use clap::Args;
use nanprop::jacobian::{Difference, JacobianOptions, JacobianPlan, Step};
use nanprop::pattern::mtx;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub(crate) struct JacobianArgs {
    #[command(flatten)]
    pub(crate) load: Load,
    /// The pattern (Matrix Market); traced first when not given (with the trace options
    /// below, which a given pattern refuses).
    #[arg(long)]
    pub(crate) pattern: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) flags: TraceFlags,
    /// Central differences (2 colors evaluations, second order) instead of forward.
    #[arg(long)]
    pub(crate) central: bool,
    /// Relative step (default sqrt(eps) forward, cbrt(eps) central).
    #[arg(long)]
    pub(crate) step: Option<f64>,
    /// Write the Jacobian as a real Matrix Market file ("-": standard output; the summary then
    /// goes to standard error).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Write an SVG picture of the Jacobian, each entry colored by its magnitude (log scale).
    #[arg(long)]
    pub(crate) svg: Option<PathBuf>,
}

pub(crate) fn run(a: &JacobianArgs, quiet: bool) -> Result<(), Failure> {
    if a.load.external.is_some() {
        return Err(Failure::from(
            "--external is for trace: a Jacobian's evaluations are made here".to_string(),
        ));
    }
    if a.pattern.is_some() {
        let mut given = a.flags.given();
        if a.load.journal.is_some() {
            given.push("--journal");
        }
        if !given.is_empty() {
            return Err(Failure::from(format!(
                "{} set how the pattern is traced, and --pattern gives it: no trace is made",
                given.join(", ")
            )));
        }
    }
    // Traced isolated (the default), the library is checked in a worker first; the Jacobian's
    // evaluations then load it here.
    let (mut f, x0) = open(&a.load, a.pattern.is_none() && !a.flags.no_isolate)?;
    let start = Instant::now();
    let p = match &a.pattern {
        Some(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| format!("opening {}: {e}", path.display()))?;
            let p = mtx::read_pattern(BufReader::new(file))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if p.rows() != f.m() || p.cols() != f.n() {
                return Err(Failure::from(format!(
                    "the pattern is {} x {}, the function {} x {}",
                    p.rows(),
                    p.cols(),
                    f.m(),
                    f.n()
                )));
            }
            p
        }
        None => {
            let options = a.flags.options(a.load.journal.clone(), true)?;
            trace_loaded(&mut f, &x0, &options, quiet)?
        }
    };
    let options = JacobianOptions {
        difference: if a.central {
            Difference::Central
        } else {
            Difference::Forward
        },
        step: a.step.map_or(Step::Default, Step::Relative),
        ..Default::default()
    };
    let mut plan = JacobianPlan::new(&p, &options).map_err(|e| e.to_string())?;
    let mut values = vec![0.0; plan.values_len()];
    // The routine ran isolated in the trace (unless --no-isolate) and is known to behave at x0;
    // the Jacobian's evaluations run in this process.
    let bar = progress_bar(quiet);
    let evaluations = plan
        .evaluate(
            &mut Counted {
                f: &mut f,
                bar: &bar,
            },
            &x0,
            None,
            &mut values,
        )
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let note = format!(
        "Jacobian by nanprop of {} ({}), {evaluations} evaluations\n{}",
        f.path().display(),
        f.symbol(),
        mtx::provenance(&p)
    );
    write_file(&a.out, |w| mtx::write_real(w, &p, &values, &note))?;
    let c = plan.coloring().clone();
    if let Some(path) = &a.svg {
        let title = format!(
            "Jacobian of {} ({}) at x0, {evaluations} evaluations",
            f.path().display(),
            f.symbol()
        );
        write_jacobian_svg(path, &p, &values, &title)?;
    }
    warnings(&p);
    summary(&p, c.num_colors, seconds, is_stdout(&a.out));
    let line = format!(
        "Jacobian: {evaluations} evaluations (finite differences without coloring: {})",
        f.n() + 1
    );
    if is_stdout(&a.out) {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
    Ok(())
}
