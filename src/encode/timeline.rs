//! The timeline of a heapprofd trace: per process and heap, the totals of every dump over
//! time, as CSV, JSON or a line chart (SVG, drawn here without a plotting library).
//!
//! The totals are those the decoder reports for each dump ([`crate::model::DumpReport`]):
//! unreleased (allocated minus freed) and total (allocated) size and count, cumulative since
//! profiling started, as heapprofd writes them. A heap that reports no frees (the ART heap,
//! `com.android.art`) has unreleased values equal to its totals.
//!
//! Times are the dumps' trace-clock timestamps in nanoseconds (BOOTTIME unless the trace's
//! clock snapshots name another trace clock), converted from the producer's clock
//! (`CLOCK_MONOTONIC_COARSE` for heapprofd) through the trace's ClockSnapshot packets; when
//! the trace has no snapshot linking the two clocks, the timestamp is the raw producer value
//! and `timestamp_converted` is false. `seconds` counts from the earliest dump of the
//! timeline.
//!
//! ## CSV
//!
//! One header row, then one row per dump, grouped by (pid, heap) in ascending order and by
//! dump number within a group:
//!
//! ```text
//! pid,process,heap,dump,timestamp_ns,raw_timestamp_ns,timestamp_converted,seconds,unreleased_size,unreleased_count,total_size,total_count,changed,data_loss
//! ```
//!
//! Fields are quoted as RFC 4180 says when they hold a comma, quote or line break; unknown
//! values are empty; `seconds` has nine decimals (exact nanoseconds); `data_loss` lists the
//! dump's data-loss flags separated by `;`.
//!
//! ## JSON (schema `heapconv-timeline`, version 1)
//!
//! ```text
//! { "format": "heapconv-timeline", "version": 1, "source": str,
//!   "clock": str, "first_timestamp": int|null,
//!   "series": [ { "pid": int, "process_name": str|null, "heap": str,
//!                 "points": [ { "dump": int (1-based), "timestamp": int|null,
//!                               "raw_timestamp": int|null, "timestamp_converted": bool,
//!                               "seconds": float|null,
//!                               "unreleased_size": int, "unreleased_count": int,
//!                               "total_size": int, "total_count": int,
//!                               "changed": bool, "data_loss": [str] } ] } ] }
//! ```
//!
//! Fields may be added in a later version; none will be renamed or change meaning without
//! a new `version`.
//!
//! ## SVG
//!
//! A line chart of one value (unreleased size unless asked otherwise): x is seconds since the
//! first dump, y the value with units (B/KiB/MiB/GiB for sizes), one polyline per process and
//! heap with a marker per dump whose tooltip gives the exact value, a legend and a title.
//! Every coordinate is written with one decimal, so the same timeline gives the same bytes.

use std::fmt::Write as _;

use serde::Serialize;

use super::labels::human_bytes;
use crate::model::{TraceReport, ValueKind};

/// What the timeline's JSON document calls its format.
pub const TIMELINE_FORMAT: &str = "heapconv-timeline";
/// The version of the JSON schema.
pub const TIMELINE_VERSION: u32 = 1;

/// The timeline of a trace.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    /// Always [`TIMELINE_FORMAT`].
    pub format: &'static str,
    /// Always [`TIMELINE_VERSION`].
    pub version: u32,
    /// Input name.
    pub source: String,
    /// What the timestamps are.
    pub clock: String,
    /// The earliest dump timestamp of the timeline (`seconds` counts from it).
    pub first_timestamp: Option<i64>,
    /// One series per (pid, heap), ascending.
    pub series: Vec<TimelineSeries>,
}

/// The dumps of one process and heap.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineSeries {
    /// Process id.
    pub pid: u64,
    /// Process name, when the trace gives it.
    pub process_name: Option<String>,
    /// Heap name.
    pub heap: String,
    /// One point per dump, in dump order.
    pub points: Vec<TimelinePoint>,
}

