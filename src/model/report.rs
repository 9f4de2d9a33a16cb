//! What a decoder found in an input, beyond the profiles: the basis of `inspect` and of the
//! JSON summaries. Deterministic: maps are ordered, lists are in input order.

use std::collections::BTreeMap;

use serde::Serialize;

use super::profile::DumpFlags;

/// Something wrong or surprising in the input, with where it was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Byte offset of the packet (in the decompressed stream), when known.
    pub offset: Option<u64>,
    /// 0-based packet number, when known.
    pub packet: Option<u64>,
    /// What is wrong.
    pub message: String,
}

/// Per writer sequence (`trusted_packet_sequence_id`) counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SequenceReport {
    /// Packets on the sequence.
    pub packets: u64,
    /// Packets carrying a ProfilePacket.
    pub profile_packets: u64,
    /// Times the incremental state was cleared (a new interning generation began).
    pub state_clears: u64,
    /// Packets flagged `previous_packet_dropped`.
    pub dropped_packet_marks: u64,
    /// ProfilePackets missing according to `index` gaps.
    pub missing_profile_packets: u64,
    /// Packets skipped because they needed incremental state that was not valid.
    pub packets_skipped_invalid_state: u64,
    /// InternedData blocks ignored because the incremental state was not valid.
    pub interned_data_ignored: u64,
}

/// One heap dump found in the input.
#[derive(Debug, Clone, Serialize)]
pub struct DumpReport {
    /// Profiled process.
    pub pid: u64,
    /// Process name from the process tree, when known.
    pub process_name: Option<String>,
    /// Heap name.
    pub heap: String,
    /// 0-based index among dumps of this (pid, heap).
    pub index: usize,
    /// Dump time in the trace clock, when known.
    pub timestamp: Option<i64>,
    /// Dump time as written by the producer.
    pub raw_timestamp: Option<u64>,
    /// Whether `timestamp` was converted through a clock snapshot.
    pub timestamp_converted: bool,
    /// Effective sampling interval, when written.
    pub sampling_interval: Option<u64>,
    /// Configured sampling interval, when written.
    pub orig_sampling_interval: Option<u64>,
    /// HeapSample entries in the dump.
    pub samples: u64,
    /// Distinct stacks with a value in the resulting profile.
    pub stacks: u64,
    /// Whether any value changed since the previous dump (traceconv writes no file otherwise).
    pub changed: bool,
    /// Totals: allocated count, allocated bytes, unreleased count, unreleased bytes.
    pub totals: Totals,
    /// Flags and data-loss markers.
    pub flags: DumpFlags,
}

/// One Java heap graph dump (Perfetto `HeapGraph` packets) found in the input.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HeapGraphReport {
    /// Profiled process (0 when the packets name none).
    pub pid: u64,
    /// Process name from the process tree, when known.
    pub process_name: Option<String>,
    /// 0-based index among the heap graph dumps of this pid.
    pub index: usize,
    /// Writer sequence (`trusted_packet_sequence_id`) the dump came on.
    pub sequence: u32,
    /// Dump time in the trace clock, when known.
    pub timestamp: Option<i64>,
    /// Dump time as the packets carry it.
    pub raw_timestamp: Option<u64>,
    /// Whether `timestamp` is in the trace clock (false: no clock snapshot linked the clocks).
    pub timestamp_converted: bool,
    /// HeapGraph packets of the dump.
    pub packets: u64,
    /// Objects.
    pub objects: u64,
    /// Classes (types), including class-object types `java.lang.Class<X>`.
    pub classes: u64,
    /// References (null ones included).
    pub references: u64,
    /// Root entries (the producer's, then `VM_INTERNAL` for zygote and boot-image objects).
    pub roots: u64,
    /// Distinct rooted objects.
    pub rooted_objects: u64,
    /// References to ids that no object of the dump has.
    pub dangling_refs: u64,
    /// Shallow bytes of all objects.
    pub shallow_bytes: u64,
    /// Native bytes attributed to objects (NativeAllocationRegistry).
    pub native_bytes: u64,
    /// `heap_bytes_allocated`, when written.
    pub heap_bytes_allocated: Option<i64>,
    /// Why the dump is incomplete (packet-index gaps, unfinished at the end of the trace);
    /// empty when it is complete.
    pub incomplete: Vec<String>,
}

/// Totals of one dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Allocations (cumulative).
    pub total_count: i64,
    /// Bytes allocated (cumulative).
    pub total_size: i64,
    /// Allocations not freed.
    pub unreleased_count: i64,
    /// Bytes not freed.
    pub unreleased_size: i64,
}

