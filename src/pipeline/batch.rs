//! The batch front end: one command over many inputs, as CI pipelines run it.
//!
//! * **Listing** ([`list_inputs`]): inputs are paths, directories (walked recursively; a file
//!   is taken when its *content* is a kind the command reads, see [`Wanted`] and
//!   [`crate::decode::sniff_file`]), glob patterns expanded here (`*`, `?`, `[a-z]`, `[!a]`, and `**` for any
//!   number of directories), and lists of those read from files (`--inputs-from`). Every input
//!   gets a path relative to its *root* (the directory given, a pattern's leading directories
//!   without wildcards, or a plain file's own directory). The list is deduplicated (the same
//!   file reached twice counts once) and sorted by that relative path, so it does not depend
//!   on the order of the arguments.
//! * **Naming** ([`assign_keys`]): each input gets a key, its relative path with trace
//!   extensions taken off the file name (`run1/app.pftrace.gz` → `run1/app`); outputs go to
//!   `OUT/<key>.<ext>` (one file per input) or `OUT/<key>/` (one file per dump, named as the
//!   single-input command names them). Keys that collide (compared without case, for
//!   case-insensitive file systems) keep their extensions (`app.pftrace`, `app.pftrace.gz`),
//!   then get `~` and 8 hex digits of a hash of the whole path. Keys depend only on the full
//!   input list, never on a shard or on the number of threads.
//! * **Sharding** ([`Shard`]): input `i` belongs to shard `1 + h(rel_i) mod N`, `h` a fixed
//!   64-bit hash (FNV-1a, then SplitMix64's finalizer) of the relative path. Every input is in
//!   exactly one shard, an input's shard does not change when others are added or removed,
//!   and it is the same on every machine that sees the same tree.
//! * **Running** ([`run_batch`]): inputs are converted in parallel on rayon's threads; a
//!   failing input (or one that panics) is recorded and the others go on. Results come back
//!   in list order, so the summary ([`BatchSummary`]) does not depend on scheduling; only its
//!   `wall_clock` fields do, and they can be left out.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::Serialize;

use super::outcome::{Findings, RunOutcome};
use super::select::stem;
use crate::decode::{InputKind, sniff_file};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{FlatProfile, Profile, TraceReport, ValueKind, ValueType};
use crate::output::ensure_dir;
use crate::symbolize::SymbolizeReport;

// ------------------------------------------------------------------------------------------
// Which files

/// Which kinds of input a command takes from a directory. Files named explicitly (as paths,
/// by a pattern or in an `--inputs-from` list) are always taken, whatever they hold, so that
/// a wrong file fails loudly instead of being skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// `convert`: Perfetto traces, DDM allocation-record captures, HPROF heap dumps, pprof.
    Convertible,
    /// `profile`, `symbolize`, `hprof`: Perfetto traces.
    Traces,
    /// `hprof-conv`: HPROF heap dumps.
    HeapDumps,
    /// `merge`, `top`: Perfetto traces, DDM captures, pprof.
    Mergeable,
}

impl Wanted {
    /// True when a directory scan takes a file of this kind.
    pub fn accepts(self, kind: InputKind) -> bool {
        let trace = kind == InputKind::PerfettoTrace;
        match self {
            Wanted::Convertible => trace || kind.is_ddm() || kind == InputKind::Hprof || kind.is_pprof(),
            Wanted::Traces => trace,
            Wanted::HeapDumps => kind == InputKind::Hprof,
            Wanted::Mergeable => trace || kind.is_ddm() || kind.is_pprof(),
        }
    }
}

// ------------------------------------------------------------------------------------------
// Listing

/// One input of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchInput {
    /// The path to open.
    pub path: PathBuf,
    /// The path relative to its root, `/`-separated: what the shard is computed from.
    pub rel: String,
    /// The output key: `rel` with trace extensions taken off, unique in the list (see
    /// [`assign_keys`]). Outputs are `OUT/<key>.<ext>` or `OUT/<key>/…`.
    pub key: String,
}

/// How [`list_inputs`] lists inputs.
#[derive(Debug, Clone)]
pub struct ListOptions {
    /// Which files of directories are taken. Default: [`Wanted::Convertible`].
    pub wanted: Wanted,
    /// A directory never scanned (the output directory, so that a second run does not take
    /// the outputs of the first as inputs). Default: none.
    pub skip_dir: Option<PathBuf>,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions { wanted: Wanted::Convertible, skip_dir: None }
    }
}

/// What [`list_inputs`] found.
#[derive(Debug, Clone, Default)]
pub struct InputList {
    /// Every input, deduplicated, sorted by relative path, with unique keys.
    pub inputs: Vec<BatchInput>,
    /// Files of scanned directories that were not taken (content not recognised, or a kind
    /// the command does not read), sorted.
    pub skipped: Vec<PathBuf>,
}

/// One listed file before deduplication: path, relative path.
type Entry = (PathBuf, String);

/// True when `arg` is a pattern to expand: it names no existing file and has `*`, `?` or `[`.
pub fn is_pattern(arg: &Path) -> bool {
    let s = arg.to_string_lossy();
    s.contains(['*', '?', '[']) && std::fs::symlink_metadata(arg).is_err()
}

