//! Saturation coloring (DSATUR, Brelaz): colors the columns one at a time, each time the
//! uncolored column whose neighbours (columns sharing a row with it) hold the most distinct
//! colors.
//!
//! # Design
//!
//! Every column knows the colors its colored neighbours hold: when a column takes color `c`,
//! it tells each uncolored neighbour, and a neighbour to which `c` is new gains one step of
//! saturation and moves up one bucket of the queue. So the column popped next finds its color
//! without a walk, as the smallest color it has not been told ([`Seen::first_free`]), and
//! each column is walked once, to tell its neighbours. A column reached through two rows is
//! met twice, which changes nothing (a color is new only once), so no marker of distinct
//! neighbours is needed.
//!
//! How the walk goes depends on how far the rows reach ([`Reach`]): on banded and mesh
//! patterns one walk with a branch per neighbour (the records are in cache, and the branch
//! follows the front of the order, colored behind and uncolored ahead); on patterns whose
//! rows reach far-apart columns a first loop of loads only, without a branch, lists the
//! uncolored neighbours, so their reads overlap, and a second tells them.
//!
//! On large patterns the cost is memory latency: every neighbour visit is a read at a
//! scattered column, at the end of a chain of dependent reads (where the column's rows are
//! listed, its rows, each row's place, its columns, their records). So:
//! * what the walk and the queue ask about a column sits in one 16-byte record ([`Column`]:
//!   its color or its saturation, its place in its bucket, the colors below 64 it has been
//!   told), one cache line where separate arrays took five; colors from 64 up are kept by
//!   [`Seen`];
//! * on large patterns whose rows reach far-apart columns ([`Reach::FarAndLarge`]) a walk is
//!   listed as the [`Spans`] its rows occupy in the pattern's column list, and the record
//!   (32 bytes there) says where: the chain is three levels (the spans, their columns, the
//!   columns' records) where it was five. The spans are made straight from the pattern's
//!   rows (the transposed structure is not made). Each level is asked for before it is read,
//!   so its reads overlap; a column raised to the top bucket, likely the next popped, has its
//!   spans asked for as it is raised; the columns under the queue's top, popped next unless a
//!   raise comes between, are asked for a level of their walks at a time over the pops before
//!   them ([`ask_below_top`]). Random 5 per row at 10^6 (a small program timing saturation
//!   and the natural-order pass alternately): walks by rows 0.95 s, by spans 0.70 s, without
//!   the transposed structure 0.64 s. Meshes and bands keep 16-byte records and rows: the
//!   larger record alone cost the 2-D stencil at 1000 x 1000 14-18%;
//! * whether a neighbour is colored, the one thing a walk's listing asks of every neighbour,
//!   is a bit of its own (`done`, one bit a column: 1.25 KB at 10^4 columns, where the
//!   records take 160 KB), so only the uncolored neighbours' records are read: half the
//!   visits, since two neighbours meet once from each side and one of them is colored by
//!   the second. Saturation alone (a small program alternating the binaries, min over 8
//!   rounds of 50 runs): random rectangular 5000 x 10000, 8 per row 3.28 -> 2.72 ms, random
//!   5 per row 10^4 2.85 -> 2.48 ms; at 10^6 (records far out of cache either way, the bits
//!   125 KB) no different, 996 -> 970 ms over 5 rounds of 3;
//! * runs of equal rows (several unknowns per mesh node) are walked once ([`Walks`]; the
//!   spans leave them out too).
//!
//! Measured against the natural-order greedy pass on the same pattern (a small program timing
//! the two alternately, min of 200 runs, before and after; `bench/LOG.md`, "Saturation by
//! spans"):
//! banded (bandwidth 11) 10^4 3.3x -> 1.6x, 2-D 5-point stencil 100 x 100 3.3x -> 2.3x,
//! FEM-like mesh with 4 unknowns a node 1.6x -> 1.1x, random 5 per row 10^4 2.5x -> 1.9x,
//! after the color came from the neighbours' telling instead of a walk marking forbidden
//! colors and the near patterns took one walk.
//!
//! # Ties
//!
//! At equal saturation the bucket's stack order decides: the buckets start with every column
//! at saturation 0, stacked by increasing sum of its rows' lengths (an upper bound on its
//! distance-2 degree that costs no traversal; a stable sort), so the column with the most
//! entries around it starts; after that the column that gained a color last goes first; a
//! column leaves its bucket by swapping with the bucket's last. None of the above changes
//! which column goes next: the colorings are the ones of the plain algorithm.

