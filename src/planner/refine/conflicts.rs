//! Counting a block's conflicts with each color, for the level coloring (`level.rs`).
//!
//! Coloring a block asks, for every color so far, how many blocks of the block's rows took
//! it, by their kind for the row (P or Q); the row's flags turn each kind into a hard, soft or
//! blind soft conflict (or none), weighted by how many rows share the row's list, and a
//! palette picks the color. A row keeps what its blocks took so far in one of two ways, behind
//! one trait ([`Conflicts`]) so that the coloring loop is written once:
//!
//! * [`Lists`]: the colors themselves, P-flagged, in the row's short list (its block list,
//!   no longer needed once transposed). Coloring a block reads the whole list of each of its
//!   rows, one increment per entry. Any number of colors: the last level, and banded patterns,
//!   whose lists are short and in cache.
//! * [`Tallies`]: how many of the row's P blocks and how many of its Q blocks took each of
//!   the first [`TALLY_COLORS`] colors, a byte each, in one aligned 32-byte record (in the
//!   space of the block lists, when it is long enough: no new allocation). Coloring a
//!   block adds each row's two tallies to the counts in a fixed number of vector steps: no loop
//!   over the row's list, no branch on its length, and one record per row where a list spans
//!   up to two cache lines. For the coarse levels of patterns without locality, where the
//!   palette is capped at a few colors while a row's list is long (random 5 per row: a cap of
//!   12, about 16 blocks a row, visited 16 million times a level at n = 10^6). Under a cap of
//!   at most 14 colors the lanes of colors 14 and 15 are free, and the record also holds the
//!   row's blind flag and weight there: coloring a block then reads one scattered line per
//!   row, not two (the row's list entry too).
//!
//! * [`Masks`]: at the last level, where every conflict that counts is hard and a block takes
//!   the first color with none, only which colors a row's P blocks and which its Q blocks took
//!   matters, not how many: two 64-bit masks per row, in one 16-byte record (in the space of
//!   the block lists, as tallies are), with the row's quiet flag in the Q mask's top bit.
//!   Coloring a block ORs one mask or two per row into the forbidden colors: no loop over the
//!   row's list, whose length squared, summed over the rows, was the last level's cost
//!   (random 5 per row at n = 10^6: about 13 blocks a row). Up to 63 colors; a pass that
//!   needs more gives up ([`Conflicts::choose`] returns `None`) and is made again with lists.
//!
//! All count the same conflicts and pick by the same rule ([`pick`]), so the coloring is the
//! same whichever is used.

use super::P_FLAG;
use crate::error::{push, Result};
use crate::prefetch::prefetch;

/// The slots of a color's counts: (hard, blind soft, soft) conflicts, and a fourth that takes
/// what counts for nothing, so the counting has no branch.
pub(super) const HARD: usize = 0;
pub(super) const BLIND_SOFT: usize = 1;
pub(super) const SOFT: usize = 2;
pub(super) const UNUSED: usize = 3;

/// The colors a row's tally counts ([`TALLY_WORDS`]): a palette capped at this many or fewer
/// can be tallied.
pub(super) const TALLY_COLORS: usize = 16;

/// The longest row list a tally can count (a byte per color and kind).
pub(super) const TALLY_MAX_LIST: usize = u8::MAX as usize;

/// A row's blocks colored so far, and the conflicts they give the block being colored.
pub(super) trait Conflicts {
    /// Row r's list entry: its start with the blind flag, its fill, its weight with the quiet
    /// flag (see `Refine::plan_level`).
    fn entry(&self, r: usize) -> (u32, u32, u32);
    /// Asks for what [`Conflicts::count`] will read of row r, well ahead of it.
    fn prefetch_far(&self, r: usize);
    /// Asks for what [`Conflicts::count`] will read of row r, shortly before it (the entry
    /// was asked for by [`Conflicts::prefetch_far`]).
    fn prefetch_near(&self, r: usize);
    /// Counts the conflicts of row r's colored blocks with the block being colored: each P
    /// block into slot `slots.0` of its color, each Q block into `slots.1`, weighted by `w`.
    fn count(&mut self, r: usize, slots: (usize, usize), w: u32);
    /// The color for the block whose conflicts were counted ([`pick`]); clears the counts.
    /// `None` when that color is one more than this representation can hold ([`Masks`]).
    fn choose(&mut self, cap: usize) -> Result<Option<u32>>;
    /// Notes that a block of row r, of kind `p_flag` (`P_FLAG` or 0), took color `c`.
    fn add(&mut self, r: usize, c: u32, p_flag: u32);
    /// The colors used so far.
    fn colors(&self) -> usize;
    /// The hard conflicts the chosen colors held, weighted, summed over the blocks colored
    /// so far: at a capped coarse level, the P blocks of rows that their probes cannot test
    /// (a full palette gave each block the color with the fewest).
    fn hard_taken(&self) -> u64;
}

