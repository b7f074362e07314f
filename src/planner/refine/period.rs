//! Coarse levels of a banded pattern colored by the greedy pass's own period, without lists.
//!
//! # Why
//!
//! At the fine coarse levels of a band (blocks of 2 to 32 columns) every row is parked
//! (`parked.rs`), but its list differs from its neighbours': a run of rows shares a list only
//! inside one block. So the listing writes a list for about every row, the transpose turns
//! them round, and the greedy pass (`level.rs`, `color_blocks`) visits every (block, row)
//! pair. On the tridiagonal at n = 10^6 the levels of blocks of 8, 4 and 2 took 22-32, 33-43
//! and 45-66 ms of planning that way (the listing, the transpose and the pass; timer builds, four
//! traces in a slow hour), a sixth to a fifth of the library's time, for 8 of its 50
//! evaluations. Yet the rows repeat: row i's dependencies are row i - R's moved by R columns, R
//! the width of the level's parent blocks, and the pass's colors repeat with them (0 1 1 0 over
//! the blocks of 4 and of 2).
//!
//! # What is taken
//!
//! A coarse level of blocks of at most [`MOST_SHIFT`] bits where every row with candidates is
//! parked, every parked row's dependencies lie within [`HALF`] columns of the row, and all but
//! [`MOST_BREAKS`] rows repeat the row R before them (R = `2^(s + bits)`, the parent blocks'
//! width: then their blocks are the same moved by `2^bits` blocks). Anything else is listed.
//! On the tridiagonal that is the levels of blocks of 4 and 2; those of 8 and 32 take four
//! colors while the rows have settled, where the lists may color them again by saturation
//! classes (below), and are listed.
//!
//! # The greedy pass, exactly
//!
//! The pass colors the probed blocks in increasing order, each with the first color of the
//! fewest (hard, soft) conflicts with the colors its rows' blocks took so far, or a new one (up
//! to the cap). So block b's color depends only on the rows holding b (their blocks, P or Q)
//! and on the colors of the blocks before b that those rows hold, all within `span` blocks
//! before it. Where the rows repeat, the rows holding b are those holding `b - p` moved by
//! `p 2^s` rows (p a multiple of `2^bits`). Once the colors of the `span` blocks before b are
//! those of the `span` blocks before `b - p`, and no block after `b - p` opened a color (one
//! would be free at b, where it did not exist at `b - p`), block b takes the color of `b - p`,
//! and then the same holds for `b + 1`: the colors repeat as long as the rows do.
//!
//! So the pass is simulated block by block from the rows' dependencies (each row weighing one,
//! as a shared list weighs its rows) until its last `span` colors repeat with some period p.
//! From there each block takes the color p blocks before it, as long as the rows around it
//! repeat, and the simulation takes over again where they stop (the last rows). The colors
//! are the pass's own, block for block, so the probes, the tells and every level after are the
//! lists' (the side-by-side test below; the fingerprint suite's 1168 traces are unchanged).
//!
//! What the rest of the level reads from the lists is made without them: the listed blocks,
//! the coloring work and the most Q blocks of a row from the rows' dependencies (counts); each
//! parked row's probe mask, for the tells (`Parked::spans`), from the colors, copied from the
//! row `p 2^s` before where both rows' blocks lie where the colors repeat. A level where the
//! lists would do more than one greedy pass (color again with parked rows apart, or by
//! saturation classes), take hard conflicts under the cap, or leave refining for one probe per
//! column, is listed instead, and decides as before.

use super::level::{coarse_cap, work_limit, APART_HIT_RATE};
use super::{saturation, Refine, SPEND_DIVISOR, SPEND_SLACK, UNTESTED};
use crate::error::{collect, filled, push, reserve, Result};
use crate::halves::both;
use crate::planner::parked::{for_each_block, Kind, STORED};
use crate::probe::Probe;

/// A parked row's dependencies lie within this many columns of its own index, on either side.
const HALF: usize = 32;

/// The widest blocks colored this way: `2^MOST_SHIFT` columns. Above, runs of parked rows
/// share lists and the listing costs little.
const MOST_SHIFT: u32 = 5;

/// Levels of fewer blocks are listed.
const LEAST_BLOCKS: usize = 1024;

