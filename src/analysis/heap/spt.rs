//! The shortest-path tree and traceconv's `--java-heap` profile of it.

use super::tree_profile::TreeProfileBuilder;
use super::{INCOMPLETE_GRAPH_FRAME, RootedHeap, UNREACHED, VIRTUAL_ROOT};
use crate::model::heap::{ClassIdx, ObjIdx};
use crate::model::{Profile, ValueKind, ValueType};

/// The shortest-path tree: per object the object that first reached it.
#[derive(Debug, Clone)]
pub struct ShortestPathTree {
    /// Per object: its parent, [`VIRTUAL_ROOT`] for a root, [`UNREACHED`] for garbage.
    pub parent: Vec<ObjIdx>,
    /// The reached objects in breadth-first order (roots first, in seeding order); every
    /// object comes after its parent.
    pub order: Vec<ObjIdx>,
}

impl RootedHeap<'_> {
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
    /// (traceconv writes no file), or the incomplete-graph node when
    /// [`HeapDump::incomplete`](crate::model::heap::HeapDump::incomplete) says why it is
    /// incomplete.
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
}