impl TimelineSeries {
    /// `name (pid N), heap`, for legends and messages.
    pub fn label(&self) -> String {
        match &self.process_name {
            Some(n) => format!("{n} (pid {}), {}", self.pid, self.heap),
            None => format!("pid {}, {}", self.pid, self.heap),
        }
    }
}

/// The totals of one dump.
#[derive(Debug, Clone, Serialize)]
pub struct TimelinePoint {
    /// Dump number within its (pid, heap), from 1.
    pub dump: usize,
    /// Trace-clock time, ns.
    pub timestamp: Option<i64>,
    /// Time as the producer wrote it (heapprofd: `CLOCK_MONOTONIC_COARSE`), ns.
    pub raw_timestamp: Option<u64>,
    /// Whether `timestamp` was converted through a clock snapshot (false: it is the raw value).
    pub timestamp_converted: bool,
    /// Seconds since the timeline's first dump.
    pub seconds: Option<f64>,
    /// Bytes allocated and not freed.
    pub unreleased_size: i64,
    /// Allocations not freed.
    pub unreleased_count: i64,
    /// Bytes allocated since profiling started.
    pub total_size: i64,
    /// Allocations since profiling started.
    pub total_count: i64,
    /// Whether any value changed since the previous dump.
    pub changed: bool,
    /// Data-loss flags of the dump.
    pub data_loss: Vec<&'static str>,
}

impl TimelinePoint {
    /// The value of `kind` (`Other` reads as unreleased size).
    pub fn value(&self, kind: ValueKind) -> i64 {
        match kind {
            ValueKind::TotalCount => self.total_count,
            ValueKind::TotalSize => self.total_size,
            ValueKind::UnreleasedCount => self.unreleased_count,
            ValueKind::UnreleasedSize | ValueKind::Other => self.unreleased_size,
        }
    }
}

/// Builds the timeline of the dumps `report` lists, keeping only the pids in `pids` (all when
/// empty) and the heap `heap` (all when `None`).
pub fn timeline(report: &TraceReport, pids: &[u64], heap: Option<&str>) -> Timeline {
    let mut dumps: Vec<&crate::model::DumpReport> = report
        .dumps
        .iter()
        .filter(|d| pids.is_empty() || pids.contains(&d.pid))
        .filter(|d| heap.is_none_or(|h| h == d.heap))
        .collect();
    dumps.sort_by(|a, b| (a.pid, &a.heap, a.index).cmp(&(b.pid, &b.heap, b.index)));
    let first = dumps.iter().filter_map(|d| d.timestamp).min();
    let mut series: Vec<TimelineSeries> = Vec::new();
    for d in dumps {
        let point = TimelinePoint {
            dump: d.index + 1,
            timestamp: d.timestamp,
            raw_timestamp: d.raw_timestamp,
            timestamp_converted: d.timestamp_converted,
            seconds: d.timestamp.zip(first).map(|(t, f)| (t - f) as f64 / 1e9),
            unreleased_size: d.totals.unreleased_size,
            unreleased_count: d.totals.unreleased_count,
            total_size: d.totals.total_size,
            total_count: d.totals.total_count,
            changed: d.changed,
            data_loss: d.flags.data_loss(),
        };
        match series.last_mut() {
            Some(s) if s.pid == d.pid && s.heap == d.heap => s.points.push(point),
            _ => series.push(TimelineSeries {
                pid: d.pid,
                process_name: d.process_name.clone().or_else(|| report.processes.get(&d.pid).cloned()),
                heap: d.heap.clone(),
                points: vec![point],
            }),
        }
    }
    Timeline {
        format: TIMELINE_FORMAT,
        version: TIMELINE_VERSION,
        source: report.source.clone(),
        clock: "trace clock (BOOTTIME unless the trace names another), nanoseconds".to_owned(),
        first_timestamp: first,
        series,
    }
}

