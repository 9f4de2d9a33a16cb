//! Machine- and human-readable summaries: the JSON document of `convert --to json` and the
//! text and JSON reports of `inspect`.

use std::collections::HashMap;

use serde::Serialize;

use super::labels::{human_bytes, stack_labels};
use crate::model::{DumpFlags, Profile, ProfileMeta, TraceReport, ValueKind};

/// Options of the summaries.
#[derive(Debug, Clone)]
pub struct SummaryOptions {
    /// How many stacks and functions the top lists hold. Default: 20.
    pub top: usize,
    /// The value the top lists rank by. Default: unreleased size.
    pub view: ValueKind,
    /// Append ART annotations to frame names. Default: false.
    pub annotations: bool,
    /// Rank by the sample type at this index rather than by `view` (a pprof input's chosen
    /// type). Default: `None`.
    pub value_index: Option<usize>,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions { top: 20, view: ValueKind::UnreleasedSize, annotations: false, value_index: None }
    }
}

/// Totals of one profile, per view.
#[derive(Debug, Clone, Serialize, Default, PartialEq, Eq)]
pub struct ViewTotals {
    /// Allocations made.
    pub total_count: Option<i64>,
    /// Bytes allocated.
    pub total_size: Option<i64>,
    /// Allocations not freed.
    pub unreleased_count: Option<i64>,
    /// Bytes not freed.
    pub unreleased_size: Option<i64>,
}

/// One stack in a top list.
#[derive(Debug, Clone, Serialize)]
pub struct TopStack {
    /// Value of the ranked view.
    pub value: i64,
    /// Frames, leaf first (the allocating function first).
    pub frames: Vec<String>,
}

/// One function in a top list.
#[derive(Debug, Clone, Serialize)]
pub struct TopFunction {
    /// Frame label.
    pub name: String,
    /// Value where the function is the leaf.
    pub flat: i64,
    /// Value of all stacks that contain the function.
    pub cumulative: i64,
}

/// The summary of one profile.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileSummary {
    /// Where it came from.
    #[serde(flatten)]
    pub meta: ProfileMeta,
    /// Data-loss flags, by name.
    pub data_loss: Vec<&'static str>,
    /// Sample types, in order.
    pub sample_types: Vec<String>,
    /// Number of distinct stacks.
    pub stacks: usize,
    /// Totals per view.
    pub totals: ViewTotals,
    /// The view the top lists rank by.
    pub ranked_by: String,
    /// Stacks with the largest values.
    pub top_stacks: Vec<TopStack>,
    /// Functions with the largest cumulative values.
    pub top_functions: Vec<TopFunction>,
}

/// Summarizes one profile.
pub fn summarize(profile: &Profile, opts: &SummaryOptions) -> ProfileSummary {
    let total = |k: ValueKind| profile.value_index(k).map(|i| profile.total(i));
    let totals = ViewTotals {
        total_count: total(ValueKind::TotalCount),
        total_size: total(ValueKind::TotalSize),
        unreleased_count: total(ValueKind::UnreleasedCount),
        unreleased_size: total(ValueKind::UnreleasedSize),
    };
    let index = opts
        .value_index
        .filter(|&i| i < profile.header.sample_types.len())
        .or_else(|| profile.value_index(opts.view))
        .or_else(|| profile.value_index(ValueKind::TotalSize))
        .unwrap_or(0);
    let ranked_by = profile.header.sample_types.get(index).map(|t| t.name.clone()).unwrap_or_default();
    let mut nodes = Vec::new();
    let mut stacks: Vec<(i64, Vec<String>)> = Vec::new();
    let mut flat: HashMap<String, i64> = HashMap::new();
    let mut cum: HashMap<String, i64> = HashMap::new();
    for (s, v) in profile.samples() {
        let v = v[index];
        if v == 0 {
            continue;
        }
        let labels = stack_labels(&profile.tables, s, opts.annotations, &mut nodes);
        if let Some(leaf) = labels.last() {
            let e = flat.entry(leaf.clone()).or_default();
            *e = e.saturating_add(v);
        }
        let mut seen: Vec<&String> = Vec::with_capacity(labels.len());
        for l in &labels {
            if !seen.contains(&l) {
                seen.push(l);
                let e = cum.entry(l.clone()).or_default();
                *e = e.saturating_add(v);
            }
        }
        stacks.push((v, labels));
    }
    stacks.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    stacks.truncate(opts.top);
    let mut funcs: Vec<TopFunction> = cum
        .into_iter()
        .map(|(name, c)| TopFunction { flat: flat.get(&name).copied().unwrap_or(0), cumulative: c, name })
        .collect();
    funcs.sort_by(|a, b| b.cumulative.cmp(&a.cumulative).then(b.flat.cmp(&a.flat)).then_with(|| a.name.cmp(&b.name)));
    funcs.truncate(opts.top);
    ProfileSummary {
        meta: profile.header.meta.clone(),
        data_loss: profile.header.meta.flags.data_loss(),
        sample_types: profile.header.sample_types.iter().map(|t| format!("{}/{}", t.name, t.unit)).collect(),
        stacks: profile.sample_count(),
        totals,
        ranked_by,
        top_stacks: stacks
            .into_iter()
            .map(|(value, mut frames)| {
                frames.reverse();
                TopStack { value, frames }
            })
            .collect(),
        top_functions: funcs,
    }
}

