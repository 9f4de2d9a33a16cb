//! hprof files: the reader, object by object, on synthetic Android dumps with every tag
//! (`heapconv_testdata::hprof::android_sample`, ids of 4 and 8 bytes) and on real OpenJDK dumps
//! made in the test run (tests/data/hprof/HeapFixture.java); `heapconv hprof-conv` against
//! Android's `hprof-conv` (byte identity, with and without `-z`); `inspect`; hostile inputs.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use heapconv::ErrorKind;
use heapconv::decode::hprof::hprof_conv; // not crate::common::hprof_conv, the oracle
use heapconv::decode::hprof::walk::{HprofStream, SubRecord};
use heapconv::decode::hprof::*;
use heapconv::model::heap::*;
use heapconv_testdata::hprof::*;
use heapconv_testdata::rng::Rng;

fn read(bytes: &[u8]) -> (HeapDump, HprofStats) {
    let (d, st) = read_hprof_with_stats(bytes, "test.hprof", &HprofReadOptions { partial: false }).expect("reads");
    d.validate().expect("valid dump");
    (d, st)
}

fn class<'a>(d: &'a HeapDump, name: &str) -> &'a Class {
    d.classes.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no class {name}"))
}

const DANGLING: u64 = u64::MAX;

/// An object's references as (field name, target id; 0 for null, `DANGLING`).
fn refs(d: &HeapDump, o: ObjIdx) -> Vec<(String, u64)> {
    d.refs(o)
        .map(|(f, t)| {
            let id = match t {
                REF_NULL => 0,
                REF_DANGLING => DANGLING,
                t => d.obj_id[t as usize],
            };
            (d.field_name(f).to_owned(), id)
        })
        .collect()
}

fn r(name: &str, id: u64) -> (String, u64) {
    (name.to_owned(), id)
}

/// Checks one object: class name, kind, heap, shallow size, length and references.
#[allow(clippy::too_many_arguments)]
fn check_obj(
    d: &HeapDump,
    id: u64,
    class: &str,
    kind: ObjectKind,
    heap: &str,
    size: u64,
    len: u32,
    want: &[(String, u64)],
) {
    let o = obj(d, id);
    let i = o as usize;
    assert_eq!(d.class_of(o).name, class, "class of {id:#x}");
    assert_eq!(d.obj_kind[i], kind, "kind of {id:#x}");
    assert_eq!(d.heaps[usize::from(d.obj_heap[i])], heap, "heap of {id:#x}");
    assert_eq!(d.obj_self_size[i], size, "size of {id:#x}");
    assert_eq!(d.obj_len[i], len, "length of {id:#x}");
    assert_eq!(refs(d, o), want, "references of {id:#x}");
}

const PRIMS: [BasicType; 8] = [
    BasicType::Boolean,
    BasicType::Char,
    BasicType::Float,
    BasicType::Double,
    BasicType::Byte,
    BasicType::Short,
    BasicType::Int,
    BasicType::Long,
];