/// Rows that need not repeat the row R before them: past this the rows are not taken to repeat.
const MOST_BREAKS: usize = 1024;

/// The blocks whose colors tell whether a settled level takes three colors or more.
const FIRST_BLOCKS: usize = 256;

/// The longest period of the colors looked for, in multiples of the rows' period in blocks.
const MOST_PERIOD: usize = 8;

/// A level's coloring by the pass's period, and what the level reads of its rows.
struct Colored {
    color: Vec<u32>,
    probed: Vec<bool>,
    is_cand: Vec<bool>,
    colors: usize,
    /// The last block that opened a color, if any.
    opened: Option<usize>,
    /// `(first block, end, period)`: stretches where each block took the color `period` before.
    copied: Vec<(usize, usize, usize)>,
}

impl Colored {
    /// No block colored yet, of `blocks`. Errors: out of memory.
    fn new(blocks: usize) -> Result<Self> {
        Ok(Colored {
            color: filled(u32::MAX, blocks, "block colors")?,
            probed: filled(false, blocks, "block flags")?,
            is_cand: filled(false, blocks, "block flags")?,
            colors: 0,
            opened: None,
            copied: Vec::new(),
        })
    }
}

/// Per row: what the listing would count of it.
#[derive(Default)]
struct Counts {
    listed: usize,
    listed_p: usize,
    work: u64,
    max_q: usize,
}

impl Refine {
    /// The current coarse level's probes, colored by the greedy pass's period (module docs);
    /// `None` when the level is for the lists.
    pub(super) fn try_period(&mut self) -> Result<Option<Vec<Probe>>> {
        let (s, n, m) = (self.shift, self.n, self.m);
        let nblocks = (n as u64).div_ceil(1u64 << s) as usize;
        if !self.by_period
            || s == 0
            || s > MOST_SHIFT
            || nblocks < LEAST_BLOCKS
            || !self.cand_idx.is_empty()
            || self.parked.count == 0
        {
            return Ok(None);
        }
        // A settled level that takes three colors or more is colored again by saturation
        // classes when they need fewer (`level.rs`): the lists' to decide. The greedy pass's
        // first blocks tell, before the rows are read.
        let settled = self.by_classes && self.last_hit_rate < saturation::SETTLED_HIT_RATE;
        if settled && self.first_colors(nblocks.min(FIRST_BLOCKS))? >= 3 {
            return Ok(None);
        }
        let Some((breaks, counts)) = self.repeating_rows()? else {
            return Ok(None);
        };
        let cap = coarse_cap(counts.max_q, self.cap_growth);
        let Some(c) = self.greedy_by_period(nblocks, &breaks, cap)? else {
            return Ok(None);
        };
        // What the lists would do past one greedy pass (`level.rs`): colored again by
        // saturation classes (settled rows, three colors or more), or with parked rows' P
        // blocks apart (below, once their masks are made).
        if c.colors >= 3 && settled {
            return Ok(None);
        }
        let probed_blocks = c.probed.iter().filter(|&&p| p).count();
        let unknown_cols: usize = (0..nblocks)
            .filter(|&b| c.is_cand[b])
            .map(|b| {
                let (start, end) = self.block_range(b as u32, s);
                (end - start) as usize
            })
            .sum();
        let per_probe = n + m + self.dep_idx.len();
        let limit = work_limit(counts.listed, (unknown_cols, per_probe), s, true);
        // The lists' checks that may leave refining (`level.rs`): the work, dense at this
        // scale (every block its own color), the allowance, the cap.
        let allowance = unknown_cols / SPEND_DIVISOR + SPEND_SLACK.min(n / 4);
        let left = self.cap.saturating_sub(self.asked);
        let past = unknown_cols <= left && self.spent + c.colors > allowance;
        if counts.work > limit
            || c.colors >= probed_blocks
            || past
            || c.colors > left
            || c.colors >= UNTESTED as usize
            || c.colors > 64
        {
            return Ok(None);
        }
        let Some((spans, sharing)) = self.masks_by_period(&c, &breaks)? else {
            return Ok(None);
        };
        if self.last_hit_rate >= APART_HIT_RATE && 2 * sharing > self.parked.count {
            return Ok(None);
        }
        // The level as the lists would leave it: its probes, the parked rows' masks and
        // listed P blocks, the block colors for the tells.
        self.asked += c.colors;
        let mut cols: Vec<Vec<u32>> = filled(Vec::new(), c.colors, "probes")?;
        for b in (0..nblocks).filter(|&b| c.probed[b]) {
            let (start, end) = self.block_range(b as u32, s);
            let class = &mut cols[c.color[b] as usize];
            reserve(class, (end - start) as usize, "probe columns")?;
            class.extend(start..end);
        }
        self.told = filled(false, c.colors, "probes told")?;
        self.parked.spans = spans;
        self.parked.listed_p = counts.listed_p;
        self.parked.colors = c.color;
        self.far = false;
        #[cfg(test)]
        {
            self.period_levels += 1;
        }
        Ok(Some(collect(
            cols.into_iter().map(|cols| Probe::new(cols, n)),
            "probes",
        )?))
    }

