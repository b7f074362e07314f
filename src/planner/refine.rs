//! Payload-tagged tracing, coarse to fine over contiguous blocks of inputs (the default).
//!
//! # State
//!
//! For every traceable row `i` the planner keeps the trinary knowledge of NaN-propagation
//! tracing, compressed:
//! * `deps(i)`: columns proven to reach `y_i` (a decoded tag, or a change when `i` had a single
//!   block in the probe at the last level);
//! * `cand(i)`: *candidate blocks* at the current level: aligned blocks of `2^s` adjacent
//!   columns in which every column not in `deps(i)` is still unknown for row `i`;
//! * every other column is proven zero for row `i`.
//!
//! # What a probe proves
//!
//! A candidate block `B` of row `i` is *probeable* (P) when it holds no known dependency of
//! `i`; a block holding one is a Q block of row `i`. A probe holding a Q block of row `i` turns
//! `y_i` NaN whatever else it holds, so it proves nothing about row `i`'s other blocks
//! (shadowing). For a probeable `B` in probe `S` with no Q block of row `i`:
//! * `y_i` unchanged (bit for bit): every column of every P block of row `i` in `S` is zero;
//! * `y_i` carries the tag of column `j`: `(i, j)` is proven (a decoded tag is a proof for any
//!   row, whatever else the probe holds); the blocks stay candidates, minus `j`;
//! * anything else (unknown NaN, Inf, a different number): the blocks stay candidates.
//!
//! # A step
//!
//! Each step colors the probed blocks (those probeable for some row); each color class is one
//! probe, and the classes form one batch that a parallel driver can run at once. Conflicts:
//! * a P block and a Q block of the same row in one probe waste that P block for the row:
//!   a *hard* conflict;
//! * two P blocks of the same row may share a probe (an unchanged output proves both zero;
//!   a change keeps both): a *soft* conflict, counted and spread, never forbidden at coarse
//!   levels;
//! * at the last level (single columns) every conflict is hard: a proper partial distance-2
//!   coloring of rows x columns, so each tested candidate sits alone among its row's columns
//!   and a change proves it, an unchanged output disproves it.
//!
//! Greedy coloring in natural block order; a block takes the color with the fewest (hard, soft)
//! conflicts and opens a new color only on a hard conflict. At coarse levels the palette is
//! capped at `2 q + 2` (q = most Q blocks of one row): patterns without locality (random
//! sparse) make the hard-conflict graph nearly complete at every coarse level, and a capped,
//! conflict-minimizing coloring still proves most zeros of every row, since a row is blocked only
//! in the few colors holding its dependencies. After the step every surviving candidate block
//! is split in two, halves without an unknown column are dropped, and the next level starts.
//!
//! *Blind* rows, with no known dependency among their blocks (no tag came back: a black box
//! that makes its own NaNs and drops the payloads), have no Q block, so no hard conflict would
//! ever separate their blocks: every block would share one probe, every row would keep every
//! block, and the candidates would grow to m x n. For them a soft conflict also opens a new
//! color, up to the cap (4 when no row has a known dependency): group testing, which halves a
//! banded row's candidates at every level (tridiagonal n = 2 x 10^4 without payloads: 20016
//! evaluations before, 59 now). Rows with a tag never count as blind, so traces with payloads
//! are unchanged.
//!
//! The coloring is the hot loop on patterns without locality (each row's blocks are looked at
//! once per block of the row). Two things keep it cheap: rows with the same list of blocks as
//! the row before (a band's rows inside one block) share one list, weighted by their count,
//! so the counts and the coloring are the ones every row apart would give; and each row keeps
//! the colors its blocks took so far in one short contiguous list (the block list it no longer
//! needs once transposed), with its bounds and weight in one entry, and the entries and lists
//! of the rows a few ahead are prefetched, so coloring a block reads one list per row instead of
//! one scattered color per block of the row.
//!
//! # Termination and cost
//!
//! Levels run from one block of all n columns down to single columns: at most
//! `ceil(log2 n) + 1` steps, and the last resolves every candidate, so the planner always ends
//! with no unresolved entry. On a banded pattern a row's blocks at any level are the one or two
//! blocks around its band plus their siblings; the hard conflicts form a chain, and a step takes
//! 2 probes at coarse levels and about `w + 1` at the last: tridiagonal n = 10^6 in 44
//! evaluations. Random sparse patterns with d entries per row cost about `2 d + 2` probes per
//! level (n = 10^4, d = 5: 175).
//!
//! # Dense rows
//!
//! Each probe proves at most one dependency of a row (its tag), so a row with d dependencies
//! costs at least d probes to resolve entry by entry, and a dense row costs as much as one-hot
//! tracing. Under a cap (below), a row is *recognised dense*, and resolving it stops, when it
//! has at least 8 known dependencies and either
//! * at a level of at least 16 blocks, 3/4 of its blocks hold a known dependency or changed,
//!   and its dependency lower bound (known ones, plus the probes in which it changed with no
//!   known one) reaches 1/64 of the probes the cap leaves; or
//! * before one of the last two levels, its unknown columns (about one probe each there)
//!   would take a quarter of what the cap leaves.
//!
//! Its unknown columns are then kept as possible dependencies of kind [`EntryKind::Assumed`],
//! and it leaves the coloring. A row whose known dependencies sit in 3/4 of at least 8 of its
//! blocks (dense at this scale) is left out of the coloring at coarse levels even before that:
//! it would make every block conflict with every other; its blocks are tested only in probes
//! holding none of its known dependencies. Without a cap (`usize::MAX`) no row is recognised
//! dense.
//!
//! # The cap, and falling back to one probe per column
//!
//! The planner is given a cap on the probes it may ask in all: by default
//! [`Refine::allowance`] (`n + n / 8 + min(16, n / 4)`), or what the caller's budget leaves.
//! Refining does not pay on dense patterns (each probe proves at most one
//! dependency per row). The planner finishes with one probe per still-unknown column when:
//! * a row already has known dependencies in at least 3/4 of at least 8 probed blocks, or the
//!   coloring compresses nothing while nearly all tested blocks changed (dense at this scale);
//! * coarse steps would spend more than `U / 8 + min(16, n / 4)` probes in all, U being the
//!   columns still unknown for some row, or the step would not fit under the cap;
//! * the last level's coloring would need at least as many probes as there are unknown columns
//!   (or more than the cap leaves), or the coloring work (the sum over rows of the square of
//!   their block count) is large.
//!
//! Under a cap, a trace of at most `2 ceil(log2 n) + 3` columns (n <= 11) starts with one probe
//! per column: refining cannot do better there.
//!
//! When the unknown columns are more than the cap leaves, the columns unknown for the most rows
//! get their probe and the others stay unresolved (as [`EntryKind::Assumed`] under the default
//! cap, as [`EntryKind::Unresolved`] under a budget the caller set).
//!
//! # Memory and time
//!
//! The state is O(nnz + m) (candidates and dependencies, CSR; a candidate is its block and one
//! word holding the probe that tests it and what that probe showed) plus O(n) per step; one
//! step costs O(m + n + sum_i |K_i|^2), `K_i` being row `i`'s blocks, which is a small constant
//! per row on sparse patterns. Every level passes over every row (a banded row keeps its band's
//! block and that block's sibling at every level), and that per-row work, not the evaluations,
//! is most of the library time at n = 10^6 (`nanprop-bench --scale`).
//!
//! A row whose candidates are exactly the children of its dependencies' blocks (a banded row
//! from the first levels on) is *parked*: it stores no candidate, its block list is made from
//! its dependencies (a run of rows whose dependencies share blocks at this level is listed at
//! once), the tells look up whether one of its P blocks was in the probe in the runs of parked
//! rows with one list, and the split has nothing to do for it unless the step showed it
//! something new (`parked.rs`). The evaluations and the pattern are the ones of the stored
//! rows. Tridiagonal n = 10^6 keeps every row parked from the first split to the last level:
//! the whole trace takes 0.84x the time it took with every row stored, and 0.96x again with the
//! runs listed at once.

