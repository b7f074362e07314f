//! A coarse level's coloring counted over a sample of the rows, when every block has thousands.
//!
//! # Why
//!
//! Coloring block `b` counts, for each color, the conflicts of `b` with the blocks of that
//! color in every row holding `b` (`level.rs`, `conflicts.rs`). At a coarse level of a pattern
//! without locality each of a few dozen to a few thousand blocks is held by a good part of the
//! rows: random 5 per row at n = 10^6 lists 6 to 16 million (row, block) entries over 8 to 3907
//! blocks, so every block sweeps the rows' tallies (32 bytes a row, 32 MB) once to count and
//! once to add its color. The coloring and its transpose took 100 to 320 ms a level there,
//! about 3.7 s of a 9 s trace, bound by memory bandwidth, and the growth from 10^5 to 10^6 was
//! 13-14x where the rows' tallies leave the cache.
//!
//! # What
//!
//! The counts only rank colors. A coarse level's coloring is a heuristic (the palette is
//! capped, a block takes the color with the fewest weighted conflicts: `refine.rs`), and any
//! coloring is sound: a P block that shares a probe with a Q block of its row is only wasted
//! for that row (the row changes, and keeps the block). So when a level lists at least
//! [`SAMPLE_FROM`] entries, at least `2 SAMPLED_PER_BLOCK` per probed block (about as many
//! lists hold each probed block), the coloring counts over a sample of the lists:
//! one list of weight `w` (the rows sharing it) is kept with probability `min(1, w / s)` and
//! then weighs `max(w, s)`, so each count's expectation is the count over every row (a
//! Horvitz-Thompson estimate); `s` is the largest power of two, at most [`MAX_STRIDE`], that
//! leaves [`SAMPLED_PER_BLOCK`] lists or more per block. A block's count for a color is then
//! made of hundreds of rows or more, within a few percent of its whole-row value, and the
//! choice between colors whose counts differ by more is the one the whole rows make.
//!
//! Not when a row is *blind* (no tag came back for it: `refine.rs`): its blocks are spread over
//! the probes by soft conflicts (group testing), which halve its candidates only where the
//! counts of every blind row placed them. A sample there left candidates to the last level:
//! random 3 per row, 12000 x 30000, with no payload coming back, 628 probes at the last level
//! against 570.
//!
//! The draw is a hash of the level and the list's ordinal (`rng.rs`): the same coloring in every
//! run, and in a journal's replay. Nothing else is sampled: every row is listed, so the probeable
//! candidates, their probes, the parked runs' probe sets (made from their whole lists, kept apart
//! when the others go: [`RunLists`]) and the tells are the whole rows'. Not at the last level,
//! where every conflict is hard and a missed one costs the row a probe; below [`SAMPLE_FROM`] the
//! whole rows are cheap to count and the coloring is the one it was (the fingerprint suite, 20000
//! rows at most, identical).
//!
//! # Cost and effect
//!
//! Two passes over the lists' bounds (a hash per list each: the first sizes the sample, the
//! second copies the kept lists) and a copy of the runs' lists. Random 5 per row at
//! n = 10^6: levels 17 to 6 sampled, at strides 64 down to 2, a sampled level's ask (split and
//! plan) 160-400 ms instead of 230-505; the trace's library time 9.2-9.4 s -> 6.9-7.1 s in
//! single runs, the whole benchmark process 0.84x (`bench/LOG.md`, "A coarse level's coloring
//! over a sample of the rows"); 261 evaluations against 260 (which few rows reach the last
//! level's second step is chance).

use super::{NONE, P_FLAG};
use crate::error::{push, reserve, reserve_exact, Result};

/// The fewest (row, block) entries a level lists for its coloring to be counted over a
/// sample: below, the whole rows cost little.
pub(super) const SAMPLE_FROM: usize = 1 << 22;

/// The fewest lists per probed block a sample keeps (on average).
const SAMPLED_PER_BLOCK: usize = 512;

/// The widest sampling stride: a list of weight 1 is kept with probability 1 / 64.
const MAX_STRIDE: u32 = 64;

