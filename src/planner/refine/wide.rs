//! Wide rows' own probes.
//!
//! # The problem
//!
//! A coarse level leaves a row out of its coloring when the row holds at least 64 blocks and
//! half of all blocks (`level.rs`, `list_rows`): the square of its list would outweigh the
//! coloring of every other row, and its P blocks conflicting with all its Q blocks would make
//! the coloring compress nothing. Such a row's P blocks are tested only in probes holding none
//! of its Q blocks. A row whose known dependencies lie spread over every color of the level
//! is then tested nowhere: its candidates stay, it stays wide at every level after, and before
//! the last levels it is recognised dense with its unknown columns kept as assumed entries.
//! Random 5 per row at n = 2 x 10^4 with one row of about 100 spread dependencies, without the
//! check: 199 evaluations and 18348 assumed entries, all but about 100 of them zeros; at 10^5
//! 242 and 87612. A Jacobian colored on that pattern costs one evaluation per column.
//!
//! # Probes of their own
//!
//! A wide row not dense at this scale (its known dependencies do not fill 3/4 of its blocks)
//! has its P blocks that no colored probe tests put in probes of its own, added to the step:
//! each holds P blocks of wide rows and no Q block of any, split into `palette` *group* probes
//! by a hash of the block. For the row, such a probe either leaves its output unchanged, and
//! every one of its P blocks there is zero, or changes it with a tag the row did not know (the
//! probe holds none of its known dependencies), or with no tag. A row that knows all its
//! dependencies has every such block proven zero by one probe a level; a row still learning
//! learns about one dependency per own probe that changes it.
//!
//! The palette adapts: the next level's is twice the most group probes one wide row changed in
//! (at least 1; 2 at the first level with wide rows), within what the coarse allowance leaves
//! for each level to come. A row with u unknown dependencies changes in about u of them, so
//! the palette follows u, and a row whose dependencies are all known costs one probe a level.
//! The row above: 458 evaluations at 2 x 10^4 and 816 at 10^5, exact
//! (`a_wide_row_among_sparse_ones_is_traced_exactly` in `tests/planners.rs`).
//!
//! A *blind* wide row (no tag came back for it: a black box that makes its own NaNs) has all
//! its P blocks in group probes, tested or not: its colored probes, a few for all its blocks,
//! always change and teach it nothing, while group probes are group testing: those that leave
//! it unchanged prove their blocks zero, and the palette grows until some do.
//!
//! Own probes are made at a level with at most `WIDE_ROWS_MOST` (64) wide rows; more are a
//! nearly dense pattern, whose rows are recognised dense or end one probe per column. When
//! more than that many wide rows with known dependencies are half the rows, every row is
//! about as wide as the others: none is left out of the coloring from then on (`level.rs`,
//! `wide_are_most`), since left out none would be tested and their candidates would keep
//! them wide level after level (random 80 per row at n = 2 x 10^4: five levels of 4 probes
//! and one probe per column, 21718 evaluations; 96 per row had not ended after minutes). Many
//! heavy rows are checked in a coloring of their own (`trace/check.rs`); before it, the check
//! traced every heavy row past two of about n columns again, alone, where it was recognised
//! dense after all, and own probes were limited to two wide rows: random 5 per row with ten
//! rows of 100 spread dependencies cost 239 evaluations with the rows assumed, 6854 with own
//! probes for all ten; now 907 (`steps` example), exact.
//!
//! # Dense rows
//!
//! A dense row changes in every own probe and teaches one dependency in each: the palette
//! would double until the row is recognised dense by its proven dependencies (`split.rs`),
//! about 2 n / 64 probes (445 evaluations instead of 191 at 2 x 10^4 with a dense row among
//! the random ones); a blind dense row is never recognised by dependencies, and took one probe
//! per column. So each wide row also has one column of one of its P blocks, the one of least
//! hash, in a *sample* probe (after the group probes), alone among the row's candidates; the
//! block itself goes to a group probe as the others. A dense row's sample always changes; a
//! row whose dependencies lie apart changes about as often as its density (d / n). The
//! sample was the whole block: such a row holds about as many blocks as twice its
//! dependencies when it turns wide, so a block holds one with odds of a half at most, halving
//! with the blocks' width every level, and two in a row happened (ten rows of 100 among 2 x
//! 10^4 columns under the smallest NaN winning, which leaves more of them unknown by then:
//! one taken for dense, 19892 assumed entries, 915 evaluations with the check; 1035 now,
//! exact). Two rows' samples share a probe only if neither block is a candidate of the other
//! row. A row whose sample changed in
//! `DENSE_STREAK` (2) levels in a row is taken for dense: under a cap it is recognised dense
//! at the end of the step (`split.rs`), its unknown columns kept as assumed entries, and it
//! gets no more own probes. The dense row among random ones costs 8 evaluations more than it
//! did (arrowhead n = 10^6: 71 -> 79). A blind row takes `BLIND_DENSE_STREAK` (3): it turns
//! wide with none of its blocks proven zero (its colored probes taught it nothing), so its
//! sample's odds start higher; with 2, a blind row of 100 spread dependencies among 2 x 10^4
//! columns was taken for dense. An arrowhead whose dense row is blind, n = 2 x 10^4: 20057
//! evaluations (one probe per column) -> 82; a blind row of 100 among tagged random rows,
//! checked: 20172 -> 2320, exact (`a_blind_wide_row_costs_far_less_than_one_hot`). Rows dense
//! at this scale get no own probes from the start. A blind row with 64 candidate blocks or more
//! is now peeled by halving instead, where `peel.rs` says (82 -> 69 and 2320 -> 1356 there).
//!
//! Fingerprint suite (1168 traces, none with a wide row but the arrowhead's dense one):
//! 231762 -> 131916 evaluations: the arrowhead whose payloads are lost 20057 -> 82 at
//! n = 2 x 10^4, 4146 -> 71 at 4099, 1038 -> 63 at 1000, 288 -> 296 at 257 (which ends one
//! probe per column either way); with payloads +3 to +8; random 12 per row at n = 257 without
//! payloads +3.

