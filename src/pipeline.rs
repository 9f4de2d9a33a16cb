//! Runs the stages in order for the command-line program: decode -> (symbolize, merge: later
//! stages) -> encode -> write. Each command is a plain struct of options and one function, so
//! the library can run exactly what the binary runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};

use crate::decode::ddm_alloc_records::{AllocCapture, DdmOptions, alloc_records_profile, decode_alloc_records};
use crate::decode::hprof::{
    HprofConvOptions, HprofConvReport, HprofReadOptions, HprofStats, NoSeek, hprof_conv, read_hprof_with_stats,
};
use crate::decode::perfetto::heap_graph::{HeapGraphOptions, decode_heap_graphs};
use crate::decode::perfetto::{DecodeOptions, decode_heapprofd, decode_heapprofd_observed, decode_heapprofd_with};
use crate::decode::{Input, InputKind, sniff};
use crate::encode::flamegraph_svg::{SvgOptions, encode_svg};
use crate::encode::folded::{FoldedOptions, encode_folded};
use crate::encode::hprof::{HprofOptions, HprofSummary, encode_hprof};
use crate::encode::module_symbols::encode_module_symbols;
use crate::encode::pprof::{PprofEncoder, PprofOptions, gzip_writer};
use crate::encode::summary::{
    DdmDepth, DdmInspect, DdmTally, DdmThread, HprofHeapTally, HprofInspect, HprofRootTally, HprofTagTally,
    SummaryOptions, convert_json,
};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{HeapDump, Profile, Tables, TraceReport, ValueKind};
use crate::output::{check_not_input, commit_staged, discard_staged, ensure_dir, stage_file, write_atomic};
use crate::symbolize::{SymbolizeOptions, SymbolizeReport, Symbolizer};

pub mod batch;
pub mod combine;
pub mod views;

/// Options of `heapconv profile` (traceconv `profile --alloc` compatible).
#[derive(Debug, Clone)]
pub struct ProfileOptions {
    /// Directory the files go to (created if needed). Default: `.`.
    pub output_dir: PathBuf,
    /// Keep only these pids (empty: all). Default: empty.
    pub pids: Vec<u64>,
    /// Keep only dumps whose trace-clock timestamp is one of these (empty: all). Default: empty.
    pub timestamps: Vec<i64>,
    /// ART frame annotations in function names. Default: true.
    pub annotations: bool,
    /// Write uncompressed `.pb` files (traceconv's exact names) instead of `.pb.gz`. Default: false.
    pub raw: bool,
    /// Decoder options. Default: [`DecodeOptions::default`].
    pub decode: DecodeOptions,
    /// Symbolize native frames from these symbol directories. Default: `None` (no
    /// symbolization; symbols already in the trace are still used).
    pub symbolize: Option<SymbolizeOptions>,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            output_dir: PathBuf::from("."),
            pids: Vec::new(),
            timestamps: Vec::new(),
            annotations: true,
            raw: false,
            decode: DecodeOptions::default(),
            symbolize: None,
        }
    }
}

/// What `profile` did.
#[derive(Debug)]
pub struct ProfileRun {
    /// Files written, in numbering order.
    pub written: Vec<PathBuf>,
    /// What the trace holds.
    pub report: TraceReport,
    /// The symbolization report, when symbolization was asked for.
    pub symbols: Option<SymbolizeReport>,
}

/// The file name traceconv gives a heapprofd dump: `heap_dump.N.PID.HEAP.pb`.
pub fn heap_dump_name(n: usize, profile: &Profile, ext: &str) -> String {
    format!("heap_dump.{n}.{}.{}.{ext}", profile.header.meta.pid.unwrap_or(0), profile.header.meta.heap)
}

/// Converts every heapprofd dump of `input` into one pprof file per (pid, dump, heap), as
/// `traceconv profile --alloc` does: dumps where nothing changed get no file. `progress` is
/// called with the number of profiles encoded so far.
pub fn run_profile(input: &Path, opts: &ProfileOptions, progress: &(dyn Fn(usize) + Sync)) -> Result<ProfileRun> {
    let mut inp = Input::open(input, opts.decode.max_gzip_bytes)?;
    let mut decode = opts.decode.clone();
    decode.pids = opts.pids.clone();
    decode.include_unchanged = false;
    let mut encoder = PprofEncoder::new(PprofOptions { annotations: opts.annotations, extras: true });
    let mut symbolizer = opts.symbolize.clone().map(Symbolizer::new);
    let symbolizing = symbolizer.is_some();
    // Without symbol directories frames are only counted, never changed, so the encoder may
    // still lay out callstacks early.
    let looking_up = opts.symbolize.as_ref().is_some_and(|s| !s.symbol_dirs.is_empty());
    let mut attributions: BTreeMap<(u64, String), crate::symbolize::Attribution> = BTreeMap::new();
    // Three things overlap: this thread decodes; an encoder thread turns each finished dump into
    // pprof, reading a replica of the tables that the decoder extends with what each dump added
    // (so the two never share a growing table); a writer thread compresses the encoded bytes
    // into a staged file as they come. Names are given at the end, in trace-time order, by
    // renaming.
    type Staged = (usize, Option<i64>, String, Result<PathBuf>);
    struct Job {
        order: usize,
        delta: crate::model::TablesDelta,
        meta: crate::model::ProfileMeta,
        sample_types: Vec<crate::model::ValueType>,
        default_sample_type: usize,
        stacks: Vec<crate::model::StackId>,
        values: Vec<i64>,
    }
    let (tx, rx) = mpsc::channel::<Staged>();
    // The decoder hands over one dump at a time: memory stays bounded however many dumps the
    // trace has.
    let (job_tx, job_rx) = mpsc::sync_channel::<Work>(0);
    // While the decoder works through a chain that defines callstacks (heapprofd puts every
    // callstack of a dump in the dump's chain), the encoder, idle until the dump is complete,
    // is handed the new callstacks to give them location ids and location lists early. Only
    // when it is waiting (a rendezvous `try_send`), so this never holds up the decoder.
    enum Work {
        Grow(crate::model::TablesDelta, Vec<crate::model::StackId>),
        Dump(Box<Job>),
    }
    let mut count = 0usize;
    let mut dir_ready = false;
    let mark = std::cell::Cell::new(crate::model::TablesMark::default());
    let mut early: Vec<crate::model::StackId> = Vec::new();
    let mut result = Ok((TraceReport::default(), Arc::new(Tables::default())));
    let raw = opts.raw;
    let dir = opts.output_dir.clone();
    std::thread::scope(|threads| {
        // Encoded bytes go, a megabyte at a time, to a writer thread that compresses them into
        // the staged file: encoding the next chunk overlaps compressing the last.
        let (chunk_tx, chunk_rx) = mpsc::sync_channel::<Chunk>(4);
        let writer_thread = threads.spawn(move || {
            let mut current: Option<Current> = None;
            let mut syncs = Vec::new();
            for msg in chunk_rx {
                match msg {
                    Chunk::Start(order, ts, key) => {
                        let sink = stage_file(&dir, order).map(|(tmp, file)| {
                            let buf = std::io::BufWriter::with_capacity(1 << 20, file);
                            let sink = if raw { Sink::Raw(buf) } else { Sink::Gzip(Box::new(gzip_writer(buf))) };
                            (tmp, sink)
                        });
                        current = Some((order, ts, key, sink));
                    }
                    Chunk::Data(bytes) => {
                        if let Some((_, _, _, Ok((tmp, sink)))) = &mut current {
                            if let Err(e) = sink.write_all(&bytes) {
                                let err = Error::io(format!("writing {}", tmp.display()), e);
                                let tmp = tmp.clone();
                                discard_staged([tmp]);
                                if let Some(c) = &mut current {
                                    c.3 = Err(err);
                                }
                            }
                        }
                    }
                    Chunk::End => {
                        let Some((order, ts, key, staged)) = current.take() else { continue };
                        let staged = staged.and_then(|(tmp, sink)| match sink.finish() {
                            Ok(f) => Ok((tmp, f)),
                            Err(e) => {
                                discard_staged([tmp.clone()]);
                                Err(Error::io(format!("writing {}", tmp.display()), e))
                            }
                        });
                        // Flushing to disk takes wall time but no CPU: done beside the work.
                        let tx = tx.clone();
                        syncs.push(std::thread::spawn(move || {
                            let staged = staged.and_then(|(tmp, f)| match crate::output::sync_file(&f) {
                                Ok(()) => Ok(tmp),
                                Err(e) => {
                                    discard_staged([tmp.clone()]);
                                    Err(Error::io(format!("writing {}", tmp.display()), e))
                                }
                            });
                            let _ = tx.send((order, ts, key, staged));
                        }));
                    }
                }
            }
            for s in syncs {
                let _ = s.join();
            }
        });
        let encoder_thread = threads.spawn(move || {
            let mut replica = Arc::new(Tables::default());
            for work in job_rx {
                let job = match work {
                    Work::Grow(delta, stacks) => {
                        Arc::make_mut(&mut replica).apply_delta(delta);
                        encoder.prepare(&replica, &stacks);
                        continue;
                    }
                    Work::Dump(job) => *job,
                };
                Arc::make_mut(&mut replica).apply_delta(job.delta);
                let key = format!("{}.{}", job.meta.pid.unwrap_or(0), job.meta.heap);
                let ts = job.meta.timestamp;
                let p = Profile::from_parts(
                    Arc::clone(&replica),
                    job.meta,
                    job.sample_types,
                    job.default_sample_type,
                    job.stacks,
                    job.values,
                );
                if chunk_tx.send(Chunk::Start(job.order, ts, key)).is_err() {
                    return;
                }
                let mut w = ChunkWriter { tx: &chunk_tx, buf: Vec::with_capacity(1 << 20) };
                let _ = encoder.encode_to(&p, &mut w).and_then(|_| std::io::Write::flush(&mut w));
                if chunk_tx.send(Chunk::End).is_err() {
                    return;
                }
            }
        });
        let job_tx_early = job_tx.clone();
        let mut stack_hook = |t: &Tables, stacks: &[crate::model::StackId]| {
            early.extend_from_slice(stacks);
            let work = Work::Grow(t.delta_since(mark.get()), std::mem::take(&mut early));
            match job_tx_early.try_send(work) {
                Ok(()) => mark.set(t.mark()),
                Err(mpsc::TrySendError::Full(Work::Grow(_, stacks))) => early = stacks,
                Err(_) => {}
            }
        };
        result = decode_heapprofd_observed(
            &mut inp,
            &decode,
            &mut |t, r| symbolize_hook(&mut symbolizer, t, r),
            if looking_up { None } else { Some(&mut stack_hook) },
            &mut |p: Profile| {
                if !opts.timestamps.is_empty() && !p.header.meta.timestamp.is_some_and(|t| opts.timestamps.contains(&t))
                {
                    return Ok(());
                }
                if !dir_ready {
                    ensure_dir(&opts.output_dir)?;
                    dir_ready = true;
                }
                let order = count;
                count += 1;
                progress(count);
                if symbolizing {
                    attributions.insert(
                        (p.header.meta.pid.unwrap_or(0), p.header.meta.heap.clone()),
                        crate::symbolize::attribute(&p),
                    );
                }
                let delta = p.tables.delta_since(mark.get());
                mark.set(p.tables.mark());
                let (_, meta, sample_types, default_sample_type, stacks, values) = p.into_parts();
                let job = Job { order, delta, meta, sample_types, default_sample_type, stacks, values };
                job_tx
                    .send(Work::Dump(Box::new(job)))
                    .map_err(|_| Error::new(ErrorKind::Io, "the pprof encoder thread stopped"))?;
                Ok(())
            },
        );
        drop(job_tx);
        drop(job_tx_early);
        let _ = encoder_thread.join();
        let _ = writer_thread.join();
    });
    let mut outs: Vec<Staged> = rx.into_iter().collect();
    let staged_paths = |outs: &mut Vec<Staged>| -> Vec<PathBuf> { outs.drain(..).filter_map(|o| o.3.ok()).collect() };
    let (report, tables) = match result {
        Ok(r) => r,
        Err(e) => {
            discard_staged(staged_paths(&mut outs));
            return Err(e);
        }
    };
    if let Some(e) = outs.iter().find_map(|o| o.3.as_ref().err()) {
        let e = Error::new(e.kind(), e.to_string());
        discard_staged(staged_paths(&mut outs));
        return Err(e);
    }
    if report.dumps.is_empty() && report.damage.is_none() {
        return Err(Error::new(ErrorKind::NoData, format!("{}: no heapprofd profile found in the trace", inp.name)));
    }
    // Files are numbered in trace-time order (stable for dumps at the same time).
    outs.sort_by_key(|o| (o.1.unwrap_or(i64::MIN), o.0));
    let ext = if opts.raw { "pb" } else { "pb.gz" };
    let inputs = [input.to_path_buf()];
    let mut written = Vec::new();
    let mut rest = outs.into_iter().enumerate();
    while let Some((n, (_, _, key, staged))) = rest.next() {
        let tmp = staged.expect("errors handled above");
        let path = opts.output_dir.join(format!("heap_dump.{}.{key}.{ext}", n + 1));
        if let Err(e) = commit_staged(&tmp, &path, &inputs) {
            discard_staged(rest.filter_map(|(_, o)| o.3.ok()));
            return Err(e);
        }
        written.push(path);
    }
    let symbols = symbolizer.map(|s| {
        let mut r = s.report(&tables);
        for a in attributions.values() {
            r.attribute(a);
        }
        r
    });
    Ok(ProfileRun { written, report, symbols })
}