fn check_sample(id_size: u8, nodata: bool) {
    let (bytes, ids) = android_sample(id_size, nodata);
    let (d, st) = read(&bytes);
    let id = u64::from(id_size);
    assert_eq!(d.source, "JAVA PROFILE 1.0.3");
    assert_eq!(d.id_size, id_size);
    assert_eq!(d.timestamp, Some(1_700_000_000_123));
    assert_eq!(d.heaps, ["image", "zygote", "app", "default"]);
    assert!(d.incomplete.is_empty(), "{:?}", d.incomplete);
    assert_eq!(st.damage, None);
    assert_eq!(st.instances_before_class, 1, "node1 comes before Node's CLASS_DUMP");
    assert_eq!((st.instances_without_class, st.field_size_mismatches, st.duplicate_ids), (0, 0, 0));
    assert_eq!((st.dangling_roots, d.dangling_refs, st.missing_strings), (1, 1, 0));
    assert_eq!(d.len(), 38 + usize::from(nodata));
    assert_eq!(d.classes.len(), 17);
    assert_eq!(st.records[&0x1C].count, 6);
    assert_eq!(st.records[&0x0C].count, 1);
    assert_eq!(st.records[&0x42].count, 1, "unknown records are skipped and counted");
    assert_eq!(st.sub_records.get(&0xC3).map(|c| c.count), nodata.then_some(1));

    let app = "app";
    let node = "com.example.Node";
    let inst = ObjectKind::Instance;
    check_obj(&d, ids.image_string, "java.lang.String", inst, "image", 16, 0, &[r("value", ids.image_chars)]);
    check_obj(&d, ids.image_chars, "char[]", ObjectKind::PrimitiveArray(BasicType::Char), "image", 4, 2, &[]);
    check_obj(
        &d,
        ids.zygote_array,
        "java.lang.Object[]",
        ObjectKind::ObjectArray,
        "zygote",
        2 * id,
        2,
        &[r("", ids.image_string), r("", ids.nodes[0])],
    );
    check_obj(&d, ids.zygote_bytes, "byte[]", ObjectKind::PrimitiveArray(BasicType::Byte), "zygote", 6, 6, &[]);
    check_obj(&d, ids.nodes[0], node, inst, app, 20, 0, &[r("next", ids.nodes[1]), r("label", ids.image_string)]);
    check_obj(&d, ids.nodes[1], node, inst, app, 20, 0, &[r("next", ids.nodes[2]), r("label", 0)]);
    check_obj(&d, ids.nodes[2], node, inst, app, 20, 0, &[r("next", 0), r("label", 0)]);
    check_obj(
        &d,
        ids.weak,
        "java.lang.ref.WeakReference",
        inst,
        app,
        16,
        0,
        &[r("referent", ids.nodes[2]), r("queue", 0)],
    );
    check_obj(
        &d,
        ids.finalizer,
        "java.lang.ref.FinalizerReference",
        inst,
        app,
        20,
        0,
        &[r("next", 0), r("referent", ids.nodes[1]), r("queue", 0)],
    );
    check_obj(
        &d,
        ids.node_array,
        "com.example.Node[]",
        ObjectKind::ObjectArray,
        app,
        4 * id,
        4,
        &[r("", ids.nodes[0]), r("", 0), r("", ids.nodes[1]), r("", DANGLING)],
    );
    for (i, ty) in PRIMS.iter().enumerate() {
        let n = i as u32 + 1;
        let name = format!("{}[]", ty.java_name());
        let size = u64::from(n) * u64::from(ty.size(id_size));
        check_obj(&d, ids.prims[*ty as usize], &name, ObjectKind::PrimitiveArray(*ty), app, size, n, &[]);
    }
    if nodata {
        check_obj(&d, ids.nodata, "int[]", ObjectKind::PrimitiveArray(BasicType::Int), app, 20, 5, &[]);
    }
    let ints = ObjectKind::PrimitiveArray(BasicType::Int);
    check_obj(&d, ids.default_ints, "int[]", ints, "default", 12, 3, &[]);
    check_obj(&d, ids.zygote_node, node, inst, "zygote", 20, 0, &[r("next", ids.nodes[0]), r("label", 0)]);
    check_obj(&d, ids.late_node, node, inst, app, 20, 0, &[r("next", ids.zygote_node), r("label", 0)]);

    // Classes: kinds, superclasses, fields, statics, class objects.
    let expect_kinds = [
        ("java.lang.Object", ClassKind::Normal, None),
        ("java.lang.Class", ClassKind::Class, Some("java.lang.Object")),
        ("java.lang.String", ClassKind::String, Some("java.lang.Object")),
        ("java.lang.ref.Reference", ClassKind::Normal, Some("java.lang.Object")),
        ("java.lang.ref.WeakReference", ClassKind::WeakReference, Some("java.lang.ref.Reference")),
        ("java.lang.ref.FinalizerReference", ClassKind::FinalizerReference, Some("java.lang.ref.Reference")),
        ("com.example.Node", ClassKind::Normal, Some("java.lang.Object")),
        ("com.example.Node[]", ClassKind::Array, Some("java.lang.Object")),
        ("java.lang.Object[]", ClassKind::Array, Some("java.lang.Object")),
        ("int[]", ClassKind::Array, Some("java.lang.Object")),
    ];
    for (name, kind, sup) in expect_kinds {
        let c = class(&d, name);
        assert_eq!(c.kind, kind, "kind of {name}");
        assert_eq!(c.superclass.map(|s| d.classes[s as usize].name.as_str()), sup, "superclass of {name}");
        let o = c.object.expect("a class object");
        assert_eq!(d.obj_id[o as usize], c.id);
        assert_eq!(d.obj_kind[o as usize], ObjectKind::Class);
        assert_eq!(d.class_of(o).name, "java.lang.Class");
    }
    let n = class(&d, node);
    assert_eq!(n.id, ids.node_class);
    assert_eq!(n.instance_size, 20);
    let fields: Vec<(&str, BasicType)> = n.fields.iter().map(|f| (d.field_name(f.name), f.ty)).collect();
    assert_eq!(fields, [("next", BasicType::Object), ("value", BasicType::Int), ("label", BasicType::Object)]);
    let statics: Vec<(&str, u64)> =
        n.static_refs.iter().map(|&(f, t)| (d.field_name(f), d.obj_id[t as usize])).collect();
    assert_eq!(statics, [("sInstance", ids.nodes[0]), (ids.weird_name, ids.weak)], "modified UTF-8 names decode");
    let no = n.object.unwrap();
    assert_eq!(d.obj_heap[no as usize], 2, "Node was dumped in the app heap");
    assert_eq!(d.obj_self_size[no as usize], 2 * id + 4 + 8, "static bytes + java.lang.Class's instance size (0)");
    assert_eq!(refs(&d, no), [r("sInstance", ids.nodes[0]), r(ids.weird_name, ids.weak)]);
    let reference = class(&d, "java.lang.ref.Reference");
    let rf: Vec<&str> = reference.fields.iter().map(|f| d.field_name(f.name)).collect();
    assert_eq!(rf, ["referent", "queue"]);

    // Roots, in file order, with their kinds; the dangling one is dropped.
    let want_roots = [
        (ids.nodes[0], RootKind::Unknown),
        (ids.nodes[1], RootKind::JniGlobal),
        (ids.nodes[2], RootKind::JniLocal),
        (ids.weak, RootKind::JavaFrame),
        (ids.finalizer, RootKind::NativeStack),
        (ids.node_class, RootKind::StickyClass),
        (ids.node_array, RootKind::ThreadBlock),
        (ids.image_string, RootKind::MonitorUsed),
        (ids.zygote_array, RootKind::ThreadObject),
        (ids.image_string, RootKind::InternedString),
        (ids.finalizer, RootKind::Finalizing),
        (ids.node_class, RootKind::Debugger),
        (ids.weak, RootKind::ReferenceCleanup),
        (ids.zygote_bytes, RootKind::VmInternal),
        (ids.nodes[0], RootKind::JniMonitor),
        (ids.late_node, RootKind::Unreachable),
        (ids.late_node, RootKind::Unknown),
    ];
    let got: Vec<(u64, RootKind)> = d.roots.iter().map(|r| (d.obj_id[r.object as usize], r.kind)).collect();
    assert_eq!(got, want_roots);
}

#[test]
fn android_sample_object_by_object_ids_of_4_and_8_bytes() {
    for id_size in [4, 8] {
        for nodata in [false, true] {
            check_sample(id_size, nodata);
        }
    }
}

#[test]
fn walker_gives_every_field_of_every_sub_record() {
    for id_size in [4u8, 8] {
        let (bytes, ids) = android_sample(id_size, true);
        let mut s = HprofStream::new(&bytes[..], "t").unwrap();
        assert_eq!(s.header().version(), "1.0.3");
        assert!(s.header().is_android());
        let mut roots = Vec::new();
        let mut infos = Vec::new();
        let mut seen_tags = std::collections::BTreeSet::new();
        while let Some(h) = s.next_record().unwrap() {
            if h.tag == 0x42 {
                assert_eq!((h.time, s.body().unwrap()), (5, &b"unknown record body"[..]));
                continue;
            }
            while let Some(sr) = s.next_sub().unwrap() {
                seen_tags.insert(sr.tag);
                assert_eq!(sr.raw.len() as u64, sr.len);
                match sr.record {
                    SubRecord::Root(r) => roots.push((r.tag, r.thread_serial, r.frame, r.jni_ref)),
                    SubRecord::HeapDumpInfo { heap_id, .. } => infos.push(heap_id),
                    SubRecord::Class(c) if c.id == ids.node_class => {
                        let consts: Vec<_> = c.constants().collect();
                        assert_eq!(consts, [(1, BasicType::Int, 7), (2, BasicType::Object, ids.image_string)]);
                        let st: Vec<_> = c.statics().map(|f| (f.ty, f.value)).collect();
                        assert_eq!(
                            st,
                            [
                                (BasicType::Object, ids.nodes[0]),
                                (BasicType::Int, 3),
                                (BasicType::Long, 1 << 40),
                                (BasicType::Object, ids.weak)
                            ]
                        );
                        assert_eq!(c.fields().count(), 3);
                        assert_eq!((c.super_id, c.instance_size, c.trace_serial), (ids.object_class, 20, 1));
                    }
                    SubRecord::PrimitiveArray(a) if a.id == ids.image_chars => {
                        assert_eq!(a.data, Some(&[0, b'h', 0, b'i'][..]));
                    }
                    SubRecord::PrimitiveArray(a) if a.id == ids.nodata => {
                        assert!(a.no_data && a.data.is_none());
                        assert_eq!((a.len, a.ty, a.trace_serial), (5, BasicType::Int, 3));
                    }
                    SubRecord::ObjectArray(a) if a.id == ids.node_array => {
                        assert_eq!(a.ids().collect::<Vec<_>>(), [ids.nodes[0], 0, ids.nodes[1], ids.dangling]);
                    }
                    _ => {}
                }
            }
        }
        let every: std::collections::BTreeSet<u8> = [
            0xFF, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x20, 0x21, 0x22, 0x23, 0xFE, 0x89, 0x8A, 0x8B, 0x8C,
            0x8D, 0x8E, 0x90, 0xC3,
        ]
        .into();
        assert_eq!(seen_tags, every, "the sample holds every sub-record tag");
        assert_eq!(infos, [0x49, 0x5A, 0x41, 0x5A, 0x41]);
        let m = u32::MAX;
        assert_eq!(roots[1], (0x01, None, None, Some(0x5000)));
        assert_eq!(roots[2], (0x02, Some(1), Some(m), None));
        assert_eq!(roots[4], (0x04, Some(1), None, None));
        assert_eq!(roots[8], (0x08, Some(1), Some(m), None));
        assert_eq!(roots[14], (0x8E, Some(1), Some(m), None));
    }
}