use super::columns::ColumnRows;
use super::seen::Seen;
use crate::error::{filled, push, reserve, Result};
use crate::pattern::Pattern;

/// Marks a colored column's `state`; the low bits are then its color.
const COLORED: u32 = 1 << 31;

/// Columns at or beyond this many cannot be colored here (the color would reach [`COLORED`]).
const MAX_COLUMNS: usize = COLORED as usize;

/// What the walks and the queue ask about one column, in one record (see the module docs).
/// `W` is where the column's walk is listed among the [`Spans`] on far-reaching patterns
/// (`[start, end)`: the record is then 32 bytes), nothing elsewhere (16 bytes).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Column<W> {
    /// Colors 0 to 63 among the column's colored neighbours, one bit each.
    low: u64,
    /// `COLORED | color` once colored; before that, its saturation (its bucket).
    state: u32,
    /// Its position in its bucket while uncolored.
    pos: u32,
    /// Where its walk is listed, when the walks are spans.
    walk: W,
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
    fn raise<W: Copy>(&mut self, cols: &mut [Column<W>], w: usize) -> Result<()> {
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

    /// The column `depth` places below the top of the highest bucket: popped `depth` pops from
    /// now unless raises come between.
    #[inline]
    fn below_top(&self, depth: usize) -> Option<usize> {
        let bucket = &self.buckets[self.max];
        let len = bucket.len();
        (len > depth).then(|| bucket[len - 1 - depth] as usize)
    }
}

/// Per column, the sum of its rows' lengths less one (an upper bound on its distance-2
/// degree), and the largest number of entries in one column's rows (the longest walk).
fn entries_around(p: &Pattern, t: &ColumnRows) -> Result<(Vec<usize>, usize)> {
    let n = p.cols();
    let mut around = filled(0usize, n, "degrees")?;
    for (v, a) in around.iter_mut().enumerate() {
        *a = (t.of(v).iter()).map(|&i| p.row(i as usize).len() - 1).sum();
    }
    let walk = (0..n).map(|v| around[v] + t.of(v).len()).max().unwrap_or(0);
    Ok((around, walk))
}

/// The columns stacked by increasing `around` (stable): where the queue starts.
fn stacked(around: &[usize]) -> Result<Vec<u32>> {
    let n = around.len();
    let top = around.iter().copied().max().unwrap_or(0);
    let mut order = crate::error::collect(0..n as u32, "an order")?;
    if top > 4 * n {
        // Long rows: a count per value would outgrow the columns (it is at most nnz).
        order.sort_by_key(|&v| around[v as usize]);
        return Ok(order);
    }
    let mut start = filled(0u32, top + 2, "degree counts")?;
    for &a in around {
        start[a + 1] += 1;
    }
    for k in 0..=top {
        start[k + 1] += start[k];
    }
    for (v, &a) in around.iter().enumerate() {
        order[start[a] as usize] = v as u32;
        start[a] += 1;
    }
    Ok(order)
}

/// Saturation coloring of the columns of `p` (`t` the rows of its columns). Returns the
/// order taken (empty unless `with_order`), the colors and their count.
///
/// # Errors
/// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the per-column records
/// (16 bytes a column, 32 on far-reaching patterns), the queue, the walks without repeated
/// rows, their spans or the order do not fit;
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when `p` has 2^31
/// columns or more (a color must leave the record's top bit free).
pub(super) fn saturation(
    p: &Pattern,
    t: Option<&ColumnRows>,
    with_order: bool,
) -> Result<(Vec<u32>, Vec<u32>, usize)> {
    walk_in_order(p, t, Reach::of(p), with_order)
}

