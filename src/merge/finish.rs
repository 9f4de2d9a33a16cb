//! Finishing a merge: everything sorted by content into the merged profile(s).

use std::sync::Arc;

use super::Merger;
use super::sample_types::go_name;
use super::tables::{MLabel, UNSET};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{
    FlatProfile, Frame, FrameId, Line, Mapping, MappingId, ProfileMeta, StringId, StringTable, Tables, ValueType,
};

impl Merger {
    /// The output's string table: the merge's strings `order` (ids 1, 2, … after ""), their
    /// texts copied in parallel, a piece of the list per task, then joined.
    fn out_string_table(&self, order: &[u32]) -> StringTable {
        use rayon::prelude::*;
        let pieces: Vec<(String, Vec<usize>)> = order
            .par_chunks(1 << 15)
            .map(|ids| {
                // (The strings are read out of storage order: where the string some way ahead
                // lies, then the text of a nearer one, fetched early.)
                let mut bytes = 0;
                for (k, &id) in ids.iter().enumerate() {
                    if let Some(&ahead) = ids.get(k + 32) {
                        self.strings.prefetch_offsets(StringId(ahead));
                    }
                    bytes += self.strings.len_of(StringId(id));
                }
                let mut text = String::with_capacity(bytes);
                let mut ends = Vec::with_capacity(ids.len());
                for (k, &id) in ids.iter().enumerate() {
                    if let Some(&ahead) = ids.get(k + 32) {
                        self.strings.prefetch_offsets(StringId(ahead));
                    }
                    if let Some(&ahead) = ids.get(k + 16) {
                        self.strings.prefetch_text(StringId(ahead));
                    }
                    text.push_str(self.strings.get(StringId(id)));
                    ends.push(text.len());
                }
                (text, ends)
            })
            .collect();
        let mut text = String::with_capacity(pieces.iter().map(|p| p.0.len()).sum());
        let mut ends = Vec::with_capacity(order.len());
        for (piece, piece_ends) in pieces {
            let base = text.len();
            text.push_str(&piece);
            ends.extend(piece_ends.into_iter().map(|e| e + base));
        }
        StringTable::from_concatenated(text, &ends)
    }

    /// The stacks of the samples in `slots` (in that order, one after the other), with every
    /// frame translated through `out`, and each sample's span (start, length) in them. Filled
    /// in parallel, a chunk of samples per task, the stacks some way ahead fetched early.
    pub(super) fn gather_stacks(&self, slots: &[u32], out: &[u32]) -> (Vec<u32>, Vec<(u32, u32)>) {
        use rayon::prelude::*;
        const CHUNK: usize = 4096;
        let stack_of = |i: u32| self.stacks.spans[(self.keys[i as usize] >> 32) as usize];
        let lens: Vec<u32> = slots.par_iter().map(|&i| stack_of(i).1).collect();
        let mut spans = Vec::with_capacity(slots.len());
        let mut end: usize = 0;
        for &l in &lens {
            spans.push((u32::try_from(end).expect("fewer than 2^32 frames in samples"), l));
            end += l as usize;
        }
        assert!(u32::try_from(end).is_ok(), "fewer than 2^32 frames in samples");
        // (Zeroed by the allocator: pages are touched first by the tasks that fill them.)
        let mut frames = vec![0u32; end];
        let mut pieces = Vec::with_capacity(slots.len().div_ceil(CHUNK));
        let mut rest = frames.as_mut_slice();
        for (c, chunk) in slots.chunks(CHUNK).enumerate() {
            let len: usize = lens[c * CHUNK..c * CHUNK + chunk.len()].iter().map(|&l| l as usize).sum();
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            pieces.push((chunk, head));
            rest = tail;
        }
        let arena = &self.stacks.arena;
        pieces.into_par_iter().for_each(|(chunk, dst)| {
            use crate::model::tables::prefetch;
            let mut at = 0;
            for (n, &i) in chunk.iter().enumerate() {
                if let Some(&ahead) = chunk.get(n + 16) {
                    prefetch(&self.keys[ahead as usize]);
                }
                if let Some(&ahead) = chunk.get(n + 8) {
                    prefetch(&self.stacks.spans[(self.keys[ahead as usize] >> 32) as usize]);
                }
                if let Some(&ahead) = chunk.get(n + 4) {
                    let (start, len) = stack_of(ahead);
                    for line in arena[start as usize..start as usize + len as usize].chunks(16) {
                        prefetch(&line[0]);
                    }
                }
                let (start, len) = stack_of(i);
                let src = &arena[start as usize..start as usize + len as usize];
                for (d, &f) in dst[at..at + src.len()].iter_mut().zip(src) {
                    *d = out[f as usize];
                }
                at += src.len();
            }
        });
        (frames, spans)
    }

