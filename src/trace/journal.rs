//! The journal: every evaluation of a trace, kept on disk as it completes, so that a run that
//! dies after 40 of 60 evaluations resumes with 20.
//!
//! # Format (version 2)
//!
//! A header, then fixed-size records, all little-endian:
//!
//! ```text
//! header: "NANPROPJ" | version u32 | n u64 | m u64 | options fingerprint u64 | function fingerprint u64
//! record: point u64 | point fingerprint u64 | step u64 | request u64 | probe fingerprint u64
//!         | m x (y bits u64) | checksum u64
//! ```
//!
//! The header says what trace the journal belongs to: n, m, every option that shapes the
//! requests ([`options_fingerprint`]: strategy, chunk size, verification, tolerance, sampling)
//! and the function, where it can be known ([`function_fingerprint`]: a loaded library by its
//! path, size, modification time and symbol; a callback by the id its caller gives). A journal
//! of another trace is refused with a message saying which of these differ.
//!
//! One journal serves every point of a trace (multi-point, sampled, flag tracing): records are
//! keyed by (point, step, request). A record also carries the fingerprint of its point's
//! coordinates and of its probe (request kind and inputs), so a journal replayed at another x0,
//! or by a planner that asks something else, is refused rather than replayed wrongly.
//!
//! A record's checksum covers its other fields; each record is written in one call and flushed
//! to the file system before the trace goes on. On opening, a last record that is short or fails
//! its checksum (the process died while writing it) is dropped and cut off; a bad record before
//! the last is corruption, an error.
//!
//! # Memory
//!
//! Opening reads the file once, in record-sized pieces, and keeps only an index: the offset of
//! each record by its key. Outputs are read back from the file when a request is replayed, so a
//! resumed trace holds O(records) words, not O(records x m).
//!
//! The session ([`crate::TraceSession`]) replays the journal: the planner is deterministic, so
//! the same trace asks the same requests in the same order, and each request found in the
//! journal is told from it instead of being evaluated.

use crate::error::{Error, Result};
use crate::trace::options::{NonFiniteBaseline, Strategy, TraceOptions};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const MAGIC: &[u8; 8] = b"NANPROPJ";
const VERSION: u32 = 2;
/// Bytes of the header.
pub const HEADER: usize = 8 + 4 + 8 * 4;
/// Words of a record before its outputs.
const KEY_WORDS: usize = 5;

/// A 64-bit FNV-1a hash, for fingerprints and checksums (not cryptographic: it detects torn
/// writes and mismatched journals, not tampering).
#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Fnv {
    /// A fresh hash.
    pub fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    /// Adds bytes.
    pub fn bytes(mut self, b: &[u8]) -> Self {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        self
    }
    /// Adds a u64.
    pub fn u64(self, v: u64) -> Self {
        self.bytes(&v.to_le_bytes())
    }
    /// The hash.
    pub fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv {
    fn default() -> Self {
        Fnv::new()
    }
}

/// What a journal's options must match: every option that shapes the requests (not how they
/// are run: a trace may resume on another driver).
pub fn options_fingerprint(o: &TraceOptions) -> u64 {
    let strategy = match o.strategy {
        Strategy::OneHot => 1,
        Strategy::Chunked => 2,
        Strategy::Payload => 3,
    };
    Fnv::new()
        .u64(strategy)
        .u64(o.chunk_size as u64)
        .u64(u64::from(o.nonfinite_baseline == NonFiniteBaseline::Error))
        .u64(u64::from(o.verify))
        .u64(o.verify_step.to_bits())
        .u64(o.verify_tolerance.to_bits())
        .u64(o.sample_points as u64)
        .u64(o.sample_scale.to_bits())
        .u64(o.seed)
        .finish()
}

/// What a journal's function must match: the black box's own identity (a loaded library
/// knows it) and the caller's `function_id`; 0 when neither is known.
pub fn function_fingerprint(identity: Option<&str>, function_id: Option<&str>) -> u64 {
    if identity.is_none() && function_id.is_none() {
        return 0;
    }
    let part = |h: Fnv, s: Option<&str>| match s {
        None => h.u64(0),
        Some(s) => h.u64(1).u64(s.len() as u64).bytes(s.as_bytes()),
    };
    part(part(Fnv::new(), identity), function_id).finish()
}

/// The fingerprint of a point's coordinates (their bits).
pub fn point_fingerprint(x: &[f64]) -> u64 {
    x.iter()
        .fold(Fnv::new(), |h, v| h.u64(v.to_bits()))
        .finish()
}

/// Where a request sits in a trace: its point, the planner's step and its index there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RequestKey {
    /// The point (0: the first; the order in which a trace visits its points).
    pub point: u64,
    /// The step (0: the baseline; one more each time the planner plans a batch).
    pub step: u64,
    /// The request's index in its step.
    pub request: u64,
}

