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
//! The member rules (line ranges, inline chains, outlines, synthesized members, ambiguous
//! members) are Sentry's [`proguard`] crate's, which follows R8's `retrace`: this module adds
//! laziness, fields, and heapconv's errors and report. Opening a map memory-maps it and scans
//! it once for class lines only, building an index from each obfuscated class name to its
//! section of the file; a class's members are parsed the first time a name of that class is
//! asked for ([`Retracer`]), so a large map costs its index, not its members.
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
//! Each class is materialized on its own, so two things that need two classes at once are not
//! done: the source file of a method inlined from another class is derived from that class's
//! name (`Foo.java`) rather than read from its `sourceFile` record, and an outline frame is
//! dropped without moving its caller's line to the outline's call site.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use proguard::{ProguardMapper, ProguardMapping, ProguardRecord, StackFrame, StackTrace};
use serde::Serialize;

use crate::error::{Error, ErrorKind, Result};

/// The bytes of a mapping file: memory-mapped, or owned (tests, stdin).
enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// One class of the index: where its original name and its section are in the file.
struct ClassEntry {
    /// The original (deobfuscated) name, a byte range of the file.
    original: Range<usize>,
    /// The class line and the member and comment lines below it.
    section: Range<usize>,
    /// 1-based line number of the class line.
    line: u32,
}

