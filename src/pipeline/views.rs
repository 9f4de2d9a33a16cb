//! Views across the dumps of a continuous-dump heapprofd trace (`convert --view peak|delta|
//! leaks`).
//!
//! The trace is decoded once; the dumps of each (pid, heap) arrive in order and only what a
//! view needs is kept (peak: the best dump so far; delta: the previous dump, or the two ends
//! of the chosen pair; leaks: the last K dumps), so memory stays bounded however many dumps
//! the trace holds. The analyses are in [`crate::analysis::dumps`]; the differential outputs
//! of `delta` are `heapconv diff`'s encoders ([`crate::encode::diff`]).
//!
//! Every view works on one sample value, [`ViewOptions::value`] (unreleased size unless
//! asked otherwise): the peak is the dump where its total is highest; leak suspects are the
//! stacks where it grew at each of the last K dumps. A heap without unreleased values (the
//! ART heap reports no frees) uses its totals instead, and says so.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::batch::{BatchInput, Done, file_for};
use super::load::{open_input, symbolize_hook};
use super::select::{ConvertCommon, Destination, DumpSelect, stem};
use crate::analysis::dumps::{delta_profile, keep_stacks, leak_suspects, view_value_index};
use crate::analysis::filter::{filter_profile, filter_stacks};
use crate::decode::ddm_alloc_records::DdmOptions;
use crate::decode::perfetto::decode_heapprofd_with;
use crate::encode::diff::{DiffOptions, diff_report};
use crate::encode::labels::{human_bytes, stack_labels};
use crate::encode::summary::{SummaryOptions, convert_json};
use crate::encode::{DiffSides, EncodeOptions, NetProfile, Shown, encode, encode_diff};
use crate::error::{Error, ErrorKind, Hint, Result};
use crate::model::{Profile, Tables, TraceReport};
use crate::output::{check_not_input, ensure_dir, write_atomic};
use crate::symbolize::{Attribution, SymbolizeReport, Symbolizer};
use serde::Serialize;

/// A view across the dumps of each (pid, heap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpView {
    /// The dump with the highest total of the view's value, with its attribution.
    Peak,
    /// Per stack, a newer dump minus an older one. Without bounds: every pair of consecutive
    /// dumps (pairs where nothing changed get no output). With bounds, one pair per (pid,
    /// heap): the last dump at or before `from` (default: the first dump) and the last dump at
    /// or before `until` (default: the last dump), in trace-clock nanoseconds.
    Delta {
        /// The older dump: the last at or before this time.
        from: Option<i64>,
        /// The newer dump: the last at or before this time.
        until: Option<i64>,
    },
    /// The stacks whose value grew at each of the last `dumps` dumps, with their values at the
    /// last dump.
    Leaks {
        /// How many dumps (at least 2).
        dumps: usize,
    },
}

impl DumpView {
    /// The view's name on the command line and in file names.
    pub fn name(&self) -> &'static str {
        match self {
            DumpView::Peak => "peak",
            DumpView::Delta { .. } => "delta",
            DumpView::Leaks { .. } => "leaks",
        }
    }
}

/// A dump named by a view.
#[derive(Debug, Clone, Serialize)]
pub struct DumpRef {
    /// Dump number within its (pid, heap), from 1.
    pub dump: usize,
    /// Trace-clock time, ns.
    pub timestamp: Option<i64>,
    /// Whether `timestamp` went through a clock snapshot.
    pub timestamp_converted: bool,
    /// The total of the view's value at this dump.
    pub total: i64,
}

impl DumpRef {
    fn describe(&self) -> String {
        match self.timestamp {
            Some(t) => format!("dump {} at {t} ns", self.dump),
            None => format!("dump {}", self.dump),
        }
    }
}

/// Options of `convert --view peak|delta|leaks`: exactly what every conversion shares (which
/// processes and heaps, the value the view ranks and compares, how outputs are written).
pub type ViewOptions = ConvertCommon;

/// What a view run made.
#[derive(Debug)]
pub struct ViewRun {
    /// (destination path or `None` for standard output, bytes), in order. Files written to a
    /// directory were written as they were made; their bytes are not kept here (empty).
    pub outputs: Vec<(Option<PathBuf>, Vec<u8>)>,
    /// What the trace holds.
    pub report: TraceReport,
    /// The symbolization report, when symbolization was asked for.
    pub symbols: Option<SymbolizeReport>,
    /// One line per output or per (pid, heap) left out, for people: which dumps, what total.
    pub notes: Vec<String>,
}

