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
    /// The package of each Java frame whose mapping tells none, by the processes that use it
    /// ([`scan_frame_packages`]); filled only when the profiled processes are of several
    /// packages (else every such frame takes the one package). Default: empty.
    pub frame_packages: std::collections::HashMap<GuessedFrame, String>,
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
    let mut reader = PacketReader::for_input(input, max_packet);
    while let Ok(Some(p)) = reader.next_packet() {
        out.scan_packet(p.bytes, max_bundle);
    }
    out
}

impl TraceJavaInfo {
    /// Adds what one serialized top-level TracePacket tells (see [`scan_trace_java`]),
    /// expanding a `compressed_packets` bundle of at most `max_bundle` bytes.
    pub fn scan_packet(&mut self, b: &[u8], max_bundle: u64) {
        self.packet(b, max_bundle, false);
    }
}

/// Reads the whole input once and returns its `DeobfuscationMapping` packets' tables, in trace
/// order (see [`scan_trace_java`]; bundles are capped at 256 MiB).
pub fn scan_deobfuscation_mappings(input: &mut Input, max_packet: u64) -> Vec<DeobfuscationTable> {
    scan_trace_java(input, max_packet, 256 << 20).tables
}

/// A Java frame whose package trace processor guesses from the processes that use it: its
/// mapping's path (as heapconv joins it, `/a/b`), its `rel_pc` and its function name.
pub type GuessedFrame = (String, u64, String);

impl TraceJavaInfo {
    /// The distinct packages (`packages_list`, by uid) of the profiled processes, in the order
    /// the processes were first seen.
    pub fn profiled_packages(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for &pid in &self.profiled_pids {
            if let Some(p) = self.package_of_pid(pid)
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
        out
    }
}

/// One sequence's interned data, kept only as far as the package guess needs it.
#[derive(Default)]
struct SeqFrames {
    /// Function names with a `.` (Java frames).
    names: std::collections::HashMap<u64, String>,
    paths: std::collections::HashMap<u64, String>,
    /// Mapping iid → joined path.
    mappings: std::collections::HashMap<u64, String>,
    /// Frame iid → index into [`FrameScan::keys`], for Java frames that need a guess.
    frames: std::collections::HashMap<u64, u32>,
    /// Callstack iid → the guessed frames in it (callstacks without any are not kept).
    callstacks: std::collections::HashMap<u64, Vec<u32>>,
}

/// One sequence's current dump chain (`ProfilePacket`s up to one not `continued`): its old
/// layout's inline tables and its allocations, resolved when the chain ends, as the decoder
/// resolves them.
#[derive(Default)]
struct ChainFrames<'a> {
    /// The inline `strings` (one namespace), the first definition of an iid winning.
    strings: std::collections::HashMap<u64, Vec<u8>>,
    mappings: Vec<pb::Mapping>,
    frames: Vec<pb::Frame>,
    callstacks: Vec<pb::Callstack>,
    /// (package of the process, callstack iid) of each allocation, in order.
    allocations: Vec<(&'a str, u64)>,
}

struct FrameScan<'a> {
    info: &'a TraceJavaInfo,
    needs_guess: &'a dyn Fn(&str) -> bool,
    seqs: std::collections::HashMap<u32, SeqFrames>,
    chains: std::collections::HashMap<u32, ChainFrames<'a>>,
    keys: Vec<GuessedFrame>,
    index: std::collections::HashMap<GuessedFrame, u32>,
    package: Vec<Option<String>>,
}

impl<'a> FrameScan<'a> {
    fn packet(&mut self, b: &[u8], max_bundle: u64, nested: bool) {
        let (mut seq, mut cleared) = (0u32, false);
        let (mut interned, mut profile): (Vec<&[u8]>, Vec<&[u8]>) = (Vec::new(), Vec::new());
        let mut w = Wire::new(b);
        while let Some((field, wire)) = w.tag() {
            match (field, wire) {
                (10, 0) => seq = w.varint().map_or(0, |v| v as u32),
                (13, 0) => cleared |= w.varint().is_some_and(|v| v & 1 != 0),
                (41, 0) => cleared |= w.varint().is_some_and(|v| v != 0),
                (12, 2) => interned.extend(w.bytes()),
                (37, 2) => profile.extend(w.bytes()),
                (50, 2) if !nested => {
                    let Some(v) = w.bytes() else { return };
                    if let Ok(inner) = crate::decode::input::inflate_bundle(v, max_bundle, "compressed_packets") {
                        for p in fields(&inner, 1) {
                            self.packet(p, max_bundle, true);
                        }
                    }
                }
                _ => {
                    if w.skip(u64::from(wire)).is_none() {
                        return;
                    }
                }
            }
        }
        if cleared {
            self.seqs.insert(seq, SeqFrames::default());
        }
        for d in interned {
            if let Ok(d) = pb::InternedData::decode(d) {
                self.interned(seq, d);
            }
        }
        for p in profile {
            if let Ok(p) = pb::ProfilePacket::decode(p) {
                self.profile(seq, &p);
            }
        }
    }

