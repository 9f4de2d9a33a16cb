//! Unit tests of the heap analyses.

use rustc_hash::FxHashMap;

use super::*;
use crate::model::Profile;
use crate::model::heap::{
    BasicType, Class, ClassIdx, ClassKind, FieldDesc, FieldIdx, HeapDump, NO_FIELD, ObjIdx, ObjectKind, REF_DANGLING,
    REF_NULL, Root, RootKind,
};

const REFERENCE_CLASS: &str = "java.lang.ref.Reference";

/// A xorshift64* generator for the random graphs below.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
}

/// A small heap builder for tests: classes by name, objects by id.
struct Builder {
    d: HeapDump,
}

impl Builder {
    fn new() -> Self {
        Builder { d: HeapDump { heaps: vec!["app".into()], source: "test".into(), ..Default::default() } }
    }
    fn class(&mut self, name: &str, kind: ClassKind) -> ClassIdx {
        self.d.classes.push(Class { name: name.into(), kind, ..Default::default() });
        (self.d.classes.len() - 1) as ClassIdx
    }
    fn field(&mut self, name: &str) -> FieldIdx {
        self.d.field_names.push(name.into());
        (self.d.field_names.len() - 1) as FieldIdx
    }
    /// An object with references (field, target index); targets may be sentinels.
    fn obj(&mut self, class: ClassIdx, size: u64, refs: &[(FieldIdx, ObjIdx)]) -> ObjIdx {
        let id = 0x100 * (self.d.obj_id.len() as u64 + 1);
        let o = self.d.push_object(id, class, ObjectKind::Instance, 0, size, 0);
        for &(f, t) in refs {
            self.d.push_ref(f, t);
        }
        o
    }
    fn root(&mut self, o: ObjIdx, kind: RootKind) {
        self.d.roots.push(Root { object: o, kind });
    }
}

/// The heap of `tests/data/traceconv/cases/heap_graph_small.textproto`, as the heap-graph
/// decoder should make it: objects 0x100..0x800 are indexes 0..7; field names without their
/// type prefix; no native size (0x500's registry field is on an object that is no
/// NativeAllocationRegistry, so trace processor attributes nothing).
fn heap_graph_small() -> HeapDump {
    let mut b = Builder::new();
    let object = b.class("java.lang.Object", ClassKind::Normal);
    let holder = b.class("com.example.Holder", ClassKind::Normal);
    let cache = b.class("com.example.Cache", ClassKind::Normal);
    let array = b.class("java.lang.Object[]", ClassKind::Array);
    let blob = b.class("com.example.Blob", ClassKind::NoReferences);
    let weak = b.class("java.lang.ref.WeakReference", ClassKind::WeakReference);
    for c in [holder, cache, blob, weak] {
        b.d.classes[c as usize].superclass = Some(object);
    }
    let f_cache = b.field("com.example.Holder.cache");
    let f_items = b.field("com.example.Cache.items");
    let f_referent = b.field("java.lang.ref.Reference.referent");
    b.obj(holder, 16, &[(f_cache, 1)]);
    b.obj(cache, 24, &[(f_items, 2)]);
    b.obj(array, 40, &[(f_items, 3), (f_items, 4)]);
    b.d.obj_kind[2] = ObjectKind::ObjectArray;
    b.obj(blob, 1000, &[]);
    b.obj(blob, 1000, &[]);
    b.obj(weak, 32, &[(f_referent, 6)]);
    b.obj(blob, 1000, &[]);
    b.obj(blob, 1000, &[]);
    b.root(0, RootKind::JavaFrame);
    b.root(5, RootKind::JniGlobal);
    b.d.pid = Some(10);
    b.d.validate().unwrap();
    b.d
}

/// Samples of a profile as (values, function names leaf first), sorted.
fn samples(p: &Profile) -> Vec<(Vec<i64>, Vec<String>)> {
    let t = &p.tables;
    let mut frames = Vec::new();
    let mut v: Vec<(Vec<i64>, Vec<String>)> = p
        .samples()
        .map(|(s, vals)| {
            t.stack_frames_leaf_first(s, &mut frames);
            (vals.to_vec(), frames.iter().map(|&f| t.strings.get(t.frame(f).name).to_owned()).collect())
        })
        .collect();
    v.sort();
    v
}

/// Parses `go tool pprof -raw` text: sample types, and samples as (values, leaf-first names).
type Samples = Vec<(Vec<i64>, Vec<String>)>;