/// Messages from the pprof encoder to the writer thread.
enum Chunk {
    /// A new output: order, dump time, name key.
    Start(usize, Option<i64>, String),
    /// Encoded bytes.
    Data(Vec<u8>),
    /// The output is complete.
    End,
}

/// The output the writer thread is filling: order, dump time, name key, staged file.
type Current = (usize, Option<i64>, String, Result<(PathBuf, Sink)>);

/// Where a staged output's bytes go.
enum Sink {
    Raw(std::io::BufWriter<std::fs::File>),
    Gzip(Box<flate2::write::GzEncoder<std::io::BufWriter<std::fs::File>>>),
}

impl Sink {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        match self {
            Sink::Raw(w) => w.write_all(b),
            Sink::Gzip(w) => w.write_all(b),
        }
    }

    fn finish(self) -> std::io::Result<std::fs::File> {
        let buf = match self {
            Sink::Raw(w) => w,
            Sink::Gzip(w) => w.finish()?,
        };
        buf.into_inner().map_err(|e| e.into_error())
    }
}

/// A `Write` that hands bytes to the writer thread a megabyte at a time.
struct ChunkWriter<'a> {
    tx: &'a mpsc::SyncSender<Chunk>,
    buf: Vec<u8>,
}

impl std::io::Write for ChunkWriter<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= 1 << 20 {
            self.flush()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(1 << 20));
            self.tx.send(Chunk::Data(chunk)).map_err(|_| std::io::Error::other("the writer thread stopped"))?;
        }
        Ok(())
    }
}

fn symbolize_hook(s: &mut Option<Symbolizer>, tables: &mut Tables, range: std::ops::Range<usize>) {
    if let Some(s) = s {
        s.symbolize(tables, range);
    }
}

/// Output formats of `convert`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// pprof, gzip-compressed.
    Pprof,
    /// Folded stacks.
    Folded,
    /// Flame graph SVG.
    Svg,
    /// JSON summary.
    Json,
}

impl Format {
    /// File extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Pprof => "pb.gz",
            Format::Folded => "folded",
            Format::Svg => "svg",
            Format::Json => "json",
        }
    }

    /// True for formats that are not text.
    pub fn is_binary(self) -> bool {
        self == Format::Pprof
    }
}

/// Which dumps of each (pid, heap) to convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpSelect {
    /// The last dump.
    Last,
    /// Every dump.
    All,
    /// The N-th dump, 1-based.
    Nth(usize),
}

/// Which heapprofd dumps of a trace a command converts, told from its selection options and
/// the trace's report: so that warnings and `--strict` judge those dumps only.
#[derive(Debug, Clone)]
pub struct DumpFilter {
    pids: Vec<u64>,
    heap: Option<String>,
    dump: DumpSelect,
    timestamps: Vec<i64>,
    /// The last dump index of each (pid, heap).
    last: BTreeMap<(u64, String), usize>,
}

impl DumpFilter {
    /// The dumps `convert` converts with these options.
    pub fn convert(opts: &ConvertOptions, report: &TraceReport) -> DumpFilter {
        DumpFilter::new(&opts.pids, opts.heap.clone(), opts.dump, &[], report)
    }

    /// The dumps `merge`, `diff` and `top` take from a trace input with these options.
    pub fn load(opts: &combine::LoadOptions, report: &TraceReport) -> DumpFilter {
        DumpFilter::new(&opts.pids, opts.heap.clone(), opts.dump, &[], report)
    }

    /// The dumps `profile` converts with these options (every dump of the selected pids and
    /// timestamps).
    pub fn profile(opts: &ProfileOptions, report: &TraceReport) -> DumpFilter {
        DumpFilter::new(&opts.pids, None, DumpSelect::All, &opts.timestamps, report)
    }

