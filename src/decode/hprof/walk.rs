//! The low-level hprof walker: the file header, top-level records and heap-dump sub-records,
//! read from any [`Read`] through one buffer, with every length checked against the record
//! that holds it and against the bytes that actually arrive.
//!
//! [`HprofStream`] is a lending iterator in two levels. [`HprofStream::next_record`] moves to
//! the next top-level record (skipping whatever the caller left of the current one) and
//! returns its 9-byte header; for a record that is not a heap dump, [`HprofStream::body`]
//! returns its bytes. Inside a `HEAP_DUMP` (0x0C) or `HEAP_DUMP_SEGMENT` (0x1C) record,
//! [`HprofStream::next_sub`] returns one sub-record at a time, parsed ([`SubRecord`]) and raw
//! ([`Sub::raw`]). A primitive array larger than [`STREAM_PAYLOAD`] bytes is not buffered: its
//! header comes with `data: None` and the caller copies the elements with
//! [`HprofStream::copy_payload`] or lets the next call skip them, so memory stays bounded by
//! the largest instance or object array, not by the file.
//!
//! Nothing is allocated from a length the file claims: the buffer grows only as bytes arrive,
//! so a record that says it is 4 GiB long in a 1 KiB file costs 1 KiB and ends in a
//! [`ErrorKind::Truncated`] error naming the file, the byte offset and the record.

use std::io::{self, Read, Write};

use crate::error::{Error, ErrorKind, Result};
use crate::model::heap::{BasicType, RootKind};

/// Top-level record tags.
pub mod tag {
    /// `STRING` (UTF8): id, then modified UTF-8 bytes.
    pub const STRING: u8 = 0x01;
    /// `LOAD_CLASS`: class serial, class object id, stack-trace serial, name string id.
    pub const LOAD_CLASS: u8 = 0x02;
    /// `UNLOAD_CLASS`: class serial.
    pub const UNLOAD_CLASS: u8 = 0x03;
    /// `STACK_FRAME`.
    pub const STACK_FRAME: u8 = 0x04;
    /// `STACK_TRACE`.
    pub const STACK_TRACE: u8 = 0x05;
    /// `ALLOC_SITES`.
    pub const ALLOC_SITES: u8 = 0x06;
    /// `HEAP_SUMMARY`.
    pub const HEAP_SUMMARY: u8 = 0x07;
    /// `START_THREAD`.
    pub const START_THREAD: u8 = 0x0A;
    /// `END_THREAD`.
    pub const END_THREAD: u8 = 0x0B;
    /// `HEAP_DUMP`: sub-records.
    pub const HEAP_DUMP: u8 = 0x0C;
    /// `CPU_SAMPLES`.
    pub const CPU_SAMPLES: u8 = 0x0D;
    /// `CONTROL_SETTINGS`.
    pub const CONTROL_SETTINGS: u8 = 0x0E;
    /// `HEAP_DUMP_SEGMENT`: sub-records, as `HEAP_DUMP`.
    pub const HEAP_DUMP_SEGMENT: u8 = 0x1C;
    /// `HEAP_DUMP_END`: empty.
    pub const HEAP_DUMP_END: u8 = 0x2C;
}

/// Heap-dump sub-record tags (standard, then Android's).
pub mod sub {
    /// `ROOT_UNKNOWN`: id.
    pub const ROOT_UNKNOWN: u8 = 0xFF;
    /// `ROOT_JNI_GLOBAL`: id, JNI global ref id.
    pub const ROOT_JNI_GLOBAL: u8 = 0x01;
    /// `ROOT_JNI_LOCAL`: id, thread serial, frame number.
    pub const ROOT_JNI_LOCAL: u8 = 0x02;
    /// `ROOT_JAVA_FRAME`: id, thread serial, frame number.
    pub const ROOT_JAVA_FRAME: u8 = 0x03;
    /// `ROOT_NATIVE_STACK`: id, thread serial.
    pub const ROOT_NATIVE_STACK: u8 = 0x04;
    /// `ROOT_STICKY_CLASS`: id.
    pub const ROOT_STICKY_CLASS: u8 = 0x05;
    /// `ROOT_THREAD_BLOCK`: id, thread serial.
    pub const ROOT_THREAD_BLOCK: u8 = 0x06;
    /// `ROOT_MONITOR_USED`: id.
    pub const ROOT_MONITOR_USED: u8 = 0x07;
    /// `ROOT_THREAD_OBJECT`: id, thread serial, stack-trace serial.
    pub const ROOT_THREAD_OBJECT: u8 = 0x08;
    /// `CLASS_DUMP`.
    pub const CLASS_DUMP: u8 = 0x20;
    /// `INSTANCE_DUMP`.
    pub const INSTANCE_DUMP: u8 = 0x21;
    /// `OBJECT_ARRAY_DUMP`.
    pub const OBJECT_ARRAY_DUMP: u8 = 0x22;
    /// `PRIMITIVE_ARRAY_DUMP`.
    pub const PRIMITIVE_ARRAY_DUMP: u8 = 0x23;
    /// Android `HEAP_DUMP_INFO`: heap id (u4), heap name string id.
    pub const HEAP_DUMP_INFO: u8 = 0xFE;
    /// Android `ROOT_INTERNED_STRING`: id.
    pub const ROOT_INTERNED_STRING: u8 = 0x89;
    /// Android `ROOT_FINALIZING`: id.
    pub const ROOT_FINALIZING: u8 = 0x8A;
    /// Android `ROOT_DEBUGGER`: id.
    pub const ROOT_DEBUGGER: u8 = 0x8B;
    /// Android `ROOT_REFERENCE_CLEANUP`: id.
    pub const ROOT_REFERENCE_CLEANUP: u8 = 0x8C;
    /// Android `ROOT_VM_INTERNAL`: id.
    pub const ROOT_VM_INTERNAL: u8 = 0x8D;
    /// Android `ROOT_JNI_MONITOR`: id, thread serial, stack depth.
    pub const ROOT_JNI_MONITOR: u8 = 0x8E;
    /// Android `UNREACHABLE`: id.
    pub const UNREACHABLE: u8 = 0x90;
    /// Android `PRIMITIVE_ARRAY_NODATA_DUMP`: a primitive array header without elements.
    pub const PRIMITIVE_ARRAY_NODATA: u8 = 0xC3;
}

