//! Payload-tagged tracing, coarse to fine over contiguous blocks of inputs (the default).
//!
//! # State
//!
//! For every traceable row `i` the planner keeps the trinary knowledge of NaN-propagation
//! tracing, compressed:
//! * `deps(i)`: columns proven to reach `y_i` (a decoded tag, or a change when `i` had a single
//!   block in the probe at the last level);
//! * `cand(i)`: *candidate blocks* at the current level: aligned blocks of `2^s` adjacent
//!   columns in which every column not in `deps(i)` is still unknown for row `i`;
//! * every other column is proven zero for row `i`.
//!
//! # What a probe proves
//!
//! A candidate block `B` of row `i` is *probeable* (P) when it holds no known dependency of
//! `i`; a block holding one is a Q block of row `i`. A probe holding a Q block of row `i` turns
//! `y_i` NaN whatever else it holds, so it proves nothing about row `i`'s other blocks
//! (shadowing). For a probeable `B` in probe `S` with no Q block of row `i`:
//! * `y_i` unchanged (bit for bit): every column of every P block of row `i` in `S` is zero;
//! * `y_i` carries the tag of column `j`: `(i, j)` is proven (a decoded tag is a proof for any
//!   row, whatever else the probe holds); the blocks stay candidates, minus `j`;
//! * anything else (unknown NaN, Inf, a different number): the blocks stay candidates.
//!
//! # A step
//!
//! Each step colors the probed blocks (those probeable for some row); each color class is one
//! probe, and the classes form one batch that a parallel driver can run at once. Conflicts:
//! * a P block and a Q block of the same row in one probe waste that P block for the row:
//!   a *hard* conflict;
//! * two P blocks of the same row may share a probe (an unchanged output proves both zero;
//!   a change keeps both): a *soft* conflict, counted and spread, never forbidden at coarse
//!   levels (but a level that would put two P blocks of most parked rows in one probe, while
//!   rows still learn, is colored again with them apart: `level.rs`, `APART_HIT_RATE`);
//! * at the last level (single columns) every conflict is hard: a proper partial distance-2
//!   coloring of rows x columns, so each tested candidate sits alone among its row's columns
//!   and a change proves it, an unchanged output disproves it; except between two candidates
//!   of a quiet row ("The last level" below).
//!
//! Greedy coloring in natural block order; a block takes the color with the fewest (hard, soft)
//! conflicts and opens a new color only on a hard conflict. Where that takes 3 colors or more
//! at a coarse level once the rows have settled, a saturation order of the hard conflicts may
//! need fewer (a 2-D grid whose lines are not a power of two long: the Bratu residual at
//! n = 10^6, 9 -> 7 probes at the level of blocks of 128); the level is then colored again class
//! by class, by the same rule (`refine/saturation.rs`). At coarse levels the palette is
//! capped at `2 q + 2` (q = most Q blocks of one row): patterns without locality (random
//! sparse) make the hard-conflict graph nearly complete at every coarse level, and a capped,
//! conflict-minimizing coloring still proves most zeros of every row, since a row is blocked only
//! in the few colors holding its dependencies. Rows with many dependencies (at least 20 Q
//! blocks) can still lose too many P blocks to hard conflicts under that cap: their candidates
//! pile up for the last level, where every conflict is hard. When a coarse level's coloring
//! leaves one in 8 of the listed blocks untested that way, the cap grows by a quarter for the
//! levels after it (random 32 per row at n = 10^5: 2906 -> 2167 evaluations;
//! `level.rs`, `grows_cap`). A row left out of a coarse level's coloring because it holds half its
//! blocks (*wide*) is tested only in probes holding none of its Q blocks; when its known
//! dependencies do not fill 3/4 of its blocks, its P blocks no colored probe tests (a blind
//! row's all) go to probes of its own, added to the step (`refine/wide.rs`): a row of 100
//! spread dependencies among sparse ones is traced exactly instead of kept as n assumed
//! entries, and a sampled block of each tells a dense one, blind or not, within two or three
//! levels. After the step every surviving candidate block
//! is split in two (in four once the rows have settled: "Termination and cost"), parts
//! without an unknown column are dropped, and the next level starts.
//!
//! *Blind* rows, with no known dependency among their blocks (no tag came back: a black box
//! that makes its own NaNs and drops the payloads), have no Q block, so no hard conflict would
//! ever separate their blocks: every block would share one probe, every row would keep every
//! block, and the candidates would grow to m x n. For them a soft conflict also opens a new
//! color, up to the cap: group testing, which halves a banded row's candidates at every level
//! (tridiagonal n = 2 x 10^4 without payloads: 20016 evaluations before, 59 now). The cap of
//! a level with blind rows is at least half the blocks of their lists (all but the longest
//! one in 64: `level.rs`, `blind_palette`), within what the coarse allowance leaves for each
//! level to come: a row whose dependencies lie apart has their blocks and as many siblings,
//! and a sibling is proven zero only in a probe holding none of the others (the 2-D stencil
//! on a 141 x 141 grid without payloads: 833 evaluations under a cap of 4, 115 now; random 5
//! per row at n = 2 x 10^4: 20055, one probe per column, 215 now). Rows with a tag never count
//! as blind, so traces with payloads are unchanged. A blind row left with at least 64 candidate
//! blocks before the last level, holding half of all blocks or among at most 64 blind rows (or
//! with 16, among at most 8), is taken out of refining and peeled by halving instead
//! (`refine/peel.rs`): one row of 20 spread dependencies among 10^4 columns, 1204 evaluations
//! -> 318; of 5, 351 -> 115.
//!
//! The coloring is the hot loop on patterns without locality (each row's blocks are looked at
//! once per block of the row). Two things keep it cheap: rows with the same list of blocks as
//! the row before (a band's rows inside one block) share one list, weighted by their count,
//! so the counts and the coloring are the ones every row apart would give; and each row keeps
//! the colors its blocks took so far in one short contiguous list (the block list it no longer
//! needs once transposed), with its bounds and weight in one entry, and the entries and lists
//! of the rows a few ahead are prefetched, so coloring a block reads one list per row instead of
//! one scattered color per block of the row. At coarse levels of patterns without locality,
//! where the palette is capped at 16 colors or fewer, a row keeps a tally instead (how many of
//! its P and Q blocks took each color, 32 bytes), added to the counts in a fixed number of
//! vector steps: the same coloring, the coarse levels' coloring in about 0.56x the time on
//! random 5 per row at n = 10^6 (`conflicts.rs`); under a cap of 14 or fewer the tally also
//! holds the row's weight, so a row is one scattered read, not two. At the last level, where
//! only whether a color conflicts counts, a row keeps two masks instead (the colors of its P
//! and of its Q blocks, 16 bytes): a pass costs the rows' list lengths, not their squares
//! (random 5 per row at n = 10^6: the last level's coloring 791 -> 261 ms; past 63 colors the
//! pass is made again with lists). Even tallied, each block of a coarse level sweeps the
//! tallies of most rows there; where a level lists millions of entries and each block is held
//! by thousands of lists, and no row is blind, the counts are made over a sample of the lists
//! instead, weighted to estimate the whole (`sample.rs`): a coarse level's coloring only ranks
//! colors by their conflicts, and any coloring is sound.
//!
//! # The last level
//!
//! A row that comes into the last level *quiet* (it has known dependencies, learned none in
//! the step before, and every change it showed there is explained by a probe holding one of
//! its Q blocks) most likely knows all its dependencies: its candidates are its dependencies'
//! neighbours, to be proven zero. Its candidates need not sit alone in their probes, only
//! apart from its dependencies: an unchanged output proves every one in the probe zero. On a
//! random sparse pattern every row is quiet by then, and the hard conflicts between a row's
//! candidates were most of the last level's colors: n = 10^5, 5 per row, 50 probes with every
//! conflict hard, 28 with quiet rows' candidates sharing probes. A quiet row that changes in a
//! probe it shares keeps the candidates there (a tag proves its column): one more step at the
//! last level, with every conflict hard, resolves them. So when every row came in quiet the
//! shared coloring is used; when some did not, the level is colored both ways and the shared
//! coloring is kept when it saves a quarter of the probes and at least `QUIET_SAVING`
//! (`level.rs`); and it is not tried when more than one row in `RESTLESS_PART` comes in not
//! quiet (rows still learning: a band whose NaNs race keeps learning a dependency a probe down
//! to the last level, and a row quiet among them may well hide one in a block with a known
//! one).
//!
//! The last level's coloring then takes one pass of iterated greedy (Culberson): the blocks
//! colored again class by class, the last class first, which never takes more colors and
//! often fewer (24 instead of 28 above); unless its colors are within one of the largest clique
//! a row makes (a tridiagonal row's candidates and one dependency: 3 against 4), or the
//! coloring work is past `ITERATED_GREEDY_WORK` (`level.rs`: there the pass costs a black box
//! that takes little time more than the probes it saves).
//!
//! The lists of a structured grid numbered in order (a band, a stencil) are tried first
//! against a grid's coloring formula (`coloring/lattice.rs`: no list holding two blocks of one
//! color, at the longest list's length, in O(listed blocks), where the passes transpose the
//! lists and walk them; a list without such structure fails on a few lists, in microseconds).
//! The formula keeps every pair of a list apart, where the passes let two Q blocks (and a quiet
//! row's P blocks) share a probe, so it can need more colors: within one of the largest clique
//! a row makes it is taken and the passes do not run (the tridiagonal at 10^6: 4 probes as the
//! passes give, the level's transpose and coloring, about 70 ms, replaced by 13 ms); past it
//! the passes run and the fewer colors are kept (the 5-point stencil on 300 x 300: 8 against
//! 10; diagonal blocks of 10 under the smallest NaN winning: the passes' 15 against 16).
//!
//! Where every row's candidates and dependencies lie within 32 columns of the row (a band)
//! and no row came in quiet, the last level runs without lists: each row's candidates and
//! dependencies are two bit masks around it, colored by a period (`refine/window.rs`), within
//! one color of the largest clique as the formula is. The tridiagonal at 10^6: the last level's
//! step took 91-125 ms of library time with lists, 36-56 ms in windows (`nanprop-bench
//! --steps`, three alternated runs).
//!
//! Where a band's rows are all parked and repeat (row i's dependencies those of row i - R
//! moved by R, R the parent blocks' width), a coarse level of blocks of 2 to 32 columns runs
//! without lists too: the greedy pass is simulated from the rows' dependencies until its colors
//! repeat, and copied a period back from there (`refine/period.rs`): the same colors, block for
//! block, without listing, transposing and visiting every row. The tridiagonal at 10^6: its
//! levels of blocks of 4 and 2.
//!
//! # Termination and cost
//!
//! Levels run from one block of all n columns down to single columns: at most
//! `ceil(log2 n) + 2` steps (the last level may take two), and the last resolves every
//! candidate, so the planner always ends with no unresolved entry. On a banded pattern a row's
//! blocks at any level are the one or two blocks around its band plus their siblings; the hard
//! conflicts form a chain, and a step takes 2 probes at coarse levels and about `w + 1` at the
//! last: tridiagonal n = 10^6 in 44 evaluations. Random sparse patterns with d entries per row
//! cost about `2 d + 2` probes per coarse level, fewer at the last (n = 10^4, d = 5: 151).
//!
//! A split halves the blocks, except when the rows have settled: when most rows are parked
//! (below), the step just ended taught at most one new dependency per 16 rows, and the next
//! blocks would still be wider than any parked row's dependencies spread, a block splits in
//! four and a level is skipped. A settled banded row's four children are one or two Q blocks
//! and their siblings, which take about four probes, as two halving levels would; but every
//! row is listed, told and split once instead of twice. Tridiagonal n = 10^6 takes 13 levels
//! instead of 21 with the same evaluations (the whole trace 0.88x). The split into the last
//! level always halves (a four-way split there gives a row more candidates for the last
//! level's hard conflicts), and rows still learning keep halving: a row learns dependencies
//! from the tags of the probes it changes in, and in a four-way level it changes in one or
//! two of four probes where two halving levels change it in two to four, so a band whose
//! NaNs race would reach the last level knowing fewer (banded 11 x 10^4: 50 evaluations
//! against 48, though 0.89x the time). A rule that only asked for two known dependencies a
//! row did that; one that ignored new dependencies (a row knowing one has a spread of 0
//! whatever its true one) cost small random, stencil and dense patterns more (dense
//! 200 x 200, the smallest NaN winning: 201 evaluations against 9). With this rule no
//! evaluation count and no pattern of the fingerprint suite (614 traces) changed.
//!
//! # Dense rows
//!
//! Each probe proves at most one dependency of a row (its tag), so a row with d dependencies
//! costs at least d probes to resolve entry by entry, and a dense row costs as much as one-hot
//! tracing. Under a cap (below), a row is *recognised dense*, and resolving it stops, when it
//! has at least 8 known dependencies and either
//! * at a level of at least 16 blocks, 3/4 of its blocks hold a known dependency or changed,
//!   and its dependency lower bound (known ones, plus the probes in which it changed with no
//!   known one among their blocks) reaches 1/64 of the probes the cap leaves; or
//! * before one of the last two levels, its unknown columns (about one probe each there)
//!   would take a quarter of what the cap leaves.
//!
//! Its unknown columns are then kept as possible dependencies of kind [`EntryKind::Assumed`],
//! and it leaves the coloring. When the trace later finishes with one probe per column
//! (below), those probes hold each of its columns alone as well, and the outcomes resolve
//! them as any row's: only the columns no such probe held stay assumed (200 x 400 with 10% of
//! the entries: 54150 assumed entries, all zeros, before; none now, and the check of the exact
//! pattern 266 evaluations instead of 800). A row whose known dependencies sit in 3/4 of at
//! least 8 of its blocks (dense at this scale) is left out of the coloring at coarse levels
//! even before that: it would make every block conflict with every other; its blocks are
//! tested only in probes holding none of its known dependencies. Without a cap (`usize::MAX`)
//! no row is recognised dense. A wide row whose sampled blocks showed it dense is recognised
//! dense too, blind or not (`refine/wide.rs`). A pattern whose rows were recognised dense can
//! be nearly dense:
//! the check then leaves them out (`trace/check.rs`).
//!
//! The second rule is about cost, not evidence: a row can reach it with nearly every column
//! unknown and few dependencies (a lone row, whose P blocks all share one probe a level, learns
//! one dependency a level and proves nothing zero). When refining ends, the rows recognised
//! dense by it alone, with a known dependency, are *peeled* (`refine/peel.rs`; 64 at a time,
//! the others waiting their turn, unless they are more than one traced row in 32, a nearly
//! dense pattern): a probe of all of a row's unknown columns and none of its known
//! dependencies either leaves it unchanged (all zero) or names a new one, so u unknown
//! dependencies take u + 1 probes, unless three samples of 32 columns all change (dense after
//! all) or the probes pass an eighth of its unknown columns (one row of 20 spread dependencies
//! among 10^4 columns: 14 evaluations with 9987 assumed entries before, 27 exact now).
//!
//! # The cap, and falling back to one probe per column
//!
//! The planner is given a cap on the probes it may ask in all: by default
//! [`Refine::allowance`] (`n + n / 8 + min(16, n / 4)`), or what the caller's budget leaves.
//! Refining does not pay on dense patterns (each probe proves at most one
//! dependency per row). The planner finishes with one probe per still-unknown column when:
//! * a row already has known dependencies in at least 3/4 of at least 8 probed blocks, or the
//!   coloring compresses nothing while nearly all tested blocks changed (dense at this scale)
//!   and refining on is estimated to cost about as much as one probe per unknown column, or
//!   its levels down to blocks of 8 more than the coarse steps' allowance below leaves
//!   (`level.rs`, `refining_estimate`: sparse rows with many dependencies look dense at a
//!   coarse scale; random 80 per row at n = 2 x 10^4 went to one probe per column at 40
//!   blocks, 21580 evaluations with the check, and is refined now, 6780);
//! * coarse steps would spend more than `U / 8 + min(16, n / 4)` probes in all, U being the
//!   columns still unknown for some row, or the step would not fit under the cap;
//! * the last level's coloring would need at least as many probes as there are unknown columns
//!   (or more than the cap leaves), or the coloring work (the sum over rows of the square of
//!   their block count) is more than 64 per listed block and more than the probes it would
//!   save cost (one per unknown column, each writing n inputs, reading m outputs and running
//!   f, at least one operation per known dependency) over the levels left, or than 64 per
//!   listed block alone when the candidates are more than the known dependencies account for
//!   (`work_limit` in `refine/level.rs`).
//!
//! Under a cap, a trace of at most `2 ceil(log2 n) + 3` columns (n <= 11) starts with one probe
//! per column: refining cannot do better there.
//!
//! When the unknown columns are more than the cap leaves, the columns unknown for the most rows
//! get their probe and the others stay unresolved (as [`EntryKind::Assumed`] under the default
//! cap, as [`EntryKind::Unresolved`] under a budget the caller set).
//!
//! # Memory and time
//!
//! The state is O(nnz + m) (candidates and dependencies, CSR; a candidate is its block and one
//! word holding the probe that tests it and what that probe showed) plus O(n) per step; one
//! step costs O(m + n + sum_i |K_i|^2), `K_i` being row `i`'s blocks, which is a small constant
//! per row on sparse patterns. Every level passes over every row (a banded row keeps its band's
//! block and that block's sibling at every level), and that per-row work, not the evaluations,
//! is most of the library time at n = 10^6 (`nanprop-bench --scale`).
//!
//! A row whose candidates are exactly the children of its dependencies' blocks (a banded row
//! from the first levels on) is *parked*: it stores no candidate, its block list is made from
//! its dependencies (a run of rows whose dependencies share blocks at this level is listed at
//! once), the tells look up whether one of its P blocks was in the probe in the runs of parked
//! rows with one list, and the split has nothing to do for it unless the step showed it
//! something new (`parked.rs`). The evaluations and the pattern are the ones of the stored
//! rows. Tridiagonal n = 10^6 keeps every row parked from the first split to the last level:
//! the whole trace takes 0.84x the time it took with every row stored, and 0.96x again with the
//! runs listed at once.
//!
//! Between steps the black box is idle, and on a machine with two cores so is one core: the
//! split that ends a step and the listing pass that starts the next run in two halves of rows
//! at once there (`halves.rs`), with the same result entry for entry; the coloring stays one
//! pass. Random 5 per row at n = 10^6: the whole trace 0.87x; tridiagonal 0.94x; the 2-D
//! Bratu residual 0.92x (`nanprop-bench --scale`, paired runs).
//!
//! # Files
//!
//! This file holds the state, the tells (what one probe's outputs mark) and the pattern at the
//! end; `refine/level.rs` plans a step (the blocks each row lists, whether refining still
//! pays, the coloring into probes, or one probe per column); `refine/split.rs` ends it (the
//! outcomes, the new dependencies merged, the split into the next level, dense rows);
//! `refine/wide.rs` the wide rows' own probes; `refine/peel.rs` the rows peeled when refining
//! ends; `refine/window.rs` the last level of a banded pattern as bit masks around each row;
//! `refine/saturation.rs` a coarse level's blocks in classes by a saturation order of their
//! hard conflicts; `parked.rs` (beside this file) the rows kept without their candidates.

