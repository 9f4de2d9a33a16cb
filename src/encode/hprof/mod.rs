//! HPROF heap dumps from a [`HeapDump`]: `JAVA PROFILE 1.0.2` (what JVMs and `hprof-conv`
//! write, read by Eclipse MAT, VisualVM, shark and Android Studio), or Android's
//! `JAVA PROFILE 1.0.3` with heap-info records and Android root tags.
//!
//! The layout written, byte by byte (everything big-endian; "id" is 4 or 8 bytes):
//!
//! * Header: the format name and a NUL (`JAVA PROFILE 1.0.2\0`), u4 identifier size, u8
//!   timestamp (milliseconds since the epoch, as two u4 halves).
//! * Records, each `u1 tag, u4 time (0), u4 body length, body`, in this order:
//!   `STRING` (0x01: id, UTF-8 bytes) for every class name, field name and heap name;
//!   `LOAD_CLASS` (0x02: u4 class serial from 1, id class, u4 stack serial 1, id name);
//!   one placeholder `STACK_TRACE` (0x05: u4 serial 1, u4 thread serial 0, u4 0 frames); then
//!   `HEAP_DUMP_SEGMENT`s (0x1C) of at most [`HprofOptions::segment_bytes`] each (one record
//!   larger than that gets a segment of its own), and `HEAP_DUMP_END` (0x2C, empty).
//! * Inside the segments: GC roots first (one sub-record per distinct (root kind, object)),
//!   then, heap by heap, the `CLASS_DUMP`s (0x20) of the classes whose class object lives on
//!   that heap and the heap's objects in dump order: `INSTANCE_DUMP` (0x21), `OBJ_ARRAY_DUMP`
//!   (0x22), `PRIM_ARRAY_DUMP` (0x23). With [`HprofOptions::android`], a `HEAP_DUMP_INFO`
//!   (0xFE: u4 heap id, id name) switches heaps (`A` app, `Z` zygote, `I` image, 0 default)
//!   whenever the next record is on another heap; every segment starts on the default heap,
//!   as in ART's dumps and `hprof-conv`.
//!
//! Root kinds map to the standard sub-records (unknown 0xFF, JNI global 0x01, JNI local 0x02,
//! Java frame 0x03, native stack 0x04, sticky class 0x05, thread block 0x06, monitor used 0x07,
//! thread object 0x08) and, in 1.0.3 only, to Android's (interned string 0x89, finalizing
//! 0x8A, debugger 0x8B, reference cleanup 0x8C, VM internal 0x8D, JNI monitor 0x8E,
//! unreachable 0x90); in 1.0.2 the Android kinds become ROOT_UNKNOWN, as `hprof-conv` makes
//! them. Thread serials are unknown: thread-object roots get serials 1, 2, … in order, other
//! roots thread serial 0 and frame number -1.
//!
//! What a heap graph does not know is written as zero: primitive field values and array
//! contents. Classes declare their reference fields (named after the part of `Class.field`
//! after the last dot) and, with [`HprofOptions::primitive_padding`], primitive fields
//! `$primitive$N` (long, int, short, byte) that fill the rest of the instance size (ART's
//! 4-byte references assumed), so instance data is as long as the declared layout and tools
//! compute shallow sizes close to the runtime's (instance sizes above 64 KiB are padded as
//! 64 KiB, so that a hostile size cannot make millions of fields). A class object
//! (`java.lang.Class<X>` in a heap graph) is written as X's `CLASS_DUMP`, whose id is the
//! class object's id and whose static fields are the class object's references (fields of `java.lang.Class` itself get
//! ART's `$class$` prefix); a class with no class object gets a fresh id. References an
//! instance holds that its class layout has no field for (runtime-internal references) go,
//! as ART does it, to an extra field `runtimeInternalObjects` pointing at a synthetic
//! `Object[]`. References to ids no object has are written as null. Fields a heap graph names
//! `java.lang.ref.Reference.x` but declares on another class with no `java.lang.ref.Reference`
//! in its superclass chain (e.g. on `java.lang.ref.WeakReference` itself) are declared by
//! `java.lang.ref.Reference` (the dump's, or a synthetic one below `java.lang.Object`), which
//! becomes the top of that chain: hprof readers know a weak `referent` by its declaring class.
//!
//! Ids are the producer's when they all (with the fresh ones) fit in 4 bytes, else 8 bytes
//! wide; Android dumps always use 4-byte ids (`hprof-conv` and Android tools assume it), so
//! ids that do not fit are renumbered densely. Output is deterministic.

