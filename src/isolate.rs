//! Isolation: each evaluation in a forked worker process.
//!
//! Legacy codes crash (a NaN turned into an array index), abort, call `exit()`, hang, or enable
//! floating-point traps and die of SIGFPE. With isolation ([`crate::TraceOptions::isolate`]) the
//! black box runs in a child process forked for each evaluation: the child computes into memory
//! shared with the parent and exits; the parent waits (with an optional timeout) and turns a
//! signal, an `exit()` or a timeout into an [`crate::ErrorKind::BlackBox`] error naming it and
//! the probe. The host survives.
//!
//! Each child starts from the parent's state, so black boxes that are not thread-safe or keep
//! state (Fortran COMMON blocks, SAVE variables) work, including in loader mode; state a child
//! changes is not seen by the next evaluation (each starts from the same state, as each probe
//! should).
//!
//! Cost: one `fork` per evaluation (about a millisecond with a large address space), worth it
//! when an evaluation takes longer. Unix only.
//!
//! The child does nothing but call the black box and `_exit`, so it runs no destructors and
//! takes no locks of its own; a black box that allocates relies on glibc's fork handlers for
//! `malloc`, as any forking program does.

use crate::driver::BlackBox;
use crate::error::{Error, Result};
use std::time::{Duration, Instant};

const GUARD: usize = 16;

/// Shared memory: a header, then x (n values), then y (m values and a guard zone).
struct Shared {
    base: *mut u8,
    len: usize,
    n: usize,
    m: usize,
}

#[repr(C)]
struct Header {
    /// 1 when the child finished calling the black box.
    done: u32,
    /// The black box's status (0 success).
    status: i32,
}

impl Shared {
    fn new(n: usize, m: usize) -> Result<Self> {
        let len = std::mem::size_of::<Header>().max(16) + 8 * (n + m + GUARD);
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
pub(crate) struct Worker {
    shared: Shared,
    /// The running child, 0 when none.
    pid: libc::pid_t,
    started: Instant,
    marker: f64,
    x: Vec<f64>,
}

impl Worker {
    pub(crate) fn new(n: usize, m: usize) -> Result<Self> {
        Ok(Worker {
            shared: Shared::new(n, m)?,
            pid: 0,
            started: Instant::now(),
            marker: 0.0,
            x: vec![0.0; n],
        })
    }

    /// Forks a process that evaluates `f` at `x`, its outputs pre-filled with `y_init` (the
    /// evaluator's marker) and the guard zone with `y_init[0]`.
    pub(crate) fn start(
        &mut self,
        f: &mut dyn BlackBox,
        x: &[f64],
        y_init: &[f64],
    ) -> std::result::Result<(), String> {
        let m = y_init.len();
        self.marker = y_init.first().copied().unwrap_or(0.0);
        self.x.copy_from_slice(x);
        {
            let (sx, sy) = self.shared.xy_mut();
            sx.copy_from_slice(x);
            sy[..m].copy_from_slice(y_init);
            sy[m..].fill(self.marker);
        }
        // SAFETY: the header lies in the mapping.
        unsafe { self.shared.header().write(Header { done: 0, status: 0 }) };
        // SAFETY: fork; the child only runs the black box and _exit (module docs).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err("could not be run in a worker process: fork failed".to_string());
        }
        if pid == 0 {
            let header = self.shared.header();
            let (sx, sy) = self.shared.xy_mut();
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f.eval(sx, &mut sy[..m])));
            let status = match result {
                Ok(Ok(())) => 0,
                Ok(Err(code)) => code,
                Err(_) => i32::MIN + 1,
            };
            // SAFETY: the header lies in the mapping; then leave without running destructors.
            unsafe {
                header.write(Header { done: 1, status });
                libc::_exit(0)
            }
        }
        self.pid = pid;
        self.started = Instant::now();
        Ok(())
    }

    /// None while the worker runs; when it has ended, its outcome: the black box's status (its
    /// outputs in [`Worker::y`]), or words for what went wrong. Kills it past `timeout`.
    pub(crate) fn poll(
        &mut self,
        timeout: Option<Duration>,
    ) -> Option<std::result::Result<i32, String>> {
        let mut wstatus: libc::c_int = 0;
        // SAFETY: our own child.
        let r = unsafe { libc::waitpid(self.pid, &mut wstatus, libc::WNOHANG) };
        if r == 0 {
            if timeout.is_some_and(|limit| self.started.elapsed() > limit) {
                // SAFETY: our own child, still running.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                    libc::waitpid(self.pid, &mut wstatus, 0);
                }
                self.pid = 0;
                let limit = timeout.unwrap_or_default();
                return Some(Err(format!(
                    "timed out after {:.3} s (killed)",
                    limit.as_secs_f64()
                )));
            }
            return None;
        }
        self.pid = 0;
        if r < 0 {
            return Some(Err("could not be waited for (waitpid failed)".to_string()));
        }
        Some(self.outcome(wstatus))
    }

    fn outcome(&mut self, wstatus: libc::c_int) -> std::result::Result<i32, String> {
        if libc::WIFSIGNALED(wstatus) {
            return Err(format!(
                "was killed by {}",
                signal_name(libc::WTERMSIG(wstatus))
            ));
        }
        // SAFETY: the header lies in the mapping; the child has exited.
        let header = unsafe { self.shared.header().read() };
        if header.done != 1 {
            let code = if libc::WIFEXITED(wstatus) {
                libc::WEXITSTATUS(wstatus)
            } else {
                -1
            };
            return Err(format!(
                "called exit({code}) (its process ended before returning)"
            ));
        }
        let (m, marker) = (self.shared.m, self.marker);
        let (sx, sy) = self.shared.xy_mut();
        if let Some(j) = (sx.iter().zip(&self.x)).position(|(a, b)| a.to_bits() != b.to_bits()) {
            return Err(format!("changed its input x[{j}]"));
        }
        if sy[m..].iter().any(|v| v.to_bits() != marker.to_bits()) {
            return Err(format!("wrote past y[{}] (m = {m})", m - 1));
        }
        if header.status == i32::MIN + 1 {
            return Err("panicked".to_string());
        }
        Ok(header.status)
    }

    /// The outputs of the last evaluation (m values).
    pub(crate) fn y(&mut self) -> &[f64] {
        let m = self.shared.m;
        &self.shared.xy_mut().1[..m]
    }
}