use super::parked::{lone_p_block, span_tests, span_tests_at, tests_in, Parked, KEPT, STORED};
use super::Planner;
use crate::error::{push, reserve, Error, Result};
use crate::halves::{both, halfway};
use crate::pattern::{EntryKind, Pattern, PatternBuilder};
use crate::prefetch::{prefetch, prefetch_at};
use crate::probe::{Hit, Probe, Reader};
use bitvec::prelude::*;

mod conflicts;
mod level;
mod peel;
mod period;
mod sample;
mod saturation;
mod split;
mod wide;
mod window;

const NONE: u32 = u32::MAX;

/// A candidate's word (`Refine::cand_probe`): the probe of the current step that tests it in
/// the low bits ([`UNTESTED`]: none), whether its row's output changed in that probe
/// ([`HIT`]), and whether that change was seen only by verification ([`PERT`]).
const HIT: u32 = 1 << 31;
const PERT: u32 = 1 << 30;
const PROBE: u32 = PERT - 1;
const UNTESTED: u32 = PROBE;

/// A split makes `2^BRANCH_BITS` blocks of one; `2^WIDE_BRANCH_BITS` when the rows have
/// settled (module docs, "Termination and cost").
const BRANCH_BITS: u32 = 1;
const WIDE_BRANCH_BITS: u32 = 2;

/// The last level lets a quiet row's candidates share a probe unless more than one row in
/// `RESTLESS_PART` going into it is not quiet ("The last level").
const RESTLESS_PART: usize = 16;

/// Marks a block as a row's probeable candidate (P) in the block lists of a step.
const P_FLAG: u32 = 1 << 31;

