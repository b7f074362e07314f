//! Planning a step: which blocks are probed at the current level, and their coloring into
//! probes; or the switch to one probe per column.
//!
//! [`Refine::plan_level`] makes one pass over the rows to list each row's blocks, flagged P
//! (probeable: holds no known dependency) or Q (holds one), with rows whose list equals the
//! row before's sharing it (and parked rows listed from their dependencies, runs at once);
//! then it decides whether refining still pays (the spending rule, dense rows, the cap: see
//! the `refine` module docs) and colors the probed blocks greedily in natural order
//! ([`color_blocks`]), counting each color's hard and soft conflicts with the block being
//! colored from what its rows' blocks took so far (kept as lists, at coarse levels of
//! patterns without locality as tallies, at the last level as masks: `conflicts.rs`). At the
//! last level it colors them
//! again with quiet rows' candidates sharing probes, and once more class by class (iterated
//! greedy): the `refine` module docs, "The last level". At a coarse level where each block is
//! held by thousands of lists (a big pattern without locality), the coloring counts over a
//! sample of the lists (`sample.rs`). At the last level a structured grid's lists are tried
//! first against its coloring formula ([`by_formula`]; the `refine` module docs, "The last
//! level", say when it is kept).
//! [`Refine::start_onehot`] hands out one probe per still-unknown column instead.
//!
//! On two cores, at large levels, the listing pass runs in two halves of rows at once
//! ([`Refine::list_rows`], `halves.rs`): the cut falls where no run of parked rows sharing a
//! list goes on, each half lists its rows into lists of its own and flags blocks in flags of
//! its own, and [`Listing::join`] makes of the two what one pass makes (the second half's
//! first list merged into the first half's last when they are the same, its runs of parked
//! rows pointing at the joined lists). The class lists of the probes are made while the
//! helper writes the candidates' probes into their words. The coloring stays one pass: each
//! block's color depends on those before it.

use super::conflicts::{
    p_mask_of_list, restart, Conflicts, Lists, Masks, Tallies, BLIND_SOFT, HARD, QUIET, SOFT,
    TALLY_COLORS, TALLY_MAX_LIST, UNUSED,
};
use super::wide::{SAMPLE_PROBES, WIDE_ROWS_MOST};
use super::{
    block_range, probes_holding, Mode, Refine, DENSE_MIN, MIN_BLOCKS_FOR_DENSE_TEST,
    MIN_BLOCKS_FOR_SCALE_TEST, NONE, P_FLAG, SPEND_DIVISOR, SPEND_SLACK, UNTESTED, WIDE_ROW_BLOCKS,
};
use super::{sample, saturation};
use crate::error::{
    collect, copied, filled, push, reserve, reserve_exact, zero_bits, Error, ErrorKind, Result,
};
use crate::halves::{both, halfway};
use crate::planner::parked::{extend_span, for_each_block, Kind, STORED};
use crate::prefetch::prefetch;
use crate::probe::Probe;

