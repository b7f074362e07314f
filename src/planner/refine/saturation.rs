//! A coarse level's probed blocks in classes by a saturation order of their hard conflicts.
//!
//! The level coloring (`level.rs`) is greedy in natural block order: each block takes the
//! color with the fewest (hard, blind soft, soft) conflicts, and only a hard conflict (a P and
//! a Q block of one row) or a blind soft one opens a new color. On a 2-D grid whose lines are
//! not a power of two long, a row's blocks a grid line away sit a fractional number of blocks
//! off, and the natural order takes colors the hard conflicts do not need: the 2-D Bratu
//! residual at n = 10^6 took 9, 9, 8 and 8 probes at the levels of blocks of 128 down to 16,
//! where a saturation order (DSATUR: next the block whose hard neighbours hold the most
//! classes) of the same conflicts makes 7, 8, 7 and 6 classes.
//!
//! [`hard_classes`] gives those classes; the caller colors the level again with its greedy
//! rule, class by class. Blocks of one class have no hard conflict with each other, so when no
//! row is blind (no blind soft conflict opens a color) each class opens at most one new color:
//! the pass takes at most as many colors as there are classes, and among the colors a block
//! may take it still picks the one with the fewest soft conflicts. The classes are made only
//! when the rows have settled ([`SETTLED_HIT_RATE`]) and the greedy pass took 3 colors or more
//! with no hard conflict taken (nor the parked rows' P blocks kept apart, whose soft conflicts
//! open colors), and given up as soon as they would need as many colors as the pass took.
//!
//! Measured (`nanprop-bench --scale`, `examples/fingerprint`): the 2-D Bratu residual takes
//! 101 evaluations at n = 10^6 instead of 107, and 93 at 99856 instead of 95; over the
//! fingerprint suite (1168 traces) the 12 traces of the 5-point stencil on a 141 x 141 grid
//! take 3 fewer each (85 -> 82 with the check), none more, with the same patterns.
//!
//! Cost: each block colored reads the lists of its rows, as a greedy pass does; the blocks
//! wait by saturation (a 64-bit mask of their hard neighbours' classes each) in one bit set per
//! saturation, with a summary bit per word, and the next is the lowest block of the highest
//! one. (With the lowest first
//! among equals the Bratu levels above made 7, 8, 7 and 6 classes; with the block raised last
//! first, no fewer than the greedy pass; by a binary heap, the same classes in 4 times the
//! time.) At n = 10^6 the classes took 1.3, 3.7, 5.7 and 9.7 ms at those levels and the
//! pass after them 1.2 to 8.2 ms, against the 6 evaluations saved, about 10 ms each of f and
//! library time: the benchmark's trace takes as long as before (wall 0.99x), the library a
//! little more and f less. The caller bounds the cost by the level's lists ([`worth_trying`]);
//! a black box dearer than the benchmark's gains the whole of every evaluation saved.

use super::{NONE, P_FLAG};
use crate::error::{filled, Result};

/// The most classes [`hard_classes`] makes (one bit each in a block's mask).
pub(super) const MOST_CLASSES: usize = 64;

/// Whether the classes are worth making for a level whose lists (`lists`' starts, the last one
/// the end; P-flagged) hold these lengths: when reading every list once for each of its
/// blocks, the sum of the squares of the list lengths, is at most [`WORK_PER_PROBE`] times
/// `per_probe`, what one probe costs at least (its inputs written, its outputs read, f's work
/// on them: `level.rs`).
pub(super) fn worth_trying(lists: &[(u32, u32, u32)], per_probe: usize) -> bool {
    let start = |l: &(u32, u32, u32)| u64::from(l.0 & !P_FLAG);
    let work: u64 = (lists.windows(2))
        .map(|w| {
            let len = start(&w[1]) - start(&w[0]);
            len * len
        })
        .sum();
    work <= WORK_PER_PROBE * per_probe as u64
}

/// The hit rate of the step before (changed of tested candidate blocks) below which a level
/// may take the classes: the rows have settled. Fewer colors put more of a row's P blocks in
/// one probe (soft conflicts), and a row that changes there keeps all of them: while rows
/// still learn, that costs more at the levels after than the probe saved. Bands of 11 under
/// the random NaN winning took the classes at hit rates of 0.037 and 0.062 at n = 10^4 and
/// then 50 evaluations instead of 48 (41 and 55 instead of 42 and 56 at 10^3 and 10^5); the
/// 2-D Bratu residual's levels that take them are at 0.0013 to 0.0102. Over the fingerprint
/// suite (1168 traces, 111310 evaluations before): ungated 111234 (46 traces fewer), under
/// 1/16 111254 (26 fewer), under 1/32 111274 (12 fewer, all 5-point stencils); none more in
/// any of them.
pub(super) const SETTLED_HIT_RATE: f64 = 1.0 / 32.0;