use super::parked::{
    for_each_block, shared_from, span_tests, tests_in, Kind, Parked, ALONE, STORED,
};
use super::Planner;
use crate::error::{collect, copied, filled, push, reserve, zero_bits, Error, Result};
use crate::pattern::{EntryKind, Pattern, PatternBuilder};
use crate::prefetch::prefetch;
use crate::probe::{Hit, Probe};
use bitvec::prelude::*;

const NONE: u32 = u32::MAX;

/// A candidate's word (`Refine::cand_probe`): the probe of the current step that tests it in
/// the low bits ([`UNTESTED`]: none), whether its row's output changed in that probe
/// ([`HIT`]), and whether that change was seen only by verification ([`PERT`]).
const HIT: u32 = 1 << 31;
const PERT: u32 = 1 << 30;
const PROBE: u32 = PERT - 1;
const UNTESTED: u32 = PROBE;

/// Each level splits a block into `2^BRANCH_BITS` blocks.
const BRANCH_BITS: u32 = 1;

/// Marks a block as a row's probeable candidate (P) in the block lists of a step.
const P_FLAG: u32 = 1 << 31;

/// A row holding at least this many blocks, and half of all blocks, is left out of a coarse
/// level's coloring (its square would dominate the coloring work).
const WIDE_ROW_BLOCKS: usize = 64;

/// The dense test looks at steps with at least this many blocks.
const MIN_BLOCKS_FOR_DENSE_TEST: usize = 8;
/// "Dense at this scale" (every block conflicts with every other and nearly all changed) is
/// judged at levels with at least this many blocks: at coarser ones a sparse pattern with a few
/// dozen entries per row looks dense too.
const MIN_BLOCKS_FOR_SCALE_TEST: usize = 32;

/// Coarse steps may spend at most `U / SPEND_DIVISOR + min(SPEND_SLACK, n / 4)` probes in all,
/// U being the columns still unknown for some row; past that the planner finishes with one
/// probe per column, so it never costs more than `n + n / SPEND_DIVISOR + SPEND_SLACK + 1`
/// evaluations.
const SPEND_DIVISOR: usize = 8;
const SPEND_SLACK: usize = 16;

/// A row is recognised dense when its dependency lower bound reaches
/// `max(DENSE_MIN, probes left / DENSE_DIVISOR)` (see the module docs).
const DENSE_MIN: usize = 8;
const DENSE_DIVISOR: usize = 64;
const DENSE_MIN_BLOCKS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Nothing asked yet.
    Start,
    /// Probing colored blocks of size `2^shift`.
    Refining,
    /// One probe per column of `onehot_cols`.
    OneHot,
    /// Everything resolved.
    Done,
}

/// The coarse-to-fine payload planner (see the module docs).
pub struct Refine {
    n: usize,
    m: usize,
    /// The baseline outputs (shared with the session that made the planner).
    baseline: std::sync::Arc<Vec<f64>>,
    mode: Mode,
    /// Block size is `1 << shift` at the current level.
    shift: u32,
    /// Known dependencies: CSR, sorted per row.
    dep_ptr: Vec<usize>,
    dep_idx: Vec<u32>,
    /// Dependencies found in the current step, merged into the CSR when it ends.
    new_deps: Vec<(u32, u32)>,
    /// The pairs the last merge added (sorted, distinct).
    merged: Vec<(u32, u32)>,
    /// Candidate blocks per row at the current level: CSR, sorted per row.
    cand_ptr: Vec<usize>,
    cand_idx: Vec<u32>,
    /// For each candidate entry: the probe of the current step that tests it, or `UNTESTED`,
    /// and what that probe showed (`HIT`, `PERT`).
    cand_probe: Vec<u32>,
    /// Dependencies proven only by verification (kind [`EntryKind::Perturbation`]).
    pert_deps: Vec<(u32, u32)>,
    /// Probes told so far.
    spent: usize,
    /// Most probes the planner may ask in all (`usize::MAX`: no cap).
    cap: usize,
    /// The kind of what the cap leaves unresolved.
    capped: EntryKind,
    /// Probes asked so far (told or not).
    asked: usize,
    /// Columns kept for rows recognised dense: `(row, start, end)` ranges of their unknown
    /// columns when they were recognised (known dependencies inside included).
    dense: Vec<(u32, u32, u32)>,
    /// Of the candidates tested in the last step, the fraction whose output changed (1.0 before
    /// any step): near 1 means the pattern is dense at that scale.
    last_hit_rate: f64,
    /// Which probes of the current step were told.
    told: Vec<bool>,
    /// In one-hot mode: the column of each probe, and which columns were told.
    onehot_cols: Vec<u32>,
    onehot_told: BitVec,
    /// Whether the one-hot probes cover every unknown column (the cap allowed them all).
    onehot_complete: bool,
    /// Rows whose candidates follow from their dependencies and are not stored (`parked.rs`).
    parked: Parked,
}

impl Refine {
    /// A planner for n inputs and the given baseline outputs (m = `baseline.len()`), asking at
    /// most `cap` probes in all (`usize::MAX`: no cap); what the cap leaves unresolved is
    /// reported as `capped` ([`EntryKind::Assumed`] under the default cap,
    /// [`EntryKind::Unresolved`] under a caller's budget). Rows whose baseline is not finite are
    /// not traced.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when its O(m) arrays do not fit.
    pub fn new(
        n: usize,
        baseline: impl Into<std::sync::Arc<Vec<f64>>>,
        cap: usize,
        capped: EntryKind,
    ) -> Result<Self> {
        let baseline = baseline.into();
        let m = baseline.len();
        // Level 0: one block of all n columns, a candidate of every traceable row.
        let shift = usize::BITS - (n.max(1) - 1).leading_zeros();
        let mut cand_ptr = filled(0usize, m + 1, "candidate pointers")?;
        let mut cand_idx = Vec::new();
        reserve(&mut cand_idx, m, "candidate blocks")?;
        for i in 0..m {
            if baseline[i].is_finite() {
                cand_idx.push(0u32);
            }
            cand_ptr[i + 1] = cand_idx.len();
        }
        Ok(Refine {
            n,
            m,
            baseline,
            mode: Mode::Start,
            shift,
            dep_ptr: filled(0, m + 1, "dependency pointers")?,
            dep_idx: Vec::new(),
            new_deps: Vec::new(),
            merged: Vec::new(),
            cand_probe: filled(UNTESTED, cand_idx.len(), "candidate probes")?,
            cand_ptr,
            cand_idx,
            pert_deps: Vec::new(),
            last_hit_rate: 1.0,
            spent: 0,
            cap,
            capped,
            asked: 0,
            dense: Vec::new(),

            told: Vec::new(),
            onehot_cols: Vec::new(),
            onehot_told: BitVec::new(),
            onehot_complete: true,
            parked: Parked::new(m)?,
        })
    }

    /// The default cap on probes for n columns: one-hot's n plus the coarse steps' allowance,
    /// `n + n / 8 + min(16, n / 4)`.
    pub fn allowance(n: usize) -> usize {
        n + n / SPEND_DIVISOR + SPEND_SLACK.min(n / 4)
    }

