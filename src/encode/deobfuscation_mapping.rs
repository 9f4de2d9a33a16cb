//! Perfetto `DeobfuscationMapping` packets, as `traceconv deobfuscate` writes them, so that
//! `cat trace mapping > deobfuscated` works with Perfetto's own tools.
//!
//! One serialized `Trace` per map, holding one `TracePacket` with only
//! `deobfuscation_mapping` (field 64): `package_name`, then one `ObfuscatedClass` per class
//! (obfuscated and original name, fields as `obfuscated_members`, methods as
//! `obfuscated_methods`). Unlike traceconv, which keeps one name per obfuscated method, every
//! method line of the map is written with its R8 line ranges (`obfuscated_line_start/end`,
//! `source_line_start/end`), and a method inlined from another class is named fully
//! qualified, as Perfetto's newer writer and importer do.

use prost::Message;

use crate::model::deobfuscation::{DeobfuscationTable, ObfuscatedMember};
use crate::proto::perfetto as pb;

fn member(m: &ObfuscatedMember) -> pb::ObfuscatedMember {
    pb::ObfuscatedMember {
        obfuscated_name: Some(m.obfuscated.clone()),
        deobfuscated_name: Some(m.deobfuscated.clone()),
        obfuscated_line_start: m.obfuscated_lines.map(|l| l.0),
        obfuscated_line_end: m.obfuscated_lines.map(|l| l.1),
        source_line_start: m.source_lines.map(|l| l.0),
        source_line_end: m.source_lines.map(|l| l.1),
    }
}

/// Encodes one map as a `Trace` with one `DeobfuscationMapping` packet.
pub fn encode_deobfuscation_mapping(table: &DeobfuscationTable) -> Vec<u8> {
    let mapping = pb::DeobfuscationMapping {
        package_name: Some(table.package.clone()),
        version_code: None,
        obfuscated_classes: table
            .classes
            .iter()
            .map(|c| pb::ObfuscatedClass {
                obfuscated_name: Some(c.obfuscated.clone()),
                deobfuscated_name: Some(c.deobfuscated.clone()),
                obfuscated_members: c.fields.iter().map(member).collect(),
                obfuscated_methods: c.methods.iter().map(member).collect(),
            })
            .collect(),
    };
    let trace =
        pb::Trace { packet: vec![pb::TracePacket { deobfuscation_mapping: Some(mapping), ..Default::default() }] };
    trace.encode_to_vec()
}