/// A row holding at least this many blocks, and half of all blocks, is left out of a coarse
/// level's coloring (its square would dominate the coloring work).
const WIDE_ROW_BLOCKS: usize = 64;

/// A blind row with at least this many candidate blocks before the last level may be peeled
/// instead of refined (`refine/peel.rs`).
const BLIND_PEEL_FROM: usize = 64;
/// Or with at least this many, when it is among few blind rows (`refine/peel.rs`).
const BLIND_PEEL_FEW: usize = 16;

/// The dense test looks at steps with at least this many blocks.
const MIN_BLOCKS_FOR_DENSE_TEST: usize = 8;
/// "Dense at this scale" (every block conflicts with every other and nearly all changed) is
/// judged at levels with at least this many blocks: at coarser ones a sparse pattern with a few
/// dozen entries per row looks dense too.
const MIN_BLOCKS_FOR_SCALE_TEST: usize = 32;

/// Coarse steps may spend at most `U / SPEND_DIVISOR + min(SPEND_SLACK, n / 4)` probes in all,
/// U being the columns still unknown for some row; past that the planner finishes with one
/// probe per column, so it never costs more than `n + n / SPEND_DIVISOR + SPEND_SLACK + 1`
/// evaluations.
const SPEND_DIVISOR: usize = 8;
const SPEND_SLACK: usize = 16;

/// A row is recognised dense when its dependency lower bound reaches
/// `max(DENSE_MIN, probes left / DENSE_DIVISOR)` (see the module docs).
const DENSE_MIN: usize = 8;
const DENSE_DIVISOR: usize = 64;
const DENSE_MIN_BLOCKS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Nothing asked yet.
    Start,
    /// Probing colored blocks of size `2^shift`.
    Refining,
    /// One probe per column of `onehot_cols`.
    OneHot,
    /// Rows recognised dense for their cost alone, one probe each a step (`peel.rs`).
    Peel,
    /// The last level in windows (`window.rs`).
    Window,
    /// Everything resolved.
    Done,
}

/// The coarse-to-fine payload planner (see the module docs).
pub struct Refine {
    n: usize,
    m: usize,
    /// The baseline outputs (shared with the session that made the planner).
    baseline: std::sync::Arc<Vec<f64>>,
    mode: Mode,
    /// Block size is `1 << shift` at the current level.
    shift: u32,
    /// The bits of the split that made the current level: a block one level up is `2^bits`
    /// blocks of this one (what a parked row's blocks are the children of).
    bits: u32,
    /// Known dependencies: CSR, sorted per row.
    dep_ptr: Vec<usize>,
    dep_idx: Vec<u32>,
    /// Dependencies found in the current step, merged into the CSR when it ends.
    new_deps: Vec<(u32, u32)>,
    /// The pairs the last merge added (sorted, distinct).
    merged: Vec<(u32, u32)>,
    /// Candidate blocks per row at the current level: CSR, sorted per row.
    cand_ptr: Vec<usize>,
    cand_idx: Vec<u32>,
    /// For each candidate entry: the probe of the current step that tests it, or `UNTESTED`,
    /// and what that probe showed (`HIT`, `PERT`).
    cand_probe: Vec<u32>,
    /// Dependencies proven only by verification (kind [`EntryKind::Perturbation`]).
    pert_deps: Vec<(u32, u32)>,
    /// Probes told so far.
    spent: usize,
    /// Most probes the planner may ask in all (`usize::MAX`: no cap).
    cap: usize,
    /// The kind of what the cap leaves unresolved.
    capped: EntryKind,
    /// Probes asked so far (told or not).
    asked: usize,
    /// Columns kept for rows recognised dense: `(row, start, end)` ranges of their unknown
    /// columns when they were recognised (known dependencies inside included).
    dense: Vec<(u32, u32, u32)>,
    /// Of the candidates tested in the last step, the fraction whose output changed (1.0 before
    /// any step): near 1 means the pattern is dense at that scale.
    last_hit_rate: f64,
    /// More than `WIDE_ROWS_MOST` rows with known dependencies, half the rows or more, were
    /// wide at one level: from then on no row is left out of a level's coloring for being wide
    /// (`level.rs`, `wide_are_most`).
    wide_in: bool,
    /// Which probes of the current step were told.
    told: Vec<bool>,
    /// In one-hot mode: the column of each probe, and which columns were told.
    onehot_cols: Vec<u32>,
    onehot_told: BitVec,
    /// Whether the one-hot probes cover every unknown column (the cap allowed them all).
    onehot_complete: bool,
    /// Rows whose candidates follow from their dependencies and are not stored (`parked.rs`).
    parked: Parked,
    /// At the last level: the rows that came into it quiet (known dependencies, and nothing
    /// new in the step before), whose candidates may share a probe ("The last level").
    quiet: BitVec,
    /// Every row that came into the last level with a known dependency came quiet.
    all_quiet: bool,
    /// The current level's rows lie far apart (`level.rs`, `scattered`): the tells ask for a
    /// changed row's words a few rows ahead.
    far: bool,
    /// The candidates' array the last split let go, emptied: the next level's lists are made
    /// in it, its pages already mapped (it is let go when no level follows).
    spare: Vec<u32>,
    /// The work (rows plus entries) from which a pass over the rows runs in two halves at
    /// once ([`crate::halves::halves_from`]: the tests set it).
    halves_from: usize,
    /// The entries a level lists from which its coloring counts over a sample of the lists
    /// (`sample.rs`): [`sample::SAMPLE_FROM`].
    sample_from: usize,
    /// Coarse levels are colored again by the saturation classes of their hard conflicts
    /// when those need fewer colors (`saturation.rs`; the tests turn it off to compare).
    by_classes: bool,
    /// How many steps the coarse levels' palette cap has grown (`level.rs`, `grows_cap`).
    cap_growth: usize,
    /// Wide rows' own probes (`wide.rs`).
    wide: wide::Wide,
    /// The rows peeled when refining ends (`peel.rs`).
    peel: peel::Peel,
    /// The last level in windows, while its step runs (`window.rs`).
    window: Option<Box<window::Window>>,
    /// The rows' masks made at the split into the last level, for its plan (`window.rs`).
    gathered: Option<Box<window::Gathered>>,
    /// Whether the rows that the first levels' passes treat alike may be passed over as a run
    /// (`Refine::parks_whole`, `Refine::same_blind_rows`; the tests turn it off to compare).
    shortcuts: bool,
    /// Whether the last level may run in windows (the tests turn it off to compare).
    by_window: bool,
    /// Whether a banded pattern's coarse levels may be colored by the greedy pass's period
    /// without lists (`period.rs`; the tests turn it off to compare).
    by_period: bool,
    /// How many times the rows went into windows at the split (the tests count them).
    #[cfg(test)]
    split_windows: usize,
    /// How many levels were colored by the greedy pass's period (the tests count them).
    #[cfg(test)]
    period_levels: usize,
}

impl Refine {
    /// A planner for n inputs and the given baseline outputs (m = `baseline.len()`), asking at
    /// most `cap` probes in all (`usize::MAX`: no cap); what the cap leaves unresolved is
    /// reported as `capped` ([`EntryKind::Assumed`] under the default cap,
    /// [`EntryKind::Unresolved`] under a caller's budget). Rows whose baseline is not finite are
    /// not traced.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when its O(m) arrays do not fit.
    pub fn new(
        n: usize,
        baseline: impl Into<std::sync::Arc<Vec<f64>>>,
        cap: usize,
        capped: EntryKind,
    ) -> Result<Self> {
        let baseline = baseline.into();
        let m = baseline.len();
        // Level 0: one block of all n columns, a candidate of every traceable row.
        let shift = usize::BITS - (n.max(1) - 1).leading_zeros();
        // The planner's first arrays are made while the other core has nothing to do: the
        // three filled with one value (20 of their 25 MB at m = n = 10^6) are written in two
        // halves (`halves.rs`), their pages faulted in by both.
        let mut cand_ptr = crate::halves::filled(0usize, m + 1, "candidate pointers")?;
        let mut cand_idx = Vec::new();
        reserve(&mut cand_idx, m, "candidate blocks")?;
        for i in 0..m {
            if baseline[i].is_finite() {
                cand_idx.push(0u32);
            }
            cand_ptr[i + 1] = cand_idx.len();
        }
        Ok(Refine {
            n,
            m,
            baseline,
            mode: Mode::Start,
            shift,
            bits: BRANCH_BITS,
            dep_ptr: crate::halves::filled(0, m + 1, "dependency pointers")?,
            dep_idx: Vec::new(),
            new_deps: Vec::new(),
            merged: Vec::new(),
            cand_probe: crate::halves::filled(UNTESTED, cand_idx.len(), "candidate probes")?,
            cand_ptr,
            cand_idx,
            pert_deps: Vec::new(),
            last_hit_rate: 1.0,
            wide_in: false,
            spent: 0,
            cap,
            capped,
            asked: 0,
            dense: Vec::new(),

            told: Vec::new(),
            onehot_cols: Vec::new(),
            onehot_told: BitVec::new(),
            onehot_complete: true,
            parked: Parked::new(m)?,
            quiet: BitVec::new(),
            all_quiet: false,
            far: false,
            spare: Vec::new(),
            halves_from: crate::halves::halves_from(),
            sample_from: sample::SAMPLE_FROM,
            by_classes: true,
            cap_growth: 0,
            wide: wide::Wide::default(),
            peel: peel::Peel::default(),
            window: None,
            gathered: None,
            shortcuts: true,
            by_window: true,
            by_period: true,
            #[cfg(test)]
            split_windows: 0,
            #[cfg(test)]
            period_levels: 0,
        })
    }

    /// The default cap on probes for n columns: one-hot's n plus the coarse steps' allowance,
    /// `n + n / 8 + min(16, n / 4)`.
    pub fn allowance(n: usize) -> usize {
        n + n / SPEND_DIVISOR + SPEND_SLACK.min(n / 4)
    }

    /// Row `i`'s known dependencies (sorted).
    #[inline]
    fn deps(&self, i: usize) -> &[u32] {
        &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]]
    }

    /// The columns `start..end` of block `b` at level `shift` (the last block may be short).
    #[inline]
    fn block_range(&self, b: u32, shift: u32) -> (u32, u32) {
        block_range(b, shift, self.n)
    }
}

/// The columns `start..end` of block `b` at level `shift` of `n` columns (the last block may
/// be short).
#[inline]
fn block_range(b: u32, shift: u32, n: usize) -> (u32, u32) {
    let start = (b as u64) << shift;
    let end = ((b as u64 + 1) << shift).min(n as u64);
    (start as u32, end as u32)
}

