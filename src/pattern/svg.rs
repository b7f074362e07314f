//! SVG pictures of a pattern: the spy plot beside its column compression (the NaN-propagation
//! paper's Figures 2 and 3), and a Jacobian's values.
//!
//! # What a picture shows, at any size
//!
//! * **Bins.** A panel has at most [`MAX_BINS`] x [`MAX_BINS`] cells. Up to that many rows and
//!   columns, a cell is one entry; past it, a cell stands for a block of rows and columns and is
//!   shaded by the fraction of the block that holds entries (at least 40% strength, so a single
//!   entry in a large block still shows). A tridiagonal pattern of 40,000 columns is then
//!   a visible band, not a hairline, and the file stays small whatever nnz is.
//! * **Spy plot**, colored by how each entry was found ([`EntryKind`]): traced, found by a
//!   finite step, chunked, unresolved after a budget, non-finite row, assumed dense. A binned
//!   cell takes the rarest kind it holds (unresolved before non-finite before assumed before
//!   perturbation before chunk before traced), so what is unproven stays visible.
//! * **Compressed view**: one column per color of the coloring, each entry moved into its
//!   color's column and drawn in that color's hue; columns are at least a few pixels wide, so
//!   five colors of a 40,000-column pattern are five readable stripes.
//! * **Axes** with row and column indices (0-based, as the C and Rust APIs count), a title, and
//!   a legend of the kinds present with their counts (and the bin size when binned).
//! * [`jacobian`]: the spy plot colored by the magnitude of each value (log scale, with a color
//!   bar), zeros in gray.

use crate::pattern::{EntryKind, Pattern};
use std::fmt::Write;

/// Most cells along a panel's side.
pub const MAX_BINS: usize = 240;
/// Largest panel side in pixels.
const PANEL: f64 = 480.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 64.0;

/// Kinds by how they are drawn: name, color, and rank (a binned cell shows its highest rank).
fn style(kind: EntryKind) -> (&'static str, &'static str, u8) {
    match kind {
        EntryKind::Traced => ("traced", "#1f4e9c", 0),
        EntryKind::Chunk => ("chunk (some input of the chunk)", "#2a9d4b", 1),
        EntryKind::Perturbation => ("found by a finite step", "#e07b00", 2),
        EntryKind::Assumed => ("assumed (row recognised dense)", "#8c8c8c", 3),
        EntryKind::NonFiniteRow => ("row NaN/Inf at x0", "#7b3fa0", 4),
        EntryKind::Unresolved => ("unresolved (budget ran out)", "#d62728", 5),
    }
}

/// A distinct color for class `c` of `k` (hues spread around the wheel).
fn hue(c: usize, k: usize) -> String {
    let h = (c as f64 * 360.0 / k.max(1) as f64 + 200.0) % 360.0;
    format!("hsl({h:.0},70%,45%)")
}

/// How `len` indices fall into at most [`MAX_BINS`] bins.
#[derive(Clone, Copy)]
struct Axis {
    len: usize,
    bins: usize,
}

impl Axis {
    fn new(len: usize) -> Axis {
        Axis {
            len,
            bins: len.clamp(1, MAX_BINS),
        }
    }
    fn bin(self, i: usize) -> usize {
        i * self.bins / self.len.max(1)
    }
    /// Indices in bin `b`.
    fn width(self, b: usize) -> usize {
        let start = (b * self.len).div_ceil(self.bins);
        let end = ((b + 1) * self.len).div_ceil(self.bins);
        end - start
    }
    fn binned(self) -> bool {
        self.bins < self.len
    }
}

/// "Nice" tick positions (1, 2 or 5 times a power of ten) from 0 to below `len`.
fn ticks(len: usize) -> Vec<usize> {
    if len <= 1 {
        return vec![0];
    }
    let raw = (len - 1) as f64 / 5.0;
    let p = 10f64.powf(raw.log10().floor().max(0.0));
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| (m * p) as usize)
        .find(|&s| s as f64 >= raw)
        .unwrap_or(1)
        .max(1);
    let mut v: Vec<usize> = (0..len).step_by(step).collect();
    if *v.last().unwrap() != len - 1 && len - 1 - v.last().unwrap() > step / 3 {
        v.push(len - 1);
    }
    v
}

