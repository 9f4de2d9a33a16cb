//! Java heap snapshots: the model shared by the heap-graph decoder (Perfetto `HeapGraph`), the
//! hprof reader, the hprof writer and the heap analyses (shortest-path tree, dominators).
//!
//! A [`HeapDump`] is columnar, so tens of millions of objects fit: one entry per object in a
//! few parallel vectors, and references in compressed-sparse-row form (`ref_start[i] ..
//! ref_start[i + 1]` are object `i`'s outgoing references, in field order). Objects and
//! classes are addressed by dense indexes ([`ObjIdx`], [`ClassIdx`]); the ids the producer
//! used are kept beside them (`obj_id`, [`Class::id`]).

use std::fmt;

/// Index of an object in a [`HeapDump`].
pub type ObjIdx = u32;
/// Index of a class in [`HeapDump::classes`].
pub type ClassIdx = u32;
/// Index of a field name in [`HeapDump::field_names`].
pub type FieldIdx = u32;

/// A reference slot that holds null.
pub const REF_NULL: ObjIdx = u32::MAX;
/// A reference slot whose target id names no object in the dump (counted in
/// [`HeapDump::dangling_refs`]).
pub const REF_DANGLING: ObjIdx = u32::MAX - 1;
/// A reference that is not a named field: an array element, a runtime-internal reference.
pub const NO_FIELD: FieldIdx = u32::MAX;

/// What the runtime knows about a class, as Perfetto's `HeapGraphType.Kind` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[allow(missing_docs)]
pub enum ClassKind {
    #[default]
    Unknown,
    Normal,
    NoReferences,
    String,
    Array,
    Class,
    ClassLoader,
    DexCache,
    SoftReference,
    WeakReference,
    FinalizerReference,
    PhantomReference,
}

impl ClassKind {
    /// The kind for a `HeapGraphType.kind` enum value (unknown values are `Unknown`).
    pub fn from_perfetto(v: i32) -> ClassKind {
        use ClassKind::*;
        match v {
            1 => Normal,
            2 => NoReferences,
            3 => String,
            4 => Array,
            5 => Class,
            6 => ClassLoader,
            7 => DexCache,
            8 => SoftReference,
            9 => WeakReference,
            10 => FinalizerReference,
            11 => PhantomReference,
            _ => Unknown,
        }
    }

    /// True for weak, finalizer and phantom references, whose `referent` does not keep an
    /// object alive (soft references do).
    pub fn referent_is_weak(self) -> bool {
        matches!(self, ClassKind::WeakReference | ClassKind::FinalizerReference | ClassKind::PhantomReference)
    }
}

/// Why an object is a GC root. The names are Perfetto's (`ROOT_JAVA_FRAME`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum RootKind {
    Unknown,
    JniGlobal,
    JniLocal,
    JavaFrame,
    NativeStack,
    StickyClass,
    ThreadBlock,
    MonitorUsed,
    ThreadObject,
    InternedString,
    Finalizing,
    Debugger,
    ReferenceCleanup,
    VmInternal,
    JniMonitor,
    /// Android's hprof `ROOT_UNREACHABLE` (0x90); not a Perfetto root type.
    Unreachable,
}

impl RootKind {
    /// The kind for a `HeapGraphRoot.Type` enum value.
    pub fn from_perfetto(v: i32) -> RootKind {
        use RootKind::*;
        match v {
            1 => JniGlobal,
            2 => JniLocal,
            3 => JavaFrame,
            4 => NativeStack,
            5 => StickyClass,
            6 => ThreadBlock,
            7 => MonitorUsed,
            8 => ThreadObject,
            9 => InternedString,
            10 => Finalizing,
            11 => Debugger,
            12 => ReferenceCleanup,
            13 => VmInternal,
            14 => JniMonitor,
            _ => Unknown,
        }
    }

