//! Interned strings. Index 0 is always the empty string, as in pprof.

/// Index of a string in a [`StringTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StringId(pub u32);

impl StringId {
    /// The empty string.
    pub const EMPTY: StringId = StringId(0);

    /// True for the empty string.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// A table of unique strings, their texts one after the other in one buffer (no allocation
/// per string). The index is open addressing over 4-byte slots holding a string id + 1 (0:
/// empty) with hash bits above it, the key read from the buffer, so no text is stored twice.
#[derive(Debug, Clone)]
pub struct StringTable {
    text: String,
    /// String `i` is `text[ends[i - 1]..ends[i]]` (`ends[0]` is 0: the empty string).
    ends: Vec<usize>,
    slots: Vec<u32>,
    /// How many strings the slots index (a replica indexes none; see `extend_unindexed`).
    indexed: usize,
}

/// The strings a [`StringTable`] gained since some length (see `StringTable::tail`): their
/// texts one after the other, and where each ends.
#[derive(Debug, Clone, Default)]
pub(super) struct StringsTail {
    text: String,
    ends: Vec<usize>,
}

impl Default for StringTable {
    fn default() -> Self {
        let mut t = StringTable { text: String::new(), ends: vec![0], slots: Vec::new(), indexed: 0 };
        t.reindex();
        t
    }
}

fn hash_text(s: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(s)
}

impl StringTable {
    fn home(&self, h: u64) -> usize {
        // The high bits of the product: Fx's low bits alone are weak for short keys.
        let bits = self.slots.len().trailing_zeros();
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// The hash bits a slot of a string with hash `h` keeps above its id (the table never
    /// holds as many strings as slots, so an id + 1 fits below them).
    fn tag(&self, h: u64) -> u32 {
        let bits = self.slots.len().trailing_zeros();
        if bits >= 32 { 0 } else { ((h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32) << bits }
    }

    fn id_mask(&self) -> u32 {
        let bits = self.slots.len().trailing_zeros();
        if bits >= 32 { u32::MAX } else { (1u32 << bits) - 1 }
    }

    /// The text of string `i` (which exists).
    fn text_of(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// The id of `s` (whose hash is `h`), or the empty slot where it would go. A slot whose
    /// hash bits differ is passed without reading its string.
    fn find(&self, s: &str, h: u64) -> Result<StringId, usize> {
        let mask = self.slots.len() - 1;
        let (tag, ids) = (self.tag(h), self.id_mask());
        let mut i = self.home(h);
        loop {
            let v = self.slots[i];
            if v == 0 {
                return Err(i);
            }
            if v & !ids == tag && self.text_of((v & ids) as usize - 1) == s {
                return Ok(StringId((v & ids) - 1));
            }
            i = (i + 1) & mask;
        }
    }

    /// Indexes every string, with room to grow.
    fn reindex(&mut self) {
        let n = self.len();
        let mut cap = self.slots.len().max(64);
        while (n + 1) * 5 > cap * 4 {
            cap *= 2;
        }
        self.slots = Vec::new();
        self.slots = vec![0; cap];
        let mask = cap - 1;
        for k in 0..n {
            let h = hash_text(self.text_of(k));
            let mut i = self.home(h);
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = self.tag(h) | (k as u32 + 1);
        }
        self.indexed = n;
    }

    /// A table of the strings in `text`, string `k + 1` ending at `ends[k]` (after "", id 0;
    /// `ends` ascending), indexed at once: the table that interning them one by one makes,
    /// when they are distinct and none is empty (which is not checked).
    ///
    /// # Panics
    /// If an end is past the text or not on a character boundary, or `ends` descends.
    pub fn from_concatenated(text: String, ends: &[usize]) -> StringTable {
        let mut all = Vec::with_capacity(ends.len() + 1);
        all.push(0);
        all.extend_from_slice(ends);
        let mut t = StringTable { text, ends: all, slots: Vec::new(), indexed: 0 };
        // As `reindex` does, with the hashes worked out in parallel first and the slot of the
        // string some way ahead fetched early (the same slots, in the same order).
        use rayon::prelude::*;
        let n = t.ends.len();
        let mut cap = 64;
        while (n + 1) * 5 > cap * 4 {
            cap *= 2;
        }
        t.slots = vec![0; cap];
        // Each string's home slot and the slot value it is stored as (its hash bits above id + 1).
        let homes: Vec<(u32, u32)> = (0..n)
            .into_par_iter()
            .with_min_len(1 << 12)
            .map(|k| {
                let h = hash_text(t.text_of(k));
                (t.home(h) as u32, t.tag(h) | (k as u32 + 1))
            })
            .collect();
        let mask = cap - 1;
        for k in 0..n {
            if let Some(&(ahead, _)) = homes.get(k + 16) {
                crate::model::tables::prefetch(&t.slots[ahead as usize]);
            }
            let (home, value) = homes[k];
            let mut i = home as usize;
            while t.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            t.slots[i] = value;
        }
        t.indexed = n;
        t
    }

    /// Interns `s`, returning its id (the same id for the same text).
    pub fn intern(&mut self, s: &str) -> StringId {
        if self.indexed != self.len() {
            self.reindex();
        }
        let h = hash_text(s);
        match self.find(s, h) {
            Ok(id) => id,
            Err(slot) => {
                let id = StringId(u32::try_from(self.len()).expect("fewer than 2^32 strings"));
                self.text.push_str(s);
                self.ends.push(self.text.len());
                if (self.len() + 1) * 5 > self.slots.len() * 4 {
                    self.reindex();
                } else {
                    self.slots[slot] = self.tag(h) | (id.0 + 1);
                    self.indexed += 1;
                }
                id
            }
        }
    }

    /// The text of `id`. An id from another table may give any string or "".
    pub fn get(&self, id: StringId) -> &str {
        let i = id.0 as usize;
        if i < self.ends.len() { self.text_of(i) } else { "" }
    }

    /// Fetches early (a hint) where string `id` ends, which [`StringTable::get`] reads first.
    pub fn prefetch(&self, id: StringId) {
        if let Some(end) = self.ends.get(id.0 as usize) {
            crate::model::tables::prefetch(end);
        }
    }

    /// The id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<StringId> {
        if self.indexed == self.len() {
            return self.find(s, hash_text(s)).ok();
        }
        // A replica (never interned into) is not indexed: read it through.
        (0..self.len()).find(|&i| self.text_of(i) == s).map(|i| StringId(i as u32))
    }

    /// Number of strings, including "".
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The strings from index `from` on (for a replica, see [`crate::model::Tables::delta_since`]).
    pub(super) fn tail(&self, from: usize) -> StringsTail {
        let from = from.clamp(1, self.len());
        let base = self.ends[from - 1];
        StringsTail { text: self.text[base..].to_owned(), ends: self.ends[from..].iter().map(|&e| e - base).collect() }
    }

    /// Appends strings without indexing them (a replica is read, never interned into).
    pub(super) fn extend_unindexed(&mut self, more: StringsTail) {
        let base = self.text.len();
        self.text.push_str(&more.text);
        self.ends.extend(more.ends.iter().map(|&e| e + base));
    }

    /// Always false: the table holds at least "".
    pub fn is_empty(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_of_distinct_strings_is_the_one_interning_them_makes() {
        let texts: Vec<String> = (0..3_000).map(|i| format!("t{}", (i * 7919) % 3_000)).collect();
        let mut ends = Vec::new();
        let mut text = String::new();
        for s in &texts {
            text.push_str(s);
            ends.push(text.len());
        }
        let mut t = StringTable::from_concatenated(text, &ends);
        let mut u = StringTable::default();
        for s in &texts {
            u.intern(s);
        }
        assert_eq!(t.len(), u.len());
        for (i, s) in texts.iter().enumerate() {
            let id = StringId(i as u32 + 1);
            assert_eq!((t.get(id), t.lookup(s)), (s.as_str(), Some(id)));
            assert_eq!(u.get(id), s);
        }
        assert_eq!(t.lookup(""), Some(StringId::EMPTY));
        assert_eq!(t.intern("t5"), t.lookup("t5").unwrap());
        assert_eq!(t.intern("new"), StringId(3_001));
    }

    #[test]
    fn interning_gives_one_id_per_text_across_growth() {
        let mut t = StringTable::default();
        assert_eq!(t.intern(""), StringId::EMPTY);
        let ids: Vec<StringId> = (0..5_000).map(|i| t.intern(&format!("s{i}"))).collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(id.0 as usize, i + 1);
            assert_eq!(t.intern(&format!("s{i}")), *id);
            assert_eq!(t.get(*id), format!("s{i}"));
            assert_eq!(t.lookup(&format!("s{i}")), Some(*id));
        }
        assert_eq!(t.lookup("absent"), None);
        assert_eq!(t.len(), 5_001);
        assert!(t.slots.len() * 4 >= t.len() * 5);
        // Slots keep hash bits above the id.
        assert!(t.slots.iter().any(|&s| s & !t.id_mask() != 0));
        assert_eq!(t.slots.iter().filter(|&&s| s != 0).count(), t.len());
        // A replica fed without indexing still finds its strings, and indexes them when interned into.
        let mut r = StringTable::default();
        r.extend_unindexed(t.tail(1));
        assert_eq!(r.lookup("s42"), Some(StringId(43)));
        assert_eq!(r.intern("s42"), StringId(43));
        assert_eq!(r.intern("new"), StringId(5_001));
    }
}
