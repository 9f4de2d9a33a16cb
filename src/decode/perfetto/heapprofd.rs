//! heapprofd data in Perfetto traces: interning per writer sequence, ProfilePacket chains,
//! cumulative counters, and the dumps they make.
//!
//! How the bytes are laid out (our own summary of Perfetto's protos and of how heapprofd writes
//! them; field numbers in `protos/perfetto_trace.proto`):
//!
//! * Interning is scoped to a `trusted_packet_sequence_id`. A packet with
//!   `SEQ_INCREMENTAL_STATE_CLEARED` (bit 0 of `sequence_flags`) or the older
//!   `incremental_state_cleared` starts a new generation: every interned table is emptied.
//!   Until the first clear the state is invalid: interned data is ignored, and packets that set
//!   `SEQ_NEEDS_INCREMENTAL_STATE` (bit 1) are skipped. `previous_packet_dropped` without a clear
//!   makes the state invalid again.
//! * InternedData holds separate namespaces: function names, build ids, mapping path
//!   components, mappings, frames and callstacks (frame ids root first). Android Q instead put
//!   `strings` (one namespace), `mappings`, `frames` and `callstacks` inside the ProfilePacket;
//!   those are scoped to one chain and looked up before the interned ones.
//! * A dump is a chain of ProfilePackets on one sequence: each holds `process_dumps`
//!   (one per process and heap, header repeated in every packet) with `samples`, and
//!   `continued = true` while more follow. heapprofd writes the samples first and the interned
//!   definitions of new callstacks after them, closing with an empty ProfilePacket with
//!   `continued = false`. So samples are buffered and resolved when the chain ends. `index`
//!   counts ProfilePackets per sequence; a gap means packets were lost.
//! * Sample values are cumulative since profiling started, per callstack entry; an entry that
//!   is freed completely may be dropped and come back later under a new callstack id starting
//!   from zero. The value of a dump at time T is therefore, per stack, the sum over callstack
//!   ids of the latest value seen at or before T. `dump_at_max` dumps carry `self_max` and
//!   `self_max_count` instead (the count only trusted when `orig_sampling_interval_bytes` is
//!   set), with no frees.
//! * Dump timestamps are CLOCK_MONOTONIC_COARSE and are converted to the trace clock through
//!   ClockSnapshot packets; an absent timestamp is 0, as trace processor reads it.
//! * A dump is one (pid, heap, dump timestamp), as trace processor files its rows
//!   (`ProfileModule::ParseProfilePacket`) and traceconv selects them: one ProfilePacket may
//!   carry several dumps of one process at different times, and several chains at the same
//!   time (two chains without timestamps) are one dump. Cumulative counters are kept per
//!   callsite (`ProfilePacketSequenceState::AddAllocation` keys them by callsite, not by
//!   callstack iid), so an Android Q inline iid re-defined by a later chain as another stack
//!   counts apart.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use super::clock::MONOTONIC_COARSE;
use super::hot::{self, FrameRef, Hot, LitePacket};
use super::iid::IidMap;
use super::module_symbols::{SymbolPackets, scan_module_symbols};
use super::packets::{DecodeErr, TraceDecoder, TraceState, read_trace_ahead};
use crate::decode::input::Input;
use crate::error::Result;
use crate::model::{
    DumpFlags, DumpReport, FrameId, Mapping, MappingId, Profile, ProfileHeader, ProfileMeta, StackId, StackLists,
    Tables, Totals, TraceReport, ValueKind, ValueType,
};
use crate::proto::perfetto as pb;

/// Options of the heapprofd decoder.
#[derive(Debug, Clone)]
pub struct DecodeOptions {
    /// Largest packet accepted, in bytes. Default: 256 MiB.
    pub max_packet_bytes: u64,
    /// Largest expansion of one `compressed_packets` bundle, in bytes. Default: 256 MiB.
    pub max_bundle_bytes: u64,
    /// Largest expansion of a whole-file gzip trace, in bytes. Default: 64 GiB.
    pub max_gzip_bytes: u64,
    /// Build profiles for dumps in which nothing changed (traceconv writes no file for them).
    /// Default: true.
    pub include_unchanged: bool,
    /// Hand only these pids' dumps to the sink (empty: all); every dump is still reported.
    /// Default: empty.
    pub pids: Vec<u64>,
    /// Leave frames' display names undemangled until the caller settles the ones it shows
    /// ([`crate::model::Tables::settle_names`]). Default: false.
    pub deferred_names: bool,
    /// Decode a plain file's packets where they lie in a read-only map of it instead of
    /// copying each into a buffer: fewer pages written. The packets at work count in the
    /// process's resident memory (a file of up to 64 MiB whole at the start, its pages read in
    /// at once; those behind the decoder are released). `symbolize` sets it; other inputs are
    /// read as ever. Default: false.
    pub read_in_place: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_packet_bytes: 256 << 20,
            max_bundle_bytes: 256 << 20,
            max_gzip_bytes: 64 << 30,
            include_unchanged: true,
            pids: Vec::new(),
            deferred_names: false,
            read_in_place: false,
        }
    }
}

const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// Sample types for a heap, by name, exactly as traceconv labels them.
pub fn sample_types_for_heap(heap: &str) -> Vec<ValueType> {
    use ValueKind::*;
    match heap {
        "libc.malloc" => vec![
            ValueType::new("Total malloc count", "count", TotalCount),
            ValueType::new("Total malloc size", "bytes", TotalSize),
            ValueType::new("Unreleased malloc count", "count", UnreleasedCount),
            ValueType::new("Unreleased malloc size", "bytes", UnreleasedSize),
        ],
        "com.android.art" => vec![
            ValueType::new("Total allocation count", "count", TotalCount),
            ValueType::new("Total allocation size", "bytes", TotalSize),
        ],
        _ => vec![
            ValueType::new("Total count", "count", TotalCount),
            ValueType::new("Total size", "bytes", TotalSize),
            ValueType::new("Unreleased count", "count", UnreleasedCount),
            ValueType::new("Unreleased size", "bytes", UnreleasedSize),
        ],
    }
}

/// The ART heap reports no frees.
fn heap_has_frees(heap: &str) -> bool {
    heap != "com.android.art"
}

/// A raw definition waiting for what it references.
#[derive(Default)]
struct Pending {
    mappings: Vec<pb::Mapping>,
    frames: Vec<pb::Frame>,
    /// Callstacks of the current chain that name a frame not defined yet: tried (and, if still
    /// unresolved, reported) at the end of the chain.
    callstacks: Vec<pb::Callstack>,
    /// Callstacks still unresolved, by the iid of a frame they lack: tried again only when
    /// that frame comes, so that callstacks that never resolve do not make every later chain
    /// slower, and each is tried at most once per frame it lacks.
    waiting: HashMap<u64, Vec<pb::Callstack>>,
    /// Frames defined since the end of the last chain that some callstack waits for.
    arrived: Vec<u64>,
}

impl Interned {
    /// Records frame `iid` as interned.
    fn add_frame(&mut self, iid: u64, fid: FrameId) {
        self.frames.insert(iid, fid);
        if !self.pending.waiting.is_empty() && self.pending.waiting.contains_key(&iid) {
            self.pending.arrived.push(iid);
        }
    }
}

/// Interned tables of one generation of one sequence (or the inline tables of one chain).
#[derive(Default)]
struct Interned {
    function_names: IidMap<crate::model::StringId>,
    build_ids: HashMap<u64, Box<[u8]>>,
    mapping_paths: HashMap<u64, Box<str>>,
    /// `source_paths` (the source files of online-symbolized frames).
    source_paths: HashMap<u64, crate::model::StringId>,
    mappings: IidMap<MappingId>,
    frames: IidMap<FrameId>,
    /// iid -> (stack, dense index of the iid in this generation).
    callstacks: IidMap<Callsite>,
    pending: Pending,
}

/// An interned callstack: its stack (`u32::MAX`: none, an empty callstack) and its dense
/// index in its generation, 8 bytes.
#[derive(Clone, Copy)]
struct Callsite {
    stack: u32,
    dense: u32,
}

impl Callsite {
    fn new(stack: Option<StackId>, dense: u32) -> Self {
        Callsite { stack: stack.map_or(u32::MAX, |s| s.0), dense }
    }

    fn stack(self) -> Option<StackId> {
        (self.stack != u32::MAX).then_some(StackId(self.stack))
    }
}

/// Android Q inline tables: one string namespace, scoped to a chain.
#[derive(Default)]
struct Inline {
    strings: HashMap<u64, Box<[u8]>>,
    mappings: Vec<pb::Mapping>,
    frames: Vec<pb::Frame>,
    callstacks: Vec<pb::Callstack>,
}

impl Inline {
    fn is_empty(&self) -> bool {
        self.strings.is_empty() && self.mappings.is_empty() && self.frames.is_empty() && self.callstacks.is_empty()
    }
}