/// The JSON document `convert --to json` writes.
#[derive(Debug, Serialize)]
pub struct ConvertSummary<'a> {
    /// Input name.
    pub source: &'a str,
    /// Processes by pid.
    pub processes: &'a std::collections::BTreeMap<u64, String>,
    /// Problems and damage found while decoding.
    pub problems: &'a [crate::model::Problem],
    /// The error that stopped decoding early, if any.
    pub damage: Option<&'a str>,
    /// One summary per selected profile.
    pub profiles: Vec<ProfileSummary>,
}

/// Renders the `convert --to json` document.
pub fn convert_json(report: &TraceReport, profiles: &[Profile], opts: &SummaryOptions) -> String {
    let doc = ConvertSummary {
        source: &report.source,
        processes: &report.processes,
        problems: &report.problems,
        damage: report.damage.as_deref(),
        profiles: profiles.iter().map(|p| summarize(p, opts)).collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("summary serializes");
    s.push('\n');
    s
}

/// Renders the report of `inspect --json`.
pub fn inspect_json(report: &TraceReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("report serializes");
    s.push('\n');
    s
}

fn flag_text(f: &DumpFlags) -> String {
    let mut v: Vec<String> = f.data_loss().iter().map(|s| s.to_string()).collect();
    if f.from_startup {
        v.insert(0, "from_startup".to_owned());
    }
    if f.dump_at_max {
        v.insert(0, "dump_at_max".to_owned());
    }
    if v.is_empty() { "-".to_owned() } else { v.join(",") }
}

/// Renders the report of `inspect` for people.
pub fn inspect_text(report: &TraceReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "{}{}", report.source, if report.gzipped { " (gzip)" } else { "" });
    let _ = writeln!(
        s,
        "  {} bytes, {} packets ({} in compressed bundles: {}), {} clock snapshot(s)",
        report.bytes,
        report.packets,
        report.compressed_bundles,
        if report.compressed_bundles > 0 { "yes" } else { "no" },
        report.clock_snapshots
    );
    let kinds: Vec<String> = report.packet_kinds.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(s, "  payloads: {}", if kinds.is_empty() { "none".to_owned() } else { kinds.join(" ") });
    let _ = writeln!(s, "sequences:");
    for (id, q) in &report.sequences {
        let _ = writeln!(
            s,
            "  {id}: {} packets, {} profile packets, {} state clear(s), {} drop mark(s), {} missing profile packet(s), {} skipped, {} interned block(s) ignored",
            q.packets,
            q.profile_packets,
            q.state_clears,
            q.dropped_packet_marks,
            q.missing_profile_packets,
            q.packets_skipped_invalid_state,
            q.interned_data_ignored
        );
    }
    let _ = writeln!(s, "processes:");
    for (pid, name) in &report.processes {
        let _ = writeln!(s, "  {pid} {name}");
    }
    let _ = writeln!(
        s,
        "tables: {} callstacks ({} stack tree nodes), {} frames ({:.1}% named), {} mappings",
        report.callstacks,
        report.stack_nodes,
        report.frames,
        100.0 * report.named_frame_share(),
        report.mappings
    );
    let symbols = report.packet_kinds.get("module_symbols").copied().unwrap_or(0);
    if symbols > 0 {
        let _ = writeln!(
            s,
            "symbols in the trace: {symbols} ModuleSymbols packet(s), applied to {} frame(s)",
            report.frames_symbolized_from_trace
        );
    }
    let _ = writeln!(s, "dumps: {}", report.dumps.len());
    let dump_ts = |d: &crate::model::DumpReport| match d.timestamp {
        Some(t) if d.timestamp_converted => t.to_string(),
        Some(t) => format!("{t}(raw)"),
        None => "-".to_owned(),
    };
    // Columns as wide as their widest cell, and at least as wide as they always were.
    let width = |min: usize, cells: &mut dyn Iterator<Item = usize>| cells.fold(min, usize::max);
    let wp = width(20, &mut report.dumps.iter().map(|d| d.process_name.as_deref().map_or(1, |n| n.chars().count())));
    let wh = width(16, &mut report.dumps.iter().map(|d| d.heap.chars().count()));
    let wt = width(14, &mut report.dumps.iter().map(|d| dump_ts(d).len()));
    let _ = writeln!(
        s,
        "  {:>7} {:<wp$} {:<wh$} {:>4} {:>wt$} {:>9} {:>8} {:>12} {:>12} {:>8}  flags",
        "pid", "process", "heap", "#", "timestamp", "interval", "stacks", "total", "unreleased", "changed"
    );
    for d in &report.dumps {
        let ts = dump_ts(d);
        let _ = writeln!(
            s,
            "  {:>7} {:<wp$} {:<wh$} {:>4} {:>wt$} {:>9} {:>8} {:>12} {:>12} {:>8}  {}",
            d.pid,
            d.process_name.as_deref().unwrap_or("-"),
            d.heap,
            d.index + 1,
            ts,
            d.sampling_interval.map(|i| i.to_string()).unwrap_or_else(|| "-".to_owned()),
            d.stacks,
            human_bytes(d.totals.total_size),
            human_bytes(d.totals.unreleased_size),
            if d.changed { "yes" } else { "no" },
            flag_text(&d.flags)
        );
    }
    if !report.heap_graphs.is_empty() {
        let _ = writeln!(s, "heap graphs: {}", report.heap_graphs.len());
        let wp = width(
            20,
            &mut report.heap_graphs.iter().map(|g| g.process_name.as_deref().map_or(1, |n| n.chars().count())),
        );
        let _ = writeln!(
            s,
            "  {:>7} {:<wp$} {:>4} {:>14} {:>10} {:>8} {:>10} {:>8} {:>10}  incomplete",
            "pid", "process", "#", "timestamp", "objects", "classes", "refs", "roots", "native"
        );
        for g in &report.heap_graphs {
            let ts = match g.timestamp {
                Some(t) if g.timestamp_converted => t.to_string(),
                Some(t) => format!("{t}(raw)"),
                None => "-".to_owned(),
            };
            let _ = writeln!(
                s,
                "  {:>7} {:<wp$} {:>4} {:>14} {:>10} {:>8} {:>10} {:>8} {:>10}  {}",
                g.pid,
                g.process_name.as_deref().unwrap_or("-"),
                g.index + 1,
                ts,
                g.objects,
                g.classes,
                g.references,
                g.rooted_objects,
                human_bytes(i64::try_from(g.native_bytes).unwrap_or(i64::MAX)),
                if g.incomplete.is_empty() { "no".to_owned() } else { format!("yes: {}", g.incomplete.join("; ")) }
            );
        }
    }
    if report.problems.is_empty() && report.damage.is_none() {
        let _ = writeln!(s, "problems: none");
    } else {
        let _ = writeln!(s, "problems:");
        for p in &report.problems {
            let at = match (p.offset, p.packet) {
                (Some(o), Some(n)) => format!("byte {o}, packet {n}: "),
                _ => String::new(),
            };
            let _ = writeln!(s, "  {at}{}", p.message);
        }
        if report.problems_omitted > 0 {
            let _ = writeln!(s, "  … and {} more", report.problems_omitted);
        }
        if let Some(d) = &report.damage {
            let _ = writeln!(s, "  DAMAGED: {d}");
        }
    }
    s
}

