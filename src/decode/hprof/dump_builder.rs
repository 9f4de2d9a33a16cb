//! The heap dump as sub-records arrive: classes, their field layouts, instances, arrays and
//! roots, resolved into a [`HeapDump`] when the file ends.

use super::*;

/// An instance's reference fields, worked out from its class chain.
#[derive(Debug, Default)]
pub(super) struct Layout {
    /// Bytes of field values the chain declares.
    bytes: u64,
    /// (byte offset, provisional field index) of each object field, in layout order.
    refs: Vec<(u32, u32)>,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum LayoutState {
    /// Not known; the chain was incomplete when `dumped` classes had been dumped.
    Missing { dumped: u32 },
    /// `layouts[i]`.
    Ready(u32),
}

/// A class while the file is read.
#[derive(Debug)]
pub(super) struct ClassB {
    id: u64,
    dumped: bool,
    super_id: u64,
    loader_id: u64,
    instance_size: u32,
    /// (provisional field index, type).
    fields: Vec<(u32, BasicType)>,
    object: Option<ObjIdx>,
    layout: LayoutState,
}

/// `obj_class` of class objects until `java.lang.Class` is known.
pub(super) const CLASS_OF_CLASS: ClassIdx = u32::MAX;
/// `obj_class` of primitive arrays until their classes are known: this minus the type code.
pub(super) const CLASS_OF_PRIM: ClassIdx = u32::MAX - 1;

/// Builds a [`HeapDump`] from sub-records.
pub(super) struct Builder {
    id_size: u8,
    d: HeapDump,
    /// Reference target ids, parallel to `d.ref_field` (resolved to objects at the end).
    ref_ids: Vec<u64>,
    pub(super) strings: FxHashMap<u64, (usize, u32)>,
    string_bytes: Vec<u8>,
    pub(super) class_names: FxHashMap<u64, u64>,
    classes: Vec<ClassB>,
    class_by_id: FxHashMap<u64, ClassIdx>,
    dumped: u32,
    layouts: Vec<Layout>,
    /// Provisional field index -> name string id.
    field_sids: Vec<u64>,
    field_by_sid: FxHashMap<u64, u32>,
    /// Instances decoded at the end: (object, offset in `deferred_bytes`, length).
    deferred: Vec<(ObjIdx, usize, u32)>,
    deferred_bytes: Vec<u8>,
    roots: Vec<(u64, RootKind)>,
    /// (heap id or None for the default heap, name string id).
    heaps: Vec<(Option<u32>, Option<u64>)>,
    pub(super) cur_heap: Option<u8>,
    /// The last class an instance used: (class id, class index).
    last_class: (u64, ClassIdx),
    field_size_mismatches: u64,
    duplicate_class_dumps: u64,
}

impl Builder {
    /// A builder for the next heap dump of the file: the strings and class names (top-level
    /// records, shared by every dump) carried over, the heap empty.
    pub(super) fn successor(&mut self) -> Builder {
        let mut b = Builder::new(self.id_size);
        b.strings = std::mem::take(&mut self.strings);
        b.string_bytes = std::mem::take(&mut self.string_bytes);
        b.class_names = std::mem::take(&mut self.class_names);
        b
    }

    pub(super) fn new(id_size: u8) -> Self {
        Builder {
            id_size,
            d: HeapDump { ref_start: vec![0], ..Default::default() },
            ref_ids: Vec::new(),
            strings: FxHashMap::default(),
            string_bytes: Vec::new(),
            class_names: FxHashMap::default(),
            classes: Vec::new(),
            class_by_id: FxHashMap::default(),
            dumped: 0,
            layouts: Vec::new(),
            field_sids: Vec::new(),
            field_by_sid: FxHashMap::default(),
            deferred: Vec::new(),
            deferred_bytes: Vec::new(),
            roots: Vec::new(),
            heaps: Vec::new(),
            cur_heap: None,
            last_class: (u64::MAX, 0),
            field_size_mismatches: 0,
            duplicate_class_dumps: 0,
        }
    }

