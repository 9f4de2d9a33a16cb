//! Callstacks as flat frame lists, for stages that need each stack's frames but not the prefix
//! tree of [`Tables`](super::Tables) (symbolization: which mappings a stack passes through,
//! whether all its frames have symbols). Identical lists are one stack, as in the tree; no
//! prefix is shared, so interning costs one hash of the list instead of one node per frame.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use super::frame::FrameId;
use super::stack::StackId;

/// Distinct callstacks, each its frames root first. Ids are dense, in first-interned order, and
/// name stacks of this list only (not nodes of a [`Tables`](super::Tables) stack tree).
#[derive(Debug, Default, Clone)]
pub struct StackLists {
    /// Every stack's frames, one after another.
    frames: Vec<FrameId>,
    /// Where stack `i` starts in `frames` (stack `i` ends where `i + 1` starts); one more
    /// entry than stacks.
    starts: Vec<u32>,
    /// Hash of a list -> the first stack with that hash; `next` chains the others.
    by_hash: FxHashMap<u64, u32>,
    /// Per stack, the next stack with the same hash (`u32::MAX`: none).
    next: Vec<u32>,
}

fn hash_of(frames: &[FrameId]) -> u64 {
    let mut h = FxHasher::default();
    frames.hash(&mut h);
    h.finish()
}

impl StackLists {
    /// Number of distinct stacks.
    pub fn len(&self) -> usize {
        self.next.len()
    }

    /// True when no stack was interned.
    pub fn is_empty(&self) -> bool {
        self.next.is_empty()
    }

