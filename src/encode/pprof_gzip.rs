//! gzip-compressed pprof, made fast: the compression runs beside the encoding.

use std::io::Write;
use std::sync::{Mutex, mpsc};

use rayon::prelude::*;

use super::pprof::{
    FLAT_SAMPLES_PER_PART, PprofEncoder, PprofOptions, encode_flat_parts, encode_flat_parts_with, gzip, gzip_writer,
};
use crate::model::{FlatProfile, Profile};

/// Encodes a profile as gzipped pprof, the same bytes as `gzip(&encode_pprof(..))`, with the
/// compression on a second thread taking the encoded bytes a megabyte at a time.
pub fn encode_pprof_gzip(profile: &Profile, opts: &PprofOptions) -> Vec<u8> {
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(4);
    std::thread::scope(|threads| {
        let compressor = threads.spawn(move || {
            let mut gz = gzip_writer(Vec::with_capacity(1 << 20));
            for bytes in rx {
                gz.write_all(&bytes).expect("writing to memory");
            }
            gz.finish().expect("writing to memory")
        });
        let mut w = MegabyteSender::new(&tx, |chunk| chunk);
        PprofEncoder::new(opts.clone())
            .encode_to(profile, &mut w)
            .and_then(|_| w.flush())
            .expect("the compressor takes every chunk");
        drop(tx);
        compressor.join().expect("the compressor does not panic")
    })
}
/// Encodes a profile with frame lists as gzipped pprof. A small profile (at most twice
/// [`FLAT_SAMPLES_PER_PART`] samples) is one gzip member (the bytes of
/// `gzip(&encode_pprof_flat(..))`); a large one is written as gzip members one after the other,
/// which every gzip reader (Go's, Python's, zlib's, heapconv's) reads as one stream: see
/// [`encode_flat_pprof_gzip_to`].
pub fn encode_flat_pprof_gzip(profile: &FlatProfile, opts: &PprofOptions) -> Vec<u8> {
    let mut out = Vec::new();
    encode_flat_pprof_gzip_to(profile, opts, &mut out).expect("writing to memory");
    out
}
/// [`encode_flat_pprof_gzip`] into `w`, member by member as they are ready. A large profile
/// has one member per part of [`encode_flat_parts`], each compressed by [`gzip_member_into`]
/// in parallel by the task that encoded it, a part over 1 MiB cut into 1 MiB pieces; members are written in order as soon
/// as those before them are, while the others are still being encoded, so neither the whole
/// encoding nor the whole output is held at once. The members are cut at fixed places, so
/// the bytes do not depend on the number of threads.
pub fn encode_flat_pprof_gzip_to(
    profile: &FlatProfile,
    opts: &PprofOptions,
    w: &mut (dyn Write + Send),
) -> std::io::Result<()> {
    if profile.sample_count() <= 2 * FLAT_SAMPLES_PER_PART {
        return w.write_all(&gzip(&encode_flat_parts(profile, opts).concat()));
    }
    const PIECE: usize = GZIP_PIECE;
    let out = OrderedWriter::new(w);
    encode_flat_parts_with(profile, opts, &|index, part| {
        let member = if part.len() <= PIECE {
            let mut member = Vec::with_capacity(part.len() / 2 + 1024);
            gzip_member_into(&part, &mut member);
            member
        } else {
            let pieces: Vec<Vec<u8>> = part
                .par_chunks(PIECE)
                .map(|piece| {
                    let mut member = Vec::with_capacity(piece.len() / 2 + 1024);
                    gzip_member_into(piece, &mut member);
                    member
                })
                .collect();
            pieces.concat()
        };
        drop(part);
        out.put(index, member);
        Vec::new()
    });
    out.finish()
}
/// Uncompressed bytes per gzip member of [`ParallelGzWriter`] (and of a merge's last part).
pub const GZIP_PIECE: usize = 1 << 20;