/// Into `out` (cleared), sorted: the probes of a step colored `color` at level `shift` that
/// hold a block of one of `deps`, a row's known dependencies; a change of the row there is
/// explained by that block's NaN (shadowing).
fn probes_holding(deps: &[u32], color: &[u32], shift: u32, out: &mut Vec<u32>) -> Result<()> {
    out.clear();
    reserve(out, deps.len(), "colors of a row")?;
    out.extend(
        (deps.iter())
            .filter_map(|&d| color.get((d >> shift) as usize))
            .filter(|&&c| c != NONE),
    );
    out.sort_unstable();
    Ok(())
}

/// A tag named `(row, j)`, a dependency the row did not know (`deps`, sorted, would hold it
/// at `at`): recorded in `new_deps` (`room` cleared when that fails). Returns whether it lies
/// outside the blocks at level `shift` of the row's known dependencies. Out of the tell's
/// loop, which meets known dependencies far more often.
#[cold]
#[inline(never)]
fn learned(
    new_deps: &mut Vec<(u32, u32)>,
    room: &mut bool,
    (row, j): (u32, u32),
    deps: &[u32],
    at: usize,
    shift: u32,
) -> bool {
    *room &= push(new_deps, (row, j), "dependencies").is_ok();
    let near = |d: Option<&u32>| d.is_some_and(|&d| d >> shift == j >> shift);
    !near(deps.get(at)) && !near(at.checked_sub(1).and_then(|a| deps.get(a)))
}

/// Where column `j` is, or would go, among a row's known dependencies `deps` (sorted, no
/// repeats): what `deps.binary_search(&j)` says. Looked for first at `guess`, where the tag of
/// the row before was found, which then moves to where this one is found. Rows close together
/// hold their dependencies at the same places relative to the row, and the same input's NaN
/// wins in each (a band's rows, a stencil's), so one comparison usually finds it: 92% of the
/// tags found on the tridiagonal's scale cases, 94% on the 2-D Bratu residual's. On the Bratu
/// residual at 10^6 the bisection had taken about 30% of the tells' samples (perf), likely as
/// each of its steps waits for the load before it; its tells 462.6 -> 439.6 ms a trace (medians
/// of six runs), the tridiagonal's unchanged.
#[inline(always)]
fn find_dep(deps: &[u32], j: u32, guess: &mut usize) -> std::result::Result<usize, usize> {
    if deps.get(*guess) == Some(&j) {
        return Ok(*guess);
    }
    let found = deps.binary_search(&j);
    if let Ok(at) = found {
        *guess = at;
    }
    found
}

/// What a tell reads of the planner for every changed row: its candidates' places, its known
/// dependencies, whether and how it is parked (shared by the tell's two halves).
struct Seen<'a> {
    /// The probe told.
    k: u32,
    cand_ptr: &'a [usize],
    /// The candidates' blocks (columns at the last level).
    cand_idx: &'a [u32],
    dep_ptr: &'a [usize],
    dep_idx: &'a [u32],
    parked: &'a [u8],
    colors: &'a [u32],
    spans: &'a [(u32, u32, u64)],
    shift: u32,
    bits: u32,
    n: usize,
    far: bool,
}

/// What one half of a tell writes: the candidates of its rows (marked where they changed), the
/// dependencies learned and the parked rows' outcomes (both sorted before use: the halves'
/// lists are joined end to end).
struct TellHalf<'a> {
    /// The candidates' words of the half's rows, from `base` in the whole array.
    cand_probe: &'a mut [u32],
    base: usize,
    /// Where [`span_tests`] left off.
    cursor: usize,
    new_deps: &'a mut Vec<(u32, u32)>,
    hits: &'a mut Vec<(u32, u32)>,
    /// Cleared when a list could not grow.
    room: bool,
    /// Where the last tag found among a row's known dependencies was in the row's list
    /// ([`find_dep`]).
    guess: usize,
}

impl<'a> TellHalf<'a> {
    fn new(
        cand_probe: &'a mut [u32],
        base: usize,
        cursor: usize,
        new_deps: &'a mut Vec<(u32, u32)>,
        hits: &'a mut Vec<(u32, u32)>,
    ) -> Self {
        TellHalf {
            cand_probe,
            base,
            cursor,
            new_deps,
            hits,
            room: true,
            guess: 0,
        }
    }

    /// Reads the outputs of `rows` as [`Reader::observe_rows`] does (through it where the rows
    /// lie far apart, in a loop of its own where they lie close together); returns how many ids
    /// came back through single precision.
    fn observe(
        &mut self,
        seen: &Seen,
        reader: &Reader,
        rows: std::ops::Range<usize>,
        baseline: &[f64],
        y: &[f64],
        perturbed: &[u32],
    ) -> usize {
        // A changed row's candidate words and dependencies lie scattered on patterns without
        // locality: asked for a few changed rows ahead. Not when they lie close together: the
        // asking cost tridiagonal 10^6 5%.
        let (cand_at, base) = (self.cand_probe.as_ptr(), self.base);
        let soon = |i: u32| {
            let i = i as usize;
            prefetch_at(cand_at.wrapping_add(seen.cand_ptr[i] - base));
            prefetch(seen.dep_idx, seen.dep_ptr[i]);
        };
        if seen.far {
            return reader.observe_rows(rows, baseline, y, perturbed, Some(soon), |i, hit| {
                self.take(seen, i, hit)
            });
        }
        // Rows close together: the pass is this loop, the rows `observe_rows` would give in the
        // same order, each changed one read and taken in it. Through `observe_rows`' callback
        // each changed row cost a call: the tells of tridiagonal 10^5 and 10^6 took 3.31 G
        // instructions, 2.99 G this way (callgrind), the trace 0.93-1.05x the time
        // (`bench/LOG.md`).
        for &i in perturbed {
            self.take(seen, i, Hit::Perturbed);
        }
        let mut via_float = 0;
        let first = rows.start;
        (baseline[rows.clone()].iter().zip(&y[rows]).enumerate())
            .filter(|(_, (&b, &v))| b.is_finite() && b.to_bits() != v.to_bits())
            .for_each(|(k, (_, &v))| {
                let (hit, float) = reader.hit_of(v);
                via_float += usize::from(float);
                self.take(seen, (first + k) as u32, hit);
            });
        via_float
    }

    /// What output `i` showed: `hit`.
    #[inline(always)]
    fn take(&mut self, seen: &Seen, i: u32, hit: Hit) {
        let iu = i as usize;
        let deps = &seen.dep_idx[seen.dep_ptr[iu]..seen.dep_ptr[iu + 1]];
        if seen.parked[iu] != STORED {
            // A probe holding a known dependency of the row re-reports it: skip those. A new
            // dependency in a block that holds a known one changes none of a parked row's
            // blocks: only one elsewhere calls the row back.
            let new_elsewhere = match hit {
                Hit::Dep(j) => match find_dep(deps, j, &mut self.guess) {
                    Ok(_) => false,
                    Err(at) => learned(self.new_deps, &mut self.room, (i, j), deps, at, seen.shift),
                },
                _ => false,
            };
            // What the stored row would mark: its P blocks in this probe changed.
            // The perturbed rows come before the pass, out of its order: the cursor is the
            // pass's.
            let tested = match (seen.spans.is_empty(), hit) {
                (true, _) => tests_in(seen.colors, deps, seen.shift, seen.bits, seen.n, seen.k),
                (false, Hit::Perturbed) => span_tests_at(seen.spans, i, seen.k),
                (false, _) => span_tests(seen.spans, i, seen.k, &mut self.cursor),
            };
            if new_elsewhere || tested {
                // A tag through the row's only P block in the probe: the row stays parked
                // with it (`parked.rs`).
                let word = match hit {
                    Hit::Dep(j)
                        if new_elsewhere
                            && lone_p_block(
                                seen.colors,
                                deps,
                                j,
                                (seen.shift, seen.bits, seen.n),
                                seen.k,
                            ) =>
                    {
                        seen.k | KEPT
                    }
                    _ => seen.k,
                };
                self.room &= push(self.hits, (i, word), "parked rows' outcomes").is_ok();
            }
            return;
        }
        let mark = match hit {
            Hit::Perturbed => HIT | PERT,
            _ => HIT,
        };
        let (a, b) = (seen.cand_ptr[iu], seen.cand_ptr[iu + 1]);
        let row = &mut self.cand_probe[a - self.base..b - self.base];
        // The row's candidates in this probe, marked, and the last of them.
        let (mut in_probe, mut last) = (0usize, 0usize);
        for (e, v) in row.iter_mut().enumerate() {
            if *v & PROBE == seen.k {
                *v |= mark;
                in_probe += 1;
                last = e;
            }
        }
        if let Hit::Dep(j) = hit {
            if let Err(at) = find_dep(deps, j, &mut self.guess) {
                // At the last level, the tag of a candidate alone among the row's columns in
                // the probe: the step's end proves it from the change (`absorb`), as it
                // proves those whose tag did not come back; recorded once, not twice (a
                // million pairs fewer to sort on the tridiagonal at 10^6). Any other tag is
                // learned here.
                let absorbed = seen.shift == 0 && in_probe == 1 && seen.cand_idx[a + last] == j;
                if !absorbed {
                    learned(self.new_deps, &mut self.room, (i, j), deps, at, seen.shift);
                }
            }
        }
    }
}

impl Planner for Refine {
    fn ask(&mut self) -> Result<Vec<Probe>> {
        match self.mode {
            Mode::Done => return Ok(Vec::new()),
            Mode::Start if self.cap != usize::MAX && 2 * self.shift as usize + 3 >= self.n => {
                // Refining costs at least about two probes a level and three at the last: on
                // so few columns it cannot beat one probe per column, which fits the cap.
                if self.cand_idx.is_empty() {
                    self.mode = Mode::Done;
                    return Ok(Vec::new());
                }
                return self.start_onehot();
            }
            Mode::Start => self.mode = Mode::Refining,
            Mode::Refining => self.advance()?,
            Mode::OneHot => {
                self.absorb()?;
                self.merge_deps()?;
                // The probes per column held the candidates' columns, not those of rows
                // recognised dense for their cost alone: those are peeled still (`peel.rs`).
                if self.start_peel()? {
                    self.spare = Vec::new();
                    return self.peel_step();
                }
                self.mode = Mode::Done;
                return Ok(Vec::new());
            }
            Mode::Peel => return self.peel_step(),
            Mode::Window => {
                // Its step told: the candidates left back in the lists' arrays, the step's
                // dependencies merged as after the lists' last level.
                self.end_window()?;
                self.advance()?;
            }
        }
        loop {
            if self.cand_idx.is_empty() && self.parked.count == 0 && self.gathered.is_none() {
                if self.start_peel()? {
                    self.spare = Vec::new();
                    return self.peel_step();
                }
                self.mode = Mode::Done;
                self.spare = Vec::new();
                return Ok(Vec::new());
            }
            if let Some(probes) = self.plan_level()? {
                return Ok(probes);
            }
            self.advance()?;
        }
    }