/// The dumps of one (pid, heap) as they arrive, and what the view keeps of them.
struct Series {
    pid: u64,
    process_name: Option<String>,
    heap: String,
    /// The sample type the view uses, and whether it is a fallback (no unreleased values).
    value_index: usize,
    value_name: String,
    value_unit: String,
    fallback: bool,
    dumps: Vec<DumpRef>,
    /// Peak: position in `dumps` and the dump.
    best: Option<(usize, Profile)>,
    /// Delta between consecutive dumps: the previous dump.
    prev: Option<Profile>,
    /// Delta between two chosen dumps: the two ends.
    older: Option<(usize, Profile)>,
    newer: Option<(usize, Profile)>,
    /// Leaks: the last dumps, with their positions.
    window: VecDeque<(usize, Profile)>,
}

impl Series {
    fn who(&self) -> String {
        match &self.process_name {
            Some(n) => format!("{n} (pid {}), heap {}", self.pid, self.heap),
            None => format!("pid {}, heap {}", self.pid, self.heap),
        }
    }

    fn amount(&self, v: i64) -> String {
        if self.value_unit == "bytes" {
            format!("{} ({v} bytes)", human_bytes(v))
        } else {
            format!("{v} {}", self.value_unit)
        }
    }

    fn signed(&self, v: i64) -> String {
        let sign = if v > 0 { "+" } else { "" };
        if self.value_unit == "bytes" {
            format!("{sign}{} ({sign}{v} bytes)", human_bytes(v))
        } else {
            format!("{sign}{v} {}", self.value_unit)
        }
    }

    fn fallback_note(&self) -> &'static str {
        if self.fallback { " (this heap reports no frees: its totals are used)" } else { "" }
    }

    fn json_head(&self) -> serde_json::Value {
        serde_json::json!({
            "pid": self.pid,
            "process_name": self.process_name,
            "heap": self.heap,
            "sample_type": self.value_name,
            "unit": self.value_unit,
            "fallback_to_total": self.fallback,
        })
    }
}

/// Replaces a kept profile's tables with an empty set, so that the decoder's tables are not
/// shared (and copied when they grow); they are given back with [`restore`].
fn strip(mut p: Profile, empty: &Arc<Tables>) -> Profile {
    p.tables = Arc::clone(empty);
    p
}

fn restore(p: &mut Profile, tables: &Arc<Tables>) {
    p.tables = Arc::clone(tables);
}

/// Where a view's outputs go as they are made. In a directory, each is written to a staged
/// file at once (so memory does not hold them all) and renamed into place by [`finish`]; a
/// staged file not renamed is removed when this is dropped. For one file or standard output,
/// the first output is held and the names of any others are only collected (they are not even
/// encoded): several outputs are then a usage error that lists them.
///
/// [`finish`]: Outputs::finish
struct Outputs<'a> {
    dest: &'a Destination,
    inputs: [PathBuf; 1],
    staged: Vec<(PathBuf, String)>,
    held: Option<(String, Vec<u8>)>,
    names: Vec<String>,
    dir_ready: bool,
}

impl<'a> Outputs<'a> {
    fn new(dest: &'a Destination, input: &Path) -> Self {
        Outputs {
            dest,
            inputs: [input.to_path_buf()],
            staged: Vec::new(),
            held: None,
            names: Vec::new(),
            dir_ready: false,
        }
    }

    /// Whether the next output's bytes are wanted (else only its name is).
    fn keeps_next(&self) -> bool {
        matches!(self.dest, Destination::Dir(_)) || self.names.is_empty()
    }

    /// Records an output whose bytes were not made because they would not be kept.
    fn name_only(&mut self, name: String) {
        self.names.push(name);
    }

    fn push(&mut self, name: String, bytes: Vec<u8>) -> Result<()> {
        use std::io::Write;
        if let Destination::Dir(d) = self.dest {
            if !self.dir_ready {
                ensure_dir(d)?;
                self.dir_ready = true;
            }
            check_not_input(&d.join(&name), &self.inputs)?;
            let (tmp, mut file) = crate::output::stage_file(d, self.staged.len())?;
            self.staged.push((tmp.clone(), name.clone()));
            let io = |e| Error::io(format!("writing {}", tmp.display()), e);
            file.write_all(&bytes).map_err(io)?;
            file.sync_all().map_err(io)?;
        } else if self.names.is_empty() {
            self.held = Some((name.clone(), bytes));
        }
        self.names.push(name);
        Ok(())
    }

