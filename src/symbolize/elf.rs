//! What symbolization needs to know of an ELF file: its GNU build id, its `.gnu_debuglink`,
//! whether it carries DWARF, and its first executable PT_LOAD (for the load-bias correction).

use std::fs::File;
use std::path::Path;

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SegmentFlags};

/// Facts about one ELF file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElfInfo {
    /// GNU build id (from a PT_NOTE segment, or a note section), raw bytes.
    pub build_id: Option<Vec<u8>>,
    /// `.gnu_debuglink`: file name and CRC-32 of the debug file.
    pub debuglink: Option<(String, u32)>,
    /// The file has a `.debug_info` section with content.
    pub has_dwarf: bool,
    /// The file has a symbol table (`.symtab` or `.dynsym`) with functions.
    pub has_symbols: bool,
    /// First executable PT_LOAD: (p_vaddr, p_offset, p_align).
    pub exec_load: Option<(u64, u64, u64)>,
}

/// True when the first bytes are the ELF magic.
pub fn is_elf(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF")
}

/// Reads an ELF file's facts; `None` when it is not a readable ELF.
pub fn read_elf_info(path: &Path) -> Option<ElfInfo> {
    let file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    if len < 64 {
        return None;
    }
    // SAFETY: read-only map of a file heapconv never writes; a file truncated concurrently by
    // another process could fault, which is outside what a reader can guard against.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    if !is_elf(&map) {
        return None;
    }
    elf_info_from_bytes(&map)
}

/// [`read_elf_info`] on bytes in memory.
pub fn elf_info_from_bytes(data: &[u8]) -> Option<ElfInfo> {
    let obj = object::File::parse(data).ok()?;
    let build_id = obj.build_id().ok().flatten().map(<[u8]>::to_vec);
    let debuglink =
        obj.gnu_debuglink().ok().flatten().map(|(name, crc)| (String::from_utf8_lossy(name).into_owned(), crc));
    let has_dwarf = obj
        .section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0 && s.kind() != object::SectionKind::UninitializedData);
    let has_symbols = obj.symbols().any(|s| s.kind() == object::SymbolKind::Text)
        || obj.dynamic_symbols().any(|s| s.kind() == object::SymbolKind::Text);
    let mut exec_load = None;
    for seg in obj.segments() {
        if let SegmentFlags::Elf { p_flags } = seg.flags() {
            if p_flags & 1 != 0 {
                let (off, _) = seg.file_range();
                exec_load = Some((seg.address(), off, seg.align()));
                break;
            }
        }
    }
    Some(ElfInfo { build_id, debuglink, has_dwarf, has_symbols, exec_load })
}

/// CRC-32 of a file, as `.gnu_debuglink` records it.
pub fn file_crc32(path: &Path) -> Option<u32> {
    let mut f = File::open(path).ok()?;
    let mut crc = flate2::Crc::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = std::io::Read::read(&mut f, &mut buf).ok()?;
        if n == 0 {
            break;
        }
        crc.update(&buf[..n]);
    }
    Some(crc.sum())
}

/// The address to look up for a frame, from its `rel_pc`, with the load-bias correction that
/// Perfetto applies: take the first executable PT_LOAD (`p_vaddr`, `p_align`), the mapping's
/// offset inside the ELF (`exact_offset - start_offset`), compute
/// `align_down(p_vaddr) - align_down(offset)`, and where that exceeds the mapping's recorded
/// load bias, add the difference. Fixes Android 10 unwinder traces and traces without a bias.
pub fn corrected_address(
    rel_pc: u64,
    exec_load: Option<(u64, u64, u64)>,
    exact_offset: u64,
    start_offset: u64,
    load_bias: u64,
) -> u64 {
    let Some((vaddr, _, align)) = exec_load else {
        return rel_pc;
    };
    let align = align.max(1);
    let down = |v: u64| v - v % align;
    let off = exact_offset.wrapping_sub(start_offset);
    let real_bias = i128::from(down(vaddr)) - i128::from(down(off));
    let bias = i128::from(load_bias);
    if real_bias > bias {
        let v = i128::from(rel_pc) + (real_bias - bias);
        u64::try_from(v).unwrap_or(rel_pc)
    } else {
        rel_pc
    }
}

#[cfg(test)]
mod tests {
    use super::corrected_address;

    #[test]
    fn load_bias_correction() {
        // No exec segment known: unchanged.
        assert_eq!(corrected_address(0x100, None, 0, 0, 0), 0x100);
        // p_vaddr 0x1000, mapping at file offset 0x1000 (the exec segment): bias 0 -> unchanged.
        assert_eq!(corrected_address(0x1150, Some((0x1000, 0x1000, 0x1000)), 0x1000, 0, 0), 0x1150);
        // Android 10 bug: mapping of the exec segment at offset 0 while p_vaddr is 0x1000.
        assert_eq!(corrected_address(0x150, Some((0x1000, 0x1000, 0x1000)), 0, 0, 0), 0x1150);
        // The trace already carries the right bias: unchanged.
        assert_eq!(corrected_address(0x150, Some((0x1000, 0x1000, 0x1000)), 0, 0, 0x1000), 0x150);
    }
}
