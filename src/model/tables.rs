//! The interned tables that profiles point into: strings, mappings, frames and stacks.

use rustc_hash::FxHashMap as HashMap;

use super::chunked::{ChunkedTail, ChunkedVec};
use super::frame::{Frame, FrameId, Line, demangle};
use super::mapping::{Mapping, MappingId};
use super::stack::{StackId, StackNode};

/// A stack node as stored: `parent + 1` (0 for an outermost frame) and the frame, 8 bytes
/// (a [`StackNode`] with its `Option` takes 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackedNode {
    parent1: u32,
    frame: u32,
}

impl PackedNode {
    #[inline]
    fn new(parent: Option<StackId>, frame: FrameId) -> Self {
        PackedNode { parent1: parent.map_or(0, |p| p.0 + 1), frame: frame.0 }
    }

    #[inline]
    fn parent(self) -> Option<StackId> {
        self.parent1.checked_sub(1).map(StackId)
    }

    #[inline]
    fn unpack(self) -> StackNode {
        StackNode { parent: self.parent(), frame: FrameId(self.frame) }
    }
}
use super::strings::{StringId, StringTable};

/// How much of a [`Tables`] a replica holds: the lengths of its tables. The default is the
/// mark of empty tables (which hold the empty string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TablesMark {
    strings: usize,
    mappings: usize,
    frames: usize,
    stacks: usize,
}

impl Default for TablesMark {
    fn default() -> Self {
        TablesMark { strings: 1, mappings: 0, frames: 0, stacks: 0 }
    }
}

/// What a [`Tables`] gained since a [`TablesMark`]: appended to a replica with
/// [`Tables::apply_delta`], it lets another thread read a growing table without sharing it.
#[derive(Debug, Clone, Default)]
pub struct TablesDelta {
    strings: super::strings::StringsTail,
    mappings: Vec<Mapping>,
    frames: Vec<Frame>,
    stacks: ChunkedTail<PackedNode>,
}

/// Interned strings, mappings, frames and the stack tree. Tables only grow: an id, once
/// given, keeps its meaning, so several profiles (dumps) of one input share one `Tables`.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    /// All strings.
    pub strings: StringTable,
    mappings: Vec<Mapping>,
    mapping_index: HashMap<Mapping, MappingId>,
    frames: Vec<Frame>,
    frame_index: HashMap<(Option<MappingId>, u64, StringId), FrameId>,
    // Frames interned by their whole content (see `intern_frame_exact`).
    exact_frame_index: HashMap<Frame, FrameId>,
    // In shared chunks: a replica on the encoder's thread holds the same chunks, not a copy.
    stacks: ChunkedVec<PackedNode>,
    stack_index: NodeIndex,
    demangled: HashMap<StringId, StringId>,
    // Display names demangled ahead (on another thread) for raw names not demangled yet
    // (see `offer_display_name`).
    offered: HashMap<StringId, Option<String>>,
    // Display names are left for `settle_names` (see `set_deferred_names`).
    defer_names: bool,
    // Frames whose display name is still to be settled (bit per frame index).
    unsettled: Vec<u64>,
    // The last stack interned, to skip the lookups of the prefix the next one shares with it
    // (producers emit callstacks in tree order, so consecutive ones share long prefixes).
    last_frames: Vec<FrameId>,
    last_nodes: Vec<StackId>,
}

impl Tables {
    /// The current lengths of the tables.
    pub fn mark(&self) -> TablesMark {
        TablesMark {
            strings: self.strings.len(),
            mappings: self.mappings.len(),
            frames: self.frames.len(),
            stacks: self.stacks.len(),
        }
    }

    /// Everything added since `mark` (entries only ever get appended; frames get their
    /// `lines` before the profiles that use them are built, so a delta taken then is final).
    pub fn delta_since(&self, mark: TablesMark) -> TablesDelta {
        TablesDelta {
            strings: self.strings.tail(mark.strings),
            mappings: self.mappings[mark.mappings.min(self.mappings.len())..].to_vec(),
            frames: self.frames[mark.frames.min(self.frames.len())..].to_vec(),
            stacks: self.stacks.tail_from(mark.stacks),
        }
    }

