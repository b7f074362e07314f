//! Single-precision black boxes: functions of `float`s (REAL*4), traced and differentiated by
//! the double-precision engine through a wrapper that converts at the call.
//!
//! # Why a wrapper is enough for tracing
//!
//! The codec puts an input's id in payload bits 50..29 of a binary64 NaN, exactly the 22 bits
//! a `double -> float` conversion keeps (`shared/NAN_FACTS.md` §2), so a tag narrowed to a
//! `float` is the binary32 NaN whose 22-bit payload is the id ([`crate::codec::encode_f32`]),
//! and widened back it decodes as [`crate::codec::Decoded::ViaFloat`]. [`Single`] does both
//! conversions with integer bit operations ([`narrow`], [`widen`]), not with `as`, whose NaN
//! payloads Rust leaves unspecified. The id space is the same as in double precision
//! (2^22 - 1 ids): a trace of at most [`crate::codec::MAX_ID`] inputs names every input by a
//! global id; a larger one numbers the inputs of each probe (the k-th gets id k + 1) and leaves
//! inputs past the `MAX_ID`-th of a probe untagged, as in double precision: it costs nothing
//! below 4,194,303 inputs, and above that only probes holding more inputs than that.
//!
//! Finite values: a `double` input is rounded to the nearest `float` (the baseline x0 given as
//! `float`s is exact); outputs are widened exactly, so "bit for bit unchanged" keeps its
//! meaning, and a verification step (relative 1e-3 by default, far above `float` resolution)
//! changes the inputs it should.
//!
//! # Jacobians
//!
//! A black box reports its [`Precision`]; a Jacobian plan evaluated on a single-precision one
//! uses `float` steps (`sqrt(eps_f32)` forward, `cbrt(eps_f32)` central, relative) and divides by
//! the step the `float` arithmetic really takes, `float(x + h) - float(x)` (see
//! [`crate::jacobian`]).
//!
//! # The contract, in single precision
//!
//! [`Single`] checks the `float` function as [`super::guard`] checks a `double` one: outputs
//! left unwritten stay marked and are reported as unwritten; a write into the 16 `float`s after
//! `y[m-1]` or a change of the input is reported ([`BlackBox::eval_checked`]) as the same
//! [`Failure`] a double-precision breach gives.

use super::guard::GUARD;
use super::{BlackBox, Failure};
use crate::error::{reserve, Result};
pub use crate::precision::Precision;

/// Marker of an unwritten `float` output (a quiet NaN with the largest payload; never kept:
/// an output still holding it is reported unwritten).
const UNWRITTEN32: u32 = 0x7FFF_FFFF;
const SIGN32: u32 = 1 << 31;

/// A `double` as a `float`: finite values rounded to nearest; a NaN keeps its sign, its quiet
/// bit and payload bits 50..29 (what the hardware conversion does, made explicit).
pub fn narrow(x: f64) -> f32 {
    if x.is_nan() {
        let b = x.to_bits();
        let sign = ((b >> 63) as u32) << 31;
        let fraction = ((b >> 29) & 0x7F_FFFF) as u32;
        // A payload living only in bits 28..0 would leave the fraction zero (an infinity):
        // keep it a NaN, as the hardware makes it the default quiet NaN.
        let fraction = if fraction == 0 { 0x40_0000 } else { fraction };
        f32::from_bits(sign | 0x7F80_0000 | fraction)
    } else {
        x as f32
    }
}

/// A `float` as a `double`, exactly; a NaN's 23-bit fraction moves to bits 51..29.
pub fn widen(y: f32) -> f64 {
    if y.is_nan() {
        let b = y.to_bits();
        let sign = ((b >> 31) as u64) << 63;
        let fraction = ((b & 0x7F_FFFF) as u64) << 29;
        f64::from_bits(sign | (0x7FF << 52) | fraction)
    } else {
        y as f64
    }
}

/// A function of `float`s: `f(x, y)` with x of n values and y of m values; a nonzero status is
/// a failure, as for [`BlackBox`].
pub trait BlackBox32 {
    /// Evaluates f at `x` into `y`.
    fn eval(&mut self, x: &[f32], y: &mut [f32]) -> std::result::Result<(), i32>;
}

impl<F: FnMut(&[f32], &mut [f32]) -> std::result::Result<(), i32>> BlackBox32 for F {
    fn eval(&mut self, x: &[f32], y: &mut [f32]) -> std::result::Result<(), i32> {
        self(x, y)
    }
}

/// A [`BlackBox32`] seen as a double-precision [`BlackBox`] (see the module docs). Evaluations
/// run one at a time (threads are not offered for single-precision black boxes).
pub struct Single<F> {
    f: F,
    x: Vec<f32>,
    sent: Vec<f32>,
    y: Vec<f32>,
    m: usize,
}

impl<F: BlackBox32> Single<F> {
    /// Wraps `f`: R^n -> R^m. Errors: out of memory for its `float` buffers.
    pub fn new(f: F, n: usize, m: usize) -> Result<Self> {
        let (mut x, mut sent, mut y) = (Vec::new(), Vec::new(), Vec::new());
        reserve(&mut x, n, "single-precision inputs")?;
        reserve(&mut sent, n, "single-precision inputs")?;
        let len = m.saturating_add(GUARD);
        reserve(&mut y, len, "single-precision outputs")?;
        x.resize(n, 0.0);
        sent.resize(n, 0.0);
        y.resize(len, 0.0);
        Ok(Single { f, x, sent, y, m })
    }
}