impl Refine {
    /// Plans the step at the current level: marks probeable candidates, colors their blocks,
    /// and returns the probes; or switches to one probe per column when refining gains
    /// nothing. Returns `None` when this level has nothing probeable.
    pub(super) fn plan_level(&mut self) -> Result<Option<Vec<Probe>>> {
        let shift = self.shift;
        let leaf = shift == 0;
        if leaf && self.new_deps.is_empty() {
            // The last level's plan is the trace's peak (its lists and their transpose are the
            // longest): the emptied allocation kept for the tells' new dependencies is let go
            // before it (8 MB on the tridiagonal at 10^6), and the last tells grow their own.
            self.new_deps = Vec::new();
        }
        let nblocks = (self.n as u64).div_ceil(1u64 << shift) as usize;
        // What the step just told showed the wide rows' own probes (`wide.rs`); none are open
        // from here on.
        let own_palette = self.wide.palette();
        self.wide.end_step();
        self.parked.colors = Vec::new();
        // A banded pattern's last level as masks, when the lists would do no better
        // (`window.rs`).
        if leaf {
            if let Some(probes) = self.try_window()? {
                return Ok(Some(probes));
            }
        } else if let Some(probes) = self.try_period()? {
            // A banded pattern's coarse level by the greedy pass's period (`period.rs`).
            return Ok(Some(probes));
        }
        // One pass over the rows: which candidates are probeable (hold no known dependency),
        // and each row's blocks K_i, flagged P (a probeable candidate) or Q (holds a known
        // dependency), as CSR over the rows with a probeable candidate. An entry is the block
        // id with the flag in its top bit. Blocks are aligned ranges, so block b holds column
        // d exactly when d >> shift == b, and one merge of the sorted candidates with the
        // sorted dependencies does it all.
        //
        // The lists' bounds, per row ordinal r (rows with a probeable candidate, in order): the
        // start of its list in `lists[r].0`, with the top bit set when the row is *blind* (no
        // known dependency among its blocks: no tag came back for it), and a fill position in
        // `lists[r].1` (used by the coloring); its list ends where the next one starts (an
        // extra last entry holds the end). u32 offsets: a k_idx longer than that falls back to
        // one probe per column below.
        //
        // Rows with the same list (consecutive in row order) share one: `lists[r].2` is how
        // many rows list r stands for. Conflicts are counted by weight, so the coloring is the
        // one every row listed apart would give. `listed` is the length of all the rows' lists.
        // The rows in two halves on two cores (`halves.rs`), cut where no run of parked rows
        // sharing a list goes on; the halves' lists joined as one pass would have made them.
        // Listed again, once, when more rows than `WIDE_ROWS_MOST` came out wide: the pattern's
        // rows are all about as wide (random 80 per row at n = 2 x 10^4), none would get
        // probes of its own, and left out of the coloring none would be tested; they are kept
        // in it from then on, and the work limit below weighs their coloring as any row's.
        let (listing, mut probed, is_cand) = loop {
            // Byte flags: set once per candidate in the hottest loop, where they beat bit
            // sets. (At the last level, `probed` holds a probed block's first color plus one
            // for the iterated greedy pass: nonzero all the same.)
            let mut probed = filled(0u8, nblocks, "block flags")?;
            let mut is_cand = filled(false, nblocks, "block flags")?;
            let m = self.m;
            let at_once = m + self.cand_idx.len() >= self.halves_from;
            let mid = match at_once {
                true => self.listing_cut(shift),
                false => m,
            };
            let at_once = at_once && mid < m;
            let (mut probed_there, mut is_cand_there) = match at_once {
                true => (
                    filled(0u8, nblocks, "block flags")?,
                    filled(false, nblocks, "block flags")?,
                ),
                false => (Vec::new(), Vec::new()),
            };
            let mut words = std::mem::take(&mut self.cand_probe);
            let (words_here, words_there) = words.split_at_mut(self.cand_ptr[mid]);
            let spare = std::mem::take(&mut self.spare);
            let this = &*self;
            let flags_here = (&mut probed[..], &mut is_cand[..]);
            let flags_there = (&mut probed_there[..], &mut is_cand_there[..]);
            let (first, second) = both(
                at_once,
                || this.list_rows(0..mid, words_here, flags_here, spare, true),
                || this.list_rows(mid..m, words_there, flags_there, Vec::new(), false),
            );
            self.cand_probe = words;
            let mut listing = first?;
            listing.join(second?)?;
            for (here, there) in probed.iter_mut().zip(&probed_there) {
                *here |= *there;
            }
            for (here, there) in is_cand.iter_mut().zip(&is_cand_there) {
                *here |= *there;
            }
            drop((probed_there, is_cand_there));
            if !leaf && !self.wide_in && self.wide_are_most(&listing.wide) {
                self.wide_in = true;
                self.spare = std::mem::take(&mut listing.k_idx);
                continue;
            }
            break (listing, probed, is_cand);
        };
        let Listing {
            mut lists,
            mut k_idx,
            suspected,
            wide,
            spans,
            listed,
            work,
            max_q,
            longest,
            max_clique,
            listed_p,
            blind_rows,
        } = listing;
        self.parked.spans = spans;
        self.parked.listed_p = listed_p;
        if lists.is_empty() && suspected.is_empty() {
            return Ok(None);
        }
        lists.push((k_idx.len() as u32, k_idx.len() as u32, 0));
        let unknown_cols: usize = (0..nblocks)
            .filter(|&b| is_cand[b])
            .map(|b| {
                let (s, e) = self.block_range(b as u32, shift);
                (e - s) as usize
            })
            .sum();
        drop(is_cand);
        // What one probe per column costs a probe at least: the inputs written, the outputs
        // read, and f's one operation per dependency.
        let per_probe = self.n + self.m + self.dep_idx.len();
        let held = self.cand_idx.len() <= 4 * self.dep_idx.len() + 64 * self.m;
        let too_much_work = work > work_limit(listed, (unknown_cols, per_probe), shift, held);
        if too_much_work || nblocks > P_FLAG as usize || k_idx.len() >= P_FLAG as usize {
            return Ok(Some(self.start_onehot()?));
        }
        // At a coarse level where every block has thousands of lists, the coloring counts over
        // a sample of them (`sample.rs`); the runs of parked rows keep their whole lists, for
        // their probes, and the others go.
        let probed_blocks = probed.iter().filter(|&&p| p != 0).count();
        let s = sample::stride(leaf, &lists, k_idx.len(), probed_blocks, self.sample_from);
        let runs = match s > 1 {
            true => {
                let (part, part_k) = sample::sample(&lists, &k_idx, s, shift)?;
                let runs = sample::RunLists::take(&mut self.parked.spans, &lists, &k_idx)?;
                (lists, k_idx) = (part, part_k);
                Some(runs)
            }
            false => None,
        };
        let rows = lists.len() - 1;
        // At the last level, the lists of a structured grid (a band, a stencil) numbered in
        // order: their blocks colored by the grid's formula, no two blocks of a list alike, at
        // the longest list's length (`coloring/lattice.rs`); any other pattern fails the
        // formula on a few lists. The last level keeps apart only a P block from the row's
        // other blocks (two Q blocks may share a probe, and a quiet row's P blocks too), so
        // the greedy passes below can need fewer colors than the longest list (a row's P
        // blocks and one Q block, `max_clique`, is their bound without quiet rows). Within one
        // of that the formula is taken with no transpose and no greedy pass (the tridiagonal:
        // 4 colors where the passes find 4); past it the passes run and the fewer colors win
        // (the 5-point stencil: 8 against 10; diagonal blocks of 10 under the smallest NaN
        // winning: 16 against 15).
        let formula = match leaf && runs.is_none() {
            true => by_formula(&lists, &k_idx, nblocks, longest, &probed)?,
            false => None,
        };
        let (formula, formula_alone) = match formula {
            Some((color, k)) if k <= max_clique + 1 => (None, Some((color, k))),
            other => (other, None),
        };

        // The rows of each block, for the greedy passes (none when the formula alone colors).
        let (t_ptr, t_idx) = match formula_alone {
            None => transpose(&lists, &k_idx, nblocks)?,
            Some(_) => (Vec::new(), Vec::new()),
        };

        // Greedy coloring of the probed blocks in natural order. A P block and a Q block of one
        // row in one probe cost the row that P block's information: a hard conflict. Two P
        // blocks of one row may share a probe (an unchanged output proves both zero): a soft
        // conflict, counted. At the last level every conflict is hard, so the coloring is a
        // proper partial distance-2 coloring and every tested candidate is resolved (but for
        // quiet rows' candidates in the second coloring below). At coarse
        // levels the palette is capped: when the hard conflicts allow no proper coloring within
        // the cap, a block takes the color with the fewest conflicts.
        // The coarse steps' allowance: what refining may spend past one probe per column.
        let allowance = unknown_cols / SPEND_DIVISOR + SPEND_SLACK.min(self.n / 4);
        // What the coarse allowance leaves for each level to come.
        let per_level = allowance.saturating_sub(self.spent) / (shift as usize + 1);
        let cap = match leaf {
            true => usize::MAX,
            false => {
                // Blind rows' blocks apart, within what the coarse allowance leaves for each
                // level to come (`blind_palette`).
                let blind = match blind_rows > 0 {
                    true => blind_palette(&lists)?.min(per_level),
                    false => 0,
                };
                coarse_cap(max_q, self.cap_growth).max(blind)
            }
        };
        let (mut color, formula_colors, far) = match formula_alone {
            Some((color, colors)) => (color, Some(colors), lists_far(&lists, &k_idx)),
            None => (
                filled(NONE, nblocks, "block colors")?,
                None,
                scattered(&t_ptr, &t_idx, s),
            ),
        };
        let by_block = (&t_ptr[..], &t_idx[..], far);
        self.far = far;
        let tallied = !leaf
            && by_block.2
            && cap <= TALLY_COLORS
            && longest <= TALLY_MAX_LIST
            && k_idx.len() >= Tallies::space(rows);
        let (colors, hard_taken) = if let Some(colors) = formula_colors {
            // Colored by formula: every conflict kept apart (at the last level every one is
            // hard), none taken.
            (colors, 0)
        } else if let Some(mut tallies) = tallied
            .then(|| Tallies::new(&lists, &mut k_idx, cap))
            .flatten()
        {
            // A coarse level of a pattern without locality: few colors, long scattered lists.
            // Each row keeps a tally of its colors so far instead (`conflicts.rs`), in the
            // space of the block lists (no longer needed; when they are too short for it the
            // rows are few and short, and keep lists): the same coloring, counted per row in
            // a fixed number of vector steps.
            let colors = any_count(color_blocks(
                nonzero(&probed),
                by_block,
                &mut tallies,
                &mut color,
                (leaf, false),
                cap,
            )?)?;
            if runs.is_none() {
                self.parked.set_masks(|r| Some(tallies.p_mask(r)));
            }
            (colors, tallies.hard_taken())
        } else {
            // The blocks of the rows' lists, kept for the saturation classes when they may pay
            // (`saturation.rs`: the rows have settled, none is blind, the lists are short enough):
            // the passes below write the rows' colors over them.
            let blocks = match self.by_classes
                && !leaf
                && runs.is_none()
                && blind_rows == 0
                && self.last_hit_rate < saturation::SETTLED_HIT_RATE
                && saturation::worth_trying(&lists, per_probe)
            {
                true => Some(copied(&k_idx, "block lists")?),
                false => None,
            };
            // What a block's rows already hold: row r's colored blocks so far, as color | P flag,
            // in its list up to its fill position (its block ids are no longer read once
            // transposed). Coloring block b reads one short contiguous list per row of b instead of
            // looking up the color of each of the row's blocks, scattered over the color array;
            // then appends b's color to each of those lists. A row's start, fill and weight sit
            // side by side: one cache line serves all three.
            let mut seen = k_idx;
            let any_quiet = leaf && lists.iter().any(|l| l.2 & QUIET != 0);
            let quiet_first = any_quiet && self.all_quiet;
            // At the last level each pass tries masks first (`conflicts.rs`).
            let mut apart_kept = false;
            let (mut colors, mut hard_taken) = color_pass(
                nonzero(&probed),
                by_block,
                (&mut lists, &mut seen),
                &mut color,
                (leaf, quiet_first),
                cap,
            )?;
            // A coarse level that would bring most parked rows back while they learn: colored
            // again with their P blocks apart ([`APART_HIT_RATE`]). (Not on a sample of the
            // lists: the runs of parked rows then keep lists of their own.)
            if !leaf
                && runs.is_none()
                && self.last_hit_rate >= APART_HIT_RATE
                && 2 * parked_sharing(&self.parked.spans, &lists, &seen) > self.parked.count
            {
                // A coarse pass over the rows' lists again, from their starts.
                let again = |lists: &mut [(u32, u32, u32)], seen: &mut [u32], color: &mut [u32]| {
                    restart(lists);
                    color_pass(
                        nonzero(&probed),
                        by_block,
                        (lists, seen),
                        color,
                        (false, false),
                        cap,
                    )
                };
                let flagged = flag_parked_lists(&self.parked.spans, &mut lists)?;
                let (k, hard) = again(&mut lists, &mut seen, &mut color)?;
                for &r in &flagged {
                    lists[r as usize].0 &= !P_FLAG;
                }
                apart_kept = k < probed_blocks && k <= colors + APART_MORE_COLORS;
                (colors, hard_taken) = match apart_kept {
                    true => (k, hard),
                    // The first coloring again (the same pass, the same colors).
                    false => again(&mut lists, &mut seen, &mut color)?,
                };
            }
            // Colored again class by class, when the blocks were kept above and a saturation
            // order of the hard conflicts needs fewer colors than the pass took
            // (`saturation.rs`). Not after the parked rows' P blocks were kept apart (their soft
            // conflicts opened colors there), nor when the capped palette made blocks take hard
            // conflicts.
            let again_by_classes = colors >= 3 && hard_taken == 0 && !apart_kept;
            if let Some(blocks) = blocks.filter(|_| again_by_classes) {
                let by = (&t_ptr[..], &t_idx[..]);
                if let Some((order, ends)) =
                    saturation::hard_classes(&lists, &blocks, by, &probed, colors - 1)?
                {
                    drop(blocks);
                    restart(&mut lists);
                    let order = order.iter().map(|&b| b as usize);
                    let (k, hard) = color_pass(
                        order,
                        by_block,
                        (&mut lists, &mut seen),
                        &mut color,
                        (false, false),
                        cap,
                    )?;
                    // Each class opens at most one color (no row is blind).
                    debug_assert!(
                        k <= ends.len() && hard == 0,
                        "{k} colors, {} classes",
                        ends.len()
                    );
                    (colors, hard_taken) = (k, hard);
                }
            }
            // The last level ("The last level" in the module docs): quiet rows' candidates sharing
            // probes, when that saves enough; then one pass of iterated greedy.
            let mut quiet = quiet_first;
            // A block's color plus one, kept in `probed` (nonzero all the same) while another pass
            // colors the blocks again: the colors of the passes that were not kept come from there.
            let keep_in_probed = |probed: &mut [u8], color: &[u32]| {
                for (p, &c) in probed.iter_mut().zip(color) {
                    if *p != 0 {
                        *p = c as u8 + 1;
                    }
                }
            };
            let fits_u8 = |colors: usize| colors < u8::MAX as usize;
            if any_quiet && !quiet_first && colors > QUIET_SAVING && fits_u8(colors) {
                keep_in_probed(&mut probed, &color);
                let (k, _) = color_pass(
                    nonzero(&probed),
                    by_block,
                    (&mut lists, &mut seen),
                    &mut color,
                    (leaf, true),
                    cap,
                )?;
                if 4 * k <= 3 * colors && k + QUIET_SAVING <= colors {
                    (colors, quiet) = (k, true);
                } else {
                    // The first colors back. (The rows' lists in `seen` stay those of the second
                    // pass: only parked rows' are read after the coloring, and no row is parked at
                    // the last level.)
                    debug_assert_eq!(self.parked.count, 0);
                    for (c, &p) in color.iter_mut().zip(&probed) {
                        if p != 0 {
                            *c = u32::from(p) - 1;
                        }
                    }
                }
            }
            // One pass of iterated greedy (Culberson): the blocks again, class by class, the last
            // class first, which never takes more colors than the classes it was given; unless
            // the colors are within one of the largest clique a row makes (its P blocks and one Q
            // block; a quiet row's P blocks make none): a tridiagonal's 4 against 3; or the pass
            // would cost more than the probes it may save (`ITERATED_GREEDY_WORK`).
            let clique = if quiet { 2 } else { max_clique };
            if leaf && fits_u8(colors) && colors >= clique + 2 && work <= ITERATED_GREEDY_WORK {
                keep_in_probed(&mut probed, &color);
                let probed = &probed;
                let order = (1..=colors as u8)
                    .rev()
                    .flat_map(move |c| (0..nblocks).filter(move |&b| probed[b] == c));
                (colors, _) = color_pass(
                    order,
                    by_block,
                    (&mut lists, &mut seen),
                    &mut color,
                    (leaf, quiet),
                    cap,
                )?;
            }
            // The probes each run of parked rows is tested in, for the tells.
            // (Colored so far: all its P blocks, every P block being probed, in its fill.)
            // None at the last level, whose passes may have kept masks instead of lists.
            debug_assert!(!leaf || self.parked.spans.is_empty());
            if runs.is_none() {
                self.parked.set_masks(|r| {
                    p_mask_of_list(&seen[(lists[r].0 & !P_FLAG) as usize..lists[r].1 as usize])
                });
            }
            (colors, hard_taken)
        };
        // The formula's colors when fewer than the passes'.
        let colors = match formula {
            Some((by_formula, k)) if k < colors => {
                color = by_formula;
                k
            }
            _ => colors,
        };
        if !leaf && grows_cap(max_q, hard_taken, listed) {
            self.cap_growth += 1;
        }
        drop((t_ptr, t_idx, lists));
        if let Some(runs) = runs {
            // The runs' probes from their whole lists (a sample colors fewer lists).
            self.parked.set_masks(|k| runs.p_mask(k, &color));
        }

        // Dense at this scale: some row already has known dependencies in at least 3/4 of the
        // blocks; or the coloring compresses nothing while nearly every tested block changed,
        // and refining on would cost about as much as one probe per remaining column, or its
        // levels down to blocks of 8 more than the coarse allowance leaves, which would cut it
        // short ([`refining_estimate`]: random 80 per row at n = 2 x 10^4 looks dense at 40
        // blocks, where their blocks nearly all hold a dependency, and no longer at 80; refined
        // on, it takes 6780 evaluations with the check where one probe per column and the
        // check took 21580). Past the allowance at blocks of 4 and 2, `finishing_pays` decides:
        // weighing the levels past blocks of 8 against the allowance too sent rows of 56
        // among 8000 columns under the smallest NaN winning, and of 64 among 8000 and 80
        // among 10^4, to one probe per column (8851, 9064, 11578 evaluations; 3719, 4560,
        // 6523 refined).
        let probed_count = probed_blocks;
        let dense_scale = probed_count >= MIN_BLOCKS_FOR_SCALE_TEST
            && colors == probed_count
            && self.last_hit_rate >= 0.9
            && {
                let cost = refining_estimate(self.last_hit_rate, self.n, shift, colors);
                let left = allowance.saturating_sub(self.spent) as f64;
                cost.before_finishing > left || cost.coarse + cost.last >= unknown_cols as f64
            };
        let dense =
            (leaf && probed_count >= MIN_BLOCKS_FOR_DENSE_TEST && 4 * max_q >= 3 * probed_count)
                || dense_scale;
        let left = self.cap.saturating_sub(self.asked);
        // Past the allowance, one probe per column is the better bet only while it still fits
        // under the cap; once it does not, refining (which may still finish) goes on.
        let onehot_fits = unknown_cols <= left;
        // The wide rows' own probes: at most `own` groups and the samples; none for more than
        // `WIDE_ROWS_MOST` rows (`wide.rs`).
        let mut wide = wide;
        if wide.len() > WIDE_ROWS_MOST {
            wide.clear();
        }
        let own = match wide.is_empty() {
            true => 0,
            false => own_palette.min(per_level).max(1),
        };
        let most = colors + own + wide.len().min(SAMPLE_PROBES);
        let past = onehot_fits && self.spent + most > allowance;
        let finishing = past && blind_rows == 0 && self.finishing_pays(shift, most, unknown_cols);
        let over_allowance = (past && !finishing) || most > left;
        // Probe numbers must fit a candidate's word below its flags.
        if most >= UNTESTED as usize
            || (leaf && (colors >= unknown_cols || colors > left))
            || (!leaf && (dense || over_allowance))
        {
            return Ok(Some(self.start_onehot()?));
        }
        self.asked += colors;

        // The probes: the columns of each color class, in increasing order; and each probeable
        // candidate's probe in its word. Two passes with nothing in common: on two cores the
        // words from `cut` on are written alongside (`halves.rs`), `cut` leaving this thread
        // about as many words as the helper, counting a probe's column as one.
        let len = self.cand_idx.len();
        let at_once = len + self.n >= self.halves_from;
        let cut = match at_once {
            true => (len.saturating_sub(self.n) / 2).min(len),
            false => len,
        };
        let n = self.n;
        let (words_here, words_there) = self.cand_probe.split_at_mut(cut);
        let (blocks_here, blocks_there) = self.cand_idx.split_at(cut);
        let (cols, ()) = both(
            at_once,
            || {
                let mut cols: Vec<Vec<u32>> = filled(Vec::new(), colors, "probes")?;
                for b in (0..nblocks).filter(|&b| probed[b] != 0) {
                    let (s, e) = block_range(b as u32, shift, n);
                    let class = &mut cols[color[b] as usize];
                    reserve(class, (e - s) as usize, "probe columns")?;
                    class.extend(s..e);
                }
                probes_of(words_here, blocks_here, &color);
                Ok::<_, crate::Error>(cols)
            },
            || probes_of(words_there, blocks_there, &color),
        );
        let cols = cols?;
        // A row left out of the coloring learns nothing from a P block whose probe holds one
        // of its Q blocks: that block is not tested in this step (it stays a candidate).
        let mut q_colors = Vec::new();
        for &i in &suspected {
            let i = i as usize;
            probes_holding(self.deps(i), &color, shift, &mut q_colors)?;
            for e in self.cand_ptr[i]..self.cand_ptr[i + 1] {
                let c = self.cand_probe[e];
                if c != UNTESTED && q_colors.binary_search(&c).is_ok() {
                    self.cand_probe[e] = UNTESTED;
                }
            }
        }
        let own = self.own_probes(wide, nblocks, colors, own)?;
        self.asked += own.len();
        self.told = filled(false, colors + own.len(), "probes told")?;
        if self.parked.count > 0 || shift >= 1 {
            // Which probe tests a parked row's P block, for the tells; before the last level,
            // which probes held a row's Q blocks, for its quiet test and its dependency lower
            // bound (`split.rs`).
            self.parked.colors = color;
        }
        let n = self.n;
        Ok(Some(collect(
            cols.into_iter().chain(own).map(|c| Probe::new(c, n)),
            "probes",
        )?))
    }

