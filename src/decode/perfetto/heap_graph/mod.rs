//! Java heap graphs in Perfetto traces: `HeapGraph` packets (TracePacket field 56, written by
//! ART's `java_hprof` data source), decoded into [`HeapDump`]s the way Perfetto's trace
//! processor reads them.
//!
//! How the packets are laid out and read (our own summary; field numbers in
//! `protos/perfetto_trace.proto`):
//!
//! * **A dump** is the run of HeapGraph packets on one `trusted_packet_sequence_id` and at one
//!   TracePacket timestamp (the dump time; a packet without a timestamp takes the latest one
//!   seen in the trace) up to and including the one with `continued = false`. Trace processor
//!   sorts packets by time before it parses them, so the packets of dumps at different times
//!   that interleave on one sequence are read as separate runs, each indexed from 0. Within one
//!   sequence and time, packets must agree on `pid`: objects and roots of a packet that
//!   disagrees are dropped (pid 0 counts as "not set yet").
//! * **Order**: dumps are handed on in trace-time order, dumps at the same time in the order
//!   they begin (the order of trace processor's object rows, which numbers traceconv's files);
//!   a dump that ends while an earlier one is still open waits for it.
//! * A complete dump with objects but no roots is reported as a problem: nothing in it is
//!   reachable (traceconv still writes its empty profile). `index` counts the dump's packets from 0; a packet whose
//!   index is not the previous one plus one (or a first packet whose index is not 0) means
//!   packets were lost, and the dump is marked incomplete. A dump still open at the end of the
//!   trace is finished anyway and marked incomplete.
//! * **Per-dump state** (reset when a dump ends): interned field names (`"[<type> ]Class.field"`,
//!   split at the first space into type and name), location names and types
//!   (`HeapGraphType`: name, size, superclass, own reference-field names, kind, class loader).
//!   Any of them may arrive after the objects that use them, so everything is resolved when the
//!   dump ends. Field and location names keep their first definition, types their last.
//! * **Objects** (`HeapGraphObject`): `id`, or `id_delta` added to the previous object's id;
//!   `heap_type_delta` is written only when the heap changes and is otherwise inherited from
//!   the previous object; `self_size` 0 means the type's `object_size`;
//!   `reference_object_id` holds the referenced ids (0 is null; every other value has
//!   `reference_field_id_base` added), `reference_field_id` their field-name ids (Android
//!   before S, and class objects and arrays since). When an object carries no field ids, its
//!   references are named by walking its type's `reference_field_id` list, then its
//!   superclass's, and so on (types of kind NOREFERENCES, ARRAY and STRING have none).
//!   `runtime_internal_object_id` lists references the runtime holds (no field).
//!   An object whose field-id and reference lists differ in length is dropped.
//! * **Roots** (`HeapGraphRoot`): ids by root type. Objects on the zygote and boot-image heaps
//!   are also `VM_INTERNAL` roots (the collector never frees them); those roots follow the
//!   producer's in [`HeapDump::roots`]. [`HeapDump::root_kinds`] applies trace processor's
//!   precedence when an object is rooted several ways.
//! * **Native sizes**: a `sun.misc.Cleaner` whose `next` is not itself, with `referent` X and
//!   `thunk` T, where T's `NativeAllocationRegistry$CleanerThunk.this$0` is a registry R,
//!   adds R's `native_allocation_registry_size_field` (bit 0, a "malloced" flag, cleared) to
//!   X's native size.
//!
//! Objects are numbered in trace processor's row order: by the first time their id appears,
//! as an object or as the target of a reference. Ids that are referenced but never defined are
//! not objects: references to them are [`REF_DANGLING`]. Classes come in the order objects
//! first use them, then the types no object uses by ascending type id. Class names are kept as
//! the trace gives them (`java.lang.Class<X>` names the type of X's class object, whose object
//! gets [`ObjectKind::Class`] and becomes [`Class::object`] of X).
//!
//! Two deliberate differences from trace processor: a field name defined in an earlier packet
//! than the object that uses it is applied (trace processor names only references whose field
//! names arrive in the same packet or later), and a type that is referenced but never defined
//! still gets a class, with an empty name.

mod decoder;
mod dump_builder;

use decoder::*;
use dump_builder::*;

use rustc_hash::FxHashMap as HashMap;