use super::{Refine, NONE, UNTESTED};
use crate::error::{filled, push, reserve, Result};

/// A wide row whose sample changed in this many levels in a row is taken for dense:
/// it gets no more own probes.
const DENSE_STREAK: u32 = 2;
/// The same for a blind row (`wide.rs` module docs).
const BLIND_DENSE_STREAK: u32 = 3;

/// Own probes are made for at most this many wide rows at a level (module docs).
pub(super) const WIDE_ROWS_MOST: usize = 64;

/// At most this many sample probes a step (rows whose candidates hold each other's samples
/// cannot share one).
pub(super) const SAMPLE_PROBES: usize = 4;

/// The wide rows' own probes of the current step, and how many the next step makes.
#[derive(Debug, Default)]
pub(super) struct Wide {
    /// The own probes of the current step: from `first`, `groups` probes of hashed blocks, then
    /// the sample probes (0 in all: none).
    first: usize,
    groups: usize,
    count: usize,
    /// The rows they test (sorted), and in how many of the group probes told so far each
    /// changed.
    rows: Vec<u32>,
    changes: Vec<u32>,
    /// The sample probes' rows: (probe, row).
    sampled: Vec<(u32, u32)>,
    /// Per row ever sampled (sorted by row): the levels in a row its sample changed, and how
    /// many take it for dense.
    streaks: Vec<(u32, u32, u32)>,
}

impl Wide {
    /// Notes what own probe `k` (if it is one) showed: which wide rows changed in it.
    pub(super) fn tell(&mut self, k: usize, baseline: &[f64], y: &[f64]) {
        if k < self.first || k >= self.first + self.count {
            return;
        }
        let changed = |i: u32| {
            let (b, v) = (baseline[i as usize], y[i as usize]);
            b.is_finite() && b.to_bits() != v.to_bits()
        };
        if k < self.first + self.groups {
            for (&i, c) in self.rows.iter().zip(&mut self.changes) {
                *c += u32::from(changed(i));
            }
            return;
        }
        for &(_, i) in self.sampled.iter().filter(|s| s.0 as usize == k) {
            if let Ok(at) = self.streaks.binary_search_by_key(&i, |s| s.0) {
                self.streaks[at].1 = match changed(i) {
                    true => self.streaks[at].1 + 1,
                    false => 0,
                };
            }
        }
    }

