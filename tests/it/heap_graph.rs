//! Perfetto heap graphs: the decoder against hand-checked fixtures (`tests/data/heapgraph/`,
//! encoded by `../shared/tools/perfetto_encode.py` with Google's schema) and the real-traceconv
//! reference case, and the hprof writer read back record by record.

use crate::common::obj;
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
    decode(&crate::common::data(&format!("heapgraph/{name}.pftrace")))
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
    let (dumps, report) = decode(&crate::common::data("traceconv/cases/heap_graph_small.pftrace"));
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
    // The packet time is on CLOCK_MONOTONIC_COARSE: converted through the snapshot.
    assert_eq!(d.timestamp, Some(6000));
    assert_eq!(report.heap_graphs[0].raw_timestamp, Some(5000));
    assert!(report.heap_graphs[0].timestamp_converted);
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
fn gzip_and_compressed_packets_give_the_same_dumps() {
    let (plain, _) = fixture("continued");
    for variant in ["continued.pftrace.gz", "continued.zlib.pftrace"] {
        let (dumps, report) = decode(&crate::common::data(&format!("heapgraph/{variant}")));
        assert_eq!(dumps.len(), plain.len(), "{variant}");
        for (a, b) in dumps.iter().zip(&plain) {
            assert_eq!(format!("{a:?}").replace(variant, "X"), format!("{b:?}").replace("continued.pftrace", "X"));
        }
        if variant.ends_with(".gz") {
            assert!(report.gzipped);
        } else {
            assert_eq!(report.compressed_bundles, 3);
        }
    }
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
    let mut input = Input::open(&crate::common::data("heapgraph/two_pids.pftrace"), u64::MAX).unwrap();
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
        [
            ("com.example.Node.sRoot", 0x100),
            ("java.lang.Class.superClass", 0x420),
            ("java.lang.Class.classLoader", 0x700)
        ]
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
    assert_eq!(refs(d, 0x700), pairs(&[("java.lang.Object.shadow$_klass_", "0x420"), ("", "0x400"), ("", "0x410")]));
    // Zygote and image objects are VM_INTERNAL roots after the producer's 18 entries.
    let r = roots(d);
    assert_eq!(r.len(), 18 + 2);
    assert_eq!(r[18..], [(0x340, RootKind::VmInternal), (0x420, RootKind::VmInternal)]);
    assert_eq!(d.obj_heap[obj(d, 0x340) as usize], 2);
    assert_eq!(d.obj_heap[obj(d, 0x420) as usize], 3);
    assert_eq!(d.obj_heap[obj(d, 0x430) as usize], 1);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

// ---------------------------------------------------------------------------------------------
// The hprof writer, checked by a small record walker written for these tests (independent of
// the writer: it follows the HPROF layout of ../shared/formats/ddm-alloc-and-hprof.md §B).

use heapconv::encode::hprof::{HprofOptions, HprofSummary, encode_hprof};
use std::collections::BTreeMap;

/// One heap-dump sub-record.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sub {
    Root { tag: u8, id: u64, extra: Vec<u8> },
    Class { id: u64, super_id: u64, loader: u64, size: u32, statics: Vec<(u64, u8, u64)>, fields: Vec<(u64, u8)> },
    Instance { id: u64, class: u64, data: Vec<u8> },
    ObjArray { id: u64, class: u64, elems: Vec<u64> },
    PrimArray { id: u64, ty: u8, n: u32, zero: bool },
    HeapInfo { heap: u32, name: u64 },
}

#[derive(Debug, Default)]
struct Walked {
    version: String,
    id_size: u8,
    timestamp: u64,
    strings: BTreeMap<u64, String>,
    /// (serial, class id, stack serial, name id)
    load_classes: Vec<(u32, u64, u32, u64)>,
    /// (serial, thread serial, frames)
    traces: Vec<(u32, u32, u32)>,
    /// Top-level tags in order, segments collapsed to one entry each.
    tags: Vec<u8>,
    segments: Vec<Vec<Sub>>,
    segment_lengths: Vec<usize>,
}

