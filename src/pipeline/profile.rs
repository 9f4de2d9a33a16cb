//! `heapconv profile`: one pprof file per (pid, dump, heap) of a trace, as
//! `traceconv profile --alloc` writes them, or per Java heap graph dump with `--java-heap`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};

use super::batch::{BatchInput, Done, ProfileTotals};
use super::load::{SymbolSources, symbolize_hook};
use super::select::{DumpFilter, DumpSelect, describe_heap_dump};
use crate::decode::Input;
use crate::decode::perfetto::heap_graph::{HeapGraphOptions, decode_heap_graphs};
use crate::decode::perfetto::{DecodeOptions, Handover, decode_heapprofd_early};
use crate::encode::pprof::{PprofEncoder, PprofOptions, gzip_writer};
use crate::encode::pprof_gzip::{GzBuffers, ParallelGzWriter};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Profile, Tables, TraceReport};
use crate::output::{commit_staged, discard_staged, ensure_dir, stage_file};
use crate::symbolize::{SymbolizeReport, Symbolizer};

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
    /// Where symbols come from (symbol directories, the coverage gate). Default: none (no
    /// symbolization; symbols already in the input are still used).
    pub symbols: SymbolSources,
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
            symbols: SymbolSources::default(),
        }
    }
}

impl ProfileOptions {
    /// The dumps of a trace these options convert: every dump of the selected pids and
    /// timestamps.
    pub fn dump_filter(&self, report: &TraceReport) -> DumpFilter {
        DumpFilter::new(&self.pids, None, DumpSelect::All, &self.timestamps, report)
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
    /// The heapprofd dumps of the trace that were converted (what warnings and `--strict`
    /// judge).
    pub converted: DumpFilter,
}

/// A dump's pprof file of `profile`, staged: (order, job number, timestamp, key, file).
type Staged = (usize, usize, Option<i64>, String, Result<PathBuf>);

/// A finished dump, as the decoder hands it to the encoder thread: what its tables added since
/// the last hand-over, and the profile's parts.
struct Job {
    order: usize,
    number: usize,
    delta: crate::model::TablesDelta,
    meta: crate::model::ProfileMeta,
    sample_types: Vec<crate::model::ValueType>,
    default_sample_type: usize,
    stacks: Vec<crate::model::StackId>,
    values: Vec<i64>,
}

/// What the decoder hands the encoder thread. While the decoder works through a chain that
/// defines callstacks (heapprofd puts every callstack of a dump in the dump's chain), the
/// encoder, idle until the dump is complete, is handed the new callstacks to give them location
/// ids and location lists early. Only when it is waiting (a rendezvous `try_send`), so this
/// never holds up the decoder.
enum Work {
    /// New callstacks, with what the tables added since the last hand-over.
    Grow(crate::model::TablesDelta, Vec<crate::model::StackId>),
    /// A finished dump.
    Dump(Box<Job>),
}

/// Converts every heapprofd dump of `input` into one pprof file per (pid, dump, heap), as
/// `traceconv profile --alloc` does: dumps where nothing changed get no file. `progress` is
/// called with the number of profiles encoded so far.
pub fn run_profile(input: &Path, opts: &ProfileOptions, progress: &(dyn Fn(usize) + Sync)) -> Result<ProfileRun> {
    let mut inp = Input::open(input, opts.decode.max_gzip_bytes)?;
    let mut decode = opts.decode.clone();
    decode.pids = opts.pids.clone();
    decode.include_unchanged = false;
    let encoder = PprofEncoder::new(PprofOptions { annotations: opts.annotations, extras: true });
    let mut symbolizer = opts.symbols.options().map(Symbolizer::new);
    let symbolizing = symbolizer.is_some();
    // Without symbol directories frames are only counted, never changed, so the encoder may
    // still lay out callstacks early.
    let deob = super::load::prepare_trace(&mut inp, &decode, &opts.symbols.proguard, &mut symbolizer)?;
    let looking_up = !opts.symbols.dirs.is_empty() || deob.is_some();
    let mut session = deob.session();
    let mut attributions: BTreeMap<(u64, String), crate::symbolize::Attribution> = BTreeMap::new();
    // Two things overlap: this thread decodes; an encoder thread turns each finished dump into
    // pprof, reading a replica of the tables that the decoder extends with what each dump added
    // (so the two never share a growing table), and writes it into a staged file, compressed by
    // the rayon pool as it goes. Names are given at the end, in trace-time order, by renaming.
    // The decoder hands each dump over as soon as its chain ends; in the rare trace where a
    // later chain adds to it, it comes again, and that later file (the higher job number)
    // replaces the earlier one.
    let (tx, rx) = mpsc::channel::<Staged>();
    // The decoder hands over one dump at a time: memory stays bounded however many dumps the
    // trace has.
    let (job_tx, job_rx) = mpsc::sync_channel::<Work>(0);
    let mut count = 0usize;
    let mut jobs = 0usize;
    // The order each dump was given, by (pid, heap, dump index), for a dump that comes again.
    let mut orders: std::collections::HashMap<(u64, String, usize), usize> = std::collections::HashMap::new();
    let mut dir_ready = false;
    let mark = std::cell::Cell::new(crate::model::TablesMark::default());
    let mut early: Vec<crate::model::StackId> = Vec::new();
    let mut result = Ok((TraceReport::default(), Arc::new(Tables::default())));
    // Whether the encoder thread waits for work (a hint for the decoder's early hand-overs).
    let encoder_idle = std::sync::atomic::AtomicBool::new(false);
    let raw = opts.raw;
    let dir = opts.output_dir.clone();
    std::thread::scope(|threads| {
        let idle = &encoder_idle;
        // The encoder writes each profile straight into its staged file, compressed in 1 MiB
        // members by the rayon pool (every core) while it encodes the next megabyte; the
        // compression buffers serve one file after the other.
        let encoder_thread = threads.spawn(move || encode_dumps(job_rx, tx, encoder, &dir, raw, idle));
        let job_tx_early = job_tx.clone();
        let mut stack_hook = |t: &Tables, stacks: &[crate::model::StackId]| {
            early.extend_from_slice(stacks);
            // The delta is only worth making when the encoder waits for work (it copies every
            // frame added since the last one it took).
            if !encoder_idle.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            let work = Work::Grow(t.delta_since(mark.get()), std::mem::take(&mut early));
            match job_tx_early.try_send(work) {
                Ok(()) => mark.set(t.mark()),
                Err(mpsc::TrySendError::Full(Work::Grow(_, stacks))) => early = stacks,
                Err(_) => {}
            }
        };
        result = decode_heapprofd_early(
            &mut inp,
            &decode,
            &mut |t, r| symbolize_hook(&mut symbolizer, &mut session, t, r),
            if looking_up { None } else { Some(&mut stack_hook) },
            &mut |h: Handover| {
                let (p, again) = match h {
                    Handover::Dump(p) => (p, false),
                    Handover::Again(p) => (p, true),
                };
                if !opts.timestamps.is_empty() && !p.header.meta.timestamp.is_some_and(|t| opts.timestamps.contains(&t))
                {
                    return Ok(());
                }
                if !dir_ready {
                    ensure_dir(&opts.output_dir)?;
                    dir_ready = true;
                }
                let meta = &p.header.meta;
                let dump = (meta.pid.unwrap_or(0), meta.heap.clone(), meta.dump_index);
                let order = match orders.get(&dump) {
                    Some(&order) if again => order,
                    _ => {
                        let order = count;
                        count += 1;
                        progress(count);
                        orders.insert(dump, order);
                        order
                    }
                };
                let number = jobs;
                jobs += 1;
                if symbolizing {
                    attributions.insert(
                        (p.header.meta.pid.unwrap_or(0), p.header.meta.heap.clone()),
                        crate::symbolize::attribute(&p),
                    );
                }
                let delta = p.tables.delta_since(mark.get());
                mark.set(p.tables.mark());
                let (_, meta, sample_types, default_sample_type, stacks, values) = p.into_parts();
                let job = Job { order, number, delta, meta, sample_types, default_sample_type, stacks, values };
                // With HEAPCONV_TIMINGS: how long the decoder (the critical path) waited for the
                // encoder to take the dump.
                let mut clock = crate::timing::Phases::start("profile");
                job_tx
                    .send(Work::Dump(Box::new(job)))
                    .map_err(|_| Error::new(ErrorKind::Io, "the pprof encoder thread stopped"))?;
                clock.done("decoder waits for the encoder");
                Ok(())
            },
        );
        drop(job_tx);
        drop(job_tx_early);
        let _ = encoder_thread.join();
    });
    let outs: Vec<Staged> = rx.into_iter().collect();
    let (written, report, tables) = name_staged_files(outs, result, input, &inp.name, opts)?;
    let symbols = symbolizer.map(|s| {
        let mut r = s.report(&tables);
        for a in attributions.values() {
            r.attribute(a);
        }
        r
    });
    let converted = opts.dump_filter(&report);
    Ok(ProfileRun { written, report, symbols, converted })
}

/// The encoder thread of `profile`: turns each dump the decoder hands over into pprof, reading
/// a replica of the tables that each hand-over extends, written straight into its staged file
/// in `dir` (gzip-compressed in 1 MiB members by the rayon pool while it encodes the next
/// megabyte, unless `raw`); each file is flushed to disk beside the work and sent on `tx`.
/// `idle` says when it waits for work.
fn encode_dumps(
    job_rx: mpsc::Receiver<Work>,
    tx: mpsc::Sender<Staged>,
    mut encoder: PprofEncoder,
    dir: &Path,
    raw: bool,
    idle: &std::sync::atomic::AtomicBool,
) {
    let mut replica = Arc::new(Tables::default());
    let mut buffers = GzBuffers::default();
    let mut syncs = Vec::new();
    loop {
        idle.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut clock = crate::timing::Phases::start("profile");
        let Ok(work) = job_rx.recv() else { break };
        clock.done("encoder waits for the decoder");
        idle.store(false, std::sync::atomic::Ordering::Relaxed);
        let job = match work {
            Work::Grow(delta, stacks) => {
                Arc::make_mut(&mut replica).apply_delta(delta);
                encoder.prepare(&replica, &stacks);
                clock.done("encoder prepares early callstacks");
                continue;
            }
            Work::Dump(job) => *job,
        };
        Arc::make_mut(&mut replica).apply_delta(job.delta);
        let key = format!("{}.{}", job.meta.pid.unwrap_or(0), job.meta.heap);
        let ts = job.meta.timestamp;
        let order = job.order;
        let number = job.number;
        let p = Profile::from_parts(
            Arc::clone(&replica),
            job.meta,
            job.sample_types,
            job.default_sample_type,
            job.stacks,
            job.values,
        );
        let staged = stage_file(dir, order).and_then(|(tmp, file)| {
            let written = if raw {
                let mut file = file;
                encoder.encode_streaming_to(&p, &mut file).map(|_| file)
            } else {
                let mut w = ParallelGzWriter::with_buffers(file, std::mem::take(&mut buffers));
                let encoded = encoder.encode_streaming_to(&p, &mut w);
                encoded.and_then(|_| w.finish_keeping()).map(|(file, kept)| {
                    buffers = kept;
                    file
                })
            };
            written.map(|file| (tmp.clone(), file)).map_err(|e| {
                discard_staged([tmp.clone()]);
                Error::io(format!("writing {}", tmp.display()), e)
            })
        });
        drop(p);
        clock.done("encode and compress a dump");
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
            let _ = tx.send((order, number, ts, key, staged));
        }));
    }
    drop(tx);
    for s in syncs {
        let _ = s.join();
    }
}

