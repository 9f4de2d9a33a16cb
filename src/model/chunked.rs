//! An append-only vector stored in fixed-size chunks behind `Arc`s, so that a replica on
//! another thread can share every full chunk instead of copying it.

use std::sync::Arc;

const SHIFT: usize = 16;
const CHUNK: usize = 1 << SHIFT;
const MASK: usize = CHUNK - 1;

/// Append-only storage in chunks of 65,536 elements. Cloning it, or taking the elements
/// added since some length ([`ChunkedVec::tail_from`]), shares the chunks: only a partly
/// filled last chunk is ever copied, when the vector that shares it grows.
#[derive(Debug, Clone)]
pub(crate) struct ChunkedVec<T> {
    chunks: Vec<Arc<Vec<T>>>,
    len: usize,
}

impl<T> Default for ChunkedVec<T> {
    fn default() -> Self {
        ChunkedVec { chunks: Vec::new(), len: 0 }
    }
}

/// The chunks of a [`ChunkedVec`] from some length on (see [`ChunkedVec::tail_from`]).
#[derive(Debug, Clone)]
pub(crate) struct ChunkedTail<T> {
    first_chunk: usize,
    chunks: Vec<Arc<Vec<T>>>,
    len: usize,
}

impl<T> Default for ChunkedTail<T> {
    fn default() -> Self {
        ChunkedTail { first_chunk: 0, chunks: Vec::new(), len: 0 }
    }
}

impl<T: Clone> ChunkedVec<T> {
    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Element `i` (panics when out of range: every chunk holds exactly its elements).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &T {
        &self.chunks[i >> SHIFT][i & MASK]
    }

    /// Appends `v`.
    pub(crate) fn push(&mut self, v: T) {
        self.last_chunk().push(v);
        self.len += 1;
    }

    /// The chunk the next element goes to, owned (a new one when the last is full, a copy of
    /// the last when a replica shares it).
    fn last_chunk(&mut self) -> &mut Vec<T> {
        if self.len & MASK == 0 {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
        }
        let last = self.chunks.last_mut().expect("a chunk");
        if Arc::get_mut(last).is_none() {
            // Shared with a replica: copy the partial chunk, with room for a whole one.
            let mut own = Vec::with_capacity(CHUNK);
            own.extend_from_slice(last);
            *last = Arc::new(own);
        }
        Arc::get_mut(last).expect("unshared")
    }

    /// Appends every element of `items`, in order: as [`ChunkedVec::push`] on each, with one
    /// ownership check per chunk instead of one per element.
    pub(crate) fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            let room = CHUNK - (self.len & MASK);
            let chunk = self.last_chunk();
            let before = chunk.len();
            chunk.extend(items.by_ref().take(room));
            let added = chunk.len() - before;
            self.len += added;
        }
    }

    /// Elements `start..end`, in order.
    pub(crate) fn range(&self, start: usize, end: usize) -> impl Iterator<Item = &T> + Clone + '_ {
        (start..end.min(self.len)).map(move |i| &self.chunks[i >> SHIFT][i & MASK])
    }

    /// What was added from length `start` on, sharing the chunks.
    pub(crate) fn tail_from(&self, start: usize) -> ChunkedTail<T> {
        let start = start.min(self.len);
        let first_chunk = start >> SHIFT;
        ChunkedTail { first_chunk, chunks: self.chunks[first_chunk.min(self.chunks.len())..].to_vec(), len: self.len }
    }

    /// Brings a replica that holds the first `tail.first_chunk` chunks (or more) up to the
    /// source's length.
    pub(crate) fn apply_tail(&mut self, tail: ChunkedTail<T>) {
        if tail.len <= self.len {
            return;
        }
        self.chunks.truncate(tail.first_chunk);
        self.chunks.extend(tail.chunks);
        self.len = tail.len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_shares_full_chunks_and_reads_like_the_source() {
        let mut src: ChunkedVec<u32> = ChunkedVec::default();
        let mut replica: ChunkedVec<u32> = ChunkedVec::default();
        let mut mark = 0;
        for round in 0..5u32 {
            for i in 0..(CHUNK as u32 / 2 + 123) {
                src.push(round * 1_000_000 + i);
            }
            replica.apply_tail(src.tail_from(mark));
            mark = src.len();
            assert_eq!(replica.len(), src.len());
            for i in (0..src.len()).step_by(997).chain([src.len() - 1]) {
                assert_eq!(replica.get(i), src.get(i));
            }
        }
        // Full chunks are shared, not copied.
        assert!(Arc::ptr_eq(&src.chunks[0], &replica.chunks[0]));
        // The source's writes after sharing do not show in the replica.
        let before = replica.len();
        src.push(7);
        assert_eq!(replica.len(), before);
        assert_eq!(*src.get(before), 7);
        assert_eq!(src.range(before - 1, before + 1).count(), 2);
    }

    #[test]
    fn extend_reads_like_pushes_across_chunks_and_shared_tails() {
        let mut one: ChunkedVec<u32> = ChunkedVec::default();
        let mut many: ChunkedVec<u32> = ChunkedVec::default();
        let mut next = 0u32;
        // Runs that end inside a chunk, exactly at its end, and span several chunks; a
        // replica shares the partial chunk between runs.
        for run in [5, CHUNK - 5, CHUNK, 1, 2 * CHUNK + 17, 0, CHUNK - 18] {
            let _shared = many.tail_from(0);
            for _ in 0..run {
                one.push(next);
                next += 1;
            }
            let start = next - run as u32;
            many.extend(start..next);
            assert_eq!(many.len(), one.len());
            assert_eq!(many.chunks.len(), one.chunks.len());
        }
        for i in 0..one.len() {
            assert_eq!(many.get(i), one.get(i));
        }
        assert_eq!(*many.get(many.len() - 1), next - 1);
    }
}
