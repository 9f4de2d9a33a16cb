//! pprof profiles (`perftools.profiles.Profile`, `profile.proto`), gzip-compressed or not, from
//! any producer: Go's `runtime/pprof`, `go tool pprof -proto`, traceconv, heapconv itself.
//!
//! # The format, as heapconv reads it
//!
//! A profile is one protobuf message. Its top-level fields (numbers as in `protos/profile.proto`):
//!
//! * `sample_type` (1): (type, unit) string pairs, one per value of every sample;
//! * `sample` (2): packed `location_id`s, **leaf first**, packed `value`s (one per sample
//!   type) and `label`s, each a key with either a string (`str`) or a number (`num`, with an
//!   optional `num_unit`);
//! * `mapping` (3): id, address range (`memory_start`, `memory_limit`), `file_offset`,
//!   file name and build id (strings), and `has_*` flags;
//! * `location` (4): id, mapping id (0: none), `address`, and `line`s: function id, line and
//!   column. Several lines are an inline chain, innermost first, the last one being the
//!   function the others were inlined into;
//! * `function` (5): id, name, system (mangled) name, file name, start line;
//! * `string_table` (6): every string; index 0 must be "";
//! * `drop_frames`/`keep_frames` (7, 8): regular expressions for viewers (ignored);
//! * `time_nanos` (9), `duration_nanos` (10), `period_type` (11), `period` (12),
//!   `comment` (13), `default_sample_type` (14; none means the last type).
//!
//! Strings are referred to by index, locations, functions and mappings by id (any non-zero
//! number, not necessarily dense). Fields may come in any order: Go writes `period_type`
//! first, heapconv and traceconv write `sample_type` first.
//!
//! # Into the model
//!
//! A location becomes a [`Frame`] with its mapping, `address` as `rel_pc` (the address as the
//! file has it: absolute for Go, ELF-relative for Perfetto converters) and its lines. A
//! location with one line that has no file, line or column (what heapconv and traceconv write
//! for frames they only know by name) becomes a frame with a name and no lines, the form the
//! trace decoder gives such frames, so that the same frame read from a trace and from its
//! pprof is one frame. Function `start_line`, `Location.is_folded` and the mapping `has_*`
//! flags are not kept. A sample without locations gets one frame named `[no stack]`.
//! Sample types get a [`ValueKind`] from their names (Go's `alloc_space`, `inuse_objects`…,
//! traceconv's `Unreleased malloc size`…).
//!
//! Every id and string index is checked: an undefined one is an error naming the file and
//! the sample, location or mapping that refers to it. Sizes are bounded by the input, whose
//! decompressed size is capped.

mod into_model;
mod raw;
#[cfg(test)]
mod tests;

use into_model::*;
pub use into_model::{build_id_bytes, frame_of};
use raw::*;

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

use prost::Message;
use rustc_hash::FxHashMap as HashMap;

use super::input::{CappedReader, Input};
use super::wire::{Wire, varint};
use crate::error::{Error, ErrorKind, Hint, Result};
use crate::model::mapping::basename;
use crate::model::{
    FlatProfile, Frame, FrameId, Line, Mapping, MappingId, Period, ProfileMeta, StringId, Tables, ValueKind, ValueType,
};
use crate::proto::pprof as pp;

/// The name heapconv gives the frame of a sample that has no locations.
pub const NO_STACK: &str = "[no stack]";

/// Options of the pprof decoder.
#[derive(Debug, Clone)]
pub struct PprofDecodeOptions {
    /// Largest (decompressed) profile read, in bytes. Default: 4 GiB.
    pub max_bytes: u64,
}

impl Default for PprofDecodeOptions {
    fn default() -> Self {
        PprofDecodeOptions { max_bytes: 4 << 30 }
    }
}

