//! The largest retainers and their shortest paths from a GC root: the `top` report.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::rooted::strip_type;
use super::{Dominators, RootedHeap, ShortestPathTree, UNREACHED, VIRTUAL_ROOT};
use crate::model::heap::{NO_FIELD, ObjIdx, ObjectKind};
use crate::model::heap_report::{HeapTop, PathStep, Retainer, RootPath};

/// Options of [`RootedHeap::heap_top`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapTopOptions {
    /// How many classes the table lists. Default: 20.
    pub classes: usize,
    /// How many of the largest retainers get a path. Default: 10.
    pub retainers: usize,
    /// Longest path listed in full, in objects; longer ones keep both ends. Default: 16.
    pub max_path_steps: usize,
}

impl Default for HeapTopOptions {
    fn default() -> Self {
        HeapTopOptions { classes: 20, retainers: 10, max_path_steps: 16 }
    }
}

impl RootedHeap<'_> {
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
    pub fn heap_top(&self, spt: &ShortestPathTree, dom: &Dominators, opts: &HeapTopOptions) -> HeapTop {
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
            timestamp_is_epoch_ms: d.timestamp_is_epoch_ms,
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
