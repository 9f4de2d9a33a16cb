//! Builds hprof files byte by byte, for tests, benchmarks and fuzzing seeds.
//!
//! [`HprofWriter`] writes any record and sub-record, well-formed or not (it checks nothing).
//! [`android_sample`] is a small Android dump (`JAVA PROFILE 1.0.3`) with every Android
//! sub-record tag and every standard one, laid out as ART writes (roots first, then segments
//! that each start with a `HEAP_DUMP_INFO`), with its ids returned so tests can check object by
//! object. [`synthetic_heap`] is a large dump of the same shape for benchmarks.
//!
//! Written from the format notes (`ddm-alloc-and-hprof.md` §B); it shares no code with the
//! reader in `decode::hprof`.

use heapconv::model::heap::BasicType;

use crate::rng::Rng;

/// A field or constant value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An object id (0: null).
    Object(u64),
    /// boolean.
    Boolean(bool),
    /// char (a UTF-16 unit).
    Char(u16),
    /// float.
    Float(f32),
    /// double.
    Double(f64),
    /// byte.
    Byte(i8),
    /// short.
    Short(i16),
    /// int.
    Int(i32),
    /// long.
    Long(i64),
}

impl Value {
    /// The value's type.
    pub fn ty(self) -> BasicType {
        match self {
            Value::Object(_) => BasicType::Object,
            Value::Boolean(_) => BasicType::Boolean,
            Value::Char(_) => BasicType::Char,
            Value::Float(_) => BasicType::Float,
            Value::Double(_) => BasicType::Double,
            Value::Byte(_) => BasicType::Byte,
            Value::Short(_) => BasicType::Short,
            Value::Int(_) => BasicType::Int,
            Value::Long(_) => BasicType::Long,
        }
    }

    /// Appends the value's bytes (big-endian; ids of `id_size` bytes).
    pub fn put(self, out: &mut Vec<u8>, id_size: u8) {
        match self {
            Value::Object(id) => put_id(out, id, id_size),
            Value::Boolean(b) => out.push(u8::from(b)),
            Value::Char(c) => out.extend_from_slice(&c.to_be_bytes()),
            Value::Float(f) => out.extend_from_slice(&f.to_bits().to_be_bytes()),
            Value::Double(f) => out.extend_from_slice(&f.to_bits().to_be_bytes()),
            Value::Byte(b) => out.push(b as u8),
            Value::Short(s) => out.extend_from_slice(&s.to_be_bytes()),
            Value::Int(i) => out.extend_from_slice(&i.to_be_bytes()),
            Value::Long(l) => out.extend_from_slice(&l.to_be_bytes()),
        }
    }
}

/// Appends an id of `id_size` bytes.
pub fn put_id(out: &mut Vec<u8>, id: u64, id_size: u8) {
    out.extend_from_slice(&id.to_be_bytes()[8 - usize::from(id_size)..]);
}

/// Field values of an instance, in layout order.
pub fn field_bytes(values: &[Value], id_size: u8) -> Vec<u8> {
    let mut v = Vec::new();
    for x in values {
        x.put(&mut v, id_size);
    }
    v
}

/// Encodes a string as Java's modified UTF-8 (NUL as `C0 80`, supplementary characters as two
/// 3-byte surrogates).
pub fn encode_mutf8(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len());
    for ch in s.chars() {
        match ch as u32 {
            0 => v.extend_from_slice(&[0xC0, 0x80]),
            0x1..=0xFFFF => {
                let mut b = [0u8; 4];
                v.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
            }
            _ => {
                let mut units = [0u16; 2];
                for &u in ch.encode_utf16(&mut units).iter() {
                    v.push(0xE0 | (u >> 12) as u8);
                    v.push(0x80 | ((u >> 6) & 0x3F) as u8);
                    v.push(0x80 | (u & 0x3F) as u8);
                }
            }
        }
    }
    v
}

/// A `CLASS_DUMP`.
#[derive(Clone, Debug, Default)]
pub struct ClassSpec {
    /// Class object id.
    pub id: u64,
    /// Stack-trace serial.
    pub trace: u32,
    /// Superclass id (0: none).
    pub super_id: u64,
    /// Class loader id.
    pub loader_id: u64,
    /// Instance size.
    pub instance_size: u32,
    /// Constant pool: (index, value).
    pub constants: Vec<(u16, Value)>,
    /// Static fields: (name string id, value).
    pub statics: Vec<(u64, Value)>,
    /// Instance fields: (name string id, type).
    pub fields: Vec<(u64, BasicType)>,
}

/// Writes an hprof file into memory.
#[derive(Debug)]
pub struct HprofWriter {
    buf: Vec<u8>,
    id_size: u8,
    /// Offset of the open heap-dump record's header.
    open: Option<usize>,
}

impl HprofWriter {
    /// A file with this header.
    pub fn new(format: &str, id_size: u8, timestamp_ms: u64) -> Self {
        let mut buf = format.as_bytes().to_vec();
        buf.push(0);
        buf.extend_from_slice(&u32::from(id_size).to_be_bytes());
        buf.extend_from_slice(&timestamp_ms.to_be_bytes());
        HprofWriter { buf, id_size, open: None }
    }

    /// The identifier size.
    pub fn id_size(&self) -> u8 {
        self.id_size
    }

    /// Bytes written so far (an open heap-dump record still has length 0).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True before anything but the header is written (never, in practice).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Closes an open heap-dump record and returns the file.
    pub fn finish(mut self) -> Vec<u8> {
        self.end_heap_dump();
        self.buf
    }