    /// Whether refining on pays past the coarse allowance at one of the last two coarse levels
    /// (`shift` 1 or 2), where the rows know most of their dependencies: when what is left of
    /// it (this level's `most` probes, the level after, the last level's colors) is estimated
    /// at under half of one probe per unknown column (`unknown_cols`), as in
    /// [`refining_estimate`] with d the most dependencies a row knows. The allowance bounds
    /// what refining may lose where it does not pay; there the probes it spent are spent, and
    /// the question is only what finishing costs. Random 48 per row at n = 6000 passed it at
    /// blocks of 2 (652 spent, 171 more asked, 766 allowed) and went to one probe per column:
    /// 7287 evaluations with the check, above n + 1; refined on, 2907. Not when a row was
    /// recognised dense: one probe per column resolves its assumed columns too ("Dense rows"
    /// in `refine.rs`; 48 per row at n = 4000 had two, when changes its known dependencies
    /// explained still counted toward the bound, and refined on ended with 2016 assumed
    /// entries). Nor with blind rows (the caller): what they cost is not in their
    /// dependencies.
    fn finishing_pays(&self, shift: u32, most: usize, unknown_cols: usize) -> bool {
        if !(1..=2).contains(&shift) || !self.dense.is_empty() {
            return false;
        }
        let d = (self.dep_ptr.windows(2))
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0) as f64;
        let cost = cost_from(d, self.n, shift, most);
        2.0 * (cost.coarse + cost.last) < unknown_cols as f64
    }

    /// Whether the wide rows a listing left out of the coloring (`wide`) are more than
    /// [`WIDE_ROWS_MOST`], with known dependencies, and half the rows: then every row is about
    /// as wide as the others, none gets probes of its own, and none would be tested while
    /// left out (random 80 per row at n = 2 x 10^4: from 40 blocks on, 19998 rows out, and the
    /// trace went to one probe per column). A few wide rows among sparse ones stay out.
    fn wide_are_most(&self, wide: &[u32]) -> bool {
        let known = (wide.iter())
            .filter(|&&i| !self.deps(i as usize).is_empty())
            .count();
        known > WIDE_ROWS_MOST && 2 * known >= self.m
    }

    /// The row where the listing pass is cut in two: about half the rows and their entries
    /// before it, and not inside a run of parked rows that share the list of the row before
    /// at level `shift` (`parked.rs`, "Runs"). `m` when there is none.
    fn listing_cut(&self, shift: u32) -> usize {
        let from = halfway(&self.cand_ptr);
        (self.parked.rows[from..].iter())
            .position(|&c| c as u32 > shift)
            .map_or(self.m, |k| from + k)
    }

    /// The listing pass of [`Refine::plan_level`] over `rows`: each row's blocks at the current
    /// level, flagged P or Q, rows with the list of the row before sharing it, parked rows
    /// listed from their dependencies. Writes each candidate's word (`words`: those of `rows`,
    /// P: 0, Q: [`UNTESTED`]) and flags the blocks `(probed, is_cand)`. `rows` starts at a row
    /// that does not continue a run of parked rows. The lists are made in `k_idx` (emptied
    /// first). `first`: the lists' bounds, and `k_idx` when no row is parked, have room for
    /// every row's (the other half's are joined to them).
    fn list_rows(
        &self,
        rows: std::ops::Range<usize>,
        words: &mut [u32],
        (probed, is_cand): (&mut [u8], &mut [bool]),
        mut k_idx: Vec<u32>,
        first: bool,
    ) -> Result<Listing> {
        let shift = self.shift;
        let leaf = shift == 0;
        let nblocks = (self.n as u64).div_ceil(1u64 << shift) as usize;
        let base = self.cand_ptr[rows.start];
        let mut out = Listing::default();
        // The lists' bounds, per row ordinal r (rows with a probeable candidate, in order): see
        // `plan_level`.
        let mut lists: Vec<(u32, u32, u32)> = Vec::new();
        let bounds = match first {
            true => self.m + 1,
            false => rows.len() + 1,
        };
        reserve(&mut lists, bounds, "block list bounds")?;
        let mut listed = 0usize;
        // Rows dense at this scale: usually none.
        let mut suspected: Vec<u32> = Vec::new();
        let mut wide_rows: Vec<u32> = Vec::new();
        // In `k_idx` (empty; the first half's is the array the last split let go, `spare`),
        // a stored row lists its candidates and its dependencies' blocks; a parked row its
        // dependencies' blocks' children, at most `deps << bits`, reserved as it is listed
        // (runs of parked rows share one list: the bound for all of them would be most of
        // the peak after a four-way split). When no row is parked, the first half reserves
        // room for every row's entries (candidates and dependencies), the second for its own
        // (its share of the dependencies, by rows): the join then appends the second half's
        // lists to the first's where they are, with no reallocation that would move the first
        // half's (16 MB at the 2-D Bratu residual's last level at 10^6), and gives back what
        // was not used. (With parked rows, whose lists grow the array as they are listed, a
        // growth past that room would leave up to as much unused at the level's peak: random
        // 5 per row at 10^6 peaked 2 MB higher.)
        let stored_deps = self.dep_idx.len().saturating_sub(self.parked.deps);
        let (end, share) = match first && self.parked.count == 0 {
            true => (self.m, stored_deps),
            false => {
                let share = stored_deps as u128 * rows.len() as u128 / self.m.max(1) as u128;
                (rows.end, share as usize)
            }
        };
        let entries = self.cand_ptr[end] - base;
        k_idx.clear();
        // Exactly: an amortized growth would double what the level lists.
        reserve_exact(&mut k_idx, entries + share, "block lists")?;
        let (mut max_q, mut work) = (0usize, 0u64);
        // The longest row list: whether the coloring may keep tallies (`conflicts.rs`).
        let mut longest = 0usize;
        // Rows with no Q block among their blocks ([`blind_palette`]).
        let mut blind_rows = 0usize;
        // The most blocks one row makes pairwise conflict at the last level: its P blocks and
        // one Q block.
        let mut max_clique = 0usize;
        // The last parked row listed: its row, its list's length and P blocks.
        let mut last_parked = (usize::MAX, 0usize, 0usize);
        let mut skip_to = rows.start;
        for i in rows.clone() {
            if i < skip_to {
                continue;
            }
            let code = self.parked.rows[i];
            if code as u32 <= shift {
                // Parked rows with the blocks of the parked row before (their codes say so):
                // its list, weighted by their count.
                let end = (self.parked.rows[i..rows.end].iter())
                    .position(|&c| c as u32 > shift)
                    .map_or(rows.end, |k| i + k);
                let w = end - i;
                let (last, last_len, last_p) = last_parked;
                debug_assert_eq!(last + 1, i);
                last_parked.0 = end - 1;
                if last_p > 0 {
                    lists.last_mut().unwrap().2 += w as u32;
                    listed += w * last_len;
                    work += (w * last_len * last_len) as u64;
                    out.listed_p += w * last_p;
                    let list = lists.len() as u32 - 1;
                    extend_span(&mut out.spans, i as u32, w as u32, list)?;
                }
                skip_to = end;
                continue;
            }
            let (a, b) = (self.cand_ptr[i], self.cand_ptr[i + 1]);
            let parked = code != STORED;
            if a == b && !parked {
                continue;
            }
            let same_blind = self.same_blind_rows(i..rows.end, &lists, &k_idx);
            if same_blind > i {
                // Rows listed as the row before, blind, with one block (every row but the first
                // at the first level): counted as below, without listing each first.
                for r in i..same_blind {
                    words[self.cand_ptr[r] - base] = 0; // probeable; its color is set below
                }
                let w = same_blind - i;
                lists.last_mut().unwrap().2 += w as u32;
                (listed, work, blind_rows) = (listed + w, work + w as u64, blind_rows + w);
                skip_to = same_blind;
                continue;
            }
            let deps = &self.dep_idx[self.dep_ptr[i]..self.dep_ptr[i + 1]];
            let start = k_idx.len();
            let (mut q, mut any_p) = (0, false);
            let mut p = 0;
            if parked {
                // Its candidates are its dependencies' blocks' children (`parked.rs`).
                reserve(&mut k_idx, deps.len() << self.bits, "block lists")?;
                for_each_block(deps, shift, self.bits, self.n, |blk, kind| match kind {
                    Kind::P => {
                        is_cand[blk as usize] = true;
                        probed[blk as usize] = 1;
                        k_idx.push(blk | P_FLAG);
                        p += 1;
                    }
                    Kind::Q => {
                        is_cand[blk as usize] = true;
                        k_idx.push(blk);
                        q += 1;
                    }
                    Kind::Full => {
                        k_idx.push(blk);
                        q += 1;
                    }
                });
                out.listed_p += p;
                any_p = p > 0;
            } else {
                // Within what was reserved unless this half holds more than its share of the
                // stored rows' dependencies.
                reserve(&mut k_idx, (b - a) + deps.len(), "block lists")?;
                let mut d = 0;
                let mut push_q = |k_idx: &mut Vec<u32>, blk: u32| {
                    if k_idx.len() == start || *k_idx.last().unwrap() != blk {
                        k_idx.push(blk);
                        q += 1;
                    }
                };
                for e in a..b {
                    let blk = self.cand_idx[e];
                    is_cand[blk as usize] = true;
                    while d < deps.len() && deps[d] >> shift < blk {
                        push_q(&mut k_idx, deps[d] >> shift);
                        d += 1;
                    }
                    if d < deps.len() && deps[d] >> shift == blk {
                        words[e - base] = UNTESTED; // holds a known dependency
                        push_q(&mut k_idx, blk);
                        while d < deps.len() && deps[d] >> shift == blk {
                            d += 1;
                        }
                    } else {
                        words[e - base] = 0; // probeable; its color is set below
                        probed[blk as usize] = 1;
                        k_idx.push(blk | P_FLAG);
                        any_p = true;
                        p += 1;
                    }
                }
                while d < deps.len() {
                    push_q(&mut k_idx, deps[d] >> shift);
                    d += 1;
                }
            }
            if !any_p {
                k_idx.truncate(start);
                if parked {
                    last_parked = (i, 0, 0);
                }
                continue;
            }
            let len = k_idx.len() - start;
            let wide = !self.wide_in && len >= WIDE_ROW_BLOCKS && 2 * len >= nblocks;
            if !leaf && ((q >= DENSE_MIN && 4 * q >= 3 * len) || wide) {
                // Known dependencies in 3/4 of its blocks: dense at this scale. Or blocks in
                // half of all blocks: the square of its length would outweigh the coloring of
                // every other row (an arrowhead's dense row at n = 10^5 sent the whole trace to
                // one probe per column). The row would make the coloring compress nothing; it
                // is left out of it, and its P blocks are tested only where no Q block of its
                // shares their probe (below).
                // (Never a parked row: it has fewer than DENSE_MIN dependencies, and at most
                // two blocks for each.)
                debug_assert!(!parked);
                k_idx.truncate(start);
                push(&mut suspected, i as u32, "rows")?;
                if !(q >= DENSE_MIN && 4 * q >= 3 * len) {
                    // Not dense at this scale: probes of its own (`wide.rs`).
                    push(&mut wide_rows, i as u32, "rows")?;
                }
                continue;
            }
            let len = k_idx.len() - start;
            max_q = max_q.max(q);
            max_clique = max_clique.max(p + q.min(1));
            longest = longest.max(len);
            work += (len * len) as u64;
            listed += len;
            let blind = if q == 0 { P_FLAG } else { 0 };
            blind_rows += usize::from(q == 0);
            // The same list as the row before (a band's rows inside one block, at every level
            // but the finest): one more row of weight for that list.
            // A quiet row at the last level: its candidates may share a probe.
            let quiet = match leaf && q > 0 && self.quiet.get(i).is_some_and(|b| *b) {
                true => QUIET,
                false => 0,
            };
            let same = lists.last().is_some_and(|&(prev, _, weight)| {
                let prev_start = (prev & !P_FLAG) as usize;
                // Element by element: the lists are short, a memcmp call costs more.
                prev & P_FLAG == blind
                    && weight & QUIET == quiet
                    && start - prev_start == len
                    && (k_idx[prev_start..start].iter())
                        .zip(&k_idx[start..])
                        .all(|(a, b)| a == b)
            });
            if same {
                k_idx.truncate(start);
                lists.last_mut().unwrap().2 += 1;
            } else {
                lists.push((start as u32 | blind, start as u32, 1 | quiet));
            }
            if parked {
                extend_span(&mut out.spans, i as u32, 1, lists.len() as u32 - 1)?;
                last_parked = (i, len, p);
            }
        }
        (out.lists, out.k_idx, out.suspected) = (lists, k_idx, suspected);
        out.wide = wide_rows;
        (out.listed, out.work, out.max_q) = (listed, work, max_q);
        (out.longest, out.max_clique) = (longest, max_clique);
        out.blind_rows = blind_rows;
        Ok(out)
    }

    /// The end of the run of rows from `rows.start` that the listing would count as the last
    /// list of `lists` (its entries in `k_idx`) one by one, when that list is one probeable
    /// block, blind and not quiet: stored rows with that block as their one candidate and no
    /// known dependency. `rows.start` when there is no such run.
    pub(super) fn same_blind_rows(
        &self,
        rows: std::ops::Range<usize>,
        lists: &[(u32, u32, u32)],
        k_idx: &[u32],
    ) -> usize {
        let Some(&(start, _, weight)) = lists.last().filter(|_| self.shortcuts) else {
            return rows.start;
        };
        let (blind, start) = (start & P_FLAG != 0, (start & !P_FLAG) as usize);
        if !blind || weight & QUIET != 0 || k_idx.len() != start + 1 {
            return rows.start;
        }
        let block = k_idx[start] & !P_FLAG;
        let alike = |r: usize| {
            let a = self.cand_ptr[r];
            self.parked.rows[r] == STORED
                && self.cand_ptr[r + 1] == a + 1
                && self.cand_idx[a] == block
                && self.dep_ptr[r] == self.dep_ptr[r + 1]
        };
        rows.clone().find(|&r| !alike(r)).unwrap_or(rows.end)
    }

    /// Switches to one probe per column of the candidate blocks; when they are more than the
    /// cap leaves, to one probe for each of the columns unknown for the most rows (the others
    /// stay unresolved).
    pub(super) fn start_onehot(&mut self) -> Result<Vec<Probe>> {
        self.unpark_all()?;
        let shift = self.shift;
        // How many rows hold each column in a candidate block (a difference array).
        let mut count = Vec::new();
        reserve(&mut count, self.n + 1, "column counts")?;
        count.resize(self.n + 1, 0i64);
        for &b in &self.cand_idx {
            let (s, e) = self.block_range(b, shift);
            count[s as usize] += 1;
            count[e as usize] -= 1;
        }
        // The blind rows taken out for the peeling are candidates still (`peel.rs`).
        for (s, e) in self.blind_ranges() {
            count[s as usize] += 1;
            count[e as usize] -= 1;
        }
        let mut cols = Vec::new();
        let mut held = 0i64;
        for (j, c) in count.iter_mut().take(self.n).enumerate() {
            held += *c;
            *c = held;
            if held > 0 {
                reserve(&mut cols, 1, "one-hot probes")?;
                cols.push(j as u32);
            }
        }
        let left = self.cap.saturating_sub(self.asked);
        self.onehot_complete = cols.len() <= left;
        if !self.onehot_complete {
            cols.sort_by_key(|&j| std::cmp::Reverse(count[j as usize]));
            cols.truncate(left);
            cols.sort_unstable();
        }
        self.asked += cols.len();
        self.cand_probe.iter_mut().for_each(|c| *c = UNTESTED);
        self.mode = Mode::OneHot;
        self.onehot_told = zero_bits(self.n, "columns told")?;
        self.told = filled(false, cols.len(), "probes told")?;
        let n = self.n;
        let mut probes = Vec::new();
        reserve(&mut probes, cols.len(), "one-hot probes")?;
        for &c in &cols {
            probes.push(Probe::new(copied(&[c], "a one-hot probe")?, n));
        }
        self.onehot_cols = cols;
        Ok(probes)
    }
}