/// A sample as buffered until its chain ends (absent counters are 0).
#[derive(Clone, Copy, Default, Debug)]
pub(super) struct RawSample {
    pub(super) callstack: u64,
    pub(super) alloc_bytes: u64,
    pub(super) freed_bytes: u64,
    pub(super) alloc_count: u64,
    pub(super) free_count: u64,
    pub(super) max_bytes: Option<u64>,
    pub(super) max_count: Option<u64>,
}

/// The samples of a dump as buffered until its chain ends, packed as varints (a flags byte
/// saying which of the `max` fields are present, then callstack, allocated and freed bytes,
/// allocation and free counts, and the present `max` fields): about a sixth of the memory of
/// [`RawSample`]s.
#[derive(Default)]
pub(super) struct PackedSamples {
    bytes: Vec<u8>,
    len: usize,
}

impl PackedSamples {
    #[cfg(test)]
    fn push(&mut self, s: RawSample) {
        Self::pack(&mut self.bytes, s);
        self.len += 1;
    }

    /// Appends `s` to `bytes` in the packed form.
    #[inline]
    pub(super) fn pack(bytes: &mut Vec<u8>, s: RawSample) {
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
    fn extend_packed(&mut self, bytes: &[u8], count: usize) {
        self.bytes.extend_from_slice(bytes);
        self.len += count;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn iter(&self) -> impl Iterator<Item = RawSample> + '_ {
        Self::unpack(&self.bytes)
    }

    /// The samples packed in `bytes`.
    pub(super) fn unpack(bytes: &[u8]) -> impl Iterator<Item = RawSample> + '_ {
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

struct PendingDump {
    pid: u64,
    heap: String,
    /// `ProcessHeapSamples.timestamp`, 0 when absent (as trace processor reads it): with pid
    /// and heap, what tells the dumps of one chain apart.
    timestamp: u64,
    start_timestamp: Option<u64>,
    sampling_interval: Option<u64>,
    orig_sampling_interval: Option<u64>,
    flags: DumpFlags,
    samples: PackedSamples,
}

#[derive(Default)]
struct Chain {
    active: bool,
    first_offset: u64,
    first_packet: u64,
    dumps: Vec<PendingDump>,
    inline: Inline,
    missing_packets: u64,
    dropped: bool,
}

#[derive(Default)]
struct Sequence {
    valid: bool,
    generation: u32,
    interned: Interned,
    chain: Chain,
    next_index: Option<u64>,
    dropped_since_dump: bool,
}

/// Cumulative counters of one callstack entry.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Cum {
    alloc_bytes: u64,
    freed_bytes: u64,
    alloc_count: u64,
    free_count: u64,
}

struct Entry {
    stack: StackId,
    cum: Cum,
}

/// State of one (pid, heap) series of dumps.
#[derive(Default)]
struct Series {
    /// Entries of interned callstacks, by (sequence, generation), indexed by dense iid index.
    dense: HashMap<(u32, u32), Vec<Entry>>,
    /// Entries of Android Q inline callstacks, by (sequence, iid, stack): the inline tables
    /// are scoped to one chain, so a later chain may define the same iid as another stack,
    /// whose counters are its own (trace processor keys cumulative counters by callsite).
    inline: HashMap<(u32, u64, StackId), Entry>,
    dumps: usize,
}

const NO_STACK: StackId = StackId(u32::MAX);

/// A finished dump not yet handed to the sink: a later chain of the same (pid, heap) at the
/// same dump time still adds to it, until a chain of that series at another time (or the end
/// of the trace) closes it.
struct Held {
    key: (u64, String),
    /// Closed: no later chain can add to it.
    done: bool,
    /// Whether the pid filter keeps it.
    wanted: bool,
    /// Its entry in the report's `dumps`.
    report: usize,
    meta: ProfileMeta,
    /// The dump's rows, taken from its series when it was closed; `None` while it is open
    /// (the series' counters are its rows until a chain at another time changes them), so an
    /// open dump costs no memory of its own.
    rows: Option<Rows>,
    /// Handed over early ([`Handover::Dump`] while still open); its report entry was filled
    /// then.
    early: bool,
    /// Handed over early, then a later chain added to it: handed again ([`Handover::Again`])
    /// when it closes.
    stale: bool,
}

/// A dump's rows in the form its profile takes them: per stack, in stack order, `width`
/// values (total count and size, then, with frees, unreleased count and size).
struct Rows {
    stacks: Vec<StackId>,
    values: Vec<i64>,
    width: usize,
}

/// A series' rows: per stack, the latest value of every entry, summed (entries of recycled
/// callstack ids land on the same stack), in stack order, `width` values per stack. Made
/// straight from the counters (sorted references to them), at their exact size.
fn series_rows(series: &Series, width: usize) -> Rows {
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
fn width_of(heap: &str) -> usize {
    sample_types_for_heap(heap).len()
}

/// The totals of a dump's rows (a heap without frees has unreleased = total).
fn totals_of(rows: &Rows) -> Totals {
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
fn merge_flags(a: &mut DumpFlags, b: &DumpFlags) {
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

/// Decodes heapprofd dumps from a Perfetto trace, handing each completed dump to `sink` as a
/// profile as soon as its chain ends (so memory grows with unique stacks, not with dumps).
///
/// Returns the report of what the trace holds and the final tables (a superset of the tables
/// each profile was given: ids never change meaning, so a profile kept past the next dump can be
/// pointed at the final tables with [`Profile::tables`] to avoid copies).
/// A damaged trace (truncated, corrupt) is not an error: decoding stops at the damage, dumps
/// completed before it have been delivered, and the report's `damage` says what and where.
/// Errors are I/O failures and errors from `sink`.
pub fn decode_heapprofd(
    input: &mut Input,
    opts: &DecodeOptions,
    sink: &mut dyn FnMut(Profile) -> Result<()>,
) -> Result<(TraceReport, Arc<Tables>)> {
    decode_heapprofd_with(input, opts, &mut |_, _| {}, sink)
}

/// A callback that sees the tables each time a dump chain ends, before its profiles are built,
/// with the range of frames added since the previous call: where a later stage (for example
/// symbolization, wired by the pipeline) can fill in what those frames lack.
pub type FrameHook<'a> = dyn FnMut(&mut Tables, std::ops::Range<usize>) + 'a;

/// A callback that sees the tables each time interned data added callstacks, with their
/// stacks: where a later stage can start its per-stack work before the dumps that use them
/// are complete (heapprofd defines every callstack of a dump in the dump's own chain).
pub type StackHook<'a> = dyn FnMut(&Tables, &[StackId]) + 'a;

/// A callback that sees frames as soon as interned data defines them, before their dump chain
/// ends (and before ModuleSymbols or the [`FrameHook`] change them): where a later stage can
/// start slow work for them (say, symbol lookups on another thread) while decoding goes on.
pub type FramesSeenHook<'a> = dyn FnMut(&Tables, std::ops::Range<usize>) + 'a;

/// [`decode_heapprofd`] with a [`FrameHook`].
pub fn decode_heapprofd_with(
    input: &mut Input,
    opts: &DecodeOptions,
    hook: &mut FrameHook<'_>,
    sink: &mut dyn FnMut(Profile) -> Result<()>,
) -> Result<(TraceReport, Arc<Tables>)> {
    decode_heapprofd_observed(input, opts, hook, None, sink)
}

/// [`decode_heapprofd_with`] and a [`StackHook`]. The stack hook is only called when the
/// frames it sees are final: when the trace carries no ModuleSymbols (which are applied to
/// frames when a chain ends) and the input could be pre-scanned to know it; the frame hook
/// may still change frames, so a caller with one that does passes no stack hook.
pub fn decode_heapprofd_observed(
    input: &mut Input,
    opts: &DecodeOptions,
    hook: &mut FrameHook<'_>,
    stacks: Option<&mut StackHook<'_>>,
    sink: &mut dyn FnMut(Profile) -> Result<()>,
) -> Result<(TraceReport, Arc<Tables>)> {
    let (report, tables, _) = run_decoder(input, opts, hook, stacks, None, Sink::Profiles(sink))?;
    Ok((report, tables))
}

/// A dump as [`decode_heapprofd_early`] hands it over.
#[derive(Debug)]
pub enum Handover {
    /// A dump, handed over once. Either it is closed, or (handed early) its chain has ended
    /// and only a later chain of the same process and heap at the same dump time can still
    /// add to it; if one does, the dump comes again as [`Handover::Again`].
    Dump(Profile),
    /// A dump handed over early that a later chain added to, complete now: it replaces the
    /// profile handed before with the same pid, heap and `dump_index`.
    Again(Profile),
}

/// [`decode_heapprofd_observed`], handing each dump over as soon as its chain ends instead of
/// when it closes (when a chain of the same process and heap at another time, or the end of
/// the trace, shows that nothing more can be added to it): a later stage can start on a dump
/// while the next chains are decoded. In the rare trace where a later chain adds to a dump
/// (two chains at the same dump time), the dump comes again, complete, as
/// [`Handover::Again`]. The dumps come in the order [`decode_heapprofd_observed`] gives them
/// (a dump given again keeps its place), and the report is the same.
pub fn decode_heapprofd_early(
    input: &mut Input,
    opts: &DecodeOptions,
    hook: &mut FrameHook<'_>,
    stacks: Option<&mut StackHook<'_>>,
    sink: &mut dyn FnMut(Handover) -> Result<()>,
) -> Result<(TraceReport, Arc<Tables>)> {
    let (report, tables, _) = run_decoder(input, opts, hook, stacks, None, Sink::Early(sink))?;
    Ok((report, tables))
}

/// A dump as [`decode_heapprofd_frames`] hands it over: what a [`Profile`] would hold, with
/// stacks of the decoder's [`StackLists`] instead of the tables' stack tree.
#[derive(Debug, Clone)]
pub struct ListDump {
    /// The dump's meta data and sample types, as its profile would have them.
    pub header: ProfileHeader,
    /// One stack per row (ids of the [`StackLists`] returned with the tables).
    pub stacks: Vec<StackId>,
    /// `header.sample_types.len()` values per row.
    pub values: Vec<i64>,
}

/// The heapprofd decoder for stages that need frames, not stack trees (symbolization): the
/// same dumps, report and tables as [`decode_heapprofd_with`], frame hook included, but the
/// callstacks are kept as flat frame lists ([`StackLists`]): no stack-tree node is interned
/// (the returned tables have none, and the report's `stack_nodes` is 0), and each dump the
/// other decoders would hand over as a [`Profile`] is handed to `sink` as a [`ListDump`].
///
/// `seen` (a [`FramesSeenHook`]) is called with the frames each interned-data packet adds, when
/// the trace holds no ModuleSymbols (so that what it starts is not wasted on frames the trace
/// names itself).
pub fn decode_heapprofd_frames(
    input: &mut Input,
    opts: &DecodeOptions,
    seen: &mut FramesSeenHook<'_>,
    hook: &mut FrameHook<'_>,
    sink: &mut dyn FnMut(ListDump) -> Result<()>,
) -> Result<(TraceReport, Arc<Tables>, StackLists)> {
    let (report, tables, lists) = run_decoder(input, opts, hook, None, Some(seen), Sink::Lists(sink))?;
    Ok((report, tables, lists.unwrap_or_default()))
}

/// Where a decoder's dumps go.
enum Sink<'a, 'b> {
    /// As profiles over the tables' stack tree.
    Profiles(&'a mut (dyn FnMut(Profile) -> Result<()> + 'b)),
    /// As rows of flat frame lists ([`decode_heapprofd_frames`]).
    Lists(&'a mut (dyn FnMut(ListDump) -> Result<()> + 'b)),
    /// As profiles, each as soon as its chain ends ([`decode_heapprofd_early`]).
    Early(&'a mut (dyn FnMut(Handover) -> Result<()> + 'b)),
}

fn run_decoder<'s, 'h>(
    input: &mut Input,
    opts: &DecodeOptions,
    hook: &'s mut FrameHook<'_>,
    stacks: Option<&mut StackHook<'h>>,
    seen: Option<&mut FramesSeenHook<'h>>,
    sink: Sink<'s, 's>,
) -> Result<(TraceReport, Arc<Tables>, Option<StackLists>)> {
    let mut d = Decoder::new(input, opts);
    if matches!(sink, Sink::Lists(_)) {
        d.lists = Some(StackLists::default());
    }
    if let Some(t) = Arc::get_mut(&mut d.tables) {
        t.set_deferred_names(opts.deferred_names);
    }
    // ModuleSymbols usually follow the dumps they name: read them first (or take what a
    // pre-pass read) when the input can be read twice.
    if let Some(symbols) = input.take_prescanned_symbols() {
        d.symbols = symbols;
        d.symbols_prescanned = true;
    } else if let Some(Ok(mut again)) = input.reopen() {
        d.symbols = scan_module_symbols(&mut again, opts.max_packet_bytes)?;
        d.symbols_prescanned = true;
    }
    // Symbols read ahead of time are complete: callstacks can be handed to the stack hook as
    // soon as they are interned. Otherwise frames may still change when ModuleSymbols come.
    let final_frames = d.symbols_prescanned && d.symbols.is_empty();
    let stacks = if final_frames { stacks } else { None };
    let seen = if final_frames { seen } else { None };
    let mut out = Out { hook: &mut *hook, stacks, seen, sink, ending: false };
    let deferred_names = opts.deferred_names;
    // The container is read and each packet's wire format parsed on a second thread, a packet
    // or two ahead of the tables' work on the last one.
    read_trace_ahead(
        input,
        opts.read_in_place,
        &mut d,
        &mut |b, spare: Option<Box<Hot>>| {
            let mut p = hot::decode_packet(b, spare.unwrap_or_default()).map_err(|e| DecodeErr(Box::new(e)))?;
            // Function names are demangled there too (frames will want them as display names).
            if !deferred_names {
                p.hot.demangle_names(b);
            }
            Ok(p)
        },
        &mut |d: &mut Decoder| d.spare.take(),
        &mut |d, b| hot::decode_packet(b, d.spare.take().unwrap_or_default()).map_err(|e| DecodeErr(Box::new(e))),
        &mut |d, pkt, bytes, offset, number| d.trace_packet(pkt, bytes, offset, number, &mut out),
    )?;
    out.ending = true;
    d.finish();
    d.release();
    d.flush(&mut out)?;
    Ok((d.trace.report, d.tables, d.lists))
}

/// Decodes a whole trace and returns every dump's profile, all sharing the final tables.
/// Memory grows with the number of dumps; [`decode_heapprofd`] with a streaming sink does not.
pub fn decode_heapprofd_all(input: &mut Input, opts: &DecodeOptions) -> Result<(Vec<Profile>, TraceReport)> {
    let mut out = Vec::new();
    let empty = Arc::new(Tables::default());
    let (report, tables) = decode_heapprofd(input, opts, &mut |mut p| {
        // Drop the reference to the decoder's tables so that it can keep growing them in place;
        // the final tables are attached below.
        p.tables = Arc::clone(&empty);
        out.push(p);
        Ok(())
    })?;
    for p in &mut out {
        p.tables = Arc::clone(&tables);
    }
    Ok((out, report))
}

/// Where finished dumps go: the frame hook, then the sink.
#[allow(clippy::type_complexity)]
struct Out<'a, 'b, 'c> {
    hook: &'a mut (dyn FnMut(&mut Tables, std::ops::Range<usize>) + 'b),
    stacks: Option<&'a mut StackHook<'c>>,
    seen: Option<&'a mut FramesSeenHook<'c>>,
    sink: Sink<'a, 'b>,
    /// The trace has ended: every held dump is closed.
    ending: bool,
}

