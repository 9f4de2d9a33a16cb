//! `heapconv convert` (and its views across dumps, `--view peak|delta|leaks`).

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use heapconv::model::ValueKind;
use heapconv::pipeline::batch::Wanted;
use heapconv::pipeline::convert::{
    ConvertOptions, ConvertRun, HeapTree, convert_one, run_convert_formats, run_convert_inputs,
};
use heapconv::pipeline::load::{SymbolSources, is_ddm_capture, refuse_pprof};
use heapconv::pipeline::select::ConvertCommon;
use heapconv::pipeline::views::{DumpView, ViewOptions, check_view, run_view, view_one};
use heapconv::pipeline::{Destination, Format};
use heapconv::{Error, ErrorKind};

use crate::cli::args::{
    AnnotationsArg, DdmArgs, DecodeArgs, FilterArgs, JavaHeapArg, ObjectSizeArgs, PruneArg, SelectionArgs, StrictArgs,
    SymbolArgs, ToFormatsArg, ValueArg, findings, is_dir_arg,
};
use crate::cli::batch::{self, BatchArgs, Plan, out_dir};
use crate::cli::ui::{self, Ui};

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ByArg {
    Dominator,
    ShortestPath,
}

/// `--view`: a sample value (as `--value` names it; the spelling `--view total-size` works as
/// it always did) or a view across dumps.
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

