//! The check of a traced pattern: verification at a fraction of the cost of a trace.
//!
//! NaN tracing proves a zero when an output stays bit for bit equal to its baseline while a
//! probe holds NaN; an absorbed NaN (an `isnan` guard, `fmin`, a clamp, a comparison) makes
//! such a zero wrong. Verifying every probe by a finite step doubles the trace. Instead, after
//! the NaN trace the session checks the pattern P it found, as MINPACK's `chkder` checks a
//! Jacobian: the columns of P are colored so that no row has two columns of one color
//! (a distance-2 coloring, chi colors), and each color class S is moved twice, by independent
//! random steps of relative size about [`CHECK_STEP`] (1e-7) (each input its own magnitude in
//! [0.5, 1.5), from the seed): once in the direction of the sign of `x0_j`, once the other way,
//! so a kink that shows on one side only is seen. For a row i:
//!
//! * **No column of P_i in S**: every column of S is a claimed zero of row i, and nothing row i
//!   is known to depend on moved. Any change of y_i (bit for bit, or beyond the tolerance) in
//!   either evaluation is a missed dependency: exact, whatever the size of the effect.
//! * **One column j of P_i in S** (a coloring allows no more): y_i moves with x_j. The two
//!   slopes `(y_i - b_i) / dx_j` of the two evaluations agree up to the curvature of f along
//!   x_j (the steps are small) unless another input of S moved y_i; they are compared with
//!   the relative tolerance [`SLOPE_TOLERANCE`] above a rounding floor and what a moderate
//!   curvature can do over the steps ([`CURVATURE_ALLOWANCE`]: at a stationary point along
//!   x_j the slopes are near zero and only curvature separates them). A missed dependency whose
//!   first-order effect is below that fraction of x_j's can go unseen here (it is seen in the
//!   classes where the row has no column).
//!
//! A row with many entries (more than twice the mean, [`heavy_row`]) does not constrain the
//! colors; it is checked by two evaluations of its own that move every column it does not
//! depend on (exact, as for the first case), as long as those classes hold at most 2 n columns
//! in all (O(n) memory). The heavy rows past that get a coloring of their own, in which none
//! has two traced columns of one color, when it takes at most n / 8 colors: each of its
//! classes is a class of the check, tested on those rows alone as above, so every zero they
//! claim is checked in one of them (random 5 per row at n = 2 x 10^4 with three rows of 20:
//! the third row, traced again alone before, was recognised dense there, 19975 assumed entries;
//! now exact, 562 evaluations with the check; ten rows of 40: 3698 evaluations, 1906 of them
//! the check's and the re-traces', and 23599 assumed entries, now 907, exact; `steps`
//! example). Past n / 8 colors, or where a class of that coloring is not asked (a budget), a
//! heavy row that cannot be checked in a class is traced again. A heavy row holding assumed
//! entries (recognised dense) and no class of its own leaves the check, as light ones do
//! below, its zeros kept as assumed entries (100 rows of 100 spread dependencies, recognised
//! dense: 60328 evaluations, three probes per column, when they were traced again; 277 then;
//! they are peeled now, 1237 exact, and 700 such rows, past what the peeling takes, 300).
//!
//! A pattern whose rows recognised dense kept their unknown columns as assumed entries
//! (`planner/refine.rs`, "Dense rows") can be nearly dense: its coloring then needs about as
//! many colors as there are columns, and the check would cost two evaluations a column. When
//! the check would cost more than one probe per column, the light rows holding assumed entries
//! leave it if the other rows then need fewer colors, and every zero they claim is kept as an
//! assumed entry too (`Check::into_pattern`): no zero is reported unchecked (200 x 400 with
//! 20% of the entries: 850 evaluations, 800 of them the check, before; 50 now).
//!
//! An exact pattern can be nearly dense too (a random one with a quarter of its entries, or a
//! black box whose NaNs lose their payloads, traced one probe per column), and its coloring
//! then compresses nothing: chi is about n. A Jacobian on it costs about n evaluations, as on
//! one whose rows keep their zeros as assumed entries, so the check's 2 chi evaluations would
//! pay back only after hundreds of Jacobians. When the caller set no budget and that number
//! passes [`CHECK_PAYBACK`], the rows with n / 8 entries or more leave the check (their zeros
//! kept as assumed entries), and the others keep it when it then costs at most one probe per
//! column; else every light row leaves (200 x 400 with a quarter of the entries, payloads
//! lost: 1224 evaluations, 798 of them the check, before; 426 now). Patterns of fewer than
//! [`CHECK_PAYBACK_FROM`] columns keep their whole check, and `max_evaluations = usize::MAX`
//! checks every zero.
//!
//! A single-precision black box (or a double one whose tags come back through a float: REAL*4
//! internals) gets steps of [`CHECK_STEP_SINGLE`] and a rounding floor from `eps_f32`.
//!
//! Rows that fail are traced again, alone, with every probe verified by a finite step
//! (the paired verification of [`crate::trace::session`]), and their entries replaced. Cost:
//! `2 chi` evaluations, and the re-trace only where a NaN was absorbed (or a row kinks or curves
//! strongly along a traced input).

use crate::coloring::{self, Coloring, ColoringOptions, Order};
use crate::error::{copied, filled, push, reserve, reserve_exact, zero_bits, Result};
use crate::halves::{both, halfway, halves_from};
use crate::pattern::{EntryKind, Pattern, PatternBuilder};
use crate::precision::Precision;
use crate::probe::Probe;
use bitvec::prelude::*;
use std::collections::HashMap;

