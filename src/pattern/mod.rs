//! The result: a compressed sparse row (CSR) pattern with a provenance for every entry.
//!
//! Memory is O(nnz + m): `row_ptr` (m + 1), `col_idx` and `kinds` (nnz each), plus the list of
//! rows that were not finite at the baseline. Column indices are sorted and distinct in each row.
//! Indices are stored as `u32`; nanprop refuses n or m above `u32::MAX`.

//!
//! * `builder.rs`: [`PatternBuilder`], how planners assemble a pattern row by row.
//! * [`mtx`]: Matrix Market files (read and write).
//! * [`svg`]: an SVG spy plot beside the column-compressed view.

mod builder;
pub mod mtx;
pub mod svg;

pub use builder::PatternBuilder;

use crate::error::{reserve, Error, Result};

/// Why an entry is in the pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum EntryKind {
    /// Proven by NaN tracing: a probe's NaN reached this output from this input (its tag, or the
    /// only input of the probe).
    Traced = 0,
    /// Found by verification: NaN tracing saw no change (the NaN was absorbed: `fmin`, a clamp,
    /// an `isnan` guard, a branch), but a finite step on this input changed the output.
    Perturbation = 1,
    /// The chunked strategy saw a NaN from a chunk holding this input: some input of the chunk
    /// reaches the output, perhaps not this one.
    Chunk = 2,
    /// Not resolved when the evaluation budget ran out: kept as a possible dependency.
    Unresolved = 3,
    /// The output was NaN or Inf at `x0`, so it could not be traced: its row is dense.
    NonFiniteRow = 4,
    /// Kept as a possible dependency without a proof, because proving or disproving it would
    /// have cost more evaluations than one-hot tracing (n + 1): the row was recognised dense
    /// (the payload planner's dense-row rule), or no evaluation was left under the n + 1 cap to
    /// check or trace it ([`crate::TraceOptions::max_evaluations`]).
    Assumed = 5,
}

impl EntryKind {
    /// Every kind, in the order of their values.
    pub const ALL: [EntryKind; 6] = [
        EntryKind::Traced,
        EntryKind::Perturbation,
        EntryKind::Chunk,
        EntryKind::Unresolved,
        EntryKind::NonFiniteRow,
        EntryKind::Assumed,
    ];

    /// The kind whose evidence is stronger (smaller is stronger: a proof beats a guess).
    pub fn strongest(self, other: EntryKind) -> EntryKind {
        self.min(other)
    }

    /// A short name: "traced", "perturbation", "chunk", "unresolved", "nonfinite-row",
    /// "assumed".
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Traced => "traced",
            EntryKind::Perturbation => "perturbation",
            EntryKind::Chunk => "chunk",
            EntryKind::Unresolved => "unresolved",
            EntryKind::NonFiniteRow => "nonfinite-row",
            EntryKind::Assumed => "assumed",
        }
    }
}

/// Counters of how a pattern was obtained. All zero for a pattern given by the caller.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceReport {
    /// Calls of the black box, the baseline included.
    pub evaluations: usize,
    /// Entries kept because the budget ran out before they were resolved.
    pub unresolved: usize,
    /// Entries kept because resolving them would have cost more than one-hot tracing
    /// ([`EntryKind::Assumed`]).
    pub assumed: usize,
    /// Tags decoded from outputs that went through single precision (ids read from bits 50..29
    /// with the check bits zero).
    pub via_float: usize,
    /// Evaluations spent on verification by finite perturbation (included in `evaluations`).
    pub verification_evaluations: usize,
    /// Entries found by verification only ([`EntryKind::Perturbation`]).
    pub found_by_perturbation: usize,
    /// Evaluations taken from a journal instead of being made again (included in
    /// `evaluations`).
    pub replayed: usize,
    /// Planner steps (batches of probes) taken.
    pub steps: usize,
    /// Whether the evaluation budget stopped the trace early.
    pub budget_exhausted: bool,
    /// Evaluations that failed and were worked around by splitting their probe (included in
    /// `evaluations`; [`crate::trace::split`]).
    pub failed_evaluations: usize,
    /// Inputs whose NaN alone made the black box fail (NaN-intolerant), increasing: their
    /// dependencies were found by finite perturbation ([`EntryKind::Perturbation`]).
    pub failed_columns: Vec<u32>,
    /// Rows that failed the check of the traced pattern and were traced again with every probe
    /// verified ([`crate::trace::check`]).
    pub rechecked_rows: usize,
    /// The estimated relative noise of the outputs (a standard deviation relative to each
    /// output's value), from the repeated evaluations the trace made anyway, as ECnoise
    /// estimates it ([`crate::trace::noise`]); 0 when repeated evaluations agreed bit for bit.
    pub noise: f64,
    /// The change tolerance the trace used: the caller's
    /// [`crate::TraceOptions::verify_tolerance`], or the one set from the noise
    /// ([`crate::Noise::Tolerate`]); 0 when every change of an output's bits counted.
    pub tolerance: f64,
}

