//! Which colors each column already has among its neighbours (saturation coloring).
//!
//! Saturation (DSATUR) asks, each time a column takes color `c`, whether each of its
//! uncolored neighbours `w` already had a neighbour of color `c`; if not, `w`'s saturation
//! grows. Scanning a list of `w`'s colors for that made the order cubic in the longest row
//! (a dense row of 10^4 columns: about a minute). Here the first 64 colors are one bit each in
//! a word per column (8 bytes a column: what nearly every sparse pattern needs; the word lives
//! in the column's record of `saturation.rs`, beside what else the order asks), and a column
//! that sees a color from 64 up gets a bitset of its own, grown as colors appear (a column of
//! a dense row of length L sees up to L colors: L / 8 bytes), found through a slot index made
//! when the first such color appears (4 bytes a column; a hash map there cost a hash per
//! question on patterns with hundreds of colors). Each question is O(1).

use crate::error::{filled, push, Error, Result};

/// Which colors from 64 up each column sees (see the module docs).
pub(super) struct Seen {
    columns: usize,
    /// Per column, its bitset of colors from 64 up in `high`, or `u32::MAX` (empty until a
    /// color reaches 64).
    slot: Vec<u32>,
    high: Vec<Vec<u64>>,
}

impl Seen {
    /// Nothing seen, for `n` columns (allocates nothing until a color reaches 64).
    pub(super) fn new(n: usize) -> Self {
        Seen {
            columns: n,
            slot: Vec::new(),
            high: Vec::new(),
        }
    }

    /// Marks color `c` as seen by column `w`, whose colors below 64 are the bits of `low`;
    /// returns whether it was new to `w`.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when a bitset cannot grow.
    #[inline]
    pub(super) fn insert(&mut self, low: &mut u64, w: usize, c: u32) -> Result<bool> {
        if c < 64 {
            let bit = 1u64 << c;
            let new = *low & bit == 0;
            *low |= bit;
            return Ok(new);
        }
        self.insert_high(w, c)
    }

    /// The smallest color column `w` has not seen among its neighbours, `low` being its colors
    /// below 64: the smallest free color for `w` when every colored neighbour of `w` has
    /// told it its color ([`Seen::insert`]).
    #[inline]
    pub(super) fn first_free(&self, low: u64, w: usize) -> u32 {
        if low != u64::MAX {
            return low.trailing_ones();
        }
        let set = match self.slot.get(w) {
            Some(&slot) if slot != u32::MAX => &self.high[slot as usize],
            _ => return 64,
        };
        let full = set.iter().take_while(|&&word| word == u64::MAX).count();
        let next = set.get(full).map_or(0, |word| word.trailing_ones());
        64 + 64 * full as u32 + next
    }

    #[inline(never)]
    fn insert_high(&mut self, w: usize, c: u32) -> Result<bool> {
        let (word, bit) = ((c / 64 - 1) as usize, 1u64 << (c % 64));
        if self.slot.is_empty() {
            self.slot = filled(u32::MAX, self.columns, "color slots")?;
        }
        if self.slot[w] == u32::MAX {
            self.slot[w] = self.high.len() as u32;
            push(&mut self.high, Vec::new(), "colors seen")?;
        }
        let set = &mut self.high[self.slot[w] as usize];
        if set.len() <= word {
            let more = word + 1 - set.len();
            set.try_reserve(more)
                .map_err(|_| Error::out_of_memory("colors seen", word + 1))?;
            set.resize(word + 1, 0);
        }
        let new = set[word] & bit == 0;
        set[word] |= bit;
        Ok(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_color_is_new_once_per_column() {
        let mut seen = Seen::new(300);
        let mut low = [0u64; 300];
        for (w, low) in low.iter_mut().enumerate() {
            for c in (0..500u32).filter(|&c| (w + c as usize).is_multiple_of(7)) {
                assert!(seen.insert(low, w, c).unwrap(), "{w} {c} first");
            }
        }
        for (w, low) in low.iter_mut().enumerate() {
            for c in 0..500u32 {
                let was = (w + c as usize).is_multiple_of(7);
                assert_eq!(seen.insert(low, w, c).unwrap(), !was, "{w} {c}");
            }
        }
    }

    #[test]
    fn the_first_free_color_is_the_smallest_not_seen() {
        // Per column: colors 0..k seen (k crossing 64 and whole words), then a gap, then more.
        let mut seen = Seen::new(400);
        let mut low = [0u64; 400];
        for (w, low) in low.iter_mut().enumerate() {
            assert_eq!(seen.first_free(*low, w), 0);
            for c in (0..w as u32).chain(w as u32 + 1..w as u32 + 70) {
                seen.insert(low, w, c).unwrap();
            }
            assert_eq!(seen.first_free(*low, w), w as u32, "column {w}");
            seen.insert(low, w, w as u32).unwrap();
            assert_eq!(seen.first_free(*low, w), w as u32 + 70, "column {w}");
        }
    }
}
