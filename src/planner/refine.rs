//! Payload-tagged tracing, coarse to fine over contiguous blocks of inputs.
//!
//! # State
//!
//! For every traceable row `i` the planner keeps the trinary knowledge of NaN-propagation
//! tracing, compressed:
//! * `deps(i)`: columns proven to reach `y_i` (a decoded tag, or a hit when `i` had a single
//!   candidate in the probe at the finest level);
//! * `cand(i)`: *candidate blocks* at the current level: blocks of `2^s` adjacent columns in
//!   which every column that is not in `deps(i)` is still unknown for row `i`;
//! * every other column is proven zero for row `i`.
//!
//! # A step
//!
//! A candidate block `B` of row `i` is *probeable* when it holds no known dependency of `i`: a
//! probe containing a known dependency turns `y_i` NaN whatever else it holds, so it can prove
//! nothing for row `i` (shadowing). The planner colors the probeable blocks so that, for every
//! row with a probeable candidate, at most one of its blocks (candidates and blocks holding its
//! dependencies) lands in each color: a partial distance-2 coloring of the bipartite graph
//! rows x blocks, greedy in natural order. Each color class is one probe, and all of them form
//! one step, which a parallel driver can run at once. For row `i` and its probeable candidate
//! `B` with color `c`, the probe `c` contains no other block of row `i` that could reach it, so:
//! * `y_i` unchanged: every column of `B` is zero for `i`; `B` leaves `cand(i)`;
//! * `y_i` carries the tag of column `j`: `(i, j)` is proven (any decoded tag of the probe is a
//!   proof, for any row); `B` stays a candidate, minus `j`;
//! * anything else: `B` stays a candidate.
//!
//! Then every candidate block is split in two, dropping halves with no unknown column left, and
//! the next level starts. At block size 1 (the last level) every candidate is probeable and a
//! single column, so the coloring is an exact check of a structurally orthogonal grouping: a
//! changed `y_i` proves `(i, j)`, an unchanged one proves the zero. Everything is resolved.
//!
//! # Termination and cost
//!
//! Levels run from one block holding all n columns down to single columns: at most
//! `ceil(log2 n) + 1` steps, each of at most (number of blocks) probes, so it always ends. On a
//! banded pattern of bandwidth w, a row's blocks at any level are the few blocks overlapping its
//! band, the conflict graph of blocks is itself banded and greedy coloring needs about
//! `2 + w / 2^s` colors per level: O(w log n) evaluations in all. On patterns without locality
//! (random sparse, dense) coarse blocks conflict with every other block and nothing is gained;
//! the planner notices (a step whose coloring compresses nothing, or whose lower bound, the most
//! blocks one row holds, reaches half the unknown columns) and finishes with one probe per
//! remaining column, so it costs at most a few evaluations more than one-hot.
//!
//! # Memory and time
//!
//! Per step O(nnz + n + m + sum_i |K_i|) memory, where `K_i` is row `i`'s blocks; coloring
//! costs sum_i |K_i|^2, which is kept in bounds by falling back to one probe per column when it
//! would be large (rows with many unknown blocks: then so many probes are needed anyway).

use super::Planner;
use crate::error::{reserve, Result};
use crate::pattern::{EntryKind, Pattern, PatternBuilder};
use crate::probe::{Hit, Probe};
use bitvec::prelude::*;