    fn id(&mut self, id: u64) {
        put_id(&mut self.buf, id, self.id_size);
    }

    fn u4(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// A top-level record with this body (closes an open heap-dump record first).
    pub fn record(&mut self, tag: u8, time: u32, body: &[u8]) {
        self.end_heap_dump();
        self.buf.push(tag);
        self.u4(time);
        self.u4(body.len() as u32);
        self.buf.extend_from_slice(body);
    }

    /// A `STRING` record (modified UTF-8).
    pub fn string(&mut self, id: u64, s: &str) {
        self.string_bytes(id, &encode_mutf8(s));
    }

    /// A `STRING` record with these bytes.
    pub fn string_bytes(&mut self, id: u64, bytes: &[u8]) {
        let mut b = Vec::new();
        put_id(&mut b, id, self.id_size);
        b.extend_from_slice(bytes);
        self.record(0x01, 0, &b);
    }

    /// A `LOAD_CLASS` record.
    pub fn load_class(&mut self, serial: u32, class_id: u64, trace: u32, name_id: u64) {
        let mut b = serial.to_be_bytes().to_vec();
        put_id(&mut b, class_id, self.id_size);
        b.extend_from_slice(&trace.to_be_bytes());
        put_id(&mut b, name_id, self.id_size);
        self.record(0x02, 0, &b);
    }

    /// A `STACK_FRAME` record.
    pub fn stack_frame(&mut self, frame: u64, method: u64, signature: u64, file: u64, class_serial: u32, line: i32) {
        let mut b = Vec::new();
        for id in [frame, method, signature, file] {
            put_id(&mut b, id, self.id_size);
        }
        b.extend_from_slice(&class_serial.to_be_bytes());
        b.extend_from_slice(&line.to_be_bytes());
        self.record(0x04, 0, &b);
    }

    /// A `STACK_TRACE` record.
    pub fn stack_trace(&mut self, serial: u32, thread: u32, frames: &[u64]) {
        let mut b = serial.to_be_bytes().to_vec();
        b.extend_from_slice(&thread.to_be_bytes());
        b.extend_from_slice(&(frames.len() as u32).to_be_bytes());
        for &f in frames {
            put_id(&mut b, f, self.id_size);
        }
        self.record(0x05, 0, &b);
    }

    /// Opens a heap-dump record (`0x0C` HEAP_DUMP or `0x1C` HEAP_DUMP_SEGMENT); sub-records
    /// follow until the next record or [`HprofWriter::end_heap_dump`].
    pub fn begin_heap_dump(&mut self, tag: u8) {
        self.end_heap_dump();
        self.open = Some(self.buf.len());
        self.buf.push(tag);
        self.u4(0);
        self.u4(0);
    }

    /// Closes the open heap-dump record, writing its length.
    pub fn end_heap_dump(&mut self) {
        if let Some(at) = self.open.take() {
            let len = (self.buf.len() - at - 9) as u32;
            self.buf[at + 5..at + 9].copy_from_slice(&len.to_be_bytes());
        }
    }

    /// Sets the time field (microseconds after the header's time) of the open heap-dump
    /// record.
    pub fn set_open_time(&mut self, time: u32) {
        if let Some(at) = self.open {
            self.buf[at + 1..at + 5].copy_from_slice(&time.to_be_bytes());
        }
    }

    /// Bytes of the open heap-dump record's body so far.
    pub fn heap_dump_len(&self) -> usize {
        self.open.map(|at| self.buf.len() - at - 9).unwrap_or(0)
    }

    /// A `HEAP_DUMP_END` record.
    pub fn heap_dump_end(&mut self) {
        self.record(0x2C, 0, &[]);
    }

    /// Raw sub-record bytes.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// A root with only an id: 0xFF, 0x05, 0x07, 0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x90.
    pub fn root(&mut self, tag: u8, id: u64) {
        self.buf.push(tag);
        self.id(id);
    }

    /// `ROOT_JNI_GLOBAL`.
    pub fn root_jni_global(&mut self, id: u64, jni_ref: u64) {
        self.buf.push(0x01);
        self.id(id);
        self.id(jni_ref);
    }

    /// A root with an id and two u4 (thread serial, then frame number / stack-trace serial /
    /// stack depth): 0x02 JNI local, 0x03 Java frame, 0x08 thread object, 0x8E JNI monitor.
    pub fn root_thread_frame(&mut self, tag: u8, id: u64, thread: u32, frame: u32) {
        self.buf.push(tag);
        self.id(id);
        self.u4(thread);
        self.u4(frame);
    }

    /// A root with an id and a thread serial: 0x04 native stack, 0x06 thread block.
    pub fn root_thread(&mut self, tag: u8, id: u64, thread: u32) {
        self.buf.push(tag);
        self.id(id);
        self.u4(thread);
    }

    /// `HEAP_DUMP_INFO`.
    pub fn heap_dump_info(&mut self, heap_id: u32, name_id: u64) {
        self.buf.push(0xFE);
        self.u4(heap_id);
        self.id(name_id);
    }

    /// `CLASS_DUMP`.
    pub fn class_dump(&mut self, c: &ClassSpec) {
        self.buf.push(0x20);
        self.id(c.id);
        self.u4(c.trace);
        self.id(c.super_id);
        self.id(c.loader_id);
        for _ in 0..4 {
            self.id(0); // signers, protection domain, two reserved
        }
        self.u4(c.instance_size);
        self.buf.extend_from_slice(&(c.constants.len() as u16).to_be_bytes());
        for &(i, v) in &c.constants {
            self.buf.extend_from_slice(&i.to_be_bytes());
            self.buf.push(v.ty() as u8);
            v.put(&mut self.buf, self.id_size);
        }
        self.buf.extend_from_slice(&(c.statics.len() as u16).to_be_bytes());
        for &(n, v) in &c.statics {
            self.id(n);
            self.buf.push(v.ty() as u8);
            v.put(&mut self.buf, self.id_size);
        }
        self.buf.extend_from_slice(&(c.fields.len() as u16).to_be_bytes());
        for &(n, ty) in &c.fields {
            self.id(n);
            self.buf.push(ty as u8);
        }
    }

    /// `INSTANCE_DUMP` with these field bytes.
    pub fn instance(&mut self, id: u64, trace: u32, class_id: u64, data: &[u8]) {
        self.buf.push(0x21);
        self.id(id);
        self.u4(trace);
        self.id(class_id);
        self.u4(data.len() as u32);
        self.buf.extend_from_slice(data);
    }

    /// `OBJECT_ARRAY_DUMP`.
    pub fn object_array(&mut self, id: u64, trace: u32, class_id: u64, elements: &[u64]) {
        self.buf.push(0x22);
        self.id(id);
        self.u4(trace);
        self.u4(elements.len() as u32);
        self.id(class_id);
        for &e in elements {
            self.id(e);
        }
    }

    /// `PRIMITIVE_ARRAY_DUMP` of `len` elements of `ty` whose bytes are `data`.
    pub fn primitive_array(&mut self, id: u64, trace: u32, ty: BasicType, len: u32, data: &[u8]) {
        self.buf.push(0x23);
        self.id(id);
        self.u4(trace);
        self.u4(len);
        self.buf.push(ty as u8);
        self.buf.extend_from_slice(data);
    }

    /// Android `PRIMITIVE_ARRAY_NODATA_DUMP` (0xC3).
    pub fn primitive_array_nodata(&mut self, id: u64, trace: u32, ty: BasicType, len: u32) {
        self.buf.push(0xC3);
        self.id(id);
        self.u4(trace);
        self.u4(len);
        self.buf.push(ty as u8);
    }
}

/// Heap ids as ART writes them.
pub mod heap_id {
    /// `'A'`: the app heap.
    pub const APP: u32 = 0x41;
    /// `'Z'`: the zygote heap.
    pub const ZYGOTE: u32 = 0x5A;
    /// `'I'`: the boot image heap.
    pub const IMAGE: u32 = 0x49;
}

/// The ids [`android_sample`] used, for tests to look objects up by.
#[derive(Clone, Debug, Default)]
pub struct SampleIds {
    /// Class `java.lang.Object`.
    pub object_class: u64,
    /// Class `java.lang.Class`.
    pub class_class: u64,
    /// Class `java.lang.String` (fields `count`, `hash`, then ART's extra `value`).
    pub string_class: u64,
    /// Class `java.lang.ref.Reference` (fields `referent`, `queue`).
    pub reference_class: u64,
    /// Class `java.lang.ref.WeakReference`.
    pub weak_class: u64,
    /// Class `java.lang.ref.FinalizerReference`.
    pub finalizer_class: u64,
    /// Class `com.example.Node` (fields `next`, `value`, `label`; statics `sInstance` = node1,
    /// `sCount` (int), `sBig` (long), and [`SampleIds::weird_name`] = the WeakReference).
    pub node_class: u64,
    /// Class `com.example.Node[]`.
    pub node_array_class: u64,
    /// Class `java.lang.Object[]`.
    pub object_array_class: u64,
    /// Classes `boolean[]` … `long[]` by type code (index = code; 0 where there is none).
    pub prim_classes: [u64; 12],
    /// A String in the image heap and its char[] value.
    pub image_string: u64,
    /// Its `value` array.
    pub image_chars: u64,
    /// An Object[] in the zygote heap holding `image_string` and `node1`.
    pub zygote_array: u64,
    /// A byte[] of 6 elements in the zygote heap.
    pub zygote_bytes: u64,
    /// Nodes in the app heap: node1 -> node2 -> node3 -> null; node1 comes before the
    /// CLASS_DUMP of Node.
    pub nodes: [u64; 3],
    /// A WeakReference whose referent is node3.
    pub weak: u64,
    /// A FinalizerReference whose referent is node2.
    pub finalizer: u64,
    /// A Node[] of [node1, null, node2, a dangling id].
    pub node_array: u64,
    /// The dangling id in it.
    pub dangling: u64,
    /// Primitive arrays in the app heap, one per type code (0 where none).
    pub prims: [u64; 12],
    /// The NODATA int[] of 5 elements (0 when the sample was made without it).
    pub nodata: u64,
    /// An int[] of 3 in a segment with no HEAP_DUMP_INFO (the default heap).
    pub default_ints: u64,
    /// A Node in the zygote heap (in a record that switches to the app heap after it).
    pub zygote_node: u64,
    /// A Node in the app heap after it.
    pub late_node: u64,
    /// The name of Node's static field that needs modified UTF-8.
    pub weird_name: &'static str,
}

/// A small Android heap dump (`JAVA PROFILE 1.0.3`, identifiers of `id_size` bytes) with
/// every sub-record tag, Android's included (`PRIMITIVE_ARRAY_NODATA_DUMP` only with
/// `nodata`), an unknown top-level record and a `HEAP_SUMMARY`, and the ids it used.
///
/// Records: 1 STRING per name; LOAD_CLASS per class; STACK_FRAME + STACK_TRACE (serial 1,
/// one frame) and ART's empty STACK_TRACE 0; HEAP_SUMMARY; an unknown record 0x42; then
/// HEAP_DUMP_SEGMENTs: (1) every root kind; (2) heap 'I': Object, Class, String and the
/// primitive-array classes, an image String with its char[] value; (3) heap 'Z': the
/// Reference classes, Object[] class, a zygote Object[] and byte[]; (4) heap 'A': node1 before
/// Node's CLASS_DUMP, Node (statics, constant pool), node2, node3, a WeakReference, a
/// FinalizerReference, a Node[] and one primitive array per type (and the NODATA int[]);
/// (5) no HEAP_DUMP_INFO: an int[] in the default heap; (6) 'Z' then 'A' in one record;
/// then a HEAP_DUMP (0x0C) with one root, and HEAP_DUMP_END.
pub fn android_sample(id_size: u8, nodata: bool) -> (Vec<u8>, SampleIds) {
    let base: u64 = if id_size == 8 { 0x7_0000_0000 } else { 0x1200_0000 };
    let o = |n: u64| base + n * 16;
    let mut ids = SampleIds {
        object_class: o(1),
        class_class: o(2),
        string_class: o(3),
        reference_class: o(4),
        weak_class: o(5),
        finalizer_class: o(6),
        node_class: o(7),
        node_array_class: o(8),
        object_array_class: o(9),
        weird_name: "we\u{0}ird\u{1F600}",
        ..Default::default()
    };
    let prim_types = [
        BasicType::Boolean,
        BasicType::Char,
        BasicType::Float,
        BasicType::Double,
        BasicType::Byte,
        BasicType::Short,
        BasicType::Int,
        BasicType::Long,
    ];
    for (i, ty) in prim_types.iter().enumerate() {
        ids.prim_classes[*ty as usize] = o(10 + i as u64);
        ids.prims[*ty as usize] = o(300 + i as u64);
    }
    ids.image_string = o(100);
    ids.image_chars = o(101);
    ids.zygote_array = o(200);
    ids.zygote_bytes = o(201);
    ids.nodes = [o(400), o(401), o(402)];
    ids.weak = o(403);
    ids.finalizer = o(404);
    ids.node_array = o(405);
    ids.dangling = o(999);
    ids.nodata = if nodata { o(406) } else { 0 };
    ids.default_ints = o(500);
    ids.zygote_node = o(600);
    ids.late_node = o(601);

    let mut w = HprofWriter::new("JAVA PROFILE 1.0.3", id_size, 1_700_000_000_123);
    // Strings, from ART's first string id.
    let mut next_sid = 0x40_0000u64;
    let mut sid = |w: &mut HprofWriter, s: &str| {
        let id = next_sid;
        next_sid += 1;
        w.string(id, s);
        id
    };
    let mut classes: Vec<(u64, u64)> = Vec::new();
    for (id, name) in [
        (ids.object_class, "java.lang.Object"),
        (ids.class_class, "java.lang.Class"),
        (ids.string_class, "java.lang.String"),
        (ids.reference_class, "java.lang.ref.Reference"),
        (ids.weak_class, "java.lang.ref.WeakReference"),
        (ids.finalizer_class, "java.lang.ref.FinalizerReference"),
        (ids.node_class, "com.example.Node"),
        (ids.node_array_class, "com.example.Node[]"),
        (ids.object_array_class, "java.lang.Object[]"),
    ] {
        let s = sid(&mut w, name);
        classes.push((id, s));
    }
    for ty in prim_types {
        let s = sid(&mut w, &format!("{}[]", ty.java_name()));
        classes.push((ids.prim_classes[ty as usize], s));
    }
    let [f_count, f_hash, f_value, f_referent, f_queue, f_next, f_label, f_instance, f_scount, f_big, f_weird] =
        ["count", "hash", "value", "referent", "queue", "next", "label", "sInstance", "sCount", "sBig", ids.weird_name]
            .map(|n| sid(&mut w, n));
    let [h_app, h_zygote, h_image] = ["app", "zygote", "image"].map(|n| sid(&mut w, n));
    let [m_run, m_sig, m_file] = ["run", "()V", "Node.java"].map(|n| sid(&mut w, n));
    for (serial, &(id, s)) in classes.iter().enumerate() {
        w.load_class(serial as u32 + 1, id, 0, s);
    }
    w.stack_trace(0, 0, &[]);
    w.stack_frame(1, m_run, m_sig, m_file, 7, 42);
    w.stack_trace(1, 1, &[1]);
    let mut summary = Vec::new();
    for v in [100u32, 10] {
        summary.extend_from_slice(&v.to_be_bytes());
    }
    for v in [1000u64, 20] {
        summary.extend_from_slice(&v.to_be_bytes());
    }
    w.record(0x07, 0, &summary);
    w.record(0x42, 5, b"unknown record body");

    // (1) Roots, in the default heap.
    w.begin_heap_dump(0x1C);
    w.root(0xFF, ids.nodes[0]);
    w.root_jni_global(ids.nodes[1], 0x5000);
    w.root_thread_frame(0x02, ids.nodes[2], 1, u32::MAX);
    w.root_thread_frame(0x03, ids.weak, 1, u32::MAX);
    w.root_thread(0x04, ids.finalizer, 1);
    w.root(0x05, ids.node_class);
    w.root_thread(0x06, ids.node_array, 1);
    w.root(0x07, ids.image_string);
    w.root_thread_frame(0x08, ids.zygote_array, 1, u32::MAX);
    w.root(0x89, ids.image_string);
    w.root(0x8A, ids.finalizer);
    w.root(0x8B, ids.node_class);
    w.root(0x8C, ids.weak);
    w.root(0x8D, ids.zygote_bytes);
    w.root_thread_frame(0x8E, ids.nodes[0], 1, u32::MAX);
    w.root(0x90, ids.late_node);
    w.root(0x8D, ids.dangling);

    // (2) The image heap.
    w.begin_heap_dump(0x1C);
    w.heap_dump_info(heap_id::IMAGE, h_image);
    w.class_dump(&ClassSpec { id: ids.object_class, instance_size: 8, ..Default::default() });
    w.class_dump(&ClassSpec {
        id: ids.class_class,
        super_id: ids.object_class,
        instance_size: 0,
        ..Default::default()
    });
    w.class_dump(&ClassSpec {
        id: ids.string_class,
        super_id: ids.object_class,
        instance_size: 16,
        fields: vec![(f_count, BasicType::Int), (f_hash, BasicType::Int), (f_value, BasicType::Object)],
        ..Default::default()
    });
    for ty in prim_types {
        w.class_dump(&ClassSpec {
            id: ids.prim_classes[ty as usize],
            super_id: ids.object_class,
            ..Default::default()
        });
    }
    w.instance(
        ids.image_string,
        0,
        ids.string_class,
        &field_bytes(&[Value::Int(2), Value::Int(0x1234), Value::Object(ids.image_chars)], id_size),
    );
    w.primitive_array(ids.image_chars, 0, BasicType::Char, 2, &[0, b'h', 0, b'i']);

    // (3) The zygote heap.
    w.begin_heap_dump(0x1C);
    w.heap_dump_info(heap_id::ZYGOTE, h_zygote);
    w.class_dump(&ClassSpec {
        id: ids.reference_class,
        super_id: ids.object_class,
        instance_size: 16,
        fields: vec![(f_referent, BasicType::Object), (f_queue, BasicType::Object)],
        ..Default::default()
    });
    w.class_dump(&ClassSpec {
        id: ids.weak_class,
        super_id: ids.reference_class,
        instance_size: 16,
        ..Default::default()
    });
    w.class_dump(&ClassSpec {
        id: ids.finalizer_class,
        super_id: ids.reference_class,
        instance_size: 20,
        fields: vec![(f_next, BasicType::Object)],
        ..Default::default()
    });
    w.class_dump(&ClassSpec { id: ids.object_array_class, super_id: ids.object_class, ..Default::default() });
    w.object_array(ids.zygote_array, 0, ids.object_array_class, &[ids.image_string, ids.nodes[0]]);
    w.primitive_array(ids.zygote_bytes, 0, BasicType::Byte, 6, b"zygote");

    // (4) The app heap: node1 comes before Node's CLASS_DUMP.
    w.begin_heap_dump(0x1C);
    w.heap_dump_info(heap_id::APP, h_app);
    let node = |next: u64, value: i32, label: u64| {
        field_bytes(&[Value::Object(next), Value::Int(value), Value::Object(label)], id_size)
    };
    w.instance(ids.nodes[0], 1, ids.node_class, &node(ids.nodes[1], 1, ids.image_string));
    w.class_dump(&ClassSpec {
        id: ids.node_class,
        trace: 1,
        super_id: ids.object_class,
        loader_id: 0,
        instance_size: 20,
        constants: vec![(1, Value::Int(7)), (2, Value::Object(ids.image_string))],
        statics: vec![
            (f_instance, Value::Object(ids.nodes[0])),
            (f_scount, Value::Int(3)),
            (f_big, Value::Long(1 << 40)),
            (f_weird, Value::Object(ids.weak)),
        ],
        fields: vec![(f_next, BasicType::Object), (f_value, BasicType::Int), (f_label, BasicType::Object)],
    });
    w.instance(ids.nodes[1], 1, ids.node_class, &node(ids.nodes[2], 2, 0));
    w.instance(ids.nodes[2], 1, ids.node_class, &node(0, 3, 0));
    w.instance(ids.weak, 0, ids.weak_class, &field_bytes(&[Value::Object(ids.nodes[2]), Value::Object(0)], id_size));
    w.instance(
        ids.finalizer,
        0,
        ids.finalizer_class,
        &field_bytes(&[Value::Object(0), Value::Object(ids.nodes[1]), Value::Object(0)], id_size),
    );
    w.object_array(ids.node_array, 0, ids.node_array_class, &[ids.nodes[0], 0, ids.nodes[1], ids.dangling]);
    w.class_dump(&ClassSpec { id: ids.node_array_class, super_id: ids.object_class, ..Default::default() });
    for (i, ty) in prim_types.iter().enumerate() {
        let n = i as u32 + 1;
        let size = usize::from(ty.size(id_size));
        let data: Vec<u8> = (0..n as usize * size).map(|k| (k * 7 + i) as u8).collect();
        w.primitive_array(ids.prims[*ty as usize], 0, *ty, n, &data);
    }
    if nodata {
        w.primitive_array_nodata(ids.nodata, 3, BasicType::Int, 5);
    }

    // (5) A segment without HEAP_DUMP_INFO: the default heap again.
    w.begin_heap_dump(0x1C);
    w.primitive_array(ids.default_ints, 0, BasicType::Int, 3, &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]);

