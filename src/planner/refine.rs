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
//! # Falling back to one probe per column
//!
//! Refining does not pay on dense rows (each probe proves at most one dependency per row). The
//! planner finishes with one probe per still-unknown column when:
//! * a row already has known dependencies in at least 3/4 of at least 8 probed blocks, or the
//!   coloring compresses nothing while nearly all tested blocks changed (dense at this scale);
//! * coarse steps would spend more than `U / 8 + min(16, n / 4)` probes in all, U being the
//!   columns still unknown for some row. This bounds every trace by
//!   `n + n / 8 + min(16, n / 4) + 1` evaluations, whatever the pattern;
//! * the last level's coloring would need at least as many probes as there are unknown columns,
//!   or the coloring work (the sum over rows of the square of their block count) is large.
//!
//! # Memory and time
//!
//! The state is O(nnz + m) (candidates and dependencies, CSR) plus O(n) per step; one step costs
//! O(m + n + sum_i |K_i|^2), `K_i` being row `i`'s blocks, which is a small constant per row on
//! sparse patterns: tridiagonal n = m = 10^6 takes about 2 s of library time and 170 MB.

use super::Planner;
use crate::error::{reserve, Result};
use crate::pattern::{EntryKind, Pattern, PatternBuilder};
use crate::probe::{Hit, Probe};
use bitvec::prelude::*;

const NONE: u32 = u32::MAX;

/// Each level splits a block into `2^BRANCH_BITS` blocks.
const BRANCH_BITS: u32 = 1;

/// Marks a block as a row's probeable candidate (P) in the block lists of a step.
const P_FLAG: u32 = 1 << 31;

/// The dense test looks at steps with at least this many blocks.
const MIN_BLOCKS_FOR_DENSE_TEST: usize = 8;

/// Coarse steps may spend at most `U / SPEND_DIVISOR + min(SPEND_SLACK, n / 4)` probes in all,
/// U being the columns still unknown for some row; past that the planner finishes with one
/// probe per column, so it never costs more than `n + n / SPEND_DIVISOR + SPEND_SLACK + 1`
/// evaluations.
const SPEND_DIVISOR: usize = 8;
const SPEND_SLACK: usize = 16;

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
    baseline: Vec<f64>,
    mode: Mode,
    /// Block size is `1 << shift` at the current level.
    shift: u32,
    /// Known dependencies: CSR, sorted per row.
    dep_ptr: Vec<usize>,
    dep_idx: Vec<u32>,
    /// Dependencies found in the current step, merged into the CSR when it ends.
    new_deps: Vec<(u32, u32)>,
    /// Candidate blocks per row at the current level: CSR, sorted per row.
    cand_ptr: Vec<usize>,
    cand_idx: Vec<u32>,
    /// For each candidate entry: the probe of the current step that tests it, or `NONE`.
    cand_probe: Vec<u32>,
    /// For each candidate entry: whether its row's output changed in the probe testing it.
    cand_hit: BitVec,
    /// For each candidate entry: whether that change was seen only by verification.
    cand_pert: BitVec,
    /// Dependencies proven only by verification (kind [`EntryKind::Perturbation`]).
    pert_deps: Vec<(u32, u32)>,
    /// Probes told so far.
    spent: usize,
    /// Of the candidates tested in the last step, the fraction whose output changed (1.0 before
    /// any step): near 1 means the pattern is dense at that scale.
    last_hit_rate: f64,
    /// Which probes of the current step were told.
    told: BitVec,
    /// In one-hot mode: the column of each probe, and which columns were told.
    onehot_cols: Vec<u32>,
    onehot_told: BitVec,
}

impl Refine {
    /// A planner for n inputs and the given baseline outputs (m = `baseline.len()`). Rows whose
    /// baseline is not finite are not traced.
    pub fn new(n: usize, baseline: Vec<f64>) -> Self {
        let m = baseline.len();
        // Level 0: one block of all n columns, a candidate of every traceable row.
        let shift = usize::BITS - (n.max(1) - 1).leading_zeros();
        let mut cand_ptr = vec![0usize; m + 1];
        let mut cand_idx = Vec::new();
        for i in 0..m {
            if baseline[i].is_finite() {
                cand_idx.push(0u32);
            }
            cand_ptr[i + 1] = cand_idx.len();
        }
        Refine {
            n,
            m,
            baseline,
            mode: Mode::Start,
            shift,
            dep_ptr: vec![0; m + 1],
            dep_idx: Vec::new(),
            new_deps: Vec::new(),
            cand_probe: vec![NONE; cand_idx.len()],
            cand_ptr,
            cand_idx,
            cand_hit: BitVec::new(),
            cand_pert: BitVec::new(),
            pert_deps: Vec::new(),
            last_hit_rate: 1.0,
            spent: 0,

            told: BitVec::new(),
            onehot_cols: Vec::new(),
            onehot_told: BitVec::new(),
        }
    }