/// Reads an `--inputs-from` list: one entry per line (`-`: standard input); empty lines and
/// lines starting with `#` are skipped, a trailing `\r` is dropped. Relative paths are
/// relative to the current directory.
pub fn read_list(from: &Path) -> Result<Vec<PathBuf>> {
    let text = if from.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .lock()
            .read_to_string(&mut s)
            .map_err(|e| Error::io("reading the input list from standard input", e))?;
        s
    } else {
        std::fs::read_to_string(from).map_err(|e| Error::io(format!("reading the input list {}", from.display()), e))?
    };
    Ok(text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(PathBuf::from)
        .collect())
}

/// Expands one argument: a directory (scanned), a pattern (expanded), or a path (taken as it
/// is, existing or not: a missing file fails when it is converted).
fn expand_arg(arg: &Path, opts: &ListOptions, out: &mut Vec<Entry>, skipped: &mut Vec<PathBuf>) -> Result<()> {
    if arg.as_os_str() == "-" {
        return Err(Error::new(
            ErrorKind::Usage,
            "standard input cannot be one input among many; give files, or a list of them with --inputs-from -",
        ));
    }
    let skip = opts.skip_dir.as_ref().and_then(|d| std::fs::canonicalize(d).ok());
    if arg.is_dir() {
        if skip.is_some() && std::fs::canonicalize(arg).ok() == skip {
            return Err(Error::new(
                ErrorKind::Usage,
                format!("{}: this is the output directory, which is never scanned for inputs", arg.display()),
            ));
        }
        let before = out.len();
        scan_dir(arg, arg, opts.wanted, skip.as_deref(), out, skipped)?;
        if out.len() == before {
            return Err(Error::new(
                ErrorKind::Usage,
                format!("{}: no input found in this directory (files are recognised by their content)", arg.display()),
            ));
        }
        return Ok(());
    }
    if is_pattern(arg) {
        let (root, parts) = split_pattern(arg);
        let mut matches = Vec::new();
        glob_walk(&root, &parts, &mut matches);
        matches.sort();
        matches.dedup();
        let before = out.len();
        for m in matches {
            if m.is_dir() {
                scan_dir(&root, &m, opts.wanted, skip.as_deref(), out, skipped)?;
            } else {
                let rel = rel_path(&root, &m);
                out.push((m, rel));
            }
        }
        if out.len() == before {
            return Err(Error::new(ErrorKind::Usage, format!("{}: the pattern matches no input", arg.display())));
        }
        return Ok(());
    }
    let rel = arg.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| arg.display().to_string());
    out.push((arg.to_path_buf(), rel));
    Ok(())
}

/// `path` relative to `root`, `/`-separated.
fn rel_path(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if parts.is_empty() { path.display().to_string() } else { parts.join("/") }
}

/// Entries of `dir`, sorted by name, hidden ones (`.name`) left out.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<std::fs::DirEntry>> {
    let mut v: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    v.sort_by_key(|e| e.file_name());
    Ok(v)
}

/// Walks `dir` recursively (symbolic links to directories are not followed, so links cannot
/// loop; links to files are), taking files whose content `wanted` accepts.
fn scan_dir(
    root: &Path,
    dir: &Path,
    wanted: Wanted,
    skip: Option<&Path>,
    out: &mut Vec<Entry>,
    skipped: &mut Vec<PathBuf>,
) -> Result<()> {
    if skip.is_some_and(|s| std::fs::canonicalize(dir).is_ok_and(|c| c == s)) {
        return Ok(());
    }
    let entries = sorted_entries(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    for e in entries {
        let path = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            scan_dir(root, &path, wanted, skip, out, skipped)?;
        } else if ft.is_file() || (ft.is_symlink() && path.is_file()) {
            match sniff_file(&path) {
                Ok(kind) if wanted.accepts(kind) => {
                    let rel = rel_path(root, &path);
                    out.push((path, rel));
                }
                _ => skipped.push(path),
            }
        }
    }
    Ok(())
}

/// A pattern's root (its leading components without wildcards; `.` when there are none) and
/// the components left to match.
fn split_pattern(pattern: &Path) -> (PathBuf, Vec<String>) {
    let mut root = PathBuf::new();
    let mut parts = Vec::new();
    for c in pattern.components() {
        let s = c.as_os_str().to_string_lossy();
        if parts.is_empty() && !(matches!(c, Component::Normal(_)) && s.contains(['*', '?', '['])) {
            root.push(c.as_os_str());
        } else {
            parts.push(s.into_owned());
        }
    }
    if root.as_os_str().is_empty() {
        root.push(".");
    }
    (root, parts)
}

