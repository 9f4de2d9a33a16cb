//! Perfetto traces: the container, clocks, heapprofd data and Java heap graphs.

pub mod clock;
pub mod deobfuscation;
pub mod heap_graph;
pub mod heapprofd;
mod hot;
mod iid;
pub mod module_symbols;
mod packets;
pub mod prepass;
pub mod reader;
pub mod symbol_scan;

pub use heap_graph::{HeapGraphOptions, decode_heap_graphs, decode_heap_graphs_all};
pub use heapprofd::{
    DecodeOptions, FrameHook, StackHook, decode_heapprofd, decode_heapprofd_all, decode_heapprofd_observed,
    decode_heapprofd_with, sample_types_for_heap,
};
pub use heapprofd::{FramesSeenHook, ListDump, decode_heapprofd_frames};
pub use heapprofd::{Handover, decode_heapprofd_early};
pub use symbol_scan::{FrameScan, scan_frames, scan_frames_again};
