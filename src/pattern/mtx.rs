//! Matrix Market coordinate files: patterns and real sparse matrices, as SciPy's `mmread` and
//! Julia's MatrixMarket read them.
//!
//! Written: `%%MatrixMarket matrix coordinate pattern general` (or `real general`), 1-based
//! indices, one entry a line in CSR order. Read: `coordinate` with `pattern`, `real` or
//! `integer` values (ignored: only the structure is kept), `general` or `symmetric` (mirrored);
//! comments anywhere; duplicate entries merged. Errors name the line.

use crate::error::{reserve, Error, Result};
use crate::pattern::{check_dims, EntryKind, Pattern};
use std::io::{BufRead, Write};

/// Writes `p` as a pattern file.
pub fn write_pattern(w: &mut impl Write, p: &Pattern, comment: &str) -> std::io::Result<()> {
    writeln!(w, "%%MatrixMarket matrix coordinate pattern general")?;
    for line in comment.lines() {
        writeln!(w, "% {line}")?;
    }
    writeln!(w, "{} {} {}", p.rows(), p.cols(), p.nnz())?;
    for i in 0..p.rows() {
        for &j in p.row(i) {
            writeln!(w, "{} {}", i + 1, j + 1)?;
        }
    }
    Ok(())
}

/// Comment lines (without the `%`) saying how the entries of `p` were found: the count of each
/// kind, the rows non-finite at x0, the evaluations and whether a budget stopped the trace. For
/// the header of a written pattern or Jacobian.
pub fn provenance(p: &Pattern) -> String {
    let counts = p.kind_counts();
    let kinds: Vec<String> = EntryKind::ALL
        .iter()
        .map(|&k| format!("{} {}", k.name(), counts[k as usize]))
        .collect();
    let mut text = format!("entry kinds: {}", kinds.join(", "));
    if p.report.budget_exhausted {
        text.push_str(
            "\nthe evaluation budget ran out: unresolved entries are possible dependencies",
        );
    }
    if counts[EntryKind::Assumed as usize] > 0 {
        text.push_str("\nassumed entries: rows recognised dense, kept without proof");
    }
    if !p.nonfinite_rows().is_empty() {
        let rows: Vec<String> = p
            .nonfinite_rows()
            .iter()
            .map(|i| (i + 1).to_string())
            .collect();
        text.push_str(&format!(
            "\nrows NaN/Inf at x0 (1-based, stored dense): {}",
            rows.join(" ")
        ));
    }
    text
}

/// Writes the kind of every entry of `p` as an integer Matrix Market file with the same
/// coordinates (0 traced, 1 perturbation, 2 chunk, 3 unresolved, 4 non-finite row, 5 assumed;
/// [`EntryKind`]): `scipy.io.mmread` gives it as a sparse matrix aligned with the pattern.
pub fn write_kinds(w: &mut impl Write, p: &Pattern, comment: &str) -> std::io::Result<()> {
    writeln!(w, "%%MatrixMarket matrix coordinate integer general")?;
    for line in comment.lines() {
        writeln!(w, "% {line}")?;
    }
    writeln!(
        w,
        "% values: 0 traced, 1 perturbation, 2 chunk, 3 unresolved, 4 nonfinite-row, 5 assumed"
    )?;
    writeln!(w, "{} {} {}", p.rows(), p.cols(), p.nnz())?;
    for i in 0..p.rows() {
        let start = p.row_ptr()[i];
        for (k, &j) in p.row(i).iter().enumerate() {
            writeln!(w, "{} {} {}", i + 1, j + 1, p.kinds()[start + k] as u8)?;
        }
    }
    Ok(())
}

/// Writes the matrix with pattern `p` and `values` in its CSR order as a real file (values
/// printed with 17 significant digits, so they read back exactly).
pub fn write_real(
    w: &mut impl Write,
    p: &Pattern,
    values: &[f64],
    comment: &str,
) -> std::io::Result<()> {
    assert_eq!(values.len(), p.nnz(), "one value per entry");
    writeln!(w, "%%MatrixMarket matrix coordinate real general")?;
    for line in comment.lines() {
        writeln!(w, "% {line}")?;
    }
    writeln!(w, "{} {} {}", p.rows(), p.cols(), p.nnz())?;
    for i in 0..p.rows() {
        let start = p.row_ptr()[i];
        for (k, &j) in p.row(i).iter().enumerate() {
            writeln!(w, "{} {} {:.17e}", i + 1, j + 1, values[start + k])?;
        }
    }
    Ok(())
}

