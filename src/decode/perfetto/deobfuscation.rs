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

/// What a first pass over a trace tells deobfuscation: the `DeobfuscationMapping` packets, and
/// what trace processor uses to tell the package of a Java frame or heap graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceJavaInfo {
    /// The `DeobfuscationMapping` packets' tables, in trace order (those inside
    /// `compressed_packets` bundles too).
    pub tables: Vec<DeobfuscationTable>,
    /// `packages_list` (`TracePacket` field 47): (uid, package name), in trace order.
    pub packages: Vec<(u64, String)>,
    /// `process_tree` processes: pid → (uid, first `cmdline` word), the last seen.
    pub processes: std::collections::BTreeMap<u64, (Option<u64>, Option<String>)>,
    /// The pids of heapprofd dumps (`ProfilePacket.process_dumps`), in the order first seen.
    pub profiled_pids: Vec<u64>,
}

impl TraceJavaInfo {
    /// The package of process `pid` as trace processor tells it: the process's app id (its
    /// uid modulo 100,000) looked up in `packages_list` (the first package with that uid).
    pub fn package_of_pid(&self, pid: u64) -> Option<&str> {
        let uid = self.processes.get(&pid)?.0?;
        let appid = uid % 100_000;
        self.packages.iter().find(|(u, _)| *u == appid).map(|(_, n)| n.as_str())
    }

    fn packet(&mut self, b: &[u8], max_bundle: u64, nested: bool) {
        let mut w = Wire::new(b);
        while !w.done() {
            let Some((field, wire)) = w.tag() else { return };
            if wire != 2 {
                if w.skip(u64::from(wire)).is_none() {
                    return;
                }
                continue;
            }
            let Some(v) = w.bytes() else { return };
            match field {
                64 => {
                    if let Ok(m) = pb::DeobfuscationMapping::decode(v) {
                        self.tables.push(mapping_table(&m));
                    }
                }
                47 => self.packages_list(v),
                2 => self.process_tree(v),
                37 => self.profile_packet(v),
                50 if !nested => {
                    if let Ok(inner) = crate::decode::input::inflate_bundle(v, max_bundle, "compressed_packets") {
                        let mut r = Wire::new(&inner);
                        while !r.done() {
                            match r.tag() {
                                Some((1, 2)) => match r.bytes() {
                                    Some(p) => self.packet(p, max_bundle, true),
                                    None => break,
                                },
                                Some((_, wt)) if r.skip(u64::from(wt)).is_some() => {}
                                _ => break,
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn packages_list(&mut self, b: &[u8]) {
        for p in fields(b, 1) {
            let (mut name, mut uid) = (None, None);
            let mut w = Wire::new(p);
            while let Some((f, wt)) = w.tag() {
                match (f, wt) {
                    (1, 2) => name = w.bytes().map(|s| String::from_utf8_lossy(s).into_owned()),
                    (2, 0) => uid = w.varint(),
                    _ if w.skip(u64::from(wt)).is_some() => {}
                    _ => break,
                }
            }
            if let (Some(n), Some(u)) = (name, uid) {
                self.packages.push((u, n));
            }
        }
    }

    fn process_tree(&mut self, b: &[u8]) {
        for p in fields(b, 1) {
            let (mut pid, mut uid, mut cmd) = (None, None, None);
            let mut w = Wire::new(p);
            while let Some((f, wt)) = w.tag() {
                match (f, wt) {
                    (1, 0) => pid = w.varint(),
                    (5, 0) => uid = w.varint().map(|u| u64::from(u as u32)),
                    (3, 2) => {
                        let s = w.bytes().map(|s| String::from_utf8_lossy(s).into_owned());
                        cmd = cmd.or(s);
                    }
                    _ if w.skip(u64::from(wt)).is_some() => {}
                    _ => break,
                }
            }
            if let Some(pid) = pid {
                let e = self.processes.entry(pid).or_default();
                e.0 = uid.or(e.0);
                e.1 = cmd.or(e.1.take());
            }
        }
    }

    fn profile_packet(&mut self, b: &[u8]) {
        for d in fields(b, 5) {
            let mut w = Wire::new(d);
            while let Some((f, wt)) = w.tag() {
                if (f, wt) == (1, 0) {
                    if let Some(pid) = w.varint()
                        && !self.profiled_pids.contains(&pid)
                    {
                        self.profiled_pids.push(pid);
                    }
                    break;
                }
                if w.skip(u64::from(wt)).is_none() {
                    break;
                }
            }
        }
    }
}

/// The length-delimited values of field `field` at the top level of message `b`.
fn fields(b: &[u8], field: u64) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut w = Wire::new(b);
    while let Some((f, wt)) = w.tag() {
        if f == field && wt == 2 {
            match w.bytes() {
                Some(v) => out.push(v),
                None => break,
            }
        } else if w.skip(u64::from(wt)).is_none() {
            break;
        }
    }
    out
}

/// Reads the whole input once for what deobfuscation needs ([`TraceJavaInfo`]), looking
/// inside `compressed_packets` bundles (up to `max_bundle` bytes each) as trace processor
/// does. Damage is not an error here: the main pass reports it.
pub fn scan_trace_java(input: &mut Input, max_packet: u64, max_bundle: u64) -> TraceJavaInfo {
    let mut out = TraceJavaInfo::default();
    let size = if input.gzipped { None } else { input.file_size };
    let name = input.name.clone();
    let mut reader = PacketReader::new(input.reader(), &name, size, max_packet);
    while let Ok(Some(p)) = reader.next_packet() {
        out.packet(p.bytes, max_bundle, false);
    }
    out
}

/// Reads the whole input once and returns its `DeobfuscationMapping` packets' tables, in trace
/// order (see [`scan_trace_java`]; bundles are capped at 256 MiB).
pub fn scan_deobfuscation_mappings(input: &mut Input, max_packet: u64) -> Vec<DeobfuscationTable> {
    scan_trace_java(input, max_packet, 256 << 20).tables
}
