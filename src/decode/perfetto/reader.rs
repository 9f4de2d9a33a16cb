//! The Perfetto trace container: a `Trace` message is a run of `packet` fields
//! (field 1, wire type 2: byte `0x0A`, a varint length, then the packet bytes). Files can be
//! concatenated, so the reader simply loops until the end of the stream.
//!
//! The reader never trusts a length: it is checked against a cap and, when the input size is
//! known, against the bytes left, before anything is allocated; the body is read in chunks so
//! a lying length on a stream of unknown size cannot allocate more than the stream holds.

use std::io::Read;

use crate::decode::wire::StreamVarint;
use crate::error::{Error, ErrorKind, Result};

/// One packet as found in the container.
#[derive(Debug)]
pub struct RawPacket<'a> {
    /// Byte offset of the packet's tag in the (decompressed) stream.
    pub offset: u64,
    /// 0-based packet number in the stream.
    pub number: u64,
    /// The packet's bytes (a serialized `TracePacket`).
    pub bytes: &'a [u8],
}

/// Reads packets one at a time from a byte stream.
pub struct PacketReader<R> {
    inner: R,
    name: String,
    offset: u64,
    number: u64,
    buf: Vec<u8>,
    max_packet: u64,
    remaining: Option<u64>,
}

impl<'a> PacketReader<&'a mut (dyn Read + Send)> {
    /// A reader over an opened input's (decompressed) bytes, named after the input; its file
    /// size bounds lengths when that is the stream's size (not for gzip).
    pub fn for_input(input: &'a mut crate::decode::input::Input, max_packet: u64) -> Self {
        let size = if input.gzipped { None } else { input.file_size };
        let name = input.name.clone();
        PacketReader::new(input.reader(), &name, size, max_packet)
    }
}

enum Byte {
    Eof,
    Got(u8),
}

impl<R: Read> PacketReader<R> {
    /// A reader over `inner`, named `name` in errors. `size`, when known, bounds lengths.
    pub fn new(inner: R, name: &str, size: Option<u64>, max_packet: u64) -> Self {
        PacketReader {
            inner,
            name: name.to_owned(),
            offset: 0,
            number: 0,
            buf: Vec::new(),
            max_packet,
            remaining: size,
        }
    }

    /// The name errors give the stream.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Swaps the buffer holding the last packet's bytes with `other`: the caller keeps the
    /// packet (and the reader reads the next one into the buffer it was given).
    pub fn swap_buffer(&mut self, other: &mut Vec<u8>) {
        std::mem::swap(&mut self.buf, other);
    }

    /// Errors from the byte stream: a decompressor reports damaged data through `io::Error`,
    /// which is the input's fault, not the disk's.
    fn io_err(&self, e: std::io::Error) -> Error {
        use std::io::ErrorKind as K;
        let kind = match e.kind() {
            K::UnexpectedEof => ErrorKind::Truncated,
            K::InvalidData | K::InvalidInput => ErrorKind::Malformed,
            _ if e.to_string().contains("exceeds the limit") => ErrorKind::LimitExceeded,
            _ => ErrorKind::Io,
        };
        let what = if kind == ErrorKind::Io { "read failed" } else { "the compressed stream is damaged" };
        self.err(kind, self.offset, what).with_source(e)
    }

    fn err(&self, kind: ErrorKind, at: u64, what: impl std::fmt::Display) -> Error {
        Error::new(kind, format!("{} at byte {at}, packet {}: {what}", self.name, self.number))
    }

    fn byte(&mut self) -> Result<Byte> {
        let mut b = [0u8; 1];
        loop {
            match self.inner.read(&mut b) {
                Ok(0) => return Ok(Byte::Eof),
                Ok(_) => {
                    self.offset += 1;
                    if let Some(r) = self.remaining.as_mut() {
                        *r = r.saturating_sub(1);
                    }
                    return Ok(Byte::Got(b[0]));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(self.io_err(e));
                }
            }
        }
    }

