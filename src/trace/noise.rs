//! Noise: outputs that change although nothing reached them.
//!
//! NaN tracing reads a change of an output as a dependency, so a black box whose outputs
//! jitter from one evaluation to the next (iterative solvers stopped at a tolerance,
//! reductions in varying order, timers) would make every output depend on every input, and the
//! pattern would come out dense, every entry labelled traced. The session watches NaN
//! requests: an output that stays finite but moves from its baseline by a tiny relative amount
//! (above 0 and at most [`NOISE_CEILING`]) is what noise looks like; a NaN that reached it or a
//! branch it switched gives a NaN or a change of a size the code's arithmetic makes, not
//! rounding-level jitter. Such changes in at least [`NOISY_ROWS`] outputs (or 1% of them) at
//! once make the black box noisy ([`noisy`]).
//!
//! **Estimating the noise.** An output that a NaN request cannot reach is evaluated again at
//! the same point, so every NaN request is a repeated evaluation for most outputs: the noise
//! costs no evaluation to measure. [`NoiseEstimate`] keeps the repeated values of a few noisy
//! outputs and estimates their noise as Moré and Wild's ECnoise does ("Estimating computational
//! noise", SIAM J. Sci. Comput. 33, 2011): the k-th differences of `nf` values give
//! `sigma_k = sqrt(gamma_k * mean((Delta^k f)^2))` with `gamma_k = (k!)^2 / (2k)!`; a level k
//! is accepted when sigma_k, sigma_k+1 and sigma_k+2 agree within a factor of 4 and the k-th
//! differences change sign (so they are noise, not a trend). ECnoise samples f along a
//! direction at spacing h; here h = 0 (the same point again), so smooth variation cannot
//! enter, and the level test guards against the rest (a drift, a counter). Values are relative
//! to each output's baseline and pooled over the outputs tracked. Until [`REPEATS`] values of
//! an output are known (short traces), the first level alone is used, pooled over every
//! noise-like change seen: `sqrt(mean(d^2) / 2)` for relative changes `d` from the baseline.
//!
//! **What is done with it** ([`crate::trace::options::Noise`]): by default the change
//! tolerance is set from the estimate when noise first shows ([`NoiseEstimate::tolerance`]:
//! [`TOLERANCE_FACTOR`] times the noise, and at least [`LARGEST_FACTOR`] times the largest
//! change seen), the trace goes on, and the report says so
//! ([`crate::TraceReport::noise`], [`crate::TraceReport::tolerance`]); or the trace stops with
//! an error naming the noisy outputs and the size of their jitter. A caller's
//! [`crate::TraceOptions::verify_tolerance`] is used as given; the estimate is reported.
//!
//! Cost: no evaluation. The session examines the NaN requests among the first 16 evaluations
//! of a trace and, after them, the requests of a step whose number in the step is a multiple of
//! 32: the first of every step, and one in 32 of a long step's (one pass over the outputs each),
//! since noise shows in every evaluation (on the tridiagonal at n = 10^6, 23 of its 50
//! evaluations, about 1.2 ms each). What it cannot see: noise larger than [`NOISE_CEILING`] (it
//! then looks like a dependency; set a tolerance), noise that only one output shows, or noise
//! that only a changed input brings (a code whose result repeats bit for bit at a point but
//! jitters from point to point: that noise does not disturb NaN tracing, only the finite steps
//! of the guard, where it can add entries of kind perturbation but never hide one).

/// Relative changes at or below this (and above 0) are noise-like.
pub const NOISE_CEILING: f64 = 1e-9;
/// Noise-like changes in at least this many outputs of one evaluation (or 1% of the traced
/// outputs, whichever is more) make the black box noisy.
pub const NOISY_ROWS: usize = 2;

/// The tolerance set from the noise is this many times the estimated relative noise (a change
/// of two noisy values has a standard deviation of sqrt(2) times the noise: 100 of those are
/// never reached by chance).
pub const TOLERANCE_FACTOR: f64 = 100.0;
/// ... and at least this many times the largest noise-like change seen when it is set.
pub const LARGEST_FACTOR: f64 = 10.0;
/// Values of a tracked output used for the difference table (ECnoise's `nf`).
pub const REPEATS: usize = 8;
/// Outputs whose repeated values are kept.
pub const TRACKED: usize = 32;

