//! A probe: the set of inputs that one evaluation replaces by tagged NaNs, and what its outputs
//! say.
//!
//! Tag ids: when n fits the codec ([`codec::MAX_ID`]), input `j` always carries id `j + 1`, so a
//! decoded id names its column directly and an id of a column outside the probe is caught. For
//! larger n, the k-th input of a probe carries id `k + 1`; inputs beyond the `MAX_ID`-th of one
//! probe get an untagged NaN (they can block rows but never be named). Both schemes are sound.
//!
//! A probe of the payload planner's coarse levels holds whole blocks of adjacent inputs
//! (half of all inputs, at n = 10^6, in runs of thousands): such a probe also keeps its
//! columns as runs, and writes its tags, puts `x0` back and builds its membership bitset run
//! by run, in contiguous passes, instead of one scattered store per column (tridiagonal 10^6:
//! the whole trace 0.97x).
//!
//! # What an output says (the reading every planner uses)
//!
//! For output `i` with a finite baseline value `b_i`, after evaluating with probe `S`:
//! * bit-for-bit equal to `b_i`: no NaN of `S` reached `y_i` (a zero for every input of `S`,
//!   as far as NaN tracing can tell);
//! * a NaN carrying the id of input `j` of `S`: `(i, j)` is a dependency ([`Hit::Dep`]);
//! * anything else (a NaN with no valid id, an infinity, or a different finite number): some
//!   input of `S` reaches `y_i`, which one is unknown ([`Hit::Blocked`]). A changed finite value
//!   is counted here, not as a zero: NaN went down a branch (`if (x > 0)`) and changed the
//!   result, which is a dependency NaN tracing alone would have missed.
//!
//! Outputs not finite at the baseline are skipped: they cannot be traced.

use crate::codec::{self, Decoded};

/// The inputs (0-based, sorted, distinct) that one evaluation tags with NaN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    cols: Vec<u32>,
    global_ids: bool,
    /// The columns as runs of consecutive ones, `(first, end)`, when they come in runs of
    /// [`MIN_RUN`] on average (the coarse levels' blocks): writing, undoing and looking up
    /// the tags then go run by run, in contiguous passes. Empty otherwise.
    runs: Vec<(u32, u32)>,
}

/// The mean run length from which a probe keeps its columns as runs too.
const MIN_RUN: usize = 8;

/// The runs of consecutive columns of `cols` (sorted, distinct), or none when they are
/// shorter than [`MIN_RUN`] on average or their list cannot be allocated.
fn runs_of(cols: &[u32]) -> Vec<(u32, u32)> {
    // Kept when there are at most `most` runs: written as each ends, one compare a column,
    // and given up on at the first run past `most`.
    let most = cols.len() / MIN_RUN;
    let mut runs = Vec::new();
    if most == 0 || crate::error::reserve(&mut runs, most, "runs of a probe").is_err() {
        return Vec::new();
    }
    let (mut start, mut end) = (cols[0], cols[0] + 1);
    for &c in &cols[1..] {
        if c != end {
            if runs.len() == most {
                return Vec::new();
            }
            runs.push((start, end));
            start = c;
        }
        end = c + 1;
    }
    if runs.len() == most {
        return Vec::new();
    }
    runs.push((start, end));
    runs.shrink_to_fit();
    runs
}

/// What one output of a probe proved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// The output carried the tag of this input (0-based column).
    Dep(u32),
    /// Some input of the probe reached the output; which one is unknown.
    Blocked,
    /// The NaN left the output unchanged, but a finite step on the probe's inputs changed it:
    /// the NaN was absorbed somewhere, and some input of the probe reaches the output.
    Perturbed,
}

