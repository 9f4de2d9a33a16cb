//! Any input as profiles, for `merge`, `diff` and `top` ([`load_input`]), and the merge of many
//! inputs read in parallel ([`merge_inputs`]).

use rayon::prelude::*;

use super::ddm::deobfuscate_capture;
use super::open::{Opened, open_input};
use super::sources::SymbolSources;
use super::trace::{HeapprofdSelection, select_heapprofd_dumps};
use crate::analysis::filter::FilterOptions;
use crate::decode::ddm_alloc_records::{DdmOptions, alloc_records_profile, decode_alloc_records};
use crate::decode::perfetto::DecodeOptions;
use crate::decode::pprof::{LeanPprof, PprofDecodeOptions, read_pprof};
use crate::decode::{Input, InputKind};
use crate::error::{Error, ErrorKind, Result};
use crate::merge::{AnyProfile, MergeOptions, Merger, PprofParts, TypeSelector, merge_tree};
use crate::model::{FlatProfile, Profile, TraceReport};
use crate::pipeline::reports::pprof_coverage;
use crate::pipeline::select::{DumpFilter, Selection};
use crate::symbolize::SymbolizeReport;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How inputs are read for `merge`, `diff` and `top`.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Which processes, heaps and dumps of a trace are kept. Default: [`Selection::default`]
    /// (every pid and heap, the last dump of each).
    pub select: Selection,
    /// Bake ART annotations (`[jit]`, …) into frame names of traces. Default: true.
    pub annotations: bool,
    /// Trace decoder options. Default: [`DecodeOptions::default`].
    pub decode: DecodeOptions,
    /// Where symbols come from (symbol directories, the coverage gate). Default: none (no
    /// symbolization; symbols already in the input are still used).
    pub symbols: SymbolSources,
    /// DDM capture options. Default: [`DdmOptions::default`] (for a merge, captures are always
    /// summed per stack, without per-allocation labels).
    pub ddm: DdmOptions,
    /// Give DDM frames pprof lines (function, file, line) rather than `Class.method(File:12)`
    /// names. Default: true (what pprof output wants; the text outputs set it to false).
    pub ddm_lines: bool,
    /// pprof decoder options. Default: [`PprofDecodeOptions::default`].
    pub pprof: PprofDecodeOptions,
    /// Leave out the samples of pprof inputs that have no locations, as `go tool pprof -proto`
    /// does when it merges (`merge` and `diff` set it; `top` keeps them as a `[no stack]`
    /// row). Default: false.
    pub drop_empty_stacks: bool,
    /// pprof-style filters applied to every profile loaded. Default: none.
    pub filter: FilterOptions,
}

impl LoadOptions {
    /// The dumps of a trace these options take.
    pub fn dump_filter(&self, report: &TraceReport) -> DumpFilter {
        self.select.dump_filter(report)
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            select: Selection::default(),
            annotations: true,
            decode: DecodeOptions::default(),
            symbols: SymbolSources::default(),
            ddm: DdmOptions::default(),
            ddm_lines: true,
            pprof: PprofDecodeOptions::default(),
            drop_empty_stacks: false,
            filter: FilterOptions::default(),
        }
    }
}

/// What was read from one input.
#[derive(Debug)]
pub struct LoadedInput {
    /// The input's name (path, or `-`).
    pub name: String,
    /// What it was.
    pub kind: InputKind,
    /// Profiles it gave with their stacks in a tree (a trace: one per selected dump; a
    /// capture: one).
    pub profiles: Vec<Profile>,
    /// Profiles it gave with frame lists (a pprof file: one).
    pub flat: Vec<FlatProfile>,
    /// Whether its frames get ART annotations baked in when merged.
    pub annotate: bool,
    /// What the trace decoder found (traces only).
    pub report: Option<TraceReport>,
    /// The symbolization report, when symbolization was asked for (traces only).
    pub symbols: Option<SymbolizeReport>,
}