/// The color for a block, from the first color with the fewest (hard, blind soft, soft)
/// conflicts as one key (`u128::MAX`: the palette is empty): that color when it has neither
/// hard nor blind soft conflicts, or the palette holds `cap` colors already; `None` for a new
/// color.
#[inline(always)]
fn pick((key, c): (u128, usize), len: usize, cap: usize) -> Option<u32> {
    (key >> 32 == 0 || (len >= cap && key != u128::MAX)).then_some(c as u32)
}

/// The hard conflicts in a key ([`key`]).
#[inline(always)]
fn hard_of(key: u128) -> u64 {
    (key >> 64) as u64
}

/// The three conflict counts as one key, hard first.
#[inline(always)]
fn key(hard: u32, blind_soft: u32, soft: u32) -> u128 {
    u128::from(hard) << 64 | u128::from(blind_soft) << 32 | u128::from(soft)
}

/// Rows' colors so far as lists: row r's colored blocks, color | P flag, from its start to
/// its fill in `seen`; any number of colors.
pub(super) struct Lists<'a> {
    lists: &'a mut [(u32, u32, u32)],
    seen: &'a mut [u32],
    /// Per color, its counts at [`HARD`], [`BLIND_SOFT`], [`SOFT`], [`UNUSED`].
    counts: Vec<[u32; 4]>,
    /// [`Conflicts::hard_taken`].
    taken: u64,
}

impl<'a> Lists<'a> {
    /// The rows' lists, filled from their fill positions on ([`restart`] empties them).
    pub fn new(lists: &'a mut [(u32, u32, u32)], seen: &'a mut [u32]) -> Self {
        Lists {
            lists,
            seen,
            counts: Vec::new(),
            taken: 0,
        }
    }
}

impl Conflicts for Lists<'_> {
    #[inline(always)]
    fn entry(&self, r: usize) -> (u32, u32, u32) {
        self.lists[r]
    }

    #[inline(always)]
    fn prefetch_far(&self, r: usize) {
        prefetch(self.lists, r);
    }

    #[inline(always)]
    fn prefetch_near(&self, r: usize) {
        if let Some(&(start, ..)) = self.lists.get(r) {
            prefetch(self.seen, (start & !P_FLAG) as usize);
        }
    }

    #[inline(always)]
    fn count(&mut self, r: usize, (if_p, if_q): (usize, usize), w: u32) {
        let (start, end, _) = self.lists[r];
        for &u in &self.seen[(start & !P_FLAG) as usize..end as usize] {
            let slot = if u & P_FLAG != 0 { if_p } else { if_q };
            self.counts[(u & !P_FLAG) as usize][slot] += w;
        }
    }

    #[inline(always)]
    fn choose(&mut self, cap: usize) -> Result<Option<u32>> {
        let mut best = (u128::MAX, 0);
        for (c, k) in self.counts.iter_mut().enumerate() {
            let key = key(k[HARD], k[BLIND_SOFT], k[SOFT]);
            if key < best.0 {
                best = (key, c);
            }
            *k = [0; 4];
        }
        if let Some(c) = pick(best, self.counts.len(), cap) {
            self.taken += hard_of(best.0);
            return Ok(Some(c));
        }
        push(&mut self.counts, [0; 4], "colors")?;
        Ok(Some(self.counts.len() as u32 - 1))
    }

    #[inline(always)]
    fn add(&mut self, r: usize, c: u32, p_flag: u32) {
        let end = &mut self.lists[r].1;
        self.seen[*end as usize] = c | p_flag;
        *end += 1;
    }

    fn colors(&self) -> usize {
        self.counts.len()
    }

    fn hard_taken(&self) -> u64 {
        self.taken
    }
}

