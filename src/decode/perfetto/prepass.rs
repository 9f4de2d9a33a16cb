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
