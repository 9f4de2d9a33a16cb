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
//!   frame of the mapping is symbolized, and comments naming process, pid, heap, dump time and data-loss flags.
//!
//! Everything is numbered in first-use order, so the same profile gives the same bytes.

use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

use prost::Message;

use crate::model::annotate::{Annotation, AnnotationState, annotate_with, classify_frames};
use crate::model::{FrameId, MappingId, Profile, StringTable};
use crate::proto::pprof as pp;

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

struct Builder<'a> {
    profile: &'a Profile,
    opts: &'a PprofOptions,
    strings: StringTable,
    functions: Vec<pp::Function>,
    function_index: HashMap<(i64, i64, i64), u64>,
    locations: Vec<pp::Location>,
    location_index: HashMap<(FrameId, Annotation), u64>,
    mappings: Vec<pp::Mapping>,
    mapping_index: HashMap<MappingId, u64>,
    mapping_symbolized: Vec<bool>,
}

impl Builder<'_> {
    fn s(&mut self, text: &str) -> i64 {
        i64::from(self.strings.intern(text).0)
    }

    fn function(&mut self, name: &str, system_name: &str, file: &str, start_line: i64) -> u64 {
        let key = (self.s(name), self.s(system_name), self.s(file));
        if let Some(&id) = self.function_index.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        self.functions.push(pp::Function { id, name: key.0, system_name: key.1, filename: key.2, start_line });
        self.function_index.insert(key, id);
        id
    }

    fn mapping(&mut self, m: MappingId) -> u64 {
        if let Some(&id) = self.mapping_index.get(&m) {
            return id;
        }
        let tables = &self.profile.tables;
        let mapping = tables.mapping(m);
        let filename = self.s(tables.strings.get(mapping.path));
        let build_id = self.s(&mapping.build_id_text());
        let id = self.mappings.len() as u64 + 1;
        self.mappings.push(pp::Mapping {
            id,
            memory_start: mapping.start,
            memory_limit: mapping.end,
            file_offset: mapping.exact_offset,
            filename,
            build_id,
            ..Default::default()
        });
        self.mapping_symbolized.push(true);
        self.mapping_index.insert(m, id);
        id
    }

    fn location(&mut self, frame_id: FrameId, annotation: Annotation) -> u64 {
        let key = (frame_id, if self.opts.annotations { annotation } else { Annotation::None });
        if let Some(&id) = self.location_index.get(&key) {
            return id;
        }
        let tables = std::sync::Arc::clone(&self.profile.tables);
        let frame = tables.frame(frame_id);
        let mapping_id = frame.mapping.map(|m| self.mapping(m)).unwrap_or(0);
        let suffix = match key.1 {
            Annotation::None => String::new(),
            a => format!(" [{}]", a.label()),
        };
        let mut lines = Vec::with_capacity(frame.lines.len().max(1));
        if frame.lines.is_empty() {
            let name = tables.strings.get(frame.name);
            let raw = tables.strings.get(frame.raw_name);
            let shown = if name.is_empty() { String::new() } else { format!("{name}{suffix}") };
            let f = self.function(&shown, raw, "", 0);
            lines.push(pp::Line { function_id: f, line: 0, column: 0 });
            if mapping_id != 0 {
                self.mapping_symbolized[mapping_id as usize - 1] = false;
            }
        } else {
            for l in &frame.lines {
                let name = tables.strings.get(l.function);
                let shown = if name.is_empty() { String::new() } else { format!("{name}{suffix}") };
                let f = self.function(&shown, tables.strings.get(l.system_name), tables.strings.get(l.file), 0);
                lines.push(pp::Line { function_id: f, line: i64::from(l.line), column: i64::from(l.column) });
            }
        }
        let id = self.locations.len() as u64 + 1;
        self.locations.push(pp::Location {
            id,
            mapping_id,
            address: if self.opts.extras { frame.rel_pc } else { 0 },
            line: lines,
            is_folded: false,
        });
        self.location_index.insert(key, id);
        id
    }
}

