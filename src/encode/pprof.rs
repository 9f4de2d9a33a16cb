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

use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

use prost::Message;

use crate::model::annotate::{Annotation, AnnotationState, FrameClass, annotate_with, classify_frames_from};
use crate::model::{
    FlatProfile, FrameId, MappingId, Profile, ProfileMeta, StackId, StringId, StringTable, Tables, ValueType,
};
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

struct Builder {
    tables: std::sync::Arc<Tables>,
    /// The profile's strings in output order: each text once, numbered at its first use by
    /// [`Builder::s`] or [`Builder::sid`] (the tables' strings are distinct already, so only
    /// the texts given by `s` are hashed against them).
    strings: Vec<OutText>,
    /// The texts given by [`Builder::s`] ("" first), and per text its index in `strings`.
    extra: StringTable,
    extra_out: Vec<u32>,
    /// Per string id of `tables`: its index in `strings` + 1 (0: not yet looked up).
    by_id: Vec<u32>,
    functions: Vec<pp::Function>,
    /// Per output string (a function's name): its last function's id (0: none); per function
    /// (id - 1), the id of the one before it with the same name. Functions are told apart by
    /// name, system name and file.
    fn_by_name: Vec<u32>,
    fn_next: Vec<u32>,
    mappings: Vec<pp::Mapping>,
    /// Per mapping of the tables: its id in the output (0: not yet numbered).
    mapping_out: Vec<u32>,
    mapping_symbolized: Vec<bool>,
}

/// A string of a [`Builder`]'s output: a string of its tables, or a text of its `extra`.
#[derive(Clone, Copy)]
enum OutText {
    Model(StringId),
    Extra(StringId),
}

impl Builder {
    fn new(tables: std::sync::Arc<Tables>) -> Self {
        Builder {
            tables,
            strings: vec![OutText::Extra(StringId::EMPTY)],
            extra: StringTable::default(),
            extra_out: vec![0],
            by_id: Vec::new(),
            functions: Vec::new(),
            fn_by_name: Vec::new(),
            fn_next: Vec::new(),
            mappings: Vec::new(),
            mapping_out: Vec::new(),
            mapping_symbolized: Vec::new(),
        }
    }

    /// The index of `text` in the output's strings, numbered at its first use. A text that is
    /// also a string of the tables gets that string's index, and the string gets the text's.
    fn s(&mut self, text: &str) -> i64 {
        let e = self.extra.intern(text).0 as usize;
        if let Some(&out) = self.extra_out.get(e) {
            return i64::from(out);
        }
        let model = self.tables.strings.lookup(text).filter(|id| !id.is_empty());
        let known = model.and_then(|id| self.by_id.get(id.0 as usize).copied()).filter(|&v| v != 0);
        let out = match known {
            Some(v) => v - 1,
            None => {
                let out = u32::try_from(self.strings.len()).expect("fewer than 2^32 strings");
                self.strings.push(OutText::Extra(StringId(e as u32)));
                if let Some(id) = model {
                    let i = id.0 as usize;
                    if self.by_id.len() <= i {
                        self.by_id.resize(self.tables.strings.len().max(i + 1), 0);
                    }
                    self.by_id[i] = out + 1;
                }
                out
            }
        };
        self.extra_out.push(out);
        i64::from(out)
    }

    /// [`Builder::s`] of string `id` of the tables, remembered per id: a text given to `s`
    /// before is found by `s` among the tables' strings, so a string not yet numbered is new.
    fn sid(&mut self, id: StringId) -> i64 {
        let i = id.0 as usize;
        if id.is_empty() || i >= self.tables.strings.len() {
            // "" (an id the tables did not give reads as "").
            return 0;
        }
        if self.by_id.len() <= i {
            self.by_id.resize(self.tables.strings.len().max(i + 1), 0);
        }
        if self.by_id[i] == 0 {
            let out = u32::try_from(self.strings.len()).expect("fewer than 2^32 strings");
            self.strings.push(OutText::Model(id));
            self.by_id[i] = out + 1;
        }
        i64::from(self.by_id[i] - 1)
    }

    /// The text of an output string.
    fn text(&self, t: OutText) -> &str {
        match t {
            OutText::Model(id) => self.tables.strings.get(id),
            OutText::Extra(id) => self.extra.get(id),
        }
    }

    /// A function's id by its name, system name and file (the `s` of each).
    fn function(&mut self, key: (i64, i64, i64), start_line: i64) -> u64 {
        let name = key.0 as usize;
        if self.fn_by_name.len() <= name {
            self.fn_by_name.resize((name + 1).max(self.strings.len()), 0);
        }
        let mut cur = self.fn_by_name[name];
        while cur != 0 {
            let f = &self.functions[cur as usize - 1];
            if f.system_name == key.1 && f.filename == key.2 {
                return u64::from(cur);
            }
            cur = self.fn_next[cur as usize - 1];
        }
        let id = u32::try_from(self.functions.len() + 1).expect("fewer than 2^32 functions");
        self.functions.push(pp::Function {
            id: u64::from(id),
            name: key.0,
            system_name: key.1,
            filename: key.2,
            start_line,
        });
        self.fn_next.push(self.fn_by_name[name]);
        self.fn_by_name[name] = id;
        u64::from(id)
    }

    fn mapping(&mut self, m: MappingId) -> u64 {
        let i = m.0 as usize;
        if self.mapping_out.len() <= i {
            self.mapping_out.resize((i + 1).max(self.tables.mappings().len()), 0);
        }
        if self.mapping_out[i] != 0 {
            return u64::from(self.mapping_out[i]);
        }
        let tables = std::sync::Arc::clone(&self.tables);
        let mapping = tables.mapping(m);
        let filename = self.sid(mapping.path);
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
        self.mapping_out[i] = u32::try_from(id).expect("fewer than 2^32 mappings");
        id
    }

    /// Fetches early the string numbers that [`Builder::number_location`] reads for `frame`.
    fn prefetch_location(&self, frame: &crate::model::Frame) {
        let fetch = |id: StringId| {
            if let Some(v) = self.by_id.get(id.0 as usize) {
                crate::model::tables::prefetch(v);
            }
        };
        match frame.lines.as_slice() {
            [] => fetch(frame.name),
            lines => lines.iter().for_each(|l| fetch(l.function)),
        }
    }

    /// Numbers what location `frame_id` uses at its first use, in the order its Location
    /// message names them: the mapping's file name and build id, then per line (or, for a frame
    /// without lines, of the frame) the name, system name and file, and the function. Appends
    /// the function id of each line (one for a frame without lines) to `fns`; returns the
    /// mapping id (0: none).
    fn number_location(&mut self, frame_id: FrameId, fns: &mut Vec<u32>) -> u32 {
        let tables = std::sync::Arc::clone(&self.tables);
        let frame = tables.frame(frame_id);
        let mapping_id = frame.mapping.map(|m| self.mapping(m)).unwrap_or(0);
        if frame.lines.is_empty() {
            let key = (self.sid(frame.name), self.sid(frame.raw_name), 0);
            fns.push(self.function(key, 0) as u32);
            if mapping_id != 0 {
                self.mapping_symbolized[mapping_id as usize - 1] = false;
            }
        } else {
            for l in &frame.lines {
                let key = (self.sid(l.function), self.sid(l.system_name), self.sid(l.file));
                fns.push(self.function(key, 0) as u32);
            }
        }
        mapping_id as u32
    }
}

/// Appends the Location message (Profile field 4) of location `id` to `out`: its mapping id
/// (0: none), address (0: none) and per line (function id, line, column). The bytes are those
/// prost writes for a `pp::Location`.
fn write_location(out: &mut Vec<u8>, id: u64, mapping_id: u64, address: u64, lines: &[(u64, u32, u32)]) {
    use prost::encoding::{encode_varint, encoded_len_varint};
    let mut body = 1 + encoded_len_varint(id);
    if mapping_id != 0 {
        body += 1 + encoded_len_varint(mapping_id);
    }
    if address != 0 {
        body += 1 + encoded_len_varint(address);
    }
    for &(f, line, column) in lines {
        let n = line_len(f, line, column);
        body += 1 + encoded_len_varint(n as u64) + n;
    }
    out.push(0x22);
    encode_varint(body as u64, out);
    out.push(0x08);
    encode_varint(id, out);
    if mapping_id != 0 {
        out.push(0x10);
        encode_varint(mapping_id, out);
    }
    if address != 0 {
        out.push(0x18);
        encode_varint(address, out);
    }
    for &(f, line, column) in lines {
        out.push(0x22);
        encode_varint(line_len(f, line, column) as u64, out);
        if f != 0 {
            out.push(0x08);
            encode_varint(f, out);
        }
        if line != 0 {
            out.push(0x10);
            encode_varint(u64::from(line), out);
        }
        if column != 0 {
            out.push(0x18);
            encode_varint(u64::from(column), out);
        }
    }
}

/// Appends the Function message (Profile field 5) `f` to `out`: the bytes prost writes.
fn write_function(out: &mut Vec<u8>, f: &pp::Function) {
    use prost::encoding::{encode_varint, encoded_len_varint};
    let fields = [(0x08u8, f.id), (0x10, f.name as u64), (0x18, f.system_name as u64), (0x20, f.filename as u64)];
    let mut body: usize = fields.iter().filter(|x| x.1 != 0).map(|x| 1 + encoded_len_varint(x.1)).sum();
    if f.start_line != 0 {
        body += 1 + encoded_len_varint(f.start_line as u64);
    }
    out.push(0x2a);
    encode_varint(body as u64, out);
    for (key, v) in fields {
        if v != 0 {
            out.push(key);
            encode_varint(v, out);
        }
    }
    if f.start_line != 0 {
        out.push(0x28);
        encode_varint(f.start_line as u64, out);
    }
}

