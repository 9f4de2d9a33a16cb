//! Parity with traceconv and `go tool pprof` on the rarer input shapes of issue 14: several
//! dumps in one ProfilePacket, untimed chains, interleaved heap graphs, heap graphs without
//! roots, an empty first sample type, invalid UTF-8 in a pprof, and HPROF files with several
//! heap dumps. Each test asserts the files written and their totals.

use crate::common::*;

/// Sum of each sample value over all samples.
fn totals(p: &pp::Profile) -> Vec<i64> {
    let mut t = vec![0; p.sample_type.len()];
    for s in &p.sample {
        for (a, v) in t.iter_mut().zip(&s.value) {
            *a += v;
        }
    }
    t
}

fn profile_raw(input: &str) -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    let o = heapconv(&["profile", data(input).to_str().unwrap(), "--raw", "-q", "-o", out.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{input}: {}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn several_dumps_in_one_profile_packet_are_several_files() {
    // Three process_dumps of pid 10 at 20, 40 and 60 ns in ONE ProfilePacket: trace processor
    // gives every sample its own dump's timestamp, so traceconv writes one file per dump, each
    // cumulative to it.
    let out = profile_raw("dumps_in_one_packet.pftrace");
    let files = file_names(out.path());
    assert_eq!(
        files,
        ["heap_dump.1.10.libc.malloc.pb", "heap_dump.2.10.libc.malloc.pb", "heap_dump.3.10.libc.malloc.pb"]
    );
    let got: Vec<Vec<i64>> = files.iter().map(|f| totals(&read_pprof(&out.path().join(f)))).collect();
    // Total count, total size, unreleased count, unreleased size.
    assert_eq!(got, [vec![6, 150, 6, 150], vec![8, 350, 3, 300], vec![14, 680, 9, 630]]);
    let inspect = heapconv(&["inspect", "--json", data("dumps_in_one_packet.pftrace").to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let ts: Vec<i64> = v["dumps"].as_array().unwrap().iter().map(|d| d["timestamp"].as_i64().unwrap()).collect();
    assert_eq!(ts, [1020, 1040, 1060], "MONOTONIC_COARSE 20/40/60 + 1000 through the snapshot");
}

#[test]
fn untimed_chains_are_one_dump_keyed_by_callsite() {
    // Two Android Q chains without timestamps, each re-defining callstack iid 1 as another
    // callsite: one dump (timestamp 0, converted to 500), with both chains' callsites.
    let out = profile_raw("untimed_chains.pftrace");
    assert_eq!(file_names(out.path()), ["heap_dump.1.20.unknown.pb"]);
    let p = read_pprof(&out.path().join("heap_dump.1.20.unknown.pb"));
    assert_eq!(totals(&p), [11, 470, 10, 460]);
    let (_, samples) = normalize(&p);
    let mut rows: Vec<(String, Vec<i64>)> = samples.iter().map(|s| (s.1[1].0.clone(), s.0.clone())).collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            ("a".to_owned(), vec![1, 100, 1, 100]),
            ("b".to_owned(), vec![7, 70, 6, 60]),
            ("c".to_owned(), vec![3, 300, 3, 300]),
        ]
    );
    let inspect = heapconv(&["inspect", "--json", data("untimed_chains.pftrace").to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let dumps = v["dumps"].as_array().unwrap();
    assert_eq!(dumps.len(), 1);
    assert_eq!(dumps[0]["timestamp"].as_i64(), Some(500));
    assert_eq!(dumps[0]["raw_timestamp"].as_u64(), Some(0));
    assert_eq!(dumps[0]["samples"].as_u64(), Some(4));
}

#[test]
fn a_pprof_whose_only_sample_type_is_empty_is_a_pprof() {
    // Go's goroutine profiles can have one sample type ""/"": the file starts 0a 00, which a
    // trace (an empty packet) could too. The fields after it tell.
    let bytes = small_pprof(&[("", "")], "runtime.gopark");
    assert_eq!(&bytes[..2], [0x0a, 0x00]);
    assert_eq!(heapconv::decode::sniff(&bytes), heapconv::decode::InputKind::Pprof);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("goroutine.pb");
    std::fs::write(&f, &bytes).unwrap();
    let o = heapconv_ok(&["convert", f.to_str().unwrap(), "--to", "folded"], 0);
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "main;runtime.gopark 7\n");
    if have_go() {
        let raw = pprof_raw(&f);
        assert!(raw.contains("runtime.gopark"), "{raw}");
    }
}

#[test]
fn invalid_utf8_in_a_pprof_string_is_replaced_and_noted() {
    let mut bytes = small_pprof(&[("inuse_space", "bytes")], "main.BADBYTE");
    let at = bytes.windows(7).position(|w| w == b"BADBYTE").unwrap();
    bytes[at + 3] = 0xff;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.pb");
    std::fs::write(&f, &bytes).unwrap();
    let o = heapconv_ok(&["convert", f.to_str().unwrap(), "--to", "folded"], 0);
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "main;main.BAD\u{fffd}YTE 7\n");
    // The note travels with the profile into pprof outputs.
    let out = dir.path().join("out.pb.gz");
    heapconv_ok(&["convert", f.to_str().unwrap(), "-o", out.to_str().unwrap()], 0);
    let p = read_pprof(&out);
    let comments: Vec<&str> = p.comment.iter().map(|&c| p.string_table[c as usize].as_str()).collect();
    assert!(
        comments.contains(&"heapconv: 1 string(s) were not valid UTF-8; their invalid bytes were replaced with U+FFFD"),
        "{comments:?}"
    );
    // The library says the same.
    let flat = heapconv::decode::pprof::decode_pprof(&bytes, "bad.pb").unwrap();
    assert_eq!(flat.header.meta.comments, [heapconv::decode::pprof::invalid_utf8_note(1)]);
}

#[test]
fn interleaved_heap_graphs_are_read_as_trace_processor_sorts_them() {
    // Sequence 7: pid 3 at time 200 and pid 2 at time 100, packets alternating; sequences 8
    // and 9: pid 4 and pid 5 at time 300, pid 5 ending first. All four are complete.
    let input = data("heapgraph/interleaved.pftrace");
    let out = tempfile::tempdir().unwrap();
    let o = heapconv(&[
        "profile",
        input.to_str().unwrap(),
        "--java-heap",
        "--raw",
        "-q",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let files = file_names(out.path());
    assert_eq!(
        files,
        ["java_heap_dump.1.2.pb", "java_heap_dump.2.3.pb", "java_heap_dump.3.4.pb", "java_heap_dump.4.5.pb"]
    );
    // Total allocation count and size of each tree: pid 2 holds its root and the child.
    let got: Vec<Vec<i64>> = files.iter().map(|f| totals(&read_pprof(&out.path().join(f)))).collect();
    assert_eq!(got, [vec![2, 24], vec![1, 100], vec![1, 40], vec![1, 50]]);
    let inspect = heapconv(&["inspect", "--json", input.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let graphs: Vec<(u64, i64, bool)> = v["heap_graphs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["pid"].as_u64().unwrap(),
                g["timestamp"].as_i64().unwrap(),
                g["incomplete"].as_array().unwrap().is_empty(),
            )
        })
        .collect();
    assert_eq!(graphs, [(2, 100, true), (3, 200, true), (4, 300, true), (5, 300, true)]);
}

#[test]
fn a_heap_graph_without_roots_gets_an_empty_file_and_a_warning() {
    let input = data("heapgraph/no_roots.pftrace");
    let out = tempfile::tempdir().unwrap();
    let o = heapconv(&["profile", input.to_str().unwrap(), "--java-heap", "--raw", "-o", out.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(file_names(out.path()), ["java_heap_dump.1.6.pb"]);
    let p = read_pprof(&out.path().join("java_heap_dump.1.6.pb"));
    let (types, samples) = normalize(&p);
    assert_eq!(
        types,
        [
            ("Total allocation count".to_owned(), "count".to_owned()),
            ("Total allocation size".to_owned(), "bytes".to_owned())
        ]
    );
    assert!(samples.is_empty());
    let inspect = heapconv(&["inspect", "--json", input.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let problems: Vec<&str> =
        v["problems"].as_array().unwrap().iter().map(|p| p["message"].as_str().unwrap()).collect();
    assert!(
        problems.contains(
            &"sequence 3, pid 6: the heap graph has 2 object(s) but no roots: none is reachable, so its profile is empty"
        ),
        "{problems:?}"
    );
}

/// A small HPROF file (id size 4) built record by record: `dumps` lists, per heap dump, the
/// record layout (`"dump"`: one HEAP_DUMP; `"segments"`: two HEAP_DUMP_SEGMENTs and a
/// HEAP_DUMP_END; `"open"`: one segment, no end), its time offset in microseconds and the
/// instance ids it holds (each dump also dumps class 0x100 and roots the first instance).
fn hprof(dumps: &[(&str, u32, &[u32])]) -> Vec<u8> {
    fn rec(out: &mut Vec<u8>, tag: u8, time: u32, body: &[u8]) {
        out.push(tag);
        out.extend_from_slice(&time.to_be_bytes());
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
    }
    let u4 = |v: u32| v.to_be_bytes();
    let mut out = b"JAVA PROFILE 1.0.2\0".to_vec();
    out.extend_from_slice(&u4(4));
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x03, 0xe8]); // 1000 ms
    let mut s = u4(1).to_vec();
    s.extend_from_slice(b"Thing");
    rec(&mut out, 0x01, 0, &s);
    let load: Vec<u8> = [u4(1), u4(0x100), u4(0), u4(1)].concat();
    rec(&mut out, 0x02, 0, &load);
    for &(shape, time, ids) in dumps {
        let mut class_dump = vec![0x20];
        for v in [0x100, 0, 0, 0, 0, 0, 0, 0, 0] {
            class_dump.extend_from_slice(&u4(v)); // id, stack serial, super, loader, signers, domain, 2 reserved, size
        }
        class_dump.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // constant pool, statics, fields
        let mut instances = Vec::new();
        for &id in ids {
            instances.push(0x21);
            for v in [id, 0, 0x100, 0] {
                instances.extend_from_slice(&u4(v));
            }
        }
        let mut root = vec![0xff];
        root.extend_from_slice(&u4(ids[0]));
        match shape {
            "dump" => rec(&mut out, 0x0c, time, &[class_dump, instances, root].concat()),
            "segments" | "open" => {
                rec(&mut out, 0x1c, time, &class_dump);
                if shape == "segments" {
                    rec(&mut out, 0x1c, time, &[instances, root].concat());
                    rec(&mut out, 0x2c, time, &[]);
                } else {
                    rec(&mut out, 0x1c, time, &[instances, root].concat());
                }
            }
            _ => unreachable!("shape"),
        }
    }
    out
}

fn instance_ids(d: &heapconv::model::heap::HeapDump) -> Vec<u64> {
    let mut v: Vec<u64> = d.obj_id.iter().copied().filter(|&id| id >= 0x200).collect();
    v.sort();
    v
}

#[test]
fn an_hprof_with_several_heap_dumps_is_read_dump_by_dump() {
    use heapconv::decode::hprof::*;
    let opts = HprofReadOptions { partial: false };
    // The JVMTI hprof agent's layout: one HEAP_DUMP record per dump (at 2.8 s and 9.6 s).
    let two = hprof(&[("dump", 2_800_000, &[0x200, 0x204]), ("dump", 9_600_000, &[0x200, 0x208, 0x20c])]);
    let (last, st) = read_hprof_with_stats(&two[..], "two.hprof", &opts).unwrap();
    assert_eq!(
        st.dumps.iter().map(|d| (d.index, d.time_us, d.records)).collect::<Vec<_>>(),
        [(0, 2_800_000, 1), (1, 9_600_000, 1)]
    );
    assert_eq!(st.dump, Some(1));
    assert_eq!(instance_ids(&last), [0x200, 0x208, 0x20c], "the last dump, alone");
    assert_eq!((st.duplicate_ids, st.duplicate_class_dumps), (0, 0));
    assert!(last.incomplete.is_empty(), "{:?}", last.incomplete);
    let (first, st) = read_hprof_dump(&two[..], "two.hprof", &opts, HprofDumpSelect::Index(0)).unwrap();
    assert_eq!((instance_ids(&first), st.dump), (vec![0x200, 0x204], Some(0)));
    assert_eq!(first.roots.len(), 1);
    let e = read_hprof_dump(&two[..], "two.hprof", &opts, HprofDumpSelect::Index(2)).unwrap_err();
    assert_eq!(e.kind(), heapconv::ErrorKind::NoData);
    assert!(e.to_string().contains("no heap dump number 3 (the file holds 2)"), "{e}");

    // Segments: each run up to HEAP_DUMP_END is one dump (the agent with segments: two dumps);
    // Android's and HotSpot's segments with one end are one dump.
    let segs = hprof(&[("segments", 10, &[0x200]), ("segments", 20, &[0x200, 0x204])]);
    let (d, st) = read_hprof_with_stats(&segs[..], "segs.hprof", &opts).unwrap();
    assert_eq!(st.dumps.iter().map(|d| (d.time_us, d.records)).collect::<Vec<_>>(), [(10, 2), (20, 2)]);
    assert_eq!(instance_ids(&d), [0x200, 0x204]);
    let one = hprof(&[("segments", 0, &[0x200, 0x204])]);
    let (d, st) = read_hprof_with_stats(&one[..], "one.hprof", &opts).unwrap();
    assert_eq!((st.dumps.len(), st.dump, instance_ids(&d)), (1, Some(0), vec![0x200, 0x204]));
    // Segments with no end up to the end of the file: one dump.
    let open = hprof(&[("open", 0, &[0x200])]);
    let (_, st) = read_hprof_with_stats(&open[..], "open.hprof", &opts).unwrap();
    assert_eq!(st.dumps.len(), 1);

    // Duplicate object ids within one dump are damage.
    let dup = hprof(&[("dump", 0, &[0x200, 0x204, 0x204])]);
    let (d, st) = read_hprof_with_stats(&dup[..], "dup.hprof", &opts).unwrap();
    assert_eq!(st.duplicate_ids, 1);
    assert_eq!(d.incomplete, ["1 object id(s) defined twice within one heap dump (references go to the first)"]);
}

/// The profiles of every heapprofd fixture, handed over as `decode_heapprofd` hands them and
/// as `decode_heapprofd_early` does (a dump that comes again replaces its first hand-over):
/// the same profiles in the same order, the same report. Also: some dump is handed over
/// early (with fewer frames in its tables than when it closes), and the untimed chains' dump
/// comes again.
#[test]
fn early_handover_gives_the_profiles_and_report_of_the_closing_one() {
    use heapconv::decode::Input;
    use heapconv::decode::perfetto::{DecodeOptions, Handover, decode_heapprofd, decode_heapprofd_early};
    use heapconv::encode::pprof::{PprofOptions, encode_pprof};
    let mut fixtures: Vec<_> = std::fs::read_dir(data(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".pftrace"))
        .collect();
    fixtures.push(data("../../examples/sample.pftrace"));
    fixtures.sort();
    let popts = PprofOptions { annotations: true, extras: true };
    let (mut earlier, mut again) = (0, 0);
    for f in &fixtures {
        for include_unchanged in [true, false] {
            let opts = DecodeOptions { include_unchanged, ..Default::default() };
            let mut closing: Vec<(Vec<u8>, usize)> = Vec::new();
            let mut input = Input::open(f, 1 << 30).unwrap();
            let want = decode_heapprofd(&mut input, &opts, &mut |p| {
                closing.push((encode_pprof(&p, &popts), p.tables.frames().len()));
                Ok(())
            });
            // (pid, heap, dump index), the encoded profile, the frames its tables had.
            type Given = ((u64, String, usize), Vec<u8>, usize);
            let mut early: Vec<Given> = Vec::new();
            let mut input = Input::open(f, 1 << 30).unwrap();
            let got = decode_heapprofd_early(&mut input, &opts, &mut |_, _| {}, None, &mut |h| {
                let (p, is_again) = match h {
                    Handover::Dump(p) => (p, false),
                    Handover::Again(p) => (p, true),
                };
                let m = &p.header.meta;
                let key = (m.pid.unwrap_or(0), m.heap.clone(), m.dump_index);
                let item = (key.clone(), encode_pprof(&p, &popts), p.tables.frames().len());
                if is_again {
                    again += 1;
                    let slot = early.iter_mut().find(|e| e.0 == key).expect("a dump given again was given before");
                    *slot = item;
                } else {
                    assert!(early.iter().all(|e| e.0 != key), "{}: a dump given twice as new", f.display());
                    early.push(item);
                }
                Ok(())
            });
            let name = f.display();
            match (want, got) {
                (Ok((r1, t1)), Ok((r2, t2))) => {
                    assert_eq!(serde_json::to_value(&r1).unwrap(), serde_json::to_value(&r2).unwrap(), "{name}");
                    assert_eq!(t1.frames().len(), t2.frames().len(), "{name}");
                }
                (Err(e1), Err(e2)) => assert_eq!(e1.to_string(), e2.to_string(), "{name}"),
                (a, b) => panic!("{name}: {:?} vs {:?}", a.map(|_| ()), b.map(|_| ())),
            }
            assert_eq!(closing.len(), early.len(), "{name}");
            for (c, e) in closing.iter().zip(&early) {
                assert!(c.0 == e.1, "{name}: a profile differs");
                earlier += usize::from(e.2 < c.1);
            }
        }
    }
    assert!(earlier > 0, "no dump was handed over before a later chain added frames");
    assert!(again >= 2, "the untimed chains' dump comes again (with and without unchanged dumps)");
}
