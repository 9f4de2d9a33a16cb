//! The accumulator: adding profiles and absorbing other accumulators.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::MergeOptions;
use super::header::Header;
use super::sample_types::scale_value;
use super::tables::{FrameIndex, MFrame, MLabel, MMap, MStrings, MapKey, Memo, SeqIndex, UNSET, round_4k, seq_hash};
use crate::error::{Error, ErrorKind, Result};
use crate::model::annotate::{Annotation, AnnotationState, annotate_with};
use crate::model::{FlatProfile, FrameId, Line, MappingId, Profile, StackId, StringId, Tables};

/// An accumulator of profiles (see the module docs).
pub struct Merger {
    pub(super) opts: MergeOptions,
    pub(super) sides: usize,
    pub(super) header: Option<Header>,
    pub(super) strings: MStrings,
    pub(super) maps: Vec<MMap>,
    pub(super) map_index: HashMap<MapKey, u32>,
    pub(super) frames: Vec<MFrame>,
    /// The frames' lines, one after the other (see [`MFrame`]).
    pub(super) lines: Vec<Line>,
    /// A frame's lines while it is looked up (kept for its allocation).
    pub(super) line_buf: Vec<Line>,
    /// The frames found again by their hash (the frames are stored once, in `frames`).
    pub(super) frame_index: FrameIndex,
    /// Stacks: lists of indexes into `frames`, leaf first.
    pub(super) stacks: SeqIndex,
    pub(super) label_sets: Vec<Box<[MLabel]>>,
    pub(super) label_index: HashMap<Box<[MLabel]>, u32>,
    /// Per stack, its first sample slot; per slot, the next slot of the same stack (samples of
    /// one stack differ by their labels).
    pub(super) first_slot: Vec<u32>,
    pub(super) next_slot: Vec<u32>,
    /// Per slot: stack << 32 | label set.
    pub(super) keys: Vec<u64>,
    pub(super) values: Vec<i64>,
    pub(super) memo: Option<Memo>,
}

impl std::fmt::Debug for Merger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Merger")
            .field("sides", &self.sides)
            .field("samples", &self.keys.len())
            .field("stacks", &self.stacks.len())
            .field("frames", &self.frames.len())
            .finish()
    }
}

/// The numeric and string labels of a sample.
pub(super) type SampleLabels<'a> = (&'a [(StringId, i64)], &'a [(StringId, StringId)]);

/// A profile given to [`Merger::add_any`]: with stacks in a tree, or as frame lists.
#[derive(Debug, Clone, Copy)]
pub enum AnyProfile<'a> {
    /// Stacks in the tables' prefix tree (decoded traces and captures).
    Tree(&'a Profile),
    /// Stacks as frame lists (pprof files, merges).
    Flat(&'a FlatProfile),
}

impl AnyProfile<'_> {
    pub(super) fn tables(&self) -> &Arc<Tables> {
        match self {
            AnyProfile::Tree(p) => &p.tables,
            AnyProfile::Flat(p) => &p.tables,
        }
    }

    pub(super) fn sample_count(&self) -> usize {
        match self {
            AnyProfile::Tree(p) => p.sample_count(),
            AnyProfile::Flat(p) => p.sample_count(),
        }
    }

    pub(super) fn values(&self, i: usize) -> &[i64] {
        match self {
            AnyProfile::Tree(p) => p.sample(i).1,
            AnyProfile::Flat(p) => p.sample(i).1,
        }
    }

    pub(super) fn labels(&self, i: usize) -> SampleLabels<'_> {
        match self {
            AnyProfile::Tree(p) => (p.sample_labels(i), p.sample_str_labels(i)),
            AnyProfile::Flat(p) => (p.sample_labels(i), p.sample_str_labels(i)),
        }
    }

    pub(super) fn unit(&self, key: StringId) -> Option<StringId> {
        match self {
            AnyProfile::Tree(p) => p.num_label_unit(key),
            AnyProfile::Flat(p) => p.num_label_unit(key),
        }
    }

    pub(super) fn header(&self, opts: &MergeOptions) -> Result<(Header, Vec<usize>)> {
        let header = match self {
            AnyProfile::Tree(p) => &p.header,
            AnyProfile::Flat(p) => &p.header,
        };
        Header::of(header, opts)
    }
}

