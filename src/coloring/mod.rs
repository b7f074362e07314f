//! Column coloring for Jacobian compression.
//!
//! # Problem
//!
//! Columns j and k may be perturbed in the same finite-difference evaluation when no row holds
//! both: a partial distance-2 coloring of the bipartite graph rows x columns (equivalently a
//! distance-1 coloring of the column intersection graph, which is never built here). Any
//! coloring needs at least as many colors as the longest row ([`lower_bound`]).
//!
//! # Algorithm
//!
//! Greedy coloring in a vertex order: each column takes the smallest color not used by a column
//! sharing a row with it. The orders are the standard ones (TOMS 618, ColPack,
//! SparseMatrixColorings.jl): natural, largest-first, smallest-last, incidence-degree,
//! dynamic-largest-first and random, all on the distance-2 degree (the number of distinct
//! columns sharing a row), plus saturation (DSATUR, Brelaz), which picks the next column by
//! the number of distinct colors already around it and often needs fewer colors (on a FEM-like
//! mesh it reaches the lower bound where every static order needs 20% more).
//! A pattern of a structured grid numbered in order (a band, a stencil on a 2-D or 3-D grid:
//! the Jacobians of finite-difference codes) has a coloring at the lower bound given by a
//! formula, as PETSc colors a structured grid; [`Strategy::Auto`] and [`Strategy::BestOf`] try
//! it first (`lattice.rs`: O(n + nnz), no column graph; a pattern without such structure fails
//! on a few rows) and report it as [`Order::Lattice`]. Otherwise
//! [`Strategy::Auto`] (the default) costs a small multiple of one greedy pass: saturation
//! alone, which on the benchmark suite never needs more colors than ColPack's best order and
//! often fewer; when one row holds at least half the coloring work (a partially dense row),
//! has at least 64 entries (long rows decide the count), or every row's columns lie close
//! together (a band, diagonal blocks), the natural order first, which usually reaches the
//! lower bound there, so the costlier order never runs. [`Strategy::BestOf`] runs every
//! order, keeps the fewest colors and stops early at the lower bound (about 15 greedy passes:
//! for a pattern colored once and used for many Jacobians). Either may be followed by
//! *iterated greedy* recoloring (Culberson, [`ColoringOptions::recolor_iterations`], off by
//! default), which recolors the columns class by class, never uses more colors and sometimes
//! fewer, one greedy pass a round.
//!
//! Ties in the degree-based orders go to the column that entered its degree bucket last (the
//! buckets are stacks), as in ColPack; on regular meshes, where most degrees tie, this decides
//! the count (smallest-last colors the 5-point stencil with the optimal 5 this way, with 7
//! when ties go to the lowest index).
//!
//! # Cost
//!
//! Every order and every greedy pass visits the distance-2 neighbourhoods once: O(sum over rows of
//! (row length)^2) time, O(nnz + n + m) memory (the transposed structure unless the pattern is
//! symmetric, bucket queues for the dynamic orders with an 8-byte record per column, the degrees
//! counted once, stamp arrays for the forbidden colors and a buffer of one walk's neighbours;
//! saturation keeps a 16-byte record and a bit per column, a buffer as long as the longest walk, a copy of
//! the column lists without repeated rows when there are some, and for the columns that see more
//! than 64 colors a bit per color they see). No order costs more than that: saturation's question
//! "is this color new to this column" is O(1) (`seen.rs`). Measured (`nanprop-bench --coloring`,
//! medians, in the README's tables): the default 0.1-0.3x the natural order's time where a grid's
//! formula fits (bands, blocks, stencils, the FEM-like mesh; the 2-D stencil at 10^6 5.4 ms against
//! 28.8), 1.0-2.8x on the other patterns (random 5 per row at n = 10^6 2.1x and 2.5x in the
//! eleventh session's two runs, 1.11 and 1.01 s against 0.63 s; 2.2-3.0x in the runs before),
//! where every order plus recoloring takes up to 41x; saturation's walk is
//! laid out for memory latency (`saturation.rs`), and on large patterns whose rows reach far apart
//! the other orders' walks and the greedy passes ask for each level first (`graph.rs`).
//!
//! # Result
//!
//! A [`Coloring`]: 0-based colors per column, the count, and the order that produced it. Checking
//! a coloring is [`check`]; using it is [`crate::jacobian`].