/// A gzip writer that compresses on every core: the bytes written to it are cut into pieces of
/// [`GZIP_PIECE`] bytes at fixed offsets, each compressed as its own gzip member by
/// [`gzip_member_into`] (libdeflate, or igzip with the `isal` feature, at level 1, no name, zero mtime) by a task of the
/// rayon pool, and the members are written to `out` in order. Every gzip reader (Go's,
/// Python's, zlib's, heapconv's) reads the members as one stream. The pieces are cut at fixed
/// places and a member depends only on its piece, so the bytes do not depend on the number of
/// threads; output of at most one piece is one member.
///
/// The piece and member buffers are reused, within one output and, through
/// [`ParallelGzWriter::with_buffers`] and [`ParallelGzWriter::finish_keeping`], from one output
/// to the next: fresh megabyte buffers are fresh pages for the kernel to map and zero.
pub struct ParallelGzWriter<W: Write> {
    out: W,
    piece: Vec<u8>,
    /// Members being compressed, in order: the piece and a member buffer until a task takes
    /// them, and the task's answer (the member and the emptied piece buffer).
    pending: std::collections::VecDeque<(PieceSlot, mpsc::Receiver<Buffers>)>,
    /// How many pieces may be in flight (bounds the memory: two buffers of a piece each).
    limit: usize,
    /// Whether any member was started.
    started: bool,
    spare: GzBuffers,
}

/// Empty piece and member buffers that a [`ParallelGzWriter`] reuses.
#[derive(Debug, Default)]
pub struct GzBuffers {
    pieces: Vec<Vec<u8>>,
    members: Vec<Vec<u8>>,
}

/// Room a member buffer gets: a piece that does not compress still fits.
const MEMBER_ROOM: usize = GZIP_PIECE + GZIP_PIECE / 256 + 256;

/// The gzip header of every member: that of [`gzip_writer`] (no flags, mtime 0, XFL 4
/// "fastest", OS 255), so only the deflate data differs from [`gzip`]'s.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255];

/// Appends one gzip member holding `bytes` (less than 4 GiB) to `out`: the one compressor of
/// `profile`'s and `merge`'s gzip members. By default libdeflate at level 1
/// (`libdeflate_member_into`); built with the opt-in `isal` feature, ISA-L's igzip at level 1.
/// The header is `GZIP_HEADER` (that of [`gzip_writer`]) either way, and the decompressed bytes
/// are the same.
///
/// libdeflate was chosen over zlib-rs by measurement on `profile`'s and `merge`'s outputs: the
/// same CPU per megabyte, 18-21% fewer bytes (`benches/gzip-backends/README.md`). Its output
/// depends on the input and the level alone. igzip takes 2.0-2.4x less CPU than libdeflate for
/// 4% more bytes, but its build needs nasm and autotools; its output depends on the input,
/// the level and the code ISA-L picks for the CPU: at level 1 every x86-64 variant from SSE4.2
/// on (SSE4.2, AVX, AVX2, AVX-512) writes the same bytes, while x86-64 CPUs without SSE4.2
/// (before 2008) and other architectures write other (equally valid) deflate data.
pub fn gzip_member_into(bytes: &[u8], out: &mut Vec<u8>) {
    #[cfg(feature = "isal")]
    isal_member_into(bytes, out);
    #[cfg(not(feature = "isal"))]
    libdeflate_member_into(bytes, out);
}

/// [`gzip_member_into`] by libdeflate at level 1 (its fastest that still looks for matches),
/// with a compressor kept per thread. Also the reference the `isal` build's test compares with.
#[cfg_attr(feature = "isal", allow(dead_code))]
fn libdeflate_member_into(bytes: &[u8], out: &mut Vec<u8>) {
    use libdeflater::{CompressionLvl, Compressor};
    thread_local! {
        static DEFLATE: std::cell::RefCell<Option<Compressor>> = const { std::cell::RefCell::new(None) };
    }
    DEFLATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        // Level 1 (`CompressionLvl::fastest()` is level 0: stored, not compressed).
        let c = cell.get_or_insert_with(|| Compressor::new(CompressionLvl::new(1).expect("a valid level")));
        let at = out.len();
        out.resize(at + c.gzip_compress_bound(bytes.len()), 0);
        // libdeflate writes its own header (XFL 4 at level 1, OS 255 as ours): replaced by
        // `GZIP_HEADER`, so both backends begin alike.
        let n = c.gzip_compress(bytes, &mut out[at..]).expect("the bound leaves room for any input");
        out[at..at + GZIP_HEADER.len()].copy_from_slice(&GZIP_HEADER);
        out.truncate(at + n);
    });
}

