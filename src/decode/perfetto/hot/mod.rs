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
mod tests;
