//! The last level in windows: each row's candidates and known dependencies as two bit masks
//! over the columns near the row's own index, colored by a period.
//!
//! # Why
//!
//! On a banded pattern the last level was the trace's dearest step. Every row is stored again
//! (`split.rs`), listed with its candidates and its dependencies, the lists colored by the
//! grid's formula (`coloring/lattice.rs`), each changed row's candidate words looked up in
//! each tell, and at the level's end the outcomes absorbed, the new dependencies sorted and
//! merged and the candidates retained in further passes over the arrays: on the tridiagonal
//! at n = 10^6 about a fifth of the library's time for 4 of its 50 evaluations. Yet each of
//! those rows holds a handful of columns within a few places of its own index.
//!
//! # The masks
//!
//! Row `i`'s *window* is the 64 columns `i - HALF .. i + HALF`; bit `t` of its masks stands
//! for column `i + t - HALF`. `cand` holds its candidates (at the last level every candidate
//! is one column holding no known dependency: probeable), `deps` its known dependencies. A row
//! whose candidates and dependencies all lie in its window is *held*; a row without candidates
//! need not be (its dependencies stay in the planner's arrays, looked up when a tag comes
//! back: an arrowhead's dense row that knows all its columns). A row with a candidate outside
//! its window leaves the level to the lists (`level.rs`).
//!
//! The masks are made from the lists' candidates after the split into the last level; or, when
//! every row is parked at the level of blocks of 2 (or has no candidate), each parked row's
//! hits all kept and no quiet row would make the lists share probes, at that split itself,
//! in place of it: a parked row's candidates are the other columns of its dependencies'
//! blocks of 2 (`parked.rs`), so its masks come from its dependencies alone, and the split
//! does not write every row back as the lists' candidates (`split_into_window`). When the
//! level is then left to the lists after all, the masks are written back as that split would
//! have left them.
//!
//! # The coloring
//!
//! Column `j` takes color `j mod p`. At the last level every conflict is hard but between two
//! dependencies: a row's candidates must lie apart from each other and from its dependencies.
//! Whether `p` keeps them apart depends only on the columns' offsets from the row, not on the
//! row (two offsets alike modulo `p` are alike whatever the row), so it is decided once per
//! distinct pair of masks, and a band has a handful of those, the last few remembered. The
//! smallest period that keeps every held row's columns apart (at most 64) is taken, and the
//! probes are its classes that hold a candidate of some row. For a band this is the formula
//! `coloring/lattice.rs` finds, but with two dependencies of one row allowed to share a probe.
//!
//! It is taken within one color of the largest clique a row makes (its candidates and one
//! dependency): the bound within which the lists take the grid's formula without trying their
//! greedy passes. Past it the passes may need fewer, and the lists color the level. Nor is it
//! taken when a row came in quiet (the passes may let its candidates share probes), nor where
//! the lists' tests would send the level to one probe per column (a dense row, more colors
//! than unknown columns, the cap). The fingerprint suite (1168 traces) is identical with and
//! without windows, evaluation for evaluation and entry for entry; 130 of its traces end in
//! windows (tridiagonals, diagonal blocks).
//!
//! # What a probe proves
//!
//! As at the lists' last level (`refine.rs`, "What a probe proves"): a held row's probe holds
//! at most one of its candidates and none of its known dependencies. Its output unchanged bit
//! for bit proves the candidate zero; changed in any way (a tag, an unknown NaN, a different
//! number, or a change only verification saw, then of kind perturbation) proves it a
//! dependency. A tag names a dependency of any row. A tell reads only the changed rows: every
//! candidate a told probe holds is resolved either way, so the unchanged rows' are dropped at
//! the step's end, in the pass that writes back the candidates left (those of probes never
//! told) as the lists' candidates. A held row's dependencies are its mask's, and the arrays
//! are made from the masks then; a tag for a row not held, or outside a held row's window (a
//! black box whose answers move), goes into the planner's list of new dependencies, merged
//! as after the lists' last level.

use super::{Mode, Refine, UNTESTED};
use crate::error::{filled, push, reserve, Result};
use crate::halves::both;
use crate::probe::{Hit, Probe, Reader};

/// A row's window reaches this many columns below the row, and one fewer above (bit `HALF` is
/// the row's own index): one 64-bit word.
const HALF: usize = 32;

/// A row's window: bit `t` for column `i + t - HALF`.
type Mask = u64;

/// `(row, column)` pairs: dependencies found.
type Pairs = Vec<(u32, u32)>;

/// The longest period tried: the residues of a row's columns fit one 64-bit word.
const MAX_PERIOD: usize = 64;

/// Distinct pairs of masks whose periods are remembered while the rows are read.
const REMEMBERED: usize = 8;

/// The last level of a banded pattern as masks (module docs).
pub(super) struct Window {
    /// The period of the coloring: column `j` is in the probe of class `j mod period`.
    period: usize,
    /// For probe `k` and a row `i` with `i mod period == r`: the bits of the row's window that
    /// the probe holds, at `k * period + r`.
    masks: Vec<Mask>,
    /// Per row: its candidates not yet resolved (a told probe's unchanged rows keep theirs
    /// there until the step ends: every candidate of a told probe is resolved, and only the
    /// changed rows are read), and its known dependencies ([`NOT_HELD`] for a row not held).
    cand: Vec<Mask>,
    deps: Vec<Mask>,
}