    /// Perfetto's name for the root type, as trace processor and traceconv print it.
    pub fn perfetto_name(self) -> &'static str {
        use RootKind::*;
        match self {
            Unknown => "ROOT_UNKNOWN",
            JniGlobal => "ROOT_JNI_GLOBAL",
            JniLocal => "ROOT_JNI_LOCAL",
            JavaFrame => "ROOT_JAVA_FRAME",
            NativeStack => "ROOT_NATIVE_STACK",
            StickyClass => "ROOT_STICKY_CLASS",
            ThreadBlock => "ROOT_THREAD_BLOCK",
            MonitorUsed => "ROOT_MONITOR_USED",
            ThreadObject => "ROOT_THREAD_OBJECT",
            InternedString => "ROOT_INTERNED_STRING",
            Finalizing => "ROOT_FINALIZING",
            Debugger => "ROOT_DEBUGGER",
            ReferenceCleanup => "ROOT_REFERENCE_CLEANUP",
            VmInternal => "ROOT_VM_INTERNAL",
            JniMonitor => "ROOT_JNI_MONITOR",
            Unreachable => "ROOT_UNREACHABLE",
        }
    }
}

impl RootKind {
    /// Rank in trace processor's root-type precedence: `STICKY_CLASS` (0) beats `JNI_GLOBAL`
    /// (1), which beats `JNI_LOCAL` (2); every other kind ranks 3, and between equal ranks the
    /// root listed first wins. See [`HeapDump::root_kinds`].
    pub fn precedence(self) -> u8 {
        match self {
            RootKind::StickyClass => 0,
            RootKind::JniGlobal => 1,
            RootKind::JniLocal => 2,
            _ => 3,
        }
    }
}

impl fmt::Display for RootKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.perfetto_name())
    }
}

/// An hprof basic type (the codes are hprof's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BasicType {
    Object = 2,
    Boolean = 4,
    Char = 5,
    Float = 6,
    Double = 7,
    Byte = 8,
    Short = 9,
    Int = 10,
    Long = 11,
}

impl BasicType {
    /// The type for an hprof type code.
    pub fn from_code(code: u8) -> Option<BasicType> {
        use BasicType::*;
        Some(match code {
            2 => Object,
            4 => Boolean,
            5 => Char,
            6 => Float,
            7 => Double,
            8 => Byte,
            9 => Short,
            10 => Int,
            11 => Long,
            _ => return None,
        })
    }

    /// Size in bytes of one value, with `id_size` for object references.
    pub fn size(self, id_size: u8) -> u8 {
        use BasicType::*;
        match self {
            Object => id_size,
            Boolean | Byte => 1,
            Char | Short => 2,
            Float | Int => 4,
            Double | Long => 8,
        }
    }

    /// The Java name of the type (`int`, `boolean`, ...; `Object` for references).
    pub fn java_name(self) -> &'static str {
        use BasicType::*;
        match self {
            Object => "Object",
            Boolean => "boolean",
            Char => "char",
            Float => "float",
            Double => "double",
            Byte => "byte",
            Short => "short",
            Int => "int",
            Long => "long",
        }
    }
}

/// An instance field a class declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDesc {
    /// Field name: the producer's spelling (heap graphs say `Class.field`, hprof just `field`).
    pub name: FieldIdx,
    /// Field type.
    pub ty: BasicType,
}

/// A class (a heap-graph type or an hprof CLASS_DUMP).
#[derive(Clone, Debug, Default)]
pub struct Class {
    /// The producer's id: the class object id in hprof, the `HeapGraphType.id` in a heap graph.
    pub id: u64,
    /// Java-style name: `java.lang.String`, `int[]`, `com.example.Foo$Bar[][]`.
    pub name: String,
    /// Superclass, when known.
    pub superclass: Option<ClassIdx>,
    /// Object id of the class loader (0 for the boot class loader or unknown).
    pub classloader_id: u64,
    /// Bytes of one instance's fields (hprof instance size, heap-graph `object_size`).
    pub instance_size: u64,
    /// Class kind (heap graphs say; hprof readers infer what they can, else `Unknown`).
    pub kind: ClassKind,
    /// Instance fields declared by this class only (superclasses' fields are theirs), in the
    /// order their values are laid out.
    pub fields: Vec<FieldDesc>,
    /// Static fields that hold references: (name, target object), after resolution.
    pub static_refs: Vec<(FieldIdx, ObjIdx)>,
    /// Where the class came from (heap-graph `location_names`: a dex or apk path).
    pub location: Option<String>,
    /// The object that is this class's `java.lang.Class` instance, if the dump has one.
    pub object: Option<ObjIdx>,
}