    /// Puts the outputs in place: (path, or `None` for standard output, and the bytes; empty
    /// for files in a directory).
    fn finish(mut self, view: DumpView) -> Result<Vec<(Option<PathBuf>, Vec<u8>)>> {
        if self.names.len() > 1 && !matches!(self.dest, Destination::Dir(_)) {
            let matched = self.names.iter().map(|m| format!("  {m}")).collect::<Vec<_>>().join("\n");
            let by_times = matches!(view, DumpView::Delta { from: None, until: None });
            let (name, outputs) = (view.name(), self.names.len());
            let and_times = if by_times { " and a pair of dump times" } else { "" };
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "the {name} view makes {outputs} outputs; select one process and heap{and_times}, or write them \
                     into a directory:\n{matched}"
                ),
            )
            .with_hint(Hint::ViewOutputs { view: name, outputs, by_times, matched }));
        }
        let mut out = Vec::new();
        match self.dest {
            Destination::Dir(d) => {
                let staged = std::mem::take(&mut self.staged);
                let mut rest = staged.into_iter();
                while let Some((tmp, name)) = rest.next() {
                    let path = d.join(&name);
                    if let Err(e) = crate::output::commit_staged(&tmp, &path, &self.inputs) {
                        crate::output::discard_staged(rest.map(|x| x.0));
                        return Err(e);
                    }
                    out.push((Some(path), Vec::new()));
                }
            }
            Destination::File(f) => {
                if let Some((_, bytes)) = self.held.take() {
                    write_atomic(f, &bytes, &self.inputs)?;
                    out.push((Some(f.clone()), bytes));
                }
            }
            Destination::Stdout => {
                if let Some((_, bytes)) = self.held.take() {
                    check_not_input(Path::new("-"), &self.inputs)?;
                    out.push((None, bytes));
                }
            }
        }
        Ok(out)
    }
}

impl Drop for Outputs<'_> {
    fn drop(&mut self) {
        crate::output::discard_staged(self.staged.drain(..).map(|x| x.0));
    }
}

fn file_key(s: &Series) -> String {
    format!("{}.{}", s.pid, s.heap)
}

/// Encodes one profile of a view (peak, leaks) in `format`.
fn encode_view_profile(p: &Profile, index: usize, title: String, opts: &ViewOptions) -> Result<Vec<u8>> {
    // (JSON documents are made per run, not per profile.)
    let filtered;
    let p = if opts.filter.is_empty() {
        p
    } else {
        filtered = filter_profile(p.clone(), &opts.filter);
        &filtered
    };
    encode(
        p,
        opts.format,
        &EncodeOptions {
            shown: Shown::Index(index),
            annotations: opts.annotations,
            title: Some(title),
            prune_below: opts.prune_below,
        },
    )
}

/// What one delta pair made.
struct PairOut {
    /// The output (`None` for JSON, which is one document per run, or when not encoded).
    bytes: Option<Vec<u8>>,
    /// The pair's entry of the JSON document (JSON only).
    json: Option<serde_json::Value>,
    /// The change of the view's total.
    change: i64,
    /// Whether any stack changed.
    changed: bool,
}

/// The outputs of one delta pair: differential outputs as `heapconv diff` makes them, except
/// pprof, which holds one sample per changed stack with NEW minus OLD for every sample type.
/// Nothing is encoded unless `keep`, nor when nothing changed and `skip_unchanged`.
fn delta_pair(
    s: &Series,
    old: &Profile,
    new: &Profile,
    (a, b): (&DumpRef, &DumpRef),
    opts: &ViewOptions,
    keep: bool,
    skip_unchanged: bool,
) -> Result<PairOut> {
    let net = filter_profile(delta_profile(old, new), &opts.filter);
    let (old, new) = if opts.filter.is_empty() {
        (Cow::Borrowed(old), Cow::Borrowed(new))
    } else {
        (Cow::Owned(filter_profile(old.clone(), &opts.filter)), Cow::Owned(filter_profile(new.clone(), &opts.filter)))
    };
    let (old, new) = (old.as_ref(), new.as_ref());
    let changed = net.sample_count() > 0;
    let change = net.total(s.value_index);
    let dopts = DiffOptions {
        value_index: s.value_index,
        normalize: false,
        base_name: format!("{}: {}", s.who(), a.describe()),
        new_name: b.describe(),
        prune_below: opts.prune_below,
        ..DiffOptions::default()
    };
    // JSON is one document per run: the pair's entry is made below.
    let out = if !keep || (skip_unchanged && !changed) || opts.format.is_report() {
        None
    } else {
        let net = std::cell::Cell::new(Some(net));
        let net_pprof = || {
            let mut p = net.take().expect("encoded once");
            p.header.default_sample_type = s.value_index;
            p.header.meta.title = Some(format!("delta of {}: {} -> {}", s.who(), a.describe(), b.describe()));
            p.header.meta.comments.push(format!(
                "view delta: values are dump {} minus dump {} per stack (negative: less than before); {} {}",
                b.dump,
                a.dump,
                s.value_name,
                s.signed(change)
            ));
            NetProfile::Tree(p)
        };
        let sides = DiffSides {
            trees: &|| [Cow::Borrowed(old), Cow::Borrowed(new)],
            net: &net_pprof,
            annotations: opts.annotations,
            json_extra: Vec::new(),
        };
        Some(encode_diff(opts.format, &sides, &dopts)?)
    };
    let json = opts.format.is_report().then(|| {
        let mut v = s.json_head();
        v["from"] = serde_json::to_value(a).expect("serializes");
        v["to"] = serde_json::to_value(b).expect("serializes");
        v["changed"] = serde_json::Value::Bool(changed);
        v["report"] = serde_json::to_value(diff_report(old, new, &dopts)).expect("a report serializes");
        v
    });
    Ok(PairOut { bytes: out, json, change, changed })
}

