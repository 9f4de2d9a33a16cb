//! The argument groups several commands share, each defined once, and the one place each maps
//! onto pipeline options.

use std::path::PathBuf;

use clap::Args;
use clap::builder::PossibleValue;
use heapconv::model::ValueKind;
use heapconv::pipeline::load::{
    DdmChoices, EntryOrder, LoadOptions, ProguardMaps, SymbolSources, decode_options, discover_mapping_files,
};
use heapconv::pipeline::outcome::{Findings, RunOutcome};
use heapconv::pipeline::{DecodeOptions, DumpSelect, FilterOptions, Format, Selection, TagFilter};
use heapconv::{Error, ErrorKind};

use crate::cli::ui::Ui;

/// `--strict` of every converting command.
#[derive(Args, Debug, Default, Clone, Copy)]
pub(crate) struct StrictArgs {
    /// Fail with exit code 6 when the input says data was lost: damage, dumps that never
    /// finished, data-loss flags (previous_packet_dropped, index gaps, buffer_overran,
    /// buffer_corrupted, client_error, hit_guardrail, rejected_concurrent, …), incomplete heap
    /// graphs. Outputs are written all the same; a failed gate (exit 4 or 5) wins.
    #[arg(long)]
    pub(crate) strict: bool,
}

impl StrictArgs {
    /// The exit code of a run that got through with these findings and these losses (what
    /// the input says was lost); under `--strict`, when the losses decide the outcome, one
    /// error line each.
    pub(crate) fn exit(self, findings: Findings, lost: &[String]) -> u8 {
        let outcome = RunOutcome::judge(Findings { data_lost: !lost.is_empty(), ..findings }, self.strict);
        if outcome == RunOutcome::DataLoss {
            for l in lost {
                eprintln!("heapconv: error: --strict: data lost: {l}");
            }
        }
        outcome.exit_code()
    }
}

/// The findings of a run: the symbols gate and whether the result is partial.
pub(crate) fn findings(gate_ok: bool, partial: bool) -> Findings {
    Findings { partial, symbols_gate_failed: !gate_ok, ..Findings::default() }
}

/// `--symbol-dir`, `--ignore-build-id`, `--min-symbolized`.
#[derive(Args, Debug, Default)]
pub(crate) struct SymbolArgs {
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
    pub(crate) min_symbolized: Option<f64>,
    #[command(flatten)]
    proguard: ProguardArgs,
}

/// `--proguard-map`, `--mapping-dir`: the ProGuard/R8 maps of every command that deobfuscates.
#[derive(Args, Debug, Default)]
pub(crate) struct ProguardArgs {
    /// Deobfuscate Java names (frames, classes, fields) with this ProGuard/R8 mapping file,
    /// for the Android package PACKAGE (repeatable). Without PACKAGE: for HPROF files, DDM
    /// captures and frames whose package cannot be told. PERFETTO_PROGUARD_MAP
    /// (`package=file[:package=file…]`) is used too.
    #[arg(long = "proguard-map", value_name = "[PACKAGE=]FILE")]
    pub(crate) proguard_maps: Vec<String>,
    /// Find mapping files under DIR (repeatable): `<package>.txt` and `<package>/mapping.txt`
    /// for that package, and Gradle's `<module>/build/outputs/mapping/<variant>/mapping.txt`
    /// as the map without a package (of several, variant `release` first; a warning lists them).
    #[arg(long = "mapping-dir", value_name = "DIR")]
    pub(crate) mapping_dirs: Vec<PathBuf>,
}

impl ProguardArgs {
    /// The maps: `--proguard-map`, PERFETTO_PROGUARD_MAP, then those found by `--mapping-dir`
    /// (a directory that cannot be walked is warned about and skipped).
    pub(crate) fn maps(&self, ui: &Ui) -> ProguardMaps {
        let mut maps = proguard_maps(ui, &self.proguard_maps);
        for dir in &self.mapping_dirs {
            match discover_mapping_files(dir) {
                Ok(found) => {
                    for w in &found.warnings {
                        ui.warn(w);
                    }
                    if found.specs.is_empty() {
                        ui.warn(&format!("--mapping-dir {}: no mapping file found", dir.display()));
                    }
                    maps.extend(found.specs);
                }
                Err(e) => ui.warn(&format!("{}; skipped", e.context())),
            }
        }
        maps
    }
}

