//! Saturation coloring (DSATUR, Brelaz): colors the columns one at a time, each time the
//! uncolored column whose neighbours (columns sharing a row with it) hold the most distinct
//! colors.
//!
//! # Design
//!
//! Each column is colored once, by one walk over its rows: the colors of its colored
//! neighbours are marked forbidden (the smallest free one is its color) and its uncolored
//! neighbours are listed; then each listed neighbour to which the new color is new gains one
//! step of saturation and moves up one bucket of the queue. A column reached through two rows
//! is met twice, which changes nothing (a color forbidden twice, a color new only once), so
//! no marker of distinct neighbours is needed, and the walk's loop has no branch.
//!
//! On large patterns the cost is memory latency: every neighbour visit is a read at a
//! scattered column, at the end of a chain of dependent reads (the column's rows, each row's
//! place, its columns). So:
//! * what the walk and the queue ask about a column sits in one 16-byte record ([`Column`]:
//!   its color or its saturation, its place in its bucket, the colors below 64 it has seen),
//!   one cache line where separate arrays took five; colors from 64 up are asked of [`Seen`];
//! * on large patterns whose rows reach far-apart columns ([`scattered`]) the walk first asks
//!   for each level of the chain ahead ([`prefetch_walk`]), so a level's reads overlap;
//! * runs of equal rows (several unknowns per mesh node) are walked once ([`Walks`]).
//!
//! Measured (`nanprop-bench --coloring`, medians, the README's before/after table): random 5
//! per row at n = 10^6 2.8 -> 1.4 s (the natural order 0.5-0.6 s), the FEM-like mesh with 4
//! unknowns a node 8.5 -> 5.6 ms.
//!
//! # Ties
//!
//! At equal saturation the bucket's stack order decides: the buckets start with every column
//! at saturation 0, stacked by increasing sum of its rows' lengths (an upper bound on its
//! distance-2 degree that costs no traversal; a stable sort), so the column with the most
//! entries around it starts; after that the column that gained a color last goes first; a
//! column leaves its bucket by swapping with the bucket's last. None of the above changes
//! which column goes next: the colorings are the ones of the plain algorithm.

use super::forbidden::first_free;
use super::seen::Seen;
use crate::error::{filled, push, reserve, Result};
use crate::pattern::{Pattern, Transposed};

/// Marks a colored column's `state`; the low bits are then its color.
const COLORED: u32 = 1 << 31;

/// Columns at or beyond this many cannot be colored here (the color would reach [`COLORED`]).
const MAX_COLUMNS: usize = COLORED as usize;

/// What the walks ask about one column, in one record (see the module docs).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Column {
    /// Colors 0 to 63 among the column's colored neighbours, one bit each.
    low: u64,
    /// `COLORED | color` once colored; before that, its saturation (its bucket).
    state: u32,
    /// Its position in its bucket while uncolored.
    pos: u32,
}

/// The uncolored columns by saturation: one stack per saturation value.
struct Queue {
    buckets: Vec<Vec<u32>>,
    max: usize,
    left: usize,
}

impl Queue {
    /// The next column to color: the top of the highest nonempty bucket.
    fn pop(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        while self.buckets[self.max].is_empty() {
            self.max -= 1;
        }
        self.left -= 1;
        self.buckets[self.max].pop().map(|v| v as usize)
    }

    /// Moves uncolored column `w` from its bucket to the next one up.
    fn raise(&mut self, cols: &mut [Column], w: usize) -> Result<()> {
        let (key, pos) = (cols[w].state as usize, cols[w].pos);
        let bucket = &mut self.buckets[key];
        let last = *bucket.last().expect("w is in its bucket");
        bucket[pos as usize] = last;
        cols[last as usize].pos = pos;
        bucket.pop();
        if key + 1 == self.buckets.len() {
            push(&mut self.buckets, Vec::new(), "buckets")?;
        }
        let up = &mut self.buckets[key + 1];
        cols[w] = Column {
            state: key as u32 + 1,
            pos: up.len() as u32,
            ..cols[w]
        };
        push(up, w as u32, "a bucket")?;
        self.max = self.max.max(key + 1);
        Ok(())
    }
}