/// Runs heapconv hprof-conv and the real hprof-conv on `input`; returns (ours, theirs,
/// their exit code).
fn both_convert(oracle: &Path, dir: &Path, input: &[u8], z: bool, tag: &str) -> (Vec<u8>, Vec<u8>, Option<i32>) {
    let inp = dir.join(format!("{tag}.hprof"));
    std::fs::write(&inp, input).unwrap();
    let ours = dir.join(format!("{tag}.ours"));
    let theirs = dir.join(format!("{tag}.theirs"));
    let mut args = vec!["hprof-conv", inp.to_str().unwrap(), ours.to_str().unwrap()];
    if z {
        args.push("-z");
    }
    heapconv_ok(&args, 0);
    let mut cmd = Command::new(oracle);
    if z {
        cmd.arg("-z");
    }
    let st = cmd.arg(&inp).arg(&theirs).output().expect("hprof-conv runs");
    (std::fs::read(&ours).unwrap(), std::fs::read(&theirs).unwrap_or_default(), st.status.code())
}

#[test]
fn hprof_conv_is_byte_identical_to_android_hprof_conv() {
    let Some(oracle) = crate::common::hprof_conv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = android_sample(4, false);
    for z in [false, true] {
        let (ours, theirs, code) = both_convert(&oracle, dir.path(), &bytes, z, &format!("s{z}"));
        assert_eq!(code, Some(0));
        assert!(ours == theirs, "-z {z}: heapconv and hprof-conv differ ({} vs {} bytes)", ours.len(), theirs.len());
        assert!(ours.starts_with(b"JAVA PROFILE 1.0.2\0"));
    }
    // A bigger dump shaped as ART writes it (thousands of segments).
    let (big, _) = synthetic_heap(&SyntheticHeap { target_bytes: 3 << 20, ..Default::default() });
    for z in [false, true] {
        let (ours, theirs, code) = both_convert(&oracle, dir.path(), &big, z, &format!("big{z}"));
        assert_eq!(code, Some(0));
        assert!(ours == theirs, "synthetic heap, -z {z}: heapconv and hprof-conv differ");
    }
}

#[test]
fn hprof_conv_output_reads_back_as_the_standard_format() {
    for id_size in [4u8, 8] {
        let (bytes, ids) = android_sample(id_size, false);
        let (before, _) = read(&bytes);
        for z in [false, true] {
            let mut out = std::io::Cursor::new(Vec::new());
            let opts = HprofConvOptions { app_only: z, ..Default::default() };
            let rep = hprof_conv(&bytes[..], "t", &mut out, &opts).unwrap();
            assert_eq!(rep.heap_infos_dropped, 5);
            assert_eq!(rep.roots_rewritten, 8);
            let (after, st) = read(out.get_ref());
            assert_eq!(after.source, "JAVA PROFILE 1.0.2");
            assert!(!st.sub_records.keys().any(|&t| t >= 0x80 && t != 0xFF), "{:?}", st.sub_records.keys());
            assert_eq!(after.heaps, ["default"]);
            assert!(after.roots.iter().all(|r| r.kind.perfetto_name().starts_with("ROOT_")));
            // 8 Android roots become ROOT_UNKNOWN.
            let unknown = after.roots.iter().filter(|r| r.kind == RootKind::Unknown).count();
            let dropped: Vec<u64> =
                [ids.image_chars, ids.image_string, ids.zygote_array, ids.zygote_bytes, ids.zygote_node].to_vec();
            if z {
                assert_eq!(rep.objects_dropped, 5);
                for id in &dropped {
                    assert!(!after.obj_id.contains(id), "{id:#x} dropped by -z");
                }
                assert_eq!(after.len(), before.len() - 5);
                // Class dumps stay, even in the zygote and image heaps.
                assert!(after.obj_id.contains(&ids.object_class) && after.obj_id.contains(&ids.weak_class));
                assert!(unknown >= 7);
            } else {
                assert_eq!(after.obj_id, before.obj_id);
                assert_eq!(after.ref_target, before.ref_target);
                assert_eq!(unknown, 9, "2 ROOT_UNKNOWN and 8 Android roots, one of them dangling");
                assert_eq!(after.roots.len(), before.roots.len());
            }
        }
    }
}

/// Replaces, in hprof-conv's output, its corrupt rendering of the NODATA array with what
/// heapconv writes, patching the enclosing record's length.
fn fix_nodata(theirs: &[u8], id: u32, serial: u32, len: u32, zeros: usize) -> Vec<u8> {
    let mut bad = vec![0x23];
    bad.extend_from_slice(&id.to_be_bytes());
    bad.extend_from_slice(&[0; 4]);
    bad.extend_from_slice(&len.to_be_bytes());
    bad.push(10);
    let at = theirs.windows(bad.len()).position(|w| w == bad).expect("hprof-conv's 0x23 with a zero serial");
    // The enclosing top-level record (their lengths are right: hprof-conv recomputes them).
    let mut rec = 31;
    loop {
        let n = u32::from_be_bytes(theirs[rec + 5..rec + 9].try_into().unwrap()) as usize;
        if at < rec + 9 + n {
            break;
        }
        rec += 9 + n;
    }
    let mut out = theirs[..at].to_vec();
    let n = u32::from_be_bytes(out[rec + 5..rec + 9].try_into().unwrap()) + zeros as u32;
    out[rec + 5..rec + 9].copy_from_slice(&n.to_be_bytes());
    out.extend_from_slice(&bad[..5]);
    out.extend_from_slice(&serial.to_be_bytes());
    out.extend_from_slice(&bad[9..]);
    out.extend(std::iter::repeat_n(0u8, zeros));
    out.extend_from_slice(&theirs[at + bad.len()..]);
    out
}

