//! Adding a pprof profile read without tables ([`PprofParts`]): its strings, mappings and
//! locations go straight into the merger's own tables, each the first time a sample with a
//! value uses it, with no model tables built and interned first.

use std::borrow::Cow;

use super::Merger;
use super::header::Header;
use super::sample_types::scale_value;
use super::tables::{MFrame, MLabel, UNSET, seq_hash};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{FlatProfile, Line, Mapping, MappingId, StringId};

/// A location of [`PprofParts`]: mapping (index into its `mappings`), address, name and system
/// name (for a frame without lines), and (first, count) of its lines.
pub type PprofFrame = (Option<MappingId>, u64, StringId, StringId, u32, u32);

/// A pprof profile as its file has it (what `decode::pprof::decode_pprof_lean` gives): the
/// samples in `profile`, whose frame ids index `frames` and whose label strings index
/// `strings`; nothing interned (the same text, mapping or location may come twice).
#[derive(Debug, Clone, Copy)]
pub struct PprofParts<'a> {
    /// Header and samples (its tables are not read).
    pub profile: &'a FlatProfile,
    /// The string table.
    pub strings: &'a [Cow<'a, str>],
    /// The mappings; paths index `strings`.
    pub mappings: &'a [Mapping],
    /// The locations: mapping (index into `mappings`), address, name and system name (for a
    /// frame without lines), and (first, count) of its lines in `lines`.
    pub frames: &'a [PprofFrame],
    /// The locations' lines; strings index `strings`.
    pub lines: &'a [Line],
}

/// Per input: each of its strings, mappings and frames in the merger's, once looked up.
struct Seen {
    strings: Vec<u32>,
    mappings: Vec<(u32, u64, u64)>,
    frames: Vec<u32>,
}

impl Seen {
    /// String `id` of the input in the merger's strings (every one was interned by
    /// `add_pprof_strings`).
    fn string(&self, id: StringId) -> StringId {
        if id.is_empty() { id } else { StringId(self.strings[id.0 as usize]) }
    }
}

/// What the first step of adding a pprof input ([`Merger::add_pprof_strings`]) leaves for the
/// second ([`Merger::add_pprof_rest`]): the input's strings in the merger's, its columns and
/// their factors.
#[derive(Debug)]
pub struct PprofStrings {
    side: usize,
    cols: Vec<usize>,
    scale: Vec<i64>,
    strings: Vec<u32>,
}

impl Merger {
    /// Adds a pprof profile read without tables to side `side` (see [`Merger::new`]): the same
    /// as adding the profile `decode_pprof` makes of the same bytes (without its empty stacks)
    /// with [`Merger::add_any`], without annotations.
    pub fn add_pprof(&mut self, parts: &PprofParts<'_>, side: usize) -> Result<()> {
        match self.add_pprof_strings(parts.profile, parts.strings, side)? {
            Some(started) => self.add_pprof_rest(parts, started),
            None => Ok(()),
        }
    }

