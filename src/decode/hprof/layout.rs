//! Shallow sizes as a JVM lays objects out in memory (what `jmap -histo`, `jcmd
//! GC.class_histogram`, MAT and VisualVM report), rather than the bytes of field data an hprof
//! file holds. The layout cannot be told from a dump: HotSpot's x64 dumps have 8-byte ids with
//! and without compressed oops, and the JVMTI agent's 64-bit dumps 4-byte ids, so it is chosen.
//!
//! The rules (HotSpot, JDK 8 to 19):
//!
//! | layout | object header | array header | reference |
//! |---|---|---|---|
//! | [`ObjectSize::Jvm32`] | 8 | 12 | 4 |
//! | [`ObjectSize::Jvm64Coops`] (compressed oops and class pointers, the default below 32 GB) | 12 | 16 | 4 |
//! | [`ObjectSize::Jvm64CompressedClass`] (`-XX:-UseCompressedOops` on JDK 15 and later) | 12 | 16 | 8 |
//! | [`ObjectSize::Jvm64`] (`-XX:-UseCompressedOops -XX:-UseCompressedClassPointers`, or before JDK 15 `-XX:-UseCompressedOops`) | 16 | 24 | 8 |
//!
//! * An instance: the object header plus its fields and its superclasses' (references of the
//!   layout's size, primitives of their own), rounded up to 8 bytes. This is the **sum of the
//!   field sizes, rounded**, not HotSpot's field packing: the two agree whenever the gaps
//!   HotSpot leaves are filled by smaller fields or vanish in the final rounding (every class
//!   the tests check against a JVM's histogram), and can differ by 8 bytes for a class whose
//!   superclass ends with a gap its subclass cannot fill.
//! * An array: the array header (object header and a 4-byte length, rounded up to 8 bytes on
//!   64-bit) plus length × element size (references of the layout's size), rounded up to 8.
//! * A class object (`java.lang.Class`) keeps the size the dump gives (static field bytes plus
//!   `java.lang.Class`'s declared size): a JVM's class mirror size is not in the dump.

use crate::model::heap::{BasicType, HeapDump, ObjectKind};

/// How shallow sizes are counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ObjectSize {
    /// What the dump holds: HotSpot's instances are the bytes of their field values (no
    /// header), ART's the size it declares; arrays are length × element size. Default.
    #[default]
    Fields,
    /// A 32-bit JVM: 8-byte headers, 12-byte array headers, 4-byte references.
    Jvm32,
    /// A 64-bit JVM with compressed oops (and class pointers): 12-byte headers, 16-byte array
    /// headers, 4-byte references.
    Jvm64Coops,
    /// A 64-bit JVM with compressed class pointers but not compressed oops: 12-byte headers,
    /// 16-byte array headers, 8-byte references.
    Jvm64CompressedClass,
    /// A 64-bit JVM with neither: 16-byte headers, 24-byte array headers, 8-byte references.
    Jvm64,
}

impl ObjectSize {
    /// (object header, array header, reference) bytes; `None` for [`ObjectSize::Fields`].
    pub fn layout(self) -> Option<(u64, u64, u64)> {
        match self {
            ObjectSize::Fields => None,
            ObjectSize::Jvm32 => Some((8, 12, 4)),
            ObjectSize::Jvm64Coops => Some((12, 16, 4)),
            ObjectSize::Jvm64CompressedClass => Some((12, 16, 8)),
            ObjectSize::Jvm64 => Some((16, 24, 8)),
        }
    }
}

fn align8(n: u64) -> u64 {
    n.div_ceil(8) * 8
}

/// Sets every instance's and array's shallow size ([`HeapDump::obj_self_size`]) to its size
/// under `layout` (see the module documentation); nothing changes for [`ObjectSize::Fields`].
pub fn apply_object_size(dump: &mut HeapDump, layout: ObjectSize) {
    let Some((header, array_header, reference)) = layout.layout() else { return };
    let field_size = |ty: BasicType| if ty == BasicType::Object { reference } else { u64::from(ty.size(8)) };
    // Instance size per class: own fields plus the superclass chain's (bounded by the number of
    // classes, so that a chain that loops ends).
    let n = dump.classes.len();
    let instance: Vec<u64> = (0..n)
        .map(|c| {
            let mut bytes = 0;
            let mut at = Some(c);
            for _ in 0..n {
                let Some(i) = at else { break };
                bytes += dump.classes[i].fields.iter().map(|f| field_size(f.ty)).sum::<u64>();
                at = dump.classes[i].superclass.map(|s| s as usize);
            }
            align8(header + bytes)
        })
        .collect();
    for o in 0..dump.obj_id.len() {
        let len = u64::from(dump.obj_len[o]);
        dump.obj_self_size[o] = match dump.obj_kind[o] {
            ObjectKind::Instance => instance[dump.obj_class[o] as usize],
            ObjectKind::ObjectArray => align8(array_header + len * reference),
            ObjectKind::PrimitiveArray(ty) => align8(array_header + len * u64::from(ty.size(8))),
            ObjectKind::Class => continue,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_and_rounding() {
        assert_eq!(ObjectSize::Fields.layout(), None);
        assert_eq!(ObjectSize::Jvm64Coops.layout(), Some((12, 16, 4)));
        assert_eq!((align8(0), align8(1), align8(8), align8(20)), (0, 8, 8, 24));
    }
}