/// The name of a top-level record tag (`?` for tags hprof does not define).
pub fn record_name(t: u8) -> &'static str {
    match t {
        tag::STRING => "STRING",
        tag::LOAD_CLASS => "LOAD_CLASS",
        tag::UNLOAD_CLASS => "UNLOAD_CLASS",
        tag::STACK_FRAME => "STACK_FRAME",
        tag::STACK_TRACE => "STACK_TRACE",
        tag::ALLOC_SITES => "ALLOC_SITES",
        tag::HEAP_SUMMARY => "HEAP_SUMMARY",
        tag::START_THREAD => "START_THREAD",
        tag::END_THREAD => "END_THREAD",
        tag::HEAP_DUMP => "HEAP_DUMP",
        tag::CPU_SAMPLES => "CPU_SAMPLES",
        tag::CONTROL_SETTINGS => "CONTROL_SETTINGS",
        tag::HEAP_DUMP_SEGMENT => "HEAP_DUMP_SEGMENT",
        tag::HEAP_DUMP_END => "HEAP_DUMP_END",
        _ => "?",
    }
}

/// The name of a heap-dump sub-record tag (`?` for unknown tags).
pub fn sub_record_name(t: u8) -> &'static str {
    match t {
        sub::ROOT_UNKNOWN => "ROOT_UNKNOWN",
        sub::ROOT_JNI_GLOBAL => "ROOT_JNI_GLOBAL",
        sub::ROOT_JNI_LOCAL => "ROOT_JNI_LOCAL",
        sub::ROOT_JAVA_FRAME => "ROOT_JAVA_FRAME",
        sub::ROOT_NATIVE_STACK => "ROOT_NATIVE_STACK",
        sub::ROOT_STICKY_CLASS => "ROOT_STICKY_CLASS",
        sub::ROOT_THREAD_BLOCK => "ROOT_THREAD_BLOCK",
        sub::ROOT_MONITOR_USED => "ROOT_MONITOR_USED",
        sub::ROOT_THREAD_OBJECT => "ROOT_THREAD_OBJECT",
        sub::CLASS_DUMP => "CLASS_DUMP",
        sub::INSTANCE_DUMP => "INSTANCE_DUMP",
        sub::OBJECT_ARRAY_DUMP => "OBJECT_ARRAY_DUMP",
        sub::PRIMITIVE_ARRAY_DUMP => "PRIMITIVE_ARRAY_DUMP",
        sub::HEAP_DUMP_INFO => "HEAP_DUMP_INFO",
        sub::ROOT_INTERNED_STRING => "ROOT_INTERNED_STRING",
        sub::ROOT_FINALIZING => "ROOT_FINALIZING",
        sub::ROOT_DEBUGGER => "ROOT_DEBUGGER",
        sub::ROOT_REFERENCE_CLEANUP => "ROOT_REFERENCE_CLEANUP",
        sub::ROOT_VM_INTERNAL => "ROOT_VM_INTERNAL",
        sub::ROOT_JNI_MONITOR => "ROOT_JNI_MONITOR",
        sub::UNREACHABLE => "UNREACHABLE",
        sub::PRIMITIVE_ARRAY_NODATA => "PRIMITIVE_ARRAY_NODATA_DUMP",
        _ => "?",
    }
}

/// The root kind of a root sub-record tag, `None` for tags that are not roots.
pub fn root_kind(t: u8) -> Option<RootKind> {
    Some(match t {
        sub::ROOT_UNKNOWN => RootKind::Unknown,
        sub::ROOT_JNI_GLOBAL => RootKind::JniGlobal,
        sub::ROOT_JNI_LOCAL => RootKind::JniLocal,
        sub::ROOT_JAVA_FRAME => RootKind::JavaFrame,
        sub::ROOT_NATIVE_STACK => RootKind::NativeStack,
        sub::ROOT_STICKY_CLASS => RootKind::StickyClass,
        sub::ROOT_THREAD_BLOCK => RootKind::ThreadBlock,
        sub::ROOT_MONITOR_USED => RootKind::MonitorUsed,
        sub::ROOT_THREAD_OBJECT => RootKind::ThreadObject,
        sub::ROOT_INTERNED_STRING => RootKind::InternedString,
        sub::ROOT_FINALIZING => RootKind::Finalizing,
        sub::ROOT_DEBUGGER => RootKind::Debugger,
        sub::ROOT_REFERENCE_CLEANUP => RootKind::ReferenceCleanup,
        sub::ROOT_VM_INTERNAL => RootKind::VmInternal,
        sub::ROOT_JNI_MONITOR => RootKind::JniMonitor,
        sub::UNREACHABLE => RootKind::Unreachable,
        _ => return None,
    })
}

/// Primitive arrays with more element bytes than this are handed over unbuffered (see
/// [`HprofStream::copy_payload`]).
pub const STREAM_PAYLOAD: u64 = 1 << 20;

/// The longest header string accepted (the real ones are 18 bytes).
pub const MAX_FORMAT_LEN: usize = 64;

/// The hprof file header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The format string without its NUL: `JAVA PROFILE 1.0.2`.
    pub format: String,
    /// Size of identifiers: 4 or 8.
    pub id_size: u8,
    /// Milliseconds since the epoch when the dump was taken (as written).
    pub timestamp_ms: u64,
    /// Bytes of the header (format string, NUL, id size, timestamp).
    pub len: u64,
}

impl FileHeader {
    /// The version part of the format string: `1.0.3`.
    pub fn version(&self) -> &str {
        self.format.strip_prefix("JAVA PROFILE ").unwrap_or(&self.format)
    }

    /// True for Android's `JAVA PROFILE 1.0.3`.
    pub fn is_android(&self) -> bool {
        self.format == "JAVA PROFILE 1.0.3"
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.format.len() + 13);
        v.extend_from_slice(self.format.as_bytes());
        v.push(0);
        v.extend_from_slice(&u32::from(self.id_size).to_be_bytes());
        v.extend_from_slice(&self.timestamp_ms.to_be_bytes());
        v
    }
}

