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
use super::reader::{PacketReader, RawPacket};
use super::symbol_scan::{FrameScan, FrameScanner, FramesSeen};
use crate::decode::input::{AtRest, Input};

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
    let mut s = Scanners::new(opts, wants, None);
    let mut reader = PacketReader::new(reader, name, size, opts.max_packet_bytes);
    while s.step(reader.next_packet(), name) {}
    s.finish()
}

/// [`pre_pass`] of a trace's bytes in memory (a mapped file, an in-memory input), reading each
/// packet where it lies. `frames_seen`, when given, is called with the frames the frames-only
/// scan has interned so far (every few thousand, and at each packet's end), so that their
/// lookups can start while the scan goes on.
pub fn pre_pass_in_place<'h>(
    bytes: &[u8],
    name: &str,
    opts: &DecodeOptions,
    wants: PrePassWants,
    frames_seen: Option<&'h mut FramesSeen<'h>>,
) -> PrePass {
    let mut s = Scanners::new(opts, wants, frames_seen);
    let mut reader = PacketReader::new(bytes, name, Some(bytes.len() as u64), opts.max_packet_bytes);
    while s.step(reader.next_packet_in_place(), name) {}
    s.finish()
}

/// [`pre_pass_in_place`] of an input at rest: a plain file (mapped into memory for the
/// reading, and unmapped after it) or an in-memory input; `None` for others (gzip, standard
/// input read as a stream), and for a file that cannot be mapped.
pub fn pre_pass_at_rest<'h>(
    input: &Input,
    opts: &DecodeOptions,
    wants: PrePassWants,
    frames_seen: Option<&'h mut FramesSeen<'h>>,
) -> Option<PrePass> {
    match input.at_rest()? {
        AtRest::Memory(b) => Some(pre_pass_in_place(b, &input.name, opts, wants, frames_seen)),
        AtRest::File(path) => {
            let file = std::fs::File::open(path).ok()?;
            // SAFETY: a read-only map of the input, which heapconv never writes (an output
            // written over it replaces the file, not its bytes); it lives for this reading only.
            let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
            Some(pre_pass_in_place(&map, &input.name, opts, wants, frames_seen))
        }
    }
}

/// The scanners of one pre-pass, fed the same packets.
struct Scanners<'h> {
    java: Option<TraceJavaInfo>,
    symbols: Option<SymbolPackets>,
    frames: Option<FrameScanner<'h>>,
    /// The frames scanner stops alone at a packet it cannot read.
    frames_on: bool,
}

impl<'h> Scanners<'h> {
    fn new(opts: &DecodeOptions, wants: PrePassWants, frames_seen: Option<&'h mut FramesSeen<'h>>) -> Self {
        let frames = wants.frames.then(|| FrameScanner::new(opts.max_bundle_bytes).with_hook(frames_seen));
        Scanners {
            java: wants.java.then(TraceJavaInfo::default),
            symbols: wants.module_symbols.then(SymbolPackets::default),
            frames_on: frames.is_some(),
            frames,
        }
    }

    /// Takes what the packet reader gave: a packet is scanned, the end or an error (which stops
    /// the scan) ends it. True while there may be more packets.
    fn step(&mut self, next: crate::error::Result<Option<RawPacket<'_>>>, name: &str) -> bool {
        match next {
            Ok(Some(p)) => {
                self.packet(&p, name);
                true
            }
            Ok(None) => false,
            Err(e) => {
                self.fail(e.to_string());
                false
            }
        }
    }

    fn packet(&mut self, p: &RawPacket<'_>, name: &str) {
        if let Some(j) = self.java.as_mut() {
            j.scan_packet(p.bytes, 256 << 20);
        }
        if let Some(s) = self.symbols.as_mut() {
            s.scan_packet(p.bytes);
        }
        if self.frames_on
            && let Some(f) = self.frames.as_mut()
        {
            let at = || format!("{name} at byte {}, packet {}", p.offset, p.number);
            self.frames_on = f.packet(p.bytes, &at);
        }
    }

