//! What the subcommands print and write: progress bars, files, SVG pictures, the summary.

use indicatif::{ProgressBar, ProgressStyle};
use nanprop::coloring::{self, lower_bound};
use nanprop::pattern::svg;
use nanprop::{BlackBox, Pattern};
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;

/// A count of evaluations with their rate and the time elapsed, on standard error when it is a
/// terminal. A count rather than a bar: the planner plans step by step, so no total is known
/// up front (a bar whose total grows always looks nearly done).
pub(crate) fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::no_length();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {pos} evaluations ({per_sec}), {elapsed}")
            .expect("valid template"),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// Warnings on standard error about entries that are not proven: rows NaN/Inf at x0, entries a
/// budget left unresolved; a note on noise when a tolerance was set from it.
pub(crate) fn warnings(p: &Pattern) {
    if !p.nonfinite_rows().is_empty() {
        eprintln!(
            "nanprop: warning: {} outputs were NaN/Inf at x0; their rows are dense",
            p.nonfinite_rows().len()
        );
    }
    if p.report.unresolved > 0 {
        eprintln!(
            "nanprop: warning: the evaluation budget ran out: {} entries are unresolved (kept as \
             possible dependencies; --kinds FILE marks them)",
            p.report.unresolved
        );
    }
    if p.report.noise > 0.0 && p.report.tolerance > 0.0 {
        eprintln!(
            "nanprop: note: the outputs jitter by about {:.1e} (relative, estimated from \
             evaluations repeated at x0); changes below {:.1e} times max(|y|, 1) counted as none \
             (--noise error stops instead, --tolerance sets it)",
            p.report.noise, p.report.tolerance
        );
    }
}

/// The summary as one JSON object (for scripts): sizes, evaluations, the count of each entry
/// kind, rows NaN/Inf at x0, inputs whose NaN made the routine fail, colors.
pub(crate) fn json_summary(
    p: &Pattern,
    colors: usize,
    seconds: f64,
    source: &str,
    to_stderr: bool,
) {
    let counts = p.kind_counts();
    let kinds: Vec<String> = nanprop::EntryKind::ALL
        .iter()
        .map(|&k| {
            format!(
                "{}: {}",
                json_string(&k.name().replace('-', "_")),
                counts[k as usize]
            )
        })
        .collect();
    let list = |v: &[u32]| {
        let items: Vec<String> = v.iter().map(|i| i.to_string()).collect();
        format!("[{}]", items.join(", "))
    };
    let r = &p.report;
    let line = format!(
        "{{\"source\": {}, \"n\": {}, \"m\": {}, \"nnz\": {}, \"evaluations\": {}, \
         \"verification_evaluations\": {}, \"unresolved\": {}, \"assumed\": {}, \
         \"budget_exhausted\": {}, \"kinds\": {{{}}}, \"nonfinite_rows\": {}, \"failed_columns\": {}, \"noise\": {:e}, \"tolerance\": {:e}, \"colors\": {colors}, \
         \"lower_bound\": {}, \"seconds\": {seconds:.6}}}",
        json_string(source),
        p.cols(),
        p.rows(),
        p.nnz(),
        r.evaluations,
        r.verification_evaluations,
        r.unresolved,
        r.assumed,
        r.budget_exhausted,
        kinds.join(", "),
        list(p.nonfinite_rows()),
        list(&r.failed_columns),
        r.noise,
        r.tolerance,
        lower_bound(p),
    );
    if to_stderr {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
    fn prepare(&mut self) {
        self.f.prepare();
    }
    fn may_write_input(&self) -> bool {
        self.f.may_write_input()
    }
    fn writes_every_output(&self) -> bool {
        self.f.writes_every_output()
    }
}

/// Whether `path` means standard output (`-`).
pub(crate) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Prints a result line: to standard error when the result file itself goes to standard
/// output (`out` is `-`), else to standard output.
pub(crate) fn say(line: &str, out: &Path) {
    if is_stdout(out) {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// Reads a pattern from a Matrix Market file.
pub(crate) fn read_pattern_file(path: &Path) -> Result<nanprop::Pattern, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    nanprop::pattern::mtx::read_pattern(std::io::BufReader::new(file))
        .map_err(|e| format!("{}: {e}", path.display()))
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

pub(crate) fn write_svg(
    path: &Path,
    p: &Pattern,
    c: &coloring::Coloring,
    title: &str,
) -> Result<(), String> {
    std::fs::write(
        path,
        svg::spy_and_compressed(p, &c.colors, c.num_colors, title),
    )
    .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// A Jacobian's values as a picture colored by magnitude.
pub(crate) fn write_jacobian_svg(
    path: &Path,
    p: &Pattern,
    values: &[f64],
    title: &str,
) -> Result<(), String> {
    std::fs::write(path, svg::jacobian(p, values, title))
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
