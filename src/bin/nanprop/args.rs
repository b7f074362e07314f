//! What the subcommands share: the function to load, its sizes and point, the strategy.

use clap::{Args, ValueEnum};
use nanprop::loader::{Convention, IntKind, LoadedBlackBox};
use nanprop::precision::Precision;
use nanprop::Strategy;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ConventionArg {
    /// void f(const double *x, double *y)
    C,
    /// int f(void *user_data, size_t n, const double *x, size_t m, double *y)
    Blackbox,
    /// subroutine f(n, x, m, y)
    Fortran,
    /// subroutine f(n, x, y), m = n (a residual resid(n, x, f))
    FortranSquare,
    /// subroutine fcn(n, x, fvec, iflag)
    MinpackHybrd,
    /// subroutine fcn(m, n, x, fvec, iflag)
    MinpackLmdif,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum StrategyArg {
    Payload,
    OneHot,
    Chunked,
}

#[derive(Args)]
pub(crate) struct Load {
    /// The shared library.
    #[arg(long, required_unless_present = "external")]
    pub(crate) lib: Option<PathBuf>,
    /// The function's name (Fortran: as in the source; name_, name__, NAME are tried).
    #[arg(long, required_unless_present = "external")]
    pub(crate) symbol: Option<String>,
    /// Calling convention.
    #[arg(long, value_enum, required_unless_present = "external")]
    pub(crate) convention: Option<ConventionArg>,
    /// Batch-scheduler mode (trace only, with --journal): instead of calling a library, write
    /// each evaluation's input to DIR/<step>-<request>.in (n little-endian doubles) and read its
    /// outputs from DIR/<step>-<request>.out (m little-endian doubles) once they exist.
    #[arg(long, requires = "journal")]
    pub(crate) external: Option<PathBuf>,
    /// Keep every evaluation in this journal file and resume from it when run again.
    #[arg(long)]
    pub(crate) journal: Option<PathBuf>,
    /// Inputs.
    #[arg(short = 'n')]
    pub(crate) n: usize,
    /// Outputs.
    #[arg(short = 'm')]
    pub(crate) m: usize,
    /// The Fortran code uses 8-byte INTEGER (-fdefault-integer-8).
    #[arg(long)]
    pub(crate) integer8: bool,
    /// Bytes of the routine's REAL arguments: 8 (double precision, the default) or 4 (REAL*4,
    /// float; Jacobian steps are then sized for float).
    #[arg(long, value_name = "BYTES", default_value_t = 8, value_parser = real_bytes)]
    pub(crate) real: u8,
    /// The point: a comma-separated list of n numbers, one number for every input (default 1;
    /// negative numbers allowed: --x0 -1), or a file: text with n numbers (commas or blanks;
    /// comments from '#' or '!' to the end of a line; Fortran exponents 1.5D0), or, named
    /// *.bin, n little-endian doubles.
    #[arg(long, default_value = "1", allow_hyphen_values = true)]
    pub(crate) x0: String,
}

pub(crate) fn strategy(s: StrategyArg) -> Strategy {
    match s {
        StrategyArg::Payload => Strategy::Payload,
        StrategyArg::OneHot => Strategy::OneHot,
        StrategyArg::Chunked => Strategy::Chunked,
    }
}

/// The point: a file, a list, or one number for all inputs.
pub(crate) fn parse_x0(spec: &str, n: usize) -> Result<Vec<f64>, String> {
    let path = Path::new(spec);
    if path.is_file() && path.extension().is_some_and(|e| e == "bin") {
        let bytes = std::fs::read(path).map_err(|e| format!("reading --x0 file {spec}: {e}"))?;
        if bytes.len() != 8 * n {
            return Err(format!(
                "--x0 file {spec} has {} bytes, expected n = {n} little-endian doubles ({} bytes)",
                bytes.len(),
                8 * n
            ));
        }
        return Ok(bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect());
    }
    let (text, source) = if path.is_file() {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("reading --x0 file {spec}: {e}"))?;
        (text, format!("in {spec}"))
    } else {
        (spec.to_string(), format!("(and {spec} is not a file)"))
    };
    let mut values = Vec::new();
    for line in text.lines() {
        let line = line.split(['#', '!']).next().unwrap_or("");
        for word in line.split(|c: char| c == ',' || c.is_whitespace()) {
            if word.is_empty() {
                continue;
            }
            // Fortran writes exponents with D: 1.5D0, -2.0d-3.
            let number = word.replace(['D', 'd'], "e");
            let v = number
                .parse::<f64>()
                .map_err(|_| format!("--x0: '{word}' is not a number {source}"))?;
            values.push(v);
        }
    }
    match values.len() {
        1 => Ok(vec![values[0]; n]),
        k if k == n => Ok(values),
        k => Err(format!(
            "--x0 has {k} numbers, expected n = {n} (or one for all)"
        )),
    }
}

/// The function `load` names, with its x0; `isolated`: the evaluations will run in workers
/// ([`LoadedBlackBox::open_in_worker`]).
pub(crate) fn open(load: &Load, isolated: bool) -> Result<(LoadedBlackBox, Vec<f64>), String> {
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
        ConventionArg::FortranSquare => Convention::FortranSquare,
        ConventionArg::MinpackHybrd => Convention::MinpackHybrd,
        ConventionArg::MinpackLmdif => Convention::MinpackLmdif,
    };
    let kind = if load.integer8 {
        IntKind::I8
    } else {
        IntKind::I4
    };
    let real = match load.real {
        4 => Precision::Single,
        _ => Precision::Double,
    };
    // Isolated (the default), the library is loaded only by the workers that call it, so a
    // constructor that aborts or exits ends a worker, not this command.
    let open = match isolated {
        true => LoadedBlackBox::open_in_worker,
        false => LoadedBlackBox::open,
    };
    let f = open(lib, symbol, convention, load.n, load.m, kind, real).map_err(|e| e.to_string())?;
    let x0 = parse_x0(&load.x0, load.n)?;
    Ok((f, x0))
}

/// `--real`: 4 or 8.
fn real_bytes(s: &str) -> Result<u8, String> {
    match s {
        "4" => Ok(4),
        "8" => Ok(8),
        _ => Err(format!("{s:?}: REAL arguments are 4 or 8 bytes")),
    }
}