/// The columns stacked by increasing sum of their rows' lengths less one (stable), and the
/// largest number of entries in one column's rows (the longest walk).
fn by_entries_around(p: &Pattern, t: &Transposed) -> Result<(Vec<u32>, usize)> {
    let n = p.cols();
    let mut around = filled(0usize, n, "degrees")?;
    for (v, a) in around.iter_mut().enumerate() {
        *a = t.row_idx[t.col_ptr[v]..t.col_ptr[v + 1]]
            .iter()
            .map(|&i| p.row(i as usize).len() - 1)
            .sum();
    }
    let top = around.iter().copied().max().unwrap_or(0);
    let walk = (0..n)
        .map(|v| around[v] + t.col_ptr[v + 1] - t.col_ptr[v])
        .max()
        .unwrap_or(0);
    let mut order = crate::error::collect(0..n as u32, "an order")?;
    if top > 4 * n {
        // Long rows: a count per value would outgrow the columns (it is at most nnz).
        order.sort_by_key(|&v| around[v as usize]);
        return Ok((order, walk));
    }
    let mut start = filled(0u32, top + 2, "degree counts")?;
    for &a in &around {
        start[a + 1] += 1;
    }
    for k in 0..=top {
        start[k + 1] += start[k];
    }
    for (v, &a) in around.iter().enumerate() {
        order[start[a] as usize] = v as u32;
        start[a] += 1;
    }
    Ok((order, walk))
}

/// Saturation coloring of the columns of `p` (`t` its transposed structure). Returns the
/// order taken (empty unless `with_order`), the colors and their count.
///
/// # Errors
/// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the per-column records
/// (16 bytes a column), the queue, the walks without repeated rows or the order do not fit;
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when `p` has 2^31
/// columns or more (a color must leave the record's top bit free).
pub(super) fn saturation(
    p: &Pattern,
    t: &Transposed,
    with_order: bool,
) -> Result<(Vec<u32>, Vec<u32>, usize)> {
    walk_in_order(p, t, &Walks::new(p, t)?, scattered(p), with_order)
}

/// [`saturation`], walking `walks` (with prefetching when `far`).
fn walk_in_order(
    p: &Pattern,
    t: &Transposed,
    walks: &Walks,
    far: bool,
    with_order: bool,
) -> Result<(Vec<u32>, Vec<u32>, usize)> {
    let n = p.cols();
    if n >= MAX_COLUMNS {
        return Err(crate::error::Error::invalid(format!(
            "saturation coloring takes fewer than 2^31 columns, not {n}"
        )));
    }
    let (first, walk) = by_entries_around(p, t)?;
    // The uncolored neighbours met on one walk, with repeats (a column reached through two
    // rows is listed twice; the second finds the color already seen).
    let mut uncolored = filled(0u32, walk, "neighbours")?;
    let blank = Column {
        low: 0,
        state: 0,
        pos: 0,
    };
    let mut cols = filled(blank, n, "column records")?;
    for (k, &v) in first.iter().enumerate() {
        cols[v as usize].pos = k as u32;
    }
    let mut q = Queue {
        buckets: vec![first],
        max: 0,
        left: n,
    };
    let mut seen = Seen::new(n);
    let mut order = Vec::new();
    if with_order {
        reserve(&mut order, n, "an order")?;
    }
    // Slot 0 takes the writes of uncolored neighbours (no branch); color c is slot c + 1.
    let mut forbidden: Vec<u32> = vec![u32::MAX];
    let mut colors = 0usize;
    while let Some(v) = q.pop() {
        if with_order {
            order.push(v as u32);
        }
        let stamp = v as u32;
        let mut met = 0;
        let rows = walks.rows(v);
        if far {
            prefetch_walk(p, rows, &cols);
        }
        for &i in rows {
            for &k in p.row(i as usize) {
                let state = cols[k as usize].state;
                let colored = state & COLORED != 0;
                let slot = if colored { (state & !COLORED) + 1 } else { 0 };
                forbidden[slot as usize] = stamp;
                uncolored[met] = k;
                met += usize::from(!colored);
            }
        }
        let c = first_free(&mut forbidden, 1, stamp)?;
        cols[v].state = COLORED | c as u32;
        colors = colors.max(c + 1);
        for &w in &uncolored[..met] {
            let w = w as usize;
            if w != v && seen.insert(&mut cols[w].low, w, c as u32)? {
                q.raise(&mut cols, w)?;
            }
        }
    }
    drop(q); // its first bucket held every column: not beside the colors
    let colors_of = crate::error::collect(cols.iter().map(|col| col.state & !COLORED), "colors")?;
    Ok((order, colors_of, colors))
}

/// Whether the walks' reads leave the caches: many columns (their records alone 1 MB, half
/// this machine's L2) and rows whose columns lie far apart on average (4096 columns, 64 KB of
/// records). There [`prefetch_walk`] pays (random 5 per row at n = 10^6: the order 1.6 ->
/// 1.1 s); on banded and mesh patterns the cache already holds the walk and the extra loops
/// only cost (banded n = 10^6: 0.28 -> 0.35 s).
fn scattered(p: &Pattern) -> bool {
    const MANY: usize = 1 << 16;
    const FAR: usize = 1 << 12;
    if p.cols() < MANY {
        return false;
    }
    let spread: usize = (0..p.rows())
        .map(|i| match p.row(i) {
            [first, .., last] => (last - first) as usize,
            _ => 0,
        })
        .sum();
    spread >= FAR * p.rows()
}

