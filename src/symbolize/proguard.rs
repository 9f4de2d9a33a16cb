//! Java deobfuscation with ProGuard and R8 mapping files (`mapping.txt`), the managed-code
//! counterpart of native symbolization.
//!
//! # The format
//!
//! A mapping file is text, one record a line. A line that starts at column 0 opens a class:
//! `original.Name -> obfuscated.Name:`. Indented lines below it are its members: fields
//! (`type originalName -> obfuscatedName`) and methods
//! (`[a:b:]returnType [OriginalClass.]originalName(args)[:c[:d]] -> obfuscatedName`), where
//! `a:b` is the obfuscated line range and `c:d` the original one; several method lines sharing
//! one obfuscated range are an inline chain, innermost first, the enclosing method last. Lines
//! starting with `#` are comments; R8 writes JSON metadata in them (`{"id":"sourceFile",…}`,
//! `com.android.tools.r8.synthesized`, `…outline`, `…outlineCallsite`, `…rewriteFrame`,
//! `…residualsignature`) after the record they describe.
//!
//! # How it is read
//!
//! Opening a map scans it once, streaming (it is neither memory-mapped nor held), for class
//! lines only: the index keeps each class's names and the byte range of its section. A
//! class's members are read from the file when the input names the class, one line at a time
//! with our own reader of the member-line grammar (`line.rs`), into a compact table of our
//! own (`members.rs`): spans into a copy of the class's lines, a few dozen bytes a member. The
//! reader gives the records of Sentry's [`proguard`] crate, exactly as the crate's own line
//! parser does (tests compare the two on fixture, generated, real and random lines), at a
//! fraction of its cost: a large input reads nearly every line of a large map, and the
//! crate's parser was a fifth of that time. The lookup rules over the table are R8
//! `retrace`'s as the crate implements them (line ranges, inline chains, ambiguous members,
//! `sourceFile`, synthesized members, outlines), checked against the crate's own mapper by a
//! unit test; the crate's mapper itself is not used, as it keeps hash maps of cloned records
//! per class (about eight times the map's bytes once every class is read).
//!
//! Two ways to ask: [`Retracer::frame`] and friends read a class the first time it is named
//! and keep its table for the run (heap dumps, small inputs); [`Retracer::frames`] answers a
//! batch of frames, each distinct frame once, classes in parallel, each class's table dropped
//! once its frames are answered, so memory stays at the index and the answers however much of
//! the map is touched. A batch reads runs of neighbouring classes with one read, parses each
//! class in place in that block (no copy), and keeps in its table only the method lines of
//! the names asked about (every line is still read: skipped lines count the same).
//! [`Retracer::stack`] follows one call stack, for the rules that need the frame below: an
//! R8 outline frame is dropped and its caller's line becomes the outline's call site
//! (`outline`/`outlineCallsite`).
//!
//! Answers ([`Retraced`], [`OriginalFrame`]) borrow their names from the map's text: from the
//! retracer's kept tables for [`Retracer::frame`], from the class being answered for the
//! closure of [`Retracer::frames_with`] (which copies only what it keeps); `into_owned` makes
//! an answer of its own ([`Retracer::frames`] gives those).
//!
//! # Bad lines
//!
//! A class line that does not read as `original -> obfuscated:` (or is not UTF-8), an indented
//! line before the first class, and a second section for the same obfuscated class are errors
//! naming the file and line. A member line that does not parse is skipped and counted
//! ([`RetraceReport::skipped_lines`], with the first such line's number), as `retrace` skips
//! it: one odd line should not cost a whole map.
//!
//! # Limits
//!
//! Each class's members are read on their own; the source file of a method inlined from
//! another class is read from that class's `sourceFile` record (the start of its section,
//! found by original name), as R8's retrace does, and made from its name (`Foo.java`, as the
//! crate does) when it has none. `rewriteFrame` rules apply to the innermost frame of a thrown
//! exception's stack ([`Retracer::stack_thrown`]: `throws(<descriptor>)` conditions and
//! `removeInnerFrames(n)` actions; a rule with anything else does not apply); heapconv's
//! inputs record no exceptions, so conversions never apply them. `residualsignature` is read
//! for every method line ([`Retracer::frame_typed`] narrows candidates by it); heapprofd and
//! DDM frames carry no signature, so for them it changes nothing, as in R8's retrace.

mod line;
mod members;

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use proguard::ProguardRecord;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use crate::error::{Error, ErrorKind, Result};
use members::ClassTable;

/// Where a map's bytes are: a file read on demand, or bytes in memory (tests, packets).
enum Source {
    File(std::fs::File),
    Owned(Vec<u8>),
}

/// One class of the index.
struct ClassEntry {
    /// The class line and the member and comment lines below it: byte range of the map.
    section: Range<u64>,
    /// The original (deobfuscated) name: byte range of [`ProguardMap::names`].
    original: Range<u32>,
    /// The obfuscated name: byte range of [`ProguardMap::names`].
    obfuscated: Range<u32>,
    /// 1-based line number of the class line.
    line: u32,
}

/// A ProGuard/R8 mapping file, indexed by obfuscated class name; members are read lazily by a
/// [`Retracer`].
pub struct ProguardMap {
    name: String,
    package: Option<String>,
    source: Source,
    classes: FxHashMap<Box<str>, u32>,
    entries: Vec<ClassEntry>,
    /// Every class's original and obfuscated names, end to end.
    names: String,
    /// The packages of the classes the map names, original and obfuscated (`""`: the default
    /// package): a name in one of them that the map does not know is worth reporting.
    packages: FxHashSet<Box<str>>,
    /// Original class name → class, built the first time a frame inlined from another class
    /// asks for that class's `sourceFile`: `(hash of the original name, class)` sorted, so
    /// that the classes of one name are together, first of equals first.
    by_original: OnceLock<Vec<(u64, u32)>>,
}

impl std::fmt::Debug for ProguardMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProguardMap")
            .field("name", &self.name)
            .field("package", &self.package)
            .field("classes", &self.entries.len())
            .finish()
    }
}

/// Builds the index from the map's lines, fed in order.
struct Indexer {
    name: String,
    classes: FxHashMap<Box<str>, u32>,
    entries: Vec<ClassEntry>,
    names: String,
    packages: FxHashSet<Box<str>>,
    line_no: u32,
    /// Indexing one piece of a map, not from its start ([`ProguardMap::open`] in parallel):
    /// member lines before the piece's first class line belong to a class of an earlier piece
    /// and are noted in `orphans`, not an error.
    piece: bool,
    orphans: bool,
}

impl Indexer {
    fn new(name: String) -> Self {
        Indexer {
            name,
            classes: FxHashMap::default(),
            entries: Vec::new(),
            names: String::new(),
            packages: FxHashSet::default(),
            line_no: 0,
            piece: false,
            orphans: false,
        }
    }

    /// Line `line` (no newline) starting at byte `pos` of the map.
    fn line(&mut self, pos: u64, line: &[u8]) -> Result<()> {
        let name = &self.name;
        self.line_no = self.line_no.saturating_add(1);
        let line_no = self.line_no;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match line.first() {
            None | Some(b'#') => {}
            Some(b' ' | b'\t') => {
                if self.entries.is_empty() && !line.iter().all(|b| b.is_ascii_whitespace()) {
                    if self.piece {
                        self.orphans = true;
                        return Ok(());
                    }
                    return Err(Error::new(
                        ErrorKind::Malformed,
                        format!("{name}:{line_no}: a member line before the first class line"),
                    ));
                }
            }
            Some(_) => {
                let (original, obfuscated) = parse_class_line(line).ok_or_else(|| {
                    Error::new(
                        ErrorKind::Malformed,
                        format!(
                            "{name}:{line_no}: not a class line (`original.Name -> obfuscated.Name:`): {}",
                            String::from_utf8_lossy(&line[..line.len().min(200)])
                        ),
                    )
                })?;
                if let Some(last) = self.entries.last_mut() {
                    last.section.end = pos;
                }
                let idx = u32::try_from(self.entries.len())
                    .map_err(|_| Error::new(ErrorKind::LimitExceeded, format!("{name}: more than 2^32 classes")))?;
                if let Some(&prev) = self.classes.get(obfuscated) {
                    return Err(Error::new(
                        ErrorKind::Malformed,
                        format!(
                            "{name}:{line_no}: class {obfuscated} is mapped a second time (first at line {})",
                            self.entries[prev as usize].line
                        ),
                    ));
                }
                let too_big = || Error::new(ErrorKind::LimitExceeded, format!("{name}: class names over 4 GiB"));
                let o_start = u32::try_from(self.names.len()).map_err(|_| too_big())?;
                self.names.push_str(original);
                self.names.push_str(obfuscated);
                let b_start = o_start + original.len() as u32;
                let b_end = u32::try_from(self.names.len()).map_err(|_| too_big())?;
                for n in [original, obfuscated] {
                    let p = n.rfind('.').map_or("", |i| &n[..i]);
                    if !self.packages.contains(p) {
                        self.packages.insert(p.into());
                    }
                }
                self.classes.insert(obfuscated.into(), idx);
                self.entries.push(ClassEntry {
                    section: pos..u64::MAX,
                    original: o_start..b_start,
                    obfuscated: b_start..b_end,
                    line: line_no,
                });
            }
        }
        Ok(())
    }