impl Merger {
    /// An empty accumulator with `sides` value sets per sample: 1 for a merge, 2 for a diff
    /// (side 0 the base, side 1 the new profile).
    pub fn new(opts: MergeOptions, sides: usize) -> Merger {
        let mut label_sets = Vec::new();
        let mut label_index = HashMap::default();
        let empty: Box<[MLabel]> = Box::new([]);
        label_sets.push(empty.clone());
        label_index.insert(empty, 0);
        Merger {
            opts,
            sides: sides.max(1),
            header: None,
            strings: MStrings::default(),
            maps: Vec::new(),
            map_index: HashMap::default(),
            frames: Vec::new(),
            lines: Vec::new(),
            line_buf: Vec::new(),
            frame_index: FrameIndex::default(),
            stacks: SeqIndex::default(),
            label_sets,
            label_index,
            first_slot: Vec::new(),
            next_slot: Vec::new(),
            keys: Vec::new(),
            values: Vec::new(),
            memo: None,
        }
    }

    /// Number of profiles added so far (through this accumulator and those it absorbed).
    pub fn profiles(&self) -> usize {
        self.header.as_ref().map_or(0, |h| h.profiles)
    }

    /// Number of distinct (stack, labels) samples held.
    pub fn sample_count(&self) -> usize {
        self.keys.len()
    }

    pub(super) fn width(&self) -> usize {
        self.header.as_ref().map_or(0, |h| h.columns.len()) * self.sides
    }

    /// Adds a profile to side 0. `annotate` bakes ART annotations into frame names (for profiles
    /// decoded from traces and DDM captures; not for pprof inputs, whose names carry them
    /// already, nor for profiles that a merge made).
    pub fn add(&mut self, profile: &Profile, annotate: bool) -> Result<()> {
        self.add_any(AnyProfile::Tree(profile), 0, annotate)
    }

    /// Adds a profile whose stacks are frame lists (a decoded pprof file) to side 0.
    pub fn add_flat(&mut self, profile: &FlatProfile, annotate: bool) -> Result<()> {
        self.add_any(AnyProfile::Flat(profile), 0, annotate)
    }

