//! The merge's own interned tables: mappings, frames and labels keyed by content, and stacks
//! as frame lists in an arena found again by their hash.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use crate::model::annotate::{Annotation, AnnotationState, FrameClass, classify_frames};
use crate::model::{StringId, Tables};

/// A mapping's identity in a merge (pprof's mapping key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct MapKey {
    pub(super) build_id: Box<[u8]>,
    /// File name when there is no build id, else empty.
    pub(super) path: StringId,
    pub(super) offset: u64,
    /// Size rounded up to 4 KiB.
    pub(super) size: u64,
}

#[derive(Debug, Clone)]
pub(super) struct MMap {
    pub(super) key: MapKey,
    pub(super) path: StringId,
    pub(super) start: u64,
    pub(super) size: u64,
}

/// A frame's identity in a merge: the address is relative to the mapping's start when it lies
/// inside the mapping (`abs`), as written otherwise. Its lines are `lines_len` lines from
/// `lines_at` in the merger's line arena (frames are compared by those lines' content).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct MFrame {
    pub(super) mapping: Option<u32>,
    pub(super) abs: bool,
    pub(super) addr: u64,
    pub(super) name: StringId,
    pub(super) raw: StringId,
    pub(super) lines_at: u32,
    pub(super) lines_len: u32,
}

impl MFrame {
    /// The fields that identify a frame besides its lines (equal when those are equal).
    pub(super) fn head(&self) -> (Option<u32>, bool, u64, StringId, StringId) {
        (self.mapping, self.abs, self.addr, self.name, self.raw)
    }
}

/// One label of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum MLabel {
    Num(StringId, i64, StringId),
    Str(StringId, StringId),
}

pub(super) const UNSET: u32 = u32::MAX;

/// What the merge remembers of the input it is reading, so that several profiles of one input
/// (dumps sharing their tables) map each string, mapping, frame and stack node once.
pub(super) struct Memo {
    pub(super) tables: Arc<Tables>,
    pub(super) annotate: bool,
    pub(super) strings: Vec<u32>,
    pub(super) mappings: Vec<(u32, u64, u64)>,
    pub(super) frames: Vec<u32>,
    pub(super) annotated_frames: HashMap<(u32, Annotation), u32>,
    pub(super) classes: Vec<FrameClass>,
    /// Per stack node of a tree profile: the merged frame and the annotation state below it.
    pub(super) nodes: Vec<u32>,
    pub(super) states: Vec<AnnotationState>,
}

impl Memo {
    pub(super) fn new(tables: Arc<Tables>, annotate: bool) -> Memo {
        let classes = if annotate { classify_frames(&tables) } else { Vec::new() };
        Memo {
            strings: vec![UNSET; tables.strings.len()],
            mappings: vec![(UNSET, 0, 0); tables.mappings().len()],
            frames: vec![UNSET; tables.frames().len()],
            annotated_frames: HashMap::default(),
            classes,
            nodes: Vec::new(),
            states: Vec::new(),
            tables,
            annotate,
        }
    }
}

/// Interned frame lists: each distinct list is stored once in an arena and found again by
/// its content (open addressing on a 64-bit hash, the content compared on a match).
#[derive(Debug, Default)]
pub(super) struct SeqIndex {
    pub(super) arena: Vec<u32>,
    pub(super) spans: Vec<(u32, u32)>,
    pub(super) hashes: Vec<u64>,
    /// Per slot: the upper half of the hash, then id + 1 (0: empty).
    pub(super) slots: Vec<u64>,
}

