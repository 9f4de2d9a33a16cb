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

/// A type as the dump defines it.
#[derive(Debug, Clone, Default)]
struct TypeDef {
    name: String,
    location_id: Option<u64>,
    object_size: u64,
    field_ids: Vec<u64>,
    superclass_id: u64,
    classloader_id: u64,
    kind: i32,
}

impl TypeDef {
    /// Types whose references have no field names (trace processor's `no_fields`).
    fn no_fields(&self) -> bool {
        matches!(self.kind, 2..=4)
    }
}

/// One object definition as read, its references kept as rows until the dump ends.
#[derive(Debug, Clone, Copy)]
struct ObjDef {
    row: u32,
    type_slot: u32,
    self_size: u64,
    heap: u8,
    refs_start: u64,
    n_refs: u32,
    n_internal: u32,
    /// Start of this object's explicit field ids in `Dump::obj_field_ids` (`u64::MAX`: none).
    fields_start: u64,
}

/// The state of one dump being read on one sequence.
#[derive(Default)]
struct Dump {
    seq: u32,
    /// Position among the dumps of the trace, by first packet.
    order: u64,
    pid: i32,
    /// (clock, raw timestamp) of the dump; raw 0 is "not set".
    ts: (u32, u64),
    first_offset: u64,
    first_packet: u64,
    packets: u64,
    prev_index: Option<u64>,
    incomplete: Vec<String>,
    last_object_id: u64,
    last_heap: u8,
    heap_bytes_allocated: Option<i64>,

    /// id -> row, rows in order of first appearance (as object or reference target).
    rows: HashMap<u64, u32>,
    row_ids: Vec<u64>,
    /// row -> index in `defs` of its (last) definition.
    row_def: Vec<u32>,
    defs: Vec<ObjDef>,
    /// Reference targets as rows ([`NO_ROW`] for null).
    ref_rows: Vec<u32>,
    obj_field_ids: Vec<u64>,
    /// (definition, `native_allocation_registry_size_field`) of the objects that have one.
    nar: Vec<(u32, i64)>,

    /// type id -> slot, slots in order of first use by an object.
    type_slots: HashMap<u64, u32>,
    type_slot_ids: Vec<u64>,
    types: HashMap<u64, TypeDef>,
    fields: HashMap<u64, String>,
    locations: HashMap<u64, String>,
    roots: Vec<(RootKind, Vec<u64>)>,
    vm_internal: Vec<u64>,

    dropped_objects: u64,
    dropped_roots: u64,
    malformed_objects: u64,
    duplicate_objects: u64,
    /// Type ids defined more than once (the last definition is kept).
    duplicate_types: u64,
}

impl Dump {
    fn row(&mut self, id: u64) -> u32 {
        if let Some(&r) = self.rows.get(&id) {
            return r;
        }
        let r = self.row_ids.len() as u32;
        self.rows.insert(id, r);
        self.row_ids.push(id);
        self.row_def.push(NO_DEF);
        r
    }

    fn type_slot(&mut self, id: u64) -> u32 {
        if let Some(&s) = self.type_slots.get(&id) {
            return s;
        }
        let s = self.type_slot_ids.len() as u32;
        self.type_slots.insert(id, s);
        self.type_slot_ids.push(id);
        s
    }

    /// Trace processor's pid and time check: false when the packet belongs to another dump.
    fn accept(&mut self, pid: i32, ts: (u32, u64)) -> bool {
        if self.pid != 0 && self.pid != pid {
            return false;
        }
        if self.ts.1 != 0 && self.ts != ts {
            return false;
        }
        self.pid = pid;
        self.ts = ts;
        true
    }
}