    /// The merged profile (side 0), in canonical order.
    pub fn finish(self) -> Result<FlatProfile> {
        Ok(self.finish_sides()?.swap_remove(0))
    }

    /// One profile per side, sharing one set of tables, everything in canonical order (see the
    /// module docs): the same inputs give the same profiles whatever the order of merging.
    pub fn finish_sides(self) -> Result<Vec<FlatProfile>> {
        let Some(header) = self.header.clone() else {
            return Err(Error::new(ErrorKind::NoData, "nothing to merge: no profile was given"));
        };
        let width = self.width();
        let ncols = header.columns.len();
        let sides = self.sides;
        let mut clock = crate::timing::Phases::start("finish");
        let s = |id: StringId| self.strings.get(id);

        // Ranks by content: mappings, frames, then stacks (as lists of frame ranks).
        let mut map_order: Vec<u32> = (0..self.maps.len() as u32).collect();
        map_order.sort_by(|&a, &b| {
            let (x, y) = (&self.maps[a as usize], &self.maps[b as usize]);
            x.key
                .build_id
                .cmp(&y.key.build_id)
                .then_with(|| s(x.key.path).cmp(s(y.key.path)))
                .then(x.key.offset.cmp(&y.key.offset))
                .then(x.key.size.cmp(&y.key.size))
        });
        let mut map_rank = vec![0u32; self.maps.len()];
        for (r, &m) in map_order.iter().enumerate() {
            map_rank[m as usize] = r as u32;
        }
        // Distinct frames never compare equal (their content differs), so an unstable sort
        // gives one order.
        use rayon::prelude::*;
        // Sorted as (mapping rank, abs, address) keys, packed beside the frame's index, so that
        // only frames equal in those are read for the rest of the comparison.
        let mut keyed: Vec<(u64, u64, u32)> = self
            .frames
            .par_iter()
            .enumerate()
            .map(|(i, f)| {
                let m = f.mapping.map_or(0, |m| u64::from(map_rank[m as usize]) + 1);
                ((m << 1) | u64::from(f.abs), f.addr, i as u32)
            })
            .collect();
        keyed.par_sort_unstable_by(|a, b| {
            (a.0, a.1).cmp(&(b.0, b.1)).then_with(|| {
                let (x, y) = (&self.frames[a.2 as usize], &self.frames[b.2 as usize]);
                s(x.name).cmp(s(y.name)).then_with(|| s(x.raw).cmp(s(y.raw))).then_with(|| {
                    let key = |l: &Line| (s(l.function), s(l.system_name), s(l.file), l.line, l.column);
                    self.frame_lines(x).iter().map(key).cmp(self.frame_lines(y).iter().map(key))
                })
            })
        });
        let frame_order: Vec<u32> = keyed.into_iter().map(|k| k.2).collect();
        clock.done("sort frames");
        let mut frame_rank = vec![0u32; self.frames.len()];
        for (r, &f) in frame_order.iter().enumerate() {
            frame_rank[f as usize] = r as u32;
        }
        // Sorting the samples (stacks first), and numbering the output frames.
        let label_key = |l: &MLabel| match *l {
            MLabel::Num(k, v, u) => (s(k), 0u8, "", v, s(u)),
            MLabel::Str(k, v) => (s(k), 1u8, s(v), 0, ""),
        };
        let sort_samples = || -> Vec<u32> {
            // Stacks are ordered by a hash of their content (frame ranks), then by the content
            // itself: any order that depends on content alone will do, and this one sorts
            // integers rather than lists.
            let ranked_stack = |id: u32| self.stacks.get(id).iter().map(|&f| frame_rank[f as usize]);
            let mut by_hash: Vec<(u64, u32)> = (0..self.stacks.len() as u32)
                .into_par_iter()
                .map(|id| {
                    let mut h: u64 = 0x243f_6a88_85a3_08d3;
                    for r in ranked_stack(id) {
                        h = (h.rotate_left(5) ^ u64::from(r)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    }
                    (h, id)
                })
                .collect();
            by_hash.par_sort_unstable();
            // Stacks with equal hashes (rare) in the order of their contents.
            let mut i = 0;
            while i < by_hash.len() {
                let j = i + by_hash[i..].iter().take_while(|x| x.0 == by_hash[i].0).count();
                if j - i > 1 {
                    by_hash[i..j].sort_by(|a, b| ranked_stack(a.1).cmp(ranked_stack(b.1)));
                }
                i = j;
            }
            let mut stack_rank = vec![0u32; self.stacks.len()];
            for (r, &(_, st)) in by_hash.iter().enumerate() {
                stack_rank[st as usize] = r as u32;
            }
            drop(by_hash);
            // Each set's labels by their keys, sorted once.
            let set_keys: Vec<Vec<_>> = self
                .label_sets
                .par_iter()
                .map(|set| {
                    let mut keys: Vec<_> = set.iter().map(label_key).collect();
                    keys.sort();
                    keys
                })
                .collect();
            let mut set_order: Vec<u32> = (0..self.label_sets.len() as u32).collect();
            set_order.sort_by(|&a, &b| set_keys[a as usize].cmp(&set_keys[b as usize]));
            drop(set_keys);
            let mut set_rank = vec![0u32; self.label_sets.len()];
            for (r, &l) in set_order.iter().enumerate() {
                set_rank[l as usize] = r as u32;
            }
            // Samples with a value, by (stack rank, label set rank): one key each.
            let mut keyed: Vec<(u64, u32)> = (0..self.keys.len() as u32)
                .into_par_iter()
                .filter(|&i| self.values[i as usize * width..(i as usize + 1) * width].iter().any(|&v| v != 0))
                .map(|i| {
                    let k = self.keys[i as usize];
                    let rank = (u64::from(stack_rank[(k >> 32) as usize]) << 32)
                        | u64::from(set_rank[(k & 0xffff_ffff) as usize]);
                    (rank, i)
                })
                .collect();
            keyed.par_sort_unstable();
            let order: Vec<u32> = keyed.par_iter().map(|x| x.1).collect();
            drop(keyed);

            order
        };
        // Output frames are numbered in rank order (frames of live samples only), so that every
        // stack is translated in one pass over the stacks in storage order; the sorted samples
        // then only copy their translated stacks.
        let mut live_stack = vec![false; self.stacks.len()];
        for (i, &k) in self.keys.iter().enumerate() {
            if self.values[i * width..(i + 1) * width].iter().any(|&v| v != 0) {
                live_stack[(k >> 32) as usize] = true;
            }
        }
        let nframes = self.frames.len();
        let used = live_stack
            .par_chunks(1 << 16)
            .enumerate()
            .fold(
                || vec![false; nframes],
                |mut used, (c, chunk)| {
                    for (k, &live) in chunk.iter().enumerate() {
                        if live {
                            for &f in self.stacks.get((c * (1 << 16) + k) as u32) {
                                used[f as usize] = true;
                            }
                        }
                    }
                    used
                },
            )
            .reduce(
                || vec![false; nframes],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x |= y;
                    }
                    a
                },
            );
        let mut out_maps = vec![None::<MappingId>; self.maps.len()];
        // Distinct merged frames are distinct output frames (their strings are distinct, their
        // mappings too), unless a frame outside its mapping's range has the address that one
        // inside it gets: only when a mapping has frames of both kinds are the output frames
        // interned by content.
        let mut kinds = vec![0u8; self.maps.len()];
        for f in &self.frames {
            if let Some(m) = f.mapping {
                kinds[m as usize] |= if f.abs { 1 } else { 2 };
            }
        }
        let distinct = !kinds.contains(&3);
        drop(kinds);
        clock.done("used frames");
        let mut build_frames = |out: &mut Tables, out_str: &mut OutStrings| -> Vec<FrameId> {
            // The frames of live samples in rank order; first their mappings and strings are
            // numbered in that order (one pass), then the frames are made in parallel and
            // added in that order.
            let mut clock2 = crate::timing::Phases::start("build frames");
            let live: Vec<u32> = frame_order.iter().copied().filter(|&f| used[f as usize]).collect();
            for (k, &fi) in live.iter().enumerate() {
                // (In rank order, not storage order: the frame some way ahead fetched early,
                // then the lines and string numbers of nearer ones.)
                use crate::model::tables::prefetch;
                if let Some(&ahead) = live.get(k + 8) {
                    prefetch(&self.frames[ahead as usize]);
                }
                if let Some(&ahead) = live.get(k + 4) {
                    let a = &self.frames[ahead as usize];
                    if a.lines_len > 0 {
                        prefetch(&self.lines[a.lines_at as usize]);
                    }
                }
                if let Some(&ahead) = live.get(k + 2) {
                    let a = &self.frames[ahead as usize];
                    match self.frame_lines(a) {
                        [] => out_str.prefetch(a.name),
                        lines => lines.iter().for_each(|l| out_str.prefetch(l.function)),
                    }
                }
                let f = &self.frames[fi as usize];
                if let Some(m) = f.mapping {
                    let mm = &self.maps[m as usize];
                    out_maps[m as usize].get_or_insert_with(|| {
                        let path = out_str.get(mm.path);
                        out.intern_mapping(Mapping {
                            path,
                            build_id: mm.key.build_id.clone(),
                            start: mm.start,
                            end: mm.start.saturating_add(mm.size),
                            start_offset: 0,
                            exact_offset: mm.key.offset,
                            load_bias: 0,
                        })
                    });
                }
                for l in self.frame_lines(f) {
                    out_str.get(l.function);
                    out_str.get(l.system_name);
                    out_str.get(l.file);
                }
                out_str.get(f.raw);
                out_str.get(f.name);
            }
            clock2.done("number strings");
            let (out_str, out_maps) = (&*out_str, &out_maps);
            let frames: Vec<Frame> = live
                .par_iter()
                .enumerate()
                .with_min_len(1 << 12)
                .map(|(k, &fi)| {
                    // (As above: what frames ahead read fetched early.)
                    use crate::model::tables::prefetch;
                    if let Some(&ahead) = live.get(k + 16) {
                        prefetch(&self.frames[ahead as usize]);
                    }
                    if let Some(&ahead) = live.get(k + 8) {
                        let a = &self.frames[ahead as usize];
                        if a.lines_len > 0 {
                            prefetch(&self.lines[a.lines_at as usize]);
                        }
                        out_str.prefetch(a.name);
                    }
                    if let Some(&ahead) = live.get(k + 4) {
                        self.frame_lines(&self.frames[ahead as usize])
                            .iter()
                            .for_each(|l| out_str.prefetch(l.function));
                    }
                    let f = &self.frames[fi as usize];
                    let os = |id: StringId| out_str.known(id);
                    let (mapping, start) = match f.mapping {
                        Some(m) => (out_maps[m as usize], self.maps[m as usize].start),
                        None => (None, 0),
                    };
                    let lines = self
                        .frame_lines(f)
                        .iter()
                        .map(|l| Line {
                            function: os(l.function),
                            system_name: os(l.system_name),
                            file: os(l.file),
                            line: l.line,
                            column: l.column,
                        })
                        .collect();
                    Frame {
                        mapping,
                        rel_pc: if f.abs { start.wrapping_add(f.addr) } else { f.addr },
                        raw_name: os(f.raw),
                        name: os(f.name),
                        lines,
                    }
                })
                .collect();
            clock2.done("make frames");
            let mut out_frames = vec![FrameId(u32::MAX); self.frames.len()];
            if distinct {
                let first = out.push_distinct_frames(frames).0;
                for (k, &fi) in live.iter().enumerate() {
                    out_frames[fi as usize] = FrameId(first + k as u32);
                }
            } else {
                for (&fi, frame) in live.iter().zip(frames) {
                    out_frames[fi as usize] = out.intern_frame_exact(frame);
                }
            }
            clock2.done("push frames");
            out_frames
        };
        // The output tables: labels first, then frames (with their mappings) in rank order. Without
        // labels, the frames do not wait for the samples' order: both are made at once.
        let mut out = Tables::default();
        let mut out_str = OutStrings { ids: vec![UNSET; self.strings.len()], order: Vec::new() };
        let (order, mut out_frames) = if self.label_sets.len() == 1 {
            let (order, frames) = rayon::join(sort_samples, || build_frames(&mut out, &mut out_str));
            (order, Some(frames))
        } else {
            (sort_samples(), None)
        };
        clock.done("sort samples");
        let columns: Vec<ValueType> = header
            .columns
            .iter()
            .map(|c| {
                let name = match (c.agreed, go_name(c.kind)) {
                    (false, Some(g)) => g.to_owned(),
                    _ => c.name.clone(),
                };
                ValueType { name, unit: c.unit.clone(), kind: c.kind }
            })
            .collect();
        let meta = ProfileMeta {
            title: Some(match header.profiles {
                1 => header.first.clone(),
                k => format!("merge of {k} profiles"),
            }),
            changed: true,
            sampling_interval: header
                .period
                .as_ref()
                .filter(|p| p.name == "space" && p.unit == "bytes")
                .and_then(|p| u64::try_from(p.value).ok()),
            period: header.period.clone(),
            time_nanos: header.time_nanos,
            duration_nanos: header.duration_nanos,
            comments: header.comments.iter().cloned().collect(),
            flags: header.flags.clone(),
            ..Default::default()
        };
        let default = header.defaults.iter().next().copied().unwrap_or(ncols.saturating_sub(1));
        let mut os = |_: &mut Tables, id: StringId| out_str.get(id);
        // Labels, in the output's strings.
        let mut units: Vec<(StringId, StringId)> = Vec::new();
        type Labels = (Vec<(StringId, i64)>, Vec<(StringId, StringId)>);
        let mut set_labels: Vec<Option<Labels>> = vec![None; self.label_sets.len()];
        for &i in &order {
            let ls = (self.keys[i as usize] & 0xffff_ffff) as usize;
            if set_labels[ls].is_some() {
                continue;
            }
            let mut sorted: Vec<&MLabel> = self.label_sets[ls].iter().collect();
            sorted.sort_by(|a, b| label_key(a).cmp(&label_key(b)));
            let mut num = Vec::new();
            let mut strs = Vec::new();
            for l in sorted {
                match *l {
                    MLabel::Num(k, v, u) => {
                        let key = os(&mut out, k);
                        if !u.is_empty() && !units.iter().any(|x| x.0 == key) {
                            units.push((key, os(&mut out, u)));
                        }
                        num.push((key, v));
                    }
                    MLabel::Str(k, v) => strs.push((os(&mut out, k), os(&mut out, v))),
                }
            }
            set_labels[ls] = Some((num, strs));
        }