/// Every path under `dir` matching the component patterns `parts`.
fn glob_walk(dir: &Path, parts: &[String], out: &mut Vec<PathBuf>) {
    let Some((first, rest)) = parts.split_first() else {
        out.push(dir.to_path_buf());
        return;
    };
    if first == "**" {
        glob_walk(dir, rest, out);
        for e in sorted_entries(dir).unwrap_or_default() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                glob_walk(&e.path(), parts, out);
            }
        }
        return;
    }
    if !first.contains(['*', '?', '[']) {
        let p = dir.join(first);
        if std::fs::symlink_metadata(&p).is_ok() {
            glob_walk(&p, rest, out);
        }
        return;
    }
    let pat: Vec<char> = first.chars().collect();
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut names: Vec<std::ffi::OsString> = entries.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let s: Vec<char> = name.to_string_lossy().chars().collect();
        if glob_match(&pat, &s) {
            glob_walk(&dir.join(&name), rest, out);
        }
    }
}

/// Matches one file name against one pattern component: `*` (any run of characters), `?`
/// (one character), `[abc]`, `[a-z]`, `[!a]` / `[^a]` (a class); anything else literally. As
/// in shells, a leading `.` is matched only by a literal `.`.
pub fn glob_match(pat: &[char], name: &[char]) -> bool {
    if name.first() == Some(&'.') && pat.first() != Some(&'.') {
        return false;
    }
    let (mut p, mut n) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match pat.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some('?') => Some(p + 1),
            Some('[') => match class_match(&pat[p..], name[n]) {
                Some((true, len)) => Some(p + len),
                Some((false, _)) => None,
                None => (name[n] == '[').then_some(p + 1),
            },
            Some(&c) => (c == name[n]).then_some(p + 1),
            None => None,
        };
        match step {
            Some(next) => {
                p = next;
                n += 1;
            }
            None => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class at the start of `pat` (`[...]`): whether it matches and the
/// class's length, or `None` when the `[` is not closed (then it is a literal).
fn class_match(pat: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(pat.get(i), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < pat.len() {
        if pat[i] == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if i + 2 < pat.len() && pat[i + 1] == '-' && pat[i + 2] != ']' {
            if pat[i] <= c && c <= pat[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if pat[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

/// Lists the inputs of a batch: `args` then the entries of each `--inputs-from` list, each a
/// path, a directory or a pattern. The result is deduplicated (by canonical path), sorted by
/// relative path and keyed. A directory or a pattern that yields nothing is a usage error: a
/// batch that silently converts nothing is worse than one that stops.
pub fn list_inputs(args: &[PathBuf], inputs_from: &[PathBuf], opts: &ListOptions) -> Result<InputList> {
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    let mut all: Vec<PathBuf> = args.to_vec();
    for f in inputs_from {
        all.extend(read_list(f)?);
    }
    for a in &all {
        expand_arg(a, opts, &mut entries, &mut skipped)?;
    }
    entries.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
    let mut seen = std::collections::HashSet::new();
    let mut inputs = Vec::new();
    for (path, rel) in entries {
        let id = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.insert(id) {
            inputs.push(BatchInput { path, rel, key: String::new() });
        }
    }
    assign_keys(&mut inputs);
    skipped.sort();
    skipped.dedup();
    Ok(InputList { inputs, skipped })
}

/// Expands arguments for commands that read all their inputs into one result (`merge`,
/// `top`): directories and patterns become their sorted files in place; plain paths (and
/// `-`) stay as they are, in order, repeats included (merging a file twice counts it twice,
/// as `go tool pprof` does).
pub fn expand_args(args: &[PathBuf], inputs_from: &[PathBuf], wanted: Wanted) -> Result<Vec<PathBuf>> {
    let mut all: Vec<PathBuf> = args.to_vec();
    for f in inputs_from {
        all.extend(read_list(f)?);
    }
    let opts = ListOptions { wanted, skip_dir: None };
    let mut out = Vec::new();
    for a in &all {
        if a.as_os_str() == "-" || !(a.is_dir() || is_pattern(a)) {
            out.push(a.clone());
            continue;
        }
        let mut entries = Vec::new();
        expand_arg(a, &opts, &mut entries, &mut Vec::new())?;
        entries.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        out.extend(entries.into_iter().map(|e| e.0));
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------------
// Naming and sharding

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// SplitMix64's finalizer: spreads every input bit over the low bits a modulo looks at.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of `input` at a level: 0 without trace extensions, 1 the relative path as it is,
/// 2 with a hash of the whole path.
fn key_at(input: &BatchInput, level: u8) -> String {
    let (dir, name) = match input.rel.rsplit_once('/') {
        Some((d, n)) => (Some(d), n),
        None => (None, input.rel.as_str()),
    };
    let name = match level {
        0 => stem(Path::new(name)),
        1 => name.to_owned(),
        _ => format!("{name}~{:08x}", mix(fnv1a(input.path.as_os_str().as_encoded_bytes())) as u32),
    };
    match dir {
        Some(d) => format!("{d}/{name}"),
        None => name,
    }
}

/// Gives every input a key unique in the list, compared without case (see the module docs).
/// Depends only on the set of inputs, not on their order.
pub fn assign_keys(inputs: &mut [BatchInput]) {
    let mut level = vec![0u8; inputs.len()];
    loop {
        let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, inp) in inputs.iter().enumerate() {
            groups.entry(key_at(inp, level[i]).to_lowercase()).or_default().push(i);
        }
        let mut changed = false;
        for members in groups.values().filter(|m| m.len() > 1) {
            for &i in members {
                if level[i] < 2 {
                    level[i] += 1;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Whatever still collides (a hash collision, or names built to collide) gets a counter,
    // in the order of the relative paths.
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by(|&a, &b| (&inputs[a].rel, &inputs[a].path).cmp(&(&inputs[b].rel, &inputs[b].path)));
    let mut used = std::collections::HashSet::new();
    for i in order {
        let base = key_at(&inputs[i], level[i]);
        let mut key = base.clone();
        let mut n = 2;
        while !used.insert(key.to_lowercase()) {
            key = format!("{base}~{n}");
            n += 1;
        }
        inputs[i].key = key;
    }
}

/// One shard of a batch: `index` of `count`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shard {
    /// Which shard, from 1 to `count`.
    pub index: u32,
    /// How many shards.
    pub count: u32,
}

impl Shard {
    /// Parses `K/N` (1 ≤ K ≤ N).
    pub fn parse(s: &str) -> Result<Shard> {
        let bad = || Error::new(ErrorKind::Usage, format!("--shard takes K/N with 1 <= K <= N (as in 2/4), not {s:?}"));
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The shard (1-based) an input with relative path `rel` belongs to among `count`.
    pub fn of(rel: &str, count: u32) -> u32 {
        1 + (mix(fnv1a(rel.as_bytes())) % u64::from(count.max(1))) as u32
    }

    /// True when `input` belongs to this shard.
    pub fn contains(&self, input: &BatchInput) -> bool {
        Shard::of(&input.rel, self.count) == self.index
    }
}

// ------------------------------------------------------------------------------------------
// Results

/// What one profile holds: its name and the total of each sample type, by meaning
/// (`total-count`, `total-size`, `unreleased-count`, `unreleased-size`; other types as
/// `other:TYPE/UNIT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProfileTotals {
    /// Which profile (process, pid, heap, dump, time).
    pub profile: String,
    /// Samples (distinct stacks with a value).
    pub samples: usize,
    /// Totals by sample type.
    pub totals: BTreeMap<String, i64>,
}

fn totals_key(t: &ValueType) -> String {
    match t.kind {
        ValueKind::TotalCount => "total-count".to_owned(),
        ValueKind::TotalSize => "total-size".to_owned(),
        ValueKind::UnreleasedCount => "unreleased-count".to_owned(),
        ValueKind::UnreleasedSize => "unreleased-size".to_owned(),
        ValueKind::Other => format!("other:{}/{}", t.name, t.unit),
    }
}

impl ProfileTotals {
    /// The totals of a profile.
    pub fn of(p: &Profile) -> ProfileTotals {
        let mut totals = BTreeMap::new();
        for (i, t) in p.header.sample_types.iter().enumerate() {
            *totals.entry(totals_key(t)).or_insert(0) += p.total(i);
        }
        ProfileTotals { profile: p.header.meta.describe(), samples: p.sample_count(), totals }
    }

    /// The totals of a profile with frame lists (pprof input).
    pub fn of_flat(p: &FlatProfile) -> ProfileTotals {
        let mut totals = BTreeMap::new();
        for (i, t) in p.header.sample_types.iter().enumerate() {
            *totals.entry(totals_key(t)).or_insert(0) += p.total(i);
        }
        ProfileTotals { profile: p.header.meta.describe(), samples: p.sample_count(), totals }
    }
}

/// How an input fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Converted completely.
    Ok,
    /// Damaged (truncated, corrupt) or with unfinished dumps: what was complete was converted.
    Partial,
    /// Nothing converted: the error says why.
    Failed,
}

/// One file a batch wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputFile {
    /// Path relative to the output directory, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// Symbolization coverage of an input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Native frames seen.
    pub frames: u64,
    /// Native frames given symbols.
    pub frames_symbolized: u64,
    /// `frames_symbolized / frames`, in percent (100 when there are no frames).
    pub frame_percent: f64,
    /// Bytes on fully symbolized stacks, in percent.
    pub byte_percent: f64,
    /// Mappings without symbols (path, frames), in mapping order.
    pub unsymbolized_mappings: Vec<String>,
}

/// The `--min-symbolized` gate of an input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    /// The least coverage allowed, in percent of frames.
    pub min_symbolized: f64,
    /// The coverage reached.
    pub actual: f64,
    /// Whether it passed.
    pub passed: bool,
}

/// Wall-clock time an input took: the only value of a summary that changes between runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputClock {
    /// Seconds from opening the input to its last output.
    pub elapsed_s: f64,
}

/// What one input of a batch did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputResult {
    /// The input's path.
    pub input: String,
    /// Its path relative to its root.
    pub rel: String,
    /// Its output key.
    pub key: String,
    /// What its content is (`perfetto-trace`, `ddm-alloc-blob`, `hprof`, `pprof`, …), or null
    /// when it could not be read.
    pub kind: Option<&'static str>,
    /// How it fared.
    pub status: Status,
    /// Why it failed.
    pub error: Option<String>,
    /// The error's kind (`io`, `malformed`, `truncated`, `unsupported`, `limit-exceeded`,
    /// `usage`, `no-data`, `internal`).
    pub error_kind: Option<&'static str>,
    /// What the user should know: data loss, damage, problems found, dumps that never ended.
    pub warnings: Vec<String>,
    /// What the input says was lost (see [`TraceReport::data_loss`]; for `hprof-conv`, arrays
    /// whose values the dump does not hold): `--strict` fails the batch on any.
    pub data_loss: Vec<String>,
    /// Files written, in order.
    pub outputs: Vec<OutputFile>,
    /// What each converted profile holds.
    pub profiles: Vec<ProfileTotals>,
    /// Symbolization coverage, when the work reported one (the command-line batches always
    /// count it for traces and pprof inputs; `None` for inputs without native frames).
    pub symbolization: Option<Coverage>,
    /// The `--min-symbolized` gate, when one was set and there was something to measure.
    pub gate: Option<Gate>,
    /// Command-specific figures (`hprof`, `hprof-conv`).
    pub details: Option<serde_json::Value>,
    /// Wall-clock time (left out with `--summary-no-times`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_clock: Option<InputClock>,
}

impl InputResult {
    /// True when the input passed its gate (or had none).
    pub fn gate_passed(&self) -> bool {
        self.gate.as_ref().is_none_or(|g| g.passed)
    }

    /// How this input went; with `strict`, data it lost makes it [`RunOutcome::DataLoss`].
    pub fn outcome(&self, strict: bool) -> RunOutcome {
        if self.status == Status::Failed {
            return RunOutcome::Failed;
        }
        let findings = Findings {
            partial: self.status == Status::Partial,
            data_lost: !self.data_loss.is_empty(),
            symbols_gate_failed: !self.gate_passed(),
            growth_gate_failed: false,
        };
        RunOutcome::judge(findings, strict)
    }
}

/// What a per-input function returns; [`run_batch`] makes an [`InputResult`] of it.
#[derive(Debug, Default)]
pub struct Done {
    /// Files written.
    pub outputs: Vec<PathBuf>,
    /// What each converted profile holds.
    pub profiles: Vec<ProfileTotals>,
    /// What the decoder found (warnings and partial results are read from it).
    pub report: Option<TraceReport>,
    /// The symbolization report.
    pub symbols: Option<SymbolizeReport>,
    /// Why the result is partial, beyond what the report says.
    pub partial: Vec<String>,
    /// More warnings.
    pub warnings: Vec<String>,
    /// What was lost, beyond what the report and `partial` say (for `--strict`).
    pub data_loss: Vec<String>,
    /// Command-specific figures.
    pub details: Option<serde_json::Value>,
    /// The dumps of the trace the command took: warnings and data loss name those only.
    /// `None`: every dump.
    pub dumps: Option<super::DumpFilter>,
}

/// How [`run_batch`] runs.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Worker threads; `None`: the current rayon pool (all cores unless configured).
    /// Default: `None`.
    pub jobs: Option<usize>,
    /// Where outputs go (output paths in results are relative to it). Default: empty (the
    /// current directory).
    pub out_dir: PathBuf,
    /// The least symbolization coverage (percent of frames) an input must reach. Default: none.
    pub min_symbolized: Option<f64>,
    /// Extensions of the one-file outputs the command writes (`OUT/<key>.<ext>`); with
    /// `OUT/<key>/`, what an input's outputs may overwrite. Default: none.
    pub file_exts: Vec<String>,
    /// Leave wall-clock times out of the results. Default: false.
    pub no_times: bool,
}

fn error_kind_name(k: ErrorKind) -> &'static str {
    match k {
        ErrorKind::Io => "io",
        ErrorKind::Truncated => "truncated",
        ErrorKind::Malformed => "malformed",
        ErrorKind::Unsupported => "unsupported",
        ErrorKind::LimitExceeded => "limit-exceeded",
        ErrorKind::Usage => "usage",
        ErrorKind::NoData => "no-data",
    }
}

/// An error with its chain of causes, on one line.
pub fn error_text(e: &Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(&format!(": {c}"));
        src = c.source();
    }
    s
}

/// What the user should know about a decoded trace, one line each (as the single-input
/// commands print them).
pub fn report_warnings(report: &TraceReport) -> Vec<String> {
    report_warnings_of(report, &|_| true)
}

/// [`report_warnings`] with the data-loss flags of the dumps `keep` accepts only.
pub fn report_warnings_of(report: &TraceReport, keep: &dyn Fn(&crate::model::DumpReport) -> bool) -> Vec<String> {
    let mut w = Vec::new();
    for d in report.dumps.iter().filter(|d| keep(d)) {
        let loss = d.flags.data_loss();
        if !loss.is_empty() {
            w.push(format!("pid {} heap {} dump {}: {}", d.pid, d.heap, d.index + 1, loss.join(", ")));
        }
    }
    const LISTED: usize = 20;
    for p in report.problems.iter().take(LISTED) {
        w.push(p.message.clone());
    }
    let more = report.problems.len().saturating_sub(LISTED) as u64 + report.problems_omitted;
    if more > 0 {
        w.push(format!("{more} more problem(s); `heapconv inspect` lists them"));
    }
    if report.unfinished_dumps > 0 {
        w.push(format!(
            "{} dump(s) never finished (the trace ends inside a dump chain); they were not converted",
            report.unfinished_dumps
        ));
    }
    if let Some(d) = &report.damage {
        w.push(format!("input damaged, result is partial: {d}"));
    }
    w
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

/// Inputs (relative to the canonical output directory, lower-cased) that lie inside it.
fn inputs_inside(out_dir: &Path, inputs: &[BatchInput]) -> Vec<String> {
    let Ok(out) = std::fs::canonicalize(out_dir) else { return Vec::new() };
    inputs
        .par_iter()
        .filter_map(|i| {
            let c = std::fs::canonicalize(&i.path).ok()?;
            let rel = c.strip_prefix(&out).ok()?;
            Some(rel_path(Path::new(""), rel).to_lowercase())
        })
        .collect()
}

/// Runs `work` on every input, in parallel, and returns what each did, in input order.
/// `done` is called (from worker threads) as each input finishes. An input whose outputs
/// could overwrite another input of the batch fails without being converted. Outputs are
/// flushed to disk together at the end rather than one by one (see
/// [`crate::output::defer_sync`]).
pub fn run_batch(
    inputs: &[BatchInput],
    opts: &RunOptions,
    work: &(dyn Fn(&BatchInput) -> Result<Done> + Sync),
    done: &(dyn Fn(&InputResult) + Sync),
) -> Result<Vec<InputResult>> {
    let inside = inputs_inside(&opts.out_dir, inputs);
    let one = |input: &BatchInput| -> InputResult {
        let start = Instant::now();
        let key_l = input.key.to_lowercase();
        let clash = inside.iter().find(|r| {
            r.starts_with(&format!("{key_l}/")) || opts.file_exts.iter().any(|e| **r == format!("{key_l}.{e}"))
        });
        let outcome = match clash {
            Some(r) => Err(Failure::Error(Error::new(
                ErrorKind::Usage,
                format!(
                    "{}: refusing to convert: its outputs ({}/{}…) could overwrite the input {r} in the output directory",
                    input.path.display(),
                    opts.out_dir.display(),
                    input.key
                ),
            ))),
            None => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(input))) {
                Ok(Ok(d)) => Ok(d),
                Ok(Err(e)) => Err(Failure::Error(e)),
                Err(p) => Err(Failure::Panic(panic_text(&*p))),
            },
        };
        let elapsed = start.elapsed();
        let r = result_of(input, outcome, elapsed, opts);
        done(&r);
        r
    };
    crate::output::defer_sync();
    let results = match opts.jobs {
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| Error::new(ErrorKind::Io, format!("starting {n} worker thread(s): {e}")))?;
            pool.install(|| inputs.par_iter().map(one).collect())
        }
        None => inputs.par_iter().map(one).collect(),
    };
    let mut results: Vec<InputResult> = results;
    // Every output flushed to disk at once (see `crate::output::defer_sync`); an output that
    // cannot be flushed fails its input.
    for (path, e) in crate::output::sync_deferred() {
        let rel = rel_path(&opts.out_dir, &path);
        if let Some(r) = results.iter_mut().find(|r| r.outputs.iter().any(|o| o.path == rel)) {
            r.status = Status::Failed;
            r.error_kind = Some(error_kind_name(e.kind()));
            r.error = Some(error_text(&e));
        }
    }
    Ok(results)
}

