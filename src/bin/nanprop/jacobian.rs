//! `nanprop jacobian`: a sparse Jacobian of a loaded function by compressed differences.

use crate::args::{open, Load};
use crate::output::{
    is_stdout, progress_bar, read_pattern_file, say, summary, warnings, write_file,
    write_jacobian_svg, Counted,
};
use crate::trace::{trace_loaded, TraceFlags};
use crate::Failure;
use clap::Args;
use nanprop::jacobian::{Difference, JacobianOptions, JacobianPlan, Step};
use nanprop::pattern::{mtx, Pattern};
use nanprop::smoothing::{SigmaKind, SmoothingOptions};
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
    #[arg(long, conflicts_with = "smooth")]
    pub(crate) central: bool,
    /// Relative step (default sqrt(eps) forward, cbrt(eps) central).
    #[arg(long, conflicts_with = "smooth")]
    pub(crate) step: Option<f64>,
    /// The Jacobian of the Gaussian-smoothed function E[f(x + sigma eps)], every input
    /// perturbed together, for routines that branch (thresholds, regimes): SIGMA relative to
    /// max(|x_j|, 1) unless --smooth-absolute. Estimated per row by regression on the row's
    /// own perturbations, with standard errors. A traced pattern is then traced at x0 and at 8
    /// points sampled 3 sigma around it, so the branches the samples take are in it.
    #[arg(long, value_name = "SIGMA")]
    pub(crate) smooth: Option<f64>,
    /// Samples of the smoothed Jacobian (2 evaluations each).
    #[arg(long, default_value_t = 100, requires = "smooth")]
    pub(crate) samples: usize,
    /// SIGMA is absolute (the same for every input).
    #[arg(long, requires = "smooth")]
    pub(crate) smooth_absolute: bool,
    /// Seed of the smoothing's perturbations.
    #[arg(long, default_value_t = 0, requires = "smooth")]
    pub(crate) seed: u64,
    /// Write the smoothed Jacobian's standard errors as a real Matrix Market file (same
    /// coordinates as --out).
    #[arg(long, requires = "smooth")]
    pub(crate) std_errors: Option<PathBuf>,
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
            let p = read_pattern_file(path)?;
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
            let mut options = a.flags.options(a.load.journal.clone(), true)?;
            if let Some(s) = smoothing(a) {
                options = s.trace_options(options);
            }
            trace_loaded(&mut f, &x0, &options, quiet)?
        }
    };
    if let Some(s) = smoothing(a) {
        return smoothed(a, &mut f, &x0, &p, &s, quiet);
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
    say(&line, &a.out);
    Ok(())
}

/// The smoothing options the flags ask for, if --smooth is given.
fn smoothing(a: &JacobianArgs) -> Option<SmoothingOptions> {
    a.smooth.map(|sigma| SmoothingOptions {
        sigma,
        sigma_kind: if a.smooth_absolute {
            SigmaKind::Absolute
        } else {
            SigmaKind::Relative
        },
        samples: a.samples,
        seed: a.seed,
        ..SmoothingOptions::default()
    })
}

/// `jacobian --smooth`: the smoothed Jacobian and its standard errors.
fn smoothed(
    a: &JacobianArgs,
    f: &mut nanprop::loader::LoadedBlackBox,
    x0: &[f64],
    p: &Pattern,
    options: &SmoothingOptions,
    quiet: bool,
) -> Result<(), Failure> {
    let mut values = vec![0.0; p.nnz()];
    let mut errors = vec![0.0; p.nnz()];
    let bar = progress_bar(quiet);
    let evaluations = nanprop::smoothing::smoothed_jacobian(
        &mut Counted { f, bar: &bar },
        x0,
        p,
        options,
        &mut values,
        Some(&mut errors),
    )
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let kind = match options.sigma_kind {
        SigmaKind::Relative => "relative",
        SigmaKind::Absolute => "absolute",
    };
    let note = format!(
        "Smoothed Jacobian by nanprop of {} ({}): E[f(x + sigma eps)], sigma {} {kind}, {} \
         samples, seed {}, {evaluations} evaluations\n{}",
        f.path().display(),
        f.symbol(),
        options.sigma,
        options.samples,
        options.seed,
        mtx::provenance(p)
    );
    write_file(&a.out, |w| mtx::write_real(w, p, &values, &note))?;
    if let Some(path) = &a.std_errors {
        let note = format!("Standard errors of: {note}");
        write_file(path, |w| mtx::write_real(w, p, &errors, &note))?;
    }
    if let Some(path) = &a.svg {
        let title = format!(
            "Smoothed Jacobian of {} ({}), sigma {}",
            f.path().display(),
            f.symbol(),
            options.sigma
        );
        write_jacobian_svg(path, p, &values, &title)?;
    }
    warnings(p);
    let largest = errors.iter().cloned().fold(0.0, f64::max);
    let line = format!(
        "smoothed Jacobian: {evaluations} evaluations ({} samples), {} entries, largest standard \
         error {largest:.3e}",
        options.samples,
        p.nnz()
    );
    say(&line, &a.out);
    Ok(())
}