/// For a class-object type name `java.lang.Class<X>`, the name `X` of the class it stands for
/// (heap graphs name the type of each class object that way).
pub fn class_object_target(name: &str) -> Option<&str> {
    name.strip_prefix("java.lang.Class<").and_then(|r| r.strip_suffix('>'))
}

/// The primitive element type of an array class named `int[]`, `byte[]`, … (one dimension);
/// `None` for arrays of references and for other names.
pub fn primitive_array_element(name: &str) -> Option<BasicType> {
    use BasicType::*;
    Some(match name.strip_suffix("[]")? {
        "boolean" => Boolean,
        "char" => Char,
        "float" => Float,
        "double" => Double,
        "byte" => Byte,
        "short" => Short,
        "int" => Int,
        "long" => Long,
        _ => return None,
    })
}

/// What kind of record an object came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ObjectKind {
    /// An ordinary instance.
    #[default]
    Instance,
    /// An array of references.
    ObjectArray,
    /// An array of primitives.
    PrimitiveArray(BasicType),
    /// A class object (`java.lang.Class<X>`).
    Class,
}

/// A GC root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Root {
    /// The rooted object.
    pub object: ObjIdx,
    /// Why it is a root.
    pub kind: RootKind,
}

/// One heap snapshot of one process.
#[derive(Clone, Debug, Default)]
pub struct HeapDump {
    /// Process id, when the producer says.
    pub pid: Option<u32>,
    /// Process name, when known.
    pub process_name: Option<String>,
    /// When the dump was taken: trace-clock nanoseconds for heap graphs, milliseconds since the
    /// epoch for hprof (as the file header says; see [`HeapDump::timestamp_is_epoch_ms`]).
    pub timestamp: Option<i64>,
    /// True when [`HeapDump::timestamp`] is milliseconds since the epoch (hprof), false when it
    /// is trace-clock nanoseconds (heap graphs).
    pub timestamp_is_epoch_ms: bool,
    /// Heap graphs: true when [`HeapDump::timestamp`] was converted to the trace clock through
    /// a ClockSnapshot (false: the producer's raw clock). Always false for hprof.
    pub timestamp_converted: bool,
    /// Where the dump came from, for messages: `"perfetto heap graph"`, `"JAVA PROFILE 1.0.3"`.
    pub source: String,
    /// Size of object ids in the producer (4 or 8); 8 for heap graphs.
    pub id_size: u8,
    /// Heap names, indexed by [`HeapDump::obj_heap`]: e.g. `app`, `zygote`, `image`.
    pub heaps: Vec<String>,
    /// Classes.
    pub classes: Vec<Class>,
    /// Interned field names, indexed by [`FieldIdx`].
    pub field_names: Vec<String>,

    /// Per object: the producer's id.
    pub obj_id: Vec<u64>,
    /// Per object: its class.
    pub obj_class: Vec<ClassIdx>,
    /// Per object: what record it came from.
    pub obj_kind: Vec<ObjectKind>,
    /// Per object: its heap (index into [`HeapDump::heaps`]).
    pub obj_heap: Vec<u8>,
    /// Per object: shallow size in bytes.
    pub obj_self_size: Vec<u64>,
    /// Per object: native bytes attributed to it (heap graphs: NativeAllocationRegistry).
    pub obj_native_size: Vec<u64>,
    /// Per object: array length (0 for non-arrays).
    pub obj_len: Vec<u32>,

    /// CSR offsets: object `i`'s references are `ref_start[i] .. ref_start[i + 1]`; the vector
    /// has one more entry than there are objects.
    pub ref_start: Vec<u64>,
    /// Reference targets ([`REF_NULL`], [`REF_DANGLING`] or an object).
    pub ref_target: Vec<ObjIdx>,
    /// Reference field names ([`NO_FIELD`] for array elements and runtime-internal refs).
    pub ref_field: Vec<FieldIdx>,