/// Relative size of the check's steps (double precision).
pub const CHECK_STEP: f64 = 1e-7;
/// Relative size of the check's steps for a single-precision black box: about 2500 `float`
/// ulps, so that rounding leaves the slopes a few percent to compare (the rounding floor of the
/// slope test scales with the black box's epsilon), while the curvature term stays near 1e-4.
pub const CHECK_STEP_SINGLE: f64 = 3e-4;
/// How far apart the two slopes of a row along its traced input may be (relative).
pub const SLOPE_TOLERANCE: f64 = 1e-3;

/// The curvature the slope test takes for curvature, not for a missed dependency: a second
/// derivative along `x_j` of up to this many times the output's size over `max(|x_j|, 1)^2`
/// moves the two slopes apart by at most that times the mean step. The output's size is the
/// larger of its own (at x0 and both steps) and the median size of f's outputs at x0: an
/// output near a zero crossing is no smaller in its terms than the others (a NumPy
/// tridiagonal at 10^6 had 5 rows at once stationary and near 0 traced again, 178
/// evaluations), and the median follows f's scale, so a small-scaled f keeps the test's power.
/// It matters only where the slope is near zero (a stationary point along `x_j`: `(3 - 2 x) x`
/// at `x = 0.75`), where the relative tolerance allows nothing and curvature alone had sent the
/// row to be traced again. A missed dependency moves the two slopes apart by about its own
/// first-order effect (the steps are independent), a million times more than this allows at
/// the double precision step.
pub const CURVATURE_ALLOWANCE: f64 = 100.0;

/// Rows with more entries than this do not constrain the check's coloring: twice the mean
/// row length of the traced rows, and at least 8.
pub fn heavy_row(p: &Pattern) -> usize {
    let rows = (0..p.rows())
        .filter(|&i| !p.row(i).is_empty())
        .count()
        .max(1);
    (2 * p.nnz() / rows).max(8)
}

/// Coloring work (the sum over rows of the square of their lengths) up to which the check
/// colors with smallest-last as well as the default and keeps the fewer colors: smallest-last
/// there takes up to about 20 ms, once per trace (random 5 per row at n = 10^4, work 2.5 x
/// 10^5: 5 ms), against two evaluations per color it saves.
const SMALL_COLORING_WORK: u64 = 1 << 20;

/// Jacobians a check may take to pay for itself: when the caller set no budget, a check whose
/// `2 chi` evaluations would pay back only after more Jacobians than this is left to the rows
/// of fewer than n / 8 entries, and the zeros the others claim are kept as assumed entries (the
/// module docs).
pub const CHECK_PAYBACK: usize = 256;

/// Columns from which [`CHECK_PAYBACK`] applies: below, a check costs fewer than 128
/// evaluations, and a small problem keeps its whole guard (an absorbed NaN is reported found by
/// perturbation, not assumed).
pub const CHECK_PAYBACK_FROM: usize = 64;

/// The check of one traced pattern (see the module docs).
pub(crate) struct Check {
    /// The traced pattern.
    pub(crate) pattern: Pattern,
    /// The color of each column.
    colors: Vec<u32>,
    /// The class of each entry of the pattern, in its order, and the entry's place in it:
    /// `colors` of its column above bit `slot_bits`, `slot` of its column below. The test of
    /// a class reads a row's entries in one run, where looking up each column's color was a
    /// scattered read per entry for every class (random 5 per row at n = 10^6, 11 classes:
    /// the check's tells 1333 -> 873 ms, its evaluations' loop 2088 -> 1437 ms), and looking
    /// up its traced column's place one more. Empty when no class of this coloring is tested,
    /// or when the two do not fit in 32 bits (the test then looks both up).
    entry_classes: Vec<u32>,
    /// The bits of an entry's place in its class in `entry_classes`.
    slot_bits: u32,
    /// Where each column sits in its color's class (the class's steps are made once, in the
    /// class's order: [`Check::tell`]).
    slot: Vec<u32>,
    /// The steps of the class being tested, in the class's order, in two parts made at once
    /// on two cores when the class is large (reused from class to class).
    steps: (Vec<Steps>, Vec<Steps>),
    /// The columns of each color, then of each directly checked heavy row: all the columns
    /// it does not depend on.
    classes: Vec<Vec<u32>>,
    /// Number of colors (classes from there on are heavy rows').
    colors_len: usize,
    /// Heavy rows checked directly, in the order of their classes, and a mark for each.
    heavy: Vec<u32>,
    direct: BitVec,
    /// The other heavy rows with claims, checked in classes of a coloring of their own (after
    /// the direct ones), and a mark for each (cleared when those classes are not all asked);
    /// that coloring's colors and each column's place in its class (empty when none).
    colored_rows: Vec<u32>,
    colored: BitVec,
    heavy_colors: Vec<u32>,
    heavy_slot: Vec<u32>,
    /// Rows left out of the check ([`Check::new`]): each zero they claim is kept as an assumed
    /// entry.
    unchecked: BitVec,
    /// Outputs of a class's first evaluation, until its second arrives.
    first: HashMap<usize, Vec<f64>>,
    /// The buffer of a class whose two evaluations were told, for the next class's first.
    spare: Option<Vec<f64>>,
    /// Classes evaluated (the first `active` are asked).
    active: usize,
    /// Classes whose two evaluations were told.
    done: BitVec,
    /// Rows that failed.
    pub(crate) alarms: BitVec,
    /// The black box's machine epsilon (the slope test's rounding floor).
    epsilon: f64,
    /// The median size of f's finite outputs at x0, within a factor of 2 (made on the first
    /// [`Check::tell`]): the least size the curvature allowance takes for an output.
    typical: Option<f64>,
    /// Rows plus entries from which a class's rows are tested in two halves at once
    /// ([`halves_from`]: the tests set it).
    halves_from: usize,
}

