//! The protobuf wire format, read by hand where a decoder needs more speed or more control
//! than prost gives (pprof samples, sniffing, the packet stream of a trace).
//!
//! A message is a sequence of fields. Each starts with a *tag*, a varint holding
//! `field_number << 3 | wire_type`; the value follows, by wire type: 0 a varint, 1 eight
//! little-endian bytes, 2 a varint length then that many bytes (strings, bytes, nested
//! messages, packed repeated numbers), 5 four little-endian bytes. (3 and 4, groups, are
//! obsolete and not read.) A varint is 1 to 10 bytes, 7 bits each, least significant first;
//! the high bit of a byte says another follows.
//!
//! [`Wire`] reads a message in memory: every read is bounds-checked and returns `None` when
//! the bytes run out or do not make sense; [`Wire::pos`] gives the offset for the caller's
//! error. [`StreamVarint`] decodes a varint a byte at a time, for readers of a stream; it and
//! [`varint`] live in the crate's `wire` module, shared with the encoders, and are re-exported
//! here.

pub use crate::wire::{StreamVarint, VarintOverflow, varint};

/// A reader of one protobuf message (or any run of fields) in memory.
#[derive(Debug, Clone)]
pub struct Wire<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Wire<'a> {
    /// A reader at the start of `b`.
    #[inline]
    pub fn new(b: &'a [u8]) -> Self {
        Wire { b, pos: 0 }
    }

    /// The offset of the next read, from the start of the bytes given to [`Wire::new`].
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// True when every byte has been read.
    #[inline]
    pub fn done(&self) -> bool {
        self.pos >= self.b.len()
    }

    /// Number of bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }

    /// The next varint. Varints of one to three bytes (tags, ids, small values: most of a
    /// profile) are read without a loop.
    #[inline(always)]
    pub fn varint(&mut self) -> Option<u64> {
        let rest = self.b.get(self.pos..)?;
        let (v, n) = match *rest {
            [a, ..] if a < 0x80 => (u64::from(a), 1),
            [a, b, ..] if b < 0x80 => (u64::from(a & 0x7f) | (u64::from(b) << 7), 2),
            [a, b, c, ..] if c < 0x80 => (u64::from(a & 0x7f) | (u64::from(b & 0x7f) << 7) | (u64::from(c) << 14), 3),
            _ => varint(rest)?,
        };
        self.pos += n;
        Some(v)
    }

    /// The next tag as (field number, wire type).
    #[inline(always)]
    pub fn tag(&mut self) -> Option<(u64, u8)> {
        let t = self.varint()?;
        Some((t >> 3, (t & 7) as u8))
    }

    /// The next `len` bytes.
    #[inline]
    pub fn take(&mut self, len: u64) -> Option<&'a [u8]> {
        let len = usize::try_from(len).ok()?;
        let end = self.pos.checked_add(len).filter(|&e| e <= self.b.len())?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Some(s)
    }

    /// A length-delimited value (wire type 2): its length, then its bytes.
    #[inline]
    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.varint()?;
        self.take(len)
    }

    /// A little-endian 32-bit value (wire type 5).
    #[inline]
    pub fn fixed32(&mut self) -> Option<u32> {
        self.take(4).map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
    }

    /// A little-endian 64-bit value (wire type 1).
    #[inline]
    pub fn fixed64(&mut self) -> Option<u64> {
        self.take(8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }

    /// Skips a field's value of wire type `wt`; `None` when it runs past the end or the wire
    /// type is not one protobuf has.
    #[inline]
    pub fn skip(&mut self, wt: u64) -> Option<()> {
        match wt {
            0 => self.varint().map(|_| ()),
            1 => self.take(8).map(|_| ()),
            2 => self.bytes().map(|_| ()),
            5 => self.take(4).map(|_| ()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_of_every_length() {
        for v in [0u64, 1, 127, 128, 300, 16_383, 16_384, 1 << 21, 1 << 35, u64::MAX - 1, u64::MAX] {
            let mut b = Vec::new();
            let mut x = v;
            loop {
                let byte = (x & 0x7f) as u8;
                x >>= 7;
                if x == 0 {
                    b.push(byte);
                    break;
                }
                b.push(byte | 0x80);
            }
            assert_eq!(varint(&b), Some((v, b.len())), "{v}");
            let mut w = Wire::new(&b);
            assert_eq!(w.varint(), Some(v));
            assert!(w.done());
            let mut s = StreamVarint::default();
            let got: Vec<_> = b.iter().map(|&x| s.push(x).unwrap()).collect();
            assert_eq!(got.last(), Some(&Some(v)));
            assert_eq!(s.len() as usize, b.len());
            // Cut short: no value.
            assert_eq!(Wire::new(&b[..b.len() - 1]).varint(), None);
        }
        assert_eq!(varint(&[0x80; 11]), None);
        let mut s = StreamVarint::default();
        for _ in 0..9 {
            assert_eq!(s.push(0xff), Ok(None));
        }
        assert_eq!(s.push(2), Err(VarintOverflow));
    }

    #[test]
    fn fields_by_wire_type() {
        // field 1 varint 150, field 2 fixed64, field 3 bytes "hi", field 4 fixed32, field 5 wire type 3.
        let mut b = vec![0x08, 0x96, 0x01, 0x11];
        b.extend_from_slice(&7u64.to_le_bytes());
        b.extend_from_slice(&[0x1a, 2, b'h', b'i', 0x25]);
        b.extend_from_slice(&9u32.to_le_bytes());
        b.push(0x2b);
        let mut w = Wire::new(&b);
        assert_eq!(w.tag(), Some((1, 0)));
        assert_eq!(w.varint(), Some(150));
        assert_eq!(w.tag(), Some((2, 1)));
        assert_eq!(w.fixed64(), Some(7));
        assert_eq!(w.tag(), Some((3, 2)));
        assert_eq!(w.bytes(), Some(&b"hi"[..]));
        assert_eq!(w.tag(), Some((4, 5)));
        assert_eq!(w.fixed32(), Some(9));
        let at = w.pos();
        assert_eq!(w.tag(), Some((5, 3)));
        assert_eq!(w.skip(3), None);
        assert_eq!(at, b.len() - 1);
        // Lengths past the end are refused without reading.
        assert_eq!(Wire::new(&[0x05, b'a']).bytes(), None);
        assert_eq!(Wire::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]).bytes(), None);
        let mut w = Wire::new(&[0x01, 0x02]);
        assert_eq!(w.skip(1), None);
        assert_eq!(w.remaining(), 2);
    }
}
