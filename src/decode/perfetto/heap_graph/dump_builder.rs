//! A gathered dump turned into a [`HeapDump`]: classes and their layouts, objects and their
//! references, native sizes, class objects, as trace processor builds them.

use super::*;

/// How objects of a class are laid out, from its name and kind.
pub(super) fn object_kind(c: &Class) -> Option<ObjectKind> {
    if class_object_target(&c.name).is_some() {
        return Some(ObjectKind::Class);
    }
    if c.name.ends_with("[]") {
        return Some(match primitive_array_element(&c.name) {
            Some(t) => ObjectKind::PrimitiveArray(t),
            None => ObjectKind::ObjectArray,
        });
    }
    if c.kind == ClassKind::Array {
        // An array whose element type the name does not tell: decided per object.
        return None;
    }
    Some(ObjectKind::Instance)
}

/// Interns field names into a dump's table.
pub(super) struct FieldNames<'a> {
    by_iid: HashMap<u64, FieldIdx>,
    by_name: HashMap<String, FieldIdx>,
    defs: &'a HashMap<u64, String>,
    undefined: u64,
}

impl FieldNames<'_> {
    fn name(&mut self, out: &mut Vec<String>, name: &str) -> FieldIdx {
        if let Some(&f) = self.by_name.get(name) {
            return f;
        }
        let f = out.len() as FieldIdx;
        out.push(name.to_owned());
        self.by_name.insert(name.to_owned(), f);
        f
    }

    /// The field for an interned field-name id, or [`NO_FIELD`] when it is not defined.
    fn iid(&mut self, out: &mut Vec<String>, iid: u64) -> FieldIdx {
        if let Some(&f) = self.by_iid.get(&iid) {
            return f;
        }
        let f = match self.defs.get(&iid) {
            Some(n) => {
                let n = n.clone();
                self.name(out, &n)
            }
            None => {
                self.undefined += 1;
                NO_FIELD
            }
        };
        self.by_iid.insert(iid, f);
        f
    }
}