    // (6) Zygote, then app, in one record.
    w.begin_heap_dump(0x1C);
    w.heap_dump_info(heap_id::ZYGOTE, h_zygote);
    w.instance(ids.zygote_node, 0, ids.node_class, &node(ids.nodes[0], 6, 0));
    w.heap_dump_info(heap_id::APP, h_app);
    w.instance(ids.late_node, 0, ids.node_class, &node(ids.zygote_node, 7, 0));

    // A plain HEAP_DUMP record, then the end.
    w.begin_heap_dump(0x0C);
    w.root(0xFF, ids.late_node);
    w.heap_dump_end();
    (w.finish(), ids)
}

/// Parameters of [`synthetic_heap`].
#[derive(Clone, Debug)]
pub struct SyntheticHeap {
    /// Stop adding objects once the file is this long (it ends a little past it).
    pub target_bytes: usize,
    /// Identifier size, 4 or 8.
    pub id_size: u8,
    /// Android (`1.0.3`, ART's segments of at most 128 objects or 4 KiB, each starting with
    /// a HEAP_DUMP_INFO, the first third of the objects in the zygote heap) or HotSpot-like
    /// (`1.0.2`, segments of about 1 MiB, no heap infos, class dumps first).
    pub android: bool,
    /// Seed.
    pub seed: u64,
}

