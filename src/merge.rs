//! The merge stage: many profiles in, one out (or, for a diff, two that share their tables).
//!
//! A [`Merger`] is an accumulator. Profiles are added one at a time ([`Merger::add`]) and
//! accumulators are combined ([`Merger::absorb`]); memory is proportional to the distinct
//! (stack, labels) pairs seen, not to the inputs. [`Merger::finish`] sorts everything by
//! content, so the result does not depend on the order in which inputs were added or
//! accumulators combined: merging N inputs one by one in any order, or in a parallel tree,
//! gives the same profile and the same encoded bytes.
//!
//! # What is merged, and how (pprof's rules, as `go tool pprof -proto A B` applies them)
//!
//! * **Sample types** must be the same (type, unit) pairs in the same order in every input;
//!   otherwise the merge fails with an error listing both sides, unless
//!   [`MergeOptions::sample_types`] picks types that every input has, by name (`inuse_space`)
//!   or by meaning (`unreleased-size`, which matches Go's `inuse_space` and traceconv's
//!   `Unreleased malloc size` alike). A type picked by meaning keeps its name when every input
//!   names it the same, and takes Go's name (`inuse_space`, `inuse_objects`, `alloc_space`,
//!   `alloc_objects`) otherwise.
//! * **Units** of the same type may differ when pprof can convert them (memory: `bytes`,
//!   `kilobytes`, … ; time: `nanoseconds`, …, `hours`): values are scaled to the finest unit,
//!   as pprof's `measurement.ScaleProfiles` does (on a tie, the alphabetically first spelling).
//! * **Period**: the largest of the inputs' periods, in the finest unit. Values are **not**
//!   scaled by the ratio of periods, exactly as `go tool pprof -proto` merges (checked with Go
//!   1.19: profiles with periods 1 and 512 merge to period 512 with values summed). Heap
//!   profile values (Go's, heapprofd's) are already estimates of the real totals, whatever
//!   the period. Period types must agree when both inputs have one (`space`/`bytes` for
//!   heap profiles); unlike pprof, an input without a period type merges with any.
//! * **Mappings** are one mapping when their build id (or, without one, their file name),
//!   file offset and size rounded up to 4 KiB agree, as pprof keys them. Addresses inside a
//!   mapping's range are taken relative to its start (address-space randomization), so the
//!   same code in two runs is one location; the merged mapping starts at the lowest start
//!   seen and keeps the largest size and, for build-id keyed mappings, the alphabetically
//!   first file name.
//! * **Frames** (locations) are one frame when mapping, address and lines (function name,
//!   system name, file, line, column) agree. Frames of heapprofd and DDM inputs get their ART
//!   annotations (`[jit]`, `[aot]`, …) baked into their names first, so a trace and the pprof
//!   heapconv made of it merge into the same frames.
//! * **Samples** with the same stack and the same labels are summed; samples that differ only
//!   in their labels stay separate, as pprof keeps them. Samples whose values are all zero
//!   are dropped.
//! * **Header**: the earliest non-zero `time_nanos`, the sum of `duration_nanos`, every distinct
//!   comment (sorted), the data-loss flags of every input, and as default sample type the
//!   first one chosen by any input (or the first of [`MergeOptions::sample_types`]).
//!   `drop_frames`/`keep_frames` are not kept.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use crate::error::{Error, ErrorKind, Result};
use crate::model::annotate::{Annotation, AnnotationState, FrameClass, annotate_with, classify_frames};
use crate::model::{
    DumpFlags, FlatProfile, Frame, FrameId, Line, Mapping, MappingId, Period, Profile, ProfileMeta, StackId, StringId,
    StringTable, Tables, ValueKind, ValueType,
};

/// A sample type to keep: by its name, or by what it measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeSelector {
    /// The type with this name (pprof `sample_type.type`).
    Name(String),
    /// The first type with this meaning.
    Kind(ValueKind),
}

impl TypeSelector {
    /// Reads a selector: `total-count`, `total-size`, `unreleased-count` and `unreleased-size`
    /// are meanings, anything else a type name.
    pub fn parse(s: &str) -> TypeSelector {
        match s {
            "total-count" => TypeSelector::Kind(ValueKind::TotalCount),
            "total-size" => TypeSelector::Kind(ValueKind::TotalSize),
            "unreleased-count" => TypeSelector::Kind(ValueKind::UnreleasedCount),
            "unreleased-size" => TypeSelector::Kind(ValueKind::UnreleasedSize),
            name => TypeSelector::Name(name.to_owned()),
        }
    }

    fn describe(&self) -> String {
        match self {
            TypeSelector::Name(n) => format!("{n:?}"),
            TypeSelector::Kind(k) => kind_name(*k).to_owned(),
        }
    }
}

fn kind_name(k: ValueKind) -> &'static str {
    match k {
        ValueKind::TotalCount => "total-count",
        ValueKind::TotalSize => "total-size",
        ValueKind::UnreleasedCount => "unreleased-count",
        ValueKind::UnreleasedSize => "unreleased-size",
        ValueKind::Other => "other",
    }
}

/// Go's name for a sample type of this meaning.
fn go_name(k: ValueKind) -> Option<&'static str> {
    match k {
        ValueKind::TotalCount => Some("alloc_objects"),
        ValueKind::TotalSize => Some("alloc_space"),
        ValueKind::UnreleasedCount => Some("inuse_objects"),
        ValueKind::UnreleasedSize => Some("inuse_space"),
        ValueKind::Other => None,
    }
}

/// Options of the merge stage.
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    /// Keep only these sample types, in this order (the first is the default type). `None`:
    /// keep all, which every input must then have, identically. Default: `None`.
    pub sample_types: Option<Vec<TypeSelector>>,
}

/// One sample type of the merge.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    unit: String,
    kind: ValueKind,
    /// Every input named it `name`.
    agreed: bool,
}

/// What a merge knows beyond its samples.
#[derive(Debug, Clone)]
struct Header {
    columns: Vec<Column>,
    period: Option<Period>,
    time_nanos: Option<i64>,
    duration_nanos: Option<i64>,
    comments: BTreeSet<String>,
    defaults: BTreeSet<usize>,
    flags: DumpFlags,
    profiles: usize,
    /// The first input, for messages.
    first: String,
}

fn types_text(cols: &[Column]) -> String {
    let v: Vec<String> = cols.iter().map(|c| format!("{}/{}", c.name, c.unit)).collect();
    format!("[{}]", v.join(", "))
}

/// The unit class (memory, time) and factor to the class's base unit of a unit pprof knows.
fn sniff_unit(unit: &str) -> Option<(u8, u64)> {
    let mut u = unit.to_lowercase();
    if u.chars().count() > 2 {
        if let Some(t) = u.strip_suffix('s') {
            u = t.to_owned();
        }
    }
    let mem: &[(&[&str], u64)] = &[
        (&["b", "byte"], 1),
        (&["kb", "kbyte", "kilobyte"], 1 << 10),
        (&["mb", "mbyte", "megabyte"], 1 << 20),
        (&["gb", "gbyte", "gigabyte"], 1 << 30),
        (&["tb", "tbyte", "terabyte"], 1 << 40),
        (&["pb", "pbyte", "petabyte"], 1 << 50),
    ];
    let time: &[(&[&str], u64)] = &[
        (&["ns", "nanosecond"], 1),
        (&["μs", "us", "microsecond"], 1_000),
        (&["ms", "millisecond"], 1_000_000),
        (&["s", "sec", "second"], 1_000_000_000),
        (&["hour", "hr"], 3_600_000_000_000),
    ];
    for (class, table) in [(0u8, mem), (1u8, time)] {
        for (aliases, f) in table {
            if aliases.contains(&u.as_str()) {
                return Some((class, *f));
            }
        }
    }
    None
}

