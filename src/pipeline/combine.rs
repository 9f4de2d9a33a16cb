//! `merge`, `diff` and `top`: inputs of any kind (heapprofd traces, DDM captures, pprof
//! profiles) decoded, merged by the merge stage, then encoded. Each input is opened, decoded
//! and added to an accumulator on rayon's threads; accumulators are combined pairwise, so the
//! output does not depend on the order of the inputs or on how the work was split.
//!
//! The functions here take paths and return bytes and reports; writing and printing are left
//! to the caller (the binary, or a batch front end).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use serde::Serialize;

use super::{ConvertOptions, DumpSelect, Format, Opened, encode_pprof_gzip, open_input, select_profiles_from};
use crate::decode::ddm_alloc_records::{DdmOptions, alloc_records_profile, decode_alloc_records};
use crate::decode::perfetto::DecodeOptions;
use crate::decode::pprof::{PprofDecodeOptions, read_pprof};
use crate::decode::{Input, InputKind};
use crate::encode::diff::{DiffOptions, diff_folded, diff_report, diff_svg};
use crate::encode::flamegraph_svg::{SvgOptions, encode_svg};
use crate::encode::folded::{FoldedOptions, encode_folded};
use crate::encode::labels::human_bytes;
use crate::encode::pprof::PprofOptions;
use crate::encode::pprof::{FLAT_SAMPLES_PER_PART, encode_flat_parts, encode_flat_parts_with};
use crate::encode::summary::{SummaryOptions, convert_json};
use crate::encode::top::{TopOptions, TopTable, top_table, top_text};
use crate::error::{Error, ErrorKind, Result};
use crate::merge::{AnyProfile, MergeOptions, Merger, TypeSelector, diff_pprof, merge_tree};
use crate::model::{FlatProfile, Profile, TraceReport, ValueKind, ValueType};
use crate::symbolize::{SymbolizeOptions, SymbolizeReport, input_coverage};

/// How inputs are read for `merge`, `diff` and `top`.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Keep only these pids of traces (empty: all). Default: empty.
    pub pids: Vec<u64>,
    /// Keep only this heap of traces. Default: all heaps.
    pub heap: Option<String>,
    /// Which dumps of each (pid, heap) of a trace. Default: the last.
    pub dump: DumpSelect,
    /// Bake ART annotations (`[jit]`, …) into frame names of traces. Default: true.
    pub annotations: bool,
    /// Trace decoder options. Default: [`DecodeOptions::default`].
    pub decode: DecodeOptions,
    /// Symbolize native frames of traces from these symbol directories. Default: `None`.
    pub symbolize: Option<SymbolizeOptions>,
    /// DDM capture options. Default: [`DdmOptions::default`] (for a merge, captures are always
    /// summed per stack, without per-allocation labels).
    pub ddm: DdmOptions,
    /// Give DDM frames pprof lines (function, file, line) rather than `Class.method(File:12)`
    /// names. Default: true (what pprof output wants; the text outputs set it to false).
    pub ddm_lines: bool,
    /// pprof decoder options. Default: [`PprofDecodeOptions::default`].
    pub pprof: PprofDecodeOptions,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            pids: Vec::new(),
            heap: None,
            dump: DumpSelect::Last,
            annotations: true,
            decode: DecodeOptions::default(),
            symbolize: None,
            ddm: DdmOptions::default(),
            ddm_lines: true,
            pprof: PprofDecodeOptions::default(),
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
}

impl InputInfo {
    /// True when the input was damaged and only its complete part was used.
    pub fn is_partial(&self) -> bool {
        self.report.as_ref().is_some_and(|r| r.is_partial())
    }
}

