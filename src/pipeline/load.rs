//! Shared by the commands: opening an input (a path or `-`, gzip undone) and telling what it is
//! by its first bytes, then decoding it into the model: the heapprofd dumps a selection keeps,
//! the Java heap graphs a selection keeps, or any input as profiles for `merge`, `diff` and
//! `top` ([`load_input`], [`merge_inputs`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::reports::pprof_coverage;
use super::select::{DumpFilter, DumpSelect, no_heapprofd};
use crate::analysis::filter::FilterOptions;
use crate::decode::ddm_alloc_records::{AllocRecords, DdmOptions, alloc_records_profile, decode_alloc_records};
pub use crate::decode::hprof::ObjectSize;
use crate::decode::hprof::{
    HprofDumpInfo, HprofDumpSelect, HprofReadOptions, HprofStats, apply_object_size, read_hprof_dump,
};
use crate::decode::perfetto::heap_graph::{HeapGraphOptions, decode_heap_graphs};
use crate::decode::perfetto::{DecodeOptions, decode_heapprofd_with};
use crate::decode::pprof::{LeanPprof, PprofDecodeOptions, read_pprof};
use crate::decode::{Input, InputKind, sniff};
use crate::error::{Error, ErrorKind, Result};
use crate::merge::{AnyProfile, MergeOptions, Merger, PprofParts, TypeSelector, merge_tree};
use crate::model::{FlatProfile, HeapDump, Profile, Tables, TraceReport};
use crate::symbolize::java_frames::{FrameRules, deobfuscate_java_frames};
use crate::symbolize::proguard::{DeobfuscationReport, Deobfuscator, MapSpec, Session, deobfuscate_heap_dump};
use crate::symbolize::{SymbolizeOptions, SymbolizeReport, Symbolizer};

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

/// Decodes the Java heap graphs of a trace and hands the dumps `pids` and `dump` select to
/// `each`, in the order the dumps end in the trace. `dump` counts the dumps of each process
/// (`Nth(2)`: every process's second dump); `Last` keeps one dump per process in memory until
/// the trace ends, the others hand each dump on as soon as it ends. Returns the trace report
/// (`heap_graphs` is empty for a trace without any).
pub(crate) fn for_selected_heap_graphs(
    inp: &mut Input,
    decode: &DecodeOptions,
    pids: &[u64],
    dump: DumpSelect,
    maps: &ProguardMaps,
    each: &mut dyn FnMut(HeapDump) -> Result<()>,
) -> Result<TraceReport> {
    let deob = maps.open_for_trace(inp, decode.max_packet_bytes)?;
    let each = &mut |mut d: HeapDump| {
        deob.deobfuscate_graph(&mut d);
        each(d)
    };
    let graph = HeapGraphOptions {
        max_packet_bytes: decode.max_packet_bytes,
        max_bundle_bytes: decode.max_bundle_bytes,
        pids: pids.to_vec(),
    };
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    let mut last: BTreeMap<u32, (usize, HeapDump)> = BTreeMap::new();
    let mut n = 0usize;
    let report = decode_heap_graphs(inp, &graph, &mut |d| {
        n += 1;
        let pid = d.pid.unwrap_or(0);
        let k = seen.entry(pid).or_default();
        *k += 1;
        match dump {
            DumpSelect::Last => {
                last.insert(pid, (n, d));
                Ok(())
            }
            DumpSelect::All => each(d),
            DumpSelect::Nth(want) if *k == want => each(d),
            DumpSelect::Nth(_) => Ok(()),
        }
    })?;
    let mut kept: Vec<(usize, HeapDump)> = last.into_values().collect();
    kept.sort_by_key(|k| k.0);
    for (_, d) in kept {
        each(d)?;
    }
    Ok(report)
}

/// Reads the heap dumps `dump` selects of an HPROF input (the JVMTI hprof agent writes several
/// per file; HotSpot and Android one) and hands each to `each` with its 1-based number and what
/// the reader counted, in file order. Returns every dump the file holds. `Last` and `Nth` read
/// the file once; `All` reads it once per dump (each pass keeps one dump in memory). A number
/// past the file's dumps is a usage error that says how many it has. Shallow sizes are counted
/// as `size` says.
pub(crate) fn for_selected_hprof_dumps(
    mut inp: Input,
    dump: DumpSelect,
    size: ObjectSize,
    maps: &ProguardMaps,
    each: &mut dyn FnMut(usize, HeapDump, HprofStats) -> Result<()>,
) -> Result<Vec<HprofDumpInfo>> {
    let deob = maps.open()?;
    let each = &mut |n: usize, mut d: HeapDump, s: HprofStats| {
        deobfuscate_dump(deob.as_deref(), &mut d);
        each(n, d, s)
    };
    let name = inp.name.clone();
    let opts = HprofReadOptions::default();
    let which = match dump {
        DumpSelect::Nth(n) => HprofDumpSelect::Index(n - 1),
        DumpSelect::Last | DumpSelect::All => HprofDumpSelect::Last,
    };
    let (d, stats) = match read_hprof_dump(inp.reader(), &name, &opts, which) {
        Err(e) if e.kind() == ErrorKind::NoData && matches!(dump, DumpSelect::Nth(_)) => {
            return Err(Error::new(ErrorKind::Usage, format!("{} (see `heapconv inspect`)", e.context())));
        }
        r => r?,
    };
    let mut d = d;
    apply_object_size(&mut d, size);
    let dumps = stats.dumps.clone();
    let number = stats.dump.map_or(1, |i| i + 1);
    if dump != DumpSelect::All || dumps.len() <= 1 {
        each(number, d, stats)?;
        return Ok(dumps);
    }
    // Every dump but the last is read again from the start; the last is the one in hand.
    for i in 0..dumps.len() - 1 {
        let mut inp = match inp.reopen() {
            Some(r) => r?,
            None => return Err(Error::new(ErrorKind::Io, format!("{name}: cannot be read twice"))),
        };
        let (mut di, si) = read_hprof_dump(inp.reader(), &name, &opts, HprofDumpSelect::Index(i))?;
        apply_object_size(&mut di, size);
        each(i + 1, di, si)?;
    }
    each(number, d, stats)?;
    Ok(dumps)
}

/// Deobfuscates a Java heap dump's class and field names with the map for its process's package
/// (a heap graph's process name up to any `:`), or the map given without a package (HPROF).
pub(crate) fn deobfuscate_dump(deob: Option<&Deobfuscator>, dump: &mut HeapDump) {
    let Some(d) = deob else { return };
    let pkg = dump.process_name.as_deref().map(|n| n.split(':').next().unwrap_or(n).to_owned());
    let mut s = d.session();
    let what = match &pkg {
        Some(p) => format!("heap dump classes and fields of {p}"),
        None => "heap dump classes and fields".to_owned(),
    };
    if let Some(i) = s.for_package(pkg.as_deref(), &what) {
        deobfuscate_heap_dump(dump, &mut s, i);
    }
}

