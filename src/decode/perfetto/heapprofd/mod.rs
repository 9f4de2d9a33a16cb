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

//!
//! The parts: `intern` (a sequence's interned tables and the definitions waiting for what
//! they reference), `dumps` (samples buffered per chain, cumulative series and the rows a
//! dump's profile takes), `decoder` (packets in, dumps out); the entry points are here.

mod decoder;
mod dumps;
mod intern;
#[cfg(test)]
mod tests;

use decoder::*;
use dumps::*;
pub(super) use dumps::{PackedSamples, RawSample};
use intern::*;

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