impl Check {
    /// The check of `pattern`: a coloring of its light rows, those with at most [`heavy_row`]
    /// entries and at least one claimed zero: the default one ([`coloring::Strategy::Auto`]:
    /// saturation, or the natural order first when rows are long; no recoloring), or on small
    /// patterns smallest-last when it needs fewer colors. A heavy row does not constrain the
    /// colors (a dense row would need as many colors as it has entries); where it has two
    /// traced columns in one class it is checked by a class of its own, or in the classes of
    /// the heavy rows' own coloring, or, failing both, traced again if it claims a zero in
    /// that class (module docs).
    ///
    /// `weigh`: whether the check is weighed against the Jacobians to come (the caller set no
    /// budget, so the session may keep zeros as assumed entries): a check whose coloring
    /// compresses (nearly) nothing is then not made ([`CHECK_PAYBACK`]).
    pub(crate) fn new(pattern: Pattern, weigh: bool) -> Result<Self> {
        let (m, n) = (pattern.rows(), pattern.cols());
        let limit = heavy_row(&pattern);
        let is_light = |row: &[u32]| row.len() <= limit && row.len() < n;
        // The light rows: usually all of them, colored where they are (a copy of the pattern
        // costs O(nnz) time and memory: 33 MB on the 2-D Bratu residual at 10^6).
        let kept;
        let all_light = (0..m).all(|i| is_light(pattern.row(i)));
        let light = match all_light {
            true => &pattern,
            false => {
                kept = pattern.keep_rows(|_, row| is_light(row))?;
                &kept
            }
        };
        // Each color costs two evaluations: the default coloring, which colors a structured
        // grid's pattern by formula at the lower bound (a band, a stencil on a grid numbered in
        // order: the 2-D Bratu residual at 10^6, 5 colors in about 5 ms where saturation takes
        // about 100), and otherwise on the benchmark's patterns never needs more colors than
        // any single order and costs less than smallest-last (random 5 per row at 10^6: 1.4 s
        // against 4 s); on small patterns (SMALL_COLORING_WORK) smallest-last too when the
        // default is above the lower bound, and the fewer colors.
        let mut c = coloring::color(light, &ColoringOptions::default())?;
        // The work only when the coloring is above the bound (a formula's seldom is): a pass
        // over the rows, 1.3 ms on the tridiagonal at 10^6.
        let small = || {
            let work = (0..light.rows()).map(|i| (light.row(i).len() as u64).pow(2));
            work.sum::<u64>() <= SMALL_COLORING_WORK
        };
        if c.num_colors > coloring::lower_bound(light) && small() {
            let smallest_last = ColoringOptions {
                strategy: coloring::Strategy::Only(Order::SmallestLast),
                ..ColoringOptions::default()
            };
            let other = coloring::color(light, &smallest_last)?;
            if other.num_colors < c.num_colors {
                c = other;
            }
        }
        // A check dearer than one probe per column, with light rows holding assumed entries
        // (rows recognised dense, whose unknown columns the trace kept): those rows leave it
        // when the others then need fewer colors, and the zeros they claim are kept as assumed
        // entries too (`Check::into_pattern`).
        let mut unchecked = zero_bits(m, "unchecked rows")?;
        if 2 * c.num_colors > n {
            for i in (0..m).filter(|&i| is_light(pattern.row(i)) && holds_assumed(&pattern, i)) {
                unchecked.set(i, true);
            }
            if unchecked.any() {
                let other = color_kept(&pattern, |i, row| is_light(row) && !unchecked[i])?;
                match other.num_colors < c.num_colors {
                    true => c = other,
                    false => unchecked.fill(false),
                }
            }
            // A coloring that compresses (nearly) nothing. A Jacobian on the checked pattern
            // costs chi evaluations; on one where a row keeps its zeros as assumed entries, n
            // (that row holds every column): the check's 2 chi evaluations pay back only after
            // 2 chi / (n - chi) Jacobians. Past CHECK_PAYBACK of them the long rows (n / 8
            // entries or more) leave the check, and the others keep it if it then costs at most
            // one probe per column; else every light row leaves. The zeros the rows that leave
            // claim are kept as assumed entries: nothing unchecked is reported a zero (a random
            // pattern with a quarter of the entries, 200 x 400, its NaNs' payloads lost: 399
            // colors, 798 evaluations of a 1224-evaluation trace).
            let chi = c.num_colors;
            if weigh
                && n >= CHECK_PAYBACK_FROM
                && 2 * chi > n
                && CHECK_PAYBACK * (n - chi) <= 2 * chi
            {
                let long = |row: &[u32]| 8 * row.len() >= n;
                let short = |i: usize, row: &[u32]| is_light(row) && !unchecked[i] && !long(row);
                let rest = color_kept(&pattern, short)?;
                // (With no short row the rest has no class: the long rows leave, and so every
                // light row is out.)
                let keep_short = 2 * rest.num_colors <= n;
                for i in 0..m {
                    let row = pattern.row(i);
                    if is_light(row) && (!keep_short || long(row)) {
                        unchecked.set(i, true);
                    }
                }
                c = match keep_short {
                    true => rest,
                    false => no_class(rest),
                };
            }
        }
        // Each class made at its size (counted first), where pushing one by one grew them by
        // doubling; with the two passes below skipped when they have nothing to do, this
        // function took 10.1-13.6 ms instead of 11.4-17.8 on the tridiagonal at 10^6 (five
        // alternated runs each), 11.8-12.0 instead of 13.0-13.8 on the 2-D Bratu residual.
        let mut sizes = filled(0usize, c.num_colors, "check classes")?;
        for &k in &c.colors {
            sizes[k as usize] += 1;
        }
        let mut classes = Vec::new();
        reserve(&mut classes, c.num_colors, "check classes")?;
        for &size in &sizes {
            let mut class = Vec::new();
            reserve_exact(&mut class, size, "a check class")?;
            classes.push(class);
        }
        let mut slot = filled(0u32, n, "columns' places in their classes")?;
        for (j, &k) in c.colors.iter().enumerate() {
            let class = &mut classes[k as usize];
            slot[j] = class.len() as u32;
            class.push(j as u32); // within the size reserved
        }
        // Heavy rows with claims, each checked by moving all it does not depend on, while their
        // classes hold at most 2 n columns in all; the others are traced again if needed.
        let (mut heavy, mut direct, mut held) = (Vec::new(), zero_bits(m, "heavy rows")?, 0usize);
        // (None when every row is light: the rows are not read again.)
        let heavy_rows_below = match all_light {
            true => 0,
            false => m,
        };
        for i in 0..heavy_rows_below {
            let row = pattern.row(i);
            if row.len() > limit && row.len() < n && held + (n - row.len()) <= 2 * n {
                held += n - row.len();
                let mut zero = Vec::new();
                reserve(&mut zero, n - row.len(), "a heavy row's zeros")?;
                zero.extend(zeros_of(row, n)); // within the room reserved
                push(&mut classes, zero, "check classes")?;
                push(&mut heavy, i as u32, "heavy rows")?;
                direct.set(i, true);
            }
        }
        // The other heavy rows with claims: those holding assumed entries (rows recognised
        // dense) leave the check, as light ones do above, their zeros kept as assumed entries;
        // the others get a coloring of their own, so that none has two traced columns in one
        // class, when it takes at most n / 8 colors, each of its classes a class of the check
        // tested on those rows alone. (Else they are traced again where a class holds two of
        // their traced columns.)
        let mut colored = zero_bits(m, "heavy rows")?;
        let mut colored_rows = Vec::new();
        for i in 0..heavy_rows_below {
            let row = pattern.row(i);
            if row.len() > limit && row.len() < n && !direct[i] {
                if holds_assumed(&pattern, i) {
                    unchecked.set(i, true);
                    continue;
                }
                push(&mut colored_rows, i as u32, "heavy rows")?;
                colored.set(i, true);
            }
        }
        let (mut heavy_colors, mut heavy_slot) = (Vec::new(), Vec::new());
        if !colored_rows.is_empty() {
            let h = color_kept(&pattern, |i, _| colored[i])?;
            match 8 * h.num_colors <= n {
                true => {
                    let first = classes.len();
                    reserve(&mut classes, h.num_colors, "check classes")?;
                    for _ in 0..h.num_colors {
                        classes.push(Vec::new());
                    }
                    heavy_slot = filled(0u32, n, "columns' places in their classes")?;
                    for (j, &k) in h.colors.iter().enumerate() {
                        let class = &mut classes[first + k as usize];
                        heavy_slot[j] = class.len() as u32;
                        push(class, j as u32, "a check class")?;
                    }
                    heavy_colors = h.colors;
                }
                false => {
                    colored_rows.clear();
                    colored.fill(false);
                }
            }
        }
        let k = classes.len();
        let largest = sizes.iter().copied().max().unwrap_or(0);
        let (entry_classes, slot_bits) = entry_classes(
            &pattern,
            (&c.colors, &slot),
            (c.num_colors, largest),
            halves_from(),
        )?;
        Ok(Check {
            pattern,
            colors: c.colors,
            entry_classes,
            slot_bits,
            slot,
            steps: (Vec::new(), Vec::new()),
            colors_len: c.num_colors,
            heavy,
            direct,
            colored_rows,
            colored,
            heavy_colors,
            heavy_slot,
            unchecked,
            classes,
            first: HashMap::new(),
            spare: None,
            active: k,
            done: zero_bits(k, "classes told")?,
            alarms: zero_bits(m, "rows that failed")?,
            epsilon: f64::EPSILON,
            typical: None,
            halves_from: halves_from(),
        })
    }