/// The sampling stride for a level's coloring of `lists` (as [`sample`] takes them):
/// 1 (no sample) at the last level, below `sample_from` listed entries, when the `entries`
/// come to fewer than `2 SAMPLED_PER_BLOCK` per probed block (`blocks` of them), or when a
/// list is blind; otherwise the largest power of two up to [`MAX_STRIDE`] that leaves at least
/// [`SAMPLED_PER_BLOCK`] entries per probed block.
pub(super) fn stride(
    leaf: bool,
    lists: &[(u32, u32, u32)],
    entries: usize,
    blocks: usize,
    sample_from: usize,
) -> u32 {
    if leaf || entries < sample_from || blocks == 0 {
        return 1;
    }
    let per_block = entries / blocks;
    let mut s = 1u32;
    while s < MAX_STRIDE && per_block >= 2 * SAMPLED_PER_BLOCK * s as usize {
        s *= 2;
    }
    match s > 1 && lists.iter().any(|l| l.0 & P_FLAG != 0) {
        true => 1,
        false => s,
    }
}

/// The lists kept by the sample of stride `s` at level `shift`, as `level.rs` lists them:
/// `(start | blind flag, fill, weight)` per list, an extra last entry holding the end, the
/// entries in a new `k_idx`; the weights as the module docs say. `lists` ends with its extra
/// last entry; `k_idx` holds its entries.
///
/// # Errors
/// `OutOfMemory` when the sample's space cannot be had.
#[allow(clippy::type_complexity)]
pub(super) fn sample(
    lists: &[(u32, u32, u32)],
    k_idx: &[u32],
    s: u32,
    shift: u32,
) -> Result<(Vec<(u32, u32, u32)>, Vec<u32>)> {
    let prefix = crate::rng::unit_prefix(&[SALT, u64::from(shift)]);
    let bounds = |r: usize| {
        let (start, end) = (lists[r].0 & !P_FLAG, lists[r + 1].0 & !P_FLAG);
        start as usize..end as usize
    };
    let kept = |r: usize| {
        let w = lists[r].2;
        w >= s || crate::rng::unit_after(prefix, r as u64) * f64::from(s) < f64::from(w)
    };
    let rows = lists.len() - 1;
    let (mut count, mut len) = (1, 0);
    for r in (0..rows).filter(|&r| kept(r)) {
        count += 1;
        len += bounds(r).len();
    }
    let (mut sub, mut sub_k) = (Vec::new(), Vec::new());
    reserve_exact(&mut sub, count, "sampled lists")?;
    reserve_exact(&mut sub_k, len, "sampled lists")?;
    for r in (0..rows).filter(|&r| kept(r)) {
        let at = sub_k.len() as u32;
        let (start, _, w) = lists[r];
        push(
            &mut sub,
            (at | (start & P_FLAG), at, w.max(s)),
            "sampled lists",
        )?;
        sub_k.extend_from_slice(&k_idx[bounds(r)]);
    }
    let end = sub_k.len() as u32;
    push(&mut sub, (end, end, 0), "sampled lists")?;
    Ok((sub, sub_k))
}

/// The lists of the runs of parked rows at a sampled level (`parked.rs`, "Runs"), kept apart
/// so that the whole lists can go before the coloring: the tells need each run's probes,
/// made from its whole list and the colors ([`RunLists::p_mask`]).
pub(super) struct RunLists {
    /// Run list `k`'s blocks (block id | P flag) from `ptr[k]` to `ptr[k + 1]`.
    ptr: Vec<u32>,
    blocks: Vec<u32>,
}

impl RunLists {
    /// Copies the lists `spans` point at (`(first row, end row, list ordinal)` in row order,
    /// ordinals into `lists` and `k_idx` as [`sample`] takes them) and points each span at its
    /// copy's index instead.
    ///
    /// # Errors
    /// `OutOfMemory` when the copies' space cannot be had.
    pub fn take(
        spans: &mut [(u32, u32, u64)],
        lists: &[(u32, u32, u32)],
        k_idx: &[u32],
    ) -> Result<Self> {
        let (mut ptr, mut blocks) = (Vec::new(), Vec::new());
        push(&mut ptr, 0, "the runs' lists")?;
        let mut last = None;
        for span in spans {
            if last != Some(span.2) {
                last = Some(span.2);
                let r = span.2 as usize;
                let (start, end) = (lists[r].0 & !P_FLAG, lists[r + 1].0 & !P_FLAG);
                reserve(&mut blocks, (end - start) as usize, "the runs' lists")?;
                blocks.extend_from_slice(&k_idx[start as usize..end as usize]);
                push(&mut ptr, blocks.len() as u32, "the runs' lists")?;
            }
            span.2 = (ptr.len() - 2) as u64;
        }
        Ok(RunLists { ptr, blocks })
    }