/// Deobfuscates a DDM capture with the map given without a package (or the only map): the
/// allocated classes and every frame's class, method, file and line; a frame that stands for
/// an inline chain becomes the chain's frames, innermost first (a stack is cut at 255 frames,
/// the format's limit); an R8 outline frame is dropped and its caller's line moved to the
/// outline's call site. Names past the format's 65,535 strings per table stay as they were.
pub(crate) fn deobfuscate_capture(deob: Option<&Deobfuscator>, r: &mut AllocRecords) {
    use crate::decode::ddm_alloc_records::{StackFrame, java_name};
    let Some(d) = deob else { return };
    let mut s = d.session();
    let Some(mi) = s.for_package(None, "DDM allocated classes and frames") else { return };
    let rt = s.retracer(mi);
    fn descriptor(java: &str) -> String {
        let base = java.trim_end_matches("[]");
        let dims = (java.len() - base.len()) / 2;
        format!("{}L{};", "[".repeat(dims), base.replace('.', "/"))
    }
    fn intern(table: &mut Vec<String>, index: &mut HashMap<String, u16>, name: String) -> Option<u16> {
        if let Some(&i) = index.get(&name) {
            return Some(i);
        }
        let i = u16::try_from(table.len()).ok()?;
        table.push(name.clone());
        index.insert(name, i);
        Some(i)
    }
    use std::collections::HashMap;
    let old_classes: Vec<String> = r.class_names.iter().map(|c| java_name(c)).collect();
    let mut class_ix: HashMap<String, u16> = HashMap::new();
    let mut method_ix: HashMap<String, u16> = HashMap::new();
    let mut file_ix: HashMap<String, u16> = HashMap::new();
    let mut left = Vec::new();
    for (i, java) in old_classes.iter().enumerate() {
        match rt.class_name(java) {
            Some(n) => r.class_names[i] = descriptor(&n),
            None => left.push(java.clone()),
        }
    }
    let mut memo: HashMap<StackFrame, Vec<StackFrame>> = HashMap::new();
    let mut outlines: HashMap<(u16, u16), bool> = HashMap::new();
    let mut frames: Vec<StackFrame> = Vec::with_capacity(r.frames.len());
    for e in &mut r.entries {
        let start = e.first_frame as usize;
        let end = (start + usize::from(e.depth)).min(r.frames.len());
        let first = frames.len();
        // An R8 outline frame is dropped; its line is the position that moves its caller's.
        let mut carried: Option<u32> = None;
        for f in &r.frames[start..end] {
            let (class, method) = (&old_classes[usize::from(f.class)], &r.method_names[usize::from(f.method)]);
            if *outlines.entry((f.class, f.method)).or_insert_with(|| rt.is_outline(class, method)) {
                carried = Some(f.line.max(0) as u32);
                continue;
            }
            let mut at = *f;
            if let Some(pos) = carried.take() {
                if let Some(l) = rt.outline_callsite(class, method, f.line.max(0) as u32, pos) {
                    at.line = i16::try_from(l).unwrap_or(f.line);
                }
            }
            let f = &at;
            let expanded = memo.entry(*f).or_insert_with(|| {
                let class = &old_classes[usize::from(f.class)];
                let method = &r.method_names[usize::from(f.method)];
                let line = (f.line > 0).then_some(f.line as u32);
                let Some(t) = rt.frame(class, method, line) else { return vec![*f] };
                let mut out = Vec::new();
                for o in t.frames.iter().take(if t.ambiguous { 1 } else { usize::MAX }) {
                    let c = intern(&mut r.class_names, &mut class_ix, descriptor(&o.class));
                    let m = if t.ambiguous {
                        let all: Vec<&str> = t.frames.iter().map(|o| &*o.method).collect();
                        intern(&mut r.method_names, &mut method_ix, all.join(" | "))
                    } else {
                        intern(&mut r.method_names, &mut method_ix, o.method.to_string())
                    };
                    let fi = match &o.file {
                        Some(file) => intern(&mut r.file_names, &mut file_ix, file.to_string()),
                        None => Some(f.file),
                    };
                    let (Some(c), Some(m), Some(fi)) = (c, m, fi) else { return vec![*f] };
                    let l = if o.line > 0 {
                        o.line as u16 as i16
                    } else if f.line < 0 {
                        f.line
                    } else {
                        -1
                    };
                    out.push(StackFrame { class: c, method: m, file: fi, line: l });
                }
                out
            });
            frames.extend_from_slice(expanded);
        }
        let depth = (frames.len() - first).min(255);
        frames.truncate(first + depth);
        e.first_frame = first as u32;
        e.depth = depth as u8;
    }
    r.frames = frames;
    for n in left {
        s.left_obfuscated(&n);
    }
}

/// True for a path named `*.alloc` (or `*.alloc.gz`): it must be a DDM capture.
pub(crate) fn is_alloc_file(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    name.ends_with(".alloc") || name.ends_with(".alloc.gz")
}

/// An input opened and recognized.
pub(crate) enum Opened {
    /// A Perfetto trace, or something that is neither a trace nor a DDM capture (the trace
    /// decoder then says what is wrong, as it always has).
    Trace(Input, InputKind),
    /// A DDM capture, read whole (gzip undone).
    Ddm { name: String, bytes: Vec<u8> },
    /// An HPROF heap dump, opened from its start.
    Hprof(Input),
}