/// Why an input failed.
enum Failure {
    /// An error.
    Error(Error),
    /// A panic (a bug): its message.
    Panic(String),
}

fn result_of(
    input: &BatchInput,
    outcome: std::result::Result<Done, Failure>,
    elapsed: Duration,
    opts: &RunOptions,
) -> InputResult {
    let kind = sniff_file(&input.path).ok().map(InputKind::name);
    let mut r = InputResult {
        input: input.path.display().to_string(),
        rel: input.rel.clone(),
        key: input.key.clone(),
        kind,
        status: Status::Ok,
        error: None,
        error_kind: None,
        warnings: Vec::new(),
        data_loss: Vec::new(),
        outputs: Vec::new(),
        profiles: Vec::new(),
        symbolization: None,
        gate: None,
        details: None,
        wall_clock: (!opts.no_times).then(|| InputClock { elapsed_s: (elapsed.as_secs_f64() * 1e6).round() / 1e6 }),
    };
    let done = match outcome {
        Ok(d) => d,
        Err(Failure::Error(e)) => {
            r.status = Status::Failed;
            r.error_kind = Some(error_kind_name(e.kind()));
            r.error = Some(error_text(&e));
            return r;
        }
        Err(Failure::Panic(msg)) => {
            r.status = Status::Failed;
            r.error_kind = Some("internal");
            r.error = Some(format!("internal error (a bug; please report it): {msg}"));
            return r;
        }
    };
    let mut partial = !done.partial.is_empty();
    if let Some(rep) = &done.report {
        let keep = |d: &crate::model::DumpReport| done.dumps.as_ref().is_none_or(|f| f.keeps(d));
        r.warnings = report_warnings_of(rep, &keep);
        r.data_loss = rep.data_loss_of(&keep);
        partial |= rep.is_partial();
    }
    if r.data_loss.is_empty() {
        r.data_loss = done.partial.clone();
    }
    r.data_loss.extend(done.data_loss);
    r.warnings.extend(done.partial.iter().cloned());
    r.warnings.extend(done.warnings);
    if partial {
        r.status = Status::Partial;
    }
    r.outputs = done
        .outputs
        .iter()
        .map(|p| OutputFile {
            path: rel_path(&opts.out_dir, p),
            bytes: std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
        })
        .collect();
    r.profiles = done.profiles;
    if let Some(s) = &done.symbols {
        r.symbolization = Some(Coverage {
            frames: s.frames,
            frames_symbolized: s.frames_symbolized,
            frame_percent: round3(s.frame_percent()),
            byte_percent: round3(s.byte_percent()),
            unsymbolized_mappings: s
                .mappings
                .iter()
                .filter(|m| m.symbolized == 0 && m.frames > 0)
                .map(|m| format!("{} ({} frames, {:?})", m.path, m.frames, m.outcome))
                .collect(),
        });
        if let Some(min) = opts.min_symbolized {
            let actual = round3(s.frame_percent());
            r.gate = Some(Gate { min_symbolized: min, actual, passed: s.frame_percent() >= min });
        }
    }
    r.details = done.details;
    r
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `OUT/<key>.<ext>`, its directory created: where the per-input work of a command writes
/// an input's one output.
pub fn file_for(out_dir: &Path, key: &str, ext: &str) -> Result<PathBuf> {
    let path = out_dir.join(format!("{key}.{ext}"));
    if let Some(parent) = path.parent() {
        ensure_dir(parent)?;
    }
    Ok(path)
}

/// Wall-clock figures of a whole batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchClock {
    /// Seconds from listing the inputs to the last result.
    pub elapsed_s: f64,
}