/// Empties the rows' colors so far, for another coloring pass with [`Lists`].
pub(super) fn restart(lists: &mut [(u32, u32, u32)]) {
    for l in lists {
        l.1 = l.0 & !P_FLAG;
    }
}

/// The probes (colors below 64) holding one of the P blocks in a row's colors so far `list`
/// (color | P flag); `None` when one is 64 or more.
pub(super) fn p_mask_of_list(list: &[u32]) -> Option<u64> {
    let mut mask = 0u64;
    for &c in list.iter().filter(|&&c| c & P_FLAG != 0) {
        mask |= 1u64.checked_shl(c & !P_FLAG)?;
    }
    Some(mask)
}

/// A row's tally: how many of its P blocks (the first 16 byte lanes) and of its Q blocks
/// (the last 16) took each of the first [`TALLY_COLORS`] colors, lane `i` in bits `8 (i % 4)`
/// of word `i / 4`. Kept in the space of the block lists, which the coloring no longer needs.
const TALLY_WORDS: usize = 2 * TALLY_COLORS / 4;

/// Rows' colors so far as tallies: a palette of at most [`TALLY_COLORS`] colors, rows whose
/// lists hold at most [`TALLY_MAX_LIST`] blocks (so no lane overflows).
pub(super) struct Tallies<'a> {
    lists: &'a [(u32, u32, u32)],
    /// Each row's blind flag and weight are in its record ([`Tallies::new`]), not read from
    /// `lists`.
    packed: bool,
    /// Row r's tally, aligned so that none straddles a cache line.
    tallies: &'a mut [[u32; TALLY_WORDS]],
    /// Per slot ([`HARD`], [`BLIND_SOFT`], [`SOFT`], [`UNUSED`]), every color's count: fixed
    /// lanes, zero past the palette.
    counts: [[u32; TALLY_COLORS]; 4],
    len: usize,
    /// [`Conflicts::hard_taken`].
    taken: u64,
}

impl<'a> Tallies<'a> {
    /// The space [`Tallies::new`] needs for `rows` row lists, in words.
    pub fn space(rows: usize) -> usize {
        // Up to a 32-byte boundary first: 8 words at most.
        TALLY_WORDS * (rows + 1)
    }

    /// Zeroed tallies for the row lists of `lists` (all but its extra last entry), in `space`
    /// (the block lists, no longer needed: at least [`Tallies::space`] words), for a palette
    /// capped at `cap` colors; `None` when the space is shorter. Under a cap of at most
    /// [`PACKED_CAP`] each row's blind flag and weight go into the free lanes of its record
    /// (the weight's top bit must be clear, as it is but for a quiet row of the last level,
    /// which keeps lists): upper halves of the P and the Q half's last words.
    pub fn new(lists: &'a [(u32, u32, u32)], space: &'a mut [u32], cap: usize) -> Option<Self> {
        let rows = lists.len().saturating_sub(1);
        let skip = ((space.as_ptr() as usize).wrapping_neg() % (4 * TALLY_WORDS)) / 4;
        let tallies = space.get_mut(skip..skip + TALLY_WORDS * rows)?;
        let (tallies, _) = tallies.as_chunks_mut::<TALLY_WORDS>();
        let wanted = cap <= PACKED_CAP;
        let mut packed = wanted;
        for (t, l) in tallies.iter_mut().zip(lists) {
            *t = [0; TALLY_WORDS];
            if packed {
                packed = l.2 & P_FLAG == 0;
                let v = (l.0 & P_FLAG) | l.2;
                (t[PACKED_LOW], t[PACKED_HIGH]) = (v << 16, v & 0xffff_0000);
            }
        }
        if wanted && !packed {
            // A weight too large: the rows packed so far are emptied again.
            tallies.fill([0; TALLY_WORDS]);
        }
        Some(Tallies {
            lists,
            packed,
            tallies,
            counts: [[0; TALLY_COLORS]; 4],
            len: 0,
            taken: 0,
        })
    }