/// Opens `path` (`-` for stdin) and tells a DDM capture from anything else by its first
/// (decompressed) bytes. With `want_ddm`, anything else is an error.
pub(crate) fn open_input(path: &Path, max_gzip: u64, ddm_max: u64, want_ddm: bool) -> Result<Opened> {
    use std::io::Read;
    const HEAD: u64 = 64;
    let name = path.display().to_string();
    let too_big = |name: &str| {
        Error::new(
            ErrorKind::LimitExceeded,
            format!("{name}: more than the limit of {ddm_max} bytes for a DDM capture"),
        )
    };
    let read_err = |e: std::io::Error| Error::io(format!("reading {name}"), e);
    if name == "-" {
        // Standard input can be read only once: it is read whole, then handed to the decoder
        // that its first bytes call for.
        let mut raw = Vec::new();
        std::io::stdin().lock().read_to_end(&mut raw).map_err(read_err)?;
        let gz = raw.starts_with(&[0x1f, 0x8b]);
        let mut head = Vec::new();
        if gz {
            let _ = flate2::read::MultiGzDecoder::new(raw.as_slice()).take(HEAD).read_to_end(&mut head);
        } else {
            head.extend_from_slice(&raw[..raw.len().min(HEAD as usize)]);
        }
        let kind = sniff(&head);
        if kind.is_ddm() || (want_ddm && kind == InputKind::Unknown) {
            let bytes = if gz {
                let mut v = Vec::new();
                flate2::read::MultiGzDecoder::new(raw.as_slice())
                    .take(ddm_max.saturating_add(1))
                    .read_to_end(&mut v)
                    .map_err(read_err)?;
                v
            } else {
                raw
            };
            if bytes.len() as u64 > ddm_max {
                return Err(too_big(&name));
            }
            return Ok(Opened::Ddm { name, bytes });
        }
        if kind == InputKind::Hprof && !want_ddm {
            return Ok(Opened::Hprof(Input::from_bytes(&name, raw, max_gzip)?));
        }
        not_ddm(&name, kind, &head, want_ddm)?;
        return Ok(Opened::Trace(Input::from_bytes(&name, raw, max_gzip)?, kind));
    }
    let mut input = Input::open(path, max_gzip)?;
    let mut head = Vec::new();
    input.reader().take(HEAD).read_to_end(&mut head).map_err(read_err)?;
    let kind = sniff(&head);
    if kind.is_ddm() || (want_ddm && kind == InputKind::Unknown) {
        // (An unknown kind where a capture is required: the DDM decoder says what is wrong.)
        let mut bytes = head;
        if let Some(size) = input.file_size.filter(|_| !input.gzipped) {
            bytes.reserve(usize::try_from(size.min(ddm_max)).unwrap_or(0));
        }
        let left = ddm_max.saturating_add(1).saturating_sub(bytes.len() as u64);
        input.reader().take(left).read_to_end(&mut bytes).map_err(read_err)?;
        if bytes.len() as u64 > ddm_max {
            return Err(too_big(&name));
        }
        return Ok(Opened::Ddm { name, bytes });
    }
    let hprof = kind == InputKind::Hprof && !want_ddm;
    if !hprof {
        not_ddm(&name, kind, &head, want_ddm)?;
    }
    let again = input.reopen().ok_or_else(|| Error::new(ErrorKind::Io, format!("{name}: cannot be read twice")))??;
    Ok(if hprof { Opened::Hprof(again) } else { Opened::Trace(again, kind) })
}

/// The error for an input that is not a DDM capture, when one is required or when it is a
/// kind heapconv does not read.
pub(crate) fn not_ddm(name: &str, kind: InputKind, head: &[u8], want_ddm: bool) -> Result<()> {
    if kind == InputKind::Hprof {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!("{name} is an HPROF heap dump; heapconv reads Perfetto traces and DDM allocation records"),
        ));
    }
    if !want_ddm {
        return Ok(());
    }
    let what = match kind {
        InputKind::PerfettoTrace => "a Perfetto trace".to_owned(),
        InputKind::Pprof | InputKind::LegacyHeap => "a pprof profile (`heapconv merge` combines several)".to_owned(),
        InputKind::Empty => "empty".to_owned(),
        InputKind::Zstd => "zstd-compressed".to_owned(),
        _ => format!(
            "neither a bare blob (starting 0F 09 08), a REAL chunk nor JDWP packets; it starts {}",
            head.iter().take(8).map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" ")
        ),
    };
    Err(Error::new(
        ErrorKind::Malformed,
        format!(
            "{name}: not a DDM allocation-record capture: {what} (several inputs, or a file named *.alloc, must be DDM captures)"
        ),
    ))
}

/// How inputs are read for `merge`, `diff` and `top`.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Keep only these pids of traces (empty: all). Default: empty.
    pub pids: Vec<u64>,
    /// Keep only this heap of traces. Default: all heaps.
    pub heap: Option<String>,
    /// Which dumps of each (pid, heap) of a trace. Default: the last.
    pub dump: DumpSelect,
    /// Bake ART annotations (`[jit]`, …) into frame names of traces. Default: true.
    pub annotations: bool,
    /// Trace decoder options. Default: [`DecodeOptions::default`].
    pub decode: DecodeOptions,
    /// Where symbols come from (symbol directories, the coverage gate). Default: none (no
    /// symbolization; symbols already in the input are still used).
    pub symbols: SymbolSources,
    /// DDM capture options. Default: [`DdmOptions::default`] (for a merge, captures are always
    /// summed per stack, without per-allocation labels).
    pub ddm: DdmOptions,
    /// Give DDM frames pprof lines (function, file, line) rather than `Class.method(File:12)`
    /// names. Default: true (what pprof output wants; the text outputs set it to false).
    pub ddm_lines: bool,
    /// pprof decoder options. Default: [`PprofDecodeOptions::default`].
    pub pprof: PprofDecodeOptions,
    /// Leave out the samples of pprof inputs that have no locations, as `go tool pprof -proto`
    /// does when it merges (`merge` and `diff` set it; `top` keeps them as a `[no stack]`
    /// row). Default: false.
    pub drop_empty_stacks: bool,
    /// pprof-style filters applied to every profile loaded. Default: none.
    pub filter: FilterOptions,
}

impl LoadOptions {
    /// The dumps of a trace these options take.
    pub fn dump_filter(&self, report: &TraceReport) -> DumpFilter {
        DumpFilter::new(&self.pids, self.heap.as_deref(), self.dump, &[], report)
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            pids: Vec::new(),
            heap: None,
            dump: DumpSelect::Last,
            annotations: true,
            decode: DecodeOptions::default(),
            symbols: SymbolSources::default(),
            ddm: DdmOptions::default(),
            ddm_lines: true,
            pprof: PprofDecodeOptions::default(),
            drop_empty_stacks: false,
            filter: FilterOptions::default(),
        }
    }
}

/// What was read from one input.
#[derive(Debug)]
pub struct LoadedInput {
    /// The input's name (path, or `-`).
    pub name: String,
    /// What it was.
    pub kind: InputKind,
    /// Profiles it gave with their stacks in a tree (a trace: one per selected dump; a
    /// capture: one).
    pub profiles: Vec<Profile>,
    /// Profiles it gave with frame lists (a pprof file: one).
    pub flat: Vec<FlatProfile>,
    /// Whether its frames get ART annotations baked in when merged.
    pub annotate: bool,
    /// What the trace decoder found (traces only).
    pub report: Option<TraceReport>,
    /// The symbolization report, when symbolization was asked for (traces only).
    pub symbols: Option<SymbolizeReport>,
}

