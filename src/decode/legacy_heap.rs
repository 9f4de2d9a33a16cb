//! Legacy text heap profiles, as gperftools' heap profiler and older Go runtimes wrote them and
//! as `go tool pprof` still reads them:
//!
//! ```text
//! heap profile:    3:    6144 [    10:    20480] @ heapprofile
//!      2:     4096 [     6:    12288] @ 0x4005d1 0x400612 0x7f2a3c021b45
//!      1:     2048 [     4:     8192] @ 0x4005e9 0x400612
//!
//! MAPPED_LIBRARIES:
//! 00400000-00401000 r-xp 00000000 08:01 1234 /usr/bin/app
//! ```
//!
//! The profile is read exactly as go's `profile/legacy_profile.go` (`parseHeap`, then its
//! memory-map and mapping passes) reads it, into the pprof message go would build, which the
//! pprof decoder then reads like any other profile:
//!
//! * **Header** (`heap profile: N: B [ N: B] @ KIND[/RATE]`): `heapprofile` (gperftools) is
//!   period 1, values as written; `heap_v2/RATE` and `heapz_v2/RATE` are sampled with mean
//!   RATE bytes, and each value is unsampled as go does it: with `S` the sample's average
//!   object size, count and bytes are multiplied by `1 / (1 - exp(-S/RATE))` and truncated (no
//!   scaling when RATE ≤ 1); `heap/RATE` is the same with half the rate. `growthz` and
//!   `fragmentationz` headers are period 1, unscaled.
//! * **Sample types**: `alloc_objects`, `alloc_space`, `inuse_objects`, `inuse_space` when the
//!   header's allocation totals differ from its in-use totals (and are not 0), else `objects`,
//!   `space`; period type `space`/`bytes`. The default (go's) is the last type.
//! * **Samples**: `inuse_count: inuse_bytes [alloc_count: alloc_bytes] @ 0xADDR ...`, leaf
//!   first; every address is taken minus 1 (a return address, moved onto its call); a numeric
//!   label `bytes` holds the block size (bytes / count, of the in-use pair unless its count is
//!   0). A count of 0 with bytes is an error, as in go.
//! * **Mappings**: the `/proc/self/maps` lines after `MAPPED_LIBRARIES:` (or `--- Memory map:
//!   ---`); lines that are not executable are left out, adjacent pieces of one file are
//!   joined, the main binary goes first, and an address outside every mapping falls in a
//!   mapping without a file covering all addresses (go's rules, `massageMappings` and
//!   `remapMappingIDs`).
//!
//!   Lines in go's brief form (`start-end: file (@offset) buildid`, as gperftools' own
//!   `--- Memory map: ---` sections have them) and `attr=value` lines (`$attr` then stands
//!   for value) are read as go reads them; glog prefixes on map lines are not removed.
//!
//! Not read (refused as inputs of no known format): the other legacy text profiles go reads
//! (CPU, `--- contention`, `--- threadz`, Go's `goroutine profile: total N` count profiles,
//! Java `--- heapz`): those are no heap profiles and heapconv does not take them. go also marks legacy heap profiles
//! with `drop_frames` (the allocator's own functions, hidden once symbolized); the profile
//! read here has no function names, so nothing would be dropped, and it is not set.

use prost::Message;

use crate::error::{Error, ErrorKind, Result};
use crate::model::FlatProfile;
use crate::proto::pprof as pp;

/// The text every legacy heap profile's first line holds.
const MARK: &str = "heap profile:";

/// True when `head` (the first bytes of an input) is a legacy text heap profile: its first
/// line holds `heap profile:`.
pub fn looks_like_legacy_heap(head: &[u8]) -> bool {
    let line = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    line.windows(MARK.len()).any(|w| w == MARK.as_bytes())
}

/// Decodes a legacy text heap profile (see the module documentation) into a [`FlatProfile`].
pub fn decode_legacy_heap(bytes: &[u8], name: &str) -> Result<FlatProfile> {
    let msg = legacy_heap_message(bytes, name)?;
    crate::decode::pprof::decode_pprof(&msg.encode_to_vec(), name)
}