    fn new(pids: &[u64], heap: Option<String>, dump: DumpSelect, timestamps: &[i64], report: &TraceReport) -> Self {
        let mut last: BTreeMap<(u64, String), usize> = BTreeMap::new();
        for d in &report.dumps {
            let e = last.entry((d.pid, d.heap.clone())).or_insert(d.index);
            *e = (*e).max(d.index);
        }
        DumpFilter { pids: pids.to_vec(), heap, dump, timestamps: timestamps.to_vec(), last }
    }

    /// Whether the command converts dump `d`.
    pub fn keeps(&self, d: &crate::model::DumpReport) -> bool {
        (self.pids.is_empty() || self.pids.contains(&d.pid))
            && self.heap.as_ref().is_none_or(|h| *h == d.heap)
            && (self.timestamps.is_empty() || d.timestamp.is_some_and(|t| self.timestamps.contains(&t)))
            && match self.dump {
                DumpSelect::All => true,
                DumpSelect::Nth(n) => d.index + 1 == n,
                DumpSelect::Last => self.last.get(&(d.pid, d.heap.clone())) == Some(&d.index),
            }
    }
}

/// Options of `heapconv convert`.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// Output format. Default: pprof.
    pub format: Format,
    /// Keep only these pids (empty: all). Default: empty.
    pub pids: Vec<u64>,
    /// Keep only this heap. Default: all heaps.
    pub heap: Option<String>,
    /// Which dumps. Default: the last of each (pid, heap).
    pub dump: DumpSelect,
    /// The value folded stacks and flame graphs show and pprof viewers open with.
    /// Default: unreleased size.
    pub view: ValueKind,
    /// ART frame annotations in frame names (pprof always has them unless this is false).
    /// Default: true.
    pub annotations: bool,
    /// Decoder options. Default: [`DecodeOptions::default`].
    pub decode: DecodeOptions,
    /// Symbolize native frames from these symbol directories. Default: `None`.
    pub symbolize: Option<SymbolizeOptions>,
    /// How DDM allocation records become a profile. Default: [`DdmOptions::default`]
    /// (`lines` and `per_allocation` are chosen per format: on for pprof, off for the text
    /// outputs, whose frame labels are then `class.method(File.java:12)`).
    pub ddm: DdmOptions,
    /// Which tree of a Java heap (an hprof input, or a trace's heap graphs) becomes the
    /// profile. Default: the dominator tree (flame graph widths are retained sizes).
    pub heap_tree: HeapTree,
    /// Convert a trace's Java heap graphs rather than its heapprofd dumps. Default: false
    /// (heap graphs are converted when a trace has no heapprofd dump).
    pub java_heap: bool,
}

/// Which tree of a Java heap becomes a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeapTree {
    /// The dominator tree: a node's cumulative values are what it retains.
    #[default]
    Dominator,
    /// traceconv's shortest-path tree from the GC roots (`profile --java-heap`).
    ShortestPath,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            format: Format::Pprof,
            pids: Vec::new(),
            heap: None,
            dump: DumpSelect::Last,
            view: ValueKind::UnreleasedSize,
            annotations: true,
            decode: DecodeOptions::default(),
            symbolize: None,
            ddm: DdmOptions::default(),
            heap_tree: HeapTree::default(),
            java_heap: false,
        }
    }
}

/// Decodes `input` and keeps the profiles `opts` selects, in trace order.
pub fn select_profiles(
    input: &Path,
    opts: &ConvertOptions,
) -> Result<(Vec<Profile>, TraceReport, Option<SymbolizeReport>)> {
    select_profiles_from(Input::open(input, opts.decode.max_gzip_bytes)?, opts)
}

/// [`select_profiles`] on an opened input.
pub fn select_profiles_from(
    inp: Input,
    opts: &ConvertOptions,
) -> Result<(Vec<Profile>, TraceReport, Option<SymbolizeReport>)> {
    let name = inp.name.clone();
    let (out, report, symbols) = select_heapprofd(inp, opts)?;
    if report.dumps.is_empty() && report.damage.is_none() {
        return Err(no_heapprofd(&name));
    }
    Ok((out, report, symbols))
}

fn no_heapprofd(name: &str) -> Error {
    Error::new(ErrorKind::NoData, format!("{name}: no heapprofd profile found in the trace"))
}

