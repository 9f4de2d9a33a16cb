//! Perfetto traces: the container, clocks, and heapprofd data.

pub mod clock;
pub mod heapprofd;
pub mod module_symbols;
pub mod reader;

pub use heapprofd::{
    DecodeOptions, FrameHook, StackHook, decode_heapprofd, decode_heapprofd_all, decode_heapprofd_observed,
    decode_heapprofd_with, sample_types_for_heap,
};