fn bad(name: &str, line: usize, what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Malformed, format!("{name}: line {line}: {what}"))
}

/// How values are unsampled.
#[derive(Clone, Copy, PartialEq)]
enum Sampling {
    /// As written.
    None,
    /// heapz v2: a Poisson process of mean `period` bytes.
    V2,
}

/// A header: (sampling, period, has allocation values).
fn parse_header(line: &str) -> Option<(Sampling, i64, bool)> {
    let at = line.find(MARK)?;
    let mut c = Cursor { s: &line.as_bytes()[at + MARK.len()..], pos: 0 };
    c.spaces();
    let n1 = c.digits()?;
    c.byte(b':')?;
    c.spaces();
    let n2 = c.digits()?;
    c.spaces();
    c.byte(b'[')?;
    c.spaces();
    let n3 = c.digits()?;
    c.byte(b':')?;
    c.spaces();
    let n4 = c.digits()?;
    c.spaces();
    c.byte(b']')?;
    let after_bracket = c.pos;
    c.spaces();
    c.byte(b'@')?;
    c.spaces();
    let word = c.take_while(|b| b == b'_' || b.is_ascii_lowercase() || b.is_ascii_digit());
    if word.starts_with("heap") {
        let _ = c.byte(b'/');
        let rate = c.take_while(|b| b.is_ascii_digit());
        let period: i64 = if rate.is_empty() { 0 } else { rate.parse().ok()? };
        let has_alloc = (n3 != n1 && n3 != "0") || (n4 != n2 && n4 != "0");
        return match word {
            "heapz_v2" | "heap_v2" => Some((Sampling::V2, period, has_alloc)),
            "heapprofile" => Some((Sampling::None, 1, has_alloc)),
            "heap" => Some((Sampling::V2, period / 2, has_alloc)),
            _ => None,
        };
    }
    // growthz / fragmentationz: `] @ growth` with single spaces, as go's expressions say.
    let rest = &line.as_bytes()[at + MARK.len() + after_bracket..];
    if rest.starts_with(b" @ growth") || rest.starts_with(b" @ fragmentation") {
        return Some((Sampling::None, 1, false));
    }
    None
}

struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn spaces(&mut self) {
        while self.s.get(self.pos) == Some(&b' ') {
            self.pos += 1;
        }
    }
    fn byte(&mut self, b: u8) -> Option<()> {
        (self.s.get(self.pos) == Some(&b)).then(|| self.pos += 1)
    }
    fn take_while(&mut self, f: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        while self.s.get(self.pos).is_some_and(|&b| f(b)) {
            self.pos += 1;
        }
        std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("")
    }
    fn digits(&mut self) -> Option<&'a str> {
        let d = self.take_while(|b| b.is_ascii_digit());
        (!d.is_empty()).then_some(d)
    }
    fn signed(&mut self) -> Option<String> {
        let start = self.pos;
        let _ = self.byte(b'-');
        if self.digits().is_none() {
            self.pos = start;
            return None;
        }
        Some(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }
}

/// A sample line at `start`: (inuse count, inuse bytes, alloc count, alloc bytes, the text
/// after `@`), as `(-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)` matches it.
type SampleFields = (String, String, String, String, String);

fn sample_at(line: &[u8], start: usize) -> Option<SampleFields> {
    let mut c = Cursor { s: line, pos: start };
    let a = c.signed()?;
    c.byte(b':')?;
    c.spaces();
    let b = c.signed()?;
    c.spaces();
    c.byte(b'[')?;
    c.spaces();
    let x = c.digits()?.to_owned();
    c.byte(b':')?;
    c.spaces();
    let y = c.digits()?.to_owned();
    c.spaces();
    c.byte(b']')?;
    c.byte(b' ')?;
    c.byte(b'@')?;
    let addrs = c.take_while(|b| b == b' ' || b == b'x' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    Some((a, b, x, y, addrs.to_owned()))
}

/// The leftmost match of go's sample expression in `line`. A match starts at a `-` or at the
/// first digit of a run (one starting inside a run would read the same digits to the same
/// end), so the line is read in linear time.
fn parse_sample(line: &str) -> Option<SampleFields> {
    let b = line.as_bytes();
    (0..b.len())
        .filter(|&i| b[i] == b'-' || (b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_digit())))
        .find_map(|i| sample_at(b, i))
}