impl Walked {
    fn subs(&self) -> impl Iterator<Item = &Sub> {
        self.segments.iter().flatten()
    }
    fn string(&self, id: u64) -> &str {
        &self.strings[&id]
    }
    fn class_id(&self, name: &str) -> u64 {
        let sid = self.strings.iter().find(|(_, s)| s.as_str() == name).map(|(i, _)| *i).unwrap();
        self.load_classes.iter().find(|l| l.3 == sid).unwrap_or_else(|| panic!("no LOAD_CLASS {name}")).1
    }
    fn class(&self, id: u64) -> &Sub {
        self.subs()
            .find(|s| matches!(s, Sub::Class { id: i, .. } if *i == id))
            .unwrap_or_else(|| panic!("no class {id:#x}"))
    }
    fn instance(&self, id: u64) -> (u64, &[u8]) {
        match self.subs().find(|s| matches!(s, Sub::Instance { id: i, .. } if *i == id)) {
            Some(Sub::Instance { class, data, .. }) => (*class, data),
            _ => panic!("no instance {id:#x}"),
        }
    }
    /// Instance field layout of a class and its superclasses: (name, type) in data order.
    fn layout(&self, mut class: u64) -> Vec<(String, u8)> {
        let mut out = Vec::new();
        while class != 0 {
            let Sub::Class { super_id, fields, .. } = self.class(class) else { unreachable!() };
            out.extend(fields.iter().map(|(n, t)| (self.string(*n).to_owned(), *t)));
            class = *super_id;
        }
        out
    }
    /// An instance's fields by name (references as ids; primitives must be zero).
    fn fields(&self, id: u64) -> Vec<(String, u64)> {
        let (class, data) = self.instance(id);
        let mut at = 0;
        let mut out = Vec::new();
        for (name, ty) in self.layout(class) {
            let size = type_size(ty, self.id_size);
            let v = be(&data[at..at + size]);
            at += size;
            if ty == 2 {
                out.push((name, v));
            } else {
                assert_eq!(v, 0, "primitive field {name} of {id:#x} is not zero");
            }
        }
        assert_eq!(at, data.len(), "instance {id:#x}: data length differs from the class layout");
        out
    }
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0, |a, &x| (a << 8) | u64::from(x))
}

fn type_size(ty: u8, id_size: u8) -> usize {
    match ty {
        2 => id_size as usize,
        4 | 8 => 1,
        5 | 9 => 2,
        6 | 10 => 4,
        7 | 11 => 8,
        _ => panic!("bad basic type {ty}"),
    }
}

struct Cur<'a> {
    b: &'a [u8],
    at: usize,
    id: u8,
}

impl Cur<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        assert!(self.at + n <= self.b.len(), "read past the end at {} (+{n} of {})", self.at, self.b.len());
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        s
    }
    fn u1(&mut self) -> u8 {
        self.take(1)[0]
    }
    fn u2(&mut self) -> u64 {
        be(self.take(2))
    }
    fn u4(&mut self) -> u64 {
        be(self.take(4))
    }
    fn id(&mut self) -> u64 {
        let n = self.id as usize;
        be(self.take(n))
    }
    fn done(&self) -> bool {
        self.at == self.b.len()
    }
}

/// Walks an hprof file record by record, checking every length.
fn walk(bytes: &[u8]) -> Walked {
    let nul = bytes.iter().position(|&b| b == 0).expect("NUL-terminated version");
    let mut w = Walked { version: String::from_utf8(bytes[..nul].to_vec()).unwrap(), ..Default::default() };
    let mut c = Cur { b: bytes, at: nul + 1, id: 4 };
    w.id_size = c.u4() as u8;
    assert!(w.id_size == 4 || w.id_size == 8);
    c.id = w.id_size;
    w.timestamp = (c.u4() << 32) | c.u4();
    while !c.done() {
        let tag = c.u1();
        assert_eq!(c.u4(), 0, "record time");
        let len = c.u4() as usize;
        let body = c.take(len).to_vec();
        let mut r = Cur { b: &body, at: 0, id: w.id_size };
        if tag != 0x1C || w.tags.last() != Some(&0x1C) {
            w.tags.push(tag);
        }
        match tag {
            0x01 => {
                let id = r.id();
                let s = String::from_utf8(r.take(len - w.id_size as usize).to_vec()).unwrap();
                assert!(w.strings.insert(id, s).is_none(), "string id {id} twice");
            }
            0x02 => w.load_classes.push((r.u4() as u32, r.id(), r.u4() as u32, r.id())),
            0x05 => {
                let (serial, thread, n) = (r.u4() as u32, r.u4() as u32, r.u4() as u32);
                for _ in 0..n {
                    r.id();
                }
                w.traces.push((serial, thread, n));
            }
            0x0C | 0x1C => {
                w.segment_lengths.push(len);
                let mut subs = Vec::new();
                while !r.done() {
                    subs.push(sub(&mut r));
                }
                w.segments.push(subs);
            }
            0x2C => assert_eq!(len, 0),
            t => panic!("unexpected record tag {t:#x}"),
        }
        assert!(r.done(), "record {tag:#x}: {} of {len} bytes read", r.at);
    }
    w
}

