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

mod profile;
pub use profile::*;

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

/// Which way the entries of a capture run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderChoice {
    /// Guess from the capture (see [`OrderBasis`]).
    Auto,
    /// The first entry is the most recent allocation (ART 6.0 and later).
    NewestFirst,
    /// The first entry is the oldest allocation (Dalvik, ART 5.x).
    OldestFirst,
}

/// The order of the entries of a decoded capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryOrder {
    /// Newest allocation first.
    NewestFirst,
    /// Oldest allocation first.
    OldestFirst,
}

impl fmt::Display for EntryOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EntryOrder::NewestFirst => "newest first",
            EntryOrder::OldestFirst => "oldest first",
        })
    }
}

/// Why a capture's entries were taken to run the way they do. The rules of
/// [`OrderChoice::Auto`], in order: no entries, nothing to decide; a wrapped entry count
/// (Dalvik 4.4's full buffer) means oldest first; a stack deeper than 16 frames exists only on
/// ART 6.0+, newest first; thread ids all below 256 are VM thread ids (Dalvik, ART 5.x),
/// oldest first; otherwise they are kernel tids (ART 6.0+), newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderBasis {
    /// Given as an option.
    Option,
    /// The capture has no entries.
    NoEntries,
    /// The entry count wrapped (Dalvik 4.4 full buffer).
    WrappedCount,
    /// A stack is deeper than 16 frames (ART 6.0+ only).
    DeepStacks,
    /// Every thread id is below 256: VM thread ids (Dalvik, ART 5.x).
    SmallThreadIds,
    /// Some thread id is 256 or more: kernel tids (ART 6.0+).
    KernelThreadIds,
}

impl fmt::Display for OrderBasis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OrderBasis::Option => "as the caller chose",
            OrderBasis::NoEntries => "no entries",
            OrderBasis::WrappedCount => "guessed: the entry count wrapped, as Dalvik's does with a full buffer",
            OrderBasis::DeepStacks => "guessed: stacks deeper than 16 frames come only from ART 6.0+",
            OrderBasis::SmallThreadIds => "guessed: all thread ids are below 256, VM thread ids of Dalvik or ART 5.x",
            OrderBasis::KernelThreadIds => "guessed: thread ids of 256 and more are kernel tids, ART 6.0+",
        })
    }
}

/// How the blob reached us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// The blob alone (an `.alloc` file).
    Blob,
    /// A DDM `REAL` chunk.
    DdmChunk,
    /// A DDM `REAL` chunk in a JDWP reply packet.
    Jdwp {
        /// The input starts with the JDWP handshake.
        handshake: bool,
        /// 0-based number of the packet among the input's packets.
        packet: u32,
        /// The packet's id.
        id: u32,
    },
}

impl fmt::Display for Framing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Framing::Blob => f.write_str("bare blob (.alloc)"),
            Framing::DdmChunk => f.write_str("DDM chunk REAL"),
            Framing::Jdwp { handshake, packet, id } => write!(
                f,
                "DDM chunk REAL in JDWP reply packet {packet} (id {id}){}",
                if *handshake { ", after the JDWP handshake" } else { "" }
            ),
        }
    }
}

/// The three lengths a blob header declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobLayout {
    /// Header length (offset of the first entry). Standard: 15.
    pub header_len: u8,
    /// Length of an entry's fixed part. Standard: 9.
    pub entry_header_len: u8,
    /// Length of one stack frame. Standard: 8.
    pub frame_len: u8,
}

impl Default for BlobLayout {
    fn default() -> Self {
        BlobLayout {
            header_len: STANDARD_HEADER_LEN,
            entry_header_len: STANDARD_ENTRY_HEADER_LEN,
            frame_len: STANDARD_FRAME_LEN,
        }
    }
}

/// One stack frame as recorded: indices into the string tables and the raw line number.
#[derive(Debug, Clone, Copy, Eq)]
pub struct StackFrame {
    /// Declaring class (class-name table).
    pub class: u16,
    /// Method name (method-name table).
    pub method: u16,
    /// Source file (source-file table).
    pub file: u16,
    /// Line number as written: -1 no line information, -2 native method.
    pub line: i16,
}

impl StackFrame {
    /// The four fields in one number (equal frames, equal numbers).
    fn packed(&self) -> u64 {
        (u64::from(self.class) << 48)
            | (u64::from(self.method) << 32)
            | (u64::from(self.file) << 16)
            | u64::from(self.line as u16)
    }
}

