//! Peeling: rows recognised dense for their cost alone, traced one dependency a probe, and
//! blind rows with many candidates, traced by halving.
//!
//! # The problem
//!
//! Before the last two levels a row whose unknown columns would cost a quarter of the probes the
//! cap leaves (about one probe each there) is recognised dense (`split.rs`), its unknown columns
//! kept as assumed entries. That is a rule about cost, not evidence: a row can come there with
//! nearly every column unknown and few dependencies. A lone row (a scalar objective, m = 1)
//! has nothing to share its probes with: each level puts all its P blocks in one probe, which
//! changes with one tag while it holds an unknown dependency, so a level teaches one
//! dependency and proves nothing zero. One row of 20 spread dependencies among 10^4 columns
//! came out of 14 evaluations with 9987 assumed entries, all but 7 of them zeros, and a
//! gradient colored on that costs one evaluation per column.
//!
//! # Peeling
//!
//! A row's probe holding all its unknown columns and none of its known dependencies either
//! leaves the row unchanged, and every one of them is zero, or changes it with the tag of a
//! dependency it did not know (whatever NaN wins, it is one of the probe's), which the next
//! probe leaves out. So a row with u unknown dependencies is resolved in u + 1 probes of its
//! own, at column granularity, with no level in between. When refining ends, each row
//! recognised dense for its cost alone, with a known dependency (its tags come back) and whose
//! sampled blocks did not show it dense (`wide.rs`), is peeled, at most `WIDE_ROWS_MOST` (64)
//! rows at a time: a step holds one probe per such row, and each told
//! probe is read for every row peeled (a change with a new tag teaches any of them, and a
//! probe holding nearly every column changes the others with their own tags: thirty rows of
//! 100 learn about thirty dependencies a step each).
//!
//! More such rows wait their turn, their columns kept, and take the place of rows that take no
//! more probes (resolved, stopped, or at their limit: their unknown columns are then kept as
//! assumed entries, and the others' probes teach them nothing more); unless the rows let go so
//! far were mostly dense (their samples all changed), or they are more than one traced row in
//! `PEELED_PART` (32): then the pattern is nearly dense there, its exact rows would color no
//! cheaper, and they stay recognised dense (1000 x 2000 with 5% of the entries: 79
//! evaluations, where peeling its rows in turns took 2222 and left most of them assumed). A
//! hundred rows of 100 spread dependencies among random 5 per row at n = 2 x 10^4, checked:
//! 277 evaluations and 1950310 assumed entries when only 64 were peeled and the others kept
//! dense, 1237 exact now (sixty-four: 948); 500 such rows: 300 and 9911014, 3905 exact.
//!
//! A change that names no column splits the probe's columns in two for the next step, down to
//! the one column that is the dependency: a NaN without payload, a finite change, or a change
//! only verification saw (an absorbed NaN: a row traced again after failing the check, every
//! probe verified; the dependency then of kind [`crate::pattern::EntryKind::Perturbation`]).
//! A row stops, its unknown columns kept as assumed entries, after `unknown / 8` probes of its
//! own (at least `DENSE_MIN`), or when its own probe names a column already proven zero. The
//! peeling spends at most what the cap leaves, so the one-hot bound holds. Refining that ends
//! with one probe per column (the last level's few columns left, or a level where refining
//! no longer pays) is followed by the peeling too, the columns a probe held alone left out: it
//! ended the trace, and thirty rows of 100 among random 5 per row at n = 2 x 10^4 under the
//! smallest NaN winning kept 557490 assumed entries (309 evaluations with the check; 959 now,
//! exact; a hundred such rows 274 and 1950094, now 4210, exact).
//!
//! # Blind rows
//!
//! A blind row (no tag ever came back for it: a black box that makes its own NaNs) is narrowed
//! at each level by group testing: its blocks spread over the level's probes, and those that
//! leave it unchanged prove their blocks zero. The palette is capped by what the coarse
//! allowance leaves, and at the finest levels a row of 20 spread dependencies among 10^4
//! columns kept every one of its 132, 264, 528 blocks, and its 1056 candidates took one probe
//! each at the last level (1204 evaluations). Halving does better: a group whose probe changed
//! the row naming no column holds a dependency; it is split in two and only its first half
//! probed: unchanged, the half is zero and the dependency is in the second half, which is split
//! in turn without a probe of its own; changed, the second half is probed at the next step (it
//! may hold another). A dependency alone in its group costs one probe a halving, d of them
//! among u columns about `d log2(u / d)` probes. (The inference holds only while the second
//! half keeps every column it had: one learned or proven zero meanwhile sends it to be probed;
//! a first half whose one column was found to be the dependency does too.) So a split that
//! leaves a blind row at least `BLIND_PEEL_FROM` (64) candidate blocks before the last level
//! takes it out of refining (`take_blind_rows`), its candidates' columns kept for the peeling,
//! when it holds half of all blocks (a wide row: an arrowhead's dense row whose payloads are
//! lost) or when at most 64 rows in all are blind (a lone row, or a few among rows whose tags
//! come back); at most 64 such rows in all. When at most `BLIND_FEW_ROWS` (8) rows are blind,
//! `BLIND_PEEL_FEW` (16) candidate blocks are enough: a lone blind row of a few dependencies
//! never holds 64 (theirs and their siblings), and took one probe per column of its last
//! candidates (`steps` example, one blind row among 10^4 columns without the check: 5
//! dependencies 351 evaluations -> 115, 10 628 -> 183, 20 348 -> 318, 100 1133 -> 1087;
//! among random 5 per row at 2 x 10^4, checked, a blind row of 20 250 evaluations with one
//! entry too many -> 467, exact). Taking rows of 16 blocks among more blind rows lost
//! exactness to the cap at n = 100 to 1000 (random 5 per row without payloads: 131 -> 956
//! evaluations and assumed entries at 1000). When every row is blind and each holds fewer
//! than half the blocks (random 12 per row without payloads), the levels' group testing
//! shares its probes among the rows and stays cheaper. A blind row's limit is one probe per
//! unknown column (the last level's cost).
//!
//! # Dense rows
//!
//! A dense row would take one probe per column. In its first step each row with more than 128
//! unknown columns also takes `SAMPLES` (3) probes of `SAMPLE_COLUMNS` (32) of them chosen by a
//! hash: a row whose unknown dependencies are a fraction f of its unknown columns changes in
//! one with odds `1 - (1 - f)^32` (0.27 at 1%, 0.97 at 10%), and a row every sample changed is
//! taken for dense and stops. An unchanged sample proves its columns zero, and a changed one
//! names a dependency, so the samples are not lost on a sparse row.
//!
//! # Cost
//!
//! One row among 10^4 columns, without the check (`steps` example, `one` family): 20 spread
//! dependencies, 14 evaluations and 9987 assumed entries before, 27 exact now; 100: 14 and
//! 9987, 111 exact; 1000: 14 and 9987, 1045 exact; a dense row 14, 18 now. Random 5 per
//! row at n = 2 x 10^4 with thirty rows of 100 spread dependencies, checked: 268 evaluations
//! and 559704 assumed entries, 733 exact. A row of 20 whose `fmax` absorbs one dependency,
//! traced again after the check: 19974 zeros kept as assumed entries before, exact now.
//!
//! Blind: one row of 20 spread dependencies among 10^4 columns, 1204 evaluations before, 348
//! when peeled (424 probing both halves of every split group; 318 taken from 16 blocks, as a
//! lone row now is); of 100, 5124 and 1133 (1436; 1087 from 16 blocks); of 20
//! among 10^5 columns, 2941 and 617 (800); a row of 100 among random 5 per row whose tags come
//! back, n = 2 x 10^4, checked: 2320 and 1356 (1713); a blind dense row
//! among them 211 and 197. The fingerprint suite (1168 traces): 131916 -> 130724 evaluations,
//! no pattern less exact: the arrowheads whose payloads are lost (296 -> 40 at n = 257, 63 ->
//! 50 at 1000, 82 -> 69 at 2 x 10^4; random 12 per row at 257 302 -> 299); no trace with
//! payloads changed.

