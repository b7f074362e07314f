//! Loading a library in a forked child first, for [`super::LoadedBlackBox::open_in_worker`].
//!
//! Opening a shared library runs its constructors (and those of the libraries it depends on) in
//! the process that opens it. A constructor that aborts, crashes or calls `exit()` ends that
//! process. To keep such a library from ending the caller, the child made here loads it and
//! resolves the symbol, writes what came of it into a pipe (`ok NAME` or `error MESSAGE`) and
//! leaves with `_exit`. The parent reads the pipe to its end: no words means the child ended
//! while loading, and its wait status (when the host lets us reap it) says how.
//!
//! Reading the pipe rather than waiting for the child keeps this working in hosts that ignore
//! SIGCHLD or reap children in their own handler. The child dies with its parent
//! (PR_SET_PDEATHSIG), and a constructor that does not finish within [`LOAD_TIMEOUT`] is killed.

use crate::error::{Error, ErrorKind, Result};
use crate::trace::failure::signal_name;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a library may take to load in the child.
pub(super) const LOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// Loads `path` and resolves `symbol` in a forked child; the name that resolved.
pub(super) fn try_load(path: &Path, symbol: &str) -> Result<String> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "no pipe to a loading process: {}",
                std::io::Error::last_os_error()
            ),
        ));
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    // SAFETY: fork; the child only loads the library, writes to the pipe and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        // SAFETY: our own descriptors.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        return Err(Error::new(
            ErrorKind::Internal,
            "fork failed (no process could be made to load the library)",
        ));
    }
    if pid == 0 {
        // SAFETY (the child): descriptors of its own, then _exit without the parent's atexit
        // handlers or destructors.
        unsafe {
            libc::close(read_end);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            crate::driver::spawner::default_fatal_signals();
            let words = match super::load(path, symbol) {
                Ok((_, name)) => format!("ok {name}"),
                Err(e) => format!("error {}", e.message),
            };
            let mut rest = words.as_bytes();
            while !rest.is_empty() {
                let k = libc::write(write_end, rest.as_ptr().cast(), rest.len());
                if k <= 0 {
                    break;
                }
                rest = &rest[k as usize..];
            }
            libc::_exit(0);
        }
    }
    // SAFETY: the parent keeps only the read end.
    unsafe { libc::close(write_end) };
    let words = read_to_end(read_end, pid);
    // SAFETY: our own descriptor.
    unsafe { libc::close(read_end) };
    let status = reap(pid);
    let words = words?;
    let words = String::from_utf8_lossy(&words);
    if let Some(name) = words.strip_prefix("ok ") {
        return Ok(name.to_string());
    }
    if let Some(message) = words.strip_prefix("error ") {
        return Err(Error::invalid(message.to_string()));
    }
    let how = match status {
        Some(s) if libc::WIFSIGNALED(s) => format!("killed by {}", signal_name(libc::WTERMSIG(s))),
        Some(s) if libc::WIFEXITED(s) => format!("exit({})", libc::WEXITSTATUS(s)),
        _ => "it ended".to_string(),
    };
    Err(Error::new(
        ErrorKind::BlackBox,
        format!(
            "loading {} ended the process that loaded it ({how}): a constructor of the library, \
             or of a library it depends on, aborts, crashes or exits, and would end this process \
             too",
            path.display()
        ),
    ))
}

/// Everything the child writes, until it closes the pipe (or is killed at the time limit).
fn read_to_end(fd: libc::c_int, pid: libc::pid_t) -> Result<Vec<u8>> {
    let deadline = Instant::now() + LOAD_TIMEOUT;
    let mut words = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            // SAFETY: our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Err(Error::new(
                ErrorKind::BlackBox,
                format!(
                    "loading the library took longer than {} s (a constructor that does not \
                     finish); the loading process was killed",
                    LOAD_TIMEOUT.as_secs()
                ),
            ));
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().min(1000) as libc::c_int;
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
        if ready <= 0 {
            continue; // timed out (checked above) or interrupted
        }
        // SAFETY: buf has room for its length.
        let k = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        match k {
            0 => return Ok(words),
            k if k > 0 => words.extend_from_slice(&buf[..k as usize]),
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return Ok(words),
        }
    }
}

/// The child's wait status, when it can be had: a host that ignores SIGCHLD, or reaps children
/// in its own handler, leaves none.
fn reap(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: our own child; status is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Some(status);
        }
        if r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return None;
    }
}
