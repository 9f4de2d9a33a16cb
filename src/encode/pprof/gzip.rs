//! gzip at the fastest level with no name and a zero mtime, as Go's pprof writer does.

use super::*;

/// A gzip writer as [`gzip`] uses (fastest level, no name, zero mtime).
pub fn gzip_writer<W: Write>(w: W) -> flate2::write::GzEncoder<W> {
    flate2::GzBuilder::new().mtime(0).write(w, flate2::Compression::fast())
}

/// Gzip-compresses `bytes` at the fastest level, as Go's pprof writer does (`gzip.BestSpeed`);
/// no file name and a zero mtime, so the output is deterministic.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    gzip_slices(&[bytes])
}

/// [`gzip`] of the concatenation of `slices`, as one gzip member.
pub fn gzip_slices(slices: &[&[u8]]) -> Vec<u8> {
    let len: usize = slices.iter().map(|s| s.len()).sum();
    // Room for incompressible input: the pages a smaller output leaves untouched cost nothing.
    let mut out = Vec::with_capacity(len + len / 256 + 256);
    gzip_slices_into(slices, &mut out);
    out
}

/// Appends [`gzip_slices`]`(slices)` to `out`: the bytes of [`gzip_writer`] given each slice in
/// turn, made by a compressor kept per thread (set up once, reset for each member; setting
/// one up clears a few hundred kilobytes).
pub fn gzip_slices_into(slices: &[&[u8]], out: &mut Vec<u8>) {
    use flate2::{Compress, Compression, Crc, FlushCompress, Status};
    thread_local! {
        static DEFLATE: std::cell::RefCell<Option<Compress>> = const { std::cell::RefCell::new(None) };
    }
    // The deflate stream at the fastest level depends on the room each call has for output
    // (zlib-rs closes blocks when it runs out), so the calls are those of flate2's writer:
    // 32 KiB of room each, the input given whole, then `Finish` until the stream ends.
    const ROOM: usize = 32 * 1024;
    // What `GzBuilder::new().mtime(0)` writes at the fastest level: no flags, mtime 0, XFL 4
    // (fastest), OS 255 (unknown).
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
    let mut crc = Crc::new();
    DEFLATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        let c = cell.get_or_insert_with(|| Compress::new(Compression::fast(), false));
        c.reset();
        // One call with ROOM bytes of output; whether the stream ended.
        let mut step = |input: &[u8], flush: FlushCompress| -> (usize, bool) {
            let at = out.len();
            out.resize(at + ROOM, 0);
            let (before_in, before_out) = (c.total_in(), c.total_out());
            let status = c.compress(input, &mut out[at..], flush).expect("deflating into memory");
            out.truncate(at + (c.total_out() - before_out) as usize);
            ((c.total_in() - before_in) as usize, status == Status::StreamEnd)
        };
        for s in slices {
            crc.update(s);
            let mut rest: &[u8] = s;
            while !rest.is_empty() {
                let (took, _) = step(rest, FlushCompress::None);
                rest = &rest[took..];
            }
        }
        while !step(&[], FlushCompress::Finish).1 {}
    });
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
}
