//! A profile: sample types, samples over stacks, and what is known about where it came from.

use std::sync::Arc;

use serde::Serialize;

use super::stack::StackId;
use super::strings::StringId;
use super::tables::Tables;

/// What a sample value measures, independently of the label a format gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValueKind {
    /// Number of allocations made (cumulative).
    TotalCount,
    /// Bytes allocated (cumulative).
    TotalSize,
    /// Allocations not freed at the time of the dump.
    UnreleasedCount,
    /// Bytes not freed at the time of the dump.
    UnreleasedSize,
    /// Anything else.
    Other,
}

impl ValueKind {
    /// True for byte quantities.
    pub fn is_bytes(self) -> bool {
        matches!(self, ValueKind::TotalSize | ValueKind::UnreleasedSize)
    }
}

/// A sample type: the label and unit a format writes, plus what it means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValueType {
    /// Label, e.g. `Unreleased malloc size`.
    pub name: String,
    /// Unit, e.g. `bytes` or `count`.
    pub unit: String,
    /// Meaning.
    pub kind: ValueKind,
}

impl ValueType {
    /// A value type.
    pub fn new(name: &str, unit: &str, kind: ValueKind) -> Self {
        ValueType { name: name.to_owned(), unit: unit.to_owned(), kind }
    }
}

/// Everything a dump says about data that may be missing or wrong, plus how it was taken.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DumpFlags {
    /// Profiled from process start.
    pub from_startup: bool,
    /// Another session was already profiling this process; the dump is empty.
    pub rejected_concurrent: bool,
    /// The client disconnected during profiling.
    pub disconnected: bool,
    /// The shared-memory buffer overran: allocations were lost.
    pub buffer_overran: bool,
    /// The shared-memory buffer was corrupted.
    pub buffer_corrupted: bool,
    /// heapprofd stopped because of its CPU or memory guardrail.
    pub hit_guardrail: bool,
    /// Client error code: 0 none, 1 HIT_TIMEOUT, 2 INVALID_STACK_BOUNDS.
    pub client_error: u32,
    /// The dump holds the heap at its maximum (`dump_at_max`), not at the end.
    pub dump_at_max: bool,
    /// The producer reported dropped packets on this sequence before or during this dump.
    pub previous_packet_dropped: bool,
    /// Number of ProfilePackets missing from this dump's chain (index gaps).
    pub missing_packets: u64,
    /// Samples that were dropped because their callstack could not be resolved.
    pub unresolved_samples: u64,
    /// Samples that were dropped because their cumulative values went backwards.
    pub non_monotonic_samples: u64,
    /// The heap snapshot the profile was made from is incomplete (a Java heap graph with
    /// missing or unfinished packets, a truncated hprof file): objects and references may be
    /// missing.
    pub incomplete: bool,
}

impl DumpFlags {
    /// Names of the flags that mean data was lost or may be wrong.
    pub fn data_loss(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.rejected_concurrent {
            v.push("rejected_concurrent");
        }
        if self.disconnected {
            v.push("disconnected");
        }
        if self.buffer_overran {
            v.push("buffer_overran");
        }
        if self.buffer_corrupted {
            v.push("buffer_corrupted");
        }
        if self.hit_guardrail {
            v.push("hit_guardrail");
        }
        match self.client_error {
            0 => {}
            1 => v.push("client_error=HIT_TIMEOUT"),
            2 => v.push("client_error=INVALID_STACK_BOUNDS"),
            _ => v.push("client_error"),
        }
        if self.previous_packet_dropped {
            v.push("previous_packet_dropped");
        }
        if self.missing_packets > 0 {
            v.push("missing_packets");
        }
        if self.unresolved_samples > 0 {
            v.push("unresolved_samples");
        }
        if self.non_monotonic_samples > 0 {
            v.push("non_monotonic_samples");
        }
        if self.incomplete {
            v.push("incomplete");
        }
        v
    }
}

