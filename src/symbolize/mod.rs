//! The symbolize stage: native frames (mapping + `rel_pc`) get function names, source files,
//! lines and inline chains from the DWARF of files found in symbol directories, in pure Rust
//! (gimli/addr2line over memory-mapped files), with no llvm-symbolizer.
//!
//! Each unique address of a file is looked up once; files are symbolized in parallel, each
//! opened once per run, lazily. A missing symbol is not an error: the frame stays as it
//! was and the per-mapping report says why (no build id, no file found, build-id mismatch, no
//! debug info, address outside any function).

pub mod elf;
pub mod java_frames;
pub mod locate;
pub mod proguard;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

use rayon::prelude::*;
use serde::Serialize;

use crate::model::{FrameId, Line, MappingId, Tables};
use locate::{Located, SymbolIndex, hex};

/// Options of the symbolize stage.
#[derive(Debug, Clone, Default)]
pub struct SymbolizeOptions {
    /// Directories searched recursively for binaries and debug files. Default: none.
    pub symbol_dirs: Vec<PathBuf>,
    /// Use a file found by path even when its build id differs (or the trace has none).
    /// Default: false.
    pub ignore_build_id: bool,
    /// Look files up only by path, as traceconv's `PERFETTO_SYMBOLIZER_MODE=find` does, not
    /// in the build-id index. Default: false.
    pub find_only: bool,
}

/// Why a mapping's frames are (or are not) symbolized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MappingOutcome {
    /// Symbolized from DWARF.
    Symbolized,
    /// Only function names, from the symbol table (no DWARF found).
    SymbolTableOnly,
    /// The trace records no build id for the mapping (and `ignore_build_id` is off).
    NoBuildId,
    /// No file with this build id in the symbol directories.
    NoFileFound,
    /// Files were found at the mapping's path, but their build ids differ.
    BuildIdMismatch,
    /// The file has neither DWARF nor a symbol table.
    NoDebugInfo,
    /// The file was found but no frame's address lies inside a known function.
    AddressOutsideFunctions,
    /// Every frame already had symbols (from ModuleSymbols in the trace).
    AlreadySymbolized,
    /// No symbol directory was given: only the names already in the input count (see
    /// [`input_coverage`]).
    NoSymbolDirectory,
}

/// The report for one mapping.
#[derive(Debug, Clone, Serialize)]
pub struct MappingReport {
    /// Mapping path as the trace names it.
    pub path: String,
    /// Build id, hex.
    pub build_id: String,
    /// Frames in the mapping.
    pub frames: u64,
    /// Frames symbolized.
    pub symbolized: u64,
    /// MappingOutcome.
    pub outcome: MappingOutcome,
    /// The file whose symbols were used.
    pub file: Option<String>,
    /// Paths looked at.
    pub tried: Vec<String>,
    /// Files rejected because their build id (or debuglink CRC) differs.
    pub mismatched: Vec<String>,
    /// Bytes (unreleased, or allocated for heaps without frees) of the stacks that pass through
    /// this mapping, in the profiles attributed (see [`SymbolizeReport::attribute`]).
    pub bytes: i64,
    #[serde(skip)]
    mapping: u32,
}

/// The symbolization report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SymbolizeReport {
    /// Per mapping, in mapping order.
    pub mappings: Vec<MappingReport>,
    /// Native frames seen.
    pub frames: u64,
    /// Native frames symbolized.
    pub frames_symbolized: u64,
    /// ELF files in the build-id index.
    pub indexed_files: usize,
    /// Problems while indexing the symbol directories.
    pub problems: Vec<String>,
    /// Bytes of the attributed profiles.
    pub bytes: i64,
    /// Bytes of stacks whose every frame in a mapping with a build id has symbols.
    pub bytes_symbolized: i64,
    /// Names from the input count as symbols (no symbol directory was given).
    #[serde(skip)]
    names_count: bool,
}

/// True when a native frame has a symbol: source lines, or a function name the input gave.
fn frame_has_symbol(f: &crate::model::Frame) -> bool {
    !f.lines.is_empty() || f.name != crate::model::StringId(0)
}

/// Symbolization coverage of the frames the input already named, without looking anything
/// up: every frame with a mapping (a native frame) counts, and it counts as symbolized when it
/// has source lines or a function name from the input (interned by heapprofd, a pprof
/// `Function`, ModuleSymbols). Mappings are reported with [`MappingOutcome::AlreadySymbolized`]
/// when all their frames have symbols, else [`MappingOutcome::NoSymbolDirectory`]. This is what
/// `--min-symbolized` gates on when no symbol directory is given, and what it gates on for
/// pprof inputs (which are never symbolized again).
/// `profiles` (which use `tables`) give the byte figures.
pub fn input_coverage(tables: &Tables, profiles: &[&crate::model::Profile]) -> SymbolizeReport {
    let mut s = Symbolizer {
        opts: SymbolizeOptions::default(),
        index: SymbolIndex::build(&[]),
        mappings: BTreeMap::new(),
        open: BTreeMap::new(),
        background: Vec::new(),
        prefetch_located: (0, Vec::new()),
        prefetch_files: Vec::new(),
    };
    s.count_only(tables, 0..tables.frames().len());
    let mut r = s.report(tables);
    for p in profiles {
        r.attribute(&attribute(p));
    }
    r
}

/// How a profile's bytes spread over mappings and how many lie on fully symbolized stacks.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    per_mapping: std::collections::HashMap<u32, i64>,
    total: i64,
    symbolized: i64,
    /// Bytes of stacks whose every such frame has lines or a name from the input.
    named: i64,
}