/// [`gzip_member_into`] by ISA-L's igzip at level 1, stateless (the whole input in one call),
/// with the stream and level buffer kept per thread. The deflate data and the trailer (CRC-32,
/// length) are igzip's; the header is [`GZIP_HEADER`].
#[cfg(feature = "isal")]
fn isal_member_into(bytes: &[u8], out: &mut Vec<u8>) {
    use isal_sys::igzip_lib as isal;
    struct Igzip {
        stream: Box<std::mem::MaybeUninit<isal::isal_zstream>>,
        level_buf: Vec<u8>,
    }
    thread_local! {
        static IGZIP: std::cell::RefCell<Option<Igzip>> = const { std::cell::RefCell::new(None) };
    }
    let len = u32::try_from(bytes.len()).expect("a gzip member holds less than 4 GiB");
    // Room for stored blocks (5 bytes per 64 KiB), which igzip falls back to when the data
    // does not compress, and the trailer: with this much room the output never depends on it.
    let room = bytes.len() + bytes.len() / 4096 + 64;
    out.extend_from_slice(&GZIP_HEADER);
    out.reserve(room);
    IGZIP.with(|cell| {
        let mut cell = cell.borrow_mut();
        let z = cell.get_or_insert_with(|| Igzip {
            stream: Box::new(std::mem::MaybeUninit::zeroed()),
            level_buf: vec![0; isal::ISAL_DEF_LVL1_DEFAULT as usize],
        });
        let at = out.len();
        // SAFETY: the stream is zeroed memory (a valid `isal_zstream`: integers and null
        // pointers) set up by `isal_deflate_stateless_init`; its pointers then point into
        // `bytes` (read only), `level_buf` and the reserved spare capacity of `out`, whose
        // lengths are given, all alive during the call; igzip writes at most `avail_out` bytes,
        // and `total_out` of them are initialized when it returns `COMP_OK`.
        unsafe {
            let s = z.stream.as_mut_ptr();
            isal::isal_deflate_stateless_init(s);
            (*s).level = 1;
            (*s).level_buf = z.level_buf.as_mut_ptr();
            (*s).level_buf_size = isal::ISAL_DEF_LVL1_DEFAULT;
            (*s).gzip_flag = isal::IGZIP_GZIP_NO_HDR as u16;
            (*s).end_of_stream = 1;
            (*s).flush = isal::NO_FLUSH as u16;
            (*s).next_in = bytes.as_ptr().cast_mut();
            (*s).avail_in = len;
            (*s).next_out = out.as_mut_ptr().add(at);
            (*s).avail_out = u32::try_from(room).expect("a gzip member holds less than 4 GiB");
            let rc = isal::isal_deflate_stateless(s);
            assert_eq!(rc, isal::COMP_OK as i32, "igzip failed on {} bytes", bytes.len());
            let n = (*s).total_out as usize;
            assert!(n <= room, "igzip wrote past its room");
            out.set_len(at + n);
        }
    });
}

impl<W: Write> ParallelGzWriter<W> {
    /// A writer compressing into `out`.
    pub fn new(out: W) -> Self {
        Self::with_buffers(out, GzBuffers::default())
    }

    /// A writer compressing into `out` with the buffers another one left
    /// ([`ParallelGzWriter::finish_keeping`]).
    pub fn with_buffers(out: W, spare: GzBuffers) -> Self {
        ParallelGzWriter {
            out,
            piece: Vec::new(),
            pending: std::collections::VecDeque::new(),
            limit: 2 * rayon::current_num_threads().max(1),
            started: false,
            spare,
        }
    }