/// What the coloring needs of the rows' masks ([`Refine::try_window`]): the periods that keep
/// every row's columns apart (bit `p - 1` for period `p`), the largest clique a row makes (its
/// candidates and one dependency) and the most dependencies of a row with a candidate.
#[derive(Clone, Copy)]
struct Shape {
    valid: u64,
    max_clique: usize,
    max_q: usize,
    /// Rows with a known dependency that the step before taught nothing (quiet) and the
    /// others (counted from parked rows only: [`Source::Parked`]).
    quiet: usize,
    restless: usize,
}

impl Shape {
    /// Both halves' together.
    fn and(self, other: Shape) -> Shape {
        Shape {
            valid: self.valid & other.valid,
            max_clique: self.max_clique.max(other.max_clique),
            max_q: self.max_q.max(other.max_q),
            quiet: self.quiet + other.quiet,
            restless: self.restless + other.restless,
        }
    }
}

/// Where [`Refine::window_rows`] reads a row's candidates at the last level.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The lists' arrays, after the split into the last level.
    Lists,
    /// The rows parked at the level of blocks of 2, before that split: a parked row's
    /// candidates are the other columns of its dependencies' blocks (`parked.rs`), and a row
    /// not parked must have none.
    Parked,
}

/// The rows' masks made for the last level, before its coloring: made at the split into it
/// from the parked rows ([`Refine::split_into_window`]), colored by the next plan.
pub(super) struct Gathered {
    cand: Vec<Mask>,
    deps: Vec<Mask>,
    /// One bit per column: some row's candidate.
    columns: Vec<u64>,
    shape: Shape,
}

/// [`Window::deps`] of a row whose masks do not hold its dependencies: its known ones are in
/// the planner's arrays. (A held row with all 64 columns of its window as dependencies reads
/// as not held: its arrays are looked up then, and a tag there is merged as any.)
const NOT_HELD: Mask = Mask::MAX;

/// The bit of column `j` in row `i`'s window, if it lies there.
#[inline]
fn offset(i: usize, j: u32) -> Option<u32> {
    let t = (j as usize + HALF).checked_sub(i)?;
    (t < 2 * HALF).then_some(t as u32)
}

/// The set bits of `mask`, lowest first.
fn bits(mut mask: Mask) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let t = mask.trailing_zeros();
            mask &= mask - 1;
            t
        })
    })
}

/// The periods (bit `p - 1` for period `p`, 1 to [`MAX_PERIOD`]) at which the offsets of
/// `cand` are distinct and apart from those of `deps`.
fn periods(cand: Mask, deps: Mask) -> u64 {
    let mut valid = 0u64;
    for p in 1..=MAX_PERIOD as u32 {
        let mut of_cand = 0u64;
        let apart = bits(cand).all(|t| {
            let b = 1u64 << (t % p);
            let fresh = of_cand & b == 0;
            of_cand |= b;
            fresh
        });
        if !apart {
            continue;
        }
        let of_deps = bits(deps).fold(0u64, |acc, t| acc | 1u64 << (t % p));
        if of_cand & of_deps == 0 {
            valid |= 1 << (p - 1);
        }
    }
    valid
}

/// Sets in `words` (one bit per column) the columns of row `i`'s window set in `mask`.
fn set_columns(words: &mut [u64], i: usize, mask: Mask) {
    // Bit t is column i + t - HALF; columns below 0 hold no bit.
    let (mask, start) = match i.checked_sub(HALF) {
        Some(start) => (mask, start),
        None => (mask >> (HALF - i), 0),
    };
    let (w, s) = (start / 64, start % 64);
    words[w] |= mask << s;
    if s > 0 && mask >> (64 - s) != 0 {
        words[w + 1] |= mask >> (64 - s);
    }
}

/// The candidates of the rows' masks `cand` but those `resolved` holds (per row residue
/// modulo its length), as the lists' candidates at the last level: `cand_ptr` (m + 1)
/// written, the columns returned. Errors: out of memory.
fn candidates_of(cand: &[Mask], resolved: &[Mask], cand_ptr: &mut [usize]) -> Result<Vec<u32>> {
    let period = resolved.len();
    let left_of = |i: usize, c: Mask| c & !resolved[i % period];
    let left: usize = (cand.iter().enumerate())
        .filter(|(_, &c)| c != 0)
        .map(|(i, &c)| left_of(i, c).count_ones() as usize)
        .sum();
    if left == 0 {
        // Every probe told (the usual end).
        cand_ptr.fill(0);
        return Ok(Vec::new());
    }
    let mut idx = Vec::new();
    reserve(&mut idx, left, "candidate blocks")?;
    for (i, &c) in cand.iter().enumerate() {
        cand_ptr[i] = idx.len();
        if c != 0 {
            idx.extend(bits(left_of(i, c)).map(|t| (i + t as usize - HALF) as u32));
        }
    }
    cand_ptr[cand.len()] = idx.len();
    Ok(idx)
}