impl Attribution {
    /// Counts `v` bytes of one stack (or of a class of stacks), symbolized when `all` its frames
    /// in mappings with a build id have lines, named when `all_named` have a name.
    fn add(&mut self, v: i64, all: bool, all_named: bool) {
        self.total += v;
        if all {
            self.symbolized += v;
        }
        if all_named {
            self.named += v;
        }
    }
}

/// Attributes the bytes of `profile` (its unreleased size, or total size when it has none).
pub fn attribute(profile: &crate::model::Profile) -> Attribution {
    use crate::model::ValueKind;
    let Some(idx) =
        profile.value_index(ValueKind::UnreleasedSize).or_else(|| profile.value_index(ValueKind::TotalSize))
    else {
        return Attribution::default();
    };
    attribute_shared(profile, idx).unwrap_or_else(|| attribute_walk(profile, idx))
}

/// [`attribute`] of a dump whose stacks are flat frame lists (`stacks[i]` a stack of `lists`,
/// with `header.sample_types.len()` values per row in `values`), over the frames of `tables`:
/// the same figures as [`attribute`] of the same dump as a profile. Each distinct stack's
/// frames are visited once.
pub fn attribute_lists(
    header: &crate::model::ProfileHeader,
    stacks: &[crate::model::StackId],
    values: &[i64],
    lists: &crate::model::StackLists,
    tables: &Tables,
) -> Attribution {
    use crate::model::ValueKind;
    let kind = |k: ValueKind| header.sample_types.iter().position(|t| t.kind == k);
    let Some(idx) = kind(ValueKind::UnreleasedSize).or_else(|| kind(ValueKind::TotalSize)) else {
        return Attribution::default();
    };
    let width = header.sample_types.len();
    // Per stack, the sum of its rows' values (`None`: no row with a value).
    let mut sums: Vec<Option<i64>> = vec![None; lists.len()];
    for (i, s) in stacks.iter().enumerate() {
        let v = values[i * width + idx];
        if v != 0 {
            *sums[s.0 as usize].get_or_insert(0) += v;
        }
    }
    // What each frame says, looked up once: its mapping (`NONE`: none), and whether it counts
    // against a stack (a mapping with a build id) for lines and for a symbol.
    let class: Vec<(u32, u8)> = tables
        .frames()
        .iter()
        .map(|f| match f.mapping {
            None => (NONE, 0),
            Some(m) if tables.mapping(m).build_id.is_empty() => (m.0, 0),
            Some(m) => {
                let lines = if f.lines.is_empty() { NO_LINES } else { 0 };
                (m.0, lines | if frame_has_symbol(f) { 0 } else { NO_SYMBOL })
            }
        })
        .collect();
    // The stacks in two halves side by side (each stack's frames are visited once, and sums
    // of integers do not depend on the order they are added in).
    let n = sums.len();
    let visit = |r: Range<usize>| attribute_stacks(&sums[r.clone()], r.start, lists, &class);
    if n < SPLIT_AT {
        return visit(0..n);
    }
    let (mut a, b) = rayon::join(|| visit(0..n / 2), || visit(n / 2..n));
    for (m, v) in b.per_mapping {
        *a.per_mapping.entry(m).or_default() += v;
    }
    a.total += b.total;
    a.symbolized += b.symbolized;
    a.named += b.named;
    a
}

/// A frame of no mapping, in [`attribute_lists`]'s classes.
const NONE: u32 = u32::MAX;
/// A frame that keeps its stack from counting as symbolized (it lacks lines).
const NO_LINES: u8 = 1;
/// A frame that keeps its stack from counting as named (it lacks a symbol).
const NO_SYMBOL: u8 = 2;
/// [`attribute_lists`] splits the stacks in two halves from this many (fewer in unit tests,
/// so that they cover the split).
const SPLIT_AT: usize = if cfg!(test) { 64 } else { 1 << 13 };

/// What [`attribute_lists`] adds up for the stacks `first..first + sums.len()` (`sums`: their
/// values), each frame classed as `class` says (its mapping, [`NONE`] for none, and the flags
/// [`NO_LINES`] and [`NO_SYMBOL`]).
fn attribute_stacks(
    sums: &[Option<i64>],
    first: usize,
    lists: &crate::model::StackLists,
    class: &[(u32, u8)],
) -> Attribution {
    let mut a = Attribution::default();
    // Bytes of the first 64 mappings, added to `a.per_mapping` at the end.
    let mut low = [0i64; 64];
    let mut touched = 0u64;
    // The mappings a stack passes through: the first 64 as bits, the others listed.
    let mut seen: Vec<u32> = Vec::new();
    for (s, sum) in sums.iter().enumerate() {
        let Some(v) = *sum else { continue };
        let s = first + s;
        seen.clear();
        let mut mask = 0u64;
        let mut missing = 0u8;
        for &fid in lists.frames(crate::model::StackId(s as u32)) {
            let (m, flags) = class[fid.0 as usize];
            if m < 64 {
                mask |= 1 << m;
            } else if m != NONE && !seen.contains(&m) {
                seen.push(m);
            }
            missing |= flags;
        }
        let (all, all_named) = (missing & NO_LINES == 0, missing & NO_SYMBOL == 0);
        while mask != 0 {
            let m = mask.trailing_zeros();
            mask &= mask - 1;
            low[m as usize] += v;
            touched |= 1 << m;
        }
        for m in &seen {
            *a.per_mapping.entry(*m).or_default() += v;
        }
        a.add(v, all, all_named);
    }
    while touched != 0 {
        let m = touched.trailing_zeros();
        touched &= touched - 1;
        *a.per_mapping.entry(m).or_default() += low[m as usize];
    }
    a
}