/// The longest line read (a size line or an entry is a few dozen bytes).
const MAX_LINE: usize = 4096;

/// Reads the next line of at most [`MAX_LINE`] bytes into `buf` (None at the end). Errors: a
/// longer line, a read error, text that is not UTF-8.
fn next_line<'b>(r: &mut impl BufRead, buf: &'b mut Vec<u8>, no: usize) -> Result<Option<&'b str>> {
    buf.clear();
    let read = std::io::Read::take(&mut *r, MAX_LINE as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(|e| Error::invalid(format!("reading: {e}")))?;
    if read == 0 {
        return Ok(None);
    }
    if buf.len() > MAX_LINE {
        return Err(Error::invalid(format!(
            "Matrix Market line {}: longer than {MAX_LINE} bytes (not a Matrix Market file?)",
            no + 1
        )));
    }
    std::str::from_utf8(buf)
        .map(Some)
        .map_err(|_| Error::invalid(format!("Matrix Market line {}: not text", no + 1)))
}

/// At most 60 characters of `s`, for messages.
fn shown(s: &str) -> String {
    let mut t: String = s.chars().take(60).collect();
    if t.len() < s.len() {
        t.push_str("...");
    }
    t
}

/// Rows and columns a file may declare beyond [`SIZE_PER_ENTRY`] per entry it holds: 2^20, so
/// any small file can describe a pattern of up to a million rows and columns with few entries.
pub const SIZE_FLOOR: usize = 1 << 20;

/// Rows and columns a file may declare per distinct entry it holds, beyond [`SIZE_FLOOR`]. A
/// pattern whose rows and columns mostly hold an entry is far inside the rule; a file that
/// declares millions of rows and holds a few entries is not a pattern anyone wrote, and reading
/// it would cost memory out of all proportion to the file. Counted from the entries, not from
/// the file's bytes: what [`write_pattern`] writes of a pattern read is then read back whatever
/// the first file's comments, padding or repeated entries (the fuzzer found a file of 5
/// entries, a comment and zero-padded numbers that was read, written shorter, and refused).
/// 256 an entry: an entry line of up to 16 bytes gets what the earlier rule of 16 a byte gave.
pub const SIZE_PER_ENTRY: usize = 256;

