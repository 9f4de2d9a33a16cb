//! Heap analyses through the real encoders: the shortest-path-tree profile of the heap of
//! `tests/data/traceconv/cases/heap_graph_small.textproto` (built here in code, as the heap-graph
//! decoder must make it) against what the real `traceconv profile --java-heap` wrote for that
//! trace (`tests/data/traceconv/expected/heap_graph_small/`), decoded with our pprof schema and
//! through `go tool pprof -raw`; the dominator profile as folded stacks and SVG; the `top`
//! report against a golden file.

use crate::common::*;
use heapconv::analysis::heap::{HeapTopOptions, RootedHeap};
use heapconv::encode::flamegraph_svg::{SvgOptions, encode_svg};
use heapconv::encode::folded::{FoldedOptions, encode_folded};
use heapconv::encode::heap_top::{heap_top_json as top_json, heap_top_text as top_text};
use heapconv::encode::pprof::{PprofOptions, encode_pprof};
use heapconv::model::heap::{Class, ClassKind, HeapDump, ObjectKind, Root, RootKind};

/// The heap of `heap_graph_small.textproto`: objects 0x100..0x800 are indexes 0..7.
fn heap_graph_small() -> HeapDump {
    let mut d = HeapDump {
        pid: Some(10),
        process_name: Some("com.example.app".into()),
        timestamp: Some(500),
        source: "perfetto heap graph".into(),
        id_size: 8,
        heaps: vec!["app".into()],
        ..Default::default()
    };
    let class = |name: &str, size: u64, kind: ClassKind, superclass: Option<u32>| Class {
        name: name.into(),
        instance_size: size,
        kind,
        superclass,
        ..Default::default()
    };
    d.classes = vec![
        class("java.lang.Object", 8, ClassKind::Normal, None),
        class("com.example.Holder", 16, ClassKind::Normal, Some(0)),
        class("com.example.Cache", 24, ClassKind::Normal, Some(0)),
        class("java.lang.Object[]", 0, ClassKind::Array, None),
        class("com.example.Blob", 1000, ClassKind::NoReferences, Some(0)),
        class("java.lang.ref.WeakReference", 32, ClassKind::WeakReference, Some(0)),
    ];
    for (i, c) in d.classes.iter_mut().enumerate() {
        c.id = i as u64 + 1;
    }
    d.field_names = vec![
        "com.example.Holder.cache".into(),
        "com.example.Cache.items".into(),
        "java.lang.ref.Reference.referent".into(),
    ];
    let obj = |d: &mut HeapDump, id: u64, class: u32, size: u64, refs: &[(u32, u32)]| {
        let kind = if class == 3 { ObjectKind::ObjectArray } else { ObjectKind::Instance };
        d.push_object(id, class, kind, 0, size, refs.len() as u32 * u32::from(class == 3));
        for &(f, t) in refs {
            d.push_ref(f, t);
        }
    };
    obj(&mut d, 0x100, 1, 16, &[(0, 1)]);
    obj(&mut d, 0x200, 2, 24, &[(1, 2)]);
    obj(&mut d, 0x300, 3, 40, &[(1, 3), (1, 4)]);
    obj(&mut d, 0x400, 4, 1000, &[]);
    obj(&mut d, 0x500, 4, 1000, &[]);
    obj(&mut d, 0x600, 5, 32, &[(2, 6)]);
    obj(&mut d, 0x700, 4, 1000, &[]);
    obj(&mut d, 0x800, 4, 1000, &[]);
    d.roots = vec![Root { object: 0, kind: RootKind::JavaFrame }, Root { object: 5, kind: RootKind::JniGlobal }];
    d.validate().unwrap();
    d
}

fn expected(file: &str) -> std::path::PathBuf {
    data("traceconv/expected/heap_graph_small").join(file)
}

#[test]
fn spt_pprof_has_traceconvs_samples() {
    let dump = heap_graph_small();
    let heap = RootedHeap::new(&dump);
    let profile = heap.spt_profile(&heap.shortest_path_tree());
    let ours = decode_pprof(&encode_pprof(&profile, &PprofOptions::default()));
    let theirs = read_pprof(&expected("java_heap_dump.1.10.pb"));
    let (types, mut ours) = normalize(&ours);
    let (their_types, theirs) = normalize(&theirs);
    assert_eq!(types, their_types);
    // traceconv writes no Mapping message (its locations point at a missing mapping 1);
    // heapconv writes the mapping trace processor names, `JAVA`.
    for (_, frames) in &mut ours {
        for f in frames.iter_mut() {
            assert_eq!(f.2, "JAVA");
            f.2.clear();
        }
    }
    assert_eq!(ours, theirs);
}

