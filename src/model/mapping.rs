//! Memory mappings (loaded libraries and executables) that native frames point into.

use super::strings::StringId;

/// Index of a [`Mapping`] in the profile tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MappingId(pub u32);

/// A mapped file, as the profiler saw it in the process.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// Path of the mapped file (`/system/lib64/libc.so`), interned.
    pub path: StringId,
    /// Build id as raw bytes, exactly as the trace holds them (may be empty).
    pub build_id: Box<[u8]>,
    /// Start of the virtual address range.
    pub start: u64,
    /// End of the virtual address range.
    pub end: u64,
    /// File offset of the first mapping of this file (0 for ordinary `.so` files).
    pub start_offset: u64,
    /// File offset of this mapping.
    pub exact_offset: u64,
    /// Load bias that the unwinder applied to compute `rel_pc`.
    pub load_bias: u64,
}

impl Mapping {
    /// The build id as text: lowercase hex of the raw bytes; a 33-byte id is taken to be
    /// already-hex (Chrome module ids) and kept verbatim, as Perfetto does.
    pub fn build_id_text(&self) -> String {
        build_id_text(&self.build_id)
    }
}

/// Formats a raw build id the way Perfetto's trace processor does (see [`Mapping::build_id_text`]).
pub fn build_id_text(raw: &[u8]) -> String {
    if raw.len() == 33 && raw.iter().all(|b| b.is_ascii_hexdigit()) {
        return String::from_utf8_lossy(raw).into_owned();
    }
    let mut s = String::with_capacity(raw.len() * 2);
    for b in raw {
        s.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        s.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
    }
    s
}

/// The last path component of `path` (`libc.so` for `/system/lib64/libc.so`).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
