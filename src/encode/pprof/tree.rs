//! The encoder of stack-tree profiles ([`Profile`]): a location per (frame, annotation),
//! each stack's location list computed once and kept across the profiles of one input.

use super::*;

/// A pprof encoder for the profiles of one input (which share growing [`crate::model::Tables`]).
///
/// Location ids are given once per (frame, annotation) and kept across the profiles it encodes,
/// as traceconv numbers them per trace, and the location list of every stack is computed once:
/// the dumps of a continuous trace repeat the same stacks, so later dumps cost little more than
/// copying. Function, mapping and string ids are per profile, and only what a profile uses is
/// written. Use one encoder per decoded input; the output depends only on the profiles given
/// to it, in order.
#[derive(Debug)]
pub struct PprofEncoder {
    opts: PprofOptions,
    classes: Vec<FrameClass>,
    /// Per stack node: its annotation and the annotation state for its children, one byte.
    node_ann: Vec<NodeAnn>,
    locs: Vec<(FrameId, Annotation)>,
    /// Location id of each frame without annotation (0: none yet).
    plain_loc: Vec<u32>,
    /// Location ids of annotated frames.
    loc_index: HashMap<(FrameId, Annotation), u32>,
    paths: PathIndex,
    arena: Vec<u8>,
    catalog: Catalog,
    /// The sample and location buffers of the last streamed profile, for the next one.
    spare: (Vec<u8>, Vec<u8>),
    /// Per location id, whether the profile being encoded uses it (kept for the next one).
    used: Vec<u8>,
    /// Per sample of the profile being encoded: where its path lies in the arena (kept for
    /// the next one).
    spans: Vec<(u32, u32)>,
    /// The stacks and used locations of the last profiles of a few (pid, heap) keys, most
    /// recent last.
    marked: Vec<Marked>,
    /// Per sample of the profile being encoded: whether its stack was in the earlier profile.
    known: Vec<bool>,
}

/// How many (pid, heap) keys [`PprofEncoder`] remembers the used locations of.
pub(super) const MARKED_PROFILES: usize = 8;

/// The stacks (increasing) of a profile and the locations they use (`used[id]` = 1).
#[derive(Debug, Default)]
pub(super) struct Marked {
    key: (Option<u64>, String),
    stacks: Vec<StackId>,
    used: Vec<u8>,
}

/// Whether every stack of `earlier` (increasing) is a stack of `profile`, whose stacks must
/// increase too; `known[i]` is then whether sample i's stack is one of them.
pub(super) fn stacks_include(profile: &Profile, earlier: &[StackId], known: &mut Vec<bool>) -> bool {
    known.clear();
    let n = profile.sample_count();
    if earlier.len() > n {
        return false;
    }
    let mut k = 0;
    for i in 0..n {
        let s = profile.sample(i).0;
        if i > 0 && profile.sample(i - 1).0 >= s {
            return false;
        }
        if k < earlier.len() && earlier[k] < s {
            // A stack of the earlier profile this one does not have.
            return false;
        }
        let found = k < earlier.len() && earlier[k] == s;
        k += usize::from(found);
        known.push(found);
    }
    k == earlier.len()
}

impl PprofEncoder {
    /// An encoder with `opts`.
    pub fn new(opts: PprofOptions) -> Self {
        PprofEncoder {
            opts,
            classes: Vec::new(),
            node_ann: Vec::new(),
            locs: Vec::new(),
            plain_loc: Vec::new(),
            loc_index: HashMap::default(),
            paths: PathIndex::default(),
            arena: Vec::new(),
            catalog: Catalog::default(),
            spare: (Vec::new(), Vec::new()),
            used: Vec::new(),
            spans: Vec::new(),
            marked: Vec::new(),
            known: Vec::new(),
        }
    }

    /// Gives every stack node added since the last call its global location id, in one
    /// forward pass: a parent always comes before its children, so its annotation state is
    /// known when a child is reached.
    fn sync(&mut self, tables: &Tables) {
        if self.classes.len() < tables.frames().len() {
            let start = self.classes.len();
            self.classes.extend(classify_frames_from(tables, start));
        }
        let start = self.node_ann.len();
        let count = tables.stack_count();
        if start >= count {
            return;
        }
        // Grown by an eighth at a time at most (not doubled): this holds one entry per node.
        let want = (count - start).max(self.node_ann.len() / 8);
        if self.node_ann.capacity() < count {
            self.node_ann.reserve_exact(want);
        }
        if self.plain_loc.len() < tables.frames().len() {
            self.plain_loc.resize(tables.frames().len(), 0);
        }
        for n in start..count {
            let node = tables.stack_node(StackId(n as u32));
            let state = node.parent.map_or(AnnotationState::Initial, |p| self.node_ann[p.0 as usize].state());
            let (next, ann) = annotate_with(state, self.classes[node.frame.0 as usize]);
            let ann = if self.opts.annotations { ann } else { Annotation::None };
            // Location ids in the order nodes first use them.
            let key = (node.frame, ann);
            if ann == Annotation::None {
                let slot = &mut self.plain_loc[node.frame.0 as usize];
                if *slot == 0 {
                    self.locs.push(key);
                    *slot = u32::try_from(self.locs.len()).expect("fewer than 2^32 locations");
                }
            } else if !self.loc_index.contains_key(&key) {
                self.locs.push(key);
                let id = u32::try_from(self.locs.len()).expect("fewer than 2^32 locations");
                self.loc_index.insert(key, id);
            }
            self.node_ann.push(NodeAnn::new(ann, next));
        }
    }