    /// The rows that do not repeat the row R before them (sorted; the first R rows and the last
    /// few among them), and what the listing would count; `None` when a parked row reaches
    /// past [`HALF`] or more than [`MOST_BREAKS`] rows do not repeat. In two halves of the rows
    /// on two cores (`halves.rs`).
    fn repeating_rows(&self) -> Result<Option<(Vec<usize>, Counts)>> {
        let m = self.m;
        let at_once = m >= self.halves_from;
        let mid = if at_once { m / 2 } else { m };
        let (first, second) = both(
            at_once,
            || self.repeating_in(0..mid),
            || self.repeating_in(mid..m),
        );
        let (Some((mut breaks, mut counts)), Some((more, other))) = (first?, second?) else {
            return Ok(None);
        };
        if breaks.len() + more.len() > MOST_BREAKS {
            return Ok(None);
        }
        reserve(&mut breaks, more.len(), "rows")?;
        breaks.extend_from_slice(&more);
        counts.listed += other.listed;
        counts.listed_p += other.listed_p;
        counts.work += other.work;
        counts.max_q = counts.max_q.max(other.max_q);
        Ok(Some((breaks, counts)))
    }

    /// [`Refine::repeating_rows`] over `rows`: which rows repeat the row R before them, 64 rows
    /// at a time where they all do (one comparison of their dependencies' arrays, with no
    /// branch a row), one by one where some do not; then what the listing would count, a row
    /// that repeats counting as the row R before it.
    fn repeating_in(&self, rows: std::ops::Range<usize>) -> Result<Option<(Vec<usize>, Counts)>> {
        let r = 1usize << (self.shift + self.bits);
        // The last rows' blocks may be cut short at n: they do not repeat.
        let last = self.n.saturating_sub(HALF + 2 * r).min(rows.end);
        let mut breaks = Vec::new();
        let mut i = rows.start;
        while i < rows.end {
            let end = (i + 64).min(rows.end);
            if !(i >= r && end <= last && self.all_repeat(i..end, r)) {
                for k in (i..end).filter(|&k| !(k >= r && k < last && self.repeats(k, r))) {
                    if breaks.len() == MOST_BREAKS {
                        return Ok(None);
                    }
                    push(&mut breaks, k, "rows")?;
                }
            }
            i = end;
        }
        // Each row's (blocks, Q blocks), the last R rows' kept; a row that repeats has the row
        // R before's (those before `rows` are worked out).
        let mut ring = vec![(0usize, 0usize); r];
        let mut counts = Counts::default();
        let mut next = 0;
        for i in rows.clone() {
            let repeats = match breaks.get(next) {
                Some(&k) if k == i => {
                    next += 1;
                    false
                }
                _ => i >= rows.start + r,
            };
            let (len, q) = match repeats {
                true => ring[i % r],
                false if self.parked.rows[i] == STORED => (0, 0),
                false => {
                    let Some(blocks) = self.blocks_of(i) else {
                        return Ok(None);
                    };
                    blocks
                }
            };
            ring[i % r] = (len, q);
            if len > q {
                counts.listed += len;
                counts.work += (len * len) as u64;
                counts.listed_p += len - q;
                counts.max_q = counts.max_q.max(q);
            }
        }
        Ok(Some((breaks, counts)))
    }