impl Default for SyntheticHeap {
    fn default() -> Self {
        SyntheticHeap { target_bytes: 1 << 20, id_size: 4, android: true, seed: 1 }
    }
}

/// What [`synthetic_heap`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyntheticHeapSummary {
    /// Classes.
    pub classes: u64,
    /// Instances.
    pub instances: u64,
    /// Object arrays.
    pub object_arrays: u64,
    /// Primitive arrays.
    pub primitive_arrays: u64,
    /// Roots.
    pub roots: u64,
    /// Heap-dump segments.
    pub segments: u64,
}

/// A large deterministic heap dump: 400 classes (1–8 fields each, a third of them object
/// references, some inheriting), instances whose references point at other objects of the
/// dump (or null), object arrays, byte/char/int arrays of up to 2 KiB, and roots; ids are
/// ascending addresses as both ART and HotSpot write them. About 10% of the instances of the
/// Android flavour come before their class's CLASS_DUMP (as in real Dalvik/ART dumps).
pub fn synthetic_heap(p: &SyntheticHeap) -> (Vec<u8>, SyntheticHeapSummary) {
    let mut rng = Rng::seeded(p.seed);
    let mut next = move || rng.next_u64();
    let id = p.id_size;
    let mut sum = SyntheticHeapSummary::default();
    let format = if p.android { "JAVA PROFILE 1.0.3" } else { "JAVA PROFILE 1.0.2" };
    let mut w = HprofWriter::new(format, id, 1_700_000_000_000);
    w.buf.reserve(p.target_bytes + (1 << 20));
    let class_base: u64 = if id == 8 { 0x6_0000_0000 } else { 0x0100_0000 };
    let obj_base: u64 = if id == 8 { 0x7_0000_0000 } else { 0x1200_0000 };
    let mut sid = 0x40_0000u64;
    let object_class = class_base;
    w.string(sid, "java.lang.Object");
    w.load_class(1, object_class, 0, sid);
    sid += 1;
    let field_names: Vec<u64> = (0..16)
        .map(|i| {
            w.string(sid, &format!("field{i}"));
            sid += 1;
            sid - 1
        })
        .collect();
    let [h_app, h_zygote] = ["app", "zygote"].map(|n| {
        w.string(sid, n);
        sid += 1;
        sid - 1
    });
    // Classes: (id, fields, instance size); superclass chains of up to 3.
    struct C {
        spec: ClassSpec,
        all: Vec<BasicType>,
    }
    let types =
        [BasicType::Object, BasicType::Int, BasicType::Long, BasicType::Boolean, BasicType::Object, BasicType::Short];
    let mut cls: Vec<C> = vec![C { spec: ClassSpec { id: object_class, ..Default::default() }, all: Vec::new() }];
    for i in 1..400u64 {
        let cid = class_base + i * 64;
        let name =
            if p.android { format!("com.example.pkg{}.Class{i}", i % 13) } else { format!("com/example/Class{i}") };
        w.string(sid, &name);
        w.load_class(i as u32 + 1, cid, 0, sid);
        sid += 1;
        let parent = if i > 10 && next() % 3 == 0 { (next() % (i - 1) + 1) as usize } else { 0 };
        let nf = 1 + next() % 8;
        let fields: Vec<(u64, BasicType)> =
            (0..nf).map(|k| (field_names[k as usize], types[(next() % types.len() as u64) as usize])).collect();
        let mut all: Vec<BasicType> = fields.iter().map(|f| f.1).collect();
        all.extend_from_slice(&cls[parent].all);
        let size: u32 = all.iter().map(|t| u32::from(t.size(id))).sum::<u32>() + 8;
        let spec = ClassSpec {
            id: cid,
            super_id: cls[parent].spec.id,
            instance_size: size,
            statics: vec![(field_names[0], Value::Object(0))],
            fields,
            ..Default::default()
        };
        cls.push(C { spec, all });
    }
    let byte_array_class = class_base + 400 * 64;
    let object_array_class = class_base + 401 * 64;
    for (k, (cid, name)) in
        [(byte_array_class, "byte[]"), (object_array_class, "java.lang.Object[]")].iter().enumerate()
    {
        w.string(sid, name);
        w.load_class(401 + k as u32, *cid, 0, sid);
        sid += 1;
    }
    sum.classes = cls.len() as u64 + 2;
    w.stack_trace(0, 0, &[]);

    // Objects: ids ascending; references go to ids below the running maximum (earlier or
    // soon-to-come objects).
    let mut obj = obj_base;
    let mut in_seg_objects = 0u32;
    let mut class_dumped = vec![false; cls.len()];
    let mut heap = if p.android { heap_id::ZYGOTE } else { 0 };
    let seg_limit = if p.android { 4096 } else { 1 << 20 };
    let mut ids_so_far = 0u64;
    let start_segment = |w: &mut HprofWriter, heap: u32, sum: &mut SyntheticHeapSummary| {
        w.begin_heap_dump(0x1C);
        sum.segments += 1;
        if heap != 0 {
            w.heap_dump_info(heap, if heap == heap_id::APP { h_app } else { h_zygote });
        }
    };
    // Roots first, as ART and HotSpot write them: the first 64 objects.
    w.begin_heap_dump(0x1C);
    sum.segments += 1;
    for r in 0..64u64 {
        w.root(if r % 2 == 0 { 0x05 } else { 0xFF }, obj_base + r * 24);
        sum.roots += 1;
    }
    if !p.android {
        // HotSpot writes every class first.
        for c in &cls {
            w.class_dump(&c.spec);
        }
        w.class_dump(&ClassSpec { id: byte_array_class, super_id: object_class, ..Default::default() });
        w.class_dump(&ClassSpec { id: object_array_class, super_id: object_class, ..Default::default() });
        class_dumped.iter_mut().for_each(|d| *d = true);
    }
    start_segment(&mut w, heap, &mut sum);
    if p.android {
        w.class_dump(&cls[0].spec);
        class_dumped[0] = true;
        w.class_dump(&ClassSpec { id: byte_array_class, super_id: object_class, ..Default::default() });
        w.class_dump(&ClassSpec { id: object_array_class, super_id: object_class, ..Default::default() });
    }
    let specs: Vec<ClassSpec> = cls.iter().map(|c| c.spec.clone()).collect();
    let mut data = Vec::with_capacity(256);
    while w.len() < p.target_bytes {
        if in_seg_objects >= 128 || w.heap_dump_len() >= seg_limit {
            if p.android && heap == heap_id::ZYGOTE && w.len() > p.target_bytes / 3 {
                heap = heap_id::APP;
            }
            start_segment(&mut w, heap, &mut sum);
            in_seg_objects = 0;
        }
        let roll = next() % 100;
        let target = |r: u64| if r % 5 == 0 { 0 } else { obj_base + (r % (ids_so_far + 64)) * 24 };
        if roll < 85 {
            let ci = 1 + (next() % (cls.len() as u64 - 1)) as usize;
            // Android: a class is dumped near its first instance, sometimes just after it.
            let after = p.android && !class_dumped[ci] && next() % 10 == 0;
            if p.android && !class_dumped[ci] && !after {
                dump_chain(&mut w, &specs, ci, &mut class_dumped);
            }
            data.clear();
            for t in &cls[ci].all {
                match t {
                    BasicType::Object => put_id(&mut data, target(next()), id),
                    t => data.extend(std::iter::repeat_n(0x5A, usize::from(t.size(id)))),
                }
            }
            w.instance(obj, 0, cls[ci].spec.id, &data);
            sum.instances += 1;
            if after {
                dump_chain(&mut w, &specs, ci, &mut class_dumped);
            }
        } else if roll < 92 {
            let n = (next() % 24) as usize;
            let elems: Vec<u64> = (0..n).map(|_| target(next())).collect();
            w.object_array(obj, 0, object_array_class, &elems);
            sum.object_arrays += 1;
        } else {
            let n = (next() % 2048) as u32;
            data.clear();
            data.resize(n as usize, 0x61);
            w.primitive_array(obj, 0, BasicType::Byte, n, &data);
            sum.primitive_arrays += 1;
        }
        obj += 24;
        ids_so_far += 1;
        in_seg_objects += 1;
    }
    w.heap_dump_end();
    (w.finish(), sum)
}