#[test]
fn spt_pprof_raw_text_matches_traceconv() {
    if !have_go() {
        return;
    }
    let dump = heap_graph_small();
    let heap = RootedHeap::new(&dump);
    let profile = heap.spt_profile(&heap.shortest_path_tree());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("java_heap_dump.1.10.pb");
    std::fs::write(&path, encode_pprof(&profile, &PprofOptions { extras: false, ..Default::default() })).unwrap();
    let (types, mut ours) = parse_raw(&pprof_raw(&path));
    let (their_types, theirs) = parse_raw(&std::fs::read_to_string(expected("java_heap_dump.1.10.raw.txt")).unwrap());
    assert_eq!(types, their_types);
    for (_, frames) in &mut ours {
        for f in frames.iter_mut() {
            assert_eq!(f.1, "JAVA");
            f.1.clear();
        }
    }
    assert_eq!(ours, theirs);
}

/// heap_graph_small's dominator tree as folded stacks (retained bytes): the weak referent
/// Blob is held by the Cache's array, not by the WeakReference.
const DOMINATOR_FOLDED: &str = "com.example.Holder [ROOT_JAVA_FRAME] 16\n\
     com.example.Holder [ROOT_JAVA_FRAME];com.example.Cache 24\n\
     com.example.Holder [ROOT_JAVA_FRAME];com.example.Cache;java.lang.Object[] 40\n\
     com.example.Holder [ROOT_JAVA_FRAME];com.example.Cache;java.lang.Object[];com.example.Blob 2000\n\
     java.lang.ref.WeakReference [ROOT_JNI_GLOBAL] 32\n";

#[test]
fn dominator_profile_through_folded_and_svg() {
    let dump = heap_graph_small();
    let heap = RootedHeap::new(&dump);
    let dom = heap.dominators();
    let profile = heap.dominator_profile(&dom);
    let folded = encode_folded(&profile, &FoldedOptions { value_index: 1, ..Default::default() });
    assert_eq!(folded, DOMINATOR_FOLDED);
    // The root frame's width is its retained size.
    assert_eq!(dom.retained[0], 16 + 24 + 40 + 2000);
    let svg =
        String::from_utf8(encode_svg(&profile, &SvgOptions { value_index: 1, ..Default::default() }).unwrap()).unwrap();
    assert!(svg.contains("com.example.Holder [ROOT_JAVA_FRAME]"), "{svg}");
    assert!(svg.contains("2,080"), "the root frame's retained bytes appear in its tooltip");
}

#[test]
fn top_report_text_and_json() {
    let dump = heap_graph_small();
    let heap = RootedHeap::new(&dump);
    let spt = heap.shortest_path_tree();
    let dom = heap.dominators();
    let top = heap.heap_top(&spt, &dom, &HeapTopOptions::default());
    check_golden("heap_top_heap_graph_small.txt", &top_text(&top));
    let json: serde_json::Value = serde_json::from_str(&top_json(&top)).unwrap();
    assert_eq!(json["objects"], 8);
    assert_eq!(json["reachable_objects"], 6);
    // Holder retains everything below it; Blob's two reachable instances retain 2000 bytes,
    // counted once although the Holder, Cache and array above them retain them too.
    assert_eq!(json["classes"][0]["name"], "com.example.Holder");
    assert_eq!(json["classes"][0]["retained"], 2080);
    let blob = json["classes"].as_array().unwrap().iter().find(|c| c["name"] == "com.example.Blob").unwrap();
    assert_eq!(blob["instances"], 4);
    assert_eq!(blob["reachable_instances"], 2);
    assert_eq!(blob["shallow"], 4000);
    assert_eq!(blob["retained"], 2000);
    let path = &json["retainers"][2]["path"];
    assert_eq!(json["retainers"][2]["class"], "java.lang.Object[]");
    assert_eq!(path["root_kind"], "ROOT_JAVA_FRAME");
    let via: Vec<&str> = path["steps"].as_array().unwrap().iter().filter_map(|s| s["via"].as_str()).collect();
    assert_eq!(via, [".cache", ".items"]);
}