/// Merges two units of one sample type: (merged unit, factor for values in `a`, factor for
/// values in `b`), or `None` when pprof could not convert one into the other.
fn merge_units(a: &str, b: &str) -> Option<(String, i64, i64)> {
    if a == b {
        return Some((a.to_owned(), 1, 1));
    }
    let ((ca, fa), (cb, fb)) = (sniff_unit(a)?, sniff_unit(b)?);
    if ca != cb {
        return None;
    }
    let ratio = |hi: u64, lo: u64| i64::try_from(hi / lo).unwrap_or(i64::MAX);
    Some(match fa.cmp(&fb) {
        Ordering::Greater => (b.to_owned(), ratio(fa, fb), 1),
        Ordering::Less => (a.to_owned(), 1, ratio(fb, fa)),
        Ordering::Equal => (a.min(b).to_owned(), 1, 1),
    })
}

fn scale_value(v: i64, f: i64) -> i64 {
    if f == 1 { v } else { v.saturating_mul(f) }
}

fn merge_flags(a: &mut DumpFlags, b: &DumpFlags) {
    a.from_startup |= b.from_startup;
    a.rejected_concurrent |= b.rejected_concurrent;
    a.disconnected |= b.disconnected;
    a.buffer_overran |= b.buffer_overran;
    a.buffer_corrupted |= b.buffer_corrupted;
    a.hit_guardrail |= b.hit_guardrail;
    a.client_error = a.client_error.max(b.client_error);
    a.dump_at_max |= b.dump_at_max;
    a.previous_packet_dropped |= b.previous_packet_dropped;
    a.missing_packets += b.missing_packets;
    a.unresolved_samples += b.unresolved_samples;
    a.non_monotonic_samples += b.non_monotonic_samples;
}

fn trim_s(s: &str) -> &str {
    s.strip_suffix('s').unwrap_or(s)
}

impl Header {
    /// The header of one input profile, in the merge's columns: (header, input value index
    /// per column).
    fn of(
        meta: &ProfileMeta,
        types: &[ValueType],
        default_sample_type: usize,
        opts: &MergeOptions,
    ) -> Result<(Header, Vec<usize>)> {
        let name = match (&meta.title, meta.source.is_empty()) {
            (Some(_), false) => meta.source.clone(),
            (_, true) => meta.describe(),
            (None, false) => format!("{}: {}", meta.source, meta.describe()),
        };
        let cols: Vec<usize> = match &opts.sample_types {
            None => (0..types.len()).collect(),
            Some(sel) => {
                let mut cols = Vec::with_capacity(sel.len());
                for s in sel {
                    let found = match s {
                        TypeSelector::Name(n) => types.iter().position(|t| t.name == *n),
                        TypeSelector::Kind(k) => types.iter().position(|t| t.kind == *k),
                    };
                    let Some(i) = found else {
                        let have: Vec<String> = types
                            .iter()
                            .map(|t| match t.kind {
                                ValueKind::Other => format!("{}/{}", t.name, t.unit),
                                k => format!("{}/{} ({})", t.name, t.unit, kind_name(k)),
                            })
                            .collect();
                        return Err(Error::new(
                            ErrorKind::Usage,
                            format!("{name} has no sample type {} (its types: {})", s.describe(), have.join(", ")),
                        ));
                    };
                    cols.push(i);
                }
                cols
            }
        };
        let columns = cols
            .iter()
            .enumerate()
            .map(|(c, &i)| {
                let t = &types[i];
                let kind = match opts.sample_types.as_ref().map(|s| &s[c]) {
                    Some(TypeSelector::Kind(k)) => *k,
                    _ => t.kind,
                };
                Column { name: t.name.clone(), unit: t.unit.clone(), kind, agreed: true }
            })
            .collect();
        let mut defaults = BTreeSet::new();
        if opts.sample_types.is_some() {
            defaults.insert(0);
        } else if default_sample_type < types.len() {
            defaults.insert(default_sample_type);
        }
        let period = meta.period.clone().or_else(|| {
            meta.sampling_interval.filter(|&i| i > 0).map(|i| Period {
                name: "space".to_owned(),
                unit: "bytes".to_owned(),
                value: i64::try_from(i).unwrap_or(i64::MAX),
            })
        });
        let mut comments: BTreeSet<String> = meta.comments.iter().cloned().collect();
        if meta.title.is_none() {
            // A decoded trace or capture: say which dump went into the merge.
            let src = if meta.source.is_empty() { String::new() } else { format!("{}: ", meta.source) };
            comments.insert(format!("input: {src}{}", meta.describe()));
        }
        Ok((
            Header {
                columns,
                period,
                time_nanos: meta.time_nanos.filter(|&t| t != 0),
                duration_nanos: meta.duration_nanos,
                comments,
                defaults,
                flags: meta.flags.clone(),
                profiles: 1,
                first: name,
            },
            cols,
        ))
    }

    /// Merges `other` into `self`: returns the factors for `other`'s values, per column, and the
    /// factors by which values already merged under `self` must be multiplied.
    fn absorb(&mut self, other: Header, by_name: bool) -> Result<(Vec<i64>, Vec<i64>)> {
        let incompatible = |mine: &[Column]| {
            let hint = if by_name {
                "; choose types every input has with --sample-types (names, or meanings: total-count, total-size, unreleased-count, unreleased-size)"
            } else {
                ""
            };
            Error::new(
                ErrorKind::Usage,
                format!(
                    "cannot merge {}: its sample types {} differ from {} (of {}){hint}",
                    other.first,
                    types_text(&other.columns),
                    types_text(mine),
                    self.first,
                ),
            )
        };
        if self.columns.len() != other.columns.len()
            || self
                .columns
                .iter()
                .zip(&other.columns)
                .any(|(a, b)| (by_name && a.name != b.name) || merge_units(&a.unit, &b.unit).is_none())
        {
            return Err(incompatible(&self.columns));
        }
        let mut mine = vec![1; self.columns.len()];
        let mut theirs = vec![1; self.columns.len()];
        for (c, (a, b)) in self.columns.iter_mut().zip(&other.columns).enumerate() {
            let (unit, fa, fb) = merge_units(&a.unit, &b.unit).expect("checked above");
            if a.name != b.name || !b.agreed {
                a.agreed = false;
                a.name = a.name.clone().min(b.name.clone());
            }
            if a.kind != b.kind {
                a.kind = ValueKind::Other;
            }
            a.unit = unit;
            mine[c] = fa;
            theirs[c] = fb;
        }
        self.period = match (self.period.take(), other.period) {
            (Some(a), Some(b)) => {
                let units = merge_units(&a.unit, &b.unit);
                if trim_s(&a.name) != trim_s(&b.name) || units.is_none() {
                    return Err(Error::new(
                        ErrorKind::Usage,
                        format!(
                            "cannot merge {}: its period type {}/{} differs from {}/{} (of {})",
                            other.first, b.name, b.unit, a.name, a.unit, self.first
                        ),
                    ));
                }
                let (unit, fa, fb) = units.expect("checked");
                let value = scale_value(a.value, fa).max(scale_value(b.value, fb));
                Some(Period { name: a.name.min(b.name), unit, value })
            }
            (a, b) => a.or(b),
        };
        self.time_nanos = match (self.time_nanos, other.time_nanos) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.duration_nanos = match (self.duration_nanos, other.duration_nanos) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        self.comments.extend(other.comments);
        self.defaults.extend(other.defaults);
        merge_flags(&mut self.flags, &other.flags);
        self.profiles += other.profiles;
        self.first = self.first.clone().min(other.first);
        Ok((theirs, mine))
    }
}

/// A mapping's identity in a merge (pprof's mapping key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct MapKey {
    build_id: Box<[u8]>,
    /// File name when there is no build id, else empty.
    path: StringId,
    offset: u64,
    /// Size rounded up to 4 KiB.
    size: u64,
}

#[derive(Debug, Clone)]
struct MMap {
    key: MapKey,
    path: StringId,
    start: u64,
    size: u64,
}

/// A frame's identity in a merge: the address is relative to the mapping's start when it lies
/// inside the mapping (`abs`), as written otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct MFrame {
    mapping: Option<u32>,
    abs: bool,
    addr: u64,
    name: StringId,
    raw: StringId,
    lines: Box<[Line]>,
}