/// Encodes a profile as uncompressed pprof bytes.
pub fn encode_pprof(profile: &Profile, opts: &PprofOptions) -> Vec<u8> {
    let mut b = Builder {
        profile,
        opts,
        strings: StringTable::default(),
        functions: Vec::new(),
        function_index: HashMap::default(),
        locations: Vec::new(),
        location_index: HashMap::default(),
        mappings: Vec::new(),
        mapping_index: HashMap::default(),
        mapping_symbolized: Vec::new(),
    };
    let mut out = pp::Profile::default();
    for t in &profile.sample_types {
        let ty = b.s(&t.name);
        let unit = b.s(&t.unit);
        out.sample_type.push(pp::ValueType { r#type: ty, unit });
    }
    let tables = std::sync::Arc::clone(&profile.tables);
    // Per stack node: its location id and the annotation state handed to its children.
    let classes = classify_frames(&tables);
    // Per stack node: (location id, parent + 1), so that walking a stack touches one array;
    // and the annotation state handed to the node's children.
    let mut node_loc: Vec<(u32, u32)> = vec![(0, 0); tables.stack_count()];
    let mut node_state: Vec<AnnotationState> = vec![AnnotationState::Initial; tables.stack_count()];
    let mut path = Vec::new();
    // Samples are the bulk of a profile: they are written straight to wire format (field 2 of
    // Profile) right after the sample types, instead of being built as messages first; the
    // other fields follow (a message's fields may come in any order; this is traceconv's).
    let head = pp::Profile { sample_type: std::mem::take(&mut out.sample_type), ..Default::default() };
    let mut bytes = head.encode_to_vec();
    bytes.reserve(profile.sample_count() * 64);
    let mut locs: Vec<u64> = Vec::new();
    for (stack, values) in profile.samples() {
        // Walk up to the nearest node already done, then down again computing annotations.
        path.clear();
        let mut cur = Some(stack);
        let mut state = AnnotationState::Initial;
        while let Some(s) = cur {
            if node_loc[s.0 as usize].0 != 0 {
                state = node_state[s.0 as usize];
                break;
            }
            path.push(s);
            cur = tables.stack_node(s).parent;
        }
        for &node in path.iter().rev() {
            let frame = tables.stack_node(node).frame;
            let (next, ann) = annotate_with(state, classes[frame.0 as usize]);
            let loc = b.location(frame, ann);
            let parent = tables.stack_node(node).parent.map_or(0, |p| p.0 + 1);
            node_loc[node.0 as usize] = (u32::try_from(loc).expect("fewer than 2^32 locations"), parent);
            node_state[node.0 as usize] = next;
            state = next;
        }
        locs.clear();
        let mut cur = stack.0 + 1;
        while cur != 0 {
            let (loc, parent) = node_loc[cur as usize - 1];
            locs.push(u64::from(loc));
            cur = parent;
        }
        write_sample(&mut bytes, &locs, values);
    }
    if opts.extras {
        for (i, m) in b.mappings.iter_mut().enumerate() {
            // `Location.address` holds rel_pc, not a process address, so pprof must not try to
            // symbolize these mappings itself: what the trace (or heapconv) knows is all there is.
            m.has_functions = true;
            let sym = b.mapping_symbolized[i];
            m.has_filenames = sym;
            m.has_line_numbers = sym;
            m.has_inline_frames = sym;
        }
        let meta = &profile.meta;
        if let Some(interval) = meta.sampling_interval.filter(|&i| i > 0) {
            let ty = b.s("space");
            let unit = b.s("bytes");
            out.period_type = Some(pp::ValueType { r#type: ty, unit });
            out.period = i64::try_from(interval).unwrap_or(i64::MAX);
        }
        if let Some(t) = profile.sample_types.get(profile.default_sample_type) {
            out.default_sample_type = b.s(&t.name);
        }
        let mut comments = vec![format!("heapconv: {}", meta.describe())];
        if let Some(i) = meta.sampling_interval {
            comments.push(format!("sampling interval: {i} bytes"));
        }
        if meta.flags.dump_at_max {
            comments.push("dump_at_max: values are the heap at its peak".to_owned());
        }
        let loss = meta.flags.data_loss();
        if !loss.is_empty() {
            comments.push(format!("data loss: {}", loss.join(", ")));
        }
        for c in comments {
            let id = b.s(&c);
            out.comment.push(id);
        }
    }
    out.location = b.locations;
    out.function = b.functions;
    out.mapping = b.mappings;
    out.string_table =
        (0..b.strings.len()).map(|i| b.strings.get(crate::model::StringId(i as u32)).to_owned()).collect();
    bytes.reserve(out.encoded_len());
    out.encode(&mut bytes).expect("a Vec grows as needed");
    bytes
}

/// Appends one `Sample` (Profile field 2) in wire format: packed `location_id` (1) and packed
/// `value` (2, int64 as two's-complement varints).
fn write_sample(buf: &mut Vec<u8>, locs: &[u64], values: &[i64]) {
    use prost::encoding::{encode_varint, encoded_len_varint};
    let locs_len: usize = locs.iter().map(|&l| encoded_len_varint(l)).sum();
    let vals_len: usize = values.iter().map(|&v| encoded_len_varint(v as u64)).sum();
    let mut inner = 0;
    if !locs.is_empty() {
        inner += 1 + encoded_len_varint(locs_len as u64) + locs_len;
    }
    if !values.is_empty() {
        inner += 1 + encoded_len_varint(vals_len as u64) + vals_len;
    }
    buf.push(0x12);
    encode_varint(inner as u64, buf);
    if !locs.is_empty() {
        buf.push(0x0a);
        encode_varint(locs_len as u64, buf);
        for &l in locs {
            encode_varint(l, buf);
        }
    }
    if !values.is_empty() {
        buf.push(0x12);
        encode_varint(vals_len as u64, buf);
        for &v in values {
            encode_varint(v as u64, buf);
        }
    }
}

/// Gzip-compresses `bytes` (level 6, no file name, zero mtime: deterministic).
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc =
        flate2::GzBuilder::new().mtime(0).write(Vec::with_capacity(bytes.len() / 4 + 64), flate2::Compression::new(6));
    enc.write_all(bytes).expect("writing to memory");
    enc.finish().expect("writing to memory")
}