impl ViewArg {
    /// The value `--view` names, if it names one.
    fn value(self) -> Option<ValueArg> {
        match self {
            ViewArg::UnreleasedSize => Some(ValueArg::UnreleasedSize),
            ViewArg::UnreleasedCount => Some(ValueArg::UnreleasedCount),
            ViewArg::TotalSize => Some(ValueArg::TotalSize),
            ViewArg::TotalCount => Some(ValueArg::TotalCount),
            ViewArg::Peak | ViewArg::Delta | ViewArg::Leaks => None,
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct ConvertArgs {
    /// A Perfetto trace (heapprofd dumps, or Java heap graphs: their dominator tree), an HPROF
    /// heap dump (JAVA PROFILE 1.0.1, 1.0.2 or 1.0.3: its dominator tree), a pprof profile, or
    /// one or more DDM allocation-record captures (`.alloc`, a REAL chunk or JDWP packets;
    /// several are merged into one profile). `-` for standard input; gzip is detected. Directories, patterns, or several inputs that are not all DDM captures with
    /// `-o DIR/`: a batch, each input converted on its own.
    #[arg(required_unless_present = "inputs_from", value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    to: ToFormatsArg,
    #[command(flatten)]
    prune: PruneArg,
    /// Output file, `-` for standard output, or a directory (existing, or ending in `/`) for
    /// one file per dump. Default: standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    selection: SelectionArgs,
    /// What to show: a sample value (shown by folded stacks and flame graphs, opened first by
    /// pprof viewers), or a view across the dumps of each process and heap of a trace with
    /// continuous dumps (`peak`, `delta`, `leaks`; their value is --value).
    #[arg(long, value_enum, default_value = "unreleased-size")]
    view: ViewArg,
    /// The sample value shown, and the one `peak`, `delta` and `leaks` rank and compare.
    /// Default: unreleased-size (or the value --view names).
    #[arg(long, value_enum)]
    value: Option<ValueArg>,
    /// A pprof input: the sample type shown (folded stacks, flame graphs, JSON) and opened first
    /// (pprof), by name (`alloc_space`, `cpu`) or meaning (`total-size`). Default: the input's
    /// `default_sample_type`, else its last type (as `go tool pprof`). An explicit --value on a
    /// pprof input must also name a type the profile has.
    #[arg(long, value_name = "NAME", conflicts_with = "value")]
    sample_type: Option<String>,
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
    #[command(flatten)]
    annotations: AnnotationsArg,
    /// For a Java heap (an HPROF heap dump, or a trace's heap graphs): the tree the profile
    /// shows (`dominator`: widths are retained sizes; `shortest-path`: traceconv's tree from
    /// the GC roots). `--to json` writes the top report (classes by retained size, largest
    /// retainers and their paths from GC roots).
    #[arg(long, value_enum, default_value = "dominator")]
    by: ByArg,
    #[command(flatten)]
    java_heap: JavaHeapArg,
    #[command(flatten)]
    object_size: ObjectSizeArgs,
    #[command(flatten)]
    symbols: SymbolArgs,
    #[command(flatten)]
    decode: DecodeArgs,
    #[command(flatten)]
    ddm: DdmArgs,
    #[command(flatten)]
    pub(crate) batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
    #[command(flatten)]
    filter: FilterArgs,
}

/// What `convert` was asked: a conversion, or a view across dumps.
pub(crate) enum Asked {
    Convert(ConvertOptions),
    View(ViewOptions, DumpView),
}

impl ConvertArgs {
    /// The sample value, and the view across dumps (if any), that `--view`, `--value`,
    /// `--from`, `--until` and `--leak-dumps` ask for: the two concepts `--view` mixes, told
    /// apart here once.
    fn value_and_view(&self) -> Result<(ValueKind, Option<DumpView>), Error> {
        let usage = |m: &str| Error::new(ErrorKind::Usage, m.to_owned());
        let across = match self.view {
            ViewArg::Peak => Some(DumpView::Peak),
            ViewArg::Delta => Some(DumpView::Delta { from: self.from, until: self.until }),
            ViewArg::Leaks => Some(DumpView::Leaks { dumps: self.leak_dumps.unwrap_or(3) }),
            _ => None,
        };
        if self.view != ViewArg::Delta && (self.from.is_some() || self.until.is_some()) {
            return Err(usage("--from and --until choose the dumps of --view delta"));
        }
        if self.view != ViewArg::Leaks && self.leak_dumps.is_some() {
            return Err(usage("--leak-dumps goes with --view leaks"));
        }
        let named = self.view.value().unwrap_or(ValueArg::UnreleasedSize);
        let value = match (across, self.value) {
            (Some(_), v) => v.unwrap_or(ValueArg::UnreleasedSize),
            (None, Some(v)) if self.view != ViewArg::UnreleasedSize && v != named => {
                return Err(usage("--view names a value and --value another; give one of them"));
            }
            (None, Some(v)) => v,
            (None, None) => named,
        };
        Ok((value.kind(), across))
    }

    /// The sample type a pprof input is shown in: --sample-type, or the value --value or
    /// --view names explicitly (as a meaning); `None` for the input's default type.
    fn sample_type_asked(&self) -> Option<String> {
        if self.sample_type.is_some() {
            return self.sample_type.clone();
        }
        let named = self.value.or_else(|| self.view.value().filter(|_| self.view != ViewArg::UnreleasedSize))?;
        Some(
            match named {
                ValueArg::UnreleasedSize => "unreleased-size",
                ValueArg::UnreleasedCount => "unreleased-count",
                ValueArg::TotalSize => "total-size",
                ValueArg::TotalCount => "total-count",
            }
            .to_owned(),
        )
    }

    /// Arguments -> pipeline options, in one place.
    pub(crate) fn options(&self, ui: &Ui) -> Result<(Asked, SymbolSources), Error> {
        let (value, across) = self.value_and_view()?;
        let sources = self.symbols.sources(ui);
        let common = ConvertCommon {
            format: self.formats()[0],
            select: self.selection.selection()?,
            value,
            annotations: self.annotations.annotations(),
            decode: self.decode.options(),
            symbols: sources.clone(),
            filter: self.filter.options()?,
            prune_below: self.prune.prune_below,
        };
        let asked = match across {
            Some(view) => Asked::View(common, view),
            None => Asked::Convert(ConvertOptions {
                common,
                ddm: self.ddm.choices().options(),
                heap_tree: match self.by {
                    ByArg::Dominator => HeapTree::Dominator,
                    ByArg::ShortestPath => HeapTree::ShortestPath,
                },
                java_heap: self.java_heap.java_heap,
                sample_type: self.sample_type_asked(),
                object_size: self.object_size.object_size.size(),
            }),
        };
        Ok((asked, sources))
    }

    /// The formats --to names, in order, each once (at least one: clap gives the default).
    fn formats(&self) -> Vec<Format> {
        let mut formats: Vec<Format> = Vec::with_capacity(self.to.to.len());
        for f in &self.to.to {
            if !formats.contains(&f.0) {
                formats.push(f.0);
            }
        }
        if formats.is_empty() {
            formats.push(Format::Pprof);
        }
        formats
    }

    /// `convert` runs as a batch when asked, or when several inputs that are not all DDM
    /// captures go to an output directory (several DDM captures are merged into one profile,
    /// as `convert` always did).
    fn is_batch(&self) -> bool {
        let to_dir = self.output.as_deref().is_some_and(is_dir_arg);
        let all_ddm = || self.inputs.iter().all(|p| is_ddm_capture(p));
        self.batch.asked(&self.inputs) || (self.inputs.len() > 1 && to_dir && !all_ddm())
    }
}

pub(crate) fn run(ui: &Ui, a: ConvertArgs) -> Result<u8, Error> {
    let (asked, sources) = a.options(ui)?;
    let formats = a.formats();
    if formats.len() > 1 {
        return run_formats(ui, &a, asked, &sources, &formats);
    }
    let format = formats[0];
    if a.is_batch() {
        return run_batch(ui, &a, asked, &sources);
    }
    let dest = match &a.output {
        None => Destination::Stdout,
        Some(p) if p.as_os_str() == "-" => Destination::Stdout,
        Some(p) if is_dir_arg(p) => Destination::Dir(p.clone()),
        Some(p) => Destination::File(p.clone()),
    };
    if dest == Destination::Stdout && format.is_binary() && std::io::stdout().is_terminal() {
        return Err(ui::refuse_terminal("binary pprof", "use -o FILE or redirect standard output"));
    }
    let opts = match asked {
        Asked::View(opts, view) => return run_view_of(ui, &a, &dest, &opts, view, &sources),
        Asked::Convert(opts) => opts,
    };
    let run = run_convert_inputs(&a.inputs, &dest, &opts)?;
    finish_convert(ui, &a, &run, &sources)
}

/// `convert --to A,B,...`: the inputs decoded once and written in every format, one file per
/// format (and dump) in the directory -o names. A batch, a view across dumps, and an output that
/// is not a directory are usage errors.
fn run_formats(
    ui: &Ui,
    a: &ConvertArgs,
    asked: Asked,
    sources: &SymbolSources,
    formats: &[Format],
) -> Result<u8, Error> {
    let list: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    let list = list.join(",");
    let usage = |m: String| Error::new(ErrorKind::Usage, m);
    let opts = match asked {
        Asked::View(_, view) => {
            return Err(usage(format!("--to {list}: --view {} writes one format; give --to one", view.name())));
        }
        Asked::Convert(opts) => opts,
    };
    if a.is_batch() {
        return Err(usage(format!("--to {list}: a batch writes one format; give --to one")));
    }
    let dir = match &a.output {
        Some(p) if p.as_os_str() != "-" && is_dir_arg(p) => p.clone(),
        _ => {
            return Err(usage(format!(
                "--to {list} writes a file per format: give -o an existing directory (or a path ending in /)"
            )));
        }
    };
    let run = run_convert_formats(&a.inputs, &dir, formats, &opts)?;
    finish_convert(ui, a, &run, sources)
}

/// What every `convert` run ends with: the outputs and warnings printed, the report's problems,
/// the symbolization gate and --strict judged; the exit code.
fn finish_convert(ui: &Ui, a: &ConvertArgs, run: &ConvertRun, sources: &SymbolSources) -> Result<u8, Error> {
    ui::write_outputs(ui, &run.outputs)?;
    for w in &run.warnings {
        ui.warn(w);
    }
    // Warnings and --strict judge the dumps converted, not the whole trace.
    let keep = |d: &heapconv::model::DumpReport| run.converted.keeps(d);
    let damaged = ui.problems_of(&run.report, &keep);
    ui.deobfuscation(&sources.proguard);
    let gate_ok = run.symbols.as_ref().is_none_or(|r| ui.symbols(r, sources));
    Ok(a.strict.exit(findings(gate_ok, damaged), &run.report.data_loss_of(&keep)))
}

/// `convert --view peak|delta|leaks`: one trace, its view across dumps written, the
/// attribution of every output printed (standard error).
fn run_view_of(
    ui: &Ui,
    a: &ConvertArgs,
    dest: &Destination,
    opts: &ViewOptions,
    view: DumpView,
    sources: &SymbolSources,
) -> Result<u8, Error> {
    let [input] = a.inputs.as_slice() else {
        return Err(Error::new(
            ErrorKind::Usage,
            format!("--view {} reads one trace with continuous dumps, not {} inputs", view.name(), a.inputs.len()),
        ));
    };
    let run = run_view(input, dest, opts, view)?;
    ui::write_outputs(ui, &run.outputs)?;
    for n in &run.notes {
        ui.info(n);
    }
    if run.outputs.is_empty() {
        ui.info("nothing written");
    }
    let damaged = ui.problems(&run.report);
    ui.deobfuscation(&sources.proguard);
    let gate_ok = run.symbols.as_ref().is_none_or(|r| ui.symbols(r, sources));
    Ok(a.strict.exit(findings(gate_ok, damaged), &run.report.data_loss()))
}

/// `convert` of many inputs; with a view across dumps (`--view peak|delta|leaks`), of many
/// traces (directories give their traces only).
fn run_batch(ui: &Ui, a: &ConvertArgs, asked: Asked, sources: &SymbolSources) -> Result<u8, Error> {
    let out = out_dir(a.output.as_deref(), "convert")?;
    let format: Format = a.formats()[0];
    let plan = Plan {
        command: "convert",
        positional: &a.inputs,
        args: &a.batch,
        out: &out,
        wanted: if matches!(asked, Asked::View(..)) { Wanted::Traces } else { Wanted::Convertible },
        file_exts: &[format.extension()],
        min_symbolized: sources.min_symbolized,
        strict: a.strict.strict,
        proguard: Some(&sources.proguard),
    };
    // A batch summary always reports each input's symbolization coverage.
    let code = match asked {
        Asked::View(mut opts, view) => {
            opts.symbols.always_report = true;
            check_view(&opts, view)?;
            batch::run(ui, &plan, &|i| {
                refuse_pprof(&i.path, "convert --view")?;
                view_one(i, &out, &opts, view)
            })
        }
        Asked::Convert(mut opts) => {
            opts.common.symbols.always_report = true;
            batch::run(ui, &plan, &|i| convert_one(i, &out, &opts))
        }
    };
    // The maps are shared by every input: one report for the batch.
    ui.deobfuscation(&sources.proguard);
    code
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> ConvertArgs {
        match Cli::try_parse_from(args).expect("valid command line").command {
            Command::Convert(a) => a,
            c => panic!("not convert: {c:?}"),
        }
    }

    #[test]
    fn inputs_and_format_parse() {
        let a = parse(&["heapconv", "convert", "a.alloc", "b.alloc", "--to", "folded"]);
        assert_eq!(a.inputs, [PathBuf::from("a.alloc"), PathBuf::from("b.alloc")]);
        assert_eq!(a.formats(), [Format::Folded]);
        assert!(Cli::try_parse_from(["heapconv", "convert"]).is_err());
        // --to takes a list, comma-separated or repeated, each format once in the order given.
        let a = parse(&["heapconv", "convert", "t", "--to", "svg,pprof,svg", "--to", "html"]);
        assert_eq!(a.formats(), [Format::Svg, Format::Pprof, Format::Html]);
        assert_eq!(parse(&["heapconv", "convert", "t"]).formats(), [Format::Pprof]);
        assert!(Cli::try_parse_from(["heapconv", "convert", "t", "--to", "pprof,nope"]).is_err());
    }

    #[test]
    fn view_and_value_are_told_apart_once() {
        let a = parse(&["heapconv", "convert", "t.pftrace", "--view", "leaks"]);
        assert_eq!(a.value_and_view().unwrap(), (ValueKind::UnreleasedSize, Some(DumpView::Leaks { dumps: 3 })));
        let a = parse(&["heapconv", "convert", "t", "--view", "delta", "--from", "5", "--value", "total-size"]);
        assert_eq!(
            a.value_and_view().unwrap(),
            (ValueKind::TotalSize, Some(DumpView::Delta { from: Some(5), until: None }))
        );
        // --value alone selects the value, as --view always did.
        let a = parse(&["heapconv", "convert", "t", "--value", "total-count"]);
        assert_eq!(a.value_and_view().unwrap(), (ValueKind::TotalCount, None));
        let a = parse(&["heapconv", "convert", "t", "--view", "total-count"]);
        assert_eq!(a.value_and_view().unwrap(), (ValueKind::TotalCount, None));
        for bad in [
            &["heapconv", "convert", "t", "--view", "total-count", "--value", "total-size"][..],
            &["heapconv", "convert", "t", "--from", "5"],
            &["heapconv", "convert", "t", "--view", "peak", "--leak-dumps", "4"],
        ] {
            assert_eq!(parse(bad).value_and_view().unwrap_err().kind(), ErrorKind::Usage, "{bad:?}");
        }
    }
}
