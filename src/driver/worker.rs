//! A forked worker: one evaluation in a child process.
//!
//! Legacy codes crash (a NaN turned into an array index), abort, call `exit()`, hang, or enable
//! floating-point traps and die of SIGFPE. With isolation ([`crate::TraceOptions::isolate`]) or
//! process workers ([`crate::TraceOptions::processes`]) the black box runs in a child process
//! forked for each evaluation: the child computes into memory shared with the host and exits;
//! the host waits for its end (with an optional timeout) and turns a signal, an `exit()` or a
//! timeout into a [`Failure`], which the run loop reports naming the request. The host survives.
//! The contract checks of [`crate::driver::guard`] run in the host on the shared memory.
//!
//! The children are forked by the worker's *spawner* (`spawner.rs`), a copy of the host made
//! when the worker is, which forks a child whenever the host asks and reports how it ended: the
//! host itself forks once per worker, not once per evaluation (a fork from a host holding a few
//! hundred megabytes cost the host a page fault on every page it wrote after it: the command
//! line's isolated tridiagonal trace at n = 10^6 1.6 s -> 0.9 s).
//!
//! Each child starts from the host's state when the worker was made (the start of the trace),
//! so black boxes that are not thread-safe or keep state (Fortran COMMON blocks, SAVE
//! variables) work, including in loader mode (a library opened in a worker is loaded by the
//! spawner, once, and its children inherit it); state a child changes is not seen by the next
//! evaluation (each starts from the same state, as each probe should).
//!
//! Cost: one `fork` of the spawner per evaluation, worth it when an evaluation takes longer than
//! a fraction of a millisecond. Unix only.
//!
//! A worker dies with its host: the spawner and each child ask the kernel for SIGKILL when their
//! parent goes (`PR_SET_PDEATHSIG`, checked against a parent already gone), and a child sets its
//! own alarm a little past the time limit, so a hung evaluation ends even if nobody watches it
//! any more.
//!
//! The child does nothing but call the black box and `_exit`, so it runs no destructors and
//! takes no locks of its own; a black box that allocates relies on glibc's fork handlers for
//! `malloc`, as any forking program does.

use super::guard::{self, GUARD};
use super::spawner::{Ended, Spawner, Work};
use super::{BlackBox, Failure};
use crate::error::{Error, Result};
use crate::trace::failure::signal_name;
use std::time::{Duration, Instant};

/// Shared memory: a header, then x (n values), then y (m values and a guard zone).
struct Shared {
    base: *mut u8,
    len: usize,
    n: usize,
    m: usize,
}

#[repr(C)]
struct Header {
    /// 1 when the child finished calling the black box, 2 when it panicked (Rust code).
    done: u32,
    /// The black box's status (0 success).
    status: i32,
}