    fn send_piece(&mut self) -> std::io::Result<()> {
        let member = self.spare.members.pop().unwrap_or_else(|| Vec::with_capacity(MEMBER_ROOM));
        let slot: PieceSlot = std::sync::Arc::new(Mutex::new(Some((std::mem::take(&mut self.piece), member))));
        let (tx, rx) = mpsc::sync_channel(1);
        let task_slot = std::sync::Arc::clone(&slot);
        rayon::spawn(move || {
            let work = task_slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some((piece, mut member)) = work {
                gzip_member_into(&piece, &mut member);
                let _ = tx.send((member, piece));
            }
        });
        self.pending.push_back((slot, rx));
        self.started = true;
        while self.pending.len() > self.limit {
            self.write_front()?;
        }
        Ok(())
    }

    fn write_front(&mut self) -> std::io::Result<()> {
        if let Some((slot, rx)) = self.pending.pop_front() {
            // A piece no task has started yet is compressed here: the pool may be busy with
            // the very work that waits on this writer (a batch of profiles), so waiting for
            // it could wait forever.
            let mine = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            let (mut member, mut piece) = match mine {
                Some((piece, mut member)) => {
                    gzip_member_into(&piece, &mut member);
                    (member, piece)
                }
                None => rx.recv().map_err(|_| std::io::Error::other("a gzip task stopped"))?,
            };
            self.out.write_all(&member)?;
            member.clear();
            piece.clear();
            self.spare.members.push(member);
            self.spare.pieces.push(piece);
        }
        Ok(())
    }

    /// Compresses what is left and writes every member; gives back `out`.
    pub fn finish(self) -> std::io::Result<W> {
        self.finish_keeping().map(|(out, _)| out)
    }

    /// [`ParallelGzWriter::finish`], also giving back the buffers for the next writer.
    /// The wait for the last members (at most [`ParallelGzWriter`]'s limit of pieces in flight)
    /// is timed with `HEAPCONV_TIMINGS=1` ("gzip/last members of a file").
    pub fn finish_keeping(mut self) -> std::io::Result<(W, GzBuffers)> {
        let mut clock = crate::timing::Phases::start("gzip");
        if !self.piece.is_empty() || !self.started {
            self.send_piece()?;
        }
        while !self.pending.is_empty() {
            self.write_front()?;
        }
        clock.done("last members of a file");
        self.out.flush()?;
        Ok((self.out, self.spare))
    }
}

impl<W: Write> Write for ParallelGzWriter<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.piece.capacity() == 0 {
            self.piece = self.spare.pieces.pop().unwrap_or_else(|| Vec::with_capacity(GZIP_PIECE));
        }
        let n = b.len().min(GZIP_PIECE - self.piece.len());
        self.piece.extend_from_slice(&b[..n]);
        if self.piece.len() == GZIP_PIECE {
            self.send_piece()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A piece waiting for compression, taken by whichever comes first: its task or the writer.
type PieceSlot = std::sync::Arc<Mutex<Option<Buffers>>>;

/// A piece and a member buffer (given to a task), or a member and the emptied piece buffer
/// (given back).
type Buffers = (Vec<u8>, Vec<u8>);

/// A `Write` that hands bytes to another thread a megabyte at a time, each chunk wrapped by
/// `wrap` into the channel's message type (the compressor here; the profile writer of
/// `heapconv profile` too).
pub struct MegabyteSender<'a, T> {
    tx: &'a mpsc::SyncSender<T>,
    wrap: fn(Vec<u8>) -> T,
    buf: Vec<u8>,
}

impl<'a, T> MegabyteSender<'a, T> {
    /// A writer sending to `tx`, each megabyte as `wrap(bytes)`.
    pub fn new(tx: &'a mpsc::SyncSender<T>, wrap: fn(Vec<u8>) -> T) -> Self {
        MegabyteSender { tx, wrap, buf: Vec::with_capacity(1 << 20) }
    }
}

impl<T> Write for MegabyteSender<'_, T> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= 1 << 20 {
            self.flush()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(1 << 20));
            self.tx.send((self.wrap)(chunk)).map_err(|_| std::io::Error::other("the receiving thread stopped"))?;
        }
        Ok(())
    }
}