/// Opens and decodes one input of any kind heapconv reads.
pub fn load_input(path: &Path, opts: &LoadOptions) -> Result<LoadedInput> {
    let name = path.display().to_string();
    match open_input(path, opts.decode.max_gzip_bytes, opts.ddm.max_bytes, false)? {
        Opened::Ddm { name, bytes } => {
            let mut ddm = opts.ddm.clone();
            ddm.per_allocation = false;
            ddm.lines = opts.ddm_lines;
            let capture = decode_alloc_records(&bytes, &name, &ddm)?;
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
        Opened::Trace(mut inp, InputKind::Pprof) => {
            let profile = read_pprof(&mut inp, &opts.pprof)?;
            let symbols = opts.symbolize.as_ref().map(|_| pprof_coverage(&profile));
            Ok(LoadedInput {
                name,
                kind: InputKind::Pprof,
                profiles: Vec::new(),
                flat: vec![profile],
                annotate: false,
                report: None,
                symbols,
            })
        }
        Opened::Trace(inp, kind) => load_trace(inp, kind, &name, opts),
        Opened::Hprof(_) => Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{name}: an HPROF heap dump is a snapshot of objects, not an allocation profile; \
                 convert it first (`heapconv convert {name} --to pprof`) and merge the pprof"
            ),
        )),
    }
}

fn load_trace(inp: Input, kind: InputKind, name: &str, opts: &LoadOptions) -> Result<LoadedInput> {
    let convert = ConvertOptions {
        pids: opts.pids.clone(),
        heap: opts.heap.clone(),
        dump: opts.dump,
        annotations: opts.annotations,
        decode: opts.decode.clone(),
        symbolize: opts.symbolize.clone(),
        ..ConvertOptions::default()
    };
    let (profiles, report, symbols) = match select_profiles_from(inp, &convert) {
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
    inputs.par_iter().enumerate().try_for_each(|(i, path)| {
        let mut clock = crate::timing::Phases::start("input");
        let loaded = load_input(path, load)?;
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
        let info = InputInfo {
            name: loaded.name,
            kind: loaded.kind,
            profiles: loaded.profiles.len() + loaded.flat.len(),
            report: loaded.report,
            symbols: loaded.symbols,
        };
        infos.lock().unwrap_or_else(|e| e.into_inner()).push((i, info));
        Ok::<_, Error>(())
    })?;
    let mut clock = crate::timing::Phases::start("inputs");
    let merger = merge_tree(pool.into_inner().unwrap_or_else(|e| e.into_inner()))?
        .unwrap_or_else(|| Merger::new(merge.clone(), sides));
    clock.done("merge accumulators");
    let mut infos = infos.into_inner().unwrap_or_else(|e| e.into_inner());
    infos.sort_by_key(|x| x.0);
    Ok((merger, infos.into_iter().map(|x| x.1).collect()))
}

/// Options of `heapconv merge`.
#[derive(Debug, Clone)]
pub struct MergeRunOptions {
    /// How inputs are read. Default: [`LoadOptions::default`].
    pub load: LoadOptions,
    /// How they are merged. Default: [`MergeOptions::default`].
    pub merge: MergeOptions,
    /// Output format. Default: pprof.
    pub format: Format,
}

impl Default for MergeRunOptions {
    fn default() -> Self {
        MergeRunOptions { load: LoadOptions::default(), merge: MergeOptions::default(), format: Format::Pprof }
    }
}

/// What `merge` made.
#[derive(Debug)]
pub struct MergeRun {
    /// The merged profile.
    pub profile: FlatProfile,
    /// Its encoding in the requested format.
    pub bytes: Vec<u8>,
    /// What each input held, in input order.
    pub inputs: Vec<InputInfo>,
}

/// Encodes a profile with frame lists as gzipped pprof. A small profile (at most twice
/// [`FLAT_SAMPLES_PER_PART`] samples) is one gzip member (the bytes of
/// `gzip(&encode_pprof_flat(..))`); a large one is written as gzip members one after the other,
/// which every gzip reader (Go's, Python's, zlib's, heapconv's) reads as one stream: see
/// [`encode_flat_pprof_gzip_to`].
pub fn encode_flat_pprof_gzip(profile: &FlatProfile, opts: &PprofOptions) -> Vec<u8> {
    let mut out = Vec::new();
    encode_flat_pprof_gzip_to(profile, opts, &mut out).expect("writing to memory");
    out
}

/// [`encode_flat_pprof_gzip`] into `w`, member by member as they are ready. A large profile
/// has one member per part of [`encode_flat_parts`], each compressed in parallel by the task
/// that encoded it, the last part cut into 1 MiB pieces; members are written in order as soon
/// as those before them are, while the others are still being encoded, so neither the whole
/// encoding nor the whole output is held at once. The members are cut at fixed places, so
/// the bytes do not depend on the number of threads.
pub fn encode_flat_pprof_gzip_to(
    profile: &FlatProfile,
    opts: &PprofOptions,
    w: &mut (dyn Write + Send),
) -> std::io::Result<()> {
    use crate::encode::pprof::gzip;
    if profile.sample_count() <= 2 * FLAT_SAMPLES_PER_PART {
        return w.write_all(&gzip(&encode_flat_parts(profile, opts).concat()));
    }
    const PIECE: usize = 1 << 20;
    let out = OrderedWriter::new(w);
    encode_flat_parts_with(profile, opts, &|index, part| {
        let member = if part.len() <= PIECE {
            gzip(&part)
        } else {
            let pieces: Vec<Vec<u8>> = part.par_chunks(PIECE).map(gzip).collect();
            pieces.concat()
        };
        drop(part);
        out.put(index, member);
        Vec::new()
    });
    out.finish()
}

/// Writes pieces given in any order, each with its index, in index order: a piece is written
/// as soon as every piece before it has been, by whichever thread gave the last of them,
/// outside the lock that takes new pieces.
struct OrderedWriter<'w> {
    state: Mutex<Ordered>,
    w: Mutex<&'w mut (dyn Write + Send)>,
}

