//! A protobuf wire-format writer in the style of protozero (Perfetto's): fields appended to a
//! byte buffer as the producer calls them, nested messages with a redundant 4-byte length
//! patched in at the end. It checks nothing, so tests can write broken messages with it too.

/// Wire type 0: a varint.
pub const WT_VARINT: u64 = 0;
/// Wire type 2: length-delimited bytes (strings, bytes, nested messages, packed fields).
pub const WT_LEN: u64 = 2;

/// Appends `v` as a minimal varint (7 bits per byte, low bits first, the high bit set on every
/// byte but the last).
#[inline]
pub fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    if v < 0x80 {
        buf.push(v as u8);
        return;
    }
    let mut tmp = [0u8; 10];
    let mut i = 0;
    while v >= 0x80 {
        tmp[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    tmp[i] = v as u8;
    buf.extend_from_slice(&tmp[..=i]);
}

/// Appends a field key: `field << 3 | wire_type`, as a varint.
#[inline]
pub fn put_key(buf: &mut Vec<u8>, field: u32, wire_type: u64) {
    put_varint(buf, (u64::from(field) << 3) | wire_type);
}

/// Appends a varint field (written even when `v` is 0).
#[inline]
pub fn put_u64(buf: &mut Vec<u8>, field: u32, v: u64) {
    put_key(buf, field, WT_VARINT);
    put_varint(buf, v);
}

/// Appends a bool field (written even when false).
#[inline]
pub fn put_bool(buf: &mut Vec<u8>, field: u32, v: bool) {
    put_u64(buf, field, u64::from(v));
}

/// Appends a length-delimited field holding `b`.
#[inline]
pub fn put_bytes(buf: &mut Vec<u8>, field: u32, b: &[u8]) {
    put_key(buf, field, WT_LEN);
    put_varint(buf, b.len() as u64);
    buf.extend_from_slice(b);
}

/// Starts a nested message with a 4-byte redundant varint length placeholder,
/// as protozero does. Returns the position of the placeholder.
#[inline]
pub fn begin_msg(buf: &mut Vec<u8>, field: u32) -> usize {
    put_key(buf, field, WT_LEN);
    let pos = buf.len();
    buf.extend_from_slice(&[0x80, 0x80, 0x80, 0x00]);
    pos
}

/// Back-patches the length of a nested message started with [`begin_msg`] (below 2^28
/// bytes).
#[inline]
pub fn end_msg(buf: &mut [u8], pos: usize) {
    let len = buf.len() - pos - 4;
    debug_assert!(len < 1 << 28, "nested message too large");
    let l = len as u32;
    buf[pos] = (l & 0x7f) as u8 | 0x80;
    buf[pos + 1] = ((l >> 7) & 0x7f) as u8 | 0x80;
    buf[pos + 2] = ((l >> 14) & 0x7f) as u8 | 0x80;
    buf[pos + 3] = ((l >> 21) & 0x7f) as u8;
}

/// Writes `v` as a minimal varint at the start of `out` (at least 10 bytes long); returns the
/// number of bytes used.
#[inline]
pub fn varint_into(out: &mut [u8], mut v: u64) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

/// The length in bytes of `v` as a minimal varint.
#[inline]
pub fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_nested_lengths() {
        for (v, want) in [(0u64, &[0u8][..]), (127, &[0x7f]), (128, &[0x80, 0x01]), (300, &[0xac, 0x02])] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b, want);
            assert_eq!(varint_len(v), want.len());
            let mut a = [0u8; 10];
            let n = varint_into(&mut a, v);
            assert_eq!(&a[..n], want);
        }
        assert_eq!(varint_len(u64::MAX), 10);
        let mut b = Vec::new();
        let pos = begin_msg(&mut b, 2);
        put_bool(&mut b, 1, true);
        put_bytes(&mut b, 3, b"ab");
        end_msg(&mut b, pos);
        assert_eq!(b, [0x12, 0x86, 0x80, 0x80, 0x00, 0x08, 0x01, 0x1a, 0x02, b'a', b'b']);
    }
}