    /// The group probes the next step may make: twice the most group probes of the step just
    /// told that one wide row changed in, at least one; two when that step made none.
    pub(super) fn palette(&self) -> usize {
        match self.groups {
            0 => 2,
            _ => (2 * self.changes.iter().max().copied().unwrap_or(0) as usize).max(1),
        }
    }

    /// Ends the step's own probes: the next step has none unless it makes them.
    pub(super) fn end_step(&mut self) {
        (self.first, self.groups, self.count) = (0, 0, 0);
        self.rows.clear();
        self.changes.clear();
        self.sampled.clear();
    }

    /// Whether row `i`'s samples changed in `DENSE_STREAK` levels in a row: it is taken for
    /// dense.
    pub(super) fn dense(&self, i: u32) -> bool {
        (self.streaks.binary_search_by_key(&i, |s| s.0))
            .is_ok_and(|at| self.streaks[at].1 >= self.streaks[at].2)
    }

    /// Keeps a streak for row `i` (0 when new; `blind`: it has no known dependency).
    fn track(&mut self, i: u32, blind: bool) -> Result<()> {
        if let Err(at) = self.streaks.binary_search_by_key(&i, |s| s.0) {
            reserve(&mut self.streaks, 1, "rows")?;
            let need = match blind {
                true => BLIND_DENSE_STREAK,
                false => DENSE_STREAK,
            };
            self.streaks.insert(at, (i, 0, need));
        }
        Ok(())
    }
}

