//! The records a capture holds (entries, frames, their order and framing) and the summaries
//! made of them (tallies per class, thread and line).

use super::*;

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
    pub(super) fn packed(&self) -> u64 {
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

pub(super) fn ranked<K: Ord>(mut v: Vec<Tally<K>>) -> Vec<Tally<K>> {
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.entries.cmp(&a.entries)).then_with(|| a.key.cmp(&b.key)));
    v
}

/// Sums tallies whose names are equal (two descriptors can name one Java class) and ranks them.
pub(super) fn merge_names(it: impl Iterator<Item = (String, u64, u64)>) -> Vec<Tally<String>> {
    let mut m: HashMap<String, (u64, u64)> = HashMap::default();
    for (k, e, b) in it {
        let t = m.entry(k).or_default();
        t.0 += e;
        t.1 += b;
    }
    ranked(m.into_iter().map(|(key, (entries, bytes))| Tally { key, entries, bytes }).collect())
}