/// [`select_profiles_from`] without the error for a trace that has no heapprofd dump.
fn select_heapprofd(
    mut inp: Input,
    opts: &ConvertOptions,
) -> Result<(Vec<Profile>, TraceReport, Option<SymbolizeReport>)> {
    let mut decode = opts.decode.clone();
    decode.pids = opts.pids.clone();
    decode.include_unchanged = true;
    let empty = Arc::new(Tables::default());
    let mut kept: BTreeMap<(u64, String), Vec<Profile>> = BTreeMap::new();
    let mut order: Vec<(u64, String)> = Vec::new();
    let mut symbolizer = opts.symbolize.clone().map(Symbolizer::new);
    let (report, tables) = decode_heapprofd_with(
        &mut inp,
        &decode,
        &mut |t, r| symbolize_hook(&mut symbolizer, t, r),
        &mut |mut p: Profile| {
            if opts.heap.as_ref().is_some_and(|h| *h != p.header.meta.heap) {
                return Ok(());
            }
            let keep = match opts.dump {
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
            if opts.dump == DumpSelect::Last {
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

/// Encodes one profile in `format` with the view of `opts`.
pub fn encode_one(profile: &Profile, opts: &ConvertOptions) -> Result<Vec<u8>> {
    let index = profile.value_index(opts.view).or_else(|| profile.value_index(ValueKind::TotalSize)).unwrap_or(0);
    Ok(match opts.format {
        Format::Pprof => {
            let mut p = profile.clone();
            p.header.default_sample_type = index;
            encode_pprof_gzip(&p, &PprofOptions { annotations: opts.annotations, extras: true })
        }
        Format::Folded => {
            encode_folded(profile, &FoldedOptions { value_index: index, annotations: opts.annotations }).into_bytes()
        }
        Format::Svg => encode_svg(
            profile,
            &SvgOptions { value_index: index, annotations: opts.annotations, ..Default::default() },
        )?,
        Format::Json => {
            let report = TraceReport::default();
            convert_json(&report, std::slice::from_ref(profile), &summary_options(opts)).into_bytes()
        }
    })
}

/// Encodes a profile as gzipped pprof, the same bytes as `gzip(&encode_pprof(..))`, with the
/// compression on a second thread taking the encoded bytes a megabyte at a time.
pub fn encode_pprof_gzip(profile: &Profile, opts: &PprofOptions) -> Vec<u8> {
    use std::io::Write;
    let (tx, rx) = mpsc::sync_channel::<Chunk>(4);
    std::thread::scope(|threads| {
        let compressor = threads.spawn(move || {
            let mut gz = gzip_writer(Vec::with_capacity(1 << 20));
            for chunk in rx {
                if let Chunk::Data(bytes) = chunk {
                    gz.write_all(&bytes).expect("writing to memory");
                }
            }
            gz.finish().expect("writing to memory")
        });
        let mut w = ChunkWriter { tx: &tx, buf: Vec::with_capacity(1 << 20) };
        PprofEncoder::new(opts.clone())
            .encode_to(profile, &mut w)
            .and_then(|_| w.flush())
            .expect("the compressor takes every chunk");
        drop(tx);
        compressor.join().expect("the compressor does not panic")
    })
}

fn summary_options(opts: &ConvertOptions) -> SummaryOptions {
    SummaryOptions { view: opts.view, annotations: opts.annotations, ..Default::default() }
}

/// Where `convert` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Standard output.
    Stdout,
    /// One file.
    File(PathBuf),
    /// A directory, one file per profile.
    Dir(PathBuf),
}

/// Output of `convert`: what to write where.
#[derive(Debug)]
pub struct ConvertRun {
    /// (destination path or None for stdout, bytes), in order.
    pub outputs: Vec<(Option<PathBuf>, Vec<u8>)>,
    /// What the trace holds.
    pub report: TraceReport,
    /// The symbolization report, when symbolization was asked for.
    pub symbols: Option<SymbolizeReport>,
    /// What each converted profile holds (for batch summaries); empty for reports that are
    /// not profiles (the `--to json` top report of a heap dump).
    pub profiles: Vec<batch::ProfileTotals>,
}

/// Runs `convert`: decodes, selects, encodes (in parallel) and writes.
pub fn run_convert(input: &Path, dest: &Destination, opts: &ConvertOptions) -> Result<ConvertRun> {
    run_convert_inputs(&[input.to_path_buf()], dest, opts)
}

/// Runs `convert` on one or more inputs. One input may be a Perfetto trace or a DDM
/// allocation-record capture (told apart by their first bytes); several inputs must all be
/// DDM captures, which are merged into one profile.
pub fn run_convert_inputs(inputs: &[PathBuf], dest: &Destination, opts: &ConvertOptions) -> Result<ConvertRun> {
    convert_inputs_to(inputs, &|_| dest.clone(), opts)
}

/// [`run_convert_inputs`] with the destination chosen once the kind of input is known:
/// `dest_for(true)` for a Perfetto trace, `dest_for(false)` for anything else (a DDM capture,
/// an HPROF heap dump, a pprof profile).
pub(crate) fn convert_inputs_to(
    inputs: &[PathBuf],
    dest_for: &dyn Fn(bool) -> Destination,
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    if inputs.is_empty() {
        return Err(Error::new(ErrorKind::Usage, "no input given"));
    }
    let want_ddm = inputs.len() > 1 || is_alloc_file(&inputs[0]);
    let mut ddm = Vec::new();
    for path in inputs {
        match open_input(path, opts.decode.max_gzip_bytes, opts.ddm.max_bytes, want_ddm)? {
            Opened::Ddm { name, bytes } => ddm.push((name, bytes)),
            Opened::Trace(inp, InputKind::Pprof) => {
                return combine::convert_pprof(inp, &inputs[0], &dest_for(false), opts);
            }
            Opened::Trace(inp, kind) => return convert_trace(inp, kind, &inputs[0], &dest_for(true), opts),
            Opened::Hprof(inp) => {
                if inputs.len() > 1 {
                    return Err(Error::new(
                        ErrorKind::Usage,
                        format!("{}: `convert` takes one HPROF heap dump at a time", inp.name),
                    ));
                }
                return convert_hprof(inp, &inputs[0], &dest_for(false), opts);
            }
        }
    }
    convert_ddm(&ddm, inputs, &dest_for(false), opts)
}

fn convert_trace(
    inp: Input,
    kind: InputKind,
    input: &Path,
    dest: &Destination,
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    use rayon::prelude::*;
    if opts.java_heap {
        return convert_heap_graphs(inp, input, dest, opts);
    }
    // A trace without heapprofd dumps may hold Java heap graphs: those are converted then.
    let again = inp.reopen();
    let name = inp.name.clone();
    let (profiles, report, symbols) = select_heapprofd(inp, opts)?;
    if report.dumps.is_empty() && report.damage.is_none() {
        if let (Some(again), true) = (again, report.packet_kinds.get("heap_graph").is_some_and(|&n| n > 0)) {
            return convert_heap_graphs(again?, input, dest, opts);
        }
        return Err(no_heapprofd(&name));
    }
    if profiles.is_empty() {
        if kind == InputKind::Unknown {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{}: neither a Perfetto trace nor a DDM allocation-record capture (a bare .alloc blob starting 0F 09 08, a REAL chunk or JDWP packets){}",
                    input.display(),
                    report.damage.as_deref().map(|d| format!("; as a trace: {d}")).unwrap_or_default()
                ),
            ));
        }
        return Err(Error::new(
            ErrorKind::NoData,
            format!(
                "{}: no dump matches the selection (see `heapconv inspect`){}",
                input.display(),
                report.damage.as_deref().map(|d| format!("; the input is damaged: {d}")).unwrap_or_default()
            ),
        ));
    }
    let outputs: Vec<(Option<PathBuf>, Vec<u8>)> = if opts.format == Format::Json {
        let mut doc = convert_json(&report, &profiles, &summary_options(opts)).into_bytes();
        if let Some(sym) = &symbols {
            // The symbolization report joins the document (the encoder does not know the stage).
            let mut v: serde_json::Value = serde_json::from_slice(&doc).expect("our own JSON");
            v["symbolization"] = serde_json::to_value(sym).expect("report serializes");
            doc = serde_json::to_vec_pretty(&v).expect("serializes");
            doc.push(b'\n');
        }
        match dest {
            Destination::Stdout => vec![(None, doc)],
            Destination::File(p) => vec![(Some(p.clone()), doc)],
            Destination::Dir(d) => vec![(Some(d.join(format!("{}.json", stem(input)))), doc)],
        }
    } else {
        if profiles.len() > 1 && !matches!(dest, Destination::Dir(_)) {
            let list: Vec<String> = profiles.iter().map(|p| format!("  {}", p.header.meta.describe())).collect();
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "{} profiles match; choose one with --pid/--heap/--dump, or give -o an existing directory (or a path ending in /) to write them all:\n{}",
                    profiles.len(),
                    list.join("\n")
                ),
            ));
        }
        let encoded: Vec<Result<Vec<u8>>> = profiles.par_iter().map(|p| encode_one(p, opts)).collect();
        let mut outs = Vec::new();
        for (n, (p, bytes)) in profiles.iter().zip(encoded).enumerate() {
            let bytes = bytes?;
            let path = match dest {
                Destination::Stdout => None,
                Destination::File(f) => Some(f.clone()),
                Destination::Dir(d) => Some(d.join(heap_dump_name(n + 1, p, opts.format.extension()))),
            };
            outs.push((path, bytes));
        }
        outs
    };
    write_outputs(input, dest, &outputs)?;
    let profiles = profiles.iter().map(batch::ProfileTotals::of).collect();
    Ok(ConvertRun { outputs, report, symbols, profiles })
}

/// `convert` of an HPROF heap dump: the dominator tree (or the shortest-path tree) as pprof,
/// folded stacks or a flame graph, or the `top` report (classes by retained size, the largest
/// retainers and their paths from GC roots) as JSON. A damaged dump converts what was
/// complete and says so in the report.
fn convert_hprof(mut inp: Input, input: &Path, dest: &Destination, opts: &ConvertOptions) -> Result<ConvertRun> {
    use crate::decode::hprof::{HprofReadOptions, read_hprof};
    let name = inp.name.clone();
    let dump = read_hprof(inp.reader(), &name, &HprofReadOptions::default())?;
    let mut report = TraceReport { source: name.clone(), gzipped: inp.gzipped, ..Default::default() };
    if !dump.incomplete.is_empty() {
        report.damage = Some(dump.incomplete.join("; "));
    }
    let (bytes, totals) = heap_output(&dump, opts)?;
    let profiles = totals.into_iter().collect();
    let path = match dest {
        Destination::Stdout => None,
        Destination::File(f) => Some(f.clone()),
        Destination::Dir(d) => {
            ensure_dir(d)?;
            Some(d.join(format!("{}.{}", stem(input), opts.format.extension())))
        }
    };
    let outputs = vec![(path, bytes)];
    write_outputs(input, dest, &outputs)?;
    Ok(ConvertRun { outputs, report, symbols: None, profiles })
}

/// The usage error when several heap graph dumps match and one output file was asked for:
/// it lists them and names the options (`choose`) that pick one.
fn several_heap_graphs(matched: &[String], choose: &str) -> Error {
    let list: Vec<String> = matched.iter().map(|m| format!("  {m}")).collect();
    Error::new(
        ErrorKind::Usage,
        format!(
            "{} heap graph dumps match; choose one with {choose}, or give -o an existing directory (or a path ending in /) to write them all:\n{}",
            matched.len(),
            list.join("\n")
        ),
    )
}

/// Writes a conversion's outputs, each atomically and never over `input`, making the
/// destination directory first. A `None` path is standard output, written by the caller:
/// here it is only checked not to be the input.
fn write_outputs(input: &Path, dest: &Destination, outputs: &[(Option<PathBuf>, Vec<u8>)]) -> Result<()> {
    let inputs = [input.to_path_buf()];
    if let Destination::Dir(d) = dest {
        ensure_dir(d)?;
    }
    for (path, bytes) in outputs {
        match path {
            Some(p) => write_atomic(p, bytes, &inputs)?,
            None => check_not_input(Path::new("-"), &inputs)?,
        }
    }
    Ok(())
}

