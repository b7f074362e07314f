//! `nanprop trace`: the pattern of a loaded function, or of evaluations done by a batch
//! scheduler through files (`--external`).

use crate::args::{open, parse_x0, strategy, Load, StrategyArg};
use crate::output::{
    is_stdout, json_summary, progress_bar, summary, warnings, write_file, write_svg,
};
use crate::Failure;
use clap::{Args, ValueEnum};
use nanprop::coloring::{self, ColoringOptions};
use nanprop::driver::entry::trace_files;
use nanprop::loader::LoadedBlackBox;
use nanprop::pattern::mtx;
use nanprop::trace::options::seconds;
use nanprop::{trace_with_progress, Noise, Pattern, TraceOptions};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub(crate) struct TraceArgs {
    #[command(flatten)]
    pub(crate) load: Load,
    #[command(flatten)]
    pub(crate) flags: TraceFlags,
    /// Write the pattern as a Matrix Market file ("-": standard output; the summary then goes
    /// to standard error). Its header says how many entries of each kind it holds.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Write the kind of every entry as an integer Matrix Market file with the same
    /// coordinates (0 traced, 1 perturbation, 2 chunk, 3 unresolved, 4 non-finite row,
    /// 5 assumed), for scipy.io.mmread.
    #[arg(long)]
    pub(crate) kinds: Option<PathBuf>,
    /// Write an SVG spy plot beside its column-compressed view.
    #[arg(long)]
    pub(crate) svg: Option<PathBuf>,
    /// The summary as text (default) or as one JSON object, for scripts.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// With --external: wait up to this many seconds for missing outputs (default: exit with
    /// status 3 and let the scheduler run this command again).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) wait: f64,
}

/// How the summary is printed.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

/// `--noise`: [`Noise`].
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum NoiseArg {
    Tolerate,
    Error,
}

/// The options of a trace, shared by `trace` and `jacobian` (which traces when not given a
/// pattern).
#[derive(Args)]
pub(crate) struct TraceFlags {
    /// Tracing strategy.
    #[arg(long, value_enum, default_value_t = StrategyArg::Payload)]
    pub(crate) strategy: StrategyArg,
    /// Inputs per probe for the chunked strategy.
    #[arg(long, default_value_t = 8)]
    pub(crate) chunk_size: usize,
    /// Most evaluations, baseline included: "auto" (default: at most n NaN probes, dense rows
    /// assumed, plus the guard's check, which leaves long rows out where it would compress
    /// nothing), "none" (no limit, every zero checked), or a number (a budget on
    /// everything; what is unresolved or unchecked then is kept as possible).
    #[arg(long, default_value = "auto", value_parser = evaluation_cap)]
    pub(crate) max_evaluations: usize,
    /// No verification by finite perturbation (half the evaluations, NaN tracing alone).
    #[arg(long)]
    pub(crate) no_verify: bool,
    /// An output counts as changed only when it moves by more than this times max(|y|, 1)
    /// (default 0: any change of its bits).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) tolerance: f64,
    /// Outputs that jitter when evaluated again at the same point (and no --tolerance):
    /// estimate the noise and set the tolerance from it (default), or stop with an error.
    #[arg(long, value_enum, default_value_t = NoiseArg::Tolerate)]
    pub(crate) noise: NoiseArg,
    /// Run the routine in this process instead of a forked worker (faster; a crash of the
    /// routine, e.g. from a wrong --convention, then ends nanprop with a signal).
    #[arg(long, conflicts_with_all = ["isolate", "processes"])]
    pub(crate) no_isolate: bool,
    /// Run each evaluation in a forked worker process: the default on the command line (a
    /// crash or a hang becomes an error message).
    #[arg(long)]
    pub(crate) isolate: bool,
    /// Evaluate each step's probes in this many forked worker processes at once.
    #[arg(long, default_value_t = 0)]
    pub(crate) processes: usize,
    /// Seconds one evaluation may take (in a worker process).
    #[arg(long)]
    pub(crate) timeout: Option<f64>,
}

