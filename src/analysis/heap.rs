//! Analyses of one Java heap snapshot ([`HeapDump`]): GC roots and reachability, the
//! shortest-path tree that `traceconv profile --java-heap` draws, the dominator tree with
//! retained sizes, a class histogram, and the shortest path from a GC root to the largest
//! retainers.
//!
//! Everything starts from a [`RootedHeap`], which fixes the rules every analysis shares:
//!
//! * **Roots.** Each object listed in [`HeapDump::roots`] is a GC root once, with one
//!   *effective* root kind: when an object is listed several times, `ROOT_STICKY_CLASS` wins over
//!   `ROOT_JNI_GLOBAL`, which wins over `ROOT_JNI_LOCAL`; otherwise the first listed kind stays
//!   (trace processor's precedence). Every kind counts, Android's hprof `ROOT_UNREACHABLE`
//!   ([`RootKind::Unreachable`]) included: the file lists those objects among its GC roots,
//!   and Android's own heap analyzer (ahat) roots its search at them too, so that what they
//!   hold is shown rather than dropped. Entries naming no object of the dump are ignored.
//! * **Edges.** An object's edges are its references ([`HeapDump::refs`]) and, for the object
//!   that is a class's `java.lang.Class` instance ([`Class::object`]), that class's static
//!   references ([`Class::static_refs`]). Null and dangling references are not edges. Nor is
//!   the referent of a weak, finalizer or phantom reference ([`ClassKind::referent_is_weak`];
//!   soft references keep their referent): heap graphs name that field
//!   `java.lang.ref.Reference.referent` (a type prefix such as `java.lang.Object ` before it is
//!   ignored), hprof files name it `referent`, declared by class `java.lang.ref.Reference`. A
//!   bare `referent` counts when a class of the `java.lang.ref` package declares it in the
//!   object's class chain (`java.lang.ref.Reference`; hprof files that heapconv wrote before it
//!   hoisted the field there may have `java.lang.ref.WeakReference` declare it), or when no
//!   class of the chain declares a field of that name (fields unknown); a `referent` declared
//!   only by an application class of the chain is an ordinary field.
//! * **Reachability** is the closure of the edges from the roots ([`RootedHeap::reachable`]).
//!
//! The analyses:
//!
//! * [`RootedHeap::shortest_path_tree`] and [`RootedHeap::spt_profile`]: traceconv's
//!   `--java-heap` flame graph (Perfetto notes §3.9): a breadth-first search seeded with all
//!   roots in order of (class name, object index), each object's edges taken in ascending
//!   target index, an object's parent being the first object to reach it. Frames are class
//!   names, `" [ROOT_KIND]"` appended for roots; an object with native bytes gets a child frame
//!   `"[native] " + its frame name`; siblings with the same name are merged; every merged node
//!   is one sample whose values are its *self* count and size. A graph with no roots that is
//!   marked incomplete gives the single node `ERROR: INCOMPLETE GRAPH (try increasing buffer
//!   size)` with count 1 and size 1.
//! * [`RootedHeap::dominators`]: immediate dominators over a virtual root whose successors are
//!   the roots, by the Semi-NCA algorithm (semidominators as Lengauer and Tarjan compute them,
//!   with their balanced link-eval forest, then immediate dominators as nearest common
//!   ancestors), iterative throughout, on `u32` arrays indexed by DFS number plus a
//!   compressed-sparse-row predecessor list: memory is a few words per reachable object and
//!   one word per reference (about 40 bytes per object and 4 per reference at the peak, plus
//!   the results); time is near-linear. Retained sizes are kept in two columns: Java bytes
//!   (shallow sizes summed over the dominated subtree, what hprof tools call "retained size")
//!   and native bytes (the same sum of [`HeapDump::obj_native_size`], the
//!   NativeAllocationRegistry bytes heap graphs attribute to objects). Rankings use their sum.
//! * [`RootedHeap::dominator_profile`]: the dominator tree as a profile, framed and merged like
//!   the shortest-path tree, each node's self values being its objects' shallow count and
//!   size, so that a flame graph's widths are retained sizes.
//! * [`RootedHeap::class_histogram`] and [`RootedHeap::heap_top`]: per class, instances,
//!   shallow and native bytes, and the bytes its instances retain without double counting
//!   (see [`ClassStats::retained`]); the largest retainers with their shortest path from a GC
//!   root; rendered by [`top_text`] and [`top_json`].
//!
//! A [`HeapDump`] is assumed to satisfy [`HeapDump::validate`]; references and roots out of
//! range are skipped rather than followed, and classes out of range are nameless. Objects are
//! numbered by `u32` ([`ObjIdx`]); the two highest values are [`UNREACHED`] and
//! [`VIRTUAL_ROOT`]. An object with more than 2³² − 1 references (impossible in Java) has the
//! rest ignored.
//!
//! [`synthetic_heap`] generates large heaps for benchmarks and tests.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::model::heap::{
    BasicType, Class, ClassIdx, ClassKind, FieldDesc, FieldIdx, HeapDump, NO_FIELD, ObjIdx, ObjectKind, REF_NULL, Root,
    RootKind,
};
use crate::model::{
    DumpFlags, FrameId, Mapping, MappingId, Profile, ProfileMeta, StackId, Tables, ValueKind, ValueType,
};

/// In a parent or dominator array: the object was not reached from any root.
pub const UNREACHED: ObjIdx = u32::MAX;
/// In a parent or dominator array: the object hangs directly below the virtual root (it is a
/// root in the shortest-path tree; in the dominator tree no single object dominates it).
pub const VIRTUAL_ROOT: ObjIdx = u32::MAX - 1;

/// The frame of the only node of an incomplete graph without roots (traceconv's text).
pub const INCOMPLETE_GRAPH_FRAME: &str = "ERROR: INCOMPLETE GRAPH (try increasing buffer size)";

/// The mapping name of every frame of a heap profile (trace processor's `map_name`).
pub const JAVA_MAPPING: &str = "JAVA";

/// The heap name of heap profiles ([`ProfileMeta::heap`]).
pub const JAVA_HEAP_NAME: &str = "java";

fn root_precedence(k: RootKind) -> u8 {
    match k {
        RootKind::StickyClass => 3,
        RootKind::JniGlobal => 2,
        RootKind::JniLocal => 1,
        _ => 0,
    }
}

/// A heap with its GC roots and edge rules fixed (see the module docs); every analysis reads
/// one.
#[derive(Debug)]
pub struct RootedHeap<'a> {
    dump: &'a HeapDump,
    n: usize,
    root_kind: Vec<Option<RootKind>>,
    roots: Vec<ObjIdx>,
    /// Per class: the field indexes that are a weak referent (empty for most classes).
    weak_fields: Vec<Box<[FieldIdx]>>,
    /// Bit per object: its class has weak referent fields (empty when no class has), so that
    /// a search does not look up the class of every object it visits.
    weak_bits: Vec<u64>,
    /// Objects that are a class object with static references: (object, class), sorted.
    statics: Vec<(ObjIdx, ClassIdx)>,
    /// Bit per object: it appears in `statics`.
    has_statics: Vec<u64>,
    /// The class `java.lang.Class`, when the dump has one.
    class_class: Option<ClassIdx>,
    /// Instances of `java.lang.Class` that are a class's object, with their display names
    /// (`java.lang.Class<X>`), sorted by object.
    class_objects: Vec<(ObjIdx, String)>,
}

/// Strips a heap-graph type prefix (`"java.lang.Object java.lang.ref.Reference.referent"`).
fn strip_type(name: &str) -> &str {
    name.rsplit_once(' ').map_or(name, |(_, n)| n)
}

const QUALIFIED_REFERENT: &str = "java.lang.ref.Reference.referent";
const REFERENCE_CLASS: &str = "java.lang.ref.Reference";
/// The package of `java.lang.ref.Reference` and its runtime subclasses; applications cannot
/// declare classes in it.
const REFERENCE_PACKAGE: &str = "java.lang.ref.";

impl<'a> RootedHeap<'a> {
    /// Fixes the roots and edge rules of `dump`. Linear in objects, roots and classes.
    pub fn new(dump: &'a HeapDump) -> Self {
        let n = dump.obj_id.len().min(VIRTUAL_ROOT as usize);
        let mut root_kind: Vec<Option<RootKind>> = vec![None; n];
        let mut roots = Vec::new();
        for &Root { object, kind } in &dump.roots {
            if object as usize >= n {
                continue;
            }
            let slot = &mut root_kind[object as usize];
            match *slot {
                None => {
                    *slot = Some(kind);
                    roots.push(object);
                }
                Some(old) if root_precedence(kind) > root_precedence(old) => *slot = Some(kind),
                Some(_) => {}
            }
        }
        let weak_fields = weak_fields(dump);
        let mut weak_bits = Vec::new();
        if weak_fields.iter().any(|w| !w.is_empty()) {
            weak_bits = vec![0u64; n.div_ceil(64)];
            for (o, &c) in dump.obj_class[..n].iter().enumerate() {
                if weak_fields.get(c as usize).is_some_and(|w| !w.is_empty()) {
                    weak_bits[o / 64] |= 1 << (o % 64);
                }
            }
        }
        let mut statics: Vec<(ObjIdx, ClassIdx)> = dump
            .classes
            .iter()
            .enumerate()
            .filter_map(|(c, cl)| match cl.object {
                Some(o) if (o as usize) < n && !cl.static_refs.is_empty() => Some((o, c as ClassIdx)),
                _ => None,
            })
            .collect();
        statics.sort_unstable();
        let mut has_statics = Vec::new();
        if !statics.is_empty() {
            has_statics = vec![0u64; n.div_ceil(64)];
            for &(o, _) in &statics {
                has_statics[o as usize / 64] |= 1 << (o % 64);
            }
        }
        let class_class = dump.classes.iter().position(|c| c.name == "java.lang.Class").map(|c| c as ClassIdx);
        let mut class_objects: Vec<(ObjIdx, String)> = dump
            .classes
            .iter()
            .filter_map(|cl| match cl.object {
                Some(o) if (o as usize) < n && Some(dump.obj_class[o as usize]) == class_class => {
                    Some((o, format!("java.lang.Class<{}>", cl.name)))
                }
                _ => None,
            })
            .collect();
        class_objects.sort();
        class_objects.dedup_by_key(|e| e.0);
        RootedHeap {
            dump,
            n,
            root_kind,
            roots,
            weak_fields,
            weak_bits,
            statics,
            has_statics,
            class_class,
            class_objects,
        }
    }

    /// The dump.
    pub fn dump(&self) -> &'a HeapDump {
        self.dump
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when the heap has no object.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The rooted objects, each once, in the order their first root entry was listed.
    pub fn roots(&self) -> &[ObjIdx] {
        &self.roots
    }

    /// The effective root kind of object `o` (`None` when it is not a root).
    pub fn root_kind(&self, o: ObjIdx) -> Option<RootKind> {
        self.root_kind.get(o as usize).copied().flatten()
    }

    /// The class name of object `o` (empty for a class out of range). An instance of
    /// `java.lang.Class` that is a class's object ([`Class::object`], as hprof readers make
    /// them) is named `java.lang.Class<X>`, as heap graphs name their class objects.
    pub fn class_name(&self, o: ObjIdx) -> &str {
        let c = self.dump.obj_class[o as usize];
        if Some(c) == self.class_class {
            if let Ok(i) = self.class_objects.binary_search_by_key(&o, |e| e.0) {
                return &self.class_objects[i].1;
            }
        }
        self.dump.classes.get(c as usize).map_or("", |c| c.name.as_str())
    }

    /// The frame name of object `o`: its class name, with `" [ROOT_KIND]"` for a root.
    pub fn frame_name(&self, o: ObjIdx) -> String {
        match self.root_kind(o) {
            Some(k) => format!("{} [{}]", self.class_name(o), k.perfetto_name()),
            None => self.class_name(o).to_owned(),
        }
    }

    #[inline]
    fn weak_of(&self, o: ObjIdx) -> &[FieldIdx] {
        if self.weak_bits.is_empty() || self.weak_bits[o as usize / 64] & (1 << (o % 64)) == 0 {
            return &[];
        }
        let c = self.dump.obj_class[o as usize] as usize;
        self.weak_fields.get(c).map_or(&[], |w| w)
    }

