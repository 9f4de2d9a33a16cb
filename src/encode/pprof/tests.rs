use super::tree::NodeAnn;
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
    let function = |loc: &pp::Location| st[out.function[loc.line[0].function_id as usize - 1].name as usize].as_str();
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
    let noise: Vec<u8> = (0..(1u32 << 18)).flat_map(|i| (i.wrapping_mul(2_654_435_761) >> 5).to_le_bytes()).collect();
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
    let stacks: Vec<StackId> = (0..30_000).map(|i| tables.intern_stack(&[frames[i % 7], frames[i]]).unwrap()).collect();
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
