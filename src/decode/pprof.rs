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

/// Splits a profile into its samples (byte ranges of each `sample` field's payload), its
/// strings, and everything else (copied, for prost).
/// The bytes of a profile without its samples and strings, the byte range of each sample, and
/// the string table (borrowed from the profile's bytes when they are UTF-8) with the number of
/// strings that were not valid UTF-8.
/// With `split_locations`, the byte range of each location and of each function too (not in
/// the rest then).
type Split<'a> = (Vec<u8>, Vec<(usize, usize)>, Vec<Cow<'a, str>>, u64, Vec<(usize, usize)>, Vec<(usize, usize)>);

fn split_samples<'a>(bytes: &'a [u8], name: &str, split_locations: bool) -> Result<Split<'a>> {
    let mut w = Wire::new(bytes);
    let mut rest = Vec::new();
    let mut samples = Vec::new();
    let mut locations = Vec::new();
    let mut functions = Vec::new();
    let mut strings = Vec::new();
    let mut invalid = 0u64;
    while !w.done() {
        let start = w.pos();
        let bad = |kind: ErrorKind, what: &str| {
            Error::new(
                kind,
                format!("{name}: not a valid pprof profile: {what} at byte {start} ({} bytes)", bytes.len()),
            )
        };
        let tag = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a field tag is cut off"))?;
        let (num, wt) = (tag >> 3, tag & 7);
        if num == 0 || !matches!(wt, 0 | 1 | 2 | 5) {
            return Err(bad(ErrorKind::Malformed, &format!("field {num} has wire type {wt}")));
        }
        if num == 2 && wt == 2 {
            let len = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a sample's length is cut off"))?;
            let at = w.pos();
            w.take(len)
                .ok_or_else(|| bad(ErrorKind::Truncated, &format!("a sample of {len} bytes runs past the end")))?;
            samples.push((at, w.pos()));
        } else if num == 4 && wt == 2 && split_locations {
            let len = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a location's length is cut off"))?;
            let at = w.pos();
            w.take(len)
                .ok_or_else(|| bad(ErrorKind::Truncated, &format!("a location of {len} bytes runs past the end")))?;
            locations.push((at, w.pos()));
        } else if num == 5 && wt == 2 && split_locations {
            let len = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a function's length is cut off"))?;
            let at = w.pos();
            w.take(len)
                .ok_or_else(|| bad(ErrorKind::Truncated, &format!("a function of {len} bytes runs past the end")))?;
            functions.push((at, w.pos()));
        } else if num == 6 && wt == 2 {
            // Strings are read as Go reads them: bytes that are not UTF-8 do not reject the
            // profile; they become U+FFFD, and the count is noted.
            let len = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a string's length is cut off"))?;
            let b = w
                .take(len)
                .ok_or_else(|| bad(ErrorKind::Truncated, &format!("a string of {len} bytes runs past the end")))?;
            match std::str::from_utf8(b) {
                Ok(t) => strings.push(Cow::Borrowed(t)),
                Err(_) => {
                    invalid += 1;
                    strings.push(String::from_utf8_lossy(b));
                }
            }
        } else {
            w.skip(wt).ok_or_else(|| bad(ErrorKind::Truncated, &format!("field {num} runs past the end")))?;
            rest.extend_from_slice(&bytes[start..w.pos()]);
        }
    }
    Ok((rest, samples, strings, invalid, locations, functions))
}

/// A function as read: id, name, system name, file name (string indexes).
type RawFunction = (u64, i64, i64, i64);

/// Reads each function's payload (`ranges` of `bytes`) as prost reads a `Function`; `None`
/// when one is anything but plain (prost then reads them all, and reports what is wrong).
fn parse_functions(bytes: &[u8], ranges: &[(usize, usize)]) -> Option<Vec<RawFunction>> {
    let mut out = Vec::with_capacity(ranges.len());
    for &(start, end) in ranges {
        let mut w = Wire::new(&bytes[start..end]);
        let (mut id, mut name, mut system_name, mut file) = (0, 0, 0, 0);
        while !w.done() {
            match strict_tag(&mut w)? {
                (1, 0) => id = strict_varint(&mut w)?,
                (2, 0) => name = strict_varint(&mut w)? as i64,
                (3, 0) => system_name = strict_varint(&mut w)? as i64,
                (4, 0) => file = strict_varint(&mut w)? as i64,
                (5, 0) => {
                    strict_varint(&mut w)?;
                }
                (1..=5, _) => return None,
                (_, wt) => w.skip(wt)?,
            }
        }
        out.push((id, name, system_name, file));
    }
    Some(out)
}

