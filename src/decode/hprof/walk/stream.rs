//! [`HprofStream`]: top-level records and heap-dump sub-records from any reader, one buffer.

use super::*;

/// Where the stream is inside the current top-level record.
#[derive(Clone, Copy, Debug)]
pub(super) struct Current {
    header: RecordHeader,
    /// Body bytes not consumed yet.
    left: u64,
    /// Elements of a large primitive array not consumed yet (counted in `left` too).
    pending: u64,
}

/// A streaming hprof reader over any [`Read`]: header, records, sub-records (see the module
/// documentation).
pub struct HprofStream<R> {
    r: R,
    name: String,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    header: FileHeader,
    cur: Option<Current>,
}

impl<R> std::fmt::Debug for HprofStream<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HprofStream").field("name", &self.name).field("offset", &(self.base + self.pos as u64)).finish()
    }
}

pub(super) const CHUNK: usize = 1 << 20;

impl<R: Read> HprofStream<R> {
    /// Reads the file header. `name` names the input in messages.
    pub fn new(r: R, name: &str) -> Result<Self> {
        let mut s = HprofStream {
            r,
            name: name.to_owned(),
            buf: vec![0; 64 << 10],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            header: FileHeader { format: String::new(), id_size: 0, timestamp_ms: 0, len: 0 },
            cur: None,
        };
        s.header = s.read_header()?;
        Ok(s)
    }

