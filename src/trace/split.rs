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

use crate::error::{Error, ErrorKind, Result};
use crate::probe::Probe;
use crate::trace::failure::Failure;
use crate::trace::session::{RequestKind, TraceSession};
use std::borrow::Cow;
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

/// The session's side of failure-tolerant probing: failed requests, their parts, and inputs
/// known to be NaN-intolerant.
impl TraceSession {
    /// A part of a failed request told its outputs.
    pub(super) fn tell_part(&mut self, id: usize, y: &[f64]) -> Result<()> {
        let part = &self.parts[id - self.static_requests];
        let parent = part.parent;
        if part.perturbation.is_some() {
            let rows: Vec<u32> = (0..self.m)
                .filter(|&i| self.baseline[i].is_finite() && self.changed(self.baseline[i], y[i]))
                .map(|i| i as u32)
                .collect();
            let baseline = self.baseline.clone();
            return self.merge_into(parent, &baseline, &rows);
        }
        self.merge_into(parent, y, &[])
    }

    /// Merges a part's outputs into the failed request `parent` it stands in for; when all its
    /// parts are in, the failed request is answered (and so on up).
    fn merge_into(&mut self, parent: usize, y: &[f64], perturbed: &[u32]) -> Result<()> {
        let anonymous = self.n > crate::codec::MAX_ID as usize;
        let merge = self
            .merges
            .get_mut(&parent)
            .ok_or_else(|| Error::new(ErrorKind::Internal, "a part without its failed request"))?;
        merge.take_tagged(y, &self.baseline, perturbed, anonymous);
        merge.waiting -= 1;
        if merge.waiting > 0 {
            return Ok(());
        }
        let merge = self.merges.remove(&parent).expect("present");
        let column = merge.column;
        let (y, perturbed) = merge.outputs(&self.baseline);
        if let Some(c) = column {
            self.intolerant.insert(c, perturbed.clone());
        }
        if parent < self.static_requests {
            let k = parent / self.per_probe();
            return self.nan_told(k, Cow::Owned(y), perturbed);
        }
        let grandparent = self.parts[parent - self.static_requests].parent;
        self.merge_into(grandparent, &y, &perturbed)
    }

    /// The NaN requests of a new step that hold known NaN-intolerant inputs are not evaluated
    /// as they are: each becomes a part without those inputs, merged with the rows their
    /// perturbations changed ([`crate::trace::split`]).
    pub(super) fn set_aside_intolerant(&mut self) -> Result<()> {
        if self.intolerant.is_empty() {
            return Ok(());
        }
        let per = self.per_probe();
        for k in 0..self.probes.len() {
            let cols = self.probes[k].cols();
            if !cols.iter().any(|c| self.intolerant.contains_key(c)) {
                continue;
            }
            let (bad, rest): (Vec<u32>, Vec<u32>) =
                cols.iter().partition(|c| self.intolerant.contains_key(c));
            let id = k * per;
            self.told.set(id, true);
            let mut merge = Merge::new(usize::from(!rest.is_empty()));
            for c in &bad {
                merge.perturbed.extend_from_slice(&self.intolerant[c]);
            }
            if rest.is_empty() {
                let (y, perturbed) = merge.outputs(&self.baseline);
                self.nan_told(k, Cow::Owned(y), perturbed)?;
                continue;
            }
            self.parts.push(Part {
                probe: Probe::new(rest, self.n),
                perturbation: None,
                parent: id,
            });
            self.merges.insert(id, merge);
        }
        self.told
            .resize(self.static_requests + self.parts.len(), false);
        Ok(())
    }

    /// Whether a failed evaluation of request `id` is one the session works around: a NaN
    /// request failing in a way its inputs may cause ([`crate::trace::split`]).
    pub fn recoverable(&self, id: usize, failure: &Failure) -> bool {
        self.outstanding(id)
            && self.request(id).kind == RequestKind::Nan
            && failure.input_dependent()
    }

    /// The evaluation of request `id` failed. A NaN request failing in a way its inputs may
    /// cause is split into parts (halves of its inputs, or perturbations of a single input),
    /// which the next [`TraceSession::ask`] hands out; any other failure is an error naming the
    /// request ([`ErrorKind::BlackBox`]). An id that is not outstanding, or a return code of 0,
    /// is an [`ErrorKind::InvalidArgument`]. Call in increasing `id` order for reproducible
    /// request ids (journals).
    pub fn fail(&mut self, id: usize, failure: &Failure) -> Result<()> {
        if !self.outstanding(id) {
            return Err(Error::invalid(format!(
                "request {id} is not outstanding in this step"
            )));
        }
        if *failure == Failure::Returned(0) {
            return Err(Error::invalid("code is 0: a failure has a nonzero code"));
        }
        if !self.recoverable(id, failure) {
            return Err(Error::new(
                ErrorKind::BlackBox,
                format!("the black box {failure} on {}", self.describe(id)),
            ));
        }
        self.told.set(id, true);
        self.report.evaluations += 1;
        self.report.failed_evaluations += 1;
        let cols = self.request(id).probe.cols().to_vec();
        let n = self.n;
        let before = self.parts.len();
        if cols.len() > 1 {
            let (a, b) = cols.split_at(cols.len() / 2);
            for half in [a, b] {
                self.parts.push(Part {
                    probe: Probe::new(half.to_vec(), n),
                    perturbation: None,
                    parent: id,
                });
            }
        } else {
            self.failed_columns.push(cols[0]);
            for p in 0..PERTURBATION_POINTS {
                self.parts.push(Part {
                    probe: Probe::new(cols.clone(), n),
                    perturbation: Some(p),
                    parent: id,
                });
            }
        }
        let mut merge = Merge::new(self.parts.len() - before);
        if cols.len() == 1 {
            merge.column = Some(cols[0]);
        }
        self.merges.insert(id, merge);
        self.told
            .resize(self.static_requests + self.parts.len(), false);
        Ok(())
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