impl SymbolArgs {
    /// Where symbols come from: these arguments and the environment (PERFETTO_BINARY_PATH,
    /// PERFETTO_SYMBOLIZER_MODE), read once.
    pub(crate) fn sources(&self, ui: &Ui) -> SymbolSources {
        let mut dirs = self.symbol_dirs.clone();
        if let Some(env) = std::env::var_os("PERFETTO_BINARY_PATH") {
            dirs.extend(std::env::split_paths(&env).filter(|p| !p.as_os_str().is_empty()));
        }
        if !dirs.is_empty() && self.ignore_build_id {
            ui.warn("--ignore-build-id: files are matched by path only; symbols may belong to another build");
        }
        SymbolSources {
            dirs,
            ignore_build_id: self.ignore_build_id,
            find_only: std::env::var("PERFETTO_SYMBOLIZER_MODE").as_deref() == Ok("find"),
            min_symbolized: self.min_symbolized,
            always_report: false,
            proguard: self.proguard.maps(ui),
        }
    }
}

/// The maps of `--proguard-map` and `PERFETTO_PROGUARD_MAP`. A malformed variable is ignored
/// with an error line, as traceconv ignores it.
pub(crate) fn proguard_maps(ui: &Ui, args: &[String]) -> ProguardMaps {
    let env = std::env::var("PERFETTO_PROGUARD_MAP").ok().filter(|v| !v.is_empty());
    match ProguardMaps::new(args, env.as_deref()) {
        Ok(m) => m,
        Err(e) => {
            ui.warn(&format!("{}; the variable is ignored", e.context()));
            ProguardMaps::new(args, None).unwrap_or_default()
        }
    }
}

/// `--max-bundle-mib`.
#[derive(Args, Debug)]
pub(crate) struct DecodeArgs {
    /// Largest expansion of a compressed_packets bundle, in MiB.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub(crate) max_bundle_mib: u64,
}

impl DecodeArgs {
    /// The largest expansion of a bundle, in bytes.
    pub(crate) fn max_bundle_bytes(&self) -> u64 {
        self.max_bundle_mib << 20
    }

    /// The trace decoder's options.
    pub(crate) fn options(&self) -> DecodeOptions {
        decode_options(self.max_bundle_bytes())
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum EntryOrderArg {
    /// Guess from the capture (thread ids, stack depths, a wrapped entry count).
    Auto,
    /// The first entry is the most recent allocation (ART, Android 6.0 and later).
    NewestFirst,
    /// The first entry is the oldest allocation (Dalvik, ART on Android 5.x).
    OldestFirst,
}

/// How DDM allocation records become a profile.
#[derive(Args, Debug)]
pub(crate) struct DdmArgs {
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
    /// DDM allocation records: label each sample with its allocation number (`allocation`, 1
    /// for the oldest of its capture), for `go tool pprof -tagfocus=allocation=1:1000`.
    #[arg(long)]
    allocation_label: bool,
}

impl DdmArgs {
    pub(crate) fn choices(&self) -> DdmChoices {
        DdmChoices {
            order: match self.entry_order {
                EntryOrderArg::Auto => EntryOrder::Auto,
                EntryOrderArg::NewestFirst => EntryOrder::NewestFirst,
                EntryOrderArg::OldestFirst => EntryOrder::OldestFirst,
            },
            recent: self.recent,
            max_depth: self.max_depth,
            no_truncation_marks: self.no_truncation_marks,
            no_alloc_class_frame: self.no_alloc_class_frame,
            allocation_label: self.allocation_label,
        }
    }
}

/// `--to` of the commands that write profiles: the names of [`Format`], the one list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FormatArg(pub(crate) Format);

/// Every format as a `--to` value, in [`Format::ALL`]'s order.
const FORMATS: [FormatArg; Format::ALL.len()] = {
    let mut v = [FormatArg(Format::ALL[0]); Format::ALL.len()];
    let mut i = 0;
    while i < v.len() {
        v[i] = FormatArg(Format::ALL[i]);
        i += 1;
    }
    v
};

impl clap::ValueEnum for FormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        &FORMATS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

/// The sample value of `--value` (and of `--view` when it names one).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueArg {
    /// Bytes not freed at the dump.
    UnreleasedSize,
    /// Allocations not freed at the dump.
    UnreleasedCount,
    /// Bytes allocated since profiling started.
    TotalSize,
    /// Allocations since profiling started.
    TotalCount,
}

impl ValueArg {
    pub(crate) fn kind(self) -> ValueKind {
        match self {
            ValueArg::UnreleasedSize => ValueKind::UnreleasedSize,
            ValueArg::UnreleasedCount => ValueKind::UnreleasedCount,
            ValueArg::TotalSize => ValueKind::TotalSize,
            ValueArg::TotalCount => ValueKind::TotalCount,
        }
    }
}

/// `--object-size` of the commands that read HPROF heap dumps.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ObjectSizeArg {
    /// The bytes the dump holds (HotSpot: field values without header; arrays: elements).
    #[default]
    Fields,
    /// A 32-bit JVM: 8-byte headers, 12-byte array headers, 4-byte references, 8-byte alignment.
    Jvm32,
    /// A 64-bit JVM with compressed oops (the default below 32 GB heaps): 12/16/4.
    Jvm64Coops,
    /// A 64-bit JVM with -XX:-UseCompressedOops on JDK 15+ (compressed class pointers): 12/16/8.
    Jvm64Ccp,
    /// A 64-bit JVM without compressed oops nor class pointers: 16/24/8.
    Jvm64,
}

