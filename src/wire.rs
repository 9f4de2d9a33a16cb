//! Varints of the protobuf wire format, read and written: the one place both `decode` and
//! `encode` take them from.
//!
//! A varint is 1 to 10 bytes, 7 bits each, least significant first; the high bit of a byte
//! says another follows. [`varint`] reads one from memory, [`StreamVarint`] a byte at a time
//! (for readers of a stream); [`put_varint`] appends one, [`put_varint_at`] writes one into a
//! buffer with room for it. What they write is what `prost::encoding::encode_varint` writes;
//! where prost's own functions cost nothing extra (lengths, `encode_varint` into a `Vec` a
//! few times a message) the encoders call them directly.
//!
//! Readers kept apart, each with its reason: `Wire::varint` (`decode/wire.rs`) and the trace
//! decoder's `fast_varint` (`decode/perfetto/hot`) read varints of one to three bytes without
//! a loop before falling back to [`varint`] or prost; the pprof encoder's `mark_used` keeps its
//! index in a register while it walks packed location ids.

/// A varint at the start of `b`: (value, bytes read), `None` when `b` ends inside it or it is
/// longer than 10 bytes. Bits past the 64th are dropped.
#[inline]
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// A varint decoded a byte at a time, for readers of a stream: [`StreamVarint::push`] each
/// byte until it gives the value.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamVarint {
    value: u64,
    bytes: u32,
}

/// A varint whose tenth byte carries more than the 64th bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarintOverflow;

impl StreamVarint {
    /// Number of bytes pushed so far.
    pub fn len(&self) -> u32 {
        self.bytes
    }

    /// True before the first byte.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Adds the next byte: `Ok(Some(value))` when it was the last, `Ok(None)` when more
    /// follow, an error when the value does not fit 64 bits.
    pub fn push(&mut self, b: u8) -> Result<Option<u64>, VarintOverflow> {
        if self.bytes == 9 && b > 1 {
            return Err(VarintOverflow);
        }
        self.value |= u64::from(b & 0x7f) << (7 * self.bytes);
        self.bytes += 1;
        Ok(if b & 0x80 == 0 { Some(self.value) } else { None })
    }
}

/// Appends `v` as a varint (what `prost::encoding::encode_varint` writes), a push per byte
/// (prost puts each byte as a one-byte slice; a copy of a few bytes would be a call).
#[inline]
pub fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Writes `v` as a varint into `out` at `at`; returns the index after it. Panics when `out`
/// has no room for it (10 bytes hold any varint).
#[inline]
pub fn put_varint_at(out: &mut [u8], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        out[at] = v as u8 | 0x80;
        v >>= 7;
        at += 1;
    }
    out[at] = v as u8;
    at + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_of_every_length_round_trip_as_prost_writes_them() {
        for v in [0u64, 1, 127, 128, 300, 16_383, 16_384, 1 << 21, 1 << 35, u64::MAX - 1, u64::MAX] {
            let mut prost_bytes = Vec::new();
            prost::encoding::encode_varint(v, &mut prost_bytes);
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b, prost_bytes, "{v}");
            let mut at = [0u8; 12];
            let end = put_varint_at(&mut at, 1, v);
            assert_eq!(&at[1..end], &b[..], "{v}");
            assert_eq!(varint(&b), Some((v, b.len())), "{v}");
            let mut s = StreamVarint::default();
            let got: Vec<_> = b.iter().map(|&x| s.push(x).unwrap()).collect();
            assert_eq!(got.last(), Some(&Some(v)));
            assert_eq!(s.len() as usize, b.len());
            assert_eq!(varint(&b[..b.len() - 1]), None, "cut short: no value");
        }
        assert_eq!(varint(&[0x80; 11]), None);
        let mut s = StreamVarint::default();
        for _ in 0..9 {
            assert_eq!(s.push(0xff), Ok(None));
        }
        assert_eq!(s.push(2), Err(VarintOverflow));
    }
}