/// Dumps class `ci` and the superclasses not dumped yet, superclasses first.
fn dump_chain(w: &mut HprofWriter, specs: &[ClassSpec], ci: usize, dumped: &mut [bool]) {
    let mut chain = Vec::new();
    let mut c = ci;
    while !dumped[c] {
        chain.push(c);
        match specs.iter().position(|s| s.id == specs[c].super_id) {
            Some(s) => c = s,
            None => break,
        }
    }
    for &c in chain.iter().rev() {
        w.class_dump(&specs[c]);
        dumped[c] = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutf8_encoding() {
        assert_eq!(encode_mutf8("a\0b"), [b'a', 0xC0, 0x80, b'b']);
        assert_eq!(encode_mutf8("\u{1F600}"), [0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]);
        assert_eq!(encode_mutf8("é"), "é".as_bytes());
    }

    #[test]
    fn writer_patches_heap_dump_lengths() {
        let mut w = HprofWriter::new("JAVA PROFILE 1.0.3", 4, 5);
        w.begin_heap_dump(0x1C);
        w.root(0xFF, 0x10);
        w.heap_dump_end();
        let b = w.finish();
        assert_eq!(&b[..19], b"JAVA PROFILE 1.0.3\0");
        assert_eq!(&b[31..40], &[0x1C, 0, 0, 0, 0, 0, 0, 0, 5]);
        assert_eq!(&b[45..], &[0x2C, 0, 0, 0, 0, 0, 0, 0, 0]);
    }
}

/// What [`jvmti_agent_dumps`] wrote in each of its heap dumps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentDump {
    /// Microseconds after the header's time (the record header's time field).
    pub time_us: u32,
    /// `java.lang.String` instances.
    pub strings: u64,
    /// `com.example.Thing` instances.
    pub things: u64,
    /// Objects in all: instances, `char[]`s and the class objects of the dumped classes.
    pub objects: u64,
}