    /// Adds a profile to side `side` (see [`Merger::new`]).
    pub fn add_any(&mut self, profile: AnyProfile<'_>, side: usize, annotate: bool) -> Result<()> {
        if side >= self.sides {
            return Err(Error::new(ErrorKind::Usage, format!("side {side} of a merge with {} sides", self.sides)));
        }
        let (h, cols) = profile.header(&self.opts)?;
        let scale = self.merge_header(h)?;
        if profile.sample_count() == 0 {
            return Ok(());
        }
        let tables = Arc::clone(profile.tables());
        let reuse = self.memo.as_ref().is_some_and(|m| Arc::ptr_eq(&m.tables, &tables) && m.annotate == annotate);
        if !reuse {
            self.strings.reserve(tables.strings.len(), 0);
            self.memo = Some(Memo::new(Arc::clone(&tables), annotate));
        }
        let mut memo = self.memo.take().expect("a memo");
        if let AnyProfile::Tree(_) = profile {
            if memo.nodes.len() < tables.stack_count() {
                memo.nodes.resize(tables.stack_count(), UNSET);
                if annotate {
                    memo.states.resize(tables.stack_count(), AnnotationState::Initial);
                }
            }
        }
        let ncols = cols.len();
        let width = self.width();
        if let AnyProfile::Flat(p) = profile {
            // At most this much more (as much more for the first input).
            let n = p.sample_count();
            self.stacks.reserve(n, p.all_frames().len());
            self.keys.reserve(n);
            self.next_slot.reserve(n);
            self.values.reserve(n * width);
        }
        let offset = side * ncols;
        let mut vals = vec![0i64; ncols];
        let mut path: Vec<StackId> = Vec::new();
        let mut seq: Vec<u32> = Vec::new();
        let mut labels: Vec<MLabel> = Vec::new();
        // Samples go in batches: first their stacks in merged frames and their hashes, with
        // the index slot of each fetched early, then the lookups, so that the cache misses of
        // a batch overlap.
        const BATCH: usize = 64;
        let mut batch: Vec<(usize, usize, usize, u64)> = Vec::with_capacity(BATCH);
        let count = profile.sample_count();
        let mut first = 0;
        while first < count {
            let last = (first + BATCH).min(count);
            seq.clear();
            batch.clear();
            for i in first..last {
                let values = profile.values(i);
                if cols.iter().zip(&scale).all(|(&src, &f)| scale_value(values[src], f) == 0) {
                    continue;
                }
                let at = seq.len();
                match profile {
                    AnyProfile::Tree(p) => self.tree_stack(&mut memo, p.sample(i).0, &mut path, &mut seq),
                    AnyProfile::Flat(p) => self.flat_stack(&mut memo, p.sample(i).0, &mut seq),
                }
                let h = seq_hash(&seq[at..]);
                self.stacks.prefetch_slot(h);
                batch.push((i, at, seq.len(), h));
            }
            for &(i, at, end, h) in &batch {
                let stack = self.stacks.intern_hashed(&seq[at..end], h);
                let values = profile.values(i);
                for (c, &src) in cols.iter().enumerate() {
                    vals[c] = scale_value(values[src], scale[c]);
                }
                labels.clear();
                let (num, strs) = profile.labels(i);
                for &(k, n) in num {
                    let unit = profile.unit(k).map_or(StringId::EMPTY, |u| self.string(&mut memo, &tables, u));
                    labels.push(MLabel::Num(self.string(&mut memo, &tables, k), n, unit));
                }
                for &(k, v) in strs {
                    labels.push(MLabel::Str(self.string(&mut memo, &tables, k), self.string(&mut memo, &tables, v)));
                }
                let ls = self.label_set(&mut labels);
                let slot = self.slot(stack, ls, width);
                let dst = &mut self.values[slot * width + offset..slot * width + offset + ncols];
                for (d, v) in dst.iter_mut().zip(&vals) {
                    *d = d.saturating_add(*v);
                }
            }
            first = last;
        }
        self.memo = Some(memo);
        Ok(())
    }

    /// The merged frames of a tree stack, leaf first; each node's frame (and annotation) is
    /// worked out once.
    pub(super) fn tree_stack(&mut self, memo: &mut Memo, stack: StackId, path: &mut Vec<StackId>, seq: &mut Vec<u32>) {
        let tables = Arc::clone(&memo.tables);
        path.clear();
        let mut cur = Some(stack);
        while let Some(c) = cur {
            path.push(c);
            cur = tables.stack_node(c).parent;
        }
        let mut state = AnnotationState::Initial;
        for &c in path.iter().rev() {
            let n = c.0 as usize;
            if memo.nodes[n] == UNSET {
                let frame = tables.stack_node(c).frame;
                let ann = if memo.annotate {
                    let (next, a) = annotate_with(state, memo.classes[frame.0 as usize]);
                    memo.states[n] = next;
                    a
                } else {
                    Annotation::None
                };
                memo.nodes[n] = self.frame(memo, frame, ann);
            }
            if memo.annotate {
                state = memo.states[n];
            }
        }
        seq.extend(path.iter().map(|c| memo.nodes[c.0 as usize]));
    }

