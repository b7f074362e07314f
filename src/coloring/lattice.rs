//! Colors by formula for the patterns of structured grids numbered in natural order.
//!
//! # Problem
//!
//! The column coloring of the module above (no row holds two columns of one color), at its
//! lower bound, the longest row's length `k`, when a formula gives it. The Jacobian of a
//! finite-difference code on a structured grid numbered point by point (a band; a stencil on
//! a 2-D grid numbered row by row, MINPACK-2's problems and the Bratu residual; on a 3-D grid)
//! has such a coloring, as PETSc colors a structured grid (`DMDA`) from its stencil: write
//! column `j` in the grid's mixed radix, `j = s + N1 (r + (N2 / N1) t)`, and color it
//! `(s + b r + e t) mod k` (a band: `j mod k`; the 5-point stencil: `(s + 2 r) mod 5`; the
//! 7-point stencil: `(s + 2 r + 3 t) mod 7`). Such a coloring costs O(n + nnz) and no column
//! graph, where the saturation order that reaches the same count on a 2-D stencil at 10^6
//! columns takes about 100 ms, four times a natural greedy pass.
//!
//! # Algorithm
//!
//! The grid's sizes are guessed from the differences between the columns of one longest row
//! near the middle (on a 2-D stencil they hold the grid's width N; on a 3-D one N and N^2).
//! Each formula, radices from those differences (those that write the row's columns with the
//! smallest low digits first: radix N before N - 1, whose formulas fit all rows but those
//! along a diagonal of the grid) and coefficients below `k` (the first 1), is tried on
//! [`SAMPLE_ROWS`] rows spread over the pattern; one that passes is written out for
//! every column and checked on every row, at most [`FULL_TESTS`] times. A
//! pattern with no such structure (random columns, an unstructured mesh) fails on the sample
//! rows, within [`SAMPLE_TESTS`] tries of a few rows each. The answer is a valid coloring with
//! exactly `k` colors, or none: [`super::color`] tries it before any order under
//! [`super::Strategy::Auto`] and [`super::Strategy::BestOf`] (and so does the trace's check,
//! which colors with the default). The payload planner tries it on the blocks of its last
//! level ([`Rows`]: lists whose entries carry a flag; `planner/refine/level.rs`).

use crate::error::{filled, Result};
use crate::pattern::Pattern;

/// Rows of columns a formula is sought for: a pattern's, or lists whose entries carry flags in
/// the bits outside [`Rows::mask`] (the payload planner's lists of blocks).
pub(crate) trait Rows {
    /// How many rows.
    fn rows(&self) -> usize;
    /// How many columns (each entry's column, masked, is below it).
    fn cols(&self) -> usize;
    /// Row `i`'s entries, in increasing order of their columns.
    fn row(&self, i: usize) -> &[u32];
    /// The bits of an entry that hold its column.
    fn mask(&self) -> u32 {
        u32::MAX
    }
}

impl Rows for Pattern {
    fn rows(&self) -> usize {
        Pattern::rows(self)
    }
    fn cols(&self) -> usize {
        Pattern::cols(self)
    }
    fn row(&self, i: usize) -> &[u32] {
        Pattern::row(self, i)
    }
}

/// Rows spread over the pattern on which a formula is tried before it is written out.
const SAMPLE_ROWS: usize = 256;
/// Formulas tried on the sample rows, at most.
const SAMPLE_TESTS: usize = 1 << 13;
/// Formulas written out and checked on every row, at most: each costs O(n + nnz). On the
/// payload planner's last-level lists of a 5-point stencil at 10^6 (candidates beside the
/// stencil's columns), formulas that passed the sample rows failed the full check at least
/// twice before one fit (2 evaluations fewer; with 2 the lists were colored greedily).
const FULL_TESTS: usize = 4;
/// Longest rows a formula is sought for: the colors of a row fit a 64-bit mask.
const MAX_COLORS: usize = 64;
/// Longest rows for which formulas in three digits (a 3-D grid) are sought: `k^2` coefficient
/// pairs for each pair of radices.
const MAX_COLORS_3D: usize = 16;
/// Rows scanned from the middle for a longest row whose differences give the radices.
const SCAN: usize = 4096;
/// Differences taken as radices, at most (the smallest).
const RADICES: usize = 32;

