//! The algorithm: the bipartite graph of a pattern seen from its columns (distinct distance-2
//! neighbours, degrees), the vertex orders, greedy coloring and iterated greedy recoloring;
//! saturation (DSATUR) is reached from here and lives in `saturation.rs`.

use super::buckets::BucketQueue;
use super::columns::ColumnRows;
use super::forbidden::first_free;
use super::saturation::Reach;
use super::Order;
use crate::error::{collect, filled, reserve, Result};
use crate::pattern::Pattern;
use crate::prefetch::prefetch;
use crate::rng::Rng;

/// The pattern's adjacency in both directions (its rows, and the rows of each column:
/// `columns.rs`), and a marker for distinct neighbours (made by the first order that walks
/// neighbourhoods: saturation and greedy passes do not need it).
pub(super) struct Graph<'a> {
    p: &'a Pattern,
    t: ColumnRows<'a>,
    mark: Vec<u32>,
    generation: u32,
    /// The distance-2 degrees, once counted (largest-first, smallest-last and dynamic
    /// largest-first all start from them: best-of counts them once).
    degrees: Vec<usize>,
    /// Whether the walks and greedy passes ask for each level ahead (rows reaching far-apart
    /// columns of a large pattern: saturation's `Reach::FarAndLarge`).
    far: bool,
    /// The last walk's distinct neighbours ([`Graph::neighbours`]).
    near: Vec<u32>,
}

impl<'a> Graph<'a> {
    pub(super) fn new(p: &'a Pattern) -> Result<Self> {
        Ok(Graph {
            p,
            t: ColumnRows::new(p)?,
            mark: Vec::new(),
            generation: 0,
            degrees: Vec::new(),
            far: Reach::of(p) == Reach::FarAndLarge,
            near: Vec::new(),
        })
    }

    /// Makes the marker of distinct neighbours, once.
    fn marks(&mut self) -> Result<()> {
        if self.mark.len() != self.p.cols() {
            self.mark = filled(0, self.p.cols(), "column marks")?;
        }
        Ok(())
    }