    /// The location id of stack node `s` (of frame `frame`), known to [`PprofEncoder::sync`].
    #[inline]
    fn node_location(&self, s: StackId, frame: FrameId) -> u32 {
        match self.node_ann[s.0 as usize].annotation() {
            Annotation::None => self.plain_loc[frame.0 as usize],
            ann => self.loc_index[&(frame, ann)],
        }
    }

    /// The packed location ids of `stack`, leaf first, as (offset, length) in the arena.
    fn path(&mut self, tables: &Tables, stack: StackId) -> (usize, usize) {
        if let Some((off, len)) = self.paths.get(stack.0) {
            return (off as usize, len as usize);
        }
        let off = self.arena.len();
        // Grown by an eighth at a time (not doubled): the arena is one of the largest tables.
        if self.arena.capacity() - off < 4096 {
            self.arena.reserve_exact((off / 8).max(1 << 20));
        }
        let mut cur = Some(stack);
        while let Some(s) = cur {
            let node = tables.stack_node(s);
            let loc = self.node_location(s, node.frame);
            put_varint(&mut self.arena, u64::from(loc));
            cur = node.parent;
        }
        let len = self.arena.len() - off;
        self.paths.insert(stack.0, u32::try_from(off).expect("arena under 4 GiB"), len as u32);
        (off, len)
    }

    /// Does ahead of time the per-stack work of encoding profiles that will use `stacks`
    /// (stacks of `tables`, or of tables that extend them): location ids and location lists.
    /// The output is the same as without it.
    /// The catalog entries of the new locations (their functions, strings and mapping) are
    /// made here too, so the first profile that uses them only numbers them.
    pub fn prepare(&mut self, tables: &Tables, stacks: &[StackId]) {
        let known = self.locs.len();
        self.sync(tables);
        for id in known..self.locs.len() {
            let (frame, ann) = self.locs[id];
            self.catalog.entry(tables, &self.opts, id + 1, frame, ann);
        }
        for &s in stacks {
            self.path(tables, s);
        }
    }

    /// Encodes a profile as uncompressed pprof bytes.
    pub fn encode(&mut self, profile: &Profile) -> Vec<u8> {
        let mut v = Vec::with_capacity(profile.sample_count() * 64);
        self.encode_to(profile, &mut v).expect("writing to memory");
        v
    }

    /// Encodes a profile as uncompressed pprof into `w`, a megabyte at a time (so that a
    /// compressor or a file can take it without the whole profile ever being in memory).
    pub fn encode_to(&mut self, profile: &Profile, w: &mut dyn Write) -> std::io::Result<()> {
        self.encode_to_with(profile, w, false)
    }

    /// [`PprofEncoder::encode_to`] for a writer whose output does not depend on where its
    /// writes fall (a file, [`crate::encode::pprof_gzip::ParallelGzWriter`]): the same bytes,
    /// with the tables after the samples written a megabyte at a time instead of in one write,
    /// so they are never all in memory at once.
    pub fn encode_streaming_to(&mut self, profile: &Profile, w: &mut dyn Write) -> std::io::Result<()> {
        self.encode_to_with(profile, w, true)
    }

