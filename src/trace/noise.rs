//! Noise: outputs that change although nothing reached them.
//!
//! NaN tracing reads a change of an output as a dependency, so a black box whose outputs
//! jitter from one evaluation to the next (iterative solvers stopped at a tolerance,
//! reductions in varying order, timers) would make every output depend on every input, and the
//! pattern would come out dense, every entry labelled traced. The session watches every NaN
//! request: an output that stays finite but moves from its baseline by a tiny relative amount
//! (above 0 and at most [`NOISE_CEILING`]) is what noise looks like; a NaN that reached it or a
//! branch it switched gives a NaN or a change of a size the code's arithmetic makes, not
//! rounding-level jitter. When such changes appear in at least [`NOISY_ROWS`] outputs (or 1% of
//! them) at once and no tolerance is set, the trace stops with an error naming the outputs and
//! the size of their jitter, and the tolerance that would trace it. With
//! [`crate::TraceOptions::verify_tolerance`] set, changes within it count as none, and the
//! largest one seen is reported ([`crate::TraceReport::noise`]) as the estimated relative noise.
//!
//! Cost: no evaluation: every NaN request is a repeated evaluation for the outputs it cannot
//! reach. The session examines the first 16 evaluations of a trace and one NaN request in 32
//! after that (one pass over the outputs each), since noise shows in every evaluation.
//! What it cannot see: noise larger than [`NOISE_CEILING`] (it then looks like a dependency;
//! set a tolerance), or noise that only one output shows.

/// Relative changes at or below this (and above 0) are noise-like.
pub const NOISE_CEILING: f64 = 1e-9;
/// Noise-like changes in at least this many outputs of one evaluation (or 1% of the traced
/// outputs, whichever is more) make the black box noisy.
pub const NOISY_ROWS: usize = 2;

/// The relative change of `v` from `base`, both finite.
pub fn relative_change(v: f64, base: f64) -> f64 {
    (v - base).abs() / base.abs().max(v.abs()).max(f64::MIN_POSITIVE)
}

/// Rows of `y` whose finite value moved from the finite `baseline` by a noise-like amount, and
/// the largest such relative change.
pub fn noise_like(y: &[f64], baseline: &[f64]) -> (Vec<u32>, f64) {
    let mut rows = Vec::new();
    let mut largest = 0.0f64;
    for (i, (&v, &b)) in y.iter().zip(baseline).enumerate() {
        if v.to_bits() == b.to_bits() || !v.is_finite() || !b.is_finite() {
            continue;
        }
        let r = relative_change(v, b);
        if r <= NOISE_CEILING {
            rows.push(i as u32);
            largest = largest.max(r);
        }
    }
    (rows, largest)
}

/// Whether the outputs `y` of one NaN request show noise: noise-like changes from `baseline`
/// in at least [`NOISY_ROWS`] outputs (or 1% of the traced ones). Then the words of the error:
/// the first outputs named, the size of their jitter, the request (`what` describes it) and a
/// tolerance that would trace the black box.
pub fn noisy(y: &[f64], baseline: &[f64], what: impl FnOnce() -> String) -> Option<String> {
    let (rows, largest) = noise_like(y, baseline);
    let traced = baseline.iter().filter(|v| v.is_finite()).count();
    if rows.len() < NOISY_ROWS.max(traced / 100) {
        return None;
    }
    let named: Vec<String> = rows.iter().take(5).map(|i| format!("y[{i}]")).collect();
    let more = match rows.len() {
        k if k > 5 => format!(" and {} more", k - 5),
        _ => String::new(),
    };
    let suggested = (largest * 1000.0).max(1e-14);
    Some(format!(
        "the black box is noisy: {}{more} moved by up to {largest:.1e} (relative) on {} \
         although no NaN reached them; NaN tracing needs outputs that repeat bit for bit. Set \
         verify_tolerance above the noise (e.g. {suggested:.0e}) to trace it",
        named.join(", "),
        what()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_noise_like_and_real_changes_are_not() {
        let base = [1.0, 2.0, 3.0, 4.0];
        let y = [1.0 + 1e-15, 2.5, f64::NAN, 4.0];
        let (rows, largest) = noise_like(&y, &base);
        assert_eq!(rows, [0]);
        assert!(largest > 1e-16 && largest < 1e-14);
    }
}