    /// The colors holding one of row r's P blocks, as bits.
    pub fn p_mask(&self, r: usize) -> u64 {
        let lanes = lanes(&self.tallies[r][..TALLY_WORDS / 2]);
        (lanes.iter().take(self.len).enumerate())
            .filter(|(_, &k)| k != 0)
            .fold(0, |mask, (c, _)| mask | 1 << c)
    }
}

/// The most colors under which [`Tallies`] keep a row's blind flag and weight in its record:
/// colors 14 and 15 then never take a block, and their P and Q lanes (the upper halves of the
/// words [`PACKED_LOW`] and [`PACKED_HIGH`]) hold the low and high 16 bits of
/// `blind flag | weight`. Counting adds those lanes to counts no color reads.
const PACKED_CAP: usize = TALLY_COLORS - 2;
const PACKED_LOW: usize = TALLY_WORDS / 2 - 1;
const PACKED_HIGH: usize = TALLY_WORDS - 1;

/// Half a tally's words as its 16 byte lanes.
#[inline(always)]
fn lanes(words: &[u32]) -> [u8; TALLY_COLORS] {
    let mut lanes = [0u8; TALLY_COLORS];
    for (four, w) in lanes.chunks_exact_mut(4).zip(words) {
        four.copy_from_slice(&w.to_le_bytes());
    }
    lanes
}

/// `counts += w * tally`, lane by lane (vectorized: both copied into locals first, so that no
/// store can alias a load).
#[inline(always)]
fn add_scaled(counts: &mut [u32; TALLY_COLORS], tally: [u8; TALLY_COLORS], w: u32) {
    let mut sum = *counts;
    for (k, t) in sum.iter_mut().zip(tally) {
        *k = k.wrapping_add(u32::from(t).wrapping_mul(w));
    }
    *counts = sum;
}

impl Conflicts for Tallies<'_> {
    /// Row r's blind flag and weight; its start and fill only when they are not packed (the
    /// coloring reads neither).
    #[inline(always)]
    fn entry(&self, r: usize) -> (u32, u32, u32) {
        if self.packed {
            let t = &self.tallies[r];
            let v = (t[PACKED_LOW] >> 16) | (t[PACKED_HIGH] & 0xffff_0000);
            return (v & P_FLAG, 0, v & !P_FLAG);
        }
        self.lists[r]
    }

    #[inline(always)]
    fn prefetch_far(&self, r: usize) {
        if !self.packed {
            prefetch(self.lists, r);
        }
        prefetch(self.tallies, r);
    }

    #[inline(always)]
    fn prefetch_near(&self, _: usize) {}

    #[inline(always)]
    fn count(&mut self, r: usize, (if_p, if_q): (usize, usize), w: u32) {
        let t = &self.tallies[r];
        let (p, q) = (lanes(&t[..TALLY_WORDS / 2]), lanes(&t[TALLY_WORDS / 2..]));
        add_scaled(&mut self.counts[if_p], p, w);
        add_scaled(&mut self.counts[if_q], q, w);
    }

    #[inline(always)]
    fn choose(&mut self, cap: usize) -> Result<Option<u32>> {
        debug_assert!(cap <= TALLY_COLORS);
        let mut best = (u128::MAX, 0);
        for c in 0..self.len {
            let k = key(
                self.counts[HARD][c],
                self.counts[BLIND_SOFT][c],
                self.counts[SOFT][c],
            );
            if k < best.0 {
                best = (k, c);
            }
        }
        self.counts = [[0; TALLY_COLORS]; 4];
        if let Some(c) = pick(best, self.len, cap) {
            self.taken += hard_of(best.0);
            return Ok(Some(c));
        }
        self.len += 1;
        Ok(Some(self.len as u32 - 1))
    }

    #[inline(always)]
    fn add(&mut self, r: usize, c: u32, p_flag: u32) {
        let lane = c as usize + if p_flag != 0 { 0 } else { TALLY_COLORS };
        self.tallies[r][lane / 4] += 1 << (8 * (lane % 4));
    }

    fn colors(&self) -> usize {
        self.len
    }

    fn hard_taken(&self) -> u64 {
        self.taken
    }
}