/// Where a profile came from and what it covers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProfileMeta {
    /// Name of the input (file path or `-`).
    pub source: String,
    /// Profiled process id, if known.
    pub pid: Option<u64>,
    /// Process name (argv\[0\]) from the trace's process tree, if known.
    pub process_name: Option<String>,
    /// Heap name (`libc.malloc`, `com.android.art`, a custom heap, or `unknown`).
    pub heap: String,
    /// 0-based position of this dump among the dumps of the same (pid, heap).
    pub dump_index: usize,
    /// Dump time in the trace clock (ns), when known.
    pub timestamp: Option<i64>,
    /// Dump time as the producer wrote it (CLOCK_MONOTONIC_COARSE ns for heapprofd).
    pub raw_timestamp: Option<u64>,
    /// True when `timestamp` was converted through a ClockSnapshot; false when it is raw.
    pub timestamp_converted: bool,
    /// Start of the window this dump covers (raw producer clock), when written.
    pub start_timestamp: Option<u64>,
    /// Effective sampling interval in bytes (0 = every allocation), when known.
    pub sampling_interval: Option<u64>,
    /// Configured sampling interval in bytes, when written.
    pub orig_sampling_interval: Option<u64>,
    /// False when no value changed since the previous dump of this (pid, heap).
    pub changed: bool,
    /// Flags and data-loss markers.
    pub flags: DumpFlags,
    /// What to call the profile instead of the process/heap/dump description (a pprof file, a
    /// merge of several inputs), when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// pprof `period_type` and `period`, when the input gave them (pprof inputs, merges).
    /// When `None`, pprof output derives them from `sampling_interval`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
    /// pprof `time_nanos`: wall-clock time of collection, when the input gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_nanos: Option<i64>,
    /// pprof `duration_nanos`, when the input gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_nanos: Option<i64>,
    /// Free-text comments carried over from the input (pprof `comment`), written after
    /// heapconv's own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<String>,
}

/// A sampling period with its type and unit, as pprof writes it (`period_type`, `period`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Period {
    /// What is sampled, e.g. `space`.
    pub name: String,
    /// Unit, e.g. `bytes`.
    pub unit: String,
    /// The period, in `unit`.
    pub value: i64,
}

impl ProfileMeta {
    /// A one-line description: "com.example.app (pid 10), heap libc.malloc, dump 1 at 100 ns",
    /// or the title when one is set.
    pub fn describe(&self) -> String {
        if let Some(t) = &self.title {
            return t.clone();
        }
        let mut s = String::new();
        match (&self.process_name, self.pid) {
            (Some(n), Some(p)) => s.push_str(&format!("{n} (pid {p})")),
            (None, Some(p)) => s.push_str(&format!("pid {p}")),
            (Some(n), None) => s.push_str(n),
            (None, None) => s.push_str("unknown process"),
        }
        s.push_str(&format!(", heap {}", self.heap));
        s.push_str(&format!(", dump {}", self.dump_index + 1));
        if let Some(t) = self.timestamp {
            s.push_str(&format!(" at {t} ns"));
            if !self.timestamp_converted {
                s.push_str(" (raw producer clock)");
            }
        }
        s
    }
}

/// What a profile says besides its samples, the same for a [`Profile`] and a
/// [`FlatProfile`](super::FlatProfile): where it came from, what its values measure, and which
/// of them to show first.
#[derive(Debug, Clone, Default)]
pub struct ProfileHeader {
    /// Where it came from.
    pub meta: ProfileMeta,
    /// What each value of a sample measures, in order.
    pub sample_types: Vec<ValueType>,
    /// Index into `sample_types` of the type viewers should show first.
    pub default_sample_type: usize,
}

impl ProfileHeader {
    /// A header with these sample types, the first of them the default.
    pub fn new(meta: ProfileMeta, sample_types: Vec<ValueType>) -> Self {
        ProfileHeader { meta, sample_types, default_sample_type: 0 }
    }
}

/// A profile: values per stack, with shared tables.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The tables that stack ids point into (shared by profiles of one input).
    pub tables: Arc<Tables>,
    /// Where it came from and what its values measure.
    pub header: ProfileHeader,
    stacks: Vec<StackId>,
    values: Vec<i64>,
    labels: LabelStore,
}

/// Optional labels per sample (pprof `Sample.label`): numeric (key, number) and string (key,
/// text) labels of sample i are `num[num_ends[i - 1]..num_ends[i]]` (and the same for
/// strings). The lists stay empty until a sample with labels is added, so profiles without
/// labels cost nothing. Units of numeric labels (`num_unit`) are kept per key.
#[derive(Debug, Clone, Default)]
pub(crate) struct LabelStore {
    num: Vec<(StringId, i64)>,
    num_ends: Vec<u32>,
    strs: Vec<(StringId, StringId)>,
    str_ends: Vec<u32>,
    // Sorted by key.
    units: Vec<(StringId, StringId)>,
}

impl LabelStore {
    /// Records the labels of sample `n` (the samples before it must have been recorded).
    pub(crate) fn push(&mut self, n: usize, num: &[(StringId, i64)], strs: &[(StringId, StringId)]) {
        push_labels(&mut self.num, &mut self.num_ends, n, num);
        push_labels(&mut self.strs, &mut self.str_ends, n, strs);
    }

