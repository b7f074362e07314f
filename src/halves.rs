//! Passes over the rows, in two halves on two cores.
//!
//! Between two steps the black box is idle and so is the thread that tells its outputs
//! alongside (`crate::driver::run`): on a machine with two cores one of them sits idle while
//! the planner plans. The passes that treat each row on its own (the split that ends a step,
//! `refine/split.rs`; the listing that starts one, `refine/level.rs`) are cut into two halves
//! of rows; the second half runs on a helper thread while the first runs here, each writing
//! its own rows' results, and the halves are joined in row order. The result is the one a
//! single pass gives, entry for entry: the halves share nothing they write, every count the
//! pass keeps is a sum or a largest value, and what one row's result takes from the row
//! before (a parked row's code, a list shared with the row before) is made again at the join.
//! Passes whose steps depend on each other (the greedy coloring, the merge of new
//! dependencies) stay on one core.
//!
//! The tells are cut the same way: the planner's reading of one probe's outputs
//! (`planner/refine.rs`, each half with its own lists of new dependencies and parked rows'
//! outcomes, joined end to end: both are sorted before use) and the check's slope test of a
//! class (`trace/check.rs`, each half listing its rows that fail; before it, the class's
//! steps, two random draws a column, are made in two halves of its columns). A tell runs
//! while the black box makes the next evaluation, so its halves share the two cores with it:
//! on random 5 per row at 10^6 (scattered reads, bound by latency) the whole run took 0.965x;
//! on the tridiagonal (contiguous reads, bound by the memory's bandwidth, which f shares) no
//! gain showed but where nothing else ran (the check's last class: 10 -> 5 ms).
//!
//! Cutting the counting sort that transposes the rows' lists (the blocks below a cut on one
//! core, those above on the other) was tried and not kept: random 5 per row at 10^6 0.98x,
//! tridiagonal and the 2-D Bratu residual unchanged; both halves read every list. What is cut
//! is the writing of its largest array before it, and of the listing's second half joined
//! to the first ([`fill`], [`extend_from`]): large fresh arrays, whose page faults two cores
//! take at once. (Every large array filled or copied that way made the tridiagonal at 10^6
//! slower, for a reason not found: `bench/LOG.md`.)
//!
//! Only large passes are cut ([`HALVES_MIN_WORK`]): a helper thread costs tens of
//! microseconds to start. Where no second core can be had (one core, or the thread does not
//! start) both halves run here, one after the other. The helper is joined before [`both`]
//! returns: no helper outlives a pass, so a driver that forks a worker for the next evaluation
//! forks no helper, and no lock is held across the fork.

use crate::error::{reserve, Result};

/// The work (rows plus stored entries) from which a pass is cut in two: below it, starting a
/// thread costs about what the half saves.
pub(crate) const HALVES_MIN_WORK: usize = 1 << 16;

/// Arrays of at least this many bytes are written in two halves by [`fill`] and
/// [`extend_from`]: the pages of a fresh array cost more to fault in (about 2.3 us a 4 KB page
/// here) than to write, and two cores fault them in at once (a C test on this machine: 32 MB
/// in 18.7 ms on one core, 10.1 ms on two); below it, starting the helper costs about what the
/// half saves.
pub(crate) const FILL_IN_HALVES_BYTES: usize = 1 << 21;

/// Whether this machine lets a pass run in two halves at once (at least two cores). Asked of
/// the system once (it reads the process's CPU quota).
pub(crate) fn two_cores() -> bool {
    static TWO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TWO.get_or_init(|| std::thread::available_parallelism().is_ok_and(|cores| cores.get() >= 2))
}

/// The work from which a pass is cut in two on this machine: [`HALVES_MIN_WORK`] with two
/// cores or more, never with one.
pub(crate) fn halves_from() -> usize {
    match two_cores() {
        true => HALVES_MIN_WORK,
        false => usize::MAX,
    }
}

/// Runs `first` here and `second` on a helper thread when `at_once`, and returns both results;
/// otherwise (or when the thread does not start) runs `first`, then `second`, here. A panic in
/// `second` is raised again here, as it would have been on this thread.
pub(crate) fn both<A, B>(
    at_once: bool,
    first: impl FnOnce() -> A,
    second: impl FnOnce() -> B + Send,
) -> (A, B)
where
    B: Send,
{
    if !at_once {
        let a = first();
        return (a, second());
    }
    // Taken by the helper thread, or here when it does not start.
    let slot = std::sync::Mutex::new(Some(second));
    let take = || slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    std::thread::scope(|scope| {
        let helper = std::thread::Builder::new()
            .name("nanprop-plan".into())
            .spawn_scoped(scope, || {
                crate::fpenv::mask_traps();
                take().map(|second| second())
            });
        let a = first();
        let b = match helper.map(|h| h.join()) {
            Ok(Ok(Some(b))) => b,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Ok(Ok(None)) | Err(_) => match take() {
                Some(second) => second(),
                None => unreachable!("the second half runs once"),
            },
        };
        (a, b)
    })
}