    /// Appends a delta to a replica. A replica is for reading: its entries are not indexed, so
    /// it must not be interned into.
    pub fn apply_delta(&mut self, d: TablesDelta) {
        self.strings.extend_unindexed(d.strings);
        self.mappings.extend(d.mappings);
        // Grown by an eighth at a time (not doubled): a replica lives as long as its source.
        let (len, more) = (self.frames.len(), d.frames.len());
        if self.frames.capacity() < len + more {
            self.frames.reserve_exact(more.max(len / 8));
        }
        self.frames.extend(d.frames);
        self.stacks.apply_tail(d.stacks);
    }

    /// Interns a mapping: identical mappings (every field equal) share an id.
    pub fn intern_mapping(&mut self, m: Mapping) -> MappingId {
        if let Some(&id) = self.mapping_index.get(&m) {
            return id;
        }
        let id = MappingId(to_u32(self.mappings.len()));
        self.mappings.push(m.clone());
        self.mapping_index.insert(m, id);
        id
    }

    /// Makes room for `n` more frames of [`Tables::intern_frame`] (a block of frames about to
    /// be interned), so that its index is not rebuilt as they come.
    pub fn reserve_frames(&mut self, n: usize) {
        self.frames.reserve(n);
        self.frame_index.reserve(n);
    }

    /// Interns a native or managed frame by (mapping, rel_pc, raw name). The display name is
    /// the demangled raw name (computed once per distinct name).
    pub fn intern_frame(&mut self, mapping: Option<MappingId>, rel_pc: u64, raw_name: StringId) -> FrameId {
        let key = (mapping, rel_pc, raw_name);
        if let Some(&id) = self.frame_index.get(&key) {
            return id;
        }
        let id = FrameId(to_u32(self.frames.len()));
        let name = if self.defer_names {
            let i = id.0 as usize;
            if self.unsettled.len() <= i / 64 {
                self.unsettled.resize(i / 64 + 1, 0);
            }
            self.unsettled[i / 64] |= 1 << (i % 64);
            raw_name
        } else {
            self.display_name(raw_name)
        };
        self.frames.push(Frame { mapping, rel_pc, raw_name, name, lines: Vec::new() });
        self.frame_index.insert(key, id);
        id
    }

    /// Interns a frame that carries a source file and line of its own (a Perfetto `Frame`'s
    /// `source_path_iid` and `line_number`; `file` empty and `line` 0 when unknown) as trace
    /// processor interns it: a frame in a mapping is one per (mapping, rel_pc, raw name), the
    /// first definition keeping its line (so it is [`Tables::intern_frame`]'s frame, given
    /// the line when it is new); a frame without a mapping is one per (rel_pc, raw name, file,
    /// line). The line names the frame itself: function its display name, system name its
    /// raw name.
    pub fn intern_frame_with_line(
        &mut self,
        mapping: Option<MappingId>,
        rel_pc: u64,
        raw_name: StringId,
        file: StringId,
        line: u32,
    ) -> FrameId {
        let name = self.display_name(raw_name);
        let own = Line { function: name, system_name: raw_name, file, line, column: 0 };
        if mapping.is_none() {
            return self.intern_frame_exact(Frame { mapping, rel_pc, raw_name, name, lines: vec![own] });
        }
        let before = self.frames.len();
        let id = self.intern_frame(mapping, rel_pc, raw_name);
        if self.frames.len() > before {
            self.frames[id.0 as usize].lines = vec![own];
        }
        id
    }

    /// Interns a frame exactly as given (display name, raw name and lines included): frames
    /// equal in every field share an id. For inputs that carry names and lines already (pprof)
    /// and for merged tables; independent of [`Tables::intern_frame`]'s index.
    pub fn intern_frame_exact(&mut self, frame: Frame) -> FrameId {
        if let Some(&id) = self.exact_frame_index.get(&frame) {
            return id;
        }
        let id = FrameId(to_u32(self.frames.len()));
        self.frames.push(frame.clone());
        self.exact_frame_index.insert(frame, id);
        id
    }

    /// With `on`, [`Tables::intern_frame`] leaves each new frame's display name as its raw name
    /// until [`Tables::settle_names`] demangles it: for a caller that shows the names of only
    /// some frames (one dump of many), and reads no frame's name before settling it. The names
    /// settled are those eager interning gives; only the string ids of the demangled names
    /// differ (they are interned when settled).
    pub fn set_deferred_names(&mut self, on: bool) {
        self.defer_names = on;
    }