#[derive(Default)]
struct Ordered {
    next: usize,
    waiting: std::collections::BTreeMap<usize, Vec<u8>>,
    writing: bool,
    error: Option<std::io::Error>,
}

impl<'w> OrderedWriter<'w> {
    fn new(w: &'w mut (dyn Write + Send)) -> Self {
        OrderedWriter { state: Mutex::new(Ordered::default()), w: Mutex::new(w) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ordered> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes piece `index`, and writes every piece that is now next in order unless another
    /// thread is already writing (it then writes them).
    fn put(&self, index: usize, piece: Vec<u8>) {
        let mut st = self.lock();
        st.waiting.insert(index, piece);
        if st.writing {
            return;
        }
        st.writing = true;
        loop {
            let next = st.next;
            let Some(piece) = st.waiting.remove(&next) else {
                st.writing = false;
                return;
            };
            st.next += 1;
            let failed = st.error.is_some();
            drop(st);
            let result =
                if failed { Ok(()) } else { self.w.lock().unwrap_or_else(|e| e.into_inner()).write_all(&piece) };
            st = self.lock();
            if let Err(e) = result {
                st.error.get_or_insert(e);
            }
        }
    }

    /// The first write error, if any; an error too if a piece was never written (a gap in
    /// the indexes).
    fn finish(self) -> std::io::Result<()> {
        let st = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        match st.error {
            Some(e) => Err(e),
            None if !st.waiting.is_empty() => Err(std::io::Error::other("a part of the output was never written")),
            None => Ok(()),
        }
    }
}

/// Encodes a merged profile (names already carry their annotations) in `format`, showing its
/// default sample type.
pub fn encode_merged(profile: &FlatProfile, format: Format) -> Result<Vec<u8>> {
    if format == Format::Pprof {
        return Ok(encode_flat_pprof_gzip(profile, &PprofOptions { annotations: false, extras: true }));
    }
    encode_tree(&profile.to_profile(), format)
}

fn encode_tree(profile: &Profile, format: Format) -> Result<Vec<u8>> {
    let index = profile.header.default_sample_type;
    Ok(match format {
        Format::Pprof => encode_pprof_gzip(profile, &PprofOptions { annotations: false, extras: true }),
        Format::Folded => {
            encode_folded(profile, &FoldedOptions { value_index: index, annotations: false }).into_bytes()
        }
        Format::Svg => {
            encode_svg(profile, &SvgOptions { value_index: index, annotations: false, ..Default::default() })?
        }
        Format::Json => {
            let view = profile.header.sample_types.get(index).map_or(ValueKind::UnreleasedSize, |t| t.kind);
            let opts = SummaryOptions { view, annotations: false, ..Default::default() };
            convert_json(&TraceReport::default(), std::slice::from_ref(profile), &opts).into_bytes()
        }
    })
}

/// Runs `merge`: loads, merges and encodes.
pub fn run_merge(inputs: &[PathBuf], opts: &MergeRunOptions) -> Result<MergeRun> {
    let (profile, infos) = merge_to_profile(inputs, opts)?;
    let mut clock = crate::timing::Phases::start("merge");
    let bytes = encode_merged(&profile, opts.format)?;
    clock.done("encode");
    Ok(MergeRun { profile, bytes, inputs: infos })
}

/// Runs `merge` up to the merged profile (what [`run_merge`] encodes) and what each input
/// held; an error when the merged profile is empty.
pub fn merge_to_profile(inputs: &[PathBuf], opts: &MergeRunOptions) -> Result<(FlatProfile, Vec<InputInfo>)> {
    let mut load = opts.load.clone();
    load.ddm_lines = opts.format == Format::Pprof;
    let mut clock = crate::timing::Phases::start("merge");
    let (merger, infos) = merge_inputs(inputs, &load, &opts.merge, 1, &|_| 0)?;
    clock.done("inputs");
    let profile = merger.finish()?;
    clock.done("finish");
    if profile.sample_count() == 0 {
        return Err(Error::new(ErrorKind::NoData, "the merged profile is empty: every input's values are zero"));
    }
    Ok((profile, infos))
}

/// Runs `merge` with pprof output, written to `path` (atomically, see
/// [`crate::output::AtomicFile`]) as it is encoded; the bytes are those [`run_merge`] makes.
/// Returns the merged profile and what each input held.
pub fn run_merge_pprof_to(
    inputs: &[PathBuf],
    opts: &MergeRunOptions,
    path: &Path,
) -> Result<(FlatProfile, Vec<InputInfo>)> {
    let opts = MergeRunOptions { format: Format::Pprof, ..opts.clone() };
    let (profile, infos) = merge_to_profile(inputs, &opts)?;
    let mut clock = crate::timing::Phases::start("merge");
    let mut out = crate::output::AtomicFile::create(path, inputs)?;
    encode_flat_pprof_gzip_to(&profile, &PprofOptions { annotations: false, extras: true }, &mut out)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    out.commit()?;
    clock.done("encode and write");
    Ok((profile, infos))
}

/// A limit on growth: bytes, or a percentage of BASE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GrowthLimit {
    /// At most this many bytes more.
    Bytes(i64),
    /// At most this percentage more.
    Percent(f64),
}

impl GrowthLimit {
    /// Reads `5%`, `10MB`, `512KiB`, `1.5 GB` or a plain number of bytes. `K`, `M`, `G`, `T`
    /// with or without `B`/`iB` are powers of 1024 (as pprof reads `kilobytes`).
    pub fn parse(s: &str) -> Result<GrowthLimit> {
        let bad = || {
            Error::new(
                ErrorKind::Usage,
                format!("--fail-if-growth takes a size (10MB, 512KiB, 1000) or a percentage (5%), not {s:?}"),
            )
        };
        let t = s.trim();
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| bad())?;
            if !v.is_finite() || v < 0.0 {
                return Err(bad());
            }
            return Ok(GrowthLimit::Percent(v));
        }
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let v: f64 = num.parse().map_err(|_| bad())?;
        let factor: f64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" | "byte" | "bytes" => 1.0,
            "k" | "kb" | "kib" => 1024.0,
            "m" | "mb" | "mib" => 1024.0 * 1024.0,
            "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
            "t" | "tb" | "tib" => 1024.0f64.powi(4),
            _ => return Err(bad()),
        };
        let bytes = v * factor;
        if !bytes.is_finite() || bytes < 0.0 || bytes > i64::MAX as f64 {
            return Err(bad());
        }
        Ok(GrowthLimit::Bytes(bytes.round() as i64))
    }

    fn describe(&self) -> String {
        match self {
            GrowthLimit::Bytes(b) => format!("{} ({b} bytes)", human_bytes(*b)),
            GrowthLimit::Percent(p) => format!("{p}%"),
        }
    }
}