/// Runs `convert --view peak|delta|leaks` on one heapprofd trace: decodes it, computes the
/// view for each (pid, heap) that `opts` selects (`pids`, `heap`; `dump` must be the
/// default), encodes in `opts.format` and writes to `dest` (a directory when there are
/// several outputs; JSON is always one document).
pub fn run_view(input: &Path, dest: &Destination, opts: &ViewOptions, view: DumpView) -> Result<ViewRun> {
    check_view(opts, view)?;
    write_view_of_trace(input, dest, opts, view)
}

/// Checks the options of a view before any input is read: usage errors (`--dump` with a view,
/// `--leak-dumps` below 2, `--from` after `--until`).
pub fn check_view(opts: &ViewOptions, view: DumpView) -> Result<()> {
    let usage = |m: String, hint: Hint| Error::new(ErrorKind::Usage, m).with_hint(hint);
    if opts.select.dump != DumpSelect::Last {
        return Err(usage(
            format!("the {} view chooses its dumps itself: select no dump (a delta's by its times)", view.name()),
            Hint::ViewChoosesItsDumps { view: view.name() },
        ));
    }
    match view {
        DumpView::Leaks { dumps } if dumps < 2 => {
            return Err(usage(
                format!("the leaks view compares at least 2 dumps (growth is seen between two dumps), not {dumps}"),
                Hint::LeakDumpsBelowTwo { dumps },
            ));
        }
        DumpView::Delta { from: Some(f), until: Some(u) } if f > u => {
            return Err(usage(
                format!("the delta's older end {f} is after its newer end {u}"),
                Hint::FromAfterUntil { from: f, until: u },
            ));
        }
        _ => {}
    }
    Ok(())
}