    /// The merged frames of a frame list (leaf first).
    pub(super) fn flat_stack(&mut self, memo: &mut Memo, frames: &[FrameId], seq: &mut Vec<u32>) {
        if memo.annotate {
            let base = seq.len();
            seq.resize(base + frames.len(), 0);
            let mut state = AnnotationState::Initial;
            for (k, &f) in frames.iter().enumerate().rev() {
                let (next, a) = annotate_with(state, memo.classes[f.0 as usize]);
                state = next;
                seq[base + k] = self.frame(memo, f, a);
            }
        } else {
            for &f in frames {
                let m = memo.frames[f.0 as usize];
                seq.push(if m != UNSET { m } else { self.frame(memo, f, Annotation::None) });
            }
        }
    }

    /// Merges a header in; returns the factors for the incoming values.
    pub(super) fn merge_header(&mut self, h: Header) -> Result<Vec<i64>> {
        let by_name = self.opts.sample_types.is_none();
        match &mut self.header {
            None => {
                let n = h.columns.len();
                self.header = Some(h);
                Ok(vec![1; n])
            }
            Some(mine) => {
                let (theirs, rescale) = mine.absorb(h, by_name)?;
                if rescale.iter().any(|&f| f != 1) {
                    let ncols = rescale.len();
                    for (i, v) in self.values.iter_mut().enumerate() {
                        *v = scale_value(*v, rescale[i % ncols]);
                    }
                }
                Ok(theirs)
            }
        }
    }

    pub(super) fn slot(&mut self, stack: u32, ls: u32, width: usize) -> usize {
        let st = stack as usize;
        if self.first_slot.len() <= st {
            self.first_slot.resize(self.stacks.len().max(st + 1), UNSET);
        }
        let mut s = self.first_slot[st];
        while s != UNSET {
            if self.keys[s as usize] as u32 == ls {
                return s as usize;
            }
            s = self.next_slot[s as usize];
        }
        let slot = u32::try_from(self.keys.len()).expect("fewer than 2^32 samples");
        self.keys.push((u64::from(stack) << 32) | u64::from(ls));
        self.next_slot.push(self.first_slot[st]);
        self.first_slot[st] = slot;
        self.values.resize(self.values.len() + width, 0);
        slot as usize
    }

    pub(super) fn label_set(&mut self, labels: &mut [MLabel]) -> u32 {
        if labels.is_empty() {
            return 0;
        }
        labels.sort_unstable();
        if let Some(&id) = self.label_index.get(&*labels) {
            return id;
        }
        let id = u32::try_from(self.label_sets.len()).expect("fewer than 2^32 label sets");
        let b: Box<[MLabel]> = labels.into();
        self.label_sets.push(b.clone());
        self.label_index.insert(b, id);
        id
    }

    pub(super) fn string(&mut self, memo: &mut Memo, tables: &Tables, id: StringId) -> StringId {
        if id.is_empty() {
            return id;
        }
        match memo.strings.get(id.0 as usize) {
            Some(&s) if s != UNSET => StringId(s),
            Some(_) => {
                let s = self.strings.intern(tables.strings.get(id));
                memo.strings[id.0 as usize] = s.0;
                s
            }
            None => self.strings.intern(tables.strings.get(id)),
        }
    }

    pub(super) fn mapping(&mut self, memo: &mut Memo, tables: &Tables, id: MappingId) -> (u32, u64, u64) {
        let i = id.0 as usize;
        if memo.mappings[i].0 != UNSET {
            return memo.mappings[i];
        }
        let m = tables.mapping(id);
        let path = self.string(memo, tables, m.path);
        memo.mappings[i] = self.intern_mapping_of(&m.build_id[..], path, m.start, m.end, m.exact_offset);
        memo.mappings[i]
    }

    /// Interns a mapping of an input given by its fields: (merged mapping, start, end). Mappings
    /// with a build id are told apart by it, the others by file name, then by offset and size
    /// (rounded up to 4 KiB).
    pub(super) fn intern_mapping_of(
        &mut self,
        build_id: &[u8],
        path: StringId,
        start: u64,
        end: u64,
        exact_offset: u64,
    ) -> (u32, u64, u64) {
        let size = end.saturating_sub(start);
        let key = MapKey {
            build_id: build_id.into(),
            path: if build_id.is_empty() { path } else { StringId::EMPTY },
            offset: exact_offset,
            size: round_4k(size),
        };
        (self.intern_map(MMap { key, path, start, size }), start, end)
    }