/// [`attribute`] walking every sample's whole stack.
fn attribute_walk(profile: &crate::model::Profile, idx: usize) -> Attribution {
    let mut a = Attribution::default();
    let tables = &profile.tables;
    let mut seen: Vec<u32> = Vec::new();
    for (stack, values) in profile.samples() {
        let v = values[idx];
        if v == 0 {
            continue;
        }
        seen.clear();
        let mut all = true;
        let mut all_named = true;
        let mut cur = Some(stack);
        while let Some(node) = cur {
            let n = tables.stack_node(node);
            let f = tables.frame(n.frame);
            if let Some(m) = f.mapping {
                if !seen.contains(&m.0) {
                    seen.push(m.0);
                }
                if !tables.mapping(m).build_id.is_empty() {
                    all &= !f.lines.is_empty();
                    all_named &= frame_has_symbol(f);
                }
            }
            cur = n.parent;
        }
        for m in &seen {
            *a.per_mapping.entry(*m).or_default() += v;
        }
        a.add(v, all, all_named);
    }
    a
}

/// [`attribute`] visiting each stack node once: what a node's stack says (the mappings it
/// passes through, a bit each, and whether every frame with a build id has lines, and a symbol)
/// is its caller's plus its own frame, remembered per node. `None` with more than 64 mappings.
fn attribute_shared(profile: &crate::model::Profile, idx: usize) -> Option<Attribution> {
    let tables = &profile.tables;
    if tables.mappings().len() > 64 {
        return None;
    }
    const LINES: u8 = 1;
    const NAMED: u8 = 2;
    // Per node, an index into `kinds` (u32::MAX: not seen yet).
    let mut memo = vec![u32::MAX; tables.stack_count()];
    let mut kinds: Vec<(u64, u8)> = Vec::new();
    let mut kind_of: rustc_hash::FxHashMap<(u64, u8), u32> = Default::default();
    let mut sums: Vec<Option<i64>> = Vec::new();
    let mut path = Vec::new();
    for (stack, values) in profile.samples() {
        let v = values[idx];
        if v == 0 {
            continue;
        }
        path.clear();
        let mut known = (0u64, LINES | NAMED);
        let mut cur = Some(stack);
        while let Some(node) = cur {
            let k = memo[node.0 as usize];
            if k != u32::MAX {
                known = kinds[k as usize];
                break;
            }
            path.push(node);
            cur = tables.stack_node(node).parent;
        }
        for &node in path.iter().rev() {
            let f = tables.frame(tables.stack_node(node).frame);
            if let Some(m) = f.mapping {
                known.0 |= 1 << m.0;
                if !tables.mapping(m).build_id.is_empty() {
                    if f.lines.is_empty() {
                        known.1 &= !LINES;
                    }
                    if !frame_has_symbol(f) {
                        known.1 &= !NAMED;
                    }
                }
            }
            let k = *kind_of.entry(known).or_insert_with(|| {
                kinds.push(known);
                sums.push(None);
                (kinds.len() - 1) as u32
            });
            memo[node.0 as usize] = k;
        }
        let sum = sums[memo[stack.0 as usize] as usize].get_or_insert(0);
        *sum += v;
    }
    let mut a = Attribution::default();
    for (&(mask, flags), sum) in kinds.iter().zip(&sums) {
        let Some(v) = *sum else { continue };
        for m in (0..64).filter(|m| mask & (1 << m) != 0) {
            *a.per_mapping.entry(m).or_default() += v;
        }
        a.add(v, flags & LINES != 0, flags & NAMED != 0);
    }
    Some(a)
}

impl SymbolizeReport {
    /// Adds the bytes of an [`Attribution`] to the report (typically of the last dump of each
    /// process and heap).
    pub fn attribute(&mut self, a: &Attribution) {
        self.bytes += a.total;
        self.bytes_symbolized += if self.names_count { a.named } else { a.symbolized };
        for m in &mut self.mappings {
            m.bytes += a.per_mapping.get(&m.mapping).copied().unwrap_or(0);
        }
    }

    /// True when the report counts the symbols the input already had, with no symbol
    /// directory to look in (see [`input_coverage`]).
    pub fn names_only(&self) -> bool {
        self.names_count
    }

    /// Share of bytes on fully symbolized stacks, in percent (100 when there are none).
    pub fn byte_percent(&self) -> f64 {
        if self.bytes == 0 { 100.0 } else { 100.0 * self.bytes_symbolized as f64 / self.bytes as f64 }
    }
}

impl SymbolizeReport {
    /// Share of frames symbolized, in percent (100 when there are none).
    pub fn frame_percent(&self) -> f64 {
        if self.frames == 0 { 100.0 } else { 100.0 * self.frames_symbolized as f64 / self.frames as f64 }
    }
}

struct MappingState {
    located: Located,
    frames: u64,
    symbolized: u64,
    outcome: MappingOutcome,
}

/// A symbolizer over a set of symbol directories; feed it the frames of one input as they
/// appear (it remembers where each mapping's file is).
pub struct Symbolizer {
    opts: SymbolizeOptions,
    index: SymbolIndex,
    mappings: BTreeMap<MappingId, MappingState>,
    /// Symbol files opened so far (`None`: could not be opened), each opened once per run.
    open: BTreeMap<PathBuf, Option<OpenFile>>,
    /// Files taken out of `open` by [`Symbolizer::prefetch`], looking addresses up on other
    /// threads (each takes more addresses from its channel until it is closed); put back
    /// before the next lookups.
    background: Vec<Background>,
    /// Per mapping of the tables [`Symbolizer::prefetch`] was last given (their address), its
    /// file (an index into `prefetch_files`) and load-bias headers, once located.
    prefetch_located: (usize, Vec<Option<PrefetchFile>>),
    prefetch_files: Vec<PathBuf>,
}