    fn csr(&self, o: ObjIdx) -> (usize, usize) {
        let a = self.dump.ref_start[o as usize] as usize;
        let b = self.dump.ref_start[o as usize + 1] as usize;
        (a, b.min(a + u32::MAX as usize))
    }

    fn statics_of(&self, o: ObjIdx) -> &[(ObjIdx, ClassIdx)] {
        if self.has_statics.is_empty() || self.has_statics[o as usize / 64] & (1 << (o % 64)) == 0 {
            return &[];
        }
        let lo = self.statics.partition_point(|&(x, _)| x < o);
        let hi = self.statics.partition_point(|&(x, _)| x <= o);
        &self.statics[lo..hi]
    }

    /// Calls `f(target)` for every edge of `o`, in slot order.
    #[inline]
    pub fn for_each_target(&self, o: ObjIdx, mut f: impl FnMut(ObjIdx)) {
        let d = self.dump;
        let (a, b) = self.csr(o);
        let weak = self.weak_of(o);
        if weak.is_empty() {
            for &t in &d.ref_target[a..b] {
                if (t as usize) < self.n {
                    f(t);
                }
            }
        } else {
            for i in a..b {
                let t = d.ref_target[i];
                if (t as usize) < self.n && !weak.contains(&d.ref_field[i]) {
                    f(t);
                }
            }
        }
        for &(_, c) in self.statics_of(o) {
            for &(_, t) in &self.dump.classes[c as usize].static_refs {
                if (t as usize) < self.n {
                    f(t);
                }
            }
        }
    }

    /// Calls `f(slot, field, target)` for every edge of `o`: `slot` counts `o`'s references
    /// from 0 (static references of a class object after them).
    pub fn for_each_edge(&self, o: ObjIdx, mut f: impl FnMut(u32, FieldIdx, ObjIdx)) {
        let d = self.dump;
        let (a, b) = self.csr(o);
        let weak = self.weak_of(o);
        for i in a..b {
            let (t, field) = (d.ref_target[i], d.ref_field[i]);
            if (t as usize) < self.n && !weak.contains(&field) {
                f((i - a) as u32, field, t);
            }
        }
        let mut slot = (b - a) as u32;
        for &(_, c) in self.statics_of(o) {
            for &(field, t) in &self.dump.classes[c as usize].static_refs {
                if (t as usize) < self.n {
                    f(slot, field, t);
                }
                slot = slot.saturating_add(1);
            }
        }
    }

    /// From position `*k` of `o`'s slots on, the first edge target that `accept` takes;
    /// `*k` is left just past it (or at the end).
    #[inline]
    fn scan(&self, o: ObjIdx, k: &mut u32, mut accept: impl FnMut(ObjIdx) -> bool) -> Option<ObjIdx> {
        let d = self.dump;
        let (a, b) = self.csr(o);
        let len = (b - a) as u32;
        let weak = self.weak_of(o);
        while *k < len {
            let i = a + *k as usize;
            *k += 1;
            let t = d.ref_target[i];
            if (t as usize) < self.n && (weak.is_empty() || !weak.contains(&d.ref_field[i])) && accept(t) {
                return Some(t);
            }
        }
        let statics = self.statics_of(o);
        if !statics.is_empty() {
            let mut base = len;
            for &(_, c) in statics {
                let refs = &self.dump.classes[c as usize].static_refs;
                let end = base.saturating_add(refs.len() as u32);
                while *k < end {
                    let t = refs[(*k - base) as usize].1;
                    *k += 1;
                    if (t as usize) < self.n && accept(t) {
                        return Some(t);
                    }
                }
                base = end;
            }
        }
        None
    }

    /// Per object: reachable from a root. Linear, with an explicit stack.
    pub fn reachable(&self) -> Vec<bool> {
        let mut seen = vec![false; self.n];
        let mut stack: Vec<ObjIdx> = Vec::new();
        for &r in &self.roots {
            if !seen[r as usize] {
                seen[r as usize] = true;
                stack.push(r);
            }
            while let Some(o) = stack.pop() {
                self.for_each_target(o, |t| {
                    if !seen[t as usize] {
                        seen[t as usize] = true;
                        stack.push(t);
                    }
                });
            }
        }
        seen
    }

    /// The roots in the order traceconv seeds its search: by class name, then object index.
    pub fn roots_by_class_name(&self) -> Vec<ObjIdx> {
        let classes = &self.dump.classes;
        let mut by_name: Vec<ClassIdx> = (0..classes.len() as ClassIdx).collect();
        by_name.sort_by(|&a, &b| classes[a as usize].name.cmp(&classes[b as usize].name).then(a.cmp(&b)));
        let mut rank = vec![0u32; classes.len()];
        for (r, &c) in by_name.iter().enumerate() {
            rank[c as usize] = r as u32;
        }
        let mut roots = self.roots.clone();
        // Classes out of range sort last, as the empty name would not: they have no name at all.
        let key = |o: ObjIdx| (rank.get(self.dump.obj_class[o as usize] as usize).copied().unwrap_or(u32::MAX), o);
        roots.sort_unstable_by_key(|&o| key(o));
        roots
    }

    /// The shortest-path tree with traceconv's tie rules (see the module docs). Linear apart
    /// from sorting each object's targets.
    pub fn shortest_path_tree(&self) -> ShortestPathTree {
        let mut parent = vec![UNREACHED; self.n];
        // Reached bits: a small array for the test every edge makes.
        let mut seen: Vec<u64> = vec![0; self.n.div_ceil(64)];
        let is_seen = |seen: &[u64], t: ObjIdx| seen[t as usize / 64] & (1 << (t % 64)) != 0;
        let mut order: Vec<ObjIdx> = self.roots_by_class_name();
        for &r in &order {
            parent[r as usize] = VIRTUAL_ROOT;
            seen[r as usize / 64] |= 1 << (r % 64);
        }
        let mut buf: Vec<ObjIdx> = Vec::new();
        let mut head = 0;
        while head < order.len() {
            let o = order[head];
            head += 1;
            buf.clear();
            self.for_each_target(o, |t| {
                if !is_seen(&seen, t) {
                    buf.push(t);
                }
            });
            if buf.windows(2).any(|w| w[0] > w[1]) {
                buf.sort_unstable();
            }
            for &t in &buf {
                if !is_seen(&seen, t) {
                    seen[t as usize / 64] |= 1 << (t % 64);
                    parent[t as usize] = o;
                    order.push(t);
                }
            }
        }
        ShortestPathTree { parent, order }
    }

    /// traceconv's `--java-heap` profile of the shortest-path tree (see the module docs):
    /// sample types `Total allocation count`/`count` and `Total allocation size`/`bytes`,
    /// frames in mapping `JAVA` with only a name, one sample per merged node with its self
    /// values, in the order the nodes were first reached. A heap without roots gives no sample
    /// (traceconv writes no file), or the incomplete-graph node when [`HeapDump::incomplete`]
    /// says why it is incomplete.
    pub fn spt_profile(&self, spt: &ShortestPathTree) -> Profile {
        let types = vec![
            ValueType::new("Total allocation count", "count", ValueKind::TotalCount),
            ValueType::new("Total allocation size", "bytes", ValueKind::TotalSize),
        ];
        if self.roots.is_empty() && !self.dump.incomplete.is_empty() {
            let mut b = TreeProfileBuilder::new(self);
            let f = b.named_frame(INCOMPLETE_GRAPH_FRAME);
            let s = b.tables.intern_stack_node(None, f);
            b.add(s, 1, 1);
            return b.finish(types);
        }
        self.tree_profile(&spt.order, &spt.parent, 1, types)
    }

    /// The dominator-tree profile (see the module docs): sample types `Object count`/`count`
    /// and `Object size`/`bytes`, whose cumulative values are retained count and size. A
    /// `[native]` child node has count 0, so that counts are objects.
    pub fn dominator_profile(&self, dom: &Dominators) -> Profile {
        let types = vec![
            ValueType::new("Object count", "count", ValueKind::TotalCount),
            ValueType::new("Object size", "bytes", ValueKind::TotalSize),
        ];
        self.tree_profile(&dom.order, &dom.idom, 0, types)
    }