/// One thread of a DDM allocation-record capture.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DdmThread {
    /// Thread id as recorded (VM thread id, or kernel tid cut to 16 bits).
    pub id: u16,
    /// Name, when the capture carries a thread-name table.
    pub name: Option<String>,
    /// Allocations.
    pub entries: u64,
    /// Bytes.
    pub bytes: u64,
}

/// A class or method of a DDM capture with its allocations.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DdmTally {
    /// Java class name, or `class.method`.
    pub name: String,
    /// Allocations.
    pub entries: u64,
    /// Bytes.
    pub bytes: u64,
}

/// How many allocations have a stack of one depth.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DdmDepth {
    /// Stack depth (method frames).
    pub depth: u8,
    /// Allocations.
    pub entries: u64,
}

/// What `inspect` shows about a DDM allocation-record capture (filled in by the pipeline from
/// the decoded records).
#[derive(Debug, Clone, Serialize, Default, PartialEq, Eq)]
pub struct DdmInspect {
    /// Input name.
    pub source: String,
    /// How the blob was wrapped (bare, DDM chunk, JDWP packet).
    pub framing: String,
    /// Bytes of the input (after gzip).
    pub input_bytes: u64,
    /// Offset of the blob in the input.
    pub blob_offset: u64,
    /// Bytes of the blob up to the end of its string tables.
    pub blob_bytes: u64,
    /// Header length as declared.
    pub header_length: u8,
    /// Entry header length as declared.
    pub entry_header_length: u8,
    /// Stack frame length as declared.
    pub frame_length: u8,
    /// String-table offset as declared (from the start of the blob).
    pub string_table_offset: u32,
    /// Entry count as written in the header.
    pub entry_count_field: u16,
    /// Entries found.
    pub entries: u64,
    /// The header's count wrapped (Dalvik's full-buffer quirk).
    pub count_wrapped: bool,
    /// Which way the entries run (`newest first` or `oldest first`).
    pub entry_order: String,
    /// Why.
    pub entry_order_basis: String,
    /// Size of the class-name table.
    pub class_names: u64,
    /// Size of the method-name table.
    pub method_names: u64,
    /// Size of the source-file table.
    pub source_files: u64,
    /// Entries of the optional thread-name table.
    pub thread_names: u64,
    /// Bytes allocated in all.
    pub total_bytes: u64,
    /// The deepest stack.
    pub max_depth: u8,
    /// The depth limit stacks were compared with (0: truncation marks off).
    pub depth_limit: u64,
    /// Stacks as deep as the limit: probably cut by the VM.
    pub truncated_stacks: u64,
    /// Stack frames in all.
    pub frames: u64,
    /// Frames with line -1 (no line information).
    pub frames_without_line: u64,
    /// Frames with line -2 (native methods).
    pub native_frames: u64,
    /// Frames whose line read below -2 (lines from 32768 on, cut to 16 bits by ART).
    pub frames_with_wrapped_line: u64,
    /// Threads, most bytes first.
    pub threads: Vec<DdmThread>,
    /// Allocated classes with the most bytes.
    pub top_classes: Vec<DdmTally>,
    /// Allocating methods (innermost frame) with the most bytes.
    pub top_methods: Vec<DdmTally>,
    /// Allocations per stack depth.
    pub depth_histogram: Vec<DdmDepth>,
    /// Odd things that did not stop decoding.
    pub problems: Vec<String>,
}

