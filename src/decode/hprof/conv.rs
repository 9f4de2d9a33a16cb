//! Android's `hprof-conv`: an Android heap dump (`JAVA PROFILE 1.0.3`) rewritten in the
//! standard format (`JAVA PROFILE 1.0.2`) that JVM tools (Eclipse MAT, VisualVM, jhat) read,
//! byte for byte as `hprof-conv` (AOSP `dalvik/tools/hprof-conv`, Debian package
//! `hprof-conv`) writes it:
//!
//! * the header string's `1.0.3` becomes `1.0.2`; the identifier size and timestamp are kept;
//! * every record other than `HEAP_DUMP` (0x0C) and `HEAP_DUMP_SEGMENT` (0x1C) is copied as it
//!   is, unknown tags included;
//! * a heap-dump record keeps its tag and time and gets the length of its new body, one
//!   output record per input record (possibly empty):
//!   - standard sub-records are copied;
//!   - `HEAP_DUMP_INFO` (0xFE) is dropped, after setting the heap of the objects that follow
//!     (the default heap again at the start of every record);
//!   - Android's roots `ROOT_INTERNED_STRING` 0x89, `ROOT_FINALIZING` 0x8A, `ROOT_DEBUGGER`
//!     0x8B, `ROOT_REFERENCE_CLEANUP` 0x8C, `ROOT_VM_INTERNAL` 0x8D, `UNREACHABLE` 0x90
//!     become `ROOT_UNKNOWN` (0xFF) with the same id; `ROOT_JNI_MONITOR` 0x8E too, dropping
//!     its thread serial and stack depth;
//!   - with [`HprofConvOptions::app_only`] (`-z`), instances and arrays in the heaps whose id
//!     is exactly `'Z'` (zygote) or `'I'` (image) are dropped; class dumps and roots stay, so
//!     roots and references may name objects that are not in the output.
//!
//! **`PRIMITIVE_ARRAY_NODATA_DUMP` (0xC3)**: `hprof-conv` turns it into a
//! `PRIMITIVE_ARRAY_DUMP` (0x23) and zeroes the four bytes it takes for the array length, but
//! they are the stack-trace serial: the output claims `length` elements and holds none, so
//! every reader misparses the rest of the record. heapconv writes a valid array instead: the
//! same id, serial and length, with `length` zero elements (the dump never had their values),
//! so the array keeps its size. When those zeros would make the output record longer than
//! 4 GiB − 1, or all zero elements written so far more than
//! [`HprofConvOptions::max_zero_fill`], the array is written with length 0 instead. With `-z`,
//! such arrays in the zygote and image heaps are dropped like the others (`hprof-conv` keeps
//! them). This is the one place heapconv's output differs from `hprof-conv`'s; no shipped
//! Android version writes 0xC3 (Dalvik had it behind a compile-time switch that was off).
//!
//! Unlike `hprof-conv` (which assumes 4-byte ids), 8-byte ids are handled; damage (the file
//! ends inside a record, a sub-record overruns its record, an unknown sub-record tag) is an
//! error naming the byte offset and record, where `hprof-conv` leaves a partial output.
//!
//! Memory does not grow with the file: records are converted one at a time, in memory when
//! they are at most [`HprofConvOptions::max_buffered_record`] bytes long (Android's segments
//! are a few KiB), otherwise written straight to the output with their length patched by
//! seeking back; primitive arrays over a megabyte are copied through without buffering.

use std::io::{self, Read, Seek, SeekFrom, Write};

use super::names::{NameRewrite, is_load_class, is_stack};
use super::walk::{HprofStream, RecordHeader, SubRecord, sub};
use crate::error::{Error, ErrorKind, Result};

/// Options of [`hprof_conv`].
#[derive(Debug, Clone)]
pub struct HprofConvOptions {
    /// `-z`: drop the instances and arrays of the zygote (`'Z'`) and image (`'I'`) heaps.
    /// Default: false.
    pub app_only: bool,
    /// The most zero elements (in bytes) written for `PRIMITIVE_ARRAY_NODATA_DUMP` arrays in
    /// all; past it they are written with length 0. Default: 1 GiB.
    pub max_zero_fill: u64,
    /// Heap-dump records whose output is at most this long are built in memory; longer ones
    /// are written in place and their length patched by seeking back (an output that cannot
    /// seek then fails). Default: 64 MiB.
    pub max_buffered_record: usize,
}

