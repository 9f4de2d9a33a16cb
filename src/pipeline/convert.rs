//! `heapconv convert`: a trace's dumps, DDM captures (merged), an HPROF heap dump, a trace's
//! Java heap graphs or a pprof profile, in any output format ([`crate::encode::Format`]).

use std::path::{Path, PathBuf};

use super::batch::{BatchInput, Done, ProfileTotals, file_for};
use super::load::{
    HeapprofdSelection, ObjectSize, Opened, for_selected_heap_graphs, for_selected_hprof_dumps, is_alloc_file,
    open_input, pick_sample_type, select_heapprofd, select_heapprofd_dumps, symbolize_hook,
};
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
use crate::symbolize::SymbolizeReport;

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

fn summary_options(opts: &ConvertOptions) -> SummaryOptions {
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
fn convert_inputs_each(
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
fn names_a_type(opts: &ConvertOptions) -> bool {
    opts.sample_type.as_deref().is_some_and(|s| matches!(TypeSelector::parse(s), TypeSelector::Name(_)))
}

fn type_name_not_for(input: &str) -> Error {
    Error::new(
        ErrorKind::Usage,
        format!(
            "{input}: a sample type name chooses a type of a pprof input; other inputs show a value (unreleased size, \
             …)"
        ),
    )
    .with_hint(Hint::SampleTypeIsForPprof { input: input.to_owned() })
}

/// `convert` of a trace (`recognised`: sniffing knew it as one; else it may be no trace at all).
fn convert_trace(
    inp: Input,
    recognised: bool,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    if opts.java_heap {
        return convert_heap_graphs(inp, input, dest, formats, opts);
    }
    if let Some(run) = convert_trace_flat(&inp, input, dest, formats, opts) {
        return run;
    }
    // A trace without heapprofd dumps may hold Java heap graphs: those are converted then.
    let again = inp.reopen();
    let name = inp.name.clone();
    let (profiles, report, symbols) = select_heapprofd(inp, &opts.selection())?;
    if report.dumps.is_empty() && report.damage.is_none() {
        if let (Some(again), true) = (again, report.packet_kinds.get("heap_graph").is_some_and(|&n| n > 0)) {
            return convert_heap_graphs(again?, input, dest, formats, opts);
        }
        return Err(no_heapprofd(&name));
    }
    if profiles.is_empty() {
        if !recognised {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{}: neither a Perfetto trace nor a DDM allocation-record capture (a bare .alloc blob starting 0F 09 08, a REAL chunk or JDWP packets){}",
                    input.display(),
                    report.damage.as_deref().map(|d| format!("; as a trace: {d}")).unwrap_or_default()
                ),
            ));
        }
        return Err(Error::new(
            ErrorKind::NoData,
            format!(
                "{}: no dump matches the selection (see `heapconv inspect`){}",
                input.display(),
                report.damage.as_deref().map(|d| format!("; the input is damaged: {d}")).unwrap_or_default()
            ),
        ));
    }
    let profiles: Vec<Profile> = if opts.common.filter.is_empty() {
        profiles
    } else {
        profiles.into_iter().map(|p| filter_profile(p, &opts.common.filter)).collect()
    };
    let mut outputs = Vec::new();
    for &format in formats {
        outputs.extend(trace_outputs(&profiles, &report, symbols.as_ref(), input, dest, &opts.in_format(format))?);
    }
    let profiles = profiles.iter().map(ProfileTotals::of).collect();
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols, profiles, converted, warnings: Vec::new() })
}

