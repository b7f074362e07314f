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
//! tridiagonal and the 2-D Bratu residual unchanged; both halves read every list.
//!
//! Only large passes are cut ([`HALVES_MIN_WORK`]): a helper thread costs tens of
//! microseconds to start. Where no second core can be had (one core, or the thread does not
//! start) both halves run here, one after the other. The helper is joined before [`both`]
//! returns: no helper outlives a pass, so a driver that forks a worker for the next evaluation
//! forks no helper, and no lock is held across the fork.

/// The work (rows plus stored entries) from which a pass is cut in two: below it, starting a
/// thread costs about what the half saves.
pub(crate) const HALVES_MIN_WORK: usize = 1 << 16;

/// Whether this machine lets a pass run in two halves at once (at least two cores).
pub(crate) fn two_cores() -> bool {
    std::thread::available_parallelism().is_ok_and(|cores| cores.get() >= 2)
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
