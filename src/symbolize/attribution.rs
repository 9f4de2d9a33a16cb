//! Which allocations a profile's symbolized frames account for: bytes and samples whose
//! stacks have a symbol, per profile, from the tree, stack lists or shared walks.

use super::*;

/// How a profile's bytes spread over mappings and how many lie on fully symbolized stacks.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    pub(super) per_mapping: std::collections::HashMap<u32, i64>,
    pub(super) total: i64,
    pub(super) symbolized: i64,
    /// Bytes of stacks whose every such frame has lines or a name from the input.
    pub(super) named: i64,
}

impl Attribution {
    /// Counts `v` bytes of one stack (or of a class of stacks), symbolized when `all` its frames
    /// in mappings with a build id have lines, named when `all_named` have a name.
    fn add(&mut self, v: i64, all: bool, all_named: bool) {
        self.total += v;
        if all {
            self.symbolized += v;
        }
        if all_named {
            self.named += v;
        }
    }
}

/// Attributes the bytes of `profile` (its unreleased size, or total size when it has none).
pub fn attribute(profile: &crate::model::Profile) -> Attribution {
    use crate::model::ValueKind;
    let Some(idx) =
        profile.value_index(ValueKind::UnreleasedSize).or_else(|| profile.value_index(ValueKind::TotalSize))
    else {
        return Attribution::default();
    };
    attribute_shared(profile, idx).unwrap_or_else(|| attribute_walk(profile, idx))
}

/// [`attribute`] of a dump whose stacks are flat frame lists (`stacks[i]` a stack of `lists`,
/// with `header.sample_types.len()` values per row in `values`), over the frames of `tables`:
/// the same figures as [`attribute`] of the same dump as a profile. Each distinct stack's
/// frames are visited once.
pub fn attribute_lists(
    header: &crate::model::ProfileHeader,
    stacks: &[crate::model::StackId],
    values: &[i64],
    lists: &crate::model::StackLists,
    tables: &Tables,
) -> Attribution {
    use crate::model::ValueKind;
    let kind = |k: ValueKind| header.sample_types.iter().position(|t| t.kind == k);
    let Some(idx) = kind(ValueKind::UnreleasedSize).or_else(|| kind(ValueKind::TotalSize)) else {
        return Attribution::default();
    };
    let width = header.sample_types.len();
    // Per stack, the sum of its rows' values (`None`: no row with a value).
    let mut sums: Vec<Option<i64>> = vec![None; lists.len()];
    for (i, s) in stacks.iter().enumerate() {
        let v = values[i * width + idx];
        if v != 0 {
            *sums[s.0 as usize].get_or_insert(0) += v;
        }
    }
    // What each frame says, looked up once: its mapping (`NONE`: none), and whether it counts
    // against a stack (a mapping with a build id) for lines and for a symbol.
    let class: Vec<(u32, u8)> = tables
        .frames()
        .iter()
        .map(|f| match f.mapping {
            None => (NONE, 0),
            Some(m) if tables.mapping(m).build_id.is_empty() => (m.0, 0),
            Some(m) => {
                let lines = if f.lines.is_empty() { NO_LINES } else { 0 };
                (m.0, lines | if frame_has_symbol(f) { 0 } else { NO_SYMBOL })
            }
        })
        .collect();
    // The stacks in two halves side by side (each stack's frames are visited once, and sums
    // of integers do not depend on the order they are added in).
    let n = sums.len();
    let visit = |r: Range<usize>| attribute_stacks(&sums[r.clone()], r.start, lists, &class);
    if n < SPLIT_AT {
        return visit(0..n);
    }
    let (mut a, b) = rayon::join(|| visit(0..n / 2), || visit(n / 2..n));
    for (m, v) in b.per_mapping {
        *a.per_mapping.entry(m).or_default() += v;
    }
    a.total += b.total;
    a.symbolized += b.symbolized;
    a.named += b.named;
    a
}

/// A frame of no mapping, in [`attribute_lists`]'s classes.
pub(super) const NONE: u32 = u32::MAX;
/// A frame that keeps its stack from counting as symbolized (it lacks lines).
pub(super) const NO_LINES: u8 = 1;
/// A frame that keeps its stack from counting as named (it lacks a symbol).
pub(super) const NO_SYMBOL: u8 = 2;
/// [`attribute_lists`] splits the stacks in two halves from this many (fewer in unit tests,
/// so that they cover the split).
pub(super) const SPLIT_AT: usize = if cfg!(test) { 64 } else { 1 << 13 };

