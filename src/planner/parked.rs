//! Parked rows of the payload planner: rows whose candidate blocks follow from their known
//! dependencies, so that they are not stored.
//!
//! # Why
//!
//! On a banded pattern every row learns its few dependencies within the first levels; from then
//! on, at each level, its candidates are the blocks holding its dependencies (Q blocks: never
//! testable, split again) and their siblings (P blocks: tested, unchanged, dropped). Stored
//! per row, those candidates are written, split, listed and marked at each of the
//! `log2 n` levels: most of the planner's time at n = 10^6. Yet they are a function of the
//! dependencies alone.
//!
//! # The invariant
//!
//! A row is *parked* at level `s` when its candidate blocks are exactly the children (at `s`)
//! of the blocks one level up that hold one of its known dependencies, minus the children made
//! of known dependencies only ("one level up" is the level the last split came from: two or
//! four times wider, `refine.rs`'s four-way split). [`for_each_block`] lists them (with the
//! children made of dependencies only, which the coloring also needs, as Q blocks); the
//! planner stores no candidate entry for the row.
//!
//! A row becomes parked when a step ends with every surviving candidate holding a dependency
//! and every block holding a dependency (with an unknown column) surviving: then splitting the
//! survivors gives exactly the children of its dependencies' blocks. It stays parked through
//! a step in which each of its P blocks came out unchanged: the P blocks are dropped, the Q
//! blocks split, and the invariant holds one level down, with no work for the row at all. A
//! new dependency in one of its Q blocks (several NaNs reach the row, one tag comes back a
//! probe) leaves its blocks as they were: the row stays parked with it, unless it now has as
//! many dependencies as a dense row. Nor does a new dependency whose tag came back through the
//! row's only P block in the probe ([`lone_p_block`]): that block now holds a dependency, as
//! the invariant asks of its blocks one level up, and the row's other P blocks were tested in
//! other probes; the row stays parked with it (the hit is [`KEPT`]). A tridiagonal row under
//! the smallest NaN winning learns its dependencies that way, one at the level where a block
//! boundary cuts its columns apart: the fine levels wrote back up to half of the rows at
//! n = 10^6, to park them again as they were split; none now. A step in which a parked row
//! changed in any other way in a probe holding one of its P blocks, or brought a dependency
//! outside its blocks, is recorded as a
//! `(row, probe)` pair ([`Parked::hits`]); at the end of the step such a row is written back
//! as stored candidates (with the outcome words the stored row would have had) and goes
//! through the ordinary split. Every row is stored again before the last level (where every
//! conflict is hard and a change is a proof: a row the step showed nothing new of stores its
//! dependencies' blocks' other columns directly), and written back before one probe per column
//! and at `finish`.
//!
//! Rows with [`super::refine`]'s dense-row count of dependencies or more are never parked:
//! recognising a dense row reads its stored candidates.
//!
//! Parking pays when parked rows stay parked: writing a row back costs a few times what
//! storing it for a level does. Rows that learn one dependency a probe for many levels (a band
//! of 11, 10 x 10 blocks, a tridiagonal row whose NaNs race) stay parked as long as the new
//! ones fall in their Q blocks. Where most parked rows come back anyway, the second step that
//! writes back more than half of them (when they are at least an eighth of the rows) turns
//! parking off for the rest of the trace ([`Parked::enabled`]), and the split makes the parking
//! test only while parking is on. The first such step is forgiven: on a 2-D stencil written
//! with each row's own input first, most rows came back once, at the level where the blocks
//! get narrower than a grid line and the neighbours a line away fall outside the row's block,
//! and parked again as they were split; a band whose rows keep learning comes back at the next
//! step too. The stencil's return came from the coloring: that level put the block of one
//! neighbour a line away and the empty sibling of the other's in one probe, for most parked
//! rows. A level that would do that while rows learn is now colored again with the parked
//! rows' P blocks apart (`refine/level.rs`, `APART_HIT_RATE`): the 2-D Bratu residual at
//! n = 10^6 writes back none there (950624 rows before). (Under a random NaN winning the same
//! stencil's rows stay parked anyway: their neighbours' tags come back through lone P
//! blocks.)
//!
//! # Runs
//!
//! Two consecutive parked rows whose dependencies, as many, agree above bit `b` (the XOR of
//! each pair below `2^b`) have the same blocks, and so the same list, at every level `s >= b`:
//! each parked row keeps that `b` against the row before as a one-byte code
//! ([`Parked::rows`], made again only for rows the step wrote back or parked, and their
//! successors). Listing a level then takes a run of rows whose codes are at most `s` at once:
//! one more weight for the list of the row before the run, the rows read as bytes, not as
//! dependencies. On a banded pattern a level's runs are about 1.5 per block, so the listing
//! costs O(blocks) instead of O(m) at the coarse levels. The split passes over parked rows
//! with nothing new as a stretch (their candidate pointers all equal). The tells still look at
//! each changed row: whether the probe held one of its P blocks comes from the run's probe
//! set ([`Parked::spans`]).

