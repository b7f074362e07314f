//! Bucket queues for the dynamic orders (smallest-last, incidence-degree, dynamic
//! largest-first; saturation keeps its own, `saturation.rs`).

use crate::error::{filled, push, Result};
use crate::prefetch::prefetch;

/// [`Slot::pos`] of a vertex taken from the queue.
const TAKEN: u32 = u32::MAX;

/// What the queue knows of one vertex, in one record (its key and its place in its bucket): an
/// update of a vertex reads one scattered record, not one per array (a vertex's key, place and
/// presence were three arrays: on random 5 per row at n = 10^6 the dynamic orders' updates waited
/// for each).
#[derive(Clone, Copy)]
struct Slot {
    key: u32,
    /// Its position in its bucket; [`TAKEN`] once taken.
    pos: u32,
}

/// Integer-keyed priority queue with O(1) key changes by one: one vector (a stack) per key,
/// and each vertex's position in its bucket so it can be removed by swapping with the last.
/// Ties go to the vertex pushed last, which is the usual convention of the degree-based orders
/// (and ColPack's): it decides colors on regular meshes, where most degrees tie.
pub(super) struct BucketQueue {
    slots: Vec<Slot>,
    buckets: Vec<Vec<u32>>,
    len: usize,
    min: usize,
    max: usize,
}

impl BucketQueue {
    /// Every vertex `v` at key `keys[v]` (fewer than 2^32 vertices, as the columns of a
    /// pattern are). Buckets are made as keys reach them (one per key value in use, not one per
    /// possible key: 24 bytes each).
    pub(super) fn new(keys: &[usize]) -> Result<Self> {
        let n = keys.len();
        let top = keys.iter().copied().max().unwrap_or(0);
        let mut buckets = filled(Vec::new(), top + 1, "buckets")?;
        let mut slots = filled(Slot { key: 0, pos: 0 }, n, "bucket positions")?;
        for (v, &k) in keys.iter().enumerate() {
            slots[v] = Slot {
                key: k as u32,
                pos: buckets[k].len() as u32,
            };
            push(&mut buckets[k], v as u32, "a bucket")?;
        }
        Ok(BucketQueue {
            min: keys.iter().copied().min().unwrap_or(0),
            max: top,
            slots,
            buckets,
            len: n,
        })
    }

    fn remove(&mut self, v: usize) {
        let Slot { key, pos } = self.slots[v];
        let bucket = &mut self.buckets[key as usize];
        let last = *bucket.last().expect("v is in its bucket");
        bucket[pos as usize] = last;
        self.slots[last as usize].pos = pos;
        bucket.pop();
    }

    fn push(&mut self, v: usize) -> Result<()> {
        let key = self.slots[v].key as usize;
        if key == self.buckets.len() {
            push(&mut self.buckets, Vec::new(), "buckets")?;
        }
        let bucket = &mut self.buckets[key];
        self.slots[v].pos = bucket.len() as u32;
        push(bucket, v as u32, "a bucket")
    }

    fn take(&mut self, k: usize) -> usize {
        let v = self.buckets[k].pop().expect("nonempty bucket") as usize;
        self.slots[v].pos = TAKEN;
        self.len -= 1;
        v
    }

    pub(super) fn pop_min(&mut self) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        while self.buckets[self.min].is_empty() {
            self.min += 1;
        }
        Some(self.take(self.min))
    }

    pub(super) fn pop_max(&mut self) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        while self.buckets[self.max].is_empty() {
            self.max -= 1;
        }
        Some(self.take(self.max))
    }

    /// [`BucketQueue::decrement`] each of `vs`, in order (their records asked for first: the
    /// updates' reads overlap).
    pub(super) fn decrement_all(&mut self, vs: &[u32]) -> Result<()> {
        for &v in vs {
            prefetch(&self.slots, v as usize);
        }
        vs.iter().try_for_each(|&v| self.decrement(v as usize))
    }

    /// [`BucketQueue::increment`] each of `vs`, in order (their records asked for first).
    pub(super) fn increment_all(&mut self, vs: &[u32]) -> Result<()> {
        for &v in vs {
            prefetch(&self.slots, v as usize);
        }
        vs.iter().try_for_each(|&v| self.increment(v as usize))
    }

    pub(super) fn decrement(&mut self, v: usize) -> Result<()> {
        let Slot { key, pos } = self.slots[v];
        if pos != TAKEN && key > 0 {
            self.remove(v);
            self.slots[v].key = key - 1;
            self.push(v)?;
            self.min = self.min.min(key as usize - 1);
        }
        Ok(())
    }

    pub(super) fn increment(&mut self, v: usize) -> Result<()> {
        let Slot { key, pos } = self.slots[v];
        if pos != TAKEN {
            self.remove(v);
            self.slots[v].key = key + 1;
            self.push(v)?;
            self.max = self.max.max(key as usize + 1);
        }
        Ok(())
    }
}
