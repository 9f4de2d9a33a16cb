//! The messages of a heapprofd trace that make up nearly all of its bytes, read straight from
//! a packet's bytes instead of through prost's generated types: `InternedData` with its
//! `InternedString`s, `Frame`s and `Callstack`s, and `ProfilePacket` with its
//! `ProcessHeapSamples` and `HeapSample`s (field numbers in `protos/perfetto_trace.proto`).
//!
//! The generated decoder allocates for every message of those (an `Option<Vec<u8>>` per
//! interned string, a `Vec` per callstack, a 128-byte `HeapSample` per sample in a `Vec`
//! that, at 17,000 samples a packet, is a fresh mapping of the address space each time) and
//! grows each repeated field a doubling at a time. Here a packet is read into one [`Hot`]
//! whose vectors are kept from packet to packet, with strings as byte ranges of the packet.
//!
//! Acceptance is prost's, field for field: the same wire types are required, varints, keys
//! and lengths are read by prost's own functions, `string` fields must be UTF-8, unknown
//! fields (groups included) are skipped under the same recursion budget, and a packet is
//! checked whole before anything of it is used. Rare parts (mappings, Android Q inline tables,
//! process stats, and packets carrying anything besides interned data and profile packets) are
//! decoded by the generated types, so they need no code of their own. The one difference: a
//! rare part is decoded with prost's full recursion budget of 100 rather than what is left at
//! its depth (2 to 4 less), which matters only for groups nested about a hundred deep.

use std::ops::Range;

use prost::Message;
use prost::bytes::Buf;
use prost::encoding::{WireType, decode_key, decode_varint};

use super::heapprofd::{PackedSamples, RawSample};
use crate::proto::perfetto as pb;

/// Why a packet does not decode: what prost said, or what it would have said.
#[derive(Debug)]
pub(super) struct BadWire(String);

impl std::fmt::Display for BadWire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadWire {}

impl From<prost::DecodeError> for BadWire {
    fn from(e: prost::DecodeError) -> Self {
        BadWire(e.to_string())
    }
}

type R<T> = std::result::Result<T, BadWire>;

/// prost's recursion budget for the fields of a top-level message (its `RECURSION_LIMIT`);
/// each nested message has one less.
const TOP: u32 = 100;

/// A byte range of the packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Span {
    start: usize,
    end: usize,
}

impl Span {
    /// The bytes of `packet` this span covers.
    pub(super) fn of(self, packet: &[u8]) -> &[u8] {
        packet.get(self.start..self.end).unwrap_or_default()
    }
}

/// An `InternedString`: its iid and bytes, both optional.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Str {
    pub(super) iid: Option<u64>,
    pub(super) str: Option<Span>,
}

impl Str {
    /// The string's bytes (empty when absent).
    pub(super) fn bytes<'a>(&self, packet: &'a [u8]) -> &'a [u8] {
        self.str.map_or(&[][..], |s| s.of(packet))
    }
}

/// A `Frame`'s fields that heapconv reads: all but `kind`/`kind_str` (not in heapconv's schema,
/// skipped as unknown fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct FrameRef {
    pub(super) iid: Option<u64>,
    pub(super) function_name_id: Option<u64>,
    pub(super) mapping_id: Option<u64>,
    pub(super) rel_pc: Option<u64>,
    /// iid of `InternedData.source_paths` (online symbolization).
    pub(super) source_path_iid: Option<u64>,
    /// Source line (online symbolization).
    pub(super) line_number: Option<u32>,
}

impl FrameRef {
    /// The fields of a frame of the generated type.
    pub(super) fn from_pb(f: &pb::Frame) -> Self {
        FrameRef {
            iid: f.iid,
            function_name_id: f.function_name_id,
            mapping_id: f.mapping_id,
            rel_pc: f.rel_pc,
            source_path_iid: f.source_path_iid,
            line_number: f.line_number,
        }
    }

    /// The frame as the generated type (for the rare frames kept waiting).
    pub(super) fn to_pb(self) -> pb::Frame {
        pb::Frame {
            iid: self.iid,
            function_name_id: self.function_name_id,
            mapping_id: self.mapping_id,
            rel_pc: self.rel_pc,
            source_path_iid: self.source_path_iid,
            line_number: self.line_number,
        }
    }
}

/// A `Callstack`: its iid and its frame ids, a range of [`Hot::frame_ids`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct CallRef {
    pub(super) iid: Option<u64>,
    pub(super) frames: Range<usize>,
}

/// A `ProcessHeapSamples` header, with its samples a range of [`Hot::samples`] (packed as the
/// decoder buffers them until their chain ends) and their number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct DumpRef {
    pub(super) pid: Option<u64>,
    pub(super) from_startup: Option<bool>,
    pub(super) rejected_concurrent: Option<bool>,
    pub(super) disconnected: Option<bool>,
    pub(super) buffer_overran: Option<bool>,
    pub(super) buffer_corrupted: Option<bool>,
    pub(super) timestamp: Option<u64>,
    pub(super) hit_guardrail: Option<bool>,
    /// Checked to be UTF-8.
    pub(super) heap_name: Option<Span>,
    pub(super) sampling_interval_bytes: Option<u64>,
    pub(super) orig_sampling_interval_bytes: Option<u64>,
    pub(super) client_error: Option<i32>,
    pub(super) start_timestamp: Option<u64>,
    pub(super) samples: Range<usize>,
    pub(super) sample_count: usize,
}

impl DumpRef {
    /// The heap name (UTF-8, checked when read).
    pub(super) fn heap_name<'a>(&self, packet: &'a [u8]) -> Option<&'a str> {
        self.heap_name.map(|s| std::str::from_utf8(s.of(packet)).unwrap_or_default())
    }
}