    fn deps(&self, i: usize) -> &[u32] {
        &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]]
    }

    fn block_range(&self, b: u32, shift: u32) -> (u32, u32) {
        let start = (b as u64) << shift;
        let end = ((b as u64 + 1) << shift).min(self.n as u64);
        (start as u32, end as u32)
    }

    /// Pushes onto `idx` the children of block `b` (at the current level) at level `s` that
    /// keep an unknown column: fewer known dependencies than columns. `deps` are the row's
    /// known dependencies from the cursor `d` on (sorted), and `d` moves past the block.
    #[inline]
    fn split_into(&self, b: u32, s: u32, deps: &[u32], d: &mut usize, idx: &mut Vec<u32>) {
        let bits = self.shift - s;
        for child in (b << bits)..((b + 1) << bits) {
            if (child as u64) << s >= self.n as u64 {
                break;
            }
            let (start, end) = self.block_range(child, s);
            while *d < deps.len() && deps[*d] < start {
                *d += 1;
            }
            let from = *d;
            while *d < deps.len() && deps[*d] < end {
                *d += 1;
            }
            if *d - from < (end - start) as usize {
                idx.push(child); // reserved by the caller for every block splitting
            }
        }
    }

    /// Whether the row with known dependencies `deps` and candidate blocks `blocks` (their
    /// words in `words`) is recognised dense at the end of this step (module docs), `s` being
    /// the next level and `(dense_at, leaf_dense_at)` the thresholds the cap leaves.
    /// `changed_in` is scratch.
    fn recognised_dense(
        &self,
        deps: &[u32],
        (blocks, words): (&[u32], &[u32]),
        s: u32,
        (dense_at, leaf_dense_at): (usize, usize),
        changed_in: &mut Vec<u32>,
    ) -> Result<bool> {
        // The row's dependency lower bound: its known ones, plus the probes in which it
        // changed with no known one (each holds one more); and its blocks that hold a known
        // dependency or changed, of all its blocks.
        let (mut hit, mut unknown) = (0, 0);
        changed_in.clear();
        let mut d = 0;
        for (&b, &v) in blocks.iter().zip(words) {
            let c = v & PROBE;
            let (start, end) = self.block_range(b, self.shift);
            while d < deps.len() && deps[d] < start {
                d += 1;
            }
            let first = d;
            while d < deps.len() && deps[d] < end {
                d += 1;
            }
            let known = d > first;
            let tested = c != UNTESTED && self.told[c as usize];
            let changed = tested && v & HIT != 0;
            if changed && !known {
                push(changed_in, c, "probes of a row")?;
            }
            hit += usize::from(changed || known);
            if changed || !tested {
                unknown += (end - start) as usize - (d - first);
            }
        }
        if changed_in.len() > 1 {
            changed_in.sort_unstable();
            changed_in.dedup();
        }
        let lower = deps.len() + changed_in.len();
        let blocks = blocks.len();
        Ok((blocks >= DENSE_MIN_BLOCKS
            && 4 * hit >= 3 * blocks
            && deps.len() >= DENSE_MIN
            && lower >= dense_at)
            // Before the last two levels: the row's unknown columns would cost a quarter of
            // what is left, about one probe each.
            || (s <= 1 && deps.len() >= DENSE_MIN && unknown >= leaf_dense_at))
    }

    /// Applies the outcomes of the told probes of the current step: drops candidates proven
    /// zero, and at the finest level turns changed outputs into dependencies.
    fn absorb(&mut self) -> Result<()> {
        match self.mode {
            Mode::Refining => {
                let leaf = self.shift == 0;
                let (mut tested, mut changed) = (0usize, 0usize);
                let mut w = 0;
                let mut ptr = 0;
                for i in 0..self.m {
                    let (a, b) = (self.cand_ptr[i], self.cand_ptr[i + 1]);
                    self.cand_ptr[i] = ptr;
                    for e in a..b {
                        let v = self.cand_probe[e];
                        let c = v & PROBE;
                        let keep = if c == UNTESTED || !self.told[c as usize] {
                            true
                        } else {
                            tested += 1;
                            if v & HIT != 0 {
                                changed += 1;
                                if leaf {
                                    // Alone among the row's blocks in its probe: proven.
                                    let dep = (i as u32, self.cand_idx[e]);
                                    push(&mut self.new_deps, dep, "dependencies")?;
                                    if v & PERT != 0 {
                                        push(&mut self.pert_deps, dep, "dependencies")?;
                                    }
                                }
                                !leaf
                            } else {
                                false // unchanged: every column of the block is zero for row i
                            }
                        };
                        if keep {
                            self.cand_idx[w] = self.cand_idx[e];
                            self.cand_probe[w] = UNTESTED;
                            w += 1;
                        }
                    }
                    ptr = w;
                }
                self.cand_ptr[self.m] = w;
                self.cand_idx.truncate(w);
                self.cand_probe.truncate(w);
                if tested > 0 {
                    self.last_hit_rate = changed as f64 / tested as f64;
                }
            }
            Mode::OneHot => {
                if self.onehot_complete && self.onehot_told.count_ones() == self.onehot_cols.len() {
                    self.cand_ptr.iter_mut().for_each(|p| *p = 0);
                    self.cand_idx.clear();
                    self.cand_probe.clear();
                }
            }
            Mode::Start | Mode::Done => {}
        }
        Ok(())
    }

    /// Merges `new_deps` into the dependency CSR (sorted, distinct per row): one sort of the
    /// new pairs and one merging pass, O(nnz + m + k log k) for k new pairs. The rows between
    /// two rows with new pairs are copied as one stretch. The pairs are left in `merged`,
    /// sorted, distinct, until the next merge (`advance` recovers from them the dependencies
    /// a parked row's step was planned with).
    fn merge_deps(&mut self) -> Result<()> {
        self.merged.clear();
        if self.new_deps.is_empty() {
            return Ok(());
        }
        let mut new = std::mem::take(&mut self.new_deps);
        new.sort(); // stable: it merges the per-probe runs the tells left (rows increasing in each)
        new.dedup();
        let m = self.m;
        let mut idx = Vec::new();
        reserve(&mut idx, self.dep_idx.len() + new.len(), "dependencies")?;
        let mut ptr = Vec::new();
        reserve(&mut ptr, m + 1, "dependency pointers")?;
        ptr.push(0);
        // `done`: rows before it are in the new CSR; `shift`: entries added before row `done`.
        let (mut done, mut shift, mut k) = (0usize, 0usize, 0usize);
        while k < new.len() {
            let i = new[k].0 as usize;
            let start = k;
            while k < new.len() && new[k].0 as usize == i {
                k += 1;
            }
            // Rows done..i unchanged: one copy of their entries, their pointers shifted.
            let (from, to) = (self.dep_ptr[done], self.dep_ptr[i]);
            idx.extend_from_slice(&self.dep_idx[from..to]);
            ptr.extend(self.dep_ptr[done + 1..=i].iter().map(|&p| p + shift));
            let old = &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]];
            let added = &new[start..k]; // sorted, distinct
            let before = idx.len();
            if old.is_empty() {
                idx.extend(added.iter().map(|&(_, j)| j));
            } else {
                merge_sorted_unique(old, added, |j| idx.push(j));
            }
            shift += idx.len() - before - old.len();
            ptr.push(idx.len());
            done = i + 1;
        }
        let from = self.dep_ptr[done];
        idx.extend_from_slice(&self.dep_idx[from..]);
        ptr.extend(self.dep_ptr[done + 1..=m].iter().map(|&p| p + shift));
        self.dep_ptr = ptr;
        self.dep_idx = idx;
        // The pairs stay for `advance`; the allocation of the emptied one serves the next step.
        self.new_deps = std::mem::replace(&mut self.merged, new);
        Ok(())
    }

    /// Lets go of the last merge's pairs, keeping the larger allocation for the next step's.
    fn release_merged(&mut self) {
        let mut merged = std::mem::take(&mut self.merged);
        merged.clear();
        if merged.capacity() > self.new_deps.capacity() && self.new_deps.is_empty() {
            self.new_deps = merged;
        }
    }

    /// Appends to `idx` and `words` the candidate entries of a row parked at the current level
    /// with dependencies `deps` (those the step was planned with), and the words the stored
    /// row would have: UNTESTED for a Q block, a P block's color, with [`HIT`] when the row
    /// changed in that probe (`changed`, sorted). Returns how many P blocks it holds in a
    /// probe.
    fn parked_entries(
        &self,
        deps: &[u32],
        changed: &[u32],
        idx: &mut Vec<u32>,
        words: &mut Vec<u32>,
    ) -> Result<usize> {
        let most = deps.len() << BRANCH_BITS;
        reserve(idx, most, "candidate blocks")?;
        reserve(words, most, "candidate probes")?;
        let mut p = 0;
        for_each_block(
            deps,
            self.shift,
            BRANCH_BITS,
            self.n,
            |b, kind| match kind {
                Kind::Q => {
                    idx.push(b);
                    words.push(UNTESTED);
                }
                Kind::P => {
                    let word = match self.parked.colors.get(b as usize) {
                        Some(&c) if c != NONE && changed.binary_search(&c).is_ok() => c | HIT,
                        Some(&c) if c != NONE => c,
                        _ => UNTESTED,
                    };
                    idx.push(b);
                    words.push(word);
                    p += usize::from(word != UNTESTED);
                }
                Kind::Full => {}
            },
        );
        Ok(p)
    }

    /// Writes every parked row back into the stored candidates, with the words the current
    /// step gave it (before one probe per column, and before `finish` reads the candidates).
    fn unpark_all(&mut self) -> Result<()> {
        if self.parked.count == 0 {
            return Ok(());
        }
        self.parked.sort_hits();
        let hits = std::mem::take(&mut self.parked.hits);
        let mut ptr = Vec::new();
        reserve(&mut ptr, self.m + 1, "candidate pointers")?;
        ptr.push(0);
        let (mut idx, mut words) = (Vec::new(), Vec::new());
        let most = self.cand_idx.len() + (self.parked.deps << BRANCH_BITS);
        reserve(&mut idx, most, "candidate blocks")?;
        reserve(&mut words, most, "candidate probes")?;
        let mut changed = Vec::new();
        let mut h = 0;
        for i in 0..self.m {
            if self.parked.is_parked(i) {
                changed.clear();
                while h < hits.len() && hits[h].0 as usize == i {
                    push(&mut changed, hits[h].1, "probes of a row")?;
                    h += 1;
                }
                self.parked_entries(self.deps(i), &changed, &mut idx, &mut words)?;
                self.parked.rows[i] = STORED;
            } else {
                let row = self.cand_ptr[i]..self.cand_ptr[i + 1];
                idx.extend_from_slice(&self.cand_idx[row.clone()]);
                words.extend_from_slice(&self.cand_probe[row]);
            }
            ptr.push(idx.len());
        }
        self.parked.count = 0;
        self.parked.deps = 0;
        self.parked.listed_p = 0;
        self.cand_ptr = ptr;
        self.cand_idx = idx;
        self.cand_probe = words;
        Ok(())
    }

    /// Of a row's known dependencies `deps`, how many blocks at the current level hold one
    /// and an unknown column.
    fn open_dep_blocks(&self, deps: &[u32]) -> usize {
        let (mut open, mut d) = (0, 0);
        while d < deps.len() {
            let (start, end) = self.block_range(deps[d] >> self.shift, self.shift);
            let from = d;
            while d < deps.len() && deps[d] < end {
                d += 1;
            }
            open += usize::from(d - from < (end - start) as usize);
        }
        open
    }

    /// Ends a step and moves to the next level, in one pass over the candidates: drops those
    /// the step proved zero and splits the others, keeping the halves that still hold an
    /// unknown column (the step's new dependencies are merged first, so a half left with none
    /// goes at once). At the last level everything tested is resolved and nothing is left.
    ///
    /// Parked rows the step showed nothing new of stay parked with no work; the others are
    /// written back and split like any row; a row whose survivors are exactly its
    /// dependencies' open blocks is parked (`parked.rs`), except before the last level.
    fn advance(&mut self) -> Result<()> {
        if self.shift == 0 {
            debug_assert_eq!(self.parked.count, 0);
            self.absorb()?;
            self.merge_deps()?;
            self.release_merged();
            self.cand_ptr.iter_mut().for_each(|p| *p = 0);
            self.cand_idx.clear();
            self.cand_probe.clear();
            return Ok(());
        }
        self.parked.sort_hits();
        let hits = std::mem::take(&mut self.parked.hits);
        self.merge_deps()?;
        let bits = BRANCH_BITS.min(self.shift);
        let s = self.shift - bits;
        let mut ptr = Vec::new();
        reserve(&mut ptr, self.m + 1, "candidate pointers")?;
        ptr.push(0);
        let mut idx = Vec::new();
        // For the stored rows; a parked row written back reserves its own below.
        reserve(&mut idx, self.cand_idx.len() << bits, "candidate blocks")?;
        // The P blocks of the rows that stay parked were all tested, and none changed; those
        // of rows written back are counted from their words.
        let mut tested = self.parked.listed_p;
        let mut changed = 0usize;
        let mut changed_in: Vec<u32> = Vec::new();
        // A parked row written back: its step's dependencies, the probes it changed in, its
        // entries and words.
        let (mut step_deps, mut probes, mut back_idx, mut back_words) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut h, mut nd, mut nm) = (0, 0, 0);
        let (parked_before, mut written_back) = (self.parked.count, 0usize);
        let leaf_dense_at = match self.cap {
            usize::MAX => usize::MAX,
            cap => DENSE_MIN.max(cap.saturating_sub(self.asked) / 4),
        };
        let dense_at = match self.cap {
            usize::MAX => usize::MAX,
            cap => DENSE_MIN.max(cap.saturating_sub(self.asked) / DENSE_DIVISOR),
        };
        // Rows parked or written back in this step, whose codes (and their successors') are
        // made again at the end.
        let mut touched: Vec<u32> = Vec::new();
        let mut skip_to = 0;
        for i in 0..self.m {
            if i < skip_to {
                continue;
            }

            let hit = h < hits.len() && hits[h].0 as usize == i;
            // New dependencies of a parked row with no hit lie in blocks holding known ones:
            // its blocks stay what they were, and it stays parked with them.
            while nm < self.merged.len() && (self.merged[nm].0 as usize) < i {
                nm += 1;
            }
            let learned = (self.merged[nm..].iter())
                .take_while(|&&(r, _)| r as usize == i)
                .count();
            // (Unless they make it a candidate dense row: recognising one reads its stored
            // candidates. Then it is written back.)
            let dense_now = learned > 0 && self.dep_ptr[i + 1] - self.dep_ptr[i] >= DENSE_MIN;
            if self.parked.is_parked(i) && !hit && learned > 0 && !dense_now {
                self.parked.deps += learned;
                push(&mut touched, i as u32, "rows")?;
                if s > 0 {
                    ptr.push(idx.len());
                    continue;
                }
            } else if self.parked.is_parked(i) && !hit && learned == 0 && s > 0 {
                // Parked rows up to the next stored row, hit or new dependency: they stay
                // parked.
                let next_hit = hits.get(h).map_or(self.m, |&(r, _)| r as usize);
                let next_new = self.merged.get(nm).map_or(self.m, |&(r, _)| r as usize);
                let next = next_hit.min(next_new);
                let stop = (self.parked.rows[i..next].iter())
                    .position(|&c| c == STORED)
                    .map_or(next, |k| i + k);
                ptr.extend(std::iter::repeat_n(idx.len(), stop - i));
                skip_to = stop;
                continue;
            }
            let deps = &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]];
            let was_parked = self.parked.is_parked(i);
            if was_parked && !hit && !dense_now {
                // Into the last level with nothing new: its P blocks were tested (counted in
                // `tested`) and unchanged, its Q blocks split into their columns that are not
                // dependencies: the children of its dependencies' blocks, stored.
                debug_assert_eq!(s, 0);
                reserve(&mut idx, deps.len() << BRANCH_BITS, "candidate blocks")?;
                for_each_block(deps, s, BRANCH_BITS, self.n, |b, kind| {
                    if kind == Kind::P {
                        idx.push(b);
                    }
                });
                self.parked.rows[i] = STORED;
                self.parked.count -= 1;
                self.parked.deps -= deps.len();
                ptr.push(idx.len());
                continue;
            }
            let (blocks, words) = if !was_parked {
                let row = self.cand_ptr[i]..self.cand_ptr[i + 1];
                (&self.cand_idx[row.clone()], &self.cand_probe[row])
            } else {
                // Written back: a P block changed, a dependency came outside its blocks, or it
                // has as many as a dense row: with the words the stored row would have.
                debug_assert!(hit || dense_now);
                probes.clear();
                while h < hits.len() && hits[h].0 as usize == i {
                    push(&mut probes, hits[h].1, "probes of a row")?;
                    h += 1;
                }
                while nd < self.merged.len() && (self.merged[nd].0 as usize) < i {
                    nd += 1;
                }
                let from = nd;
                while nd < self.merged.len() && self.merged[nd].0 as usize == i {
                    nd += 1;
                }
                let step = match &self.merged[from..nd] {
                    [] => deps,
                    added => {
                        step_deps.clear();
                        reserve(&mut step_deps, deps.len(), "dependencies of a row")?;
                        step_deps.extend(
                            (deps.iter())
                                .filter(|&&j| added.binary_search(&(i as u32, j)).is_err()),
                        );
                        &step_deps[..]
                    }
                };
                back_idx.clear();
                back_words.clear();
                tested -= self.parked_entries(step, &probes, &mut back_idx, &mut back_words)?;
                reserve(&mut idx, back_idx.len() << bits, "candidate blocks")?;
                self.parked.rows[i] = STORED;
                self.parked.count -= 1;
                self.parked.deps -= step.len();
                written_back += 1;
                (&back_idx[..], &back_words[..])
            };
            // Recognising a row dense takes DENSE_MIN known dependencies: most rows skip it.
            let is_dense = deps.len() >= DENSE_MIN
                && self.recognised_dense(
                    deps,
                    (blocks, words),
                    s,
                    (dense_at, leaf_dense_at),
                    &mut changed_in,
                )?;
            let row_start = idx.len();
            let may_park = s > 0 && self.parked.enabled && !is_dense && deps.len() < DENSE_MIN;
            // Survivors, those holding a dependency, those holding one and an unknown column.
            let (mut survivors, mut with_dep, mut open) = (0usize, 0usize, 0usize);
            let (mut d, mut dd) = (0, 0);
            for (&b, &v) in blocks.iter().zip(words) {
                let c = v & PROBE;
                if c != UNTESTED && self.told[c as usize] {
                    tested += 1;
                    if v & HIT == 0 {
                        continue; // unchanged: every column of the block is zero for row i
                    }
                    changed += 1;
                }
                if is_dense {
                    // Recognised dense: the block's columns are kept, not refined.
                    let (start, end) = self.block_range(b, self.shift);
                    push(&mut self.dense, (i as u32, start, end), "dense rows")?;
                    continue;
                }
                if may_park {
                    let (start, end) = self.block_range(b, self.shift);
                    while dd < deps.len() && deps[dd] < start {
                        dd += 1;
                    }
                    let from = dd;
                    while dd < deps.len() && deps[dd] < end {
                        dd += 1;
                    }
                    survivors += 1;
                    with_dep += usize::from(dd > from);
                    open += usize::from(dd > from && dd - from < (end - start) as usize);
                }
                self.split_into(b, s, deps, &mut d, &mut idx);
            }
            if may_park
                && survivors > 0
                && with_dep == survivors
                && deps.len() < DENSE_MIN
                && open == self.open_dep_blocks(deps)
            {
                // Its children are its dependencies' blocks' children: not stored.
                idx.truncate(row_start);
                self.parked.rows[i] = ALONE;
                self.parked.count += 1;
                self.parked.deps += deps.len();
            }
            if was_parked || self.parked.is_parked(i) {
                push(&mut touched, i as u32, "rows")?;
            }
            ptr.push(idx.len());
        }
        // A parked row's code: from which level on it has the blocks of the row before.
        for &t in &touched {
            for r in [t as usize, t as usize + 1] {
                if r < self.m && self.parked.is_parked(r) {
                    self.parked.rows[r] = match r > 0 && self.parked.is_parked(r - 1) {
                        true => shared_from(self.deps(r), self.deps(r - 1)),
                        false => ALONE,
                    };
                }
            }
        }
        debug_assert_eq!(h, hits.len());
        debug_assert_eq!(ptr.len(), self.m + 1);
        if 2 * written_back > parked_before {
            // Most parked rows came back (a band's rows learn one dependency a probe for many
            // levels): parking costs more than it saves on this pattern.
            self.parked.enabled = false;
        }
        drop(hits);
        self.release_merged();
        if tested > 0 {
            self.last_hit_rate = changed as f64 / tested as f64;
        }
        self.cand_ptr = ptr;
        // Reserved for every block splitting; the halves proven empty are not there: give the
        // rest back (a shrinking reallocation, in place for large arrays).
        idx.shrink_to_fit();
        self.cand_idx = idx;
        // The old array goes before the new one is made: one of them at a time at the peak.
        self.cand_probe = Vec::new();
        self.cand_probe = filled(UNTESTED, self.cand_idx.len(), "candidate probes")?;
        self.shift = s;
        Ok(())
    }

    /// Plans the step at the current level: marks probeable candidates, colors their blocks,
    /// and returns the probes; or switches to one probe per column when refining gains
    /// nothing. Returns `None` when this level has nothing probeable.
    fn plan_level(&mut self) -> Result<Option<Vec<Probe>>> {
        let shift = self.shift;
        let leaf = shift == 0;
        let nblocks = (self.n as u64).div_ceil(1u64 << shift) as usize;
        // Byte flags: set once per candidate in the hottest loop, where they beat bit sets.
        let mut probed = filled(false, nblocks, "block flags")?;
        let mut is_cand = filled(false, nblocks, "block flags")?;
        self.parked.colors = Vec::new();
        self.parked.listed_p = 0;
        self.parked.spans = Vec::new();
        // One pass over the rows: which candidates are probeable (hold no known dependency),
        // and each row's blocks K_i, flagged P (a probeable candidate) or Q (holds a known
        // dependency), as CSR over the rows with a probeable candidate. An entry is the block
        // id with the flag in its top bit. Blocks are aligned ranges, so block b holds column
        // d exactly when d >> shift == b, and one merge of the sorted candidates with the
        // sorted dependencies does it all.
        //
        // The lists' bounds, per row ordinal r (rows with a probeable candidate, in order): the
        // start of its list in `lists[r].0`, with the top bit set when the row is *blind* (no
        // known dependency among its blocks: no tag came back for it), and a fill position in
        // `lists[r].1` (used by the coloring); its list ends where the next one starts (an
        // extra last entry holds the end). u32 offsets: a k_idx longer than that falls back to
        // one probe per column below.
        //
        // Rows with the same list (consecutive in row order) share one: `lists[r].2` is how
        // many rows list r stands for. Conflicts are counted by weight, so the coloring is the
        // one every row listed apart would give. `listed` is the length of all the rows' lists.
        let mut lists: Vec<(u32, u32, u32)> = Vec::new();
        reserve(&mut lists, self.m + 1, "block list bounds")?;
        let mut listed = 0usize;
        // Rows dense at this scale: usually none.
        let mut suspected: Vec<u32> = Vec::new();
        let mut k_idx: Vec<u32> = Vec::new();
        // A stored row lists its candidates and its dependencies' blocks; a parked row its
        // dependencies' blocks' children, at most `deps << BRANCH_BITS`.
        let parked_lists = self.parked.deps * ((1 << BRANCH_BITS) - 1);
        reserve(
            &mut k_idx,
            self.cand_idx.len() + self.dep_idx.len() + parked_lists,
            "block lists",
        )?;
        let (mut max_q, mut work) = (0usize, 0u64);
        // The last parked row listed: its row, its list's length and P blocks.
        let mut last_parked = (usize::MAX, 0usize, 0usize);
        let mut skip_to = 0;
        for i in 0..self.m {
            if i < skip_to {
                continue;
            }
            let code = self.parked.rows[i];
            if code as u32 <= shift {
                // Parked rows with the blocks of the parked row before (their codes say so):
                // its list, weighted by their count.
                let end = (self.parked.rows[i..].iter())
                    .position(|&c| c as u32 > shift)
                    .map_or(self.m, |k| i + k);
                let w = end - i;
                let (last, last_len, last_p) = last_parked;
                debug_assert_eq!(last + 1, i);
                last_parked.0 = end - 1;
                if last_p > 0 {
                    lists.last_mut().unwrap().2 += w as u32;
                    listed += w * last_len;
                    work += (w * last_len * last_len) as u64;
                    self.parked.listed_p += w * last_p;
                    let list = lists.len() as u32 - 1;
                    self.parked.extend_span(i as u32, w as u32, list)?;
                }
                skip_to = end;
                continue;
            }
            let (a, b) = (self.cand_ptr[i], self.cand_ptr[i + 1]);
            let parked = code != STORED;
            if a == b && !parked {
                continue;
            }
            let deps = &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]];
            let start = k_idx.len();
            let (mut q, mut any_p) = (0, false);
            let mut p = 0;
            if parked {
                // Its candidates are its dependencies' blocks' children (`parked.rs`).
                for_each_block(deps, shift, BRANCH_BITS, self.n, |blk, kind| match kind {
                    Kind::P => {
                        is_cand[blk as usize] = true;
                        probed[blk as usize] = true;
                        k_idx.push(blk | P_FLAG);
                        p += 1;
                    }
                    Kind::Q => {
                        is_cand[blk as usize] = true;
                        k_idx.push(blk);
                        q += 1;
                    }
                    Kind::Full => {
                        k_idx.push(blk);
                        q += 1;
                    }
                });
                self.parked.listed_p += p;
                any_p = p > 0;
            } else {
                let mut d = 0;
                let mut push_q = |k_idx: &mut Vec<u32>, blk: u32| {
                    if k_idx.len() == start || *k_idx.last().unwrap() != blk {
                        k_idx.push(blk);
                        q += 1;
                    }
                };
                for e in a..b {
                    let blk = self.cand_idx[e];
                    is_cand[blk as usize] = true;
                    while d < deps.len() && deps[d] >> shift < blk {
                        push_q(&mut k_idx, deps[d] >> shift);
                        d += 1;
                    }
                    if d < deps.len() && deps[d] >> shift == blk {
                        self.cand_probe[e] = UNTESTED; // holds a known dependency
                        push_q(&mut k_idx, blk);
                        while d < deps.len() && deps[d] >> shift == blk {
                            d += 1;
                        }
                    } else {
                        self.cand_probe[e] = 0; // probeable; its color is set below
                        probed[blk as usize] = true;
                        k_idx.push(blk | P_FLAG);
                        any_p = true;
                    }
                }
                while d < deps.len() {
                    push_q(&mut k_idx, deps[d] >> shift);
                    d += 1;
                }
            }
            if !any_p {
                k_idx.truncate(start);
                if parked {
                    last_parked = (i, 0, 0);
                }
                continue;
            }
            let len = k_idx.len() - start;
            let wide = len >= WIDE_ROW_BLOCKS && 2 * len >= nblocks;
            if !leaf && ((q >= DENSE_MIN && 4 * q >= 3 * len) || wide) {
                // Known dependencies in 3/4 of its blocks: dense at this scale. Or blocks in
                // half of all blocks: the square of its length would outweigh the coloring of
                // every other row (an arrowhead's dense row at n = 10^5 sent the whole trace to
                // one probe per column). The row would make the coloring compress nothing; it
                // is left out of it, and its P blocks are tested only where no Q block of its
                // shares their probe (below).
                // (Never a parked row: it has fewer than DENSE_MIN dependencies, and at most
                // two blocks for each.)
                debug_assert!(!parked);
                k_idx.truncate(start);
                push(&mut suspected, i as u32, "rows")?;
                continue;
            }
            let len = k_idx.len() - start;
            max_q = max_q.max(q);
            work += (len * len) as u64;
            listed += len;
            let blind = if q == 0 { P_FLAG } else { 0 };
            // The same list as the row before (a band's rows inside one block, at every level
            // but the finest): one more row of weight for that list.
            let same = lists.last().is_some_and(|&(prev, _, _)| {
                let prev_start = (prev & !P_FLAG) as usize;
                // Element by element: the lists are short, a memcmp call costs more.
                prev & P_FLAG == blind
                    && start - prev_start == len
                    && (k_idx[prev_start..start].iter())
                        .zip(&k_idx[start..])
                        .all(|(a, b)| a == b)
            });
            if same {
                k_idx.truncate(start);
                lists.last_mut().unwrap().2 += 1;
            } else {
                lists.push((start as u32 | blind, start as u32, 1));
            }
            if parked {
                self.parked
                    .extend_span(i as u32, 1, lists.len() as u32 - 1)?;
                last_parked = (i, len, p);
            }
        }
        if lists.is_empty() && suspected.is_empty() {
            return Ok(None);
        }
        let rows = lists.len();
        lists.push((k_idx.len() as u32, k_idx.len() as u32, 0));
        let start_of = |lists: &[(u32, u32, u32)], r: usize| (lists[r].0 & !P_FLAG) as usize;
        let unknown_cols: usize = (0..nblocks)
            .filter(|&b| is_cand[b])
            .map(|b| {
                let (s, e) = self.block_range(b as u32, shift);
                (e - s) as usize
            })
            .sum();
        drop(is_cand);
        let work_limit = 64 * (listed as u64) + 10_000_000;
        if work > work_limit || nblocks > P_FLAG as usize || k_idx.len() >= P_FLAG as usize {
            return Ok(Some(self.start_onehot()?));
        }

        // Transpose: for each block, the rows (ordinals) that hold it, with
        // the block's P/Q flag for that row in the top bit.
        // Counting sort without a second pointer array: t_ptr[b] counts, then holds the end of
        // block b's list, and filling from the back moves it to the start.
        let mut t_ptr = filled(0u32, nblocks + 1, "block pointers")?;
        for &b in &k_idx {
            t_ptr[(b & !P_FLAG) as usize] += 1;
        }
        for b in 1..=nblocks {
            t_ptr[b] += t_ptr[b - 1];
        }
        let mut t_idx = filled(0u32, k_idx.len(), "rows of blocks")?;
        for r in (0..rows).rev() {
            for &b in k_idx[start_of(&lists, r)..start_of(&lists, r + 1)]
                .iter()
                .rev()
            {
                let slot = &mut t_ptr[(b & !P_FLAG) as usize];
                *slot -= 1;
                t_idx[*slot as usize] = r as u32 | (b & P_FLAG);
            }
        }

        // Greedy coloring of the probed blocks in natural order. A P block and a Q block of one
        // row in one probe cost the row that P block's information: a hard conflict. Two P
        // blocks of one row may share a probe (an unchanged output proves both zero): a soft
        // conflict, counted. At the last level every conflict is hard, so the coloring is a
        // proper partial distance-2 coloring and every tested candidate is resolved. At coarse
        // levels the palette is capped: when the hard conflicts allow no proper coloring within
        // the cap, a block takes the color with the fewest conflicts.
        let cap = if leaf {
            usize::MAX
        } else {
            (2 * max_q + 2).max(4)
        };
        let mut color = filled(NONE, nblocks, "block colors")?;
        // What a block's rows already hold: row r's colored blocks so far, as color | P flag,
        // in its list up to its fill position (its block ids are no longer read once
        // transposed). Coloring block b reads one short contiguous list per row of b instead of
        // looking up the color of each of the row's blocks, scattered over the color array;
        // then appends b's color to each of those lists. A row's start, fill and weight sit
        // side by side: one cache line serves all three.
        let mut seen = k_idx;
        let mut palette = Palette::default();
        for b in (0..nblocks).filter(|&b| probed[b]) {
            let rows_b = &t_idx[t_ptr[b] as usize..t_ptr[b + 1] as usize];
            for (k, &t) in rows_b.iter().enumerate() {
                // The rows come in scattered order on patterns without locality: ask for the
                // bounds of a row sixteen ahead and the list of a row eight ahead.
                if let Some(&ahead) = rows_b.get(k + 16) {
                    prefetch(&lists, (ahead & !P_FLAG) as usize);
                }
                if let Some(&ahead) = rows_b.get(k + 8) {
                    prefetch(
                        &seen,
                        (lists[(ahead & !P_FLAG) as usize].0 & !P_FLAG) as usize,
                    );
                }
                let (r, b_is_p) = ((t & !P_FLAG) as usize, t & P_FLAG != 0);
                let (start, end, w) = lists[r];
                let blind = start & P_FLAG != 0;
                // Which count a colored block u of this row adds to, by u's flag: a P and a
                // Q block conflict hard; two P blocks hard at the last level, else soft
                // (blind soft for a blind row); two Q blocks not at all (the unused slot).
                let (if_p, if_q) = match (b_is_p, leaf, blind) {
                    (false, ..) => (HARD, UNUSED),
                    (true, true, _) => (HARD, HARD),
                    (true, false, true) => (BLIND_SOFT, HARD),
                    (true, false, false) => (SOFT, HARD),
                };
                for &u in &seen[(start & !P_FLAG) as usize..end as usize] {
                    let slot = if u & P_FLAG != 0 { if_p } else { if_q };
                    palette.counts[(u & !P_FLAG) as usize][slot] += w;
                }
            }
            let c = palette.choose(cap)?;
            color[b] = c;
            for &t in rows_b {
                let end = &mut lists[(t & !P_FLAG) as usize].1;
                seen[*end as usize] = c | (t & P_FLAG);
                *end += 1;
            }
        }
        let colors = palette.len();
        // The probes each run of parked rows is tested in, for the tells.
        self.parked.set_masks(P_FLAG, |r| {
            // Colored so far: all its P blocks (every P block is probed), in its fill.
            &seen[(lists[r].0 & !P_FLAG) as usize..lists[r].1 as usize]
        });
        drop((t_ptr, t_idx, lists, seen));

        // Dense at this scale: the coloring compresses nothing and the last step's tested
        // candidates nearly all changed. Refining further would cost more than one probe per
        // remaining column.
        let probed_blocks = probed.iter().filter(|&&p| p).count();
        // Dense at this scale: some row already has known dependencies in at least 3/4 of the
        // blocks, or the coloring compresses nothing while nearly every tested block changed.
        let dense =
            (leaf && probed_blocks >= MIN_BLOCKS_FOR_DENSE_TEST && 4 * max_q >= 3 * probed_blocks)
                || (probed_blocks >= MIN_BLOCKS_FOR_SCALE_TEST
                    && colors == probed_blocks
                    && self.last_hit_rate >= 0.9);
        let slack = SPEND_SLACK.min(self.n / 4);
        let left = self.cap.saturating_sub(self.asked);
        // Past the allowance, one probe per column is the better bet only while it still fits
        // under the cap; once it does not, refining (which may still finish) goes on.
        let onehot_fits = unknown_cols <= left;
        let over_allowance = (onehot_fits
            && self.spent + colors > unknown_cols / SPEND_DIVISOR + slack)
            || colors > left;
        // Probe numbers must fit a candidate's word below its flags.
        if colors >= UNTESTED as usize
            || (leaf && (colors >= unknown_cols || colors > left))
            || (!leaf && (dense || over_allowance))
        {
            return Ok(Some(self.start_onehot()?));
        }
        self.asked += colors;

        // The probes: the columns of each color class, in increasing order.
        let mut cols: Vec<Vec<u32>> = filled(Vec::new(), colors, "probes")?;
        for b in (0..nblocks).filter(|&b| probed[b]) {
            let (s, e) = self.block_range(b as u32, shift);
            let class = &mut cols[color[b] as usize];
            reserve(class, (e - s) as usize, "probe columns")?;
            class.extend(s..e);
        }
        for e in 0..self.cand_idx.len() {
            if self.cand_probe[e] != UNTESTED {
                self.cand_probe[e] = color[self.cand_idx[e] as usize];
            }
        }
        // A row left out of the coloring learns nothing from a P block whose probe holds one
        // of its Q blocks: that block is not tested in this step (it stays a candidate).
        let mut q_colors = Vec::new();
        for &i in &suspected {
            let i = i as usize;
            q_colors.clear();
            reserve(&mut q_colors, self.deps(i).len(), "colors of a row")?;
            q_colors.extend(
                (self.deps(i).iter())
                    .map(|&d| color[(d >> shift) as usize])
                    .filter(|&c| c != NONE),
            );
            q_colors.sort_unstable();
            for e in self.cand_ptr[i]..self.cand_ptr[i + 1] {
                let c = self.cand_probe[e];
                if c != UNTESTED && q_colors.binary_search(&c).is_ok() {
                    self.cand_probe[e] = UNTESTED;
                }
            }
        }
        self.told = filled(false, colors, "probes told")?;
        if self.parked.count > 0 {
            // Which probe tests a parked row's P block, for the tells.
            self.parked.colors = color;
        }
        let n = self.n;
        Ok(Some(collect(
            cols.into_iter().map(|c| Probe::new(c, n)),
            "probes",
        )?))
    }

    /// Switches to one probe per column of the candidate blocks; when they are more than the
    /// cap leaves, to one probe for each of the columns unknown for the most rows (the others
    /// stay unresolved).
    fn start_onehot(&mut self) -> Result<Vec<Probe>> {
        self.unpark_all()?;
        let shift = self.shift;
        // How many rows hold each column in a candidate block (a difference array).
        let mut count = Vec::new();
        reserve(&mut count, self.n + 1, "column counts")?;
        count.resize(self.n + 1, 0i64);
        for &b in &self.cand_idx {
            let (s, e) = self.block_range(b, shift);
            count[s as usize] += 1;
            count[e as usize] -= 1;
        }
        let mut cols = Vec::new();
        let mut held = 0i64;
        for (j, c) in count.iter_mut().take(self.n).enumerate() {
            held += *c;
            *c = held;
            if held > 0 {
                reserve(&mut cols, 1, "one-hot probes")?;
                cols.push(j as u32);
            }
        }
        let left = self.cap.saturating_sub(self.asked);
        self.onehot_complete = cols.len() <= left;
        if !self.onehot_complete {
            cols.sort_by_key(|&j| std::cmp::Reverse(count[j as usize]));
            cols.truncate(left);
            cols.sort_unstable();
        }
        self.asked += cols.len();
        self.cand_probe.iter_mut().for_each(|c| *c = UNTESTED);
        self.mode = Mode::OneHot;
        self.onehot_told = zero_bits(self.n, "columns told")?;
        self.told = filled(false, cols.len(), "probes told")?;
        let n = self.n;
        let mut probes = Vec::new();
        reserve(&mut probes, cols.len(), "one-hot probes")?;
        for &c in &cols {
            probes.push(Probe::new(copied(&[c], "a one-hot probe")?, n));
        }
        self.onehot_cols = cols;
        Ok(probes)
    }
}

