//! Finding the file with symbols for a mapping: a build-id index over the symbol directories
//! (the default), the paths traceconv's "find" mode tries, `.build-id/xx/rest.debug`,
//! `.gnu_debuglink` (CRC checked) and `/usr/lib/debug` mirrors under a root. Build ids are
//! compared after normalization; a file whose build id differs is rejected and recorded.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::elf::{ElfInfo, file_crc32, read_elf_info};

/// Normalizes a build id: hex text (as some producers write it) is decoded, trailing zero
/// bytes (padding) are dropped.
pub fn normalize_build_id(raw: &[u8]) -> Vec<u8> {
    let hex = raw.len() >= 32 && raw.len() % 2 == 0 && raw.iter().all(u8::is_ascii_hexdigit);
    let mut v: Vec<u8> = if hex {
        raw.chunks(2)
            .map(|c| {
                let s = std::str::from_utf8(c).unwrap_or("00");
                u8::from_str_radix(s, 16).unwrap_or(0)
            })
            .collect()
    } else {
        raw.to_vec()
    };
    while v.last() == Some(&0) {
        v.pop();
    }
    v
}

/// Whether two build ids name the same build: equal after normalization, or one a prefix of
/// the other of at least 16 bytes (a truncated 16-byte id against a 20-byte one).
pub fn build_ids_match(a: &[u8], b: &[u8]) -> bool {
    let (a, b) = (normalize_build_id(a), normalize_build_id(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    if a == b {
        return true;
    }
    let n = a.len().min(b.len());
    n >= 16 && a[..n] == b[..n]
}

/// All ELF files under the symbol directories, by build id.
#[derive(Debug, Default)]
pub struct SymbolIndex {
    roots: Vec<PathBuf>,
    files: BTreeMap<PathBuf, ElfInfo>,
    by_build_id: BTreeMap<Vec<u8>, Vec<PathBuf>>,
    /// What went wrong while indexing (unreadable directories, symlink loops skipped).
    pub problems: Vec<String>,
}

/// How a mapping's symbol file was looked for, and what was found.
#[derive(Debug, Clone, Default)]
pub struct Located {
    /// The file whose DWARF (or symbol table) will be used.
    pub file: Option<PathBuf>,
    /// Facts about `file`.
    pub info: Option<ElfInfo>,
    /// The ELF whose program headers give the load-bias correction (the binary, or the debug
    /// file, which keeps them).
    pub exec_load: Option<(u64, u64, u64)>,
    /// Paths looked at, in order.
    pub tried: Vec<String>,
    /// Files found at a candidate path whose build id differs.
    pub mismatched: Vec<PathBuf>,
}

impl SymbolIndex {
    /// Walks `roots` recursively (following symlinks, each real directory once, so symlink
    /// loops end) and reads the build id of every ELF file, in parallel.
    pub fn build(roots: &[PathBuf]) -> SymbolIndex {
        let mut idx = SymbolIndex { roots: roots.to_vec(), ..Default::default() };
        let mut visited: HashSet<PathBuf> = HashSet::new();
        let mut stack: Vec<(PathBuf, usize)> = roots.iter().rev().map(|r| (r.clone(), 0)).collect();
        let mut candidates = Vec::new();
        while let Some((dir, depth)) = stack.pop() {
            let Ok(real) = fs::canonicalize(&dir) else {
                idx.problems.push(format!("{}: cannot be read", dir.display()));
                continue;
            };
            if !visited.insert(real) {
                idx.problems.push(format!("{}: already visited (symlink loop or alias); skipped", dir.display()));
                continue;
            }
            if depth > 64 {
                idx.problems.push(format!("{}: deeper than 64 levels; skipped", dir.display()));
                continue;
            }
            let mut entries: Vec<PathBuf> = match fs::read_dir(&dir) {
                Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
                Err(e) => {
                    idx.problems.push(format!("{}: {e}", dir.display()));
                    continue;
                }
            };
            entries.sort();
            for p in entries.into_iter().rev() {
                match fs::metadata(&p) {
                    Ok(m) if m.is_dir() => stack.push((p, depth + 1)),
                    Ok(m) if m.is_file() && m.len() >= 64 => candidates.push(p),
                    Ok(_) => {}
                    Err(_) => idx.problems.push(format!("{}: broken link or unreadable", p.display())),
                }
            }
        }
        let infos: Vec<(PathBuf, Option<ElfInfo>)> = candidates
            .into_par_iter()
            .map(|p| {
                let i = read_elf_info(&p);
                (p, i)
            })
            .collect();
        for (p, info) in infos {
            if let Some(info) = info {
                if let Some(id) = &info.build_id {
                    idx.by_build_id.entry(normalize_build_id(id)).or_default().push(p.clone());
                }
                idx.files.insert(p, info);
            }
        }
        idx
    }

    /// Number of ELF files indexed.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when no ELF file was found.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn info(&self, p: &Path) -> Option<ElfInfo> {
        self.files.get(p).cloned().or_else(|| read_elf_info(p))
    }

    /// Finds the symbol file for a mapping named `mapping_path` with build id `build_id` (raw
    /// bytes as the trace holds them). With `ignore_build_id`, a path candidate is used even if
    /// its build id differs or the trace has none. With `find_only`, the build-id index is not
    /// consulted: only the paths traceconv's "find" mode tries (and the mirrors) are.
    pub fn locate(&self, mapping_path: &str, build_id: &[u8], ignore_build_id: bool, find_only: bool) -> Located {
        let mut loc = Located::default();
        let want = normalize_build_id(build_id);
        // 1. The index, by build id (unless only traceconv's "find" paths are wanted).
        let mut binaries: Vec<PathBuf> = Vec::new();
        if !want.is_empty() && !find_only {
            loc.tried.push(format!("build-id index ({} files) for {}", self.files.len(), hex(&want)));
            for (id, paths) in &self.by_build_id {
                if build_ids_match(id, &want) {
                    binaries.extend(paths.iter().cloned());
                }
            }
        }
        // 2. Paths, as traceconv's find mode, plus /usr/lib/debug mirrors.
        if binaries.is_empty() {
            for cand in self.path_candidates(mapping_path, &want) {
                loc.tried.push(cand.display().to_string());
                let Some(info) = self.info(&cand) else { continue };
                let id = info.build_id.clone().unwrap_or_default();
                if ignore_build_id || (!want.is_empty() && build_ids_match(&id, &want)) {
                    binaries.push(cand);
                    break;
                }
                loc.mismatched.push(cand);
            }
        }
        // 3. Prefer a file with DWARF; follow .gnu_debuglink from one without.
        let mut with_symbols = None;
        for b in &binaries {
            let Some(info) = self.info(b) else { continue };
            if loc.exec_load.is_none() {
                loc.exec_load = info.exec_load;
            }
            if info.has_dwarf {
                loc.file = Some(b.clone());
                loc.info = Some(info);
                return loc;
            }
            if let Some((name, crc)) = &info.debuglink {
                if !is_plain_file_name(name) {
                    // A hostile file could name `../../etc/x` or an absolute path: joined to
                    // the symbol directories, that would make us read files outside them.
                    loc.tried.push(format!(
                        "{}: .gnu_debuglink name {name:?} refused (not a single file name)",
                        b.display()
                    ));
                }
                let candidates = if is_plain_file_name(name) {
                    self.debuglink_candidates(b, mapping_path, name)
                } else {
                    Vec::new()
                };
                for cand in candidates {
                    loc.tried.push(format!("{} (debuglink)", cand.display()));
                    let Some(dinfo) = self.info(&cand) else { continue };
                    if file_crc32(&cand) != Some(*crc) {
                        loc.mismatched.push(cand);
                        continue;
                    }
                    if dinfo.has_dwarf {
                        loc.file = Some(cand);
                        loc.info = Some(dinfo);
                        return loc;
                    }
                }
            }
            if info.has_symbols && with_symbols.is_none() {
                with_symbols = Some((b.clone(), info));
            }
        }
        if let Some((p, info)) = with_symbols {
            loc.file = Some(p);
            loc.info = Some(info);
        }
        loc
    }

    fn path_candidates(&self, mapping_path: &str, build_id: &[u8]) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let p = Path::new(mapping_path);
        if p.is_absolute() && p.is_file() {
            out.push(p.to_path_buf());
        }
        let full = mapping_path.trim_start_matches('/');
        let (dir, file) = match full.rsplit_once('/') {
            Some((d, f)) => (d, f),
            None => ("", full),
        };
        // A mapping path with `..` in it (from a hostile trace) would lead out of the symbol
        // directories once joined to them: only its file name is used then.
        let (rel, dir) = if escapes(full) { ("", "") } else { (full, dir) };
        let file = if is_plain_file_name(file) { file } else { "" };
        let stripped = file.split_once("base.apk!").map(|(_, f)| f).filter(|f| is_plain_file_name(f));
        for root in &self.roots {
            if !rel.is_empty() {
                out.push(root.join(rel));
            }
            if let Some(s) = stripped {
                out.push(root.join(dir).join(s));
            }
            if !file.is_empty() {
                out.push(root.join(file));
            }
            if let Some(s) = stripped {
                out.push(root.join(s));
            }
            if build_id.len() >= 2 {
                let h = hex(build_id);
                out.push(root.join(".build-id").join(&h[..2]).join(format!("{}.debug", &h[2..])));
            }
            if !rel.is_empty() {
                out.push(root.join("usr/lib/debug").join(rel));
                out.push(root.join("usr/lib/debug").join(format!("{rel}.debug")));
            }
        }
        out.retain(|c| c.is_file());
        out.dedup();
        out
    }

    fn debuglink_candidates(&self, binary: &Path, mapping_path: &str, name: &str) -> Vec<PathBuf> {
        let dir = binary.parent().unwrap_or(Path::new("."));
        let mut out = vec![dir.join(name), dir.join(".debug").join(name)];
        let rel = mapping_path.trim_start_matches('/');
        let rel_dir = if escapes(rel) {
            PathBuf::new()
        } else {
            Path::new(rel).parent().map(Path::to_path_buf).unwrap_or_default()
        };
        for root in &self.roots {
            out.push(root.join("usr/lib/debug").join(&rel_dir).join(name));
            out.push(root.join(name));
            out.push(root.join(".debug").join(name));
        }
        out.retain(|c| c.is_file() && c != binary);
        out.dedup();
        out
    }
}

