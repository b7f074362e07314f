//! A forked worker: one evaluation in a child process.
//!
//! Legacy codes crash (a NaN turned into an array index), abort, call `exit()`, hang, or enable
//! floating-point traps and die of SIGFPE. With isolation ([`crate::TraceOptions::isolate`]) or
//! process workers ([`crate::TraceOptions::processes`]) the black box runs in a child process
//! forked for each evaluation: the child computes into memory shared with the parent and exits;
//! the parent polls (with an optional timeout) and turns a signal, an `exit()` or a timeout into
//! a [`Failure`], which the run loop reports naming the request. The host survives. The
//! contract checks of [`crate::driver::guard`] run in the parent on the shared memory.
//!
//! Each child starts from the parent's state, so black boxes that are not thread-safe or keep
//! state (Fortran COMMON blocks, SAVE variables) work, including in loader mode; state a child
//! changes is not seen by the next evaluation (each starts from the same state, as each probe
//! should).
//!
//! Cost: one `fork` per evaluation (about a millisecond with a large address space), worth it
//! when an evaluation takes longer. Unix only.
//!
//! A worker dies with its host: the child asks the kernel for SIGKILL when its parent goes
//! (`PR_SET_PDEATHSIG`, checked against a parent already gone), and sets its own alarm a little
//! past the time limit, so a hung evaluation ends even if nobody polls it any more.
//!
//! The child does nothing but call the black box and `_exit`, so it runs no destructors and
//! takes no locks of its own; a black box that allocates relies on glibc's fork handlers for
//! `malloc`, as any forking program does.

use super::guard::{self, GUARD};
use super::{BlackBox, Failure};
use crate::error::{reserve, Error, Result};
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

/// One worker: shared memory and the process evaluating in it.
pub struct Worker {
    shared: Shared,
    /// The evaluation time limit, which the child also enforces itself (a backstop for a host
    /// that died or stopped polling).
    timeout: Option<Duration>,
    /// The running child, 0 when none.
    pid: libc::pid_t,
    started: Instant,
    /// The input as sent, to detect a black box that changes it.
    sent: Vec<f64>,
}

impl Worker {
    /// A worker for f: R^n -> R^m whose evaluations may take `timeout`. Errors: the shared
    /// memory or the input copy cannot be had.
    pub fn new(n: usize, m: usize, timeout: Option<Duration>) -> Result<Self> {
        let mut sent = Vec::new();
        reserve(&mut sent, n, "input snapshot")?;
        sent.resize(n, 0.0);
        Ok(Worker {
            shared: Shared::new(n, m)?,
            timeout,
            pid: 0,
            started: Instant::now(),
            sent,
        })
    }

    /// Whether an evaluation is running.
    pub fn busy(&self) -> bool {
        self.pid > 0
    }