/// Runs a view (see [`DumpView`]) over one trace, writing to `dest`: a file, standard output,
/// or a directory (one file per output, named as docs/reference.md says). One pass over the trace
/// keeps what the view needs of each dump ([`keep_dump`]); then the view writes its outputs.
fn write_view_of_trace(input: &Path, dest: &Destination, opts: &ViewOptions, view: DumpView) -> Result<ViewRun> {
    let opened = open_input(input, opts.decode.max_gzip_bytes, DdmOptions::default().max_bytes, false)?;
    let (mut inp, recognised) = opened.into_heapprofd_trace(input, &format!("--view {}", view.name()))?;
    let kind_value = opts.value;
    let mut decode = opts.decode.clone();
    decode.pids = opts.select.pids.clone();
    decode.include_unchanged = true;
    let empty = Arc::new(Tables::default());
    let mut series: BTreeMap<(u64, String), Series> = BTreeMap::new();
    let mut w = ViewWriter {
        outs: Outputs::new(dest, input),
        notes: Vec::new(),
        json_entries: Vec::new(),
        json_profiles: Vec::new(),
    };
    let mut symbolizer = opts.symbols.options().map(Symbolizer::new);
    let symbolizing = symbolizer.is_some();
    let deob = super::load::prepare_trace(&mut inp, &decode, &opts.symbols.proguard, &mut symbolizer)?;
    let mut session = deob.session();
    let mut attributions: BTreeMap<(u64, String), Attribution> = BTreeMap::new();
    let (report, tables) = decode_heapprofd_with(
        &mut inp,
        &decode,
        &mut |t, r| symbolize_hook(&mut symbolizer, &mut session, t, r),
        &mut |p: Profile| {
            if opts.select.heap.as_ref().is_some_and(|h| *h != p.header.meta.heap) {
                return Ok(());
            }
            let key = (p.header.meta.pid.unwrap_or(0), p.header.meta.heap.clone());
            if symbolizing {
                attributions.insert(key.clone(), crate::symbolize::attribute(&p));
            }
            let s = series.entry(key).or_insert_with(|| {
                let (value_index, fallback) = view_value_index(&p, kind_value);
                let ty = &p.header.sample_types[value_index];
                Series {
                    pid: p.header.meta.pid.unwrap_or(0),
                    process_name: p.header.meta.process_name.clone(),
                    heap: p.header.meta.heap.clone(),
                    value_index,
                    value_name: ty.name.clone(),
                    value_unit: ty.unit.clone(),
                    fallback,
                    dumps: Vec::new(),
                    best: None,
                    prev: None,
                    older: None,
                    newer: None,
                    window: VecDeque::new(),
                }
            });
            let total = p.total(s.value_index);
            let pos = s.dumps.len();
            s.dumps.push(DumpRef {
                dump: p.header.meta.dump_index + 1,
                timestamp: p.header.meta.timestamp,
                timestamp_converted: p.header.meta.timestamp_converted,
                total,
            });
            keep_dump(view, s, pos, p, &empty, opts, &mut w)
        },
    )?;
    if report.dumps.is_empty() && report.damage.is_none() {
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{}: no heapprofd profile found in the trace", input.display()),
        ));
    }
    if series.is_empty() {
        if !recognised {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{}: not a Perfetto trace{}",
                    input.display(),
                    report.damage.as_deref().map(|d| format!(" ({d})")).unwrap_or_default()
                ),
            ));
        }
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{}: no dump matches the selection (see `heapconv inspect`)", input.display()),
        ));
    }

    match view {
        DumpView::Peak => write_peaks(&mut series, &tables, opts, &mut w)?,
        DumpView::Delta { from: None, until: None } => check_consecutive_deltas(&series, input, &mut w)?,
        DumpView::Delta { from, until } => {
            write_delta_between(&mut series, &tables, (from, until), input, opts, &mut w)?
        }
        DumpView::Leaks { dumps } => write_leak_suspects(&mut series, &tables, dumps, input, opts, &mut w)?,
    }
    if opts.format.is_report() {
        write_view_report(view, &report, input, opts, &mut w)?;
    }
    let symbols = symbolizer.map(|s| {
        let mut r = s.report(&tables);
        for a in attributions.values() {
            r.attribute(a);
        }
        r
    });
    let outputs = w.outs.finish(view)?;
    Ok(ViewRun { outputs, report, symbols, notes: w.notes })
}

/// What a view writes, gathered as it runs: its outputs and notes, and for a JSON report its
/// entries and profiles.
struct ViewWriter<'a> {
    outs: Outputs<'a>,
    notes: Vec<String>,
    json_entries: Vec<serde_json::Value>,
    json_profiles: Vec<Profile>,
}

