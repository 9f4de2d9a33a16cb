//! The `heapconv` command-line program: a thin layer over [`heapconv::pipeline`].
//!
//! Exit codes: 0 success; 1 bad input, no data or I/O error; 2 usage error; 3 partial result
//! (the input is damaged or a dump never finished: what was complete was converted and written);
//! 4 symbolization coverage below `--min-symbolized`; 5 growth above `diff --fail-if-growth`;
//! 6 `--strict` and the input says data was lost (outputs are written).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use heapconv::decode::ddm_alloc_records::{DdmOptions, OrderChoice};
use heapconv::decode::hprof::HprofConvOptions;
use heapconv::decode::perfetto::DecodeOptions;
use heapconv::encode::summary::{
    ddm_inspect_json, ddm_inspect_text, hprof_inspect_json, hprof_inspect_text, inspect_json, inspect_text,
};
use heapconv::model::{TraceReport, ValueKind};
use heapconv::pipeline::{self, ConvertOptions, Destination, DumpSelect, Format, Inspection, ProfileOptions};
use heapconv::symbolize::{SymbolizeOptions, SymbolizeReport};
use heapconv::{Error, ErrorKind};
use main_batch::{BatchArgs, InputListArgs};

mod main_batch;

const EXIT_OK: u8 = 0;
const EXIT_INPUT: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_PARTIAL: u8 = 3;
const EXIT_SYMBOLS_GATE: u8 = 4;
const EXIT_GROWTH_GATE: u8 = 5;
const EXIT_STRICT: u8 = 6;

/// `--strict` of every converting command.
#[derive(Args, Debug, Default, Clone, Copy)]
struct StrictArgs {
    /// Fail with exit code 6 when the input says data was lost: damage, dumps that never
    /// finished, data-loss flags (previous_packet_dropped, index gaps, buffer_overran,
    /// buffer_corrupted, client_error, hit_guardrail, rejected_concurrent, …), incomplete heap
    /// graphs. Outputs are written all the same; a failed gate (exit 4 or 5) wins.
    #[arg(long)]
    strict: bool,
}

impl StrictArgs {
    /// The exit code once `--strict` has seen what was lost: `code` unless it is 0 or 3 and
    /// something was lost, then 6 (with one error line per loss).
    fn exit(self, code: u8, lost: &[String]) -> u8 {
        if !self.strict || lost.is_empty() || !(code == EXIT_OK || code == EXIT_PARTIAL) {
            return code;
        }
        for l in lost {
            eprintln!("heapconv: error: --strict: data lost: {l}");
        }
        EXIT_STRICT
    }
}

