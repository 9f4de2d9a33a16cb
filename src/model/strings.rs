//! Interned strings. Index 0 is always the empty string, as in pprof.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

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

/// A table of unique strings; each is stored once (the list and the index share it, and so do
/// the replicas of [`crate::model::Tables::delta_since`]).
#[derive(Debug, Clone)]
pub struct StringTable {
    strings: Vec<Arc<str>>,
    index: HashMap<Arc<str>, StringId>,
}

impl Default for StringTable {
    fn default() -> Self {
        let mut t = StringTable { strings: Vec::new(), index: HashMap::default() };
        let empty: Arc<str> = "".into();
        t.strings.push(Arc::clone(&empty));
        t.index.insert(empty, StringId::EMPTY);
        t
    }
}

impl StringTable {
    /// Interns `s`, returning its id (the same id for the same text).
    pub fn intern(&mut self, s: &str) -> StringId {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = StringId(u32::try_from(self.strings.len()).expect("fewer than 2^32 strings"));
        let text: Arc<str> = s.into();
        self.strings.push(Arc::clone(&text));
        self.index.insert(text, id);
        id
    }

    /// The text of `id`. An id from another table may give any string or "".
    pub fn get(&self, id: StringId) -> &str {
        self.strings.get(id.0 as usize).map(|s| &**s).unwrap_or("")
    }

    /// The id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<StringId> {
        self.index.get(s).copied()
    }

    /// Number of strings, including "".
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// The strings from index `from` on (for a replica, see [`crate::model::Tables::delta_since`]).
    pub(super) fn tail(&self, from: usize) -> &[Arc<str>] {
        &self.strings[from.min(self.strings.len())..]
    }

    /// Appends strings without indexing them (a replica is read, never interned into).
    pub(super) fn extend_unindexed(&mut self, more: Vec<Arc<str>>) {
        self.strings.extend(more);
    }

    /// Always false: the table holds at least "".
    pub fn is_empty(&self) -> bool {
        false
    }
}
