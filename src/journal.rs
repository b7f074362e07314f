//! The journal: every evaluation of a trace, kept on disk as it completes, so that a run that
//! dies after 40 of 60 evaluations resumes with 20.
//!
//! # Format
//!
//! A header, then fixed-size records, all little-endian:
//!
//! ```text
//! header: "NANPROPJ" | version u32 | n u64 | m u64 | fingerprint u64
//! record: step u64 | request u64 | probe fingerprint u64 | m x (y bits u64) | checksum u64
//! ```
//!
//! The header's fingerprint covers n, m, the bits of x0 and every option that shapes the trace;
//! a journal written for another function size, point or options is refused. A record's
//! checksum covers its other fields; each record is written in one call and flushed to the file
//! system before the trace goes on. On opening, a last record that is short or fails its checksum
//! (the process died while writing it) is dropped and cut off; a bad record before the last is
//! corruption, an error.
//!
//! The session ([`crate::TraceSession`]) replays the journal: the planner is deterministic, so
//! the same trace asks the same requests in the same order, and each request found in the
//! journal (same step, same request, same probe) is told from it instead of being evaluated.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"NANPROPJ";
const VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 8 + 8 + 8;

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

/// An open journal: its records by (step, request), and the file to append to.
pub struct Journal {
    file: File,
    m: usize,
    records: HashMap<(u64, u64), (u64, Vec<f64>)>,
    replayed: usize,
}

impl Journal {
    fn record_len(m: usize) -> usize {
        8 * (4 + m)
    }

    /// Opens the journal at `path` for a trace of n inputs and m outputs with `fingerprint`,
    /// creating it if it does not exist. Errors: the file cannot be read or written, it is not a
    /// nanprop journal, it belongs to another trace (size, x0 or options), or a record before
    /// the last is damaged.
    pub fn open(path: &Path, n: usize, m: usize, fingerprint: u64) -> Result<Self> {
        let io = |e: std::io::Error| Error::invalid(format!("journal {}: {e}", path.display()));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&(n as u64).to_le_bytes());
        header.extend_from_slice(&(m as u64).to_le_bytes());
        header.extend_from_slice(&fingerprint.to_le_bytes());
        if bytes.len() < HEADER {
            // New (or torn while its header was written): start it.
            file.set_len(0).map_err(io)?;
            file.seek(SeekFrom::Start(0)).map_err(io)?;
            file.write_all(&header).map_err(io)?;
            file.sync_data().map_err(io)?;
            return Ok(Journal {
                file,
                m,
                records: HashMap::new(),
                replayed: 0,
            });
        }
        if &bytes[..8] != MAGIC {
            return Err(Error::invalid(format!(
                "{} is not a nanprop journal",
                path.display()
            )));
        }
        if bytes[..HEADER] != header[..] {
            let word = |k: usize| u64::from_le_bytes(bytes[k..k + 8].try_into().unwrap());
            return Err(Error::invalid(format!(
                "journal {} belongs to another trace (it has n = {}, m = {}{}); use a new journal file",
                path.display(),
                word(12),
                word(20),
                if word(12) == n as u64 && word(20) == m as u64 { ", and another x0 or other options" } else { "" }
            )));
        }
        let len = Self::record_len(m);
        let mut records = HashMap::new();
        let mut offset = HEADER;
        let mut k = 0;
        while offset < bytes.len() {
            let rest = &bytes[offset..];
            let whole = rest.len() >= len;
            let ok = whole && {
                let body = &rest[..len - 8];
                let sum = u64::from_le_bytes(rest[len - 8..len].try_into().unwrap());
                Fnv::new().bytes(body).finish() == sum
            };
            if !ok {
                if offset + len >= bytes.len() {
                    // The last record was being written when the process died: drop it.
                    file.set_len(offset as u64).map_err(io)?;
                    break;
                }
                return Err(Error::invalid(format!(
                    "journal {} is damaged at record {k}",
                    path.display()
                )));
            }
            let word = |i: usize| u64::from_le_bytes(rest[8 * i..8 * i + 8].try_into().unwrap());
            let y: Vec<f64> = (0..m).map(|i| f64::from_bits(word(3 + i))).collect();
            records.insert((word(0), word(1)), (word(2), y));
            offset += len;
            k += 1;
        }
        file.seek(SeekFrom::End(0)).map_err(io)?;
        Ok(Journal {
            file,
            m,
            records,
            replayed: 0,
        })
    }

    /// The outputs recorded for request `request` of step `step`, if any. Errors: a record
    /// there for another probe (the journal does not match this trace).
    pub fn replay(&mut self, step: u64, request: u64, probe: u64) -> Result<Option<Vec<f64>>> {
        match self.records.remove(&(step, request)) {
            None => Ok(None),
            Some((p, _)) if p != probe => Err(Error::invalid(format!(
                "the journal does not match this trace at step {step}, request {request} (another probe was recorded there)"
            ))),
            Some((_, y)) => {
                self.replayed += 1;
                Ok(Some(y))
            }
        }
    }

    /// Appends the outputs of request `request` of step `step` and flushes them to the file
    /// system. Errors: the write failed (the trace stops rather than lose the record).
    pub fn append(&mut self, step: u64, request: u64, probe: u64, y: &[f64]) -> Result<()> {
        debug_assert_eq!(y.len(), self.m);
        let mut rec = Vec::with_capacity(Self::record_len(self.m));
        for v in [step, request, probe] {
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
