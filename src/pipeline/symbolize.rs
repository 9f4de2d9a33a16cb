//! `heapconv symbolize`: a trace's native frames symbolized offline, as Perfetto ModuleSymbols
//! packets.

use std::collections::BTreeMap;
use std::path::Path;

use super::batch::{BatchInput, Done, file_for};
use crate::decode::Input;
use crate::decode::perfetto::module_symbols::scan_module_symbols_at_rest;
use crate::decode::perfetto::prepass::{PrePassWants, pre_pass, pre_pass_at_rest};
use crate::decode::perfetto::symbol_scan::FramesSeen;
use crate::decode::perfetto::{DecodeOptions, ListDump, decode_heapprofd_frames};
use crate::encode::module_symbols::encode_module_symbols;
use crate::error::Result;
use crate::model::{Tables, TraceReport};
use crate::output::write_atomic;
use crate::symbolize::{SymbolizeOptions, SymbolizeReport, Symbolizer};

/// What `symbolize` did.
#[derive(Debug)]
pub struct SymbolizeRun {
    /// The ModuleSymbols packets (concatenated `Trace` messages).
    pub symbols: Vec<u8>,
    /// Per-mapping report.
    pub report: SymbolizeReport,
    /// What the trace holds.
    pub trace: TraceReport,
}

/// Runs `symbolize`: decodes `input`, symbolizes every native frame, and returns Perfetto
/// ModuleSymbols packets (written to `output` when given).
pub fn run_symbolize(
    input: &Path,
    output: Option<&Path>,
    opts: &SymbolizeOptions,
    decode: &DecodeOptions,
) -> Result<SymbolizeRun> {
    let mut inp = Input::open(input, decode.max_gzip_bytes)?;
    let mut dopts = decode.clone();
    dopts.include_unchanged = false;
    // The trace is read where it lies when it is a plain file (mapped, its pages released
    // behind the decoder): no packet is copied into fresh pages.
    dopts.read_in_place = true;
    let mut clock = crate::timing::Phases::start("symbolize");
    crate::timing::at("symbolize", "start");
    // The symbol directories are indexed here (in parallel, on rayon); then another thread
    // reads the trace a second time for its frames only (a pre-pass over mappings and frames;
    // callstacks and samples skipped by length) and starts their lookups: they overlap the
    // whole decoding below, which needs the symbolizer only when a dump chain ends. (The
    // decoder reads the ModuleSymbols packets itself, a scan of top-level packets only: a
    // pre-pass on this thread that also read the frames put the frames' reading on the
    // critical path, 15-25% slower.) That thread uses no rayon: this one may be a rayon worker
    // of a batch, blocked in `join` until the thread is done.
    let index = Symbolizer::new(opts.clone());
    crate::timing::at("symbolize", "symbol directories indexed");
    // A trace at rest (a plain file, bytes in memory) is looked over for ModuleSymbols here, by
    // its packets' tags and lengths only (the decoder takes what is found instead of reading
    // the trace for it); one that holds none gets its frames' lookups started while the scan
    // below goes on.
    let named = match scan_module_symbols_at_rest(&inp, dopts.max_packet_bytes) {
        Some(symbols) => {
            let named = symbols.packets > 0 || !symbols.is_empty();
            inp.set_prescanned_symbols(symbols);
            named
        }
        None => true,
    };
    let again = if opts.symbol_dirs.is_empty() { None } else { inp.reopen().and_then(|r| r.ok()) };
    let (starting, ready) = match again {
        Some(mut again) => {
            let d = dopts.clone();
            let mut s = index;
            let job = std::thread::spawn(move || {
                let wants = PrePassWants { java: false, module_symbols: false, frames: true };
                // The lookups of the frames found start every few thousand frames, while the
                // scan goes on; not in a trace that holds ModuleSymbols (a packet of which may
                // come last and name them all). So the frames wait for the scan's end when
                // the scan reads a stream, and when it has seen ModuleSymbols.
                let mut early = |t: &Tables, r: std::ops::Range<usize>| s.prefetch(t, r);
                let early: Option<&mut FramesSeen<'_>> = if named { None } else { Some(&mut early) };
                let scan = match pre_pass_at_rest(&again, &d, wants, early) {
                    Some(p) => p.frames,
                    None => pre_pass(&mut again, &d, wants).frames,
                };
                crate::timing::at("symbolize", "frame scan done");
                if let Some(scan) = scan
                    && !scan.module_symbols
                {
                    s.prefetch(&scan.tables, 0..scan.tables.frames().len());
                }
                s
            });
            (Some(job), None)
        }
        None => (None, Some(index)),
    };
    let mut symbolizer = Starting { ready, scanned: starting.is_some(), starting, opts };
    // The bytes of the last dump of each process and heap are attributed to mappings (the
    // report's byte figures). Symbolization needs frames, not stack trees: the callstacks stay
    // flat frame lists.
    let mut last: BTreeMap<(u64, String), ListDump> = BTreeMap::new();
    let symbolizer_cell = std::cell::RefCell::new(&mut symbolizer);
    let (trace, tables, lists) = decode_heapprofd_frames(
        &mut inp,
        &dopts,
        // Without the scan (standard input), lookups start on another thread as soon as frames
        // are interned, while the decoder reads callstacks and samples. (Frames a scan missed,
        // where a damaged trace stopped it, are looked up when their chain ends.)
        &mut |t, r| {
            let mut s = symbolizer_cell.borrow_mut();
            if !s.scanned {
                s.get().prefetch(t, r);
            }
        },
        // Each chain's end applies the answers, from the lookups' cache.
        &mut |t, r| {
            crate::timing::at("symbolize", "a chain ends: answers applied from");
            symbolizer_cell.borrow_mut().get().symbolize(t, r);
            crate::timing::at("symbolize", "answers applied");
        },
        &mut |d| {
            last.insert((d.header.meta.pid.unwrap_or(0), d.header.meta.heap.clone()), d);
            Ok(())
        },
    )?;
    let symbolizer = symbolizer.get();
    clock.done("decode and symbolize");
    // The report's byte figures and the output read the same final tables: side by side.
    let (attributions, symbols) = rayon::join(
        || {
            let attribute =
                |d: &ListDump| crate::symbolize::attribute_lists(&d.header, &d.stacks, &d.values, &lists, &tables);
            last.values().map(attribute).collect::<Vec<_>>()
        },
        || encode_module_symbols(&tables),
    );
    let mut report = symbolizer.report(&tables);
    for a in &attributions {
        report.attribute(a);
    }
    clock.done("attribute bytes and encode");
    if let Some(out) = output {
        write_atomic(out, &symbols, &[input.to_path_buf()])?;
    }
    clock.done("write");
    Ok(SymbolizeRun { symbols, report, trace })
}

