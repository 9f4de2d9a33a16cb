//! A blob parsed: its header, tables of class, method and file names, and entries with their
//! stack frames; thread names where the capture has them.

use super::*;

/// A parsed blob.
pub(super) struct Blob {
    pub(super) layout: BlobLayout,
    pub(super) count_field: u16,
    pub(super) string_table_offset: u32,
    pub(super) len: u64,
    pub(super) records: AllocRecords,
}

impl Blob {
    /// Parses `b`, which starts `base` bytes into the input (for messages).
    pub(super) fn parse(b: &[u8], base: u64, source: &str, problems: &mut Vec<String>) -> Result<Blob> {
        let at = |rel: usize| base + rel as u64;
        let truncated = |msg: String| Error::new(ErrorKind::Truncated, format!("{source}: {msg}"));
        let malformed = |msg: String| Error::new(ErrorKind::Malformed, format!("{source}: {msg}"));
        if b.len() < 3 {
            return Err(truncated(format!("the blob at byte {base} has {} bytes, its header at least 15", b.len())));
        }
        let layout = BlobLayout { header_len: b[0], entry_header_len: b[1], frame_len: b[2] };
        if layout.header_len < STANDARD_HEADER_LEN {
            return Err(malformed(format!(
                "header length {} at byte {base} is shorter than the 15 bytes of its fields",
                layout.header_len
            )));
        }
        if layout.entry_header_len < STANDARD_ENTRY_HEADER_LEN {
            return Err(malformed(format!(
                "entry header length {} at byte {} is shorter than the 9 bytes of its fields",
                layout.entry_header_len,
                at(1)
            )));
        }
        if layout.frame_len < STANDARD_FRAME_LEN {
            return Err(malformed(format!(
                "stack frame length {} at byte {} is shorter than the 8 bytes of its fields",
                layout.frame_len,
                at(2)
            )));
        }
        let hl = usize::from(layout.header_len);
        if b.len() < hl {
            return Err(truncated(format!(
                "the blob at byte {base} has {} bytes, less than its {hl}-byte header",
                b.len()
            )));
        }
        let count_field = be16(b, 3);
        let string_table_offset = be32(b, 5);
        let n_class = usize::from(be16(b, 9));
        let n_method = usize::from(be16(b, 11));
        let n_file = usize::from(be16(b, 13));
        let st = string_table_offset as usize;
        if st < hl {
            return Err(malformed(format!(
                "string-table offset {st} (at byte {}) points into the {hl}-byte header",
                at(5)
            )));
        }
        if st > b.len() {
            return Err(truncated(format!(
                "the string tables should start at byte {} but the input ends at byte {}",
                at(st),
                at(b.len())
            )));
        }

        // Entries: from the header to the string tables.
        let el = usize::from(layout.entry_header_len);
        let fl = usize::from(layout.frame_len);
        let count = usize::from(count_field);
        let region = st - hl;
        let mut records = AllocRecords {
            entries: Vec::with_capacity(if count == 0 { 65_536 } else { count }.min(region / el)),
            frames: Vec::with_capacity((region / fl).min(1 << 22)),
            ..Default::default()
        };
        let mut pos = hl;
        let walk = |limit: usize, pos: &mut usize, records: &mut AllocRecords| -> Result<()> {
            while records.entries.len() < limit && *pos < st {
                let i = records.entries.len();
                let left = st - *pos;
                if left < el {
                    return Err(malformed(format!(
                        "entry {i} at byte {}: {left} byte(s) before the string tables at byte {}, an entry header needs {el}",
                        at(*pos),
                        at(st)
                    )));
                }
                let size = be32(b, *pos);
                let thread = be16(b, *pos + 4);
                let class = be16(b, *pos + 6);
                let depth = b[*pos + 8];
                if usize::from(class) >= n_class {
                    return Err(malformed(format!(
                        "entry {i} at byte {}: allocated-class index {class} is outside the class-name table ({n_class} names)",
                        at(*pos)
                    )));
                }
                let entry_at = *pos;
                *pos += el;
                let need = usize::from(depth) * fl;
                if st - *pos < need {
                    return Err(malformed(format!(
                        "entry {i} at byte {}: its {depth} frame(s) need {need} bytes but {} remain before the string tables at byte {}",
                        at(entry_at),
                        st - *pos,
                        at(st)
                    )));
                }
                let first_frame = u32::try_from(records.frames.len()).expect("frames fit the input");
                for k in 0..usize::from(depth) {
                    let p = *pos;
                    let f = StackFrame {
                        class: be16(b, p),
                        method: be16(b, p + 2),
                        file: be16(b, p + 4),
                        line: be16(b, p + 6) as i16,
                    };
                    for (what, idx, n) in [
                        ("class-name", f.class, n_class),
                        ("method-name", f.method, n_method),
                        ("source-file", f.file, n_file),
                    ] {
                        if usize::from(idx) >= n {
                            return Err(malformed(format!(
                                "entry {i} at byte {}, frame {k} at byte {}: index {idx} is outside the {what} table ({n} names)",
                                at(entry_at),
                                at(p)
                            )));
                        }
                    }
                    records.frames.push(f);
                    *pos += fl;
                }
                records.entries.push(AllocEntry { size, thread, class, first_frame, depth });
            }
            Ok(())
        };
        if count > 0 {
            walk(count, &mut pos, &mut records)?;
            if records.entries.len() < count {
                return Err(malformed(format!(
                    "the header announces {count} entries but the string tables at byte {} begin after {}",
                    at(st),
                    records.entries.len()
                )));
            }
        }
        if pos < st {
            // More entries than the header says: a 16-bit count that wrapped (Dalvik 4.4 writes
            // 0 for a full buffer of 65,536).
            let end_of_announced = pos;
            walk(usize::MAX, &mut pos, &mut records).map_err(|e| {
                if count == 0 {
                    e
                } else {
                    malformed(format!(
                        "the {count} entries the header announces end at byte {}, {} byte(s) before the string tables; read on as a wrapped count: {}",
                        at(end_of_announced),
                        st - end_of_announced,
                        e.context().strip_prefix(&format!("{source}: ")).unwrap_or(e.context())
                    ))
                }
            })?;
            let n = records.entries.len();
            if n % 65_536 != count {
                return Err(malformed(format!(
                    "the header announces {count} entries but {n} lie before the string tables at byte {}",
                    at(st)
                )));
            }
            problems.push(format!(
                "the header's entry count is {count} but {n} entries precede the string tables: a 16-bit count that wrapped (Dalvik writes 0 for a full buffer of 65,536)"
            ));
        }

        // String tables.
        let mut pos = st;
        let mut tables: [Vec<String>; 3] = Default::default();
        for (t, (what, n)) in
            [("class name", n_class), ("method name", n_method), ("source file", n_file)].into_iter().enumerate()
        {
            let v = &mut tables[t];
            v.reserve(n.min((b.len() - pos) / 4));
            for j in 0..n {
                let left = b.len() - pos;
                if left < 4 {
                    return Err(truncated(format!(
                        "{what} {j} at byte {}: the input ends ({left} byte(s) left, a string length needs 4)",
                        at(pos)
                    )));
                }
                let units = be32(b, pos) as u64;
                if units * 2 > (left - 4) as u64 {
                    return Err(truncated(format!(
                        "{what} {j} at byte {} claims {units} UTF-16 units ({} bytes) but {} remain",
                        at(pos),
                        units * 2,
                        left - 4
                    )));
                }
                let end = pos + 4 + units as usize * 2;
                v.push(utf16be(&b[pos + 4..end]));
                pos = end;
            }
        }
        let [class_names, method_names, file_names] = tables;
        records.class_names = class_names;
        records.method_names = method_names;
        records.file_names = file_names;
        let len = pos as u64;
        if pos < b.len() {
            match thread_names(&b[pos..]) {
                Some(names) => records.thread_names = names,
                None => problems.push(format!(
                    "{} byte(s) after the string tables (from byte {}) ignored",
                    b.len() - pos,
                    at(pos)
                )),
            }
        }
        Ok(Blob { layout, count_field, string_table_offset, len, records })
    }
}

/// The optional thread-name table, when `b` holds exactly one.
pub(super) fn thread_names(b: &[u8]) -> Option<Vec<(u16, String)>> {
    if b.len() < 4 {
        return None;
    }
    let n = be32(b, 0) as usize;
    let mut pos = 4;
    let mut out = Vec::with_capacity(n.min((b.len() - 4) / 6));
    for _ in 0..n {
        if b.len() - pos < 6 {
            return None;
        }
        let id = be16(b, pos);
        let units = be32(b, pos + 2) as usize;
        if units > (b.len() - pos - 6) / 2 {
            return None;
        }
        let end = pos + 6 + units * 2;
        out.push((id, utf16be(&b[pos + 6..end])));
        pos = end;
    }
    (pos == b.len()).then_some(out)
}
