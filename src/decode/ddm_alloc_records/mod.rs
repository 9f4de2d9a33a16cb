//! Android DDM allocation records (the Allocation Tracker's "recent allocations", a `.alloc`
//! file) to the model: one sample per recorded allocation.
//!
//! # The blob, byte by byte
//!
//! Everything is big-endian. Offsets below are from the first byte of the blob.
//!
//! **Header.** Byte 0 is the length of the header (15 from every known producer), byte 1 the
//! length of one entry's fixed part (9), byte 2 the length of one stack frame (8). A reader
//! uses these three as written: entries start at the header length, and the bytes of an entry
//! or a frame past the fields described here are skipped, so a producer that writes longer
//! records stays readable. Then: u16 number of entries at 3, u32 offset of the string tables
//! (from byte 0 of the blob) at 5, and the sizes of the three string tables as u16 at 9 (class
//! names), 11 (method names) and 13 (source files). The blob has no magic number: an `.alloc`
//! file is recognized by its first three bytes, `0F 09 08`.
//!
//! **Entries**, packed from the header length up to the string tables: u32 size of the
//! allocation in bytes, u16 thread id, u16 index of the allocated class (in the class-name
//! table), u8 stack depth D, then D frames, innermost (the allocating method) first. A frame
//! is u16 index of the method's declaring class (class-name table), u16 method name index,
//! u16 source file index and an i16 line number: -1 when the method has no line information,
//! -2 for a native method. Dalvik clipped line numbers at 32767; ART writes the low 16 bits of
//! the number, so a line from 32768 on reads back negative and is taken here as unsigned.
//! Since Android 13, ART writes the dex pc instead of -1 when it cannot map it to a line.
//!
//! **String tables**, back to back at the string-table offset: class names, method names,
//! source files. A string is a u32 count of UTF-16 code units, then the units (big-endian, no
//! terminator). Class names are VM descriptors (`Ljava/lang/String;`, `[I`,
//! `[[Lfoo/Bar;`), shown here as Java names (`java.lang.String`, `int[]`, `foo.Bar[][]`).
//! Method names carry no signature. An unknown source file is the empty string. The VMs write
//! nothing after the last table; some versions of ddmlib read an optional thread-name table
//! there (u32 count, then per thread a u16 id and a string), which is used when it is present
//! and fits exactly.
//!
//! # Producers
//!
//! The layout is the same from Dalvik to current ART; what differs is the order of the entries
//! and what the fields mean:
//!
//! * Dalvik and ART 5.x send the oldest allocation first; ART 6.0 and later the newest first.
//!   The blob does not say which, so [`OrderChoice::Auto`] guesses (see [`OrderBasis`]) and the
//!   guess is recorded: samples are always put in the order the allocations happened, so the
//!   "most recent N" are the same allocations whichever VM wrote the capture.
//! * Thread ids are small VM thread ids on Dalvik and ART 5.x, kernel tids cut to 16 bits on
//!   ART 6.0+.
//! * The entry count is 16 bits: Dalvik 4.4 with a full buffer of 65,536 records writes 0 and
//!   then every entry. The entries are therefore always walked up to the string tables, and a
//!   count that differs from what was walked by a multiple of 65,536 is accepted as wrapped.
//! * The stack depth limit (16 by default; up to 128 on ART) is not recorded. Stacks as deep
//!   as the limit ([`DdmOptions::max_depth`], by default the deepest stack of the capture) were
//!   probably cut, and get a `[truncated]` root frame.
//!
//! # Framing
//!
//! A capture arrives bare (an `.alloc` file: Android Studio saved the blob as it came), as a
//! DDM chunk (`REAL`, u32 length, blob) or inside a JDWP reply packet (u32 length of the
//! packet including its 11-byte header, u32 id, u8 flags with 0x80 for a reply, u16 error
//! code, then the chunk), possibly after the 14-byte `JDWP-Handshake` and among other
//! packets: the first `REAL` reply carrying data is used. A `FAIL` chunk (u32 code, then a
//! string) is reported as the error it carries.
//!
//! Every index is checked against its table and every length against the bytes left, before
//! anything is allocated for it; a bad one is an error naming the entry and its byte offset
//! in the input.