/// go's `scaleHeapSample`.
fn scale(count: i64, size: i64, rate: i64) -> (i64, i64) {
    if count == 0 || size == 0 {
        return (0, 0);
    }
    if rate <= 1 {
        return (count, size);
    }
    let avg = size as f64 / count as f64;
    let s = 1.0 / (1.0 - (-avg / rate as f64).exp());
    ((count as f64 * s) as i64, (size as f64 * s) as i64)
}

/// The hexadecimal numbers (`0x[0-9a-f]+`) in `s`.
fn hex_addresses(s: &str, name: &str, line: usize) -> Result<Vec<u64>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'0' && b.get(i + 1) == Some(&b'x') {
            let start = i + 2;
            let mut j = start;
            while j < b.len() && (b[j].is_ascii_digit() || (b'a'..=b'f').contains(&b[j])) {
                j += 1;
            }
            if j > start {
                let v = u64::from_str_radix(&s[start..j], 16)
                    .map_err(|_| bad(name, line, format!("address 0x{} does not fit in 64 bits", &s[start..j])))?;
                out.push(v);
                i = j;
                continue;
            }
        }
        i += 1;
    }
    Ok(out)
}

fn is_map_sentinel(line: &str) -> bool {
    line.contains("--- Memory map: ---") || line.contains("MAPPED_LIBRARIES:")
}

/// A mapping as go builds it.
#[derive(Clone)]
struct Map {
    start: u64,
    limit: u64,
    offset: u64,
    file: String,
}

/// A `/proc/self/maps` line (`start-end perms offset dev inode [path]`); `None` for a line of
/// another shape, `Some(None)` for one that is not executable.
fn parse_map_line(line: &str) -> Option<Option<Map>> {
    let mut t = line.split_whitespace();
    let range = t.next()?;
    let (a, b) = range.split_once('-')?;
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let (start, limit) = (hex(a)?, hex(b.trim_end_matches(':'))?);
    let perm = t.next()?;
    if !perm.bytes().all(|c| b"-rwxp".contains(&c)) {
        return None;
    }
    let offset = hex(t.next()?)?;
    let dev = t.next()?;
    let (d1, d2) = dev.split_once(':')?;
    hex(d1)?;
    hex(d2)?;
    let inode = t.next()?;
    if inode.is_empty() || !inode.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let file = t.next().unwrap_or("").to_owned();
    if !perm.contains('x') {
        return Some(None);
    }
    Some(Some(Map { start, limit, offset, file }))
}