/// A pprof encoder for the profiles of one input (which share growing [`crate::model::Tables`]).
///
/// Location ids are given once per (frame, annotation) and kept across the profiles it encodes,
/// as traceconv numbers them per trace, and the location list of every stack is computed once:
/// the dumps of a continuous trace repeat the same stacks, so later dumps cost little more than
/// copying. Function, mapping and string ids are per profile, and only what a profile uses is
/// written. Use one encoder per decoded input; the output depends only on the profiles given
/// to it, in order.
#[derive(Debug)]
pub struct PprofEncoder {
    opts: PprofOptions,
    classes: Vec<FrameClass>,
    /// Per stack node: its annotation and the annotation state for its children, one byte.
    node_ann: Vec<NodeAnn>,
    locs: Vec<(FrameId, Annotation)>,
    /// Location id of each frame without annotation (0: none yet).
    plain_loc: Vec<u32>,
    /// Location ids of annotated frames.
    loc_index: HashMap<(FrameId, Annotation), u32>,
    paths: PathIndex,
    arena: Vec<u8>,
    catalog: Catalog,
    /// The sample and location buffers of the last streamed profile, for the next one.
    spare: (Vec<u8>, Vec<u8>),
    /// Per location id, whether the profile being encoded uses it (kept for the next one).
    used: Vec<u8>,
    /// Per sample of the profile being encoded: where its path lies in the arena (kept for
    /// the next one).
    spans: Vec<(u32, u32)>,
    /// The stacks and used locations of the last profiles of a few (pid, heap) keys, most
    /// recent last.
    marked: Vec<Marked>,
    /// Per sample of the profile being encoded: whether its stack was in the earlier profile.
    known: Vec<bool>,
}

/// How many (pid, heap) keys [`PprofEncoder`] remembers the used locations of.
const MARKED_PROFILES: usize = 8;

/// The stacks (increasing) of a profile and the locations they use (`used[id]` = 1).
#[derive(Debug, Default)]
struct Marked {
    key: (Option<u64>, String),
    stacks: Vec<StackId>,
    used: Vec<u8>,
}

/// Whether every stack of `earlier` (increasing) is a stack of `profile`, whose stacks must
/// increase too; `known[i]` is then whether sample i's stack is one of them.
fn stacks_include(profile: &Profile, earlier: &[StackId], known: &mut Vec<bool>) -> bool {
    known.clear();
    let n = profile.sample_count();
    if earlier.len() > n {
        return false;
    }
    let mut k = 0;
    for i in 0..n {
        let s = profile.sample(i).0;
        if i > 0 && profile.sample(i - 1).0 >= s {
            return false;
        }
        if k < earlier.len() && earlier[k] < s {
            // A stack of the earlier profile this one does not have.
            return false;
        }
        let found = k < earlier.len() && earlier[k] == s;
        k += usize::from(found);
        known.push(found);
    }
    k == earlier.len()
}

impl PprofEncoder {
    /// An encoder with `opts`.
    pub fn new(opts: PprofOptions) -> Self {
        PprofEncoder {
            opts,
            classes: Vec::new(),
            node_ann: Vec::new(),
            locs: Vec::new(),
            plain_loc: Vec::new(),
            loc_index: HashMap::default(),
            paths: PathIndex::default(),
            arena: Vec::new(),
            catalog: Catalog::default(),
            spare: (Vec::new(), Vec::new()),
            used: Vec::new(),
            spans: Vec::new(),
            marked: Vec::new(),
            known: Vec::new(),
        }
    }

    /// Gives every stack node added since the last call its global location id, in one
    /// forward pass: a parent always comes before its children, so its annotation state is
    /// known when a child is reached.
    fn sync(&mut self, tables: &Tables) {
        if self.classes.len() < tables.frames().len() {
            let start = self.classes.len();
            self.classes.extend(classify_frames_from(tables, start));
        }
        let start = self.node_ann.len();
        let count = tables.stack_count();
        if start >= count {
            return;
        }
        // Grown by an eighth at a time at most (not doubled): this holds one entry per node.
        let want = (count - start).max(self.node_ann.len() / 8);
        if self.node_ann.capacity() < count {
            self.node_ann.reserve_exact(want);
        }
        if self.plain_loc.len() < tables.frames().len() {
            self.plain_loc.resize(tables.frames().len(), 0);
        }
        for n in start..count {
            let node = tables.stack_node(StackId(n as u32));
            let state = node.parent.map_or(AnnotationState::Initial, |p| self.node_ann[p.0 as usize].state());
            let (next, ann) = annotate_with(state, self.classes[node.frame.0 as usize]);
            let ann = if self.opts.annotations { ann } else { Annotation::None };
            // Location ids in the order nodes first use them.
            let key = (node.frame, ann);
            if ann == Annotation::None {
                let slot = &mut self.plain_loc[node.frame.0 as usize];
                if *slot == 0 {
                    self.locs.push(key);
                    *slot = u32::try_from(self.locs.len()).expect("fewer than 2^32 locations");
                }
            } else if !self.loc_index.contains_key(&key) {
                self.locs.push(key);
                let id = u32::try_from(self.locs.len()).expect("fewer than 2^32 locations");
                self.loc_index.insert(key, id);
            }
            self.node_ann.push(NodeAnn::new(ann, next));
        }
    }

    /// The location id of stack node `s` (of frame `frame`), known to [`PprofEncoder::sync`].
    #[inline]
    fn node_location(&self, s: StackId, frame: FrameId) -> u32 {
        match self.node_ann[s.0 as usize].annotation() {
            Annotation::None => self.plain_loc[frame.0 as usize],
            ann => self.loc_index[&(frame, ann)],
        }
    }

    /// The packed location ids of `stack`, leaf first, as (offset, length) in the arena.
    fn path(&mut self, tables: &Tables, stack: StackId) -> (usize, usize) {
        if let Some((off, len)) = self.paths.get(stack.0) {
            return (off as usize, len as usize);
        }
        let off = self.arena.len();
        // Grown by an eighth at a time (not doubled): the arena is one of the largest tables.
        if self.arena.capacity() - off < 4096 {
            self.arena.reserve_exact((off / 8).max(1 << 20));
        }
        let mut cur = Some(stack);
        while let Some(s) = cur {
            let node = tables.stack_node(s);
            let loc = self.node_location(s, node.frame);
            put_varint(&mut self.arena, u64::from(loc));
            cur = node.parent;
        }
        let len = self.arena.len() - off;
        self.paths.insert(stack.0, u32::try_from(off).expect("arena under 4 GiB"), len as u32);
        (off, len)
    }

    /// Does ahead of time the per-stack work of encoding profiles that will use `stacks`
    /// (stacks of `tables`, or of tables that extend them): location ids and location lists.
    /// The output is the same as without it.
    /// The catalog entries of the new locations (their functions, strings and mapping) are
    /// made here too, so the first profile that uses them only numbers them.
    pub fn prepare(&mut self, tables: &Tables, stacks: &[StackId]) {
        let known = self.locs.len();
        self.sync(tables);
        for id in known..self.locs.len() {
            let (frame, ann) = self.locs[id];
            self.catalog.entry(tables, &self.opts, id + 1, frame, ann);
        }
        for &s in stacks {
            self.path(tables, s);
        }
    }

    /// Encodes a profile as uncompressed pprof bytes.
    pub fn encode(&mut self, profile: &Profile) -> Vec<u8> {
        let mut v = Vec::with_capacity(profile.sample_count() * 64);
        self.encode_to(profile, &mut v).expect("writing to memory");
        v
    }

    /// Encodes a profile as uncompressed pprof into `w`, a megabyte at a time (so that a
    /// compressor or a file can take it without the whole profile ever being in memory).
    pub fn encode_to(&mut self, profile: &Profile, w: &mut dyn Write) -> std::io::Result<()> {
        self.encode_to_with(profile, w, false)
    }

    /// [`PprofEncoder::encode_to`] for a writer whose output does not depend on where its
    /// writes fall (a file, [`crate::encode::pprof_gzip::ParallelGzWriter`]): the same bytes,
    /// with the tables after the samples written a megabyte at a time instead of in one write,
    /// so they are never all in memory at once.
    pub fn encode_streaming_to(&mut self, profile: &Profile, w: &mut dyn Write) -> std::io::Result<()> {
        self.encode_to_with(profile, w, true)
    }