/// Renders the `inspect --json` report of a DDM capture.
pub fn ddm_inspect_json(report: &DdmInspect) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("report serializes");
    s.push('\n');
    s
}

/// Renders the `inspect` report of a DDM capture for people.
pub fn ddm_inspect_text(r: &DdmInspect) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "{}: DDM allocation records, {}", r.source, r.framing);
    let _ = writeln!(
        s,
        "  {} bytes; blob at byte {}, {} bytes; header {} B, entry header {} B, frame {} B; string tables at byte {}",
        r.input_bytes,
        r.blob_offset,
        r.blob_bytes,
        r.header_length,
        r.entry_header_length,
        r.frame_length,
        r.string_table_offset
    );
    let _ = writeln!(
        s,
        "  entries: {} (header count {}{}), {} ({})",
        r.entries,
        r.entry_count_field,
        if r.count_wrapped { ", wrapped" } else { "" },
        r.entry_order,
        r.entry_order_basis
    );
    let _ = writeln!(
        s,
        "  strings: {} class name(s), {} method name(s), {} source file(s){}",
        r.class_names,
        r.method_names,
        r.source_files,
        if r.thread_names > 0 { format!(", {} thread name(s)", r.thread_names) } else { String::new() }
    );
    let _ = writeln!(
        s,
        "  allocated: {} object(s), {} ({} bytes)",
        r.entries,
        human_bytes(r.total_bytes as i64),
        r.total_bytes
    );
    let _ = writeln!(
        s,
        "  frames: {}, max depth {}; {} without line number (-1), {} native (-2), {} with a line past 32767",
        r.frames, r.max_depth, r.frames_without_line, r.native_frames, r.frames_with_wrapped_line
    );
    if r.depth_limit > 0 {
        let _ = writeln!(
            s,
            "  depth limit {}: {} stack(s) that deep, marked [truncated]",
            r.depth_limit, r.truncated_stacks
        );
    } else {
        let _ = writeln!(s, "  truncation marks off");
    }
    let _ = writeln!(s, "threads: {}", r.threads.len());
    let _ = writeln!(s, "  {:>7} {:>9} {:>12}  name", "id", "entries", "bytes");
    for t in &r.threads {
        let _ = writeln!(
            s,
            "  {:>7} {:>9} {:>12}  {}",
            t.id,
            t.entries,
            human_bytes(t.bytes as i64),
            t.name.as_deref().unwrap_or("-")
        );
    }
    for (title, list) in [
        ("top allocated classes (by bytes)", &r.top_classes),
        ("top allocating methods (innermost frame, by bytes)", &r.top_methods),
    ] {
        let _ = writeln!(s, "{title}:");
        let _ = writeln!(s, "  {:>9} {:>12}  name", "entries", "bytes");
        for t in list {
            let _ = writeln!(s, "  {:>9} {:>12}  {}", t.entries, human_bytes(t.bytes as i64), t.name);
        }
    }
    let _ = writeln!(s, "depth histogram:");
    let _ = writeln!(s, "  {:>5} {:>9}", "depth", "entries");
    for d in &r.depth_histogram {
        let _ = writeln!(s, "  {:>5} {:>9}", d.depth, d.entries);
    }
    if r.problems.is_empty() {
        let _ = writeln!(s, "problems: none");
    } else {
        let _ = writeln!(s, "problems:");
        for p in &r.problems {
            let _ = writeln!(s, "  {p}");
        }
    }
    s
}

