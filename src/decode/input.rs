//! Opening inputs: files (buffered reads), stdin, and whole-file gzip, as one byte stream.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// An opened input: a name for messages and a reader over its (decompressed) bytes.
pub struct Input {
    /// Name used in messages: the path, or `-` for stdin.
    pub name: String,
    /// True when the file was gzip-compressed as a whole (offsets then count decompressed bytes).
    pub gzipped: bool,
    /// Size of the file on disk, when known.
    pub file_size: Option<u64>,
    path: Option<std::path::PathBuf>,
    /// The bytes of an in-memory input, kept so that it can be read again.
    mem: Option<std::sync::Arc<[u8]>>,
    max_expanded: u64,
    reader: Box<dyn Read + Send>,
    /// The ModuleSymbols a pre-pass over this input read, until the decoder takes them.
    prescanned_symbols: Option<crate::decode::perfetto::module_symbols::SymbolPackets>,
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input").field("name", &self.name).field("gzipped", &self.gzipped).finish()
    }
}

/// Reads at most `limit` bytes from an inner reader and then fails, so a decompression bomb
/// cannot make heapconv read forever.
pub(crate) struct CappedReader<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R> CappedReader<R> {
    pub(crate) fn new(inner: R, limit: u64) -> Self {
        CappedReader { inner, left: limit, limit }
    }
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // Probe one byte: exactly `limit` bytes is fine, more is not.
            let mut one = [0u8; 1];
            return match self.inner.read(&mut one)? {
                0 => Ok(0),
                _ => Err(io::Error::other(format!("decompressed size exceeds the limit of {} bytes", self.limit))),
            };
        }
        let n = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let got = self.inner.read(&mut buf[..n])?;
        self.left -= got as u64;
        Ok(got)
    }
}

/// Expands a `compressed_packets` bundle (zlib, or gzip by its magic bytes) of at most
/// `limit` bytes. The buffer grows by doubling but never past `limit`, and fallibly: a bundle
/// that does not fit in memory is a [`ErrorKind::LimitExceeded`] error like one over the limit,
/// never an abort. `at` says where the bundle is (`x.pftrace at byte 10, packet 2`).
pub(crate) fn inflate_bundle(data: &[u8], limit: u64, at: &str) -> Result<Vec<u8>> {
    let inflated: Box<dyn Read> = if data.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(data))
    } else {
        Box::new(flate2::read::ZlibDecoder::new(data))
    };
    let mut r = CappedReader::new(inflated, limit);
    let most = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut buf: Vec<u8> = Vec::new();
    let fail = |kind: ErrorKind, what: String| Error::new(kind, format!("{at}: compressed_packets: {what}"));
    loop {
        if buf.len() == buf.capacity() {
            if buf.len() >= most {
                // Full: one more byte is over the limit (the capped reader says so).
                let mut one = [0u8; 1];
                match r.read(&mut one) {
                    Ok(0) => return Ok(buf),
                    Ok(_) => {
                        return Err(fail(
                            ErrorKind::LimitExceeded,
                            format!("decompressed size exceeds the limit of {limit} bytes"),
                        ));
                    }
                    Err(e) => return Err(bundle_error(e, &fail)),
                }
            }
            let want = buf.capacity().saturating_mul(2).clamp(64 << 10, most.max(1)) - buf.len();
            buf.try_reserve_exact(want).map_err(|_| {
                fail(ErrorKind::LimitExceeded, format!("out of memory after {} bytes (limit {limit} bytes)", buf.len()))
            })?;
        }
        let old = buf.len();
        let room = (buf.capacity() - old).min(64 << 10);
        buf.resize(old + room, 0);
        match r.read(&mut buf[old..]) {
            Ok(0) => {
                buf.truncate(old);
                return Ok(buf);
            }
            Ok(n) => buf.truncate(old + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(old),
            Err(e) => return Err(bundle_error(e, &fail)),
        }
    }
}

fn bundle_error(e: io::Error, fail: &dyn Fn(ErrorKind, String) -> Error) -> Error {
    let kind = if e.to_string().contains("limit") { ErrorKind::LimitExceeded } else { ErrorKind::Malformed };
    fail(kind, e.to_string())
}