    pub(crate) fn num(&self, i: usize) -> &[(StringId, i64)] {
        labels_of(&self.num, &self.num_ends, i)
    }

    pub(crate) fn strs(&self, i: usize) -> &[(StringId, StringId)] {
        labels_of(&self.strs, &self.str_ends, i)
    }

    pub(crate) fn any(&self) -> bool {
        !self.num.is_empty() || !self.strs.is_empty()
    }

    pub(crate) fn set_unit(&mut self, key: StringId, unit: StringId) {
        match self.units.binary_search_by_key(&key, |u| u.0) {
            Ok(i) => self.units[i].1 = unit,
            Err(i) => self.units.insert(i, (key, unit)),
        }
    }

    pub(crate) fn unit(&self, key: StringId) -> Option<StringId> {
        self.units.binary_search_by_key(&key, |u| u.0).ok().map(|i| self.units[i].1)
    }

    pub(crate) fn units(&self) -> &[(StringId, StringId)] {
        &self.units
    }
}

impl Profile {
    /// An empty profile with the given sample types.
    pub fn new(tables: Arc<Tables>, meta: ProfileMeta, sample_types: Vec<ValueType>) -> Self {
        Profile {
            tables,
            header: ProfileHeader::new(meta, sample_types),
            stacks: Vec::new(),
            values: Vec::new(),
            labels: LabelStore::default(),
        }
    }

    /// Takes the profile apart: tables, meta, sample types, default type, stacks and the flat
    /// values (one per sample type per sample). Sample labels are not among the parts: a
    /// profile put back together with [`Profile::from_parts`] has none.
    #[allow(clippy::type_complexity)]
    pub fn into_parts(self) -> (Arc<Tables>, ProfileMeta, Vec<ValueType>, usize, Vec<StackId>, Vec<i64>) {
        let ProfileHeader { meta, sample_types, default_sample_type } = self.header;
        (self.tables, meta, sample_types, default_sample_type, self.stacks, self.values)
    }

    /// Puts a profile together from [`Profile::into_parts`]'s pieces.
    pub fn from_parts(
        tables: Arc<Tables>,
        meta: ProfileMeta,
        sample_types: Vec<ValueType>,
        default_sample_type: usize,
        stacks: Vec<StackId>,
        values: Vec<i64>,
    ) -> Self {
        assert_eq!(stacks.len() * sample_types.len(), values.len(), "one value per sample type per sample");
        Profile {
            tables,
            header: ProfileHeader { meta, sample_types, default_sample_type },
            stacks,
            values,
            labels: LabelStore::default(),
        }
    }

    /// Adds a sample. `values` must have one entry per sample type.
    pub fn push_sample(&mut self, stack: StackId, values: &[i64]) {
        self.push_sample_with_labels(stack, values, &[]);
    }

    /// Adds a sample with numeric labels (key, value), keys interned in the profile's tables.
    /// `values` must have one entry per sample type.
    pub fn push_sample_with_labels(&mut self, stack: StackId, values: &[i64], labels: &[(StringId, i64)]) {
        self.push_sample_with_all_labels(stack, values, labels, &[]);
    }

    /// Adds a sample with numeric labels (key, number) and string labels (key, text), all
    /// interned in the profile's tables. `values` must have one entry per sample type.
    pub fn push_sample_with_all_labels(
        &mut self,
        stack: StackId,
        values: &[i64],
        labels: &[(StringId, i64)],
        str_labels: &[(StringId, StringId)],
    ) {
        assert_eq!(values.len(), self.header.sample_types.len(), "one value per sample type");
        self.labels.push(self.stacks.len(), labels, str_labels);
        self.stacks.push(stack);
        self.values.extend_from_slice(values);
    }

    /// True when some sample has labels (numeric or string).
    pub fn has_labels(&self) -> bool {
        self.labels.any()
    }

    /// The numeric labels (key, value) of sample `i`; empty for a sample without labels.
    pub fn sample_labels(&self, i: usize) -> &[(StringId, i64)] {
        self.labels.num(i)
    }

    /// The string labels (key, text) of sample `i`; empty for a sample without them.
    pub fn sample_str_labels(&self, i: usize) -> &[(StringId, StringId)] {
        self.labels.strs(i)
    }

