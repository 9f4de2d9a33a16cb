//! `heapconv convert`: a trace's dumps, DDM captures (merged), an HPROF heap dump, a trace's
//! Java heap graphs or a pprof profile, in any output format ([`crate::encode::Format`]).

use std::path::{Path, PathBuf};

use super::batch::{BatchInput, Done, ProfileTotals, file_for};
use super::reports::{ddm_inspect, pprof_coverage};
use super::select::{
    ConvertCommon, Destination, DumpFilter, DumpSelect, choose_one, describe_heap_dump, describe_hprof_dump,
    heap_dump_name, heap_dump_name_of, no_heap_graph_match, no_heapprofd, several_heap_graphs, stem, write_outputs,
};
use crate::analysis::filter::{filter_flat, filter_profile};
use crate::decode::Input;
use crate::decode::ddm_alloc_records::{AllocCapture, DdmOptions, alloc_records_profile, decode_alloc_records};
use crate::decode::perfetto::{ListDump, decode_heapprofd_frames};
use crate::decode::pprof::{PprofDecodeOptions, read_pprof};
use crate::encode::summary::{DdmInspect, SummaryOptions, convert_json};
use crate::encode::{
    EncodeOptions, Format, Shown, encode, encode_flat, encode_flat_to, encode_heap_html, encode_html_timeline,
    encode_to,
};
use crate::error::{Error, ErrorKind, Hint, Result, Selector};
use crate::merge::TypeSelector;
use crate::model::{FlatProfile, HeapDump, Profile, StackLists, TraceReport, ValueKind};
use crate::output::{AtomicFile, check_not_input, ensure_dir, write_atomic};
use crate::pipeline::load::{
    HeapprofdSelection, ObjectSize, Opened, for_selected_heap_graphs, for_selected_hprof_dumps, is_alloc_file,
    open_input, pick_sample_type, select_heapprofd, select_heapprofd_dumps, symbolize_hook,
};
use crate::symbolize::SymbolizeReport;

mod ddm_pprof;
mod heap;
mod trace;

use ddm_pprof::{convert_ddm, convert_pprof};
use heap::{convert_heap_graphs, convert_hprof, filters_not_for_heap_report};
use trace::convert_trace;

/// Options of `heapconv convert`.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// What a conversion shares with the views across dumps (`convert --view`): the format,
    /// the selection, the value shown, annotations, decoding, symbols, filters and pruning.
    /// Default: [`ConvertCommon::default`].
    pub common: ConvertCommon,
    /// How DDM allocation records become a profile. Default: [`DdmOptions::default`]
    /// (`lines` and `per_allocation` are chosen per format: on for pprof, off for the text
    /// outputs, whose frame labels are then `class.method(File.java:12)`).
    pub ddm: DdmOptions,
    /// Which tree of a Java heap (an hprof input, or a trace's heap graphs) becomes the
    /// profile. Default: the dominator tree (flame graph widths are retained sizes).
    pub heap_tree: HeapTree,
    /// Convert a trace's Java heap graphs rather than its heapprofd dumps. Default: false
    /// (heap graphs are converted when a trace has no heapprofd dump).
    pub java_heap: bool,
    /// The sample type a pprof input is shown in (folded stacks, flame graphs, the JSON
    /// summary) and opened in (pprof's `default_sample_type`): a type name or a meaning such as
    /// `total-size`, which the profile must have. Default: `None`, the input's default type
    /// (its `default_sample_type`, else its last type, as `go tool pprof` picks). Other inputs
    /// show [`ConvertCommon::value`]; a type *name* given for them is a usage error.
    pub sample_type: Option<String>,
    /// How an HPROF heap dump's shallow sizes are counted. Default: [`ObjectSize::Fields`]
    /// (the bytes the dump holds).
    pub object_size: ObjectSize,
}

impl ConvertOptions {
    /// The heapprofd dumps these options select.
    pub(crate) fn selection(&self) -> HeapprofdSelection<'_> {
        let c = &self.common;
        HeapprofdSelection {
            decode: &c.decode,
            pids: &c.select.pids,
            heap: c.select.heap.as_deref(),
            dump: c.select.dump,
            symbolize: c.symbols.options(),
            proguard: &c.symbols.proguard,
        }
    }

    /// How a profile is encoded.
    pub fn encode_options(&self) -> EncodeOptions {
        let c = &self.common;
        EncodeOptions {
            shown: Shown::Kind(c.value),
            annotations: c.annotations,
            title: None,
            prune_below: c.prune_below,
        }
    }

    /// These options with `format` as the output format (one of a list of formats).
    fn in_format(&self, format: Format) -> ConvertOptions {
        ConvertOptions { common: ConvertCommon { format, ..self.common.clone() }, ..self.clone() }
    }

    /// The dumps of a trace these options convert.
    pub fn dump_filter(&self, report: &TraceReport) -> DumpFilter {
        self.common.select.dump_filter(report)
    }
}