/// Resolves a finished dump into the shared model.
pub(super) fn build(mut d: Dump, problems: &mut Vec<String>) -> HeapDump {
    let mut out =
        HeapDump { id_size: 8, heaps: HEAP_NAMES.iter().map(|s| (*s).to_owned()).collect(), ..Default::default() };

    // Classes: types used by objects in order of first use, then unused types by id.
    let mut unused: Vec<u64> = d.types.keys().copied().filter(|id| !d.type_slots.contains_key(id)).collect();
    unused.sort_unstable();
    for id in unused {
        d.type_slot(id);
    }
    let mut names =
        FieldNames { by_iid: HashMap::default(), by_name: HashMap::default(), defs: &d.fields, undefined: 0 };
    let empty = TypeDef::default();
    let mut undefined_types = 0u64;
    let mut missing_locations = 0u64;
    let mut missing_supers = 0u64;
    for &tid in &d.type_slot_ids {
        let t = match d.types.get(&tid) {
            Some(t) => t,
            None => {
                undefined_types += 1;
                &empty
            }
        };
        let location = t.location_id.and_then(|l| match d.locations.get(&l) {
            Some(s) => Some(s.clone()),
            None => {
                missing_locations += 1;
                None
            }
        });
        let superclass = if t.superclass_id == 0 {
            None
        } else {
            match d.type_slots.get(&t.superclass_id) {
                Some(&s) if d.types.contains_key(&t.superclass_id) => Some(s as ClassIdx),
                _ => {
                    missing_supers += 1;
                    None
                }
            }
        };
        let fields = t
            .field_ids
            .iter()
            .map(|&f| {
                let name = match names.iid(&mut out.field_names, f) {
                    NO_FIELD => names.name(&mut out.field_names, &format!("<field {f}>")),
                    n => n,
                };
                FieldDesc { name, ty: BasicType::Object }
            })
            .collect();
        out.classes.push(Class {
            id: tid,
            name: t.name.clone(),
            superclass,
            classloader_id: t.classloader_id,
            instance_size: t.object_size,
            kind: ClassKind::from_perfetto(t.kind),
            fields,
            static_refs: Vec::new(),
            location,
            object: None,
        });
    }
    if undefined_types > 0 {
        problems
            .push(format!("{undefined_types} type(s) used by objects were never defined (their classes have no name)"));
    }
    if missing_locations > 0 {
        problems.push(format!("{missing_locations} type(s) name a location that was never defined"));
    }
    if missing_supers > 0 {
        problems.push(format!("{missing_supers} type(s) name a superclass that was never defined"));
    }
    let kinds: Vec<Option<ObjectKind>> = out.classes.iter().map(object_kind).collect();
    // Per class: the field names its instances' references take when they carry no field
    // ids: the type's list, then its superclass's, and so on (trace processor's walk), as far
    // as its instances need (their most references), so that a long chain of superclasses
    // costs what the references do, not its length per class.
    let mut need: Vec<u32> = vec![0; d.type_slot_ids.len()];
    for o in d.defs.iter().filter(|o| o.fields_start == u64::MAX) {
        let n = &mut need[o.type_slot as usize];
        *n = (*n).max(o.n_refs);
    }
    let loops = superclass_loops(&d.types);
    if loops > 0 {
        problems.push(format!("{loops} superclass chain(s) loop back on themselves; each is cut where it repeats"));
    }
    let with_fields = nearest_with_fields(&d.types);
    let chain_fields: Vec<Option<Vec<FieldIdx>>> = d
        .type_slot_ids
        .iter()
        .zip(&need)
        .map(|(tid, &need)| {
            d.types.get(tid).filter(|t| !t.no_fields())?;
            let mut list = Vec::new();
            let mut seen: rustc_hash::FxHashSet<u64> = rustc_hash::FxHashSet::default();
            let mut cur = with_fields.get(tid).copied().unwrap_or(0);
            // Each step adds at least one name: at most `need` steps.
            while cur != 0 && list.len() < need as usize && seen.insert(cur) {
                let Some(c) = d.types.get(&cur) else { break };
                let room = need as usize - list.len();
                list.extend(c.field_ids.iter().take(room).map(|&f| names.iid(&mut out.field_names, f)));
                if c.superclass_id == 0 {
                    break;
                }
                cur = with_fields.get(&c.superclass_id).copied().unwrap_or(0);
            }
            Some(list)
        })
        .collect();

    // Objects in row order; rows never defined are not objects.
    let mut row_obj: Vec<ObjIdx> = Vec::with_capacity(d.row_def.len());
    let mut n = 0u32;
    for &def in &d.row_def {
        if def == NO_DEF {
            row_obj.push(REF_DANGLING);
        } else {
            row_obj.push(n);
            n += 1;
        }
    }
    let nobj = n as usize;
    out.obj_id.reserve(nobj);
    out.obj_class.reserve(nobj);
    out.obj_kind.reserve(nobj);
    out.obj_heap.reserve(nobj);
    out.obj_self_size.reserve(nobj);
    out.obj_native_size.reserve(nobj);
    out.obj_len.reserve(nobj);
    out.ref_start.reserve(nobj + 1);
    out.ref_target.reserve(d.ref_rows.len());
    out.ref_field.reserve(d.ref_rows.len());
    let mut unnamed_walks = 0u64;
    for (row, &def) in d.row_def.iter().enumerate() {
        if def == NO_DEF {
            continue;
        }
        let o = d.defs[def as usize];
        let tid = d.type_slot_ids[o.type_slot as usize];
        let ty = d.types.get(&tid);
        let class = o.type_slot as ClassIdx;
        let mut self_size = o.self_size;
        if self_size == 0 {
            self_size = ty.map(|t| t.object_size).unwrap_or(0);
        }
        let kind = kinds[class as usize].unwrap_or(if o.n_refs > 0 {
            ObjectKind::ObjectArray
        } else {
            ObjectKind::PrimitiveArray(BasicType::Byte)
        });
        let len = match kind {
            ObjectKind::ObjectArray => o.n_refs,
            ObjectKind::PrimitiveArray(t) => {
                let size = u64::from(t.size(4));
                let off = art_array_data_offset(size);
                u32::try_from(self_size.saturating_sub(off) / size).unwrap_or(u32::MAX)
            }
            _ => 0,
        };
        out.push_object(d.row_ids[row], class, kind, o.heap, self_size, len);
        // Field names of the references.
        let refs = &d.ref_rows[o.refs_start as usize..(o.refs_start + u64::from(o.n_refs)) as usize];
        let explicit = o.fields_start != u64::MAX;
        let chain = if explicit { None } else { chain_fields[class as usize].as_deref() };
        if chain.is_some_and(|c| refs.len() > c.len()) {
            unnamed_walks += 1;
        }
        for (i, &r) in refs.iter().enumerate() {
            let field = if explicit {
                names.iid(&mut out.field_names, d.obj_field_ids[o.fields_start as usize + i])
            } else {
                chain.and_then(|c| c.get(i).copied()).unwrap_or(NO_FIELD)
            };
            let target = if r == NO_ROW { REF_NULL } else { row_obj[r as usize] };
            if target == REF_DANGLING {
                out.dangling_refs += 1;
            }
            out.push_ref(field, target);
        }
        let internal_start = (o.refs_start + u64::from(o.n_refs)) as usize;
        for &r in &d.ref_rows[internal_start..internal_start + o.n_internal as usize] {
            let target = if r == NO_ROW { REF_NULL } else { row_obj[r as usize] };
            if target == REF_DANGLING {
                out.dangling_refs += 1;
            }
            out.push_ref(NO_FIELD, target);
        }
    }
    if out.ref_start.is_empty() {
        out.ref_start.push(0);
    }
    if names.undefined > 0 {
        problems
            .push(format!("{} field-name id(s) were never defined; those references have no name", names.undefined));
    }
    if unnamed_walks > 0 {
        problems.push(format!(
            "{unnamed_walks} object(s) have more references than their type and superclasses declare fields"
        ));
    }
    if out.dangling_refs > 0 {
        problems.push(format!("{} reference(s) to ids no object of the dump has", out.dangling_refs));
    }

    // Roots: the producer's, then VM_INTERNAL for zygote and boot-image objects.
    let mut missing_roots = 0u64;
    let lookup = |id: u64| d.rows.get(&id).map(|&r| row_obj[r as usize]).filter(|&o| o != REF_DANGLING);
    for (kind, ids) in &d.roots {
        for &id in ids {
            match lookup(id) {
                Some(object) => out.roots.push(Root { object, kind: *kind }),
                None => missing_roots += 1,
            }
        }
    }
    for &id in &d.vm_internal {
        if let Some(object) = lookup(id) {
            out.roots.push(Root { object, kind: RootKind::VmInternal });
        }
    }
    if missing_roots > 0 {
        problems.push(format!("{missing_roots} root(s) name ids no object of the dump has"));
    }

    // Registry sizes by object (the last definition of an object wins).
    let nar: Vec<(ObjIdx, i64)> = d
        .nar
        .iter()
        .filter(|&&(def, _)| d.row_def[d.defs[def as usize].row as usize] == def)
        .map(|&(def, size)| (row_obj[d.defs[def as usize].row as usize], size))
        .collect();
    native_sizes(&mut out, &nar);
    class_objects(&mut out);
    out
}

