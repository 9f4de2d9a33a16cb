//! Perfetto heap graphs: the decoder against hand-checked fixtures (`tests/data/heapgraph/`,
//! encoded by `../shared/tools/perfetto_encode.py` with Google's schema) and the real-traceconv
//! reference case, and the hprof writer read back record by record.

mod common;

use heapconv::decode::Input;
use heapconv::decode::perfetto::heap_graph::{HeapGraphOptions, decode_heap_graphs_all};
use heapconv::model::TraceReport;
use heapconv::model::heap::{
    BasicType, ClassKind, HeapDump, NO_FIELD, ObjIdx, ObjectKind, REF_DANGLING, REF_NULL, RootKind,
};

fn decode(path: &std::path::Path) -> (Vec<HeapDump>, TraceReport) {
    let mut input = Input::open(path, u64::MAX).unwrap();
    let (dumps, report) = decode_heap_graphs_all(&mut input, &HeapGraphOptions::default()).unwrap();
    for d in &dumps {
        d.validate().unwrap();
    }
    (dumps, report)
}

fn fixture(name: &str) -> (Vec<HeapDump>, TraceReport) {
    decode(&common::data(&format!("heapgraph/{name}.pftrace")))
}

fn obj(d: &HeapDump, id: u64) -> ObjIdx {
    d.obj_id.iter().position(|&i| i == id).unwrap_or_else(|| panic!("no object {id:#x}")) as ObjIdx
}