/// One record or sub-record tag of an hprof file, with how often it occurs.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HprofTagTally {
    /// The tag.
    pub tag: u8,
    /// Its name (`?` for tags hprof does not define).
    pub name: String,
    /// Records with this tag.
    pub count: u64,
    /// Their bytes, headers included.
    pub bytes: u64,
}

/// One heap of an hprof file (`app`, `zygote`, `image`; `default` without HEAP_DUMP_INFO).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HprofHeapTally {
    /// Heap name.
    pub name: String,
    /// Objects in it.
    pub objects: u64,
    /// Their shallow bytes.
    pub shallow_bytes: u64,
}

/// How many roots of one kind an hprof file has.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HprofRootTally {
    /// Root kind (`ROOT_JAVA_FRAME`, …).
    pub kind: String,
    /// Roots of that kind (an object may be counted under several kinds).
    pub count: u64,
}

/// One heap dump of an hprof file that holds several (the JVMTI hprof agent's files).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HprofDumpTally {
    /// 1-based number, as `--dump N` counts.
    pub number: usize,
    /// Byte offset of its first record.
    pub offset: u64,
    /// Microseconds from the header's time to its first record.
    pub time_us: u32,
    /// Its heap-dump records (`HEAP_DUMP`, or `HEAP_DUMP_SEGMENT`s).
    pub records: u64,
    /// Their bytes, headers included.
    pub bytes: u64,
}