impl<F: BlackBox32> BlackBox for Single<F> {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self.eval_checked(x, y).map_err(|failure| match failure {
            Failure::Returned(code) => code,
            _ => -1,
        })
    }

    fn eval_checked(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), Failure> {
        let m = self.m;
        for (a, &b) in self.x.iter_mut().zip(x) {
            *a = narrow(b);
        }
        self.sent.copy_from_slice(&self.x);
        self.y.fill(f32::from_bits(UNWRITTEN32));
        let status = self.f.eval(&self.x, &mut self.y[..m]);
        // As in guard.rs: make the compiler forget what it knows of x before comparing.
        std::hint::black_box(&mut self.x);
        let changed = (self.x.iter().zip(&self.sent)).position(|(a, b)| a.to_bits() != b.to_bits());
        status.map_err(Failure::Returned)?;
        if let Some(j) = changed {
            return Err(Failure::ChangedInput(j));
        }
        if self.y[m..].iter().any(|v| v.to_bits() != UNWRITTEN32) {
            return Err(Failure::WrotePast { m });
        }
        for (out, &v) in y.iter_mut().zip(&self.y[..m]) {
            // Unwritten (or read before written): leave the guard's own marker in place.
            if v.to_bits() & !SIGN32 != UNWRITTEN32 {
                *out = widen(v);
            }
        }
        Ok(())
    }

    fn precision(&self) -> Precision {
        Precision::Single
    }

    /// The `float` function gets this wrapper's buffer, never `x` (and is checked there).
    fn may_write_input(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{self, Decoded};

    #[test]
    fn a_tag_narrowed_and_widened_decodes_as_via_float_for_every_id_bit() {
        for id in (0..22)
            .map(|b| 1u32 << b)
            .chain([1, 2, 3, codec::MAX_ID, 12345])
        {
            let tag = codec::encode(id);
            let narrowed = narrow(tag);
            assert_eq!(
                narrowed.to_bits(),
                codec::encode_f32(id).to_bits(),
                "id {id}"
            );
            assert_eq!(
                codec::decode(widen(narrowed)),
                Decoded::ViaFloat(id),
                "id {id}"
            );
            // The hardware's conversion agrees with the explicit one on this machine.
            assert_eq!((tag as f32).to_bits(), narrowed.to_bits(), "id {id}");
        }
    }

    #[test]
    fn finite_values_and_default_nans_convert_as_the_hardware_does() {
        for v in [
            0.0,
            -0.0,
            1.0,
            1.0 / 3.0,
            1e-40,
            3.4e38,
            1e39,
            f64::INFINITY,
        ] {
            assert_eq!(narrow(v).to_bits(), (v as f32).to_bits(), "{v}");
            assert_eq!(widen(v as f32).to_bits(), (v as f32 as f64).to_bits());
        }
        // 0/0 in float is the negative default NaN; widened it decodes as unknown (payload 0).
        let default = f32::from_bits(0xFFC0_0000);
        assert_eq!(codec::decode(widen(default)), Decoded::Unknown);
        // A payload only in bits 28..0 does not survive (NAN_FACTS §2) but stays a NaN.
        assert!(narrow(f64::from_bits(0x7FF8_0000_0000_0001)).is_nan());
    }

    #[test]
    fn ids_past_the_id_space_are_numbered_per_probe_and_survive_single_precision() {
        // n above MAX_ID: the k-th input of a probe carries id k + 1 (probe.rs), and what comes
        // back through float names it.
        let n = codec::MAX_ID as usize + 10;
        let cols: Vec<u32> = vec![5, codec::MAX_ID + 3];
        let p = crate::probe::Probe::new(cols, n);
        for k in 0..2 {
            let tag = p.tag(k);
            assert_eq!(
                codec::decode(widen(narrow(tag))),
                Decoded::ViaFloat(k as u32 + 1)
            );
        }
    }

    #[test]
    fn the_contract_is_checked_in_single_precision() {
        let mut y = [0.0f64; 3];
        let mut lazy = Single::new(
            |_: &[f32], y: &mut [f32]| {
                y[0] = 1.0;
                y[2] = 2.0;
                Ok(())
            },
            2,
            3,
        )
        .unwrap();
        y.fill(f64::from_bits(0x7FF8_0000_0BAD_F00D));
        lazy.eval(&[1.0, 2.0], &mut y).unwrap();
        assert_eq!((y[0], y[2]), (1.0, 2.0));
        assert_eq!(
            y[1].to_bits(),
            0x7FF8_0000_0BAD_F00D,
            "unwritten keeps the guard's mark"
        );
        let mut over = Single::new(
            |_: &[f32], y: &mut [f32]| {
                y.fill(1.0);
                // SAFETY (test): the wrapper's buffer has a guard zone after y.
                unsafe { *y.as_mut_ptr().add(y.len()) = 5.0 };
                Ok(())
            },
            1,
            2,
        )
        .unwrap();
        assert_eq!(
            over.eval_checked(&[1.0], &mut y[..2]),
            Err(Failure::WrotePast { m: 2 })
        );
    }
}