/// Locations as read from the wire: (id, mapping id, address, first line, number of lines),
/// and every location's lines (function id, line, column), one after the other.
struct RawLocations {
    locations: Vec<(u64, u64, u64, usize, usize)>,
    lines: Vec<(u64, i64, i64)>,
}

/// A varint of at most 9 bytes: `None` for longer ones (negative numbers among them, which
/// prost then reads, or rejects when they have more than 64 bits) and cut-off ones.
fn strict_varint(w: &mut Wire<'_>) -> Option<u64> {
    let at = w.pos();
    let v = w.varint()?;
    (w.pos() - at < 10).then_some(v)
}

/// The next field's tag as prost reads it: `None` for field 0, wire types 3, 4, 6, 7 (groups
/// included: this reader leaves them to prost) and tags past 32 bits.
fn strict_tag(w: &mut Wire<'_>) -> Option<(u64, u64)> {
    let t = strict_varint(w)?;
    let (num, wt) = (t >> 3, t & 7);
    (t <= u64::from(u32::MAX) && num != 0 && matches!(wt, 0 | 1 | 2 | 5)).then_some((num, wt))
}

/// Reads each location's payload (`ranges` of `bytes`) as prost reads a `Location`; `None`
/// when one is anything but plain (prost then reads them all, and reports what is wrong).
fn parse_locations(bytes: &[u8], ranges: &[(usize, usize)]) -> Option<RawLocations> {
    let mut out = RawLocations { locations: Vec::with_capacity(ranges.len()), lines: Vec::with_capacity(ranges.len()) };
    for &(start, end) in ranges {
        let mut w = Wire::new(&bytes[start..end]);
        let (mut id, mut mapping, mut address) = (0, 0, 0);
        let first = out.lines.len();
        while !w.done() {
            match strict_tag(&mut w)? {
                (1, 0) => id = strict_varint(&mut w)?,
                (2, 0) => mapping = strict_varint(&mut w)?,
                (3, 0) => address = strict_varint(&mut w)?,
                (4, 2) => {
                    let len = strict_varint(&mut w)?;
                    let mut l = Wire::new(w.take(len)?);
                    let (mut function, mut line, mut column) = (0, 0, 0);
                    while !l.done() {
                        match strict_tag(&mut l)? {
                            (1, 0) => function = strict_varint(&mut l)?,
                            (2, 0) => line = strict_varint(&mut l)? as i64,
                            (3, 0) => column = strict_varint(&mut l)? as i64,
                            (1..=3, _) => return None,
                            (_, wt) => l.skip(wt)?,
                        }
                    }
                    out.lines.push((function, line, column));
                }
                (5, 0) => {
                    strict_varint(&mut w)?;
                }
                (1..=5, _) => return None,
                (_, wt) => w.skip(wt)?,
            }
        }
        out.locations.push((id, mapping, address, first, out.lines.len() - first));
    }
    Some(out)
}

/// One label as written: key, str, num, num_unit (string indexes and a number).
#[derive(Default, Clone, Copy)]
struct RawLabel {
    key: i64,
    str: i64,
    num: i64,
    num_unit: i64,
}

/// Reads one sample's payload into location ids, values and labels.
fn parse_sample(body: &[u8], locs: &mut Vec<u64>, values: &mut Vec<i64>, labels: &mut Vec<RawLabel>) -> Option<()> {
    locs.clear();
    values.clear();
    labels.clear();
    let mut w = Wire::new(body);
    while !w.done() {
        let tag = w.varint()?;
        match (tag >> 3, tag & 7) {
            (1, 0) => locs.push(w.varint()?),
            (1, 2) => {
                // Packed ids, at most one per byte: written into room made first.
                let len = w.varint()?;
                let mut p = Wire::new(w.take(len)?);
                let base = locs.len();
                locs.resize(base + p.remaining(), 0);
                let mut n = base;
                while !p.done() {
                    locs[n] = p.varint()?;
                    n += 1;
                }
                locs.truncate(n);
            }
            (2, 0) => values.push(w.varint()? as i64),
            (2, 2) => {
                let len = w.varint()?;
                let mut p = Wire::new(w.take(len)?);
                while !p.done() {
                    values.push(p.varint()? as i64);
                }
            }
            (3, 2) => {
                let len = w.varint()?;
                let mut p = Wire::new(w.take(len)?);
                let mut l = RawLabel::default();
                while !p.done() {
                    let t = p.varint()?;
                    match (t >> 3, t & 7) {
                        (1, 0) => l.key = p.varint()? as i64,
                        (2, 0) => l.str = p.varint()? as i64,
                        (3, 0) => l.num = p.varint()? as i64,
                        (4, 0) => l.num_unit = p.varint()? as i64,
                        (_, wt) => p.skip(wt)?,
                    }
                }
                labels.push(l);
            }
            (0, _) => return None,
            (_, wt) => w.skip(wt)?,
        }
    }
    Some(())
}

