//! The `nanprop` command: trace a function in a shared library, color a pattern, compute a
//! sparse Jacobian, or run the built-in demo. See `nanprop --help`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use nanprop::coloring::{self, lower_bound, ColoringOptions, Order};
use nanprop::demo::{compressed_picture, demo_blackbox, demo_x0, picture, DEMO_M};
use nanprop::jacobian::{Difference, JacobianOptions, JacobianPlan, Step};
use nanprop::loader::{Convention, IntKind, LoadedBlackBox};
use nanprop::{mtx, svg, trace, trace_with_progress, BlackBox, Pattern, Strategy, TraceOptions};
use std::io::{BufReader, BufWriter, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "nanprop",
    version,
    about = "Jacobian sparsity of black-box functions by NaN propagation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// No progress bar.
    #[arg(long, global = true)]
    quiet: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Trace the sparsity pattern of a function in a shared library.
    Trace(TraceArgs),
    /// Color the columns of a pattern (Matrix Market file) for Jacobian compression.
    Color(ColorArgs),
    /// Compute a sparse Jacobian of a function in a shared library by compressed differences.
    Jacobian(JacobianArgs),
    /// Trace the built-in wing-box model and show its pattern, coloring and Jacobian cost.
    Demo {
        /// Tracing strategy.
        #[arg(value_enum, default_value_t = StrategyArg::Payload)]
        strategy: StrategyArg,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ConventionArg {
    /// void f(const double *x, double *y)
    C,
    /// int f(void *user_data, size_t n, const double *x, size_t m, double *y)
    Blackbox,
    /// subroutine f(n, x, m, y)
    Fortran,
    /// subroutine fcn(n, x, fvec, iflag)
    MinpackHybrd,
    /// subroutine fcn(m, n, x, fvec, iflag)
    MinpackLmdif,
}

#[derive(Clone, Copy, ValueEnum)]
enum StrategyArg {
    Payload,
    OneHot,
    Chunked,
}

#[derive(Args)]
struct Load {
    /// The shared library.
    #[arg(long, required_unless_present = "external")]
    lib: Option<PathBuf>,
    /// The function's name (Fortran: as in the source; name_, name__, NAME are tried).
    #[arg(long, required_unless_present = "external")]
    symbol: Option<String>,
    /// Calling convention.
    #[arg(long, value_enum, required_unless_present = "external")]
    convention: Option<ConventionArg>,
    /// Batch-scheduler mode (trace only, with --journal): instead of calling a library, write
    /// each evaluation's input to DIR/<step>-<request>.in (n little-endian doubles) and read its
    /// outputs from DIR/<step>-<request>.out (m little-endian doubles) once they exist.
    #[arg(long, requires = "journal")]
    external: Option<PathBuf>,
    /// Keep every evaluation in this journal file and resume from it when run again.
    #[arg(long)]
    journal: Option<PathBuf>,
    /// Inputs.
    #[arg(short = 'n')]
    n: usize,
    /// Outputs.
    #[arg(short = 'm')]
    m: usize,
    /// The Fortran code uses 8-byte INTEGER (-fdefault-integer-8).
    #[arg(long)]
    integer8: bool,
    /// The point: a file of n numbers, a comma-separated list of n numbers, or one number for
    /// every input (default 1).
    #[arg(long, default_value = "1")]
    x0: String,
}

#[derive(Args)]
struct TraceArgs {
    #[command(flatten)]
    load: Load,
    /// Tracing strategy.
    #[arg(long, value_enum, default_value_t = StrategyArg::Payload)]
    strategy: StrategyArg,
    /// Inputs per probe for the chunked strategy.
    #[arg(long, default_value_t = 8)]
    chunk_size: usize,
    /// Most evaluations (0: no limit); what is unresolved then is kept as possible.
    #[arg(long, default_value_t = 0)]
    max_evaluations: usize,
    /// Write the pattern as a Matrix Market file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write an SVG spy plot beside its column-compressed view.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// No verification by finite perturbation (half the evaluations, NaN tracing alone).
    #[arg(long)]
    no_verify: bool,
    /// Run each evaluation in a forked worker process (crashes and hangs become errors).
    #[arg(long)]
    isolate: bool,
    /// Evaluate each step's probes in this many forked worker processes at once.
    #[arg(long, default_value_t = 0)]
    processes: usize,
    /// With --isolate or --processes: seconds one evaluation may take.
    #[arg(long)]
    timeout: Option<f64>,
    /// With --external: wait up to this many seconds for missing outputs (default: exit with
    /// status 3 and let the scheduler run this command again).
    #[arg(long, default_value_t = 0.0)]
    wait: f64,
}

#[derive(Args)]
struct ColorArgs {
    /// The pattern (Matrix Market coordinate file).
    file: PathBuf,
    /// Order: best, natural, largest-first, smallest-last, incidence-degree,
    /// dynamic-largest-first, random, saturation.
    #[arg(long, default_value = "best")]
    order: String,
    /// Write the colors, one per column (0-based), one per line.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write an SVG spy plot beside its column-compressed view.
    #[arg(long)]
    svg: Option<PathBuf>,
}

#[derive(Args)]
struct JacobianArgs {
    #[command(flatten)]
    load: Load,
    /// The pattern (Matrix Market); traced first when not given.
    #[arg(long)]
    pattern: Option<PathBuf>,
    /// Central differences (2 colors evaluations, second order) instead of forward.
    #[arg(long)]
    central: bool,
    /// Relative step (default sqrt(eps) forward, cbrt(eps) central).
    #[arg(long)]
    step: Option<f64>,
    /// Write the Jacobian as a real Matrix Market file.
    #[arg(long)]
    out: PathBuf,
    /// Write an SVG spy plot beside its column-compressed view.
    #[arg(long)]
    svg: Option<PathBuf>,
}

fn strategy(s: StrategyArg) -> Strategy {
    match s {
        StrategyArg::Payload => Strategy::Payload,
        StrategyArg::OneHot => Strategy::OneHot,
        StrategyArg::Chunked => Strategy::Chunked,
    }
}

fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("{spinner} evaluations {pos}/{len} [{bar:30}] {elapsed}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

/// The point: a file, a list, or one number for all inputs.
fn parse_x0(spec: &str, n: usize) -> Result<Vec<f64>, String> {
    let text = if Path::new(spec).is_file() {
        std::fs::read_to_string(spec).map_err(|e| format!("reading --x0 file {spec}: {e}"))?
    } else {
        spec.to_string()
    };
    let values: Vec<f64> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<f64>()
                .map_err(|_| format!("--x0: '{s}' is not a number (and {spec} is not a file)"))
        })
        .collect::<Result<_, _>>()?;
    match values.len() {
        1 => Ok(vec![values[0]; n]),
        k if k == n => Ok(values),
        k => Err(format!(
            "--x0 has {k} numbers, expected n = {n} (or one for all)"
        )),
    }
}

fn open(load: &Load) -> Result<(LoadedBlackBox, Vec<f64>), String> {
    let (Some(lib), Some(symbol), Some(convention)) = (&load.lib, &load.symbol, load.convention)
    else {
        return Err(
            "--lib, --symbol and --convention are needed (or --external for trace)".to_string(),
        );
    };
    let convention = match convention {
        ConventionArg::C => Convention::C,
        ConventionArg::Blackbox => Convention::Blackbox,
        ConventionArg::Fortran => Convention::Fortran,
        ConventionArg::MinpackHybrd => Convention::MinpackHybrd,
        ConventionArg::MinpackLmdif => Convention::MinpackLmdif,
    };
    let kind = if load.integer8 {
        IntKind::I8
    } else {
        IntKind::I4
    };
    let f = LoadedBlackBox::open(lib, symbol, convention, load.n, load.m, kind)
        .map_err(|e| e.to_string())?;
    let x0 = parse_x0(&load.x0, load.n)?;
    Ok((f, x0))
}

/// A black box that moves a progress bar.
struct Counted<'a> {
    f: &'a mut dyn BlackBox,
    bar: &'a ProgressBar,
}