/// The profiles of a trace written in `opts.common.format` to `dest` (or, for folded stacks, written
/// as they are encoded): the outputs, in order.
fn trace_outputs(
    profiles: &[Profile],
    report: &TraceReport,
    symbols: Option<&SymbolizeReport>,
    input: &Path,
    dest: &Destination,
    opts: &ConvertOptions,
) -> Result<Outputs> {
    use rayon::prelude::*;
    let outputs: Outputs = if opts.common.format.is_report() {
        let mut doc = convert_json(report, profiles, &summary_options(opts)).into_bytes();
        if let Some(sym) = symbols {
            // The symbolization report joins the document (the encoder does not know the stage).
            let mut v: serde_json::Value = serde_json::from_slice(&doc).expect("our own JSON");
            v["symbolization"] = serde_json::to_value(sym).expect("report serializes");
            doc = serde_json::to_vec_pretty(&v).expect("serializes");
            doc.push(b'\n');
        }
        match dest {
            Destination::Stdout => vec![(None, doc)],
            Destination::File(p) => vec![(Some(p.clone()), doc)],
            Destination::Dir(d) => vec![(Some(d.join(format!("{}.json", stem(input)))), doc)],
        }
    } else {
        if let Some(outs) = html_timelines(dest, profiles, opts) {
            let outs = outs?;
            write_outputs(input, dest, &outs)?;
            return Ok(outs);
        }
        if profiles.len() > 1 && !matches!(dest, Destination::Dir(_)) {
            let matched: Vec<String> = profiles.iter().map(|p| p.header.meta.describe()).collect();
            return Err(several_profiles(&matched));
        }
        let path_of = |n: usize, p: &Profile| match dest {
            Destination::Stdout => None,
            Destination::File(f) => Some(f.clone()),
            Destination::Dir(d) => Some(d.join(heap_dump_name(n + 1, p, opts.common.format.extension()))),
        };
        if opts.common.format == Format::Folded {
            // Written as they are made: the text of a big profile is never held whole.
            return stream_outputs(input, dest, profiles, opts, &path_of);
        }
        let encoded: Vec<Result<Vec<u8>>> = profiles.par_iter().map(|p| encode_one(p, opts)).collect();
        let mut outs = Vec::new();
        for (n, (p, bytes)) in profiles.iter().zip(encoded).enumerate() {
            outs.push((path_of(n, p), bytes?));
        }
        outs
    };
    write_outputs(input, dest, &outputs)?;
    Ok(outputs)
}

/// The error for several profiles where one output file was asked.
fn several_profiles(matched: &[String]) -> Error {
    let by = &[Selector::Pid, Selector::Heap, Selector::Dump];
    choose_one(format!("{} profiles match", matched.len()), matched, by, true)
}

/// Outputs of a run: each path (`None`: standard output) and its bytes.
type Outputs = Vec<(Option<PathBuf>, Vec<u8>)>;