/// What a merge read, per input, without the profiles.
#[derive(Debug)]
pub struct InputInfo {
    /// The input's name.
    pub name: String,
    /// What it was.
    pub kind: InputKind,
    /// Profiles it gave.
    pub profiles: usize,
    /// What the trace decoder found (traces only).
    pub report: Option<TraceReport>,
    /// The symbolization report (traces with symbolization only).
    pub symbols: Option<SymbolizeReport>,
    /// The heapprofd dumps taken from the trace (traces only).
    pub converted: Option<DumpFilter>,
    /// What was read though not as written (strings that were not valid UTF-8), for the
    /// command line to warn about.
    pub warnings: Vec<String>,
}

impl InputInfo {
    /// What the input says was lost, of the dumps taken from it, each line naming the input.
    pub fn data_loss(&self) -> Vec<String> {
        match (&self.report, &self.converted) {
            (Some(r), Some(f)) => {
                r.data_loss_of(&|d| f.keeps(d)).into_iter().map(|l| format!("{}: {l}", self.name)).collect()
            }
            _ => Vec::new(),
        }
    }

    /// True when the input was damaged and only its complete part was used.
    pub fn is_partial(&self) -> bool {
        self.report.as_ref().is_some_and(|r| r.is_partial())
    }
}

/// Opens and decodes one input of any kind heapconv reads, and filters its profiles
/// ([`LoadOptions::filter`]).
pub fn load_input(path: &Path, opts: &LoadOptions) -> Result<LoadedInput> {
    let mut loaded = load_input_unfiltered(path, opts)?;
    apply_filter(&mut loaded, opts);
    Ok(loaded)
}

/// Filters a loaded input's profiles ([`LoadOptions::filter`]; nothing when it is empty).
fn apply_filter(loaded: &mut LoadedInput, opts: &LoadOptions) {
    if opts.filter.is_empty() {
        return;
    }
    loaded.profiles = std::mem::take(&mut loaded.profiles)
        .into_iter()
        .map(|p| crate::analysis::filter::filter_profile(p, &opts.filter))
        .collect();
    loaded.flat = std::mem::take(&mut loaded.flat)
        .into_iter()
        .map(|p| crate::analysis::filter::filter_flat(p, &opts.filter))
        .collect();
}

fn load_input_unfiltered(path: &Path, opts: &LoadOptions) -> Result<LoadedInput> {
    let opened = open_input(path, opts.decode.max_gzip_bytes, opts.ddm.max_bytes, false)?;
    load_opened(path, opened, opts)
}

/// An input as a merge takes it: a pprof profile's bytes, to be read without tables
/// ([`crate::decode::pprof::decode_pprof_lean`]), or anything else loaded.
enum ForMerge {
    Pprof { name: String, kind: InputKind, bytes: Vec<u8> },
    Loaded(Box<LoadedInput>),
}

/// Loads `path` for a merge: the bytes of a pprof profile when nothing (filters, symbols) is
/// applied to it and its empty stacks are dropped, else as [`load_input`] loads it.
fn load_for_merge(path: &Path, opts: &LoadOptions) -> Result<ForMerge> {
    let opened = open_input(path, opts.decode.max_gzip_bytes, opts.ddm.max_bytes, false)?;
    let lean = opts.filter.is_empty() && opts.symbols.options().is_none() && opts.drop_empty_stacks;
    match opened {
        Opened::Trace(mut inp, kind) if lean && kind.is_pprof() => {
            let name = path.display().to_string();
            let bytes = crate::decode::pprof::read_pprof_bytes(&mut inp, &opts.pprof)?;
            if !crate::decode::legacy_heap::looks_like_legacy_heap(&bytes) {
                return Ok(ForMerge::Pprof { name, kind, bytes });
            }
            let profile = without_empty_stacks(crate::decode::legacy_heap::decode_legacy_heap(&bytes, &name)?);
            Ok(ForMerge::Loaded(Box::new(LoadedInput {
                name,
                kind,
                profiles: Vec::new(),
                flat: vec![profile],
                annotate: false,
                report: None,
                symbols: None,
            })))
        }
        opened => {
            let mut loaded = load_opened(path, opened, opts)?;
            apply_filter(&mut loaded, opts);
            Ok(ForMerge::Loaded(Box::new(loaded)))
        }
    }
}

fn load_opened(path: &Path, opened: Opened, opts: &LoadOptions) -> Result<LoadedInput> {
    let name = path.display().to_string();
    match opened {
        Opened::Ddm { name, bytes } => {
            let mut ddm = opts.ddm.clone();
            ddm.per_allocation = false;
            ddm.lines = opts.ddm_lines;
            let mut capture = decode_alloc_records(&bytes, &name, &ddm)?;
            deobfuscate_capture(opts.symbols.proguard.open()?.as_deref(), &mut capture.records);
            let kind = crate::decode::sniff(&bytes[..bytes.len().min(64)]);
            let profile = alloc_records_profile(std::slice::from_ref(&capture), &ddm);
            Ok(LoadedInput {
                name,
                kind,
                profiles: vec![profile],
                flat: Vec::new(),
                annotate: false,
                report: None,
                symbols: None,
            })
        }
        Opened::Trace(mut inp, kind) if kind.is_pprof() => {
            let mut profile = read_pprof(&mut inp, &opts.pprof)?;
            if opts.drop_empty_stacks {
                profile = without_empty_stacks(profile);
            }
            let symbols = opts.symbols.options().map(|_| pprof_coverage(&profile));
            Ok(LoadedInput {
                name,
                kind,
                profiles: Vec::new(),
                flat: vec![profile],
                annotate: false,
                report: None,
                symbols,
            })
        }
        Opened::Trace(inp, kind) => load_trace(inp, kind, &name, opts),
        Opened::Hprof(_) => Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{name}: an HPROF heap dump is a snapshot of objects, not an allocation profile; \
                 convert it first (`heapconv convert {name} --to pprof`) and merge the pprof"
            ),
        )),
    }
}

pub(crate) fn load_trace(inp: Input, kind: InputKind, name: &str, opts: &LoadOptions) -> Result<LoadedInput> {
    let sel = HeapprofdSelection {
        decode: &opts.decode,
        pids: &opts.pids,
        heap: opts.heap.as_deref(),
        dump: opts.dump,
        symbolize: opts.symbols.options(),
        proguard: &opts.symbols.proguard,
    };
    let (profiles, report, symbols) = match select_heapprofd_dumps(inp, &sel) {
        Ok(r) => r,
        Err(e) if kind == InputKind::Unknown => {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{name}: not a Perfetto trace, a DDM allocation-record capture nor a pprof profile ({})",
                    e.context()
                ),
            ));
        }
        Err(e) => return Err(e),
    };
    if profiles.is_empty() {
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{name}: no dump matches the selection (see `heapconv inspect`)"),
        ));
    }
    Ok(LoadedInput {
        name: name.to_owned(),
        kind,
        profiles,
        flat: Vec::new(),
        annotate: opts.annotations,
        report: Some(report),
        symbols,
    })
}