    /// A new stamp for a walk from `v`, `v` marked with it. The marker must have been made
    /// ([`Graph::marks`]).
    #[inline]
    fn stamp(&mut self, v: usize) -> u32 {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Wrapped: old marks could equal the new generation.
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.generation = 1;
        }
        self.mark[v] = self.generation;
        self.generation
    }

    /// The distinct columns sharing a row with `v` (not `v` itself), in the order the walk
    /// meets them, in a buffer the walks share.
    fn neighbours(&mut self, v: usize) -> Result<&[u32]> {
        self.marks()?;
        let stamp = self.stamp(v);
        let rows = self.t.of(v);
        let most: usize = rows.iter().map(|&i| self.p.row(i as usize).len()).sum();
        self.near.clear();
        reserve(&mut self.near, most, "neighbours")?;
        let near = &mut self.near;
        walk(self.p, rows, &mut self.mark, stamp, self.far, |k| {
            near.push(k)
        });
        Ok(&self.near)
    }

    /// The distance-2 degree of every column (the number of distinct columns sharing a row
    /// with it), counted on the first call.
    pub(super) fn degrees(&mut self) -> Result<&[usize]> {
        if self.degrees.len() != self.p.cols() {
            self.marks()?;
            let mut deg = filled(0, self.p.cols(), "degrees")?;
            for (v, d) in deg.iter_mut().enumerate() {
                let stamp = self.stamp(v);
                walk(
                    self.p,
                    self.t.of(v),
                    &mut self.mark,
                    stamp,
                    self.far,
                    |_| *d += 1,
                );
            }
            self.degrees = deg;
        }
        Ok(&self.degrees)
    }

    /// Greedy coloring in `order`; returns the colors and their count.
    pub(super) fn greedy(&mut self, order: &[u32]) -> Result<(Vec<u32>, usize)> {
        let n = self.p.cols();
        let mut color = filled(u32::MAX, n, "colors")?;
        let mut forbidden: Vec<u32> = Vec::new();
        let mut colors = 0usize;
        for (at, &v) in order.iter().enumerate() {
            if self.far {
                // The order is known: the walks a few columns ahead are asked for a level at a
                // time, so each level's scattered reads overlap with the walks between.
                ask_ahead(self.p, &self.t, &color, order, at);
            }
            let v = v as usize;
            let stamp = v as u32;
            for &i in self.t.of(v) {
                for &k in self.p.row(i as usize) {
                    let c = color[k as usize];
                    if c != u32::MAX {
                        forbidden[c as usize] = stamp;
                    }
                }
            }
            let c = first_free(&mut forbidden, stamp)?;
            color[v] = c as u32;
            colors = colors.max(c + 1);
        }
        Ok((color, colors))
    }

    pub(super) fn order(&mut self, order: Order) -> Result<Vec<u32>> {
        let n = self.p.cols();
        let all = || collect(0..n as u32, "an order");
        Ok(match order {
            Order::Natural | Order::Lattice => all()?,
            Order::Random(seed) => {
                let mut v = all()?;
                let mut rng = Rng::new(seed);
                for k in (1..n).rev() {
                    v.swap(k, rng.below(k + 1));
                }
                v
            }
            Order::LargestFirst => {
                let mut v = all()?;
                let deg = self.degrees()?;
                v.sort_by_key(|&j| std::cmp::Reverse(deg[j as usize]));
                v
            }
            Order::SmallestLast => {
                let mut q = BucketQueue::new(self.degrees()?)?;
                let mut removed = Vec::new();
                reserve(&mut removed, n, "an order")?;
                while let Some(v) = q.pop_min() {
                    removed.push(v as u32);
                    q.decrement_all(self.neighbours(v)?)?;
                }
                removed.reverse();
                removed
            }
            Order::DynamicLargestFirst => {
                let mut q = BucketQueue::new(self.degrees()?)?;
                let mut out = Vec::new();
                reserve(&mut out, n, "an order")?;
                while let Some(v) = q.pop_max() {
                    out.push(v as u32);
                    q.decrement_all(self.neighbours(v)?)?;
                }
                out
            }
            Order::Saturation => self.saturation(true)?.0,
            Order::IncidenceDegree => {
                let mut q = BucketQueue::new(&filled(0, n, "vertex keys")?)?;
                let mut out = Vec::new();
                reserve(&mut out, n, "an order")?;
                while let Some(v) = q.pop_max() {
                    out.push(v as u32);
                    q.increment_all(self.neighbours(v)?)?;
                }
                out
            }
        })
    }

    /// DSATUR: colors as it orders (`saturation.rs`). Returns the order taken (empty unless
    /// `with_order`), the colors and their count.
    pub(super) fn saturation(&mut self, with_order: bool) -> Result<(Vec<u32>, Vec<u32>, usize)> {
        super::saturation::saturation(self.p, Some(&self.t), with_order)
    }

    /// The rows of each column.
    pub(super) fn columns(&self) -> &ColumnRows<'a> {
        &self.t
    }

    /// Iterated greedy (Culberson): recolor with the classes of `colors` as the order, which
    /// never uses more colors. Class orders alternate: reverse, largest class first, random.
    pub(super) fn recolor(
        &mut self,
        mut colors: Vec<u32>,
        mut count: usize,
        rounds: usize,
        seed: u64,
        target: usize,
    ) -> Result<(Vec<u32>, usize)> {
        let mut rng = Rng::new(seed ^ 0x5EED);
        for round in 0..rounds {
            if count <= target {
                break;
            }
            let mut size = filled(0usize, count, "class sizes")?;
            colors.iter().for_each(|&c| size[c as usize] += 1);
            let mut classes = collect(0..count as u32, "classes")?;
            match round % 3 {
                0 => classes.reverse(),
                1 => classes.sort_by_key(|&c| std::cmp::Reverse(size[c as usize])),
                _ => {
                    for k in (1..count).rev() {
                        classes.swap(k, rng.below(k + 1));
                    }
                }
            }
            let mut rank = filled(0u32, count, "class ranks")?;
            for (r, &c) in classes.iter().enumerate() {
                rank[c as usize] = r as u32;
            }
            let mut order = collect(0..colors.len() as u32, "an order")?;
            order.sort_by_key(|&j| rank[colors[j as usize] as usize]);
            let (new, new_count) = self.greedy(&order)?;
            debug_assert!(new_count <= count, "iterated greedy never adds colors");
            (colors, count) = (new, new_count);
        }
        Ok((colors, count))
    }
}