use rustc_hash::FxHashMap as HashMap;
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::model::{FrameId, Line, Profile, ProfileMeta, StackId, StringId, Tables, ValueKind, ValueType};

mod blob;
mod framing;
mod profile;
mod records;

use blob::*;
use framing::*;
pub use profile::*;
pub use records::*;

/// The bytes a JDWP connection starts with, in both directions.
pub const JDWP_HANDSHAKE: &[u8; 14] = b"JDWP-Handshake";
/// The DDM chunk type of recent-allocation data.
pub const CHUNK_REAL: [u8; 4] = *b"REAL";
/// The DDM chunk type of an error answer.
pub const CHUNK_FAIL: [u8; 4] = *b"FAIL";
/// Header length every known producer writes.
pub const STANDARD_HEADER_LEN: u8 = 15;
/// Entry header length every known producer writes.
pub const STANDARD_ENTRY_HEADER_LEN: u8 = 9;
/// Stack frame length every known producer writes.
pub const STANDARD_FRAME_LEN: u8 = 8;
/// The stack depth limit of Dalvik and of ART's default setting.
pub const DEFAULT_VM_DEPTH_LIMIT: u8 = 16;
/// Thread ids below this are VM thread ids (Dalvik, ART 5.x) rather than kernel tids.
pub const SMALL_THREAD_ID_LIMIT: u16 = 256;

/// Options of the DDM allocation-record decoder and of the profile made from its records.
#[derive(Debug, Clone)]
pub struct DdmOptions {
    /// Which way the entries run. Default: [`OrderChoice::Auto`].
    pub order: OrderChoice,
    /// Keep only the N most recent allocations of each capture. Default: `None` (all).
    pub recent: Option<usize>,
    /// Add a leaf frame naming the allocated class under each stack. Default: true.
    pub alloc_class_frame: bool,
    /// The producer's stack depth limit: stacks this deep get a `[truncated]` root frame.
    /// Default: `None`, the deepest stack of each capture.
    pub max_depth: Option<usize>,
    /// Mark stacks that reach the depth limit with a `[truncated]` root frame. Default: true.
    pub truncation_marks: bool,
    /// Give each method frame a [`Line`] (function `class.method`, file, line), which pprof
    /// writes as function, file and line. Text outputs label a frame that has lines by its
    /// function alone, so without lines they show the whole `class.method(File.java:12)`.
    /// Default: true.
    pub lines: bool,
    /// One sample per allocation, with its `thread` label (and `allocation`, with
    /// [`DdmOptions::allocation_label`]). When false,
    /// allocations with the same stack are summed into one sample without labels: what folded
    /// stacks, flame graphs and summaries show is the same, made from far fewer samples.
    /// Default: true.
    pub per_allocation: bool,
    /// Label each sample with its allocation number (`allocation`, 1 for the oldest of its
    /// capture), for filters such as `go tool pprof -tagfocus=allocation=1:1000`. Off by
    /// default: `go tool pprof -tags` lists every value of a numeric label on its own line, one
    /// per record, before the thread table. Default: false.
    pub allocation_label: bool,
    /// Largest input accepted, in bytes (after gzip). Default: 1 GiB.
    pub max_bytes: u64,
}

impl Default for DdmOptions {
    fn default() -> Self {
        DdmOptions {
            order: OrderChoice::Auto,
            recent: None,
            alloc_class_frame: true,
            max_depth: None,
            truncation_marks: true,
            lines: true,
            per_allocation: true,
            allocation_label: false,
            max_bytes: 1 << 30,
        }
    }
}

/// What the first bytes of a capture say about its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DdmKind {
    /// A bare blob.
    Blob,
    /// A DDM chunk.
    Chunk,
    /// JDWP packets, possibly after the handshake.
    Jdwp,
}