/// What [`attribute_lists`] adds up for the stacks `first..first + sums.len()` (`sums`: their
/// values), each frame classed as `class` says (its mapping, [`NONE`] for none, and the flags
/// [`NO_LINES`] and [`NO_SYMBOL`]).
pub(super) fn attribute_stacks(
    sums: &[Option<i64>],
    first: usize,
    lists: &crate::model::StackLists,
    class: &[(u32, u8)],
) -> Attribution {
    let mut a = Attribution::default();
    // Bytes of the first 64 mappings, added to `a.per_mapping` at the end.
    let mut low = [0i64; 64];
    let mut touched = 0u64;
    // The mappings a stack passes through: the first 64 as bits, the others listed.
    let mut seen: Vec<u32> = Vec::new();
    for (s, sum) in sums.iter().enumerate() {
        let Some(v) = *sum else { continue };
        let s = first + s;
        seen.clear();
        let mut mask = 0u64;
        let mut missing = 0u8;
        for &fid in lists.frames(crate::model::StackId(s as u32)) {
            let (m, flags) = class[fid.0 as usize];
            if m < 64 {
                mask |= 1 << m;
            } else if m != NONE && !seen.contains(&m) {
                seen.push(m);
            }
            missing |= flags;
        }
        let (all, all_named) = (missing & NO_LINES == 0, missing & NO_SYMBOL == 0);
        while mask != 0 {
            let m = mask.trailing_zeros();
            mask &= mask - 1;
            low[m as usize] += v;
            touched |= 1 << m;
        }
        for m in &seen {
            *a.per_mapping.entry(*m).or_default() += v;
        }
        a.add(v, all, all_named);
    }
    while touched != 0 {
        let m = touched.trailing_zeros();
        touched &= touched - 1;
        *a.per_mapping.entry(m).or_default() += low[m as usize];
    }
    a
}

/// [`attribute`] walking every sample's whole stack.
pub(super) fn attribute_walk(profile: &crate::model::Profile, idx: usize) -> Attribution {
    let mut a = Attribution::default();
    let tables = &profile.tables;
    let mut seen: Vec<u32> = Vec::new();
    for (stack, values) in profile.samples() {
        let v = values[idx];
        if v == 0 {
            continue;
        }
        seen.clear();
        let mut all = true;
        let mut all_named = true;
        let mut cur = Some(stack);
        while let Some(node) = cur {
            let n = tables.stack_node(node);
            let f = tables.frame(n.frame);
            if let Some(m) = f.mapping {
                if !seen.contains(&m.0) {
                    seen.push(m.0);
                }
                if !tables.mapping(m).build_id.is_empty() {
                    all &= !f.lines.is_empty();
                    all_named &= frame_has_symbol(f);
                }
            }
            cur = n.parent;
        }
        for m in &seen {
            *a.per_mapping.entry(*m).or_default() += v;
        }
        a.add(v, all, all_named);
    }
    a
}

