//! Perfetto `ModuleSymbols` packets, as `traceconv symbolize` writes them, so that
//! `cat trace symbols > symbolized` works with heapconv and with Perfetto's own tools.
//!
//! One serialized `Trace` per symbolized mapping (mappings with a build id, in mapping order),
//! each holding one `TracePacket` with only `module_symbols` (no timestamp, no sequence):
//! `path` as the trace names the mapping, `build_id` as the raw bytes of the trace, and one
//! `AddressSymbols` per distinct `rel_pc` (uncorrected, in frame order) whose `lines` go
//! innermost first with function name, source file (`??` when unknown, as llvm-symbolizer
//! says) and line.
//!
//! # The same bytes as traceconv
//! traceconv serializes each `Trace` with Perfetto's protozero in a heap buffer of 4,096-byte
//! slices. protozero reserves 4 bytes for the length of every nested message and, when the
//! message is done, either writes the length there as a 4-byte redundant varint
//! (`0x80|a, 0x80|b, 0x80|c, d`) or, if the message is at most 127 bytes long and the
//! reservation is still in the slice being written (no new slice was started since), moves the
//! message back by 3 bytes and writes a 1-byte length. So short `Line`s and `AddressSymbols`
//! usually get 1-byte lengths, long ones and those that cross a 4 KiB slice boundary get 4
//! bytes; the same rule holds for the packet and `module_symbols` (4 bytes unless the whole
//! module's symbols are that short). `ZeroWriter` follows the
//! same slices and rules, so the output is byte-identical to traceconv's (ordinary protobuf
//! readers see the same messages either way).
//!
//! A length must fit the 4-byte form (under 256 MiB); a mapping whose symbols would not fit
//! one packet is written as several `ModuleSymbols` packets for the same module, which
//! Perfetto's importer accepts (traceconv cannot write such a module at all).

use crate::model::{Frame, MappingId, Tables};
use crate::wire::put_varint_at;

/// protozero's heap buffer slice size (`HeapBuffered`'s default, initial and maximum).
const SLICE: usize = 4096;
/// Longest length a 1-byte size field holds (`kMaxOneByteMessageLength`).
const MAX_ONE_BYTE: usize = 127;
/// A packet is closed when its `module_symbols` grows past this (the 4-byte form holds
/// lengths under 2^28).
const MAX_PACKET: usize = (1 << 28) - (1 << 20);

/// Encodes the symbols of every frame with lines, per mapping.
pub fn encode_module_symbols(tables: &Tables) -> Vec<u8> {
    let mut per_mapping: Vec<Vec<&Frame>> = vec![Vec::new(); tables.mappings().len()];
    let mut seen: Vec<rustc_hash::FxHashSet<u64>> = vec![Default::default(); tables.mappings().len()];
    for f in tables.frames() {
        let Some(m) = f.mapping else { continue };
        if f.lines.is_empty() || !seen[m.0 as usize].insert(f.rel_pc) {
            continue;
        }
        per_mapping[m.0 as usize].push(f);
    }
    let mut out = Vec::new();
    for (i, frames) in per_mapping.into_iter().enumerate() {
        let mapping = tables.mapping(MappingId(i as u32));
        if frames.is_empty() || mapping.build_id.is_empty() {
            continue;
        }
        let path = tables.strings.get(mapping.path).as_bytes();
        let mut w = ZeroWriter::default();
        let begin_packet = |w: &mut ZeroWriter| {
            // Trace.packet (1) { TracePacket.module_symbols (61) { path (1), build_id (2), … } }
            w.begin(&[0x0a]);
            w.begin(&[0xea, 0x03]);
            w.bytes(1, path);
            w.bytes(2, &mapping.build_id);
        };
        begin_packet(&mut w);
        let mut packet_start = w.out.len();
        for f in frames {
            if w.out.len() - packet_start > MAX_PACKET {
                w.end();
                w.end();
                out.append(&mut w.out);
                w = ZeroWriter::default();
                begin_packet(&mut w);
                packet_start = w.out.len();
            }
            w.begin(&[0x1a]); // ModuleSymbols.address_symbols (3)
            w.varint(1, f.rel_pc);
            for l in &f.lines {
                let file = tables.strings.get(l.file);
                w.begin(&[0x12]); // AddressSymbols.lines (2)
                w.bytes(1, tables.strings.get(l.function).as_bytes());
                w.bytes(2, if file.is_empty() { b"??" } else { file.as_bytes() });
                w.varint(3, u64::from(l.line));
                w.end();
            }
            w.end();
        }
        w.end();
        w.end();
        out.append(&mut w.out);
    }
    out
}

/// A nested message being written: where its 4-byte size field is, and in which slice.
struct Open {
    size_at: usize,
    slice: usize,
}

/// The bytes protozero's `HeapBuffered` writer produces, stitched, with its slice accounting:
/// which slice is being written and how much room it has left.
#[derive(Default)]
struct ZeroWriter {
    out: Vec<u8>,
    slice: usize,
    room: usize,
    open: Vec<Open>,
}

impl ZeroWriter {
    /// Appends bytes, starting new slices as protozero does when the current one is full.
    fn write(&mut self, b: &[u8]) {
        let mut left = b.len();
        while left > 0 {
            if self.room == 0 {
                self.new_slice();
            }
            let n = left.min(self.room);
            self.room -= n;
            left -= n;
        }
        self.out.extend_from_slice(b);
    }

    fn new_slice(&mut self) {
        self.slice += 1;
        self.room = SLICE;
    }

    fn varint(&mut self, field: u32, v: u64) {
        let mut b = [0u8; 20];
        let n = put_varint_at(&mut b, 0, u64::from(field) << 3);
        let n = put_varint_at(&mut b, n, v);
        self.write(&b[..n]);
    }

