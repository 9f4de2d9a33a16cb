//! `heapconv timeline`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use heapconv::Error;
use heapconv::pipeline::batch::Wanted;
use heapconv::pipeline::load::refuse_pprof;
use heapconv::pipeline::outcome::Findings;
use heapconv::pipeline::timeline::{TimelineFormat, TimelineOptions, run_timeline, timeline_one};

use crate::cli::args::{DecodeArgs, HeapArg, PidArg, StrictArgs, ValueArg};
use crate::cli::batch::{self, BatchArgs, Plan, out_dir};
use crate::cli::ui::{self, Ui};

#[derive(ValueEnum, Clone, Copy, Debug)]
enum TimelineToArg {
    /// One row per dump, with a header row.
    Csv,
    /// The `heapconv-timeline` JSON document (version 1, see docs/views.md).
    Json,
    /// A line chart: one line per process and heap.
    Svg,
}

#[derive(Args, Debug)]
pub(crate) struct TimelineArgs {
    /// The trace (`-` for standard input; gzip is detected). Several traces, directories or
    /// patterns: a batch, writing `-o DIR/<name>.csv` (`.json`, `.svg`) per trace.
    #[arg(required_unless_present = "inputs_from", value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "csv")]
    to: TimelineToArg,
    /// Output file, `-` for standard output. Default: standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    pid: PidArg,
    #[command(flatten)]
    heap: HeapArg,
    /// The value the SVG chart draws (CSV and JSON have all four).
    #[arg(long, value_enum, default_value = "unreleased-size")]
    value: ValueArg,
    /// Chart title. Default: the input's name and the value.
    #[arg(long)]
    title: Option<String>,
    #[command(flatten)]
    decode: DecodeArgs,
    #[command(flatten)]
    strict: StrictArgs,
    #[command(flatten)]
    pub(crate) batch: BatchArgs,
}

impl TimelineArgs {
    /// Arguments -> pipeline options.
    pub(crate) fn options(&self) -> TimelineOptions {
        let mut opts = TimelineOptions {
            format: match self.to {
                TimelineToArg::Csv => TimelineFormat::Csv,
                TimelineToArg::Json => TimelineFormat::Json,
                TimelineToArg::Svg => TimelineFormat::Svg,
            },
            pids: self.pid.pids(),
            heap: self.heap.heap.clone(),
            decode: self.decode.options(),
            ..TimelineOptions::default()
        };
        opts.chart.value = self.value.kind();
        opts.chart.title = self.title.clone();
        opts
    }
}

pub(crate) fn run(ui: &Ui, a: TimelineArgs) -> Result<u8, Error> {
    let opts = a.options();
    if a.traces.len() > 1 || a.batch.asked(&a.traces) {
        let out = out_dir(a.output.as_deref(), "timeline")?;
        let plan = Plan {
            command: "timeline",
            positional: &a.traces,
            args: &a.batch,
            out: &out,
            wanted: Wanted::Traces,
            file_exts: &[opts.format.extension()],
            min_symbolized: None,
            strict: a.strict.strict,
            proguard: None,
        };
        return batch::run(ui, &plan, &|i| {
            refuse_pprof(&i.path, "timeline")?;
            timeline_one(i, &out, &opts)
        });
    }
    let trace = &a.traces[0];
    let run = run_timeline(trace, &opts)?;
    let out = a.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    ui::write_output(&out, &run.bytes, false, std::slice::from_ref(trace))?;
    if out.as_os_str() != "-" {
        let dumps: usize = run.timeline.series.iter().map(|s| s.points.len()).sum();
        ui.info(&format!(
            "timeline of {} dump(s) in {} process/heap series: wrote {}",
            dumps,
            run.timeline.series.len(),
            out.display()
        ));
    }
    let damaged = ui.problems(&run.report);
    Ok(a.strict.exit(Findings { partial: damaged, ..Findings::default() }, &run.report.data_loss()))
}