    /// Whether some traced row (finite at `baseline`) claims a zero: has fewer entries than
    /// there are columns.
    pub(crate) fn claims_any(&self, baseline: &[f64]) -> bool {
        let n = self.pattern.cols();
        (0..self.pattern.rows()).any(|i| baseline[i].is_finite() && self.pattern.row(i).len() < n)
    }

    /// Where the heavy rows' own classes end: the classes of their own coloring follow.
    fn direct_end(&self) -> usize {
        self.colors_len + self.heavy.len()
    }

    /// Classes in the check (each costs two evaluations).
    pub(crate) fn classes(&self) -> usize {
        self.classes.len()
    }

    /// Checks only the first `k` classes (what an evaluation cap leaves room for). The zeros
    /// claimed in the others are not checked: [`Check::into_pattern`] keeps them. A heavy row
    /// whose own class is dropped can no longer be checked where it has several traced columns
    /// in one class, and is traced again there.
    pub(crate) fn limit(&mut self, k: usize) {
        self.active = self.active.min(k);
        for (h, &i) in self.heavy.iter().enumerate() {
            if self.colors_len + h >= self.active {
                self.direct.set(i as usize, false);
            }
        }
        if self.active < self.classes.len() {
            // Some class of the heavy rows' own coloring is not asked.
            self.colored.fill(false);
        }
    }

