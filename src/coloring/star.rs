//! Star coloring of a symmetric pattern, for Hessians.
//!
//! # Problem
//!
//! A Hessian H is symmetric, so H_ij may be read from column j *or* from column i. Columns
//! may then share a color as long as every entry can be read from one side without a clash:
//! in row i, the color of j belongs to no other column of the row, or in row j, the color of i
//! belongs to no other column of that row (Powell and Toint's direct recovery; Coleman and
//! Moré). Seen on the adjacency graph of the pattern (vertices the columns, an edge for each
//! off-diagonal entry), that is a *star coloring* (Gebremedhin, Manne and Pothen, "What color is
//! your Jacobian?", 2005): adjacent vertices differ, and every path on four vertices uses at
//! least three colors (a two-colored component is a star). It never needs more colors than the
//! column coloring of the same pattern (which is a distance-2 coloring of this graph) and often
//! far fewer: a 2-D grid coupled to one global variable needs a handful against n.
//!
//! # Algorithm
//!
//! Greedy, in a vertex order; each vertex takes the smallest color that creates no two-colored
//! path on four vertices among the vertices colored so far. Every such path is looked at when
//! its last vertex is colored, as an end or from the inside, so two rules are exact:
//!
//! * *v at an end*, v - w - x - y: v may not take x's color when x has a colored neighbour
//!   y other than w with w's color. A count of each vertex's colored neighbours per color
//!   answers that in O(1);
//! * *v inside*, u - v - w - x: when two colored neighbours u, w of v share a color, v may not
//!   take the color of any colored neighbour x of either.
//!
//! This is more permissive than the 2005 paper's algorithm 4.1, which treats uncolored
//! neighbours as if they could complete a path later. On the benchmark suite it never needs
//! more colors than ColPack's star coloring (Gebremedhin, Tarafdar, Manne, Pothen, 2007) under
//! its best ordering, and once one fewer (`nanprop-bench --hessian`). The vertex orders are
//! the degree-based ones of [`super::Order`] on the adjacency graph (obtained by handing the
//! column machinery the edge-vertex incidence pattern, whose columns share a row exactly when
//! they are adjacent); [`super::Strategy::Auto`] and [`super::Strategy::BestOf`] both try every
//! order and keep the fewest colors (a Hessian is colored once, and each order is one pass).
//! Saturation is not offered for star coloring. The column coloring of the pattern with its
//! diagonal is a distance-2 coloring of the graph, hence a star coloring too: it is kept when it
//! needs fewer colors, so the count never exceeds the column coloring's.
//!
//! # Cost
//!
//! The rules ask about the colors around each colored neighbour w of v. They are kept per
//! vertex (the distinct colors of its colored neighbours, and the colors that would close a
//! path through it), updated as each vertex is colored by one pass over its neighbours with a
//! hash map of (vertex, color) counts. A pass is then O(sum over v of degree(v) x colors) time
//! and O(nnz + n) memory: a hub adjacent to every vertex (a global variable) costs no more than
//! its own degree. Measured (`nanprop-bench --hessian`, n = 10^4, two runs): a grid with one global
//! variable 22-56 ms for all six orders (ColPack 23-41 ms), an arrowhead 2-4 ms (ColPack 5-7 ms).

use super::forbidden::first_free as first_free_color;
use super::graph::Graph;
use super::{Coloring, ColoringOptions, Order, Strategy};
use crate::error::{filled, reserve, Error, Result};
use crate::pattern::Pattern;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Star-colors the columns of the square pattern `p`, symmetrized (A + A^T); the diagonal is
/// ignored (it is always recoverable). See the module docs.
///
/// # Errors
/// [`crate::ErrorKind::InvalidArgument`] for a pattern that is not square, or a saturation
/// order; [`crate::ErrorKind::OutOfMemory`].
pub fn star(p: &Pattern, options: &ColoringOptions) -> Result<Coloring> {
    star_of_symmetric(&p.symmetrized()?, options)
}

