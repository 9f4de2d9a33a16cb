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

mod dump_builder;
mod id_index;
#[cfg(test)]
mod tests;

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
use dump_builder::*;
use id_index::*;
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

/// True when `head` starts like an hprof file.
pub fn is_hprof(head: &[u8]) -> bool {
    head.starts_with(b"JAVA PROFILE 1.0")
}