/// What a merge read, per input, without the profiles.
#[derive(Debug)]
pub struct InputInfo {
    /// The input's name.
    pub name: String,
    /// What it was.
    pub kind: InputKind,
    /// Profiles it gave.
    pub profiles: usize,
    /// What the trace decoder found (traces only).
    pub report: Option<TraceReport>,
    /// The symbolization report (traces with symbolization only).
    pub symbols: Option<SymbolizeReport>,
    /// The heapprofd dumps taken from the trace (traces only).
    pub converted: Option<DumpFilter>,
    /// What was read though not as written (strings that were not valid UTF-8), for the
    /// command line to warn about.
    pub warnings: Vec<String>,
}

impl InputInfo {
    /// What the input says was lost, of the dumps taken from it, each line naming the input.
    pub fn data_loss(&self) -> Vec<String> {
        match (&self.report, &self.converted) {
            (Some(r), Some(f)) => {
                r.data_loss_of(&|d| f.keeps(d)).into_iter().map(|l| format!("{}: {l}", self.name)).collect()
            }
            _ => Vec::new(),
        }
    }

    /// True when the input was damaged and only its complete part was used.
    pub fn is_partial(&self) -> bool {
        self.report.as_ref().is_some_and(|r| r.is_partial())
    }
}

/// Opens and decodes one input of any kind heapconv reads, and filters its profiles
/// ([`LoadOptions::filter`]).
pub fn load_input(path: &Path, opts: &LoadOptions) -> Result<LoadedInput> {
    let mut loaded = load_input_unfiltered(path, opts)?;
    apply_filter(&mut loaded, opts);
    Ok(loaded)
}

/// Filters a loaded input's profiles ([`LoadOptions::filter`]; nothing when it is empty).
fn apply_filter(loaded: &mut LoadedInput, opts: &LoadOptions) {
    if opts.filter.is_empty() {
        return;
    }
    loaded.profiles = std::mem::take(&mut loaded.profiles)
        .into_iter()
        .map(|p| crate::analysis::filter::filter_profile(p, &opts.filter))
        .collect();
    loaded.flat = std::mem::take(&mut loaded.flat)
        .into_iter()
        .map(|p| crate::analysis::filter::filter_flat(p, &opts.filter))
        .collect();
}

fn load_input_unfiltered(path: &Path, opts: &LoadOptions) -> Result<LoadedInput> {
    let opened = open_input(path, opts.decode.max_gzip_bytes, opts.ddm.max_bytes, false)?;
    load_opened(path, opened, opts)
}

/// An input as a merge takes it: a pprof profile's bytes, to be read without tables
/// ([`crate::decode::pprof::decode_pprof_lean`]), or anything else loaded.
enum ForMerge {
    Pprof { name: String, kind: InputKind, bytes: Vec<u8> },
    Loaded(Box<LoadedInput>),
}

/// Loads `path` for a merge: the bytes of a pprof profile when nothing (filters, symbols) is
/// applied to it and its empty stacks are dropped, else as [`load_input`] loads it.
fn load_for_merge(path: &Path, opts: &LoadOptions) -> Result<ForMerge> {
    let opened = open_input(path, opts.decode.max_gzip_bytes, opts.ddm.max_bytes, false)?;
    let lean = opts.filter.is_empty() && opts.symbols.options().is_none() && opts.drop_empty_stacks;
    match opened {
        Opened::Pprof(mut inp, kind) if lean => {
            let name = path.display().to_string();
            let bytes = crate::decode::pprof::read_pprof_bytes(&mut inp, &opts.pprof)?;
            if !crate::decode::legacy_heap::looks_like_legacy_heap(&bytes) {
                return Ok(ForMerge::Pprof { name, kind, bytes });
            }
            let profile = without_empty_stacks(crate::decode::legacy_heap::decode_legacy_heap(&bytes, &name)?);
            Ok(ForMerge::Loaded(Box::new(LoadedInput {
                name,
                kind,
                profiles: Vec::new(),
                flat: vec![profile],
                annotate: false,
                report: None,
                symbols: None,
            })))
        }
        opened => {
            let mut loaded = load_opened(path, opened, opts)?;
            apply_filter(&mut loaded, opts);
            Ok(ForMerge::Loaded(Box::new(loaded)))
        }
    }
}