    /// One probe per class asked; each is evaluated twice (request `2 c` up, `2 c + 1` down).
    pub(crate) fn probes(&self, n: usize) -> Result<Vec<Probe>> {
        let mut probes = Vec::new();
        reserve(&mut probes, self.active, "check probes")?;
        for cols in &self.classes[..self.active] {
            probes.push(Probe::new(copied(cols, "a check class")?, n));
        }
        Ok(probes)
    }

    /// The traced pattern, plus, as entries of kind `kind`, every zero it claims in a class
    /// whose check was not completed (dropped by [`Check::limit`], or not told when a budget
    /// ran out): an unchecked zero is never reported as one. Rows not finite at `baseline`
    /// claim nothing.
    pub(crate) fn into_pattern(self, baseline: &[f64], kind: EntryKind) -> Result<Pattern> {
        let (m, n) = (self.pattern.rows(), self.pattern.cols());
        let mut kept: Vec<(u32, u32, EntryKind)> = Vec::new();
        for class in self.done.iter_zeros() {
            let cols = &self.classes[class];
            let rows: Box<dyn Iterator<Item = usize>> = match class.checked_sub(self.colors_len) {
                None => Box::new(0..m),
                Some(h) if class < self.direct_end() => {
                    Box::new(std::iter::once(self.heavy[h] as usize))
                }
                // A class of the heavy rows' own coloring: only they are tested in it.
                Some(_) => Box::new(self.colored_rows.iter().map(|&i| i as usize)),
            };
            for i in rows {
                if !baseline[i].is_finite() || self.unchecked[i] {
                    continue;
                }
                let row = self.pattern.row(i);
                for &j in cols {
                    if row.binary_search(&j).is_err() {
                        push(&mut kept, (i as u32, j, kind), "unchecked entries")?;
                    }
                }
            }
        }
        // Rows left out of the check: every zero they claim.
        for i in self
            .unchecked
            .iter_ones()
            .filter(|&i| baseline[i].is_finite())
        {
            for j in zeros_of(self.pattern.row(i), n) {
                push(
                    &mut kept,
                    (i as u32, j, EntryKind::Assumed),
                    "unchecked entries",
                )?;
            }
        }
        if kept.is_empty() {
            return Ok(self.pattern);
        }
        let none = zero_bits(m, "non-finite rows")?;
        let extra = PatternBuilder::new(m, n, none)?.from_triples(&kept)?;
        let mut united = self.pattern.union(&extra)?;
        united.report = self.pattern.report.clone();
        Ok(united)
    }

    /// The check of a black box of `precision` (its steps are sized by [`Check::value`]; this
    /// sets the rounding floor of the slope test).
    pub(crate) fn for_precision(mut self, precision: Precision) -> Self {
        self.epsilon = precision.epsilon();
        self
    }

    /// The value of input `j` (at `x`) in request `id`; `r` in [0.5, 1.5); sized for the black
    /// box's `precision`.
    pub(crate) fn value(x: f64, id: usize, r: f64, precision: Precision) -> f64 {
        let sign = if x < 0.0 { -1.0 } else { 1.0 };
        let direction = if id.is_multiple_of(2) { 1.0 } else { -1.0 };
        let step = match precision {
            Precision::Double => CHECK_STEP,
            Precision::Single => CHECK_STEP_SINGLE,
        };
        x + step * x.abs().max(1.0) * sign * direction * r
    }

