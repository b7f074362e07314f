//! The rows of each column, where every walk over a column's neighbours starts.
//!
//! A walk goes from a column to its rows, then to their columns, so the coloring needs the
//! pattern by columns as well as by rows. Usually that is the transposed structure, made once
//! per coloring. When the pattern is structurally symmetric (square, and row i holds column j
//! exactly when row j holds column i: meshes, PDE residuals such as the 2-D Bratu problem's,
//! Hessians), the rows of column j are the columns of row j, and the pattern's own arrays
//! serve both directions: no transpose is made, and a walk reads half the memory. On large
//! meshes that is what the caches decide: the saturation order moves as a front that crosses
//! the grid's lines, and the arrays it reads there are larger than the last-level cache
//! (the 2-D 5-point stencil at 10^6: 72 MB with the transposed structure, 44 MB without).
//! Measured with a small program timing the default coloring of that stencil, alternated:
//! 172 -> 135 ms with the transposed structure still made (and compared, then dropped), 170 ->
//! 114 ms without it.
//!
//! Whether a pattern is symmetric costs one pass over its rows ([`is_symmetric`]) and stops
//! at the first entry without its mirror, which on a pattern that is not symmetric is
//! usually the first. On a symmetric pattern the pass reads each entry's mirror: 6-7 ms on the
//! stencil at 10^6, where the mirrors lie near; about 100 ms on a symmetric random pattern
//! (10^6 rows of about 6 scattered entries), where the colorings' walks still gain more
//! (its default coloring 1.17 -> 1.13 s). Asking for the mirrors ahead there (a prefetch 16
//! entries on) took the pass to 72 ms, and the stencil's to 9 ms: not kept.

use crate::error::{filled, Result};
use crate::pattern::{Pattern, Transposed};

/// The rows of each column of a pattern (see the module docs).
pub(super) enum ColumnRows<'a> {
    /// The pattern's transposed structure.
    Transposed(Transposed),
    /// A structurally symmetric pattern: column j's rows are row j's columns.
    Symmetric(&'a Pattern),
}

impl<'a> ColumnRows<'a> {
    /// The rows of each column of `p`: its own rows when it is structurally symmetric, its
    /// transposed structure otherwise.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the symmetry test's
    /// counter per row (4 bytes each) or the transposed structure does not fit.
    pub(super) fn new(p: &'a Pattern) -> Result<Self> {
        match is_symmetric(p)? {
            true => Ok(ColumnRows::Symmetric(p)),
            false => ColumnRows::transposed(p),
        }
    }

    /// The transposed structure of `p`, whether or not it is symmetric.
    pub(super) fn transposed(p: &Pattern) -> Result<Self> {
        Ok(ColumnRows::Transposed(p.transpose_structure()?))
    }

    /// Where each column's rows start in [`ColumnRows::rows`] (one more entry than columns).
    #[inline]
    pub(super) fn starts(&self) -> &[usize] {
        match self {
            ColumnRows::Transposed(t) => &t.col_ptr,
            ColumnRows::Symmetric(p) => p.row_ptr(),
        }
    }

    /// Every column's rows, one column after the other, each increasing.
    #[inline]
    pub(super) fn rows(&self) -> &[u32] {
        match self {
            ColumnRows::Transposed(t) => &t.row_idx,
            ColumnRows::Symmetric(p) => p.col_idx(),
        }
    }

    /// The rows of column `v`.
    #[inline]
    pub(super) fn of(&self, v: usize) -> &[u32] {
        let starts = self.starts();
        &self.rows()[starts[v]..starts[v + 1]]
    }
}

/// Whether `p` is square and structurally symmetric. One pass over the rows in order: the rows
/// holding column j come up in increasing order, as row j's columns are, so each entry (i, j)
/// must be the next unmatched entry of row j, and is matched; every entry matched once, every
/// row is matched whole. O(nnz + n) time, a counter per row.
///
/// # Errors
/// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the counters do not fit.
pub(super) fn is_symmetric(p: &Pattern) -> Result<bool> {
    if p.rows() != p.cols() {
        return Ok(false);
    }
    let mut matched = filled(0u32, p.rows(), "matched entries per row")?;
    for i in 0..p.rows() {
        for &j in p.row(i) {
            let next = &mut matched[j as usize];
            if p.row(j as usize).get(*next as usize) != Some(&(i as u32)) {
                return Ok(false);
            }
            *next += 1;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing as synthetic;

    #[test]
    fn symmetric_patterns_are_told_apart_and_give_their_transposed_structure() {
        let grid = synthetic::stencil_2d(9);
        let symmetric = [
            grid.clone(),
            synthetic::banded(40, 3),
            synthetic::block_diagonal(30, 4),
            // Empty rows and columns together (a node without neighbours, even itself).
            synthetic::from_rows(5, 5, |i, r| {
                if i != 2 {
                    r.extend([0, 1, 3, 4].iter().filter(|&&j| j != 2))
                }
            }),
        ];
        for (k, p) in symmetric.iter().enumerate() {
            assert!(is_symmetric(p).unwrap(), "pattern {k}");
            let own = ColumnRows::new(p).unwrap();
            let t = ColumnRows::transposed(p).unwrap();
            assert!(matches!(own, ColumnRows::Symmetric(_)), "pattern {k}");
            assert_eq!(
                (own.starts(), own.rows()),
                (t.starts(), t.rows()),
                "pattern {k}"
            );
            for v in 0..p.cols() {
                assert_eq!(own.of(v), t.of(v), "pattern {k} column {v}");
            }
        }
        // One entry without its mirror: the first, the last, or one added to the last row;
        // not square; a random pattern.
        let n = grid.cols();
        let drop_first = synthetic::from_rows(n, n, |i, r| {
            r.extend(
                grid.row(i)
                    .iter()
                    .map(|&j| j as usize)
                    .filter(|&j| (i, j) != (0, 1)),
            )
        });
        let drop_last = synthetic::from_rows(n, n, |i, r| {
            let last = (n - 1, n - 2);
            r.extend(
                grid.row(i)
                    .iter()
                    .map(|&j| j as usize)
                    .filter(|&j| (i, j) != last),
            )
        });
        let extra = synthetic::from_rows(n, n, |i, r| {
            r.extend(grid.row(i).iter().map(|&j| j as usize));
            if i == n - 1 {
                r.push(0);
            }
        });
        let asymmetric = [
            drop_first,
            drop_last,
            extra,
            synthetic::from_rows(4, 5, |i, r| r.extend([i, i + 1])),
            synthetic::random_sparse(50, 50, 4, 2),
        ];
        for (k, p) in asymmetric.iter().enumerate() {
            assert!(!is_symmetric(p).unwrap(), "pattern {k}");
            assert!(matches!(
                ColumnRows::new(p).unwrap(),
                ColumnRows::Transposed(_)
            ));
        }
    }
}
