//! `heapconv top`: the top table of profiles (several merged first), or the report of one Java
//! heap (classes by retained size, the largest retainers).

use std::path::{Path, PathBuf};

use super::load::{
    HeapSource, InputInfo, LoadOptions, ObjectSize, for_selected_heap_graphs, for_selected_hprof_dumps, heap_source,
    merge_inputs,
};
use super::select::{DumpSelect, choose_one, describe_heap_dump, describe_hprof_dump, no_heap_graph_match};
use crate::decode::Input;
use crate::decode::perfetto::DecodeOptions;
use crate::encode::top::{TopOptions, TopTable, top_table};
use crate::error::{Error, ErrorKind, Result, Selector};
use crate::merge::MergeOptions;
use crate::model::TraceReport;

/// Options of `heapconv top` on a Java heap (an HPROF heap dump or a trace's heap graphs).
#[derive(Debug, Clone)]
pub struct HeapTopRunOptions {
    /// Traces: only these pids (empty: all). Default: empty.
    pub pids: Vec<u64>,
    /// Which heap dump: of an HPROF file (the JVMTI hprof agent writes several), or of each
    /// process's heap graphs in a trace. Default: the last.
    pub dump: DumpSelect,
    /// How traces are read. Default: [`DecodeOptions::default`].
    pub decode: DecodeOptions,
    /// Show a trace's heap graphs even when it has heapprofd dumps. Default: false (a trace's
    /// heap graphs are shown when it has no heapprofd dump).
    pub java_heap: bool,
    /// The report: classes listed, retainers, path lengths. Default:
    /// [`crate::analysis::heap::HeapTopOptions::default`].
    pub top: crate::analysis::heap::HeapTopOptions,
    /// How an HPROF heap dump's shallow sizes are counted. Default: [`ObjectSize::Fields`]
    /// (the bytes the dump holds).
    pub object_size: ObjectSize,
    /// ProGuard/R8 maps for class and field names. Default: none.
    pub proguard: super::load::ProguardMaps,
}

impl Default for HeapTopRunOptions {
    fn default() -> Self {
        HeapTopRunOptions {
            pids: Vec::new(),
            dump: DumpSelect::Last,
            decode: DecodeOptions::default(),
            java_heap: false,
            top: crate::analysis::heap::HeapTopOptions::default(),
            object_size: ObjectSize::Fields,
            proguard: Default::default(),
        }
    }
}

/// What `heapconv top` shows.
#[derive(Debug)]
pub enum TopRun {
    /// The top table of a profile (several inputs merged), with what the inputs held.
    Table(crate::encode::top::TopTable, Vec<InputInfo>),
    /// The report of one Java heap: classes by retained size and the largest retainers, with
    /// what the input held (`damage` says when the heap is incomplete).
    Heap(Box<crate::analysis::heap::HeapTop>, TraceReport),
}