fn load_opened(path: &Path, opened: Opened, opts: &LoadOptions) -> Result<LoadedInput> {
    let name = path.display().to_string();
    match opened {
        Opened::Ddm { name, bytes } => {
            let mut ddm = opts.ddm.clone();
            ddm.per_allocation = false;
            ddm.lines = opts.ddm_lines;
            let mut capture = decode_alloc_records(&bytes, &name, &ddm)?;
            deobfuscate_capture(opts.symbols.proguard.open()?.as_deref(), &mut capture.records);
            let kind = crate::decode::sniff(&bytes[..bytes.len().min(64)]);
            let profile = alloc_records_profile(std::slice::from_ref(&capture), &ddm);
            Ok(LoadedInput {
                name,
                kind,
                profiles: vec![profile],
                flat: Vec::new(),
                annotate: false,
                report: None,
                symbols: None,
            })
        }
        Opened::Pprof(mut inp, kind) => {
            let mut profile = read_pprof(&mut inp, &opts.pprof)?;
            if opts.drop_empty_stacks {
                profile = without_empty_stacks(profile);
            }
            let symbols = opts.symbols.options().map(|_| pprof_coverage(&profile));
            Ok(LoadedInput {
                name,
                kind,
                profiles: Vec::new(),
                flat: vec![profile],
                annotate: false,
                report: None,
                symbols,
            })
        }
        Opened::Trace(inp, kind) => load_trace(inp, kind, &name, opts),
        Opened::Unknown(inp) => load_trace(inp, InputKind::Unknown, &name, opts),
        Opened::Hprof(_) => Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{name}: an HPROF heap dump is a snapshot of objects, not an allocation profile; \
                 convert it first (`heapconv convert {name} --to pprof`) and merge the pprof"
            ),
        )),
    }
}

pub(crate) fn load_trace(inp: Input, kind: InputKind, name: &str, opts: &LoadOptions) -> Result<LoadedInput> {
    let sel = HeapprofdSelection {
        decode: &opts.decode,
        pids: &opts.select.pids,
        heap: opts.select.heap.as_deref(),
        dump: opts.select.dump,
        symbolize: opts.symbols.options(),
        proguard: &opts.symbols.proguard,
    };
    let (profiles, report, symbols) = match select_heapprofd_dumps(inp, &sel) {
        Ok(r) => r,
        Err(e) if kind == InputKind::Unknown => {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{name}: not a Perfetto trace, a DDM allocation-record capture nor a pprof profile ({})",
                    e.context()
                ),
            ));
        }
        Err(e) => return Err(e),
    };
    if profiles.is_empty() {
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{name}: no dump matches the selection (see `heapconv inspect`)"),
        ));
    }
    Ok(LoadedInput {
        name: name.to_owned(),
        kind,
        profiles,
        flat: Vec::new(),
        annotate: opts.annotations,
        report: Some(report),
        symbols,
    })
}