/// Object `id`'s references as (field name, target id or "null"/"dangling").
fn refs(d: &HeapDump, id: u64) -> Vec<(String, String)> {
    d.refs(obj(d, id))
        .map(|(f, t)| {
            let target = match t {
                REF_NULL => "null".to_owned(),
                REF_DANGLING => "dangling".to_owned(),
                t => format!("{:#x}", d.obj_id[t as usize]),
            };
            (d.field_name(f).to_owned(), target)
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

fn class_name(d: &HeapDump, id: u64) -> &str {
    &d.class_of(obj(d, id)).name
}

fn roots(d: &HeapDump) -> Vec<(u64, RootKind)> {
    d.roots.iter().map(|r| (d.obj_id[r.object as usize], r.kind)).collect()
}

#[test]
fn reference_case_heap_graph_small() {
    let (dumps, report) = decode(&common::data("traceconv/cases/heap_graph_small.pftrace"));
    assert_eq!(dumps.len(), 1);
    let d = &dumps[0];
    assert_eq!(d.pid, Some(10));
    assert_eq!(d.process_name.as_deref(), Some("com.example.app"));
    assert_eq!(d.timestamp, Some(500));
    assert_eq!(d.id_size, 8);
    assert!(d.incomplete.is_empty());
    assert_eq!(d.obj_id, [0x100, 0x200, 0x300, 0x400, 0x500, 0x600, 0x700, 0x800]);
    let names: Vec<&str> = d.classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "com.example.Holder",
            "com.example.Cache",
            "java.lang.Object[]",
            "com.example.Blob",
            "java.lang.ref.WeakReference",
            "java.lang.Object"
        ]
    );
    let holder = &d.classes[0];
    assert_eq!(holder.id, 2);
    assert_eq!(holder.superclass, Some(5));
    assert_eq!(holder.instance_size, 16);
    assert_eq!(holder.kind, ClassKind::Normal);
    assert_eq!(holder.location.as_deref(), Some("/data/app/base.apk"));
    assert_eq!(d.field_name(holder.fields[0].name), "com.example.Holder.cache");
    assert_eq!(d.classes[4].kind, ClassKind::WeakReference);
    assert_eq!(d.classes[2].kind, ClassKind::Array);
    assert_eq!(d.obj_self_size, [16, 24, 40, 1000, 1000, 32, 1000, 1000]);
    assert_eq!(d.obj_kind[2], ObjectKind::ObjectArray);
    assert_eq!(d.obj_len[2], 2);
    assert_eq!(d.obj_kind[3], ObjectKind::Instance);
    // A registry size on an object no Cleaner points at counts for nothing.
    assert!(d.obj_native_size.iter().all(|&n| n == 0));
    assert_eq!(refs(d, 0x100), pairs(&[("com.example.Holder.cache", "0x200")]));
    assert_eq!(refs(d, 0x200), pairs(&[("com.example.Cache.items", "0x300")]));
    assert_eq!(refs(d, 0x300), pairs(&[("com.example.Cache.items", "0x400"), ("com.example.Cache.items", "0x500")]));
    assert_eq!(refs(d, 0x600), pairs(&[("java.lang.ref.Reference.referent", "0x700")]));
    assert_eq!(roots(d), [(0x100, RootKind::JavaFrame), (0x600, RootKind::JniGlobal)]);
    assert_eq!(d.dangling_refs, 0);
    let g = &report.heap_graphs[0];
    assert_eq!((g.pid, g.objects, g.classes, g.references, g.roots), (10, 8, 6, 5, 2));
    assert_eq!(g.timestamp, Some(500));
    assert!(g.timestamp_converted);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn s_plus_field_names_walk_type_then_superclasses() {
    let (dumps, report) = fixture("s_plus_fields");
    let d = &dumps[0];
    // Object 1 → [2, 0, 2]: type fields [foo, setToNULL], superclass `a` none, then `b` [a.b].
    assert_eq!(
        refs(d, 1),
        pairs(&[
            ("FactoryProducerDelegateImplActor.foo", "0x2"),
            ("FactoryProducerDelegateImplActor.setToNULL", "null"),
            ("a.b", "0x2"),
        ])
    );
    // One reference more than the chain declares: left without a name.
    assert_eq!(
        refs(d, 3),
        pairs(&[
            ("FactoryProducerDelegateImplActor.foo", "0x1"),
            ("FactoryProducerDelegateImplActor.setToNULL", "0x2"),
            ("a.b", "null"),
            ("", "0x1"),
        ])
    );
    assert_eq!(d.refs(obj(d, 3)).nth(3).unwrap().0, NO_FIELD);
    // Explicit field ids win over the type's list; "int a.a" is split into type and name.
    assert_eq!(refs(d, 4), pairs(&[("a.a", "0x2"), ("FactoryProducerDelegateImplActor.foo", "0x3")]));
    // NOREFERENCES types name nothing.
    assert_eq!(refs(d, 5), pairs(&[("", "0x1")]));
    // reference_field_id_base is added to every non-null reference (mod 2^64).
    assert_eq!(
        refs(d, 6),
        pairs(&[
            ("FactoryProducerDelegateImplActor.foo", "0x1"),
            ("FactoryProducerDelegateImplActor.setToNULL", "null"),
            ("a.b", "0x2"),
        ])
    );
    // self_size 0 takes the type's object_size.
    assert_eq!(d.obj_self_size[obj(d, 2) as usize], 8);
    assert_eq!(d.obj_self_size[obj(d, 5) as usize], 16);
    // Superclasses and own fields per class.
    let actor = &d.classes[0];
    assert_eq!(actor.name, "FactoryProducerDelegateImplActor");
    let a = &d.classes[actor.superclass.unwrap() as usize];
    assert_eq!((a.name.as_str(), a.fields.len()), ("a", 0));
    let b = &d.classes[a.superclass.unwrap() as usize];
    assert_eq!(b.name, "b");
    assert_eq!(d.field_name(b.fields[0].name), "a.b");
    assert_eq!(b.fields[0].ty, BasicType::Object);
    // Two root entries for object 1 are kept as listed.
    assert_eq!(roots(d), [(1, RootKind::JavaFrame), (1, RootKind::JavaFrame)]);
    assert_eq!(report.heap_graphs[0].rooted_objects, 1);
    assert!(report.problems.iter().any(|p| p.message.contains("more references than their type")));
}

#[test]
fn id_delta_heap_type_inheritance_and_vm_internal_roots() {
    let (dumps, report) = fixture("deltas_and_heaps");
    let d = &dumps[0];
    assert_eq!(d.obj_id, [0x1000, 0x1010, 0x1020, 0x1040, 0x5000, 0x5008, 0x5010]);
    assert_eq!(d.heaps, ["unknown", "app", "zygote", "image"]);
    // image, inherited image, zygote, inherited zygote, app, inherited app, zygote.
    assert_eq!(d.obj_heap, [3, 3, 2, 2, 1, 1, 2]);
    // The type defined after its objects gives them its object_size (self_size 0).
    assert_eq!(d.obj_self_size, [8, 8, 16, 24, 16, 16, 8]);
    assert_eq!(class_name(d, 0x1040), "com.example.Late");
    assert_eq!(d.process_name.as_deref(), Some("com.example.deltas"));
    assert_eq!(d.pid, Some(77));
    // BOOTTIME is the trace clock: the packet time is kept.
    assert_eq!(d.timestamp, Some(5000));
    // Producer roots in order (0x9999 has no object), then VM_INTERNAL for every zygote and
    // boot-image object, in object order.
    assert_eq!(
        roots(d),
        [
            (0x5000, RootKind::JniLocal),
            (0x1010, RootKind::JniLocal),
            (0x5010, RootKind::JniLocal),
            (0x5000, RootKind::JniGlobal),
            (0x5000, RootKind::StickyClass),
            (0x5008, RootKind::JavaFrame),
            (0x1020, RootKind::JavaFrame),
            (0x1000, RootKind::VmInternal),
            (0x1010, RootKind::VmInternal),
            (0x1020, RootKind::VmInternal),
            (0x1040, RootKind::VmInternal),
            (0x5010, RootKind::VmInternal),
        ]
    );
    // Chosen kinds: STICKY_CLASS > JNI_GLOBAL > JNI_LOCAL > first seen.
    let kinds = d.root_kinds();
    let kind = |id| kinds[obj(d, id) as usize];
    assert_eq!(kind(0x5000), Some(RootKind::StickyClass));
    assert_eq!(kind(0x1010), Some(RootKind::JniLocal));
    assert_eq!(kind(0x5010), Some(RootKind::JniLocal));
    assert_eq!(kind(0x1020), Some(RootKind::JavaFrame));
    assert_eq!(kind(0x1000), Some(RootKind::VmInternal));
    assert_eq!(kind(0x1040), Some(RootKind::VmInternal));
    assert_eq!(kind(0x5008), Some(RootKind::JavaFrame));
    assert!(report.problems.iter().any(|p| p.message.contains("1 root(s) name ids no object")));
}

#[test]
fn continued_dump_with_forward_references() {
    let (dumps, report) = fixture("continued");
    assert_eq!(dumps.len(), 2);
    let d = &dumps[0];
    assert_eq!(d.pid, Some(31));
    assert_eq!(d.timestamp, Some(900));
    assert!(d.incomplete.is_empty(), "{:?}", d.incomplete);
    assert_eq!(d.obj_id, [0x10, 0x20, 0x30]);
    assert_eq!(d.obj_self_size, [32, 12, 100]);
    let node = d.class_of(0);
    assert_eq!(node.name, "Node");
    assert_eq!(node.location.as_deref(), Some("/system/framework/nodes.jar"));
    assert_eq!(refs(d, 0x10), pairs(&[("Node.next", "0x20"), ("Node.other", "0x30")]));
    assert_eq!(refs(d, 0x30), pairs(&[("Leaf.parent", "0x10")]));
    assert_eq!(roots(d), [(0x10, RootKind::ThreadObject)]);
    assert_eq!(report.heap_graphs[0].packets, 3);
    // Sequence 5: the packet naming pid 33 is dropped, objects and roots.
    let e = &dumps[1];
    assert_eq!(e.pid, Some(32));
    assert_eq!(e.obj_id, [0x100]);
    assert!(e.roots.is_empty());
    assert!(report.problems.iter().any(|p| p.message.contains("1 object(s) and 1 root(s) dropped")));
}

#[test]
fn index_gaps_and_unfinished_dumps_are_incomplete() {
    let (dumps, report) = fixture("incomplete");
    assert_eq!(dumps.len(), 2);
    let gap = &dumps[0];
    assert_eq!(gap.pid, Some(41));
    assert_eq!(gap.obj_id, [0x1, 0x2]);
    assert!(gap.roots.is_empty());
    assert_eq!(gap.incomplete, ["packets missing between index 0 and 2"]);
    let open = &dumps[1];
    assert_eq!(open.pid, Some(42));
    assert_eq!(open.obj_id, [0x7]);
    assert_eq!(open.incomplete, ["the trace ends before the dump's last packet (continued = false)"]);
    assert_eq!(report.heap_graphs.len(), 2);
    assert_eq!(report.heap_graphs[1].incomplete.len(), 1);
    assert!(report.damage.is_none());
}

#[test]
fn two_pids_and_two_dumps() {
    let (dumps, report) = fixture("two_pids");
    let got: Vec<(Option<u32>, Option<i64>, usize)> = dumps.iter().map(|d| (d.pid, d.timestamp, d.len())).collect();
    assert_eq!(got, [(Some(50), Some(1000), 1), (Some(60), Some(1500), 2), (Some(50), Some(2000), 3)]);
    assert_eq!(dumps[1].process_name.as_deref(), Some("com.example.second"));
    let idx: Vec<(u64, usize)> = report.heap_graphs.iter().map(|g| (g.pid, g.index)).collect();
    assert_eq!(idx, [(50, 0), (60, 0), (50, 1)]);
    // Only the pids asked for are built; all are reported.
    let mut input = Input::open(&common::data("heapgraph/two_pids.pftrace"), u64::MAX).unwrap();
    let opts = HeapGraphOptions { pids: vec![60], ..Default::default() };
    let (only, report) = decode_heap_graphs_all(&mut input, &opts).unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].pid, Some(60));
    assert_eq!(report.heap_graphs.len(), 3);
}