    fn finish(mut self, package: Option<String>, source: Source, len: u64) -> ProguardMap {
        if let Some(last) = self.entries.last_mut() {
            last.section.end = len;
        }
        self.classes.shrink_to_fit();
        self.names.shrink_to_fit();
        ProguardMap {
            name: self.name,
            package,
            source,
            classes: self.classes,
            entries: self.entries,
            names: self.names,
            packages: self.packages,
            by_original: OnceLock::new(),
        }
    }
}

/// Feeds every line of `data` (which starts at byte `base` of the map) to `f`; returns how
/// many bytes were consumed (up to the last newline, or all when `last`).
fn feed_lines(data: &[u8], base: u64, last: bool, ix: &mut Indexer) -> Result<usize> {
    let mut pos = 0usize;
    for nl in memchr::memchr_iter(b'\n', data) {
        // Comments, and member lines once a class is open, only count (most of a map).
        match data.get(pos) {
            Some(b'#') if pos < nl => ix.line_no = ix.line_no.saturating_add(1),
            Some(b' ' | b'\t') if pos < nl && !ix.entries.is_empty() => ix.line_no = ix.line_no.saturating_add(1),
            _ => ix.line(base + pos as u64, &data[pos..nl])?,
        }
        pos = nl + 1;
    }
    if last && pos < data.len() {
        ix.line(base + pos as u64, &data[pos..])?;
        pos = data.len();
    }
    Ok(pos)
}

/// Indexes bytes `range` of `file` (a piece of the map starting at a line start) with `ix`,
/// reading `chunk` bytes at a time.
fn index_range(file: &std::fs::File, range: Range<u64>, chunk: usize, ix: &mut Indexer) -> Result<()> {
    let mut buf = vec![0u8; chunk];
    let mut filled = 0usize;
    let mut base = range.start;
    let mut at = range.start;
    loop {
        let want = ((range.end - at) as usize).min(buf.len() - filled);
        read_at(file, &mut buf[filled..filled + want], at)
            .map_err(|e| Error::io(format!("reading mapping file {}", ix.name), e))?;
        at += want as u64;
        filled += want;
        let last = at == range.end;
        let used = feed_lines(&buf[..filled], base, last, ix)?;
        base += used as u64;
        buf.copy_within(used..filled, 0);
        filled -= used;
        if last {
            return Ok(());
        }
        if filled == buf.len() {
            // One line longer than the buffer: grow it.
            buf.resize(buf.len() * 2, 0);
        }
    }
}

/// The start of the first line that begins after byte `at` of `file` (below `len`), if any.
fn next_line_start(file: &std::fs::File, at: u64, len: u64) -> std::io::Result<Option<u64>> {
    let mut buf = vec![0u8; 64 << 10];
    let mut pos = at;
    while pos < len {
        let n = ((len - pos) as usize).min(buf.len());
        read_at(file, &mut buf[..n], pos)?;
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            let start = pos + i as u64 + 1;
            return Ok((start < len).then_some(start));
        }
        pos += n as u64;
    }
    Ok(None)
}

impl ProguardMap {
    /// Opens and indexes the mapping file at `path`: one streaming pass over class lines (a
    /// large regular file: its pieces indexed in parallel, then joined).
    pub fn open(path: &Path, package: Option<String>) -> Result<Self> {
        // Unit tests index every file but the smallest in pieces.
        const PARALLEL_FROM: u64 = if cfg!(test) { 4 << 10 } else { 16 << 20 };
        let big = std::fs::metadata(path).is_ok_and(|m| m.len() >= PARALLEL_FROM);
        Self::open_in(path, package, if big { rayon::current_num_threads().min(8) } else { 1 })
    }