/// What one pass of a tell reads and writes: its rows' masks (from row `lo`), the probe's
/// masks by row residue, the planner's known dependencies, and the lists it adds to.
struct Told<'a> {
    lo: usize,
    cand: &'a mut [Mask],
    deps: &'a mut [Mask],
    masks: &'a [Mask],
    known: (&'a [usize], &'a [u32]),
    new_deps: &'a mut Pairs,
    pert_deps: &'a mut Pairs,
    room: bool,
}

impl Told<'_> {
    /// Changed row `i` (`r`: `i mod period`) showed `hit`. Inlined into the pass over the rows
    /// ([`Told::rows`]), where it was a call a changed row.
    #[inline(always)]
    fn take(&mut self, i: usize, r: usize, hit: Hit) {
        let (cand, deps) = (&mut self.cand[i - self.lo], &mut self.deps[i - self.lo]);
        // The probe's candidate of the row, alone there among its columns: a dependency.
        // (A held row's dependencies are its mask's: the arrays are made from it at the end.)
        let tested = *cand & self.masks[r];
        if tested != 0 {
            debug_assert_eq!(tested.count_ones(), 1);
            *cand &= !tested;
            *deps |= tested;
            if hit == Hit::Perturbed {
                let j = (i + tested.trailing_zeros() as usize - HALF) as u32;
                self.room &= push(self.pert_deps, (i as u32, j), "dependencies").is_ok();
            }
        }
        // A tag names a dependency, known or not.
        let Hit::Dep(j) = hit else {
            return;
        };
        let known = match (*deps != NOT_HELD, offset(i, j)) {
            (true, Some(t)) => {
                let bit = (1 as Mask) << t;
                *deps |= bit;
                *cand &= !bit;
                true
            }
            // Outside a held row's window (a black box whose answers move), or a row not
            // held: its arrays; a pair that comes twice is merged once.
            _ => {
                let (ptr, idx) = self.known;
                idx[ptr[i]..ptr[i + 1]].binary_search(&j).is_ok()
            }
        };
        if !known {
            self.room &= push(self.new_deps, (i as u32, j), "dependencies").is_ok();
        }
    }

    /// The changed rows of `rows` (`perturbed` among them, unchanged in `y`), each taken;
    /// returns how many tags came back through single precision.
    fn rows(
        &mut self,
        rows: std::ops::Range<usize>,
        reader: &Reader,
        (baseline, y, perturbed): (&[f64], &[f64], &[u32]),
    ) -> usize {
        let period = self.masks.len();
        for &i in perturbed {
            let i = i as usize;
            self.take(i, i % period, Hit::Perturbed);
        }
        // The pass of `Reader::observe_rows`, written out to carry each row's residue along:
        // through its callback each changed row would cost a division to find its masks.
        let mut via_float = 0;
        let mut r = rows.start % period;
        for (i, (&b, &v)) in (baseline[rows.clone()].iter().zip(&y[rows.clone()]))
            .enumerate()
            .map(|(k, pair)| (rows.start + k, pair))
        {
            let here = r;
            r = if r + 1 == period { 0 } else { r + 1 };
            if b.is_finite() && b.to_bits() != v.to_bits() {
                let (hit, float) = reader.hit_of(v);
                via_float += usize::from(float);
                self.take(i, here, hit);
            }
        }
        via_float
    }
}

impl Window {
    /// Whether probe `k`'s outputs `y` prove a zero: some row unchanged where the probe holds
    /// one of its candidates ([`crate::planner::Planner::claims`]).
    pub fn claims(&self, k: usize, baseline: &[f64], y: &[f64]) -> bool {
        let masks = &self.masks[k * self.period..(k + 1) * self.period];
        let mut r = 0;
        (0..self.cand.len()).any(|i| {
            let here = r;
            r = if r + 1 == self.period { 0 } else { r + 1 };
            let b = baseline[i];
            b.is_finite() && b.to_bits() == y[i].to_bits() && self.cand[i] & masks[here] != 0
        })
    }

