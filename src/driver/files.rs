//! The file executor, for batch schedulers: evaluations as files, done by someone else.
//!
//! Each input is written to `DIR/<point>-<step>-<request>.in` (n little-endian doubles: text
//! could not carry NaN payloads), under a temporary name and renamed, so a scheduler never sees
//! half a file. The evaluation is done when `DIR/<same>.out` holds the m outputs as
//! little-endian doubles. An evaluation whose output is missing is [`Evaluation::Pending`]; the
//! run loop then stops with [`crate::ErrorKind::Waiting`] after handing out the whole step, and
//! the trace is run again (its journal keeps everything done) once the outputs exist.

use super::{Batch, Evaluation, Executor};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Evaluations through files in a directory (see the module docs).
pub struct Files {
    dir: PathBuf,
    m: usize,
    wait: Duration,
}

impl Files {
    /// An executor writing inputs to `dir` (created if missing) for f: R^n -> R^m, waiting up
    /// to `wait` for missing outputs before calling them pending. `trace` identifies the trace
    /// (its sizes, point and options): it is kept in `dir/trace.id`, and a directory that holds
    /// another trace's files is refused, so that no output left by another trace is read as
    /// this one's. Errors: `dir` cannot be created or read; it belongs to another trace.
    pub fn new(dir: &Path, m: usize, wait: Duration, trace: u64) -> Result<Self> {
        let io = |e: std::io::Error| Error::invalid(format!("{}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(io)?;
        let id_file = dir.join("trace.id");
        let ours = format!("{trace:016x}\n");
        match std::fs::read_to_string(&id_file) {
            Ok(theirs) if theirs == ours => {}
            Ok(_) => {
                return Err(Error::invalid(format!(
                    "{} holds the evaluations of another trace ({} differs: other sizes, point \
                     or options); use an empty directory",
                    dir.display(),
                    id_file.display()
                )))
            }
            Err(_) => {
                let foreign = std::fs::read_dir(dir).map_err(io)?.flatten().any(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.ends_with(".in") || name.ends_with(".out")
                });
                if foreign {
                    return Err(Error::invalid(format!(
                        "{} holds evaluation files of an unknown trace (no trace.id); use an \
                         empty directory",
                        dir.display()
                    )));
                }
                std::fs::write(&id_file, ours).map_err(io)?;
            }
        }
        Ok(Files {
            dir: dir.to_path_buf(),
            m,
            wait,
        })
    }

    fn stem(&self, batch: &Batch<'_>, k: usize) -> PathBuf {
        let key = batch.key(k);
        self.dir.join(format!(
            "{:03}-{:05}-{:07}",
            key.point, key.step, key.request
        ))
    }

    /// The outputs of evaluation k if its file is there. Errors: a file of the wrong size.
    fn read(&self, stem: &Path) -> Result<Option<Vec<f64>>> {
        let path = stem.with_extension("out");
        match std::fs::read(&path) {
            Ok(bytes) if bytes.len() == 8 * self.m => Ok(Some(
                bytes
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect(),
            )),
            Ok(bytes) => Err(Error::invalid(format!(
                "{} has {} bytes, expected m = {} doubles ({} bytes)",
                path.display(),
                bytes.len(),
                self.m,
                8 * self.m
            ))),
            Err(_) => Ok(None),
        }
    }

    fn write_input(stem: &Path, x: &[f64]) -> Result<()> {
        let input = stem.with_extension("in");
        if input.exists() {
            return Ok(());
        }
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let partial = stem.with_extension("in.part");
        std::fs::write(&partial, bytes)
            .map_err(|e| Error::invalid(format!("writing {}: {e}", partial.display())))?;
        std::fs::rename(&partial, &input)
            .map_err(|e| Error::invalid(format!("renaming {}: {e}", partial.display())))
    }
}

impl Executor for Files {
    fn capacity(&self) -> usize {
        256
    }

    fn run(
        &mut self,
        batch: &Batch<'_>,
        done: &mut dyn FnMut(usize, Evaluation<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut missing = Vec::new();
        for k in 0..batch.len() {
            let stem = self.stem(batch, k);
            match self.read(&stem)? {
                Some(y) => done(k, Evaluation::Done(&y))?,
                None => {
                    Self::write_input(&stem, batch.input(k))?;
                    missing.push(k);
                }
            }
        }
        let deadline = Instant::now() + self.wait;
        let mut backoff = Backoff::new();
        while !missing.is_empty() && Instant::now() < deadline {
            backoff.nap();
            let mut still = Vec::new();
            for k in missing {
                match self.read(&self.stem(batch, k))? {
                    Some(y) => done(k, Evaluation::Done(&y))?,
                    None => still.push(k),
                }
            }
            missing = still;
        }
        for k in missing {
            done(k, Evaluation::Pending)?;
        }
        Ok(())
    }
}

/// Waits a little longer each time, up to 5 ms, for the scheduler's output files: cheap for fast
/// black boxes, idle for slow ones.
struct Backoff(Duration);

impl Backoff {
    /// The shortest wait.
    fn new() -> Self {
        Backoff(Duration::from_micros(20))
    }
    /// Sleeps, then doubles the next wait.
    fn nap(&mut self) {
        std::thread::sleep(self.0);
        self.0 = (self.0 * 2).min(Duration::from_millis(5));
    }
}