    /// Gives the frames `frames` (any order, repeats allowed) whose display names were deferred
    /// ([`Tables::set_deferred_names`]) their demangled names; the names are demangled in
    /// parallel and interned in the order of `frames`.
    pub fn settle_names(&mut self, frames: impl IntoIterator<Item = FrameId>) {
        use rayon::prelude::*;
        if self.unsettled.is_empty() {
            return;
        }
        // The distinct raw names to demangle, in the order of their first frame.
        let mut todo: Vec<FrameId> = Vec::new();
        let mut raws: Vec<StringId> = Vec::new();
        let mut seen: HashMap<StringId, ()> = HashMap::default();
        for f in frames {
            let i = f.0 as usize;
            let Some(word) = self.unsettled.get_mut(i / 64) else { continue };
            if *word & (1 << (i % 64)) == 0 {
                continue;
            }
            *word &= !(1 << (i % 64));
            todo.push(f);
            let raw = self.frames[i].raw_name;
            if !raw.is_empty() && !self.demangled.contains_key(&raw) && seen.insert(raw, ()).is_none() {
                raws.push(raw);
            }
        }
        // In pieces, so that only one piece's demangled names are held at a time.
        for piece in raws.chunks(4096) {
            let strings = &self.strings;
            let names: Vec<Option<String>> = piece.par_iter().map(|&r| demangle(strings.get(r))).collect();
            for (&raw, name) in piece.iter().zip(names) {
                let d = match name {
                    Some(s) => self.strings.intern(&s),
                    None => raw,
                };
                self.demangled.insert(raw, d);
            }
        }
        for f in todo {
            let raw = self.frames[f.0 as usize].raw_name;
            if !raw.is_empty() {
                self.frames[f.0 as usize].name = self.demangled[&raw];
            }
        }
    }

    /// Appends `frame` without looking it up or indexing it: for tables built once from frames
    /// known to be distinct (a merge's output). [`Tables::intern_frame_exact`] does not find it.
    pub fn push_distinct_frame(&mut self, frame: Frame) -> FrameId {
        let id = FrameId(to_u32(self.frames.len()));
        self.frames.push(frame);
        id
    }

    /// [`Tables::push_distinct_frame`] of each of `frames` in turn (taking the list itself
    /// when the tables hold no frame yet); returns the id of the first.
    pub fn push_distinct_frames(&mut self, frames: Vec<Frame>) -> FrameId {
        let id = FrameId(to_u32(self.frames.len()));
        if self.frames.is_empty() {
            self.frames = frames;
        } else {
            self.frames.extend(frames);
        }
        to_u32(self.frames.len()); // (The count fits.)
        id
    }

    fn display_name(&mut self, raw: StringId) -> StringId {
        if raw.is_empty() {
            return raw;
        }
        if let Some(&d) = self.demangled.get(&raw) {
            return d;
        }
        let name = match self.offered.remove(&raw) {
            Some(name) => name,
            None => demangle(self.strings.get(raw)),
        };
        let d = match name {
            Some(s) => self.strings.intern(&s),
            None => raw,
        };
        self.demangled.insert(raw, d);
        d
    }

    /// Offers `demangled`, what [`demangle`] gives for the text of `raw` (demangled ahead of
    /// time, say on another thread), for the display name of the next frame interned with raw
    /// name `raw`: it is used instead of demangling again, and interned when that frame is,
    /// so the tables are exactly those eager demangling makes. Ignored with deferred names,
    /// for the empty name and for a name demangled already.
    pub fn offer_display_name(&mut self, raw: StringId, demangled: Option<String>) {
        if self.defer_names || raw.is_empty() || self.demangled.contains_key(&raw) {
            return;
        }
        self.offered.insert(raw, demangled);
    }

    /// Drops the offers ([`Tables::offer_display_name`]) that no frame took.
    pub fn withdraw_display_names(&mut self) {
        if !self.offered.is_empty() {
            self.offered.clear();
        }
    }

    /// Frees what only interning needs (the stack index, the demangling cache), for tables
    /// that will mostly be read from now on; interning into them later rebuilds it first.
    pub fn release_indexes(&mut self) {
        self.stack_index = NodeIndex::default();
        self.demangled = HashMap::default();
        self.offered = HashMap::default();
        self.last_frames = Vec::new();
        self.last_nodes = Vec::new();
    }