#[test]
fn analyses_of_a_real_openjdk_dump() {
    use heapconv::analysis::heap::VIRTUAL_ROOT;
    use heapconv::decode::hprof::{HprofReadOptions, read_hprof};
    if !have_jdk() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bytes = jvm_dump(dir.path());
    let dump = read_hprof(bytes.as_slice(), "jvm.hprof", &HprofReadOptions::default()).unwrap();
    let heap = RootedHeap::new(&dump);
    let dom = heap.dominators();
    let spt = heap.shortest_path_tree();
    // The list: HeapFixture.head, reached through the class's statics.
    let fixture = dump.classes.iter().find(|c| c.name == "HeapFixture").expect("class HeapFixture");
    let head = fixture.static_refs.iter().find(|(f, _)| dump.field_name(*f) == "head").map(|&(_, t)| t).unwrap();
    let next_of = |o: u32| dump.refs(o).find(|&(f, _)| dump.field_name(f) == "next").map(|(_, t)| t).unwrap();
    let mut nodes = vec![head];
    while let Some(&last) = nodes.last() {
        let n = next_of(last);
        if n as usize >= dump.len() {
            break;
        }
        nodes.push(n);
    }
    assert_eq!(nodes.len(), 1000);
    // `weak` refers to the second node through `referent` (declared by java.lang.ref.Reference):
    // not an edge, so the head still dominates it, and the head retains the whole list.
    assert_eq!(dom.idom[nodes[1] as usize], head);
    for w in nodes.windows(2) {
        assert_eq!(dom.idom[w[1] as usize], w[0]);
    }
    let list_bytes: u64 = nodes.iter().map(|&o| dump.obj_self_size[o as usize]).sum();
    assert!(list_bytes >= 1000 * 12, "{list_bytes}");
    assert_eq!(dom.retained[head as usize], list_bytes);
    // main's local `n` still holds the head: a Java-frame root, so only the virtual root
    // dominates it (the class's static field is a second path to it).
    assert_eq!(heap.root_kind(head), Some(RootKind::JavaFrame), "{:?}", heap.root_kind(head));
    assert_eq!(dom.idom[head as usize], VIRTUAL_ROOT);
    // The class histogram counts the list once, however deep its nodes are nested.
    let hist = heap.class_histogram(&dom);
    let node = hist.iter().find(|r| r.name == "HeapFixture$Node").unwrap();
    assert_eq!((node.instances, node.reachable_instances), (1000, 1000));
    assert_eq!((node.shallow, node.retained), (list_bytes, list_bytes));
    // The last node's path from a GC root: the list from its head, elided in the middle.
    let path = heap.path_to_root(&spt, nodes[999], 16).unwrap();
    assert_eq!((path.length, path.elided, path.steps.len()), (1000, 984, 16));
    assert_eq!(path.steps[0].object, head);
    let text = path.text();
    assert!(text.starts_with("[ROOT_JAVA_FRAME] HeapFixture$Node.next -> HeapFixture$Node.next"), "{text}");
    assert!(text.contains(" -> ... (984 more) -> "), "{text}");
    assert!(text.ends_with("HeapFixture$Node.next -> HeapFixture$Node"), "{text}");
    // A static field's path names the class whose field it is.
    let numbers = fixture.static_refs.iter().find(|(f, _)| dump.field_name(*f) == "numbers").unwrap().1;
    let text = heap.path_to_root(&spt, numbers, 16).unwrap().text();
    assert!(text.ends_with("java.lang.Class<HeapFixture>.numbers -> int[]"), "{text}");
    // The top report: all classes, the list's row as in the histogram.
    let top = heap.heap_top(&spt, &dom, &HeapTopOptions { classes: usize::MAX, ..Default::default() });
    assert_eq!(top.objects, dump.len() as u64);
    assert_eq!(top.reachable_objects, dom.order.len() as u64);
    assert_eq!(top.classes.len() as u64, top.class_count);
    assert!(top.classes.iter().any(|c| c == node), "{}", top_text(&top));
    if std::env::var_os("HEAPCONV_SHOW_TOP").is_some() {
        eprintln!("{}", top_text(&heap.heap_top(&spt, &dom, &HeapTopOptions::default())));
    }
}