use crate::error::{filled, push, Result};

/// What a block listed by [`for_each_block`] is for the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Holds no known dependency: a probeable candidate.
    P,
    /// Holds a known dependency and an unknown column: a candidate that cannot be tested.
    Q,
    /// Holds known dependencies only: not a candidate, but a Q block for the coloring.
    Full,
}

/// Calls `f(block, kind)`, in increasing block order, for each child at level `s` (blocks of
/// `2^s` columns of `n`) of each block at level `s + bits` holding one of `deps` (sorted,
/// distinct): the blocks of a row parked at level `s`.
#[inline]
pub(super) fn for_each_block(
    deps: &[u32],
    s: u32,
    bits: u32,
    n: usize,
    mut f: impl FnMut(u32, Kind),
) {
    let n = n as u64;
    let mut d = 0;
    while d < deps.len() {
        let first = u64::from(deps[d] >> (s + bits)) << bits;
        for child in first..first + (1 << bits) {
            let start = child << s;
            if start >= n {
                break;
            }
            let end = ((child + 1) << s).min(n);
            let from = d;
            while d < deps.len() && u64::from(deps[d]) < end {
                d += 1;
            }
            let kind = match (d - from) as u64 {
                0 => Kind::P,
                k if k < end - start => Kind::Q,
                _ => Kind::Full,
            };
            f(child as u32, kind);
        }
    }
}

/// In a hit's probe word ([`Parked::hits`]): the probe brought the row a new dependency
/// through its only P block there ([`lone_p_block`]), and showed nothing else of it. A row
/// whose hits all carry it stays parked; one written back takes the probe without it.
pub(super) const KEPT: u32 = 1 << 31;

/// [`Parked::rows`]: the row is not parked.
pub(super) const STORED: u8 = u8::MAX;
/// [`Parked::rows`]: the row is parked, and the row before is not, or has another count of
/// dependencies.
pub(super) const ALONE: u8 = u8::MAX - 1;

