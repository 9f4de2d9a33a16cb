//! The interned tables that profiles point into: strings, mappings, frames and stacks.

use rustc_hash::FxHashMap as HashMap;

use super::frame::{Frame, FrameId, demangle};
use super::mapping::{Mapping, MappingId};
use super::stack::{StackId, StackNode};
use super::strings::{StringId, StringTable};

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
    stacks: Vec<StackNode>,
    stack_index: HashMap<(u32, FrameId), StackId>,
    demangled: HashMap<StringId, StringId>,
    // The last stack interned, to skip the lookups of the prefix the next one shares with it
    // (producers emit callstacks in tree order, so consecutive ones share long prefixes).
    last_frames: Vec<FrameId>,
    last_nodes: Vec<StackId>,
}

impl Tables {
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

    /// Interns a native or managed frame by (mapping, rel_pc, raw name). The display name is
    /// the demangled raw name (computed once per distinct name).
    pub fn intern_frame(&mut self, mapping: Option<MappingId>, rel_pc: u64, raw_name: StringId) -> FrameId {
        let key = (mapping, rel_pc, raw_name);
        if let Some(&id) = self.frame_index.get(&key) {
            return id;
        }
        let name = self.display_name(raw_name);
        let id = FrameId(to_u32(self.frames.len()));
        self.frames.push(Frame { mapping, rel_pc, raw_name, name, lines: Vec::new() });
        self.frame_index.insert(key, id);
        id
    }

    fn display_name(&mut self, raw: StringId) -> StringId {
        if raw.is_empty() {
            return raw;
        }
        if let Some(&d) = self.demangled.get(&raw) {
            return d;
        }
        let d = match demangle(self.strings.get(raw)) {
            Some(s) => self.strings.intern(&s),
            None => raw,
        };
        self.demangled.insert(raw, d);
        d
    }

    /// The child of `parent` (or a root when `None`) with frame `frame`.
    pub fn intern_stack_node(&mut self, parent: Option<StackId>, frame: FrameId) -> StackId {
        let key = (parent.map_or(0, |p| p.0 + 1), frame);
        if let Some(&id) = self.stack_index.get(&key) {
            return id;
        }
        let id = StackId(to_u32(self.stacks.len()));
        self.stacks.push(StackNode { parent, frame });
        self.stack_index.insert(key, id);
        id
    }

    /// Interns a whole stack given root first; `None` for an empty list.
    pub fn intern_stack(&mut self, frames_root_first: &[FrameId]) -> Option<StackId> {
        let shared = self.last_frames.iter().zip(frames_root_first).take_while(|(a, b)| a == b).count();
        self.last_frames.truncate(shared);
        self.last_nodes.truncate(shared);
        let mut node = self.last_nodes.last().copied();
        for &f in &frames_root_first[shared..] {
            let n = self.intern_stack_node(node, f);
            self.last_frames.push(f);
            self.last_nodes.push(n);
            node = Some(n);
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
    pub fn stack_node(&self, id: StackId) -> &StackNode {
        &self.stacks[id.0 as usize]
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
            let n = &self.stacks[s.0 as usize];
            out.push(n.frame);
            cur = n.parent;
        }
    }

    /// The nodes of stack `id`, root first.
    pub fn stack_nodes_root_first(&self, id: StackId, out: &mut Vec<StackId>) {
        out.clear();
        let mut cur = Some(id);
        while let Some(s) = cur {
            out.push(s);
            cur = self.stacks[s.0 as usize].parent;
        }
        out.reverse();
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).expect("fewer than 2^32 table entries")
}