/// The colors of one level's coloring and, for the block being colored, the conflicts each
/// color has with it: (hard, blind soft, soft) at [`HARD`], [`BLIND_SOFT`], [`SOFT`], counted
/// into `counts` and cleared by [`Palette::choose`]; the fourth count takes what counts for
/// nothing, so the counting loop has no branch.
#[derive(Default)]
struct Palette {
    counts: Vec<[u32; 4]>,
}

/// The slots of a color's counts in [`Palette`].
const HARD: usize = 0;
const BLIND_SOFT: usize = 1;
const SOFT: usize = 2;
const UNUSED: usize = 3;

impl Palette {
    fn len(&self) -> usize {
        self.counts.len()
    }

    /// The color for the block whose conflicts were counted: the one with the fewest (hard,
    /// blind soft, soft) conflicts when it has neither hard nor blind soft ones, or the palette
    /// holds `cap` colors already; otherwise a new color. Clears the counts for the next block.
    fn choose(&mut self, cap: usize) -> Result<u32> {
        // The first color with the fewest (hard, blind soft, soft), the three as one number,
        // found in the pass that clears the counts.
        let mut best = (u128::MAX, 0);
        for (c, k) in self.counts.iter_mut().enumerate() {
            let key =
                u128::from(k[HARD]) << 64 | u128::from(k[BLIND_SOFT]) << 32 | u128::from(k[SOFT]);
            if key < best.0 {
                best = (key, c);
            }
            *k = [0; 4];
        }
        let (key, c) = best;
        // Neither hard nor blind soft conflicts, or no room for another color: the best one.
        if key >> 32 == 0 || (self.len() >= cap && key != u128::MAX) {
            return Ok(c as u32);
        }
        push(&mut self.counts, [0; 4], "colors")?;
        Ok(self.len() as u32 - 1)
    }
}

