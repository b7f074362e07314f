//! What can go wrong with one evaluation, as an executor reports it and the session reads it:
//! a failure that may come from the inputs (the session splits a failed NaN probe,
//! [`crate::trace::split`]) or a broken contract (an error).

use std::fmt;
use std::time::Duration;

/// Why one evaluation gave no outputs. Its text completes "the black box ... on" and the
/// request in words.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// f returned this nonzero code.
    Returned(i32),
    /// The worker process running f was killed by this signal.
    Signal(i32),
    /// f called `exit()` with this status (its worker process ended before f returned).
    Exited(i32),
    /// f ran longer than the timeout and was killed.
    TimedOut(Duration),
    /// f (Rust code) panicked in a worker process.
    Panicked,
    /// f changed its input `x[j]`.
    ChangedInput(usize),
    /// f wrote past `y[m-1]`.
    WrotePast {
        /// The number of outputs.
        m: usize,
    },
    /// f did not write `y[i]` (or read it before writing it).
    Unwritten(usize),
    /// f's worker process ended before f returned, and how it ended could not be learned (the
    /// process that forked it, its worker's spawner, could not wait for it, or was gone).
    Vanished,
    /// f could not be run at all (a fork failed, or its worker process died making it ready:
    /// a library's constructor); the words say why. Not a failure of f's inputs.
    NotRun(String),
}

impl Failure {
    /// Whether the failure may be caused by the inputs (a code, a crash, a hang), as opposed
    /// to a breach of the contract or an executor that could not run f.
    pub fn input_dependent(&self) -> bool {
        matches!(
            self,
            Failure::Returned(_)
                | Failure::Signal(_)
                | Failure::Exited(_)
                | Failure::TimedOut(_)
                | Failure::Panicked
                | Failure::Vanished
        )
    }
}

/// How [`Failure::NotRun`] reads, before its reason.
pub(crate) const NOT_RUN_WORDS: &str = "could not be run: ";

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Returned(code) => write!(f, "returned {code}"),
            Failure::Signal(sig) => write!(f, "was killed by {}", signal_name(*sig)),
            Failure::Exited(code) => {
                write!(
                    f,
                    "called exit({code}) (its process ended before returning)"
                )
            }
            Failure::TimedOut(limit) => {
                write!(f, "timed out after {:.3} s (killed)", limit.as_secs_f64())
            }
            Failure::Panicked => write!(f, "panicked"),
            Failure::ChangedInput(j) => write!(f, "changed its input x[{j}]"),
            Failure::WrotePast { m } => write!(f, "wrote past y[{}] (m = {m})", m - 1),
            Failure::Unwritten(i) => {
                write!(f, "did not write y[{i}] (or read it before writing it)")
            }
            Failure::Vanished => write!(
                f,
                "ended before returning, and how could not be learned (its process could not be \
                 waited for)"
            ),
            Failure::NotRun(why) => write!(f, "{NOT_RUN_WORDS}{why}"),
        }
    }
}

/// The name of a signal, with what it usually means for a numerical code.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV (segmentation fault)",
        libc::SIGBUS => "SIGBUS (bus error)",
        libc::SIGFPE => "SIGFPE (floating-point exception: a trap on NaN or a division)",
        libc::SIGABRT => "SIGABRT (abort)",
        libc::SIGILL => "SIGILL (illegal instruction)",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}