use super::split::{retain_candidates, BlindKind};
use super::wide::WIDE_ROWS_MOST;
use super::{block_range, Mode, Refine, DENSE_MIN};
use crate::error::{filled, push, reserve, Result};
use crate::probe::{Hit, Probe};

/// A hash of column `j` under `salt` (multiplicative, as `wide.rs`'s of blocks).
fn mix(salt: u64, j: u32) -> u64 {
    (salt ^ u64::from(j).wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

/// A blind row with `BLIND_PEEL_FEW` candidate blocks or more (fewer than `BLIND_PEEL_FROM`) is
/// taken out of refining when at most this many rows are blind (module docs).
const BLIND_FEW_ROWS: usize = 8;

/// A row's own probes are at most its unknown columns at the start over this.
const OWN_PROBES_DIVISOR: usize = 8;

/// Rows recognised dense for their cost alone are peeled when they are at most one traced row
/// in this many, or `WIDE_ROWS_MOST` (module docs).
const PEELED_PART: usize = 32;

/// Sample probes a row takes in its first peeling step, each of `SAMPLE_COLUMNS` of its
/// unknown columns: when all change, the row is taken for dense (module docs).
const SAMPLES: usize = 3;
const SAMPLE_COLUMNS: usize = 32;

/// A row being peeled.
#[derive(Debug)]
struct Row {
    row: u32,
    /// Its columns still unknown (sorted), none a known dependency.
    unknown: Vec<u32>,
    /// Its known dependencies (sorted).
    deps: Vec<u32>,
    /// Own probes it may still take.
    left: usize,
    /// Its own probe changed it with no new tag, or its samples showed it dense: it takes no
    /// more.
    stopped: bool,
    /// Whether it took its samples, and how many of them changed it.
    sampled: bool,
    samples_changed: usize,
    /// Its groups: column ranges whose unknown columns make one own probe each (all columns at
    /// first; a group whose change named no column is split in two), and where each stands.
    groups: Vec<(u32, u32, Told)>,
}

impl Row {
    /// Whether it takes no more probes: stopped, resolved, or its open groups past what it may
    /// still take.
    fn done(&self) -> bool {
        let open = self.groups.iter().filter(|g| g.2 == Told::Open).count();
        self.stopped || self.unknown.is_empty() || self.left < open
    }

    /// Takes column `j` for a dependency of the row, recorded in `learned`, if it is one of its
    /// unknown columns; returns whether it was.
    fn learn(&mut self, j: u32, learned: &mut Vec<(u32, u32)>) -> Result<bool> {
        let Ok(at) = self.unknown.binary_search(&j) else {
            return Ok(false);
        };
        self.unknown.remove(at);
        let at = self.deps.partition_point(|&d| d < j);
        reserve(&mut self.deps, 1, "a row's dependencies")?;
        self.deps.insert(at, j);
        push(learned, (self.row, j), "dependencies")?;
        Ok(true)
    }
}

/// Where a group of a row stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Told {
    /// To be probed (its probe named a new dependency, or was not told: probed again).
    Open,
    /// Its unknown columns are proven zero.
    Done,
    /// Its one column is a dependency (it changed the row alone).
    Found,
    /// Known to hold a dependency (its probe changed the row naming no column; `absorbed`:
    /// only verification saw it): split in two, its first half probed.
    Split { absorbed: bool },
    /// The second half of a split group, not probed: if the first half (the group at `first`)
    /// turns out zero while this one still holds `count` unknown columns, it holds the
    /// dependency; else it is probed.
    After {
        first: usize,
        count: usize,
        absorbed: bool,
    },
}

/// What a probe of a peeling step is: the own probe of row `rows[r]`, or one of its samples.
#[derive(Clone, Copy, Debug)]
struct Owner {
    r: usize,
    /// The group whose probe it is; `None` for a sample.
    group: Option<usize>,
}

/// The peeling's state (module docs).
#[derive(Debug, Default)]
pub(super) struct Peel {
    /// Rows recognised dense for their cost alone, as the splits found them.
    pub(super) found: Vec<u32>,
    /// Blind rows taken out of refining (`take_blind_rows`).
    blind: Vec<u32>,
    /// The rows peeled now, at most `WIDE_ROWS_MOST`.
    rows: Vec<Row>,
    /// Rows waiting for a place among them (sorted): their columns stay in the planner's
    /// `dense` until then.
    queue: Vec<u32>,
    /// Rows done with, and of those the ones their samples showed dense.
    retired: usize,
    retired_dense: usize,
    /// Whose probe each probe of the current step is.
    owners: Vec<Owner>,
    /// Probes the peeling may still ask in all.
    budget: usize,
    /// The dependencies learned, to be merged when the peeling ends, and of those the ones
    /// only verification saw (kind [`crate::pattern::EntryKind::Perturbation`]).
    learned: Vec<(u32, u32)>,
    absorbed: Vec<(u32, u32)>,
}

/// Pushes row `i`'s column `ranges` (increasing, apart) onto `dense` as runs: ranges that
/// touch are joined.
fn push_runs(
    dense: &mut Vec<(u32, u32, u32)>,
    i: u32,
    ranges: impl Iterator<Item = (u32, u32)>,
) -> Result<()> {
    let mut run: Option<(u32, u32)> = None;
    for (start, end) in ranges {
        run = match run {
            Some((s, e)) if e == start => Some((s, end)),
            Some((s, e)) => {
                push(dense, (i, s, e), "dense rows")?;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = run {
        push(dense, (i, s, e), "dense rows")?;
    }
    Ok(())
}

/// The unknown columns (sorted) of group `(start, end, _)`.
fn group_columns(unknown: &[u32], (start, end, _): (u32, u32, Told)) -> &[u32] {
    let from = unknown.partition_point(|&j| j < start);
    let to = unknown.partition_point(|&j| j < end);
    &unknown[from..to]
}

/// Makes a row's groups for the next step: drops those resolved or with no unknown column;
/// splits those known to hold a dependency in two at the middle of their unknown columns, the
/// first half to be probed and the second waiting on it ([`Told::After`]), or takes the one
/// column left for the dependency (into `learned`, and `absorbed` when only verification saw
/// it); and decides each waiting half from its first half's outcome.
fn split_groups(
    row: &mut Row,
    learned: &mut Vec<(u32, u32)>,
    absorbed: &mut Vec<(u32, u32)>,
) -> Result<()> {
    let mut next = Vec::new();
    reserve(&mut next, 2 * row.groups.len(), "groups")?;
    let groups = std::mem::take(&mut row.groups);
    for &group in &groups {
        let count = group_columns(&row.unknown, group).len();
        let holds = match group.2 {
            Told::Done | Told::Found => continue,
            _ if count == 0 => continue,
            Told::Split { absorbed } => Some(absorbed),
            // The first half proven zero, and no column of this one learned or proven since
            // the split: the dependency the whole group held is here.
            Told::After {
                first,
                count: made,
                absorbed,
            } if groups[first].2 == Told::Done && count == made => Some(absorbed),
            _ => None,
        };
        match holds {
            None => next.push((group.0, group.1, Told::Open)),
            Some(was_absorbed) if count == 1 => {
                let j = group_columns(&row.unknown, group)[0];
                if row.learn(j, learned)? && was_absorbed {
                    push(absorbed, (row.row, j), "dependencies")?;
                }
            }
            Some(was_absorbed) => {
                let part = group_columns(&row.unknown, group);
                let mid = part[count / 2];
                let waiting = Told::After {
                    first: next.len(),
                    count: count - count / 2,
                    absorbed: was_absorbed,
                };
                next.push((group.0, mid, Told::Open));
                next.push((mid, group.1, waiting));
            }
        }
    }
    row.groups = next;
    Ok(())
}

impl Refine {
    /// Takes blind rows (no known dependency) with many candidate blocks at the level a split
    /// just made out of refining, their candidates' columns kept for the peeling (module docs):
    /// those of `found` (sorted, with how many blocks they hold) that hold half of all blocks;
    /// those with at least `BLIND_PEEL_FROM` when at most `WIDE_ROWS_MOST` rows in all are blind
    /// (`blind_rows`); those with at least `BLIND_PEEL_FEW` when at most `BLIND_FEW_ROWS` are;
    /// as long as the rows peeled stay at most `WIDE_ROWS_MOST`.
    pub(super) fn take_blind_rows(
        &mut self,
        found: Vec<(u32, BlindKind)>,
        blind_rows: usize,
    ) -> Result<()> {
        let few = blind_rows <= WIDE_ROWS_MOST;
        let mut rows = Vec::new();
        reserve(&mut rows, found.len(), "rows to peel")?;
        let lone = blind_rows <= BLIND_FEW_ROWS;
        let taken = |kind: BlindKind| match kind {
            BlindKind::Wide => true,
            BlindKind::Many => few,
            BlindKind::Some => lone,
        };
        rows.extend(found.iter().filter(|f| taken(f.1)).map(|f| f.0));
        if rows.is_empty()
            || self.peel.blind.len() + rows.len() > WIDE_ROWS_MOST
            || self.cap == usize::MAX
        {
            return Ok(());
        }
        // Their candidate blocks' columns, as a dense row's.
        for &i in &rows {
            let blocks = &self.cand_idx[self.cand_ptr[i as usize]..self.cand_ptr[i as usize + 1]];
            let (shift, n) = (self.shift, self.n);
            let ranges = blocks.iter().map(|&b| block_range(b, shift, n));
            push_runs(&mut self.dense, i, ranges)?;
        }
        retain_candidates((&mut self.cand_ptr, &mut self.cand_idx), |i, _, _, _| {
            Ok(rows.binary_search(&(i as u32)).is_err())
        })?;
        self.cand_probe.truncate(self.cand_idx.len());
        reserve(&mut self.peel.blind, rows.len(), "rows to peel")?;
        self.peel.blind.extend_from_slice(&rows);
        Ok(())
    }

    /// The column ranges kept for the blind rows taken out of refining (`take_blind_rows`), not
    /// peeled yet: one probe per column, when the trace ends so, resolves them as candidates.
    pub(super) fn blind_ranges(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (self.dense.iter())
            .filter(|d| self.peel.blind.contains(&d.0))
            .map(|d| (d.1, d.2))
    }

    /// Starts peeling when refining has ended (module docs): takes the rows to peel out of the
    /// dense rows' kept columns. Returns whether there is any.
    pub(super) fn start_peel(&mut self) -> Result<bool> {
        let mut found = std::mem::take(&mut self.peel.found);
        let mut blind = std::mem::take(&mut self.peel.blind);
        // More than one traced row in `PEELED_PART` (and than `WIDE_ROWS_MOST`): a nearly dense
        // pattern, where the exact rows would color no cheaper; they stay recognised dense.
        let traced = self.baseline.iter().filter(|b| b.is_finite()).count();
        if found.len() > WIDE_ROWS_MOST.max(traced / PEELED_PART) || self.cap == usize::MAX {
            found.clear();
        }
        reserve(&mut found, blind.len(), "rows to peel")?;
        found.extend_from_slice(&blind);
        found.sort_unstable();
        found.dedup();
        if found.is_empty() {
            return Ok(false);
        }
        self.wide.end_step();
        self.dense.sort_unstable();
        // The blind rows first (at most `WIDE_ROWS_MOST`, `take_blind_rows`: their kept columns
        // are candidates to one probe per column, not assumed entries), then the costly ones in
        // row order; past `WIDE_ROWS_MOST` they wait their turn (`activate`).
        blind.sort_unstable();
        let is_blind = |i: &u32| blind.binary_search(i).is_ok();
        let mut queue = Vec::new();
        reserve(&mut queue, found.len(), "rows to peel")?;
        queue.extend(found.iter().copied().filter(|i| !is_blind(i)));
        let room = WIDE_ROWS_MOST.saturating_sub(blind.len()).min(queue.len());
        let mut first = Vec::new();
        reserve(&mut first, blind.len() + room, "rows to peel")?;
        first.extend_from_slice(&blind);
        first.extend(queue.drain(..room));
        first.sort_unstable();
        self.peel.queue = queue;
        self.peel.rows = Vec::new();
        self.activate(&first, &blind)?;
        self.peel.budget = self.cap.saturating_sub(self.asked);
        self.mode = Mode::Peel;
        Ok(true)
    }

    /// Makes `rows` (sorted) peeled rows, their unknown columns taken out of the kept columns
    /// of `dense`; `blind` (sorted) are blind rows, which may take one probe per column.
    fn activate(&mut self, rows: &[u32], blind: &[u32]) -> Result<()> {
        reserve(&mut self.peel.rows, rows.len(), "rows to peel")?;
        for &i in rows {
            let deps = self.deps(i as usize);
            let from = self.dense.partition_point(|d| d.0 < i);
            let to = self.dense.partition_point(|d| d.0 <= i);
            let mut unknown = Vec::new();
            // Not the columns a probe per column held alone: told like any row's.
            let told_alone = |j: u32| self.onehot_told.get(j as usize).is_some_and(|b| *b);
            for &(_, s, e) in &self.dense[from..to] {
                reserve(&mut unknown, (e - s) as usize, "a row's unknown columns")?;
                unknown
                    .extend((s..e).filter(|&j| deps.binary_search(&j).is_err() && !told_alone(j)));
            }
            let mut known = Vec::new();
            reserve(&mut known, deps.len(), "a row's dependencies")?;
            known.extend_from_slice(deps);
            // A blind row's changes name no column: each of its dependencies takes a halving
            // per level of its group, and it may take as many probes as it has columns.
            let left = match blind.binary_search(&i).is_ok() {
                true => unknown.len(),
                false => DENSE_MIN.max(unknown.len() / OWN_PROBES_DIVISOR),
            };
            self.peel.rows.push(Row {
                row: i,
                unknown,
                deps: known,
                left,
                stopped: false,
                sampled: false,
                samples_changed: 0,
                groups: vec![(0, self.n as u32, Told::Open)],
            });
        }
        self.dense.retain(|d| rows.binary_search(&d.0).is_err());
        Ok(())
    }

    /// Lets go of the peeled rows that take no more probes (their unknown columns kept as
    /// assumed entries) and gives their places to rows of the queue, unless the rows let go
    /// so far were mostly dense (their samples all changed): then the pattern is nearly dense
    /// there, and the rows waiting stay recognised dense.
    fn retire_and_activate(&mut self) -> Result<()> {
        let peel = &mut self.peel;
        // With no row waiting, a row that takes no more probes stays: the others' probes may
        // still teach it dependencies.
        if peel.queue.is_empty() {
            return Ok(());
        }
        for row in peel.rows.iter().filter(|row| row.done()) {
            peel.retired += 1;
            peel.retired_dense += usize::from(row.sampled && row.samples_changed == SAMPLES);
            let ranges = row.unknown.iter().map(|&j| (j, j + 1));
            push_runs(&mut self.dense, row.row, ranges)?;
        }
        peel.rows.retain(|row| !row.done());
        let mostly_dense = 2 * peel.retired_dense > peel.retired;
        let room = WIDE_ROWS_MOST.saturating_sub(peel.rows.len());
        if room == 0 || mostly_dense {
            return Ok(());
        }
        let take = room.min(peel.queue.len());
        let next: Vec<u32> = peel.queue.drain(..take).collect();
        // The kept columns of the rows let go sit after the others: sorted again for the look-up.
        self.dense.sort_unstable();
        self.activate(&next, &[])
    }

    /// The next peeling step: one probe per row still peeled, within the budget; none when the
    /// peeling is over (its rows' unknown columns are then kept as assumed entries).
    pub(super) fn peel_step(&mut self) -> Result<Vec<Probe>> {
        let peel = &mut self.peel;
        for row in &mut peel.rows {
            // Every sample changed it: dense (one probe per column would resolve it).
            row.stopped |= row.sampled && row.samples_changed == SAMPLES;
            split_groups(row, &mut peel.learned, &mut peel.absorbed)?;
        }
        self.retire_and_activate()?;
        let peel = &mut self.peel;
        let mut owners = Vec::new();
        for (r, row) in peel.rows.iter().enumerate() {
            if row.done() {
                continue;
            }
            for g in (0..row.groups.len()).filter(|&g| row.groups[g].2 == Told::Open) {
                push(&mut owners, Owner { r, group: Some(g) }, "probes")?;
            }
            // Samples are worth taking only where they leave most columns out.
            if !row.sampled && row.unknown.len() > 4 * SAMPLE_COLUMNS {
                for _ in 0..SAMPLES {
                    push(&mut owners, Owner { r, group: None }, "probes")?;
                }
            }
        }
        if owners.is_empty() || owners.len() > peel.budget {
            self.end_peel()?;
            self.merge_deps()?;
            self.mode = Mode::Done;
            return Ok(Vec::new());
        }
        let mut probes = Vec::new();
        reserve(&mut probes, owners.len(), "probes")?;
        let mut hashed = Vec::new();
        for (k, owner) in owners.iter().enumerate() {
            let row = &mut peel.rows[owner.r];
            let mut cols = Vec::new();
            match owner.group {
                Some(g) => {
                    row.left -= 1;
                    let part = group_columns(&row.unknown, row.groups[g]);
                    reserve(&mut cols, part.len(), "probe columns")?;
                    cols.extend_from_slice(part);
                }
                None => {
                    // The row's unknown columns of least hash (of the row, the column and the
                    // probe): independent samples.
                    row.sampled = true;
                    hashed.clear();
                    reserve(&mut hashed, row.unknown.len(), "a row's unknown columns")?;
                    let salt = (u64::from(row.row) << 32) ^ k as u64;
                    hashed.extend(row.unknown.iter().map(|&j| (mix(salt, j), j)));
                    hashed.select_nth_unstable(SAMPLE_COLUMNS);
                    reserve(&mut cols, SAMPLE_COLUMNS, "probe columns")?;
                    cols.extend(hashed[..SAMPLE_COLUMNS].iter().map(|&(_, j)| j));
                    cols.sort_unstable();
                }
            }
            probes.push(Probe::new(cols, self.n));
        }
        peel.budget -= owners.len();
        self.asked += owners.len();
        self.told = filled(false, owners.len(), "probes told")?;
        peel.owners = owners;
        Ok(probes)
    }

    /// Reads probe `k` of a peeling step for every row peeled (module docs): its owner's
    /// output unchanged clears the owner's unknown columns; a new tag teaches any row. Returns
    /// how many of the rows' tags came through single precision.
    pub(super) fn tell_peel(
        &mut self,
        k: usize,
        probe: &Probe,
        y: &[f64],
        perturbed: &[u32],
    ) -> Result<usize> {
        let reader = probe.reader();
        let owner = self.peel.owners.get(k).copied();
        let cols = probe.cols();
        let peel = &mut self.peel;
        let mut via_float = 0;
        for (r, row) in peel.rows.iter_mut().enumerate() {
            let i = row.row;
            let (b, v) = (self.baseline[i as usize], y[i as usize]);
            let flagged = perturbed.binary_search(&i).is_ok();
            // The row's own group probe, or its sample.
            let group = owner.filter(|o| o.r == r).map(|o| o.group);
            let (own, sample) = (matches!(group, Some(Some(_))), group == Some(None));
            if b.to_bits() == v.to_bits() && !flagged {
                if own || sample {
                    // The probe held unknown columns of the row and none of its known
                    // dependencies: all zero.
                    row.unknown.retain(|j| cols.binary_search(j).is_err());
                }
                if let Some(Some(g)) = group {
                    row.groups[g].2 = Told::Done;
                }
                continue;
            }
            row.samples_changed += usize::from(sample);
            let hit = match flagged {
                true => Hit::Perturbed,
                false => {
                    let (hit, float) = reader.hit_of(v);
                    via_float += usize::from(float);
                    hit
                }
            };
            match (hit, group) {
                // A tag learned from another probe of the step after this one was made is no
                // reason to stop.
                (Hit::Dep(j), _) => {
                    let new = row.learn(j, &mut peel.learned)?;
                    row.stopped |= !new && own && row.deps.binary_search(&j).is_err();
                }
                // A change that names no column (a NaN without payload, a finite change, or
                // one only verification saw: an absorbed NaN) in the row's own group: one
                // column left is the dependency; more are split in two for the next step.
                (_, Some(Some(g))) => match cols {
                    &[j] => {
                        if row.learn(j, &mut peel.learned)? && hit == Hit::Perturbed {
                            push(&mut peel.absorbed, (i, j), "dependencies")?;
                        }
                        row.groups[g].2 = Told::Found;
                    }
                    _ => {
                        row.groups[g].2 = Told::Split {
                            absorbed: hit == Hit::Perturbed,
                        }
                    }
                },
                _ => {}
            }
        }
        Ok(via_float)
    }

    /// Ends the peeling: each row's unknown columns are kept as assumed entries (runs of
    /// columns in `dense`), and its learned dependencies go to be merged.
    pub(super) fn end_peel(&mut self) -> Result<()> {
        // The rows still waiting keep their columns in `dense`, as assumed entries.
        self.peel.queue = Vec::new();
        for row in std::mem::take(&mut self.peel.rows) {
            let ranges = row.unknown.iter().map(|&j| (j, j + 1));
            push_runs(&mut self.dense, row.row, ranges)?;
        }
        let learned = std::mem::take(&mut self.peel.learned);
        reserve(&mut self.new_deps, learned.len(), "dependencies")?;
        self.new_deps.extend_from_slice(&learned);
        let absorbed = std::mem::take(&mut self.peel.absorbed);
        reserve(&mut self.pert_deps, absorbed.len(), "dependencies")?;
        self.pert_deps.extend_from_slice(&absorbed);
        Ok(())
    }

    /// Whether probe `k` of a peeling step, with outputs `y`, proves a zero that the peeling
    /// would use: its owner's output unchanged.
    pub(super) fn peel_claims(&self, k: usize, y: &[f64]) -> bool {
        (self.peel.owners.get(k)).is_some_and(|o| {
            let i = self.peel.rows[o.r].row as usize;
            self.baseline[i].to_bits() == y[i].to_bits()
        })
    }
}