/// Calls `f` on the sorted union of a row's known dependencies (`old`, sorted, distinct) and
/// its new ones (`added`, sorted by column), each column once.
fn merge_sorted_unique(old: &[u32], added: &[(u32, u32)], mut f: impl FnMut(u32)) {
    let (mut a, mut b) = (0, 0);
    let mut last = None;
    while a < old.len() || b < added.len() {
        let v = if b == added.len() || (a < old.len() && old[a] <= added[b].1) {
            a += 1;
            old[a - 1]
        } else {
            b += 1;
            added[b - 1].1
        };
        if last != Some(v) {
            f(v);
            last = Some(v);
        }
    }
}

impl Planner for Refine {
    fn ask(&mut self) -> Result<Vec<Probe>> {
        match self.mode {
            Mode::Done => return Ok(Vec::new()),
            Mode::Start if self.cap != usize::MAX && 2 * self.shift as usize + 3 >= self.n => {
                // Refining costs at least about two probes a level and three at the last: on
                // so few columns it cannot beat one probe per column, which fits the cap.
                if self.cand_idx.is_empty() {
                    self.mode = Mode::Done;
                    return Ok(Vec::new());
                }
                return self.start_onehot();
            }
            Mode::Start => self.mode = Mode::Refining,
            Mode::Refining => self.advance()?,
            Mode::OneHot => {
                self.absorb()?;
                self.merge_deps()?;
                self.mode = Mode::Done;
                return Ok(Vec::new());
            }
        }
        loop {
            if self.cand_idx.is_empty() && self.parked.count == 0 {
                self.mode = Mode::Done;
                return Ok(Vec::new());
            }
            if let Some(probes) = self.plan_level()? {
                return Ok(probes);
            }
            self.advance()?;
        }
    }