/// What `inspect` shows about an hprof heap dump (filled in by the pipeline).
#[derive(Debug, Clone, Serialize, Default, PartialEq, Eq)]
pub struct HprofInspect {
    /// Input name.
    pub source: String,
    /// The header string (`JAVA PROFILE 1.0.3`).
    pub format: String,
    /// Identifier size in bytes.
    pub id_size: u8,
    /// When the dump was taken, milliseconds since the epoch (as written).
    pub timestamp_ms: u64,
    /// Bytes read (after gzip): the whole file, or up to the damage.
    pub bytes: u64,
    /// The file's heap dumps, when it holds several (absent with one): the sub-record, heap,
    /// object and root counts below are of the one numbered `dump`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dumps: Vec<HprofDumpTally>,
    /// The 1-based number of the heap dump described, when the file holds several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dump: Option<usize>,
    /// Top-level records by tag.
    pub records: Vec<HprofTagTally>,
    /// Heap-dump sub-records by tag.
    pub sub_records: Vec<HprofTagTally>,
    /// Heaps, in the order they first appear.
    pub heaps: Vec<HprofHeapTally>,
    /// Classes (with a CLASS_DUMP or only named by objects, plus synthetic ones).
    pub classes: u64,
    /// Objects in all.
    pub objects: u64,
    /// Instances.
    pub instances: u64,
    /// Object arrays.
    pub object_arrays: u64,
    /// Primitive arrays.
    pub primitive_arrays: u64,
    /// Class objects.
    pub class_objects: u64,
    /// Shallow bytes of all objects.
    pub shallow_bytes: u64,
    /// Reference slots (fields, array elements, statics), nulls included.
    pub references: u64,
    /// Null references.
    pub null_references: u64,
    /// References to ids that name no object.
    pub dangling_references: u64,
    /// Roots by kind, in the order kinds first appear.
    pub roots: Vec<HprofRootTally>,
    /// Roots whose id names no object (not counted in `roots`).
    pub dangling_roots: u64,
    /// Instances that came before the CLASS_DUMP of their class (decoded in a second pass).
    pub instances_before_class: u64,
    /// Odd things that did not stop reading.
    pub problems: Vec<String>,
    /// Why the heap is incomplete (damage, instances whose class was never dumped).
    pub incomplete: Vec<String>,
}

/// Renders the `inspect --json` report of an hprof file.
pub fn hprof_inspect_json(report: &HprofInspect) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("report serializes");
    s.push('\n');
    s
}

/// `2023-11-14 22:13:20.123 UTC` for milliseconds since the epoch.
pub(crate) fn utc_text(ms: u64) -> String {
    let (days, rest) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:03} UTC",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