struct Decoder {
    trace: TraceState,
    opts: DecodeOptions,
    tables: Arc<Tables>,
    seqs: HashMap<u32, Sequence>,
    series: HashMap<(u64, String), Series>,
    frames_hooked: usize,
    /// Frames handed to the frames-seen hook so far.
    frames_seen: usize,
    // Callstacks interned since the last call of the stack hook.
    fresh: Vec<StackId>,
    symbols: SymbolPackets,
    symbols_prescanned: bool,
    /// Finished dumps not yet handed to the sink, in the order they began.
    held: std::collections::VecDeque<Held>,
    /// Callstacks as frame lists instead of stack-tree nodes ([`decode_heapprofd_frames`]).
    lists: Option<StackLists>,
    /// The buffers of the last packet read, for the next.
    spare: Option<Box<Hot>>,
}

impl TraceDecoder for Decoder {
    fn trace(&mut self) -> &mut TraceState {
        &mut self.trace
    }
}

impl Decoder {
    fn new(input: &Input, opts: &DecodeOptions) -> Self {
        Decoder {
            trace: TraceState::new(input, opts.max_packet_bytes, opts.max_bundle_bytes),
            opts: opts.clone(),
            tables: Arc::new(Tables::default()),
            seqs: HashMap::default(),
            series: HashMap::default(),
            frames_hooked: 0,
            frames_seen: 0,
            symbols: SymbolPackets::default(),
            symbols_prescanned: false,
            fresh: Vec::new(),
            held: std::collections::VecDeque::new(),
            lists: None,
            spare: None,
        }
    }