/// Sets bits `first..end` of `words`, whole words at once.
fn set_bits(words: &mut [u64], first: u32, end: u32) {
    let (first, end) = (first as usize, end as usize);
    let (w0, w1) = (first / 64, end / 64);
    let low = |b: usize| (1u64 << b) - 1; // bits below b (b < 64)
    if w0 == w1 {
        words[w0] |= low(end % 64) & !low(first % 64);
        return;
    }
    words[w0] |= !low(first % 64);
    words[w0 + 1..w1].fill(u64::MAX);
    if end % 64 != 0 {
        words[w1] |= low(end % 64);
    }
}

impl Probe {
    /// A probe of `cols` (sorted, distinct, each below `n`) for a function of `n` inputs.
    pub fn new(cols: Vec<u32>, n: usize) -> Probe {
        debug_assert!(
            cols.windows(2).all(|w| w[0] < w[1]),
            "probe columns must be sorted"
        );
        debug_assert!(cols.last().is_none_or(|&c| (c as usize) < n));
        Probe {
            runs: runs_of(&cols),
            cols,
            global_ids: n <= codec::MAX_ID as usize,
        }
    }

    /// The tagged inputs, sorted.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// Number of tagged inputs.
    pub fn len(&self) -> usize {
        self.cols.len()
    }

    /// Whether no input is tagged (the baseline evaluation).
    pub fn is_empty(&self) -> bool {
        self.cols.is_empty()
    }

    /// The value written into input `cols[k]`.
    pub(crate) fn tag(&self, k: usize) -> f64 {
        if self.global_ids {
            codec::encode(self.cols[k] + 1)
        } else if k < codec::MAX_ID as usize {
            codec::encode(k as u32 + 1)
        } else {
            codec::untagged()
        }
    }

    /// The probe's column named by a decoded id, if the id belongs to this probe.
    pub fn col_of(&self, id: u32) -> Option<u32> {
        if self.global_ids {
            let col = id - 1;
            self.cols.binary_search(&col).ok().map(|_| col)
        } else {
            self.cols.get(id as usize - 1).copied()
        }
    }

    /// Writes the tagged NaNs into `x` (which holds `x0` elsewhere).
    pub fn write_tags(&self, x: &mut [f64]) {
        if self.global_ids && !self.runs.is_empty() {
            // Input j's tag is a function of j alone: each run is one contiguous pass.
            for &(first, end) in &self.runs {
                for (v, c) in x[first as usize..end as usize].iter_mut().zip(first..end) {
                    // In range: global ids are used only when n fits them.
                    *v = codec::encode_in_range(c + 1);
                }
            }
            return;
        }
        for (k, &c) in self.cols.iter().enumerate() {
            x[c as usize] = self.tag(k);
        }
    }

    /// Puts `x0` back where [`Probe::write_tags`] wrote.
    pub fn restore(&self, x0: &[f64], x: &mut [f64]) {
        if !self.runs.is_empty() {
            for &(first, end) in &self.runs {
                let run = first as usize..end as usize;
                x[run.clone()].copy_from_slice(&x0[run]);
            }
            return;
        }
        for &c in &self.cols {
            x[c as usize] = x0[c as usize];
        }
    }

    /// Reads the outputs `y` of this probe against the `baseline` outputs (see the module docs),
    /// calling `hit(row, Hit)` for every output that changed, and [`Hit::Perturbed`] for the
    /// rows of `perturbed` (increasing; rows verification flagged, all unchanged in `y`).
    /// Returns how many ids came back through single precision.
    pub fn observe(
        &self,
        baseline: &[f64],
        y: &[f64],
        perturbed: &[u32],
        hit: impl FnMut(u32, Hit),
    ) -> usize {
        self.observe_ahead(baseline, y, perturbed, None::<fn(u32)>, hit)
    }

    /// [`Probe::observe`], calling `soon(row)` for each changed output [`DELAY`] changed outputs
    /// before `hit` is called for it: a chance to ask for what `hit` will read of the row.
    /// Without `soon`, each is reported as it is found.
    pub(crate) fn observe_ahead(
        &self,
        baseline: &[f64],
        y: &[f64],
        perturbed: &[u32],
        soon: Option<impl Fn(u32)>,
        hit: impl FnMut(u32, Hit),
    ) -> usize {
        let rows = 0..baseline.len().min(y.len());
        self.reader()
            .observe_rows(rows, baseline, y, perturbed, soon, hit)
    }