    /// The outputs of request `id`. `changed(b, v)` says whether an output moved (bit for bit
    /// or beyond the tolerance); `step(id, j)` is the step input `j` took in request `id` and
    /// the input's scale, `max(|x0_j|, 1)`;
    /// `slack` widens the slope test (a tolerance's worth of output, relative to max(|b|, 1)).
    pub(crate) fn tell(
        &mut self,
        id: usize,
        y: &[f64],
        baseline: &[f64],
        changed: impl Fn(f64, f64) -> bool + Sync,
        step: impl Fn(usize, usize) -> (f64, f64) + Sync,
        slack: f64,
    ) -> Result<()> {
        let typical = *self.typical.get_or_insert_with(|| typical_size(baseline));
        let class = id / 2;
        let Some(other) = self.first.remove(&class) else {
            // Into the buffer of a class told before: no new pages for each class.
            let mut kept = self.spare.take().unwrap_or_default();
            kept.clear();
            reserve(&mut kept, y.len(), "outputs of a check")?;
            kept.extend_from_slice(y);
            self.first.insert(class, kept);
            return Ok(());
        };
        let (up, down, up_id) = if id.is_multiple_of(2) {
            (y, &other[..], id)
        } else {
            (&other[..], y, id - 1)
        };
        let direct_end = self.direct_end();
        if class >= self.colors_len && class < direct_end {
            // A heavy row's own class: nothing it depends on moved.
            let i = self.heavy[class - self.colors_len] as usize;
            if changed(baseline[i], up[i]) || changed(baseline[i], down[i]) {
                self.alarms.set(i, true);
            }
            self.done.set(class, true);
            return Ok(());
        }
        // The class's steps, once per column (a column is read by every row holding it), the
        // second half of the class's columns on a helper thread when it is large (each draws
        // two random magnitudes: `halves.rs`).
        let (mut steps, mut more_steps) = std::mem::take(&mut self.steps);
        let columns = &self.classes[class][..];
        let half = match columns.len() >= self.halves_from {
            true => columns.len() / 2,
            false => columns.len(),
        };
        let make = |columns: &[u32], steps: &mut Vec<Steps>| -> Result<()> {
            steps.clear();
            reserve(steps, columns.len(), "a check class's steps")?;
            steps.extend(columns.iter().map(|&j| {
                let ((up, scale), (down, _)) =
                    (step(up_id, j as usize), step(up_id + 1, j as usize));
                Steps {
                    up,
                    down,
                    scale_squared: scale * scale,
                }
            }));
            Ok(())
        };
        let (made, more_made) = both(
            half < columns.len(),
            || make(&columns[..half], &mut steps),
            || make(&columns[half..], &mut more_steps),
        );
        made?;
        more_made?;
        // Each row on its own: the rows in two halves on two cores when there are many
        // (`halves.rs`), each listing its rows that fail (usually none).
        let rows = baseline.len();
        let cut = match rows + self.pattern.nnz() >= self.halves_from {
            true => halfway(&self.pattern.row_ptr()[..=rows]),
            false => rows,
        };
        // A class of the heavy rows' own coloring tests them alone, by that coloring.
        let (colors, slot, class_color) = match class >= direct_end {
            true => (
                &self.heavy_colors[..],
                &self.heavy_slot[..],
                class - direct_end,
            ),
            false => (&self.colors[..], &self.slot[..], class),
        };
        let test = Test {
            check: self,
            colors,
            entry_classes: match class >= direct_end || self.entry_classes.is_empty() {
                true => None,
                false => Some((&self.entry_classes[..], self.slot_bits)),
            },
            slot,
            class: class_color,
            heavy: class >= direct_end,
            size: self.classes[class].len(),
            baseline,
            up,
            down,
            steps: (&steps, &more_steps),
            typical,
            slack,
        };
        let (first, second) = match test.heavy {
            true => {
                let rows = self.colored_rows.iter().map(|&i| i as usize);
                (test.alarms(rows, &changed), Ok(Vec::new()))
            }
            false => both(
                cut < rows,
                || test.alarms(0..cut, &changed),
                || test.alarms(cut..rows, &changed),
            ),
        };
        for i in first?.into_iter().chain(second?) {
            self.alarms.set(i as usize, true);
        }
        // Done only now: a class whose test did not finish (an allocation failed) is not
        // counted as checked.
        self.done.set(class, true);
        self.spare = Some(other);
        self.steps = (steps, more_steps);
        Ok(())
    }
}

/// A column's two steps in a class's evaluations, and the square of its input's scale (made
/// once per column: [`Check::tell`]).
#[derive(Clone, Copy)]
struct Steps {
    up: f64,
    down: f64,
    /// The square of the input's scale, `max(|x0_j|, 1)`.
    scale_squared: f64,
}

/// The larger of `a` and `b`, neither NaN (one instruction where `f64::max` also tests for
/// NaN; the same value).
#[inline]
fn larger(a: f64, b: f64) -> f64 {
    debug_assert!(!a.is_nan() && !b.is_nan());
    if a > b {
        a
    } else {
        b
    }
}

/// One class's two evaluations, as the slope test reads them ([`Check::tell`]).
struct Test<'a> {
    check: &'a Check,
    /// The coloring the class is of (the light rows', or the heavy rows' own: `heavy`), each
    /// column's place in its class, and the class's color.
    colors: &'a [u32],
    /// The light rows' coloring entry by entry, and the bits of the places in it
    /// ([`Check::entry_classes`]); `None` for the heavy rows' own (few rows: their columns'
    /// colors are looked up), or where the colors and places did not fit.
    entry_classes: Option<(&'a [u32], u32)>,
    slot: &'a [u32],
    class: usize,
    heavy: bool,
    /// Columns in the class.
    size: usize,
    baseline: &'a [f64],
    up: &'a [f64],
    down: &'a [f64],
    /// The steps of the class's columns, in the class's order, in two parts ([`Check::steps`]).
    steps: (&'a [Steps], &'a [Steps]),
    /// The median size of f's outputs at x0 ([`Check::typical`]).
    typical: f64,
    slack: f64,
}

