//! The black box's contract, checked on every call whichever executor made it.
//!
//! A black box must write each of its m outputs, write nothing past `y[m-1]`, and leave its
//! input `x` unchanged. Before each call the outputs and a guard zone of [`GUARD`] values after
//! them are filled with a marker NaN ([`arm`]); after it, [`check`] finds an output left
//! unwritten (or read before it was written: the marker then spreads), a write into the guard
//! zone, or a changed input. A breach is a [`Failure`], which the run loop reports naming the
//! request; it never becomes a wrong pattern. A black box writing further than the guard zone
//! corrupts whatever memory follows, as in any C program: nanprop cannot see that.
//!
//! [`Guarded`] is the in-process form: buffers for one evaluation at a time, used by the serial
//! and thread executors and by Jacobian plans. A black box that cannot write its input
//! ([`BlackBox::may_write_input`] false: a Rust closure, a Python function, a `float` function
//! behind its wrapper) is handed the input itself by [`Guarded::call_on`] and
//! [`Guarded::call`], and only its outputs are checked: at n = 10^6 the copy and the
//! comparison read and write 32 MB a call. Forked workers arm and check the same way in
//! their shared memory ([`crate::driver::worker`]).

use super::{BlackBox, Failure, SyncBlackBox};
use crate::error::{reserve, Result};

/// `len` zeros. Errors: out of memory, naming `what`.
fn zeros(len: usize, what: &str) -> Result<Vec<f64>> {
    let mut v = Vec::new();
    reserve(&mut v, len, what)?;
    v.resize(len, 0.0);
    Ok(v)
}

/// Values after `y[m-1]` that the guard watches.
pub const GUARD: usize = 16;
/// Marker written into outputs before each call (a quiet NaN that decodes as unknown).
pub(crate) const UNWRITTEN: u64 = 0x7FF8_0000_0BAD_F00D;
const SIGN: u64 = 1 << 63;

/// Fills `y` (m outputs and the guard zone) with the marker.
pub fn arm(y: &mut [f64]) {
    y.fill(f64::from_bits(UNWRITTEN));
}

/// Checks a call that returned success: `sent` is the input as handed over, `x` the input
/// after the call, `y` the m outputs followed by the guard zone.
pub fn check(sent: &[f64], x: &[f64], y: &[f64], m: usize) -> std::result::Result<(), Failure> {
    if let Some(j) = changed(sent, x) {
        return Err(Failure::ChangedInput(j));
    }
    check_outputs(y, m)
}

/// Calls a black box that cannot write its input ([`BlackBox::may_write_input`] false) on `x`
/// itself, and checks its outputs (`y`: m outputs and the guard zone), unless it writes every
/// one ([`BlackBox::writes_every_output`]).
fn call_reading(
    f: &mut dyn BlackBox,
    x: &[f64],
    y: &mut [f64],
    m: usize,
) -> std::result::Result<(), Failure> {
    if f.writes_every_output() {
        // Nothing left unwritten to find ([`BlackBox::writes_every_output`]).
        crate::fpenv::mask_traps();
        let status = f.eval_checked(x, &mut y[..m]);
        crate::fpenv::mask_traps();
        return status;
    }
    arm(y);
    crate::fpenv::mask_traps();
    let status = f.eval_checked(x, &mut y[..m]);
    crate::fpenv::mask_traps();
    status?;
    check_outputs(y, m)
}

/// The output half of [`check`]: nothing written past `m`, every output written.
fn check_outputs(y: &[f64], m: usize) -> std::result::Result<(), Failure> {
    if y[m..].iter().any(|v| v.to_bits() != UNWRITTEN) {
        return Err(Failure::WrotePast { m });
    }
    // Blocks of 64 looked at without an early exit (vectorized); the position only in the
    // block that holds the marker.
    let unwritten = |v: &f64| v.to_bits() & !SIGN == UNWRITTEN;
    for (k, block) in y[..m].chunks(64).enumerate() {
        if block.iter().fold(false, |any, v| any | unwritten(v)) {
            let i = block.iter().position(unwritten).unwrap_or(0);
            return Err(Failure::Unwritten(64 * k + i));
        }
    }
    Ok(())
}