/// What a value type means, from the names producers give it: Go's heap profile types
/// (`alloc_objects`, `alloc_space`, `inuse_objects`, `inuse_space`), traceconv's and heapconv's
/// (`Total malloc count`, `Unreleased size`, …); anything else is [`ValueKind::Other`].
pub fn value_kind(name: &str, unit: &str) -> ValueKind {
    let count = unit == "count" || unit.is_empty();
    let bytes = unit == "bytes" || unit == "byte" || unit == "B";
    let n = name.to_ascii_lowercase();
    let total = n == "alloc_objects" || n == "alloc_space" || n.starts_with("total ");
    let unreleased = n == "inuse_objects" || n == "inuse_space" || n.starts_with("unreleased ");
    let objects = n.ends_with("_objects") || n.ends_with(" count");
    let space = n.ends_with("_space") || n.ends_with(" size");
    match (total, unreleased, objects && count, space && bytes) {
        (true, _, true, _) => ValueKind::TotalCount,
        (true, _, _, true) => ValueKind::TotalSize,
        (_, true, true, _) => ValueKind::UnreleasedCount,
        (_, true, _, true) => ValueKind::UnreleasedSize,
        _ => ValueKind::Other,
    }
}

/// True when `head` (the first bytes of an input, decompressed) reads as the start of a
/// pprof profile rather than of a Perfetto trace: every whole field in it is a `Profile`
/// field with the right wire type, and either some field is not field 1 (a trace holds
/// nothing but field 1, `packet`; every pprof has a string table, field 6) or, for a head too
/// short to reach past the sample types, the first field 1 holds a non-empty payload shaped
/// like a `ValueType` (at most two varint fields numbered 1 and 2, which no trace packet is).
/// What the first field holds never rules pprof out: a profile whose only sample type is
/// empty (`""`/`""`, so it starts `0a 00`) is a profile.
pub fn looks_like_pprof(head: &[u8]) -> bool {
    let mut pos = 0usize;
    let mut fields = 0usize;
    let mut not_packets = false;
    while pos < head.len() {
        let Some((tag, n)) = varint(&head[pos..]) else { break };
        pos += n;
        let (num, wt) = (tag >> 3, tag & 7);
        not_packets |= num != 1;
        let ok = match num {
            1..=6 | 11 => wt == 2,
            7..=10 | 12 | 14 | 15 => wt == 0,
            13 => wt == 0 || wt == 2,
            _ => false,
        };
        if !ok {
            return false;
        }
        if wt == 0 {
            match varint(&head[pos..]) {
                Some((_, n)) => pos += n,
                None => break,
            }
        } else {
            let Some((len, n)) = varint(&head[pos..]) else { break };
            pos += n;
            if fields == 0 && num == 1 && value_type_shaped(&head[pos..], len) {
                not_packets = true;
            }
            pos = pos.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
        }
        fields += 1;
    }
    fields > 0 && not_packets
}

/// True when the `len` bytes at the start of `payload` are all there and could be a
/// `ValueType`: varint fields 1 and 2 only, short.
fn value_type_shaped(payload: &[u8], len: u64) -> bool {
    if len == 0 || len > 22 || payload.len() < len as usize {
        return false;
    }
    let body = &payload[..len as usize];
    let mut pos = 0;
    while pos < body.len() {
        let Some((tag, n)) = varint(&body[pos..]) else { return false };
        pos += n;
        if tag != 0x08 && tag != 0x10 {
            return false;
        }
        match varint(&body[pos..]) {
            Some((_, n)) => pos += n,
            None => return false,
        }
    }
    pos == body.len()
}

/// True for file names that pprof files usually have (`.pb`, `.pb.gz`, `.pprof`, `.prof`):
/// a hint for inputs whose first bytes could be either a trace or a profile.
pub fn pprof_file_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let n = n.strip_suffix(".gz").unwrap_or(&n);
    n.ends_with(".pb") || n.ends_with(".pprof") || n.ends_with(".prof")
}

/// Reads a whole pprof profile from an opened input (gzip already undone by [`Input`]), at
/// most `opts.max_bytes` bytes of it. ([`FlatProfile::to_profile`] gives the tree form.)
pub fn read_pprof(input: &mut Input, opts: &PprofDecodeOptions) -> Result<FlatProfile> {
    let name = input.name.clone();
    let bytes = read_pprof_bytes(input, opts)?;
    if super::legacy_heap::looks_like_legacy_heap(&bytes) {
        return super::legacy_heap::decode_legacy_heap(&bytes, &name);
    }
    decode_pprof(&bytes, &name)
}

