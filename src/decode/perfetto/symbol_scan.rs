//! A frames-only reading of a heapprofd trace, for symbolization: the mappings and frames its
//! interned data defines, and the build ids and paths they name, read straight from the packet
//! bytes (and from the inline tables of Android Q profile packets). Callstacks, samples,
//! function names and every other payload are skipped at the wire level (by length, never
//! decoded).
//!
//! The scan gives *hints*: the frames a symbolizer can start looking up on other threads
//! before the real decoder (which builds the tables, dumps and report) has got to them. It
//! follows each sequence's incremental state (a clear starts it afresh) but resolves
//! references only in order, keeps no pending definitions and reports nothing to the user:
//! whatever it misses the decoder's frames look up later, and what it gets wrong costs a lookup,
//! never an answer (lookups are cached by address). A damaged input ends the scan where the
//! damage is, with the file, byte offset and packet named in [`FrameScan::stopped`]; bad input
//! never panics and no length is trusted before it is checked against the bytes there are.

use rustc_hash::FxHashMap;

use super::heapprofd::DecodeOptions;
use super::reader::PacketReader;
use crate::decode::input::{Input, inflate_bundle};
use crate::decode::wire::Wire;
use crate::model::{Mapping, MappingId, StringId, Tables};

/// What a frames-only scan found.
#[derive(Debug, Default)]
pub struct FrameScan {
    /// The mappings and frames defined in the trace (frames without names: only their mapping
    /// and `rel_pc`), in the order the trace defines them.
    pub tables: Tables,
    /// The trace holds ModuleSymbols packets (field 61): its frames may be named by the trace
    /// itself, so looking them up ahead is wasted work.
    pub module_symbols: bool,
    /// Packets read (those inside `compressed_packets` bundles included).
    pub packets: u64,
    /// Why the scan stopped before the end (file, byte offset, packet), if it did.
    pub stopped: Option<String>,
}

impl FrameScan {
    /// True when the scan read the whole trace: every frame of it is among the hints.
    pub fn complete(&self) -> bool {
        self.stopped.is_none()
    }
}

/// Scans `input` again from its start (a second reading of a file or of an in-memory input;
/// `None` when the input cannot be read twice, as standard input).
pub fn scan_frames_again(input: &Input, opts: &DecodeOptions) -> Option<FrameScan> {
    let mut again = input.reopen()?.ok()?;
    Some(scan_frames(&mut again, opts))
}

/// Reads every packet of `input` for its mappings and frames.
pub fn scan_frames(input: &mut Input, opts: &DecodeOptions) -> FrameScan {
    let name = input.name.clone();
    let mut scan = FrameScanner::new(opts.max_bundle_bytes);
    let mut reader = PacketReader::for_input(input, opts.max_packet_bytes);
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                let at = || format!("{name} at byte {}, packet {}", p.offset, p.number);
                if !scan.packet(p.bytes, &at) {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                scan.stop(e.to_string());
                break;
            }
        }
    }
    scan.finish()
}

/// Called with the frames a scan has interned so far (`tables` and the range of frames new
/// since the last call).
pub type FramesSeen<'h> = dyn FnMut(&Tables, std::ops::Range<usize>) + 'h;

/// The frames-only scan fed one packet at a time (by [`scan_frames`], or by a pre-pass that
/// feeds other scanners the same packets).
pub(crate) struct FrameScanner<'h>(Scanner<'h>);

impl<'h> FrameScanner<'h> {
    /// A scanner expanding `compressed_packets` bundles of at most `max_bundle` bytes.
    pub(crate) fn new(max_bundle: u64) -> Self {
        FrameScanner(Scanner {
            out: FrameScan::default(),
            seqs: FxHashMap::default(),
            max_bundle,
            seen: None,
            handed: 0,
        })
    }

    /// The scanner, calling `seen` with the frames interned so far every [`SEEN_EVERY`] frames
    /// and at the end of each packet.
    pub(crate) fn with_hook(mut self, seen: Option<&'h mut FramesSeen<'h>>) -> Self {
        self.0.seen = seen;
        self
    }

    /// Reads one top-level packet (`at` names it); false when the scan stops there (the reason
    /// is kept in [`FrameScan::stopped`]).
    pub(crate) fn packet(&mut self, bytes: &[u8], at: &dyn Fn() -> String) -> bool {
        match self.0.packet(bytes, true, at) {
            Ok(()) => true,
            Err(why) => {
                self.0.out.stopped = Some(why);
                false
            }
        }
    }