/// Per object id: (SPT parent id, dominator id), for reachable objects only (0 = a root, or no
/// single dominator); class objects of the hprof reader left out.
fn trees_by_id(d: &HeapDump) -> std::collections::BTreeMap<u64, (u64, u64)> {
    use heapconv::analysis::heap::{UNREACHED, VIRTUAL_ROOT};
    let heap = RootedHeap::new(d);
    let spt = heap.shortest_path_tree();
    let dom = heap.dominators();
    let id = |p: u32| if p == VIRTUAL_ROOT { 0 } else { d.obj_id[p as usize] };
    (0..d.len())
        .filter(|&o| spt.parent[o] != UNREACHED && d.obj_kind[o] != ObjectKind::Class)
        .map(|o| (d.obj_id[o], (id(spt.parent[o]), id(dom.idom[o]))))
        .collect()
}

/// The weak referent of `heap_graph_small` (the Blob 0x700, held only by the
/// `java.lang.ref.WeakReference` 0x600, whose type declares `java.lang.ref.Reference.referent`
/// itself) stays unreachable after `heapconv hprof` and the hprof reader: the writer hoists the
/// field into a `java.lang.ref.Reference` superclass. Reachable set, both trees and the
/// profiles' totals agree with the heap graph analysed directly.
#[test]
fn weak_referent_stays_weak_through_an_hprof_round_trip() {
    use heapconv::decode::Input;
    use heapconv::decode::hprof::{HprofReadOptions, read_hprof};
    use heapconv::decode::perfetto::heap_graph::{HeapGraphOptions, decode_heap_graphs_all};
    use heapconv::encode::hprof::{HprofOptions, encode_hprof};
    let mut input = Input::open(&data("traceconv/cases/heap_graph_small.pftrace"), u64::MAX).unwrap();
    let (dumps, _) = decode_heap_graphs_all(&mut input, &HeapGraphOptions::default()).unwrap();
    let graph = &dumps[0];
    let direct = trees_by_id(graph);
    assert_eq!(
        direct.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>(),
        [
            (0x100, (0, 0)),
            (0x200, (0x100, 0x100)),
            (0x300, (0x200, 0x200)),
            (0x400, (0x300, 0x300)),
            (0x500, (0x300, 0x300)),
            (0x600, (0, 0)),
        ]
    );
    let sums = |p: &heapconv::model::Profile| p.samples().fold((0i64, 0i64), |(c, s), (_, v)| (c + v[0], s + v[1]));
    let graph_heap = RootedHeap::new(graph);
    let graph_spt = sums(&graph_heap.spt_profile(&graph_heap.shortest_path_tree()));
    let graph_dom = graph_heap.dominators();
    assert_eq!(graph_spt, (6, 16 + 24 + 40 + 2000 + 32));
    for android in [false, true] {
        let mut bytes = Vec::new();
        encode_hprof(graph, &HprofOptions { android, ..Default::default() }, &mut bytes).unwrap();
        let back = read_hprof(&bytes[..], "heap_graph_small.hprof", &HprofReadOptions::default()).unwrap();
        let weak = back.obj_id.iter().position(|&i| i == 0x600).unwrap() as u32;
        assert_eq!(back.class_of(weak).kind, ClassKind::WeakReference);
        let sup = back.class_of(weak).superclass.map(|s| back.classes[s as usize].name.as_str());
        assert_eq!(sup, Some("java.lang.ref.Reference"), "android: {android}");
        assert_eq!(trees_by_id(&back), direct, "android: {android}");
        let heap = RootedHeap::new(&back);
        let dom = heap.dominators();
        // The hprof reader sizes arrays by their elements (2 × 4-byte ids, not the runtime's 40
        // bytes): otherwise the totals are the heap graph's.
        let spt = sums(&heap.spt_profile(&heap.shortest_path_tree()));
        assert_eq!(spt, (graph_spt.0, graph_spt.1 - 40 + 8), "android: {android}");
        let dom_totals = sums(&heap.dominator_profile(&dom));
        assert_eq!(dom_totals, spt, "android: {android}");
        assert_eq!(dom.retained[weak as usize], 32, "android: {android}");
        let g_weak = graph.obj_id.iter().position(|&i| i == 0x600).unwrap();
        assert_eq!(graph_dom.retained[g_weak], 32);
    }
}