/// A sparsity pattern of an m x n Jacobian in CSR form.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    m: usize,
    n: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<u32>,
    kinds: Vec<EntryKind>,
    nonfinite_rows: Vec<u32>,
    /// How the pattern was traced.
    pub report: TraceReport,
}

impl Pattern {
    /// Rows (outputs).
    pub fn rows(&self) -> usize {
        self.m
    }
    /// Columns (inputs).
    pub fn cols(&self) -> usize {
        self.n
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }
    /// Row pointers, `m + 1` entries, starting at 0.
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }
    /// Column indices, sorted within each row.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }
    /// Provenance of each entry, aligned with [`Pattern::col_idx`].
    pub fn kinds(&self) -> &[EntryKind] {
        &self.kinds
    }
    /// The columns of row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[u32] {
        &self.col_idx[self.row_ptr[i]..self.row_ptr[i + 1]]
    }
    /// Whether entry (i, j) is present.
    pub fn contains(&self, i: usize, j: usize) -> bool {
        u32::try_from(j).is_ok_and(|j| self.row(i).binary_search(&j).is_ok())
    }
    /// How many entries there are of each kind, indexed by the kind's value
    /// ([`EntryKind::ALL`] order).
    pub fn kind_counts(&self) -> [usize; 6] {
        let mut counts = [0usize; 6];
        for &k in &self.kinds {
            counts[k as usize] += 1;
        }
        counts
    }

    /// Rows whose output was NaN or Inf at `x0` (sorted). They are stored dense.
    pub fn nonfinite_rows(&self) -> &[u32] {
        &self.nonfinite_rows
    }
    /// The pattern by columns (CSC): `col_ptr` (n + 1) and the row indices of each column,
    /// increasing, plus for each CSC entry its position in the CSR order (so values stored in
    /// CSR order can be read column by column). O(nnz + n).
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the copy does not fit.
    pub fn transpose(&self) -> Result<Transposed> {
        self.transposed(true)
    }

    /// The column structure alone: [`Pattern::transpose`] without the CSR positions
    /// (`csr_pos` is empty), for what only walks columns (coloring), at nnz x 8 bytes less.
    pub(crate) fn transpose_structure(&self) -> Result<Transposed> {
        self.transposed(false)
    }

    fn transposed(&self, positions: bool) -> Result<Transposed> {
        let mut col_ptr = crate::error::filled(0usize, self.n + 1, "column pointers")?;
        for &j in &self.col_idx {
            col_ptr[j as usize + 1] += 1;
        }
        for j in 0..self.n {
            col_ptr[j + 1] += col_ptr[j];
        }
        let mut next = crate::error::copied(&col_ptr, "column pointers")?;
        let mut row_idx = crate::error::filled(0u32, self.nnz(), "row indices")?;
        let mut csr_pos = match positions {
            true => crate::error::filled(0usize, self.nnz(), "entry positions")?,
            false => Vec::new(),
        };
        for i in 0..self.m {
            for k in self.row_ptr[i]..self.row_ptr[i + 1] {
                let j = self.col_idx[k] as usize;
                row_idx[next[j]] = i as u32;
                if positions {
                    csr_pos[next[j]] = k;
                }
                next[j] += 1;
            }
        }
        Ok(Transposed {
            col_ptr,
            row_idx,
            csr_pos,
        })
    }

    /// This pattern with only the rows `keep` accepts (given each row's index and columns; the
    /// others empty), entries of kind
    /// [`EntryKind::Traced`], no report. O(nnz + m), without an intermediate copy.
    pub(crate) fn keep_rows(&self, keep: impl Fn(usize, &[u32]) -> bool) -> Result<Pattern> {
        let mut row_ptr = Vec::new();
        reserve(&mut row_ptr, self.m + 1, "row pointers")?;
        row_ptr.push(0);
        let mut col_idx = Vec::new();
        reserve(&mut col_idx, self.nnz(), "pattern columns")?;
        for i in 0..self.m {
            let row = self.row(i);
            if keep(i, row) {
                col_idx.extend_from_slice(row);
            }
            row_ptr.push(col_idx.len());
        }
        col_idx.shrink_to_fit();
        let kinds = crate::error::filled(EntryKind::Traced, col_idx.len(), "pattern kinds")?;
        Ok(Pattern {
            m: self.m,
            n: self.n,
            row_ptr,
            col_idx,
            kinds,
            nonfinite_rows: Vec::new(),
            report: TraceReport::default(),
        })
    }

    /// The union of two patterns of the same shape: every entry of either, each with the stronger
    /// of its kinds; rows non-finite at either point; the reports added up. O(nnz + m).
    pub fn union(&self, other: &Pattern) -> Result<Pattern> {
        if (self.m, self.n) != (other.m, other.n) {
            return Err(Error::invalid(format!(
                "cannot unite a {} x {} pattern with a {} x {} one",
                self.m, self.n, other.m, other.n
            )));
        }
        let mut row_ptr = Vec::new();
        reserve(&mut row_ptr, self.m + 1, "row pointers")?;
        row_ptr.push(0);
        let (mut col_idx, mut kinds) = (Vec::new(), Vec::new());
        reserve(&mut col_idx, self.nnz() + other.nnz(), "pattern columns")?;
        reserve(&mut kinds, self.nnz() + other.nnz(), "pattern kinds")?;
        for i in 0..self.m {
            let (a, b) = (
                self.row_ptr[i]..self.row_ptr[i + 1],
                other.row_ptr[i]..other.row_ptr[i + 1],
            );
            let (mut p, mut q) = (a.start, b.start);
            while p < a.end || q < b.end {
                let take_self = q >= b.end || (p < a.end && self.col_idx[p] <= other.col_idx[q]);
                let take_other = p >= a.end || (q < b.end && other.col_idx[q] <= self.col_idx[p]);
                let (j, k) = match (take_self, take_other) {
                    (true, true) => {
                        let r = (self.col_idx[p], self.kinds[p].strongest(other.kinds[q]));
                        p += 1;
                        q += 1;
                        r
                    }
                    (true, false) => {
                        p += 1;
                        (self.col_idx[p - 1], self.kinds[p - 1])
                    }
                    _ => {
                        q += 1;
                        (other.col_idx[q - 1], other.kinds[q - 1])
                    }
                };
                col_idx.push(j);
                kinds.push(k);
            }
            row_ptr.push(col_idx.len());
        }
        let mut nonfinite_rows = self.nonfinite_rows.clone();
        nonfinite_rows.extend_from_slice(&other.nonfinite_rows);
        nonfinite_rows.sort_unstable();
        nonfinite_rows.dedup();
        let (r, s) = (&self.report, &other.report);
        let report = TraceReport {
            evaluations: r.evaluations + s.evaluations,
            unresolved: kinds
                .iter()
                .filter(|&&k| k == EntryKind::Unresolved)
                .count(),
            assumed: kinds.iter().filter(|&&k| k == EntryKind::Assumed).count(),
            via_float: r.via_float + s.via_float,
            verification_evaluations: r.verification_evaluations + s.verification_evaluations,
            found_by_perturbation: kinds
                .iter()
                .filter(|&&k| k == EntryKind::Perturbation)
                .count(),
            steps: r.steps + s.steps,
            replayed: r.replayed + s.replayed,
            budget_exhausted: r.budget_exhausted || s.budget_exhausted,
            failed_evaluations: r.failed_evaluations + s.failed_evaluations,
            noise: r.noise.max(s.noise),
            tolerance: r.tolerance.max(s.tolerance),
            rechecked_rows: r.rechecked_rows + s.rechecked_rows,
            failed_columns: {
                let mut c = r.failed_columns.clone();
                c.extend_from_slice(&s.failed_columns);
                c.sort_unstable();
                c.dedup();
                c
            },
        };
        Ok(Pattern {
            m: self.m,
            n: self.n,
            row_ptr,
            col_idx,
            kinds,
            nonfinite_rows,
            report,
        })
    }

    /// The pattern of A + A^T for this square pattern A: every entry (i, j) also at (j, i),
    /// each with the stronger of its kinds; the report and non-finite rows are this pattern's.
    /// What a Hessian's coloring and recovery work on. O(nnz + n).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when the pattern is
    /// not square; [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory).
    pub fn symmetrized(&self) -> Result<Pattern> {
        if self.m != self.n {
            return Err(Error::invalid(format!(
                "a symmetric (Hessian) pattern must be square; this one is {} x {}",
                self.m, self.n
            )));
        }
        let t = self.transpose()?;
        let mut kinds = Vec::new();
        reserve(&mut kinds, self.nnz(), "pattern kinds")?;
        kinds.extend(t.csr_pos.iter().map(|&k| self.kinds[k]));
        let transposed = Pattern {
            m: self.n,
            n: self.m,
            row_ptr: t.col_ptr,
            col_idx: t.row_idx,
            kinds,
            nonfinite_rows: Vec::new(),
            report: TraceReport::default(),
        };
        let mut s = self.union(&transposed)?;
        s.report = self.report.clone();
        s.nonfinite_rows = self.nonfinite_rows.clone();
        Ok(s)
    }

    /// This pattern with the rows marked in `rows` united with `other`'s (same shape); the
    /// other rows as they are. The report is this pattern's.
    pub fn with_rows_from(
        &self,
        other: &Pattern,
        rows: &bitvec::slice::BitSlice,
    ) -> Result<Pattern> {
        // Rows not marked take this pattern's entries: build `other` restricted to the marked
        // rows, then unite.
        let (mut row_ptr, mut col_idx, mut kinds) = (vec![0usize], Vec::new(), Vec::new());
        reserve(&mut row_ptr, self.m, "row pointers")?;
        for i in 0..self.m {
            if rows.get(i).is_some_and(|r| *r) {
                let span = other.row_ptr[i]..other.row_ptr[i + 1];
                col_idx.extend_from_slice(&other.col_idx[span.clone()]);
                kinds.extend_from_slice(&other.kinds[span]);
            }
            row_ptr.push(col_idx.len());
        }
        let mixed = Pattern {
            m: self.m,
            n: self.n,
            row_ptr,
            col_idx,
            kinds,
            nonfinite_rows: self.nonfinite_rows.clone(),
            report: TraceReport::default(),
        };
        let mut united = self.union(&mixed)?;
        united.report = self.report.clone();
        Ok(united)
    }

    /// Largest number of entries in one row: a lower bound on the colors of any column coloring.
    pub fn max_row_nnz(&self) -> usize {
        self.row_ptr
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// A pattern from CSR arrays given by a caller, validated: `row_ptr` has `m + 1`
    /// nondecreasing entries from 0 to `col_idx.len()`, and each row's columns are strictly
    /// increasing and below `n`. Every entry gets kind [`EntryKind::Traced`].
    pub fn from_csr(m: usize, n: usize, row_ptr: &[usize], col_idx: &[usize]) -> Result<Pattern> {
        check_dims(m, n)?;
        if row_ptr.len() != m + 1 {
            return Err(Error::invalid(format!(
                "row_ptr has {} entries, expected m + 1 = {}",
                row_ptr.len(),
                m + 1
            )));
        }
        if row_ptr[0] != 0 || row_ptr[m] != col_idx.len() {
            return Err(Error::invalid(format!(
                "row_ptr must start at 0 and end at nnz = {} (it runs from {} to {})",
                col_idx.len(),
                row_ptr[0],
                row_ptr[m]
            )));
        }
        // Monotonicity first: with it and the end check, every row's range lies in col_idx.
        if let Some(i) = (0..m).find(|&i| row_ptr[i] > row_ptr[i + 1]) {
            return Err(Error::invalid(format!(
                "row_ptr decreases at row {i} ({} > {})",
                row_ptr[i],
                row_ptr[i + 1]
            )));
        }
        for i in 0..m {
            let (a, b) = (row_ptr[i], row_ptr[i + 1]);
            for k in a..b {
                if col_idx[k] >= n {
                    return Err(Error::invalid(format!(
                        "row {i}: column {} out of range (n = {n})",
                        col_idx[k]
                    )));
                }
                if k > a && col_idx[k] <= col_idx[k - 1] {
                    return Err(Error::invalid(format!(
                        "row {i}: columns must be sorted and distinct ({} follows {})",
                        col_idx[k],
                        col_idx[k - 1]
                    )));
                }
            }
        }
        let mut cols = Vec::new();
        reserve(&mut cols, col_idx.len(), "pattern columns")?;
        cols.extend(col_idx.iter().map(|&j| j as u32));
        let mut kinds = Vec::new();
        reserve(&mut kinds, col_idx.len(), "pattern kinds")?;
        kinds.resize(col_idx.len(), EntryKind::Traced);
        Ok(Pattern {
            m,
            n,
            row_ptr: row_ptr.to_vec(),
            col_idx: cols,
            kinds,
            nonfinite_rows: Vec::new(),
            report: TraceReport::default(),
        })
    }
}

