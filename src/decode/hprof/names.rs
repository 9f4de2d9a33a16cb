//! The names of an hprof file and how a rewrite replaces them, for writing a dump with other
//! class and field names (deobfuscated) while every other byte, values included, is copied.
//!
//! A first pass ([`scan_hprof_names`]) reads the `STRING` (0x01) records, the `LOAD_CLASS`
//! (0x02) records (class object id → name string id) and, from every `CLASS_DUMP` (0x20), the
//! name string ids of the class's static and instance fields. The caller decides the new names
//! and describes them as a [`NameRewrite`]: new `STRING` records (with ids no string of the file
//! uses), and which `LOAD_CLASS` and `CLASS_DUMP` records point at them. Existing `STRING`
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
                out.load_classes.push((be(&b[4..4 + id]), be(&b[8 + id..8 + 2 * id])));
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
}

impl NameRewrite {
    /// Whether the rewrite changes nothing.
    pub fn is_empty(&self) -> bool {
        self.new_strings.is_empty() && self.class_names.is_empty() && self.class_fields.is_empty()
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