#[test]
fn cleaner_native_sizes() {
    let (dumps, _) = fixture("cleaner");
    let d = &dumps[0];
    let native = |id| d.obj_native_size[obj(d, id) as usize];
    // 4097 with bit 0 cleared, plus 100; the cleaned (next = itself) and null-referent
    // Cleaners add nothing.
    assert_eq!(native(0x10), 4096 + 100);
    for id in [0x20, 0x21, 0x22, 0x23, 0x30, 0x31, 0x40, 0x41] {
        assert_eq!(native(id), 0, "{id:#x}");
    }
    assert_eq!(
        refs(d, 0x20),
        pairs(&[
            ("sun.misc.Cleaner.thunk", "0x30"),
            ("sun.misc.Cleaner.next", "null"),
            ("java.lang.ref.Reference.referent", "0x10"),
        ])
    );
}

#[test]
fn weak_soft_phantom_and_finalizer_references() {
    let (dumps, _) = fixture("references");
    let d = &dumps[0];
    let expect = [
        (0x100, "java.lang.ref.WeakReference", ClassKind::WeakReference, "0x201", true),
        (0x101, "java.lang.ref.SoftReference", ClassKind::SoftReference, "0x202", false),
        (0x102, "java.lang.ref.PhantomReference", ClassKind::PhantomReference, "0x203", true),
        (0x103, "java.lang.ref.FinalizerReference", ClassKind::FinalizerReference, "0x204", true),
    ];
    for (id, name, kind, referent, weak) in expect {
        let c = d.class_of(obj(d, id));
        assert_eq!((c.name.as_str(), c.kind, c.kind.referent_is_weak()), (name, kind, weak));
        assert_eq!(
            refs(d, id),
            pairs(&[("java.lang.ref.Reference.referent", referent), ("java.lang.ref.Reference.queue", "null")])
        );
    }
}