    fn deps(&self, i: usize) -> &[u32] {
        &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]]
    }

    fn block_range(&self, b: u32, shift: u32) -> (u32, u32) {
        let start = (b as u64) << shift;
        let end = ((b as u64 + 1) << shift).min(self.n as u64);
        (start as u32, end as u32)
    }

    /// Number of entries of the sorted slice `deps` in `[start, end)`.
    fn count_in(deps: &[u32], start: u32, end: u32) -> usize {
        let a = deps.partition_point(|&d| d < start);
        let b = deps.partition_point(|&d| d < end);
        b - a
    }

    /// Applies the outcomes of the told probes of the current step: drops candidates proven
    /// zero, and at the finest level turns changed outputs into dependencies.
    fn absorb(&mut self) {
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
                        let c = self.cand_probe[e];
                        let keep = if c == NONE || !self.told[c as usize] {
                            true
                        } else {
                            tested += 1;
                            if self.cand_hit[e] {
                                changed += 1;
                                if leaf {
                                    // Alone among the row's blocks in its probe: proven.
                                    self.new_deps.push((i as u32, self.cand_idx[e]));
                                    if self.cand_pert[e] {
                                        self.pert_deps.push((i as u32, self.cand_idx[e]));
                                    }
                                }
                                !leaf
                            } else {
                                false // unchanged: every column of the block is zero for row i
                            }
                        };
                        if keep {
                            self.cand_idx[w] = self.cand_idx[e];
                            self.cand_probe[w] = NONE;
                            w += 1;
                        }
                    }
                    ptr = w;
                }
                self.cand_ptr[self.m] = w;
                self.cand_idx.truncate(w);
                self.cand_probe.truncate(w);
                self.cand_hit = bitvec![0; w];
                self.cand_pert = bitvec![0; w];
                if tested > 0 {
                    self.last_hit_rate = changed as f64 / tested as f64;
                }
            }
            Mode::OneHot => {
                if self.onehot_told.count_ones() == self.onehot_cols.len() {
                    self.cand_ptr.iter_mut().for_each(|p| *p = 0);
                    self.cand_idx.clear();
                    self.cand_probe.clear();
                }
            }
            Mode::Start | Mode::Done => {}
        }
    }

    /// Merges `new_deps` into the dependency CSR (sorted, distinct per row): one sort of the
    /// new pairs and one merging pass, O(nnz + m + k log k) for k new pairs.
    fn merge_deps(&mut self) -> Result<()> {
        if self.new_deps.is_empty() {
            return Ok(());
        }
        let mut new = std::mem::take(&mut self.new_deps);
        new.sort_unstable();
        new.dedup();
        let m = self.m;
        let mut idx = Vec::new();
        reserve(&mut idx, self.dep_idx.len() + new.len(), "dependencies")?;
        let mut ptr = Vec::new();
        reserve(&mut ptr, m + 1, "dependency pointers")?;
        ptr.push(0);
        let mut k = 0;
        for i in 0..m {
            let old = &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]];
            let start = k;
            while k < new.len() && new[k].0 as usize == i {
                k += 1;
            }
            if start == k {
                idx.extend_from_slice(old);
            } else {
                let added = new[start..k].iter().map(|&(_, j)| j);
                merge_sorted_unique(old.iter().copied(), added, |j| idx.push(j));
            }
            ptr.push(idx.len());
        }
        self.dep_ptr = ptr;
        self.dep_idx = idx;
        new.clear();
        self.new_deps = new; // keep the allocation for the next step
        Ok(())
    }

    /// Ends a step and moves to the next level, in one pass over the candidates: drops those
    /// the step proved zero and splits the others, keeping the halves that still hold an
    /// unknown column (the step's new dependencies are merged first, so a half left with none
    /// goes at once). At the last level everything tested is resolved and nothing is left.
    fn advance(&mut self) -> Result<()> {
        if self.shift == 0 {
            self.absorb();
            self.merge_deps()?;
            self.cand_ptr.iter_mut().for_each(|p| *p = 0);
            self.cand_idx.clear();
            self.cand_probe.clear();
            return Ok(());
        }
        self.merge_deps()?;
        let bits = BRANCH_BITS.min(self.shift);
        let s = self.shift - bits;
        let mut ptr = Vec::new();
        reserve(&mut ptr, self.m + 1, "candidate pointers")?;
        ptr.push(0);
        let mut idx = Vec::new();
        reserve(&mut idx, self.cand_idx.len() << bits, "candidate blocks")?;
        let (mut tested, mut changed) = (0usize, 0usize);
        for i in 0..self.m {
            let deps = &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]];
            for e in self.cand_ptr[i]..self.cand_ptr[i + 1] {
                let c = self.cand_probe[e];
                if c != NONE && self.told[c as usize] {
                    tested += 1;
                    if !self.cand_hit[e] {
                        continue; // unchanged: every column of the block is zero for row i
                    }
                    changed += 1;
                }
                let b = self.cand_idx[e];
                for child in (b << bits)..((b + 1) << bits) {
                    if (child as u64) << s >= self.n as u64 {
                        break;
                    }
                    let (start, end) = self.block_range(child, s);
                    // A block wider than the row's dependency count keeps an unknown column.
                    let width = (end - start) as usize;
                    if width > deps.len() || Self::count_in(deps, start, end) < width {
                        idx.push(child);
                    }
                }
            }
            ptr.push(idx.len());
        }
        if tested > 0 {
            self.last_hit_rate = changed as f64 / tested as f64;
        }
        self.cand_ptr = ptr;
        self.cand_idx = idx;
        self.cand_probe.clear();
        self.cand_probe.resize(self.cand_idx.len(), NONE);
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
        let mut probed = vec![false; nblocks];
        let mut is_cand = vec![false; nblocks];
        // One pass over the rows: which candidates are probeable (hold no known dependency),
        // and each row's blocks K_i, flagged P (a probeable candidate) or Q (holds a known
        // dependency), as CSR over the rows with a probeable candidate. An entry is the block
        // id with the flag in its top bit. Blocks are aligned ranges, so block b holds column
        // d exactly when d >> shift == b, and one merge of the sorted candidates with the
        // sorted dependencies does it all.
        let mut rows_with_probe = Vec::new();
        let mut k_ptr = vec![0usize];
        let mut k_idx: Vec<u32> = Vec::new();
        reserve(
            &mut k_idx,
            self.cand_idx.len() + self.dep_idx.len(),
            "block lists",
        )?;
        let (mut max_q, mut work) = (0usize, 0u64);
        for i in 0..self.m {
            let (a, b) = (self.cand_ptr[i], self.cand_ptr[i + 1]);
            if a == b {
                continue;
            }
            let deps = &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]];
            let start = k_idx.len();
            let (mut d, mut q, mut any_p) = (0, 0, false);
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
                    self.cand_probe[e] = NONE; // holds a known dependency
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
            if !any_p {
                k_idx.truncate(start);
                continue;
            }
            rows_with_probe.push(i as u32);
            k_ptr.push(k_idx.len());
            let len = (k_idx.len() - start) as u64;
            max_q = max_q.max(q);
            work += len * len;
        }
        if rows_with_probe.is_empty() {
            return Ok(None);
        }
        let unknown_cols: usize = (0..nblocks)
            .filter(|&b| is_cand[b])
            .map(|b| {
                let (s, e) = self.block_range(b as u32, shift);
                (e - s) as usize
            })
            .sum();
        drop(is_cand);
        let work_limit = 64 * (k_idx.len() as u64) + 10_000_000;
        if work > work_limit || nblocks > P_FLAG as usize {
            return Ok(Some(self.start_onehot()?));
        }

        // Transpose: for each block, the rows (ordinals in rows_with_probe) that hold it, with
        // the block's P/Q flag for that row in the top bit.
        // Counting sort without a second pointer array: t_ptr[b] counts, then holds the end of
        // block b's list, and filling from the back moves it to the start.
        let mut t_ptr = vec![0usize; nblocks + 1];
        for &b in &k_idx {
            t_ptr[(b & !P_FLAG) as usize] += 1;
        }
        for b in 1..=nblocks {
            t_ptr[b] += t_ptr[b - 1];
        }
        let mut t_idx = vec![0u32; k_idx.len()];
        for r in (0..rows_with_probe.len()).rev() {
            for &b in k_idx[k_ptr[r]..k_ptr[r + 1]].iter().rev() {
                let slot = &mut t_ptr[(b & !P_FLAG) as usize];
                *slot -= 1;
                t_idx[*slot] = r as u32 | (b & P_FLAG);
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
        let mut color = vec![NONE; nblocks];
        let (mut stamp, mut hard, mut soft): (Vec<u32>, Vec<u32>, Vec<u32>) =
            (vec![], vec![], vec![]);
        for b in (0..nblocks).filter(|&b| probed[b]) {
            let mark = b as u32;
            for &t in &t_idx[t_ptr[b]..t_ptr[b + 1]] {
                let (r, b_is_p) = ((t & !P_FLAG) as usize, t & P_FLAG != 0);
                for &u in &k_idx[k_ptr[r]..k_ptr[r + 1]] {
                    let c = color[(u & !P_FLAG) as usize];
                    if c == NONE {
                        continue;
                    }
                    let c = c as usize;
                    if stamp[c] != mark {
                        (stamp[c], hard[c], soft[c]) = (mark, 0, 0);
                    }
                    match (b_is_p, u & P_FLAG != 0) {
                        (true, false) | (false, true) => hard[c] += 1,
                        (true, true) if leaf => hard[c] += 1,
                        (true, true) => soft[c] += 1,
                        (false, false) => {}
                    }
                }
            }
            let cost = |c: usize| {
                if stamp[c] == mark {
                    (hard[c], soft[c])
                } else {
                    (0, 0)
                }
            };
            let best = (0..stamp.len()).min_by_key(|&c| cost(c));
            let c = match best {
                Some(c) if cost(c).0 == 0 || stamp.len() >= cap => c,
                _ => {
                    stamp.push(NONE);
                    hard.push(0);
                    soft.push(0);
                    stamp.len() - 1
                }
            };
            color[b] = c as u32;
        }
        let colors = stamp.len();
        drop((t_ptr, t_idx, k_ptr, k_idx));

        // Dense at this scale: the coloring compresses nothing and the last step's tested
        // candidates nearly all changed. Refining further would cost more than one probe per
        // remaining column.
        let probed_blocks = probed.iter().filter(|&&p| p).count();
        // Dense at this scale: some row already has known dependencies in at least 3/4 of the
        // blocks, or the coloring compresses nothing while nearly every tested block changed.
        let dense = probed_blocks >= MIN_BLOCKS_FOR_DENSE_TEST
            && (4 * max_q >= 3 * probed_blocks
                || (colors == probed_blocks && self.last_hit_rate >= 0.9));
        let slack = SPEND_SLACK.min(self.n / 4);
        let over_allowance = self.spent + colors > unknown_cols / SPEND_DIVISOR + slack;
        if (leaf && colors >= unknown_cols) || (!leaf && (dense || over_allowance)) {
            return Ok(Some(self.start_onehot()?));
        }

        // The probes: the columns of each color class, in increasing order.
        let mut cols: Vec<Vec<u32>> = vec![Vec::new(); colors];
        for b in (0..nblocks).filter(|&b| probed[b]) {
            let (s, e) = self.block_range(b as u32, shift);
            cols[color[b] as usize].extend(s..e);
        }
        for e in 0..self.cand_idx.len() {
            if self.cand_probe[e] != NONE {
                self.cand_probe[e] = color[self.cand_idx[e] as usize];
            }
        }
        self.cand_hit = bitvec![0; self.cand_idx.len()];
        self.cand_pert = bitvec![0; self.cand_idx.len()];
        self.told = bitvec![0; colors];
        Ok(Some(
            cols.into_iter().map(|c| Probe::new(c, self.n)).collect(),
        ))
    }

    /// Switches to one probe per column of the candidate blocks.
    fn start_onehot(&mut self) -> Result<Vec<Probe>> {
        let shift = self.shift;
        let nblocks = (self.n as u64).div_ceil(1u64 << shift) as usize;
        let mut is_cand = bitvec![0; nblocks];
        for &b in &self.cand_idx {
            is_cand.set(b as usize, true);
        }
        let mut cols = Vec::new();
        for b in is_cand.iter_ones() {
            let (s, e) = self.block_range(b as u32, shift);
            reserve(&mut cols, (e - s) as usize, "one-hot probes")?;
            cols.extend(s..e);
        }
        self.cand_probe.iter_mut().for_each(|c| *c = NONE);
        self.mode = Mode::OneHot;
        self.onehot_told = bitvec![0; self.n];
        self.told = bitvec![0; cols.len()];
        let probes = cols.iter().map(|&c| Probe::new(vec![c], self.n)).collect();
        self.onehot_cols = cols;
        Ok(probes)
    }
}