    /// Indexes every stack node (after [`Tables::release_indexes`], or in a replica).
    fn ensure_stack_index(&mut self) {
        if self.stack_index.len != self.stacks.len() {
            self.stack_index.rebuild(&self.stacks, self.stacks.len());
        }
    }

    /// The child of `parent` (or a root when `None`) with frame `frame`.
    pub fn intern_stack_node(&mut self, parent: Option<StackId>, frame: FrameId) -> StackId {
        self.ensure_stack_index();
        let key = PackedNode::new(parent, frame);
        match self.stack_index.find(&self.stacks, key) {
            Ok(id) => StackId(id),
            Err(slot) => {
                let id = to_u32(self.stacks.len());
                self.stacks.push(key);
                self.stack_index.insert_at(&self.stacks, slot, id);
                StackId(id)
            }
        }
    }

    /// Interns a whole stack given root first; `None` for an empty list.
    pub fn intern_stack(&mut self, frames_root_first: &[FrameId]) -> Option<StackId> {
        self.ensure_stack_index();
        let shared = self.last_frames.iter().zip(frames_root_first).take_while(|(a, b)| a == b).count();
        self.last_frames.truncate(shared);
        self.last_nodes.truncate(shared);
        let node = self.last_nodes.last().copied();
        let rest = &frames_root_first[shared..];
        let leaf = self.extend_stack(node, rest);
        // Remember the path for the next call.
        let mut n = leaf;
        let start = self.last_nodes.len();
        for _ in rest {
            let id = n.expect("a node per frame");
            self.last_nodes.push(id);
            n = self.stacks.get(id.0 as usize).parent();
        }
        self.last_nodes[start..].reverse();
        self.last_frames.extend_from_slice(rest);
        leaf
    }

    /// Interns many stacks at once: stack `k` is `frames[bounds[k]..bounds[k + 1]]`, root first.
    /// Gives the same ids, in the same order, as calling [`Tables::intern_stack`] on each in
    /// turn, faster: the lookups of the nodes stacks share with earlier ones (each depending on
    /// the last) are interleaved across a group of stacks, so their cache misses overlap.
    pub fn intern_stacks(&mut self, frames: &[FrameId], bounds: &[usize]) -> Vec<Option<StackId>> {
        const GROUP: usize = 16;
        self.ensure_stack_index();
        let n = bounds.len().saturating_sub(1);
        let mut out = Vec::with_capacity(n);
        // Per stack in the group: frames matched so far and the node they end at.
        let mut pos = [0usize; GROUP];
        let mut node: [Option<StackId>; GROUP] = [None; GROUP];
        for g in (0..n).step_by(GROUP) {
            let m = GROUP.min(n - g);
            let stack = |k: usize| &frames[bounds[g + k]..bounds[g + k + 1]];
            pos[..m].fill(0);
            node[..m].fill(None);
            // Read-only walk: every stack advances one node per round until a node is missing.
            // Each round prefetches the slots, then the nodes they name, then compares.
            let mut live: Vec<usize> = (0..m).filter(|&k| !stack(k).is_empty()).collect();
            let mut slot = [0usize; GROUP];
            while !live.is_empty() {
                for &k in &live {
                    slot[k] = self.stack_index.home(PackedNode::new(node[k], stack(k)[pos[k]]));
                    self.stack_index.prefetch_slot(slot[k]);
                }
                for &k in &live {
                    self.stack_index.prefetch_node(&self.stacks, slot[k]);
                }
                live.retain(|&k| {
                    let key = PackedNode::new(node[k], stack(k)[pos[k]]);
                    match self.stack_index.find_from(&self.stacks, key, slot[k]) {
                        Ok(id) => {
                            node[k] = Some(StackId(id));
                            pos[k] += 1;
                            pos[k] < stack(k).len()
                        }
                        Err(_) => false,
                    }
                });
            }
            // In order: the rest of each stack, which may reuse nodes an earlier one added.
            for k in 0..m {
                let s = stack(k);
                out.push(self.extend_stack(node[k], &s[pos[k]..]));
            }
        }
        self.last_frames.clear();
        self.last_nodes.clear();
        out
    }