/// [`star`] of a pattern that is already symmetric (A + A^T), as the Hessian plan holds it.
pub(crate) fn star_of_symmetric(s: &Pattern, options: &ColoringOptions) -> Result<Coloring> {
    let n = s.cols();
    let adj = Adjacency { s };
    let edges = adj.edges();
    let orders: Vec<Order> =
        match options.strategy {
            Strategy::Auto | Strategy::BestOf => vec![
                Order::SmallestLast,
                Order::IncidenceDegree,
                Order::LargestFirst,
                Order::DynamicLargestFirst,
                Order::Natural,
                Order::Random(options.seed),
            ],
            Strategy::Only(Order::Saturation) => return Err(Error::invalid(
                "saturation is not an order for star coloring (choose a degree order, natural, \
                 random, auto or best)",
            )),
            Strategy::Only(o) => vec![o],
        };
    if edges == 0 {
        // A diagonal pattern: one color for all.
        return Ok(Coloring {
            colors: filled(0, n, "colors")?,
            num_colors: usize::from(n > 0),
            order: Order::Natural,
        });
    }
    // Any edge needs two colors: the lower bound the orders stop at.
    let lower = 2;
    let incidence = adj.incidence(edges)?;
    let mut g = Graph::new(&incidence)?;
    let mut best: Option<Coloring> = None;
    for order in orders {
        let seq = g.order(order)?;
        let (colors, num_colors) = adj.greedy_star(&seq)?;
        if best.as_ref().is_none_or(|b| num_colors < b.num_colors) {
            best = Some(Coloring {
                colors,
                num_colors,
                order,
            });
        }
        if best.as_ref().is_some_and(|b| b.num_colors <= lower) {
            break;
        }
    }
    let mut best = best.expect("at least one order");
    // A column coloring of the pattern with its diagonal is a distance-2 coloring of the
    // graph, hence a star coloring: keep it when the greedy star passes did worse, so the
    // count never exceeds the column coloring's.
    // It needs at least the longest row's length (with the diagonal): only a star count above
    // that leaves it room.
    if best.num_colors > lower && best.num_colors > s.max_row_nnz() {
        let column = super::color(&with_diagonal(s)?, options)?;
        if column.num_colors < best.num_colors {
            best = column;
        }
    }
    Ok(best)
}

/// The square pattern `s` with every diagonal entry present.
fn with_diagonal(s: &Pattern) -> Result<Pattern> {
    let n = s.cols();
    let ptr = crate::error::collect(0..=n, "row pointers")?;
    let cols = crate::error::collect(0..n, "diagonal")?;
    s.union(&Pattern::from_csr(n, n, &ptr, &cols)?)
}

/// Checks that `colors` allow direct symmetric recovery on the symmetrized `p`: adjacent
/// columns differ, and for every off-diagonal entry (i, j), row i holds j's color only at j, or
/// row j holds i's color only at i. Returns the first entry that fails. O(nnz + colors).
pub fn check_star(p: &Pattern, colors: &[u32]) -> Result<std::result::Result<(), (usize, usize)>> {
    let s = p.symmetrized()?;
    let unique = RowColorCounts::new(&s, colors)?;
    for i in 0..s.rows() {
        for &j in s.row(i) {
            let j = j as usize;
            if i == j {
                continue;
            }
            if colors[i] == colors[j]
                || !(unique.is_unique(i, colors[j]) || unique.is_unique(j, colors[i]))
            {
                return Ok(Err((i, j)));
            }
        }
    }
    Ok(Ok(()))
}

/// For each row of a pattern, how many of its columns hold each color (a hash map over the
/// pairs that occur: O(nnz)).
pub(crate) struct RowColorCounts {
    counts: PairMap,
}