/// Recognizes a DDM capture from its first bytes (16 are enough); `None` when it is not one.
///
/// A bare blob has no magic: its first three bytes are the header, entry and frame lengths,
/// `0F 09 08` from every known producer; larger lengths (up to 64) are accepted when the
/// string-table offset is consistent with them.
pub fn sniff_ddm(head: &[u8]) -> Option<DdmKind> {
    if head.starts_with(JDWP_HANDSHAKE) {
        return Some(DdmKind::Jdwp);
    }
    if head.starts_with(&CHUNK_REAL) || head.starts_with(&CHUNK_FAIL) {
        return Some(DdmKind::Chunk);
    }
    if head.starts_with(&[STANDARD_HEADER_LEN, STANDARD_ENTRY_HEADER_LEN, STANDARD_FRAME_LEN]) {
        return Some(DdmKind::Blob);
    }
    if head.len() >= 15 {
        let (h, e, f) = (head[0], head[1], head[2]);
        let off = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
        if (15..=64).contains(&h) && (9..=64).contains(&e) && (8..=64).contains(&f) && off >= u32::from(h) {
            return Some(DdmKind::Blob);
        }
    }
    if head.len() >= 11 {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let flags = head[8];
        if len >= 11 {
            if flags == 0x80 && head.len() >= 15 && head[11..15].iter().all(|b| b.is_ascii_uppercase()) {
                return Some(DdmKind::Jdwp);
            }
            if flags == 0 && head[9] == 0xC7 && head[10] == 0x01 {
                return Some(DdmKind::Jdwp);
            }
        }
    }
    None
}

/// Decodes one capture (bare blob, DDM chunk or JDWP packets; see the module docs).
pub fn decode_alloc_records(bytes: &[u8], source: &str, opts: &DdmOptions) -> Result<AllocCapture> {
    if bytes.len() as u64 > opts.max_bytes {
        return Err(Error::new(
            ErrorKind::LimitExceeded,
            format!(
                "{source}: {} bytes, more than the limit of {} bytes for a DDM capture",
                bytes.len(),
                opts.max_bytes
            ),
        ));
    }
    let mut problems = Vec::new();
    let (framing, start, end) = match sniff_ddm(bytes).or_else(|| sniff_whole(bytes)) {
        Some(DdmKind::Blob) => (Framing::Blob, 0, bytes.len()),
        Some(DdmKind::Chunk) => {
            let (s, e) = unwrap_chunk(bytes, 0, bytes.len(), source, &mut problems)?;
            (Framing::DdmChunk, s, e)
        }
        Some(DdmKind::Jdwp) => unwrap_jdwp(bytes, source, &mut problems)?,
        None => {
            let shown: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02X}")).collect();
            return Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{source}: not a DDM allocation-record capture: expected a bare blob (an .alloc file, starting 0F 09 08), a DDM chunk (\"REAL\") or JDWP packets; the input starts {}",
                    if shown.is_empty() { "empty".to_owned() } else { shown.join(" ") }
                ),
            ));
        }
    };
    let blob = Blob::parse(&bytes[start..end], start as u64, source, &mut problems)?;
    let (order, order_basis) = entry_order(opts.order, &blob);
    Ok(AllocCapture {
        source: source.to_owned(),
        framing,
        input_len: bytes.len() as u64,
        blob_offset: start as u64,
        blob_len: blob.len,
        layout: blob.layout,
        count_field: blob.count_field,
        string_table_offset: blob.string_table_offset,
        records: blob.records,
        order,
        order_basis,
        problems,
    })
}

/// What the whole input may be when its first bytes alone do not say (the caller says it is a
/// DDM capture, so the parsers can name what is wrong): a blob with unusual header lengths
/// whose string tables lie after its header and inside the input, a DDM chunk of another type
/// whose length is the rest of the input, or a JDWP reply packet that fits the input.
fn sniff_whole(bytes: &[u8]) -> Option<DdmKind> {
    if bytes.len() >= 15 {
        let off = be32(bytes, 5) as usize;
        if (usize::from(bytes[0])..=bytes.len()).contains(&off) {
            return Some(DdmKind::Blob);
        }
    }
    if bytes.len() >= 8
        && bytes[..4].iter().all(|b| b.is_ascii_uppercase())
        && be32(bytes, 4) as usize == bytes.len() - 8
    {
        return Some(DdmKind::Chunk);
    }
    if bytes.len() >= 11 && (11..=bytes.len()).contains(&(be32(bytes, 0) as usize)) && bytes[8] == 0x80 {
        return Some(DdmKind::Jdwp);
    }
    None
}