    fn encode_to_with(&mut self, profile: &Profile, w: &mut dyn Write, stream: bool) -> std::io::Result<()> {
        let tables = std::sync::Arc::clone(&profile.tables);
        self.sync(&tables);
        let opts = self.opts.clone();
        // This profile's strings, functions and mappings are numbered in first-use order on top
        // of the encoder's catalog (computed once per location for every profile).
        let cat = &mut self.catalog;
        cat.begin_profile(&tables);
        let mut sample_type = Vec::new();
        for t in &profile.header.sample_types {
            let ty = cat.s_text(&tables, &t.name);
            let unit = cat.s_text(&tables, &t.unit);
            sample_type.push(pp::ValueType { r#type: ty, unit });
        }
        // Samples are the bulk of a profile: they are written straight to wire format (field 2
        // of Profile) right after the sample types; the other fields follow (a message's
        // fields may come in any order; this is traceconv's).
        let head = pp::Profile { sample_type, ..Default::default() };
        const CHUNK: usize = 1 << 20;
        // The megabyte buffers serve one profile after the other (fresh ones are fresh pages).
        let mut bytes = std::mem::take(&mut self.spare.0);
        bytes.clear();
        bytes.reserve(CHUNK + 4096);
        head.encode(&mut bytes).expect("a Vec grows as needed");
        // One byte per location id: marking is a plain store (a bit set would load, or, and
        // store the same word again and again, each waiting for the last).
        let mut used = std::mem::take(&mut self.used);
        used.clear();
        used.resize(self.locs.len() + 1, 0u8);
        // Label keys and texts: model string id -> this profile's string index.
        let mut label_keys: HashMap<StringId, i64> = HashMap::default();
        let mut labels: Vec<WireLabel> = Vec::new();
        let with_labels = profile.has_labels();
        // Two passes over the samples. The first finds where each path lies: independent
        // lookups (each a cache miss), the slot of a sample some way ahead prefetched. The
        // second copies the paths, the path of a sample some way ahead prefetched whole (its
        // first and last bytes: a path is mostly under 128 bytes).
        // (The first pass takes a few nanoseconds a sample: its prefetches go further ahead.)
        const AHEAD: usize = 16;
        const SLOTS_AHEAD: usize = 64;
        let n = profile.sample_count();
        let mut spans = std::mem::take(&mut self.spans);
        spans.clear();
        spans.reserve(n);
        for i in 0..n {
            if i + SLOTS_AHEAD < n {
                self.paths.prefetch(profile.sample(i + SLOTS_AHEAD).0.0);
            }
            let (off, len) = self.path(&tables, profile.sample(i).0);
            spans.push((off as u32, len as u32));
        }
        // The locations used: those of an earlier profile of the same process and heap whose
        // stacks this one has too (continuous dumps only add stacks), and those of the other
        // stacks; else those of every stack. `known[i]`: sample i's stack was in that profile.
        let key = (profile.header.meta.pid, profile.header.meta.heap.clone());
        let mut known = std::mem::take(&mut self.known);
        let earlier = self.marked.iter().position(|m| m.key == key);
        let start = earlier.filter(|&e| stacks_include(profile, &self.marked[e].stacks, &mut known));
        if let Some(e) = start {
            used.clear();
            used.extend_from_slice(&self.marked[e].used);
            used.resize(self.locs.len() + 1, 0);
        }
        for (i, (_, values)) in profile.samples().enumerate() {
            if let Some(&(off, len)) = spans.get(i + AHEAD)
                && len > 0
            {
                crate::model::tables::prefetch(&self.arena[off as usize]);
                crate::model::tables::prefetch(&self.arena[(off + len - 1) as usize]);
            }
            let (off, len) = (spans[i].0 as usize, spans[i].1 as usize);
            let path = &self.arena[off..off + len];
            // The path's location ids are marked used: this loop runs once per frame of every
            // sample not known from the earlier profile.
            if start.is_none() || !known[i] {
                mark_used(&self.arena, off, off + len, &mut used);
            }
            if !with_labels {
                write_plain_sample(&mut bytes, path, values);
                if bytes.len() >= CHUNK {
                    w.write_all(&bytes)?;
                    bytes.clear();
                }
                continue;
            }
            labels.clear();
            let cat = &mut self.catalog;
            let mut sid = |id: StringId| *label_keys.entry(id).or_insert_with(|| cat.s_model(&tables, id));
            for &(key, num) in profile.sample_labels(i) {
                let k = sid(key);
                let unit = profile.num_label_unit(key).map_or(0, &mut sid);
                labels.push(WireLabel { key: k, str: 0, num, num_unit: unit });
            }
            for &(key, text) in profile.sample_str_labels(i) {
                let k = sid(key);
                let t = sid(text);
                labels.push(WireLabel { key: k, str: t, num: 0, num_unit: 0 });
            }
            write_sample(&mut bytes, path, values, &labels);
            if bytes.len() >= CHUNK {
                w.write_all(&bytes)?;
                bytes.clear();
            }
        }
        self.spans = spans;
        // This profile's stacks and used locations, for the next profile of its process and
        // heap (only when its stacks are in increasing order, as a heapprofd dump's are).
        let ascending = (1..n).all(|i| profile.sample(i - 1).0 < profile.sample(i).0);
        if ascending {
            let mut m = match earlier {
                Some(e) => self.marked.remove(e),
                None if self.marked.len() >= MARKED_PROFILES => self.marked.remove(0),
                None => Marked::default(),
            };
            m.key = key;
            m.stacks.clear();
            m.stacks.extend((0..n).map(|i| profile.sample(i).0));
            m.used.clear();
            m.used.extend_from_slice(&used);
            self.marked.push(m);
        } else if let Some(e) = earlier {
            self.marked.remove(e);
        }
        self.known = known;
        let cat = &mut self.catalog;
        let mut loc_bytes = std::mem::take(&mut self.spare.1);
        loc_bytes.clear();
        for (id, _) in used.iter().enumerate().filter(|u| *u.1 != 0) {
            let (frame, ann) = self.locs[id - 1];
            cat.location(&tables, &opts, &mut loc_bytes, id, frame, ann);
        }
        self.used = used;
        let head = Head {
            meta: &profile.header.meta,
            types: &profile.header.sample_types,
            default: profile.header.default_sample_type,
        };
        let (mappings, rest) = {
            let mut mappings = cat.profile_mappings(&tables);
            let mut rest = pp::Profile::default();
            tail_fields(&mut mappings, &head, &opts, &mut |text| cat.s_text(&tables, text), &mut rest);
            (pp::Profile { mapping: mappings, ..Default::default() }.encode_to_vec(), rest.encode_to_vec())
        };
        // The samples' last bytes and everything after them go in one write, as they always
        // have (a streaming gzip's bytes depend on where the writes fall).
        if stream {
            w.write_all(&bytes)?;
            bytes.clear();
            w.write_all(&mappings)?;
            w.write_all(&loc_bytes)?;
            cat.write_functions(&mut bytes);
            w.write_all(&bytes)?;
            bytes.clear();
            let mut next = 0;
            while next < cat.pstrings.len() {
                next = cat.write_strings_from(&tables, &mut bytes, next, CHUNK);
                w.write_all(&bytes)?;
                bytes.clear();
            }
            self.spare = (bytes, loc_bytes);
            return w.write_all(&rest);
        }
        bytes.extend_from_slice(&mappings);
        bytes.extend_from_slice(&loc_bytes);
        drop(loc_bytes);
        cat.write_functions(&mut bytes);
        cat.write_strings_from(&tables, &mut bytes, 0, usize::MAX);
        bytes.extend_from_slice(&rest);
        w.write_all(&bytes)
    }
}

/// A stack node's annotation (low 4 bits) and the annotation state for its children.
#[derive(Debug, Clone, Copy)]
pub(super) struct NodeAnn(u8);

impl NodeAnn {
    pub(super) const STATES: [AnnotationState; 3] =
        [AnnotationState::Initial, AnnotationState::EraseLibart, AnnotationState::KeepNext];

    pub(super) fn new(ann: Annotation, state: AnnotationState) -> Self {
        let a = ann.index();
        let s = Self::STATES.iter().position(|&x| x == state).expect("every state is listed");
        NodeAnn(a as u8 | (s as u8) << 4)
    }

    pub(super) fn annotation(self) -> Annotation {
        Annotation::ALL[usize::from(self.0 & 15)]
    }

    pub(super) fn state(self) -> AnnotationState {
        Self::STATES[usize::from(self.0 >> 4)]
    }
}

/// Where each stack's packed location list lies in the encoder's arena: an open-addressing
/// table with the key and the value inline in one 12-byte slot (one cache miss per lookup).
#[derive(Debug, Default)]
pub(super) struct PathIndex {
    /// (stack id + 1, offset, length); a zero key is an empty slot.
    slots: Vec<[u32; 3]>,
    len: usize,
}

impl PathIndex {
    fn slot(&self, key: u32) -> usize {
        let h = u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    fn prefetch(&self, stack: u32) {
        if !self.slots.is_empty() {
            crate::model::tables::prefetch(&self.slots[self.slot(stack + 1)]);
        }
    }

    fn get(&self, stack: u32) -> Option<(u32, u32)> {
        if self.slots.is_empty() {
            return None;
        }
        let key = stack + 1;
        let mask = self.slots.len() - 1;
        let mut i = self.slot(key);
        loop {
            let s = self.slots[i];
            if s[0] == key {
                return Some((s[1], s[2]));
            }
            if s[0] == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds a stack that is not in the table yet.
    fn insert(&mut self, stack: u32, off: u32, len: u32) {
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            let cap = (self.slots.len() * 2).max(1024);
            let old = std::mem::replace(&mut self.slots, vec![[0; 3]; cap]);
            self.len = 0;
            for s in old.into_iter().filter(|s| s[0] != 0) {
                self.put(s);
            }
        }
        self.put([stack + 1, off, len]);
    }

    fn put(&mut self, slot: [u32; 3]) {
        let mask = self.slots.len() - 1;
        let mut i = self.slot(slot[0]);
        while self.slots[i][0] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
        self.len += 1;
    }
}