#[test]
fn nodata_arrays_differ_from_hprof_conv_only_where_it_is_wrong() {
    let (bytes, ids) = android_sample(4, true);
    let mut out = std::io::Cursor::new(Vec::new());
    let rep = hprof_conv(&bytes[..], "t", &mut out, &HprofConvOptions::default()).unwrap();
    assert_eq!(rep.nodata_zero_filled, 1);
    let ours = out.into_inner();
    // heapconv's output is valid: the array keeps its length, with zero elements.
    let (d, _) = read(&ours);
    let a = obj(&d, ids.nodata);
    assert_eq!((d.obj_len[a as usize], d.obj_self_size[a as usize]), (5, 20));
    // It is in the app heap: -z keeps it.
    let mut z = std::io::Cursor::new(Vec::new());
    hprof_conv(&bytes[..], "t", &mut z, &HprofConvOptions { app_only: true, ..Default::default() }).unwrap();
    assert!(read(z.get_ref()).0.obj_id.contains(&ids.nodata));

    let Some(oracle) = crate::common::hprof_conv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (ours_cli, theirs, code) = both_convert(&oracle, dir.path(), &bytes, false, "nodata");
    assert_eq!(code, Some(0));
    assert_eq!(ours_cli, ours);
    assert_ne!(ours, theirs);
    // hprof-conv's file claims 5 elements and holds none: a reader runs into the next bytes.
    let e = read_hprof(&theirs[..], "theirs", &HprofReadOptions { partial: false });
    assert!(e.is_err(), "hprof-conv's rendering of 0xC3 should not parse");
    // Everything else is the same bytes.
    assert!(fix_nodata(&theirs, ids.nodata as u32, 3, 5, 20) == ours, "outputs differ beyond the NODATA array");
}

#[test]
fn hprof_conv_refuses_what_it_cannot_convert_and_writes_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = android_sample(4, false);
    let inp = dir.path().join("in.hprof");
    std::fs::write(&inp, &bytes).unwrap();
    let i = inp.to_str().unwrap();
    // OUT == IN.
    let o = heapconv_ok(&["hprof-conv", i, i], 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("it is an input"));
    assert_eq!(std::fs::read(&inp).unwrap(), bytes);
    // A standard file is not converted again.
    let std_out = dir.path().join("std.hprof");
    heapconv_ok(&["hprof-conv", i, std_out.to_str().unwrap()], 0);
    let again = dir.path().join("again.hprof");
    let o = heapconv_ok(&["hprof-conv", std_out.to_str().unwrap(), again.to_str().unwrap()], 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("already in the standard format"));
    assert!(!again.exists());
    // A truncated input: an error naming the byte and record, and no output at all.
    let cut = dir.path().join("cut.hprof");
    std::fs::write(&cut, &bytes[..bytes.len() - 40]).unwrap();
    let out = dir.path().join("cut.out");
    let o = heapconv_ok(&["hprof-conv", cut.to_str().unwrap(), out.to_str().unwrap()], 1);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cut.hprof: the file ends at byte") && err.contains("record 0x"), "{err}");
    assert!(!out.exists(), "no partial output");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "staged files removed: {leftovers:?}");
    // Standard output.
    let o = heapconv_ok(&["hprof-conv", i, "-", "-q"], 0);
    assert_eq!(o.stdout, std::fs::read(&std_out).unwrap());
    // gzip input.
    let gz = dir.path().join("in.hprof.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, &bytes).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let from_gz = dir.path().join("from-gz.hprof");
    heapconv_ok(&["hprof-conv", gz.to_str().unwrap(), from_gz.to_str().unwrap()], 0);
    assert_eq!(std::fs::read(&from_gz).unwrap(), std::fs::read(&std_out).unwrap());
}

#[test]
fn inspect_summarizes_an_hprof_file() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = android_sample(4, true);
    let p = dir.path().join("a.hprof");
    std::fs::write(&p, &bytes).unwrap();
    let o = heapconv_ok(&["inspect", p.to_str().unwrap()], 0);
    let text = String::from_utf8(o.stdout).unwrap();
    for want in [
        "JAVA PROFILE 1.0.3, identifiers of 4 bytes, dumped 2023-11-14 22:13:20.123 UTC",
        "0x1C  HEAP_DUMP_SEGMENT",
        "0xC3  PRIMITIVE_ARRAY_NODATA_DUMP",
        "0x42  ?",
        "objects: 39 (8 instances, 2 object arrays, 12 primitive arrays, 17 class objects)",
        "ROOT_JNI_MONITOR",
        "roots: 17 (1 more to ids that name no object)",
        "instances before their class's CLASS_DUMP: 1",
        "problems: none",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let o = heapconv_ok(&["inspect", p.to_str().unwrap(), "--json"], 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "JAVA PROFILE 1.0.3");
    assert_eq!(v["id_size"], 4);
    assert_eq!(v["objects"], 39);
    assert_eq!(v["heaps"][2]["name"], "app");
    assert_eq!(v["heaps"][2]["objects"], 18);
    assert_eq!(v["roots"].as_array().unwrap().len(), 16);
    assert_eq!(v["dangling_references"], 1);

    // A truncated file: a partial summary, the damage named, exit code 3.
    let cut = dir.path().join("cut.hprof");
    std::fs::write(&cut, &bytes[..2600]).unwrap();
    let o = heapconv_ok(&["inspect", cut.to_str().unwrap(), "--json"], 3);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let inc = v["incomplete"][0].as_str().unwrap();
    assert!(inc.contains("cut.hprof: the file ends at byte 2600, inside"), "{inc}");
    assert!(v["objects"].as_u64().unwrap() > 20);
    // convert takes heap dumps: the dominator tree, roots named by their kind.
    let o = heapconv_ok(&["convert", p.to_str().unwrap(), "--to", "folded"], 0);
    let folded = String::from_utf8(o.stdout).unwrap();
    assert!(folded.lines().any(|l| l.starts_with("com.example.Node [ROOT_JNI_GLOBAL] ")), "{folded}");
}

#[test]
fn synthetic_heaps_read_back_with_their_counts_and_a_synthetic_java_lang_class() {
    for (android, id_size) in [(true, 4u8), (false, 8)] {
        let p = SyntheticHeap { target_bytes: 2 << 20, id_size, android, seed: 7 };
        let (bytes, sum) = synthetic_heap(&p);
        let (d, st) = read(&bytes);
        let count = |k: fn(&ObjectKind) -> bool| d.obj_kind.iter().filter(|o| k(o)).count() as u64;
        assert_eq!(count(|k| *k == ObjectKind::Instance), sum.instances);
        assert_eq!(count(|k| *k == ObjectKind::ObjectArray), sum.object_arrays);
        assert_eq!(count(|k| matches!(k, ObjectKind::PrimitiveArray(BasicType::Byte))), sum.primitive_arrays);
        assert_eq!(d.roots.len() as u64, sum.roots);
        assert_eq!(st.records[&0x1C].count, sum.segments);
        assert_eq!(st.instances_without_class, 0);
        assert_eq!(st.field_size_mismatches, 0);
        assert_eq!(st.instances_before_class > 0, android, "Android dumps some classes after an instance");
        assert_eq!(d.heaps, if android { vec!["zygote", "app"] } else { vec!["default"] });
        // The dump has no java.lang.Class: a synthetic one (id 0) is the class of class objects.
        let cc = d.classes.iter().position(|c| c.name == "java.lang.Class").unwrap() as ClassIdx;
        assert_eq!((d.classes[cc as usize].id, d.classes[cc as usize].kind), (0, ClassKind::Class));
        assert!(d.classes[cc as usize].object.is_none());
        for (o, k) in d.obj_kind.iter().enumerate() {
            assert_eq!(*k == ObjectKind::Class, d.obj_class[o] == cc);
        }
        assert_eq!(class(&d, "byte[]").kind, ClassKind::Array);
        let named = if android { "com.example.pkg1.Class1" } else { "com.example.Class1" };
        assert_eq!(class(&d, named).superclass.map(|s| d.classes[s as usize].name.as_str()), Some("java.lang.Object"));
    }
}