    /// Ends the scan early: the container could not be read past here, for `why`.
    pub(crate) fn stop(&mut self, why: String) {
        self.0.out.stopped = Some(why);
    }

    /// What the scan found.
    pub(crate) fn finish(self) -> FrameScan {
        self.0.out
    }
}

/// One sequence's interned state, as far as frames need it.
#[derive(Default)]
struct Seq {
    build_ids: FxHashMap<u64, Box<[u8]>>,
    paths: FxHashMap<u64, String>,
    mappings: FxHashMap<u64, MappingId>,
    /// Android Q inline tables of the current chain (strings, mappings, frames), resolved
    /// when the chain ends, as the decoder does.
    inline_strings: FxHashMap<u64, Vec<u8>>,
    inline_mappings: Vec<Vec<u8>>,
    inline_frames: Vec<Vec<u8>>,
}

struct Scanner<'h> {
    out: FrameScan,
    seqs: FxHashMap<u32, Seq>,
    max_bundle: u64,
    seen: Option<&'h mut FramesSeen<'h>>,
    /// Frames handed to `seen` so far.
    handed: usize,
}

/// How many new frames make the scan call its hook before the packet ends.
const SEEN_EVERY: usize = 2048;

impl Scanner<'_> {
    /// Hands the frames interned since the last call to the hook (when it has one and there
    /// are at least `least` of them).
    fn hand(&mut self, least: usize) {
        let n = self.out.tables.frames().len();
        if let Some(seen) = self.seen.as_mut()
            && n > self.handed
            && n - self.handed >= least
        {
            seen(&self.out.tables, self.handed..n);
            self.handed = n;
        }
    }
}

/// The fields of one TracePacket the scan reads.
#[derive(Default)]
struct Fields<'a> {
    seq: u32,
    cleared: bool,
    interned: Vec<&'a [u8]>,
    profile: Option<&'a [u8]>,
    bundle: Option<&'a [u8]>,
}