impl ObjectSizeArg {
    pub(crate) fn size(self) -> heapconv::pipeline::load::ObjectSize {
        use heapconv::pipeline::load::ObjectSize;
        match self {
            ObjectSizeArg::Fields => ObjectSize::Fields,
            ObjectSizeArg::Jvm32 => ObjectSize::Jvm32,
            ObjectSizeArg::Jvm64Coops => ObjectSize::Jvm64Coops,
            ObjectSizeArg::Jvm64Ccp => ObjectSize::Jvm64CompressedClass,
            ObjectSizeArg::Jvm64 => ObjectSize::Jvm64,
        }
    }
}

/// `--dump`: `last`, `all` or a 1-based number.
pub(crate) fn parse_dump(s: &str) -> Result<DumpSelect, Error> {
    match s {
        "last" => Ok(DumpSelect::Last),
        "all" => Ok(DumpSelect::All),
        n => match n.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(DumpSelect::Nth(n)),
            _ => Err(Error::new(ErrorKind::Usage, format!("--dump takes last, all or a number from 1, not {s:?}"))),
        },
    }
}

/// Where a converting command writes: `-o` of a file, `-` or a directory (existing, or ending
/// in `/`).
pub(crate) fn is_dir_arg(p: &std::path::Path) -> bool {
    p.is_dir() || p.to_string_lossy().ends_with('/')
}

// Each flag below is declared once, in the group of its concern, which a command flattens.
// Where a command gives a flag a help of its own (the same flag, said for that command's
// inputs), the text is a constant beside the flag's declaration, written as clap writes a
// doc comment (without its final period) and set with `mut_arg` on the command's arguments.

/// `--pid`: one process (of a trace, or of a trace's heap graphs).
#[derive(Args, Debug, Default)]
pub(crate) struct PidArg {
    /// Only this process.
    #[arg(long)]
    pub(crate) pid: Option<u64>,
}

impl PidArg {
    /// `--pid` of `merge`, `diff` and `top`, whose inputs need not be traces.
    pub(crate) const OF_TRACES: &'static str = "Traces: only this process";

    /// The processes kept (empty: all).
    pub(crate) fn pids(&self) -> Vec<u64> {
        self.pid.into_iter().collect()
    }
}

/// `--heap`: one heap of a trace.
#[derive(Args, Debug, Default)]
pub(crate) struct HeapArg {
    /// Only this heap (libc.malloc, com.android.art, …).
    #[arg(long)]
    pub(crate) heap: Option<String>,
}

impl HeapArg {
    /// `--heap` of `merge`, `diff` and `top`, whose inputs need not be traces.
    pub(crate) const OF_TRACES: &'static str = "Traces: only this heap (libc.malloc, com.android.art, …)";
}

