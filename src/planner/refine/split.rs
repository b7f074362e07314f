//! Ending a step: what the told probes proved, the step's new dependencies merged into the
//! CSR, and the split into the next level.
//!
//! [`Refine::advance`] is one pass over the rows. A stored row drops the candidates its probes
//! proved zero (unchanged outputs), splits the others into halves (quarters once the rows have
//! settled) that still hold an unknown column (the new dependencies are merged first, so a
//! part left with none goes at once), is
//! recognised dense here when it is, and is parked when its survivors are exactly its
//! dependencies' blocks. A parked row the step showed nothing new of stays parked with no
//! work; one with a hit (or as many dependencies as a dense row) is written back with the
//! words the stored row would have had and goes through the same split (`parked.rs`).
//! [`Refine::absorb`] is the pass of the last level and of one probe per column, where nothing
//! is split: a changed output there is a proof.
//!
//! On two cores a large split runs in two halves of rows at once (`halves.rs`,
//! [`Refine::split_rows`]): each half writes its own rows' entries, parked codes and quiet
//! bits, and keeps its own counts; the halves are joined in row order. Each half makes again
//! the codes of the rows it parked or wrote back and of the rows after them, but the second
//! half's first row, whose code looks at the row before in the other half: that one is made
//! after the join. A merge of many new dependencies runs in two halves too ([`merged_rows`]).

use super::{
    probes_holding, Mode, Refine, BLIND_PEEL_FEW, BLIND_PEEL_FROM, BRANCH_BITS, DENSE_DIVISOR,
    DENSE_MIN, DENSE_MIN_BLOCKS, HIT, NONE, PERT, PROBE, RESTLESS_PART, UNTESTED, WIDE_BRANCH_BITS,
};
use crate::error::{push, reserve, reserve_exact, zero_bits, Result};
use crate::halves::{both, halfway};
use crate::planner::parked::{for_each_block, shared_from, Kind, ALONE, KEPT, STORED};
use bitvec::prelude::*;

/// Row `i`'s hits from `hits[*h]` on (sorted by row, then word) into `probes` (emptied
/// first): their probes without the [`KEPT`] mark, sorted; `h` moves past them.
fn row_probes(hits: &[(u32, u32)], h: &mut usize, i: usize, probes: &mut Vec<u32>) -> Result<()> {
    probes.clear();
    while *h < hits.len() && hits[*h].0 as usize == i {
        push(probes, hits[*h].1 & !KEPT, "probes of a row")?;
        *h += 1;
    }
    // Sorted again: the kept hits came last.
    probes.sort_unstable();
    Ok(())
}