/// The last level lets quiet rows' candidates share probes only when that saves at least this
/// many probes (and a quarter of them): a quiet row that changes in a shared probe costs a
/// second step.
const QUIET_SAVING: usize = 4;

/// The coloring work (the sum over rows of the square of their list lengths, `work` in
/// [`Refine::plan_level`]) past which a level switches to one probe per column instead.
///
/// Work up to 64 per listed block (plus a constant for small traces) is always taken. Past
/// that the coloring is weighed against what it saves: one probe for each of the
/// `unknown_cols` columns, each costing `per_probe` at least (the planner passes n + m + the
/// known dependencies: the guard writes the n inputs, the tells read the m outputs, and f
/// takes at least one operation per dependency), while the coloring's work comes again at each
/// level left (`shift + 1` of them, the last included). A fixed bound of 64 per listed block
/// alone sent rows of 24 random dependencies among 10^5 columns to one probe per column (about
/// 10^5 evaluations), where refining takes under 2000: their lists are at least 48 blocks long
/// (each dependency's block and its sibling). With n + m alone, 32 a row among 2 x 10^4
/// columns still went (20598 evaluations, 14.2 s with the synthetic f; refined: 2462, 5.9 s).
///
/// Only while the candidates are `held` (the planner: at most 4 per known dependency plus 64
/// per row, what a row's dependencies' blocks, their siblings and a few left over make) does
/// the weighing apply: rows with no known dependency (no payload came back) keep candidates
/// that no dependency bounds, and refining them further under the weighing held 3.3x the
/// memory (blind random 12 per row at n = 2 x 10^4: 198 against 60 MB) to end in one probe
/// per column all the same (under a palette of 4 for blind rows; with [`blind_palette`] that
/// trace refines to the end: 649 evaluations).
pub(super) fn work_limit(
    listed: usize,
    (unknown_cols, per_probe): (usize, usize),
    shift: u32,
    held: bool,
) -> u64 {
    let fixed = 64 * (listed as u64) + 10_000_000;
    if !held {
        return fixed;
    }
    let onehot = (unknown_cols as u64).saturating_mul(per_probe as u64);
    fixed.max(onehot / (u64::from(shift) + 1))
}

