//! An SVG picture of a pattern and its column compression (the NaN-propagation paper's
//! Figures 2 and 3): on the left the m x n spy plot, each entry in its column's color; on the
//! right the m x colors compressed view, each entry moved into its color's column. Large
//! patterns are drawn on a grid of at most 600 x 600 cells (a cell is marked when any entry
//! falls in it), so the file stays small whatever nnz is.

use crate::pattern::Pattern;
use std::fmt::Write;

const MAX_CELLS: usize = 600;

/// A distinct color for class `c` of `k` (hues spread around the wheel).
fn hue(c: u32, k: usize) -> String {
    let h = (c as f64 * 360.0 / k.max(1) as f64 + 200.0) % 360.0;
    format!("hsl({h:.0},70%,45%)")
}

/// Draws the cells of one panel: `entries` gives (row, column, color) in the panel's own
/// coordinates (columns below `width`).
fn panel(
    out: &mut String,
    x0: f64,
    title: &str,
    rows: usize,
    width: usize,
    k: usize,
    entries: impl Iterator<Item = (usize, usize, u32)>,
) -> f64 {
    let (gr, gc) = (rows.min(MAX_CELLS), width.min(MAX_CELLS));
    let cell = (480.0 / gr.max(gc) as f64).clamp(0.5, 12.0);
    let mut grid: Vec<Option<u32>> = vec![None; gr * gc];
    for (i, j, c) in entries {
        grid[i * gr / rows * gc + j * gc / width] = Some(c);
    }
    let (w, h) = (gc as f64 * cell, gr as f64 * cell);
    let _ = writeln!(
        out,
        r#"<text x="{x0:.1}" y="16" font-family="sans-serif" font-size="13">{title}</text>"#
    );
    let _ = writeln!(
        out,
        r##"<rect x="{x0:.1}" y="24" width="{w:.1}" height="{h:.1}" fill="white" stroke="#444" stroke-width="0.5"/>"##
    );
    for (idx, c) in grid.iter().enumerate() {
        if let Some(c) = c {
            let (r, col) = (idx / gc, idx % gc);
            let _ = writeln!(
                out,
                r#"<rect x="{:.2}" y="{:.2}" width="{cell:.2}" height="{cell:.2}" fill="{}"/>"#,
                x0 + col as f64 * cell,
                24.0 + r as f64 * cell,
                hue(*c, k)
            );
        }
    }
    w.max(title.len() as f64 * 7.0)
}

/// The picture as an SVG document. `colors` (one per column) and their count come from a
/// column coloring of `p`.
pub fn spy_and_compressed(p: &Pattern, colors: &[u32], num_colors: usize) -> String {
    let mut body = String::new();
    let rows_of = |i: usize| {
        p.row(i)
            .iter()
            .map(move |&j| (i, j as usize, colors[j as usize]))
    };
    let left = panel(
        &mut body,
        10.0,
        &format!("pattern: {} x {}, {} entries", p.rows(), p.cols(), p.nnz()),
        p.rows(),
        p.cols(),
        num_colors,
        (0..p.rows()).flat_map(rows_of),
    );
    let x1 = 10.0 + left + 30.0;
    let right = panel(
        &mut body,
        x1,
        &format!("compressed: {num_colors} colors"),
        p.rows(),
        num_colors.max(1),
        num_colors,
        (0..p.rows()).flat_map(|i| {
            p.row(i)
                .iter()
                .map(move |&j| (i, colors[j as usize] as usize, colors[j as usize]))
        }),
    );
    let cell =
        (480.0 / p.rows().min(MAX_CELLS).max(p.cols().min(MAX_CELLS)) as f64).clamp(0.5, 12.0);
    let height = 24.0 + p.rows().min(MAX_CELLS) as f64 * cell + 10.0;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\">\n{body}</svg>\n",
        x1 + right + 10.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coloring::{color, ColoringOptions};
    use crate::testing as synthetic;

    #[test]
    fn draws_every_entry_of_a_small_pattern_and_bounds_large_ones() {
        let p = synthetic::banded(20, 1);
        let c = color(&p, &ColoringOptions::default());
        let svg = spy_and_compressed(&p, &c.colors, c.num_colors);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // Two frames, plus one cell per entry in each panel (no two entries share a cell).
        assert_eq!(svg.matches("<rect").count(), 2 + 2 * p.nnz());
        let big = synthetic::banded(100_000, 1);
        let c = color(&big, &ColoringOptions::default());
        let svg = spy_and_compressed(&big, &c.colors, c.num_colors);
        assert!(svg.matches("<rect").count() <= 2 + MAX_CELLS * MAX_CELLS + MAX_CELLS * 3);
    }
}
