//! What the subcommands print and write: progress bars, files, SVG pictures, the summary.

use indicatif::{ProgressBar, ProgressStyle};
use nanprop::coloring::{self, lower_bound};
use nanprop::pattern::svg;
use nanprop::{BlackBox, Pattern};
use std::io::{BufWriter, IsTerminal, Write};
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
    fn eval_checked(&mut self, x: &[f64], y: &mut [f64]) -> Result<(), nanprop::driver::Failure> {
        let r = self.f.eval_checked(x, y);
        self.bar.inc(1);
        r
    }
    fn precision(&self) -> nanprop::Precision {
        self.f.precision()
    }
}

/// Whether `path` means standard output (`-`).
pub(crate) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes a file, or standard output for `-`.
pub(crate) fn write_file(
    path: &Path,
    write: impl FnOnce(&mut Box<dyn Write>) -> std::io::Result<()>,
) -> Result<(), String> {
    let mut w: Box<dyn Write> = if is_stdout(path) {
        Box::new(BufWriter::new(std::io::stdout().lock()))
    } else {
        let file =
            std::fs::File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
        Box::new(BufWriter::new(file))
    };
    write(&mut w)
        .and_then(|()| w.flush())
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

pub(crate) fn write_svg(path: &Path, p: &Pattern, c: &coloring::Coloring) -> Result<(), String> {
    std::fs::write(path, svg::spy_and_compressed(p, &c.colors, c.num_colors))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The one-line summary: on standard output, or on standard error when the result itself goes
/// to standard output (`--out -`).
pub(crate) fn summary(p: &Pattern, colors: usize, seconds: f64, to_stderr: bool) {
    let line = format!(
        "n = {}, m = {}, nnz = {}, evaluations = {}, unresolved = {}, assumed = {}, colors = {colors} (lower bound {}), n/colors = {:.2}, time = {seconds:.3} s",
        p.cols(),
        p.rows(),
        p.nnz(),
        p.report.evaluations,
        p.report.unresolved,
        p.report.assumed,
        lower_bound(p),
        p.cols() as f64 / colors.max(1) as f64
    );
    if to_stderr {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}