/// A finished dump waiting for its turn.
struct Finished {
    /// (trace time, start order): the order dumps are handed on.
    key: (i64, u64),
    report: HeapGraphReport,
    /// The dump, when its pid is wanted.
    heap: Option<HeapDump>,
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

#[derive(Default)]
struct Decoder {
    trace: TraceState,
    opts: HeapGraphOptions,
    /// Dumps being read, by (sequence, (clock, raw timestamp)).
    open: HashMap<(u32, (u32, u64)), Dump>,
    /// Dumps begun so far (the next dump's `order`).
    started: u64,
    /// Dumps finished but not yet handed on: released in trace-time order, each once no open
    /// dump comes before it (trace processor reads the packets sorted by time).
    done: Vec<Finished>,
    /// Per sequence: the default timestamp clock (`trace_packet_defaults`).
    seq_clock: HashMap<u32, u32>,
    /// Dumps finished per pid (for `HeapGraphReport::index`).
    per_pid: HashMap<u64, usize>,
}

impl TraceDecoder for Decoder {
    fn trace(&mut self) -> &mut TraceState {
        &mut self.trace
    }
}

impl Decoder {
    fn trace_packet(
        &mut self,
        pkt: pb::TracePacket,
        offset: u64,
        number: u64,
        sink: &mut dyn FnMut(HeapDump) -> Result<()>,
    ) -> Result<()> {
        let seq_id = pkt.trusted_packet_sequence_id.unwrap_or(0);
        if let Some(clock) = pkt.trace_packet_defaults.as_ref().and_then(|d| d.timestamp_clock_id) {
            self.seq_clock.insert(seq_id, clock);
        }
        if pkt.profile_packet.is_some() {
            self.trace.kind("profile_packet");
        }
        if pkt.module_symbols.is_some() {
            self.trace.kind("module_symbols");
        }
        let Some(hg) = pkt.heap_graph else { return Ok(()) };
        self.trace.kind("heap_graph");
        let clock = pkt
            .timestamp_clock_id
            .filter(|&c| c != 0)
            .or_else(|| self.seq_clock.get(&seq_id).copied())
            .unwrap_or(BOOTTIME);
        let ts = (clock, pkt.timestamp.or(self.trace.last_ts).unwrap_or(0));
        let pid = hg.pid.unwrap_or(0);
        // A dump is the packets of one sequence and time: trace processor sorts packets by
        // timestamp before it parses them, so the packets of two dumps that interleave on one
        // sequence (two processes at two times) reach it as two runs, each with its own
        // indices from 0. Within one time, its per-sequence rules hold (another pid is dropped).
        let key = (seq_id, ts);
        let order = self.started;
        let dump = self.open.entry(key).or_insert_with(|| Dump {
            seq: seq_id,
            order,
            first_offset: offset,
            first_packet: number,
            ..Default::default()
        });
        if dump.order == order {
            self.started += 1;
        }
        dump.packets += 1;
        // Packet index: from 0, one more per packet.
        let index = hg.index.unwrap_or(0);
        match dump.prev_index {
            None if index != 0 => {
                dump.incomplete.push(format!("the first packet of the dump has index {index}, not 0"));
            }
            Some(prev) if prev.wrapping_add(1) != index => {
                dump.incomplete.push(format!("packets missing between index {prev} and {index}"));
            }
            _ => {}
        }
        dump.prev_index = Some(index);
        if let Some(h) = hg.heap_bytes_allocated {
            dump.heap_bytes_allocated = Some(h);
        }

        for o in hg.objects {
            let id = match o.id_delta {
                Some(delta) if delta != 0 => dump.last_object_id.wrapping_add(delta),
                _ => o.id.unwrap_or(0),
            };
            let heap = match o.heap_type_delta {
                Some(h) => u8::try_from(h).ok().filter(|&h| (h as usize) < HEAP_NAMES.len()).unwrap_or(0),
                None => dump.last_heap,
            };
            if !o.reference_field_id.is_empty() && o.reference_field_id.len() != o.reference_object_id.len() {
                dump.malformed_objects += 1;
                continue;
            }
            if !dump.accept(pid, ts) {
                dump.dropped_objects += 1;
                continue;
            }
            dump.last_object_id = id;
            dump.last_heap = heap;
            let row = dump.row(id);
            let type_slot = dump.type_slot(o.type_id.unwrap_or(0));
            if heap == HEAP_ZYGOTE || heap == HEAP_BOOT_IMAGE {
                dump.vm_internal.push(id);
            }
            let base = o.reference_field_id_base.unwrap_or(0);
            let refs_start = dump.ref_rows.len() as u64;
            for &r in &o.reference_object_id {
                let t = if r == 0 { NO_ROW } else { dump.row(r.wrapping_add(base)) };
                dump.ref_rows.push(t);
            }
            for &r in &o.runtime_internal_object_id {
                let t = if r == 0 { NO_ROW } else { dump.row(r) };
                dump.ref_rows.push(t);
            }
            let fields_start = if o.reference_field_id.is_empty() {
                u64::MAX
            } else {
                let s = dump.obj_field_ids.len() as u64;
                dump.obj_field_ids.extend_from_slice(&o.reference_field_id);
                s
            };
            let def = ObjDef {
                row,
                type_slot,
                self_size: o.self_size.unwrap_or(0),
                heap,
                refs_start,
                n_refs: o.reference_object_id.len() as u32,
                n_internal: o.runtime_internal_object_id.len() as u32,
                fields_start,
            };
            let slot = &mut dump.row_def[row as usize];
            if *slot != NO_DEF {
                dump.duplicate_objects += 1;
            }
            *slot = dump.defs.len() as u32;
            if let Some(size) = o.native_allocation_registry_size_field {
                dump.nar.push((*slot, size));
            }
            dump.defs.push(def);
        }
        for t in hg.types {
            let id = t.id.unwrap_or(0);
            let kind = t.kind.filter(|k| (0..=11).contains(k)).unwrap_or(0);
            if dump.types.contains_key(&id) {
                dump.duplicate_types += 1;
            }
            dump.types.insert(
                id,
                TypeDef {
                    name: String::from_utf8_lossy(t.class_name.as_deref().unwrap_or_default()).into_owned(),
                    location_id: t.location_id,
                    object_size: t.object_size.unwrap_or(0),
                    field_ids: t.reference_field_id,
                    superclass_id: t.superclass_id.unwrap_or(0),
                    classloader_id: t.classloader_id.unwrap_or(0),
                    kind,
                },
            );
        }
        for f in hg.field_names {
            let iid = f.iid.unwrap_or(0);
            let s = String::from_utf8_lossy(f.str.as_deref().unwrap_or_default());
            let name = match s.find(' ') {
                Some(i) => &s[i + 1..],
                None => &s[..],
            };
            dump.fields.entry(iid).or_insert_with(|| name.to_owned());
        }
        for l in hg.location_names {
            let iid = l.iid.unwrap_or(0);
            dump.locations
                .entry(iid)
                .or_insert_with(|| String::from_utf8_lossy(l.str.as_deref().unwrap_or_default()).into_owned());
        }
        for r in hg.roots {
            if !dump.accept(pid, ts) {
                dump.dropped_roots += r.object_ids.len() as u64;
                continue;
            }
            dump.roots.push((RootKind::from_perfetto(r.root_type.unwrap_or(0)), r.object_ids));
        }
        if !hg.continued.unwrap_or(false) {
            let dump = self.open.remove(&key).expect("open dump");
            self.finish(dump)?;
            self.release(false, sink)?;
        }
        Ok(())
    }

