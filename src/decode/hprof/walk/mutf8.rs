//! Java's modified UTF-8, decoded lossily.

/// Decodes Java's modified UTF-8 (`C0 80` for NUL, supplementary characters as two 3-byte
/// surrogates), lossily: what is not valid becomes U+FFFD.
pub fn decode_mutf8(b: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(b) {
        // Valid UTF-8 cannot hold C0 80 or encoded surrogates, so it means the same.
        return s.to_owned();
    }
    let mut units: Vec<u16> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let cont = |k: usize| b.get(i + k).copied().filter(|x| x & 0xC0 == 0x80).map(|x| u16::from(x & 0x3F));
        if c < 0x80 {
            units.push(u16::from(c));
            i += 1;
        } else if c & 0xE0 == 0xC0 {
            match cont(1) {
                Some(x) => {
                    units.push((u16::from(c & 0x1F) << 6) | x);
                    i += 2;
                }
                None => {
                    units.push(0xFFFD);
                    i += 1;
                }
            }
        } else if c & 0xF0 == 0xE0 {
            match (cont(1), cont(2)) {
                (Some(x), Some(y)) => {
                    units.push((u16::from(c & 0x0F) << 12) | (x << 6) | y);
                    i += 3;
                }
                _ => {
                    units.push(0xFFFD);
                    i += 1;
                }
            }
        } else if c & 0xF8 == 0xF0 {
            // Standard 4-byte UTF-8 (not modified UTF-8, but some writers use it).
            match (cont(1), cont(2), cont(3)) {
                (Some(x), Some(y), Some(z)) => {
                    let cp = (u32::from(c & 0x07) << 18) | (u32::from(x) << 12) | (u32::from(y) << 6) | u32::from(z);
                    let mut tmp = [0u16; 2];
                    match char::from_u32(cp) {
                        Some(ch) => units.extend_from_slice(ch.encode_utf16(&mut tmp)),
                        None => units.push(0xFFFD),
                    }
                    i += 4;
                }
                _ => {
                    units.push(0xFFFD);
                    i += 1;
                }
            }
        } else {
            units.push(0xFFFD);
            i += 1;
        }
    }
    String::from_utf16_lossy(&units)
}