impl PartialEq for StackFrame {
    fn eq(&self, other: &Self) -> bool {
        // One comparison per frame: whole stacks are compared for every allocation.
        self.packed() == other.packed()
    }
}

impl std::hash::Hash for StackFrame {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // One word per frame: stacks of frames are hashed for every allocation.
        state.write_u64(self.packed());
    }
}

/// One allocation record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocEntry {
    /// Bytes allocated.
    pub size: u32,
    /// Thread id (VM thread id, or a kernel tid cut to 16 bits).
    pub thread: u16,
    /// Allocated class (class-name table).
    pub class: u16,
    /// Index of the entry's first frame in [`AllocRecords::frames`].
    pub first_frame: u32,
    /// Number of frames.
    pub depth: u8,
}

/// The records of one blob, in the order of the file, with its string tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllocRecords {
    /// Class names as written (VM descriptors).
    pub class_names: Vec<String>,
    /// Method names.
    pub method_names: Vec<String>,
    /// Source file names ("" when unknown).
    pub file_names: Vec<String>,
    /// Entries, in the order of the file.
    pub entries: Vec<AllocEntry>,
    /// Frames of all entries, each entry's innermost first.
    pub frames: Vec<StackFrame>,
    /// Thread names from the optional table after the source files, in the order written.
    pub thread_names: Vec<(u16, String)>,
}

impl AllocRecords {
    /// The frames of `entry`, innermost first.
    pub fn entry_frames(&self, entry: &AllocEntry) -> &[StackFrame] {
        let start = entry.first_frame as usize;
        &self.frames[start..start + usize::from(entry.depth)]
    }

    /// Appends an entry with its frames (innermost first; at most 255 are kept).
    pub fn push_entry(&mut self, size: u32, thread: u16, class: u16, frames: &[StackFrame]) {
        let depth = frames.len().min(255);
        let first_frame = u32::try_from(self.frames.len()).expect("fewer than 2^32 frames");
        self.frames.extend_from_slice(&frames[..depth]);
        self.entries.push(AllocEntry { size, thread, class, first_frame, depth: depth as u8 });
    }

    /// The index of `s` in `table`, added when missing (for building records in tests).
    pub fn intern(table: &mut Vec<String>, s: &str) -> u16 {
        if let Some(i) = table.iter().position(|t| t == s) {
            return i as u16;
        }
        table.push(s.to_owned());
        u16::try_from(table.len() - 1).expect("at most 65,536 strings per table")
    }
}

/// A decoded capture: the records and what is known about where they came from.
#[derive(Debug, Clone)]
pub struct AllocCapture {
    /// Input name.
    pub source: String,
    /// How the blob was wrapped.
    pub framing: Framing,
    /// Bytes of the input (after gzip, if it was compressed).
    pub input_len: u64,
    /// Offset of the blob in the input.
    pub blob_offset: u64,
    /// Length of the blob, from its first byte to the end of the last string table.
    pub blob_len: u64,
    /// The lengths the header declares.
    pub layout: BlobLayout,
    /// Entry count as written in the header.
    pub count_field: u16,
    /// Offset of the string tables, as written (from the first byte of the blob).
    pub string_table_offset: u32,
    /// The records.
    pub records: AllocRecords,
    /// Which way the entries run.
    pub order: EntryOrder,
    /// Why.
    pub order_basis: OrderBasis,
    /// Things that are odd but did not stop decoding.
    pub problems: Vec<String>,
}

/// Counts of one key (a thread, a class, a method) in a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally<K> {
    /// What is counted.
    pub key: K,
    /// Entries.
    pub entries: u64,
    /// Bytes.
    pub bytes: u64,
}

/// What the stack frames of a capture say about line numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineCounts {
    /// Frames in all.
    pub frames: u64,
    /// Frames with line -1 (no line information).
    pub unknown: u64,
    /// Frames with line -2 (native methods).
    pub native: u64,
    /// Frames whose line read negative below -2 (ART's 16-bit cut of lines from 32768 on).
    pub wrapped: u64,
}

impl AllocCapture {
    /// True when the header's entry count differs from the entries found (by a multiple of
    /// 65,536: Dalvik's full-buffer quirk writes 0).
    pub fn count_wrapped(&self) -> bool {
        self.records.entries.len() != usize::from(self.count_field)
    }

