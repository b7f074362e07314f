//! The spawner: a process that does nothing but fork a worker's children, so that the host does
//! not fork once the trace is under way.
//!
//! # Why
//!
//! A worker runs each evaluation in a child process of its own ([`super::worker`]). Forked from
//! the host, that child costs the host more than the fork: the kernel copies the host's page
//! tables, and marks every private page copy-on-write, so that after each fork the host takes a
//! page fault on the first write to every page it writes (the planner's arrays, the outputs, the
//! inputs), whether or not the child still lives. At n = 10^6 the host holds a few hundred
//! megabytes: the command line's default (an isolated tridiagonal trace, 50 evaluations) took
//! 1.6 s, 0.9 s of it in the kernel, against 0.55 s in process.
//!
//! So each worker forks a *spawner* from the host, once, when it is made (before the trace's
//! arrays exist), and every evaluation is forked from the spawner. The spawner first makes the
//! black box ready ([`super::BlackBox::prepare`]: a library opened "in a worker" is loaded
//! there, so that each child does not load it again, and its constructors run once); then it
//! does nothing but read a byte asking for a child, fork it, and report on a socket the child's
//! process id, then how it ended, allocating nothing and taking no lock. The host's pages it
//! shares are copied at most once each (on the host's first write after the spawner was made),
//! not once per evaluation. A spawner that dies making the black box ready (a constructor that
//! aborts) is reaped and made again once; then the evaluation fails as one that could not be
//! run ([`crate::trace::failure::Failure::NotRun`], saying how the spawner died: killed by
//! SIGABRT), not as a failure of f or of its inputs.
//!
//! What the spawner does not remove is the fork's own cost, which grows with the memory of the
//! process forked: the spawner holds the host's as it was, and a host holding a gigabyte when
//! the trace begins pays about 40 ms a fork on the benchmark machine (page tables copied).
//!
//! # What a child sees
//!
//! A child starts from the spawner's memory, which is the host's at the spawner's fork: the
//! black box's state (Fortran COMMON blocks, SAVE variables, a Python callable's closure) as it
//! was when the trace began. The host never calls the black box while a worker runs it (every
//! evaluation goes to the workers), so that is the state each evaluation started from before.
//! The inputs and outputs travel in memory mapped shared before the spawner was forked.
//!
//! # How the host learns the end
//!
//! The child is the spawner's, not the host's: the spawner waits for it without reaping it
//! (`waitid` with `WNOWAIT`), reports how it ended, and reaps it only when the next child is asked
//! for or the host goes away. Until then the child's process id cannot be given to another
//! process, so the host may kill it by that id (its time limit passed) without a race. The
//! spawner puts SIGCHLD back to its default action, so a host that ignores SIGCHLD or reaps its
//! children in a handler does not take the children's exit status from it, and the crash
//! signals too ([`default_fatal_signals`]), so that a host's crash handler does not take a
//! child's crash.
//!
//! The spawner dies with the thread of the host that made it (`PR_SET_PDEATHSIG`), the children
//! with the spawner; when the worker is dropped, the host tells the spawner to leave (it reaps
//! its last child and exits; killed if it has not within a second) and reaps it. A spawner that
//! died all the same (killed from outside) is made again by the next evaluation.
//!
//! Unix (Linux) only, as the workers are.

use crate::error::{Error, ErrorKind, Result};

/// The host's request: a child.
const RUN: u8 = b'r';
/// The host's request: leave.
const QUIT: u8 = b'q';

/// The spawner's report: a child was forked (its process id in `pid`).
const STARTED: i32 = 1;
/// The spawner's report: the fork failed.
const NOT_FORKED: i32 = 2;
/// The spawner's report: the child ended (`code` the `si_code` of its `waitid`, `status` its
/// `si_status`).
const ENDED: i32 = 3;
/// The spawner's report: the child could not be waited for.
const LOST: i32 = 4;

/// What a spawner runs: [`Work::prepare`] once, in the spawner, before it serves; then
/// [`Work::child`] in each child it forks.
pub(crate) trait Work {
    /// Makes ready what the children inherit (a library loaded: [`super::BlackBox::prepare`]).
    fn prepare(&mut self);
    /// One child's work; the child then exits.
    fn child(&mut self);
}

/// One report of the spawner, sent whole (16 bytes: within a socket's atomic write).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Report {
    kind: i32,
    pid: i32,
    code: i32,
    status: i32,
}

