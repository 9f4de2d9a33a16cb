//! Interned tables per sequence generation (and Android Q's per-chain inline tables), and the
//! definitions that wait for what they reference.

use super::*;

/// A raw definition waiting for what it references.
#[derive(Default)]
pub(super) struct Pending {
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
pub(super) struct Interned {
    function_names: IidMap<crate::model::StringId>,
    build_ids: HashMap<u64, Box<[u8]>>,
    mapping_paths: HashMap<u64, Box<str>>,
    /// `source_paths` (the source files of online-symbolized frames).
    source_paths: HashMap<u64, crate::model::StringId>,
    mappings: IidMap<MappingId>,
    frames: IidMap<FrameId>,
    /// iid -> (stack, dense index of the iid in this generation).
    pub(super) callstacks: IidMap<Callsite>,
    pending: Pending,
}

/// An interned callstack: its stack (`u32::MAX`: none, an empty callstack) and its dense
/// index in its generation, 8 bytes.
#[derive(Clone, Copy)]
pub(super) struct Callsite {
    stack: u32,
    pub(super) dense: u32,
}

impl Callsite {
    fn new(stack: Option<StackId>, dense: u32) -> Self {
        Callsite { stack: stack.map_or(u32::MAX, |s| s.0), dense }
    }

    pub(super) fn stack(self) -> Option<StackId> {
        (self.stack != u32::MAX).then_some(StackId(self.stack))
    }
}

/// Android Q inline tables: one string namespace, scoped to a chain.
#[derive(Default)]
pub(super) struct Inline {
    pub(super) strings: HashMap<u64, Box<[u8]>>,
    pub(super) mappings: Vec<pb::Mapping>,
    pub(super) frames: Vec<pb::Frame>,
    pub(super) callstacks: Vec<pb::Callstack>,
}

impl Inline {
    pub(super) fn is_empty(&self) -> bool {
        self.strings.is_empty() && self.mappings.is_empty() && self.frames.is_empty() && self.callstacks.is_empty()
    }
}
pub(super) fn sat(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(super) fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// Joins path components the way Perfetto does: "/" before each, and a leading "//" (one
/// component that was already absolute) collapsed.
pub(super) fn join_path(parts: &[&str]) -> String {
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
pub(super) fn intern(
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

pub(super) fn try_mapping<'a>(
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
pub(super) fn try_frame(
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
pub(super) fn frames_of(ids: impl Iterator<Item = u64>, frames: &IidMap<FrameId>, out: &mut Vec<FrameId>) -> bool {
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

pub(super) fn intern_frame_of(
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
pub(super) fn try_callstack(
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
pub(super) fn resolve_pending(
    tables: &mut Tables,
    t: &mut Interned,
    problems: &mut Vec<String>,
    lists: &mut Option<StackLists>,
) {
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
pub(super) fn resolve_inline(
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