impl Test<'_> {
    /// The rows of `rows` that fail (increasing).
    fn alarms(
        &self,
        rows: impl IntoIterator<Item = usize>,
        changed: &impl Fn(f64, f64) -> bool,
    ) -> Result<Vec<u32>> {
        let mut failed = Vec::new();
        for i in rows {
            if self.fails(i, changed) {
                push(&mut failed, i as u32, "rows that failed")?;
            }
        }
        Ok(failed)
    }

    /// Whether row `i` fails (the module docs). Inlined into the loop over the rows
    /// ([`Test::alarms`]): it had compiled as a call a row (the tridiagonal at 10^6: the three
    /// classes' tests 22.8 -> 19.5 ms inlined, medians of six runs).
    #[inline(always)]
    fn fails(&self, i: usize, changed: &impl Fn(f64, f64) -> bool) -> bool {
        let (check, class) = (self.check, self.class);
        let (b, up, down) = (self.baseline[i], self.up[i], self.down[i]);
        if !b.is_finite() || check.unchecked[i] {
            return false;
        }
        // The place in the class of the row's first column in it, and how many more it holds.
        let (traced, more) = match self.entry_classes {
            Some((entries, bits)) => {
                let (a, b) = (check.pattern.row_ptr()[i], check.pattern.row_ptr()[i + 1]);
                let mut in_class = (entries[a..b].iter())
                    .filter(|&&e| (u64::from(e) >> bits) as usize == class)
                    .map(|&e| (u64::from(e) & ((1 << bits) - 1)) as usize);
                (in_class.next(), in_class.count())
            }
            None => {
                let mut in_class = (check.pattern.row(i).iter())
                    .filter(|&&j| self.colors[j as usize] as usize == class)
                    .map(|&j| self.slot[j as usize] as usize);
                (in_class.next(), in_class.count())
            }
        };
        match traced {
            None => changed(b, up) || changed(b, down),
            // Every column of the class is traced for this row: nothing to check.
            Some(_) if 1 + more == self.size => false,
            // A heavy row with several traced columns here: checked by its own class or in its
            // own coloring's classes, or it cannot be checked here.
            Some(_) if more > 0 => self.heavy || !(check.direct[i] || check.colored[i]),
            Some(slot) => {
                let dx = match slot.checked_sub(self.steps.0.len()) {
                    None => &self.steps.0[slot],
                    Some(slot) => &self.steps.1[slot],
                };
                if !(up.is_finite() && down.is_finite()) {
                    return true;
                }
                let (g_up, g_down) = ((up - b) / dx.up, (down - b) / dx.down);
                let (apart, allowed) = (
                    (g_up - g_down).abs(),
                    SLOPE_TOLERANCE * g_up.abs().max(g_down.abs()),
                );
                // The floor below is never negative (or NaN, which fails nothing): slopes this
                // close pass whatever it is, and most rows' are (the same answer without its
                // two divisions).
                if apart <= allowed {
                    return false;
                }
                // Sizes of finite values: `larger` is `f64::max` there.
                let size = larger(larger(b.abs(), up.abs()), down.abs());
                let (least, sum) = (dx.up.abs().min(dx.down.abs()), dx.up.abs() + dx.down.abs());
                // An output near a zero crossing is no smaller in its terms than f's other
                // outputs: the allowance takes at least their median size.
                let curvature =
                    CURVATURE_ALLOWANCE * larger(size, self.typical) / dx.scale_squared * sum / 2.0;
                let floor = (64.0 * check.epsilon * size + 2.0 * self.slack * larger(b.abs(), 1.0))
                    / least
                    + curvature;
                apart > allowed + floor
            }
        }
    }
}

/// The class of each entry of `pattern` and its place in it, packed ([`Check::entry_classes`]:
/// `colors` of its column above the returned bits, `slot` of its column below), in two halves
/// at once from `halves_from` entries; `num_colors` classes, the largest of `largest` columns.
/// Empty when there is no class or the two do not fit in 32 bits. Errors: out of memory.
fn entry_classes(
    pattern: &Pattern,
    (colors, slot): (&[u32], &[u32]),
    (num_colors, largest): (usize, usize),
    halves_from: usize,
) -> Result<(Vec<u32>, u32)> {
    // The bits that hold every value below `count`.
    let bits_of = |count: usize| usize::BITS - count.saturating_sub(1).leading_zeros();
    let (slot_bits, color_bits) = (bits_of(largest), bits_of(num_colors));
    if colors.is_empty() || slot_bits + color_bits > u32::BITS {
        // No class of the light rows' coloring ([`no_class`]): none is tested; or a coloring
        // whose colors and places do not fit: the test looks them up.
        return Ok((Vec::new(), slot_bits));
    }
    let cols = pattern.col_idx();
    let mut entry_classes = filled(0u32, cols.len(), "the check's classes of entries")?;
    let cut = match cols.len() >= halves_from {
        true => cols.len() / 2,
        false => cols.len(),
    };
    let ((here, there), (cols_here, cols_there)) =
        (entry_classes.split_at_mut(cut), cols.split_at(cut));
    let color_of = |out: &mut [u32], cols: &[u32]| {
        for (k, &j) in out.iter_mut().zip(cols) {
            let j = j as usize;
            // Within 32 bits (tested above); a shift by 32 (no color bits) as 0.
            *k = colors[j].checked_shl(slot_bits).unwrap_or(0) | slot[j];
        }
    };
    both(
        cut < cols.len(),
        || color_of(here, cols_here),
        || color_of(there, cols_there),
    );
    Ok((entry_classes, slot_bits))
}

/// Whether row `i` of `pattern` holds an assumed entry (a row recognised dense).
fn holds_assumed(pattern: &Pattern, i: usize) -> bool {
    let (a, b) = (pattern.row_ptr()[i], pattern.row_ptr()[i + 1]);
    pattern.kinds()[a..b].contains(&EntryKind::Assumed)
}

/// The default coloring of the rows of `pattern` that `keep` accepts (given each row's index
/// and columns); no class at all (no column has a color) when it accepts none.
fn color_kept(pattern: &Pattern, keep: impl Fn(usize, &[u32]) -> bool) -> Result<Coloring> {
    let c = coloring::color(&pattern.keep_rows(&keep)?, &ColoringOptions::default())?;
    Ok(match (0..pattern.rows()).any(|i| keep(i, pattern.row(i))) {
        true => c,
        false => no_class(c),
    })
}

/// `c` with no class: no column has a color.
fn no_class(c: Coloring) -> Coloring {
    Coloring {
        colors: Vec::new(),
        num_colors: 0,
        ..c
    }
}

