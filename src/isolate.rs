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

/// A black box run in a forked worker per evaluation (see the module docs).
pub struct Isolated<'a> {
    inner: &'a mut dyn BlackBox,
    timeout: Option<Duration>,
    shared: Shared,
    failure: Option<String>,
}

/// Codes returned for failures that only [`Isolated::describe_failure`] can put in words.
const CRASHED: i32 = i32::MIN + 7;

fn signal_name(sig: i32) -> String {
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
            shared: Shared::new(n, m)?,
            failure: None,
        })
    }

    fn fail(&mut self, what: String) -> std::result::Result<(), i32> {
        self.failure = Some(what);
        Err(CRASHED)
    }
}

impl BlackBox for Isolated<'_> {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        let m = y.len();
        // y arrives filled with the evaluator's marker; the guard zone gets the same.
        let marker = y.first().copied().unwrap_or(0.0);
        {
            let (sx, sy) = self.shared.xy_mut();
            sx.copy_from_slice(x);
            sy[..m].copy_from_slice(y);
            sy[m..].fill(marker);
        }
        // SAFETY: the header lies in the mapping.
        unsafe { self.shared.header().write(Header { done: 0, status: 0 }) };
        // SAFETY: fork; the child only runs the black box and _exit (module docs).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return self.fail("could not be isolated: fork failed".to_string());
        }
        if pid == 0 {
            let Isolated { inner, shared, .. } = self;
            let header = shared.header();
            let (sx, sy) = shared.xy_mut();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inner.eval(sx, &mut sy[..m])
            }));
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
        let start = Instant::now();
        let mut nap = Duration::from_micros(20);
        let mut wstatus: libc::c_int = 0;
        loop {
            // SAFETY: our own child.
            let r = unsafe { libc::waitpid(pid, &mut wstatus, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if r < 0 {
                return self.fail("could not be waited for (waitpid failed)".to_string());
            }
            if let Some(limit) = self.timeout {
                if start.elapsed() > limit {
                    // SAFETY: our own child, still running.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, &mut wstatus, 0);
                    }
                    return self.fail(format!(
                        "timed out after {:.3} s (killed)",
                        limit.as_secs_f64()
                    ));
                }
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(5));
        }
        if libc::WIFSIGNALED(wstatus) {
            return self.fail(format!(
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
            return self.fail(format!(
                "called exit({code}) (its process ended before returning)"
            ));
        }
        let (changed_x, overrun) = {
            let (sx, sy) = self.shared.xy_mut();
            let changed = (sx.iter().zip(x)).position(|(a, b)| a.to_bits() != b.to_bits());
            let overrun = sy[m..].iter().any(|v| v.to_bits() != marker.to_bits());
            if changed.is_none() && !overrun {
                y.copy_from_slice(&sy[..m]);
            }
            (changed, overrun)
        };
        if let Some(j) = changed_x {
            return self.fail(format!("changed its input x[{j}]"));
        }
        if overrun {
            return self.fail(format!("wrote past y[{}] (m = {m})", m - 1));
        }
        match header.status {
            0 => Ok(()),
            s if s == i32::MIN + 1 => self.fail("panicked".to_string()),
            s => Err(s),
        }
    }

    fn describe_failure(&self, code: i32) -> Option<String> {
        (code == CRASHED).then(|| self.failure.clone()).flatten()
    }
}