    /// Entries in the order the allocations happened, each with its allocation number (1 for
    /// the oldest).
    pub fn chronological(&self) -> Box<dyn Iterator<Item = (u64, &AllocEntry)> + '_> {
        let e = &self.records.entries;
        match self.order {
            EntryOrder::OldestFirst => Box::new(e.iter().enumerate().map(|(i, x)| (i as u64 + 1, x))),
            EntryOrder::NewestFirst => Box::new(e.iter().rev().enumerate().map(|(i, x)| (i as u64 + 1, x))),
        }
    }

    /// The deepest stack.
    pub fn max_depth(&self) -> u8 {
        self.records.entries.iter().map(|e| e.depth).max().unwrap_or(0)
    }

    /// Bytes allocated in all.
    pub fn total_bytes(&self) -> u64 {
        self.records.entries.iter().map(|e| u64::from(e.size)).sum()
    }

    /// The name of thread `id` from the optional thread-name table.
    pub fn thread_name(&self, id: u16) -> Option<&str> {
        self.records.thread_names.iter().find(|(t, _)| *t == id).map(|(_, n)| n.as_str())
    }

    /// Entries and bytes per thread, most bytes first.
    pub fn threads(&self) -> Vec<Tally<u16>> {
        let mut m: HashMap<u16, (u64, u64)> = HashMap::default();
        for e in &self.records.entries {
            let t = m.entry(e.thread).or_default();
            t.0 += 1;
            t.1 += u64::from(e.size);
        }
        ranked(m.into_iter().map(|(key, (entries, bytes))| Tally { key, entries, bytes }).collect())
    }

    /// The `n` allocated classes with the most bytes (Java names).
    pub fn top_classes(&self, n: usize) -> Vec<Tally<String>> {
        let mut m: HashMap<u16, (u64, u64)> = HashMap::default();
        for e in &self.records.entries {
            let t = m.entry(e.class).or_default();
            t.0 += 1;
            t.1 += u64::from(e.size);
        }
        let mut v = merge_names(
            m.into_iter()
                .map(|(c, (entries, bytes))| (java_name(&self.records.class_names[usize::from(c)]), entries, bytes)),
        );
        v.truncate(n);
        v
    }

    /// The `n` allocating methods (innermost frame, `class.method`) with the most bytes;
    /// entries without a stack count as `[no stack]`.
    pub fn top_methods(&self, n: usize) -> Vec<Tally<String>> {
        let r = &self.records;
        let mut m: HashMap<Option<(u16, u16)>, (u64, u64)> = HashMap::default();
        for e in &r.entries {
            let key = r.entry_frames(e).first().map(|f| (f.class, f.method));
            let t = m.entry(key).or_default();
            t.0 += 1;
            t.1 += u64::from(e.size);
        }
        let mut v = merge_names(m.into_iter().map(|(k, (entries, bytes))| {
            let name = match k {
                Some((c, meth)) => {
                    format!("{}.{}", java_name(&r.class_names[usize::from(c)]), r.method_names[usize::from(meth)])
                }
                None => NO_STACK.to_owned(),
            };
            (name, entries, bytes)
        }));
        v.truncate(n);
        v
    }

    /// Entries per stack depth, by depth.
    pub fn depth_histogram(&self) -> Vec<(u8, u64)> {
        let mut h = [0u64; 256];
        for e in &self.records.entries {
            h[usize::from(e.depth)] += 1;
        }
        h.iter().enumerate().filter(|(_, n)| **n > 0).map(|(d, n)| (d as u8, *n)).collect()
    }

    /// What the frames say about line numbers.
    pub fn line_counts(&self) -> LineCounts {
        let mut c = LineCounts::default();
        for f in &self.records.frames {
            c.frames += 1;
            match f.line {
                -1 => c.unknown += 1,
                -2 => c.native += 1,
                l if l < -2 => c.wrapped += 1,
                _ => {}
            }
        }
        c
    }
}

fn ranked<K: Ord>(mut v: Vec<Tally<K>>) -> Vec<Tally<K>> {
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.entries.cmp(&a.entries)).then_with(|| a.key.cmp(&b.key)));
    v
}

