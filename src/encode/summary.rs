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
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions { top: 20, view: ValueKind::UnreleasedSize, annotations: false }
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
    let index = profile.value_index(opts.view).or_else(|| profile.value_index(ValueKind::TotalSize)).unwrap_or(0);
    let ranked_by = profile.sample_types.get(index).map(|t| t.name.clone()).unwrap_or_default();
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
            *flat.entry(leaf.clone()).or_default() += v;
        }
        let mut seen: Vec<&String> = Vec::with_capacity(labels.len());
        for l in &labels {
            if !seen.contains(&l) {
                seen.push(l);
                *cum.entry(l.clone()).or_default() += v;
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
        meta: profile.meta.clone(),
        data_loss: profile.meta.flags.data_loss(),
        sample_types: profile.sample_types.iter().map(|t| format!("{}/{}", t.name, t.unit)).collect(),
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
    let _ = writeln!(
        s,
        "  {:>7} {:<20} {:<16} {:>4} {:>14} {:>9} {:>8} {:>12} {:>12} {:>8}  flags",
        "pid", "process", "heap", "#", "timestamp", "interval", "stacks", "total", "unreleased", "changed"
    );
    for d in &report.dumps {
        let ts = match d.timestamp {
            Some(t) if d.timestamp_converted => t.to_string(),
            Some(t) => format!("{t}(raw)"),
            None => "-".to_owned(),
        };
        let _ = writeln!(
            s,
            "  {:>7} {:<20} {:<16} {:>4} {:>14} {:>9} {:>8} {:>12} {:>12} {:>8}  {}",
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