/// Appends `count` values to `v`, which has room for them, written by `write(slots, at)` into
/// the slots of values `at..at + slots.len()` of the `count`: in two halves at once when they
/// take [`FILL_IN_HALVES_BYTES`] or more and the machine has two cores ([`both`]), else here.
/// `write` must write every slot it is given.
fn append_in_halves<T: Copy + Send + Sync>(
    v: &mut Vec<T>,
    count: usize,
    write: impl Fn(&mut [std::mem::MaybeUninit<T>], usize) + Sync,
) {
    assert!(
        v.capacity() - v.len() >= count,
        "append_in_halves: room for the values"
    );
    let len = v.len();
    let at_once = count.saturating_mul(std::mem::size_of::<T>()) >= FILL_IN_HALVES_BYTES;
    let slots = &mut v.spare_capacity_mut()[..count];
    let (first, second) = slots.split_at_mut(count / 2);
    let half = first.len();
    let write = &write;
    both(
        at_once && two_cores(),
        || write(first, 0),
        || write(second, half),
    );
    // SAFETY: `write` wrote each of the `count` slots after the length (within the capacity,
    // asserted above); `T: Copy` has no drop to run should a half not finish.
    unsafe { v.set_len(len + count) };
}

/// Writes `len` copies of `value` into `v`, which is empty and has room for them: in two
/// halves at once when they take [`FILL_IN_HALVES_BYTES`] or more and the machine has two
/// cores ([`both`]), else here.
pub(crate) fn fill<T: Copy + Send + Sync>(v: &mut Vec<T>, value: T, len: usize) {
    assert!(v.is_empty(), "fill: an empty array");
    append_in_halves(v, len, |slots, _| {
        for slot in slots {
            slot.write(value);
        }
    });
}

/// `len` copies of `value` as [`crate::error::filled`] makes them, written by [`fill`]: for
/// the large arrays a step makes while the other core has nothing to do (the planning between
/// steps, the planner's start after the baseline's tell).
///
/// # Errors
/// [`crate::ErrorKind::OutOfMemory`] naming `what`.
pub(crate) fn filled<T: Copy + Send + Sync>(value: T, len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    reserve(&mut v, len, what)?;
    fill(&mut v, value, len);
    Ok(v)
}

/// Appends a copy of `from` to `v`, which has room for it: in two halves at once when they
/// take [`FILL_IN_HALVES_BYTES`] or more and the machine has two cores ([`both`]), else here.
/// (Copying into an array's fresh room faults its pages in, as [`fill`] does.)
pub(crate) fn extend_from<T: Copy + Send + Sync>(v: &mut Vec<T>, from: &[T]) {
    append_in_halves(v, from.len(), |slots, at| {
        for (slot, &x) in slots.iter_mut().zip(&from[at..]) {
            slot.write(x);
        }
    });
}

/// The row that cuts rows plus their entries (`ptr`: CSR pointers over the rows) in two halves.
pub(crate) fn halfway(ptr: &[usize]) -> usize {
    let rows = ptr.len() - 1;
    let half = (rows + ptr[rows]) / 2;
    // `i + ptr[i]` grows with i: the first row at which it reaches half.
    let (mut lo, mut hi) = (0, rows);
    while lo < hi {
        let i = lo + (hi - lo) / 2;
        match i + ptr[i] < half {
            true => lo = i + 1,
            false => hi = i,
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Filled and copied in two halves (arrays past [`FILL_IN_HALVES_BYTES`]) or here (below
    /// it), the arrays are what one pass makes, element for element, and odd lengths leave no
    /// slot unwritten at the cut.
    #[test]
    fn fill_and_extend_from_write_every_slot() {
        let big = FILL_IN_HALVES_BYTES / std::mem::size_of::<u32>() + 3;
        for len in [0, 1, 7, big, 2 * big + 1] {
            let mut v: Vec<u32> = Vec::with_capacity(len);
            fill(&mut v, 0xABCD_0123, len);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&x| x == 0xABCD_0123), "fill, {len}");

            let from: Vec<u32> = (0..len as u32)
                .map(|i| i.wrapping_mul(2654435761))
                .collect();
            let mut v: Vec<u32> = vec![7, 8, 9];
            v.reserve_exact(len);
            extend_from(&mut v, &from);
            assert_eq!(&v[..3], &[7, 8, 9]);
            assert_eq!(&v[3..], &from[..], "extend_from, {len}");
        }
    }
}