/// One Java heap as `convert` writes it: the tree `opts.heap_tree` names as a profile in
/// `opts.format` (with its totals), or, for JSON, the top report.
fn heap_output(dump: &HeapDump, opts: &ConvertOptions) -> Result<(Vec<u8>, Option<batch::ProfileTotals>)> {
    use crate::analysis::heap::{HeapTopOptions, RootedHeap};
    use crate::encode::heap_top::heap_top_json;
    let heap = RootedHeap::new(dump);
    if opts.format == Format::Json {
        let spt = heap.shortest_path_tree();
        let dom = heap.dominators();
        return Ok((heap_top_json(&heap.heap_top(&spt, &dom, &HeapTopOptions::default())).into_bytes(), None));
    }
    let profile = match opts.heap_tree {
        HeapTree::Dominator => heap.dominator_profile(&heap.dominators()),
        HeapTree::ShortestPath => heap.spt_profile(&heap.shortest_path_tree()),
    };
    Ok((encode_one(&profile, opts)?, Some(batch::ProfileTotals::of(&profile))))
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
    each: &mut dyn FnMut(HeapDump) -> Result<()>,
) -> Result<TraceReport> {
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

/// The error for a trace where no heap graph dump was selected.
fn no_heap_graph_match(input: &Path, report: &TraceReport) -> Error {
    let why = match &report.damage {
        Some(d) if report.heap_graphs.is_empty() => format!("no Java heap graph could be read: {d}"),
        None if report.heap_graphs.is_empty() => "the trace holds no Java heap graph".to_owned(),
        _ => "no heap graph dump matches --pid/--dump (see `heapconv inspect`)".to_owned(),
    };
    Error::new(ErrorKind::NoData, format!("{}: {why}", input.display()))
}

/// Options of `heapconv top` on a Java heap (an HPROF heap dump or a trace's heap graphs).
#[derive(Debug, Clone)]
pub struct HeapTopRunOptions {
    /// Traces: only these pids (empty: all). Default: empty.
    pub pids: Vec<u64>,
    /// Traces: which heap graph dump of each process. Default: the last.
    pub dump: DumpSelect,
    /// How traces are read. Default: [`DecodeOptions::default`].
    pub decode: DecodeOptions,
    /// Show a trace's heap graphs even when it has heapprofd dumps. Default: false (a trace's
    /// heap graphs are shown when it has no heapprofd dump).
    pub java_heap: bool,
    /// The report: classes listed, retainers, path lengths. Default:
    /// [`crate::analysis::heap::HeapTopOptions::default`].
    pub top: crate::analysis::heap::HeapTopOptions,
}

impl Default for HeapTopRunOptions {
    fn default() -> Self {
        HeapTopRunOptions {
            pids: Vec::new(),
            dump: DumpSelect::Last,
            decode: DecodeOptions::default(),
            java_heap: false,
            top: crate::analysis::heap::HeapTopOptions::default(),
        }
    }
}

/// What `heapconv top` shows.
#[derive(Debug)]
pub enum TopRun {
    /// The top table of a profile (several inputs merged), with what the inputs held.
    Table(crate::encode::top::TopTable, Vec<combine::InputInfo>),
    /// The report of one Java heap: classes by retained size and the largest retainers, with
    /// what the input held (`damage` says when the heap is incomplete).
    Heap(Box<crate::analysis::heap::HeapTop>, TraceReport),
}

/// Runs `heapconv top`: for one HPROF heap dump, or one trace with `heap.java_heap`, the heap
/// report ([`TopRun::Heap`]); otherwise the top table of the merged inputs, except that a
/// single trace without heapprofd dumps but with Java heap graphs gets the heap report.
pub fn run_top(inputs: &[PathBuf], opts: &combine::TopRunOptions, heap: &HeapTopRunOptions) -> Result<TopRun> {
    if let [input] = inputs {
        if let Some((top, report)) = heap_top_input(input, heap)? {
            return Ok(TopRun::Heap(Box::new(top), report));
        }
    }
    match combine::run_top(inputs, opts) {
        Ok((table, infos)) => Ok(TopRun::Table(table, infos)),
        Err(e) if e.kind() == ErrorKind::NoData && inputs.len() == 1 && inputs[0].as_os_str() != "-" => {
            // A trace without heapprofd dumps: its Java heap graphs, if it has any.
            let inp = Input::open(&inputs[0], heap.decode.max_gzip_bytes)?;
            match heap_graph_top(inp, &inputs[0], heap)? {
                Some((top, report)) => Ok(TopRun::Heap(Box::new(top), report)),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// The heap report of `input` when it is an HPROF heap dump, or a trace and `opts.java_heap`;
/// `None` for anything else (standard input is looked at only with `java_heap`).
fn heap_top_input(
    input: &Path,
    opts: &HeapTopRunOptions,
) -> Result<Option<(crate::analysis::heap::HeapTop, TraceReport)>> {
    use std::io::Read;
    let name = input.display().to_string();
    if name == "-" {
        if !opts.java_heap {
            return Ok(None);
        }
        let inp = Input::open(input, opts.decode.max_gzip_bytes)?;
        return heap_graph_top(inp, input, opts)?
            .map(Some)
            .ok_or_else(|| no_heap_graph_match(input, &TraceReport::default()));
    }
    let mut inp = Input::open(input, opts.decode.max_gzip_bytes)?;
    let mut head = Vec::new();
    inp.reader().take(64).read_to_end(&mut head).map_err(|e| Error::io(format!("reading {name}"), e))?;
    let kind = sniff(&head);
    let again = || inp.reopen().ok_or_else(|| Error::new(ErrorKind::Io, format!("{name}: cannot be read twice")))?;
    match kind {
        InputKind::Hprof => {
            use crate::analysis::heap::RootedHeap;
            use crate::decode::hprof::{HprofReadOptions, read_hprof};
            let mut inp = again()?;
            let dump = read_hprof(inp.reader(), &name, &HprofReadOptions::default())?;
            let mut report = TraceReport { source: name.clone(), gzipped: inp.gzipped, ..Default::default() };
            if !dump.incomplete.is_empty() {
                report.damage = Some(dump.incomplete.join("; "));
            }
            let heap = RootedHeap::new(&dump);
            let (spt, dom) = (heap.shortest_path_tree(), heap.dominators());
            Ok(Some((heap.heap_top(&spt, &dom, &opts.top), report)))
        }
        InputKind::PerfettoTrace | InputKind::Unknown if opts.java_heap => {
            let inp = again()?;
            heap_graph_top(inp, input, opts)?
                .map(Some)
                .ok_or_else(|| no_heap_graph_match(input, &TraceReport::default()))
        }
        _ => Ok(None),
    }
}

/// The heap report of the one heap graph dump of a trace that `opts` selects; `None` when the
/// trace holds no heap graph. Several matching dumps are a usage error that lists them.
fn heap_graph_top(
    mut inp: Input,
    input: &Path,
    opts: &HeapTopRunOptions,
) -> Result<Option<(crate::analysis::heap::HeapTop, TraceReport)>> {
    use crate::analysis::heap::RootedHeap;
    let mut described: Vec<String> = Vec::new();
    let mut top = None;
    let mut incomplete = Vec::new();
    let mut report = for_selected_heap_graphs(&mut inp, &opts.decode, &opts.pids, opts.dump, &mut |dump| {
        described.push(describe_heap_dump(dump.pid, dump.process_name.as_deref(), dump.timestamp));
        if described.len() == 1 {
            incomplete = dump.incomplete.clone();
            let heap = RootedHeap::new(&dump);
            let (spt, dom) = (heap.shortest_path_tree(), heap.dominators());
            top = Some(heap.heap_top(&spt, &dom, &opts.top));
        }
        Ok(())
    })?;
    if report.heap_graphs.is_empty() && report.damage.is_none() {
        return Ok(None);
    }
    let Some(top) = top else { return Err(no_heap_graph_match(input, &report)) };
    if described.len() > 1 {
        let list: Vec<String> = described.iter().map(|m| format!("  {m}")).collect();
        return Err(Error::new(
            ErrorKind::Usage,
            format!("{} heap graph dumps match; choose one with --pid/--dump:\n{}", described.len(), list.join("\n")),
        ));
    }
    if !incomplete.is_empty() && report.damage.is_none() {
        report.damage = Some(format!("incomplete heap graph dump: {}", incomplete.join("; ")));
    }
    Ok(Some((top, report)))
}

/// `convert` of a trace's Java heap graphs: per selected dump (`--pid`, `--dump`), the
/// dominator or shortest-path tree as pprof, folded stacks or a flame graph, or the top report
/// as JSON. Several dumps need a directory, where they are named `java_heap_dump.N.PID.EXT`
/// (N counting the files written from 1, in the order the dumps end in the trace). An
/// incomplete dump converts what it has and the run is partial.
fn convert_heap_graphs(mut inp: Input, input: &Path, dest: &Destination, opts: &ConvertOptions) -> Result<ConvertRun> {
    use crate::analysis::heap::JAVA_HEAP_NAME;
    if let Some(h) = opts.heap.as_deref().filter(|h| *h != JAVA_HEAP_NAME) {
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{}: no heap `{h}` in the Java heap graphs (their heap is `{JAVA_HEAP_NAME}`)", input.display()),
        ));
    }
    let mut outputs: Vec<(Option<PathBuf>, Vec<u8>)> = Vec::new();
    let mut described: Vec<String> = Vec::new();
    let mut incomplete: Vec<String> = Vec::new();
    let mut profiles = Vec::new();
    let multi_ok = matches!(dest, Destination::Dir(_));
    let mut report = for_selected_heap_graphs(&mut inp, &opts.decode, &opts.pids, opts.dump, &mut |dump| {
        let describe = describe_heap_dump(dump.pid, dump.process_name.as_deref(), dump.timestamp);
        described.push(describe.clone());
        if !multi_ok && described.len() > 1 {
            // Only listed: the run ends in a usage error.
            return Ok(());
        }
        if !dump.incomplete.is_empty() {
            incomplete.push(format!("{describe}: {}", dump.incomplete.join("; ")));
        }
        let (bytes, totals) = heap_output(&dump, opts)?;
        profiles.extend(totals);
        let path = match dest {
            Destination::Stdout => None,
            Destination::File(f) => Some(f.clone()),
            Destination::Dir(d) => Some(d.join(format!(
                "java_heap_dump.{}.{}.{}",
                described.len(),
                dump.pid.unwrap_or(0),
                opts.format.extension()
            ))),
        };
        outputs.push((path, bytes));
        Ok(())
    })?;
    if described.is_empty() {
        return Err(no_heap_graph_match(input, &report));
    }
    if described.len() > 1 && !multi_ok {
        return Err(several_heap_graphs(&described, "--pid/--dump"));
    }
    if !incomplete.is_empty() && report.damage.is_none() {
        report.damage = Some(format!("incomplete heap graph dump(s): {}", incomplete.join(" | ")));
    }
    write_outputs(input, dest, &outputs)?;
    Ok(ConvertRun { outputs, report, symbols: None, profiles })
}

/// The input's file name without directories and trace extensions.
pub fn stem(input: &Path) -> String {
    let name = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "stdin".to_owned());
    let mut s = name.as_str();
    for ext in [".gz", ".pftrace", ".perfetto-trace", ".trace", ".pb", ".alloc", ".hprof"] {
        if let Some(t) = s.strip_suffix(ext) {
            s = t;
        }
    }
    if s.is_empty() || s == "-" { "stdin".to_owned() } else { s.to_owned() }
}

/// Runs `inspect`: decodes everything and returns the report.
pub fn run_inspect(input: &Path, decode: &DecodeOptions) -> Result<TraceReport> {
    inspect_trace(Input::open(input, decode.max_gzip_bytes)?, decode)
}

fn inspect_trace(mut inp: Input, decode: &DecodeOptions) -> Result<TraceReport> {
    let mut opts = decode.clone();
    opts.include_unchanged = false;
    let (mut report, _) = decode_heapprofd(&mut inp, &opts, &mut |_| Ok(()))?;
    if report.packet_kinds.get("heap_graph").copied().unwrap_or(0) > 0 {
        // Heap graphs have their own decoder: a second pass over the input.
        match inp.reopen() {
            Some(again) => {
                let mut again = again?;
                let graph = HeapGraphOptions {
                    max_packet_bytes: decode.max_packet_bytes,
                    max_bundle_bytes: decode.max_bundle_bytes,
                    pids: Vec::new(),
                };
                let hg = decode_heap_graphs(&mut again, &graph, &mut |_| Ok(()))?;
                report.heap_graphs = hg.heap_graphs;
                for p in hg.problems {
                    report.problem(p.offset, p.packet, p.message);
                }
            }
            None => report.problem(None, None, "heap graphs are not listed for standard input (give a file)"),
        }
    }
    Ok(report)
}

/// What `inspect` found, by kind of input.
#[derive(Debug)]
pub enum Inspection {
    /// A Perfetto trace.
    Trace(TraceReport),
    /// A DDM allocation-record capture.
    Ddm(DdmInspect),
    /// An HPROF heap dump.
    Hprof(HprofInspect),
    /// A pprof profile.
    Pprof(Box<Profile>),
}

/// Runs `inspect` on a Perfetto trace, a DDM allocation-record capture or an HPROF heap dump
/// (told apart by their first bytes).
pub fn run_inspect_input(input: &Path, decode: &DecodeOptions, ddm: &DdmOptions) -> Result<Inspection> {
    match open_input(input, decode.max_gzip_bytes, ddm.max_bytes, is_alloc_file(input))? {
        Opened::Trace(inp, InputKind::Pprof) => Ok(Inspection::Pprof(Box::new(combine::inspect_pprof(inp)?))),
        Opened::Trace(inp, _) => Ok(Inspection::Trace(inspect_trace(inp, decode)?)),
        Opened::Ddm { name, bytes } => {
            let capture = decode_alloc_records(&bytes, &name, ddm)?;
            Ok(Inspection::Ddm(ddm_inspect(&capture, ddm)))
        }
        Opened::Hprof(mut inp) => {
            let name = inp.name.clone();
            let (dump, stats) = read_hprof_with_stats(inp.reader(), &name, &HprofReadOptions::default())?;
            Ok(Inspection::Hprof(hprof_inspect(&name, &dump, &stats)))
        }
    }
}

/// The inspect report of an HPROF heap dump.
pub fn hprof_inspect(source: &str, d: &HeapDump, st: &HprofStats) -> HprofInspect {
    use crate::decode::hprof::walk::{record_name, sub_record_name};
    use crate::model::heap::ObjectKind;
    let tally = |m: &BTreeMap<u8, crate::decode::hprof::TagCount>, name: fn(u8) -> &'static str| {
        m.iter()
            .map(|(&tag, c)| HprofTagTally { tag, name: name(tag).to_owned(), count: c.count, bytes: c.bytes })
            .collect()
    };
    let mut heaps: Vec<HprofHeapTally> =
        d.heaps.iter().map(|h| HprofHeapTally { name: h.clone(), objects: 0, shallow_bytes: 0 }).collect();
    let mut r = HprofInspect {
        source: source.to_owned(),
        bytes: st.bytes,
        records: tally(&st.records, record_name),
        sub_records: tally(&st.sub_records, sub_record_name),
        classes: d.classes.len() as u64,
        objects: d.len() as u64,
        references: d.ref_target.len() as u64,
        null_references: st.null_refs,
        dangling_references: d.dangling_refs,
        dangling_roots: st.dangling_roots,
        instances_before_class: st.instances_before_class,
        incomplete: d.incomplete.clone(),
        ..Default::default()
    };
    if let Some(h) = &st.header {
        r.format = h.format.clone();
        r.id_size = h.id_size;
        r.timestamp_ms = h.timestamp_ms;
    }
    for o in 0..d.len() {
        let size = d.obj_self_size[o];
        r.shallow_bytes += size;
        if let Some(h) = heaps.get_mut(usize::from(d.obj_heap[o])) {
            h.objects += 1;
            h.shallow_bytes += size;
        }
        match d.obj_kind[o] {
            ObjectKind::Instance => r.instances += 1,
            ObjectKind::ObjectArray => r.object_arrays += 1,
            ObjectKind::PrimitiveArray(_) => r.primitive_arrays += 1,
            ObjectKind::Class => r.class_objects += 1,
        }
    }
    r.heaps = heaps;
    for root in &d.roots {
        let kind = root.kind.perfetto_name();
        match r.roots.iter_mut().find(|t| t.kind == kind) {
            Some(t) => t.count += 1,
            None => r.roots.push(HprofRootTally { kind: kind.to_owned(), count: 1 }),
        }
    }
    for (n, what) in [
        (st.field_size_mismatches, "instance(s) whose field bytes differ from what their class chain declares"),
        (st.duplicate_ids, "object(s) with an id an earlier object has (references go to the first)"),
        (st.duplicate_class_dumps, "CLASS_DUMP(s) of a class dumped before (ignored)"),
        (st.missing_strings, "name(s) whose STRING record is missing"),
    ] {
        if n > 0 {
            r.problems.push(format!("{n} {what}"));
        }
    }
    r
}

/// Runs `hprof-conv`: converts the Android heap dump `input` (`-`: standard input; gzip is
/// undone) to the standard format in `output` (`-`: standard output), written atomically.
pub fn run_hprof_conv(input: &Path, output: &Path, opts: &HprofConvOptions) -> Result<HprofConvReport> {
    use std::io::Write;
    let inputs = [input.to_path_buf()];
    let mut inp = Input::open(input, DecodeOptions::default().max_gzip_bytes)?;
    let name = inp.name.clone();
    if output.as_os_str() == "-" {
        let mut out = NoSeek(std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock()));
        let report = hprof_conv(inp.reader(), &name, &mut out, opts)?;
        out.flush().map_err(|e| Error::io("writing standard output", e))?;
        return Ok(report);
    }
    check_not_input(output, &inputs)?;
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, file) = stage_file(&dir, 0)?;
    let result = (|| {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let report = hprof_conv(inp.reader(), &name, &mut out, opts)?;
        let file = out.into_inner().map_err(|e| Error::io(format!("writing {}", tmp.display()), e.into_error()))?;
        crate::output::sync_file(&file).map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
        Ok(report)
    })();
    match result {
        Ok(report) => {
            commit_staged(&tmp, output, &inputs)?;
            Ok(report)
        }
        Err(e) => {
            discard_staged([tmp]);
            Err(e)
        }
    }
}