/// The saturation classes' work ([`worth_trying`]) allowed per unit of a probe's least cost.
/// On the 2-D Bratu residual at n = 10^6 (`nanprop-bench --scale`), where a probe's least
/// cost is 7 x 10^6 and an evaluation took about 10 ms of f and library time, the classes took
/// 1.3 to 9.7 ms at the levels of blocks of 128 down to 16 (work at most 1.7 to 10 x 10^6),
/// each saving one probe or two; at blocks of 2 (work at least 6.4 x 10^7: about 8 x 10^6
/// blocks in 998000 lists) they took 115 ms to save one.
const WORK_PER_PROBE: u64 = 2;

/// The probed blocks (`probed` nonzero) in classes with no hard conflict inside one (a P and a
/// Q block of one row: `lists`' starts into `k_idx`, entries P-flagged; `t_ptr`, `t_idx` the
/// rows of each block, P-flagged for that row), by a saturation order: the block whose hard
/// neighbours hold the most classes comes next (ties: the lowest) and takes the first
/// class none of them holds. Returns the blocks in class order (increasing within a class) and
/// where each class ends in it (one end per class); `None` when some block would need more
/// than `most` classes (or more than [`MOST_CLASSES`]).
///
/// # Errors
/// [`crate::ErrorKind::OutOfMemory`] when the masks, the classes or the levels do not fit.
pub(super) fn hard_classes(
    lists: &[(u32, u32, u32)],
    k_idx: &[u32],
    (t_ptr, t_idx): (&[u32], &[u32]),
    probed: &[u8],
    most: usize,
) -> Result<Option<(Vec<u32>, Vec<usize>)>> {
    let most = most.min(MOST_CLASSES);
    let nblocks = probed.len();
    let start = |r: usize| (lists[r].0 & !P_FLAG) as usize;
    // Per block, the classes its colored hard neighbours hold; its class (NONE: none yet).
    let mut forbid = filled(0u64, nblocks, "block masks")?;
    let mut class = filled(NONE, nblocks, "block classes")?;
    // The uncolored probed blocks by saturation (at most `most`).
    let mut levels = Levels::new(most + 1, nblocks)?;
    for b in (0..nblocks).filter(|&b| probed[b] != 0) {
        levels.insert(0, b);
    }
    let mut classes = 0usize;
    while let Some(top) = levels.highest() {
        let b = levels.lowest(top);
        levels.remove(top, b);
        let c = (!forbid[b]).trailing_zeros() as usize;
        if c >= most {
            return Ok(None);
        }
        class[b] = c as u32;
        classes = classes.max(c + 1);
        let bit = 1u64 << c;
        for &t in &t_idx[t_ptr[b] as usize..t_ptr[b + 1] as usize] {
            let (r, b_flag) = ((t & !P_FLAG) as usize, t & P_FLAG);
            for &u in &k_idx[start(r)..start(r + 1)] {
                let u_flag = u & P_FLAG;
                let u = (u & !P_FLAG) as usize;
                // A hard conflict: one of the two a P block of the row, the other a Q block.
                if u_flag == b_flag || class[u] != NONE || probed[u] == 0 || forbid[u] & bit != 0 {
                    continue;
                }
                // Raised a level: to `most` at the highest (its bits are classes below `most`).
                let s = forbid[u].count_ones() as usize;
                forbid[u] |= bit;
                levels.remove(s, u);
                levels.insert(s + 1, u);
            }
        }
    }
    // The blocks in class order: a counting sort, each class's blocks increasing.
    let mut at = filled(0usize, classes + 1, "class starts")?;
    for &c in class.iter().filter(|&&c| c != NONE) {
        at[c as usize + 1] += 1;
    }
    for c in 1..=classes {
        at[c] += at[c - 1];
    }
    let mut order = filled(0u32, at[classes], "blocks in class order")?;
    for (b, &c) in class.iter().enumerate().filter(|(_, &c)| c != NONE) {
        order[at[c as usize]] = b as u32;
        at[c as usize] += 1;
    }
    at.pop();
    Ok(Some((order, at)))
}

/// Blocks by level (their saturation): per level a bit per block, a bit per word of those that
/// is not zero, and the count. The lowest block of a level reads the summary words from a
/// cursor below which the level holds no block, one summary word per 4096 blocks: the order
/// costs no more than a scan of the summary per block even where blocks are raised far apart.
struct Levels {
    words: usize,
    summary_words: usize,
    bits: Vec<u64>,
    summary: Vec<u64>,
    count: Vec<usize>,
    /// Per level, a summary word below which the level is empty.
    from: Vec<usize>,
}

impl Levels {
    fn new(levels: usize, nblocks: usize) -> Result<Self> {
        let words = nblocks.div_ceil(64);
        let summary_words = words.div_ceil(64);
        Ok(Levels {
            words,
            summary_words,
            bits: filled(0u64, levels * words, "saturation levels")?,
            summary: filled(0u64, levels * summary_words, "saturation levels")?,
            count: filled(0usize, levels, "saturation counts")?,
            from: filled(0usize, levels, "saturation cursors")?,
        })
    }