/// Loads every input and merges their profiles into accumulators with `sides` value sets,
/// `side_of(input index)` choosing each input's side. Inputs are read in parallel; the result
/// does not depend on their order. Returns the accumulator and, in input order, what each
/// input held.
pub fn merge_inputs(
    inputs: &[PathBuf],
    load: &LoadOptions,
    merge: &MergeOptions,
    sides: usize,
    side_of: &(dyn Fn(usize) -> usize + Sync),
) -> Result<(Merger, Vec<InputInfo>)> {
    if inputs.is_empty() {
        return Err(Error::new(ErrorKind::Usage, "no input given"));
    }
    // Memory stays proportional to the distinct stacks, not to the number of inputs: inputs are
    // decoded in parallel, but added to a pool of accumulators, about one per worker thread,
    // each taken by the task that adds an input and given back after. (An accumulator per
    // rayon split, as a `fold` makes, held a copy of every common stack per split: merging six
    // copies of one 40 MB profile took four times the memory of one.)
    let pool: Mutex<Vec<Merger>> = Mutex::new(Vec::new());
    let infos: Mutex<Vec<(usize, InputInfo)>> = Mutex::new(Vec::new());
    let parallel = inputs.par_iter().enumerate().try_for_each(|(i, path)| {
        let mut clock = crate::timing::Phases::start("input");
        let loaded = match load_for_merge(path, load)? {
            ForMerge::Loaded(l) => *l,
            ForMerge::Pprof { name, kind, bytes } => {
                // Read without tables, straight into an accumulator.
                let lean = crate::decode::pprof::decode_pprof_lean(&bytes, &name)?;
                clock.done(&format!("decode {i}"));
                let taken = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
                let mut m = taken.unwrap_or_else(|| Merger::new(merge.clone(), sides));
                // The strings first; then they and the bytes they borrow are freed, so that the
                // accumulator grows into their room rather than into fresh pages.
                let LeanPprof { profile, strings, mappings, frames, lines } = lean;
                let started = m.add_pprof_strings(&profile, &strings, side_of(i));
                drop(strings);
                drop(bytes);
                let parts =
                    PprofParts { profile: &profile, strings: &[], mappings: &mappings, frames: &frames, lines: &lines };
                let added = started.and_then(|s| s.map_or(Ok(()), |s| m.add_pprof_rest(&parts, s)));
                drop((mappings, frames, lines));
                pool.lock().unwrap_or_else(|e| e.into_inner()).push(m);
                clock.done(&format!("add {i}"));
                added?;
                let info = InputInfo {
                    warnings: pprof_warnings(&name, &profile),
                    name,
                    kind,
                    converted: None,
                    profiles: 1,
                    report: None,
                    symbols: None,
                };
                infos.lock().unwrap_or_else(|e| e.into_inner()).push((i, info));
                return Ok(());
            }
        };
        clock.done(&format!("load {i}"));
        let taken = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut m = taken.unwrap_or_else(|| Merger::new(merge.clone(), sides));
        let added: Result<()> = (|| {
            for p in &loaded.profiles {
                m.add_any(AnyProfile::Tree(p), side_of(i), loaded.annotate)?;
            }
            for p in &loaded.flat {
                m.add_any(AnyProfile::Flat(p), side_of(i), false)?;
            }
            Ok(())
        })();
        pool.lock().unwrap_or_else(|e| e.into_inner()).push(m);
        clock.done(&format!("add {i}"));
        added?;
        let converted = loaded.report.as_ref().map(|r| load.dump_filter(r));
        let warnings = loaded.flat.iter().flat_map(|f| pprof_warnings(&loaded.name, f)).collect();
        let info = InputInfo {
            warnings,
            name: loaded.name,
            kind: loaded.kind,
            converted,
            profiles: loaded.profiles.len() + loaded.flat.len(),
            report: loaded.report,
            symbols: loaded.symbols,
        };
        infos.lock().unwrap_or_else(|e| e.into_inner()).push((i, info));
        Ok::<_, Error>(())
    });
    let mut clock = crate::timing::Phases::start("inputs");
    let merged = parallel.and_then(|()| merge_tree(pool.into_inner().unwrap_or_else(|e| e.into_inner())));
    let merger = match merged {
        Ok(m) => m.unwrap_or_else(|| Merger::new(merge.clone(), sides)),
        // Which error the parallel run met first, and which inputs it names, depends on the
        // threads: say the one a merge in input order meets.
        Err(e) => return Err(first_error_in_order(inputs, load, merge, sides, side_of).unwrap_or(e)),
    };
    clock.done("merge accumulators");
    let mut infos = infos.into_inner().unwrap_or_else(|e| e.into_inner());
    infos.sort_by_key(|x| x.0);
    Ok((merger, infos.into_iter().map(|x| x.1).collect()))
}

