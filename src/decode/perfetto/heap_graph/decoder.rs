//! The heap graph decoder: `HeapGraph` packets gathered per dump (types, objects, roots,
//! interned names) until the dump's last packet.

use super::*;

/// A type as the dump defines it.
#[derive(Debug, Clone, Default)]
pub(super) struct TypeDef {
    pub(super) name: String,
    pub(super) location_id: Option<u64>,
    pub(super) object_size: u64,
    pub(super) field_ids: Vec<u64>,
    pub(super) superclass_id: u64,
    pub(super) classloader_id: u64,
    pub(super) kind: i32,
}

impl TypeDef {
    /// Types whose references have no field names (trace processor's `no_fields`).
    pub(super) fn no_fields(&self) -> bool {
        matches!(self.kind, 2..=4)
    }
}

/// One object definition as read, its references kept as rows until the dump ends.
#[derive(Debug, Clone, Copy)]
pub(super) struct ObjDef {
    pub(super) row: u32,
    pub(super) type_slot: u32,
    pub(super) self_size: u64,
    pub(super) heap: u8,
    pub(super) refs_start: u64,
    pub(super) n_refs: u32,
    pub(super) n_internal: u32,
    /// Start of this object's explicit field ids in `Dump::obj_field_ids` (`u64::MAX`: none).
    pub(super) fields_start: u64,
}

/// The state of one dump being read on one sequence.
#[derive(Default)]
pub(super) struct Dump {
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
    pub(super) incomplete: Vec<String>,
    last_object_id: u64,
    last_heap: u8,
    heap_bytes_allocated: Option<i64>,

    /// id -> row, rows in order of first appearance (as object or reference target).
    pub(super) rows: HashMap<u64, u32>,
    pub(super) row_ids: Vec<u64>,
    /// row -> index in `defs` of its (last) definition.
    pub(super) row_def: Vec<u32>,
    pub(super) defs: Vec<ObjDef>,
    /// Reference targets as rows ([`NO_ROW`] for null).
    pub(super) ref_rows: Vec<u32>,
    pub(super) obj_field_ids: Vec<u64>,
    /// (definition, `native_allocation_registry_size_field`) of the objects that have one.
    pub(super) nar: Vec<(u32, i64)>,

    /// type id -> slot, slots in order of first use by an object.
    pub(super) type_slots: HashMap<u64, u32>,
    pub(super) type_slot_ids: Vec<u64>,
    pub(super) types: HashMap<u64, TypeDef>,
    pub(super) fields: HashMap<u64, String>,
    pub(super) locations: HashMap<u64, String>,
    pub(super) roots: Vec<(RootKind, Vec<u64>)>,
    pub(super) vm_internal: Vec<u64>,

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

    pub(super) fn type_slot(&mut self, id: u64) -> u32 {
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
pub(super) struct Finished {
    /// (trace time, start order): the order dumps are handed on.
    key: (i64, u64),
    report: HeapGraphReport,
    /// The dump, when its pid is wanted.
    heap: Option<HeapDump>,
}
#[derive(Default)]
pub(super) struct Decoder {
    pub(super) trace: TraceState,
    pub(super) opts: HeapGraphOptions,
    /// Dumps being read, by (sequence, (clock, raw timestamp)).
    pub(super) open: HashMap<(u32, (u32, u64)), Dump>,
    /// Dumps begun so far (the next dump's `order`).
    pub(super) started: u64,
    /// Dumps finished but not yet handed on: released in trace-time order, each once no open
    /// dump comes before it (trace processor reads the packets sorted by time).
    pub(super) done: Vec<Finished>,
    /// Per sequence: the default timestamp clock (`trace_packet_defaults`).
    pub(super) seq_clock: HashMap<u32, u32>,
    /// Dumps finished per pid (for `HeapGraphReport::index`).
    pub(super) per_pid: HashMap<u64, usize>,
}

impl TraceDecoder for Decoder {
    fn trace(&mut self) -> &mut TraceState {
        &mut self.trace
    }
}

impl Decoder {
    pub(super) fn trace_packet(
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
    pub(super) fn finish(&mut self, dump: Dump) -> Result<()> {
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
    pub(super) fn release(&mut self, all: bool, sink: &mut dyn FnMut(HeapDump) -> Result<()>) -> Result<()> {
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