/// The 9-byte header of a top-level record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// Record tag.
    pub tag: u8,
    /// Microseconds since the header's timestamp (0 from ART and HotSpot).
    pub time: u32,
    /// Bytes of the body.
    pub length: u32,
    /// Byte offset of the tag in the file.
    pub offset: u64,
}

impl RecordHeader {
    /// True for `HEAP_DUMP` and `HEAP_DUMP_SEGMENT`, whose bodies are sub-records.
    pub fn is_heap_dump(&self) -> bool {
        self.tag == tag::HEAP_DUMP || self.tag == tag::HEAP_DUMP_SEGMENT
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> [u8; 9] {
        let mut b = [0u8; 9];
        b[0] = self.tag;
        b[1..5].copy_from_slice(&self.time.to_be_bytes());
        b[5..9].copy_from_slice(&self.length.to_be_bytes());
        b
    }

    /// `0x1C HEAP_DUMP_SEGMENT at byte 4096`, for messages.
    pub fn describe(&self) -> String {
        format!("record 0x{:02X} {} at byte {}", self.tag, record_name(self.tag), self.offset)
    }
}

/// A GC root sub-record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootRecord {
    /// The sub-record tag (0xFF, 0x01–0x08, 0x89–0x8E, 0x90).
    pub tag: u8,
    /// The root kind the tag stands for.
    pub kind: RootKind,
    /// The rooted object.
    pub id: u64,
    /// Thread serial, for the kinds that carry one.
    pub thread_serial: Option<u32>,
    /// The second number some kinds carry: frame number (JNI local, Java frame), stack-trace
    /// serial (thread object), stack depth (JNI monitor).
    pub frame: Option<u32>,
    /// The JNI global reference id (`ROOT_JNI_GLOBAL` only).
    pub jni_ref: Option<u64>,
}

/// A static field of a `CLASS_DUMP`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticField {
    /// Name string id.
    pub name: u64,
    /// Type.
    pub ty: BasicType,
    /// Value, zero-extended from its size (an object id for [`BasicType::Object`]).
    pub value: u64,
}

/// A `CLASS_DUMP` sub-record.
#[derive(Clone, Copy, Debug)]
pub struct ClassDump<'a> {
    /// Class object id.
    pub id: u64,
    /// Stack-trace serial.
    pub trace_serial: u32,
    /// Superclass object id (0: none).
    pub super_id: u64,
    /// Class loader object id.
    pub loader_id: u64,
    /// Signers object id.
    pub signers_id: u64,
    /// Protection domain object id.
    pub protection_domain_id: u64,
    /// Instance size in bytes, as the producer says.
    pub instance_size: u32,
    /// Constant-pool entries.
    pub constant_count: u16,
    /// Static fields.
    pub static_count: u16,
    /// Instance fields declared by this class.
    pub field_count: u16,
    id_size: u8,
    constants: &'a [u8],
    statics: &'a [u8],
    fields: &'a [u8],
}

impl<'a> ClassDump<'a> {
    /// Constant-pool entries: (index, type, value).
    pub fn constants(&self) -> impl Iterator<Item = (u16, BasicType, u64)> + 'a {
        let (b, id) = (self.constants, self.id_size);
        let mut at = 0usize;
        (0..self.constant_count).map(move |_| {
            let index = be16(&b[at..]);
            let ty = BasicType::from_code(b[at + 2]).expect("types checked when the record was measured");
            let n = usize::from(ty.size(id));
            let value = be_uint(&b[at + 3..at + 3 + n]);
            at += 3 + n;
            (index, ty, value)
        })
    }

    /// Static fields, in order.
    pub fn statics(&self) -> impl Iterator<Item = StaticField> + 'a {
        let (b, id) = (self.statics, self.id_size);
        let ids = usize::from(id);
        let mut at = 0usize;
        (0..self.static_count).map(move |_| {
            let name = be_uint(&b[at..at + ids]);
            let ty = BasicType::from_code(b[at + ids]).expect("types checked when the record was measured");
            let n = usize::from(ty.size(id));
            let value = be_uint(&b[at + ids + 1..at + ids + 1 + n]);
            at += ids + 1 + n;
            StaticField { name, ty, value }
        })
    }

    /// Instance fields declared by this class: (name string id, type), in layout order.
    pub fn fields(&self) -> impl Iterator<Item = (u64, BasicType)> + 'a {
        let (b, id) = (self.fields, usize::from(self.id_size));
        (0..usize::from(self.field_count)).map(move |i| {
            let at = i * (id + 1);
            let ty = BasicType::from_code(b[at + id]).expect("types checked when the record was measured");
            (be_uint(&b[at..at + id]), ty)
        })
    }
}

/// An `INSTANCE_DUMP` sub-record.
#[derive(Clone, Copy, Debug)]
pub struct InstanceDump<'a> {
    /// Object id.
    pub id: u64,
    /// Stack-trace serial.
    pub trace_serial: u32,
    /// Class object id.
    pub class_id: u64,
    /// Field values: this class's fields, then its superclass's, and so on.
    pub data: &'a [u8],
}

/// An `OBJECT_ARRAY_DUMP` sub-record.
#[derive(Clone, Copy, Debug)]
pub struct ObjectArrayDump<'a> {
    /// Array id.
    pub id: u64,
    /// Stack-trace serial.
    pub trace_serial: u32,
    /// Number of elements.
    pub len: u32,
    /// Array class object id.
    pub class_id: u64,
    /// The element ids, `len × id_size` bytes.
    pub elements: &'a [u8],
    id_size: u8,
}

impl<'a> ObjectArrayDump<'a> {
    /// The element ids (0 is null).
    pub fn ids(&self) -> impl Iterator<Item = u64> + 'a {
        self.elements.chunks_exact(usize::from(self.id_size)).map(be_uint)
    }
}

