//! One-hot and chunked tracing (Sharpe's method): probe k adjacent inputs at a time.
//!
//! With k = 1 this is the one-hot trace: n probes after the baseline, every entry proven. With
//! k > 1 a changed output marks all k inputs of its chunk ([`EntryKind::Chunk`]): conservative,
//! n/k probes, and exact where the code has the locality the chunk assumes. A tag that names its
//! input still proves that entry ([`EntryKind::Traced`]). All probes form a single step.

use super::Planner;
use crate::error::{collect, reserve, zero_bits, Error, Result};
use crate::pattern::{EntryKind, Pattern, PatternBuilder};
use crate::probe::{Hit, Probe};
use bitvec::prelude::*;

/// The one-hot (k = 1) and chunked (k > 1) planner.
pub struct Chunked {
    n: usize,
    k: usize,
    baseline: std::sync::Arc<Vec<f64>>,
    asked: bool,
    told: BitVec,
    found: Vec<(u32, u32, EntryKind)>,
}

impl Chunked {
    /// A planner probing `k >= 1` adjacent inputs at a time, for the given baseline outputs.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when its O(n / k) flags do
    /// not fit.
    pub fn new(n: usize, k: usize, baseline: impl Into<std::sync::Arc<Vec<f64>>>) -> Result<Self> {
        let baseline = baseline.into();
        let k = k.clamp(1, n);
        let chunks = n.div_ceil(k);
        Ok(Chunked {
            n,
            k,
            baseline,
            asked: false,
            told: zero_bits(chunks, "chunks told")?,
            found: Vec::new(),
        })
    }

    fn chunk_cols(&self, c: usize) -> std::ops::Range<u32> {
        (c * self.k) as u32..((c + 1) * self.k).min(self.n) as u32
    }
}

impl Planner for Chunked {
    fn ask(&mut self) -> Result<Vec<Probe>> {
        if self.asked {
            return Ok(Vec::new());
        }
        self.asked = true;
        let mut probes = Vec::new();
        reserve(&mut probes, self.told.len(), "probes")?;
        for c in 0..self.told.len() {
            let cols = collect(self.chunk_cols(c), "probe columns")?;
            probes.push(Probe::new(cols, self.n));
        }
        Ok(probes)
    }

    fn tell(&mut self, k: usize, probe: &Probe, y: &[f64], perturbed: &[u32]) -> Result<usize> {
        self.told.set(k, true);
        let chunk = self.chunk_cols(k);
        let single = chunk.len() == 1;
        let found = &mut self.found;
        let mut room = true;
        let via_float = probe.observe(&self.baseline, y, perturbed, |i, hit| {
            // Room for what this output can add: a traced column and the chunk's columns.
            room &= reserve(found, chunk.len() + 1, "entries").is_ok();
            if !room {
                return;
            }
            if let Hit::Dep(j) = hit {
                found.push((i, j, EntryKind::Traced));
            }
            if single {
                match hit {
                    Hit::Dep(_) => {}
                    Hit::Blocked => found.push((i, chunk.start, EntryKind::Traced)),
                    Hit::Perturbed => found.push((i, chunk.start, EntryKind::Perturbation)),
                }
            } else {
                found.extend(chunk.clone().map(|j| (i, j, EntryKind::Chunk)));
            }
        });
        match room {
            true => Ok(via_float),
            false => Err(Error::out_of_memory("entries", self.found.len())),
        }
    }

    fn claims(&self, _k: usize, _probe: &Probe, y: &[f64]) -> bool {
        // Every traceable row unchanged claims the whole chunk zero.
        (self.baseline.iter().zip(y)).any(|(b, v)| b.is_finite() && b.to_bits() == v.to_bits())
    }

    fn finish(mut self: Box<Self>, builder: PatternBuilder) -> Result<Pattern> {
        let mut found = std::mem::take(&mut self.found);
        for c in self.told.iter_zeros() {
            let cols = self.chunk_cols(c);
            let rows = self
                .baseline
                .iter()
                .enumerate()
                .filter(|(_, b)| b.is_finite());
            for (i, _) in rows {
                reserve(&mut found, cols.len(), "unresolved entries")?;
                found.extend(cols.clone().map(|j| (i as u32, j, EntryKind::Unresolved)));
            }
        }
        builder.from_triples(&found)
    }
}