/// The palette's cap at a coarse level whose rows hold at most `max_q` Q blocks each: `2 q +
/// 2` (at least 4), a quarter more for each step of `growth` ([`grows_cap`]). A row blocks
/// only the colors holding its Q blocks, so twice as many leave most of its P blocks a color
/// free of them.
pub(super) fn coarse_cap(max_q: usize, growth: usize) -> usize {
    let base = (2 * max_q + 2).max(4);
    base.saturating_add(base.saturating_mul(growth) / 4)
}

/// What refining on from a level of blocks of `2^shift` columns would cost in probes, about,
/// when its coloring takes `colors` and the last step's tested blocks changed at `hit_rate`
/// ([`cost_from`]). A level "dense at this scale" (its blocks all conflict) may hold sparse
/// rows seen at a coarse scale.
///
/// A row whose d dependencies fall at random among the last step's B blocks (of `2^(shift +
/// 1)` columns, a binary split) leaves a block unchanged with probability about `exp(-d / B)`,
/// so d is about `B ln(1 / (1 - hit_rate))`; the tested blocks are those holding no known
/// dependency, which makes that 0.70 to 0.75 of d on random rows of 64 to 128 dependencies
/// (46 for 64 among 4000 and among 8000 columns; 56, 70, 96 for 80, 96, 128 among 2 x 10^4):
/// it is taken 4/3 times. Under the smallest NaN winning fewer dependencies are known by then
/// and the estimate runs higher (52 for 48 among 4000 columns). Infinite when every tested
/// block changed.
fn refining_estimate(hit_rate: f64, n: usize, shift: u32, colors: usize) -> Estimate {
    if hit_rate >= 1.0 {
        let all = f64::INFINITY;
        return Estimate {
            coarse: all,
            last: all,
            before_finishing: all,
        };
    }
    let blocks = (n as f64 / 2f64.powi(shift as i32 + 1)).max(1.0);
    let d = blocks * (1.0 / (1.0 - hit_rate)).ln() * 4.0 / 3.0;
    cost_from(d, n, shift, colors)
}

/// What refining on costs, in probes, about ([`cost_from`]).
struct Estimate {
    /// This level and the coarse levels after it.
    coarse: f64,
    /// The last level.
    last: f64,
    /// This level and the coarse levels after it down to blocks of 8: those the coarse
    /// allowance bounds (past it at blocks of 4 and 2, [`Refine::finishing_pays`] decides).
    before_finishing: f64,
}

/// What refining on costs, about, for rows of `d` dependencies among `n` columns from a level
/// of blocks of `2^shift` columns whose probes number `this_level`. Each coarse level after
/// this one colors under a palette of `2 q + 2` ([`coarse_cap`]), grown as hard conflicts are
/// taken: `2.5 d + 2` (the levels took 2.0 to 2.6 d each on random rows of 48 to 128
/// dependencies among 4000 to 2 x 10^4 columns), and no more than its blocks (48 among 4000
/// columns: 62 and 84 probes at blocks of 64 and 32, where `2.5 d + 2` is 122); the last level,
/// where every conflict is hard, about `d^2 / 2` colors (2279, 3570, 4937, 7845 for 64, 80, 96,
/// 128 dependencies among 2 x 10^4 columns; `steps` example).
///
/// An estimate: near the allowance's edge it errs either way. With `2.2 d`, rows of 80 among
/// 10^4 columns and of 96 among 1.2 x 10^4 were refined, ran out of allowance and ended one
/// probe per column after it (12601 and 15363 evaluations against 11578 and 14146), before
/// refining could finish past the allowance; with the allowance weighed against the levels
/// down to blocks of 8 only, they refine and finish (6523 and 8798).
fn cost_from(d: f64, n: usize, shift: u32, this_level: usize) -> Estimate {
    let level = |s: u32| (2.5 * d + 2.0).min((n as f64 / 2f64.powi(s as i32)).ceil());
    let this_level = this_level as f64;
    Estimate {
        coarse: this_level + (1..shift).map(level).sum::<f64>(),
        last: d * d / 2.0,
        before_finishing: this_level + (3..shift).map(level).sum::<f64>(),
    }
}

/// The part of the blind rows whose lists may be longer than the one [`blind_palette`] sizes
/// the palette by: one in this many (a dense row's long list does not set it).
const BLIND_TAIL: u64 = 64;

/// Lists longer than this count as this long in [`blind_palette`].
const BLIND_LONGEST: usize = 1 << 12;

/// The palette a coarse level gives its blind rows (no known dependency among their blocks:
/// no payload came back): half the blocks of a blind row's list, the length at which all but
/// one in [`BLIND_TAIL`] of those lists end (weighted by the rows sharing a list). `lists`:
/// the listing's lists with the end sentinel. The caller bounds it by what the coarse
/// allowance leaves for each level to come.
///
/// A blind row has no Q block, so nothing but its soft conflicts keeps its blocks apart: two
/// of them in one probe are both kept when it changes. Its blocks are its dependencies' blocks
/// and their siblings; a sibling is proven zero only in a probe holding none of the others
/// that hold a dependency. Under a palette of 4 (the coarse cap of rows without Q blocks) a
/// row with more than two such blocks kept its siblings level after level, and the last level,
/// where every conflict is hard, paid for them: payloads lost, the 5-point stencil on a 141 x
/// 141 grid took 768 probes there (833 evaluations in all; now 115), random 5 per row at
/// n = 2 x 10^4 went to one probe per column (20055; now 215). Half the list is measured
/// against three quarters and the whole list (the fingerprint suite, whose blind traces alone
/// change: 231762, 232134 and 233090 evaluations in all, from 528510), and the tail against
/// the longest list (a dense row's list sent small traces to one probe per column).
fn blind_palette(lists: &[(u32, u32, u32)]) -> Result<usize> {
    let mut count = filled(0u64, BLIND_LONGEST + 1, "list lengths")?;
    let mut total = 0u64;
    for pair in lists.windows(2) {
        let (start, next) = (pair[0].0, pair[1].0 & !P_FLAG);
        if start & P_FLAG == 0 {
            continue;
        }
        let len = ((next - (start & !P_FLAG)) as usize).min(BLIND_LONGEST);
        let weight = u64::from(pair[0].2 & !QUIET);
        count[len] += weight;
        total += weight;
    }
    let mut longer = total;
    for (len, &c) in count.iter().enumerate() {
        longer -= c;
        if longer * BLIND_TAIL <= total {
            return Ok(len / 2);
        }
    }
    Ok(BLIND_LONGEST / 2)
}

/// The fewest Q blocks of a row for which the cap may grow ([`grows_cap`]).
const GROW_CAP_FROM_Q: usize = 20;

/// The part of a level's listed blocks which, left untested by hard conflicts, makes the cap
/// grow: one in this many ([`grows_cap`]).
const GROW_CAP_WASTE: u64 = 8;