/// Sums tallies whose names are equal (two descriptors can name one Java class) and ranks them.
fn merge_names(it: impl Iterator<Item = (String, u64, u64)>) -> Vec<Tally<String>> {
    let mut m: HashMap<String, (u64, u64)> = HashMap::default();
    for (k, e, b) in it {
        let t = m.entry(k).or_default();
        t.0 += e;
        t.1 += b;
    }
    ranked(m.into_iter().map(|(key, (entries, bytes))| Tally { key, entries, bytes }).collect())
}

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

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn utf16be(b: &[u8]) -> String {
    char::decode_utf16(b.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])))
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// The data of the DDM chunk at `bytes[start..end]` as a range; errors for FAIL and other types.
fn unwrap_chunk(
    bytes: &[u8],
    start: usize,
    end: usize,
    source: &str,
    problems: &mut Vec<String>,
) -> Result<(usize, usize)> {
    let avail = end - start;
    if avail < 8 {
        return Err(Error::new(
            ErrorKind::Truncated,
            format!("{source}: DDM chunk at byte {start}: {avail} bytes, a chunk header needs 8"),
        ));
    }
    let ty = &bytes[start..start + 4];
    let len = be32(bytes, start + 4) as usize;
    let data = start + 8;
    if len > end - data {
        return Err(Error::new(
            ErrorKind::Truncated,
            format!(
                "{source}: DDM chunk {} at byte {start} claims {len} bytes of data but {} remain",
                String::from_utf8_lossy(ty),
                end - data
            ),
        ));
    }
    if ty == CHUNK_FAIL {
        let d = &bytes[data..data + len];
        let (code, msg) = if d.len() >= 8 {
            let code = be32(d, 0);
            let n = (be32(d, 4) as usize).min((d.len() - 8) / 2);
            (code, utf16be(&d[8..8 + 2 * n]))
        } else {
            (0, String::new())
        };
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{source}: the VM answered with a DDM FAIL chunk at byte {start}: error {code}: {msg}"),
        ));
    }
    if ty != CHUNK_REAL {
        return Err(Error::new(
            ErrorKind::Malformed,
            format!(
                "{source}: DDM chunk at byte {start} is {:?}, not REAL (recent allocations)",
                String::from_utf8_lossy(ty)
            ),
        ));
    }
    if data + len < end {
        problems.push(format!(
            "{} byte(s) after the REAL chunk (which ends at byte {}) ignored",
            end - data - len,
            data + len
        ));
    }
    Ok((data, data + len))
}

fn unwrap_jdwp(bytes: &[u8], source: &str, problems: &mut Vec<String>) -> Result<(Framing, usize, usize)> {
    let mut pos = 0usize;
    let mut handshake = false;
    while bytes[pos..].starts_with(JDWP_HANDSHAKE) {
        pos += JDWP_HANDSHAKE.len();
        handshake = true;
    }
    let mut packet = 0u32;
    let mut found: Option<(Framing, usize, usize)> = None;
    let mut errors: Vec<String> = Vec::new();
    while pos < bytes.len() {
        let left = bytes.len() - pos;
        if left < 11 {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!("{source}: JDWP packet {packet} at byte {pos}: {left} bytes, a packet header needs 11"),
            ));
        }
        let len = be32(bytes, pos) as usize;
        if len < 11 {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{source}: JDWP packet {packet} at byte {pos} claims {len} bytes, less than its 11-byte header"
                ),
            ));
        }
        if len > left {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!("{source}: JDWP packet {packet} at byte {pos} claims {len} bytes but {left} remain"),
            ));
        }
        let id = be32(bytes, pos + 4);
        let flags = bytes[pos + 8];
        if flags & 0x80 != 0 {
            let error = be16(bytes, pos + 9);
            let payload = pos + 11;
            let end = pos + len;
            let is_chunk = |t: &[u8; 4]| end - payload >= 8 && bytes[payload..payload + 4] == t[..];
            if error != 0 {
                errors.push(format!("JDWP reply packet {packet} at byte {pos} carries error code {error}"));
            } else if is_chunk(&CHUNK_REAL) && end - payload > 8 {
                if found.is_some() {
                    problems.push(format!("another REAL reply (JDWP packet {packet} at byte {pos}) ignored"));
                } else {
                    let (s, e) = unwrap_chunk(bytes, payload, end, source, problems)?;
                    if e > s {
                        found = Some((Framing::Jdwp { handshake, packet, id }, s, e));
                    }
                }
            } else if is_chunk(&CHUNK_FAIL) && found.is_none() {
                unwrap_chunk(bytes, payload, end, source, problems)?;
            }
        }
        pos += len;
        packet += 1;
    }
    found.ok_or_else(|| {
        let why = if errors.is_empty() { String::new() } else { format!(" ({})", errors.join("; ")) };
        Error::new(
            ErrorKind::NoData,
            format!("{source}: no JDWP reply carrying a REAL chunk with data among {packet} packet(s){why}"),
        )
    })
}