    /// Ends a dump: resolves it into a [`HeapDump`] and its report, held until
    /// [`Decoder::release`] hands them on.
    fn finish(&mut self, dump: Dump) -> Result<()> {
        let at = (Some(dump.first_offset), Some(dump.first_packet));
        let pid = u64::try_from(dump.pid).unwrap_or(0);
        let seq = dump.seq;
        let counted = [
            (
                dump.dropped_objects + dump.dropped_roots,
                format!(
                    "{} object(s) and {} root(s) dropped: their packets name another pid or time than the dump's first packet",
                    dump.dropped_objects, dump.dropped_roots
                ),
            ),
            (
                dump.malformed_objects,
                format!(
                    "{} object(s) dropped: their field-id and reference lists differ in length",
                    dump.malformed_objects
                ),
            ),
            (
                dump.duplicate_objects,
                format!("{} object id(s) defined twice; the last definition is kept", dump.duplicate_objects),
            ),
            (
                dump.duplicate_types,
                format!("{} type id(s) defined twice; the last definition is kept", dump.duplicate_types),
            ),
        ];
        for (n, what) in counted {
            if n > 0 {
                self.trace.report.problem(at.0, at.1, format!("sequence {seq}: {what}"));
            }
        }
        if dump.defs.is_empty() && dump.roots.is_empty() {
            self.trace.report.problem(
                at.0,
                at.1,
                format!("sequence {seq}: a heap graph dump with no objects and no roots"),
            );
            return Ok(());
        }
        let (timestamp, converted) = if dump.ts.1 == 0 {
            (None, false)
        } else {
            match self.trace.clocks.to_trace(dump.ts.0, dump.ts.1) {
                Some(t) => (Some(t), true),
                None => (i64::try_from(dump.ts.1).ok(), false),
            }
        };
        let order = dump.order;
        let mut problems = Vec::new();
        let wanted = self.opts.pids.is_empty() || self.opts.pids.contains(&pid);
        let mut report = HeapGraphReport {
            pid,
            process_name: self.trace.report.processes.get(&pid).cloned(),
            sequence: seq,
            timestamp,
            raw_timestamp: (dump.ts.1 != 0).then_some(dump.ts.1),
            timestamp_converted: converted,
            packets: dump.packets,
            heap_bytes_allocated: dump.heap_bytes_allocated,
            incomplete: dump.incomplete.clone(),
            ..Default::default()
        };
        let built = build(dump, &mut problems);
        let mut heap = built;
        heap.pid = u32::try_from(pid).ok().filter(|&p| p != 0);
        heap.process_name = report.process_name.clone();
        heap.timestamp = timestamp;
        heap.timestamp_converted = converted;
        heap.incomplete = report.incomplete.clone();
        heap.source = format!("perfetto heap graph ({})", self.trace.name);
        report.objects = heap.len() as u64;
        report.classes = heap.classes.len() as u64;
        report.references = heap.ref_target.len() as u64;
        report.roots = heap.roots.len() as u64;
        report.rooted_objects = heap.root_kinds().iter().filter(|k| k.is_some()).count() as u64;
        report.dangling_refs = heap.dangling_refs;
        report.shallow_bytes = heap.obj_self_size.iter().fold(0u64, |a, &b| a.saturating_add(b));
        report.native_bytes = heap.obj_native_size.iter().fold(0u64, |a, &b| a.saturating_add(b));
        for p in problems {
            self.trace.report.problem(at.0, at.1, format!("sequence {seq}, pid {pid}: {p}"));
        }
        for why in &report.incomplete {
            self.trace.report.problem(at.0, at.1, format!("sequence {seq}, pid {pid}: heap graph incomplete: {why}"));
        }
        if report.rooted_objects == 0 && report.objects > 0 && report.incomplete.is_empty() {
            self.trace.report.problem(
                at.0,
                at.1,
                format!(
                    "sequence {seq}, pid {pid}: the heap graph has {} object(s) but no roots: none is reachable, so its profile is empty",
                    report.objects
                ),
            );
        }
        debug_assert_eq!(heap.validate(), Ok(()));
        let key = (timestamp.unwrap_or(i64::MIN), order);
        self.done.push(Finished { key, report, heap: wanted.then_some(heap) });
        Ok(())
    }