        let out_frames = match out_frames.take() {
            Some(f) => f,
            None => build_frames(&mut out, &mut out_str),
        };
        clock.done("labels");
        out.strings = self.out_string_table(&out_str.order);
        drop(used);
        drop(live_stack);
        clock.done("output frames");
        let out_frames: Vec<u32> = out_frames.into_iter().map(|f| f.0).collect();
        // Per side, its samples in sorted order (all of them for a merge), their stacks copied
        // in that order and translated to the output's frames, in parallel: the one pass that
        // reads the stacks out of storage order. Encoders then read the frames in order.
        let has_labels = self.label_sets.len() > 1;
        let tables = Arc::new(out);
        let mut profiles: Vec<FlatProfile> = Vec::with_capacity(sides);
        for side in 0..sides {
            let row = |i: u32| &self.values[i as usize * width + side * ncols..i as usize * width + (side + 1) * ncols];
            let picked: Vec<u32>;
            let samples: &[u32] = if sides > 1 {
                picked = order.iter().copied().filter(|&i| row(i).iter().any(|&x| x != 0)).collect();
                &picked
            } else {
                &order
            };
            let (frames, spans) = self.gather_stacks(samples, &out_frames);
            let mut values = Vec::with_capacity(samples.len() * ncols);
            for &i in samples {
                values.extend_from_slice(row(i));
            }
            let mut p = FlatProfile::from_spans(
                Arc::clone(&tables),
                meta.clone(),
                columns.clone(),
                frames.into_iter().map(FrameId).collect(),
                spans,
                values,
            );
            p.header.default_sample_type = default.min(ncols.saturating_sub(1));
            if has_labels {
                for (k, &i) in samples.iter().enumerate() {
                    let (num, strs) =
                        set_labels[(self.keys[i as usize] & 0xffff_ffff) as usize].as_ref().expect("filled above");
                    p.push_labels(k, num, strs);
                }
            }
            for &(k, u) in &units {
                p.set_num_label_unit(k, u);
            }
            profiles.push(p);
        }
        clock.done("gather stacks");
        Ok(profiles)
    }
}

