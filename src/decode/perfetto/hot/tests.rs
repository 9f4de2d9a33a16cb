/// Runs of unpacked ids of every length (one to ten bytes, overlong encodings, ids of 32
/// bits and more) read as `fast_varint` reads them, each cut anywhere (a varint running past
/// the end is an error there too), and a run ends at the first byte that is not a `0x10` key.
#[test]
fn unpacked_ids_read_as_one_varint_at_a_time() {
    use super::*;
    let mut ids: Vec<u64> = vec![0, 1, 127, 128, 300, 16_383, 16_384, 59_000, (1 << 21) - 1, 1 << 21];
    ids.extend([(1 << 28) - 1, 1 << 28, u64::from(u32::MAX) - 1, u64::from(u32::MAX), 1 << 35, u64::MAX]);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ids.push(x >> (x % 64));
    }
    let mut bytes = Vec::new();
    for &id in &ids {
        bytes.push(0x10);
        prost::encoding::encode_varint(id, &mut bytes);
    }
    // Overlong encodings of 5 and 0, then a byte that ends the run.
    bytes.extend([0x10, 0x85, 0x80, 0x00, 0x10, 0x80, 0x80, 0x80, 0x80, 0x00, 0x18, 0x10, 0x01]);
    let slow = |mut b: &[u8]| -> (Result<Vec<u64>, ()>, usize) {
        let mut out = Vec::new();
        while let [0x10, ref rest @ ..] = *b {
            b = rest;
            match fast_varint(&mut b) {
                Ok(v) => out.push(v),
                Err(_) => return (Err(()), b.len()),
            }
        }
        (Ok(out), b.len())
    };
    for cut in (0..bytes.len()).step_by(7).chain([bytes.len()]) {
        let b = &bytes[..cut];
        let (want, left) = slow(b);
        let mut hot = Hot::default();
        let mut got_buf = b;
        let got = unpacked_ids(&mut got_buf, &mut hot).map(|()| hot.frame_ids(0..hot.frame_id_count()).collect());
        assert_eq!(got.map_err(|_| ()), want, "cut {cut}");
        if want.is_ok() {
            assert_eq!(got_buf.len(), left, "cut {cut}");
        }
    }
    let (all, left) = slow(&bytes);
    assert_eq!(all.unwrap()[ids.len()..], [5, 0]);
    assert_eq!(left, 3);
}

use prost::Message;

use super::*;
use crate::proto::perfetto::profile_packet::{HeapSample, ProcessHeapSamples, ProcessStats};

/// What the generated types read of a packet, rebuilt from a [`LitePacket`], with the
/// fields heapconv drops (checked, not kept) cleared on both sides.
fn rebuilt(p: &LitePacket, bytes: &[u8]) -> pb::TracePacket {
    let h = &p.hot;
    let string = |s: &Str| pb::InternedString { iid: s.iid, str: s.str.map(|x| x.of(bytes).to_vec()) };
    let mut out = p.full.clone().unwrap_or_default();
    out.trusted_uid = None;
    out.trusted_pid = None;
    out.timestamp_clock_id = None;
    out.timestamp = p.head.timestamp;
    out.trusted_packet_sequence_id = p.head.trusted_packet_sequence_id;
    out.sequence_flags = p.head.sequence_flags;
    out.incremental_state_cleared = p.head.incremental_state_cleared;
    out.previous_packet_dropped = p.head.previous_packet_dropped;
    out.first_packet_on_sequence = p.head.first_packet_on_sequence;
    out.interned_data = h.interned.then(|| pb::InternedData {
        function_names: h.function_names.iter().map(string).collect(),
        frames: h.frames.iter().map(|f| f.to_pb()).collect(),
        callstacks: h
            .callstacks
            .iter()
            .map(|c| pb::Callstack { iid: c.iid, frame_ids: h.frame_ids(c.frames.clone()).collect() })
            .collect(),
        build_ids: h.build_ids.iter().map(string).collect(),
        mapping_paths: h.mapping_paths.iter().map(string).collect(),
        source_paths: h.source_paths.iter().map(string).collect(),
        mappings: h.mappings.clone(),
    });
    out.profile_packet = h.profile.then(|| pb::ProfilePacket {
        strings: h.strings.clone(),
        frames: h.inline_frames.clone(),
        callstacks: h.inline_callstacks.clone(),
        mappings: h.inline_mappings.clone(),
        process_dumps: h
            .dumps
            .iter()
            .map(|d| ProcessHeapSamples {
                pid: d.pid,
                samples: PackedSamples::unpack(&h.samples[d.samples.clone()])
                    .map(|s| HeapSample {
                        callstack_id: Some(s.callstack),
                        self_allocated: Some(s.alloc_bytes),
                        self_freed: Some(s.freed_bytes),
                        timestamp: None,
                        alloc_count: Some(s.alloc_count),
                        free_count: Some(s.free_count),
                        self_max: s.max_bytes,
                        self_max_count: s.max_count,
                    })
                    .collect(),
                from_startup: d.from_startup,
                rejected_concurrent: d.rejected_concurrent,
                stats: None,
                disconnected: d.disconnected,
                buffer_overran: d.buffer_overran,
                buffer_corrupted: d.buffer_corrupted,
                timestamp: d.timestamp,
                hit_guardrail: d.hit_guardrail,
                heap_name: d.heap_name(bytes).map(str::to_owned),
                sampling_interval_bytes: d.sampling_interval_bytes,
                orig_sampling_interval_bytes: d.orig_sampling_interval_bytes,
                client_error: d.client_error,
                start_timestamp: d.start_timestamp,
            })
            .collect(),
        continued: h.continued,
        index: h.index,
    });
    out
}