/// The parked rows and what the current step showed of them (module docs).
pub(super) struct Parked {
    /// Per row: [`STORED`], [`ALONE`], or, for a parked row after a parked row with as many
    /// dependencies, the bit length of the largest XOR of their dependencies (0 to 32): the two
    /// rows' dependencies share blocks, and so the rows share a list, at every level `s` at
    /// least that ([`shared_from`]). A run of such rows is listed at once.
    pub rows: Vec<u8>,
    /// How many rows are parked.
    pub count: usize,
    /// How many dependencies the parked rows have in all.
    pub deps: usize,
    /// Whether rows may be parked: off for the rest of the trace once a second step wrote back
    /// more than half of at least an eighth of the rows (parking then costs more than it
    /// saves).
    pub enabled: bool,
    /// How many steps wrote back more than half of at least an eighth of the rows.
    pub mass_returns: u8,
    /// How many parked rows the last split wrote back.
    pub returned: usize,
    /// `(row, probe)`: a parked row changed in a probe holding one of its P blocks, or the probe
    /// brought it a new dependency; the probe marked [`KEPT`] when the new dependency came
    /// through the row's only P block in it. Unordered until [`Parked::sort_hits`].
    pub hits: Vec<(u32, u32)>,
    /// The colors of the current level's blocks (`u32::MAX`: not probed); empty when no row
    /// is parked (unless the next level is the last) or the level was not colored.
    pub colors: Vec<u32>,
    /// The P blocks of parked rows listed at the current level (all tested once the step is
    /// told: parked rows never hold a block out of its probe).
    pub listed_p: usize,
    /// The widest a parked row's dependencies have spread (last minus first) so far in the
    /// trace: the planner splits wide only into blocks wider than this (noted by the split,
    /// `refine/split.rs`).
    pub span: u32,
    /// Runs of consecutive parked rows with the same list at the current level, in row
    /// order: `(first row, end row, x)`, x being the list's ordinal while the level is
    /// planned, then the probes holding one of its P blocks as a bit set
    /// ([`Parked::set_masks`]). Empty when a probe number is 64 or more: then the tells
    /// look at the row's blocks ([`tests_in`]).
    pub spans: Vec<(u32, u32, u64)>,
}

impl Parked {
    /// No row parked, for `m` rows.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the m flags do not fit.
    pub fn new(m: usize) -> Result<Self> {
        Ok(Parked {
            rows: filled(STORED, m, "parked rows")?,
            count: 0,
            deps: 0,
            enabled: true,
            mass_returns: 0,
            returned: 0,
            hits: Vec::new(),
            colors: Vec::new(),
            listed_p: 0,
            span: 0,
            spans: Vec::new(),
        })
    }

    /// Whether row `i` is parked.
    #[inline]
    pub fn is_parked(&self, i: usize) -> bool {
        self.rows[i] != STORED
    }

    /// Turns each span's list ordinal into the set of probes holding one of its P blocks:
    /// `mask_of(r)` gives list r's, as bits; `None` when one is probe 64 or more, which leaves
    /// no spans.
    pub fn set_masks(&mut self, mask_of: impl Fn(usize) -> Option<u64>) {
        for span in &mut self.spans {
            match mask_of(span.2 as usize) {
                Some(mask) => span.2 = mask,
                None => {
                    self.spans = Vec::new();
                    return;
                }
            }
        }
    }

    /// Sorts the hits by row, then probe, each once.
    pub fn sort_hits(&mut self) {
        // Stable: it merges the tells' runs (rows increasing in each).
        self.hits.sort();
        self.hits.dedup();
    }
}

/// For a parked row with dependencies `deps` after a parked row with `before`: the level from
/// which on the two have the same blocks, each with as many dependencies, and so the same
/// list: the bit length of the largest XOR of their dependencies, or [`ALONE`] when their
/// counts differ.
#[inline]
pub(super) fn shared_from(deps: &[u32], before: &[u32]) -> u8 {
    if deps.len() != before.len() {
        return ALONE;
    }
    let diff = deps.iter().zip(before).fold(0, |acc, (x, y)| acc | (x ^ y));
    (u32::BITS - diff.leading_zeros()) as u8
}

/// Counts the `w` parked rows from `i` on (listed after every row before them) in the span
/// of list `list` ([`Parked::spans`]).
///
/// # Errors
/// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory).
#[inline]
pub(super) fn extend_span(
    spans: &mut Vec<(u32, u32, u64)>,
    i: u32,
    w: u32,
    list: u32,
) -> Result<()> {
    match spans.last_mut() {
        Some(span) if span.1 == i && span.2 == u64::from(list) => span.1 += w,
        _ => push(spans, (i, i + w, u64::from(list)), "runs of parked rows")?,
    }
    Ok(())
}