/// The bytes [`read_pprof`] decodes: the whole input (gzip already undone by [`Input`]), at
/// most `opts.max_bytes` of them (more is an error).
pub fn read_pprof_bytes(input: &mut Input, opts: &PprofDecodeOptions) -> Result<Vec<u8>> {
    let name = input.name.clone();
    let mut bytes = Vec::new();
    if let Some(size) = input.file_size {
        // A gzipped file's bytes are read into room for twice its size (pprof files that
        // heapconv writes expand 1.3 to 1.6 times; a larger one then grows as it is read):
        // growing a buffer of a hundred megabytes copies it into fresh pages, and room that
        // is never written costs no memory. (Room the system refuses is not asked for.)
        let room = if input.gzipped { size.saturating_mul(2) } else { size };
        let _ = bytes.try_reserve(usize::try_from(room.min(opts.max_bytes)).unwrap_or(0));
    }
    input.reader().take(opts.max_bytes.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| read_error(&name, e))?;
    if bytes.len() as u64 > opts.max_bytes {
        return Err(too_big(&name, opts.max_bytes));
    }
    Ok(bytes)
}

/// Decodes pprof bytes that may be gzip-compressed (decompressing at most `opts.max_bytes`);
/// a legacy text heap profile is read as go reads it ([`super::legacy_heap`]).
pub fn decode_pprof_maybe_gzip(bytes: &[u8], name: &str, opts: &PprofDecodeOptions) -> Result<FlatProfile> {
    let decode = |b: &[u8]| {
        if super::legacy_heap::looks_like_legacy_heap(b) {
            super::legacy_heap::decode_legacy_heap(b, name)
        } else {
            decode_pprof(b, name)
        }
    };
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        if bytes.len() as u64 > opts.max_bytes {
            return Err(too_big(name, opts.max_bytes));
        }
        return decode(bytes);
    }
    let gz = flate2::read::MultiGzDecoder::new(bytes);
    let mut raw = Vec::new();
    CappedReader::new(gz, opts.max_bytes).read_to_end(&mut raw).map_err(|e| read_error(name, e))?;
    decode(&raw)
}

fn read_error(name: &str, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::OutOfMemory {
        return Error::io(format!("reading {name}"), e);
    }
    let kind = match e.kind() {
        std::io::ErrorKind::UnexpectedEof => ErrorKind::Truncated,
        std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => ErrorKind::Malformed,
        _ if e.to_string().contains("exceeds the limit") => ErrorKind::LimitExceeded,
        _ => ErrorKind::Io,
    };
    Error::new(kind, format!("reading {name}")).with_source(e)
}

fn too_big(name: &str, max: u64) -> Error {
    Error::new(ErrorKind::LimitExceeded, format!("{name}: the profile is larger than the limit of {max} bytes"))
        .with_hint(Hint::PprofSizeLimit)
}

/// Decodes an uncompressed pprof profile into a [`FlatProfile`] with its own tables.
///
/// Samples, the bulk of a profile, are read straight from the wire (no message per sample);
/// the other fields are decoded with prost.
pub fn decode_pprof(bytes: &[u8], name: &str) -> Result<FlatProfile> {
    Ok(decode_parts(bytes, name, false)?.0)
}

/// A frame of a [`LeanPprof`]: mapping (an index into its `mappings`), address, name and
/// system name (indexes into its `strings`; empty when the frame has lines), and its lines as
/// (first, count) in its `lines`.
pub type LeanFrame = (Option<MappingId>, u64, StringId, StringId, u32, u32);

/// A pprof profile decoded without interning anything (see [`decode_pprof_lean`]): what a
/// merge reads, with every reference checked as [`decode_pprof`] checks it.
#[derive(Debug)]
pub struct LeanPprof<'a> {
    /// Header, samples and labels. Its tables are empty: its frame ids are indexes into
    /// `frames`, its string ids (label keys, values and units) indexes into `strings`.
    pub profile: FlatProfile,
    /// The profile's string table, as written (borrowed from its bytes where they are UTF-8).
    pub strings: Vec<Cow<'a, str>>,
    /// The mappings, in the order written; their paths are indexes into `strings`.
    pub mappings: Vec<Mapping>,
    /// The locations, in the order written (see [`LeanFrame`]).
    pub frames: Vec<LeanFrame>,
    /// The frames' lines, one frame's after the other; string ids index `strings`.
    pub lines: Vec<Line>,
}