/// How many places ahead of the column being colored a greedy pass asks for each level of a
/// walk: where its rows are listed, its rows; their places; their columns; the columns' colors.
/// Random 5 per row at 10^6: the natural pass 538 -> 259 ms, a random order 738 -> 413 ms (min
/// of 3 runs each); on meshes and bands (not far-reaching) it only cost (the band at 10^6
/// 75 -> 124 ms), so they do not ask.
const AHEAD: [usize; 4] = [12, 8, 4, 2];

/// Asks for one level each of the walks of the columns [`AHEAD`] places after `at` in `order`.
fn ask_ahead(p: &Pattern, t: &ColumnRows, color: &[u32], order: &[u32], at: usize) {
    let (row_ptr, col_idx) = (p.row_ptr(), p.col_idx());
    let (starts, rows) = (t.starts(), t.rows());
    if let Some(&u) = order.get(at + AHEAD[0]) {
        prefetch(starts, u as usize);
        prefetch(rows, starts[u as usize]);
    }
    if let Some(&u) = order.get(at + AHEAD[1]) {
        for &i in t.of(u as usize) {
            prefetch(row_ptr, i as usize);
        }
    }
    if let Some(&u) = order.get(at + AHEAD[2]) {
        for &i in t.of(u as usize) {
            prefetch(col_idx, row_ptr[i as usize]);
        }
    }
    if let Some(&u) = order.get(at + AHEAD[3]) {
        for &i in t.of(u as usize) {
            for &k in p.row(i as usize) {
                prefetch(color, k as usize);
            }
        }
    }
}