    /// Sets the unit of the numeric labels with key `key` (pprof `num_unit`, e.g. `bytes`).
    pub fn set_num_label_unit(&mut self, key: StringId, unit: StringId) {
        self.labels.set_unit(key, unit);
    }

    /// The unit of the numeric labels with key `key`, when one was set.
    pub fn num_label_unit(&self, key: StringId) -> Option<StringId> {
        self.labels.unit(key)
    }

    /// All numeric label units, (key, unit), sorted by key id.
    pub fn num_label_units(&self) -> &[(StringId, StringId)] {
        self.labels.units()
    }

    /// Number of samples.
    pub fn sample_count(&self) -> usize {
        self.stacks.len()
    }

    /// Sample `i`: its stack and values.
    pub fn sample(&self, i: usize) -> (StackId, &[i64]) {
        let n = self.header.sample_types.len();
        (self.stacks[i], &self.values[i * n..(i + 1) * n])
    }

    /// All samples in order.
    pub fn samples(&self) -> impl ExactSizeIterator<Item = (StackId, &[i64])> + '_ {
        let n = self.header.sample_types.len().max(1);
        self.stacks.iter().copied().zip(self.values.chunks_exact(n))
    }

    /// Index of the first sample type of `kind`.
    pub fn value_index(&self, kind: ValueKind) -> Option<usize> {
        self.header.sample_types.iter().position(|t| t.kind == kind)
    }

    /// Sum of value `index` over all samples.
    pub fn total(&self, index: usize) -> i64 {
        saturating_sum(self.samples().map(|(_, v)| v[index]))
    }
}

/// Sums sample values, stopping at `i64::MAX` (or `i64::MIN`) instead of wrapping: a hostile or
/// absurd input (values past 2^63 in all) gets a pinned total, never a wrapped negative one.
pub fn saturating_sum(values: impl Iterator<Item = i64>) -> i64 {
    values.fold(0i64, i64::saturating_add)
}

/// Appends the labels of sample `n` to a label list and its ends (see [`Profile`]): the ends
/// stay empty until a sample has labels, so profiles without labels cost nothing.
fn push_labels<T: Copy>(labels: &mut Vec<T>, ends: &mut Vec<u32>, n: usize, new: &[T]) {
    let tracked = !new.is_empty() || !ends.is_empty();
    if !tracked {
        return;
    }
    if ends.len() < n {
        // The first labelled sample: the samples before it have no labels.
        ends.resize(n, 0);
    }
    labels.extend_from_slice(new);
    ends.push(u32::try_from(labels.len()).expect("fewer than 2^32 labels"));
}

fn labels_of<'a, T>(labels: &'a [T], ends: &[u32], i: usize) -> &'a [T] {
    if i >= ends.len() {
        return &[];
    }
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &labels[start..ends[i] as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_optional_per_sample() {
        let mut tables = Tables::default();
        let key = tables.strings.intern("thread");
        let f = tables.intern_frame(None, 0, StringId::EMPTY);
        let s = tables.intern_stack(&[f]).unwrap();
        let types = vec![ValueType::new("n", "count", ValueKind::TotalCount)];
        let mut first = Profile::new(Arc::new(tables.clone()), ProfileMeta::default(), types.clone());
        first.push_sample_with_labels(s, &[1], &[(key, 5)]);
        first.push_sample(s, &[1]);
        assert_eq!(first.sample_labels(0), &[(key, 5)]);
        assert_eq!(first.sample_labels(1), &[]);
        let mut p = Profile::new(Arc::new(tables), ProfileMeta::default(), types);
        p.push_sample(s, &[1]);
        assert!(!p.has_labels());
        assert!(p.sample_labels(0).is_empty());
        p.push_sample_with_labels(s, &[2], &[(key, 7), (key, 8)]);
        p.push_sample(s, &[3]);
        p.push_sample_with_labels(s, &[4], &[(key, 9)]);
        assert!(p.has_labels());
        assert_eq!(p.sample_labels(0), &[]);
        assert_eq!(p.sample_labels(1), &[(key, 7), (key, 8)]);
        assert_eq!(p.sample_labels(2), &[]);
        assert_eq!(p.sample_labels(3), &[(key, 9)]);
        assert_eq!(p.total(0), 10);
    }

    #[test]
    fn sums_saturate_instead_of_wrapping() {
        assert_eq!(saturating_sum([i64::MAX, 1, 5].into_iter()), i64::MAX);
        assert_eq!(saturating_sum([i64::MIN, -1].into_iter()), i64::MIN);
        assert_eq!(saturating_sum([40, 2].into_iter()), 42);
    }
}