/// Where [`Symbolizer::prefetch`] looks a mapping's frames up: its file (an index into
/// `prefetch_files`) and the program headers of its load-bias correction; `None` when it has
/// no file.
type PrefetchFile = Option<(usize, Option<(u64, u64, u64)>)>;

/// A file looking addresses up on its own thread.
struct Background {
    path: PathBuf,
    more: std::sync::mpsc::Sender<Vec<(FrameId, u64)>>,
    job: std::thread::JoinHandle<Option<OpenFile>>,
}

impl Drop for Symbolizer {
    fn drop(&mut self) {
        self.join_background();
        // An opened file is a whole DWARF index (units, line tables, functions, answers):
        // freeing it is work nobody waits for.
        let open = std::mem::take(&mut self.open);
        if open.values().any(Option::is_some) {
            std::thread::spawn(move || drop(open));
        }
    }
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer").field("indexed_files", &self.index.len()).finish()
    }
}

/// One symbolized address: lines innermost first, with owned strings.
type RawLines = Vec<ResolvedLine>;

/// A file's answer for one address, shared by every frame (and batch) that names it.
type Answer = std::sync::Arc<RawLines>;

/// A mapping's file and the (frame, address) pairs to look up in it.
type MappingWork = (MappingId, PathBuf, Vec<(FrameId, u64)>);

/// A file, its opened state if any, and the work of each mapping that uses it.
type FileJob = (PathBuf, Option<OpenFile>, Vec<FileWork>);

/// One mapping's (frame, address) pairs.
type FileWork = (MappingId, Vec<(FrameId, u64)>);

/// A file, its opened state, and each mapping's answers.
type FileDone = (PathBuf, Option<OpenFile>, Vec<(MappingId, Vec<(FrameId, Answer)>)>);

impl Symbolizer {
    /// Indexes the symbol directories (recursively, in parallel).
    pub fn new(opts: SymbolizeOptions) -> Self {
        let index = SymbolIndex::build(&opts.symbol_dirs);
        Symbolizer {
            opts,
            index,
            mappings: BTreeMap::new(),
            open: BTreeMap::new(),
            background: Vec::new(),
            prefetch_located: (0, Vec::new()),
            prefetch_files: Vec::new(),
        }
    }

    /// True when this symbolizer looks addresses up (it has symbol directories); otherwise it
    /// only counts the names frames have.
    pub fn looks_up(&self) -> bool {
        !self.opts.symbol_dirs.is_empty()
    }

    /// Starts looking up the frames `range` of `tables` on other threads (one per symbol file),
    /// while the caller goes on (decoding the rest of the trace); the answers are kept, and the
    /// next [`Symbolizer::symbolize`] of these frames uses them instead of looking up again. It
    /// changes nothing else: what `symbolize` reports and writes is the same with or without it.
    pub fn prefetch(&mut self, tables: &Tables, range: Range<usize>) {
        if self.opts.symbol_dirs.is_empty() {
            return;
        }
        // Per mapping, its file and load-bias headers, located once per tables (frames are
        // grouped by mapping first: no path is cloned or compared per frame).
        let key = tables as *const Tables as usize;
        if self.prefetch_located.0 != key {
            self.prefetch_located = (key, Vec::new());
        }
        let mut addrs_of: Vec<Vec<(FrameId, u64)>> = vec![Vec::new(); self.prefetch_files.len()];
        for i in range {
            let f = &tables.frames()[i];
            let Some(m) = f.mapping.filter(|_| f.lines.is_empty()) else { continue };
            let mapping = tables.mapping(m);
            let slot = m.0 as usize;
            let located = &mut self.prefetch_located.1;
            if located.len() <= slot {
                located.resize(slot + 1, None);
            }
            let found = *located[slot].get_or_insert_with(|| {
                if mapping.build_id.is_empty() && !self.opts.ignore_build_id {
                    return None;
                }
                let path = tables.strings.get(mapping.path);
                let l = self.index.locate(path, &mapping.build_id, self.opts.ignore_build_id, self.opts.find_only);
                let file = l.file?;
                let k = self.prefetch_files.iter().position(|p| *p == file).unwrap_or_else(|| {
                    self.prefetch_files.push(file);
                    addrs_of.push(Vec::new());
                    self.prefetch_files.len() - 1
                });
                Some((k, l.exec_load))
            });
            let Some((k, exec_load)) = found else { continue };
            let a = elf::corrected_address(
                f.rel_pc,
                exec_load,
                mapping.exact_offset,
                mapping.start_offset,
                mapping.load_bias,
            );
            addrs_of[k].push((FrameId(i as u32), a));
        }
        for (k, addrs) in addrs_of.into_iter().enumerate() {
            if addrs.is_empty() {
                continue;
            }
            let path = &self.prefetch_files[k];
            // A file already at work on earlier frames takes these too (a file whose thread
            // has ended leaves them to `symbolize`).
            if let Some(b) = self.background.iter().find(|b| b.path == *path) {
                let _ = b.more.send(addrs);
                continue;
            }
            let open = self.open.remove(path).flatten();
            let p = path.clone();
            let (more, work) = std::sync::mpsc::channel::<Vec<(FrameId, u64)>>();
            let job = std::thread::spawn(move || {
                let mut open = open.or_else(|| OpenFile::open(&p));
                if let Some(o) = &mut open {
                    o.lookup_all(&addrs);
                    for addrs in work {
                        o.lookup_all(&addrs);
                    }
                }
                crate::timing::at("symbolize", "background lookups done");
                open
            });
            self.background.push(Background { path: path.clone(), more, job });
        }
    }

