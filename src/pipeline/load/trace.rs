//! The heapprofd dumps of a Perfetto trace that a selection keeps: a pre-pass that reads the
//! trace's maps and symbols ahead of the decoding ([`prepare_trace`]), then the decoding with
//! symbolization and deobfuscation hooked in ([`select_heapprofd`]).

use super::sources::{FrameSession, ProguardMaps, TraceMaps};
use crate::decode::Input;
use crate::decode::perfetto::{DecodeOptions, decode_heapprofd_with};
use crate::error::{Error, Result};
use crate::model::{Profile, Tables, TraceReport};
use crate::pipeline::select::{DumpSelect, no_heapprofd};
use crate::symbolize::java_frames::deobfuscate_java_frames;
use crate::symbolize::{SymbolizeOptions, SymbolizeReport, Symbolizer};
use std::collections::BTreeMap;
use std::sync::Arc;

pub(crate) fn symbolize_hook(
    s: &mut Option<Symbolizer>,
    deob: &mut Option<FrameSession<'_>>,
    tables: &mut Tables,
    range: std::ops::Range<usize>,
) {
    if let Some(d) = deob {
        deobfuscate_java_frames(tables, range.clone(), &mut d.session, d.rules);
    }
    if let Some(s) = s {
        s.symbolize(tables, range);
    }
}

/// Reads a trace once ahead of its decoding, for every stage that must know something of the
/// whole trace before the decoder hands over its first dump ([`crate::decode::perfetto::prepass`]):
/// - the maps for its Java frames and heap graphs ([`ProguardMaps::open_for_trace`]);
/// - its ModuleSymbols packets, handed to the decoder through `inp`;
/// - with a symbolizer that looks symbols up, its mappings and frames, whose lookups start on
///   other threads at once, so that they overlap the decoding ([`symbolize_hook`] then applies
///   the answers from the lookups' cache); not for a trace with ModuleSymbols (whose frames
///   may be named by the trace itself).
///
/// Standard input read as a stream is read whole (it must be read twice), the pre-pass reading
/// it as it comes.
pub(crate) fn prepare_trace(
    inp: &mut Input,
    decode: &DecodeOptions,
    maps: &ProguardMaps,
    symbolizer: &mut Option<Symbolizer>,
) -> Result<TraceMaps> {
    use crate::decode::perfetto::prepass::{PrePassWants, pre_pass, pre_pass_reader};
    let mut clock = crate::timing::Phases::start("prepass");
    let looks_up = symbolizer.as_ref().is_some_and(|s| s.looks_up());
    let wants = PrePassWants { java: true, module_symbols: true, frames: looks_up };
    let pre = if inp.reopen().is_none() {
        // One reading: the pre-pass reads the stream through a tee that keeps every byte, for
        // the decoder's own reading.
        let name = inp.name.clone();
        let file_gzipped = inp.gzipped;
        let mut tee = Tee { inner: inp.reader(), copy: Vec::new(), error: None };
        let pre = {
            let mut buffered = std::io::BufReader::with_capacity(1 << 20, &mut tee);
            pre_pass_reader(&mut buffered, &name, None, decode, wants)
        };
        // Whatever the pre-pass left (after damage): the rest of the stream, as a plain read
        // of it all would have met it.
        if tee.error.is_none() {
            let mut rest = Vec::new();
            if let Err(e) = tee.inner.read_to_end(&mut rest) {
                tee.error = Some(e);
            }
            tee.copy.extend_from_slice(&rest);
        }
        if let Some(e) = tee.error {
            return Err(Error::io(format!("reading {name}"), e));
        }
        let bytes = tee.copy;
        *inp = Input::from_bytes(&name, bytes, crate::decode::perfetto::DecodeOptions::default().max_gzip_bytes)?;
        inp.gzipped |= file_gzipped;
        pre
    } else {
        match inp.reopen() {
            Some(Ok(mut again)) => pre_pass(&mut again, decode, wants),
            _ => Default::default(),
        }
    };
    if let Some(symbols) = pre.module_symbols {
        if let (Some(s), Some(scan)) = (symbolizer.as_mut(), pre.frames.as_ref())
            && !scan.module_symbols
        {
            s.prefetch(&scan.tables, 0..scan.tables.frames().len());
        }
        inp.set_prescanned_symbols(symbols);
    }
    clock.done("read ahead");
    let maps = maps.for_trace(inp, decode.max_packet_bytes, pre.java.unwrap_or_default());
    clock.done("maps");
    maps
}

/// A reader that keeps a copy of every byte read through it, and the first error met.
struct Tee<'a> {
    inner: &'a mut (dyn std::io::Read + Send),
    copy: Vec<u8>,
    error: Option<std::io::Error>,
}

