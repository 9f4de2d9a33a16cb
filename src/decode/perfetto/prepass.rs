//! One reading of a trace ahead of its decoding, for everything a stage must know of the whole
//! trace before the decoder hands over its first dump: the `DeobfuscationMapping` packets and
//! package lists deobfuscation applies ([`TraceJavaInfo`]), the ModuleSymbols packets the
//! decoder applies to frames when a dump chain ends ([`SymbolPackets`]), and, for
//! symbolization, the mappings and frames whose lookups may start early ([`FrameScan`]).
//!
//! Each of those used to read the whole trace on its own (a gzipped trace was inflated once per
//! reading); here one [`PacketReader`] feeds every scanner packet by packet. What each scanner
//! finds is exactly what its own reading found: the same packets in the same order, the same
//! limits, and a scanner that stops at damage stops alone (the reading ends for all of them
//! only where the container itself is damaged, where each of their own readings ended too).

use std::io::Read;

use super::deobfuscation::TraceJavaInfo;
use super::heapprofd::DecodeOptions;
use super::module_symbols::SymbolPackets;
use super::reader::PacketReader;
use super::symbol_scan::{FrameScan, FrameScanner};
use crate::decode::input::Input;

/// Which scanners a [`pre_pass`] runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrePassWants {
    /// What deobfuscation needs ([`TraceJavaInfo`]; bundles expanded up to 256 MiB each).
    pub java: bool,
    /// The ModuleSymbols packets (top-level packets only, as the decoder's own scan reads them).
    pub module_symbols: bool,
    /// The mappings and frames, for symbol lookups started ahead of the decoder.
    pub frames: bool,
}

/// What a [`pre_pass`] found, one field per scanner asked for (`None` for the others).
#[derive(Debug, Default)]
pub struct PrePass {
    /// What deobfuscation needs (`frame_packages` is left empty: it needs the whole info first).
    pub java: Option<TraceJavaInfo>,
    /// The trace's ModuleSymbols packets.
    pub module_symbols: Option<SymbolPackets>,
    /// The frames-only scan.
    pub frames: Option<FrameScan>,
}

/// Reads `input` once from where its reader stands, feeding every scanner `wants` names.
/// Damage is not an error here: the decoder's pass reports it.
pub fn pre_pass(input: &mut Input, opts: &DecodeOptions, wants: PrePassWants) -> PrePass {
    let size = if input.gzipped { None } else { input.file_size };
    let name = input.name.clone();
    pre_pass_reader(input.reader(), &name, size, opts, wants)
}

/// [`pre_pass`] over a second reading of `input` from its start; `None` when the input cannot
/// be read twice (standard input read as a stream).
pub fn pre_pass_again(input: &Input, opts: &DecodeOptions, wants: PrePassWants) -> Option<PrePass> {
    let mut again = input.reopen()?.ok()?;
    Some(pre_pass(&mut again, opts, wants))
}