/// The staged files of `profile` given their names, in trace-time order (a dump handed over
/// again keeps its last file), once the decoding `result` is known; on an error, every staged
/// file is removed.
fn name_staged_files(
    mut outs: Vec<Staged>,
    result: Result<(TraceReport, Arc<Tables>)>,
    input: &Path,
    name: &str,
    opts: &ProfileOptions,
) -> Result<(Vec<PathBuf>, TraceReport, Arc<Tables>)> {
    let staged_paths = |outs: &mut Vec<Staged>| -> Vec<PathBuf> { outs.drain(..).filter_map(|o| o.4.ok()).collect() };
    let (report, tables) = match result {
        Ok(r) => r,
        Err(e) => {
            discard_staged(staged_paths(&mut outs));
            return Err(e);
        }
    };
    if let Some(e) = outs.iter().find_map(|o| o.4.as_ref().err()) {
        let e = Error::new(e.kind(), e.to_string());
        discard_staged(staged_paths(&mut outs));
        return Err(e);
    }
    // A dump handed over again: its last file replaces the earlier ones.
    outs.sort_by_key(|o| (o.0, o.1));
    let mut replaced = Vec::new();
    let mut i = 0;
    while i + 1 < outs.len() {
        if outs[i].0 == outs[i + 1].0 {
            replaced.push(outs.remove(i));
        } else {
            i += 1;
        }
    }
    discard_staged(staged_paths(&mut replaced));
    if report.dumps.is_empty() && report.damage.is_none() {
        return Err(Error::new(ErrorKind::NoData, format!("{name}: no heapprofd profile found in the trace")));
    }
    // Files are numbered in trace-time order (stable for dumps at the same time).
    outs.sort_by_key(|o| (o.2.unwrap_or(i64::MIN), o.0));
    let ext = if opts.raw { "pb" } else { "pb.gz" };
    let inputs = [input.to_path_buf()];
    let mut written = Vec::new();
    let mut rest = outs.into_iter().enumerate();
    while let Some((n, (_, _, _, key, staged))) = rest.next() {
        let tmp = staged.expect("errors handled above");
        let path = opts.output_dir.join(format!("heap_dump.{}.{key}.{ext}", n + 1));
        if let Err(e) = commit_staged(&tmp, &path, &inputs) {
            discard_staged(rest.filter_map(|(_, o)| o.4.ok()));
            return Err(e);
        }
        written.push(path);
    }
    Ok((written, report, tables))
}