    /// The probes holding one of run list `k`'s P blocks, as [`p_mask_of_blocks`] gives them.
    pub fn p_mask(&self, k: usize, color: &[u32]) -> Option<u64> {
        let (start, end) = (self.ptr[k] as usize, self.ptr[k + 1] as usize);
        p_mask_of_blocks(&self.blocks[start..end], color)
    }
}

/// The probes (colors below 64) holding one of the P blocks of a list of blocks (block id |
/// P flag), from the blocks' colors; `None` when one is 64 or more. (A list colored whole
/// keeps its colors instead: `conflicts.rs`'s `p_mask_of_list`.)
pub(super) fn p_mask_of_blocks(list: &[u32], color: &[u32]) -> Option<u64> {
    let mut mask = 0u64;
    for &b in list.iter().filter(|&&b| b & P_FLAG != 0) {
        let c = color[(b & !P_FLAG) as usize];
        debug_assert_ne!(c, NONE, "a P block is probed");
        mask |= 1u64.checked_shl(c)?;
    }
    Some(mask)
}

/// Mixed into the draw so that it shares nothing with the verification steps' draws.
const SALT: u64 = 0x5A4D_504C_4544; // "SAMPLED"

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn the_stride_leaves_hundreds_of_lists_per_block_and_only_at_coarse_levels_of_many() {
        let from = SAMPLE_FROM;
        let tagged = [(0, 0, 1), (5, 0, 3), (9, 9, 0)];
        let stride = |leaf, entries, blocks, from| stride(leaf, &tagged, entries, blocks, from);
        assert_eq!(stride(true, 1 << 24, 8, from), 1, "never at the last level");
        assert_eq!(stride(false, from - 1, 1, from), 1, "below SAMPLE_FROM");
        assert_eq!(stride(false, from, 0, from), 1);
        assert_eq!(stride(false, 1023 * 100, 100, 0), 1);
        assert_eq!(stride(false, 1024 * 100, 100, 0), 2);
        assert_eq!(stride(false, 2048 * 100, 100, 0), 4);
        assert_eq!(stride(false, 1 << 30, 4, 0), MAX_STRIDE);
        let blind = [(0, 0, 1), (5 | P_FLAG, 5, 3), (9, 9, 0)];
        assert_eq!(
            super::stride(false, &blind, 1 << 30, 4, 0),
            1,
            "a blind row"
        );
        for (entries, blocks) in [(16_000_000, 3907), (11_000_000, 62), (5_000_000, 3000)] {
            let s = stride(false, entries, blocks, from) as usize;
            assert!(s.is_power_of_two() && s <= MAX_STRIDE as usize);
            assert!(
                entries / blocks / s >= SAMPLED_PER_BLOCK,
                "{entries} {blocks} {s}"
            );
            if s < MAX_STRIDE as usize {
                assert!(entries / blocks / (2 * s) < SAMPLED_PER_BLOCK);
            }
        }
    }

    /// Random lists: weights 1 to 3, a few heavy ones, blind flags; the sample keeps every
    /// list of weight `s` or more with its weight and its entries as they were, the others
    /// with weight `s`, and its weighted counts of each (block, kind) estimate the whole
    /// lists' within a few percent.
    #[test]
    fn a_sample_keeps_lists_whole_and_estimates_every_count() {
        let mut rng = Rng::new(7);
        let (rows, nblocks, s) = (200_000, 8, 8u32);
        let (mut lists, mut k_idx) = (Vec::new(), Vec::new());
        for r in 0..rows {
            let start = k_idx.len() as u32;
            let blind = if r % 5 == 0 { P_FLAG } else { 0 };
            let w = if r % 1000 == 0 {
                40
            } else {
                1 + rng.below(3) as u32
            };
            for b in 0..nblocks as u32 {
                match rng.below(6) {
                    0 => k_idx.push(b | P_FLAG),
                    1 => k_idx.push(b),
                    _ => {}
                }
            }
            lists.push((start | blind, start, w));
        }
        let end = k_idx.len() as u32;
        lists.push((end, end, 0));
        let (sub, sub_k) = sample(&lists, &k_idx, s, 9).unwrap();
        assert_eq!(
            sample(&lists, &k_idx, s, 9).unwrap(),
            (sub.clone(), sub_k.clone())
        );
        assert_eq!(sub.last().unwrap().0 as usize, sub_k.len());
        // Each kept list is one of the whole lists, in order, with its flag and entries.
        let mut r = 0;
        let (mut heavy, mut light) = (0, 0);
        for q in 0..sub.len() - 1 {
            let entries = |l: &[(u32, u32, u32)], k: &[u32], r: usize| {
                k[(l[r].0 & !P_FLAG) as usize..(l[r + 1].0 & !P_FLAG) as usize].to_vec()
            };
            while entries(&lists, &k_idx, r) != entries(&sub, &sub_k, q)
                || lists[r].0 & P_FLAG != sub[q].0 & P_FLAG
                || lists[r].2.max(s) != sub[q].2
            {
                assert!(lists[r].2 < s, "list {r} of weight {} left out", lists[r].2);
                r += 1;
            }
            assert_eq!(sub[q].1, sub[q].0 & !P_FLAG, "an empty fill");
            if lists[r].2 >= s {
                heavy += 1;
            } else {
                light += 1;
            }
            r += 1;
        }
        assert_eq!(heavy, rows / 1000);
        let expected = (rows - rows / 1000) as f64 * 2.0 / f64::from(s);
        assert!(
            (light as f64 - expected).abs() < 0.05 * expected,
            "{light} of {expected}"
        );
        // Weighted counts per (block, kind).
        let counts = |l: &[(u32, u32, u32)], k: &[u32]| {
            let mut c = vec![0u64; 2 * nblocks];
            for r in 0..l.len() - 1 {
                for &b in &k[(l[r].0 & !P_FLAG) as usize..(l[r + 1].0 & !P_FLAG) as usize] {
                    let slot = 2 * (b & !P_FLAG) as usize + usize::from(b & P_FLAG != 0);
                    c[slot] += u64::from(l[r].2);
                }
            }
            c
        };
        let (whole, part) = (counts(&lists, &k_idx), counts(&sub, &sub_k));
        for (w, p) in whole.iter().zip(&part) {
            let err = (*w as f64 - *p as f64).abs() / *w as f64;
            assert!(err < 0.03, "{p} estimates {w}");
        }
        // A different level draws differently.
        assert_ne!(sample(&lists, &k_idx, s, 10).unwrap().0, sub);
    }

    #[test]
    fn runs_point_at_copies_of_their_lists() {
        let lists = [(0, 0, 1), (2 | P_FLAG, 2, 5), (3, 3, 1), (5, 5, 0)];
        let k_idx = [1 | P_FLAG, 2, P_FLAG, 4, 5 | P_FLAG];
        let mut spans = vec![(10, 12, 1), (12, 20, 1), (30, 31, 2), (40, 41, 0)];
        let runs = RunLists::take(&mut spans, &lists, &k_idx).unwrap();
        assert_eq!(spans, [(10, 12, 0), (12, 20, 0), (30, 31, 1), (40, 41, 2)]);
        let color = [7, 1, 2, 9, 3, 4];
        assert_eq!(runs.p_mask(0, &color), Some(1 << 7));
        assert_eq!(runs.p_mask(1, &color), Some(1 << 4));
        assert_eq!(runs.p_mask(2, &color), Some(1 << 1));
    }

    #[test]
    fn p_masks_are_the_colors_of_the_p_blocks() {
        let color = [3, NONE, 0, 5, 63, 64];
        assert_eq!(
            p_mask_of_blocks(&[P_FLAG, 2, 3 | P_FLAG], &color),
            Some(1 << 3 | 1 << 5)
        );
        assert_eq!(
            p_mask_of_blocks(&[1, 2], &color),
            Some(0),
            "Q blocks hold no probe"
        );
        assert_eq!(p_mask_of_blocks(&[4 | P_FLAG], &color), Some(1 << 63));
        assert_eq!(p_mask_of_blocks(&[5 | P_FLAG], &color), None);
    }
}
