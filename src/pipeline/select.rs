//! Shared by the commands: which dumps a command converts ([`Selection`], [`DumpSelect`],
//! [`DumpFilter`]), what `convert` and its views share ([`ConvertCommon`]), where outputs go
//! ([`Destination`]) and how they are named.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::load::SymbolSources;
use crate::analysis::filter::FilterOptions;
use crate::decode::perfetto::DecodeOptions;
use crate::encode::Format;
use crate::error::{Error, ErrorKind, Hint, Result, Selector};
use crate::model::{Profile, ProfileMeta, TraceReport, ValueKind};
use crate::output::{check_not_input, ensure_dir, write_atomic};

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

/// Which heapprofd dumps of a trace a command takes: processes, heap, dumps. Embedded by the
/// options of every command that selects dumps so (`convert`, its views, `merge`, `diff`,
/// `top`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Keep only these pids (empty: all). Default: empty.
    pub pids: Vec<u64>,
    /// Keep only this heap. Default: all heaps.
    pub heap: Option<String>,
    /// Which dumps of each (pid, heap). Default: the last.
    pub dump: DumpSelect,
}

impl Default for Selection {
    fn default() -> Self {
        Selection { pids: Vec::new(), heap: None, dump: DumpSelect::Last }
    }
}

impl Selection {
    /// The dumps of a trace this selection takes.
    pub fn dump_filter(&self, report: &TraceReport) -> DumpFilter {
        DumpFilter::new(&self.pids, self.heap.as_deref(), self.dump, &[], report)
    }
}

/// What `convert` and its views across dumps (`convert --view`, whose options are exactly
/// these) share: which processes and heaps, the value shown (or ranked and compared), how
/// inputs are read and filtered, and how outputs are written.
#[derive(Debug, Clone)]
pub struct ConvertCommon {
    /// Output format. Default: pprof.
    pub format: Format,
    /// Which processes and heaps. A view chooses its dumps itself, so a `dump` other than the
    /// default (the last dump) is a usage error. Default: [`Selection::default`] (all).
    pub select: Selection,
    /// The sample value folded stacks and flame graphs show, pprof viewers open with, and a
    /// view ranks and compares. Default: unreleased size.
    pub value: ValueKind,
    /// ART frame annotations in frame names (pprof always has them unless this is false).
    /// Default: true.
    pub annotations: bool,
    /// Decoder options. Default: [`DecodeOptions::default`].
    pub decode: DecodeOptions,
    /// Where symbols come from (symbol directories, the coverage gate). Default: none (no
    /// symbolization; symbols already in the input are still used).
    pub symbols: SymbolSources,
    /// pprof-style filters applied to every profile written (of a view: the peak dump, the
    /// leak suspects, both sides of each delta; not the choice of dumps or suspects), not to a
    /// Java heap's JSON report. Default: none.
    pub filter: FilterOptions,
    /// HTML report: nodes below this percentage of the total are merged into `[other]`.
    /// Default: [`crate::encode::html::DEFAULT_PRUNE_BELOW`].
    pub prune_below: f64,
}