/// Which tree of a Java heap becomes a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeapTree {
    /// The dominator tree: a node's cumulative values are what it retains.
    #[default]
    Dominator,
    /// traceconv's shortest-path tree from the GC roots (`profile --java-heap`).
    ShortestPath,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            common: ConvertCommon::default(),
            ddm: DdmOptions::default(),
            heap_tree: HeapTree::default(),
            java_heap: false,
            sample_type: None,
            object_size: ObjectSize::Fields,
        }
    }
}

/// Decodes `input` and keeps the profiles `opts` selects, in trace order.
pub fn select_profiles(
    input: &Path,
    opts: &ConvertOptions,
) -> Result<(Vec<Profile>, TraceReport, Option<SymbolizeReport>)> {
    select_heapprofd_dumps(Input::open(input, opts.common.decode.max_gzip_bytes)?, &opts.selection())
}

/// Encodes one profile as `convert` writes it: in `opts.common.format`, showing `opts.common.value`.
pub fn encode_one(profile: &Profile, opts: &ConvertOptions) -> Result<Vec<u8>> {
    encode(profile, opts.common.format, &opts.encode_options())
}

pub(super) fn summary_options(opts: &ConvertOptions) -> SummaryOptions {
    SummaryOptions { view: opts.common.value, annotations: opts.common.annotations, ..Default::default() }
}

/// Output of `convert`: what to write where.
#[derive(Debug)]
pub struct ConvertRun {
    /// (destination path or None for stdout, bytes), in order. Folded stacks of a trace are
    /// written as they are encoded (to their file or standard output): their bytes here are
    /// empty.
    pub outputs: Vec<(Option<PathBuf>, Vec<u8>)>,
    /// What the trace holds.
    pub report: TraceReport,
    /// The symbolization report, when symbolization was asked for.
    pub symbols: Option<SymbolizeReport>,
    /// What each converted profile holds (for batch summaries); empty for reports that are
    /// not profiles (the `--to json` top report of a heap dump).
    pub profiles: Vec<ProfileTotals>,
    /// The heapprofd dumps of the trace that were converted (what warnings and `--strict`
    /// judge).
    pub converted: DumpFilter,
    /// What was read though not as written (a pprof input's strings that were not valid
    /// UTF-8), for the command line to warn about.
    pub warnings: Vec<String>,
}

/// Runs `convert`: decodes, selects, encodes (in parallel) and writes.
pub fn run_convert(input: &Path, dest: &Destination, opts: &ConvertOptions) -> Result<ConvertRun> {
    run_convert_inputs(&[input.to_path_buf()], dest, opts)
}

/// Runs `convert` on one or more inputs. One input may be a Perfetto trace or a DDM
/// allocation-record capture (told apart by their first bytes); several inputs must all be
/// DDM captures, which are merged into one profile.
pub fn run_convert_inputs(inputs: &[PathBuf], dest: &Destination, opts: &ConvertOptions) -> Result<ConvertRun> {
    convert_inputs_to(inputs, &|_| dest.clone(), opts)
}

/// Runs `convert` once into the directory `dir` for every format of `formats` (`--to
/// pprof,folded,svg`): the inputs are read and decoded once, and each format's files are
/// those a run of [`run_convert_inputs`] with that format alone writes into `dir`, with the
/// same names and bytes. `opts.common.format` is not used. DDM captures are read once and their
/// records decoded once per frame-label style (file and line per frame for pprof and JSON,
/// none for the text outputs).
pub fn run_convert_formats(
    inputs: &[PathBuf],
    dir: &Path,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    let [first, ..] = formats else {
        return Err(Error::new(ErrorKind::Usage, "no output format given"));
    };
    let dest = Destination::Dir(dir.to_path_buf());
    convert_inputs_each(inputs, &|_| dest.clone(), formats, &opts.in_format(*first))
}

/// [`run_convert_inputs`] with the destination chosen once the kind of input is known:
/// `dest_for(true)` when the input's outputs are one file per dump (a Perfetto trace in a
/// profile format, an HPROF heap dump with `--dump all`), `dest_for(false)` when they are one
/// file (a trace's JSON report, a DDM capture, one HPROF heap dump, a pprof profile).
pub(crate) fn convert_inputs_to(
    inputs: &[PathBuf],
    dest_for: &dyn Fn(bool) -> Destination,
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    convert_inputs_each(inputs, dest_for, std::slice::from_ref(&opts.common.format), opts)
}