impl Shared {
    fn new(n: usize, m: usize) -> Result<Self> {
        let len = n
            .checked_add(m)
            .and_then(|v| v.checked_add(GUARD))
            .and_then(|v| v.checked_mul(8))
            .and_then(|v| v.checked_add(16))
            .ok_or_else(|| {
                Error::out_of_memory("shared memory for worker processes", usize::MAX)
            })?;
        // SAFETY: an anonymous shared mapping of len bytes, checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(Error::out_of_memory(
                "shared memory for isolated evaluations",
                len,
            ));
        }
        Ok(Shared {
            base: base as *mut u8,
            len,
            n,
            m,
        })
    }
    fn header(&self) -> *mut Header {
        self.base as *mut Header
    }
    /// x (n values) and y (m + GUARD values): disjoint regions of the mapping.
    fn xy_mut(&mut self) -> (&mut [f64], &mut [f64]) {
        // SAFETY: both inside the mapping (16-aligned offset), not overlapping, and borrowed
        // from &mut self, so no other reference to them exists.
        unsafe {
            let start = self.base.add(16) as *mut f64;
            (
                std::slice::from_raw_parts_mut(start, self.n),
                std::slice::from_raw_parts_mut(start.add(self.n), self.m + GUARD),
            )
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// One worker: shared memory, the spawner that forks its children, and the child evaluating.
/// Dropped, it kills its running child and its spawner (`Spawner`'s drop): a worker still
/// running when its executor gives up (another evaluation failed) leaves no stray processes,
/// no zombies.
pub struct Worker {
    shared: Shared,
    /// The evaluation time limit, which the child also enforces itself (a backstop for a host
    /// that died or stopped polling).
    timeout: Option<Duration>,
    /// Forks the children (made with the worker, and again by an evaluation if it died).
    spawner: Option<Spawner>,
    /// Whether a child is running.
    running: bool,
    started: Instant,
}

impl Worker {
    /// A worker for f: R^n -> R^m whose evaluations may take `timeout`, and its spawner
    /// (`spawner.rs`), a copy of this process as it is now. Errors: the shared memory or the
    /// spawner cannot be had.
    pub fn new(
        f: &mut dyn BlackBox,
        n: usize,
        m: usize,
        timeout: Option<Duration>,
    ) -> Result<Self> {
        let mut worker = Worker {
            shared: Shared::new(n, m)?,
            timeout,
            spawner: None,
            running: false,
            started: Instant::now(),
        };
        worker.spawner = Some(worker.spawn(f)?);
        Ok(worker)
    }

    /// Whether an evaluation is running.
    pub fn busy(&self) -> bool {
        self.running
    }

    /// Starts a process that evaluates f at `x` into the shared outputs (armed with the
    /// guard's marker), forked by the spawner; a spawner that died is made again from `f` as it
    /// is now. Errors: no process could be made.
    pub fn start(&mut self, f: &mut dyn BlackBox, x: &[f64]) -> std::result::Result<(), Failure> {
        if self.running {
            // An evaluation of a batch given up (its executor stopped at an error) still runs:
            // it must not write into the next one's outputs.
            if let Some(spawner) = self.spawner.as_mut() {
                spawner.kill();
            }
            self.running = false;
        }
        {
            let (sx, sy) = self.shared.xy_mut();
            sx.copy_from_slice(x);
            guard::arm(sy);
        }
        // SAFETY: the header lies in the mapping.
        unsafe { self.shared.header().write(Header { done: 0, status: 0 }) };
        // A spawner that died (killed from outside) is made again, once.
        let mut death = Ended::Unknown;
        for _ in 0..2 {
            if self.spawner.is_none() {
                let made = self.spawn(f).map_err(|e| Failure::NotRun(e.message))?;
                self.spawner = Some(made);
            }
            let spawner = self.spawner.as_mut().expect("made above");
            match spawner.start() {
                Ok(_) => {
                    self.running = true;
                    self.started = Instant::now();
                    return Ok(());
                }
                Err(Some(why)) => return Err(Failure::NotRun(why)),
                Err(None) => {
                    death = spawner.death();
                    self.spawner = None;
                }
            }
        }
        // Twice: the spawner dies making the black box ready (a library whose constructor
        // crashes, aborts or exits when it is loaded there). Not a failure of f (it was never
        // called) nor of its inputs: a NaN probe is not split for it, and no hint about how f
        // is called applies.
        let how = match death {
            Ended::Signaled(signal) => format!("was killed by {}", signal_name(signal)),
            Ended::Exited(code) => format!("exited with status {code}"),
            Ended::Unknown => {
                return Err(Failure::NotRun(
                    "its worker process ended before it could start the evaluation".to_string(),
                ))
            }
        };
        Err(Failure::NotRun(format!(
            "its worker process {how} while making it ready, before it was called (a library \
             loaded there whose constructor crashes, aborts or exits)"
        )))
    }

    /// A spawner whose children evaluate `f` in the shared memory.
    fn spawn(&mut self, f: &mut dyn BlackBox) -> Result<Spawner> {
        // Whole seconds past the limit, for the child's own alarm.
        let backstop = self
            .timeout
            .map(|t| t.as_secs().saturating_add(2).min(u32::MAX as u64) as u32);
        let mut work = Evaluations {
            f,
            shared: &mut self.shared,
        };
        Spawner::new(&mut work, backstop)
    }

    /// None while the worker runs; when it has ended, its outcome: the outputs are then in
    /// [`Worker::y`]. `x` is the input it was started with (to find a black box that changed
    /// it). Kills it past `timeout`.
    pub fn poll(
        &mut self,
        timeout: Option<Duration>,
        x: &[f64],
    ) -> Option<std::result::Result<(), Failure>> {
        let spawner = self.spawner.as_mut()?;
        let ended = match spawner.ended(false) {
            Some(ended) => ended,
            None => {
                let limit = timeout?;
                if self.started.elapsed() <= limit {
                    return None;
                }
                spawner.kill();
                self.running = false;
                return Some(Err(Failure::TimedOut(limit)));
            }
        };
        self.running = false;
        if ended == Ended::Unknown && !spawner.alive() {
            self.spawner = None;
        }
        Some(self.outcome(ended, x))
    }

    /// The socket to wait on for the running evaluation's end ([`wait_any`]), if one runs.
    fn socket(&self) -> Option<libc::c_int> {
        match self.running {
            true => self.spawner.as_ref().map(Spawner::socket),
            false => None,
        }
    }

    /// How the evaluation of `x` ended: from the child's end as its spawner saw it, and from the
    /// shared header (always).
    fn outcome(&mut self, ended: Ended, x: &[f64]) -> std::result::Result<(), Failure> {
        let code = match ended {
            Ended::Exited(code) => code,
            Ended::Signaled(signal) => {
                return Err(match (signal, self.timeout) {
                    // The child's own alarm: its time limit passed.
                    (libc::SIGALRM, Some(limit)) => Failure::TimedOut(limit),
                    _ => Failure::Signal(signal),
                });
            }
            Ended::Unknown => {
                // SAFETY: the header lies in the mapping; the child has ended.
                let header = unsafe { self.shared.header().read() };
                match header.done {
                    1 | 2 => 0,
                    _ => return Err(Failure::Vanished),
                }
            }
        };
        // SAFETY: the header lies in the mapping; the child has exited.
        let header = unsafe { self.shared.header().read() };
        match header.done {
            1 => {}
            2 => return Err(Failure::Panicked),
            _ => return Err(Failure::Exited(code)),
        }
        if header.status != 0 {
            return Err(Failure::Returned(header.status));
        }
        let m = self.shared.m;
        let (sx, sy) = self.shared.xy_mut();
        guard::check(x, sx, sy, m)
    }

    /// The outputs of the last evaluation (m values).
    pub fn y(&mut self) -> &[f64] {
        let m = self.shared.m;
        &self.shared.xy_mut().1[..m]
    }
}

/// A worker's spawner's work: the black box made ready once ([`BlackBox::prepare`]: a library
/// loaded in the spawner, not in each child), then one evaluation in each child.
struct Evaluations<'a> {
    f: &'a mut dyn BlackBox,
    shared: &'a mut Shared,
}

impl Work for Evaluations<'_> {
    fn prepare(&mut self) {
        self.f.prepare();
    }

    fn child(&mut self) {
        evaluate(self.f, self.shared);
    }
}

