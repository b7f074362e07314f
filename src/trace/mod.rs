//! A trace, without the black box: its options, the ask/tell session that plans the
//! evaluations and reads their outputs, the points it visits, and the journal that keeps its
//! evaluations. Nothing here calls f; [`crate::driver`] does.
//!
//! * [`options`]: [`TraceOptions`], checked once by [`TraceOptions::validate`].
//! * [`session`]: [`TraceSession`], the baseline, a planner, verification, the budget.
//! * [`points`]: the caller's points and those sampled around them.
//! * [`check`]: the check of a traced pattern (verification at a fraction of a trace's cost).
//! * [`journal`]: evaluations on disk, replayed by the session.
//! * [`noise`]: outputs that change although nothing reached them.
//! * [`split`]: failure-tolerant probing (a failed NaN probe split down to single inputs).

pub mod check;
pub mod failure;
pub mod journal;
pub mod noise;
pub mod options;
pub mod points;
pub mod session;
pub mod split;

pub use options::{Noise, NonFiniteBaseline, Strategy, TraceOptions};
pub use session::{Request, RequestKind, TraceSession};
