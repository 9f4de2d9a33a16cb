//! HPROF heap dumps (`JAVA PROFILE 1.0.1`, `1.0.2` from JVMs, `1.0.3` from Android) read into
//! the shared [`HeapDump`] model, and Android's `hprof-conv` ([`conv`]).
//!
//! # The format
//!
//! Every integer is big-endian. An *id* is an unsigned integer of the size the header gives
//! (4 on Android and 32-bit JVMs, 8 on 64-bit HotSpot).
//!
//! * **Header**: a NUL-terminated ASCII string (`JAVA PROFILE 1.0.2`), u4 id size, u8
//!   milliseconds since the epoch.
//! * **Records**, to the end of the file: u1 tag, u4 microseconds since the header's time
//!   (0 from ART and HotSpot), u4 body length, body. The ones that matter here:
//!   `STRING` 0x01 (id, then modified UTF-8 to the end of the body), `LOAD_CLASS` 0x02 (u4
//!   class serial, class object id, u4 stack-trace serial, name string id), `STACK_FRAME` 0x04,
//!   `STACK_TRACE` 0x05, `HEAP_DUMP` 0x0C and `HEAP_DUMP_SEGMENT` 0x1C (sub-records, below),
//!   `HEAP_DUMP_END` 0x2C (empty). Every other tag is skipped by its length and counted.
//! * **Heap dumps**: a run of `HEAP_DUMP_SEGMENT`s up to a `HEAP_DUMP_END` (or the end of the
//!   file) is one dump, with any `HEAP_DUMP` record inside it; outside such a run, each
//!   `HEAP_DUMP` record is one dump. The JVMTI hprof agent writes one
//!   dump per request (several per file); HotSpot's `jmap`/`HeapDumpOnOutOfMemoryError` and
//!   Android write one. Strings and `LOAD_CLASS` records are shared by all dumps; objects,
//!   classes dumped and roots belong to one. [`read_hprof_dump`] reads one (the last by
//!   default, as [`read_hprof`] does), [`HprofStats::dumps`] lists them all with their record
//!   time offsets; an object id defined twice within one dump is damage
//!   ([`HeapDump::incomplete`]).
//! * **Sub-records** of a heap dump, u1 tag then:
//!   - roots, the object id first: `ROOT_UNKNOWN` 0xFF, `ROOT_JNI_GLOBAL` 0x01 (+ id of the
//!     JNI reference), `ROOT_JNI_LOCAL` 0x02 and `ROOT_JAVA_FRAME` 0x03 (+ u4 thread serial,
//!     u4 frame number), `ROOT_NATIVE_STACK` 0x04 and `ROOT_THREAD_BLOCK` 0x06 (+ u4 thread
//!     serial), `ROOT_STICKY_CLASS` 0x05, `ROOT_MONITOR_USED` 0x07, `ROOT_THREAD_OBJECT` 0x08
//!     (+ u4 thread serial, u4 stack-trace serial); Android's `ROOT_INTERNED_STRING` 0x89,
//!     `ROOT_FINALIZING` 0x8A, `ROOT_DEBUGGER` 0x8B, `ROOT_REFERENCE_CLEANUP` 0x8C,
//!     `ROOT_VM_INTERNAL` 0x8D, `UNREACHABLE` 0x90 (id only) and `ROOT_JNI_MONITOR` 0x8E
//!     (+ u4 thread serial, u4 stack depth);
//!   - `CLASS_DUMP` 0x20: class id, u4 stack-trace serial, ids of the superclass, class
//!     loader, signers, protection domain and two reserved ids, u4 instance size, u2 count of
//!     constant-pool entries (u2 index, u1 type, value), u2 count of static fields (name string
//!     id, u1 type, value), u2 count of instance fields (name string id, u1 type): the class's
//!     own fields only;
//!   - `INSTANCE_DUMP` 0x21: id, u4 stack-trace serial, class id, u4 byte count, the field
//!     values: the class's fields in declaration order, then its superclass's, up the chain;
//!   - `OBJECT_ARRAY_DUMP` 0x22: id, u4 serial, u4 length, array class id, length ids;
//!   - `PRIMITIVE_ARRAY_DUMP` 0x23: id, u4 serial, u4 length, u1 type, the elements;
//!   - Android's `HEAP_DUMP_INFO` 0xFE: u4 heap id (`'A'` app, `'Z'` zygote, `'I'` image),
//!     heap name string id: the heap of the objects that follow, until the end of the record;
//!   - Android's `PRIMITIVE_ARRAY_NODATA_DUMP` 0xC3: a primitive array header without
//!     elements.
//!
//!   Basic types: 2 object (id size), 4 boolean (1), 5 char (2), 6 float (4), 7 double (8),
//!   8 byte (1), 9 short (2), 10 int (4), 11 long (8).
//!
//! # What [`read_hprof`] makes of it
//!
//! One pass over the file, in any order the producer chose:
//!
//! * **Objects**, in file order: every `INSTANCE_DUMP`, `OBJECT_ARRAY_DUMP`,
//!   `PRIMITIVE_ARRAY_DUMP` / `PRIMITIVE_ARRAY_NODATA_DUMP`, and for every `CLASS_DUMP` a class
//!   object ([`ObjectKind::Class`], of class `java.lang.Class`, synthetic with id 0 when the
//!   dump has none). Each object is in the heap the last `HEAP_DUMP_INFO` of its record named
//!   (`default` before any).
//! * **References**: an instance's reference fields in layout order (its class's fields, then
//!   the superclass's, ...), null ones included, so the i-th reference of an instance is the
//!   i-th object field of its class chain; an object array's elements ([`NO_FIELD`]); a class
//!   object's static object fields. Field names are hprof's plain names (`next`, `referent`);
//!   [`Class::fields`] says which class declares which. An instance whose class (or a
//!   superclass) has not been dumped yet is kept with its field bytes and decoded once every
//!   `CLASS_DUMP` is known; if it never is, its references stay unknown and
//!   [`HeapDump::incomplete`] says so. Ids are resolved to objects at the end; ids that name
//!   no object are [`REF_DANGLING`] (counted in [`HeapDump::dangling_refs`]).
//! * **Shallow sizes**: instances: the instance size their `CLASS_DUMP` declares (ART writes
//!   the object's size in memory; HotSpot writes the bytes of its fields, without the object
//!   header), or the bytes of their field values when the class declares 0 or was not dumped;
//!   arrays: length × element size (hprof does not say how large array headers are); class
//!   objects: the bytes of their static field values plus `java.lang.Class`'s declared
//!   instance size.
//! * **Class names** are Java names: HotSpot's `java/lang/String`, `[I` and
//!   `[Ljava/lang/Object;` become `java.lang.String`, `int[]`, `java.lang.Object[]`; ART's are
//!   already so. A class with no `LOAD_CLASS` name is `class@0x…`.
//! * **Class kinds** are inferred from names, walking superclasses: `…[]` is
//!   [`ClassKind::Array`], `java.lang.String` String, `java.lang.Class` Class, (subclasses of)
//!   `java.lang.ref.WeakReference`, `SoftReference`, `PhantomReference` the reference kinds,
//!   `java.lang.ref.FinalizerReference` (Android) and `java.lang.ref.Finalizer` (JVM)
//!   FinalizerReference, `java.lang.ClassLoader` ClassLoader, `java.lang.DexCache` DexCache;
//!   other classes whose chain is complete are Normal, the rest Unknown.
//! * **Roots** keep their kind and order; a root whose id names no object is dropped and
//!   counted ([`HprofStats::dangling_roots`]: normal after `hprof-conv -z`).
//! * **Damage** (the file ends inside a record, a sub-record overruns its record, an unknown
//!   sub-record tag, a bad type code): with [`HprofReadOptions::partial`] (the default) everything
//!   complete before it is kept and [`HeapDump::incomplete`] names the file, byte offset and
//!   record; without it, the error is returned.

