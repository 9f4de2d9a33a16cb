//! Shared by the commands: the reports made of decoded inputs (`inspect`'s tallies of DDM
//! captures and HPROF heap dumps, the symbol coverage of a pprof input).

use std::collections::BTreeMap;

use crate::decode::ddm_alloc_records::{AllocCapture, DdmOptions};
use crate::decode::hprof::HprofStats;
use crate::encode::summary::{
    DdmDepth, DdmInspect, DdmTally, DdmThread, HprofDumpTally, HprofHeapTally, HprofInspect, HprofRootTally,
    HprofTagTally,
};
use crate::model::{FlatProfile, HeapDump};
use crate::symbolize::input_coverage;

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
    if st.dumps.len() > 1 {
        r.dumps = st
            .dumps
            .iter()
            .map(|d| HprofDumpTally {
                number: d.index + 1,
                offset: d.offset,
                time_us: d.time_us,
                records: d.records,
                bytes: d.bytes,
            })
            .collect();
        r.dump = st.dump.map(|i| i + 1);
    }
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
            // The library says "as the caller chose"; on the command line that is the flag.
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

/// The symbolization coverage of a pprof input: pprof inputs are never symbolized again, so
/// this counts the symbols they have (see [`input_coverage`]).
pub(crate) fn pprof_coverage(flat: &FlatProfile) -> SymbolizeReport {
    let tree = flat.to_profile();
    input_coverage(&tree.tables, &[&tree])
}

/// What symbolization found, as runs return it (`symbols` of `ConvertRun`
/// and the others): the symbolize stage's report, read by the command line to print coverage.
pub use crate::symbolize::SymbolizeReport;

/// What the run's ProGuard/R8 maps did, as JSON: the object batch summaries hold under
/// `deobfuscation` (per map: which package it was given for, what it was used for, the names
/// looked up and deobfuscated, per kind too; then the names that stayed obfuscated, with a few
/// examples). `None` when no map was given or none was opened.
pub fn deobfuscation_json(maps: &super::load::ProguardMaps) -> Option<serde_json::Value> {
    maps.report().and_then(|r| serde_json::to_value(r).ok())
}

/// A pretty-printed JSON object document (as `top --json` prints one) with `"deobfuscation":
/// value` added as its last key; the document unchanged when `value` is `None` or the document
/// is not an object.
pub fn with_deobfuscation(doc: &str, value: Option<&serde_json::Value>) -> String {
    let Some(v) = value else { return doc.to_owned() };
    let body = doc.trim_end();
    let Some(head) = body.strip_suffix('}') else { return doc.to_owned() };
    let head = head.trim_end();
    let inner = serde_json::to_string_pretty(v).expect("a JSON value serializes").replace('\n', "\n  ");
    let sep = if head.ends_with('{') { "" } else { "," };
    format!("{head}{sep}\n  \"deobfuscation\": {inner}\n}}{}", &doc[body.len()..])
}

/// A byte count for people (`1.5 MiB`), as every report writes them.
pub fn human_bytes(n: i64) -> String {
    crate::encode::labels::human_bytes(n)
}
