//! Assembling a [`Pattern`] row by row, as planners do when a trace finishes.

use super::{EntryKind, Pattern, TraceReport};
use crate::error::{reserve, Result};
use bitvec::prelude::*;

/// Assembles a [`Pattern`] row by row. Rows marked as not finite at the baseline are stored
/// dense, whatever the planner says of them; rows never pushed are empty.
pub struct PatternBuilder {
    m: usize,
    n: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<u32>,
    kinds: Vec<EntryKind>,
    dense: BitVec,
}

impl PatternBuilder {
    /// A builder for an m x n pattern whose rows in `dense` are stored dense.
    pub fn new(m: usize, n: usize, dense: BitVec) -> Result<Self> {
        debug_assert_eq!(dense.len(), m);
        let mut row_ptr = Vec::new();
        reserve(&mut row_ptr, m + 1, "row pointers")?;
        row_ptr.push(0);
        Ok(PatternBuilder {
            m,
            n,
            row_ptr,
            col_idx: Vec::new(),
            kinds: Vec::new(),
            dense,
        })
    }

    fn close_rows_before(&mut self, i: usize) -> Result<()> {
        while self.row_ptr.len() <= i {
            let r = self.row_ptr.len() - 1;
            if self.dense[r] {
                reserve(&mut self.col_idx, self.n, "pattern columns")?;
                reserve(&mut self.kinds, self.n, "pattern kinds")?;
                self.col_idx.extend(0..self.n as u32);
                self.kinds
                    .extend(std::iter::repeat_n(EntryKind::NonFiniteRow, self.n));
            }
            self.row_ptr.push(self.col_idx.len());
        }
        Ok(())
    }

    /// Appends row `i` (rows in increasing order, each at most once); `entries` sorted by column
    /// and distinct. Entries of a dense row are ignored.
    pub fn push_row(
        &mut self,
        i: usize,
        entries: impl ExactSizeIterator<Item = (u32, EntryKind)>,
    ) -> Result<()> {
        debug_assert!(i + 1 >= self.row_ptr.len(), "rows pushed out of order");
        self.close_rows_before(i)?;
        if self.dense[i] {
            return Ok(()); // filled by close_rows_before(i + 1)
        }
        reserve(&mut self.col_idx, entries.len(), "pattern columns")?;
        reserve(&mut self.kinds, entries.len(), "pattern kinds")?;
        for (j, kind) in entries {
            debug_assert!((j as usize) < self.n);
            debug_assert!(
                self.col_idx.len() == self.row_ptr[i] || *self.col_idx.last().unwrap() < j
            );
            self.col_idx.push(j);
            self.kinds.push(kind);
        }
        self.row_ptr.push(self.col_idx.len());
        Ok(())
    }

    /// Builds a pattern from unordered `(row, col, kind)` triples: a counting sort by row, a sort
    /// within each row, and duplicates merged to their strongest kind. O(nnz + m) memory.
    pub fn from_triples(mut self, triples: &[(u32, u32, EntryKind)]) -> Result<Pattern> {
        let mut start = vec![0usize; self.m + 1];
        for &(i, _, _) in triples {
            start[i as usize + 1] += 1;
        }
        for i in 0..self.m {
            start[i + 1] += start[i];
        }
        let mut sorted: Vec<(u32, EntryKind)> = Vec::new();
        reserve(&mut sorted, triples.len(), "sorted entries")?;
        sorted.resize(triples.len(), (0, EntryKind::Traced));
        let mut next = start.clone();
        for &(i, j, k) in triples {
            sorted[next[i as usize]] = (j, k);
            next[i as usize] += 1;
        }
        drop(next);
        for i in 0..self.m {
            let row = &mut sorted[start[i]..start[i + 1]];
            if row.is_empty() {
                continue;
            }
            row.sort_unstable();
            // Merge duplicates in place: the sort put the strongest kind of each column first.
            let mut w = 0;
            for r in 0..row.len() {
                if w == 0 || row[w - 1].0 != row[r].0 {
                    row[w] = row[r];
                    w += 1;
                }
            }
            self.push_row(i, row[..w].iter().copied())?;
        }
        self.finish()
    }

    /// The pattern of the rows in CSR form (`row_ptr`: m + 1 pointers; each row's columns
    /// sorted and distinct), every entry of kind `kind`, on a builder no row was pushed to.
    /// The arrays become the pattern's as they are, unless some row is stored dense (then they
    /// are pushed row by row).
    pub fn finish_csr(
        mut self,
        row_ptr: Vec<usize>,
        col_idx: Vec<u32>,
        kind: EntryKind,
    ) -> Result<Pattern> {
        debug_assert_eq!(self.row_ptr.len(), 1, "rows were pushed before");
        debug_assert_eq!(row_ptr.len(), self.m + 1);
        if self.dense.not_any() {
            self.kinds = crate::error::filled(kind, col_idx.len(), "pattern kinds")?;
            (self.row_ptr, self.col_idx) = (row_ptr, col_idx);
            return self.finish();
        }
        for i in 0..self.m {
            let row = &col_idx[row_ptr[i]..row_ptr[i + 1]];
            if !row.is_empty() {
                self.push_row(i, row.iter().map(|&j| (j, kind)))?;
            }
        }
        self.finish()
    }

    /// The pattern, with the remaining rows closed.
    pub fn finish(mut self) -> Result<Pattern> {
        self.close_rows_before(self.m)?;
        let nonfinite_rows = self.dense.iter_ones().map(|i| i as u32).collect();
        Ok(Pattern {
            m: self.m,
            n: self.n,
            row_ptr: self.row_ptr,
            col_idx: self.col_idx,
            kinds: self.kinds,
            nonfinite_rows,
            report: TraceReport::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CSR arrays taken whole give the pattern pushing their rows one by one gives, with
    /// the rows stored dense filled in either way.
    #[test]
    fn csr_rows_taken_whole_build_what_pushing_them_builds() {
        let (m, n) = (5, 6);
        let row_ptr = vec![0, 2, 2, 5, 6, 6];
        let col_idx = vec![1, 4, 0, 2, 5, 3];
        for dense_row in [None, Some(0), Some(1), Some(4)] {
            let mut dense = bitvec![0; m];
            if let Some(i) = dense_row {
                dense.set(i, true);
            }
            let whole = PatternBuilder::new(m, n, dense.clone())
                .unwrap()
                .finish_csr(row_ptr.clone(), col_idx.clone(), EntryKind::Traced)
                .unwrap();
            let mut pushed = PatternBuilder::new(m, n, dense).unwrap();
            for i in 0..m {
                let row = &col_idx[row_ptr[i]..row_ptr[i + 1]];
                if !row.is_empty() {
                    let entries = row.iter().map(|&j| (j, EntryKind::Traced));
                    pushed.push_row(i, entries).unwrap();
                }
            }
            let pushed = pushed.finish().unwrap();
            assert_eq!(whole.row_ptr(), pushed.row_ptr());
            assert_eq!(whole.col_idx(), pushed.col_idx());
            assert_eq!(whole.kinds(), pushed.kinds());
            let dense_len = dense_row.map_or(0, |i| whole.row(i).len());
            assert_eq!(dense_len, if dense_row.is_some() { n } else { 0 });
        }
    }
}