/// A `PRIMITIVE_ARRAY_DUMP` (or Android `PRIMITIVE_ARRAY_NODATA_DUMP`) sub-record.
#[derive(Clone, Copy, Debug)]
pub struct PrimitiveArrayDump<'a> {
    /// Array id.
    pub id: u64,
    /// Stack-trace serial.
    pub trace_serial: u32,
    /// Number of elements.
    pub len: u32,
    /// Element type.
    pub ty: BasicType,
    /// The elements, `len × size` bytes; `None` when the record has none (`NODATA`) or when
    /// they are more than [`STREAM_PAYLOAD`] bytes and were left in the stream (see
    /// [`HprofStream::copy_payload`]).
    pub data: Option<&'a [u8]>,
    /// True for `PRIMITIVE_ARRAY_NODATA_DUMP` (0xC3): the file holds no elements.
    pub no_data: bool,
}

/// A heap-dump sub-record, parsed.
#[derive(Clone, Copy, Debug)]
pub enum SubRecord<'a> {
    /// A GC root.
    Root(RootRecord),
    /// Android `HEAP_DUMP_INFO`: the heap the following objects belong to.
    HeapDumpInfo {
        /// Heap id (`'A'` app, `'Z'` zygote, `'I'` image, 0 default).
        heap_id: u32,
        /// Heap name string id.
        name_id: u64,
    },
    /// `CLASS_DUMP`.
    Class(ClassDump<'a>),
    /// `INSTANCE_DUMP`.
    Instance(InstanceDump<'a>),
    /// `OBJECT_ARRAY_DUMP`.
    ObjectArray(ObjectArrayDump<'a>),
    /// `PRIMITIVE_ARRAY_DUMP` or `PRIMITIVE_ARRAY_NODATA_DUMP`.
    PrimitiveArray(PrimitiveArrayDump<'a>),
}

/// A sub-record with where it is and its bytes.
#[derive(Clone, Copy, Debug)]
pub struct Sub<'a> {
    /// Sub-record tag.
    pub tag: u8,
    /// Byte offset of the tag in the file.
    pub offset: u64,
    /// Bytes of the whole sub-record, tag included.
    pub len: u64,
    /// Its bytes from the tag on: all of them, or only the header when the elements of a large
    /// primitive array were left in the stream.
    pub raw: &'a [u8],
    /// The parsed sub-record.
    pub record: SubRecord<'a>,
}

/// Reads an unsigned big-endian integer of 1 to 8 bytes.
#[inline]
pub fn be_uint(b: &[u8]) -> u64 {
    match b.len() {
        4 => u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        8 => u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        _ => b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x)),
    }
}

#[inline]
fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

#[inline]
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// How long a sub-record is, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubLen {
    /// At least this many bytes (from the tag) are needed to tell.
    Need(u64),
    /// `1 + header` bytes of tag and fixed fields, then `payload` bytes of elements or field
    /// values.
    Known {
        /// Bytes after the tag up to the payload.
        header: u64,
        /// Bytes of the payload.
        payload: u64,
    },
}

/// Why a sub-record cannot be measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubLenError {
    /// The tag is none hprof defines.
    UnknownTag(u8),
    /// A basic-type code that is not one (at this byte offset from the tag).
    BadType {
        /// The code.
        code: u8,
        /// Offset from the tag.
        at: u64,
    },
}

/// Measures the sub-record that starts at `b[0]`, reading only its fixed fields (and, for a
/// `CLASS_DUMP`, its field tables).
pub fn sub_len(b: &[u8], id_size: u8) -> std::result::Result<SubLen, SubLenError> {
    let id = u64::from(id_size);
    let Some(&t) = b.first() else { return Ok(SubLen::Need(1)) };
    let fixed = |h: u64| Ok(SubLen::Known { header: h, payload: 0 });
    match t {
        sub::ROOT_UNKNOWN
        | sub::ROOT_STICKY_CLASS
        | sub::ROOT_MONITOR_USED
        | sub::ROOT_INTERNED_STRING
        | sub::ROOT_FINALIZING
        | sub::ROOT_DEBUGGER
        | sub::ROOT_REFERENCE_CLEANUP
        | sub::ROOT_VM_INTERNAL
        | sub::UNREACHABLE => fixed(id),
        sub::ROOT_JNI_GLOBAL => fixed(2 * id),
        sub::ROOT_JNI_LOCAL | sub::ROOT_JAVA_FRAME | sub::ROOT_THREAD_OBJECT | sub::ROOT_JNI_MONITOR => fixed(id + 8),
        sub::ROOT_NATIVE_STACK | sub::ROOT_THREAD_BLOCK => fixed(id + 4),
        sub::HEAP_DUMP_INFO => fixed(4 + id),
        sub::INSTANCE_DUMP => {
            let h = 2 * id + 8;
            if (b.len() as u64) < 1 + h {
                return Ok(SubLen::Need(1 + h));
            }
            let n = be32(&b[(1 + 2 * id + 4) as usize..]);
            Ok(SubLen::Known { header: h, payload: u64::from(n) })
        }
        sub::OBJECT_ARRAY_DUMP => {
            let h = 2 * id + 8;
            if (b.len() as u64) < 1 + h {
                return Ok(SubLen::Need(1 + h));
            }
            let n = be32(&b[(1 + id + 4) as usize..]);
            Ok(SubLen::Known { header: h, payload: u64::from(n) * id })
        }
        sub::PRIMITIVE_ARRAY_DUMP | sub::PRIMITIVE_ARRAY_NODATA => {
            let h = id + 9;
            if (b.len() as u64) < 1 + h {
                return Ok(SubLen::Need(1 + h));
            }
            let n = be32(&b[(1 + id + 4) as usize..]);
            let code = b[(1 + id + 8) as usize];
            let ty = match BasicType::from_code(code) {
                Some(ty) if ty != BasicType::Object => ty,
                _ => return Err(SubLenError::BadType { code, at: 1 + id + 8 }),
            };
            let payload = if t == sub::PRIMITIVE_ARRAY_NODATA { 0 } else { u64::from(n) * u64::from(ty.size(id_size)) };
            Ok(SubLen::Known { header: h, payload })
        }
        sub::CLASS_DUMP => class_dump_len(b, id_size),
        other => Err(SubLenError::UnknownTag(other)),
    }
}

/// Offsets inside a CLASS_DUMP (from the tag): where the constant pool, statics and fields
/// start, and the total length.
struct ClassLayout {
    constants: usize,
    statics: usize,
    fields: usize,
    end: usize,
    counts: [u16; 3],
}

