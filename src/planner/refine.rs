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

/// Steps with at least this many probes that compress nothing switch to one probe per column.
const MIN_BLOCKS_FOR_DENSE_TEST: usize = 8;

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
    /// (row, probe) pairs of the current step whose output changed, for rows with a candidate in
    /// that probe.
    hits: Vec<(u32, u32)>,
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
            hits: Vec::new(),
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
                self.hits.sort_unstable();
                let leaf = self.shift == 0;
                let mut w = 0;
                let mut ptr = 0;
                for i in 0..self.m {
                    let (a, b) = (self.cand_ptr[i], self.cand_ptr[i + 1]);
                    self.cand_ptr[i] = ptr;
                    for e in a..b {
                        let c = self.cand_probe[e];
                        let keep = if c == NONE || !self.told[c as usize] {
                            true
                        } else if self.hits.binary_search(&(i as u32, c)).is_ok() {
                            if leaf {
                                self.new_deps.push((i as u32, self.cand_idx[e]));
                                false
                            } else {
                                true
                            }
                        } else {
                            false
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
                self.hits.clear();
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
    /// and returns the probes; or switches to one-hot when refining gains nothing. Returns
    /// `None` when this level has nothing probeable.
    fn plan_level(&mut self) -> Result<Option<Vec<Probe>>> {
        let shift = self.shift;
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

        // Pass 2: each such row's blocks K_i (candidates and blocks of its dependencies) among
        // the probed blocks, as CSR over rows_with_probe.
        let mut k_ptr = Vec::with_capacity(rows_with_probe.len() + 1);
        k_ptr.push(0usize);
        let mut k_idx: Vec<u32> = Vec::new();
        let mut lower_bound = 0;
        let mut work: u64 = 0;
        for &i in &rows_with_probe {
            let i = i as usize;
            let cands = &self.cand_idx[self.cand_ptr[i]..self.cand_ptr[i + 1]];
            let dep_blocks = self.deps(i).iter().map(|&d| d >> shift);
            let start = k_idx.len();
            merge_sorted_unique(cands.iter().copied(), dep_blocks, |b| {
                if probed[b as usize] {
                    k_idx.push(b);
                }
            });
            let len = k_idx.len() - start;
            lower_bound = lower_bound.max(len);
            work += (len as u64) * (len as u64);
            k_ptr.push(k_idx.len());
        }
        let work_limit = 64 * (k_idx.len() as u64) + 10_000_000;
        if (shift > 0 && 2 * lower_bound >= unknown_cols) || work > work_limit {
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
        for r in 0..rows_with_probe.len() {
            for &b in &k_idx[k_ptr[r]..k_ptr[r + 1]] {
                t_idx[next[b as usize]] = r as u32;
                next[b as usize] += 1;
            }
        }
        drop(next);

        // Greedy partial distance-2 coloring of the probed blocks, natural order.
        let mut color = vec![NONE; nblocks];
        let mut stamp: Vec<u32> = Vec::new();
        let mut colors = 0usize;
        for b in probed.iter_ones() {
            let mark = b as u32;
            for &r in &t_idx[t_ptr[b]..t_ptr[b + 1]] {
                let r = r as usize;
                for &w in &k_idx[k_ptr[r]..k_ptr[r + 1]] {
                    let c = color[w as usize];
                    if c != NONE {
                        stamp[c as usize] = mark;
                    }
                }
            }
            let c = stamp.iter().position(|&s| s != mark).unwrap_or(stamp.len());
            if c == stamp.len() {
                stamp.push(NONE);
            }
            color[b] = c as u32;
            colors = colors.max(c + 1);
        }
        drop((t_ptr, t_idx, k_ptr, k_idx));

        let probed_blocks = probed.count_ones();
        if shift > 0
            && (2 * colors >= unknown_cols
                || (colors == probed_blocks && probed_blocks >= MIN_BLOCKS_FOR_DENSE_TEST))
        {
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
        let mode = self.mode;
        let (new_deps, hits) = (&mut self.new_deps, &mut self.hits);
        let (cand_ptr, cand_probe) = (&self.cand_ptr, &self.cand_probe);
        let via_float = probe.observe(&self.baseline, y, |i, hit| match mode {
            Mode::OneHot => new_deps.push((i, probe.cols()[0])),
            _ => {
                if let Hit::Dep(j) = hit {
                    new_deps.push((i, j));
                }
                let row = &cand_probe[cand_ptr[i as usize]..cand_ptr[i as usize + 1]];
                if row.contains(&(k as u32)) {
                    hits.push((i, k as u32));
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