impl Drop for Worker {
    /// A worker still running when its driver gives up (another worker failed) is killed and
    /// reaped: no stray processes, no zombies.
    fn drop(&mut self) {
        if self.pid > 0 {
            let mut wstatus: libc::c_int = 0;
            // SAFETY: our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, &mut wstatus, 0);
            }
        }
    }
}

/// Waits a little longer each time, up to 5 ms: cheap for fast black boxes, idle for slow ones.
pub(crate) struct Backoff(Duration);

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff(Duration::from_micros(20))
    }
    pub(crate) fn nap(&mut self) {
        std::thread::sleep(self.0);
        self.0 = (self.0 * 2).min(Duration::from_millis(5));
    }
}

/// A black box run in a forked worker per evaluation (see the module docs).
pub struct Isolated<'a> {
    inner: &'a mut dyn BlackBox,
    timeout: Option<Duration>,
    worker: Worker,
    failure: Option<String>,
}

/// The code returned for failures that only [`Isolated::describe_failure`] can put in words.
pub(crate) const CRASHED: i32 = i32::MIN + 7;

pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV (segmentation fault)",
        libc::SIGBUS => "SIGBUS (bus error)",
        libc::SIGFPE => "SIGFPE (floating-point exception: a trap on NaN or a division)",
        libc::SIGABRT => "SIGABRT (abort)",
        libc::SIGILL => "SIGILL (illegal instruction)",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

impl<'a> Isolated<'a> {
    /// Runs `inner` (f: R^n -> R^m) in a worker process per evaluation, each allowed `timeout`
    /// (None: no limit). Errors: the shared memory could not be mapped.
    pub fn new(
        inner: &'a mut dyn BlackBox,
        n: usize,
        m: usize,
        timeout: Option<Duration>,
    ) -> Result<Self> {
        Ok(Isolated {
            inner,
            timeout,
            worker: Worker::new(n, m)?,
            failure: None,
        })
    }
}

impl BlackBox for Isolated<'_> {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        let outcome = match self.worker.start(self.inner, x, y) {
            Err(e) => Err(e),
            Ok(()) => {
                let mut backoff = Backoff::new();
                loop {
                    if let Some(outcome) = self.worker.poll(self.timeout) {
                        break outcome;
                    }
                    backoff.nap();
                }
            }
        };
        match outcome {
            Ok(0) => {
                y.copy_from_slice(self.worker.y());
                Ok(())
            }
            Ok(code) => Err(code),
            Err(what) => {
                self.failure = Some(what);
                Err(CRASHED)
            }
        }
    }

    fn describe_failure(&self, code: i32) -> Option<String> {
        (code == CRASHED).then(|| self.failure.clone()).flatten()
    }
}
