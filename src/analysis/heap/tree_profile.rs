//! Trees of objects (the shortest-path tree, the dominator tree) as profiles.

use super::{JAVA_HEAP_NAME, JAVA_MAPPING, RootedHeap, VIRTUAL_ROOT};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::model::heap::{ClassIdx, ObjIdx, RootKind};
use crate::model::{DumpFlags, FrameId, Mapping, MappingId, Profile, ProfileMeta, StackId, Tables, ValueType};

impl RootedHeap<'_> {
    /// A profile of a tree given by `parent` (each object of `order` after its parent).
    pub(super) fn tree_profile(
        &self,
        order: &[ObjIdx],
        parent: &[ObjIdx],
        native_count: i64,
        types: Vec<ValueType>,
    ) -> Profile {
        let d = self.dump;
        let mut b = TreeProfileBuilder::new(self);
        let mut node_of = vec![0u32; self.n];
        for &o in order {
            let p = parent[o as usize];
            let up = if p == VIRTUAL_ROOT { None } else { Some(StackId(node_of[p as usize])) };
            let f = b.frame(o, false);
            let s = b.tables.intern_stack_node(up, f);
            node_of[o as usize] = s.0;
            b.add(s, 1, sat_i64(d.obj_self_size[o as usize]));
            let native = d.obj_native_size[o as usize];
            if native > 0 {
                let f = b.frame(o, true);
                let ns = b.tables.intern_stack_node(Some(s), f);
                b.add(ns, native_count, sat_i64(native));
            }
        }
        b.finish(types)
    }
}

pub(super) fn sat_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Builds a profile of a tree of objects: frames per (class, root kind, native), stack nodes
/// merged by the stack table, values per node.
pub(super) struct TreeProfileBuilder<'h, 'a> {
    pub(super) heap: &'h RootedHeap<'a>,
    pub(super) tables: Tables,
    pub(super) mapping: MappingId,
    pub(super) plain: Vec<Option<FrameId>>,
    pub(super) other: FxHashMap<(ClassIdx, Option<RootKind>, bool), FrameId>,
    pub(super) values: Vec<[i64; 2]>,
}

impl<'h, 'a> TreeProfileBuilder<'h, 'a> {
    pub(super) fn new(heap: &'h RootedHeap<'a>) -> Self {
        let mut tables = Tables::default();
        let path = tables.strings.intern(JAVA_MAPPING);
        let mapping = tables.intern_mapping(Mapping {
            path,
            build_id: Box::default(),
            start: 0,
            end: 0,
            start_offset: 0,
            exact_offset: 0,
            load_bias: 0,
        });
        TreeProfileBuilder {
            heap,
            tables,
            mapping,
            plain: vec![None; heap.dump.classes.len() + 1],
            other: FxHashMap::default(),
            values: Vec::new(),
        }
    }

    pub(super) fn frame(&mut self, o: ObjIdx, native: bool) -> FrameId {
        let c = self.heap.dump.obj_class[o as usize].min(self.heap.dump.classes.len() as ClassIdx);
        let root = self.heap.root_kind(o);
        if Some(c) == self.heap.class_class {
            // Class objects are named after their class: not cached by class.
            let name = self.heap.frame_name(o);
            return self.named_frame(&if native { format!("[native] {name}") } else { name });
        }
        if root.is_none() && !native {
            if let Some(f) = self.plain[c as usize] {
                return f;
            }
        } else if let Some(&f) = self.other.get(&(c, root, native)) {
            return f;
        }
        let name = self.heap.frame_name(o);
        let name = if native { format!("[native] {name}") } else { name };
        let f = self.named_frame(&name);
        if root.is_none() && !native {
            self.plain[c as usize] = Some(f);
        } else {
            self.other.insert((c, root, native), f);
        }
        f
    }

    /// A frame with only a display name (no raw name: pprof writes no `system_name`, as
    /// traceconv does for Java heaps), in mapping `JAVA`.
    pub(super) fn named_frame(&mut self, name: &str) -> FrameId {
        let s = self.tables.strings.intern(name);
        let f = self.tables.intern_frame(Some(self.mapping), 0, s);
        let frame = &mut self.tables.frames_mut()[f.0 as usize];
        frame.name = s;
        frame.raw_name = crate::model::StringId::EMPTY;
        f
    }

    pub(super) fn add(&mut self, s: StackId, count: i64, size: i64) {
        let i = s.0 as usize;
        if self.values.len() <= i {
            self.values.resize(i + 1, [0, 0]);
        }
        let v = &mut self.values[i];
        v[0] = v[0].saturating_add(count);
        v[1] = v[1].saturating_add(size);
    }

    pub(super) fn finish(self, types: Vec<ValueType>) -> Profile {
        let d = self.heap.dump;
        // hprof timestamps are wall-clock milliseconds (0: unknown): pprof's `time_nanos`, not
        // a trace-clock time.
        let (timestamp, time_nanos) = if d.timestamp_is_epoch_ms {
            (None, d.timestamp.filter(|&t| t > 0).and_then(|t| t.checked_mul(1_000_000)))
        } else {
            (d.timestamp, None)
        };
        let meta = ProfileMeta {
            source: d.source.clone(),
            pid: d.pid.map(u64::from),
            process_name: d.process_name.clone(),
            heap: JAVA_HEAP_NAME.to_owned(),
            timestamp,
            timestamp_converted: timestamp.is_some() && d.timestamp_converted,
            time_nanos,
            changed: true,
            flags: DumpFlags { incomplete: !d.incomplete.is_empty(), ..Default::default() },
            comments: d.incomplete.iter().map(|why| format!("incomplete heap dump: {why}")).collect(),
            ..Default::default()
        };
        let mut p = Profile::new(Arc::new(self.tables), meta, types);
        p.header.default_sample_type = 1;
        for (i, v) in self.values.iter().enumerate() {
            p.push_sample(StackId(i as u32), v);
        }
        p
    }
}