/// A pattern by columns, from [`Pattern::transpose`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transposed {
    /// Column pointers, n + 1 entries.
    pub col_ptr: Vec<usize>,
    /// Row indices of each column, increasing.
    pub row_idx: Vec<u32>,
    /// For each entry, its position in the CSR order.
    pub csr_pos: Vec<usize>,
}

impl Transposed {
    /// The rows of column `j`.
    pub fn col(&self, j: usize) -> &[u32] {
        &self.row_idx[self.col_ptr[j]..self.col_ptr[j + 1]]
    }
}

/// Refuses sizes nanprop cannot index: zero, or above `u32::MAX`.
pub(crate) fn check_dims(m: usize, n: usize) -> Result<()> {
    if n == 0 || m == 0 {
        return Err(Error::invalid(format!(
            "n and m must be positive (n = {n}, m = {m})"
        )));
    }
    if n > u32::MAX as usize || m > u32::MAX as usize {
        return Err(Error::invalid(format!(
            "n and m must be at most {} (n = {n}, m = {m})",
            u32::MAX
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitvec::prelude::*;

    #[test]
    fn from_csr_accepts_valid_and_reports_errors() {
        let p = Pattern::from_csr(2, 3, &[0, 2, 3], &[0, 2, 1]).unwrap();
        assert_eq!(p.row(0), &[0, 2]);
        assert_eq!(p.row(1), &[1]);
        assert!(p.contains(0, 2) && !p.contains(1, 2));
        assert_eq!(p.max_row_nnz(), 2);
        let bad = |rp: &[usize], ci: &[usize]| Pattern::from_csr(2, 3, rp, ci).unwrap_err().message;
        assert!(bad(&[0, 2], &[0, 1]).contains("m + 1"));
        assert!(bad(&[0, 2, 3], &[0, 3, 1]).contains("out of range"));
        assert!(bad(&[0, 2, 3], &[2, 0, 1]).contains("sorted"));
        assert!(bad(&[0, 2, 3], &[1, 1, 1]).contains("distinct"));
        assert!(bad(&[0, 2, 2], &[0, 1, 1]).contains("end at nnz"));
        assert!(
            bad(&[0, 3, 2], &[0, 1]).contains("end at nnz")
                || bad(&[0, 3, 2], &[0, 1]).contains("decreases")
        );
        assert!(Pattern::from_csr(0, 3, &[0], &[]).is_err());
    }

    #[test]
    fn triples_are_sorted_merged_and_dense_rows_filled() {
        let mut dense = bitvec![0; 4];
        dense.set(2, true);
        let b = PatternBuilder::new(4, 3, dense).unwrap();
        let t = [
            (3, 2, EntryKind::Chunk),
            (0, 1, EntryKind::Chunk),
            (0, 1, EntryKind::Traced),
            (3, 0, EntryKind::Traced),
            (2, 0, EntryKind::Traced),
        ];
        let p = b.from_triples(&t).unwrap();
        assert_eq!(p.row_ptr(), &[0, 1, 1, 4, 6]);
        assert_eq!(p.col_idx(), &[1, 0, 1, 2, 0, 2]);
        assert_eq!(p.kinds()[0], EntryKind::Traced);
        assert_eq!(p.kinds()[1], EntryKind::NonFiniteRow);
        assert_eq!(p.kinds()[5], EntryKind::Chunk);
        assert_eq!(p.nonfinite_rows(), &[2]);
    }
}