    fn encode_to_with(&mut self, profile: &Profile, w: &mut dyn Write, stream: bool) -> std::io::Result<()> {
        let tables = std::sync::Arc::clone(&profile.tables);
        self.sync(&tables);
        let opts = self.opts.clone();
        // This profile's strings, functions and mappings are numbered in first-use order on top
        // of the encoder's catalog (computed once per location for every profile).
        let cat = &mut self.catalog;
        cat.begin_profile(&tables);
        let mut sample_type = Vec::new();
        for t in &profile.header.sample_types {
            let ty = cat.s_text(&tables, &t.name);
            let unit = cat.s_text(&tables, &t.unit);
            sample_type.push(pp::ValueType { r#type: ty, unit });
        }
        // Samples are the bulk of a profile: they are written straight to wire format (field 2
        // of Profile) right after the sample types; the other fields follow (a message's
        // fields may come in any order; this is traceconv's).
        let head = pp::Profile { sample_type, ..Default::default() };
        const CHUNK: usize = 1 << 20;
        // The megabyte buffers serve one profile after the other (fresh ones are fresh pages).
        let mut bytes = std::mem::take(&mut self.spare.0);
        bytes.clear();
        bytes.reserve(CHUNK + 4096);
        head.encode(&mut bytes).expect("a Vec grows as needed");
        // One byte per location id: marking is a plain store (a bit set would load, or, and
        // store the same word again and again, each waiting for the last).
        let mut used = std::mem::take(&mut self.used);
        used.clear();
        used.resize(self.locs.len() + 1, 0u8);
        // Label keys and texts: model string id -> this profile's string index.
        let mut label_keys: HashMap<StringId, i64> = HashMap::default();
        let mut labels: Vec<WireLabel> = Vec::new();
        let with_labels = profile.has_labels();
        // Two passes over the samples. The first finds where each path lies: independent
        // lookups (each a cache miss), the slot of a sample some way ahead prefetched. The
        // second copies the paths, the path of a sample some way ahead prefetched whole (its
        // first and last bytes: a path is mostly under 128 bytes).
        // (The first pass takes a few nanoseconds a sample: its prefetches go further ahead.)
        const AHEAD: usize = 16;
        const SLOTS_AHEAD: usize = 64;
        let n = profile.sample_count();
        let mut spans = std::mem::take(&mut self.spans);
        spans.clear();
        spans.reserve(n);
        for i in 0..n {
            if i + SLOTS_AHEAD < n {
                self.paths.prefetch(profile.sample(i + SLOTS_AHEAD).0.0);
            }
            let (off, len) = self.path(&tables, profile.sample(i).0);
            spans.push((off as u32, len as u32));
        }
        // The locations used: those of an earlier profile of the same process and heap whose
        // stacks this one has too (continuous dumps only add stacks), and those of the other
        // stacks; else those of every stack. `known[i]`: sample i's stack was in that profile.
        let key = (profile.header.meta.pid, profile.header.meta.heap.clone());
        let mut known = std::mem::take(&mut self.known);
        let earlier = self.marked.iter().position(|m| m.key == key);
        let start = earlier.filter(|&e| stacks_include(profile, &self.marked[e].stacks, &mut known));
        if let Some(e) = start {
            used.clear();
            used.extend_from_slice(&self.marked[e].used);
            used.resize(self.locs.len() + 1, 0);
        }
        for (i, (_, values)) in profile.samples().enumerate() {
            if let Some(&(off, len)) = spans.get(i + AHEAD)
                && len > 0
            {
                crate::model::tables::prefetch(&self.arena[off as usize]);
                crate::model::tables::prefetch(&self.arena[(off + len - 1) as usize]);
            }
            let (off, len) = (spans[i].0 as usize, spans[i].1 as usize);
            let path = &self.arena[off..off + len];
            // The path's location ids are marked used: this loop runs once per frame of every
            // sample not known from the earlier profile.
            if start.is_none() || !known[i] {
                mark_used(&self.arena, off, off + len, &mut used);
            }
            if !with_labels {
                write_plain_sample(&mut bytes, path, values);
                if bytes.len() >= CHUNK {
                    w.write_all(&bytes)?;
                    bytes.clear();
                }
                continue;
            }
            labels.clear();
            let cat = &mut self.catalog;
            let mut sid = |id: StringId| *label_keys.entry(id).or_insert_with(|| cat.s_model(&tables, id));
            for &(key, num) in profile.sample_labels(i) {
                let k = sid(key);
                let unit = profile.num_label_unit(key).map_or(0, &mut sid);
                labels.push(WireLabel { key: k, str: 0, num, num_unit: unit });
            }
            for &(key, text) in profile.sample_str_labels(i) {
                let k = sid(key);
                let t = sid(text);
                labels.push(WireLabel { key: k, str: t, num: 0, num_unit: 0 });
            }
            write_sample(&mut bytes, path, values, &labels);
            if bytes.len() >= CHUNK {
                w.write_all(&bytes)?;
                bytes.clear();
            }
        }
        self.spans = spans;
        // This profile's stacks and used locations, for the next profile of its process and
        // heap (only when its stacks are in increasing order, as a heapprofd dump's are).
        let ascending = (1..n).all(|i| profile.sample(i - 1).0 < profile.sample(i).0);
        if ascending {
            let mut m = match earlier {
                Some(e) => self.marked.remove(e),
                None if self.marked.len() >= MARKED_PROFILES => self.marked.remove(0),
                None => Marked::default(),
            };
            m.key = key;
            m.stacks.clear();
            m.stacks.extend((0..n).map(|i| profile.sample(i).0));
            m.used.clear();
            m.used.extend_from_slice(&used);
            self.marked.push(m);
        } else if let Some(e) = earlier {
            self.marked.remove(e);
        }
        self.known = known;
        let cat = &mut self.catalog;
        let mut loc_bytes = std::mem::take(&mut self.spare.1);
        loc_bytes.clear();
        for (id, _) in used.iter().enumerate().filter(|u| *u.1 != 0) {
            let (frame, ann) = self.locs[id - 1];
            cat.location(&tables, &opts, &mut loc_bytes, id, frame, ann);
        }
        self.used = used;
        let head = Head {
            meta: &profile.header.meta,
            types: &profile.header.sample_types,
            default: profile.header.default_sample_type,
        };
        let (mappings, rest) = {
            let mut mappings = cat.profile_mappings(&tables);
            let mut rest = pp::Profile::default();
            tail_fields(&mut mappings, &head, &opts, &mut |text| cat.s_text(&tables, text), &mut rest);
            (pp::Profile { mapping: mappings, ..Default::default() }.encode_to_vec(), rest.encode_to_vec())
        };
        // The samples' last bytes and everything after them go in one write, as they always
        // have (a streaming gzip's bytes depend on where the writes fall).
        if stream {
            w.write_all(&bytes)?;
            bytes.clear();
            w.write_all(&mappings)?;
            w.write_all(&loc_bytes)?;
            cat.write_functions(&mut bytes);
            w.write_all(&bytes)?;
            bytes.clear();
            let mut next = 0;
            while next < cat.pstrings.len() {
                next = cat.write_strings_from(&tables, &mut bytes, next, CHUNK);
                w.write_all(&bytes)?;
                bytes.clear();
            }
            self.spare = (bytes, loc_bytes);
            return w.write_all(&rest);
        }
        bytes.extend_from_slice(&mappings);
        bytes.extend_from_slice(&loc_bytes);
        drop(loc_bytes);
        cat.write_functions(&mut bytes);
        cat.write_strings_from(&tables, &mut bytes, 0, usize::MAX);
        bytes.extend_from_slice(&rest);
        w.write_all(&bytes)
    }
}

/// Encodes a profile whose stacks are frame lists (a merge, a decoded pprof) as uncompressed
/// pprof into `w`. One location per frame, numbered in first-use order; frame names are
/// written as they are (no annotations are added: such profiles carry them). The bytes are
/// those of [`encode_flat_parts`], one part after the other.
pub fn encode_flat_to(profile: &FlatProfile, opts: &PprofOptions, w: &mut dyn Write) -> std::io::Result<()> {
    for part in encode_flat_parts(profile, opts) {
        w.write_all(&part)?;
    }
    Ok(())
}

/// Samples encoded per part by [`encode_flat_parts`] (a fixed number, so that the parts do not
/// depend on the number of threads).
pub const FLAT_SAMPLES_PER_PART: usize = 16_384;

/// Encodes a profile whose stacks are frame lists as uncompressed pprof, in parts whose
/// concatenation is the encoding: the sample types, then the samples,
/// [`FLAT_SAMPLES_PER_PART`] to a part, then the mappings, locations, functions, strings and
/// the rest, 16,384 locations, functions or strings to a part. Locations and label strings are
/// numbered in first-use order in one pass over the samples, functions and the other strings
/// in one pass over the locations; the parts are then encoded in parallel (rayon).
pub fn encode_flat_parts(profile: &FlatProfile, opts: &PprofOptions) -> Vec<Vec<u8>> {
    encode_flat_parts_with(profile, opts, &|_, part| part)
}

/// [`encode_flat_parts`] with `part(index, bytes)` applied to each part (for example,
/// compressing or writing it) by the task that encoded it, as soon as it is encoded: parts
/// can come in any order, `index` says where each belongs (0 for the first).
pub fn encode_flat_parts_with(
    profile: &FlatProfile,
    opts: &PprofOptions,
    part: &(dyn Fn(usize, Vec<u8>) -> Vec<u8> + Sync),
) -> Vec<Vec<u8>> {
    use rayon::prelude::*;
    let tables = std::sync::Arc::clone(&profile.tables);
    let mut b = Builder::new(std::sync::Arc::clone(&tables));
    let mut out = pp::Profile::default();
    for t in &profile.header.sample_types {
        let ty = b.s(&t.name);
        let unit = b.s(&t.unit);
        out.sample_type.push(pp::ValueType { r#type: ty, unit });
    }
    let head = pp::Profile { sample_type: std::mem::take(&mut out.sample_type), ..Default::default() };
    let mut clock = crate::timing::Phases::start("encode");
    let mut parts = vec![part(0, head.encode_to_vec())];
    // Numbering: locations and label strings in first-use order.
    let mut loc_of = vec![0u32; tables.frames().len()];
    let mut order: Vec<FrameId> = Vec::new();
    let mut label_keys: HashMap<StringId, i64> = HashMap::default();
    let with_labels = profile.has_labels();
    for i in 0..profile.sample_count() {
        for &f in profile.sample(i).0 {
            let slot = &mut loc_of[f.0 as usize];
            if *slot == 0 {
                order.push(f);
                *slot = u32::try_from(order.len()).expect("fewer than 2^32 locations");
            }
        }
        if with_labels {
            let mut sid = |b: &mut Builder, id: StringId| {
                label_keys.entry(id).or_insert_with(|| b.s(tables.strings.get(id)));
            };
            for &(key, _) in profile.sample_labels(i) {
                sid(&mut b, key);
                if let Some(u) = profile.num_label_unit(key) {
                    sid(&mut b, u);
                }
            }
            for &(key, text) in profile.sample_str_labels(i) {
                sid(&mut b, key);
                sid(&mut b, text);
            }
        }
    }
    clock.done("number locations");
    // The samples, a part per FLAT_SAMPLES_PER_PART, and beside them the tables.
    let n = profile.sample_count();
    // Each location id as a varint (at most 5 bytes, little-endian in a u64) with its length
    // in the top byte: 8 bytes per frame, so that more of the table stays in cache.
    let loc_varint: Vec<u64> = loc_of
        .iter()
        .map(|&id| {
            let (mut word, mut len, mut rest) = (0u64, 0u64, id);
            loop {
                let byte = u64::from(rest & 0x7f) | if rest >= 0x80 { 0x80 } else { 0 };
                word |= byte << (8 * len);
                len += 1;
                rest >>= 7;
                if rest == 0 {
                    break word | (len << 56);
                }
            }
        })
        .collect();
    let samples = || -> Vec<Vec<u8>> {
        (0..n.div_ceil(FLAT_SAMPLES_PER_PART))
            .into_par_iter()
            .map(|k| {
                let range = k * FLAT_SAMPLES_PER_PART..((k + 1) * FLAT_SAMPLES_PER_PART).min(n);
                let frames: usize = range.clone().map(|i| profile.sample(i).0.len()).sum();
                let mut bytes = Vec::with_capacity(frames * 3 + range.len() * 16);
                let mut path: Vec<u8> = Vec::new();
                let mut labels: Vec<WireLabel> = Vec::new();
                let sid = |id: StringId| label_keys.get(&id).copied().unwrap_or(0);
                for i in range {
                    // (Location ids are read in sample order, not in frame order: those of the
                    // sample after next fetched early.)
                    if i + 2 < n {
                        for f in profile.sample(i + 2).0 {
                            crate::model::tables::prefetch(&loc_varint[f.0 as usize]);
                        }
                    }
                    let (frames, values) = profile.sample(i);
                    // Each location's varint is written as 8 bytes and the end moved by its length.
                    path.clear();
                    path.resize(frames.len() * 5 + 8, 0);
                    let mut at = 0;
                    for &f in frames {
                        let word = loc_varint[f.0 as usize];
                        path[at..at + 8].copy_from_slice(&(word & 0x00ff_ffff_ffff_ffff).to_le_bytes());
                        at += (word >> 56) as usize;
                    }
                    path.truncate(at);
                    labels.clear();
                    if with_labels {
                        for &(key, num) in profile.sample_labels(i) {
                            let unit = profile.num_label_unit(key).map_or(0, sid);
                            labels.push(WireLabel { key: sid(key), str: 0, num, num_unit: unit });
                        }
                        for &(key, text) in profile.sample_str_labels(i) {
                            labels.push(WireLabel { key: sid(key), str: sid(text), num: 0, num_unit: 0 });
                        }
                    }
                    write_sample(&mut bytes, &path, values, &labels);
                }
                part(1 + k, bytes)
            })
            .collect()
    };
    let tables = move || -> Vec<Vec<u8>> {
        // Numbered in first-use order, one location after the other (a frame some way ahead
        // fetched early: they are read in first-use order, not in storage order).
        let all = tables.frames();
        let mut mapping_of: Vec<u32> = Vec::with_capacity(order.len());
        let mut line_at: Vec<u32> = Vec::with_capacity(order.len() + 1);
        let mut fns: Vec<u32> = Vec::with_capacity(order.len() + order.len() / 2);
        for (k, &f) in order.iter().enumerate() {
            if let Some(ahead) = order.get(k + 8) {
                crate::model::tables::prefetch(&all[ahead.0 as usize]);
            }
            // (Then the lines of a nearer frame, and the string numbers of a nearer one still.)
            if let Some(l) = order.get(k + 4).and_then(|ahead| all[ahead.0 as usize].lines.first()) {
                crate::model::tables::prefetch(l);
            }
            if let Some(&ahead) = order.get(k + 2) {
                b.prefetch_location(&all[ahead.0 as usize]);
            }
            line_at.push(u32::try_from(fns.len()).expect("fewer than 2^32 lines"));
            mapping_of.push(b.number_location(f, &mut fns));
        }
        line_at.push(u32::try_from(fns.len()).expect("fewer than 2^32 lines"));
        let head = Head {
            meta: &profile.header.meta,
            types: &profile.header.sample_types,
            default: profile.header.default_sample_type,
        };
        let mut mappings = std::mem::take(&mut b.mappings);
        for (m, &sym) in mappings.iter_mut().zip(&b.mapping_symbolized) {
            m.has_filenames = sym;
        }
        tail_fields(&mut mappings, &head, opts, &mut |text| b.s(text), &mut out);
        // Then fields 3 (mappings), 4 (locations), 5 (functions), 6 (strings) and the rest:
        // what encoding them in one message writes. Locations, functions and strings are written
        // in runs of RUN, each run a part of its own, in parallel: the mappings go before the
        // first part, the rest after the last.
        let mappings = pp::Profile { mapping: mappings, ..Default::default() }.encode_to_vec();
        let rest = out.encode_to_vec();
        const RUN: usize = 1 << 14;
        let b = &b;
        let (nl, nf, ns) = (order.len().div_ceil(RUN), b.functions.len().div_ceil(RUN), b.strings.len().div_ceil(RUN));
        let count = (nl + nf + ns).max(1);
        let first = 1 + n.div_ceil(FLAT_SAMPLES_PER_PART);
        let extras = opts.extras;
        (0..count)
            .into_par_iter()
            .map(|j| {
                let mut bytes = if j == 0 { mappings.clone() } else { Vec::new() };
                if j < nl {
                    let run = &order[j * RUN..((j + 1) * RUN).min(order.len())];
                    bytes.reserve(run.len() * 24);
                    let mut lines: Vec<(u64, u32, u32)> = Vec::new();
                    for (i, &f) in run.iter().enumerate() {
                        // (Frames are read in first-use order, not in storage order: the frame
                        // some way ahead, and the lines of a nearer one, fetched early.)
                        if let Some(ahead) = run.get(i + 32) {
                            crate::model::tables::prefetch(&all[ahead.0 as usize]);
                        }
                        if let Some(l) = run.get(i + 16).and_then(|ahead| all[ahead.0 as usize].lines.first()) {
                            crate::model::tables::prefetch(l);
                        }
                        let k = j * RUN + i;
                        let frame = &all[f.0 as usize];
                        let ids = &fns[line_at[k] as usize..line_at[k + 1] as usize];
                        lines.clear();
                        if frame.lines.is_empty() {
                            lines.push((u64::from(ids[0]), 0, 0));
                        } else {
                            lines.extend(frame.lines.iter().zip(ids).map(|(l, &id)| (u64::from(id), l.line, l.column)));
                        }
                        let address = if extras { frame.rel_pc } else { 0 };
                        write_location(&mut bytes, k as u64 + 1, u64::from(mapping_of[k]), address, &lines);
                    }
                } else if j < nl + nf {
                    let c = j - nl;
                    let run = &b.functions[c * RUN..((c + 1) * RUN).min(b.functions.len())];
                    bytes.reserve(run.len() * 16);
                    for f in run {
                        write_function(&mut bytes, f);
                    }
                } else if j < nl + nf + ns {
                    let c = j - nl - nf;
                    let run = &b.strings[c * RUN..((c + 1) * RUN).min(b.strings.len())];
                    bytes.reserve(run.iter().map(|&t| b.text(t).len() + 6).sum());
                    for (i, &t) in run.iter().enumerate() {
                        // (The text some way ahead fetched early: strings are numbered in first
                        // use order, not in the tables' order.)
                        if let Some(&OutText::Model(id)) = run.get(i + 32) {
                            b.tables.strings.prefetch(id);
                        }
                        if let Some(first) = run.get(i + 16).and_then(|&ahead| b.text(ahead).as_bytes().first()) {
                            crate::model::tables::prefetch(first);
                        }
                        let text = b.text(t);
                        prost::encoding::encode_key(6, prost::encoding::WireType::LengthDelimited, &mut bytes);
                        prost::encoding::encode_varint(text.len() as u64, &mut bytes);
                        bytes.extend_from_slice(text.as_bytes());
                    }
                }
                if j == count - 1 {
                    bytes.extend_from_slice(&rest);
                }
                part(first + j, bytes)
            })
            .collect()
    };
    let (sample_parts, tail) = rayon::join(samples, tables);
    clock.done("samples and tables");
    parts.extend(sample_parts);
    parts.extend(tail);
    parts
}

/// [`encode_flat_to`] into memory.
pub fn encode_pprof_flat(profile: &FlatProfile, opts: &PprofOptions) -> Vec<u8> {
    encode_flat_parts(profile, opts).concat()
}

/// Encodes one profile as uncompressed pprof bytes (a fresh [`PprofEncoder`]).
pub fn encode_pprof(profile: &Profile, opts: &PprofOptions) -> Vec<u8> {
    PprofEncoder::new(opts.clone()).encode(profile)
}

/// What the last parts of a flat profile write beyond samples, locations and what they use.
struct Head<'a> {
    meta: &'a ProfileMeta,
    types: &'a [ValueType],
    default: usize,
}

/// What follows the locations, functions and strings (with `extras`): the mappings' flags
/// (`has_filenames` on input says whether every frame of the mapping is symbolized), period,
/// default sample type, comments and times, interning their strings with `s` in that order.
fn tail_fields(
    mappings: &mut [pp::Mapping],
    head: &Head<'_>,
    opts: &PprofOptions,
    s: &mut dyn FnMut(&str) -> i64,
    out: &mut pp::Profile,
) {
    if !opts.extras {
        for m in mappings.iter_mut() {
            m.has_filenames = false;
        }
        return;
    }
    for m in mappings.iter_mut() {
        // `Location.address` holds rel_pc, not a process address, so pprof must not try to
        // symbolize these mappings itself: what the trace (or heapconv) knows is all there is.
        m.has_functions = true;
        let sym = m.has_filenames;
        m.has_line_numbers = sym;
        m.has_inline_frames = sym;
    }
    let meta = head.meta;
    if let Some(p) = &meta.period {
        let ty = s(&p.name);
        let unit = s(&p.unit);
        out.period_type = Some(pp::ValueType { r#type: ty, unit });
        out.period = p.value;
    } else if let Some(interval) = meta.sampling_interval.filter(|&i| i > 0) {
        let ty = s("space");
        let unit = s("bytes");
        out.period_type = Some(pp::ValueType { r#type: ty, unit });
        out.period = i64::try_from(interval).unwrap_or(i64::MAX);
    }
    if let Some(t) = head.types.get(head.default) {
        out.default_sample_type = s(&t.name);
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
    for c in meta.comments.iter() {
        if !comments.contains(c) {
            comments.push(c.clone());
        }
    }
    for c in comments {
        let id = s(&c);
        out.comment.push(id);
    }
    out.time_nanos = meta.time_nanos.unwrap_or(0);
    out.duration_nanos = meta.duration_nanos.unwrap_or(0);
}

/// One sample label as string indexes: `str` 0 for a numeric label, `num_unit` 0 for none.
struct WireLabel {
    key: i64,
    str: i64,
    num: i64,
    num_unit: i64,
}

/// Appends one `Sample` (Profile field 2) in wire format: packed `location_id` (1, given
/// already packed), packed `value` (2, int64 as two's-complement varints) and one `label` (3)
/// per label: `Label.key` (1), then `Label.str` (2) for a string label, or `Label.num` (3)
/// and, when it has one, `Label.num_unit` (4).
fn write_sample(buf: &mut Vec<u8>, locs: &[u8], values: &[i64], labels: &[WireLabel]) {
    use prost::encoding::{encode_varint, encoded_len_varint};
    let locs_len = locs.len();
    let vals_len: usize = values.iter().map(|&v| encoded_len_varint(v as u64)).sum();
    let label_len = |l: &WireLabel| {
        let mut n = 1 + encoded_len_varint(l.key as u64);
        if l.str != 0 {
            n += 1 + encoded_len_varint(l.str as u64);
        } else {
            n += 1 + encoded_len_varint(l.num as u64);
            if l.num_unit != 0 {
                n += 1 + encoded_len_varint(l.num_unit as u64);
            }
        }
        n
    };
    let mut inner = 0;
    if !locs.is_empty() {
        inner += 1 + encoded_len_varint(locs_len as u64) + locs_len;
    }
    if !values.is_empty() {
        inner += 1 + encoded_len_varint(vals_len as u64) + vals_len;
    }
    for l in labels {
        let n = label_len(l);
        inner += 1 + encoded_len_varint(n as u64) + n;
    }
    buf.push(0x12);
    encode_varint(inner as u64, buf);
    if !locs.is_empty() {
        buf.push(0x0a);
        encode_varint(locs_len as u64, buf);
        buf.extend_from_slice(locs);
    }
    if !values.is_empty() {
        buf.push(0x12);
        encode_varint(vals_len as u64, buf);
        for &v in values {
            encode_varint(v as u64, buf);
        }
    }
    for l in labels {
        buf.push(0x1a);
        encode_varint(label_len(l) as u64, buf);
        buf.push(0x08);
        encode_varint(l.key as u64, buf);
        if l.str != 0 {
            buf.push(0x10);
            encode_varint(l.str as u64, buf);
        } else {
            buf.push(0x18);
            encode_varint(l.num as u64, buf);
            if l.num_unit != 0 {
                buf.push(0x20);
                encode_varint(l.num_unit as u64, buf);
            }
        }
    }
}

/// [`write_sample`] of a sample without labels: its length prefixes and values are put
/// together in small arrays and copied as pieces of a fixed size (a copy of known size is a
/// few moves, not a call), then the end put back; only the path is a copy of its own length
/// (this runs once per sample of every profile).
#[inline]
fn write_plain_sample(buf: &mut Vec<u8>, locs: &[u8], values: &[i64]) {
    use prost::encoding::encoded_len_varint;
    if values.len() > 8 || locs.is_empty() || values.is_empty() {
        return write_sample(buf, locs, values, &[]);
    }
    // Up to 8 values of 10 bytes after their field key and length (3 bytes), with room to
    // copy 32 bytes from either start.
    let mut vals = [0u8; 3 + 80 + 32];
    let mut v = 3;
    for &x in values {
        v = varint_at(&mut vals, v, x as u64);
    }
    let vals_len = v - 3;
    // The values' key and length, right before them (the length takes 1 or 2 bytes).
    let start = if vals_len < 0x80 { 1 } else { 0 };
    vals[start] = 0x12;
    varint_at(&mut vals, start + 1, vals_len as u64);
    let tail = v - start;
    let inner = 1 + encoded_len_varint(locs.len() as u64) + locs.len() + tail;
    let mut head = [0u8; 16];
    head[0] = 0x12;
    let mut h = varint_at(&mut head, 1, inner as u64);
    head[h] = 0x0a;
    h = varint_at(&mut head, h + 1, locs.len() as u64);
    buf.reserve(16 + locs.len() + tail.max(32));
    let at = buf.len();
    buf.extend_from_slice(&head);
    buf.truncate(at + h);
    buf.extend_from_slice(locs);
    let at = buf.len();
    if tail <= 32 {
        buf.extend_from_slice(&vals[start..start + 32]);
        buf.truncate(at + tail);
    } else {
        buf.extend_from_slice(&vals[start..v]);
    }
}

/// Sets `used[id]` for every location id of the packed varints `arena[from..to]`. An index
/// kept in a register, not a slice advanced through memory (as `decode_varint` does).
#[inline]
fn mark_used(arena: &[u8], from: usize, to: usize, used: &mut [u8]) {
    let mut j = from;
    while j < to {
        let mut id = 0usize;
        let mut shift = 0;
        loop {
            let b = arena[j];
            j += 1;
            id |= usize::from(b & 0x7f) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
        }
        used[id] = 1;
    }
}

/// Writes `v` as a varint into `out` at `at`; returns the index after it.
#[inline]
fn varint_at(out: &mut [u8], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        out[at] = v as u8 | 0x80;
        v >>= 7;
        at += 1;
    }
    out[at] = v as u8;
    at + 1
}

/// Appends `v` as a varint (what `prost::encoding::encode_varint` writes), a push per byte
/// (prost puts each byte as a one-byte slice; a copy of a few bytes would be a call).
#[inline]
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// A gzip writer as [`gzip`] uses (fastest level, no name, zero mtime).
pub fn gzip_writer<W: Write>(w: W) -> flate2::write::GzEncoder<W> {
    flate2::GzBuilder::new().mtime(0).write(w, flate2::Compression::fast())
}

/// Gzip-compresses `bytes` at the fastest level, as Go's pprof writer does (`gzip.BestSpeed`);
/// no file name and a zero mtime, so the output is deterministic.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    gzip_slices(&[bytes])
}

/// [`gzip`] of the concatenation of `slices`, as one gzip member.
pub fn gzip_slices(slices: &[&[u8]]) -> Vec<u8> {
    let len: usize = slices.iter().map(|s| s.len()).sum();
    // Room for incompressible input: the pages a smaller output leaves untouched cost nothing.
    let mut out = Vec::with_capacity(len + len / 256 + 256);
    gzip_slices_into(slices, &mut out);
    out
}

/// Appends [`gzip_slices`]`(slices)` to `out`: the bytes of [`gzip_writer`] given each slice in
/// turn, made by a compressor kept per thread (set up once, reset for each member; setting
/// one up clears a few hundred kilobytes).
pub fn gzip_slices_into(slices: &[&[u8]], out: &mut Vec<u8>) {
    use flate2::{Compress, Compression, Crc, FlushCompress, Status};
    thread_local! {
        static DEFLATE: std::cell::RefCell<Option<Compress>> = const { std::cell::RefCell::new(None) };
    }
    // The deflate stream at the fastest level depends on the room each call has for output
    // (zlib-rs closes blocks when it runs out), so the calls are those of flate2's writer:
    // 32 KiB of room each, the input given whole, then `Finish` until the stream ends.
    const ROOM: usize = 32 * 1024;
    // What `GzBuilder::new().mtime(0)` writes at the fastest level: no flags, mtime 0, XFL 4
    // (fastest), OS 255 (unknown).
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
    let mut crc = Crc::new();
    DEFLATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        let c = cell.get_or_insert_with(|| Compress::new(Compression::fast(), false));
        c.reset();
        // One call with ROOM bytes of output; whether the stream ended.
        let mut step = |input: &[u8], flush: FlushCompress| -> (usize, bool) {
            let at = out.len();
            out.resize(at + ROOM, 0);
            let (before_in, before_out) = (c.total_in(), c.total_out());
            let status = c.compress(input, &mut out[at..], flush).expect("deflating into memory");
            out.truncate(at + (c.total_out() - before_out) as usize);
            ((c.total_in() - before_in) as usize, status == Status::StreamEnd)
        };
        for s in slices {
            crc.update(s);
            let mut rest: &[u8] = s;
            while !rest.is_empty() {
                let (took, _) = step(rest, FlushCompress::None);
                rest = &rest[took..];
            }
        }
        while !step(&[], FlushCompress::Finish).1 {}
    });
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ProfileMeta, ValueKind, ValueType};

    #[test]
    fn sample_labels_become_numeric_pprof_labels() {
        let mut tables = Tables::default();
        let key = tables.strings.intern("thread");
        let name = tables.strings.intern("f");
        let f = tables.intern_frame(None, 0, name);
        let s = tables.intern_stack(&[f]).unwrap();
        let types = vec![ValueType::new("n", "count", ValueKind::TotalCount)];
        let mut p = Profile::new(std::sync::Arc::new(tables), ProfileMeta::default(), types);
        p.push_sample(s, &[1]);
        p.push_sample_with_labels(s, &[2], &[(key, 300), (key, -1)]);
        let out = pp::Profile::decode(encode_pprof(&p, &PprofOptions::default()).as_slice()).unwrap();
        assert!(out.sample[0].label.is_empty());
        let labels: Vec<(&str, i64)> =
            out.sample[1].label.iter().map(|l| (out.string_table[l.key as usize].as_str(), l.num)).collect();
        assert_eq!(labels, [("thread", 300), ("thread", -1)]);
        assert_eq!(out.sample[1].value, [2]);
        assert_eq!(out.sample[1].location_id.len(), 1);
    }

    #[test]
    fn flat_encoder_writes_locations_as_prost_does_and_tells_functions_apart_by_file() {
        use crate::model::{FlatProfile, Frame, Line, Mapping};
        let mut t = Tables::default();
        let lib = t.strings.intern("libx.so");
        let m = t.intern_mapping(Mapping {
            path: lib,
            build_id: vec![0xab, 0xcd].into(),
            start: 0x1000,
            end: 0x9000,
            start_offset: 0,
            exact_offset: 0x200,
            load_bias: 0,
        });
        let [f, g, a, b] = ["f", "g", "a.c", "b.c"].map(|x| t.strings.intern(x));
        let line = |function, file, line, column| Line { function, system_name: function, file, line, column };
        let frames = vec![
            // Unsymbolized, in the mapping: its mapping loses has_filenames.
            t.intern_frame_exact(Frame { mapping: Some(m), rel_pc: 0x1234, raw_name: g, name: g, lines: vec![] }),
            // Two lines named f, in two files: two functions; a line 300 and a column.
            t.intern_frame_exact(Frame {
                mapping: Some(m),
                rel_pc: 0x99_9999,
                raw_name: StringId::EMPTY,
                name: StringId::EMPTY,
                lines: vec![line(f, a, 300, 7), line(f, b, 0, 0)],
            }),
            // f in a.c again (the same function), no mapping, address 0.
            t.intern_frame_exact(Frame {
                mapping: None,
                rel_pc: 0,
                raw_name: StringId::EMPTY,
                name: StringId::EMPTY,
                lines: vec![line(f, a, 1, 0)],
            }),
        ];
        let types = vec![ValueType::new("n", "count", ValueKind::TotalCount)];
        let meta = ProfileMeta::default();
        let p = FlatProfile::from_spans(std::sync::Arc::new(t), meta, types, frames, vec![(0, 3)], vec![5]);
        let bytes = encode_pprof_flat(&p, &PprofOptions::default());
        let out = pp::Profile::decode(bytes.as_slice()).unwrap();
        // prost writes the same bytes for what it read: the hand-written fields are canonical.
        assert_eq!(out.encode_to_vec(), bytes);
        let st = &out.string_table;
        let fns: Vec<(&str, &str)> =
            out.function.iter().map(|x| (st[x.name as usize].as_str(), st[x.filename as usize].as_str())).collect();
        assert_eq!(fns, [("g", ""), ("f", "a.c"), ("f", "b.c")]);
        type Loc = (u64, u64, Vec<(u64, i64, i64)>);
        let locs: Vec<Loc> = out
            .location
            .iter()
            .map(|l| (l.mapping_id, l.address, l.line.iter().map(|x| (x.function_id, x.line, x.column)).collect()))
            .collect();
        assert_eq!(
            locs,
            [(1, 0x1234, vec![(1, 0, 0)]), (1, 0x99_9999, vec![(2, 300, 7), (3, 0, 0)]), (0, 0, vec![(2, 1, 0)])]
        );
        assert_eq!(out.mapping.len(), 1);
        assert!(!out.mapping[0].has_filenames);
        assert_eq!(st[out.mapping[0].build_id as usize], "abcd");
    }

    #[test]
    fn flat_encoder_writes_many_runs_of_locations_functions_and_strings_as_prost_does() {
        // More locations, functions and strings than one run of the tail's parts (2^14): the
        // parts, written in parallel, join into the bytes prost writes for what they hold.
        use crate::model::{FlatProfile, Frame, FrameId, Line, Mapping};
        let mut t = Tables::default();
        let lib = t.strings.intern("libbig.so");
        let m = t.intern_mapping(Mapping {
            path: lib,
            build_id: vec![1, 2].into(),
            start: 0x1000,
            end: 0x10_0000,
            start_offset: 0,
            exact_offset: 0,
            load_bias: 0,
        });
        let n = 40_000u32;
        let frames: Vec<FrameId> = (0..n)
            .map(|i| {
                let name = t.strings.intern(&format!("fn_{i}"));
                let file = t.strings.intern(&format!("file_{}.c", i % 50));
                let lines = if i % 3 == 0 {
                    vec![]
                } else {
                    vec![Line { function: name, system_name: name, file, line: i, column: 0 }]
                };
                t.intern_frame_exact(Frame {
                    mapping: (i % 2 == 0).then_some(m),
                    rel_pc: 0x1000 + u64::from(i),
                    raw_name: name,
                    name,
                    lines,
                })
            })
            .collect();
        // Samples of 4 frames each, read in an order unlike storage order.
        let mut stack = Vec::new();
        let mut spans = Vec::new();
        for s in 0..n / 4 {
            spans.push((stack.len() as u32, 4));
            for k in 0..4 {
                stack.push(frames[((s * 7919 + k * 104_729) % n) as usize]);
            }
        }
        let values: Vec<i64> = (0..spans.len() as i64).collect();
        let types = vec![ValueType::new("n", "count", ValueKind::TotalCount)];
        let p = FlatProfile::from_spans(std::sync::Arc::new(t), ProfileMeta::default(), types, stack, spans, values);
        let parts = encode_flat_parts(&p, &PprofOptions::default());
        assert!(parts.len() > 3 + (n as usize).div_ceil(FLAT_SAMPLES_PER_PART), "{} parts", parts.len());
        let bytes = parts.concat();
        let out = pp::Profile::decode(bytes.as_slice()).unwrap();
        assert_eq!(out.encode_to_vec(), bytes);
        assert_eq!(out.sample.len(), (n / 4) as usize);
        assert!(out.location.len() > 30_000 && out.function.len() > 30_000 && out.string_table.len() > 30_000);
        let st = &out.string_table;
        for (s, sample) in out.sample.iter().enumerate().step_by(997) {
            let names: Vec<&str> = sample
                .location_id
                .iter()
                .map(|&id| {
                    let loc = &out.location[id as usize - 1];
                    assert_eq!(loc.id, id);
                    st[out.function[loc.line[0].function_id as usize - 1].name as usize].as_str()
                })
                .collect();
            let want: Vec<String> = (0..4).map(|k| format!("fn_{}", (s as u32 * 7919 + k * 104_729) % n)).collect();
            assert_eq!(names, want);
        }
    }

    #[test]
    fn flat_encoder_writes_a_text_once_whether_given_by_id_or_as_text() {
        use crate::model::{FlatProfile, FrameId};
        let mut tables = Tables::default();
        // Function names that are also the sample type's name and unit, and comments.
        let names = ["count", "main", "n", "note"];
        let frames: Vec<FrameId> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let s = tables.strings.intern(n);
                tables.intern_frame(None, i as u64, s)
            })
            .collect();
        let types = vec![ValueType::new("n", "count", ValueKind::TotalCount)];
        let meta = ProfileMeta { comments: vec!["note".into(), "main".into(), "other".into()], ..Default::default() };
        let p = FlatProfile::from_spans(std::sync::Arc::new(tables), meta, types, frames, vec![(0, 4)], vec![5]);
        let out = pp::Profile::decode(encode_pprof_flat(&p, &PprofOptions::default()).as_slice()).unwrap();
        let st = &out.string_table;
        let mut distinct = st.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), st.len(), "{st:?}");
        // Numbered in first-use order: "", the type's name and unit, then the function names.
        assert_eq!(st[..4], ["", "n", "count", "main"]);
        let function =
            |loc: &pp::Location| st[out.function[loc.line[0].function_id as usize - 1].name as usize].as_str();
        assert_eq!(out.location.iter().map(function).collect::<Vec<_>>(), names);
        let comments: Vec<&str> = out.comment.iter().map(|&c| st[c as usize].as_str()).collect();
        assert_eq!(comments[1..], ["note", "main", "other"]);
        assert_eq!(st[out.sample_type[0].unit as usize], "count");
    }

    #[test]
    fn gzip_with_a_reused_compressor_gives_the_bytes_of_a_gzip_writer() {
        let streamed = |slices: &[&[u8]]| {
            let mut w = gzip_writer(Vec::new());
            for s in slices {
                w.write_all(s).unwrap();
            }
            w.finish().unwrap()
        };
        // Text-like and noisy bytes, a megabyte and more, compressed several times on one thread.
        let text: Vec<u8> = (0..(1u32 << 20) + 333).flat_map(|i| format!("f{} ", i % 9973).into_bytes()).collect();
        let noise: Vec<u8> =
            (0..(1u32 << 18)).flat_map(|i| (i.wrapping_mul(2_654_435_761) >> 5).to_le_bytes()).collect();
        for _ in 0..2 {
            for input in [&b""[..], b"a", &text[..1000], &text[..1 << 20], &text, &noise] {
                assert_eq!(gzip(input), streamed(&[input]), "{} bytes", input.len());
            }
            let parts: [&[u8]; 3] = [&text[..70_000], &noise, &text[5..]];
            assert_eq!(gzip_slices(&parts), streamed(&parts));
        }
        let mut out = b"kept".to_vec();
        gzip_slices_into(&[&text[..5000]], &mut out);
        assert_eq!(&out[..4], b"kept");
        assert_eq!(out[4..], gzip(&text[..5000]));
    }

    #[test]
    fn a_profile_started_from_an_earlier_ones_locations_gives_the_bytes_of_a_fresh_encoder() {
        // Stacks over 300 frames (ids of 1 to 3 varint bytes need > 16k locations: 20k frames).
        let mut tables = Tables::default();
        let frames: Vec<FrameId> = (0..20_000u64)
            .map(|i| {
                let name = tables.strings.intern(&format!("f{i}"));
                tables.intern_frame(None, i, name)
            })
            .collect();
        let stacks: Vec<StackId> = (0..600usize)
            .map(|i| {
                let path: Vec<FrameId> = (0..1 + i % 9).map(|d| frames[(i * 31 + d * 7_919) % frames.len()]).collect();
                tables.intern_stack(&path).unwrap()
            })
            .collect();
        let tables = std::sync::Arc::new(tables);
        let types = vec![ValueType::new("n", "count", ValueKind::TotalCount)];
        let profile = |pid: u64, picked: &[usize]| {
            let meta = ProfileMeta { pid: Some(pid), heap: "libc.malloc".into(), ..Default::default() };
            let mut ids: Vec<StackId> = picked.iter().map(|&i| stacks[i]).collect();
            ids.sort();
            ids.dedup();
            let mut p = Profile::new(std::sync::Arc::clone(&tables), meta, types.clone());
            for (k, &s) in ids.iter().enumerate() {
                p.push_sample(s, &[k as i64 + 1]);
            }
            p
        };
        let all: Vec<usize> = (0..600).collect();
        let first: Vec<usize> = (0..300).collect();
        let dropped: Vec<usize> = (1..450).collect();
        // The same process growing, another process between, a stack gone, growing again.
        let runs = [
            profile(1, &first),
            profile(2, &all),
            profile(1, &all),
            profile(1, &dropped),
            profile(1, &all),
            profile(2, &first),
        ];
        let mut reused = PprofEncoder::new(PprofOptions::default());
        for (k, p) in runs.iter().enumerate() {
            let fresh = encode_pprof(p, &PprofOptions::default());
            assert_eq!(reused.encode(p), fresh, "profile {k}");
            let decoded = pp::Profile::decode(fresh.as_slice()).unwrap();
            let used: std::collections::BTreeSet<u64> =
                decoded.sample.iter().flat_map(|s| s.location_id.iter().copied()).collect();
            let written: std::collections::BTreeSet<u64> = decoded.location.iter().map(|l| l.id).collect();
            assert_eq!(used, written, "profile {k}: exactly the used locations are written");
        }
    }

    #[test]
    fn node_annotations_pack_into_a_byte() {
        for ann in Annotation::ALL {
            for state in NodeAnn::STATES {
                let n = NodeAnn::new(ann, state);
                assert_eq!((n.annotation(), n.state()), (ann, state));
            }
        }
    }

    #[test]
    fn streaming_writes_the_same_bytes() {
        let mut tables = Tables::default();
        let mut frames = Vec::new();
        // Over a megabyte of strings, so that they are written in several pieces.
        for i in 0..30_000u64 {
            let name = tables.strings.intern(&format!("function_{i}_with_a_long_enough_name"));
            frames.push(tables.intern_frame(None, i, name));
        }
        let stacks: Vec<StackId> =
            (0..30_000).map(|i| tables.intern_stack(&[frames[i % 7], frames[i]]).unwrap()).collect();
        let types = vec![ValueType::new("n", "count", ValueKind::TotalCount)];
        let mut p = Profile::new(std::sync::Arc::new(tables), ProfileMeta::default(), types);
        for (i, &s) in stacks.iter().enumerate() {
            p.push_sample(s, &[i as i64]);
        }
        let whole = encode_pprof(&p, &PprofOptions::default());
        let mut streamed = Vec::new();
        PprofEncoder::new(PprofOptions::default()).encode_streaming_to(&p, &mut streamed).unwrap();
        assert_eq!(streamed, whole);
        // The names, "", the sample type's two strings and the comment.
        assert_eq!(pp::Profile::decode(whole.as_slice()).unwrap().string_table.len(), 30_000 + 4);
    }
}

