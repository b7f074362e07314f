//! Column coloring: `nanprop_coloring` and its options.

use super::abi::{guarded, not_null, read_versioned, write_optional, Versioned};
use super::pattern::{nanprop_pattern, pattern_ref};
use super::status::nanprop_status;
use crate::coloring::{self, ColoringOptions, Order};
use crate::error::{Error, Result};

/// Coloring order: the best of all orders, stopping at the lower bound (about 15 greedy
/// passes; for a pattern colored once and used for many Jacobians); a structured grid's
/// pattern (a band, a stencil on a grid numbered in order) is colored by formula first, at the
/// lower bound.
pub const NANPROP_ORDER_BEST: u32 = 0;
/// Coloring order: natural (column index).
pub const NANPROP_ORDER_NATURAL: u32 = 1;
/// Coloring order: largest distance-2 degree first.
pub const NANPROP_ORDER_LARGEST_FIRST: u32 = 2;
/// Coloring order: smallest-last.
pub const NANPROP_ORDER_SMALLEST_LAST: u32 = 3;
/// Coloring order: incidence degree.
pub const NANPROP_ORDER_INCIDENCE_DEGREE: u32 = 4;
/// Coloring order: dynamic largest-first.
pub const NANPROP_ORDER_DYNAMIC_LARGEST_FIRST: u32 = 5;
/// Coloring order: random, from `seed`.
pub const NANPROP_ORDER_RANDOM: u32 = 6;
/// Coloring order: saturation (DSATUR): most distinct neighbouring colors first.
pub const NANPROP_ORDER_SATURATION: u32 = 7;
/// Coloring order: a structured grid's pattern (a band, a stencil on a 2-D or 3-D grid
/// numbered in order) by formula, at the lower bound; otherwise saturation, after the natural
/// order when one row holds half the coloring work, has at least 64 entries or every row's
/// columns lie close together (a band, blocks); stops at the lower bound (default: a few
/// greedy passes, and on the benchmark suite never more colors than ColPack's best order).
pub const NANPROP_ORDER_AUTO: u32 = 8;

/// The version of `nanprop_coloring_options` this header describes.
pub const NANPROP_COLORING_OPTIONS_VERSION: u32 = 1;

/// Options of `nanprop_coloring`. Start from `nanprop_coloring_options_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nanprop_coloring_options {
    /// sizeof(nanprop_coloring_options) as the caller compiled it.
    pub struct_size: usize,
    /// NANPROP_COLORING_OPTIONS_VERSION as the caller compiled it.
    pub version: u32,
    /// One of the NANPROP_ORDER_* values (default NANPROP_ORDER_AUTO).
    pub order: u32,
    /// Seed of the random order and of recoloring (default 0).
    pub seed: u64,
    /// Rounds of iterated greedy recoloring after the order, one greedy pass each (default 0:
    /// none).
    pub recolor_iterations: u32,
}

pub(crate) fn default_coloring_options() -> nanprop_coloring_options {
    nanprop_coloring_options {
        struct_size: std::mem::size_of::<nanprop_coloring_options>(),
        version: NANPROP_COLORING_OPTIONS_VERSION,
        order: NANPROP_ORDER_AUTO,
        seed: 0,
        recolor_iterations: 0,
    }
}

impl Versioned for nanprop_coloring_options {
    const NAME: &'static str = "nanprop_coloring_options";
    fn defaults() -> Self {
        default_coloring_options()
    }
    fn size_of_version(version: u32) -> Option<usize> {
        (version == 1).then_some(std::mem::size_of::<Self>())
    }
}

/// Converts coloring options (standalone or embedded in Jacobian options, which are checked
/// the same way).
pub(crate) fn coloring_from(o: &nanprop_coloring_options) -> Result<ColoringOptions> {
    if Some(o.struct_size) != nanprop_coloring_options::size_of_version(o.version) {
        return Err(Error::invalid(
            "coloring options: struct_size or version not set (use nanprop_coloring_options_init)",
        ));
    }
    use coloring::Strategy::{Auto, BestOf, Only};
    let strategy = match o.order {
        NANPROP_ORDER_AUTO => Auto,
        NANPROP_ORDER_BEST => BestOf,
        NANPROP_ORDER_NATURAL => Only(Order::Natural),
        NANPROP_ORDER_LARGEST_FIRST => Only(Order::LargestFirst),
        NANPROP_ORDER_SMALLEST_LAST => Only(Order::SmallestLast),
        NANPROP_ORDER_INCIDENCE_DEGREE => Only(Order::IncidenceDegree),
        NANPROP_ORDER_DYNAMIC_LARGEST_FIRST => Only(Order::DynamicLargestFirst),
        NANPROP_ORDER_RANDOM => Only(Order::Random(o.seed)),
        NANPROP_ORDER_SATURATION => Only(Order::Saturation),
        v => {
            return Err(Error::invalid(format!(
                "coloring order = {v} is not a NANPROP_ORDER_* value"
            )))
        }
    };
    Ok(ColoringOptions {
        strategy,
        seed: o.seed,
        recolor_iterations: o.recolor_iterations as usize,
    })
}

/// Fills `options` with the coloring defaults (NANPROP_ORDER_AUTO, no recoloring) and
/// sets its `struct_size` and `version`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn nanprop_coloring_options_init(options: *mut nanprop_coloring_options) {
    if !options.is_null() {
        // SAFETY: non-NULL, points to a caller's struct.
        unsafe { options.write_unaligned(default_coloring_options()) };
    }
}

/// Colors the columns of pattern `p` for Jacobian compression: no two columns of one color
/// share a row. `colors` receives n colors (0-based), `*num_colors` their count (at least the
/// longest row). `options` NULL means the best of all orders.
///
/// Errors: NANPROP_ERR_INVALID_ARGUMENT (NULL pattern, colors or num_colors; bad options).
#[no_mangle]
pub unsafe extern "C" fn nanprop_coloring(
    p: *const nanprop_pattern,
    options: *const nanprop_coloring_options,
    colors: *mut usize,
    num_colors: *mut usize,
) -> nanprop_status {
    guarded("nanprop_coloring", || {
        // SAFETY (all): arguments as documented.
        let p = unsafe { pattern_ref(p)? };
        not_null(colors, "colors")?;
        not_null(num_colors, "num_colors")?;
        let o = coloring_from(&unsafe { read_versioned(options)? })?;
        let c = coloring::color(p, &o)?;
        unsafe { super::abi::copy_indices(colors, &c.colors, "colors")? };
        write_optional(num_colors, c.num_colors);
        Ok(())
    })
}
