//! Drivers run the probes a session asks for. This is the serial driver, and the guarded
//! evaluation every driver shares.
//!
//! The guard holds the black box to its contract on every call: it must write each of its m
//! outputs (they are pre-filled with a marker NaN, so an output left unwritten, or read before it
//! is written, is caught), write nothing past `y[m-1]` (a guard zone of 16 values follows), and
//! leave its input `x` unchanged. A breach is an [`ErrorKind::BlackBox`] error naming the
//! probe, never a wrong pattern.

use crate::error::{reserve, Error, ErrorKind, Result};
use crate::pattern::Pattern;
use crate::probe::Probe;
use crate::trace::{RequestKind, TraceOptions, TraceSession};

/// A function y = f(x) with n inputs and m outputs.
pub trait BlackBox {
    /// Evaluates f at `x` (n values) into `y` (m values). A nonzero code means failure.
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32>;

    /// Words for a failure code this black box returned, when it knows more than the number
    /// (an isolated run that crashed: "was killed by SIGSEGV"). None: "returned <code>".
    fn describe_failure(&self, _code: i32) -> Option<String> {
        None
    }
}

impl<F: FnMut(&[f64], &mut [f64]) -> std::result::Result<(), i32>> BlackBox for F {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self(x, y)
    }
}

/// Marker written into outputs before each call (a quiet NaN that decodes as unknown).
pub(crate) const UNWRITTEN: u64 = 0x7FF8_0000_0BAD_F00D;
pub(crate) const SIGN: u64 = 1 << 63;
/// Values after `y[m-1]` that the guard watches.
const GUARD: usize = 16;

/// Evaluates probes with the contract checks described in the module docs.
pub struct GuardedEvaluator {
    x0: Vec<f64>,
    x: Vec<f64>,
    /// The input as handed to the black box, to detect a black box that writes to it.
    sent: Vec<f64>,
    y: Vec<f64>,
    m: usize,
}

impl GuardedEvaluator {
    /// An evaluator at `x0` for m outputs. Errors: out of memory for its buffers.
    pub fn new(x0: &[f64], m: usize) -> Result<Self> {
        let copy = |what| -> Result<Vec<f64>> {
            let mut v = Vec::new();
            reserve(&mut v, x0.len(), what)?;
            v.extend_from_slice(x0);
            Ok(v)
        };
        let mut y = Vec::new();
        reserve(&mut y, m + GUARD, "output buffer")?;
        y.resize(m + GUARD, 0.0);
        Ok(GuardedEvaluator {
            x0: copy("x0 copy")?,
            x: copy("input buffer")?,
            sent: copy("input snapshot")?,
            y,
            m,
        })
    }

    /// Moves the evaluator to another point (n values), without allocating.
    pub fn set_point(&mut self, x0: &[f64]) {
        self.x0.copy_from_slice(x0);
        self.x.copy_from_slice(x0);
    }

    /// Evaluates `f` at `x0` with `probe`'s tags; returns the m outputs.
    pub fn eval(&mut self, f: &mut dyn BlackBox, probe: &Probe) -> Result<&[f64]> {
        probe.write_tags(&mut self.x);
        self.run(f, probe.cols(), || probe.describe())
    }

    /// Evaluates `f` at `x0` with input `j` of `cols` set to `value(j)`; `describe` names the
    /// evaluation in error messages.
    pub fn eval_shifted(
        &mut self,
        f: &mut dyn BlackBox,
        cols: &[u32],
        value: impl Fn(usize) -> f64,
        describe: impl Fn() -> String,
    ) -> Result<&[f64]> {
        for &c in cols {
            self.x[c as usize] = value(c as usize);
        }
        self.run(f, cols, describe)
    }