/// [`saturation`] as suits `reach`: far-reaching large patterns (of fewer than 2^32 entries)
/// walk their [`Spans`], made from the pattern's rows (`t` is not read); the others walk
/// their rows, by `t` (made here when not given).
fn walk_in_order(
    p: &Pattern,
    t: Option<&ColumnRows>,
    reach: Reach,
    with_order: bool,
) -> Result<(Vec<u32>, Vec<u32>, usize)> {
    if p.cols() >= MAX_COLUMNS {
        return Err(crate::error::Error::invalid(format!(
            "saturation coloring takes fewer than 2^31 columns, not {}",
            p.cols()
        )));
    }
    if reach == Reach::FarAndLarge && p.nnz() <= u32::MAX as usize {
        return far_and_large(p, with_order);
    }
    let made;
    let t = match t {
        Some(t) => t,
        None => {
            made = ColumnRows::new(p)?;
            &made
        }
    };
    by_rows(p, t, &Walks::new(p, t)?, reach == Reach::Near, with_order)
}

/// The state of one saturation coloring: the records, the queue, the colors seen past 64,
/// the order so far.
struct Saturation<W> {
    cols: Vec<Column<W>>,
    /// One bit a column, set once it is colored: what a walk's listing asks of each
    /// neighbour, in 1/128 of the records' memory (see [`uncolored_of`]).
    done: Vec<u64>,
    q: Queue,
    seen: Seen,
    order: Option<Vec<u32>>,
    colors: usize,
}

impl<W: Copy> Saturation<W> {
    /// Every column uncolored at saturation 0, stacked as `first` (the module docs say how),
    /// its walk listed at `walk(v)`.
    fn new(first: Vec<u32>, with_order: bool, walk: impl Fn(usize) -> W) -> Result<Self> {
        let n = first.len();
        let mut cols = Vec::new();
        reserve(&mut cols, n, "column records")?;
        cols.extend((0..n).map(|v| Column {
            low: 0,
            state: 0,
            pos: 0,
            walk: walk(v),
        }));
        for (k, &v) in first.iter().enumerate() {
            cols[v as usize].pos = k as u32;
        }
        let order = match with_order {
            true => {
                let mut order = Vec::new();
                reserve(&mut order, n, "an order")?;
                Some(order)
            }
            false => None,
        };
        let q = Queue {
            buckets: vec![first],
            max: 0,
            left: n,
        };
        let done = filled(0u64, n.div_ceil(64), "colored columns")?;
        Ok(Saturation {
            cols,
            done,
            q,
            seen: Seen::new(n),
            order,
            colors: 0,
        })
    }

    /// Pops the most saturated column and colors it; returns it and its color.
    #[inline]
    fn next(&mut self) -> Option<(usize, u32)> {
        let v = self.q.pop()?;
        if let Some(order) = &mut self.order {
            order.push(v as u32);
        }
        // Every colored neighbour told `v` its color when it took it: the smallest color `v`
        // has not seen is its color, with no walk over its colored neighbours.
        let c = self.seen.first_free(self.cols[v].low, v);
        debug_assert!(
            (c as usize) < self.cols.len(),
            "at most one color per column"
        );
        self.cols[v].state = COLORED | c;
        self.done[v / 64] |= 1 << (v % 64);
        self.colors = self.colors.max(c as usize + 1);
        Some((v, c))
    }

    /// Tells uncolored column `w` that a neighbour took color `c`; returns whether that was
    /// new to `w` (which then moved up one bucket).
    #[inline]
    fn tell(&mut self, w: usize, c: u32) -> Result<bool> {
        let new = self.seen.insert(&mut self.cols[w].low, w, c)?;
        if new {
            self.q.raise(&mut self.cols, w)?;
        }
        Ok(new)
    }