    /// A profile of a tree given by `parent` (each object of `order` after its parent).
    fn tree_profile(&self, order: &[ObjIdx], parent: &[ObjIdx], native_count: i64, types: Vec<ValueType>) -> Profile {
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

    /// Immediate dominators and retained sizes (see the module docs and [`Dominators`]).
    pub fn dominators(&self) -> Dominators {
        let bound = self.dump.ref_target.len()
            + self.roots.len()
            + self.statics.iter().map(|&(_, c)| self.dump.classes[c as usize].static_refs.len()).sum::<usize>();
        let (vertex, idom) =
            if bound < u32::MAX as usize { self.dominator_tree::<u32>() } else { self.dominator_tree::<u64>() };
        // Back to object indexes, and retained sizes bottom-up (in reverse preorder every
        // object comes after those it dominates).
        let d = self.dump;
        let n = self.n;
        let mut out_idom = vec![UNREACHED; n];
        let mut retained = vec![0u64; n];
        let mut retained_native = vec![0u64; n];
        for w in 1..vertex.len() {
            let o = vertex[w] as usize;
            let p = idom[w];
            out_idom[o] = if p == 0 { VIRTUAL_ROOT } else { vertex[p as usize] };
            retained[o] = d.obj_self_size[o];
            retained_native[o] = d.obj_native_size[o];
        }
        for w in (1..vertex.len()).rev() {
            let p = idom[w];
            if p != 0 {
                let (o, po) = (vertex[w] as usize, vertex[p as usize] as usize);
                retained[po] = retained[po].saturating_add(retained[o]);
                retained_native[po] = retained_native[po].saturating_add(retained_native[o]);
            }
        }
        drop(idom);
        let mut order = vertex;
        order.remove(0);
        Dominators { idom: out_idom, order, retained, retained_native }
    }

    /// The dominator tree over DFS numbers: (vertex, idom), where `vertex[w]` is the object
    /// numbered `w` (`vertex[0]` the virtual root) and `idom[w]` the number of its immediate
    /// dominator. `O` holds offsets into the predecessor lists.
    fn dominator_tree<O: Offset>(&self) -> (Vec<ObjIdx>, Vec<u32>) {
        const UNSEEN: u32 = u32::MAX;
        // 1. Depth-first numbering from the virtual root (number 0), counting each object's
        // in-edges on the way: `info[o]` = (number, in-degree), one cache line for both. The
        // cursor of each node on the search path lives in `semi`.
        let mut info: Vec<(u32, O)> = vec![(UNSEEN, O::ZERO); self.n];
        // Visited bits: the test a search waits on reads this small array, not `info`, whose
        // updates are left to overlap.
        let mut seen: Vec<u64> = vec![0; self.n.div_ceil(64)];
        let visit = |seen: &mut Vec<u64>, o: ObjIdx| seen[o as usize / 64] |= 1 << (o % 64);
        let mut vertex: Vec<ObjIdx> = vec![VIRTUAL_ROOT];
        let mut parent: Vec<u32> = vec![0];
        let mut semi: Vec<u32> = vec![0];
        for &r in &self.roots {
            info[r as usize].1.inc(); // the edge from the virtual root
            if info[r as usize].0 != UNSEEN {
                continue;
            }
            let mut cur = vertex.len() as u32;
            info[r as usize].0 = cur;
            visit(&mut seen, r);
            vertex.push(r);
            parent.push(0);
            semi.push(0);
            while cur != 0 {
                let o = vertex[cur as usize];
                let mut k = semi[cur as usize];
                let next = self.scan(o, &mut k, |t| {
                    info[t as usize].1.inc();
                    seen[t as usize / 64] & (1 << (t % 64)) == 0
                });
                semi[cur as usize] = k;
                match next {
                    Some(t) => {
                        let w = vertex.len() as u32;
                        info[t as usize].0 = w;
                        visit(&mut seen, t);
                        vertex.push(t);
                        parent.push(cur);
                        semi.push(0);
                        cur = w;
                    }
                    None => cur = parent[cur as usize],
                }
            }
        }
        drop(seen);
        // 2. Predecessor lists by number in CSR form, `preds[ps[w]..ps[w + 1]]`: end offsets
        // in `info`, then filled backwards, leaving the start offsets there.
        let nn = vertex.len();
        let mut total = 0usize;
        for &o in &vertex[1..] {
            total += info[o as usize].1.get();
            info[o as usize].1 = O::from_usize(total);
        }
        let mut preds = vec![0u32; total];
        for &r in &self.roots {
            let e = &mut info[r as usize].1;
            e.dec();
            preds[e.get()] = 0;
        }
        // Objects in index order (references read sequentially), not in DFS order.
        for o in 0..self.n {
            let w = info[o].0;
            if w == UNSEEN {
                continue;
            }
            self.for_each_target(o as ObjIdx, |t| {
                let e = &mut info[t as usize].1;
                e.dec();
                preds[e.get()] = w;
            });
        }
        let mut ps: Vec<O> = Vec::with_capacity(nn + 1);
        ps.push(O::ZERO);
        ps.extend(vertex[1..].iter().map(|&o| info[o as usize].1));
        ps.push(O::from_usize(total));
        drop(info);
        // 3. Semi-NCA; `parent` becomes the immediate dominators.
        semi_nca(&ps, &preds, &mut parent, &mut semi);
        (vertex, parent)
    }

    /// Per class: instances, bytes, and retained bytes without double counting (see
    /// [`ClassStats`]), classes with no instance left out, sorted by retained bytes (Java plus
    /// native) descending, then shallow bytes descending, then name and class index.
    pub fn class_histogram(&self, dom: &Dominators) -> Vec<ClassStats> {
        let d = self.dump;
        let nc = d.classes.len() + 1; // the last row collects objects of classes out of range
        let class_of = |o: usize| (d.obj_class[o] as usize).min(nc - 1);
        let mut rows: Vec<ClassStats> = (0..nc)
            .map(|c| ClassStats {
                class: c as ClassIdx,
                name: d.classes.get(c).map_or_else(|| "<unknown class>".to_owned(), |c| c.name.clone()),
                ..Default::default()
            })
            .collect();
        for o in 0..self.n {
            let r = &mut rows[class_of(o)];
            r.instances += 1;
            r.shallow = r.shallow.saturating_add(d.obj_self_size[o]);
            r.native = r.native.saturating_add(d.obj_native_size[o]);
        }
        // Children of each dominator-tree node, in CSR form; then a depth-first walk that
        // keeps, per class, how many instances are on the path from the virtual root.
        let mut start = vec![0u32; self.n + 1];
        let mut tops: Vec<ObjIdx> = Vec::new();
        for &o in &dom.order {
            rows[class_of(o as usize)].reachable_instances += 1;
            match dom.idom[o as usize] {
                VIRTUAL_ROOT => tops.push(o),
                p => start[p as usize] += 1,
            }
        }
        let mut total = 0u32;
        for s in start.iter_mut() {
            total += *s;
            *s = total;
        }
        let mut kids = vec![0 as ObjIdx; total as usize];
        for &o in dom.order.iter().rev() {
            let p = dom.idom[o as usize];
            if p != VIRTUAL_ROOT {
                start[p as usize] -= 1;
                kids[start[p as usize] as usize] = o;
            }
        }
        let mut on_path = vec![0u32; nc];
        let mut todo: Vec<ObjIdx> = tops.iter().rev().copied().collect();
        let mut path: Vec<ObjIdx> = Vec::new();
        while let Some(o) = todo.pop() {
            let up = dom.idom[o as usize];
            while let Some(&top) = path.last() {
                if top == up {
                    break;
                }
                on_path[class_of(top as usize)] -= 1;
                path.pop();
            }
            let c = class_of(o as usize);
            if on_path[c] == 0 {
                let r = &mut rows[c];
                r.retained = r.retained.saturating_add(dom.retained[o as usize]);
                r.retained_native = r.retained_native.saturating_add(dom.retained_native[o as usize]);
            }
            on_path[c] += 1;
            path.push(o);
            let (a, b) = (start[o as usize] as usize, start[o as usize + 1] as usize);
            todo.extend(kids[a..b].iter().rev());
        }
        rows.retain(|r| r.instances > 0);
        rows.sort_by(|a, b| {
            b.retained
                .saturating_add(b.retained_native)
                .cmp(&a.retained.saturating_add(a.retained_native))
                .then(b.shallow.cmp(&a.shallow))
                .then_with(|| a.name.cmp(&b.name))
                .then(a.class.cmp(&b.class))
        });
        rows
    }

    /// The label of the edge from `from` to `to` (`.field`, `[index]` for an array element,
    /// `.<ref N>` for an unnamed reference of another object); `None` without such an edge.
    pub fn edge_label(&self, from: ObjIdx, to: ObjIdx) -> Option<String> {
        let mut found = None;
        self.for_each_edge(from, |slot, field, t| {
            if t == to && found.is_none() {
                found = Some((slot, field));
            }
        });
        let (slot, field) = found?;
        Some(if field != NO_FIELD {
            let name = strip_type(self.dump.field_name(field));
            format!(".{}", name.rsplit_once('.').map_or(name, |(_, f)| f))
        } else if matches!(self.dump.obj_kind[from as usize], ObjectKind::ObjectArray) {
            format!("[{slot}]")
        } else {
            format!(".<ref {slot}>")
        })
    }

    /// The shortest path from a GC root to `o` along `spt`; at most `max_steps` objects are
    /// listed (the first half nearest the root, the rest nearest `o`), the others counted in
    /// [`RootPath::elided`]. `None` for an object no root reaches.
    pub fn path_to_root(&self, spt: &ShortestPathTree, o: ObjIdx, max_steps: usize) -> Option<RootPath> {
        if spt.parent.get(o as usize).is_none_or(|&p| p == UNREACHED) {
            return None;
        }
        let mut len = 1usize;
        let mut x = o;
        while spt.parent[x as usize] != VIRTUAL_ROOT {
            x = spt.parent[x as usize];
            len += 1;
        }
        let root = x;
        let max_steps = max_steps.max(2);
        let (head, tail) = if len > max_steps { (max_steps / 2, max_steps - max_steps / 2) } else { (len, 0) };
        // Walk up from `o`: positions 0 (o) .. len - 1 (the root).
        let mut near: Vec<ObjIdx> = Vec::new(); // tail part, o first
        let mut far: Vec<ObjIdx> = Vec::new(); // head part, nearest the root last
        let mut x = o;
        for pos in 0..len {
            if len <= max_steps || pos >= len - head {
                far.push(x);
            } else if pos < tail {
                near.push(x);
            }
            x = spt.parent[x as usize];
        }
        far.reverse();
        let elided = len - far.len() - near.len();
        let chain: Vec<(ObjIdx, bool)> =
            far.iter().map(|&x| (x, false)).chain(near.iter().rev().map(|&x| (x, true))).collect();
        let mut steps = Vec::with_capacity(chain.len());
        for (i, &(x, _)) in chain.iter().enumerate() {
            let next = chain.get(i + 1).map(|&(y, _)| y);
            // Across the elided gap the next listed object is not a direct successor.
            let contiguous = next.is_some_and(|y| spt.parent[y as usize] == x);
            steps.push(PathStep {
                object: x,
                id: self.dump.obj_id[x as usize],
                class: self.class_name(x).to_owned(),
                via: if contiguous { self.edge_label(x, next.unwrap_or(x)) } else { None },
            });
        }
        Some(RootPath {
            root_kind: self.root_kind(root).map_or_else(String::new, |k| k.perfetto_name().to_owned()),
            length: len,
            elided,
            elided_after: if elided > 0 { head } else { 0 },
            steps,
        })
    }

    /// The `top` report: totals, the class histogram's first `opts.classes` rows, and the
    /// `opts.retainers` objects with the largest retained size (Java plus native; ties by
    /// object index), each with its shortest path from a GC root.
    pub fn heap_top(&self, spt: &ShortestPathTree, dom: &Dominators, opts: &TopOptions) -> HeapTop {
        let d = self.dump;
        let total = |v: &[u64]| v.iter().fold(0u64, |a, &b| a.saturating_add(b));
        let reachable_shallow = dom.order.iter().fold(0u64, |a, &o| a.saturating_add(d.obj_self_size[o as usize]));
        let reachable_native = dom.order.iter().fold(0u64, |a, &o| a.saturating_add(d.obj_native_size[o as usize]));
        let hist = self.class_histogram(dom);
        let retained_all = |o: usize| dom.retained[o].saturating_add(dom.retained_native[o]);
        let mut best: BinaryHeap<Reverse<(u64, Reverse<ObjIdx>)>> = BinaryHeap::new();
        if opts.retainers > 0 {
            for &o in &dom.order {
                let key = Reverse((retained_all(o as usize), Reverse(o)));
                if best.len() < opts.retainers {
                    best.push(key);
                } else if best.peek().is_some_and(|top| key < *top) {
                    best.pop();
                    best.push(key);
                }
            }
        }
        let mut picked: Vec<(u64, ObjIdx)> = best.into_iter().map(|Reverse((r, Reverse(o)))| (r, o)).collect();
        picked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let retainers = picked
            .into_iter()
            .map(|(_, o)| Retainer {
                object: o,
                id: d.obj_id[o as usize],
                class: self.class_name(o).to_owned(),
                root_kind: self.root_kind(o).map(|k| k.perfetto_name().to_owned()),
                shallow: d.obj_self_size[o as usize],
                native: d.obj_native_size[o as usize],
                retained: dom.retained[o as usize],
                retained_native: dom.retained_native[o as usize],
                path: self.path_to_root(spt, o, opts.max_path_steps),
            })
            .collect();
        HeapTop {
            source: d.source.clone(),
            pid: d.pid,
            process_name: d.process_name.clone(),
            timestamp: d.timestamp,
            incomplete: d.incomplete.clone(),
            objects: self.n as u64,
            reachable_objects: dom.order.len() as u64,
            roots: self.roots.len() as u64,
            shallow: total(&d.obj_self_size),
            native: total(&d.obj_native_size),
            reachable_shallow,
            reachable_native,
            dangling_refs: d.dangling_refs,
            class_count: hist.len() as u64,
            classes: hist.into_iter().take(opts.classes).collect(),
            retainers,
        }
    }
}

/// Per class: the field indexes that are weak referents (see the module docs).
fn weak_fields(dump: &HeapDump) -> Vec<Box<[FieldIdx]>> {
    let qualified: Vec<FieldIdx> = (0..dump.field_names.len() as FieldIdx)
        .filter(|&f| strip_type(&dump.field_names[f as usize]) == QUALIFIED_REFERENT)
        .collect();
    let bare: Vec<FieldIdx> =
        (0..dump.field_names.len() as FieldIdx).filter(|&f| dump.field_names[f as usize] == "referent").collect();
    dump.classes
        .iter()
        .map(|c| {
            if !c.kind.referent_is_weak() {
                return Box::default();
            }
            let mut out = qualified.clone();
            for &f in &bare {
                let (mut by_reference, mut by_other) = (false, false);
                let mut cur = Some(c);
                for _ in 0..=dump.classes.len() {
                    let Some(cl) = cur else { break };
                    if cl.fields.iter().any(|fd| fd.name == f) {
                        if cl.name.starts_with(REFERENCE_PACKAGE) {
                            by_reference = true;
                        } else {
                            by_other = true;
                        }
                    }
                    cur = cl.superclass.and_then(|s| dump.classes.get(s as usize));
                }
                if by_reference || !by_other {
                    out.push(f);
                }
            }
            out.into_boxed_slice()
        })
        .collect()
}

fn sat_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Array offsets of the predecessor lists: `u32` unless a heap has 2³² references.
trait Offset: Copy {
    const ZERO: Self;
    fn from_usize(v: usize) -> Self;
    fn get(self) -> usize;
    fn inc(&mut self);
    fn dec(&mut self);
}

impl Offset for u32 {
    const ZERO: Self = 0;
    fn from_usize(v: usize) -> Self {
        v as u32
    }
    fn get(self) -> usize {
        self as usize
    }
    fn inc(&mut self) {
        *self += 1;
    }
    fn dec(&mut self) {
        *self -= 1;
    }
}

impl Offset for u64 {
    const ZERO: Self = 0;
    fn from_usize(v: usize) -> Self {
        v as u64
    }
    fn get(self) -> usize {
        self as usize
    }
    fn inc(&mut self) {
        *self += 1;
    }
    fn dec(&mut self) {
        *self -= 1;
    }
}

/// Semi-NCA over DFS numbers (0 is the start node): `parent` (the DFS tree) becomes the
/// immediate dominators; `semi` is scratch of the same length.
///
/// Nodes are processed in reverse preorder: a node's semidominator is the least of its
/// predecessors' evaluations, then the node is linked below its DFS parent. The link-eval
/// forest is Lengauer and Tarjan's balanced one ("sophisticated" linking, with path
/// compression), which keeps the paths an evaluation walks short: on heap graphs, whose
/// depth-first trees are deep, simple linking walked about ten times as many (dependent,
/// cache-missing) steps. Semi-NCA needs semidominator *values* only, so the labels hold values
/// rather than nodes, and each forest node is one 16-byte entry. A predecessor numbered below
/// the current node is not linked yet and is its own candidate.
fn semi_nca<O: Offset>(ps: &[O], preds: &[u32], parent: &mut [u32], semi: &mut [u32]) {
    // Forest entries by number + 1 (0 is Lengauer and Tarjan's sentinel): [ancestor, label
    // (a semidominator value), child, size].
    let nn = parent.len();
    let mut f: Vec<[u32; 4]> = Vec::with_capacity(nn + 1);
    f.push([0, 0, 0, 0]);
    f.extend((0..nn as u32).map(|v| [0, v, 0, 1]));
    let mut stack: Vec<u32> = Vec::new();
    for w in (1..nn).rev() {
        let mut s = w as u32;
        for &v in &preds[ps[w].get()..ps[w + 1].get()] {
            if (v as usize) < w {
                s = s.min(v);
                continue;
            }
            if v as usize == w {
                continue;
            }
            let vi = v as usize + 1;
            if f[vi][0] == 0 {
                s = s.min(f[vi][1]);
                continue;
            }
            // EVAL(v): compress the path, iteratively (find it, then fold minima down).
            let mut x = vi as u32;
            while f[f[x as usize][0] as usize][0] != 0 {
                stack.push(x);
                x = f[x as usize][0];
            }
            while let Some(y) = stack.pop() {
                let a = f[y as usize][0];
                let [aa, la, _, _] = f[a as usize];
                let e = &mut f[y as usize];
                if la < e[1] {
                    e[1] = la;
                }
                e[0] = aa;
            }
            let a = f[vi][0] as usize;
            s = s.min(f[vi][1].min(f[a][1]));
        }
        semi[w] = s;
        // LINK(parent(w), w).
        let (pv, wi) = (parent[w] as usize + 1, w + 1);
        f[wi][1] = s;
        let mut sx = wi;
        loop {
            let cs = f[sx][2] as usize;
            if s >= f[cs][1] {
                break;
            }
            let ccs = f[cs][2] as usize;
            if u64::from(f[sx][3]) + u64::from(f[ccs][3]) >= 2 * u64::from(f[cs][3]) {
                f[cs][0] = sx as u32;
                f[sx][2] = ccs as u32;
            } else {
                f[cs][3] = f[sx][3];
                f[sx][0] = cs as u32;
                sx = cs;
            }
        }
        f[sx][1] = s;
        f[pv][3] += f[wi][3];
        if u64::from(f[pv][3]) < 2 * u64::from(f[wi][3]) {
            let c = f[pv][2];
            f[pv][2] = sx as u32;
            sx = c as usize;
        }
        while sx != 0 {
            f[sx][0] = pv as u32;
            sx = f[sx][2] as usize;
        }
    }
    drop(f);
    for w in 1..nn {
        let mut d = parent[w];
        while d > semi[w] {
            d = parent[d as usize];
        }
        parent[w] = d;
    }
}

/// Builds a profile of a tree of objects: frames per (class, root kind, native), stack nodes
/// merged by the stack table, values per node.
struct TreeProfileBuilder<'h, 'a> {
    heap: &'h RootedHeap<'a>,
    tables: Tables,
    mapping: MappingId,
    plain: Vec<Option<FrameId>>,
    other: FxHashMap<(ClassIdx, Option<RootKind>, bool), FrameId>,
    values: Vec<[i64; 2]>,
}

impl<'h, 'a> TreeProfileBuilder<'h, 'a> {
    fn new(heap: &'h RootedHeap<'a>) -> Self {
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

    fn frame(&mut self, o: ObjIdx, native: bool) -> FrameId {
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
    fn named_frame(&mut self, name: &str) -> FrameId {
        let s = self.tables.strings.intern(name);
        let f = self.tables.intern_frame(Some(self.mapping), 0, s);
        let frame = &mut self.tables.frames_mut()[f.0 as usize];
        frame.name = s;
        frame.raw_name = crate::model::StringId::EMPTY;
        f
    }

    fn add(&mut self, s: StackId, count: i64, size: i64) {
        let i = s.0 as usize;
        if self.values.len() <= i {
            self.values.resize(i + 1, [0, 0]);
        }
        let v = &mut self.values[i];
        v[0] = v[0].saturating_add(count);
        v[1] = v[1].saturating_add(size);
    }

    fn finish(self, types: Vec<ValueType>) -> Profile {
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
        p.default_sample_type = 1;
        for (i, v) in self.values.iter().enumerate() {
            p.push_sample(StackId(i as u32), v);
        }
        p
    }
}

/// The shortest-path tree: per object the object that first reached it.
#[derive(Debug, Clone)]
pub struct ShortestPathTree {
    /// Per object: its parent, [`VIRTUAL_ROOT`] for a root, [`UNREACHED`] for garbage.
    pub parent: Vec<ObjIdx>,
    /// The reached objects in breadth-first order (roots first, in seeding order); every
    /// object comes after its parent.
    pub order: Vec<ObjIdx>,
}

/// The dominator tree and retained sizes.
#[derive(Debug, Clone)]
pub struct Dominators {
    /// Per object: its immediate dominator, [`VIRTUAL_ROOT`] when only the virtual root
    /// dominates it (roots, and objects reached from several roots), [`UNREACHED`] for
    /// garbage.
    pub idom: Vec<ObjIdx>,
    /// The reachable objects in depth-first preorder from the virtual root; every object comes
    /// after its immediate dominator.
    pub order: Vec<ObjIdx>,
    /// Per object: shallow Java bytes of the objects it dominates, itself included (0 for
    /// garbage).
    pub retained: Vec<u64>,
    /// Per object: native bytes of the objects it dominates, itself included.
    pub retained_native: Vec<u64>,
}

impl Dominators {
    /// Number of reachable objects.
    pub fn reachable(&self) -> usize {
        self.order.len()
    }
}

/// One row of the class histogram.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClassStats {
    /// Class index in the dump ([`HeapDump::classes`]; one past the end for objects whose
    /// class is out of range).
    pub class: ClassIdx,
    /// Class name.
    pub name: String,
    /// Instances in the dump, garbage included.
    pub instances: u64,
    /// Instances reachable from a GC root.
    pub reachable_instances: u64,
    /// Shallow bytes of all instances.
    pub shallow: u64,
    /// Native bytes of all instances.
    pub native: u64,
    /// Java bytes retained by the class's instances: the retained sizes of the reachable
    /// instances that no other instance of the class dominates (no instance of the class on
    /// their dominator chain up to the virtual root), so that an instance inside another's
    /// retained set is not counted twice. A linked list's nodes retain the list once.
    pub retained: u64,
    /// Native bytes retained by the class's instances, counted the same way.
    pub retained_native: u64,
}

/// One step of a path from a GC root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathStep {
    /// Object index.
    pub object: ObjIdx,
    /// The producer's object id.
    pub id: u64,
    /// Class name.
    pub class: String,
    /// How this object refers to the next step: `.field`, `[index]` or `.<ref N>`; `None` for
    /// the last step and before an elided stretch.
    pub via: Option<String>,
}

/// The shortest path from a GC root to an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootPath {
    /// Root kind of the first object (`ROOT_JAVA_FRAME`, ...).
    pub root_kind: String,
    /// Number of objects on the whole path, root and target included.
    pub length: usize,
    /// Objects left out of `steps` (between `steps[elided_after - 1]` and
    /// `steps[elided_after]`).
    pub elided: usize,
    /// Where the elided objects were, when there are any.
    pub elided_after: usize,
    /// The listed objects, root first.
    pub steps: Vec<PathStep>,
}

