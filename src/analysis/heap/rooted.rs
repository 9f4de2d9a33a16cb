//! The rooted heap: GC roots with their effective kinds, the edge rules (weak referents,
//! class statics), and reachability.

use super::VIRTUAL_ROOT;
use crate::model::heap::{ClassIdx, FieldIdx, HeapDump, ObjIdx, Root, RootKind};

pub(super) fn root_precedence(k: RootKind) -> u8 {
    match k {
        RootKind::StickyClass => 3,
        RootKind::JniGlobal => 2,
        RootKind::JniLocal => 1,
        _ => 0,
    }
}

/// A heap with its GC roots and edge rules fixed (see the module docs); every analysis reads
/// one.
#[derive(Debug)]
pub struct RootedHeap<'a> {
    pub(super) dump: &'a HeapDump,
    pub(super) n: usize,
    pub(super) root_kind: Vec<Option<RootKind>>,
    pub(super) roots: Vec<ObjIdx>,
    /// Per class: the field indexes that are a weak referent (empty for most classes).
    pub(super) weak_fields: Vec<Box<[FieldIdx]>>,
    /// Bit per object: its class has weak referent fields (empty when no class has), so that
    /// a search does not look up the class of every object it visits.
    pub(super) weak_bits: Vec<u64>,
    /// Objects that are a class object with static references: (object, class), sorted.
    pub(super) statics: Vec<(ObjIdx, ClassIdx)>,
    /// Bit per object: it appears in `statics`.
    pub(super) has_statics: Vec<u64>,
    /// The class `java.lang.Class`, when the dump has one.
    pub(super) class_class: Option<ClassIdx>,
    /// Instances of `java.lang.Class` that are a class's object, with their display names
    /// (`java.lang.Class<X>`), sorted by object.
    pub(super) class_objects: Vec<(ObjIdx, String)>,
}

/// Strips a heap-graph type prefix (`"java.lang.Object java.lang.ref.Reference.referent"`).
pub(super) fn strip_type(name: &str) -> &str {
    name.rsplit_once(' ').map_or(name, |(_, n)| n)
}

pub(super) const QUALIFIED_REFERENT: &str = "java.lang.ref.Reference.referent";
/// The package of `java.lang.ref.Reference` and its runtime subclasses; applications cannot
/// declare classes in it.
pub(super) const REFERENCE_PACKAGE: &str = "java.lang.ref.";

impl<'a> RootedHeap<'a> {
    /// Fixes the roots and edge rules of `dump`. Linear in objects, roots and classes.
    pub fn new(dump: &'a HeapDump) -> Self {
        let n = dump.obj_id.len().min(VIRTUAL_ROOT as usize);
        let mut root_kind: Vec<Option<RootKind>> = vec![None; n];
        let mut roots = Vec::new();
        for &Root { object, kind } in &dump.roots {
            if object as usize >= n {
                continue;
            }
            let slot = &mut root_kind[object as usize];
            match *slot {
                None => {
                    *slot = Some(kind);
                    roots.push(object);
                }
                Some(old) if root_precedence(kind) > root_precedence(old) => *slot = Some(kind),
                Some(_) => {}
            }
        }
        let weak_fields = weak_fields(dump);
        let mut weak_bits = Vec::new();
        if weak_fields.iter().any(|w| !w.is_empty()) {
            weak_bits = vec![0u64; n.div_ceil(64)];
            for (o, &c) in dump.obj_class[..n].iter().enumerate() {
                if weak_fields.get(c as usize).is_some_and(|w| !w.is_empty()) {
                    weak_bits[o / 64] |= 1 << (o % 64);
                }
            }
        }
        let mut statics: Vec<(ObjIdx, ClassIdx)> = dump
            .classes
            .iter()
            .enumerate()
            .filter_map(|(c, cl)| match cl.object {
                Some(o) if (o as usize) < n && !cl.static_refs.is_empty() => Some((o, c as ClassIdx)),
                _ => None,
            })
            .collect();
        statics.sort_unstable();
        let mut has_statics = Vec::new();
        if !statics.is_empty() {
            has_statics = vec![0u64; n.div_ceil(64)];
            for &(o, _) in &statics {
                has_statics[o as usize / 64] |= 1 << (o % 64);
            }
        }
        let class_class = dump.classes.iter().position(|c| c.name == "java.lang.Class").map(|c| c as ClassIdx);
        let mut class_objects: Vec<(ObjIdx, String)> = dump
            .classes
            .iter()
            .filter_map(|cl| match cl.object {
                Some(o) if (o as usize) < n && Some(dump.obj_class[o as usize]) == class_class => {
                    Some((o, format!("java.lang.Class<{}>", cl.name)))
                }
                _ => None,
            })
            .collect();
        class_objects.sort();
        class_objects.dedup_by_key(|e| e.0);
        RootedHeap {
            dump,
            n,
            root_kind,
            roots,
            weak_fields,
            weak_bits,
            statics,
            has_statics,
            class_class,
            class_objects,
        }
    }