    /// [`ProguardMap::open`] indexing a regular file in `pieces` pieces in parallel whatever
    /// its size (1: one streaming pass), for tests and the fuzz driver to compare the two.
    #[doc(hidden)]
    pub fn open_in(path: &Path, package: Option<String>, pieces: usize) -> Result<Self> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| Error::io(format!("opening mapping file {name}"), e))?;
        if let Ok(meta) = file.metadata() {
            if meta.is_file() && pieces > 1 {
                // Positioned reads: the file's own position stays at its start.
                if let Some(ix) = Self::open_in_pieces(&file, &name, meta.len(), pieces)? {
                    return Ok(ix.finish(package, Source::File(file), meta.len()));
                }
            }
        }
        Self::open_streaming(file, name, package)
    }

    /// Indexes `len` bytes of `file` in `pieces` pieces in parallel. `None` when a piece met
    /// something the sequential pass reports as an error (a bad class line, a class mapped
    /// twice, a member line before any class): that pass then gives the error, with its line.
    fn open_in_pieces(file: &std::fs::File, name: &str, len: u64, pieces: usize) -> Result<Option<Indexer>> {
        let mut starts = vec![0u64];
        for k in 1..pieces as u64 {
            let at = k * len / pieces as u64;
            match next_line_start(file, at.max(*starts.last().unwrap_or(&0)), len) {
                Ok(Some(p)) if p > *starts.last().unwrap_or(&0) => starts.push(p),
                Ok(_) => {}
                Err(e) => return Err(Error::io(format!("reading mapping file {name}"), e)),
            }
        }
        starts.push(len);
        let chunk = ((4usize << 20) / (starts.len() - 1)).max(64 << 10);
        let parts: Vec<Result<Indexer>> = starts
            .par_windows(2)
            .enumerate()
            .map(|(k, w)| {
                let mut ix = Indexer::new(name.to_owned());
                ix.piece = k > 0;
                index_range(file, w[0]..w[1], chunk, &mut ix).map(|()| ix)
            })
            .collect();
        let mut joined: Option<Indexer> = None;
        for part in parts {
            let Ok(mut part) = part else { return Ok(None) };
            let Some(ix) = joined.as_mut() else {
                joined = Some(part);
                continue;
            };
            if part.orphans && ix.entries.is_empty() {
                return Ok(None);
            }
            // The class open at the end of the pieces so far runs to this piece's first class.
            if let (Some(last), Some(first)) = (ix.entries.last_mut(), part.entries.first()) {
                last.section.end = first.section.start;
            }
            let Ok(names_base) = u32::try_from(ix.names.len()) else { return Ok(None) };
            let Ok(entries_base) = u32::try_from(ix.entries.len()) else { return Ok(None) };
            if u32::try_from(ix.names.len() + part.names.len()).is_err() {
                return Ok(None);
            }
            let lines_before = ix.line_no;
            for (k, v) in part.classes.drain() {
                if ix.classes.insert(k, v + entries_base).is_some() {
                    return Ok(None);
                }
            }
            ix.names.push_str(&part.names);
            ix.entries.extend(part.entries.drain(..).map(|mut e| {
                e.original = e.original.start + names_base..e.original.end + names_base;
                e.obfuscated = e.obfuscated.start + names_base..e.obfuscated.end + names_base;
                e.line = e.line.saturating_add(lines_before);
                e
            }));
            ix.packages.extend(part.packages.drain());
            ix.line_no = lines_before.saturating_add(part.line_no);
        }
        Ok(joined.map(|mut ix| {
            if let Some(last) = ix.entries.last_mut() {
                last.section.end = len;
            }
            ix.piece = false;
            ix
        }))
    }

    /// Opens by reading `file` from its current position to its end, one buffer at a time.
    fn open_streaming(mut file: std::fs::File, name: String, package: Option<String>) -> Result<Self> {
        let mut ix = Indexer::new(name.clone());
        let mut buf = vec![0u8; 4 << 20];
        let mut filled = 0usize;
        let mut base = 0u64;
        loop {
            let n = file.read(&mut buf[filled..]).map_err(|e| Error::io(format!("reading mapping file {name}"), e))?;
            filled += n;
            let last = n == 0;
            let used = feed_lines(&buf[..filled], base, last, &mut ix)?;
            base += used as u64;
            buf.copy_within(used..filled, 0);
            filled -= used;
            if last {
                break;
            }
            if filled == buf.len() {
                // One line longer than the buffer: grow it.
                buf.resize(buf.len() * 2, 0);
            }
        }
        Ok(ix.finish(package, Source::File(file), base))
    }

    /// Indexes a mapping file already in memory; `name` names it in errors and reports.
    pub fn from_bytes(name: impl Into<String>, package: Option<String>, bytes: Vec<u8>) -> Result<Self> {
        let mut ix = Indexer::new(name.into());
        feed_lines(&bytes, 0, true, &mut ix)?;
        let len = bytes.len() as u64;
        Ok(ix.finish(package, Source::Owned(bytes), len))
    }

    /// The file's name as given (for reports).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Android package this map is for; `None` when it was given without one.
    pub fn package(&self) -> Option<&str> {
        self.package.as_deref()
    }

    /// Number of classes the map names.
    pub fn class_count(&self) -> usize {
        self.entries.len()
    }

    /// Every class of the map, `(obfuscated, original)`, in file order.
    pub fn classes(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(move |e| (self.name_at(&e.obfuscated), self.name_at(&e.original)))
    }

    fn name_at(&self, r: &Range<u32>) -> &str {
        &self.names[r.start as usize..r.end as usize]
    }

    fn original(&self, idx: u32) -> &str {
        self.name_at(&self.entries[idx as usize].original)
    }

    /// Whether `package` (`""`: the default package) holds a class the map names, by its
    /// original or its obfuscated name.
    pub fn covers_package(&self, package: &str) -> bool {
        self.packages.contains(package)
    }

    /// The class whose original name is `original`, if the map names one (the first).
    fn by_original(&self, original: &str) -> Option<u32> {
        let sorted = self.by_original.get_or_init(|| {
            let mut v: Vec<(u64, u32)> =
                (0..self.entries.len() as u32).map(|i| (members::name_key(self.original(i)), i)).collect();
            v.sort_unstable();
            v
        });
        // Integers compared while searching; names only among the few of one hash.
        let key = members::name_key(original);
        let at = sorted.partition_point(|&(k, _)| k < key);
        sorted[at..].iter().take_while(|&&(k, _)| k == key).map(|&(_, i)| i).find(|&i| self.original(i) == original)
    }

    /// The `sourceFile` recorded for class `idx` (`R8$$SyntheticClass` counts as none).
    fn source_file_of(&self, idx: u32) -> Option<String> {
        let s = &self.entries[idx as usize].section;
        // The record follows the class line: the first few KiB of the section hold it.
        let head = self.read_range(s.start..s.end.min(s.start + 4096))?;
        members::header_source_file(&head)
    }

    /// Bytes `range` of the map; `None` when the file cannot be read any more.
    fn read_range(&self, range: Range<u64>) -> Option<Box<[u8]>> {
        match &self.source {
            Source::Owned(v) => v.get(range.start as usize..range.end as usize).map(Into::into),
            Source::File(f) => {
                let mut buf = vec![0u8; (range.end - range.start) as usize];
                read_at(f, &mut buf, range.start).ok().map(|()| buf.into())
            }
        }
    }

    /// Reads bytes `range` of the map into `buf` (its length becomes the range's); false when
    /// the file cannot be read any more. A reused buffer is only zeroed where it grows.
    fn read_into(&self, range: Range<u64>, buf: &mut Vec<u8>) -> bool {
        let n = (range.end - range.start) as usize;
        match &self.source {
            Source::Owned(v) => match v.get(range.start as usize..range.end as usize) {
                Some(b) => {
                    buf.clear();
                    buf.extend_from_slice(b);
                    true
                }
                None => false,
            },
            Source::File(f) => {
                if buf.len() < n {
                    buf.resize(n, 0);
                }
                buf.truncate(n);
                read_at(f, buf, range.start).is_ok()
            }
        }
    }

    /// Class `idx`'s members (none when the file cannot be read any more).
    fn parse_class(&self, idx: u32) -> ClassTable {
        let e = &self.entries[idx as usize];
        ClassTable::parse(&self.read_range(e.section.clone()).unwrap_or_default(), e.line)
    }

    /// The bytes of class `idx`'s section (empty when the file cannot be read any more).
    fn section(&self, idx: u32) -> Box<[u8]> {
        self.read_range(self.entries[idx as usize].section.clone()).unwrap_or_default()
    }
}

#[cfg(unix)]
fn read_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, at)
}

#[cfg(windows)]
fn read_at(f: &std::fs::File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_read(f, buf, at)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[n..];
        at += n as u64;
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn read_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut f = f.try_clone()?;
    f.seek(SeekFrom::Start(at))?;
    f.read_exact(buf)
}

/// For tests: reads every line of mapping text `text` with heapconv's member-line reader and
/// with the `proguard` crate's `ProguardRecord::try_parse`, its oracle; the number of lines
/// compared, or the first line read differently (1-based) with both readings.
#[doc(hidden)]
pub fn member_lines_as_the_crate_reads_them(text: &str) -> std::result::Result<usize, String> {
    let mut n = 0;
    for (i, l) in text.split('\n').enumerate() {
        let l = l.strip_suffix('\r').unwrap_or(l);
        let (ours, theirs) = (line::member(l), ProguardRecord::try_parse(l.as_bytes()).ok());
        if ours != theirs {
            return Err(format!("line {}: {l:?}: ours {ours:?}, the crate's {theirs:?}", i + 1));
        }
        n += 1;
    }
    Ok(n)
}

/// Parses `original -> obfuscated:` (spaces around `->`, a colon at the end, nothing after);
/// returns the two names.
fn parse_class_line(line: &[u8]) -> Option<(&str, &str)> {
    let text = std::str::from_utf8(line).ok()?;
    let body = text.trim_end().strip_suffix(':')?;
    let arrow = body.find(" -> ")?;
    let original = body[..arrow].trim();
    let obfuscated = body[arrow + 4..].trim();
    if original.is_empty() || obfuscated.is_empty() || original.contains(' ') || obfuscated.contains(' ') {
        return None;
    }
    Some((original, obfuscated))
}

/// One original frame: what an obfuscated frame stands for. Its names borrow from the map's
/// text where they can (`'a`: the [`Retracer`], or the class being answered in a batch);
/// [`OriginalFrame::into_owned`] keeps one past that.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct OriginalFrame<'a> {
    /// Original class name, fully qualified.
    pub class: Cow<'a, str>,
    /// Original method name.
    pub method: Cow<'a, str>,
    /// Source file, when the map says (or, as retrace does, derived from the class name).
    pub file: Option<Cow<'a, str>>,
    /// Original line; 0 when unknown.
    pub line: u32,
}

impl OriginalFrame<'_> {
    /// This frame with names of its own.
    pub fn into_owned(self) -> OriginalFrame<'static> {
        OriginalFrame {
            class: Cow::Owned(self.class.into_owned()),
            method: Cow::Owned(self.method.into_owned()),
            file: self.file.map(|f| Cow::Owned(f.into_owned())),
            line: self.line,
        }
    }
}

/// What an obfuscated frame deobfuscates to (names borrowed as in [`OriginalFrame`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retraced<'a> {
    /// The original frames. When `ambiguous` is false they are one call chain, innermost
    /// (inlined) first; when true they are alternatives, each a candidate for the whole frame.
    /// Empty only in [`Retracer::stack`]'s answer for an outline frame (to be dropped).
    pub frames: Vec<OriginalFrame<'a>>,
    /// Whether the map could not tell which of several methods the frame is (no line, or a
    /// map without line ranges, and several original methods share the obfuscated name).
    pub ambiguous: bool,
    /// Whether only the class was found: the method kept its obfuscated name.
    pub class_only: bool,
}

impl Retraced<'_> {
    /// This answer with names of its own.
    pub fn into_owned(self) -> Retraced<'static> {
        Retraced {
            frames: self.frames.into_iter().map(OriginalFrame::into_owned).collect(),
            ambiguous: self.ambiguous,
            class_only: self.class_only,
        }
    }
}

/// One obfuscated frame to deobfuscate: `class.method` at obfuscated line `line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameQuery<'a> {
    /// Obfuscated class name, fully qualified.
    pub class: &'a str,
    /// Obfuscated method name.
    pub method: &'a str,
    /// Obfuscated line; `None` (or 0) when the frame has none.
    pub line: Option<u32>,
}

