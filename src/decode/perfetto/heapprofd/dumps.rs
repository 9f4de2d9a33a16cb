//! Dumps in the making: samples buffered until their chain ends, the cumulative series per
//! (pid, heap), and the rows and totals a dump's profile is built from.

use super::*;

/// A sample as buffered until its chain ends (absent counters are 0).
#[derive(Clone, Copy, Default, Debug)]
pub(in crate::decode::perfetto) struct RawSample {
    pub(in crate::decode::perfetto) callstack: u64,
    pub(in crate::decode::perfetto) alloc_bytes: u64,
    pub(in crate::decode::perfetto) freed_bytes: u64,
    pub(in crate::decode::perfetto) alloc_count: u64,
    pub(in crate::decode::perfetto) free_count: u64,
    pub(in crate::decode::perfetto) max_bytes: Option<u64>,
    pub(in crate::decode::perfetto) max_count: Option<u64>,
}

/// The samples of a dump as buffered until its chain ends, packed as varints (a flags byte
/// saying which of the `max` fields are present, then callstack, allocated and freed bytes,
/// allocation and free counts, and the present `max` fields): about a sixth of the memory of
/// [`RawSample`]s.
#[derive(Default)]
pub(in crate::decode::perfetto) struct PackedSamples {
    pub(super) bytes: Vec<u8>,
    len: usize,
}

impl PackedSamples {
    #[cfg(test)]
    pub(super) fn push(&mut self, s: RawSample) {
        Self::pack(&mut self.bytes, s);
        self.len += 1;
    }

    /// Appends `s` to `bytes` in the packed form.
    #[inline]
    pub(in crate::decode::perfetto) fn pack(bytes: &mut Vec<u8>, s: RawSample) {
        use prost::encoding::encode_varint;
        let flags = u8::from(s.max_bytes.is_some()) | (u8::from(s.max_count.is_some()) << 1);
        bytes.push(flags);
        for v in [s.callstack, s.alloc_bytes, s.freed_bytes, s.alloc_count, s.free_count] {
            encode_varint(v, bytes);
        }
        for v in [s.max_bytes, s.max_count].into_iter().flatten() {
            encode_varint(v, bytes);
        }
    }

    /// Appends `count` samples packed by [`PackedSamples::pack`] into `bytes`.
    pub(super) fn extend_packed(&mut self, bytes: &[u8], count: usize) {
        self.bytes.extend_from_slice(bytes);
        self.len += count;
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = RawSample> + '_ {
        Self::unpack(&self.bytes)
    }

    /// The samples packed in `bytes`.
    pub(in crate::decode::perfetto) fn unpack(bytes: &[u8]) -> impl Iterator<Item = RawSample> + '_ {
        let mut rest = bytes;
        std::iter::from_fn(move || {
            let (&flags, tail) = rest.split_first()?;
            rest = tail;
            let mut next = || prost::encoding::decode_varint(&mut rest).expect("varints we wrote");
            let mut s = RawSample {
                callstack: next(),
                alloc_bytes: next(),
                freed_bytes: next(),
                alloc_count: next(),
                free_count: next(),
                ..RawSample::default()
            };
            if flags & 1 != 0 {
                s.max_bytes = Some(next());
            }
            if flags & 2 != 0 {
                s.max_count = Some(next());
            }
            Some(s)
        })
    }
}

pub(super) struct PendingDump {
    pub(super) pid: u64,
    pub(super) heap: String,
    /// `ProcessHeapSamples.timestamp`, 0 when absent (as trace processor reads it): with pid
    /// and heap, what tells the dumps of one chain apart.
    pub(super) timestamp: u64,
    pub(super) start_timestamp: Option<u64>,
    pub(super) sampling_interval: Option<u64>,
    pub(super) orig_sampling_interval: Option<u64>,
    pub(super) flags: DumpFlags,
    pub(super) samples: PackedSamples,
}

#[derive(Default)]
pub(super) struct Chain {
    pub(super) active: bool,
    pub(super) first_offset: u64,
    pub(super) first_packet: u64,
    pub(super) dumps: Vec<PendingDump>,
    pub(super) inline: Inline,
    pub(super) missing_packets: u64,
    pub(super) dropped: bool,
}

#[derive(Default)]
pub(super) struct Sequence {
    pub(super) valid: bool,
    pub(super) generation: u32,
    pub(super) interned: Interned,
    pub(super) chain: Chain,
    pub(super) next_index: Option<u64>,
    pub(super) dropped_since_dump: bool,
}

/// Cumulative counters of one callstack entry.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Cum {
    pub(super) alloc_bytes: u64,
    pub(super) freed_bytes: u64,
    pub(super) alloc_count: u64,
    pub(super) free_count: u64,
}

pub(super) struct Entry {
    pub(super) stack: StackId,
    pub(super) cum: Cum,
}