/// `convert` of a trace's dumps to folded stacks or a flame graph without the stack tree: the
/// trace is decoded with callstacks as frame lists ([`decode_heapprofd_frames`]), and the
/// dumps selected become [`FlatProfile`]s, written by the frame-list encoders. The same bytes
/// as the stack-tree path, at a fraction of its work: building the tree of every callstack of
/// the trace (millions of nodes) for one dump's lines was most of it.
///
/// `None` (the caller goes on with the stack-tree path) for other formats, with filters or
/// symbolization, and for traces that this path would not convert the same way: one that
/// cannot be read twice, one without heapprofd dumps (its heap graphs are converted), one
/// where no dump matches (the caller words the error).
fn convert_trace_flat(
    inp: &Input,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Option<Result<ConvertRun>> {
    if !formats.iter().all(|f| matches!(f, Format::Folded | Format::Svg))
        || !opts.common.filter.is_empty()
        || opts.common.symbols.options().is_some()
    {
        return None;
    }
    let mut inp = match inp.reopen()? {
        Ok(i) => i,
        Err(e) => return Some(Err(e)),
    };
    let (profiles, report) = match select_flat(&mut inp, opts) {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    if profiles.is_empty() {
        return None;
    }
    Some(write_flat(profiles, report, input, dest, formats, opts))
}

/// Decodes a trace with frame lists and keeps the dumps `opts` selects (as
/// [`select_heapprofd`] keeps them), in time order.
fn select_flat(inp: &mut Input, opts: &ConvertOptions) -> Result<(Vec<FlatProfile>, TraceReport)> {
    use std::collections::BTreeMap;
    let mut decode = opts.common.decode.clone();
    decode.pids = opts.common.select.pids.clone();
    decode.include_unchanged = true;
    let mut kept: BTreeMap<(u64, String), Vec<ListDump>> = BTreeMap::new();
    let mut order: Vec<(u64, String)> = Vec::new();
    let deob = opts.common.symbols.proguard.open_for_trace(inp, decode.max_packet_bytes)?;
    // Only the names of the frames of the dumps kept are shown: those alone are demangled, after
    // decoding (deobfuscation reads names as interning gives them, so it keeps them eager).
    decode.deferred_names = !deob.is_some();
    let mut session = deob.session();
    let mut clock = crate::timing::Phases::start("convert");
    let (report, mut tables, lists) = decode_heapprofd_frames(
        inp,
        &decode,
        &mut |_, _| {},
        &mut |t, r| symbolize_hook(&mut None, &mut session, t, r),
        &mut |d: ListDump| {
            let meta = &d.header.meta;
            if opts.common.select.heap.as_deref().is_some_and(|h| h != meta.heap) {
                return Ok(());
            }
            if let DumpSelect::Nth(n) = opts.common.select.dump
                && meta.dump_index + 1 != n
            {
                return Ok(());
            }
            let key = (meta.pid.unwrap_or(0), meta.heap.clone());
            let slot = kept.entry(key.clone()).or_default();
            if slot.is_empty() {
                order.push(key);
            }
            if opts.common.select.dump == DumpSelect::Last {
                slot.clear();
            }
            slot.push(d);
            Ok(())
        },
    )?;
    clock.done("decode");
    if decode.deferred_names {
        let used = kept.values().flatten().flat_map(|d| d.stacks.iter().flat_map(|&s| lists.frames(s).iter().copied()));
        std::sync::Arc::make_mut(&mut tables).settle_names(used);
    }
    clock.done("names");
    let mut out = Vec::new();
    for key in order {
        for d in kept.remove(&key).unwrap_or_default() {
            out.push(flat_of(d, &tables, &lists));
        }
    }
    out.sort_by_key(|p| p.header.meta.timestamp.unwrap_or(i64::MIN));
    clock.done("frame lists");
    Ok((out, report))
}

/// A dump of frame lists as a [`FlatProfile`] (frames leaf first, each row its own span).
fn flat_of(d: ListDump, tables: &std::sync::Arc<crate::model::Tables>, lists: &StackLists) -> FlatProfile {
    let n: usize = d.stacks.iter().map(|&s| lists.frames(s).len()).sum();
    let mut frames = Vec::with_capacity(n);
    let mut spans = Vec::with_capacity(d.stacks.len());
    for &s in &d.stacks {
        let f = lists.frames(s);
        spans.push((frames.len() as u32, f.len() as u32));
        frames.extend(f.iter().rev());
    }
    let ListDump { header, values, .. } = d;
    let default = header.default_sample_type;
    let mut p =
        FlatProfile::from_spans(std::sync::Arc::clone(tables), header.meta, header.sample_types, frames, spans, values);
    p.header.default_sample_type = default;
    p
}

/// Writes the flat profiles of [`convert_trace_flat`] in each of `formats` as `convert_trace`
/// writes profiles.
fn write_flat(
    profiles: Vec<FlatProfile>,
    report: TraceReport,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    if profiles.len() > 1 && !matches!(dest, Destination::Dir(_)) {
        let matched: Vec<String> = profiles.iter().map(|p| p.header.meta.describe()).collect();
        return Err(several_profiles(&matched));
    }
    if let Destination::Dir(d) = dest {
        ensure_dir(d)?;
    }
    let mut outputs = Vec::new();
    for &format in formats {
        outputs.extend(write_flat_in(&profiles, input, dest, &opts.in_format(format))?);
    }
    let profiles = profiles.iter().map(ProfileTotals::of_flat).collect();
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols: None, profiles, converted, warnings: Vec::new() })
}

