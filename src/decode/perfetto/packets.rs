//! The packet loop every Perfetto decoder shares: framing, `compressed_packets` bundles, the
//! line between damage and failure, and the trace-wide facts (timestamps, process names, clock
//! snapshots) that a packet carries whatever else it holds.
//!
//! A decoder keeps a [`TraceState`] and hands [`read_trace`] a function that looks at each plain
//! `TracePacket` for its own data (heapprofd profile packets, heap graphs, …). Packets inside a
//! bundle are handed over with the offset and number of the bundle's outer packet, so every
//! error and problem names a place in the file the user has.

use prost::Message;

use super::clock::Clocks;
use super::reader::PacketReader;
use crate::decode::input::Input;
use crate::error::{Error, ErrorKind, Result};
use crate::model::TraceReport;
use crate::proto::perfetto as pb;

/// What a decoder knows of the trace as a whole while it reads it.
#[derive(Default)]
pub(super) struct TraceState {
    /// The input's name, as errors and problems print it.
    pub(super) name: String,
    /// The report the decoder returns.
    pub(super) report: TraceReport,
    /// Clock snapshots seen so far.
    pub(super) clocks: Clocks,
    /// The timestamp of the latest packet that had one.
    pub(super) last_ts: Option<u64>,
    max_packet_bytes: u64,
    max_bundle_bytes: u64,
}

impl TraceState {
    /// The state at the start of `input`, with the limits on one packet and on one bundle's
    /// expanded size.
    pub(super) fn new(input: &Input, max_packet_bytes: u64, max_bundle_bytes: u64) -> Self {
        TraceState {
            name: input.name.clone(),
            report: TraceReport { source: input.name.clone(), gzipped: input.gzipped, ..Default::default() },
            clocks: Clocks::default(),
            last_ts: None,
            max_packet_bytes,
            max_bundle_bytes,
        }
    }

    /// Counts one packet holding a field of kind `k` (`inspect` lists these counts).
    pub(super) fn kind(&mut self, k: &str) {
        *self.report.packet_kinds.entry(k.to_owned()).or_default() += 1;
    }

    /// Records what `pkt` says of the whole trace: its timestamp, process names (from a
    /// process tree) and clock snapshots.
    fn observe(&mut self, pkt: &impl LoopPacket) {
        if let Some(ts) = pkt.timestamp() {
            self.last_ts = Some(ts);
        }
        let Some(pkt) = pkt.rest() else { return };
        if let Some(tree) = &pkt.process_tree {
            self.kind("process_tree");
            for p in &tree.processes {
                if let (Some(pid), Some(name)) = (p.pid, p.cmdline.first())
                    && let Ok(pid) = u64::try_from(pid)
                    && !name.is_empty()
                {
                    self.report.processes.insert(pid, name.clone());
                }
            }
        }
        if let Some(snap) = &pkt.clock_snapshot {
            self.kind("clock_snapshot");
            self.report.clock_snapshots += 1;
            let clocks = snap.clocks.iter().filter_map(|c| Some((c.clock_id?, c.timestamp?))).collect();
            self.clocks.add_snapshot(clocks, snap.primary_trace_clock);
        }
    }
}

/// A decoder built on [`read_trace`]: it owns a [`TraceState`].
pub(super) trait TraceDecoder {
    /// The decoder's trace-wide state.
    fn trace(&mut self) -> &mut TraceState;
}

/// One plain packet for the decoder: `(decoder, packet, offset, number)`.
pub(super) type PacketFn<'f, D> = dyn FnMut(&mut D, pb::TracePacket, u64, u64) -> Result<()> + 'f;

/// What the packet loop reads of a decoded packet, whatever type decoded it.
pub(super) trait LoopPacket {
    /// The packet's timestamp.
    fn timestamp(&self) -> Option<u64>;
    /// The packet as the generated type has it, when it was decoded so (the process tree,
    /// clock snapshot and bundles are read from it); `None` when it holds none of those.
    fn rest(&self) -> Option<&pb::TracePacket>;
}

impl LoopPacket for pb::TracePacket {
    fn timestamp(&self) -> Option<u64> {
        self.timestamp
    }

    fn rest(&self) -> Option<&pb::TracePacket> {
        Some(self)
    }
}

/// Why a packet decoder refused a packet.
#[derive(Debug)]
pub(super) struct DecodeErr(pub(super) Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for DecodeErr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DecodeErr {}

/// Decodes one packet's bytes for a decoder (which may keep buffers to reuse).
pub(super) type DecodeFn<'f, D, P> = dyn FnMut(&mut D, &[u8]) -> std::result::Result<P, DecodeErr> + 'f;

/// One plain packet for the decoder, with its bytes: `(decoder, packet, bytes, offset, number)`.
pub(super) type BytesFn<'f, D, P> = dyn FnMut(&mut D, P, &[u8], u64, u64) -> Result<()> + 'f;

/// Whether an error means the trace is damaged (reading stops there, what came before is kept)
/// rather than that the run failed (I/O, an output's error).
fn is_damage(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Malformed | ErrorKind::Truncated | ErrorKind::LimitExceeded)
}