    /// GC roots, in the order the producer listed them (an object may appear more than once).
    pub roots: Vec<Root>,

    /// References whose target id named no object.
    pub dangling_refs: u64,
    /// Why the dump is incomplete, if it is (a packet-index gap, a truncated file, ...).
    pub incomplete: Vec<String>,
}

impl HeapDump {
    /// Number of objects.
    pub fn len(&self) -> usize {
        self.obj_id.len()
    }

    /// True when the dump holds no object.
    pub fn is_empty(&self) -> bool {
        self.obj_id.is_empty()
    }

    /// Object `o`'s outgoing references as (field, target) pairs, in field order, nulls and
    /// dangling references included.
    pub fn refs(&self, o: ObjIdx) -> impl Iterator<Item = (FieldIdx, ObjIdx)> + '_ {
        let (a, b) = (self.ref_start[o as usize] as usize, self.ref_start[o as usize + 1] as usize);
        self.ref_field[a..b].iter().copied().zip(self.ref_target[a..b].iter().copied())
    }

    /// The class of object `o`.
    pub fn class_of(&self, o: ObjIdx) -> &Class {
        &self.classes[self.obj_class[o as usize] as usize]
    }

    /// The name of field `f` (empty for [`NO_FIELD`]).
    pub fn field_name(&self, f: FieldIdx) -> &str {
        if f == NO_FIELD { "" } else { &self.field_names[f as usize] }
    }

    /// The root kind of every object (`None` for objects that are not roots), chosen among
    /// [`HeapDump::roots`] as Perfetto's trace processor chooses it when an object is rooted
    /// several times: the kind with the best [`RootKind::precedence`] (STICKY_CLASS, then
    /// JNI_GLOBAL, then JNI_LOCAL), and among equals the one listed first. Heap-graph dumps list
    /// the producer's roots first and then the `VM_INTERNAL` roots added for zygote and
    /// boot-image objects, so those only apply to objects rooted no other way.
    pub fn root_kinds(&self) -> Vec<Option<RootKind>> {
        let mut kinds: Vec<Option<RootKind>> = vec![None; self.len()];
        for r in &self.roots {
            let slot = &mut kinds[r.object as usize];
            match slot {
                Some(k) if k.precedence() <= r.kind.precedence() => {}
                _ => *slot = Some(r.kind),
            }
        }
        kinds
    }

    /// Appends an object with no references yet; references are added with
    /// [`HeapDump::push_ref`] before the next object is pushed. Returns its index.
    pub fn push_object(
        &mut self,
        id: u64,
        class: ClassIdx,
        kind: ObjectKind,
        heap: u8,
        self_size: u64,
        len: u32,
    ) -> ObjIdx {
        if self.ref_start.is_empty() {
            self.ref_start.push(0);
        }
        let idx = self.obj_id.len() as ObjIdx;
        self.obj_id.push(id);
        self.obj_class.push(class);
        self.obj_kind.push(kind);
        self.obj_heap.push(heap);
        self.obj_self_size.push(self_size);
        self.obj_native_size.push(0);
        self.obj_len.push(len);
        self.ref_start.push(self.ref_target.len() as u64);
        idx
    }

    /// Adds a reference to the object pushed last.
    pub fn push_ref(&mut self, field: FieldIdx, target: ObjIdx) {
        self.ref_target.push(target);
        self.ref_field.push(field);
        *self.ref_start.last_mut().expect("push_object first") = self.ref_target.len() as u64;
    }

    /// Checks the structural invariants (parallel vectors of equal length, CSR offsets
    /// monotone and in range, indexes in range). Decoders call it in debug builds and tests.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.obj_id.len();
        for (name, len) in [
            ("obj_class", self.obj_class.len()),
            ("obj_kind", self.obj_kind.len()),
            ("obj_heap", self.obj_heap.len()),
            ("obj_self_size", self.obj_self_size.len()),
            ("obj_native_size", self.obj_native_size.len()),
            ("obj_len", self.obj_len.len()),
        ] {
            if len != n {
                return Err(format!("{name} has {len} entries for {n} objects"));
            }
        }
        if n > 0 && self.ref_start.len() != n + 1 {
            return Err(format!("ref_start has {} entries for {n} objects", self.ref_start.len()));
        }
        if self.ref_target.len() != self.ref_field.len() {
            return Err("ref_target and ref_field differ in length".into());
        }
        if self.ref_start.windows(2).any(|w| w[0] > w[1]) {
            return Err("ref_start is not monotone".into());
        }
        if self.ref_start.last().is_some_and(|&e| e as usize != self.ref_target.len()) {
            return Err("ref_start does not end at the number of references".into());
        }
        if let Some(t) = self.ref_target.iter().find(|&&t| t != REF_NULL && t != REF_DANGLING && t as usize >= n) {
            return Err(format!("reference to object {t} out of range"));
        }
        if let Some(&c) = self.obj_class.iter().find(|&&c| c as usize >= self.classes.len()) {
            return Err(format!("object of class {c} out of range"));
        }
        if let Some(r) = self.roots.iter().find(|r| r.object as usize >= n) {
            return Err(format!("root {} out of range", r.object));
        }
        if let Some(&h) = self.obj_heap.iter().find(|&&h| h as usize >= self.heaps.len().max(1)) {
            return Err(format!("heap {h} out of range"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_references_and_validation() {
        let mut d = HeapDump { heaps: vec!["app".into()], ..Default::default() };
        d.classes.push(Class { name: "Foo".into(), ..Default::default() });
        d.field_names.push("Foo.next".into());
        let a = d.push_object(100, 0, ObjectKind::Instance, 0, 16, 0);
        d.push_ref(0, 1);
        d.push_ref(0, REF_NULL);
        let b = d.push_object(200, 0, ObjectKind::Instance, 0, 16, 0);
        assert_eq!(d.refs(a).collect::<Vec<_>>(), [(0, 1), (0, REF_NULL)]);
        assert_eq!(d.refs(b).count(), 0);
        assert_eq!(d.field_name(0), "Foo.next");
        assert_eq!(d.field_name(NO_FIELD), "");
        d.validate().unwrap();
        d.ref_target[0] = 7;
        assert!(d.validate().unwrap_err().contains("out of range"));
    }

    #[test]
    fn root_kind_precedence_and_first_seen() {
        let mut d = HeapDump { heaps: vec!["app".into()], ..Default::default() };
        d.classes.push(Class { name: "Foo".into(), ..Default::default() });
        for id in 1..=4 {
            d.push_object(id, 0, ObjectKind::Instance, 0, 8, 0);
        }
        let root = |object, kind| Root { object, kind };
        d.roots = vec![
            root(0, RootKind::JavaFrame),
            root(0, RootKind::JniLocal),
            root(0, RootKind::StickyClass),
            root(0, RootKind::JniGlobal),
            root(1, RootKind::JavaFrame),
            root(1, RootKind::ThreadObject),
            root(1, RootKind::VmInternal),
            root(2, RootKind::VmInternal),
            root(2, RootKind::JniLocal),
        ];
        assert_eq!(
            d.root_kinds(),
            [Some(RootKind::StickyClass), Some(RootKind::JavaFrame), Some(RootKind::JniLocal), None]
        );
    }

    #[test]
    fn class_names() {
        assert_eq!(class_object_target("java.lang.Class<a.B[]>"), Some("a.B[]"));
        assert_eq!(class_object_target("java.lang.Class"), None);
        assert_eq!(primitive_array_element("int[]"), Some(BasicType::Int));
        assert_eq!(primitive_array_element("int[][]"), None);
        assert_eq!(primitive_array_element("java.lang.Object[]"), None);
    }

    #[test]
    fn kinds_from_perfetto_enums() {
        assert_eq!(RootKind::from_perfetto(3).perfetto_name(), "ROOT_JAVA_FRAME");
        assert_eq!(RootKind::from_perfetto(99), RootKind::Unknown);
        assert!(ClassKind::from_perfetto(9).referent_is_weak());
        assert!(!ClassKind::from_perfetto(8).referent_is_weak());
        assert_eq!(BasicType::from_code(11).map(|t| t.size(4)), Some(8));
        assert_eq!(BasicType::Object.size(4), 4);
    }
}