impl Refine {
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
            if deps_in(deps, d, start, end) < (end - start) as usize {
                idx.push(child); // reserved by the caller for every block splitting
            }
        }
    }

    /// Whether the row with known dependencies `deps` and candidate blocks `blocks` (their
    /// words in `words`) is recognised dense at the end of this step (module docs), `s` being
    /// the next level and `(dense_at, leaf_dense_at)` the thresholds the cap leaves, and why.
    /// `(changed_in, q_colors)` is scratch.
    fn recognised_dense(
        &self,
        deps: &[u32],
        (blocks, words): (&[u32], &[u32]),
        s: u32,
        (dense_at, leaf_dense_at): (usize, usize),
        (changed_in, q_colors): (&mut Vec<u32>, &mut Vec<u32>),
    ) -> Result<Dense> {
        // The row's dependency lower bound: its known ones, plus the probes in which it
        // changed while holding no known one's block (each holds one more); and its blocks
        // that hold a known dependency or changed, of all its blocks. A probe holding a known
        // dependency's block turns the row NaN whatever else it holds (shadowing): a change
        // there names nothing new (48 per row at n = 4000 reached a bound of 65 with all 48
        // known, counting such probes).
        let (mut hit, mut unknown) = (0, 0);
        changed_in.clear();
        probes_holding(deps, &self.parked.colors, self.shift, q_colors)?;
        let mut d = 0;
        for (&b, &v) in blocks.iter().zip(words) {
            let c = v & PROBE;
            let (start, end) = self.block_range(b, self.shift);
            let inside = deps_in(deps, &mut d, start, end);
            let known = inside > 0;
            let tested = c != UNTESTED && self.told[c as usize];
            let changed = tested && v & HIT != 0;
            if changed && !known && q_colors.binary_search(&c).is_err() {
                push(changed_in, c, "probes of a row")?;
            }
            hit += usize::from(changed || known);
            if changed || !tested {
                unknown += (end - start) as usize - inside;
            }
        }
        if changed_in.len() > 1 {
            changed_in.sort_unstable();
            changed_in.dedup();
        }
        let lower = deps.len() + changed_in.len();
        let blocks = blocks.len();
        if blocks >= DENSE_MIN_BLOCKS
            && 4 * hit >= 3 * blocks
            && deps.len() >= DENSE_MIN
            && lower >= dense_at
        {
            return Ok(Dense::Shown);
        }
        // Before the last two levels: the row's unknown columns would cost a quarter of what is
        // left, about one probe each.
        Ok(
            match s <= 1 && deps.len() >= DENSE_MIN && unknown >= leaf_dense_at {
                true => Dense::Costly,
                false => Dense::Not,
            },
        )
    }

    /// Applies the outcomes of the told probes of the current step: drops candidates proven
    /// zero, and at the finest level turns changed outputs into dependencies.
    pub(super) fn absorb(&mut self) -> Result<()> {
        match self.mode {
            Mode::Refining => {
                let leaf = self.shift == 0;
                let (mut tested, mut changed) = (0usize, 0usize);
                let (cand_probe, told, quiet) = (&self.cand_probe, &self.told, &self.quiet);
                let (new_deps, pert_deps) = (&mut self.new_deps, &mut self.pert_deps);
                retain_candidates(
                    (&mut self.cand_ptr, &mut self.cand_idx),
                    |i, row, e, block| {
                        let v = cand_probe[e];
                        let c = v & PROBE;
                        if c == UNTESTED || !told[c as usize] {
                            return Ok(true);
                        }
                        tested += 1;
                        // At the last level a quiet row's candidates may share a probe: a
                        // change there proves none of them (a tag proved its column).
                        let shared = || {
                            quiet.get(i).is_some_and(|q| *q)
                                && row.clone().any(|o| o != e && cand_probe[o] & PROBE == c)
                        };
                        if v & HIT == 0 {
                            return Ok(false); // unchanged: every column is zero for row i
                        }
                        changed += 1;
                        if leaf && !shared() {
                            // Alone among the row's blocks in its probe: proven.
                            push(new_deps, (i as u32, block), "dependencies")?;
                            if v & PERT != 0 {
                                push(pert_deps, (i as u32, block), "dependencies")?;
                            }
                            return Ok(false);
                        }
                        Ok(true)
                    },
                )?;
                self.cand_probe.clear();
                self.cand_probe.resize(self.cand_idx.len(), UNTESTED);
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
            Mode::Start | Mode::Peel | Mode::Window | Mode::Done => {}
        }
        Ok(())
    }

    /// Merges `new_deps` into the dependency CSR (sorted, distinct per row): one sort of the
    /// new pairs and one merging pass, O(nnz + m + k log k) for k new pairs. The rows between
    /// two rows with new pairs are copied as one stretch; few pairs are merged in place
    /// ([`Refine::merge_in_place`]), and the first ones (nothing known yet) make the CSR
    /// directly. A merge into new arrays runs in two halves of rows at once on two cores
    /// ([`merged_rows`]): on the tridiagonal at 10^6 the trace's merges took 65-79 ms, 59-68
    /// now. The pairs are left in `merged`, sorted, distinct, until the next merge
    /// (`advance` recovers from them the dependencies a parked row's step was planned with).
    /// Returns which of these ways it took.
    pub(super) fn merge_deps(&mut self) -> Result<Merge> {
        self.merged.clear();
        if self.new_deps.is_empty() {
            return Ok(Merge::Nothing);
        }
        let mut new = std::mem::take(&mut self.new_deps);
        new.sort(); // stable: it merges the per-probe runs the tells left (rows increasing in each)
        new.dedup();
        if !self.dep_idx.is_empty() && IN_PLACE_MERGE * new.len() <= self.dep_idx.len() {
            self.merge_in_place(&new)?;
            self.new_deps = std::mem::replace(&mut self.merged, new);
            return Ok(Merge::InPlace);
        }
        let m = self.m;
        let how = match self.dep_idx.is_empty() {
            true => Merge::First,
            false => Merge::Copied,
        };
        // On two cores, in two halves of rows at once (`halves.rs`): the first half writes where
        // all of it will be, the second its own arrays, joined after it.
        let (dep_ptr, dep_idx) = (&self.dep_ptr[..], &self.dep_idx[..]);
        let mid = match m + dep_idx.len() + new.len() >= self.halves_from {
            true => halfway(dep_ptr),
            false => m,
        };
        let at = new.partition_point(|&(i, _)| (i as usize) < mid);
        let (new_first, new_second) = new.split_at(at);
        let (first, second) = both(
            mid < m,
            || {
                let all = (dep_idx.len() + new.len(), m + 1);
                merged_rows((dep_ptr, dep_idx), 0..mid, new_first, how, all, true)
            },
            || {
                let part = (dep_ptr[m] - dep_ptr[mid] + new_second.len(), m - mid);
                merged_rows((dep_ptr, dep_idx), mid..m, new_second, how, part, false)
            },
        );
        let ((mut ptr, mut idx), (ends, second_idx)) = (first?, second?);
        let offset = idx.len();
        reserve_exact(&mut idx, second_idx.len(), "dependencies")?;
        idx.extend_from_slice(&second_idx);
        reserve_exact(&mut ptr, ends.len(), "dependency pointers")?;
        ptr.extend(ends.iter().map(|&e| e + offset));
        self.dep_ptr = ptr;
        self.dep_idx = idx;
        // The pairs stay for `advance`; the allocation of the emptied one serves the next step.
        self.new_deps = std::mem::replace(&mut self.merged, new);
        Ok(how)
    }

    /// [`Refine::merge_deps`] of few pairs (`new`: sorted, distinct, at most a
    /// [`IN_PLACE_MERGE`]th of the known dependencies): the arrays grow in place by the pairs
    /// not known yet, and only what lies after the first row with one moves: the entries by
    /// one backward pass (a copy for each stretch between two such rows), the pointers by one
    /// forward pass. A merge into new arrays reads and writes both whole (at n = 10^6 on the
    /// tridiagonal, 12 MB each way for 2 new pairs, 1.0-6.4 ms; fresh pages when the freed
    /// ones are not reused).
    fn merge_in_place(&mut self, new: &[(u32, u32)]) -> Result<()> {
        // Each row's pairs not known yet: the rows with some, and how many.
        let mut rows: Vec<(u32, u32)> = Vec::new();
        reserve(&mut rows, new.len(), "rows with new dependencies")?;
        for &(i, j) in new {
            if self.deps(i as usize).binary_search(&j).is_ok() {
                continue;
            }
            match rows.last_mut() {
                Some((r, count)) if *r == i => *count += 1,
                _ => rows.push((i, 1)),
            }
        }
        let added: usize = rows.iter().map(|&(_, c)| c as usize).sum();
        if added == 0 {
            return Ok(());
        }
        let len = self.dep_idx.len();
        // A little room beyond the pairs, so that the next few merges do not reallocate.
        if self.dep_idx.capacity() < len + added {
            reserve_exact(&mut self.dep_idx, added.max(len / 32), "dependencies")?;
        }
        self.dep_idx.resize(len + added, 0);
        let (idx, ptr) = (&mut self.dep_idx, &self.dep_ptr);
        // Backward: `src` is where the old entries not moved yet end, `dst` where they go.
        let (mut src, mut dst) = (len, len + added);
        let mut g = new.len();
        for &(i, _) in rows.iter().rev() {
            let i = i as usize;
            let (start, end) = (ptr[i], ptr[i + 1]);
            // The rows after row i, up to the last one moved.
            idx.copy_within(end..src, dst - (src - end));
            dst -= src - end;
            // Row i's entries and its new ones (those of `new` in row i, known ones skipped),
            // from the largest down; `dst > a` while any new one is to come.
            while g > 0 && new[g - 1].0 as usize > i {
                g -= 1;
            }
            let mut a = end;
            while g > 0 && new[g - 1].0 as usize == i {
                let j = new[g - 1].1;
                g -= 1;
                while a > start && idx[a - 1] > j {
                    dst -= 1;
                    idx[dst] = idx[a - 1];
                    a -= 1;
                }
                if !(a > start && idx[a - 1] == j) {
                    dst -= 1;
                    idx[dst] = j;
                }
            }
            idx.copy_within(start..a, dst - (a - start));
            dst -= a - start;
            src = start;
        }
        debug_assert_eq!(src, dst, "the rows before the first with a new pair stay");
        // Forward: each pointer moves up by the entries added in the rows before it.
        let (mut shift, mut next) = (0usize, rows.iter().peekable());
        let first = rows[0].0 as usize;
        for (r, p) in self.dep_ptr.iter_mut().enumerate().skip(first + 1) {
            while let Some(&&(i, count)) = next.peek() {
                if i as usize >= r {
                    break;
                }
                shift += count as usize;
                next.next();
            }
            *p += shift;
        }
        Ok(())
    }

    /// Lets go of the last merge's pairs, keeping the larger allocation for the next step's.
    pub(super) fn release_merged(&mut self) {
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
        let most = deps.len() << self.bits;
        reserve(idx, most, "candidate blocks")?;
        reserve(words, most, "candidate probes")?;
        let mut p = 0;
        for_each_block(deps, self.shift, self.bits, self.n, |b, kind| match kind {
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
        });
        Ok(p)
    }

    /// Writes every parked row back into the stored candidates, with the words the current
    /// step gave it (before one probe per column, and before `finish` reads the candidates).
    pub(super) fn unpark_all(&mut self) -> Result<()> {
        if self.parked.count == 0 {
            return Ok(());
        }
        self.parked.sort_hits();
        let hits = std::mem::take(&mut self.parked.hits);
        let mut ptr = Vec::new();
        reserve(&mut ptr, self.m + 1, "candidate pointers")?;
        ptr.push(0);
        let (mut idx, mut words) = (Vec::new(), Vec::new());
        let most = self.cand_idx.len() + (self.parked.deps << self.bits);
        reserve(&mut idx, most, "candidate blocks")?;
        reserve(&mut words, most, "candidate probes")?;
        let mut changed = Vec::new();
        let mut h = 0;
        for i in 0..self.m {
            if self.parked.is_parked(i) {
                row_probes(&hits, &mut h, i, &mut changed)?;
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
            open += usize::from(deps_in(deps, &mut d, start, end) < (end - start) as usize);
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
    pub(super) fn advance(&mut self) -> Result<()> {
        if self.shift == 0 {
            debug_assert_eq!(self.parked.count, 0);
            self.absorb()?;
            self.merge_deps()?;
            self.release_merged();
            // Left: the candidates of quiet rows that changed in a probe they shared (their
            // tags, now dependencies, aside). One more step at this level, every row with
            // every conflict hard, resolves them.
            self.quiet = Default::default();
            let (dep_ptr, dep_idx) = (&self.dep_ptr, &self.dep_idx);
            retain_candidates((&mut self.cand_ptr, &mut self.cand_idx), |i, _, _, j| {
                Ok(dep_idx[dep_ptr[i]..dep_ptr[i + 1]]
                    .binary_search(&j)
                    .is_err())
            })?;
            self.cand_probe.clear();
            self.cand_probe.resize(self.cand_idx.len(), UNTESTED);
            return Ok(());
        }
        self.parked.sort_hits();
        let hits = std::mem::take(&mut self.parked.hits);
        self.merge_deps()?;
        // Four ways when the rows have settled (most parked, the step taught few new
        // dependencies, the next blocks wider than any parked row's spread) and the next level
        // is not the last; two ways otherwise (module docs, "Termination and cost").
        let settled = self.parked.enabled
            && 2 * self.parked.count > self.m
            && 16 * self.merged.len() <= self.m
            && self.shift > WIDE_BRANCH_BITS
            && u64::from(self.parked.span) < 1u64 << (self.shift - WIDE_BRANCH_BITS);
        let bits = match settled {
            true => WIDE_BRANCH_BITS,
            false => BRANCH_BITS.min(self.shift),
        };
        let s = self.shift - bits;
        let next = Next {
            s,
            bits,
            leaf_dense_at: match self.cap {
                usize::MAX => usize::MAX,
                cap => DENSE_MIN.max(cap.saturating_sub(self.asked) / 4),
            },
            dense_at: match self.cap {
                usize::MAX => usize::MAX,
                cap => DENSE_MIN.max(cap.saturating_sub(self.asked) / DENSE_DIVISOR),
            },
            hits: &hits,
            blocks: (self.n as u64).div_ceil(1u64 << s) as usize,
        };
        // Into the last level in windows when the rows are all parked (`window.rs`).
        if s == 0 && self.split_into_window(&hits)? {
            return Ok(());
        }
        if s == 0 {
            self.quiet = zero_bits(self.m, "quiet rows")?;
        }
        let parked_before = self.parked.count;
        // The pass in two halves of rows (`halves.rs`), cut at a row that starts a word of the
        // quiet rows' bits, so that each half owns its rows' codes, bits and entries. The
        // first half's entries are made where all of them will be.
        let m = self.m;
        let work = m + self.cand_idx.len();
        let at_once = work >= self.halves_from;
        let mid = match at_once {
            true => halfway(&self.cand_ptr) / usize::BITS as usize * usize::BITS as usize,
            false => m,
        };
        let mut codes = std::mem::take(&mut self.parked.rows);
        let mut quiet = std::mem::take(&mut self.quiet);
        let (codes_first, codes_second) = codes.split_at_mut(mid);
        let (quiet_first, quiet_second) = match s == 0 {
            true => {
                let words = quiet.as_raw_mut_slice();
                let cut = match mid == m {
                    true => words.len(),
                    false => mid / usize::BITS as usize,
                };
                let (a, b) = words.split_at_mut(cut);
                (BitSlice::from_slice_mut(a), BitSlice::from_slice_mut(b))
            }
            false => (BitSlice::empty_mut(), BitSlice::empty_mut()),
        };
        let this = &*self;
        let (first, second) = both(
            at_once,
            || this.split_rows(0..mid, &next, (codes_first, quiet_first), true),
            || this.split_rows(mid..m, &next, (codes_second, quiet_second), false),
        );
        self.parked.rows = codes;
        self.quiet = quiet;
        let (mut first, second) = (first?, second?);
        // The halves joined in row order.
        let mut ptr = std::mem::take(&mut first.ends);
        let mut idx = std::mem::take(&mut first.idx);
        let offset = idx.len();
        reserve(&mut ptr, second.ends.len(), "candidate pointers")?;
        ptr.extend(second.ends.iter().map(|&e| e + offset));
        // Exactly: an amortized growth would double the largest array of the split.
        reserve_exact(&mut idx, second.idx.len(), "candidate blocks")?;
        idx.extend_from_slice(&second.idx);
        let (mut tested, mut changed) = (self.parked.listed_p, 0usize);
        let (mut blind, mut blind_rows) = (Vec::new(), 0);
        let (mut quiet_rows, mut restless, mut written_back) = (0usize, 0usize, 0usize);
        for part in [&first, &second] {
            tested = tested + part.tested - part.untested;
            changed += part.changed;
            quiet_rows += part.quiet;
            restless += part.restless;
            written_back += part.written_back;
            self.parked.count = self.parked.count + part.parked - part.unparked;
            self.parked.deps = self.parked.deps + part.deps_parked - part.deps_unparked;
            self.parked.span = self.parked.span.max(part.span);
            reserve(&mut self.dense, part.dense.len(), "dense rows")?;
            self.dense.extend_from_slice(&part.dense);
            reserve(&mut self.peel.found, part.peel.len(), "rows to peel")?;
            self.peel.found.extend_from_slice(&part.peel);
            reserve(&mut blind, part.blind.len(), "rows to peel")?;
            blind.extend_from_slice(&part.blind);
            blind_rows += part.blind_rows;
        }
        // The second half's first row's code, when its row before (in the first half) or the row
        // itself was parked or written back: the halves made every other code (`split_rows`).
        let cut = mid as u32;
        let at_cut = (first.touched.last()).is_some_and(|&t| t + 1 == cut)
            || second.touched.first() == Some(&cut);
        if mid > 0 && mid < self.m && at_cut && self.parked.is_parked(mid) {
            self.parked.rows[mid] = self.parked_code(mid, self.parked.is_parked(mid - 1));
        }
        drop((first, second));
        if RESTLESS_PART * restless > quiet_rows + restless {
            // Rows still learning: a quiet one may well hold an unknown dependency too.
            self.quiet = Default::default();
        }
        self.all_quiet = s == 0 && restless == 0;
        debug_assert_eq!(ptr.len(), self.m + 1);
        self.parked.returned = written_back;
        if 2 * self.parked.returned > parked_before && 8 * parked_before >= self.m {
            // Most parked rows came back. Once (a 2-D stencil's rows at the level where their
            // neighbours a grid line away leave their blocks) they park again as they are
            // split; twice (a band's rows learn one dependency a probe for many levels),
            // parking costs more than it saves on this pattern (`parked.rs`).
            self.parked.mass_returns = self.parked.mass_returns.saturating_add(1);
            self.parked.enabled = self.parked.mass_returns < 2;
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
        // The old array, emptied, is where the next level's lists are made (`spare`).
        self.spare = std::mem::replace(&mut self.cand_idx, idx);
        self.spare.clear();
        // The words in the old words' array, grown or shrunk to exactly their number: one
        // array at a time at the peak, and its pages, already mapped, are not faulted in again
        // at every level (64 MB a level for random 5 per row at n = 10^6).
        let len = self.cand_idx.len();
        self.cand_probe.clear();
        reserve_exact(&mut self.cand_probe, len, "candidate probes")?;
        self.cand_probe.shrink_to(len);
        self.cand_probe.resize(len, UNTESTED);
        self.shift = s;
        self.bits = bits;
        self.take_blind_rows(blind, blind_rows)
    }

    /// Whether stored row `i` parks at a split into a level above the last, as
    /// [`Refine::split_rows`] decides it after making its candidates' children (here without
    /// making them): its one candidate block, not proven zero by the step, holds a known
    /// dependency; it has fewer than a dense row's and is not sampled dense; parking is on; and
    /// whether that block holds an unknown column agrees with how many of its dependencies'
    /// blocks hold one (the parking test when one block survives). Every row at the first
    /// split. `Some(tested)` when it parks: whether a told probe tested the block.
    pub(super) fn parks_whole(&self, i: usize) -> Option<bool> {
        let (a, b) = (self.cand_ptr[i], self.cand_ptr[i + 1]);
        let deps = self.deps(i);
        if !self.shortcuts || b != a + 1 || deps.len() >= DENSE_MIN || !self.parked.enabled {
            return None;
        }
        let word = self.cand_probe[a];
        let c = word & PROBE;
        let tested = c != UNTESTED && self.told[c as usize];
        if tested && word & HIT == 0 {
            return None; // proven zero: no survivor
        }
        let (start, end) = self.block_range(self.cand_idx[a], self.shift);
        let inside = deps_in(deps, &mut 0, start, end);
        let open = usize::from(inside < (end - start) as usize);
        let parks = inside > 0
            && !(self.cap != usize::MAX && self.wide.dense(i as u32))
            && open == self.open_dep_blocks(deps);
        parks.then_some(tested)
    }

    /// Parked row `r`'s code (`parked.rs`), `after_parked` saying whether the row before is
    /// parked too.
    fn parked_code(&self, r: usize, after_parked: bool) -> u8 {
        match after_parked {
            true => shared_from(self.deps(r), self.deps(r - 1)),
            false => ALONE,
        }
    }

    /// The split's pass over `rows` ([`Refine::advance`]): each row's surviving candidates
    /// split into the next level, written back, parked or recognised dense. `codes` and `quiet`
    /// are the rows' parked codes and quiet bits (from the first row of `rows` on: this pass
    /// writes them and nothing else of the planner). `first`: the pointers start with the
    /// first row's start, 0, and have room for every row's (the other half's are joined to
    /// them).
    fn split_rows(
        &self,
        rows: std::ops::Range<usize>,
        next: &Next,
        (codes, quiet): (&mut [u8], &mut BitSlice),
        first: bool,
    ) -> Result<SplitRows> {
        let (s, bits, hits) = (next.s, next.bits, next.hits);
        let lo = rows.start;
        let is_parked = |codes: &[u8], i: usize| codes[i - lo] != STORED;
        let mut out = SplitRows::default();
        let (mut ptr, mut idx) = (Vec::new(), Vec::new());
        // The first half's pointers have room for every row's.
        let pointers = match first {
            true => self.m + 1,
            false => rows.len(),
        };
        reserve(&mut ptr, pointers, "candidate pointers")?;
        if first {
            ptr.push(0);
        }
        // For the stored rows; a parked row written back reserves its own below. (The second
        // half's entries are appended to the first's, whose array then grows by exactly their
        // number.)
        let stored = self.cand_ptr[rows.end] - self.cand_ptr[lo];
        reserve(&mut idx, stored << bits, "candidate blocks")?;
        let (mut changed_in, mut q_colors): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        // A parked row written back: its step's dependencies, the probes it changed in, its
        // entries and words.
        let (mut step_deps, mut probes, mut back_idx, mut back_words) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut h = hits.partition_point(|&(r, _)| (r as usize) < lo);
        let from_lo = self.merged.partition_point(|&(r, _)| (r as usize) < lo);
        let (mut nd, mut nm) = (from_lo, from_lo);
        let mut skip_to = lo;
        for i in rows.clone() {
            if i < skip_to {
                continue;
            }
            let parks = match s > 0 && !is_parked(codes, i) {
                true => self.parks_whole(i),
                false => None,
            };
            if let Some(tested) = parks {
                // Parked as the pass below would park it, without making the children it would
                // drop: every row at the first split. Its block, if tested, changed.
                let (tested, deps) = (usize::from(tested), self.deps(i));
                (out.tested, out.changed) = (out.tested + tested, out.changed + tested);
                codes[i - lo] = ALONE;
                out.parked += 1;
                out.deps_parked += deps.len();
                out.note_span(deps);
                push(&mut out.touched, i as u32, "rows")?;
                ptr.push(idx.len());
                continue;
            }

            // Its hits: when all are kept (a new dependency through its only P block in the
            // probe), it stays parked as with new dependencies in its Q blocks.
            let row_hits = hits[h..].iter().take_while(|&&(r, _)| r as usize == i);
            let kept = row_hits.clone().filter(|&&(_, k)| k & KEPT != 0).count();
            let hit = row_hits.count() > kept;
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
            if is_parked(codes, i) && !hit && !dense_now {
                // Each kept hit, one P block changed (counted as a stored row's would be).
                h += kept;
                out.changed += kept;
            }
            if is_parked(codes, i) && !hit && learned > 0 && !dense_now {
                out.deps_parked += learned;
                out.note_span(&self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]]);
                push(&mut out.touched, i as u32, "rows")?;
                if s > 0 {
                    ptr.push(idx.len());
                    continue;
                }
            } else if is_parked(codes, i) && !hit && learned == 0 && s > 0 {
                // Parked rows up to the next stored row, hit or new dependency: they stay
                // parked.
                let next_hit = hits.get(h).map_or(rows.end, |&(r, _)| r as usize);
                let next_new = self.merged.get(nm).map_or(rows.end, |&(r, _)| r as usize);
                let next = next_hit.min(next_new).min(rows.end);
                let stop = (codes[i - lo..next - lo].iter())
                    .position(|&c| c == STORED)
                    .map_or(next, |k| i + k);
                ptr.extend(std::iter::repeat_n(idx.len(), stop - i));
                skip_to = stop;
                continue;
            }
            let deps = &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]];
            let was_parked = is_parked(codes, i);
            if was_parked && !hit && !dense_now {
                // Into the last level with nothing new: its P blocks were tested (counted in
                // `tested`) and unchanged, its Q blocks split into their columns that are not
                // dependencies: the children of its dependencies' blocks, stored.
                debug_assert_eq!(s, 0);
                if learned == 0 && !deps.is_empty() {
                    quiet.set(i - lo, true);
                    out.quiet += 1;
                } else {
                    out.restless += 1;
                }
                reserve(&mut idx, deps.len() << bits, "candidate blocks")?;
                for_each_block(deps, s, bits, self.n, |b, kind| {
                    if kind == Kind::P {
                        idx.push(b);
                    }
                });
                codes[i - lo] = STORED;
                out.unparked += 1;
                out.deps_unparked += deps.len();
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
                row_probes(hits, &mut h, i, &mut probes)?;
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
                out.untested +=
                    self.parked_entries(step, &probes, &mut back_idx, &mut back_words)?;
                reserve(&mut idx, back_idx.len() << bits, "candidate blocks")?;
                codes[i - lo] = STORED;
                out.unparked += 1;
                out.deps_unparked += step.len();
                out.written_back += 1;
                (&back_idx[..], &back_words[..])
            };
            // Recognising a row dense takes DENSE_MIN known dependencies: most rows skip it.
            let dense = match deps.len() >= DENSE_MIN {
                true => self.recognised_dense(
                    deps,
                    (blocks, words),
                    s,
                    (next.dense_at, next.leaf_dense_at),
                    (&mut changed_in, &mut q_colors),
                )?,
                false => Dense::Not,
            };
            // A wide row whose samples showed it dense (`wide.rs`), under a cap.
            let sampled_dense = self.cap != usize::MAX && self.wide.dense(i as u32);
            let is_dense = dense != Dense::Not || sampled_dense;
            if dense == Dense::Costly && !sampled_dense {
                // Nothing showed it dense: it is peeled at the end (`peel.rs`).
                push(&mut out.peel, i as u32, "rows to peel")?;
            }
            let row_start = idx.len();
            let may_park = s > 0 && self.parked.enabled && !is_dense && deps.len() < DENSE_MIN;
            // Survivors, those holding a dependency, those holding one and an unknown column.
            let (mut survivors, mut with_dep, mut open) = (0usize, 0usize, 0usize);
            let (mut d, mut dd) = (0, 0);
            // A change the row's known dependencies do not explain (none of their blocks was in
            // the probe): it may hold an unknown one.
            let mut unexplained = false;
            for (&b, &v) in blocks.iter().zip(words) {
                let c = v & PROBE;
                if c != UNTESTED && self.told[c as usize] {
                    out.tested += 1;
                    if v & HIT == 0 {
                        continue; // unchanged: every column of the block is zero for row i
                    }
                    out.changed += 1;
                    unexplained = unexplained
                        || s > 0
                        || !(deps.iter()).any(|&j| {
                            self.parked.colors.get((j >> self.shift) as usize) == Some(&c)
                        });
                }
                if is_dense {
                    // Recognised dense: the block's columns are kept, not refined.
                    let (start, end) = self.block_range(b, self.shift);
                    push(&mut out.dense, (i as u32, start, end), "dense rows")?;
                    continue;
                }
                if may_park {
                    let (start, end) = self.block_range(b, self.shift);
                    let inside = deps_in(deps, &mut dd, start, end);
                    survivors += 1;
                    with_dep += usize::from(inside > 0);
                    open += usize::from(inside > 0 && inside < (end - start) as usize);
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
                codes[i - lo] = ALONE;
                out.parked += 1;
                out.deps_parked += deps.len();
                out.note_span(deps);
            }
            let children = idx.len() - row_start;
            if s > 0 && deps.is_empty() && children > 0 {
                out.blind_rows += 1;
                if children >= BLIND_PEEL_FEW {
                    // Blind with many candidate blocks before the last level: maybe peeled
                    // instead (`peel.rs`); how many, and whether it holds half of all blocks.
                    let kind = match children >= BLIND_PEEL_FROM {
                        true if 2 * children >= next.blocks => BlindKind::Wide,
                        true => BlindKind::Many,
                        false => BlindKind::Some,
                    };
                    push(&mut out.blind, (i as u32, kind), "rows to peel")?;
                }
            }
            if s == 0 && !deps.is_empty() && !is_dense {
                if !unexplained && learned == 0 {
                    quiet.set(i - lo, true);
                    out.quiet += 1;
                } else {
                    out.restless += 1;
                }
            }
            if was_parked || is_parked(codes, i) {
                push(&mut out.touched, i as u32, "rows")?;
            }
            ptr.push(idx.len());
        }
        debug_assert!(h == hits.len() || hits[h].0 as usize >= rows.end);
        // A parked row's code: from which level on it has the blocks of the row before. Made
        // again for the rows this pass parked or wrote back and the rows after them, once every
        // row's parking is decided; but for the first row of a second half, whose row before
        // lies in the other half (`advance` makes it after the join). Each once: the row after
        // a touched row is often touched too (every row, at the first level).
        let mut next = lo;
        for &t in &out.touched {
            for r in [t as usize, t as usize + 1] {
                if r < next || r >= rows.end || (r == lo && !first) || !is_parked(codes, r) {
                    continue;
                }
                next = r + 1;
                codes[r - lo] = self.parked_code(r, r > lo && is_parked(codes, r - 1));
            }
        }
        (out.ends, out.idx) = (ptr, idx);
        Ok(out)
    }
}

/// What the split into the next level needs besides the planner ([`Refine::split_rows`]).
struct Next<'a> {
    /// The next level and the bits of the split.
    s: u32,
    bits: u32,
    /// The dense-row thresholds the cap leaves (module docs of `refine`, "Dense rows").
    dense_at: usize,
    leaf_dense_at: usize,
    /// The parked rows' hits of the step, sorted.
    hits: &'a [(u32, u32)],
    /// The blocks of the next level.
    blocks: usize,
}