impl RootPath {
    /// One line: `[ROOT_JAVA_FRAME] Foo.next -> Bar[2] -> Baz`, with `-> ... (N more) ->` where
    /// objects are elided.
    pub fn text(&self) -> String {
        let mut s = format!("[{}] ", self.root_kind);
        for (i, st) in self.steps.iter().enumerate() {
            if i > 0 {
                if self.elided > 0 && i == self.elided_after {
                    let _ = write!(s, " -> ... ({} more) -> ", self.elided);
                } else {
                    s.push_str(" -> ");
                }
            }
            s.push_str(&st.class);
            if let Some(v) = &st.via {
                s.push_str(v);
            }
        }
        s
    }
}

/// One of the largest retainers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Retainer {
    /// Object index.
    pub object: ObjIdx,
    /// The producer's object id.
    pub id: u64,
    /// Class name.
    pub class: String,
    /// Its effective root kind, if it is a root.
    pub root_kind: Option<String>,
    /// Shallow bytes.
    pub shallow: u64,
    /// Native bytes.
    pub native: u64,
    /// Retained Java bytes.
    pub retained: u64,
    /// Retained native bytes.
    pub retained_native: u64,
    /// Shortest path from a GC root.
    pub path: Option<RootPath>,
}

/// Options of [`RootedHeap::heap_top`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopOptions {
    /// How many classes the table lists. Default: 20.
    pub classes: usize,
    /// How many of the largest retainers get a path. Default: 10.
    pub retainers: usize,
    /// Longest path listed in full, in objects; longer ones keep both ends. Default: 16.
    pub max_path_steps: usize,
}

impl Default for TopOptions {
    fn default() -> Self {
        TopOptions { classes: 20, retainers: 10, max_path_steps: 16 }
    }
}

/// The `top` report of one heap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapTop {
    /// Where the dump came from ([`HeapDump::source`]).
    pub source: String,
    /// Process id, when known.
    pub pid: Option<u32>,
    /// Process name, when known.
    pub process_name: Option<String>,
    /// Dump time, as the producer gave it.
    pub timestamp: Option<i64>,
    /// Why the dump is incomplete, if it is.
    pub incomplete: Vec<String>,
    /// Objects in the dump.
    pub objects: u64,
    /// Objects reachable from a GC root.
    pub reachable_objects: u64,
    /// Distinct rooted objects.
    pub roots: u64,
    /// Shallow bytes of all objects.
    pub shallow: u64,
    /// Native bytes of all objects.
    pub native: u64,
    /// Shallow bytes of reachable objects.
    pub reachable_shallow: u64,
    /// Native bytes of reachable objects.
    pub reachable_native: u64,
    /// References to ids that named no object.
    pub dangling_refs: u64,
    /// Classes with at least one instance.
    pub class_count: u64,
    /// The first rows of the class histogram.
    pub classes: Vec<ClassStats>,
    /// The largest retainers, largest first.
    pub retainers: Vec<Retainer>,
}

fn fmt_bytes(v: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if v >= size {
            let x = v as f64 / size as f64;
            let digits = if x >= 100.0 {
                0
            } else if x >= 10.0 {
                1
            } else {
                2
            };
            return format!("{x:.digits$} {unit}");
        }
    }
    format!("{v} B")
}