fn sub(r: &mut Cur<'_>) -> Sub {
    let tag = r.u1();
    let ids = r.id as usize;
    match tag {
        0xFF | 0x05 | 0x07 | 0x89 | 0x8A | 0x8B | 0x8C | 0x8D | 0x90 => Sub::Root { tag, id: r.id(), extra: vec![] },
        0x01 => Sub::Root { tag, id: r.id(), extra: r.take(ids).to_vec() },
        0x02 | 0x03 | 0x08 | 0x8E => Sub::Root { tag, id: r.id(), extra: r.take(8).to_vec() },
        0x04 | 0x06 => Sub::Root { tag, id: r.id(), extra: r.take(4).to_vec() },
        0x20 => {
            let id = r.id();
            assert_eq!(r.u4(), 1, "class stack serial");
            let super_id = r.id();
            let loader = r.id();
            for _ in 0..4 {
                assert_eq!(r.id(), 0);
            }
            let size = r.u4() as u32;
            assert_eq!(r.u2(), 0, "constant pool");
            let mut statics = Vec::new();
            for _ in 0..r.u2() {
                let (name, ty) = (r.id(), r.u1());
                let v = be(r.take(type_size(ty, r.id)));
                statics.push((name, ty, v));
            }
            let mut fields = Vec::new();
            for _ in 0..r.u2() {
                fields.push((r.id(), r.u1()));
            }
            Sub::Class { id, super_id, loader, size, statics, fields }
        }
        0x21 => {
            let id = r.id();
            assert_eq!(r.u4(), 1);
            let class = r.id();
            let n = r.u4() as usize;
            Sub::Instance { id, class, data: r.take(n).to_vec() }
        }
        0x22 => {
            let id = r.id();
            assert_eq!(r.u4(), 1);
            let n = r.u4();
            let class = r.id();
            let elems = (0..n).map(|_| r.id()).collect();
            Sub::ObjArray { id, class, elems }
        }
        0x23 => {
            let id = r.id();
            assert_eq!(r.u4(), 1);
            let n = r.u4() as u32;
            let ty = r.u1();
            let data = r.take(n as usize * type_size(ty, r.id));
            Sub::PrimArray { id, ty, n, zero: data.iter().all(|&b| b == 0) }
        }
        0xFE => Sub::HeapInfo { heap: r.u4() as u32, name: r.id() },
        t => panic!("unexpected sub-record {t:#x} at {}", r.at),
    }
}

fn hprof(d: &HeapDump, opts: &HprofOptions) -> (Vec<u8>, HprofSummary) {
    let mut out = Vec::new();
    let s = encode_hprof(d, opts, &mut out).unwrap();
    assert_eq!(s.bytes, out.len() as u64);
    let mut again = Vec::new();
    encode_hprof(d, opts, &mut again).unwrap();
    assert!(out == again, "hprof output is not deterministic");
    (out, s)
}

#[test]
fn hprof_of_the_reference_case() {
    let (dumps, _) = decode(&crate::common::data("traceconv/cases/heap_graph_small.pftrace"));
    let d = &dumps[0];
    let (bytes, s) = hprof(d, &HprofOptions::default());
    let w = walk(&bytes);
    assert_eq!(w.version, "JAVA PROFILE 1.0.2");
    assert_eq!((w.id_size, s.id_size, w.timestamp), (4, 4, 0));
    // STRINGs, LOAD_CLASSes, the placeholder STACK_TRACE, segment(s), HEAP_DUMP_END.
    let kinds: Vec<u8> = w.tags.iter().copied().filter(|&t| t != 0x01).collect::<Vec<_>>();
    assert_eq!(w.tags.first(), Some(&0x01));
    assert_eq!(kinds.last(), Some(&0x2C));
    assert_eq!(w.traces, [(1, 0, 0)]);
    let names: Vec<&str> = w.load_classes.iter().map(|l| w.string(l.3)).collect();
    assert_eq!(
        names,
        [
            "com.example.Holder",
            "com.example.Cache",
            "java.lang.Object[]",
            "com.example.Blob",
            "java.lang.ref.WeakReference",
            "java.lang.Object",
            // Synthetic: the WeakReference type declares `java.lang.ref.Reference.referent`
            // itself; in hprof the field belongs to java.lang.ref.Reference, its superclass.
            "java.lang.ref.Reference"
        ]
    );
    assert_eq!(w.load_classes.iter().map(|l| l.0).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6, 7]);
    assert!(w.load_classes.iter().all(|l| l.2 == 1));
    // No class objects in the trace: fresh class ids above every object id.
    assert_eq!(
        w.load_classes.iter().map(|l| l.1).collect::<Vec<_>>(),
        [0x801, 0x802, 0x803, 0x804, 0x805, 0x806, 0x807]
    );
    let reference = w.class_id("java.lang.ref.Reference");
    let Sub::Class { super_id, size, fields, .. } = w.class(reference) else { unreachable!() };
    assert_eq!((*super_id, *size), (w.class_id("java.lang.Object"), 8 + 4));
    assert_eq!(fields.iter().map(|(n, t)| (w.string(*n), *t)).collect::<Vec<_>>(), [("referent", 2)]);
    let Sub::Class { super_id, .. } = w.class(w.class_id("java.lang.ref.WeakReference")) else { unreachable!() };
    assert_eq!(*super_id, reference);
    let roots: Vec<&Sub> = w.subs().filter(|s| matches!(s, Sub::Root { .. })).collect();
    assert_eq!(
        roots,
        [
            &Sub::Root { tag: 0x03, id: 0x100, extra: vec![0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF] },
            &Sub::Root { tag: 0x01, id: 0x600, extra: vec![0; 4] },
        ]
    );
    let object = w.class_id("java.lang.Object");
    let holder = w.class_id("com.example.Holder");
    let Sub::Class { super_id, size, fields, statics, .. } = w.class(holder) else { unreachable!() };
    assert_eq!((*super_id, *size), (object, 16));
    assert!(statics.is_empty());
    let f: Vec<(&str, u8)> = fields.iter().map(|(n, t)| (w.string(*n), *t)).collect();
    assert_eq!(f, [("cache", 2), ("$primitive$0", 10)]);
    assert_eq!(w.layout(holder).len(), 3);
    assert_eq!(w.fields(0x100), [("cache".to_owned(), 0x200)]);
    assert_eq!(w.fields(0x200), [("items".to_owned(), 0x300)]);
    assert_eq!(w.fields(0x600), [("referent".to_owned(), 0x700)]);
    // With 4-byte ids, instance data is exactly the type's object_size.
    for id in [0x100, 0x200, 0x400, 0x500, 0x600, 0x700, 0x800] {
        let (class, data) = w.instance(id);
        let Sub::Class { size, .. } = w.class(class) else { unreachable!() };
        assert_eq!(data.len(), *size as usize, "{id:#x}");
        w.fields(id);
    }
    let arrays: Vec<&Sub> = w.subs().filter(|s| matches!(s, Sub::ObjArray { .. })).collect();
    assert_eq!(
        arrays,
        [&Sub::ObjArray { id: 0x300, class: w.class_id("java.lang.Object[]"), elems: vec![0x400, 0x500] }]
    );
    assert_eq!((s.classes, s.instances, s.object_arrays, s.primitive_arrays, s.roots), (7, 7, 1, 0, 2));
    assert_eq!(s.synthetic_ids, 7);
    assert_eq!(w.segments.len(), 1);
}

