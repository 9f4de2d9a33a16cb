//! The names of an hprof file and how a rewrite replaces them, for writing a dump with other
//! class and field names (deobfuscated) while every other byte, values included, is copied.
//!
//! A first pass ([`scan_hprof_names`]) reads the `STRING` (0x01) records, the `LOAD_CLASS`
//! (0x02) records (class object id → name string id) and, from every `CLASS_DUMP` (0x20), the
//! name string ids of the class's static and instance fields. The caller decides the new names
//! and describes them as a [`NameRewrite`]: new `STRING` records (with ids no string of the file
//! uses), and which `LOAD_CLASS`, `CLASS_DUMP` and `STACK_FRAME` records point at them (a frame
//! that deobfuscates to a chain of inlined methods becomes several `STACK_FRAME` records, and
//! the `STACK_TRACE` records that list it list them all). Existing `STRING`
//! records are never changed: HotSpot gives one string id to every use of a symbol, so the `a`
//! that names an obfuscated class also names fields and methods `a` of other classes, each with
//! an original of its own.

use std::collections::HashMap;
use std::io::Read;

use super::walk::{HprofStream, SubRecord, tag as record};
use crate::error::{Error, ErrorKind, Result};
use crate::model::heap::BasicType;

/// The field names of one `CLASS_DUMP`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassFieldNames {
    /// Superclass object id (0: none).
    pub super_id: u64,
    /// Name string ids of the static fields, in order.
    pub statics: Vec<u64>,
    /// Name string ids of the instance fields, in order.
    pub fields: Vec<u64>,
}

/// What [`scan_hprof_names`] read.
#[derive(Debug, Clone, Default)]
pub struct HprofNames {
    /// The header's format string (`JAVA PROFILE 1.0.2`…).
    pub format: String,
    /// Identifier size (4 or 8).
    pub id_size: u8,
    /// Every `STRING` record: id → text (modified UTF-8 decoded).
    pub strings: HashMap<u64, String>,
    /// `LOAD_CLASS` records: (class object id, name string id), in file order.
    pub load_classes: Vec<(u64, u64)>,
    /// The first `CLASS_DUMP` of each class object id (a file with several dumps repeats them).
    pub classes: HashMap<u64, ClassFieldNames>,
    /// `LOAD_CLASS` serial → class object id (what a `STACK_FRAME` names its class by).
    pub class_serials: HashMap<u32, u64>,
    /// Every `STACK_FRAME` record, in file order.
    pub frames: Vec<StackFrameNames>,
}

/// The names of one `STACK_FRAME` record (id, method name, signature and source file string
/// ids, class serial, line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackFrameNames {
    /// Frame id.
    pub id: u64,
    /// Method name string id.
    pub method: u64,
    /// Method signature string id.
    pub signature: u64,
    /// Source file name string id (0: none).
    pub source: u64,
    /// Serial of the `LOAD_CLASS` of the frame's class.
    pub class_serial: u32,
    /// Line: positive, or 0 (none), -1 (unknown), -2 (compiled), -3 (native).
    pub line: i32,
}

/// The size of a `STACK_FRAME` body: four ids, two u4.
fn frame_len(id: usize) -> usize {
    4 * id + 8
}