// `heapconv convert TRACE` on Java heap graphs (fixtures encoded by the independent encoder,
// see tests/data/README.md).

fn convert_stdout(args: &[&str], code: i32) -> (String, String) {
    let o = heapconv_ok(args, code);
    (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap())
}

#[test]
fn convert_of_a_trace_with_only_heap_graphs_converts_them() {
    let trace = data("traceconv/cases/heap_graph_small.pftrace");
    let t = trace.to_str().unwrap();
    // No heapprofd dump: the heap graph is converted without --java-heap; dominator tree first.
    let (folded, _) = convert_stdout(&["convert", t, "--to", "folded"], 0);
    assert_eq!(folded, DOMINATOR_FOLDED);
    assert_eq!(convert_stdout(&["convert", t, "--java-heap", "--to", "folded"], 0).0, folded);
    // --by shortest-path --to pprof: the samples real traceconv wrote for this trace.
    let dir = tempfile::tempdir().unwrap();
    let pb = dir.path().join("spt.pb.gz");
    heapconv_ok(&["convert", t, "--by", "shortest-path", "--to", "pprof", "-o", pb.to_str().unwrap()], 0);
    let (types, mut ours) = normalize(&read_pprof(&pb));
    let (their_types, theirs) = normalize(&read_pprof(&expected("java_heap_dump.1.10.pb")));
    assert_eq!(types, their_types);
    for (_, frames) in &mut ours {
        for f in frames.iter_mut() {
            f.2.clear();
        }
    }
    assert_eq!(ours, theirs);
    // SVG: the root frame's width is what it retains.
    let (svg, _) = convert_stdout(&["convert", t, "--to", "svg"], 0);
    assert!(svg.starts_with("<?xml") && svg.contains("com.example.Holder [ROOT_JAVA_FRAME]"));
    assert!(svg.contains("2,080"), "Holder's retained bytes in its tooltip");
    // JSON: the top report.
    let (json, _) = convert_stdout(&["convert", t, "--to", "json"], 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!((v["pid"].as_u64(), v["process_name"].as_str()), (Some(10), Some("com.example.app")));
    assert_eq!((v["objects"].as_u64(), v["reachable_objects"].as_u64()), (Some(8), Some(6)));
    assert_eq!(v["reachable_shallow"], 2112);
    assert_eq!(v["classes"][0]["name"], "com.example.Holder");
    assert_eq!(v["classes"][0]["retained"], 2080);
    assert_eq!(v["retainers"][0]["class"], "com.example.Holder");
}

#[test]
fn convert_selects_heap_graph_dumps_by_pid_and_dump() {
    let trace = data("heapgraph/two_pids.pftrace");
    let t = trace.to_str().unwrap();
    // The last dump of each process: two, so a directory is needed.
    let (_, err) = convert_stdout(&["convert", t, "--to", "folded"], 2);
    assert!(err.contains("2 heap graph dumps match"), "{err}");
    assert!(
        err.contains("com.example.second (pid 60) at 1500 ns") && err.contains("com.example.first (pid 50) at 2000 ns")
    );
    let dir = tempfile::tempdir().unwrap();
    let out = format!("{}/", dir.path().join("last").display());
    heapconv_ok(&["convert", t, "--to", "folded", "-o", &out], 0);
    let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap();
    let names = |d: &str| {
        let mut v: Vec<String> = std::fs::read_dir(dir.path().join(d))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names("last"), ["java_heap_dump.1.60.folded", "java_heap_dump.2.50.folded"]);
    assert_eq!(read("last/java_heap_dump.1.60.folded"), "Second [ROOT_JNI_GLOBAL] 24\n");
    // pid 50's second dump: 0x30 and 0x40 are not reachable.
    assert_eq!(read("last/java_heap_dump.2.50.folded"), "First [ROOT_JAVA_FRAME] 16\n");
    let out = format!("{}/", dir.path().join("all").display());
    heapconv_ok(&["convert", t, "--dump", "all", "--to", "json", "-o", &out], 0);
    assert_eq!(names("all"), ["java_heap_dump.1.50.json", "java_heap_dump.2.60.json", "java_heap_dump.3.50.json"]);
    let v: serde_json::Value = serde_json::from_str(&read("all/java_heap_dump.3.50.json")).unwrap();
    assert_eq!(
        (v["timestamp"].as_i64(), v["objects"].as_u64(), v["reachable_objects"].as_u64()),
        (Some(2000), Some(3), Some(1))
    );
    // --pid and --dump N (the N-th dump of each process).
    let (one, _) = convert_stdout(&["convert", t, "--pid", "50", "--dump", "1", "--to", "json"], 0);
    let v: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!((v["pid"].as_u64(), v["timestamp"].as_i64(), v["objects"].as_u64()), (Some(50), Some(1000), Some(1)));
    let (_, err) = convert_stdout(&["convert", t, "--pid", "60", "--dump", "2"], 1);
    assert!(err.contains("no heap graph dump matches"), "{err}");
    let (_, err) = convert_stdout(&["convert", t, "--heap", "libc.malloc", "--java-heap"], 1);
    assert!(err.contains("no heap `libc.malloc`"), "{err}");
}

#[test]
fn convert_of_incomplete_heap_graphs_is_partial_and_flagged() {
    let trace = data("heapgraph/incomplete.pftrace");
    let t = trace.to_str().unwrap();
    // pid 41 lost a packet and has no roots: traceconv's error node, exit code 3 (partial).
    let (folded, err) = convert_stdout(&["convert", t, "--pid", "41", "--by", "shortest-path", "--to", "folded"], 3);
    assert_eq!(folded, "ERROR: INCOMPLETE GRAPH (try increasing buffer size) 1\n");
    assert!(err.contains("packets missing between index 0 and 2"), "{err}");
    // The pprof says so in its comments (DumpFlags::incomplete).
    let dir = tempfile::tempdir().unwrap();
    let pb = dir.path().join("open.pb.gz");
    heapconv_ok(&["convert", t, "--pid", "42", "--to", "pprof", "-o", pb.to_str().unwrap()], 3);
    let p = read_pprof(&pb);
    let comments: Vec<&str> = p.comment.iter().map(|&i| p.string_table[i as usize].as_str()).collect();
    assert!(comments.contains(&"data loss: incomplete"), "{comments:?}");
    assert!(comments.iter().any(|c| c.starts_with("incomplete heap dump: the trace ends before")), "{comments:?}");
    let (svg, _) = convert_stdout(&["convert", t, "--pid", "42", "--to", "svg"], 3);
    assert!(svg.contains("DATA LOSS: incomplete"), "the flame graph's subtitle says so");
    let (_, rows) = normalize(&p);
    assert_eq!(rows, [(vec![1, 20], vec![("Open [ROOT_JAVA_FRAME]".to_owned(), String::new(), "JAVA".to_owned())])]);
}

#[test]
fn java_heap_on_a_trace_without_heap_graphs_is_an_error() {
    let trace = data("heaps_and_procs.pftrace");
    let (_, err) = convert_stdout(&["convert", trace.to_str().unwrap(), "--java-heap"], 1);
    assert!(err.contains("the trace holds no Java heap graph"), "{err}");
}

// `heapconv top` on Java heaps: classes by retained size.

#[test]
fn top_of_heap_graphs_and_hprof_lists_classes_by_retained_size() {
    let trace = data("traceconv/cases/heap_graph_small.pftrace");
    let t = trace.to_str().unwrap();
    let (text, _) = convert_stdout(&["top", t, "-n", "3"], 0);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "com.example.app (pid 10), perfetto heap graph (traceconv/cases/heap_graph_small.pftrace), dump at 500 ns"
            .replace("traceconv/cases/heap_graph_small.pftrace", t)
    );
    assert_eq!(lines[3], "Classes by retained size (3 of 5):");
    // Retained 2080 B of 2112 reachable bytes; one instance of 16 B.
    assert_eq!(
        lines[5],
        "    2.03 KiB  98.48%          0 B         16 B          0 B          1          1  com.example.Holder"
    );
    assert_eq!(lines[7].split_whitespace().last(), Some("java.lang.Object[]"));
    let (json, _) = convert_stdout(&["top", t, "--json", "--by", "class", "-n", "0"], 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows: Vec<(String, u64, u64, u64, u64)> = v["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap();
            (
                c["name"].as_str().unwrap().to_owned(),
                n("instances"),
                n("reachable_instances"),
                n("shallow"),
                n("retained"),
            )
        })
        .collect();
    let row = |n: &str, i, r, s, ret| (n.to_owned(), i, r, s, ret);
    assert_eq!(
        rows,
        [
            row("com.example.Holder", 1, 1, 16, 2080),
            row("com.example.Cache", 1, 1, 24, 2064),
            row("java.lang.Object[]", 1, 1, 40, 2040),
            row("com.example.Blob", 4, 2, 4000, 2000),
            row("java.lang.ref.WeakReference", 1, 1, 32, 32),
        ]
    );
    // The same heap through `heapconv hprof`: the same table, but for the array (hprof sizes it
    // by its two 4-byte elements) and the class objects hprof adds (unreachable: no roots).
    let dir = tempfile::tempdir().unwrap();
    let hprof = dir.path().join("small.hprof");
    heapconv_ok(&["hprof", t, "-q", "-o", hprof.to_str().unwrap()], 0);
    let (json, _) = convert_stdout(&["top", hprof.to_str().unwrap(), "--json"], 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["source"], "JAVA PROFILE 1.0.2");
    assert_eq!((v["reachable_objects"].as_u64(), v["reachable_shallow"].as_u64()), (Some(6), Some(2112 - 32)));
    assert_eq!(v["classes"][0]["name"], "com.example.Holder");
    assert_eq!(v["classes"][0]["retained"], 2080 - 32);
    let blob = v["classes"].as_array().unwrap().iter().find(|c| c["name"] == "com.example.Blob").unwrap();
    assert_eq!((blob["reachable_instances"].as_u64(), blob["retained"].as_u64()), (Some(2), Some(2000)));
}