/// The verdict of `--fail-if-growth`.
#[derive(Debug, Clone, Serialize)]
pub struct GateResult {
    /// Whether the growth is within the limit.
    pub passed: bool,
    /// The sample type compared.
    pub sample_type: String,
    /// Its total in BASE (not normalized).
    pub before: i64,
    /// Its total in NEW.
    pub after: i64,
    /// `after - before`.
    pub growth: i64,
    /// `growth` as % of `before` (`None` when `before` is 0).
    pub growth_percent: Option<f64>,
    /// The limit, as given.
    pub allowed: String,
    /// One line for people: what was compared, actual vs allowed.
    pub message: String,
}

/// Checks growth against a limit.
pub fn growth_gate(sample_type: &str, unit: &str, before: i64, after: i64, limit: GrowthLimit) -> GateResult {
    let growth = after.saturating_sub(before);
    let pct = (before != 0).then(|| growth as f64 * 100.0 / before as f64);
    let passed = match limit {
        GrowthLimit::Bytes(b) => growth <= b,
        GrowthLimit::Percent(p) => match pct {
            Some(x) => x <= p,
            None => after <= 0,
        },
    };
    let fmt = |v: i64| if unit == "bytes" { format!("{} ({v} bytes)", human_bytes(v)) } else { format!("{v} {unit}") };
    let pct_text = pct.map_or_else(|| "from nothing".to_owned(), |p| format!("{p:+.2}%"));
    let message = format!(
        "{sample_type}: {} -> {}, growth {} ({pct_text}); allowed: {}",
        fmt(before),
        fmt(after),
        fmt(growth),
        limit.describe()
    );
    GateResult {
        passed,
        sample_type: sample_type.to_owned(),
        before,
        after,
        growth,
        growth_percent: pct.map(|p| (p * 100.0).round() / 100.0),
        allowed: limit.describe(),
        message,
    }
}