    fn tell(&mut self, k: usize, probe: &Probe, y: &[f64], perturbed: &[u32]) -> Result<usize> {
        self.told[k] = true;
        self.spent += 1;
        self.wide.tell(k, &self.baseline, y);
        if self.mode == Mode::Peel {
            return self.tell_peel(k, probe, y, perturbed);
        }
        if let Some(window) = self.window.as_mut() {
            return window.tell(
                k,
                &probe.reader(),
                (&self.baseline, y, perturbed),
                (&self.dep_ptr, &self.dep_idx),
                self.halves_from,
                (&mut self.new_deps, &mut self.pert_deps),
            );
        }
        if self.mode == Mode::OneHot {
            let (new_deps, pert_deps) = (&mut self.new_deps, &mut self.pert_deps);
            let c = probe.cols()[0];
            let mut room = true;
            let via_float = probe.observe(&self.baseline, y, perturbed, |i, hit| {
                room &= push(new_deps, (i, c), "dependencies").is_ok();
                if hit == Hit::Perturbed {
                    room &= push(pert_deps, (i, c), "dependencies").is_ok();
                }
            });
            if !room {
                return Err(Error::out_of_memory("dependencies", self.new_deps.len()));
            }
            self.onehot_told.set(c as usize, true);
            return Ok(via_float);
        }
        let rows = self.baseline.len().min(y.len());
        let reader = probe.reader();
        let seen = Seen {
            k: k as u32,
            cand_ptr: &self.cand_ptr,
            cand_idx: &self.cand_idx,
            dep_ptr: &self.dep_ptr,
            dep_idx: &self.dep_idx,
            parked: &self.parked.rows,
            colors: &self.parked.colors,
            spans: &self.parked.spans,
            shift: self.shift,
            bits: self.bits,
            n: self.n,
            far: self.far,
        };
        let (baseline, cand_probe) = (&self.baseline[..], &mut self.cand_probe[..]);
        let (new_deps, hits) = (&mut self.new_deps, &mut self.parked.hits);
        let cut = match rows + self.cand_ptr[rows] >= self.halves_from {
            true => halfway(&self.cand_ptr[..=rows]),
            false => rows,
        };
        let (first_cands, second_cands) = cand_probe.split_at_mut(self.cand_ptr[cut]);
        let split = perturbed.partition_point(|&i| (i as usize) < cut);
        let seen = &seen;
        let reader = &reader;
        let (first, second) = both(
            cut < rows,
            || {
                let mut half = TellHalf::new(first_cands, 0, 0, new_deps, hits);
                let via_float =
                    half.observe(seen, reader, 0..cut, baseline, y, &perturbed[..split]);
                (via_float, half.room)
            },
            || {
                let (mut deps, mut more_hits) = (Vec::new(), Vec::new());
                let cursor = seen.spans.partition_point(|s| (s.1 as usize) <= cut);
                let base = seen.cand_ptr[cut];
                let mut half = TellHalf::new(second_cands, base, cursor, &mut deps, &mut more_hits);
                let via_float =
                    half.observe(seen, reader, cut..rows, baseline, y, &perturbed[split..]);
                let room = half.room;
                (via_float, room, deps, more_hits)
            },
        );
        let (via_first, mut room) = first;
        let (via_second, room_second, deps, more_hits) = second;
        room &= room_second;
        // The second half's lists after the first's, where there is room (no infallible growth).
        if reserve(&mut self.new_deps, deps.len(), "dependencies").is_ok() {
            self.new_deps.extend_from_slice(&deps);
        } else {
            room = false;
        }
        let outcomes = "parked rows' outcomes";
        if reserve(&mut self.parked.hits, more_hits.len(), outcomes).is_ok() {
            self.parked.hits.extend_from_slice(&more_hits);
        } else {
            room = false;
        }
        if !room {
            return Err(Error::out_of_memory("dependencies", self.new_deps.len()));
        }
        Ok(via_first + via_second)
    }

    fn claims(&self, k: usize, probe: &Probe, y: &[f64]) -> bool {
        let unchanged = |i: usize| {
            let b = self.baseline[i];
            b.is_finite() && b.to_bits() == y[i].to_bits()
        };
        match self.mode {
            Mode::Peel => self.peel_claims(k, y),
            Mode::Window => (self.window.as_ref()).is_some_and(|w| w.claims(k, &self.baseline, y)),
            Mode::OneHot => {
                // A row claims column j zero if j is still unknown for it: in one of its
                // candidate blocks, or among a dense row's unknown columns.
                let j = probe.cols()[0];
                let block = j >> self.shift;
                let unknown = |i: usize| self.deps(i).binary_search(&j).is_err();
                (0..self.m).any(|i| {
                    unchanged(i)
                        && self.cand_idx[self.cand_ptr[i]..self.cand_ptr[i + 1]].contains(&block)
                        && unknown(i)
                }) || (self.dense.iter()).any(|&(i, s, e)| {
                    (s..e).contains(&j) && unchanged(i as usize) && unknown(i as usize)
                })
            }
            _ => {
                let mut cursor = 0;
                (0..self.m).any(|i| {
                    unchanged(i)
                        && match self.parked.is_parked(i) {
                            true if !self.parked.spans.is_empty() => {
                                span_tests(&self.parked.spans, i as u32, k as u32, &mut cursor)
                            }
                            true => tests_in(
                                &self.parked.colors,
                                self.deps(i),
                                self.shift,
                                self.bits,
                                self.n,
                                k as u32,
                            ),
                            false => (self.cand_probe[self.cand_ptr[i]..self.cand_ptr[i + 1]]
                                .iter())
                            .any(|&v| v & PROBE == k as u32),
                        }
                })
            }
        }
    }

    fn finish(mut self: Box<Self>, mut builder: PatternBuilder) -> Result<Pattern> {
        if self.mode == Mode::Peel {
            self.end_peel()?;
        }
        self.end_window()?;
        self.unpark_all()?;
        self.absorb()?;
        self.merge_deps()?;
        let onehot = self.mode == Mode::OneHot;
        if !onehot
            && self.cand_ptr[self.m] == 0
            && self.pert_deps.is_empty()
            && self.dense.is_empty()
        {
            // Every entry resolved, each a traced dependency (the usual end): the dependencies'
            // arrays are the pattern's.
            let (ptr, idx) = (
                std::mem::take(&mut self.dep_ptr),
                std::mem::take(&mut self.dep_idx),
            );
            return builder.finish_csr(ptr, idx, EntryKind::Traced);
        }
        self.pert_deps.sort_unstable();
        self.pert_deps.dedup();
        let pert = std::mem::take(&mut self.pert_deps);
        let traced_kind = |i: usize, j: u32| {
            if pert.binary_search(&(i as u32, j)).is_ok() {
                EntryKind::Perturbation
            } else {
                EntryKind::Traced
            }
        };
        self.dense.sort_unstable();
        let mut dense = self.dense.iter().peekable();
        let mut row: Vec<(u32, EntryKind)> = Vec::new();
        for i in 0..self.m {
            row.clear();
            let deps = self.deps(i);
            reserve(&mut row, deps.len(), "a row")?;
            row.extend(deps.iter().map(|&j| (j, traced_kind(i, j))));
            for &b in &self.cand_idx[self.cand_ptr[i]..self.cand_ptr[i + 1]] {
                let (s, e) = self.block_range(b, self.shift);
                for j in s..e {
                    if deps.binary_search(&j).is_err() && !(onehot && self.onehot_told[j as usize])
                    {
                        // Left out of the one-hot probes by the cap, or not told yet.
                        let left_out = onehot
                            && !self.onehot_complete
                            && self.onehot_cols.binary_search(&j).is_err();
                        let kind = match left_out {
                            true => self.capped,
                            false => EntryKind::Unresolved,
                        };
                        push(&mut row, (j, kind), "a row")?;
                    }
                }
            }
            // A dense row's unknown columns, but those a one-hot probe held alone: its outcome
            // there was told like any row's (a change is a dependency, pushed above; an
            // unchanged output a zero).
            while let Some(&(_, s, e)) = dense.next_if(|d| d.0 as usize == i) {
                reserve(&mut row, (e - s) as usize, "a row")?;
                let told_alone = |j: u32| self.onehot_told.get(j as usize).is_some_and(|b| *b);
                row.extend(
                    (s..e)
                        .filter(|&j| !told_alone(j))
                        .map(|j| (j, EntryKind::Assumed)),
                );
            }
            // Sorted by column, the strongest kind of each column first; keep that one.
            row.sort_unstable();
            row.dedup_by_key(|&mut (j, _)| j);
            if !row.is_empty() {
                builder.push_row(i, row.iter().copied())?;
            }
        }
        builder.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::split::Merge;
    use super::*;
    use crate::BlackBox;

    /// Runs the planner alone, under the default cap, on `f` (n inputs, m outputs); `after_step`
    /// sees it at each ask, after the step before was told and split.
    fn drive(f: &mut dyn BlackBox, m: usize, n: usize, mut after_step: impl FnMut(&Refine, usize)) {
        drive_with(f, m, n, |_| {}, |p, probes| after_step(p, probes.len()));
    }

    /// [`drive`] with the planner set up by `setup` first, `after_step` given the probes, and
    /// the planner returned at the end.
    fn drive_with(
        f: &mut dyn BlackBox,
        m: usize,
        n: usize,
        setup: impl FnOnce(&mut Refine),
        mut after_step: impl FnMut(&Refine, &[Probe]),
    ) -> Refine {
        let x0: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 * 1e-3).collect();
        let mut baseline = vec![0.0; m];
        f.eval(&x0, &mut baseline).unwrap();
        let mut planner =
            Refine::new(n, baseline, Refine::allowance(n), EntryKind::Assumed).unwrap();
        setup(&mut planner);
        let (mut x, mut y) = (x0.clone(), vec![0.0; m]);
        loop {
            let probes = planner.ask().unwrap();
            after_step(&planner, &probes);
            if probes.is_empty() {
                return planner;
            }
            tell_all(&mut planner, f, &probes, &x0, (&mut x, &mut y));
        }
    }

