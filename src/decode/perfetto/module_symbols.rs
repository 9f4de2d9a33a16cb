//! Perfetto `ModuleSymbols` packets (TracePacket field 61) already in a trace — typically
//! appended by `cat trace symbols > symbolized` — applied to frames exactly as Perfetto's trace
//! processor applies them: a packet names a mapping by path and raw build id (both must be
//! equal), and each `AddressSymbols` gives the lines (innermost first) of the frames of that
//! mapping whose `rel_pc` equals its address. An empty source file means no file and no line.
//! They replace the line a frame carries of its own (`Frame.line_number`), as in trace processor.
//!
//! Because such packets usually come after the dumps, the decoder first scans the input for
//! them when it can read it twice (a file); from standard input only packets that come before a
//! dump's end can apply to it.

use std::collections::HashMap;

use prost::Message;

use super::reader::PacketReader;
use crate::decode::input::{AtRest, Input};
use crate::decode::wire::StreamVarint;
use crate::decode::wire::Wire;
use crate::error::Result;
use crate::model::{Line, Tables};
use crate::proto::perfetto as pb;

type OwnedLine = (String, String, u32);

/// Symbols by (mapping path, raw build id) and address.
#[derive(Debug, Default, PartialEq)]
pub struct SymbolPackets {
    by_module: HashMap<(String, Vec<u8>), HashMap<u64, Vec<OwnedLine>>>,
    /// ModuleSymbols packets seen.
    pub packets: u64,
}

impl SymbolPackets {
    /// True when no symbols were found.
    pub fn is_empty(&self) -> bool {
        self.by_module.is_empty()
    }

    /// Adds one packet's symbols (the first symbols given for an address win).
    pub fn add(&mut self, ms: &pb::ModuleSymbols) {
        self.packets += 1;
        let key = (ms.path.clone().unwrap_or_default(), ms.build_id.clone().unwrap_or_default());
        let module = self.by_module.entry(key).or_default();
        for a in &ms.address_symbols {
            if a.lines.is_empty() {
                continue;
            }
            let lines = a
                .lines
                .iter()
                .map(|l| {
                    let file = l.source_file_name.clone().unwrap_or_default();
                    let line = if file.is_empty() { 0 } else { l.line_number.unwrap_or(0) };
                    (l.function_name.clone().unwrap_or_default(), file, line)
                })
                .collect();
            module.entry(a.address.unwrap_or(0)).or_insert(lines);
        }
    }

    /// Gives lines to the frames in `range` (frames just interned) whose mapping and rel_pc the
    /// symbols name; returns how many frames got lines. A frame that came with a line of its
    /// own (`Frame.line_number`/`source_path_iid`) takes the symbols' lines instead, as trace
    /// processor replaces such a frame's symbol with the ModuleSymbols one.
    pub fn apply(&self, tables: &mut Tables, range: std::ops::Range<usize>) -> u64 {
        if self.by_module.is_empty() {
            return 0;
        }
        let mut n = 0;
        let mut resolved: HashMap<u32, Option<&HashMap<u64, Vec<OwnedLine>>>> = HashMap::new();
        for i in range {
            let f = &tables.frames()[i];
            let Some(m) = f.mapping else { continue };
            let rel_pc = f.rel_pc;
            let module = *resolved.entry(m.0).or_insert_with(|| {
                let mapping = tables.mapping(m);
                let key = (tables.strings.get(mapping.path).to_owned(), mapping.build_id.to_vec());
                self.by_module.get(&key)
            });
            let Some(lines) = module.and_then(|md| md.get(&rel_pc)) else { continue };
            let lines: Vec<Line> = lines
                .iter()
                .map(|(func, file, line)| {
                    let name = tables.strings.intern(func);
                    Line {
                        function: name,
                        system_name: name,
                        file: tables.strings.intern(file),
                        line: *line,
                        column: 0,
                    }
                })
                .collect();
            tables.frames_mut()[i].lines = lines;
            n += 1;
        }
        n
    }
}

/// True when a serialized TracePacket has field 61 (module_symbols) at top level.
fn has_module_symbols(b: &[u8]) -> bool {
    let mut w = Wire::new(b);
    while !w.done() {
        let Some((field, wire)) = w.tag() else { return false };
        if field == 61 && wire == 2 {
            return w.varint().is_some();
        }
        if w.skip(u64::from(wire)).is_none() {
            return false;
        }
    }
    false
}

/// Reads the whole input once and collects its ModuleSymbols packets. Damage is not an error
/// here: the main pass reports it.
///
/// A plain file or an in-memory input is read without copying its packets: only each packet's
/// top-level tags and lengths are read, and its fields are skipped by length (the whole packet
/// is read only when it holds ModuleSymbols). The packets and what is found in them are the
/// same as a reading of every byte finds.
pub fn scan_module_symbols(input: &mut Input, max_packet: u64) -> Result<SymbolPackets> {
    if let Some(out) = scan_module_symbols_at_rest(input, max_packet) {
        return Ok(out);
    }
    let mut out = SymbolPackets::default();
    let mut reader = PacketReader::for_input(input, max_packet);
    while let Ok(Some(p)) = reader.next_packet() {
        out.scan_packet(p.bytes);
    }
    Ok(out)
}