impl BlackBox for Counted<'_> {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> Result<(), i32> {
        let r = self.f.eval(x, y);
        self.bar.inc(1);
        r
    }
}

fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), String> {
    let file =
        std::fs::File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    let mut w = BufWriter::new(file);
    write(&mut w).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn write_svg(path: &Path, p: &Pattern, c: &coloring::Coloring) -> Result<(), String> {
    std::fs::write(path, svg::spy_and_compressed(p, &c.colors, c.num_colors))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

fn summary(p: &Pattern, colors: usize, seconds: f64) {
    println!(
        "n = {}, m = {}, nnz = {}, evaluations = {}, unresolved = {}, colors = {colors} (lower bound {}), n/colors = {:.2}, time = {seconds:.3} s",
        p.cols(),
        p.rows(),
        p.nnz(),
        p.report.evaluations,
        p.report.unresolved,
        lower_bound(p),
        p.cols() as f64 / colors.max(1) as f64
    );
}

fn trace_loaded(
    f: &mut LoadedBlackBox,
    x0: &[f64],
    options: &TraceOptions,
    quiet: bool,
) -> Result<Pattern, String> {
    let bar = progress_bar(quiet);
    let m = f.m();
    let p = trace_with_progress(f, m, x0, options, &mut |done, planned| {
        bar.set_length(planned as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    p.map_err(|e| e.to_string())
}

fn cmd_trace(a: &TraceArgs, quiet: bool) -> Result<(), Failure> {
    let options = TraceOptions {
        strategy: strategy(a.strategy),
        chunk_size: a.chunk_size,
        max_evaluations: a.max_evaluations,
        verify: !a.no_verify,
        isolate: a.isolate,
        timeout: a.timeout.map(std::time::Duration::from_secs_f64),
        journal: a.load.journal.clone(),
        ..TraceOptions::default()
    };
    let start = Instant::now();
    let (p, source) = match &a.load.external {
        Some(dir) => {
            let x0 = parse_x0(&a.load.x0, a.load.n)?;
            (
                trace_external(dir, a.load.n, a.load.m, &x0, &options, a.wait)?,
                format!("external evaluations in {}", dir.display()),
            )
        }
        None => {
            let (mut f, x0) = open(&a.load)?;
            let p = if a.processes > 0 {
                nanprop::parallel::trace_processes(&mut f, a.load.m, &x0, &options, a.processes)
                    .map_err(|e| e.to_string())?
            } else {
                trace_loaded(&mut f, &x0, &options, quiet)?
            };
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
    summary(&p, c.num_colors, seconds);
    Ok(())
}

/// Status with which `trace --external` stops while outputs are missing.
const WAITING: u8 = 3;

/// A failed command: its exit status and message.
struct Failure {
    status: u8,
    message: String,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure { status: 1, message }
    }
}

/// The batch-scheduler driver: the session's requests become files (see `--external`).
fn trace_external(
    dir: &Path,
    n: usize,
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
    wait: f64,
) -> Result<Pattern, Failure> {
    use nanprop::TraceSession;
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut session = TraceSession::new(n, m, x0, options).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + std::time::Duration::from_secs_f64(wait.max(0.0));
    let mut x = vec![0.0; n];
    loop {
        let ids = session.ask().map_err(|e| e.to_string())?;
        if ids.is_empty() {
            break;
        }
        let mut missing = 0;
        for id in ids {
            let stem = format!("{:05}-{:07}", session.step(), id);
            let (input, output) = (
                dir.join(format!("{stem}.in")),
                dir.join(format!("{stem}.out")),
            );
            match std::fs::read(&output) {
                Ok(bytes) if bytes.len() == 8 * m => {
                    let y: Vec<f64> = bytes
                        .chunks(8)
                        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                        .collect();
                    session.tell(id, &y).map_err(|e| e.to_string())?;
                }
                Ok(bytes) => {
                    let msg = format!(
                        "{} has {} bytes, expected m = {m} doubles ({} bytes)",
                        output.display(),
                        bytes.len(),
                        8 * m
                    );
                    return Err(msg.into());
                }
                Err(_) => {
                    if !input.exists() {
                        session.write_input(id, &mut x);
                        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
                        // Written under another name and renamed, so a scheduler never sees half a file.
                        let partial = dir.join(format!("{stem}.in.part"));
                        std::fs::write(&partial, bytes)
                            .map_err(|e| format!("writing {}: {e}", partial.display()))?;
                        std::fs::rename(&partial, &input)
                            .map_err(|e| format!("renaming {}: {e}", partial.display()))?;
                    }
                    missing += 1;
                }
            }
        }
        if missing > 0 {
            if Instant::now() >= deadline {
                let msg = format!(
                    "waiting for {missing} evaluations: run your program on each {}/*.in (n = {n} little-endian doubles) \
                     writing the m = {m} outputs to the matching .out file, then run this command again",
                    dir.display()
                );
                return Err(Failure {
                    status: WAITING,
                    message: msg,
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
    Ok(session.finish().map_err(|e| e.to_string())?)
}

fn parse_order(s: &str) -> Result<coloring::Strategy, String> {
    use coloring::Strategy::{BestOf, Only};
    Ok(match s {
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

fn cmd_color(a: &ColorArgs) -> Result<(), Failure> {
    let file =
        std::fs::File::open(&a.file).map_err(|e| format!("opening {}: {e}", a.file.display()))?;
    let p = mtx::read_pattern(BufReader::new(file))
        .map_err(|e| format!("{}: {e}", a.file.display()))?;
    let start = Instant::now();
    let c = coloring::color(
        &p,
        &ColoringOptions {
            strategy: parse_order(&a.order)?,
            ..Default::default()
        },
    );
    let seconds = start.elapsed().as_secs_f64();
    if let Some(out) = &a.out {
        write_file(out, |w| {
            use std::io::Write;
            c.colors.iter().try_for_each(|k| writeln!(w, "{k}"))
        })?;
    }
    if let Some(path) = &a.svg {
        write_svg(path, &p, &c)?;
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

fn cmd_jacobian(a: &JacobianArgs, quiet: bool) -> Result<(), Failure> {
    let (mut f, x0) = open(&a.load)?;
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
        None => trace_loaded(&mut f, &x0, &TraceOptions::default(), quiet)?,
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
    let bar = progress_bar(quiet);
    bar.set_length(plan.evaluations_per_jacobian(false) as u64);
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
        "Jacobian by nanprop of {} ({}), {evaluations} evaluations",
        f.path().display(),
        f.symbol()
    );
    write_file(&a.out, |w| mtx::write_real(w, &p, &values, &note))?;
    let c = plan.coloring().clone();
    if let Some(path) = &a.svg {
        write_svg(path, &p, &c)?;
    }
    summary(&p, c.num_colors, seconds);
    println!(
        "Jacobian: {evaluations} evaluations (finite differences without coloring: {})",
        f.n() + 1
    );
    Ok(())
}

fn cmd_demo(s: StrategyArg) -> Result<(), Failure> {
    let x0 = demo_x0();
    let options = TraceOptions {
        strategy: strategy(s),
        ..TraceOptions::default()
    };
    let start = Instant::now();
    let mut f = demo_blackbox;
    let p = trace(&mut f, DEMO_M, &x0, &options).map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    println!(
        "nanprop demo: cantilever wing-box model, strategy {:?}",
        strategy(s)
    );
    println!("inputs 0-9 skin thickness, 10-19 station loads, 20 yield stress");
    println!("outputs 0-9 bending stress, 10 root margin, 11-20 panel buckling, 21 weight\n");
    print!("{}", picture(&p));
    println!(
        "\nn = {}, m = {}, nnz = {}, evaluations = {} ({} of them verification; one-hot: {}, {} verified),",
        p.cols(),
        p.rows(),
        p.nnz(),
        p.report.evaluations,
        p.report.verification_evaluations,
        p.cols() + 1,
        2 * p.cols() + 1,
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Trace(a) => cmd_trace(a, cli.quiet),
        Command::Color(a) => cmd_color(a),
        Command::Jacobian(a) => cmd_jacobian(a, cli.quiet),
        Command::Demo { strategy } => cmd_demo(*strategy),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure {
            status: WAITING,
            message,
        }) => {
            eprintln!("nanprop: {message}");
            ExitCode::from(WAITING)
        }
        Err(Failure { status, message }) => {
            eprintln!("nanprop: error: {message}");
            ExitCode::from(status)
        }
    }
}
