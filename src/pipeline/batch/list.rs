//! Listing the inputs of a batch: paths, directories scanned by content, glob patterns and
//! `--inputs-from` lists, deduplicated and sorted by relative path ([`list_inputs`]).

use super::shard::assign_keys;
use crate::decode::sniff_file;
use crate::error::{Error, ErrorKind, Result};
use crate::pipeline::load::Wanted;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

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
pub(super) fn rel_path(root: &Path, path: &Path) -> String {
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
pub(super) fn split_pattern(pattern: &Path) -> (PathBuf, Vec<String>) {
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
    let glob = NameGlob::new(first);
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut names: Vec<std::ffi::OsString> = entries.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        if glob.is_match(&name.to_string_lossy()) {
            glob_walk(&dir.join(&name), rest, out);
        }
    }
}

/// One pattern component, compiled ([`globset`]): `*` (any run of characters), `?` (one
/// character), `[abc]`, `[a-z]`, `[!a]` / `[^a]` (a class); anything else literally, and so is
/// a `[` that opens no class. As in shells, a leading `.` is matched only by a literal `.`.
pub(super) struct NameGlob {
    matcher: globset::GlobMatcher,
    dot: bool,
}

impl NameGlob {
    /// Compiles `pattern`, one path component.
    pub(super) fn new(pattern: &str) -> NameGlob {
        let build = |p: &str| globset::GlobBuilder::new(p).literal_separator(true).backslash_escape(false).build();
        // globset refuses an unclosed class; a shell takes its `[` literally.
        let glob = build(pattern).or_else(|_| build(&pattern.replace('[', "[[]"))).unwrap_or_else(|_| {
            globset::Glob::new(&globset::escape(pattern)).expect("an escaped pattern is a valid glob")
        });
        NameGlob { matcher: glob.compile_matcher(), dot: pattern.starts_with('.') }
    }

    /// True when the file name `name` matches.
    pub(super) fn is_match(&self, name: &str) -> bool {
        (self.dot || !name.starts_with('.')) && self.matcher.is_match(name)
    }
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