/// `--dump`: which dump of each (pid, heap), or of an HPROF file holding several.
#[derive(Args, Debug)]
pub(crate) struct DumpArg {
    /// Which dump of each (pid, heap): `last`, `all`, or its 1-based number. For an HPROF file
    /// holding several heap dumps (the JVMTI hprof agent's), which of them; `all` writes one
    /// output per dump (`STEM.N.EXT`) and needs `-o DIR/`.
    #[arg(long, default_value = "last")]
    pub(crate) dump: String,
}

impl DumpArg {
    /// `--dump` of `merge`, `diff` and `top`, which write one output.
    pub(crate) const OF_ONE_OUTPUT: &'static str = "Which dump: of each (pid, heap) of a trace, or of an HPROF file \
        holding several heap dumps (the JVMTI hprof agent's): `last`, `all`, or its 1-based number";

    /// The dumps asked for.
    pub(crate) fn select(&self) -> Result<DumpSelect, Error> {
        parse_dump(&self.dump)
    }
}

/// `--pid`, `--heap`, `--dump`: which dumps of a trace (`convert`, `merge`, `diff`, `top`).
#[derive(Args, Debug)]
pub(crate) struct SelectionArgs {
    #[command(flatten)]
    pub(crate) pid: PidArg,
    #[command(flatten)]
    pub(crate) heap: HeapArg,
    #[command(flatten)]
    pub(crate) dump: DumpArg,
}

impl SelectionArgs {
    /// The selection asked for.
    pub(crate) fn selection(&self) -> Result<Selection, Error> {
        Ok(Selection { pids: self.pid.pids(), heap: self.heap.heap.clone(), dump: self.dump.select()? })
    }
}

/// `--timestamps`: dumps by time (`profile`, `hprof`).
#[derive(Args, Debug, Default)]
pub(crate) struct TimestampsArg {
    /// Only dumps at these trace-clock timestamps (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) timestamps: Vec<i64>,
}

/// `--no-annotations`: ART frames as they are.
#[derive(Args, Debug, Default)]
pub(crate) struct AnnotationsArg {
    /// Do not annotate ART frames.
    #[arg(long)]
    pub(crate) no_annotations: bool,
}

impl AnnotationsArg {
    /// `--no-annotations` of `merge`, `diff` and `top`, whose inputs need not be traces.
    pub(crate) const OF_TRACES: &'static str = "Do not annotate ART frames of traces";
    /// `--no-annotations` of `profile`, which names the annotations.
    pub(crate) const NAMED: &'static str = "Do not annotate ART frames ([jit], [aot], [interp], [common-frame])";

    /// Whether ART frames are annotated.
    pub(crate) fn annotations(&self) -> bool {
        !self.no_annotations
    }
}

/// `--java-heap`: a trace's Java heap graphs rather than its heapprofd dumps.
#[derive(Args, Debug, Default)]
pub(crate) struct JavaHeapArg {
    /// Convert the trace's Java heap graphs (java_hprof data source) instead of its heapprofd
    /// dumps; --pid and --dump select them (the last dump of each process by default). A trace
    /// with no heapprofd dump has its heap graphs converted without this flag.
    #[arg(long)]
    pub(crate) java_heap: bool,
}

impl JavaHeapArg {
    /// `--java-heap` of `top`.
    pub(crate) const SHOWN: &'static str = "Show the trace's Java heap graphs (java_hprof data source) rather \
        than its heapprofd dumps; --pid and --dump select one. A trace with no heapprofd dump has its heap \
        graphs shown without this flag";
    /// `--java-heap` of `profile`.
    pub(crate) const AS_TRACECONV: &'static str = "Convert the Java heap graphs instead (`traceconv profile \
        --java-heap`): one `java_heap_dump.N.PID.pb` per dump, the shortest-path tree from the GC roots";
}

/// `--object-size`: how an HPROF heap dump's shallow sizes are counted.
#[derive(Args, Debug, Default)]
pub(crate) struct ObjectSizeArgs {
    /// HPROF heap dumps: how shallow sizes are counted: the bytes the dump holds (`fields`), or
    /// a JVM's object layout (header + fields, 8-byte aligned), as jmap -histo, MAT and
    /// VisualVM count them. The dump does not say which layout its JVM had.
    #[arg(long, value_enum, default_value = "fields")]
    pub(crate) object_size: ObjectSizeArg,
}