/// State of one (pid, heap) series of dumps.
#[derive(Default)]
pub(super) struct Series {
    /// Entries of interned callstacks, by (sequence, generation), indexed by dense iid index.
    pub(super) dense: HashMap<(u32, u32), Vec<Entry>>,
    /// Entries of Android Q inline callstacks, by (sequence, iid, stack): the inline tables
    /// are scoped to one chain, so a later chain may define the same iid as another stack,
    /// whose counters are its own (trace processor keys cumulative counters by callsite).
    pub(super) inline: HashMap<(u32, u64, StackId), Entry>,
    pub(super) dumps: usize,
}

pub(super) const NO_STACK: StackId = StackId(u32::MAX);

/// A finished dump not yet handed to the sink: a later chain of the same (pid, heap) at the
/// same dump time still adds to it, until a chain of that series at another time (or the end
/// of the trace) closes it.
pub(super) struct Held {
    pub(super) key: (u64, String),
    /// Closed: no later chain can add to it.
    pub(super) done: bool,
    /// Whether the pid filter keeps it.
    pub(super) wanted: bool,
    /// Its entry in the report's `dumps`.
    pub(super) report: usize,
    pub(super) meta: ProfileMeta,
    /// The dump's rows, taken from its series when it was closed; `None` while it is open
    /// (the series' counters are its rows until a chain at another time changes them), so an
    /// open dump costs no memory of its own.
    pub(super) rows: Option<Rows>,
    /// Handed over early ([`Handover::Dump`] while still open); its report entry was filled
    /// then.
    pub(super) early: bool,
    /// Handed over early, then a later chain added to it: handed again ([`Handover::Again`])
    /// when it closes.
    pub(super) stale: bool,
}

/// A dump's rows in the form its profile takes them: per stack, in stack order, `width`
/// values (total count and size, then, with frees, unreleased count and size).
pub(super) struct Rows {
    pub(super) stacks: Vec<StackId>,
    pub(super) values: Vec<i64>,
    pub(super) width: usize,
}

/// A series' rows: per stack, the latest value of every entry, summed (entries of recycled
/// callstack ids land on the same stack), in stack order, `width` values per stack. Made
/// straight from the counters (sorted references to them), at their exact size.
pub(super) fn series_rows(series: &Series, width: usize) -> Rows {
    let mut refs: Vec<(StackId, &Cum)> = series
        .dense
        .values()
        .flatten()
        .chain(series.inline.values())
        .filter(|e| e.stack != NO_STACK && e.cum != Cum::default())
        .map(|e| (e.stack, &e.cum))
        .collect();
    refs.sort_unstable_by_key(|r| r.0);
    let distinct =
        refs.iter().zip(refs.iter().skip(1)).filter(|(a, b)| a.0 != b.0).count() + usize::from(!refs.is_empty());
    let mut rows = Rows { stacks: Vec::with_capacity(distinct), values: Vec::with_capacity(distinct * width), width };
    let mut i = 0;
    while i < refs.len() {
        let stack = refs[i].0;
        let mut c = *refs[i].1;
        i += 1;
        while i < refs.len() && refs[i].0 == stack {
            let b = refs[i].1;
            c.alloc_bytes += b.alloc_bytes;
            c.freed_bytes += b.freed_bytes;
            c.alloc_count += b.alloc_count;
            c.free_count += b.free_count;
            i += 1;
        }
        let vals = [
            sat(c.alloc_count),
            sat(c.alloc_bytes),
            sat(c.alloc_count) - sat(c.free_count),
            sat(c.alloc_bytes) - sat(c.freed_bytes),
        ];
        rows.stacks.push(stack);
        rows.values.extend_from_slice(&vals[..width]);
    }
    rows
}

/// The number of values per stack of a heap's profiles.
pub(super) fn width_of(heap: &str) -> usize {
    sample_types_for_heap(heap).len()
}

/// The totals of a dump's rows (a heap without frees has unreleased = total).
pub(super) fn totals_of(rows: &Rows) -> Totals {
    let mut t = Totals::default();
    for v in rows.values.chunks_exact(rows.width) {
        t.total_count += v[0];
        t.total_size += v[1];
        t.unreleased_count += if rows.width == 4 { v[2] } else { v[0] };
        t.unreleased_size += if rows.width == 4 { v[3] } else { v[1] };
    }
    t
}

/// Adds the flags of another chain of the same dump.
pub(super) fn merge_flags(a: &mut DumpFlags, b: &DumpFlags) {
    a.from_startup |= b.from_startup;
    a.rejected_concurrent |= b.rejected_concurrent;
    a.disconnected |= b.disconnected;
    a.buffer_overran |= b.buffer_overran;
    a.buffer_corrupted |= b.buffer_corrupted;
    a.hit_guardrail |= b.hit_guardrail;
    if b.client_error != 0 {
        a.client_error = b.client_error;
    }
    a.dump_at_max |= b.dump_at_max;
    a.previous_packet_dropped |= b.previous_packet_dropped;
    a.missing_packets += b.missing_packets;
    a.unresolved_samples += b.unresolved_samples;
    a.non_monotonic_samples += b.non_monotonic_samples;
    a.incomplete |= b.incomplete;
}
