//! The result of a coloring: colors per column, their count, the order that gave them, and the
//! columns of each color (what decompression needs).

use super::Order;

/// A column coloring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coloring {
    /// The color of each column, 0-based.
    pub colors: Vec<u32>,
    /// Number of colors.
    pub num_colors: usize,
    /// The order that gave it (before recoloring).
    pub order: Order,
}

impl Coloring {
    /// The columns of each color, in increasing order (CSR over colors).
    pub fn groups(&self) -> (Vec<usize>, Vec<u32>) {
        let mut ptr = vec![0usize; self.num_colors + 1];
        for &c in &self.colors {
            ptr[c as usize + 1] += 1;
        }
        for c in 0..self.num_colors {
            ptr[c + 1] += ptr[c];
        }
        let mut next = ptr.clone();
        let mut cols = vec![0u32; self.colors.len()];
        for (j, &c) in self.colors.iter().enumerate() {
            cols[next[c as usize]] = j as u32;
            next[c as usize] += 1;
        }
        (ptr, cols)
    }
}