    /// The outputs `y` of probe `k` (module docs, "What a probe proves"): the changed rows'
    /// candidates there proven dependencies, and the tags' columns, go into `new_deps` (and
    /// into `pert_deps` when only verification saw the change); the unchanged rows' are dropped
    /// when the step ends. `known` are the planner's known dependencies, for the rows not held.
    /// The rows in two halves at once from `halves_from` rows (`halves.rs`). Returns how many
    /// tags came back through single precision. Errors: out of memory (a list could not grow).
    pub fn tell(
        &mut self,
        k: usize,
        reader: &Reader,
        outputs: (&[f64], &[f64], &[u32]),
        known: (&[usize], &[u32]),
        halves_from: usize,
        (new_deps, pert_deps): (&mut Pairs, &mut Pairs),
    ) -> Result<usize> {
        let (baseline, y, perturbed) = outputs;
        let rows = self.cand.len().min(y.len());
        let cut = match rows >= halves_from {
            true => rows / 2,
            false => rows,
        };
        let split = perturbed.partition_point(|&i| (i as usize) < cut);
        let masks = &self.masks[k * self.period..(k + 1) * self.period];
        let (cand_here, cand_there) = self.cand.split_at_mut(cut);
        let (deps_here, deps_there) = self.deps.split_at_mut(cut);
        let (first, second) = both(
            cut < rows,
            || {
                let mut told = Told {
                    lo: 0,
                    cand: cand_here,
                    deps: deps_here,
                    masks,
                    known,
                    new_deps: &mut *new_deps,
                    pert_deps: &mut *pert_deps,
                    room: true,
                };
                let via_float = told.rows(0..cut, reader, (baseline, y, &perturbed[..split]));
                (via_float, told.room)
            },
            || {
                let (mut more, mut more_pert) = (Vec::new(), Vec::new());
                let mut told = Told {
                    lo: cut,
                    cand: cand_there,
                    deps: deps_there,
                    masks,
                    known,
                    new_deps: &mut more,
                    pert_deps: &mut more_pert,
                    room: true,
                };
                let via_float = told.rows(cut..rows, reader, (baseline, y, &perturbed[split..]));
                let room = told.room;
                (via_float, room, more, more_pert)
            },
        );
        let ((via_first, room_first), (via_second, room_second, more, more_pert)) = (first, second);
        let mut room = room_first && room_second;
        // The second half's pairs after the first's (the merge sorts them).
        for (to, from) in [(new_deps, more), (pert_deps, more_pert)] {
            room &= reserve(to, from.len(), "dependencies").is_ok();
            if room {
                to.extend_from_slice(&from);
            }
        }
        if !room {
            return Err(crate::Error::out_of_memory("dependencies", 0));
        }
        Ok(via_first + via_second)
    }

    /// The candidates no told probe resolved (`told`: which probes were), as the lists'
    /// candidates at the last level: `cand_ptr` (m + 1) written, the columns returned. Errors:
    /// out of memory.
    fn candidates_left(&self, told: &[bool], cand_ptr: &mut [usize]) -> Result<Vec<u32>> {
        let period = self.period;
        // Per row residue: the bits of a window that the told probes held.
        let mut resolved = vec![0 as Mask; period];
        for (k, _) in told.iter().enumerate().filter(|(_, &t)| t) {
            for (r, bits) in resolved.iter_mut().enumerate() {
                *bits |= self.masks[k * period + r];
            }
        }
        candidates_of(&self.cand, &resolved, cand_ptr)
    }

    /// The known dependencies as CSR: a held row's from its mask, the others' from `known`,
    /// the planner's arrays (the step's new ones for those are merged after). The rows in two
    /// halves at once from `halves_from` rows plus entries (`halves.rs`): each half counts
    /// its rows' dependencies, then writes them and their ends where the count puts them, in
    /// arrays whose pages both fault in (20 MB on the tridiagonal at 10^6). Errors: out of
    /// memory.
    fn dependencies(
        &self,
        (ptr, idx): (&[usize], &[u32]),
        halves_from: usize,
    ) -> Result<(Vec<usize>, Vec<u32>)> {
        let m = self.deps.len();
        let count = |i: usize| match self.deps[i] {
            NOT_HELD => ptr[i + 1] - ptr[i],
            d => d.count_ones() as usize,
        };
        let mid = match m + ptr[m] >= halves_from {
            true => m / 2,
            false => m,
        };
        let (first, second) = both(
            mid < m,
            || (0..mid).map(count).sum::<usize>(),
            || (mid..m).map(count).sum::<usize>(),
        );
        let mut dep_ptr = crate::halves::filled(0usize, m + 1, "dependency pointers")?;
        let mut dep_idx = crate::halves::filled(0u32, first + second, "dependencies")?;
        // Row i's end in `ends[i - rows.start]`, its dependencies from `out[0]` on (`base` in
        // the whole array).
        let write =
            |rows: std::ops::Range<usize>, base: usize, ends: &mut [usize], out: &mut [u32]| {
                let mut at = 0;
                for (end, i) in ends.iter_mut().zip(rows) {
                    match self.deps[i] {
                        NOT_HELD => {
                            let known = &idx[ptr[i]..ptr[i + 1]];
                            out[at..at + known.len()].copy_from_slice(known);
                            at += known.len();
                        }
                        d => {
                            for t in bits(d) {
                                out[at] = (i + t as usize - HALF) as u32;
                                at += 1;
                            }
                        }
                    }
                    *end = base + at;
                }
            };
        let (ends_first, ends_second) = dep_ptr[1..].split_at_mut(mid);
        let (out_first, out_second) = dep_idx.split_at_mut(first);
        both(
            mid < m,
            || write(0..mid, 0, ends_first, out_first),
            || write(mid..m, first, ends_second, out_second),
        );
        Ok((dep_ptr, dep_idx))
    }
}