pub mod conv;
pub mod layout;
pub mod names;
pub mod walk;

use std::io::Read;

use rustc_hash::FxHashMap;

use crate::error::{Error, ErrorKind, Result};
use crate::model::heap::{
    BasicType, Class, ClassIdx, ClassKind, FieldDesc, FieldIdx, HeapDump, NO_FIELD, ObjIdx, ObjectKind, REF_DANGLING,
    REF_NULL, Root, RootKind,
};
pub use conv::{HprofConvOptions, HprofConvReport, NoSeek, hprof_conv, hprof_conv_renamed};
pub use layout::{ObjectSize, apply_object_size};
pub use names::{HprofNames, NameRewrite, scan_hprof_names};
pub use walk::{FileHeader, HprofStream, RecordHeader, Sub, SubRecord};
use walk::{be_uint, decode_mutf8, tag};

/// Options of [`read_hprof`].
#[derive(Debug, Clone)]
pub struct HprofReadOptions {
    /// On damage (truncation, a record or sub-record that lies about its length, an unknown
    /// sub-record tag), return what was complete before it with [`HeapDump::incomplete`] saying
    /// where (true), or fail with the error (false). Default: true.
    pub partial: bool,
}

impl Default for HprofReadOptions {
    fn default() -> Self {
        HprofReadOptions { partial: true }
    }
}

