//! Failure-tolerant probing: a NaN probe whose evaluation fails is split and tried again.
//!
//! Legacy codes fail on NaN: they read an array at an index that comparisons never set, or
//! check their inputs and return an error code, or hang. When the evaluation of a NaN request
//! fails in a way that may come from its inputs (a nonzero code, a crash, an `exit()`, a
//! timeout: [`crate::driver::Failure::input_dependent`]), the session does not stop: it splits
//! the probe's inputs in two halves and asks for each with its tags, down to single inputs. An
//! input whose NaN alone makes f fail is *NaN-intolerant*: its dependencies are found by finite
//! perturbation at [`PERTURBATION_POINTS`] points (steps of random size, up and down), reported
//! as [`crate::EntryKind::Perturbation`], and the input is listed in
//! [`crate::TraceReport::failed_columns`].
//!
//! The parts' outputs are merged into what the failed request would have told, so the planner
//! never knows: an output is unchanged if it is unchanged in every part, changed (with a part's
//! NaN, which may name its input) if it changed in any, and marked as found by perturbation if a
//! perturbation of a NaN-intolerant input changed it. Each reading is sound for the whole probe:
//! a part's named tag is one of the probe's inputs, and a change in a part is a change caused
//! by some input of the probe.
//!
//! Once an input is known to be NaN-intolerant, later probes holding it are not evaluated as
//! they are: the session asks for the probe without it and adds the rows its perturbations
//! changed. Cost: the first probe holding k NaN-intolerant inputs (of s) takes at most about
//! `2 k log2(s / k) + 2 k` failed or split evaluations, and `3 k` perturbations in all; later
//! probes cost nothing more. A failure of the
//! baseline, of a verification evaluation or of a perturbation (finite inputs) stays an error,
//! as does a broken contract (an unwritten output, a write past `y[m-1]`, a changed input).

use crate::probe::Probe;
use std::collections::HashMap;

/// Finite perturbations of a NaN-intolerant input: up, down, and up by a larger step.
pub const PERTURBATION_POINTS: usize = 3;

/// A request made because another failed: a half of a failed probe (with tags), or a finite
/// perturbation of a NaN-intolerant input.
pub(crate) struct Part {
    /// The inputs it changes.
    pub(crate) probe: Probe,
    /// With tags (`None`), or perturbation number `Some(p)` of its single input.
    pub(crate) perturbation: Option<usize>,
    /// The id of the failed request it stands in for.
    pub(crate) parent: usize,
}

/// What the parts of one failed request have told so far.
pub(crate) struct Merge {
    /// Parts not told yet.
    pub(crate) waiting: usize,
    /// Changed outputs so far, by row.
    pub(crate) changed: HashMap<u32, f64>,
    /// Rows a perturbation changed.
    pub(crate) perturbed: Vec<u32>,
    /// For the perturbations of a NaN-intolerant input: that input.
    pub(crate) column: Option<u32>,
}

impl Merge {
    pub(crate) fn new(waiting: usize) -> Self {
        Merge {
            waiting,
            changed: HashMap::new(),
            perturbed: Vec::new(),
            column: None,
        }
    }

    /// Takes in a part told with tags: its outputs that differ from `baseline`, preferring a NaN
    /// (which may name an input) over a finite change. With `anonymous`, NaNs lose their
    /// payload (a part's ids are its own when ids are per probe, so they cannot name the
    /// failed probe's inputs).
    pub(crate) fn take_tagged(
        &mut self,
        y: &[f64],
        baseline: &[f64],
        perturbed: &[u32],
        anonymous: bool,
    ) {
        for (i, (&v, &b)) in y.iter().zip(baseline).enumerate() {
            if v.to_bits() == b.to_bits() {
                continue;
            }
            let v = if anonymous && v.is_nan() { f64::NAN } else { v };
            let slot = self.changed.entry(i as u32).or_insert(v);
            if v.is_nan() && !slot.is_nan() {
                *slot = v;
            }
        }
        self.perturbed.extend_from_slice(perturbed);
    }

    /// The outputs the failed request stands for: the baseline with the changes, and the rows
    /// found by perturbation (sorted, distinct).
    pub(crate) fn outputs(mut self, baseline: &[f64]) -> (Vec<f64>, Vec<u32>) {
        let mut y = baseline.to_vec();
        for (&i, &v) in &self.changed {
            y[i as usize] = v;
        }
        self.perturbed.sort_unstable();
        self.perturbed.dedup();
        (y, self.perturbed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_outputs_keep_every_change_and_prefer_nans() {
        let base = [1.0, 2.0, 3.0];
        let mut m = Merge::new(2);
        m.take_tagged(&[1.0, 5.0, 3.0], &base, &[], false);
        m.take_tagged(&[1.0, f64::NAN, 3.0], &base, &[2], false);
        let (y, p) = m.outputs(&base);
        assert_eq!(y[0], 1.0);
        assert!(
            y[1].is_nan(),
            "a NaN (which may name an input) wins over a finite change"
        );
        assert_eq!(y[2], 3.0);
        assert_eq!(p, [2]);
    }
}