/// Calls `f` on the sorted union of two sorted (nondecreasing) sequences, each value once.
fn merge_sorted_unique<T: Copy + Ord>(
    a: impl Iterator<Item = T>,
    b: impl Iterator<Item = T>,
    mut f: impl FnMut(T),
) {
    let mut a = a.peekable();
    let mut b = b.peekable();
    let mut last = None;
    loop {
        let v = match (a.peek(), b.peek()) {
            (Some(&x), Some(&y)) if x <= y => a.next(),
            (Some(_), Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => break,
        };
        if v != last {
            f(v.unwrap());
            last = v;
        }
    }
}

impl Planner for Refine {
    fn ask(&mut self) -> Result<Vec<Probe>> {
        match self.mode {
            Mode::Done => return Ok(Vec::new()),
            Mode::Start => self.mode = Mode::Refining,
            Mode::Refining => self.advance()?,
            Mode::OneHot => {
                self.absorb();
                self.merge_deps()?;
                self.mode = Mode::Done;
                return Ok(Vec::new());
            }
        }
        loop {
            if self.cand_idx.is_empty() {
                self.mode = Mode::Done;
                return Ok(Vec::new());
            }
            if let Some(probes) = self.plan_level()? {
                return Ok(probes);
            }
            self.advance()?;
        }
    }

    fn tell(&mut self, k: usize, probe: &Probe, y: &[f64], perturbed: &[u32]) -> usize {
        self.told.set(k, true);
        self.spent += 1;
        let mode = self.mode;
        let (new_deps, pert_deps) = (&mut self.new_deps, &mut self.pert_deps);
        let (cand_hit, cand_pert) = (&mut self.cand_hit, &mut self.cand_pert);
        let (cand_ptr, cand_probe) = (&self.cand_ptr, &self.cand_probe);
        let (dep_ptr, dep_idx) = (&self.dep_ptr, &self.dep_idx);
        let via_float = probe.observe(&self.baseline, y, perturbed, |i, hit| match mode {
            Mode::OneHot => {
                new_deps.push((i, probe.cols()[0]));
                if hit == Hit::Perturbed {
                    pert_deps.push((i, probe.cols()[0]));
                }
            }
            _ => {
                if let Hit::Dep(j) = hit {
                    // A probe holding a known dependency of the row re-reports it: skip those.
                    let known = &dep_idx[dep_ptr[i as usize]..dep_ptr[i as usize + 1]];
                    if known.binary_search(&j).is_err() {
                        new_deps.push((i, j));
                    }
                }
                let start = cand_ptr[i as usize];
                let row = &cand_probe[start..cand_ptr[i as usize + 1]];
                for (e, _) in row.iter().enumerate().filter(|(_, &c)| c == k as u32) {
                    cand_hit.set(start + e, true);
                    if hit == Hit::Perturbed {
                        cand_pert.set(start + e, true);
                    }
                }
            }
        });
        if mode == Mode::OneHot {
            self.onehot_told.set(probe.cols()[0] as usize, true);
        }
        via_float
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
            _ => (0..self.m).any(|i| {
                unchanged(i)
                    && self.cand_probe[self.cand_ptr[i]..self.cand_ptr[i + 1]].contains(&(k as u32))
            }),
        }
    }

    fn finish(mut self: Box<Self>, mut builder: PatternBuilder) -> Result<(Pattern, usize)> {
        self.absorb();
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
        let mut unresolved = 0;
        let mut row: Vec<(u32, EntryKind)> = Vec::new();
        for i in 0..self.m {
            row.clear();
            let deps = self.deps(i);
            let mut possible = Vec::new();
            for &b in &self.cand_idx[self.cand_ptr[i]..self.cand_ptr[i + 1]] {
                let (s, e) = self.block_range(b, self.shift);
                for j in s..e {
                    if deps.binary_search(&j).is_err() && !(onehot && self.onehot_told[j as usize])
                    {
                        possible.push(j);
                    }
                }
            }
            unresolved += possible.len();
            let mut d = deps.iter().peekable();
            let mut p = possible.iter().peekable();
            loop {
                match (d.peek(), p.peek()) {
                    (Some(&&x), Some(&&y)) if x < y => {
                        let j = *d.next().unwrap();
                        row.push((j, traced_kind(i, j)))
                    }
                    (Some(_), Some(_)) => row.push((*p.next().unwrap(), EntryKind::Unresolved)),
                    (Some(_), None) => {
                        let j = *d.next().unwrap();
                        row.push((j, traced_kind(i, j)))
                    }
                    (None, Some(_)) => row.push((*p.next().unwrap(), EntryKind::Unresolved)),
                    (None, None) => break,
                }
            }
            if !row.is_empty() {
                builder.push_row(i, row.iter().copied())?;
            }
        }
        Ok((builder.finish()?, unresolved))
    }
}