/// The `--summary-json` document (schema `heapconv-batch-summary/1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchSummary {
    /// `heapconv-batch-summary/1`.
    pub schema: &'static str,
    /// The command (`convert`, `profile`, …).
    pub command: String,
    /// The output directory as given.
    pub output_dir: String,
    /// The shard this run converted, if it was one.
    pub shard: Option<Shard>,
    /// Inputs listed (all shards).
    pub inputs_listed: usize,
    /// Inputs this run converted (its shard).
    pub inputs: usize,
    /// Inputs converted completely.
    pub ok: usize,
    /// Inputs converted in part.
    pub partial: usize,
    /// Inputs that failed.
    pub failed: usize,
    /// Inputs below `--min-symbolized`.
    pub gate_failed: usize,
    /// Inputs that say data was lost (the ones `--strict` fails on).
    pub data_loss: usize,
    /// Files written.
    pub outputs: usize,
    /// The outcome.
    pub outcome: RunOutcome,
    /// The process exit code.
    pub exit_code: u8,
    /// Per input, in list order (sorted by relative path).
    pub results: Vec<InputResult>,
    /// Wall-clock figures (left out with `--summary-no-times`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_clock: Option<BatchClock>,
    /// What the ProGuard/R8 maps did over the batch (left out without maps): per map, what it
    /// was applied to and how many names it deobfuscated; the names no map deobfuscated (a
    /// `DeobfuscationReport`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deobfuscation: Option<serde_json::Value>,
}

