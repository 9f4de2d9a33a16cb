//! The profile's messages read straight from the wire: samples split out by byte range,
//! functions, locations and sample fields parsed without prost where it would copy.

use super::*;

/// Splits a profile into its samples (byte ranges of each `sample` field's payload), its
/// strings, and everything else (copied, for prost).
/// The bytes of a profile without its samples and strings, the byte range of each sample, and
/// the string table (borrowed from the profile's bytes when they are UTF-8) with the number of
/// strings that were not valid UTF-8.
/// With `split_locations`, the byte range of each location and of each function too (not in
/// the rest then).
pub(super) type Split<'a> =
    (Vec<u8>, Vec<(usize, usize)>, Vec<Cow<'a, str>>, u64, Vec<(usize, usize)>, Vec<(usize, usize)>);

pub(super) fn split_samples<'a>(bytes: &'a [u8], name: &str, split_locations: bool) -> Result<Split<'a>> {
    let mut w = Wire::new(bytes);
    let mut rest = Vec::new();
    let mut samples = Vec::new();
    let mut locations = Vec::new();
    let mut functions = Vec::new();
    let mut strings = Vec::new();
    let mut invalid = 0u64;
    while !w.done() {
        let start = w.pos();
        let bad = |kind: ErrorKind, what: &str| {
            Error::new(
                kind,
                format!("{name}: not a valid pprof profile: {what} at byte {start} ({} bytes)", bytes.len()),
            )
        };
        let tag = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a field tag is cut off"))?;
        let (num, wt) = (tag >> 3, tag & 7);
        if num == 0 || !matches!(wt, 0 | 1 | 2 | 5) {
            return Err(bad(ErrorKind::Malformed, &format!("field {num} has wire type {wt}")));
        }
        if num == 2 && wt == 2 {
            let len = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a sample's length is cut off"))?;
            let at = w.pos();
            w.take(len)
                .ok_or_else(|| bad(ErrorKind::Truncated, &format!("a sample of {len} bytes runs past the end")))?;
            samples.push((at, w.pos()));
        } else if num == 4 && wt == 2 && split_locations {
            let len = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a location's length is cut off"))?;
            let at = w.pos();
            w.take(len)
                .ok_or_else(|| bad(ErrorKind::Truncated, &format!("a location of {len} bytes runs past the end")))?;
            locations.push((at, w.pos()));
        } else if num == 5 && wt == 2 && split_locations {
            let len = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a function's length is cut off"))?;
            let at = w.pos();
            w.take(len)
                .ok_or_else(|| bad(ErrorKind::Truncated, &format!("a function of {len} bytes runs past the end")))?;
            functions.push((at, w.pos()));
        } else if num == 6 && wt == 2 {
            // Strings are read as Go reads them: bytes that are not UTF-8 do not reject the
            // profile; they become U+FFFD, and the count is noted.
            let len = w.varint().ok_or_else(|| bad(ErrorKind::Truncated, "a string's length is cut off"))?;
            let b = w
                .take(len)
                .ok_or_else(|| bad(ErrorKind::Truncated, &format!("a string of {len} bytes runs past the end")))?;
            match std::str::from_utf8(b) {
                Ok(t) => strings.push(Cow::Borrowed(t)),
                Err(_) => {
                    invalid += 1;
                    strings.push(String::from_utf8_lossy(b));
                }
            }
        } else {
            w.skip(wt).ok_or_else(|| bad(ErrorKind::Truncated, &format!("field {num} runs past the end")))?;
            rest.extend_from_slice(&bytes[start..w.pos()]);
        }
    }
    Ok((rest, samples, strings, invalid, locations, functions))
}

/// A function as read: id, name, system name, file name (string indexes).
pub(super) type RawFunction = (u64, i64, i64, i64);

/// Reads each function's payload (`ranges` of `bytes`) as prost reads a `Function`; `None`
/// when one is anything but plain (prost then reads them all, and reports what is wrong).
pub(super) fn parse_functions(bytes: &[u8], ranges: &[(usize, usize)]) -> Option<Vec<RawFunction>> {
    let mut out = Vec::with_capacity(ranges.len());
    for &(start, end) in ranges {
        let mut w = Wire::new(&bytes[start..end]);
        let (mut id, mut name, mut system_name, mut file) = (0, 0, 0, 0);
        while !w.done() {
            match strict_tag(&mut w)? {
                (1, 0) => id = strict_varint(&mut w)?,
                (2, 0) => name = strict_varint(&mut w)? as i64,
                (3, 0) => system_name = strict_varint(&mut w)? as i64,
                (4, 0) => file = strict_varint(&mut w)? as i64,
                (5, 0) => {
                    strict_varint(&mut w)?;
                }
                (1..=5, _) => return None,
                (_, wt) => w.skip(wt)?,
            }
        }
        out.push((id, name, system_name, file));
    }
    Some(out)
}