/// [`pre_pass`] over any byte stream of a trace (`size`: its length when known).
pub fn pre_pass_reader(
    reader: &mut dyn Read,
    name: &str,
    size: Option<u64>,
    opts: &DecodeOptions,
    wants: PrePassWants,
) -> PrePass {
    let mut java = wants.java.then(TraceJavaInfo::default);
    let mut symbols = wants.module_symbols.then(SymbolPackets::default);
    let mut frames = wants.frames.then(|| FrameScanner::new(opts.max_bundle_bytes));
    // The frames scanner stops alone at a packet it cannot read.
    let mut frames_on = frames.is_some();
    let mut reader = PacketReader::new(reader, name, size, opts.max_packet_bytes);
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                if let Some(j) = java.as_mut() {
                    j.scan_packet(p.bytes, 256 << 20);
                }
                if let Some(s) = symbols.as_mut() {
                    s.scan_packet(p.bytes);
                }
                if frames_on && let Some(f) = frames.as_mut() {
                    let at = || format!("{name} at byte {}, packet {}", p.offset, p.number);
                    frames_on = f.packet(p.bytes, &at);
                }
            }
            Ok(None) => break,
            Err(e) => {
                if frames_on && let Some(f) = frames.as_mut() {
                    f.stop(e.to_string());
                }
                break;
            }
        }
    }
    PrePass { java, module_symbols: symbols, frames: frames.map(FrameScanner::finish) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::perfetto::deobfuscation::scan_trace_java;
    use crate::decode::perfetto::module_symbols::scan_module_symbols;
    use crate::decode::perfetto::symbol_scan::scan_frames;

    fn open(bytes: &[u8]) -> Input {
        Input::from_bytes("t.pftrace", bytes.to_vec(), 1 << 30).unwrap()
    }

    /// The shared reading finds what each scan of its own finds, on every trace fixture
    /// (gzip, zlib bundles, truncations, heap graphs included) and on every cut of one.
    #[test]
    fn one_reading_finds_what_each_scan_finds() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        let mut files: Vec<std::path::PathBuf> = Vec::new();
        for d in [dir.to_owned(), format!("{dir}/heapgraph")] {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                let n = p.to_string_lossy().into_owned();
                if n.ends_with(".pftrace") || n.ends_with(".pftrace.gz") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() > 20, "{files:?}");
        let opts = DecodeOptions::default();
        let all = PrePassWants { java: true, module_symbols: true, frames: true };
        let check = |bytes: &[u8], what: &str| {
            let pre = pre_pass(&mut open(bytes), &opts, all);
            let java = scan_trace_java(&mut open(bytes), opts.max_packet_bytes, 256 << 20);
            let syms = scan_module_symbols(&mut open(bytes), opts.max_packet_bytes).unwrap();
            let frames = scan_frames(&mut open(bytes), &opts);
            assert_eq!(pre.java.as_ref(), Some(&java), "{what}");
            let s = pre.module_symbols.as_ref().unwrap();
            assert_eq!((s.packets, s.is_empty()), (syms.packets, syms.is_empty()), "{what}");
            let f = pre.frames.as_ref().unwrap();
            assert_eq!(f.tables.frames(), frames.tables.frames(), "{what}");
            assert_eq!(f.tables.mappings(), frames.tables.mappings(), "{what}");
            assert_eq!(
                (f.packets, f.module_symbols, &f.stopped),
                (frames.packets, frames.module_symbols, &frames.stopped),
                "{what}"
            );
            let none = pre_pass(&mut open(bytes), &opts, PrePassWants::default());
            assert!(none.java.is_none() && none.module_symbols.is_none() && none.frames.is_none());
        };
        let mut frames_seen = 0;
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            check(&bytes, &f.display().to_string());
            frames_seen += scan_frames(&mut open(&bytes), &opts).tables.frames().len();
        }
        assert!(frames_seen > 0);
        // Every cut of a trace with several sequences and a zlib bundle.
        let bytes = std::fs::read(format!("{dir}/interned_chain_spill.zlib.pftrace")).unwrap();
        for n in (0..bytes.len()).step_by(7) {
            check(&bytes[..n], &format!("cut at {n}"));
        }
    }

    /// ModuleSymbols and DeobfuscationMapping packets appended to a trace are found by the one
    /// reading, with the trace's frames.
    #[test]
    fn appended_symbols_and_mappings_are_found() {
        use crate::proto::perfetto as pb;
        use prost::Message;
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        let mut bytes = std::fs::read(format!("{dir}/names.pftrace")).unwrap();
        let ms = pb::ModuleSymbols {
            path: Some("/lib/x.so".into()),
            build_id: Some(vec![1, 2]),
            address_symbols: vec![pb::AddressSymbols {
                address: Some(0x10),
                lines: vec![pb::Line { function_name: Some("f".into()), ..Default::default() }],
            }],
        };
        let dm = pb::DeobfuscationMapping { package_name: Some("com.a".into()), ..Default::default() };
        let trace = pb::Trace {
            packet: vec![
                pb::TracePacket { module_symbols: Some(ms), ..Default::default() },
                pb::TracePacket { deobfuscation_mapping: Some(dm), ..Default::default() },
            ],
        };
        bytes.extend(trace.encode_to_vec());
        let all = PrePassWants { java: true, module_symbols: true, frames: true };
        let pre = pre_pass(&mut open(&bytes), &DecodeOptions::default(), all);
        let s = pre.module_symbols.unwrap();
        assert_eq!(s.packets, 1);
        assert!(!s.is_empty());
        let java = pre.java.unwrap();
        assert_eq!(java.tables.len(), 1);
        assert_eq!(java.tables[0].package, "com.a");
        let f = pre.frames.unwrap();
        assert!(f.module_symbols && f.complete());
        assert!(!f.tables.frames().is_empty());
    }
}
