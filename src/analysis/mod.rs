//! Analyses that turn decoded data into answers: they read the [`crate::model`] and produce
//! model values (a [`crate::model::Profile`] the encoders can write) or plain reports.
//!
//! * [`heap`]: Java heaps ([`crate::model::HeapDump`], from heap graphs or hprof files):
//!   GC roots and reachability, the shortest-path tree traceconv's `--java-heap` draws, the
//!   dominator tree with retained sizes, a class histogram and the paths from GC roots to the
//!   largest retainers.
//! * [`dumps`]: continuous heapprofd dumps of one process and heap: the peak dump, the
//!   delta between two dumps and the stacks that kept growing (leak suspects).
//! * [`filter`]: pprof-style filters (`focus`, `ignore`, `hide`, `show`, `show_from`,
//!   `prune_from`, tag filters) with `go tool pprof`'s meaning, allocator frames, inversion.
//!
//! Like the stages, an analysis imports only `model` (and `error`); the pipeline calls it
//! between decoding and encoding.

pub mod dumps;
pub mod filter;
pub mod heap;