#[test]
fn hprof_of_class_objects_arrays_and_roots() {
    let (dumps, _) = fixture("shapes");
    let d = &dumps[0];
    let (bytes, s) = hprof(d, &HprofOptions::default());
    let w = walk(&bytes);
    assert_eq!(w.version, "JAVA PROFILE 1.0.2");
    assert!(!w.subs().any(|s| matches!(s, Sub::HeapInfo { .. })));
    // Class objects are the classes: Node's id is its class object's, no class is named
    // java.lang.Class<...>, and the orphan class object becomes class Orphan.
    let names: Vec<&str> = w.load_classes.iter().map(|l| w.string(l.3)).collect();
    assert!(!names.iter().any(|n| n.starts_with("java.lang.Class<")), "{names:?}");
    assert_eq!(names.iter().filter(|n| **n == "com.example.Node").count(), 1);
    assert_eq!(w.class_id("com.example.Node"), 0x400);
    assert_eq!(w.class_id("com.example.Sub"), 0x410);
    assert_eq!(w.class_id("com.example.Orphan"), 0x430);
    let Sub::Class { super_id, loader, statics, .. } = w.class(0x400) else { unreachable!() };
    assert_eq!((*super_id, *loader), (w.class_id("java.lang.Object"), 0x700));
    let st: Vec<(&str, u8, u64)> = statics.iter().map(|(n, t, v)| (w.string(*n), *t, *v)).collect();
    assert_eq!(st, [("sRoot", 2, 0x100), ("$class$superClass", 2, 0x420), ("$class$classLoader", 2, 0x700)]);
    let Sub::Class { super_id, .. } = w.class(0x410) else { unreachable!() };
    assert_eq!(*super_id, 0x400);
    let Sub::Class { statics, .. } = w.class(0x430) else { unreachable!() };
    assert_eq!(statics.len(), 1);
    // Instance data in class-then-superclass order, primitives zero.
    assert_eq!(
        w.fields(0x110),
        [
            ("counts".to_owned(), 0x300),
            ("next".to_owned(), 0),
            ("items".to_owned(), 0),
            ("shadow$_klass_".to_owned(), 0x410)
        ]
    );
    assert_eq!(w.instance(0x110).1.len(), 36);
    // The class loader's runtime-internal references: an extra field to a synthetic Object[].
    let loader_fields = w.fields(0x700);
    assert_eq!(loader_fields[0].0, "runtimeInternalObjects");
    let internal = loader_fields[0].1;
    assert_eq!(loader_fields[1], ("shadow$_klass_".to_owned(), 0x420));
    let arr = w.subs().find(|s| matches!(s, Sub::ObjArray { id, .. } if *id == internal)).unwrap();
    assert_eq!(
        arr,
        &Sub::ObjArray { id: internal, class: w.class_id("java.lang.Object[]"), elems: vec![0x400, 0x410] }
    );
    assert!(internal > 0x700);
    // Arrays.
    let prim: BTreeMap<u64, (u8, u32, bool)> = w
        .subs()
        .filter_map(|s| match s {
            Sub::PrimArray { id, ty, n, zero } => Some((*id, (*ty, *n, *zero))),
            _ => None,
        })
        .collect();
    assert_eq!(
        prim.into_iter().collect::<Vec<_>>(),
        [(0x300, (10, 10, true)), (0x310, (11, 3, true)), (0x320, (8, 7, true)), (0x330, (8, 8, true))]
    );
    assert!(
        w.subs().any(|s| *s
            == Sub::ObjArray { id: 0x200, class: w.class_id("java.lang.Object[]"), elems: vec![0x100, 0, 0x110] })
    );
    // Roots: standard tags; Android kinds become ROOT_UNKNOWN, once per object.
    let roots: Vec<(u8, u64)> =
        w.subs().filter_map(|s| if let Sub::Root { tag, id, .. } = s { Some((*tag, *id)) } else { None }).collect();
    assert_eq!(
        roots,
        [
            (0xFF, 0x320),
            (0x01, 0x700),
            (0x02, 0x100),
            (0x03, 0x100),
            (0x03, 0x310),
            (0x04, 0x330),
            (0x05, 0x400),
            (0x05, 0x410),
            (0x05, 0x430),
            (0x06, 0x200),
            (0x07, 0x200),
            (0x08, 0x110),
            (0xFF, 0x340),
            (0xFF, 0x300),
            (0xFF, 0x420),
        ]
    );
    let thread = w.subs().find(|s| matches!(s, Sub::Root { tag: 0x08, .. })).unwrap();
    assert_eq!(thread, &Sub::Root { tag: 0x08, id: 0x110, extra: vec![0, 0, 0, 1, 0, 0, 0, 1] });
    assert_eq!(s.roots, 15);
    // Every object is in the file once: instances, arrays or (class objects) classes.
    let mut ids: Vec<u64> = w
        .subs()
        .filter_map(|s| match s {
            Sub::Instance { id, .. } | Sub::ObjArray { id, .. } | Sub::PrimArray { id, .. } => Some(*id),
            Sub::Class { id, .. } if *id <= 0x700 => Some(*id),
            _ => None,
        })
        .filter(|&id| id != internal)
        .collect();
    ids.sort_unstable();
    let mut want = d.obj_id.clone();
    want.sort_unstable();
    assert_eq!(ids, want);
}