fn entry_order(choice: OrderChoice, blob: &Blob) -> (EntryOrder, OrderBasis) {
    match choice {
        OrderChoice::NewestFirst => return (EntryOrder::NewestFirst, OrderBasis::Option),
        OrderChoice::OldestFirst => return (EntryOrder::OldestFirst, OrderBasis::Option),
        OrderChoice::Auto => {}
    }
    let e = &blob.records.entries;
    if e.is_empty() {
        (EntryOrder::NewestFirst, OrderBasis::NoEntries)
    } else if e.len() != usize::from(blob.count_field) {
        (EntryOrder::OldestFirst, OrderBasis::WrappedCount)
    } else if e.iter().any(|x| x.depth > DEFAULT_VM_DEPTH_LIMIT) {
        (EntryOrder::NewestFirst, OrderBasis::DeepStacks)
    } else if e.iter().all(|x| x.thread < SMALL_THREAD_ID_LIMIT) {
        (EntryOrder::OldestFirst, OrderBasis::SmallThreadIds)
    } else {
        (EntryOrder::NewestFirst, OrderBasis::KernelThreadIds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_become_java_names() {
        assert_eq!(java_name("Ljava/lang/String;"), "java.lang.String");
        assert_eq!(java_name("[I"), "int[]");
        assert_eq!(java_name("[[Lfoo/Bar;"), "foo.Bar[][]");
        assert_eq!(java_name("[[[J"), "long[][][]");
        assert_eq!(java_name("I"), "I");
        assert_eq!(java_name("path.Foo"), "path.Foo");
        assert_eq!(java_name("[Q"), "[Q");
        assert_eq!(java_name(""), "");
        assert_eq!(java_name("L;"), "");
    }

    #[test]
    fn labels_read_like_android_stack_traces() {
        assert_eq!(frame_label("a.B", "c", "B.java", 12), "a.B.c(B.java:12)");
        assert_eq!(frame_label("a.B", "c", "B.java", -1), "a.B.c(B.java)");
        assert_eq!(frame_label("a.B", "c", "B.java", -2), "a.B.c(Native Method)");
        assert_eq!(frame_label("a.B", "c", "", 7), "a.B.c(Unknown Source:7)");
        assert_eq!(frame_label("a.B", "c", "", -1), "a.B.c(Unknown Source)");
        assert_eq!(frame_label("a.B", "c", "B.java", 40000u16 as i16), "a.B.c(B.java:40000)");
        assert_eq!(source_line(0), Some(0));
    }

    #[test]
    fn sniffs_the_framings() {
        // An empty blob (the header only), in a REAL chunk, in a JDWP reply; the host's request.
        let blob = [0x0F, 9, 8, 0, 0, 0, 0, 0, 15, 0, 0, 0, 0, 0, 0];
        assert_eq!(sniff_ddm(&blob), Some(DdmKind::Blob));
        let chunk = [&CHUNK_REAL[..], &[0, 0, 0, 15], &blob].concat();
        assert_eq!(sniff_ddm(&chunk), Some(DdmKind::Chunk));
        let reply = [&[0, 0, 0, 34, 0, 0, 0, 7, 0x80, 0, 0][..], &chunk].concat();
        assert_eq!(sniff_ddm(&reply), Some(DdmKind::Jdwp));
        let request = [&[0, 0, 0, 19, 0, 0, 0, 7, 0, 0xC7, 0x01][..], &CHUNK_REAL, &[0, 0, 0, 0]].concat();
        assert_eq!(sniff_ddm(&request), Some(DdmKind::Jdwp));
        assert_eq!(sniff_ddm(b"JDWP-Handshake"), Some(DdmKind::Jdwp));
        assert_eq!(sniff_ddm(b"this is not a trace\n"), None);
        assert_eq!(sniff_ddm(&[0x0a, 0x05]), None);
        assert_eq!(sniff_ddm(&[0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None);
        // Longer headers, entries and frames (16, 12, 10 bytes), the string tables at byte 16.
        let long = [16, 12, 10, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(sniff_ddm(&long), Some(DdmKind::Blob));
    }
}