impl Scanner<'_> {
    /// Reads one serialized TracePacket; `outer` is false inside a bundle (bundles do not nest).
    fn packet(&mut self, b: &[u8], outer: bool, at: &dyn Fn() -> String) -> Result<(), String> {
        self.out.packets += 1;
        let mut f = Fields::default();
        let mut w = Wire::new(b);
        let bad = |w: &Wire<'_>, what: &str| format!("{}: bad TracePacket ({what} at packet byte {})", at(), w.pos());
        while !w.done() {
            let (field, wt) = w.tag().ok_or_else(|| bad(&w, "tag"))?;
            match (field, wt) {
                (10, 0) => f.seq = w.varint().ok_or_else(|| bad(&w, "trusted_packet_sequence_id"))? as u32,
                (13, 0) => {
                    let flags = w.varint().ok_or_else(|| bad(&w, "sequence_flags"))?;
                    f.cleared |= flags & 1 != 0;
                }
                (41, 0) => f.cleared |= w.varint().ok_or_else(|| bad(&w, "incremental_state_cleared"))? != 0,
                (12, 2) => f.interned.push(w.bytes().ok_or_else(|| bad(&w, "interned_data"))?),
                (50, 2) => f.bundle = Some(w.bytes().ok_or_else(|| bad(&w, "compressed_packets"))?),
                (37, 2) => f.profile = Some(w.bytes().ok_or_else(|| bad(&w, "profile_packet"))?),
                (61, 2) => {
                    self.out.module_symbols = true;
                    w.bytes().ok_or_else(|| bad(&w, "module_symbols"))?;
                }
                _ => w.skip(u64::from(wt)).ok_or_else(|| bad(&w, "field"))?,
            }
        }
        if let Some(data) = f.bundle {
            if outer {
                self.bundle(data, at)?;
            }
            return Ok(());
        }
        if f.cleared {
            self.seqs.insert(f.seq, Seq::default());
        }
        for d in f.interned {
            let seq = self.seqs.entry(f.seq).or_default();
            let (tables, seen, handed) = (&mut self.out.tables, &mut self.seen, &mut self.handed);
            let mut hand = |t: &Tables| {
                let n = t.frames().len();
                if let Some(seen) = seen.as_mut()
                    && n >= *handed + SEEN_EVERY
                {
                    seen(t, *handed..n);
                    *handed = n;
                }
            };
            let r = interned(tables, seq, d, &mut hand);
            self.hand(1);
            r.map_err(|pos| format!("{}: bad InternedData at byte {pos}", at()))?;
        }
        if let Some(p) = f.profile {
            let seq = self.seqs.entry(f.seq).or_default();
            let r = inline(&mut self.out.tables, seq, p);
            self.hand(1);
            r.map_err(|pos| format!("{}: bad ProfilePacket at byte {pos}", at()))?;
        }
        Ok(())
    }

    fn bundle(&mut self, data: &[u8], at: &dyn Fn() -> String) -> Result<(), String> {
        let outer = at();
        let buf = inflate_bundle(data, self.max_bundle, &outer).map_err(|e| e.to_string())?;
        let inner_name = format!("{outer} (compressed_packets)");
        let mut inner = PacketReader::new(buf.as_slice(), &inner_name, Some(buf.len() as u64), u64::MAX);
        loop {
            match inner.next_packet() {
                Ok(Some(p)) => {
                    let iat = || format!("{inner_name}: inner byte {}, inner packet {}", p.offset, p.number);
                    self.packet(p.bytes, false, &iat)?;
                }
                Ok(None) => return Ok(()),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// Reads one InternedData block: build ids and paths, then mappings, then frames (whatever
/// order the fields come in); callstacks and function names are skipped. `Err` is the byte
/// offset in the block where it stops making sense.
fn interned(tables: &mut Tables, seq: &mut Seq, d: &[u8], hand: &mut dyn FnMut(&Tables)) -> Result<(), usize> {
    let mut mappings = Vec::new();
    let mut frames = Vec::new();
    let mut w = Wire::new(d);
    while !w.done() {
        let (field, wt) = w.tag().ok_or(w.pos())?;
        match (field, wt) {
            (16, 2) | (17, 2) => {
                let at = w.pos();
                let (iid, s) = interned_string(w.bytes().ok_or(at)?).ok_or(at)?;
                if field == 16 {
                    seq.build_ids.entry(iid).or_insert_with(|| s.into());
                } else {
                    seq.paths.entry(iid).or_insert_with(|| String::from_utf8_lossy(s).into_owned());
                }
            }
            (19, 2) => mappings.push((w.pos(), w.bytes().ok_or(w.pos())?)),
            (6, 2) => frames.push((w.pos(), w.bytes().ok_or(w.pos())?)),
            _ => w.skip(u64::from(wt)).ok_or(w.pos())?,
        }
    }
    for (at, m) in mappings {
        mapping(tables, seq, m).ok_or(at)?;
    }
    tables.reserve_frames(frames.len());
    for (i, (at, f)) in frames.into_iter().enumerate() {
        frame(tables, seq, f).ok_or(at)?;
        if i % SEEN_EVERY == SEEN_EVERY - 1 {
            hand(tables);
        }
    }
    Ok(())
}

/// `(iid, str)` of an InternedString.
fn interned_string(b: &[u8]) -> Option<(u64, &[u8])> {
    let (mut iid, mut s) = (0, &[][..]);
    let mut w = Wire::new(b);
    while !w.done() {
        match w.tag()? {
            (1, 0) => iid = w.varint()?,
            (2, 2) => s = w.bytes()?,
            (_, wt) => w.skip(u64::from(wt))?,
        }
    }
    Some((iid, s))
}

/// Interns one Mapping whose build id and path components are known (the decoder's fields and
/// path joining); `None` only for bytes that are not a Mapping.
fn mapping(tables: &mut Tables, seq: &mut Seq, b: &[u8]) -> Option<()> {
    let (build_ids, paths) = (&seq.build_ids, &seq.paths);
    let got = read_mapping(tables, b, |id| build_ids.get(&id).cloned(), |id| paths.get(&id).cloned())?;
    if let Some((iid, m)) = got {
        seq.mappings.entry(iid).or_insert(m);
    }
    Some(())
}

/// Reads one Mapping and interns it when `build_id` and `path_part` know what it names:
/// `Some(None)` when they do not (or it has no iid), `None` for bytes that are not a Mapping.
fn read_mapping(
    tables: &mut Tables,
    b: &[u8],
    build_id: impl Fn(u64) -> Option<Box<[u8]>>,
    path_part: impl Fn(u64) -> Option<String>,
) -> Option<Option<(u64, MappingId)>> {
    let mut m = Mapping {
        path: StringId::default(),
        build_id: Box::default(),
        start: 0,
        end: 0,
        start_offset: 0,
        exact_offset: 0,
        load_bias: 0,
    };
    let (mut iid, mut bid) = (None, 0);
    let mut parts: Vec<u64> = Vec::new();
    let mut w = Wire::new(b);
    while !w.done() {
        match w.tag()? {
            (1, 0) => iid = Some(w.varint()?),
            (2, 0) => bid = w.varint()?,
            (3, 0) => m.start_offset = w.varint()?,
            (4, 0) => m.start = w.varint()?,
            (5, 0) => m.end = w.varint()?,
            (6, 0) => m.load_bias = w.varint()?,
            (7, 0) => parts.push(w.varint()?),
            (7, 2) => {
                let mut p = Wire::new(w.bytes()?);
                while !p.done() {
                    parts.push(p.varint()?);
                }
            }
            (8, 0) => m.exact_offset = w.varint()?,
            (_, wt) => w.skip(u64::from(wt))?,
        }
    }
    let Some(iid) = iid else { return Some(None) };
    m.build_id = match build_id(bid) {
        Some(b) => b,
        None if bid == 0 => Box::default(),
        None => return Some(None),
    };
    let mut path = String::new();
    for p in &parts {
        let Some(s) = path_part(*p) else { return Some(None) };
        path.push('/');
        path.push_str(&s);
    }
    if path.starts_with("//") {
        path.remove(0);
    }
    m.path = tables.strings.intern(&path);
    Some(Some((iid, tables.intern_mapping(m))))
}

/// Reads the inline tables of an Android Q ProfilePacket (strings, mappings, frames; its
/// callstacks and samples are skipped) and, at the end of its chain, interns what they define.
fn inline(tables: &mut Tables, seq: &mut Seq, b: &[u8]) -> Result<(), usize> {
    let mut continued = false;
    let mut w = Wire::new(b);
    while !w.done() {
        let (field, wt) = w.tag().ok_or(w.pos())?;
        match (field, wt) {
            (1, 2) => {
                let at = w.pos();
                let (iid, s) = interned_string(w.bytes().ok_or(at)?).ok_or(at)?;
                seq.inline_strings.entry(iid).or_insert_with(|| s.to_vec());
            }
            (2, 2) => seq.inline_frames.push(w.bytes().ok_or(w.pos())?.to_vec()),
            (4, 2) => seq.inline_mappings.push(w.bytes().ok_or(w.pos())?.to_vec()),
            (6, 0) => continued = w.varint().ok_or(w.pos())? != 0,
            _ => w.skip(u64::from(wt)).ok_or(w.pos())?,
        }
    }
    if continued {
        return Ok(());
    }
    let strings = std::mem::take(&mut seq.inline_strings);
    let mut mappings: FxHashMap<u64, MappingId> = FxHashMap::default();
    for m in std::mem::take(&mut seq.inline_mappings) {
        let got = read_mapping(
            tables,
            &m,
            |id| strings.get(&id).map(|b| b.as_slice().into()).or_else(|| seq.build_ids.get(&id).cloned()),
            |id| {
                let s = strings.get(&id).and_then(|b| std::str::from_utf8(b).ok());
                s.map(str::to_owned).or_else(|| seq.paths.get(&id).cloned())
            },
        );
        if let Some(Some((iid, mid))) = got {
            mappings.entry(iid).or_insert(mid);
        }
    }
    for f in std::mem::take(&mut seq.inline_frames) {
        let Some((mapping, rel_pc)) = read_frame(&f) else { continue };
        if let Some(&m) = mappings.get(&mapping).or_else(|| seq.mappings.get(&mapping)).filter(|_| mapping != 0) {
            tables.intern_frame(Some(m), rel_pc, StringId::default());
        }
    }
    Ok(())
}

/// `(mapping_id, rel_pc)` of a Frame.
fn read_frame(b: &[u8]) -> Option<(u64, u64)> {
    let (mut mapping, mut rel_pc) = (0, 0);
    let mut w = Wire::new(b);
    while !w.done() {
        match w.tag()? {
            (3, 0) => mapping = w.varint()?,
            (4, 0) => rel_pc = w.varint()?,
            (_, wt) => w.skip(u64::from(wt))?,
        }
    }
    Some((mapping, rel_pc))
}

/// Interns one Frame of a known mapping (frames without one are not looked up); `None` only
/// for bytes that are not a Frame.
fn frame(tables: &mut Tables, seq: &Seq, b: &[u8]) -> Option<()> {
    let (mapping, rel_pc) = read_frame(b)?;
    if let Some(&m) = seq.mappings.get(&mapping).filter(|_| mapping != 0) {
        tables.intern_frame(Some(m), rel_pc, StringId::default());
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::wire::put_varint as varint;

    fn field_varint(out: &mut Vec<u8>, field: u64, v: u64) {
        varint(out, field << 3);
        varint(out, v);
    }
    fn field_bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
        varint(out, field << 3 | 2);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
    fn istr(iid: u64, s: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        field_varint(&mut m, 1, iid);
        field_bytes(&mut m, 2, s);
        m
    }

    /// A trace of one sequence: a cleared packet whose interned data names a mapping (build id
    /// 1, path "/lib/x.so") and two frames in it plus one without a mapping, frames before the
    /// mapping on the wire, a callstack and a profile packet to skip.
    fn trace() -> Vec<u8> {
        let mut d = Vec::new();
        let mut f1 = Vec::new();
        field_varint(&mut f1, 1, 1);
        field_varint(&mut f1, 3, 7);
        field_varint(&mut f1, 4, 0x1234);
        field_bytes(&mut d, 6, &f1);
        let mut f2 = Vec::new();
        field_varint(&mut f2, 1, 2);
        field_varint(&mut f2, 3, 7);
        field_varint(&mut f2, 4, 0x10);
        field_bytes(&mut d, 6, &f2);
        let mut f3 = Vec::new();
        field_varint(&mut f3, 1, 3);
        field_varint(&mut f3, 4, 0x99);
        field_bytes(&mut d, 6, &f3);
        let mut cs = Vec::new();
        field_varint(&mut cs, 1, 1);
        field_varint(&mut cs, 2, 1);
        field_varint(&mut cs, 2, 2);
        field_bytes(&mut d, 7, &cs);
        field_bytes(&mut d, 16, &istr(1, b"\xab\xcd"));
        field_bytes(&mut d, 17, &istr(4, b"lib"));
        field_bytes(&mut d, 17, &istr(5, b"x.so"));
        let mut m = Vec::new();
        field_varint(&mut m, 1, 7);
        field_varint(&mut m, 2, 1);
        field_varint(&mut m, 6, 0x1000);
        field_varint(&mut m, 7, 4);
        field_varint(&mut m, 7, 5);
        field_bytes(&mut d, 19, &m);
        let mut pkt = Vec::new();
        // A profile packet whose process dumps (field 5) are skipped by length, undecoded.
        let mut pp = Vec::new();
        field_bytes(&mut pp, 5, b"\xff\xff not decoded");
        field_varint(&mut pp, 7, 0);
        field_bytes(&mut pkt, 37, &pp);
        field_bytes(&mut pkt, 12, &d);
        field_varint(&mut pkt, 10, 3);
        field_varint(&mut pkt, 13, 1);
        let mut t = Vec::new();
        field_bytes(&mut t, 1, &pkt);
        t
    }

    fn scan(bytes: Vec<u8>) -> FrameScan {
        let mut inp = Input::from_bytes("t.pftrace", bytes, 1 << 30).unwrap();
        scan_frames(&mut inp, &DecodeOptions::default())
    }

    #[test]
    fn reads_mappings_and_frames_and_skips_the_rest() {
        let s = scan(trace());
        assert!(s.complete(), "{:?}", s.stopped);
        assert!(!s.module_symbols);
        assert_eq!(s.packets, 1);
        assert_eq!(s.tables.mappings().len(), 1);
        let m = &s.tables.mappings()[0];
        assert_eq!(s.tables.strings.get(m.path), "/lib/x.so");
        assert_eq!(&*m.build_id, b"\xab\xcd");
        assert_eq!(m.load_bias, 0x1000);
        let pcs: Vec<u64> = s.tables.frames().iter().map(|f| f.rel_pc).collect();
        assert_eq!(pcs, vec![0x1234, 0x10]);
    }

    #[test]
    fn damage_stops_the_scan_with_its_place_and_never_panics() {
        let good = trace();
        let mut t = good.clone();
        t.extend_from_slice(&[0x0a, 0x05, 0x62, 0xff, 0xff, 0xff, 0xff]);
        let s = scan(t);
        assert_eq!(s.tables.frames().len(), 2);
        let why = s.stopped.expect("stopped");
        assert!(why.contains("t.pftrace at byte") && why.contains("packet 1"), "{why}");
        // Every truncation of the trace scans without a panic.
        for n in 0..good.len() {
            let s = scan(good[..n].to_vec());
            assert!(s.tables.frames().len() <= 2);
        }
    }

    #[test]
    fn module_symbols_are_noticed() {
        let mut t = trace();
        let mut pkt = Vec::new();
        field_bytes(&mut pkt, 61, b"");
        field_bytes(&mut t, 1, &pkt);
        let s = scan(t);
        assert!(s.module_symbols);
        assert_eq!(s.packets, 2);
    }
}