impl Default for HprofConvOptions {
    fn default() -> Self {
        HprofConvOptions { app_only: false, max_zero_fill: 1 << 30, max_buffered_record: 64 << 20 }
    }
}

/// What [`hprof_conv`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HprofConvReport {
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Top-level records.
    pub records: u64,
    /// Heap-dump records among them.
    pub heap_dump_records: u64,
    /// Sub-records read.
    pub sub_records: u64,
    /// `HEAP_DUMP_INFO` sub-records dropped.
    pub heap_infos_dropped: u64,
    /// Android roots written as `ROOT_UNKNOWN`.
    pub roots_rewritten: u64,
    /// Instances and arrays dropped by `-z`.
    pub objects_dropped: u64,
    /// `PRIMITIVE_ARRAY_NODATA_DUMP` arrays written with zero elements.
    pub nodata_zero_filled: u64,
    /// `PRIMITIVE_ARRAY_NODATA_DUMP` arrays written with length 0 (see
    /// [`HprofConvOptions::max_zero_fill`]).
    pub nodata_emptied: u64,
    /// `STRING` records added by a rename ([`hprof_conv_renamed`]).
    pub strings_added: u64,
    /// `CLASS_DUMP` sub-records written with other field names by a rename.
    pub classes_renamed: u64,
    /// `STACK_FRAME` and `STACK_TRACE` records written with other names or more frames (an
    /// inline chain) by a rename.
    pub frames_renamed: u64,
}

impl HprofConvReport {
    /// What the dump did not hold and the output had to make up, one line each (for
    /// `--strict`): `PRIMITIVE_ARRAY_NODATA_DUMP` arrays, whose values the VM never wrote.
    pub fn data_loss(&self) -> Vec<String> {
        let n = self.nodata_zero_filled + self.nodata_emptied;
        if n == 0 {
            return Vec::new();
        }
        vec![format!(
            "{n} PRIMITIVE_ARRAY_NODATA array(s) have no values ({} written as zeros, {} as empty arrays)",
            self.nodata_zero_filled, self.nodata_emptied
        )]
    }
}

/// A writer that cannot seek (standard output, a pipe), for [`hprof_conv`]: records longer
/// than [`HprofConvOptions::max_buffered_record`] then fail.
#[derive(Debug)]
pub struct NoSeek<W>(pub W);

impl<W: Write> Write for NoSeek<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.write(b)
    }
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        self.0.write_all(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<W> Seek for NoSeek<W> {
    fn seek(&mut self, _: SeekFrom) -> io::Result<u64> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "the output cannot seek"))
    }
}

/// The output of one heap-dump record: in memory, or (once too long) already in the output.
struct RecordOut<'w, W: Write + Seek> {
    out: &'w mut W,
    /// The record's bytes, header first, while in memory.
    mem: Vec<u8>,
    /// Body bytes written straight to the output, once `mem` grew too long.
    direct: Option<u64>,
    limit: usize,
    /// Bytes written to `out` in all (for the report).
    written: u64,
}

impl<W: Write + Seek> RecordOut<'_, W> {
    fn body_len(&self) -> u64 {
        match self.direct {
            Some(n) => n,
            None => self.mem.len() as u64 - 9,
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        let len = self.body_len();
        let len32 = u32::try_from(len).map_err(|_| io::Error::other("the converted record is 4 GiB or longer"))?;
        match self.direct.take() {
            None => {
                self.mem[5..9].copy_from_slice(&len32.to_be_bytes());
                self.out.write_all(&self.mem)?;
                self.written += self.mem.len() as u64;
            }
            Some(n) => {
                let back = i64::try_from(n + 4).map_err(io::Error::other)?;
                self.out.seek(SeekFrom::Current(-back))?;
                self.out.write_all(&len32.to_be_bytes())?;
                self.out.seek(SeekFrom::Current(back - 4))?;
            }
        }
        self.mem.clear();
        Ok(())
    }
}