/// A stack node's annotation (low 4 bits) and the annotation state for its children.
#[derive(Debug, Clone, Copy)]
struct NodeAnn(u8);

impl NodeAnn {
    const STATES: [AnnotationState; 3] =
        [AnnotationState::Initial, AnnotationState::EraseLibart, AnnotationState::KeepNext];

    fn new(ann: Annotation, state: AnnotationState) -> Self {
        let a = ann.index();
        let s = Self::STATES.iter().position(|&x| x == state).expect("every state is listed");
        NodeAnn(a as u8 | (s as u8) << 4)
    }

    fn annotation(self) -> Annotation {
        Annotation::ALL[usize::from(self.0 & 15)]
    }

    fn state(self) -> AnnotationState {
        Self::STATES[usize::from(self.0 >> 4)]
    }
}

/// Where each stack's packed location list lies in the encoder's arena: an open-addressing
/// table with the key and the value inline in one 12-byte slot (one cache miss per lookup).
#[derive(Debug, Default)]
struct PathIndex {
    /// (stack id + 1, offset, length); a zero key is an empty slot.
    slots: Vec<[u32; 3]>,
    len: usize,
}

impl PathIndex {
    fn slot(&self, key: u32) -> usize {
        let h = u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    fn prefetch(&self, stack: u32) {
        if !self.slots.is_empty() {
            crate::model::tables::prefetch(&self.slots[self.slot(stack + 1)]);
        }
    }

    fn get(&self, stack: u32) -> Option<(u32, u32)> {
        if self.slots.is_empty() {
            return None;
        }
        let key = stack + 1;
        let mask = self.slots.len() - 1;
        let mut i = self.slot(key);
        loop {
            let s = self.slots[i];
            if s[0] == key {
                return Some((s[1], s[2]));
            }
            if s[0] == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds a stack that is not in the table yet.
    fn insert(&mut self, stack: u32, off: u32, len: u32) {
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            let cap = (self.slots.len() * 2).max(1024);
            let old = std::mem::replace(&mut self.slots, vec![[0; 3]; cap]);
            self.len = 0;
            for s in old.into_iter().filter(|s| s[0] != 0) {
                self.put(s);
            }
        }
        self.put([stack + 1, off, len]);
    }

    fn put(&mut self, slot: [u32; 3]) {
        let mask = self.slots.len() - 1;
        let mut i = self.slot(slot[0]);
        while self.slots[i][0] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
        self.len += 1;
    }
}

/// Where a catalog string's text lies: a string of the model's tables (whose ids are
/// distinct texts), or one the encoder made (an annotated name, a build id, a comment).
#[derive(Debug, Clone, Copy)]
enum Text {
    Model(StringId),
    Extra(u32),
}

/// A location as the catalog holds it: mapping (`u32::MAX`: none), its lines in
/// `Catalog::lines`, whether it is unsymbolized (no lines of its own) and its address.
#[derive(Debug, Clone, Copy)]
struct CatLoc {
    mapping: u32,
    lines_start: u32,
    lines_len: u32,
    unsymbolized: bool,
    address: u64,
}

/// What the tables of the profiles an encoder writes are made of, computed once per location
/// for all of them: strings deduplicated by text (as a profile's string table is), functions
/// by their three strings, each location's mapping and lines. A profile numbers what it uses
/// in first-use order through generation-stamped maps (no hashing, no allocation per
/// location), and writes locations, functions and strings straight to wire format: the bytes
/// a `Builder` and prost give.
#[derive(Debug, Default)]
struct Catalog {
    text: Vec<Text>,
    extra: Vec<Box<str>>,
    /// Text hash -> first catalog string with that hash; `next_same` chains the others.
    by_hash: HashMap<u64, u32>,
    next_same: Vec<u32>,
    /// Catalog string of each model string (`u32::MAX`: not yet).
    model_gid: Vec<u32>,
    /// (name, system name, file) catalog strings of each function.
    functions: Vec<[u32; 3]>,
    function_index: HashMap<[u32; 3], u32>,
    /// Per global location id - 1 (`None`: not yet used by any profile).
    locs: Vec<Option<CatLoc>>,
    /// (function, line, column) of every location's lines.
    lines: Vec<(u32, u32, u32)>,
    /// (file name, build id) catalog strings per model mapping (`u32::MAX`: not yet).
    mapping_strings: Vec<[u32; 2]>,
    /// Profile numbering: generation and index per catalog string, function and mapping.
    generation: u32,
    str_seen: Vec<[u32; 2]>,
    fn_seen: Vec<[u32; 2]>,
    map_seen: Vec<[u32; 2]>,
    /// The profile's strings, functions and mappings (with its `has_*` verdict), in order.
    pstrings: Vec<u32>,
    pfuncs: Vec<u32>,
    pmaps: Vec<(MappingId, i64, i64, bool)>,
}

impl Catalog {
    fn text<'t>(&'t self, tables: &'t Tables, gid: u32) -> &'t str {
        match self.text[gid as usize] {
            Text::Model(id) => tables.strings.get(id),
            Text::Extra(i) => &self.extra[i as usize],
        }
    }

    /// The catalog string of `text` (`model`: the model string holding it, if any).
    fn intern(&mut self, tables: &Tables, text: &str, model: Option<StringId>) -> u32 {
        use std::hash::BuildHasher;
        let h = rustc_hash::FxBuildHasher.hash_one(text);
        let mut at = self.by_hash.get(&h).copied().unwrap_or(u32::MAX);
        let mut last = u32::MAX;
        while at != u32::MAX {
            if self.text(tables, at) == text {
                return at;
            }
            last = at;
            at = self.next_same[at as usize];
        }
        let gid = u32::try_from(self.text.len()).expect("fewer than 2^32 strings");
        self.text.push(match model {
            Some(id) => Text::Model(id),
            None => {
                self.extra.push(text.into());
                Text::Extra(u32::try_from(self.extra.len() - 1).expect("fewer than 2^32 strings"))
            }
        });
        self.next_same.push(u32::MAX);
        if last == u32::MAX {
            self.by_hash.insert(h, gid);
        } else {
            self.next_same[last as usize] = gid;
        }
        gid
    }

    fn model(&mut self, tables: &Tables, id: StringId) -> u32 {
        let i = id.0 as usize;
        if i >= self.model_gid.len() {
            self.model_gid.resize(tables.strings.len().max(i + 1), u32::MAX);
        }
        if self.model_gid[i] == u32::MAX {
            self.model_gid[i] = self.intern(tables, tables.strings.get(id), Some(id));
        }
        self.model_gid[i]
    }

    /// Starts numbering a new profile: "" is its string 0.
    fn begin_profile(&mut self, tables: &Tables) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            for v in [&mut self.str_seen, &mut self.fn_seen, &mut self.map_seen] {
                v.iter_mut().for_each(|e| *e = [0, 0]);
            }
            self.generation = 1;
        }
        self.pstrings.clear();
        self.pfuncs.clear();
        self.pmaps.clear();
        self.s_text(tables, "");
    }