/// How many classes and methods the DDM top lists hold.
const DDM_TOP: usize = 20;

/// The inspect report of a DDM capture.
pub fn ddm_inspect(c: &AllocCapture, opts: &DdmOptions) -> DdmInspect {
    let lines = c.line_counts();
    let limit = opts.max_depth.unwrap_or(usize::from(c.max_depth()));
    let truncated = if opts.truncation_marks {
        c.records.entries.iter().filter(|e| e.depth > 0 && usize::from(e.depth) >= limit).count() as u64
    } else {
        0
    };
    let tally = |v: Vec<crate::decode::ddm_alloc_records::Tally<String>>| {
        v.into_iter().map(|t| DdmTally { name: t.key, entries: t.entries, bytes: t.bytes }).collect()
    };
    DdmInspect {
        source: c.source.clone(),
        framing: c.framing.to_string(),
        input_bytes: c.input_len,
        blob_offset: c.blob_offset,
        blob_bytes: c.blob_len,
        header_length: c.layout.header_len,
        entry_header_length: c.layout.entry_header_len,
        frame_length: c.layout.frame_len,
        string_table_offset: c.string_table_offset,
        entry_count_field: c.count_field,
        entries: c.records.entries.len() as u64,
        count_wrapped: c.count_wrapped(),
        entry_order: c.order.to_string(),
        entry_order_basis: match c.order_basis {
            crate::decode::ddm_alloc_records::OrderBasis::Option => "as given by --entry-order".to_owned(),
            basis => basis.to_string(),
        },
        class_names: c.records.class_names.len() as u64,
        method_names: c.records.method_names.len() as u64,
        source_files: c.records.file_names.len() as u64,
        thread_names: c.records.thread_names.len() as u64,
        total_bytes: c.total_bytes(),
        max_depth: c.max_depth(),
        depth_limit: if opts.truncation_marks { limit as u64 } else { 0 },
        truncated_stacks: truncated,
        frames: lines.frames,
        frames_without_line: lines.unknown,
        native_frames: lines.native,
        frames_with_wrapped_line: lines.wrapped,
        threads: c
            .threads()
            .into_iter()
            .map(|t| DdmThread {
                id: t.key,
                name: c.thread_name(t.key).map(str::to_owned),
                entries: t.entries,
                bytes: t.bytes,
            })
            .collect(),
        top_classes: tally(c.top_classes(DDM_TOP)),
        top_methods: tally(c.top_methods(DDM_TOP)),
        depth_histogram: c.depth_histogram().into_iter().map(|(depth, entries)| DdmDepth { depth, entries }).collect(),
        problems: c.problems.clone(),
    }
}