impl BatchSummary {
    /// The summary of `results` (`strict`: `--strict` was given).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        command: &str,
        output_dir: &Path,
        shard: Option<Shard>,
        inputs_listed: usize,
        results: Vec<InputResult>,
        exit_code: u8,
        strict: bool,
        elapsed: Option<Duration>,
    ) -> BatchSummary {
        let count = |s: Status| results.iter().filter(|r| r.status == s).count();
        BatchSummary {
            schema: "heapconv-batch-summary/1",
            command: command.to_owned(),
            output_dir: output_dir.display().to_string(),
            shard,
            inputs_listed,
            inputs: results.len(),
            ok: count(Status::Ok),
            partial: count(Status::Partial),
            failed: count(Status::Failed),
            gate_failed: results.iter().filter(|r| !r.gate_passed()).count(),
            data_loss: results.iter().filter(|r| !r.data_loss.is_empty()).count(),
            outputs: results.iter().map(|r| r.outputs.len()).sum(),
            outcome: RunOutcome::worst(results.iter().map(|r| r.outcome(strict))),
            exit_code,
            results,
            wall_clock: elapsed.map(|e| BatchClock { elapsed_s: (e.as_secs_f64() * 1e6).round() / 1e6 }),
            deobfuscation: None,
        }
    }

    /// The `index.html` of a batch of HTML reports: each input with its reports and totals.
    pub fn html_index(&self) -> Vec<u8> {
        let rows: Vec<crate::encode::html::IndexRow> = self
            .results
            .iter()
            .map(|r| crate::encode::html::IndexRow {
                input: r.input.clone(),
                status: serde_json::to_value(r.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                links: r.outputs.iter().filter(|o| o.path.ends_with(".html")).map(|o| o.path.clone()).collect(),
                profiles: r
                    .profiles
                    .iter()
                    .map(|p| (p.profile.clone(), p.totals.iter().map(|(k, v)| (k.clone(), *v)).collect()))
                    .collect(),
                note: r.error.clone().or_else(|| (!r.warnings.is_empty()).then(|| r.warnings.join("; "))),
            })
            .collect();
        let title = format!(
            "heapconv {}: {} input(s), {} ok, {} partial, {} failed",
            self.command, self.inputs, self.ok, self.partial, self.failed
        );
        crate::encode::html::encode_index(&title, &rows)
    }

    /// The summary as pretty JSON, ending with a newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("the summary serializes");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        glob_match(&p.chars().collect::<Vec<_>>(), &n.chars().collect::<Vec<_>>())
    }

    #[test]
    fn globs_match_like_shells() {
        assert!(m("*.pftrace", "a.pftrace"));
        assert!(!m("*.pftrace", "a.pftrace.gz"));
        assert!(m("*.pftrace*", "a.pftrace.gz"));
        assert!(m("a?c", "abc") && !m("a?c", "ac"));
        assert!(m("[ab]*", "b1") && !m("[ab]*", "c1"));
        assert!(m("run[0-9]", "run7") && !m("run[0-9]", "runx"));
        assert!(m("run[!0-9]", "runx") && !m("run[!0-9]", "run7"));
        assert!(m("*", "x") && !m("*", ".hidden") && m(".*", ".hidden"));
        assert!(m("a*b*c", "aXXbYYc") && !m("a*b*c", "aXXbYY"));
        assert!(m("[", "[") && m("x[", "x["), "an unclosed class is literal");
        assert!(m("[]]", "]"), "a ] first in a class is a member");
    }

    #[test]
    fn patterns_split_at_the_first_wildcard() {
        let (root, parts) = split_pattern(Path::new("traces/ci/*/x*.pftrace"));
        assert_eq!(root, PathBuf::from("traces/ci"));
        assert_eq!(parts, ["*", "x*.pftrace"]);
        let (root, parts) = split_pattern(Path::new("**/*.gz"));
        assert_eq!(root, PathBuf::from("."));
        assert_eq!(parts, ["**", "*.gz"]);
    }

    #[test]
    fn shards_parse_and_partition() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 2, count: 4 });
        for bad in ["0/4", "5/4", "1/0", "2", "a/b", "-1/3"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        // Fixed values: the partition must never change between versions (CI matrices rely
        // on it), so these are pinned.
        let shards: Vec<u32> =
            ["a.pftrace", "b.pftrace", "run1/x.pftrace", "run2/x.pftrace"].iter().map(|r| Shard::of(r, 4)).collect();
        assert_eq!(shards, PINNED_SHARDS);
        let mut counts = [0usize; 4];
        for i in 0..1000 {
            counts[Shard::of(&format!("trace_{i:04}.pftrace"), 4) as usize - 1] += 1;
        }
        assert!(counts.iter().all(|&c| (200..300).contains(&c)), "balanced: {counts:?}");
    }

    /// Computed independently (Python: FNV-1a 64 of the UTF-8 path, SplitMix64's finalizer,
    /// `1 + h % 4`).
    const PINNED_SHARDS: [u32; 4] = [3, 2, 2, 4];

    fn input(path: &str, rel: &str) -> BatchInput {
        BatchInput { path: PathBuf::from(path), rel: rel.to_owned(), key: String::new() }
    }

    #[test]
    fn keys_are_unique_and_do_not_depend_on_order() {
        let mut v = vec![
            input("d1/app.pftrace", "app.pftrace"),
            input("d1/app.pftrace.gz", "app.pftrace.gz"),
            input("d2/app.pftrace", "app.pftrace"),
            input("d1/run1/x.pftrace", "run1/x.pftrace"),
            input("d1/App.alloc", "App.alloc"),
            input("d1/other.hprof", "other.hprof"),
        ];
        assign_keys(&mut v);
        let keys: BTreeMap<String, String> = v.iter().map(|i| (i.path.display().to_string(), i.key.clone())).collect();
        assert_eq!(keys["d1/run1/x.pftrace"], "run1/x");
        assert_eq!(keys["d1/other.hprof"], "other");
        assert_eq!(keys["d1/app.pftrace.gz"], "app.pftrace.gz");
        assert_eq!(keys["d1/App.alloc"], "App.alloc", "case-insensitive collision with app");
        assert!(
            keys["d1/app.pftrace"].starts_with("app.pftrace~") && keys["d2/app.pftrace"].starts_with("app.pftrace~")
        );
        assert_ne!(keys["d1/app.pftrace"], keys["d2/app.pftrace"]);
        let mut w: Vec<BatchInput> = v.iter().rev().cloned().collect();
        assign_keys(&mut w);
        for i in &w {
            assert_eq!(keys[&i.path.display().to_string()], i.key);
        }
    }
}
