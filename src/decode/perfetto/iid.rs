//! A map keyed by interning ids. heapprofd hands out the iids of each namespace as 1, 2, 3, …,
//! so a vector indexed by iid finds an entry with one bounds check instead of hashing, and
//! reads memory in order when ids come in order (each frame id of each callstack is looked up:
//! 8.6 million lookups in the issue-15 trace). Ids far past the number of entries (an odd or
//! hostile writer's) go to a hash map instead, so memory follows the number of entries, never
//! the size of an id.

use rustc_hash::FxHashMap as HashMap;

/// Entries by iid: a vector for ids below about one and a half times the number of entries;
/// past it, ids that come in increasing order (heapprofd's callstack ids, which grow far
/// faster than their number) in a sorted run, searched near the last hit, since samples name
/// their callstacks in increasing order too; the rest in a hash map. Every iid lives in
/// exactly one of the three.
#[derive(Debug)]
pub(super) struct IidMap<V> {
    dense: Vec<Option<V>>,
    ordered: Vec<(u64, V)>,
    sparse: HashMap<u64, V>,
    len: usize,
}

impl<V> Default for IidMap<V> {
    fn default() -> Self {
        IidMap { dense: Vec::new(), ordered: Vec::new(), sparse: HashMap::default(), len: 0 }
    }
}

/// Ids below this many more than one and a half times the number of entries are kept in the
/// vector.
const SLACK: usize = 4096;

impl<V: Copy> IidMap<V> {
    /// The entry of `iid`.
    #[inline(always)]
    pub(super) fn get(&self, iid: u64) -> Option<V> {
        let mut hint = 0;
        self.get_near(iid, &mut hint)
    }

    /// The entry of `iid`, searching the sorted run from `hint` (the position of the last hit,
    /// updated): a run of increasing ids is found in a step or two each.
    #[inline(always)]
    pub(super) fn get_near(&self, iid: u64, hint: &mut usize) -> Option<V> {
        if let Some(v) = usize::try_from(iid).ok().and_then(|i| self.dense.get(i)) {
            return *v;
        }
        if !self.ordered.is_empty() {
            let o = &self.ordered;
            let at = match o.get(*hint) {
                Some(&(k, v)) if k == iid => return Some(v),
                Some(&(k, _)) if k < iid => match o.get(*hint + 1) {
                    Some(&(k, v)) if k == iid => {
                        *hint += 1;
                        return Some(v);
                    }
                    _ => gallop(o, *hint, iid),
                },
                _ => o.binary_search_by_key(&iid, |e| e.0),
            };
            if let Ok(i) = at {
                *hint = i;
                return Some(o[i].1);
            }
        }
        if self.sparse.is_empty() { None } else { self.sparse.get(&iid).copied() }
    }

    /// Hints the cache to fetch the entry of `iid` when it is in the vector (a lookup soon).
    #[inline(always)]
    pub(super) fn prefetch(&self, iid: u64) {
        if let Some(v) = usize::try_from(iid).ok().and_then(|i| self.dense.get(i)) {
            crate::model::tables::prefetch(v);
        }
    }

    /// Whether `iid` has an entry.
    #[inline]
    pub(super) fn contains_key(&self, iid: u64) -> bool {
        self.get(iid).is_some()
    }

    /// Number of entries.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Sets the entry of `iid` (replacing one there was).
    pub(super) fn insert(&mut self, iid: u64, v: V) {
        let i = usize::try_from(iid).unwrap_or(usize::MAX);
        if i >= self.dense.len() {
            let limit = self.len.saturating_add(self.len / 2).saturating_add(SLACK);
            if i >= limit {
                let added = match self.ordered.last() {
                    None => {
                        self.ordered.push((iid, v));
                        true
                    }
                    Some(&(last, _)) if iid > last => {
                        self.ordered.push((iid, v));
                        true
                    }
                    Some(_) => match self.ordered.binary_search_by_key(&iid, |e| e.0) {
                        Ok(at) => {
                            self.ordered[at].1 = v;
                            false
                        }
                        Err(_) => self.sparse.insert(iid, v).is_none(),
                    },
                };
                if added {
                    self.len += 1;
                }
                return;
            }
            // Grow by half, within the limit, and move the entries now in range.
            let new_len = (i + 1).max(self.dense.len() + self.dense.len() / 2).min(limit);
            // Exactly: `resize` alone would double the capacity.
            self.dense.reserve_exact(new_len - self.dense.len());
            self.dense.resize(new_len, None);
            let below = self.ordered.partition_point(|e| e.0 < new_len as u64);
            for (k, e) in self.ordered.drain(..below) {
                self.dense[k as usize] = Some(e);
            }
            if !self.sparse.is_empty() {
                let moved: Vec<u64> = self.sparse.keys().copied().filter(|&k| k < new_len as u64).collect();
                for k in moved {
                    let e = self.sparse.remove(&k);
                    self.dense[k as usize] = e;
                }
            }
        }
        if self.dense[i].replace(v).is_none() {
            self.len += 1;
        }
    }

    /// The entry of `iid`, made by `f` when there is none.
    #[inline]
    pub(super) fn or_insert_with(&mut self, iid: u64, f: impl FnOnce() -> V) -> V {
        match self.get(iid) {
            Some(v) => v,
            None => {
                let v = f();
                self.insert(iid, v);
                v
            }
        }
    }