/// True for a path named `*.alloc` (or `*.alloc.gz`): it must be a DDM capture.
fn is_alloc_file(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    name.ends_with(".alloc") || name.ends_with(".alloc.gz")
}

/// An input opened and recognized.
enum Opened {
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
fn open_input(path: &Path, max_gzip: u64, ddm_max: u64, want_ddm: bool) -> Result<Opened> {
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
fn not_ddm(name: &str, kind: InputKind, head: &[u8], want_ddm: bool) -> Result<()> {
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
        InputKind::Pprof => "a pprof profile (`heapconv merge` combines several)".to_owned(),
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

/// Converts DDM captures, merged into one profile.
fn convert_ddm(
    inputs: &[(String, Vec<u8>)],
    paths: &[PathBuf],
    dest: &Destination,
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    if !opts.pids.is_empty() || opts.heap.is_some() || opts.dump != DumpSelect::Last {
        return Err(Error::new(
            ErrorKind::Usage,
            "--pid, --heap and --dump select heapprofd dumps; a DDM allocation-record capture has one profile",
        ));
    }
    // pprof gets one sample per allocation with file and line per frame; the text outputs
    // label frames `class.method(File.java:12)` and need only one sample per stack.
    let mut ddm = opts.ddm.clone();
    ddm.lines = opts.format == Format::Pprof;
    ddm.per_allocation = opts.format == Format::Pprof;
    let captures =
        inputs.iter().map(|(name, bytes)| decode_alloc_records(bytes, name, &ddm)).collect::<Result<Vec<_>>>()?;
    let profile = alloc_records_profile(&captures, &ddm);
    let mut report = TraceReport {
        source: profile.header.meta.source.clone(),
        bytes: inputs.iter().map(|(_, b)| b.len() as u64).sum(),
        ..Default::default()
    };
    for c in &captures {
        for p in &c.problems {
            report.problem(None, None, format!("{}: {p}", c.source));
        }
    }
    let bytes = match opts.format {
        Format::Json => {
            let doc = convert_json(&report, std::slice::from_ref(&profile), &summary_options(opts));
            let mut v: serde_json::Value = serde_json::from_str(&doc).expect("our own JSON");
            let ddm_reports: Vec<DdmInspect> = captures.iter().map(|c| ddm_inspect(c, &ddm)).collect();
            v["ddm"] = serde_json::to_value(ddm_reports).expect("report serializes");
            let mut doc = serde_json::to_vec_pretty(&v).expect("serializes");
            doc.push(b'\n');
            doc
        }
        Format::Svg => {
            let index =
                profile.value_index(opts.view).or_else(|| profile.value_index(ValueKind::TotalSize)).unwrap_or(0);
            let title = format!(
                "{}: Java allocations (DDM allocation records), {}",
                profile.header.meta.process_name.as_deref().unwrap_or(""),
                profile.header.sample_types[index].name
            );
            encode_svg(
                &profile,
                &SvgOptions { value_index: index, annotations: false, title: Some(title), ..Default::default() },
            )?
        }
        _ => encode_one(&profile, opts)?,
    };
    let path = match dest {
        Destination::Stdout => None,
        Destination::File(f) => Some(f.clone()),
        Destination::Dir(d) => Some(d.join(format!("{}.{}", stem(&paths[0]), opts.format.extension()))),
    };
    if let Destination::Dir(d) = dest {
        ensure_dir(d)?;
    }
    match &path {
        Some(p) => write_atomic(p, &bytes, paths)?,
        None => check_not_input(Path::new("-"), paths)?,
    }
    let profiles = vec![batch::ProfileTotals::of(&profile)];
    Ok(ConvertRun { outputs: vec![(path, bytes)], report, symbols: None, profiles })
}

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
    let mut symbolizer = Symbolizer::new(opts.clone());
    let mut attributions: BTreeMap<(u64, String), crate::symbolize::Attribution> = BTreeMap::new();
    let (trace, tables) = decode_heapprofd_with(&mut inp, &dopts, &mut |t, r| symbolizer.symbolize(t, r), &mut |p| {
        attributions
            .insert((p.header.meta.pid.unwrap_or(0), p.header.meta.heap.clone()), crate::symbolize::attribute(&p));
        Ok(())
    })?;
    let mut report = symbolizer.report(&tables);
    for a in attributions.values() {
        report.attribute(a);
    }
    let symbols = encode_module_symbols(&tables);
    if let Some(out) = output {
        write_atomic(out, &symbols, &[input.to_path_buf()])?;
    }
    Ok(SymbolizeRun { symbols, report, trace })
}

/// Options of `heapconv hprof`: Java heap graphs of a Perfetto trace to hprof heap dumps.
#[derive(Debug, Clone, Default)]
pub struct HprofRunOptions {
    /// Only these pids (empty: all). Default: empty.
    pub pids: Vec<u64>,
    /// Only dumps at these trace-clock timestamps (empty: all). Default: empty.
    pub timestamps: Vec<i64>,
    /// How the dumps are written. Default: [`HprofOptions::default`] (1.0.2).
    pub hprof: HprofOptions,
    /// How the trace is read. Default: [`HeapGraphOptions::default`].
    pub graph: HeapGraphOptions,
}

/// Where `heapconv hprof` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HprofDestination {
    /// One file: exactly one dump must match.
    File(PathBuf),
    /// Standard output: exactly one dump must match.
    Stdout,
    /// A directory: one `java_heap_dump.N.PID.hprof` per matching dump (N counts from 1 in
    /// the order the dumps end in the trace).
    Dir(PathBuf),
}

/// One hprof file `heapconv hprof` wrote.
#[derive(Debug, Clone)]
pub struct HprofWritten {
    /// Where (`None`: standard output, whose bytes are in [`HprofRun::stdout`]).
    pub path: Option<PathBuf>,
    /// Which dump: process, pid, time.
    pub describe: String,
    /// Why the dump is incomplete, if it is.
    pub incomplete: Vec<String>,
    /// What was written.
    pub summary: HprofSummary,
}

/// Output of `heapconv hprof`.
#[derive(Debug)]
pub struct HprofRun {
    /// Files written, in order.
    pub written: Vec<HprofWritten>,
    /// The hprof bytes for standard output, when that was the destination.
    pub stdout: Option<Vec<u8>>,
    /// What the trace holds.
    pub report: TraceReport,
}

impl HprofRun {
    /// True when the result is partial: the trace is damaged or a written dump is incomplete.
    pub fn is_partial(&self) -> bool {
        self.report.damage.is_some() || self.written.iter().any(|w| !w.incomplete.is_empty())
    }
}

/// How a heap graph dump is named in messages.
pub fn describe_heap_dump(pid: Option<u32>, name: Option<&str>, timestamp: Option<i64>) -> String {
    let mut s = match (name, pid) {
        (Some(n), Some(p)) => format!("{n} (pid {p})"),
        (None, Some(p)) => format!("pid {p}"),
        (Some(n), None) => n.to_owned(),
        (None, None) => "unknown process".to_owned(),
    };
    if let Some(t) = timestamp {
        s.push_str(&format!(" at {t} ns"));
    }
    s
}

/// Runs `heapconv hprof`: decodes the heap graphs of `input` and writes the matching dumps as
/// hprof, one at a time (memory holds one dump). Every file is staged and renamed into place
/// only when the run succeeds; with a single-file destination, several matching dumps are a
/// usage error that lists them.
pub fn run_hprof(input: &Path, dest: &HprofDestination, opts: &HprofRunOptions) -> Result<HprofRun> {
    use std::io::Write as _;
    let mut inp = Input::open(input, DecodeOptions::default().max_gzip_bytes)?;
    let inputs = [input.to_path_buf()];
    let stage_dir = match dest {
        HprofDestination::Dir(d) => {
            ensure_dir(d)?;
            d.clone()
        }
        HprofDestination::File(f) => match f.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        },
        HprofDestination::Stdout => std::env::temp_dir(),
    };
    if let HprofDestination::File(f) = dest {
        check_not_input(f, &inputs)?;
    }
    let single = !matches!(dest, HprofDestination::Dir(_));
    let mut graph = opts.graph.clone();
    graph.pids = opts.pids.clone();
    let mut staged: Vec<(PathBuf, HprofWritten, u32)> = Vec::new();
    let mut matched: Vec<String> = Vec::new();
    let report = decode_heap_graphs(&mut inp, &graph, &mut |dump| {
        if !opts.timestamps.is_empty() && !dump.timestamp.is_some_and(|t| opts.timestamps.contains(&t)) {
            return Ok(());
        }
        let describe = describe_heap_dump(dump.pid, dump.process_name.as_deref(), dump.timestamp);
        matched.push(describe.clone());
        if single && matched.len() > 1 {
            // Only listed: the run ends in a usage error.
            return Ok(());
        }
        let n = matched.len();
        let (tmp, file) = stage_file(&stage_dir, n)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
        let result = encode_hprof(&dump, &opts.hprof, &mut w)
            .and_then(|s| w.flush().map(|_| s).map_err(|e| Error::io(format!("writing {}", tmp.display()), e)));
        match result {
            Ok(summary) => {
                let written = HprofWritten { path: None, describe, incomplete: dump.incomplete.clone(), summary };
                staged.push((tmp, written, dump.pid.unwrap_or(0)));
                Ok(())
            }
            Err(e) => {
                discard_staged([tmp]);
                Err(e)
            }
        }
    });
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            discard_staged(staged.into_iter().map(|s| s.0));
            return Err(e);
        }
    };
    if matched.is_empty() {
        discard_staged(staged.into_iter().map(|s| s.0));
        let what = if let (true, Some(d)) = (report.heap_graphs.is_empty(), &report.damage) {
            format!("no Java heap graph could be read: {d}")
        } else if report.heap_graphs.is_empty() {
            "the trace holds no Java heap graph".to_owned()
        } else {
            "no heap graph dump matches --pid/--timestamps (see `heapconv inspect`)".to_owned()
        };
        return Err(Error::new(ErrorKind::NoData, format!("{}: {what}", input.display())));
    }
    if single && matched.len() > 1 {
        discard_staged(staged.into_iter().map(|s| s.0));
        return Err(several_heap_graphs(&matched, "--pid/--timestamps"));
    }
    let mut written = Vec::new();
    let mut stdout = None;
    for (n, (tmp, mut w, pid)) in staged.into_iter().enumerate() {
        match dest {
            HprofDestination::Dir(d) => {
                let path = d.join(format!("java_heap_dump.{}.{pid}.hprof", n + 1));
                commit_staged(&tmp, &path, &inputs)?;
                w.path = Some(path);
            }
            HprofDestination::File(f) => {
                commit_staged(&tmp, f, &inputs)?;
                w.path = Some(f.clone());
            }
            HprofDestination::Stdout => {
                let bytes = std::fs::read(&tmp).map_err(|e| Error::io(format!("reading {}", tmp.display()), e));
                discard_staged([tmp]);
                stdout = Some(bytes?);
            }
        }
        written.push(w);
    }
    Ok(HprofRun { written, stdout, report })
}