impl RowColorCounts {
    pub(crate) fn new(p: &Pattern, colors: &[u32]) -> Result<Self> {
        let mut counts = PairMap::default();
        counts
            .try_reserve(p.nnz())
            .map_err(|_| Error::out_of_memory("row color counts", p.nnz()))?;
        for i in 0..p.rows() {
            for &j in p.row(i) {
                *counts.entry(key(i, colors[j as usize])).or_insert(0) += 1;
            }
        }
        Ok(RowColorCounts { counts })
    }

    /// Whether row `i` holds color `c` in exactly one column.
    pub(crate) fn is_unique(&self, i: usize, c: u32) -> bool {
        self.counts.get(&key(i, c)) == Some(&1)
    }
}

/// The off-diagonal adjacency of a symmetric pattern.
struct Adjacency<'a> {
    s: &'a Pattern,
}

impl Adjacency<'_> {
    fn neighbours(&self, v: usize) -> impl Iterator<Item = usize> + '_ {
        self.s
            .row(v)
            .iter()
            .map(|&w| w as usize)
            .filter(move |&w| w != v)
    }

    /// Undirected edges.
    fn edges(&self) -> usize {
        let diagonal = (0..self.s.rows())
            .filter(|&i| self.s.contains(i, i))
            .count();
        (self.s.nnz() - diagonal) / 2
    }

    /// The edge-vertex incidence pattern: a row {i, j} per edge i < j, so that two columns
    /// share a row exactly when they are adjacent (the column orders then work on this graph).
    fn incidence(&self, e: usize) -> Result<Pattern> {
        let n = self.s.cols();
        let mut row_ptr = Vec::new();
        reserve(&mut row_ptr, e + 1, "incidence rows")?;
        let mut cols = Vec::new();
        reserve(&mut cols, 2 * e, "incidence columns")?;
        row_ptr.push(0);
        for i in 0..n {
            for j in self.neighbours(i).filter(|&j| j > i) {
                cols.push(i);
                cols.push(j);
                row_ptr.push(cols.len());
            }
        }
        Pattern::from_csr(e, n, &row_ptr, &cols)
    }

    /// One greedy star-coloring pass in `order` (module docs): the colors and their count.
    ///
    /// The two rules, per colored neighbour w of the vertex v being colored, ask about the
    /// colors around w; they are kept per vertex so that a hub's neighbourhood is never
    /// scanned again: `around[w]`, the distinct colors of w's colored neighbours, and
    /// `closing[w]`, the colors c such that some neighbour x of w with color c has another
    /// colored neighbour of w's color (v taking c would close the path v - w - x - y). Both
    /// only grow, and are updated as each vertex is colored, by one pass over its neighbours.
    fn greedy_star(&self, order: &[u32]) -> Result<(Vec<u32>, usize)> {
        let n = self.s.cols();
        const NONE: u32 = u32::MAX;
        let mut color = filled(NONE, n, "colors")?;
        let mut forbidden: Vec<u32> = Vec::new();
        // For v being colored: which neighbour colors were met once (stamp v) or more.
        let mut met = Vec::<u32>::new();
        let mut repeated = Vec::<u32>::new();
        // (x, c) -> colored neighbours of x with color c, and the first of them.
        let mut count: HashMap<u64, (u32, u32), BuildHasherDefault<MulHasher>> = HashMap::default();
        count
            .try_reserve(self.s.nnz())
            .map_err(|_| Error::out_of_memory("star coloring counts", self.s.nnz()))?;
        let mut closing_set = PairMap::default();
        let mut around: Vec<Vec<u32>> = Vec::new();
        let mut closing: Vec<Vec<u32>> = Vec::new();
        reserve(&mut around, n, "colors around")?;
        reserve(&mut closing, n, "closing colors")?;
        around.resize_with(n, Vec::new);
        closing.resize_with(n, Vec::new);
        let mut num_colors = 0usize;
        let mut mark = |closing: &mut Vec<Vec<u32>>, w: usize, c: u32| {
            if closing_set.insert(key(w, c), 1).is_none() {
                closing[w].push(c);
            }
        };
        for &v in order {
            let v = v as usize;
            let stamp = v as u32;
            for w in self.neighbours(v) {
                let cw = color[w];
                if cw == NONE {
                    continue;
                }
                forbidden[cw as usize] = stamp;
                if met[cw as usize] == stamp {
                    repeated[cw as usize] = stamp;
                }
                met[cw as usize] = stamp;
            }
            for w in self.neighbours(v) {
                let cw = color[w];
                if cw == NONE {
                    continue;
                }
                // Inside: u - v - w - x with u, w of one color: every color around w.
                // End: v - w - x - y: the colors that close a path through w.
                let list = if repeated[cw as usize] == stamp {
                    &around[w]
                } else {
                    &closing[w]
                };
                for &c in list {
                    forbidden[c as usize] = stamp;
                }
            }
            let c = first_free_color(&mut forbidden, stamp)?;
            if c == met.len() {
                crate::error::push(&mut met, NONE, "colors")?;
                crate::error::push(&mut repeated, NONE, "colors")?;
            }
            let c = c as u32;
            color[v] = c;
            num_colors = num_colors.max(c as usize + 1);
            for x in self.neighbours(v) {
                let e = count.entry(key(x, c)).or_insert((0, v as u32));
                e.0 += 1;
                let (k, first) = *e;
                if k == 1 {
                    around[x].push(c);
                }
                let cx = color[x];
                if cx != NONE && k >= 2 {
                    // x now has two neighbours of color c: v and `first` close paths through x.
                    mark(&mut closing, v, cx);
                    if k == 2 {
                        mark(&mut closing, first as usize, cx);
                    }
                }
                // v itself, as the x of a colored neighbour w with a second neighbour of w's
                // color.
                if cx != NONE && count.get(&key(v, cx)).is_some_and(|e| e.0 >= 2) {
                    mark(&mut closing, x, c);
                }
            }
        }
        Ok((color, num_colors))
    }
}

