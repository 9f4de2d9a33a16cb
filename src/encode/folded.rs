//! Folded stacks (Brendan Gregg's "collapsed" format), one line per distinct stack:
//! `root;caller;…;leaf VALUE`.
//!
//! Escaping rule, so that every line splits back into the same frames: inside a frame label a
//! backslash is written `\\`, a semicolon `\;`, a line feed `\n` and a carriage return `\r`.
//! The value follows the last space of the line. Lines with value 0 are left out; stacks
//! whose labels are identical (frames that differ only by address) are summed into one line.
//! Lines are sorted by their text, so output is deterministic.

use std::collections::BTreeMap;

use super::labels::labelled_samples;
use crate::model::Profile;

/// Options of the folded encoder.
#[derive(Debug, Clone, Default)]
pub struct FoldedOptions {
    /// Which sample value to write (index into the profile's sample types). Default: 0.
    pub value_index: usize,
    /// Append ART annotations to frame names. Default: false.
    pub annotations: bool,
}

/// Escapes one frame label (see the module docs).
pub fn escape_frame(label: &str) -> String {
    let mut s = String::with_capacity(label.len());
    for c in label.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            ';' => s.push_str("\\;"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            c => s.push(c),
        }
    }
    s
}

/// Splits a folded line back into frames and value (the inverse of [`encode_folded`]'s
/// escaping); `None` for a line that has no value.
pub fn parse_folded_line(line: &str) -> Option<(Vec<String>, i64)> {
    let (stack, value) = line.rsplit_once(' ')?;
    let value = value.trim().parse().ok()?;
    let mut frames = Vec::new();
    let mut cur = String::new();
    let mut chars = stack.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => cur.push('\n'),
                Some('r') => cur.push('\r'),
                Some(o) => cur.push(o),
                None => cur.push('\\'),
            },
            ';' => frames.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    frames.push(cur);
    Some((frames, value))
}

/// Folded lines (label text -> summed value), sorted.
pub fn folded_lines(profile: &Profile, opts: &FoldedOptions, escape: fn(&str) -> String) -> BTreeMap<String, i64> {
    let mut lines: BTreeMap<String, i64> = BTreeMap::new();
    for (labels, v) in labelled_samples(profile, opts.value_index, opts.annotations) {
        let key = labels.iter().map(|l| escape(l)).collect::<Vec<_>>().join(";");
        *lines.entry(key).or_default() += v;
    }
    lines
}

/// Encodes a profile as folded stacks.
pub fn encode_folded(profile: &Profile, opts: &FoldedOptions) -> String {
    let mut out = String::new();
    for (k, v) in folded_lines(profile, opts, escape_frame) {
        if v != 0 {
            out.push_str(&k);
            out.push(' ');
            out.push_str(&v.to_string());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips() {
        let frames = ["a;b", "c\\d", "e\nf", "plain name (with) spaces"];
        let line = format!("{} 42", frames.iter().map(|f| escape_frame(f)).collect::<Vec<_>>().join(";"));
        let (back, v) = parse_folded_line(&line).unwrap();
        assert_eq!(back, frames);
        assert_eq!(v, 42);
    }
}