    fn trace_packet(
        &mut self,
        pkt: LitePacket,
        bytes: &[u8],
        offset: u64,
        number: u64,
        out: &mut Out<'_, '_, '_>,
    ) -> Result<()> {
        let LitePacket { head, full, mut hot } = pkt;
        let r = self.read_packet(&head, full.as_ref(), &mut hot, bytes, offset, number, out);
        self.spare = Some(hot);
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn read_packet(
        &mut self,
        pkt: &hot::Head,
        full: Option<&pb::TracePacket>,
        hot: &mut Hot,
        bytes: &[u8],
        offset: u64,
        number: u64,
        out: &mut Out<'_, '_, '_>,
    ) -> Result<()> {
        if full.is_some_and(|f| f.heap_graph.is_some()) {
            self.trace.kind("heap_graph");
        }
        if let Some(ms) = full.and_then(|f| f.module_symbols.as_ref()) {
            self.trace.kind("module_symbols");
            if !self.symbols_prescanned {
                self.symbols.add(ms);
            }
        }

        let seq_id = pkt.trusted_packet_sequence_id.unwrap_or(0);
        let flags = pkt.sequence_flags.unwrap_or(0);
        let cleared = pkt.incremental_state_cleared.unwrap_or(false) || flags & SEQ_INCREMENTAL_STATE_CLEARED != 0;
        let first_on_seq = !self.seqs.contains_key(&seq_id) || pkt.first_packet_on_sequence.unwrap_or(false);
        // Perfetto marks the first packet of every writer sequence as "previous packet
        // dropped" (there is no previous packet); only later marks mean data was lost.
        let dropped = pkt.previous_packet_dropped.unwrap_or(0) != 0 && !first_on_seq;
        let seq = self.seqs.entry(seq_id).or_default();
        self.trace.report.sequences.entry(seq_id).or_default();
        self.trace.report.sequences.get_mut(&seq_id).expect("sequence report").packets += 1;
        if dropped {
            self.trace.report.sequences.get_mut(&seq_id).expect("sequence report").dropped_packet_marks += 1;
            seq.dropped_since_dump = true;
            if seq.chain.active {
                seq.chain.dropped = true;
            }
            self.trace.report.problem(
                Some(offset),
                Some(number),
                format!("sequence {seq_id}: the producer dropped packets before this one"),
            );
        }
        if cleared {
            seq.valid = true;
            seq.generation += 1;
            seq.interned = Interned::default();
            self.trace.report.sequences.get_mut(&seq_id).expect("sequence report").state_clears += 1;
        } else if dropped {
            seq.valid = false;
        }
        if flags & SEQ_NEEDS_INCREMENTAL_STATE != 0 && !seq.valid {
            self.trace.report.sequences.get_mut(&seq_id).expect("sequence report").packets_skipped_invalid_state += 1;
            self.trace.report.problem(
                Some(offset),
                Some(number),
                format!("sequence {seq_id}: packet needs incremental state that is not valid; skipped"),
            );
            return Ok(());
        }
        if hot.interned {
            if seq.valid {
                let tables = Arc::make_mut(&mut self.tables);
                let fresh = out.stacks.is_some().then_some(&mut self.fresh);
                intern(tables, &mut seq.interned, hot, bytes, fresh, self.lists.as_mut());
                if let Some(seen) = &mut out.seen
                    && tables.frames().len() > self.frames_seen
                {
                    seen(tables, self.frames_seen..tables.frames().len());
                    self.frames_seen = tables.frames().len();
                }
                if let Some(hook) = &mut out.stacks
                    && !self.fresh.is_empty()
                {
                    hook(tables, &self.fresh);
                    self.fresh.clear();
                }
            } else {
                self.trace.report.sequences.get_mut(&seq_id).expect("sequence report").interned_data_ignored += 1;
                self.trace.report.problem(
                    Some(offset),
                    Some(number),
                    format!(
                        "sequence {seq_id}: interned data ignored: the incremental state is not valid (no SEQ_INCREMENTAL_STATE_CLEARED seen since the start or since a loss)"
                    ),
                );
            }
        }
        if hot.profile {
            self.trace.kind("profile_packet");
            self.profile_packet(seq_id, hot, bytes, offset, number, out)?;
        }
        Ok(())
    }

    fn profile_packet(
        &mut self,
        seq_id: u32,
        pp: &Hot,
        bytes: &[u8],
        offset: u64,
        number: u64,
        out: &mut Out<'_, '_, '_>,
    ) -> Result<()> {
        let seq = self.seqs.get_mut(&seq_id).expect("sequence exists");
        self.trace.report.sequences.entry(seq_id).or_default();
        self.trace.report.sequences.get_mut(&seq_id).expect("sequence report").profile_packets += 1;
        if !seq.chain.active {
            seq.chain = Chain {
                active: true,
                first_offset: offset,
                first_packet: number,
                dropped: std::mem::take(&mut seq.dropped_since_dump),
                ..Default::default()
            };
        }
        if let Some(index) = pp.index {
            if let Some(expected) = seq.next_index {
                if index > expected {
                    let gap = index - expected;
                    seq.chain.missing_packets += gap;
                    self.trace.report.sequences.get_mut(&seq_id).expect("sequence report").missing_profile_packets +=
                        gap;
                    self.trace.report.problem(
                        Some(offset),
                        Some(number),
                        format!(
                            "sequence {seq_id}: {gap} ProfilePacket(s) missing (index {index}, expected {expected})"
                        ),
                    );
                } else if index < expected {
                    self.trace.report.problem(
                        Some(offset),
                        Some(number),
                        format!("sequence {seq_id}: ProfilePacket index went back from {expected} to {index}"),
                    );
                }
            }
            seq.next_index = Some(index.saturating_add(1));
        }
        let inline = &mut seq.chain.inline;
        for s in &pp.strings {
            if let Some(iid) = s.iid {
                inline.strings.entry(iid).or_insert_with(|| s.str.clone().unwrap_or_default().into_boxed_slice());
            }
        }
        inline.mappings.extend_from_slice(&pp.inline_mappings);
        inline.frames.extend_from_slice(&pp.inline_frames);
        inline.callstacks.extend_from_slice(&pp.inline_callstacks);
        for pd in &pp.dumps {
            let pid = pd.pid.unwrap_or(0);
            let heap = pd.heap_name(bytes).filter(|h| !h.is_empty()).unwrap_or("unknown");
            let dumps = &mut seq.chain.dumps;
            // One chain may carry several dumps of one process and heap, told apart by their
            // timestamps (older and windowed heapprofd configs); the header repeated in every
            // packet of a chain carries the same timestamp.
            let timestamp = pd.timestamp.unwrap_or(0);
            let idx = match dumps.iter().position(|d| d.pid == pid && d.heap == heap && d.timestamp == timestamp) {
                Some(i) => i,
                None => {
                    dumps.push(PendingDump {
                        pid,
                        heap: heap.to_owned(),
                        timestamp,
                        start_timestamp: None,
                        sampling_interval: None,
                        orig_sampling_interval: None,
                        flags: DumpFlags::default(),
                        samples: PackedSamples::default(),
                    });
                    dumps.len() - 1
                }
            };
            let d = &mut dumps[idx];
            d.start_timestamp = d.start_timestamp.or(pd.start_timestamp);
            d.sampling_interval = d.sampling_interval.or(pd.sampling_interval_bytes);
            d.orig_sampling_interval = d.orig_sampling_interval.or(pd.orig_sampling_interval_bytes);
            let f = &mut d.flags;
            f.from_startup |= pd.from_startup.unwrap_or(false);
            f.rejected_concurrent |= pd.rejected_concurrent.unwrap_or(false);
            f.disconnected |= pd.disconnected.unwrap_or(false);
            f.buffer_overran |= pd.buffer_overran.unwrap_or(false);
            f.buffer_corrupted |= pd.buffer_corrupted.unwrap_or(false);
            f.hit_guardrail |= pd.hit_guardrail.unwrap_or(false);
            if let Some(e) = pd.client_error.filter(|&e| e != 0) {
                f.client_error = u32::try_from(e).unwrap_or(u32::MAX);
                if e == 1 {
                    f.buffer_overran = true;
                }
            }
            d.samples.extend_packed(&pp.samples[pd.samples.clone()], pd.sample_count);
        }
        if !pp.continued.unwrap_or(false) {
            self.finish_chain(seq_id, out)?;
        }
        Ok(())
    }

    fn finish_chain(&mut self, seq_id: u32, out: &mut Out<'_, '_, '_>) -> Result<()> {
        let seq = self.seqs.get_mut(&seq_id).expect("sequence exists");
        let chain = std::mem::take(&mut seq.chain);
        let generation = seq.generation;
        let tables = Arc::make_mut(&mut self.tables);
        let mut problems = Vec::new();
        // Resolve what was waiting for later definitions, then the chain's inline tables.
        resolve_pending(tables, &mut seq.interned, &mut problems, &mut self.lists);
        let inline_stacks = if chain.inline.is_empty() {
            HashMap::default()
        } else {
            resolve_inline(tables, &chain.inline, &seq.interned, &mut problems, &mut self.lists)
        };
        for p in problems {
            self.trace.report.problem(
                Some(chain.first_offset),
                Some(chain.first_packet),
                format!("sequence {seq_id}: {p}"),
            );
        }
        let nframes = tables.frames().len();
        if nframes > self.frames_hooked {
            self.trace.report.frames_symbolized_from_trace += self.symbols.apply(tables, self.frames_hooked..nframes);
            (out.hook)(tables, self.frames_hooked..nframes);
            self.frames_hooked = nframes;
        }
        for dump in chain.dumps {
            // Dumps of other pids are still decoded and reported (inspect, "no match" vs
            // "no data"), just not handed to the sink.
            let wanted = self.opts.pids.is_empty() || self.opts.pids.contains(&dump.pid);
            let seq = &self.seqs[&seq_id];
            let mut flags = dump.flags.clone();
            flags.missing_packets = chain.missing_packets;
            flags.previous_packet_dropped = chain.dropped;
            // Trace processor's dump time: `ProcessHeapSamples.timestamp` (0 when absent),
            // CLOCK_MONOTONIC_COARSE converted to the trace clock; raw when no snapshot links
            // the clocks (trace processor drops such dumps; heapconv keeps them).
            let (timestamp, converted) = match self.trace.clocks.to_trace(MONOTONIC_COARSE, dump.timestamp) {
                Some(v) => (Some(v), true),
                None => (i64::try_from(dump.timestamp).ok(), false),
            };
            let key = (dump.pid, dump.heap.clone());
            let series = self.series.entry(key).or_default();
            // A chain of this series at another time closes its open dump: the dump's rows are
            // the series' counters now, before this chain changes them.
            if let Some(h) = self.held.iter_mut().find(|h| !h.done && h.key.0 == dump.pid && h.key.1 == dump.heap)
                && h.meta.timestamp != timestamp
            {
                // A dump handed over early already has its rows (the same: only its series'
                // chains change them).
                if !h.early || h.stale {
                    h.rows = Some(series_rows(series, width_of(&dump.heap)));
                }
                h.done = true;
            }
            let frees = heap_has_frees(&dump.heap);
            let orig = dump.orig_sampling_interval.unwrap_or(0);
            let mut changed = false;
            let Series { dense: dense_map, inline: inline_map, .. } = &mut *series;
            let dense_entries = dense_map.entry((seq_id, generation)).or_default();
            // heapprofd names callstacks in increasing order: each lookup starts at the last.
            let mut hint = 0;
            for s in dump.samples.iter() {
                let inline = if inline_stacks.is_empty() { None } else { inline_stacks.get(&s.callstack) };
                let (stack, dense) = match inline {
                    Some(st) => (*st, None),
                    None => match seq.interned.callstacks.get_near(s.callstack, &mut hint) {
                        Some(c) => (c.stack(), Some(c.dense)),
                        None => (None, None),
                    },
                };
                let Some(stack) = stack else {
                    flags.unresolved_samples += 1;
                    continue;
                };
                let new = if s.max_bytes.is_some() || s.max_count.is_some() {
                    flags.dump_at_max = true;
                    Cum {
                        alloc_bytes: s.max_bytes.unwrap_or(0),
                        freed_bytes: 0,
                        alloc_count: if orig > 0 { s.max_count.unwrap_or(0) } else { 0 },
                        free_count: 0,
                    }
                } else {
                    Cum {
                        alloc_bytes: s.alloc_bytes,
                        freed_bytes: if frees { s.freed_bytes } else { 0 },
                        alloc_count: s.alloc_count,
                        free_count: if frees { s.free_count } else { 0 },
                    }
                };
                let entry = match dense {
                    Some(d) => {
                        let v = &mut *dense_entries;
                        let d = d as usize;
                        if v.len() <= d {
                            // Room for every callstack the sequence has defined: no doubling.
                            let all = seq.interned.callstacks.len().max(d + 1);
                            v.reserve_exact(all - v.len());
                            v.resize_with(d + 1, || Entry { stack: NO_STACK, cum: Cum::default() });
                        }
                        &mut v[d]
                    }
                    None => inline_map
                        .entry((seq_id, s.callstack, stack))
                        .or_insert(Entry { stack: NO_STACK, cum: Cum::default() }),
                };
                let old = entry.cum;
                if new.alloc_bytes < old.alloc_bytes
                    || new.alloc_count < old.alloc_count
                    || new.freed_bytes < old.freed_bytes
                    || new.free_count < old.free_count
                {
                    flags.non_monotonic_samples += 1;
                    continue;
                }
                if new != old {
                    changed = true;
                }
                entry.cum = new;
                entry.stack = stack;
            }
            if flags.unresolved_samples > 0 {
                self.trace.report.problem(
                    Some(chain.first_offset),
                    Some(chain.first_packet),
                    format!(
                        "pid {} heap {}: {} sample(s) name callstacks that were never defined; dropped",
                        dump.pid, dump.heap, flags.unresolved_samples
                    ),
                );
            }
            if flags.non_monotonic_samples > 0 {
                self.trace.report.problem(
                    Some(chain.first_offset),
                    Some(chain.first_packet),
                    format!(
                        "pid {} heap {}: {} sample(s) whose cumulative values went backwards; dropped",
                        dump.pid, dump.heap, flags.non_monotonic_samples
                    ),
                );
            }
            // The dump's stacks and totals are counted when it closes (in `flush`), from the
            // rows it has then: no rows are made or kept before.
            let samples = dump.samples.len() as u64;

            // A dump is one (pid, heap, dump time): a later chain of the same process and heap
            // at the same time (two chains without timestamps, say) adds to the open dump.
            let open = self.held.iter_mut().find(|h| !h.done && h.key.0 == dump.pid && h.key.1 == dump.heap);
            if let Some(h) = open {
                if h.meta.timestamp == timestamp {
                    h.stale |= h.early;
                    merge_flags(&mut h.meta.flags, &flags);
                    h.meta.changed |= changed;
                    let r = &mut self.trace.report.dumps[h.report];
                    merge_flags(&mut r.flags, &flags);
                    r.changed |= changed;
                    r.samples += samples;
                    continue;
                }
                h.done = true;
            }
            let dump_index = series.dumps;
            series.dumps += 1;
            let process_name = self.trace.report.processes.get(&dump.pid).cloned();
            let meta = ProfileMeta {
                source: self.trace.name.clone(),
                pid: Some(dump.pid),
                process_name: process_name.clone(),
                heap: dump.heap.clone(),
                dump_index,
                timestamp,
                raw_timestamp: Some(dump.timestamp),
                timestamp_converted: converted,
                start_timestamp: dump.start_timestamp,
                sampling_interval: dump.sampling_interval,
                orig_sampling_interval: dump.orig_sampling_interval,
                changed,
                flags: flags.clone(),
                ..Default::default()
            };
            self.trace.report.dumps.push(DumpReport {
                pid: dump.pid,
                process_name,
                heap: dump.heap.clone(),
                index: dump_index,
                timestamp,
                raw_timestamp: Some(dump.timestamp),
                timestamp_converted: converted,
                sampling_interval: dump.sampling_interval,
                orig_sampling_interval: dump.orig_sampling_interval,
                samples,
                stacks: 0,
                changed,
                totals: Totals::default(),
                flags,
            });
            self.held.push_back(Held {
                key: (dump.pid, dump.heap),
                done: false,
                wanted,
                report: self.trace.report.dumps.len() - 1,
                meta,
                rows: None,
                early: false,
                stale: false,
            });
        }
        self.flush(out)?;
        self.hand_early(out)
    }

    /// With an early sink ([`decode_heapprofd_early`]): hands over the held dumps that the
    /// sink would get next, in order, without waiting for them to close. Stops at a dump that
    /// is not handed now but might be later (unchanged so far, while unchanged dumps are not
    /// wanted), so the order stays that of [`Decoder::flush`].
    fn hand_early(&mut self, out: &mut Out<'_, '_, '_>) -> Result<()> {
        let Sink::Early(sink) = &mut out.sink else { return Ok(()) };
        for h in self.held.iter_mut() {
            if h.early || !h.wanted {
                continue;
            }
            if !(h.meta.changed || self.opts.include_unchanged) {
                if h.done {
                    continue;
                }
                break;
            }
            let width = width_of(&h.meta.heap);
            let rows = match h.rows.take() {
                Some(rows) => rows,
                None => match self.series.get(&h.key) {
                    Some(series) => series_rows(series, width),
                    None => Rows { stacks: Vec::new(), values: Vec::new(), width },
                },
            };
            let r = &mut self.trace.report.dumps[h.report];
            r.stacks = rows.stacks.len() as u64;
            r.totals = totals_of(&rows);
            h.early = true;
            let sample_types = sample_types_for_heap(&h.meta.heap);
            let default = if width == 2 { 1 } else { 3 };
            let Rows { stacks, values, .. } = rows;
            let p =
                Profile::from_parts(Arc::clone(&self.tables), h.meta.clone(), sample_types, default, stacks, values);
            sink(Handover::Dump(p))?;
        }
        Ok(())
    }

    /// Hands the dumps that can no longer grow to the sink, in the order they began; at the end
    /// of the trace, every dump.
    fn flush(&mut self, out: &mut Out<'_, '_, '_>) -> Result<()> {
        while let Some(h) = self.held.front() {
            if !h.done && !out.ending {
                break;
            }
            let h = self.held.pop_front().expect("front exists");
            if h.early && !h.stale {
                // Handed over, report entry filled, when its chain ended.
                continue;
            }
            // Still open at the end of the trace: its rows are its series' final counters.
            let width = width_of(&h.meta.heap);
            let rows = match h.rows {
                Some(rows) => rows,
                None => match self.series.get(&h.key) {
                    Some(series) => series_rows(series, width),
                    None => Rows { stacks: Vec::new(), values: Vec::new(), width },
                },
            };
            let r = &mut self.trace.report.dumps[h.report];
            r.stacks = rows.stacks.len() as u64;
            r.totals = totals_of(&rows);
            if !h.wanted || !(h.meta.changed || self.opts.include_unchanged) {
                continue;
            }
            let sample_types = sample_types_for_heap(&h.meta.heap);
            let default = if width == 2 { 1 } else { 3 };
            let Rows { stacks, values, .. } = rows;
            match &mut out.sink {
                Sink::Profiles(sink) => {
                    sink(Profile::from_parts(Arc::clone(&self.tables), h.meta, sample_types, default, stacks, values))?;
                }
                Sink::Early(sink) => {
                    let p =
                        Profile::from_parts(Arc::clone(&self.tables), h.meta, sample_types, default, stacks, values);
                    sink(if h.early { Handover::Again(p) } else { Handover::Dump(p) })?;
                }
                Sink::Lists(sink) => {
                    let header = ProfileHeader { meta: h.meta, sample_types, default_sample_type: default };
                    sink(ListDump { header, stacks, values })?;
                }
            }
        }
        Ok(())
    }

    /// At the end of the trace, before the last dumps go to the sink: takes the rows of the
    /// dumps still open and frees what only decoding needed (the series' counters, the
    /// sequences' interned tables, the stack index), so the last dumps are encoded without it.
    fn release(&mut self) {
        for h in self.held.iter_mut().filter(|h| h.rows.is_none() && (!h.early || h.stale)) {
            let width = width_of(&h.key.1);
            h.rows = Some(match self.series.get(&h.key) {
                Some(series) => series_rows(series, width),
                None => Rows { stacks: Vec::new(), values: Vec::new(), width },
            });
        }
        self.series = HashMap::default();
        self.seqs = HashMap::default();
        // Only when no profile still holds the tables (a copy would cost more than it frees).
        if let Some(t) = Arc::get_mut(&mut self.tables) {
            t.release_indexes();
        }
    }

    fn finish(&mut self) {
        let mut open: Vec<u32> = self.seqs.iter().filter(|(_, s)| s.chain.active).map(|(&id, _)| id).collect();
        open.sort_unstable();
        for id in open {
            let c = &self.seqs[&id].chain;
            let (off, num) = (c.first_offset, c.first_packet);
            let what: Vec<String> = c.dumps.iter().map(|d| format!("pid {} heap {}", d.pid, d.heap)).collect();
            self.trace.report.unfinished_dumps += c.dumps.len() as u64;
            self.trace.report.problem(
                Some(off),
                Some(num),
                format!(
                    "sequence {id}: a dump chain ({}) never ended (no ProfilePacket with continued = false); not converted",
                    if what.is_empty() { "no samples".to_owned() } else { what.join(", ") }
                ),
            );
        }
        let t = &self.tables;
        self.trace.report.frames = t.frames().len() as u64;
        self.trace.report.stack_nodes = t.stack_count() as u64;
        self.trace.report.frames_with_names = t.frames().iter().filter(|f| !f.raw_name.is_empty()).count() as u64;
        self.trace.report.mappings = t.mappings().len() as u64;
        self.trace.report.callstacks = self
            .seqs
            .values()
            .map(|s| s.interned.callstacks.values().filter(|c| c.stack().is_some()).count() as u64)
            .sum();
        // Process names may arrive after the dumps that use them.
        for d in &mut self.trace.report.dumps {
            if d.process_name.is_none() {
                d.process_name = self.trace.report.processes.get(&d.pid).cloned();
            }
        }
    }
}

fn sat(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// Joins path components the way Perfetto does: "/" before each, and a leading "//" (one
/// component that was already absolute) collapsed.
fn join_path(parts: &[&str]) -> String {
    let mut s = String::new();
    for p in parts {
        s.push('/');
        s.push_str(p);
    }
    if s.starts_with("//") {
        s.remove(0);
    }
    s
}

/// Adds one InternedData block (read into `d` from `bytes`) to a sequence's tables, resolving
/// eagerly what it can.
fn intern(
    tables: &mut Tables,
    t: &mut Interned,
    d: &mut Hot,
    bytes: &[u8],
    mut fresh: Option<&mut Vec<StackId>>,
    lists: Option<&mut StackLists>,
) {
    let ahead = &mut d.demangled;
    for (k, s) in d.function_names.iter().enumerate() {
        if let Some(iid) = s.iid {
            t.function_names.or_insert_with(iid, || {
                let raw = tables.strings.intern(&lossy(s.bytes(bytes)));
                // Demangled by the reading thread: the display name of this name's first frame.
                if let Some(name) = ahead.get_mut(k) {
                    tables.offer_display_name(raw, name.take());
                }
                raw
            });
        }
    }
    for s in &d.build_ids {
        if let Some(iid) = s.iid {
            t.build_ids.entry(iid).or_insert_with(|| s.bytes(bytes).into());
        }
    }
    for s in &d.mapping_paths {
        if let Some(iid) = s.iid {
            t.mapping_paths.entry(iid).or_insert_with(|| lossy(s.bytes(bytes)).into());
        }
    }
    for s in &d.source_paths {
        if let Some(iid) = s.iid {
            t.source_paths.entry(iid).or_insert_with(|| tables.strings.intern(&lossy(s.bytes(bytes))));
        }
    }
    for m in &d.mappings {
        let Some(iid) = m.iid else { continue };
        if t.mappings.contains_key(iid) {
            continue;
        }
        match try_mapping(
            tables,
            m,
            |id| t.build_ids.get(&id).map(|b| &**b),
            |id| t.mapping_paths.get(&id).map(|s| &**s),
        ) {
            Some(mid) => {
                t.mappings.insert(iid, mid);
            }
            None => t.pending.mappings.push(m.clone()),
        }
    }
    // Room for every frame of the block at once (no index rebuilt while they come).
    tables.reserve_frames(d.frames.len());
    for &f in &d.frames {
        let Some(iid) = f.iid else { continue };
        if t.frames.contains_key(iid) {
            continue;
        }
        match try_frame(
            tables,
            f,
            |id| t.function_names.get(id),
            |id| t.mappings.get(id),
            |id| t.source_paths.get(&id).copied(),
        ) {
            Some(fid) => t.add_frame(iid, fid),
            None => t.pending.frames.push(f.to_pb()),
        }
    }
    tables.withdraw_display_names();
    // Callstacks are interned as one batch (the bulk of a first dump's work).
    let mut iids = Vec::with_capacity(d.callstacks.len());
    let mut frames = Vec::with_capacity(d.frame_id_count());
    let mut bounds = Vec::with_capacity(d.callstacks.len() + 1);
    bounds.push(0);
    // The iids of this batch, as a set once they stop coming in increasing order (until then
    // a repeat is impossible and no set is needed).
    let mut batch: rustc_hash::FxHashSet<u64> = rustc_hash::FxHashSet::default();
    let mut increasing = true;
    'callstacks: for (k, c) in d.callstacks.iter().enumerate() {
        // The frames of the next callstack are fetched into the cache while this one's are
        // looked up (the frame table is larger than the cache, and frame ids come in no order).
        if let Some(next) = d.callstacks.get(k + 1) {
            // (An id stored as `u32::MAX` stands for a larger one: a wrong hint, no harm.)
            for &f in d.frame_ids_stored(next.frames.clone()) {
                t.frames.prefetch(u64::from(f));
            }
        }
        let Some(iid) = c.iid else { continue };
        // A callstack defined twice keeps its first definition.
        if t.callstacks.contains_key(iid) {
            continue;
        }
        if increasing && iids.last().is_some_and(|&last| iid <= last) {
            increasing = false;
            batch.extend(iids.iter().copied());
        }
        if !increasing && batch.contains(&iid) {
            continue;
        }
        // Ids of 32 bits, as every trace has them, in a loop of their own (no id to look aside for).
        let found = if d.has_big_frame_ids() {
            frames_of(d.frame_ids(c.frames.clone()), &t.frames, &mut frames)
        } else {
            frames_of(d.frame_ids_stored(c.frames.clone()).iter().map(|&f| u64::from(f)), &t.frames, &mut frames)
        };
        if !found {
            let frame_ids = d.frame_ids(c.frames.clone()).collect();
            t.pending.callstacks.push(pb::Callstack { iid: c.iid, frame_ids });
            continue 'callstacks;
        }
        bounds.push(frames.len());
        iids.push(iid);
        if !increasing {
            batch.insert(iid);
        }
    }
    let stacks = match lists {
        Some(l) => l.intern_batch_vec(frames, &bounds),
        None => tables.intern_stacks(&frames, &bounds),
    };
    for (iid, st) in iids.into_iter().zip(stacks) {
        let dense = t.callstacks.len() as u32;
        t.callstacks.insert(iid, Callsite::new(st, dense));
        if let (Some(fresh), Some(st)) = (fresh.as_deref_mut(), st) {
            fresh.push(st);
        }
    }
}

fn try_mapping<'a>(
    tables: &mut Tables,
    m: &pb::Mapping,
    build_id: impl Fn(u64) -> Option<&'a [u8]>,
    path: impl Fn(u64) -> Option<&'a str>,
) -> Option<MappingId> {
    let bid = match m.build_id {
        None | Some(0) => build_id(0).unwrap_or_default(),
        Some(id) => build_id(id)?,
    };
    let mut parts = Vec::with_capacity(m.path_string_ids.len());
    for &p in &m.path_string_ids {
        parts.push(path(p)?);
    }
    let path = tables.strings.intern(&join_path(&parts));
    Some(tables.intern_mapping(Mapping {
        path,
        build_id: bid.into(),
        start: m.start.unwrap_or(0),
        end: m.end.unwrap_or(0),
        start_offset: m.start_offset.unwrap_or(0),
        exact_offset: m.exact_offset.unwrap_or(0),
        load_bias: m.load_bias.unwrap_or(0),
    }))
}