/// [`write_flat`] in `opts.common.format`: the outputs, in order.
fn write_flat_in(profiles: &[FlatProfile], input: &Path, dest: &Destination, opts: &ConvertOptions) -> Result<Outputs> {
    use rayon::prelude::*;
    let inputs = [input.to_path_buf()];
    let eopts = opts.encode_options();
    let ext = opts.common.format.extension();
    let written: Vec<Result<(Option<PathBuf>, Vec<u8>)>> = profiles
        .par_iter()
        .enumerate()
        .map(|(n, p)| {
            let path = match dest {
                Destination::Stdout => None,
                Destination::File(f) => Some(f.clone()),
                Destination::Dir(d) => Some(d.join(heap_dump_name_of(n + 1, &p.header.meta, ext))),
            };
            if opts.common.format != Format::Folded {
                return Ok((path, encode_flat(p, opts.common.format, &eopts)?));
            }
            // Folded stacks are written as they are made: the text is never held whole.
            match &path {
                Some(path) => {
                    let mut f = AtomicFile::create(path, &inputs)?;
                    encode_flat_to(p, opts.common.format, &eopts, &mut f, &path.display().to_string())?;
                    f.commit()?;
                }
                None => {
                    check_not_input(Path::new("-"), &inputs)?;
                    encode_flat_to(p, opts.common.format, &eopts, &mut std::io::stdout().lock(), "standard output")?;
                }
            }
            Ok((path, Vec::new()))
        })
        .collect();
    let outputs: Outputs = written.into_iter().collect::<Result<_>>()?;
    if opts.common.format != Format::Folded {
        write_outputs(input, dest, &outputs)?;
    }
    Ok(outputs)
}

