//! The floating-point format of a black box's arguments: double (REAL*8) or single (REAL*4).
//!
//! Low in the crate because several layers size things by it: the check of a traced pattern
//! (its steps and rounding floor, [`crate::trace::check`]), Jacobian steps
//! ([`crate::jacobian`]), and the single-precision wrapper that converts at the call
//! ([`crate::driver::single`]).

/// The floating-point format of a black box's arguments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// `double`, REAL*8 (the default).
    #[default]
    Double,
    /// `float`, REAL*4.
    Single,
}

impl Precision {
    /// Machine epsilon of the format.
    pub fn epsilon(self) -> f64 {
        match self {
            Precision::Double => f64::EPSILON,
            Precision::Single => f32::EPSILON as f64,
        }
    }

    /// `x` rounded to the format (unchanged for double).
    pub fn round(self, x: f64) -> f64 {
        match self {
            Precision::Double => x,
            Precision::Single => x as f32 as f64,
        }
    }
}