    fn tell(&mut self, k: usize, probe: &Probe, y: &[f64], perturbed: &[u32]) -> Result<usize> {
        self.told[k] = true;
        self.spent += 1;
        let mode = self.mode;
        let (new_deps, pert_deps) = (&mut self.new_deps, &mut self.pert_deps);
        let (cand_ptr, cand_probe) = (&self.cand_ptr, &mut self.cand_probe);
        let (dep_ptr, dep_idx) = (&self.dep_ptr, &self.dep_idx);
        let (parked, colors, hits, spans) = (
            &self.parked.rows,
            &self.parked.colors,
            &mut self.parked.hits,
            &self.parked.spans,
        );
        let (shift, n) = (self.shift, self.n);
        let mut cursor = 0;
        let mut room = true;
        let via_float = probe.observe(&self.baseline, y, perturbed, |i, hit| match mode {
            Mode::OneHot => {
                room &= push(new_deps, (i, probe.cols()[0]), "dependencies").is_ok();
                if hit == Hit::Perturbed {
                    room &= push(pert_deps, (i, probe.cols()[0]), "dependencies").is_ok();
                }
            }
            _ => {
                let known = || &dep_idx[dep_ptr[i as usize]..dep_ptr[i as usize + 1]];
                // A new dependency in a block that holds a known one changes none of a parked
                // row's blocks: only one elsewhere calls the row back.
                let mut new_elsewhere = false;
                if let Hit::Dep(j) = hit {
                    // A probe holding a known dependency of the row re-reports it: skip those.
                    let deps = known();
                    if let Err(at) = deps.binary_search(&j) {
                        room &= push(new_deps, (i, j), "dependencies").is_ok();
                        let near = |d: Option<&u32>| d.is_some_and(|&d| d >> shift == j >> shift);
                        new_elsewhere = !near(deps.get(at))
                            && !near(at.checked_sub(1).and_then(|a| deps.get(a)));
                    }
                }
                if parked[i as usize] != STORED {
                    // What the stored row would mark: its P blocks in this probe changed.
                    let tested = match spans.is_empty() {
                        false => span_tests(spans, i, k as u32, &mut cursor),
                        true => tests_in(colors, known(), shift, BRANCH_BITS, n, k as u32),
                    };
                    if new_elsewhere || tested {
                        room &= push(hits, (i, k as u32), "parked rows' outcomes").is_ok();
                    }
                    return;
                }
                let mark = match hit {
                    Hit::Perturbed => HIT | PERT,
                    _ => HIT,
                };
                let row = &mut cand_probe[cand_ptr[i as usize]..cand_ptr[i as usize + 1]];
                for v in row.iter_mut().filter(|v| **v & PROBE == k as u32) {
                    *v |= mark;
                }
            }
        });
        if !room {
            return Err(Error::out_of_memory("dependencies", self.new_deps.len()));
        }
        if mode == Mode::OneHot {
            self.onehot_told.set(probe.cols()[0] as usize, true);
        }
        Ok(via_float)
    }