fn class_dump_layout(b: &[u8], id_size: u8) -> std::result::Result<std::result::Result<ClassLayout, u64>, SubLenError> {
    let id = usize::from(id_size);
    let mut at = 1 + 7 * id + 4 + 4;
    let need = |n: usize| Ok(Err(n as u64));
    if b.len() < at + 2 {
        return need(at + 2);
    }
    let constants = at;
    let nc = be16(&b[at..]);
    at += 2;
    for _ in 0..nc {
        if b.len() < at + 3 {
            return need(at + 3);
        }
        let code = b[at + 2];
        let ty = BasicType::from_code(code).ok_or(SubLenError::BadType { code, at: (at + 2) as u64 })?;
        at += 3 + usize::from(ty.size(id_size));
    }
    if b.len() < at + 2 {
        return need(at + 2);
    }
    let statics = at;
    let ns = be16(&b[at..]);
    at += 2;
    for _ in 0..ns {
        if b.len() < at + id + 1 {
            return need(at + id + 1);
        }
        let code = b[at + id];
        let ty = BasicType::from_code(code).ok_or(SubLenError::BadType { code, at: (at + id) as u64 })?;
        at += id + 1 + usize::from(ty.size(id_size));
    }
    if b.len() < at + 2 {
        return need(at + 2);
    }
    let fields = at;
    let nf = be16(&b[at..]);
    at += 2;
    if b.len() < at + usize::from(nf) * (id + 1) {
        return need(at + usize::from(nf) * (id + 1));
    }
    for i in 0..usize::from(nf) {
        let p = at + i * (id + 1) + id;
        let code = b[p];
        BasicType::from_code(code).ok_or(SubLenError::BadType { code, at: p as u64 })?;
    }
    at += usize::from(nf) * (id + 1);
    Ok(Ok(ClassLayout { constants, statics, fields, end: at, counts: [nc, ns, nf] }))
}

fn class_dump_len(b: &[u8], id_size: u8) -> std::result::Result<SubLen, SubLenError> {
    Ok(match class_dump_layout(b, id_size)? {
        Ok(l) => SubLen::Known { header: l.end as u64 - 1, payload: 0 },
        Err(n) => SubLen::Need(n),
    })
}

/// Parses a sub-record whose bytes are all in `b` (as measured by [`sub_len`]); `payload_here`
/// is false when the elements of a primitive array are not in `b`.
fn parse_sub(b: &[u8], id_size: u8, payload_here: bool) -> SubRecord<'_> {
    let id = usize::from(id_size);
    let rd = |at: usize| be_uint(&b[at..at + id]);
    let t = b[0];
    if let Some(kind) = root_kind(t) {
        let mut r = RootRecord { tag: t, kind, id: rd(1), thread_serial: None, frame: None, jni_ref: None };
        match t {
            sub::ROOT_JNI_GLOBAL => r.jni_ref = Some(rd(1 + id)),
            sub::ROOT_JNI_LOCAL | sub::ROOT_JAVA_FRAME | sub::ROOT_THREAD_OBJECT | sub::ROOT_JNI_MONITOR => {
                r.thread_serial = Some(be32(&b[1 + id..]));
                r.frame = Some(be32(&b[5 + id..]));
            }
            sub::ROOT_NATIVE_STACK | sub::ROOT_THREAD_BLOCK => r.thread_serial = Some(be32(&b[1 + id..])),
            _ => {}
        }
        return SubRecord::Root(r);
    }
    match t {
        sub::HEAP_DUMP_INFO => SubRecord::HeapDumpInfo { heap_id: be32(&b[1..]), name_id: rd(5) },
        sub::CLASS_DUMP => {
            let l = match class_dump_layout(b, id_size) {
                Ok(Ok(l)) => l,
                _ => unreachable!("measured before parsing"),
            };
            SubRecord::Class(ClassDump {
                id: rd(1),
                trace_serial: be32(&b[1 + id..]),
                super_id: rd(5 + id),
                loader_id: rd(5 + 2 * id),
                signers_id: rd(5 + 3 * id),
                protection_domain_id: rd(5 + 4 * id),
                instance_size: be32(&b[5 + 7 * id..]),
                constant_count: l.counts[0],
                static_count: l.counts[1],
                field_count: l.counts[2],
                id_size,
                constants: &b[l.constants + 2..l.statics],
                statics: &b[l.statics + 2..l.fields],
                fields: &b[l.fields + 2..l.end],
            })
        }
        sub::INSTANCE_DUMP => {
            let n = be32(&b[5 + 2 * id..]) as usize;
            let at = 9 + 2 * id;
            SubRecord::Instance(InstanceDump {
                id: rd(1),
                trace_serial: be32(&b[1 + id..]),
                class_id: rd(5 + id),
                data: &b[at..at + n],
            })
        }
        sub::OBJECT_ARRAY_DUMP => {
            let len = be32(&b[5 + id..]);
            let at = 9 + 2 * id;
            SubRecord::ObjectArray(ObjectArrayDump {
                id: rd(1),
                trace_serial: be32(&b[1 + id..]),
                len,
                class_id: rd(9 + id),
                elements: &b[at..at + len as usize * id],
                id_size,
            })
        }
        _ => {
            // PRIMITIVE_ARRAY_DUMP and PRIMITIVE_ARRAY_NODATA_DUMP.
            let len = be32(&b[5 + id..]);
            let ty = BasicType::from_code(b[9 + id]).expect("measured before parsing");
            let no_data = t == sub::PRIMITIVE_ARRAY_NODATA;
            let at = 10 + id;
            let data = if no_data || !payload_here {
                None
            } else {
                Some(&b[at..at + len as usize * usize::from(ty.size(id_size))])
            };
            SubRecord::PrimitiveArray(PrimitiveArrayDump {
                id: rd(1),
                trace_serial: be32(&b[1 + id..]),
                len,
                ty,
                data,
                no_data,
            })
        }
    }
}

/// Where the stream is inside the current top-level record.
#[derive(Clone, Copy, Debug)]
struct Current {
    header: RecordHeader,
    /// Body bytes not consumed yet.
    left: u64,
    /// Elements of a large primitive array not consumed yet (counted in `left` too).
    pending: u64,
}