/// The fields of a `TracePacket` that every heapprofd packet has, as the generated type reads
/// them (the last value of a field wins).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Head {
    pub(super) timestamp: Option<u64>,
    pub(super) trusted_packet_sequence_id: Option<u32>,
    pub(super) sequence_flags: Option<u32>,
    pub(super) incremental_state_cleared: Option<bool>,
    pub(super) previous_packet_dropped: Option<u32>,
    pub(super) first_packet_on_sequence: Option<bool>,
}

/// A packet's interned data and profile packet, read; its vectors are reused from packet to
/// packet.
#[derive(Debug, Default)]
pub(super) struct Hot {
    /// The packet has `interned_data` (field 12), possibly empty.
    pub(super) interned: bool,
    pub(super) function_names: Vec<Str>,
    /// With [`Hot::demangle_names`]: what [`demangle`](crate::model::frame::demangle) gives for each
    /// of `function_names`, in their order (else empty).
    pub(super) demangled: Vec<Option<String>>,
    pub(super) frames: Vec<FrameRef>,
    pub(super) callstacks: Vec<CallRef>,
    /// The frame ids of `callstacks`, one after the other, as 32 bits ([`Hot::frame_ids`]
    /// reads them): half the memory to write of 64 (a trace's frame references are most of
    /// its interned data: 830k in `symbolize`'s benchmark trace, 8.6M in the issue-15 shape).
    /// An id of `u32::MAX` or more is `u32::MAX` here and its value in `big_frame_ids`.
    frame_ids: Vec<u32>,
    /// The ids of `u32::MAX` or more of `frame_ids`: (position, id), positions increasing.
    big_frame_ids: Vec<(usize, u64)>,
    pub(super) build_ids: Vec<Str>,
    pub(super) mapping_paths: Vec<Str>,
    pub(super) source_paths: Vec<Str>,
    pub(super) mappings: Vec<pb::Mapping>,
    /// The packet has `profile_packet` (field 37), possibly empty.
    pub(super) profile: bool,
    pub(super) strings: Vec<pb::InternedString>,
    pub(super) inline_mappings: Vec<pb::Mapping>,
    pub(super) inline_frames: Vec<pb::Frame>,
    pub(super) inline_callstacks: Vec<pb::Callstack>,
    pub(super) dumps: Vec<DumpRef>,
    /// The dumps' samples, packed ([`PackedSamples`]'s format).
    pub(super) samples: Vec<u8>,
    pub(super) continued: Option<bool>,
    pub(super) index: Option<u64>,
}

impl Hot {
    /// The frame ids at `positions` of the callstacks' frame ids (a [`CallRef::frames`]).
    #[inline]
    pub(super) fn frame_ids(&self, positions: Range<usize>) -> impl Iterator<Item = u64> + '_ {
        let start = positions.start;
        self.frame_ids[positions]
            .iter()
            .enumerate()
            .map(move |(i, &id)| if id != u32::MAX { u64::from(id) } else { self.big_frame_id(start + i) })
    }

    /// The frame ids at `positions` as stored: 32 bits, `u32::MAX` standing for an id of
    /// `u32::MAX` or more ([`Hot::frame_id_at`] gives its value).
    #[inline]
    pub(super) fn frame_ids_stored(&self, positions: Range<usize>) -> &[u32] {
        &self.frame_ids[positions]
    }

    /// Whether an id of `u32::MAX` or more is among the frame ids.
    #[inline]
    pub(super) fn has_big_frame_ids(&self) -> bool {
        !self.big_frame_ids.is_empty()
    }

    /// The number of frame ids of all callstacks.
    pub(super) fn frame_id_count(&self) -> usize {
        self.frame_ids.len()
    }

    #[cold]
    fn big_frame_id(&self, at: usize) -> u64 {
        match self.big_frame_ids.binary_search_by_key(&at, |e| e.0) {
            Ok(i) => self.big_frame_ids[i].1,
            Err(_) => u64::from(u32::MAX),
        }
    }

    /// Appends a callstack's frame id.
    #[inline(always)]
    fn push_frame_id(&mut self, id: u64) {
        match u32::try_from(id) {
            Ok(small) if small != u32::MAX => self.frame_ids.push(small),
            _ => {
                self.big_frame_ids.push((self.frame_ids.len(), id));
                self.frame_ids.push(u32::MAX);
            }
        }
    }

    fn clear(&mut self) {
        self.interned = false;
        self.function_names.clear();
        self.demangled.clear();
        self.frames.clear();
        self.callstacks.clear();
        self.frame_ids.clear();
        self.big_frame_ids.clear();
        self.build_ids.clear();
        self.mapping_paths.clear();
        self.source_paths.clear();
        self.mappings.clear();
        self.profile = false;
        self.strings.clear();
        self.inline_mappings.clear();
        self.inline_frames.clear();
        self.inline_callstacks.clear();
        self.dumps.clear();
        self.samples.clear();
        self.continued = None;
        self.index = None;
    }
}

impl Hot {
    /// Demangles every function name of the packet `bytes` (the packet this was read from)
    /// into [`Hot::demangled`], as the tables would demangle it (the text read as lossy UTF-8):
    /// work a reading thread can do ahead of the decoder's (see `Tables::offer_display_name`).
    pub(super) fn demangle_names(&mut self, bytes: &[u8]) {
        self.demangled.clear();
        for s in &self.function_names {
            self.demangled.push(crate::model::frame::demangle(&String::from_utf8_lossy(s.bytes(bytes))));
        }
    }
}