/// A coloring formula: column `j`'s digits in the radices `[r1, r2]` (the first `len` of
/// them; each divides the next) weighted by `coef`, modulo `k`.
#[derive(Clone, Copy, Debug)]
struct Formula {
    radices: [u64; 2],
    len: usize,
    coef: [u64; 3],
    k: u64,
}

impl Formula {
    /// Column `j`'s color.
    fn color(&self, j: u64) -> u32 {
        let sum = match self.len {
            0 => j,
            1 => j % self.radices[0] + self.coef[1] * (j / self.radices[0]),
            _ => {
                let [r1, r2] = self.radices;
                j % r1 + self.coef[1] * ((j % r2) / r1) + self.coef[2] * (j / r2)
            }
        };
        (sum % self.k) as u32
    }

    /// Whether the columns of `row` (each entry's bits in `mask`) take distinct colors.
    fn fits(&self, row: &[u32], mask: u32) -> bool {
        let mut seen = 0u64;
        for &j in row {
            let bit = 1u64 << self.color((j & mask) as u64);
            if seen & bit != 0 {
                return false;
            }
            seen |= bit;
        }
        true
    }

    /// Every column's color, carried from the one before (a division per `r1` columns).
    fn colors(&self, n: usize) -> Result<Vec<u32>> {
        let mut colors = filled(0u32, n, "colors")?;
        // The lowest digit goes up by one from column to column (its coefficient is 1) until it
        // reaches its radix; then the color is made again from the digits.
        let r1 = match self.len {
            0 => u64::MAX,
            _ => self.radices[0],
        };
        let (mut s, mut color) = (0u64, 0u32);
        for (j, slot) in colors.iter_mut().enumerate() {
            *slot = color;
            s += 1;
            if s == r1 {
                s = 0;
                color = self.color(j as u64 + 1);
            } else {
                color += 1;
                if color as u64 == self.k {
                    color = 0;
                }
            }
        }
        Ok(colors)
    }
}

/// Whether no row of `p` holds two columns of one color (every color below 64).
fn fits_every_row(p: &impl Rows, colors: &[u32]) -> bool {
    let mask = p.mask();
    (0..p.rows()).all(|i| {
        let mut seen = 0u64;
        p.row(i).iter().all(|&j| {
            let bit = 1u64 << colors[(j & mask) as usize];
            let new = seen & bit == 0;
            seen |= bit;
            new
        })
    })
}