    /// Hands on the finished dumps that no open dump precedes in trace time (all of them at
    /// the end of the trace), in trace-time order, then start order; each is numbered among the
    /// dumps of its pid as it goes.
    fn release(&mut self, all: bool, sink: &mut dyn FnMut(HeapDump) -> Result<()>) -> Result<()> {
        let first_open = if all {
            None
        } else {
            self.open
                .values()
                .map(|d| {
                    let t = if d.ts.1 == 0 {
                        None
                    } else {
                        self.trace.clocks.to_trace(d.ts.0, d.ts.1).or_else(|| i64::try_from(d.ts.1).ok())
                    };
                    (t.unwrap_or(i64::MIN), d.order)
                })
                .min()
        };
        self.done.sort_by_key(|f| std::cmp::Reverse(f.key));
        while let Some(f) = self.done.last() {
            if first_open.is_some_and(|o| o < f.key) {
                break;
            }
            let mut f = self.done.pop().expect("last exists");
            let n = self.per_pid.entry(f.report.pid).or_default();
            f.report.index = *n;
            *n += 1;
            self.trace.report.heap_graphs.push(f.report);
            if let Some(heap) = f.heap {
                sink(heap)?;
            }
        }
        Ok(())
    }
}

/// How objects of a class are laid out, from its name and kind.
fn object_kind(c: &Class) -> Option<ObjectKind> {
    if class_object_target(&c.name).is_some() {
        return Some(ObjectKind::Class);
    }
    if c.name.ends_with("[]") {
        return Some(match primitive_array_element(&c.name) {
            Some(t) => ObjectKind::PrimitiveArray(t),
            None => ObjectKind::ObjectArray,
        });
    }
    if c.kind == ClassKind::Array {
        // An array whose element type the name does not tell: decided per object.
        return None;
    }
    Some(ObjectKind::Instance)
}

/// Interns field names into a dump's table.
struct FieldNames<'a> {
    by_iid: HashMap<u64, FieldIdx>,
    by_name: HashMap<String, FieldIdx>,
    defs: &'a HashMap<u64, String>,
    undefined: u64,
}

