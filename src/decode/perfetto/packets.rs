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
use crate::decode::input::{CappedReader, Input};
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
    fn observe(&mut self, pkt: &pb::TracePacket) {
        if let Some(ts) = pkt.timestamp {
            self.last_ts = Some(ts);
        }
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
    let size = if input.gzipped { None } else { input.file_size };
    let name = input.name.clone();
    let max_packet = d.trace().max_packet_bytes;
    let mut reader = PacketReader::new(input.reader(), &name, size, max_packet);
    loop {
        let (offset, number, pkt) = match reader.next_packet() {
            Ok(Some(p)) => (p.offset, p.number, decode(&name, p.bytes, p.offset, p.number)),
            Ok(None) => break,
            Err(e) if e.kind() == ErrorKind::Io => return Err(e),
            Err(e) => {
                d.trace().report.damage = Some(e.to_string());
                break;
            }
        };
        match pkt.and_then(|pkt| packet(d, pkt, offset, number, f)) {
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

fn decode(name: &str, bytes: &[u8], offset: u64, number: u64) -> Result<pb::TracePacket> {
    pb::TracePacket::decode(bytes).map_err(|e| {
        Error::new(ErrorKind::Malformed, format!("{name} at byte {offset}, packet {number}: bad TracePacket"))
            .with_source(e)
    })
}

fn packet<D: TraceDecoder>(
    d: &mut D,
    pkt: pb::TracePacket,
    offset: u64,
    number: u64,
    f: &mut PacketFn<'_, D>,
) -> Result<()> {
    let t = d.trace();
    t.report.packets += 1;
    if let Some(data) = &pkt.compressed_packets {
        t.kind("compressed_packets");
        return bundle(d, data, offset, number, f);
    }
    if pkt.zstd_compressed_packets.is_some() {
        t.kind("zstd_compressed_packets");
        t.report.problem(Some(offset), Some(number), "zstd_compressed_packets are not supported; bundle skipped");
        return Ok(());
    }
    t.observe(&pkt);
    f(d, pkt, offset, number)
}

/// Expands a `compressed_packets` bundle (zlib, or gzip as some writers use), capped at the
/// decoder's bundle limit, and hands its packets on.
fn bundle<D: TraceDecoder>(d: &mut D, data: &[u8], offset: u64, number: u64, f: &mut PacketFn<'_, D>) -> Result<()> {
    let t = d.trace();
    t.report.compressed_bundles += 1;
    let inflated: Box<dyn std::io::Read> = if data.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(data))
    } else {
        Box::new(flate2::read::ZlibDecoder::new(data))
    };
    let mut capped = CappedReader::new(inflated, t.max_bundle_bytes);
    let mut buf = Vec::new();
    std::io::Read::read_to_end(&mut capped, &mut buf).map_err(|e| {
        let kind = if e.to_string().contains("limit") { ErrorKind::LimitExceeded } else { ErrorKind::Malformed };
        Error::new(kind, format!("{} at byte {offset}, packet {number}: compressed_packets: {e}", t.name))
    })?;
    let inner_name = format!("{} (compressed_packets at byte {offset}, packet {number})", t.name);
    let len = buf.len() as u64;
    let mut inner = PacketReader::new(buf.as_slice(), &inner_name, Some(len), t.max_packet_bytes);
    while let Some(p) = inner.next_packet()? {
        let (ioff, inum) = (p.offset, p.number);
        let pkt = pb::TracePacket::decode(p.bytes).map_err(|e| {
            Error::new(
                ErrorKind::Malformed,
                format!("{inner_name}: inner byte {ioff}, inner packet {inum}: bad TracePacket"),
            )
            .with_source(e)
        })?;
        let t = d.trace();
        t.report.packets += 1;
        if pkt.compressed_packets.is_some() {
            t.report.problem(Some(offset), Some(number), "nested compressed_packets ignored");
            continue;
        }
        t.observe(&pkt);
        f(d, pkt, offset, number)?;
    }
    Ok(())
}