/// A ProGuard/R8 mapping file, indexed by obfuscated class name; members are read lazily by a
/// [`Retracer`].
pub struct ProguardMap {
    name: String,
    package: Option<String>,
    bytes: Bytes,
    classes: HashMap<Box<str>, u32>,
    entries: Vec<ClassEntry>,
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

impl ProguardMap {
    /// Opens and indexes the mapping file at `path` (memory-mapped), for the Android package
    /// `package` (`None`: the map applies to any input that names no package).
    pub fn open(path: &Path, package: Option<String>) -> Result<Self> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| Error::io(format!("opening mapping file {name}"), e))?;
        let len = file.metadata().map_err(|e| Error::io(format!("reading mapping file {name}"), e))?.len();
        let bytes = if len == 0 {
            Bytes::Owned(Vec::new())
        } else {
            // SAFETY: the map is only read; a file truncated under us would fault, as with
            // every memory-mapped input of heapconv (symbol files, traces).
            let mmap = unsafe { memmap2::Mmap::map(&file) }
                .map_err(|e| Error::io(format!("mapping mapping file {name} into memory"), e))?;
            Bytes::Mapped(mmap)
        };
        Self::index(name, package, bytes)
    }

    /// Indexes a mapping file already in memory; `name` names it in errors and reports.
    pub fn from_bytes(name: impl Into<String>, package: Option<String>, bytes: Vec<u8>) -> Result<Self> {
        Self::index(name.into(), package, Bytes::Owned(bytes))
    }

    fn index(name: String, package: Option<String>, bytes: Bytes) -> Result<Self> {
        let data = bytes.as_slice();
        let mut classes: HashMap<Box<str>, u32> = HashMap::new();
        let mut entries: Vec<ClassEntry> = Vec::new();
        let mut pos = 0usize;
        let mut line_no = 0u32;
        while pos < data.len() {
            let end = memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
            line_no = line_no.saturating_add(1);
            let line = &data[pos..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            match line.first() {
                None | Some(b'#') => {}
                Some(b' ' | b'\t') => {
                    if entries.is_empty() && !line.iter().all(|b| b.is_ascii_whitespace()) {
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
                    if let Some(last) = entries.last_mut() {
                        last.section.end = pos;
                    }
                    let idx = u32::try_from(entries.len())
                        .map_err(|_| Error::new(ErrorKind::LimitExceeded, format!("{name}: more than 2^32 classes")))?;
                    let obfuscated_str = std::str::from_utf8(&line[obfuscated.clone()]).unwrap_or_default();
                    if let Some(&prev) = classes.get(obfuscated_str) {
                        return Err(Error::new(
                            ErrorKind::Malformed,
                            format!(
                                "{name}:{line_no}: class {obfuscated_str} is mapped a second time (first at line {})",
                                entries[prev as usize].line
                            ),
                        ));
                    }
                    classes.insert(obfuscated_str.into(), idx);
                    entries.push(ClassEntry {
                        original: pos + original.start..pos + original.end,
                        section: pos..data.len(),
                        line: line_no,
                    });
                }
            }
            pos = end + 1;
        }
        if let Some(last) = entries.last_mut() {
            last.section.end = data.len();
        }
        Ok(ProguardMap { name, package, bytes, classes, entries })
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
        let mut by_index: Vec<(&str, u32)> = self.classes.iter().map(|(k, &v)| (&**k, v)).collect();
        by_index.sort_unstable_by_key(|&(_, i)| i);
        by_index.into_iter().map(move |(obf, i)| (obf, self.original(i)))
    }

    fn original(&self, idx: u32) -> &str {
        let e = &self.entries[idx as usize];
        std::str::from_utf8(&self.bytes.as_slice()[e.original.clone()]).unwrap_or_default()
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// Parses `original -> obfuscated:` (spaces around `->`, a colon at the end, nothing after);
/// returns the two names' byte ranges within `line`.
fn parse_class_line(line: &[u8]) -> Option<(Range<usize>, Range<usize>)> {
    let text = std::str::from_utf8(line).ok()?;
    let trimmed = text.trim_end();
    let body = trimmed.strip_suffix(':')?;
    let arrow = body.find(" -> ")?;
    let original = body[..arrow].trim();
    let obfuscated = body[arrow + 4..].trim();
    if original.is_empty() || obfuscated.is_empty() || original.contains(' ') || obfuscated.contains(' ') {
        return None;
    }
    let o_start = original.as_ptr() as usize - text.as_ptr() as usize;
    let b_start = obfuscated.as_ptr() as usize - text.as_ptr() as usize;
    Some((o_start..o_start + original.len(), b_start..b_start + obfuscated.len()))
}

/// One original frame: what an obfuscated frame stands for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct OriginalFrame {
    /// Original class name, fully qualified.
    pub class: String,
    /// Original method name.
    pub method: String,
    /// Source file, when the map says (or, as retrace does, derived from the class name).
    pub file: Option<String>,
    /// Original line; 0 when unknown.
    pub line: u32,
}

/// What an obfuscated frame deobfuscates to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retraced {
    /// The original frames. When `ambiguous` is false they are one call chain, innermost
    /// (inlined) first; when true they are alternatives, each a candidate for the whole frame.
    pub frames: Vec<OriginalFrame>,
    /// Whether the map could not tell which of several methods the frame is (no line, or a
    /// map without line ranges, and several original methods share the obfuscated name).
    pub ambiguous: bool,
    /// Whether only the class was found: the method kept its obfuscated name.
    pub class_only: bool,
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
}

/// A class's members, parsed on first use.
struct Members<'m> {
    mapper: ProguardMapper<'m>,
    /// Obfuscated field name -> original names (R8 may give fields of different types one name).
    fields: HashMap<&'m str, Vec<&'m str>>,
    /// Obfuscated method names, and whether they have line ranges (then their frames with a
    /// line are inline chains, not alternatives).
    methods: HashMap<&'m str, bool>,
}

/// Deobfuscates names with one [`ProguardMap`], reading each class's members the first time
/// the class is asked about. Shareable across threads.
pub struct Retracer<'m> {
    map: &'m ProguardMap,
    members: Vec<OnceLock<Members<'m>>>,
    lookups: AtomicU64,
    deobfuscated: AtomicU64,
    classes_read: AtomicU64,
    skipped: AtomicU64,
    first_skipped: OnceLock<u32>,
}

