//! The result of a coloring: colors per column, their count, the order that gave them, and the
//! columns of each color (what decompression needs).

use super::Order;
use crate::error::{copied, filled, Result};

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
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when they do not fit.
    pub fn groups(&self) -> Result<(Vec<usize>, Vec<u32>)> {
        let mut ptr = filled(0usize, self.num_colors + 1, "color pointers")?;
        for &c in &self.colors {
            ptr[c as usize + 1] += 1;
        }
        for c in 0..self.num_colors {
            ptr[c + 1] += ptr[c];
        }
        let mut next = copied(&ptr, "color pointers")?;
        let mut cols = filled(0u32, self.colors.len(), "columns by color")?;
        for (j, &c) in self.colors.iter().enumerate() {
            cols[next[c as usize]] = j as u32;
            next[c as usize] += 1;
        }
        Ok((ptr, cols))
    }
}