/// Options of `heapconv diff`.
#[derive(Debug, Clone)]
pub struct DiffRunOptions {
    /// How inputs are read. Default: [`LoadOptions::default`].
    pub load: LoadOptions,
    /// How BASE and NEW are matched. Default: [`MergeOptions::default`].
    pub merge: MergeOptions,
    /// Output format. Default: pprof.
    pub format: Format,
    /// Scale BASE to NEW's total in the outputs (never in the gate). Default: false.
    pub normalize: bool,
    /// Fail when the total grew by more than this. Default: none.
    pub fail_if_growth: Option<GrowthLimit>,
    /// Stacks and functions listed in JSON. Default: 20.
    pub top: usize,
}

impl Default for DiffRunOptions {
    fn default() -> Self {
        DiffRunOptions {
            load: LoadOptions::default(),
            merge: MergeOptions::default(),
            format: Format::Pprof,
            normalize: false,
            fail_if_growth: None,
            top: 20,
        }
    }
}

/// What `diff` made.
#[derive(Debug)]
pub struct DiffRun {
    /// BASE, merged (in the shared tables).
    pub base: FlatProfile,
    /// NEW, merged.
    pub new: FlatProfile,
    /// The output in the requested format.
    pub bytes: Vec<u8>,
    /// The gate's verdict, when a limit was given.
    pub gate: Option<GateResult>,
    /// What each input held: BASE, then NEW.
    pub inputs: Vec<InputInfo>,
}