/// Everything `inspect` shows about an input.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TraceReport {
    /// Input name.
    pub source: String,
    /// Whether the file was gzip-compressed as a whole.
    pub gzipped: bool,
    /// Bytes read (decompressed).
    pub bytes: u64,
    /// Packets read, counting those inside `compressed_packets`.
    pub packets: u64,
    /// `compressed_packets` bundles expanded.
    pub compressed_bundles: u64,
    /// Per-sequence counts, by sequence id.
    pub sequences: BTreeMap<u32, SequenceReport>,
    /// Process names by pid, from ProcessTree packets.
    pub processes: BTreeMap<u64, String>,
    /// ClockSnapshot packets seen.
    pub clock_snapshots: u64,
    /// Packets by kind of payload (profile_packet, heap_graph, module_symbols, …).
    pub packet_kinds: BTreeMap<String, u64>,
    /// Heap dumps, in the order they completed.
    pub dumps: Vec<DumpReport>,
    /// Interned callstacks (distinct definitions resolved).
    pub callstacks: u64,
    /// Distinct frames.
    pub frames: u64,
    /// Nodes of the stack prefix tree (distinct (caller path, frame) pairs).
    pub stack_nodes: u64,
    /// Frames that carry a function name.
    pub frames_with_names: u64,
    /// Frames given symbols by ModuleSymbols packets in the trace.
    pub frames_symbolized_from_trace: u64,
    /// Distinct mappings.
    pub mappings: u64,
    /// Problems found, in input order (capped; see `problems_omitted`).
    pub problems: Vec<Problem>,
    /// Problems not listed because the list was full.
    pub problems_omitted: u64,
    /// The error that stopped decoding early, if any: dumps completed before it are valid.
    pub damage: Option<String>,
    /// Dump chains that never ended (no closing packet): their dumps were not converted.
    pub unfinished_dumps: u64,
    /// Java heap graph dumps, in the order they completed.
    pub heap_graphs: Vec<HeapGraphReport>,
}

impl TraceReport {
    /// Most problems kept in `problems`.
    pub const MAX_PROBLEMS: usize = 200;

    /// Records a problem (or counts it once the list is full).
    pub fn problem(&mut self, offset: Option<u64>, packet: Option<u64>, message: impl Into<String>) {
        if self.problems.len() < Self::MAX_PROBLEMS {
            self.problems.push(Problem { offset, packet, message: message.into() });
        } else {
            self.problems_omitted += 1;
        }
    }

    /// True when data was lost on the way in: the input is damaged or a dump never ended.
    pub fn is_partial(&self) -> bool {
        self.damage.is_some() || self.unfinished_dumps > 0
    }

    /// Everything the input says about data that was lost on the way in, one line each: the
    /// damage that stopped decoding, dumps that never finished, each dump's data-loss flags
    /// (`previous_packet_dropped`, index gaps, `buffer_overran`, `buffer_corrupted`,
    /// `client_error`, `hit_guardrail`, `rejected_concurrent`, …), sequences with dropped or
    /// skipped packets, and incomplete heap graphs. Empty when nothing was lost; `--strict`
    /// fails a run on any of them.
    pub fn data_loss(&self) -> Vec<String> {
        self.data_loss_of(&|_| true)
    }

    /// [`TraceReport::data_loss`] as it concerns the dumps `keep` accepts (those a command
    /// converts): the flags of other dumps are left out; damage, unfinished dumps, sequences
    /// and heap graphs are kept, as they may concern any dump.
    pub fn data_loss_of(&self, keep: &dyn Fn(&DumpReport) -> bool) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(d) = &self.damage {
            v.push(format!("input damaged: {d}"));
        }
        if self.unfinished_dumps > 0 {
            v.push(format!("{} dump(s) never finished (the trace ends inside a dump chain)", self.unfinished_dumps));
        }
        for d in self.dumps.iter().filter(|d| keep(d)) {
            let loss = d.flags.data_loss();
            if !loss.is_empty() {
                v.push(format!("pid {} heap {} dump {}: {}", d.pid, d.heap, d.index + 1, loss.join(", ")));
            }
        }
        for (id, q) in &self.sequences {
            let mut what = Vec::new();
            if q.dropped_packet_marks > 0 {
                what.push(format!("{} packet(s) flagged previous_packet_dropped", q.dropped_packet_marks));
            }
            if q.missing_profile_packets > 0 {
                what.push(format!("{} ProfilePacket(s) missing (index gaps)", q.missing_profile_packets));
            }
            if q.packets_skipped_invalid_state > 0 {
                what.push(format!(
                    "{} packet(s) skipped (incremental state not valid)",
                    q.packets_skipped_invalid_state
                ));
            }
            if !what.is_empty() {
                v.push(format!("sequence {id}: {}", what.join(", ")));
            }
        }
        for g in &self.heap_graphs {
            if !g.incomplete.is_empty() {
                v.push(format!(
                    "heap graph of pid {} dump {}: incomplete: {}",
                    g.pid,
                    g.index + 1,
                    g.incomplete.join("; ")
                ));
            }
        }
        v
    }

    /// Share of frames with a name, 0..=1 (1 when there are no frames).
    pub fn named_frame_share(&self) -> f64 {
        if self.frames == 0 { 1.0 } else { self.frames_with_names as f64 / self.frames as f64 }
    }
}