/// One label of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum MLabel {
    Num(StringId, i64, StringId),
    Str(StringId, StringId),
}

const UNSET: u32 = u32::MAX;

/// What the merge remembers of the input it is reading, so that several profiles of one input
/// (dumps sharing their tables) map each string, mapping, frame and stack node once.
struct Memo {
    tables: Arc<Tables>,
    annotate: bool,
    strings: Vec<u32>,
    mappings: Vec<(u32, u64, u64)>,
    frames: Vec<u32>,
    annotated_frames: HashMap<(u32, Annotation), u32>,
    classes: Vec<FrameClass>,
    /// Per stack node of a tree profile: the merged frame and the annotation state below it.
    nodes: Vec<u32>,
    states: Vec<AnnotationState>,
}

impl Memo {
    fn new(tables: Arc<Tables>, annotate: bool) -> Memo {
        let classes = if annotate { classify_frames(&tables) } else { Vec::new() };
        Memo {
            strings: vec![UNSET; tables.strings.len()],
            mappings: vec![(UNSET, 0, 0); tables.mappings().len()],
            frames: vec![UNSET; tables.frames().len()],
            annotated_frames: HashMap::default(),
            classes,
            nodes: Vec::new(),
            states: Vec::new(),
            tables,
            annotate,
        }
    }
}

/// Interned frame lists: each distinct list is stored once in an arena and found again by
/// its content (open addressing on a 64-bit hash, the content compared on a match).
#[derive(Debug, Default)]
struct SeqIndex {
    arena: Vec<u32>,
    spans: Vec<(u32, u32)>,
    hashes: Vec<u64>,
    /// Per slot: the upper half of the hash, then id + 1 (0: empty).
    slots: Vec<u64>,
}