mod plan;
mod records;

use plan::*;
use records::*;

use std::io::Write;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::error::{Error, ErrorKind, Result};
use crate::model::heap::{
    BasicType, ClassIdx, FieldIdx, HeapDump, NO_FIELD, ObjIdx, ObjectKind, REF_DANGLING, REF_NULL, RootKind,
    class_object_target,
};

/// Options of the hprof writer.
#[derive(Debug, Clone)]
pub struct HprofOptions {
    /// Write Android's `JAVA PROFILE 1.0.3`, with `HEAP_DUMP_INFO` records and Android root
    /// tags, 4-byte ids. Default: false (`JAVA PROFILE 1.0.2`).
    pub android: bool,
    /// Header timestamp, milliseconds since the epoch. Default: 0 (unknown).
    pub timestamp_ms: u64,
    /// Target size of a `HEAP_DUMP_SEGMENT` body, in bytes. Default: 1 MiB.
    pub segment_bytes: usize,
    /// Declare primitive fields (`$primitive$N`, zero) filling each class's instance size
    /// beyond its reference fields, for classes that declare no primitive field. Default: true
    /// (right for heap graphs, whose types list reference fields only).
    pub primitive_padding: bool,
}

impl Default for HprofOptions {
    fn default() -> Self {
        HprofOptions { android: false, timestamp_ms: 0, segment_bytes: 1 << 20, primitive_padding: true }
    }
}

/// What the writer wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct HprofSummary {
    /// Bytes written.
    pub bytes: u64,
    /// Identifier size (4 or 8).
    pub id_size: u8,
    /// Whether object ids were renumbered (Android dumps whose ids do not fit 4 bytes).
    pub renumbered: bool,
    /// STRING records.
    pub strings: u64,
    /// CLASS_DUMP (and LOAD_CLASS) records.
    pub classes: u64,
    /// INSTANCE_DUMP records.
    pub instances: u64,
    /// OBJ_ARRAY_DUMP records (synthetic runtime-internal arrays included).
    pub object_arrays: u64,
    /// PRIM_ARRAY_DUMP records.
    pub primitive_arrays: u64,
    /// GC-root sub-records.
    pub roots: u64,
    /// HEAP_DUMP_INFO sub-records.
    pub heap_infos: u64,
    /// HEAP_DUMP_SEGMENT records.
    pub segments: u64,
    /// Objects made up by the writer: ids for classes without a class object, and arrays of
    /// runtime-internal references.
    pub synthetic_ids: u64,
    /// References written as null because their target is not in the dump.
    pub dangling_as_null: u64,
    /// References that could not be written (held by primitive arrays).
    pub dropped_references: u64,
}

const TAG_STRING: u8 = 0x01;
const TAG_LOAD_CLASS: u8 = 0x02;
const TAG_STACK_TRACE: u8 = 0x05;
const TAG_HEAP_DUMP_SEGMENT: u8 = 0x1C;
const TAG_HEAP_DUMP_END: u8 = 0x2C;
const SUB_CLASS_DUMP: u8 = 0x20;
const SUB_INSTANCE_DUMP: u8 = 0x21;
const SUB_OBJ_ARRAY_DUMP: u8 = 0x22;
const SUB_PRIM_ARRAY_DUMP: u8 = 0x23;
const SUB_HEAP_DUMP_INFO: u8 = 0xFE;
const STACK_SERIAL: u32 = 1;
/// ART's references are 4 bytes: the unit of instance sizes in heap graphs.
const ART_REF: u64 = 4;
/// Instance sizes above this are padded as this size (at most 8,192 `long` fields per class;
/// ART's largest classes declare a few hundred bytes of fields).
const MAX_PADDING: u64 = 64 << 10;

/// The hprof sub-record tag of a root kind, and whether it exists only in Android's format.
pub fn root_tag(kind: RootKind) -> (u8, bool) {
    use RootKind::*;
    match kind {
        Unknown => (0xFF, false),
        JniGlobal => (0x01, false),
        JniLocal => (0x02, false),
        JavaFrame => (0x03, false),
        NativeStack => (0x04, false),
        StickyClass => (0x05, false),
        ThreadBlock => (0x06, false),
        MonitorUsed => (0x07, false),
        ThreadObject => (0x08, false),
        InternedString => (0x89, true),
        Finalizing => (0x8A, true),
        Debugger => (0x8B, true),
        ReferenceCleanup => (0x8C, true),
        VmInternal => (0x8D, true),
        JniMonitor => (0x8E, true),
        Unreachable => (0x90, true),
    }
}