/// Keeps what `view` needs of dump `pos` of a series (`p`, its tables stripped to `empty`): the
/// peak so far, the dumps a delta compares (writing the delta of two consecutive dumps at
/// once), or the last dumps a leak search looks at.
fn keep_dump(
    view: DumpView,
    s: &mut Series,
    pos: usize,
    p: Profile,
    empty: &Arc<Tables>,
    opts: &ViewOptions,
    w: &mut ViewWriter<'_>,
) -> Result<()> {
    let ext = opts.format.extension();
    let total = s.dumps[pos].total;
    match view {
        DumpView::Peak => {
            if s.best.as_ref().is_none_or(|(b, _)| total > s.dumps[*b].total) {
                s.best = Some((pos, strip(p, empty)));
            }
        }
        DumpView::Delta { from: None, until: None } => {
            if let Some(mut old) = s.prev.take() {
                restore(&mut old, &p.tables);
                let (a, b) = (&s.dumps[pos - 1], &s.dumps[pos]);
                let PairOut { bytes: out, json, change, changed } =
                    delta_pair(s, &old, &p, (a, b), opts, w.outs.keeps_next(), true)?;
                let what = format!("delta: {}: {} -> {}", s.who(), a.describe(), b.describe());
                let name = format!("heap_delta.{}.{}-{}.{ext}", file_key(s), a.dump, b.dump);
                if let Some(j) = json {
                    w.json_entries.push(j);
                }
                if !opts.format.is_report() && !changed {
                    w.notes.push(format!("{what}: nothing changed; no output"));
                } else {
                    w.notes.push(format!("{what}: {} {}", s.value_name, s.signed(change)));
                    match out {
                        Some(bytes) => w.outs.push(name, bytes)?,
                        None if !opts.format.is_report() => w.outs.name_only(name),
                        None => {}
                    }
                }
            }
            s.prev = Some(strip(p, empty));
        }
        DumpView::Delta { from, until } => {
            let at_or_before = |bound: Option<i64>| match bound {
                Some(b) => p.header.meta.timestamp.is_some_and(|t| t <= b),
                None => true,
            };
            let take_older = at_or_before(from) && (from.is_some() || s.older.is_none());
            let take_newer = at_or_before(until);
            if take_older && take_newer {
                s.older = Some((pos, strip(p.clone(), empty)));
                s.newer = Some((pos, strip(p, empty)));
            } else if take_older {
                s.older = Some((pos, strip(p, empty)));
            } else if take_newer {
                s.newer = Some((pos, strip(p, empty)));
            }
        }
        DumpView::Leaks { dumps } => {
            s.window.push_back((pos, strip(p, empty)));
            while s.window.len() > dumps {
                s.window.pop_front();
            }
        }
    }
    Ok(())
}

/// `--view peak`: each series' largest dump, with a comment saying which and why.
fn write_peaks(
    series: &mut BTreeMap<(u64, String), Series>,
    tables: &Arc<Tables>,
    opts: &ViewOptions,
    w: &mut ViewWriter<'_>,
) -> Result<()> {
    let ext = opts.format.extension();
    for s in series.values_mut() {
        let Some((pos, mut p)) = s.best.take() else { continue };
        restore(&mut p, tables);
        let peak = &s.dumps[pos];
        let last = &s.dumps[s.dumps.len() - 1];
        let of = format!(
            "dump {} of {}{}",
            peak.dump,
            s.dumps.len(),
            peak.timestamp.map(|t| format!(" at {t} ns")).unwrap_or_default()
        );
        let attribution = format!(
            "view peak: {of} has the highest {}{}: {}; last {}: {}",
            s.value_name,
            s.fallback_note(),
            s.amount(peak.total),
            last.describe(),
            s.amount(last.total)
        );
        w.notes.push(format!("peak: {}: {of}: {} {}", s.who(), s.value_name, s.amount(peak.total)));
        p.header.meta.comments.push(attribution);
        if opts.format.is_report() {
            let mut v = s.json_head();
            v["dumps"] = serde_json::json!(s.dumps.len());
            v["peak"] = serde_json::to_value(peak).expect("serializes");
            v["last"] = serde_json::to_value(last).expect("serializes");
            w.json_entries.push(v);
            w.json_profiles.push(filter_profile(p, &opts.filter));
            continue;
        }
        let title = format!(
            "Peak {}: {}, dump {} of {}{}",
            s.value_name,
            s.who(),
            peak.dump,
            s.dumps.len(),
            peak.timestamp.map(|t| format!(" at {t} ns")).unwrap_or_default()
        );
        let name = format!("heap_peak.{}.{ext}", file_key(s));
        if w.outs.keeps_next() {
            w.outs.push(name, encode_view_profile(&p, s.value_index, title, opts)?)?;
        } else {
            w.outs.name_only(name);
        }
    }
    Ok(())
}

/// `--view delta` of consecutive dumps (written as the trace was read): an error when no series
/// has two dumps, a note for each that has one.
fn check_consecutive_deltas(
    series: &BTreeMap<(u64, String), Series>,
    input: &Path,
    w: &mut ViewWriter<'_>,
) -> Result<()> {
    if series.values().all(|s| s.dumps.len() < 2) {
        return Err(Error::new(
            ErrorKind::NoData,
            format!(
                "{}: --view delta needs two dumps of a process and heap; every (pid, heap) selected has one (see `heapconv inspect`)",
                input.display()
            ),
        ));
    }
    for s in series.values().filter(|s| s.dumps.len() < 2) {
        w.notes.push(format!("delta: {}: only one dump; left out", s.who()));
    }
    Ok(())
}