#[test]
fn android_hprof_switches_heaps_and_hprof_conv_reads_it() {
    let (dumps, _) = fixture("shapes");
    let d = &dumps[0];
    let opts = HprofOptions { android: true, timestamp_ms: 0x1_0000_0002, ..Default::default() };
    let (bytes, s) = hprof(d, &opts);
    let w = walk(&bytes);
    assert_eq!(w.version, "JAVA PROFILE 1.0.3");
    assert_eq!((w.id_size, w.timestamp), (4, 0x1_0000_0002));
    // Heap switches: image and zygote objects under their heaps, the rest under app.
    let mut heap = 0u32;
    let mut on_heap: BTreeMap<u64, u32> = BTreeMap::new();
    for seg in &w.segments {
        heap = 0;
        for s in seg {
            match s {
                Sub::HeapInfo { heap: h, name } => {
                    heap = *h;
                    let want = match h {
                        0x41 => "app",
                        0x5A => "zygote",
                        0x49 => "image",
                        _ => "default",
                    };
                    assert_eq!(w.string(*name), want);
                }
                Sub::Instance { id, .. } | Sub::ObjArray { id, .. } | Sub::PrimArray { id, .. } => {
                    on_heap.insert(*id, heap);
                }
                Sub::Class { id, .. } => {
                    on_heap.insert(*id, heap);
                }
                Sub::Root { .. } => assert_eq!(heap, 0, "roots come first, on the default heap"),
            }
        }
    }
    let _ = heap;
    assert_eq!(on_heap[&0x340], 0x5A);
    assert_eq!(on_heap[&0x420], 0x49);
    assert_eq!(on_heap[&0x100], 0x41);
    assert_eq!(on_heap[&0x400], 0x41, "Node's class dump lives where its class object does");
    assert!(s.heap_infos >= 3);
    // Android root tags.
    let tags: Vec<u8> =
        w.subs().filter_map(|s| if let Sub::Root { tag, .. } = s { Some(*tag) } else { None }).collect();
    for t in [0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x8E] {
        assert!(tags.contains(&t), "root tag {t:#x} missing from {tags:x?}");
    }
    assert_eq!(s.roots, 19);

    // Android's hprof-conv accepts it; its 1.0.2 output walks cleanly and keeps every
    // record but the heap infos (JNI monitor roots lose their thread and depth).
    let Some(conv) = crate::common::hprof_conv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (inp, outp, outz) = (dir.path().join("a.hprof"), dir.path().join("c.hprof"), dir.path().join("z.hprof"));
    std::fs::write(&inp, &bytes).unwrap();
    for (args, out) in [(vec![], &outp), (vec!["-z"], &outz)] {
        let st = std::process::Command::new(&conv).args(&args).arg(&inp).arg(out).output().unwrap();
        assert!(st.status.success(), "hprof-conv {args:?} failed: {}", String::from_utf8_lossy(&st.stderr));
    }
    let conv_bytes = std::fs::read(&outp).unwrap();
    assert_eq!(conv_bytes.len() as u64, s.bytes - 9 * s.heap_infos - 8);
    let c = walk(&conv_bytes);
    assert_eq!(c.version, "JAVA PROFILE 1.0.2");
    assert!(!c.subs().any(|s| matches!(s, Sub::HeapInfo { .. })));
    let ctags: Vec<u8> =
        c.subs().filter_map(|s| if let Sub::Root { tag, .. } = s { Some(*tag) } else { None }).collect();
    assert_eq!(ctags.len(), 19);
    assert!(ctags.iter().all(|t| *t <= 0x08 || *t == 0xFF), "{ctags:x?}");
    assert_eq!(
        c.subs().filter(|s| !matches!(s, Sub::Root { .. })).count(),
        w.subs().filter(|s| !matches!(s, Sub::Root { .. } | Sub::HeapInfo { .. })).count()
    );
    assert_eq!(c.fields(0x110), w.fields(0x110));
    // -z drops zygote and image objects (class dumps stay).
    let z = walk(&std::fs::read(&outz).unwrap());
    let zids: Vec<u64> = z
        .subs()
        .filter_map(|s| match s {
            Sub::Instance { id, .. } | Sub::ObjArray { id, .. } | Sub::PrimArray { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    assert!(!zids.contains(&0x340) && !zids.contains(&0x420) && zids.contains(&0x100));
}

#[test]
fn hprof_segments_are_bounded_and_big_arrays_stand_alone() {
    let (dumps, _) = fixture("shapes");
    let mut d = dumps[0].clone();
    // Make the int[] large: 100000 elements.
    let big = obj(&d, 0x300) as usize;
    d.obj_len[big] = 100_000;
    let opts = HprofOptions { android: true, segment_bytes: 128, ..Default::default() };
    let (bytes, s) = hprof(&d, &opts);
    let w = walk(&bytes);
    assert!(w.segments.len() > 5, "{} segments", w.segments.len());
    assert_eq!(s.segments as usize, w.segments.len());
    for (seg, len) in w.segments.iter().zip(&w.segment_lengths) {
        assert!(*len <= 128 || seg.iter().filter(|s| !matches!(s, Sub::HeapInfo { .. })).count() == 1, "{len}");
    }
    let arr = w.subs().find(|s| matches!(s, Sub::PrimArray { id: 0x300, .. })).unwrap();
    assert_eq!(arr, &Sub::PrimArray { id: 0x300, ty: 10, n: 100_000, zero: true });
    // Every segment starts on the default heap, so an object on another heap is preceded by a
    // heap info in its own segment.
    for seg in &w.segments {
        let first_obj =
            seg.iter().position(|s| matches!(s, Sub::Instance { .. } | Sub::PrimArray { .. } | Sub::ObjArray { .. }));
        if let Some(i) = first_obj {
            assert!(matches!(seg[0], Sub::HeapInfo { .. }) && i > 0, "{seg:?}");
        }
    }
}

#[test]
fn hprof_ids_wider_than_4_bytes() {
    let (dumps, _) = decode(&crate::common::data("traceconv/cases/heap_graph_small.pftrace"));
    let mut d = dumps[0].clone();
    for id in &mut d.obj_id {
        *id += 1 << 40;
    }
    let (bytes, s) = hprof(&d, &HprofOptions::default());
    let w = walk(&bytes);
    assert_eq!((w.id_size, s.renumbered), (8, false));
    assert_eq!(w.fields((1 << 40) + 0x100), [("cache".to_owned(), (1 << 40) + 0x200)]);
    // 8-byte references make instance data longer than the 4-byte-reference object size.
    assert_eq!(w.instance((1 << 40) + 0x100).1.len(), 16 + 4);
    // Android: 4-byte ids, renumbered densely (object i gets id i + 1).
    let (bytes, s) = hprof(&d, &HprofOptions { android: true, ..Default::default() });
    let w = walk(&bytes);
    assert_eq!((w.id_size, s.renumbered), (4, true));
    assert_eq!(w.fields(1), [("cache".to_owned(), 2)]);
    let roots: Vec<u64> =
        w.subs().filter_map(|s| if let Sub::Root { id, .. } = s { Some(*id) } else { None }).collect();
    assert_eq!(roots, [1, 6]);
}

#[test]
fn hprof_infers_fields_of_pre_s_instances() {
    // Before Android S, types carry no field lists: each object names its references.
    use heapconv::model::heap::Class;
    let mut d = HeapDump { heaps: vec!["app".into()], id_size: 8, ..Default::default() };
    d.classes.push(Class { id: 1, name: "Old".into(), instance_size: 16, ..Default::default() });
    d.field_names = vec!["Old.a".into(), "Old.b".into()];
    let o = d.push_object(0x10, 0, ObjectKind::Instance, 0, 16, 0);
    d.push_ref(1, 1);
    d.push_ref(0, REF_NULL);
    d.push_ref(NO_FIELD, o);
    d.push_object(0x20, 0, ObjectKind::Instance, 0, 16, 0);
    d.push_ref(0, o);
    d.validate().unwrap();
    let (bytes, _) = hprof(&d, &HprofOptions::default());
    let w = walk(&bytes);
    let f = w.fields(0x10);
    assert_eq!(f[..2], [("b".to_owned(), 0x20), ("a".to_owned(), 0)]);
    assert_eq!(f[2].0, "runtimeInternalObjects");
    assert_eq!(w.fields(0x20)[..2], [("b".to_owned(), 0), ("a".to_owned(), 0x10)]);
    // Old: 16 bytes = two 4-byte references + 8 bytes of padding.
    let Sub::Class { fields, .. } = w.class(w.class_id("Old")) else { unreachable!() };
    let types: Vec<u8> = fields.iter().map(|f| f.1).collect();
    assert_eq!(types, [2, 2, 11, 2]);
    // A synthetic java.lang.Object[] holds the unnamed reference.
    assert!(w.subs().any(|s| matches!(s, Sub::ObjArray { elems, .. } if elems == &vec![0x10])));
}

// ---------------------------------------------------------------------------------------------
// The command line.

#[test]
fn cli_hprof_selects_one_dump_or_writes_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let trace = crate::common::data("heapgraph/two_pids.pftrace");
    let t = trace.to_str().unwrap();
    // Three dumps match: a usage error listing them, nothing written.
    let out = dir.path().join("one.hprof");
    let o = out.to_str().unwrap();
    let r = crate::common::heapconv_ok(&["hprof", t, "-o", o], 2);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("3 heap graph dumps match"), "{err}");
    assert!(
        err.contains("com.example.first (pid 50) at 1000 ns") && err.contains("com.example.second (pid 60) at 1500 ns")
    );
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no staged file left behind");
    // --pid and --timestamps pick one.
    crate::common::heapconv_ok(&["hprof", t, "--pid", "50", "--timestamps", "2000", "-o", o], 0);
    let w = walk(&std::fs::read(&out).unwrap());
    assert_eq!(w.version, "JAVA PROFILE 1.0.2");
    assert_eq!(w.subs().filter(|s| matches!(s, Sub::Instance { .. })).count(), 3);
    crate::common::heapconv_ok(&["hprof", t, "--pid", "60", "--android", "-o", o], 0);
    let w = walk(&std::fs::read(&out).unwrap());
    assert_eq!(w.version, "JAVA PROFILE 1.0.3");
    assert_eq!(w.subs().filter(|s| matches!(s, Sub::Instance { .. })).count(), 2);
    // Nothing matches: exit 1.
    let r = crate::common::heapconv_ok(&["hprof", t, "--pid", "51", "-o", o], 1);
    assert!(String::from_utf8_lossy(&r.stderr).contains("no heap graph dump matches"));
    // A directory: one file per dump, numbered in trace order.
    let sub = dir.path().join("all");
    let s = format!("{}/", sub.display());
    let r = crate::common::heapconv_ok(&["hprof", t, "-o", &s, "--json"], 0);
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(doc.as_array().unwrap().len(), 3);
    assert_eq!(
        crate::common::file_names(&sub),
        ["java_heap_dump.1.50.hprof", "java_heap_dump.2.60.hprof", "java_heap_dump.3.50.hprof"]
    );
    // Standard output.
    let r = crate::common::heapconv_ok(&["hprof", t, "--pid", "60", "-o", "-"], 0);
    assert_eq!(walk(&r.stdout).subs().filter(|s| matches!(s, Sub::Instance { .. })).count(), 2);
}

#[test]
fn cli_hprof_of_an_incomplete_dump_is_partial_and_inspect_lists_heap_graphs() {
    let dir = tempfile::tempdir().unwrap();
    let trace = crate::common::data("heapgraph/incomplete.pftrace");
    let out = dir.path().join("gap.hprof");
    let r =
        crate::common::heapconv_ok(&["hprof", trace.to_str().unwrap(), "--pid", "41", "-o", out.to_str().unwrap()], 3);
    assert!(String::from_utf8_lossy(&r.stderr).contains("incomplete: packets missing between index 0 and 2"));
    walk(&std::fs::read(&out).unwrap());
    // `profile --java-heap` says so too (exit code 3, partial), as `convert` and `top` do.
    let pdir = dir.path().join("profiles");
    let r = crate::common::heapconv_ok(
        &["profile", "--java-heap", trace.to_str().unwrap(), "-o", pdir.to_str().unwrap()],
        3,
    );
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("result is partial: incomplete heap graph dump(s): pid 41 at 300 ns: packets missing"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&pdir).unwrap().count(), 2, "the profiles are still written");
    let shapes = crate::common::data("heapgraph/shapes.pftrace");
    let cdir = dir.path().join("complete");
    crate::common::heapconv_ok(&["profile", "--java-heap", shapes.to_str().unwrap(), "-o", cdir.to_str().unwrap()], 0);
    let r = crate::common::heapconv_ok(&["inspect", trace.to_str().unwrap()], 0);
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(text.contains("heap graphs: 2"), "{text}");
    assert!(text.contains("yes: packets missing between index 0 and 2"));
    let r = crate::common::heapconv_ok(
        &["inspect", "--json", crate::common::data("heapgraph/shapes.pftrace").to_str().unwrap()],
        0,
    );
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let g = &doc["heap_graphs"][0];
    assert_eq!(g["pid"], 123);
    assert_eq!(g["process_name"], "com.example.shapes");
    assert_eq!(g["timestamp"], 12345);
    assert_eq!(g["objects"], 13);
    assert_eq!(g["classes"], 14);
    assert_eq!(g["roots"], 20);
    assert_eq!(g["incomplete"].as_array().unwrap().len(), 0);
}

