//! A decoded profile turned into the model ([`FlatProfile`]), every reference checked.

use super::*;

/// Turns a decoded message into the model, checking every reference.
pub(super) struct Converter<'a> {
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
    pub(super) lean: Option<LeanParts>,
    /// (Lean) label keys by text: one id per distinct key, as interning gives.
    label_keys: HashMap<&'a str, StringId>,
}

/// Ids to values: a vector when the ids are small (as producers number them, from 1), a hash
/// map otherwise.
pub(super) enum IdMap<T> {
    Dense(Vec<Option<T>>),
    Sparse(HashMap<u64, T>),
}

/// Frames of location ids that were numbered in ascending order (the frame of an id is the
/// number of ids below it): per 64 ids, a bit per id present and the frame of the first.
pub(super) struct IdRanks {
    blocks: Vec<(u64, u32)>,
}

impl IdRanks {
    /// The ranks of `table` (frames by location id), if each frame is its id's rank.
    pub(super) fn of(table: &[Option<FrameId>]) -> Option<IdRanks> {
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
    pub(super) fn get(&self, id: u64) -> Option<FrameId> {
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
    pub(super) fn new(
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

    pub(super) fn convert(
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