/// The generated decoder's packet with the dropped fields cleared.
fn generated(bytes: &[u8]) -> Option<pb::TracePacket> {
    let mut p = pb::TracePacket::decode(bytes).ok()?;
    p.trusted_uid = None;
    p.trusted_pid = None;
    p.timestamp_clock_id = None;
    if let Some(pp) = &mut p.profile_packet {
        for d in &mut pp.process_dumps {
            d.stats = None;
            // Absent counters read as 0, as the decoder has always read them.
            for s in &mut d.samples {
                s.timestamp = None;
                for v in [
                    &mut s.callstack_id,
                    &mut s.self_allocated,
                    &mut s.self_freed,
                    &mut s.alloc_count,
                    &mut s.free_count,
                ] {
                    *v = Some(v.unwrap_or(0));
                }
            }
        }
    }
    Some(p)
}

fn sample_packets() -> Vec<Vec<u8>> {
    let s = |iid: u64, v: &str| pb::InternedString { iid: Some(iid), str: Some(v.as_bytes().to_vec()) };
    let frame = |iid: u64| pb::Frame {
        iid: Some(iid),
        function_name_id: Some(iid % 3),
        mapping_id: Some(1),
        rel_pc: Some(iid * 4096 + 17),
        source_path_iid: Some(2),
        line_number: Some(7),
    };
    let interned = pb::TracePacket {
        trusted_uid: Some(-3),
        trusted_pid: Some(77),
        trusted_packet_sequence_id: Some(9),
        sequence_flags: Some(3),
        timestamp: Some(1 << 40),
        interned_data: Some(pb::InternedData {
            function_names: vec![s(1, "malloc"), s(2, "main"), pb::InternedString { iid: None, str: None }],
            frames: (1..6).map(frame).collect(),
            callstacks: vec![
                pb::Callstack { iid: Some(1), frame_ids: vec![1, 2, 3] },
                pb::Callstack { iid: Some(300), frame_ids: vec![] },
                pb::Callstack { iid: None, frame_ids: vec![5, 4, 3, 2, 1, u64::MAX] },
                // Ids of 32 bits and past them (kept aside from the 32-bit ones).
                pb::Callstack {
                    iid: Some(301),
                    frame_ids: vec![u64::from(u32::MAX) - 1, u64::from(u32::MAX), 4, 1 << 32, 3, u64::from(u32::MAX)],
                },
            ],
            build_ids: vec![s(1, "\u{1}\u{2}")],
            mapping_paths: vec![s(1, "system"), s(2, "lib64")],
            source_paths: vec![s(2, "a.cc")],
            mappings: vec![pb::Mapping {
                iid: Some(1),
                build_id: Some(1),
                start: Some(4096),
                end: Some(8192),
                path_string_ids: vec![1, 2],
                ..Default::default()
            }],
        }),
        ..Default::default()
    };
    let sample = |c: u64| HeapSample {
        callstack_id: Some(c),
        self_allocated: Some(c * 1000),
        self_freed: Some(c * 10),
        timestamp: Some(5),
        alloc_count: Some(c + 1),
        free_count: Some(1),
        self_max: (c == 3).then_some(99),
        self_max_count: (c == 3).then_some(2),
    };
    let profile = pb::TracePacket {
        trusted_packet_sequence_id: Some(9),
        previous_packet_dropped: Some(1),
        first_packet_on_sequence: Some(true),
        incremental_state_cleared: Some(false),
        profile_packet: Some(pb::ProfilePacket {
            strings: vec![s(4, "inline")],
            frames: vec![frame(40)],
            callstacks: vec![pb::Callstack { iid: Some(41), frame_ids: vec![40] }],
            mappings: vec![pb::Mapping { iid: Some(42), ..Default::default() }],
            process_dumps: vec![
                ProcessHeapSamples {
                    pid: Some(1000),
                    samples: (1..5).map(sample).collect(),
                    from_startup: Some(true),
                    stats: Some(ProcessStats { unwinding_errors: Some(3), ..Default::default() }),
                    timestamp: Some(123),
                    heap_name: Some("libc.malloc".into()),
                    sampling_interval_bytes: Some(4096),
                    client_error: Some(-1),
                    start_timestamp: Some(1),
                    ..Default::default()
                },
                ProcessHeapSamples { pid: Some(1001), buffer_overran: Some(true), ..Default::default() },
            ],
            continued: Some(true),
            index: Some(7),
        }),
        ..Default::default()
    };
    // A packet with a field of its own besides the hot ones: read by the generated type.
    let mut mixed = profile.clone();
    mixed.process_tree = Some(pb::ProcessTree::default());
    mixed.interned_data = interned.interned_data.clone();
    let mut out: Vec<Vec<u8>> = [interned, profile, mixed].iter().map(Message::encode_to_vec).collect();
    // Two interned-data fields in one packet merge; the packed form of frame ids; unknown
    // fields (a varint, a group, fixed widths) at every level.
    let mut two = out[0].clone();
    two.extend_from_slice(&out[0]);
    two.extend_from_slice(&[0x62, 0x07, 0x3a, 0x05, 0x12, 0x03, 0x01, 0x02, 0x03]);
    // Field 127 varint, field 300 a group holding a varint, field 301 fixed32.
    two.extend_from_slice(&[0xf8, 0x07, 0x01, 0xe3, 0x12, 0x08, 0x01, 0xe4, 0x12, 0xed, 0x12, 1, 2, 3, 4]);
    out.push(two);
    out
}