impl FieldNames<'_> {
    fn name(&mut self, out: &mut Vec<String>, name: &str) -> FieldIdx {
        if let Some(&f) = self.by_name.get(name) {
            return f;
        }
        let f = out.len() as FieldIdx;
        out.push(name.to_owned());
        self.by_name.insert(name.to_owned(), f);
        f
    }

    /// The field for an interned field-name id, or [`NO_FIELD`] when it is not defined.
    fn iid(&mut self, out: &mut Vec<String>, iid: u64) -> FieldIdx {
        if let Some(&f) = self.by_iid.get(&iid) {
            return f;
        }
        let f = match self.defs.get(&iid) {
            Some(n) => {
                let n = n.clone();
                self.name(out, &n)
            }
            None => {
                self.undefined += 1;
                NO_FIELD
            }
        };
        self.by_iid.insert(iid, f);
        f
    }
}

/// Resolves a finished dump into the shared model.
fn build(mut d: Dump, problems: &mut Vec<String>) -> HeapDump {
    let mut out =
        HeapDump { id_size: 8, heaps: HEAP_NAMES.iter().map(|s| (*s).to_owned()).collect(), ..Default::default() };

    // Classes: types used by objects in order of first use, then unused types by id.
    let mut unused: Vec<u64> = d.types.keys().copied().filter(|id| !d.type_slots.contains_key(id)).collect();
    unused.sort_unstable();
    for id in unused {
        d.type_slot(id);
    }
    let mut names =
        FieldNames { by_iid: HashMap::default(), by_name: HashMap::default(), defs: &d.fields, undefined: 0 };
    let empty = TypeDef::default();
    let mut undefined_types = 0u64;
    let mut missing_locations = 0u64;
    let mut missing_supers = 0u64;
    for &tid in &d.type_slot_ids {
        let t = match d.types.get(&tid) {
            Some(t) => t,
            None => {
                undefined_types += 1;
                &empty
            }
        };
        let location = t.location_id.and_then(|l| match d.locations.get(&l) {
            Some(s) => Some(s.clone()),
            None => {
                missing_locations += 1;
                None
            }
        });
        let superclass = if t.superclass_id == 0 {
            None
        } else {
            match d.type_slots.get(&t.superclass_id) {
                Some(&s) if d.types.contains_key(&t.superclass_id) => Some(s as ClassIdx),
                _ => {
                    missing_supers += 1;
                    None
                }
            }
        };
        let fields = t
            .field_ids
            .iter()
            .map(|&f| {
                let name = match names.iid(&mut out.field_names, f) {
                    NO_FIELD => names.name(&mut out.field_names, &format!("<field {f}>")),
                    n => n,
                };
                FieldDesc { name, ty: BasicType::Object }
            })
            .collect();
        out.classes.push(Class {
            id: tid,
            name: t.name.clone(),
            superclass,
            classloader_id: t.classloader_id,
            instance_size: t.object_size,
            kind: ClassKind::from_perfetto(t.kind),
            fields,
            static_refs: Vec::new(),
            location,
            object: None,
        });
    }
    if undefined_types > 0 {
        problems
            .push(format!("{undefined_types} type(s) used by objects were never defined (their classes have no name)"));
    }
    if missing_locations > 0 {
        problems.push(format!("{missing_locations} type(s) name a location that was never defined"));
    }
    if missing_supers > 0 {
        problems.push(format!("{missing_supers} type(s) name a superclass that was never defined"));
    }
    let kinds: Vec<Option<ObjectKind>> = out.classes.iter().map(object_kind).collect();
    // Per class: the field names its instances' references take when they carry no field
    // ids: the type's list, then its superclass's, and so on (trace processor's walk), as far
    // as its instances need (their most references), so that a long chain of superclasses
    // costs what the references do, not its length per class.
    let mut need: Vec<u32> = vec![0; d.type_slot_ids.len()];
    for o in d.defs.iter().filter(|o| o.fields_start == u64::MAX) {
        let n = &mut need[o.type_slot as usize];
        *n = (*n).max(o.n_refs);
    }
    let loops = superclass_loops(&d.types);
    if loops > 0 {
        problems.push(format!("{loops} superclass chain(s) loop back on themselves; each is cut where it repeats"));
    }
    let with_fields = nearest_with_fields(&d.types);
    let chain_fields: Vec<Option<Vec<FieldIdx>>> = d
        .type_slot_ids
        .iter()
        .zip(&need)
        .map(|(tid, &need)| {
            d.types.get(tid).filter(|t| !t.no_fields())?;
            let mut list = Vec::new();
            let mut seen: rustc_hash::FxHashSet<u64> = rustc_hash::FxHashSet::default();
            let mut cur = with_fields.get(tid).copied().unwrap_or(0);
            // Each step adds at least one name: at most `need` steps.
            while cur != 0 && list.len() < need as usize && seen.insert(cur) {
                let Some(c) = d.types.get(&cur) else { break };
                let room = need as usize - list.len();
                list.extend(c.field_ids.iter().take(room).map(|&f| names.iid(&mut out.field_names, f)));
                if c.superclass_id == 0 {
                    break;
                }
                cur = with_fields.get(&c.superclass_id).copied().unwrap_or(0);
            }
            Some(list)
        })
        .collect();

    // Objects in row order; rows never defined are not objects.
    let mut row_obj: Vec<ObjIdx> = Vec::with_capacity(d.row_def.len());
    let mut n = 0u32;
    for &def in &d.row_def {
        if def == NO_DEF {
            row_obj.push(REF_DANGLING);
        } else {
            row_obj.push(n);
            n += 1;
        }
    }
    let nobj = n as usize;
    out.obj_id.reserve(nobj);
    out.obj_class.reserve(nobj);
    out.obj_kind.reserve(nobj);
    out.obj_heap.reserve(nobj);
    out.obj_self_size.reserve(nobj);
    out.obj_native_size.reserve(nobj);
    out.obj_len.reserve(nobj);
    out.ref_start.reserve(nobj + 1);
    out.ref_target.reserve(d.ref_rows.len());
    out.ref_field.reserve(d.ref_rows.len());
    let mut unnamed_walks = 0u64;
    for (row, &def) in d.row_def.iter().enumerate() {
        if def == NO_DEF {
            continue;
        }
        let o = d.defs[def as usize];
        let tid = d.type_slot_ids[o.type_slot as usize];
        let ty = d.types.get(&tid);
        let class = o.type_slot as ClassIdx;
        let mut self_size = o.self_size;
        if self_size == 0 {
            self_size = ty.map(|t| t.object_size).unwrap_or(0);
        }
        let kind = kinds[class as usize].unwrap_or(if o.n_refs > 0 {
            ObjectKind::ObjectArray
        } else {
            ObjectKind::PrimitiveArray(BasicType::Byte)
        });
        let len = match kind {
            ObjectKind::ObjectArray => o.n_refs,
            ObjectKind::PrimitiveArray(t) => {
                let size = u64::from(t.size(4));
                let off = art_array_data_offset(size);
                u32::try_from(self_size.saturating_sub(off) / size).unwrap_or(u32::MAX)
            }
            _ => 0,
        };
        out.push_object(d.row_ids[row], class, kind, o.heap, self_size, len);
        // Field names of the references.
        let refs = &d.ref_rows[o.refs_start as usize..(o.refs_start + u64::from(o.n_refs)) as usize];
        let explicit = o.fields_start != u64::MAX;
        let chain = if explicit { None } else { chain_fields[class as usize].as_deref() };
        if chain.is_some_and(|c| refs.len() > c.len()) {
            unnamed_walks += 1;
        }
        for (i, &r) in refs.iter().enumerate() {
            let field = if explicit {
                names.iid(&mut out.field_names, d.obj_field_ids[o.fields_start as usize + i])
            } else {
                chain.and_then(|c| c.get(i).copied()).unwrap_or(NO_FIELD)
            };
            let target = if r == NO_ROW { REF_NULL } else { row_obj[r as usize] };
            if target == REF_DANGLING {
                out.dangling_refs += 1;
            }
            out.push_ref(field, target);
        }
        let internal_start = (o.refs_start + u64::from(o.n_refs)) as usize;
        for &r in &d.ref_rows[internal_start..internal_start + o.n_internal as usize] {
            let target = if r == NO_ROW { REF_NULL } else { row_obj[r as usize] };
            if target == REF_DANGLING {
                out.dangling_refs += 1;
            }
            out.push_ref(NO_FIELD, target);
        }
    }
    if out.ref_start.is_empty() {
        out.ref_start.push(0);
    }
    if names.undefined > 0 {
        problems
            .push(format!("{} field-name id(s) were never defined; those references have no name", names.undefined));
    }
    if unnamed_walks > 0 {
        problems.push(format!(
            "{unnamed_walks} object(s) have more references than their type and superclasses declare fields"
        ));
    }
    if out.dangling_refs > 0 {
        problems.push(format!("{} reference(s) to ids no object of the dump has", out.dangling_refs));
    }

    // Roots: the producer's, then VM_INTERNAL for zygote and boot-image objects.
    let mut missing_roots = 0u64;
    let lookup = |id: u64| d.rows.get(&id).map(|&r| row_obj[r as usize]).filter(|&o| o != REF_DANGLING);
    for (kind, ids) in &d.roots {
        for &id in ids {
            match lookup(id) {
                Some(object) => out.roots.push(Root { object, kind: *kind }),
                None => missing_roots += 1,
            }
        }
    }
    for &id in &d.vm_internal {
        if let Some(object) = lookup(id) {
            out.roots.push(Root { object, kind: RootKind::VmInternal });
        }
    }
    if missing_roots > 0 {
        problems.push(format!("{missing_roots} root(s) name ids no object of the dump has"));
    }

    // Registry sizes by object (the last definition of an object wins).
    let nar: Vec<(ObjIdx, i64)> = d
        .nar
        .iter()
        .filter(|&&(def, _)| d.row_def[d.defs[def as usize].row as usize] == def)
        .map(|&(def, size)| (row_obj[d.defs[def as usize].row as usize], size))
        .collect();
    native_sizes(&mut out, &nar);
    class_objects(&mut out);
    out
}