    /// Whether parked row i's dependencies lie within [`HALF`] columns of it, and then how many
    /// blocks it lists ([`for_each_block`]) and how many of them hold a dependency (Q or full).
    fn blocks_of(&self, i: usize) -> Option<(usize, usize)> {
        let deps = self.deps(i);
        if !deps
            .iter()
            .all(|&d| (d as usize) + HALF >= i && (d as usize) < i + HALF)
        {
            return None;
        }
        let (mut len, mut q) = (0usize, 0usize);
        for_each_block(deps, self.shift, self.bits, self.n, |_, kind| {
            len += 1;
            q += usize::from(kind != Kind::P);
        });
        Some((len, q))
    }

    /// Whether row i repeats the row r before it (`i >= r`): both parked or neither, and a
    /// parked row's dependencies the other's moved by r.
    fn repeats(&self, i: usize, r: usize) -> bool {
        let parked = self.parked.rows[i] != STORED;
        parked == (self.parked.rows[i - r] != STORED) && {
            let (deps, before) = (self.deps(i), self.deps(i - r));
            !parked
                || (before.len() == deps.len()
                    && (before.iter().zip(deps)).all(|(&a, &b)| a as usize + r == b as usize))
        }
    }

    /// Whether every row of `rows` (from r on) repeats the row r before it, rows not parked
    /// included only as far as they have the same number of dependencies: folds with no
    /// branch a row (a false answer is checked row by row).
    fn all_repeat(&self, rows: std::ops::Range<usize>, r: usize) -> bool {
        let (codes, ptr, idx) = (&self.parked.rows, &self.dep_ptr, &self.dep_idx);
        let (a, b) = (rows.start, rows.end);
        let parked = |c: u8| c != STORED;
        let same_codes = (codes[a..b].iter().zip(&codes[a - r..b - r]))
            .fold(true, |all, (&x, &y)| all & (parked(x) == parked(y)));
        let shift = ptr[a].wrapping_sub(ptr[a - r]);
        let same_ptr = (ptr[a..=b].iter().zip(&ptr[a - r..=b - r]))
            .fold(true, |all, (&x, &y)| all & (x.wrapping_sub(y) == shift));
        same_codes
            && same_ptr
            && (idx[ptr[a]..ptr[b]].iter().zip(&idx[ptr[a - r]..ptr[b - r]]))
                .fold(true, |all, (&x, &y)| all & (x as usize == y as usize + r))
    }

    /// The greedy pass over the level's blocks (module docs): simulated where the rows or the
    /// colors do not repeat, copied a period back where they do. `None` when the pass takes a
    /// hard conflict under the cap (the lists then count it).
    fn greedy_by_period(
        &self,
        nblocks: usize,
        breaks: &[usize],
        cap: usize,
    ) -> Result<Option<Colored>> {
        let (s, bits) = (self.shift, self.bits);
        let q = 1usize << bits;
        // A row's blocks lie within `span` blocks of each other.
        let reach = self.reach();
        let span = (((2 * HALF - 1) >> (s + bits)) + 2) << bits;
        // Whether the rows holding block b are those holding b - p moved by p 2^s rows: no
        // row from p 2^s before the first of them to the last fails to repeat its row R back.
        let rows_repeat = |b: usize, p: usize| {
            let lo = (b << s).saturating_sub(reach);
            let hi = ((b + 1) << s) + reach;
            let Some(from) = lo.checked_sub(p << s) else {
                return false;
            };
            let at = breaks.partition_point(|&i| i <= from);
            breaks.get(at).is_none_or(|&i| i >= hi)
        };
        let mut c = Colored::new(nblocks)?;
        let mut counts: Vec<[u64; 2]> = Vec::new();
        let mut blocks: Vec<(u32, Kind)> = Vec::new();
        let mut b = 0;
        while b < nblocks {
            if !self.simulate(b, cap, &mut c, &mut counts, &mut blocks)? {
                return Ok(None);
            }
            b += 1;
            // A color opened after block b - p would be free at b where it did not exist at
            // b - p: no block of the window holds it, and b might take it where b - p took a
            // color with soft conflicts only.
            let repeats = |p: usize| {
                b >= span + p
                    && c.opened.is_none_or(|o| o <= b - p)
                    && (b - span..b).all(|x| {
                        (c.color[x], c.probed[x], c.is_cand[x])
                            == (c.color[x - p], c.probed[x - p], c.is_cand[x - p])
                    })
            };
            let Some(p) = (1..=MOST_PERIOD)
                .map(|t| t * q)
                .find(|&p| repeats(p) && rows_repeat(b, p))
            else {
                continue;
            };
            // The blocks copied, up to the first whose rows reach the next row that does not
            // repeat (`rows_repeat` at each block of the stretch, in one step).
            let from = (b << s).saturating_sub(reach) - (p << s);
            let next = breaks.get(breaks.partition_point(|&i| i <= from));
            let end = next.map_or(nblocks, |&i| (i.saturating_sub(reach) >> s).min(nblocks));
            debug_assert!(end > b && (b..end).all(|x| rows_repeat(x, p)));
            debug_assert!(end == nblocks || !rows_repeat(end, p));
            for x in b..end {
                c.color[x] = c.color[x - p];
                c.probed[x] = c.probed[x - p];
                c.is_cand[x] = c.is_cand[x - p];
            }
            push(&mut c.copied, (b, end, p), "stretches")?;
            b = end;
        }
        Ok(Some(c))
    }

