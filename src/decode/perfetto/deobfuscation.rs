//! `DeobfuscationMapping` packets (`TracePacket` field 64) already in a trace, as
//! `traceconv deobfuscate` and `heapconv deobfuscate` write them and `cat trace mapping`
//! appends them. Trace processor keeps every such packet and applies them all once the whole
//! trace is read, so they are read here in a pass of their own, before the profiles.

use prost::Message;

use super::reader::PacketReader;
use crate::decode::input::Input;
use crate::decode::wire::Wire;
use crate::model::deobfuscation::{DeobfuscationTable, ObfuscatedClass, ObfuscatedMember};
use crate::proto::perfetto as pb;

/// True when a serialized TracePacket has field 64 (deobfuscation_mapping) at top level.
fn has_mapping(b: &[u8]) -> bool {
    let mut w = Wire::new(b);
    while !w.done() {
        let Some((field, wire)) = w.tag() else { return false };
        if field == 64 && wire == 2 {
            return true;
        }
        if w.skip(u64::from(wire)).is_none() {
            return false;
        }
    }
    false
}

fn member(m: &pb::ObfuscatedMember) -> Option<ObfuscatedMember> {
    let lines = |a: Option<u32>, b: Option<u32>| a.or(b).map(|a| (a, b.unwrap_or(a)));
    Some(ObfuscatedMember {
        obfuscated: m.obfuscated_name.clone().filter(|s| !s.is_empty())?,
        deobfuscated: m.deobfuscated_name.clone().filter(|s| !s.is_empty())?,
        obfuscated_lines: lines(m.obfuscated_line_start, m.obfuscated_line_end),
        source_lines: lines(m.source_line_start, m.source_line_end),
    })
}

/// The table one packet holds (classes without both names are left out, as are members).
pub fn mapping_table(m: &pb::DeobfuscationMapping) -> DeobfuscationTable {
    let classes = m
        .obfuscated_classes
        .iter()
        .filter_map(|c| {
            Some(ObfuscatedClass {
                obfuscated: c.obfuscated_name.clone().filter(|s| !s.is_empty())?,
                deobfuscated: c.deobfuscated_name.clone().filter(|s| !s.is_empty())?,
                fields: c.obfuscated_members.iter().filter_map(member).collect(),
                methods: c.obfuscated_methods.iter().filter_map(member).collect(),
            })
        })
        .collect();
    DeobfuscationTable { package: m.package_name.clone().unwrap_or_default(), classes }
}

/// Reads the whole input once and returns its `DeobfuscationMapping` packets' tables, in trace
/// order. Damage is not an error here: the main pass reports it. Packets inside
/// `compressed_packets` bundles are not looked at (writers append mappings as plain packets).
pub fn scan_deobfuscation_mappings(input: &mut Input, max_packet: u64) -> Vec<DeobfuscationTable> {
    let mut out = Vec::new();
    let size = if input.gzipped { None } else { input.file_size };
    let name = input.name.clone();
    let mut reader = PacketReader::new(input.reader(), &name, size, max_packet);
    while let Ok(Some(p)) = reader.next_packet() {
        if has_mapping(p.bytes)
            && let Ok(pkt) = pb::TracePacket::decode(p.bytes)
            && let Some(m) = &pkt.deobfuscation_mapping
        {
            out.push(mapping_table(m));
        }
    }
    out
}