/// The first reference of `o` through field `f`, if it points at an object.
fn field_target(d: &HeapDump, o: ObjIdx, f: Option<FieldIdx>) -> Option<Option<ObjIdx>> {
    let f = f?;
    let (_, t) = d.refs(o).find(|&(rf, _)| rf == f)?;
    Some((t != REF_NULL && t != REF_DANGLING).then_some(t))
}

/// Native sizes through `sun.misc.Cleaner` → `NativeAllocationRegistry$CleanerThunk` →
/// `NativeAllocationRegistry` chains.
fn native_sizes(d: &mut HeapDump, nar: &[(ObjIdx, i64)]) {
    if nar.is_empty() {
        return;
    }
    let field = |name: &str| d.field_names.iter().position(|n| n == name).map(|i| i as FieldIdx);
    let referent = field("java.lang.ref.Reference.referent");
    let thunk = field("sun.misc.Cleaner.thunk");
    let next = field("sun.misc.Cleaner.next");
    let this0 = field("libcore.util.NativeAllocationRegistry$CleanerThunk.this$0");
    let sizes: HashMap<ObjIdx, i64> = nar.iter().copied().collect();
    let cleaners: Vec<ClassIdx> =
        (0..d.classes.len() as ClassIdx).filter(|&c| d.classes[c as usize].name == "sun.misc.Cleaner").collect();
    if cleaners.is_empty() {
        return;
    }
    let mut add: Vec<(ObjIdx, u64)> = Vec::new();
    for o in 0..d.len() as ObjIdx {
        if !cleaners.contains(&d.obj_class[o as usize]) {
            continue;
        }
        let (Some(Some(x)), Some(Some(t))) = (field_target(d, o, referent), field_target(d, o, thunk)) else {
            continue;
        };
        if field_target(d, o, next) == Some(Some(o)) {
            // `next` pointing at itself: the cleaner already ran.
            continue;
        }
        let Some(Some(r)) = field_target(d, t, this0) else { continue };
        if let Some(&size) = sizes.get(&r) {
            add.push((x, (size as u64) & !1));
        }
    }
    for (x, s) in add {
        let n = &mut d.obj_native_size[x as usize];
        *n = n.wrapping_add(s);
    }
}

