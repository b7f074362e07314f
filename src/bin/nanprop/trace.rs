//! `nanprop trace`: the pattern of a loaded function, or of evaluations done by a batch
//! scheduler through files (`--external`).

use crate::args::{open, parse_x0, strategy, Load, StrategyArg};
use crate::output::{is_stdout, progress_bar, summary, write_file, write_svg};
use crate::Failure;
use clap::Args;
use nanprop::coloring::{self, ColoringOptions};
use nanprop::driver::entry::trace_files;
use nanprop::loader::LoadedBlackBox;
use nanprop::pattern::mtx;
use nanprop::trace::options::seconds;
use nanprop::{trace_with_progress, Pattern, TraceOptions};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub(crate) struct TraceArgs {
    #[command(flatten)]
    pub(crate) load: Load,
    /// Tracing strategy.
    #[arg(long, value_enum, default_value_t = StrategyArg::Payload)]
    pub(crate) strategy: StrategyArg,
    /// Inputs per probe for the chunked strategy.
    #[arg(long, default_value_t = 8)]
    pub(crate) chunk_size: usize,
    /// Most evaluations, baseline included: "auto" (default: at most n NaN probes, dense rows
    /// assumed, plus the guard's check), "none" (no limit), or a number (a budget on
    /// everything; what is unresolved or unchecked then is kept as possible).
    #[arg(long, default_value = "auto", value_parser = evaluation_cap)]
    pub(crate) max_evaluations: usize,
    /// Write the pattern as a Matrix Market file.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Write an SVG spy plot beside its column-compressed view.
    #[arg(long)]
    pub(crate) svg: Option<PathBuf>,
    /// No verification by finite perturbation (half the evaluations, NaN tracing alone).
    #[arg(long)]
    pub(crate) no_verify: bool,
    /// Run each evaluation in a forked worker process (crashes and hangs become errors).
    #[arg(long)]
    pub(crate) isolate: bool,
    /// Evaluate each step's probes in this many forked worker processes at once.
    #[arg(long, default_value_t = 0)]
    pub(crate) processes: usize,
    /// With --isolate or --processes: seconds one evaluation may take.
    #[arg(long)]
    pub(crate) timeout: Option<f64>,
    /// With --external: wait up to this many seconds for missing outputs (default: exit with
    /// status 3 and let the scheduler run this command again).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) wait: f64,
}

/// Traces a loaded function with a progress bar.
pub(crate) fn trace_loaded(
    f: &mut LoadedBlackBox,
    x0: &[f64],
    options: &TraceOptions,
    quiet: bool,
) -> Result<Pattern, Failure> {
    let bar = progress_bar(quiet);
    let m = f.m();
    let p = trace_with_progress(f, m, x0, options, &mut |p| {
        bar.set_length(p.planned as u64);
        bar.set_position(p.evaluations as u64);
    });
    bar.finish_and_clear();
    Ok(p?)
}

pub(crate) fn run(a: &TraceArgs, quiet: bool) -> Result<(), Failure> {
    let options = TraceOptions {
        strategy: strategy(a.strategy),
        chunk_size: a.chunk_size,
        max_evaluations: a.max_evaluations,
        verify: !a.no_verify,
        isolate: a.isolate,
        processes: a.processes,
        timeout: seconds(a.timeout.unwrap_or(0.0), "--timeout")?,
        journal: a.load.journal.clone(),
        ..TraceOptions::default()
    };
    let start = Instant::now();
    let (p, source) = match &a.load.external {
        Some(dir) => {
            let x0 = parse_x0(&a.load.x0, a.load.n)?;
            let wait = seconds(a.wait, "--wait")?.unwrap_or_default();
            (
                trace_files(dir, a.load.m, &x0, &options, wait)?,
                format!("external evaluations in {}", dir.display()),
            )
        }
        None => {
            let (mut f, x0) = open(&a.load)?;
            let p = trace_loaded(&mut f, &x0, &options, quiet)?;
            (p, format!("{} ({})", f.path().display(), f.symbol()))
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let c = coloring::color(&p, &ColoringOptions::default());
    if let Some(out) = &a.out {
        let note = format!(
            "traced by nanprop from {source} with {} evaluations",
            p.report.evaluations
        );
        write_file(out, |w| mtx::write_pattern(w, &p, &note))?;
    }
    if let Some(path) = &a.svg {
        write_svg(path, &p, &c)?;
    }
    if !p.nonfinite_rows().is_empty() {
        eprintln!(
            "nanprop: warning: {} outputs were NaN/Inf at x0; their rows are dense",
            p.nonfinite_rows().len()
        );
    }
    let to_stderr = a.out.as_deref().is_some_and(is_stdout);
    summary(&p, c.num_colors, seconds, to_stderr);
    Ok(())
}

/// `--max-evaluations`: "auto" (0 in the options), "none" (`usize::MAX`) or a positive number.
pub(crate) fn evaluation_cap(s: &str) -> Result<usize, String> {
    match s {
        "auto" => Ok(0),
        "none" => Ok(usize::MAX),
        _ => match s.parse::<usize>() {
            Ok(0) | Err(_) => Err(format!(
                "'{s}' is not an evaluation cap: give auto, none or a positive number"
            )),
            Ok(k) => Ok(k),
        },
    }
}