/// The `top` report for people: totals, a class table by retained size, and the largest
/// retainers with their paths from a GC root.
pub fn top_text(top: &HeapTop) -> String {
    let mut s = String::new();
    let who = match (&top.process_name, top.pid) {
        (Some(n), Some(p)) => format!("{n} (pid {p})"),
        (None, Some(p)) => format!("pid {p}"),
        (Some(n), None) => n.clone(),
        (None, None) => "unknown process".to_owned(),
    };
    let _ = write!(s, "{who}, {}", top.source);
    if let Some(t) = top.timestamp {
        let _ = write!(s, ", dump at {t}");
    }
    s.push('\n');
    for why in &top.incomplete {
        let _ = writeln!(s, "INCOMPLETE: {why}");
    }
    let _ = writeln!(
        s,
        "{} objects, {} reachable from {} roots, {} unreachable; shallow {} ({} reachable), native {} ({} reachable){}",
        top.objects,
        top.reachable_objects,
        top.roots,
        top.objects - top.reachable_objects,
        fmt_bytes(top.shallow),
        fmt_bytes(top.reachable_shallow),
        fmt_bytes(top.native),
        fmt_bytes(top.reachable_native),
        if top.dangling_refs > 0 { format!("; {} dangling references", top.dangling_refs) } else { String::new() },
    );
    let whole = top.reachable_shallow.saturating_add(top.reachable_native).max(1) as f64;
    let _ = writeln!(s, "\nClasses by retained size ({} of {}):", top.classes.len(), top.class_count);
    let _ = writeln!(
        s,
        "{:>12} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10}  class",
        "retained", "%", "ret.native", "shallow", "native", "instances", "reachable"
    );
    for c in &top.classes {
        let all = c.retained.saturating_add(c.retained_native);
        let _ = writeln!(
            s,
            "{:>12} {:>6.2}% {:>12} {:>12} {:>12} {:>10} {:>10}  {}",
            fmt_bytes(c.retained),
            100.0 * all as f64 / whole,
            fmt_bytes(c.retained_native),
            fmt_bytes(c.shallow),
            fmt_bytes(c.native),
            c.instances,
            c.reachable_instances,
            c.name
        );
    }
    let _ = writeln!(s, "\nLargest retainers, with the shortest path from a GC root:");
    for (i, r) in top.retainers.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:>3}. {} retained (+{} native), {} shallow: {} @{:#x}",
            i + 1,
            fmt_bytes(r.retained),
            fmt_bytes(r.retained_native),
            fmt_bytes(r.shallow),
            r.class,
            r.id
        );
        if let Some(p) = &r.path {
            let _ = writeln!(s, "     {}", p.text());
        }
    }
    s
}

/// The `top` report as pretty JSON (the fields of [`HeapTop`]), newline-terminated.
pub fn top_json(top: &HeapTop) -> String {
    let mut s = serde_json::to_string_pretty(top).expect("the report serializes");
    s.push('\n');
    s
}

/// A private xorshift64* generator, so that the same seed gives the same heap everywhere.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
}