/// How a child ended, as its parent's wait reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It exited with this status.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(i32),
    /// Its end could not be learned (the spawner could not wait for it, or died).
    Unknown,
}

/// What a look at the spawner's socket found.
enum Received {
    Report(Report),
    /// Nothing yet (only when not waiting).
    Nothing,
    /// The spawner is gone.
    Closed,
}

/// A spawner process and the host's end of the socket to it.
pub(crate) struct Spawner {
    pid: libc::pid_t,
    socket: libc::c_int,
    /// The child running, 0 when none.
    child: libc::pid_t,
    /// The spawner's end of the socket closed: it is gone.
    gone: bool,
    /// The spawner was reaped ([`Spawner::death`]).
    reaped: bool,
}

impl Spawner {
    /// Forks a spawner that runs `work`'s preparation, then forks children that each run its
    /// child's work and `_exit(0)`; a child's alarm rings after `backstop` seconds when given
    /// (a time limit that holds even if nobody watches the child any more). Errors: no socket
    /// or no fork could be had.
    ///
    /// `work` runs only in the spawner and its children, in the memory of this moment: whatever
    /// it borrows must live until this call returns, and nothing else is needed of it.
    pub(crate) fn new(work: &mut dyn Work, backstop: Option<u32>) -> Result<Self> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: fds has room for the two descriptors.
        let made = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if made != 0 {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "no socket to a worker process: {}",
                    std::io::Error::last_os_error()
                ),
            ));
        }
        let (host_end, spawner_end) = (fds[0], fds[1]);
        // SAFETY: getpid has no preconditions.
        let host = unsafe { libc::getpid() };
        // SAFETY: fork; the spawner only serves (below) and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            // SAFETY: our own descriptors.
            unsafe {
                libc::close(host_end);
                libc::close(spawner_end);
            }
            return Err(Error::new(
                ErrorKind::Internal,
                "fork failed (no worker process could be made)",
            ));
        }
        if pid == 0 {
            // SAFETY (the spawner): plain system calls; it dies with the host's thread, and at
            // once if the host is already gone.
            unsafe {
                libc::close(host_end);
                die_with(host);
                libc::signal(libc::SIGCHLD, libc::SIG_DFL);
                // Its children inherit these.
                default_fatal_signals();
            }
            crate::fpenv::mask_traps();
            work.prepare();
            serve(spawner_end, work, backstop);
        }
        // SAFETY: the host keeps only its end.
        unsafe { libc::close(spawner_end) };
        Ok(Spawner {
            pid,
            socket: host_end,
            child: 0,
            gone: false,
            reaped: false,
        })
    }

    /// Asks for a child; its process id, or `None` when the spawner could not fork one or is
    /// gone (then it should be made again).
    pub(crate) fn start(&mut self) -> std::result::Result<libc::pid_t, Option<String>> {
        debug_assert_eq!(self.child, 0, "one child at a time");
        let ask = [RUN];
        if !send_all(self.socket, &ask) {
            return Err(None);
        }
        match self.receive(true) {
            Received::Report(r) if r.kind == STARTED && r.pid > 0 => {
                self.child = r.pid;
                Ok(r.pid)
            }
            Received::Report(r) if r.kind == NOT_FORKED => Err(Some(
                "fork failed (no worker process could be made)".to_string(),
            )),
            _ => Err(None),
        }
    }

    /// How the running child ended, `None` while it runs (without `wait`: a look).
    pub(crate) fn ended(&mut self, wait: bool) -> Option<Ended> {
        if self.child == 0 {
            return Some(Ended::Unknown);
        }
        let ended = match self.receive(wait) {
            Received::Nothing => return None,
            Received::Closed => Ended::Unknown,
            Received::Report(r) => match (r.kind, r.code) {
                (ENDED, libc::CLD_EXITED) => Ended::Exited(r.status),
                (ENDED, libc::CLD_KILLED | libc::CLD_DUMPED) => Ended::Signaled(r.status),
                _ => Ended::Unknown,
            },
        };
        self.child = 0;
        Some(ended)
    }

    /// Kills the running child (not reaped before the spawner reported its end, so its
    /// process id is still its own) and waits for the report of its end.
    pub(crate) fn kill(&mut self) -> Ended {
        if self.child > 0 {
            // SAFETY: a child of the spawner that it has not reaped (module docs).
            unsafe { libc::kill(self.child, libc::SIGKILL) };
        }
        self.ended(true).unwrap_or(Ended::Unknown)
    }

    /// How a spawner that is gone ended (its socket closed: it died, killed from outside or in
    /// the black box's preparation), reaped here.
    pub(crate) fn death(&mut self) -> Ended {
        if self.reaped {
            return Ended::Unknown;
        }
        let Some(reaped) = reap_within(self.pid, LEAVING) else {
            return Ended::Unknown;
        };
        self.reaped = true;
        let Some(status) = reaped else {
            return Ended::Unknown; // taken by someone else
        };
        if libc::WIFSIGNALED(status) {
            Ended::Signaled(libc::WTERMSIG(status))
        } else if libc::WIFEXITED(status) {
            Ended::Exited(libc::WEXITSTATUS(status))
        } else {
            Ended::Unknown
        }
    }

    /// Whether the spawner is still there (as far as its socket told).
    pub(crate) fn alive(&self) -> bool {
        !self.gone
    }

    /// The host's end of the socket: readable when the spawner reports.
    pub(crate) fn socket(&self) -> libc::c_int {
        self.socket
    }

    /// One report: waiting for it, or a look.
    fn receive(&mut self, wait: bool) -> Received {
        let mut report = Report::default();
        let size = std::mem::size_of::<Report>();
        let mut got = 0usize;
        while got < size {
            // Once part of a report came, the rest is waited for.
            let flags = match wait || got > 0 {
                true => 0,
                false => libc::MSG_DONTWAIT,
            };
            // SAFETY: receiving into the rest of `report`, which is plain bytes.
            let k = unsafe {
                libc::recv(
                    self.socket,
                    (&mut report as *mut Report).cast::<u8>().add(got).cast(),
                    size - got,
                    flags,
                )
            };
            match k {
                k if k > 0 => got += k as usize,
                k if k < 0 && interrupted() => {}
                k if k < 0 && !wait && got == 0 && would_block() => return Received::Nothing,
                _ => {
                    self.gone = true;
                    return Received::Closed;
                }
            }
        }
        Received::Report(report)
    }
}