/// The columns below `n` that `row` (increasing) does not hold: the zeros it claims.
fn zeros_of(row: &[u32], n: usize) -> impl Iterator<Item = u32> + '_ {
    let mut next = row.iter().peekable();
    (0..n as u32).filter(move |j| next.next_if_eq(&j).is_none())
}

/// The median of `|v|` over the finite values of `v`, within a factor of 2 (a power of 2):
/// one pass counting the values by binary exponent, O(1) memory. 0 when there are none or
/// the median is 0.
fn typical_size(v: &[f64]) -> f64 {
    let mut count = [0usize; 2048];
    let mut finite = 0usize;
    for x in v.iter().filter(|x| x.is_finite()) {
        count[(x.abs().to_bits() >> 52) as usize] += 1;
        finite += 1;
    }
    let (mut below, half) = (0, finite.div_ceil(2));
    for (e, &c) in count.iter().enumerate() {
        below += c;
        if below >= half && c > 0 {
            // Exponent field e (0: zero or subnormal): values in [2^(e - 1023), 2^(e - 1022)).
            return if e == 0 {
                0.0
            } else {
                f64::from_bits((e as u64) << 52)
            };
        }
    }
    0.0
}

#[cfg(test)]
mod tests {
    use super::{typical_size, Check};

    /// A linear f over a tridiagonal pattern whose every 37th row also reads a column four
    /// away, checked against the tridiagonal pattern: those rows fail (at least 95% of them,
    /// module docs) and no other, the same with the rows tested in one pass or in two halves,
    /// and with the entries' classes and places looked up (as when they do not fit).
    #[test]
    fn the_check_flags_the_rows_with_a_missed_dependency_in_one_pass_or_two_halves() {
        let n = 5000;
        let traced = crate::testing::banded(n, 1);
        let extra = |i: usize| (i % 37 == 5).then_some((i + 4) % n);
        let truth = crate::testing::from_rows(n, n, |i, r| {
            r.extend(traced.row(i).iter().map(|&j| j as usize));
            r.extend(extra(i));
        });
        let coefficient = |i: usize, j: usize| 1.0 + ((i * 7 + j * 13) % 11) as f64 / 8.0;
        let baseline: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64).collect();
        // Independent steps for each request and input, from a hash.
        let dx = |id: usize, j: usize| {
            let r = crate::rng::unit_after(crate::rng::unit_prefix(&[9, id as u64]), j as u64);
            1e-7 * (0.5 + r) * if id.is_multiple_of(2) { 1.0 } else { -1.0 }
        };
        let mut outcomes = Vec::new();
        for (halves_from, packed) in [(usize::MAX, true), (0, true), (0, false)] {
            let mut check = Check::new(traced.clone(), false).unwrap();
            check.halves_from = halves_from;
            // The entries' classes and places made in one pass or two halves, as each column's.
            let largest = (check.classes[..check.colors_len].iter())
                .map(Vec::len)
                .max()
                .unwrap_or(0);
            let (entries, bits) = super::entry_classes(
                &check.pattern,
                (&check.colors, &check.slot),
                (check.colors_len, largest),
                halves_from,
            )
            .unwrap();
            let colors = check.colors.clone();
            let looked_up = (traced.col_idx().iter())
                .map(|&j| (colors[j as usize], check.slot[j as usize]))
                .collect::<Vec<_>>();
            let unpacked = (entries.iter()).map(|&e| (e >> bits, e & ((1 << bits) - 1)));
            assert!(bits > 0 && unpacked.eq(looked_up.iter().copied()));
            check.entry_classes = if packed { entries } else { Vec::new() };
            for id in 0..2 * check.classes() {
                let class = id / 2;
                let y: Vec<f64> = (0..n)
                    .map(|i| {
                        let moved = truth.row(i).iter().map(|&j| j as usize);
                        let moved = moved.filter(|&j| colors[j] as usize == class);
                        baseline[i] + moved.map(|j| coefficient(i, j) * dx(id, j)).sum::<f64>()
                    })
                    .collect();
                let changed = |b: f64, v: f64| b.to_bits() != v.to_bits();
                check
                    .tell(id, &y, &baseline, changed, |id, j| (dx(id, j), 1.0), 0.0)
                    .unwrap();
            }
            outcomes.push(check.alarms.iter_ones().collect::<Vec<_>>());
        }
        // The missed column (i + 4) shares its class with the row's traced i + 1: the slope
        // test sees it unless the two steps' ratios happen to agree (module docs).
        let missed: Vec<usize> = (0..n).filter(|&i| extra(i).is_some()).collect();
        assert_eq!(outcomes[0], outcomes[1]);
        assert_eq!(outcomes[0], outcomes[2]);
        assert!(outcomes[0].iter().all(|i| missed.contains(i)));
        assert!(
            outcomes[0].len() * 100 >= missed.len() * 95,
            "{}",
            outcomes[0].len()
        );
    }

    #[test]
    fn the_typical_size_is_the_median_magnitude_within_a_factor_of_two() {
        assert_eq!(typical_size(&[]), 0.0);
        assert_eq!(typical_size(&[f64::NAN, f64::INFINITY]), 0.0);
        assert_eq!(typical_size(&[0.0, 0.0, 5.0]), 0.0);
        // Medians 3, 1e-9 and 1e9 among values spread over many decades and signs.
        for median in [3.0, 1e-9, 1e9] {
            let v = [
                -median * 1e-12,
                median * 1e-6,
                -median,
                median * 1e5,
                median * 1e20,
            ];
            let t = typical_size(&v);
            assert!(t <= median && median < 2.0 * t, "{median}: {t}");
        }
    }
}