/// What one half of the split's pass gives ([`Refine::split_rows`]): its rows' entries and the
/// counts the planner keeps, joined in row order by [`Refine::advance`].
#[derive(Default)]
struct SplitRows {
    /// The end of each row's entries in `idx` (the first half's start with a 0).
    ends: Vec<usize>,
    idx: Vec<u32>,
    /// Candidate entries tested in the step, and of those taken back (a written-back row's
    /// P blocks, counted already as parked rows' listed ones), and changed.
    tested: usize,
    untested: usize,
    changed: usize,
    /// Rows parked and unparked, and their dependencies.
    parked: usize,
    unparked: usize,
    deps_parked: usize,
    deps_unparked: usize,
    /// The widest spread of a parked row's dependencies ([`crate::planner::parked::Parked::span`]).
    span: u32,
    /// Parked rows written back.
    written_back: usize,
    /// Rows into the last level quiet, and not.
    quiet: usize,
    restless: usize,
    /// Rows parked, kept parked with new dependencies or written back: their codes are made
    /// again.
    touched: Vec<u32>,
    /// Columns kept for rows recognised dense.
    dense: Vec<(u32, u32, u32)>,
    /// Of those rows, the ones recognised for their cost alone (`peel.rs`).
    peel: Vec<u32>,
    /// Blind rows with candidates at the next level, and of those the ones with at least
    /// `BLIND_PEEL_FEW`, and how many they hold (`peel.rs`).
    blind_rows: usize,
    blind: Vec<(u32, BlindKind)>,
}

