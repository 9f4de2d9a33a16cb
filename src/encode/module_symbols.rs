//! Perfetto `ModuleSymbols` packets, as `traceconv symbolize` writes them, so that
//! `cat trace symbols > symbolized` works with heapconv and with Perfetto's own tools.
//!
//! One serialized `Trace` per symbolized mapping (mappings with a build id, in mapping order),
//! each holding one `TracePacket` with only `module_symbols` (no timestamp, no sequence):
//! `path` as the trace names the mapping, `build_id` as the raw bytes of the trace, and one
//! `AddressSymbols` per distinct `rel_pc` (uncorrected, in frame order) whose `lines` go
//! innermost first with function name, source file (`??` when unknown, as llvm-symbolizer
//! says) and line.

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
        let trace = pb::Trace {
            packet: vec![pb::TracePacket {
                module_symbols: Some(pb::ModuleSymbols {
                    path: Some(tables.strings.get(mapping.path).to_owned()),
                    build_id: Some(mapping.build_id.to_vec()),
                    address_symbols: syms,
                }),
                ..Default::default()
            }],
        };
        trace.encode(&mut out).expect("a Vec grows as needed");
    }
    out
}