/// Whether a `.gnu_debuglink` name is one path component: not empty, not `.` or `..`, no
/// `/` (so neither absolute nor nested) and no NUL. Only such names are joined to directories.
pub fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Whether a relative path has a `..` component (joined to a directory, it could lead out).
fn escapes(rel: &str) -> bool {
    Path::new(rel).components().any(|c| matches!(c, std::path::Component::ParentDir))
}

/// Lowercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debuglink_names_are_single_components() {
        assert!(is_plain_file_name("libgadget.so.debug"));
        assert!(is_plain_file_name("..hidden.debug"));
        for bad in ["", ".", "..", "../x.debug", "/etc/passwd", "a/b.debug", "x/", "nul\0.debug"] {
            assert!(!is_plain_file_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn mapping_paths_with_dot_dot_stay_inside_the_roots() {
        assert!(escapes("../../etc/passwd") && escapes("system/../../x.so") && !escapes("system/lib64/libc.so"));
        let root = tempfile_dir();
        let idx = SymbolIndex { roots: vec![root.join("syms")], ..Default::default() };
        std::fs::create_dir_all(root.join("syms")).unwrap();
        std::fs::write(root.join("outside.so"), b"not an ELF file, but a file").unwrap();
        std::fs::write(root.join("syms/outside.so"), b"inside").unwrap();
        let c = idx.path_candidates("/../outside.so", &[]);
        assert_eq!(c, [root.join("syms/outside.so")], "only the base name, under the root");
        assert!(
            idx.debuglink_candidates(&root.join("syms/x.so"), "/../../y/x.so", "outside.so")
                .iter()
                .all(|p| p.starts_with(root.join("syms")))
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("heapconv-locate-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn build_id_normalization() {
        let raw = [0x12u8, 0x34, 0xab, 0xcd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
        assert!(build_ids_match(&raw, &raw));
        // Hex text, any case.
        assert!(build_ids_match(hex(&raw).to_uppercase().as_bytes(), &raw));
        // Zero padding.
        let mut padded = raw.to_vec();
        padded.extend([0, 0, 0, 0]);
        assert!(build_ids_match(&padded, &raw));
        // 16-byte truncation.
        assert!(build_ids_match(&raw[..16], &raw));
        // Different ids, and short prefixes, do not match.
        let mut other = raw;
        other[19] ^= 1;
        assert!(!build_ids_match(&other, &raw));
        assert!(!build_ids_match(&raw[..8], &raw));
        assert!(!build_ids_match(b"", b""));
    }
}