    /// Waits for the background lookups and puts their files back.
    fn join_background(&mut self) {
        for Background { path, more, job } in std::mem::take(&mut self.background) {
            // No more work: the thread ends when it has looked up what it was given.
            drop(more);
            // A lookup that panicked leaves the file to be opened again (and fail the same way).
            self.open.insert(path, job.join().ok().flatten());
        }
    }

    /// Symbolizes the frames `range` of `tables` (all frames: `0..tables.frames().len()`).
    /// Without symbol directories nothing is looked up: the frames are only counted, as
    /// [`input_coverage`] counts them (a name from the input counts as a symbol).
    pub fn symbolize(&mut self, tables: &mut Tables, range: Range<usize>) {
        if self.opts.symbol_dirs.is_empty() {
            self.count_only(tables, range);
            return;
        }
        self.join_background();
        // Group the frames to look up by mapping.
        let mut groups: BTreeMap<MappingId, Vec<FrameId>> = BTreeMap::new();
        for i in range.clone() {
            let f = &tables.frames()[i];
            if let Some(m) = f.mapping {
                groups.entry(m).or_default().push(FrameId(i as u32));
            }
        }
        // Locate files for mappings not seen before.
        for &m in groups.keys() {
            if self.mappings.contains_key(&m) {
                continue;
            }
            let mapping = tables.mapping(m);
            let path = tables.strings.get(mapping.path).to_owned();
            let no_id = mapping.build_id.is_empty();
            let located = if no_id && !self.opts.ignore_build_id {
                Located::default()
            } else {
                self.index.locate(&path, &mapping.build_id, self.opts.ignore_build_id, self.opts.find_only)
            };
            let outcome = if no_id && !self.opts.ignore_build_id {
                MappingOutcome::NoBuildId
            } else {
                match &located.info {
                    Some(i) if i.has_dwarf => MappingOutcome::Symbolized,
                    Some(i) if i.has_symbols => MappingOutcome::SymbolTableOnly,
                    Some(_) => MappingOutcome::NoDebugInfo,
                    None if !located.mismatched.is_empty() => MappingOutcome::BuildIdMismatch,
                    None => MappingOutcome::NoFileFound,
                }
            };
            self.mappings.insert(m, MappingState { located, frames: 0, symbolized: 0, outcome });
        }
        let mut clock = crate::timing::Phases::start("symbolize");
        // Look up every unique address, one task per mapping.
        let work: Vec<MappingWork> = groups
            .iter()
            .filter_map(|(m, frames)| {
                let st = &self.mappings[m];
                let file = st.located.file.clone()?;
                let mapping = tables.mapping(*m);
                let addrs = frames
                    .iter()
                    .filter(|f| tables.frame(**f).lines.is_empty())
                    .map(|f| {
                        let rel = tables.frame(*f).rel_pc;
                        let a = elf::corrected_address(
                            rel,
                            st.located.exec_load,
                            mapping.exact_offset,
                            mapping.start_offset,
                            mapping.load_bias,
                        );
                        (*f, a)
                    })
                    .collect();
                Some((*m, file, addrs))
            })
            .collect();
        // Group by file (a library mapped twice is one file), take each file's opened state out
        // of the cache (opening it the first time), look up in parallel, and put it back.
        let mut by_file: BTreeMap<PathBuf, Vec<FileWork>> = BTreeMap::new();
        for (m, file, addrs) in work {
            by_file.entry(file).or_default().push((m, addrs));
        }
        let jobs: Vec<FileJob> =
            by_file.into_iter().map(|(f, w)| (f.clone(), self.open.remove(&f).flatten(), w)).collect();
        let done: Vec<FileDone> = jobs
            .into_par_iter()
            .map(|(path, open, work)| {
                let mut open = open.or_else(|| OpenFile::open(&path));
                let found = work
                    .into_iter()
                    .map(|(m, addrs)| (m, open.as_mut().map(|o| o.lookup_all(&addrs)).unwrap_or_default()))
                    .collect();
                (path, open, found)
            })
            .collect();
        clock.done("look up addresses");
        let mut results: Vec<(MappingId, Vec<(FrameId, Answer)>)> = Vec::new();
        for (path, open, found) in done {
            self.open.insert(path, open);
            results.extend(found);
        }
        // Count frames and apply results, in mapping order.
        for (m, frames) in &groups {
            let st = self.mappings.get_mut(m).expect("located above");
            st.frames += frames.len() as u64;
            let already = frames.iter().filter(|f| !tables.frame(**f).lines.is_empty()).count() as u64;
            st.symbolized += already;
        }
        for (m, found) in results {
            let mut n = 0;
            for (fid, lines) in found {
                if lines.is_empty() {
                    continue;
                }
                let lines: Vec<Line> = lines
                    .iter()
                    .map(|l| Line {
                        function: tables.strings.intern(&l.function),
                        system_name: tables.strings.intern(&l.system_name),
                        file: tables.strings.intern(&l.file),
                        line: l.line,
                        column: l.column,
                    })
                    .collect();
                tables.frames_mut()[fid.0 as usize].lines = lines;
                n += 1;
            }
            let st = self.mappings.get_mut(&m).expect("located above");
            st.symbolized += n;
        }
        clock.done("apply answers");
        for st in self.mappings.values_mut() {
            if st.frames > 0 && st.symbolized == st.frames && st.located.file.is_none() {
                st.outcome = MappingOutcome::AlreadySymbolized;
            }
            if st.symbolized == 0
                && matches!(st.outcome, MappingOutcome::Symbolized | MappingOutcome::SymbolTableOnly)
                && st.frames > 0
            {
                st.outcome = MappingOutcome::AddressOutsideFunctions;
            } else if st.symbolized > 0 && st.outcome == MappingOutcome::AddressOutsideFunctions {
                st.outcome = MappingOutcome::Symbolized;
            }
        }
    }

