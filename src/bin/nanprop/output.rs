//! What the subcommands print and write: progress bars, files, SVG pictures, the summary.

use indicatif::{ProgressBar, ProgressStyle};
use nanprop::coloring::{self, lower_bound};
use nanprop::pattern::svg;
use nanprop::{BlackBox, Pattern};
use std::io::{BufWriter, IsTerminal};
use std::path::Path;

pub(crate) fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("{spinner} evaluations {pos}/{len} [{bar:30}] {elapsed}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

/// A black box that moves a progress bar.
pub(crate) struct Counted<'a> {
    pub(crate) f: &'a mut dyn BlackBox,
    pub(crate) bar: &'a ProgressBar,
}

impl BlackBox for Counted<'_> {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> Result<(), i32> {
        let r = self.f.eval(x, y);
        self.bar.inc(1);
        r
    }
}

pub(crate) fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), String> {
    let file =
        std::fs::File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    let mut w = BufWriter::new(file);
    write(&mut w).map_err(|e| format!("writing {}: {e}", path.display()))
}

pub(crate) fn write_svg(path: &Path, p: &Pattern, c: &coloring::Coloring) -> Result<(), String> {
    std::fs::write(path, svg::spy_and_compressed(p, &c.colors, c.num_colors))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

pub(crate) fn summary(p: &Pattern, colors: usize, seconds: f64) {
    println!(
        "n = {}, m = {}, nnz = {}, evaluations = {}, unresolved = {}, colors = {colors} (lower bound {}), n/colors = {:.2}, time = {seconds:.3} s",
        p.cols(),
        p.rows(),
        p.nnz(),
        p.report.evaluations,
        p.report.unresolved,
        lower_bound(p),
        p.cols() as f64 / colors.max(1) as f64
    );
}