/// Runs `heapconv profile --java-heap`, as `traceconv profile --java-heap` does: one pprof per
/// heap graph dump (per process and time) of traceconv's shortest-path tree from the GC roots,
/// named `java_heap_dump.N.PID.pb` (`.pb.gz` unless `raw`), N counting from 1 in the order the
/// dumps come (trace time, then start). A dump whose tree is empty (no roots) gets a profile
/// without samples, as in traceconv.
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
    let deob = opts.symbols.proguard.open_for_trace(&mut inp, opts.decode.max_packet_bytes)?;
    let result = decode_heap_graphs(&mut inp, &graph, &mut |mut dump| {
        deob.deobfuscate_graph(&mut dump);
        if !opts.timestamps.is_empty() && !dump.timestamp.is_some_and(|t| opts.timestamps.contains(&t)) {
            return Ok(());
        }
        if !dump.incomplete.is_empty() {
            let what = describe_heap_dump(dump.pid, dump.process_name.as_deref(), dump.timestamp);
            incomplete.push(format!("{what}: {}", dump.incomplete.join("; ")));
        }
        let heap = RootedHeap::new(&dump);
        let spt = heap.shortest_path_tree();
        // A dump with no roots has an empty tree and still gets its file, as in traceconv
        // (the decoder reports the missing roots).
        let profile = heap.spt_profile(&spt);
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
    let converted = opts.dump_filter(&report);
    Ok(ProfileRun { written, report, symbols: None, converted })
}

/// `profile` of one trace: `OUT/<key>/heap_dump.N.PID.HEAP.pb.gz` (or `java_heap_dump.N.PID`
/// with `java_heap`), named as `profile -o DIR` names them.
pub fn profile_one(input: &BatchInput, out_dir: &Path, opts: &ProfileOptions, java_heap: bool) -> Result<Done> {
    let mut o = opts.clone();
    o.output_dir = out_dir.join(&input.key);
    let run = if java_heap { run_java_heap_profile(&input.path, &o)? } else { run_profile(&input.path, &o, &|_| {})? };
    let mut warnings = Vec::new();
    if run.written.is_empty() {
        warnings.push("no profile matched; nothing written".to_owned());
    }
    let profiles = if java_heap {
        Vec::new()
    } else {
        run.report
            .dumps
            .iter()
            .filter(|d| d.changed)
            .filter(|d| opts.pids.is_empty() || opts.pids.contains(&d.pid))
            .filter(|d| opts.timestamps.is_empty() || d.timestamp.is_some_and(|t| opts.timestamps.contains(&t)))
            .map(|d| {
                let mut totals = BTreeMap::new();
                totals.insert("total-count".to_owned(), d.totals.total_count);
                totals.insert("total-size".to_owned(), d.totals.total_size);
                totals.insert("unreleased-count".to_owned(), d.totals.unreleased_count);
                totals.insert("unreleased-size".to_owned(), d.totals.unreleased_size);
                let mut profile = format!("pid {}, heap {}, dump {}", d.pid, d.heap, d.index + 1);
                if let Some(t) = d.timestamp {
                    profile.push_str(&format!(" at {t} ns"));
                }
                ProfileTotals { profile, samples: d.stacks as usize, totals }
            })
            .collect()
    };
    Ok(Done {
        outputs: run.written,
        profiles,
        dumps: Some(run.converted),
        report: Some(run.report),
        symbols: run.symbols,
        warnings,
        ..Done::default()
    })
}