/// `--to html` of several dumps of one process and heap: one report per (pid, heap) with a
/// timeline of its dumps (a single dump gets its usual report and name). `None` when no
/// (pid, heap) has several dumps, or when there are several reports and `dest` is not a
/// directory (the caller then says so).
fn html_timelines(dest: &Destination, profiles: &[Profile], opts: &ConvertOptions) -> Option<Result<Outputs>> {
    use rayon::prelude::*;
    if opts.common.format != Format::Html {
        return None;
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (n, p) in profiles.iter().enumerate() {
        let key = |q: &Profile| (q.header.meta.pid, q.header.meta.heap.clone());
        match groups.iter_mut().find(|g| key(&profiles[g[0]]) == key(p)) {
            Some(g) => g.push(n),
            None => groups.push(vec![n]),
        }
    }
    if groups.len() == profiles.len() || (groups.len() > 1 && !matches!(dest, Destination::Dir(_))) {
        return None;
    }
    let eopts = opts.encode_options();
    let outs: Vec<Result<(Option<PathBuf>, Vec<u8>)>> = groups
        .par_iter()
        .map(|g| {
            let first = &profiles[g[0]];
            let path = match dest {
                Destination::Stdout => None,
                Destination::File(f) => Some(f.clone()),
                Destination::Dir(d) if g.len() == 1 => Some(d.join(heap_dump_name(g[0] + 1, first, "html"))),
                Destination::Dir(d) => Some(d.join(format!(
                    "heap_dump.timeline.{}.{}.html",
                    first.header.meta.pid.unwrap_or(0),
                    first.header.meta.heap
                ))),
            };
            let bytes = if g.len() == 1 {
                encode_one(first, opts)?
            } else {
                let dumps: Vec<&Profile> = g.iter().map(|&n| &profiles[n]).collect();
                encode_html_timeline(&dumps, &eopts)?
            };
            Ok((path, bytes))
        })
        .collect();
    Some(outs.into_iter().collect())
}

/// Writes each profile to its output (`path_of`; `None` is standard output) as it is encoded,
/// in parallel; what is returned names the outputs with no bytes (they are written).
fn stream_outputs(
    input: &Path,
    dest: &Destination,
    profiles: &[Profile],
    opts: &ConvertOptions,
    path_of: &(dyn Fn(usize, &Profile) -> Option<PathBuf> + Sync),
) -> Result<Vec<(Option<PathBuf>, Vec<u8>)>> {
    use rayon::prelude::*;
    let inputs = [input.to_path_buf()];
    if let Destination::Dir(d) = dest {
        ensure_dir(d)?;
    }
    let eopts = opts.encode_options();
    let written: Vec<Result<Option<PathBuf>>> = profiles
        .par_iter()
        .enumerate()
        .map(|(n, p)| match path_of(n, p) {
            Some(path) => {
                let mut f = AtomicFile::create(&path, &inputs)?;
                encode_to(p, opts.common.format, &eopts, &mut f, &path.display().to_string())?;
                f.commit()?;
                Ok(Some(path))
            }
            None => {
                check_not_input(Path::new("-"), &inputs)?;
                encode_to(p, opts.common.format, &eopts, &mut std::io::stdout().lock(), "standard output")?;
                Ok(None)
            }
        })
        .collect();
    written.into_iter().map(|w| w.map(|path| (path, Vec::new()))).collect()
}

/// `convert` of an HPROF heap dump: the dominator tree (or the shortest-path tree) as pprof,
/// folded stacks or a flame graph, or the `top` report (classes by retained size, the largest
/// retainers and their paths from GC roots) as JSON. A damaged dump converts what was
/// complete and says so in the report. `opts.common.select.dump` picks the file's heap dump (the last by
/// default); `All` writes one output per dump, which needs a directory when the file holds
/// several, where they are named `STEM.N.EXT` (N the dump's 1-based number).
fn convert_hprof(
    inp: Input,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    let name = inp.name.clone();
    let gzipped = inp.gzipped;
    let all = opts.common.select.dump == DumpSelect::All;
    let multi_ok = matches!(dest, Destination::Dir(_));
    let mut outputs = Vec::new();
    let mut profiles = Vec::new();
    let mut incomplete: Vec<String> = Vec::new();
    let mut several = false;
    let dumps = for_selected_hprof_dumps(
        inp,
        opts.common.select.dump,
        opts.object_size,
        &opts.common.symbols.proguard,
        &mut |n, dump, stats| {
            if all && stats.dumps.len() > 1 && !multi_ok {
                several = true;
                return Ok(());
            }
            if !dump.incomplete.is_empty() {
                let text = dump.incomplete.join("; ");
                incomplete.push(if stats.dumps.len() > 1 { format!("heap dump {n}: {text}") } else { text });
            }
            let mut kept = None;
            for &format in formats {
                let opts = &opts.in_format(format);
                let (bytes, totals) = heap_output(&dump, input, opts)?;
                if kept.is_none() {
                    kept = totals;
                }
                let ext = format.extension();
                let path = match dest {
                    Destination::Stdout => None,
                    Destination::File(f) => Some(f.clone()),
                    Destination::Dir(d) if all => Some(d.join(format!("{}.{n}.{ext}", stem(input)))),
                    Destination::Dir(d) => Some(d.join(format!("{}.{ext}", stem(input)))),
                };
                outputs.push((path, bytes));
            }
            profiles.extend(kept);
            Ok(())
        },
    )?;
    if several {
        let matched: Vec<String> = dumps.iter().map(describe_hprof_dump).collect();
        return Err(choose_one(format!("{name}: {} heap dumps", dumps.len()), &matched, &[Selector::Dump], true));
    }
    let mut report = TraceReport { source: name.clone(), gzipped, ..Default::default() };
    if !incomplete.is_empty() {
        report.damage = Some(incomplete.join("; "));
    }
    write_outputs(input, dest, &outputs)?;
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols: None, profiles, converted, warnings: Vec::new() })
}

/// The error for filters given with the JSON report of a Java heap, which lists classes and
/// retainers, not stacks.
fn filters_not_for_heap_report(name: &str) -> Error {
    Error::new(
        ErrorKind::Usage,
        format!(
            "{name}: the JSON report of a Java heap lists classes and retainers, which stack filters do not apply \
             to; its dominator tree in a profile format can be filtered"
        ),
    )
    .with_hint(Hint::FiltersNotForHeapReport { input: name.to_owned() })
}