    pub(super) fn intern_map(&mut self, m: MMap) -> u32 {
        if let Some(&id) = self.map_index.get(&m.key) {
            let cur = &mut self.maps[id as usize];
            cur.start = cur.start.min(m.start);
            cur.size = cur.size.max(m.size);
            if m.path != cur.path && self.strings.get(m.path) < self.strings.get(cur.path) {
                cur.path = m.path;
            }
            return id;
        }
        let id = u32::try_from(self.maps.len()).expect("fewer than 2^32 mappings");
        self.map_index.insert(m.key.clone(), id);
        self.maps.push(m);
        id
    }

    /// The lines of a frame of this merger.
    pub(super) fn frame_lines(&self, f: &MFrame) -> &[Line] {
        &self.lines[f.lines_at as usize..f.lines_at as usize + f.lines_len as usize]
    }

    /// The hash of a frame whose lines are `lines`, as the frame index keys it.
    pub(super) fn frame_hash(f: &MFrame, lines: &[Line]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = rustc_hash::FxHasher::default();
        f.head().hash(&mut hasher);
        lines.hash(&mut hasher);
        // Mixed, so that both the low bits (the slot) and the high bits (the tag) vary.
        let h = hasher.finish().wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 32)
    }

    /// The frame equal to `f` with lines `lines` (hashed `h`), if this merger holds it.
    pub(super) fn find_frame(&self, f: &MFrame, lines: &[Line], h: u64) -> Option<u32> {
        self.probe_frame(f, lines, h).ok()
    }

    /// The frame equal to `f` with lines `lines` (hashed `h`), or the index slot where it goes.
    #[inline]
    fn probe_frame(&self, f: &MFrame, lines: &[Line], h: u64) -> Result<u32, usize> {
        self.frame_index.probe(h, |id| {
            let g = &self.frames[id as usize];
            g.head() == f.head() && self.frame_lines(g) == lines
        })
    }

    /// Interns a frame whose lines are `lines` (its own `lines_at`/`lines_len` are ignored).
    pub(super) fn intern_frame(&mut self, f: MFrame, lines: &[Line]) -> u32 {
        let h = Self::frame_hash(&f, lines);
        self.intern_frame_hashed(f, lines, h)
    }

    /// [`Merger::intern_frame`] of a frame whose hash ([`Merger::frame_hash`]) is `h`.
    pub(super) fn intern_frame_hashed(&mut self, mut f: MFrame, lines: &[Line], h: u64) -> u32 {
        if self.frame_index.full() {
            self.frame_index.grow();
        }
        let slot = match self.probe_frame(&f, lines, h) {
            Ok(id) => return id,
            Err(slot) => slot,
        };
        let id = u32::try_from(self.frames.len()).expect("fewer than 2^32 frames");
        f.lines_at = u32::try_from(self.lines.len()).expect("fewer than 2^32 frame lines");
        f.lines_len = u32::try_from(lines.len()).expect("fewer than 2^32 frame lines");
        self.lines.extend_from_slice(lines);
        self.frames.push(f);
        self.frame_index.insert_at(slot, h, id);
        id
    }

    pub(super) fn frame(&mut self, memo: &mut Memo, fid: FrameId, ann: Annotation) -> u32 {
        if ann == Annotation::None {
            let m = memo.frames[fid.0 as usize];
            if m != UNSET {
                return m;
            }
        } else if let Some(&m) = memo.annotated_frames.get(&(fid.0, ann)) {
            return m;
        }
        let tables = Arc::clone(&memo.tables);
        let f = tables.frame(fid);
        let (mapping, abs, addr) = match f.mapping {
            Some(m) => {
                let (id, start, end) = self.mapping(memo, &tables, m);
                if f.rel_pc >= start && f.rel_pc < end {
                    (Some(id), true, f.rel_pc - start)
                } else {
                    (Some(id), false, f.rel_pc)
                }
            }
            None => (None, false, f.rel_pc),
        };
        let suffix = match ann {
            Annotation::None => String::new(),
            a => format!(" [{}]", a.label()),
        };
        let shown = |this: &mut Merger, memo: &mut Memo, name: StringId| -> StringId {
            if name.is_empty() {
                return name;
            }
            if suffix.is_empty() {
                return this.string(memo, &tables, name);
            }
            this.strings.intern(&format!("{}{suffix}", tables.strings.get(name)))
        };
        let mut lines = std::mem::take(&mut self.line_buf);
        lines.clear();
        for l in &f.lines {
            lines.push(Line {
                function: shown(self, memo, l.function),
                system_name: self.string(memo, &tables, l.system_name),
                file: self.string(memo, &tables, l.file),
                line: l.line,
                column: l.column,
            });
        }
        let (name, raw) = if lines.len() == 1 && lines[0].file.is_empty() && lines[0].line == 0 && lines[0].column == 0
        {
            let l = lines.pop().expect("one line");
            (l.function, l.system_name)
        } else if lines.is_empty() {
            (shown(self, memo, f.name), self.string(memo, &tables, f.raw_name))
        } else {
            (StringId::EMPTY, StringId::EMPTY)
        };
        let id = self.intern_frame(MFrame { mapping, abs, addr, name, raw, lines_at: 0, lines_len: 0 }, &lines);
        self.line_buf = lines;
        if ann == Annotation::None {
            memo.frames[fid.0 as usize] = id;
        } else {
            memo.annotated_frames.insert((fid.0, ann), id);
        }
        id
    }

    /// Merges another accumulator into this one (its samples, tables and header).
    pub fn absorb(&mut self, mut other: Merger) -> Result<()> {
        if other.sides != self.sides {
            return Err(Error::new(ErrorKind::Usage, "merging accumulators with different numbers of sides"));
        }
        let Some(h) = other.header.take() else { return Ok(()) };
        if self.header.is_none() {
            other.header = Some(h);
            other.memo = None;
            *self = other;
            return Ok(());
        }
        let scale = self.merge_header(h)?;
        let width = self.width();
        let ncols = width / self.sides;
        let mut clock = crate::timing::Phases::start("absorb");
        // Strings, then frames: those this one holds already are looked up in parallel, the
        // others added one by one after, in the other's order (so the result is the same as
        // interning each in turn).
        use rayon::prelude::*;
        let mut strings = self.strings.find_all_from(&other.strings);
        self.strings.reserve(strings.iter().filter(|&&s| s == UNSET).count(), 0);
        for (id, slot) in strings.iter_mut().enumerate() {
            if *slot == UNSET {
                *slot = self.strings.intern_from(&other.strings, StringId(id as u32)).0;
            }
        }
        clock.done("strings");
        let s = |id: StringId| -> StringId { StringId(strings[id.0 as usize]) };
        let mut maps = Vec::with_capacity(other.maps.len());
        for m in &other.maps {
            let key = MapKey { path: s(m.key.path), ..m.key.clone() };
            let mm = MMap { key, path: s(m.path), start: m.start, size: m.size };
            maps.push(self.intern_map(mm));
        }
        let translate = |f: &MFrame, lines: &mut Vec<Line>| -> (MFrame, u64) {
            lines.clear();
            lines.extend(other.frame_lines(f).iter().map(|l| Line {
                function: s(l.function),
                system_name: s(l.system_name),
                file: s(l.file),
                line: l.line,
                column: l.column,
            }));
            let mf = MFrame {
                mapping: f.mapping.map(|m| maps[m as usize]),
                abs: f.abs,
                addr: f.addr,
                name: s(f.name),
                raw: s(f.raw),
                lines_at: 0,
                lines_len: 0,
            };
            let h = Self::frame_hash(&mf, lines);
            (mf, h)
        };
        let this = &*self;
        // In chunks, each in batches: the batch's frames translated and hashed first (their
        // index slots fetched early), then looked up.
        let mut frames = vec![UNSET; other.frames.len()];
        frames.par_chunks_mut(1 << 12).enumerate().for_each(|(c, chunk)| {
            const BATCH: usize = 32;
            let mut lines = Vec::new();
            let mut all: Vec<Line> = Vec::new();
            let mut batch: Vec<(MFrame, usize, usize, u64)> = Vec::with_capacity(BATCH);
            for (b, outs) in chunk.chunks_mut(BATCH).enumerate() {
                let first = (c << 12) + b * BATCH;
                batch.clear();
                all.clear();
                for f in &other.frames[first..first + outs.len()] {
                    let (mf, h) = translate(f, &mut lines);
                    this.frame_index.prefetch(h);
                    batch.push((mf, all.len(), all.len() + lines.len(), h));
                    all.extend_from_slice(&lines);
                }
                for (out, (mf, at, end, h)) in outs.iter_mut().zip(&batch) {
                    *out = this.find_frame(mf, &all[*at..*end], *h).unwrap_or(UNSET);
                }
            }
        });
        let new = frames.iter().filter(|&&f| f == UNSET).count();
        self.frames.reserve(new);
        self.frame_index.reserve(new);
        let mut lines: Vec<Line> = Vec::new();
        for (i, slot) in frames.iter_mut().enumerate() {
            if *slot == UNSET {
                let (mf, _) = translate(&other.frames[i], &mut lines);
                // Two frames of the other are never equal, but interned in turn all the same.
                *slot = self.intern_frame(mf, &lines);
            }
        }
        clock.done("frames");
        // The other's stacks in this one's frames (translated in place: `other` is consumed),
        // with their hashes, in parallel; then interned with the slot of the stack some way
        // ahead (and the stack it may equal) fetched early.
        other.stacks.arena.par_chunks_mut(1 << 16).for_each(|chunk| {
            for f in chunk {
                *f = frames[*f as usize];
            }
        });
        let n = other.stacks.len();
        let hashes: Vec<u64> = (0..n as u32).into_par_iter().map(|id| seq_hash(other.stacks.get(id))).collect();
        clock.done("hash stacks");
        let mut stacks: Vec<u32> = Vec::with_capacity(n);
        self.stacks.reserve(n, other.stacks.arena.len());
        for id in 0..n {
            if id + 16 < n {
                self.stacks.prefetch_slot(hashes[id + 16]);
            }
            if id + 8 < n {
                self.stacks.prefetch_match(hashes[id + 8]);
            }
            stacks.push(self.stacks.intern_hashed(other.stacks.get(id as u32), hashes[id]));
        }
        clock.done("intern stacks");
        let mut sets = Vec::with_capacity(other.label_sets.len());
        let mut buf = Vec::new();
        for set in &other.label_sets {
            buf.clear();
            for l in set.iter() {
                buf.push(match *l {
                    MLabel::Num(k, n, u) => MLabel::Num(s(k), n, s(u)),
                    MLabel::Str(k, v) => MLabel::Str(s(k), s(v)),
                });
            }
            sets.push(self.label_set(&mut buf));
        }
        for (i, &key) in other.keys.iter().enumerate() {
            let stack = stacks[(key >> 32) as usize];
            let ls = sets[(key & 0xffff_ffff) as usize];
            let slot = self.slot(stack, ls, width);
            let src = &other.values[i * width..(i + 1) * width];
            for (j, (d, v)) in self.values[slot * width..(slot + 1) * width].iter_mut().zip(src).enumerate() {
                *d = d.saturating_add(scale_value(*v, scale[j % ncols]));
            }
        }
        clock.done("samples");
        Ok(())
    }
}