/// Renders the `inspect` report of an hprof file for people.
pub fn hprof_inspect_text(r: &HprofInspect) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {}, identifiers of {} bytes, dumped {} ({} ms)",
        r.source,
        r.format,
        r.id_size,
        utc_text(r.timestamp_ms),
        r.timestamp_ms
    );
    let _ = writeln!(s, "  {} bytes read", r.bytes);
    if !r.dumps.is_empty() {
        let _ = writeln!(
            s,
            "heap dumps: {} (the counts below are of dump {})",
            r.dumps.len(),
            r.dump.map_or_else(|| "-".to_owned(), |n| n.to_string())
        );
        let _ = writeln!(s, "  {:>4} {:>12} {:>12} {:>8} {:>14}", "dump", "offset", "time", "records", "bytes");
        for d in &r.dumps {
            let time = format!("{:.3} s", f64::from(d.time_us) / 1e6);
            let _ = writeln!(s, "  {:>4} {:>12} {:>12} {:>8} {:>14}", d.number, d.offset, time, d.records, d.bytes);
        }
    }
    for (title, list) in [("records", &r.records), ("heap-dump sub-records", &r.sub_records)] {
        let _ = writeln!(s, "{title}:");
        let _ = writeln!(s, "  {:<5} {:<28} {:>10} {:>14}", "tag", "name", "count", "bytes");
        for t in list {
            let _ = writeln!(s, "  0x{:02X}  {:<28} {:>10} {:>14}", t.tag, t.name, t.count, t.bytes);
        }
    }
    let _ = writeln!(s, "heaps:");
    let _ = writeln!(s, "  {:<16} {:>10} {:>12}", "name", "objects", "shallow");
    for h in &r.heaps {
        let _ = writeln!(s, "  {:<16} {:>10} {:>12}", h.name, h.objects, human_bytes(h.shallow_bytes as i64));
    }
    let _ = writeln!(s, "classes: {}", r.classes);
    let _ = writeln!(
        s,
        "objects: {} ({} instances, {} object arrays, {} primitive arrays, {} class objects), {} shallow ({} bytes)",
        r.objects,
        r.instances,
        r.object_arrays,
        r.primitive_arrays,
        r.class_objects,
        human_bytes(r.shallow_bytes as i64),
        r.shallow_bytes
    );
    let _ = writeln!(
        s,
        "references: {} ({} null, {} to ids that name no object)",
        r.references, r.null_references, r.dangling_references
    );
    let total: u64 = r.roots.iter().map(|t| t.count).sum();
    let _ = writeln!(s, "roots: {total} ({} more to ids that name no object)", r.dangling_roots);
    for t in &r.roots {
        let _ = writeln!(s, "  {:<24} {:>10}", t.kind, t.count);
    }
    if r.instances_before_class > 0 {
        let _ = writeln!(s, "instances before their class's CLASS_DUMP: {}", r.instances_before_class);
    }
    if r.problems.is_empty() && r.incomplete.is_empty() {
        let _ = writeln!(s, "problems: none");
    } else {
        let _ = writeln!(s, "problems:");
        for p in &r.problems {
            let _ = writeln!(s, "  {p}");
        }
        for p in &r.incomplete {
            let _ = writeln!(s, "  INCOMPLETE: {p}");
        }
    }
    s
}

#[cfg(test)]
mod hprof_tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc_text(0), "1970-01-01 00:00:00.000 UTC");
        assert_eq!(utc_text(1_700_000_000_123), "2023-11-14 22:13:20.123 UTC");
        assert_eq!(utc_text(951_782_400_000), "2000-02-29 00:00:00.000 UTC");
    }

    #[test]
    fn the_dump_table_is_as_wide_as_its_widest_process_name() {
        let dump = |pid: u64, name: &str| crate::model::DumpReport {
            pid,
            process_name: Some(name.to_owned()),
            heap: "libc.malloc".to_owned(),
            index: 0,
            timestamp: Some(500),
            raw_timestamp: None,
            timestamp_converted: true,
            sampling_interval: Some(4096),
            orig_sampling_interval: None,
            samples: 1,
            stacks: 1,
            changed: true,
            totals: Default::default(),
            flags: Default::default(),
        };
        let long = "com.example.a.very.long.process.name.xyz";
        assert_eq!(long.len(), 40);
        let report = TraceReport { dumps: vec![dump(10, long), dump(7, "app")], ..Default::default() };
        let text = inspect_text(&report);
        let rows: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("dumps:")).skip(1).take(3).collect();
        // Every row has its heap column where the header has it.
        let col = rows[0].find("heap").unwrap();
        assert_eq!(col, 2 + 7 + 1 + 40 + 1);
        assert_eq!(rows[1].find("libc.malloc"), Some(col), "{text}");
        assert_eq!(rows[2].find("libc.malloc"), Some(col), "{text}");
        assert!(rows[2].starts_with("        7 app "), "{text}");
        // Short names keep the old widths (20 for the process).
        let short = TraceReport { dumps: vec![dump(7, "app")], ..Default::default() };
        let text = inspect_text(&short);
        let header = text.lines().find(|l| l.trim_start().starts_with("pid process")).unwrap();
        assert_eq!(header.find("heap"), Some(2 + 7 + 1 + 20 + 1));
    }
}