impl std::io::Read for Tee<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.inner.read(buf) {
                Ok(n) => {
                    self.copy.extend_from_slice(&buf[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let again = std::io::Error::new(e.kind(), e.to_string());
                    self.error.get_or_insert(e);
                    return Err(again);
                }
            }
        }
    }
}

/// Which heapprofd dumps of a trace to keep, and how to read it.
#[derive(Debug, Clone)]
pub(crate) struct HeapprofdSelection<'a> {
    /// How the trace is read.
    pub(crate) decode: &'a DecodeOptions,
    /// Only these pids (empty: all).
    pub(crate) pids: &'a [u64],
    /// Only this heap.
    pub(crate) heap: Option<&'a str>,
    /// Which dumps of each (pid, heap).
    pub(crate) dump: DumpSelect,
    /// Symbolize native frames (or count their symbols).
    pub(crate) symbolize: Option<SymbolizeOptions>,
    /// Deobfuscate Java frames with these maps.
    pub(crate) proguard: &'a ProguardMaps,
}

/// The profiles `sel` keeps of a trace, in trace order, with the trace's report and the
/// symbolization report; an error for a trace without any heapprofd dump.
pub(crate) fn select_heapprofd_dumps(
    inp: Input,
    sel: &HeapprofdSelection<'_>,
) -> Result<(Vec<Profile>, TraceReport, Option<SymbolizeReport>)> {
    let name = inp.name.clone();
    let (out, report, symbols) = select_heapprofd(inp, sel)?;
    if report.dumps.is_empty() && report.damage.is_none() {
        return Err(no_heapprofd(&name));
    }
    Ok((out, report, symbols))
}

/// [`select_heapprofd_dumps`] without the error for a trace that has no heapprofd dump.
pub(crate) fn select_heapprofd(
    mut inp: Input,
    sel: &HeapprofdSelection<'_>,
) -> Result<(Vec<Profile>, TraceReport, Option<SymbolizeReport>)> {
    let mut decode = sel.decode.clone();
    decode.pids = sel.pids.to_vec();
    decode.include_unchanged = true;
    let empty = Arc::new(Tables::default());
    let mut kept: BTreeMap<(u64, String), Vec<Profile>> = BTreeMap::new();
    let mut order: Vec<(u64, String)> = Vec::new();
    let mut symbolizer = sel.symbolize.clone().map(Symbolizer::new);
    let deob = prepare_trace(&mut inp, &decode, sel.proguard, &mut symbolizer)?;
    let mut session = deob.session();
    let (report, tables) = decode_heapprofd_with(
        &mut inp,
        &decode,
        &mut |t, r| symbolize_hook(&mut symbolizer, &mut session, t, r),
        &mut |mut p: Profile| {
            if sel.heap.is_some_and(|h| h != p.header.meta.heap) {
                return Ok(());
            }
            let keep = match sel.dump {
                DumpSelect::Last | DumpSelect::All => true,
                DumpSelect::Nth(n) => p.header.meta.dump_index + 1 == n,
            };
            if !keep {
                return Ok(());
            }
            p.tables = Arc::clone(&empty);
            let key = (p.header.meta.pid.unwrap_or(0), p.header.meta.heap.clone());
            let slot = kept.entry(key.clone()).or_default();
            if slot.is_empty() {
                order.push(key);
            }
            if sel.dump == DumpSelect::Last {
                slot.clear();
            }
            slot.push(p);
            Ok(())
        },
    )?;
    let mut out = Vec::new();
    for key in order {
        for mut p in kept.remove(&key).unwrap_or_default() {
            p.tables = Arc::clone(&tables);
            out.push(p);
        }
    }
    out.sort_by_key(|p| p.header.meta.timestamp.unwrap_or(i64::MIN));
    let symbols = symbolizer.map(|s| {
        let mut r = s.report(&tables);
        // The last dump of each (pid, heap) that was selected.
        let mut last: BTreeMap<(u64, String), &Profile> = BTreeMap::new();
        for p in &out {
            last.insert((p.header.meta.pid.unwrap_or(0), p.header.meta.heap.clone()), p);
        }
        for p in last.values() {
            r.attribute(&crate::symbolize::attribute(p));
        }
        r
    });
    Ok((out, report, symbols))
}

/// How a trace is read: the largest expansion of a `compressed_packets` bundle, the rest as
/// [`DecodeOptions::default`].
pub fn decode_options(max_bundle_bytes: u64) -> DecodeOptions {
    DecodeOptions { max_bundle_bytes, ..DecodeOptions::default() }
}