impl Drop for Spawner {
    /// Kills the running child and tells the spawner to leave: it reaps its last child and
    /// exits, and is reaped here (killed if it has not left within a second): no stray
    /// processes, no zombies. (Told, not left to find its socket closed: a spawner made after
    /// it holds a copy of this end of its socket, as every process forked from the host does.)
    fn drop(&mut self) {
        if self.child > 0 {
            // SAFETY: as in `kill`.
            unsafe { libc::kill(self.child, libc::SIGKILL) };
        }
        // A spawner already gone is reaped below all the same.
        send_all(self.socket, &[QUIT]);
        // SAFETY: our own descriptor.
        unsafe { libc::close(self.socket) };
        if !self.reaped && reap_within(self.pid, LEAVING).is_none() {
            // SAFETY: our own child, not reaped yet.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            reap_within(self.pid, LEAVING);
        }
    }
}

/// The spawner's loop (module docs): one child at a time, for as long as the host asks.
fn serve(socket: libc::c_int, work: &mut dyn Work, backstop: Option<u32>) -> ! {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    // The last child, ended and reported but not reaped yet.
    let mut unreaped: libc::pid_t = 0;
    loop {
        let mut ask = [0u8; 1];
        // SAFETY: reading one byte into a live buffer.
        let k = unsafe { libc::read(socket, ask.as_mut_ptr().cast(), 1) };
        if k < 0 && interrupted() {
            continue;
        }
        if unreaped > 0 {
            reap(unreaped);
            unreaped = 0;
        }
        if k != 1 || ask[0] != RUN {
            // Told to leave, or the host is gone.
            leave(0);
        }
        // SAFETY: fork; the child does its work and _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY (the child): plain system calls. It dies with the spawner (at once if the
            // spawner is already gone) and past its time limit even if nobody watches it (a
            // crash handler of the host's no longer takes its crash: the spawner put the
            // default actions back).
            unsafe {
                libc::close(socket);
                die_with(me);
                if let Some(seconds) = backstop {
                    libc::alarm(seconds);
                }
            }
            work.child();
            // SAFETY: leaving without running destructors.
            unsafe { libc::_exit(0) };
        }
        if pid < 0 {
            let report = Report {
                kind: NOT_FORKED,
                ..Report::default()
            };
            if !tell(socket, report) {
                leave(0);
            }
            continue;
        }
        let report = Report {
            kind: STARTED,
            pid,
            ..Report::default()
        };
        if !tell(socket, report) {
            // SAFETY: our own child, which the host will never hear of.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            leave(pid);
        }
        // SAFETY: a zeroed siginfo_t is a valid place for waitid to write to.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let waited = loop {
            // SAFETY: waiting for our own child without reaping it.
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if r == 0 || !interrupted() {
                break r == 0;
            }
        };
        let report = match waited {
            // SAFETY: waitid filled `info` for a child that ended.
            true => Report {
                kind: ENDED,
                pid,
                code: info.si_code,
                status: unsafe { info.si_status() },
            },
            false => Report {
                kind: LOST,
                pid,
                ..Report::default()
            },
        };
        if !tell(socket, report) {
            leave(pid);
        }
        unreaped = pid;
    }
}