/// The first reference of `o` through field `f`, if it points at an object.
pub(super) fn field_target(d: &HeapDump, o: ObjIdx, f: Option<FieldIdx>) -> Option<Option<ObjIdx>> {
    let f = f?;
    let (_, t) = d.refs(o).find(|&(rf, _)| rf == f)?;
    Some((t != REF_NULL && t != REF_DANGLING).then_some(t))
}

/// Native sizes through `sun.misc.Cleaner` → `NativeAllocationRegistry$CleanerThunk` →
/// `NativeAllocationRegistry` chains.
pub(super) fn native_sizes(d: &mut HeapDump, nar: &[(ObjIdx, i64)]) {
    if nar.is_empty() {
        return;
    }
    let field = |name: &str| d.field_names.iter().position(|n| n == name).map(|i| i as FieldIdx);
    let referent = field("java.lang.ref.Reference.referent");
    let thunk = field("sun.misc.Cleaner.thunk");
    let next = field("sun.misc.Cleaner.next");
    let this0 = field("libcore.util.NativeAllocationRegistry$CleanerThunk.this$0");
    let sizes: HashMap<ObjIdx, i64> = nar.iter().copied().collect();
    let cleaners: Vec<ClassIdx> =
        (0..d.classes.len() as ClassIdx).filter(|&c| d.classes[c as usize].name == "sun.misc.Cleaner").collect();
    if cleaners.is_empty() {
        return;
    }
    let mut add: Vec<(ObjIdx, u64)> = Vec::new();
    for o in 0..d.len() as ObjIdx {
        if !cleaners.contains(&d.obj_class[o as usize]) {
            continue;
        }
        let (Some(Some(x)), Some(Some(t))) = (field_target(d, o, referent), field_target(d, o, thunk)) else {
            continue;
        };
        if field_target(d, o, next) == Some(Some(o)) {
            // `next` pointing at itself: the cleaner already ran.
            continue;
        }
        let Some(Some(r)) = field_target(d, t, this0) else { continue };
        if let Some(&size) = sizes.get(&r) {
            add.push((x, (size as u64) & !1));
        }
    }
    for (x, s) in add {
        let n = &mut d.obj_native_size[x as usize];
        *n = n.wrapping_add(s);
    }
}