    fn interned(&mut self, seq: u32, d: pb::InternedData) {
        let s = self.seqs.entry(seq).or_default();
        let text = |v: &Option<Vec<u8>>| String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned();
        for n in &d.function_names {
            let t = text(&n.str);
            if let Some(iid) = n.iid
                && t.contains('.')
            {
                s.names.entry(iid).or_insert(t);
            }
        }
        for p in &d.mapping_paths {
            if let Some(iid) = p.iid {
                s.paths.entry(iid).or_insert_with(|| text(&p.str));
            }
        }
        for m in &d.mappings {
            let Some(iid) = m.iid else { continue };
            let mut path = String::new();
            for id in &m.path_string_ids {
                path.push('/');
                path.push_str(s.paths.get(id).map_or("", String::as_str));
            }
            if path.starts_with("//") {
                path.remove(0);
            }
            s.mappings.entry(iid).or_insert(path);
        }
        for f in &d.frames {
            let Some(iid) = f.iid else { continue };
            let Some(name) = f.function_name_id.and_then(|n| s.names.get(&n)) else { continue };
            let path = f.mapping_id.and_then(|m| s.mappings.get(&m)).map_or("", String::as_str);
            if !(self.needs_guess)(path) || s.frames.contains_key(&iid) {
                continue;
            }
            let key = (path.to_owned(), f.rel_pc.unwrap_or(0), name.clone());
            let k = match self.index.get(&key) {
                Some(&k) => k,
                None => {
                    let k = self.keys.len() as u32;
                    self.index.insert(key.clone(), k);
                    self.keys.push(key);
                    self.package.push(None);
                    k
                }
            };
            s.frames.insert(iid, k);
        }
        if s.frames.is_empty() {
            return;
        }
        for c in &d.callstacks {
            let Some(iid) = c.iid else { continue };
            let ks: Vec<u32> = c.frame_ids.iter().filter_map(|f| s.frames.get(f).copied()).collect();
            if !ks.is_empty() {
                s.callstacks.entry(iid).or_insert(ks);
            }
        }
    }

    /// Trace processor walks the allocations in order; each frame that needs a guess takes the
    /// package of the process of the first allocation whose callstack holds it. An allocation
    /// row exists for a sample that allocated or freed something. A chain's allocations are
    /// looked up when it ends, in its inline tables first (the old layout), then in the
    /// sequence's interned data.
    fn profile(&mut self, seq: u32, p: &pb::ProfilePacket) {
        let info = self.info;
        let chain = self.chains.entry(seq).or_default();
        for st in &p.strings {
            if let Some(iid) = st.iid {
                chain.strings.entry(iid).or_insert_with(|| st.str.clone().unwrap_or_default());
            }
        }
        chain.mappings.extend_from_slice(&p.mappings);
        chain.frames.extend_from_slice(&p.frames);
        chain.callstacks.extend_from_slice(&p.callstacks);
        for d in &p.process_dumps {
            let Some(pkg) = d.pid.and_then(|pid| info.package_of_pid(pid)) else { continue };
            for sample in &d.samples {
                let any =
                    [sample.self_allocated, sample.self_freed, sample.alloc_count, sample.free_count, sample.self_max]
                        .iter()
                        .any(|v| v.unwrap_or(0) != 0);
                if any {
                    chain.allocations.push((pkg, sample.callstack_id.unwrap_or(0)));
                }
            }
        }
        if !p.continued.unwrap_or(false) {
            let chain = self.chains.remove(&seq).unwrap_or_default();
            self.finish_chain(seq, chain);
        }
    }

    /// The key index of a Java frame that needs a guess (a new one when first seen).
    fn key(&mut self, path: &str, rel_pc: u64, name: &str) -> u32 {
        let key = (path.to_owned(), rel_pc, name.to_owned());
        if let Some(&k) = self.index.get(&key) {
            return k;
        }
        let k = self.keys.len() as u32;
        self.index.insert(key.clone(), k);
        self.keys.push(key);
        self.package.push(None);
        k
    }