/// Decodes an uncompressed pprof profile as [`decode_pprof`] does, with the same checks and
/// errors, but interns nothing: strings, mappings and locations stay as written (duplicates
/// included), and samples without locations (or whose one frame is [`NO_STACK`]) are left out,
/// as `merge` drops them.
pub fn decode_pprof_lean<'a>(bytes: &'a [u8], name: &str) -> Result<LeanPprof<'a>> {
    let (profile, strings, lean) = decode_parts(bytes, name, true)?;
    let lean = lean.expect("lean parts");
    Ok(LeanPprof { profile, strings, mappings: lean.mappings, frames: lean.frames, lines: lean.lines })
}

/// What [`decode_pprof_lean`] keeps instead of tables.
#[derive(Default)]
struct LeanParts {
    mappings: Vec<Mapping>,
    frames: Vec<LeanFrame>,
    lines: Vec<Line>,
}

type Parts<'a> = (FlatProfile, Vec<Cow<'a, str>>, Option<LeanParts>);

fn decode_parts<'a>(bytes: &'a [u8], name: &str, lean: bool) -> Result<Parts<'a>> {
    let mut clock = crate::timing::Phases::start("decode pprof");
    // Locations are read from the wire too (no message per location); a profile whose
    // locations this reader does not take is read again, locations and all, by prost, which
    // then says what is wrong.
    // Functions likewise.
    let (mut rest, mut samples, mut strings, mut invalid, locations, functions) = split_samples(bytes, name, true)?;
    let mut raw_locations = parse_locations(bytes, &locations);
    let mut raw_functions = parse_functions(bytes, &functions);
    // (Freed now: what is made next takes their room rather than fresh pages.)
    drop((locations, functions));
    if raw_locations.is_none() || raw_functions.is_none() {
        (rest, samples, strings, invalid, _, _) = split_samples(bytes, name, false)?;
        (raw_locations, raw_functions) = (None, None);
    }
    clock.done("split");
    // Every profile's string table starts with "" (go tool pprof rejects one that does not):
    // bytes that merely parse as protobuf fields (a text file of `x`s does) are no profile.
    if strings.first().is_none_or(|s| !s.is_empty()) {
        return Err(Error::new(
            ErrorKind::Malformed,
            format!("{name}: not a pprof profile: its string table does not start with the empty string"),
        ));
    }
    let msg = pp::Profile::decode(rest.as_slice()).map_err(|e| {
        let text = e.to_string();
        let kind = if text.contains("underflow") || text.contains("unexpected end") || text.contains("truncated") {
            ErrorKind::Truncated
        } else {
            ErrorKind::Malformed
        };
        Error::new(kind, format!("{name}: not a valid pprof profile ({} bytes)", bytes.len())).with_source(e)
    })?;
    clock.done("prost");
    let functions = match raw_functions {
        Some(f) => f,
        None => msg.function.iter().map(|f| (f.id, f.name, f.system_name, f.filename)).collect(),
    };
    let mut converter = Converter::new(&msg, functions, &strings, name, lean)?;
    if lean {
        converter.lean = Some(LeanParts::default());
    }
    let r = converter.convert(bytes, &samples, raw_locations);
    clock.done("convert");
    let (mut p, parts) = r?;
    if invalid > 0 {
        p.header.meta.comments.push(invalid_utf8_note(invalid));
    }
    Ok((p, strings, parts))
}

/// The comment a profile read from a pprof with `n` strings that were not valid UTF-8 carries
/// (in `meta.comments`, so it reaches pprof outputs; a driver may also show it as a warning).
pub fn invalid_utf8_note(n: u64) -> String {
    format!("heapconv: {n} string(s) were not valid UTF-8; their invalid bytes were replaced with U+FFFD")
}