    /// Interns `frames` (root first) below `node`: lookups until a node is new, then appends.
    fn extend_stack(&mut self, mut node: Option<StackId>, mut rest: &[FrameId]) -> Option<StackId> {
        while let Some((&f, tail)) = rest.split_first() {
            let before = self.stacks.len();
            node = Some(self.intern_stack_node(node, f));
            rest = tail;
            if self.stacks.len() > before {
                break;
            }
        }
        if !rest.is_empty() {
            // Node `first + k` is the child of node `first + k - 1` (of `node` for k = 0).
            let first = self.stacks.len();
            to_u32(first + rest.len() - 1);
            let top = node;
            self.stacks.extend(rest.iter().enumerate().map(|(k, &f)| {
                let parent = if k == 0 { top } else { Some(StackId((first + k - 1) as u32)) };
                PackedNode::new(parent, f)
            }));
            node = Some(StackId((first + rest.len() - 1) as u32));
            self.stack_index.insert_new(&self.stacks, first);
        }
        node
    }

    /// The mapping `id`.
    pub fn mapping(&self, id: MappingId) -> &Mapping {
        &self.mappings[id.0 as usize]
    }

    /// All mappings, indexed by `MappingId`.
    pub fn mappings(&self) -> &[Mapping] {
        &self.mappings
    }

