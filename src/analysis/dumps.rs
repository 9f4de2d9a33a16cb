//! Views across the dumps of one process and heap of a continuous-dump trace.
//!
//! heapprofd's values are cumulative per callstack (see
//! `../shared/formats/perfetto-heapprofd-traceconv.md` §2.6): a dump holds, per stack, what
//! was allocated and freed since profiling started. So within one (pid, heap):
//!
//! * the **peak** dump is the one whose total of the chosen value (unreleased size unless
//!   asked otherwise) is highest ([`peak_position`]; the earliest of equal totals);
//! * the **delta** between two dumps is, per stack, the newer value minus the older
//!   ([`delta_profile`]): for unreleased size, how much more (or less) memory the stack holds;
//!   for total size, what it allocated in between;
//! * a **leak suspect** is a stack whose value grew strictly at each step across the last K
//!   dumps ([`leak_suspects`]); it is reported with its value at the last dump.
//!
//! The profiles of one (pid, heap) share their tables, so stacks are compared by id.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::{Profile, StackId, ValueKind};

/// The index of the sample type a view uses for `kind`, and whether it had to fall back: a
/// heap without that type (the ART heap reports only totals: it has no frees, so its unreleased
/// values are its totals) uses the total of the same unit, else total size, else the default.
pub fn view_value_index(profile: &Profile, kind: ValueKind) -> (usize, bool) {
    if let Some(i) = profile.value_index(kind) {
        return (i, false);
    }
    let alt = match kind {
        ValueKind::UnreleasedSize => ValueKind::TotalSize,
        ValueKind::UnreleasedCount => ValueKind::TotalCount,
        k => k,
    };
    let i = profile
        .value_index(alt)
        .or_else(|| profile.value_index(ValueKind::TotalSize))
        .unwrap_or(profile.header.default_sample_type.min(profile.header.sample_types.len().saturating_sub(1)));
    (i, true)
}

/// The position of the highest of `totals` (the first of equal ones); `None` when empty.
pub fn peak_position(totals: &[i64]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &t) in totals.iter().enumerate() {
        if best.is_none_or(|b| t > totals[b]) {
            best = Some(i);
        }
    }
    best
}

/// Per stack, `new` minus `old` for every sample type; stacks whose every difference is 0 are
/// left out. Samples are in stack-id order. The result has `new`'s tables, sample types,
/// default type and meta; both profiles must use the same tables (or `new`'s must extend
/// `old`'s) and have the same sample types.
pub fn delta_profile(old: &Profile, new: &Profile) -> Profile {
    let n = new.header.sample_types.len();
    let mut sums: BTreeMap<StackId, Vec<i64>> = BTreeMap::new();
    for (sign, p) in [(-1i64, old), (1, new)] {
        for (s, v) in p.samples() {
            let e = sums.entry(s).or_insert_with(|| vec![0; n]);
            for (acc, x) in e.iter_mut().zip(v) {
                *acc = acc.saturating_add(sign.saturating_mul(*x));
            }
        }
    }
    let mut stacks = Vec::with_capacity(sums.len());
    let mut values = Vec::with_capacity(sums.len() * n);
    for (s, v) in sums {
        if v.iter().any(|&x| x != 0) {
            stacks.push(s);
            values.extend_from_slice(&v);
        }
    }
    Profile::from_parts(
        Arc::clone(&new.tables),
        new.header.meta.clone(),
        new.header.sample_types.clone(),
        new.header.default_sample_type,
        stacks,
        values,
    )
}

/// A stack that grew at each of the dumps compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakSuspect {
    /// The stack.
    pub stack: StackId,
    /// Its value (of the view's sample type) at each dump compared, oldest first.
    pub values: Vec<i64>,
}

/// The stacks whose value at `index` grew strictly from each dump of `window` (oldest first,
/// at least two) to the next, largest last value first (then by stack id). A stack absent
/// from a dump has the value 0 there.
pub fn leak_suspects(window: &[&Profile], index: usize) -> Vec<LeakSuspect> {
    let k = window.len();
    if k < 2 {
        return Vec::new();
    }
    let mut series: BTreeMap<StackId, Vec<i64>> = BTreeMap::new();
    for (d, p) in window.iter().enumerate() {
        for (s, v) in p.samples() {
            let e = &mut series.entry(s).or_insert_with(|| vec![0; k])[d];
            *e = e.saturating_add(v[index]);
        }
    }
    let mut out: Vec<LeakSuspect> = series
        .into_iter()
        .filter(|(_, v)| v.windows(2).all(|w| w[1] > w[0]))
        .map(|(stack, values)| LeakSuspect { stack, values })
        .collect();
    out.sort_by(|a, b| b.values[k - 1].cmp(&a.values[k - 1]).then(a.stack.cmp(&b.stack)));
    out
}