/// Counts of what a [`Retracer`] did, for the run's report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RetraceReport {
    /// The mapping file.
    pub map: String,
    /// The package it was given for, if any.
    pub package: Option<String>,
    /// Classes in the map.
    pub classes_in_map: u64,
    /// Classes whose members were read (the input named them).
    pub classes_read: u64,
    /// Names looked up (class, field and frame lookups).
    pub lookups: u64,
    /// Lookups the map answered.
    pub deobfuscated: u64,
    /// Member lines skipped because they do not parse.
    pub skipped_lines: u64,
    /// The first skipped line, `file:line`.
    pub first_skipped: Option<String>,
    /// Of `deobfuscated`, how many were frames, classes and fields.
    pub deobfuscated_by_kind: KindCounts,
}

/// Names deobfuscated per kind (see [`RetraceReport::deobfuscated_by_kind`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    /// Frames (a method, or an inline chain, answered for a frame).
    pub frames: u64,
    /// Class names.
    pub classes: u64,
    /// Field names.
    pub fields: u64,
}

impl RetraceReport {
    /// Adds the counts of `n` (another run of the same map) to these: lookups and answers
    /// summed, the larger skipped-line count kept, the first skipped line kept if set.
    pub fn add_counts(&mut self, n: &RetraceReport) {
        self.classes_read += n.classes_read;
        self.lookups += n.lookups;
        self.deobfuscated += n.deobfuscated;
        self.deobfuscated_by_kind.frames += n.deobfuscated_by_kind.frames;
        self.deobfuscated_by_kind.classes += n.deobfuscated_by_kind.classes;
        self.deobfuscated_by_kind.fields += n.deobfuscated_by_kind.fields;
        self.skipped_lines = self.skipped_lines.max(n.skipped_lines);
        if self.first_skipped.is_none() {
            self.first_skipped = n.first_skipped.clone();
        }
    }
}

/// Deobfuscates names with one [`ProguardMap`], reading each class's members when the class
/// is first asked about. Shareable across threads.
pub struct Retracer<'m> {
    map: &'m ProguardMap,
    /// Tables kept for the run by the one-at-a-time lookups.
    tables: Vec<OnceLock<Box<ClassTable>>>,
    /// Whether a class was read (its counts are in the report) yet.
    read: Vec<AtomicBool>,
    lookups: AtomicU64,
    deobfuscated: AtomicU64,
    /// Of `deobfuscated`: class names and field names (the rest are frames).
    classes_hit: AtomicU64,
    fields_hit: AtomicU64,
    classes_read: AtomicU64,
    skipped: AtomicU64,
    first_skipped: AtomicU32,
    /// The `sourceFile` of classes frames were inlined from, by class (read once each).
    source_files: Vec<OnceLock<Option<Box<str>>>>,
}