/// Asks for what the walk over `rows` will read, level by level (the rows' places, their
/// columns, the columns' records), so the scattered reads of one level overlap instead of
/// waiting for each other.
fn prefetch_walk(p: &Pattern, rows: &[u32], cols: &[Column]) {
    use crate::prefetch::prefetch;
    let (row_ptr, col_idx) = (p.row_ptr(), p.col_idx());
    for &i in rows {
        prefetch(row_ptr, i as usize);
    }
    for &i in rows {
        prefetch(col_idx, row_ptr[i as usize]);
    }
    for &i in rows {
        for &k in p.row(i as usize) {
            prefetch(cols, k as usize);
        }
    }
}

/// The rows each column's walk goes through: its rows, less those equal to the row before
/// (several unknowns per mesh node make runs of equal rows: on the FEM-like pattern of the
/// benchmark, 4 dofs a node, a column's 20 rows hold 5 distinct ones). A repeated row is
/// always right after its twin in a column's list (both hold the column), so skipping it
/// skips only neighbours already met, and the coloring is the one the full walk gives.
enum Walks<'t> {
    /// No row repeats the one before: the transposed structure as it is.
    All(&'t Transposed),
    /// Column pointers and rows of the walks without the repeated rows.
    Distinct(Vec<usize>, Vec<u32>),
}

impl<'t> Walks<'t> {
    fn new(p: &Pattern, t: &'t Transposed) -> Result<Self> {
        let repeats = |i: usize| i > 0 && !p.row(i).is_empty() && p.row(i) == p.row(i - 1);
        let count = (0..p.rows()).filter(|&i| repeats(i)).count();
        if count == 0 {
            return Ok(Walks::All(t));
        }
        let repeated = crate::error::collect((0..p.rows()).map(repeats), "repeated rows")?;
        let kept: usize = (0..p.rows())
            .filter(|&i| !repeated[i])
            .map(|i| p.row(i).len())
            .sum();
        let mut ptr = filled(0usize, p.cols() + 1, "column pointers")?;
        let mut rows = Vec::new();
        reserve(&mut rows, kept, "rows")?;
        for v in 0..p.cols() {
            rows.extend(
                t.row_idx[t.col_ptr[v]..t.col_ptr[v + 1]]
                    .iter()
                    .filter(|&&i| !repeated[i as usize]),
            );
            ptr[v + 1] = rows.len();
        }
        Ok(Walks::Distinct(ptr, rows))
    }

    #[inline]
    fn rows(&self, v: usize) -> &[u32] {
        match self {
            Walks::All(t) => &t.row_idx[t.col_ptr[v]..t.col_ptr[v + 1]],
            Walks::Distinct(ptr, rows) => &rows[ptr[v]..ptr[v + 1]],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing as synthetic;

    #[test]
    fn walks_without_repeated_rows_and_prefetching_give_the_same_coloring() {
        // Runs of equal rows: a mesh with 3 unknowns a node, blocks, and a random pattern with
        // each row doubled; then patterns without repeats, where nothing is left out.
        let node = synthetic::stencil_2d(12);
        let mesh = synthetic::from_rows(432, 432, |i, r| {
            for &k in node.row(i / 3) {
                r.extend(k as usize * 3..k as usize * 3 + 3);
            }
        });
        let random = synthetic::random_sparse(150, 300, 6, 4);
        let doubled = synthetic::from_rows(300, 300, |i, r| {
            r.extend(random.row(i / 2).iter().map(|&j| j as usize))
        });
        let patterns = [
            mesh,
            synthetic::block_diagonal(300, 7),
            doubled,
            synthetic::banded(200, 3),
            synthetic::random_sparse(200, 200, 5, 1),
        ];
        for (k, p) in patterns.iter().enumerate() {
            let t = p.transpose_structure().unwrap();
            let walks = Walks::new(p, &t).unwrap();
            assert_eq!(matches!(walks, Walks::Distinct(..)), k < 3, "pattern {k}");
            let plain = walk_in_order(p, &t, &Walks::All(&t), false, true).unwrap();
            assert!(super::super::check(p, &plain.1, plain.2).is_ok());
            for far in [false, true] {
                assert_eq!(
                    walk_in_order(p, &t, &walks, far, true).unwrap(),
                    plain,
                    "pattern {k}"
                );
            }
        }
    }
}
