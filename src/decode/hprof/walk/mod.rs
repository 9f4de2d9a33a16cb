//! The low-level hprof walker: the file header, top-level records and heap-dump sub-records,
//! read from any [`Read`] through one buffer, with every length checked against the record
//! that holds it and against the bytes that actually arrive.
//!
//! [`HprofStream`] is a lending iterator in two levels. [`HprofStream::next_record`] moves to
//! the next top-level record (skipping whatever the caller left of the current one) and
//! returns its 9-byte header; for a record that is not a heap dump, [`HprofStream::body`]
//! returns its bytes. Inside a `HEAP_DUMP` (0x0C) or `HEAP_DUMP_SEGMENT` (0x1C) record,
//! [`HprofStream::next_sub`] returns one sub-record at a time, parsed ([`SubRecord`]) and raw
//! ([`Sub::raw`]). A primitive array larger than [`STREAM_PAYLOAD`] bytes is not buffered: its
//! header comes with `data: None` and the caller copies the elements with
//! [`HprofStream::copy_payload`] or lets the next call skip them, so memory stays bounded by
//! the largest instance or object array, not by the file.
//!
//! Nothing is allocated from a length the file claims: the buffer grows only as bytes arrive,
//! so a record that says it is 4 GiB long in a 1 KiB file costs 1 KiB and ends in a
//! [`ErrorKind::Truncated`] error naming the file, the byte offset and the record.

//!
//! The parts: `records` (tags, their names, and the parsed forms of records and sub-records),
//! `sub_records` (a sub-record's length and its parse), `stream` ([`HprofStream`]), `mutf8`
//! (Java's modified UTF-8).

mod mutf8;
mod records;
mod stream;
mod sub_records;
#[cfg(test)]
mod tests;

pub use mutf8::*;
pub use records::*;
pub use stream::*;
pub use sub_records::*;

use std::io::{self, Read, Write};

use crate::error::{Error, ErrorKind, Result};
use crate::model::heap::{BasicType, RootKind};