#[test]
fn damaged_heap_graphs_never_panic() {
    // Truncations and byte flips of every fixture: the decoder reports damage or decodes what
    // it can; whatever it returns is a valid dump that the writer can write.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(crate::common::data("heapgraph"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pftrace"))
        .collect();
    files.sort();
    files.push(crate::common::data("traceconv/cases/heap_graph_small.pftrace"));
    let mut decoded = 0;
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        for round in 0..60 {
            let mut b = bytes.clone();
            if round % 3 == 0 {
                b.truncate((next() as usize) % b.len());
            } else {
                for _ in 0..1 + round % 4 {
                    let i = (next() as usize) % b.len();
                    b[i] ^= 1 << (next() % 8);
                }
            }
            let mut input = Input::from_bytes("mutant", b, 1 << 20).unwrap();
            let Ok((dumps, _)) = decode_heap_graphs_all(&mut input, &HeapGraphOptions::default()) else { continue };
            for d in &dumps {
                d.validate().unwrap();
                // A flipped size bit can claim a primitive array of gigabytes: written as the
                // graph says, so not here.
                if d.obj_len.iter().map(|&n| u64::from(n)).sum::<u64>() > 1 << 20 {
                    continue;
                }
                let mut out = Vec::new();
                encode_hprof(d, &HprofOptions { android: round % 2 == 0, ..Default::default() }, &mut out).unwrap();
                walk(&out);
                decoded += 1;
            }
        }
    }
    assert!(decoded > 100, "{decoded}");
}