/// Reads every packet of `input` and hands each plain `TracePacket` to `f` (those inside
/// `compressed_packets` bundles too, after [`TraceState::observe`] has seen it).
///
/// Damage (a bad packet, a truncated file, a bundle expanding past its cap: any error of the
/// container that is not I/O, and `f`'s malformed, truncated or over-limit errors) ends the
/// loop without an error: `report.damage` says what and where.
/// I/O errors and `f`'s other errors are returned. `report.bytes` is set to the bytes read.
pub(super) fn read_trace<D: TraceDecoder>(input: &mut Input, d: &mut D, f: &mut PacketFn<'_, D>) -> Result<()> {
    read_trace_with(
        input,
        d,
        &mut |_, b| pb::TracePacket::decode(b).map_err(|e| DecodeErr(Box::new(e))),
        &mut |d, pkt, _, offset, number| f(d, pkt, offset, number),
    )
}

/// [`read_trace`] with the decoder's own packet type: `decode` reads each packet's bytes
/// (and must fail where prost's generated decoder fails), `f` gets the packet and its bytes.
pub(super) fn read_trace_with<D: TraceDecoder, P: LoopPacket>(
    input: &mut Input,
    d: &mut D,
    decode: &mut DecodeFn<'_, D, P>,
    f: &mut BytesFn<'_, D, P>,
) -> Result<()> {
    let name = input.name.clone();
    let mut reader = PacketReader::for_input(input, d.trace().max_packet_bytes);
    loop {
        let r = match reader.next_packet() {
            Ok(Some(p)) => {
                let (offset, number) = (p.offset, p.number);
                decode(d, p.bytes)
                    .map_err(|e| {
                        Error::new(
                            ErrorKind::Malformed,
                            format!("{name} at byte {offset}, packet {number}: bad TracePacket"),
                        )
                        .with_source(e)
                    })
                    .and_then(|pkt| packet(d, pkt, p.bytes, offset, number, decode, f))
            }
            Ok(None) => break,
            Err(e) if e.kind() == ErrorKind::Io => return Err(e),
            Err(e) => {
                d.trace().report.damage = Some(e.to_string());
                break;
            }
        };
        match r {
            Ok(()) => {}
            Err(e) if is_damage(&e) => {
                d.trace().report.damage = Some(e.to_string());
                break;
            }
            Err(e) => return Err(e),
        }
    }
    d.trace().report.bytes = reader.offset();
    Ok(())
}

fn packet<D: TraceDecoder, P: LoopPacket>(
    d: &mut D,
    pkt: P,
    bytes: &[u8],
    offset: u64,
    number: u64,
    decode: &mut DecodeFn<'_, D, P>,
    f: &mut BytesFn<'_, D, P>,
) -> Result<()> {
    let t = d.trace();
    t.report.packets += 1;
    if let Some(data) = pkt.rest().and_then(|r| r.compressed_packets.as_deref()) {
        t.kind("compressed_packets");
        return bundle(d, data, offset, number, decode, f);
    }
    if pkt.rest().is_some_and(|r| r.zstd_compressed_packets.is_some()) {
        t.kind("zstd_compressed_packets");
        t.report.problem(Some(offset), Some(number), "zstd_compressed_packets are not supported; bundle skipped");
        return Ok(());
    }
    t.observe(&pkt);
    f(d, pkt, bytes, offset, number)
}

/// Expands a `compressed_packets` bundle (zlib, or gzip as some writers use), capped at the
/// decoder's bundle limit, and hands its packets on.
fn bundle<D: TraceDecoder, P: LoopPacket>(
    d: &mut D,
    data: &[u8],
    offset: u64,
    number: u64,
    decode: &mut DecodeFn<'_, D, P>,
    f: &mut BytesFn<'_, D, P>,
) -> Result<()> {
    let t = d.trace();
    t.report.compressed_bundles += 1;
    let at = format!("{} at byte {offset}, packet {number}", t.name);
    let buf = crate::decode::input::inflate_bundle(data, t.max_bundle_bytes, &at)?;
    let inner_name = format!("{} (compressed_packets at byte {offset}, packet {number})", t.name);
    let len = buf.len() as u64;
    let mut inner = PacketReader::new(buf.as_slice(), &inner_name, Some(len), t.max_packet_bytes);
    while let Some(p) = inner.next_packet()? {
        let (ioff, inum) = (p.offset, p.number);
        let pkt = decode(d, p.bytes).map_err(|e| {
            Error::new(
                ErrorKind::Malformed,
                format!("{inner_name}: inner byte {ioff}, inner packet {inum}: bad TracePacket"),
            )
            .with_source(e)
        })?;
        let t = d.trace();
        t.report.packets += 1;
        if pkt.rest().is_some_and(|r| r.compressed_packets.is_some()) {
            t.report.problem(Some(offset), Some(number), "nested compressed_packets ignored");
            continue;
        }
        t.observe(&pkt);
        f(d, pkt, p.bytes, offset, number)?;
    }
    Ok(())
}