impl Refine {
    /// At the split into the last level (`split.rs`, `advance`): when every row is parked or
    /// has no candidate, each parked row's hits all kept, and no row came in quiet where the
    /// lists' passes would let quiet rows share probes, the rows' masks are made from their
    /// dependencies instead of the split writing every parked row back as the lists'
    /// candidates (`Gathered`: the next plan colors them, and writes them back as the split
    /// would have when the lists color the level after all). The planner is left as that split
    /// leaves it otherwise. `false` (nothing changed) when the split must run. Errors: out of
    /// memory.
    pub(super) fn split_into_window(&mut self, hits: &[(u32, u32)]) -> Result<bool> {
        let kept = hits.iter().all(|&(_, k)| k & super::KEPT != 0);
        if !self.by_window || self.shift != 1 || self.n <= 4 * HALF || !kept {
            return Ok(false);
        }
        let Some(gathered) = self.gather(Source::Parked)? else {
            return Ok(false);
        };
        let Shape {
            quiet, restless, ..
        } = gathered.shape;
        // The split's quiet rows (`advance`): kept unless rows still learning are many.
        let quiet_kept = super::RESTLESS_PART * restless <= quiet + restless;
        if quiet_kept && quiet > 0 {
            return Ok(false);
        }
        // What the split leaves: no row parked, every P block of a parked row tested (its hits
        // kept, one changed block each), the quiet rows let go.
        self.parked.rows.fill(super::STORED);
        self.parked.count = 0;
        self.parked.deps = 0;
        self.parked.returned = 0;
        if self.parked.listed_p > 0 {
            self.last_hit_rate = hits.len() as f64 / self.parked.listed_p as f64;
        }
        self.quiet = Default::default();
        self.all_quiet = restless == 0;
        self.release_merged();
        debug_assert!(self.cand_idx.is_empty() && self.cand_ptr[self.m] == 0);
        self.cand_probe = Vec::new();
        self.shift = 0;
        self.bits = super::BRANCH_BITS;
        self.gathered = Some(Box::new(gathered));
        #[cfg(test)]
        {
            self.split_windows += 1;
        }
        Ok(true)
    }

    /// The last level in windows (module docs), when every row with a candidate is held and
    /// the lists could not color it with fewer probes: its probes, the planner in
    /// [`Mode::Window`]. `None` otherwise: nothing changed, or the masks made at the split
    /// written back as the lists' candidates. Errors: out of memory.
    pub(super) fn try_window(&mut self) -> Result<Option<Vec<Probe>>> {
        let gathered = match self.gathered.take() {
            Some(gathered) => *gathered,
            // On a few hundred columns the lists cost nothing worth saving; a quiet row's
            // candidates may share a probe in the lists' passes.
            None if !self.by_window || self.shift != 0 || self.n <= 4 * HALF => return Ok(None),
            None if self.quiet.any() => return Ok(None),
            None => match self.gather(Source::Lists)? {
                Some(gathered) => gathered,
                None => return Ok(None),
            },
        };
        match self.plan_window(gathered)? {
            Ok(probes) => Ok(Some(probes)),
            Err(declined) => {
                self.write_back(&declined)?;
                Ok(None)
            }
        }
    }

    /// The rows' masks from `source`, in two halves at once (`halves.rs`); `None` when a row
    /// with a candidate is not held, no period keeps some row's columns apart, or (from the
    /// parked rows) a row is not as the source asks. Errors: out of memory.
    fn gather(&self, source: Source) -> Result<Option<Gathered>> {
        let (m, n) = (self.m, self.n);
        let cand = filled(0 as Mask, m, "windows");
        let (mut cand, mut deps) = (cand?, filled(NOT_HELD, m, "windows")?);
        let words = n.div_ceil(64) + 2;
        let mut columns = filled(0u64, words, "candidate columns")?;
        // Each half with its own columns' bits.
        let cut = match m + self.dep_idx.len() >= self.halves_from {
            true => m / 2,
            false => m,
        };
        let mut columns_there = match cut < m {
            true => filled(0u64, words, "candidate columns")?,
            false => Vec::new(),
        };
        let (cand_here, cand_there) = cand.split_at_mut(cut);
        let (deps_here, deps_there) = deps.split_at_mut(cut);
        let (here, there) = both(
            cut < m,
            || self.window_rows(0..cut, source, (cand_here, deps_here), &mut columns),
            || self.window_rows(cut..m, source, (cand_there, deps_there), &mut columns_there),
        );
        let (Some(here), Some(there)) = (here, there) else {
            return Ok(None);
        };
        for (word, &other) in columns.iter_mut().zip(&columns_there) {
            *word |= other;
        }
        let shape = here.and(there);
        Ok((shape.valid != 0).then_some(Gathered {
            cand,
            deps,
            columns,
            shape,
        }))
    }