/// Asks for what the walk over `rows` will read, level by level (the rows' places, their
/// columns, the columns' records), so the scattered reads of one level overlap instead of
/// waiting for each other.
fn prefetch_walk<T>(p: &Pattern, rows: &[u32], cols: &[T]) {
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

/// Calls `f` once for each column of `rows` not marked with `stamp`, marking it. With `far`
/// (large patterns whose rows reach far-apart columns) each level of the walk is asked for
/// first (the rows' places, their columns, the columns' marks: [`prefetch_walk`]), so a
/// level's scattered reads overlap: random 5 per row at
/// n = 10^6, smallest-last 3.5 -> 2.5 s with its queue's records asked for too (`buckets.rs`).
fn walk(
    p: &Pattern,
    rows: &[u32],
    mark: &mut [u32],
    stamp: u32,
    far: bool,
    mut f: impl FnMut(u32),
) {
    if far {
        prefetch_walk(p, rows, mark);
    }
    for &i in rows {
        for &k in p.row(i as usize) {
            if mark[k as usize] != stamp {
                mark[k as usize] = stamp;
                f(k);
            }
        }
    }
}

/// Every column's distinct neighbours (columns sharing a row with it, not itself), sorted,
/// counted naively from the transposed structure: what the tests hold the walks against.
#[cfg(test)]
pub(super) fn naive_neighbours(p: &Pattern) -> Vec<Vec<usize>> {
    let by_columns = p.transpose_structure().unwrap();
    (0..p.cols())
        .map(|v| {
            let mut w: Vec<usize> = (by_columns.col(v).iter())
                .flat_map(|&i| p.row(i as usize).iter().map(|&j| j as usize))
                .filter(|&j| j != v)
                .collect();
            w.sort_unstable();
            w.dedup();
            w
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing as synthetic;
    use std::collections::BTreeMap;

    /// Replays a dynamic order naively: every step must take a vertex whose key (its neighbours
    /// still in the queue for smallest-last and dynamic largest-first, those already taken for
    /// incidence-degree) is the smallest (smallest-last) or the largest (the others) among the
    /// vertices left.
    fn follows_its_definition(p: &Pattern, order: Order) {
        let n = p.cols();
        let lists = naive_neighbours(p);
        let neighbours = |v: usize| lists[v].clone();
        let mut seq: Vec<usize> = (Graph::new(p).unwrap().order(order).unwrap().into_iter())
            .map(|v| v as usize)
            .collect();
        if order == Order::SmallestLast {
            seq.reverse(); // the order removed
        }
        let mut key: Vec<usize> = match order {
            Order::IncidenceDegree => vec![0; n],
            _ => (0..n).map(|v| neighbours(v).len()).collect(),
        };
        let mut left: BTreeMap<usize, usize> = BTreeMap::new();
        for &k in &key {
            *left.entry(k).or_default() += 1;
        }
        let mut taken = vec![false; n];
        for (step, &v) in seq.iter().enumerate() {
            let best = match order {
                Order::SmallestLast => *left.keys().next().unwrap(),
                _ => *left.keys().next_back().unwrap(),
            };
            assert_eq!(key[v], best, "{order:?}, step {step}, vertex {v}");
            taken[v] = true;
            let drop_one = |left: &mut BTreeMap<usize, usize>, k: usize| {
                let c = left.get_mut(&k).unwrap();
                *c -= 1;
                if *c == 0 {
                    left.remove(&k);
                }
            };
            drop_one(&mut left, key[v]);
            for w in neighbours(v).into_iter().filter(|&w| !taken[w]) {
                drop_one(&mut left, key[w]);
                key[w] = match order {
                    Order::IncidenceDegree => key[w] + 1,
                    _ => key[w] - 1,
                };
                *left.entry(key[w]).or_default() += 1;
            }
        }
        assert_eq!(seq.len(), n);
        assert!(taken.iter().all(|&t| t), "{order:?}: every vertex once");
    }

    #[test]
    fn greedy_passes_give_each_column_the_smallest_color_free_among_its_neighbours() {
        // A mesh and a random pattern of more than 2^16 columns whose rows reach far apart
        // (its passes ask ahead along the order), in the natural order and a random one.
        let random = synthetic::random_sparse(70_000, 70_000, 3, 9);
        assert!(Graph::new(&random).unwrap().far);
        for p in [synthetic::stencil_2d(30), random] {
            let lists = naive_neighbours(&p);
            for order in [Order::Natural, Order::Random(4)] {
                let mut g = Graph::new(&p).unwrap();
                let seq = g.order(order).unwrap();
                let (colors, count) = g.greedy(&seq).unwrap();
                let mut naive = vec![u32::MAX; p.cols()];
                for &v in &seq {
                    let used: std::collections::HashSet<u32> =
                        lists[v as usize].iter().map(|&w| naive[w]).collect();
                    naive[v as usize] = (0..).find(|c| !used.contains(c)).unwrap();
                }
                assert_eq!(colors, naive, "{order:?}");
                assert_eq!(count, *naive.iter().max().unwrap() as usize + 1);
            }
        }
    }

    #[test]
    fn the_dynamic_orders_take_a_vertex_of_extreme_key_at_every_step() {
        // A mesh (walked as it is) and a random pattern of more than 2^16 columns whose rows
        // reach far apart (walked with each level asked for first).
        let random = synthetic::random_sparse(70_000, 70_000, 3, 5);
        assert_eq!(Reach::of(&random), Reach::FarAndLarge);
        for p in [synthetic::stencil_2d(30), random] {
            for order in [
                Order::SmallestLast,
                Order::DynamicLargestFirst,
                Order::IncidenceDegree,
            ] {
                follows_its_definition(&p, order);
            }
        }
    }
}