// ---------------------------------------------------------------------------------------------
// Real JVM dumps.

/// The first static reference named `field` of class `class`.
fn static_ref(d: &HeapDump, class_name: &str, field: &str) -> ObjIdx {
    let c = class(d, class_name);
    c.static_refs.iter().find(|(f, _)| d.field_name(*f) == field).map(|&(_, t)| t).expect("static field")
}

fn field_ref(d: &HeapDump, o: ObjIdx, field: &str) -> ObjIdx {
    d.refs(o).find(|&(f, _)| d.field_name(f) == field).map(|(_, t)| t).expect("field")
}

#[test]
fn real_openjdk_dump_has_the_objects_the_program_made() {
    if !have_jdk() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bytes = jvm_dump(dir.path());
    let (d, st) = read(&bytes);
    assert_eq!(d.source, "JAVA PROFILE 1.0.2");
    assert_eq!(d.id_size, 8);
    assert!(d.incomplete.is_empty() && st.damage.is_none());
    assert_eq!((st.instances_without_class, st.field_size_mismatches, st.duplicate_ids), (0, 0, 0));
    assert_eq!(d.heaps, ["default"]);
    assert!(st.records.contains_key(&0x1C) && st.records.contains_key(&0x2C));

    // Names are Java names; kinds are inferred.
    for (name, kind) in [
        ("HeapFixture$Node", ClassKind::Normal),
        ("java.lang.String", ClassKind::String),
        ("java.lang.Class", ClassKind::Class),
        ("java.lang.ref.WeakReference", ClassKind::WeakReference),
        ("java.lang.ref.SoftReference", ClassKind::SoftReference),
        ("java.lang.ref.PhantomReference", ClassKind::PhantomReference),
        ("java.lang.ref.Finalizer", ClassKind::FinalizerReference),
        ("int[]", ClassKind::Array),
        ("java.lang.String[]", ClassKind::Array),
        ("java.lang.Object", ClassKind::Normal),
    ] {
        assert_eq!(class(&d, name).kind, kind, "{name}");
    }
    let node = class(&d, "HeapFixture$Node");
    let mut fields: Vec<(&str, BasicType)> = node.fields.iter().map(|f| (d.field_name(f.name), f.ty)).collect();
    fields.sort_by_key(|f| f.0);
    assert_eq!(fields, [("next", BasicType::Object), ("value", BasicType::Int)]);
    let node_idx = d.classes.iter().position(|c| c.name == "HeapFixture$Node").unwrap() as ClassIdx;
    assert_eq!(d.obj_class.iter().filter(|&&c| c == node_idx).count(), 1000, "1000 Node instances");

    // head -> next -> ... 1000 nodes, then null.
    let mut n = static_ref(&d, "HeapFixture", "head");
    let mut seen = 0;
    while n != REF_NULL {
        assert_eq!(d.obj_class[n as usize], node_idx);
        assert_eq!(d.refs(n).count(), 1, "one reference field");
        seen += 1;
        n = field_ref(&d, n, "next");
        assert!(seen <= 1000);
    }
    assert_eq!(seen, 1000);

    let numbers = static_ref(&d, "HeapFixture", "numbers");
    assert_eq!(d.obj_kind[numbers as usize], ObjectKind::PrimitiveArray(BasicType::Int));
    assert_eq!((d.obj_len[numbers as usize], d.obj_self_size[numbers as usize]), (12345, 12345 * 4));
    assert_eq!(d.class_of(numbers).name, "int[]");

    // String[] of three strings whose `value` arrays hold their Latin-1 bytes.
    let names = static_ref(&d, "HeapFixture", "names");
    assert_eq!(d.class_of(names).name, "java.lang.String[]");
    assert_eq!(d.obj_len[names as usize], 3);
    let strings: Vec<ObjIdx> = d.refs(names).map(|(_, t)| t).collect();
    let mut values = Vec::new();
    for s in &strings {
        assert_eq!(d.class_of(*s).name, "java.lang.String");
        let v = field_ref(&d, *s, "value");
        assert_eq!(d.obj_kind[v as usize], ObjectKind::PrimitiveArray(BasicType::Byte));
        values.push((d.obj_id[v as usize], d.obj_len[v as usize]));
    }
    assert_eq!(values.iter().map(|v| v.1).collect::<Vec<_>>(), [14, 13, 14]);
    // The walker hands over the bytes of those arrays.
    let mut texts = Vec::new();
    let mut s = HprofStream::new(&bytes[..], "jvm").unwrap();
    while s.next_record().unwrap().is_some() {
        while let Some(sr) = s.next_sub().unwrap() {
            if let SubRecord::PrimitiveArray(a) = sr.record {
                if let Some(i) = values.iter().position(|v| v.0 == a.id) {
                    texts.push((i, String::from_utf8(a.data.unwrap().to_vec()).unwrap()));
                }
            }
        }
    }
    texts.sort();
    assert_eq!(
        texts.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(),
        ["alpha-heapconv", "beta-heapconv", "gamma-heapconv"]
    );

    // Derived extends Base: its own fields first, then Base's.
    let derived = static_ref(&d, "HeapFixture", "derived");
    assert_eq!(d.class_of(derived).name, "HeapFixture$Derived");
    let got: Vec<(String, u64)> = refs(&d, derived);
    assert_eq!(got, [r("derivedRef", d.obj_id[numbers as usize]), r("baseRef", d.obj_id[names as usize])]);
    let base = class(&d, "HeapFixture$Base");
    assert_eq!(d.classes[class(&d, "HeapFixture$Derived").superclass.unwrap() as usize].name, base.name);

    // The weak reference's referent is the second node.
    let weak = static_ref(&d, "HeapFixture", "weak");
    assert_eq!(d.class_of(weak).kind, ClassKind::WeakReference);
    let second = field_ref(&d, static_ref(&d, "HeapFixture", "head"), "next");
    assert_eq!(field_ref(&d, weak, "referent"), second);

    // Roots: system classes are sticky, threads are thread objects, locals are frame roots.
    let kinds: std::collections::BTreeSet<RootKind> = d.roots.iter().map(|r| r.kind).collect();
    for k in [RootKind::StickyClass, RootKind::ThreadObject, RootKind::JavaFrame] {
        assert!(kinds.contains(&k), "{k} in {kinds:?}");
    }
    // The class objects are objects of java.lang.Class.
    let o = class(&d, "HeapFixture").object.unwrap();
    assert_eq!((d.obj_kind[o as usize], d.class_of(o).name.as_str()), (ObjectKind::Class, "java.lang.Class"));

    // hprof-conv takes Android dumps only; inspect takes this one.
    let p = dir.path().join("jvm.hprof");
    let o = heapconv_ok(&["hprof-conv", p.to_str().unwrap(), dir.path().join("x").to_str().unwrap()], 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("already in the standard format"));
    let o = heapconv_ok(&["inspect", p.to_str().unwrap(), "--json"], 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["objects"].as_u64().unwrap(), d.len() as u64);
    assert_eq!(v["id_size"], 8);
}