/// A `TracePacket` as the heapprofd decoder reads it.
#[derive(Debug)]
pub(super) struct LitePacket {
    pub(super) head: Head,
    /// The packet decoded by the generated type when it has any field besides [`Head`]'s,
    /// interned data and a profile packet (those two are left out of it: they are in `hot`).
    pub(super) full: Option<pb::TracePacket>,
    pub(super) hot: Box<Hot>,
}

/// A varint, as prost's `decode_varint` reads it (and with its errors): those of one to three
/// bytes (frame ids, tags, lengths) read here without a call.
#[inline(always)]
fn fast_varint(buf: &mut &[u8]) -> Result<u64, prost::DecodeError> {
    match **buf {
        [a, ref rest @ ..] if a < 0x80 => {
            *buf = rest;
            Ok(u64::from(a))
        }
        [a, b, ref rest @ ..] if b < 0x80 => {
            *buf = rest;
            Ok(u64::from(a & 0x7f) | (u64::from(b) << 7))
        }
        [a, b, c, ref rest @ ..] if c < 0x80 => {
            *buf = rest;
            Ok(u64::from(a & 0x7f) | (u64::from(b & 0x7f) << 7) | (u64::from(c) << 14))
        }
        _ => decode_varint(buf),
    }
}

/// A field key, as prost's `decode_key` reads it (and with its errors): a one-byte key with a
/// tag and a known wire type read here without a call.
#[inline(always)]
fn fast_key(buf: &mut &[u8]) -> Result<(u32, WireType), prost::DecodeError> {
    if let [k, ref rest @ ..] = **buf
        && (8..0x80).contains(&k)
    {
        let wt = match k & 7 {
            0 => Some(WireType::Varint),
            1 => Some(WireType::SixtyFourBit),
            2 => Some(WireType::LengthDelimited),
            3 => Some(WireType::StartGroup),
            4 => Some(WireType::EndGroup),
            5 => Some(WireType::ThirtyTwoBit),
            _ => None,
        };
        if let Some(wt) = wt {
            *buf = rest;
            return Ok((u32::from(k >> 3), wt));
        }
    }
    decode_key(buf)
}

/// A reader over one packet: the bytes left and the packet's length (positions are offsets
/// from the packet's start).
struct Cursor<'a> {
    buf: &'a [u8],
    len: usize,
}

impl<'a> Cursor<'a> {
    fn pos(&self) -> usize {
        self.len - self.buf.len()
    }

    #[inline(always)]
    fn key(&mut self) -> R<(u32, WireType)> {
        Ok(fast_key(&mut self.buf)?)
    }

    #[inline(always)]
    fn varint(&mut self, wt: WireType) -> R<u64> {
        if wt != WireType::Varint {
            return Err(BadWire(format!("invalid wire type: {wt:?} (expected Varint)")));
        }
        Ok(fast_varint(&mut self.buf)?)
    }

    /// A length-delimited value: its span and bytes.
    #[inline(always)]
    fn span(&mut self, wt: WireType) -> R<(Span, &'a [u8])> {
        if wt != WireType::LengthDelimited {
            return Err(BadWire(format!("invalid wire type: {wt:?} (expected LengthDelimited)")));
        }
        let len = fast_varint(&mut self.buf)?;
        if len > self.buf.len() as u64 {
            return Err(BadWire("buffer underflow".into()));
        }
        let start = self.pos();
        let (v, rest) = self.buf.split_at(len as usize);
        self.buf = rest;
        Ok((Span { start, end: self.pos() }, v))
    }

    /// A nested message: a cursor over its bytes (its positions still the packet's).
    #[inline(always)]
    fn nested(&mut self, wt: WireType) -> R<Cursor<'a>> {
        let (s, v) = self.span(wt)?;
        Ok(Cursor { buf: v, len: s.end })
    }

    /// Skips an unknown field as prost does, `count` the recursion budget left.
    fn skip(&mut self, wt: WireType, tag: u32, count: u32) -> R<()> {
        skip(&mut self.buf, wt, tag, count)
    }
}

/// prost's `skip_field`, with the recursion budget as a number (prost keeps its own private).
fn skip(buf: &mut &[u8], wt: WireType, tag: u32, count: u32) -> R<()> {
    if count == 0 {
        return Err(BadWire("recursion limit reached".into()));
    }
    let len = match wt {
        WireType::Varint => fast_varint(buf).map(|_| 0)?,
        WireType::ThirtyTwoBit => 4,
        WireType::SixtyFourBit => 8,
        WireType::LengthDelimited => fast_varint(buf)?,
        WireType::StartGroup => loop {
            let (inner_tag, inner_wt) = fast_key(buf)?;
            if inner_wt == WireType::EndGroup {
                if inner_tag != tag {
                    return Err(BadWire("unexpected end group tag".into()));
                }
                break 0;
            }
            skip(buf, inner_wt, inner_tag, count - 1)?;
        },
        WireType::EndGroup => return Err(BadWire("unexpected end group tag".into())),
    };
    if len > buf.len() as u64 {
        return Err(BadWire("buffer underflow".into()));
    }
    buf.advance(len as usize);
    Ok(())
}

/// Decodes one rare nested message with the generated type.
fn generated<M: Message + Default>(c: &mut Cursor<'_>, wt: WireType) -> R<M> {
    let (_, v) = c.span(wt)?;
    Ok(M::decode(v)?)
}