/// Loads every input and merges their profiles into accumulators with `sides` value sets,
/// `side_of(input index)` choosing each input's side. Inputs are read in parallel; the result
/// does not depend on their order. Returns the accumulator and, in input order, what each
/// input held.
pub fn merge_inputs(
    inputs: &[PathBuf],
    load: &LoadOptions,
    merge: &MergeOptions,
    sides: usize,
    side_of: &(dyn Fn(usize) -> usize + Sync),
) -> Result<(Merger, Vec<InputInfo>)> {
    if inputs.is_empty() {
        return Err(Error::new(ErrorKind::Usage, "no input given"));
    }
    // Memory stays proportional to the distinct stacks, not to the number of inputs: inputs are
    // decoded in parallel, but added to a pool of accumulators, about one per worker thread,
    // each taken by the task that adds an input and given back after. (An accumulator per
    // rayon split, as a `fold` makes, held a copy of every common stack per split: merging six
    // copies of one 40 MB profile took four times the memory of one.)
    let pool: Mutex<Vec<Merger>> = Mutex::new(Vec::new());
    let infos: Mutex<Vec<(usize, InputInfo)>> = Mutex::new(Vec::new());
    let parallel = inputs.par_iter().enumerate().try_for_each(|(i, path)| {
        let mut clock = crate::timing::Phases::start("input");
        let loaded = match load_for_merge(path, load)? {
            ForMerge::Loaded(l) => *l,
            ForMerge::Pprof { name, kind, bytes } => {
                // Read without tables, straight into an accumulator.
                let lean = crate::decode::pprof::decode_pprof_lean(&bytes, &name)?;
                clock.done(&format!("decode {i}"));
                let taken = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
                let mut m = taken.unwrap_or_else(|| Merger::new(merge.clone(), sides));
                // The strings first; then they and the bytes they borrow are freed, so that the
                // accumulator grows into their room rather than into fresh pages.
                let LeanPprof { profile, strings, mappings, frames, lines } = lean;
                let started = m.add_pprof_strings(&profile, &strings, side_of(i));
                drop(strings);
                drop(bytes);
                let parts =
                    PprofParts { profile: &profile, strings: &[], mappings: &mappings, frames: &frames, lines: &lines };
                let added = started.and_then(|s| s.map_or(Ok(()), |s| m.add_pprof_rest(&parts, s)));
                drop((mappings, frames, lines));
                pool.lock().unwrap_or_else(|e| e.into_inner()).push(m);
                clock.done(&format!("add {i}"));
                added?;
                let info = InputInfo {
                    warnings: pprof_warnings(&name, &profile),
                    name,
                    kind,
                    converted: None,
                    profiles: 1,
                    report: None,
                    symbols: None,
                };
                infos.lock().unwrap_or_else(|e| e.into_inner()).push((i, info));
                return Ok(());
            }
        };
        clock.done(&format!("load {i}"));
        let taken = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut m = taken.unwrap_or_else(|| Merger::new(merge.clone(), sides));
        let added: Result<()> = (|| {
            for p in &loaded.profiles {
                m.add_any(AnyProfile::Tree(p), side_of(i), loaded.annotate)?;
            }
            for p in &loaded.flat {
                m.add_any(AnyProfile::Flat(p), side_of(i), false)?;
            }
            Ok(())
        })();
        pool.lock().unwrap_or_else(|e| e.into_inner()).push(m);
        clock.done(&format!("add {i}"));
        added?;
        let converted = loaded.report.as_ref().map(|r| load.dump_filter(r));
        let warnings = loaded.flat.iter().flat_map(|f| pprof_warnings(&loaded.name, f)).collect();
        let info = InputInfo {
            warnings,
            name: loaded.name,
            kind: loaded.kind,
            converted,
            profiles: loaded.profiles.len() + loaded.flat.len(),
            report: loaded.report,
            symbols: loaded.symbols,
        };
        infos.lock().unwrap_or_else(|e| e.into_inner()).push((i, info));
        Ok::<_, Error>(())
    });
    let mut clock = crate::timing::Phases::start("inputs");
    let merged = parallel.and_then(|()| merge_tree(pool.into_inner().unwrap_or_else(|e| e.into_inner())));
    let merger = match merged {
        Ok(m) => m.unwrap_or_else(|| Merger::new(merge.clone(), sides)),
        // Which error the parallel run met first, and which inputs it names, depends on the
        // threads: say the one a merge in input order meets.
        Err(e) => return Err(first_error_in_order(inputs, load, merge, sides, side_of).unwrap_or(e)),
    };
    clock.done("merge accumulators");
    let mut infos = infos.into_inner().unwrap_or_else(|e| e.into_inner());
    infos.sort_by_key(|x| x.0);
    Ok((merger, infos.into_iter().map(|x| x.1).collect()))
}

/// The first error that merging `inputs` one by one, in order, into one accumulator meets
/// (`None` if it meets none): the error a failed parallel merge reports, the same on every run.
fn first_error_in_order(
    inputs: &[PathBuf],
    load: &LoadOptions,
    merge: &MergeOptions,
    sides: usize,
    side_of: &(dyn Fn(usize) -> usize + Sync),
) -> Option<Error> {
    let mut m = Merger::new(merge.clone(), sides);
    for (i, path) in inputs.iter().enumerate() {
        let added = load_input(path, load).and_then(|loaded| {
            for p in &loaded.profiles {
                m.add_any(AnyProfile::Tree(p), side_of(i), loaded.annotate)?;
            }
            for p in &loaded.flat {
                m.add_any(AnyProfile::Flat(p), side_of(i), false)?;
            }
            Ok(())
        });
        if let Err(e) = added {
            return Some(e);
        }
    }
    None
}