    /// The order taken (empty unless asked), the colors and their count.
    fn finish(self) -> Result<(Vec<u32>, Vec<u32>, usize)> {
        drop(self.q); // its first bucket held every column: not beside the colors
        let colors_of = self.cols.iter().map(|col| col.state & !COLORED);
        let colors_of = crate::error::collect(colors_of, "colors")?;
        Ok((self.order.unwrap_or_default(), colors_of, self.colors))
    }
}

/// Saturation walking each column's rows: on near patterns (`near`) one walk tells each
/// neighbour as it meets it; on far-reaching ones (small enough for the caches, or too large
/// for [`Spans`]) the uncolored neighbours are listed first, then told.
fn by_rows(
    p: &Pattern,
    t: &ColumnRows,
    walks: &Walks,
    near: bool,
    with_order: bool,
) -> Result<(Vec<u32>, Vec<u32>, usize)> {
    let (around, longest) = entries_around(p, t)?;
    let mut s = Saturation::new(stacked(&around)?, with_order, |_| ())?;
    drop(around);
    // The uncolored neighbours met on one walk, with repeats (a column reached through two
    // rows is listed twice; the second finds the color already seen).
    let mut uncolored = filled(0u32, longest, "neighbours")?;
    while let Some((v, c)) = s.next() {
        let rows = walks.rows(v);
        if near && c < 64 {
            // One walk tells each neighbour the new color; the records are in cache and the
            // branch follows the order's front (colored behind, uncolored ahead).
            let bit = 1u64 << c;
            for &i in rows {
                for &k in p.row(i as usize) {
                    let col = &mut s.cols[k as usize];
                    if col.state & COLORED == 0 && col.low & bit == 0 {
                        col.low |= bit;
                        s.q.raise(&mut s.cols, k as usize)?;
                    }
                }
            }
            continue;
        }
        // First list the uncolored neighbours (repeats allowed) in a loop of loads only,
        // without a branch, so the scattered reads overlap; then tell them.
        let row_ptr = p.row_ptr();
        let parts = rows
            .iter()
            .map(|&i| [row_ptr[i as usize], row_ptr[i as usize + 1]]);
        let met = uncolored_of(parts, p.col_idx(), &s.done, &mut uncolored);
        for &w in &uncolored[..met] {
            s.tell(w as usize, c)?;
        }
    }
    s.finish()
}

/// Saturation on large far-reaching patterns, walking [`Spans`]: a column's record says
/// where its walk's spans are listed, so a walk is three levels of scattered reads (the
/// spans, the columns they hold, the columns' records), each asked for before it is read.
/// A column raised to the top bucket, likely the next popped, has its spans asked for when
/// it is raised; the columns below the top, popped next unless raises come between, a level
/// of their walks at a time over the pops before them ([`ask_below_top`]).
fn far_and_large(p: &Pattern, with_order: bool) -> Result<(Vec<u32>, Vec<u32>, usize)> {
    use crate::prefetch::prefetch;
    let (spans, around) = Spans::new(p)?;
    let mut s = Saturation::new(stacked(&around)?, with_order, |v| spans.walk(v))?;
    drop(around);
    let longest = (0..p.cols()).map(|v| spans.entries(v)).max().unwrap_or(0);
    let mut uncolored = filled(0u32, longest, "neighbours")?;
    let col_idx = p.col_idx();
    while let Some((v, c)) = s.next() {
        let walk = spans.of(s.cols[v].walk);
        for &[a, _] in walk {
            prefetch(col_idx, a as usize);
        }
        ask_below_top(col_idx, &spans, &s.q, &s.cols);
        let parts = walk.iter().map(|&[a, b]| [a as usize, b as usize]);
        let met = uncolored_of(parts, col_idx, &s.done, &mut uncolored);
        for &w in &uncolored[..met] {
            prefetch(&s.cols, w as usize);
        }
        for &w in &uncolored[..met] {
            let w = w as usize;
            if s.tell(w, c)? && s.cols[w].state as usize == s.q.max {
                prefetch(spans.all(), s.cols[w].walk[0] as usize);
            }
        }
    }
    s.finish()
}