    /// Counts the native frames of `range` and those with a symbol, looking nothing up.
    fn count_only(&mut self, tables: &Tables, range: Range<usize>) {
        for i in range {
            let f = &tables.frames()[i];
            if let Some(m) = f.mapping {
                let st = self.mappings.entry(m).or_insert_with(|| MappingState {
                    located: Located::default(),
                    frames: 0,
                    symbolized: 0,
                    outcome: MappingOutcome::AlreadySymbolized,
                });
                st.frames += 1;
                if frame_has_symbol(f) {
                    st.symbolized += 1;
                } else {
                    st.outcome = MappingOutcome::NoSymbolDirectory;
                }
            }
        }
    }

    /// The report so far.
    pub fn report(&self, tables: &Tables) -> SymbolizeReport {
        let mut r = SymbolizeReport {
            names_count: self.opts.symbol_dirs.is_empty(),
            indexed_files: self.index.len(),
            problems: self.index.problems.clone(),
            ..Default::default()
        };
        for (m, st) in &self.mappings {
            let mapping = tables.mapping(*m);
            r.frames += st.frames;
            r.frames_symbolized += st.symbolized;
            r.mappings.push(MappingReport {
                path: tables.strings.get(mapping.path).to_owned(),
                build_id: hex(&mapping.build_id),
                frames: st.frames,
                symbolized: st.symbolized,
                outcome: st.outcome,
                file: st.located.file.as_ref().map(|p| p.display().to_string()),
                tried: st.located.tried.clone(),
                mismatched: st.located.mismatched.iter().map(|p| p.display().to_string()).collect(),
                bytes: 0,
                mapping: m.0,
            });
        }
        r
    }
}

/// One source line of a symbolized address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedLine {
    /// Function name for display (demangled when the name is mangled).
    pub function: String,
    /// Function name as the file spells it (mangled).
    pub system_name: String,
    /// Source file (empty when unknown).
    pub file: String,
    /// Line number (0 when unknown).
    pub line: u32,
    /// Column (0 when unknown).
    pub column: u32,
}

/// Symbolizes `addrs` (ELF virtual addresses) in the file at `path`, as the symbolizer does for
/// frames: for each address its lines, innermost first (empty when nothing is known). For
/// tests and tools that compare with other symbolizers.
pub fn symbolize_addresses(path: &std::path::Path, addrs: &[u64]) -> Vec<Vec<ResolvedLine>> {
    let with_ids: Vec<(FrameId, u64)> = addrs.iter().enumerate().map(|(i, &a)| (FrameId(i as u32), a)).collect();
    let mut out = vec![Vec::new(); addrs.len()];
    for (fid, lines) in lookup_all(path, &with_ids) {
        out[fid.0 as usize] = std::sync::Arc::unwrap_or_clone(lines);
    }
    out
}

/// Looks up every address in one file: DWARF first (inline chain, innermost first), then the
/// symbol table.
fn lookup_all(file: &std::path::Path, addrs: &[(FrameId, u64)]) -> Vec<(FrameId, Answer)> {
    match OpenFile::open(file) {
        Some(mut f) => f.lookup_all(addrs),
        None => Vec::new(),
    }
}

/// A symbol file opened once per run: its DWARF, its symbol table, and every answer so far.
struct OpenFile {
    loader: addr2line::Loader,
    symbols: SymbolTable,
    rel_dirs: Vec<String>,
    answers: rustc_hash::FxHashMap<u64, Answer>,
}

impl OpenFile {
    fn open(file: &std::path::Path) -> Option<OpenFile> {
        let loader = addr2line::Loader::new(file).ok()?;
        Some(OpenFile {
            loader,
            symbols: SymbolTable::read(file),
            rel_dirs: relative_comp_dirs(file),
            answers: Default::default(),
        })
    }

    /// Each distinct address is looked up once, however many frames and batches name it.
    fn lookup_all(&mut self, addrs: &[(FrameId, u64)]) -> Vec<(FrameId, Answer)> {
        addrs
            .iter()
            .map(|&(fid, addr)| {
                let (loader, symbols, dirs) = (&self.loader, &self.symbols, &self.rel_dirs);
                let lines =
                    self.answers.entry(addr).or_insert_with(|| Answer::new(lookup(loader, symbols, dirs, addr)));
                (fid, Answer::clone(lines))
            })
            .collect()
    }
}

/// Symbols of a file, sorted by address, found the way llvm-symbolizer finds them:
/// the last symbol starting at or before the address, unless it has a size and ends before it.
#[derive(Default)]
struct SymbolTable {
    /// `(address, size, name, file)`, sorted by address; `file` indexes `files`.
    syms: Vec<(u64, u64, String, Option<u32>)>,
    /// The names of the `STT_FILE` symbols that local symbols follow.
    files: Vec<String>,
}

/// One symbol as the symbol table names an address: its name, and for a local symbol the
/// source file of the `STT_FILE` symbol before it (empty when there is none).
struct TableName<'a> {
    name: &'a str,
    file: &'a str,
}