    /// The dump.
    pub fn dump(&self) -> &'a HeapDump {
        self.dump
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when the heap has no object.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The rooted objects, each once, in the order their first root entry was listed.
    pub fn roots(&self) -> &[ObjIdx] {
        &self.roots
    }

    /// The effective root kind of object `o` (`None` when it is not a root).
    pub fn root_kind(&self, o: ObjIdx) -> Option<RootKind> {
        self.root_kind.get(o as usize).copied().flatten()
    }

    /// The class name of object `o` (empty for a class out of range). An instance of
    /// `java.lang.Class` that is a class's object
    /// ([`Class::object`](crate::model::heap::Class::object), as hprof readers make them) is
    /// named `java.lang.Class<X>`, as heap graphs name their class objects.
    pub fn class_name(&self, o: ObjIdx) -> &str {
        let c = self.dump.obj_class[o as usize];
        if Some(c) == self.class_class {
            if let Ok(i) = self.class_objects.binary_search_by_key(&o, |e| e.0) {
                return &self.class_objects[i].1;
            }
        }
        self.dump.classes.get(c as usize).map_or("", |c| c.name.as_str())
    }

    /// The frame name of object `o`: its class name, with `" [ROOT_KIND]"` for a root.
    pub fn frame_name(&self, o: ObjIdx) -> String {
        match self.root_kind(o) {
            Some(k) => format!("{} [{}]", self.class_name(o), k.perfetto_name()),
            None => self.class_name(o).to_owned(),
        }
    }

    #[inline]
    pub(super) fn weak_of(&self, o: ObjIdx) -> &[FieldIdx] {
        if self.weak_bits.is_empty() || self.weak_bits[o as usize / 64] & (1 << (o % 64)) == 0 {
            return &[];
        }
        let c = self.dump.obj_class[o as usize] as usize;
        self.weak_fields.get(c).map_or(&[], |w| w)
    }

    pub(super) fn csr(&self, o: ObjIdx) -> (usize, usize) {
        let a = self.dump.ref_start[o as usize] as usize;
        let b = self.dump.ref_start[o as usize + 1] as usize;
        (a, b.min(a + u32::MAX as usize))
    }

    pub(super) fn statics_of(&self, o: ObjIdx) -> &[(ObjIdx, ClassIdx)] {
        if self.has_statics.is_empty() || self.has_statics[o as usize / 64] & (1 << (o % 64)) == 0 {
            return &[];
        }
        let lo = self.statics.partition_point(|&(x, _)| x < o);
        let hi = self.statics.partition_point(|&(x, _)| x <= o);
        &self.statics[lo..hi]
    }

    /// Calls `f(target)` for every edge of `o`, in slot order.
    #[inline]
    pub fn for_each_target(&self, o: ObjIdx, mut f: impl FnMut(ObjIdx)) {
        let d = self.dump;
        let (a, b) = self.csr(o);
        let weak = self.weak_of(o);
        if weak.is_empty() {
            for &t in &d.ref_target[a..b] {
                if (t as usize) < self.n {
                    f(t);
                }
            }
        } else {
            for i in a..b {
                let t = d.ref_target[i];
                if (t as usize) < self.n && !weak.contains(&d.ref_field[i]) {
                    f(t);
                }
            }
        }
        for &(_, c) in self.statics_of(o) {
            for &(_, t) in &self.dump.classes[c as usize].static_refs {
                if (t as usize) < self.n {
                    f(t);
                }
            }
        }
    }

