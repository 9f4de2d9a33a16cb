//! Record and sub-record tags, their names, and the parsed forms of records and sub-records.

use super::*;

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
    pub(super) id_size: u8,
    pub(super) constants: &'a [u8],
    pub(super) statics: &'a [u8],
    pub(super) fields: &'a [u8],
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
    pub(super) id_size: u8,
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
