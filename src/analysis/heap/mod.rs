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
//!   root, which `encode::heap_top` renders as text and JSON.
//!
//! A [`HeapDump`] is assumed to satisfy [`HeapDump::validate`]; references and roots out of
//! range are skipped rather than followed, and classes out of range are nameless. Objects are
//! numbered by `u32` ([`ObjIdx`]); the two highest values are [`UNREACHED`] and
//! [`VIRTUAL_ROOT`]. An object with more than 2³² − 1 references (impossible in Java) has the
//! rest ignored.
//!
//! [`HeapDump`]: crate::model::heap::HeapDump
//! [`HeapDump::roots`]: crate::model::heap::HeapDump::roots
//! [`HeapDump::refs`]: crate::model::heap::HeapDump::refs
//! [`HeapDump::obj_native_size`]: crate::model::heap::HeapDump::obj_native_size
//! [`HeapDump::validate`]: crate::model::heap::HeapDump::validate
//! [`RootKind::Unreachable`]: crate::model::heap::RootKind::Unreachable
//! [`Class::object`]: crate::model::heap::Class::object
//! [`Class::static_refs`]: crate::model::heap::Class::static_refs
//! [`ClassKind::referent_is_weak`]: crate::model::heap::ClassKind::referent_is_weak

mod dominators;
mod histogram;
mod retainers;
mod rooted;
mod spt;
#[cfg(test)]
mod tests;
mod tree_profile;

use crate::model::heap::ObjIdx;

/// The reports the analyses fill live in the model, so that the encoders can render them.
pub use crate::model::heap_report::{ClassStats, HeapTop, PathStep, Retainer, RootPath};
pub use dominators::Dominators;
pub use retainers::HeapTopOptions;
pub use rooted::RootedHeap;
pub use spt::ShortestPathTree;

/// In a parent or dominator array: the object was not reached from any root.
pub const UNREACHED: ObjIdx = u32::MAX;
/// In a parent or dominator array: the object hangs directly below the virtual root (it is a
/// root in the shortest-path tree; in the dominator tree no single object dominates it).
pub const VIRTUAL_ROOT: ObjIdx = u32::MAX - 1;

/// The frame of the only node of an incomplete graph without roots (traceconv's text).
pub const INCOMPLETE_GRAPH_FRAME: &str = "ERROR: INCOMPLETE GRAPH (try increasing buffer size)";

/// The mapping name of every frame of a heap profile (trace processor's `map_name`).
pub const JAVA_MAPPING: &str = "JAVA";

/// The heap name of heap profiles ([`ProfileMeta::heap`](crate::model::ProfileMeta::heap)).
pub const JAVA_HEAP_NAME: &str = "java";