/// The sample type a diff compares and gates on: the default type if it counts bytes, else the
/// first that does, else the default.
pub fn diff_value_index(types: &[ValueType], default: usize) -> usize {
    let is_bytes = |i: usize| types.get(i).is_some_and(|t| t.unit == "bytes" || t.kind.is_bytes());
    if is_bytes(default) {
        return default;
    }
    (0..types.len()).find(|&i| is_bytes(i)).unwrap_or(default)
}

/// Runs `diff`: BASE and NEW loaded and merged side by side (so that their frames are
/// matched by content), then the difference encoded, and the gate checked.
pub fn run_diff(base: &Path, new: &Path, opts: &DiffRunOptions) -> Result<DiffRun> {
    let mut load = opts.load.clone();
    load.ddm_lines = opts.format == Format::Pprof;
    let inputs = [base.to_path_buf(), new.to_path_buf()];
    let (merger, infos) = merge_inputs(&inputs, &load, &opts.merge, 2, &|i| i)?;
    let mut sides = merger.finish_sides()?;
    let new_p = sides.pop().expect("two sides");
    let base_p = sides.pop().expect("two sides");
    let index = diff_value_index(&new_p.header.sample_types, new_p.header.default_sample_type);
    let ty = new_p.header.sample_types[index].clone();
    let gate = match opts.fail_if_growth {
        Some(GrowthLimit::Bytes(_)) if ty.unit != "bytes" => {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "--fail-if-growth with a size needs a sample type in bytes; the profiles have {} ({}); give a percentage",
                    ty.name, ty.unit
                ),
            ));
        }
        Some(limit) => Some(growth_gate(&ty.name, &ty.unit, base_p.total(index), new_p.total(index), limit)),
        None => None,
    };
    let dopts = DiffOptions {
        value_index: index,
        normalize: opts.normalize,
        base_name: base.display().to_string(),
        new_name: new.display().to_string(),
        top: opts.top,
        ..DiffOptions::default()
    };
    let tree = |p: &FlatProfile| p.to_profile();
    let bytes = match opts.format {
        Format::Pprof => encode_flat_pprof_gzip(
            &diff_pprof(&base_p, &new_p, opts.normalize),
            &PprofOptions { annotations: false, extras: true },
        ),
        Format::Folded => diff_folded(&tree(&base_p), &tree(&new_p), &dopts).into_bytes(),
        Format::Svg => diff_svg(&tree(&base_p), &tree(&new_p), &dopts)?,
        Format::Json => {
            let report = diff_report(&tree(&base_p), &tree(&new_p), &dopts);
            let mut v = serde_json::to_value(&report).expect("a report serializes");
            if let Some(g) = &gate {
                v["gate"] = serde_json::to_value(g).expect("a gate serializes");
            }
            let mut s = serde_json::to_vec_pretty(&v).expect("serializes");
            s.push(b'\n');
            s
        }
    };
    Ok(DiffRun { base: base_p, new: new_p, bytes, gate, inputs: infos })
}

/// Options of `heapconv top`.
#[derive(Debug, Clone, Default)]
pub struct TopRunOptions {
    /// How inputs are read. Default: [`LoadOptions::default`].
    pub load: LoadOptions,
    /// How several inputs are merged. Default: [`MergeOptions::default`].
    pub merge: MergeOptions,
    /// Grouping and row count. Default: [`TopOptions::default`] (the value index is chosen
    /// by `sample_type`).
    pub top: TopOptions,
    /// The sample type shown (name or meaning); `None`: the default type. Default: `None`.
    pub sample_type: Option<TypeSelector>,
}