/// Whether a row parked at level `s` with dependencies `deps` holds a P block that `colors`
/// (the level's block colors, `u32::MAX` or missing: not probed) puts in probe `k`.
#[inline]
pub(super) fn tests_in(colors: &[u32], deps: &[u32], s: u32, bits: u32, n: usize, k: u32) -> bool {
    let mut found = false;
    for_each_block(deps, s, bits, n, |b, kind| {
        found |= kind == Kind::P && colors.get(b as usize) == Some(&k);
    });
    found
}

/// Whether a tag of column `j`, new to a parked row with dependencies `deps`, came from probe
/// `k` through the only P block of the row in it (the block holding `j`): that block now holds
/// a dependency, the row's other P blocks in the step were tested apart, and the row stays
/// parked with `j` as with a new dependency in a Q block ([`KEPT`]). `colors`: the level's
/// block colors.
pub(super) fn lone_p_block(
    colors: &[u32],
    deps: &[u32],
    j: u32,
    (s, bits, n): (u32, u32, usize),
    k: u32,
) -> bool {
    let block = j >> s;
    let (mut holds_j, mut others) = (false, false);
    for_each_block(deps, s, bits, n, |b, kind| {
        if kind == Kind::P {
            holds_j |= b == block;
            others |= b != block && colors.get(b as usize) == Some(&k);
        }
    });
    holds_j && !others
}

/// Whether parked row `i` holds a P block in probe `k`, from [`Parked::spans`] (`cursor`: where the
/// last call left off, or a place at or before row `i`'s: the rows of one pass come in
/// increasing order, and it goes forward only). A row out of that order (a perturbed one,
/// told before the pass): [`span_tests_at`].
#[inline]
pub(super) fn span_tests(spans: &[(u32, u32, u64)], i: u32, k: u32, cursor: &mut usize) -> bool {
    debug_assert!(*cursor == 0 || spans.get(*cursor - 1).is_none_or(|s| s.1 <= i));
    while *cursor < spans.len() && spans[*cursor].1 <= i {
        *cursor += 1;
    }
    spans
        .get(*cursor)
        .is_some_and(|s| s.0 <= i && k < 64 && s.2 >> k & 1 != 0)
}

/// [`span_tests`] for a row anywhere: the span found by bisection.
pub(super) fn span_tests_at(spans: &[(u32, u32, u64)], i: u32, k: u32) -> bool {
    span_tests(spans, i, k, &mut spans.partition_point(|s| s.1 <= i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(deps: &[u32], s: u32, n: usize) -> Vec<(u32, Kind)> {
        let mut v = Vec::new();
        for_each_block(deps, s, 1, n, |b, k| v.push((b, k)));
        v
    }

    #[test]
    fn children_of_the_dependencies_blocks() {
        // Blocks of 4 at level 2; parents of 8. Deps 9, 10, 11 in block 2 (8..12); parent 1
        // (8..16) has children 2 and 3: 2 is Q, 3 is P.
        assert_eq!(blocks(&[9, 10, 11], 2, 100), [(2, Kind::Q), (3, Kind::P)]);
        // Deps straddling two parents: 7 (parent 0, block 1) and 8 (parent 1, block 2).
        assert_eq!(
            blocks(&[7, 8], 2, 100),
            [(0, Kind::P), (1, Kind::Q), (2, Kind::Q), (3, Kind::P)]
        );
        // Blocks of 1 made of a dependency are Full.
        assert_eq!(blocks(&[4, 5], 0, 100), [(4, Kind::Full), (5, Kind::Full)]);
        assert_eq!(blocks(&[4], 0, 100), [(4, Kind::Full), (5, Kind::P)]);
        // A child past n is not listed; a short last block counts its own columns.
        assert_eq!(blocks(&[8], 2, 10), [(2, Kind::Q)]);
        assert_eq!(blocks(&[8, 9], 2, 10), [(2, Kind::Full)]);
    }
}