/// [`scan_module_symbols`] of an input at rest (a plain file, an in-memory input), reading only
/// the packets' tags and lengths (and the packets that hold ModuleSymbols) from where they
/// lie, without touching the input's own reader; `None` for other inputs.
pub fn scan_module_symbols_at_rest(input: &Input, max_packet: u64) -> Option<SymbolPackets> {
    match (input.at_rest()?, input.file_size) {
        (AtRest::Memory(b), _) => Some(scan_headers(std::io::Cursor::new(b), b.len() as u64, max_packet)),
        (AtRest::File(path), Some(size)) => {
            let f = std::fs::File::open(path).ok()?;
            Some(scan_headers(std::io::BufReader::with_capacity(64 << 10, f), size, max_packet))
        }
        (AtRest::File(_), None) => None,
    }
}

impl SymbolPackets {
    /// Adds the symbols of one serialized top-level TracePacket, if it holds ModuleSymbols
    /// (what [`scan_module_symbols`] does with each packet).
    pub fn scan_packet(&mut self, b: &[u8]) {
        if has_module_symbols(b)
            && let Ok(pkt) = pb::TracePacket::decode(b)
            && let Some(ms) = &pkt.module_symbols
        {
            self.add(ms);
        }
    }
}

/// A byte source [`scan_headers`] can skip forward and back in.
trait Skipping: std::io::BufRead {
    /// Moves `n` bytes from the current position.
    fn skip(&mut self, n: i64) -> std::io::Result<()>;
}

impl Skipping for std::io::BufReader<std::fs::File> {
    fn skip(&mut self, n: i64) -> std::io::Result<()> {
        // Within the buffer when it can: no system call for a short field.
        self.seek_relative(n)
    }
}

impl Skipping for std::io::Cursor<&[u8]> {
    fn skip(&mut self, n: i64) -> std::io::Result<()> {
        use std::io::Seek;
        self.seek(std::io::SeekFrom::Current(n)).map(|_| ())
    }
}

/// A position in a [`Skipping`] source, counted from the start of the trace.
struct Walk<R> {
    r: R,
    pos: u64,
}

impl<R: Skipping> Walk<R> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.r.fill_buf().ok()?.first()?;
        self.r.consume(1);
        self.pos += 1;
        Some(b)
    }

    fn skip(&mut self, n: u64) -> Option<()> {
        self.r.skip(i64::try_from(n).ok()?).ok()?;
        self.pos += n;
        Some(())
    }

    /// A varint of the container, as [`PacketReader`] reads it (`None` at the end, or where
    /// the reader would stop).
    fn container_varint(&mut self) -> Option<u64> {
        let mut v = StreamVarint::default();
        loop {
            if let Some(value) = v.push(self.byte()?).ok()? {
                return Some(value);
            }
        }
    }

    /// A varint inside a packet ending at `end`, as [`Wire::varint`] reads it.
    fn packet_varint(&mut self, end: u64) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            if self.pos >= end {
                return None;
            }
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// Skips `n` bytes inside a packet ending at `end` (`None` past its end).
    fn packet_skip(&mut self, n: u64, end: u64) -> Option<()> {
        if n > end - self.pos {
            return None;
        }
        self.skip(n)
    }

    /// [`has_module_symbols`] of the packet from here to `end`, reading only its tags and
    /// lengths.
    fn has_module_symbols(&mut self, end: u64) -> bool {
        while self.pos < end {
            let Some(t) = self.packet_varint(end) else { return false };
            let (field, wire) = (t >> 3, t & 7);
            if field == 61 && wire == 2 {
                return self.packet_varint(end).is_some();
            }
            let skipped = match wire {
                0 => self.packet_varint(end).map(|_| ()),
                1 => self.packet_skip(8, end),
                2 => self.packet_varint(end).and_then(|n| self.packet_skip(n, end)),
                5 => self.packet_skip(4, end),
                _ => None,
            };
            if skipped.is_none() {
                return false;
            }
        }
        false
    }
}

/// [`scan_module_symbols`] of `size` bytes at rest: the packets [`PacketReader`] reads (it
/// stops where the reader would report damage), each walked by its top-level tags and
/// lengths, read whole only when it holds ModuleSymbols.
fn scan_headers<R: Skipping>(r: R, size: u64, max_packet: u64) -> SymbolPackets {
    let mut out = SymbolPackets::default();
    let mut w = Walk { r, pos: 0 };
    let mut body = Vec::new();
    while let Some(tag) = w.container_varint() {
        if tag != (1 << 3 | 2) {
            break;
        }
        let Some(len) = w.container_varint() else { break };
        if len > max_packet || len > size.saturating_sub(w.pos) {
            break;
        }
        let (start, end) = (w.pos, w.pos + len);
        if w.has_module_symbols(end) {
            let back = i64::try_from(w.pos - start).unwrap_or(i64::MAX);
            body.clear();
            body.resize(len as usize, 0);
            if w.r.skip(-back).is_err() || w.r.read_exact(&mut body).is_err() {
                break;
            }
            w.pos = end;
            out.scan_packet(&body);
        } else if w.skip(end - w.pos).is_none() {
            break;
        }
    }
    out
}
