//! The writer's plan, made before a byte is written: classes and their field layouts (with
//! the `Reference` fields hoisted), the strings and ids they need.

use super::*;

/// One instance-field slot of a class layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// A reference field, filled from the object's reference with this field name.
    Ref(FieldIdx),
    /// A primitive field (zero).
    Prim(BasicType),
    /// The `runtimeInternalObjects` field.
    Internal,
}

/// A class as written.
#[derive(Debug, Clone)]
pub(super) struct HClass {
    pub(super) name: String,
    pub(super) id: u64,
    pub(super) super_idx: Option<usize>,
    pub(super) loader: u64,
    pub(super) instance_size: u32,
    /// (name, target) of static reference fields.
    pub(super) statics: Vec<(String, ObjIdx)>,
    /// Own instance fields: slot and name.
    pub(super) own: Vec<(Slot, String)>,
    /// Model heap index of the class object (0 without one).
    pub(super) heap: u8,
}

/// Interned strings, ids from 1 in order of first use.
#[derive(Default)]
pub(super) struct Strings {
    ids: HashMap<String, u64>,
    pub(super) list: Vec<String>,
}

impl Strings {
    pub(super) fn id(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        self.list.push(s.to_owned());
        let i = self.list.len() as u64;
        self.ids.insert(s.to_owned(), i);
        i
    }
}