/// A (vertex, color) key.
fn key(v: usize, c: u32) -> u64 {
    ((v as u64) << 32) | c as u64
}

/// A map keyed by (vertex, color) pairs, hashed by one multiplication (the keys are not
/// adversarial: they come from the pattern).
type PairMap = HashMap<u64, u32, BuildHasherDefault<MulHasher>>;

#[derive(Default)]
struct MulHasher(u64);

impl Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = (k ^ (k >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(n: usize, edges: &[(usize, usize)], diagonal: bool) -> Pattern {
        let mut rows = vec![Vec::new(); n];
        for &(i, j) in edges {
            rows[i].push(j);
            rows[j].push(i);
        }
        if diagonal {
            (0..n).for_each(|i| rows[i].push(i));
        }
        let mut ptr = vec![0];
        let mut cols = Vec::new();
        for r in &mut rows {
            r.sort_unstable();
            r.dedup();
            cols.extend_from_slice(r);
            ptr.push(cols.len());
        }
        Pattern::from_csr(n, n, &ptr, &cols).unwrap()
    }

    /// Brute force: no path on four vertices with two colors (a - b - c - d, distinct, colors
    /// alternating), and adjacent vertices differ.
    fn is_star(p: &Pattern, colors: &[u32]) -> bool {
        let n = p.rows();
        let adj = |v: usize| {
            p.row(v)
                .iter()
                .map(|&w| w as usize)
                .filter(move |&w| w != v)
        };
        for a in 0..n {
            for b in adj(a) {
                if colors[a] == colors[b] {
                    return false;
                }
                for c in adj(b).filter(|&c| c != a && colors[c] == colors[a]) {
                    for d in adj(c) {
                        if d != b && d != a && colors[d] == colors[b] {
                            return false;
                        }
                    }
                }
            }
        }
        true
    }

    fn grid(k: usize, globals: usize) -> Pattern {
        let n = k * k + globals;
        let mut e = Vec::new();
        for r in 0..k {
            for c in 0..k {
                let v = r * k + c;
                if c + 1 < k {
                    e.push((v, v + 1));
                }
                if r + 1 < k {
                    e.push((v, v + k));
                }
                for g in 0..globals {
                    e.push((v, k * k + g));
                }
            }
        }
        sym(n, &e, true)
    }

    #[test]
    fn every_order_gives_a_star_coloring_on_random_graphs() {
        let mut rng = crate::rng::Rng::new(11);
        for trial in 0..300 {
            let n = 5 + rng.below(40);
            let m = rng.below(3 * n);
            let e: Vec<(usize, usize)> = (0..m)
                .map(|_| (rng.below(n), rng.below(n)))
                .filter(|(a, b)| a != b)
                .collect();
            let p = sym(n, &e, trial % 2 == 0);
            for order in Order::all(trial as u64)
                .into_iter()
                .filter(|&o| o != Order::Saturation)
            {
                let o = ColoringOptions {
                    strategy: Strategy::Only(order),
                    ..ColoringOptions::default()
                };
                let c = star(&p, &o).unwrap();
                assert!(is_star(&p, &c.colors), "{order:?} on trial {trial}");
                assert_eq!(check_star(&p, &c.colors).unwrap(), Ok(()));
            }
            let best = star(&p, &ColoringOptions::default()).unwrap();
            assert!(is_star(&p, &best.colors));
            let column = super::super::color(
                &with_diagonal(&p.symmetrized().unwrap()).unwrap(),
                &ColoringOptions {
                    strategy: Strategy::BestOf,
                    ..ColoringOptions::default()
                },
            )
            .unwrap();
            assert!(best.num_colors <= column.num_colors, "trial {trial}");
        }
    }

    #[test]
    fn check_star_finds_a_two_colored_path() {
        // Path 0 - 1 - 2 - 3 colored a b a b: entry (1, 2) is readable from neither side.
        let p = sym(4, &[(0, 1), (1, 2), (2, 3)], true);
        assert_eq!(check_star(&p, &[0, 1, 0, 1]).unwrap(), Err((1, 2)));
        assert!(!is_star(&p, &[0, 1, 0, 1]));
        assert_eq!(check_star(&p, &[0, 1, 0, 2]).unwrap(), Ok(()));
        assert_eq!(check_star(&p, &[0, 0, 1, 2]).unwrap(), Err((0, 1)));
    }

    #[test]
    fn a_grid_with_global_variables_needs_few_colors_where_columns_need_n() {
        for globals in [0, 1, 2] {
            let p = grid(20, globals);
            let s = star(&p, &ColoringOptions::default()).unwrap();
            let c = super::super::color(&p, &ColoringOptions::default()).unwrap();
            assert!(is_star(&p, &s.colors));
            assert!(s.num_colors <= 6 + globals, "{globals}: {}", s.num_colors);
            if globals > 0 {
                assert_eq!(c.num_colors, p.cols(), "a dense row forces n column colors");
            }
        }
        // A path (tridiagonal) needs 3 star colors, as a column coloring does.
        let e: Vec<_> = (0..49).map(|i| (i, i + 1)).collect();
        assert_eq!(
            star(&sym(50, &e, true), &ColoringOptions::default())
                .unwrap()
                .num_colors,
            3
        );
        // An arrowhead (a star graph) needs 2.
        let e: Vec<_> = (1..50).map(|i| (0, i)).collect();
        assert_eq!(
            star(&sym(50, &e, true), &ColoringOptions::default())
                .unwrap()
                .num_colors,
            2
        );
    }

    #[test]
    fn a_diagonal_pattern_takes_one_color() {
        let p = sym(7, &[], true);
        let c = star(&p, &ColoringOptions::default()).unwrap();
        assert_eq!((c.num_colors, c.colors), (1, vec![0; 7]));
    }

    #[test]
    fn a_rectangular_pattern_is_refused() {
        let p = Pattern::from_csr(2, 3, &[0, 1, 2], &[0, 2]).unwrap();
        let e = star(&p, &ColoringOptions::default()).unwrap_err();
        assert!(e.to_string().contains("square"), "{e}");
    }
}