/// A blind row with at least `BLIND_PEEL_FEW` candidate blocks at the next level
/// ([`Refine::take_blind_rows`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum BlindKind {
    /// Fewer than `BLIND_PEEL_FROM`.
    Some,
    /// At least `BLIND_PEEL_FROM`.
    Many,
    /// At least `BLIND_PEEL_FROM`, and half of all blocks.
    Wide,
}

/// Whether a row is recognised dense at the end of a step ([`Refine::recognised_dense`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dense {
    Not,
    /// Its blocks showed it: 3/4 of them hold a known dependency or changed.
    Shown,
    /// Its unknown columns would cost too much at the last levels: nothing showed it dense.
    Costly,
}

impl SplitRows {
    /// Notes the dependencies of a row parked, or kept parked with new ones, in `span`.
    fn note_span(&mut self, deps: &[u32]) {
        if let (Some(&first), Some(&last)) = (deps.first(), deps.last()) {
            self.span = self.span.max(last - first);
        }
    }
}

/// One half of [`Refine::merge_deps`] into new arrays: the merged CSR of `rows` of the known
/// dependencies (`dep_ptr`, `dep_idx`) and `new` (their new pairs, sorted, distinct), as the
/// rows' entries and each row's end, counted from the first row's start (and, for the `first`
/// half, `0` first). The entries and pointers to reserve are given (the whole CSR's for the
/// first half, which the second is joined to).
fn merged_rows(
    (dep_ptr, dep_idx): (&[usize], &[u32]),
    rows: std::ops::Range<usize>,
    new: &[(u32, u32)],
    how: Merge,
    (entries, pointers): (usize, usize),
    first: bool,
) -> Result<(Vec<usize>, Vec<u32>)> {
    let (lo, hi) = (rows.start, rows.end);
    let mut idx = Vec::new();
    reserve(&mut idx, entries, "dependencies")?;
    let mut ptr = Vec::new();
    reserve(&mut ptr, pointers, "dependency pointers")?;
    if first {
        ptr.push(0);
    }
    if how == Merge::First {
        // Nothing known yet (the first step's tags): the CSR is the pairs' own, with no
        // merge (tridiagonal 10^6: 17.8 -> 8.3 ms).
        idx.extend(new.iter().map(|&(_, j)| j));
        let mut k = 0;
        for i in lo as u32..hi as u32 {
            while k < new.len() && new[k].0 == i {
                k += 1;
            }
            ptr.push(k);
        }
        return Ok((ptr, idx));
    }
    // `done`: rows before it are in the new CSR; `shift`: entries added before row `done`;
    // `base`: where the first row's entries start in the old CSR.
    let base = dep_ptr[lo];
    let (mut done, mut shift, mut k) = (lo, 0usize, 0usize);
    while k < new.len() {
        let i = new[k].0 as usize;
        let start = k;
        while k < new.len() && new[k].0 as usize == i {
            k += 1;
        }
        // Rows done..i unchanged: one copy of their entries, their pointers shifted (none
        // when the row before had new pairs too, as at the last level most rows do).
        if done < i {
            let (from, to) = (dep_ptr[done], dep_ptr[i]);
            idx.extend_from_slice(&dep_idx[from..to]);
            ptr.extend(dep_ptr[done + 1..=i].iter().map(|&p| p - base + shift));
        }
        let old = &dep_idx[dep_ptr[i]..dep_ptr[i + 1]];
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
    idx.extend_from_slice(&dep_idx[dep_ptr[done]..dep_ptr[hi]]);
    ptr.extend(dep_ptr[done + 1..=hi].iter().map(|&p| p - base + shift));
    Ok((ptr, idx))
}

/// Keeps the candidate entries (CSR over the rows) for which `keep(row, the row's entries,
/// entry, block)` holds, in order; `keep` sees the entries at their places before the pass.
/// Their words are the caller's to reset.
pub(super) fn retain_candidates(
    (cand_ptr, cand_idx): (&mut [usize], &mut Vec<u32>),
    mut keep: impl FnMut(usize, std::ops::Range<usize>, usize, u32) -> Result<bool>,
) -> Result<()> {
    let (m, mut w) = (cand_ptr.len() - 1, 0);
    for i in 0..m {
        let row = cand_ptr[i]..cand_ptr[i + 1];
        cand_ptr[i] = w;
        for e in row.clone() {
            let block = cand_idx[e];
            if keep(i, row.clone(), e, block)? {
                cand_idx[w] = block;
                w += 1;
            }
        }
    }
    cand_ptr[m] = w;
    cand_idx.truncate(w);
    Ok(())
}

/// How many of the sorted `deps` from the cursor `d` on lie in `start..end`; `d` moves past
/// those below `end` (the ones below `start` skipped).
#[inline]
fn deps_in(deps: &[u32], d: &mut usize, start: u32, end: u32) -> usize {
    while *d < deps.len() && deps[*d] < start {
        *d += 1;
    }
    let from = *d;
    while *d < deps.len() && deps[*d] < end {
        *d += 1;
    }
    *d - from
}

/// How [`Refine::merge_deps`] merged (what its test observes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Merge {
    /// There was no new pair.
    Nothing,
    /// Nothing was known: the pairs made the CSR.
    First,
    /// Few pairs, into the arrays in place ([`Refine::merge_in_place`]).
    InPlace,
    /// Into new arrays.
    Copied,
}

/// [`Refine::merge_deps`] merges in place when the known dependencies are at least this many
/// times the new pairs.
const IN_PLACE_MERGE: usize = 16;

/// Calls `f` on the sorted union of a row's known dependencies (`old`, sorted, distinct) and
/// its new ones (`added`, sorted by column, distinct), each column once.
#[inline]
fn merge_sorted_unique(old: &[u32], added: &[(u32, u32)], mut f: impl FnMut(u32)) {
    // Each list is distinct: a column can only be in both.
    let mut b = 0;
    for &d in old {
        while b < added.len() && added[b].1 < d {
            f(added[b].1);
            b += 1;
        }
        b += usize::from(b < added.len() && added[b].1 == d);
        f(d);
    }
    for &(_, j) in &added[b..] {
        f(j);
    }
}