/// Interns frame `f`, or `None` when a string or mapping it names is not defined (yet).
fn try_frame(
    tables: &mut Tables,
    f: FrameRef,
    name: impl Fn(u64) -> Option<crate::model::StringId>,
    mapping: impl Fn(u64) -> Option<MappingId>,
    source_path: impl Fn(u64) -> Option<crate::model::StringId>,
) -> Option<FrameId> {
    let raw_name = match f.function_name_id {
        None | Some(0) => name(0).unwrap_or_default(),
        Some(id) => name(id)?,
    };
    let map = match f.mapping_id {
        None | Some(0) => None,
        Some(id) => Some(mapping(id)?),
    };
    let file = match f.source_path_iid {
        None | Some(0) => None,
        Some(id) => Some(source_path(id)?),
    };
    Some(intern_frame_of(tables, map, f.rel_pc.unwrap_or(0), raw_name, file, f.line_number))
}

/// Interns a frame; one with a source file or line of its own (Perfetto's `Frame.source_path_iid`
/// and `line_number`, set by producers that symbolize online) gets them as its one line
/// ([`Tables::intern_frame_with_line`]), as trace processor gives such a frame a symbol.
/// Appends the frames of the frame ids `ids` to `out`; false (and `out` as it was) when one
/// is not interned yet.
#[inline(always)]
fn frames_of(ids: impl Iterator<Item = u64>, frames: &IidMap<FrameId>, out: &mut Vec<FrameId>) -> bool {
    let start = out.len();
    for f in ids {
        match frames.get(f) {
            Some(fid) => out.push(fid),
            None => {
                out.truncate(start);
                return false;
            }
        }
    }
    true
}

