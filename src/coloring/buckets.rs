//! Bucket queues for the dynamic orders (smallest-last, incidence-degree, dynamic
//! largest-first, saturation).

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
    /// Every vertex at key 0, stacked in `order` (the last comes out first at equal keys).
    pub(super) fn all_zero_in_order(order: &[usize]) -> Self {
        let mut q = BucketQueue::new(&vec![0; order.len()]);
        q.buckets[0] = order.to_vec();
        for (k, &v) in order.iter().enumerate() {
            q.pos[v] = k;
        }
        q
    }

    pub(super) fn new(keys: &[usize]) -> Self {
        let n = keys.len();
        let top = keys.iter().copied().max().unwrap_or(0) + n + 1;
        let mut buckets = vec![Vec::new(); top + 1];
        let mut pos = vec![0; n];
        for (v, &k) in keys.iter().enumerate() {
            pos[v] = buckets[k].len();
            buckets[k].push(v);
        }
        BucketQueue {
            key: keys.to_vec(),
            pos,
            buckets,
            present: vec![true; n],
            len: n,
            min: keys.iter().copied().min().unwrap_or(0),
            max: keys.iter().copied().max().unwrap_or(0),
        }
    }

    pub(super) fn remove(&mut self, v: usize) {
        let bucket = &mut self.buckets[self.key[v]];
        let last = *bucket.last().expect("v is in its bucket");
        bucket[self.pos[v]] = last;
        self.pos[last] = self.pos[v];
        bucket.pop();
    }

    pub(super) fn push(&mut self, v: usize) {
        let bucket = &mut self.buckets[self.key[v]];
        self.pos[v] = bucket.len();
        bucket.push(v);
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

    pub(super) fn decrement(&mut self, v: usize) {
        if self.present[v] && self.key[v] > 0 {
            self.remove(v);
            self.key[v] -= 1;
            self.push(v);
            self.min = self.min.min(self.key[v]);
        }
    }

    pub(super) fn increment(&mut self, v: usize) {
        if self.present[v] {
            self.remove(v);
            self.key[v] += 1;
            self.push(v);
            self.max = self.max.max(self.key[v]);
        }
    }
}