// ---------------------------------------------------------------------------------------------
// Hostile inputs.

/// Offsets where top-level records start (and the end of the file).
fn record_starts(bytes: &[u8]) -> Vec<usize> {
    let mut v = Vec::new();
    let mut at = 31usize;
    while at < bytes.len() {
        v.push(at);
        at += 9 + u32::from_be_bytes(bytes[at + 5..at + 9].try_into().unwrap()) as usize;
    }
    v.push(bytes.len());
    v
}

#[test]
fn truncation_anywhere_is_an_error_or_a_partial_dump_never_a_panic() {
    for id_size in [4u8, 8] {
        let (bytes, _) = android_sample(id_size, true);
        let starts = record_starts(&bytes);
        let header_len = 31;
        let mut last_objects = 0;
        for cut in 0..=bytes.len() {
            let prefix = &bytes[..cut];
            let strict = read_hprof(prefix, "cut.hprof", &HprofReadOptions { partial: false });
            let at_boundary = starts.contains(&cut) || cut == header_len;
            match (&strict, at_boundary, cut < header_len) {
                (Err(e), _, true) => assert!(e.kind() == ErrorKind::Truncated, "{cut}: {e}"),
                (Ok(d), true, false) => assert!(d.incomplete.is_empty()),
                (Err(e), false, false) => {
                    assert_eq!(e.kind(), ErrorKind::Truncated, "cut at {cut}: {e}");
                    let m = e.to_string();
                    assert!(m.contains(&format!("cut.hprof: the file ends at byte {cut}")), "{m}");
                    assert!(m.contains("record 0x"), "{m}");
                }
                (r, b, _) => panic!("cut at {cut} (record boundary: {b}): {r:?}"),
            }
            if cut >= header_len {
                let (d, st) = read_hprof_with_stats(prefix, "cut.hprof", &HprofReadOptions::default()).unwrap();
                d.validate().unwrap();
                assert_eq!(d.incomplete.is_empty(), at_boundary, "cut at {cut}: {:?}", d.incomplete);
                assert_eq!(st.damage.is_some(), !at_boundary);
                assert!(d.len() >= last_objects, "objects complete before the damage are kept");
                last_objects = d.len();
            }
            let mut out = std::io::Cursor::new(Vec::new());
            let conv = hprof_conv(prefix, "cut.hprof", &mut out, &HprofConvOptions::default());
            assert_eq!(conv.is_ok(), at_boundary && cut >= header_len, "hprof-conv of a cut at {cut}");
        }
        assert_eq!(last_objects, 39);
    }
}

#[test]
fn truncations_at_record_boundaries_convert_as_hprof_conv_does() {
    let Some(oracle) = crate::common::hprof_conv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = android_sample(4, false);
    for (i, &cut) in record_starts(&bytes).iter().enumerate().step_by(3) {
        let (ours, theirs, code) = both_convert(&oracle, dir.path(), &bytes[..cut], i % 2 == 0, "prefix");
        assert_eq!(code, Some(0));
        assert!(ours == theirs, "prefix of {cut} bytes converts differently");
    }
}

fn with_u32(bytes: &[u8], at: usize, v: u32) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
    b
}

fn strict_err(bytes: &[u8]) -> heapconv::Error {
    let t = Instant::now();
    let e = read_hprof(bytes, "bad.hprof", &HprofReadOptions { partial: false }).expect_err("an error");
    assert!(t.elapsed() < Duration::from_secs(2), "fails fast");
    e
}

#[test]
fn lying_lengths_unknown_tags_and_odd_id_sizes_give_clear_errors() {
    let (bytes, ids) = android_sample(4, false);
    let starts = record_starts(&bytes);
    // A STRING record claiming nearly 4 GiB: truncated, no 4 GiB allocation.
    let first = starts[0];
    for len in [u32::MAX, 0xFFFF_FFF0, bytes.len() as u32] {
        let e = strict_err(&with_u32(&bytes, first + 5, len));
        assert_eq!(e.kind(), ErrorKind::Truncated);
        assert!(e.to_string().contains(&format!("record 0x01 STRING at byte {first}")), "{e}");
    }
    // The last record, a heap-dump segment, says it is longer than the file: its sub-records
    // are read, then the file ends inside the record.
    let last_seg = starts[starts.len() - 4];
    assert_eq!(bytes[last_seg], 0x1C);
    let ends_with_segment = &bytes[..starts[starts.len() - 3]];
    let lying = with_u32(ends_with_segment, last_seg + 5, 0xFFFF_FF00);
    let e = strict_err(&lying);
    assert_eq!(e.kind(), ErrorKind::Truncated);
    assert!(e.to_string().contains(&format!("record 0x1C HEAP_DUMP_SEGMENT at byte {last_seg}")), "{e}");
    let (d, _) = read_hprof_with_stats(&lying[..], "x", &Default::default()).unwrap();
    assert!(d.obj_id.contains(&ids.late_node), "what was complete is kept");
    assert_eq!(d.incomplete.len(), 1);
    // Followed by more records, the same lie runs into their bytes.
    let e = strict_err(&with_u32(&bytes, last_seg + 5, 0xFFFF_FF00));
    assert!(e.to_string().contains("unknown heap-dump sub-record tag 0x0C"), "{e}");
    // A segment shorter than its sub-records: the sub-record overruns it.
    let len = u32::from_be_bytes(bytes[last_seg + 5..last_seg + 9].try_into().unwrap());
    let e = strict_err(&with_u32(&bytes, last_seg + 5, len - 3));
    assert_eq!(e.kind(), ErrorKind::Malformed);
    assert!(e.to_string().contains("past the end of record 0x1C HEAP_DUMP_SEGMENT"), "{e}");
    // An instance claiming 4 GiB of field values.
    let inst = bytes.windows(5).position(|w| w[0] == 0x21 && w[1..5] == (ids.late_node as u32).to_be_bytes()).unwrap();
    let e = strict_err(&with_u32(&bytes, inst + 13, 0xFFFF_FFF0));
    assert_eq!(e.kind(), ErrorKind::Malformed);
    assert!(
        e.to_string().contains(&format!("sub-record 0x21 INSTANCE_DUMP at byte {inst} needs 4294967297 bytes")),
        "{e}"
    );
    // An object array of 2^32-1 elements, and an unknown sub-record tag.
    let arr = bytes.windows(5).position(|w| w[0] == 0x22 && w[1..5] == (ids.node_array as u32).to_be_bytes()).unwrap();
    assert_eq!(strict_err(&with_u32(&bytes, arr + 9, u32::MAX)).kind(), ErrorKind::Malformed);
    let mut b = bytes.clone();
    b[inst] = 0x42;
    let e = strict_err(&b);
    assert!(e.to_string().contains(&format!("unknown heap-dump sub-record tag 0x42 at byte {inst}")), "{e}");
    let mut out = std::io::Cursor::new(Vec::new());
    assert!(hprof_conv(&b[..], "x", &mut out, &HprofConvOptions::default()).is_err());
    // A bad basic type in a primitive array.
    let prim =
        bytes.windows(5).position(|w| w[0] == 0x23 && w[1..5] == (ids.default_ints as u32).to_be_bytes()).unwrap();
    let mut b = bytes.clone();
    b[prim + 13] = 3;
    let e = strict_err(&b);
    assert!(e.to_string().contains("3 at byte") && e.to_string().contains("is not an hprof basic type"), "{e}");
    // Unknown top-level tags are skipped by their length.
    let (d, st) = read(&bytes);
    assert_eq!(st.records[&0x42].count, 1);
    assert_eq!(d.len(), 38);
    // Identifier sizes other than 4 and 8.
    for idsz in [0u32, 1, 2, 3, 5, 16, u32::MAX] {
        let e = strict_err(&with_u32(&bytes, 19, idsz));
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.to_string().contains(&format!("identifier size {idsz} at byte 19")), "{e}");
    }
    // Not hprof at all, and a header string with no end.
    assert_eq!(strict_err(b"JAVA PROFILE 2.0\0\0\0\0\x04").kind(), ErrorKind::Unsupported);
    assert_eq!(strict_err(&[b'J'; 200]).kind(), ErrorKind::Malformed);
    assert_eq!(strict_err(b"").kind(), ErrorKind::Truncated);
}