/// Runs `top`: loads and merges the inputs, and makes the table.
pub fn run_top(inputs: &[PathBuf], opts: &TopRunOptions) -> Result<(TopTable, Vec<InputInfo>)> {
    let mut load = opts.load.clone();
    load.ddm_lines = false;
    let (merger, infos) = merge_inputs(inputs, &load, &opts.merge, 1, &|_| 0)?;
    let profile = merger.finish()?.to_profile();
    let index = match &opts.sample_type {
        None => profile.header.default_sample_type,
        Some(sel) => {
            let found = match sel {
                TypeSelector::Name(n) => profile.header.sample_types.iter().position(|t| t.name == *n),
                TypeSelector::Kind(k) => profile.value_index(*k),
            };
            found.ok_or_else(|| {
                let have: Vec<String> = profile.header.sample_types.iter().map(|t| t.name.clone()).collect();
                Error::new(ErrorKind::Usage, format!("no sample type {sel:?}; the profile has {}", have.join(", ")))
            })?
        }
    };
    let mut top = opts.top.clone();
    top.value_index = index;
    Ok((top_table(&profile, &top), infos))
}

/// Converts one pprof input (`convert` on a pprof file): decoded, then encoded in the
/// requested format with the names it has (annotations are not added again).
pub(super) fn convert_pprof(
    mut inp: Input,
    input: &Path,
    dest: &super::Destination,
    opts: &ConvertOptions,
) -> Result<super::ConvertRun> {
    use super::Destination;
    let mut flat = read_pprof(&mut inp, &PprofDecodeOptions::default())?;
    let bytes = if opts.format == Format::Pprof {
        if let Some(i) = flat.value_index(opts.view) {
            flat.header.default_sample_type = i;
        }
        encode_flat_pprof_gzip(&flat, &PprofOptions { annotations: false, extras: true })
    } else {
        let mut o = opts.clone();
        o.annotations = false;
        super::encode_one(&flat.to_profile(), &o)?
    };
    let path = match dest {
        Destination::Stdout => None,
        Destination::File(f) => Some(f.clone()),
        Destination::Dir(d) => {
            crate::output::ensure_dir(d)?;
            Some(d.join(format!("{}.{}", super::stem(input), opts.format.extension())))
        }
    };
    let inputs = [input.to_path_buf()];
    match &path {
        Some(p) => crate::output::write_atomic(p, &bytes, &inputs)?,
        None => crate::output::check_not_input(Path::new("-"), &inputs)?,
    }
    let report = TraceReport { source: input.display().to_string(), ..Default::default() };
    let profiles = vec![super::batch::ProfileTotals::of_flat(&flat)];
    let symbols = opts.symbolize.as_ref().map(|_| pprof_coverage(&flat));
    Ok(super::ConvertRun { outputs: vec![(path, bytes)], report, symbols, profiles })
}

/// The symbolization coverage of a pprof input: pprof inputs are never symbolized again, so
/// this counts the symbols they have (see [`input_coverage`]).
fn pprof_coverage(flat: &FlatProfile) -> SymbolizeReport {
    let tree = flat.to_profile();
    input_coverage(&tree.tables, &[&tree])
}