    /// Calls `f` on the prepared input, puts `x0` back at `touched`, and checks the contract.
    fn run(
        &mut self,
        f: &mut dyn BlackBox,
        touched: &[u32],
        describe: impl Fn() -> String,
    ) -> Result<&[f64]> {
        let m = self.m;
        self.sent.copy_from_slice(&self.x);
        self.y.fill(f64::from_bits(UNWRITTEN));
        crate::fpenv::mask_traps();
        let status = f.eval(&self.x, &mut self.y[..m]);
        crate::fpenv::mask_traps();
        // Rust code cannot write through `&[f64]`, so the compiler may assume x is unchanged and
        // fold the check below away; a C black box can (casting away const). Make the compiler
        // forget what it knows of x before comparing.
        std::hint::black_box(&mut self.x);
        let changed = (self.x.iter().zip(&self.sent)).position(|(a, b)| a.to_bits() != b.to_bits());
        if changed.is_some() {
            self.x.copy_from_slice(&self.x0);
        } else {
            for &c in touched {
                self.x[c as usize] = self.x0[c as usize];
            }
        }
        let fail = |msg: String| Err(Error::new(ErrorKind::BlackBox, msg));
        if let Err(code) = status {
            let what = f
                .describe_failure(code)
                .unwrap_or_else(|| format!("returned {code}"));
            return fail(format!("the black box {what} on {}", describe()));
        }
        if let Some(j) = changed {
            return fail(format!(
                "the black box changed its input x[{j}] on {}",
                describe()
            ));
        }
        if self.y[m..].iter().any(|v| v.to_bits() != UNWRITTEN) {
            return fail(format!(
                "the black box wrote past y[{}] (m = {m}) on {}",
                m - 1,
                describe()
            ));
        }
        if let Some(i) = self.y[..m]
            .iter()
            .position(|v| v.to_bits() & !SIGN == UNWRITTEN)
        {
            return fail(format!(
                "the black box did not write y[{i}] (or read it before writing it) on {}",
                describe()
            ));
        }
        Ok(&self.y[..m])
    }
}

/// Evaluates request `id` of `session` (the tagged NaNs of a probe, or its verification point).
pub fn eval_request<'a>(
    ev: &'a mut GuardedEvaluator,
    f: &mut dyn BlackBox,
    session: &TraceSession,
    id: usize,
) -> Result<&'a [f64]> {
    let r = session.request(id);
    match r.kind {
        RequestKind::Baseline | RequestKind::Nan => ev.eval(f, r.probe),
        RequestKind::Finite => ev.eval_shifted(
            f,
            r.probe.cols(),
            |j| session.finite_value(j),
            || format!("the verification of {}", r.probe.describe()),
        ),
    }
}

/// Traces f: R^n -> R^m at `x0` with the serial driver: one evaluation at a time, in the order
/// the planner gives. `n = x0.len()`.
pub fn trace(
    f: &mut dyn BlackBox,
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
) -> Result<Pattern> {
    trace_with_progress(f, m, x0, options, &mut |_, _| {})
}

/// As [`trace`], calling `progress(done, planned)` after every evaluation: `planned` is the
/// evaluations done plus those outstanding in the current step, so it grows as the planner
/// plans new steps.
pub fn trace_with_progress(
    f: &mut dyn BlackBox,
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Pattern> {
    let _fp = crate::fpenv::FpGuard::enter();
    if options.isolate {
        let mut isolated = crate::isolate::Isolated::new(f, x0.len(), m, options.timeout)?;
        return serial(&mut isolated, m, x0, options, progress);
    }
    serial(f, m, x0, options, progress)
}

fn serial(
    f: &mut dyn BlackBox,
    m: usize,
    x0: &[f64],
    options: &TraceOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Pattern> {
    let mut session = TraceSession::new(x0.len(), m, x0, options)?;
    let mut ev = GuardedEvaluator::new(x0, m)?;
    loop {
        let ks = session.ask()?;
        if ks.is_empty() {
            break;
        }
        let planned = session.evaluations() + ks.len();
        for id in ks {
            let y = eval_request(&mut ev, f, &session, id)?;
            session.tell(id, y)?;
            progress(session.evaluations(), planned);
        }
    }
    session.finish()
}
