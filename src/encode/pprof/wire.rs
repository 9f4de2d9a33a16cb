//! Messages written straight to wire format (samples, locations, functions, varints): the
//! bytes prost writes for the same messages.

use super::*;

/// Appends the Location message (Profile field 4) of location `id` to `out`: its mapping id
/// (0: none), address (0: none) and per line (function id, line, column). The bytes are those
/// prost writes for a `pp::Location`.
pub(super) fn write_location(out: &mut Vec<u8>, id: u64, mapping_id: u64, address: u64, lines: &[(u64, u32, u32)]) {
    use prost::encoding::{encode_varint, encoded_len_varint};
    let mut body = 1 + encoded_len_varint(id);
    if mapping_id != 0 {
        body += 1 + encoded_len_varint(mapping_id);
    }
    if address != 0 {
        body += 1 + encoded_len_varint(address);
    }
    for &(f, line, column) in lines {
        let n = line_len(f, line, column);
        body += 1 + encoded_len_varint(n as u64) + n;
    }
    out.push(0x22);
    encode_varint(body as u64, out);
    out.push(0x08);
    encode_varint(id, out);
    if mapping_id != 0 {
        out.push(0x10);
        encode_varint(mapping_id, out);
    }
    if address != 0 {
        out.push(0x18);
        encode_varint(address, out);
    }
    for &(f, line, column) in lines {
        out.push(0x22);
        encode_varint(line_len(f, line, column) as u64, out);
        if f != 0 {
            out.push(0x08);
            encode_varint(f, out);
        }
        if line != 0 {
            out.push(0x10);
            encode_varint(u64::from(line), out);
        }
        if column != 0 {
            out.push(0x18);
            encode_varint(u64::from(column), out);
        }
    }
}

/// Appends the Function message (Profile field 5) `f` to `out`: the bytes prost writes.
pub(super) fn write_function(out: &mut Vec<u8>, f: &pp::Function) {
    use prost::encoding::{encode_varint, encoded_len_varint};
    let fields = [(0x08u8, f.id), (0x10, f.name as u64), (0x18, f.system_name as u64), (0x20, f.filename as u64)];
    let mut body: usize = fields.iter().filter(|x| x.1 != 0).map(|x| 1 + encoded_len_varint(x.1)).sum();
    if f.start_line != 0 {
        body += 1 + encoded_len_varint(f.start_line as u64);
    }
    out.push(0x2a);
    encode_varint(body as u64, out);
    for (key, v) in fields {
        if v != 0 {
            out.push(key);
            encode_varint(v, out);
        }
    }
    if f.start_line != 0 {
        out.push(0x28);
        encode_varint(f.start_line as u64, out);
    }
}
/// One sample label as string indexes: `str` 0 for a numeric label, `num_unit` 0 for none.
pub(super) struct WireLabel {
    pub(super) key: i64,
    pub(super) str: i64,
    pub(super) num: i64,
    pub(super) num_unit: i64,
}

/// Appends one `Sample` (Profile field 2) in wire format: packed `location_id` (1, given
/// already packed), packed `value` (2, int64 as two's-complement varints) and one `label` (3)
/// per label: `Label.key` (1), then `Label.str` (2) for a string label, or `Label.num` (3)
/// and, when it has one, `Label.num_unit` (4).
pub(super) fn write_sample(buf: &mut Vec<u8>, locs: &[u8], values: &[i64], labels: &[WireLabel]) {
    use prost::encoding::{encode_varint, encoded_len_varint};
    let locs_len = locs.len();
    let vals_len: usize = values.iter().map(|&v| encoded_len_varint(v as u64)).sum();
    let label_len = |l: &WireLabel| {
        let mut n = 1 + encoded_len_varint(l.key as u64);
        if l.str != 0 {
            n += 1 + encoded_len_varint(l.str as u64);
        } else {
            n += 1 + encoded_len_varint(l.num as u64);
            if l.num_unit != 0 {
                n += 1 + encoded_len_varint(l.num_unit as u64);
            }
        }
        n
    };
    let mut inner = 0;
    if !locs.is_empty() {
        inner += 1 + encoded_len_varint(locs_len as u64) + locs_len;
    }
    if !values.is_empty() {
        inner += 1 + encoded_len_varint(vals_len as u64) + vals_len;
    }
    for l in labels {
        let n = label_len(l);
        inner += 1 + encoded_len_varint(n as u64) + n;
    }
    buf.push(0x12);
    encode_varint(inner as u64, buf);
    if !locs.is_empty() {
        buf.push(0x0a);
        encode_varint(locs_len as u64, buf);
        buf.extend_from_slice(locs);
    }
    if !values.is_empty() {
        buf.push(0x12);
        encode_varint(vals_len as u64, buf);
        for &v in values {
            encode_varint(v as u64, buf);
        }
    }
    for l in labels {
        buf.push(0x1a);
        encode_varint(label_len(l) as u64, buf);
        buf.push(0x08);
        encode_varint(l.key as u64, buf);
        if l.str != 0 {
            buf.push(0x10);
            encode_varint(l.str as u64, buf);
        } else {
            buf.push(0x18);
            encode_varint(l.num as u64, buf);
            if l.num_unit != 0 {
                buf.push(0x20);
                encode_varint(l.num_unit as u64, buf);
            }
        }
    }
}