/// Turns a decoded message into the model, checking every reference.
struct Converter<'a> {
    msg: &'a pp::Profile,
    /// The functions (from the wire, or from `msg`); emptied once read.
    funcs: Vec<RawFunction>,
    /// The string table (not in `msg`: read beside it).
    table: &'a [Cow<'a, str>],
    name: &'a str,
    tables: Tables,
    strings: Vec<Option<StringId>>,
    mappings: IdMap<MappingId>,
    functions: IdMap<(StringId, StringId, StringId)>,
    locations: IdMap<FrameId>,
    /// Set for [`decode_pprof_lean`]: nothing is interned; what `tables` would hold goes here.
    lean: Option<LeanParts>,
    /// (Lean) label keys by text: one id per distinct key, as interning gives.
    label_keys: HashMap<&'a str, StringId>,
}

/// Ids to values: a vector when the ids are small (as producers number them, from 1), a hash
/// map otherwise.
enum IdMap<T> {
    Dense(Vec<Option<T>>),
    Sparse(HashMap<u64, T>),
}

/// Frames of location ids that were numbered in ascending order (the frame of an id is the
/// number of ids below it): per 64 ids, a bit per id present and the frame of the first.
struct IdRanks {
    blocks: Vec<(u64, u32)>,
}

impl IdRanks {
    /// The ranks of `table` (frames by location id), if each frame is its id's rank.
    fn of(table: &[Option<FrameId>]) -> Option<IdRanks> {
        let mut blocks = vec![(0u64, 0u32); table.len().div_ceil(64)];
        let mut rank = 0u32;
        for (b, ids) in blocks.iter_mut().zip(table.chunks(64)) {
            b.1 = rank;
            for (k, f) in ids.iter().enumerate() {
                if let Some(f) = f {
                    if f.0 != rank {
                        return None;
                    }
                    b.0 |= 1 << k;
                    rank += 1;
                }
            }
        }
        Some(IdRanks { blocks })
    }

    /// The frame of location `id`, if it was defined.
    #[inline]
    fn get(&self, id: u64) -> Option<FrameId> {
        let &(bits, first) = self.blocks.get(usize::try_from(id >> 6).ok()?)?;
        let bit = 1u64 << (id & 63);
        (bits & bit != 0).then(|| FrameId(first + (bits & (bit - 1)).count_ones()))
    }
}

impl<T: Copy> IdMap<T> {
    fn for_ids(ids: impl Iterator<Item = u64>, count: usize) -> Self {
        let max = ids.max().unwrap_or(0);
        if max <= (count as u64).saturating_mul(4).saturating_add(16) {
            IdMap::Dense(vec![None; max as usize + 1])
        } else {
            IdMap::Sparse(HashMap::default())
        }
    }

    /// Inserts; false when the id was there already.
    fn insert(&mut self, id: u64, v: T) -> bool {
        match self {
            IdMap::Dense(d) => d[id as usize].replace(v).is_none(),
            IdMap::Sparse(m) => m.insert(id, v).is_none(),
        }
    }

    #[inline]
    fn get(&self, id: u64) -> Option<T> {
        match self {
            IdMap::Dense(d) => d.get(usize::try_from(id).ok()?).copied().flatten(),
            IdMap::Sparse(m) => m.get(&id).copied(),
        }
    }
}