#[test]
fn mutated_dumps_never_panic_or_hang() {
    let samples = [android_sample(4, true).0, android_sample(8, true).0];
    let mut rng = Rng(0x5EED_4850);
    let start = Instant::now();
    for round in 0..3000 {
        let mut b = samples[round % 2].clone();
        for _ in 0..1 + rng.below(4) {
            let i = 19 + rng.index(b.len() - 19);
            match rng.below(5) {
                0 => b[i] ^= 1 << rng.below(8),
                1 => b[i] = rng.next_u64() as u8,
                2 => b.truncate(i),
                3 => {
                    if i + 4 <= b.len() {
                        b[i..i + 4].copy_from_slice(&(u32::MAX - rng.below(64) as u32).to_be_bytes());
                    }
                }
                _ => {
                    let n = rng.below(6);
                    b.splice(i..i, (0..n).map(|_| rng.next_u64() as u8));
                }
            }
        }
        let t = Instant::now();
        if let Ok((d, _)) = read_hprof_with_stats(&b[..], "m", &HprofReadOptions::default()) {
            d.validate().unwrap_or_else(|e| panic!("round {round}: invalid dump: {e}"));
        }
        let mut out = std::io::Cursor::new(Vec::new());
        let opts = HprofConvOptions { max_zero_fill: 1 << 20, ..Default::default() };
        let _ = hprof_conv(&b[..], "m", &mut out, &opts);
        assert!(t.elapsed() < Duration::from_secs(2), "round {round} took {:?}", t.elapsed());
    }
    eprintln!("3000 mutated dumps in {:?}", start.elapsed());
}

// ---------------------------------------------------------------------------------------------
// Files with several heap dumps (the JVMTI hprof agent's).

/// `top --json` of one heap dump of `p`: (objects, String instances).
fn top_counts(p: &Path, dump: &str) -> (u64, u64) {
    let o = heapconv_ok(&["top", p.to_str().unwrap(), "--dump", dump, "-n", "0", "--json"], 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let strings = v["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "java.lang.String")
        .map_or(0, |c| c["instances"].as_u64().unwrap());
    (v["objects"].as_u64().unwrap(), strings)
}

#[test]
fn several_heap_dumps_are_selected_listed_and_written_one_per_dump() {
    let dir = tempfile::tempdir().unwrap();
    for segmented in [false, true] {
        let (bytes, dumps) = jvmti_agent_dumps(segmented, false);
        let p = dir.path().join(if segmented { "seg.hprof" } else { "agent.hprof" });
        std::fs::write(&p, &bytes).unwrap();
        let ps = p.to_str().unwrap();

        // inspect lists the dumps; its counts are of the last.
        let text = String::from_utf8(heapconv_ok(&["inspect", ps], 0).stdout).unwrap();
        assert!(text.contains("heap dumps: 2 (the counts below are of dump 2)"), "{text}");
        assert!(text.contains("     1 "), "{text}");
        assert!(text.contains("2.813 s") && text.contains("9.649 s"), "{text}");
        let v: serde_json::Value = serde_json::from_slice(&heapconv_ok(&["inspect", ps, "--json"], 0).stdout).unwrap();
        let listed = v["dumps"].as_array().unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0]["number"], 1);
        assert_eq!(listed[0]["time_us"], 2_813_000);
        assert_eq!(listed[1]["time_us"], 9_649_000);
        assert_eq!(listed[1]["records"], 1, "one HEAP_DUMP, or one segment (the end is not counted)");
        assert_eq!(v["dump"], 2);
        assert_eq!(v["objects"], dumps[1].objects);
        assert!(v["problems"].as_array().unwrap().is_empty(), "{v}");

        // top: each dump alone (no doubled counts, no duplicate ids); the last by default.
        assert_eq!(top_counts(&p, "1"), (dumps[0].objects, dumps[0].strings));
        assert_eq!(top_counts(&p, "2"), (dumps[1].objects, dumps[1].strings));
        assert_eq!(top_counts(&p, "last"), (dumps[1].objects, dumps[1].strings));
        assert_eq!((dumps[0].objects, dumps[1].objects), (11, 17));
        let o = heapconv_ok(&["top", ps, "--dump", "3"], 2);
        assert!(String::from_utf8_lossy(&o.stderr).contains("no heap dump number 3 (the file holds 2)"));
        let o = heapconv_ok(&["top", ps, "--dump", "all"], 2);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(err.contains("2 heap dumps; choose one with --dump"), "{err}");
        assert!(err.contains("heap dump 2 at byte"), "{err}");
        heapconv_ok(&["top", ps, "--strict"], 0);

        // convert: one dump to a file; all of them into a directory, numbered.
        let one = heapconv_ok(&["convert", ps, "--to", "folded", "--dump", "1"], 0).stdout;
        let last = heapconv_ok(&["convert", ps, "--to", "folded"], 0).stdout;
        assert_ne!(one, last);
        let total = |b: &[u8]| -> u64 {
            String::from_utf8_lossy(b).lines().map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum()
        };
        assert!(total(&one) < total(&last), "the first dump holds less");
        let o = heapconv_ok(&["convert", ps, "--to", "folded", "--dump", "all"], 2);
        assert!(String::from_utf8_lossy(&o.stderr).contains("give -o an existing directory"));
        let out = dir.path().join(format!("out-{segmented}/"));
        heapconv_ok(&["convert", ps, "--to", "folded", "--dump", "all", "-o", out.to_str().unwrap()], 0);
        let stem = if segmented { "seg" } else { "agent" };
        assert_eq!(std::fs::read(out.join(format!("{stem}.1.folded"))).unwrap(), one);
        assert_eq!(std::fs::read(out.join(format!("{stem}.2.folded"))).unwrap(), last);
        let o = heapconv_ok(&["convert", ps, "--dump", "5", "-o", dir.path().join("x.pb").to_str().unwrap()], 2);
        assert!(String::from_utf8_lossy(&o.stderr).contains("the file holds 2"));
    }

    // Batches: `--dump all` writes OUT/<key>/<stem>.N.<ext>.
    let batch_out = dir.path().join("batch");
    let input_dir = dir.path().join("in");
    std::fs::create_dir(&input_dir).unwrap();
    std::fs::write(input_dir.join("agent.hprof"), jvmti_agent_dumps(false, false).0).unwrap();
    heapconv_ok(
        &[
            "convert",
            input_dir.to_str().unwrap(),
            "--to",
            "folded",
            "--dump",
            "all",
            "-o",
            &format!("{}/", batch_out.display()),
        ],
        0,
    );
    for n in [1, 2] {
        assert!(batch_out.join("agent").join(format!("agent.{n}.folded")).is_file(), "dump {n} in the batch");
    }

    // A single-dump file: `--dump 1` and `--dump last` are the same bytes, inspect lists no
    // dumps, `--dump 2` is a usage error.
    let (bytes, _) = android_sample(4, false);
    let p = dir.path().join("one.hprof");
    std::fs::write(&p, &bytes).unwrap();
    let ps = p.to_str().unwrap();
    let a = heapconv_ok(&["convert", ps, "--to", "folded"], 0).stdout;
    assert_eq!(heapconv_ok(&["convert", ps, "--to", "folded", "--dump", "1"], 0).stdout, a);
    assert_eq!(heapconv_ok(&["convert", ps, "--to", "folded", "--dump", "all"], 0).stdout, a);
    let o = heapconv_ok(&["convert", ps, "--dump", "2", "--to", "folded"], 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("no heap dump number 2 (the file holds 1)"));
    let v: serde_json::Value = serde_json::from_slice(&heapconv_ok(&["inspect", ps, "--json"], 0).stdout).unwrap();
    assert!(v.get("dumps").is_none() && v.get("dump").is_none());
}

