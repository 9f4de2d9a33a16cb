//! What [`PprofEncoder`] has numbered across profiles (strings, functions, locations,
//! mappings), and each profile's first-use numbering of what it uses, written straight to
//! wire format.

use super::*;

/// Where a catalog string's text lies: a string of the model's tables (whose ids are
/// distinct texts), or one the encoder made (an annotated name, a build id, a comment).
#[derive(Debug, Clone, Copy)]
pub(super) enum Text {
    Model(StringId),
    Extra(u32),
}

/// A location as the catalog holds it: mapping (`u32::MAX`: none), its lines in
/// `Catalog::lines`, whether it is unsymbolized (no lines of its own) and its address.
#[derive(Debug, Clone, Copy)]
pub(super) struct CatLoc {
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
pub(super) struct Catalog {
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
    pub(super) pstrings: Vec<u32>,
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
    pub(super) fn begin_profile(&mut self, tables: &Tables) {
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

    pub(super) fn s_text(&mut self, tables: &Tables, text: &str) -> i64 {
        let gid = self.intern(tables, text, None);
        self.s(gid)
    }

    pub(super) fn s_model(&mut self, tables: &Tables, id: StringId) -> i64 {
        let gid = self.model(tables, id);
        self.s(gid)
    }

    /// The catalog entry of global location `id` = (frame, annotation), made on first use.
    pub(super) fn entry(
        &mut self,
        tables: &Tables,
        opts: &PprofOptions,
        id: usize,
        frame_id: FrameId,
        ann: Annotation,
    ) -> CatLoc {
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
    pub(super) fn location(
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
    pub(super) fn profile_mappings(&self, tables: &Tables) -> Vec<pp::Mapping> {
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
    pub(super) fn write_functions(&self, buf: &mut Vec<u8>) {
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
    pub(super) fn write_strings_from(&self, tables: &Tables, buf: &mut Vec<u8>, from: usize, limit: usize) -> usize {
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