/// A streaming hprof reader over any [`Read`]: header, records, sub-records (see the module
/// documentation).
pub struct HprofStream<R> {
    r: R,
    name: String,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    header: FileHeader,
    cur: Option<Current>,
}

impl<R> std::fmt::Debug for HprofStream<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HprofStream").field("name", &self.name).field("offset", &(self.base + self.pos as u64)).finish()
    }
}

const CHUNK: usize = 1 << 20;

impl<R: Read> HprofStream<R> {
    /// Reads the file header. `name` names the input in messages.
    pub fn new(r: R, name: &str) -> Result<Self> {
        let mut s = HprofStream {
            r,
            name: name.to_owned(),
            buf: vec![0; 64 << 10],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            header: FileHeader { format: String::new(), id_size: 0, timestamp_ms: 0, len: 0 },
            cur: None,
        };
        s.header = s.read_header()?;
        Ok(s)
    }

    fn read_header(&mut self) -> Result<FileHeader> {
        let name = self.name.clone();
        self.fill(MAX_FORMAT_LEN + 13).map_err(|e| Error::io(format!("reading {name}"), e))?;
        let avail = &self.buf[..self.end];
        if avail.is_empty() {
            return Err(Error::new(ErrorKind::Truncated, format!("{name}: empty file, not an HPROF heap dump")));
        }
        let Some(nul) = avail.iter().take(MAX_FORMAT_LEN + 1).position(|&b| b == 0) else {
            let shown = String::from_utf8_lossy(&avail[..avail.len().min(24)]).into_owned();
            let prefix = b"JAVA PROFILE ".starts_with(avail) || avail.starts_with(b"JAVA PROFILE ");
            return Err(if prefix && avail.len() <= MAX_FORMAT_LEN {
                Error::new(ErrorKind::Truncated, format!("{name}: HPROF header string {shown:?} ends without its NUL"))
            } else {
                Error::new(ErrorKind::Malformed, format!("{name}: not an HPROF heap dump (it starts {shown:?})"))
            });
        };
        let format = String::from_utf8_lossy(&avail[..nul]).into_owned();
        if !format.starts_with("JAVA PROFILE ") {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!("{name}: not an HPROF heap dump (it starts {format:?})"),
            ));
        }
        if !matches!(
            format.as_str(),
            "JAVA PROFILE 1.0" | "JAVA PROFILE 1.0.1" | "JAVA PROFILE 1.0.2" | "JAVA PROFILE 1.0.3"
        ) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("{name}: HPROF format {format:?} is not one heapconv reads (1.0.1, 1.0.2, 1.0.3)"),
            ));
        }
        let at = nul + 1;
        if avail.len() < at + 12 {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!(
                    "{name}: HPROF header ends at byte {}: the identifier size and timestamp need 12 bytes from byte {at}",
                    avail.len()
                ),
            ));
        }
        let id_size = be32(&avail[at..]);
        if id_size != 4 && id_size != 8 {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("{name}: identifier size {id_size} at byte {at}: heapconv reads identifiers of 4 and 8 bytes"),
            ));
        }
        let timestamp_ms = u64::from_be_bytes(avail[at + 4..at + 12].try_into().expect("8 bytes"));
        self.pos = at + 12;
        Ok(FileHeader { format, id_size: id_size as u8, timestamp_ms, len: (at + 12) as u64 })
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The name given to [`HprofStream::new`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Byte offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The record the stream is in, if any.
    pub fn current(&self) -> Option<RecordHeader> {
        self.cur.map(|c| c.header)
    }

    /// Bytes of the current record's body not consumed yet.
    pub fn record_left(&self) -> u64 {
        self.cur.map(|c| c.left).unwrap_or(0)
    }

    /// Makes at least `n` unread bytes available in `buf[pos..end]`; false if the input ends
    /// first. The buffer grows only while it is full of bytes that arrived.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        if self.end - self.pos >= n {
            return Ok(true);
        }
        if self.pos > 0 && (self.buf.len() - self.pos < n || self.end == self.buf.len()) {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        while self.end - self.pos < n {
            if self.eof {
                return Ok(false);
            }
            if self.end == self.buf.len() {
                let want = (self.buf.len() * 2).clamp(CHUNK, self.buf.len() + (64 << 20));
                self.buf.resize(want, 0);
            }
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Consumes up to `n` bytes, handing each piece to `sink`; returns how many there were.
    fn pass<F: FnMut(&[u8]) -> io::Result<()>>(&mut self, mut n: u64, mut sink: F) -> io::Result<u64> {
        let mut done = 0u64;
        while n > 0 {
            if self.pos == self.end {
                self.base += self.end as u64;
                self.pos = 0;
                self.end = 0;
                if self.eof {
                    break;
                }
                match self.r.read(&mut self.buf[..]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(k) => self.end = k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
            let k = ((self.end - self.pos) as u64).min(n) as usize;
            sink(&self.buf[self.pos..self.pos + k])?;
            self.pos += k;
            n -= k as u64;
            done += k as u64;
        }
        Ok(done)
    }

    fn io_err(&self, e: io::Error) -> Error {
        Error::io(format!("reading {} at byte {}", self.name, self.offset()), e)
    }

    fn truncated(&self, what: &str, need_until: u64) -> Error {
        Error::new(
            ErrorKind::Truncated,
            format!(
                "{}: the file ends at byte {}, inside {what}, which needs bytes up to {need_until}",
                self.name,
                self.base + self.end as u64
            ),
        )
    }

    /// Consumes what is left of the current record (failing if the file ends first).
    fn finish_record(&mut self) -> Result<()> {
        if let Some(c) = self.cur.take() {
            if c.left > 0 {
                let got = self.pass(c.left, |_| Ok(())).map_err(|e| self.io_err(e))?;
                if got < c.left {
                    let end = c.header.offset + 9 + u64::from(c.header.length);
                    return Err(self.truncated(&c.header.describe(), end));
                }
            }
        }
        Ok(())
    }

    /// Moves to the next top-level record, skipping the rest of the current one; `None` at
    /// the end of the file.
    pub fn next_record(&mut self) -> Result<Option<RecordHeader>> {
        self.finish_record()?;
        if !self.fill(1).map_err(|e| self.io_err(e))? {
            return Ok(None);
        }
        let offset = self.offset();
        if !self.fill(9).map_err(|e| self.io_err(e))? {
            let t = self.buf[self.pos];
            return Err(Error::new(
                ErrorKind::Truncated,
                format!(
                    "{}: the file ends at byte {} inside the 9-byte header of record 0x{t:02X} {} at byte {offset}",
                    self.name,
                    self.base + self.end as u64,
                    record_name(t)
                ),
            ));
        }
        let b = &self.buf[self.pos..self.pos + 9];
        let header = RecordHeader { tag: b[0], time: be32(&b[1..]), length: be32(&b[5..]), offset };
        self.pos += 9;
        self.cur = Some(Current { header, left: u64::from(header.length), pending: 0 });
        Ok(Some(header))
    }

    /// The whole body of the current record (call it right after [`HprofStream::next_record`];
    /// later, what is left of it).
    pub fn body(&mut self) -> Result<&[u8]> {
        let Some(c) = self.cur else { return Ok(&[]) };
        let n = usize::try_from(c.left).unwrap_or(usize::MAX);
        if !self.fill(n).map_err(|e| self.io_err(e))? {
            let end = c.header.offset + 9 + u64::from(c.header.length);
            return Err(self.truncated(&c.header.describe(), end));
        }
        let at = self.pos;
        self.pos += n;
        self.cur = Some(Current { left: 0, ..c });
        Ok(&self.buf[at..at + n])
    }

    /// Copies what is left of the current record's body to `w` without buffering it whole.
    pub fn copy_body<W: Write + ?Sized>(&mut self, w: &mut W) -> Result<()> {
        let Some(c) = self.cur else { return Ok(()) };
        let mut werr = None;
        let got = self
            .pass(c.left, |b| w.write_all(b).inspect_err(|e| werr = Some(io::Error::new(e.kind(), e.to_string()))))
            .map_err(|e| self.io_err(e));
        if let Some(e) = werr {
            return Err(Error::io("writing the output", e));
        }
        let got = got?;
        self.cur = Some(Current { left: c.left - got, pending: 0, ..c });
        if got < c.left {
            let end = c.header.offset + 9 + u64::from(c.header.length);
            return Err(self.truncated(&c.header.describe(), end));
        }
        Ok(())
    }

    /// Copies the elements of the large primitive array [`HprofStream::next_sub`] just returned
    /// with `data: None` to `w`. Without this call, the next `next_sub` skips them.
    pub fn copy_payload<W: Write + ?Sized>(&mut self, w: &mut W) -> Result<()> {
        let Some(c) = self.cur else { return Ok(()) };
        if c.pending == 0 {
            return Ok(());
        }
        let mut werr = None;
        let got = self
            .pass(c.pending, |b| w.write_all(b).inspect_err(|e| werr = Some(io::Error::new(e.kind(), e.to_string()))))
            .map_err(|e| self.io_err(e));
        if let Some(e) = werr {
            return Err(Error::io("writing the output", e));
        }
        let got = got?;
        self.cur = Some(Current { left: c.left - got, pending: c.pending - got, ..c });
        if got < c.pending {
            let end = self.offset() + (c.pending - got);
            return Err(self.truncated(&format!("the elements of a primitive array in {}", c.header.describe()), end));
        }
        Ok(())
    }

    /// The next sub-record of the current `HEAP_DUMP` or `HEAP_DUMP_SEGMENT` record; `None` at
    /// the end of its body (or when the current record is not a heap dump).
    pub fn next_sub(&mut self) -> Result<Option<Sub<'_>>> {
        let Some(c) = self.cur else { return Ok(None) };
        if !c.header.is_heap_dump() {
            return Ok(None);
        }
        if c.pending > 0 {
            let got = self.pass(c.pending, |_| Ok(())).map_err(|e| self.io_err(e))?;
            self.cur = Some(Current { left: c.left - got, pending: c.pending - got, ..c });
            if got < c.pending {
                let end = self.offset() + (c.pending - got);
                return Err(
                    self.truncated(&format!("the elements of a primitive array in {}", c.header.describe()), end)
                );
            }
        }
        let c = self.cur.expect("in a record");
        if c.left == 0 {
            return Ok(None);
        }
        let id_size = self.header.id_size;
        let offset = self.offset();
        let rec_end = offset + c.left;
        let within = || format!("{} (whose body ends at byte {rec_end})", c.header.describe());
        let of_record = || format!("of {}", c.header.describe());
        let (header, payload) = loop {
            match sub_len(&self.buf[self.pos..self.end], id_size) {
                Ok(SubLen::Known { header, payload }) => break (header, payload),
                Ok(SubLen::Need(n)) => {
                    let t = (self.pos < self.end).then(|| self.buf[self.pos]);
                    if n > c.left {
                        return Err(self.overrun(t.unwrap_or(0), offset, n, &within()));
                    }
                    if !self.fill(n as usize).map_err(|e| self.io_err(e))? {
                        let what = match (self.pos < self.end).then(|| self.buf[self.pos]) {
                            Some(t) => {
                                format!("sub-record 0x{t:02X} {} at byte {offset} {}", sub_record_name(t), of_record())
                            }
                            None => c.header.describe(),
                        };
                        return Err(self.truncated(&what, if t.is_some() { offset + n } else { rec_end }));
                    }
                }
                Err(SubLenError::UnknownTag(t)) => {
                    return Err(Error::new(
                        ErrorKind::Malformed,
                        format!(
                            "{}: unknown heap-dump sub-record tag 0x{t:02X} at byte {offset} in {}",
                            self.name,
                            within()
                        ),
                    ));
                }
                Err(SubLenError::BadType { code, at }) => {
                    let t = self.buf[self.pos];
                    return Err(Error::new(
                        ErrorKind::Malformed,
                        format!(
                            "{}: sub-record 0x{t:02X} {} at byte {offset} in {}: {code} at byte {} is not an hprof basic type",
                            self.name,
                            sub_record_name(t),
                            within(),
                            offset + at
                        ),
                    ));
                }
            }
        };
        let t = self.buf[self.pos];
        let total = 1 + header + payload;
        if total > c.left {
            return Err(self.overrun(t, offset, total, &within()));
        }
        let stream = payload > STREAM_PAYLOAD && t == sub::PRIMITIVE_ARRAY_DUMP;
        let here = if stream { 1 + header } else { total };
        if !self.fill(here as usize).map_err(|e| self.io_err(e))? {
            return Err(self.truncated(
                &format!("sub-record 0x{t:02X} {} at byte {offset} {}", sub_record_name(t), of_record()),
                offset + total,
            ));
        }
        let at = self.pos;
        self.pos += here as usize;
        self.cur = Some(Current { left: c.left - here, pending: if stream { payload } else { 0 }, ..c });
        let raw = &self.buf[at..at + here as usize];
        let record = parse_sub(raw, id_size, !stream);
        Ok(Some(Sub { tag: t, offset, len: total, raw, record }))
    }

    fn overrun(&self, t: u8, offset: u64, n: u64, within: &str) -> Error {
        Error::new(
            ErrorKind::Malformed,
            format!(
                "{}: sub-record 0x{t:02X} {} at byte {offset} needs {n} bytes, past the end of {within}",
                self.name,
                sub_record_name(t)
            ),
        )
    }
}

/// Decodes Java's modified UTF-8 (`C0 80` for NUL, supplementary characters as two 3-byte
/// surrogates), lossily: what is not valid becomes U+FFFD.
pub fn decode_mutf8(b: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(b) {
        // Valid UTF-8 cannot hold C0 80 or encoded surrogates, so it means the same.
        return s.to_owned();
    }
    let mut units: Vec<u16> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let cont = |k: usize| b.get(i + k).copied().filter(|x| x & 0xC0 == 0x80).map(|x| u16::from(x & 0x3F));
        if c < 0x80 {
            units.push(u16::from(c));
            i += 1;
        } else if c & 0xE0 == 0xC0 {
            match cont(1) {
                Some(x) => {
                    units.push((u16::from(c & 0x1F) << 6) | x);
                    i += 2;
                }
                None => {
                    units.push(0xFFFD);
                    i += 1;
                }
            }
        } else if c & 0xF0 == 0xE0 {
            match (cont(1), cont(2)) {
                (Some(x), Some(y)) => {
                    units.push((u16::from(c & 0x0F) << 12) | (x << 6) | y);
                    i += 3;
                }
                _ => {
                    units.push(0xFFFD);
                    i += 1;
                }
            }
        } else if c & 0xF8 == 0xF0 {
            // Standard 4-byte UTF-8 (not modified UTF-8, but some writers use it).
            match (cont(1), cont(2), cont(3)) {
                (Some(x), Some(y), Some(z)) => {
                    let cp = (u32::from(c & 0x07) << 18) | (u32::from(x) << 12) | (u32::from(y) << 6) | u32::from(z);
                    let mut tmp = [0u16; 2];
                    match char::from_u32(cp) {
                        Some(ch) => units.extend_from_slice(ch.encode_utf16(&mut tmp)),
                        None => units.push(0xFFFD),
                    }
                    i += 4;
                }
                _ => {
                    units.push(0xFFFD);
                    i += 1;
                }
            }
        } else {
            units.push(0xFFFD);
            i += 1;
        }
    }
    String::from_utf16_lossy(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_utf8() {
        assert_eq!(decode_mutf8(b"plain"), "plain");
        assert_eq!(decode_mutf8(&[b'a', 0xC0, 0x80, b'b']), "a\0b");
        // U+1F600 as a CESU-8 surrogate pair.
        assert_eq!(decode_mutf8(&[0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]), "\u{1F600}");
        assert_eq!(decode_mutf8(&[0xFF, b'x']), "\u{FFFD}x");
        assert_eq!(decode_mutf8(&[0xED, 0xA0, 0xBD]), "\u{FFFD}");
    }

    #[test]
    fn sub_lengths() {
        assert_eq!(sub_len(&[sub::ROOT_UNKNOWN], 4), Ok(SubLen::Known { header: 4, payload: 0 }));
        assert_eq!(sub_len(&[sub::ROOT_JNI_MONITOR], 8), Ok(SubLen::Known { header: 16, payload: 0 }));
        assert_eq!(sub_len(&[sub::INSTANCE_DUMP, 0, 0], 4), Ok(SubLen::Need(17)));
        let mut inst = vec![sub::INSTANCE_DUMP];
        inst.extend_from_slice(&[0; 12]);
        inst.extend_from_slice(&7u32.to_be_bytes());
        assert_eq!(sub_len(&inst, 4), Ok(SubLen::Known { header: 16, payload: 7 }));
        let mut arr = vec![sub::PRIMITIVE_ARRAY_NODATA];
        arr.extend_from_slice(&[0; 4]);
        arr.extend_from_slice(&[0; 4]);
        arr.extend_from_slice(&u32::MAX.to_be_bytes());
        arr.push(11);
        assert_eq!(sub_len(&arr, 4), Ok(SubLen::Known { header: 13, payload: 0 }));
        arr[0] = sub::PRIMITIVE_ARRAY_DUMP;
        assert_eq!(sub_len(&arr, 4), Ok(SubLen::Known { header: 13, payload: u64::from(u32::MAX) * 8 }));
        arr[13] = 2;
        assert_eq!(sub_len(&arr, 4), Err(SubLenError::BadType { code: 2, at: 13 }));
        assert_eq!(sub_len(&[0x42], 4), Err(SubLenError::UnknownTag(0x42)));
    }

    #[test]
    fn header_errors_name_what_is_wrong() {
        let e = HprofStream::new(&b"JAVA PROFILE 1.0.2\0\0\0\0\x03"[..], "x.hprof").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Truncated);
        let mut f = b"JAVA PROFILE 1.0.2\0".to_vec();
        f.extend_from_slice(&3u32.to_be_bytes());
        f.extend_from_slice(&[0; 8]);
        let e = HprofStream::new(&f[..], "x.hprof").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.to_string().contains("identifier size 3 at byte 19"), "{e}");
        let e = HprofStream::new(&b"JAVA PROFILE 9.9\0"[..], "x.hprof").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let e = HprofStream::new(&b"hello world"[..], "x.hprof").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Malformed);
    }
}