//!
//! # Files
//!
//! The problem and its options are here; `graph.rs` holds the algorithm (orders, greedy,
//! recoloring) over bucket queues (`buckets.rs`) and the forbidden colors' stamps
//! (`forbidden.rs`), starting each walk from the rows of a column (`columns.rs`: the
//! transposed structure, or the pattern's own rows when it is structurally symmetric);
//! `saturation.rs` the saturation order, tuned for memory latency, with `seen.rs` for its
//! colors from 64 up; `result.rs` the [`Coloring`]. `lattice.rs` colors the patterns of
//! structured grids numbered in order by formula, at the lower bound (the default and best-of
//! try it before any order).

mod buckets;
mod columns;
mod forbidden;
mod graph;
pub(crate) mod lattice;
mod result;
mod saturation;
mod seen;
mod star;

use lattice::lattice;
pub use result::Coloring;
pub(crate) use star::star_of_symmetric;
pub(crate) use star::RowColorCounts;
pub use star::{check_star, star};

use crate::pattern::Pattern;
use graph::Graph;

/// A vertex order for greedy coloring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Columns 0, 1, ..., n - 1.
    Natural,
    /// Decreasing distance-2 degree.
    LargestFirst,
    /// Repeatedly set aside a column of smallest degree among those left; color in reverse.
    SmallestLast,
    /// Repeatedly take the column with the most already-ordered neighbours.
    IncidenceDegree,
    /// Repeatedly take the column with the largest degree among those not yet ordered.
    DynamicLargestFirst,
    /// A random permutation from the seed.
    Random(u64),
    /// Saturation (DSATUR, Brelaz): color next the column whose neighbours already hold the
    /// most distinct colors; ties to the larger distance-2 degree. Orders and colors together.
    Saturation,
    /// Not a vertex order: a structured grid's coloring formula at the lower bound (a band,
    /// a stencil on a grid numbered in order: `lattice.rs`), which [`Strategy::Auto`] and
    /// [`Strategy::BestOf`] try before any order and report when it fits. Asked for alone, a
    /// pattern no formula fits gets the natural order (and so does a star coloring). Not in
    /// [`Order::all`].
    Lattice,
}

impl Order {
    /// Every order, the random one with `seed`.
    pub fn all(seed: u64) -> [Order; 7] {
        // Cheap static orders first: [`color`] stops at the lower bound, so saturation, the
        // costliest, runs only when they did not reach it.
        [
            Order::SmallestLast,
            Order::IncidenceDegree,
            Order::LargestFirst,
            Order::DynamicLargestFirst,
            Order::Natural,
            Order::Random(seed),
            Order::Saturation,
        ]
    }

    /// A short name: "natural", "largest-first", ...
    pub fn name(self) -> &'static str {
        match self {
            Order::Natural => "natural",
            Order::LargestFirst => "largest-first",
            Order::SmallestLast => "smallest-last",
            Order::IncidenceDegree => "incidence-degree",
            Order::DynamicLargestFirst => "dynamic-largest-first",
            Order::Random(_) => "random",
            Order::Saturation => "saturation",
            Order::Lattice => "lattice",
        }
    }
}

/// How to color.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// A structured grid's formula when one fits ([`Order::Lattice`]); otherwise saturation,
    /// preceded by the natural order when one row holds half the coloring work, has at least
    /// 64 entries or every row's columns lie close together; stops at the lower bound (see the
    /// module docs). The default.
    Auto,
    /// A structured grid's formula when one fits; otherwise every order, keeping the fewest
    /// colors; stops at the lower bound.
    BestOf,
    /// One order.
    Only(Order),
}

/// Options of [`color`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColoringOptions {
    /// Which orders.
    pub strategy: Strategy,
    /// Seed of the random order (and of the random class orders of recoloring).
    pub seed: u64,
    /// Rounds of iterated greedy recoloring after the best order (0, the default: none; each
    /// round costs one greedy pass).
    pub recolor_iterations: usize,
}

impl Default for ColoringOptions {
    fn default() -> Self {
        ColoringOptions {
            strategy: Strategy::Auto,
            seed: 0,
            recolor_iterations: 0,
        }
    }
}

/// The longest row: no column coloring has fewer colors.
pub fn lower_bound(p: &Pattern) -> usize {
    p.max_row_nnz()
}

/// Rows at least this long make the natural order go first: their colors decide the count,
/// and the natural order usually reaches the longest (the LP-like pattern of the benchmark,
/// 179 per row: every order at the lower bound).
const LONG_ROW: usize = 64;

