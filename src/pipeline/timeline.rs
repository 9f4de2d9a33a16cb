//! `heapconv timeline`: per process and heap, the totals of every dump of a trace over time.

use std::path::Path;

use super::batch::{BatchInput, Done, file_for};
use super::load::open_input;
use super::select::no_match;
use crate::decode::perfetto::{DecodeOptions, decode_heapprofd};
use crate::encode::timeline::{ChartOptions, Timeline, timeline, timeline_csv, timeline_json, timeline_svg};
use crate::error::{Error, ErrorKind, Result, Selector};
use crate::model::TraceReport;

/// Output formats of `heapconv timeline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineFormat {
    /// CSV with a header row.
    Csv,
    /// JSON (schema `heapconv-timeline` version 1).
    Json,
    /// An SVG line chart.
    Svg,
}

impl TimelineFormat {
    /// File extension.
    pub fn extension(self) -> &'static str {
        match self {
            TimelineFormat::Csv => "csv",
            TimelineFormat::Json => "json",
            TimelineFormat::Svg => "svg",
        }
    }
}

/// Options of `heapconv timeline`.
#[derive(Debug, Clone)]
pub struct TimelineOptions {
    /// Output format. Default: CSV.
    pub format: TimelineFormat,
    /// Keep only these pids (empty: all). Default: empty.
    pub pids: Vec<u64>,
    /// Keep only this heap. Default: all heaps.
    pub heap: Option<String>,
    /// The chart (SVG only). Default: [`ChartOptions::default`] (unreleased size).
    pub chart: ChartOptions,
    /// Decoder options. Default: [`DecodeOptions::default`].
    pub decode: DecodeOptions,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions {
            format: TimelineFormat::Csv,
            pids: Vec::new(),
            heap: None,
            chart: ChartOptions::default(),
            decode: DecodeOptions::default(),
        }
    }
}

/// What `timeline` made.
#[derive(Debug)]
pub struct TimelineRun {
    /// The timeline.
    pub timeline: Timeline,
    /// Its encoding in the requested format.
    pub bytes: Vec<u8>,
    /// What the trace holds.
    pub report: TraceReport,
}

/// Runs `timeline`: decodes the trace (its dumps' totals are all that is kept) and encodes
/// the totals of every dump of the selected (pid, heap)s. Writing is left to the caller.
pub fn run_timeline(input: &Path, opts: &TimelineOptions) -> Result<TimelineRun> {
    let default_ddm = crate::decode::ddm_alloc_records::DdmOptions::default();
    let opened = open_input(input, opts.decode.max_gzip_bytes, default_ddm.max_bytes, false)?;
    let (mut inp, recognised) = opened.into_heapprofd_trace(input, "`heapconv timeline`")?;
    let mut decode = opts.decode.clone();
    decode.include_unchanged = false;
    let (report, _) = decode_heapprofd(&mut inp, &decode, &mut |_| Ok(()))?;
    if report.dumps.is_empty() {
        let what = match (&report.damage, recognised) {
            (Some(d), _) => format!("no dump could be read: {d}"),
            (None, false) => "not a Perfetto trace".to_owned(),
            (None, true) => "no heapprofd profile found in the trace".to_owned(),
        };
        let kind = if report.damage.is_some() || !recognised { ErrorKind::Malformed } else { ErrorKind::NoData };
        return Err(Error::new(kind, format!("{}: {what}", input.display())));
    }
    let t = timeline(&report, &opts.pids, opts.heap.as_deref());
    if t.series.is_empty() {
        return Err(no_match(input, "dump", &[Selector::Pid, Selector::Heap]));
    }
    let bytes = match opts.format {
        TimelineFormat::Csv => timeline_csv(&t).into_bytes(),
        TimelineFormat::Json => timeline_json(&t).into_bytes(),
        TimelineFormat::Svg => timeline_svg(&t, &opts.chart),
    };
    Ok(TimelineRun { timeline: t, bytes, report })
}

/// `timeline` of one trace: `OUT/<key>.csv` (or `.json`, `.svg`), the bytes one run writes.
pub fn timeline_one(input: &BatchInput, out_dir: &Path, opts: &TimelineOptions) -> Result<Done> {
    let out = file_for(out_dir, &input.key, opts.format.extension())?;
    let run = run_timeline(&input.path, opts)?;
    crate::output::write_atomic(&out, &run.bytes, std::slice::from_ref(&input.path))?;
    let dumps: usize = run.timeline.series.iter().map(|s| s.points.len()).sum();
    let details = serde_json::json!({ "series": run.timeline.series.len(), "dumps": dumps });
    Ok(Done { outputs: vec![out], report: Some(run.report), details: Some(details), ..Done::default() })
}