    /// Forks a process that evaluates `f` at `x` into the shared outputs (armed with the
    /// guard's marker). Errors: the fork failed.
    pub fn start(&mut self, f: &mut dyn BlackBox, x: &[f64]) -> std::result::Result<(), Failure> {
        let m = self.shared.m;
        self.sent.copy_from_slice(x);
        {
            let (sx, sy) = self.shared.xy_mut();
            sx.copy_from_slice(x);
            guard::arm(sy);
        }
        // SAFETY: the header lies in the mapping.
        unsafe { self.shared.header().write(Header { done: 0, status: 0 }) };
        // SAFETY: getpid has no preconditions.
        let host = unsafe { libc::getpid() };
        // Whole seconds past the limit, for the child's own alarm.
        let backstop = self
            .timeout
            .map(|t| t.as_secs().saturating_add(2).min(u32::MAX as u64) as u32);
        // SAFETY: fork; the child only runs the black box and _exit (module docs).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(Failure::NotRun(
                "fork failed (no worker process could be made)".to_string(),
            ));
        }
        if pid == 0 {
            // SAFETY (all three): plain system calls in the child. A worker dies with its host
            // (SIGKILL when the thread that forked it ends, and at once if the host is already
            // gone), and past its time limit even if the host stopped watching (SIGALRM).
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != host {
                    libc::_exit(0);
                }
                if let Some(seconds) = backstop {
                    libc::alarm(seconds);
                }
                default_fatal_signals();
            }
            let header = self.shared.header();
            let (sx, sy) = self.shared.xy_mut();
            crate::fpenv::mask_traps();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                f.eval_checked(sx, &mut sy[..m])
            }));
            let (done, status) = match result {
                Ok(Ok(())) => (1, 0),
                Ok(Err(Failure::Returned(code))) => (1, code),
                // A breach a wrapper found in its own buffers: leave the evidence the host's
                // guard looks for in the shared buffers (a write into the guard zone, a changed
                // input), so that it reports the same failure.
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
            // SAFETY: the header lies in the mapping; then leave without running destructors.
            unsafe {
                header.write(Header { done, status });
                libc::_exit(0)
            }
        }
        self.pid = pid;
        self.started = Instant::now();
        Ok(())
    }

    /// None while the worker runs; when it has ended, its outcome: the outputs are then in
    /// [`Worker::y`]. Kills it past `timeout`.
    pub fn poll(&mut self, timeout: Option<Duration>) -> Option<std::result::Result<(), Failure>> {
        let mut wstatus: libc::c_int = 0;
        // SAFETY: our own child.
        let r = unsafe { libc::waitpid(self.pid, &mut wstatus, libc::WNOHANG) };
        if r == 0 {
            let limit = timeout?;
            if self.started.elapsed() <= limit {
                return None;
            }
            kill_and_reap(self.pid);
            self.pid = 0;
            return Some(Err(Failure::TimedOut(limit)));
        }
        self.pid = 0;
        if r < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                // Someone else took its exit status (the host ignores SIGCHLD, or reaps
                // children in a handler): the shared header still tells how it ended.
                return Some(self.outcome(None));
            }
            return Some(Err(Failure::NotRun(
                "its worker process could not be waited for (waitpid failed)".to_string(),
            )));
        }
        Some(self.outcome(Some(wstatus)))
    }

    /// How the evaluation ended: from the child's wait status when this process reaped it, and
    /// from the shared header (always).
    fn outcome(&mut self, wstatus: Option<libc::c_int>) -> std::result::Result<(), Failure> {
        let wstatus = match wstatus {
            Some(w) => w,
            None => {
                // SAFETY: the header lies in the mapping; the child has ended.
                let header = unsafe { self.shared.header().read() };
                match header.done {
                    1 | 2 => 0,
                    _ => return Err(Failure::Vanished),
                }
            }
        };
        if libc::WIFSIGNALED(wstatus) {
            let signal = libc::WTERMSIG(wstatus);
            return Err(match (signal, self.timeout) {
                // The child's own alarm: its time limit passed.
                (libc::SIGALRM, Some(limit)) => Failure::TimedOut(limit),
                _ => Failure::Signal(signal),
            });
        }
        // SAFETY: the header lies in the mapping; the child has exited.
        let header = unsafe { self.shared.header().read() };
        match header.done {
            1 => {}
            2 => return Err(Failure::Panicked),
            _ => {
                let code = if libc::WIFEXITED(wstatus) {
                    libc::WEXITSTATUS(wstatus)
                } else {
                    -1
                };
                return Err(Failure::Exited(code));
            }
        }
        if header.status != 0 {
            return Err(Failure::Returned(header.status));
        }
        let m = self.shared.m;
        let (sx, sy) = self.shared.xy_mut();
        guard::check(&self.sent, sx, sy, m)
    }

    /// The outputs of the last evaluation (m values).
    pub fn y(&mut self) -> &[f64] {
        let m = self.shared.m;
        &self.shared.xy_mut().1[..m]
    }
}

impl Drop for Worker {
    /// A worker still running when its executor gives up (another evaluation failed) is killed
    /// and reaped: no stray processes, no zombies.
    fn drop(&mut self) {
        if self.pid > 0 {
            kill_and_reap(self.pid);
        }
    }
}

/// Kills our child `pid` and reaps it, without blocking on other children (a blocking
/// `waitpid` waits for every child when the host ignores SIGCHLD).
fn kill_and_reap(pid: libc::pid_t) {
    let mut wstatus: libc::c_int = 0;
    // SAFETY: our own child, not reaped yet (its pid cannot have been reused).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    for _ in 0..10_000 {
        // SAFETY: our own child.
        let r = unsafe { libc::waitpid(pid, &mut wstatus, libc::WNOHANG) };
        if r != 0 {
            return; // reaped, or taken by someone else (ECHILD)
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Waits a little longer each time, up to 5 ms: cheap for fast black boxes, idle for slow ones.
pub struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

impl Backoff {
    /// The shortest wait.
    pub fn new() -> Self {
        Backoff(Duration::from_micros(20))
    }
    /// Sleeps, then doubles the next wait.
    pub fn nap(&mut self) {
        std::thread::sleep(self.0);
        self.0 = (self.0 * 2).min(Duration::from_millis(5));
    }
}

/// Puts the default action back on the signals a crash raises (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
/// SIGABRT), in a forked child: a handler the host installed (Rust's stack-overflow handler,
/// Python's faulthandler) must not swallow or report the child's crash as the host's. The
/// child then dies of the signal, which is what its parent reads.
///
/// # Safety
/// Only in a forked child that runs nothing of the host's afterwards.
pub(crate) unsafe fn default_fatal_signals() {
    for sig in [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGABRT,
    ] {
        // SAFETY: resetting a disposition to its default is always allowed.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}
