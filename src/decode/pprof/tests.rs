use super::*;

#[test]
fn ascending_location_ids_map_to_frames_by_rank() {
    // Ids 1, 2, 4, 70 and 130 (gaps inside and across 64-id blocks), frames 0 to 4.
    let mut table = vec![None; 131];
    for (f, id) in [1usize, 2, 4, 70, 130].into_iter().enumerate() {
        table[id] = Some(FrameId(f as u32));
    }
    let ranks = IdRanks::of(&table).expect("ascending");
    let got: Vec<Option<FrameId>> =
        [0u64, 1, 2, 3, 4, 5, 63, 64, 70, 129, 130, 131, 1 << 40, u64::MAX].iter().map(|&id| ranks.get(id)).collect();
    let f = |i: u32| Some(FrameId(i));
    assert_eq!(got, [None, f(0), f(1), None, f(2), None, None, None, f(3), None, f(4), None, None, None]);
    // Frames not in id order (or shared by two ids): no ranks, the table answers.
    table.swap(4, 70);
    assert!(IdRanks::of(&table).is_none());
    table.swap(4, 70);
    table[5] = Some(FrameId(2));
    assert!(IdRanks::of(&table).is_none());
}

#[test]
fn kinds_from_names() {
    assert_eq!(value_kind("alloc_objects", "count"), ValueKind::TotalCount);
    assert_eq!(value_kind("alloc_space", "bytes"), ValueKind::TotalSize);
    assert_eq!(value_kind("inuse_objects", "count"), ValueKind::UnreleasedCount);
    assert_eq!(value_kind("inuse_space", "bytes"), ValueKind::UnreleasedSize);
    assert_eq!(value_kind("Unreleased malloc size", "bytes"), ValueKind::UnreleasedSize);
    assert_eq!(value_kind("Total allocation count", "count"), ValueKind::TotalCount);
    assert_eq!(value_kind("Total size", "bytes"), ValueKind::TotalSize);
    assert_eq!(value_kind("cpu", "nanoseconds"), ValueKind::Other);
    assert_eq!(value_kind("alloc_space", "count"), ValueKind::Other);
}

#[test]
fn sniffing_tells_pprof_from_traces() {
    // Go writes period_type first.
    assert!(looks_like_pprof(&[0x5a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x60, 0x01, 0x0a, 0x04, 0x08, 0x03]));
    // heapconv and traceconv write sample_type first.
    assert!(looks_like_pprof(&[0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x0a, 0x04, 0x08, 0x03, 0x10, 0x02, 0x12]));
    // A trace packet (timestamp, sequence id) is not a ValueType.
    assert!(!looks_like_pprof(&[0x0a, 0x08, 0x40, 0x01, 0x50, 0x01, 0x0a, 0x02, 0x08, 0x01]));
    // Nor is a run of packets, empty ones included.
    assert!(!looks_like_pprof(&[0x0a, 0x00, 0x0a, 0x03, 0x40, 0x01, 0x50]));
    // A goroutine profile whose only sample type is empty (""/""): 0a 00, then a sample.
    assert!(looks_like_pprof(&[0x0a, 0x00, 0x12, 0x06, 0x0a, 0x01, 0x01, 0x12, 0x01, 0x01, 0x32, 0x00]));
    assert!(!looks_like_pprof(b"REAL\0\0\0\0"));
    assert!(!looks_like_pprof(b"JDWP-Handshake"));
    assert!(!looks_like_pprof(b"heap;main 12\n"));
    assert!(!looks_like_pprof(&[]));
}

/// A profile of two locations: `main` by name only, and `g` (a.c:7) inlined into `main`
/// at line `caller_line`.
fn two_locations(caller_line: i64) -> Vec<u8> {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    let line = |function_id, line| pp::Line { function_id, line, column: 0 };
    let msg = pp::Profile {
        sample_type: vec![pp::ValueType { r#type: 1, unit: 2 }],
        function: vec![
            pp::Function { id: 1, name: 3, ..Default::default() },
            pp::Function { id: 2, name: 4, filename: 5, ..Default::default() },
        ],
        location: vec![
            pp::Location { id: 1, line: vec![line(1, 0)], ..Default::default() },
            pp::Location { id: 2, address: 0x40, line: vec![line(2, 7), line(1, caller_line)], ..Default::default() },
        ],
        sample: vec![pp::Sample { location_id: vec![2, 1], value: vec![5], label: vec![] }],
        string_table: s(&["", "space", "bytes", "main", "g", "a.c"]),
        ..Default::default()
    };
    msg.encode_to_vec()
}

#[test]
fn locations_read_from_the_wire_as_prost_reads_them() {
    // Line 3 is read from the wire; line -3 (a 10-byte varint) makes prost read the
    // locations; both give the same frames, but for the clamped line.
    for (caller_line, want) in [(3, 3), (-3, 0)] {
        let p = decode_pprof(&two_locations(caller_line), "t.pb").unwrap();
        let (frames, values) = p.sample(0);
        assert_eq!(values, &[5]);
        let t = &p.tables;
        let (inner, outer) = (t.frame(frames[0]), t.frame(frames[1]));
        assert_eq!(inner.rel_pc, 0x40);
        let lines: Vec<(&str, &str, u32)> =
            inner.lines.iter().map(|l| (t.strings.get(l.function), t.strings.get(l.file), l.line)).collect();
        assert_eq!(lines, [("g", "a.c", 7), ("main", "", want)]);
        assert!(outer.lines.is_empty());
        assert_eq!(t.strings.get(outer.name), "main");
    }
}

#[test]
fn a_location_without_an_id_is_named_either_way() {
    let mut bytes = two_locations(-3);
    // The same error from the wire reader's path and prost's: location #0 has id 0.
    let mut msg = pp::Profile::decode(bytes.as_slice()).unwrap();
    msg.location[0].id = 0;
    for negative in [true, false] {
        if !negative {
            msg.location[1].line[1].line = 3;
        }
        bytes = msg.encode_to_vec();
        let e = decode_pprof(&bytes, "t.pb").unwrap_err();
        assert!(e.to_string().contains("t.pb: location #0 has id 0"), "{e}");
    }
}

#[test]
fn build_ids() {
    assert_eq!(&*build_id_bytes("0a1B"), &[0x0a, 0x1b]);
    assert_eq!(&*build_id_bytes("go-buildid/xyz"), b"go-buildid/xyz");
    assert_eq!(&*build_id_bytes(""), b"");
}