    /// [`Merger::add_pprof`] in two steps, this the first: checks the side and the header and
    /// interns every string of the input. `None` when the profile has no samples (nothing more
    /// to add). The strings (and the bytes they borrow) are not read after this step, so a
    /// caller can free them before the second, [`Merger::add_pprof_rest`].
    pub fn add_pprof_strings(
        &mut self,
        p: &FlatProfile,
        strings: &[Cow<'_, str>],
        side: usize,
    ) -> Result<Option<PprofStrings>> {
        if side >= self.sides {
            return Err(Error::new(ErrorKind::Usage, format!("side {side} of a merge with {} sides", self.sides)));
        }
        let (h, cols) = Header::of(&p.header, &self.opts)?;
        let scale = self.merge_header(h)?;
        if p.sample_count() == 0 {
            return Ok(None);
        }
        // Every string at once (nearly all are used), in a pass that fetches slots early.
        let mut ids = vec![UNSET; strings.len()];
        self.strings.intern_all(strings, &mut ids);
        Ok(Some(PprofStrings { side, cols, scale, strings: ids }))
    }

    /// The second step of [`Merger::add_pprof`] (after [`Merger::add_pprof_strings`] of the
    /// same profile): mappings, frames and samples. `parts.strings` is not read (it may be
    /// empty): every string was interned by the first step.
    pub fn add_pprof_rest(&mut self, parts: &PprofParts<'_>, started: PprofStrings) -> Result<()> {
        let p = parts.profile;
        let PprofStrings { side, cols, scale, strings } = started;
        let mut seen = Seen {
            strings,
            mappings: vec![(UNSET, 0, 0); parts.mappings.len()],
            frames: vec![UNSET; parts.frames.len()],
        };
        let ncols = cols.len();
        let width = self.width();
        let n = p.sample_count();
        // The samples with a value, and the frames they use: those frames are interned first,
        // in the input's order, the index slots of frames some way ahead fetched early. (The
        // same frames and mappings as interning each at its first use: the merged ones do not
        // depend on the order, see `finish`.)
        let valued: Vec<bool> = (0..n)
            .map(|i| {
                let values = p.sample(i).1;
                !cols.iter().zip(&scale).all(|(&src, &f)| scale_value(values[src], f) == 0)
            })
            .collect();
        let mut used = vec![false; parts.frames.len()];
        for (i, _) in valued.iter().enumerate().filter(|x| *x.1) {
            for &f in p.sample(i).0 {
                used[f.0 as usize] = true;
            }
        }
        self.pprof_frames(parts, &mut seen, &used);
        drop(used);
        self.stacks.reserve(n, p.all_frames().len());
        self.keys.reserve(n);
        self.next_slot.reserve(n);
        self.values.reserve(n * width);
        let offset = side * ncols;
        let mut vals = vec![0i64; ncols];
        let mut seq: Vec<u32> = Vec::new();
        let mut labels: Vec<MLabel> = Vec::new();
        // In batches, as `add_any` does: stacks and hashes first (with their index slots
        // fetched early), then the lookups.
        const BATCH: usize = 64;
        let mut batch: Vec<(usize, usize, usize, u64)> = Vec::with_capacity(BATCH);
        let mut first = 0;
        while first < n {
            let last = (first + BATCH).min(n);
            seq.clear();
            batch.clear();
            for (i, _) in valued.iter().enumerate().take(last).skip(first).filter(|x| *x.1) {
                // (Frames are looked up in sample order: those of the sample after next
                // fetched early.)
                if i + 2 < n {
                    for f in p.sample(i + 2).0 {
                        crate::model::tables::prefetch(&seen.frames[f.0 as usize]);
                    }
                }
                let frames = p.sample(i).0;
                let at = seq.len();
                for &f in frames {
                    let m = seen.frames[f.0 as usize];
                    seq.push(if m != UNSET { m } else { self.pprof_frame(parts, &mut seen, f.0 as usize) });
                }
                let h = seq_hash(&seq[at..]);
                self.stacks.prefetch_slot(h);
                batch.push((i, at, seq.len(), h));
            }
            for &(i, at, end, h) in &batch {
                let stack = self.stacks.intern_hashed(&seq[at..end], h);
                let values = p.sample(i).1;
                for (c, &src) in cols.iter().enumerate() {
                    vals[c] = scale_value(values[src], scale[c]);
                }
                labels.clear();
                for &(k, v) in p.sample_labels(i) {
                    let unit = p.num_label_unit(k).map_or(StringId::EMPTY, |u| seen.string(u));
                    labels.push(MLabel::Num(seen.string(k), v, unit));
                }
                for &(k, v) in p.sample_str_labels(i) {
                    labels.push(MLabel::Str(seen.string(k), seen.string(v)));
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
        Ok(())
    }

    /// Mapping `i` of the input: (merged mapping, start, end), as [`Merger::mapping`] gives.
    fn pprof_mapping(&mut self, parts: &PprofParts<'_>, seen: &mut Seen, i: usize) -> (u32, u64, u64) {
        if seen.mappings[i].0 != UNSET {
            return seen.mappings[i];
        }
        let m = &parts.mappings[i];
        let path = seen.string(m.path);
        seen.mappings[i] = self.intern_mapping_of(&m.build_id[..], path, m.start, m.end, m.exact_offset);
        seen.mappings[i]
    }

    /// Interns the input's locations marked in `used`, in order (see `add_pprof`).
    fn pprof_frames(&mut self, parts: &PprofParts<'_>, seen: &mut Seen, used: &[bool]) {
        let count = used.iter().filter(|&&u| u).count();
        self.frames.reserve(count);
        self.frame_index.reserve(count);
        // In batches: each frame's key and hash first (its slot fetched early), then the lookups.
        const BATCH: usize = 64;
        let mut batch: Vec<(usize, MFrame, usize, usize, u64)> = Vec::with_capacity(BATCH);
        let mut lines: Vec<Line> = Vec::new();
        let mut i = 0;
        while i < used.len() {
            batch.clear();
            lines.clear();
            while i < used.len() && batch.len() < BATCH {
                if used[i] {
                    let at = lines.len();
                    let f = self.pprof_frame_key(parts, seen, i, &mut lines);
                    let h = Self::frame_hash(&f, &lines[at..]);
                    self.frame_index.prefetch(h);
                    batch.push((i, f, at, lines.len(), h));
                }
                i += 1;
            }
            for &(k, f, at, end, h) in &batch {
                seen.frames[k] = self.intern_frame_hashed(f, &lines[at..end], h);
            }
        }
    }

    /// Location `i` of the input as a merged frame, as [`Merger::frame`] makes it.
    fn pprof_frame(&mut self, parts: &PprofParts<'_>, seen: &mut Seen, i: usize) -> u32 {
        let mut lines = std::mem::take(&mut self.line_buf);
        lines.clear();
        let f = self.pprof_frame_key(parts, seen, i, &mut lines);
        let id = self.intern_frame(f, &lines);
        self.line_buf = lines;
        seen.frames[i] = id;
        id
    }

    /// Location `i` of the input as a merged frame's key, its lines appended to `lines`.
    fn pprof_frame_key(&mut self, parts: &PprofParts<'_>, seen: &mut Seen, i: usize, lines: &mut Vec<Line>) -> MFrame {
        let (mapping, rel_pc, name, raw, at, len) = parts.frames[i];
        let (mapping, abs, addr) = match mapping {
            Some(m) => {
                let (id, start, end) = self.pprof_mapping(parts, seen, m.0 as usize);
                if rel_pc >= start && rel_pc < end {
                    (Some(id), true, rel_pc - start)
                } else {
                    (Some(id), false, rel_pc)
                }
            }
            None => (None, false, rel_pc),
        };
        let base = lines.len();
        for l in &parts.lines[at as usize..at as usize + len as usize] {
            lines.push(Line {
                function: seen.string(l.function),
                system_name: seen.string(l.system_name),
                file: seen.string(l.file),
                line: l.line,
                column: l.column,
            });
        }
        let own = &lines[base..];
        let (name, raw) = if own.len() == 1 && own[0].file.is_empty() && own[0].line == 0 && own[0].column == 0 {
            let l = lines.pop().expect("one line");
            (l.function, l.system_name)
        } else if own.is_empty() {
            (seen.string(name), seen.string(raw))
        } else {
            (StringId::EMPTY, StringId::EMPTY)
        };
        MFrame { mapping, abs, addr, name, raw, lines_at: 0, lines_len: 0 }
    }
}