/// Lists into `out` the columns of `col_idx[a..b]` for each span `[a, b]` whose bit in
/// `done` is clear (repeats kept), and returns how many: a loop of loads only, without a
/// branch, so the scattered reads overlap.
#[inline]
fn uncolored_of(
    spans: impl Iterator<Item = [usize; 2]>,
    col_idx: &[u32],
    done: &[u64],
    out: &mut [u32],
) -> usize {
    let mut met = 0;
    for [a, b] in spans {
        for &k in &col_idx[a..b] {
            out[met] = k;
            met += usize::from(done[k as usize / 64] >> (k % 64) & 1 == 0);
        }
    }
    met
}

/// How far a column's walk reaches, which decides how it is walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// Rows whose columns lie close together on average (banded, meshes): the walk's records
    /// stay in cache and the order moves as a front through them, so one walk with a branch
    /// per neighbour is cheapest (against listing first: banded 10^4 1.6 -> 1.2 ms, the
    /// FEM-like mesh 3.2 -> 2.9 ms, 2-D stencil 100 x 100 0.69 -> 0.56 ms).
    Near,
    /// Rows reaching far-apart columns: the neighbours are listed first by a loop of loads
    /// only, so their reads overlap (random 10^4: 2.1 -> 1.4 ms against one walk with a
    /// branch per neighbour).
    Far,
    /// As [`Reach::Far`], on a pattern whose records leave the caches: walked by [`Spans`]
    /// (three levels of reads, each asked for first; fewer than 2^32 entries, else as
    /// [`Reach::Far`]), the walks of the next pops asked for ahead ([`ask_below_top`]).
    FarAndLarge,
}

impl Reach {
    /// Far: rows spanning 4096 columns (64 KB of records) on average; large: 2^16 columns
    /// (their records alone 1 MB, half this machine's L2). On banded and mesh patterns the
    /// cache holds the walk and prefetching only costs (banded n = 10^6: 0.28 -> 0.35 s). The
    /// average is taken over 4096 rows evenly spaced at most: a few microseconds, where all
    /// rows took milliseconds at 10^6 for every coloring that asks.
    pub(super) fn of(p: &Pattern) -> Reach {
        const LARGE: usize = 1 << 16;
        const FAR: usize = 1 << 12;
        const SAMPLE: usize = 1 << 12;
        let step = (p.rows() / SAMPLE).max(1);
        let (spread, rows) = (0..p.rows())
            .step_by(step)
            .map(|i| match p.row(i) {
                [first, .., last] => (last - first) as usize,
                _ => 0,
            })
            .fold((0usize, 0usize), |(s, r), d| (s + d, r + 1));
        match (spread >= FAR * rows, p.cols() >= LARGE) {
            (false, _) => Reach::Near,
            (true, false) => Reach::Far,
            (true, true) => Reach::FarAndLarge,
        }
    }
}

/// How many places below the top of the highest bucket [`ask_below_top`] asks for each level
/// of a column's walk: its record, its spans, the columns they hold, those columns' records.
/// With walks by rows (five levels, `AHEAD = [8, 4, 2, 1, 0]`), random 5 per row at 10^6, the
/// saturation loop: 1.07 -> 0.91 s against without (a small program timing the loop, three
/// runs each, alternated); from 6 to 12 places for the first level no different.
const AHEAD: [usize; 4] = [8, 4, 2, 0];