fn parse_pprof_raw(text: &str) -> (String, Samples) {
    let mut section = "";
    let mut types = String::new();
    let mut raw: Vec<(Vec<i64>, Vec<u64>)> = Vec::new();
    let mut names: FxHashMap<u64, String> = FxHashMap::default();
    for line in text.lines() {
        match line.trim_end() {
            "Samples:" => section = "types",
            "Locations" => section = "locs",
            "Mappings" => section = "maps",
            _ if section == "types" => {
                types = line.trim().to_owned();
                section = "samples";
            }
            _ if section == "samples" => {
                let (vals, ids) = line.split_once(':').unwrap();
                raw.push((
                    vals.split_whitespace().map(|v| v.parse().unwrap()).collect(),
                    ids.split_whitespace().map(|v| v.parse().unwrap()).collect(),
                ));
            }
            _ if section == "locs" => {
                // "     1: 0x0 M=1 com.example.Blob :0 s=0()"
                let (id, rest) = line.trim_start().split_once(": ").unwrap();
                let rest = rest.split_once(' ').unwrap().1; // address
                let rest = rest.split_once(' ').unwrap().1; // mapping
                let name = &rest[..rest.rfind(" :").unwrap()];
                names.insert(id.parse().unwrap(), name.to_owned());
            }
            _ => {}
        }
    }
    let mut samples: Vec<(Vec<i64>, Vec<String>)> =
        raw.into_iter().map(|(v, ids)| (v, ids.iter().map(|i| names[i].clone()).collect())).collect();
    samples.sort();
    (types, samples)
}

#[test]
fn spt_profile_matches_traceconv_on_heap_graph_small() {
    let dump = heap_graph_small();
    let h = RootedHeap::new(&dump);
    let spt = h.shortest_path_tree();
    let p = h.spt_profile(&spt);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/traceconv/expected/heap_graph_small/java_heap_dump.1.10.raw.txt"
    );
    let (types, want) = parse_pprof_raw(&std::fs::read_to_string(path).unwrap());
    let ours: Vec<String> = p.header.sample_types.iter().map(|t| format!("{}/{}", t.name, t.unit)).collect();
    assert_eq!(ours.join(" "), types);
    assert_eq!(samples(&p), want);
    // The expected text, spelled out, so that the test says what it checks.
    let hold = "com.example.Holder [ROOT_JAVA_FRAME]";
    let s = |v: [i64; 2], f: &[&str]| (v.to_vec(), f.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    let mut spelled = vec![
        s([1, 32], &["java.lang.ref.WeakReference [ROOT_JNI_GLOBAL]"]),
        s([2, 2000], &["com.example.Blob", "java.lang.Object[]", "com.example.Cache", hold]),
        s([1, 40], &["java.lang.Object[]", "com.example.Cache", hold]),
        s([1, 24], &["com.example.Cache", hold]),
        s([1, 16], &[hold]),
    ];
    spelled.sort();
    assert_eq!(want, spelled);
    // Every frame is in mapping JAVA.
    for f in p.tables.frames() {
        assert_eq!(p.tables.strings.get(p.tables.mapping(f.mapping.unwrap()).path), JAVA_MAPPING);
    }
    assert_eq!(p.header.meta.pid, Some(10));
}

#[test]
fn root_precedence_and_reachability() {
    let mut b = Builder::new();
    let c = b.class("C", ClassKind::Normal);
    let a = b.obj(c, 1, &[(NO_FIELD, 1), (NO_FIELD, REF_NULL), (NO_FIELD, REF_DANGLING)]);
    b.obj(c, 1, &[]);
    let x = b.obj(c, 1, &[(NO_FIELD, 0)]);
    b.root(a, RootKind::JavaFrame);
    b.root(a, RootKind::JniLocal);
    b.root(a, RootKind::ThreadObject);
    b.root(x, RootKind::Unreachable);
    b.root(1, RootKind::VmInternal);
    b.root(1, RootKind::JniGlobal);
    b.root(1, RootKind::StickyClass);
    b.root(1, RootKind::JniLocal);
    b.root(77, RootKind::JavaFrame); // out of range: ignored
    let h = RootedHeap::new(&b.d);
    assert_eq!(h.root_kind(a), Some(RootKind::JniLocal));
    assert_eq!(h.root_kind(1), Some(RootKind::StickyClass));
    assert_eq!(h.root_kind(x), Some(RootKind::Unreachable));
    assert_eq!(h.roots(), &[0, 2, 1]);
    assert_eq!(h.reachable(), vec![true, true, true]);
    assert_eq!(h.frame_name(x), "C [ROOT_UNREACHABLE]");
    // First seen wins among kinds without precedence.
    let mut b = Builder::new();
    let c = b.class("C", ClassKind::Normal);
    b.obj(c, 1, &[]);
    b.root(0, RootKind::ThreadObject);
    b.root(0, RootKind::JavaFrame);
    assert_eq!(RootedHeap::new(&b.d).root_kind(0), Some(RootKind::ThreadObject));
}