/// Runs `heapconv top`: for one HPROF heap dump, or one trace with `heap.java_heap`, the heap
/// report ([`TopRun::Heap`]); otherwise the top table of the merged inputs, except that a
/// single trace without heapprofd dumps but with Java heap graphs gets the heap report.
pub fn run_top(inputs: &[PathBuf], opts: &TopRunOptions, heap: &HeapTopRunOptions) -> Result<TopRun> {
    if let [input] = inputs {
        if let Some((top, report)) = heap_top_input(input, heap)? {
            return Ok(TopRun::Heap(Box::new(top), report));
        }
    }
    match merged_top_table(inputs, opts) {
        Ok((table, infos)) => Ok(TopRun::Table(table, infos)),
        Err(e) if e.kind() == ErrorKind::NoData && inputs.len() == 1 && inputs[0].as_os_str() != "-" => {
            // A trace without heapprofd dumps: its Java heap graphs, if it has any.
            let inp = Input::open(&inputs[0], heap.decode.max_gzip_bytes)?;
            match heap_graph_top(inp, &inputs[0], heap)? {
                Some((top, report)) => Ok(TopRun::Heap(Box::new(top), report)),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// The heap report of `input` when it is an HPROF heap dump, or a trace and `opts.java_heap`;
/// `None` for anything else (standard input is looked at only with `java_heap`).
fn heap_top_input(
    input: &Path,
    opts: &HeapTopRunOptions,
) -> Result<Option<(crate::analysis::heap::HeapTop, TraceReport)>> {
    use std::io::Read;
    let name = input.display().to_string();
    if name == "-" {
        if !opts.java_heap {
            return Ok(None);
        }
        let inp = Input::open(input, opts.decode.max_gzip_bytes)?;
        return heap_graph_top(inp, input, opts)?
            .map(Some)
            .ok_or_else(|| no_heap_graph_match(input, &TraceReport::default()));
    }
    let mut inp = Input::open(input, opts.decode.max_gzip_bytes)?;
    let mut head = Vec::new();
    inp.reader().take(64).read_to_end(&mut head).map_err(|e| Error::io(format!("reading {name}"), e))?;
    let again = || inp.reopen().ok_or_else(|| Error::new(ErrorKind::Io, format!("{name}: cannot be read twice")))?;
    match heap_source(&head) {
        HeapSource::Hprof => {
            use crate::analysis::heap::RootedHeap;
            let inp = again()?;
            let gzipped = inp.gzipped;
            let mut shown = None;
            let mut several = 0usize;
            let dumps =
                for_selected_hprof_dumps(inp, opts.dump, opts.object_size, &opts.proguard, &mut |n, dump, stats| {
                    if opts.dump == DumpSelect::All && stats.dumps.len() > 1 {
                        several = stats.dumps.len();
                        return Ok(());
                    }
                    let mut report = TraceReport { source: name.clone(), gzipped, ..Default::default() };
                    if !dump.incomplete.is_empty() {
                        let text = dump.incomplete.join("; ");
                        report.damage =
                            Some(if stats.dumps.len() > 1 { format!("heap dump {n}: {text}") } else { text });
                    }
                    let heap = RootedHeap::new(&dump);
                    let (spt, dom) = (heap.shortest_path_tree(), heap.dominators());
                    shown = Some((heap.heap_top(&spt, &dom, &opts.top), report));
                    Ok(())
                })?;
            if several > 1 {
                let matched: Vec<String> = dumps.iter().map(describe_hprof_dump).collect();
                let what = format!("{name}: {several} heap dumps");
                return Err(choose_one(what, &matched, &[Selector::Dump], false));
            }
            Ok(shown)
        }
        HeapSource::Trace if opts.java_heap => {
            let inp = again()?;
            heap_graph_top(inp, input, opts)?
                .map(Some)
                .ok_or_else(|| no_heap_graph_match(input, &TraceReport::default()))
        }
        _ => Ok(None),
    }
}

/// The heap report of the one heap graph dump of a trace that `opts` selects; `None` when the
/// trace holds no heap graph. Several matching dumps are a usage error that lists them.
fn heap_graph_top(
    mut inp: Input,
    input: &Path,
    opts: &HeapTopRunOptions,
) -> Result<Option<(crate::analysis::heap::HeapTop, TraceReport)>> {
    use crate::analysis::heap::RootedHeap;
    let mut described: Vec<String> = Vec::new();
    let mut top = None;
    let mut incomplete = Vec::new();
    let mut report =
        for_selected_heap_graphs(&mut inp, &opts.decode, &opts.pids, opts.dump, &opts.proguard, &mut |dump| {
            described.push(describe_heap_dump(dump.pid, dump.process_name.as_deref(), dump.timestamp));
            if described.len() == 1 {
                incomplete = dump.incomplete.clone();
                let heap = RootedHeap::new(&dump);
                let (spt, dom) = (heap.shortest_path_tree(), heap.dominators());
                top = Some(heap.heap_top(&spt, &dom, &opts.top));
            }
            Ok(())
        })?;
    if report.heap_graphs.is_empty() && report.damage.is_none() {
        return Ok(None);
    }
    let Some(top) = top else { return Err(no_heap_graph_match(input, &report)) };
    if described.len() > 1 {
        let what = format!("{} heap graph dumps match", described.len());
        return Err(choose_one(what, &described, &[Selector::Pid, Selector::Dump], false));
    }
    if !incomplete.is_empty() && report.damage.is_none() {
        report.damage = Some(format!("incomplete heap graph dump: {}", incomplete.join("; ")));
    }
    Ok(Some((top, report)))
}

/// Options of `heapconv top`.
#[derive(Debug, Clone)]
pub struct TopRunOptions {
    /// How inputs are read. Default: [`LoadOptions::default`].
    pub load: LoadOptions,
    /// How several inputs are merged. Default: [`MergeOptions::default`].
    pub merge: MergeOptions,
    /// What the rows are. Default: functions.
    pub by: TopGroup,
    /// Rows to keep (0: all). Default: 20, like the class table of a Java heap.
    pub count: usize,
    /// The sample type shown: a type name or a meaning (`unreleased-size`, …); `None`: the
    /// default type. Default: `None`.
    pub sample_type: Option<String>,
}

impl Default for TopRunOptions {
    fn default() -> Self {
        TopRunOptions {
            load: LoadOptions::default(),
            merge: MergeOptions::default(),
            by: TopGroup::default(),
            count: 20,
            sample_type: None,
        }
    }
}

/// What the rows of a profile's top table are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopGroup {
    /// Functions (flat: the leaf; cumulative: anywhere on the stack).
    #[default]
    Function,
    /// Mappings (binaries).
    Mapping,
    /// Whole stacks.
    Stack,
}

/// `top` of profiles: loads and merges the inputs, and makes the table.
fn merged_top_table(inputs: &[PathBuf], opts: &TopRunOptions) -> Result<(TopTable, Vec<InputInfo>)> {
    let mut load = opts.load.clone();
    load.ddm_lines = false;
    let (merger, infos) = merge_inputs(inputs, &load, &opts.merge, 1, &|_| 0)?;
    let profile = merger.finish()?.to_profile();
    let index = super::load::pick_sample_type(&profile.header, opts.sample_type.as_deref())?;
    let by = match opts.by {
        TopGroup::Function => crate::encode::top::TopBy::Function,
        TopGroup::Mapping => crate::encode::top::TopBy::Mapping,
        TopGroup::Stack => crate::encode::top::TopBy::Stack,
    };
    // pprof inputs only: their unsymbolized frames are named as `go tool pprof -top` names them.
    let go_names = infos.iter().all(|i| i.kind.is_pprof());
    let top = TopOptions { by, count: opts.count, value_index: index, go_names };
    Ok((top_table(&profile, &top), infos))
}

impl TopRun {
    /// The table or report as `top` prints it: text, or JSON with `json`.
    pub fn render(&self, json: bool) -> String {
        match (self, json) {
            (TopRun::Table(t, _), true) => crate::encode::top::top_json(t),
            (TopRun::Table(t, _), false) => crate::encode::top::top_text(t),
            (TopRun::Heap(top, _), true) => crate::encode::heap_top::heap_top_json(top),
            (TopRun::Heap(top, report), false) => {
                if top.process_name.is_none() && top.pid.is_none() {
                    // A heap dump without process name or pid (HPROF) is called by its file's
                    // name; the JSON keeps `process_name` null.
                    let mut named = (**top).clone();
                    named.process_name = Some(super::select::stem(Path::new(&report.source)));
                    crate::encode::heap_top::heap_top_text(&named)
                } else {
                    crate::encode::heap_top::heap_top_text(top)
                }
            }
        }
    }
}