    /// The probe made ready to read outputs ([`Reader`]).
    pub(crate) fn reader(&self) -> Reader<'_> {
        // Large probes: membership by a bitset over the columns (one word per 64) instead of a
        // binary search per changed output; the search when the bitset cannot be allocated.
        let members = match self.cols.last() {
            Some(&last) if self.global_ids && self.cols.len() > 64 => {
                crate::error::filled(0u64, last as usize / 64 + 1, "probe members").ok()
            }
            _ => None,
        }
        .map(|mut words| {
            match self.runs.is_empty() {
                true => (self.cols.iter()).for_each(|&c| words[c as usize / 64] |= 1 << (c % 64)),
                false => {
                    (self.runs.iter()).for_each(|&(first, end)| set_bits(&mut words, first, end))
                }
            }
            words
        });
        Reader {
            probe: self,
            members,
        }
    }

    /// A short description for error messages: the first few tagged inputs (0-based).
    pub fn describe(&self) -> String {
        match self.cols.len() {
            0 => BASELINE_WORDS.to_string(),
            1 => format!("the probe tagging input {}", self.cols[0]),
            k => {
                let shown: Vec<String> = self.cols.iter().take(6).map(|c| c.to_string()).collect();
                let more = if k > 6 { ", ..." } else { "" };
                format!("the probe tagging {k} inputs ({}{more})", shown.join(", "))
            }
        }
    }
}

/// [`Probe::describe`] of the baseline (no tagged input): how error messages name it.
pub(crate) const BASELINE_WORDS: &str = "the baseline evaluation at x0";

/// A probe made ready to read its outputs: the lookup from a decoded id to the probe's column,
/// made once and shared by passes over disjoint ranges of rows (one on each core).
pub(crate) struct Reader<'p> {
    probe: &'p Probe,
    /// One bit per column below the probe's last, set for its columns (large probes).
    members: Option<Vec<u64>>,
}

impl Reader<'_> {
    /// The probe's column named by a decoded id, if the id belongs to the probe.
    fn col_of(&self, id: u32) -> Option<u32> {
        match &self.members {
            Some(words) => {
                let c = id - 1;
                let word = words.get(c as usize / 64).copied().unwrap_or(0);
                (word >> (c % 64) & 1 != 0).then_some(c)
            }
            None => self.probe.col_of(id),
        }
    }

    /// What a changed output `v` shows, and whether its tag came through single precision.
    #[inline(always)]
    pub(crate) fn hit_of(&self, v: f64) -> (Hit, bool) {
        match codec::decode(v) {
            Decoded::Tagged(id) => (self.col_of(id).map_or(Hit::Blocked, Hit::Dep), false),
            Decoded::ViaFloat(id) => match self.col_of(id) {
                Some(c) => (Hit::Dep(c), true),
                None => (Hit::Blocked, false),
            },
            Decoded::NotNan | Decoded::Unknown => (Hit::Blocked, false),
        }
    }

    /// [`Probe::observe_ahead`] over the outputs of `rows` only: `perturbed` holds the
    /// perturbed rows among them (increasing), `baseline` and `y` all outputs. Passes over
    /// disjoint ranges call `hit` for the rows the pass over all of them would, range by range.
    pub(crate) fn observe_rows(
        &self,
        rows: std::ops::Range<usize>,
        baseline: &[f64],
        y: &[f64],
        perturbed: &[u32],
        soon: Option<impl Fn(u32)>,
        mut hit: impl FnMut(u32, Hit),
    ) -> usize {
        for &i in perturbed {
            hit(i, Hit::Perturbed);
        }
        let mut via_float = 0;
        let mut report = |i: u32| {
            let (h, float) = self.hit_of(y[i as usize]);
            via_float += usize::from(float);
            hit(i, h);
        };
        // The changed outputs pass through a delay line: `soon` hears of each `DELAY` changed
        // outputs before `hit` does, in the same increasing order.
        let first = rows.start;
        let changed = (baseline[rows.clone()].iter().zip(&y[rows]).enumerate())
            .filter(|(_, (&b, &v))| b.is_finite() && b.to_bits() != v.to_bits())
            .map(|(i, _)| (first + i) as u32);
        let Some(soon) = soon else {
            changed.for_each(report);
            return via_float;
        };
        let mut line = [0u32; DELAY];
        let mut count = 0usize;
        for i in changed {
            soon(i);
            let slot = &mut line[count % DELAY];
            if count >= DELAY {
                report(*slot);
            }
            *slot = i;
            count += 1;
        }
        for k in count.saturating_sub(DELAY)..count {
            report(line[k % DELAY]);
        }
        via_float
    }
}

