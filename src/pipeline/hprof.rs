//! `heapconv hprof`: the Java heap graphs of a trace written as hprof heap dumps.

use std::path::{Path, PathBuf};

use super::batch::{BatchInput, Done};
use super::select::{describe_heap_dump, no_match, several_heap_graphs};
use crate::decode::Input;
use crate::decode::perfetto::DecodeOptions;
use crate::decode::perfetto::heap_graph::{HeapGraphOptions, decode_heap_graphs};
use crate::encode::hprof::{HprofOptions, HprofSummary, encode_hprof};
use crate::error::{Error, ErrorKind, Result, Selector};
use crate::model::TraceReport;
use crate::output::{check_not_input, commit_staged, discard_staged, ensure_dir, stage_file};

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
    /// ProGuard/R8 maps: the dumps are written with deobfuscated class and field names.
    /// Default: none.
    pub proguard: super::load::ProguardMaps,
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
    /// What was written, as `hprof --json` prints it.
    pub fn written_json(&self) -> String {
        self.written_json_with(None)
    }

    /// [`HprofRun::written_json`], each file's object with `"deobfuscation"`: what the run's
    /// ProGuard/R8 maps did (the run's report, the same in every object; see
    /// [`super::reports::deobfuscation_json`]), when `deobfuscation` is given.
    pub fn written_json_with(&self, deobfuscation: Option<&serde_json::Value>) -> String {
        let doc: Vec<serde_json::Value> = self
            .written
            .iter()
            .map(|w| {
                let mut o = serde_json::json!({
                    "path": w.path.as_ref().map(|p| p.display().to_string()),
                    "dump": w.describe,
                    "incomplete": w.incomplete,
                    "summary": w.summary,
                });
                if let (Some(d), Some(m)) = (deobfuscation, o.as_object_mut()) {
                    m.insert("deobfuscation".to_owned(), d.clone());
                }
                o
            })
            .collect();
        serde_json::to_string_pretty(&doc).expect("serializes")
    }

    /// True when the result is partial: the trace is damaged or a written dump is incomplete.
    pub fn is_partial(&self) -> bool {
        self.report.damage.is_some() || self.written.iter().any(|w| !w.incomplete.is_empty())
    }
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
    let deob = opts.proguard.open_for_trace(&mut inp, graph.max_packet_bytes)?;
    let report = decode_heap_graphs(&mut inp, &graph, &mut |mut dump| {
        deob.deobfuscate_graph(&mut dump);
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
            return Err(no_match(input, "heap graph dump", &[Selector::Pid, Selector::Timestamps]));
        };
        return Err(Error::new(ErrorKind::NoData, format!("{}: {what}", input.display())));
    }
    if single && matched.len() > 1 {
        discard_staged(staged.into_iter().map(|s| s.0));
        return Err(several_heap_graphs(&matched, &[Selector::Pid, Selector::Timestamps]));
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

/// `hprof` of one trace: `OUT/<key>/java_heap_dump.N.PID.hprof`, as `hprof -o DIR/` names
/// them.
pub fn hprof_one(input: &BatchInput, out_dir: &Path, opts: &HprofRunOptions) -> Result<Done> {
    let run = run_hprof(&input.path, &HprofDestination::Dir(out_dir.join(&input.key)), opts)?;
    let partial = run
        .written
        .iter()
        .filter(|w| !w.incomplete.is_empty())
        .map(|w| format!("{}: the heap graph is incomplete: {}", w.describe, w.incomplete.join("; ")))
        .collect();
    let details = serde_json::json!(
        run.written.iter().map(|w| serde_json::json!({"dump": w.describe, "summary": w.summary})).collect::<Vec<_>>()
    );
    Ok(Done {
        outputs: run.written.iter().filter_map(|w| w.path.clone()).collect(),
        report: Some(run.report),
        partial,
        details: Some(details),
        ..Done::default()
    })
}