/// The spawner leaves: reaps its child `unreaped` (when not 0: it has ended, or was killed),
/// and exits without running anything of the host's.
fn leave(unreaped: libc::pid_t) -> ! {
    if unreaped > 0 {
        reap(unreaped);
    }
    // SAFETY: ends the spawner; nothing of the host's runs.
    unsafe { libc::_exit(0) }
}

/// Sends a report to the host; false when the host is gone.
fn tell(socket: libc::c_int, report: Report) -> bool {
    // SAFETY: `Report` is four i32 (`repr(C)`, no padding): its bytes are plain data.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            (&report as *const Report).cast::<u8>(),
            std::mem::size_of::<Report>(),
        )
    };
    send_all(socket, bytes)
}

/// Sends all of `bytes` on `socket` (again after a signal); false when the other end is gone.
/// `MSG_NOSIGNAL`: a gone peer is an error here, not a SIGPIPE that would end the process.
fn send_all(socket: libc::c_int, bytes: &[u8]) -> bool {
    let mut sent = 0usize;
    while sent < bytes.len() {
        // SAFETY: sending the rest of a live buffer.
        let k = unsafe {
            libc::send(
                socket,
                bytes[sent..].as_ptr().cast(),
                bytes.len() - sent,
                libc::MSG_NOSIGNAL,
            )
        };
        match k {
            k if k > 0 => sent += k as usize,
            _ if interrupted() => {}
            _ => return false,
        }
    }
    true
}

/// How long a spawner told to leave may take before it is killed, and a killed one before the
/// host stops waiting to reap it.
const LEAVING: std::time::Duration = std::time::Duration::from_secs(1);

/// Reaps our child `pid` once it has ended, looking every 100 microseconds for at most
/// `limit`, without blocking on other children (a blocking `waitpid` waits for every child
/// when the host ignores SIGCHLD): `None` when it has not ended by then; else its wait status,
/// or `None` in it when someone else took it (a host that ignores SIGCHLD).
fn reap_within(pid: libc::pid_t, limit: std::time::Duration) -> Option<Option<libc::c_int>> {
    let deadline = std::time::Instant::now() + limit;
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: our own child, not reaped yet (its pid cannot have been reused).
        match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
            0 => {}
            r if r > 0 => return Some(Some(status)),
            _ if interrupted() => {}
            _ => return Some(None),
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

/// Reaps our child `pid` (it has ended: its end was reported).
fn reap(pid: libc::pid_t) {
    let mut status: libc::c_int = 0;
    // SAFETY: our own child, ended.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 && interrupted() {}
}

/// Makes this forked process die when the thread that forked it ends, and leaves at once when
/// its parent, `parent`, is already gone (it ended between the fork and the request).
///
/// # Safety
/// Only in a forked process, right after the fork.
unsafe fn die_with(parent: libc::pid_t) {
    // SAFETY: plain system calls; `_exit` runs nothing of the parent's.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(0);
        }
    }
}

/// Puts the default action back on the signals a crash raises (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
/// SIGABRT), in a forked process (a spawner, whose children inherit it; a child that loads a
/// library): a handler the host installed (Rust's stack-overflow handler, Python's
/// faulthandler) must not swallow or report the process's crash as the host's. The process
/// then dies of the signal, which is what its parent reads.
///
/// # Safety
/// Only in a forked process whose crash is its own to die of, never in the host.
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

/// Whether the last system call was interrupted by a signal.
fn interrupted() -> bool {
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

/// Whether the last system call found nothing to read yet.
fn would_block() -> bool {
    matches!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EAGAIN)
    )
}
