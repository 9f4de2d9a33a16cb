//! Perfetto traces: the container, clocks, and heapprofd data.

pub mod clock;
pub mod heapprofd;
pub mod reader;

pub use heapprofd::{DecodeOptions, decode_heapprofd, decode_heapprofd_all, sample_types_for_heap};