/// How many records (or sub-records) of one tag a file holds, and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TagCount {
    /// Records.
    pub count: u64,
    /// Bytes, headers included.
    pub bytes: u64,
}

/// What [`read_hprof_with_stats`] saw besides the heap.
#[derive(Debug, Clone, Default)]
pub struct HprofStats {
    /// The file header.
    pub header: Option<FileHeader>,
    /// Bytes read: the whole file, or up to the damage.
    pub bytes: u64,
    /// Top-level records by tag.
    pub records: std::collections::BTreeMap<u8, TagCount>,
    /// Heap-dump sub-records by tag.
    pub sub_records: std::collections::BTreeMap<u8, TagCount>,
    /// Instances that came before the `CLASS_DUMP` of their class or of a superclass, decoded at
    /// the end.
    pub instances_before_class: u64,
    /// Instances whose class (or a superclass) has no `CLASS_DUMP`: their references are unknown.
    pub instances_without_class: u64,
    /// Instances whose field bytes are not as many as their class chain declares.
    pub field_size_mismatches: u64,
    /// Roots whose id names no object (dropped from [`HeapDump::roots`]).
    pub dangling_roots: u64,
    /// Objects whose id an earlier object already had (references go to the first).
    pub duplicate_ids: u64,
    /// `CLASS_DUMP`s of a class dumped before (the first is kept).
    pub duplicate_class_dumps: u64,
    /// String ids used (class, field or heap names) but never defined by a `STRING` record.
    pub missing_strings: u64,
    /// Null references.
    pub null_refs: u64,
    /// The damage that ended reading early, if any (also in [`HeapDump::incomplete`]).
    pub damage: Option<String>,
    /// Every heap dump the file holds, in file order (read or not).
    pub dumps: Vec<HprofDumpInfo>,
    /// 0-based position in `dumps` of the dump these counts and the heap are of (`None`: the
    /// file holds no heap dump record).
    pub dump: Option<usize>,
}

/// One heap dump of an HPROF file. A run of `HEAP_DUMP_SEGMENT` records (0x1C) up to a
/// `HEAP_DUMP_END` (0x2C), or to the end of the file, is one dump (a `HEAP_DUMP` record inside
/// it included); outside such a run each `HEAP_DUMP` record (0x0C) is one dump. So the JVMTI hprof agent's files (one `HEAP_DUMP` per dump, or segments and an
/// end per dump) hold several, while HotSpot's and Android's (segments, one end) hold one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HprofDumpInfo {
    /// 0-based position among the file's dumps.
    pub index: usize,
    /// Byte offset of the dump's first record.
    pub offset: u64,
    /// Microseconds from the file header's time to the dump's first record.
    pub time_us: u32,
    /// Heap-dump records (`HEAP_DUMP` or segments) of the dump.
    pub records: u64,
    /// Bytes of those records, headers included.
    pub bytes: u64,
}

/// Which heap dump of a file to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HprofDumpSelect {
    /// The last one (what a heap analyzer shows; for single-dump files, the dump). Default.
    #[default]
    Last,
    /// The dump at this 0-based position.
    Index(usize),
}

/// Reads an hprof file into a [`HeapDump`]. `name` names the input in messages.
pub fn read_hprof<R: Read>(input: R, name: &str, opts: &HprofReadOptions) -> Result<HeapDump> {
    read_hprof_with_stats(input, name, opts).map(|(d, _)| d)
}

/// [`read_hprof`], with counts of what the file holds. A file with several heap dumps gives
/// its last (see [`read_hprof_dump`]); `stats.dumps` lists them all.
pub fn read_hprof_with_stats<R: Read>(input: R, name: &str, opts: &HprofReadOptions) -> Result<(HeapDump, HprofStats)> {
    read_hprof_dump(input, name, opts, HprofDumpSelect::Last)
}