/// The header row of [`timeline_csv`].
pub const CSV_HEADER: &str = "pid,process,heap,dump,timestamp_ns,raw_timestamp_ns,timestamp_converted,seconds,unreleased_size,unreleased_count,total_size,total_count,changed,data_loss";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() }
}

/// `t - first` nanoseconds as seconds with nine decimals, computed exactly.
fn seconds_text(t: i64, first: i64) -> String {
    let d = i128::from(t) - i128::from(first);
    let sign = if d < 0 { "-" } else { "" };
    let a = d.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

/// The timeline as CSV (see the module docs).
pub fn timeline_csv(t: &Timeline) -> String {
    let mut out = String::new();
    out.push_str(CSV_HEADER);
    out.push('\n');
    for s in &t.series {
        for p in &s.points {
            let opt = |v: Option<String>| v.unwrap_or_default();
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                s.pid,
                csv_field(s.process_name.as_deref().unwrap_or("")),
                csv_field(&s.heap),
                p.dump,
                opt(p.timestamp.map(|v| v.to_string())),
                opt(p.raw_timestamp.map(|v| v.to_string())),
                p.timestamp_converted,
                opt(p.timestamp.zip(t.first_timestamp).map(|(v, f)| seconds_text(v, f))),
                p.unreleased_size,
                p.unreleased_count,
                p.total_size,
                p.total_count,
                p.changed,
                csv_field(&p.data_loss.join(";")),
            );
        }
    }
    out
}

/// The timeline as pretty JSON with a final newline (see the module docs).
pub fn timeline_json(t: &Timeline) -> String {
    let mut s = serde_json::to_string_pretty(t).expect("a timeline serializes");
    s.push('\n');
    s
}

/// Options of the timeline chart.
#[derive(Debug, Clone)]
pub struct ChartOptions {
    /// The value drawn. Default: unreleased size.
    pub value: ValueKind,
    /// Width of the image in pixels. Default: 900.
    pub width: u32,
    /// Height of the plot area in pixels (the legend adds rows below it). Default: 360.
    pub plot_height: u32,
    /// Title; `None` names the input and the value. Default: `None`.
    pub title: Option<String>,
}

impl Default for ChartOptions {
    fn default() -> Self {
        ChartOptions { value: ValueKind::UnreleasedSize, width: 900, plot_height: 360, title: None }
    }
}

/// What the chart calls a value.
pub fn value_name(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::TotalCount => "total count (allocations)",
        ValueKind::TotalSize => "total size (allocated)",
        ValueKind::UnreleasedCount => "unreleased count",
        ValueKind::UnreleasedSize | ValueKind::Other => "unreleased size",
    }
}

/// Line colours, one per series (then again, dashed).
const PALETTE: [&str; 10] =
    ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A step of 1, 2 or 5 times a power of ten that cuts `span` into about `target` pieces.