/// One panel's frame, axes and title; returns its width and height in pixels.
#[allow(clippy::too_many_arguments)]
fn frame(
    out: &mut String,
    x0: f64,
    title: &str,
    rows: Axis,
    cols: Axis,
    cw: f64,
    ch: f64,
    row_ticks: bool,
) {
    let (w, h) = (cols.bins as f64 * cw, rows.bins as f64 * ch);
    let _ = writeln!(
        out,
        r#"<text x="{x0:.1}" y="{:.1}" font-size="12" font-weight="bold">{}</text>"#,
        TOP - 30.0,
        escape(title)
    );
    let _ = writeln!(
        out,
        r##"<rect x="{x0:.1}" y="{TOP:.1}" width="{w:.1}" height="{h:.1}" fill="white" stroke="#444" stroke-width="0.6"/>"##
    );
    for t in ticks(cols.len) {
        let x = x0 + (cols.bin(t) as f64 + 0.5) * cw;
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{TOP:.1}" stroke="#444" stroke-width="0.6"/><text x="{x:.1}" y="{:.1}" font-size="9" text-anchor="middle">{t}</text>"##,
            TOP - 4.0,
            TOP - 7.0
        );
    }
    if row_ticks {
        for t in ticks(rows.len) {
            let y = TOP + (rows.bin(t) as f64 + 0.5) * ch;
            let _ = writeln!(
                out,
                r##"<line x1="{:.1}" y1="{y:.1}" x2="{x0:.1}" y2="{y:.1}" stroke="#444" stroke-width="0.6"/><text x="{:.1}" y="{:.1}" font-size="9" text-anchor="end">{t}</text>"##,
                x0 - 4.0,
                x0 - 6.0,
                y + 3.0
            );
        }
    }
}

fn cell(out: &mut String, x: f64, y: f64, w: f64, h: f64, fill: &str, opacity: f64) {
    if opacity >= 0.995 {
        let _ = writeln!(
            out,
            r#"<rect x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="{fill}"/>"#
        );
    } else {
        let _ = writeln!(
            out,
            r#"<rect x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="{fill}" fill-opacity="{opacity:.2}"/>"#
        );
    }
}

/// The cells of one row of a panel, adjacent cells of the same look drawn as one rectangle (a
/// dense pattern is then a few rectangles per row, not one per cell).
struct Row<'a> {
    out: &'a mut String,
    x0: f64,
    y: f64,
    w: f64,
    h: f64,
    run: Option<(usize, usize, String, u8)>,
}

impl<'a> Row<'a> {
    fn new(out: &'a mut String, x0: f64, y: f64, w: f64, h: f64) -> Self {
        Row {
            out,
            x0,
            y,
            w,
            h,
            run: None,
        }
    }

    /// Cell `b` with `fill` at `opacity`; cells come in increasing order.
    fn put(&mut self, b: usize, fill: String, opacity: f64) {
        let level = (opacity * 100.0).round() as u8;
        if let Some((_, end, f, l)) = &mut self.run {
            if *end == b && *f == fill && *l == level {
                *end = b + 1;
                return;
            }
        }
        self.flush();
        self.run = Some((b, b + 1, fill, level));
    }

    fn flush(&mut self) {
        if let Some((start, end, fill, level)) = self.run.take() {
            let x = self.x0 + start as f64 * self.w;
            let w = (end - start) as f64 * self.w;
            cell(self.out, x, self.y, w, self.h, &fill, level as f64 / 100.0);
        }
    }
}