    /// Evaluates `probes` at `x0` (`x` holds `x0`, and does again after) and tells the planner
    /// each one's outputs (into `y`).
    fn tell_all(
        planner: &mut Refine,
        f: &mut dyn BlackBox,
        probes: &[Probe],
        x0: &[f64],
        (x, y): (&mut [f64], &mut [f64]),
    ) {
        for (k, probe) in probes.iter().enumerate() {
            probe.write_tags(x);
            f.eval(x, y).unwrap();
            probe.restore(x0, x);
            planner.tell(k, probe, y, &[]).unwrap();
        }
    }

    /// A 2-D Bratu-like stencil on a g x g grid written as NumPy or C would write it: the
    /// row's own input first, so its NaN wins whenever its block is probed, and the neighbours a
    /// grid line away are learned only once the blocks are narrower than a line, all rows at
    /// the same level. There every row comes back from parking once; it parks again as it is
    /// split, and most rows stay parked down to the last levels (parking had turned off for good
    /// there, and the remaining levels ran with every row's candidates stored).
    #[test]
    fn stencil_rows_park_again_after_their_grid_neighbours_leave_their_blocks() {
        let g = 128;
        let n = g * g;
        let mut f = |x: &[f64], y: &mut [f64]| -> std::result::Result<(), i32> {
            for i in 0..n {
                let (r, c) = (i / g, i % g);
                let up = if r > 0 { x[i - g] } else { 0.0 };
                let down = if r + 1 < g { x[i + g] } else { 0.0 };
                let left = if c > 0 { x[i - 1] } else { 0.0 };
                let right = if c + 1 < g { x[i + 1] } else { 0.0 };
                y[i] = 4.0 * x[i] - up - down - left - right - 1e-4 * x[i].exp();
            }
            Ok(())
        };
        let mut parked = Vec::new();
        drive(&mut f, n, n, |p, _| parked.push((p.shift, p.parked.count)));
        // The levels with blocks narrower than a grid line (2^7 = g), before the last two.
        let fine: Vec<usize> = (parked.iter())
            .filter(|&&(shift, _)| (2..6).contains(&shift))
            .map(|&(_, c)| c)
            .collect();
        assert!(!fine.is_empty(), "{parked:?}");
        assert!(
            fine.iter().all(|&c| 2 * c > n),
            "parked rows by level: {parked:?}"
        );
    }

    /// A tridiagonal row under the smallest NaN winning learns one dependency a level, at the
    /// levels where a block boundary cuts its columns apart: the tag of the column past the
    /// boundary comes back through the only P block of the row in its probe. That block now
    /// holds a dependency, as a Q block would, and the row stays parked with it: no split
    /// writes a row back (each of the last levels wrote back up to half of the rows, to park
    /// them again as they were split).
    #[test]
    fn rows_learning_a_dependency_through_their_only_p_block_in_a_probe_stay_parked() {
        use crate::testing::{banded, Synthetic, Winner};
        let n = 1 << 12;
        let truth = banded(n, 1);
        let mut f = Synthetic::new(&truth, Winner::Smallest, 5);
        let mut levels = Vec::new();
        let mut learned = 0;
        drive(&mut f, n, n, |p, _| {
            levels.push((p.shift, p.parked.count, p.parked.returned));
            learned = learned.max(p.dep_idx.len());
        });
        // Every row parked from the first split to the one before the last level.
        let parked: Vec<_> = (levels.iter())
            .filter(|&&(shift, count, _)| shift > 0 && count > 0)
            .collect();
        assert!(parked.len() >= 6, "{levels:?}");
        assert!(
            parked.iter().all(|&&(_, count, _)| count == n),
            "{levels:?}"
        );
        assert!(levels.iter().all(|&(_, _, r)| r == 0), "{levels:?}");
        // And the rows went on learning down to the last levels.
        assert!(learned > 2 * n, "{learned}");
    }

    /// A coarse level whose coloring put two P blocks of most parked rows in one probe while
    /// they learn is colored again with them apart (`level.rs`, `APART_HIT_RATE`). Diagonal
    /// blocks of 10 under the smallest NaN winning: rows learn their block's columns one a
    /// level; a shared probe wrote back 3070 of the 4099 parked rows at n = 4099. Now no split
    /// writes back more than a tenth of the rows parked before it, and the pattern is exact.
    #[test]
    fn parked_rows_still_learning_get_their_p_blocks_apart() {
        use crate::testing::{block_diagonal, Synthetic, Winner};
        let n = 4099;
        let truth = block_diagonal(n, 10);
        let mut f = Synthetic::new(&truth, Winner::Smallest, 5);
        // Each ask: the rows parked, and how many of them the split before wrote back.
        let mut levels = Vec::new();
        let planner = drive_with(
            &mut f,
            n,
            n,
            |_| {},
            |p, _| levels.push((p.shift, p.parked.count, p.parked.returned)),
        );
        assert!(
            levels.iter().filter(|l| l.1 == n).count() >= 6,
            "every row parked at the coarse levels: {levels:?}"
        );
        for pair in levels.windows(2) {
            let (before, returned) = (pair[0].1, pair[1].2);
            assert!(10 * returned <= before, "{levels:?}");
        }
        let builder = PatternBuilder::new(n, n, bitvec![0; n]).unwrap();
        let p = Box::new(planner).finish(builder).unwrap();
        assert!((p.row_ptr(), p.col_idx()) == (truth.row_ptr(), truth.col_idx()));
    }

    /// On a 2-D stencil whose grid lines are not a power of two long, a saturation order of a
    /// coarse level's hard conflicts takes fewer probes than the natural order's greedy pass at
    /// some levels (`saturation.rs`): the trace takes fewer evaluations, none of its levels
    /// more, and the pattern is the same and exact.
    #[test]
    fn coarse_levels_take_the_saturation_classes_when_fewer() {
        use crate::testing::{stencil_2d, Synthetic, Winner};
        let truth = stencil_2d(141);
        let n = truth.cols();
        let mut traces = Vec::new();
        for by_classes in [false, true] {
            let mut f = Synthetic::new(&truth, Winner::Smallest, 5);
            let mut levels = Vec::new();
            let planner = drive_with(
                &mut f,
                n,
                n,
                |p| p.by_classes = by_classes,
                |p, probes| levels.push((p.shift, probes.len())),
            );
            let builder = PatternBuilder::new(n, n, bitvec![0; n]).unwrap();
            let p = Box::new(planner).finish(builder).unwrap();
            assert!((p.row_ptr(), p.col_idx()) == (truth.row_ptr(), truth.col_idx()));
            traces.push(levels);
        }
        let total = |levels: &[(u32, usize)]| levels.iter().map(|l| l.1).sum::<usize>();
        let (greedy, classes) = (&traces[0], &traces[1]);
        assert!(
            total(classes) < total(greedy),
            "{greedy:?} against {classes:?}"
        );
        // Level by level, while the levels are the same ones.
        for (g, c) in greedy.iter().zip(classes).take_while(|(g, c)| g.0 == c.0) {
            assert!(c.1 <= g.1, "{greedy:?} against {classes:?}");
        }
    }

    /// What the planner showed at each ask: the level, the probes, the quiet rows, and the
    /// largest clique a row makes when every conflict is hard (its candidates and one known
    /// dependency), below which no such coloring of the last level can go.
    fn steps_of(
        truth: &Pattern,
        winner: crate::testing::Winner,
    ) -> Vec<(u32, usize, usize, usize)> {
        let (m, n) = (truth.rows(), truth.cols());
        let mut f = crate::testing::Synthetic::new(truth, winner, 5);
        let mut steps = Vec::new();
        drive(&mut f, m, n, |p, probes| {
            let clique = (0..m)
                .map(|i| p.cand_ptr[i + 1] - p.cand_ptr[i] + usize::from(!p.deps(i).is_empty()))
                .max()
                .unwrap_or(0);
            steps.push((p.shift, probes, p.quiet.count_ones(), clique));
        });
        steps
    }

    /// A grid's last level is colored by its formula (`coloring/lattice.rs`) when that needs
    /// no more probes than the greedy passes: the longest list of blocks (a row's candidates
    /// and known dependencies) on the 5-point stencil (8 where the passes took 10: 2
    /// evaluations fewer) and on the tridiagonal (4, as the passes); on diagonal blocks under
    /// the smallest NaN winning the passes' 15 beat the formula's 16 (two known dependencies
    /// of a row may share a probe) and are kept.
    #[test]
    fn a_grids_last_level_takes_the_formula_when_it_needs_no_more_probes() {
        use crate::testing::{banded, block_diagonal, stencil_2d, Synthetic, Winner};
        for (truth, winner, formula) in [
            (stencil_2d(100), Winner::Random, true),
            (stencil_2d(100), Winner::Largest, true),
            (banded(5000, 1), Winner::Random, true),
            (block_diagonal(1000, 10), Winner::Smallest, false),
        ] {
            let (m, n) = (truth.rows(), truth.cols());
            let mut f = Synthetic::new(&truth, winner, 5);
            let mut leaf = Vec::new();
            // The lists' last level (a band's would run in windows: `window.rs`).
            let lists_alone = |p: &mut Refine| p.by_window = false;
            drive_with(&mut f, m, n, lists_alone, |p, probes| {
                let probes = probes.len();
                if p.shift == 0 && probes > 0 && p.mode == Mode::Refining {
                    // The longest list: a row's candidates (columns here) and dependencies.
                    let longest = (0..m)
                        .filter(|&i| p.cand_ptr[i + 1] > p.cand_ptr[i])
                        .map(|i| {
                            let cands = &p.cand_idx[p.cand_ptr[i]..p.cand_ptr[i + 1]];
                            let all: std::collections::BTreeSet<u32> =
                                cands.iter().chain(p.deps(i)).copied().collect();
                            all.len()
                        })
                        .max()
                        .unwrap_or(0);
                    leaf.push((probes, longest));
                }
            });
            assert_eq!(leaf.len(), 1, "{winner:?} {leaf:?}");
            let (probes, longest) = leaf[0];
            match formula {
                true => assert_eq!(probes, longest, "{winner:?}"),
                false => assert!(probes < longest, "{winner:?} {leaf:?}"),
            }
        }
    }