    fn insert(&mut self, s: usize, b: usize) {
        let w = b / 64;
        self.bits[s * self.words + w] |= 1 << (b % 64);
        self.summary[s * self.summary_words + w / 64] |= 1 << (w % 64);
        self.count[s] += 1;
        self.from[s] = self.from[s].min(w / 64);
    }

    fn remove(&mut self, s: usize, b: usize) {
        let w = b / 64;
        let word = &mut self.bits[s * self.words + w];
        *word &= !(1 << (b % 64));
        if *word == 0 {
            self.summary[s * self.summary_words + w / 64] &= !(1 << (w % 64));
        }
        self.count[s] -= 1;
    }

    /// The highest level holding a block.
    fn highest(&self) -> Option<usize> {
        (0..self.count.len()).rev().find(|&s| self.count[s] > 0)
    }

    /// The lowest block of level `s`, which holds one.
    fn lowest(&mut self, s: usize) -> usize {
        let summary = &self.summary[s * self.summary_words..(s + 1) * self.summary_words];
        let mut sw = self.from[s];
        while summary[sw] == 0 {
            sw += 1;
        }
        self.from[s] = sw;
        let w = 64 * sw + summary[sw].trailing_zeros() as usize;
        64 * w + self.bits[s * self.words + w].trailing_zeros() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lists from rows of (block, is P) entries, with the end entry (transposed by the level's
    /// own `transpose`).
    fn listed(rows: &[&[(u32, bool)]], nblocks: usize) -> (Vec<(u32, u32, u32)>, Vec<u32>) {
        let mut lists = Vec::new();
        let mut k_idx = Vec::new();
        for row in rows {
            lists.push((k_idx.len() as u32, k_idx.len() as u32, 1));
            k_idx.extend(row.iter().map(|&(b, p)| b | if p { P_FLAG } else { 0 }));
        }
        lists.push((k_idx.len() as u32, k_idx.len() as u32, 0));
        assert!(k_idx.iter().all(|&b| ((b & !P_FLAG) as usize) < nblocks));
        (lists, k_idx)
    }

    /// Random rows of P and Q blocks: the classes hold every probed block once, no row has a P
    /// and a Q block in one class, and a bound of one class fewer gives up.
    #[test]
    fn classes_keep_every_rows_p_and_q_blocks_apart() {
        let mut rng = crate::rng::Rng::new(11);
        for trial in 0..50 {
            let nblocks = 20 + rng.below(200);
            let rows: Vec<Vec<(u32, bool)>> = (0..10 + rng.below(300))
                .map(|_| {
                    let mut row: Vec<(u32, bool)> = (0..1 + rng.below(6))
                        .map(|_| (rng.below(nblocks) as u32, rng.below(2) == 0))
                        .collect();
                    row.sort();
                    row.dedup_by_key(|e| e.0);
                    row
                })
                .collect();
            let refs: Vec<&[(u32, bool)]> = rows.iter().map(|r| &r[..]).collect();
            let (lists, k_idx) = listed(&refs, nblocks);
            let (t_ptr, t_idx) = super::super::level::transpose(&lists, &k_idx, nblocks).unwrap();
            let mut probed = vec![0u8; nblocks];
            for &b in &k_idx {
                // Some Q-only blocks stay unprobed, as blocks holding only known dependencies do.
                if b & P_FLAG != 0 || trial % 2 == 0 {
                    probed[(b & !P_FLAG) as usize] = 1;
                }
            }
            let (order, ends) = hard_classes(&lists, &k_idx, (&t_ptr, &t_idx), &probed, 64)
                .unwrap()
                .expect("64 classes are enough here");
            let k = ends.len();
            let mut sorted = order.clone();
            sorted.sort();
            let expected: Vec<u32> = (0..nblocks as u32)
                .filter(|&b| probed[b as usize] != 0)
                .collect();
            assert_eq!(sorted, expected, "trial {trial}: every probed block once");
            let mut class = vec![NONE; nblocks];
            let mut from = 0;
            for (c, &end) in ends.iter().enumerate() {
                assert!(from < end, "trial {trial}: class {c} is empty");
                let blocks = &order[from..end];
                assert!(
                    blocks.windows(2).all(|w| w[0] < w[1]),
                    "trial {trial}: increasing"
                );
                blocks.iter().for_each(|&b| class[b as usize] = c as u32);
                from = end;
            }
            for row in &rows {
                for &(a, pa) in row {
                    for &(b, pb) in row {
                        let both = probed[a as usize] != 0 && probed[b as usize] != 0;
                        if pa && !pb && both {
                            assert_ne!(class[a as usize], class[b as usize], "trial {trial}");
                        }
                    }
                }
            }
            if k > 1 {
                let gave_up = hard_classes(&lists, &k_idx, (&t_ptr, &t_idx), &probed, k - 1);
                assert!(
                    gave_up.unwrap().is_none(),
                    "trial {trial}: {k} classes under a bound of {}",
                    k - 1
                );
            }
        }
    }
}
