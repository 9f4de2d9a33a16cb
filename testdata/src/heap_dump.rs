//! A large synthetic Java heap, built directly as heapconv's model ([`HeapDump`]) with no file in
//! between: the input of the heap-analysis benchmarks and of tests that need a big graph.

use heapconv::analysis::heap::VIRTUAL_ROOT;
use heapconv::model::heap::{
    BasicType, Class, ClassIdx, ClassKind, FieldDesc, FieldIdx, HeapDump, NO_FIELD, ObjIdx, ObjectKind, REF_NULL, Root,
    RootKind,
};

use crate::rng::Rng;

/// The class declaring the `referent` field of weak, soft and phantom references.
const REFERENCE_CLASS: &str = "java.lang.ref.Reference";

/// A synthetic heap of `n` objects, the same for the same (`n`, `seed`), for benchmarks and
/// tests. Its shape, roughly like an app heap:
///
/// * a spanning tree: object `i > 0` is referenced by an earlier object, 70% of the time one of
///   the 8 just before it (long chains, as lists make), otherwise any earlier one (a bushy,
///   shallow structure);
/// * on average 1.75 cross references per object (a live object's only to live objects):
///   half to an object within 1,000 indexes, 35% to the first 1% of the objects (the popular
///   objects every heap has: class objects, constants, interned strings), 15% to any object;
///   they close cycles and share subtrees;
/// * some null slots (about 0.15 per object), `Object[]` arrays for objects with more than 4
///   references, `byte[]` leaves, and `java.lang.ref.WeakReference` leaves (one in 13 leaves)
///   whose `referent` (hprof spelling: a field declared by `java.lang.ref.Reference`) points
///   anywhere;
/// * the last 2% of the objects are garbage: their tree parents lie among themselves and
///   the first of them has none (they may still refer to live objects);
/// * roots: object 0 (`ROOT_STICKY_CLASS`, also listed as `ROOT_JNI_LOCAL`), one live object
///   in 5,000 (`ROOT_JAVA_FRAME`, every tenth `ROOT_JNI_GLOBAL`);
/// * one object in 1,000 has native bytes (4 to 64 KB).
///
/// That is about 2.9 reference slots per object (about 2.8 non-null).
pub fn synthetic_heap_dump(n: usize, seed: u64) -> HeapDump {
    let n = n.min(VIRTUAL_ROOT as usize - 1);
    let mut rng = Rng::seeded(seed);
    let mut d = HeapDump {
        source: "synthetic heap".to_owned(),
        pid: Some(1),
        process_name: Some("synthetic".to_owned()),
        id_size: 4,
        heaps: vec!["app".to_owned()],
        ..Default::default()
    };
    // Classes: 0 Object, 1 Reference, 2 WeakReference, 3 Object[], 4 byte[], then 5 groups of
    // 8 app classes with 0..=4 reference fields.
    let field = |d: &mut HeapDump, name: &str| {
        d.field_names.push(name.to_owned());
        (d.field_names.len() - 1) as FieldIdx
    };
    let referent = field(&mut d, "referent");
    let fnames: Vec<FieldIdx> = (0..4).map(|i| field(&mut d, &format!("f{i}"))).collect();
    let class = |name: &str, size: u64, kind: ClassKind, superclass: Option<ClassIdx>, fields: Vec<FieldDesc>| Class {
        id: 0,
        name: name.to_owned(),
        superclass,
        instance_size: size,
        kind,
        fields,
        ..Default::default()
    };
    let obj = |f: FieldIdx| FieldDesc { name: f, ty: BasicType::Object };
    d.classes.push(class("java.lang.Object", 0, ClassKind::Normal, None, vec![]));
    d.classes.push(class(REFERENCE_CLASS, 8, ClassKind::Normal, Some(0), vec![obj(referent)]));
    d.classes.push(class("java.lang.ref.WeakReference", 8, ClassKind::WeakReference, Some(1), vec![]));
    d.classes.push(class("java.lang.Object[]", 0, ClassKind::Array, Some(0), vec![]));
    d.classes.push(class("byte[]", 0, ClassKind::Array, Some(0), vec![]));
    let (weak_class, array_class, bytes_class, first_app) = (2u32, 3u32, 4u32, 5u32);
    for refs in 0..=4usize {
        for j in 0..8 {
            let size = 8 + 4 * refs as u64 + 8 * j as u64;
            let fields = fnames[..refs].iter().map(|&f| obj(f)).collect();
            d.classes.push(class(&format!("synth.app.C{refs}_{j}"), size, ClassKind::Normal, Some(0), fields));
        }
    }
    for (i, c) in d.classes.iter_mut().enumerate() {
        c.id = 0x10 + i as u64;
    }
    // Spanning-tree parents, then children in CSR form.
    let live = n - n / 50;
    let mut tree_parent = vec![u32::MAX; n];
    for (i, slot) in tree_parent.iter_mut().enumerate().skip(1) {
        let lo = if i < live { 0 } else { live };
        if i == lo {
            continue;
        }
        let p = if rng.below_hi32(10) < 7 {
            i - 1 - rng.below_hi32(8.min(i - lo) as u64) as usize
        } else {
            lo + rng.below_hi32((i - lo) as u64) as usize
        };
        *slot = p as u32;
    }
    let mut start = vec![0u32; n + 1];
    for &p in &tree_parent {
        if p != u32::MAX {
            start[p as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut children = vec![0u32; start[n] as usize];
    let mut fill = start.clone();
    for (i, &p) in tree_parent.iter().enumerate() {
        if p != u32::MAX {
            children[fill[p as usize] as usize] = i as u32;
            fill[p as usize] += 1;
        }
    }
    drop(fill);
    drop(tree_parent);
    d.obj_id.reserve_exact(n);
    d.ref_start.reserve_exact(n + 1);
    d.ref_target.reserve_exact(n * 3);
    d.ref_field.reserve_exact(n * 3);
    let mut slots: Vec<ObjIdx> = Vec::new();
    for i in 0..n {
        slots.clear();
        slots.extend_from_slice(&children[start[i] as usize..start[i + 1] as usize]);
        // Cross references: 1.75 on average; a live object's stay among live objects, so that
        // the garbage region stays garbage.
        let cross = [0, 1, 1, 2, 2, 2, 3, 3][rng.below_hi32(8) as usize];
        let hi_all = if i < live { live } else { n };
        for _ in 0..cross {
            let t = match rng.below_hi32(20) {
                0..10 => {
                    let lo = i.saturating_sub(1000);
                    let hi = (i + 1000).min(hi_all - 1);
                    lo + rng.below_hi32((hi - lo + 1) as u64) as usize
                }
                10..17 => rng.below_hi32((hi_all / 100).max(1) as u64) as usize,
                _ => rng.below_hi32(hi_all as u64) as usize,
            };
            slots.push(t as ObjIdx);
        }
        if rng.below_hi32(7) == 0 {
            slots.push(REF_NULL);
        }
        let id = 0x1000 + 16 * i as u64;
        let native = if rng.below_hi32(1000) == 0 { 4096 + rng.below_hi32(60_000) } else { 0 };
        let o = if slots.is_empty() && rng.below_hi32(13) == 0 {
            let o = d.push_object(id, weak_class, ObjectKind::Instance, 0, 16, 0);
            d.push_ref(referent, rng.below_hi32(n as u64) as ObjIdx);
            o
        } else if slots.is_empty() && rng.below_hi32(3) == 0 {
            let len = rng.below_hi32(4096) as u32;
            d.push_object(id, bytes_class, ObjectKind::PrimitiveArray(BasicType::Byte), 0, 16 + u64::from(len), len)
        } else if slots.len() > 4 {
            let len = slots.len() as u32;
            let o = d.push_object(id, array_class, ObjectKind::ObjectArray, 0, 16 + 4 * u64::from(len), len);
            for &t in &slots {
                d.push_ref(NO_FIELD, t);
            }
            o
        } else {
            let c = first_app + 8 * slots.len() as u32 + rng.below_hi32(8) as u32;
            let size = d.classes[c as usize].instance_size;
            let o = d.push_object(id, c, ObjectKind::Instance, 0, size, 0);
            for (k, &t) in slots.iter().enumerate() {
                d.push_ref(fnames[k], t);
            }
            o
        };
        d.obj_native_size[o as usize] = native;
    }
    if n > 0 {
        d.roots.push(Root { object: 0, kind: RootKind::JniLocal });
        d.roots.push(Root { object: 0, kind: RootKind::StickyClass });
    }
    for (k, i) in (5000..live).step_by(5000).enumerate() {
        let kind = if k % 10 == 9 { RootKind::JniGlobal } else { RootKind::JavaFrame };
        d.roots.push(Root { object: i as ObjIdx, kind });
    }
    d
}

#[cfg(test)]
mod tests {
    use heapconv::analysis::heap::RootedHeap;

    use super::*;

    #[test]
    fn synthetic_heap_dumps_are_valid_deterministic_and_shaped_as_documented() {
        let a = synthetic_heap_dump(50_000, 7);
        a.validate().unwrap();
        let b = synthetic_heap_dump(50_000, 7);
        assert_eq!(a.ref_target, b.ref_target);
        assert_eq!(a.obj_class, b.obj_class);
        assert_ne!(synthetic_heap_dump(50_000, 8).ref_target, a.ref_target);
        let refs_per_object = a.ref_target.len() as f64 / a.len() as f64;
        assert!((2.4..3.3).contains(&refs_per_object), "{refs_per_object}");
        let h = RootedHeap::new(&a);
        assert_eq!(h.root_kind(0), Some(RootKind::StickyClass));
        let reach = h.reachable().iter().filter(|&&r| r).count();
        // All live objects are reachable through the spanning tree; the last 2% are garbage.
        assert_eq!(reach, 49_000);
        assert_eq!(h.dominators().order.len(), reach);
        assert_eq!(h.shortest_path_tree().order.len(), reach);
        // Weak references exist (class 2, java.lang.ref.WeakReference).
        assert_eq!(a.classes[2].name, "java.lang.ref.WeakReference");
        assert!(a.obj_class.iter().filter(|&&c| c == 2).count() > 100);
    }
}