/// Refuses a pprof input where a command needs a Perfetto trace, with an error that says
/// which commands take pprof. Standard input and unreadable files pass (the command reports
/// those itself).
pub fn refuse_pprof(path: &Path, command: &str) -> Result<()> {
    use std::io::Read;
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let Ok(mut input) = Input::open(path, 1 << 20) else { return Ok(()) };
    let mut head = Vec::new();
    let _ = input.reader().take(64).read_to_end(&mut head);
    if crate::decode::sniff(&head).is_pprof() {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{} is a pprof profile; `heapconv {command}` reads Perfetto traces (convert, merge, diff, top and inspect take pprof)",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// The error for an input a command that reads heapprofd traces does not read.
pub(crate) fn not_a_trace(input: &Path, what: &str, command: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("{} is {what}; {command} reads the dumps of a heapprofd trace (a Perfetto trace)", input.display()),
    )
}

/// How a trace is read: the largest expansion of a `compressed_packets` bundle, the rest as
/// [`DecodeOptions::default`].
pub fn decode_options(max_bundle_bytes: u64) -> DecodeOptions {
    DecodeOptions { max_bundle_bytes, ..DecodeOptions::default() }
}

/// Which way the entries of a DDM capture run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EntryOrder {
    /// Guessed from the capture.
    #[default]
    Auto,
    /// The first entry is the most recent allocation.
    NewestFirst,
    /// The first entry is the oldest allocation.
    OldestFirst,
}

/// How DDM allocation records become a profile: the choices a user makes, mapped onto the
/// decoder's options by [`DdmChoices::options`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DdmChoices {
    /// Which way the entries run.
    pub order: EntryOrder,
    /// Keep only the N most recent allocations of each capture.
    pub recent: Option<usize>,
    /// The VM's stack depth limit (default: the deepest stack of each capture).
    pub max_depth: Option<usize>,
    /// Leave out the `[truncated]` root frames.
    pub no_truncation_marks: bool,
    /// Leave out the leaf frame naming the allocated class.
    pub no_alloc_class_frame: bool,
    /// Label each sample with its allocation number (`allocation`).
    pub allocation_label: bool,
}

impl DdmChoices {
    /// The decoder's options.
    pub fn options(&self) -> DdmOptions {
        use crate::decode::ddm_alloc_records::OrderChoice;
        DdmOptions {
            order: match self.order {
                EntryOrder::Auto => OrderChoice::Auto,
                EntryOrder::NewestFirst => OrderChoice::NewestFirst,
                EntryOrder::OldestFirst => OrderChoice::OldestFirst,
            },
            recent: self.recent,
            max_depth: self.max_depth,
            truncation_marks: !self.no_truncation_marks,
            alloc_class_frame: !self.no_alloc_class_frame,
            allocation_label: self.allocation_label,
            ..DdmOptions::default()
        }
    }
}

/// Where symbols come from: the symbol directories and how files found there are matched.
/// One struct for every command that symbolizes; [`SymbolSources::options`] gives the
/// symbolizer's options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SymbolSources {
    /// Directories searched recursively by build id.
    pub dirs: Vec<PathBuf>,
    /// Use a file found by path even if its build id differs.
    pub ignore_build_id: bool,
    /// Only find the files (`PERFETTO_SYMBOLIZER_MODE=find`).
    pub find_only: bool,
    /// The least share (percent) of native frames that must get symbols (the gate).
    pub min_symbolized: Option<f64>,
    /// Report the symbol coverage even without directories or a gate (of the symbols the
    /// inputs have), as batch summaries do.
    pub always_report: bool,
    /// ProGuard/R8 mapping files for Java names. Default: none.
    pub proguard: ProguardMaps,
}

/// The ProGuard/R8 mapping files of a run: opened (indexed) once, on first use, and shared by
/// every copy of the options, so that the report covers the whole run.
#[derive(Clone, Default)]
pub struct ProguardMaps {
    specs: Vec<MapSpec>,
    opened: Arc<Mutex<Option<Arc<Deobfuscator>>>>,
    /// The deobfuscators made for traces holding `DeobfuscationMapping` packets (the maps
    /// given, then the trace's), whose counts join the report.
    traced: Arc<Mutex<Vec<Arc<Deobfuscator>>>>,
}

impl std::fmt::Debug for ProguardMaps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.specs).finish()
    }
}

impl PartialEq for ProguardMaps {
    fn eq(&self, other: &Self) -> bool {
        self.specs == other.specs
    }
}

impl Eq for ProguardMaps {}

impl ProguardMaps {
    /// Maps given as `[PACKAGE=]FILE` arguments, then as `PERFETTO_PROGUARD_MAP`'s value
    /// (traceconv's syntax: `package=file[:package=file…]`).
    pub fn new(args: &[String], env: Option<&str>) -> Result<Self> {
        let mut specs: Vec<MapSpec> = args.iter().map(|a| MapSpec::parse(a)).collect();
        if let Some(env) = env {
            specs.extend(MapSpec::parse_env(env)?);
        }
        Ok(ProguardMaps { specs, opened: Arc::default(), traced: Arc::default() })
    }

    /// Adds maps found by [`discover_mapping_files`] (after the ones given).
    pub fn extend(&mut self, specs: impl IntoIterator<Item = MapSpec>) {
        self.specs.extend(specs);
    }

    /// Whether no map was given.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The maps, opened on first call; `None` when none was given.
    pub fn open(&self) -> Result<Option<Arc<Deobfuscator>>> {
        if self.specs.is_empty() {
            return Ok(None);
        }
        let mut slot = self.opened.lock().map_err(|_| Error::new(ErrorKind::Io, "mapping files: a thread panicked"))?;
        if slot.is_none() {
            *slot = Some(Arc::new(Deobfuscator::open(&self.specs)?));
        }
        Ok(slot.clone())
    }

    /// The maps for one Perfetto trace: [`ProguardMaps::open`]'s, and after them the
    /// `DeobfuscationMapping` packets the trace holds (read by the pre-pass of
    /// [`prepare_trace`], inside `compressed_packets` bundles too), which trace processor
    /// applies as if given as map files; with what that pass learnt of the trace's packages
    /// (`packages_list`, the processes' uids). The pre-pass also hands the decoder the
    /// trace's ModuleSymbols. Standard input read as a stream is read whole, so that it can be
    /// read twice.
    pub(crate) fn open_for_trace(&self, inp: &mut Input, max_packet: u64) -> Result<TraceMaps> {
        let decode = DecodeOptions { max_packet_bytes: max_packet, ..DecodeOptions::default() };
        prepare_trace(inp, &decode, self, &mut None)
    }