/// `--to` of the commands that write profiles.
#[derive(Args, Debug)]
pub(crate) struct ToFormatArg {
    /// Output format.
    #[arg(long, value_enum, default_value = "pprof")]
    pub(crate) to: FormatArg,
}

impl ToFormatArg {
    /// `--to` of `diff`, which says what each format shows of a comparison.
    pub(crate) const OF_DIFF: &'static str = "Output format: pprof (NEW minus BASE, for `go tool pprof`), folded \
        (`stack BEFORE AFTER`), svg (differential flame graph) or json (what grew most)";
}

/// `--to` of `convert`: one format, or a list of them written from one decode.
#[derive(Args, Debug)]
pub(crate) struct ToFormatsArg {
    /// Output format, or a comma-separated list of them (`pprof,folded,svg`): every format from
    /// one decode, into the directory -o names, each named as --to with that format alone names it.
    #[arg(long, value_enum, default_value = "pprof", value_delimiter = ',')]
    pub(crate) to: Vec<FormatArg>,
}

/// `--prune-below` of the commands that can write an HTML report.
#[derive(Args, Debug)]
pub(crate) struct PruneArg {
    /// `--to html`: frames below this percentage of the total (in every sample type) are merged
    /// into one `[other]` frame per parent; 0 keeps every frame.
    #[arg(long, value_name = "PCT", default_value_t = 0.01)]
    pub(crate) prune_below: f64,
}

impl PruneArg {
    /// `--prune-below` of `diff`, whose totals are of two sides.
    pub(crate) const OF_DIFF: &'static str = "`--to html`: frames below this percentage of the total (in every \
        sample type, BASE or NEW) are merged into one `[other]` frame per parent; 0 keeps every frame";
}

/// How `merge`, `diff` and `top` read their inputs: which dumps of traces, sample types,
/// decoding limits, symbols and maps, DDM choices, `--strict` and the filters.
#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help(PidArg::OF_TRACES)))]
#[command(mut_arg("heap", |a| a.help(HeapArg::OF_TRACES)))]
#[command(mut_arg("dump", |a| a.help(DumpArg::OF_ONE_OUTPUT)))]
#[command(mut_arg("no_annotations", |a| a.help(AnnotationsArg::OF_TRACES)))]
pub(crate) struct LoadArgs {
    #[command(flatten)]
    pub(crate) selection: SelectionArgs,
    #[command(flatten)]
    annotations: AnnotationsArg,
    #[command(flatten)]
    pub(crate) object_size: ObjectSizeArgs,
    /// Keep only these sample types, in this order (comma-separated): type names
    /// (`inuse_space`) or meanings (`total-count`, `total-size`, `unreleased-count`,
    /// `unreleased-size`). Needed when inputs have different sample types.
    #[arg(long, value_delimiter = ',', value_name = "TYPES")]
    pub(crate) sample_types: Vec<String>,
    /// Largest pprof input (decompressed), in MiB.
    #[arg(long, default_value_t = 4096, value_name = "MIB")]
    max_pprof_mib: u64,
    #[command(flatten)]
    pub(crate) symbols: SymbolArgs,
    #[command(flatten)]
    pub(crate) decode: DecodeArgs,
    #[command(flatten)]
    ddm: DdmArgs,
    #[command(flatten)]
    pub(crate) strict: StrictArgs,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
}

impl LoadArgs {
    /// How inputs are loaded, and where their symbols come from.
    pub(crate) fn load(&self, ui: &Ui) -> Result<(LoadOptions, SymbolSources), Error> {
        let sources = self.symbols.sources(ui);
        let mut load = LoadOptions {
            select: self.selection.selection()?,
            annotations: self.annotations.annotations(),
            decode: self.decode.options(),
            symbols: sources.clone(),
            ddm: self.ddm.choices().options(),
            filter: self.filter.options()?,
            ..Default::default()
        };
        load.pprof.max_bytes = self.max_pprof_mib << 20;
        Ok((load, sources))
    }
}

