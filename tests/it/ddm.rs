//! DDM allocation records (the Allocation Tracker's `.alloc` captures): decoding every framing
//! and producer quirk, errors on damaged input, the profile made of the records, every output,
//! merging, golden outputs, `go tool pprof -raw` totals and a round trip through heapconv's own
//! blob writer.
//!
//! Captures are built in code with [`Builder`] (on `heapconv::decode::ddm_alloc_records`'
//! writer) for the edge cases, and read from `tests/data/ddm/`, which an independent Python
//! encoder wrote (`tests/data/ddm/make_fixtures.py`; see the README there).

use std::fmt::Write as _;

use crate::common::*;
use heapconv::decode::ddm_alloc_records::{
    AllocCapture, AllocRecords, BlobLayout, CHUNK_FAIL, CHUNK_REAL, DdmOptions, EntryOrder, Framing, OrderBasis,
    OrderChoice, StackFrame, alloc_records_profile, decode_alloc_records,
};
use heapconv::encode::folded::{FoldedOptions, encode_folded};
use heapconv::encode::pprof::{PprofOptions, encode_pprof};
use heapconv::model::Profile;
use heapconv::{Error, ErrorKind};
use heapconv_testdata::ddm::{encode_alloc_records, wrap_ddm_chunk, wrap_jdwp_ddm_command, wrap_jdwp_reply};
use heapconv_testdata::rng::Rng;
use prost::Message;

/// Builds records: strings are interned into the tables as they are used.
#[derive(Default)]
struct Builder {
    r: AllocRecords,
}

impl Builder {
    /// An entry; frames innermost first as (class descriptor, method, file, line).
    fn entry(mut self, size: u32, thread: u16, class: &str, frames: &[(&str, &str, &str, i16)]) -> Self {
        let c = AllocRecords::intern(&mut self.r.class_names, class);
        let frames: Vec<StackFrame> = frames
            .iter()
            .map(|&(fc, m, f, line)| StackFrame {
                class: AllocRecords::intern(&mut self.r.class_names, fc),
                method: AllocRecords::intern(&mut self.r.method_names, m),
                file: AllocRecords::intern(&mut self.r.file_names, f),
                line,
            })
            .collect();
        self.r.push_entry(size, thread, c, &frames);
        self
    }

    fn blob(&self) -> Vec<u8> {
        encode_alloc_records(&self.r, &BlobLayout::default(), None)
    }
}

fn decode(bytes: &[u8]) -> Result<AllocCapture, Error> {
    decode_alloc_records(bytes, "test.alloc", &DdmOptions::default())
}

fn decode_with(bytes: &[u8], opts: &DdmOptions) -> AllocCapture {
    decode_alloc_records(bytes, "test.alloc", opts).unwrap()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(data(&format!("ddm/{name}"))).unwrap()
}

fn folded(p: &Profile, value: usize) -> String {
    encode_folded(p, &FoldedOptions { value_index: value, annotations: false })
}

/// A small ART-like capture: newest first, kernel tids.
fn art_like() -> Builder {
    let looper = [("Landroid/os/Looper;", "loop", "Looper.java", 193)];
    Builder::default()
        .entry(24, 4321, "Ljava/lang/String;", &[("Lcom/x/A;", "name", "A.java", 10), looper[0]])
        .entry(1024, 4321, "[I", &[("Lcom/x/A;", "fill", "A.java", -1), looper[0]])
        .entry(32, 4400, "[[Lcom/x/B;", &[("Lcom/x/B;", "make", "", 7), ("Lcom/x/B;", "run", "B.java", -2)])
}