pub(super) fn seq_hash(seq: &[u32]) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3 ^ seq.len() as u64;
    let mut pairs = seq.chunks_exact(2);
    for p in &mut pairs {
        let x = u64::from(p[0]) | (u64::from(p[1]) << 32);
        h = (h.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    if let [x] = pairs.remainder() {
        h = (h.rotate_left(5) ^ u64::from(*x)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    h ^ (h >> 29)
}

impl SeqIndex {
    pub(super) fn len(&self) -> usize {
        self.spans.len()
    }

    pub(super) fn get(&self, id: u32) -> &[u32] {
        let (start, len) = self.spans[id as usize];
        &self.arena[start as usize..start as usize + len as usize]
    }

    /// Makes room for `stacks` more stacks of `frames` frames in all (growing the index once).
    pub(super) fn reserve(&mut self, stacks: usize, frames: usize) {
        self.arena.reserve(frames);
        self.spans.reserve(stacks);
        self.hashes.reserve(stacks);
        while (self.spans.len() + stacks + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
    }

    /// Hints the cache to fetch the slot a stack with hash `h` is looked up in.
    pub(super) fn prefetch_slot(&self, h: u64) {
        if !self.slots.is_empty() {
            crate::model::tables::prefetch(&self.slots[(h as usize) & (self.slots.len() - 1)]);
        }
    }

    /// Hints the cache to fetch the stored stack a stack with hash `h` may equal.
    pub(super) fn prefetch_match(&self, h: u64) {
        if self.slots.is_empty() {
            return;
        }
        let s = self.slots[(h as usize) & (self.slots.len() - 1)];
        if s != 0 && s & 0xffff_ffff_0000_0000 == h & 0xffff_ffff_0000_0000 {
            let (start, _) = self.spans[(s as u32 - 1) as usize];
            crate::model::tables::prefetch(&self.arena[start as usize]);
        }
    }

    pub(super) fn intern_hashed(&mut self, seq: &[u32], h: u64) -> u32 {
        if (self.spans.len() + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let tag = h & 0xffff_ffff_0000_0000;
        let mask = self.slots.len() - 1;
        let mut i = (h as usize) & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                let id = u32::try_from(self.spans.len()).expect("fewer than 2^32 stacks");
                let start = u32::try_from(self.arena.len()).expect("fewer than 2^32 frames in stacks");
                self.arena.extend_from_slice(seq);
                self.spans.push((start, seq.len() as u32));
                self.hashes.push(h);
                self.slots[i] = tag | u64::from(id + 1);
                return id;
            }
            if s & 0xffff_ffff_0000_0000 == tag {
                let id = (s as u32) - 1;
                if self.get(id) == seq {
                    return id;
                }
            }
            i = (i + 1) & mask;
        }
    }

    pub(super) fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(1024);
        self.slots = vec![0; cap];
        let mask = cap - 1;
        for (id, &h) in self.hashes.iter().enumerate() {
            let mut i = (h as usize) & mask;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (h & 0xffff_ffff_0000_0000) | (id as u64 + 1);
        }
    }
}
/// The merge's frame index: frame ids found again by their hash (open addressing, as
/// [`SeqIndex`]); the frames themselves are stored by the merger, which compares a candidate's
/// content.
#[derive(Debug, Default)]
pub(super) struct FrameIndex {
    /// Per frame: its hash (to grow the index).
    hashes: Vec<u64>,
    /// Per slot: the upper half of the hash, then id + 1 (0: empty).
    slots: Vec<u64>,
}

impl FrameIndex {
    /// Makes room for `frames` more frames (growing the index once).
    pub(super) fn reserve(&mut self, frames: usize) {
        self.hashes.reserve(frames);
        while (self.hashes.len() + frames + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
    }

    /// Hints the cache to fetch the slot a frame with hash `h` is looked up in.
    pub(super) fn prefetch(&self, h: u64) {
        if !self.slots.is_empty() {
            crate::model::tables::prefetch(&self.slots[(h as usize) & (self.slots.len() - 1)]);
        }
    }

    /// The frame with hash `h` for which `eq` holds, or the empty slot where it would go.
    #[inline]
    pub(super) fn probe(&self, h: u64, mut eq: impl FnMut(u32) -> bool) -> Result<u32, usize> {
        if self.slots.is_empty() {
            return Err(usize::MAX);
        }
        let tag = h & 0xffff_ffff_0000_0000;
        let mask = self.slots.len() - 1;
        let mut i = (h as usize) & mask;
        loop {
            let v = self.slots[i];
            if v == 0 {
                return Err(i);
            }
            if v & 0xffff_ffff_0000_0000 == tag && eq((v as u32) - 1) {
                return Ok((v as u32) - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Whether one more frame needs the index grown first (then [`FrameIndex::probe`] again).
    pub(super) fn full(&self) -> bool {
        (self.hashes.len() + 1) * 4 > self.slots.len() * 3
    }

    /// Adds frame `id` (the next id: as many as frames added so far) with hash `h` at `slot`,
    /// the empty slot [`FrameIndex::probe`] gave (the index not full).
    pub(super) fn insert_at(&mut self, slot: usize, h: u64, id: u32) {
        debug_assert_eq!(id as usize, self.hashes.len());
        self.hashes.push(h);
        self.slots[slot] = (h & 0xffff_ffff_0000_0000) | u64::from(id + 1);
    }

    pub(super) fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(1024);
        self.slots = vec![0; cap];
        let mask = cap - 1;
        for (id, &h) in self.hashes.iter().enumerate() {
            let mut i = (h as usize) & mask;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (h & 0xffff_ffff_0000_0000) | (id as u64 + 1);
        }
    }
}

pub(super) fn round_4k(size: u64) -> u64 {
    size.saturating_add(0xfff) & !0xfff
}

/// The merge's strings: every distinct text once, one after the other in one buffer (no
/// allocation per string), found again by content (open addressing on a 64-bit hash, as
/// [`SeqIndex`]). Id 0 is the empty string, as in [`crate::model::StringTable`].
#[derive(Debug)]
pub(super) struct MStrings {
    text: String,
    /// String `i` is `text[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<usize>,
    hashes: Vec<u64>,
    /// Per slot: the upper half of the hash, then id + 1 (0: empty).
    slots: Vec<u64>,
}

impl Default for MStrings {
    fn default() -> Self {
        MStrings { text: String::new(), offsets: vec![0, 0], hashes: vec![0], slots: Vec::new() }
    }
}

fn str_hash(s: &str) -> u64 {
    use std::hash::BuildHasher;
    let h = rustc_hash::FxBuildHasher.hash_one(s).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 32)
}

impl MStrings {
    /// Number of strings, "" included.
    pub(super) fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The text of `id` ("" for an id this table did not give).
    pub(super) fn get(&self, id: StringId) -> &str {
        let i = id.0 as usize;
        if i + 1 >= self.offsets.len() {
            return "";
        }
        &self.text[self.offsets[i]..self.offsets[i + 1]]
    }

    /// The length of string `id` in bytes (0 for an id this table did not give), its text not
    /// read.
    pub(super) fn len_of(&self, id: StringId) -> usize {
        let i = id.0 as usize;
        if i + 1 >= self.offsets.len() { 0 } else { self.offsets[i + 1] - self.offsets[i] }
    }

    /// Fetches early (a hint) where string `id` lies, which [`MStrings::get`] reads first.
    pub(super) fn prefetch_offsets(&self, id: StringId) {
        if let Some(o) = self.offsets.get(id.0 as usize + 1) {
            crate::model::tables::prefetch(o);
        }
    }

    /// Fetches early (a hint) the text of string `id` (its offsets read, as
    /// [`MStrings::prefetch_offsets`] fetches them).
    pub(super) fn prefetch_text(&self, id: StringId) {
        let i = id.0 as usize;
        if let Some(&at) = self.offsets.get(i).filter(|_| i + 1 < self.offsets.len()) {
            if let Some(b) = self.text.as_bytes().get(at) {
                crate::model::tables::prefetch(b);
            }
        }
    }

    /// Makes room for `strings` more strings of `bytes` bytes in all.
    pub(super) fn reserve(&mut self, strings: usize, bytes: usize) {
        self.text.reserve(bytes);
        self.offsets.reserve(strings);
        self.hashes.reserve(strings);
        while (self.len() + strings + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
    }

    /// Interns `s`: the same id for the same text.
    pub(super) fn intern(&mut self, s: &str) -> StringId {
        if s.is_empty() {
            return StringId::EMPTY;
        }
        self.intern_hashed(s, str_hash(s))
    }

    /// Interns every string of `list` in turn (ids in `ids`, "" as 0), the slot of the string
    /// some way ahead fetched early.
    pub(super) fn intern_all<S: AsRef<str>>(&mut self, list: &[S], ids: &mut [u32]) {
        let bytes: usize = list.iter().map(|s| s.as_ref().len()).sum();
        self.reserve(list.len(), bytes);
        let hashes: Vec<u64> = list.iter().map(|s| str_hash(s.as_ref())).collect();
        let mask = self.slots.len() - 1;
        for (i, s) in list.iter().enumerate() {
            if let Some(&h) = hashes.get(i + 16) {
                crate::model::tables::prefetch(&self.slots[(h as usize) & mask]);
            }
            let s = s.as_ref();
            ids[i] = if s.is_empty() { 0 } else { self.intern_hashed(s, hashes[i]).0 };
        }
    }

    /// Interns string `id` of `other` (its hash is known already).
    pub(super) fn intern_from(&mut self, other: &MStrings, id: StringId) -> StringId {
        match other.hashes.get(id.0 as usize) {
            Some(&h) if !id.is_empty() => self.intern_hashed(other.get(id), h),
            _ => StringId::EMPTY,
        }
    }

    /// The id of string `id` of `other` in this table, if it holds that text (its hash is
    /// known already).
    pub(super) fn find_from(&self, other: &MStrings, id: StringId) -> Option<StringId> {
        let h = *other.hashes.get(id.0 as usize)?;
        if id.is_empty() || self.slots.is_empty() {
            return None;
        }
        self.probe(other.get(id), h).ok()
    }

    /// Per string of `other`: its id in this table if this table holds that text, else
    /// [`UNSET`] ("" as 0). Looked up in parallel, in chunks whose lookups some way ahead have
    /// their slot, then their candidate's text, fetched early.
    pub(super) fn find_all_from(&self, other: &MStrings) -> Vec<u32> {
        use crate::model::tables::prefetch;
        use rayon::prelude::*;
        const CHUNK: usize = 1 << 12;
        let mut ids = vec![UNSET; other.len()];
        if self.slots.is_empty() {
            ids[0] = 0;
            return ids;
        }
        let mask = self.slots.len() - 1;
        let slot_of = |id: usize| (other.hashes[id] as usize) & mask;
        ids.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
            let base = c * CHUNK;
            let end = base + chunk.len();
            for (k, out) in chunk.iter_mut().enumerate() {
                let id = base + k;
                if id + 16 < end {
                    prefetch(&self.slots[slot_of(id + 16)]);
                }
                if id + 8 < end {
                    let v = self.slots[slot_of(id + 8)];
                    if v != 0 {
                        prefetch(&self.offsets[(v as u32 - 1) as usize]);
                    }
                }
                if id + 4 < end {
                    let v = self.slots[slot_of(id + 4)];
                    if v != 0 {
                        let at = self.offsets[(v as u32 - 1) as usize];
                        if at < self.text.len() {
                            prefetch(&self.text.as_bytes()[at]);
                        }
                    }
                }
                *out = self.find_from(other, StringId(id as u32)).map_or(UNSET, |s| s.0);
            }
        });
        ids[0] = 0;
        ids
    }

    /// Where text `s` (hash `h`) is: its id, or the empty slot where it would go.
    #[inline]
    fn probe(&self, s: &str, h: u64) -> Result<StringId, usize> {
        let tag = h & 0xffff_ffff_0000_0000;
        let mask = self.slots.len() - 1;
        let mut i = (h as usize) & mask;
        loop {
            let v = self.slots[i];
            if v == 0 {
                return Err(i);
            }
            if v & 0xffff_ffff_0000_0000 == tag {
                let id = StringId((v as u32) - 1);
                if self.get(id) == s {
                    return Ok(id);
                }
            }
            i = (i + 1) & mask;
        }
    }

    fn intern_hashed(&mut self, s: &str, h: u64) -> StringId {
        if (self.len() + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        match self.probe(s, h) {
            Ok(id) => id,
            Err(slot) => {
                let id = u32::try_from(self.len()).expect("fewer than 2^32 strings");
                self.text.push_str(s);
                self.offsets.push(self.text.len());
                self.hashes.push(h);
                self.slots[slot] = (h & 0xffff_ffff_0000_0000) | u64::from(id + 1);
                StringId(id)
            }
        }
    }

    fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(1024);
        self.slots = vec![0; cap];
        let mask = cap - 1;
        // Id 0 ("") is never looked up.
        for (id, &h) in self.hashes.iter().enumerate().skip(1) {
            let mut i = (h as usize) & mask;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (h & 0xffff_ffff_0000_0000) | (id as u64 + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_index_finds_each_frame_after_growing_and_gives_empty_slots_for_others() {
        let mut index = FrameIndex::default();
        // Many frames on few hashes' slots: collisions and growth both happen.
        let hash = |k: u32| u64::from(k % 300).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(k) << 40);
        for k in 0..5000u32 {
            if index.full() {
                index.grow();
            }
            let slot = index.probe(hash(k), |id| id == k).unwrap_err();
            index.insert_at(slot, hash(k), k);
        }
        for k in 0..5000u32 {
            assert_eq!(index.probe(hash(k), |id| id == k), Ok(k));
        }
        // A frame equal to none: not found, whatever its hash.
        assert!(index.probe(hash(7), |_| false).is_err());
        assert!(FrameIndex::default().probe(1, |_| true).is_err());
    }

    #[test]
    fn strings_are_interned_once_and_found_after_growing() {
        let mut a = MStrings::default();
        assert_eq!(a.intern(""), StringId::EMPTY);
        let ids: Vec<StringId> = (0..5000).map(|i| a.intern(&format!("fn{i}"))).collect();
        assert_eq!(a.len(), 5001);
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(id, StringId(i as u32 + 1));
            assert_eq!(a.get(id), format!("fn{i}"));
            assert_eq!(a.intern(&format!("fn{i}")), id);
        }
        assert_eq!(a.get(StringId(9999)), "");
        let mut b = MStrings::default();
        let x = b.intern("fn42");
        let y = b.intern("other");
        assert_eq!(a.intern_from(&b, x), ids[42]);
        assert_eq!(a.intern_from(&b, y), StringId(5001));
        assert_eq!(a.get(StringId(5001)), "other");
        assert_eq!(a.intern_from(&b, StringId::EMPTY), StringId::EMPTY);
    }
}