/// The quiet flag of a row's list weight (`level.rs`, and the `refine` module docs, "The last
/// level"); [`Masks`] keep it in bit [`MASK_COLORS`] of the row's Q mask.
pub(super) const QUIET: u32 = 1 << 31;

/// The colors [`Masks`] can hold: bit 63 of a row's Q mask is its quiet flag.
const MASK_COLORS: u32 = 63;

/// Rows' colors so far as two masks each, for the last level's coloring (module docs): a
/// row's record is `[P colors low, P colors high, Q colors low, Q colors high]`, 16 bytes,
/// aligned so that none straddles a cache line.
pub(super) struct Masks<'a> {
    records: &'a mut [[u32; 4]],
    /// The colors the block being colored may not take.
    forbidden: u64,
    len: u32,
}

impl<'a> Masks<'a> {
    /// Empty masks for the row lists of `lists` (all but its extra last entry), with each
    /// row's quiet flag, in `space` (the block lists, no longer needed); `None` when it is
    /// shorter than 4 words a row (after up to 3 to a 16-byte boundary).
    pub fn new(lists: &[(u32, u32, u32)], space: &'a mut [u32]) -> Option<Self> {
        let rows = lists.len().saturating_sub(1);
        let skip = ((space.as_ptr() as usize).wrapping_neg() % 16) / 4;
        let records = space.get_mut(skip..skip + 4 * rows)?;
        let (records, _) = records.as_chunks_mut::<4>();
        for (m, l) in records.iter_mut().zip(lists) {
            *m = [0, 0, 0, l.2 & QUIET];
        }
        Some(Masks {
            records,
            forbidden: 0,
            len: 0,
        })
    }
}

/// A record's two masks.
#[inline(always)]
fn masks_of(m: &[u32; 4]) -> (u64, u64) {
    let p = u64::from(m[0]) | u64::from(m[1]) << 32;
    let q = u64::from(m[2]) | u64::from(m[3]) << 32;
    (p, q)
}

impl Conflicts for Masks<'_> {
    /// Row r's quiet flag, with a weight of one (at the last level only whether a color has
    /// a conflict counts, not how many rows it has); never blind (the last level does not
    /// ask).
    #[inline(always)]
    fn entry(&self, r: usize) -> (u32, u32, u32) {
        (0, 0, 1 | (self.records[r][3] & QUIET))
    }

    #[inline(always)]
    fn prefetch_far(&self, r: usize) {
        prefetch(self.records, r);
    }

    #[inline(always)]
    fn prefetch_near(&self, _: usize) {}

    #[inline(always)]
    fn count(&mut self, r: usize, (if_p, if_q): (usize, usize), _: u32) {
        debug_assert!([if_p, if_q].iter().all(|&s| s == HARD || s == UNUSED));
        let (p, q) = masks_of(&self.records[r]);
        let q = q & !(1 << MASK_COLORS);
        // Branch-free: a mask counts when its slot is HARD.
        let take = |slot: usize, mask: u64| mask & (u64::from(slot == HARD)).wrapping_neg();
        self.forbidden |= take(if_p, p) | take(if_q, q);
    }

    #[inline(always)]
    fn choose(&mut self, _: usize) -> Result<Option<u32>> {
        let c = (!self.forbidden).trailing_zeros();
        self.forbidden = 0;
        if c < self.len {
            return Ok(Some(c));
        }
        if self.len == MASK_COLORS {
            return Ok(None);
        }
        self.len += 1;
        Ok(Some(self.len - 1))
    }

    #[inline(always)]
    fn add(&mut self, r: usize, c: u32, p_flag: u32) {
        let word = 2 * usize::from(p_flag == 0) + (c / 32) as usize;
        self.records[r][word] |= 1 << (c % 32);
    }

    fn colors(&self) -> usize {
        self.len as usize
    }

    /// None: the last level's palette has no cap, every block takes a color free of hard
    /// conflicts.
    fn hard_taken(&self) -> u64 {
        0
    }
}