/// Whether the natural order goes first: one row holds at least half the coloring work (the
/// sum over rows of the square of their lengths: a partially dense row), the longest row has
/// at least [`LONG_ROW`] entries, or every row is *compact* (its columns span less than twice
/// its length: a band, blocks on the diagonal), where the natural order colors a band's
/// columns in turn and reaches the longest row. The natural order usually reaches the longest
/// row's length there, and then the costlier saturation never runs (tridiagonal 10^6: 42 ms
/// of saturation for the 3 colors one natural pass finds).
fn natural_first(p: &Pattern) -> bool {
    let longest = p.max_row_nnz() as u128;
    if longest >= LONG_ROW as u128 {
        return true;
    }
    let compact = (0..p.rows()).all(|i| match p.row(i) {
        [] => true,
        row => ((row[row.len() - 1] - row[0]) as usize) < 2 * row.len(),
    });
    if compact {
        return true;
    }
    let work: u128 = (0..p.rows()).map(|i| (p.row(i).len() as u128).pow(2)).sum();
    2 * longest * longest >= work
}

/// Checks that no two columns of one color share a row, and that every color is below
/// `num_colors`. Returns the first offending row and its two columns, if any.
pub fn check(p: &Pattern, colors: &[u32], num_colors: usize) -> Result<(), (usize, u32, u32)> {
    assert_eq!(colors.len(), p.cols(), "one color per column");
    // For each color, the last row that used it and the column that did.
    let mut row_of = vec![usize::MAX; num_colors];
    let mut col_of = vec![0u32; num_colors];
    for i in 0..p.rows() {
        for &j in p.row(i) {
            let c = colors[j as usize] as usize;
            if c >= num_colors {
                return Err((i, j, j));
            }
            if row_of[c] == i {
                return Err((i, col_of[c], j));
            }
            (row_of[c], col_of[c]) = (i, j);
        }
    }
    Ok(())
}

/// Colors the columns of `p` (see the module docs).
///
/// # Errors
/// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the column graph's arrays
/// (O(nnz + n)) do not fit.
pub fn color(p: &Pattern, options: &ColoringOptions) -> crate::error::Result<Coloring> {
    let n = p.cols();
    let longest = lower_bound(p);
    let target = longest.max(usize::from(n > 0));
    if target >= n {
        // A row holds every column: each column needs its own color, and building the column
        // graph would cost the square of that row's length (minutes at n = 2500, the dense
        // rows a budget leaves unresolved).
        return Ok(Coloring {
            colors: crate::error::collect(0..n as u32, "colors")?,
            num_colors: n,
            order: Order::Natural,
        });
    }
    // A structured grid's pattern: its formula, at the lower bound, before any order (O(n +
    // nnz), no column graph; a pattern without a grid's structure fails on a few rows).
    let formula_first = matches!(
        options.strategy,
        Strategy::Auto | Strategy::BestOf | Strategy::Only(Order::Lattice)
    );
    if formula_first {
        if let Some(colors) = lattice(p, longest)? {
            return Ok(Coloring {
                colors,
                num_colors: target,
                order: Order::Lattice,
            });
        }
    }
    // The column graph (the rows of each column) is made by the first order that walks by
    // rows: saturation on large far-reaching patterns walks spans of its own.
    let mut graph: Option<Graph> = None;
    let orders: Vec<Order> = match options.strategy {
        Strategy::BestOf => Order::all(options.seed).to_vec(),
        Strategy::Only(Order::Lattice) => vec![Order::Natural],
        Strategy::Only(o) => vec![o],
        Strategy::Auto if natural_first(p) => vec![Order::Natural, Order::Saturation],
        Strategy::Auto => vec![Order::Saturation],
    };
    let mut best: Option<Coloring> = None;
    for order in orders {
        let (colors, num_colors) = if order == Order::Saturation {
            let t = graph.as_ref().map(Graph::columns);
            let (_, colors, k) = saturation::saturation(p, t, false)?;
            (colors, k)
        } else {
            let g = made(&mut graph, p)?;
            let seq = g.order(order)?;
            g.greedy(&seq)?
        };
        if best.as_ref().is_none_or(|b| num_colors < b.num_colors) {
            best = Some(Coloring {
                colors,
                num_colors,
                order,
            });
        }
        if best.as_ref().is_some_and(|b| b.num_colors <= target) {
            break;
        }
    }
    let best = best.expect("at least one order");
    let (colors, num_colors) = match options.recolor_iterations {
        0 => (best.colors, best.num_colors),
        rounds => made(&mut graph, p)?.recolor(
            best.colors,
            best.num_colors,
            rounds,
            options.seed,
            target,
        )?,
    };
    Ok(Coloring {
        colors,
        num_colors,
        order: best.order,
    })
}