/// Runs `heapconv profile --java-heap`, as `traceconv profile --java-heap` does: one pprof per
/// heap graph dump (per process and time) of traceconv's shortest-path tree from the GC roots,
/// named `java_heap_dump.N.PID.pb` (`.pb.gz` unless `raw`), N counting from 1 in the order the
/// dumps end in the trace. A dump whose tree is empty (no roots) gets no file, as in traceconv.
/// Every file is staged and renamed into place only when the run succeeds.
pub fn run_java_heap_profile(input: &Path, opts: &ProfileOptions) -> Result<ProfileRun> {
    use crate::analysis::heap::RootedHeap;
    let mut inp = Input::open(input, opts.decode.max_gzip_bytes)?;
    let inputs = [input.to_path_buf()];
    let graph = HeapGraphOptions {
        max_packet_bytes: opts.decode.max_packet_bytes,
        max_bundle_bytes: opts.decode.max_bundle_bytes,
        pids: opts.pids.clone(),
    };
    let mut staged: Vec<(PathBuf, u32)> = Vec::new();
    let mut dir_ready = false;
    let mut incomplete = Vec::new();
    let result = decode_heap_graphs(&mut inp, &graph, &mut |dump| {
        if !opts.timestamps.is_empty() && !dump.timestamp.is_some_and(|t| opts.timestamps.contains(&t)) {
            return Ok(());
        }
        if !dump.incomplete.is_empty() {
            let what = describe_heap_dump(dump.pid, dump.process_name.as_deref(), dump.timestamp);
            incomplete.push(format!("{what}: {}", dump.incomplete.join("; ")));
        }
        let heap = RootedHeap::new(&dump);
        let spt = heap.shortest_path_tree();
        let profile = heap.spt_profile(&spt);
        if profile.sample_count() == 0 {
            return Ok(());
        }
        if !dir_ready {
            ensure_dir(&opts.output_dir)?;
            dir_ready = true;
        }
        let (tmp, file) = stage_file(&opts.output_dir, staged.len())?;
        staged.push((tmp.clone(), dump.pid.unwrap_or(0)));
        let buf = std::io::BufWriter::with_capacity(1 << 20, file);
        let mut encoder = PprofEncoder::new(PprofOptions { annotations: false, extras: true });
        let io = |e| Error::io(format!("writing {}", tmp.display()), e);
        let file = if opts.raw {
            let mut w = buf;
            encoder.encode_to(&profile, &mut w).map_err(io)?;
            w.into_inner().map_err(|e| io(e.into_error()))?
        } else {
            let mut w = gzip_writer(buf);
            encoder.encode_to(&profile, &mut w).map_err(io)?;
            let buf = w.finish().map_err(io)?;
            buf.into_inner().map_err(|e| io(e.into_error()))?
        };
        crate::output::sync_file(&file).map_err(io)?;
        Ok(())
    });
    let mut report = match result {
        Ok(r) => r,
        Err(e) => {
            discard_staged(staged.into_iter().map(|s| s.0));
            return Err(e);
        }
    };
    if report.heap_graphs.is_empty() && report.damage.is_none() {
        return Err(Error::new(ErrorKind::NoData, format!("{}: the trace holds no Java heap graph", inp.name)));
    }
    // An incomplete heap graph makes the result partial (exit code 3), as in `convert`,
    // `top` and `hprof`.
    if !incomplete.is_empty() && report.damage.is_none() {
        report.damage = Some(format!("incomplete heap graph dump(s): {}", incomplete.join(" | ")));
    }
    let ext = if opts.raw { "pb" } else { "pb.gz" };
    let mut written = Vec::new();
    let mut rest = staged.into_iter().enumerate();
    while let Some((n, (tmp, pid))) = rest.next() {
        let path = opts.output_dir.join(format!("java_heap_dump.{}.{pid}.{ext}", n + 1));
        if let Err(e) = commit_staged(&tmp, &path, &inputs) {
            discard_staged(rest.map(|(_, s)| s.0));
            return Err(e);
        }
        written.push(path);
    }
    Ok(ProfileRun { written, report, symbols: None })
}