/// Reads one heap dump of an hprof file (the last, or the one at a position), with counts of
/// what the file holds. `stats.dumps` lists every dump of the file; the heap counts are of the
/// dump read. Asking for a dump the file does not have is an error (`NoData`) naming how many
/// it has.
pub fn read_hprof_dump<R: Read>(
    input: R,
    name: &str,
    opts: &HprofReadOptions,
    which: HprofDumpSelect,
) -> Result<(HeapDump, HprofStats)> {
    let mut s = HprofStream::new(input, name)?;
    let mut b = Builder::new(s.header().id_size);
    let mut rec_counts = [TagCount::default(); 256];
    let mut sub_counts = [TagCount::default(); 256];
    let mut ds = Dumps { list: Vec::new(), in_segments: false, which, building: None };
    let result = walk_file(&mut s, &mut b, &mut rec_counts, &mut sub_counts, &mut ds);
    if let HprofDumpSelect::Index(i) = which
        && i >= ds.list.len()
        && result.is_ok()
    {
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{name}: no heap dump number {} (the file holds {})", i + 1, ds.list.len()),
        ));
    }
    let mut stats = HprofStats {
        header: Some(s.header().clone()),
        bytes: s.offset(),
        dump: ds.building,
        dumps: ds.list,
        ..Default::default()
    };
    if let Err(e) = result {
        if !opts.partial || !matches!(e.kind(), ErrorKind::Truncated | ErrorKind::Malformed) {
            return Err(e);
        }
        stats.damage = Some(e.to_string());
    }
    for (t, c) in rec_counts.iter().enumerate().filter(|(_, c)| c.count > 0) {
        stats.records.insert(t as u8, *c);
    }
    for (t, c) in sub_counts.iter().enumerate().filter(|(_, c)| c.count > 0) {
        stats.sub_records.insert(t as u8, *c);
    }
    let header = s.header().clone();
    let dump = b.finish(&header, &mut stats)?;
    #[cfg(debug_assertions)]
    dump.validate().map_err(|e| Error::new(ErrorKind::Malformed, format!("{name}: internal: {e}")))?;
    Ok((dump, stats))
}

/// Where the walk is among the file's heap dumps.
struct Dumps {
    list: Vec<HprofDumpInfo>,
    /// Inside a run of HEAP_DUMP_SEGMENTs not yet ended.
    in_segments: bool,
    which: HprofDumpSelect,
    /// The dump the builder holds.
    building: Option<usize>,
}

impl Dumps {
    /// A heap-dump record begins (`segment`: a HEAP_DUMP_SEGMENT). Returns whether its
    /// sub-records are to be built and whether the builder must first drop an earlier dump.
    fn record(&mut self, segment: bool, h: &RecordHeader) -> (bool, bool) {
        // A run of segments stays open until HEAP_DUMP_END: what comes inside it (a HEAP_DUMP
        // record too) is the same dump; outside one, each HEAP_DUMP is a dump of its own.
        if !self.in_segments {
            let index = self.list.len();
            self.list.push(HprofDumpInfo { index, offset: h.offset, time_us: h.time, records: 0, bytes: 0 });
        }
        self.in_segments |= segment;
        let cur = self.list.last_mut().expect("a dump");
        cur.records += 1;
        cur.bytes += 9 + u64::from(h.length);
        let index = cur.index;
        let wanted = match self.which {
            HprofDumpSelect::Last => true,
            HprofDumpSelect::Index(i) => i == index,
        };
        let reset = wanted && self.building.is_some_and(|b| b != index);
        if wanted {
            self.building = Some(index);
        }
        (wanted, reset)
    }
}