/// How many changed outputs ahead [`Probe::observe_ahead`] tells of one.
pub(crate) const DELAY: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_decode_to_their_columns() {
        let p = Probe::new(vec![1, 4, 7], 10);
        let x0 = vec![0.5; 10];
        let mut x = x0.clone();
        p.write_tags(&mut x);
        // Output 0 copies input 4, output 1 input 7 negated, output 2 stays, output 3 default NaN,
        // output 4 becomes a different number.
        let baseline = [1.0, 2.0, 3.0, 4.0, 5.0, f64::NAN];
        let y = [x[4] + 1.0, -x[7], 3.0, f64::NAN, 6.0, 1.0];
        let mut hits = vec![];
        p.observe(&baseline, &y, &[], |i, h| hits.push((i, h)));
        assert_eq!(
            hits,
            vec![
                (0, Hit::Dep(4)),
                (1, Hit::Dep(7)),
                (3, Hit::Blocked),
                (4, Hit::Blocked)
            ]
        );
        p.restore(&x0, &mut x);
        assert_eq!(x, x0);
    }

    /// Through the delay line, every changed output is heard of by `soon` before `hit` (by
    /// [`DELAY`] changed outputs, but for the last ones), in increasing order, with the hits
    /// decoded as without it; perturbed rows first.
    #[test]
    fn changed_outputs_are_told_ahead_in_order() {
        let p = Probe::new((0..40).collect(), 40);
        let x0 = vec![0.5; 40];
        let mut x = x0.clone();
        p.write_tags(&mut x);
        let baseline: Vec<f64> = (0..100).map(|i| i as f64).collect();
        // Every third output carries input i % 40's tag, every seventh (not third) changes to
        // another number, the rest stay.
        let y: Vec<f64> = (0..100)
            .map(|i| match (i % 3, i % 7) {
                (0, _) => x[i % 40],
                (_, 0) => -1.0,
                _ => baseline[i],
            })
            .collect();
        let events = std::cell::RefCell::new(Vec::new());
        p.observe_ahead(
            &baseline,
            &y,
            &[5],
            Some(|i| events.borrow_mut().push((i, None))),
            |i, h| events.borrow_mut().push((i, Some(h))),
        );
        let events = events.into_inner();
        let changed: Vec<u32> = (0..100).filter(|i| i % 3 == 0 || i % 7 == 0).collect();
        let hits: Vec<(u32, Hit)> = (events.iter())
            .filter_map(|&(i, h)| h.map(|h| (i, h)))
            .collect();
        let mut expected = vec![(5, Hit::Perturbed)];
        expected.extend(changed.iter().map(|&i| match i % 3 {
            0 => (i, Hit::Dep(i % 40)),
            _ => (i, Hit::Blocked),
        }));
        assert_eq!(hits, expected);
        let soon: Vec<u32> = (events.iter())
            .filter(|e| e.1.is_none())
            .map(|e| e.0)
            .collect();
        assert_eq!(soon, changed);
        for (k, &i) in changed.iter().enumerate() {
            let at = |hit: bool| {
                (events.iter())
                    .position(|&(j, h)| j == i && h.is_some() == hit)
                    .unwrap()
            };
            let told_between = (events[at(false)..at(true)].iter())
                .filter(|e| e.1.is_none())
                .count();
            // Itself and the DELAY changed outputs after it.
            assert_eq!(
                told_between,
                (DELAY + 1).min(changed.len() - k),
                "output {i}"
            );
        }
    }

    /// A probe whose columns come in runs (kept as runs) writes, undoes and recognises the
    /// same tags as one whose columns are scattered (kept as a list): runs across and along
    /// word boundaries of the membership bitset, and a column next to a run but outside it.
    #[test]
    fn runs_write_undo_and_recognise_what_the_column_list_does() {
        let n = 1000;
        let runs = [(0u32, 9u32), (63, 200), (256, 320), (321, 330), (700, 1000)];
        let cols: Vec<u32> = runs.iter().flat_map(|&(s, e)| s..e).collect();
        let p = Probe::new(cols.clone(), n);
        assert_eq!(p.runs, runs);
        let x0: Vec<f64> = (0..n).map(|j| 1.0 + j as f64).collect();
        let (mut x, mut x_ref) = (x0.clone(), x0.clone());
        p.write_tags(&mut x);
        for (k, &c) in cols.iter().enumerate() {
            x_ref[c as usize] = p.tag(k);
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&x), bits(&x_ref));
        // Every output copies one input: a tag of the probe is a dependency, any other NaN
        // (none here) blocks, an unchanged input is no hit.
        let baseline = x0.clone();
        let mut hits = vec![];
        p.observe(&baseline, &x, &[], |i, h| hits.push((i, h)));
        let want: Vec<(u32, Hit)> = cols.iter().map(|&c| (c, Hit::Dep(c))).collect();
        assert_eq!(hits, want);
        // Tags of columns just outside the runs are not the probe's.
        let mut y = baseline.clone();
        for c in [9, 62, 200, 320, 699] {
            y[c] = codec::encode(c as u32 + 1);
        }
        let mut outside = vec![];
        p.observe(&baseline, &y, &[], |i, h| outside.push((i, h)));
        assert!(
            outside.iter().all(|&(_, h)| h == Hit::Blocked),
            "{outside:?}"
        );
        assert_eq!(outside.len(), 5);
        p.restore(&x0, &mut x);
        assert_eq!(bits(&x), bits(&x0));
        // Scattered columns are kept as a list.
        assert!(Probe::new((0..100).map(|j| 3 * j).collect(), n)
            .runs
            .is_empty());
    }

    #[test]
    fn a_tag_of_a_column_outside_the_probe_blocks() {
        let p = Probe::new(vec![2], 10);
        let mut hits = vec![];
        p.observe(&[0.0], &[codec::encode(4)], &[], |i, h| hits.push((i, h)));
        assert_eq!(hits, vec![(0, Hit::Blocked)]);
    }

    #[test]
    fn local_ids_for_large_n() {
        let n = codec::MAX_ID as usize + 10;
        let p = Probe::new(vec![5, n as u32 - 1], n);
        assert_eq!(p.col_of(2), Some(n as u32 - 1));
        assert_eq!(p.col_of(3), None);
        let mut x = vec![0.0; n];
        p.write_tags(&mut x);
        let mut hits = vec![];
        p.observe(
            &[1.0, 1.0],
            &[x[5], std::hint::black_box(x[n - 1]) as f32 as f64],
            &[],
            |i, h| hits.push((i, h)),
        );
        assert_eq!(hits, vec![(0, Hit::Dep(5)), (1, Hit::Dep(n as u32 - 1))]);
    }
}