/// Reads a `TracePacket` for the heapprofd decoder, reusing `hot`'s vectors. Fails exactly
/// when `pb::TracePacket::decode` fails (see the module's note on recursion).
pub(super) fn decode_packet(bytes: &[u8], mut hot: Box<Hot>) -> R<LitePacket> {
    hot.clear();
    let mut head = Head::default();
    let mut c = Cursor { buf: bytes, len: bytes.len() };
    let mut other = false;
    while !c.buf.is_empty() {
        let (tag, wt) = c.key()?;
        match tag {
            8 => head.timestamp = Some(c.varint(wt)?),
            10 => head.trusted_packet_sequence_id = Some(c.varint(wt)? as u32),
            13 => head.sequence_flags = Some(c.varint(wt)? as u32),
            41 => head.incremental_state_cleared = Some(c.varint(wt)? != 0),
            42 => head.previous_packet_dropped = Some(c.varint(wt)? as u32),
            87 => head.first_packet_on_sequence = Some(c.varint(wt)? != 0),
            // trusted_uid, trusted_pid, timestamp_clock_id: not read.
            3 | 79 | 58 => {
                c.varint(wt)?;
            }
            12 => {
                let mut m = c.nested(wt)?;
                interned_data(&mut m, &mut hot)?;
            }
            37 => {
                let mut m = c.nested(wt)?;
                profile_packet(&mut m, &mut hot)?;
            }
            2 | 6 | 56 | 59 | 61 | 64 | 50 | 133 => {
                other = true;
                break;
            }
            _ => c.skip(wt, tag, TOP)?,
        }
    }
    if !other {
        return Ok(LitePacket { head, full: None, hot });
    }
    // A packet with other fields: the generated type decodes (and checks) it all, and the hot
    // parts are read again from the start into `hot`.
    let mut full = pb::TracePacket::decode(bytes)?;
    full.interned_data = None;
    full.profile_packet = None;
    hot.clear();
    let mut c = Cursor { buf: bytes, len: bytes.len() };
    while !c.buf.is_empty() {
        let (tag, wt) = c.key()?;
        match tag {
            12 => {
                let mut m = c.nested(wt)?;
                interned_data(&mut m, &mut hot)?;
            }
            37 => {
                let mut m = c.nested(wt)?;
                profile_packet(&mut m, &mut hot)?;
            }
            _ => c.skip(wt, tag, TOP)?,
        }
    }
    let head = Head {
        timestamp: full.timestamp,
        trusted_packet_sequence_id: full.trusted_packet_sequence_id,
        sequence_flags: full.sequence_flags,
        incremental_state_cleared: full.incremental_state_cleared,
        previous_packet_dropped: full.previous_packet_dropped,
        first_packet_on_sequence: full.first_packet_on_sequence,
    };
    Ok(LitePacket { head, full: Some(full), hot })
}

/// `InternedData` (nested in the packet: its fields have a budget of `TOP - 1`).
fn interned_data(c: &mut Cursor<'_>, hot: &mut Hot) -> R<()> {
    hot.interned = true;
    while !c.buf.is_empty() {
        let (tag, wt) = c.key()?;
        match tag {
            5 => {
                let s = string(&mut c.nested(wt)?)?;
                hot.function_names.push(s);
            }
            6 => {
                let f = frame(&mut c.nested(wt)?)?;
                // Room for as many frames as could come in an eighth of the rest of the block
                // (ten bytes or more each), in one step rather than by doubling from small.
                if hot.frames.len() == hot.frames.capacity() {
                    hot.frames.reserve(c.buf.len() / 80);
                }
                hot.frames.push(f);
            }
            7 => {
                // Room for the frame ids of the rest of the block in one step, not by
                // doubling from small: as many as two bytes each make (an unpacked id takes two
                // or more; a packed one two or more past the 128 first iids). A quarter, as
                // before, ran short on ids of three bytes, and the one regrowth copied them all
                // (a quarter of `symbolize`'s page faults); pages reserved and never written
                // cost nothing.
                if hot.frame_ids.len() == hot.frame_ids.capacity() {
                    hot.frame_ids.reserve(c.buf.len() / 2);
                }
                callstack(&mut c.nested(wt)?, hot)?
            }
            16 => {
                let s = string(&mut c.nested(wt)?)?;
                hot.build_ids.push(s);
            }
            17 => {
                let s = string(&mut c.nested(wt)?)?;
                hot.mapping_paths.push(s);
            }
            18 => {
                let s = string(&mut c.nested(wt)?)?;
                hot.source_paths.push(s);
            }
            19 => {
                let m = generated(c, wt)?;
                hot.mappings.push(m);
            }
            _ => c.skip(wt, tag, TOP - 1)?,
        }
    }
    Ok(())
}

/// `InternedString` in `InternedData` (budget `TOP - 2`).
fn string(c: &mut Cursor<'_>) -> R<Str> {
    let mut s = Str::default();
    while !c.buf.is_empty() {
        let (tag, wt) = c.key()?;
        match tag {
            1 => s.iid = Some(c.varint(wt)?),
            2 => s.str = Some(c.span(wt)?.0),
            _ => c.skip(wt, tag, TOP - 2)?,
        }
    }
    Ok(s)
}

/// `Frame` in `InternedData` (budget `TOP - 2`).
fn frame(c: &mut Cursor<'_>) -> R<FrameRef> {
    let mut f = FrameRef::default();
    while !c.buf.is_empty() {
        let (tag, wt) = c.key()?;
        match tag {
            1 => f.iid = Some(c.varint(wt)?),
            2 => f.function_name_id = Some(c.varint(wt)?),
            3 => f.mapping_id = Some(c.varint(wt)?),
            4 => f.rel_pc = Some(c.varint(wt)?),
            5 => f.source_path_iid = Some(c.varint(wt)?),
            // uint32: prost keeps the low 32 bits of the varint.
            6 => f.line_number = Some(c.varint(wt)? as u32),
            _ => c.skip(wt, tag, TOP - 2)?,
        }
    }
    Ok(f)
}