#[test]
fn weak_referents_by_declaring_class_or_name() {
    // hprof spelling: `referent` declared by java.lang.ref.Reference.
    let mut b = Builder::new();
    let referent = b.field("referent");
    let other = b.field("other");
    let object = b.class("java.lang.Object", ClassKind::Normal);
    let reference = b.class(REFERENCE_CLASS, ClassKind::Normal);
    let weak = b.class("java.lang.ref.WeakReference", ClassKind::WeakReference);
    let soft = b.class("java.lang.ref.SoftReference", ClassKind::SoftReference);
    let mine = b.class("com.example.MyWeak", ClassKind::WeakReference);
    let odd = b.class("com.example.OddWeak", ClassKind::PhantomReference);
    let bare = b.class("com.example.BareWeak", ClassKind::FinalizerReference);
    let fd = |f| FieldDesc { name: f, ty: BasicType::Object };
    b.d.classes[reference as usize].fields = vec![fd(referent)];
    b.d.classes[reference as usize].superclass = Some(object);
    b.d.classes[weak as usize].superclass = Some(reference);
    b.d.classes[soft as usize].superclass = Some(reference);
    b.d.classes[mine as usize].superclass = Some(weak);
    b.d.classes[mine as usize].fields = vec![fd(other)];
    // A weak class whose chain declares `referent` itself, not via Reference.
    b.d.classes[odd as usize].fields = vec![fd(referent)];
    b.d.classes[odd as usize].superclass = Some(object);
    // `bare` declares no fields at all: decided by name.
    let t = |b: &mut Builder| b.obj(object, 8, &[]);
    let w = b.obj(weak, 24, &[(referent, 7)]);
    let s = b.obj(soft, 24, &[(referent, 8)]);
    let m = b.obj(mine, 24, &[(other, 9), (referent, 10)]);
    let o = b.obj(odd, 24, &[(referent, 11)]);
    let x = b.obj(bare, 24, &[(referent, 12)]);
    let plain = b.obj(object, 8, &[(referent, 13)]);
    b.obj(object, 8, &[]); // 6: padding so that targets 7.. exist
    for _ in 7..14 {
        t(&mut b);
    }
    for r in [w, s, m, o, x, plain] {
        b.root(r, RootKind::JavaFrame);
    }
    let h = RootedHeap::new(&b.d);
    let reach = h.reachable();
    assert!(!reach[7], "weak referent via Reference.referent");
    assert!(reach[8], "soft referents are strong");
    assert!(reach[9] && !reach[10], "subclass field followed, inherited referent not");
    assert!(reach[11], "referent declared by another class is an ordinary field");
    assert!(!reach[12], "no declared fields: by name");
    assert!(reach[13], "not a reference class");
    // hprof files heapconv wrote before it hoisted the field into java.lang.ref.Reference:
    // java.lang.ref.WeakReference (a runtime class) declares `referent` itself.
    let mut b = Builder::new();
    let referent = b.field("referent");
    let object = b.class("java.lang.Object", ClassKind::Normal);
    let weak = b.class("java.lang.ref.WeakReference", ClassKind::WeakReference);
    b.d.classes[weak as usize].fields = vec![FieldDesc { name: referent, ty: BasicType::Object }];
    b.d.classes[weak as usize].superclass = Some(object);
    b.obj(weak, 32, &[(referent, 1)]);
    b.obj(object, 8, &[]);
    b.root(0, RootKind::JniGlobal);
    assert_eq!(RootedHeap::new(&b.d).reachable(), vec![true, false], "referent declared by WeakReference");
    // Heap-graph spelling, with or without the type prefix.
    for name in ["java.lang.ref.Reference.referent", "java.lang.Object java.lang.ref.Reference.referent"] {
        let mut b = Builder::new();
        let f = b.field(name);
        let weak = b.class("java.lang.ref.WeakReference", ClassKind::WeakReference);
        let c = b.class("C", ClassKind::Normal);
        b.obj(weak, 24, &[(f, 1)]);
        b.obj(c, 8, &[]);
        b.root(0, RootKind::JavaFrame);
        assert_eq!(RootedHeap::new(&b.d).reachable(), vec![true, false], "{name}");
    }
}