/// [`attribute`] visiting each stack node once: what a node's stack says (the mappings it
/// passes through, a bit each, and whether every frame with a build id has lines, and a symbol)
/// is its caller's plus its own frame, remembered per node. `None` with more than 64 mappings.
pub(super) fn attribute_shared(profile: &crate::model::Profile, idx: usize) -> Option<Attribution> {
    let tables = &profile.tables;
    if tables.mappings().len() > 64 {
        return None;
    }
    const LINES: u8 = 1;
    const NAMED: u8 = 2;
    // Per node, an index into `kinds` (u32::MAX: not seen yet).
    let mut memo = vec![u32::MAX; tables.stack_count()];
    let mut kinds: Vec<(u64, u8)> = Vec::new();
    let mut kind_of: rustc_hash::FxHashMap<(u64, u8), u32> = Default::default();
    let mut sums: Vec<Option<i64>> = Vec::new();
    let mut path = Vec::new();
    for (stack, values) in profile.samples() {
        let v = values[idx];
        if v == 0 {
            continue;
        }
        path.clear();
        let mut known = (0u64, LINES | NAMED);
        let mut cur = Some(stack);
        while let Some(node) = cur {
            let k = memo[node.0 as usize];
            if k != u32::MAX {
                known = kinds[k as usize];
                break;
            }
            path.push(node);
            cur = tables.stack_node(node).parent;
        }
        for &node in path.iter().rev() {
            let f = tables.frame(tables.stack_node(node).frame);
            if let Some(m) = f.mapping {
                known.0 |= 1 << m.0;
                if !tables.mapping(m).build_id.is_empty() {
                    if f.lines.is_empty() {
                        known.1 &= !LINES;
                    }
                    if !frame_has_symbol(f) {
                        known.1 &= !NAMED;
                    }
                }
            }
            let k = *kind_of.entry(known).or_insert_with(|| {
                kinds.push(known);
                sums.push(None);
                (kinds.len() - 1) as u32
            });
            memo[node.0 as usize] = k;
        }
        let sum = sums[memo[stack.0 as usize] as usize].get_or_insert(0);
        *sum += v;
    }
    let mut a = Attribution::default();
    for (&(mask, flags), sum) in kinds.iter().zip(&sums) {
        let Some(v) = *sum else { continue };
        for m in (0..64).filter(|m| mask & (1 << m) != 0) {
            *a.per_mapping.entry(m).or_default() += v;
        }
        a.add(v, flags & LINES != 0, flags & NAMED != 0);
    }
    Some(a)
}
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{Mapping, Profile, ProfileMeta, StringId, ValueKind, ValueType};

    #[test]
    fn shared_walk_agrees_with_the_whole_walk() {
        let mut t = Tables::default();
        let maps: Vec<MappingId> = (0..5u64)
            .map(|i| {
                let path = t.strings.intern(&format!("/lib/l{i}.so"));
                t.intern_mapping(Mapping {
                    path,
                    build_id: if i == 4 { Vec::new() } else { vec![i as u8 + 1; 20] }.into_boxed_slice(),
                    start: 0x1000 * (i + 1),
                    end: 0x1000 * (i + 2),
                    start_offset: 0,
                    exact_offset: 0,
                    load_bias: 0,
                })
            })
            .collect();
        let name = t.strings.intern("f");
        let frames: Vec<FrameId> = (0..60u64)
            .map(|i| t.intern_frame(Some(maps[(i % 5) as usize]), i * 16, if i % 7 == 0 { name } else { StringId(0) }))
            .collect();
        for i in (0..60).step_by(3) {
            let func = t.strings.intern("g");
            t.frames_mut()[i].lines =
                vec![Line { function: func, system_name: func, file: StringId(0), line: 1, column: 0 }];
        }
        let mut stacks = Vec::new();
        let mut lists = crate::model::StackLists::default();
        let (mut list_stacks, mut list_values) = (Vec::new(), Vec::new());
        for s in 0..500usize {
            let path: Vec<FrameId> = (0..1 + s % 9).map(|d| frames[(s * 13 + d * 7 + s / 11) % 60]).collect();
            stacks.push((t.intern_stack(&path).unwrap(), (s as i64 % 11) - 3));
            list_stacks.push(lists.intern(&path).unwrap());
            list_values.push((s as i64 % 11) - 3);
        }
        let types = vec![ValueType::new("space", "bytes", ValueKind::UnreleasedSize)];
        let mut p = Profile::new(Arc::new(t), ProfileMeta::default(), types);
        for (s, v) in stacks {
            p.push_sample(s, &[v]);
        }
        let shared = attribute_shared(&p, 0).expect("few mappings");
        let walk = attribute_walk(&p, 0);
        assert_eq!(shared.per_mapping, walk.per_mapping);
        assert_eq!((shared.total, shared.symbolized, shared.named), (walk.total, walk.symbolized, walk.named));
        assert!(walk.symbolized != 0 && walk.symbolized != walk.total && walk.named != walk.total);
        // The same samples with their stacks as flat frame lists (the symbolize decoder's).
        let listed = attribute_lists(&p.header, &list_stacks, &list_values, &lists, &p.tables);
        assert_eq!(listed.per_mapping, walk.per_mapping);
        assert_eq!((listed.total, listed.symbolized, listed.named), (walk.total, walk.symbolized, walk.named));
        assert!(lists.len() < 500, "equal lists are one stack");
    }
}
