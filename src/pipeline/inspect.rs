//! `heapconv inspect`: what an input holds, by kind of input.

use std::path::Path;

use super::load::{Opened, is_alloc_file, open_input};
use super::reports::{ddm_inspect, hprof_inspect};
use crate::decode::Input;
use crate::decode::ddm_alloc_records::{DdmOptions, decode_alloc_records};
use crate::decode::hprof::{HprofReadOptions, read_hprof_with_stats};
use crate::decode::perfetto::heap_graph::{HeapGraphOptions, decode_heap_graphs};
use crate::decode::perfetto::{DecodeOptions, decode_heapprofd};
use crate::decode::pprof::{PprofDecodeOptions, read_pprof};
use crate::encode::labels::human_bytes;
use crate::encode::summary::{DdmInspect, HprofInspect, SummaryOptions, convert_json};
use crate::encode::top::{TopOptions, top_table, top_text};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Profile, TraceReport, ValueKind};

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
        Opened::Pprof(inp, _) => Ok(Inspection::Pprof(Box::new(inspect_pprof(inp)?))),
        Opened::Unknown(inp) => {
            // Sniffing did not know it: the trace decoder tries. If it reads not one packet,
            // the input is no format heapconv reads, which is said with the file's real size.
            let (name, gzipped, file_size) = (inp.name.clone(), inp.gzipped, inp.file_size);
            let report = inspect_trace(inp, decode)?;
            match &report.damage {
                Some(why) if report.packets == 0 => {
                    let size = file_size.unwrap_or(report.bytes);
                    Err(Error::new(
                        ErrorKind::Malformed,
                        format!(
                            "{name}: not a format heapconv reads ({size} bytes{}; not a Perfetto trace, DDM allocation records, an HPROF heap dump or a pprof profile): {}",
                            if gzipped { ", gzip" } else { "" },
                            why.strip_prefix("malformed input: ").unwrap_or(why)
                        ),
                    ))
                }
                _ => Ok(Inspection::Trace(report)),
            }
        }
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

/// `inspect` of a pprof profile, for people: header, sizes, totals per sample type and the top
/// functions of the default type.
pub fn pprof_inspect_text(p: &Profile) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "{} (pprof)", p.header.meta.source);
    let t = &p.tables;
    let _ = writeln!(
        s,
        "  {} samples, {} distinct stack nodes, {} frames, {} mappings, {} strings",
        p.sample_count(),
        t.stack_count(),
        t.frames().len(),
        t.mappings().len(),
        t.strings.len()
    );
    if let Some(per) = &p.header.meta.period {
        let _ = writeln!(s, "  period: {} {} ({})", per.value, per.unit, per.name);
    }
    if let Some(ns) = p.header.meta.time_nanos {
        let _ = writeln!(s, "  time_nanos: {ns}");
    }
    if let Some(ns) = p.header.meta.duration_nanos {
        let _ = writeln!(s, "  duration_nanos: {ns}");
    }
    for c in &p.header.meta.comments {
        let _ = writeln!(s, "  comment: {c}");
    }
    let _ = writeln!(s, "sample types:");
    for (i, ty) in p.header.sample_types.iter().enumerate() {
        let total = p.total(i);
        let shown =
            if ty.unit == "bytes" { format!("{} ({total} bytes)", human_bytes(total)) } else { total.to_string() };
        let dflt = if i == p.header.default_sample_type { " [default]" } else { "" };
        let _ = writeln!(s, "  {}/{}{dflt}: total {shown}", ty.name, ty.unit);
    }
    for m in t.mappings() {
        let _ = writeln!(
            s,
            "mapping {:#x}-{:#x} offset {:#x} {} {}",
            m.start,
            m.end,
            m.exact_offset,
            t.strings.get(m.path),
            m.build_id_text()
        );
    }
    let table =
        top_table(p, &TopOptions { value_index: p.header.default_sample_type, count: 10, ..TopOptions::default() });
    s.push_str(&top_text(&table));
    s
}

/// `inspect --json` of a pprof profile: the summary `convert --to json` gives.
pub fn pprof_inspect_json(p: &Profile) -> String {
    let view = p.header.sample_types.get(p.header.default_sample_type).map_or(ValueKind::UnreleasedSize, |t| t.kind);
    let report = TraceReport { source: p.header.meta.source.clone(), ..Default::default() };
    convert_json(&report, std::slice::from_ref(p), &SummaryOptions { view, annotations: false, ..Default::default() })
}

/// Reads a pprof input for `inspect`.
fn inspect_pprof(mut inp: Input) -> Result<Profile> {
    Ok(read_pprof(&mut inp, &PprofDecodeOptions::default())?.to_profile())
}

impl Inspection {
    /// The report as `inspect` prints it: text, or JSON with `json`.
    pub fn render(&self, json: bool) -> String {
        use crate::encode::summary::{
            ddm_inspect_json, ddm_inspect_text, hprof_inspect_json, hprof_inspect_text, inspect_json, inspect_text,
        };
        match (self, json) {
            (Inspection::Trace(r), true) => inspect_json(r),
            (Inspection::Trace(r), false) => inspect_text(r),
            (Inspection::Ddm(r), true) => ddm_inspect_json(r),
            (Inspection::Ddm(r), false) => ddm_inspect_text(r),
            (Inspection::Hprof(r), true) => hprof_inspect_json(r),
            (Inspection::Hprof(r), false) => hprof_inspect_text(r),
            (Inspection::Pprof(p), true) => pprof_inspect_json(p),
            (Inspection::Pprof(p), false) => pprof_inspect_text(p),
        }
    }

    /// True when the input is damaged (a trace, or an HPROF heap dump) and only its complete
    /// part was read.
    pub fn is_partial(&self) -> bool {
        match self {
            Inspection::Trace(r) => r.is_partial(),
            Inspection::Hprof(r) => !r.incomplete.is_empty(),
            Inspection::Ddm(_) | Inspection::Pprof(_) => false,
        }
    }
}