/// What the reading thread of [`read_trace_ahead`] hands over, in the order of the stream.
enum Ahead<'m, P> {
    /// A packet: its bytes, what decoding them gave, where it starts, its number, and the
    /// reader's offset after it.
    Packet { bytes: Bytes<'m>, pkt: std::result::Result<P, DecodeErr>, offset: u64, number: u64, end: u64 },
    /// The end of the stream at offset `end`, or the container's error there.
    End { end: u64, err: Option<Error> },
}

/// A packet's bytes: read into a buffer of their own, or where they lie in a mapped file.
enum Bytes<'m> {
    Read(Vec<u8>),
    Mapped(&'m [u8]),
}

impl std::ops::Deref for Bytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Read(v) => v,
            Bytes::Mapped(b) => b,
        }
    }
}

/// The container's packets, read from a stream or found in a mapped file.
enum Packets<'r, 'm> {
    Stream(PacketReader<&'r mut (dyn std::io::Read + Send)>),
    Mapped(PacketReader<&'m [u8]>),
}

impl<'m> Packets<'_, 'm> {
    /// The next packet (its offset, number and bytes; a packet read goes into `buf`, whose
    /// old bytes it replaces), or `None` at the end.
    fn next(&mut self, mut buf: Vec<u8>) -> Result<Option<(u64, u64, Bytes<'m>)>> {
        match self {
            Packets::Stream(r) => {
                let Some(p) = r.next_packet()? else { return Ok(None) };
                let (offset, number) = (p.offset, p.number);
                r.swap_buffer(&mut buf);
                Ok(Some((offset, number, Bytes::Read(buf))))
            }
            Packets::Mapped(r) => Ok(r.next_packet_in_place()?.map(|p| (p.offset, p.number, Bytes::Mapped(p.bytes)))),
        }
    }

    fn offset(&self) -> u64 {
        match self {
            Packets::Stream(r) => r.offset(),
            Packets::Mapped(r) => r.offset(),
        }
    }
}

/// Files up to this size are mapped with their pages read in at once.
const POPULATE_UP_TO: u64 = 64 << 20;

/// The unit in which the pages of a mapped input are released behind the loop: a multiple of
/// every page size (4, 16 or 64 KiB).
const RELEASE_UNIT: usize = 64 << 10;

/// A read-only map of `input` when it is a plain file that can be mapped; one of at most
/// [`POPULATE_UP_TO`] bytes has its pages read in ahead (`MAP_POPULATE`: one call instead of a
/// fault every few pages).
fn map_at_rest(input: &Input) -> Option<memmap2::Mmap> {
    let crate::decode::input::AtRest::File(path) = input.at_rest()? else { return None };
    // (Not a pipe or a device: those are read as streams.)
    let meta = std::fs::metadata(path).ok().filter(std::fs::Metadata::is_file)?;
    let file = std::fs::File::open(path).ok()?;
    let mut options = memmap2::MmapOptions::new();
    if meta.len() <= POPULATE_UP_TO {
        options.populate();
    }
    // SAFETY: a read-only map of the input, which heapconv never writes (an output written
    // over it replaces the file, not its bytes); it lives for this reading only.
    unsafe { options.map(&file) }.ok()
}

/// Takes the pages of `map` before byte `upto` (in whole [`RELEASE_UNIT`]s, from `*released`
/// on) out of the process's resident memory: the loop is done with the packets there, so that
/// a mapped trace counts in the peak RSS by the packets at work, not by its size.
fn release_behind(map: &memmap2::Mmap, released: &mut usize, upto: u64) {
    let upto = usize::try_from(upto).unwrap_or(usize::MAX).min(map.len()) / RELEASE_UNIT * RELEASE_UNIT;
    if upto > *released {
        // SAFETY: no byte of the range is borrowed any more (the packets there are done with;
        // the reading thread holds only later ones), and pages of a read-only file map dropped
        // this way read the same bytes from the file again if touched.
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, *released, upto - *released) };
        *released = upto;
    }
}

