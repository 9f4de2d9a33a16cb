//! pprof (`perftools.profiles.Profile`, gzip-compressed by convention).
//!
//! Layout as traceconv writes it, plus what makes the file more useful to pprof tools:
//!
//! * sample types, their order and labels exactly as traceconv (chosen by heap name);
//! * one sample per stack, locations leaf first, values as in the model;
//! * a Location per (frame, annotation): traceconv keys locations by function only, heapconv
//!   also by `rel_pc`, which it writes to `Location.address`;
//! * Function `name` = demangled name plus ` [annotation]`, `system_name` = the name as the
//!   trace holds it; symbolized frames get one Line per inlined function, innermost first;
//! * Mapping start, limit, file offset (`exact_offset`), file name and build id (hex);
//! * beyond traceconv: `period_type` space/bytes and `period` = sampling interval,
//!   `default_sample_type` = unreleased size, `has_functions` on every mapping (addresses are
//!   rel_pc, which pprof must not try to symbolize itself), the other `has_*` flags when every
//!   frame of the mapping is symbolized, and comments naming process, pid, heap, dump time and data-loss flags;
//! * numeric sample labels of the model (for example a DDM record's thread id) as
//!   `Sample.label` with `key` and `num` (and `num_unit` when the profile has one for the
//!   key), string labels with `key` and `str`;
//! * what a profile read from pprof or made by a merge carries over: its `period_type` and
//!   `period` (instead of the sampling interval's), `time_nanos`, `duration_nanos`, and its
//!   comments after heapconv's own.
//!
//! Profiles whose stacks are frame lists ([`FlatProfile`], from pprof inputs and merges) are
//! written by [`encode_flat_to`]: one location per frame, names as they are.
//!
//! Everything is numbered in first-use order, so the same profile gives the same bytes.
//!
//! The parts: `tree` (the [`PprofEncoder`] of stack-tree profiles) with `catalog` (the
//! strings, functions and locations it has numbered, kept across profiles); `flat` (frame-list
//! profiles, in parallel parts) with `flat_tables` (its per-profile numbering); `wire` (the
//! messages written straight to wire format, byte for byte what prost writes); `meta` (the
//! fields after the tables: period, comments, times); `gzip` (compression as Go's writer does).

mod catalog;
mod flat;
mod flat_tables;
mod gzip;
mod meta;
#[cfg(test)]
mod tests;
mod tree;
mod wire;

use catalog::*;
pub use flat::{FLAT_SAMPLES_PER_PART, encode_flat_parts, encode_flat_parts_with, encode_flat_to};
use flat_tables::*;
pub use gzip::{gzip, gzip_slices, gzip_slices_into, gzip_writer};
use meta::*;
pub use tree::PprofEncoder;

use wire::*;

use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

use prost::Message;

use crate::model::annotate::{Annotation, AnnotationState, FrameClass, annotate_with, classify_frames_from};
use crate::model::{
    FlatProfile, FrameId, MappingId, Profile, ProfileMeta, StackId, StringId, StringTable, Tables, ValueType,
};
use crate::proto::pprof as pp;
use crate::wire::{put_varint, put_varint_at};

/// Options of the pprof encoder.
#[derive(Debug, Clone)]
pub struct PprofOptions {
    /// Append ART annotations (`[jit]`, `[aot]`, …) to function names. Default: true.
    pub annotations: bool,
    /// Write what traceconv does not: period, default sample type, location addresses,
    /// mapping flags and comments. Default: true.
    pub extras: bool,
}

impl Default for PprofOptions {
    fn default() -> Self {
        PprofOptions { annotations: true, extras: true }
    }
}

/// [`encode_flat_to`] into memory.
pub fn encode_pprof_flat(profile: &FlatProfile, opts: &PprofOptions) -> Vec<u8> {
    encode_flat_parts(profile, opts).concat()
}

/// Encodes one profile as uncompressed pprof bytes (a fresh [`PprofEncoder`]).
pub fn encode_pprof(profile: &Profile, opts: &PprofOptions) -> Vec<u8> {
    PprofEncoder::new(opts.clone()).encode(profile)
}