    fn read_header(&mut self) -> Result<FileHeader> {
        let name = self.name.clone();
        self.fill(MAX_FORMAT_LEN + 13).map_err(|e| Error::io(format!("reading {name}"), e))?;
        let avail = &self.buf[..self.end];
        if avail.is_empty() {
            return Err(Error::new(ErrorKind::Truncated, format!("{name}: empty file, not an HPROF heap dump")));
        }
        let Some(nul) = avail.iter().take(MAX_FORMAT_LEN + 1).position(|&b| b == 0) else {
            let shown = String::from_utf8_lossy(&avail[..avail.len().min(24)]).into_owned();
            let prefix = b"JAVA PROFILE ".starts_with(avail) || avail.starts_with(b"JAVA PROFILE ");
            return Err(if prefix && avail.len() <= MAX_FORMAT_LEN {
                Error::new(ErrorKind::Truncated, format!("{name}: HPROF header string {shown:?} ends without its NUL"))
            } else {
                Error::new(ErrorKind::Malformed, format!("{name}: not an HPROF heap dump (it starts {shown:?})"))
            });
        };
        let format = String::from_utf8_lossy(&avail[..nul]).into_owned();
        if !format.starts_with("JAVA PROFILE ") {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!("{name}: not an HPROF heap dump (it starts {format:?})"),
            ));
        }
        if !matches!(
            format.as_str(),
            "JAVA PROFILE 1.0" | "JAVA PROFILE 1.0.1" | "JAVA PROFILE 1.0.2" | "JAVA PROFILE 1.0.3"
        ) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("{name}: HPROF format {format:?} is not one heapconv reads (1.0.1, 1.0.2, 1.0.3)"),
            ));
        }
        let at = nul + 1;
        if avail.len() < at + 12 {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!(
                    "{name}: HPROF header ends at byte {}: the identifier size and timestamp need 12 bytes from byte {at}",
                    avail.len()
                ),
            ));
        }
        let id_size = be32(&avail[at..]);
        if id_size != 4 && id_size != 8 {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("{name}: identifier size {id_size} at byte {at}: heapconv reads identifiers of 4 and 8 bytes"),
            ));
        }
        let timestamp_ms = u64::from_be_bytes(avail[at + 4..at + 12].try_into().expect("8 bytes"));
        self.pos = at + 12;
        Ok(FileHeader { format, id_size: id_size as u8, timestamp_ms, len: (at + 12) as u64 })
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The name given to [`HprofStream::new`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Byte offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The record the stream is in, if any.
    pub fn current(&self) -> Option<RecordHeader> {
        self.cur.map(|c| c.header)
    }

    /// Bytes of the current record's body not consumed yet.
    pub fn record_left(&self) -> u64 {
        self.cur.map(|c| c.left).unwrap_or(0)
    }

    /// Makes at least `n` unread bytes available in `buf[pos..end]`; false if the input ends
    /// first. The buffer grows only while it is full of bytes that arrived.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        if self.end - self.pos >= n {
            return Ok(true);
        }
        if self.pos > 0 && (self.buf.len() - self.pos < n || self.end == self.buf.len()) {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        while self.end - self.pos < n {
            if self.eof {
                return Ok(false);
            }
            if self.end == self.buf.len() {
                let want = (self.buf.len() * 2).clamp(CHUNK, self.buf.len() + (64 << 20));
                self.buf.resize(want, 0);
            }
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Consumes up to `n` bytes, handing each piece to `sink`; returns how many there were.
    fn pass<F: FnMut(&[u8]) -> io::Result<()>>(&mut self, mut n: u64, mut sink: F) -> io::Result<u64> {
        let mut done = 0u64;
        while n > 0 {
            if self.pos == self.end {
                self.base += self.end as u64;
                self.pos = 0;
                self.end = 0;
                if self.eof {
                    break;
                }
                match self.r.read(&mut self.buf[..]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(k) => self.end = k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
            let k = ((self.end - self.pos) as u64).min(n) as usize;
            sink(&self.buf[self.pos..self.pos + k])?;
            self.pos += k;
            n -= k as u64;
            done += k as u64;
        }
        Ok(done)
    }

    fn io_err(&self, e: io::Error) -> Error {
        Error::io(format!("reading {} at byte {}", self.name, self.offset()), e)
    }

    fn truncated(&self, what: &str, need_until: u64) -> Error {
        Error::new(
            ErrorKind::Truncated,
            format!(
                "{}: the file ends at byte {}, inside {what}, which needs bytes up to {need_until}",
                self.name,
                self.base + self.end as u64
            ),
        )
    }

    /// Consumes what is left of the current record (failing if the file ends first).
    fn finish_record(&mut self) -> Result<()> {
        if let Some(c) = self.cur.take() {
            if c.left > 0 {
                let got = self.pass(c.left, |_| Ok(())).map_err(|e| self.io_err(e))?;
                if got < c.left {
                    let end = c.header.offset + 9 + u64::from(c.header.length);
                    return Err(self.truncated(&c.header.describe(), end));
                }
            }
        }
        Ok(())
    }

    /// Moves to the next top-level record, skipping the rest of the current one; `None` at
    /// the end of the file.
    pub fn next_record(&mut self) -> Result<Option<RecordHeader>> {
        self.finish_record()?;
        if !self.fill(1).map_err(|e| self.io_err(e))? {
            return Ok(None);
        }
        let offset = self.offset();
        if !self.fill(9).map_err(|e| self.io_err(e))? {
            let t = self.buf[self.pos];
            return Err(Error::new(
                ErrorKind::Truncated,
                format!(
                    "{}: the file ends at byte {} inside the 9-byte header of record 0x{t:02X} {} at byte {offset}",
                    self.name,
                    self.base + self.end as u64,
                    record_name(t)
                ),
            ));
        }
        let b = &self.buf[self.pos..self.pos + 9];
        let header = RecordHeader { tag: b[0], time: be32(&b[1..]), length: be32(&b[5..]), offset };
        self.pos += 9;
        self.cur = Some(Current { header, left: u64::from(header.length), pending: 0 });
        Ok(Some(header))
    }

    /// The whole body of the current record (call it right after [`HprofStream::next_record`];
    /// later, what is left of it).
    pub fn body(&mut self) -> Result<&[u8]> {
        let Some(c) = self.cur else { return Ok(&[]) };
        let n = usize::try_from(c.left).unwrap_or(usize::MAX);
        if !self.fill(n).map_err(|e| self.io_err(e))? {
            let end = c.header.offset + 9 + u64::from(c.header.length);
            return Err(self.truncated(&c.header.describe(), end));
        }
        let at = self.pos;
        self.pos += n;
        self.cur = Some(Current { left: 0, ..c });
        Ok(&self.buf[at..at + n])
    }

    /// Copies what is left of the current record's body to `w` without buffering it whole.
    pub fn copy_body<W: Write + ?Sized>(&mut self, w: &mut W) -> Result<()> {
        let Some(c) = self.cur else { return Ok(()) };
        let mut werr = None;
        let got = self
            .pass(c.left, |b| w.write_all(b).inspect_err(|e| werr = Some(io::Error::new(e.kind(), e.to_string()))))
            .map_err(|e| self.io_err(e));
        if let Some(e) = werr {
            return Err(Error::io("writing the output", e));
        }
        let got = got?;
        self.cur = Some(Current { left: c.left - got, pending: 0, ..c });
        if got < c.left {
            let end = c.header.offset + 9 + u64::from(c.header.length);
            return Err(self.truncated(&c.header.describe(), end));
        }
        Ok(())
    }

    /// Copies the elements of the large primitive array [`HprofStream::next_sub`] just returned
    /// with `data: None` to `w`. Without this call, the next `next_sub` skips them.
    pub fn copy_payload<W: Write + ?Sized>(&mut self, w: &mut W) -> Result<()> {
        let Some(c) = self.cur else { return Ok(()) };
        if c.pending == 0 {
            return Ok(());
        }
        let mut werr = None;
        let got = self
            .pass(c.pending, |b| w.write_all(b).inspect_err(|e| werr = Some(io::Error::new(e.kind(), e.to_string()))))
            .map_err(|e| self.io_err(e));
        if let Some(e) = werr {
            return Err(Error::io("writing the output", e));
        }
        let got = got?;
        self.cur = Some(Current { left: c.left - got, pending: c.pending - got, ..c });
        if got < c.pending {
            let end = self.offset() + (c.pending - got);
            return Err(self.truncated(&format!("the elements of a primitive array in {}", c.header.describe()), end));
        }
        Ok(())
    }

    /// The next sub-record of the current `HEAP_DUMP` or `HEAP_DUMP_SEGMENT` record; `None` at
    /// the end of its body (or when the current record is not a heap dump).
    pub fn next_sub(&mut self) -> Result<Option<Sub<'_>>> {
        let Some(c) = self.cur else { return Ok(None) };
        if !c.header.is_heap_dump() {
            return Ok(None);
        }
        if c.pending > 0 {
            let got = self.pass(c.pending, |_| Ok(())).map_err(|e| self.io_err(e))?;
            self.cur = Some(Current { left: c.left - got, pending: c.pending - got, ..c });
            if got < c.pending {
                let end = self.offset() + (c.pending - got);
                return Err(
                    self.truncated(&format!("the elements of a primitive array in {}", c.header.describe()), end)
                );
            }
        }
        let c = self.cur.expect("in a record");
        if c.left == 0 {
            return Ok(None);
        }
        let id_size = self.header.id_size;
        let offset = self.offset();
        let rec_end = offset + c.left;
        let within = || format!("{} (whose body ends at byte {rec_end})", c.header.describe());
        let of_record = || format!("of {}", c.header.describe());
        let (header, payload) = loop {
            match sub_len(&self.buf[self.pos..self.end], id_size) {
                Ok(SubLen::Known { header, payload }) => break (header, payload),
                Ok(SubLen::Need(n)) => {
                    let t = (self.pos < self.end).then(|| self.buf[self.pos]);
                    if n > c.left {
                        return Err(self.overrun(t.unwrap_or(0), offset, n, &within()));
                    }
                    if !self.fill(n as usize).map_err(|e| self.io_err(e))? {
                        let what = match (self.pos < self.end).then(|| self.buf[self.pos]) {
                            Some(t) => {
                                format!("sub-record 0x{t:02X} {} at byte {offset} {}", sub_record_name(t), of_record())
                            }
                            None => c.header.describe(),
                        };
                        return Err(self.truncated(&what, if t.is_some() { offset + n } else { rec_end }));
                    }
                }
                Err(SubLenError::UnknownTag(t)) => {
                    return Err(Error::new(
                        ErrorKind::Malformed,
                        format!(
                            "{}: unknown heap-dump sub-record tag 0x{t:02X} at byte {offset} in {}",
                            self.name,
                            within()
                        ),
                    ));
                }
                Err(SubLenError::BadType { code, at }) => {
                    let t = self.buf[self.pos];
                    return Err(Error::new(
                        ErrorKind::Malformed,
                        format!(
                            "{}: sub-record 0x{t:02X} {} at byte {offset} in {}: {code} at byte {} is not an hprof basic type",
                            self.name,
                            sub_record_name(t),
                            within(),
                            offset + at
                        ),
                    ));
                }
            }
        };
        let t = self.buf[self.pos];
        let total = 1 + header + payload;
        if total > c.left {
            return Err(self.overrun(t, offset, total, &within()));
        }
        let stream = payload > STREAM_PAYLOAD && t == sub::PRIMITIVE_ARRAY_DUMP;
        let here = if stream { 1 + header } else { total };
        if !self.fill(here as usize).map_err(|e| self.io_err(e))? {
            return Err(self.truncated(
                &format!("sub-record 0x{t:02X} {} at byte {offset} {}", sub_record_name(t), of_record()),
                offset + total,
            ));
        }
        let at = self.pos;
        self.pos += here as usize;
        self.cur = Some(Current { left: c.left - here, pending: if stream { payload } else { 0 }, ..c });
        let raw = &self.buf[at..at + here as usize];
        let record = parse_sub(raw, id_size, !stream);
        Ok(Some(Sub { tag: t, offset, len: total, raw, record }))
    }

    fn overrun(&self, t: u8, offset: u64, n: u64, within: &str) -> Error {
        Error::new(
            ErrorKind::Malformed,
            format!(
                "{}: sub-record 0x{t:02X} {} at byte {offset} needs {n} bytes, past the end of {within}",
                self.name,
                sub_record_name(t)
            ),
        )
    }
}