#[test]
fn class_statics_are_edges_of_the_class_object() {
    let mut b = Builder::new();
    let class = b.class("java.lang.Class", ClassKind::Class);
    let foo = b.class("Foo", ClassKind::Normal);
    let f = b.field("sInstance");
    b.obj(class, 8, &[]);
    b.obj(foo, 16, &[]);
    b.d.classes[foo as usize].object = Some(0);
    b.d.classes[foo as usize].static_refs = vec![(f, 1)];
    b.root(0, RootKind::StickyClass);
    let h = RootedHeap::new(&b.d);
    assert_eq!(h.reachable(), vec![true, true]);
    let spt = h.shortest_path_tree();
    assert_eq!(spt.parent, vec![VIRTUAL_ROOT, 0]);
    assert_eq!(h.edge_label(0, 1).as_deref(), Some(".sInstance"));
    let dom = h.dominators();
    assert_eq!(dom.idom, vec![VIRTUAL_ROOT, 0]);
    assert_eq!(dom.retained, vec![24, 16]);
    // The class object is named after its class, in paths and frames.
    assert_eq!(h.class_name(0), "java.lang.Class<Foo>");
    let path = h.path_to_root(&spt, 1, 16).unwrap();
    assert_eq!(path.text(), "[ROOT_STICKY_CLASS] java.lang.Class<Foo>.sInstance -> Foo");
    let mut want = vec![
        (vec![1, 8], vec!["java.lang.Class<Foo> [ROOT_STICKY_CLASS]".to_owned()]),
        (vec![1, 16], vec!["Foo".to_owned(), "java.lang.Class<Foo> [ROOT_STICKY_CLASS]".to_owned()]),
    ];
    want.sort();
    assert_eq!(samples(&h.spt_profile(&spt)), want);
}

#[test]
fn spt_seeds_by_class_name_and_visits_targets_in_index_order() {
    // Roots: 0 (class "B") and 1 (class "A"). Both reach 3; "A" is seeded first, so 1 is
    // 3's parent even though 0 lists it first. 2 is reached by 0 via a higher slot but a
    // lower index than 3: visited before 3 in BFS.
    let mut b = Builder::new();
    let cb = b.class("B", ClassKind::Normal);
    let ca = b.class("A", ClassKind::Normal);
    let cx = b.class("X", ClassKind::Normal);
    b.obj(cb, 1, &[(NO_FIELD, 3), (NO_FIELD, 2)]);
    b.obj(ca, 1, &[(NO_FIELD, 3)]);
    b.obj(cx, 1, &[(NO_FIELD, 4)]);
    b.obj(cx, 1, &[(NO_FIELD, 4)]);
    b.obj(cx, 1, &[]);
    b.root(0, RootKind::JavaFrame);
    b.root(1, RootKind::JavaFrame);
    let h = RootedHeap::new(&b.d);
    let spt = h.shortest_path_tree();
    assert_eq!(spt.order, vec![1, 0, 3, 2, 4]);
    assert_eq!(spt.parent, vec![VIRTUAL_ROOT, VIRTUAL_ROOT, 0, 1, 3]);
}

#[test]
fn profile_times_and_incomplete_flags() {
    let mut b = Builder::new();
    let c = b.class("C", ClassKind::Normal);
    b.obj(c, 8, &[]);
    b.root(0, RootKind::JavaFrame);
    // hprof: the header's wall-clock milliseconds become pprof's time_nanos.
    b.d.timestamp = Some(1_700_000_000_123);
    b.d.timestamp_is_epoch_ms = true;
    let h = RootedHeap::new(&b.d);
    let m = h.spt_profile(&h.shortest_path_tree()).header.meta;
    assert_eq!((m.timestamp, m.timestamp_converted, m.time_nanos), (None, false, Some(1_700_000_000_123_000_000)));
    assert!(!m.flags.incomplete && m.flags.data_loss().is_empty());
    // A heap graph: trace-clock ns, converted or not as the decoder says; incomplete.
    b.d.timestamp = Some(500);
    b.d.timestamp_is_epoch_ms = false;
    for converted in [false, true] {
        b.d.timestamp_converted = converted;
        b.d.incomplete = vec!["packets missing between index 0 and 2".into()];
        let h = RootedHeap::new(&b.d);
        let m = h.dominator_profile(&h.dominators()).header.meta;
        assert_eq!((m.timestamp, m.timestamp_converted, m.time_nanos), (Some(500), converted, None));
        assert_eq!(m.flags.data_loss(), ["incomplete"]);
        assert_eq!(m.comments, ["incomplete heap dump: packets missing between index 0 and 2"]);
    }
}

