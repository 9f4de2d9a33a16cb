//! heapconv converts memory profiles offline, in stages that each speak one data model:
//!
//! ```text
//! bytes -> decode -> Profile(s) -> symbolize -> merge -> Profile -> encode -> bytes
//! ```
//!
//! * [`decode`] reads inputs: Perfetto traces with heapprofd data (inline and interned layouts,
//!   continuous dumps, `compressed_packets`, whole-file gzip, ModuleSymbols), Android DDM
//!   allocation records (`.alloc` blobs, `REAL` chunks, JDWP replies), and Java heaps (Perfetto
//!   `HeapGraph` packets and HPROF heap dumps, with Android's `hprof-conv`) into
//!   [`model::HeapDump`]. pprof profiles from any producer ([`decode::pprof`]) are read into
//!   frame-list profiles ([`model::FlatProfile`]).
//! * [`symbolize`] gives native frames names, files, lines and inline chains from DWARF found
//!   in symbol directories.
//! * [`merge`] merges profiles of any origin by content, as `go tool pprof` does, in an
//!   order-independent, streaming accumulator; it also pairs two profiles for a diff.
//! * [`model`] holds the data: interned strings, mappings, frames, a stack prefix tree, and
//!   profiles of values per stack with everything known about their origin.
//! * [`encode`] writes pprof (`profile.proto`), folded stacks, flame graph SVG, JSON,
//!   Perfetto ModuleSymbols packets and hprof heap dumps, differential folded stacks and flame
//!   graphs, top tables, and the timeline of a trace's dumps (CSV, JSON, an SVG line chart).
//! * [`analysis`] answers questions about decoded data: for Java heaps, reachability, the
//!   shortest-path tree (traceconv's `--java-heap` profile), dominators and retained sizes,
//!   class histograms and paths from GC roots; for continuous heapprofd dumps, the peak dump,
//!   the delta between two dumps and the stacks that kept growing (leak suspects).
//! * [`pipeline`] runs the stages in order for the command-line program.
//!
//! ```no_run
//! use heapconv::decode::{Input, perfetto::{DecodeOptions, decode_heapprofd_all}};
//! use heapconv::encode::pprof::{PprofOptions, encode_pprof};
//!
//! let mut input = Input::open("trace.pftrace".as_ref(), u64::MAX)?;
//! let (profiles, report) = decode_heapprofd_all(&mut input, &DecodeOptions::default())?;
//! for p in &profiles {
//!     let bytes = encode_pprof(p, &PprofOptions::default());
//!     println!("{}: {} bytes of pprof", p.header.meta.describe(), bytes.len());
//! }
//! # Ok::<(), heapconv::Error>(())
//! ```

pub mod analysis;
pub mod decode;
pub mod encode;
pub mod error;
pub mod merge;
pub mod model;
pub mod output;
pub mod pipeline;
pub mod symbolize;
pub mod timing;
pub mod wire;

pub use error::{Error, ErrorKind, Hint, Result, Selector};

/// Types generated from `protos/` (Perfetto's trace schema, trimmed, and pprof's profile.proto).
/// Only the decode and encode stages use them.
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
pub mod proto {
    /// `perfetto.protos`: the trace messages heapconv reads and writes.
    pub mod perfetto {
        include!(concat!(env!("OUT_DIR"), "/perfetto.protos.rs"));
        pub use super::callstack::Callstack;
    }
    pub mod callstack;
    /// `perftools.profiles`: pprof.
    pub mod pprof {
        include!(concat!(env!("OUT_DIR"), "/perftools.profiles.rs"));
    }
}

/// The README's Rust examples, compiled by `cargo test` so that they keep up with the API.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