const NONE: u32 = u32::MAX;

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

    /// Merges `new_deps` into the dependency CSR (sorted, distinct per row).
    fn merge_deps(&mut self) -> Result<()> {
        if self.new_deps.is_empty() {
            return Ok(());
        }
        let m = self.m;
        let mut ptr = vec![0usize; m + 1];
        for i in 0..m {
            ptr[i + 1] = self.dep_ptr[i + 1] - self.dep_ptr[i];
        }
        for &(i, _) in &self.new_deps {
            ptr[i as usize + 1] += 1;
        }
        for i in 0..m {
            ptr[i + 1] += ptr[i];
        }
        let mut idx = Vec::new();
        reserve(&mut idx, ptr[m], "dependencies")?;
        idx.resize(ptr[m], 0);
        let mut next: Vec<usize> = ptr[..m].to_vec();
        for i in 0..m {
            for &j in self.deps(i) {
                idx[next[i]] = j;
                next[i] += 1;
            }
        }
        for &(i, j) in &self.new_deps {
            idx[next[i as usize]] = j;
            next[i as usize] += 1;
        }
        drop(next);
        // Sort and deduplicate each row, compacting in place.
        let mut w = 0;
        let mut out_ptr = vec![0usize; m + 1];
        for i in 0..m {
            let row = &mut idx[ptr[i]..ptr[i + 1]];
            row.sort_unstable();
            let mut last = None;
            for r in ptr[i]..ptr[i + 1] {
                let v = idx[r];
                if last != Some(v) {
                    idx[w] = v;
                    w += 1;
                    last = Some(v);
                }
            }
            out_ptr[i + 1] = w;
        }
        idx.truncate(w);
        self.dep_ptr = out_ptr;
        self.dep_idx = idx;
        self.new_deps = Vec::new();
        Ok(())
    }

    /// Moves to the next level: every candidate block is split in two, keeping the halves that
    /// still hold an unknown column. At the finest level nothing is left to split.
    fn split(&mut self) -> Result<()> {
        if self.shift == 0 {
            self.cand_ptr.iter_mut().for_each(|p| *p = 0);
            self.cand_idx.clear();
            self.cand_probe.clear();
            return Ok(());
        }
        let s = self.shift - 1;
        let mut ptr = vec![0usize; self.m + 1];
        let mut idx = Vec::new();
        reserve(&mut idx, self.cand_idx.len() * 2, "candidate blocks")?;
        for i in 0..self.m {
            let deps = self.deps(i);
            for &b in &self.cand_idx[self.cand_ptr[i]..self.cand_ptr[i + 1]] {
                for child in [2 * b, 2 * b + 1] {
                    if (child as u64) << s >= self.n as u64 {
                        continue;
                    }
                    let (start, end) = self.block_range(child, s);
                    if Self::count_in(deps, start, end) < (end - start) as usize {
                        idx.push(child);
                    }
                }
            }
            ptr[i + 1] = idx.len();
        }
        self.shift = s;
        self.cand_ptr = ptr;
        self.cand_probe = vec![NONE; idx.len()];
        self.cand_idx = idx;
        Ok(())
    }

    /// Plans the step at the current level: marks probeable candidates, colors their blocks,
    /// and returns the probes; or switches to one probe per column when refining gains
    /// nothing. Returns `None` when this level has nothing probeable.
    fn plan_level(&mut self) -> Result<Option<Vec<Probe>>> {
        let shift = self.shift;
        let leaf = shift == 0;
        let nblocks = (self.n as u64).div_ceil(1u64 << shift) as usize;
        let mut probed = bitvec![0; nblocks];
        let mut is_cand = bitvec![0; nblocks];
        // Pass 1: which candidates are probeable (hold no known dependency).
        let mut rows_with_probe = Vec::new();
        for i in 0..self.m {
            let mut any = false;
            for e in self.cand_ptr[i]..self.cand_ptr[i + 1] {
                let b = self.cand_idx[e];
                is_cand.set(b as usize, true);
                let (start, end) = self.block_range(b, shift);
                if Self::count_in(self.deps(i), start, end) == 0 {
                    self.cand_probe[e] = 0; // probeable; its color is set below
                    probed.set(b as usize, true);
                    any = true;
                } else {
                    self.cand_probe[e] = NONE;
                }
            }
            if any {
                rows_with_probe.push(i as u32);
            }
        }
        if rows_with_probe.is_empty() {
            return Ok(None);
        }
        let unknown_cols: usize = is_cand
            .iter_ones()
            .map(|b| {
                let (s, e) = self.block_range(b as u32, shift);
                (e - s) as usize
            })
            .sum();
        drop(is_cand);

        // Pass 2: each such row's probed blocks K_i, each flagged P (a probeable candidate) or
        // Q (holds a known dependency), as CSR over rows_with_probe.
        let mut k_ptr = Vec::with_capacity(rows_with_probe.len() + 1);
        k_ptr.push(0usize);
        let mut k_idx: Vec<u32> = Vec::new();
        let mut k_is_p: BitVec = BitVec::new();
        let mut max_q = 0;
        let mut work: u64 = 0;
        for &i in &rows_with_probe {
            let i = i as usize;
            let start = k_idx.len();
            let cands = self.cand_ptr[i]..self.cand_ptr[i + 1];
            let p_blocks = cands
                .filter(|&e| self.cand_probe[e] != NONE)
                .map(|e| self.cand_idx[e]);
            let mut q_blocks: Vec<u32> = self.deps(i).iter().map(|&d| d >> shift).collect();
            q_blocks.dedup();
            let q_blocks = q_blocks.into_iter().filter(|&b| probed[b as usize]);
            // P and Q are disjoint: a probeable block holds no dependency of the row.
            merge_sorted_unique(p_blocks.map(|b| 2 * b + 1), q_blocks.map(|b| 2 * b), |t| {
                k_idx.push(t >> 1);
                k_is_p.push(t & 1 == 1);
            });
            let len = k_idx.len() - start;
            max_q = max_q.max(k_is_p[start..].count_zeros());
            work += (len as u64) * (len as u64);
            k_ptr.push(k_idx.len());
        }
        let work_limit = 64 * (k_idx.len() as u64) + 10_000_000;
        if work > work_limit {
            return Ok(Some(self.start_onehot()?));
        }

        // Transpose: for each block, the K-rows that hold it.
        let mut t_ptr = vec![0usize; nblocks + 1];
        for &b in &k_idx {
            t_ptr[b as usize + 1] += 1;
        }
        for b in 0..nblocks {
            t_ptr[b + 1] += t_ptr[b];
        }
        let mut t_idx = vec![0u32; k_idx.len()];
        let mut next = t_ptr.clone();
        for (t, &b) in k_idx.iter().enumerate() {
            // The entry itself, so that its row and its P/Q flag are known.
            t_idx[next[b as usize]] = t as u32;
            next[b as usize] += 1;
        }
        drop(next);
        let k_row: Vec<u32> = (0..rows_with_probe.len())
            .flat_map(|r| std::iter::repeat_n(r as u32, k_ptr[r + 1] - k_ptr[r]))
            .collect();

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
        for b in probed.iter_ones() {
            let mark = b as u32;
            for &t in &t_idx[t_ptr[b]..t_ptr[b + 1]] {
                let (t, r) = (t as usize, k_row[t as usize] as usize);
                let b_is_p = k_is_p[t];
                for u in k_ptr[r]..k_ptr[r + 1] {
                    let c = color[k_idx[u] as usize];
                    if c == NONE {
                        continue;
                    }
                    let c = c as usize;
                    if stamp[c] != mark {
                        (stamp[c], hard[c], soft[c]) = (mark, 0, 0);
                    }
                    match (b_is_p, k_is_p[u]) {
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
        drop((t_ptr, t_idx, k_ptr, k_idx, k_is_p, k_row));

        // Dense at this scale: the coloring compresses nothing and the last step's tested
        // candidates nearly all changed. Refining further would cost more than one probe per
        // remaining column.
        let probed_blocks = probed.count_ones();
        // Dense at this scale: some row already has known dependencies in at least 3/4 of the
        // blocks, or the coloring compresses nothing while nearly every tested block changed.
        let dense = probed_blocks >= MIN_BLOCKS_FOR_DENSE_TEST
            && (4 * max_q >= 3 * probed_blocks
                || (colors == probed_blocks && self.last_hit_rate >= 0.9));
        if std::env::var_os("NANPROP_DEBUG").is_some() {
            eprintln!("shift {shift} blocks {probed_blocks} colors {colors} cap {cap} max_q {max_q} U {unknown_cols} hit_rate {:.2} spent {}", self.last_hit_rate, self.spent);
        }
        let slack = SPEND_SLACK.min(self.n / 4);
        let over_allowance = self.spent + colors > unknown_cols / SPEND_DIVISOR + slack;
        if (leaf && colors >= unknown_cols) || (!leaf && (dense || over_allowance)) {
            return Ok(Some(self.start_onehot()?));
        }

        // The probes: the columns of each color class, in increasing order.
        let mut cols: Vec<Vec<u32>> = vec![Vec::new(); colors];
        for b in probed.iter_ones() {
            let (s, e) = self.block_range(b as u32, shift);
            cols[color[b] as usize].extend(s..e);
        }
        for e in 0..self.cand_idx.len() {
            if self.cand_probe[e] != NONE {
                self.cand_probe[e] = color[self.cand_idx[e] as usize];
            }
        }
        self.cand_hit = bitvec![0; self.cand_idx.len()];
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
fn merge_sorted_unique(
    a: impl Iterator<Item = u32>,
    b: impl Iterator<Item = u32>,
    mut f: impl FnMut(u32),
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
            Mode::Refining => {
                self.absorb();
                self.merge_deps()?;
                self.split()?;
            }
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
            self.split()?;
        }
    }

    fn tell(&mut self, k: usize, probe: &Probe, y: &[f64]) -> usize {
        self.told.set(k, true);
        self.spent += 1;
        let mode = self.mode;
        let (new_deps, cand_hit) = (&mut self.new_deps, &mut self.cand_hit);
        let (cand_ptr, cand_probe) = (&self.cand_ptr, &self.cand_probe);
        let via_float = probe.observe(&self.baseline, y, |i, hit| match mode {
            Mode::OneHot => new_deps.push((i, probe.cols()[0])),
            _ => {
                if let Hit::Dep(j) = hit {
                    new_deps.push((i, j));
                }
                let start = cand_ptr[i as usize];
                let row = &cand_probe[start..cand_ptr[i as usize + 1]];
                for (e, _) in row.iter().enumerate().filter(|(_, &c)| c == k as u32) {
                    cand_hit.set(start + e, true);
                }
            }
        });
        if mode == Mode::OneHot {
            self.onehot_told.set(probe.cols()[0] as usize, true);
        }
        via_float
    }

    fn finish(mut self: Box<Self>, mut builder: PatternBuilder) -> Result<(Pattern, usize)> {
        self.absorb();
        self.merge_deps()?;
        let onehot = self.mode == Mode::OneHot;
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
                        row.push((*d.next().unwrap(), EntryKind::Traced))
                    }
                    (Some(_), Some(_)) => row.push((*p.next().unwrap(), EntryKind::Unresolved)),
                    (Some(_), None) => row.push((*d.next().unwrap(), EntryKind::Traced)),
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