fn same(bytes: &[u8]) {
    let want = generated(bytes);
    let got = decode_packet(bytes, Box::default());
    match (want, got) {
        (None, Err(_)) => {}
        (Some(w), Ok(g)) => assert_eq!(rebuilt(&g, bytes), w, "{bytes:?}"),
        (w, g) => panic!("generated ok: {}, ours ok: {}, on {bytes:?}", w.is_some(), g.is_ok()),
    }
}

#[test]
fn reads_what_the_generated_types_read() {
    for p in sample_packets() {
        let g = decode_packet(&p, Box::default()).unwrap();
        assert!(g.hot.interned || g.hot.profile);
        same(&p);
    }
    let p = &sample_packets()[1];
    let g = decode_packet(p, Box::default()).unwrap();
    assert_eq!(g.hot.dumps[0].heap_name(p), Some("libc.malloc"));
    let samples: Vec<RawSample> = PackedSamples::unpack(&g.hot.samples[g.hot.dumps[0].samples.clone()]).collect();
    assert_eq!((samples.len(), g.hot.dumps[0].sample_count), (4, 4));
    assert_eq!((samples[2].max_bytes, samples[2].max_count, samples[3].max_bytes), (Some(99), Some(2), None));
    assert_eq!((samples[3].callstack, samples[3].alloc_bytes, samples[3].free_count), (4, 4000, 1));
    assert_eq!((g.hot.continued, g.hot.index, g.head.previous_packet_dropped), (Some(true), Some(7), Some(1)));
    assert!(g.full.is_none());
    assert!(decode_packet(&sample_packets()[2], Box::default()).unwrap().full.is_some());
}

#[test]
fn accepts_and_refuses_exactly_what_the_generated_types_do() {
    // Every truncation, and seeded byte changes at every position (flips, sets to values
    // that change wire types, lengths, varint continuation, UTF-8).
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut refused = 0;
    for p in sample_packets() {
        for cut in 0..p.len() {
            same(&p[..cut]);
        }
        for i in 0..p.len() {
            for v in [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x0b, 0x0c, 0x80, 0xff, 0xc3, p[i] ^ 0x80] {
                let mut m = p.clone();
                m[i] = v;
                refused += usize::from(generated(&m).is_none());
                same(&m);
            }
        }
        for _ in 0..3000 {
            let mut m = p.clone();
            for _ in 0..1 + next() % 3 {
                let i = (next() % m.len() as u64) as usize;
                m[i] = next() as u8;
            }
            same(&m);
        }
    }
    assert!(refused > 100, "the changes must reach the error paths: {refused}");
    // A non-UTF-8 heap name is refused, as prost refuses a `string`.
    let bad = pb::TracePacket {
        profile_packet: Some(pb::ProfilePacket {
            process_dumps: vec![ProcessHeapSamples { heap_name: Some("ab".into()), ..Default::default() }],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    let at = bad.windows(2).position(|w| w == b"ab").unwrap();
    let mut m = bad.clone();
    m[at] = 0xff;
    assert!(generated(&m).is_none());
    assert!(decode_packet(&m, Box::default()).is_err());
    same(&bad);
}

#[test]
fn unknown_groups_are_skipped_within_prosts_recursion_budget() {
    // Field 15 as a group nested n deep inside a HeapSample (budget 97 there).
    let group = |n: usize| {
        let mut g = vec![0x7b; n];
        g.extend(std::iter::repeat_n(0x7c, n));
        g
    };
    let wrap = |key: &[u8], body: &[u8]| {
        let mut v = key.to_vec();
        prost::encoding::encode_varint(body.len() as u64, &mut v);
        v.extend_from_slice(body);
        v
    };
    for n in [1, 50, 96, 97, 98, 120] {
        let pkt = wrap(&[0xaa, 0x02], &wrap(&[0x2a], &wrap(&[0x12], &group(n))));
        assert_eq!(generated(&pkt).is_some(), n <= 97, "depth {n}");
        assert_eq!(decode_packet(&pkt, Box::default()).is_ok(), n <= 97, "depth {n}");
        same(&pkt);
    }
}