    /// The frame `id`.
    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id.0 as usize]
    }

    /// All frames, indexed by `FrameId`.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// Mutable frames, for the symbolize stage (which fills in `lines`).
    pub fn frames_mut(&mut self) -> &mut [Frame] {
        &mut self.frames
    }

    /// The stack node `id`.
    #[inline]
    pub fn stack_node(&self, id: StackId) -> StackNode {
        self.stacks.get(id.0 as usize).unpack()
    }

    /// The caller of stack node `id` (`None` for an outermost frame).
    #[inline]
    pub fn stack_parent(&self, id: StackId) -> Option<StackId> {
        self.stacks.get(id.0 as usize).parent()
    }

    /// The frame of stack node `id`.
    #[inline]
    pub fn stack_frame(&self, id: StackId) -> FrameId {
        FrameId(self.stacks.get(id.0 as usize).frame)
    }

    /// Number of stack nodes.
    pub fn stack_count(&self) -> usize {
        self.stacks.len()
    }

    /// The frames of stack `id`, leaf (innermost) first.
    pub fn stack_frames_leaf_first(&self, id: StackId, out: &mut Vec<FrameId>) {
        out.clear();
        let mut cur = Some(id);
        while let Some(s) = cur {
            let n = *self.stacks.get(s.0 as usize);
            out.push(FrameId(n.frame));
            cur = n.parent();
        }
    }

    /// The nodes of stack `id`, root first.
    pub fn stack_nodes_root_first(&self, id: StackId, out: &mut Vec<StackId>) {
        out.clear();
        let mut cur = Some(id);
        while let Some(s) = cur {
            out.push(s);
            cur = self.stacks.get(s.0 as usize).parent();
        }
        out.reverse();
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).expect("fewer than 2^32 table entries")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deferred names settle to the names eager interning gives, for the frames asked only,
    /// whatever order the frames come in.
    #[test]
    fn deferred_names_settle_as_eager_ones() {
        let raws = ["_ZN3foo6Widget5buildEv", "malloc", "", "_ZN3foo4Pool4growEm", "_RNvCs1234_7mycrate3foo", "malloc"];
        let mut eager = Tables::default();
        let mut lazy = Tables::default();
        lazy.set_deferred_names(true);
        let mut ids = Vec::new();
        for (i, r) in raws.iter().enumerate() {
            let a = eager.strings.intern(r);
            let b = lazy.strings.intern(r);
            eager.intern_frame(None, i as u64, a);
            ids.push(lazy.intern_frame(None, i as u64, b));
        }
        let name = |t: &Tables, i: usize| t.strings.get(t.frames()[i].name).to_owned();
        assert_eq!(name(&lazy, 0), "_ZN3foo6Widget5buildEv", "not settled yet");
        // Settle frames 3, 0 and 0 again: the others keep their raw names.
        lazy.settle_names([ids[3], ids[0], ids[0]]);
        assert_eq!(name(&lazy, 0), "foo::Widget::build()");
        assert_eq!(name(&lazy, 3), name(&eager, 3));
        assert_eq!(name(&lazy, 4), "_RNvCs1234_7mycrate3foo");
        lazy.settle_names(ids.iter().rev().copied());
        for i in 0..raws.len() {
            assert_eq!(name(&lazy, i), name(&eager, i), "frame {i}");
        }
        assert_eq!(name(&lazy, 4), "mycrate::foo");
        // Eager tables have nothing to settle.
        let before = eager.strings.len();
        eager.settle_names(ids.iter().copied());
        assert_eq!(eager.strings.len(), before);
    }

    /// Names offered ahead give the tables eager demangling gives, string ids included;
    /// offers no frame takes, and offers for names demangled already, change nothing.
    #[test]
    fn offered_display_names_make_the_tables_demangling_makes() {
        let raws = ["_ZN3foo6Widget5buildEv", "malloc", "", "_ZN3foo4Pool4growEm", "_ZN3foo6Widget5buildEv"];
        let mut eager = Tables::default();
        let mut ahead = Tables::default();
        let unused = ahead.strings.intern("_ZN3bar3bazEv");
        eager.strings.intern("_ZN3bar3bazEv");
        ahead.offer_display_name(unused, demangle("_ZN3bar3bazEv"));
        for (i, r) in raws.iter().enumerate() {
            let a = eager.strings.intern(r);
            let b = ahead.strings.intern(r);
            // A wrong offer for a name demangled already is ignored.
            let offer = if i == 4 { Some("wrong".to_owned()) } else { demangle(r) };
            ahead.offer_display_name(b, offer);
            assert_eq!(eager.intern_frame(None, i as u64, a), ahead.intern_frame(None, i as u64, b));
        }
        ahead.withdraw_display_names();
        assert!(ahead.offered.is_empty());
        assert_eq!(ahead.strings.len(), eager.strings.len());
        for i in 0..eager.strings.len() {
            assert_eq!(ahead.strings.get(StringId(i as u32)), eager.strings.get(StringId(i as u32)));
        }
        assert_eq!(ahead.frames(), eager.frames());
        assert_eq!(ahead.strings.get(ahead.frames()[4].name), "foo::Widget::build()");
    }

    #[test]
    fn node_index_agrees_with_a_hash_map() {
        let mut t = Tables::default();
        let mut reference = std::collections::HashMap::new();
        let mut x: u64 = 7;
        for _ in 0..300_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let p = (x % 5_000) as u32;
            let parent = if p > 0 && (p as usize) <= t.stack_count() { Some(StackId(p - 1)) } else { None };
            let f = FrameId(((x >> 20) % 300) as u32);
            let next = StackId(t.stack_count() as u32);
            let want = *reference.entry((parent, f)).or_insert(next);
            assert_eq!(t.intern_stack_node(parent, f), want);
            assert_eq!(t.stack_node(want), StackNode { parent, frame: f });
        }
        assert_eq!(t.stack_index.len, reference.len());
        assert_eq!(t.stack_count(), reference.len());
        assert!(t.stack_index.slots.len() * 7 >= t.stack_index.len * 10);
        // Every slot names a node whose home the probe sequence passes.
        let used = t.stack_index.slots.iter().filter(|&&s| s != 0).count();
        assert_eq!(used, reference.len());
        // Every slot keeps hash bits above the id.
        assert!(t.stack_index.slots.iter().any(|&s| s & !t.stack_index.id_mask() != 0));
    }

    #[test]
    fn batched_stack_interning_matches_one_at_a_time() {
        // Stacks sharing prefixes in every way: with earlier stacks of the same group, of an
        // earlier group, not at all; duplicates; empty stacks.
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut stacks: Vec<Vec<FrameId>> = Vec::new();
        for i in 0..2000 {
            let mut s = if i > 0 && next(4) > 0 {
                let j = next(i) as usize;
                let cut = next(stacks[j].len() as u64 + 1) as usize;
                stacks[j][..cut].to_vec()
            } else {
                Vec::new()
            };
            for _ in 0..next(12) {
                s.push(FrameId(next(40) as u32));
            }
            stacks.push(s);
        }
        let mut one = Tables::default();
        let want: Vec<Option<StackId>> = stacks.iter().map(|s| one.intern_stack(s)).collect();
        let mut batch = Tables::default();
        let mut frames = Vec::new();
        let mut bounds = vec![0];
        for s in &stacks {
            frames.extend_from_slice(s);
            bounds.push(frames.len());
        }
        // In two calls, so the second starts from a non-empty index.
        let half = 1000;
        let mut got = batch.intern_stacks(&frames, &bounds[..=half]);
        let rebased: Vec<usize> = bounds[half..].iter().map(|b| b - bounds[half]).collect();
        got.extend(batch.intern_stacks(&frames[bounds[half]..], &rebased));
        assert_eq!(got, want);
        assert_eq!(batch.stack_count(), one.stack_count());
        for i in 0..one.stack_count() {
            assert_eq!(batch.stack_node(StackId(i as u32)), one.stack_node(StackId(i as u32)));
        }
        // And one-at-a-time interning after a batch still finds the batch's nodes.
        assert_eq!(batch.intern_stack(&stacks[7]), want[7]);
        assert_eq!(batch.stack_count(), one.stack_count());
    }

    #[test]
    fn a_replica_fed_deltas_reads_like_the_source() {
        let mut src = Tables::default();
        let mut replica = Tables::default();
        let mut mark = TablesMark::default();
        assert_eq!(mark, Tables::default().mark());
        for round in 0..3u64 {
            let name = src.strings.intern(&format!("f{round}"));
            let path = src.strings.intern("/lib/libx.so");
            let m = src.intern_mapping(Mapping {
                path,
                build_id: Box::new([1, 2]),
                start: 0,
                end: 10,
                start_offset: 0,
                exact_offset: 0,
                load_bias: 0,
            });
            let f = src.intern_frame(Some(m), round, name);
            src.intern_stack(&[f, f]);
            replica.apply_delta(src.delta_since(mark));
            mark = src.mark();
            assert_eq!(replica.mark(), src.mark());
            for i in 0..src.strings.len() {
                let id = StringId(i as u32);
                assert_eq!(replica.strings.get(id), src.strings.get(id));
            }
            assert_eq!(replica.frames(), src.frames());
            assert_eq!(replica.mappings(), src.mappings());
            for i in 0..src.stack_count() {
                assert_eq!(replica.stack_node(StackId(i as u32)), src.stack_node(StackId(i as u32)));
            }
        }
    }
}