    /// Calls `f(slot, field, target)` for every edge of `o`: `slot` counts `o`'s references
    /// from 0 (static references of a class object after them).
    pub fn for_each_edge(&self, o: ObjIdx, mut f: impl FnMut(u32, FieldIdx, ObjIdx)) {
        let d = self.dump;
        let (a, b) = self.csr(o);
        let weak = self.weak_of(o);
        for i in a..b {
            let (t, field) = (d.ref_target[i], d.ref_field[i]);
            if (t as usize) < self.n && !weak.contains(&field) {
                f((i - a) as u32, field, t);
            }
        }
        let mut slot = (b - a) as u32;
        for &(_, c) in self.statics_of(o) {
            for &(field, t) in &self.dump.classes[c as usize].static_refs {
                if (t as usize) < self.n {
                    f(slot, field, t);
                }
                slot = slot.saturating_add(1);
            }
        }
    }

    /// From position `*k` of `o`'s slots on, the first edge target that `accept` takes;
    /// `*k` is left just past it (or at the end).
    #[inline]
    pub(super) fn scan(&self, o: ObjIdx, k: &mut u32, mut accept: impl FnMut(ObjIdx) -> bool) -> Option<ObjIdx> {
        let d = self.dump;
        let (a, b) = self.csr(o);
        let len = (b - a) as u32;
        let weak = self.weak_of(o);
        while *k < len {
            let i = a + *k as usize;
            *k += 1;
            let t = d.ref_target[i];
            if (t as usize) < self.n && (weak.is_empty() || !weak.contains(&d.ref_field[i])) && accept(t) {
                return Some(t);
            }
        }
        let statics = self.statics_of(o);
        if !statics.is_empty() {
            let mut base = len;
            for &(_, c) in statics {
                let refs = &self.dump.classes[c as usize].static_refs;
                let end = base.saturating_add(refs.len() as u32);
                while *k < end {
                    let t = refs[(*k - base) as usize].1;
                    *k += 1;
                    if (t as usize) < self.n && accept(t) {
                        return Some(t);
                    }
                }
                base = end;
            }
        }
        None
    }

    /// Per object: reachable from a root. Linear, with an explicit stack.
    pub fn reachable(&self) -> Vec<bool> {
        let mut seen = vec![false; self.n];
        let mut stack: Vec<ObjIdx> = Vec::new();
        for &r in &self.roots {
            if !seen[r as usize] {
                seen[r as usize] = true;
                stack.push(r);
            }
            while let Some(o) = stack.pop() {
                self.for_each_target(o, |t| {
                    if !seen[t as usize] {
                        seen[t as usize] = true;
                        stack.push(t);
                    }
                });
            }
        }
        seen
    }
}

/// Per class: the field indexes that are weak referents (see the module docs).
pub(super) fn weak_fields(dump: &HeapDump) -> Vec<Box<[FieldIdx]>> {
    let qualified: Vec<FieldIdx> = (0..dump.field_names.len() as FieldIdx)
        .filter(|&f| strip_type(&dump.field_names[f as usize]) == QUALIFIED_REFERENT)
        .collect();
    let bare: Vec<FieldIdx> =
        (0..dump.field_names.len() as FieldIdx).filter(|&f| dump.field_names[f as usize] == "referent").collect();
    dump.classes
        .iter()
        .map(|c| {
            if !c.kind.referent_is_weak() {
                return Box::default();
            }
            let mut out = qualified.clone();
            for &f in &bare {
                let (mut by_reference, mut by_other) = (false, false);
                let mut cur = Some(c);
                for _ in 0..=dump.classes.len() {
                    let Some(cl) = cur else { break };
                    if cl.fields.iter().any(|fd| fd.name == f) {
                        if cl.name.starts_with(REFERENCE_PACKAGE) {
                            by_reference = true;
                        } else {
                            by_other = true;
                        }
                    }
                    cur = cl.superclass.and_then(|s| dump.classes.get(s as usize));
                }
                if by_reference || !by_other {
                    out.push(f);
                }
            }
            out.into_boxed_slice()
        })
        .collect()
}