    fn claims(&self, k: usize, probe: &Probe, y: &[f64]) -> bool {
        let unchanged = |i: usize| {
            let b = self.baseline[i];
            b.is_finite() && b.to_bits() == y[i].to_bits()
        };
        match self.mode {
            Mode::OneHot => {
                // A row claims column j zero if j is still unknown for it.
                let j = probe.cols()[0];
                let block = j >> self.shift;
                (0..self.m).any(|i| {
                    unchanged(i)
                        && self.cand_idx[self.cand_ptr[i]..self.cand_ptr[i + 1]].contains(&block)
                        && self.deps(i).binary_search(&j).is_err()
                })
            }
            _ => {
                let mut cursor = 0;
                (0..self.m).any(|i| {
                    unchanged(i)
                        && match self.parked.is_parked(i) {
                            true if !self.parked.spans.is_empty() => {
                                span_tests(&self.parked.spans, i as u32, k as u32, &mut cursor)
                            }
                            true => tests_in(
                                &self.parked.colors,
                                self.deps(i),
                                self.shift,
                                BRANCH_BITS,
                                self.n,
                                k as u32,
                            ),
                            false => (self.cand_probe[self.cand_ptr[i]..self.cand_ptr[i + 1]]
                                .iter())
                            .any(|&v| v & PROBE == k as u32),
                        }
                })
            }
        }
    }