    /// This profile's index of catalog string `gid`.
    fn s(&mut self, gid: u32) -> i64 {
        let g = gid as usize;
        if g >= self.str_seen.len() {
            self.str_seen.resize(self.text.len().max(g + 1), [0, 0]);
        }
        let e = &mut self.str_seen[g];
        if e[0] != self.generation {
            *e = [self.generation, self.pstrings.len() as u32];
            self.pstrings.push(gid);
        }
        i64::from(e[1])
    }

    fn s_text(&mut self, tables: &Tables, text: &str) -> i64 {
        let gid = self.intern(tables, text, None);
        self.s(gid)
    }

    fn s_model(&mut self, tables: &Tables, id: StringId) -> i64 {
        let gid = self.model(tables, id);
        self.s(gid)
    }

    /// The catalog entry of global location `id` = (frame, annotation), made on first use.
    fn entry(&mut self, tables: &Tables, opts: &PprofOptions, id: usize, frame_id: FrameId, ann: Annotation) -> CatLoc {
        if self.locs.len() < id {
            self.locs.resize(id, None);
        }
        if let Some(e) = self.locs[id - 1] {
            return e;
        }
        let frame = tables.frame(frame_id);
        let suffix = match ann {
            Annotation::None => String::new(),
            a => format!(" [{}]", a.label()),
        };
        let shown = |cat: &mut Catalog, name: StringId| {
            if suffix.is_empty() || tables.strings.get(name).is_empty() {
                // The name itself ("" stays "").
                cat.model(tables, name)
            } else {
                cat.intern(tables, &format!("{}{suffix}", tables.strings.get(name)), None)
            }
        };
        let lines_start = self.lines.len() as u32;
        let unsymbolized = frame.lines.is_empty();
        if unsymbolized {
            let name = shown(self, frame.name);
            let key = [name, self.model(tables, frame.raw_name), self.model(tables, StringId::EMPTY)];
            let f = self.function(key);
            self.lines.push((f, 0, 0));
        } else {
            for l in &frame.lines {
                let name = shown(self, l.function);
                let key = [name, self.model(tables, l.system_name), self.model(tables, l.file)];
                let f = self.function(key);
                self.lines.push((f, l.line, l.column));
            }
        }
        let mapping = match frame.mapping {
            Some(m) => {
                let i = m.0 as usize;
                if self.mapping_strings.len() <= i {
                    self.mapping_strings.resize(i + 1, [u32::MAX; 2]);
                }
                if self.mapping_strings[i][0] == u32::MAX {
                    let mapping = tables.mapping(m);
                    let file = self.model(tables, mapping.path);
                    let build = self.intern(tables, &mapping.build_id_text(), None);
                    self.mapping_strings[i] = [file, build];
                }
                m.0
            }
            None => u32::MAX,
        };
        let e = CatLoc {
            mapping,
            lines_start,
            lines_len: self.lines.len() as u32 - lines_start,
            unsymbolized,
            address: if opts.extras { frame.rel_pc } else { 0 },
        };
        self.locs[id - 1] = Some(e);
        e
    }