/// A run of unpacked frame ids, each a `0x10` key (field 2, a varint) and its id, as
/// [`fast_varint`] reads them; stops before the first byte that is not such a key. With eight
/// bytes or more left, an id of up to four bytes (ids below 2^28) is read from one 64-bit load
/// without a branch on its length: in a trace of more than 16,384 frames ids of two and three
/// bytes alternate at random, and a branch per length mispredicts every few ids.
#[inline(always)]
fn unpacked_ids(buf: &mut &[u8], hot: &mut Hot) -> R<()> {
    loop {
        if let Some(head) = buf.first_chunk::<8>() {
            let w = u64::from_le_bytes(*head);
            if w as u8 != 0x10 {
                return Ok(());
            }
            let v = w >> 8;
            // A varint byte with its high bit clear is the last: of the first four here.
            let ends = !v & 0x8080_8080;
            if ends != 0 {
                let n = (ends.trailing_zeros() / 8 + 1) as usize;
                let x = v & 0x7f7f_7f7f;
                let id = (x & 0x7f) | ((x >> 1) & 0x3f80) | ((x >> 2) & 0x1f_c000) | ((x >> 3) & 0xfe0_0000);
                // Below 2^28: a 32-bit id (never `u32::MAX`).
                hot.frame_ids.push((id & ((1 << (7 * n)) - 1)) as u32);
                *buf = &buf[1 + n..];
                continue;
            }
        }
        match **buf {
            [0x10, ref rest @ ..] => {
                *buf = rest;
                hot.push_frame_id(fast_varint(buf)?);
            }
            _ => return Ok(()),
        }
    }
}

/// `Callstack` in `InternedData` (budget `TOP - 2`): `frame_ids` packed or not, runs of both
/// concatenated, as prost reads a repeated scalar.
fn callstack(c: &mut Cursor<'_>, hot: &mut Hot) -> R<()> {
    let start = hot.frame_ids.len();
    let mut iid = None;
    while !c.buf.is_empty() {
        let (tag, wt) = c.key()?;
        match tag {
            1 => iid = Some(c.varint(wt)?),
            2 if wt == WireType::LengthDelimited => {
                // Packed: varints up to exactly the length (one running past it is an error).
                let len = fast_varint(&mut c.buf)?;
                if len > c.buf.len() as u64 {
                    return Err(BadWire("buffer underflow".into()));
                }
                let limit = c.buf.len() - len as usize;
                while c.buf.len() > limit {
                    hot.push_frame_id(fast_varint(&mut c.buf)?);
                }
                if c.buf.len() != limit {
                    return Err(BadWire("delimited length exceeded".into()));
                }
            }
            2 => {
                let v = c.varint(wt)?;
                hot.push_frame_id(v);
                // Unpacked ids come one after the other: each next `0x10` key (field 2, a
                // varint) read here without the general key and field dispatch.
                unpacked_ids(&mut c.buf, hot)?;
            }
            _ => c.skip(wt, tag, TOP - 2)?,
        }
    }
    hot.callstacks.push(CallRef { iid, frames: start..hot.frame_ids.len() });
    Ok(())
}

/// `ProfilePacket` (budget `TOP - 1`).
fn profile_packet(c: &mut Cursor<'_>, hot: &mut Hot) -> R<()> {
    hot.profile = true;
    while !c.buf.is_empty() {
        let (tag, wt) = c.key()?;
        match tag {
            1 => {
                let s = generated(c, wt)?;
                hot.strings.push(s);
            }
            2 => {
                let f = generated(c, wt)?;
                hot.inline_frames.push(f);
            }
            3 => {
                let s = generated(c, wt)?;
                hot.inline_callstacks.push(s);
            }
            4 => {
                let m = generated(c, wt)?;
                hot.inline_mappings.push(m);
            }
            5 => process_heap_samples(&mut c.nested(wt)?, hot)?,
            6 => hot.continued = Some(c.varint(wt)? != 0),
            7 => hot.index = Some(c.varint(wt)?),
            _ => c.skip(wt, tag, TOP - 1)?,
        }
    }
    Ok(())
}

/// `ProcessHeapSamples` (budget `TOP - 2`).
fn process_heap_samples(c: &mut Cursor<'_>, hot: &mut Hot) -> R<()> {
    let start = hot.samples.len();
    let mut d = DumpRef::default();
    let mut count = 0;
    while !c.buf.is_empty() {
        let (tag, wt) = c.key()?;
        match tag {
            1 => d.pid = Some(c.varint(wt)?),
            2 => {
                let s = heap_sample(&mut c.nested(wt)?)?;
                PackedSamples::pack(&mut hot.samples, s);
                count += 1;
            }
            3 => d.from_startup = Some(c.varint(wt)? != 0),
            4 => d.rejected_concurrent = Some(c.varint(wt)? != 0),
            5 => {
                generated::<pb::profile_packet::ProcessStats>(c, wt)?;
            }
            6 => d.disconnected = Some(c.varint(wt)? != 0),
            7 => d.buffer_overran = Some(c.varint(wt)? != 0),
            8 => d.buffer_corrupted = Some(c.varint(wt)? != 0),
            9 => d.timestamp = Some(c.varint(wt)?),
            10 => d.hit_guardrail = Some(c.varint(wt)? != 0),
            11 => {
                // A `string`: UTF-8, as prost requires.
                let (s, v) = c.span(wt)?;
                if std::str::from_utf8(v).is_err() {
                    return Err(BadWire("invalid string value: data is not UTF-8 encoded".into()));
                }
                d.heap_name = Some(s);
            }
            12 => d.sampling_interval_bytes = Some(c.varint(wt)?),
            13 => d.orig_sampling_interval_bytes = Some(c.varint(wt)?),
            14 => d.client_error = Some(c.varint(wt)? as i32),
            15 => d.start_timestamp = Some(c.varint(wt)?),
            _ => c.skip(wt, tag, TOP - 2)?,
        }
    }
    d.samples = start..hot.samples.len();
    d.sample_count = count;
    hot.dumps.push(d);
    Ok(())
}

