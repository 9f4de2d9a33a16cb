//! The index of a mapping file: each class's names and the byte range of its section, made
//! by one streaming scan of class lines; a class's section read on demand. Also the map as a
//! `DeobfuscationMapping` table, and a map made from one.

use super::*;

/// Where a map's bytes are: a file read on demand, or bytes in memory (tests, packets).
pub(super) enum Source {
    File(std::fs::File),
    Owned(Vec<u8>),
}

/// One class of the index.
pub(super) struct ClassEntry {
    /// The class line and the member and comment lines below it: byte range of the map.
    pub(super) section: Range<u64>,
    /// The original (deobfuscated) name: byte range of [`ProguardMap::names`].
    original: Range<u32>,
    /// The obfuscated name: byte range of [`ProguardMap::names`].
    obfuscated: Range<u32>,
    /// 1-based line number of the class line.
    pub(super) line: u32,
}

/// A ProGuard/R8 mapping file, indexed by obfuscated class name; members are read lazily by a
/// [`Retracer`].
pub struct ProguardMap {
    pub(super) name: String,
    pub(super) package: Option<String>,
    source: Source,
    pub(super) classes: FxHashMap<Box<str>, u32>,
    pub(super) entries: Vec<ClassEntry>,
    /// Every class's original and obfuscated names, end to end.
    names: String,
    /// The packages of the classes the map names, original and obfuscated (`""`: the default
    /// package): a name in one of them that the map does not know is worth reporting.
    pub(super) packages: FxHashSet<Box<str>>,
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
pub(super) struct Indexer {
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
pub(super) fn feed_lines(data: &[u8], base: u64, last: bool, ix: &mut Indexer) -> Result<usize> {
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
pub(super) fn index_range(file: &std::fs::File, range: Range<u64>, chunk: usize, ix: &mut Indexer) -> Result<()> {
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
pub(super) fn next_line_start(file: &std::fs::File, at: u64, len: u64) -> std::io::Result<Option<u64>> {
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

    pub(super) fn original(&self, idx: u32) -> &str {
        self.name_at(&self.entries[idx as usize].original)
    }

    /// Whether `package` (`""`: the default package) holds a class the map names, by its
    /// original or its obfuscated name.
    pub fn covers_package(&self, package: &str) -> bool {
        self.packages.contains(package)
    }

    /// The class whose original name is `original`, if the map names one (the first).
    pub(super) fn by_original(&self, original: &str) -> Option<u32> {
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
    pub(super) fn source_file_of(&self, idx: u32) -> Option<String> {
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
    pub(super) fn read_into(&self, range: Range<u64>, buf: &mut Vec<u8>) -> bool {
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
    pub(super) fn parse_class(&self, idx: u32) -> ClassTable {
        let e = &self.entries[idx as usize];
        ClassTable::parse(&self.read_range(e.section.clone()).unwrap_or_default(), e.line)
    }

    /// The bytes of class `idx`'s section (empty when the file cannot be read any more).
    pub(super) fn section(&self, idx: u32) -> Box<[u8]> {
        self.read_range(self.entries[idx as usize].section.clone()).unwrap_or_default()
    }

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

#[cfg(unix)]
pub(super) fn read_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, at)
}

#[cfg(windows)]
pub(super) fn read_at(f: &std::fs::File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
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
pub(super) fn read_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
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
pub(super) fn parse_class_line(line: &[u8]) -> Option<(&str, &str)> {
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