impl TraceFlags {
    /// The options these flags ask for; `loaded`: a routine called by nanprop (isolated by
    /// default), as opposed to evaluations done elsewhere (`--external`).
    pub(crate) fn options(
        &self,
        journal: Option<PathBuf>,
        loaded: bool,
    ) -> Result<TraceOptions, Failure> {
        Ok(TraceOptions {
            strategy: strategy(self.strategy),
            chunk_size: self.chunk_size,
            max_evaluations: self.max_evaluations,
            verify: !self.no_verify,
            verify_tolerance: self.tolerance,
            noise: match self.noise {
                NoiseArg::Tolerate => Noise::Tolerate,
                NoiseArg::Error => Noise::Error,
            },
            isolate: loaded && !self.no_isolate,
            processes: self.processes,
            timeout: seconds(self.timeout.unwrap_or(0.0), "--timeout")?,
            journal,
            ..TraceOptions::default()
        })
    }

    /// The flags given on the command line that differ from their defaults (for `jacobian
    /// --pattern`, which does not trace).
    pub(crate) fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if !matches!(self.strategy, StrategyArg::Payload) {
            v.push("--strategy");
        }
        if self.chunk_size != 8 {
            v.push("--chunk-size");
        }
        if self.max_evaluations != 0 {
            v.push("--max-evaluations");
        }
        if self.no_verify {
            v.push("--no-verify");
        }
        if self.tolerance != 0.0 {
            v.push("--tolerance");
        }
        if self.noise != NoiseArg::Tolerate {
            v.push("--noise");
        }
        if self.processes != 0 {
            v.push("--processes");
        }
        if self.timeout.is_some() {
            v.push("--timeout");
        }
        v
    }
}

/// Traces a loaded function with a progress count; a failure at x0 (before any NaN) gets the
/// loader's hint on conventions and sizes.
pub(crate) fn trace_loaded(
    f: &mut LoadedBlackBox,
    x0: &[f64],
    options: &TraceOptions,
    quiet: bool,
) -> Result<Pattern, Failure> {
    let bar = progress_bar(quiet);
    let m = f.m();
    let p = trace_with_progress(f, m, x0, options, &mut |p| {
        bar.set_position(p.evaluations as u64);
    });
    bar.finish_and_clear();
    p.map_err(|e| {
        let hint = f.hint_for(&e);
        let mut failure = Failure::from(e);
        if let Some(hint) = hint {
            failure.message = format!("{}\nhint: {hint}", failure.message);
        }
        failure
    })
}

pub(crate) fn run(a: &TraceArgs, quiet: bool) -> Result<(), Failure> {
    let options = a
        .flags
        .options(a.load.journal.clone(), a.load.external.is_none())?;
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
            let (mut f, x0) = open(&a.load, options.isolate || options.processes > 1)?;
            let p = trace_loaded(&mut f, &x0, &options, quiet)?;
            (p, format!("{} ({})", f.path().display(), f.symbol()))
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let c = coloring::color(&p, &ColoringOptions::default()).map_err(|e| e.to_string())?;
    let note = format!(
        "traced by nanprop from {source} with {} evaluations\n{}",
        p.report.evaluations,
        mtx::provenance(&p)
    );
    if let Some(out) = &a.out {
        write_file(out, |w| mtx::write_pattern(w, &p, &note))?;
    }
    if let Some(path) = &a.kinds {
        write_file(path, |w| mtx::write_kinds(w, &p, &note))?;
    }
    if let Some(path) = &a.svg {
        let title = format!("{source}: {} evaluations", p.report.evaluations);
        write_svg(path, &p, &c, &title)?;
    }
    warnings(&p);
    let to_stderr =
        a.out.as_deref().is_some_and(is_stdout) || a.kinds.as_deref().is_some_and(is_stdout);
    match a.format {
        Format::Text => summary(&p, c.num_colors, seconds, to_stderr),
        Format::Json => json_summary(&p, c.num_colors, seconds, &source, to_stderr),
    }
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