/// The output's strings, numbered in first-use order: the merge's strings are distinct, so
/// they are listed, not interned, and indexed once at the end ([`StringTable::from_concatenated`]).
struct OutStrings {
    /// Per string of the merge: its output id (`UNSET`: not used yet).
    ids: Vec<u32>,
    /// The merge's strings that the output uses, in output order after "".
    order: Vec<u32>,
}

impl OutStrings {
    /// `id` (a string of the merge) in the output's strings, numbered the first time.
    fn get(&mut self, id: StringId) -> StringId {
        if id.is_empty() {
            return id;
        }
        let slot = &mut self.ids[id.0 as usize];
        if *slot == UNSET {
            self.order.push(id.0);
            *slot = u32::try_from(self.order.len()).expect("fewer than 2^32 strings");
        }
        StringId(*slot)
    }

    /// Fetches early what [`OutStrings::get`] of `id` reads.
    fn prefetch(&self, id: StringId) {
        if let Some(slot) = self.ids.get(id.0 as usize) {
            crate::model::tables::prefetch(slot);
        }
    }

    /// `id` in the output's strings, numbered already by [`OutStrings::get`].
    fn known(&self, id: StringId) -> StringId {
        if id.is_empty() { id } else { StringId(self.ids[id.0 as usize]) }
    }
}