/// `--view delta --from/--until`: each series' delta between the last dumps at or before the
/// two times; an error when no series has such a pair.
fn write_delta_between(
    series: &mut BTreeMap<(u64, String), Series>,
    tables: &Arc<Tables>,
    (from, until): (Option<i64>, Option<i64>),
    input: &Path,
    opts: &ViewOptions,
    w: &mut ViewWriter<'_>,
) -> Result<()> {
    let ext = opts.format.extension();
    let mut pairs = 0;
    for s in series.values_mut() {
        let missing_older = s.older.is_none();
        let (Some((ia, mut old)), Some((ib, mut new))) = (s.older.take(), s.newer.take()) else {
            let times: Vec<String> =
                s.dumps.iter().map(|d| d.timestamp.map_or("?".to_owned(), |t| t.to_string())).collect();
            let bound = if missing_older { from } else { until };
            w.notes.push(format!(
                "delta: {}: no dump at or before {} ns; left out (its dumps are at {} ns)",
                s.who(),
                bound.map_or("?".to_owned(), |b| b.to_string()),
                times.join(", ")
            ));
            continue;
        };
        if ia >= ib {
            w.notes.push(format!(
                "delta: {}: --from and --until both select {}; left out",
                s.who(),
                s.dumps[ib].describe()
            ));
            continue;
        }
        restore(&mut old, tables);
        restore(&mut new, tables);
        let (a, b) = (&s.dumps[ia], &s.dumps[ib]);
        let PairOut { bytes: out, json, change, .. } =
            delta_pair(s, &old, &new, (a, b), opts, w.outs.keeps_next(), false)?;
        pairs += 1;
        w.notes.push(format!(
            "delta: {}: {} -> {}: {} {}",
            s.who(),
            a.describe(),
            b.describe(),
            s.value_name,
            s.signed(change)
        ));
        if let Some(j) = json {
            w.json_entries.push(j);
        }
        let name = format!("heap_delta.{}.{}-{}.{ext}", file_key(s), a.dump, b.dump);
        match out {
            Some(bytes) => w.outs.push(name, bytes)?,
            None if !opts.format.is_report() => w.outs.name_only(name),
            None => {}
        }
    }
    if pairs == 0 {
        return Err(Error::new(
            ErrorKind::NoData,
            format!(
                "{}: no (pid, heap) has two dumps in the --from/--until range:\n  {}",
                input.display(),
                w.notes.join("\n  ")
            ),
        ));
    }
    Ok(())
}

/// `--view leaks`: the stacks of each series that grew at each of its last `k` dumps; an error
/// when no series has that many dumps.
fn write_leak_suspects(
    series: &mut BTreeMap<(u64, String), Series>,
    tables: &Arc<Tables>,
    k: usize,
    input: &Path,
    opts: &ViewOptions,
    w: &mut ViewWriter<'_>,
) -> Result<()> {
    let ext = opts.format.extension();
    let mut compared = 0;
    for s in series.values_mut() {
        if s.window.len() < k {
            w.notes.push(format!("leaks: {}: only {} dump(s), {k} needed; left out", s.who(), s.dumps.len()));
            continue;
        }
        compared += 1;
        for (_, p) in s.window.iter_mut() {
            restore(p, tables);
        }
        let refs: Vec<&Profile> = s.window.iter().map(|(_, p)| p).collect();
        let suspects = leak_suspects(&refs, s.value_index);
        let (last_pos, last) = s.window.back().expect("k >= 2 dumps");
        let first_pos = s.window.front().expect("k >= 2 dumps").0;
        let stacks: Vec<_> = suspects.iter().map(|x| x.stack).collect();
        let mut p = keep_stacks(last, &stacks);
        let window_refs: Vec<&DumpRef> = (first_pos..=*last_pos).map(|i| &s.dumps[i]).collect();
        let numbers: Vec<String> = window_refs.iter().map(|d| d.dump.to_string()).collect();
        let last_ref = &s.dumps[*last_pos];
        let total = p.total(s.value_index);
        let attribution = format!(
            "view leaks: {} stack(s) whose {}{} grew at each of the last {k} dumps ({}); values are those of {}: {}",
            suspects.len(),
            s.value_name,
            s.fallback_note(),
            numbers.join(", "),
            last_ref.describe(),
            s.amount(total)
        );
        w.notes.push(format!(
            "leaks: {}: {} stack(s) grew at each of dumps {}: {} at {}",
            s.who(),
            suspects.len(),
            numbers.join(", "),
            s.amount(total),
            last_ref.describe()
        ));
        p.header.meta.comments.push(attribution);
        if opts.format.is_report() {
            // The suspects are chosen before filtering; the filters decide which of
            // them are listed, with what frames, and the total.
            let (ftables, fstacks) = filter_stacks(&p.tables, &stacks, &opts.filter);
            let p = filter_profile(p, &opts.filter);
            let total = p.total(s.value_index);
            let mut nodes = Vec::new();
            let list: Vec<serde_json::Value> = suspects
                .iter()
                .zip(fstacks)
                .filter_map(|(x, stack)| Some((x, stack?)))
                .map(|(x, stack)| {
                    let mut frames = stack_labels(&ftables, stack, opts.annotations, &mut nodes);
                    frames.reverse();
                    serde_json::json!({
                        "frames": frames,
                        "values": x.values,
                        "growth": x.values[x.values.len() - 1] - x.values[0],
                    })
                })
                .collect();
            let mut v = s.json_head();
            v["dumps"] = serde_json::to_value(&window_refs).expect("serializes");
            v["total"] = serde_json::json!(total);
            v["suspects"] = serde_json::Value::Array(list);
            w.json_entries.push(v);
            w.json_profiles.push(p);
            continue;
        }
        let title = format!(
            "Leak suspects: {} grew at each of dumps {} — {}, values at {}",
            s.value_name,
            numbers.join(", "),
            s.who(),
            last_ref.describe()
        );
        let name = format!("heap_leaks.{}.{ext}", file_key(s));
        if w.outs.keeps_next() {
            w.outs.push(name, encode_view_profile(&p, s.value_index, title, opts)?)?;
        } else {
            w.outs.name_only(name);
        }
    }
    if compared == 0 {
        return Err(Error::new(
            ErrorKind::NoData,
            format!(
                "{}: --view leaks compares the last {k} dumps of a process and heap; none selected has that many (--leak-dumps sets K):\n  {}",
                input.display(),
                w.notes.join("\n  ")
            ),
        ));
    }
    Ok(())
}