/// The first error that merging `inputs` one by one, in order, into one accumulator meets
/// (`None` if it meets none): the error a failed parallel merge reports, the same on every run.
fn first_error_in_order(
    inputs: &[PathBuf],
    load: &LoadOptions,
    merge: &MergeOptions,
    sides: usize,
    side_of: &(dyn Fn(usize) -> usize + Sync),
) -> Option<Error> {
    let mut m = Merger::new(merge.clone(), sides);
    for (i, path) in inputs.iter().enumerate() {
        let added = load_input(path, load).and_then(|loaded| {
            for p in &loaded.profiles {
                m.add_any(AnyProfile::Tree(p), side_of(i), loaded.annotate)?;
            }
            for p in &loaded.flat {
                m.add_any(AnyProfile::Flat(p), side_of(i), false)?;
            }
            Ok(())
        });
        if let Err(e) = added {
            return Some(e);
        }
    }
    None
}

/// How `merge`, `diff` and `top` merge: keep only these sample types, in this order (type
/// names, or meanings such as `unreleased-size`); empty: keep them all.
pub fn merge_options(sample_types: &[String]) -> MergeOptions {
    MergeOptions {
        sample_types: if sample_types.is_empty() {
            None
        } else {
            Some(sample_types.iter().map(|s| TypeSelector::parse(s)).collect())
        },
    }
}

/// The index of the sample type `selector` names in `header` (a type name, or a meaning such as
/// `total-size`); `None`: the profile's default type (a pprof input's `default_sample_type`, or
/// else its last type, as `go tool pprof` picks). A selector the profile has no type for is a
/// usage error that lists the types it has.
pub fn pick_sample_type(header: &crate::model::ProfileHeader, selector: Option<&str>) -> Result<usize> {
    let Some(sel) = selector.map(TypeSelector::parse) else {
        return Ok(header.default_sample_type.min(header.sample_types.len().saturating_sub(1)));
    };
    let found = match &sel {
        TypeSelector::Name(n) => header.sample_types.iter().position(|t| t.name == *n),
        TypeSelector::Kind(k) => header.sample_types.iter().position(|t| t.kind == *k),
    };
    found.ok_or_else(|| {
        let have: Vec<String> = header.sample_types.iter().map(|t| t.name.clone()).collect();
        let asked = match &sel {
            TypeSelector::Name(n) => format!("{n:?}"),
            TypeSelector::Kind(_) => selector.unwrap_or_default().to_owned(),
        };
        Error::new(ErrorKind::Usage, format!("no sample type {asked}; the profile has {}", have.join(", ")))
    })
}

/// Warnings about how a pprof input was read: its strings that were not valid UTF-8 (the
/// decoder replaced their bad bytes and said so in a comment), each line naming the input.
pub fn pprof_warnings(name: &str, profile: &FlatProfile) -> Vec<String> {
    let note = crate::decode::pprof::invalid_utf8_note(0);
    let tail = note.trim_start_matches("heapconv: 0");
    profile
        .header
        .meta
        .comments
        .iter()
        .filter(|c| c.starts_with("heapconv: ") && c.ends_with(tail))
        .map(|c| format!("{name}: {}", c.trim_start_matches("heapconv: ")))
        .collect()
}

/// `profile` without its samples that had no locations (the decoder gave them one frame named
/// [`crate::decode::pprof::NO_STACK`]); the profile itself when it has none.
fn without_empty_stacks(profile: FlatProfile) -> FlatProfile {
    let tables = &profile.tables;
    let is_empty_stack = |frames: &[crate::model::FrameId]| {
        frames.len() == 1 && {
            let f = tables.frame(frames[0]);
            f.mapping.is_none()
                && f.lines.is_empty()
                && f.rel_pc == 0
                && tables.strings.get(f.name) == crate::decode::pprof::NO_STACK
        }
    };
    if !(0..profile.sample_count()).any(|i| is_empty_stack(profile.sample(i).0)) {
        return profile;
    }
    let mut out =
        FlatProfile::new(profile.tables.clone(), profile.header.meta.clone(), profile.header.sample_types.clone());
    out.header.default_sample_type = profile.header.default_sample_type;
    for i in 0..profile.sample_count() {
        let (frames, values) = profile.sample(i);
        if !is_empty_stack(frames) {
            out.push_sample(frames, values, profile.sample_labels(i), profile.sample_str_labels(i));
        }
    }
    for &(key, unit) in profile.num_label_units() {
        out.set_num_label_unit(key, unit);
    }
    out
}