    /// The maps for one trace of which a pre-pass read `info` ([`prepare_trace`]).
    fn for_trace(
        &self,
        inp: &Input,
        max_packet: u64,
        mut info: crate::decode::perfetto::deobfuscation::TraceJavaInfo,
    ) -> Result<TraceMaps> {
        // Several app packages profiled: each package-less Java frame takes its process's.
        // (A pass of its own, needed only when there are maps to apply: the guess needs the
        // processes and packages of the whole trace before it reads the first frame.)
        if info.profiled_packages().len() > 1
            && (!self.specs.is_empty() || !info.tables.is_empty())
            && let Some(Ok(mut again)) = inp.reopen()
        {
            let needs_guess = |path: &str| {
                crate::symbolize::proguard::package_of_mapping_path(path).is_none() && !path.starts_with("/memfd:")
            };
            info.frame_packages = crate::decode::perfetto::deobfuscation::scan_frame_packages(
                &mut again,
                max_packet,
                256 << 20,
                &info,
                &needs_guess,
            );
        }
        let deob = if info.tables.is_empty() {
            self.open()?
        } else {
            let d = Arc::new(Deobfuscator::with_trace_tables(&self.specs, &inp.name, info.tables.clone())?);
            if let Ok(mut t) = self.traced.lock() {
                t.push(d.clone());
            }
            Some(d)
        };
        Ok(TraceMaps::new(deob, &info, self.specs.len()))
    }

    /// What deobfuscation did so far: the maps given and the `DeobfuscationMapping` packets of
    /// the traces read (a map used for several traces counted once, its counts summed); `None`
    /// when no map was given or found in a trace, or none was opened.
    pub fn report(&self) -> Option<DeobfuscationReport> {
        let mut parts: Vec<DeobfuscationReport> = Vec::new();
        if let Some(d) = self.opened.lock().ok()?.as_ref() {
            parts.push(d.report());
        }
        parts.extend(self.traced.lock().ok()?.iter().map(|d| d.report()));
        let mut parts = parts.into_iter();
        let mut out = parts.next()?;
        for p in parts {
            join_reports(&mut out, p);
        }
        Some(out)
    }
}

/// Adds `more`'s counts to `into`: a map both name (same file or trace packets, same package)
/// gets the sums (and every use), others are appended; the names left obfuscated are summed,
/// with at most five examples.
fn join_reports(into: &mut DeobfuscationReport, more: DeobfuscationReport) {
    for m in more.maps {
        match into.maps.iter_mut().find(|u| u.counts.map == m.counts.map && u.counts.package == m.counts.package) {
            Some(u) => {
                u.counts.add_counts(&m.counts);
                for w in m.used_for {
                    if !u.used_for.contains(&w) {
                        u.used_for.push(w);
                    }
                }
            }
            None => into.maps.push(m),
        }
    }
    into.left_obfuscated += more.left_obfuscated;
    for e in more.left_examples {
        if into.left_examples.len() < 5 && !into.left_examples.contains(&e) {
            into.left_examples.push(e);
        }
    }
}

/// The maps of one trace and how trace processor applies them: to Java frames by package
/// ([`FrameRules`]), to heap graphs by the process's package.
#[derive(Debug, Clone, Default)]
pub(crate) struct TraceMaps {
    deob: Option<Arc<Deobfuscator>>,
    rules: FrameRules,
    /// pid → package, from `packages_list` and the processes' uids.
    pid_packages: BTreeMap<u64, String>,
}

/// A [`Session`] over a trace's maps, with the rules for its frames.
pub(crate) struct FrameSession<'a> {
    session: Session<'a>,
    rules: &'a FrameRules,
}

impl TraceMaps {
    /// `deob`'s maps: the first `files` given as files, the rest from the trace's packets.
    fn new(
        deob: Option<Arc<Deobfuscator>>,
        info: &crate::decode::perfetto::deobfuscation::TraceJavaInfo,
        files: usize,
    ) -> Self {
        let mut rules = FrameRules::default();
        let mut pid_packages = BTreeMap::new();
        for &pid in info.processes.keys() {
            if let Some(p) = info.package_of_pid(pid) {
                pid_packages.insert(pid, p.to_owned());
            }
        }
        let mut profiled: Vec<String> = Vec::new();
        for pid in &info.profiled_pids {
            if let Some(p) = pid_packages.get(pid)
                && !profiled.contains(p)
            {
                profiled.push(p.clone());
            }
        }
        match profiled.len() {
            0 => {}
            1 => rules.guessed_package = profiled.pop(),
            _ => rules.several_packages = profiled,
        }
        rules.frame_packages = info.frame_packages.clone();
        if let Some(d) = &deob {
            for (i, m) in d.maps().iter().enumerate() {
                match m.package() {
                    Some(p) => rules.packaged.push((i, p.to_owned())),
                    None if i >= files => rules.heap_graph_only.push(i),
                    None => {}
                }
            }
        }
        TraceMaps { deob, rules, pid_packages }
    }

    /// Whether there are maps.
    pub(crate) fn is_some(&self) -> bool {
        self.deob.is_some()
    }

    /// A session for the trace's frames; `None` without maps.
    pub(crate) fn session(&self) -> Option<FrameSession<'_>> {
        Some(FrameSession { session: self.deob.as_deref()?.session(), rules: &self.rules })
    }

    /// Deobfuscates a heap graph with the map of its process's package: the package
    /// `packages_list` gives the process's uid when a map is given for it, else its name up to
    /// any `:`.
    pub(crate) fn deobfuscate_graph(&self, dump: &mut HeapDump) {
        let Some(d) = self.deob.as_deref() else { return };
        let listed = dump.pid.and_then(|p| self.pid_packages.get(&u64::from(p)));
        if let Some(p) = listed.filter(|p| d.maps().iter().any(|m| m.package() == Some(p.as_str()))) {
            let mut s = d.session();
            if let Some(i) = s.for_package(Some(p), &format!("heap dump classes and fields of {p} (packages_list)")) {
                deobfuscate_heap_dump(dump, &mut s, i);
            }
            return;
        }
        deobfuscate_dump(Some(d), dump);
    }
}

impl SymbolSources {
    /// The symbolizer's options: with directories, symbolization; without, counting the
    /// symbols the inputs already have when a gate asks for coverage; else none.
    pub fn options(&self) -> Option<SymbolizeOptions> {
        if self.dirs.is_empty() {
            return (self.min_symbolized.is_some() || self.always_report).then(SymbolizeOptions::default);
        }
        Some(SymbolizeOptions {
            symbol_dirs: self.dirs.clone(),
            ignore_build_id: self.ignore_build_id,
            find_only: self.find_only,
        })
    }

    /// Whether a symbolization report passes the gate (always, without one).
    pub fn gate_passes(&self, report: &SymbolizeReport) -> bool {
        self.min_symbolized.is_none_or(|pct| report.frame_percent() >= pct)
    }
}

/// How `merge`, `diff` and `top` merge: keep only these sample types, in this order (type
/// names, or meanings such as `unreleased-size`); empty: keep them all.
pub fn merge_options(sample_types: &[String]) -> MergeOptions {
    MergeOptions {
        sample_types: if sample_types.is_empty() {
            None
        } else {
            Some(sample_types.iter().map(|s| TypeSelector::parse(s)).collect())
        },
    }
}