/// Decodes one packet's bytes on the reading thread of [`read_trace_ahead`], reusing the spare
/// buffers `S` of a packet the loop is done with, when there is one.
pub(super) type AheadFn<'f, P, S> = dyn FnMut(&[u8], Option<S>) -> std::result::Result<P, DecodeErr> + Send + 'f;

/// [`read_trace_with`] with the container read and each packet decoded by `ahead` on a second
/// thread, up to two packets ahead of the loop, so that reading and decoding the next packets
/// overlap with `f`'s work on this one. The packets, the report, the errors and the damage are
/// those of [`read_trace_with`]: the reading thread stops after the first packet that does
/// not decode or the container's first error (both end the loop there), and `report.bytes` is
/// the reader's offset after the last thing the loop took. Packets inside bundles are decoded
/// by `decode` in the loop. After `f`, `recycle` may give back the buffers of the packet it
/// took, for the reading thread to reuse (with the packet's byte buffer). With `in_place`, a
/// plain file is mapped and each packet decoded where it lies, not copied into a buffer; the
/// pages behind the packets the loop is done with are released, so the file counts in the peak
/// RSS by the packets at work (and, up to [`POPULATE_UP_TO`], by its whole size at the start,
/// its pages read in at once).
pub(super) fn read_trace_ahead<D: TraceDecoder, P: LoopPacket + Send, S: Send>(
    input: &mut Input,
    in_place: bool,
    d: &mut D,
    ahead: &mut AheadFn<'_, P, S>,
    recycle: &mut dyn FnMut(&mut D) -> Option<S>,
    decode: &mut DecodeFn<'_, D, P>,
    f: &mut BytesFn<'_, D, P>,
) -> Result<()> {
    let name = input.name.clone();
    let max_packet = d.trace().max_packet_bytes;
    let map = if in_place { map_at_rest(input) } else { None };
    let mut reader = match &map {
        Some(m) => Packets::Mapped(PacketReader::new(&m[..], &name, Some(m.len() as u64), max_packet)),
        None => Packets::Stream(PacketReader::for_input(input, max_packet)),
    };
    let mut released = 0;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Ahead<'_, P>>(1);
    let (back_tx, back_rx) = std::sync::mpsc::channel::<(Vec<u8>, Option<S>)>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            loop {
                let (buf, spare) = back_rx.try_recv().unwrap_or_default();
                let item = match reader.next(buf) {
                    Ok(Some((offset, number, bytes))) => {
                        let pkt = ahead(&bytes, spare);
                        Ahead::Packet { bytes, pkt, offset, number, end: reader.offset() }
                    }
                    Ok(None) => Ahead::End { end: reader.offset(), err: None },
                    Err(e) => Ahead::End { end: reader.offset(), err: Some(e) },
                };
                // Nothing is read past what ends the loop.
                let last = !matches!(&item, Ahead::Packet { pkt: Ok(_), .. });
                // A send fails when the loop stopped early (an error of `f`): so does reading.
                if tx.send(item).is_err() || last {
                    break;
                }
            }
        });
        let mut end = 0;
        let r = loop {
            // The reading thread sends an `End` or a failed packet last; it can only hang up
            // before them by panicking, which the scope passes on.
            let Ok(item) = rx.recv() else { break Ok(()) };
            match item {
                Ahead::End { end: at, err } => {
                    end = at;
                    match err {
                        None => break Ok(()),
                        Some(e) if e.kind() == ErrorKind::Io => break Err(e),
                        Some(e) => {
                            d.trace().report.damage = Some(e.to_string());
                            break Ok(());
                        }
                    }
                }
                Ahead::Packet { bytes, pkt, offset, number, end: at } => {
                    end = at;
                    let r = pkt
                        .map_err(|e| {
                            Error::new(
                                ErrorKind::Malformed,
                                format!("{name} at byte {offset}, packet {number}: bad TracePacket"),
                            )
                            .with_source(e)
                        })
                        .and_then(|pkt| packet(d, pkt, &bytes, offset, number, decode, f));
                    let spare = recycle(d);
                    let buf = match bytes {
                        Bytes::Read(v) => v,
                        Bytes::Mapped(_) => Vec::new(),
                    };
                    if let Some(m) = &map {
                        release_behind(m, &mut released, at);
                    }
                    // The reading thread may have ended (it hangs up after the last packet).
                    let _ = back_tx.send((buf, spare));
                    match r {
                        Ok(()) => {}
                        Err(e) if is_damage(&e) => {
                            d.trace().report.damage = Some(e.to_string());
                            break Ok(());
                        }
                        Err(e) => break Err(e),
                    }
                }
            }
        };
        // The reading thread stops at its next send.
        drop(rx);
        r?;
        d.trace().report.bytes = end;
        Ok(())
    })
}