fn changed(sent: &[f64], x: &[f64]) -> Option<usize> {
    // Blocks of 64 compared without an early exit (vectorized); the position only in the
    // block that differs.
    let differs = |a: &[f64], b: &[f64]| {
        (a.iter().zip(b)).fold(0u64, |acc, (a, b)| acc | (a.to_bits() ^ b.to_bits())) != 0
    };
    let mut at = 0;
    for (a, b) in x.chunks(64).zip(sent.chunks(64)) {
        if differs(a, b) {
            return (a.iter().zip(b))
                .position(|(a, b)| a.to_bits() != b.to_bits())
                .map(|k| at + k);
        }
        at += a.len();
    }
    None
}

/// Buffers for one guarded evaluation at a time, in this process.
pub struct Guarded {
    x: Vec<f64>,
    /// The input as handed to the black box, to detect a black box that writes to it (made on
    /// the first [`Guarded::call`]; [`Guarded::call_on`] compares with its caller's copy).
    sent: Vec<f64>,
    y: Vec<f64>,
    m: usize,
}

impl Guarded {
    /// Buffers for f: R^n -> R^m. Errors: out of memory.
    pub fn new(n: usize, m: usize) -> Result<Self> {
        Ok(Guarded {
            x: zeros(n, "input buffer")?,
            sent: Vec::new(),
            y: zeros(m.saturating_add(GUARD), "output buffer")?,
            m,
        })
    }

    /// Buffers for [`Guarded::call_on`] alone, for `f` with n inputs and m outputs: the copy
    /// of the input a black box that may write it gets ([`BlackBox::may_write_input`]) only
    /// for such a black box. Errors: out of memory.
    pub fn for_calls_on(f: &dyn BlackBox, n: usize, m: usize) -> Result<Self> {
        Guarded::new(if f.may_write_input() { n } else { 0 }, m)
    }

    /// The input the next call hands to f (n values): set it before calling. After a call it
    /// holds what was sent, even if f changed it.
    pub fn input_mut(&mut self) -> &mut [f64] {
        &mut self.x
    }

    /// The m outputs of the last call (meaningful after a successful one).
    pub fn output(&self) -> &[f64] {
        &self.y[..self.m]
    }

    /// The buffer the outputs are written to: the m outputs, then the guard zone. A caller
    /// that wants the last call's outputs without copying them swaps it for another buffer of
    /// the same length, whose contents do not matter (each call marks every value first, or
    /// has a black box that writes every output).
    pub fn output_buffer(&mut self) -> &mut Vec<f64> {
        &mut self.y
    }

    /// Calls `f` on the input and checks the contract; the outputs are then in
    /// [`Guarded::output`]. Errors: a failure; out of memory for the input snapshot (first
    /// call only).
    pub fn call(&mut self, f: &mut dyn BlackBox) -> std::result::Result<(), Failure> {
        if !f.may_write_input() {
            // f cannot change the input: no snapshot to take or compare.
            return call_reading(f, &self.x, &mut self.y, self.m);
        }
        if self.sent.len() != self.x.len() {
            reserve(&mut self.sent, self.x.len(), "input snapshot")
                .map_err(|e| Failure::NotRun(e.message))?;
            self.sent.resize(self.x.len(), 0.0);
        }
        self.sent.copy_from_slice(&self.x);
        let mut sent = std::mem::take(&mut self.sent);
        let r = self.call_with(&sent, |x, y| f.eval_checked(x, y));
        std::mem::swap(&mut self.sent, &mut sent);
        r
    }

    /// Calls `f` on a copy of `input` (n values, kept by the caller as the snapshot) and
    /// checks the contract.
    pub fn call_on(
        &mut self,
        f: &mut dyn BlackBox,
        input: &[f64],
    ) -> std::result::Result<(), Failure> {
        if !f.may_write_input() {
            // f cannot change `input`: it gets it as it is, with nothing to copy or compare.
            return call_reading(f, input, &mut self.y, self.m);
        }
        if self.x.len() != input.len() {
            // Made for another black box ([`Guarded::for_calls_on`]): the copy, once.
            self.x.clear();
            reserve(&mut self.x, input.len(), "input buffer")
                .map_err(|e| Failure::NotRun(e.message))?;
            self.x.resize(input.len(), 0.0);
        }
        self.x.copy_from_slice(input);
        self.call_with(input, |x, y| f.eval_checked(x, y))
    }

