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
use crate::decode::input::Input;
use crate::decode::wire::Wire;
use crate::error::Result;
use crate::model::{Line, Tables};
use crate::proto::perfetto as pb;

type OwnedLine = (String, String, u32);

/// Symbols by (mapping path, raw build id) and address.
#[derive(Debug, Default)]
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
pub fn scan_module_symbols(input: &mut Input, max_packet: u64) -> Result<SymbolPackets> {
    let mut out = SymbolPackets::default();
    let mut reader = PacketReader::for_input(input, max_packet);
    while let Ok(Some(p)) = reader.next_packet() {
        out.scan_packet(p.bytes);
    }
    Ok(out)
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