    /// Random sparse rows know all their dependencies long before the last level: there their
    /// candidates share probes, and the level takes fewer probes than any coloring with every
    /// conflict hard could (it took 50 at n = 10^5 where it now takes 24).
    #[test]
    fn quiet_rows_share_probes_at_the_last_level() {
        let truth = crate::testing::random_sparse(8000, 8000, 5, 3);
        let steps = steps_of(&truth, crate::testing::Winner::Random);
        let leaf: Vec<_> = steps.iter().filter(|s| s.0 == 0 && s.1 > 0).collect();
        assert_eq!(leaf.len(), 1, "{steps:?}");
        let &(_, probes, quiet, clique) = leaf[0];
        assert!(2 * quiet > truth.rows(), "{steps:?}");
        assert!(probes < clique, "{steps:?}");
    }

    /// Random sparse rows (8000 x 8000, 5 per row), every 64th with two neighbouring inputs
    /// more, 2k and 2k + 1: with the smaller NaN winning, the second is learned only at the
    /// last level, by a quiet row changing in a probe it shares.
    fn hidden_pairs() -> Pattern {
        let (m, n) = (8000, 8000);
        let base = crate::testing::random_sparse(m, n, 5, 3);
        crate::testing::from_rows(m, n, |i, r| {
            r.extend(base.row(i).iter().map(|&j| j as usize));
            if i % 64 == 0 {
                let k = (i * 7919) % (n / 2);
                r.extend([2 * k, 2 * k + 1]);
            }
        })
    }