impl Default for ConvertCommon {
    fn default() -> Self {
        ConvertCommon {
            format: Format::Pprof,
            select: Selection::default(),
            value: ValueKind::UnreleasedSize,
            annotations: true,
            decode: DecodeOptions::default(),
            symbols: SymbolSources::default(),
            filter: FilterOptions::default(),
            prune_below: crate::encode::html::DEFAULT_PRUNE_BELOW,
        }
    }
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
    /// The dumps of `report` that a selection keeps: these pids (empty: all), this heap, these
    /// dumps of each (pid, heap), at these timestamps (empty: all).
    pub fn new(pids: &[u64], heap: Option<&str>, dump: DumpSelect, timestamps: &[i64], report: &TraceReport) -> Self {
        let mut last: BTreeMap<(u64, String), usize> = BTreeMap::new();
        for d in &report.dumps {
            let e = last.entry((d.pid, d.heap.clone())).or_insert(d.index);
            *e = (*e).max(d.index);
        }
        DumpFilter { pids: pids.to_vec(), heap: heap.map(str::to_owned), dump, timestamps: timestamps.to_vec(), last }
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

/// Writes a conversion's outputs, each atomically and never over `input`, making the
/// destination directory first. A `None` path is standard output, written by the caller:
/// here it is only checked not to be the input.
pub(crate) fn write_outputs(input: &Path, dest: &Destination, outputs: &[(Option<PathBuf>, Vec<u8>)]) -> Result<()> {
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

/// The file name traceconv gives a heapprofd dump: `heap_dump.N.PID.HEAP.pb`.
pub fn heap_dump_name(n: usize, profile: &Profile, ext: &str) -> String {
    heap_dump_name_of(n, &profile.header.meta, ext)
}

/// [`heap_dump_name`] of a dump's meta data.
pub fn heap_dump_name_of(n: usize, meta: &ProfileMeta, ext: &str) -> String {
    format!("heap_dump.{n}.{}.{}.{ext}", meta.pid.unwrap_or(0), meta.heap)
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

/// How one heap dump of an HPROF file is named in messages and listings:
/// `heap dump 2 at byte 281734, 9.649 s after the header's time (1 record, 245801 bytes)`.
pub fn describe_hprof_dump(d: &crate::decode::hprof::HprofDumpInfo) -> String {
    format!(
        "heap dump {} at byte {}, {:.3} s after the header's time ({} record{}, {} bytes)",
        d.index + 1,
        d.offset,
        f64::from(d.time_us) / 1e6,
        d.records,
        if d.records == 1 { "" } else { "s" },
        d.bytes
    )
}

/// The usage error when several heap graph dumps match and one output file was asked for:
/// it lists them and names the options (`choose`) that pick one.
pub(crate) fn several_heap_graphs(matched: &[String], by: &'static [Selector]) -> Error {
    choose_one(format!("{} heap graph dumps match", matched.len()), matched, by, true)
}

/// The error for several outputs where one was asked: `what` says how many matched, `matched`
/// names each; the settings `by` choose one, and (when `or_directory`) a directory as the
/// destination writes them all ([`Hint::ChooseOne`]).
pub(crate) fn choose_one(what: String, matched: &[String], by: &'static [Selector], or_directory: bool) -> Error {
    let list: Vec<String> = matched.iter().map(|m| format!("  {m}")).collect();
    Error::new(ErrorKind::Usage, what).with_hint(Hint::ChooseOne { by, or_directory, matched: list.join("\n") })
}

/// The error for a trace none of whose dumps the settings `by` select ([`Hint::NoMatch`]);
/// `what` names the dumps ("dump", "heap graph dump").
pub(crate) fn no_match(input: &Path, what: &str, by: &'static [Selector]) -> Error {
    Error::new(ErrorKind::NoData, format!("{}: no {what} matches", input.display())).with_hint(Hint::NoMatch { by })
}

/// The error for a trace where no heap graph dump was selected.
pub(crate) fn no_heap_graph_match(input: &Path, report: &TraceReport) -> Error {
    let why = match &report.damage {
        Some(d) if report.heap_graphs.is_empty() => format!("no Java heap graph could be read: {d}"),
        None if report.heap_graphs.is_empty() => "the trace holds no Java heap graph".to_owned(),
        _ => return no_match(input, "heap graph dump", &[Selector::Pid, Selector::Dump]),
    };
    Error::new(ErrorKind::NoData, format!("{}: {why}", input.display()))
}

pub(crate) fn no_heapprofd(name: &str) -> Error {
    Error::new(ErrorKind::NoData, format!("{name}: no heapprofd profile found in the trace"))
}

/// Writes `bytes` to `path` atomically (see [`crate::output::AtomicFile`]), never over one of
/// `inputs`.
pub fn write_file(path: &Path, bytes: &[u8], inputs: &[PathBuf]) -> Result<()> {
    write_atomic(path, bytes, inputs)
}

/// Makes directory `dir` (and its parents) if needed.
pub fn make_dir(dir: &Path) -> Result<()> {
    ensure_dir(dir)
}