    /// Keeps string `id`; `false` when memory for it could not be had.
    pub(super) fn string(&mut self, id: u64, bytes: &[u8]) -> bool {
        let at = self.string_bytes.len();
        if self.strings.len() == self.strings.capacity()
            && self.strings.try_reserve(self.strings.len().max(1024)).is_err()
        {
            return false;
        }
        if self.string_bytes.capacity() - at < bytes.len()
            && self.string_bytes.try_reserve(bytes.len().max(at).max(4096)).is_err()
        {
            return false;
        }
        if let std::collections::hash_map::Entry::Vacant(e) = self.strings.entry(id) {
            e.insert((at, bytes.len() as u32));
            self.string_bytes.extend_from_slice(bytes);
        }
        true
    }

    fn string_text(&self, id: u64) -> Option<String> {
        self.strings.get(&id).map(|&(at, n)| decode_mutf8(&self.string_bytes[at..at + n as usize]))
    }

    fn class_idx(&mut self, id: u64) -> ClassIdx {
        if self.last_class.0 == id {
            return self.last_class.1;
        }
        let next = self.classes.len() as ClassIdx;
        let ci = *self.class_by_id.entry(id).or_insert(next);
        if ci == next {
            self.classes.push(ClassB {
                id,
                dumped: false,
                super_id: 0,
                loader_id: 0,
                instance_size: 0,
                fields: Vec::new(),
                object: None,
                layout: LayoutState::Missing { dumped: u32::MAX },
            });
        }
        self.last_class = (id, ci);
        ci
    }

    fn field(&mut self, sid: u64) -> u32 {
        let next = self.field_sids.len() as u32;
        let f = *self.field_by_sid.entry(sid).or_insert(next);
        if f == next {
            self.field_sids.push(sid);
        }
        f
    }

    fn heap(&mut self) -> Result<u8> {
        if let Some(h) = self.cur_heap {
            return Ok(h);
        }
        let h = self.heap_index(None, None)?;
        self.cur_heap = Some(h);
        Ok(h)
    }

    fn heap_index(&mut self, id: Option<u32>, name: Option<u64>) -> Result<u8> {
        if let Some(i) = self.heaps.iter().position(|h| h.0 == id) {
            if self.heaps[i].1.is_none() {
                self.heaps[i].1 = name;
            }
            return Ok(i as u8);
        }
        if self.heaps.len() >= 256 {
            return Err(Error::new(ErrorKind::Malformed, "more than 256 heaps (HEAP_DUMP_INFO heap ids)"));
        }
        self.heaps.push((id, name));
        Ok((self.heaps.len() - 1) as u8)
    }

    fn push_object(&mut self, id: u64, class: ClassIdx, kind: ObjectKind, heap: u8, size: u64, len: u32) -> ObjIdx {
        let d = &mut self.d;
        let idx = d.obj_id.len() as ObjIdx;
        d.obj_id.push(id);
        d.obj_class.push(class);
        d.obj_kind.push(kind);
        d.obj_heap.push(heap);
        d.obj_self_size.push(size);
        d.obj_native_size.push(0);
        d.obj_len.push(len);
        d.ref_start.push(self.ref_ids.len() as u64);
        idx
    }

    fn end_refs(&mut self) {
        *self.d.ref_start.last_mut().expect("an object") = self.ref_ids.len() as u64;
    }

    /// Checks there is room for one more object with up to `refs` references and `bytes`
    /// deferred field bytes: fewer objects than object indexes can number, and memory for
    /// them. Growth is fallible: a file that claims more objects than memory holds (a gzip
    /// bomb, a limit on the address space) gets an error, not an abort.
    fn room(&mut self, refs: usize, bytes: usize) -> Result<()> {
        let n = self.d.obj_id.len();
        if n >= (REF_DANGLING - 1) as usize {
            return Err(Error::new(ErrorKind::LimitExceeded, format!("more than {} objects", REF_DANGLING - 1)));
        }
        fn grow<T>(v: &mut Vec<T>, extra: usize) -> bool {
            v.capacity() - v.len() >= extra || v.try_reserve(extra.max(v.len()).max(1024)).is_ok()
        }
        let d = &mut self.d;
        let objects = grow(&mut d.obj_id, 1)
            && grow(&mut d.obj_class, 1)
            && grow(&mut d.obj_kind, 1)
            && grow(&mut d.obj_heap, 1)
            && grow(&mut d.obj_self_size, 1)
            && grow(&mut d.obj_native_size, 1)
            && grow(&mut d.obj_len, 1)
            && grow(&mut d.ref_start, 1);
        let refs = grow(&mut self.ref_ids, refs) && grow(&mut d.ref_field, refs);
        let deferred = grow(&mut self.deferred_bytes, bytes) && grow(&mut self.deferred, 1);
        if !(objects && refs && deferred) {
            return Err(Error::new(
                ErrorKind::LimitExceeded,
                format!("out of memory holding {n} objects and {} references", self.ref_ids.len()),
            ));
        }
        Ok(())
    }