/// Asks, a level of the walk at a time, for what the columns below the top of the highest
/// bucket will read when they are popped: the column popped next is the top unless this walk
/// raises a column, and the columns under it follow in stack order unless raises come between.
/// On random 5 per row at 10^6, 4 pops in 10 take a column the walk before did not raise (a
/// quarter of those were raised more than 200000 pops before: they wait under the columns
/// raised after them), whose walk is in no cache; asked for a level at a time over the pops
/// before it, the levels' reads overlap, where the column's own walk waits for each level's
/// reads before the next. On meshes (Reach::Near) nothing was gained (the 2-D stencil at
/// 10^6: 141-157 ms without, 140-150 ms with): their pops mostly take a column the walk
/// before raised, whose walk is not known ahead.
fn ask_below_top(col_idx: &[u32], spans: &Spans, q: &Queue, cols: &[Column<[u32; 2]>]) {
    use crate::prefetch::prefetch;
    if let Some(u) = q.below_top(AHEAD[0]) {
        prefetch(cols, u);
    }
    if let Some(u) = q.below_top(AHEAD[1]) {
        prefetch(spans.all(), cols[u].walk[0] as usize);
    }
    if let Some(u) = q.below_top(AHEAD[2]) {
        for &[a, _] in spans.of(cols[u].walk) {
            prefetch(col_idx, a as usize);
        }
    }
    if let Some(u) = q.below_top(AHEAD[3]) {
        for &[a, b] in spans.of(cols[u].walk) {
            for &k in &col_idx[a as usize..b as usize] {
                prefetch(cols, k as usize);
            }
        }
    }
}

/// How many entries ahead [`Spans::new`] asks for the records its scattered updates will
/// touch (a column's counts; twice as far, where its next span goes, and then that place):
/// random 5 per row at 10^6, the scatter 53 -> 33-38 ms and the count 11-19 -> 9-11 ms.
const ASK_ENTRIES: usize = 64;

/// Each column's walk as the spans of the pattern's column list its rows occupy
/// (`[row_ptr[i], row_ptr[i + 1])` for each row `i` of the column, rows equal to the row
/// before left out as in [`Walks`]), 8 bytes a span, for patterns of fewer than 2^32
/// entries. A walk by rows reads each row's place before the row; by spans that level is
/// gone. Made straight from the pattern's rows, as a transposition that writes spans: the
/// transposed structure is not made.
struct Spans {
    /// Where each column's spans start in `spans` (one more than columns).
    starts: Vec<u32>,
    spans: Vec<[u32; 2]>,
}