    /// Resolves a chain's inline tables as the decoder does (`resolve_inline`: an inline string,
    /// mapping or frame first, else the sequence's interned one; the first definition of an iid
    /// winning) and gives its allocations' frames their package.
    fn finish_chain(&mut self, seq: u32, chain: ChainFrames<'a>) {
        let empty = SeqFrames::default();
        let interned = self.seqs.remove(&seq);
        let s = interned.as_ref().unwrap_or(&empty);
        let text = |id: u64| chain.strings.get(&id).map(|b| String::from_utf8_lossy(b).into_owned());
        let mut mappings: std::collections::HashMap<u64, String> = Default::default();
        for m in &chain.mappings {
            let Some(iid) = m.iid else { continue };
            let mut path = String::new();
            for id in &m.path_string_ids {
                path.push('/');
                match text(*id) {
                    Some(t) => path.push_str(&t),
                    None => path.push_str(s.paths.get(id).map_or("", String::as_str)),
                }
            }
            if path.starts_with("//") {
                path.remove(0);
            }
            mappings.entry(iid).or_insert(path);
        }
        // Frame iid -> key, for the inline frames that are Java frames needing a guess (`None`:
        // an inline frame that is not, which hides an interned frame of the same iid).
        let mut frames: std::collections::HashMap<u64, Option<u32>> = Default::default();
        for f in &chain.frames {
            let Some(iid) = f.iid else { continue };
            if frames.contains_key(&iid) {
                continue;
            }
            let name_id = f.function_name_id.unwrap_or(0);
            let name = text(name_id).or_else(|| s.names.get(&name_id).cloned()).unwrap_or_default();
            let path = match f.mapping_id {
                None | Some(0) => String::new(),
                Some(id) => mappings.get(&id).or_else(|| s.mappings.get(&id)).cloned().unwrap_or_default(),
            };
            let k = (name.contains('.') && (self.needs_guess)(&path))
                .then(|| self.key(&path, f.rel_pc.unwrap_or(0), &name));
            frames.insert(iid, k);
        }
        let mut callstacks: std::collections::HashMap<u64, Vec<u32>> = Default::default();
        for c in &chain.callstacks {
            let Some(iid) = c.iid else { continue };
            if callstacks.contains_key(&iid) {
                continue;
            }
            let ks = c
                .frame_ids
                .iter()
                .filter_map(|f| match frames.get(f) {
                    Some(k) => *k,
                    None => s.frames.get(f).copied(),
                })
                .collect();
            callstacks.insert(iid, ks);
        }
        for (pkg, c) in chain.allocations {
            let Some(ks) = callstacks.get(&c).or_else(|| s.callstacks.get(&c)) else { continue };
            for &k in ks {
                self.package[k as usize].get_or_insert_with(|| pkg.to_owned());
            }
        }
        if let Some(interned) = interned {
            self.seqs.insert(seq, interned);
        }
    }
}

/// Reads the whole input once more, when the profiled processes are of several packages
/// ([`TraceJavaInfo::profiled_packages`]), for the package of each Java frame whose mapping
/// tells none (`needs_guess` says which mapping paths tell none; trace processor's rule: no
/// `/data/app/<pkg>-…` in the path, and not ART's JIT cache, `/memfd:`): as trace processor
/// guesses it (`DeobfuscationTracker::GuessPackages`), the
/// package of the process of the first allocation (heapprofd sample with a non-zero value, in
/// trace order) whose callstack holds the frame. Frames are told apart by mapping path,
/// `rel_pc` and name ([`GuessedFrame`]), from heapprofd's interned data and the old layout's
/// `ProfilePacket` inline tables alike. Frames no such allocation holds are left out: no map
/// applies to them.
pub fn scan_frame_packages(
    input: &mut Input,
    max_packet: u64,
    max_bundle: u64,
    info: &TraceJavaInfo,
    needs_guess: &dyn Fn(&str) -> bool,
) -> std::collections::HashMap<GuessedFrame, String> {
    let mut scan = FrameScan {
        info,
        needs_guess,
        seqs: Default::default(),
        chains: Default::default(),
        keys: Vec::new(),
        index: Default::default(),
        package: Vec::new(),
    };
    let mut reader = PacketReader::for_input(input, max_packet);
    while let Ok(Some(p)) = reader.next_packet() {
        scan.packet(p.bytes, max_bundle, false);
    }
    scan.keys.into_iter().zip(scan.package).filter_map(|(k, p)| Some((k, p?))).collect()
}