/// A hash of block `b` at level `shift`: which group probe holds it, and which of a row's
/// blocks is its sample. Multiplicative, so blocks side by side (a row's dependencies close
/// together) fall in different probes.
fn hash(b: u32, shift: u32) -> u64 {
    (u64::from(b) ^ (u64::from(shift) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32
}

impl Refine {
    /// Whether block `b` is a candidate of row `i`.
    fn holds(&self, i: u32, b: u32) -> bool {
        let i = i as usize;
        self.cand_idx[self.cand_ptr[i]..self.cand_ptr[i + 1]]
            .binary_search(&b)
            .is_ok()
    }

    /// The column of block `b` at level `shift` that a sample of it holds, picked by the
    /// block's hash (module docs).
    fn sample_column(&self, b: u32, shift: u32) -> u32 {
        let (s, e) = self.block_range(b, shift);
        s + ((hash(b, shift) >> 8) % u64::from(e - s)) as u32
    }

    /// Gives the wide `rows` (sorted) probes of their own after the coloring (module docs):
    /// each of their P blocks that no colored probe tests (its word `UNTESTED`; a blind row's
    /// every one), and that is no Q block of a wide row, goes to one of at most `palette` group
    /// probes, and one column of one of them per row to a sample probe (after the groups); the
    /// probes are numbered from `first`, and the blocks' words say which group probe tests
    /// them. Rows taken for dense get none. Returns the own probes' columns
    /// (none empty), to follow the colored ones.
    pub(super) fn own_probes(
        &mut self,
        mut rows: Vec<u32>,
        nblocks: usize,
        first: usize,
        palette: usize,
    ) -> Result<Vec<Vec<u32>>> {
        rows.retain(|&i| !self.wide.dense(i));
        if rows.is_empty() || palette == 0 {
            return Ok(Vec::new());
        }
        let shift = self.shift;
        // The wide rows' Q blocks: no own probe holds one.
        let mut group = filled(NONE, nblocks, "block groups")?;
        const Q: u32 = NONE - 1;
        for &i in &rows {
            for &d in self.deps(i as usize) {
                group[(d >> shift) as usize] = Q;
            }
        }
        // A row's P blocks for own probes: those no colored probe tests; a blind row's all (its
        // colored probes, a few for all its blocks, teach it nothing).
        let untested = |r: &Refine, e: usize, blind: bool, group: &[u32]| {
            (blind || r.cand_probe[e] == UNTESTED) && group[r.cand_idx[e] as usize] != Q
        };
        // Samples: a row's untested P block of least hash (of two at least), alone among the
        // row's candidates in its sample probe: no other row's sample there is one of them, and
        // its block is none of theirs. Group `palette + j` is sample probe j. The probe holds
        // one column of the block (`sample_column`), and the block goes to a group probe.
        let mut probes: Vec<Vec<(u32, u32)>> = filled(Vec::new(), SAMPLE_PROBES, "probes")?;
        for &i in &rows {
            let range = self.cand_ptr[i as usize]..self.cand_ptr[i as usize + 1];
            let blind = self.deps(i as usize).is_empty();
            let open = || range.clone().filter(|&e| untested(self, e, blind, &group));
            if open().nth(1).is_none() {
                continue;
            }
            let least = open().min_by_key(|&e| hash(self.cand_idx[e], shift));
            let b = self.cand_idx[least.expect("two open blocks")];
            let apart = |p: &Vec<(u32, u32)>| {
                p.iter()
                    .all(|&(r, c)| !self.holds(i, c) && !self.holds(r, b))
            };
            if let Some(j) = probes.iter().position(apart) {
                reserve(&mut probes[j], 1, "samples")?;
                probes[j].push((i, b));
            }
        }
        // The other untested P blocks: their group (made dense below).
        let mut used = filled(false, palette + SAMPLE_PROBES, "probes")?;
        for (j, p) in probes.iter().enumerate() {
            used[palette + j] = !p.is_empty();
        }
        for &i in &rows {
            let blind = self.deps(i as usize).is_empty();
            for e in self.cand_ptr[i as usize]..self.cand_ptr[i as usize + 1] {
                let b = self.cand_idx[e] as usize;
                if untested(self, e, blind, &group) && group[b] == NONE {
                    let g = (hash(b as u32, shift) % palette as u64) as usize;
                    (group[b], used[g]) = (g as u32, true);
                }
            }
        }
        // The groups that hold a block, numbered from `first` (the samples last).
        let mut number = filled(NONE, palette + SAMPLE_PROBES, "probes")?;
        let mut count = 0u32;
        for (g, _) in used.iter().enumerate().filter(|(_, &u)| u) {
            number[g] = first as u32 + count;
            count += 1;
        }
        let groups = used[..palette].iter().filter(|&&u| u).count();
        let mut cols: Vec<Vec<u32>> = filled(Vec::new(), count as usize, "probes")?;
        for (b, &g) in group.iter().enumerate() {
            if g < Q {
                let (s, e) = self.block_range(b as u32, shift);
                let class = &mut cols[(number[g as usize] - first as u32) as usize];
                reserve(class, (e - s) as usize, "probe columns")?;
                class.extend(s..e);
            }
        }
        for (j, p) in probes.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
            let class = &mut cols[(number[palette + j] - first as u32) as usize];
            reserve(class, p.len(), "probe columns")?;
            class.extend(p.iter().map(|&(_, b)| self.sample_column(b, shift)));
            class.sort_unstable();
        }
        for &i in &rows {
            let blind = self.deps(i as usize).is_empty();
            for e in self.cand_ptr[i as usize]..self.cand_ptr[i as usize + 1] {
                let g = group[self.cand_idx[e] as usize];
                if (blind || self.cand_probe[e] == UNTESTED) && g < Q {
                    self.cand_probe[e] = number[g as usize];
                }
            }
        }
        let mut sampled = Vec::new();
        for (j, p) in probes.iter().enumerate() {
            for &(i, _) in p {
                self.wide.track(i, self.deps(i as usize).is_empty())?;
                push(&mut sampled, (number[palette + j], i), "samples")?;
            }
        }
        self.wide.changes = filled(0, rows.len(), "rows")?;
        (self.wide.first, self.wide.groups) = (first, groups);
        self.wide.count = count as usize;
        (self.wide.rows, self.wide.sampled) = (rows, sampled);
        Ok(cols)
    }
}