impl Drop for Row<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Shade of a binned cell holding `count` entries of `capacity` places.
fn shade(count: usize, capacity: usize) -> f64 {
    if capacity <= 1 {
        return 1.0;
    }
    0.4 + 0.6 * (count as f64 / capacity as f64).sqrt().min(1.0)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Cell sizes for a panel of `rows` x `cols` bins: square cells fitting [`PANEL`], at least one
/// pixel, at most 14.
fn cell_size(rows: Axis, cols: Axis) -> f64 {
    (PANEL / rows.bins.max(cols.bins) as f64).clamp(1.0, 14.0)
}

/// The spy plot (entries by kind) beside the compressed view (one column per color), with
/// axes, a title and a legend. `colors` (one per column) and their count come from a column
/// coloring of `p`; `title` names what was traced (e.g. the library and symbol).
pub fn spy_and_compressed(p: &Pattern, colors: &[u32], num_colors: usize, title: &str) -> String {
    let (rows, cols) = (Axis::new(p.rows()), Axis::new(p.cols()));
    let c = cell_size(rows, cols);
    let mut body = String::new();
    // Spy: per bin, the count and the highest-ranked kind.
    let mut count = vec![0u32; rows.bins * cols.bins];
    let mut rank = vec![0u8; rows.bins * cols.bins];
    let kinds = p.kind_counts();
    for i in 0..p.rows() {
        let start = p.row_ptr()[i];
        for (k, &j) in p.row(i).iter().enumerate() {
            let kind = p.kinds()[start + k];
            let b = rows.bin(i) * cols.bins + cols.bin(j as usize);
            count[b] += 1;
            rank[b] = rank[b].max(style(kind).2);
        }
    }
    let by_rank: Vec<&str> = {
        let mut v = vec![""; 6];
        for k in EntryKind::ALL {
            let (_, color, r) = style(k);
            v[r as usize] = color;
        }
        v
    };
    let spy_title = format!("pattern: {} x {}, {} entries", p.rows(), p.cols(), p.nnz());
    frame(&mut body, LEFT, &spy_title, rows, cols, c, c, true);
    for br in 0..rows.bins {
        let mut row = Row::new(&mut body, LEFT, TOP + br as f64 * c, c, c);
        for bc in 0..cols.bins {
            let b = br * cols.bins + bc;
            if count[b] > 0 {
                let capacity = rows.width(br) * cols.width(bc);
                let fill = by_rank[rank[b] as usize].to_string();
                row.put(bc, fill, shade(count[b] as usize, capacity));
            }
        }
    }
    // Compressed: rows binned as in the spy; one column per color (binned past MAX_BINS).
    let k = num_colors.max(1);
    let groups = Axis::new(k);
    let gw = (240.0 / groups.bins as f64).clamp(2.0, 14.0).max(c);
    let x1 = LEFT + cols.bins as f64 * c + 48.0;
    let mut gcount = vec![0u32; rows.bins * groups.bins];
    for i in 0..p.rows() {
        for &j in p.row(i) {
            gcount[rows.bin(i) * groups.bins + groups.bin(colors[j as usize] as usize)] += 1;
        }
    }
    frame(
        &mut body,
        x1,
        &format!("compressed: {num_colors} colors"),
        rows,
        groups,
        gw,
        c,
        false,
    );
    for br in 0..rows.bins {
        let mut row = Row::new(&mut body, x1, TOP + br as f64 * c, gw, c);
        for bg in 0..groups.bins {
            let n = gcount[br * groups.bins + bg];
            if n > 0 {
                let capacity = rows.width(br) * groups.width(bg);
                row.put(
                    bg,
                    hue(bg * k / groups.bins, k),
                    shade(n as usize, capacity),
                );
            }
        }
    }
    // Legend: the kinds present, and the bins.
    let mut y = TOP + rows.bins as f64 * c + 22.0;
    for kind in EntryKind::ALL {
        let n = kinds[kind as usize];
        if n == 0 {
            continue;
        }
        let (name, color, _) = style(kind);
        let _ = writeln!(
            body,
            r#"<rect x="{LEFT:.1}" y="{:.1}" width="10" height="10" fill="{color}"/><text x="{:.1}" y="{y:.1}" font-size="11">{name}: {n}</text>"#,
            y - 9.0,
            LEFT + 16.0
        );
        y += 16.0;
    }
    if rows.binned() || cols.binned() {
        let _ = writeln!(
            body,
            r#"<text x="{LEFT:.1}" y="{y:.1}" font-size="11">each cell: a block of about {} x {} entries; shade: the fraction present (a cell shows the rarest kind it holds)</text>"#,
            p.rows().div_ceil(rows.bins),
            p.cols().div_ceil(cols.bins)
        );
        y += 16.0;
    }
    let width = (x1 + groups.bins as f64 * gw + 24.0)
        .max(x1 + 150.0)
        .max(LEFT + 600.0);
    document(&body, title, width, y + 8.0)
}

fn document(body: &str, title: &str, width: f64, height: f64) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{LEFT:.1}\" y=\"16\" font-size=\"14\">{}</text>\n{body}</svg>\n",
        escape(title)
    )
}