    pub(super) fn sub_record(&mut self, sr: &Sub<'_>) -> Result<()> {
        match sr.record {
            SubRecord::Root(r) => self.roots.push((r.id, r.kind)),
            SubRecord::HeapDumpInfo { heap_id, name_id } => {
                let h = self.heap_index(Some(heap_id), Some(name_id))?;
                self.cur_heap = Some(h);
            }
            SubRecord::Class(c) => {
                self.room(c.statics().count(), 0)?;
                let ci = self.class_idx(c.id) as usize;
                if self.classes[ci].dumped {
                    self.duplicate_class_dumps += 1;
                    return Ok(());
                }
                let fields: Vec<(u32, BasicType)> = c.fields().map(|(n, ty)| (self.field(n), ty)).collect();
                let heap = self.heap()?;
                let mut static_bytes = 0u64;
                let mut refs = Vec::new();
                for st in c.statics() {
                    static_bytes += u64::from(st.ty.size(self.id_size));
                    if st.ty == BasicType::Object {
                        refs.push((self.field(st.name), st.value));
                    }
                }
                let obj = self.push_object(c.id, CLASS_OF_CLASS, ObjectKind::Class, heap, static_bytes, 0);
                for (f, v) in refs {
                    self.ref_ids.push(v);
                    self.d.ref_field.push(f);
                }
                self.end_refs();
                let cb = &mut self.classes[ci];
                cb.dumped = true;
                cb.super_id = c.super_id;
                cb.loader_id = c.loader_id;
                cb.instance_size = c.instance_size;
                cb.fields = fields;
                cb.object = Some(obj);
                self.dumped += 1;
            }
            SubRecord::Instance(inst) => {
                self.room(inst.data.len() / usize::from(self.id_size.max(1)), inst.data.len())?;
                let ci = self.class_idx(inst.class_id);
                let heap = self.heap()?;
                let obj = self.push_object(inst.id, ci, ObjectKind::Instance, heap, inst.data.len() as u64, 0);
                match self.layout(ci) {
                    Some(l) => self.decode_fields(l, inst.data),
                    None => {
                        self.deferred.push((obj, self.deferred_bytes.len(), inst.data.len() as u32));
                        self.deferred_bytes.extend_from_slice(inst.data);
                    }
                }
                self.end_refs();
            }
            SubRecord::ObjectArray(a) => {
                self.room(a.len as usize, 0)?;
                let ci = self.class_idx(a.class_id);
                let heap = self.heap()?;
                let size = u64::from(a.len) * u64::from(self.id_size);
                self.push_object(a.id, ci, ObjectKind::ObjectArray, heap, size, a.len);
                self.ref_ids.extend(a.ids());
                self.d.ref_field.resize(self.ref_ids.len(), NO_FIELD);
                self.end_refs();
            }
            SubRecord::PrimitiveArray(a) => {
                self.room(0, 0)?;
                let heap = self.heap()?;
                let size = u64::from(a.len) * u64::from(a.ty.size(self.id_size));
                let class = CLASS_OF_PRIM - a.ty as u32;
                self.push_object(a.id, class, ObjectKind::PrimitiveArray(a.ty), heap, size, a.len);
            }
        }
        Ok(())
    }

    /// The layout of class `ci`'s instances, if its whole chain has been dumped.
    fn layout(&mut self, ci: ClassIdx) -> Option<u32> {
        match self.classes[ci as usize].layout {
            LayoutState::Ready(l) => return Some(l),
            LayoutState::Missing { dumped } if dumped == self.dumped => return None,
            LayoutState::Missing { .. } => {}
        }
        let mut l = Layout::default();
        let mut c = ci as usize;
        let mut steps = 0usize;
        let complete = loop {
            let cb = &self.classes[c];
            if !cb.dumped || steps > self.classes.len() {
                break false;
            }
            for &(f, ty) in &cb.fields {
                if ty == BasicType::Object {
                    l.refs.push((l.bytes.min(u64::from(u32::MAX)) as u32, f));
                }
                l.bytes += u64::from(ty.size(self.id_size));
            }
            if cb.super_id == 0 {
                break true;
            }
            match self.class_by_id.get(&cb.super_id) {
                Some(&s) => c = s as usize,
                None => break false,
            }
            steps += 1;
        };
        if !complete {
            self.classes[ci as usize].layout = LayoutState::Missing { dumped: self.dumped };
            return None;
        }
        self.layouts.push(l);
        let i = (self.layouts.len() - 1) as u32;
        self.classes[ci as usize].layout = LayoutState::Ready(i);
        Some(i)
    }

