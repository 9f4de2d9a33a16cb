//! The data model every stage speaks: interned tables and profiles.
//!
//! This module is the leaf of the crate: it imports no stage.

pub mod annotate;
mod chunked;
pub mod deobfuscation;
pub mod flat;
pub mod frame;
pub mod heap;
pub mod heap_report;
pub mod mapping;
pub mod profile;
pub mod report;
pub mod stack;
pub mod stack_lists;
pub mod strings;
pub mod tables;

pub use annotate::{Annotation, AnnotationState};
pub use flat::FlatProfile;
pub use frame::{Frame, FrameId, Line};
pub use heap::{HeapDump, ObjIdx};
pub use mapping::{Mapping, MappingId};
pub use profile::{DumpFlags, Period, Profile, ProfileHeader, ProfileMeta, ValueKind, ValueType};
pub use report::{DumpReport, HeapGraphReport, Problem, SequenceReport, Totals, TraceReport};
pub use stack::{StackId, StackNode};
pub use stack_lists::StackLists;
pub use strings::{StringId, StringTable};
pub use tables::{Tables, TablesDelta, TablesMark};