impl Input {
    /// Opens `path` (`-` for stdin). Whole-file gzip is detected by its magic bytes and
    /// decompressed on the fly, up to `max_expanded` bytes.
    pub fn open(path: &Path, max_expanded: u64) -> Result<Input> {
        let name = path.display().to_string();
        if name == "-" {
            let stdin = io::stdin();
            return Self::from_reader(name, Box::new(stdin), None, max_expanded, false);
        }
        let file = File::open(path).map_err(|e| Error::io(format!("opening {name}"), e))?;
        let meta = file.metadata().map_err(|e| Error::io(format!("reading {name}"), e))?;
        if meta.is_dir() {
            return Err(Error::new(ErrorKind::Usage, format!("{name} is a directory, not a trace")));
        }
        let size = meta.len();
        // Plain buffered reads: the page cache serves them without mapping the file into our
        // address space, so a large trace does not count against heapconv's resident memory.
        // The file's first bytes are looked at unbuffered: a reader that never reads the
        // stream (one that maps the file) then never fills, and writes, a buffer.
        let mut input = Self::from_reader(name, Box::new(file), Some(size), max_expanded, true)?;
        input.path = Some(path.to_path_buf());
        Ok(input)
    }

    /// Opens the same input again from its start (for a first pass over the input, or a second
    /// decoder); `None` for standard input opened as a stream, which can be read only once.
    pub fn reopen(&self) -> Option<Result<Input>> {
        if let Some(mem) = &self.mem {
            return Some(Self::from_shared(&self.name, std::sync::Arc::clone(mem), self.max_expanded));
        }
        self.path.as_ref().map(|p| Input::open(p, self.max_expanded))
    }

    /// Wraps an in-memory buffer (standard input read whole, tests, library users).
    pub fn from_bytes(name: &str, bytes: Vec<u8>, max_expanded: u64) -> Result<Input> {
        Self::from_shared(name, bytes.into(), max_expanded)
    }

    fn from_shared(name: &str, bytes: std::sync::Arc<[u8]>, max_expanded: u64) -> Result<Input> {
        let size = bytes.len() as u64;
        let reader = Box::new(io::Cursor::new(std::sync::Arc::clone(&bytes)));
        let mut input = Self::from_reader(name.to_owned(), reader, Some(size), max_expanded, false)?;
        input.mem = Some(bytes);
        Ok(input)
    }

    fn from_reader(
        name: String,
        reader: Box<dyn Read + Send>,
        file_size: Option<u64>,
        max_expanded: u64,
        buffered: bool,
    ) -> Result<Input> {
        let mut peek = PeekReader::new(reader);
        let head = peek.peek(2).map_err(|e| Error::io(format!("reading {name}"), e))?;
        let gzipped = head == [0x1f, 0x8b];
        let zstd = head == [0x28, 0xb5];
        if zstd {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("{name}: zstd-compressed traces are not supported; decompress with `zstd -d` first"),
            ));
        }
        let reader: Box<dyn Read + Send> = if gzipped {
            let gz = flate2::read::MultiGzDecoder::new(io::BufReader::with_capacity(1 << 20, peek));
            Box::new(CappedReader::new(gz, max_expanded))
        } else if buffered {
            Box::new(io::BufReader::with_capacity(1 << 20, peek))
        } else {
            Box::new(peek)
        };
        Ok(Input { name, gzipped, file_size, path: None, mem: None, max_expanded, reader, prescanned_symbols: None })
    }

    /// Hands the decoder of this input the ModuleSymbols packets a pre-pass read from it
    /// ([`crate::decode::perfetto::prepass`]), so that it does not read the input again for them.
    pub fn set_prescanned_symbols(&mut self, symbols: crate::decode::perfetto::module_symbols::SymbolPackets) {
        self.prescanned_symbols = Some(symbols);
    }

    /// The ModuleSymbols a pre-pass read from this input, taken (see
    /// [`Input::set_prescanned_symbols`]); `None` when none was run.
    pub fn take_prescanned_symbols(&mut self) -> Option<crate::decode::perfetto::module_symbols::SymbolPackets> {
        self.prescanned_symbols.take()
    }

    /// Where the input's bytes can be read again at will, without decompressing: the file of a
    /// plain (not gzipped) input opened by path, or the bytes of an in-memory input.
    pub(crate) fn at_rest(&self) -> Option<AtRest<'_>> {
        if self.gzipped {
            return None;
        }
        if let Some(mem) = &self.mem {
            return Some(AtRest::Memory(mem));
        }
        self.path.as_deref().map(AtRest::File)
    }

    /// The byte stream (decompressed when the file was gzip).
    pub fn reader(&mut self) -> &mut (dyn Read + Send) {
        &mut *self.reader
    }
}

