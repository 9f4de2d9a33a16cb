//! Big-endian reads, a sub-record's length (checked against the bytes at hand) and its parse.

use super::*;

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
pub(super) fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

#[inline]
pub(super) fn be32(b: &[u8]) -> u32 {
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
pub(super) struct ClassLayout {
    constants: usize,
    statics: usize,
    fields: usize,
    end: usize,
    counts: [u16; 3],
}

pub(super) fn class_dump_layout(
    b: &[u8],
    id_size: u8,
) -> std::result::Result<std::result::Result<ClassLayout, u64>, SubLenError> {
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

pub(super) fn class_dump_len(b: &[u8], id_size: u8) -> std::result::Result<SubLen, SubLenError> {
    Ok(match class_dump_layout(b, id_size)? {
        Ok(l) => SubLen::Known { header: l.end as u64 - 1, payload: 0 },
        Err(n) => SubLen::Need(n),
    })
}

/// Parses a sub-record whose bytes are all in `b` (as measured by [`sub_len`]); `payload_here`
/// is false when the elements of a primitive array are not in `b`.
pub(super) fn parse_sub(b: &[u8], id_size: u8, payload_here: bool) -> SubRecord<'_> {
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
