//! The encoder of frame-list profiles ([`FlatProfile`]): samples and tables numbered in one
//! pass, then encoded in parallel parts.

use super::*;

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
