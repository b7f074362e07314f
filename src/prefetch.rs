//! A hint to the processor to bring memory into the cache before it is read: for loops whose
//! next indices are known ahead but scattered (the payload planner's coloring visits the rows
//! of a block in random order on patterns without locality; saturation coloring walks a
//! column's rows and their columns). Only a hint: it never faults,
//! changes no value, and is a no-op where the platform has no such instruction.

/// Asks for `slice[i]` to be brought into the cache; nothing when `i` is out of bounds.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], i: usize) {
    if let Some(item) = slice.get(i) {
        imp::prefetch(item as *const T as *const i8);
    }
}

/// Asks for the memory at `p` to be brought into the cache: any address (it is never read).
#[inline(always)]
pub(crate) fn prefetch_at<T>(p: *const T) {
    imp::prefetch(p as *const i8);
}

#[cfg(target_arch = "x86_64")]
mod imp {
    #[inline(always)]
    pub fn prefetch(p: *const i8) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86_64 baseline; a prefetch reads nothing and never
        // faults, and `p` points into a live slice anyway.
        unsafe { _mm_prefetch(p, _MM_HINT_T0) };
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    #[inline(always)]
    pub fn prefetch(_: *const i8) {}
}