/// One Java heap as `convert` writes it: the tree `opts.heap_tree` names as a profile in
/// `opts.common.format` (with its totals), or, for JSON, the top report.
fn heap_output(dump: &HeapDump, input: &Path, opts: &ConvertOptions) -> Result<(Vec<u8>, Option<ProfileTotals>)> {
    use crate::analysis::heap::{HeapTopOptions, RootedHeap};
    use crate::encode::heap_top::heap_top_json;
    let heap = RootedHeap::new(dump);
    if opts.common.format.is_report() {
        if !opts.common.filter.is_empty() {
            return Err(filters_not_for_heap_report(&stem(input)));
        }
        let spt = heap.shortest_path_tree();
        let dom = heap.dominators();
        return Ok((heap_top_json(&heap.heap_top(&spt, &dom, &HeapTopOptions::default())).into_bytes(), None));
    }
    // The HTML report carries the top report too (classes, largest retainers, paths from
    // roots), which needs both trees.
    let html = opts.common.format == Format::Html;
    let (spt, dom) = match opts.heap_tree {
        HeapTree::Dominator => (html.then(|| heap.shortest_path_tree()), Some(heap.dominators())),
        HeapTree::ShortestPath => (Some(heap.shortest_path_tree()), html.then(|| heap.dominators())),
    };
    let mut profile = match (opts.heap_tree, &spt, &dom) {
        (HeapTree::Dominator, _, Some(dom)) => heap.dominator_profile(dom),
        (HeapTree::ShortestPath, Some(spt), _) => heap.spt_profile(spt),
        _ => unreachable!("the tree shown is made above"),
    };
    // A heap dump without process name or pid (HPROF) is called by its file's name.
    let meta = &mut profile.header.meta;
    if meta.process_name.is_none() && meta.pid.is_none() {
        meta.process_name = Some(stem(input));
    }
    let profile = filter_profile(profile, &opts.common.filter);
    // With stack filters the report shows the filtered tree only: its class and retainer
    // tables (the top report) are of the whole heap, which filters do not apply to (as for
    // `--to json`).
    if let (true, true, Some(spt), Some(dom)) = (html, opts.common.filter.is_empty(), &spt, &dom) {
        let top = heap.heap_top(spt, dom, &HeapTopOptions { classes: 200, retainers: 50, ..Default::default() });
        return Ok((encode_heap_html(&profile, &top, &opts.encode_options())?, Some(ProfileTotals::of(&profile))));
    }
    Ok((encode_one(&profile, opts)?, Some(ProfileTotals::of(&profile))))
}

