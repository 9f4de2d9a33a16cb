//! The per-profile tables of the frame-list encoder: strings, functions, mappings and
//! locations numbered in first-use order.

use super::*;

pub(super) struct Builder {
    pub(super) tables: std::sync::Arc<Tables>,
    /// The profile's strings in output order: each text once, numbered at its first use by
    /// [`Builder::s`] or [`Builder::sid`] (the tables' strings are distinct already, so only
    /// the texts given by `s` are hashed against them).
    pub(super) strings: Vec<OutText>,
    /// The texts given by [`Builder::s`] ("" first), and per text its index in `strings`.
    extra: StringTable,
    extra_out: Vec<u32>,
    /// Per string id of `tables`: its index in `strings` + 1 (0: not yet looked up).
    by_id: Vec<u32>,
    pub(super) functions: Vec<pp::Function>,
    /// Per output string (a function's name): its last function's id (0: none); per function
    /// (id - 1), the id of the one before it with the same name. Functions are told apart by
    /// name, system name and file.
    fn_by_name: Vec<u32>,
    fn_next: Vec<u32>,
    pub(super) mappings: Vec<pp::Mapping>,
    /// Per mapping of the tables: its id in the output (0: not yet numbered).
    mapping_out: Vec<u32>,
    pub(super) mapping_symbolized: Vec<bool>,
}

/// A string of a [`Builder`]'s output: a string of its tables, or a text of its `extra`.
#[derive(Clone, Copy)]
pub(super) enum OutText {
    Model(StringId),
    Extra(StringId),
}

impl Builder {
    pub(super) fn new(tables: std::sync::Arc<Tables>) -> Self {
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
    pub(super) fn s(&mut self, text: &str) -> i64 {
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
    pub(super) fn text(&self, t: OutText) -> &str {
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
    pub(super) fn prefetch_location(&self, frame: &crate::model::Frame) {
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
    pub(super) fn number_location(&mut self, frame_id: FrameId, fns: &mut Vec<u32>) -> u32 {
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