    /// The last level's probes from the rows' masks, the planner in [`Mode::Window`]; the
    /// masks handed back when the lists are to color the level (module docs, "The
    /// coloring"). Errors: out of memory.
    fn plan_window(&mut self, g: Gathered) -> Result<std::result::Result<Vec<Probe>, Gathered>> {
        let n = self.n;
        let Shape {
            valid,
            max_clique,
            max_q,
            ..
        } = g.shape;
        let period = valid.trailing_zeros() as usize + 1;
        // The classes holding a candidate, each a probe.
        let is_set = |j: usize| g.columns[j / 64] >> (j % 64) & 1 != 0;
        let mut probes_cols: Vec<(usize, Vec<u32>)> = Vec::new();
        for class in 0..period.min(n) {
            let mut cols = Vec::new();
            reserve(&mut cols, (n - class).div_ceil(period), "probe columns")?;
            cols.extend(
                (class..n)
                    .step_by(period)
                    .filter(|&j| is_set(j))
                    .map(|j| j as u32),
            );
            cols.shrink_to_fit();
            if !cols.is_empty() {
                push(&mut probes_cols, (class, cols), "probes")?;
            }
        }
        let colors = probes_cols.len();
        let unknown_cols: usize = g.columns.iter().map(|w| w.count_ones() as usize).sum();
        let left = self.cap.saturating_sub(self.asked);
        // The lists' tests (`level.rs`): a dense row, or more probes than one per column or
        // than the cap leaves, sends the level to one probe per column; past one color more
        // than the largest clique the lists' passes may need fewer.
        let dense =
            unknown_cols >= super::MIN_BLOCKS_FOR_DENSE_TEST && 4 * max_q >= 3 * unknown_cols;
        if colors == 0
            || colors > max_clique + 1
            || dense
            || colors >= unknown_cols
            || colors > left
            || colors >= UNTESTED as usize
        {
            return Ok(Err(g));
        }
        // Probe k's bits of the window of a row r modulo the period: column i + t - HALF is in
        // class (r + t + (period - HALF mod period)) mod period.
        let shift = (period - HALF % period) % period;
        let mut masks = filled(0 as Mask, colors * period, "windows")?;
        for (k, &(class, _)) in probes_cols.iter().enumerate() {
            for r in 0..period {
                masks[k * period + r] = (0..2 * HALF)
                    .filter(|&t| (r + t + shift) % period == class)
                    .fold(0 as Mask, |acc, t| acc | (1 as Mask) << t);
            }
        }
        self.window = Some(Box::new(Window {
            period,
            masks,
            cand: g.cand,
            deps: g.deps,
        }));
        self.mode = Mode::Window;
        self.asked += colors;
        self.told = filled(false, colors, "probes told")?;
        // The lists' arrays are not needed until the level ends.
        self.cand_idx = Vec::new();
        self.cand_probe = Vec::new();
        self.spare = Vec::new();
        Ok(Ok(crate::error::collect(
            probes_cols.into_iter().map(|(_, cols)| Probe::new(cols, n)),
            "probes",
        )?))
    }

    /// The masks `g` back as the lists' candidates at the last level, when they were made at
    /// the split (from the lists they are there still). Errors: out of memory.
    fn write_back(&mut self, g: &Gathered) -> Result<()> {
        if self.cand_idx.is_empty() && g.cand.iter().any(|&c| c != 0) {
            self.cand_idx = candidates_of(&g.cand, &[0], &mut self.cand_ptr)?;
            self.cand_probe = filled(UNTESTED, self.cand_idx.len(), "candidate probes")?;
        }
        Ok(())
    }

    /// The masks of `rows` (their `cand` and `deps`, from the first row of `rows` on) read from
    /// `source`, their candidates' columns set in `columns`, and what the coloring needs of
    /// them; `None` when a row with a candidate is not held, no period keeps some row's
    /// columns apart, or a row is not as `source` asks.
    fn window_rows(
        &self,
        rows: std::ops::Range<usize>,
        source: Source,
        (cand, deps): (&mut [Mask], &mut [Mask]),
        columns: &mut [u64],
    ) -> Option<Shape> {
        let lo = rows.start;
        let mut shape = Shape {
            valid: u64::MAX,
            max_clique: 0,
            max_q: 0,
            quiet: 0,
            restless: 0,
        };
        // The pairs of masks met last, with their periods and their rows' clique and Q
        // count (popcounts: software ones on the baseline x86-64, made once per pair); the
        // last one met tried first.
        let mut remembered = [(0 as Mask, 0 as Mask, 0u64, 0usize, 0usize); REMEMBERED];
        let (mut next, mut last) = (0, 0);
        // The step's new dependencies, by row (sorted).
        let mut learned = self.merged.partition_point(|&(r, _)| (r as usize) < lo);
        for i in rows {
            let in_window = |cols: &[u32]| {
                let mut mask: Mask = 0;
                for &j in cols {
                    mask |= (1 as Mask) << offset(i, j)?;
                }
                Some(mask)
            };
            let row_deps = self.deps(i);
            let stored = &self.cand_idx[self.cand_ptr[i]..self.cand_ptr[i + 1]];
            let (c, d) = match source {
                Source::Lists => match (in_window(stored), in_window(row_deps)) {
                    (Some(c), Some(d)) => (c & !d, d),
                    // No candidate: it needs no window.
                    (Some(0), None) => continue,
                    _ => return None,
                },
                Source::Parked => {
                    // As the split would take it: not dense, not sampled dense.
                    let sampled = self.cap != usize::MAX && self.wide.dense(i as u32);
                    if row_deps.len() >= super::DENSE_MIN || sampled {
                        return None;
                    }
                    let first = learned;
                    while learned < self.merged.len() && self.merged[learned].0 as usize == i {
                        learned += 1;
                    }
                    if !row_deps.is_empty() {
                        match learned == first {
                            true => shape.quiet += 1,
                            false => shape.restless += 1,
                        }
                    }
                    match self.parked.is_parked(i) {
                        // The other columns of its dependencies' blocks of 2.
                        true => {
                            let d = in_window(row_deps)?;
                            let mut c: Mask = 0;
                            for &j in row_deps {
                                if ((j ^ 1) as usize) < self.n {
                                    c |= (1 as Mask) << offset(i, j ^ 1)?;
                                }
                            }
                            (c & !d, d)
                        }
                        false if !stored.is_empty() => return None,
                        false => match in_window(row_deps) {
                            Some(d) => (0, d),
                            None => continue,
                        },
                    }
                }
            };
            (cand[i - lo], deps[i - lo]) = (c, d);
            if c == 0 {
                continue;
            }
            set_columns(columns, i, c);
            let at = match remembered[last] {
                (a, b, ..) if (a, b) == (c, d) => last,
                _ => match remembered.iter().position(|&(a, b, ..)| (a, b) == (c, d)) {
                    Some(at) => at,
                    None => {
                        let (p, q) = (c.count_ones() as usize, d.count_ones() as usize);
                        let at = next;
                        remembered[at] = (c, d, periods(c, d), p + q.min(1), q);
                        next = (next + 1) % REMEMBERED;
                        at
                    }
                },
            };
            last = at;
            let (.., valid, clique, q) = remembered[at];
            shape.max_clique = shape.max_clique.max(clique);
            shape.max_q = shape.max_q.max(q);
            shape.valid &= valid;
            if shape.valid == 0 {
                return None;
            }
        }
        Some(shape)
    }