/// Links class objects (`java.lang.Class<X>` instances) to the classes they stand for: sets
/// [`Class::object`] and [`Class::static_refs`], and takes a superclass from
/// `java.lang.Class.superClass` when the type named none.
fn class_objects(d: &mut HeapDump) {
    let mut by_name: HashMap<&str, Vec<ClassIdx>> = HashMap::default();
    for (i, c) in d.classes.iter().enumerate() {
        if class_object_target(&c.name).is_none() {
            by_name.entry(c.name.as_str()).or_default().push(i as ClassIdx);
        }
    }
    let field = |name: &str| d.field_names.iter().position(|n| n == name).map(|i| i as FieldIdx);
    let loader_field = field("java.lang.Class.classLoader");
    let super_field = field("java.lang.Class.superClass");
    let mut assign: Vec<(ClassIdx, ObjIdx)> = Vec::new();
    let mut taken: Vec<bool> = vec![false; d.classes.len()];
    for o in 0..d.len() as ObjIdx {
        if d.obj_kind[o as usize] != ObjectKind::Class {
            continue;
        }
        let own = &d.classes[d.obj_class[o as usize] as usize];
        let Some(target) = class_object_target(&own.name) else { continue };
        let Some(cands) = by_name.get(target) else { continue };
        let free: Vec<ClassIdx> = cands.iter().copied().filter(|&c| !taken[c as usize]).collect();
        let pick = if free.len() <= 1 {
            free.first().copied()
        } else {
            let loader = field_target(d, o, loader_field).flatten().map(|l| d.obj_id[l as usize]);
            let by_loader: Vec<ClassIdx> = match loader {
                Some(l) => free.iter().copied().filter(|&c| d.classes[c as usize].classloader_id == l).collect(),
                None => Vec::new(),
            };
            let by_location: Vec<ClassIdx> =
                free.iter().copied().filter(|&c| d.classes[c as usize].location == own.location).collect();
            by_loader.first().or(by_location.first()).or(free.first()).copied()
        };
        if let Some(c) = pick {
            taken[c as usize] = true;
            assign.push((c, o));
        }
    }
    let mut class_of_object: HashMap<ObjIdx, ClassIdx> = HashMap::default();
    for &(c, o) in &assign {
        class_of_object.insert(o, c);
    }
    for (c, o) in assign {
        let statics: Vec<(FieldIdx, ObjIdx)> = d.refs(o).collect();
        let sup = field_target(d, o, super_field).flatten().and_then(|s| class_of_object.get(&s).copied());
        let class = &mut d.classes[c as usize];
        class.object = Some(o);
        class.static_refs = statics;
        if class.superclass.is_none() {
            class.superclass = sup;
        }
    }
}