/// True when `path` is a DDM allocation-record capture, by its content (standard input, `-`,
/// counts as one: it is looked at only when read).
pub fn is_ddm_capture(path: &Path) -> bool {
    path.as_os_str() == "-" || crate::decode::sniff_file(path).is_ok_and(|k| k.is_ddm())
}

/// The index of the sample type `selector` names in `header` (a type name, or a meaning such as
/// `total-size`); `None`: the profile's default type (a pprof input's `default_sample_type`, or
/// else its last type, as `go tool pprof` picks). A selector the profile has no type for is a
/// usage error that lists the types it has.
pub fn pick_sample_type(header: &crate::model::ProfileHeader, selector: Option<&str>) -> Result<usize> {
    let Some(sel) = selector.map(TypeSelector::parse) else {
        return Ok(header.default_sample_type.min(header.sample_types.len().saturating_sub(1)));
    };
    let found = match &sel {
        TypeSelector::Name(n) => header.sample_types.iter().position(|t| t.name == *n),
        TypeSelector::Kind(k) => header.sample_types.iter().position(|t| t.kind == *k),
    };
    found.ok_or_else(|| {
        let have: Vec<String> = header.sample_types.iter().map(|t| t.name.clone()).collect();
        let asked = match &sel {
            TypeSelector::Name(n) => format!("{n:?}"),
            TypeSelector::Kind(_) => selector.unwrap_or_default().to_owned(),
        };
        Error::new(ErrorKind::Usage, format!("no sample type {asked}; the profile has {}", have.join(", ")))
    })
}

/// Warnings about how a pprof input was read: its strings that were not valid UTF-8 (the
/// decoder replaced their bad bytes and said so in a comment), each line naming the input.
pub fn pprof_warnings(name: &str, profile: &FlatProfile) -> Vec<String> {
    let note = crate::decode::pprof::invalid_utf8_note(0);
    let tail = note.trim_start_matches("heapconv: 0");
    profile
        .header
        .meta
        .comments
        .iter()
        .filter(|c| c.starts_with("heapconv: ") && c.ends_with(tail))
        .map(|c| format!("{name}: {}", c.trim_start_matches("heapconv: ")))
        .collect()
}

/// `profile` without its samples that had no locations (the decoder gave them one frame named
/// [`crate::decode::pprof::NO_STACK`]); the profile itself when it has none.
fn without_empty_stacks(profile: FlatProfile) -> FlatProfile {
    let tables = &profile.tables;
    let is_empty_stack = |frames: &[crate::model::FrameId]| {
        frames.len() == 1 && {
            let f = tables.frame(frames[0]);
            f.mapping.is_none()
                && f.lines.is_empty()
                && f.rel_pc == 0
                && tables.strings.get(f.name) == crate::decode::pprof::NO_STACK
        }
    };
    if !(0..profile.sample_count()).any(|i| is_empty_stack(profile.sample(i).0)) {
        return profile;
    }
    let mut out =
        FlatProfile::new(profile.tables.clone(), profile.header.meta.clone(), profile.header.sample_types.clone());
    out.header.default_sample_type = profile.header.default_sample_type;
    for i in 0..profile.sample_count() {
        let (frames, values) = profile.sample(i);
        if !is_empty_stack(frames) {
            out.push_sample(frames, values, profile.sample_labels(i), profile.sample_str_labels(i));
        }
    }
    for &(key, unit) in profile.num_label_units() {
        out.set_num_label_unit(key, unit);
    }
    out
}

/// The mapping files [`discover_mapping_files`] found, and what to tell about the choice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveredMaps {
    /// The maps to use, in path order: package-named maps with their package, then the Gradle
    /// map (without a package).
    pub specs: Vec<MapSpec>,
    /// Warnings: several Gradle maps were found, which one was used and the candidates.
    pub warnings: Vec<String>,
}

/// Finds ProGuard/R8 mapping files under `dir` (`--mapping-dir`), walked in path order:
/// - `<package>.txt` and `<package>/mapping.txt` directly under `dir`, where `<package>` is a
///   dotted Java package name (`com.example.app`): a map for that package;
/// - Gradle build outputs, `…/<module>/build/outputs/mapping/<variant>/mapping.txt` at any
///   depth: the application id of a module cannot be known offline, so one of them becomes the
///   map without a package: the only one; else the first (in path order) whose variant is
///   `release`, else the first whose variant ends in `Release`, else the first; a warning
///   names the one used and lists the candidates.
pub fn discover_mapping_files(dir: &Path) -> Result<DiscoveredMaps> {
    if !dir.is_dir() {
        return Err(Error::new(ErrorKind::Usage, format!("--mapping-dir {}: not a directory", dir.display())));
    }
    let is_package = |s: &str| {
        s.contains('.')
            && s.split('.').all(|p| {
                p.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    let mut found = DiscoveredMaps::default();
    let mut gradle: Vec<(String, PathBuf)> = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| Error::new(ErrorKind::Io, format!("--mapping-dir {}: {e}", dir.display())))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let path = entry.path();
        let rel: Vec<String> = match path.strip_prefix(dir) {
            Ok(r) => r.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect(),
            Err(_) => continue,
        };
        let rel: Vec<&str> = rel.iter().map(String::as_str).collect();
        match rel.as_slice() {
            [name] if name.ends_with(".txt") && is_package(&name[..name.len() - 4]) => {
                found.specs.push(MapSpec { package: Some(name[..name.len() - 4].to_owned()), path: path.to_path_buf() })
            }
            [pkg, "mapping.txt"] if is_package(pkg) => {
                found.specs.push(MapSpec { package: Some((*pkg).to_owned()), path: path.to_path_buf() })
            }
            [.., "build", "outputs", "mapping", variant, "mapping.txt"] => {
                gradle.push(((*variant).to_owned(), path.to_path_buf()))
            }
            _ => {}
        }
    }
    let pick = gradle
        .iter()
        .position(|g| g.0 == "release")
        .or_else(|| gradle.iter().position(|g| g.0.ends_with("Release")))
        .or((!gradle.is_empty()).then_some(0));
    if let Some(i) = pick {
        if gradle.len() > 1 {
            let all: Vec<String> = gradle.iter().map(|g| g.1.display().to_string()).collect();
            found.warnings.push(format!(
                "--mapping-dir {}: {} Gradle mapping files; used {} (variant {}) for inputs without a package; candidates: {}",
                dir.display(),
                gradle.len(),
                gradle[i].1.display(),
                gradle[i].0,
                all.join(", ")
            ));
        }
        found.specs.push(MapSpec { package: None, path: gradle.swap_remove(i).1 });
    }
    Ok(found)
}