/// The exit code of a run that got through: a failed gate wins over a partial result.
fn exit_code(gate_ok: bool, damaged: bool) -> u8 {
    if !gate_ok {
        EXIT_SYMBOLS_GATE
    } else if damaged {
        EXIT_PARTIAL
    } else {
        EXIT_OK
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "heapconv",
    version,
    about = "Convert memory profiles (Perfetto heapprofd traces, Android DDM allocation records) to pprof, folded stacks, flame graphs and JSON"
)]
struct Cli {
    /// Print more (-v) or nothing but errors (-q).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Print nothing but errors.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write one pprof per (pid, dump, heap), as `traceconv profile --alloc` does.
    Profile(ProfileArgs),
    /// Convert dumps, or DDM allocation records (several captures are merged), to pprof,
    /// folded stacks, a flame graph SVG or a JSON summary.
    Convert(ConvertArgs),
    /// Show what a trace holds (sequences, processes, heaps, dumps, flags and problems), a
    /// DDM capture (entries, threads, top classes and methods, stack depths), or an HPROF heap
    /// dump (records, heaps, classes, objects, roots, damage).
    Inspect(InspectArgs),
    /// Write a Java heap graph of a Perfetto trace (java_hprof data source) as an hprof heap
    /// dump (`JAVA PROFILE 1.0.2`, or Android's 1.0.3 with --android).
    Hprof(HprofArgs),
    /// Convert an Android heap dump (JAVA PROFILE 1.0.3) to the standard format (1.0.2) that
    /// JVM tools read, byte for byte as Android's `hprof-conv` writes it (except for
    /// PRIMITIVE_ARRAY_NODATA records, which hprof-conv corrupts and heapconv writes as arrays
    /// of zeros).
    #[command(name = "hprof-conv")]
    HprofConv(HprofConvArgs),
    /// Symbolize a trace's native frames offline and write Perfetto ModuleSymbols packets, as
    /// `traceconv symbolize` does (`cat trace symbols > symbolized`).
    Symbolize(SymbolizeArgs),
    /// Merge profiles of any kind (heapprofd traces, DDM captures, pprof files) into one:
    /// identical stacks summed, as `go tool pprof -proto A B` merges, in any order.
    Merge(MergeArgs),
    /// Compare two profiles (any kind, or several dumps merged): NEW minus BASE as pprof (for
    /// `go tool pprof`), differential folded stacks, a differential flame graph or a JSON
    /// report of what grew; `--fail-if-growth` gates CI (exit code 5).
    Diff(DiffArgs),
    /// A flat and cumulative table of the largest functions, mappings or stacks, as
    /// `go tool pprof -top` prints (several inputs are merged first).
    Top(TopArgs),
    /// Per process and heap, the totals of every dump of a trace over time (unreleased and
    /// total size and count) as CSV, JSON or an SVG line chart.
    Timeline(TimelineArgs),
    /// Write a synthetic heapprofd trace (for benchmarks and tests), as heapprofd writes them.
    #[command(hide = true)]
    Synth(SynthArgs),
    /// Symbolize addresses (hex, one per line on standard input) in one ELF file, printing one
    /// JSON line per address in llvm-symbolizer's `--output-style=JSON` shape.
    Addr2line(Addr2lineArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum TimelineToArg {
    /// One row per dump, with a header row.
    Csv,
    /// The `heapconv-timeline` JSON document (version 1, see the README).
    Json,
    /// A line chart: one line per process and heap.
    Svg,
}

#[derive(Args, Debug)]
struct TimelineArgs {
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
    /// Only this process.
    #[arg(long)]
    pid: Option<u64>,
    /// Only this heap (libc.malloc, com.android.art, …).
    #[arg(long)]
    heap: Option<String>,
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
    batch: BatchArgs,
}

#[derive(Args, Debug)]
struct Addr2lineArgs {
    /// The ELF file with DWARF (or a symbol table).
    #[arg(long)]
    obj: PathBuf,
}

#[derive(Args, Debug)]
struct SynthArgs {
    /// Output file.
    #[arg(short, long)]
    output: PathBuf,
    /// Distinct callstacks.
    #[arg(long, default_value_t = 1000)]
    callstacks: usize,
    /// Typical stack depth.
    #[arg(long, default_value_t = 30)]
    depth: usize,
    /// Dumps per process.
    #[arg(long, default_value_t = 4)]
    dumps: usize,
    /// Processes.
    #[arg(long, default_value_t = 2)]
    processes: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Wrap packets in compressed_packets bundles.
    #[arg(long)]
    compress: bool,
}

#[derive(Args, Debug, Default)]
struct SymbolArgs {
    /// Symbolize native frames from binaries and debug files under DIR (searched recursively
    /// by build id; repeatable). PERFETTO_BINARY_PATH (`:`-separated) is used too.
    #[arg(long = "symbol-dir", value_name = "DIR")]
    symbol_dirs: Vec<PathBuf>,
    /// Use a file found by path even if its build id differs from the trace's (or the trace
    /// has none). Symbols may then be wrong.
    #[arg(long)]
    ignore_build_id: bool,
    /// Fail (exit code 4) when fewer than PCT percent of native frames get symbols.
    #[arg(long, value_name = "PCT")]
    min_symbolized: Option<f64>,
}

impl SymbolArgs {
    fn options(&self, ui: &Ui) -> Option<SymbolizeOptions> {
        let mut dirs = self.symbol_dirs.clone();
        if let Some(env) = std::env::var_os("PERFETTO_BINARY_PATH") {
            dirs.extend(std::env::split_paths(&env).filter(|p| !p.as_os_str().is_empty()));
        }
        if dirs.is_empty() {
            // Without directories the gate counts the symbols the inputs already have.
            return self.min_symbolized.map(|_| SymbolizeOptions::default());
        }
        if self.ignore_build_id {
            ui.warn("--ignore-build-id: files are matched by path only; symbols may belong to another build");
        }
        let find_only = std::env::var("PERFETTO_SYMBOLIZER_MODE").as_deref() == Ok("find");
        Some(SymbolizeOptions { symbol_dirs: dirs, ignore_build_id: self.ignore_build_id, find_only })
    }
}

/// Prints the symbolization report; returns false when the coverage gate fails.
fn report_symbols(ui: &Ui, report: &SymbolizeReport, min: Option<f64>) -> bool {
    if !ui.quiet {
        eprintln!(
            "symbolized {} of {} native frames ({:.1}%), {:.1}% of bytes on fully symbolized stacks, {}",
            report.frames_symbolized,
            report.frames,
            report.frame_percent(),
            report.byte_percent(),
            if report.names_only() {
                "counting the names the input has (no --symbol-dir)".to_owned()
            } else {
                format!("from {} indexed file(s)", report.indexed_files)
            }
        );
        for m in &report.mappings {
            eprintln!(
                "  {:<48} {:<16} {:>5}/{:<5} {:>10} {:?}{}",
                m.path,
                if m.build_id.len() > 16 { &m.build_id[..16] } else { &m.build_id },
                m.symbolized,
                m.frames,
                heapconv::encode::labels::human_bytes(m.bytes),
                m.outcome,
                m.file.as_deref().map(|f| format!(" <- {f}")).unwrap_or_default()
            );
            if ui.verbose > 0 {
                for t in &m.tried {
                    eprintln!("      tried {t}");
                }
                for t in &m.mismatched {
                    eprintln!("      rejected (build id or CRC differs): {t}");
                }
            }
        }
    }
    match min {
        Some(pct) if report.frame_percent() < pct => {
            eprintln!(
                "heapconv: error: symbolization coverage {:.1}% is below --min-symbolized {pct}%",
                report.frame_percent()
            );
            false
        }
        _ => true,
    }
}

#[derive(Args, Debug)]
struct DecodeArgs {
    /// Largest expansion of a compressed_packets bundle, in MiB.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    max_bundle_mib: u64,
}

impl DecodeArgs {
    fn options(&self) -> DecodeOptions {
        DecodeOptions { max_bundle_bytes: self.max_bundle_mib << 20, ..DecodeOptions::default() }
    }
}

#[derive(Args, Debug)]
struct ProfileArgs {
    /// The trace (`-` for standard input; gzip is detected). Several traces, directories or
    /// patterns: a batch, each trace's files in `-o DIR/<name>/`.
    #[arg(required_unless_present = "inputs_from", value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Directory for the pprof files (created if needed).
    #[arg(long, short = 'o', default_value = ".")]
    output_dir: PathBuf,
    /// Only this process.
    #[arg(long)]
    pid: Option<u64>,
    /// Only dumps at these trace-clock timestamps (comma-separated).
    #[arg(long, value_delimiter = ',')]
    timestamps: Vec<i64>,
    /// Do not annotate ART frames ([jit], [aot], [interp], [common-frame]).
    #[arg(long)]
    no_annotations: bool,
    /// Write uncompressed .pb files, named exactly as traceconv names them.
    #[arg(long)]
    raw: bool,
    /// Convert the Java heap graphs instead (`traceconv profile --java-heap`): one
    /// `java_heap_dump.N.PID.pb` per dump, the shortest-path tree from the GC roots.
    #[arg(long)]
    java_heap: bool,
    #[command(flatten)]
    symbols: SymbolArgs,
    #[command(flatten)]
    decode: DecodeArgs,
    #[command(flatten)]
    batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ToArg {
    Pprof,
    Folded,
    Svg,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ByArg {
    Dominator,
    ShortestPath,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ViewArg {
    /// Bytes not freed at the dump.
    UnreleasedSize,
    /// Allocations not freed at the dump.
    UnreleasedCount,
    /// Bytes allocated since profiling started.
    TotalSize,
    /// Allocations since profiling started.
    TotalCount,
    /// Per process and heap, the dump with the highest total of --value, named in the output.
    Peak,
    /// Per stack, a newer dump minus an older one: each pair of consecutive dumps, or the pair
    /// --from/--until choose.
    Delta,
    /// The stacks whose --value grew at each of the last --leak-dumps dumps, with their values
    /// at the last dump.
    Leaks,
}

/// The sample value of `--value`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ValueArg {
    /// Bytes not freed at the dump.
    UnreleasedSize,
    /// Allocations not freed at the dump.
    UnreleasedCount,
    /// Bytes allocated since profiling started.
    TotalSize,
    /// Allocations since profiling started.
    TotalCount,
}

fn value_kind(v: ValueArg) -> ValueKind {
    match v {
        ValueArg::UnreleasedSize => ValueKind::UnreleasedSize,
        ValueArg::UnreleasedCount => ValueKind::UnreleasedCount,
        ValueArg::TotalSize => ValueKind::TotalSize,
        ValueArg::TotalCount => ValueKind::TotalCount,
    }
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum EntryOrderArg {
    /// Guess from the capture (thread ids, stack depths, a wrapped entry count).
    Auto,
    /// The first entry is the most recent allocation (ART, Android 6.0 and later).
    NewestFirst,
    /// The first entry is the oldest allocation (Dalvik, ART on Android 5.x).
    OldestFirst,
}

#[derive(Args, Debug)]
struct DdmArgs {
    /// DDM allocation records: which way the entries run.
    #[arg(long, value_enum, default_value = "auto")]
    entry_order: EntryOrderArg,
    /// DDM allocation records: keep only the N most recent allocations of each capture.
    #[arg(long, value_name = "N")]
    recent: Option<usize>,
    /// DDM allocation records: the VM's stack depth limit; stacks this deep get a
    /// `[truncated]` root frame. Default: the deepest stack of each capture.
    #[arg(long, value_name = "N")]
    max_depth: Option<usize>,
    /// DDM allocation records: do not add `[truncated]` root frames.
    #[arg(long)]
    no_truncation_marks: bool,
    /// DDM allocation records: do not add a leaf frame naming the allocated class.
    #[arg(long)]
    no_alloc_class_frame: bool,
}

impl DdmArgs {
    fn options(&self) -> DdmOptions {
        DdmOptions {
            order: match self.entry_order {
                EntryOrderArg::Auto => OrderChoice::Auto,
                EntryOrderArg::NewestFirst => OrderChoice::NewestFirst,
                EntryOrderArg::OldestFirst => OrderChoice::OldestFirst,
            },
            recent: self.recent,
            max_depth: self.max_depth,
            truncation_marks: !self.no_truncation_marks,
            alloc_class_frame: !self.no_alloc_class_frame,
            ..DdmOptions::default()
        }
    }
}

#[derive(Args, Debug)]
struct ConvertArgs {
    /// The trace, or one or more DDM allocation-record captures (`.alloc`, a REAL chunk or
    /// JDWP packets; several are merged into one profile). `-` for standard input; gzip is
    /// detected. Directories, patterns, or several inputs that are not all DDM captures with
    /// `-o DIR/`: a batch, each input converted on its own.
    #[arg(required_unless_present = "inputs_from", value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "pprof")]
    to: ToArg,
    /// Output file, `-` for standard output, or a directory (existing, or ending in `/`) for
    /// one file per dump. Default: standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Only this process.
    #[arg(long)]
    pid: Option<u64>,
    /// Only this heap (libc.malloc, com.android.art, …).
    #[arg(long)]
    heap: Option<String>,
    /// Which dump of each (pid, heap): `last`, `all`, or its 1-based number.
    #[arg(long, default_value = "last")]
    dump: String,
    /// What to show: a sample value (shown by folded stacks and flame graphs, opened first by
    /// pprof viewers), or a view across the dumps of each process and heap of a trace with
    /// continuous dumps (`peak`, `delta`, `leaks`; their value is --value).
    #[arg(long, value_enum, default_value = "unreleased-size")]
    view: ViewArg,
    /// The sample value shown, and the one `peak`, `delta` and `leaks` rank and compare.
    /// Default: unreleased-size (or the value --view names).
    #[arg(long, value_enum)]
    value: Option<ValueArg>,
    /// --view delta: the older dump of the pair is the last dump at or before this trace-clock
    /// time in ns (default: the first dump). Without --from and --until: every pair of
    /// consecutive dumps.
    #[arg(long, value_name = "T", visible_alias = "from-time")]
    from: Option<i64>,
    /// --view delta: the newer dump of the pair is the last dump at or before this trace-clock
    /// time in ns (default: the last dump). (`--to` names the output format.)
    #[arg(long, value_name = "T", visible_alias = "to-time")]
    until: Option<i64>,
    /// --view leaks: how many of the last dumps a stack must have grown across (K >= 2). Default: 3.
    #[arg(long, value_name = "K")]
    leak_dumps: Option<usize>,
    /// Do not annotate ART frames.
    #[arg(long)]
    no_annotations: bool,
    /// For a Java heap (an HPROF heap dump, or a trace's heap graphs): the tree the profile
    /// shows (`dominator`: widths are retained sizes; `shortest-path`: traceconv's tree from
    /// the GC roots). `--to json` writes the top report (classes by retained size, largest
    /// retainers and their paths from GC roots).
    #[arg(long, value_enum, default_value = "dominator")]
    by: ByArg,
    /// Convert the trace's Java heap graphs (java_hprof data source) instead of its heapprofd
    /// dumps; --pid and --dump select them (the last dump of each process by default). A trace
    /// with no heapprofd dump has its heap graphs converted without this flag.
    #[arg(long)]
    java_heap: bool,
    #[command(flatten)]
    symbols: SymbolArgs,
    #[command(flatten)]
    decode: DecodeArgs,
    #[command(flatten)]
    ddm: DdmArgs,
    #[command(flatten)]
    batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

/// Which dumps of traces go into `merge`, `diff` and `top`, and how inputs are read.
#[derive(Args, Debug)]
struct SelectArgs {
    /// Traces: only this process.
    #[arg(long)]
    pid: Option<u64>,
    /// Traces: only this heap (libc.malloc, com.android.art, …).
    #[arg(long)]
    heap: Option<String>,
    /// Traces: which dump of each (pid, heap): `last`, `all`, or its 1-based number.
    #[arg(long, default_value = "last")]
    dump: String,
    /// Do not annotate ART frames of traces.
    #[arg(long)]
    no_annotations: bool,
    /// Keep only these sample types, in this order (comma-separated): type names
    /// (`inuse_space`) or meanings (`total-count`, `total-size`, `unreleased-count`,
    /// `unreleased-size`). Needed when inputs have different sample types.
    #[arg(long, value_delimiter = ',', value_name = "TYPES")]
    sample_types: Vec<String>,
    /// Largest pprof input (decompressed), in MiB.
    #[arg(long, default_value_t = 4096, value_name = "MIB")]
    max_pprof_mib: u64,
    #[command(flatten)]
    symbols: SymbolArgs,
    #[command(flatten)]
    decode: DecodeArgs,
    #[command(flatten)]
    ddm: DdmArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

impl SelectArgs {
    fn load(&self, ui: &Ui) -> Result<pipeline::combine::LoadOptions, Error> {
        Ok(pipeline::combine::LoadOptions {
            pids: self.pid.into_iter().collect(),
            heap: self.heap.clone(),
            dump: parse_dump(&self.dump)?,
            annotations: !self.no_annotations,
            decode: self.decode.options(),
            symbolize: self.symbols.options(ui),
            ddm: self.ddm.options(),
            pprof: heapconv::decode::pprof::PprofDecodeOptions { max_bytes: self.max_pprof_mib << 20 },
            ..Default::default()
        })
    }

    fn merge(&self) -> heapconv::merge::MergeOptions {
        heapconv::merge::MergeOptions {
            sample_types: if self.sample_types.is_empty() {
                None
            } else {
                Some(self.sample_types.iter().map(|s| heapconv::merge::TypeSelector::parse(s)).collect())
            },
        }
    }
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// Inputs: heapprofd traces (the selected dumps of every process and heap), DDM captures
    /// and pprof files (gzip or not), in any mix. `-` for standard input. Directories and
    /// patterns stand for the inputs in them.
    #[arg(required_unless_present = "inputs_from", value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Output file, `-` for standard output.
    #[arg(short, long)]
    output: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "pprof")]
    to: ToArg,
    #[command(flatten)]
    select: SelectArgs,
    #[command(flatten)]
    list: InputListArgs,
}

#[derive(Args, Debug)]
struct DiffArgs {
    /// The baseline profile (any kind heapconv reads).
    base: PathBuf,
    /// The profile to compare with it.
    new: PathBuf,
    /// Output file, `-` for standard output.
    #[arg(short, long)]
    output: PathBuf,
    /// Output format: pprof (NEW minus BASE, for `go tool pprof`), folded (`stack BEFORE
    /// AFTER`), svg (differential flame graph) or json (what grew most).
    #[arg(long, value_enum, default_value = "pprof")]
    to: ToArg,
    /// Scale BASE to NEW's total before comparing (outputs only; the gate compares totals as
    /// they are).
    #[arg(long)]
    normalize: bool,
    /// Exit with code 5 when the total of the compared sample type (bytes) grew by more than
    /// this: a size (`10MB`, `512KiB`, `1000`; K/M/G are powers of 1024) or a percentage of
    /// BASE (`5%`).
    #[arg(long, value_name = "BYTES|PCT")]
    fail_if_growth: Option<String>,
    /// Stacks and functions listed by `--to json`.
    #[arg(long, default_value_t = 20, value_name = "N")]
    top: usize,
    #[command(flatten)]
    select: SelectArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum TopByArg {
    Function,
    Mapping,
    Stack,
    /// Classes of a Java heap by retained size (the only grouping, and the default, for an
    /// HPROF heap dump or a trace's heap graphs).
    Class,
}

#[derive(Args, Debug)]
struct TopArgs {
    /// Inputs (any kind; several are merged first; directories and patterns stand for the
    /// inputs in them).
    #[arg(required_unless_present = "inputs_from", value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// What to group by. Default: function; class for a Java heap (an HPROF heap dump, or a
    /// trace's heap graphs).
    #[arg(long, value_enum)]
    by: Option<TopByArg>,
    /// Rows to show (0: all). For a Java heap: classes.
    #[arg(short = 'n', long = "count", default_value_t = 20, value_name = "N")]
    count: usize,
    /// Show the trace's Java heap graphs (java_hprof data source) rather than its heapprofd
    /// dumps; --pid and --dump select one. A trace with no heapprofd dump has its heap graphs
    /// shown without this flag.
    #[arg(long)]
    java_heap: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The sample type shown: a type name or a meaning (`unreleased-size`, …). Default: the
    /// profile's default type.
    #[arg(long, value_name = "T")]
    sample_type: Option<String>,
    #[command(flatten)]
    select: SelectArgs,
    #[command(flatten)]
    list: InputListArgs,
}

/// Where `merge` and `diff` write: `-` is standard output (never a terminal for pprof).
fn write_output(path: &std::path::Path, bytes: &[u8], binary: bool, inputs: &[PathBuf]) -> Result<(), Error> {
    if path.as_os_str() == "-" {
        if binary && std::io::stdout().is_terminal() {
            return Err(Error::new(
                ErrorKind::Usage,
                "refusing to write binary pprof to a terminal; use -o FILE or redirect standard output",
            ));
        }
        let mut so = std::io::stdout().lock();
        so.write_all(bytes).map_err(|e| Error::io("writing standard output", e))?;
        return so.flush().map_err(|e| Error::io("writing standard output", e));
    }
    heapconv::output::write_atomic(path, bytes, inputs)
}

/// Reports what the inputs of a merge held; returns (symbolization gate passed, damaged).
/// Warnings name the lost data of the dumps taken from each trace (`load`'s selection) only.
fn report_inputs(
    ui: &Ui,
    inputs: &[pipeline::combine::InputInfo],
    load: &pipeline::combine::LoadOptions,
    min_symbolized: Option<f64>,
) -> (bool, bool) {
    let mut gate_ok = true;
    let mut damaged = false;
    for i in inputs {
        if ui.verbose > 0 {
            ui.info(&format!("{}: {:?}, {} profile(s)", i.name, i.kind, i.profiles));
        }
        if let Some(r) = &i.report {
            let filter = pipeline::DumpFilter::load(load, r);
            damaged |= report_problems_of(ui, r, &|d| filter.keeps(d));
        }
        if let Some(s) = &i.symbols {
            gate_ok &= report_symbols(ui, s, min_symbolized);
        }
    }
    (gate_ok, damaged)
}

/// What the inputs of a merge, diff or top say was lost (for `--strict`), each line naming
/// its input.
/// What `--strict` judges of the inputs: of each trace, the dumps `load` selects.
fn inputs_data_loss(inputs: &[pipeline::combine::InputInfo], load: &pipeline::combine::LoadOptions) -> Vec<String> {
    inputs
        .iter()
        .filter_map(|i| i.report.as_ref().map(|r| (i, r)))
        .flat_map(|(i, r)| {
            let filter = pipeline::DumpFilter::load(load, r);
            r.data_loss_of(&|d| filter.keeps(d)).into_iter().map(move |l| format!("{}: {l}", i.name))
        })
        .collect()
}

/// The inputs of `merge` and `top`: directories and patterns expanded, `--inputs-from` added.
fn expand_inputs(inputs: &[PathBuf], list: &InputListArgs) -> Result<Vec<PathBuf>, Error> {
    use heapconv::pipeline::batch::{Wanted, expand_args};
    let all = expand_args(inputs, &list.inputs_from, Wanted::Mergeable)?;
    if all.is_empty() {
        return Err(Error::new(ErrorKind::Usage, "no input given"));
    }
    Ok(all)
}

fn format_of(to: ToArg) -> Format {
    match to {
        ToArg::Pprof => Format::Pprof,
        ToArg::Folded => Format::Folded,
        ToArg::Svg => Format::Svg,
        ToArg::Json => Format::Json,
    }
}

#[derive(Args, Debug)]
struct HprofArgs {
    /// The trace (gzip is detected). Several traces, directories or patterns: a batch, each
    /// trace's dumps in `-o DIR/<name>/`.
    #[arg(required_unless_present = "inputs_from", value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Output file, `-` for standard output, or a directory (existing, or ending in `/`) for
    /// one `java_heap_dump.N.PID.hprof` per dump.
    #[arg(short, long)]
    output: PathBuf,
    /// Only this process.
    #[arg(long)]
    pid: Option<u64>,
    /// Only dumps at these trace-clock timestamps (comma-separated).
    #[arg(long, value_delimiter = ',')]
    timestamps: Vec<i64>,
    /// Write Android's `JAVA PROFILE 1.0.3` (heap-info records, Android root tags), which
    /// `hprof-conv` and Android Studio read.
    #[arg(long)]
    android: bool,
    /// Print what was written as JSON on standard output.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    decode: DecodeArgs,
    #[command(flatten)]
    batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

#[derive(Args, Debug)]
struct SymbolizeArgs {
    /// The trace (`-` for standard input; gzip is detected). Several traces, directories or
    /// patterns: a batch, writing `-o DIR/<name>.symbols.pftrace` per trace.
    #[arg(required_unless_present = "inputs_from", value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Output file for the ModuleSymbols packets (`-` or none: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Print the report as JSON on standard error.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    symbols: SymbolArgs,
    #[command(flatten)]
    decode: DecodeArgs,
    #[command(flatten)]
    batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

#[derive(Args, Debug)]
struct HprofConvArgs {
    /// INPUT OUTPUT: the Android heap dump (`-` for standard input; gzip is detected) and the
    /// output file (`-` for standard output; written atomically, never over the input). With
    /// `-o DIR`: any number of heap dumps, directories or patterns, each written to
    /// `DIR/<name>.hprof`.
    #[arg(required_unless_present = "inputs_from", value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Output directory: convert every PATH into it (a batch).
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Leave out the instances and arrays of the zygote and image heaps (class dumps and roots
    /// stay), as `hprof-conv -z`.
    #[arg(short = 'z')]
    app_only: bool,
    #[command(flatten)]
    batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

#[derive(Args, Debug)]
struct InspectArgs {
    /// The trace, DDM allocation-record capture or HPROF heap dump (`-` for standard input;
    /// gzip is detected).
    input: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    decode: DecodeArgs,
    #[command(flatten)]
    ddm: DdmArgs,
}

fn view_kind(v: ViewArg) -> ValueKind {
    match v {
        ViewArg::UnreleasedSize => ValueKind::UnreleasedSize,
        ViewArg::UnreleasedCount => ValueKind::UnreleasedCount,
        ViewArg::TotalSize => ValueKind::TotalSize,
        ViewArg::TotalCount => ValueKind::TotalCount,
        ViewArg::Peak | ViewArg::Delta | ViewArg::Leaks => ValueKind::UnreleasedSize,
    }
}

/// The sample value and the view across dumps (if any) that `--view`, `--value`, `--from`,
/// `--until` and `--leak-dumps` ask for.
fn view_choice(a: &ConvertArgs) -> Result<(ValueKind, Option<pipeline::views::DumpView>), Error> {
    use pipeline::views::DumpView;
    let usage = |m: &str| Error::new(ErrorKind::Usage, m.to_owned());
    let across = match a.view {
        ViewArg::Peak => Some(DumpView::Peak),
        ViewArg::Delta => Some(DumpView::Delta { from: a.from, until: a.until }),
        ViewArg::Leaks => Some(DumpView::Leaks { dumps: a.leak_dumps.unwrap_or(3) }),
        _ => None,
    };
    if a.view != ViewArg::Delta && (a.from.is_some() || a.until.is_some()) {
        return Err(usage("--from and --until choose the dumps of --view delta"));
    }
    if a.view != ViewArg::Leaks && a.leak_dumps.is_some() {
        return Err(usage("--leak-dumps goes with --view leaks"));
    }
    let value = match (across, a.value) {
        (Some(_), v) => v.map_or(ValueKind::UnreleasedSize, value_kind),
        (None, Some(v)) if a.view != ViewArg::UnreleasedSize && value_kind(v) != view_kind(a.view) => {
            return Err(usage("--view names a value and --value another; give one of them"));
        }
        (None, Some(v)) => value_kind(v),
        (None, None) => view_kind(a.view),
    };
    Ok((value, across))
}

fn parse_dump(s: &str) -> Result<DumpSelect, Error> {
    match s {
        "last" => Ok(DumpSelect::Last),
        "all" => Ok(DumpSelect::All),
        n => match n.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(DumpSelect::Nth(n)),
            _ => Err(Error::new(ErrorKind::Usage, format!("--dump takes last, all or a number from 1, not {s:?}"))),
        },
    }
}

struct Ui {
    verbose: u8,
    quiet: bool,
}

impl Ui {
    fn warn(&self, msg: &str) {
        if !self.quiet {
            eprintln!("heapconv: warning: {msg}");
        }
    }
    fn info(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }
}

/// Prints what a decode found that the user must know; returns true when the input is damaged.
fn report_problems(ui: &Ui, report: &TraceReport) -> bool {
    report_problems_of(ui, report, &|_| true)
}

/// [`report_problems`], with the data-loss flags of the dumps `keep` accepts only (the dumps
/// a command converts).
fn report_problems_of(ui: &Ui, report: &TraceReport, keep: &dyn Fn(&heapconv::model::DumpReport) -> bool) -> bool {
    for d in report.dumps.iter().filter(|d| keep(d)) {
        let loss = d.flags.data_loss();
        if !loss.is_empty() {
            ui.warn(&format!("pid {} heap {} dump {}: {}", d.pid, d.heap, d.index + 1, loss.join(", ")));
        }
        if d.timestamp.is_some() && !d.timestamp_converted && ui.verbose > 0 {
            ui.warn(&format!(
                "pid {} heap {} dump {}: no clock snapshot; the timestamp is the raw producer clock",
                d.pid,
                d.heap,
                d.index + 1
            ));
        }
    }
    if ui.verbose > 0 {
        for p in &report.problems {
            ui.warn(&p.message);
        }
    } else if !report.problems.is_empty() {
        ui.warn(&format!("{} problem(s) found in the input; `heapconv inspect` lists them", report.problems.len()));
    }
    if report.unfinished_dumps > 0 {
        ui.warn(&format!(
            "{} dump(s) never finished (the trace ends inside a dump chain); they were not converted",
            report.unfinished_dumps
        ));
    }
    if let Some(d) = &report.damage {
        ui.warn(&format!("input damaged, result is partial: {d}"));
    }
    report.is_partial()
}

fn progress_bar(ui: &Ui) -> Option<indicatif::ProgressBar> {
    if ui.quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message("decoding");
    Some(pb)
}

/// `convert --view peak|delta|leaks`: one trace, its view across dumps written, the
/// attribution of every output printed (standard error).
fn run_view(
    ui: &Ui,
    inputs: &[PathBuf],
    dest: &Destination,
    opts: &ConvertOptions,
    view: pipeline::views::DumpView,
    min_symbolized: Option<f64>,
    strict: StrictArgs,
) -> Result<u8, Error> {
    let [input] = inputs else {
        return Err(Error::new(
            ErrorKind::Usage,
            format!("--view {} reads one trace with continuous dumps, not {} inputs", view.name(), inputs.len()),
        ));
    };
    let run = pipeline::views::run_view(input, dest, opts, view)?;
    let mut stdout = std::io::stdout().lock();
    for (path, bytes) in &run.outputs {
        match path {
            None => stdout.write_all(bytes).map_err(|e| Error::io("writing standard output", e))?,
            Some(p) if ui.verbose > 0 => ui.info(&format!("wrote {}", p.display())),
            Some(_) => {}
        }
    }
    stdout.flush().map_err(|e| Error::io("writing standard output", e))?;
    for n in &run.notes {
        ui.info(n);
    }
    if run.outputs.is_empty() {
        ui.info("nothing written");
    }
    let damaged = report_problems(ui, &run.report);
    let gate_ok = run.symbols.as_ref().is_none_or(|r| report_symbols(ui, r, min_symbolized));
    Ok(strict.exit(exit_code(gate_ok, damaged), &run.report.data_loss()))
}

fn run(cli: Cli) -> Result<u8, Error> {
    let ui = Ui { verbose: cli.verbose, quiet: cli.quiet };
    match cli.command {
        Command::Profile(a) => {
            let opts = ProfileOptions {
                output_dir: a.output_dir.clone(),
                pids: a.pid.into_iter().collect(),
                timestamps: a.timestamps.clone(),
                annotations: !a.no_annotations,
                raw: a.raw,
                decode: a.decode.options(),
                symbolize: a.symbols.options(&ui),
            };
            if a.traces.len() > 1 || a.batch.asked(&a.traces) {
                return main_batch::profile(&ui, &a, &opts);
            }
            let trace = &a.traces[0];
            pipeline::combine::refuse_pprof(trace, "profile")?;
            let pb = progress_bar(&ui);
            let tick = |n: usize| {
                if let Some(pb) = &pb {
                    pb.set_message(format!("{n} profile(s) encoded"));
                    pb.tick();
                }
            };
            let run = if a.java_heap {
                pipeline::run_java_heap_profile(trace, &opts)?
            } else {
                pipeline::run_profile(trace, &opts, &tick)?
            };
            if let Some(pb) = pb {
                pb.finish_and_clear();
            }
            let filter = pipeline::DumpFilter::profile(&opts, &run.report);
            let keep = |d: &heapconv::model::DumpReport| filter.keeps(d);
            let damaged = report_problems_of(&ui, &run.report, &keep);
            let gate_ok = run.symbols.as_ref().is_none_or(|r| report_symbols(&ui, r, a.symbols.min_symbolized));
            let lost = run.report.data_loss_of(&keep);
            if run.written.is_empty() {
                ui.info("No profile matched; nothing written.");
            } else {
                ui.info(&format!("Wrote {} profile(s) to {}", run.written.len(), opts.output_dir.display()));
                if ui.verbose > 0 {
                    for w in &run.written {
                        ui.info(&format!("  {}", w.display()));
                    }
                }
            }
            Ok(a.strict.exit(exit_code(gate_ok, damaged), &lost))
        }
        Command::Convert(a) => {
            let format = match a.to {
                ToArg::Pprof => Format::Pprof,
                ToArg::Folded => Format::Folded,
                ToArg::Svg => Format::Svg,
                ToArg::Json => Format::Json,
            };
            let (value, across) = view_choice(&a)?;
            let opts = ConvertOptions {
                format,
                pids: a.pid.into_iter().collect(),
                heap: a.heap.clone(),
                dump: parse_dump(&a.dump)?,
                view: value,
                annotations: !a.no_annotations,
                decode: a.decode.options(),
                symbolize: a.symbols.options(&ui),
                ddm: a.ddm.options(),
                heap_tree: match a.by {
                    ByArg::Dominator => pipeline::HeapTree::Dominator,
                    ByArg::ShortestPath => pipeline::HeapTree::ShortestPath,
                },
                java_heap: a.java_heap,
            };
            if main_batch::convert_is_batch(&a) {
                return main_batch::convert(&ui, &a, &opts, across);
            }
            let dest = match &a.output {
                None => Destination::Stdout,
                Some(p) if p.as_os_str() == "-" => Destination::Stdout,
                Some(p) if p.is_dir() || p.to_string_lossy().ends_with('/') => Destination::Dir(p.clone()),
                Some(p) => Destination::File(p.clone()),
            };
            if dest == Destination::Stdout && format.is_binary() && std::io::stdout().is_terminal() {
                return Err(Error::new(
                    ErrorKind::Usage,
                    "refusing to write binary pprof to a terminal; use -o FILE or redirect standard output",
                ));
            }
            if let Some(view) = across {
                return run_view(&ui, &a.inputs, &dest, &opts, view, a.symbols.min_symbolized, a.strict);
            }
            let run = pipeline::run_convert_inputs(&a.inputs, &dest, &opts)?;
            let mut stdout = std::io::stdout().lock();
            for (path, bytes) in &run.outputs {
                match path {
                    None => stdout.write_all(bytes).map_err(|e| Error::io("writing standard output", e))?,
                    Some(p) if ui.verbose > 0 => ui.info(&format!("wrote {}", p.display())),
                    Some(_) => {}
                }
            }
            stdout.flush().map_err(|e| Error::io("writing standard output", e))?;
            // Warnings and --strict judge the dumps converted, not the whole trace.
            let filter = pipeline::DumpFilter::convert(&opts, &run.report);
            let keep = |d: &heapconv::model::DumpReport| filter.keeps(d);
            let damaged = report_problems_of(&ui, &run.report, &keep);
            let gate_ok = run.symbols.as_ref().is_none_or(|r| report_symbols(&ui, r, a.symbols.min_symbolized));
            Ok(a.strict.exit(exit_code(gate_ok, damaged), &run.report.data_loss_of(&keep)))
        }
        Command::Merge(a) => {
            let opts = pipeline::combine::MergeRunOptions {
                load: a.select.load(&ui)?,
                merge: a.select.merge(),
                format: format_of(a.to),
            };
            let inputs = expand_inputs(&a.inputs, &a.list)?;
            let (profile, infos) = if opts.format == Format::Pprof && a.output.as_os_str() != "-" {
                // Written as it is encoded.
                pipeline::combine::run_merge_pprof_to(&inputs, &opts, &a.output)?
            } else {
                let run = pipeline::combine::run_merge(&inputs, &opts)?;
                let mut clock = heapconv::timing::Phases::start("merge");
                write_output(&a.output, &run.bytes, opts.format.is_binary(), &inputs)?;
                clock.done("write");
                (run.profile, run.inputs)
            };
            let (gate_ok, damaged) = report_inputs(&ui, &infos, &opts.load, a.select.symbols.min_symbolized);
            if a.output.as_os_str() != "-" {
                ui.info(&format!(
                    "merged {} profile(s) from {} input(s): {} samples; wrote {}",
                    infos.iter().map(|i| i.profiles).sum::<usize>(),
                    infos.len(),
                    profile.sample_count(),
                    a.output.display()
                ));
            }
            Ok(a.select.strict.exit(exit_code(gate_ok, damaged), &inputs_data_loss(&infos, &opts.load)))
        }
        Command::Diff(a) => {
            let limit = a.fail_if_growth.as_deref().map(pipeline::combine::GrowthLimit::parse).transpose()?;
            let opts = pipeline::combine::DiffRunOptions {
                load: a.select.load(&ui)?,
                merge: a.select.merge(),
                format: format_of(a.to),
                normalize: a.normalize,
                fail_if_growth: limit,
                top: a.top,
            };
            let run = pipeline::combine::run_diff(&a.base, &a.new, &opts)?;
            let inputs = [a.base.clone(), a.new.clone()];
            write_output(&a.output, &run.bytes, opts.format.is_binary(), &inputs)?;
            let (gate_ok, damaged) = report_inputs(&ui, &run.inputs, &opts.load, a.select.symbols.min_symbolized);
            match &run.gate {
                Some(g) if !g.passed => {
                    eprintln!("heapconv: error: growth gate failed: {}", g.message);
                    Ok(EXIT_GROWTH_GATE)
                }
                Some(g) => {
                    ui.info(&format!("growth gate passed: {}", g.message));
                    Ok(a.select.strict.exit(exit_code(gate_ok, damaged), &inputs_data_loss(&run.inputs, &opts.load)))
                }
                None => {
                    Ok(a.select.strict.exit(exit_code(gate_ok, damaged), &inputs_data_loss(&run.inputs, &opts.load)))
                }
            }
        }
        Command::Top(a) => {
            let opts = pipeline::combine::TopRunOptions {
                load: a.select.load(&ui)?,
                merge: a.select.merge(),
                top: heapconv::encode::top::TopOptions {
                    by: match a.by {
                        None | Some(TopByArg::Function) | Some(TopByArg::Class) => {
                            heapconv::encode::top::TopBy::Function
                        }
                        Some(TopByArg::Mapping) => heapconv::encode::top::TopBy::Mapping,
                        Some(TopByArg::Stack) => heapconv::encode::top::TopBy::Stack,
                    },
                    count: a.count,
                    value_index: 0,
                },
                sample_type: a.sample_type.as_deref().map(heapconv::merge::TypeSelector::parse),
            };
            let heap_opts = pipeline::HeapTopRunOptions {
                pids: a.select.pid.into_iter().collect(),
                dump: parse_dump(&a.select.dump)?,
                decode: a.select.decode.options(),
                java_heap: a.java_heap,
                top: heapconv::analysis::heap::HeapTopOptions {
                    classes: if a.count == 0 { usize::MAX } else { a.count },
                    ..Default::default()
                },
            };
            let run = pipeline::run_top(&expand_inputs(&a.inputs, &a.list)?, &opts, &heap_opts)?;
            let (text, gate_ok, damaged, lost) = match run {
                pipeline::TopRun::Table(table, inputs) => {
                    if matches!(a.by, Some(TopByArg::Class)) {
                        return Err(Error::new(
                            ErrorKind::Usage,
                            "--by class is for Java heaps (an HPROF heap dump, or a trace's heap graphs)",
                        ));
                    }
                    let text = if a.json {
                        heapconv::encode::top::top_json(&table)
                    } else {
                        heapconv::encode::top::top_text(&table)
                    };
                    let (gate_ok, damaged) = report_inputs(&ui, &inputs, &opts.load, a.select.symbols.min_symbolized);
                    (text, gate_ok, damaged, inputs_data_loss(&inputs, &opts.load))
                }
                pipeline::TopRun::Heap(top, report) => {
                    if matches!(a.by, Some(TopByArg::Function | TopByArg::Mapping | TopByArg::Stack))
                        || a.sample_type.is_some()
                    {
                        return Err(Error::new(
                            ErrorKind::Usage,
                            "a Java heap is shown by class (retained size); --by function|mapping|stack and --sample-type are for profiles",
                        ));
                    }
                    let text = if a.json {
                        heapconv::encode::heap_top::heap_top_json(&top)
                    } else {
                        heapconv::encode::heap_top::heap_top_text(&top)
                    };
                    (text, true, report_problems(&ui, &report), report.data_loss())
                }
            };
            std::io::stdout().write_all(text.as_bytes()).map_err(|e| Error::io("writing standard output", e))?;
            Ok(a.select.strict.exit(exit_code(gate_ok, damaged), &lost))
        }
        Command::Hprof(a) => {
            let opts = pipeline::HprofRunOptions {
                pids: a.pid.into_iter().collect(),
                timestamps: a.timestamps.clone(),
                hprof: heapconv::encode::hprof::HprofOptions {
                    android: a.android,
                    ..heapconv::encode::hprof::HprofOptions::default()
                },
                graph: heapconv::decode::perfetto::heap_graph::HeapGraphOptions {
                    max_bundle_bytes: a.decode.max_bundle_mib << 20,
                    ..Default::default()
                },
            };
            if a.traces.len() > 1 || a.batch.asked(&a.traces) {
                return main_batch::hprof(&ui, &a, &opts);
            }
            let trace = &a.traces[0];
            pipeline::combine::refuse_pprof(trace, "hprof")?;
            let dest = if a.output.as_os_str() == "-" {
                if std::io::stdout().is_terminal() {
                    return Err(Error::new(
                        ErrorKind::Usage,
                        "refusing to write a binary heap dump to a terminal; use -o FILE or redirect standard output",
                    ));
                }
                pipeline::HprofDestination::Stdout
            } else if a.output.is_dir() || a.output.to_string_lossy().ends_with('/') {
                pipeline::HprofDestination::Dir(a.output.clone())
            } else {
                pipeline::HprofDestination::File(a.output.clone())
            };
            let run = pipeline::run_hprof(trace, &dest, &opts)?;
            if let Some(bytes) = &run.stdout {
                let mut so = std::io::stdout().lock();
                so.write_all(bytes).map_err(|e| Error::io("writing standard output", e))?;
                so.flush().map_err(|e| Error::io("writing standard output", e))?;
            }
            for w in &run.written {
                if !w.incomplete.is_empty() {
                    ui.warn(&format!("{}: the heap graph is incomplete: {}", w.describe, w.incomplete.join("; ")));
                }
                let to =
                    w.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "standard output".to_owned());
                if !a.json && (run.stdout.is_none() || ui.verbose > 0) {
                    ui.info(&format!(
                        "wrote {to}: {}, {} classes, {} instances, {} arrays, {} roots, {} bytes ({}-byte ids)",
                        w.describe,
                        w.summary.classes,
                        w.summary.instances,
                        w.summary.object_arrays + w.summary.primitive_arrays,
                        w.summary.roots,
                        w.summary.bytes,
                        w.summary.id_size
                    ));
                }
            }
            if a.json && run.stdout.is_none() {
                let doc: Vec<serde_json::Value> = run
                    .written
                    .iter()
                    .map(|w| {
                        serde_json::json!({
                            "path": w.path.as_ref().map(|p| p.display().to_string()),
                            "dump": w.describe,
                            "incomplete": w.incomplete,
                            "summary": w.summary,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&doc).expect("serializes"));
            }
            if ui.verbose > 0 {
                for p in &run.report.problems {
                    ui.warn(&p.message);
                }
            }
            if let Some(d) = &run.report.damage {
                ui.warn(&format!("input damaged, result is partial: {d}"));
            }
            let mut lost = run.report.data_loss();
            if lost.is_empty() {
                lost = run
                    .written
                    .iter()
                    .filter(|w| !w.incomplete.is_empty())
                    .map(|w| format!("{}: the heap graph is incomplete: {}", w.describe, w.incomplete.join("; ")))
                    .collect();
            }
            Ok(a.strict.exit(if run.is_partial() { EXIT_PARTIAL } else { EXIT_OK }, &lost))
        }
        Command::Symbolize(a) => {
            let Some(opts) = a.symbols.options(&ui).filter(|o| !o.symbol_dirs.is_empty()) else {
                return Err(Error::new(
                    ErrorKind::Usage,
                    "no symbol directories: give --symbol-dir DIR (repeatable) or set PERFETTO_BINARY_PATH",
                ));
            };
            if a.traces.len() > 1 || a.batch.asked(&a.traces) {
                return main_batch::symbolize(&ui, &a, &opts);
            }
            let trace = &a.traces[0];
            pipeline::combine::refuse_pprof(trace, "symbolize")?;
            let to_stdout = a.output.as_ref().is_none_or(|p| p.as_os_str() == "-");
            if to_stdout && std::io::stdout().is_terminal() {
                return Err(Error::new(
                    ErrorKind::Usage,
                    "refusing to write binary ModuleSymbols packets to a terminal; use -o FILE or redirect",
                ));
            }
            let out = if to_stdout { None } else { a.output.as_deref() };
            let run = pipeline::run_symbolize(trace, out, &opts, &a.decode.options())?;
            if to_stdout {
                let mut so = std::io::stdout().lock();
                so.write_all(&run.symbols).map_err(|e| Error::io("writing standard output", e))?;
                so.flush().map_err(|e| Error::io("writing standard output", e))?;
            }
            if a.json {
                eprintln!("{}", serde_json::to_string_pretty(&run.report).expect("report serializes"));
            }
            let quiet_ui = Ui { verbose: ui.verbose, quiet: ui.quiet || a.json };
            let gate_ok = report_symbols(&quiet_ui, &run.report, a.symbols.min_symbolized);
            let damaged = report_problems(&ui, &run.trace);
            Ok(a.strict.exit(exit_code(gate_ok, damaged), &run.trace.data_loss()))
        }
        Command::Timeline(a) => {
            let opts = pipeline::views::TimelineOptions {
                format: match a.to {
                    TimelineToArg::Csv => pipeline::views::TimelineFormat::Csv,
                    TimelineToArg::Json => pipeline::views::TimelineFormat::Json,
                    TimelineToArg::Svg => pipeline::views::TimelineFormat::Svg,
                },
                pids: a.pid.into_iter().collect(),
                heap: a.heap.clone(),
                chart: heapconv::encode::timeline::ChartOptions {
                    value: value_kind(a.value),
                    title: a.title.clone(),
                    ..Default::default()
                },
                decode: a.decode.options(),
            };
            if a.traces.len() > 1 || a.batch.asked(&a.traces) {
                return main_batch::timeline(&ui, &a, &opts);
            }
            let trace = &a.traces[0];
            let run = pipeline::views::run_timeline(trace, &opts)?;
            let out = a.output.clone().unwrap_or_else(|| PathBuf::from("-"));
            write_output(&out, &run.bytes, false, std::slice::from_ref(trace))?;
            if out.as_os_str() != "-" {
                let dumps: usize = run.timeline.series.iter().map(|s| s.points.len()).sum();
                ui.info(&format!(
                    "timeline of {} dump(s) in {} process/heap series: wrote {}",
                    dumps,
                    run.timeline.series.len(),
                    out.display()
                ));
            }
            let damaged = report_problems(&ui, &run.report);
            Ok(a.strict.exit(if damaged { EXIT_PARTIAL } else { EXIT_OK }, &run.report.data_loss()))
        }
        Command::Addr2line(a) => {
            use std::io::BufRead;
            let mut addrs = Vec::new();
            for line in std::io::stdin().lock().lines() {
                let line = line.map_err(|e| Error::io("reading standard input", e))?;
                let t = line.trim();
                if t.is_empty() {
                    continue;
                }
                let v = u64::from_str_radix(t.trim_start_matches("0x"), 16)
                    .map_err(|_| Error::new(ErrorKind::Usage, format!("not a hex address: {t:?}")))?;
                addrs.push(v);
            }
            let results = heapconv::symbolize::symbolize_addresses(&a.obj, &addrs);
            let mut so = std::io::BufWriter::new(std::io::stdout().lock());
            for (addr, lines) in addrs.iter().zip(results) {
                let syms: Vec<serde_json::Value> = lines
                    .iter()
                    .map(|l| serde_json::json!({"FunctionName": l.function, "FileName": l.file, "Line": l.line, "Column": l.column}))
                    .collect();
                let doc = serde_json::json!({"Address": format!("{addr:#x}"), "ModuleName": a.obj.display().to_string(), "Symbol": syms});
                writeln!(so, "{doc}").map_err(|e| Error::io("writing standard output", e))?;
            }
            so.flush().map_err(|e| Error::io("writing standard output", e))?;
            Ok(EXIT_OK)
        }
        Command::Synth(a) => {
            let opts = heapconv::synth::SynthOptions {
                callstacks: a.callstacks,
                depth: a.depth,
                dumps: a.dumps,
                processes: a.processes,
                seed: a.seed,
                compress: a.compress,
                ..Default::default()
            };
            let mut buf = Vec::new();
            let summary = heapconv::synth::write_synthetic_trace(&opts, &mut buf)
                .map_err(|e| Error::io("generating the synthetic trace", e))?;
            heapconv::output::write_atomic(&a.output, &buf, &[])?;
            ui.info(&format!(
                "wrote {} ({} bytes, {} packets, {} samples)",
                a.output.display(),
                summary.bytes,
                summary.packets,
                summary.samples
            ));
            Ok(EXIT_OK)
        }
        Command::HprofConv(a) => {
            let opts = HprofConvOptions { app_only: a.app_only, ..HprofConvOptions::default() };
            if a.output_dir.is_some() || a.batch.asked(&a.paths) {
                return main_batch::hprof_conv(&ui, &a, &opts);
            }
            let [input, output] = a.paths.as_slice() else {
                return Err(Error::new(
                    ErrorKind::Usage,
                    "hprof-conv takes INPUT OUTPUT, or -o DIR and any number of inputs",
                ));
            };
            if output.as_os_str() == "-" && std::io::stdout().is_terminal() {
                return Err(Error::new(
                    ErrorKind::Usage,
                    "refusing to write a binary heap dump to a terminal; give an output file or redirect",
                ));
            }
            let r = pipeline::run_hprof_conv(input, output, &opts)?;
            ui.info(&format!(
                "converted {} records ({} heap-dump records, {} sub-records): {} HEAP_DUMP_INFO dropped, {} Android roots written as ROOT_UNKNOWN{}; {} -> {} bytes",
                r.records,
                r.heap_dump_records,
                r.sub_records,
                r.heap_infos_dropped,
                r.roots_rewritten,
                if a.app_only { format!(", {} zygote/image objects dropped", r.objects_dropped) } else { String::new() },
                r.bytes_in,
                r.bytes_out
            ));
            if r.nodata_zero_filled + r.nodata_emptied > 0 {
                ui.warn(&format!(
                    "{} PRIMITIVE_ARRAY_NODATA record(s) written as arrays of zeros and {} as empty arrays (Android's hprof-conv writes them corrupt)",
                    r.nodata_zero_filled, r.nodata_emptied
                ));
            }
            Ok(a.strict.exit(EXIT_OK, &r.data_loss()))
        }
        Command::Inspect(a) => {
            let (text, partial) = match pipeline::run_inspect_input(&a.input, &a.decode.options(), &a.ddm.options())? {
                Inspection::Trace(report) => {
                    (if a.json { inspect_json(&report) } else { inspect_text(&report) }, report.is_partial())
                }
                Inspection::Ddm(report) => {
                    (if a.json { ddm_inspect_json(&report) } else { ddm_inspect_text(&report) }, false)
                }
                Inspection::Hprof(report) => {
                    let partial = !report.incomplete.is_empty();
                    (if a.json { hprof_inspect_json(&report) } else { hprof_inspect_text(&report) }, partial)
                }
                Inspection::Pprof(p) => (
                    if a.json {
                        pipeline::combine::pprof_inspect_json(&p)
                    } else {
                        pipeline::combine::pprof_inspect_text(&p)
                    },
                    false,
                ),
            };
            std::io::stdout().write_all(text.as_bytes()).map_err(|e| Error::io("writing standard output", e))?;
            Ok(if partial { EXIT_PARTIAL } else { EXIT_OK })
        }
    }
}

/// A hint for `--from T1 --to T2`: `--to` names the output format, and the end of a delta
/// is `--until` (or `--to-time`).
fn to_hint(e: &clap::Error) -> Option<&'static str> {
    use clap::error::{ContextKind, ContextValue, ErrorKind as ClapKind};
    if e.kind() != ClapKind::InvalidValue {
        return None;
    }
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) =
        (e.get(ContextKind::InvalidArg), e.get(ContextKind::InvalidValue))
    else {
        return None;
    };
    (arg.starts_with("--to ") && value.parse::<i64>().is_ok())
        .then_some("hint: --to names the output format; the newer dump of --view delta is --until T (or --to-time T)")
}

/// Keeps freed memory for reuse instead of handing it back to the kernel (glibc's malloc).
///
/// heapconv's stages each build large arrays (decoded samples, the merge's stacks, the sorted
/// output, encoded parts) and free the previous stage's. By default glibc maps large blocks
/// on their own and unmaps them when freed, and keeps one heap per thread, so each stage
/// touches fresh pages, which the kernel must zero, and every unmap interrupts the other
/// cores to flush their TLBs: a third of the CPU time of merging two 40 MB profiles. Here
/// every block comes from one heap, trimmed only past 1 GiB of free space, so pages are
/// reused: that merge takes 0.65-0.7 s instead of 0.75-0.8 s, for 10-25% more peak memory
/// (freed holes that a later, larger block does not fit in). Mapping only the blocks over
/// 32 MiB (glibc's largest threshold) kept the memory as it was but half the time gained
/// (BENCHMARKS.md has the figures). Called before any other thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_malloc() {
    use std::os::raw::c_int;
    unsafe extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }
    // Parameter numbers from glibc's <malloc.h>.
    const M_TRIM_THRESHOLD: c_int = -1;
    const M_MMAP_MAX: c_int = -4;
    const M_ARENA_MAX: c_int = -8;
    // SAFETY: mallopt only sets allocator parameters; it is called before any other thread
    // exists, and a parameter it rejects is left as it was.
    unsafe {
        mallopt(M_MMAP_MAX, 0);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
        mallopt(M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            if let Some(hint) = to_hint(&e) {
                eprintln!("{hint}");
            }
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_OK });
        }
    };
    // The commands that merge whole profiles in memory, stage after stage (not `profile` and
    // `convert` of traces, which stream through bounded buffers: they would only keep more).
    if matches!(cli.command, Command::Merge(_) | Command::Diff(_) | Command::Top(_)) {
        tune_malloc();
    }
    if let Some(n) = cli.command.jobs() {
        if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(n).build_global() {
            eprintln!("heapconv: error: starting {n} worker thread(s): {e}");
            return ExitCode::from(EXIT_INPUT);
        }
    }
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("heapconv: error: {e}{}", e.hint().map_or("", heapconv::pipeline::batch::flag_hint));
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                eprintln!("  caused by: {s}");
                src = s.source();
            }
            ExitCode::from(if e.kind() == ErrorKind::Usage { EXIT_USAGE } else { EXIT_INPUT })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Command {
        Cli::try_parse_from(args).expect("valid command line").command
    }

    #[test]
    fn cli_defaults_equal_option_defaults() {
        let Command::Profile(a) = parse(&["heapconv", "profile", "t.pftrace"]) else { panic!("profile") };
        let d = ProfileOptions::default();
        assert_eq!(a.output_dir, d.output_dir);
        assert_eq!(a.pid.into_iter().collect::<Vec<_>>(), d.pids);
        assert_eq!(a.timestamps, d.timestamps);
        assert_eq!(!a.no_annotations, d.annotations);
        assert_eq!(a.raw, d.raw);
        assert_eq!(a.decode.options().max_bundle_bytes, DecodeOptions::default().max_bundle_bytes);

        let Command::Convert(a) = parse(&["heapconv", "convert", "t.pftrace"]) else { panic!("convert") };
        let d = ConvertOptions::default();
        assert!(matches!(a.to, ToArg::Pprof) && d.format == Format::Pprof);
        assert_eq!(parse_dump(&a.dump).unwrap(), d.dump);
        assert_eq!(view_kind(a.view), d.view);
        assert_eq!(!a.no_annotations, d.annotations);
        assert_eq!(a.heap, d.heap);
        assert_eq!(a.java_heap, d.java_heap);
        assert!(matches!(a.by, ByArg::Dominator) && d.heap_tree == pipeline::HeapTree::Dominator);
        let (got, want) = (a.ddm.options(), d.ddm);
        assert_eq!(got.order, want.order);
        assert_eq!(got.recent, want.recent);
        assert_eq!(got.max_depth, want.max_depth);
        assert_eq!(got.truncation_marks, want.truncation_marks);
        assert_eq!(got.alloc_class_frame, want.alloc_class_frame);
        assert_eq!(got.lines, want.lines);
        assert_eq!(got.per_allocation, want.per_allocation);
        assert_eq!(got.max_bytes, want.max_bytes);
    }

    #[test]
    fn hprof_defaults_equal_option_defaults() {
        let Command::Hprof(a) = parse(&["heapconv", "hprof", "t.pftrace", "-o", "x.hprof"]) else { panic!("hprof") };
        let d = pipeline::HprofRunOptions::default();
        assert_eq!(a.pid.into_iter().collect::<Vec<_>>(), d.pids);
        assert_eq!(a.timestamps, d.timestamps);
        assert_eq!(a.android, d.hprof.android);
        assert_eq!(a.decode.max_bundle_mib << 20, d.graph.max_bundle_bytes);
        assert!(Cli::try_parse_from(["heapconv", "hprof", "t.pftrace"]).is_err(), "-o is required");
    }

    #[test]
    fn convert_takes_several_inputs() {
        let Command::Convert(a) = parse(&["heapconv", "convert", "a.alloc", "b.alloc", "--to", "folded"]) else {
            panic!("convert")
        };
        assert_eq!(a.inputs, [PathBuf::from("a.alloc"), PathBuf::from("b.alloc")]);
        assert!(Cli::try_parse_from(["heapconv", "convert"]).is_err());
    }

    #[test]
    fn hprof_conv_takes_z_anywhere() {
        for args in [["heapconv", "hprof-conv", "a", "b", "-z"], ["heapconv", "hprof-conv", "-z", "a", "b"]] {
            let Command::HprofConv(a) = parse(&args) else { panic!("hprof-conv") };
            assert!(a.app_only && a.paths == [PathBuf::from("a"), PathBuf::from("b")] && a.output_dir.is_none());
        }
        let Command::HprofConv(a) = parse(&["heapconv", "hprof-conv", "a", "b"]) else { panic!("hprof-conv") };
        assert_eq!(a.app_only, HprofConvOptions::default().app_only);
        assert!(Cli::try_parse_from(["heapconv", "hprof-conv"]).is_err());
    }

    #[test]
    fn merge_diff_top_defaults_equal_option_defaults() {
        let ui = Ui { verbose: 0, quiet: true };
        let Command::Merge(a) = parse(&["heapconv", "merge", "a.pb", "b.pb", "-o", "m.pb.gz"]) else { panic!("merge") };
        let d = pipeline::combine::MergeRunOptions::default();
        assert!(matches!(a.to, ToArg::Pprof) && d.format == Format::Pprof);
        let (got, want) = (a.select.load(&ui).unwrap(), d.load);
        assert_eq!(got.pids, want.pids);
        assert_eq!(got.heap, want.heap);
        assert_eq!(got.dump, want.dump);
        assert_eq!(got.annotations, want.annotations);
        assert_eq!(got.pprof.max_bytes, want.pprof.max_bytes);
        assert_eq!(got.decode.max_bundle_bytes, want.decode.max_bundle_bytes);
        assert_eq!(a.select.merge().sample_types, d.merge.sample_types);
        assert!(Cli::try_parse_from(["heapconv", "merge", "a.pb"]).is_err(), "-o is required");

        let Command::Diff(a) = parse(&["heapconv", "diff", "a.pb", "b.pb", "-o", "d.pb.gz"]) else { panic!("diff") };
        let d = pipeline::combine::DiffRunOptions::default();
        assert!(matches!(a.to, ToArg::Pprof) && d.format == Format::Pprof);
        assert_eq!(a.normalize, d.normalize);
        assert_eq!(a.fail_if_growth.is_some(), d.fail_if_growth.is_some());
        assert_eq!(a.top, d.top);

        let Command::Top(a) = parse(&["heapconv", "top", "a.pb"]) else { panic!("top") };
        let d = pipeline::combine::TopRunOptions::default();
        assert!(a.by.is_none() && d.top.by == heapconv::encode::top::TopBy::Function);
        let h = pipeline::HeapTopRunOptions::default();
        assert_eq!(a.java_heap, h.java_heap);
        assert_eq!(a.count, h.top.classes);
        assert_eq!(parse_dump(&a.select.dump).unwrap(), h.dump);
        assert_eq!(a.sample_type.is_some(), d.sample_type.is_some());
        assert_eq!(a.count, 20, "like the top lists of convert --to json");
    }

    #[test]
    fn views_and_timeline_defaults_equal_option_defaults() {
        use pipeline::views::DumpView;
        let Command::Convert(a) = parse(&["heapconv", "convert", "t.pftrace", "--view", "leaks"]) else { panic!() };
        assert_eq!(view_choice(&a).unwrap(), (ValueKind::UnreleasedSize, Some(DumpView::Leaks { dumps: 3 })));
        let Command::Convert(a) =
            parse(&["heapconv", "convert", "t", "--view", "delta", "--from", "5", "--value", "total-size"])
        else {
            panic!()
        };
        assert_eq!(
            view_choice(&a).unwrap(),
            (ValueKind::TotalSize, Some(DumpView::Delta { from: Some(5), until: None }))
        );
        // --value alone selects the value, as --view always did.
        let Command::Convert(a) = parse(&["heapconv", "convert", "t", "--value", "total-count"]) else { panic!() };
        assert_eq!(view_choice(&a).unwrap(), (ValueKind::TotalCount, None));
        let Command::Convert(a) = parse(&["heapconv", "convert", "t", "--view", "total-count"]) else { panic!() };
        assert_eq!(view_choice(&a).unwrap(), (ValueKind::TotalCount, None));
        for bad in [
            &["heapconv", "convert", "t", "--view", "total-count", "--value", "total-size"][..],
            &["heapconv", "convert", "t", "--from", "5"],
            &["heapconv", "convert", "t", "--view", "peak", "--leak-dumps", "4"],
        ] {
            let Command::Convert(a) = parse(bad) else { panic!() };
            assert_eq!(view_choice(&a).unwrap_err().kind(), ErrorKind::Usage, "{bad:?}");
        }

        let Command::Timeline(a) = parse(&["heapconv", "timeline", "t.pftrace"]) else { panic!("timeline") };
        let d = pipeline::views::TimelineOptions::default();
        assert!(matches!(a.to, TimelineToArg::Csv) && d.format == pipeline::views::TimelineFormat::Csv);
        assert_eq!(value_kind(a.value), d.chart.value);
        assert_eq!(a.pid.into_iter().collect::<Vec<_>>(), d.pids);
        assert_eq!(a.heap, d.heap);
        assert_eq!(a.title, d.chart.title);
        assert_eq!(a.decode.options().max_bundle_bytes, d.decode.max_bundle_bytes);
    }

    #[test]
    fn growth_limits_parse() {
        use pipeline::combine::GrowthLimit;
        assert_eq!(GrowthLimit::parse("10MB").unwrap(), GrowthLimit::Bytes(10 << 20));
        assert_eq!(GrowthLimit::parse("512 KiB").unwrap(), GrowthLimit::Bytes(512 << 10));
        assert_eq!(GrowthLimit::parse("1.5G").unwrap(), GrowthLimit::Bytes(3 << 29));
        assert_eq!(GrowthLimit::parse("1000").unwrap(), GrowthLimit::Bytes(1000));
        assert_eq!(GrowthLimit::parse("5%").unwrap(), GrowthLimit::Percent(5.0));
        assert!(GrowthLimit::parse("-5%").is_err());
        assert!(GrowthLimit::parse("ten").is_err());
        assert!(GrowthLimit::parse("10 parsecs").is_err());
    }

    #[test]
    fn dump_selection_parses() {
        assert_eq!(parse_dump("3").unwrap(), DumpSelect::Nth(3));
        assert_eq!(parse_dump("all").unwrap(), DumpSelect::All);
        assert!(parse_dump("0").is_err());
        assert!(parse_dump("first").is_err());
    }
}