/// Links class objects (`java.lang.Class<X>` instances) to the classes they stand for: sets
/// [`Class::object`] and [`Class::static_refs`], and takes a superclass from
/// `java.lang.Class.superClass` when the type named none.
pub(super) fn class_objects(d: &mut HeapDump) {
    let mut by_name: HashMap<&str, Vec<ClassIdx>> = HashMap::default();
    for (i, c) in d.classes.iter().enumerate() {
        if class_object_target(&c.name).is_none() {
            by_name.entry(c.name.as_str()).or_default().push(i as ClassIdx);
        }
    }
    let field = |name: &str| d.field_names.iter().position(|n| n == name).map(|i| i as FieldIdx);
    let loader_field = field("java.lang.Class.classLoader");
    let super_field = field("java.lang.Class.superClass");
    let mut assign: Vec<(ClassIdx, ObjIdx)> = Vec::new();
    let mut taken: Vec<bool> = vec![false; d.classes.len()];
    for o in 0..d.len() as ObjIdx {
        if d.obj_kind[o as usize] != ObjectKind::Class {
            continue;
        }
        let own = &d.classes[d.obj_class[o as usize] as usize];
        let Some(target) = class_object_target(&own.name) else { continue };
        let Some(cands) = by_name.get(target) else { continue };
        let free: Vec<ClassIdx> = cands.iter().copied().filter(|&c| !taken[c as usize]).collect();
        let pick = if free.len() <= 1 {
            free.first().copied()
        } else {
            let loader = field_target(d, o, loader_field).flatten().map(|l| d.obj_id[l as usize]);
            let by_loader: Vec<ClassIdx> = match loader {
                Some(l) => free.iter().copied().filter(|&c| d.classes[c as usize].classloader_id == l).collect(),
                None => Vec::new(),
            };
            let by_location: Vec<ClassIdx> =
                free.iter().copied().filter(|&c| d.classes[c as usize].location == own.location).collect();
            by_loader.first().or(by_location.first()).or(free.first()).copied()
        };
        if let Some(c) = pick {
            taken[c as usize] = true;
            assign.push((c, o));
        }
    }
    let mut class_of_object: HashMap<ObjIdx, ClassIdx> = HashMap::default();
    for &(c, o) in &assign {
        class_of_object.insert(o, c);
    }
    for (c, o) in assign {
        let statics: Vec<(FieldIdx, ObjIdx)> = d.refs(o).collect();
        let sup = field_target(d, o, super_field).flatten().and_then(|s| class_of_object.get(&s).copied());
        let class = &mut d.classes[c as usize];
        class.object = Some(o);
        class.static_refs = statics;
        if class.superclass.is_none() {
            class.superclass = sup;
        }
    }
}

/// For every type: the nearest type of its superclass chain, itself first, that declares
/// reference fields (0: none before the chain ends or loops), in time linear in the number of
/// types.
pub(super) fn nearest_with_fields(types: &HashMap<u64, TypeDef>) -> HashMap<u64, u64> {
    const BUSY: u64 = u64::MAX;
    let mut memo: HashMap<u64, u64> = HashMap::default();
    let mut ids: Vec<u64> = types.keys().copied().collect();
    ids.sort_unstable();
    let mut path: Vec<u64> = Vec::new();
    for start in ids {
        path.clear();
        let mut cur = start;
        let found = loop {
            match memo.get(&cur) {
                Some(&BUSY) => break 0,
                Some(&r) => break r,
                None => {}
            }
            let Some(t) = types.get(&cur) else { break 0 };
            if !t.field_ids.is_empty() {
                break cur;
            }
            memo.insert(cur, BUSY);
            path.push(cur);
            if t.superclass_id == 0 {
                break 0;
            }
            cur = t.superclass_id;
        };
        for &p in &path {
            memo.insert(p, found);
        }
        if found != 0 {
            memo.insert(found, found);
        }
    }
    memo
}

/// How many superclass chains loop back on themselves (each loop counted once), in time
/// linear in the number of types.
pub(super) fn superclass_loops(types: &HashMap<u64, TypeDef>) -> u64 {
    // 1: on the chain being followed, 2: done.
    let mut state: HashMap<u64, u8> = HashMap::default();
    let mut ids: Vec<u64> = types.keys().copied().collect();
    ids.sort_unstable();
    let mut loops = 0;
    let mut path = Vec::new();
    for start in ids {
        path.clear();
        let mut cur = start;
        while let Some(t) = types.get(&cur) {
            match state.get(&cur) {
                Some(1) => {
                    loops += 1;
                    break;
                }
                Some(_) => break,
                None => {}
            }
            state.insert(cur, 1);
            path.push(cur);
            if t.superclass_id == 0 {
                break;
            }
            cur = t.superclass_id;
        }
        for &p in &path {
            state.insert(p, 2);
        }
    }
    loops
}
