//! The merge stage: many profiles in, one out (or, for a diff, two that share their tables).
//!
//! A [`Merger`] is an accumulator. Profiles are added one at a time ([`Merger::add`]) and
//! accumulators are combined ([`Merger::absorb`]); memory is proportional to the distinct
//! (stack, labels) pairs seen, not to the inputs. [`Merger::finish`] sorts everything by
//! content, so the result does not depend on the order in which inputs were added or
//! accumulators combined: merging N inputs one by one in any order, or in a parallel tree,
//! gives the same profile and the same encoded bytes.
//!
//! # What is merged, and how (pprof's rules, as `go tool pprof -proto A B` applies them)
//!
//! * **Sample types** must be the same (type, unit) pairs in the same order in every input;
//!   otherwise the merge fails with an error listing both sides, unless
//!   [`MergeOptions::sample_types`] picks types that every input has, by name (`inuse_space`)
//!   or by meaning (`unreleased-size`, which matches Go's `inuse_space` and traceconv's
//!   `Unreleased malloc size` alike). A type picked by meaning keeps its name when every input
//!   names it the same, and takes Go's name (`inuse_space`, `inuse_objects`, `alloc_space`,
//!   `alloc_objects`) otherwise.
//! * **Units** of the same type may differ when pprof can convert them (memory: `bytes`,
//!   `kilobytes`, … ; time: `nanoseconds`, …, `hours`): values are scaled to the finest unit,
//!   as pprof's `measurement.ScaleProfiles` does (on a tie, the alphabetically first spelling).
//! * **Period**: the largest of the inputs' periods, in the finest unit. Values are **not**
//!   scaled by the ratio of periods, exactly as `go tool pprof -proto` merges (checked with Go
//!   1.19: profiles with periods 1 and 512 merge to period 512 with values summed). Heap
//!   profile values (Go's, heapprofd's) are already estimates of the real totals, whatever
//!   the period. Period types must agree when both inputs have one (`space`/`bytes` for
//!   heap profiles); unlike pprof, an input without a period type merges with any.
//! * **Mappings** are one mapping when their build id (or, without one, their file name),
//!   file offset and size rounded up to 4 KiB agree, as pprof keys them. Addresses inside a
//!   mapping's range are taken relative to its start (address-space randomization), so the
//!   same code in two runs is one location; the merged mapping starts at the lowest start
//!   seen and keeps the largest size and, for build-id keyed mappings, the alphabetically
//!   first file name.
//! * **Frames** (locations) are one frame when mapping, address and lines (function name,
//!   system name, file, line, column) agree. Frames of heapprofd and DDM inputs get their ART
//!   annotations (`[jit]`, `[aot]`, …) baked into their names first, so a trace and the pprof
//!   heapconv made of it merge into the same frames.
//! * **Samples** with the same stack and the same labels are summed; samples that differ only
//!   in their labels stay separate, as pprof keeps them. Samples whose values are all zero
//!   are dropped.
//! * **Header**: the earliest non-zero `time_nanos`, the sum of `duration_nanos`, every distinct
//!   comment (sorted), the data-loss flags of every input, and as default sample type the
//!   first one chosen by any input (or the first of [`MergeOptions::sample_types`]).
//!   `drop_frames`/`keep_frames` are not kept.

mod diff;
mod finish;
mod header;
mod lean;
mod merger;
mod sample_types;
mod tables;

use crate::error::{Error, Result};
use crate::model::{FlatProfile, Profile};

pub use diff::{diff_factors, diff_pprof, scaled};
pub use lean::{PprofFrame, PprofParts, PprofStrings};
pub use merger::{AnyProfile, Merger};
pub use sample_types::TypeSelector;

/// Options of the merge stage.
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    /// Keep only these sample types, in this order (the first is the default type). `None`:
    /// keep all, which every input must then have, identically. Default: `None`.
    pub sample_types: Option<Vec<TypeSelector>>,
}

/// Merges accumulators pairwise in parallel (rayon); the result is the same as absorbing
/// them one by one, in any order.
pub fn merge_tree(mut mergers: Vec<Merger>) -> Result<Option<Merger>> {
    match mergers.len() {
        0 => Ok(None),
        1 => Ok(mergers.pop()),
        n => {
            let right = mergers.split_off(n / 2);
            let (a, b) = rayon::join(|| merge_tree(mergers), || merge_tree(right));
            match (a?, b?) {
                (Some(mut a), Some(b)) => {
                    a.absorb(b)?;
                    Ok(Some(a))
                }
                (a, b) => Ok(a.or(b)),
            }
        }
    }
}

/// Merges profiles (each with its `annotate` flag, see [`Merger::add`]) into one, adding them
/// in parallel chunks and combining the accumulators pairwise.
pub fn merge_profiles(profiles: &[(Profile, bool)], opts: &MergeOptions) -> Result<FlatProfile> {
    use rayon::prelude::*;
    let merged = profiles
        .par_iter()
        .try_fold(
            || Merger::new(opts.clone(), 1),
            |mut m, (p, annotate)| {
                m.add(p, *annotate)?;
                Ok::<_, Error>(m)
            },
        )
        .try_reduce(
            || Merger::new(opts.clone(), 1),
            |mut a, b| {
                a.absorb(b)?;
                Ok(a)
            },
        )?;
    merged.finish()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{FrameId, ProfileMeta, Tables, ValueKind, ValueType};

    fn profile(names: &[&str], stacks: &[(&[&str], &[i64])]) -> Profile {
        let mut t = Tables::default();
        let mut ids = Vec::new();
        for (frames, _) in stacks {
            let fs: Vec<FrameId> = frames
                .iter()
                .map(|n| {
                    let s = t.strings.intern(n);
                    t.intern_frame(None, 0, s)
                })
                .collect();
            ids.push(t.intern_stack(&fs).unwrap());
        }
        let types = names.iter().map(|n| ValueType::new(n, "bytes", ValueKind::Other)).collect();
        let mut p = Profile::new(Arc::new(t), ProfileMeta { source: "x".into(), ..Default::default() }, types);
        for (id, (_, v)) in ids.iter().zip(stacks) {
            p.push_sample(*id, v);
        }
        p
    }

    #[test]
    fn merge_sums_identical_stacks_in_any_order() {
        let a = profile(&["v"], &[(&["main", "f"], &[3]), (&["main", "g"], &[4])]);
        let b = profile(&["v"], &[(&["main", "g"], &[10]), (&["main", "h"], &[1])]);
        let ab = merge_profiles(&[(a.clone(), false), (b.clone(), false)], &MergeOptions::default()).unwrap();
        let ba = merge_profiles(&[(b, false), (a, false)], &MergeOptions::default()).unwrap();
        assert_eq!(ab.total(0), 18);
        assert_eq!(ab.sample_count(), 3);
        let all = |p: &FlatProfile| -> Vec<(Vec<FrameId>, Vec<i64>)> {
            (0..p.sample_count()).map(|i| (p.sample(i).0.to_vec(), p.sample(i).1.to_vec())).collect()
        };
        assert_eq!(all(&ab), all(&ba));
    }

    #[test]
    fn mismatched_types_name_both_sides() {
        let a = profile(&["v"], &[(&["main"], &[3])]);
        let b = profile(&["w"], &[(&["main"], &[3])]);
        let e = merge_profiles(&[(a, false), (b, false)], &MergeOptions::default()).unwrap_err();
        assert!(e.to_string().contains("[w/bytes]") && e.to_string().contains("[v/bytes]"), "{e}");
    }
}