    /// Reads a varint; `Ok(None)` at a clean end of stream before its first byte.
    fn varint(&mut self, start: u64) -> Result<Option<u64>> {
        let mut v = StreamVarint::default();
        loop {
            match self.byte()? {
                Byte::Eof if v.is_empty() => return Ok(None),
                Byte::Eof => {
                    return Err(self.err(ErrorKind::Truncated, start, "stream ends inside a varint"));
                }
                Byte::Got(b) => match v.push(b) {
                    Ok(Some(value)) => return Ok(Some(value)),
                    Ok(None) => {}
                    Err(_) => return Err(self.err(ErrorKind::Malformed, start, "varint longer than 64 bits")),
                },
            }
        }
    }

    fn read_body(&mut self, len: u64, start: u64) -> Result<()> {
        self.buf.clear();
        // With the stream's size known, `len` was checked against the bytes left: room for all
        // of them at once (not regrown, and copied, chunk after chunk).
        if self.remaining.is_some() {
            self.buf.reserve_exact(usize::try_from(len).unwrap_or(0));
        }
        // Grow in chunks: a stream that ends early never makes us allocate the claimed size.
        let mut left = len;
        while left > 0 {
            let chunk = left.min(1 << 20) as usize;
            let old = self.buf.len();
            self.buf.resize(old + chunk, 0);
            let mut filled = 0;
            while filled < chunk {
                match self.inner.read(&mut self.buf[old + filled..old + chunk]) {
                    Ok(0) => {
                        let got = len - left + filled as u64;
                        return Err(self.err(
                            ErrorKind::Truncated,
                            start,
                            format!("stream ends inside a {len}-byte record ({got} bytes present)"),
                        ));
                    }
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(self.io_err(e));
                    }
                }
            }
            self.offset += chunk as u64;
            if let Some(r) = self.remaining.as_mut() {
                *r = r.saturating_sub(chunk as u64);
            }
            left -= chunk as u64;
        }
        Ok(())
    }

    /// The next packet, or `None` at the end of the stream.
    pub fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>> {
        let Some((start, len)) = self.header()? else { return Ok(None) };
        self.read_body(len, start)?;
        let number = self.number;
        self.number += 1;
        Ok(Some(RawPacket { offset: start, number, bytes: &self.buf }))
    }

    /// The next packet's offset and checked length, its body not read yet; `None` at the end.
    fn header(&mut self) -> Result<Option<(u64, u64)>> {
        let start = self.offset;
        let Some(tag) = self.varint(start)? else {
            return Ok(None);
        };
        let field = tag >> 3;
        let wire = tag & 7;
        if field != 1 || wire != 2 {
            return Err(self.err(
                    ErrorKind::Malformed,
                    start,
                    format!(
                        "not a Perfetto trace: expected a packet (field 1, length-delimited), found field {field} with wire type {wire}"
                    ),
                ));
        }
        let len = self
            .varint(start)?
            .ok_or_else(|| self.err(ErrorKind::Truncated, start, "stream ends after a packet tag"))?;
        if len > self.max_packet {
            return Err(self.err(
                ErrorKind::LimitExceeded,
                start,
                format!("packet claims {len} bytes, more than the limit of {} bytes", self.max_packet),
            ));
        }
        if let Some(r) = self.remaining {
            if len > r {
                return Err(self.err(
                    ErrorKind::Truncated,
                    start,
                    format!("packet claims {len} bytes but only {r} remain"),
                ));
            }
        }
        Ok(Some((start, len)))
    }
}

impl<'a> PacketReader<&'a [u8]> {
    /// [`PacketReader::next_packet`] of a reader over bytes in memory (made with their length
    /// as its size): the same packets and errors, each packet borrowed from those bytes instead
    /// of copied.
    pub fn next_packet_in_place(&mut self) -> Result<Option<RawPacket<'a>>> {
        let Some((start, len)) = self.header()? else { return Ok(None) };
        let rest: &'a [u8] = self.inner;
        let Some(bytes) = usize::try_from(len).ok().and_then(|n| rest.get(..n)) else {
            // Only without a size (checked in `header` otherwise): as `read_body` fails.
            return Err(self.err(
                ErrorKind::Truncated,
                start,
                format!("stream ends inside a {len}-byte record ({} bytes present)", rest.len()),
            ));
        };
        self.inner = &rest[bytes.len()..];
        self.offset += len;
        if let Some(r) = self.remaining.as_mut() {
            *r = r.saturating_sub(len);
        }
        let number = self.number;
        self.number += 1;
        Ok(Some(RawPacket { offset: start, number, bytes }))
    }
}
