//! The reports heap analyses compute: the class histogram's rows and the `top` report with the
//! largest retainers and their paths from GC roots. The analyses fill them
//! (`analysis::heap`); the encoders render them as text or JSON (`encode::heap_top`).

use std::fmt::Write as _;

use serde::Serialize;

use super::heap::{ClassIdx, ObjIdx};

/// One row of the class histogram.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClassStats {
    /// Class index in the dump ([`HeapDump::classes`](super::heap::HeapDump::classes); one
    /// past the end for objects whose class is out of range).
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

/// The `top` report of one heap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapTop {
    /// Where the dump came from ([`HeapDump::source`](super::heap::HeapDump::source)).
    pub source: String,
    /// Process id, when known.
    pub pid: Option<u32>,
    /// Process name, when known.
    pub process_name: Option<String>,
    /// Dump time, as the producer gave it.
    pub timestamp: Option<i64>,
    /// True when [`HeapTop::timestamp`] is milliseconds since the epoch (hprof), false when it
    /// is trace-clock nanoseconds (heap graphs). Not in the JSON, which keeps the number.
    #[serde(skip)]
    pub timestamp_is_epoch_ms: bool,
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