/// The one JSON document of a view (`--to json`): the trace's summary with the view's series.
fn write_view_report(
    view: DumpView,
    report: &TraceReport,
    input: &Path,
    opts: &ViewOptions,
    w: &mut ViewWriter<'_>,
) -> Result<()> {
    let summary = SummaryOptions { view: opts.value, annotations: opts.annotations, ..Default::default() };
    let doc = convert_json(report, &w.json_profiles, &summary);
    let mut v: serde_json::Value = serde_json::from_str(&doc).expect("our own JSON");
    v["view"] = serde_json::json!({
        "kind": view.name(),
        "value": opts.value,
        "leak_dumps": match view { DumpView::Leaks { dumps } => Some(dumps), _ => None },
        "from": match view { DumpView::Delta { from, .. } => from, _ => None },
        "until": match view { DumpView::Delta { until, .. } => until, _ => None },
        "series": std::mem::take(&mut w.json_entries),
    });
    if matches!(view, DumpView::Delta { .. }) {
        // The deltas are the document; no single profile is.
        if let Some(o) = v.as_object_mut() {
            o.remove("profiles");
        }
    }
    let mut bytes = serde_json::to_vec_pretty(&v).expect("serializes");
    bytes.push(b'\n');
    w.outs.push(format!("{}.{}.json", stem(input), view.name()), bytes)?;
    Ok(())
}

/// `convert --view peak|delta|leaks` of one trace: the view's files in `OUT/<key>/`, named as
/// `convert --view … -o DIR/` names them (`heap_peak.PID.HEAP.EXT`, …); with `--to json`, the
/// one document `OUT/<key>.json`. The view's notes (which dumps, what total; series left out)
/// are the input's `details.notes`.
pub fn view_one(input: &BatchInput, out_dir: &Path, opts: &ViewOptions, view: DumpView) -> Result<Done> {
    let dest = if opts.format.is_report() {
        Destination::File(file_for(out_dir, &input.key, "json")?)
    } else {
        Destination::Dir(out_dir.join(&input.key))
    };
    let run = run_view(&input.path, &dest, opts, view)?;
    let mut warnings = Vec::new();
    if run.outputs.is_empty() {
        warnings.push("nothing written: no process and heap has the dumps the view needs".to_owned());
    }
    Ok(Done {
        outputs: run.outputs.into_iter().filter_map(|o| o.0).collect(),
        report: Some(run.report),
        symbols: run.symbols,
        warnings,
        details: Some(serde_json::json!({ "view": view.name(), "notes": run.notes })),
        ..Done::default()
    })
}
