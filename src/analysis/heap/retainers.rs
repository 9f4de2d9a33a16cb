//! The largest retainers and their shortest paths from a GC root: the `top` report's data.

use serde::Serialize;

use super::{ClassStats, Dominators, RootedHeap, ShortestPathTree, UNREACHED, VIRTUAL_ROOT};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;

use super::rooted::strip_type;
use crate::model::heap::{NO_FIELD, ObjIdx, ObjectKind};

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