/// The relative change of `v` from `base`, both finite.
pub fn relative_change(v: f64, base: f64) -> f64 {
    (v - base).abs() / base.abs().max(v.abs()).max(f64::MIN_POSITIVE)
}

/// Rows of `y` whose finite value moved from the finite `baseline` by a noise-like amount, and
/// the largest such relative change.
pub fn noise_like(y: &[f64], baseline: &[f64]) -> (Vec<u32>, f64) {
    let mut rows = Vec::new();
    let mut largest = 0.0f64;
    // Blocks of 64 outputs looked at without a branch (vectorized): most hold no finite
    // change (a NaN probe's changed outputs are NaN), and only those that do are read again.
    const EXPONENT: u64 = 0x7FF0_0000_0000_0000;
    let finite_change = |v: f64, b: f64| {
        let (v, b) = (v.to_bits(), b.to_bits());
        v != b && v & EXPONENT != EXPONENT && b & EXPONENT != EXPONENT
    };
    for (k, (ys, bs)) in y.chunks(64).zip(baseline.chunks(64)).enumerate() {
        if !(ys.iter().zip(bs)).fold(false, |any, (&v, &b)| any | finite_change(v, b)) {
            continue;
        }
        for (i, (&v, &b)) in ys.iter().zip(bs).enumerate() {
            if !finite_change(v, b) {
                continue;
            }
            let r = relative_change(v, b);
            if r <= NOISE_CEILING {
                rows.push((64 * k + i) as u32);
                largest = largest.max(r);
            }
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

/// The repeated values of a few noisy outputs, and the noise they show (module docs).
#[derive(Clone, Debug, Default)]
pub struct NoiseEstimate {
    /// Tracked outputs: the row and its values relative to the baseline (the first is 1).
    tracked: Vec<(u32, Vec<f64>)>,
    /// Sum of squared relative noise-like changes from the baseline, and their count.
    squares: f64,
    count: usize,
    /// The largest noise-like relative change seen.
    largest: f64,
}

impl NoiseEstimate {
    /// Takes the outputs `y` of a NaN request, evaluated (for the outputs it cannot reach) at
    /// the point of `baseline`. Returns the rows that moved by a noise-like amount.
    pub fn observe(&mut self, y: &[f64], baseline: &[f64]) -> Vec<u32> {
        // Tracked outputs that repeated bit for bit are samples too (their noise came out 0).
        for (row, values) in &mut self.tracked {
            let (v, b) = (y[*row as usize], baseline[*row as usize]);
            if v.to_bits() == b.to_bits() && values.len() < REPEATS {
                values.push(1.0);
            }
        }
        let (rows, largest) = noise_like(y, baseline);
        self.largest = self.largest.max(largest);
        for &i in &rows {
            let (v, b) = (y[i as usize], baseline[i as usize]);
            let d = relative_change(v, b);
            self.squares += d * d;
            self.count += 1;
            let relative = v / b;
            match self.tracked.iter().position(|(r, _)| *r == i) {
                Some(t) if self.tracked[t].1.len() < REPEATS => self.tracked[t].1.push(relative),
                Some(_) => {}
                None if self.tracked.len() < TRACKED && b != 0.0 => {
                    self.tracked.push((i, vec![1.0, relative]));
                }
                None => {}
            }
        }
        rows
    }

    /// The estimated relative noise (a standard deviation): ECnoise's accepted level over the
    /// tracked outputs with [`REPEATS`] values, else the first level over every noise-like
    /// change; 0 when none was seen.
    pub fn relative(&self) -> f64 {
        let full: Vec<&[f64]> = self
            .tracked
            .iter()
            .filter(|(_, v)| v.len() == REPEATS)
            .map(|(_, v)| v.as_slice())
            .collect();
        if let Some(level) = ecnoise(&full) {
            return level;
        }
        if self.count == 0 {
            return 0.0;
        }
        (self.squares / (2.0 * self.count as f64)).sqrt()
    }

    /// The change tolerance to trace with, set from the noise seen so far.
    pub fn tolerance(&self) -> f64 {
        (TOLERANCE_FACTOR * self.relative()).max(LARGEST_FACTOR * self.largest)
    }
}

/// ECnoise's estimate from series of equally spaced values (here, repeated values of several
/// outputs, each relative to its own baseline), pooled over the series: the first level k whose
/// estimate agrees with the next two within a factor of 4 and whose k-th differences change
/// sign. None when no series is given or no level qualifies.
fn ecnoise(series: &[&[f64]]) -> Option<f64> {
    let nf = series.first()?.len();
    let mut diffs: Vec<Vec<f64>> = series.iter().map(|s| s.to_vec()).collect();
    let mut levels = Vec::with_capacity(nf);
    let mut signs = Vec::with_capacity(nf);
    let mut gamma = 1.0;
    for k in 1..nf {
        let (mut sum, mut count, mut lo, mut hi) = (0.0, 0usize, f64::INFINITY, f64::NEG_INFINITY);
        for d in &mut diffs {
            for i in 0..nf - k {
                d[i] = d[i + 1] - d[i];
                sum += d[i] * d[i];
                lo = lo.min(d[i]);
                hi = hi.max(d[i]);
            }
            count += nf - k;
        }
        gamma *= 0.5 * k as f64 / (2 * k - 1) as f64;
        levels.push((gamma * sum / count as f64).sqrt());
        signs.push(lo < 0.0 && hi > 0.0);
    }
    (0..levels.len().saturating_sub(2)).find_map(|k| {
        let three = &levels[k..k + 3];
        let lo = three.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = three.iter().cloned().fold(0.0, f64::max);
        (signs[k] && lo > 0.0 && hi <= 4.0 * lo).then_some(levels[k])
    })
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
        // Across the blocks of 64 the scan takes at once: jitter at 3, 70 and 199 found; a real
        // change, a NaN, a non-finite baseline and an Inf output are not noise.
        let mut base: Vec<f64> = (0..200).map(|i| 1.0 + i as f64).collect();
        let mut y = base.clone();
        for i in [3, 70, 199] {
            y[i] *= 1.0 + 1e-14;
        }
        y[100] *= 1.5;
        y[150] = f64::NAN;
        base[180] = f64::INFINITY;
        y[181] = f64::INFINITY;
        let (rows, _) = noise_like(&y, &base);
        assert_eq!(rows, [3, 70, 199]);
    }

    /// ECnoise's levels recover the standard deviation of noise of a known size, relative to
    /// each output, pooled over outputs; a steady drift is not taken for noise.
    #[test]
    fn ecnoise_estimates_known_noise_and_refuses_a_trend() {
        for sigma in [1e-14, 3e-12] {
            let mut estimate = NoiseEstimate::default();
            let base: Vec<f64> = (0..200).map(|i| 1.0 + i as f64).collect();
            let jitter = |call: u64, i: usize| {
                // A sum of 12 uniforms minus 6: close to a standard normal.
                let z: f64 = (0..12u64)
                    .map(|k| crate::rng::unit_from(&[call, i as u64, k]))
                    .sum::<f64>()
                    - 6.0;
                1.0 + sigma * z
            };
            let baseline: Vec<f64> = base
                .iter()
                .enumerate()
                .map(|(i, b)| b * jitter(0, i))
                .collect();
            for call in 1..=12 {
                let y: Vec<f64> = base
                    .iter()
                    .enumerate()
                    .map(|(i, b)| b * jitter(call, i))
                    .collect();
                estimate.observe(&y, &baseline);
            }
            let e = estimate.relative();
            assert!(
                e > sigma / 1.5 && e < sigma * 1.5,
                "sigma {sigma}: estimated {e}"
            );
            assert!(estimate.tolerance() >= TOLERANCE_FACTOR * e);
        }
        // One repeat only: the first level, pooled over the outputs.
        let mut estimate = NoiseEstimate::default();
        estimate.observe(&[1.0 + 2e-13, 2.0 - 4e-13], &[1.0, 2.0]);
        let e = estimate.relative();
        assert!(e > 1e-13 && e < 2e-13, "{e}");
        // A trend (each value a fixed step above the last, exactly) has differences of one sign.
        let trend: Vec<f64> = (0..REPEATS)
            .map(|k| 1.0 + k as f64 * 2f64.powi(-40))
            .collect();
        assert_eq!(ecnoise(&[&trend]), None);
        assert_eq!(NoiseEstimate::default().relative(), 0.0);
    }
}
