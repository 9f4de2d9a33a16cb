//! Perfetto `ModuleSymbols` packets, as `traceconv symbolize` writes them, so that
//! `cat trace symbols > symbolized` works with heapconv and with Perfetto's own tools.
//!
//! One serialized `Trace` per symbolized mapping (mappings with a build id, in mapping order),
//! each holding one `TracePacket` with only `module_symbols` (no timestamp, no sequence):
//! `path` as the trace names the mapping, `build_id` as the raw bytes of the trace, and one
//! `AddressSymbols` per distinct `rel_pc` (uncorrected, in frame order) whose `lines` go
//! innermost first with function name, source file (`??` when unknown, as llvm-symbolizer
//! says) and line. The packet and `module_symbols` lengths are 4-byte (redundant) varints, as
//! Perfetto's protozero writes them, so the bytes equal traceconv's.

use prost::Message;

use crate::model::{MappingId, Tables};
use crate::proto::perfetto as pb;

/// Encodes the symbols of every frame with lines, per mapping.
pub fn encode_module_symbols(tables: &Tables) -> Vec<u8> {
    let mut per_mapping: Vec<Vec<pb::AddressSymbols>> = vec![Vec::new(); tables.mappings().len()];
    let mut seen: Vec<std::collections::HashSet<u64>> = vec![Default::default(); tables.mappings().len()];
    for f in tables.frames() {
        let Some(m) = f.mapping else { continue };
        if f.lines.is_empty() || !seen[m.0 as usize].insert(f.rel_pc) {
            continue;
        }
        let lines = f
            .lines
            .iter()
            .map(|l| {
                let file = tables.strings.get(l.file);
                pb::Line {
                    function_name: Some(tables.strings.get(l.function).to_owned()),
                    source_file_name: Some(if file.is_empty() { "??".to_owned() } else { file.to_owned() }),
                    line_number: Some(l.line),
                }
            })
            .collect();
        per_mapping[m.0 as usize].push(pb::AddressSymbols { address: Some(f.rel_pc), lines });
    }
    let mut out = Vec::new();
    for (i, syms) in per_mapping.into_iter().enumerate() {
        let mapping = tables.mapping(MappingId(i as u32));
        if syms.is_empty() || mapping.build_id.is_empty() {
            continue;
        }
        let ms = pb::ModuleSymbols {
            path: Some(tables.strings.get(mapping.path).to_owned()),
            build_id: Some(mapping.build_id.to_vec()),
            address_symbols: syms,
        }
        .encode_to_vec();
        // Trace.packet (1) { TracePacket.module_symbols (61) { … } }, with the two outer
        // lengths written as Perfetto's protozero writes nested messages: 4-byte varints.
        out.push(0x0a);
        push_len4(&mut out, ms.len() + 2 + 4);
        out.extend_from_slice(&[0xea, 0x03]);
        push_len4(&mut out, ms.len());
        out.extend_from_slice(&ms);
    }
    out
}

/// A length as a 4-byte varint (valid protobuf: continuation bits set on the first three).
fn push_len4(out: &mut Vec<u8>, len: usize) {
    let len = u32::try_from(len).expect("ModuleSymbols under 256 MiB");
    assert!(len < 1 << 28, "ModuleSymbols under 256 MiB");
    out.extend_from_slice(&[
        (len & 0x7f) as u8 | 0x80,
        ((len >> 7) & 0x7f) as u8 | 0x80,
        ((len >> 14) & 0x7f) as u8 | 0x80,
        ((len >> 21) & 0x7f) as u8,
    ]);
}
