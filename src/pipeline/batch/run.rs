//! Running a batch: each input on rayon's threads, a failure (or a panic) recorded and the
//! others going on ([`run_batch`]), and how a per-input result is judged.

use super::list::{BatchInput, rel_path};
use super::summary::{Coverage, Gate, InputClock, InputResult, OutputFile, ProfileTotals, Status, round3};
use crate::decode::sniff_file;
use crate::error::{Error, ErrorKind, Result};
use crate::model::TraceReport;
use crate::output::ensure_dir;
use crate::symbolize::SymbolizeReport;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a per-input function returns; [`run_batch`] makes an [`InputResult`] of it.
#[derive(Debug, Default)]
pub struct Done {
    /// Files written.
    pub outputs: Vec<PathBuf>,
    /// What each converted profile holds.
    pub profiles: Vec<ProfileTotals>,
    /// What the decoder found (warnings and partial results are read from it).
    pub report: Option<TraceReport>,
    /// The symbolization report.
    pub symbols: Option<SymbolizeReport>,
    /// Why the result is partial, beyond what the report says.
    pub partial: Vec<String>,
    /// More warnings.
    pub warnings: Vec<String>,
    /// What was lost, beyond what the report and `partial` say (for `--strict`).
    pub data_loss: Vec<String>,
    /// Command-specific figures.
    pub details: Option<serde_json::Value>,
    /// The dumps of the trace the command took: warnings and data loss name those only.
    /// `None`: every dump.
    pub dumps: Option<crate::pipeline::DumpFilter>,
}

/// How [`run_batch`] runs.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Worker threads; `None`: the current rayon pool (all cores unless configured).
    /// Default: `None`.
    pub jobs: Option<usize>,
    /// Where outputs go (output paths in results are relative to it). Default: empty (the
    /// current directory).
    pub out_dir: PathBuf,
    /// The least symbolization coverage (percent of frames) an input must reach. Default: none.
    pub min_symbolized: Option<f64>,
    /// Extensions of the one-file outputs the command writes (`OUT/<key>.<ext>`); with
    /// `OUT/<key>/`, what an input's outputs may overwrite. Default: none.
    pub file_exts: Vec<String>,
    /// Leave wall-clock times out of the results. Default: false.
    pub no_times: bool,
}

fn error_kind_name(k: ErrorKind) -> &'static str {
    match k {
        ErrorKind::Io => "io",
        ErrorKind::Truncated => "truncated",
        ErrorKind::Malformed => "malformed",
        ErrorKind::Unsupported => "unsupported",
        ErrorKind::LimitExceeded => "limit-exceeded",
        ErrorKind::Usage => "usage",
        ErrorKind::NoData => "no-data",
    }
}

/// An error with its chain of causes, on one line.
pub fn error_text(e: &Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(&format!(": {c}"));
        src = c.source();
    }
    s
}

/// What the user should know about a decoded trace, one line each (as the single-input
/// commands print them).
pub fn report_warnings(report: &TraceReport) -> Vec<String> {
    report_warnings_of(report, &|_| true)
}

/// [`report_warnings`] with the data-loss flags of the dumps `keep` accepts only.
pub fn report_warnings_of(report: &TraceReport, keep: &dyn Fn(&crate::model::DumpReport) -> bool) -> Vec<String> {
    let mut w = Vec::new();
    for d in report.dumps.iter().filter(|d| keep(d)) {
        let loss = d.flags.data_loss();
        if !loss.is_empty() {
            w.push(format!("pid {} heap {} dump {}: {}", d.pid, d.heap, d.index + 1, loss.join(", ")));
        }
    }
    const LISTED: usize = 20;
    for p in report.problems.iter().take(LISTED) {
        w.push(p.message.clone());
    }
    let more = report.problems.len().saturating_sub(LISTED) as u64 + report.problems_omitted;
    if more > 0 {
        w.push(format!("{more} more problem(s); `heapconv inspect` lists them"));
    }
    if report.unfinished_dumps > 0 {
        w.push(format!(
            "{} dump(s) never finished (the trace ends inside a dump chain); they were not converted",
            report.unfinished_dumps
        ));
    }
    if let Some(d) = &report.damage {
        w.push(format!("input damaged, result is partial: {d}"));
    }
    w
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

/// Inputs (relative to the canonical output directory, lower-cased) that lie inside it.
fn inputs_inside(out_dir: &Path, inputs: &[BatchInput]) -> Vec<String> {
    let Ok(out) = std::fs::canonicalize(out_dir) else { return Vec::new() };
    inputs
        .par_iter()
        .filter_map(|i| {
            let c = std::fs::canonicalize(&i.path).ok()?;
            let rel = c.strip_prefix(&out).ok()?;
            Some(rel_path(Path::new(""), rel).to_lowercase())
        })
        .collect()
}

/// Runs `work` on every input, in parallel, and returns what each did, in input order.
/// `done` is called (from worker threads) as each input finishes. An input whose outputs
/// could overwrite another input of the batch fails without being converted. Outputs are
/// flushed to disk together at the end rather than one by one (see
/// [`crate::output::defer_sync`]).
pub fn run_batch(
    inputs: &[BatchInput],
    opts: &RunOptions,
    work: &(dyn Fn(&BatchInput) -> Result<Done> + Sync),
    done: &(dyn Fn(&InputResult) + Sync),
) -> Result<Vec<InputResult>> {
    let inside = inputs_inside(&opts.out_dir, inputs);
    let one = |input: &BatchInput| -> InputResult {
        let start = Instant::now();
        let key_l = input.key.to_lowercase();
        let clash = inside.iter().find(|r| {
            r.starts_with(&format!("{key_l}/")) || opts.file_exts.iter().any(|e| **r == format!("{key_l}.{e}"))
        });
        let outcome = match clash {
            Some(r) => Err(Failure::Error(Error::new(
                ErrorKind::Usage,
                format!(
                    "{}: refusing to convert: its outputs ({}/{}…) could overwrite the input {r} in the output directory",
                    input.path.display(),
                    opts.out_dir.display(),
                    input.key
                ),
            ))),
            None => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(input))) {
                Ok(Ok(d)) => Ok(d),
                Ok(Err(e)) => Err(Failure::Error(e)),
                Err(p) => Err(Failure::Panic(panic_text(&*p))),
            },
        };
        let elapsed = start.elapsed();
        let r = result_of(input, outcome, elapsed, opts);
        done(&r);
        r
    };
    crate::output::defer_sync();
    let results = match opts.jobs {
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| Error::new(ErrorKind::Io, format!("starting {n} worker thread(s): {e}")))?;
            pool.install(|| inputs.par_iter().map(one).collect())
        }
        None => inputs.par_iter().map(one).collect(),
    };
    let mut results: Vec<InputResult> = results;
    // Every output flushed to disk at once (see `crate::output::defer_sync`); an output that
    // cannot be flushed fails its input.
    for (path, e) in crate::output::sync_deferred() {
        let rel = rel_path(&opts.out_dir, &path);
        if let Some(r) = results.iter_mut().find(|r| r.outputs.iter().any(|o| o.path == rel)) {
            r.status = Status::Failed;
            r.error_kind = Some(error_kind_name(e.kind()));
            r.error = Some(error_text(&e));
        }
    }
    Ok(results)
}

