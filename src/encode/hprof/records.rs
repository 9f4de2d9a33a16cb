//! Records on their way out: byte counting, ids and u4s, top-level records, and heap-dump
//! segments cut at the size limit.

use super::*;

/// Counts bytes on their way out.
pub(super) struct Counting<'a> {
    pub(super) inner: &'a mut dyn Write,
    pub(super) bytes: u64,
}

impl Counting<'_> {
    pub(super) fn put(&mut self, b: &[u8]) -> Result<()> {
        self.inner.write_all(b).map_err(|e| Error::io("writing the hprof file", e))?;
        self.bytes += b.len() as u64;
        Ok(())
    }
}

pub(super) fn put_id(buf: &mut Vec<u8>, v: u64, id_size: u8) {
    if id_size == 4 {
        buf.extend_from_slice(&(v as u32).to_be_bytes());
    } else {
        buf.extend_from_slice(&v.to_be_bytes());
    }
}

pub(super) fn put_u4(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_be_bytes());
}

pub(super) fn record(out: &mut Counting<'_>, tag: u8, body: &[u8]) -> Result<()> {
    let len = u32::try_from(body.len())
        .map_err(|_| Error::new(ErrorKind::Unsupported, "an hprof record would exceed 4 GiB"))?;
    let mut head = [0u8; 9];
    head[0] = tag;
    head[5..9].copy_from_slice(&len.to_be_bytes());
    out.put(&head)?;
    out.put(body)
}

/// Heap-dump segments being filled.
pub(super) struct Segments<'a, 'b> {
    pub(super) out: &'a mut Counting<'b>,
    pub(super) buf: Vec<u8>,
    pub(super) limit: usize,
    pub(super) android: bool,
    pub(super) id_size: u8,
    /// Android heap id in force (0 at every segment start).
    pub(super) heap: u32,
    pub(super) heap_names: HashMap<u32, u64>,
    pub(super) summary: &'a mut HprofSummary,
}

impl Segments<'_, '_> {
    pub(super) fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            record(self.out, TAG_HEAP_DUMP_SEGMENT, &self.buf)?;
            self.summary.segments += 1;
            self.buf.clear();
        }
        self.heap = 0;
        Ok(())
    }

    fn info_len(&self) -> usize {
        1 + 4 + self.id_size as usize
    }

    fn put_info(buf: &mut Vec<u8>, heap: u32, name: u64, id_size: u8) {
        buf.push(SUB_HEAP_DUMP_INFO);
        put_u4(buf, heap);
        put_id(buf, name, id_size);
    }

    /// Makes room for a sub-record of `size` bytes on Android heap `heap` and switches heaps
    /// if needed; returns the buffer to append it to.
    pub(super) fn begin(&mut self, heap: u32, size: usize) -> Result<&mut Vec<u8>> {
        let info = if self.android && heap != self.heap { self.info_len() } else { 0 };
        if !self.buf.is_empty() && self.buf.len() + info + size > self.limit {
            self.flush()?;
        }
        if self.android && heap != self.heap {
            Self::put_info(&mut self.buf, heap, self.heap_names[&heap], self.id_size);
            self.summary.heap_infos += 1;
            self.heap = heap;
        }
        Ok(&mut self.buf)
    }

    /// Writes a primitive array too large for the segment buffer as a segment of its own,
    /// streaming its zero elements.
    pub(super) fn big_array(&mut self, heap: u32, head: &[u8], data_len: u64) -> Result<()> {
        self.flush()?;
        let info = if self.android && heap != 0 { self.info_len() } else { 0 };
        let body = info as u64 + head.len() as u64 + data_len;
        let len = u32::try_from(body).map_err(|_| {
            Error::new(
                ErrorKind::Unsupported,
                format!("a primitive array of {data_len} bytes does not fit an hprof record"),
            )
        })?;
        let mut pre = Vec::with_capacity(9 + info + head.len());
        pre.push(TAG_HEAP_DUMP_SEGMENT);
        put_u4(&mut pre, 0);
        put_u4(&mut pre, len);
        if info > 0 {
            Self::put_info(&mut pre, heap, self.heap_names[&heap], self.id_size);
            self.summary.heap_infos += 1;
        }
        pre.extend_from_slice(head);
        self.out.put(&pre)?;
        let zeros = [0u8; 8192];
        let mut left = data_len;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            self.out.put(&zeros[..n])?;
            left -= n as u64;
        }
        self.summary.segments += 1;
        self.heap = 0;
        Ok(())
    }
}