/// [`write_sample`] of a sample without labels: its length prefixes and values are put
/// together in small arrays and copied as pieces of a fixed size (a copy of known size is a
/// few moves, not a call), then the end put back; only the path is a copy of its own length
/// (this runs once per sample of every profile).
#[inline]
pub(super) fn write_plain_sample(buf: &mut Vec<u8>, locs: &[u8], values: &[i64]) {
    use prost::encoding::encoded_len_varint;
    if values.len() > 8 || locs.is_empty() || values.is_empty() {
        return write_sample(buf, locs, values, &[]);
    }
    // Up to 8 values of 10 bytes after their field key and length (3 bytes), with room to
    // copy 32 bytes from either start.
    let mut vals = [0u8; 3 + 80 + 32];
    let mut v = 3;
    for &x in values {
        v = put_varint_at(&mut vals, v, x as u64);
    }
    let vals_len = v - 3;
    // The values' key and length, right before them (the length takes 1 or 2 bytes).
    let start = if vals_len < 0x80 { 1 } else { 0 };
    vals[start] = 0x12;
    put_varint_at(&mut vals, start + 1, vals_len as u64);
    let tail = v - start;
    let inner = 1 + encoded_len_varint(locs.len() as u64) + locs.len() + tail;
    let mut head = [0u8; 16];
    head[0] = 0x12;
    let mut h = put_varint_at(&mut head, 1, inner as u64);
    head[h] = 0x0a;
    h = put_varint_at(&mut head, h + 1, locs.len() as u64);
    buf.reserve(16 + locs.len() + tail.max(32));
    let at = buf.len();
    buf.extend_from_slice(&head);
    buf.truncate(at + h);
    buf.extend_from_slice(locs);
    let at = buf.len();
    if tail <= 32 {
        buf.extend_from_slice(&vals[start..start + 32]);
        buf.truncate(at + tail);
    } else {
        buf.extend_from_slice(&vals[start..v]);
    }
}

/// Sets `used[id]` for every location id of the packed varints `arena[from..to]`. An index
/// kept in a register, not a slice advanced through memory (as `decode_varint` does).
#[inline]
pub(super) fn mark_used(arena: &[u8], from: usize, to: usize, used: &mut [u8]) {
    let mut j = from;
    while j < to {
        let mut id = 0usize;
        let mut shift = 0;
        loop {
            let b = arena[j];
            j += 1;
            id |= usize::from(b & 0x7f) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
        }
        used[id] = 1;
    }
}

/// Length of a Line message: function id, line and column, each written when not 0.
pub(super) fn line_len(function: u64, line: u32, column: u32) -> usize {
    use prost::encoding::encoded_len_varint;
    let mut n = 0;
    if function != 0 {
        n += 1 + encoded_len_varint(function);
    }
    if line != 0 {
        n += 1 + encoded_len_varint(u64::from(line));
    }
    if column != 0 {
        n += 1 + encoded_len_varint(u64::from(column));
    }
    n
}