/// Android's hprof heap id and name for a heap named `name` in a [`HeapDump`].
fn android_heap(name: &str) -> (u32, &'static str) {
    match name {
        "app" => (0x41, "app"),
        "zygote" => (0x5A, "zygote"),
        "image" => (0x49, "image"),
        _ => (0, "default"),
    }
}

/// Writes `dump` as an hprof heap dump to `out`, streaming (one segment buffered at a time).
pub fn encode_hprof(dump: &HeapDump, opts: &HprofOptions, out: &mut dyn Write) -> Result<HprofSummary> {
    let d = dump;
    let mut p = plan(d, opts);
    let id_size = p.id_size;
    let mut summary = HprofSummary { id_size, renumbered: p.renumber, ..Default::default() };
    let first_synthetic = p.first_synthetic;
    let mut next_id = p.next_id;

    // Class loaders named by id: written only when they are objects of the dump.
    let mut loader_ids: HashMap<u64, u64> = p.classes.iter().filter(|c| c.loader != 0).map(|c| (c.loader, 0)).collect();
    if !loader_ids.is_empty() {
        for o in 0..d.len() as ObjIdx {
            if let Some(v) = loader_ids.get_mut(&d.obj_id[o as usize]) {
                *v = p.obj_id(d, o);
            }
        }
    }

    // Strings, in a fixed order: class names, then field names as classes declare them.
    let mut class_name_sid = Vec::with_capacity(p.classes.len());
    let mut field_sids: Vec<(Vec<u64>, Vec<u64>)> = Vec::with_capacity(p.classes.len());
    for c in 0..p.classes.len() {
        let name = p.classes[c].name.clone();
        class_name_sid.push(p.strings.id(&name));
    }
    for c in 0..p.classes.len() {
        let statics: Vec<String> = p.classes[c].statics.iter().map(|s| s.0.clone()).collect();
        let own: Vec<String> = p.classes[c].own.iter().map(|s| s.1.clone()).collect();
        let s = statics.iter().map(|n| p.strings.id(n)).collect();
        let f = own.iter().map(|n| p.strings.id(n)).collect();
        field_sids.push((s, f));
    }
    let mut heap_names: HashMap<u32, u64> = HashMap::default();
    if opts.android {
        for (id, name) in [(0u32, "default"), (0x41, "app"), (0x5A, "zygote"), (0x49, "image")] {
            heap_names.insert(id, p.strings.id(name));
        }
    }
    let heap_of = |h: u8| -> u32 { android_heap(d.heaps.get(h as usize).map(String::as_str).unwrap_or("")).0 };

    let mut w = Counting { inner: out, bytes: 0 };
    let mut head = Vec::with_capacity(32);
    head.extend_from_slice(if opts.android { b"JAVA PROFILE 1.0.3\0" } else { b"JAVA PROFILE 1.0.2\0" });
    put_u4(&mut head, u32::from(id_size));
    put_u4(&mut head, (opts.timestamp_ms >> 32) as u32);
    put_u4(&mut head, opts.timestamp_ms as u32);
    w.put(&head)?;
    let mut body = Vec::new();
    for (i, s) in p.strings.list.iter().enumerate() {
        body.clear();
        put_id(&mut body, i as u64 + 1, id_size);
        body.extend_from_slice(s.as_bytes());
        record(&mut w, TAG_STRING, &body)?;
    }
    summary.strings = p.strings.list.len() as u64;
    for (c, hc) in p.classes.iter().enumerate() {
        body.clear();
        put_u4(&mut body, c as u32 + 1);
        put_id(&mut body, hc.id, id_size);
        put_u4(&mut body, STACK_SERIAL);
        put_id(&mut body, class_name_sid[c], id_size);
        record(&mut w, TAG_LOAD_CLASS, &body)?;
    }
    body.clear();
    put_u4(&mut body, STACK_SERIAL);
    put_u4(&mut body, 0);
    put_u4(&mut body, 0);
    record(&mut w, TAG_STACK_TRACE, &body)?;

    let mut seg = Segments {
        out: &mut w,
        buf: Vec::with_capacity(opts.segment_bytes.min(1 << 24) + 1024),
        limit: opts.segment_bytes.max(64),
        android: opts.android,
        id_size,
        heap: 0,
        heap_names,
        summary: &mut summary,
    };
    let ids = id_size as usize;

    // Roots, one per distinct (kind, object), thread objects numbered from 1.
    let mut seen: HashSet<(u8, ObjIdx)> = HashSet::default();
    let mut thread_serial = 0u32;
    for r in &d.roots {
        let (mut tag, android_only) = root_tag(r.kind);
        if android_only && !opts.android {
            tag = 0xFF;
        }
        if !seen.insert((tag, r.object)) {
            continue;
        }
        let id = p.obj_id(d, r.object);
        let buf = seg.begin(0, 1 + 2 * ids + 8)?;
        buf.push(tag);
        put_id(buf, id, id_size);
        match tag {
            0x01 => put_id(buf, 0, id_size),
            0x02 | 0x03 | 0x8E => {
                put_u4(buf, 0);
                put_u4(buf, u32::MAX);
            }
            0x04 | 0x06 => put_u4(buf, 0),
            0x08 => {
                thread_serial += 1;
                put_u4(buf, thread_serial);
                put_u4(buf, STACK_SERIAL);
            }
            _ => {}
        }
        seg.summary.roots += 1;
    }

    // Classes and objects, heap by heap.
    let heaps = d.heaps.len().max(1);
    let (mut vals, mut left, mut rv) = (Vec::new(), Vec::new(), Vec::<(FieldIdx, ObjIdx)>::new());
    let mut data = Vec::new();
    for h in 0..heaps {
        let heap = heap_of(h as u8);
        for (c, hc) in p.classes.iter().enumerate() {
            if hc.heap as usize != h {
                continue;
            }
            data.clear();
            data.push(SUB_CLASS_DUMP);
            put_id(&mut data, hc.id, id_size);
            put_u4(&mut data, STACK_SERIAL);
            put_id(&mut data, hc.super_idx.map(|s| p.classes[s].id).unwrap_or(0), id_size);
            put_id(&mut data, loader_ids.get(&hc.loader).copied().unwrap_or(0), id_size);
            for _ in 0..4 {
                put_id(&mut data, 0, id_size);
            }
            put_u4(&mut data, hc.instance_size);
            data.extend_from_slice(&0u16.to_be_bytes());
            data.extend_from_slice(&(hc.statics.len().min(u16::MAX as usize) as u16).to_be_bytes());
            for (k, &(_, t)) in hc.statics.iter().enumerate().take(u16::MAX as usize) {
                put_id(&mut data, field_sids[c].0[k], id_size);
                data.push(BasicType::Object as u8);
                let v = p.target_id(d, t, seg.summary);
                put_id(&mut data, v, id_size);
            }
            data.extend_from_slice(&(hc.own.len().min(u16::MAX as usize) as u16).to_be_bytes());
            for (k, (s, _)) in hc.own.iter().enumerate().take(u16::MAX as usize) {
                put_id(&mut data, field_sids[c].1[k], id_size);
                data.push(match s {
                    Slot::Ref(_) | Slot::Internal => BasicType::Object as u8,
                    Slot::Prim(t) => *t as u8,
                });
            }
            seg.begin(heap, data.len())?.extend_from_slice(&data);
            seg.summary.classes += 1;
        }
        for o in 0..d.len() as ObjIdx {
            if d.obj_heap[o as usize] as usize != h {
                continue;
            }
            let id = p.obj_id(d, o);
            match d.obj_kind[o as usize] {
                ObjectKind::Class => {}
                ObjectKind::Instance => {
                    let Some(c) = p.class_map[d.obj_class[o as usize] as usize] else {
                        seg.summary.dropped_references += d.refs(o).count() as u64;
                        continue;
                    };
                    rv.clear();
                    rv.extend(d.refs(o));
                    let chain = &p.chains[c];
                    match_refs(chain, &rv, &mut vals, &mut left);
                    let array_id = if left.is_empty() {
                        0
                    } else {
                        next_id += 1;
                        next_id - 1
                    };
                    data.clear();
                    data.push(SUB_INSTANCE_DUMP);
                    put_id(&mut data, id, id_size);
                    put_u4(&mut data, STACK_SERIAL);
                    put_id(&mut data, p.classes[c].id, id_size);
                    let len_at = data.len();
                    put_u4(&mut data, 0);
                    for (k, s) in chain.iter().enumerate() {
                        match s {
                            Slot::Ref(_) => {
                                let v = p.target_id(d, vals[k], seg.summary);
                                put_id(&mut data, v, id_size);
                            }
                            Slot::Prim(t) => data.extend(std::iter::repeat_n(0u8, t.size(id_size) as usize)),
                            Slot::Internal => {
                                let v = if Some(k) == p.internal_slot[c] { array_id } else { 0 };
                                put_id(&mut data, v, id_size);
                            }
                        }
                    }
                    let n = (data.len() - len_at - 4) as u32;
                    data[len_at..len_at + 4].copy_from_slice(&n.to_be_bytes());
                    seg.begin(heap, data.len())?.extend_from_slice(&data);
                    seg.summary.instances += 1;
                    if array_id != 0 {
                        data.clear();
                        data.push(SUB_OBJ_ARRAY_DUMP);
                        put_id(&mut data, array_id, id_size);
                        put_u4(&mut data, STACK_SERIAL);
                        put_u4(&mut data, left.len() as u32);
                        let ac = p.object_array_class.map(|a| p.classes[a].id).unwrap_or(0);
                        put_id(&mut data, ac, id_size);
                        for &t in &left {
                            let v = p.target_id(d, t, seg.summary);
                            put_id(&mut data, v, id_size);
                        }
                        seg.begin(heap, data.len())?.extend_from_slice(&data);
                        seg.summary.object_arrays += 1;
                    }
                }
                ObjectKind::ObjectArray => {
                    let class = p.class_map[d.obj_class[o as usize] as usize].or(p.object_array_class);
                    let n = d.refs(o).count();
                    data.clear();
                    data.push(SUB_OBJ_ARRAY_DUMP);
                    put_id(&mut data, id, id_size);
                    put_u4(&mut data, STACK_SERIAL);
                    put_u4(&mut data, n as u32);
                    put_id(&mut data, class.map(|c| p.classes[c].id).unwrap_or(0), id_size);
                    for (_, t) in d.refs(o) {
                        let v = p.target_id(d, t, seg.summary);
                        put_id(&mut data, v, id_size);
                    }
                    seg.begin(heap, data.len())?.extend_from_slice(&data);
                    seg.summary.object_arrays += 1;
                }
                ObjectKind::PrimitiveArray(t) => {
                    seg.summary.dropped_references += d.refs(o).count() as u64;
                    let n = d.obj_len[o as usize];
                    let data_len = u64::from(n) * u64::from(t.size(id_size));
                    data.clear();
                    data.push(SUB_PRIM_ARRAY_DUMP);
                    put_id(&mut data, id, id_size);
                    put_u4(&mut data, STACK_SERIAL);
                    put_u4(&mut data, n);
                    data.push(t as u8);
                    if data.len() as u64 + data_len > seg.limit as u64 {
                        seg.big_array(heap, &data, data_len)?;
                    } else {
                        let buf = seg.begin(heap, data.len() + data_len as usize)?;
                        buf.extend_from_slice(&data);
                        buf.resize(buf.len() + data_len as usize, 0);
                    }
                    seg.summary.primitive_arrays += 1;
                }
            }
        }
    }
    seg.flush()?;
    record(&mut w, TAG_HEAP_DUMP_END, &[])?;
    summary.bytes = w.bytes;
    summary.synthetic_ids = next_id - first_synthetic;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_fields() {
        assert_eq!(short_field("com.example.Node.next"), "next");
        assert_eq!(short_field("plain"), "plain");
        assert_eq!(static_field_name("com.example.Node", "com.example.Node.sRoot"), "sRoot");
        assert_eq!(static_field_name("com.example.Node", "java.lang.Class.superClass"), "$class$superClass");
        assert_eq!(static_field_name("a.B", "c.D.x"), "x");
    }

    #[test]
    fn matching_by_name_with_leftovers() {
        let slots = [Slot::Ref(1), Slot::Prim(BasicType::Int), Slot::Ref(2)];
        let (mut v, mut l) = (Vec::new(), Vec::new());
        match_refs(&slots, &[(1, 10), (2, 20)], &mut v, &mut l);
        assert_eq!((v.as_slice(), l.as_slice()), (&[10, REF_NULL, 20][..], &[][..]));
        match_refs(&slots, &[(2, 20), (NO_FIELD, 30), (1, 10), (7, REF_NULL)], &mut v, &mut l);
        assert_eq!((v.as_slice(), l.as_slice()), (&[10, REF_NULL, 20][..], &[30][..]));
    }

    #[test]
    fn every_root_kind_has_a_tag() {
        assert_eq!(root_tag(RootKind::VmInternal), (0x8D, true));
        assert_eq!(root_tag(RootKind::ThreadObject), (0x08, false));
        assert_eq!(root_tag(RootKind::Unreachable), (0x90, true));
    }
}