    /// As [`Guarded::call_on`], for a black box shared between threads.
    pub fn call_shared_on(
        &mut self,
        f: &dyn SyncBlackBox,
        input: &[f64],
    ) -> std::result::Result<(), Failure> {
        self.x.copy_from_slice(input);
        self.call_with(input, |x, y| f.eval(x, y).map_err(Failure::Returned))
    }

    fn call_with(
        &mut self,
        sent: &[f64],
        call: impl FnOnce(&[f64], &mut [f64]) -> std::result::Result<(), Failure>,
    ) -> std::result::Result<(), Failure> {
        let m = self.m;
        arm(&mut self.y);
        crate::fpenv::mask_traps();
        let status = call(&self.x, &mut self.y[..m]);
        crate::fpenv::mask_traps();
        // Rust code cannot write through `&[f64]`, so the compiler may assume x is unchanged and
        // fold the check away; a C black box can (casting away const). Make the compiler
        // forget what it knows of x before comparing.
        std::hint::black_box(&mut self.x);
        let breach = changed(sent, &self.x);
        if breach.is_some() {
            self.x.copy_from_slice(sent);
        }
        status?;
        if let Some(j) = breach {
            return Err(Failure::ChangedInput(j));
        }
        // The inputs were compared above.
        check_outputs(&self.y, m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A black box that may write its input (the default) gets a copy, checked after the
    /// call; one that cannot (a Rust closure) gets the caller's input itself, and its outputs
    /// are checked all the same.
    #[test]
    fn only_a_black_box_that_may_write_its_input_gets_a_copy() {
        struct MayWrite(Vec<usize>);
        impl BlackBox for MayWrite {
            fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
                self.0.push(x.as_ptr() as usize);
                y.copy_from_slice(&x[..y.len()]);
                Ok(())
            }
        }
        let input = vec![1.0, 2.0, 3.0];
        let mut g = Guarded::new(3, 2).unwrap();
        let mut c = MayWrite(Vec::new());
        assert!(c.may_write_input());
        g.call_on(&mut c, &input).unwrap();
        assert_ne!(c.0[0], input.as_ptr() as usize, "a copy");
        assert_eq!(g.output(), &[1.0, 2.0]);
        let seen = std::cell::Cell::new(0usize);
        let mut f = |x: &[f64], y: &mut [f64]| -> std::result::Result<(), i32> {
            seen.set(x.as_ptr() as usize);
            y[0] = x[2];
            Ok(()) // y[1] left unwritten
        };
        assert!(!f.may_write_input());
        assert_eq!(g.call_on(&mut f, &input), Err(Failure::Unwritten(1)));
        assert_eq!(seen.get(), input.as_ptr() as usize, "the input itself");
        // On its own input buffer (Jacobian plans): a snapshot to compare with only for the
        // black box that may write.
        let mut g = Guarded::new(3, 2).unwrap();
        g.input_mut().copy_from_slice(&input);
        assert_eq!(g.call(&mut f), Err(Failure::Unwritten(1)));
        assert!(g.sent.is_empty(), "no snapshot");
        g.call(&mut c).unwrap();
        assert_eq!(g.sent, input, "a snapshot");
        assert_eq!(g.output(), &[1.0, 2.0]);
    }

    /// Buffers for `call_on` alone: a black box that cannot write its input costs no copy of
    /// it; one that may gets a copy. The output buffer swapped for
    /// one of the same length with anything in it: the next call's outputs are checked all
    /// the same (an unwritten one is named, not read as written).
    #[test]
    fn buffers_for_calls_on_copy_the_input_only_when_needed() {
        struct MayWrite(usize);
        impl BlackBox for MayWrite {
            fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
                self.0 = x.as_ptr() as usize;
                y.copy_from_slice(&x[1..]);
                Ok(())
            }
        }
        let input = vec![1.0, 2.0, 3.0];
        let mut reads = |x: &[f64], y: &mut [f64]| -> std::result::Result<(), i32> {
            y[0] = x[0];
            if x[1] == 2.0 {
                y[1] = x[1];
            }
            Ok(())
        };
        let mut g = Guarded::for_calls_on(&reads, 3, 2).unwrap();
        g.call_on(&mut reads, &input).unwrap();
        assert_eq!(g.output(), &[1.0, 2.0]);
        assert!(g.x.is_empty(), "no copy of the input");
        let mut c = MayWrite(0);
        assert_eq!(Guarded::for_calls_on(&c, 3, 2).unwrap().x.len(), 3);
        // (One made for another black box makes its copy at the first call.)
        g.call_on(&mut c, &input).unwrap();
        assert_eq!(g.x, input, "a copy");
        assert_eq!(c.0, g.x.as_ptr() as usize, "f got the copy");
        let mut theirs = vec![5.0; 2 + GUARD];
        std::mem::swap(g.output_buffer(), &mut theirs);
        assert_eq!(&theirs[..2], &[2.0, 3.0], "the last call's outputs, taken");
        g.call_on(&mut reads, &input).unwrap();
        assert_eq!(g.output(), &[1.0, 2.0]);
        std::mem::swap(g.output_buffer(), &mut theirs);
        assert_eq!(
            g.call_on(&mut reads, &[1.0, 3.0, 3.0]),
            Err(Failure::Unwritten(1))
        );
    }

