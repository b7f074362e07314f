//! `nanprop hessian`: a sparse Hessian from a gradient routine in a shared library, by star
//! coloring and symmetric recovery.

use crate::args::{open, Load};
use crate::output::{
    is_stdout, progress_bar, read_pattern_file, say, summary, warnings, write_file, Counted,
};
use crate::trace::{trace_loaded, TraceFlags};
use crate::Failure;
use clap::Args;
use nanprop::coloring;
use nanprop::hessian::HessianPlan;
use nanprop::jacobian::{Difference, JacobianOptions, Step};
use nanprop::pattern::mtx;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub(crate) struct HessianArgs {
    /// The gradient routine (n inputs, -m n outputs).
    #[command(flatten)]
    pub(crate) load: Load,
    /// The Hessian's pattern (Matrix Market, square; symmetrized for coloring, and values are
    /// written for exactly its entries: a lower triangle gets the lower triangle). Traced from
    /// the gradient routine when not given.
    #[arg(long)]
    pub(crate) pattern: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) flags: TraceFlags,
    /// Central differences (2 colors gradient evaluations, second order) instead of forward.
    #[arg(long)]
    pub(crate) central: bool,
    /// Relative step (default sqrt(eps) forward, cbrt(eps) central).
    #[arg(long)]
    pub(crate) step: Option<f64>,
    /// Write the Hessian as a real Matrix Market file ("-": standard output; the summary then
    /// goes to standard error).
    #[arg(long)]
    pub(crate) out: PathBuf,
}

pub(crate) fn run(a: &HessianArgs, quiet: bool) -> Result<(), Failure> {
    if a.load.external.is_some() {
        return Err(Failure::from(
            "--external is for trace: a Hessian's evaluations are made here".to_string(),
        ));
    }
    if a.load.m != a.load.n {
        return Err(Failure::from(format!(
            "a gradient routine has as many outputs as inputs: -m {} differs from -n {}",
            a.load.m, a.load.n
        )));
    }
    let (mut g, x0) = open(&a.load, a.pattern.is_none() && !a.flags.no_isolate)?;
    let start = Instant::now();
    let p = match &a.pattern {
        Some(path) => read_pattern_file(path)?,
        None => {
            let options = a.flags.options(a.load.journal.clone(), true)?;
            trace_loaded(&mut g, &x0, &options, quiet)?
        }
    };
    if p.rows() != a.load.n || p.cols() != a.load.n {
        return Err(Failure::from(format!(
            "the pattern is {} x {}, the Hessian {n} x {n}",
            p.rows(),
            p.cols(),
            n = a.load.n
        )));
    }
    let options = JacobianOptions {
        difference: if a.central {
            Difference::Central
        } else {
            Difference::Forward
        },
        step: a.step.map_or(Step::Default, Step::Relative),
        ..Default::default()
    };
    let mut plan = HessianPlan::new(&p, &options)?;
    let column = coloring::color(&p.symmetrized()?, &options.coloring)?;
    let mut values = vec![0.0; plan.values_len()];
    let bar = progress_bar(quiet);
    let evaluations = plan
        .evaluate(
            &mut Counted {
                f: &mut g,
                bar: &bar,
            },
            &x0,
            None,
            &mut values,
        )
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let note = format!(
        "Hessian by nanprop from the gradient {} ({}), {evaluations} gradient evaluations, \
         {} star colors\n{}",
        g.path().display(),
        g.symbol(),
        plan.coloring().num_colors,
        mtx::provenance(&p)
    );
    write_file(&a.out, |w| mtx::write_real(w, &p, &values, &note))?;
    warnings(&p);
    summary(
        &p,
        plan.coloring().num_colors,
        start.elapsed().as_secs_f64(),
        is_stdout(&a.out),
    );
    let line = format!(
        "Hessian: {evaluations} gradient evaluations, {} star colors (column coloring: {}; \
         without coloring: {})",
        plan.coloring().num_colors,
        column.num_colors,
        a.load.n + 1
    );
    say(&line, &a.out);
    Ok(())
}
