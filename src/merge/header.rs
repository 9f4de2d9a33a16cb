//! What a merge knows beyond its samples: sample types, period, times, comments and flags of
//! every input, checked and combined.

use std::collections::BTreeSet;

use super::sample_types::{Column, meaning_name, merge_units, scale_value, types_text};
use super::{MergeOptions, TypeSelector};
use crate::error::{Error, ErrorKind, Hint, Result};
use crate::model::{DumpFlags, Period, ProfileHeader, ValueKind};

/// What a merge knows beyond its samples.
#[derive(Debug, Clone)]
pub(super) struct Header {
    pub(super) columns: Vec<Column>,
    pub(super) period: Option<Period>,
    pub(super) time_nanos: Option<i64>,
    pub(super) duration_nanos: Option<i64>,
    pub(super) comments: BTreeSet<String>,
    pub(super) defaults: BTreeSet<usize>,
    pub(super) flags: DumpFlags,
    pub(super) profiles: usize,
    /// The first input, for messages.
    pub(super) first: String,
}

pub(super) fn merge_flags(a: &mut DumpFlags, b: &DumpFlags) {
    a.from_startup |= b.from_startup;
    a.rejected_concurrent |= b.rejected_concurrent;
    a.disconnected |= b.disconnected;
    a.buffer_overran |= b.buffer_overran;
    a.buffer_corrupted |= b.buffer_corrupted;
    a.hit_guardrail |= b.hit_guardrail;
    a.client_error = a.client_error.max(b.client_error);
    a.dump_at_max |= b.dump_at_max;
    a.previous_packet_dropped |= b.previous_packet_dropped;
    a.missing_packets += b.missing_packets;
    a.unresolved_samples += b.unresolved_samples;
    a.non_monotonic_samples += b.non_monotonic_samples;
}

pub(super) fn trim_s(s: &str) -> &str {
    s.strip_suffix('s').unwrap_or(s)
}

impl Header {
    /// The header of one input profile, in the merge's columns: (header, input value index
    /// per column).
    pub(super) fn of(header: &ProfileHeader, opts: &MergeOptions) -> Result<(Header, Vec<usize>)> {
        let ProfileHeader { meta, sample_types: types, default_sample_type } = header;
        let default_sample_type = *default_sample_type;
        let name = match (&meta.title, meta.source.is_empty()) {
            (Some(_), false) => meta.source.clone(),
            (_, true) => meta.describe(),
            (None, false) => format!("{}: {}", meta.source, meta.describe()),
        };
        let cols: Vec<usize> = match &opts.sample_types {
            None => (0..types.len()).collect(),
            Some(sel) => {
                let mut cols = Vec::with_capacity(sel.len());
                for s in sel {
                    let found = match s {
                        TypeSelector::Name(n) => types.iter().position(|t| t.name == *n),
                        TypeSelector::Kind(k) => types.iter().position(|t| t.kind == *k),
                    };
                    let Some(i) = found else {
                        let have: Vec<String> = types
                            .iter()
                            .map(|t| match t.kind {
                                ValueKind::Other => format!("{}/{}", t.name, t.unit),
                                k => format!("{}/{} ({})", t.name, t.unit, meaning_name(k)),
                            })
                            .collect();
                        return Err(Error::new(
                            ErrorKind::Usage,
                            format!("{name} has no sample type {} (its types: {})", s.describe(), have.join(", ")),
                        ));
                    };
                    cols.push(i);
                }
                cols
            }
        };
        let columns = cols
            .iter()
            .enumerate()
            .map(|(c, &i)| {
                let t = &types[i];
                let kind = match opts.sample_types.as_ref().map(|s| &s[c]) {
                    Some(TypeSelector::Kind(k)) => *k,
                    _ => t.kind,
                };
                Column { name: t.name.clone(), unit: t.unit.clone(), kind, agreed: true }
            })
            .collect();
        let mut defaults = BTreeSet::new();
        if opts.sample_types.is_some() {
            defaults.insert(0);
        } else if default_sample_type < types.len() {
            defaults.insert(default_sample_type);
        }
        let period = meta.period.clone().or_else(|| {
            meta.sampling_interval.filter(|&i| i > 0).map(|i| Period {
                name: "space".to_owned(),
                unit: "bytes".to_owned(),
                value: i64::try_from(i).unwrap_or(i64::MAX),
            })
        });
        let mut comments: BTreeSet<String> = meta.comments.iter().cloned().collect();
        if meta.title.is_none() {
            // A decoded trace or capture: say which dump went into the merge.
            let src = if meta.source.is_empty() { String::new() } else { format!("{}: ", meta.source) };
            comments.insert(format!("input: {src}{}", meta.describe()));
        }
        Ok((
            Header {
                columns,
                period,
                time_nanos: meta.time_nanos.filter(|&t| t != 0),
                duration_nanos: meta.duration_nanos,
                comments,
                defaults,
                flags: meta.flags.clone(),
                profiles: 1,
                first: name,
            },
            cols,
        ))
    }

    /// Merges `other` into `self`: returns the factors for `other`'s values, per column, and the
    /// factors by which values already merged under `self` must be multiplied.
    pub(super) fn absorb(&mut self, other: Header, by_name: bool) -> Result<(Vec<i64>, Vec<i64>)> {
        let incompatible = |mine: &[Column]| {
            let e = Error::new(
                ErrorKind::Usage,
                format!(
                    "cannot merge {}: its sample types {} differ from {} (of {})",
                    other.first,
                    types_text(&other.columns),
                    types_text(mine),
                    self.first,
                ),
            );
            if by_name { e.with_hint(Hint::SampleTypes) } else { e }
        };
        if self.columns.len() != other.columns.len()
            || self
                .columns
                .iter()
                .zip(&other.columns)
                .any(|(a, b)| (by_name && a.name != b.name) || merge_units(&a.unit, &b.unit).is_none())
        {
            return Err(incompatible(&self.columns));
        }
        let mut mine = vec![1; self.columns.len()];
        let mut theirs = vec![1; self.columns.len()];
        for (c, (a, b)) in self.columns.iter_mut().zip(&other.columns).enumerate() {
            let (unit, fa, fb) = merge_units(&a.unit, &b.unit).expect("checked above");
            if a.name != b.name || !b.agreed {
                a.agreed = false;
                a.name = a.name.clone().min(b.name.clone());
            }
            if a.kind != b.kind {
                a.kind = ValueKind::Other;
            }
            a.unit = unit;
            mine[c] = fa;
            theirs[c] = fb;
        }
        self.period = match (self.period.take(), other.period) {
            (Some(a), Some(b)) => {
                let units = merge_units(&a.unit, &b.unit);
                if trim_s(&a.name) != trim_s(&b.name) || units.is_none() {
                    return Err(Error::new(
                        ErrorKind::Usage,
                        format!(
                            "cannot merge {}: its period type {}/{} differs from {}/{} (of {})",
                            other.first, b.name, b.unit, a.name, a.unit, self.first
                        ),
                    ));
                }
                let (unit, fa, fb) = units.expect("checked");
                let value = scale_value(a.value, fa).max(scale_value(b.value, fb));
                Some(Period { name: a.name.min(b.name), unit, value })
            }
            (a, b) => a.or(b),
        };
        self.time_nanos = match (self.time_nanos, other.time_nanos) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.duration_nanos = match (self.duration_nanos, other.duration_nanos) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        self.comments.extend(other.comments);
        self.defaults.extend(other.defaults);
        merge_flags(&mut self.flags, &other.flags);
        self.profiles += other.profiles;
        self.first = self.first.clone().min(other.first);
        Ok((theirs, mine))
    }
}