/// A synthetic heap of `n` objects, the same for the same (`n`, `seed`), for benchmarks and
/// tests. Its shape, roughly like an app heap:
///
/// * a spanning tree: object `i > 0` is referenced by an earlier object, 70% of the time one of
///   the 8 just before it (long chains, as lists make), otherwise any earlier one (a bushy,
///   shallow structure);
/// * on average 1.75 cross references per object (a live object's only to live objects):
///   half to an object within 1,000 indexes, 35% to the first 1% of the objects (the popular
///   objects every heap has: class objects, constants, interned strings), 15% to any object;
///   they close cycles and share subtrees;
/// * some null slots (about 0.15 per object), `Object[]` arrays for objects with more than 4
///   references, `byte[]` leaves, and `java.lang.ref.WeakReference` leaves (one in 13 leaves)
///   whose `referent` (hprof spelling: a field declared by `java.lang.ref.Reference`) points
///   anywhere;
/// * the last 2% of the objects are garbage: their tree parents lie among themselves and
///   the first of them has none (they may still refer to live objects);
/// * roots: object 0 (`ROOT_STICKY_CLASS`, also listed as `ROOT_JNI_LOCAL`), one live object
///   in 5,000 (`ROOT_JAVA_FRAME`, every tenth `ROOT_JNI_GLOBAL`);
/// * one object in 1,000 has native bytes (4 to 64 KB).
///
/// That is about 2.9 reference slots per object (about 2.8 non-null).
pub fn synthetic_heap(n: usize, seed: u64) -> HeapDump {
    let n = n.min(VIRTUAL_ROOT as usize - 1);
    let mut rng = Rng::new(seed);
    let mut d = HeapDump {
        source: "synthetic heap".to_owned(),
        pid: Some(1),
        process_name: Some("synthetic".to_owned()),
        id_size: 4,
        heaps: vec!["app".to_owned()],
        ..Default::default()
    };
    // Classes: 0 Object, 1 Reference, 2 WeakReference, 3 Object[], 4 byte[], then 5 groups of
    // 8 app classes with 0..=4 reference fields.
    let field = |d: &mut HeapDump, name: &str| {
        d.field_names.push(name.to_owned());
        (d.field_names.len() - 1) as FieldIdx
    };
    let referent = field(&mut d, "referent");
    let fnames: Vec<FieldIdx> = (0..4).map(|i| field(&mut d, &format!("f{i}"))).collect();
    let class = |name: &str, size: u64, kind: ClassKind, superclass: Option<ClassIdx>, fields: Vec<FieldDesc>| Class {
        id: 0,
        name: name.to_owned(),
        superclass,
        instance_size: size,
        kind,
        fields,
        ..Default::default()
    };
    let obj = |f: FieldIdx| FieldDesc { name: f, ty: BasicType::Object };
    d.classes.push(class("java.lang.Object", 0, ClassKind::Normal, None, vec![]));
    d.classes.push(class(REFERENCE_CLASS, 8, ClassKind::Normal, Some(0), vec![obj(referent)]));
    d.classes.push(class("java.lang.ref.WeakReference", 8, ClassKind::WeakReference, Some(1), vec![]));
    d.classes.push(class("java.lang.Object[]", 0, ClassKind::Array, Some(0), vec![]));
    d.classes.push(class("byte[]", 0, ClassKind::Array, Some(0), vec![]));
    let (weak_class, array_class, bytes_class, first_app) = (2u32, 3u32, 4u32, 5u32);
    for refs in 0..=4usize {
        for j in 0..8 {
            let size = 8 + 4 * refs as u64 + 8 * j as u64;
            let fields = fnames[..refs].iter().map(|&f| obj(f)).collect();
            d.classes.push(class(&format!("synth.app.C{refs}_{j}"), size, ClassKind::Normal, Some(0), fields));
        }
    }
    for (i, c) in d.classes.iter_mut().enumerate() {
        c.id = 0x10 + i as u64;
    }
    // Spanning-tree parents, then children in CSR form.
    let live = n - n / 50;
    let mut tree_parent = vec![u32::MAX; n];
    for (i, slot) in tree_parent.iter_mut().enumerate().skip(1) {
        let lo = if i < live { 0 } else { live };
        if i == lo {
            continue;
        }
        let p = if rng.below(10) < 7 {
            i - 1 - rng.below(8.min(i - lo) as u64) as usize
        } else {
            lo + rng.below((i - lo) as u64) as usize
        };
        *slot = p as u32;
    }
    let mut start = vec![0u32; n + 1];
    for &p in &tree_parent {
        if p != u32::MAX {
            start[p as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut children = vec![0u32; start[n] as usize];
    let mut fill = start.clone();
    for (i, &p) in tree_parent.iter().enumerate() {
        if p != u32::MAX {
            children[fill[p as usize] as usize] = i as u32;
            fill[p as usize] += 1;
        }
    }
    drop(fill);
    drop(tree_parent);
    d.obj_id.reserve_exact(n);
    d.ref_start.reserve_exact(n + 1);
    d.ref_target.reserve_exact(n * 3);
    d.ref_field.reserve_exact(n * 3);
    let mut slots: Vec<ObjIdx> = Vec::new();
    for i in 0..n {
        slots.clear();
        slots.extend_from_slice(&children[start[i] as usize..start[i + 1] as usize]);
        // Cross references: 1.75 on average; a live object's stay among live objects, so that
        // the garbage region stays garbage.
        let cross = [0, 1, 1, 2, 2, 2, 3, 3][rng.below(8) as usize];
        let hi_all = if i < live { live } else { n };
        for _ in 0..cross {
            let t = match rng.below(20) {
                0..10 => {
                    let lo = i.saturating_sub(1000);
                    let hi = (i + 1000).min(hi_all - 1);
                    lo + rng.below((hi - lo + 1) as u64) as usize
                }
                10..17 => rng.below((hi_all / 100).max(1) as u64) as usize,
                _ => rng.below(hi_all as u64) as usize,
            };
            slots.push(t as ObjIdx);
        }
        if rng.below(7) == 0 {
            slots.push(REF_NULL);
        }
        let id = 0x1000 + 16 * i as u64;
        let native = if rng.below(1000) == 0 { 4096 + rng.below(60_000) } else { 0 };
        let o = if slots.is_empty() && rng.below(13) == 0 {
            let o = d.push_object(id, weak_class, ObjectKind::Instance, 0, 16, 0);
            d.push_ref(referent, rng.below(n as u64) as ObjIdx);
            o
        } else if slots.is_empty() && rng.below(3) == 0 {
            let len = rng.below(4096) as u32;
            d.push_object(id, bytes_class, ObjectKind::PrimitiveArray(BasicType::Byte), 0, 16 + u64::from(len), len)
        } else if slots.len() > 4 {
            let len = slots.len() as u32;
            let o = d.push_object(id, array_class, ObjectKind::ObjectArray, 0, 16 + 4 * u64::from(len), len);
            for &t in &slots {
                d.push_ref(NO_FIELD, t);
            }
            o
        } else {
            let c = first_app + 8 * slots.len() as u32 + rng.below(8) as u32;
            let size = d.classes[c as usize].instance_size;
            let o = d.push_object(id, c, ObjectKind::Instance, 0, size, 0);
            for (k, &t) in slots.iter().enumerate() {
                d.push_ref(fnames[k], t);
            }
            o
        };
        d.obj_native_size[o as usize] = native;
    }
    if n > 0 {
        d.roots.push(Root { object: 0, kind: RootKind::JniLocal });
        d.roots.push(Root { object: 0, kind: RootKind::StickyClass });
    }
    for (k, i) in (5000..live).step_by(5000).enumerate() {
        let kind = if k % 10 == 9 { RootKind::JniGlobal } else { RootKind::JavaFrame };
        d.roots.push(Root { object: i as ObjIdx, kind });
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::heap::REF_DANGLING;

    /// A small heap builder for tests: classes by name, objects by id.
    struct Builder {
        d: HeapDump,
    }

    impl Builder {
        fn new() -> Self {
            Builder { d: HeapDump { heaps: vec!["app".into()], source: "test".into(), ..Default::default() } }
        }
        fn class(&mut self, name: &str, kind: ClassKind) -> ClassIdx {
            self.d.classes.push(Class { name: name.into(), kind, ..Default::default() });
            (self.d.classes.len() - 1) as ClassIdx
        }
        fn field(&mut self, name: &str) -> FieldIdx {
            self.d.field_names.push(name.into());
            (self.d.field_names.len() - 1) as FieldIdx
        }
        /// An object with references (field, target index); targets may be sentinels.
        fn obj(&mut self, class: ClassIdx, size: u64, refs: &[(FieldIdx, ObjIdx)]) -> ObjIdx {
            let id = 0x100 * (self.d.obj_id.len() as u64 + 1);
            let o = self.d.push_object(id, class, ObjectKind::Instance, 0, size, 0);
            for &(f, t) in refs {
                self.d.push_ref(f, t);
            }
            o
        }
        fn root(&mut self, o: ObjIdx, kind: RootKind) {
            self.d.roots.push(Root { object: o, kind });
        }
    }

    /// The heap of `tests/data/traceconv/cases/heap_graph_small.textproto`, as the heap-graph
    /// decoder should make it: objects 0x100..0x800 are indexes 0..7; field names without their
    /// type prefix; no native size (0x500's registry field is on an object that is no
    /// NativeAllocationRegistry, so trace processor attributes nothing).
    fn heap_graph_small() -> HeapDump {
        let mut b = Builder::new();
        let object = b.class("java.lang.Object", ClassKind::Normal);
        let holder = b.class("com.example.Holder", ClassKind::Normal);
        let cache = b.class("com.example.Cache", ClassKind::Normal);
        let array = b.class("java.lang.Object[]", ClassKind::Array);
        let blob = b.class("com.example.Blob", ClassKind::NoReferences);
        let weak = b.class("java.lang.ref.WeakReference", ClassKind::WeakReference);
        for c in [holder, cache, blob, weak] {
            b.d.classes[c as usize].superclass = Some(object);
        }
        let f_cache = b.field("com.example.Holder.cache");
        let f_items = b.field("com.example.Cache.items");
        let f_referent = b.field("java.lang.ref.Reference.referent");
        b.obj(holder, 16, &[(f_cache, 1)]);
        b.obj(cache, 24, &[(f_items, 2)]);
        b.obj(array, 40, &[(f_items, 3), (f_items, 4)]);
        b.d.obj_kind[2] = ObjectKind::ObjectArray;
        b.obj(blob, 1000, &[]);
        b.obj(blob, 1000, &[]);
        b.obj(weak, 32, &[(f_referent, 6)]);
        b.obj(blob, 1000, &[]);
        b.obj(blob, 1000, &[]);
        b.root(0, RootKind::JavaFrame);
        b.root(5, RootKind::JniGlobal);
        b.d.pid = Some(10);
        b.d.validate().unwrap();
        b.d
    }

    /// Samples of a profile as (values, function names leaf first), sorted.
    fn samples(p: &Profile) -> Vec<(Vec<i64>, Vec<String>)> {
        let t = &p.tables;
        let mut frames = Vec::new();
        let mut v: Vec<(Vec<i64>, Vec<String>)> = p
            .samples()
            .map(|(s, vals)| {
                t.stack_frames_leaf_first(s, &mut frames);
                (vals.to_vec(), frames.iter().map(|&f| t.strings.get(t.frame(f).name).to_owned()).collect())
            })
            .collect();
        v.sort();
        v
    }

    /// Parses `go tool pprof -raw` text: sample types, and samples as (values, leaf-first names).
    type Samples = Vec<(Vec<i64>, Vec<String>)>;

    fn parse_pprof_raw(text: &str) -> (String, Samples) {
        let mut section = "";
        let mut types = String::new();
        let mut raw: Vec<(Vec<i64>, Vec<u64>)> = Vec::new();
        let mut names: FxHashMap<u64, String> = FxHashMap::default();
        for line in text.lines() {
            match line.trim_end() {
                "Samples:" => section = "types",
                "Locations" => section = "locs",
                "Mappings" => section = "maps",
                _ if section == "types" => {
                    types = line.trim().to_owned();
                    section = "samples";
                }
                _ if section == "samples" => {
                    let (vals, ids) = line.split_once(':').unwrap();
                    raw.push((
                        vals.split_whitespace().map(|v| v.parse().unwrap()).collect(),
                        ids.split_whitespace().map(|v| v.parse().unwrap()).collect(),
                    ));
                }
                _ if section == "locs" => {
                    // "     1: 0x0 M=1 com.example.Blob :0 s=0()"
                    let (id, rest) = line.trim_start().split_once(": ").unwrap();
                    let rest = rest.split_once(' ').unwrap().1; // address
                    let rest = rest.split_once(' ').unwrap().1; // mapping
                    let name = &rest[..rest.rfind(" :").unwrap()];
                    names.insert(id.parse().unwrap(), name.to_owned());
                }
                _ => {}
            }
        }
        let mut samples: Vec<(Vec<i64>, Vec<String>)> =
            raw.into_iter().map(|(v, ids)| (v, ids.iter().map(|i| names[i].clone()).collect())).collect();
        samples.sort();
        (types, samples)
    }

    #[test]
    fn spt_profile_matches_traceconv_on_heap_graph_small() {
        let dump = heap_graph_small();
        let h = RootedHeap::new(&dump);
        let spt = h.shortest_path_tree();
        let p = h.spt_profile(&spt);
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/traceconv/expected/heap_graph_small/java_heap_dump.1.10.raw.txt"
        );
        let (types, want) = parse_pprof_raw(&std::fs::read_to_string(path).unwrap());
        let ours: Vec<String> = p.sample_types.iter().map(|t| format!("{}/{}", t.name, t.unit)).collect();
        assert_eq!(ours.join(" "), types);
        assert_eq!(samples(&p), want);
        // The expected text, spelled out, so that the test says what it checks.
        let hold = "com.example.Holder [ROOT_JAVA_FRAME]";
        let s = |v: [i64; 2], f: &[&str]| (v.to_vec(), f.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        let mut spelled = vec![
            s([1, 32], &["java.lang.ref.WeakReference [ROOT_JNI_GLOBAL]"]),
            s([2, 2000], &["com.example.Blob", "java.lang.Object[]", "com.example.Cache", hold]),
            s([1, 40], &["java.lang.Object[]", "com.example.Cache", hold]),
            s([1, 24], &["com.example.Cache", hold]),
            s([1, 16], &[hold]),
        ];
        spelled.sort();
        assert_eq!(want, spelled);
        // Every frame is in mapping JAVA.
        for f in p.tables.frames() {
            assert_eq!(p.tables.strings.get(p.tables.mapping(f.mapping.unwrap()).path), JAVA_MAPPING);
        }
        assert_eq!(p.meta.pid, Some(10));
    }

    #[test]
    fn root_precedence_and_reachability() {
        let mut b = Builder::new();
        let c = b.class("C", ClassKind::Normal);
        let a = b.obj(c, 1, &[(NO_FIELD, 1), (NO_FIELD, REF_NULL), (NO_FIELD, REF_DANGLING)]);
        b.obj(c, 1, &[]);
        let x = b.obj(c, 1, &[(NO_FIELD, 0)]);
        b.root(a, RootKind::JavaFrame);
        b.root(a, RootKind::JniLocal);
        b.root(a, RootKind::ThreadObject);
        b.root(x, RootKind::Unreachable);
        b.root(1, RootKind::VmInternal);
        b.root(1, RootKind::JniGlobal);
        b.root(1, RootKind::StickyClass);
        b.root(1, RootKind::JniLocal);
        b.root(77, RootKind::JavaFrame); // out of range: ignored
        let h = RootedHeap::new(&b.d);
        assert_eq!(h.root_kind(a), Some(RootKind::JniLocal));
        assert_eq!(h.root_kind(1), Some(RootKind::StickyClass));
        assert_eq!(h.root_kind(x), Some(RootKind::Unreachable));
        assert_eq!(h.roots(), &[0, 2, 1]);
        assert_eq!(h.reachable(), vec![true, true, true]);
        assert_eq!(h.frame_name(x), "C [ROOT_UNREACHABLE]");
        // First seen wins among kinds without precedence.
        let mut b = Builder::new();
        let c = b.class("C", ClassKind::Normal);
        b.obj(c, 1, &[]);
        b.root(0, RootKind::ThreadObject);
        b.root(0, RootKind::JavaFrame);
        assert_eq!(RootedHeap::new(&b.d).root_kind(0), Some(RootKind::ThreadObject));
    }

    #[test]
    fn weak_referents_by_declaring_class_or_name() {
        // hprof spelling: `referent` declared by java.lang.ref.Reference.
        let mut b = Builder::new();
        let referent = b.field("referent");
        let other = b.field("other");
        let object = b.class("java.lang.Object", ClassKind::Normal);
        let reference = b.class(REFERENCE_CLASS, ClassKind::Normal);
        let weak = b.class("java.lang.ref.WeakReference", ClassKind::WeakReference);
        let soft = b.class("java.lang.ref.SoftReference", ClassKind::SoftReference);
        let mine = b.class("com.example.MyWeak", ClassKind::WeakReference);
        let odd = b.class("com.example.OddWeak", ClassKind::PhantomReference);
        let bare = b.class("com.example.BareWeak", ClassKind::FinalizerReference);
        let fd = |f| FieldDesc { name: f, ty: BasicType::Object };
        b.d.classes[reference as usize].fields = vec![fd(referent)];
        b.d.classes[reference as usize].superclass = Some(object);
        b.d.classes[weak as usize].superclass = Some(reference);
        b.d.classes[soft as usize].superclass = Some(reference);
        b.d.classes[mine as usize].superclass = Some(weak);
        b.d.classes[mine as usize].fields = vec![fd(other)];
        // A weak class whose chain declares `referent` itself, not via Reference.
        b.d.classes[odd as usize].fields = vec![fd(referent)];
        b.d.classes[odd as usize].superclass = Some(object);
        // `bare` declares no fields at all: decided by name.
        let t = |b: &mut Builder| b.obj(object, 8, &[]);
        let w = b.obj(weak, 24, &[(referent, 7)]);
        let s = b.obj(soft, 24, &[(referent, 8)]);
        let m = b.obj(mine, 24, &[(other, 9), (referent, 10)]);
        let o = b.obj(odd, 24, &[(referent, 11)]);
        let x = b.obj(bare, 24, &[(referent, 12)]);
        let plain = b.obj(object, 8, &[(referent, 13)]);
        b.obj(object, 8, &[]); // 6: padding so that targets 7.. exist
        for _ in 7..14 {
            t(&mut b);
        }
        for r in [w, s, m, o, x, plain] {
            b.root(r, RootKind::JavaFrame);
        }
        let h = RootedHeap::new(&b.d);
        let reach = h.reachable();
        assert!(!reach[7], "weak referent via Reference.referent");
        assert!(reach[8], "soft referents are strong");
        assert!(reach[9] && !reach[10], "subclass field followed, inherited referent not");
        assert!(reach[11], "referent declared by another class is an ordinary field");
        assert!(!reach[12], "no declared fields: by name");
        assert!(reach[13], "not a reference class");
        // hprof files heapconv wrote before it hoisted the field into java.lang.ref.Reference:
        // java.lang.ref.WeakReference (a runtime class) declares `referent` itself.
        let mut b = Builder::new();
        let referent = b.field("referent");
        let object = b.class("java.lang.Object", ClassKind::Normal);
        let weak = b.class("java.lang.ref.WeakReference", ClassKind::WeakReference);
        b.d.classes[weak as usize].fields = vec![FieldDesc { name: referent, ty: BasicType::Object }];
        b.d.classes[weak as usize].superclass = Some(object);
        b.obj(weak, 32, &[(referent, 1)]);
        b.obj(object, 8, &[]);
        b.root(0, RootKind::JniGlobal);
        assert_eq!(RootedHeap::new(&b.d).reachable(), vec![true, false], "referent declared by WeakReference");
        // Heap-graph spelling, with or without the type prefix.
        for name in ["java.lang.ref.Reference.referent", "java.lang.Object java.lang.ref.Reference.referent"] {
            let mut b = Builder::new();
            let f = b.field(name);
            let weak = b.class("java.lang.ref.WeakReference", ClassKind::WeakReference);
            let c = b.class("C", ClassKind::Normal);
            b.obj(weak, 24, &[(f, 1)]);
            b.obj(c, 8, &[]);
            b.root(0, RootKind::JavaFrame);
            assert_eq!(RootedHeap::new(&b.d).reachable(), vec![true, false], "{name}");
        }
    }

    #[test]
    fn class_statics_are_edges_of_the_class_object() {
        let mut b = Builder::new();
        let class = b.class("java.lang.Class", ClassKind::Class);
        let foo = b.class("Foo", ClassKind::Normal);
        let f = b.field("sInstance");
        b.obj(class, 8, &[]);
        b.obj(foo, 16, &[]);
        b.d.classes[foo as usize].object = Some(0);
        b.d.classes[foo as usize].static_refs = vec![(f, 1)];
        b.root(0, RootKind::StickyClass);
        let h = RootedHeap::new(&b.d);
        assert_eq!(h.reachable(), vec![true, true]);
        let spt = h.shortest_path_tree();
        assert_eq!(spt.parent, vec![VIRTUAL_ROOT, 0]);
        assert_eq!(h.edge_label(0, 1).as_deref(), Some(".sInstance"));
        let dom = h.dominators();
        assert_eq!(dom.idom, vec![VIRTUAL_ROOT, 0]);
        assert_eq!(dom.retained, vec![24, 16]);
        // The class object is named after its class, in paths and frames.
        assert_eq!(h.class_name(0), "java.lang.Class<Foo>");
        let path = h.path_to_root(&spt, 1, 16).unwrap();
        assert_eq!(path.text(), "[ROOT_STICKY_CLASS] java.lang.Class<Foo>.sInstance -> Foo");
        let mut want = vec![
            (vec![1, 8], vec!["java.lang.Class<Foo> [ROOT_STICKY_CLASS]".to_owned()]),
            (vec![1, 16], vec!["Foo".to_owned(), "java.lang.Class<Foo> [ROOT_STICKY_CLASS]".to_owned()]),
        ];
        want.sort();
        assert_eq!(samples(&h.spt_profile(&spt)), want);
    }

    #[test]
    fn spt_seeds_by_class_name_and_visits_targets_in_index_order() {
        // Roots: 0 (class "B") and 1 (class "A"). Both reach 3; "A" is seeded first, so 1 is
        // 3's parent even though 0 lists it first. 2 is reached by 0 via a higher slot but a
        // lower index than 3: visited before 3 in BFS.
        let mut b = Builder::new();
        let cb = b.class("B", ClassKind::Normal);
        let ca = b.class("A", ClassKind::Normal);
        let cx = b.class("X", ClassKind::Normal);
        b.obj(cb, 1, &[(NO_FIELD, 3), (NO_FIELD, 2)]);
        b.obj(ca, 1, &[(NO_FIELD, 3)]);
        b.obj(cx, 1, &[(NO_FIELD, 4)]);
        b.obj(cx, 1, &[(NO_FIELD, 4)]);
        b.obj(cx, 1, &[]);
        b.root(0, RootKind::JavaFrame);
        b.root(1, RootKind::JavaFrame);
        let h = RootedHeap::new(&b.d);
        let spt = h.shortest_path_tree();
        assert_eq!(spt.order, vec![1, 0, 3, 2, 4]);
        assert_eq!(spt.parent, vec![VIRTUAL_ROOT, VIRTUAL_ROOT, 0, 1, 3]);
    }

    #[test]
    fn profile_times_and_incomplete_flags() {
        let mut b = Builder::new();
        let c = b.class("C", ClassKind::Normal);
        b.obj(c, 8, &[]);
        b.root(0, RootKind::JavaFrame);
        // hprof: the header's wall-clock milliseconds become pprof's time_nanos.
        b.d.timestamp = Some(1_700_000_000_123);
        b.d.timestamp_is_epoch_ms = true;
        let h = RootedHeap::new(&b.d);
        let m = h.spt_profile(&h.shortest_path_tree()).meta;
        assert_eq!((m.timestamp, m.timestamp_converted, m.time_nanos), (None, false, Some(1_700_000_000_123_000_000)));
        assert!(!m.flags.incomplete && m.flags.data_loss().is_empty());
        // A heap graph: trace-clock ns, converted or not as the decoder says; incomplete.
        b.d.timestamp = Some(500);
        b.d.timestamp_is_epoch_ms = false;
        for converted in [false, true] {
            b.d.timestamp_converted = converted;
            b.d.incomplete = vec!["packets missing between index 0 and 2".into()];
            let h = RootedHeap::new(&b.d);
            let m = h.dominator_profile(&h.dominators()).meta;
            assert_eq!((m.timestamp, m.timestamp_converted, m.time_nanos), (Some(500), converted, None));
            assert_eq!(m.flags.data_loss(), ["incomplete"]);
            assert_eq!(m.comments, ["incomplete heap dump: packets missing between index 0 and 2"]);
        }
    }

    #[test]
    fn native_children_merging_and_incomplete_graphs() {
        let mut b = Builder::new();
        let c = b.class("Bitmap", ClassKind::Normal);
        let h = b.class("Holder", ClassKind::Normal);
        b.obj(h, 16, &[(NO_FIELD, 1), (NO_FIELD, 2)]);
        b.obj(c, 40, &[]);
        b.obj(c, 40, &[]);
        b.d.obj_native_size[1] = 1000;
        b.d.obj_native_size[2] = 500;
        b.d.obj_native_size[0] = 7;
        b.root(0, RootKind::JniGlobal);
        let heap = RootedHeap::new(&b.d);
        let p = heap.spt_profile(&heap.shortest_path_tree());
        let s = |v: [i64; 2], f: &[&str]| (v.to_vec(), f.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        let mut want = vec![
            s([1, 16], &["Holder [ROOT_JNI_GLOBAL]"]),
            s([1, 7], &["[native] Holder [ROOT_JNI_GLOBAL]", "Holder [ROOT_JNI_GLOBAL]"]),
            s([2, 80], &["Bitmap", "Holder [ROOT_JNI_GLOBAL]"]),
            s([2, 1500], &["[native] Bitmap", "Bitmap", "Holder [ROOT_JNI_GLOBAL]"]),
        ];
        want.sort();
        assert_eq!(samples(&p), want);
        // The dominator profile: the same tree here, native nodes with count 0.
        let dp = heap.dominator_profile(&heap.dominators());
        let mut want = vec![
            s([1, 16], &["Holder [ROOT_JNI_GLOBAL]"]),
            s([0, 7], &["[native] Holder [ROOT_JNI_GLOBAL]", "Holder [ROOT_JNI_GLOBAL]"]),
            s([2, 80], &["Bitmap", "Holder [ROOT_JNI_GLOBAL]"]),
            s([0, 1500], &["[native] Bitmap", "Bitmap", "Holder [ROOT_JNI_GLOBAL]"]),
        ];
        want.sort();
        assert_eq!(samples(&dp), want);

        // No roots: nothing, or the incomplete marker.
        b.d.roots.clear();
        let heap = RootedHeap::new(&b.d);
        assert_eq!(heap.spt_profile(&heap.shortest_path_tree()).sample_count(), 0);
        b.d.incomplete.push("packet index gap".into());
        let heap = RootedHeap::new(&b.d);
        let p = heap.spt_profile(&heap.shortest_path_tree());
        assert_eq!(samples(&p), vec![s([1, 1], &[INCOMPLETE_GRAPH_FRAME])]);
    }

    /// Dominators by iterative data flow over bitsets: O(n²) and obviously right. Node `n` is
    /// the virtual root. Returns per object its immediate dominator (sentinels as
    /// [`Dominators::idom`]).
    fn reference_idom(h: &RootedHeap<'_>) -> Vec<ObjIdx> {
        let n = h.len();
        let words = (n + 1).div_ceil(64);
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
        for &r in h.roots() {
            preds[r as usize].push(n);
        }
        let reach = h.reachable();
        for (o, _) in reach.iter().enumerate().filter(|(_, r)| **r) {
            h.for_each_target(o as ObjIdx, |t| preds[t as usize].push(o));
        }
        let full = vec![!0u64; words];
        let mut dom: Vec<Vec<u64>> = (0..=n).map(|_| full.clone()).collect();
        dom[n] = vec![0; words];
        dom[n][n / 64] |= 1 << (n % 64);
        let mut changed = true;
        while changed {
            changed = false;
            for v in 0..n {
                if !reach[v] {
                    continue;
                }
                let mut new = full.clone();
                for &p in &preds[v] {
                    for (a, b) in new.iter_mut().zip(&dom[p]) {
                        *a &= b;
                    }
                }
                new[v / 64] |= 1 << (v % 64);
                if new != dom[v] {
                    dom[v] = new;
                    changed = true;
                }
            }
        }
        let count = |s: &Vec<u64>| s.iter().map(|w| w.count_ones()).sum::<u32>();
        (0..n)
            .map(|v| {
                if !reach[v] {
                    return UNREACHED;
                }
                // The strict dominator with the largest dominator set.
                let size = count(&dom[v]);
                let mut best = None;
                for d in 0..=n {
                    if d != v && dom[v][d / 64] & (1 << (d % 64)) != 0 && count(&dom[d]) == size - 1 {
                        best = Some(d);
                    }
                }
                match best.unwrap() {
                    d if d == n => VIRTUAL_ROOT,
                    d => d as ObjIdx,
                }
            })
            .collect()
    }

    fn reference_retained(h: &RootedHeap<'_>, idom: &[ObjIdx]) -> Vec<u64> {
        // Sum of self sizes over all objects whose dominator chain passes through o.
        let n = h.len();
        let mut ret = vec![0u64; n];
        for v in 0..n {
            if idom[v] == UNREACHED {
                continue;
            }
            let mut x = v as ObjIdx;
            loop {
                ret[x as usize] += h.dump().obj_self_size[v];
                match idom[x as usize] {
                    VIRTUAL_ROOT => break,
                    p => x = p,
                }
            }
        }
        ret
    }

    fn random_heap(rng: &mut Rng, n: usize) -> HeapDump {
        let mut b = Builder::new();
        let plain = b.class("P", ClassKind::Normal);
        let weak = b.class("W", ClassKind::WeakReference);
        let f = b.field("java.lang.ref.Reference.referent");
        let g = b.field("P.next");
        let edges = rng.below(4) as usize; // 0..3 average out-degree
        for i in 0..n {
            let is_weak = rng.below(6) == 0;
            let deg = rng.below(2 * edges as u64 + 1) as usize;
            let mut refs = Vec::new();
            for _ in 0..deg {
                let t = match rng.below(20) {
                    0 => REF_NULL,
                    1 => REF_DANGLING,
                    2 => i as ObjIdx, // self loop
                    _ => rng.below(n as u64) as ObjIdx,
                };
                let field = if is_weak && rng.below(2) == 0 { f } else { g };
                refs.push((field, t));
            }
            b.obj(if is_weak { weak } else { plain }, 1 + rng.below(100), &refs);
        }
        let roots = 1 + rng.below(3);
        for _ in 0..roots {
            b.root(rng.below(n as u64) as ObjIdx, RootKind::JavaFrame);
        }
        b.d.validate().unwrap();
        b.d
    }

    #[test]
    fn dominators_agree_with_data_flow_on_random_graphs() {
        let mut rng = Rng::new(0xD0D0);
        for round in 0..600 {
            let n = 1 + rng.below(if round < 300 { 12 } else { 90 }) as usize;
            let d = random_heap(&mut rng, n);
            let h = RootedHeap::new(&d);
            let dom = h.dominators();
            let want = reference_idom(&h);
            assert_eq!(dom.idom, want, "round {round}: {d:?}");
            assert_eq!(dom.retained, reference_retained(&h, &want), "round {round}");
            let reach = h.reachable();
            assert_eq!(dom.order.len(), reach.iter().filter(|&&r| r).count());
            // Every object after its immediate dominator in `order`.
            let mut pos = vec![usize::MAX; n];
            for (i, &o) in dom.order.iter().enumerate() {
                pos[o as usize] = i;
            }
            for &o in &dom.order {
                let p = dom.idom[o as usize];
                assert!(p == VIRTUAL_ROOT || pos[p as usize] < pos[o as usize]);
            }
            // The shortest-path tree reaches the same objects, by shortest paths.
            let spt = h.shortest_path_tree();
            assert_eq!(spt.order.len(), dom.order.len());
            let depth = |mut x: ObjIdx| {
                let mut k = 0;
                while spt.parent[x as usize] != VIRTUAL_ROOT {
                    x = spt.parent[x as usize];
                    k += 1;
                }
                k
            };
            for &o in &spt.order {
                let p = spt.parent[o as usize];
                if p != VIRTUAL_ROOT {
                    assert_eq!(depth(o), depth(p) + 1);
                    let mut edge = false;
                    h.for_each_target(p, |t| edge |= t == o);
                    assert!(edge);
                }
            }
        }
    }

    #[test]
    fn dominators_on_hand_built_graphs() {
        let c = |b: &mut Builder| b.class("C", ClassKind::Normal);
        // Diamond: 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3; 3 -> 4.
        let mut b = Builder::new();
        let k = c(&mut b);
        b.obj(k, 1, &[(NO_FIELD, 1), (NO_FIELD, 2)]);
        b.obj(k, 2, &[(NO_FIELD, 3)]);
        b.obj(k, 4, &[(NO_FIELD, 3)]);
        b.obj(k, 8, &[(NO_FIELD, 4)]);
        b.obj(k, 16, &[]);
        b.root(0, RootKind::JavaFrame);
        let h = RootedHeap::new(&b.d);
        let d = h.dominators();
        assert_eq!(d.idom, vec![VIRTUAL_ROOT, 0, 0, 0, 3]);
        assert_eq!(d.retained, vec![31, 2, 4, 24, 16]);
        // Cycle with a self-loop: 0 -> 1 -> 2 -> 0, 2 -> 2, and 3 unreachable pointing in.
        let mut b = Builder::new();
        let k = c(&mut b);
        b.obj(k, 1, &[(NO_FIELD, 1)]);
        b.obj(k, 2, &[(NO_FIELD, 2)]);
        b.obj(k, 4, &[(NO_FIELD, 0), (NO_FIELD, 2)]);
        b.obj(k, 8, &[(NO_FIELD, 1)]);
        b.root(0, RootKind::JavaFrame);
        let h = RootedHeap::new(&b.d);
        let d = h.dominators();
        assert_eq!(d.idom, vec![VIRTUAL_ROOT, 0, 1, UNREACHED]);
        assert_eq!(d.retained, vec![7, 6, 4, 0]);
        // Two roots sharing an object: only the virtual root dominates it.
        let mut b = Builder::new();
        let k = c(&mut b);
        b.obj(k, 1, &[(NO_FIELD, 2)]);
        b.obj(k, 2, &[(NO_FIELD, 2)]);
        b.obj(k, 4, &[]);
        b.root(0, RootKind::JavaFrame);
        b.root(1, RootKind::JniGlobal);
        let d = RootedHeap::new(&b.d).dominators();
        assert_eq!(d.idom, vec![VIRTUAL_ROOT, VIRTUAL_ROOT, VIRTUAL_ROOT]);
        assert_eq!(d.retained, vec![1, 2, 4]);
        // A weak edge does not dominate: 0 -weak-> 2, 0 -> 1 -> 2.
        let mut b = Builder::new();
        let k = c(&mut b);
        let w = b.class("W", ClassKind::WeakReference);
        let f = b.field("java.lang.ref.Reference.referent");
        b.obj(w, 1, &[(f, 2), (NO_FIELD, 1)]);
        b.obj(k, 2, &[(NO_FIELD, 2)]);
        b.obj(k, 4, &[]);
        b.root(0, RootKind::JavaFrame);
        let d = RootedHeap::new(&b.d).dominators();
        assert_eq!(d.idom, vec![VIRTUAL_ROOT, 0, 1]);
        // Only the weak edge: 2 is garbage.
        b.d.ref_target[1] = REF_NULL;
        let d = RootedHeap::new(&b.d).dominators();
        assert_eq!(d.idom, vec![VIRTUAL_ROOT, UNREACHED, UNREACHED]);
        // Empty heap.
        let empty = HeapDump::default();
        let h = RootedHeap::new(&empty);
        assert!(h.dominators().order.is_empty());
        assert!(h.shortest_path_tree().order.is_empty());
        assert_eq!(h.class_histogram(&h.dominators()), vec![]);
    }

    #[test]
    fn histogram_counts_nested_instances_once() {
        // A list 0 -> 1 -> 2 -> 3 of Node, each holding a byte[]; a second root 6 (Node)
        // refers to node 2 as well, so node 2 and below are dominated by the virtual root.
        let mut b = Builder::new();
        let node = b.class("Node", ClassKind::Normal);
        let bytes = b.class("byte[]", ClassKind::Array);
        let next = b.field("Node.next");
        let data = b.field("Node.data");
        b.obj(node, 10, &[(next, 1), (data, 4)]); // 0
        b.obj(node, 10, &[(next, 2)]); // 1
        b.obj(node, 10, &[(next, 3), (data, 5)]); // 2
        b.obj(node, 10, &[]); // 3
        b.obj(bytes, 100, &[]); // 4
        b.obj(bytes, 200, &[]); // 5
        b.obj(node, 10, &[(next, 2)]); // 6
        b.obj(bytes, 1000, &[]); // 7: garbage
        b.d.obj_native_size[5] = 50;
        b.root(0, RootKind::JavaFrame);
        b.root(6, RootKind::JavaFrame);
        let h = RootedHeap::new(&b.d);
        let dom = h.dominators();
        assert_eq!(dom.idom, vec![VIRTUAL_ROOT, 0, VIRTUAL_ROOT, 2, 0, 2, VIRTUAL_ROOT, UNREACHED]);
        let hist = h.class_histogram(&dom);
        let row = |name: &str| hist.iter().find(|r| r.name == name).unwrap().clone();
        let n = row("Node");
        assert_eq!((n.instances, n.reachable_instances, n.shallow), (5, 5, 50));
        // Tops of Node: 0 (retains 0,1,4 = 120), 2 (retains 2,3,5 = 220 + 50 native), 6 (10).
        assert_eq!((n.retained, n.retained_native), (350, 50));
        let a = row("byte[]");
        assert_eq!((a.instances, a.reachable_instances, a.shallow, a.native), (3, 2, 1300, 50));
        assert_eq!((a.retained, a.retained_native), (300, 50));
        assert_eq!(hist[0].name, "Node");

        // Paths and the top report.
        let spt = h.shortest_path_tree();
        let path = h.path_to_root(&spt, 5, 16).unwrap();
        assert_eq!(path.text(), "[ROOT_JAVA_FRAME] Node.next -> Node.data -> byte[]");
        assert_eq!(path.steps.iter().map(|s| s.object).collect::<Vec<_>>(), vec![6, 2, 5]);
        assert!(h.path_to_root(&spt, 7, 16).is_none());
        let top = h.heap_top(&spt, &dom, &TopOptions { classes: 5, retainers: 3, max_path_steps: 16 });
        assert_eq!(top.objects, 8);
        assert_eq!(top.reachable_objects, 7);
        assert_eq!(top.roots, 2);
        assert_eq!(top.shallow, 1350);
        assert_eq!(top.reachable_shallow, 350);
        let picked: Vec<(ObjIdx, u64)> = top.retainers.iter().map(|r| (r.object, r.retained)).collect();
        assert_eq!(picked, vec![(2, 220), (5, 200), (0, 120)]);
        let text = top_text(&top);
        assert!(text.contains("8 objects, 7 reachable from 2 roots, 1 unreachable"), "{text}");
        assert!(text.contains("[ROOT_JAVA_FRAME] Node.next -> Node"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&top_json(&top)).unwrap();
        assert_eq!(json["classes"][0]["name"], "Node");
        assert_eq!(json["classes"][0]["retained"], 350);
        assert_eq!(json["retainers"][0]["path"]["steps"][0]["via"], ".next");
        assert_eq!(json["retainers"][0]["path"]["steps"][1]["via"], serde_json::Value::Null);
    }

    #[test]
    fn long_paths_are_elided_in_the_middle() {
        let mut b = Builder::new();
        let node = b.class("Node", ClassKind::Normal);
        let next = b.field("next");
        for i in 0..100u32 {
            let refs = if i < 99 { vec![(next, i + 1)] } else { vec![] };
            b.obj(node, 1, &refs);
        }
        b.root(0, RootKind::ThreadObject);
        let h = RootedHeap::new(&b.d);
        let spt = h.shortest_path_tree();
        let p = h.path_to_root(&spt, 99, 6).unwrap();
        assert_eq!((p.length, p.elided, p.elided_after, p.steps.len()), (100, 94, 3, 6));
        let ids: Vec<ObjIdx> = p.steps.iter().map(|s| s.object).collect();
        assert_eq!(ids, vec![0, 1, 2, 97, 98, 99]);
        assert_eq!(
            p.text(),
            "[ROOT_THREAD_OBJECT] Node.next -> Node.next -> Node -> ... (94 more) -> Node.next -> Node.next -> Node"
        );
        let dom = h.dominators();
        assert_eq!(dom.retained[0], 100);
        let dp = h.dominator_profile(&dom);
        assert_eq!(dp.sample_count(), 100);
        assert_eq!(dp.total(1), 100);
    }

    #[test]
    fn dominator_profile_widths_are_retained_sizes() {
        let d = synthetic_heap(20_000, 3);
        let h = RootedHeap::new(&d);
        let dom = h.dominators();
        let p = h.dominator_profile(&dom);
        // Cumulative size of every top-level frame = the sum of retained sizes of the objects
        // merged into it.
        let t = &p.tables;
        let mut cum: FxHashMap<String, i64> = FxHashMap::default();
        let mut nodes = Vec::new();
        for (s, v) in p.samples() {
            t.stack_nodes_root_first(s, &mut nodes);
            let top = t.strings.get(t.frame(t.stack_node(nodes[0]).frame).name).to_owned();
            *cum.entry(top).or_default() += v[1];
        }
        let mut want: FxHashMap<String, i64> = FxHashMap::default();
        for &o in &dom.order {
            if dom.idom[o as usize] == VIRTUAL_ROOT {
                let all = dom.retained[o as usize] + dom.retained_native[o as usize];
                *want.entry(h.frame_name(o)).or_default() += all as i64;
            }
        }
        assert_eq!(cum, want);
        let reach_bytes: u64 =
            dom.order.iter().map(|&o| d.obj_self_size[o as usize] + d.obj_native_size[o as usize]).sum();
        assert_eq!(p.total(1), reach_bytes as i64);
        assert_eq!(p.total(0), dom.order.len() as i64);
    }

    #[test]
    fn synthetic_heaps_are_valid_deterministic_and_shaped_as_documented() {
        let a = synthetic_heap(50_000, 7);
        a.validate().unwrap();
        let b = synthetic_heap(50_000, 7);
        assert_eq!(a.ref_target, b.ref_target);
        assert_eq!(a.obj_class, b.obj_class);
        assert_ne!(synthetic_heap(50_000, 8).ref_target, a.ref_target);
        let refs_per_object = a.ref_target.len() as f64 / a.len() as f64;
        assert!((2.4..3.3).contains(&refs_per_object), "{refs_per_object}");
        let h = RootedHeap::new(&a);
        assert_eq!(h.root_kind(0), Some(RootKind::StickyClass));
        let reach = h.reachable().iter().filter(|&&r| r).count();
        // All live objects are reachable through the spanning tree; the last 2% are garbage.
        assert_eq!(reach, 49_000);
        let dom = h.dominators();
        assert_eq!(dom.order.len(), reach);
        let spt = h.shortest_path_tree();
        assert_eq!(spt.order.len(), reach);
        // Weak referents exist and are not followed.
        assert!(a.obj_class.iter().filter(|&&c| c == 2).count() > 100);
    }

    #[test]
    fn outputs_are_deterministic() {
        let d = synthetic_heap(5_000, 11);
        let h = RootedHeap::new(&d);
        let spt = h.shortest_path_tree();
        let dom = h.dominators();
        let t1 = top_json(&h.heap_top(&spt, &dom, &TopOptions::default()));
        let t2 = top_json(&h.heap_top(&h.shortest_path_tree(), &h.dominators(), &TopOptions::default()));
        assert_eq!(t1, t2);
        assert_eq!(samples(&h.spt_profile(&spt)), samples(&h.spt_profile(&h.shortest_path_tree())));
    }

    #[test]
    #[ignore = "large: 10M objects; run with --ignored --nocapture for timings"]
    fn ten_million_objects() {
        let t = std::time::Instant::now();
        let d = synthetic_heap(10_000_000, 1);
        eprintln!("generate: {:?} ({} refs)", t.elapsed(), d.ref_target.len());
        let h = RootedHeap::new(&d);
        let t = std::time::Instant::now();
        let r = h.reachable().iter().filter(|&&r| r).count();
        eprintln!("reachable: {:?} ({r})", t.elapsed());
        let t = std::time::Instant::now();
        let spt = h.shortest_path_tree();
        eprintln!("spt: {:?}", t.elapsed());
        let t = std::time::Instant::now();
        let dom = h.dominators();
        eprintln!("dominators: {:?}", t.elapsed());
        assert_eq!(dom.order.len(), r);
        assert_eq!(spt.order.len(), r);
    }
}