/// Whether the cap grows a step for the levels after this coarse one ([`coarse_cap`]): its
/// rows hold at least [`GROW_CAP_FROM_Q`] Q blocks, and the hard conflicts its full palette
/// made the blocks take (`hard_taken`: P blocks sharing a probe with a Q block of their row,
/// so untested for it) pass one in [`GROW_CAP_WASTE`] of the `listed` blocks.
///
/// An untested P block stays a candidate and is split with the rest: under too short a cap
/// the candidates grow level after level, and the last level, where every conflict is hard,
/// pays for them (random 24 per row at n = 2 x 10^4: 84 blocks a row there and 905 probes,
/// against 50 probes a coarse level). Growing the cap costs probes at every level left, and it
/// pays only for rows with many dependencies (random 16 per row at n = 10^5: 745 -> 876
/// evaluations when allowed; 20 per row 1390 -> 1108, 24 1837 -> 1512, 32 2906 -> 2167).
fn grows_cap(max_q: usize, hard_taken: u64, listed: usize) -> bool {
    max_q >= GROW_CAP_FROM_Q && hard_taken.saturating_mul(GROW_CAP_WASTE) > listed as u64
}

/// The coloring work (the sum over rows of the square of their list lengths) up to which the
/// last level takes a pass of iterated greedy. The pass saves a few probes (random 5 per row
/// n = 10^5: 28 -> 24) and costs as much as the coloring: past this, about 30 ms, it costs a
/// black box that takes little time more than the probes it saves (random n = 10^6: 580 ms
/// for 5 probes; a 2-D stencil: 150 ms for 1).
const ITERATED_GREEDY_WORK: u64 = 1 << 25;

/// Colors the probed blocks in `order` (see [`Refine::plan_level`]): each takes the color with
/// the fewest (hard, blind soft, soft) conflicts with the colors its rows' blocks took so far,
/// or a new one (at coarse levels, up to `cap`). `by_block` is the transpose (each block's
/// row ordinals, P-flagged) and whether the rows lie far apart ([`scattered`]); `rows` keeps
/// the rows' colors so far, filled as blocks are colored (`conflicts.rs`). `(leaf, quiet)`: the
/// last level, and whether quiet rows' candidates may share probes there. Returns the number
/// of colors.
///
/// `None` when `rows` cannot hold the colors the pass needs ([`Masks`] past 63).
fn color_blocks(
    order: impl Iterator<Item = usize> + Clone,
    (t_ptr, t_idx, far): (&[u32], &[u32], bool),
    rows: &mut impl Conflicts,
    color: &mut [u32],
    (leaf, quiet_ok): (bool, bool),
    cap: usize,
) -> Result<Option<usize>> {
    let rows_of = |b: usize| t_ptr[b] as usize..t_ptr[b + 1] as usize;
    // Blocks ahead, for the prefetches: at the last levels of a pattern without locality a
    // block has a dozen rows or fewer, scattered, so the next block's rows are asked for while
    // this one is colored. (Not on banded patterns: their rows are in cache, and the asking
    // cost 3% of a tridiagonal trace's instructions.) `far`: [`scattered`].
    let (mut next, mut ahead2, mut ahead4) = (order.clone(), order.clone(), order.clone());
    ahead2.next();
    ahead4.nth(2);
    for b in order {
        if far {
            next.next();
            if let Some(b4) = ahead4.next() {
                prefetch(t_ptr, b4);
            }
            if let Some(b2) = ahead2.next() {
                prefetch(t_idx, t_ptr[b2] as usize);
            }
            if let Some(b1) = next.clone().next() {
                let rows_b1 = &t_idx[rows_of(b1)];
                for &t in &rows_b1[..rows_b1.len().min(16)] {
                    rows.prefetch_far((t & !P_FLAG) as usize);
                }
            }
        }
        let rows_b = &t_idx[rows_of(b)];
        if far {
            for &t in &rows_b[..rows_b.len().min(8)] {
                rows.prefetch_near((t & !P_FLAG) as usize);
            }
        }
        for (k, &t) in rows_b.iter().enumerate() {
            // The rows come in scattered order on patterns without locality: ask for the
            // entry of a row sixteen ahead and what it counts of a row eight ahead.
            if let Some(&ahead) = rows_b.get(k + 16) {
                rows.prefetch_far((ahead & !P_FLAG) as usize);
            }
            if let Some(&ahead) = rows_b.get(k + 8) {
                rows.prefetch_near((ahead & !P_FLAG) as usize);
            }
            let (r, b_is_p) = ((t & !P_FLAG) as usize, t & P_FLAG != 0);
            let (start, _, w) = rows.entry(r);
            let (blind, quiet) = (start & P_FLAG != 0, quiet_ok && w & QUIET != 0);
            // Which count a colored block u of this row adds to, by u's flag: a P and a Q
            // block conflict hard; two P blocks hard at the last level unless the row is quiet
            // (then not at all), else soft (blind soft for a blind row); two Q blocks not at
            // all (the unused slot).
            let slots = match (b_is_p, leaf, blind) {
                (false, ..) => (HARD, UNUSED),
                (true, true, _) if quiet => (UNUSED, HARD),
                (true, true, _) => (HARD, HARD),
                (true, false, true) => (BLIND_SOFT, HARD),
                (true, false, false) => (SOFT, HARD),
            };
            rows.count(r, slots, w & !QUIET);
        }
        let Some(c) = rows.choose(cap)? else {
            return Ok(None);
        };
        color[b] = c;
        for &t in rows_b {
            rows.add((t & !P_FLAG) as usize, c, t & P_FLAG);
        }
    }
    Ok(Some(rows.colors()))
}

/// The least hit rate of the step before (changed of tested candidate blocks) at which a coarse
/// level keeps parked rows' P blocks apart, when its coloring put two P blocks of most parked
/// rows in one probe.
///
/// Two P blocks of a row in one probe are a soft conflict: an unchanged output proves both
/// zero, a change keeps both. A parked row that changes there, its tag naming a column in one
/// of them, cannot stay parked (the other block is no child of a block holding a dependency:
/// `parked.rs`); it is written back, and its extra blocks are listed and tested at the next
/// level before it parks again. While rows learn, that is most of them: the 2-D Bratu residual
/// in C at n = 10^6 (each row's own input first, so its own tag wins) learns its neighbours a
/// grid line away at the level of blocks of 1024, where the greedy pass put the sibling of one
/// of them in the other's probe for 974000 rows of 10^6 and the split wrote back 950624 of
/// them. Colored again with those rows' soft conflicts opening colors as a blind row's do
/// (up to the cap), the level takes 4 probes instead of 2 and the next one 6 instead of 8:
/// the same 107 evaluations, no row written back, and the three steps around it 92 ms of
/// library time instead of 215 (`nanprop-bench --steps`). The second coloring is kept when it
/// still compresses the level and takes at most [`APART_MORE_COLORS`] more colors; else the
/// first is made again. Over the fingerprint suite (1168 traces, 111614 -> 111310
/// evaluations) only diagonal blocks of 10 change, each of 48 traces by 5 to 7 evaluations
/// fewer (under the smallest NaN winning, 30 -> 23 at n = 100; 61 -> 54 at n = 4099, where
/// 3070 of 4099 parked rows came back), with the same patterns. With no hit rate gate, with a
/// quarter of the parked rows instead of half, or with one more color allowed instead of two,
/// 20 to 50 traces took more.
pub(super) const APART_HIT_RATE: f64 = 0.25;

/// The most colors the second coloring of [`APART_HIT_RATE`] may add.
const APART_MORE_COLORS: usize = 2;

/// How many parked rows (`spans`: runs of them and their lists' ordinals, while the level is
/// planned) have two P blocks of one color in their lists colored so far (`lists`, `seen`).
fn parked_sharing(spans: &[(u32, u32, u64)], lists: &[(u32, u32, u32)], seen: &[u32]) -> usize {
    (spans.iter())
        .filter(|&&(_, _, r)| {
            let (start, fill, _) = lists[r as usize];
            let list = &seen[(start & !P_FLAG) as usize..fill as usize];
            (list.iter().enumerate()).any(|(k, &c)| c & P_FLAG != 0 && list[k + 1..].contains(&c))
        })
        .map(|&(first, end, _)| (end - first) as usize)
        .sum()
}

/// Flags the lists of parked rows (`spans`) as blind for the coloring (their soft conflicts
/// open colors), and returns those that were not: the caller takes the flag off again.
fn flag_parked_lists(spans: &[(u32, u32, u64)], lists: &mut [(u32, u32, u32)]) -> Result<Vec<u32>> {
    let mut flagged = Vec::new();
    for &(_, _, r) in spans {
        let list = &mut lists[r as usize].0;
        if *list & P_FLAG == 0 {
            *list |= P_FLAG;
            push(&mut flagged, r as u32, "lists of parked rows")?;
        }
    }
    Ok(flagged)
}

/// One coloring pass of the probed blocks in `order` with rows keeping lists
/// ([`color_blocks`]; `lists` from their starts on, `seen` their space); at the last level
/// with masks first, and with lists again when they cannot hold the colors (`conflicts.rs`).
/// The coloring is the same either way. Returns the number of colors and the hard conflicts
/// the capped palette made the blocks take ([`Conflicts::hard_taken`]).
fn color_pass(
    order: impl Iterator<Item = usize> + Clone,
    by_block: (&[u32], &[u32], bool),
    (lists, seen): (&mut [(u32, u32, u32)], &mut [u32]),
    color: &mut [u32],
    (leaf, quiet): (bool, bool),
    cap: usize,
) -> Result<(usize, u64)> {
    if leaf {
        // Masks, when the lists' space holds them; the order is walked again if they give up.
        if let Some(mut masks) = Masks::new(lists, seen) {
            let k = color_blocks(
                order.clone(),
                by_block,
                &mut masks,
                color,
                (leaf, quiet),
                cap,
            )?;
            if let Some(k) = k {
                return Ok((k, masks.hard_taken()));
            }
        }
        // The last level's passes after the first fill the lists again from their starts (a
        // coarse level colors once, with the lists as listed).
        restart(lists);
    }
    let mut with_lists = Lists::new(lists, seen);
    let k = color_blocks(order, by_block, &mut with_lists, color, (leaf, quiet), cap)?;
    Ok((any_count(k)?, with_lists.hard_taken()))
}

/// The colors of a pass whose rows hold any number of them (lists; tallies under their cap).
fn any_count(colors: Option<usize>) -> Result<usize> {
    colors.ok_or_else(|| Error::new(ErrorKind::Internal, "a coloring pass ran out of colors"))
}