fn seq_hash(seq: &[u32]) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3 ^ seq.len() as u64;
    let mut pairs = seq.chunks_exact(2);
    for p in &mut pairs {
        let x = u64::from(p[0]) | (u64::from(p[1]) << 32);
        h = (h.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    if let [x] = pairs.remainder() {
        h = (h.rotate_left(5) ^ u64::from(*x)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    h ^ (h >> 29)
}

impl SeqIndex {
    fn len(&self) -> usize {
        self.spans.len()
    }

    fn get(&self, id: u32) -> &[u32] {
        let (start, len) = self.spans[id as usize];
        &self.arena[start as usize..start as usize + len as usize]
    }

    /// Makes room for `stacks` more stacks of `frames` frames in all (growing the index once).
    fn reserve(&mut self, stacks: usize, frames: usize) {
        self.arena.reserve(frames);
        self.spans.reserve(stacks);
        self.hashes.reserve(stacks);
        while (self.spans.len() + stacks + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
    }

    /// Hints the cache to fetch the slot a stack with hash `h` is looked up in.
    fn prefetch_slot(&self, h: u64) {
        if !self.slots.is_empty() {
            crate::model::tables::prefetch(&self.slots[(h as usize) & (self.slots.len() - 1)]);
        }
    }

    /// Hints the cache to fetch the stored stack a stack with hash `h` may equal.
    fn prefetch_match(&self, h: u64) {
        if self.slots.is_empty() {
            return;
        }
        let s = self.slots[(h as usize) & (self.slots.len() - 1)];
        if s != 0 && s & 0xffff_ffff_0000_0000 == h & 0xffff_ffff_0000_0000 {
            let (start, _) = self.spans[(s as u32 - 1) as usize];
            crate::model::tables::prefetch(&self.arena[start as usize]);
        }
    }

    fn intern_hashed(&mut self, seq: &[u32], h: u64) -> u32 {
        if (self.spans.len() + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let tag = h & 0xffff_ffff_0000_0000;
        let mask = self.slots.len() - 1;
        let mut i = (h as usize) & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                let id = u32::try_from(self.spans.len()).expect("fewer than 2^32 stacks");
                let start = u32::try_from(self.arena.len()).expect("fewer than 2^32 frames in stacks");
                self.arena.extend_from_slice(seq);
                self.spans.push((start, seq.len() as u32));
                self.hashes.push(h);
                self.slots[i] = tag | u64::from(id + 1);
                return id;
            }
            if s & 0xffff_ffff_0000_0000 == tag {
                let id = (s as u32) - 1;
                if self.get(id) == seq {
                    return id;
                }
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(1024);
        self.slots = vec![0; cap];
        let mask = cap - 1;
        for (id, &h) in self.hashes.iter().enumerate() {
            let mut i = (h as usize) & mask;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (h & 0xffff_ffff_0000_0000) | (id as u64 + 1);
        }
    }
}

/// An accumulator of profiles (see the module docs).
pub struct Merger {
    opts: MergeOptions,
    sides: usize,
    header: Option<Header>,
    strings: StringTable,
    maps: Vec<MMap>,
    map_index: HashMap<MapKey, u32>,
    frames: Vec<MFrame>,
    frame_index: HashMap<MFrame, u32>,
    /// Stacks: lists of indexes into `frames`, leaf first.
    stacks: SeqIndex,
    label_sets: Vec<Box<[MLabel]>>,
    label_index: HashMap<Box<[MLabel]>, u32>,
    /// Per stack, its first sample slot; per slot, the next slot of the same stack (samples of
    /// one stack differ by their labels).
    first_slot: Vec<u32>,
    next_slot: Vec<u32>,
    /// Per slot: stack << 32 | label set.
    keys: Vec<u64>,
    values: Vec<i64>,
    memo: Option<Memo>,
}

impl std::fmt::Debug for Merger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Merger")
            .field("sides", &self.sides)
            .field("samples", &self.keys.len())
            .field("stacks", &self.stacks.len())
            .field("frames", &self.frames.len())
            .finish()
    }
}

/// The numeric and string labels of a sample.
type SampleLabels<'a> = (&'a [(StringId, i64)], &'a [(StringId, StringId)]);

/// A profile given to [`Merger::add_any`]: with stacks in a tree, or as frame lists.
#[derive(Debug, Clone, Copy)]
pub enum AnyProfile<'a> {
    /// Stacks in the tables' prefix tree (decoded traces and captures).
    Tree(&'a Profile),
    /// Stacks as frame lists (pprof files, merges).
    Flat(&'a FlatProfile),
}

impl AnyProfile<'_> {
    fn tables(&self) -> &Arc<Tables> {
        match self {
            AnyProfile::Tree(p) => &p.tables,
            AnyProfile::Flat(p) => &p.tables,
        }
    }

    fn sample_count(&self) -> usize {
        match self {
            AnyProfile::Tree(p) => p.sample_count(),
            AnyProfile::Flat(p) => p.sample_count(),
        }
    }

    fn values(&self, i: usize) -> &[i64] {
        match self {
            AnyProfile::Tree(p) => p.sample(i).1,
            AnyProfile::Flat(p) => p.sample(i).1,
        }
    }

    fn labels(&self, i: usize) -> SampleLabels<'_> {
        match self {
            AnyProfile::Tree(p) => (p.sample_labels(i), p.sample_str_labels(i)),
            AnyProfile::Flat(p) => (p.sample_labels(i), p.sample_str_labels(i)),
        }
    }

    fn unit(&self, key: StringId) -> Option<StringId> {
        match self {
            AnyProfile::Tree(p) => p.num_label_unit(key),
            AnyProfile::Flat(p) => p.num_label_unit(key),
        }
    }

    fn header(&self, opts: &MergeOptions) -> Result<(Header, Vec<usize>)> {
        match self {
            AnyProfile::Tree(p) => Header::of(&p.meta, &p.sample_types, p.default_sample_type, opts),
            AnyProfile::Flat(p) => Header::of(&p.meta, &p.sample_types, p.default_sample_type, opts),
        }
    }
}

impl Merger {
    /// An empty accumulator with `sides` value sets per sample: 1 for a merge, 2 for a diff
    /// (side 0 the base, side 1 the new profile).
    pub fn new(opts: MergeOptions, sides: usize) -> Merger {
        let mut label_sets = Vec::new();
        let mut label_index = HashMap::default();
        let empty: Box<[MLabel]> = Box::new([]);
        label_sets.push(empty.clone());
        label_index.insert(empty, 0);
        Merger {
            opts,
            sides: sides.max(1),
            header: None,
            strings: StringTable::default(),
            maps: Vec::new(),
            map_index: HashMap::default(),
            frames: Vec::new(),
            frame_index: HashMap::default(),
            stacks: SeqIndex::default(),
            label_sets,
            label_index,
            first_slot: Vec::new(),
            next_slot: Vec::new(),
            keys: Vec::new(),
            values: Vec::new(),
            memo: None,
        }
    }

    /// Number of profiles added so far (through this accumulator and those it absorbed).
    pub fn profiles(&self) -> usize {
        self.header.as_ref().map_or(0, |h| h.profiles)
    }

    /// Number of distinct (stack, labels) samples held.
    pub fn sample_count(&self) -> usize {
        self.keys.len()
    }

    fn width(&self) -> usize {
        self.header.as_ref().map_or(0, |h| h.columns.len()) * self.sides
    }

    /// Adds a profile to side 0. `annotate` bakes ART annotations into frame names (for profiles
    /// decoded from traces and DDM captures; not for pprof inputs, whose names carry them
    /// already, nor for profiles that a merge made).
    pub fn add(&mut self, profile: &Profile, annotate: bool) -> Result<()> {
        self.add_any(AnyProfile::Tree(profile), 0, annotate)
    }

    /// Adds a profile whose stacks are frame lists (a decoded pprof file) to side 0.
    pub fn add_flat(&mut self, profile: &FlatProfile, annotate: bool) -> Result<()> {
        self.add_any(AnyProfile::Flat(profile), 0, annotate)
    }

    /// Adds a profile to side `side` (see [`Merger::new`]).
    pub fn add_any(&mut self, profile: AnyProfile<'_>, side: usize, annotate: bool) -> Result<()> {
        if side >= self.sides {
            return Err(Error::new(ErrorKind::Usage, format!("side {side} of a merge with {} sides", self.sides)));
        }
        let (h, cols) = profile.header(&self.opts)?;
        let scale = self.merge_header(h)?;
        if profile.sample_count() == 0 {
            return Ok(());
        }
        let tables = Arc::clone(profile.tables());
        let reuse = self.memo.as_ref().is_some_and(|m| Arc::ptr_eq(&m.tables, &tables) && m.annotate == annotate);
        if !reuse {
            self.memo = Some(Memo::new(Arc::clone(&tables), annotate));
        }
        let mut memo = self.memo.take().expect("a memo");
        if let AnyProfile::Tree(_) = profile {
            if memo.nodes.len() < tables.stack_count() {
                memo.nodes.resize(tables.stack_count(), UNSET);
                if annotate {
                    memo.states.resize(tables.stack_count(), AnnotationState::Initial);
                }
            }
        }
        let ncols = cols.len();
        let width = self.width();
        if let AnyProfile::Flat(p) = profile {
            // At most this much more (as much more for the first input).
            let n = p.sample_count();
            self.stacks.reserve(n, p.all_frames().len());
            self.keys.reserve(n);
            self.next_slot.reserve(n);
            self.values.reserve(n * width);
        }
        let offset = side * ncols;
        let mut vals = vec![0i64; ncols];
        let mut path: Vec<StackId> = Vec::new();
        let mut seq: Vec<u32> = Vec::new();
        let mut labels: Vec<MLabel> = Vec::new();
        // Samples go in batches: first their stacks in merged frames and their hashes, with
        // the index slot of each fetched early, then the lookups, so that the cache misses of
        // a batch overlap.
        const BATCH: usize = 64;
        let mut batch: Vec<(usize, usize, usize, u64)> = Vec::with_capacity(BATCH);
        let count = profile.sample_count();
        let mut first = 0;
        while first < count {
            let last = (first + BATCH).min(count);
            seq.clear();
            batch.clear();
            for i in first..last {
                let values = profile.values(i);
                if cols.iter().zip(&scale).all(|(&src, &f)| scale_value(values[src], f) == 0) {
                    continue;
                }
                let at = seq.len();
                match profile {
                    AnyProfile::Tree(p) => self.tree_stack(&mut memo, p.sample(i).0, &mut path, &mut seq),
                    AnyProfile::Flat(p) => self.flat_stack(&mut memo, p.sample(i).0, &mut seq),
                }
                let h = seq_hash(&seq[at..]);
                self.stacks.prefetch_slot(h);
                batch.push((i, at, seq.len(), h));
            }
            for &(i, at, end, h) in &batch {
                let stack = self.stacks.intern_hashed(&seq[at..end], h);
                let values = profile.values(i);
                for (c, &src) in cols.iter().enumerate() {
                    vals[c] = scale_value(values[src], scale[c]);
                }
                labels.clear();
                let (num, strs) = profile.labels(i);
                for &(k, n) in num {
                    let unit = profile.unit(k).map_or(StringId::EMPTY, |u| self.string(&mut memo, &tables, u));
                    labels.push(MLabel::Num(self.string(&mut memo, &tables, k), n, unit));
                }
                for &(k, v) in strs {
                    labels.push(MLabel::Str(self.string(&mut memo, &tables, k), self.string(&mut memo, &tables, v)));
                }
                let ls = self.label_set(&mut labels);
                let slot = self.slot(stack, ls, width);
                let dst = &mut self.values[slot * width + offset..slot * width + offset + ncols];
                for (d, v) in dst.iter_mut().zip(&vals) {
                    *d = d.saturating_add(*v);
                }
            }
            first = last;
        }
        self.memo = Some(memo);
        Ok(())
    }

    /// The merged frames of a tree stack, leaf first; each node's frame (and annotation) is
    /// worked out once.
    fn tree_stack(&mut self, memo: &mut Memo, stack: StackId, path: &mut Vec<StackId>, seq: &mut Vec<u32>) {
        let tables = Arc::clone(&memo.tables);
        path.clear();
        let mut cur = Some(stack);
        while let Some(c) = cur {
            path.push(c);
            cur = tables.stack_node(c).parent;
        }
        let mut state = AnnotationState::Initial;
        for &c in path.iter().rev() {
            let n = c.0 as usize;
            if memo.nodes[n] == UNSET {
                let frame = tables.stack_node(c).frame;
                let ann = if memo.annotate {
                    let (next, a) = annotate_with(state, memo.classes[frame.0 as usize]);
                    memo.states[n] = next;
                    a
                } else {
                    Annotation::None
                };
                memo.nodes[n] = self.frame(memo, frame, ann);
            }
            if memo.annotate {
                state = memo.states[n];
            }
        }
        seq.extend(path.iter().map(|c| memo.nodes[c.0 as usize]));
    }

    /// The merged frames of a frame list (leaf first).
    fn flat_stack(&mut self, memo: &mut Memo, frames: &[FrameId], seq: &mut Vec<u32>) {
        if memo.annotate {
            let base = seq.len();
            seq.resize(base + frames.len(), 0);
            let mut state = AnnotationState::Initial;
            for (k, &f) in frames.iter().enumerate().rev() {
                let (next, a) = annotate_with(state, memo.classes[f.0 as usize]);
                state = next;
                seq[base + k] = self.frame(memo, f, a);
            }
        } else {
            for &f in frames {
                let m = memo.frames[f.0 as usize];
                seq.push(if m != UNSET { m } else { self.frame(memo, f, Annotation::None) });
            }
        }
    }

    /// Merges a header in; returns the factors for the incoming values.
    fn merge_header(&mut self, h: Header) -> Result<Vec<i64>> {
        let by_name = self.opts.sample_types.is_none();
        match &mut self.header {
            None => {
                let n = h.columns.len();
                self.header = Some(h);
                Ok(vec![1; n])
            }
            Some(mine) => {
                let (theirs, rescale) = mine.absorb(h, by_name)?;
                if rescale.iter().any(|&f| f != 1) {
                    let ncols = rescale.len();
                    for (i, v) in self.values.iter_mut().enumerate() {
                        *v = scale_value(*v, rescale[i % ncols]);
                    }
                }
                Ok(theirs)
            }
        }
    }

    fn slot(&mut self, stack: u32, ls: u32, width: usize) -> usize {
        let st = stack as usize;
        if self.first_slot.len() <= st {
            self.first_slot.resize(self.stacks.len().max(st + 1), UNSET);
        }
        let mut s = self.first_slot[st];
        while s != UNSET {
            if self.keys[s as usize] as u32 == ls {
                return s as usize;
            }
            s = self.next_slot[s as usize];
        }
        let slot = u32::try_from(self.keys.len()).expect("fewer than 2^32 samples");
        self.keys.push((u64::from(stack) << 32) | u64::from(ls));
        self.next_slot.push(self.first_slot[st]);
        self.first_slot[st] = slot;
        self.values.resize(self.values.len() + width, 0);
        slot as usize
    }

    fn label_set(&mut self, labels: &mut [MLabel]) -> u32 {
        if labels.is_empty() {
            return 0;
        }
        labels.sort_unstable();
        if let Some(&id) = self.label_index.get(&*labels) {
            return id;
        }
        let id = u32::try_from(self.label_sets.len()).expect("fewer than 2^32 label sets");
        let b: Box<[MLabel]> = labels.into();
        self.label_sets.push(b.clone());
        self.label_index.insert(b, id);
        id
    }

    fn string(&mut self, memo: &mut Memo, tables: &Tables, id: StringId) -> StringId {
        if id.is_empty() {
            return id;
        }
        match memo.strings.get(id.0 as usize) {
            Some(&s) if s != UNSET => StringId(s),
            Some(_) => {
                let s = self.strings.intern(tables.strings.get(id));
                memo.strings[id.0 as usize] = s.0;
                s
            }
            None => self.strings.intern(tables.strings.get(id)),
        }
    }

    fn mapping(&mut self, memo: &mut Memo, tables: &Tables, id: MappingId) -> (u32, u64, u64) {
        let i = id.0 as usize;
        if memo.mappings[i].0 != UNSET {
            return memo.mappings[i];
        }
        let m = tables.mapping(id);
        let path = self.string(memo, tables, m.path);
        let size = m.end.saturating_sub(m.start);
        let key = MapKey {
            build_id: m.build_id.clone(),
            path: if m.build_id.is_empty() { path } else { StringId::EMPTY },
            offset: m.exact_offset,
            size: round_4k(size),
        };
        let merged = self.intern_map(MMap { key, path, start: m.start, size });
        memo.mappings[i] = (merged, m.start, m.end);
        memo.mappings[i]
    }

    fn intern_map(&mut self, m: MMap) -> u32 {
        if let Some(&id) = self.map_index.get(&m.key) {
            let cur = &mut self.maps[id as usize];
            cur.start = cur.start.min(m.start);
            cur.size = cur.size.max(m.size);
            if m.path != cur.path && self.strings.get(m.path) < self.strings.get(cur.path) {
                cur.path = m.path;
            }
            return id;
        }
        let id = u32::try_from(self.maps.len()).expect("fewer than 2^32 mappings");
        self.map_index.insert(m.key.clone(), id);
        self.maps.push(m);
        id
    }

    fn intern_frame(&mut self, f: MFrame) -> u32 {
        if let Some(&id) = self.frame_index.get(&f) {
            return id;
        }
        let id = u32::try_from(self.frames.len()).expect("fewer than 2^32 frames");
        self.frames.push(f.clone());
        self.frame_index.insert(f, id);
        id
    }

    fn frame(&mut self, memo: &mut Memo, fid: FrameId, ann: Annotation) -> u32 {
        if ann == Annotation::None {
            let m = memo.frames[fid.0 as usize];
            if m != UNSET {
                return m;
            }
        } else if let Some(&m) = memo.annotated_frames.get(&(fid.0, ann)) {
            return m;
        }
        let tables = Arc::clone(&memo.tables);
        let f = tables.frame(fid);
        let (mapping, abs, addr) = match f.mapping {
            Some(m) => {
                let (id, start, end) = self.mapping(memo, &tables, m);
                if f.rel_pc >= start && f.rel_pc < end {
                    (Some(id), true, f.rel_pc - start)
                } else {
                    (Some(id), false, f.rel_pc)
                }
            }
            None => (None, false, f.rel_pc),
        };
        let suffix = match ann {
            Annotation::None => String::new(),
            a => format!(" [{}]", a.label()),
        };
        let shown = |this: &mut Merger, memo: &mut Memo, name: StringId| -> StringId {
            if name.is_empty() {
                return name;
            }
            if suffix.is_empty() {
                return this.string(memo, &tables, name);
            }
            this.strings.intern(&format!("{}{suffix}", tables.strings.get(name)))
        };
        let mut lines: Vec<Line> = Vec::with_capacity(f.lines.len());
        for l in &f.lines {
            lines.push(Line {
                function: shown(self, memo, l.function),
                system_name: self.string(memo, &tables, l.system_name),
                file: self.string(memo, &tables, l.file),
                line: l.line,
                column: l.column,
            });
        }
        let (name, raw) = if lines.len() == 1 && lines[0].file.is_empty() && lines[0].line == 0 && lines[0].column == 0
        {
            let l = lines.pop().expect("one line");
            (l.function, l.system_name)
        } else if lines.is_empty() {
            (shown(self, memo, f.name), self.string(memo, &tables, f.raw_name))
        } else {
            (StringId::EMPTY, StringId::EMPTY)
        };
        let id = self.intern_frame(MFrame { mapping, abs, addr, name, raw, lines: lines.into() });
        if ann == Annotation::None {
            memo.frames[fid.0 as usize] = id;
        } else {
            memo.annotated_frames.insert((fid.0, ann), id);
        }
        id
    }

    /// Merges another accumulator into this one (its samples, tables and header).
    pub fn absorb(&mut self, mut other: Merger) -> Result<()> {
        if other.sides != self.sides {
            return Err(Error::new(ErrorKind::Usage, "merging accumulators with different numbers of sides"));
        }
        let Some(h) = other.header.take() else { return Ok(()) };
        if self.header.is_none() {
            other.header = Some(h);
            other.memo = None;
            *self = other;
            return Ok(());
        }
        let scale = self.merge_header(h)?;
        let width = self.width();
        let ncols = width / self.sides;
        let mut clock = crate::timing::Phases::start("absorb");
        let mut strings = vec![UNSET; other.strings.len()];
        let mut s = |this: &mut Merger, id: StringId| -> StringId {
            if id.is_empty() {
                return id;
            }
            let slot = &mut strings[id.0 as usize];
            if *slot == UNSET {
                *slot = this.strings.intern(other.strings.get(id)).0;
            }
            StringId(*slot)
        };
        let mut maps = Vec::with_capacity(other.maps.len());
        for m in &other.maps {
            let key = MapKey { path: s(self, m.key.path), ..m.key.clone() };
            let mm = MMap { key, path: s(self, m.path), start: m.start, size: m.size };
            maps.push(self.intern_map(mm));
        }
        let mut frames = Vec::with_capacity(other.frames.len());
        for f in &other.frames {
            let lines: Vec<Line> = f
                .lines
                .iter()
                .map(|l| Line {
                    function: s(self, l.function),
                    system_name: s(self, l.system_name),
                    file: s(self, l.file),
                    line: l.line,
                    column: l.column,
                })
                .collect();
            let mf = MFrame {
                mapping: f.mapping.map(|m| maps[m as usize]),
                abs: f.abs,
                addr: f.addr,
                name: s(self, f.name),
                raw: s(self, f.raw),
                lines: lines.into(),
            };
            frames.push(self.intern_frame(mf));
        }
        clock.done("frames");
        // The other's stacks in this one's frames (translated in place: `other` is consumed),
        // with their hashes, in parallel; then interned with the slot of the stack some way
        // ahead (and the stack it may equal) fetched early.
        use rayon::prelude::*;
        other.stacks.arena.par_chunks_mut(1 << 16).for_each(|chunk| {
            for f in chunk {
                *f = frames[*f as usize];
            }
        });
        let n = other.stacks.len();
        let hashes: Vec<u64> = (0..n as u32).into_par_iter().map(|id| seq_hash(other.stacks.get(id))).collect();
        clock.done("hash stacks");
        let mut stacks: Vec<u32> = Vec::with_capacity(n);
        self.stacks.reserve(n, other.stacks.arena.len());
        for id in 0..n {
            if id + 16 < n {
                self.stacks.prefetch_slot(hashes[id + 16]);
            }
            if id + 8 < n {
                self.stacks.prefetch_match(hashes[id + 8]);
            }
            stacks.push(self.stacks.intern_hashed(other.stacks.get(id as u32), hashes[id]));
        }
        clock.done("intern stacks");
        let mut sets = Vec::with_capacity(other.label_sets.len());
        let mut buf = Vec::new();
        for set in &other.label_sets {
            buf.clear();
            for l in set.iter() {
                buf.push(match *l {
                    MLabel::Num(k, n, u) => MLabel::Num(s(self, k), n, s(self, u)),
                    MLabel::Str(k, v) => MLabel::Str(s(self, k), s(self, v)),
                });
            }
            sets.push(self.label_set(&mut buf));
        }
        for (i, &key) in other.keys.iter().enumerate() {
            let stack = stacks[(key >> 32) as usize];
            let ls = sets[(key & 0xffff_ffff) as usize];
            let slot = self.slot(stack, ls, width);
            let src = &other.values[i * width..(i + 1) * width];
            for (j, (d, v)) in self.values[slot * width..(slot + 1) * width].iter_mut().zip(src).enumerate() {
                *d = d.saturating_add(scale_value(*v, scale[j % ncols]));
            }
        }
        clock.done("samples");
        Ok(())
    }

    /// The stacks of the samples in `slots` (in that order, one after the other), with every
    /// frame translated through `out`, and each sample's span (start, length) in them. Filled
    /// in parallel, a chunk of samples per task, the stacks some way ahead fetched early.
    fn gather_stacks(&self, slots: &[u32], out: &[u32]) -> (Vec<u32>, Vec<(u32, u32)>) {
        use rayon::prelude::*;
        const CHUNK: usize = 4096;
        let stack_of = |i: u32| self.stacks.spans[(self.keys[i as usize] >> 32) as usize];
        let lens: Vec<u32> = slots.par_iter().map(|&i| stack_of(i).1).collect();
        let mut spans = Vec::with_capacity(slots.len());
        let mut end: usize = 0;
        for &l in &lens {
            spans.push((u32::try_from(end).expect("fewer than 2^32 frames in samples"), l));
            end += l as usize;
        }
        assert!(u32::try_from(end).is_ok(), "fewer than 2^32 frames in samples");
        // (Zeroed by the allocator: pages are touched first by the tasks that fill them.)
        let mut frames = vec![0u32; end];
        let mut pieces = Vec::with_capacity(slots.len().div_ceil(CHUNK));
        let mut rest = frames.as_mut_slice();
        for (c, chunk) in slots.chunks(CHUNK).enumerate() {
            let len: usize = lens[c * CHUNK..c * CHUNK + chunk.len()].iter().map(|&l| l as usize).sum();
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            pieces.push((chunk, head));
            rest = tail;
        }
        let arena = &self.stacks.arena;
        pieces.into_par_iter().for_each(|(chunk, dst)| {
            use crate::model::tables::prefetch;
            let mut at = 0;
            for (n, &i) in chunk.iter().enumerate() {
                if let Some(&ahead) = chunk.get(n + 16) {
                    prefetch(&self.keys[ahead as usize]);
                }
                if let Some(&ahead) = chunk.get(n + 8) {
                    prefetch(&self.stacks.spans[(self.keys[ahead as usize] >> 32) as usize]);
                }
                if let Some(&ahead) = chunk.get(n + 4) {
                    let (start, len) = stack_of(ahead);
                    for line in arena[start as usize..start as usize + len as usize].chunks(16) {
                        prefetch(&line[0]);
                    }
                }
                let (start, len) = stack_of(i);
                let src = &arena[start as usize..start as usize + len as usize];
                for (d, &f) in dst[at..at + src.len()].iter_mut().zip(src) {
                    *d = out[f as usize];
                }
                at += src.len();
            }
        });
        (frames, spans)
    }

    /// The merged profile (side 0), in canonical order.
    pub fn finish(self) -> Result<FlatProfile> {
        Ok(self.finish_sides()?.swap_remove(0))
    }

    /// One profile per side, sharing one set of tables, everything in canonical order (see the
    /// module docs): the same inputs give the same profiles whatever the order of merging.
    pub fn finish_sides(self) -> Result<Vec<FlatProfile>> {
        let Some(header) = self.header.clone() else {
            return Err(Error::new(ErrorKind::NoData, "nothing to merge: no profile was given"));
        };
        let width = self.width();
        let ncols = header.columns.len();
        let sides = self.sides;
        let mut clock = crate::timing::Phases::start("finish");
        let s = |id: StringId| self.strings.get(id);

        // Ranks by content: mappings, frames, then stacks (as lists of frame ranks).
        let mut map_order: Vec<u32> = (0..self.maps.len() as u32).collect();
        map_order.sort_by(|&a, &b| {
            let (x, y) = (&self.maps[a as usize], &self.maps[b as usize]);
            x.key
                .build_id
                .cmp(&y.key.build_id)
                .then_with(|| s(x.key.path).cmp(s(y.key.path)))
                .then(x.key.offset.cmp(&y.key.offset))
                .then(x.key.size.cmp(&y.key.size))
        });
        let mut map_rank = vec![0u32; self.maps.len()];
        for (r, &m) in map_order.iter().enumerate() {
            map_rank[m as usize] = r as u32;
        }
        let mut frame_order: Vec<u32> = (0..self.frames.len() as u32).collect();
        frame_order.sort_by(|&a, &b| {
            let (x, y) = (&self.frames[a as usize], &self.frames[b as usize]);
            x.mapping
                .map(|m| map_rank[m as usize])
                .cmp(&y.mapping.map(|m| map_rank[m as usize]))
                .then(x.abs.cmp(&y.abs))
                .then(x.addr.cmp(&y.addr))
                .then_with(|| s(x.name).cmp(s(y.name)))
                .then_with(|| s(x.raw).cmp(s(y.raw)))
                .then_with(|| {
                    let key = |l: &Line| (s(l.function), s(l.system_name), s(l.file), l.line, l.column);
                    x.lines.iter().map(key).cmp(y.lines.iter().map(key))
                })
        });
        clock.done("sort frames");
        let mut frame_rank = vec![0u32; self.frames.len()];
        for (r, &f) in frame_order.iter().enumerate() {
            frame_rank[f as usize] = r as u32;
        }
        // Stacks are ordered by a hash of their content (frame ranks), then by the content
        // itself: any order that depends on content alone will do, and this one sorts
        // integers rather than lists.
        let ranked_stack = |id: u32| self.stacks.get(id).iter().map(|&f| frame_rank[f as usize]);
        use rayon::prelude::*;
        let mut by_hash: Vec<(u64, u32)> = (0..self.stacks.len() as u32)
            .into_par_iter()
            .map(|id| {
                let mut h: u64 = 0x243f_6a88_85a3_08d3;
                for r in ranked_stack(id) {
                    h = (h.rotate_left(5) ^ u64::from(r)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                }
                (h, id)
            })
            .collect();
        by_hash.par_sort_unstable();
        // Stacks with equal hashes (rare) in the order of their contents.
        let mut i = 0;
        while i < by_hash.len() {
            let j = i + by_hash[i..].iter().take_while(|x| x.0 == by_hash[i].0).count();
            if j - i > 1 {
                by_hash[i..j].sort_by(|a, b| ranked_stack(a.1).cmp(ranked_stack(b.1)));
            }
            i = j;
        }
        let mut stack_rank = vec![0u32; self.stacks.len()];
        for (r, &(_, st)) in by_hash.iter().enumerate() {
            stack_rank[st as usize] = r as u32;
        }
        drop(by_hash);
        clock.done("sort stacks");
        let label_key = |l: &MLabel| match *l {
            MLabel::Num(k, v, u) => (s(k), 0u8, "", v, s(u)),
            MLabel::Str(k, v) => (s(k), 1u8, s(v), 0, ""),
        };
        let mut set_order: Vec<u32> = (0..self.label_sets.len() as u32).collect();
        set_order.sort_by(|&a, &b| {
            let (x, y) = (&self.label_sets[a as usize], &self.label_sets[b as usize]);
            let mut xs: Vec<_> = x.iter().map(label_key).collect();
            let mut ys: Vec<_> = y.iter().map(label_key).collect();
            xs.sort();
            ys.sort();
            xs.cmp(&ys)
        });
        let mut set_rank = vec![0u32; self.label_sets.len()];
        for (r, &l) in set_order.iter().enumerate() {
            set_rank[l as usize] = r as u32;
        }
        // Samples with a value, by (stack rank, label set rank): one key each.
        let mut keyed: Vec<(u64, u32)> = (0..self.keys.len() as u32)
            .into_par_iter()
            .filter(|&i| self.values[i as usize * width..(i as usize + 1) * width].iter().any(|&v| v != 0))
            .map(|i| {
                let k = self.keys[i as usize];
                let rank =
                    (u64::from(stack_rank[(k >> 32) as usize]) << 32) | u64::from(set_rank[(k & 0xffff_ffff) as usize]);
                (rank, i)
            })
            .collect();
        keyed.par_sort_unstable();
        let order: Vec<u32> = keyed.par_iter().map(|x| x.1).collect();
        drop(keyed);

        clock.done("sort samples");
        // The output tables: labels first, then frames (with their mappings) in rank order.
        let mut out = Tables::default();
        let mut out_maps = vec![None::<MappingId>; self.maps.len()];
        let mut out_str = vec![UNSET; self.strings.len()];
        let mut os = |out: &mut Tables, id: StringId| -> StringId {
            if id.is_empty() {
                return id;
            }
            let slot = &mut out_str[id.0 as usize];
            if *slot == UNSET {
                *slot = out.strings.intern(s(id)).0;
            }
            StringId(*slot)
        };
        let columns: Vec<ValueType> = header
            .columns
            .iter()
            .map(|c| {
                let name = match (c.agreed, go_name(c.kind)) {
                    (false, Some(g)) => g.to_owned(),
                    _ => c.name.clone(),
                };
                ValueType { name, unit: c.unit.clone(), kind: c.kind }
            })
            .collect();
        let meta = ProfileMeta {
            title: Some(match header.profiles {
                1 => header.first.clone(),
                k => format!("merge of {k} profiles"),
            }),
            changed: true,
            sampling_interval: header
                .period
                .as_ref()
                .filter(|p| p.name == "space" && p.unit == "bytes")
                .and_then(|p| u64::try_from(p.value).ok()),
            period: header.period.clone(),
            time_nanos: header.time_nanos,
            duration_nanos: header.duration_nanos,
            comments: header.comments.iter().cloned().collect(),
            flags: header.flags.clone(),
            ..Default::default()
        };
        let default = header.defaults.iter().next().copied().unwrap_or(ncols.saturating_sub(1));
        // Labels, in the output's strings.
        let mut units: Vec<(StringId, StringId)> = Vec::new();
        type Labels = (Vec<(StringId, i64)>, Vec<(StringId, StringId)>);
        let mut set_labels: Vec<Option<Labels>> = vec![None; self.label_sets.len()];
        for &i in &order {
            let ls = (self.keys[i as usize] & 0xffff_ffff) as usize;
            if set_labels[ls].is_some() {
                continue;
            }
            let mut sorted: Vec<&MLabel> = self.label_sets[ls].iter().collect();
            sorted.sort_by(|a, b| label_key(a).cmp(&label_key(b)));
            let mut num = Vec::new();
            let mut strs = Vec::new();
            for l in sorted {
                match *l {
                    MLabel::Num(k, v, u) => {
                        let key = os(&mut out, k);
                        if !u.is_empty() && !units.iter().any(|x| x.0 == key) {
                            units.push((key, os(&mut out, u)));
                        }
                        num.push((key, v));
                    }
                    MLabel::Str(k, v) => strs.push((os(&mut out, k), os(&mut out, v))),
                }
            }
            set_labels[ls] = Some((num, strs));
        }
        // Output frames are numbered in rank order (frames of live samples only), so that every
        // stack is translated in one pass over the stacks in storage order; the sorted samples
        // then only copy their translated stacks.
        let mut live_stack = vec![false; self.stacks.len()];
        for &i in &order {
            live_stack[(self.keys[i as usize] >> 32) as usize] = true;
        }
        let nframes = self.frames.len();
        let used = live_stack
            .par_chunks(1 << 16)
            .enumerate()
            .fold(
                || vec![false; nframes],
                |mut used, (c, chunk)| {
                    for (k, &live) in chunk.iter().enumerate() {
                        if live {
                            for &f in self.stacks.get((c * (1 << 16) + k) as u32) {
                                used[f as usize] = true;
                            }
                        }
                    }
                    used
                },
            )
            .reduce(
                || vec![false; nframes],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x |= y;
                    }
                    a
                },
            );
        let mut out_frames = vec![FrameId(u32::MAX); self.frames.len()];
        for &fi in &frame_order {
            let fi = fi as usize;
            if !used[fi] {
                continue;
            }
            let f = &self.frames[fi];
            let mut start = 0;
            let mapping = f.mapping.map(|m| {
                let mm = &self.maps[m as usize];
                start = mm.start;
                *out_maps[m as usize].get_or_insert_with(|| {
                    let path = os(&mut out, mm.path);
                    out.intern_mapping(Mapping {
                        path,
                        build_id: mm.key.build_id.clone(),
                        start: mm.start,
                        end: mm.start.saturating_add(mm.size),
                        start_offset: 0,
                        exact_offset: mm.key.offset,
                        load_bias: 0,
                    })
                })
            });
            let lines = f
                .lines
                .iter()
                .map(|l| Line {
                    function: os(&mut out, l.function),
                    system_name: os(&mut out, l.system_name),
                    file: os(&mut out, l.file),
                    line: l.line,
                    column: l.column,
                })
                .collect();
            let frame = Frame {
                mapping,
                rel_pc: if f.abs { start.wrapping_add(f.addr) } else { f.addr },
                raw_name: os(&mut out, f.raw),
                name: os(&mut out, f.name),
                lines,
            };
            out_frames[fi] = out.intern_frame_exact(frame);
        }
        drop(used);
        drop(live_stack);
        clock.done("output frames");
        let out_frames: Vec<u32> = out_frames.into_iter().map(|f| f.0).collect();
        // Per side, its samples in sorted order (all of them for a merge), their stacks copied
        // in that order and translated to the output's frames, in parallel: the one pass that
        // reads the stacks out of storage order. Encoders then read the frames in order.
        let has_labels = self.label_sets.len() > 1;
        let tables = Arc::new(out);
        let mut profiles: Vec<FlatProfile> = Vec::with_capacity(sides);
        for side in 0..sides {
            let row = |i: u32| &self.values[i as usize * width + side * ncols..i as usize * width + (side + 1) * ncols];
            let picked: Vec<u32>;
            let samples: &[u32] = if sides > 1 {
                picked = order.iter().copied().filter(|&i| row(i).iter().any(|&x| x != 0)).collect();
                &picked
            } else {
                &order
            };
            let (frames, spans) = self.gather_stacks(samples, &out_frames);
            let mut values = Vec::with_capacity(samples.len() * ncols);
            for &i in samples {
                values.extend_from_slice(row(i));
            }
            let mut p = FlatProfile::from_spans(
                Arc::clone(&tables),
                meta.clone(),
                columns.clone(),
                frames.into_iter().map(FrameId).collect(),
                spans,
                values,
            );
            p.default_sample_type = default.min(ncols.saturating_sub(1));
            if has_labels {
                for (k, &i) in samples.iter().enumerate() {
                    let (num, strs) =
                        set_labels[(self.keys[i as usize] & 0xffff_ffff) as usize].as_ref().expect("filled above");
                    p.push_labels(k, num, strs);
                }
            }
            for &(k, u) in &units {
                p.set_num_label_unit(k, u);
            }
            profiles.push(p);
        }
        clock.done("gather stacks");
        Ok(profiles)
    }
}

fn round_4k(size: u64) -> u64 {
    size.saturating_add(0xfff) & !0xfff
}

/// Merges accumulators pairwise in parallel (rayon); the result is the same as absorbing
/// them one by one, in any order.
pub fn merge_tree(mut mergers: Vec<Merger>) -> Result<Option<Merger>> {
    match mergers.len() {
        0 => Ok(None),
        1 => Ok(mergers.pop()),
        n => {
            let right = mergers.split_off(n / 2);
            let (a, b) = rayon::join(|| merge_tree(mergers), || merge_tree(right));
            match (a?, b?) {
                (Some(mut a), Some(b)) => {
                    a.absorb(b)?;
                    Ok(Some(a))
                }
                (a, b) => Ok(a.or(b)),
            }
        }
    }
}

/// Merges profiles (each with its `annotate` flag, see [`Merger::add`]) into one, adding them
/// in parallel chunks and combining the accumulators pairwise.
pub fn merge_profiles(profiles: &[(Profile, bool)], opts: &MergeOptions) -> Result<FlatProfile> {
    use rayon::prelude::*;
    let merged = profiles
        .par_iter()
        .try_fold(
            || Merger::new(opts.clone(), 1),
            |mut m, (p, annotate)| {
                m.add(p, *annotate)?;
                Ok::<_, Error>(m)
            },
        )
        .try_reduce(
            || Merger::new(opts.clone(), 1),
            |mut a, b| {
                a.absorb(b)?;
                Ok(a)
            },
        )?;
    merged.finish()
}

/// The pprof form of a diff, as `go tool pprof -diff_base BASE NEW` builds it: NEW's samples
/// as they are, then BASE's with negated values and the string label `pprof::base` = `true`
/// (which pprof uses to take percentages of the base's total). Both profiles must come from
/// one [`Merger::finish_sides`]. With `normalize`, BASE's values of each type are first scaled
/// by NEW's total over BASE's total (rounded), so that the totals cancel out.
pub fn diff_pprof(base: &FlatProfile, new: &FlatProfile, normalize: bool) -> FlatProfile {
    let mut tables = (*new.tables).clone();
    let key = tables.strings.intern("pprof::base");
    let yes = tables.strings.intern("true");
    let factors = diff_factors(base, new, normalize);
    let mut meta = new.meta.clone();
    meta.title = Some("diff".to_owned());
    let mut out = FlatProfile::new(Arc::new(tables), meta, new.sample_types.clone());
    out.default_sample_type = new.default_sample_type;
    for &(k, u) in new.num_label_units() {
        out.set_num_label_unit(k, u);
    }
    for i in 0..new.sample_count() {
        let (frames, v) = new.sample(i);
        out.push_sample(frames, v, new.sample_labels(i), new.sample_str_labels(i));
    }
    let mut strs = Vec::new();
    let mut vals = Vec::new();
    for i in 0..base.sample_count() {
        let (frames, v) = base.sample(i);
        vals.clear();
        vals.extend(v.iter().zip(&factors).map(|(&x, &f)| -scaled(x, f)));
        if vals.iter().all(|&x| x == 0) {
            continue;
        }
        strs.clear();
        strs.extend_from_slice(base.sample_str_labels(i));
        strs.push((key, yes));
        out.push_sample(frames, &vals, base.sample_labels(i), &strs);
    }
    out
}

/// Per sample type, the factor that scales BASE to NEW's total (1 without `normalize`, or when
/// BASE's total is 0).
pub fn diff_factors(base: &FlatProfile, new: &FlatProfile, normalize: bool) -> Vec<f64> {
    (0..new.sample_types.len())
        .map(|i| {
            let (b, n) = (base.total(i), new.total(i));
            if normalize && b != 0 { n as f64 / b as f64 } else { 1.0 }
        })
        .collect()
}

/// `v` times `f`, rounded to the nearest integer (exact when `f` is 1).
pub fn scaled(v: i64, f: f64) -> i64 {
    if f == 1.0 { v } else { (v as f64 * f).round() as i64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_merge_to_the_finest() {
        assert_eq!(merge_units("bytes", "bytes"), Some(("bytes".to_owned(), 1, 1)));
        assert_eq!(merge_units("kilobytes", "bytes"), Some(("bytes".to_owned(), 1024, 1)));
        assert_eq!(merge_units("bytes", "MB"), Some(("bytes".to_owned(), 1, 1 << 20)));
        assert_eq!(merge_units("B", "bytes"), Some(("B".to_owned(), 1, 1)));
        assert_eq!(merge_units("ms", "nanoseconds"), Some(("nanoseconds".to_owned(), 1_000_000, 1)));
        assert_eq!(merge_units("bytes", "count"), None);
        assert_eq!(merge_units("bytes", "seconds"), None);
    }

    #[test]
    fn selectors_parse() {
        assert_eq!(TypeSelector::parse("unreleased-size"), TypeSelector::Kind(ValueKind::UnreleasedSize));
        assert_eq!(TypeSelector::parse("inuse_space"), TypeSelector::Name("inuse_space".to_owned()));
    }

    fn profile(names: &[&str], stacks: &[(&[&str], &[i64])]) -> Profile {
        let mut t = Tables::default();
        let mut ids = Vec::new();
        for (frames, _) in stacks {
            let fs: Vec<FrameId> = frames
                .iter()
                .map(|n| {
                    let s = t.strings.intern(n);
                    t.intern_frame(None, 0, s)
                })
                .collect();
            ids.push(t.intern_stack(&fs).unwrap());
        }
        let types = names.iter().map(|n| ValueType::new(n, "bytes", ValueKind::Other)).collect();
        let mut p = Profile::new(Arc::new(t), ProfileMeta { source: "x".into(), ..Default::default() }, types);
        for (id, (_, v)) in ids.iter().zip(stacks) {
            p.push_sample(*id, v);
        }
        p
    }

    #[test]
    fn merge_sums_identical_stacks_in_any_order() {
        let a = profile(&["v"], &[(&["main", "f"], &[3]), (&["main", "g"], &[4])]);
        let b = profile(&["v"], &[(&["main", "g"], &[10]), (&["main", "h"], &[1])]);
        let ab = merge_profiles(&[(a.clone(), false), (b.clone(), false)], &MergeOptions::default()).unwrap();
        let ba = merge_profiles(&[(b, false), (a, false)], &MergeOptions::default()).unwrap();
        assert_eq!(ab.total(0), 18);
        assert_eq!(ab.sample_count(), 3);
        let all = |p: &FlatProfile| -> Vec<(Vec<FrameId>, Vec<i64>)> {
            (0..p.sample_count()).map(|i| (p.sample(i).0.to_vec(), p.sample(i).1.to_vec())).collect()
        };
        assert_eq!(all(&ab), all(&ba));
    }

    #[test]
    fn mismatched_types_name_both_sides() {
        let a = profile(&["v"], &[(&["main"], &[3])]);
        let b = profile(&["w"], &[(&["main"], &[3])]);
        let e = merge_profiles(&[(a, false), (b, false)], &MergeOptions::default()).unwrap_err();
        assert!(e.to_string().contains("[w/bytes]") && e.to_string().contains("[v/bytes]"), "{e}");
    }
}