impl<W: Write + Seek> Write for RecordOut<'_, W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.write_all(b)?;
        Ok(b.len())
    }

    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match &mut self.direct {
            Some(n) => {
                self.out.write_all(b)?;
                *n += b.len() as u64;
                self.written += b.len() as u64;
            }
            None if self.mem.len() + b.len() <= self.limit.max(9) => self.mem.extend_from_slice(b),
            None => {
                // Too long for memory: the header (length still to come) and what is buffered
                // go out now, the rest follows directly.
                self.out.write_all(&self.mem)?;
                self.out.write_all(b)?;
                self.written += (self.mem.len() + b.len()) as u64;
                self.direct = Some((self.mem.len() - 9 + b.len()) as u64);
                self.mem.clear();
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// Converts an Android hprof (`JAVA PROFILE 1.0.3`) read from `input` to the standard format,
/// written to `out` (see the module documentation). `name` names the input in messages.
pub fn hprof_conv<R: Read, W: Write + Seek>(
    input: R,
    name: &str,
    out: &mut W,
    opts: &HprofConvOptions,
) -> Result<HprofConvReport> {
    convert(input, name, out, opts, None)
}

/// [`hprof_conv`] with class and field names replaced as `names` says (see
/// [`super::names`]); every other byte is converted as [`hprof_conv`] converts it, so values
/// stay exact. Any HPROF version is read: `JAVA PROFILE 1.0.3` becomes 1.0.2, other versions
/// keep their header (there is nothing of Android's to convert in them).
pub fn hprof_conv_renamed<R: Read, W: Write + Seek>(
    input: R,
    name: &str,
    out: &mut W,
    opts: &HprofConvOptions,
    names: &NameRewrite,
) -> Result<HprofConvReport> {
    convert(input, name, out, opts, Some(names))
}

fn convert<R: Read, W: Write + Seek>(
    input: R,
    name: &str,
    out: &mut W,
    opts: &HprofConvOptions,
    names: Option<&NameRewrite>,
) -> Result<HprofConvReport> {
    let mut s = HprofStream::new(input, name)?;
    let h = s.header().clone();
    match h.format.as_str() {
        "JAVA PROFILE 1.0.3" => {}
        _ if names.is_some() => {}
        "JAVA PROFILE 1.0.2" => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("{name}: already in the standard format (JAVA PROFILE 1.0.2); nothing to convert"),
            ));
        }
        other => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("{name}: {other:?} is not an Android heap dump (JAVA PROFILE 1.0.3)"),
            ));
        }
    }
    let werr = |e: io::Error| Error::io("writing the output", e);
    let mut report = HprofConvReport::default();
    let mut header = h.clone();
    if header.format == "JAVA PROFILE 1.0.3" {
        header.format = "JAVA PROFILE 1.0.2".to_owned();
    }
    let mut head = header.to_bytes();
    if let Some(n) = names {
        head.extend_from_slice(&n.string_records(h.id_size));
        report.strings_added = n.new_strings.len() as u64;
    }
    out.write_all(&head).map_err(werr)?;
    let mut rec = RecordOut { out, mem: Vec::new(), direct: None, limit: opts.max_buffered_record, written: 0 };
    rec.written = head.len() as u64;
    let id = usize::from(h.id_size);
    let mut zero_filled = 0u64;
    while let Some(r) = s.next_record()? {
        report.records += 1;
        if let Some(n) = names.filter(|_| is_load_class(r.tag)) {
            let mut body = s.body()?.to_vec();
            n.load_class(&mut body, h.id_size);
            rec.out.write_all(&r.to_bytes()).map_err(werr)?;
            rec.out.write_all(&body).map_err(werr)?;
            rec.written += 9 + body.len() as u64;
            continue;
        }
        if let Some(n) = names.filter(|n| !n.frames.is_empty() && is_stack(r.tag)) {
            let body = s.body()?;
            let bodies = if r.tag == super::walk::tag::STACK_FRAME {
                n.stack_frame(body, h.id_size)
            } else {
                n.stack_trace(body, h.id_size).map(|b| vec![b])
            };
            let bodies = bodies.unwrap_or_else(|| vec![body.to_vec()]);
            if bodies.len() > 1 || bodies.first().is_some_and(|b| b.as_slice() != body) {
                report.frames_renamed += 1;
            }
            for b in bodies {
                let length = u32::try_from(b.len()).map_err(|_| {
                    Error::new(ErrorKind::LimitExceeded, format!("{name}: {} grows past 4 GiB", r.describe()))
                })?;
                rec.out.write_all(&RecordHeader { length, ..r }.to_bytes()).map_err(werr)?;
                rec.out.write_all(&b).map_err(werr)?;
                rec.written += 9 + b.len() as u64;
            }
            continue;
        }
        if !r.is_heap_dump() {
            rec.out.write_all(&r.to_bytes()).map_err(werr)?;
            rec.written += 9;
            let before = s.offset();
            s.copy_body(rec.out)?;
            rec.written += s.offset() - before;
            continue;
        }
        report.heap_dump_records += 1;
        rec.mem.clear();
        rec.mem.extend_from_slice(&r.to_bytes());
        let mut skip_objects = false;
        while let Some(sr) = s.next_sub()? {
            report.sub_records += 1;
            match sr.tag {
                sub::HEAP_DUMP_INFO => {
                    report.heap_infos_dropped += 1;
                    if let SubRecord::HeapDumpInfo { heap_id, .. } = sr.record {
                        skip_objects = opts.app_only && (heap_id == u32::from(b'Z') || heap_id == u32::from(b'I'));
                    }
                }
                sub::ROOT_INTERNED_STRING
                | sub::ROOT_FINALIZING
                | sub::ROOT_DEBUGGER
                | sub::ROOT_REFERENCE_CLEANUP
                | sub::ROOT_VM_INTERNAL
                | sub::ROOT_JNI_MONITOR
                | sub::UNREACHABLE => {
                    report.roots_rewritten += 1;
                    rec.write_all(&[sub::ROOT_UNKNOWN]).map_err(werr)?;
                    rec.write_all(&sr.raw[1..1 + id]).map_err(werr)?;
                }
                sub::INSTANCE_DUMP | sub::OBJECT_ARRAY_DUMP | sub::PRIMITIVE_ARRAY_DUMP if skip_objects => {
                    report.objects_dropped += 1;
                }
                sub::PRIMITIVE_ARRAY_DUMP => {
                    let streamed = matches!(sr.record, SubRecord::PrimitiveArray(a) if a.data.is_none());
                    rec.write_all(sr.raw).map_err(werr)?;
                    if streamed {
                        s.copy_payload(&mut rec)?;
                    }
                }
                sub::CLASS_DUMP if names.is_some() => match names.and_then(|n| n.class_dump(sr.raw, h.id_size)) {
                    Some(b) => {
                        report.classes_renamed += 1;
                        rec.write_all(&b).map_err(werr)?
                    }
                    None => rec.write_all(sr.raw).map_err(werr)?,
                },
                sub::PRIMITIVE_ARRAY_NODATA if skip_objects => report.objects_dropped += 1,
                sub::PRIMITIVE_ARRAY_NODATA => {
                    let SubRecord::PrimitiveArray(a) = sr.record else { unreachable!("0xC3 is a primitive array") };
                    let fill = u64::from(a.len) * u64::from(a.ty.size(h.id_size));
                    let mut head = sr.raw.to_vec();
                    let fits = rec.body_len() + head.len() as u64 + fill + s.record_left() <= u64::from(u32::MAX)
                        && zero_filled + fill <= opts.max_zero_fill;
                    head[0] = sub::PRIMITIVE_ARRAY_DUMP;
                    if !fits {
                        head[5 + id..9 + id].fill(0);
                        report.nodata_emptied += 1;
                    }
                    rec.write_all(&head).map_err(werr)?;
                    if fits {
                        report.nodata_zero_filled += 1;
                        zero_filled += fill;
                        let mut left = fill;
                        while left > 0 {
                            let k = left.min(ZEROS.len() as u64) as usize;
                            rec.write_all(&ZEROS[..k]).map_err(werr)?;
                            left -= k as u64;
                        }
                    }
                }
                _ => rec.write_all(sr.raw).map_err(werr)?,
            }
        }
        rec.finish().map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!(
                    "{name}: writing the converted {}: {e}{}",
                    r.describe(),
                    if e.kind() == io::ErrorKind::Unsupported {
                        " (records this long need an output file, not a pipe)"
                    } else {
                        ""
                    }
                ),
            )
        })?;
    }
    report.bytes_in = s.offset();
    report.bytes_out = rec.written;
    rec.out.flush().map_err(werr)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(body: &[u8]) -> Vec<u8> {
        let mut f = b"JAVA PROFILE 1.0.3\0".to_vec();
        f.extend_from_slice(&4u32.to_be_bytes());
        f.extend_from_slice(&7u64.to_be_bytes());
        f.push(0x1C);
        f.extend_from_slice(&0u32.to_be_bytes());
        f.extend_from_slice(&(body.len() as u32).to_be_bytes());
        f.extend_from_slice(body);
        f
    }

    fn prim(id: u32, n: u32) -> Vec<u8> {
        let mut v = vec![0x23];
        v.extend_from_slice(&id.to_be_bytes());
        v.extend_from_slice(&9u32.to_be_bytes());
        v.extend_from_slice(&n.to_be_bytes());
        v.push(8);
        v.extend(std::iter::repeat_n(0xAB, n as usize));
        v
    }

    #[test]
    fn long_records_are_patched_in_place_and_match_the_buffered_output() {
        let mut body = vec![0xFE, 0, 0, 0, 0x41, 0, 0, 0, 1];
        body.extend(prim(0x10, 3 << 20));
        body.extend(prim(0x11, 5));
        let f = file(&body);
        let mut small = io::Cursor::new(Vec::new());
        let opts = HprofConvOptions { max_buffered_record: 1000, ..Default::default() };
        let r = hprof_conv(&f[..], "t", &mut small, &opts).unwrap();
        let mut big = io::Cursor::new(Vec::new());
        hprof_conv(&f[..], "t", &mut big, &HprofConvOptions::default()).unwrap();
        assert_eq!(small.get_ref(), big.get_ref());
        assert_eq!(r.bytes_out, big.get_ref().len() as u64);
        assert_eq!(r.bytes_in, f.len() as u64);
        assert_eq!(big.get_ref().len(), f.len() - 9);
        let mut pipe = NoSeek(Vec::new());
        let e = hprof_conv(&f[..], "t", &mut pipe, &opts).unwrap_err();
        assert!(e.to_string().contains("need an output file"), "{e}");
    }

    #[test]
    fn nodata_arrays_get_zero_elements_or_length_zero() {
        let mut body = vec![0xC3];
        body.extend_from_slice(&0x20u32.to_be_bytes());
        body.extend_from_slice(&7u32.to_be_bytes());
        body.extend_from_slice(&5u32.to_be_bytes());
        body.push(10);
        let f = file(&body);
        let mut out = io::Cursor::new(Vec::new());
        let r = hprof_conv(&f[..], "t", &mut out, &HprofConvOptions::default()).unwrap();
        assert_eq!(r.nodata_zero_filled, 1);
        let o = out.into_inner();
        let rec = &o[31..];
        assert_eq!(&rec[5..9], &(14u32 + 20).to_be_bytes());
        assert_eq!(&rec[9..23], &[0x23, 0, 0, 0, 0x20, 0, 0, 0, 7, 0, 0, 0, 5, 10]);
        assert!(rec[23..43].iter().all(|&b| b == 0));
        let mut out = io::Cursor::new(Vec::new());
        let opts = HprofConvOptions { max_zero_fill: 10, ..Default::default() };
        let r = hprof_conv(&f[..], "t", &mut out, &opts).unwrap();
        assert_eq!(r.nodata_emptied, 1);
        assert_eq!(&out.get_ref()[31 + 9..], &[0x23, 0, 0, 0, 0x20, 0, 0, 0, 7, 0, 0, 0, 0, 10]);
    }
}