impl SymbolTable {
    /// Reads the symbols llvm-symbolizer (and so traceconv) looks addresses up in: of
    /// `.symtab`, or of `.dynsym` when there is no `.symtab`, those of type function (and
    /// IFUNC), object or none that are defined in a section, less ARM and AArch64 mapping
    /// symbols (`$x`, `$d`, …). Data symbols count because they end the function before them:
    /// an address past the code is named by what lies there, or by nothing, not by the last
    /// function. A local symbol takes its file name from the `STT_FILE` symbol before it.
    fn read(path: &std::path::Path) -> SymbolTable {
        use object::{Object, ObjectSymbol, SymbolKind, SymbolSection};
        let Ok(file) = std::fs::File::open(path) else { return SymbolTable::default() };
        // SAFETY: read-only map of a symbol file heapconv never writes.
        let Ok(map) = (unsafe { memmap2::Mmap::map(&file) }) else { return SymbolTable::default() };
        let Ok(obj) = object::File::parse(&*map) else { return SymbolTable::default() };
        let mut files: Vec<String> = Vec::new();
        let mut syms: Vec<(u64, u64, String, Option<u32>)> = Vec::new();
        let mut collect = |it: &mut dyn Iterator<Item = object::Symbol<'_, '_>>| {
            let mut current_file: Option<u32> = None;
            for s in it {
                let Ok(name) = s.name() else { continue };
                if s.kind() == SymbolKind::File {
                    current_file = u32::try_from(files.len()).ok();
                    files.push(name.to_owned());
                    continue;
                }
                if !matches!(s.kind(), SymbolKind::Text | SymbolKind::Data | SymbolKind::Unknown)
                    || !matches!(s.section(), SymbolSection::Section(_))
                {
                    continue;
                }
                let mapping = ["$a", "$d", "$t", "$x"].iter().any(|m| name.starts_with(m));
                if s.kind() == SymbolKind::Unknown && mapping {
                    continue;
                }
                let file = if s.is_local() { current_file } else { None };
                syms.push((s.address(), s.size(), name.to_owned(), file));
            }
        };
        if obj.symbols().next().is_some() {
            collect(&mut obj.symbols());
        } else {
            collect(&mut obj.dynamic_symbols());
        }
        // As llvm-symbolizer: stable sort by (address, size); of several symbols at one address
        // the last is kept, i.e. the largest, and of equal sizes the last in the table.
        syms.sort_by_key(|a| (a.0, a.1));
        let mut kept: Vec<(u64, u64, String, Option<u32>)> = Vec::with_capacity(syms.len());
        for sym in syms {
            match kept.last_mut() {
                Some(last) if last.0 == sym.0 => *last = sym,
                _ => kept.push(sym),
            }
        }
        SymbolTable { syms: kept, files }
    }

    /// The symbol at or before `addr` that holds it; a symbol of size 0 holds every address
    /// up to the next symbol.
    fn find(&self, addr: u64) -> Option<TableName<'_>> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        let (start, size, name, file) = self.syms.get(i.checked_sub(1)?)?;
        // `addr >= start` here; `start + size` can overflow with a corrupt symbol table.
        if *size != 0 && addr - start >= *size {
            return None;
        }
        let file = file.and_then(|f| self.files.get(f as usize)).map_or("", String::as_str);
        Some(TableName { name, file })
    }
}