    fn function(&mut self, key: [u32; 3]) -> u32 {
        if let Some(&f) = self.function_index.get(&key) {
            return f;
        }
        let f = self.functions.len() as u32;
        self.functions.push(key);
        self.function_index.insert(key, f);
        f
    }

    /// Appends the Location message (Profile field 4) of global location `id` to `out`,
    /// numbering its mapping, functions and their strings for this profile as a `Builder`
    /// does: the mapping's file name and build id, then per line name, system name and file.
    fn location(
        &mut self,
        tables: &Tables,
        opts: &PprofOptions,
        out: &mut Vec<u8>,
        id: usize,
        frame: FrameId,
        ann: Annotation,
    ) {
        use prost::encoding::encoded_len_varint;
        let e = self.entry(tables, opts, id, frame, ann);
        let mut mapping_id = 0u64;
        if e.mapping != u32::MAX {
            let m = e.mapping as usize;
            if self.map_seen.len() <= m {
                self.map_seen.resize(m + 1, [0, 0]);
            }
            if self.map_seen[m][0] != self.generation {
                let [file, build] = self.mapping_strings[m];
                let file = self.s(file);
                let build = self.s(build);
                self.map_seen[m] = [self.generation, self.pmaps.len() as u32 + 1];
                self.pmaps.push((MappingId(e.mapping), file, build, true));
            }
            mapping_id = u64::from(self.map_seen[m][1]);
            if e.unsymbolized {
                self.pmaps[mapping_id as usize - 1].3 = false;
            }
        }
        let mut line_ids = [0u64; 8];
        let lines = e.lines_start as usize..(e.lines_start + e.lines_len) as usize;
        let mut body = 1 + encoded_len_varint(id as u64);
        if mapping_id != 0 {
            body += 1 + encoded_len_varint(mapping_id);
        }
        if e.address != 0 {
            body += 1 + encoded_len_varint(e.address);
        }
        let mut many = Vec::new();
        for (k, i) in lines.clone().enumerate() {
            let f = self.lines[i].0 as usize;
            if self.fn_seen.len() <= f {
                self.fn_seen.resize(self.functions.len().max(f + 1), [0, 0]);
            }
            if self.fn_seen[f][0] != self.generation {
                let [name, system, file] = self.functions[f];
                self.s(name);
                self.s(system);
                self.s(file);
                self.fn_seen[f] = [self.generation, self.pfuncs.len() as u32 + 1];
                self.pfuncs.push(f as u32);
            }
            let fid = u64::from(self.fn_seen[f][1]);
            if k < line_ids.len() {
                line_ids[k] = fid;
            } else {
                many.push(fid);
            }
            let n = line_len(fid, self.lines[i].1, self.lines[i].2);
            body += 1 + encoded_len_varint(n as u64) + n;
        }
        out.push(0x22);
        put_varint(out, body as u64);
        out.push(0x08);
        put_varint(out, id as u64);
        if mapping_id != 0 {
            out.push(0x10);
            put_varint(out, mapping_id);
        }
        if e.address != 0 {
            out.push(0x18);
            put_varint(out, e.address);
        }
        for (k, i) in lines.enumerate() {
            let fid = if k < line_ids.len() { line_ids[k] } else { many[k - line_ids.len()] };
            let (_, line, column) = self.lines[i];
            out.push(0x22);
            put_varint(out, line_len(fid, line, column) as u64);
            if fid != 0 {
                out.push(0x08);
                put_varint(out, fid);
            }
            if line != 0 {
                out.push(0x10);
                put_varint(out, u64::from(line));
            }
            if column != 0 {
                out.push(0x18);
                put_varint(out, u64::from(column));
            }
        }
    }