    /// Every entry, in no particular order.
    pub(super) fn values(&self) -> impl Iterator<Item = V> + '_ {
        self.dense
            .iter()
            .flatten()
            .copied()
            .chain(self.ordered.iter().map(|e| e.1))
            .chain(self.sparse.values().copied())
    }
}

/// The position of `iid` in the sorted run `o`, knowing that `o[from].0 < iid`: steps of 1, 2,
/// 4, … from `from` bracket it, then a binary search within the bracket (a few reads near
/// `from` when, as with samples, the ids asked for increase by small gaps).
fn gallop<V>(o: &[(u64, V)], from: usize, iid: u64) -> Result<usize, usize> {
    let mut lo = from;
    let mut step = 1;
    let mut hi = from + 1;
    while hi < o.len() && o[hi].0 < iid {
        lo = hi;
        step *= 2;
        hi = from + step;
    }
    let end = hi.saturating_add(1).min(o.len());
    o[lo..end].binary_search_by_key(&iid, |e| e.0).map(|i| i + lo).map_err(|i| i + lo)
}

#[cfg(test)]
mod tests {
    use super::IidMap;

    #[test]
    fn dense_and_sparse_ids_behave_as_one_map() {
        let mut m = IidMap::default();
        let mut reference = std::collections::HashMap::new();
        // In order, far out (sparse), then filling the range the sparse ones fall into.
        // In order (dense), far out in increasing order (the sorted run), out of order (the
        // hash map), then filling the range some far ones fall into (moved to the vector).
        let ids: Vec<u64> = (1..5000)
            .chain([20_000, 9000])
            .chain((0..3000).map(|k| 100_000 + 37 * k))
            .chain([100_037, 100_038, 1 << 41, 99_999, u64::MAX, 1 << 40, 15_000])
            .chain(5000..22_000)
            .collect();
        for (n, &id) in ids.iter().enumerate() {
            m.insert(id, n as u32);
            reference.insert(id, n as u32);
            assert_eq!(m.len(), reference.len());
        }
        // Replacing keeps the count.
        m.insert(7, 1);
        reference.insert(7, 1);
        m.insert(u64::MAX, 2);
        reference.insert(u64::MAX, 2);
        assert_eq!(m.len(), reference.len());
        m.insert(100_074, 5);
        reference.insert(100_074, 5);
        assert_eq!(m.len(), reference.len());
        let probes: Vec<u64> = [
            0,
            1,
            7,
            4999,
            5000,
            9000,
            11_999,
            12_000,
            15_000,
            20_000,
            21_999,
            22_000,
            1 << 40,
            1 << 41,
            u64::MAX,
            123_456,
        ]
        .into_iter()
        .chain((99_990..100_200).chain(200_000..210_000))
        .collect();
        let mut hint = 0;
        for &id in &probes {
            assert_eq!(m.get(id), reference.get(&id).copied(), "{id}");
            assert_eq!(m.get_near(id, &mut hint), reference.get(&id).copied(), "{id} near");
            assert_eq!(m.contains_key(id), reference.contains_key(&id));
        }
        // Backwards and random hints too.
        for (n, &id) in probes.iter().rev().enumerate() {
            let mut h = n * 7;
            assert_eq!(m.get_near(id, &mut h), reference.get(&id).copied(), "{id} from {n}");
        }
        assert!(!m.ordered.is_empty() && !m.sparse.is_empty());
        let mut got: Vec<u32> = m.values().collect();
        let mut want: Vec<u32> = reference.values().copied().collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
        // 15,000 came in the hash map and 20,000 in the run; both moved to the vector when it
        // grew past them.
        assert!(m.dense.len() > 20_000 && !m.sparse.contains_key(&15_000));
        assert!(m.ordered.iter().all(|e| e.0 > 20_000));
        // A lone huge id never makes the vector grow.
        let mut m = IidMap::default();
        m.insert(1 << 62, 1u8);
        assert_eq!((m.dense.len(), m.len(), m.or_insert_with(1 << 62, || 9)), (0, 1, 1));
        assert_eq!(m.or_insert_with(3, || 5), 5);
        assert_eq!(m.get(3), Some(5));
    }

    #[test]
    fn lookups_from_a_hint_find_every_id_of_the_run_whatever_the_gaps() {
        // A run of increasing ids with gaps of 1 to ~5,000 (past the vector's range).
        let mut m = IidMap::default();
        let mut ids = Vec::new();
        let mut id = 1u64 << 30;
        for k in 0..4000u64 {
            id += 1 + (k * k * 7919) % 5000;
            ids.push(id);
            m.insert(id, k);
        }
        assert_eq!(m.ordered.len(), ids.len());
        // Every id, every other id, every 97th, and ids between them, in increasing order
        // from one hint, as samples ask for them.
        for stride in [1, 2, 97, 1000] {
            let mut hint = 0;
            for (k, &id) in ids.iter().enumerate().step_by(stride) {
                assert_eq!(m.get_near(id - 1, &mut hint).is_some(), k > 0 && ids[k - 1] == id - 1);
                assert_eq!(m.get_near(id, &mut hint), Some(k as u64), "{id} stride {stride}");
                assert_eq!(hint, k);
            }
            assert_eq!(m.get_near(id + 1, &mut hint), None);
        }
    }
}
