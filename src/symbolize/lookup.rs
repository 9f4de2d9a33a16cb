//! One file's addresses to source lines: DWARF through addr2line, the symbol table where it
//! has none, file names written as llvm-symbolizer writes them.

use super::*;

/// One symbolized address: lines innermost first, with owned strings.
pub(super) type RawLines = Vec<ResolvedLine>;

/// A file's answer for one address, shared by every frame (and batch) that names it.
pub(super) type Answer = std::sync::Arc<RawLines>;

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
pub(super) fn lookup_all(file: &std::path::Path, addrs: &[(FrameId, u64)]) -> Vec<(FrameId, Answer)> {
    match OpenFile::open(file) {
        Some(mut f) => f.lookup_all(addrs),
        None => Vec::new(),
    }
}

/// A symbol file opened once per run: its DWARF, its symbol table, and every answer so far.
pub(super) struct OpenFile {
    loader: addr2line::Loader,
    symbols: SymbolTable,
    rel_dirs: Vec<String>,
    answers: rustc_hash::FxHashMap<u64, Answer>,
}

impl OpenFile {
    pub(super) fn open(file: &std::path::Path) -> Option<OpenFile> {
        let loader = addr2line::Loader::new(file).ok()?;
        Some(OpenFile {
            loader,
            symbols: SymbolTable::read(file),
            rel_dirs: relative_comp_dirs(file),
            answers: Default::default(),
        })
    }

    /// Each distinct address is looked up once, however many frames and batches name it.
    pub(super) fn lookup_all(&mut self, addrs: &[(FrameId, u64)]) -> Vec<(FrameId, Answer)> {
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
pub(super) struct SymbolTable {
    /// `(address, size, name, file)`, sorted by address; `file` indexes `files`.
    syms: Vec<(u64, u64, String, Option<u32>)>,
    /// The names of the `STT_FILE` symbols that local symbols follow.
    files: Vec<String>,
}

/// One symbol as the symbol table names an address: its name, and for a local symbol the
/// source file of the `STT_FILE` symbol before it (empty when there is none).
pub(super) struct TableName<'a> {
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
pub(super) fn relative_comp_dirs(path: &std::path::Path) -> Vec<String> {
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
pub(super) fn llvm_file(file: String, rel_dirs: &[String]) -> String {
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

pub(super) fn lookup(loader: &addr2line::Loader, symbols: &SymbolTable, rel_dirs: &[String], addr: u64) -> RawLines {
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