/// `profile` restricted to the samples whose stack is in `keep` (sorted or not).
pub fn keep_stacks(profile: &Profile, keep: &[StackId]) -> Profile {
    let mut keep = keep.to_vec();
    keep.sort_unstable();
    let n = profile.header.sample_types.len();
    let mut stacks = Vec::new();
    let mut values = Vec::new();
    for (s, v) in profile.samples() {
        if keep.binary_search(&s).is_ok() {
            stacks.push(s);
            values.extend_from_slice(&v[..n]);
        }
    }
    Profile::from_parts(
        Arc::clone(&profile.tables),
        profile.header.meta.clone(),
        profile.header.sample_types.clone(),
        profile.header.default_sample_type,
        stacks,
        values,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ProfileMeta, Tables, ValueType};

    /// Stacks "s0".."sN" (one frame each) in shared tables, and a profile per dump.
    fn dumps(values: &[&[i64]]) -> (Vec<StackId>, Vec<Profile>) {
        let mut t = Tables::default();
        let width = values.iter().map(|v| v.len()).max().unwrap_or(0);
        let ids: Vec<StackId> = (0..width)
            .map(|i| {
                let name = t.strings.intern(&format!("s{i}"));
                let f = t.intern_frame(None, 0, name);
                t.intern_stack(&[f]).unwrap()
            })
            .collect();
        let t = Arc::new(t);
        let types = vec![
            ValueType::new("Total size", "bytes", ValueKind::TotalSize),
            ValueType::new("Unreleased size", "bytes", ValueKind::UnreleasedSize),
        ];
        let profiles = values
            .iter()
            .map(|row| {
                let mut p = Profile::new(Arc::clone(&t), ProfileMeta::default(), types.clone());
                for (i, &v) in row.iter().enumerate() {
                    if v != 0 {
                        p.push_sample(ids[i], &[v * 2, v]);
                    }
                }
                p
            })
            .collect();
        (ids, profiles)
    }

    #[test]
    fn peak_is_the_first_highest() {
        assert_eq!(peak_position(&[]), None);
        assert_eq!(peak_position(&[3, 7, 7, 1]), Some(1));
        assert_eq!(peak_position(&[-5, -2]), Some(1));
    }

    #[test]
    fn delta_is_new_minus_old_per_stack() {
        let (ids, p) = dumps(&[&[10, 5, 0, 4], &[15, 5, 8, 0]]);
        let d = delta_profile(&p[0], &p[1]);
        let got: Vec<(StackId, Vec<i64>)> = d.samples().map(|(s, v)| (s, v.to_vec())).collect();
        assert_eq!(got, vec![(ids[0], vec![10, 5]), (ids[2], vec![16, 8]), (ids[3], vec![-8, -4])]);
        assert_eq!(d.total(1), p[1].total(1) - p[0].total(1));
    }

    #[test]
    fn leaks_grew_at_every_step() {
        // s0 grows every time; s1 is flat once; s2 appears and grows; s3 shrinks.
        let (ids, p) = dumps(&[&[1, 4, 0, 9], &[2, 4, 3, 8], &[3, 6, 5, 7]]);
        let refs: Vec<&Profile> = p.iter().collect();
        let got = leak_suspects(&refs, 1);
        assert_eq!(
            got,
            vec![
                LeakSuspect { stack: ids[2], values: vec![0, 3, 5] },
                LeakSuspect { stack: ids[0], values: vec![1, 2, 3] },
            ]
        );
        // Over the last two dumps only, s1 grew too.
        let got = leak_suspects(&refs[1..], 1);
        assert_eq!(got.iter().map(|s| s.stack).collect::<Vec<_>>(), vec![ids[1], ids[2], ids[0]]);
        let kept = keep_stacks(&p[2], &[ids[2], ids[0]]);
        assert_eq!(kept.total(1), 8);
        assert_eq!(kept.sample_count(), 2);
    }

    #[test]
    fn fallback_for_heaps_without_unreleased_values() {
        let t = Arc::new(Tables::default());
        let types = vec![
            ValueType::new("Total allocation count", "count", ValueKind::TotalCount),
            ValueType::new("Total allocation size", "bytes", ValueKind::TotalSize),
        ];
        let p = Profile::new(t, ProfileMeta::default(), types);
        assert_eq!(view_value_index(&p, ValueKind::UnreleasedSize), (1, true));
        assert_eq!(view_value_index(&p, ValueKind::UnreleasedCount), (0, true));
        assert_eq!(view_value_index(&p, ValueKind::TotalCount), (0, false));
    }
}