/// `HeapSample` (budget `TOP - 3`).
#[inline(always)]
fn heap_sample(c: &mut Cursor<'_>) -> R<RawSample> {
    let mut s = RawSample::default();
    while !c.buf.is_empty() {
        let (tag, wt) = c.key()?;
        match tag {
            1 => s.callstack = c.varint(wt)?,
            2 => s.alloc_bytes = c.varint(wt)?,
            3 => s.freed_bytes = c.varint(wt)?,
            // timestamp: checked, not read.
            4 => {
                c.varint(wt)?;
            }
            5 => s.alloc_count = c.varint(wt)?,
            6 => s.free_count = c.varint(wt)?,
            8 => s.max_bytes = Some(c.varint(wt)?),
            9 => s.max_count = Some(c.varint(wt)?),
            _ => c.skip(wt, tag, TOP - 3)?,
        }
    }
    Ok(s)
}

impl super::packets::LoopPacket for LitePacket {
    fn timestamp(&self) -> Option<u64> {
        self.head.timestamp
    }

    fn rest(&self) -> Option<&pb::TracePacket> {
        self.full.as_ref()
    }
}

#[cfg(test)]
mod tests {
    /// Runs of unpacked ids of every length (one to ten bytes, overlong encodings, ids of 32
    /// bits and more) read as `fast_varint` reads them, each cut anywhere (a varint running past
    /// the end is an error there too), and a run ends at the first byte that is not a `0x10` key.
    #[test]
    fn unpacked_ids_read_as_one_varint_at_a_time() {
        use super::*;
        let mut ids: Vec<u64> = vec![0, 1, 127, 128, 300, 16_383, 16_384, 59_000, (1 << 21) - 1, 1 << 21];
        ids.extend([(1 << 28) - 1, 1 << 28, u64::from(u32::MAX) - 1, u64::from(u32::MAX), 1 << 35, u64::MAX]);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ids.push(x >> (x % 64));
        }
        let mut bytes = Vec::new();
        for &id in &ids {
            bytes.push(0x10);
            prost::encoding::encode_varint(id, &mut bytes);
        }
        // Overlong encodings of 5 and 0, then a byte that ends the run.
        bytes.extend([0x10, 0x85, 0x80, 0x00, 0x10, 0x80, 0x80, 0x80, 0x80, 0x00, 0x18, 0x10, 0x01]);
        let slow = |mut b: &[u8]| -> (Result<Vec<u64>, ()>, usize) {
            let mut out = Vec::new();
            while let [0x10, ref rest @ ..] = *b {
                b = rest;
                match fast_varint(&mut b) {
                    Ok(v) => out.push(v),
                    Err(_) => return (Err(()), b.len()),
                }
            }
            (Ok(out), b.len())
        };
        for cut in (0..bytes.len()).step_by(7).chain([bytes.len()]) {
            let b = &bytes[..cut];
            let (want, left) = slow(b);
            let mut hot = Hot::default();
            let mut got_buf = b;
            let got = unpacked_ids(&mut got_buf, &mut hot).map(|()| hot.frame_ids(0..hot.frame_id_count()).collect());
            assert_eq!(got.map_err(|_| ()), want, "cut {cut}");
            if want.is_ok() {
                assert_eq!(got_buf.len(), left, "cut {cut}");
            }
        }
        let (all, left) = slow(&bytes);
        assert_eq!(all.unwrap()[ids.len()..], [5, 0]);
        assert_eq!(left, 3);
    }

    use prost::Message;

    use super::*;
    use crate::proto::perfetto::profile_packet::{HeapSample, ProcessHeapSamples, ProcessStats};

    /// What the generated types read of a packet, rebuilt from a [`LitePacket`], with the
    /// fields heapconv drops (checked, not kept) cleared on both sides.
    fn rebuilt(p: &LitePacket, bytes: &[u8]) -> pb::TracePacket {
        let h = &p.hot;
        let string = |s: &Str| pb::InternedString { iid: s.iid, str: s.str.map(|x| x.of(bytes).to_vec()) };
        let mut out = p.full.clone().unwrap_or_default();
        out.trusted_uid = None;
        out.trusted_pid = None;
        out.timestamp_clock_id = None;
        out.timestamp = p.head.timestamp;
        out.trusted_packet_sequence_id = p.head.trusted_packet_sequence_id;
        out.sequence_flags = p.head.sequence_flags;
        out.incremental_state_cleared = p.head.incremental_state_cleared;
        out.previous_packet_dropped = p.head.previous_packet_dropped;
        out.first_packet_on_sequence = p.head.first_packet_on_sequence;
        out.interned_data = h.interned.then(|| pb::InternedData {
            function_names: h.function_names.iter().map(string).collect(),
            frames: h.frames.iter().map(|f| f.to_pb()).collect(),
            callstacks: h
                .callstacks
                .iter()
                .map(|c| pb::Callstack { iid: c.iid, frame_ids: h.frame_ids(c.frames.clone()).collect() })
                .collect(),
            build_ids: h.build_ids.iter().map(string).collect(),
            mapping_paths: h.mapping_paths.iter().map(string).collect(),
            source_paths: h.source_paths.iter().map(string).collect(),
            mappings: h.mappings.clone(),
        });
        out.profile_packet = h.profile.then(|| pb::ProfilePacket {
            strings: h.strings.clone(),
            frames: h.inline_frames.clone(),
            callstacks: h.inline_callstacks.clone(),
            mappings: h.inline_mappings.clone(),
            process_dumps: h
                .dumps
                .iter()
                .map(|d| ProcessHeapSamples {
                    pid: d.pid,
                    samples: PackedSamples::unpack(&h.samples[d.samples.clone()])
                        .map(|s| HeapSample {
                            callstack_id: Some(s.callstack),
                            self_allocated: Some(s.alloc_bytes),
                            self_freed: Some(s.freed_bytes),
                            timestamp: None,
                            alloc_count: Some(s.alloc_count),
                            free_count: Some(s.free_count),
                            self_max: s.max_bytes,
                            self_max_count: s.max_count,
                        })
                        .collect(),
                    from_startup: d.from_startup,
                    rejected_concurrent: d.rejected_concurrent,
                    stats: None,
                    disconnected: d.disconnected,
                    buffer_overran: d.buffer_overran,
                    buffer_corrupted: d.buffer_corrupted,
                    timestamp: d.timestamp,
                    hit_guardrail: d.hit_guardrail,
                    heap_name: d.heap_name(bytes).map(str::to_owned),
                    sampling_interval_bytes: d.sampling_interval_bytes,
                    orig_sampling_interval_bytes: d.orig_sampling_interval_bytes,
                    client_error: d.client_error,
                    start_timestamp: d.start_timestamp,
                })
                .collect(),
            continued: h.continued,
            index: h.index,
        });
        out
    }

    /// The generated decoder's packet with the dropped fields cleared.
    fn generated(bytes: &[u8]) -> Option<pb::TracePacket> {
        let mut p = pb::TracePacket::decode(bytes).ok()?;
        p.trusted_uid = None;
        p.trusted_pid = None;
        p.timestamp_clock_id = None;
        if let Some(pp) = &mut p.profile_packet {
            for d in &mut pp.process_dumps {
                d.stats = None;
                // Absent counters read as 0, as the decoder has always read them.
                for s in &mut d.samples {
                    s.timestamp = None;
                    for v in [
                        &mut s.callstack_id,
                        &mut s.self_allocated,
                        &mut s.self_freed,
                        &mut s.alloc_count,
                        &mut s.free_count,
                    ] {
                        *v = Some(v.unwrap_or(0));
                    }
                }
            }
        }
        Some(p)
    }

    fn sample_packets() -> Vec<Vec<u8>> {
        let s = |iid: u64, v: &str| pb::InternedString { iid: Some(iid), str: Some(v.as_bytes().to_vec()) };
        let frame = |iid: u64| pb::Frame {
            iid: Some(iid),
            function_name_id: Some(iid % 3),
            mapping_id: Some(1),
            rel_pc: Some(iid * 4096 + 17),
            source_path_iid: Some(2),
            line_number: Some(7),
        };
        let interned = pb::TracePacket {
            trusted_uid: Some(-3),
            trusted_pid: Some(77),
            trusted_packet_sequence_id: Some(9),
            sequence_flags: Some(3),
            timestamp: Some(1 << 40),
            interned_data: Some(pb::InternedData {
                function_names: vec![s(1, "malloc"), s(2, "main"), pb::InternedString { iid: None, str: None }],
                frames: (1..6).map(frame).collect(),
                callstacks: vec![
                    pb::Callstack { iid: Some(1), frame_ids: vec![1, 2, 3] },
                    pb::Callstack { iid: Some(300), frame_ids: vec![] },
                    pb::Callstack { iid: None, frame_ids: vec![5, 4, 3, 2, 1, u64::MAX] },
                    // Ids of 32 bits and past them (kept aside from the 32-bit ones).
                    pb::Callstack {
                        iid: Some(301),
                        frame_ids: vec![
                            u64::from(u32::MAX) - 1,
                            u64::from(u32::MAX),
                            4,
                            1 << 32,
                            3,
                            u64::from(u32::MAX),
                        ],
                    },
                ],
                build_ids: vec![s(1, "\u{1}\u{2}")],
                mapping_paths: vec![s(1, "system"), s(2, "lib64")],
                source_paths: vec![s(2, "a.cc")],
                mappings: vec![pb::Mapping {
                    iid: Some(1),
                    build_id: Some(1),
                    start: Some(4096),
                    end: Some(8192),
                    path_string_ids: vec![1, 2],
                    ..Default::default()
                }],
            }),
            ..Default::default()
        };
        let sample = |c: u64| HeapSample {
            callstack_id: Some(c),
            self_allocated: Some(c * 1000),
            self_freed: Some(c * 10),
            timestamp: Some(5),
            alloc_count: Some(c + 1),
            free_count: Some(1),
            self_max: (c == 3).then_some(99),
            self_max_count: (c == 3).then_some(2),
        };
        let profile = pb::TracePacket {
            trusted_packet_sequence_id: Some(9),
            previous_packet_dropped: Some(1),
            first_packet_on_sequence: Some(true),
            incremental_state_cleared: Some(false),
            profile_packet: Some(pb::ProfilePacket {
                strings: vec![s(4, "inline")],
                frames: vec![frame(40)],
                callstacks: vec![pb::Callstack { iid: Some(41), frame_ids: vec![40] }],
                mappings: vec![pb::Mapping { iid: Some(42), ..Default::default() }],
                process_dumps: vec![
                    ProcessHeapSamples {
                        pid: Some(1000),
                        samples: (1..5).map(sample).collect(),
                        from_startup: Some(true),
                        stats: Some(ProcessStats { unwinding_errors: Some(3), ..Default::default() }),
                        timestamp: Some(123),
                        heap_name: Some("libc.malloc".into()),
                        sampling_interval_bytes: Some(4096),
                        client_error: Some(-1),
                        start_timestamp: Some(1),
                        ..Default::default()
                    },
                    ProcessHeapSamples { pid: Some(1001), buffer_overran: Some(true), ..Default::default() },
                ],
                continued: Some(true),
                index: Some(7),
            }),
            ..Default::default()
        };
        // A packet with a field of its own besides the hot ones: read by the generated type.
        let mut mixed = profile.clone();
        mixed.process_tree = Some(pb::ProcessTree::default());
        mixed.interned_data = interned.interned_data.clone();
        let mut out: Vec<Vec<u8>> = [interned, profile, mixed].iter().map(Message::encode_to_vec).collect();
        // Two interned-data fields in one packet merge; the packed form of frame ids; unknown
        // fields (a varint, a group, fixed widths) at every level.
        let mut two = out[0].clone();
        two.extend_from_slice(&out[0]);
        two.extend_from_slice(&[0x62, 0x07, 0x3a, 0x05, 0x12, 0x03, 0x01, 0x02, 0x03]);
        // Field 127 varint, field 300 a group holding a varint, field 301 fixed32.
        two.extend_from_slice(&[0xf8, 0x07, 0x01, 0xe3, 0x12, 0x08, 0x01, 0xe4, 0x12, 0xed, 0x12, 1, 2, 3, 4]);
        out.push(two);
        out
    }

    fn same(bytes: &[u8]) {
        let want = generated(bytes);
        let got = decode_packet(bytes, Box::default());
        match (want, got) {
            (None, Err(_)) => {}
            (Some(w), Ok(g)) => assert_eq!(rebuilt(&g, bytes), w, "{bytes:?}"),
            (w, g) => panic!("generated ok: {}, ours ok: {}, on {bytes:?}", w.is_some(), g.is_ok()),
        }
    }

    #[test]
    fn reads_what_the_generated_types_read() {
        for p in sample_packets() {
            let g = decode_packet(&p, Box::default()).unwrap();
            assert!(g.hot.interned || g.hot.profile);
            same(&p);
        }
        let p = &sample_packets()[1];
        let g = decode_packet(p, Box::default()).unwrap();
        assert_eq!(g.hot.dumps[0].heap_name(p), Some("libc.malloc"));
        let samples: Vec<RawSample> = PackedSamples::unpack(&g.hot.samples[g.hot.dumps[0].samples.clone()]).collect();
        assert_eq!((samples.len(), g.hot.dumps[0].sample_count), (4, 4));
        assert_eq!((samples[2].max_bytes, samples[2].max_count, samples[3].max_bytes), (Some(99), Some(2), None));
        assert_eq!((samples[3].callstack, samples[3].alloc_bytes, samples[3].free_count), (4, 4000, 1));
        assert_eq!((g.hot.continued, g.hot.index, g.head.previous_packet_dropped), (Some(true), Some(7), Some(1)));
        assert!(g.full.is_none());
        assert!(decode_packet(&sample_packets()[2], Box::default()).unwrap().full.is_some());
    }

    #[test]
    fn accepts_and_refuses_exactly_what_the_generated_types_do() {
        // Every truncation, and seeded byte changes at every position (flips, sets to values
        // that change wire types, lengths, varint continuation, UTF-8).
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut refused = 0;
        for p in sample_packets() {
            for cut in 0..p.len() {
                same(&p[..cut]);
            }
            for i in 0..p.len() {
                for v in [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x0b, 0x0c, 0x80, 0xff, 0xc3, p[i] ^ 0x80] {
                    let mut m = p.clone();
                    m[i] = v;
                    refused += usize::from(generated(&m).is_none());
                    same(&m);
                }
            }
            for _ in 0..3000 {
                let mut m = p.clone();
                for _ in 0..1 + next() % 3 {
                    let i = (next() % m.len() as u64) as usize;
                    m[i] = next() as u8;
                }
                same(&m);
            }
        }
        assert!(refused > 100, "the changes must reach the error paths: {refused}");
        // A non-UTF-8 heap name is refused, as prost refuses a `string`.
        let bad = pb::TracePacket {
            profile_packet: Some(pb::ProfilePacket {
                process_dumps: vec![ProcessHeapSamples { heap_name: Some("ab".into()), ..Default::default() }],
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec();
        let at = bad.windows(2).position(|w| w == b"ab").unwrap();
        let mut m = bad.clone();
        m[at] = 0xff;
        assert!(generated(&m).is_none());
        assert!(decode_packet(&m, Box::default()).is_err());
        same(&bad);
    }

    #[test]
    fn unknown_groups_are_skipped_within_prosts_recursion_budget() {
        // Field 15 as a group nested n deep inside a HeapSample (budget 97 there).
        let group = |n: usize| {
            let mut g = vec![0x7b; n];
            g.extend(std::iter::repeat_n(0x7c, n));
            g
        };
        let wrap = |key: &[u8], body: &[u8]| {
            let mut v = key.to_vec();
            prost::encoding::encode_varint(body.len() as u64, &mut v);
            v.extend_from_slice(body);
            v
        };
        for n in [1, 50, 96, 97, 98, 120] {
            let pkt = wrap(&[0xaa, 0x02], &wrap(&[0x2a], &wrap(&[0x12], &group(n))));
            assert_eq!(generated(&pkt).is_some(), n <= 97, "depth {n}");
            assert_eq!(decode_packet(&pkt, Box::default()).is_ok(), n <= 97, "depth {n}");
            same(&pkt);
        }
    }
}