/// `inspect` of a pprof profile, for people: header, sizes, totals per sample type and the top
/// functions of the default type.
pub fn pprof_inspect_text(p: &Profile) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "{} (pprof)", p.header.meta.source);
    let t = &p.tables;
    let _ = writeln!(
        s,
        "  {} samples, {} distinct stack nodes, {} frames, {} mappings, {} strings",
        p.sample_count(),
        t.stack_count(),
        t.frames().len(),
        t.mappings().len(),
        t.strings.len()
    );
    if let Some(per) = &p.header.meta.period {
        let _ = writeln!(s, "  period: {} {} ({})", per.value, per.unit, per.name);
    }
    if let Some(ns) = p.header.meta.time_nanos {
        let _ = writeln!(s, "  time_nanos: {ns}");
    }
    if let Some(ns) = p.header.meta.duration_nanos {
        let _ = writeln!(s, "  duration_nanos: {ns}");
    }
    for c in &p.header.meta.comments {
        let _ = writeln!(s, "  comment: {c}");
    }
    let _ = writeln!(s, "sample types:");
    for (i, ty) in p.header.sample_types.iter().enumerate() {
        let total = p.total(i);
        let shown =
            if ty.unit == "bytes" { format!("{} ({total} bytes)", human_bytes(total)) } else { total.to_string() };
        let dflt = if i == p.header.default_sample_type { " [default]" } else { "" };
        let _ = writeln!(s, "  {}/{}{dflt}: total {shown}", ty.name, ty.unit);
    }
    for m in t.mappings() {
        let _ = writeln!(
            s,
            "mapping {:#x}-{:#x} offset {:#x} {} {}",
            m.start,
            m.end,
            m.exact_offset,
            t.strings.get(m.path),
            m.build_id_text()
        );
    }
    let table =
        top_table(p, &TopOptions { value_index: p.header.default_sample_type, count: 10, ..TopOptions::default() });
    s.push_str(&top_text(&table));
    s
}

/// `inspect --json` of a pprof profile: the summary `convert --to json` gives.
pub fn pprof_inspect_json(p: &Profile) -> String {
    let view = p.header.sample_types.get(p.header.default_sample_type).map_or(ValueKind::UnreleasedSize, |t| t.kind);
    let report = TraceReport { source: p.header.meta.source.clone(), ..Default::default() };
    convert_json(&report, std::slice::from_ref(p), &SummaryOptions { view, annotations: false, ..Default::default() })
}

/// Reads a pprof input for `inspect`.
pub(super) fn inspect_pprof(mut inp: Input) -> Result<Profile> {
    Ok(read_pprof(&mut inp, &PprofDecodeOptions::default())?.to_profile())
}

/// Refuses a pprof input where a command needs a Perfetto trace, with an error that says
/// which commands take pprof. Standard input and unreadable files pass (the command reports
/// those itself).
pub fn refuse_pprof(path: &Path, command: &str) -> Result<()> {
    use std::io::Read;
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let Ok(mut input) = Input::open(path, 1 << 20) else { return Ok(()) };
    let mut head = Vec::new();
    let _ = input.reader().take(64).read_to_end(&mut head);
    if crate::decode::sniff(&head) == InputKind::Pprof {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{} is a pprof profile; `heapconv {command}` reads Perfetto traces (convert, merge, diff, top and inspect take pprof)",
                path.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_writer_writes_pieces_given_in_any_order_in_order() {
        use rayon::prelude::*;
        let mut out = Vec::new();
        let w = OrderedWriter::new(&mut out);
        // 200 pieces given by several threads, in a scrambled order.
        let order: Vec<usize> = (0..200).map(|i| (i * 73) % 200).collect();
        order.par_iter().for_each(|&i| w.put(i, format!("<{i}>").into_bytes()));
        w.finish().unwrap();
        let want: String = (0..200).map(|i| format!("<{i}>")).collect();
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn ordered_writer_reports_a_gap_and_write_errors() {
        let mut out = Vec::new();
        let w = OrderedWriter::new(&mut out);
        w.put(1, b"b".to_vec());
        assert!(w.finish().unwrap_err().to_string().contains("never written"));
        assert!(out.is_empty(), "nothing written before piece 0");

        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut full = Full;
        let w = OrderedWriter::new(&mut full);
        w.put(0, b"a".to_vec());
        w.put(1, b"b".to_vec());
        assert_eq!(w.finish().unwrap_err().to_string(), "disk full");
    }
}