/// pprof-style filters, with `go tool pprof`'s meaning (the `-focus`, `-ignore`, … of go).
#[derive(Args, Debug, Default)]
pub(crate) struct FilterArgs {
    /// Keep only samples with a frame matching RE (function name, file or mapping path; an
    /// unanchored regular expression), as `go tool pprof -focus`.
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    focus: Option<String>,
    /// Drop samples with a frame matching RE, as `go tool pprof -ignore`.
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    ignore: Option<String>,
    /// Remove frames (and inlined functions) matching RE from stacks, as `go tool pprof -hide`.
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    hide: Option<String>,
    /// Keep only frames (and inlined functions) matching RE in stacks, as `go tool pprof -show`.
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    show: Option<String>,
    /// Remove the frames above (rootward of) the first frame matching RE, as `go tool pprof
    /// -show_from`; samples without a match are dropped.
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    show_from: Option<String>,
    /// Remove the frames below (leafward of) the frame matching RE, as `go tool pprof
    /// -prune_from`.
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    prune_from: Option<String>,
    /// Keep only samples whose labels match, as `go tool pprof -tagfocus`: `KEY=REGEX`,
    /// `REGEX` (against `key:value`), or a numeric range (`[KEY=]32kb`, `:64kb`, `4mb:`,
    /// `12kb:64mb`).
    #[arg(long, value_name = "TAG", help_heading = "Filters")]
    tag_focus: Option<String>,
    /// Drop samples whose labels match, as `go tool pprof -tagignore` (syntax of --tag-focus).
    #[arg(long, value_name = "TAG", help_heading = "Filters")]
    tag_ignore: Option<String>,
    /// Keep only the labels whose key matches RE (samples stay), as `go tool pprof -tagshow`.
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    tag_show: Option<String>,
    /// Remove the labels whose key matches RE (samples stay), as `go tool pprof -taghide`.
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    tag_hide: Option<String>,
    /// Reverse every stack: a callers view, rooted at the functions that allocated.
    #[arg(long, help_heading = "Filters")]
    invert: bool,
    /// Remove the allocator's own frames at the leaf of each stack (malloc, calloc, realloc,
    /// free, memalign and friends, operator new/delete, ART's allocation entry points), so
    /// that leaves are the code that asked for memory.
    #[arg(long, help_heading = "Filters")]
    drop_allocator_frames: bool,
}

impl FilterArgs {
    /// The filters asked for.
    pub(crate) fn options(&self) -> Result<FilterOptions, Error> {
        let re = |flag: &str, v: &Option<String>| -> Result<_, Error> {
            v.as_deref()
                .map(|r| {
                    FilterOptions::regex(flag, r)
                        .map_err(|e| Error::new(ErrorKind::Usage, format!("--{flag}: {}", e.context())))
                })
                .transpose()
        };
        let tag = |flag: &str, v: &Option<String>| -> Result<_, Error> {
            v.as_deref()
                .map(|t| {
                    TagFilter::parse(t).map_err(|e| Error::new(ErrorKind::Usage, format!("--{flag}: {}", e.context())))
                })
                .transpose()
        };
        Ok(FilterOptions {
            focus: re("focus", &self.focus)?,
            ignore: re("ignore", &self.ignore)?,
            hide: re("hide", &self.hide)?,
            show: re("show", &self.show)?,
            show_from: re("show-from", &self.show_from)?,
            prune_from: re("prune-from", &self.prune_from)?,
            tag_focus: tag("tag-focus", &self.tag_focus)?,
            tag_ignore: tag("tag-ignore", &self.tag_ignore)?,
            tag_show: re("tag-show", &self.tag_show)?,
            tag_hide: re("tag-hide", &self.tag_hide)?,
            invert: self.invert,
            drop_allocator_frames: self.drop_allocator_frames,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_selection_parses() {
        assert_eq!(parse_dump("3").unwrap(), DumpSelect::Nth(3));
        assert_eq!(parse_dump("all").unwrap(), DumpSelect::All);
        assert_eq!(parse_dump("last").unwrap(), DumpSelect::Last);
        assert!(parse_dump("0").is_err());
        assert!(parse_dump("first").is_err());
    }

    #[test]
    fn format_values_are_the_encode_format_names() {
        use clap::ValueEnum;
        let names: Vec<String> =
            FormatArg::value_variants().iter().map(|v| v.to_possible_value().unwrap().get_name().to_owned()).collect();
        assert_eq!(names, ["pprof", "folded", "svg", "json", "html", "speedscope", "dhat", "chrome-heap"]);
        assert_eq!(FormatArg::from_str("svg", false).unwrap(), FormatArg(Format::Svg));
    }
}