/// A parsed blob.
struct Blob {
    layout: BlobLayout,
    count_field: u16,
    string_table_offset: u32,
    len: u64,
    records: AllocRecords,
}

impl Blob {
    /// Parses `b`, which starts `base` bytes into the input (for messages).
    fn parse(b: &[u8], base: u64, source: &str, problems: &mut Vec<String>) -> Result<Blob> {
        let at = |rel: usize| base + rel as u64;
        let truncated = |msg: String| Error::new(ErrorKind::Truncated, format!("{source}: {msg}"));
        let malformed = |msg: String| Error::new(ErrorKind::Malformed, format!("{source}: {msg}"));
        if b.len() < 3 {
            return Err(truncated(format!("the blob at byte {base} has {} bytes, its header at least 15", b.len())));
        }
        let layout = BlobLayout { header_len: b[0], entry_header_len: b[1], frame_len: b[2] };
        if layout.header_len < STANDARD_HEADER_LEN {
            return Err(malformed(format!(
                "header length {} at byte {base} is shorter than the 15 bytes of its fields",
                layout.header_len
            )));
        }
        if layout.entry_header_len < STANDARD_ENTRY_HEADER_LEN {
            return Err(malformed(format!(
                "entry header length {} at byte {} is shorter than the 9 bytes of its fields",
                layout.entry_header_len,
                at(1)
            )));
        }
        if layout.frame_len < STANDARD_FRAME_LEN {
            return Err(malformed(format!(
                "stack frame length {} at byte {} is shorter than the 8 bytes of its fields",
                layout.frame_len,
                at(2)
            )));
        }
        let hl = usize::from(layout.header_len);
        if b.len() < hl {
            return Err(truncated(format!(
                "the blob at byte {base} has {} bytes, less than its {hl}-byte header",
                b.len()
            )));
        }
        let count_field = be16(b, 3);
        let string_table_offset = be32(b, 5);
        let n_class = usize::from(be16(b, 9));
        let n_method = usize::from(be16(b, 11));
        let n_file = usize::from(be16(b, 13));
        let st = string_table_offset as usize;
        if st < hl {
            return Err(malformed(format!(
                "string-table offset {st} (at byte {}) points into the {hl}-byte header",
                at(5)
            )));
        }
        if st > b.len() {
            return Err(truncated(format!(
                "the string tables should start at byte {} but the input ends at byte {}",
                at(st),
                at(b.len())
            )));
        }

        // Entries: from the header to the string tables.
        let el = usize::from(layout.entry_header_len);
        let fl = usize::from(layout.frame_len);
        let count = usize::from(count_field);
        let region = st - hl;
        let mut records = AllocRecords {
            entries: Vec::with_capacity(if count == 0 { 65_536 } else { count }.min(region / el)),
            frames: Vec::with_capacity((region / fl).min(1 << 22)),
            ..Default::default()
        };
        let mut pos = hl;
        let walk = |limit: usize, pos: &mut usize, records: &mut AllocRecords| -> Result<()> {
            while records.entries.len() < limit && *pos < st {
                let i = records.entries.len();
                let left = st - *pos;
                if left < el {
                    return Err(malformed(format!(
                        "entry {i} at byte {}: {left} byte(s) before the string tables at byte {}, an entry header needs {el}",
                        at(*pos),
                        at(st)
                    )));
                }
                let size = be32(b, *pos);
                let thread = be16(b, *pos + 4);
                let class = be16(b, *pos + 6);
                let depth = b[*pos + 8];
                if usize::from(class) >= n_class {
                    return Err(malformed(format!(
                        "entry {i} at byte {}: allocated-class index {class} is outside the class-name table ({n_class} names)",
                        at(*pos)
                    )));
                }
                let entry_at = *pos;
                *pos += el;
                let need = usize::from(depth) * fl;
                if st - *pos < need {
                    return Err(malformed(format!(
                        "entry {i} at byte {}: its {depth} frame(s) need {need} bytes but {} remain before the string tables at byte {}",
                        at(entry_at),
                        st - *pos,
                        at(st)
                    )));
                }
                let first_frame = u32::try_from(records.frames.len()).expect("frames fit the input");
                for k in 0..usize::from(depth) {
                    let p = *pos;
                    let f = StackFrame {
                        class: be16(b, p),
                        method: be16(b, p + 2),
                        file: be16(b, p + 4),
                        line: be16(b, p + 6) as i16,
                    };
                    for (what, idx, n) in [
                        ("class-name", f.class, n_class),
                        ("method-name", f.method, n_method),
                        ("source-file", f.file, n_file),
                    ] {
                        if usize::from(idx) >= n {
                            return Err(malformed(format!(
                                "entry {i} at byte {}, frame {k} at byte {}: index {idx} is outside the {what} table ({n} names)",
                                at(entry_at),
                                at(p)
                            )));
                        }
                    }
                    records.frames.push(f);
                    *pos += fl;
                }
                records.entries.push(AllocEntry { size, thread, class, first_frame, depth });
            }
            Ok(())
        };
        if count > 0 {
            walk(count, &mut pos, &mut records)?;
            if records.entries.len() < count {
                return Err(malformed(format!(
                    "the header announces {count} entries but the string tables at byte {} begin after {}",
                    at(st),
                    records.entries.len()
                )));
            }
        }
        if pos < st {
            // More entries than the header says: a 16-bit count that wrapped (Dalvik 4.4 writes
            // 0 for a full buffer of 65,536).
            let end_of_announced = pos;
            walk(usize::MAX, &mut pos, &mut records).map_err(|e| {
                if count == 0 {
                    e
                } else {
                    malformed(format!(
                        "the {count} entries the header announces end at byte {}, {} byte(s) before the string tables; read on as a wrapped count: {}",
                        at(end_of_announced),
                        st - end_of_announced,
                        e.context().strip_prefix(&format!("{source}: ")).unwrap_or(e.context())
                    ))
                }
            })?;
            let n = records.entries.len();
            if n % 65_536 != count {
                return Err(malformed(format!(
                    "the header announces {count} entries but {n} lie before the string tables at byte {}",
                    at(st)
                )));
            }
            problems.push(format!(
                "the header's entry count is {count} but {n} entries precede the string tables: a 16-bit count that wrapped (Dalvik writes 0 for a full buffer of 65,536)"
            ));
        }

        // String tables.
        let mut pos = st;
        let mut tables: [Vec<String>; 3] = Default::default();
        for (t, (what, n)) in
            [("class name", n_class), ("method name", n_method), ("source file", n_file)].into_iter().enumerate()
        {
            let v = &mut tables[t];
            v.reserve(n.min((b.len() - pos) / 4));
            for j in 0..n {
                let left = b.len() - pos;
                if left < 4 {
                    return Err(truncated(format!(
                        "{what} {j} at byte {}: the input ends ({left} byte(s) left, a string length needs 4)",
                        at(pos)
                    )));
                }
                let units = be32(b, pos) as u64;
                if units * 2 > (left - 4) as u64 {
                    return Err(truncated(format!(
                        "{what} {j} at byte {} claims {units} UTF-16 units ({} bytes) but {} remain",
                        at(pos),
                        units * 2,
                        left - 4
                    )));
                }
                let end = pos + 4 + units as usize * 2;
                v.push(utf16be(&b[pos + 4..end]));
                pos = end;
            }
        }
        let [class_names, method_names, file_names] = tables;
        records.class_names = class_names;
        records.method_names = method_names;
        records.file_names = file_names;
        let len = pos as u64;
        if pos < b.len() {
            match thread_names(&b[pos..]) {
                Some(names) => records.thread_names = names,
                None => problems.push(format!(
                    "{} byte(s) after the string tables (from byte {}) ignored",
                    b.len() - pos,
                    at(pos)
                )),
            }
        }
        Ok(Blob { layout, count_field, string_table_offset, len, records })
    }
}

/// The optional thread-name table, when `b` holds exactly one.
fn thread_names(b: &[u8]) -> Option<Vec<(u16, String)>> {
    if b.len() < 4 {
        return None;
    }
    let n = be32(b, 0) as usize;
    let mut pos = 4;
    let mut out = Vec::with_capacity(n.min((b.len() - 4) / 6));
    for _ in 0..n {
        if b.len() - pos < 6 {
            return None;
        }
        let id = be16(b, pos);
        let units = be32(b, pos + 2) as usize;
        if units > (b.len() - pos - 6) / 2 {
            return None;
        }
        let end = pos + 6 + units * 2;
        out.push((id, utf16be(&b[pos + 6..end])));
        pos = end;
    }
    (pos == b.len()).then_some(out)
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