#[test]
fn class_objects_arrays_and_runtime_internal_references() {
    let (dumps, report) = fixture("shapes");
    let d = &dumps[0];
    let kind = |id| d.obj_kind[obj(d, id) as usize];
    let len = |id| d.obj_len[obj(d, id) as usize];
    assert_eq!(kind(0x100), ObjectKind::Instance);
    assert_eq!((kind(0x200), len(0x200)), (ObjectKind::ObjectArray, 3));
    // ART arrays: 12-byte header (16 for 8-byte elements): int[] of 52 bytes holds 10.
    assert_eq!((kind(0x300), len(0x300)), (ObjectKind::PrimitiveArray(BasicType::Int), 10));
    assert_eq!((kind(0x310), len(0x310)), (ObjectKind::PrimitiveArray(BasicType::Long), 3));
    assert_eq!((kind(0x320), len(0x320)), (ObjectKind::PrimitiveArray(BasicType::Byte), 7));
    // An ARRAY-kind type whose name says nothing, without references: bytes.
    assert_eq!((kind(0x330), len(0x330)), (ObjectKind::PrimitiveArray(BasicType::Byte), 8));
    assert_eq!(kind(0x400), ObjectKind::Class);
    assert_eq!(kind(0x420), ObjectKind::Instance);
    // Class objects become their classes' `object`, their references the statics.
    let node = d.classes.iter().find(|c| c.name == "com.example.Node").unwrap();
    assert_eq!(node.object, Some(obj(d, 0x400)));
    assert_eq!(node.classloader_id, 0x700);
    let statics: Vec<(&str, u64)> =
        node.static_refs.iter().map(|&(f, t)| (d.field_name(f), d.obj_id[t as usize])).collect();
    assert_eq!(
        statics,
        [("com.example.Node.sRoot", 0x100), ("java.lang.Class.superClass", 0x420), ("java.lang.Class.classLoader", 0x700)]
    );
    let sub = d.classes.iter().find(|c| c.name == "com.example.Sub").unwrap();
    assert_eq!(sub.object, Some(obj(d, 0x410)));
    assert_eq!(d.classes[sub.superclass.unwrap() as usize].name, "com.example.Node");
    // Sub's references walk Sub's fields, then Node's, then Object's.
    assert_eq!(
        refs(d, 0x110),
        pairs(&[
            ("com.example.Sub.counts", "0x300"),
            ("com.example.Node.next", "null"),
            ("com.example.Node.items", "null"),
            ("java.lang.Object.shadow$_klass_", "0x410"),
        ])
    );
    // Runtime-internal references follow the field references, without a name.
    assert_eq!(
        refs(d, 0x700),
        pairs(&[("java.lang.Object.shadow$_klass_", "0x420"), ("", "0x400"), ("", "0x410")])
    );
    // Zygote and image objects are VM_INTERNAL roots after the producer's 18 entries.
    let r = roots(d);
    assert_eq!(r.len(), 18 + 2);
    assert_eq!(r[18..], [(0x340, RootKind::VmInternal), (0x420, RootKind::VmInternal)]);
    assert_eq!(d.obj_heap[obj(d, 0x340) as usize], 2);
    assert_eq!(d.obj_heap[obj(d, 0x420) as usize], 3);
    assert_eq!(d.obj_heap[obj(d, 0x430) as usize], 1);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