    /// The profile's mappings, `has_filenames` saying whether every location of each is
    /// symbolized (see [`tail_fields`]).
    fn profile_mappings(&self, tables: &Tables) -> Vec<pp::Mapping> {
        self.pmaps
            .iter()
            .enumerate()
            .map(|(i, &(m, filename, build_id, sym))| {
                let mapping = tables.mapping(m);
                pp::Mapping {
                    id: i as u64 + 1,
                    memory_start: mapping.start,
                    memory_limit: mapping.end,
                    file_offset: mapping.exact_offset,
                    filename,
                    build_id,
                    has_filenames: sym,
                    ..Default::default()
                }
            })
            .collect()
    }

    /// Appends the profile's Function messages (Profile field 5) to `buf`.
    fn write_functions(&self, buf: &mut Vec<u8>) {
        use prost::encoding::encoded_len_varint;
        for (i, &f) in self.pfuncs.iter().enumerate() {
            let id = i as u64 + 1;
            let ids = self.functions[f as usize].map(|g| {
                let e = self.str_seen[g as usize];
                debug_assert_eq!(e[0], self.generation);
                u64::from(e[1])
            });
            let mut body = 1 + encoded_len_varint(id);
            for &v in &ids {
                if v != 0 {
                    body += 1 + encoded_len_varint(v);
                }
            }
            buf.push(0x2a);
            put_varint(buf, body as u64);
            buf.push(0x08);
            put_varint(buf, id);
            for (tag, &v) in [0x10u8, 0x18, 0x20].iter().zip(&ids) {
                if v != 0 {
                    buf.push(*tag);
                    put_varint(buf, v);
                }
            }
        }
    }

    /// Appends the profile's string table (Profile field 6) to `buf`, from its string `from`
    /// until `buf` holds at least `limit` bytes; returns the index of the next string.
    fn write_strings_from(&self, tables: &Tables, buf: &mut Vec<u8>, from: usize, limit: usize) -> usize {
        for (i, &g) in self.pstrings.iter().enumerate().skip(from) {
            if buf.len() >= limit {
                return i;
            }
            let text = self.text(tables, g);
            buf.push(0x32);
            put_varint(buf, text.len() as u64);
            buf.extend_from_slice(text.as_bytes());
        }
        self.pstrings.len()
    }
}

/// Length of a Line message: function id, line and column, each written when not 0.
fn line_len(function: u64, line: u32, column: u32) -> usize {
    use prost::encoding::encoded_len_varint;
    let mut n = 0;
    if function != 0 {
        n += 1 + encoded_len_varint(function);
    }
    if line != 0 {
        n += 1 + encoded_len_varint(u64::from(line));
    }
    if column != 0 {
        n += 1 + encoded_len_varint(u64::from(column));
    }
    n
}