/// For every type: the nearest type of its superclass chain, itself first, that declares
/// reference fields (0: none before the chain ends or loops), in time linear in the number of
/// types.
fn nearest_with_fields(types: &HashMap<u64, TypeDef>) -> HashMap<u64, u64> {
    const BUSY: u64 = u64::MAX;
    let mut memo: HashMap<u64, u64> = HashMap::default();
    let mut ids: Vec<u64> = types.keys().copied().collect();
    ids.sort_unstable();
    let mut path: Vec<u64> = Vec::new();
    for start in ids {
        path.clear();
        let mut cur = start;
        let found = loop {
            match memo.get(&cur) {
                Some(&BUSY) => break 0,
                Some(&r) => break r,
                None => {}
            }
            let Some(t) = types.get(&cur) else { break 0 };
            if !t.field_ids.is_empty() {
                break cur;
            }
            memo.insert(cur, BUSY);
            path.push(cur);
            if t.superclass_id == 0 {
                break 0;
            }
            cur = t.superclass_id;
        };
        for &p in &path {
            memo.insert(p, found);
        }
        if found != 0 {
            memo.insert(found, found);
        }
    }
    memo
}

/// How many superclass chains loop back on themselves (each loop counted once), in time
/// linear in the number of types.
fn superclass_loops(types: &HashMap<u64, TypeDef>) -> u64 {
    // 1: on the chain being followed, 2: done.
    let mut state: HashMap<u64, u8> = HashMap::default();
    let mut ids: Vec<u64> = types.keys().copied().collect();
    ids.sort_unstable();
    let mut loops = 0;
    let mut path = Vec::new();
    for start in ids {
        path.clear();
        let mut cur = start;
        while let Some(t) = types.get(&cur) {
            match state.get(&cur) {
                Some(1) => {
                    loops += 1;
                    break;
                }
                Some(_) => break,
                None => {}
            }
            state.insert(cur, 1);
            path.push(cur);
            if t.superclass_id == 0 {
                break;
            }
            cur = t.superclass_id;
        }
        for &p in &path {
            state.insert(p, 2);
        }
    }
    loops
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