fn walk_file<R: Read>(
    s: &mut HprofStream<R>,
    b: &mut Builder,
    rec_counts: &mut [TagCount; 256],
    sub_counts: &mut [TagCount; 256],
    ds: &mut Dumps,
) -> Result<()> {
    let name = s.name().to_owned();
    let id = usize::from(s.header().id_size);
    while let Some(h) = s.next_record()? {
        let rc = &mut rec_counts[usize::from(h.tag)];
        rc.count += 1;
        rc.bytes += 9 + u64::from(h.length);
        let short = |what: &str| {
            Error::new(
                ErrorKind::Malformed,
                format!("{name}: {} is {} bytes long, too short for {what}", h.describe(), h.length),
            )
        };
        match h.tag {
            tag::STRING => {
                let body = s.body()?;
                if body.len() < id {
                    return Err(short("a string id"));
                }
                if !b.string(be_uint(&body[..id]), &body[id..]) {
                    return Err(Error::new(
                        ErrorKind::LimitExceeded,
                        format!("{name}: out of memory holding {} strings, at {}", b.strings.len(), h.describe()),
                    ));
                }
            }
            tag::LOAD_CLASS => {
                let body = s.body()?;
                if body.len() < 8 + 2 * id {
                    return Err(short("a class serial, class id, stack-trace serial and name id"));
                }
                let class_id = be_uint(&body[4..4 + id]);
                let name_id = be_uint(&body[8 + id..8 + 2 * id]);
                b.class_names.entry(class_id).or_insert(name_id);
            }
            tag::HEAP_DUMP_END => ds.in_segments = false,
            tag::HEAP_DUMP | tag::HEAP_DUMP_SEGMENT => {
                let (wanted, reset) = ds.record(h.tag == tag::HEAP_DUMP_SEGMENT, &h);
                if !wanted {
                    // Another dump than the one asked for: its sub-records are walked, not kept.
                    while s.next_sub()?.is_some() {}
                    continue;
                }
                if reset {
                    // A later dump replaces the one built so far; the sub-record counts are of
                    // the dump read.
                    *b = b.successor();
                    sub_counts.fill(TagCount::default());
                }
                b.cur_heap = None;
                while let Some(sr) = s.next_sub()? {
                    let sc = &mut sub_counts[usize::from(sr.tag)];
                    sc.count += 1;
                    sc.bytes += sr.len;
                    b.sub_record(&sr).map_err(|e| {
                        let t = sr.tag;
                        let place = format!("sub-record 0x{t:02X} {} at byte {}", walk::sub_record_name(t), sr.offset);
                        e.within(format_args!("{name}: {place} in {}", h.describe()))
                    })?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// An instance's reference fields, worked out from its class chain.
#[derive(Debug, Default)]
struct Layout {
    /// Bytes of field values the chain declares.
    bytes: u64,
    /// (byte offset, provisional field index) of each object field, in layout order.
    refs: Vec<(u32, u32)>,
}

#[derive(Debug, Clone, Copy)]
enum LayoutState {
    /// Not known; the chain was incomplete when `dumped` classes had been dumped.
    Missing { dumped: u32 },
    /// `layouts[i]`.
    Ready(u32),
}

/// A class while the file is read.
#[derive(Debug)]
struct ClassB {
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
const CLASS_OF_CLASS: ClassIdx = u32::MAX;
/// `obj_class` of primitive arrays until their classes are known: this minus the type code.
const CLASS_OF_PRIM: ClassIdx = u32::MAX - 1;

/// Builds a [`HeapDump`] from sub-records.
struct Builder {
    id_size: u8,
    d: HeapDump,
    /// Reference target ids, parallel to `d.ref_field` (resolved to objects at the end).
    ref_ids: Vec<u64>,
    strings: FxHashMap<u64, (usize, u32)>,
    string_bytes: Vec<u8>,
    class_names: FxHashMap<u64, u64>,
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
    cur_heap: Option<u8>,
    /// The last class an instance used: (class id, class index).
    last_class: (u64, ClassIdx),
    field_size_mismatches: u64,
    duplicate_class_dumps: u64,
}

impl Builder {
    /// A builder for the next heap dump of the file: the strings and class names (top-level
    /// records, shared by every dump) carried over, the heap empty.
    fn successor(&mut self) -> Builder {
        let mut b = Builder::new(self.id_size);
        b.strings = std::mem::take(&mut self.strings);
        b.string_bytes = std::mem::take(&mut self.string_bytes);
        b.class_names = std::mem::take(&mut self.class_names);
        b
    }

    fn new(id_size: u8) -> Self {
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
    fn string(&mut self, id: u64, bytes: &[u8]) -> bool {
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

    fn sub_record(&mut self, sr: &Sub<'_>) -> Result<()> {
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

    fn finish(mut self, header: &FileHeader, stats: &mut HprofStats) -> Result<HeapDump> {
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
fn infer_kinds(classes: &mut [Class]) {
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

/// A Java class name from hprof's spelling: HotSpot's internal names (`java/lang/String`,
/// `[I`, `[[Ljava/lang/Object;`) become `java.lang.String`, `int[]`, `java.lang.Object[][]`;
/// Android's names are already Java names and stay as they are. A hidden class's
/// `/0x…` suffix is kept.
pub fn java_class_name(raw: &str) -> String {
    let dotted = |s: &str| -> String {
        match s.rfind("/0x") {
            Some(i) if !s[i + 1..].contains('/') => format!("{}{}", s[..i].replace('/', "."), &s[i..]),
            _ => s.replace('/', "."),
        }
    };
    if !raw.starts_with('[') {
        return dotted(raw);
    }
    let dims = raw.bytes().take_while(|&b| b == b'[').count();
    let elem = &raw[dims..];
    let base = match elem {
        "Z" => "boolean".to_owned(),
        "B" => "byte".to_owned(),
        "C" => "char".to_owned(),
        "S" => "short".to_owned(),
        "I" => "int".to_owned(),
        "J" => "long".to_owned(),
        "F" => "float".to_owned(),
        "D" => "double".to_owned(),
        _ => match elem.strip_prefix('L').and_then(|e| e.strip_suffix(';')) {
            Some(e) => dotted(e),
            None => return dotted(raw),
        },
    };
    format!("{base}{}", "[]".repeat(dims))
}

/// Object ids to object indexes: an open-addressing table of (id, index) pairs with linear
/// probing, at most 3/4 full, so a lookup is usually one cache miss. Id 0 (null) is never an
/// object; an id given to several objects names the first.
struct IdIndex {
    slots: Vec<(u64, ObjIdx)>,
    shift: u32,
    duplicates: u64,
}

impl IdIndex {
    fn new(obj_id: &[u64]) -> Self {
        let cap = (obj_id.len() + obj_id.len() / 3 + 1).next_power_of_two().max(2);
        let mut ix = IdIndex { slots: vec![(0, 0); cap], shift: 64 - cap.trailing_zeros(), duplicates: 0 };
        let mask = cap - 1;
        for (i, &id) in obj_id.iter().enumerate() {
            if id == 0 {
                continue;
            }
            let mut at = ix.slot(id);
            loop {
                match ix.slots[at].0 {
                    0 => {
                        ix.slots[at] = (id, i as ObjIdx);
                        break;
                    }
                    k if k == id => {
                        ix.duplicates += 1;
                        break;
                    }
                    _ => at = (at + 1) & mask,
                }
            }
        }
        ix
    }

    #[inline]
    fn slot(&self, id: u64) -> usize {
        (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    fn get(&self, id: u64) -> Option<ObjIdx> {
        if id == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.slot(id);
        loop {
            match self.slots[at] {
                (0, _) => return None,
                (k, v) if k == id => return Some(v),
                _ => at = (at + 1) & mask,
            }
        }
    }
}

/// True when `head` starts like an hprof file.
pub fn is_hprof(head: &[u8]) -> bool {
    head.starts_with(b"JAVA PROFILE 1.0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names() {
        assert_eq!(java_class_name("java/lang/String"), "java.lang.String");
        assert_eq!(java_class_name("[I"), "int[]");
        assert_eq!(java_class_name("[[Ljava/lang/Object;"), "java.lang.Object[][]");
        assert_eq!(java_class_name("java.lang.Object[][]"), "java.lang.Object[][]");
        assert_eq!(java_class_name("byte[]"), "byte[]");
        assert_eq!(java_class_name("Foo$$Lambda$14/0x0000000800c03000"), "Foo$$Lambda$14/0x0000000800c03000");
        assert_eq!(java_class_name("a/b/Foo$$Lambda/0x12"), "a.b.Foo$$Lambda/0x12");
        assert_eq!(java_class_name("[Q"), "[Q");
    }

    #[test]
    fn id_index_finds_ids_in_and_out_of_order() {
        let many: Vec<u64> = (1..5000u64).map(|i| i * 24 + (i % 7) * (1 << 33)).collect();
        for ids in
            [vec![16u64, 32, 48, 4096, 1 << 40], vec![48, 16, 1 << 40, 32, 4096, 16], vec![7], vec![1, u64::MAX], many]
        {
            let ix = IdIndex::new(&ids);
            for (i, &id) in ids.iter().enumerate() {
                let want = ids.iter().position(|&x| x == id).unwrap();
                assert_eq!(ix.get(id), Some(want as u32), "{ids:?} {i}");
            }
            assert_eq!(ix.get(17), None);
            assert_eq!(ix.get(1 << 41), None);
        }
        assert_eq!(IdIndex::new(&[]).get(5), None);
        let dup = IdIndex::new(&[16, 16, 8]);
        assert_eq!((dup.duplicates, dup.get(16)), (1, Some(0)));
        assert_eq!(IdIndex::new(&[0, 5]).get(0), None);
    }
}