/// Open-addressing index of stack nodes by (parent, frame), 4 bytes a slot. A slot holds the
/// node id + 1 in its low `bits` bits (0: empty; the table has 2^`bits` slots and never more
/// nodes than slots) and, above them, as many bits of the key's hash as are left, so that a
/// probe reads the node table (where the key is, stored once) only when those bits match. It
/// always indexes exactly the nodes `0..len` of its table.
#[derive(Debug, Clone, Default)]
struct NodeIndex {
    slots: Vec<u32>,
    len: usize,
}

impl NodeIndex {
    /// Whether `n` nodes fill `slots` slots past the highest load the index keeps (8/10: with
    /// linear probing an insert reads 1/2 (1 + 1/(1 - load)^2) slots on average, 13 at 8/10,
    /// 6 at 7/10; but 7/10 doubles the index for stack trees of 0.7-0.8 times a power of two
    /// nodes: +72 MB on depth 64's 12.8M nodes, +141 MB on depth 128's 25.9M, for about 5% of
    /// the decoder's CPU on the issue-15 shape).
    #[inline]
    fn too_full(n: usize, slots: usize) -> bool {
        n * 10 > slots * 8
    }

    #[inline]
    fn hash(key: PackedNode) -> u64 {
        ((u64::from(key.parent1) << 32) | u64::from(key.frame)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    #[inline]
    fn bits(&self) -> u32 {
        self.slots.len().trailing_zeros()
    }

    /// The first slot a lookup of `key` reads (0 when the index is empty).
    #[inline]
    fn home(&self, key: PackedNode) -> usize {
        if self.slots.is_empty() {
            return 0;
        }
        (Self::hash(key) >> (64 - self.bits())) as usize
    }

    /// The hash bits a slot of `key` keeps above the id.
    #[inline]
    fn tag(&self, key: PackedNode) -> u32 {
        let bits = self.bits();
        // Bits 32.. of the product depend on parent and frame alike (the lower ones on the frame
        // only); the home slot takes the top ones.
        if bits >= 32 { 0 } else { ((Self::hash(key) >> 32) as u32) << bits }
    }

    #[inline]
    fn id_mask(&self) -> u32 {
        let bits = self.bits();
        if bits >= 32 { u32::MAX } else { (1u32 << bits) - 1 }
    }

    /// Hints the cache to fetch slot `i`.
    #[inline]
    fn prefetch_slot(&self, i: usize) {
        if let Some(s) = self.slots.get(i) {
            prefetch(s);
        }
    }

    /// Hints the cache to fetch the node that slot `i` names (read the slot first).
    #[inline]
    fn prefetch_node(&self, nodes: &ChunkedVec<PackedNode>, i: usize) {
        if let Some(&s) = self.slots.get(i) {
            let id = s & self.id_mask();
            if id != 0 {
                prefetch(nodes.get(id as usize - 1));
            }
        }
    }

    /// The node with `key`, or the empty slot where it would go.
    #[inline]
    fn find(&self, nodes: &ChunkedVec<PackedNode>, key: PackedNode) -> Result<u32, usize> {
        self.find_from(nodes, key, self.home(key))
    }

    /// [`NodeIndex::find`] from slot `i` (the key's home).
    #[inline]
    fn find_from(&self, nodes: &ChunkedVec<PackedNode>, key: PackedNode, mut i: usize) -> Result<u32, usize> {
        if self.slots.is_empty() {
            return Err(0);
        }
        let mask = self.slots.len() - 1;
        let (tag, ids) = (self.tag(key), self.id_mask());
        loop {
            let s = self.slots[i];
            if s == 0 {
                return Err(i);
            }
            if s & !ids == tag && *nodes.get((s & ids) as usize - 1) == key {
                return Ok((s & ids) - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Indexes node `id` (just appended, the last of `nodes`) at `slot`, an empty slot
    /// [`NodeIndex::find`] gave for its key.
    fn insert_at(&mut self, nodes: &ChunkedVec<PackedNode>, slot: usize, id: u32) {
        debug_assert_eq!(id as usize, self.len);
        if Self::too_full(self.len + 1, self.slots.len()) {
            self.rebuild(nodes, self.len + 1);
            return;
        }
        self.slots[slot] = self.tag(*nodes.get(id as usize)) | (id + 1);
        self.len += 1;
    }

    /// Indexes the nodes from `first` to the end of `nodes`, known to be absent from the index.
    /// The slots are prefetched first, so the cache misses of a batch overlap.
    fn insert_new(&mut self, nodes: &ChunkedVec<PackedNode>, first: usize) {
        debug_assert_eq!(first, self.len);
        let end = nodes.len();
        if Self::too_full(end + 1, self.slots.len()) {
            self.rebuild(nodes, end);
            return;
        }
        for n in nodes.range(first, end) {
            self.prefetch_slot(self.home(*n));
        }
        for (k, n) in nodes.range(first, end).enumerate() {
            self.put(*n, (first + k) as u32);
        }
        self.len = end;
    }

    /// Writes node `id` with `key` into the first empty slot from its home.
    #[inline]
    fn put(&mut self, key: PackedNode, id: u32) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = self.tag(key) | (id + 1);
    }

    /// Rebuilds the index over the nodes `0..len`, with room to grow: reads the nodes in order.
    fn rebuild(&mut self, nodes: &ChunkedVec<PackedNode>, len: usize) {
        let mut cap = self.slots.len().max(1024);
        while Self::too_full(len + 1, cap) {
            cap *= 2;
        }
        // The old slots are freed before the new ones are taken.
        self.slots = Vec::new();
        self.slots = vec![0; cap];
        // Each node's slot is a cache miss: the slot of the node `AHEAD` places on is fetched
        // while this one is written, so the misses overlap.
        const AHEAD: usize = 16;
        let mut ahead = nodes.range(0, len).skip(AHEAD);
        for (k, n) in nodes.range(0, len).enumerate() {
            if let Some(a) = ahead.next() {
                self.prefetch_slot(self.home(*a));
            }
            self.put(*n, k as u32);
        }
        self.len = len;
    }
}

/// Hints the processor to fetch `*p` into the cache (a no-op where there is no such hint).
#[inline(always)]
pub(crate) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it reads nothing and `p` is a valid reference.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>((p as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