/// The symbolizer of a run, or the thread still building it (and starting lookups with it).
struct Starting<'a> {
    ready: Option<Symbolizer>,
    starting: Option<std::thread::JoinHandle<Symbolizer>>,
    /// The thread scans the trace for frames and starts their lookups.
    scanned: bool,
    opts: &'a SymbolizeOptions,
}

impl Starting<'_> {
    /// The symbolizer, waiting for the thread if it is still at work (one that panicked is
    /// replaced by a new symbolizer, which looks everything up itself).
    fn get(&mut self) -> &mut Symbolizer {
        if let Some(job) = self.starting.take() {
            self.ready = job.join().ok();
        }
        self.ready.get_or_insert_with(|| Symbolizer::new(self.opts.clone()))
    }
}

/// `symbolize` of one trace: ModuleSymbols packets in `OUT/<key>.symbols.pftrace`.
pub fn symbolize_one(
    input: &BatchInput,
    out_dir: &Path,
    opts: &SymbolizeOptions,
    decode: &DecodeOptions,
) -> Result<Done> {
    let out = file_for(out_dir, &input.key, SYMBOLS_EXT)?;
    let run = run_symbolize(&input.path, Some(&out), opts, decode)?;
    let warnings = run.report.problems.clone();
    Ok(Done { outputs: vec![out], report: Some(run.trace), symbols: Some(run.report), warnings, ..Done::default() })
}

/// The extension of `symbolize`'s outputs in a batch.
pub const SYMBOLS_EXT: &str = "symbols.pftrace";

/// `heapconv addr2line`: the addresses `addrs` of the ELF file `obj` symbolized, one JSON line
/// per address in llvm-symbolizer's `--output-style=JSON` shape (without the newline).
pub fn addr2line_json_lines(obj: &Path, addrs: &[u64]) -> Vec<String> {
    let results = crate::symbolize::symbolize_addresses(obj, addrs);
    addrs
        .iter()
        .zip(results)
        .map(|(addr, lines)| {
            let syms: Vec<serde_json::Value> = lines
                .iter()
                .map(|l| serde_json::json!({"FunctionName": l.function, "FileName": l.file, "Line": l.line, "Column": l.column}))
                .collect();
            let doc = serde_json::json!({"Address": format!("{addr:#x}"), "ModuleName": obj.display().to_string(), "Symbol": syms});
            doc.to_string()
        })
        .collect()
}