#[test]
fn top_selects_one_heap_graph_dump_and_refuses_profile_groupings() {
    let two = data("heapgraph/two_pids.pftrace");
    let t = two.to_str().unwrap();
    let (_, err) = convert_stdout(&["top", t], 2);
    assert!(err.contains("2 heap graph dumps match"), "{err}");
    let (json, _) = convert_stdout(&["top", t, "--pid", "50", "--dump", "1", "--json"], 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!((v["timestamp"].as_i64(), v["objects"].as_u64()), (Some(1000), Some(1)));
    assert_eq!(v["classes"][0]["name"], "First");
    let (json, _) = convert_stdout(&["top", t, "--pid", "60", "--json"], 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!((v["objects"].as_u64(), v["reachable_objects"].as_u64()), (Some(2), Some(1)));
    assert_eq!((v["classes"][0]["instances"].as_u64(), v["classes"][0]["retained"].as_u64()), (Some(2), Some(24)));
    // Groupings of profiles do not apply to heaps, nor classes to profiles.
    let (_, err) = convert_stdout(&["top", t, "--pid", "60", "--by", "stack"], 2);
    assert!(err.contains("shown by class"), "{err}");
    let malloc = data("heaps_and_procs.pftrace");
    let m = malloc.to_str().unwrap();
    convert_stdout(&["top", m, "--heap", "libc.malloc", "--pid", "10", "--by", "class"], 2);
    let (_, err) = convert_stdout(&["top", m, "--java-heap"], 1);
    assert!(err.contains("the trace holds no Java heap graph"), "{err}");
    // A heapprofd trace is still a profile table.
    let (text, _) = convert_stdout(&["top", m, "--heap", "libc.malloc", "--pid", "10"], 0);
    assert!(text.contains("by functions"), "{text}");
    // An incomplete dump: shown, flagged, exit code 3.
    let inc = data("heapgraph/incomplete.pftrace");
    let (text, err) = convert_stdout(&["top", inc.to_str().unwrap(), "--pid", "42"], 3);
    assert!(text.contains("INCOMPLETE: the trace ends before the dump's last packet"), "{text}");
    assert!(err.contains("partial"), "{err}");
}

#[test]
fn convert_reads_heap_graphs_from_standard_input() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let bytes = std::fs::read(data("heapgraph/two_pids.pftrace")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_heapconv"))
        .args(["convert", "-", "--pid", "60", "--to", "folded"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "Second [ROOT_JNI_GLOBAL] 24\n");
}