/// Locations as read from the wire: (id, mapping id, address, first line, number of lines),
/// and every location's lines (function id, line, column), one after the other.
pub(super) struct RawLocations {
    pub(super) locations: Vec<(u64, u64, u64, usize, usize)>,
    pub(super) lines: Vec<(u64, i64, i64)>,
}

/// A varint of at most 9 bytes: `None` for longer ones (negative numbers among them, which
/// prost then reads, or rejects when they have more than 64 bits) and cut-off ones.
pub(super) fn strict_varint(w: &mut Wire<'_>) -> Option<u64> {
    let at = w.pos();
    let v = w.varint()?;
    (w.pos() - at < 10).then_some(v)
}

/// The next field's tag as prost reads it: `None` for field 0, wire types 3, 4, 6, 7 (groups
/// included: this reader leaves them to prost) and tags past 32 bits.
pub(super) fn strict_tag(w: &mut Wire<'_>) -> Option<(u64, u64)> {
    let t = strict_varint(w)?;
    let (num, wt) = (t >> 3, t & 7);
    (t <= u64::from(u32::MAX) && num != 0 && matches!(wt, 0 | 1 | 2 | 5)).then_some((num, wt))
}

/// Reads each location's payload (`ranges` of `bytes`) as prost reads a `Location`; `None`
/// when one is anything but plain (prost then reads them all, and reports what is wrong).
pub(super) fn parse_locations(bytes: &[u8], ranges: &[(usize, usize)]) -> Option<RawLocations> {
    let mut out = RawLocations { locations: Vec::with_capacity(ranges.len()), lines: Vec::with_capacity(ranges.len()) };
    for &(start, end) in ranges {
        let mut w = Wire::new(&bytes[start..end]);
        let (mut id, mut mapping, mut address) = (0, 0, 0);
        let first = out.lines.len();
        while !w.done() {
            match strict_tag(&mut w)? {
                (1, 0) => id = strict_varint(&mut w)?,
                (2, 0) => mapping = strict_varint(&mut w)?,
                (3, 0) => address = strict_varint(&mut w)?,
                (4, 2) => {
                    let len = strict_varint(&mut w)?;
                    let mut l = Wire::new(w.take(len)?);
                    let (mut function, mut line, mut column) = (0, 0, 0);
                    while !l.done() {
                        match strict_tag(&mut l)? {
                            (1, 0) => function = strict_varint(&mut l)?,
                            (2, 0) => line = strict_varint(&mut l)? as i64,
                            (3, 0) => column = strict_varint(&mut l)? as i64,
                            (1..=3, _) => return None,
                            (_, wt) => l.skip(wt)?,
                        }
                    }
                    out.lines.push((function, line, column));
                }
                (5, 0) => {
                    strict_varint(&mut w)?;
                }
                (1..=5, _) => return None,
                (_, wt) => w.skip(wt)?,
            }
        }
        out.locations.push((id, mapping, address, first, out.lines.len() - first));
    }
    Some(out)
}

/// One label as written: key, str, num, num_unit (string indexes and a number).
#[derive(Default, Clone, Copy)]
pub(super) struct RawLabel {
    pub(super) key: i64,
    pub(super) str: i64,
    pub(super) num: i64,
    pub(super) num_unit: i64,
}

/// Reads one sample's payload into location ids, values and labels.
pub(super) fn parse_sample(
    body: &[u8],
    locs: &mut Vec<u64>,
    values: &mut Vec<i64>,
    labels: &mut Vec<RawLabel>,
) -> Option<()> {
    locs.clear();
    values.clear();
    labels.clear();
    let mut w = Wire::new(body);
    while !w.done() {
        let tag = w.varint()?;
        match (tag >> 3, tag & 7) {
            (1, 0) => locs.push(w.varint()?),
            (1, 2) => {
                // Packed ids, at most one per byte: written into room made first.
                let len = w.varint()?;
                let mut p = Wire::new(w.take(len)?);
                let base = locs.len();
                locs.resize(base + p.remaining(), 0);
                let mut n = base;
                while !p.done() {
                    locs[n] = p.varint()?;
                    n += 1;
                }
                locs.truncate(n);
            }
            (2, 0) => values.push(w.varint()? as i64),
            (2, 2) => {
                let len = w.varint()?;
                let mut p = Wire::new(w.take(len)?);
                while !p.done() {
                    values.push(p.varint()? as i64);
                }
            }
            (3, 2) => {
                let len = w.varint()?;
                let mut p = Wire::new(w.take(len)?);
                let mut l = RawLabel::default();
                while !p.done() {
                    let t = p.varint()?;
                    match (t >> 3, t & 7) {
                        (1, 0) => l.key = p.varint()? as i64,
                        (2, 0) => l.str = p.varint()? as i64,
                        (3, 0) => l.num = p.varint()? as i64,
                        (4, 0) => l.num_unit = p.varint()? as i64,
                        (_, wt) => p.skip(wt)?,
                    }
                }
                labels.push(l);
            }
            (0, _) => return None,
            (_, wt) => w.skip(wt)?,
        }
    }
    Some(())
}
