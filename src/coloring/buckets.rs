//! Bucket queues for the dynamic orders (smallest-last, incidence-degree, dynamic
//! largest-first; saturation keeps its own, `saturation.rs`).

use crate::error::{filled, push, Result};

/// Integer-keyed priority queue with O(1) key changes by one: one vector (a stack) per key,
/// and each vertex's position in its bucket so it can be removed by swapping with the last.
/// Ties go to the vertex pushed last, which is the usual convention of the degree-based orders
/// (and ColPack's): it decides colors on regular meshes, where most degrees tie.
pub(super) struct BucketQueue {
    key: Vec<usize>,
    pos: Vec<usize>,
    buckets: Vec<Vec<usize>>,
    present: Vec<bool>,
    len: usize,
    min: usize,
    max: usize,
}

impl BucketQueue {
    /// Every vertex `v` at key `keys[v]`. Buckets are made as keys reach them (one per key
    /// value in use, not one per possible key: 24 bytes each).
    pub(super) fn new(keys: Vec<usize>) -> Result<Self> {
        let n = keys.len();
        let top = keys.iter().copied().max().unwrap_or(0);
        let mut buckets = filled(Vec::new(), top + 1, "buckets")?;
        let mut pos = filled(0, n, "bucket positions")?;
        for (v, &k) in keys.iter().enumerate() {
            pos[v] = buckets[k].len();
            push(&mut buckets[k], v, "a bucket")?;
        }
        Ok(BucketQueue {
            min: keys.iter().copied().min().unwrap_or(0),
            max: keys.iter().copied().max().unwrap_or(0),
            key: keys,
            pos,
            buckets,
            present: filled(true, n, "vertex flags")?,
            len: n,
        })
    }

    pub(super) fn remove(&mut self, v: usize) {
        let bucket = &mut self.buckets[self.key[v]];
        let last = *bucket.last().expect("v is in its bucket");
        bucket[self.pos[v]] = last;
        self.pos[last] = self.pos[v];
        bucket.pop();
    }

    pub(super) fn push(&mut self, v: usize) -> Result<()> {
        if self.key[v] == self.buckets.len() {
            push(&mut self.buckets, Vec::new(), "buckets")?;
        }
        let bucket = &mut self.buckets[self.key[v]];
        self.pos[v] = bucket.len();
        push(bucket, v, "a bucket")
    }

    pub(super) fn take(&mut self, k: usize) -> usize {
        let v = self.buckets[k].pop().expect("nonempty bucket");
        self.present[v] = false;
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

    pub(super) fn decrement(&mut self, v: usize) -> Result<()> {
        if self.present[v] && self.key[v] > 0 {
            self.remove(v);
            self.key[v] -= 1;
            self.push(v)?;
            self.min = self.min.min(self.key[v]);
        }
        Ok(())
    }

    pub(super) fn increment(&mut self, v: usize) -> Result<()> {
        if self.present[v] {
            self.remove(v);
            self.key[v] += 1;
            self.push(v)?;
            self.max = self.max.max(self.key[v]);
        }
        Ok(())
    }
}