/// The column graph of `p` in `graph`, made on the first call.
fn made<'g, 'p>(
    graph: &'g mut Option<Graph<'p>>,
    p: &'p Pattern,
) -> crate::error::Result<&'g mut Graph<'p>> {
    Ok(match graph.take() {
        Some(g) => graph.insert(g),
        None => graph.insert(Graph::new(p)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing as synthetic;

    fn all_strategies() -> Vec<ColoringOptions> {
        let mut v: Vec<ColoringOptions> = Order::all(3)
            .into_iter()
            .map(|o| ColoringOptions {
                strategy: Strategy::Only(o),
                recolor_iterations: 0,
                seed: 3,
            })
            .collect();
        v.push(ColoringOptions::default());
        v.push(ColoringOptions {
            strategy: Strategy::BestOf,
            seed: 3,
            recolor_iterations: 8,
        });
        v
    }

    #[test]
    fn auto_takes_a_grid_formula_saturation_or_the_natural_order_before_a_dense_row() {
        let natural = ColoringOptions {
            strategy: Strategy::Only(Order::Natural),
            ..Default::default()
        };
        let only = |o| ColoringOptions {
            strategy: Strategy::Only(o),
            ..Default::default()
        };
        // A 2-D stencil numbered row by row: its formula, at the lower bound 5 (auto and
        // best-of), where the natural order needs 7.
        let grid = synthetic::stencil_2d(30);
        for options in [ColoringOptions::default(), only(Order::Lattice)] {
            let c = color(&grid, &options).unwrap();
            assert_eq!((c.num_colors, c.order), (5, Order::Lattice));
            assert!(check(&grid, &c.colors, 5).is_ok());
        }
        let best = ColoringOptions {
            strategy: Strategy::BestOf,
            ..Default::default()
        };
        assert_eq!(color(&grid, &best).unwrap().order, Order::Lattice);
        assert_eq!(color(&grid, &natural).unwrap().num_colors, 7);
        // The same grid numbered at random: no formula; saturation reaches 5.
        let mut place: Vec<usize> = (0..900).collect();
        let mut rng = crate::rng::Rng::new(4);
        for k in (1..900).rev() {
            place.swap(k, rng.below(k + 1));
        }
        let shuffled = synthetic::from_rows(900, 900, |i, r| {
            r.extend(grid.row(i).iter().map(|&j| place[j as usize]))
        });
        let c = color(&shuffled, &ColoringOptions::default()).unwrap();
        assert_eq!(c.order, Order::Saturation);
        assert!(c.num_colors < color(&shuffled, &natural).unwrap().num_colors);
        // Asked for alone where no formula fits: the natural order's colors.
        let alone = color(&shuffled, &only(Order::Lattice)).unwrap();
        assert_eq!(alone.colors, color(&shuffled, &natural).unwrap().colors);
        assert_eq!(alone.order, Order::Natural);
        // A row of 400 of 4000 columns beside sparse rows: the natural order first, and it
        // reaches the lower bound, so saturation does not run.
        let sparse = synthetic::random_sparse(4000, 4000, 4, 5);
        let p = synthetic::from_rows(4000, 4000, |i, r| match i {
            0 => r.extend((0..4000).step_by(10)),
            _ => r.extend(sparse.row(i).iter().map(|&j| j as usize)),
        });
        let c = color(&p, &ColoringOptions::default()).unwrap();
        assert_eq!((c.num_colors, c.order), (400, Order::Natural));
        assert!(check(&p, &c.colors, c.num_colors).is_ok());
        // Long rows everywhere (blocks of 70, none dominating): the natural order first too,
        // at the lower bound.
        let blocks = synthetic::block_diagonal(2100, 70);
        let c = color(&blocks, &ColoringOptions::default()).unwrap();
        assert_eq!((c.num_colors, c.order), (70, Order::Natural));
        // A band, every seventh row a column short: the formula j mod 5 (any row within five
        // consecutive columns), at the lower bound.
        let band = synthetic::from_rows(3000, 3000, |i, r| {
            r.extend(i..(i + 5 - usize::from(i % 7 == 3)).min(3000))
        });
        let c = color(&band, &ColoringOptions::default()).unwrap();
        assert_eq!((c.num_colors, c.order), (5, Order::Lattice));
        assert_eq!(c.colors[..7], [0, 1, 2, 3, 4, 0, 1]);
    }

    #[test]
    fn every_order_gives_a_valid_coloring() {
        let patterns = [
            synthetic::banded(200, 1),
            synthetic::banded(150, 5),
            synthetic::block_diagonal(97, 10),
            synthetic::stencil_2d(15),
            synthetic::random_sparse(120, 200, 4, 9),
            synthetic::random_sparse(300, 80, 7, 10),
            synthetic::arrowhead(60),
            synthetic::dense(7, 9),
            synthetic::from_rows(5, 8, |_, _| {}),
        ];
        for p in &patterns {
            for o in all_strategies() {
                let c = color(p, &o).unwrap();
                assert_eq!(check(p, &c.colors, c.num_colors), Ok(()), "{o:?}");
                assert!(c.num_colors >= lower_bound(p));
                assert!(c.colors.iter().all(|&x| (x as usize) < c.num_colors));
                let used: std::collections::HashSet<u32> = c.colors.iter().copied().collect();
                assert_eq!(
                    used.len(),
                    c.num_colors.min(p.cols()),
                    "{o:?}: colors 0..k all used"
                );
            }
        }
    }

    #[test]
    fn known_optimal_counts() {
        let opts = ColoringOptions::default();
        assert_eq!(
            color(&synthetic::banded(1000, 1), &opts)
                .unwrap()
                .num_colors,
            3
        );
        assert_eq!(
            color(&synthetic::banded(1000, 5), &opts)
                .unwrap()
                .num_colors,
            11
        );
        assert_eq!(
            color(&synthetic::block_diagonal(1000, 10), &opts)
                .unwrap()
                .num_colors,
            10
        );
        assert_eq!(
            color(&synthetic::dense(4, 30), &opts).unwrap().num_colors,
            30
        );
        // Arrowhead: the dense row forces n colors.
        assert_eq!(
            color(&synthetic::arrowhead(50), &opts).unwrap().num_colors,
            50
        );
    }

    #[test]
    fn a_row_holding_every_column_gives_one_color_per_column_without_the_graph() {
        // A dense pattern (what a budget leaves unresolved): the column graph would have
        // n (n - 1) / 2 edges; the coloring is the identity, optimal, and valid.
        let n = 3_000;
        let dense = synthetic::banded(n, n);
        for options in all_strategies() {
            let c = color(&dense, &options).unwrap();
            assert_eq!(c.num_colors, n);
            assert_eq!(c.order, Order::Natural, "the shortcut, not an order");
            assert!(check(&dense, &c.colors, c.num_colors).is_ok());
        }
    }

    #[test]
    fn check_finds_conflicts() {
        let p = synthetic::banded(5, 1);
        assert!(check(&p, &[0, 1, 2, 0, 1], 3).is_ok());
        assert_eq!(check(&p, &[0, 1, 0, 2, 1], 3), Err((1, 0, 2)));
        assert!(check(&p, &[0, 1, 2, 0, 5], 3).is_err());
    }

    #[test]
    fn recoloring_never_adds_colors_and_sometimes_removes_some() {
        let mut gained = 0;
        for seed in 0..20 {
            let p = synthetic::random_sparse(200, 150, 5, seed);
            let plain = color(
                &p,
                &ColoringOptions {
                    strategy: Strategy::Only(Order::Natural),
                    recolor_iterations: 0,
                    seed,
                },
            )
            .unwrap();
            let iter = color(
                &p,
                &ColoringOptions {
                    strategy: Strategy::Only(Order::Natural),
                    recolor_iterations: 30,
                    seed,
                },
            )
            .unwrap();
            assert!(iter.num_colors <= plain.num_colors);
            assert!(check(&p, &iter.colors, iter.num_colors).is_ok());
            gained += plain.num_colors - iter.num_colors;
        }
        assert!(
            gained > 0,
            "iterated greedy should improve some natural-order colorings"
        );
    }

    #[test]
    fn groups_list_each_column_once() {
        let p = synthetic::stencil_2d(6);
        let c = color(&p, &ColoringOptions::default()).unwrap();
        let (ptr, cols) = c.groups().unwrap();
        assert_eq!(ptr.len(), c.num_colors + 1);
        let mut all = cols.clone();
        all.sort_unstable();
        assert_eq!(all, (0..36).collect::<Vec<u32>>());
        for g in 0..c.num_colors {
            assert!(cols[ptr[g]..ptr[g + 1]]
                .iter()
                .all(|&j| c.colors[j as usize] == g as u32));
        }
    }
}