/// Writes into each probeable candidate's word (`words`, not [`UNTESTED`]) the color of its
/// block (`blocks`), that is its probe.
fn probes_of(words: &mut [u32], blocks: &[u32], color: &[u32]) {
    for (word, &b) in words.iter_mut().zip(blocks) {
        if *word != UNTESTED {
            *word = color[b as usize];
        }
    }
}

/// What the listing pass gives for its rows ([`Refine::list_rows`]); see
/// [`Refine::plan_level`] for each part.
#[derive(Default)]
struct Listing {
    /// Per list: its start in `k_idx` (with the blind flag), a fill position, its weight (with
    /// the quiet flag).
    lists: Vec<(u32, u32, u32)>,
    k_idx: Vec<u32>,
    /// Rows dense at this scale or wide, left out of the coloring.
    suspected: Vec<u32>,
    /// Of those, the wide rows not dense at this scale: they get probes of their own
    /// (`wide.rs`).
    wide: Vec<u32>,
    /// Runs of parked rows and their lists' ordinals ([`super::super::parked::Parked::spans`]).
    spans: Vec<(u32, u32, u64)>,
    /// The length of all rows' lists; the coloring work; the most Q blocks of a row; the
    /// longest list; the most blocks one row makes conflict at the last level; parked rows'
    /// P blocks; rows with no Q block.
    listed: usize,
    work: u64,
    max_q: usize,
    longest: usize,
    max_clique: usize,
    listed_p: usize,
    blind_rows: usize,
}

impl Listing {
    /// Joins the listing of the rows after these: its lists follow, the first merged into the
    /// last of these when it is the same list (what one pass would have done: the rows with the
    /// list of the row before share it), and its parked rows' runs point at the joined lists.
    fn join(&mut self, next: Listing) -> Result<()> {
        let start_of = |l: &(u32, u32, u32)| (l.0 & !P_FLAG) as usize;
        let flags = |l: &(u32, u32, u32)| (l.0 & P_FLAG, l.2 & QUIET);
        let next_len = |r: usize| match next.lists.get(r + 1) {
            Some(l) => start_of(l),
            None => next.k_idx.len(),
        };
        let same = match (self.lists.last(), next.lists.first()) {
            (Some(last), Some(head)) => {
                flags(last) == flags(head)
                    && self.k_idx[start_of(last)..] == next.k_idx[..next_len(0)]
            }
            _ => false,
        };
        // The next lists' entries from `skip` on move to the end of these.
        let skip = match same {
            true => next_len(0),
            false => 0,
        };
        let offset = self.k_idx.len() as u32;
        if same {
            self.lists.last_mut().expect("same").2 += next.lists[0].2 & !QUIET;
        }
        // Exactly: an amortized growth would double the largest array of the listing.
        let more = next.k_idx.len() - skip;
        reserve_exact(&mut self.k_idx, more, "block lists")?;
        crate::halves::extend_from(&mut self.k_idx, &next.k_idx[skip..]);
        // Room the lists did not use (rows sharing the list of the row before, a candidate
        // holding a dependency listed once) given back: a shrinking reallocation, in place.
        self.k_idx.shrink_to_fit();
        let ordinal = self.lists.len() as u64 - u64::from(same);
        let from = usize::from(same);
        reserve(
            &mut self.lists,
            next.lists.len() - from,
            "block list bounds",
        )?;
        let moved = |x: u32| x - skip as u32 + offset;
        self.lists.extend(
            (next.lists[from..].iter())
                .map(|&(a, fill, w)| ((a & P_FLAG) | moved(a & !P_FLAG), moved(fill), w)),
        );
        // The next half's runs are apart from one another (each would have joined the run
        // before): only the first may continue the last of these.
        let mut runs = (next.spans.iter()).map(|&(i, end, list)| (i, end, list + ordinal));
        if let Some((i, end, list)) = runs.next() {
            extend_span(&mut self.spans, i, end - i, list as u32)?;
        }
        reserve_exact(&mut self.spans, runs.len(), "runs of parked rows")?;
        self.spans.extend(runs);
        reserve(&mut self.suspected, next.suspected.len(), "rows")?;
        self.suspected.extend_from_slice(&next.suspected);
        reserve(&mut self.wide, next.wide.len(), "rows")?;
        self.wide.extend_from_slice(&next.wide);
        self.listed += next.listed;
        self.work += next.work;
        self.max_q = self.max_q.max(next.max_q);
        self.longest = self.longest.max(next.longest);
        self.blind_rows += next.blind_rows;
        self.max_clique = self.max_clique.max(next.max_clique);
        self.listed_p += next.listed_p;
        Ok(())
    }
}

/// The indices of the nonzero flags (the probed blocks), in increasing order.
fn nonzero(flags: &[u8]) -> impl Iterator<Item = usize> + Clone + '_ {
    (flags.iter().enumerate())
        .filter(|(_, &f)| f != 0)
        .map(|(b, _)| b)
}

/// The rows' lists (`lists`' starts into `k_idx`, the last one the end) transposed: for each
/// of the `nblocks` blocks, the rows (ordinals) that hold it, with the block's P/Q flag for
/// that row in the top bit, as pointers (one more than blocks) and rows.
///
/// # Errors
/// [`ErrorKind::OutOfMemory`] when the pointers or the rows do not fit.
pub(super) fn transpose(
    lists: &[(u32, u32, u32)],
    k_idx: &[u32],
    nblocks: usize,
) -> Result<(Vec<u32>, Vec<u32>)> {
    // Counting sort without a second pointer array: t_ptr[b] counts, then holds the end of
    // block b's list, and filling from the back moves it to the start.
    let start_of = |r: usize| (lists[r].0 & !P_FLAG) as usize;
    let mut t_ptr = filled(0u32, nblocks + 1, "block pointers")?;
    for &b in k_idx {
        t_ptr[(b & !P_FLAG) as usize] += 1;
    }
    for b in 1..=nblocks {
        t_ptr[b] += t_ptr[b - 1];
    }
    // Every slot is written below; filled first, in two halves on two cores (`halves.rs`),
    // which fault its fresh pages in at once.
    let mut t_idx = crate::halves::filled(0u32, k_idx.len(), "rows of blocks")?;
    for r in (0..lists.len() - 1).rev() {
        for &b in k_idx[start_of(r)..start_of(r + 1)].iter().rev() {
            let slot = &mut t_ptr[(b & !P_FLAG) as usize];
            *slot -= 1;
            t_idx[*slot as usize] = r as u32 | (b & P_FLAG);
        }
    }
    Ok((t_ptr, t_idx))
}

/// The last level's probed blocks colored by a grid's formula (`coloring/lattice.rs`) over the
/// rows' lists (`lists`' starts into `k_idx`, the last one the end; entries flagged P in the
/// top bit), whose longest holds `longest` blocks: each probed block's color (the colors the
/// probed blocks take, renumbered from 0 in order: a formula color no probed block took makes
/// no probe), the others' [`NONE`], and the number of colors; `None` when no formula fits. No
/// list then holds two blocks of one color.
///
/// # Errors
/// [`ErrorKind::OutOfMemory`] when the colors do not fit.
fn by_formula(
    lists: &[(u32, u32, u32)],
    k_idx: &[u32],
    nblocks: usize,
    longest: usize,
    probed: &[u8],
) -> Result<Option<(Vec<u32>, usize)>> {
    use crate::coloring::lattice::{lattice, Rows};
    struct Listed<'a>(&'a [(u32, u32, u32)], &'a [u32], usize);
    impl Rows for Listed<'_> {
        fn rows(&self) -> usize {
            self.0.len() - 1
        }
        fn cols(&self) -> usize {
            self.2
        }
        fn row(&self, r: usize) -> &[u32] {
            let start = |r: usize| (self.0[r].0 & !P_FLAG) as usize;
            &self.1[start(r)..start(r + 1)]
        }
        fn mask(&self) -> u32 {
            !P_FLAG
        }
    }
    let Some(mut color) = lattice(&Listed(lists, k_idx, nblocks), longest)? else {
        return Ok(None);
    };
    // The formula's colors (fewer than 64) as the probed blocks take them, in order.
    let mut renamed = [NONE; 64];
    let mut colors = 0;
    for (c, &p) in color.iter_mut().zip(probed) {
        if p == 0 {
            *c = NONE;
            continue;
        }
        let slot = &mut renamed[*c as usize];
        if *slot == NONE {
            *slot = colors;
            colors += 1;
        }
        *c = *slot;
    }
    Ok(Some((color, colors as usize)))
}

/// Whether the rows' lists reach far: the mean span of the first 1024 lists of two blocks or
/// more against 4096 blocks, as [`scattered`] judges the blocks' rows (which a formula's
/// coloring does not transpose): the tells ask ahead for the rows' records when it is.
fn lists_far(lists: &[(u32, u32, u32)], k_idx: &[u32]) -> bool {
    let start = |r: usize| (lists[r].0 & !P_FLAG) as usize;
    let (mut count, mut span) = (0u64, 0u64);
    for r in (0..lists.len() - 1)
        .filter(|&r| start(r + 1) > start(r) + 1)
        .take(1024)
    {
        let (first, last) = (k_idx[start(r)], k_idx[start(r + 1) - 1]);
        span += u64::from((last & !P_FLAG).saturating_sub(first & !P_FLAG));
        count += 1;
    }
    span > 4096 * count
}