    /// A black box that writes every output (and cannot write its input) is called with no
    /// marking pass before and no check after; any other is marked and checked.
    #[test]
    fn a_black_box_that_writes_every_output_is_not_marked() {
        /// Records whether its outputs held the guard's marker when it was called; writes
        /// `y[0]` only (a wrapper that says it writes all would be lying).
        struct Reads(bool, Vec<bool>);
        impl BlackBox for Reads {
            fn eval(&mut self, _: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
                self.1.push(y.iter().all(|v| v.to_bits() == UNWRITTEN));
                y[0] = 1.0;
                Ok(())
            }
            fn may_write_input(&self) -> bool {
                false
            }
            fn writes_every_output(&self) -> bool {
                self.0
            }
        }
        let input = [1.0, 2.0];
        for says in [false, true] {
            let mut f = Reads(says, Vec::new());
            let mut g = Guarded::for_calls_on(&f, 2, 2).unwrap();
            let got = g.call_on(&mut f, &input);
            assert_eq!(f.1, [!says], "marked before the call");
            match says {
                false => assert_eq!(got, Err(Failure::Unwritten(1))),
                true => assert_eq!(got, Ok(())),
            }
            let mut g = Guarded::new(2, 2).unwrap();
            g.input_mut().copy_from_slice(&input);
            let got = g.call(&mut f);
            assert_eq!(f.1, [!says, !says], "on its own buffer too");
            assert_eq!(got.is_ok(), says);
        }
    }

    /// The first unwritten output is named wherever it sits among the blocks the check looks
    /// at at once, and a marker whose sign was flipped (read, negated, written) counts too.
    #[test]
    fn the_first_unwritten_output_is_named_across_blocks() {
        let m = 200;
        for (holes, first) in [(vec![130, 150], 130), (vec![63, 64], 63), (vec![199], 199)] {
            let mut y = vec![1.0; m + GUARD];
            arm(&mut y[m..]);
            for &i in &holes {
                y[i] = f64::from_bits(UNWRITTEN);
            }
            y[holes[holes.len() - 1]] = -y[holes[holes.len() - 1]];
            match check_outputs(&y, m) {
                Err(Failure::Unwritten(i)) => assert_eq!(i, first),
                other => panic!("{other:?}"),
            }
        }
        let mut y = vec![2.0; m + GUARD];
        arm(&mut y[m..]);
        assert!(check_outputs(&y, m).is_ok());
        y[m + 3] = 0.0;
        assert!(matches!(
            check_outputs(&y, m),
            Err(Failure::WrotePast { .. })
        ));
    }
}