fn stdout_of(args: &[&str]) -> String {
    String::from_utf8(heapconv_ok(args, 0).stdout).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Framings and fixtures

#[test]
fn every_framing_decodes_to_the_same_records() {
    let bare = decode(&fixture("art.alloc")).unwrap();
    assert_eq!(bare.framing, Framing::Blob);
    assert_eq!(bare.blob_offset, 0);
    assert_eq!(bare.blob_len, bare.input_len);
    let chunk = decode(&fixture("art.real")).unwrap();
    assert_eq!(chunk.framing, Framing::DdmChunk);
    assert_eq!(chunk.blob_offset, 8);
    let jdwp = decode(&fixture("art.jdwp")).unwrap();
    // Handshake (14), the host's REAL request (11 + 8), then the reply's 11 + 8 header bytes.
    assert_eq!(jdwp.framing, Framing::Jdwp { handshake: true, packet: 1, id: 0x41 });
    assert_eq!(jdwp.blob_offset, 14 + 19 + 19);
    for c in [&chunk, &jdwp] {
        assert_eq!(c.records, bare.records);
        assert_eq!(c.order, bare.order);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
    }
    // The fixture as the script wrote it: 7 entries, ART order, kernel tids.
    assert_eq!(bare.records.entries.len(), 7);
    assert_eq!(bare.count_field, 7);
    assert_eq!((bare.order, bare.order_basis), (EntryOrder::NewestFirst, OrderBasis::KernelThreadIds));
    assert_eq!(bare.max_depth(), 6);
    let r = &bare.records;
    let first = &r.entries[0];
    assert_eq!(
        (first.size, first.thread, r.class_names[first.class as usize].as_str()),
        (24, 12345, "Ljava/lang/String;")
    );
    let lines: Vec<i16> = r.frames.iter().map(|f| f.line).collect();
    assert!(lines.contains(&-1) && lines.contains(&-2) && lines.contains(&0) && lines.contains(&(40000u16 as i16)));

    // A producer writing longer headers, entries and frames (padding 0xEE) reads the same.
    let long = decode(&fixture("long_layout.alloc")).unwrap();
    let dalvik = decode(&fixture("dalvik.alloc")).unwrap();
    assert_eq!(long.layout, BlobLayout { header_len: 19, entry_header_len: 12, frame_len: 11 });
    assert_eq!(long.records, dalvik.records);
    assert_eq!((dalvik.order, dalvik.order_basis), (EntryOrder::OldestFirst, OrderBasis::SmallThreadIds));

    // The empty capture ART's own test expects (tracking never enabled).
    let empty = decode(&fixture("empty.alloc")).unwrap();
    assert_eq!(fixture("empty.alloc"), [0x0F, 9, 8, 0, 0, 0, 0, 0, 0x0F, 0, 0, 0, 0, 0, 0]);
    assert!(empty.records.entries.is_empty());
    assert_eq!(empty.order_basis, OrderBasis::NoEntries);
    assert_eq!(alloc_records_profile(&[empty], &DdmOptions::default()).sample_count(), 0);

    // The optional thread-name table some ddmlib versions read.
    let named = decode(&fixture("thread_names.alloc")).unwrap();
    assert_eq!(named.thread_name(8), Some("main"));
    assert_eq!(named.thread_name(2), Some("Binder:1234_2"));
    assert!(named.problems.is_empty());
}

#[test]
fn what_ddmlib_tests_assert_holds() {
    // ddmlib's AllocationsParserTest (basic1..3.alloc), rebuilt by make_fixtures.py. ddmlib
    // numbers entry i as count - i: the first entry is the newest.
    let newest = DdmOptions { order: OrderChoice::NewestFirst, ..Default::default() };
    let c = decode_with(&fixture("ddmlib_basic1.alloc"), &newest);
    let e = &c.records.entries[0];
    assert_eq!(
        (c.records.entries.len(), c.records.class_names[e.class as usize].as_str(), e.size, e.thread, e.depth),
        (1, "Lpath/Foo;", 32, 4, 0)
    );

    let frames = |c: &AllocCapture, i: usize| -> Vec<(String, String, String, i16)> {
        let r = &c.records;
        r.entry_frames(&r.entries[i])
            .iter()
            .map(|f| {
                (
                    heapconv::decode::ddm_alloc_records::java_name(&r.class_names[f.class as usize]),
                    r.method_names[f.method as usize].clone(),
                    r.file_names[f.file as usize].clone(),
                    f.line,
                )
            })
            .collect()
    };
    let own = |v: &[(&str, &str, &str, i16)]| -> Vec<(String, String, String, i16)> {
        v.iter().map(|&(a, b, c, d)| (a.to_owned(), b.to_owned(), c.to_owned(), d)).collect()
    };
    let c = decode_with(&fixture("ddmlib_basic2.alloc"), &newest);
    assert_eq!(
        frames(&c, 0),
        own(&[
            ("path.Bar", "bar", "Bar.java", -1),
            ("path.Baz", "foo", "Bar.java", 2000),
            ("path.Foo", "baz", "Foo.java", 10)
        ])
    );
    assert_eq!((c.records.entries[0].size, c.records.entries[0].thread), (64, 0));

    let c = decode_with(&fixture("ddmlib_basic3.alloc"), &newest);
    let p = alloc_records_profile(std::slice::from_ref(&c), &DdmOptions { allocation_label: true, ..newest.clone() });
    // (allocation number, class, size, thread) per entry in file order, as ddmlib numbers them.
    let mut got = Vec::new();
    for (i, e) in c.records.entries.iter().enumerate() {
        got.push((
            (c.records.entries.len() - i) as i64,
            heapconv::decode::ddm_alloc_records::java_name(&c.records.class_names[e.class as usize]),
            e.size,
            e.thread,
        ));
    }
    assert_eq!(
        got,
        [(3, "path.Red".to_owned(), 128, 8), (2, "path.Blue".to_owned(), 16, 8), (1, "path.Green".to_owned(), 42, 2)]
    );
    // The profile's samples run oldest first and carry the same allocation numbers.
    let alloc_key = p.tables.strings.lookup("allocation").unwrap();
    let numbers: Vec<i64> =
        (0..p.sample_count()).map(|i| p.sample_labels(i).iter().find(|l| l.0 == alloc_key).unwrap().1).collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert_eq!(p.sample(0).1, &[1, 42]);
    assert_eq!(
        frames(&c, 2),
        own(&[
            ("path.LightCanaryishGrey", "collectFakeMoney", "LightCanaryishGrey.java", 10001),
            ("path.Red", "passGo", "Red.java", 0),
            ("path.Blue", "watchCatVideos", "SomewhatBlue.java", 16)
        ])
    );
    assert_eq!(frames(&c, 0)[1], ("path.Blue".to_owned(), "findWaldo".to_owned(), "SomewhatBlue.java".to_owned(), -2));
}

#[test]
fn header_lengths_are_honoured_as_written() {
    let b = art_like();
    let standard = decode(&b.blob()).unwrap();
    for layout in [
        BlobLayout { header_len: 16, entry_header_len: 12, frame_len: 10 },
        BlobLayout { header_len: 64, entry_header_len: 64, frame_len: 64 },
        BlobLayout { header_len: 255, entry_header_len: 200, frame_len: 9 },
    ] {
        let c = decode(&encode_alloc_records(&b.r, &layout, None)).unwrap();
        assert_eq!(c.layout, layout);
        assert_eq!(c.records, standard.records, "{layout:?}");
    }
    // Lengths shorter than the fields are refused.
    for (at, v, what) in
        [(0usize, 14u8, "header length 14"), (1, 8, "entry header length 8"), (2, 7, "stack frame length 7")]
    {
        let mut bytes = b.blob();
        bytes[at] = v;
        let e = decode(&bytes).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Malformed);
        assert!(e.to_string().contains(what), "{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Producer quirks

fn many(n: usize, thread: u16, depth: usize) -> AllocRecords {
    let mut r = AllocRecords::default();
    let c = AllocRecords::intern(&mut r.class_names, "Ljava/lang/Object;");
    let m = AllocRecords::intern(&mut r.method_names, "f");
    let f = AllocRecords::intern(&mut r.file_names, "F.java");
    for i in 0..n {
        let frames: Vec<StackFrame> =
            (0..depth).map(|d| StackFrame { class: c, method: m, file: f, line: (d + i % 3) as i16 }).collect();
        r.push_entry(8 + (i % 5) as u32, thread, c, &frames);
    }
    r
}

#[test]
fn dalvik_full_buffer_writes_count_zero() {
    // Dalvik 4.4 with a full buffer of 65,536 records writes an entry count of 0.
    let r = many(65_536, 3, 1);
    let bytes = encode_alloc_records(&r, &BlobLayout::default(), None);
    assert_eq!(&bytes[3..5], &[0, 0]);
    let c = decode(&bytes).unwrap();
    assert_eq!(c.records.entries.len(), 65_536);
    assert!(c.count_wrapped());
    assert_eq!((c.order, c.order_basis), (EntryOrder::OldestFirst, OrderBasis::WrappedCount));
    assert!(c.problems.iter().any(|p| p.contains("wrapped")), "{:?}", c.problems);
    let p = alloc_records_profile(std::slice::from_ref(&c), &DdmOptions::default());
    assert_eq!(p.total(0), 65_536);

    // Any count that differs by a multiple of 65,536 is a wrapped count; another is an error.
    let r = many(65_539, 300, 0);
    let c = decode(&encode_alloc_records(&r, &BlobLayout::default(), None)).unwrap();
    assert_eq!((c.count_field, c.records.entries.len()), (3, 65_539));
    let small = many(5, 3, 1);
    for count in [4u16, 6] {
        let e = decode(&encode_alloc_records(&small, &BlobLayout::default(), Some(count))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Malformed, "{e}");
        assert!(e.to_string().contains(&format!("announces {count} entries")), "{e}");
    }
}

#[test]
fn both_entry_orders_give_the_same_most_recent_allocations() {
    // The same five allocations, oldest to newest: sizes 1..=5.
    let sizes = [1u32, 2, 3, 4, 5];
    let build = |thread: u16, newest_first: bool| {
        let mut b = Builder::default();
        let mut order: Vec<u32> = sizes.to_vec();
        if newest_first {
            order.reverse();
        }
        for s in order {
            b = b.entry(s, thread, "Ljava/lang/Object;", &[("LA;", &format!("m{s}"), "A.java", s as i16)]);
        }
        b.blob()
    };
    let art = decode(&build(4000, true)).unwrap(); // kernel tids: ART 6.0+, newest first
    let dalvik = decode(&build(3, false)).unwrap(); // VM thread ids: Dalvik, oldest first
    assert_eq!(art.order, EntryOrder::NewestFirst);
    assert_eq!(dalvik.order, EntryOrder::OldestFirst);
    let recent = DdmOptions { recent: Some(2), allocation_label: true, ..Default::default() };
    for c in [&art, &dalvik] {
        let chrono: Vec<u32> = c.chronological().map(|(_, e)| e.size).collect();
        assert_eq!(chrono, sizes);
        let p = alloc_records_profile(std::slice::from_ref(c), &recent);
        let kept: Vec<i64> = p.samples().map(|(_, v)| v[1]).collect();
        assert_eq!(kept, [4, 5], "the two most recent, oldest of them first");
        let numbers: Vec<i64> = (0..p.sample_count()).map(|i| p.sample_labels(i)[1].1).collect();
        assert_eq!(numbers, [4, 5]);
    }
    // A stack deeper than 16 exists only on ART 6.0+; small thread ids then do not matter.
    let deep = decode(&encode_alloc_records(&many(3, 2, 17), &BlobLayout::default(), None)).unwrap();
    assert_eq!((deep.order, deep.order_basis), (EntryOrder::NewestFirst, OrderBasis::DeepStacks));
    // The option overrides the guess.
    let forced = decode_with(&build(3, false), &DdmOptions { order: OrderChoice::NewestFirst, ..Default::default() });
    assert_eq!((forced.order, forced.order_basis), (EntryOrder::NewestFirst, OrderBasis::Option));
    let chrono: Vec<u32> = forced.chronological().map(|(_, e)| e.size).collect();
    assert_eq!(chrono, [5, 4, 3, 2, 1]);
}

// ---------------------------------------------------------------------------------------------
// Damaged input

#[test]
fn bad_indices_are_errors_naming_entry_and_offset() {
    // Entry 0 at byte 15 (9 + 2 frames of 8 = 25 bytes), entry 1 at byte 40, its frames at 49, 57.
    let base = art_like();
    let n_class = base.r.class_names.len() as u16;
    let n_method = base.r.method_names.len() as u16;
    let n_file = base.r.file_names.len() as u16;
    type Breakage = Box<dyn Fn(&mut AllocRecords)>;
    let cases: Vec<(Breakage, &str)> = vec![
        (Box::new(move |r| r.entries[1].class = n_class), "entry 1 at byte 40: allocated-class index"),
        (
            Box::new(move |r| {
                let i = r.entries[1].first_frame as usize;
                r.frames[i].class = n_class + 7;
            }),
            "entry 1 at byte 40, frame 0 at byte 49: index",
        ),
        (
            Box::new(move |r| {
                let i = r.entries[1].first_frame as usize + 1;
                r.frames[i].method = n_method;
            }),
            "entry 1 at byte 40, frame 1 at byte 57: index",
        ),
        (
            Box::new(move |r| {
                let i = r.entries[2].first_frame as usize;
                r.frames[i].file = n_file;
            }),
            "entry 2 at byte 65, frame 0 at byte 74: index",
        ),
    ];
    for (break_it, want) in &cases {
        let mut r = base.r.clone();
        break_it(&mut r);
        let bytes = encode_alloc_records(&r, &BlobLayout::default(), None);
        let e = decode(&bytes).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Malformed, "{e}");
        assert!(e.to_string().contains(want), "want {want:?} in {e}");
        assert!(e.to_string().contains("outside the"), "{e}");
        // Inside a JDWP reply after the handshake, offsets count from the start of the input.
        let wrapped = [
            b"JDWP-Handshake".to_vec(),
            wrap_jdwp_ddm_command(1, &wrap_ddm_chunk(CHUNK_REAL, &[])),
            wrap_jdwp_reply(1, 0, &wrap_ddm_chunk(CHUNK_REAL, &bytes)),
        ]
        .concat();
        let e = decode(&wrapped).unwrap_err();
        let shift = |s: &str| -> String {
            let mut out = String::new();
            for (i, part) in s.split("byte ").enumerate() {
                if i == 0 {
                    out.push_str(part);
                    continue;
                }
                let digits: String = part.chars().take_while(|c| c.is_ascii_digit()).collect();
                let n: u64 = digits.parse().unwrap();
                write!(out, "byte {}{}", n + 52, &part[digits.len()..]).unwrap();
            }
            out
        };
        assert!(e.to_string().contains(&shift(want)), "want {:?} in {e}", shift(want));
    }
}

#[test]
fn damaged_framings_and_tables_are_errors() {
    let blob = art_like().blob();
    let st = u32::from_be_bytes(blob[5..9].try_into().unwrap()) as usize;
    let cases: Vec<(Vec<u8>, ErrorKind, &str)> = vec![
        (blob[..st + 2].to_vec(), ErrorKind::Truncated, "class name 0 at byte"),
        (blob[..st - 3].to_vec(), ErrorKind::Truncated, "the string tables should start at byte"),
        (blob[..10].to_vec(), ErrorKind::Truncated, "less than its 15-byte header"),
        (
            {
                let mut b = blob.clone();
                b[5..9].copy_from_slice(&3u32.to_be_bytes());
                b
            },
            ErrorKind::Malformed,
            "points into the 15-byte header",
        ),
        (
            {
                // A string claiming 2^32 - 1 units: refused before anything is allocated.
                let mut b = blob.clone();
                b[st..st + 4].copy_from_slice(&u32::MAX.to_be_bytes());
                b
            },
            ErrorKind::Truncated,
            "claims 4294967295 UTF-16 units",
        ),
        (
            {
                // 65,535 class names announced, a few present.
                let mut b = blob.clone();
                b[9..11].copy_from_slice(&u16::MAX.to_be_bytes());
                b
            },
            ErrorKind::Truncated,
            "at byte",
        ),
        (
            {
                // The entry count says more entries than fit before the string tables.
                let mut b = blob.clone();
                b[3..5].copy_from_slice(&u16::MAX.to_be_bytes());
                b
            },
            ErrorKind::Malformed,
            "announces 65535 entries",
        ),
        (wrap_ddm_chunk(CHUNK_REAL, &blob)[..100].to_vec(), ErrorKind::Truncated, "DDM chunk REAL at byte 0 claims"),
        (wrap_ddm_chunk(*b"HPIF", &blob), ErrorKind::Malformed, "not REAL"),
        (
            wrap_ddm_chunk(CHUNK_FAIL, &[&[0, 0, 0, 2, 0, 0, 0, 2][..], &[0, b'n', 0, b'o']].concat()),
            ErrorKind::NoData,
            "error 2: no",
        ),
        (
            wrap_jdwp_reply(9, 0, &wrap_ddm_chunk(CHUNK_REAL, &blob))[..50].to_vec(),
            ErrorKind::Truncated,
            "JDWP packet 0 at byte 0 claims",
        ),
        (wrap_jdwp_reply(9, 13, &[]), ErrorKind::NoData, "carries error code 13"),
        (
            [b"JDWP-Handshake".to_vec(), wrap_jdwp_ddm_command(1, &wrap_ddm_chunk(CHUNK_REAL, &[]))].concat(),
            ErrorKind::NoData,
            "no JDWP reply carrying a REAL chunk",
        ),
        (b"this is not a capture".to_vec(), ErrorKind::Malformed, "not a DDM allocation-record capture"),
    ];
    for (bytes, kind, want) in cases {
        let e = decode(&bytes).unwrap_err();
        assert_eq!(e.kind(), kind, "{e}");
        assert!(e.to_string().contains(want), "want {want:?} in {e}");
    }
    // Bytes after the last table that are no thread-name table are noted, not fatal.
    let mut b = blob.clone();
    b.extend_from_slice(&[1, 2, 3]);
    let c = decode(&b).unwrap();
    assert!(c.problems.iter().any(|p| p.contains("3 byte(s) after the string tables")), "{:?}", c.problems);
}

#[test]
fn damaged_input_never_panics() {
    let inputs: Vec<Vec<u8>> = ["art.alloc", "art.jdwp", "art.real", "long_layout.alloc", "thread_names.alloc"]
        .iter()
        .map(|n| fixture(n))
        .collect();
    // Every prefix: an error (the string tables end the blob), never a panic. (A cut inside
    // the optional thread-name table only loses that table.)
    for input in &inputs {
        let end = decode(input).map(|c| c.blob_offset + c.blob_len).unwrap() as usize;
        for n in 0..end {
            assert!(decode(&input[..n]).is_err(), "a prefix of {n} bytes decoded");
        }
        for n in end..input.len() {
            assert!(decode(&input[..n]).is_ok_and(|c| c.records.thread_names.is_empty()));
        }
    }
    // Random byte changes.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let opts = DdmOptions::default();
    for round in 0..20_000 {
        let mut b = inputs[round % inputs.len()].clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(b.len() as u64) as usize;
            b[i] = rng.next_u64() as u8;
        }
        if let Ok(c) = decode_alloc_records(&b, "fuzz", &opts) {
            let p = alloc_records_profile(std::slice::from_ref(&c), &opts);
            let _ = encode_pprof(&p, &PprofOptions::default());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The profile

#[test]
fn samples_frames_and_labels() {
    let c = decode(&art_like().blob()).unwrap();
    let text_opts = DdmOptions { lines: false, allocation_label: true, ..Default::default() };
    let p = alloc_records_profile(std::slice::from_ref(&c), &text_opts);
    assert_eq!(
        p.header.sample_types.iter().map(|t| format!("{}/{}", t.name, t.unit)).collect::<Vec<_>>(),
        ["alloc_objects/count", "alloc_space/bytes"]
    );
    assert_eq!(p.header.sample_types[p.header.default_sample_type].name, "alloc_space");
    // Stacks root first, the allocated class as leaf, the deepest (2) marked as truncated.
    assert_eq!(
        folded(&p, 1),
        "[truncated];android.os.Looper.loop(Looper.java:193);com.x.A.fill(A.java);int[] 1024\n\
         [truncated];android.os.Looper.loop(Looper.java:193);com.x.A.name(A.java:10);java.lang.String 24\n\
         [truncated];com.x.B.run(Native Method);com.x.B.make(Unknown Source:7);com.x.B[][] 32\n"
    );
    // Newest first (kernel tids): the last entry is the oldest allocation.
    let thread = p.tables.strings.lookup("thread").unwrap();
    let alloc = p.tables.strings.lookup("allocation").unwrap();
    assert_eq!(p.sample_labels(0), &[(thread, 4400), (alloc, 1)]);
    assert_eq!(p.sample(0).1, &[1, 32]);

    let plain = DdmOptions { lines: false, alloc_class_frame: false, truncation_marks: false, ..Default::default() };
    let p = alloc_records_profile(std::slice::from_ref(&c), &plain);
    assert_eq!(
        folded(&p, 0),
        "android.os.Looper.loop(Looper.java:193);com.x.A.fill(A.java) 1\n\
         android.os.Looper.loop(Looper.java:193);com.x.A.name(A.java:10) 1\n\
         com.x.B.run(Native Method);com.x.B.make(Unknown Source:7) 1\n"
    );
    // --max-depth: only stacks that deep are marked.
    let p = alloc_records_profile(
        std::slice::from_ref(&c),
        &DdmOptions { lines: false, alloc_class_frame: false, max_depth: Some(3), ..Default::default() },
    );
    assert!(!folded(&p, 0).contains("[truncated]"));

    // An allocation without a stack and without the class frame still is a sample.
    let bare = decode(&Builder::default().entry(8, 1, "LX;", &[]).blob()).unwrap();
    let p = alloc_records_profile(std::slice::from_ref(&bare), &plain);
    assert_eq!(folded(&p, 1), "[no stack] 8\n");
    let p = alloc_records_profile(std::slice::from_ref(&bare), &text_opts);
    assert_eq!(folded(&p, 1), "X 8\n", "depth 0 is never marked as truncated");
}

#[test]
fn pprof_gets_function_file_line_and_labels() {
    let c = decode(&art_like().blob()).unwrap();
    let p = alloc_records_profile(std::slice::from_ref(&c), &DdmOptions::default());
    let out = pp::Profile::decode(encode_pprof(&p, &PprofOptions::default()).as_slice()).unwrap();
    let s = |i: i64| out.string_table[i as usize].clone();
    let mut seen = Vec::new();
    for loc in &out.location {
        assert_eq!(loc.mapping_id, 0, "managed frames have no mapping");
        for l in &loc.line {
            let f = out.function.iter().find(|f| f.id == l.function_id).unwrap();
            seen.push((s(f.name), s(f.system_name), s(f.filename), l.line));
        }
    }
    for want in [
        ("com.x.A.name", "Lcom/x/A;.name", "A.java", 10),
        ("com.x.A.fill", "Lcom/x/A;.fill", "A.java", 0),
        ("com.x.B.run", "Lcom/x/B;.run", "B.java", 0),
        ("com.x.B.make", "Lcom/x/B;.make", "", 7),
        ("com.x.B[][]", "[[Lcom/x/B;", "", 0),
        ("[truncated]", "[truncated]", "", 0),
    ] {
        let want = (want.0.to_owned(), want.1.to_owned(), want.2.to_owned(), want.3);
        assert!(seen.contains(&want), "{want:?} not in {seen:?}");
    }
    let labels: Vec<(String, i64)> = out.sample[0].label.iter().map(|l| (s(l.key), l.num)).collect();
    assert_eq!(labels, [("thread".to_owned(), 4400)], "the allocation number only when asked for");
    assert!(!out.string_table.iter().any(|s| s == "allocation"));
    let numbered = DdmOptions { allocation_label: true, ..Default::default() };
    let p = alloc_records_profile(std::slice::from_ref(&c), &numbered);
    let out = pp::Profile::decode(encode_pprof(&p, &PprofOptions::default()).as_slice()).unwrap();
    let s = |i: i64| out.string_table[i as usize].clone();
    let labels: Vec<(String, i64)> = out.sample[0].label.iter().map(|l| (s(l.key), l.num)).collect();
    assert_eq!(labels, [("thread".to_owned(), 4400), ("allocation".to_owned(), 1)]);
    assert_eq!(out.sample.iter().map(|x| x.value[1]).sum::<i64>(), 24 + 1024 + 32);
}

// ---------------------------------------------------------------------------------------------
// Round trip

fn random_records(rng: &mut Rng) -> AllocRecords {
    let mut r = AllocRecords::default();
    let classes = 1 + rng.below(20) as usize;
    for i in 0..classes {
        r.class_names.push(match i % 3 {
            0 => format!("Lcom/r/C{i};"),
            1 => format!("[[Lcom/r/C{i};"),
            _ => format!("[{}", ["I", "J", "B", "Z"][i % 4]),
        });
    }
    r.method_names = (0..1 + rng.below(20)).map(|i| format!("m{i}\u{e9}\u{1F600}")).collect();
    r.file_names = (0..1 + rng.below(5)).map(|i| if i == 0 { String::new() } else { format!("F{i}.java") }).collect();
    for _ in 0..rng.below(50) {
        let depth = rng.below(40) as usize;
        let frames: Vec<StackFrame> = (0..depth)
            .map(|_| StackFrame {
                class: rng.below(classes as u64) as u16,
                method: rng.below(r.method_names.len() as u64) as u16,
                file: rng.below(r.file_names.len() as u64) as u16,
                line: rng.next_u64() as i16,
            })
            .collect();
        let class = rng.below(classes as u64) as u16;
        r.push_entry(rng.next_u64() as u32, rng.next_u64() as u16, class, &frames);
    }
    if rng.below(3) == 0 {
        r.thread_names = vec![(rng.next_u64() as u16, "main".to_owned()), (7, String::new())];
    }
    r
}

#[test]
fn round_trip_through_our_own_writer() {
    // Fixtures written by the Python encoder: our writer gives back the same bytes.
    for name in ["art.alloc", "dalvik.alloc", "long_layout.alloc", "thread_names.alloc", "ddmlib_basic3.alloc"] {
        let bytes = fixture(name);
        let c = decode(&bytes).unwrap();
        let again = encode_alloc_records(&c.records, &c.layout, Some(c.count_field));
        if name == "long_layout.alloc" {
            // The padding (0xEE) is not kept; everything else is.
            assert_eq!(again.len(), bytes.len());
        } else {
            assert_eq!(again, bytes, "{name}");
        }
        assert_eq!(decode(&again).unwrap().records, c.records, "{name}");
    }
    // Random records, every layout: decode(encode(r)) == r.
    let mut rng = Rng(42);
    for i in 0..300 {
        let r = random_records(&mut rng);
        let layout = if i % 2 == 0 {
            BlobLayout::default()
        } else {
            BlobLayout {
                header_len: 15 + (i % 7) as u8,
                entry_header_len: 9 + (i % 5) as u8,
                frame_len: 8 + (i % 3) as u8,
            }
        };
        let bytes = encode_alloc_records(&r, &layout, None);
        let c = decode(&bytes).unwrap();
        assert_eq!(c.records, r, "round {i}");
        assert_eq!(c.blob_len, bytes.len() as u64 - if r.thread_names.is_empty() { 0 } else { thread_table_len(&r) });
        // And wrapped: same records from a chunk and from a JDWP reply.
        let jdwp = wrap_jdwp_reply(5, 0, &wrap_ddm_chunk(CHUNK_REAL, &bytes));
        assert_eq!(decode(&jdwp).unwrap().records, r);
    }
}

fn thread_table_len(r: &AllocRecords) -> u64 {
    4 + r.thread_names.iter().map(|(_, n)| 6 + 2 * n.encode_utf16().count() as u64).sum::<u64>()
}

// ---------------------------------------------------------------------------------------------
// The command line

#[test]
fn every_output_from_the_command_line() {
    let input = data("ddm/art.alloc");
    let i = input.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pb = dir.path().join("art.pb.gz");
    heapconv_ok(&["convert", i, "--to", "pprof", "-o", pb.to_str().unwrap()], 0);
    let p = read_pprof(&pb);
    assert_eq!(p.sample.len(), 7);
    assert_eq!(p.string_table[p.default_sample_type as usize], "alloc_space");

    let folded = stdout_of(&["convert", i, "--to", "folded"]);
    let total: i64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<i64>().unwrap()).sum();
    assert_eq!(total, 24 + 4096 + 48 + 1024 + 24 + 16 + 64);
    let counts = stdout_of(&["convert", i, "--to", "folded", "--view", "total-count"]);
    let n: i64 = counts.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<i64>().unwrap()).sum();
    assert_eq!(n, 7);

    let svg = stdout_of(&["convert", i, "--to", "svg"]);
    assert!(svg.starts_with("<?xml"));
    assert!(svg.contains("art.alloc: Java allocations (DDM allocation records), alloc_space"), "title");
    assert!(svg.contains("[truncated]") && svg.contains("com.example.app.Decoder.decode(Decoder.java:40000)"));

    let json: serde_json::Value = serde_json::from_str(&stdout_of(&["convert", i, "--to", "json"])).unwrap();
    assert_eq!(json["profiles"][0]["totals"]["total_count"], 7);
    assert_eq!(json["ddm"][0]["entries"], 7);
    assert_eq!(json["ddm"][0]["entry_order"], "newest first");

    // Options reach the profile.
    let plain = stdout_of(&["convert", i, "--to", "folded", "--no-alloc-class-frame", "--no-truncation-marks"]);
    assert!(!plain.contains("[truncated]") && !plain.contains("byte[]"));
    assert!(plain.contains("[no stack] 64"));
    let recent = stdout_of(&["convert", i, "--to", "folded", "--recent", "1"]);
    assert_eq!(recent.lines().count(), 1);
    assert!(recent.ends_with("java.lang.String 24\n"), "the newest allocation: {recent}");
    let oldest = stdout_of(&["convert", i, "--to", "folded", "--recent", "1", "--entry-order", "oldest-first"]);
    assert_eq!(oldest, "java.lang.Object 64\n");
    let limit = stdout_of(&["convert", i, "--to", "folded", "--max-depth", "3"]);
    assert_eq!(limit.matches("[truncated]").count(), 4, "{limit}");

    // Every framing and gzip, from a file and from standard input.
    for name in ["art.real", "art.jdwp", "art.alloc.gz"] {
        let f = data(&format!("ddm/{name}"));
        assert_eq!(stdout_of(&["convert", f.to_str().unwrap(), "--to", "folded"]), folded, "{name}");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_heapconv"))
            .args(["convert", "-", "--to", "folded"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&std::fs::read(&f).unwrap()).unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(String::from_utf8(o.stdout).unwrap(), folded, "{name} on stdin");
    }

    // -o DIR names the file after the input.
    let out = dir.path().join("outdir/");
    heapconv_ok(&["convert", i, "--to", "folded", "-o", out.to_str().unwrap()], 0);
    assert!(dir.path().join("outdir/art.folded").exists());

    // inspect, text and JSON.
    let text = stdout_of(&["inspect", i]);
    assert!(text.contains("entries: 7 (header count 7), newest first"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&stdout_of(&["inspect", "--json", i])).unwrap();
    assert_eq!(v["threads"].as_array().unwrap().len(), 3);
    assert_eq!(v["top_classes"][0]["name"], "byte[]");
    assert_eq!(v["depth_histogram"][0], serde_json::json!({"depth": 0, "entries": 1}));
}

#[test]
fn several_captures_merge_into_one_profile() {
    let a = data("ddm/art.alloc");
    let b = data("ddm/dalvik.alloc");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.pb.gz");
    heapconv_ok(
        &["convert", a.to_str().unwrap(), b.to_str().unwrap(), "--to", "pprof", "-o", out.to_str().unwrap()],
        0,
    );
    let p = read_pprof(&out);
    assert_eq!(p.sample.len(), 7 + 5);
    let total: i64 = p.sample.iter().map(|s| s.value[1]).sum();
    assert_eq!(total, 5296 + 232);
    // Each capture keeps its own depth limit (6 and 16): 3 + 2 marked stacks.
    let merged = stdout_of(&["convert", a.to_str().unwrap(), b.to_str().unwrap(), "--to", "folded"]);
    let marked: usize = merged
        .lines()
        .filter(|l| l.starts_with("[truncated]"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<usize>().unwrap())
        .sum();
    assert_eq!(marked, 48 + 1024 + 144, "{merged}");
    check_golden("ddm.merged.folded", &merged);
    if have_go() {
        let raw = pprof_raw(&out);
        let (types, samples) = parse_raw(&strip_label_lines(&raw));
        assert_eq!(types, "alloc_objects/count alloc_space/bytes");
        let sum = |i: usize| samples.iter().map(|s| s.0[i]).sum::<i64>();
        assert_eq!((sum(0), sum(1)), (12, 5296 + 232));
    }
    // Several inputs must all be DDM captures; a named .alloc must be one.
    let trace = data("art_frames.pftrace");
    let o = heapconv(&["convert", a.to_str().unwrap(), trace.to_str().unwrap(), "--to", "folded"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr_of(&o).contains("not a DDM allocation-record capture: a Perfetto trace"), "{}", stderr_of(&o));
    // Selecting dumps makes no sense for a capture.
    let o = heapconv(&["convert", a.to_str().unwrap(), "--pid", "3", "--to", "folded"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `go tool pprof -raw` prints numeric labels on their own lines, which `parse_raw` does not
/// expect.
fn strip_label_lines(raw: &str) -> String {
    raw.lines().filter(|l| !(l.starts_with("                ") && l.contains(":["))).map(|l| format!("{l}\n")).collect()
}

#[test]
fn go_pprof_reads_totals_labels_and_lines() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, count, bytes) in [("art.alloc", 7, 5296), ("dalvik.alloc", 5, 232), ("ddmlib_basic3.alloc", 3, 186)] {
        let out = dir.path().join(format!("{name}.pb.gz"));
        heapconv_ok(&["convert", data(&format!("ddm/{name}")).to_str().unwrap(), "-o", out.to_str().unwrap()], 0);
        let raw = pprof_raw(&out);
        let (types, samples) = parse_raw(&strip_label_lines(&raw));
        assert_eq!(types, "alloc_objects/count alloc_space/bytes", "{name}");
        let sum = |i: usize| samples.iter().map(|s| s.0[i]).sum::<i64>();
        assert_eq!((sum(0), sum(1)), (count, bytes), "{name}");
        // go sums samples with the same stack and labels (no allocation number tells them apart).
        assert_eq!(raw.matches("thread:[").count(), samples.len(), "{name}: a thread label per sample\n{raw}");
        assert_eq!(raw.matches("allocation:[").count(), 0, "{name}: numbers only with --allocation-label");
    }
    let raw = pprof_raw(&dir.path().join("art.alloc.pb.gz"));
    assert!(raw.contains("com.example.app.Decoder.decode Decoder.java:40000"), "{raw}");
    assert!(raw.contains("com.example.app.MainActivity.onCreate MainActivity.java:31"), "{raw}");
}

#[test]
fn inputs_that_are_not_captures_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.alloc");
    std::fs::write(&text, "this is not a capture\n").unwrap();
    let o = heapconv(&["convert", text.to_str().unwrap(), "--to", "folded"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr_of(&o).contains("not a DDM allocation-record capture"), "{}", stderr_of(&o));
    let o = heapconv(&["inspect", text.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));

    // Anything else is still read as a trace (and the trace decoder says what is wrong), but
    // convert names both formats.
    let other = dir.path().join("notes.bin");
    std::fs::write(&other, "this is not a capture\n").unwrap();
    let o = heapconv(&["convert", other.to_str().unwrap(), "--to", "folded"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr_of(&o).contains("neither a Perfetto trace nor a DDM allocation-record capture"),
        "{}",
        stderr_of(&o)
    );

    let hprof = dir.path().join("heap.hprof");
    std::fs::write(&hprof, b"JAVA PROFILE 1.0.3\0\0\0\0\x04").unwrap();
    let o = heapconv(&["inspect", hprof.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr_of(&o).contains("HPROF"), "{}", stderr_of(&o));

    let fail = data("ddm/fail.real");
    let o = heapconv(&["convert", fail.to_str().unwrap(), "--to", "folded"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr_of(&o).contains("FAIL chunk") && stderr_of(&o).contains("disabled"), "{}", stderr_of(&o));

    // A bad index: exit 1, the entry and the byte named.
    let mut b = art_like();
    b.r.entries[2].class = 99;
    let bad = dir.path().join("bad.alloc");
    std::fs::write(&bad, b.blob()).unwrap();
    let o = heapconv(&["convert", bad.to_str().unwrap(), "--to", "folded"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr_of(&o)
            .contains("entry 2 at byte 65: allocated-class index 99 is outside the class-name table (6 names)"),
        "{}",
        stderr_of(&o)
    );
}

#[test]
fn golden_outputs() {
    let input = data("ddm/art.alloc");
    let i = input.to_str().unwrap();
    let rel = |s: String| s.replace(i, "tests/data/ddm/art.alloc");
    check_golden("ddm.art.folded", &stdout_of(&["convert", i, "--to", "folded"]));
    check_golden("ddm.art.inspect.txt", &rel(stdout_of(&["inspect", i])));
    check_golden("ddm.art.json", &rel(stdout_of(&["convert", i, "--to", "json"])));
    let dir = tempfile::tempdir().unwrap();
    let pb = dir.path().join("p.pb.gz");
    heapconv_ok(&["convert", i, "--to", "pprof", "-o", pb.to_str().unwrap()], 0);
    check_golden("ddm.art.pprof.txt", &rel(pprof_text(&read_pprof(&pb))));
    let d = data("ddm/dalvik.alloc");
    let d = d.to_str().unwrap();
    check_golden("ddm.dalvik.folded", &stdout_of(&["convert", d, "--to", "folded"]));
    check_golden("ddm.dalvik.inspect.txt", &stdout_of(&["inspect", d]).replace(d, "tests/data/ddm/dalvik.alloc"));
    // Deterministic: the same bytes twice.
    let again = dir.path().join("q.pb.gz");
    heapconv_ok(&["convert", i, "--to", "pprof", "-o", again.to_str().unwrap()], 0);
    assert_eq!(std::fs::read(&pb).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn a_full_buffer_converts() {
    // 65,535 records of depth 16, as ART sends at most; checked for totals (the time is
    // measured by `cargo bench --bench ddm`).
    let r = many(65_535, 4242, 16);
    let bytes = encode_alloc_records(&r, &BlobLayout::default(), None);
    let t = std::time::Instant::now();
    let c = decode(&bytes).unwrap();
    let p = alloc_records_profile(std::slice::from_ref(&c), &DdmOptions::default());
    let gz = heapconv::encode::pprof::gzip(&encode_pprof(&p, &PprofOptions::default()));
    eprintln!("full buffer: {} bytes in, {} bytes of gzipped pprof, {:?}", bytes.len(), gz.len(), t.elapsed());
    assert_eq!(p.sample_count(), 65_535);
    assert_eq!(p.total(1), r.entries.iter().map(|e| i64::from(e.size)).sum::<i64>());
    let back = decode_pprof(&gz);
    assert_eq!(back.sample.len(), 65_535);
}

#[test]
fn gzip_on_a_second_thread_writes_the_same_bytes() {
    let r = many(20_000, 4242, 16);
    let c = decode(&encode_alloc_records(&r, &BlobLayout::default(), None)).unwrap();
    let p = alloc_records_profile(std::slice::from_ref(&c), &DdmOptions::default());
    let opts = PprofOptions::default();
    let one = heapconv::encode::pprof::gzip(&encode_pprof(&p, &opts));
    assert_eq!(heapconv::encode::pprof_gzip::encode_pprof_gzip(&p, &opts), one);
}