/// Journals open in this process, by (device, inode).
static OPEN: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

/// Locks a journal for this trace: a POSIX record lock on the whole file (against other
/// processes; forked workers do not inherit it) and this process's own list (against a second
/// trace in this process). Err(()) when either is taken.
fn lock(file: &File, metadata: &std::fs::Metadata) -> std::result::Result<(), ()> {
    let key = (metadata.dev(), metadata.ino());
    let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
    if open.contains(&key) {
        return Err(());
    }
    // SAFETY: an all-zero flock is valid; the fields set below make it a write lock on the
    // whole file; fcntl on a descriptor this process owns.
    let taken = unsafe {
        let mut l: libc::flock = std::mem::zeroed();
        l.l_type = libc::F_WRLCK as libc::c_short;
        l.l_whence = libc::SEEK_SET as libc::c_short;
        libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &l) != 0
    };
    if taken {
        return Err(());
    }
    open.push(key);
    Ok(())
}

/// An open journal: the index of its records, and the file to append to.
pub struct Journal {
    /// (device, inode), this process's key for its lock.
    inode: (u64, u64),
    file: File,
    path: PathBuf,
    m: usize,
    index: HashMap<RequestKey, u64>,
    replayed: usize,
}

impl Journal {
    fn record_len(m: usize) -> usize {
        8 * (KEY_WORDS + m + 1)
    }

