//! Sample types across inputs: which types to keep ([`TypeSelector`]), how the types of two
//! inputs are matched, and how their units are converted into one.

use std::cmp::Ordering;

use crate::model::ValueKind;

/// A sample type to keep: by its name, or by what it measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeSelector {
    /// The type with this name (pprof `sample_type.type`).
    Name(String),
    /// The first type with this meaning.
    Kind(ValueKind),
}

impl TypeSelector {
    /// Reads a selector: `total-count`, `total-size`, `unreleased-count` and `unreleased-size`
    /// are meanings, anything else a type name.
    pub fn parse(s: &str) -> TypeSelector {
        match s {
            "total-count" => TypeSelector::Kind(ValueKind::TotalCount),
            "total-size" => TypeSelector::Kind(ValueKind::TotalSize),
            "unreleased-count" => TypeSelector::Kind(ValueKind::UnreleasedCount),
            "unreleased-size" => TypeSelector::Kind(ValueKind::UnreleasedSize),
            name => TypeSelector::Name(name.to_owned()),
        }
    }

    pub(super) fn describe(&self) -> String {
        match self {
            TypeSelector::Name(n) => format!("{n:?}"),
            TypeSelector::Kind(k) => meaning_name(*k).to_owned(),
        }
    }
}

pub(super) fn meaning_name(k: ValueKind) -> &'static str {
    match k {
        ValueKind::TotalCount => "total-count",
        ValueKind::TotalSize => "total-size",
        ValueKind::UnreleasedCount => "unreleased-count",
        ValueKind::UnreleasedSize => "unreleased-size",
        ValueKind::Other => "other",
    }
}

/// Go's name for a sample type of this meaning.
pub(super) fn go_name(k: ValueKind) -> Option<&'static str> {
    match k {
        ValueKind::TotalCount => Some("alloc_objects"),
        ValueKind::TotalSize => Some("alloc_space"),
        ValueKind::UnreleasedCount => Some("inuse_objects"),
        ValueKind::UnreleasedSize => Some("inuse_space"),
        ValueKind::Other => None,
    }
}

/// One sample type of the merge.
#[derive(Debug, Clone)]
pub(super) struct Column {
    pub(super) name: String,
    pub(super) unit: String,
    pub(super) kind: ValueKind,
    /// Every input named it `name`.
    pub(super) agreed: bool,
}

pub(super) fn types_text(cols: &[Column]) -> String {
    let v: Vec<String> = cols.iter().map(|c| format!("{}/{}", c.name, c.unit)).collect();
    format!("[{}]", v.join(", "))
}

/// The unit class (memory, time) and factor to the class's base unit of a unit pprof knows.
pub(super) fn sniff_unit(unit: &str) -> Option<(u8, u64)> {
    let mut u = unit.to_lowercase();
    if u.chars().count() > 2 {
        if let Some(t) = u.strip_suffix('s') {
            u = t.to_owned();
        }
    }
    let mem: &[(&[&str], u64)] = &[
        (&["b", "byte"], 1),
        (&["kb", "kbyte", "kilobyte"], 1 << 10),
        (&["mb", "mbyte", "megabyte"], 1 << 20),
        (&["gb", "gbyte", "gigabyte"], 1 << 30),
        (&["tb", "tbyte", "terabyte"], 1 << 40),
        (&["pb", "pbyte", "petabyte"], 1 << 50),
    ];
    let time: &[(&[&str], u64)] = &[
        (&["ns", "nanosecond"], 1),
        (&["μs", "us", "microsecond"], 1_000),
        (&["ms", "millisecond"], 1_000_000),
        (&["s", "sec", "second"], 1_000_000_000),
        (&["hour", "hr"], 3_600_000_000_000),
    ];
    for (class, table) in [(0u8, mem), (1u8, time)] {
        for (aliases, f) in table {
            if aliases.contains(&u.as_str()) {
                return Some((class, *f));
            }
        }
    }
    None
}

/// Merges two units of one sample type: (merged unit, factor for values in `a`, factor for
/// values in `b`), or `None` when pprof could not convert one into the other.
pub(super) fn merge_units(a: &str, b: &str) -> Option<(String, i64, i64)> {
    if a == b {
        return Some((a.to_owned(), 1, 1));
    }
    let ((ca, fa), (cb, fb)) = (sniff_unit(a)?, sniff_unit(b)?);
    if ca != cb {
        return None;
    }
    let ratio = |hi: u64, lo: u64| i64::try_from(hi / lo).unwrap_or(i64::MAX);
    Some(match fa.cmp(&fb) {
        Ordering::Greater => (b.to_owned(), ratio(fa, fb), 1),
        Ordering::Less => (a.to_owned(), 1, ratio(fb, fa)),
        Ordering::Equal => (a.min(b).to_owned(), 1, 1),
    })
}

pub(super) fn scale_value(v: i64, f: i64) -> i64 {
    if f == 1 { v } else { v.saturating_mul(f) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_merge_to_the_finest() {
        assert_eq!(merge_units("bytes", "bytes"), Some(("bytes".to_owned(), 1, 1)));
        assert_eq!(merge_units("kilobytes", "bytes"), Some(("bytes".to_owned(), 1024, 1)));
        assert_eq!(merge_units("bytes", "MB"), Some(("bytes".to_owned(), 1, 1 << 20)));
        assert_eq!(merge_units("B", "bytes"), Some(("B".to_owned(), 1, 1)));
        assert_eq!(merge_units("ms", "nanoseconds"), Some(("nanoseconds".to_owned(), 1_000_000, 1)));
        assert_eq!(merge_units("bytes", "count"), None);
        assert_eq!(merge_units("bytes", "seconds"), None);
    }

    #[test]
    fn selectors_parse() {
        assert_eq!(TypeSelector::parse("unreleased-size"), TypeSelector::Kind(ValueKind::UnreleasedSize));
        assert_eq!(TypeSelector::parse("inuse_space"), TypeSelector::Name("inuse_space".to_owned()));
    }
}