/// Whether the blocks' rows lie far apart: their lists then come from scattered memory. The
/// mean distance between a block's first and last row (ordinals, increasing within a block)
/// over the first 1024 blocks with several rows, against a span that stays in cache (4096
/// rows: 48 KB of list bounds); ordinals of a sample of stride `s` count `s` rows each.
fn scattered(t_ptr: &[u32], t_idx: &[u32], s: u32) -> bool {
    let (mut blocks, mut span) = (0u64, 0u64);
    for w in t_ptr.windows(2).filter(|w| w[1] > w[0] + 1).take(1024) {
        let (first, last) = (t_idx[w[0] as usize], t_idx[w[1] as usize - 1]);
        span += u64::from((last & !P_FLAG).saturating_sub(first & !P_FLAG));
        blocks += 1;
    }
    span * u64::from(s) > 4096 * blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The lists of a band of half-width 2 over 300 blocks (row r: blocks r - 2 to r + 2, the
    /// middle one Q, the others P), only the blocks 1 and 3 modulo 5 probed (2 of the band's
    /// 5 colors: `j mod 5`); and lists of
    /// random blocks (each list sorted, as the listing makes them).
    #[test]
    fn a_formula_colors_a_grids_lists_with_no_two_blocks_of_a_list_alike() {
        let nblocks: usize = 300;
        let (mut lists, mut k_idx) = (Vec::new(), Vec::new());
        for r in 0..nblocks {
            let start = k_idx.len() as u32;
            for b in r.saturating_sub(2)..(r + 3).min(nblocks) {
                k_idx.push(b as u32 | if b == r { 0 } else { P_FLAG });
            }
            lists.push((start, start, 1));
        }
        lists.push((k_idx.len() as u32, k_idx.len() as u32, 0));
        let probed: Vec<u8> = (0..nblocks)
            .map(|b| u8::from(b % 5 == 1 || b % 5 == 3))
            .collect();
        let (color, colors) = by_formula(&lists, &k_idx, nblocks, 5, &probed)
            .unwrap()
            .expect("a band's formula");
        // Two of the five colors; the probed blocks take them renumbered in order, the others
        // none.
        assert_eq!(colors, 2);
        let mut next = 0;
        for b in 0..nblocks {
            match probed[b] {
                0 => assert_eq!(color[b], NONE, "block {b}"),
                _ => {
                    assert!(color[b] <= next, "block {b}: {}", color[b]);
                    next = next.max(color[b] + 1);
                }
            }
        }
        assert_eq!(next as usize, colors);
        // No list holds two probed blocks of one color.
        for w in lists.windows(2) {
            let row = &k_idx[w[0].0 as usize..w[1].0 as usize];
            let taken: Vec<u32> = (row.iter().map(|&b| color[(b & !P_FLAG) as usize]))
                .filter(|&c| c != NONE)
                .collect();
            let mut distinct = taken.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), taken.len(), "{row:?}: {taken:?}");
        }
        // Random lists: no formula.
        let mut rng = Rng::new(3);
        let (lists, mut k_idx, _, _) = random_lists(&mut rng, 400, 300, 3);
        for w in lists.windows(2) {
            let (a, b) = ((w[0].0 & !P_FLAG) as usize, (w[1].0 & !P_FLAG) as usize);
            k_idx[a..b].sort_by_key(|&k| k & !P_FLAG);
        }
        let longest = (lists.windows(2))
            .map(|w| ((w[1].0 & !P_FLAG) - (w[0].0 & !P_FLAG)) as usize)
            .max()
            .unwrap();
        let all = vec![1u8; 300];
        assert!(by_formula(&lists, &k_idx, 300, longest, &all)
            .unwrap()
            .is_none());
    }

    /// The bound on the coloring's work: 64 per listed block (plus 10^7) always; past it, the
    /// one-probe-per-column probes' cost over the levels left, only while the candidates are
    /// held by the known dependencies.
    #[test]
    fn work_limit_weighs_the_probes_saved_only_for_held_candidates() {
        let fixed = 64 * 1_000_000 + 10_000_000;
        // 10^5 unknown columns, each probe 3.4 x 10^6 (n = m = 10^5 and 24 per row), 8 levels.
        let (cols, per_probe) = (100_000, 3_400_000);
        let weighed = 100_000u64 * 3_400_000 / 8;
        assert_eq!(work_limit(1_000_000, (cols, per_probe), 7, true), weighed);
        assert_eq!(work_limit(1_000_000, (cols, per_probe), 7, false), fixed);
        // Cheap probes: the fixed bound stands.
        assert_eq!(work_limit(1_000_000, (100, 1000), 7, true), fixed);
        // No overflow on huge products.
        let huge = work_limit(1, (usize::MAX, usize::MAX), 0, true);
        assert_eq!(huge, u64::MAX);
    }

    /// Random row lists over `nblocks` blocks: each row 1 to 24 distinct blocks, at most
    /// `max_q` of them Q, rows without a Q block blind, weights 1 to 3; with the transpose.
    #[allow(clippy::type_complexity)]
    fn random_lists(
        rng: &mut Rng,
        rows: usize,
        nblocks: usize,
        max_q: usize,
    ) -> (Vec<(u32, u32, u32)>, Vec<u32>, Vec<u32>, Vec<u32>) {
        let (mut lists, mut k_idx) = (Vec::new(), Vec::new());
        for _ in 0..rows {
            let start = k_idx.len();
            let len = 1 + rng.below(24.min(nblocks));
            let mut q = 0;
            while k_idx.len() - start < len {
                let b = rng.below(nblocks) as u32;
                if k_idx[start..].iter().any(|&k| k & !P_FLAG == b) {
                    continue;
                }
                let is_q = q < max_q && rng.below(4) == 0;
                q += usize::from(is_q);
                k_idx.push(if is_q { b } else { b | P_FLAG });
            }
            let blind = if q == 0 { P_FLAG } else { 0 };
            let w = 1 + rng.below(3) as u32;
            lists.push((start as u32 | blind, start as u32, w));
        }
        lists.push((k_idx.len() as u32, k_idx.len() as u32, 0));
        let mut t_ptr = vec![0u32; nblocks + 1];
        for &b in &k_idx {
            t_ptr[(b & !P_FLAG) as usize + 1] += 1;
        }
        for b in 1..=nblocks {
            t_ptr[b] += t_ptr[b - 1];
        }
        let mut fill = t_ptr.clone();
        let mut t_idx = vec![0u32; k_idx.len()];
        for r in 0..rows {
            let (s, e) = (lists[r].0 & !P_FLAG, lists[r + 1].0 & !P_FLAG);
            for &b in &k_idx[s as usize..e as usize] {
                let slot = &mut fill[(b & !P_FLAG) as usize];
                t_idx[*slot as usize] = r as u32 | (b & P_FLAG);
                *slot += 1;
            }
        }
        (lists, k_idx, t_ptr, t_idx)
    }

    /// Rows keeping tallies color every block as rows keeping lists do, blind rows, weights
    /// and the palette's cap included; and the parked rows' probe masks agree.
    #[test]
    fn tallies_color_as_lists_do() {
        let mut rng = Rng::new(11);
        for case in 0..40 {
            let (rows, nblocks) = (50 + rng.below(400), 20 + rng.below(300));
            let max_q = rng.below(8);
            let cap = coarse_cap(max_q, 0);
            let (lists, mut seen, t_ptr, t_idx) = random_lists(&mut rng, rows, nblocks, max_q);
            let far = case % 2 == 0;
            let by_block = (&t_ptr[..], &t_idx[..], far);
            let probed: Vec<u8> = (0..nblocks)
                .map(|b| u8::from(t_ptr[b + 1] > t_ptr[b]))
                .collect();

            let mut by_lists = lists.clone();
            let mut color_l = vec![NONE; nblocks];
            let mut store = Lists::new(&mut by_lists, &mut seen);
            let k_l = color_blocks(
                nonzero(&probed),
                by_block,
                &mut store,
                &mut color_l,
                (false, false),
                cap,
            )
            .unwrap()
            .unwrap();

            let spare = rng.below(3 * rows);
            let mut space = vec![u32::MAX; Tallies::space(rows) + spare];
            let mut tallies = Tallies::new(&lists, &mut space, cap).unwrap();
            let mut color_t = vec![NONE; nblocks];
            let k_t = color_blocks(
                nonzero(&probed),
                by_block,
                &mut tallies,
                &mut color_t,
                (false, false),
                cap,
            )
            .unwrap()
            .unwrap();

            assert_eq!((k_l, &color_l), (k_t, &color_t), "case {case}");
            assert!(
                k_t <= cap && k_t > 1,
                "case {case}: {k_t} colors, cap {cap}"
            );
            for r in 0..rows {
                let list = &seen[(by_lists[r].0 & !P_FLAG) as usize..by_lists[r].1 as usize];
                assert_eq!(p_mask_of_list(list), Some(tallies.p_mask(r)), "row {r}");
            }
        }
    }

    /// At the last level a pass colors every block as rows keeping lists do, quiet rows and
    /// both kinds of pass included, whether the rows' masks hold the colors or the pass has
    /// to go back to lists (more than 63 colors).
    #[test]
    fn the_last_level_colors_with_masks_as_with_lists() {
        let mut rng = Rng::new(5);
        let (mut held, mut given_up) = (0, 0);
        for case in 0..60 {
            // Some cases few blocks for many long rows: more colors than masks hold.
            let crowded = case % 3 == 0;
            let (rows, nblocks) = match crowded {
                true => (300 + rng.below(200), 60 + rng.below(60)),
                false => (50 + rng.below(400), 20 + rng.below(300)),
            };
            let max_q = rng.below(8);
            let (mut lists, k_idx, t_ptr, t_idx) = random_lists(&mut rng, rows, nblocks, max_q);
            for l in &mut lists[..rows] {
                if rng.below(2) == 0 {
                    l.2 |= QUIET;
                }
            }
            let by_block = (&t_ptr[..], &t_idx[..], case % 2 == 0);
            let probed: Vec<u8> = (0..nblocks)
                .map(|b| u8::from(t_ptr[b + 1] > t_ptr[b]))
                .collect();
            for quiet in [false, true] {
                let (mut by_lists, mut seen) = (lists.clone(), k_idx.clone());
                let mut expected = vec![NONE; nblocks];
                let k = color_blocks(
                    nonzero(&probed),
                    by_block,
                    &mut Lists::new(&mut by_lists, &mut seen),
                    &mut expected,
                    (true, quiet),
                    usize::MAX,
                )
                .unwrap()
                .unwrap();

                let (mut again, mut space) = (lists.clone(), k_idx.clone());
                let mut color = vec![NONE; nblocks];
                let got = color_pass(
                    nonzero(&probed),
                    by_block,
                    (&mut again, &mut space),
                    &mut color,
                    (true, quiet),
                    usize::MAX,
                )
                .unwrap()
                .0;
                assert_eq!((got, &color), (k, &expected), "case {case}, quiet {quiet}");
                // Masks hold 63 colors (0 to 62): a pass of more went back to lists.
                match k <= 63 {
                    true => held += 1,
                    false => given_up += 1,
                }
            }
        }
        assert!(
            held >= 40 && given_up >= 4,
            "{held} held, {given_up} given up"
        );
    }
}