/// A file laid out as the JVMTI hprof agent (`-agentlib:hprof=heap=dump`) writes one where
/// heap dumps were asked for twice: 4-byte ids (the agent's, even on 64-bit JVMs), `STRING` and
/// `LOAD_CLASS` records shared by both dumps, `START_THREAD` and `CONTROL_SETTINGS` records,
/// and two dumps at 2.813 s and 9.649 s that each dump every class again. Without `segmented`:
/// `JAVA PROFILE 1.0.1` and one `HEAP_DUMP` record per dump (JDK 7's agent); with it:
/// `JAVA PROFILE 1.0.2` and `HEAP_DUMP_SEGMENT` + `HEAP_DUMP_END` per dump (JDK 6u31's). The
/// objects of the first dump are still alive, with the same ids, in the second, which adds
/// more. With `duplicate`, the second dump defines one `String` id twice (damage).
pub fn jvmti_agent_dumps(segmented: bool, duplicate: bool) -> (Vec<u8>, Vec<AgentDump>) {
    let format = if segmented { "JAVA PROFILE 1.0.2" } else { "JAVA PROFILE 1.0.1" };
    let mut w = HprofWriter::new(format, 4, 1_367_925_771_204);
    let (object, string, thing, chars) = (0x1000u64, 0x1008u64, 0x1010u64, 0x1018u64);
    let names = [
        (1u64, "java/lang/Object"),
        (2, "java/lang/String"),
        (3, "com/example/Thing"),
        (4, "[C"),
        (5, "value"),
        (6, "count"),
        (7, "next"),
        (8, "label"),
        (9, "main"),
    ];
    for (id, s) in names {
        w.string(id, s);
    }
    for (serial, (class_id, name)) in [(object, 1u64), (string, 2), (thing, 3), (chars, 4)].into_iter().enumerate() {
        w.load_class(serial as u32 + 1, class_id, 0, name);
    }
    // START_THREAD: thread serial, thread object id, stack-trace serial, name, group, parent.
    let mut start = Vec::new();
    start.extend_from_slice(&1u32.to_be_bytes());
    put_id(&mut start, 0x5000, 4);
    start.extend_from_slice(&1u32.to_be_bytes());
    for id in [9u64, 0, 0] {
        put_id(&mut start, id, 4);
    }
    w.record(0x0A, 1_000, &start);
    let mut summaries = Vec::new();
    for (n, (time, strings, things)) in [(2_813_000u32, 3u64, 2u64), (9_649_000, 5, 4)].into_iter().enumerate() {
        if segmented {
            w.begin_heap_dump(0x1C);
        } else {
            w.begin_heap_dump(0x0C);
        }
        w.set_open_time(time);
        for c in [object, string, thing] {
            w.root(0x05, c);
        }
        w.class_dump(&ClassSpec { id: object, ..Default::default() });
        w.class_dump(&ClassSpec {
            id: string,
            super_id: object,
            instance_size: 8,
            fields: vec![(5, BasicType::Object), (6, BasicType::Int)],
            ..Default::default()
        });
        w.class_dump(&ClassSpec {
            id: thing,
            super_id: object,
            instance_size: 8,
            fields: vec![(7, BasicType::Object), (8, BasicType::Object)],
            ..Default::default()
        });
        let mut ids = Vec::new();
        for i in 0..strings {
            let (s, a) = (0x2000 + i * 0x20, 0x2010 + i * 0x20);
            let text: Vec<u8> = format!("s{i}").encode_utf16().flat_map(|u| u.to_be_bytes()).collect();
            w.primitive_array(a, 0, BasicType::Char, text.len() as u32 / 2, &text);
            let data = field_bytes(&[Value::Object(a), Value::Int(text.len() as i32 / 2)], 4);
            w.instance(s, 0, string, &data);
            if duplicate && n == 1 && i == 0 {
                w.instance(s, 0, string, &data);
            }
            ids.push(s);
        }
        for i in 0..things {
            let t = 0x3000 + i * 0x10;
            let next = if i + 1 < things { 0x3000 + (i + 1) * 0x10 } else { 0 };
            let data = field_bytes(&[Value::Object(next), Value::Object(ids[i as usize % ids.len()])], 4);
            w.instance(t, 0, thing, &data);
        }
        w.root_jni_global(0x3000, 0x9000);
        for &s in &ids {
            w.root(0xFF, s);
        }
        if segmented {
            w.heap_dump_end();
        } else {
            w.end_heap_dump();
        }
        summaries.push(AgentDump { time_us: time, strings, things, objects: 3 + 2 * strings + things });
    }
    w.record(0x0E, 0, &[0, 0, 0, 2, 0, 4]);
    (w.finish(), summaries)
}