    /// How many colors the greedy pass takes over the first `blocks` blocks (stopping at
    /// three): [`Refine::simulate`] from the first block, the palette uncapped (a cap is at
    /// least 4).
    fn first_colors(&self, blocks: usize) -> Result<usize> {
        let mut c = Colored::new(blocks)?;
        let (mut counts, mut rows) = (Vec::new(), Vec::new());
        for b in 0..blocks {
            self.simulate(b, usize::MAX, &mut c, &mut counts, &mut rows)?;
            if c.colors >= 3 {
                break;
            }
        }
        Ok(c.colors)
    }

    /// The rows holding a block lie within this many rows of its columns: a row's blocks are
    /// the children of the parent blocks holding its dependencies, within [`HALF`] of it.
    fn reach(&self) -> usize {
        HALF + (1 << (self.shift + self.bits)) + 1
    }

    /// The greedy pass's step at block b (`level.rs`, `color_blocks`, and `conflicts.rs`'s
    /// `Lists::choose`), from the parked rows within [`Refine::reach`] of it: whether b is probed or a
    /// candidate, and its color when probed. Returns false when it takes a hard conflict.
    fn simulate(
        &self,
        b: usize,
        cap: usize,
        c: &mut Colored,
        counts: &mut Vec<[u64; 2]>,
        blocks: &mut Vec<(u32, Kind)>,
    ) -> Result<bool> {
        let (s, bits, n, reach) = (self.shift, self.bits, self.n, self.reach());
        counts.clear();
        counts.resize(c.colors, [0, 0]);
        let (mut probed, mut is_cand) = (false, false);
        let lo = (b << s).saturating_sub(reach);
        let hi = (((b + 1) << s) + reach).min(self.m);
        for i in lo..hi {
            if self.parked.rows[i] == STORED {
                continue;
            }
            blocks.clear();
            for_each_block(self.deps(i), s, bits, n, |blk, kind| {
                blocks.push((blk, kind))
            });
            let Some(&(_, kind)) = blocks.iter().find(|&&(blk, _)| blk as usize == b) else {
                continue;
            };
            is_cand |= kind != Kind::Full;
            if !blocks.iter().any(|&(_, k)| k == Kind::P) {
                continue; // not listed: no P block
            }
            let b_is_p = kind == Kind::P;
            probed |= b_is_p;
            for &(u, k) in blocks.iter().filter(|&&(u, _)| (u as usize) < b) {
                let u = u as usize;
                if !c.probed[u] {
                    continue;
                }
                let slot = match (b_is_p, k == Kind::P) {
                    (true, false) | (false, true) => 0,
                    (true, true) => 1,
                    (false, false) => continue,
                };
                counts[c.color[u] as usize][slot] += 1;
            }
        }
        c.probed[b] = probed;
        c.is_cand[b] = is_cand;
        if !probed {
            return Ok(true);
        }
        // The first color of the fewest (hard, soft) conflicts; a new one on a hard conflict
        // while the palette holds fewer than `cap`.
        let best = (0..counts.len()).min_by_key(|&k| (counts[k][0], counts[k][1]));
        match best {
            Some(k) if counts[k][0] == 0 => c.color[b] = k as u32,
            Some(_) if c.colors >= cap => return Ok(false),
            _ => {
                c.color[b] = c.colors as u32;
                c.colors += 1;
                c.opened = Some(b);
            }
        }
        Ok(true)
    }

