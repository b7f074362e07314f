//! The `nanprop` command: trace a function in a shared library, color a pattern, compute a
//! sparse Jacobian (plain or smoothed) or a sparse Hessian, or run the built-in demo. See
//! `nanprop --help`.
//!
//! One file per subcommand; [`args`] holds what they share (loading a function, the point),
//! [`output`] what they print and write. Every decision about a trace or a Jacobian is the
//! library's: the subcommands convert flags into its options and call it.

mod args;
mod color;
mod demo;
mod hessian;
mod jacobian;
mod output;
mod trace;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
    Trace(trace::TraceArgs),
    /// Color the columns of a pattern (Matrix Market file) for Jacobian compression.
    Color(color::ColorArgs),
    /// Compute a sparse Jacobian of a function in a shared library by compressed differences
    /// (or, with --smooth, the Jacobian of its Gaussian smoothing).
    Jacobian(jacobian::JacobianArgs),
    /// Compute a sparse Hessian from a gradient routine in a shared library (star coloring).
    Hessian(hessian::HessianArgs),
    /// Trace the built-in wing-box model and show its pattern, coloring and Jacobian cost.
    Demo {
        /// Tracing strategy.
        #[arg(value_enum, default_value_t = args::StrategyArg::Payload)]
        strategy: args::StrategyArg,
    },
}

/// Status with which `trace --external` stops while outputs are missing.
pub(crate) const WAITING: u8 = 3;

/// A failed command: its exit status and message.
pub(crate) struct Failure {
    pub(crate) status: u8,
    pub(crate) message: String,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure { status: 1, message }
    }
}

impl From<nanprop::Error> for Failure {
    fn from(e: nanprop::Error) -> Self {
        let status = match e.kind {
            nanprop::ErrorKind::Waiting => WAITING,
            _ => 1,
        };
        Failure {
            status,
            message: e.message,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Trace(a) => trace::run(a, cli.quiet),
        Command::Color(a) => color::run(a),
        Command::Jacobian(a) => jacobian::run(a, cli.quiet),
        Command::Hessian(a) => hessian::run(a, cli.quiet),
        Command::Demo { strategy } => demo::run(*strategy),
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