/// Reads the names of an hprof file (see the module documentation).
pub fn scan_hprof_names<R: Read>(input: R, name: &str) -> Result<HprofNames> {
    let mut s = HprofStream::new(input, name)?;
    let h = s.header().clone();
    let id = usize::from(h.id_size);
    let mut out = HprofNames { format: h.format.clone(), id_size: h.id_size, ..HprofNames::default() };
    while let Some(r) = s.next_record()? {
        match r.tag {
            record::STRING => {
                let b = s.body()?;
                if b.len() < id {
                    return Err(Error::new(ErrorKind::Malformed, format!("{name}: {} is too short", r.describe())));
                }
                out.strings.insert(be(&b[..id]), super::walk::decode_mutf8(&b[id..]));
            }
            record::LOAD_CLASS => {
                let b = s.body()?;
                if b.len() < 8 + 2 * id {
                    return Err(Error::new(ErrorKind::Malformed, format!("{name}: {} is too short", r.describe())));
                }
                let class = be(&b[4..4 + id]);
                out.class_serials.entry(be(&b[..4]) as u32).or_insert(class);
                out.load_classes.push((class, be(&b[8 + id..8 + 2 * id])));
            }
            record::STACK_FRAME => {
                let b = s.body()?;
                if b.len() < frame_len(id) {
                    return Err(Error::new(ErrorKind::Malformed, format!("{name}: {} is too short", r.describe())));
                }
                out.frames.push(StackFrameNames {
                    id: be(&b[..id]),
                    method: be(&b[id..2 * id]),
                    signature: be(&b[2 * id..3 * id]),
                    source: be(&b[3 * id..4 * id]),
                    class_serial: be(&b[4 * id..4 * id + 4]) as u32,
                    line: be(&b[4 * id + 4..4 * id + 8]) as u32 as i32,
                });
            }
            _ if r.is_heap_dump() => {
                while let Some(sr) = s.next_sub()? {
                    if let SubRecord::Class(c) = sr.record {
                        out.classes.entry(c.id).or_insert_with(|| ClassFieldNames {
                            super_id: c.super_id,
                            statics: c.statics().map(|f| f.name).collect(),
                            fields: c.fields().map(|f| f.0).collect(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x))
}

fn put(b: &mut [u8], v: u64) {
    let n = b.len();
    for (i, x) in b.iter_mut().enumerate() {
        *x = (v >> (8 * (n - 1 - i))) as u8;
    }
}

/// New names for a dump (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameRewrite {
    /// `STRING` records written right after the file header: (id, text).
    pub new_strings: Vec<(u64, String)>,
    /// `LOAD_CLASS`: class object id → the name string id written instead.
    pub class_names: HashMap<u64, u64>,
    /// `CLASS_DUMP`: class object id → the name string ids of its static and instance fields
    /// (every field, in order; only classes with a renamed field are listed).
    pub class_fields: HashMap<u64, ClassFieldNames>,
    /// `STACK_FRAME`: frame id → the frames written instead, innermost (inlined) first; the
    /// first keeps the frame's id, the others have new ids no frame of the file uses, and
    /// each `STACK_TRACE` that lists the frame lists them all in its place.
    pub frames: HashMap<u64, Vec<StackFrameNames>>,
}

impl NameRewrite {
    /// Whether the rewrite changes nothing.
    pub fn is_empty(&self) -> bool {
        self.new_strings.is_empty()
            && self.class_names.is_empty()
            && self.class_fields.is_empty()
            && self.frames.is_empty()
    }

    /// The body (or bodies, for an inline chain) of a `STACK_FRAME` record; `None` when the
    /// frame keeps its names.
    pub(crate) fn stack_frame(&self, body: &[u8], id_size: u8) -> Option<Vec<Vec<u8>>> {
        let id = usize::from(id_size);
        if body.len() != frame_len(id) {
            return None;
        }
        let new = self.frames.get(&be(&body[..id]))?;
        Some(
            new.iter()
                .map(|f| {
                    let mut b = body.to_vec();
                    put(&mut b[..id], f.id);
                    put(&mut b[id..2 * id], f.method);
                    put(&mut b[2 * id..3 * id], f.signature);
                    put(&mut b[3 * id..4 * id], f.source);
                    b[4 * id..4 * id + 4].copy_from_slice(&f.class_serial.to_be_bytes());
                    b[4 * id + 4..].copy_from_slice(&f.line.to_be_bytes());
                    b
                })
                .collect(),
        )
    }

    /// A `STACK_TRACE` body (u4 serial, u4 thread serial, u4 frame count, frame ids) with each
    /// frame that became a chain replaced by the chain's frames; `None` when no frame did (or
    /// the body does not hold the frames it counts).
    pub(crate) fn stack_trace(&self, body: &[u8], id_size: u8) -> Option<Vec<u8>> {
        let id = usize::from(id_size);
        let count = usize::try_from(be(body.get(8..12)?)).ok()?;
        if body.len() != 12 + count.checked_mul(id)? {
            return None;
        }
        let ids = body[12..].chunks_exact(id).map(be);
        if !ids.clone().any(|f| self.frames.get(&f).is_some_and(|v| v.len() > 1)) {
            return None;
        }
        let mut out = body[..12].to_vec();
        let mut n = 0u32;
        for f in ids {
            let chain: Vec<u64> = match self.frames.get(&f) {
                Some(v) if !v.is_empty() => v.iter().map(|x| x.id).collect(),
                _ => vec![f],
            };
            for c in chain {
                let at = out.len();
                out.resize(at + id, 0);
                put(&mut out[at..], c);
                n = n.checked_add(1)?;
            }
        }
        out[8..12].copy_from_slice(&n.to_be_bytes());
        Some(out)
    }

    /// The `STRING` records to write after the header.
    pub(crate) fn string_records(&self, id_size: u8) -> Vec<u8> {
        let mut out = Vec::new();
        for (sid, text) in &self.new_strings {
            out.push(record::STRING);
            out.extend_from_slice(&0u32.to_be_bytes());
            let len = usize::from(id_size) + text.len();
            out.extend_from_slice(&(len as u32).to_be_bytes());
            let at = out.len();
            out.resize(at + usize::from(id_size), 0);
            put(&mut out[at..], *sid);
            out.extend_from_slice(text.as_bytes());
        }
        out
    }

    /// A `LOAD_CLASS` body with its name replaced (unchanged when the class is not renamed).
    pub(crate) fn load_class(&self, body: &mut [u8], id_size: u8) {
        let id = usize::from(id_size);
        if body.len() < 8 + 2 * id {
            return;
        }
        if let Some(&n) = self.class_names.get(&be(&body[4..4 + id])) {
            put(&mut body[8 + id..8 + 2 * id], n);
        }
    }

    /// A whole `CLASS_DUMP` sub-record (tag first) with its field names replaced; `None` when
    /// the class keeps its names.
    pub(crate) fn class_dump(&self, raw: &[u8], id_size: u8) -> Option<Vec<u8>> {
        let id = usize::from(id_size);
        let class = be(raw.get(1..1 + id)?);
        let names = self.class_fields.get(&class)?;
        let mut b = raw.to_vec();
        let size = |code: u8| BasicType::from_code(code).map(|t| usize::from(t.size(id_size)));
        let mut at = 1 + 7 * id + 8;
        let constants = usize::from(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?));
        at += 2;
        for _ in 0..constants {
            at += 3 + size(*b.get(at + 2)?)?;
        }
        let statics = usize::from(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?));
        at += 2;
        for k in 0..statics {
            let ty = *b.get(at + id)?;
            if let Some(&n) = names.statics.get(k) {
                put(b.get_mut(at..at + id)?, n);
            }
            at += id + 1 + size(ty)?;
        }
        let fields = usize::from(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?));
        at += 2;
        for k in 0..fields {
            if let Some(&n) = names.fields.get(k) {
                put(b.get_mut(at..at + id)?, n);
            }
            at += id + 1;
        }
        Some(b)
    }
}

/// Whether a record is one [`NameRewrite`] changes outside heap dumps.
pub(crate) fn is_load_class(tag: u8) -> bool {
    tag == record::LOAD_CLASS
}

/// Whether a record is a `STACK_FRAME` or a `STACK_TRACE` (which a [`NameRewrite`] with frames
/// changes).
pub(crate) fn is_stack(tag: u8) -> bool {
    tag == record::STACK_FRAME || tag == record::STACK_TRACE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_body(id: u64, method: u64, line: i32) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [id, method, 0x30, 0x40] {
            b.extend_from_slice(&(v as u32).to_be_bytes());
        }
        b.extend_from_slice(&9u32.to_be_bytes());
        b.extend_from_slice(&line.to_be_bytes());
        b
    }

    /// A frame renamed in place keeps its id, signature and class serial; a chain becomes
    /// several frames; a trace lists a chain's frames in the frame's place, and a trace
    /// without chains (or whose length disagrees with its count) is left alone.
    #[test]
    fn stack_frames_and_traces_are_rewritten() {
        let f = |id, method, line| StackFrameNames { id, method, signature: 0x30, source: 0x40, class_serial: 9, line };
        let mut rw = NameRewrite::default();
        rw.frames.insert(1, vec![f(1, 0x77, 12)]);
        rw.frames.insert(2, vec![f(2, 0x78, 5), f(100, 0x79, 31)]);
        assert_eq!(rw.stack_frame(&frame_body(1, 0x10, 3), 4), Some(vec![frame_body(1, 0x77, 12)]));
        assert_eq!(
            rw.stack_frame(&frame_body(2, 0x10, 3), 4),
            Some(vec![frame_body(2, 0x78, 5), frame_body(100, 0x79, 31)])
        );
        assert_eq!(rw.stack_frame(&frame_body(3, 0x10, 3), 4), None, "a frame the map does not name");
        assert_eq!(rw.stack_frame(&frame_body(1, 0x10, 3)[..20], 4), None, "a short body is copied");
        let trace = |ids: &[u32]| {
            let mut b = vec![0, 0, 0, 7, 0, 0, 0, 1];
            b.extend_from_slice(&(ids.len() as u32).to_be_bytes());
            for i in ids {
                b.extend_from_slice(&i.to_be_bytes());
            }
            b
        };
        assert_eq!(rw.stack_trace(&trace(&[3, 2, 1]), 4), Some(trace(&[3, 2, 100, 1])));
        assert_eq!(rw.stack_trace(&trace(&[3, 1]), 4), None, "no chain: copied");
        let mut lying = trace(&[2]);
        lying[11] = 5;
        assert_eq!(rw.stack_trace(&lying, 4), None);
        assert_eq!(rw.stack_trace(&[0, 0], 4), None);
    }

    /// The names pass reads `STACK_FRAME`s and `LOAD_CLASS` serials, and names a short frame.
    #[test]
    fn scan_reads_frames_and_refuses_short_ones() {
        let mut f = b"JAVA PROFILE 1.0.2\0".to_vec();
        f.extend_from_slice(&4u32.to_be_bytes());
        f.extend_from_slice(&0u64.to_be_bytes());
        let rec = |tag: u8, body: &[u8]| {
            let mut r = vec![tag, 0, 0, 0, 0];
            r.extend_from_slice(&(body.len() as u32).to_be_bytes());
            r.extend_from_slice(body);
            r
        };
        let mut load = 9u32.to_be_bytes().to_vec();
        load.extend_from_slice(&0x500u32.to_be_bytes());
        load.extend_from_slice(&1u32.to_be_bytes());
        load.extend_from_slice(&0x20u32.to_be_bytes());
        let mut good = f.clone();
        good.extend(rec(record::LOAD_CLASS, &load));
        good.extend(rec(record::STACK_FRAME, &frame_body(1, 0x10, -3)));
        let n = scan_hprof_names(&good[..], "t.hprof").unwrap();
        assert_eq!(n.class_serials.get(&9), Some(&0x500));
        assert_eq!(
            n.frames,
            [StackFrameNames { id: 1, method: 0x10, signature: 0x30, source: 0x40, class_serial: 9, line: -3 }]
        );
        let mut bad = f;
        bad.extend(rec(record::STACK_FRAME, &frame_body(1, 0x10, 3)[..10]));
        let e = scan_hprof_names(&bad[..], "t.hprof").unwrap_err().to_string();
        assert!(e.contains("t.hprof") && e.contains("STACK_FRAME at byte 31") && e.contains("too short"), "{e}");
    }
}