    fn decode_fields(&mut self, l: u32, data: &[u8]) {
        let l = &self.layouts[l as usize];
        let id = usize::from(self.id_size);
        if data.len() as u64 != l.bytes {
            self.field_size_mismatches += 1;
        }
        for &(off, f) in &l.refs {
            let at = off as usize;
            let Some(b) = data.get(at..at + id) else { break };
            self.ref_ids.push(be_uint(b));
            self.d.ref_field.push(f);
        }
    }

    pub(super) fn finish(mut self, header: &FileHeader, stats: &mut HprofStats) -> Result<HeapDump> {
        let mut missing_strings = 0u64;
        let mut text = |b: &Builder, sid: u64| -> Option<String> {
            let t = b.string_text(sid);
            if t.is_none() {
                missing_strings += 1;
            }
            t
        };

        // Field names, interned by text.
        let mut field_names: Vec<String> = Vec::new();
        let mut by_text: FxHashMap<String, FieldIdx> = FxHashMap::default();
        let mut remap: Vec<FieldIdx> = Vec::with_capacity(self.field_sids.len());
        for i in 0..self.field_sids.len() {
            let sid = self.field_sids[i];
            let name = text(&self, sid).unwrap_or_else(|| format!("<string 0x{sid:x}>"));
            let next = field_names.len() as FieldIdx;
            let f = *by_text.entry(name.clone()).or_insert(next);
            if f == next {
                field_names.push(name);
            }
            remap.push(f);
        }

        // Superclasses that were never seen get a class of their own, so chains stay visible.
        let mut i = 0;
        while i < self.classes.len() {
            let s = self.classes[i].super_id;
            if self.classes[i].dumped && s != 0 {
                self.class_idx(s);
            }
            i += 1;
        }

        // Instances that came before their class.
        stats.instances_before_class = self.deferred.len() as u64;
        if !self.deferred.is_empty() {
            let deferred = std::mem::take(&mut self.deferred);
            let bytes = std::mem::take(&mut self.deferred_bytes);
            let old_ids = std::mem::take(&mut self.ref_ids);
            let old_fields = std::mem::take(&mut self.d.ref_field);
            let old_start = std::mem::take(&mut self.d.ref_start);
            self.ref_ids.reserve(old_ids.len());
            self.d.ref_field.reserve(old_fields.len());
            self.d.ref_start.reserve(old_start.len());
            self.d.ref_start.push(0);
            let mut next = deferred.iter().peekable();
            for o in 0..self.d.obj_id.len() {
                match next.peek() {
                    Some(&&(obj, at, n)) if obj as usize == o => {
                        next.next();
                        let ci = self.d.obj_class[o];
                        match self.layout(ci) {
                            Some(l) => self.decode_fields(l, &bytes[at..at + n as usize]),
                            None => stats.instances_without_class += 1,
                        }
                    }
                    _ => {
                        let (a, b) = (old_start[o] as usize, old_start[o + 1] as usize);
                        self.ref_ids.extend_from_slice(&old_ids[a..b]);
                        self.d.ref_field.extend_from_slice(&old_fields[a..b]);
                    }
                }
                self.d.ref_start.push(self.ref_ids.len() as u64);
            }
        }
        for f in self.d.ref_field.iter_mut() {
            if *f != NO_FIELD {
                *f = remap[*f as usize];
            }
        }

        // Classes.
        let mut classes: Vec<Class> = Vec::with_capacity(self.classes.len() + 12);
        for cb in &self.classes {
            let name = match self.class_names.get(&cb.id) {
                Some(&sid) => text(&self, sid).map(|n| java_class_name(&n)),
                None => None,
            }
            .unwrap_or_else(|| format!("class@0x{:x}", cb.id));
            classes.push(Class {
                id: cb.id,
                name,
                superclass: if cb.super_id == 0 { None } else { self.class_by_id.get(&cb.super_id).copied() },
                classloader_id: cb.loader_id,
                instance_size: u64::from(cb.instance_size),
                kind: ClassKind::Unknown,
                fields: cb.fields.iter().map(|&(f, ty)| FieldDesc { name: remap[f as usize], ty }).collect(),
                static_refs: Vec::new(),
                location: None,
                object: cb.object,
            });
        }
        let mut first_named: FxHashMap<String, ClassIdx> = FxHashMap::default();
        for (i, c) in classes.iter().enumerate().rev() {
            first_named.insert(c.name.clone(), i as ClassIdx);
        }
        let mut synthetic = |classes: &mut Vec<Class>, name: &str, kind: ClassKind| -> ClassIdx {
            if let Some(&c) = first_named.get(name) {
                return c;
            }
            classes.push(Class { name: name.to_owned(), kind, ..Default::default() });
            let c = (classes.len() - 1) as ClassIdx;
            first_named.insert(name.to_owned(), c);
            c
        };
        let class_class =
            if self.dumped > 0 { Some(synthetic(&mut classes, "java.lang.Class", ClassKind::Class)) } else { None };
        let mut prim_class = [None::<ClassIdx>; 12];
        for c in self.d.obj_class.iter_mut() {
            if *c == CLASS_OF_CLASS {
                *c = class_class.expect("class objects come from CLASS_DUMPs");
            } else if *c > CLASS_OF_PRIM - 12 && *c <= CLASS_OF_PRIM {
                let code = (CLASS_OF_PRIM - *c) as usize;
                *c = *prim_class[code].get_or_insert_with(|| {
                    let ty = BasicType::from_code(code as u8).expect("a primitive type code");
                    synthetic(&mut classes, &format!("{}[]", ty.java_name()), ClassKind::Array)
                });
            }
        }
        infer_kinds(&mut classes);

        // Shallow sizes.
        let class_size = class_class.map(|c| classes[c as usize].instance_size).unwrap_or(0);
        for o in 0..self.d.obj_id.len() {
            match self.d.obj_kind[o] {
                ObjectKind::Instance => {
                    let declared = classes[self.d.obj_class[o] as usize].instance_size;
                    if declared > 0 {
                        self.d.obj_self_size[o] = declared;
                    }
                }
                ObjectKind::Class => self.d.obj_self_size[o] += class_size,
                _ => {}
            }
        }

        // Ids to objects, in parallel: the lookups are cache misses, not work.
        let index = IdIndex::new(&self.d.obj_id);
        stats.duplicate_ids = index.duplicates;
        let targets: Vec<ObjIdx> = {
            use rayon::prelude::*;
            self.ref_ids
                .par_iter()
                .with_min_len(1 << 14)
                .map(|&id| if id == 0 { REF_NULL } else { index.get(id).unwrap_or(REF_DANGLING) })
                .collect()
        };
        let nulls = targets.iter().filter(|&&t| t == REF_NULL).count() as u64;
        let dangling = targets.iter().filter(|&&t| t == REF_DANGLING).count() as u64;
        drop(std::mem::take(&mut self.ref_ids));
        let mut roots = Vec::with_capacity(self.roots.len());
        for &(id, kind) in &self.roots {
            match index.get(id) {
                Some(object) => roots.push(Root { object, kind }),
                None => stats.dangling_roots += 1,
            }
        }
        drop(index);
        for c in classes.iter_mut() {
            if let Some(o) = c.object {
                let (a, b) = (self.d.ref_start[o as usize] as usize, self.d.ref_start[o as usize + 1] as usize);
                c.static_refs = self.d.ref_field[a..b].iter().copied().zip(targets[a..b].iter().copied()).collect();
            }
        }

        let heaps: Vec<String> = self
            .heaps
            .iter()
            .map(|&(id, name)| match (id, name.and_then(|n| text(&self, n))) {
                (_, Some(n)) => n,
                (None, None) => "default".to_owned(),
                (Some(0x41), None) => "app".to_owned(),
                (Some(0x5A), None) => "zygote".to_owned(),
                (Some(0x49), None) => "image".to_owned(),
                (Some(h), None) => format!("heap 0x{h:x}"),
            })
            .collect();

        stats.field_size_mismatches = self.field_size_mismatches;
        stats.duplicate_class_dumps = self.duplicate_class_dumps;
        stats.missing_strings = missing_strings;
        stats.null_refs = nulls;
        let mut incomplete = Vec::new();
        if let Some(d) = &stats.damage {
            incomplete.push(d.clone());
        }
        if stats.duplicate_ids > 0 {
            // Within one heap dump an id names one object: two objects with one id are damage
            // (several dumps of one file are read apart, see `read_hprof_dumps`).
            incomplete.push(format!(
                "{} object id(s) defined twice within one heap dump (references go to the first)",
                stats.duplicate_ids
            ));
        }
        if stats.instances_without_class > 0 {
            incomplete.push(format!(
                "{} instance(s) whose class or a superclass has no CLASS_DUMP: their references are unknown",
                stats.instances_without_class
            ));
        }
        // Classes whose superclass chain comes back to a class already on it (a corrupt or
        // hostile dump): their instances' layouts cannot be worked out.
        // One pass, each class settled once (0: not yet, 1: on the current walk, 2: the chain
        // ends, 3: it loops), so that long chains stay linear.
        let mut state = vec![0u8; self.classes.len()];
        for start in 0..self.classes.len() {
            let mut walk = Vec::new();
            let mut c = start;
            let verdict = loop {
                match state[c] {
                    1 | 3 => break 3,
                    2 => break 2,
                    _ => {}
                }
                state[c] = 1;
                walk.push(c);
                let sup = self.classes[c].super_id;
                match self.class_by_id.get(&sup) {
                    Some(&s) if sup != 0 && self.classes[c].dumped => c = s as usize,
                    _ => break 2,
                }
            };
            for w in walk {
                state[w] = verdict;
            }
        }
        let looping = state.iter().filter(|&&s| s == 3).count();
        if looping > 0 {
            incomplete.push(format!("{looping} class(es) whose superclass chain loops back on itself"));
        }
        let mut d = self.d;
        d.ref_target = targets;
        d.source = header.format.clone();
        d.id_size = header.id_size;
        d.timestamp = i64::try_from(header.timestamp_ms).ok();
        d.timestamp_is_epoch_ms = true;
        d.heaps = heaps;
        d.classes = classes;
        d.field_names = field_names;
        d.roots = roots;
        d.dangling_refs = dangling;
        d.incomplete = incomplete;
        if d.obj_id.is_empty() {
            d.ref_start.clear();
        }
        Ok(d)
    }
}

/// Sets [`Class::kind`] from names and superclass chains (see the module documentation).
pub(super) fn infer_kinds(classes: &mut [Class]) {
    let named = |name: &str| -> Option<ClassKind> {
        Some(match name {
            "java.lang.ref.WeakReference" => ClassKind::WeakReference,
            "java.lang.ref.SoftReference" => ClassKind::SoftReference,
            "java.lang.ref.PhantomReference" => ClassKind::PhantomReference,
            "java.lang.ref.FinalizerReference" | "java.lang.ref.Finalizer" => ClassKind::FinalizerReference,
            "java.lang.ClassLoader" => ClassKind::ClassLoader,
            "java.lang.DexCache" => ClassKind::DexCache,
            _ => return None,
        })
    };
    let kinds: Vec<ClassKind> = (0..classes.len())
        .map(|i| {
            let c = &classes[i];
            if c.kind != ClassKind::Unknown {
                return c.kind;
            }
            if c.name.ends_with("[]") {
                return ClassKind::Array;
            }
            match c.name.as_str() {
                "java.lang.String" => return ClassKind::String,
                "java.lang.Class" => return ClassKind::Class,
                _ => {}
            }
            let mut at = i;
            for _ in 0..=classes.len() {
                let k = &classes[at];
                if let Some(kind) = named(&k.name) {
                    return kind;
                }
                match k.superclass {
                    Some(s) => at = s as usize,
                    None => {
                        // The chain ends at a class without superclass: java.lang.Object if it was
                        // dumped; a class never dumped leaves the chain open.
                        return if k.object.is_some() { ClassKind::Normal } else { ClassKind::Unknown };
                    }
                }
            }
            ClassKind::Unknown
        })
        .collect();
    for (c, k) in classes.iter_mut().zip(kinds) {
        c.kind = k;
    }
}