fn intern_frame_of(
    tables: &mut Tables,
    map: Option<MappingId>,
    rel_pc: u64,
    raw_name: crate::model::StringId,
    file: Option<crate::model::StringId>,
    line: Option<u32>,
) -> FrameId {
    if file.is_none() && line.is_none() {
        return tables.intern_frame(map, rel_pc, raw_name);
    }
    tables.intern_frame_with_line(map, rel_pc, raw_name, file.unwrap_or_default(), line.unwrap_or(0))
}

/// `Some(None)` for an empty callstack (kept as "no stack"), `None` when a frame is missing.
fn try_callstack(
    tables: &mut Tables,
    c: &pb::Callstack,
    frame: impl Fn(u64) -> Option<FrameId>,
    lists: &mut Option<StackLists>,
) -> Option<Option<StackId>> {
    let mut frames = Vec::with_capacity(c.frame_ids.len());
    for &f in &c.frame_ids {
        frames.push(frame(f)?);
    }
    Some(match lists {
        Some(l) => l.intern(&frames),
        None => tables.intern_stack(&frames),
    })
}

/// Resolves definitions that arrived before what they reference. What still cannot be
/// resolved is reported and, for names and build ids, resolved as empty.
fn resolve_pending(tables: &mut Tables, t: &mut Interned, problems: &mut Vec<String>, lists: &mut Option<StackLists>) {
    let p = &t.pending;
    if p.mappings.is_empty() && p.frames.is_empty() && p.callstacks.is_empty() && p.arrived.is_empty() {
        return;
    }
    let pending = Pending {
        mappings: std::mem::take(&mut t.pending.mappings),
        frames: std::mem::take(&mut t.pending.frames),
        callstacks: std::mem::take(&mut t.pending.callstacks),
        ..Pending::default()
    };
    for m in pending.mappings {
        let iid = m.iid.unwrap_or(0);
        let mid = try_mapping(
            tables,
            &m,
            |id| t.build_ids.get(&id).map(|b| &**b),
            |id| t.mapping_paths.get(&id).map(|s| &**s),
        )
        .unwrap_or_else(|| {
            problems.push(format!("mapping {iid} names a build id or path string that was never defined"));
            let parts: Vec<&str> =
                m.path_string_ids.iter().map_while(|p| t.mapping_paths.get(p).map(|s| &**s)).collect();
            let path = tables.strings.intern(&join_path(&parts));
            tables.intern_mapping(Mapping {
                path,
                build_id: m.build_id.and_then(|b| t.build_ids.get(&b).cloned()).unwrap_or_default(),
                start: m.start.unwrap_or(0),
                end: m.end.unwrap_or(0),
                start_offset: m.start_offset.unwrap_or(0),
                exact_offset: m.exact_offset.unwrap_or(0),
                load_bias: m.load_bias.unwrap_or(0),
            })
        });
        t.mappings.insert(iid, mid);
    }
    for f in pending.frames {
        let iid = f.iid.unwrap_or(0);
        let got = try_frame(
            tables,
            FrameRef::from_pb(&f),
            |id| t.function_names.get(id),
            |id| t.mappings.get(id),
            |id| t.source_paths.get(&id).copied(),
        );
        match got {
            Some(fid) => t.add_frame(iid, fid),
            None => {
                let map = match f.mapping_id {
                    None | Some(0) => Some(None),
                    Some(id) => t.mappings.get(id).map(Some),
                };
                match map {
                    Some(map) => {
                        // A name or source path never defined: reported, and taken as empty.
                        let name = match f.function_name_id {
                            None | Some(0) => Some(t.function_names.get(0).unwrap_or_default()),
                            Some(id) => t.function_names.get(id),
                        };
                        if name.is_none() {
                            problems.push(format!("frame {iid} names a function string that was never defined"));
                        }
                        let file = match f.source_path_iid {
                            None | Some(0) => None,
                            Some(id) => {
                                let file = t.source_paths.get(&id).copied();
                                if file.is_none() {
                                    problems.push(format!(
                                        "frame {iid} names source path string {id} that was never defined"
                                    ));
                                }
                                Some(file.unwrap_or_default())
                            }
                        };
                        let fid = intern_frame_of(
                            tables,
                            map,
                            f.rel_pc.unwrap_or(0),
                            name.unwrap_or_default(),
                            file,
                            f.line_number,
                        );
                        t.add_frame(iid, fid);
                    }
                    None => problems.push(format!(
                        "frame {iid} names mapping {} that was never defined",
                        f.mapping_id.unwrap_or(0)
                    )),
                }
            }
        }
    }
    // This chain's unresolved callstacks, then those waiting for a frame that came: each
    // resolves, or waits for the next frame it lacks. Each is reported once, when first tried.
    let mut retry: Vec<(pb::Callstack, bool)> = pending.callstacks.into_iter().map(|c| (c, true)).collect();
    for iid in std::mem::take(&mut t.pending.arrived) {
        if let Some(list) = t.pending.waiting.remove(&iid) {
            retry.extend(list.into_iter().map(|c| (c, false)));
        }
    }
    for (c, is_new) in retry {
        let iid = c.iid.unwrap_or(0);
        match try_callstack(tables, &c, |id| t.frames.get(id), lists) {
            Some(st) => {
                let dense = t.callstacks.len() as u32;
                t.callstacks.insert(iid, Callsite::new(st, dense));
            }
            None => {
                // Kept: its frames may still come in a later chain.
                if is_new {
                    problems.push(format!("callstack {iid} names frames that are not defined yet"));
                }
                let missing = c.frame_ids.iter().copied().find(|&f| !t.frames.contains_key(f)).unwrap_or_default();
                t.pending.waiting.entry(missing).or_default().push(c);
            }
        }
    }
}

