//! The algorithm: the bipartite graph of a pattern seen from its columns (distinct distance-2
//! neighbours, degrees), the vertex orders, greedy coloring and iterated greedy recoloring;
//! saturation (DSATUR) is reached from here and lives in `saturation.rs`.

use super::buckets::BucketQueue;
use super::columns::ColumnRows;
use super::forbidden::first_free;
use super::Order;
use crate::error::{collect, filled, reserve, Result};
use crate::pattern::Pattern;
use crate::rng::Rng;

/// The pattern's adjacency in both directions (its rows, and the rows of each column:
/// `columns.rs`), and a marker for distinct neighbours (made by the first order that walks
/// neighbourhoods: saturation and greedy passes do not need it).
pub(super) struct Graph<'a> {
    p: &'a Pattern,
    t: ColumnRows<'a>,
    mark: Vec<u32>,
    generation: u32,
}

impl<'a> Graph<'a> {
    pub(super) fn new(p: &'a Pattern) -> Result<Self> {
        Ok(Graph {
            p,
            t: ColumnRows::new(p)?,
            mark: Vec::new(),
            generation: 0,
        })
    }

    /// Makes the marker of distinct neighbours, once.
    fn marks(&mut self) -> Result<()> {
        if self.mark.len() != self.p.cols() {
            self.mark = filled(0, self.p.cols(), "column marks")?;
        }
        Ok(())
    }

    /// Calls `f` once for each distinct column sharing a row with `v` (not `v` itself).
    /// The marker must have been made ([`Graph::marks`]).
    fn for_each_neighbour(&mut self, v: usize, mut f: impl FnMut(usize)) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Wrapped: old marks could equal the new generation.
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.generation = 1;
        }
        let stamp = self.generation;
        self.mark[v] = stamp;
        for &i in self.t.of(v) {
            for &k in self.p.row(i as usize) {
                if self.mark[k as usize] != stamp {
                    self.mark[k as usize] = stamp;
                    f(k as usize);
                }
            }
        }
    }

    pub(super) fn degrees(&mut self) -> Result<Vec<usize>> {
        self.marks()?;
        let mut deg = filled(0, self.p.cols(), "degrees")?;
        for (v, d) in deg.iter_mut().enumerate() {
            self.for_each_neighbour(v, |_| *d += 1);
        }
        Ok(deg)
    }

    /// As [`Graph::for_each_neighbour`], for an `f` that can fail: the first error is returned
    /// (the remaining neighbours are still visited, without `f`).
    fn try_each_neighbour(
        &mut self,
        v: usize,
        mut f: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        self.marks()?;
        let mut outcome = Ok(());
        self.for_each_neighbour(v, |w| {
            if outcome.is_ok() {
                outcome = f(w);
            }
        });
        outcome
    }

    /// Greedy coloring in `order`; returns the colors and their count.
    pub(super) fn greedy(&mut self, order: &[u32]) -> Result<(Vec<u32>, usize)> {
        let n = self.p.cols();
        let mut color = filled(u32::MAX, n, "colors")?;
        let mut forbidden: Vec<u32> = Vec::new();
        let mut colors = 0usize;
        for &v in order {
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
            Order::Natural => all()?,
            Order::Random(seed) => {
                let mut v = all()?;
                let mut rng = Rng::new(seed);
                for k in (1..n).rev() {
                    v.swap(k, rng.below(k + 1));
                }
                v
            }
            Order::LargestFirst => {
                let deg = self.degrees()?;
                let mut v = all()?;
                v.sort_by_key(|&j| std::cmp::Reverse(deg[j as usize]));
                v
            }
            Order::SmallestLast => {
                let mut q = BucketQueue::new(self.degrees()?)?;
                let mut removed = Vec::new();
                reserve(&mut removed, n, "an order")?;
                while let Some(v) = q.pop_min() {
                    removed.push(v as u32);
                    self.try_each_neighbour(v, |w| q.decrement(w))?;
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
                    self.try_each_neighbour(v, |w| q.decrement(w))?;
                }
                out
            }
            Order::Saturation => self.saturation(true)?.0,
            Order::IncidenceDegree => {
                let mut q = BucketQueue::new(filled(0, n, "vertex keys")?)?;
                let mut out = Vec::new();
                reserve(&mut out, n, "an order")?;
                while let Some(v) = q.pop_max() {
                    out.push(v as u32);
                    self.try_each_neighbour(v, |w| q.increment(w))?;
                }
                out
            }
        })
    }

    /// DSATUR: colors as it orders (`saturation.rs`). Returns the order taken (empty unless
    /// `with_order`), the colors and their count.
    pub(super) fn saturation(&mut self, with_order: bool) -> Result<(Vec<u32>, Vec<u32>, usize)> {
        super::saturation::saturation(self.p, &self.t, with_order)
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
