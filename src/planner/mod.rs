//! Planners decide which inputs to probe next. They never call the black box.
//!
//! A planner has an ask/tell shape: [`Planner::ask`] hands out a *step*, a batch of independent
//! probes; [`Planner::tell`] takes the outputs of one probe of that step, in any order; when
//! every probe of the step is told, the next `ask` plans from what was learned. A driver (serial
//! today; threads, processes or MPI ranks later) runs the probes and needs nothing else from the
//! planner. [`Planner::finish`] may be called at any time: whatever is not resolved by then
//! (the budget ran out) is reported as a possible dependency, never dropped.
//!
//! Every planner reads outputs through [`Probe::observe`], so they agree on what a probe proves.
//!
//! * [`chunked::Chunked`]: the paper's one-hot method (k = 1) and its chunked variant.
//! * [`refine::Refine`]: payload-tagged, coarse-to-fine over contiguous blocks.

pub mod chunked;
mod parked;
pub mod refine;

use crate::error::Result;
use crate::pattern::{Pattern, PatternBuilder};
use crate::probe::Probe;

/// A tracing strategy with the ask/tell shape (see the module docs). `Send`: the run loop may
/// tell outputs on another thread than the one that asked (`crate::driver::run`).
pub trait Planner: Send {
    /// The probes of the next step; empty when the trace is complete. Called once after
    /// construction, then only after every probe of the previous step was told.
    fn ask(&mut self) -> Result<Vec<Probe>>;

    /// The outputs `y` (m values) of probe `k` of the current step, which is `probe`, and the
    /// rows verification flagged for it (`perturbed`, increasing: unchanged in `y` but changed
    /// by a finite step on the probe's inputs; see [`crate::probe::Hit::Perturbed`]). Returns
    /// how many tags came back through single precision.
    fn tell(&mut self, k: usize, probe: &Probe, y: &[f64], perturbed: &[u32]) -> Result<usize>;

    /// Whether the outputs `y` of probe `k` (not told yet) prove a zero that the planner would
    /// use: some output unchanged where the probe tests one of the row's unknown inputs. Only
    /// such probes need verification; a probe every row it tests came out changed from proves
    /// no zero. The default, true, verifies every probe.
    fn claims(&self, _k: usize, _probe: &Probe, _y: &[f64]) -> bool {
        true
    }

    /// The pattern of what is known: proven dependencies, plus every entry still unresolved
    /// (kind [`crate::EntryKind::Unresolved`]). `builder` already knows the non-finite rows.
    fn finish(self: Box<Self>, builder: PatternBuilder) -> Result<Pattern>;
}