/// An input's bytes at rest (see [`Input::at_rest`]).
pub(crate) enum AtRest<'a> {
    /// A plain file.
    File(&'a Path),
    /// An in-memory input.
    Memory(&'a [u8]),
}

/// A reader that can look at its first bytes without consuming them.
struct PeekReader {
    inner: Box<dyn Read + Send>,
    head: Vec<u8>,
    pos: usize,
}

impl PeekReader {
    fn new(inner: Box<dyn Read + Send>) -> Self {
        PeekReader { inner, head: Vec::new(), pos: 0 }
    }

    fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        while self.head.len() < n {
            let mut buf = [0u8; 16];
            let want = n - self.head.len();
            let got = self.inner.read(&mut buf[..want])?;
            if got == 0 {
                break;
            }
            self.head.extend_from_slice(&buf[..got]);
        }
        Ok(&self.head)
    }
}

impl Read for PeekReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.head.len() {
            let n = (self.head.len() - self.pos).min(buf.len());
            buf[..n].copy_from_slice(&self.head[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

/// The kind of input a file holds, from its first 4 KiB (after undoing gzip), as
/// [`super::sniff`] tells them apart. A Perfetto trace's only signature is its first
/// byte (`0x0a`, packet field 1), so the head must also be shaped like a run of packets
/// (every top-level field inside the head is field 1, length-delimited); a text file starting
/// with a newline is then almost always `Unknown`. A head that is all printable text is
/// `Unknown` (every other format heapconv reads is binary) unless it is a legacy text heap
/// profile, and so is a DDM blob recognised by its
/// loose header shape whose string-table offset lies past the end of the file.
pub fn sniff_file(path: &Path) -> std::io::Result<super::InputKind> {
    const HEAD: u64 = 4096;
    let mut f = std::fs::File::open(path)?;
    let size = f.metadata()?.len();
    let mut raw = Vec::with_capacity(HEAD as usize);
    (&mut f).take(HEAD).read_to_end(&mut raw)?;
    let head = if raw.starts_with(&[0x1f, 0x8b]) {
        let file = std::fs::File::open(path)?;
        let mut head = Vec::new();
        // A damaged gzip stream still says what it starts with.
        let _ = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file)).take(HEAD).read_to_end(&mut head);
        head
    } else {
        raw.clone()
    };
    let kind = super::sniff(&head);
    // Every format heapconv reads is binary; the looser signatures (a DDM blob's header is
    // three small lengths) would otherwise take scripts and notes.
    let text = head.iter().all(|&b| matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7e));
    if !head.is_empty() && text && kind != super::InputKind::LegacyHeap {
        return Ok(super::InputKind::Unknown);
    }
    if kind == super::InputKind::PerfettoTrace && !packets_shaped(&head) {
        return Ok(super::InputKind::Unknown);
    }
    if kind == super::InputKind::DdmAllocBlob && !raw.starts_with(&[0x1f, 0x8b]) && head.len() >= 9 {
        // The header's string-table offset lies inside the file.
        let offset = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
        if u64::from(offset) > size {
            return Ok(super::InputKind::Unknown);
        }
    }
    Ok(kind)
}

/// True when `head` reads as top-level trace fields: `0x0a`, a length, that many bytes, and
/// again, up to the end of the head (a packet may run past it; a damaged end is allowed).
fn packets_shaped(head: &[u8]) -> bool {
    let mut pos = 0usize;
    while pos < head.len() {
        if head[pos] != 0x0a {
            return false;
        }
        pos += 1;
        let mut len = 0u64;
        let mut shift = 0u32;
        loop {
            let Some(&b) = head.get(pos) else { return true };
            pos += 1;
            if shift > 63 {
                return false;
            }
            len |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        pos = pos.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
    }
    true
}

#[cfg(test)]
mod sniff_tests {
    use super::*;

    #[test]
    fn packet_shape_rejects_text() {
        assert!(packets_shaped(&[0x0a, 0x02, 0x08, 0x01, 0x0a, 0x00]));
        assert!(packets_shaped(&[0x0a, 0x80]), "a damaged end is still a trace");
        // A newline, then `#` read as a length (35): the byte after those 35 is no packet tag.
        let text = b"\n# heapconv captures of the nightly run\n";
        assert!(!packets_shaped(text));
    }
}