    /// The frames of stack `id`, root first.
    ///
    /// # Panics
    /// When `id` is not a stack of this list.
    pub fn frames(&self, id: StackId) -> &[FrameId] {
        let i = id.0 as usize;
        &self.frames[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// The stack of `frames_root_first` (the same id for the same list); `None` for an empty
    /// list, as [`Tables::intern_stack`](super::Tables::intern_stack) answers.
    pub fn intern(&mut self, frames_root_first: &[FrameId]) -> Option<StackId> {
        if frames_root_first.is_empty() {
            return None;
        }
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let h = hash_of(frames_root_first);
        let mut cur = self.by_hash.get(&h).copied().unwrap_or(u32::MAX);
        let mut last = u32::MAX;
        while cur != u32::MAX {
            if self.frames(StackId(cur)) == frames_root_first {
                return Some(StackId(cur));
            }
            last = cur;
            cur = self.next[cur as usize];
        }
        let id = u32::try_from(self.next.len()).expect("fewer than 2^32 stacks");
        self.frames.extend_from_slice(frames_root_first);
        self.starts.push(u32::try_from(self.frames.len()).expect("fewer than 2^32 frame references"));
        self.next.push(u32::MAX);
        if last == u32::MAX {
            self.by_hash.insert(h, id);
        } else {
            self.next[last as usize] = id;
        }
        Some(StackId(id))
    }

    /// [`StackLists::intern`] of many stacks: stack `i` is `frames[bounds[i]..bounds[i + 1]]`
    /// (as [`Tables::intern_stacks`](super::Tables::intern_stacks) takes them).
    pub fn intern_batch(&mut self, frames: &[FrameId], bounds: &[usize]) -> Vec<Option<StackId>> {
        self.frames.reserve(frames.len());
        bounds.windows(2).map(|w| self.intern(&frames[w[0]..w[1]])).collect()
    }

    /// [`StackLists::intern_batch`] of a batch the caller gives up: the first batch becomes
    /// the lists' own buffer (a later one is appended to it), and the new stacks are moved
    /// down over the repeated ones in place. The same ids as `intern_batch`, without writing
    /// every frame a second time (for `symbolize`'s one big batch, a copy as large as the
    /// batch: as many fresh pages to fault in).
    pub fn intern_batch_vec(&mut self, frames: Vec<FrameId>, bounds: &[usize]) -> Vec<Option<StackId>> {
        let base = self.frames.len();
        if base == 0 {
            self.frames = frames;
        } else {
            self.frames.extend_from_slice(&frames);
        }
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        // Stacks kept so far end at `kept`, never past the start of the one looked at.
        let mut kept = base;
        let mut ids = Vec::with_capacity(bounds.len().saturating_sub(1));
        for w in bounds.windows(2) {
            let (start, end) = (base + w[0], base + w[1]);
            if start == end {
                ids.push(None);
                continue;
            }
            let h = hash_of(&self.frames[start..end]);
            let mut cur = self.by_hash.get(&h).copied().unwrap_or(u32::MAX);
            let mut last = u32::MAX;
            while cur != u32::MAX {
                let i = cur as usize;
                let (s, e) = (self.starts[i] as usize, self.starts[i + 1] as usize);
                if self.frames[s..e] == self.frames[start..end] {
                    break;
                }
                last = cur;
                cur = self.next[i];
            }
            if cur != u32::MAX {
                ids.push(Some(StackId(cur)));
                continue;
            }
            let id = u32::try_from(self.next.len()).expect("fewer than 2^32 stacks");
            if kept != start {
                self.frames.copy_within(start..end, kept);
            }
            kept += end - start;
            self.starts.push(u32::try_from(kept).expect("fewer than 2^32 frame references"));
            self.next.push(u32::MAX);
            if last == u32::MAX {
                self.by_hash.insert(h, id);
            } else {
                self.next[last as usize] = id;
            }
            ids.push(Some(StackId(id)));
        }
        self.frames.truncate(kept);
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_lists_are_one_stack_and_prefixes_are_not_shared() {
        let f = |v: &[u32]| v.iter().map(|&x| FrameId(x)).collect::<Vec<_>>();
        let mut l = StackLists::default();
        assert_eq!(l.intern(&[]), None);
        let a = l.intern(&f(&[1, 2, 3])).unwrap();
        let b = l.intern(&f(&[1, 2])).unwrap();
        let c = l.intern(&f(&[1, 2, 3])).unwrap();
        assert_eq!((a, b, c), (StackId(0), StackId(1), StackId(0)));
        let got = l.intern_batch(&f(&[1, 2, 9, 1, 2, 3]), &[0, 2, 2, 3, 6]);
        assert_eq!(got, vec![Some(StackId(1)), None, Some(StackId(2)), Some(StackId(0))]);
        assert_eq!(l.len(), 3);
        assert_eq!(l.frames(StackId(2)), &f(&[9])[..]);
        assert_eq!(l.frames(StackId(0)), &f(&[1, 2, 3])[..]);
    }

    /// A batch given up gives the ids and lists `intern_batch` gives, first batch or later,
    /// repeats (in the batch and of earlier batches) and empty stacks included.
    #[test]
    fn a_batch_given_up_interns_as_a_borrowed_one() {
        let f = |v: &[u32]| v.iter().map(|&x| FrameId(x)).collect::<Vec<_>>();
        let batches: [(&[u32], &[usize]); 3] = [
            (&[1, 2, 3, 1, 2, 1, 2, 3, 4, 5, 1, 2], &[0, 3, 5, 5, 8, 10, 12]),
            (&[4, 5, 9, 1, 2, 3, 7], &[0, 2, 3, 6, 6, 7]),
            (&[], &[0, 0]),
        ];
        let (mut by_ref, mut by_vec) = (StackLists::default(), StackLists::default());
        for (frames, bounds) in batches {
            let want = by_ref.intern_batch(&f(frames), bounds);
            let got = by_vec.intern_batch_vec(f(frames), bounds);
            assert_eq!(got, want);
        }
        assert_eq!(by_vec.len(), 5);
        assert_eq!(by_vec.frames, by_ref.frames);
        assert_eq!(by_vec.starts, by_ref.starts);
        assert_eq!(by_vec.next, by_ref.next);
        assert_eq!(by_vec.frames(StackId(2)), &f(&[4, 5])[..]);
        assert_eq!(by_vec.frames(StackId(4)), &f(&[7])[..]);
    }

    #[test]
    fn lists_chained_under_one_hash_are_found() {
        let mut l = StackLists::default();
        let a = l.intern(&[FrameId(7)]).unwrap();
        let b = l.intern(&[FrameId(8)]).unwrap();
        // As if both lists had the same hash: [7]'s hash leads to [8], which chains to [7].
        l.by_hash.insert(hash_of(&[FrameId(7)]), b.0);
        l.next[b.0 as usize] = a.0;
        assert_eq!(l.intern(&[FrameId(7)]), Some(a));
        assert_eq!(l.intern(&[FrameId(8)]), Some(b));
        assert_eq!(l.len(), 2);
    }
}