    /// Ends the last level in windows: the candidates left written back as the lists', the
    /// planner refining again (its next `advance` merges the step's dependencies); masks made
    /// at the split and not colored yet (a plan that failed) written back too. Errors: out of
    /// memory.
    pub(super) fn end_window(&mut self) -> Result<()> {
        if let Some(gathered) = self.gathered.take() {
            self.write_back(&gathered)?;
        }
        let Some(window) = self.window.take() else {
            return Ok(());
        };
        self.cand_idx = window.candidates_left(&self.told, &mut self.cand_ptr)?;
        let known = (&self.dep_ptr[..], &self.dep_idx[..]);
        (self.dep_ptr, self.dep_idx) = window.dependencies(known, self.halves_from)?;
        self.cand_probe = filled(UNTESTED, self.cand_idx.len(), "candidate probes")?;
        self.mode = Mode::Refining;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::{EntryKind, Pattern, PatternBuilder};
    use crate::planner::Planner;
    use crate::testing::{banded, block_diagonal, random_sparse, stencil_2d, Synthetic, Winner};
    use crate::BlackBox;

    /// Traces `truth` under `winner` with the last level in windows allowed or not: the
    /// pattern with its kinds, the evaluations, how many steps ran in windows and how many of
    /// those went in at the split (`Refine::split_into_window`); the passes over the rows cut
    /// in two halves from `halves_from` (`halves.rs`). At the last
    /// level every 31st row absorbs the NaNs of its dependencies, and verification reports it
    /// perturbed where a probe holds one.
    fn trace(
        truth: &Pattern,
        winner: Winner,
        by_window: bool,
        halves_from: usize,
    ) -> (Pattern, usize, usize, usize) {
        let (m, n) = (truth.rows(), truth.cols());
        let mut f = Synthetic::new(truth, winner, 5);
        let x0: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 * 1e-3).collect();
        let mut baseline = vec![0.0; m];
        f.eval(&x0, &mut baseline).unwrap();
        let cap = Refine::allowance(n);
        let mut planner = Refine::new(n, baseline.clone(), cap, EntryKind::Assumed).unwrap();
        planner.by_window = by_window;
        planner.halves_from = halves_from;
        let (mut x, mut y) = (x0.clone(), vec![0.0; m]);
        let (mut evaluations, mut windows) = (0, 0);
        loop {
            let probes = planner.ask().unwrap();
            if probes.is_empty() {
                break;
            }
            windows += usize::from(planner.mode == Mode::Window);
            for (k, probe) in probes.iter().enumerate() {
                probe.write_tags(&mut x);
                f.eval(&x, &mut y).unwrap();
                probe.restore(&x0, &mut x);
                let mut perturbed = Vec::new();
                let holds = |j: &u32| probe.cols().binary_search(j).is_ok();
                for i in (3..m).step_by(31) {
                    if planner.shift == 0 && truth.row(i).iter().any(holds) {
                        y[i] = baseline[i];
                        perturbed.push(i as u32);
                    }
                }
                planner.tell(k, probe, &y, &perturbed).unwrap();
                evaluations += 1;
            }
        }
        let builder = PatternBuilder::new(m, n, bitvec::bitvec![0; m]).unwrap();
        let split = planner.split_windows;
        let pattern = Box::new(planner).finish(builder).unwrap();
        (pattern, evaluations, windows, split)
    }

