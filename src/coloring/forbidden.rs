//! The colors forbidden to the column being colored, as stamps: each neighbour marks its
//! color's slot with the column's stamp, and the first slot without it is the smallest free
//! color (greedy passes and star coloring alike).

use crate::error::{push, Result};

/// The smallest color `c` with `forbidden[c] != stamp` (not used by a neighbour of the vertex
/// being colored, which marked its neighbours' colors with `stamp`); grows `forbidden` by one
/// when every existing color is taken.
pub(super) fn first_free(forbidden: &mut Vec<u32>, stamp: u32) -> Result<usize> {
    let c = forbidden
        .iter()
        .position(|&s| s != stamp)
        .unwrap_or(forbidden.len());
    if c == forbidden.len() {
        push(forbidden, u32::MAX, "colors")?;
    }
    Ok(c)
}