    /// Opens the journal at `path` for a trace of n inputs and m outputs with the given
    /// fingerprints, creating it if it does not exist, and locks it (a POSIX record lock and a
    /// list of this process's journals, held while the journal is open) so that no other trace
    /// writes into it at the same time;
    /// `function` describes the function in an error message. Errors: the path names something
    /// other than a regular file (a FIFO, a device); another trace holds the lock; the file
    /// cannot be read or written; it is not a nanprop journal (a file shorter than the header
    /// is one only if it starts like one: a header torn by a crash), or one of another version;
    /// it belongs to another trace (sizes, options or function); a record before the last is
    /// damaged.
    pub fn open(
        path: &Path,
        n: usize,
        m: usize,
        options: u64,
        function: (u64, Option<&str>),
    ) -> Result<Self> {
        let io = |e: std::io::Error| Error::invalid(format!("journal {}: {e}", path.display()));
        let not_regular = || {
            Error::invalid(format!(
                "journal {} is not a regular file (a FIFO, a device or a directory)",
                path.display()
            ))
        };
        let in_use = || {
            Error::invalid(format!(
                "journal {} is in use by another trace (it is locked); use another journal file",
                path.display()
            ))
        };
        // Checked before opening: opening a FIFO for reading could wait for a writer, and
        // opening (then closing) a second descriptor of a journal this process holds would
        // drop its record lock.
        if let Ok(md) = std::fs::metadata(path) {
            if !md.file_type().is_file() {
                return Err(not_regular());
            }
            let open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
            if open.contains(&(md.dev(), md.ino())) {
                return Err(in_use());
            }
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let metadata = file.metadata().map_err(io)?;
        if !metadata.file_type().is_file() {
            return Err(not_regular());
        }
        lock(&file, &metadata).map_err(|()| in_use())?;
        let len = metadata.len();
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        for v in [n as u64, m as u64, options, function.0] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        let mut journal = Journal {
            inode: (metadata.dev(), metadata.ino()),
            file,
            path: path.to_path_buf(),
            m,
            index: HashMap::new(),
            replayed: 0,
        };
        if len < HEADER as u64 {
            // New, or torn while its header was written (then it starts like one); anything
            // else is someone's file, not ours to overwrite.
            let mut start = vec![0u8; len as usize];
            (&journal.file).read_exact(&mut start).map_err(io)?;
            let k = start.len().min(MAGIC.len());
            if start[..k] != MAGIC[..k] {
                return Err(Error::invalid(format!(
                    "{} is not a nanprop journal ({len} bytes that do not start like one); use another file",
                    path.display()
                )));
            }
            let f = &mut journal.file;
            f.set_len(0).map_err(io)?;
            f.seek(SeekFrom::Start(0)).map_err(io)?;
            f.write_all(&header).map_err(io)?;
            f.sync_data().map_err(io)?;
            return Ok(journal);
        }
        let mut reader = BufReader::with_capacity(1 << 16, &journal.file);
        let mut theirs = vec![0u8; HEADER];
        reader.read_exact(&mut theirs).map_err(io)?;
        journal.check_header(&theirs, &header, function.1)?;
        let rec = Self::record_len(m);
        let mut buf = vec![0u8; rec];
        let mut offset = HEADER as u64;
        let mut k = 0;
        while offset < len {
            let whole = len - offset >= rec as u64;
            let ok = whole && {
                reader.read_exact(&mut buf).map_err(io)?;
                let sum = u64::from_le_bytes(buf[rec - 8..].try_into().expect("8 bytes"));
                Fnv::new().bytes(&buf[..rec - 8]).finish() == sum
            };
            if !ok {
                if offset + rec as u64 >= len {
                    // The last record was being written when the process died: drop it.
                    journal.file.set_len(offset).map_err(io)?;
                    break;
                }
                return Err(Error::invalid(format!(
                    "journal {} is damaged at record {k}",
                    path.display()
                )));
            }
            let word = |i: usize| u64::from_le_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
            let key = RequestKey {
                point: word(0),
                step: word(2),
                request: word(3),
            };
            journal.index.insert(key, offset);
            offset += rec as u64;
            k += 1;
        }
        journal.file.seek(SeekFrom::End(0)).map_err(io)?;
        Ok(journal)
    }

    fn check_header(&self, theirs: &[u8], ours: &[u8], function: Option<&str>) -> Result<()> {
        let path = self.path.display();
        if &theirs[..8] != MAGIC {
            return Err(Error::invalid(format!("{path} is not a nanprop journal")));
        }
        let word = |b: &[u8], k: usize| u64::from_le_bytes(b[k..k + 8].try_into().unwrap());
        let version = u32::from_le_bytes(theirs[8..12].try_into().unwrap());
        if version != VERSION {
            return Err(Error::invalid(format!(
                "journal {path} has format version {version}, this nanprop writes {VERSION}; use a new journal file"
            )));
        }
        let (n, m) = (word(theirs, 12), word(theirs, 20));
        if (n, m) != (word(ours, 12), word(ours, 20)) {
            return Err(Error::invalid(format!(
                "journal {path} belongs to another trace (it has n = {n}, m = {m}); use a new journal file"
            )));
        }
        if word(theirs, 28) != word(ours, 28) {
            return Err(Error::invalid(format!(
                "journal {path} belongs to another trace (other options: strategy, chunk size, \
                 verification, tolerance or sampling); use a new journal file"
            )));
        }
        if word(theirs, 36) != word(ours, 36) {
            let this = function.unwrap_or("a function without an identity or id");
            return Err(Error::invalid(format!(
                "journal {path} belongs to another function (this trace's function: {this}); use a new journal file"
            )));
        }
        Ok(())
    }

    /// The outputs recorded for request `key`, if any, into `y` (m values); returns whether
    /// there was a record. Errors: a record there for another point or probe (the journal does
    /// not match this trace); the file cannot be read.
    pub fn replay(
        &mut self,
        key: RequestKey,
        point_fp: u64,
        probe_fp: u64,
        y: &mut [f64],
    ) -> Result<bool> {
        let Some(offset) = self.index.remove(&key) else {
            return Ok(false);
        };
        let rec = Self::record_len(self.m);
        let mut buf = vec![0u8; rec];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| Error::invalid(format!("journal {}: {e}", self.path.display())))?;
        let word = |i: usize| u64::from_le_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
        let RequestKey {
            point,
            step,
            request,
        } = key;
        if word(1) != point_fp {
            let which = if point == 0 {
                "another x0".to_string()
            } else {
                format!("another point {point}")
            };
            return Err(Error::invalid(format!(
                "journal {} belongs to another trace (recorded at {which}); use a new journal file",
                self.path.display()
            )));
        }
        if word(4) != probe_fp {
            return Err(Error::invalid(format!(
                "the journal does not match this trace at point {point}, step {step}, request {request} (another probe was recorded there)"
            )));
        }
        for (i, v) in y.iter_mut().enumerate() {
            *v = f64::from_bits(word(KEY_WORDS + i));
        }
        self.replayed += 1;
        Ok(true)
    }

    /// Appends the outputs of request `key` and flushes them to the file system. Errors: the
    /// write failed (the trace stops rather than lose the record).
    pub fn append(
        &mut self,
        key: RequestKey,
        point_fp: u64,
        probe_fp: u64,
        y: &[f64],
    ) -> Result<()> {
        debug_assert_eq!(y.len(), self.m);
        let mut rec = Vec::with_capacity(Self::record_len(self.m));
        for v in [key.point, point_fp, key.step, key.request, probe_fp] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        for v in y {
            rec.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        let sum = Fnv::new().bytes(&rec).finish();
        rec.extend_from_slice(&sum.to_le_bytes());
        let io = |e: std::io::Error| Error::invalid(format!("writing the journal: {e}"));
        self.file.write_all(&rec).map_err(io)?;
        self.file.flush().map_err(io)?;
        self.file.sync_data().map_err(io)
    }

    /// Requests answered from the journal so far.
    pub fn replayed(&self) -> usize {
        self.replayed
    }
}

impl Drop for Journal {
    /// Releases the lock (closing the file releases the record lock).
    fn drop(&mut self) {
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|&k| k != self.inode);
    }
}