/// Writes pieces given in any order, each with its index, in index order: a piece is written
/// as soon as every piece before it has been, by whichever thread gave the last of them,
/// outside the lock that takes new pieces.
struct OrderedWriter<'w> {
    state: Mutex<Ordered>,
    w: Mutex<&'w mut (dyn Write + Send)>,
}
#[derive(Default)]
struct Ordered {
    next: usize,
    waiting: std::collections::BTreeMap<usize, Vec<u8>>,
    writing: bool,
    error: Option<std::io::Error>,
}
impl<'w> OrderedWriter<'w> {
    fn new(w: &'w mut (dyn Write + Send)) -> Self {
        OrderedWriter { state: Mutex::new(Ordered::default()), w: Mutex::new(w) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ordered> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes piece `index`, and writes every piece that is now next in order unless another
    /// thread is already writing (it then writes them).
    fn put(&self, index: usize, piece: Vec<u8>) {
        let mut st = self.lock();
        st.waiting.insert(index, piece);
        if st.writing {
            return;
        }
        st.writing = true;
        loop {
            let next = st.next;
            let Some(piece) = st.waiting.remove(&next) else {
                st.writing = false;
                return;
            };
            st.next += 1;
            let failed = st.error.is_some();
            drop(st);
            let result =
                if failed { Ok(()) } else { self.w.lock().unwrap_or_else(|e| e.into_inner()).write_all(&piece) };
            st = self.lock();
            if let Err(e) = result {
                st.error.get_or_insert(e);
            }
        }
    }

    /// The first write error, if any; an error too if a piece was never written (a gap in
    /// the indexes).
    fn finish(self) -> std::io::Result<()> {
        let st = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        match st.error {
            Some(e) => Err(e),
            None if !st.waiting.is_empty() => Err(std::io::Error::other("a part of the output was never written")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_gzip_is_one_member_when_small_and_pieces_at_fixed_offsets_when_large() {
        use std::io::Read;
        // Small: one member, whatever the write sizes; read back by flate2's (zlib's) reader.
        let small: Vec<u8> = (0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let mut w = ParallelGzWriter::new(Vec::new());
        for c in small.chunks(7777) {
            w.write_all(c).unwrap();
        }
        let one = w.finish().unwrap();
        let mut member = Vec::new();
        gzip_member_into(&small, &mut member);
        assert_eq!(one, member);
        assert_eq!(&one[..10], &gzip(&small)[..10], "the header of gzip()");
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&one[..]).read_to_end(&mut back).unwrap();
        assert!(back == small);
        assert!(one.len() < small.len() / 4, "compressed: {} bytes", one.len());
        let empty = ParallelGzWriter::new(Vec::new()).finish().unwrap();
        let mut back = vec![1u8];
        flate2::read::GzDecoder::new(&empty[..]).read_to_end(&mut back).unwrap();
        assert_eq!(back, [1], "empty: one empty member");
        // Large: one member per piece, the same bytes with one thread or two and any write sizes.
        let big: Vec<u8> = (0..(5 * GZIP_PIECE / 4 + 10) as u32)
            .flat_map(|i| (i.wrapping_mul(2_654_435_761) >> 7).to_le_bytes())
            .collect();
        let run = |threads: usize, write: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut w = ParallelGzWriter::new(Vec::new());
                for c in big.chunks(write) {
                    w.write_all(c).unwrap();
                }
                w.finish().unwrap()
            })
        };
        let a = run(1, 1 << 20);
        assert_eq!(a, run(2, 12_345));
        let mut want = Vec::new();
        for piece in big.chunks(GZIP_PIECE) {
            gzip_member_into(piece, &mut want);
        }
        assert_eq!(a, want, "members cut every GZIP_PIECE bytes");
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&a[..]).read_to_end(&mut back).unwrap();
        assert!(back == big);
    }

    /// Bytes shaped like pprof's samples: varint location ids drawn from a skewed set, values.
    fn pprof_like(n: usize) -> Vec<u8> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(&[0x0a, 0x0c, 0x0a, 0x08]);
            for k in 0..4 {
                let id = ((x >> (k * 12)) & 0xfff) % (1 + ((x >> 50) & 0x3ff));
                out.extend_from_slice(&[(id as u8) | 0x80, (id >> 7) as u8]);
            }
            out.extend_from_slice(&[0x10, (x >> 40) as u8 & 0x7f]);
        }
        out.truncate(n);
        out
    }

    #[test]
    fn gzip_members_are_level_1_deterministic_and_read_back() {
        use std::io::Read;
        let data = pprof_like(GZIP_PIECE);
        let other = pprof_like(3 * GZIP_PIECE / 2);
        let member = |bytes: &[u8]| {
            let mut m = Vec::new();
            gzip_member_into(bytes, &mut m);
            m
        };
        // The same bytes on a fresh thread and after other members on this one; appended after
        // what `out` already holds.
        let fresh = std::thread::spawn({
            let data = data.clone();
            move || member(&data)
        })
        .join()
        .unwrap();
        let _ = member(&other);
        let _ = member(&other[..1000]);
        let mut appended = b"before".to_vec();
        gzip_member_into(&data, &mut appended);
        assert_eq!(&appended[..6], b"before");
        assert_eq!(appended[6..], fresh[..]);
        assert_eq!(member(&data), fresh);
        assert_eq!(fresh[..10], GZIP_HEADER);
        for input in [&data[..], &other[..], &[][..], &[7u8][..]] {
            let m = member(input);
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&m[..]).read_to_end(&mut back).unwrap();
            assert!(back == input, "{} bytes read back", input.len());
        }
        // Incompressible bytes (stored blocks) still fit the room given.
        let noise: Vec<u8> = (0..GZIP_PIECE as u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8 ^ (i >> 3) as u8)
            .collect();
        let m = member(&noise);
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&m[..]).read_to_end(&mut back).unwrap();
        assert!(back == noise);
        // The level: within 15% of libdeflate's level 1 (its level 0 stores, its higher levels
        // are smaller), and, for igzip on x86-64 with SSE4.2 (every variant writes the same
        // bytes there), the exact size of level 1.
        let mut ld = Vec::new();
        libdeflate_member_into(&data, &mut ld);
        let (ours, theirs) = (fresh.len() as f64, ld.len() as f64);
        assert!(ours < theirs * 1.15 && ours > theirs * 0.85, "{ours} bytes vs libdeflate's {theirs}");
        assert!(ours < data.len() as f64 * 0.8, "compressed: {ours} of {} bytes", data.len());
        #[cfg(all(feature = "isal", target_arch = "x86_64"))]
        if std::arch::is_x86_feature_detected!("sse4.2") {
            assert_eq!(fresh.len(), 612_995, "igzip level 1");
        }
        #[cfg(not(feature = "isal"))]
        assert_eq!(fresh, ld);
    }

    #[test]
    fn ordered_writer_writes_pieces_given_in_any_order_in_order() {
        use rayon::prelude::*;
        let mut out = Vec::new();
        let w = OrderedWriter::new(&mut out);
        // 200 pieces given by several threads, in a scrambled order.
        let order: Vec<usize> = (0..200).map(|i| (i * 73) % 200).collect();
        order.par_iter().for_each(|&i| w.put(i, format!("<{i}>").into_bytes()));
        w.finish().unwrap();
        let want: String = (0..200).map(|i| format!("<{i}>")).collect();
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn ordered_writer_reports_a_gap_and_write_errors() {
        let mut out = Vec::new();
        let w = OrderedWriter::new(&mut out);
        w.put(1, b"b".to_vec());
        assert!(w.finish().unwrap_err().to_string().contains("never written"));
        assert!(out.is_empty(), "nothing written before piece 0");

        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut full = Full;
        let w = OrderedWriter::new(&mut full);
        w.put(0, b"a".to_vec());
        w.put(1, b"b".to_vec());
        assert_eq!(w.finish().unwrap_err().to_string(), "disk full");
    }
}