/// Object `o`'s non-null targets as ids, with objects that are not in `known` (the writer's
/// synthetic holders, such as the `Object[]` of runtime-internal references) replaced by
/// their own targets.
fn expanded_targets(d: &HeapDump, o: ObjIdx, known: &std::collections::HashSet<u64>) -> Vec<u64> {
    let mut out = Vec::new();
    for (_, t) in d.refs(o) {
        if t == REF_NULL || t == REF_DANGLING {
            continue;
        }
        let id = d.obj_id[t as usize];
        if known.contains(&id) {
            out.push(id);
        } else {
            out.extend(
                d.refs(t).filter(|&(_, x)| x != REF_NULL && x != REF_DANGLING).map(|(_, x)| d.obj_id[x as usize]),
            );
        }
    }
    out.sort_unstable();
    out
}

#[test]
fn written_hprof_reads_back_through_the_hprof_reader() {
    use heapconv::decode::hprof::{HprofReadOptions, read_hprof};
    let mut checked = 0;
    for name in ["shapes", "references", "s_plus_fields", "deltas_and_heaps", "cleaner", "two_pids", "continued"] {
        let (dumps, _) = fixture(name);
        for d in &dumps {
            for android in [false, true] {
                let opts = HprofOptions { android, ..Default::default() };
                let (bytes, summary) = hprof(d, &opts);
                if summary.renumbered {
                    continue;
                }
                let back = read_hprof(&bytes[..], name, &HprofReadOptions { partial: false }).unwrap();
                back.validate().unwrap();
                assert!(back.incomplete.is_empty(), "{name}: {:?}", back.incomplete);
                assert_eq!(back.dangling_refs, 0, "{name}");
                let known: std::collections::HashSet<u64> = d.obj_id.iter().copied().collect();
                let index: std::collections::HashMap<u64, ObjIdx> =
                    back.obj_id.iter().enumerate().map(|(i, &id)| (id, i as ObjIdx)).collect();
                for o in 0..d.len() as ObjIdx {
                    let id = d.obj_id[o as usize];
                    if d.obj_kind[o as usize] == ObjectKind::Class {
                        continue;
                    }
                    let &b = index.get(&id).unwrap_or_else(|| panic!("{name}: object {id:#x} missing"));
                    // An array whose element type the graph does not say is written as `byte[]`.
                    let unknown_array = matches!(d.obj_kind[o as usize], ObjectKind::PrimitiveArray(_))
                        && !d.class_of(o).name.ends_with("[]");
                    if unknown_array {
                        assert_eq!(back.class_of(b).name, "byte[]", "{name}: class of {id:#x}");
                    } else {
                        assert_eq!(back.class_of(b).name, d.class_of(o).name, "{name}: class of {id:#x}");
                    }
                    assert_eq!(back.obj_kind[b as usize], d.obj_kind[o as usize], "{name}: kind of {id:#x}");
                    assert_eq!(
                        expanded_targets(&back, b, &known),
                        expanded_targets(d, o, &known),
                        "{name} (android: {android}): references of {id:#x}"
                    );
                    checked += 1;
                }
                // Every rooted object is rooted in the file too.
                let rooted = |x: &HeapDump| {
                    let mut v: Vec<u64> = x.roots.iter().map(|r| x.obj_id[r.object as usize]).collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                };
                let want: Vec<u64> = rooted(d).into_iter().filter(|id| index.contains_key(id)).collect();
                let got: Vec<u64> = rooted(&back).into_iter().filter(|id| known.contains(id)).collect();
                assert_eq!(got, want, "{name} (android: {android}): roots");
            }
        }
    }
    assert!(checked > 50, "only {checked} objects compared");
}