/// Resolves a chain's Android Q inline tables (looked up before the interned tables) and
/// returns its callstacks.
fn resolve_inline(
    tables: &mut Tables,
    inl: &Inline,
    t: &Interned,
    problems: &mut Vec<String>,
    lists: &mut Option<StackLists>,
) -> HashMap<u64, Option<StackId>> {
    let str_of = |id: u64| inl.strings.get(&id).map(|b| &**b);
    let mut mappings: HashMap<u64, MappingId> = HashMap::default();
    for m in &inl.mappings {
        let Some(iid) = m.iid else { continue };
        let got = try_mapping(
            tables,
            m,
            |id| str_of(id).or_else(|| t.build_ids.get(&id).map(|b| &**b)),
            |id| {
                str_of(id).and_then(|b| std::str::from_utf8(b).ok()).or_else(|| t.mapping_paths.get(&id).map(|s| &**s))
            },
        );
        match got {
            Some(mid) => {
                mappings.entry(iid).or_insert(mid);
            }
            None => problems.push(format!("inline mapping {iid} names a string that is not in the packet")),
        }
    }
    let mut frames: HashMap<u64, FrameId> = HashMap::default();
    for f in &inl.frames {
        let Some(iid) = f.iid else { continue };
        let name_id = f.function_name_id.unwrap_or(0);
        let raw = match str_of(name_id) {
            Some(b) => Some(tables.strings.intern(&lossy(b))),
            None => t.function_names.get(name_id),
        };
        let raw = match raw {
            Some(r) => r,
            None if name_id == 0 => crate::model::StringId::EMPTY,
            None => {
                problems.push(format!("inline frame {iid} names function string {name_id} that is not in the packet"));
                crate::model::StringId::EMPTY
            }
        };
        let map = match f.mapping_id {
            None | Some(0) => None,
            Some(id) => match mappings.get(&id).copied().or_else(|| t.mappings.get(id)) {
                Some(m) => Some(m),
                None => {
                    problems.push(format!("inline frame {iid} names mapping {id} that is not defined"));
                    continue;
                }
            },
        };
        // A source path is a string of the packet's one namespace (else of the interned
        // `source_paths`). Trace processor reads neither field of an inline frame; heapconv
        // keeps them as it keeps an interned frame's.
        let file = match f.source_path_iid {
            None | Some(0) => None,
            Some(id) => match str_of(id) {
                Some(b) => Some(tables.strings.intern(&lossy(b))),
                None => match t.source_paths.get(&id) {
                    Some(&s) => Some(s),
                    None => {
                        problems.push(format!(
                            "inline frame {iid} names source path string {id} that is not in the packet"
                        ));
                        Some(crate::model::StringId::EMPTY)
                    }
                },
            },
        };
        let fid = intern_frame_of(tables, map, f.rel_pc.unwrap_or(0), raw, file, f.line_number);
        frames.entry(iid).or_insert(fid);
    }
    let mut stacks = HashMap::default();
    for c in &inl.callstacks {
        let Some(iid) = c.iid else { continue };
        match try_callstack(tables, c, |id| frames.get(&id).copied().or_else(|| t.frames.get(id)), lists) {
            Some(st) => {
                stacks.entry(iid).or_insert(st);
            }
            None => problems.push(format!("inline callstack {iid} names a frame that is not defined")),
        }
    }
    stacks
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain file decoded where it lies in a map (`read_in_place`) gives what it gives read
    /// through a buffer: the report, damage and errors, the dumps, the lists and the frames, on
    /// every trace fixture and on cuts of one (a packet cut short, a length past the end).
    #[test]
    fn a_file_read_in_place_decodes_as_one_read_through_a_buffer() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        let mut traces: Vec<Vec<u8>> = Vec::new();
        for d in [dir.to_owned(), format!("{dir}/heapgraph")] {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.to_string_lossy().ends_with(".pftrace") {
                    traces.push(std::fs::read(p).unwrap());
                }
            }
        }
        assert!(traces.len() > 10, "{}", traces.len());
        let biggest = traces.iter().max_by_key(|t| t.len()).unwrap().clone();
        for cut in (1..8).map(|k| biggest.len() * k / 8) {
            traces.push(biggest[..cut].to_vec());
        }
        let path = std::env::temp_dir().join(format!("heapconv-in-place-{}.pftrace", std::process::id()));
        let decode = |in_place: bool| {
            let opts = DecodeOptions { read_in_place: in_place, ..DecodeOptions::default() };
            let mut input = Input::open(&path, opts.max_gzip_bytes).unwrap();
            let mut dumps = Vec::new();
            let got = decode_heapprofd_frames(&mut input, &opts, &mut |_, _| {}, &mut |_, _| {}, &mut |d| {
                dumps.push(format!("{d:?}"));
                Ok(())
            });
            match got {
                Ok((report, tables, lists)) => {
                    let stacks: Vec<_> = (0..lists.len()).map(|i| lists.frames(StackId(i as u32)).to_vec()).collect();
                    format!("{report:?} {dumps:?} {stacks:?} {:?}", tables.frames())
                }
                Err(e) => format!("error {e} after {dumps:?}"),
            }
        };
        for (i, t) in traces.iter().enumerate() {
            std::fs::write(&path, t).unwrap();
            assert_eq!(decode(true), decode(false), "trace {i} ({} bytes)", t.len());
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn packed_samples_read_back_as_written() {
        let samples = [
            RawSample {
                callstack: 1,
                alloc_bytes: 4096,
                freed_bytes: 0,
                alloc_count: 3,
                free_count: 0,
                ..RawSample::default()
            },
            RawSample {
                callstack: u64::MAX,
                alloc_bytes: u64::MAX,
                freed_bytes: 1 << 40,
                alloc_count: 0,
                free_count: 7,
                max_bytes: Some(0),
                max_count: None,
            },
            RawSample { callstack: 0, max_bytes: None, max_count: Some(u64::MAX - 1), ..RawSample::default() },
            RawSample { callstack: 300, max_bytes: Some(5), max_count: Some(6), ..RawSample::default() },
        ];
        let mut packed = PackedSamples::default();
        for s in samples {
            packed.push(s);
        }
        assert_eq!(packed.len(), 4);
        let back: Vec<RawSample> = packed.iter().collect();
        assert_eq!(back.len(), 4);
        for (a, b) in samples.iter().zip(&back) {
            assert_eq!(
                (a.callstack, a.alloc_bytes, a.freed_bytes, a.alloc_count, a.free_count, a.max_bytes, a.max_count),
                (b.callstack, b.alloc_bytes, b.freed_bytes, b.alloc_count, b.free_count, b.max_bytes, b.max_count)
            );
        }
        // Small values take a byte each: 6 bytes for the first sample, not 72.
        assert!(packed.bytes.len() < 6 + 1 + 10 * 5 + 10 + 1 + 5 + 10 + 1 + 5 + 2);
    }

    #[test]
    fn series_rows_sum_entries_of_one_stack_in_stack_order() {
        let cum =
            |b: u64, fb: u64, c: u64, fc: u64| Cum { alloc_bytes: b, freed_bytes: fb, alloc_count: c, free_count: fc };
        let mut series = Series::default();
        series.dense.insert(
            (1, 1),
            vec![
                Entry { stack: StackId(5), cum: cum(100, 40, 2, 1) },
                Entry { stack: NO_STACK, cum: Cum::default() },
                Entry { stack: StackId(2), cum: cum(10, 0, 1, 0) },
                Entry { stack: StackId(5), cum: cum(1, 1, 1, 1) },
                Entry { stack: StackId(9), cum: Cum::default() },
            ],
        );
        series.inline.insert((1, 77, StackId(2)), Entry { stack: StackId(2), cum: cum(u64::MAX, 0, 1, 0) });
        let rows = series_rows(&series, 4);
        assert_eq!(rows.stacks, vec![StackId(2), StackId(5)]);
        // Stack 2: the sum wraps as the counters' own sums do, then saturates into i64.
        let s2 = 10u64.wrapping_add(u64::MAX);
        assert_eq!(rows.values, vec![2, sat(s2), 2, sat(s2), 3, 101, 1, 60]);
        let t = totals_of(&rows);
        assert_eq!(
            (t.total_count, t.total_size, t.unreleased_count, t.unreleased_size),
            (5, sat(s2) + 101, 3, sat(s2) + 60)
        );
        let two = series_rows(&series, 2);
        assert_eq!(two.values, vec![2, sat(s2), 3, 101]);
        let t = totals_of(&two);
        assert_eq!((t.unreleased_count, t.unreleased_size), (5, sat(s2) + 101));
    }
}