impl<'m> Retracer<'m> {
    /// A retracer over `map`; nothing is read yet.
    pub fn new(map: &'m ProguardMap) -> Self {
        Retracer {
            map,
            tables: (0..map.entries.len()).map(|_| OnceLock::new()).collect(),
            read: (0..map.entries.len()).map(|_| AtomicBool::new(false)).collect(),
            lookups: AtomicU64::new(0),
            deobfuscated: AtomicU64::new(0),
            classes_hit: AtomicU64::new(0),
            fields_hit: AtomicU64::new(0),
            classes_read: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            first_skipped: AtomicU32::new(u32::MAX),
            source_files: (0..map.entries.len()).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The map this retracer reads.
    pub fn map(&self) -> &'m ProguardMap {
        self.map
    }

    fn count(&self, hit: bool) {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        if hit {
            self.deobfuscated.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts class `idx` as read (once) with what its parse skipped.
    fn note_read(&self, idx: u32, t: &ClassTable) {
        if !self.read[idx as usize].swap(true, Ordering::Relaxed) {
            self.classes_read.fetch_add(1, Ordering::Relaxed);
            self.skipped.fetch_add(u64::from(t.skipped), Ordering::Relaxed);
            if let Some(l) = t.first_skipped {
                self.first_skipped.fetch_min(l, Ordering::Relaxed);
            }
        }
    }

    /// Class `idx`'s table, read now and kept for the run.
    fn table(&self, idx: u32) -> &ClassTable {
        self.tables[idx as usize].get_or_init(|| {
            let t = self.map.parse_class(idx);
            self.note_read(idx, &t);
            Box::new(t)
        })
    }

    fn lookup_class(&self, obfuscated: &str) -> Option<u32> {
        self.map.classes.get(obfuscated).copied()
    }

    /// The original name of an obfuscated class name as a heap dump or frame spells it: a
    /// plain name (`a.b`), an array of one (`a.b[]`, `a.b[][]`), or `java.lang.Class<a.b>` (heap
    /// graphs' class objects). `None` when the map does not name the class.
    pub fn class_name(&self, obfuscated: &str) -> Option<String> {
        let hit = self.class_name_uncounted(obfuscated);
        self.count(hit.is_some());
        if hit.is_some() {
            self.classes_hit.fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    fn class_name_uncounted(&self, obfuscated: &str) -> Option<String> {
        if let Some(inner) = obfuscated.strip_prefix("java.lang.Class<").and_then(|s| s.strip_suffix('>')) {
            return self.class_name_uncounted(inner).map(|c| format!("java.lang.Class<{c}>"));
        }
        let base = obfuscated.trim_end_matches("[]");
        let dims = &obfuscated[base.len()..];
        let idx = self.lookup_class(base)?;
        Some(format!("{}{dims}", self.map.original(idx)))
    }

    /// The original name(s) of field `field` of obfuscated class `class`: one name, or every
    /// candidate when the map gives the obfuscated name to several fields. `None` when the map
    /// names neither the class nor the field.
    pub fn field_names(&self, class: &str, field: &str) -> Option<Vec<String>> {
        let hit = self.lookup_class(class).and_then(|idx| {
            let names = self.table(idx).fields(field);
            (!names.is_empty()).then(|| names.into_iter().map(str::to_owned).collect::<Vec<_>>())
        });
        self.count(hit.is_some());
        if hit.is_some() {
            self.fields_hit.fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    /// Deobfuscates the frame `class.method` at obfuscated line `line` (`None` or 0: no line).
    /// `None` when the map does not name the class.
    pub fn frame(&self, class: &str, method: &str, line: Option<u32>) -> Option<Retraced<'_>> {
        let hit = self.lookup_class(class).map(|idx| self.answer(self.table(idx), idx, method, line.unwrap_or(0)));
        self.count(hit.as_ref().is_some_and(|r| !r.class_only));
        hit
    }

    /// [`Retracer::frame`] for a frame that carries its residual (obfuscated) method descriptor,
    /// such as `(I)V`, when several methods share the obfuscated name: candidates whose
    /// `residualsignature` metadata names another descriptor are left out, and so are those
    /// without it whose original signature (when it has only primitives and `java.*` types, which
    /// R8 never renames) spells another one; unless none would remain.
    pub fn frame_typed(&self, class: &str, method: &str, descriptor: &str, line: Option<u32>) -> Option<Retraced<'_>> {
        let hit = self.lookup_class(class).map(|idx| {
            let t = self.table(idx);
            let all = self.answer(t, idx, method, line.unwrap_or(0));
            if !all.ambiguous {
                return all;
            }
            let keep: Vec<(String, String)> = t
                .lines_of(method)
                .iter()
                .filter(|m| m.residual_is(t, descriptor))
                .map(|m| t.original_of(m, self.map.original(idx)))
                .collect();
            let frames: Vec<OriginalFrame<'_>> = all
                .frames
                .iter()
                .filter(|f| keep.iter().any(|(c, n)| *c == f.class && *n == f.method))
                .cloned()
                .collect();
            if frames.is_empty() || frames.len() == all.frames.len() {
                return all;
            }
            Retraced { ambiguous: frames.len() > 1, frames, class_only: false }
        });
        self.count(hit.as_ref().is_some_and(|r| !r.class_only));
        hit
    }

    /// The `sourceFile` of the class whose original name is `class`, when the map names it
    /// and records one (read once per class).
    fn source_file_by_original(&self, class: &str) -> Option<&str> {
        let idx = self.map.by_original(class)?;
        self.source_files[idx as usize].get_or_init(|| self.map.source_file_of(idx).map(Into::into)).as_deref()
    }

    /// The answer for `method` at `line` (0: none) of class `idx`, from its table `t`.
    fn answer<'a>(&'a self, t: &'a ClassTable, idx: u32, method: &str, line: u32) -> Retraced<'a> {
        let original = self.map.original(idx);
        let mut frames = t.remap(original, method, line);
        // R8's retrace: a frame of a method inlined from another class takes the source file
        // that class's own mapping records (`getSourceFileOrLookup`), when it records one.
        for f in frames.iter_mut().filter(|f| f.class != original && f.file.is_some()) {
            if let Some(file) = self.source_file_by_original(&f.class) {
                f.file = Some(Cow::Borrowed(file));
            }
        }
        let lines = t.lines_of(method);
        let class_only = lines.is_empty();
        let lined = lines.iter().any(|m| m.lined);
        if frames.is_empty() {
            // An outline asked about on its own: the class is known, its caller is not.
            frames.push(OriginalFrame { class: original.into(), method: method.to_owned().into(), file: None, line });
        }
        let chain = line > 0 && lined;
        Retraced { ambiguous: !chain && frames.len() > 1, frames, class_only }
    }

    /// Deobfuscates a batch of frames: the answer of [`Retracer::frame`] for each, in order.
    /// Each distinct frame is answered once; classes are read in parallel and not kept (a
    /// class this retracer already keeps is not read again).
    pub fn frames(&self, queries: &[FrameQuery<'_>]) -> Vec<Option<Retraced<'static>>> {
        self.frames_impl(queries, false, |_, r| r.into_owned())
    }

    /// [`Retracer::frames`] for frames whose line was not written by R8 for this map's ranges
    /// alone (a profiler's sample line): a frame with a line that no obfuscated range of its
    /// method holds, when the method has ranges, is answered as a frame without a line (every
    /// candidate, as trace processor falls back to), instead of the class-only answer.
    pub fn frames_at_lines(&self, queries: &[FrameQuery<'_>]) -> Vec<Option<Retraced<'static>>> {
        self.frames_impl(queries, true, |_, r| r.into_owned())
    }

    /// The answer for `method` at `line`, or, with `fallback`, at no line when `line` is
    /// in none of the method's ranges.
    fn answer_at<'a>(&'a self, t: &'a ClassTable, idx: u32, method: &str, line: u32, fallback: bool) -> Retraced<'a> {
        if fallback && line > 0 && t.has_ranges(method) && !t.has_range_at(method, line) {
            return self.answer(t, idx, method, 0);
        }
        self.answer(t, idx, method, line)
    }

    /// [`Retracer::frames`], each answer turned into `T` by `f` (called once per query, in
    /// parallel) so a caller can keep less than a [`Retraced`] per frame. The answer `f` is
    /// given borrows its names from the class being answered: nothing is copied unless `f`
    /// copies it.
    pub fn frames_with<T: Send>(
        &self,
        queries: &[FrameQuery<'_>],
        f: impl Fn(&FrameQuery<'_>, Retraced<'_>) -> T + Sync,
    ) -> Vec<Option<T>> {
        self.frames_impl(queries, false, f)
    }

    fn frames_impl<T: Send>(
        &self,
        queries: &[FrameQuery<'_>],
        fallback: bool,
        f: impl Fn(&FrameQuery<'_>, Retraced<'_>) -> T + Sync,
    ) -> Vec<Option<T>> {
        let mut keyed: Vec<(u32, u32)> = Vec::with_capacity(queries.len());
        let mut misses = 0u64;
        for (qi, q) in queries.iter().enumerate() {
            match self.lookup_class(q.class) {
                Some(idx) => keyed.push((idx, qi as u32)),
                None => misses += 1,
            }
        }
        self.lookups.fetch_add(misses, Ordering::Relaxed);
        keyed.par_sort_unstable();
        let mut groups: Vec<Range<usize>> = Vec::new();
        let mut start = 0;
        for i in 1..=keyed.len() {
            if i == keyed.len() || keyed[i].0 != keyed[start].0 {
                if i > start {
                    groups.push(start..i);
                }
                start = i;
            }
        }
        // Runs of classes next to one another in the file are read with one read.
        const RUN: usize = 32;
        const MAX_BLOCK: u64 = 8 << 20;
        let runs: Vec<&[Range<usize>]> = groups.chunks(RUN).collect();
        let answered: Vec<Vec<(u32, T)>> = runs
            .par_iter()
            // One read buffer and one table's buffers per thread, for its runs' classes in turn.
            .map_init(
                || (Vec::new(), ClassTable::default(), Vec::<&str>::new()),
                |(buf, scratch, wanted), run| {
                    let first = keyed[run[0].start].0;
                    let last = keyed[run[run.len() - 1].start].0;
                    let span =
                        self.map.entries[first as usize].section.start..self.map.entries[last as usize].section.end;
                    // The run's block, when it is valid UTF-8 (a map nearly always is), becomes
                    // the table's text and each class is parsed in place; otherwise each class
                    // is copied into the table on its own (`refill`: its lines are checked).
                    let block_read = span.end - span.start <= MAX_BLOCK && self.map.read_into(span.clone(), buf);
                    let mut in_place = false;
                    if block_read {
                        match String::from_utf8(std::mem::take(buf)) {
                            Ok(text) => {
                                // The table's previous text becomes the next read buffer.
                                *buf = scratch.replace_text(text).into_bytes();
                                in_place = true;
                            }
                            Err(e) => *buf = e.into_bytes(),
                        }
                    }
                    let mut out: Vec<(u32, T)> = Vec::new();
                    for g in run.iter() {
                        let idx = keyed[g.start].0;
                        let t: &ClassTable = match self.tables[idx as usize].get() {
                            Some(t) => t,
                            None => {
                                let e = &self.map.entries[idx as usize];
                                let at = (e.section.start - span.start) as usize..(e.section.end - span.start) as usize;
                                if in_place {
                                    // Only the lines of the names asked about are kept.
                                    wanted.clear();
                                    for &(_, qi) in &keyed[g.clone()] {
                                        let m = queries[qi as usize].method;
                                        if !wanted.iter().any(|w| members::same(w, m)) {
                                            wanted.push(m);
                                        }
                                    }
                                    scratch.parse_in_place(at, e.line, Some(wanted));
                                } else if block_read {
                                    scratch.refill(&buf[at], e.line);
                                } else {
                                    scratch.refill(&self.map.section(idx), e.line);
                                }
                                self.note_read(idx, scratch);
                                &*scratch
                            }
                        };
                        self.answer_group(t, idx, &keyed[g.clone()], queries, fallback, &f, &mut out);
                    }
                    out
                },
            )
            .collect();
        let mut result: Vec<Option<T>> = (0..queries.len()).map(|_| None).collect();
        for (qi, t) in answered.into_iter().flatten() {
            result[qi as usize] = Some(t);
        }
        result
    }

    /// Answers the queries `items` (all of class `idx`, table `t`), each distinct frame once.
    #[allow(clippy::too_many_arguments)]
    fn answer_group<T>(
        &self,
        t: &ClassTable,
        idx: u32,
        items: &[(u32, u32)],
        queries: &[FrameQuery<'_>],
        fallback: bool,
        f: &(impl Fn(&FrameQuery<'_>, Retraced<'_>) -> T + Sync),
        out: &mut Vec<(u32, T)>,
    ) {
        // Equal frames together: sorted by (line, hash of the method name, query), integers
        // only; a run of equal frames is checked by name too (a hash shared by two names
        // only splits runs).
        let mut order: Vec<(u32, u64, u32)> = items
            .iter()
            .map(|&(_, qi)| {
                let q = &queries[qi as usize];
                (q.line.unwrap_or(0), members::name_key(q.method), qi)
            })
            .collect();
        order.sort_unstable();
        let mut hits = 0u64;
        let mut i = 0;
        while i < order.len() {
            let (line, hash, first) = order[i];
            let method = queries[first as usize].method;
            let r = self.answer_at(t, idx, method, line, fallback);
            let mut j = i + 1;
            while j < order.len()
                && (order[j].0, order[j].1) == (line, hash)
                && members::same(queries[order[j].2 as usize].method, method)
            {
                j += 1;
            }
            if !r.class_only {
                hits += (j - i) as u64;
            }
            for &(_, _, qi) in &order[i + 1..j] {
                out.push((qi, f(&queries[qi as usize], r.clone())));
            }
            out.push((first, f(&queries[first as usize], r)));
            i = j;
        }
        self.lookups.fetch_add(items.len() as u64, Ordering::Relaxed);
        self.deobfuscated.fetch_add(hits, Ordering::Relaxed);
    }

    /// Whether `class.method` is an R8 outline (its frames are dropped, their position moving
    /// the caller's line; see [`Retracer::stack`]).
    pub fn is_outline(&self, class: &str, method: &str) -> bool {
        self.lookup_class(class).is_some_and(|idx| self.table(idx).is_outline(method))
    }

    /// The obfuscated line of the call site of an outline: `class.method` at obfuscated line
    /// `line` called an outline that was at position `position`; `None` when the map has no
    /// `outlineCallsite` entry for it.
    pub fn outline_callsite(&self, class: &str, method: &str, line: u32, position: u32) -> Option<u32> {
        let idx = self.lookup_class(class)?;
        self.table(idx).outline_callsite(method, line, position)
    }

    /// Deobfuscates one call stack, innermost frame first, as R8's retrace does a stack trace:
    /// each frame's answer as [`Retracer::frame`]'s, except that an outline frame answers with
    /// no frames (it is to be dropped) and the frame below it (its caller) is looked up at
    /// the line its `outlineCallsite` metadata gives for the outline's position.
    pub fn stack(&self, frames: &[FrameQuery<'_>]) -> Vec<Option<Retraced<'_>>> {
        let mut out = Vec::with_capacity(frames.len());
        let mut carried: Option<u32> = None;
        for q in frames {
            let Some(idx) = self.lookup_class(q.class) else {
                carried = None;
                self.count(false);
                out.push(None);
                continue;
            };
            let t = self.table(idx);
            let mut line = q.line.unwrap_or(0);
            if t.is_outline(q.method) {
                carried = Some(line);
                self.count(true);
                out.push(Some(Retraced { frames: Vec::new(), ambiguous: false, class_only: false }));
                continue;
            }
            if let Some(pos) = carried.take() {
                if let Some(l) = t.outline_callsite(q.method, line, pos) {
                    line = l;
                }
            }
            let r = self.answer(t, idx, q.method, line);
            self.count(!r.class_only);
            out.push(Some(r));
        }
        out
    }

    /// [`Retracer::stack`] for the stack of a thrown exception, `thrown` being its class as
    /// the stack trace names it (obfuscated, `a.b.c`): R8's `rewriteFrame` rules of the
    /// innermost frame apply (`throws(<descriptor>)` conditions, `removeInnerFrames(n)`
    /// actions: that many inlined frames are dropped from the innermost frame's chain, as
    /// retrace does for a null check R8 moved into the caller). heapconv's inputs record no
    /// exceptions (allocations, heap dumps), so the converters call [`Retracer::stack`]; this
    /// is for a caller that has one.
    pub fn stack_thrown(&self, frames: &[FrameQuery<'_>], thrown: &str) -> Vec<Option<Retraced<'_>>> {
        let mut out = self.stack(frames);
        let descriptor = format!("L{};", thrown.replace('.', "/"));
        let top = out.iter().position(|r| r.as_ref().is_none_or(|r| !r.frames.is_empty()));
        if let (Some(i), Some(q)) = (top, top.and_then(|i| frames.get(i))) {
            let Some(idx) = self.lookup_class(q.class) else { return out };
            let n = self.table(idx).inner_frames_removed(q.method, q.line.unwrap_or(0), &descriptor);
            if let Some(Some(r)) = out.get_mut(i)
                && n > 0
                && !r.ambiguous
            {
                let keep = r.frames.len().saturating_sub(n).max(1);
                let drop = r.frames.len() - keep;
                r.frames.drain(..drop);
            }
        }
        out
    }

    /// What this retracer did so far.
    pub fn report(&self) -> RetraceReport {
        let first = self.first_skipped.load(Ordering::Relaxed);
        let deobfuscated = self.deobfuscated.load(Ordering::Relaxed);
        let classes = self.classes_hit.load(Ordering::Relaxed);
        let fields = self.fields_hit.load(Ordering::Relaxed);
        RetraceReport {
            map: self.map.name.clone(),
            package: self.map.package.clone(),
            classes_in_map: self.map.entries.len() as u64,
            classes_read: self.classes_read.load(Ordering::Relaxed),
            lookups: self.lookups.load(Ordering::Relaxed),
            deobfuscated,
            skipped_lines: self.skipped.load(Ordering::Relaxed),
            first_skipped: (first != u32::MAX).then(|| format!("{}:{first}", self.map.name)),
            deobfuscated_by_kind: KindCounts { frames: deobfuscated.saturating_sub(classes + fields), classes, fields },
        }
    }
}

/// Splits a Java frame name `package.Class.method` into class and method at the last `.`
/// (heapprofd and DDM name Java frames so); `None` when there is no `.`.
pub fn split_java_frame(name: &str) -> Option<(&str, &str)> {
    let dot = name.rfind('.')?;
    let (class, method) = (&name[..dot], &name[dot + 1..]);
    (!class.is_empty() && !method.is_empty()).then_some((class, method))
}

#[cfg(test)]
mod tests;

/// A mapping file to use and the Android package it is for (`--proguard-map [PACKAGE=]FILE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapSpec {
    /// The package whose processes the map applies to; `None`: inputs that name no package
    /// (HPROF files, DDM captures) and frames whose package cannot be told.
    pub package: Option<String>,
    /// The mapping file.
    pub path: std::path::PathBuf,
}

impl MapSpec {
    /// Reads `[PACKAGE=]FILE`: a package before the first `=`, when there is one.
    pub fn parse(arg: &str) -> MapSpec {
        match arg.split_once('=') {
            Some((pkg, path)) if !pkg.is_empty() => MapSpec { package: Some(pkg.to_owned()), path: path.into() },
            Some((_, path)) => MapSpec { package: None, path: path.into() },
            None => MapSpec { package: None, path: arg.into() },
        }
    }

    /// Reads `PERFETTO_PROGUARD_MAP` as traceconv does: `package=path` entries separated by
    /// `:`, the `=` mandatory (an empty package, `=path`, is heapconv's spelling of a map for
    /// inputs without one). Empty entries are skipped.
    pub fn parse_env(value: &str) -> Result<Vec<MapSpec>> {
        value
            .split(':')
            .filter(|t| !t.is_empty())
            .map(|t| {
                if t.contains('=') {
                    Ok(MapSpec::parse(t))
                } else {
                    Err(Error::new(
                        ErrorKind::Usage,
                        format!(
                            "PERFETTO_PROGUARD_MAP: {t:?} is not package=filename (expected \
                             package=filename[:package=filename...])"
                        ),
                    ))
                }
            })
            .collect()
    }
}

/// The Android package a Java frame's mapping path belongs to, by trace processor's rules:
/// `/data/app/<pkg>-<suffix>/…`, `/data/app/~~<suffix>/<pkg>-<suffix>/…`, and a path that
/// ends `… dex extracted in memory from /data/app/…`.
pub fn package_of_mapping_path(path: &str) -> Option<&str> {
    let at = path.find("/data/app/")?;
    let rest = &path[at + "/data/app/".len()..];
    let rest = if let Some(r) = rest.strip_prefix("~~") { &r[r.find('/')? + 1..] } else { rest };
    let dir = &rest[..rest.find('/').unwrap_or(rest.len())];
    let pkg = dir.rfind('-').map_or(dir, |i| &dir[..i]);
    (!pkg.is_empty()).then_some(pkg)
}

/// What one map did over a run, for the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MapUse {
    /// The counts of its retracers, summed.
    #[serde(flatten)]
    pub counts: RetraceReport,
    /// What it was applied to (frames of a package, a heap dump's classes…), deduplicated.
    pub used_for: Vec<String>,
}

/// What deobfuscation did over a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeobfuscationReport {
    /// Per map, in the order given.
    pub maps: Vec<MapUse>,
    /// Java names no map deobfuscated (their class is in no map that applied), counting only
    /// those worth reporting ([`Deobfuscator::worth_reporting`]: obfuscated-looking names and
    /// names in packages a map covers, not framework classes).
    pub left_obfuscated: u64,
    /// A few of them, as examples.
    pub left_examples: Vec<String>,
}

impl DeobfuscationReport {
    /// The maps that deobfuscated nothing (each deserves a warning).
    pub fn unmatched_maps(&self) -> impl Iterator<Item = &MapUse> {
        self.maps.iter().filter(|m| m.counts.deobfuscated == 0)
    }
}

/// Several mapping files, each for a package or for inputs without one: the one object a run
/// deobfuscates with. Maps are indexed once; members are read per [`Session`].
pub struct Deobfuscator {
    maps: Vec<ProguardMap>,
    uses: std::sync::Mutex<Vec<MapUse>>,
    left: std::sync::Mutex<(u64, Vec<String>)>,
}

impl std::fmt::Debug for Deobfuscator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deobfuscator").field("maps", &self.maps).finish()
    }
}

impl Deobfuscator {
    /// Opens and indexes every map.
    pub fn open(specs: &[MapSpec]) -> Result<Self> {
        let maps = specs.iter().map(|s| ProguardMap::open(&s.path, s.package.clone())).collect::<Result<Vec<_>>>()?;
        Ok(Self::from_maps(maps))
    }

    /// A deobfuscator over maps already open.
    pub fn from_maps(maps: Vec<ProguardMap>) -> Self {
        let uses = maps
            .iter()
            .map(|m| MapUse {
                counts: RetraceReport {
                    map: m.name.clone(),
                    package: m.package.clone(),
                    classes_in_map: m.entries.len() as u64,
                    ..Default::default()
                },
                used_for: Vec::new(),
            })
            .collect();
        Deobfuscator { maps, uses: std::sync::Mutex::new(uses), left: std::sync::Mutex::new((0, Vec::new())) }
    }

    /// The maps, in the order given.
    pub fn maps(&self) -> &[ProguardMap] {
        &self.maps
    }

    /// The map for `package`: the map given for it; else (or without a package) the map given
    /// without a package; else, when exactly one map was given, that one for names whose
    /// package cannot be told (`package` is `None`).
    pub fn pick(&self, package: Option<&str>) -> Option<usize> {
        if let Some(p) = package {
            if let Some(i) = self.maps.iter().position(|m| m.package() == Some(p)) {
                return Some(i);
            }
        }
        if let Some(i) = self.maps.iter().position(|m| m.package().is_none()) {
            return Some(i);
        }
        (package.is_none() && self.maps.len() == 1).then_some(0)
    }

    /// A session: retracers over every map, reading classes as they are asked for; its counts
    /// join the report when it is dropped.
    pub fn session(&self) -> Session<'_> {
        Session {
            deob: self,
            retracers: self.maps.iter().map(|_| OnceLock::new()).collect(),
            used_for: Vec::new(),
            left: (0, Vec::new()),
        }
    }

    /// Whether a class no map names is worth reporting as left obfuscated: its simple name
    /// looks obfuscated (its first `$`-part is one to three lowercase letters or digits,
    /// starting with a letter, as R8 and ProGuard name classes), or its package holds a class
    /// one of the maps names (by original or obfuscated name: a class of the app the map
    /// misses). Framework and library classes (`java.*`, `android.*`, `kotlin.*`, …) in
    /// packages no map covers are not, and neither are primitive types and their arrays. Array
    /// suffixes and `java.lang.Class<…>` are looked through.
    pub fn worth_reporting(&self, class: &str) -> bool {
        let class = class.strip_prefix("java.lang.Class<").and_then(|c| c.strip_suffix('>')).unwrap_or(class);
        let base = class.trim_end_matches("[]");
        if base.is_empty()
            || matches!(base, "boolean" | "byte" | "char" | "short" | "int" | "long" | "float" | "double" | "void")
        {
            return false;
        }
        let (package, simple) = base.rsplit_once('.').unwrap_or(("", base));
        let first = simple.split('$').next().unwrap_or(simple);
        let looks_obfuscated = (1..=3).contains(&first.len())
            && first.starts_with(|c: char| c.is_ascii_lowercase())
            && first.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        looks_obfuscated || self.maps.iter().any(|m| m.covers_package(package))
    }

    /// What deobfuscation did so far.
    pub fn report(&self) -> DeobfuscationReport {
        let maps = self.uses.lock().map(|u| u.clone()).unwrap_or_default();
        let (left_obfuscated, left_examples) = self.left.lock().map(|l| l.clone()).unwrap_or_default();
        DeobfuscationReport { maps, left_obfuscated, left_examples }
    }
}

/// Retracers over a [`Deobfuscator`]'s maps for one pass over an input.
pub struct Session<'d> {
    deob: &'d Deobfuscator,
    retracers: Vec<OnceLock<Retracer<'d>>>,
    used_for: Vec<(usize, String)>,
    left: (u64, Vec<String>),
}

impl<'d> Session<'d> {
    /// The retracer of map `i` (see [`Deobfuscator::pick`]).
    pub fn retracer(&self, i: usize) -> &Retracer<'d> {
        self.retracers[i].get_or_init(|| Retracer::new(&self.deob.maps[i]))
    }

    /// The retracer for `package` ([`Deobfuscator::pick`]), noting `what` it was used for.
    pub fn for_package(&mut self, package: Option<&str>, what: &str) -> Option<usize> {
        let i = self.deob.pick(package)?;
        if !self.used_for.iter().any(|(j, w)| *j == i && w == what) {
            self.used_for.push((i, what.to_owned()));
        }
        Some(i)
    }

    /// Notes a Java class no map deobfuscated, when it is worth reporting
    /// ([`Deobfuscator::worth_reporting`]).
    pub fn left_obfuscated(&mut self, class: &str) {
        self.left_obfuscated_as(class, class);
    }

    /// Notes a Java name (a class, or a frame `class.method`) no map deobfuscated, `class`
    /// being its class, when it is worth reporting ([`Deobfuscator::worth_reporting`]).
    pub fn left_obfuscated_as(&mut self, class: &str, name: &str) {
        if !self.deob.worth_reporting(class) {
            return;
        }
        self.left.0 += 1;
        if self.left.1.len() < 5 && !self.left.1.iter().any(|n| n == name) {
            self.left.1.push(name.to_owned());
        }
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if let Ok(mut uses) = self.deob.uses.lock() {
            for (i, cell) in self.retracers.iter().enumerate() {
                if let Some(r) = cell.get() {
                    let n = r.report();
                    uses[i].counts.add_counts(&n);
                }
            }
            for (i, w) in self.used_for.drain(..) {
                if !uses[i].used_for.contains(&w) {
                    uses[i].used_for.push(w);
                }
            }
        }
        if let Ok(mut left) = self.deob.left.lock() {
            left.0 += self.left.0;
            for n in self.left.1.drain(..) {
                if left.1.len() < 5 && !left.1.contains(&n) {
                    left.1.push(n);
                }
            }
        }
    }
}

/// Deobfuscates a Java heap dump with map `map` of `session`: class names (arrays and
/// `java.lang.Class<…>` too), instance and static field names. A heap graph names a field
/// `Class.field` (optionally after its type), so the class in the name says which map entry
/// applies; an HPROF file names it `field` alone, so the class that declares it does (each
/// reference's field is looked up from the object's class up its superclasses). Field names are
/// interned again, since one obfuscated name stands for different fields in different classes.
pub fn deobfuscate_heap_dump(dump: &mut crate::model::HeapDump, session: &mut Session<'_>, map: usize) {
    use crate::model::heap::{FieldIdx, NO_FIELD};
    let r = session.retracer(map);
    let obf_names: Vec<String> = dump.classes.iter().map(|c| c.name.clone()).collect();
    let old_fields = std::mem::take(&mut dump.field_names);
    let mut new_fields: Vec<String> = Vec::new();
    let mut interned: HashMap<String, FieldIdx> = HashMap::new();
    let mut intern = |s: String, new_fields: &mut Vec<String>| -> FieldIdx {
        *interned.entry(s.clone()).or_insert_with(|| {
            new_fields.push(s);
            (new_fields.len() - 1) as FieldIdx
        })
    };
    let mut left: Vec<String> = Vec::new();
    // The new name of field `f` declared by class `ci`.
    let mut rename = |ci: usize, f: FieldIdx, new_fields: &mut Vec<String>| -> FieldIdx {
        if f == NO_FIELD || f as usize >= old_fields.len() {
            return f;
        }
        let old = &old_fields[f as usize];
        let (ty, qualified) = match old.rfind(' ') {
            Some(i) => (Some(&old[..i]), &old[i + 1..]),
            None => (None, &old[..]),
        };
        let ty = ty.map(|t| r.class_name(t).unwrap_or_else(|| t.to_owned()));
        let name = match split_java_frame(qualified) {
            Some((class, field)) => {
                let c = r.class_name(class).unwrap_or_else(|| class.to_owned());
                let fld = r.field_names(class, field).map_or_else(|| field.to_owned(), |v| v.join(" | "));
                format!("{c}.{fld}")
            }
            None => match r.field_names(obf_names[ci].trim_end_matches("[]"), qualified) {
                Some(v) => v.join(" | "),
                None => qualified.to_owned(),
            },
        };
        let full = match ty {
            Some(t) => format!("{t} {name}"),
            None => name,
        };
        intern(full, new_fields)
    };
    let mut declared: HashMap<(usize, FieldIdx), FieldIdx> = HashMap::new();
    for ci in 0..dump.classes.len() {
        for k in 0..dump.classes[ci].fields.len() {
            let f = dump.classes[ci].fields[k].name;
            let n = rename(ci, f, &mut new_fields);
            declared.insert((ci, f), n);
            dump.classes[ci].fields[k].name = n;
        }
        for k in 0..dump.classes[ci].static_refs.len() {
            let f = dump.classes[ci].static_refs[k].0;
            dump.classes[ci].static_refs[k].0 = rename(ci, f, &mut new_fields);
        }
    }
    // References: the class that declares the field, from the object's class upwards.
    let mut memo: HashMap<(u32, FieldIdx), FieldIdx> = HashMap::new();
    for o in 0..dump.obj_class.len() {
        let start = dump.ref_start[o] as usize;
        let end = dump.ref_start.get(o + 1).map_or(dump.ref_field.len(), |&e| e as usize);
        let oc = dump.obj_class[o];
        for k in start..end.min(dump.ref_field.len()) {
            let f = dump.ref_field[k];
            if f == NO_FIELD || f as usize >= old_fields.len() {
                continue;
            }
            let n = *memo.entry((oc, f)).or_insert_with(|| {
                let mut c = Some(oc);
                let mut hops = 0;
                while let Some(ci) = c {
                    if let Some(&n) = declared.get(&(ci as usize, f)) {
                        return n;
                    }
                    c = dump.classes.get(ci as usize).and_then(|cl| cl.superclass);
                    hops += 1;
                    if hops > 1000 {
                        break;
                    }
                }
                rename(oc as usize, f, &mut new_fields)
            });
            dump.ref_field[k] = n;
        }
    }
    for (ci, c) in dump.classes.iter_mut().enumerate() {
        match r.class_name(&obf_names[ci]) {
            Some(n) => c.name = n,
            None => left.push(obf_names[ci].clone()),
        }
    }
    dump.field_names = new_fields;
    for n in left {
        session.left_obfuscated(&n);
    }
}

impl ProguardMap {
    /// The whole map as a table (every class read): what a `DeobfuscationMapping` packet
    /// holds. Member lines that do not parse are left out.
    pub fn table(&self) -> crate::model::deobfuscation::DeobfuscationTable {
        use crate::model::deobfuscation::{DeobfuscationTable, ObfuscatedClass, ObfuscatedMember};
        let mut classes = Vec::with_capacity(self.entries.len());
        for idx in 0..self.entries.len() as u32 {
            let e = &self.entries[idx as usize];
            let mut class = ObfuscatedClass {
                obfuscated: self.name_at(&e.obfuscated).to_owned(),
                deobfuscated: self.original(idx).to_owned(),
                fields: Vec::new(),
                methods: Vec::new(),
            };
            let data = self.section(idx);
            for line in data.split(|&b| b == b'\n').skip(1) {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.trim_ascii_start().first().is_none_or(|&b| b == b'#') {
                    continue;
                }
                match ProguardRecord::try_parse(line) {
                    Ok(ProguardRecord::Field { original, obfuscated, .. }) => class.fields.push(ObfuscatedMember {
                        obfuscated: obfuscated.to_owned(),
                        deobfuscated: original.to_owned(),
                        obfuscated_lines: None,
                        source_lines: None,
                    }),
                    Ok(ProguardRecord::Method { original, obfuscated, original_class, line_mapping, .. }) => {
                        let lines = |a: Option<usize>, b: Option<usize>| {
                            a.map(|a| (a as u32, b.map_or(a as u32, |b| b as u32)))
                        };
                        class.methods.push(ObfuscatedMember {
                            obfuscated: obfuscated.to_owned(),
                            deobfuscated: match original_class {
                                Some(c) => format!("{c}.{original}"),
                                None => original.to_owned(),
                            },
                            obfuscated_lines: line_mapping.and_then(|l| lines(l.startline, l.endline)),
                            source_lines: line_mapping.and_then(|l| lines(l.original_startline, l.original_endline)),
                        })
                    }
                    _ => {}
                }
            }
            classes.push(class);
        }
        DeobfuscationTable { package: self.package.clone().unwrap_or_default(), classes }
    }
}

/// Merges `DeobfuscationMapping` tables read from a trace into one table per package, in the
/// order packages first appear. Trace processor applies every packet in turn, each overwriting
/// the names the ones before set, so a class named again takes the later packet's name, and a
/// later packet's members replace the earlier ones of the same obfuscated name.
pub fn merge_trace_tables(
    tables: Vec<crate::model::deobfuscation::DeobfuscationTable>,
) -> Vec<crate::model::deobfuscation::DeobfuscationTable> {
    use crate::model::deobfuscation::DeobfuscationTable;
    let mut out: Vec<DeobfuscationTable> = Vec::new();
    let mut index: Vec<HashMap<String, usize>> = Vec::new();
    for t in tables {
        let k = match out.iter().position(|o| o.package == t.package) {
            Some(k) => k,
            None => {
                out.push(DeobfuscationTable { package: t.package.clone(), classes: Vec::new() });
                index.push(HashMap::new());
                out.len() - 1
            }
        };
        for c in t.classes {
            match index[k].get(&c.obfuscated) {
                Some(&i) => {
                    let old = &mut out[k].classes[i];
                    old.deobfuscated = c.deobfuscated;
                    old.fields.retain(|f| !c.fields.iter().any(|n| n.obfuscated == f.obfuscated));
                    old.fields.extend(c.fields);
                    old.methods.retain(|m| !c.methods.iter().any(|n| n.obfuscated == m.obfuscated));
                    old.methods.extend(c.methods);
                }
                None => {
                    index[k].insert(c.obfuscated.clone(), out[k].classes.len());
                    out[k].classes.push(c);
                }
            }
        }
    }
    out
}

impl ProguardMap {
    /// A map holding what one `DeobfuscationMapping` table says, for its package (none when the
    /// packet names none), named `name` in reports: the table is written out as mapping-file
    /// text and indexed like a file, so a trace's packets and `--proguard-map` files go through
    /// the same rules. Names that cannot be written in a mapping line (blank, with spaces or
    /// `->`) are left out.
    pub fn from_table(
        name: impl Into<String>,
        table: &crate::model::deobfuscation::DeobfuscationTable,
    ) -> Result<Self> {
        use std::fmt::Write as _;
        fn ok(s: &str) -> bool {
            !s.is_empty() && !s.contains(char::is_whitespace) && !s.contains("->") && !s.starts_with('#')
        }
        let mut text = String::new();
        for c in &table.classes {
            if !ok(&c.obfuscated) || !ok(&c.deobfuscated) {
                continue;
            }
            let _ = writeln!(text, "{} -> {}:", c.deobfuscated, c.obfuscated);
            for f in c.fields.iter().filter(|f| ok(&f.obfuscated) && ok(&f.deobfuscated)) {
                let _ = writeln!(text, "    java.lang.Object {} -> {}", f.deobfuscated, f.obfuscated);
            }
            for m in c.methods.iter().filter(|m| ok(&m.obfuscated) && ok(&m.deobfuscated)) {
                text.push_str("    ");
                if let Some((a, b)) = m.obfuscated_lines {
                    let _ = write!(text, "{a}:{b}:");
                }
                let _ = write!(text, "void {}()", m.deobfuscated);
                if let (Some(_), Some((a, b))) = (m.obfuscated_lines, m.source_lines) {
                    let _ = write!(text, ":{a}:{b}");
                }
                let _ = writeln!(text, " -> {}", m.obfuscated);
            }
        }
        let package = (!table.package.is_empty()).then(|| table.package.clone());
        Self::from_bytes(name, package, text.into_bytes())
    }
}

impl Deobfuscator {
    /// A deobfuscator over `specs`' files and then the `DeobfuscationMapping` tables of a trace
    /// (`source` names the trace in reports), merged per package by [`merge_trace_tables`].
    /// A map file given for a package takes precedence over the trace's packets for it.
    pub fn with_trace_tables(
        specs: &[MapSpec],
        source: &str,
        tables: Vec<crate::model::deobfuscation::DeobfuscationTable>,
    ) -> Result<Self> {
        let mut maps =
            specs.iter().map(|s| ProguardMap::open(&s.path, s.package.clone())).collect::<Result<Vec<_>>>()?;
        for t in merge_trace_tables(tables) {
            let name = if t.package.is_empty() {
                format!("{source} (DeobfuscationMapping packets)")
            } else {
                format!("{source} (DeobfuscationMapping packets for {})", t.package)
            };
            maps.push(ProguardMap::from_table(name, &t)?);
        }
        Ok(Self::from_maps(maps))
    }
}