    fn finish(mut self: Box<Self>, mut builder: PatternBuilder) -> Result<Pattern> {
        self.unpark_all()?;
        self.absorb()?;
        self.merge_deps()?;
        let onehot = self.mode == Mode::OneHot;
        self.pert_deps.sort_unstable();
        self.pert_deps.dedup();
        let pert = std::mem::take(&mut self.pert_deps);
        let traced_kind = |i: usize, j: u32| {
            if pert.binary_search(&(i as u32, j)).is_ok() {
                EntryKind::Perturbation
            } else {
                EntryKind::Traced
            }
        };
        self.dense.sort_unstable();
        let mut dense = self.dense.iter().peekable();
        let mut row: Vec<(u32, EntryKind)> = Vec::new();
        for i in 0..self.m {
            row.clear();
            let deps = self.deps(i);
            reserve(&mut row, deps.len(), "a row")?;
            row.extend(deps.iter().map(|&j| (j, traced_kind(i, j))));
            for &b in &self.cand_idx[self.cand_ptr[i]..self.cand_ptr[i + 1]] {
                let (s, e) = self.block_range(b, self.shift);
                for j in s..e {
                    if deps.binary_search(&j).is_err() && !(onehot && self.onehot_told[j as usize])
                    {
                        // Left out of the one-hot probes by the cap, or not told yet.
                        let left_out = onehot
                            && !self.onehot_complete
                            && self.onehot_cols.binary_search(&j).is_err();
                        let kind = match left_out {
                            true => self.capped,
                            false => EntryKind::Unresolved,
                        };
                        push(&mut row, (j, kind), "a row")?;
                    }
                }
            }
            while let Some(&(_, s, e)) = dense.next_if(|d| d.0 as usize == i) {
                reserve(&mut row, (e - s) as usize, "a row")?;
                row.extend((s..e).map(|j| (j, EntryKind::Assumed)));
            }
            // Sorted by column, the strongest kind of each column first; keep that one.
            row.sort_unstable();
            row.dedup_by_key(|&mut (j, _)| j);
            if !row.is_empty() {
                builder.push_row(i, row.iter().copied())?;
            }
        }
        builder.finish()
    }
}