#[test]
fn duplicate_ids_within_one_heap_dump_fail_strict() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, dumps) = jvmti_agent_dumps(true, true);
    let p = dir.path().join("dup.hprof");
    std::fs::write(&p, &bytes).unwrap();
    let ps = p.to_str().unwrap();
    // The first dump is sound; the second defines a String id twice.
    assert_eq!(top_counts(&p, "1"), (dumps[0].objects, dumps[0].strings));
    heapconv_ok(&["top", ps, "--dump", "1", "--strict"], 0);
    let o = heapconv_ok(&["top", ps, "--strict"], 6);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.contains("1 object id(s) defined twice within one heap dump"), "{err}");
    let o = heapconv_ok(&["convert", ps, "--to", "folded", "--strict"], 6);
    assert!(String::from_utf8_lossy(&o.stderr).contains("defined twice"));
}

/// The JVM's class histogram (`jcmd GC.class_histogram`): Java class name -> (instances, bytes).
fn jvm_histogram(text: &str) -> std::collections::BTreeMap<String, (u64, u64)> {
    let mut m = std::collections::BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 || !f[0].ends_with(':') {
            continue;
        }
        let (Ok(n), Ok(b)) = (f[1].parse::<u64>(), f[2].parse::<u64>()) else { continue };
        m.insert(java_class_name(f[3]), (n, b));
    }
    m
}

#[test]
fn jvm_object_sizes_equal_the_jvms_own_class_histogram() {
    if !have_jdk() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = data("hprof/HeapFixture.java");
    let classes = dir.path().join("classes");
    let st = Command::new("javac").arg("-d").arg(&classes).arg(&src).status().expect("javac runs");
    assert!(st.success(), "javac failed");
    for (flags, layout) in [
        (&["-XX:+UseCompressedOops"][..], "jvm64-coops"),
        (&["-XX:-UseCompressedOops"][..], "jvm64-ccp"),
        (&["-XX:-UseCompressedOops", "-XX:-UseCompressedClassPointers"][..], "jvm64"),
    ] {
        let dump = dir.path().join(format!("{layout}.hprof"));
        let histo = dir.path().join(format!("{layout}.txt"));
        let out = Command::new("java")
            .args(["-XX:+UseSerialGC", "-Xmx64m", "-Xshare:off"])
            .args(flags)
            .arg("-cp")
            .arg(&classes)
            .arg("HeapFixture")
            .arg(&dump)
            .arg(&histo)
            .output()
            .expect("java runs");
        assert!(out.status.success(), "java failed: {}", String::from_utf8_lossy(&out.stderr));
        let jvm = jvm_histogram(&std::fs::read_to_string(&histo).unwrap());
        let o = heapconv_ok(&["top", dump.to_str().unwrap(), "--object-size", layout, "-n", "0", "--json"], 0);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let ours: std::collections::BTreeMap<String, (u64, u64)> = v["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    (c["instances"].as_u64().unwrap(), c["shallow"].as_u64().unwrap()),
                )
            })
            .collect();
        // The program's own classes: the same instances and bytes.
        for class in ["HeapFixture$Node", "HeapFixture$Derived"] {
            assert_eq!(ours.get(class), jvm.get(class), "{class} with {layout}");
        }
        let per = |m: &std::collections::BTreeMap<String, (u64, u64)>, c: &str| {
            let (n, b) = m[c];
            b as f64 / n as f64
        };
        // Strings are all one size; arrays differ by the few the histogram call itself made.
        assert_eq!(per(&ours, "java.lang.String"), per(&jvm, "java.lang.String"), "String with {layout}");
        for c in ["byte[]", "java.lang.Object[]"] {
            let (a, b) = (per(&ours, c), per(&jvm, c));
            assert!((a - b).abs() / b < 0.01, "{c} with {layout}: {a} vs {b} bytes each");
            let (na, nb) = (ours[c].0 as f64, jvm[c].0 as f64);
            assert!((na - nb).abs() / nb < 0.01, "{c} with {layout}: {na} vs {nb} instances");
        }
        // The default stays the bytes the dump holds: a Node is its fields (8-byte reference and
        // an int).
        let o = heapconv_ok(&["top", dump.to_str().unwrap(), "-n", "0", "--json"], 0);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let node = v["classes"].as_array().unwrap().iter().find(|c| c["name"] == "HeapFixture$Node").unwrap();
        assert_eq!(node["shallow"], 12 * 1000);
    }
}