#[test]
fn native_children_merging_and_incomplete_graphs() {
    let mut b = Builder::new();
    let c = b.class("Bitmap", ClassKind::Normal);
    let h = b.class("Holder", ClassKind::Normal);
    b.obj(h, 16, &[(NO_FIELD, 1), (NO_FIELD, 2)]);
    b.obj(c, 40, &[]);
    b.obj(c, 40, &[]);
    b.d.obj_native_size[1] = 1000;
    b.d.obj_native_size[2] = 500;
    b.d.obj_native_size[0] = 7;
    b.root(0, RootKind::JniGlobal);
    let heap = RootedHeap::new(&b.d);
    let p = heap.spt_profile(&heap.shortest_path_tree());
    let s = |v: [i64; 2], f: &[&str]| (v.to_vec(), f.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    let mut want = vec![
        s([1, 16], &["Holder [ROOT_JNI_GLOBAL]"]),
        s([1, 7], &["[native] Holder [ROOT_JNI_GLOBAL]", "Holder [ROOT_JNI_GLOBAL]"]),
        s([2, 80], &["Bitmap", "Holder [ROOT_JNI_GLOBAL]"]),
        s([2, 1500], &["[native] Bitmap", "Bitmap", "Holder [ROOT_JNI_GLOBAL]"]),
    ];
    want.sort();
    assert_eq!(samples(&p), want);
    // The dominator profile: the same tree here, native nodes with count 0.
    let dp = heap.dominator_profile(&heap.dominators());
    let mut want = vec![
        s([1, 16], &["Holder [ROOT_JNI_GLOBAL]"]),
        s([0, 7], &["[native] Holder [ROOT_JNI_GLOBAL]", "Holder [ROOT_JNI_GLOBAL]"]),
        s([2, 80], &["Bitmap", "Holder [ROOT_JNI_GLOBAL]"]),
        s([0, 1500], &["[native] Bitmap", "Bitmap", "Holder [ROOT_JNI_GLOBAL]"]),
    ];
    want.sort();
    assert_eq!(samples(&dp), want);

    // No roots: nothing, or the incomplete marker.
    b.d.roots.clear();
    let heap = RootedHeap::new(&b.d);
    assert_eq!(heap.spt_profile(&heap.shortest_path_tree()).sample_count(), 0);
    b.d.incomplete.push("packet index gap".into());
    let heap = RootedHeap::new(&b.d);
    let p = heap.spt_profile(&heap.shortest_path_tree());
    assert_eq!(samples(&p), vec![s([1, 1], &[INCOMPLETE_GRAPH_FRAME])]);
}

/// Dominators by iterative data flow over bitsets: O(n²) and obviously right. Node `n` is
/// the virtual root. Returns per object its immediate dominator (sentinels as
/// [`Dominators::idom`]).
fn reference_idom(h: &RootedHeap<'_>) -> Vec<ObjIdx> {
    let n = h.len();
    let words = (n + 1).div_ceil(64);
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for &r in h.roots() {
        preds[r as usize].push(n);
    }
    let reach = h.reachable();
    for (o, _) in reach.iter().enumerate().filter(|(_, r)| **r) {
        h.for_each_target(o as ObjIdx, |t| preds[t as usize].push(o));
    }
    let full = vec![!0u64; words];
    let mut dom: Vec<Vec<u64>> = (0..=n).map(|_| full.clone()).collect();
    dom[n] = vec![0; words];
    dom[n][n / 64] |= 1 << (n % 64);
    let mut changed = true;
    while changed {
        changed = false;
        for v in 0..n {
            if !reach[v] {
                continue;
            }
            let mut new = full.clone();
            for &p in &preds[v] {
                for (a, b) in new.iter_mut().zip(&dom[p]) {
                    *a &= b;
                }
            }
            new[v / 64] |= 1 << (v % 64);
            if new != dom[v] {
                dom[v] = new;
                changed = true;
            }
        }
    }
    let count = |s: &Vec<u64>| s.iter().map(|w| w.count_ones()).sum::<u32>();
    (0..n)
        .map(|v| {
            if !reach[v] {
                return UNREACHED;
            }
            // The strict dominator with the largest dominator set.
            let size = count(&dom[v]);
            let mut best = None;
            for d in 0..=n {
                if d != v && dom[v][d / 64] & (1 << (d % 64)) != 0 && count(&dom[d]) == size - 1 {
                    best = Some(d);
                }
            }
            match best.unwrap() {
                d if d == n => VIRTUAL_ROOT,
                d => d as ObjIdx,
            }
        })
        .collect()
}

fn reference_retained(h: &RootedHeap<'_>, idom: &[ObjIdx]) -> Vec<u64> {
    // Sum of self sizes over all objects whose dominator chain passes through o.
    let n = h.len();
    let mut ret = vec![0u64; n];
    for v in 0..n {
        if idom[v] == UNREACHED {
            continue;
        }
        let mut x = v as ObjIdx;
        loop {
            ret[x as usize] += h.dump().obj_self_size[v];
            match idom[x as usize] {
                VIRTUAL_ROOT => break,
                p => x = p,
            }
        }
    }
    ret
}

fn random_heap(rng: &mut Rng, n: usize) -> HeapDump {
    let mut b = Builder::new();
    let plain = b.class("P", ClassKind::Normal);
    let weak = b.class("W", ClassKind::WeakReference);
    let f = b.field("java.lang.ref.Reference.referent");
    let g = b.field("P.next");
    let edges = rng.below(4) as usize; // 0..3 average out-degree
    for i in 0..n {
        let is_weak = rng.below(6) == 0;
        let deg = rng.below(2 * edges as u64 + 1) as usize;
        let mut refs = Vec::new();
        for _ in 0..deg {
            let t = match rng.below(20) {
                0 => REF_NULL,
                1 => REF_DANGLING,
                2 => i as ObjIdx, // self loop
                _ => rng.below(n as u64) as ObjIdx,
            };
            let field = if is_weak && rng.below(2) == 0 { f } else { g };
            refs.push((field, t));
        }
        b.obj(if is_weak { weak } else { plain }, 1 + rng.below(100), &refs);
    }
    let roots = 1 + rng.below(3);
    for _ in 0..roots {
        b.root(rng.below(n as u64) as ObjIdx, RootKind::JavaFrame);
    }
    b.d.validate().unwrap();
    b.d
}

#[test]
fn dominators_agree_with_data_flow_on_random_graphs() {
    let mut rng = Rng::new(0xD0D0);
    for round in 0..600 {
        let n = 1 + rng.below(if round < 300 { 12 } else { 90 }) as usize;
        let d = random_heap(&mut rng, n);
        let h = RootedHeap::new(&d);
        let dom = h.dominators();
        let want = reference_idom(&h);
        assert_eq!(dom.idom, want, "round {round}: {d:?}");
        assert_eq!(dom.retained, reference_retained(&h, &want), "round {round}");
        let reach = h.reachable();
        assert_eq!(dom.order.len(), reach.iter().filter(|&&r| r).count());
        // Every object after its immediate dominator in `order`.
        let mut pos = vec![usize::MAX; n];
        for (i, &o) in dom.order.iter().enumerate() {
            pos[o as usize] = i;
        }
        for &o in &dom.order {
            let p = dom.idom[o as usize];
            assert!(p == VIRTUAL_ROOT || pos[p as usize] < pos[o as usize]);
        }
        // The shortest-path tree reaches the same objects, by shortest paths.
        let spt = h.shortest_path_tree();
        assert_eq!(spt.order.len(), dom.order.len());
        let depth = |mut x: ObjIdx| {
            let mut k = 0;
            while spt.parent[x as usize] != VIRTUAL_ROOT {
                x = spt.parent[x as usize];
                k += 1;
            }
            k
        };
        for &o in &spt.order {
            let p = spt.parent[o as usize];
            if p != VIRTUAL_ROOT {
                assert_eq!(depth(o), depth(p) + 1);
                let mut edge = false;
                h.for_each_target(p, |t| edge |= t == o);
                assert!(edge);
            }
        }
    }
}

#[test]
fn dominators_on_hand_built_graphs() {
    let c = |b: &mut Builder| b.class("C", ClassKind::Normal);
    // Diamond: 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3; 3 -> 4.
    let mut b = Builder::new();
    let k = c(&mut b);
    b.obj(k, 1, &[(NO_FIELD, 1), (NO_FIELD, 2)]);
    b.obj(k, 2, &[(NO_FIELD, 3)]);
    b.obj(k, 4, &[(NO_FIELD, 3)]);
    b.obj(k, 8, &[(NO_FIELD, 4)]);
    b.obj(k, 16, &[]);
    b.root(0, RootKind::JavaFrame);
    let h = RootedHeap::new(&b.d);
    let d = h.dominators();
    assert_eq!(d.idom, vec![VIRTUAL_ROOT, 0, 0, 0, 3]);
    assert_eq!(d.retained, vec![31, 2, 4, 24, 16]);
    // Cycle with a self-loop: 0 -> 1 -> 2 -> 0, 2 -> 2, and 3 unreachable pointing in.
    let mut b = Builder::new();
    let k = c(&mut b);
    b.obj(k, 1, &[(NO_FIELD, 1)]);
    b.obj(k, 2, &[(NO_FIELD, 2)]);
    b.obj(k, 4, &[(NO_FIELD, 0), (NO_FIELD, 2)]);
    b.obj(k, 8, &[(NO_FIELD, 1)]);
    b.root(0, RootKind::JavaFrame);
    let h = RootedHeap::new(&b.d);
    let d = h.dominators();
    assert_eq!(d.idom, vec![VIRTUAL_ROOT, 0, 1, UNREACHED]);
    assert_eq!(d.retained, vec![7, 6, 4, 0]);
    // Two roots sharing an object: only the virtual root dominates it.
    let mut b = Builder::new();
    let k = c(&mut b);
    b.obj(k, 1, &[(NO_FIELD, 2)]);
    b.obj(k, 2, &[(NO_FIELD, 2)]);
    b.obj(k, 4, &[]);
    b.root(0, RootKind::JavaFrame);
    b.root(1, RootKind::JniGlobal);
    let d = RootedHeap::new(&b.d).dominators();
    assert_eq!(d.idom, vec![VIRTUAL_ROOT, VIRTUAL_ROOT, VIRTUAL_ROOT]);
    assert_eq!(d.retained, vec![1, 2, 4]);
    // A weak edge does not dominate: 0 -weak-> 2, 0 -> 1 -> 2.
    let mut b = Builder::new();
    let k = c(&mut b);
    let w = b.class("W", ClassKind::WeakReference);
    let f = b.field("java.lang.ref.Reference.referent");
    b.obj(w, 1, &[(f, 2), (NO_FIELD, 1)]);
    b.obj(k, 2, &[(NO_FIELD, 2)]);
    b.obj(k, 4, &[]);
    b.root(0, RootKind::JavaFrame);
    let d = RootedHeap::new(&b.d).dominators();
    assert_eq!(d.idom, vec![VIRTUAL_ROOT, 0, 1]);
    // Only the weak edge: 2 is garbage.
    b.d.ref_target[1] = REF_NULL;
    let d = RootedHeap::new(&b.d).dominators();
    assert_eq!(d.idom, vec![VIRTUAL_ROOT, UNREACHED, UNREACHED]);
    // Empty heap.
    let empty = HeapDump::default();
    let h = RootedHeap::new(&empty);
    assert!(h.dominators().order.is_empty());
    assert!(h.shortest_path_tree().order.is_empty());
    assert_eq!(h.class_histogram(&h.dominators()), vec![]);
}

#[test]
fn histogram_counts_nested_instances_once() {
    // A list 0 -> 1 -> 2 -> 3 of Node, each holding a byte[]; a second root 6 (Node)
    // refers to node 2 as well, so node 2 and below are dominated by the virtual root.
    let mut b = Builder::new();
    let node = b.class("Node", ClassKind::Normal);
    let bytes = b.class("byte[]", ClassKind::Array);
    let next = b.field("Node.next");
    let data = b.field("Node.data");
    b.obj(node, 10, &[(next, 1), (data, 4)]); // 0
    b.obj(node, 10, &[(next, 2)]); // 1
    b.obj(node, 10, &[(next, 3), (data, 5)]); // 2
    b.obj(node, 10, &[]); // 3
    b.obj(bytes, 100, &[]); // 4
    b.obj(bytes, 200, &[]); // 5
    b.obj(node, 10, &[(next, 2)]); // 6
    b.obj(bytes, 1000, &[]); // 7: garbage
    b.d.obj_native_size[5] = 50;
    b.root(0, RootKind::JavaFrame);
    b.root(6, RootKind::JavaFrame);
    let h = RootedHeap::new(&b.d);
    let dom = h.dominators();
    assert_eq!(dom.idom, vec![VIRTUAL_ROOT, 0, VIRTUAL_ROOT, 2, 0, 2, VIRTUAL_ROOT, UNREACHED]);
    let hist = h.class_histogram(&dom);
    let row = |name: &str| hist.iter().find(|r| r.name == name).unwrap().clone();
    let n = row("Node");
    assert_eq!((n.instances, n.reachable_instances, n.shallow), (5, 5, 50));
    // Tops of Node: 0 (retains 0,1,4 = 120), 2 (retains 2,3,5 = 220 + 50 native), 6 (10).
    assert_eq!((n.retained, n.retained_native), (350, 50));
    let a = row("byte[]");
    assert_eq!((a.instances, a.reachable_instances, a.shallow, a.native), (3, 2, 1300, 50));
    assert_eq!((a.retained, a.retained_native), (300, 50));
    assert_eq!(hist[0].name, "Node");

    // Paths and the top report.
    let spt = h.shortest_path_tree();
    let path = h.path_to_root(&spt, 5, 16).unwrap();
    assert_eq!(path.text(), "[ROOT_JAVA_FRAME] Node.next -> Node.data -> byte[]");
    assert_eq!(path.steps.iter().map(|s| s.object).collect::<Vec<_>>(), vec![6, 2, 5]);
    assert!(h.path_to_root(&spt, 7, 16).is_none());
    let top = h.heap_top(&spt, &dom, &HeapTopOptions { classes: 5, retainers: 3, max_path_steps: 16 });
    assert_eq!(top.objects, 8);
    assert_eq!(top.reachable_objects, 7);
    assert_eq!(top.roots, 2);
    assert_eq!(top.shallow, 1350);
    assert_eq!(top.reachable_shallow, 350);
    let picked: Vec<(ObjIdx, u64)> = top.retainers.iter().map(|r| (r.object, r.retained)).collect();
    assert_eq!(picked, vec![(2, 220), (5, 200), (0, 120)]);
    assert_eq!((top.classes[0].name.as_str(), top.classes[0].retained), ("Node", 350));
    let path = top.retainers[0].path.as_ref().unwrap();
    assert!(path.text().starts_with("[ROOT_JAVA_FRAME] Node.next -> Node"), "{}", path.text());
    assert_eq!(path.steps[0].via.as_deref(), Some(".next"));
    assert_eq!(path.steps[1].via, None);
}

#[test]
fn long_paths_are_elided_in_the_middle() {
    let mut b = Builder::new();
    let node = b.class("Node", ClassKind::Normal);
    let next = b.field("next");
    for i in 0..100u32 {
        let refs = if i < 99 { vec![(next, i + 1)] } else { vec![] };
        b.obj(node, 1, &refs);
    }
    b.root(0, RootKind::ThreadObject);
    let h = RootedHeap::new(&b.d);
    let spt = h.shortest_path_tree();
    let p = h.path_to_root(&spt, 99, 6).unwrap();
    assert_eq!((p.length, p.elided, p.elided_after, p.steps.len()), (100, 94, 3, 6));
    let ids: Vec<ObjIdx> = p.steps.iter().map(|s| s.object).collect();
    assert_eq!(ids, vec![0, 1, 2, 97, 98, 99]);
    assert_eq!(
        p.text(),
        "[ROOT_THREAD_OBJECT] Node.next -> Node.next -> Node -> ... (94 more) -> Node.next -> Node.next -> Node"
    );
    let dom = h.dominators();
    assert_eq!(dom.retained[0], 100);
    let dp = h.dominator_profile(&dom);
    assert_eq!(dp.sample_count(), 100);
    assert_eq!(dp.total(1), 100);
}

#[test]
fn dominator_profile_widths_are_retained_sizes() {
    let d = random_heap(&mut Rng::new(3), 20_000);
    let h = RootedHeap::new(&d);
    let dom = h.dominators();
    let p = h.dominator_profile(&dom);
    // Cumulative size of every top-level frame = the sum of retained sizes of the objects
    // merged into it.
    let t = &p.tables;
    let mut cum: FxHashMap<String, i64> = FxHashMap::default();
    let mut nodes = Vec::new();
    for (s, v) in p.samples() {
        t.stack_nodes_root_first(s, &mut nodes);
        let top = t.strings.get(t.frame(t.stack_node(nodes[0]).frame).name).to_owned();
        *cum.entry(top).or_default() += v[1];
    }
    let mut want: FxHashMap<String, i64> = FxHashMap::default();
    for &o in &dom.order {
        if dom.idom[o as usize] == VIRTUAL_ROOT {
            let all = dom.retained[o as usize] + dom.retained_native[o as usize];
            *want.entry(h.frame_name(o)).or_default() += all as i64;
        }
    }
    assert_eq!(cum, want);
    let reach_bytes: u64 = dom.order.iter().map(|&o| d.obj_self_size[o as usize] + d.obj_native_size[o as usize]).sum();
    assert_eq!(p.total(1), reach_bytes as i64);
    assert_eq!(p.total(0), dom.order.len() as i64);
}

#[test]
fn outputs_are_deterministic() {
    let d = random_heap(&mut Rng::new(11), 5_000);
    let h = RootedHeap::new(&d);
    let spt = h.shortest_path_tree();
    let dom = h.dominators();
    let t1 = h.heap_top(&spt, &dom, &HeapTopOptions::default());
    let t2 = h.heap_top(&h.shortest_path_tree(), &h.dominators(), &HeapTopOptions::default());
    assert_eq!(t1, t2);
    assert_eq!(samples(&h.spt_profile(&spt)), samples(&h.spt_profile(&h.shortest_path_tree())));
}