    /// A quiet row may still hold an unknown dependency: one whose NaN always lost to a known
    /// one's in the same block (inputs 2k and 2k + 1, the smaller NaN winning). At the last
    /// level it changes in a probe it shares with another candidate; a second step, every
    /// conflict hard, resolves what that probe left, and the pattern is exact.
    #[test]
    fn a_quiet_row_changing_in_a_shared_probe_takes_a_second_last_step() {
        let truth = hidden_pairs();
        let (m, n) = (truth.rows(), truth.cols());
        let steps = steps_of(&truth, crate::testing::Winner::Smallest);
        let leaf: Vec<_> = steps.iter().filter(|s| s.0 == 0 && s.1 > 0).collect();
        assert_eq!(leaf.len(), 2, "{steps:?}");
        assert!(leaf[0].2 > 0 && leaf[1].2 == 0, "{steps:?}");
        // And the pattern: the same planner through a session.
        let mut f = crate::testing::Synthetic::new(&truth, crate::testing::Winner::Smallest, 5);
        let x0: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 * 1e-3).collect();
        let p = crate::trace(&mut f, m, &x0, &crate::TraceOptions::default()).unwrap();
        for i in 0..m {
            assert_eq!(p.row(i), truth.row(i), "row {i}");
        }
    }

    /// At the last level a tag naming a candidate that sat alone among its row's columns in
    /// the probe is left to the step's end, which proves the candidate from the change
    /// (`absorb`); a tag naming a candidate that shared its probe (a quiet row's) is recorded
    /// by the tell, since the change alone proves neither. Each pair is recorded once, and the
    /// pattern is exact. (The pattern of the test above: quiet rows that change in a shared
    /// probe.)
    #[test]
    fn last_level_tags_are_recorded_once() {
        let truth = hidden_pairs();
        let (m, n) = (truth.rows(), truth.cols());
        let mut f = crate::testing::Synthetic::new(&truth, crate::testing::Winner::Smallest, 5);
        let x0: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 * 1e-3).collect();
        let mut baseline = vec![0.0; m];
        f.eval(&x0, &mut baseline).unwrap();
        let mut planner =
            Refine::new(n, baseline, Refine::allowance(n), EntryKind::Assumed).unwrap();
        let (mut x, mut y) = (x0.clone(), vec![0.0; m]);
        // Changed candidates alone in their probe (left to the step's end), and changed ones
        // sharing it whose tag the tell recorded.
        let (mut left_to_end, mut told_shared) = (0usize, 0usize);
        loop {
            let probes = planner.ask().unwrap();
            if probes.is_empty() {
                break;
            }
            tell_all(&mut planner, &mut f, &probes, &x0, (&mut x, &mut y));
            if planner.shift != 0 || planner.mode != Mode::Refining {
                continue;
            }
            let mut recorded = planner.new_deps.clone();
            recorded.sort_unstable();
            for i in 0..m {
                let (a, b) = (planner.cand_ptr[i], planner.cand_ptr[i + 1]);
                let words = &planner.cand_probe[a..b];
                for (e, &v) in words.iter().enumerate() {
                    if v & HIT == 0 {
                        continue;
                    }
                    let in_probe = words.iter().filter(|&&o| o & PROBE == v & PROBE).count();
                    let pair = (i as u32, planner.cand_idx[a + e]);
                    let told = recorded.binary_search(&pair).is_ok();
                    match in_probe {
                        1 => {
                            assert!(!told, "row {i}: {pair:?} recorded by the tell");
                            left_to_end += 1;
                        }
                        _ => told_shared += usize::from(told),
                    }
                }
            }
        }
        assert!(
            left_to_end >= 20 && told_shared >= 20,
            "{left_to_end}, {told_shared}"
        );
        for i in 0..m {
            assert_eq!(planner.deps(i), truth.row(i), "row {i}");
        }
    }

    /// A tag looked for among a row's dependencies from the place the row before found its
    /// own (`find_dep`) gets the answer a bisection gives, found or where it would go, and
    /// the place moves to where a tag was found: lists of 0 to 9 columns, tags in them and
    /// between, before and after them, the place anywhere (past the list too).
    #[test]
    fn a_tag_found_from_a_guess_is_where_bisection_finds_it() {
        let mut rng = crate::rng::Rng::new(11);
        let mut moved = 0;
        for _ in 0..20000 {
            let len = rng.below(10);
            let mut deps: Vec<u32> = (0..len).map(|_| rng.below(40) as u32).collect();
            deps.sort_unstable();
            deps.dedup();
            let j = rng.below(42) as u32;
            let mut guess = rng.below(12);
            let before = guess;
            let found = find_dep(&deps, j, &mut guess);
            assert_eq!(found, deps.binary_search(&j), "{deps:?} {j} from {before}");
            match found {
                Ok(at) => {
                    assert_eq!(guess, at, "{deps:?} {j}");
                    moved += usize::from(at != before);
                }
                Err(_) => assert_eq!(guess, before, "{deps:?} {j}"),
            }
        }
        assert!(moved > 1000, "the guess moved {moved} times");
    }

    /// Merging new pairs into the dependency CSR (`merge_deps`) gives each row the sorted union
    /// of its known and new columns, whatever rows gain entries (none, the first, the last,
    /// runs of neighbours), with repeated pairs and pairs already known; the pairs stay in
    /// `merged`, sorted and distinct.
    #[test]
    fn merged_dependencies_are_each_rows_sorted_union() {
        let mut rng = crate::rng::Rng::new(7);
        // Merges of few pairs into many known ones go in place (`merge_in_place`), others into
        // new arrays: both are seen.
        let (mut in_place, mut copied) = (0, 0);
        for case in 0..60 {
            let (m, n) = (1 + rng.below(40), 1 + rng.below(300));
            let mut planner = Refine::new(n, vec![0.0; m], 16, EntryKind::Assumed).unwrap();
            // Every other case merges in two halves of rows at once (`merged_rows`).
            planner.halves_from = [0, usize::MAX][case % 2];
            let mut truth: Vec<std::collections::BTreeSet<u32>> = vec![Default::default(); m];
            for round in 0..1 + rng.below(8) {
                let mut pairs = Vec::new();
                let few = round > 0 && rng.below(2) == 0;
                for (i, known) in truth.iter().enumerate() {
                    // Some rows nothing, some a few, now and then a known one again; in a
                    // round of few pairs, a row or two.
                    let k = match few {
                        true => usize::from(rng.below(m) < 2) * (1 + rng.below(3)),
                        false => [0, 0, 1, 3, 8][rng.below(5)],
                    };
                    for _ in 0..k {
                        let j = match known.iter().next() {
                            Some(&j) if rng.below(4) == 0 => j,
                            _ => rng.below(n) as u32,
                        };
                        pairs.push((i as u32, j));
                    }
                }
                // Two runs of increasing rows, as two probes' tells leave them.
                let run = |odd: usize| pairs.iter().skip(odd).step_by(2).copied();
                let a: Vec<(u32, u32)> = run(0).chain(run(1)).collect();
                planner.new_deps = a.clone();
                match planner.merge_deps().unwrap() {
                    Merge::InPlace => in_place += 1,
                    Merge::Copied => copied += 1,
                    Merge::First | Merge::Nothing => {}
                }
                for &(i, j) in &a {
                    truth[i as usize].insert(j);
                }
                let mut want: Vec<(u32, u32)> = a;
                want.sort();
                want.dedup();
                assert_eq!(planner.merged, want, "case {case}");
                assert_eq!(planner.dep_ptr.len(), m + 1);
                for (i, row) in truth.iter().enumerate() {
                    let want: Vec<u32> = row.iter().copied().collect();
                    assert_eq!(planner.deps(i), &want[..], "case {case} row {i}");
                }
                assert_eq!(planner.dep_idx.len(), planner.dep_ptr[m], "case {case}");
                planner.merged.clear();
            }
        }
        assert!(in_place >= 20, "{in_place} merges in place");
        assert!(copied >= 20, "{copied} merges into new arrays");
    }

    /// The patterns two planners are traced side by side on: banded, blocked, stencil,
    /// random, rectangular, arrowhead and denser.
    fn side_by_side_patterns() -> Vec<Pattern> {
        use crate::testing as synthetic;
        let mut rng = crate::rng::Rng::new(11);
        vec![
            synthetic::banded(3001, 1),
            synthetic::banded(2000, 5),
            synthetic::block_diagonal(1500, 10),
            synthetic::stencil_2d(45),
            synthetic::random_sparse(2000, 2000, 5, 9),
            synthetic::random_sparse(700, 1800, 12, 4),
            synthetic::arrowhead(600),
            synthetic::from_rows(300, 400, |_, r| {
                r.extend((0..400).filter(|_| rng.below(100) < 20))
            }),
        ]
    }

    /// Traces `truth` with two planners told the same outputs, under each winner policy of
    /// the synthetic black box, and asserts that they ask the same probes at every step, keep
    /// the same rows parked and quiet, the same candidates' words, new dependencies and parked
    /// rows' outcomes after every tell, and end with the same pattern. `setup` makes each
    /// planner different once; `each_step` after every ask.
    fn trace_side_by_side(
        truth: &Pattern,
        setup: impl Fn(&mut Refine, &mut Refine),
        each_step: impl Fn(&mut Refine, &mut Refine),
    ) {
        use crate::testing::{self as synthetic, Winner};
        for winner in [Winner::Random, Winner::Smallest, Winner::Anonymous] {
            let (m, n) = (truth.rows(), truth.cols());
            let mut f = synthetic::Synthetic::new(truth, winner, 5);
            let x0: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 * 1e-3).collect();
            let mut baseline = vec![0.0; m];
            f.eval(&x0, &mut baseline).unwrap();
            let planner = || {
                Refine::new(
                    n,
                    baseline.clone(),
                    Refine::allowance(n),
                    EntryKind::Assumed,
                )
            };
            let (mut one, mut other) = (planner().unwrap(), planner().unwrap());
            setup(&mut one, &mut other);
            let (mut x, mut y) = (x0.clone(), vec![0.0; m]);
            let mut steps = 0;
            loop {
                let (a, b) = (one.ask().unwrap(), other.ask().unwrap());
                each_step(&mut one, &mut other);
                let cols = |p: &[Probe]| p.iter().map(|p| p.cols().to_vec()).collect::<Vec<_>>();
                assert_eq!(cols(&a), cols(&b), "step {steps}, {m} x {n}, {winner:?}");
                assert_eq!(one.parked.rows, other.parked.rows);
                // The runs of parked rows and their lists, as the tells read them.
                assert_eq!(one.parked.spans, other.parked.spans);
                assert_eq!(one.quiet, other.quiet);
                assert_eq!(one.cand_idx, other.cand_idx);
                assert_eq!(one.cand_probe, other.cand_probe);
                if a.is_empty() {
                    break;
                }
                for (k, probe) in a.iter().enumerate() {
                    probe.write_tags(&mut x);
                    f.eval(&x, &mut y).unwrap();
                    probe.restore(&x0, &mut x);
                    // Some unchanged rows reported perturbed, as a verification would.
                    let perturbed: Vec<u32> = (0..m)
                        .filter(|&i| {
                            i % 97 == steps % 97 && y[i].to_bits() == baseline[i].to_bits()
                        })
                        .map(|i| i as u32)
                        .collect();
                    let a = one.tell(k, probe, &y, &perturbed).unwrap();
                    let b = other.tell(k, &b[k], &y, &perturbed).unwrap();
                    assert_eq!(a, b);
                    assert_eq!(one.cand_probe, other.cand_probe);
                    let sorted = |v: &[(u32, u32)]| {
                        let mut v = v.to_vec();
                        v.sort_unstable();
                        v
                    };
                    assert_eq!(sorted(&one.new_deps), sorted(&other.new_deps));
                    assert_eq!(sorted(&one.parked.hits), sorted(&other.parked.hits));
                }
                steps += 1;
            }
            let finish = |p: Refine| {
                let builder = PatternBuilder::new(m, n, bitvec![0; m]).unwrap();
                Box::new(p).finish(builder).unwrap()
            };
            let (p, q) = (finish(one), finish(other));
            assert_eq!((p.row_ptr(), p.col_idx()), (q.row_ptr(), q.col_idx()));
            assert_eq!(p.kinds(), q.kinds());
            assert!(steps > 3, "{steps} steps");
        }
    }

    /// Cutting the passes over the rows in two halves (`halves.rs`) changes nothing: one
    /// planner with every pass cut (down to the smallest) and one with none, side by side.
    #[test]
    fn passes_in_two_halves_plan_what_one_pass_plans() {
        for truth in &side_by_side_patterns() {
            let setup = |whole: &mut Refine, halves: &mut Refine| {
                whole.halves_from = usize::MAX;
                halves.halves_from = 0;
            };
            trace_side_by_side(truth, setup, |_, _| ());
        }
    }

    /// The first levels' shortcuts (the listing passing over rows alike as a run,
    /// `Refine::same_blind_rows`; the split parking a row whole, `Refine::parks_whole`) plan
    /// what the passes row by row plan: one planner with them and one without, side by side,
    /// in one pass and in halves cut down to the smallest. And they are taken: at the first
    /// level every row after the first is listed in the run, and after the first step every
    /// row of a tridiagonal parks whole.
    #[test]
    fn the_first_levels_shortcuts_plan_what_the_passes_plan() {
        // Besides those: rows whose dependencies fill aligned blocks (whole at some level)
        // with one more column elsewhere or none, and rows of a few scattered columns.
        let mut rng = crate::rng::Rng::new(5);
        let more = [
            crate::testing::from_rows(2048, 2048, |i, r| {
                r.extend(i / 4 * 4..i / 4 * 4 + 4);
                if i % 3 > 0 {
                    r.push(i * 37 % 2048);
                }
            }),
            crate::testing::from_rows(1024, 1024, |i, r| {
                r.extend(i / 2 * 2..(i / 2 * 2 + 2 + 2 * (i % 3)).min(1024));
            }),
            crate::testing::from_rows(1500, 1500, |_, r| {
                r.extend((0..1 + rng.below(3)).map(|_| rng.below(1500)))
            }),
        ];
        for truth in side_by_side_patterns().iter().chain(&more) {
            for halves_from in [usize::MAX, 0] {
                let setup = |with: &mut Refine, without: &mut Refine| {
                    without.shortcuts = false;
                    (with.halves_from, without.halves_from) = (halves_from, halves_from);
                };
                trace_side_by_side(truth, setup, |_, _| ());
            }
        }
        let truth = crate::testing::banded(3001, 1);
        let (m, n) = (truth.rows(), truth.cols());
        let mut f = crate::testing::Synthetic::new(&truth, crate::testing::Winner::Random, 5);
        let x0: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 * 1e-3).collect();
        let mut baseline = vec![0.0; m];
        f.eval(&x0, &mut baseline).unwrap();
        for shortcuts in [true, false] {
            let mut planner = Refine::new(
                n,
                baseline.clone(),
                Refine::allowance(n),
                EntryKind::Assumed,
            )
            .unwrap();
            planner.shortcuts = shortcuts;
            // The first row's list: the one block of all columns, probeable, no dependency.
            let (lists, k_idx) = ([(P_FLAG, 1, 1)], [P_FLAG]);
            let run_end = planner.same_blind_rows(1..m, &lists, &k_idx);
            assert_eq!(run_end, if shortcuts { m } else { 1 });
            let probes = planner.ask().unwrap();
            assert_eq!(probes.len(), 1);
            assert_eq!(probes[0].cols().len(), n);
            let (mut x, mut y) = (x0.clone(), vec![0.0; m]);
            tell_all(&mut planner, &mut f, &probes, &x0, (&mut x, &mut y));
            planner.merge_deps().unwrap();
            let whole = (0..m).filter(|&i| planner.parks_whole(i).is_some()).count();
            assert_eq!(whole, if shortcuts { m } else { 0 });
        }
    }

    /// The tells read the same rows in the same order whether they go through
    /// `Reader::observe_rows` with its delay line (rows far apart) or through their own loop
    /// (rows close together): one planner told every probe the first way, one the second,
    /// side by side, each also in halves.
    #[test]
    fn tells_of_rows_far_apart_and_close_together_read_the_same() {
        for truth in &side_by_side_patterns() {
            let setup = |a: &mut Refine, b: &mut Refine| {
                a.halves_from = 0;
                b.halves_from = 0;
            };
            let each_step = |far: &mut Refine, near: &mut Refine| {
                far.far = true;
                near.far = false;
            };
            trace_side_by_side(truth, setup, each_step);
        }
    }

    /// A coarse level's coloring counted over a sample of the rows (`sample.rs`) traces
    /// exactly, at about the cost of counting every row: the same random patterns (rows
    /// parked in runs at the coarse levels, whose probes come from their whole lists) traced
    /// with sampling from the first level on and with none end with the true pattern, and
    /// the probes differ (the sample was used), the evaluations within 5% of each other.
    /// Where no tag comes back (blind rows) nothing is sampled: the same probes.
    #[test]
    fn a_coloring_counted_over_a_sample_traces_exactly_at_about_the_cost() {
        use crate::testing::{self as synthetic, Winner};
        // Pairs of neighbouring columns at random places: the larger one's tag loses to the
        // smaller's until a level separates them, so parked rows keep a dependency unknown in
        // a P block (the runs' probes must be the whole lists').
        let mut rng = crate::rng::Rng::new(21);
        let pairs = synthetic::from_rows(20000, 20000, |_, r| {
            for _ in 0..3 {
                let j = rng.below(19999);
                r.extend([j, j + 1]);
            }
        });
        let random = |m, n, per_row, seed| synthetic::random_sparse(m, n, per_row, seed);
        for (truth, winner) in [
            (random(20000, 20000, 5, 3), Winner::Random),
            (random(20000, 20000, 5, 3), Winner::Smallest),
            (random(16000, 16000, 12, 4), Winner::Random),
            (random(12000, 30000, 3, 8), Winner::Anonymous),
            (pairs.clone(), Winner::Smallest),
            (pairs, Winner::Random),
        ] {
            let (m, n) = (truth.rows(), truth.cols());
            let mut runs = Vec::new();
            for sample_from in [usize::MAX, 0] {
                let mut f = synthetic::Synthetic::new(&truth, winner, 5);
                let mut asked = Vec::new();
                let planner = drive_with(
                    &mut f,
                    m,
                    n,
                    |p| p.sample_from = sample_from,
                    |_, probes| asked.extend(probes.iter().map(|p| p.cols().to_vec())),
                );
                let builder = PatternBuilder::new(m, n, bitvec![0; m]).unwrap();
                let p = Box::new(planner).finish(builder).unwrap();
                assert!(
                    (p.row_ptr(), p.col_idx()) == (truth.row_ptr(), truth.col_idx()),
                    "{m} x {n}, {winner:?}, sampled from {sample_from}: {} entries of {}",
                    p.nnz(),
                    truth.nnz()
                );
                runs.push(asked);
            }
            let (whole, sampled) = (&runs[0], &runs[1]);
            if winner == Winner::Anonymous {
                assert_eq!(whole, sampled, "blind rows: no sample");
                continue;
            }
            assert_ne!(whole, sampled, "the sample changed no probe");
            let (a, b) = (whole.len() as f64, sampled.len() as f64);
            assert!(
                (a - b).abs() <= 0.05 * a,
                "{a} evaluations counting every row, {b} sampled"
            );
        }
    }
}