    /// The parked rows' probe masks as runs (`Parked::spans`: the probes holding one of a
    /// row's P blocks), and how many rows have two P blocks in one probe. A row `p 2^s` after
    /// one it repeats, whose blocks all lie where the colors repeat with period p, has that
    /// row's mask: such rows come in long stretches, each copied in one loop; the others are
    /// worked out from their blocks. `None` when a mask does not fit (a probe numbered 64 or
    /// more).
    #[allow(clippy::type_complexity)]
    fn masks_by_period(
        &self,
        c: &Colored,
        breaks: &[usize],
    ) -> Result<Option<(Vec<(u32, u32, u64)>, usize)>> {
        let (s, bits, n, m) = (self.shift, self.bits, self.n, self.m);
        const RING: usize = 1 << 12;
        debug_assert!((MOST_PERIOD << (bits + MOST_SHIFT)) <= RING);
        // Per row of the last RING: its mask, and whether it is listed (bit 0) and has two P
        // blocks in one probe (bit 1).
        let mut masks = vec![0u64; RING];
        let mut flags = vec![0u8; RING];
        let mut spans: Vec<(u32, u32, u64)> = Vec::new();
        let mut sharing = 0usize;
        let mut add = |i: usize, mask: u64, flag: u8, spans: &mut Vec<(u32, u32, u64)>| {
            if flag & 1 == 0 {
                return Ok(());
            }
            sharing += usize::from(flag >> 1);
            let i = i as u32;
            match spans.last_mut() {
                Some(last) if last.1 == i && last.2 == mask => last.1 = i + 1,
                _ => push(spans, (i, i + 1, mask), "runs of parked rows")?,
            }
            Ok::<_, crate::Error>(())
        };
        let (mut stretch, mut next_break) = (0usize, 0usize);
        let mut blocks: Vec<u32> = Vec::new();
        let mut i = 0;
        while i < m {
            while next_break < breaks.len() && breaks[next_break] <= i {
                next_break += 1;
            }
            let last_break = next_break.checked_sub(1).map(|k| breaks[k]);
            // The row's blocks lie in blocks lo..hi.
            let lo = (i.saturating_sub(HALF) >> (s + bits)) << bits;
            let hi = (((i + HALF - 1) >> (s + bits)) + 1) << bits;
            while stretch < c.copied.len() && c.copied[stretch].1 <= lo {
                stretch += 1;
            }
            // Rows i.. that copy the row p 2^s before: up to the first whose blocks reach past
            // the stretch, or the next row that does not repeat.
            let copy = c.copied.get(stretch).and_then(|&(first, end, p)| {
                let rows = p << s;
                let chained = i >= rows && last_break.is_none_or(|k| k + rows <= i);
                let past = (((end >> bits) << (s + bits)) + 1).saturating_sub(HALF);
                let until = past.min(breaks.get(next_break).map_or(m, |&k| k)).min(m);
                (first <= lo && hi <= end && chained && until > i).then_some((rows, until))
            });
            if let Some((rows, until)) = copy {
                for k in i..until {
                    let (mask, flag) = (masks[(k - rows) % RING], flags[(k - rows) % RING]);
                    (masks[k % RING], flags[k % RING]) = (mask, flag);
                    add(k, mask, flag, &mut spans)?;
                }
                i = until;
                continue;
            }
            let (mut mask, mut flag) = (0u64, 0u8);
            if self.parked.rows[i] != STORED {
                blocks.clear();
                for_each_block(self.deps(i), s, bits, n, |blk, kind| {
                    if kind == Kind::P {
                        blocks.push(blk);
                    }
                });
                for &blk in &blocks {
                    let Some(bit) = 1u64.checked_shl(c.color[blk as usize]) else {
                        return Ok(None);
                    };
                    flag |= u8::from(mask & bit != 0) << 1;
                    mask |= bit;
                }
                flag |= u8::from(!blocks.is_empty());
            }
            (masks[i % RING], flags[i % RING]) = (mask, flag);
            add(i, mask, flag, &mut spans)?;
            i += 1;
        }
        Ok(Some((spans, sharing)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::{EntryKind, Pattern, PatternBuilder};
    use crate::planner::Planner;
    use crate::testing::{banded, block_diagonal, random_sparse, stencil_2d, Synthetic, Winner};
    use crate::BlackBox;

    /// Traces `truth` under `winner` with the coarse levels by period allowed or not: the
    /// pattern with its kinds, every probe asked (its columns, in order), and how many levels
    /// went by period; the passes over the rows in two halves from `halves_from`.
    fn trace(
        truth: &Pattern,
        winner: Winner,
        by_period: bool,
        halves_from: usize,
    ) -> (Pattern, Vec<Vec<u32>>, usize) {
        let (m, n) = (truth.rows(), truth.cols());
        let mut f = Synthetic::new(truth, winner, 7);
        let x0: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 * 1e-3).collect();
        let mut baseline = vec![0.0; m];
        f.eval(&x0, &mut baseline).unwrap();
        let cap = Refine::allowance(n);
        let mut planner = Refine::new(n, baseline.clone(), cap, EntryKind::Assumed).unwrap();
        planner.by_period = by_period;
        planner.halves_from = halves_from;
        let (mut x, mut y) = (x0.clone(), vec![0.0; m]);
        let mut asked = Vec::new();
        loop {
            let probes = planner.ask().unwrap();
            if probes.is_empty() {
                break;
            }
            for (k, probe) in probes.iter().enumerate() {
                asked.push(probe.cols().to_vec());
                probe.write_tags(&mut x);
                f.eval(&x, &mut y).unwrap();
                probe.restore(&x0, &mut x);
                planner.tell(k, probe, &y, &[]).unwrap();
            }
        }
        let levels = planner.period_levels;
        let builder = PatternBuilder::new(m, n, bitvec::bitvec![0; m]).unwrap();
        (Box::new(planner).finish(builder).unwrap(), asked, levels)
    }

    /// The levels colored by period ask the very probes the lists ask, step by step, and
    /// the traces find the same entries of the same kinds, in halves or not. Levels go by
    /// period on the bands whose rows repeat (the tridiagonal and a band of 2, n from 5000: a
    /// level needs 1024 blocks), and on none where they do not repeat the row a power of two
    /// before (diagonal blocks of 10) or reach a grid line away (a 2-D stencil, random rows).
    #[test]
    fn levels_by_period_ask_what_the_lists_ask() {
        let cases = [
            (banded(5000, 1), true),
            (banded(6007, 1), true),
            (banded(5000, 2), true),
            (block_diagonal(6000, 10), false),
            (stencil_2d(80), false),
            (random_sparse(5000, 5000, 3, 4), false),
        ];
        for (case, (truth, repeats)) in cases.iter().enumerate() {
            let mut case_taken = 0;
            for winner in [Winner::Random, Winner::Smallest, Winner::Largest] {
                let what = format!("case {case}, {winner:?}");
                let (lists, lists_asked, none) = trace(truth, winner, false, usize::MAX);
                assert_eq!(none, 0);
                for halves_from in [usize::MAX, 0] {
                    let (by_period, asked, levels) = trace(truth, winner, true, halves_from);
                    case_taken += levels;
                    // The first probe asked otherwise, if any (the probes are long).
                    let differs = (0..asked.len().max(lists_asked.len()))
                        .find(|&k| asked.get(k) != lists_asked.get(k));
                    assert_eq!(differs, None, "{what}, halves from {halves_from}");
                    assert_eq!(
                        (by_period.row_ptr(), by_period.col_idx(), by_period.kinds()),
                        (lists.row_ptr(), lists.col_idx(), lists.kinds()),
                        "{what}"
                    );
                }
                for i in 0..truth.rows() {
                    let row = lists.row(i);
                    assert!(truth.row(i).iter().all(|j| row.binary_search(j).is_ok()));
                }
            }
            assert_eq!(
                case_taken > 0,
                *repeats,
                "case {case}: {case_taken} levels by period"
            );
        }
    }
}