impl Spans {
    /// The spans of `p`'s columns (whose entries must number fewer than 2^32), and per
    /// column the sum of its rows' lengths less one (as [`entries_around`], repeated rows
    /// counted).
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the spans (8 bytes
    /// each) or the per-column counts and starts do not fit.
    fn new(p: &Pattern) -> Result<(Self, Vec<usize>)> {
        use crate::prefetch::prefetch;
        debug_assert!(p.nnz() <= u32::MAX as usize);
        let (n, row_ptr, col_idx) = (p.cols(), p.row_ptr(), p.col_idx());
        // Per column, side by side (one scattered update an entry): the sum of its rows'
        // lengths less one, and its rows kept.
        let mut counts = filled([0u32; 2], n, "degrees")?;
        for i in 0..p.rows() {
            let (len, kept) = (p.row(i).len() as u32, u32::from(!repeats(p, i)));
            for k in row_ptr[i]..row_ptr[i + 1] {
                if let Some(&ahead) = col_idx.get(k + ASK_ENTRIES) {
                    prefetch(&counts, ahead as usize);
                }
                let count = &mut counts[col_idx[k] as usize];
                count[0] += len - 1;
                count[1] += kept;
            }
        }
        let mut starts = filled(0u32, n + 1, "walk starts")?;
        for j in 0..n {
            starts[j + 1] = starts[j] + counts[j][1];
        }
        let around = crate::error::collect(counts.iter().map(|c| c[0] as usize), "degrees")?;
        drop(counts);
        let mut next = crate::error::copied(&starts[..n], "walk starts")?;
        let mut spans = filled([0u32; 2], starts[n] as usize, "spans")?;
        for i in (0..p.rows()).filter(|&i| !repeats(p, i)) {
            let span = [row_ptr[i] as u32, row_ptr[i + 1] as u32];
            for k in row_ptr[i]..row_ptr[i + 1] {
                if let Some(&ahead) = col_idx.get(k + 2 * ASK_ENTRIES) {
                    prefetch(&next, ahead as usize);
                }
                if let Some(&ahead) = col_idx.get(k + ASK_ENTRIES) {
                    prefetch(&spans, next[ahead as usize] as usize);
                }
                let next = &mut next[col_idx[k] as usize];
                spans[*next as usize] = span;
                *next += 1;
            }
        }
        Ok((Spans { starts, spans }, around))
    }

    /// Where column `v`'s walk is listed: `[start, end)` in [`Spans::all`].
    #[inline]
    fn walk(&self, v: usize) -> [u32; 2] {
        [self.starts[v], self.starts[v + 1]]
    }

    /// The number of entries column `v`'s walk meets.
    fn entries(&self, v: usize) -> usize {
        let spans = self.of(self.walk(v)).iter();
        spans.map(|&[a, b]| (b - a) as usize).sum()
    }

    /// The spans listed at `walk`.
    #[inline]
    fn of(&self, [start, end]: [u32; 2]) -> &[[u32; 2]] {
        &self.spans[start as usize..end as usize]
    }

    /// Every walk's spans.
    #[inline]
    fn all(&self) -> &[[u32; 2]] {
        &self.spans
    }
}

/// Whether row `i` of `p` is nonempty and equal to the row before (several unknowns per mesh
/// node): a walk that met the row before met its columns.
fn repeats(p: &Pattern, i: usize) -> bool {
    // The first columns compared first: rows that differ mostly differ there, without a call
    // to compare the slices.
    i > 0 && {
        let (row, before) = (p.row(i), p.row(i - 1));
        row.first()
            .is_some_and(|first| before.first() == Some(first))
            && row == before
    }
}

/// The rows each column's walk goes through: its rows, less those equal to the row before
/// (several unknowns per mesh node make runs of equal rows: on the FEM-like pattern of the
/// benchmark, 4 dofs a node, a column's 20 rows hold 5 distinct ones). A repeated row is
/// always right after its twin in a column's list (both hold the column), so skipping it
/// skips only neighbours already met, and the coloring is the one the full walk gives.
enum Walks<'t> {
    /// No row repeats the one before: the transposed structure as it is.
    All(&'t ColumnRows<'t>),
    /// Column pointers and rows of the walks without the repeated rows.
    Distinct(Vec<usize>, Vec<u32>),
}