/// The short hprof name of an instance field named `Class.field` in a heap graph.
pub(super) fn short_field(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The hprof name of a static field held by class `class` (ART's `$class$` prefix for the
/// fields of `java.lang.Class` itself).
pub(super) fn static_field_name(class: &str, name: &str) -> String {
    if let Some(rest) = name.strip_prefix("java.lang.Class.") {
        return format!("$class${rest}");
    }
    if let Some(rest) = name.strip_prefix(class).and_then(|r| r.strip_prefix('.')) {
        return rest.to_owned();
    }
    if name.is_empty() {
        return "runtimeInternalObjects".to_owned();
    }
    short_field(name).to_owned()
}

/// Matches an object's references to the reference slots of its layout: fills `vals` (one
/// per slot: the target, or [`REF_NULL`]) and `left` (references no slot takes).
pub(super) fn match_refs(slots: &[Slot], refs: &[(FieldIdx, ObjIdx)], vals: &mut Vec<ObjIdx>, left: &mut Vec<ObjIdx>) {
    vals.clear();
    left.clear();
    let ref_slots = slots.iter().filter(|s| matches!(s, Slot::Ref(_))).count();
    if ref_slots == refs.len()
        && slots.iter().filter_map(|s| if let Slot::Ref(f) = s { Some(*f) } else { None }).eq(refs.iter().map(|r| r.0))
    {
        let mut it = refs.iter();
        for s in slots {
            vals.push(match s {
                Slot::Ref(_) => it.next().expect("counted").1,
                _ => REF_NULL,
            });
        }
        return;
    }
    let mut used = vec![false; refs.len()];
    for s in slots {
        let v = match s {
            Slot::Ref(f) if *f != NO_FIELD => match (0..refs.len()).find(|&i| !used[i] && refs[i].0 == *f) {
                Some(i) => {
                    used[i] = true;
                    refs[i].1
                }
                None => REF_NULL,
            },
            _ => REF_NULL,
        };
        vals.push(v);
    }
    for (i, r) in refs.iter().enumerate() {
        if !used[i] && r.1 != REF_NULL {
            left.push(r.1);
        }
    }
}
/// The writer's plan: classes, layouts and ids.
pub(super) struct Plan {
    pub(super) id_size: u8,
    /// Object id as written, by object (dense numbering when renumbered).
    pub(super) renumber: bool,
    /// The first id made up by the writer, and the next one free.
    pub(super) first_synthetic: u64,
    pub(super) next_id: u64,
    pub(super) classes: Vec<HClass>,
    /// Model class -> written class (None for class-object types `java.lang.Class<X>`).
    pub(super) class_map: Vec<Option<usize>>,
    /// Class object -> written class.
    class_of_object: HashMap<ObjIdx, usize>,
    /// Per written class: its layout with the superclasses' (own fields first).
    pub(super) chains: Vec<Vec<Slot>>,
    /// Per written class: index in `chains[c]` of its own `Internal` slot.
    pub(super) internal_slot: Vec<Option<usize>>,
    pub(super) object_array_class: Option<usize>,
    pub(super) strings: Strings,
}

impl Plan {
    pub(super) fn obj_id(&self, d: &HeapDump, o: ObjIdx) -> u64 {
        if self.renumber { u64::from(o) + 1 } else { d.obj_id[o as usize] }
    }

    pub(super) fn target_id(&self, d: &HeapDump, t: ObjIdx, summary: &mut HprofSummary) -> u64 {
        match t {
            REF_NULL => 0,
            REF_DANGLING => {
                summary.dangling_as_null += 1;
                0
            }
            t => self.obj_id(d, t),
        }
    }
}

pub(super) fn chain_of(classes: &[HClass], c: usize) -> Vec<Slot> {
    let mut out = Vec::new();
    let mut cur = Some(c);
    let mut seen = HashSet::default();
    while let Some(i) = cur {
        if !seen.insert(i) {
            break;
        }
        out.extend(classes[i].own.iter().map(|(s, _)| *s));
        cur = classes[i].super_idx;
    }
    out
}

pub(super) const REFERENCE_CLASS: &str = "java.lang.ref.Reference";

/// Gives the fields a heap graph names `java.lang.ref.Reference.x` to class
/// `java.lang.ref.Reference` when the class holding them has no such class in its superclass
/// chain (heap graphs may declare them on `java.lang.ref.WeakReference` itself, or name them
/// per object before Android S). In hprof the declaring class is known only through the
/// chain, and readers (ours, MAT, Android Studio) recognise a reference's `referent` as the
/// field `java.lang.ref.Reference` declares: left where it was, a weak referent would read
/// back as a strong field. `java.lang.ref.Reference` is the dump's own class if it has one,
/// else a synthetic class below `java.lang.Object`; the topmost class of each such chain is
/// re-parented under it.
pub(super) fn hoist_reference_fields(d: &HeapDump, classes: &mut Vec<HClass>, needs_id: &mut Vec<usize>) {
    let prefix = format!("{REFERENCE_CLASS}.");
    let is_reference_field = |f: FieldIdx| {
        let name = d.field_name(f);
        name.rsplit_once(' ').map_or(name, |(_, n)| n).starts_with(&prefix)
    };
    let mut reference = classes.iter().position(|c| c.name == REFERENCE_CLASS);
    let mut created = false;
    let object = classes.iter().position(|c| c.name == "java.lang.Object");
    for c in 0..classes.len() {
        if Some(c) == reference
            || !classes[c].own.iter().any(|(s, _)| matches!(s, Slot::Ref(f) if is_reference_field(*f)))
        {
            continue;
        }
        // The chain, cycle-safe; skipped when it already has java.lang.ref.Reference.
        let mut chain = vec![c];
        while let Some(s) = classes[*chain.last().expect("not empty")].super_idx {
            if chain.contains(&s) {
                break;
            }
            chain.push(s);
        }
        if chain.iter().any(|&k| classes[k].name == REFERENCE_CLASS) {
            continue;
        }
        let r = match reference {
            Some(r) => r,
            None => {
                let r = classes.len();
                needs_id.push(r);
                classes.push(HClass {
                    name: REFERENCE_CLASS.to_owned(),
                    id: 0,
                    super_idx: object,
                    loader: 0,
                    instance_size: object.map_or(0, |o| classes[o].instance_size),
                    statics: Vec::new(),
                    own: Vec::new(),
                    heap: 0,
                });
                reference = Some(r);
                created = true;
                r
            }
        };
        // Re-parent the chain's top below java.lang.Object (or its last class) under
        // java.lang.ref.Reference, unless that would close a cycle.
        let top = match chain.iter().position(|&k| Some(k) == object) {
            Some(0) => continue,
            Some(i) => chain[i - 1],
            None => *chain.last().expect("not empty"),
        };
        let mut up = Some(r);
        let mut cycle = false;
        for _ in 0..=classes.len() {
            match up {
                Some(k) if k == top => {
                    cycle = true;
                    break;
                }
                Some(k) => up = classes[k].super_idx,
                None => break,
            }
        }
        if cycle {
            continue;
        }
        classes[top].super_idx = Some(r);
        let own = std::mem::take(&mut classes[c].own);
        let (moved, kept): (Vec<_>, Vec<_>) =
            own.into_iter().partition(|(s, _)| matches!(s, Slot::Ref(f) if is_reference_field(*f)));
        classes[c].own = kept;
        for m in moved {
            if !classes[r].own.iter().any(|(s, _)| *s == m.0) {
                if created {
                    classes[r].instance_size = classes[r].instance_size.saturating_add(ART_REF as u32);
                }
                classes[r].own.push(m);
            }
        }
    }
}

pub(super) fn plan(d: &HeapDump, opts: &HprofOptions) -> Plan {
    let n = d.len();
    // Class objects: assigned to their class, or orphans that become classes of their own.
    let mut object_class: HashMap<ObjIdx, ClassIdx> = HashMap::default();
    for (i, c) in d.classes.iter().enumerate() {
        if let Some(o) = c.object {
            if (o as usize) < n {
                object_class.insert(o, i as ClassIdx);
            }
        }
    }
    let mut classes: Vec<HClass> = Vec::new();
    let mut class_map: Vec<Option<usize>> = vec![None; d.classes.len()];
    let mut class_of_object: HashMap<ObjIdx, usize> = HashMap::default();
    let mut needs_id: Vec<usize> = Vec::new();
    for (i, c) in d.classes.iter().enumerate() {
        if class_object_target(&c.name).is_some() {
            continue;
        }
        let idx = classes.len();
        class_map[i] = Some(idx);
        let (id, heap) = match c.object.filter(|&o| (o as usize) < n) {
            Some(o) => {
                class_of_object.insert(o, idx);
                (0, d.obj_heap[o as usize])
            }
            None => {
                needs_id.push(idx);
                (0, 0)
            }
        };
        let name = if c.name.is_empty() { format!("<unknown type {:#x}>", c.id) } else { c.name.clone() };
        let statics = c.static_refs.iter().map(|&(f, t)| (static_field_name(&c.name, d.field_name(f)), t)).collect();
        classes.push(HClass {
            name,
            id,
            super_idx: None,
            loader: c.classloader_id,
            instance_size: u32::try_from(c.instance_size).unwrap_or(u32::MAX),
            statics,
            own: Vec::new(),
            heap,
        });
    }
    for (i, c) in d.classes.iter().enumerate() {
        if let (Some(me), Some(s)) = (class_map[i], c.superclass) {
            classes[me].super_idx = class_map.get(s as usize).copied().flatten();
        }
    }
    // Orphan class objects: classes of their own.
    for o in 0..n as ObjIdx {
        if d.obj_kind[o as usize] != ObjectKind::Class || object_class.contains_key(&o) {
            continue;
        }
        let own_type = d.class_of(o);
        let name = class_object_target(&own_type.name)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("<class object {:#x}>", d.obj_id[o as usize]));
        let statics = d.refs(o).map(|(f, t)| (static_field_name(&name, d.field_name(f)), t)).collect();
        let idx = classes.len();
        class_of_object.insert(o, idx);
        classes.push(HClass {
            name,
            id: 0,
            super_idx: None,
            loader: 0,
            instance_size: 0,
            statics,
            own: Vec::new(),
            heap: d.obj_heap[o as usize],
        });
    }

    // Own fields: declared ones; for classes whose whole chain declares none, the field names
    // their instances use (heap graphs from before Android S name fields per object).
    for (i, c) in d.classes.iter().enumerate() {
        let Some(me) = class_map[i] else { continue };
        classes[me].own = c
            .fields
            .iter()
            .map(|f| {
                let slot = if f.ty == BasicType::Object { Slot::Ref(f.name) } else { Slot::Prim(f.ty) };
                (slot, short_field(d.field_name(f.name)).to_owned())
            })
            .collect();
    }
    let declared: Vec<bool> =
        (0..classes.len()).map(|c| chain_of(&classes, c).iter().any(|s| matches!(s, Slot::Ref(_)))).collect();
    let mut inferred: Vec<Vec<FieldIdx>> = vec![Vec::new(); classes.len()];
    for o in 0..n as ObjIdx {
        if d.obj_kind[o as usize] != ObjectKind::Instance {
            continue;
        }
        let Some(c) = class_map[d.obj_class[o as usize] as usize] else { continue };
        if declared[c] {
            continue;
        }
        for (f, _) in d.refs(o) {
            if f != NO_FIELD && !inferred[c].contains(&f) {
                inferred[c].push(f);
            }
        }
    }
    for (c, fields) in inferred.into_iter().enumerate() {
        for f in fields {
            classes[c].own.push((Slot::Ref(f), short_field(d.field_name(f)).to_owned()));
        }
    }
    hoist_reference_fields(d, &mut classes, &mut needs_id);
    // Primitive padding up to the instance size, in ART's units.
    if opts.primitive_padding {
        // Sizes capped at MAX_PADDING: a hostile instance size (up to 4 GiB) would otherwise
        // make millions of fields, more than a CLASS_DUMP can count (u2).
        let sizes: Vec<u64> = classes.iter().map(|c| u64::from(c.instance_size).min(MAX_PADDING)).collect();
        for c in 0..classes.len() {
            let hc = &classes[c];
            if hc.name.ends_with("[]") || hc.own.iter().any(|(s, _)| matches!(s, Slot::Prim(_))) {
                continue;
            }
            let refs = hc.own.len() as u64;
            let base = hc.super_idx.map(|s| sizes[s]).unwrap_or(0);
            let mut pad = sizes[c].saturating_sub(base).saturating_sub(refs * ART_REF);
            let mut k = 0;
            for (t, size) in [(BasicType::Long, 8), (BasicType::Int, 4), (BasicType::Short, 2), (BasicType::Byte, 1)] {
                while pad >= size {
                    classes[c].own.push((Slot::Prim(t), format!("$primitive${k}")));
                    k += 1;
                    pad -= size;
                }
            }
        }
    }
    // Runtime-internal references: an extra field for classes with instances holding
    // references their layout has no field for.
    let chains: Vec<Vec<Slot>> = (0..classes.len()).map(|c| chain_of(&classes, c)).collect();
    let mut internal = vec![false; classes.len()];
    let mut arrays = 0u64;
    let (mut vals, mut left, mut rv) = (Vec::new(), Vec::new(), Vec::new());
    for o in 0..n as ObjIdx {
        if d.obj_kind[o as usize] != ObjectKind::Instance {
            continue;
        }
        let Some(c) = class_map[d.obj_class[o as usize] as usize] else { continue };
        rv.clear();
        rv.extend(d.refs(o));
        match_refs(&chains[c], &rv, &mut vals, &mut left);
        if !left.is_empty() {
            internal[c] = true;
            arrays += 1;
        }
    }
    for (c, need) in internal.iter().enumerate() {
        if *need {
            classes[c].own.push((Slot::Internal, "runtimeInternalObjects".to_owned()));
        }
    }
    let mut object_array_class = None;
    if arrays > 0 {
        object_array_class = classes.iter().position(|c| c.name == "java.lang.Object[]");
        if object_array_class.is_none() {
            let sup = classes.iter().position(|c| c.name == "java.lang.Object");
            object_array_class = Some(classes.len());
            needs_id.push(classes.len());
            classes.push(HClass {
                name: "java.lang.Object[]".to_owned(),
                id: 0,
                super_idx: sup,
                loader: 0,
                instance_size: 0,
                statics: Vec::new(),
                own: Vec::new(),
                heap: 0,
            });
        }
    }
    let chains: Vec<Vec<Slot>> = (0..classes.len()).map(|c| chain_of(&classes, c)).collect();
    let internal_slot = (0..classes.len())
        .map(|c| {
            let own = classes[c].own.len();
            classes[c].own.iter().position(|(s, _)| *s == Slot::Internal).filter(|&p| p < own)
        })
        .collect();

    // Ids: the producer's if everything fits in 4 bytes, else 8 bytes (or, for Android,
    // renumbered).
    let synthetic = needs_id.len() as u64 + arrays;
    let max_id = d.obj_id.iter().copied().max().unwrap_or(0);
    let fits = |top: u64| top.checked_add(synthetic).is_some_and(|t| t < u64::from(u32::MAX));
    let (id_size, renumber) = if fits(max_id) {
        (4, false)
    } else if opts.android {
        (if fits(n as u64) { 4 } else { 8 }, true)
    } else if max_id.checked_add(synthetic + 1).is_none() {
        // No room above the largest id for the writer's own: renumber.
        (8, true)
    } else {
        (8, false)
    };
    let mut plan = Plan {
        id_size,
        renumber,
        first_synthetic: 0,
        next_id: 0,
        classes,
        class_map,
        class_of_object,
        chains,
        internal_slot,
        object_array_class,
        strings: Strings::default(),
    };
    plan.next_id = if renumber { n as u64 + 1 } else { max_id + 1 };
    plan.first_synthetic = plan.next_id;
    for (&o, &c) in &plan.class_of_object {
        let id = plan.obj_id(d, o);
        plan.classes[c].id = id;
    }
    for c in needs_id {
        plan.classes[c].id = plan.next_id;
        plan.next_id += 1;
    }
    plan
}