use super::clock::BOOTTIME;
use super::packets::{TraceDecoder, TraceState, read_trace};
use crate::decode::input::Input;
use crate::error::Result;
use crate::model::heap::{
    BasicType, Class, ClassIdx, ClassKind, FieldDesc, FieldIdx, HeapDump, NO_FIELD, ObjIdx, ObjectKind, REF_DANGLING,
    REF_NULL, Root, RootKind, class_object_target, primitive_array_element,
};
use crate::model::{HeapGraphReport, TraceReport};
use crate::proto::perfetto as pb;

/// Options of the heap-graph decoder.
#[derive(Debug, Clone)]
pub struct HeapGraphOptions {
    /// Largest packet accepted, in bytes. Default: 256 MiB.
    pub max_packet_bytes: u64,
    /// Largest expansion of one `compressed_packets` bundle, in bytes. Default: 256 MiB.
    pub max_bundle_bytes: u64,
    /// Build dumps of these pids only (empty: all); every dump is still reported.
    /// Default: empty.
    pub pids: Vec<u64>,
}

impl Default for HeapGraphOptions {
    fn default() -> Self {
        HeapGraphOptions { max_packet_bytes: 256 << 20, max_bundle_bytes: 256 << 20, pids: Vec::new() }
    }
}

/// Names of the heaps of a decoded heap graph, indexed by `HeapGraphObject.HeapType`.
pub const HEAP_NAMES: [&str; 4] = ["unknown", "app", "zygote", "image"];

const HEAP_ZYGOTE: u8 = 2;
const HEAP_BOOT_IMAGE: u8 = 3;
const NO_ROW: u32 = u32::MAX;
const NO_DEF: u32 = u32::MAX;

/// Object layout of ART arrays: the offset of element data for elements of `size` bytes
/// (8-byte header and 4-byte length, then data aligned to the element size).
fn art_array_data_offset(size: u64) -> u64 {
    if size >= 8 { 16 } else { 12 }
}

/// Decodes every heap graph dump of a trace, handing each to `sink` when it ends and no dump
/// still open comes before it in trace time (so memory holds the open dumps and those that
/// wait for an earlier one, not all of them). Dumps come in trace-time order as trace processor
/// numbers them (it sorts packets by time), dumps at the same time in the order they begin.
///
/// Returns the report of the trace (`heap_graphs` lists every dump, including those of pids
/// not asked for). A damaged trace is not an error: decoding stops at the damage, dumps still
/// open are finished and marked incomplete, and `damage` says what and where. Errors are I/O
/// failures and errors from `sink`.
pub fn decode_heap_graphs(
    input: &mut Input,
    opts: &HeapGraphOptions,
    sink: &mut dyn FnMut(HeapDump) -> Result<()>,
) -> Result<TraceReport> {
    let mut d = Decoder {
        trace: TraceState::new(input, opts.max_packet_bytes, opts.max_bundle_bytes),
        opts: opts.clone(),
        ..Default::default()
    };
    read_trace(input, &mut d, &mut |d, pkt, offset, number| d.trace_packet(pkt, offset, number, sink))?;
    // Dumps still open at the end are finished anyway (as trace processor does), in sequence
    // order, and flagged.
    let mut open: Vec<_> = d.open.keys().copied().collect();
    open.sort_unstable();
    for key in open {
        let mut dump = d.open.remove(&key).expect("open dump");
        let why = if d.trace.report.damage.is_some() {
            "the trace is damaged before the dump's last packet (continued = false)"
        } else {
            "the trace ends before the dump's last packet (continued = false)"
        };
        dump.incomplete.push(why.to_owned());
        d.finish(dump)?;
    }
    d.release(true, sink)?;
    for g in &mut d.trace.report.heap_graphs {
        if g.process_name.is_none() {
            g.process_name = d.trace.report.processes.get(&g.pid).cloned();
        }
    }
    Ok(d.trace.report)
}

/// Decodes a whole trace and returns every heap graph dump (of the pids asked for), with
/// process names known by the end of the trace.
pub fn decode_heap_graphs_all(input: &mut Input, opts: &HeapGraphOptions) -> Result<(Vec<HeapDump>, TraceReport)> {
    let mut out = Vec::new();
    let report = decode_heap_graphs(input, opts, &mut |d| {
        out.push(d);
        Ok(())
    })?;
    for d in &mut out {
        if d.process_name.is_none() {
            d.process_name = d.pid.and_then(|p| report.processes.get(&u64::from(p)).cloned());
        }
    }
    Ok((out, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_offsets_follow_art() {
        assert_eq!(art_array_data_offset(1), 12);
        assert_eq!(art_array_data_offset(4), 12);
        assert_eq!(art_array_data_offset(8), 16);
    }
}