/// What a worker's child does: evaluates `f` at the shared inputs into the shared outputs and
/// notes in the header how it went.
fn evaluate(f: &mut dyn BlackBox, shared: &mut Shared) {
    let m = shared.m;
    let header = shared.header();
    let (sx, sy) = shared.xy_mut();
    crate::fpenv::mask_traps();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        f.eval_checked(sx, &mut sy[..m])
    }));
    let (done, status) = match result {
        Ok(Ok(())) => (1, 0),
        Ok(Err(Failure::Returned(code))) => (1, code),
        // A breach a wrapper found in its own buffers: leave the evidence the host's guard
        // looks for in the shared buffers (a write into the guard zone, a changed input), so
        // that it reports the same failure.
        Ok(Err(Failure::WrotePast { .. })) => {
            sy[m] = 0.0;
            (1, 0)
        }
        Ok(Err(Failure::ChangedInput(j))) => {
            sx[j] = f64::from_bits(sx[j].to_bits() ^ 1);
            (1, 0)
        }
        Ok(Err(_)) => (1, -1),
        Err(_) => (2, 0),
    };
    // SAFETY: the header lies in the mapping.
    unsafe { header.write(Header { done, status }) };
}

/// Waits until one of `workers`' running evaluations ends, or the earliest time limit among them
/// passes (at most a second: the caller polls each worker after).
pub fn wait_any(workers: &[Worker], timeout: Option<Duration>) {
    let sockets = (workers.iter())
        .filter_map(Worker::socket)
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
    let Ok(mut fds) = crate::error::collect(sockets, "sockets to wait on") else {
        // No room even for that: look again shortly.
        std::thread::sleep(Duration::from_micros(100));
        return;
    };
    if fds.is_empty() {
        return;
    }
    let mut wait = Duration::from_secs(1);
    if let Some(limit) = timeout {
        for w in workers.iter().filter(|w| w.running) {
            wait = wait.min(limit.saturating_sub(w.started.elapsed()));
        }
    }
    // Rounded up: waking before the limit only polls again.
    let ms = wait.as_micros().div_ceil(1000).min(1000) as libc::c_int;
    // SAFETY: `fds` is a live array of as many pollfd.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}