impl<'m> Retracer<'m> {
    /// A retracer over `map`; nothing is read yet.
    pub fn new(map: &'m ProguardMap) -> Self {
        Retracer {
            map,
            members: (0..map.entries.len()).map(|_| OnceLock::new()).collect(),
            lookups: AtomicU64::new(0),
            deobfuscated: AtomicU64::new(0),
            classes_read: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            first_skipped: OnceLock::new(),
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

    fn members(&self, idx: u32) -> &Members<'m> {
        self.members[idx as usize].get_or_init(|| {
            self.classes_read.fetch_add(1, Ordering::Relaxed);
            let entry = &self.map.entries[idx as usize];
            let section: &'m [u8] = &self.map.bytes.as_slice()[entry.section.clone()];
            let mut fields: HashMap<&'m str, Vec<&'m str>> = HashMap::new();
            let mut methods: HashMap<&'m str, bool> = HashMap::new();
            let mut line_no = entry.line;
            for (i, line) in section.split(|&b| b == b'\n').enumerate() {
                let line_here = line_no;
                line_no = line_no.saturating_add(1);
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if i == 0 || line.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                let trimmed = line.trim_ascii_start();
                if trimmed.first() == Some(&b'#') {
                    continue;
                }
                match ProguardRecord::try_parse(line) {
                    Ok(ProguardRecord::Field { original, obfuscated, .. }) => {
                        let names = fields.entry(obfuscated).or_default();
                        if !names.contains(&original) {
                            names.push(original);
                        }
                    }
                    Ok(ProguardRecord::Method { obfuscated, line_mapping, .. }) => {
                        let lined = line_mapping.is_some_and(|lm| lm.endline.unwrap_or(0) > 0);
                        *methods.entry(obfuscated).or_default() |= lined;
                    }
                    Ok(_) => {}
                    Err(_) => {
                        self.skipped.fetch_add(1, Ordering::Relaxed);
                        let _ = self.first_skipped.set(line_here);
                    }
                }
            }
            let mapper = ProguardMapper::new(ProguardMapping::new(section));
            Members { mapper, fields, methods }
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
            let m = self.members(idx);
            m.fields.get(field).map(|names| names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        });
        self.count(hit.is_some());
        hit
    }

    /// Deobfuscates the frame `class.method` at obfuscated line `line` (`None` or 0: no line).
    /// `None` when the map does not name the class.
    pub fn frame(&self, class: &str, method: &str, line: Option<u32>) -> Option<Retraced> {
        let hit = self.frame_uncounted(class, method, line);
        self.count(hit.as_ref().is_some_and(|r| !r.class_only));
        hit
    }

    fn frame_uncounted(&self, class: &str, method: &str, line: Option<u32>) -> Option<Retraced> {
        let idx = self.lookup_class(class)?;
        let members = self.members(idx);
        let line = line.unwrap_or(0) as usize;
        let input = StackTrace::new(None, vec![StackFrame::new(class, method, line)]);
        let out = members.mapper.remap_stacktrace_typed(&input);
        let original_class = self.map.original(idx);
        let mut frames: Vec<OriginalFrame> = out
            .frames()
            .iter()
            .map(|f| OriginalFrame {
                class: f.class().to_string(),
                method: f.method().to_string(),
                file: f.file().map(str::to_string),
                line: f.line().and_then(|l| u32::try_from(l).ok()).unwrap_or(0),
            })
            .collect();
        let class_only = !members.methods.contains_key(method);
        if frames.is_empty() {
            frames.push(OriginalFrame {
                class: original_class.to_string(),
                method: method.to_string(),
                file: None,
                line: line as u32,
            });
        }
        let chain = line > 0 && members.methods.get(method).copied().unwrap_or(false);
        let ambiguous = !chain && frames.len() > 1;
        Some(Retraced { frames, ambiguous, class_only })
    }

    /// What this retracer did so far.
    pub fn report(&self) -> RetraceReport {
        RetraceReport {
            map: self.map.name.clone(),
            package: self.map.package.clone(),
            classes_in_map: self.map.entries.len() as u64,
            classes_read: self.classes_read.load(Ordering::Relaxed),
            lookups: self.lookups.load(Ordering::Relaxed),
            deobfuscated: self.deobfuscated.load(Ordering::Relaxed),
            skipped_lines: self.skipped.load(Ordering::Relaxed),
            first_skipped: self.first_skipped.get().map(|l| format!("{}:{l}", self.map.name)),
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
    /// Java names no map deobfuscated (their class is in no map that applied).
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

    /// Notes a Java name no map deobfuscated.
    pub fn left_obfuscated(&mut self, name: &str) {
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
                    let c = &mut uses[i].counts;
                    c.classes_read += n.classes_read;
                    c.lookups += n.lookups;
                    c.deobfuscated += n.deobfuscated;
                    c.skipped_lines = c.skipped_lines.max(n.skipped_lines);
                    if c.first_skipped.is_none() {
                        c.first_skipped = n.first_skipped;
                    }
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

/// Deobfuscates the Java frames among `range` of `tables` (frames named `package.Class.method`
/// whose class a map names), the package of each told by its mapping's path
/// ([`package_of_mapping_path`]). A frame that stands for an inline chain gets one line per
/// original frame, innermost first; a frame with several candidate methods is named
/// `Class.a | Class.b`; otherwise its name becomes `Class.method`. Frames that already have
/// lines (native frames, symbolized) are left alone.
pub fn deobfuscate_frames(tables: &mut crate::model::Tables, range: Range<usize>, session: &mut Session<'_>) {
    use crate::model::Line;
    for i in range {
        let f = &tables.frames()[i];
        if !f.lines.is_empty() {
            continue;
        }
        let name = tables.strings.get(f.name).to_owned();
        let Some((class, method)) = split_java_frame(&name) else { continue };
        if class.contains(['(', ' ', ':', '<']) || method.contains(['(', ' ', ':']) {
            continue;
        }
        let path = f.mapping.map(|m| tables.strings.get(tables.mapping(m).path).to_owned()).unwrap_or_default();
        let pkg = package_of_mapping_path(&path);
        let what = match pkg {
            Some(p) => format!("Java frames of {p}"),
            None => "Java frames".to_owned(),
        };
        let Some(mi) = session.for_package(pkg, &what) else { continue };
        let Some(r) = session.retracer(mi).frame(class, method, None) else {
            session.left_obfuscated(&name);
            continue;
        };
        if r.class_only && r.frames.len() == 1 {
            // The class is known, the method not: the class is still worth showing.
            let n = format!("{}.{}", r.frames[0].class, r.frames[0].method);
            let id = tables.strings.intern(&n);
            tables.frames_mut()[i].name = id;
            continue;
        }
        if r.ambiguous {
            let mut n = String::new();
            for (k, o) in r.frames.iter().enumerate() {
                if k > 0 {
                    n.push_str(" | ");
                }
                n.push_str(&o.class);
                n.push('.');
                n.push_str(&o.method);
            }
            let id = tables.strings.intern(&n);
            tables.frames_mut()[i].name = id;
        } else if r.frames.len() == 1 {
            let o = &r.frames[0];
            let id = tables.strings.intern(&format!("{}.{}", o.class, o.method));
            tables.frames_mut()[i].name = id;
        } else {
            let raw = tables.frames()[i].raw_name;
            let lines: Vec<Line> = r
                .frames
                .iter()
                .map(|o| Line {
                    function: tables.strings.intern(&format!("{}.{}", o.class, o.method)),
                    system_name: raw,
                    file: o.file.as_deref().map_or(crate::model::StringId(0), |s| tables.strings.intern(s)),
                    line: o.line,
                    column: 0,
                })
                .collect();
            let outer = tables.strings.intern(&format!(
                "{}.{}",
                r.frames[r.frames.len() - 1].class,
                r.frames[r.frames.len() - 1].method
            ));
            let fr = &mut tables.frames_mut()[i];
            fr.name = outer;
            fr.lines = lines;
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
        let data = self.bytes.as_slice();
        let mut order: Vec<(&str, u32)> = self.classes.iter().map(|(k, &v)| (&**k, v)).collect();
        order.sort_unstable_by_key(|&(_, i)| i);
        let mut classes = Vec::with_capacity(order.len());
        for (obf, idx) in order {
            let e = &self.entries[idx as usize];
            let mut class = ObfuscatedClass {
                obfuscated: obf.to_owned(),
                deobfuscated: self.original(idx).to_owned(),
                fields: Vec::new(),
                methods: Vec::new(),
            };
            for line in data[e.section.clone()].split(|&b| b == b'\n').skip(1) {
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
