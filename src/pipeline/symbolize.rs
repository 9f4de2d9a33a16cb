//! `heapconv symbolize`: a trace's native frames symbolized offline, as Perfetto ModuleSymbols
//! packets.

use std::collections::BTreeMap;
use std::path::Path;

use super::batch::{BatchInput, Done, file_for};
use crate::decode::Input;
use crate::decode::perfetto::prepass::{PrePassWants, pre_pass_again};
use crate::decode::perfetto::{DecodeOptions, ListDump, decode_heapprofd_frames};
use crate::encode::module_symbols::encode_module_symbols;
use crate::error::Result;
use crate::model::TraceReport;
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
    let mut clock = crate::timing::Phases::start("symbolize");
    // The symbol directories are indexed here (in parallel, on rayon); then one reading of the
    // trace ahead of the decoder (a pre-pass) collects its ModuleSymbols for the decoder and,
    // with symbol directories, its frames (mappings and frames only; callstacks and samples
    // skipped by length), whose lookups start at once on other threads: they overlap the whole
    // decoding below, which needs the symbolizer only when a dump chain ends.
    let mut index = Symbolizer::new(opts.clone());
    let wants = PrePassWants { java: false, module_symbols: true, frames: !opts.symbol_dirs.is_empty() };
    let mut scanned = false;
    if let Some(pre) = pre_pass_again(&inp, &dopts, wants) {
        if let Some(scan) = pre.frames {
            scanned = true;
            if !scan.module_symbols {
                index.prefetch(&scan.tables, 0..scan.tables.frames().len());
            }
        }
        if let Some(symbols) = pre.module_symbols {
            inp.set_prescanned_symbols(symbols);
        }
    }
    let mut symbolizer = Starting { ready: Some(index), scanned, opts };
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
        &mut |t, r| symbolizer_cell.borrow_mut().get().symbolize(t, r),
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

/// The symbolizer of a run.
struct Starting<'a> {
    ready: Option<Symbolizer>,
    /// The pre-pass scanned the trace for frames and started their lookups.
    scanned: bool,
    opts: &'a SymbolizeOptions,
}

impl Starting<'_> {
    /// The symbolizer.
    fn get(&mut self) -> &mut Symbolizer {
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