/// `convert` of a trace's Java heap graphs: per selected dump (`--pid`, `--dump`), the
/// dominator or shortest-path tree as pprof, folded stacks or a flame graph, or the top report
/// as JSON. Several dumps need a directory, where they are named `java_heap_dump.N.PID.EXT`
/// (N counting the files written from 1, in the order the dumps end in the trace). An
/// incomplete dump converts what it has and the run is partial.
fn convert_heap_graphs(
    mut inp: Input,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    use crate::analysis::heap::JAVA_HEAP_NAME;
    if let Some(h) = opts.common.select.heap.as_deref().filter(|h| *h != JAVA_HEAP_NAME) {
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{}: no heap `{h}` in the Java heap graphs (their heap is `{JAVA_HEAP_NAME}`)", input.display()),
        ));
    }
    let mut outputs: Vec<(Option<PathBuf>, Vec<u8>)> = Vec::new();
    let mut described: Vec<String> = Vec::new();
    let mut incomplete: Vec<String> = Vec::new();
    let mut profiles = Vec::new();
    let multi_ok = matches!(dest, Destination::Dir(_));
    let mut report = for_selected_heap_graphs(
        &mut inp,
        &opts.common.decode,
        &opts.common.select.pids,
        opts.common.select.dump,
        &opts.common.symbols.proguard,
        &mut |dump| {
            let describe = describe_heap_dump(dump.pid, dump.process_name.as_deref(), dump.timestamp);
            described.push(describe.clone());
            if !multi_ok && described.len() > 1 {
                // Only listed: the run ends in a usage error.
                return Ok(());
            }
            if !dump.incomplete.is_empty() {
                incomplete.push(format!("{describe}: {}", dump.incomplete.join("; ")));
            }
            let mut kept = None;
            for &format in formats {
                let (bytes, totals) = heap_output(&dump, input, &opts.in_format(format))?;
                if kept.is_none() {
                    kept = totals;
                }
                let path = match dest {
                    Destination::Stdout => None,
                    Destination::File(f) => Some(f.clone()),
                    Destination::Dir(d) => Some(d.join(format!(
                        "java_heap_dump.{}.{}.{}",
                        described.len(),
                        dump.pid.unwrap_or(0),
                        format.extension()
                    ))),
                };
                outputs.push((path, bytes));
            }
            profiles.extend(kept);
            Ok(())
        },
    )?;
    if described.is_empty() {
        return Err(no_heap_graph_match(input, &report));
    }
    if described.len() > 1 && !multi_ok {
        return Err(several_heap_graphs(&described, &[Selector::Pid, Selector::Dump]));
    }
    if !incomplete.is_empty() && report.damage.is_none() {
        report.damage = Some(format!("incomplete heap graph dump(s): {}", incomplete.join(" | ")));
    }
    write_outputs(input, dest, &outputs)?;
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols: None, profiles, converted, warnings: Vec::new() })
}

/// Converts DDM captures, merged into one profile, in each of `formats`. The captures are
/// decoded once; the profile is made once per frame-label style the formats need.
fn convert_ddm(
    inputs: &[(String, Vec<u8>)],
    paths: &[PathBuf],
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    if !opts.common.select.pids.is_empty()
        || opts.common.select.heap.is_some()
        || opts.common.select.dump != DumpSelect::Last
    {
        return Err(Error::new(
            ErrorKind::Usage,
            "a selection of processes, heap and dump is for heapprofd dumps; a DDM allocation-record capture has one \
             profile",
        )
        .with_hint(Hint::SelectionNotForDdm));
    }
    let mut captures =
        inputs.iter().map(|(name, bytes)| decode_alloc_records(bytes, name, &opts.ddm)).collect::<Result<Vec<_>>>()?;
    let deob = opts.common.symbols.proguard.open()?;
    for c in &mut captures {
        super::load::deobfuscate_capture(deob.as_deref(), &mut c.records);
    }
    // pprof gets one sample per allocation with file and line per frame; the text outputs
    // label frames `class.method(File.java:12)` and need only one sample per stack.
    let style = |format: Format| {
        let mut ddm = opts.ddm.clone();
        ddm.lines = format.keeps_lines();
        ddm.per_allocation = format.keeps_lines();
        ddm
    };
    let mut made: [Option<Profile>; 2] = [None, None];
    let mut outputs = Vec::new();
    let mut first: Option<(TraceReport, ProfileTotals)> = None;
    for &format in formats {
        let opts = &opts.in_format(format);
        let ddm = style(format);
        let profile = made[usize::from(format.keeps_lines())]
            .get_or_insert_with(|| filter_profile(alloc_records_profile(&captures, &ddm), &opts.common.filter));
        let mut report = TraceReport {
            source: profile.header.meta.source.clone(),
            bytes: inputs.iter().map(|(_, b)| b.len() as u64).sum(),
            ..Default::default()
        };
        for c in &captures {
            for p in &c.problems {
                report.problem(None, None, format!("{}: {p}", c.source));
            }
        }
        let bytes = ddm_output(&captures, profile, &report, &ddm, opts)?;
        let path = match dest {
            Destination::Stdout => None,
            Destination::File(f) => Some(f.clone()),
            Destination::Dir(d) => Some(d.join(format!("{}.{}", stem(&paths[0]), format.extension()))),
        };
        if let Destination::Dir(d) = dest {
            ensure_dir(d)?;
        }
        match &path {
            Some(p) => write_atomic(p, &bytes, paths)?,
            None => check_not_input(Path::new("-"), paths)?,
        }
        outputs.push((path, bytes));
        first.get_or_insert_with(|| (report, ProfileTotals::of(profile)));
    }
    let (report, totals) = first.ok_or_else(|| Error::new(ErrorKind::Usage, "no output format given"))?;
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols: None, profiles: vec![totals], converted, warnings: Vec::new() })
}