/// `line` with every `$attr` replaced by its value (at each place, the first attribute that
/// matches, in the order they were defined, as go's `strings.NewReplacer`).
fn replace_attrs(line: &str, attrs: &[(String, String)]) -> String {
    if attrs.is_empty() {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    'outer: while !rest.is_empty() {
        for (k, v) in attrs {
            if let Some(r) = rest.strip_prefix(k.as_str()) {
                out.push_str(v);
                rest = r;
                continue 'outer;
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// go's brief mapping form, `start-end[:] [perms] [file] [(@offset)] [buildid]` (the pprof
/// tools' own `--- Memory map: ---` sections), read as go's expression for it reads it (every
/// part after the range optional, the range's end possibly the start's last digit);
/// `Some(None)` for a line that is not executable.
fn parse_brief_map_line(line: &str) -> Option<Option<Map>> {
    let b = line.as_bytes();
    let hex_run = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
    let ws_run = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_whitespace()).count();
    let skip_0x = |from: usize| if b[from..].starts_with(b"0x") && hex_run(from + 2) > 0 { from + 2 } else { from };
    let i0 = skip_0x(ws_run(0));
    let n1 = hex_run(i0);
    if n1 == 0 {
        return None;
    }
    // `[\s-]?\s*(?:0x)?` then the end's digits; else the start's last digit is the end.
    let mut k = i0 + n1;
    if b.get(k).is_some_and(|&c| c == b'-' || c.is_ascii_whitespace()) {
        k += 1;
    }
    k += ws_run(k);
    k = skip_0x(k);
    let (start, end, mut i) = if hex_run(k) > 0 {
        let n2 = hex_run(k);
        (&line[i0..i0 + n1], &line[k..k + n2], k + n2)
    } else if n1 >= 2 {
        (&line[i0..i0 + n1 - 1], &line[i0 + n1 - 1..i0 + n1], i0 + n1)
    } else {
        return None;
    };
    if b.get(i) == Some(&b':') {
        i += 1;
    }
    let token = |from: usize, ok: &dyn Fn(u8) -> bool| -> Option<(usize, usize)> {
        let w = ws_run(from);
        if w == 0 {
            return None;
        }
        let n = b[from + w..].iter().take_while(|&&c| ok(c)).count();
        (n > 0).then_some((from + w, from + w + n))
    };
    let mut perm = "";
    if let Some((a, z)) = token(i, &|c| b"-rwxp".contains(&c)) {
        perm = &line[a..z];
        i = z;
    }
    let mut file = "";
    if let Some((a, z)) = token(i, &|c| !c.is_ascii_whitespace()) {
        file = &line[a..z];
        i = z;
    }
    let mut offset = "";
    let w = ws_run(i);
    if w > 0 && b[i + w..].starts_with(b"(@") {
        let n = hex_run(i + w + 2);
        if n > 0 && b.get(i + w + 2 + n) == Some(&b')') {
            offset = &line[i + w + 2..i + w + 2 + n];
        }
    }
    if !perm.is_empty() && !perm.contains('x') {
        return Some(None);
    }
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    Some(Some(Map {
        start: hex(start)?,
        limit: hex(end)?,
        offset: if offset.is_empty() { 0 } else { hex(offset)? },
        file: file.to_owned(),
    }))
}

fn adjacent(m1: &Map, m2: &Map) -> bool {
    if !m1.file.is_empty() && !m2.file.is_empty() && m1.file != m2.file {
        return false;
    }
    if m1.limit != m2.start {
        return false;
    }
    // Go's uint64 arithmetic wraps (a map line may end before it starts): so does this.
    if m1.offset != 0 && m2.offset != 0 && m1.offset.wrapping_add(m1.limit.wrapping_sub(m1.start)) != m2.offset {
        return false;
    }
    true
}

/// True for file names go takes for shared libraries (`.so`, `.so.N`, `.so_N`).
fn is_library(file: &str) -> bool {
    file.ends_with(".so")
        || file.match_indices(".so").any(|(i, _)| {
            matches!(file.as_bytes().get(i + 3), Some(b'.' | b'_'))
                && file.as_bytes().get(i + 4).is_some_and(u8::is_ascii_digit)
        })
}

/// The pprof message go builds of a legacy heap profile.
fn legacy_heap_message(bytes: &[u8], name: &str) -> Result<pp::Profile> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).enumerate();
    let (_, first) = lines.next().ok_or_else(|| bad(name, 1, "empty"))?;
    let (sampling, period, has_alloc) = parse_header(first).ok_or_else(|| {
        Error::new(ErrorKind::Malformed, format!("{name}: not a legacy heap profile header: {first:?}"))
    })?;
    // (values, block size, addresses) per sample.
    let mut samples: Vec<(Vec<i64>, i64, Vec<u64>)> = Vec::new();
    let mut in_maps = false;
    let mut attrs: Vec<(String, String)> = Vec::new();
    let mut maps: Vec<Map> = Vec::new();
    for (i, raw) in lines {
        let n = i + 1;
        if in_maps {
            let line = replace_attrs(raw, &attrs);
            if let Some(m) = parse_map_line(&line).or_else(|| parse_brief_map_line(&line)) {
                maps.extend(m);
            } else if let Some((k, v)) = line.split_once('=') {
                // `attr=value`: `$attr` stands for value in the lines after it.
                attrs.push((format!("${}", k.trim()), v.trim().to_owned()));
            }
            continue;
        }
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if is_map_sentinel(line) {
            in_maps = true;
            continue;
        }
        let (ic, is, ac, asz, addrs) =
            parse_sample(line).ok_or_else(|| bad(name, n, format!("not a heap profile sample: {line:?}")))?;
        let mut values = Vec::with_capacity(4);
        let mut block = 0i64;
        let mut add = |count: &str, size: &str, label: &str| -> Result<()> {
            let count: i64 = count.parse().map_err(|_| bad(name, n, format!("malformed sample: {line}")))?;
            let size: i64 = size.parse().map_err(|_| bad(name, n, format!("malformed sample: {line}")))?;
            if count == 0 && size != 0 {
                return Err(bad(name, n, format!("{label} count was 0 but {label} bytes was {size}")));
            }
            let (mut c, mut s) = (count, size);
            if count != 0 {
                block = size / count;
                if sampling == Sampling::V2 {
                    (c, s) = scale(count, size, period);
                }
            }
            values.push(c);
            values.push(s);
            Ok(())
        };
        if has_alloc {
            add(&ac, &asz, "allocation")?;
        }
        add(&ic, &is, "inuse")?;
        let addrs = hex_addresses(&addrs, name, n)?;
        samples.push((values, block, addrs));
    }

    // Locations: one per address (minus 1), numbered in order of first use.
    let mut loc_index: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    let mut loc_addrs: Vec<u64> = Vec::new();
    let mut sample_locs: Vec<Vec<u64>> = Vec::with_capacity(samples.len());
    for (_, _, addrs) in &samples {
        sample_locs.push(
            addrs
                .iter()
                .map(|&a| {
                    let a = a.wrapping_sub(1);
                    *loc_index.entry(a).or_insert_with(|| {
                        loc_addrs.push(a);
                        loc_addrs.len() as u64
                    })
                })
                .collect(),
        );
    }

    // massageMappings: adjacent pieces joined, the main binary first.
    let mut joined: Vec<Map> = Vec::new();
    for m in maps {
        match joined.last_mut() {
            Some(lm) if adjacent(lm, &m) => {
                lm.limit = m.limit;
                if !m.file.is_empty() {
                    lm.file = m.file;
                }
            }
            _ => joined.push(m),
        }
    }
    let mut maps = joined;
    if let Some(i) = maps.iter().position(|m| {
        let f = m.file.replace("(deleted)", "");
        let f = f.trim();
        !f.is_empty() && !is_library(f) && !f.starts_with('[')
    }) {
        maps.swap(0, i);
    }
    // remapMappingIDs.
    if maps.first().is_some_and(|m| m.file.starts_with("/anon_hugepage"))
        && maps.len() > 1
        && maps[0].limit == maps[1].start
    {
        maps.remove(0);
    }
    if let Some(m) = maps.first_mut()
        && m.start.wrapping_sub(m.offset) == 0x400000
    {
        m.start = 0x400000;
        m.offset = 0;
    }
    let mut loc_map: Vec<u64> = vec![0; loc_addrs.len()];
    let mut fake: Option<usize> = None;
    'loc: for (li, &a) in loc_addrs.iter().enumerate() {
        if a == 0 {
            continue;
        }
        for (mi, m) in maps.iter().enumerate() {
            if m.start <= a && a < m.limit {
                loc_map[li] = mi as u64 + 1;
                continue 'loc;
            }
        }
        for (mi, m) in maps.iter_mut().enumerate() {
            if m.offset != 0 && m.start.wrapping_sub(m.offset) <= a && a < m.start {
                m.start -= m.offset;
                m.offset = 0;
                loc_map[li] = mi as u64 + 1;
                continue 'loc;
            }
        }
        let f = *fake.get_or_insert_with(|| {
            maps.push(Map { start: 0, limit: u64::MAX, offset: 0, file: String::new() });
            maps.len() - 1
        });
        loc_map[li] = f as u64 + 1;
    }

    let mut strings: Vec<String> = vec![String::new()];
    let mut index: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    let mut s = |t: &str| -> i64 {
        if t.is_empty() {
            return 0;
        }
        *index.entry(t.to_owned()).or_insert_with(|| {
            strings.push(t.to_owned());
            strings.len() as i64 - 1
        })
    };
    let types: &[(&str, &str)] = if has_alloc {
        &[("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"), ("inuse_space", "bytes")]
    } else {
        &[("objects", "count"), ("space", "bytes")]
    };
    let sample_type = types.iter().map(|(t, u)| pp::ValueType { r#type: s(t), unit: s(u) }).collect();
    let period_type = Some(pp::ValueType { r#type: s("space"), unit: s("bytes") });
    let bytes_key = s("bytes");
    let sample = samples
        .iter()
        .zip(&sample_locs)
        .map(|((values, block, _), locs)| pp::Sample {
            location_id: locs.clone(),
            value: values.clone(),
            label: vec![pp::Label { key: bytes_key, num: *block, ..Default::default() }],
        })
        .collect();
    let mapping = maps
        .iter()
        .enumerate()
        .map(|(i, m)| pp::Mapping {
            id: i as u64 + 1,
            memory_start: m.start,
            memory_limit: m.limit,
            file_offset: m.offset,
            filename: s(&m.file),
            ..Default::default()
        })
        .collect();
    let location = loc_addrs
        .iter()
        .enumerate()
        .map(|(i, &a)| pp::Location { id: i as u64 + 1, mapping_id: loc_map[i], address: a, ..Default::default() })
        .collect();
    Ok(pp::Profile {
        sample_type,
        sample,
        mapping,
        location,
        string_table: strings,
        period_type,
        period,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_as_go_reads_them() {
        assert!(matches!(parse_header("heap profile: 1: 2 [ 3: 4] @ heapprofile"), Some((Sampling::None, 1, true))));
        assert!(matches!(parse_header("heap profile: 1: 2 [ 1: 2] @ heapprofile"), Some((Sampling::None, 1, false))));
        assert!(matches!(
            parse_header("heap profile: 1: 2 [ 0: 0] @ heap_v2/524288"),
            Some((Sampling::V2, 524288, false))
        ));
        assert!(matches!(
            parse_header("heap profile: 1: 2 [ 3: 4] @ heap/1048576"),
            Some((Sampling::V2, 524288, true))
        ));
        assert!(matches!(parse_header("heap profile: 1: 2 [ 3: 4] @ growthz"), Some((Sampling::None, 1, false))));
        assert!(parse_header("heap profile: 1: 2 [ 3: 4] @ other").is_none());
        assert!(parse_header("cpu profile").is_none());
    }

    #[test]
    fn unsampling_is_gos() {
        // 1 object of 1 MiB at rate 512 KiB: 1 / (1 - e^-2).
        let (c, s) = scale(1, 1 << 20, 1 << 19);
        assert_eq!((c, s), (1, 1_212_696));
        assert_eq!(scale(3, 0, 100), (0, 0));
        assert_eq!(scale(3, 30, 1), (3, 30));
    }

    #[test]
    fn samples_and_maps() {
        let (a, b, x, y, addrs) = parse_sample("1: 2 [ 3: 4] @ 0x10 0x20").unwrap();
        assert_eq!((a.as_str(), b.as_str(), x.as_str(), y.as_str()), ("1", "2", "3", "4"));
        assert_eq!(hex_addresses(&addrs, "t", 1).unwrap(), [0x10, 0x20]);
        let m = parse_map_line("00400000-00401000 r-xp 00000000 08:01 1234 /usr/bin/app").unwrap().unwrap();
        assert_eq!((m.start, m.limit, m.file.as_str()), (0x400000, 0x401000, "/usr/bin/app"));
        assert!(parse_map_line("00600000-00601000 rw-p 00000000 08:01 1234 /usr/bin/app").unwrap().is_none());
        let m = parse_brief_map_line("  00400000-00fcb000: /home/server (@1000)").unwrap().unwrap();
        assert_eq!((m.start, m.limit, m.offset, m.file.as_str()), (0x400000, 0xfcb000, 0x1000, "/home/server"));
        assert_eq!(replace_attrs("a $source/x", &[("$source".to_owned(), "/home".to_owned())]), "a /home/x");
        assert!(
            is_library("/lib/x86_64-linux-gnu/libc.so.6") && is_library("libfoo.so") && !is_library("/usr/bin/app")
        );
    }
}
