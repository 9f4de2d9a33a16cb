//! The heapprofd decoder: packets in, interned tables and dump chains updated, finished dumps
//! handed to the sink.

use super::*;

/// Where finished dumps go: the frame hook, then the sink.
#[allow(clippy::type_complexity)]
pub(super) struct Out<'a, 'b, 'c> {
    pub(super) hook: &'a mut (dyn FnMut(&mut Tables, std::ops::Range<usize>) + 'b),
    pub(super) stacks: Option<&'a mut StackHook<'c>>,
    pub(super) seen: Option<&'a mut FramesSeenHook<'c>>,
    pub(super) sink: Sink<'a, 'b>,
    /// The trace has ended: every held dump is closed.
    pub(super) ending: bool,
}

pub(super) struct Decoder {
    pub(super) trace: TraceState,
    opts: DecodeOptions,
    pub(super) tables: Arc<Tables>,
    seqs: HashMap<u32, Sequence>,
    series: HashMap<(u64, String), Series>,
    frames_hooked: usize,
    /// Frames handed to the frames-seen hook so far.
    frames_seen: usize,
    // Callstacks interned since the last call of the stack hook.
    fresh: Vec<StackId>,
    pub(super) symbols: SymbolPackets,
    pub(super) symbols_prescanned: bool,
    /// Finished dumps not yet handed to the sink, in the order they began.
    held: std::collections::VecDeque<Held>,
    /// Callstacks as frame lists instead of stack-tree nodes ([`decode_heapprofd_frames`]).
    pub(super) lists: Option<StackLists>,
    /// The buffers of the last packet read, for the next.
    pub(super) spare: Option<Box<Hot>>,
}

impl TraceDecoder for Decoder {
    fn trace(&mut self) -> &mut TraceState {
        &mut self.trace
    }
}

impl Decoder {
    pub(super) fn new(input: &Input, opts: &DecodeOptions) -> Self {
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

    pub(super) fn trace_packet(
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
    pub(super) fn flush(&mut self, out: &mut Out<'_, '_, '_>) -> Result<()> {
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
    pub(super) fn release(&mut self) {
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

    pub(super) fn finish(&mut self) {
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