fn nice_step(span: f64, target: f64) -> f64 {
    if span.is_nan() || span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / target;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Decimals needed to print multiples of `step`.
fn decimals(step: f64) -> usize {
    let mut d = 0;
    let mut s = step;
    while d < 6 && (s - s.round()).abs() > 1e-9 * s.abs().max(1.0) {
        s *= 10.0;
        d += 1;
    }
    d
}

/// Ticks from `lo` to at least `hi` (multiples of a nice step in `unit`s), with their labels.
fn ticks(lo: f64, hi: f64, unit: f64, suffix: &str) -> Vec<(f64, String)> {
    let (lo_u, hi_u) = (lo / unit, hi / unit);
    let step = nice_step(hi_u - lo_u, 5.0);
    let d = decimals(step);
    let first = (lo_u / step).floor() as i64;
    let last = (hi_u / step).ceil() as i64;
    (first..=last.max(first + 1))
        .map(|i| {
            let v = i as f64 * step;
            let v = if v == 0.0 { 0.0 } else { v };
            (v * unit, format!("{v:.d$}{suffix}"))
        })
        .collect()
}

/// The timeline as an SVG line chart (see the module docs).
pub fn timeline_svg(t: &Timeline, opts: &ChartOptions) -> Vec<u8> {
    let kind = opts.value;
    let bytes = matches!(kind, ValueKind::TotalSize | ValueKind::UnreleasedSize | ValueKind::Other);
    let name = value_name(kind);
    // Points with a time: (seconds, value).
    type Timed<'a> = Vec<(f64, i64, &'a TimelinePoint)>;
    let series: Vec<(&TimelineSeries, Timed<'_>)> = t
        .series
        .iter()
        .map(|s| (s, s.points.iter().filter_map(|p| p.seconds.map(|x| (x, p.value(kind), p))).collect()))
        .collect();
    let all = series.iter().flat_map(|(_, pts)| pts.iter());
    let (mut x_max, mut y_min, mut y_max) = (0.0f64, 0i64, 0i64);
    for (x, y, _) in all {
        x_max = x_max.max(*x);
        y_min = y_min.min(*y);
        y_max = y_max.max(*y);
    }
    if x_max <= 0.0 {
        x_max = 1.0;
    }
    if y_max == y_min {
        y_max = y_min + if bytes { 1024 } else { 10 };
    }
    let magnitude = y_max.unsigned_abs().max(y_min.unsigned_abs());
    let (unit, suffix) = if !bytes {
        (1.0, String::new())
    } else if magnitude >= 1 << 30 {
        ((1u64 << 30) as f64, " GiB".to_owned())
    } else if magnitude >= 1 << 20 {
        ((1u64 << 20) as f64, " MiB".to_owned())
    } else if magnitude >= 1 << 10 {
        (1024.0, " KiB".to_owned())
    } else {
        (1.0, " B".to_owned())
    };
    let y_ticks = ticks(y_min as f64, y_max as f64, unit, &suffix);
    let x_ticks = ticks(0.0, x_max, 1.0, "");
    let (y_lo, y_hi) = (y_ticks[0].0, y_ticks[y_ticks.len() - 1].0);
    let x_hi = x_ticks[x_ticks.len() - 1].0;

    let width = f64::from(opts.width.max(300));
    let (left, right, top) = (90.0, 30.0, 62.0);
    let plot_h = f64::from(opts.plot_height.max(100));
    let bottom = top + plot_h;
    let legend_top = bottom + 52.0;
    let row = 18.0;
    let height = legend_top + row * t.series.len().max(1) as f64 + 8.0;
    let px = |x: f64| left + (x / x_hi) * (width - left - right);
    let py = |y: f64| bottom - (y - y_lo) / (y_hi - y_lo) * plot_h;

    let title = opts.title.clone().unwrap_or_else(|| format!("{}: {name} per process and heap", t.source));
    let dumps: usize = t.series.iter().map(|s| s.points.len()).sum();
    let mut subtitle = format!(
        "{dumps} dump(s) of {} process/heap series; one line per process and heap, a point per dump",
        t.series.len()
    );
    if let Some(f) = t.first_timestamp {
        let _ = write!(subtitle, "; first dump at {f} ns (trace clock)");
    }

    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8" standalone="no"?>"#);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="Verdana, Helvetica, sans-serif" font-size="12">"#,
        w = width,
        h = height
    );
    let _ = writeln!(s, "<title>{}</title>", xml(&title));
    let _ = writeln!(s, r##"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r#"<text class="title" x="{:.1}" y="24" text-anchor="middle" font-size="16">{}</text>"#,
        width / 2.0,
        xml(&title)
    );
    let _ = writeln!(
        s,
        r##"<text class="subtitle" x="{:.1}" y="44" text-anchor="middle" fill="#555555">{}</text>"##,
        width / 2.0,
        xml(&subtitle)
    );
    // Grid and ticks.
    let _ = writeln!(s, r#"<g class="y-axis">"#);
    for (v, label) in &y_ticks {
        let y = py(*v);
        let _ = writeln!(
            s,
            r##"<line x1="{left:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            width - right,
            left - 6.0,
            y + 4.0,
            xml(label)
        );
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r#"<g class="x-axis">"#);
    for (v, label) in &x_ticks {
        let x = px(*v);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{bottom:.1}" x2="{x:.1}" y2="{:.1}" stroke="#000000"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            bottom + 5.0,
            bottom + 19.0,
            xml(label)
        );
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(
        s,
        r##"<path class="axes" d="M{left:.1},{top:.1} V{bottom:.1} H{:.1}" fill="none" stroke="#000000"/>"##,
        width - right
    );
    let y_title = if bytes { format!("{name} ({})", suffix.trim()) } else { format!("{name} (allocations)") };
    let _ = writeln!(
        s,
        r#"<text class="axis-title" x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>"#,
        (top + bottom) / 2.0,
        (top + bottom) / 2.0,
        xml(&y_title)
    );
    let _ = writeln!(
        s,
        r#"<text class="axis-title" x="{:.1}" y="{:.1}" text-anchor="middle">time since the first dump (seconds)</text>"#,
        (left + width - right) / 2.0,
        bottom + 38.0
    );
    // Lines and points.
    for (i, (ser, pts)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let dash = if i >= PALETTE.len() { r#" stroke-dasharray="6 3""# } else { "" };
        let _ = writeln!(s, r#"<g class="series" data-pid="{}" data-heap="{}">"#, ser.pid, xml(&ser.heap));
        let coords: Vec<String> = pts.iter().map(|(x, y, _)| format!("{:.1},{:.1}", px(*x), py(*y as f64))).collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
            coords.join(" ")
        );
        for (x, y, p) in pts {
            let shown = if bytes { format!("{} ({y} bytes)", human_bytes(*y)) } else { y.to_string() };
            let when = p.timestamp.map(|t| format!(" at {t} ns")).unwrap_or_default();
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{}, dump {}{when} (+{x:.3} s): {name} {}</title></circle>"#,
                px(*x),
                py(*y as f64),
                xml(&ser.label()),
                p.dump,
                xml(&shown)
            );
        }
        let _ = writeln!(s, "</g>");
    }
    // Legend.
    let _ = writeln!(s, r#"<g class="legend">"#);
    for (i, (ser, pts)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let dash = if i >= PALETTE.len() { r#" stroke-dasharray="6 3""# } else { "" };
        let y = legend_top + row * i as f64;
        let last = pts.last().map(|(_, v, _)| *v);
        let last = match last {
            Some(v) if bytes => format!(" — last {}", human_bytes(v)),
            Some(v) => format!(" — last {v}"),
            None => " — no timed dumps".to_owned(),
        };
        let _ = writeln!(
            s,
            r#"<line x1="{left:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="3"{dash}/><text class="legend-label" x="{:.1}" y="{:.1}">{}</text>"#,
            left + 24.0,
            left + 32.0,
            y + 4.0,
            xml(&format!("{}{last}", ser.label()))
        );
    }
    let _ = writeln!(s, "</g>");
    s.push_str("</svg>\n");
    s.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_exact() {
        assert_eq!(seconds_text(1_250_000_000, 250_000_000), "1.000000000");
        assert_eq!(seconds_text(250_000_001, 250_000_000), "0.000000001");
        assert_eq!(seconds_text(0, 1_500_000_000), "-1.500000000");
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("libc.malloc"), "libc.malloc");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn ticks_are_round() {
        let t = ticks(0.0, 2_240_512.0, 1_048_576.0, " MiB");
        let labels: Vec<&str> = t.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(labels, ["0.0 MiB", "0.5 MiB", "1.0 MiB", "1.5 MiB", "2.0 MiB", "2.5 MiB"]);
        let t = ticks(0.0, 4.0, 1.0, "");
        assert_eq!(t.iter().map(|x| x.1.as_str()).collect::<Vec<_>>(), ["0", "1", "2", "3", "4"]);
        assert_eq!(ticks(0.0, 0.0, 1.0, "").len(), 2);
    }
}