/// The columns of `p` colored by a grid formula at its lower bound `k` (the longest row's
/// length, [`super::lower_bound`]), or `None` when no formula was found (see the module docs).
/// A coloring returned is valid (no row holds two columns of one color) and has exactly `k`
/// colors.
///
/// # Errors
/// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the colors do not fit.
pub(crate) fn lattice(p: &impl Rows, k: usize) -> Result<Option<Vec<u32>>> {
    let (m, n, mask) = (p.rows(), p.cols(), p.mask());
    debug_assert_eq!(k, (0..m).map(|i| p.row(i).len()).max().unwrap_or(0));
    if k == 0 || k > MAX_COLORS || m == 0 {
        return Ok(None);
    }
    // A longest row near the middle: its differences hold the grid's sizes.
    let Some(model) = (0..SCAN.min(m))
        .map(|t| (m / 2 + t) % m)
        .find(|&i| p.row(i).len() == k)
    else {
        return Ok(None);
    };
    let row: Vec<u32> = p.row(model).iter().map(|&j| j & mask).collect();
    let mut diffs: Vec<u64> = Vec::new();
    for (a, &x) in row.iter().enumerate() {
        diffs.extend(row[a + 1..].iter().map(|&y| (y - x) as u64));
    }
    diffs.sort_unstable();
    diffs.dedup();
    diffs.retain(|&d| d >= 2);
    diffs.truncate(RADICES);
    let sample: Vec<usize> = (0..SAMPLE_ROWS)
        .map(|t| t * m / SAMPLE_ROWS)
        .chain([model])
        .collect();
    // The model row's columns as offsets from its middle one. A radix fits the grid as well as
    // it writes them with small low digits: on a 2-D grid of width N, radix N writes the
    // 5-point stencil's as 0, +-1 and +-N (its misfit 2); radix N - 1, whose formulas pass most
    // rows (all but those along a diagonal of the grid), as +-1 and +-(N - 1) +- 1 (misfit 4).
    // Radices are tried by misfit, least first.
    let middle = i64::from(row[row.len() / 2]);
    let offsets: Vec<i64> = row.iter().map(|&j| i64::from(j) - middle).collect();
    let digits = |d: i64, r: i64| {
        let low = d.rem_euclid(r);
        let low = if low > r / 2 { low - r } else { low };
        (low, (d - low) / r)
    };
    let misfit = |[r1, r2]: [u64; 2]| -> i64 {
        let sizes = |&d: &i64| match r2 {
            0 => digits(d, r1 as i64).0.abs(),
            _ => {
                let rest = digits(d, r2 as i64).0;
                let (low, mid) = digits(rest, r1 as i64);
                low.abs() + mid.abs()
            }
        };
        offsets.iter().map(sizes).sum()
    };
    let mut radices: Vec<[u64; 2]> = diffs.iter().map(|&r| [r, 0]).collect();
    radices.sort_by_key(|&r| (misfit(r), r));
    let mut pairs: Vec<[u64; 2]> = Vec::new();
    if k <= MAX_COLORS_3D {
        for (a, &r1) in diffs.iter().enumerate() {
            pairs.extend(
                diffs[a + 1..]
                    .iter()
                    .filter(|&&r2| r2 % r1 == 0)
                    .map(|&r2| [r1, r2]),
            );
        }
        pairs.sort_by_key(|&r| (misfit(r), r));
    }
    let k64 = k as u64;
    let one = Formula {
        radices: [0, 0],
        len: 0,
        coef: [1, 0, 0],
        k: k64,
    };
    // One digit, then two (each radix, each coefficient), then three for short rows.
    let two = radices.iter().flat_map(|&radices| {
        (0..k64).map(move |b| Formula {
            radices,
            len: 1,
            coef: [1, b, 0],
            k: k64,
        })
    });
    let three = pairs.iter().flat_map(|&radices| {
        (0..k64 * k64).map(move |be| Formula {
            radices,
            len: 2,
            coef: [1, be / k64, be % k64],
            k: k64,
        })
    });
    let mut written = 0;
    for formula in std::iter::once(one)
        .chain(two)
        .chain(three)
        .take(SAMPLE_TESTS)
    {
        if !sample.iter().all(|&i| formula.fits(p.row(i), mask)) {
            continue;
        }
        let colors = formula.colors(n)?;
        if fits_every_row(p, &colors) {
            return Ok(Some(colors));
        }
        written += 1;
        if written == FULL_TESTS {
            return Ok(None);
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::lattice;
    use crate::coloring::{check, lower_bound};
    use crate::pattern::Pattern;
    use crate::testing::{self as synthetic, from_rows};

    /// The `w`-point-like stencil of `offsets` on a grid of `dims` (first coordinate fastest),
    /// numbered in natural order; m = n = the grid's points.
    fn grid(dims: &[usize], offsets: &[[i64; 3]]) -> Pattern {
        let n: usize = dims.iter().product();
        let size = |d: usize| dims.get(d).copied().unwrap_or(1) as i64;
        from_rows(n, n, |i, r| {
            let (mut rest, mut at) = (i, [0i64; 3]);
            for (d, slot) in at.iter_mut().enumerate() {
                *slot = (rest % size(d) as usize) as i64;
                rest /= size(d) as usize;
            }
            for o in offsets {
                let q = [at[0] + o[0], at[1] + o[1], at[2] + o[2]];
                if (0..3).all(|d| (0..size(d)).contains(&q[d])) {
                    r.push((q[0] + size(0) * (q[1] + size(1) * q[2])) as usize);
                }
            }
        })
    }

    const FIVE: [[i64; 3]; 5] = [[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]];
    const SEVEN: [[i64; 3]; 7] = [
        [0, 0, 0],
        [1, 0, 0],
        [-1, 0, 0],
        [0, 1, 0],
        [0, -1, 0],
        [0, 0, 1],
        [0, 0, -1],
    ];

    fn at_the_bound(p: &Pattern) -> Vec<u32> {
        let k = lower_bound(p);
        let colors = lattice(p, k).unwrap().expect("a formula");
        assert_eq!(colors.len(), p.cols());
        assert_eq!(check(p, &colors, k), Ok(()));
        colors
    }

    #[test]
    fn bands_blocks_and_grid_stencils_get_the_lower_bound_by_formula() {
        for p in [
            synthetic::banded(1000, 1),
            synthetic::banded(1000, 5),
            synthetic::block_diagonal(1000, 10),
            synthetic::stencil_2d(30),
            // Widths 35 and 100, multiples of 5: no formula in one digit fits; radices 99 and
            // 101 give formulas that fit all rows but those along a diagonal.
            synthetic::stencil_2d(35),
            synthetic::stencil_2d(100),
            // Width 1000: radices 999 and 1001 fit every sample row (the rows they do not
            // fit are 1 in 1000); radix 1000 must come first.
            grid(&[1000, 40], &FIVE),
            grid(&[40, 25], &FIVE),
            grid(&[12, 9, 7], &SEVEN),
        ] {
            at_the_bound(&p);
        }
        // Rectangular: a residual on the interior points of a 50 x 50 grid whose unknowns
        // include the boundary's (m = 48^2 rows, n = 50^2 columns).
        let interior = from_rows(48 * 48, 2500, |i, r| {
            let c = (i / 48 + 1) * 50 + i % 48 + 1;
            r.extend([c - 50, c - 1, c, c + 1, c + 50]);
        });
        at_the_bound(&interior);
    }

    #[test]
    fn patterns_without_a_grid_get_none_and_every_answer_is_valid() {
        for seed in 0..8 {
            let p = synthetic::random_sparse(2000, 2000, 5, seed);
            assert_eq!(lattice(&p, 5).unwrap(), None);
        }
        assert_eq!(lattice(&synthetic::arrowhead(500), 500).unwrap(), None);
        // A stencil with one row that the formula of the grid does not fit, away from the
        // sample rows (its last column swapped for one of its own column's color): the sample
        // passes, the check on every row refuses it.
        let clean = synthetic::stencil_2d(40);
        let colors = at_the_bound(&clean);
        let odd = 401;
        let sampled = |i| (0..super::SAMPLE_ROWS).any(|t| t * 1600 / super::SAMPLE_ROWS == i);
        assert!(!sampled(odd) && clean.row(odd).len() == 5);
        let twin = (0..1600)
            .find(|&j| colors[j] == colors[odd] && !clean.contains(odd, j))
            .unwrap();
        let broken = from_rows(1600, 1600, |i, r| {
            r.extend(clean.row(i).iter().map(|&j| j as usize));
            if i == odd {
                r.pop();
                r.push(twin);
            }
        });
        assert_eq!(lower_bound(&broken), 5);
        assert!(check(&broken, &colors, 5).is_err());
        if let Some(c) = lattice(&broken, 5).unwrap() {
            assert_eq!(check(&broken, &c, 5), Ok(()));
        }
    }
}