    /// The container cannot be read past here, for `why`.
    fn fail(&mut self, why: String) {
        if self.frames_on
            && let Some(f) = self.frames.as_mut()
        {
            f.stop(why);
        }
    }

    fn finish(self) -> PrePass {
        PrePass { java: self.java, module_symbols: self.symbols, frames: self.frames.map(FrameScanner::finish) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::perfetto::deobfuscation::scan_trace_java;
    use crate::decode::perfetto::module_symbols::{scan_module_symbols, scan_module_symbols_at_rest};
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
        // Two frame scans found the same frames and mappings, and stopped alike.
        let same_scan = |a: &super::super::symbol_scan::FrameScan,
                         b: &super::super::symbol_scan::FrameScan,
                         what: &str| {
            assert_eq!(a.tables.frames(), b.tables.frames(), "{what}");
            assert_eq!(a.tables.mappings(), b.tables.mappings(), "{what}");
            assert_eq!((a.packets, a.module_symbols, &a.stopped), (b.packets, b.module_symbols, &b.stopped), "{what}");
        };
        let check = |bytes: &[u8], what: &str| {
            let pre = pre_pass(&mut open(bytes), &opts, all);
            let java = scan_trace_java(&mut open(bytes), opts.max_packet_bytes, 256 << 20);
            let syms = scan_module_symbols(&mut open(bytes), opts.max_packet_bytes).unwrap();
            let frames = scan_frames(&mut open(bytes), &opts);
            assert_eq!(pre.java.as_ref(), Some(&java), "{what}");
            let s = pre.module_symbols.as_ref().unwrap();
            assert_eq!((s.packets, s.is_empty()), (syms.packets, syms.is_empty()), "{what}");
            let f = pre.frames.as_ref().unwrap();
            same_scan(f, &frames, what);
            // The same reading of the bytes where they lie (for a trace that is not gzipped),
            // and the frames it hands on as it goes: every frame of the scan, in order, once.
            if !open(bytes).gzipped {
                let mut handed: Vec<(Option<crate::model::MappingId>, u64)> = Vec::new();
                let mut seen = |t: &crate::model::Tables, r: std::ops::Range<usize>| {
                    assert_eq!(r.start, handed.len(), "{what}");
                    handed.extend(t.frames()[r].iter().map(|f| (f.mapping, f.rel_pc)));
                };
                let in_place = pre_pass_in_place(bytes, "t.pftrace", &opts, all, Some(&mut seen));
                assert_eq!(in_place.java.as_ref(), Some(&java), "{what}");
                assert_eq!(in_place.module_symbols.as_ref(), Some(s), "{what}");
                let g = in_place.frames.as_ref().unwrap();
                same_scan(g, f, what);
                let all_frames: Vec<_> = f.tables.frames().iter().map(|f| (f.mapping, f.rel_pc)).collect();
                assert_eq!(handed, all_frames, "{what}");
            }
            // ModuleSymbols found by tags and lengths only, in memory and in a file.
            let mem = open(bytes);
            let at_rest = scan_module_symbols_at_rest(&mem, opts.max_packet_bytes);
            assert_eq!(at_rest.as_ref(), if mem.gzipped { None } else { Some(s) }, "{what}");
            let path = std::env::temp_dir().join(format!("heapconv-prepass-{}.pftrace", std::process::id()));
            std::fs::write(&path, bytes).unwrap();
            let file = Input::open(&path, 1 << 30).unwrap();
            let at_rest = scan_module_symbols_at_rest(&file, opts.max_packet_bytes);
            std::fs::remove_file(&path).unwrap();
            assert_eq!(at_rest.as_ref(), if file.gzipped { None } else { Some(s) }, "{what}");
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
        // Found by tags and lengths only, and by the reading in place.
        let at_rest = scan_module_symbols_at_rest(&open(&bytes), DecodeOptions::default().max_packet_bytes).unwrap();
        assert_eq!(at_rest, s);
        let in_place = pre_pass_in_place(&bytes, "t.pftrace", &DecodeOptions::default(), all, None);
        assert_eq!(in_place.module_symbols.unwrap(), s);
    }
}
