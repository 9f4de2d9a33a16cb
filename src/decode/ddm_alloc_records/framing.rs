//! How a blob arrives: bare, in a DDM chunk, or in JDWP packets after the handshake; and the
//! big-endian and UTF-16 reads it needs.

use super::*;

pub(super) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub(super) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub(super) fn utf16be(b: &[u8]) -> String {
    char::decode_utf16(b.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])))
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// The data of the DDM chunk at `bytes[start..end]` as a range; errors for FAIL and other types.
pub(super) fn unwrap_chunk(
    bytes: &[u8],
    start: usize,
    end: usize,
    source: &str,
    problems: &mut Vec<String>,
) -> Result<(usize, usize)> {
    let avail = end - start;
    if avail < 8 {
        return Err(Error::new(
            ErrorKind::Truncated,
            format!("{source}: DDM chunk at byte {start}: {avail} bytes, a chunk header needs 8"),
        ));
    }
    let ty = &bytes[start..start + 4];
    let len = be32(bytes, start + 4) as usize;
    let data = start + 8;
    if len > end - data {
        return Err(Error::new(
            ErrorKind::Truncated,
            format!(
                "{source}: DDM chunk {} at byte {start} claims {len} bytes of data but {} remain",
                String::from_utf8_lossy(ty),
                end - data
            ),
        ));
    }
    if ty == CHUNK_FAIL {
        let d = &bytes[data..data + len];
        let (code, msg) = if d.len() >= 8 {
            let code = be32(d, 0);
            let n = (be32(d, 4) as usize).min((d.len() - 8) / 2);
            (code, utf16be(&d[8..8 + 2 * n]))
        } else {
            (0, String::new())
        };
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{source}: the VM answered with a DDM FAIL chunk at byte {start}: error {code}: {msg}"),
        ));
    }
    if ty != CHUNK_REAL {
        return Err(Error::new(
            ErrorKind::Malformed,
            format!(
                "{source}: DDM chunk at byte {start} is {:?}, not REAL (recent allocations)",
                String::from_utf8_lossy(ty)
            ),
        ));
    }
    if data + len < end {
        problems.push(format!(
            "{} byte(s) after the REAL chunk (which ends at byte {}) ignored",
            end - data - len,
            data + len
        ));
    }
    Ok((data, data + len))
}

pub(super) fn unwrap_jdwp(bytes: &[u8], source: &str, problems: &mut Vec<String>) -> Result<(Framing, usize, usize)> {
    let mut pos = 0usize;
    let mut handshake = false;
    while bytes[pos..].starts_with(JDWP_HANDSHAKE) {
        pos += JDWP_HANDSHAKE.len();
        handshake = true;
    }
    let mut packet = 0u32;
    let mut found: Option<(Framing, usize, usize)> = None;
    let mut errors: Vec<String> = Vec::new();
    while pos < bytes.len() {
        let left = bytes.len() - pos;
        if left < 11 {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!("{source}: JDWP packet {packet} at byte {pos}: {left} bytes, a packet header needs 11"),
            ));
        }
        let len = be32(bytes, pos) as usize;
        if len < 11 {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{source}: JDWP packet {packet} at byte {pos} claims {len} bytes, less than its 11-byte header"
                ),
            ));
        }
        if len > left {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!("{source}: JDWP packet {packet} at byte {pos} claims {len} bytes but {left} remain"),
            ));
        }
        let id = be32(bytes, pos + 4);
        let flags = bytes[pos + 8];
        if flags & 0x80 != 0 {
            let error = be16(bytes, pos + 9);
            let payload = pos + 11;
            let end = pos + len;
            let is_chunk = |t: &[u8; 4]| end - payload >= 8 && bytes[payload..payload + 4] == t[..];
            if error != 0 {
                errors.push(format!("JDWP reply packet {packet} at byte {pos} carries error code {error}"));
            } else if is_chunk(&CHUNK_REAL) && end - payload > 8 {
                if found.is_some() {
                    problems.push(format!("another REAL reply (JDWP packet {packet} at byte {pos}) ignored"));
                } else {
                    let (s, e) = unwrap_chunk(bytes, payload, end, source, problems)?;
                    if e > s {
                        found = Some((Framing::Jdwp { handshake, packet, id }, s, e));
                    }
                }
            } else if is_chunk(&CHUNK_FAIL) && found.is_none() {
                unwrap_chunk(bytes, payload, end, source, problems)?;
            }
        }
        pos += len;
        packet += 1;
    }
    found.ok_or_else(|| {
        let why = if errors.is_empty() { String::new() } else { format!(" ({})", errors.join("; ")) };
        Error::new(
            ErrorKind::NoData,
            format!("{source}: no JDWP reply carrying a REAL chunk with data among {packet} packet(s){why}"),
        )
    })
}