/// Reads the structure of a coordinate Matrix Market file.
///
/// Memory is proportional to what the file holds: the entries are read first, and the result's
/// m + 1 row pointers (and whatever later works on its n columns) are allocated only if m + n is
/// at most [`SIZE_FLOOR`] + [`SIZE_PER_ENTRY`] x (the distinct entries, a symmetric file's
/// mirrored ones included), so a file of a few entries cannot make nanprop allocate gigabytes.
/// Sizes are checked before anything is allocated.
///
/// Errors: a malformed header, size line or entry (the message names the line); sizes that are
/// zero or above `u32::MAX`; a symmetric file that is not square; an entry outside the matrix;
/// a count that does not match; a line longer than 4 KiB; m + n above the rule (the message
/// gives the numbers); out of memory (reported, never an abort). A pattern read and written by
/// [`write_pattern`] reads back.
pub fn read_pattern(mut r: impl BufRead) -> Result<Pattern> {
    let bad = |line: usize, what: &str| {
        Error::invalid(format!("Matrix Market line {}: {what}", line + 1))
    };
    let mut buf = Vec::new();
    let header = next_line(&mut r, &mut buf, 0)?
        .ok_or_else(|| Error::invalid("empty Matrix Market file"))?
        .to_lowercase();
    let words: Vec<&str> = header.split_whitespace().collect();
    if words.len() < 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(bad(
            0,
            "expected '%%MatrixMarket matrix coordinate <field> <symmetry>'",
        ));
    }
    if words[2] != "coordinate" {
        return Err(bad(0, "only coordinate (sparse) files are read"));
    }
    if !["pattern", "real", "integer", "double"].contains(&words[3]) {
        return Err(bad(0, "field must be pattern, real or integer"));
    }
    let symmetric = match words[4] {
        "general" => false,
        "symmetric" => true,
        _ => return Err(bad(0, "symmetry must be general or symmetric")),
    };
    let mut size: Option<(usize, usize, usize)> = None;
    let mut entries: Vec<(u32, u32)> = Vec::new();
    let mut stored = 0usize;
    let mut no = 0;
    loop {
        no += 1;
        let Some(line) = next_line(&mut r, &mut buf, no)? else {
            break;
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let nums: Vec<&str> = t.split_whitespace().take(4).collect();
        let int = |k: usize| -> Result<usize> {
            nums.get(k)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(no, &format!("expected an integer in '{}'", shown(t))))
        };
        match size {
            None => {
                let (m, n, nnz) = (int(0)?, int(1)?, int(2)?);
                check_dims(m, n).map_err(|e| bad(no, &e.message))?;
                if symmetric && m != n {
                    return Err(bad(
                        no,
                        &format!("a symmetric matrix must be square, this one is {m} x {n}"),
                    ));
                }
                size = Some((m, n, nnz));
            }
            Some((m, n, nnz)) => {
                let (i, j) = (int(0)?, int(1)?);
                if i == 0 || j == 0 || i > m || j > n {
                    return Err(bad(
                        no,
                        &format!(
                            "entry ({i}, {j}) outside the {m} x {n} matrix (indices are 1-based)"
                        ),
                    ));
                }
                stored += 1;
                if stored > nnz {
                    return Err(bad(
                        no,
                        &format!("more entries than the {nnz} the size line says"),
                    ));
                }
                let need = if symmetric && i != j { 2 } else { 1 };
                reserve(&mut entries, need, "Matrix Market entries")?;
                entries.push((i as u32 - 1, j as u32 - 1));
                if symmetric && i != j {
                    entries.push((j as u32 - 1, i as u32 - 1));
                }
            }
        }
    }
    let (m, n, nnz) = size.ok_or_else(|| Error::invalid("Matrix Market file has no size line"))?;
    if stored != nnz {
        return Err(Error::invalid(format!(
            "Matrix Market size line says {nnz} entries, the file holds {stored}"
        )));
    }
    entries.sort_unstable();
    entries.dedup();
    let distinct = entries.len();
    let allowed = SIZE_PER_ENTRY
        .saturating_mul(distinct)
        .saturating_add(SIZE_FLOOR);
    if m.saturating_add(n) > allowed {
        return Err(Error::invalid(format!(
            "Matrix Market size line declares {m} x {n}, but the file holds {distinct} distinct \
             entries: nanprop reads at most {SIZE_FLOOR} rows and columns plus {SIZE_PER_ENTRY} \
             per entry ({allowed} here), so that memory stays proportional to the file"
        )));
    }
    let mut row_ptr = Vec::new();
    reserve(&mut row_ptr, m + 1, "row pointers")?;
    row_ptr.resize(m + 1, 0usize);
    for &(i, _) in &entries {
        row_ptr[i as usize + 1] += 1;
    }
    for i in 0..m {
        row_ptr[i + 1] += row_ptr[i];
    }
    let mut cols: Vec<usize> = Vec::new();
    reserve(&mut cols, entries.len(), "column indices")?;
    cols.extend(entries.iter().map(|&(_, j)| j as usize));
    Pattern::from_csr(m, n, &row_ptr, &cols)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing as synthetic;

    #[test]
    fn round_trip() {
        let p = synthetic::random_sparse(30, 40, 4, 2);
        let mut buf = Vec::new();
        write_pattern(&mut buf, &p, "test\nsecond line").unwrap();
        let q = read_pattern(buf.as_slice()).unwrap();
        assert_eq!((q.row_ptr(), q.col_idx()), (p.row_ptr(), p.col_idx()));
        let values: Vec<f64> = (0..p.nnz()).map(|k| 1.0 / (k as f64 + 3.0)).collect();
        let mut buf = Vec::new();
        write_real(&mut buf, &p, &values, "").unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        let first: f64 = text
            .lines()
            .nth(2)
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(first, values[0], "17 digits read back exactly");
        let q = read_pattern(buf.as_slice()).unwrap();
        assert_eq!(q.col_idx(), p.col_idx());
    }

    #[test]
    fn symmetric_and_errors() {
        let sym = "%%MatrixMarket matrix coordinate real symmetric\n% c\n3 3 2\n1 1 4.0\n3 1 2.0\n";
        let p = read_pattern(sym.as_bytes()).unwrap();
        assert_eq!(p.row(0), &[0, 2]);
        assert_eq!(p.row(2), &[0]);
        let err = |s: &str| read_pattern(s.as_bytes()).unwrap_err().message;
        assert!(err("").contains("empty"));
        assert!(err("%%MatrixMarket matrix array real general\n2 2\n").contains("coordinate"));
        assert!(
            err("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n3 1\n")
                .contains("line 3")
        );
        assert!(
            err("%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 1\n")
                .contains("holds 1")
        );
        assert!(
            err("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 x\n")
                .contains("integer")
        );
    }

    /// The fuzzer's find: 130 bytes declaring 61.5 million rows made the reader fill 61.5
    /// million row pointers (975 MB). Declared sizes beyond the file's contents are refused
    /// before anything is allocated; sizes a file really holds are read.
    #[test]
    fn sizes_in_proportion_to_the_file() {
        let huge = "%%MatrixMarket matrix coordinate integer general\n61510640 2 0\n";
        let message = read_pattern(huge.as_bytes()).unwrap_err().message;
        assert!(message.contains("61510640 x 2"), "{message}");
        assert!(message.contains("proportional"), "{message}");
        // Empty rows within the floor: a million-row pattern with one entry reads.
        let small = "%%MatrixMarket matrix coordinate pattern general\n1000000 48575 1\n3 4\n";
        let p = read_pattern(small.as_bytes()).unwrap();
        assert_eq!((p.rows(), p.cols(), p.nnz()), (1_000_000, 48_575, 1));
        // One row past the floor plus 256 per distinct entry is refused, however the file is
        // padded: a repeated entry counts once, comments and leading zeros not at all.
        let head = "%%MatrixMarket matrix coordinate pattern general\n";
        let with = |m: usize, pad: &str| format!("{head}{pad}{m} 1 3\n1 1\n{pad}2 1\n1 1\n");
        let m = SIZE_FLOOR + SIZE_PER_ENTRY * 2 - 1;
        assert!(read_pattern(with(m, "").as_bytes()).is_ok());
        assert!(read_pattern(with(m + 1, "").as_bytes()).is_err());
        let padded = format!("% {}\n", "x".repeat(4000)).repeat(50) + "000000";
        assert!(read_pattern(with(m + 1, &padded).as_bytes()).is_err());
        // A long pattern whose rows hold entries reads at any size within u32.
        let rows = 3_000_000;
        let mut text = format!("{head}{rows} 2 {rows}\n");
        for i in 1..=rows {
            text.push_str(&format!("{i} 1\n"));
        }
        let p = read_pattern(text.as_bytes()).unwrap();
        assert_eq!(p.nnz(), rows);
    }

    /// The fuzzer's find (libFuzzer, `tests/libfuzzer.rs`; `fuzz/corpus/mtx/padded-size.mtx`): a
    /// file of 5 entries declaring 1050003 rows, long enough with a comment and zero-padded
    /// numbers for a rule counted in bytes, was read, written back shorter by `write_pattern`,
    /// and refused on reading it again. Whatever is read is read back from what `write_pattern`
    /// writes of it; a file declaring more rows than its entries carry is refused, padded or not.
    #[test]
    fn what_is_read_reads_back_when_written() {
        let found = "%%MatrixMarket matrix coordinate pattern general\n% a comment\n\
                     01050003 40 5\n1 0000000010\n1 2\n2 3\n3 3\n3 1\n";
        let message = read_pattern(found.as_bytes()).unwrap_err().message;
        assert!(message.contains("1050003 x 40"), "{message}");
        let head = "%%MatrixMarket matrix coordinate real symmetric\n% a long comment\n";
        for (m, entries) in [
            (2000, vec![(1, 1), (5, 2), (5, 2), (9, 7)]),
            (SIZE_FLOOR / 2, vec![]),
        ] {
            let lines: String = entries
                .iter()
                .map(|(i, j)| format!("{i:08} {j:08} 1.5\n"))
                .collect();
            let text = format!("{head}{m} {m} {}\n{lines}", entries.len());
            let p = read_pattern(text.as_bytes()).unwrap();
            let mut back = Vec::new();
            write_pattern(&mut back, &p, "").unwrap();
            let again = read_pattern(back.as_slice()).unwrap();
            assert_eq!((again.rows(), again.cols()), (p.rows(), p.cols()));
            assert_eq!(
                (again.row_ptr(), again.col_idx()),
                (p.row_ptr(), p.col_idx())
            );
        }
    }
}