impl<'t> Walks<'t> {
    fn new(p: &Pattern, t: &'t ColumnRows<'t>) -> Result<Self> {
        let repeats = |i: usize| repeats(p, i);
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
            rows.extend((t.of(v).iter()).filter(|&&i| !repeated[i as usize]));
            ptr[v + 1] = rows.len();
        }
        Ok(Walks::Distinct(ptr, rows))
    }

    /// Where each column's walk starts (one more entry than columns), and every walk's rows.
    #[inline]
    fn parts(&self) -> (&[usize], &[u32]) {
        match self {
            Walks::All(t) => (t.starts(), t.rows()),
            Walks::Distinct(ptr, rows) => (ptr, rows),
        }
    }

    #[inline]
    fn rows(&self, v: usize) -> &[u32] {
        let (starts, rows) = self.parts();
        &rows[starts[v]..starts[v + 1]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing as synthetic;

    #[test]
    fn walks_by_rows_and_by_spans_give_the_same_coloring() {
        // Runs of equal rows: a mesh with 3 unknowns a node, blocks, and a random pattern with
        // each row doubled; then patterns without repeats, where nothing is left out; and a
        // random pattern large and far-reaching enough to be walked by spans on its own.
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
            synthetic::random_sparse(60000, 70000, 4, 9),
        ];
        // The columns' rows as the transposed structure, and as the pattern's own rows where
        // it is symmetric (the mesh, the blocks and the band).
        for (k, p) in patterns.iter().enumerate() {
            assert_eq!(Reach::of(p) == Reach::FarAndLarge, k == 5, "pattern {k}");
            let t = ColumnRows::transposed(p).unwrap();
            let plain = by_rows(p, &t, &Walks::All(&t), false, true).unwrap();
            assert!(super::super::check(p, &plain.1, plain.2).is_ok());
            let own = ColumnRows::new(p).unwrap();
            assert_eq!(
                matches!(own, ColumnRows::Symmetric(_)),
                [0, 1, 3].contains(&k)
            );
            for t in [&t, &own] {
                let walks = Walks::new(p, t).unwrap();
                assert_eq!(matches!(walks, Walks::Distinct(..)), k < 3, "pattern {k}");
                for near in [true, false] {
                    let by = by_rows(p, t, &walks, near, true).unwrap();
                    assert_eq!(by, plain, "pattern {k}");
                }
            }
            // By spans: the repeated rows left out, the stacking the same as by rows.
            let (spans, around) = Spans::new(p).unwrap();
            assert_eq!(around, entries_around(p, &t).unwrap().0, "pattern {k}");
            let listed: usize = (0..p.cols()).map(|v| spans.entries(v)).sum();
            let full: usize = (0..p.rows()).map(|i| p.row(i).len().pow(2)).sum();
            assert_eq!(listed < full, k < 3, "pattern {k}");
            assert_eq!(far_and_large(p, true).unwrap(), plain, "pattern {k}");
            // Every reach from the entry point, the column's rows given or not.
            for reach in [Reach::Near, Reach::Far, Reach::FarAndLarge] {
                for given in [Some(&t), None] {
                    let by = walk_in_order(p, given, reach, true).unwrap();
                    assert_eq!(by, plain, "pattern {k}");
                }
            }
        }
    }

    #[test]
    fn each_step_takes_a_most_saturated_column_and_its_smallest_free_color() {
        // Replayed naively: at each step, the distinct colors among every uncolored column's
        // colored neighbours, recounted from scratch. Patterns with colors past 64 (a row of
        // 90 columns, and random rows of 40) exercise the colors asked of `Seen`.
        let wide = synthetic::from_rows(120, 150, |i, r| match i {
            0 => r.extend(0..90),
            _ => r.extend([i % 150, (7 * i + 3) % 150, (13 * i + 5) % 150]),
        });
        let patterns = [
            wide,
            synthetic::random_sparse(60, 120, 40, 2),
            synthetic::stencil_2d(9),
            synthetic::banded(80, 4),
            synthetic::random_sparse(90, 90, 5, 3),
        ];
        for (k, p) in patterns.iter().enumerate() {
            // The stencil and the band are symmetric: colored from their own rows.
            let t = ColumnRows::new(p).unwrap();
            let lists = super::super::graph::naive_neighbours(p);
            let neighbours = |v: usize| lists[v].clone();
            for reach in [Reach::Near, Reach::Far, Reach::FarAndLarge] {
                let (order, colors, count) = walk_in_order(p, Some(&t), reach, true).unwrap();
                assert_eq!(order.len(), p.cols(), "pattern {k}");
                let mut color: Vec<Option<u32>> = vec![None; p.cols()];
                let held = |v: usize, color: &[Option<u32>]| -> Vec<u32> {
                    let mut c: Vec<u32> = neighbours(v).iter().filter_map(|&w| color[w]).collect();
                    c.sort_unstable();
                    c.dedup();
                    c
                };
                for &v in &order {
                    let v = v as usize;
                    let most = (0..p.cols())
                        .filter(|&w| color[w].is_none())
                        .map(|w| held(w, &color).len())
                        .max()
                        .unwrap();
                    let around = held(v, &color);
                    assert_eq!(
                        around.len(),
                        most,
                        "pattern {k}: column {v} not most saturated"
                    );
                    let free = (0..).find(|c| around.binary_search(c).is_err()).unwrap();
                    assert_eq!(colors[v], free, "pattern {k}: column {v}");
                    color[v] = Some(free);
                }
                assert_eq!(count, *colors.iter().max().unwrap() as usize + 1);
                assert!(
                    count > 64 || k > 1,
                    "pattern {k} reaches colors past 64: {count}"
                );
            }
        }
    }
}