    /// The last level in windows finds what the lists' last level finds, entry by entry and
    /// kind by kind (dependencies seen only by verification included), with no more
    /// evaluations; and it runs on the banded patterns whose rows come into it restless (the
    /// tridiagonal and diagonal blocks under a winner that favours a side: under the random
    /// winner their rows know their dependencies early and come in quiet, a band of 11 needs
    /// more colors by period than its largest clique and one), and not on patterns with no
    /// band (a 2-D stencil, whose rows reach a grid line away; random rows). Every pass over
    /// the rows cut in two halves (the tells, the known dependencies at the window's end) traces
    /// the same, evaluation for evaluation.
    #[test]
    fn windows_trace_what_the_lists_trace() {
        let sides = [false, true, true];
        let cases = [
            (banded(3001, 1), sides),
            (banded(2000, 5), [false; 3]),
            (block_diagonal(1500, 10), sides),
            (stencil_2d(45), [false; 3]),
            (random_sparse(2000, 2000, 5, 9), [false; 3]),
        ];
        for (truth, in_windows) in &cases {
            let winners = [Winner::Random, Winner::Smallest, Winner::Largest];
            for (winner, in_windows) in winners.into_iter().zip(in_windows) {
                let (lists, lists_evaluations, none, _) = trace(truth, winner, false, usize::MAX);
                let (windows, evaluations, steps, split) = trace(truth, winner, true, usize::MAX);
                let what = format!("{} x {} {winner:?}", truth.rows(), truth.cols());
                let (cut, cut_evaluations, cut_steps, _) = trace(truth, winner, true, 0);
                assert_eq!(
                    (cut.row_ptr(), cut.col_idx(), cut.kinds()),
                    (windows.row_ptr(), windows.col_idx(), windows.kinds()),
                    "{what}: in halves"
                );
                assert_eq!((cut_evaluations, cut_steps), (evaluations, steps), "{what}");
                assert_eq!(none, 0);
                assert_eq!(steps > 0, *in_windows, "{what}: {steps} steps in windows");
                // Their rows were all parked: they went in at the split, their masks made
                // from their dependencies. (The band of 11 under the smallest winning goes in
                // at the split too, and its masks are written back for the lists, as the
                // split would have left them.)
                assert!(split > 0 || !in_windows, "{what}: {split} from the split");
                assert_eq!(
                    (windows.row_ptr(), windows.col_idx()),
                    (lists.row_ptr(), lists.col_idx()),
                    "{what}"
                );
                assert_eq!(windows.kinds(), lists.kinds(), "{what}");
                // The absorbing rows' dependencies left to the last level, seen there.
                let seen = |kind| windows.kinds().iter().filter(|&&k| k == kind).count();
                assert!(!in_windows || seen(EntryKind::Perturbation) > 0, "{what}");
                assert!(evaluations <= lists_evaluations, "{what}: {evaluations}");
                // Every dependency found (the absorbing rows' by verification).
                for i in 0..truth.rows() {
                    let row = windows.row(i);
                    let missed = truth.row(i).iter().find(|j| row.binary_search(j).is_err());
                    assert_eq!(missed, None, "{what}: row {i}");
                }
            }
        }
    }

    #[test]
    fn offsets_and_periods() {
        assert_eq!(offset(100, 100), Some(32));
        assert_eq!(offset(100, 68), Some(0));
        assert_eq!(offset(100, 67), None);
        assert_eq!(offset(100, 131), Some(63));
        assert_eq!(offset(100, 132), None);
        assert_eq!(offset(3, 0), Some(29));
        // A tridiagonal row's candidate two past it, its dependencies beside it: period 4
        // keeps them apart, 3 does not (+2 and -1 alike), nor do 1 and 2.
        let (c, d) = (1 << 34, 0b111 << 31);
        let valid = periods(c, d);
        assert_eq!(valid.trailing_zeros() + 1, 4);
        assert_eq!(valid & 0b111, 0);
        // Two candidates alike modulo 2 and 4.
        let valid = periods(1 << 10 | 1 << 14, 0);
        assert_eq!(valid & (1 << 1 | 1 << 3), 0);
        assert_ne!(valid & 1 << 2, 0);
    }

    #[test]
    fn a_windows_columns_land_on_their_bits() {
        let set = |i: usize, mask: Mask| {
            let mut words = vec![0u64; 6];
            set_columns(&mut words, i, mask);
            (0..384)
                .filter(|&j| words[j / 64] >> (j % 64) & 1 != 0)
                .collect::<Vec<usize>>()
        };
        assert_eq!(set(100, 1 << 32 | 1 << 63 | 1), vec![68, 100, 131]);
        assert_eq!(set(3, 1 << 29 | 1 << 38), vec![0, 9]);
        assert_eq!(set(32, 1 | 1 << 63), vec![0, 63]);
        assert_eq!(set(40, 1 << 20 | 1 << 63), vec![28, 71]);
    }
}
