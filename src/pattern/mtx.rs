//! Matrix Market coordinate files: patterns and real sparse matrices, as SciPy's `mmread` and
//! Julia's MatrixMarket read them.
//!
//! Written: `%%MatrixMarket matrix coordinate pattern general` (or `real general`), 1-based
//! indices, one entry a line in CSR order. Read: `coordinate` with `pattern`, `real` or
//! `integer` values (ignored: only the structure is kept), `general` or `symmetric` (mirrored);
//! comments anywhere; duplicate entries merged. Errors name the line.

use crate::error::{Error, Result};
use crate::pattern::Pattern;
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

/// Reads the structure of a coordinate Matrix Market file.
pub fn read_pattern(r: impl BufRead) -> Result<Pattern> {
    let mut lines = r.lines().enumerate();
    let bad = |line: usize, what: &str| {
        Error::invalid(format!("Matrix Market line {}: {what}", line + 1))
    };
    let (_, header) = lines
        .next()
        .ok_or_else(|| Error::invalid("empty Matrix Market file"))?;
    let header = header
        .map_err(|e| Error::invalid(format!("reading: {e}")))?
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
    let mut entries: Vec<(usize, usize)> = Vec::new();
    for (no, line) in lines {
        let line = line.map_err(|e| Error::invalid(format!("reading: {e}")))?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let nums: Vec<&str> = t.split_whitespace().collect();
        let int = |k: usize| -> Result<usize> {
            nums.get(k)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(no, &format!("expected an integer in '{t}'")))
        };
        match size {
            None => {
                let s = (int(0)?, int(1)?, int(2)?);
                entries.reserve(s.2);
                size = Some(s);
            }
            Some((m, n, _)) => {
                let (i, j) = (int(0)?, int(1)?);
                if i == 0 || j == 0 || i > m || j > n {
                    return Err(bad(
                        no,
                        &format!(
                            "entry ({i}, {j}) outside the {m} x {n} matrix (indices are 1-based)"
                        ),
                    ));
                }
                entries.push((i - 1, j - 1));
                if symmetric && i != j {
                    entries.push((j - 1, i - 1));
                }
            }
        }
    }
    let (m, n, nnz) = size.ok_or_else(|| Error::invalid("Matrix Market file has no size line"))?;
    let stored = if symmetric {
        entries.iter().filter(|(i, j)| i >= j).count()
    } else {
        entries.len()
    };
    if stored != nnz {
        return Err(Error::invalid(format!(
            "Matrix Market size line says {nnz} entries, the file holds {stored}"
        )));
    }
    entries.sort_unstable();
    entries.dedup();
    let mut row_ptr = vec![0usize; m + 1];
    for &(i, _) in &entries {
        row_ptr[i + 1] += 1;
    }
    for i in 0..m {
        row_ptr[i + 1] += row_ptr[i];
    }
    let cols: Vec<usize> = entries.iter().map(|&(_, j)| j).collect();
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
}