/// Why an input failed.
enum Failure {
    /// An error.
    Error(Error),
    /// A panic (a bug): its message.
    Panic(String),
}

fn result_of(
    input: &BatchInput,
    outcome: std::result::Result<Done, Failure>,
    elapsed: Duration,
    opts: &RunOptions,
) -> InputResult {
    let kind = sniff_file(&input.path).ok().map(|k| k.name());
    let mut r = InputResult {
        input: input.path.display().to_string(),
        rel: input.rel.clone(),
        key: input.key.clone(),
        kind,
        status: Status::Ok,
        error: None,
        error_kind: None,
        warnings: Vec::new(),
        data_loss: Vec::new(),
        outputs: Vec::new(),
        profiles: Vec::new(),
        symbolization: None,
        gate: None,
        details: None,
        wall_clock: (!opts.no_times).then(|| InputClock { elapsed_s: (elapsed.as_secs_f64() * 1e6).round() / 1e6 }),
    };
    let done = match outcome {
        Ok(d) => d,
        Err(Failure::Error(e)) => {
            r.status = Status::Failed;
            r.error_kind = Some(error_kind_name(e.kind()));
            r.error = Some(error_text(&e));
            return r;
        }
        Err(Failure::Panic(msg)) => {
            r.status = Status::Failed;
            r.error_kind = Some("internal");
            r.error = Some(format!("internal error (a bug; please report it): {msg}"));
            return r;
        }
    };
    let mut partial = !done.partial.is_empty();
    if let Some(rep) = &done.report {
        let keep = |d: &crate::model::DumpReport| done.dumps.as_ref().is_none_or(|f| f.keeps(d));
        r.warnings = report_warnings_of(rep, &keep);
        r.data_loss = rep.data_loss_of(&keep);
        partial |= rep.is_partial();
    }
    if r.data_loss.is_empty() {
        r.data_loss = done.partial.clone();
    }
    r.data_loss.extend(done.data_loss);
    r.warnings.extend(done.partial.iter().cloned());
    r.warnings.extend(done.warnings);
    if partial {
        r.status = Status::Partial;
    }
    r.outputs = done
        .outputs
        .iter()
        .map(|p| OutputFile {
            path: rel_path(&opts.out_dir, p),
            bytes: std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
        })
        .collect();
    r.profiles = done.profiles;
    if let Some(s) = &done.symbols {
        r.symbolization = Some(Coverage {
            frames: s.frames,
            frames_symbolized: s.frames_symbolized,
            frame_percent: round3(s.frame_percent()),
            byte_percent: round3(s.byte_percent()),
            unsymbolized_mappings: s
                .mappings
                .iter()
                .filter(|m| m.symbolized == 0 && m.frames > 0)
                .map(|m| format!("{} ({} frames, {:?})", m.path, m.frames, m.outcome))
                .collect(),
        });
        if let Some(min) = opts.min_symbolized {
            let actual = round3(s.frame_percent());
            r.gate = Some(Gate { min_symbolized: min, actual, passed: s.frame_percent() >= min });
        }
    }
    r.details = done.details;
    r
}

/// `OUT/<key>.<ext>`, its directory created: where the per-input work of a command writes
/// an input's one output.
pub fn file_for(out_dir: &Path, key: &str, ext: &str) -> Result<PathBuf> {
    let path = out_dir.join(format!("{key}.{ext}"));
    if let Some(parent) = path.parent() {
        ensure_dir(parent)?;
    }
    Ok(path)
}