/// The relative `DW_AT_comp_dir`s of the DWARF 5 units of a file. For a file in directory 0 of
/// such a unit, LLVM (and so llvm-symbolizer and traceconv) writes the compilation directory
/// twice (`./` + `./widget.c` = `././widget.c`): line-table directory 0 repeats it, and a
/// relative directory is joined to it. addr2line writes it once; [`llvm_file`] adds it back.
fn relative_comp_dirs(path: &std::path::Path) -> Vec<String> {
    use addr2line::gimli;
    use object::{Object, ObjectSection};
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    // SAFETY: read-only map of a symbol file heapconv never writes.
    let Ok(map) = (unsafe { memmap2::Mmap::map(&file) }) else { return Vec::new() };
    let Ok(obj) = object::File::parse(&*map) else { return Vec::new() };
    let endian = if obj.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
    let load = |id: gimli::SectionId| -> Result<std::borrow::Cow<'_, [u8]>, gimli::Error> {
        Ok(obj.section_by_name(id.name()).and_then(|s| s.uncompressed_data().ok()).unwrap_or_default())
    };
    let Ok(sections) = gimli::DwarfSections::load(load) else { return Vec::new() };
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let mut out = Vec::new();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        if header.version() < 5 {
            continue;
        }
        let Ok(unit) = dwarf.unit(header) else { continue };
        if let Some(dir) = &unit.comp_dir {
            let d = dir.to_string_lossy().into_owned();
            if !d.is_empty() && !d.starts_with('/') && !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// A source path as LLVM renders it (see [`relative_comp_dirs`]).
fn llvm_file(file: String, rel_dirs: &[String]) -> String {
    if file.starts_with('/') {
        return file;
    }
    for d in rel_dirs {
        if let Some(rest) = file.strip_prefix(d.as_str()).and_then(|r| r.strip_prefix('/')) {
            if !rest.contains('/') {
                return format!("{d}/{file}");
            }
        }
    }
    file
}

fn lookup(loader: &addr2line::Loader, symbols: &SymbolTable, rel_dirs: &[String], addr: u64) -> RawLines {
    // The lines as DWARF gives them (names and files borrowed), then owned strings made once
    // each: the outermost line's names come from the symbol table when it names the address,
    // and are then never read from DWARF (nor demangled) only to be replaced.
    let mut frames = Vec::new();
    // DWARF ranges are half-open, so no range holds the last address; addr2line computes
    // `addr + 1` to probe, which overflows there (a panic in builds with overflow checks).
    // A trace can name any rel_pc, so that address is simply not looked up in DWARF.
    let iter = if addr == u64::MAX { Err(()) } else { loader.find_frames(addr).map_err(|_| ()) };
    if let Ok(mut iter) = iter {
        while let Ok(Some(f)) = iter.next() {
            frames.push(f);
        }
    }
    let found: Vec<(Option<std::borrow::Cow<'_, str>>, &str, u32, u32)> = frames
        .iter()
        .filter_map(|f| {
            let raw = f.function.as_ref().map(|func| func.raw_name().unwrap_or_default());
            let (file, line, column) = match &f.location {
                Some(l) => (l.file.unwrap_or(""), l.line.unwrap_or(0), l.column.unwrap_or(0)),
                None => ("", 0, 0),
            };
            // A line with neither a function name nor a file is left out.
            let empty = raw.as_deref().is_none_or(str::is_empty) && file.is_empty();
            (!empty).then_some((raw, file, line, column))
        })
        .collect();
    let named = |raw: &str| {
        // Our demangler, so that names read the same as llvm-symbolizer's.
        let function = crate::model::frame::demangle(raw).unwrap_or_else(|| raw.to_owned());
        (function, raw.to_owned())
    };
    // As llvm-symbolizer does with DWARF: the symbol table's name for the address, when there
    // is one, replaces the outermost frame's (clones such as `main.cold`, and functions whose
    // DWARF has no linkage name, read as the symbol table says).
    // The symbol's file (for a local symbol, from the STT_FILE before it) fills in a frame
    // DWARF gave no file.
    let symbol = symbols.find(addr);
    if found.is_empty() {
        return match symbol {
            Some(sym) => {
                let (function, system_name) = named(sym.name);
                vec![ResolvedLine { function, system_name, file: sym.file.to_owned(), line: 0, column: 0 }]
            }
            None => RawLines::new(),
        };
    }
    let last = found.len() - 1;
    let mut out = RawLines::with_capacity(found.len());
    for (i, (raw, file, line, column)) in found.into_iter().enumerate() {
        let file = llvm_file(file.to_owned(), rel_dirs);
        let (function, system_name, file) = match (&symbol, i == last) {
            (Some(sym), true) => {
                let (function, system_name) = named(sym.name);
                let file = if file.is_empty() { sym.file.to_owned() } else { file };
                (function, system_name, file)
            }
            _ => match raw {
                Some(raw) => {
                    let (function, system_name) = named(&raw);
                    (function, system_name, file)
                }
                None => (String::new(), String::new(), file),
            },
        };
        out.push(ResolvedLine { function, system_name, file, line, column });
    }
    out
}

#[cfg(test)]
mod attribution_tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{Mapping, Profile, ProfileMeta, StringId, ValueKind, ValueType};

    #[test]
    fn shared_walk_agrees_with_the_whole_walk() {
        let mut t = Tables::default();
        let maps: Vec<MappingId> = (0..5u64)
            .map(|i| {
                let path = t.strings.intern(&format!("/lib/l{i}.so"));
                t.intern_mapping(Mapping {
                    path,
                    build_id: if i == 4 { Vec::new() } else { vec![i as u8 + 1; 20] }.into_boxed_slice(),
                    start: 0x1000 * (i + 1),
                    end: 0x1000 * (i + 2),
                    start_offset: 0,
                    exact_offset: 0,
                    load_bias: 0,
                })
            })
            .collect();
        let name = t.strings.intern("f");
        let frames: Vec<FrameId> = (0..60u64)
            .map(|i| t.intern_frame(Some(maps[(i % 5) as usize]), i * 16, if i % 7 == 0 { name } else { StringId(0) }))
            .collect();
        for i in (0..60).step_by(3) {
            let func = t.strings.intern("g");
            t.frames_mut()[i].lines =
                vec![Line { function: func, system_name: func, file: StringId(0), line: 1, column: 0 }];
        }
        let mut stacks = Vec::new();
        let mut lists = crate::model::StackLists::default();
        let (mut list_stacks, mut list_values) = (Vec::new(), Vec::new());
        for s in 0..500usize {
            let path: Vec<FrameId> = (0..1 + s % 9).map(|d| frames[(s * 13 + d * 7 + s / 11) % 60]).collect();
            stacks.push((t.intern_stack(&path).unwrap(), (s as i64 % 11) - 3));
            list_stacks.push(lists.intern(&path).unwrap());
            list_values.push((s as i64 % 11) - 3);
        }
        let types = vec![ValueType::new("space", "bytes", ValueKind::UnreleasedSize)];
        let mut p = Profile::new(Arc::new(t), ProfileMeta::default(), types);
        for (s, v) in stacks {
            p.push_sample(s, &[v]);
        }
        let shared = attribute_shared(&p, 0).expect("few mappings");
        let walk = attribute_walk(&p, 0);
        assert_eq!(shared.per_mapping, walk.per_mapping);
        assert_eq!((shared.total, shared.symbolized, shared.named), (walk.total, walk.symbolized, walk.named));
        assert!(walk.symbolized != 0 && walk.symbolized != walk.total && walk.named != walk.total);
        // The same samples with their stacks as flat frame lists (the symbolize decoder's).
        let listed = attribute_lists(&p.header, &list_stacks, &list_values, &lists, &p.tables);
        assert_eq!(listed.per_mapping, walk.per_mapping);
        assert_eq!((listed.total, listed.symbolized, listed.named), (walk.total, walk.symbolized, walk.named));
        assert!(lists.len() < 500, "equal lists are one stack");
    }
}