/// The bytes of the profile of DDM captures in `opts.common.format` (`ddm` the options it was made
/// with): the JSON summary with each capture's report, a flame graph with a title, or the
/// format's encoding.
fn ddm_output(
    captures: &[AllocCapture],
    profile: &Profile,
    report: &TraceReport,
    ddm: &DdmOptions,
    opts: &ConvertOptions,
) -> Result<Vec<u8>> {
    Ok(match opts.common.format {
        Format::Json => {
            let doc = convert_json(report, std::slice::from_ref(profile), &summary_options(opts));
            let mut v: serde_json::Value = serde_json::from_str(&doc).expect("our own JSON");
            let ddm_reports: Vec<DdmInspect> = captures.iter().map(|c| ddm_inspect(c, ddm)).collect();
            v["ddm"] = serde_json::to_value(ddm_reports).expect("report serializes");
            let mut doc = serde_json::to_vec_pretty(&v).expect("serializes");
            doc.push(b'\n');
            doc
        }
        Format::Svg => {
            let index = profile
                .value_index(opts.common.value)
                .or_else(|| profile.value_index(ValueKind::TotalSize))
                .unwrap_or(0);
            let title = format!(
                "{}: Java allocations (DDM allocation records), {}",
                profile.header.meta.process_name.as_deref().unwrap_or(""),
                profile.header.sample_types[index].name
            );
            // The flame graph of Java frames gets a title and no ART annotations.
            let eopts = EncodeOptions {
                shown: Shown::Index(index),
                annotations: false,
                title: Some(title),
                ..Default::default()
            };
            encode(profile, Format::Svg, &eopts)?
        }
        _ => encode_one(profile, opts)?,
    })
}

/// Converts one pprof input (`convert` on a pprof file): decoded once, then encoded in each of
/// `formats` with the names it has (annotations are not added again).
fn convert_pprof(
    mut inp: Input,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    let flat = read_pprof(&mut inp, &PprofDecodeOptions::default())?;
    let warnings = super::load::pprof_warnings(&input.display().to_string(), &flat);
    let flat = filter_flat(flat, &opts.common.filter);
    // The pprof convention (`default_sample_type`, else the last type), or the type asked for.
    let index = pick_sample_type(&flat.header, opts.sample_type.as_deref())?;
    let inputs = [input.to_path_buf()];
    let mut outputs = Vec::new();
    for &format in formats {
        // Names are written as the input has them (annotations are not added again).
        let eopts = EncodeOptions { annotations: false, shown: Shown::Index(index), ..opts.encode_options() };
        let bytes = encode_flat(&flat, format, &eopts)?;
        let path = match dest {
            Destination::Stdout => None,
            Destination::File(f) => Some(f.clone()),
            Destination::Dir(d) => {
                crate::output::ensure_dir(d)?;
                Some(d.join(format!("{}.{}", stem(input), format.extension())))
            }
        };
        match &path {
            Some(p) => crate::output::write_atomic(p, &bytes, &inputs)?,
            None => crate::output::check_not_input(Path::new("-"), &inputs)?,
        }
        outputs.push((path, bytes));
    }
    let report = TraceReport { source: input.display().to_string(), ..Default::default() };
    let profiles = vec![ProfileTotals::of_flat(&flat)];
    let symbols = opts.common.symbols.options().map(|_| pprof_coverage(&flat));
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols, profiles, converted, warnings })
}

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