/// Colors of the magnitude ramp, small to large (viridis-like).
const RAMP: [(f64, f64, f64); 5] = [
    (68.0, 1.0, 84.0),
    (59.0, 82.0, 139.0),
    (33.0, 145.0, 140.0),
    (94.0, 201.0, 98.0),
    (253.0, 231.0, 37.0),
];

fn ramp(t: f64) -> String {
    let t = t.clamp(0.0, 1.0) * (RAMP.len() - 1) as f64;
    let i = (t.floor() as usize).min(RAMP.len() - 2);
    let f = t - i as f64;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// A Jacobian's values (in `p`'s CSR order) as a spy plot colored by magnitude, |J_ij| on a
/// log scale from the smallest nonzero to the largest (a binned cell shows its largest),
/// exact zeros in gray, with a color bar.
pub fn jacobian(p: &Pattern, values: &[f64], title: &str) -> String {
    assert_eq!(values.len(), p.nnz(), "one value per entry");
    let (rows, cols) = (Axis::new(p.rows()), Axis::new(p.cols()));
    let c = cell_size(rows, cols);
    let mut big = vec![-1.0f64; rows.bins * cols.bins];
    for i in 0..p.rows() {
        let start = p.row_ptr()[i];
        for (k, &j) in p.row(i).iter().enumerate() {
            let b = rows.bin(i) * cols.bins + cols.bin(j as usize);
            big[b] = big[b].max(values[start + k].abs());
        }
    }
    let nonzero = big.iter().copied().filter(|&v| v > 0.0 && v.is_finite());
    let (lo, hi) = nonzero.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (llo, lhi) = (lo.log10(), hi.log10());
    let mut body = String::new();
    frame(
        &mut body,
        LEFT,
        &format!(
            "Jacobian: {} x {}, {} entries, |value|",
            p.rows(),
            p.cols(),
            p.nnz()
        ),
        rows,
        cols,
        c,
        c,
        true,
    );
    let mut zeros = false;
    for br in 0..rows.bins {
        let mut row = Row::new(&mut body, LEFT, TOP + br as f64 * c, c, c);
        for bc in 0..cols.bins {
            let v = big[br * cols.bins + bc];
            if v < 0.0 {
                continue;
            }
            let fill = if v > 0.0 && v.is_finite() {
                let t = if lhi > llo {
                    (v.log10() - llo) / (lhi - llo)
                } else {
                    1.0
                };
                ramp(t)
            } else {
                zeros = true;
                "#c8c8c8".to_string()
            };
            row.put(bc, fill, 1.0);
        }
    }
    // The color bar.
    let x = LEFT + cols.bins as f64 * c + 30.0;
    let h = (rows.bins as f64 * c).max(120.0);
    for s in 0..50 {
        let t = 1.0 - s as f64 / 49.0;
        cell(
            &mut body,
            x,
            TOP + s as f64 * h / 50.0,
            14.0,
            h / 50.0 + 0.5,
            &ramp(t),
            1.0,
        );
    }
    if hi > 0.0 {
        let _ = writeln!(
            body,
            r#"<text x="{:.1}" y="{:.1}" font-size="10">{hi:.3e}</text><text x="{:.1}" y="{:.1}" font-size="10">{lo:.3e}</text>"#,
            x + 18.0,
            TOP + 8.0,
            x + 18.0,
            TOP + h
        );
    }
    let y = TOP + h + 22.0;
    if zeros {
        let _ = writeln!(
            body,
            r##"<rect x="{LEFT:.1}" y="{:.1}" width="10" height="10" fill="#c8c8c8"/><text x="{:.1}" y="{y:.1}" font-size="11">exactly zero (in the pattern; the step changed nothing)</text>"##,
            y - 9.0,
            LEFT + 16.0
        );
    }
    document(&body, title, x + 110.0, y + 14.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coloring::{color, ColoringOptions};
    use crate::testing as synthetic;

    #[test]
    fn small_patterns_draw_every_entry_and_large_ones_stay_bounded() {
        let p = synthetic::banded(20, 1);
        let c = color(&p, &ColoringOptions::default()).unwrap();
        let svg = spy_and_compressed(&p, &c.colors, c.num_colors, "banded");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // Background, two frames, one legend swatch; in the spy plot one rectangle per row (its
        // three entries are adjacent: one run), in the compressed view one per entry (the three
        // entries of a row have three colors).
        assert_eq!(svg.matches("<rect").count(), 1 + 2 + 1 + 20 + p.nnz());
        assert!(svg.contains("traced: 58"), "the legend counts the kinds");
        assert!(!svg.contains("each cell: a block"), "not binned");
        let big = synthetic::banded(40_000, 1);
        let c = color(&big, &ColoringOptions::default()).unwrap();
        let svg = spy_and_compressed(&big, &c.colors, c.num_colors, "banded");
        assert!(svg.matches("<rect").count() <= 8 + MAX_BINS * MAX_BINS + MAX_BINS * 3);
        assert!(svg.contains("each cell: a block of about 167 x 167 entries"));
        // Axes run to the last index.
        assert!(svg.contains(">39999</text>"));
        // A dense pattern's spy plot is one rectangle per row of cells, not one per cell.
        let dense = synthetic::banded(2_500, 2_500);
        let own: Vec<u32> = (0..2_500).collect();
        let svg = spy_and_compressed(&dense, &own, 2_500, "dense");
        let traced = svg.matches(r##"fill="#1f4e9c""##).count();
        assert_eq!(
            traced,
            MAX_BINS + 1,
            "one run per row, and the legend's swatch"
        );
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(1), vec![0]);
        assert_eq!(ticks(10), vec![0, 2, 4, 6, 8, 9]);
        assert_eq!(ticks(2500), vec![0, 500, 1000, 1500, 2000, 2499]);
        let t = ticks(40_000);
        assert_eq!(t[1], 10_000);
        assert_eq!(*t.last().unwrap(), 39_999);
    }

    #[test]
    fn the_jacobian_is_colored_by_magnitude() {
        let p = synthetic::banded(5, 1);
        let values: Vec<f64> = (0..p.nnz())
            .map(|k| {
                if k == 3 {
                    0.0
                } else {
                    10f64.powi(k as i32 % 4)
                }
            })
            .collect();
        let svg = jacobian(&p, &values, "J");
        assert!(svg.contains("#c8c8c8"), "a zero is gray");
        assert!(
            svg.contains(&ramp(1.0)) && svg.contains(&ramp(0.0)),
            "both ends of the scale"
        );
        assert!(
            svg.contains("1.000e3") && svg.contains("1.000e0"),
            "the color bar's range"
        );
    }
}