/// [`convert_inputs_to`] in each format of `formats` from one decode (`opts.common.format` is the
/// first of them; it chooses the destination).
pub(super) fn convert_inputs_each(
    inputs: &[PathBuf],
    dest_for: &dyn Fn(bool) -> Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    if inputs.is_empty() {
        return Err(Error::new(ErrorKind::Usage, "no input given"));
    }
    let want_ddm = inputs.len() > 1 || is_alloc_file(&inputs[0]);
    let mut ddm = Vec::new();
    for path in inputs {
        match open_input(path, opts.common.decode.max_gzip_bytes, opts.ddm.max_bytes, want_ddm)? {
            Opened::Ddm { name, bytes } => ddm.push((name, bytes)),
            Opened::Pprof(inp, _) => {
                return convert_pprof(inp, &inputs[0], &dest_for(false), formats, opts);
            }
            Opened::Trace(inp, _) | Opened::Unknown(inp) | Opened::Hprof(inp) if names_a_type(opts) => {
                return Err(type_name_not_for(&inp.name));
            }
            Opened::Trace(inp, _) => {
                return convert_trace(inp, true, &inputs[0], &dest_for(!opts.common.format.is_report()), formats, opts);
            }
            Opened::Unknown(inp) => {
                return convert_trace(
                    inp,
                    false,
                    &inputs[0],
                    &dest_for(!opts.common.format.is_report()),
                    formats,
                    opts,
                );
            }
            Opened::Hprof(inp) if formats.iter().any(|f| f.is_report()) && !opts.common.filter.is_empty() => {
                return Err(filters_not_for_heap_report(&inp.name));
            }
            Opened::Hprof(inp) => {
                if inputs.len() > 1 {
                    return Err(Error::new(
                        ErrorKind::Usage,
                        format!("{}: `convert` takes one HPROF heap dump at a time", inp.name),
                    ));
                }
                return convert_hprof(
                    inp,
                    &inputs[0],
                    &dest_for(opts.common.select.dump == DumpSelect::All),
                    formats,
                    opts,
                );
            }
        }
    }
    if names_a_type(opts) {
        return Err(type_name_not_for(&inputs[0].display().to_string()));
    }
    convert_ddm(&ddm, inputs, &dest_for(false), formats, opts)
}

/// True when `opts.sample_type` names a type (rather than a meaning such as `total-size`).
pub(super) fn names_a_type(opts: &ConvertOptions) -> bool {
    opts.sample_type.as_deref().is_some_and(|s| matches!(TypeSelector::parse(s), TypeSelector::Name(_)))
}

pub(super) fn type_name_not_for(input: &str) -> Error {
    Error::new(
        ErrorKind::Usage,
        format!(
            "{input}: a sample type name chooses a type of a pprof input; other inputs show a value (unreleased size, \
             …)"
        ),
    )
    .with_hint(Hint::SampleTypeIsForPprof { input: input.to_owned() })
}

/// The error for several profiles where one output file was asked.
pub(super) fn several_profiles(matched: &[String]) -> Error {
    let by = &[Selector::Pid, Selector::Heap, Selector::Dump];
    choose_one(format!("{} profiles match", matched.len()), matched, by, true)
}

/// Outputs of a run: each path (`None`: standard output) and its bytes.
pub(super) type Outputs = Vec<(Option<PathBuf>, Vec<u8>)>;
/// `convert` of one input: a Perfetto trace to `OUT/<key>/heap_dump.N.PID.HEAP.<ext>` (one
/// file per selected dump, as `convert -o DIR/` names them), or to `OUT/<key>.json` with
/// `--to json`; a DDM capture, an HPROF heap dump or a pprof profile to `OUT/<key>.<ext>`
/// (an HPROF heap dump with `--dump all`: `OUT/<key>/<stem>.N.<ext>`, one per dump).
pub fn convert_one(input: &BatchInput, out_dir: &Path, opts: &ConvertOptions) -> Result<Done> {
    let format = opts.common.format;
    let file = file_for(out_dir, &input.key, format.extension())?;
    let dir = out_dir.join(&input.key);
    let dest_for =
        |per_dump: bool| if per_dump { Destination::Dir(dir.clone()) } else { Destination::File(file.clone()) };
    let run = convert_inputs_to(std::slice::from_ref(&input.path), &dest_for, opts)?;
    Ok(Done {
        outputs: run.outputs.into_iter().filter_map(|o| o.0).collect(),
        profiles: run.profiles,
        dumps: Some(run.converted),
        report: Some(run.report),
        symbols: run.symbols,
        warnings: run.warnings,
        ..Done::default()
    })
}