impl<'a> Converter<'a> {
    fn new(
        msg: &'a pp::Profile,
        funcs: Vec<RawFunction>,
        table: &'a [Cow<'a, str>],
        name: &'a str,
        lean: bool,
    ) -> Result<Self> {
        if table.first().is_some_and(|s| !s.is_empty()) {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!("{name}: string_table[0] must be the empty string, not {:?}", table[0]),
            ));
        }
        let functions = IdMap::for_ids(funcs.iter().map(|f| f.0), funcs.len());
        Ok(Converter {
            msg,
            funcs,
            table,
            name,
            tables: Tables::default(),
            // (Lean: only label keys use it, sized at the first.)
            strings: if lean { Vec::new() } else { vec![None; table.len()] },
            mappings: IdMap::for_ids(msg.mapping.iter().map(|m| m.id), msg.mapping.len()),
            functions,
            // Numbered in `convert`, where the locations are read.
            locations: IdMap::Dense(Vec::new()),
            lean: None,
            label_keys: HashMap::default(),
        })
    }

    fn text(&self, index: i64, what: &dyn Fn() -> String) -> Result<&'a str> {
        match usize::try_from(index).ok().and_then(|i| self.table.get(i)) {
            Some(s) => Ok(&**s),
            None if index == 0 => Ok(""),
            None => Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{}: {} refers to string {index}, but the string table has {} entries",
                    self.name,
                    what(),
                    self.table.len()
                ),
            )),
        }
    }

    fn string(&mut self, index: i64, what: &dyn Fn() -> String) -> Result<StringId> {
        let text = self.text(index, what)?;
        if text.is_empty() {
            return Ok(StringId::EMPTY);
        }
        if self.lean.is_some() {
            // (The index fits: the table has that many entries.)
            return Ok(StringId(index as u32));
        }
        let slot = &mut self.strings[index as usize];
        Ok(*slot.get_or_insert_with(|| self.tables.strings.intern(text)))
    }

    /// A label key: as [`Converter::string`], but one id per text in lean mode too (units
    /// are kept per key).
    fn label_key(&mut self, index: i64, what: &dyn Fn() -> String) -> Result<StringId> {
        let id = self.string(index, what)?;
        if self.lean.is_none() || id.is_empty() {
            return Ok(id);
        }
        if self.strings.len() != self.table.len() {
            self.strings = vec![None; self.table.len()];
        }
        let slot = &mut self.strings[index as usize];
        if let Some(k) = *slot {
            return Ok(k);
        }
        let table: &'a [Cow<'a, str>] = self.table;
        let k = *self.label_keys.entry(&*table[index as usize]).or_insert(id);
        *slot = Some(k);
        Ok(k)
    }

    fn convert(
        mut self,
        bytes: &[u8],
        sample_ranges: &[(usize, usize)],
        raw: Option<RawLocations>,
    ) -> Result<(FlatProfile, Option<LeanParts>)> {
        let msg = self.msg;
        let name = self.name;
        for (i, m) in msg.mapping.iter().enumerate() {
            let what = || format!("mapping {} (#{i})", m.id);
            if m.id == 0 {
                return Err(Error::new(ErrorKind::Malformed, format!("{name}: mapping #{i} has id 0")));
            }
            let path = self.string(m.filename, &what)?;
            let build = self.text(m.build_id, &what)?;
            let mapping = Mapping {
                path,
                build_id: build_id_bytes(build),
                start: m.memory_start,
                end: m.memory_limit,
                start_offset: 0,
                exact_offset: m.file_offset,
                load_bias: 0,
            };
            let id = match &mut self.lean {
                Some(lean) => {
                    lean.mappings.push(mapping);
                    MappingId(u32::try_from(lean.mappings.len() - 1).expect("fewer than 2^32 mappings"))
                }
                None => self.tables.intern_mapping(mapping),
            };
            if !self.mappings.insert(m.id, id) {
                return Err(Error::new(ErrorKind::Malformed, format!("{name}: mapping id {} is defined twice", m.id)));
            }
        }
        let funcs = std::mem::take(&mut self.funcs);
        for (i, &(id, fname, system_name, filename)) in funcs.iter().enumerate() {
            let what = || format!("function {id} (#{i})");
            if id == 0 {
                return Err(Error::new(ErrorKind::Malformed, format!("{name}: function #{i} has id 0")));
            }
            let v = (self.string(fname, &what)?, self.string(system_name, &what)?, self.string(filename, &what)?);
            if !self.functions.insert(id, v) {
                return Err(Error::new(ErrorKind::Malformed, format!("{name}: function id {id} is defined twice")));
            }
        }
        drop(funcs);
        // The locations as prost would give them, when prost did not read them.
        let raw = match raw {
            Some(r) => r,
            None => {
                let mut r = RawLocations { locations: Vec::new(), lines: Vec::new() };
                for l in &msg.location {
                    let first = r.lines.len();
                    r.lines.extend(l.line.iter().map(|ln| (ln.function_id, ln.line, ln.column)));
                    r.locations.push((l.id, l.mapping_id, l.address, first, l.line.len()));
                }
                r
            }
        };
        self.locations = IdMap::for_ids(raw.locations.iter().map(|l| l.0), raw.locations.len());
        if let Some(lean) = &mut self.lean {
            lean.frames.reserve_exact(raw.locations.len());
        }
        let mut line_buf: Vec<Line> = Vec::new();
        for (i, &(lid, mapping_id, address, first, nlines)) in raw.locations.iter().enumerate() {
            if lid == 0 {
                return Err(Error::new(ErrorKind::Malformed, format!("{name}: location #{i} has id 0")));
            }
            // A mapping id that names no mapping leaves the location without one, as
            // `go tool pprof` reads it (traceconv's `--java-heap` profiles refer to mapping 1
            // and define none); a function id that names nothing is an error there and here.
            let mapping = match mapping_id {
                0 => None,
                m => self.mappings.get(m),
            };
            let lines = &mut line_buf;
            lines.clear();
            for &(function_id, line, column) in &raw.lines[first..first + nlines] {
                let (function, system_name, file) = match function_id {
                    0 => (StringId::EMPTY, StringId::EMPTY, StringId::EMPTY),
                    f => self.functions.get(f).ok_or_else(|| {
                        Error::new(
                            ErrorKind::Malformed,
                            format!("{name}: location {lid} refers to function {f}, which is not defined"),
                        )
                    })?,
                };
                let clamp = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
                lines.push(Line { function, system_name, file, line: clamp(line), column: clamp(column) });
            }
            if let Some(lean) = &mut self.lean {
                let id = FrameId(u32::try_from(lean.frames.len()).expect("fewer than 2^32 locations"));
                let frame = match lines.as_slice() {
                    [l] if l.file.is_empty() && l.line == 0 && l.column == 0 => {
                        (mapping, address, l.function, l.system_name, 0, 0)
                    }
                    _ => {
                        let at = u32::try_from(lean.lines.len()).expect("fewer than 2^32 lines");
                        lean.lines.extend_from_slice(lines);
                        (mapping, address, StringId::EMPTY, StringId::EMPTY, at, lines.len() as u32)
                    }
                };
                lean.frames.push(frame);
                if !self.locations.insert(lid, id) {
                    return Err(Error::new(
                        ErrorKind::Malformed,
                        format!("{name}: location id {lid} is defined twice"),
                    ));
                }
                continue;
            }
            let frame = match lines.as_slice() {
                // (What `frame_of` makes of it, without a list.)
                [l] if l.file.is_empty() && l.line == 0 && l.column == 0 => {
                    Frame { mapping, rel_pc: address, raw_name: l.system_name, name: l.function, lines: Vec::new() }
                }
                _ => frame_of(mapping, address, lines.clone()),
            };
            let id = self.tables.intern_frame_exact(frame);
            if !self.locations.insert(lid, id) {
                return Err(Error::new(ErrorKind::Malformed, format!("{name}: location id {lid} is defined twice")));
            }
        }
        // Locations numbered in ascending order as written, each its own frame (as heapconv, Go
        // and most producers write them, with gaps or without): a location's frame is then the
        // number of ids below its own, found in a bitmap of the ids a hundredth of the table's
        // size (which stays in cache, where the table does not).
        let ranks = match &self.locations {
            IdMap::Dense(t) => IdRanks::of(t),
            IdMap::Sparse(_) => None,
        };
        // Read: their room goes to the samples.
        drop(raw);
        self.functions = IdMap::Dense(Vec::new());
        let mut sample_types = Vec::with_capacity(msg.sample_type.len());
        for (i, t) in msg.sample_type.iter().enumerate() {
            let what = || format!("sample type #{i}");
            let ty = self.text(t.r#type, &what)?;
            let unit = self.text(t.unit, &what)?;
            sample_types.push(ValueType::new(ty, unit, value_kind(ty, unit)));
        }
        let default_name = self.text(msg.default_sample_type, &|| "default_sample_type".to_owned())?;
        let default_sample_type = sample_types
            .iter()
            .position(|t| !default_name.is_empty() && t.name == default_name)
            .unwrap_or(sample_types.len().saturating_sub(1));
        let mut meta = ProfileMeta {
            source: name.to_owned(),
            title: Some(format!("{} (pprof)", basename(name))),
            heap: String::new(),
            changed: true,
            time_nanos: (msg.time_nanos != 0).then_some(msg.time_nanos),
            duration_nanos: (msg.duration_nanos != 0).then_some(msg.duration_nanos),
            ..Default::default()
        };
        if let Some(pt) = &msg.period_type {
            let what = || "period_type".to_owned();
            let (ty, unit) = (self.text(pt.r#type, &what)?, self.text(pt.unit, &what)?);
            meta.period = Some(Period { name: ty.to_owned(), unit: unit.to_owned(), value: msg.period });
        } else if msg.period != 0 {
            meta.period = Some(Period { name: String::new(), unit: String::new(), value: msg.period });
        }
        if let Some(p) = &meta.period {
            if p.name == "space" && p.unit == "bytes" {
                meta.sampling_interval = u64::try_from(p.value).ok();
            }
        }
        for &c in &msg.comment {
            meta.comments.push(self.text(c, &|| "a comment".to_owned())?.to_owned());
        }
        let ntypes = sample_types.len();
        let mut clock = crate::timing::Phases::start("convert");
        let mut frames: Vec<FrameId> = Vec::new();
        let mut no_stack: Option<FrameId> = None;
        let mut num = Vec::new();
        let mut strs = Vec::new();
        // Label keys and units are strings of the tables: the samples are added once the
        // tables are complete, to a profile that then takes them.
        let mut p = FlatProfile::new(Arc::new(Tables::default()), meta, sample_types);
        p.header.default_sample_type = default_sample_type;
        let mut units: Vec<(StringId, StringId)> = Vec::new();
        let total_locs: usize = sample_ranges.iter().map(|(a, b)| b - a).sum();
        p.reserve(sample_ranges.len(), total_locs / 2);
        let (mut locs, mut values, mut raw_labels) = (Vec::new(), Vec::new(), Vec::new());
        for (i, &(start, end)) in sample_ranges.iter().enumerate() {
            parse_sample(&bytes[start..end], &mut locs, &mut values, &mut raw_labels).ok_or_else(|| {
                Error::new(
                    ErrorKind::Malformed,
                    format!(
                        "{name}: sample {i} (at byte {start}, {} bytes) is not a valid Sample message",
                        end - start
                    ),
                )
            })?;
            if values.len() != ntypes {
                return Err(Error::new(
                    ErrorKind::Malformed,
                    format!(
                        "{name}: sample {i} has {} values, but the profile has {ntypes} sample types",
                        values.len()
                    ),
                ));
            }
            frames.clear();
            let unknown = |lid: u64| {
                Error::new(
                    ErrorKind::Malformed,
                    format!("{name}: sample {i} refers to location {lid}, which is not defined"),
                )
            };
            if let Some(ranks) = &ranks {
                frames.resize(locs.len(), FrameId(0));
                for (f, &lid) in frames.iter_mut().zip(&locs) {
                    *f = ranks.get(lid).ok_or_else(|| unknown(lid))?;
                }
            } else if let IdMap::Dense(table) = &self.locations {
                frames.resize(locs.len(), FrameId(0));
                for (f, &lid) in frames.iter_mut().zip(&locs) {
                    *f = usize::try_from(lid)
                        .ok()
                        .and_then(|l| table.get(l).copied().flatten())
                        .ok_or_else(|| unknown(lid))?;
                }
            } else {
                for &lid in &locs {
                    frames.push(self.locations.get(lid).ok_or_else(|| unknown(lid))?);
                }
            }
            if frames.is_empty() && self.lean.is_some() {
                // (Left out below, once its labels are checked.)
            } else if frames.is_empty() {
                let tables = &mut self.tables;
                frames.push(*no_stack.get_or_insert_with(|| {
                    let n = tables.strings.intern(NO_STACK);
                    tables.intern_frame_exact(Frame {
                        mapping: None,
                        rel_pc: 0,
                        raw_name: n,
                        name: n,
                        lines: Vec::new(),
                    })
                }));
            }
            num.clear();
            strs.clear();
            for l in &raw_labels {
                let what = || format!("a label of sample {i}");
                let key = self.label_key(l.key, &what)?;
                if l.str != 0 {
                    strs.push((key, self.string(l.str, &what)?));
                } else {
                    num.push((key, l.num));
                    if l.num_unit != 0 {
                        let unit = self.string(l.num_unit, &what)?;
                        if !units.iter().any(|u| u.0 == key) {
                            units.push((key, unit));
                        }
                    }
                }
            }
            if let Some(lean) = &self.lean {
                let no_stack = |f: FrameId| {
                    let (mapping, address, name, _, _, nlines) = lean.frames[f.0 as usize];
                    mapping.is_none() && address == 0 && nlines == 0 && self.table[name.0 as usize] == NO_STACK
                };
                if frames.is_empty() || (frames.len() == 1 && no_stack(frames[0])) {
                    continue;
                }
            }
            p.push_sample(&frames, &values, &num, &strs);
        }
        clock.done("samples");
        for (key, unit) in units {
            p.set_num_label_unit(key, unit);
        }
        if self.lean.is_some() {
            return Ok((p, self.lean));
        }
        p.tables = Arc::new(self.tables);
        Ok((p, None))
    }
}

/// The model frame of a pprof location: one line without file, line or column is a named
/// frame without lines (see the module docs).
pub fn frame_of(mapping: Option<MappingId>, address: u64, mut lines: Vec<Line>) -> Frame {
    if lines.len() == 1 && lines[0].file.is_empty() && lines[0].line == 0 && lines[0].column == 0 {
        let l = lines.pop().expect("one line");
        // (A list that held one line is dropped rather than kept empty with its block.)
        return Frame { mapping, rel_pc: address, raw_name: l.system_name, name: l.function, lines: Vec::new() };
    }
    Frame { mapping, rel_pc: address, raw_name: StringId::EMPTY, name: StringId::EMPTY, lines }
}

/// A pprof build id (text) as the model keeps it: the bytes of an even-length hex string, or
/// the text itself (33 hex digits, a Chrome module id, is kept as text, which the encoders
/// write back verbatim; other text that is not hex is written back hex-encoded).
pub fn build_id_bytes(text: &str) -> Box<[u8]> {
    let b = text.as_bytes();
    if !b.is_empty() && b.len() % 2 == 0 && b.iter().all(u8::is_ascii_hexdigit) {
        let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
        b.chunks(2).map(|p| (hex(p[0]) << 4) | hex(p[1])).collect()
    } else {
        b.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_location_ids_map_to_frames_by_rank() {
        // Ids 1, 2, 4, 70 and 130 (gaps inside and across 64-id blocks), frames 0 to 4.
        let mut table = vec![None; 131];
        for (f, id) in [1usize, 2, 4, 70, 130].into_iter().enumerate() {
            table[id] = Some(FrameId(f as u32));
        }
        let ranks = IdRanks::of(&table).expect("ascending");
        let got: Vec<Option<FrameId>> = [0u64, 1, 2, 3, 4, 5, 63, 64, 70, 129, 130, 131, 1 << 40, u64::MAX]
            .iter()
            .map(|&id| ranks.get(id))
            .collect();
        let f = |i: u32| Some(FrameId(i));
        assert_eq!(got, [None, f(0), f(1), None, f(2), None, None, None, f(3), None, f(4), None, None, None]);
        // Frames not in id order (or shared by two ids): no ranks, the table answers.
        table.swap(4, 70);
        assert!(IdRanks::of(&table).is_none());
        table.swap(4, 70);
        table[5] = Some(FrameId(2));
        assert!(IdRanks::of(&table).is_none());
    }

    #[test]
    fn kinds_from_names() {
        assert_eq!(value_kind("alloc_objects", "count"), ValueKind::TotalCount);
        assert_eq!(value_kind("alloc_space", "bytes"), ValueKind::TotalSize);
        assert_eq!(value_kind("inuse_objects", "count"), ValueKind::UnreleasedCount);
        assert_eq!(value_kind("inuse_space", "bytes"), ValueKind::UnreleasedSize);
        assert_eq!(value_kind("Unreleased malloc size", "bytes"), ValueKind::UnreleasedSize);
        assert_eq!(value_kind("Total allocation count", "count"), ValueKind::TotalCount);
        assert_eq!(value_kind("Total size", "bytes"), ValueKind::TotalSize);
        assert_eq!(value_kind("cpu", "nanoseconds"), ValueKind::Other);
        assert_eq!(value_kind("alloc_space", "count"), ValueKind::Other);
    }

    #[test]
    fn sniffing_tells_pprof_from_traces() {
        // Go writes period_type first.
        assert!(looks_like_pprof(&[0x5a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x60, 0x01, 0x0a, 0x04, 0x08, 0x03]));
        // heapconv and traceconv write sample_type first.
        assert!(looks_like_pprof(&[0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x0a, 0x04, 0x08, 0x03, 0x10, 0x02, 0x12]));
        // A trace packet (timestamp, sequence id) is not a ValueType.
        assert!(!looks_like_pprof(&[0x0a, 0x08, 0x40, 0x01, 0x50, 0x01, 0x0a, 0x02, 0x08, 0x01]));
        // Nor is a run of packets, empty ones included.
        assert!(!looks_like_pprof(&[0x0a, 0x00, 0x0a, 0x03, 0x40, 0x01, 0x50]));
        // A goroutine profile whose only sample type is empty (""/""): 0a 00, then a sample.
        assert!(looks_like_pprof(&[0x0a, 0x00, 0x12, 0x06, 0x0a, 0x01, 0x01, 0x12, 0x01, 0x01, 0x32, 0x00]));
        assert!(!looks_like_pprof(b"REAL\0\0\0\0"));
        assert!(!looks_like_pprof(b"JDWP-Handshake"));
        assert!(!looks_like_pprof(b"heap;main 12\n"));
        assert!(!looks_like_pprof(&[]));
    }

    /// A profile of two locations: `main` by name only, and `g` (a.c:7) inlined into `main`
    /// at line `caller_line`.
    fn two_locations(caller_line: i64) -> Vec<u8> {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let line = |function_id, line| pp::Line { function_id, line, column: 0 };
        let msg = pp::Profile {
            sample_type: vec![pp::ValueType { r#type: 1, unit: 2 }],
            function: vec![
                pp::Function { id: 1, name: 3, ..Default::default() },
                pp::Function { id: 2, name: 4, filename: 5, ..Default::default() },
            ],
            location: vec![
                pp::Location { id: 1, line: vec![line(1, 0)], ..Default::default() },
                pp::Location {
                    id: 2,
                    address: 0x40,
                    line: vec![line(2, 7), line(1, caller_line)],
                    ..Default::default()
                },
            ],
            sample: vec![pp::Sample { location_id: vec![2, 1], value: vec![5], label: vec![] }],
            string_table: s(&["", "space", "bytes", "main", "g", "a.c"]),
            ..Default::default()
        };
        msg.encode_to_vec()
    }

    #[test]
    fn locations_read_from_the_wire_as_prost_reads_them() {
        // Line 3 is read from the wire; line -3 (a 10-byte varint) makes prost read the
        // locations; both give the same frames, but for the clamped line.
        for (caller_line, want) in [(3, 3), (-3, 0)] {
            let p = decode_pprof(&two_locations(caller_line), "t.pb").unwrap();
            let (frames, values) = p.sample(0);
            assert_eq!(values, &[5]);
            let t = &p.tables;
            let (inner, outer) = (t.frame(frames[0]), t.frame(frames[1]));
            assert_eq!(inner.rel_pc, 0x40);
            let lines: Vec<(&str, &str, u32)> =
                inner.lines.iter().map(|l| (t.strings.get(l.function), t.strings.get(l.file), l.line)).collect();
            assert_eq!(lines, [("g", "a.c", 7), ("main", "", want)]);
            assert!(outer.lines.is_empty());
            assert_eq!(t.strings.get(outer.name), "main");
        }
    }

    #[test]
    fn a_location_without_an_id_is_named_either_way() {
        let mut bytes = two_locations(-3);
        // The same error from the wire reader's path and prost's: location #0 has id 0.
        let mut msg = pp::Profile::decode(bytes.as_slice()).unwrap();
        msg.location[0].id = 0;
        for negative in [true, false] {
            if !negative {
                msg.location[1].line[1].line = 3;
            }
            bytes = msg.encode_to_vec();
            let e = decode_pprof(&bytes, "t.pb").unwrap_err();
            assert!(e.to_string().contains("t.pb: location #0 has id 0"), "{e}");
        }
    }

    #[test]
    fn build_ids() {
        assert_eq!(&*build_id_bytes("0a1B"), &[0x0a, 0x1b]);
        assert_eq!(&*build_id_bytes("go-buildid/xyz"), b"go-buildid/xyz");
        assert_eq!(&*build_id_bytes(""), b"");
    }
}