    fn bytes(&mut self, field: u32, v: &[u8]) {
        let mut b = [0u8; 20];
        let n = put_varint_at(&mut b, 0, (u64::from(field) << 3) | 2);
        let n = put_varint_at(&mut b, n, v.len() as u64);
        self.write(&b[..n]);
        self.write(v);
    }

    /// Starts a nested message: its tag, then 4 bytes reserved for its length (in a new slice
    /// if fewer than 4 bytes are left in this one).
    fn begin(&mut self, tag: &[u8]) {
        self.write(tag);
        if self.room < 4 {
            self.new_slice();
        }
        self.room -= 4;
        self.open.push(Open { size_at: self.out.len(), slice: self.slice });
        self.out.extend_from_slice(&[0; 4]);
    }

    /// Ends the innermost nested message: a 1-byte length when it is short and still in the
    /// slice of its size field (the message moves back 3 bytes), else a 4-byte varint.
    fn end(&mut self) {
        let Some(o) = self.open.pop() else { return };
        let len = self.out.len() - o.size_at - 4;
        if len <= MAX_ONE_BYTE && o.slice == self.slice {
            self.out[o.size_at] = len as u8;
            self.out.drain(o.size_at + 1..o.size_at + 4);
            self.room += 3;
        } else {
            let len = len as u32; // under 2^28: MAX_PACKET
            self.out[o.size_at..o.size_at + 4].copy_from_slice(&[
                (len & 0x7f) as u8 | 0x80,
                ((len >> 7) & 0x7f) as u8 | 0x80,
                ((len >> 14) & 0x7f) as u8 | 0x80,
                ((len >> 21) & 0x7f) as u8,
            ]);
        }
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::model::{Line, Mapping};
    use crate::proto::perfetto as pb;

    /// One mapping with `n` frames, frame `i` with one line whose function name is
    /// `name_len(i)` bytes long.
    fn tables(n: u64, name_len: impl Fn(u64) -> usize) -> Tables {
        let mut t = Tables::default();
        let path = t.strings.intern("/lib/libx.so");
        let m = t.intern_mapping(Mapping {
            path,
            build_id: vec![0xab; 20].into(),
            start: 0,
            end: 0x10000,
            start_offset: 0,
            exact_offset: 0,
            load_bias: 0,
        });
        for i in 0..n {
            let f = t.intern_frame(Some(m), 0x1000 + i, crate::model::StringId(0));
            let function = t.strings.intern(&"f".repeat(name_len(i)).replacen('f', &format!("{i}_"), 1));
            let file = t.strings.intern("x.c");
            t.frames_mut()[f.0 as usize].lines =
                vec![Line { function, system_name: function, file, line: 7, column: 0 }];
        }
        t
    }

    /// Walks `ModuleSymbols.address_symbols` of the one packet and returns, per entry, the
    /// number of bytes its length field takes and the stitched offset of that field.
    fn address_symbol_length_fields(out: &[u8]) -> Vec<(usize, usize)> {
        // 0a LLLL ea03 LLLL, then path (0a len ...) and build id (12 len ...).
        assert_eq!(&out[..1], &[0x0a]);
        assert_eq!(&out[5..7], &[0xea, 0x03]);
        let mut pos = 11;
        let mut fields = Vec::new();
        while pos < out.len() {
            let tag = out[pos];
            pos += 1;
            let start = pos;
            let (mut len, mut shift) = (0usize, 0);
            loop {
                let b = out[pos];
                pos += 1;
                len |= usize::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
            if tag == 0x1a {
                fields.push((pos - start, start));
            }
            pos += len;
        }
        fields
    }

    #[test]
    fn short_messages_get_one_byte_lengths_long_ones_and_slice_crossers_four() {
        // 200 entries of ~30 bytes: several 4 KiB slices, so some entries cross a boundary.
        let t = tables(200, |_| 10);
        let out = encode_module_symbols(&t);
        let fields = address_symbol_length_fields(&out);
        assert_eq!(fields.len(), 200);
        let four: Vec<usize> = fields.iter().filter(|f| f.0 == 4).map(|f| f.1).collect();
        assert!(fields.iter().all(|f| f.0 == 1 || f.0 == 4), "{fields:?}");
        // Every 4-byte length belongs to an entry that crossed into a new slice: with the
        // 4-byte fields counted, slice k ends after 4096*k bytes of protozero's writes, and
        // compactions give back 3 bytes each; here, just check their number and spacing.
        assert!(!four.is_empty() && four.len() < 5, "one crossing per slice: {four:?}");
        for w in four.windows(2) {
            assert!(w[1] - w[0] > 3500, "crossings ~4 KiB apart: {four:?}");
        }
        // Long entries (> 127 bytes) always get 4 bytes.
        let t = tables(3, |i| if i == 1 { 200 } else { 10 });
        let fields = address_symbol_length_fields(&encode_module_symbols(&t));
        assert_eq!(fields.iter().map(|f| f.0).collect::<Vec<_>>(), vec![1, 4, 1]);
        // Ordinary protobuf readers see the same messages.
        let t = tables(200, |i| (i as usize * 7) % 150);
        let out = encode_module_symbols(&t);
        let trace = pb::Trace::decode(&out[..]).expect("valid protobuf");
        let ms = trace.packet[0].module_symbols.as_ref().unwrap();
        assert_eq!(ms.address_symbols.len(), 200);
        assert_eq!(ms.address_symbols[199].address, Some(0x1000 + 199));
        assert_eq!(ms.address_symbols[42].lines[0].line_number, Some(7));
    }
}
